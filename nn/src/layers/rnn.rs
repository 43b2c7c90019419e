//! Recurrent layers: the multi-layer, optionally bidirectional `RNN`, `LSTM` and `GRU`, and their
//! single-step cells `RNNCell`, `LSTMCell`, `GRUCell` (PyTorch's `torch/nn/modules/rnn.py`).
//!
//! The forward passes are written with differentiable tensor ops (one input projection over the
//! whole sequence per layer and direction, then one hidden projection per time step, as ATen's
//! CPU path does), so autograd differentiates them without a dedicated RNN kernel.
//!
//! Not supported: `PackedSequence` inputs (pad the batch instead).

use aten::{ops, Tensor};
use c10::Result;

use crate::init;
use crate::layers::invalid;
use crate::layers::linear::empty;
use crate::module::{Member, MemberMut, Members, Module, Parameter};

/// Which recurrence a recurrent layer or cell computes (PyTorch's `mode` string).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RNNMode {
    /// `RNN_TANH`: `h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`.
    RnnTanh,
    /// `RNN_RELU`: `h' = relu(W_ih x + b_ih + W_hh h + b_hh)`.
    RnnRelu,
    /// `LSTM`: gates `i, f, g, o` stacked in that order.
    Lstm,
    /// `GRU`: gates `r, z, n` stacked in that order.
    Gru,
}

impl RNNMode {
    /// The same recurrence as aten names it.
    fn aten(self) -> aten::native::rnn::RnnMode {
        use aten::native::rnn::RnnMode;
        match self {
            RNNMode::RnnTanh => RnnMode::Tanh,
            RNNMode::RnnRelu => RnnMode::Relu,
            RNNMode::Lstm => RnnMode::Lstm,
            RNNMode::Gru => RnnMode::Gru,
        }
    }

    /// The number of gates stacked in `weight_ih` / `weight_hh` (4 for LSTM, 3 for GRU, 1 else).
    pub fn num_gates(self) -> i64 {
        match self {
            RNNMode::RnnTanh | RNNMode::RnnRelu => 1,
            RNNMode::Lstm => 4,
            RNNMode::Gru => 3,
        }
    }

    /// The class name of the multi-layer module: `RNN`, `LSTM` or `GRU`.
    pub fn module_name(self) -> &'static str {
        match self {
            RNNMode::RnnTanh | RNNMode::RnnRelu => "RNN",
            RNNMode::Lstm => "LSTM",
            RNNMode::Gru => "GRU",
        }
    }

    /// The mode for `RNN(nonlinearity=...)`: `tanh` or `relu`.
    pub fn from_nonlinearity(op: &str, nonlinearity: &str) -> Result<RNNMode> {
        match nonlinearity {
            "tanh" => Ok(RNNMode::RnnTanh),
            "relu" => Ok(RNNMode::RnnRelu),
            other => Err(invalid(op, format!("Unknown nonlinearity '{other}'. Select from 'tanh' or 'relu'."))),
        }
    }
}

impl Members for RNNMode {
    fn members<'a>(&'a self, _: &str, _: &mut dyn FnMut(&str, Member<'a>)) {}
    fn members_mut<'a>(&'a mut self, _: &str, _: &mut dyn FnMut(&str, MemberMut<'a>)) {}
}

fn zeros_like_input(x: &Tensor, shape: &[i64]) -> Result<Tensor> {
    ops::zeros(shape, Some(x.dtype()), None, Some(x.device()), None)
}

fn check_dtype(op: &str, x: &Tensor, w: &Tensor) -> Result<()> {
    if x.dtype() != w.dtype() {
        return Err(invalid(
            op,
            format!(
                "RNN input dtype ({}) does not match weight dtype ({}). Convert input: input.to({}), or convert model: model.to({})",
                x.dtype().name(),
                w.dtype().name(),
                w.dtype().name(),
                x.dtype().name()
            ),
        ));
    }
    Ok(())
}

/// The constructor arguments of `RNN`, `LSTM` and `GRU` beyond `input_size` and `hidden_size`,
/// with PyTorch's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct RNNOptions {
    /// `num_layers` (default 1): stacked recurrent layers.
    pub num_layers: i64,
    /// `nonlinearity` (`RNN` only): `tanh` (default) or `relu`.
    pub nonlinearity: String,
    /// `bias` (default true): whether the layers have `bias_ih` / `bias_hh`.
    pub bias: bool,
    /// `batch_first` (default false): input and output are `(N, L, H)` instead of `(L, N, H)`
    /// (the hidden states stay `(layers * directions, N, H)`).
    pub batch_first: bool,
    /// `dropout` (default 0): dropout on the outputs of every layer but the last, in training.
    pub dropout: f64,
    /// `bidirectional` (default false).
    pub bidirectional: bool,
    /// `proj_size` (`LSTM` only, default 0): projects `h` to this size with `weight_hr`.
    pub proj_size: i64,
}

impl Default for RNNOptions {
    fn default() -> RNNOptions {
        RNNOptions {
            num_layers: 1,
            nonlinearity: "tanh".into(),
            bias: true,
            batch_first: false,
            dropout: 0.0,
            bidirectional: false,
            proj_size: 0,
        }
    }
}

impl RNNOptions {
    /// Sets `num_layers`.
    pub fn num_layers(mut self, n: i64) -> Self {
        self.num_layers = n;
        self
    }
    /// Sets `nonlinearity` (`RNN` only).
    pub fn nonlinearity(mut self, name: &str) -> Self {
        self.nonlinearity = name.into();
        self
    }
    /// Sets `bias`.
    pub fn bias(mut self, b: bool) -> Self {
        self.bias = b;
        self
    }
    /// Sets `batch_first`.
    pub fn batch_first(mut self, b: bool) -> Self {
        self.batch_first = b;
        self
    }
    /// Sets `dropout`.
    pub fn dropout(mut self, p: f64) -> Self {
        self.dropout = p;
        self
    }
    /// Sets `bidirectional`.
    pub fn bidirectional(mut self, b: bool) -> Self {
        self.bidirectional = b;
        self
    }
    /// Sets `proj_size` (`LSTM` only).
    pub fn proj_size(mut self, p: i64) -> Self {
        self.proj_size = p;
        self
    }
}

/// The parameters of one layer in one direction.
#[derive(Clone)]
struct LayerParams {
    w_ih: Parameter,
    w_hh: Parameter,
    b_ih: Option<Parameter>,
    b_hh: Option<Parameter>,
    w_hr: Option<Parameter>,
}

/// What `RNN`, `LSTM` and `GRU` share (PyTorch's `RNNBase`): the configuration and the
/// parameters `weight_ih_l{k}{suffix}`, `weight_hh_l{k}{suffix}`, `bias_ih_l{k}{suffix}`,
/// `bias_hh_l{k}{suffix}` (and `weight_hr_l{k}{suffix}` with `proj_size`), `suffix` being
/// `_reverse` for the backward direction, listed layer by layer, direction by direction.
///
/// Every parameter starts as U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), drawn in that order.
#[derive(Clone)]
pub struct RNNBase {
    /// The recurrence.
    pub mode: RNNMode,
    /// `input_size`: features of the input.
    pub input_size: i64,
    /// `hidden_size`: features of the hidden (and LSTM cell) state.
    pub hidden_size: i64,
    /// `num_layers`.
    pub num_layers: i64,
    /// `bias`.
    pub bias: bool,
    /// `batch_first`.
    pub batch_first: bool,
    /// `dropout` between layers.
    pub dropout: f64,
    /// `bidirectional`.
    pub bidirectional: bool,
    /// `proj_size` (0: no projection).
    pub proj_size: i64,
    layers: Vec<LayerParams>,
    training: bool,
}

impl RNNBase {
    fn type_name(&self) -> &'static str {
        self.mode.module_name()
    }

    /// `RNNBase(mode, input_size, hidden_size, ...)`; `opts.nonlinearity` is ignored (the mode
    /// says it).
    fn new(mode: RNNMode, input_size: i64, hidden_size: i64, opts: &RNNOptions) -> Result<RNNBase> {
        let name = mode.module_name();
        if !(0.0..=1.0).contains(&opts.dropout) {
            return Err(invalid(
                name,
                "dropout should be a number in range [0, 1] representing the probability of an element being zeroed",
            ));
        }
        if input_size <= 0 {
            return Err(invalid(name, "input_size must be greater than zero"));
        }
        if hidden_size <= 0 {
            return Err(invalid(name, "hidden_size must be greater than zero"));
        }
        if opts.num_layers <= 0 {
            return Err(invalid(name, "num_layers must be greater than zero"));
        }
        if opts.proj_size < 0 {
            return Err(invalid(name, "proj_size should be a positive integer or zero to disable projections"));
        }
        if opts.proj_size > 0 && mode != RNNMode::Lstm {
            return Err(invalid(name, "proj_size argument is only supported for LSTM, not RNN or GRU"));
        }
        if opts.proj_size >= hidden_size {
            return Err(invalid(name, "proj_size has to be smaller than hidden_size"));
        }
        let gate_size = mode.num_gates() * hidden_size;
        let num_directions = if opts.bidirectional { 2 } else { 1 };
        let real_hidden = if opts.proj_size > 0 { opts.proj_size } else { hidden_size };
        let mut layers = Vec::new();
        for layer in 0..opts.num_layers {
            for _ in 0..num_directions {
                let layer_input = if layer == 0 { input_size } else { real_hidden * num_directions };
                let b = |shape: &[i64]| -> Result<Option<Parameter>> {
                    if opts.bias {
                        Ok(Some(Parameter::new(empty(shape)?)?))
                    } else {
                        Ok(None)
                    }
                };
                layers.push(LayerParams {
                    w_ih: Parameter::new(empty(&[gate_size, layer_input])?)?,
                    w_hh: Parameter::new(empty(&[gate_size, real_hidden])?)?,
                    b_ih: b(&[gate_size])?,
                    b_hh: b(&[gate_size])?,
                    w_hr: if opts.proj_size > 0 {
                        Some(Parameter::new(empty(&[opts.proj_size, hidden_size])?)?)
                    } else {
                        None
                    },
                });
            }
        }
        let rnn = RNNBase {
            mode,
            input_size,
            hidden_size,
            num_layers: opts.num_layers,
            bias: opts.bias,
            batch_first: opts.batch_first,
            dropout: opts.dropout,
            bidirectional: opts.bidirectional,
            proj_size: opts.proj_size,
            layers,
            training: true,
        };
        rnn.reset_parameters()?;
        Ok(rnn)
    }

    /// `reset_parameters()`: every parameter U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in
    /// registration order.
    pub fn reset_parameters(&self) -> Result<()> {
        let stdv = 1.0 / (self.hidden_size as f64).sqrt();
        for (_, p) in self.flat_weights() {
            init::uniform_(p, -stdv, stdv)?;
        }
        Ok(())
    }

    /// The number of directions (2 if bidirectional).
    pub fn num_directions(&self) -> i64 {
        if self.bidirectional {
            2
        } else {
            1
        }
    }

    /// The size of the hidden state `h` (`proj_size` if set, else `hidden_size`).
    pub fn real_hidden_size(&self) -> i64 {
        if self.proj_size > 0 {
            self.proj_size
        } else {
            self.hidden_size
        }
    }

    /// `(name, parameter)` in registration order (PyTorch's `_flat_weights_names` with
    /// `_flat_weights`).
    pub fn flat_weights(&self) -> Vec<(String, &Parameter)> {
        let mut out = Vec::new();
        self.list(&mut |n, m| {
            if let Member::Parameter(p) = m {
                out.push((n.to_string(), p));
            }
        });
        out
    }

    /// The parameter called `name` (`getattr(rnn, "weight_ih_l0")`).
    pub fn parameter(&self, name: &str) -> Option<&Parameter> {
        self.flat_weights().into_iter().find(|(n, _)| n == name).map(|(_, p)| p)
    }

    /// `all_weights`: the parameters grouped by layer and direction.
    pub fn all_weights(&self) -> Vec<Vec<Parameter>> {
        self.layers
            .iter()
            .map(|l| {
                let mut v = vec![l.w_ih.clone(), l.w_hh.clone()];
                v.extend(l.b_ih.iter().cloned());
                v.extend(l.b_hh.iter().cloned());
                v.extend(l.w_hr.iter().cloned());
                v
            })
            .collect()
    }

    fn names(&self, index: usize) -> [String; 5] {
        let d = self.num_directions() as usize;
        let (layer, suffix) = (index / d, if index % d == 1 { "_reverse" } else { "" });
        ["weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"].map(|n| format!("{n}_l{layer}{suffix}"))
    }

    fn list<'a>(&'a self, f: &mut dyn FnMut(&str, Member<'a>)) {
        for (i, l) in self.layers.iter().enumerate() {
            let [a, b, c, d, e] = self.names(i);
            l.w_ih.members(&a, f);
            l.w_hh.members(&b, f);
            l.b_ih.members(&c, f);
            l.b_hh.members(&d, f);
            l.w_hr.members(&e, f);
        }
    }

    fn list_mut<'a>(&'a mut self, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        let names: Vec<[String; 5]> = (0..self.layers.len()).map(|i| self.names(i)).collect();
        for (l, [a, b, c, d, e]) in self.layers.iter_mut().zip(names) {
            l.w_ih.members_mut(&a, f);
            l.w_hh.members_mut(&b, f);
            l.b_ih.members_mut(&c, f);
            l.b_hh.members_mut(&d, f);
            l.w_hr.members_mut(&e, f);
        }
    }

    /// Brings `input` to `(L, N, H_in)` and checks it; returns it with whether it was batched.
    fn prepare_input(&self, input: &Tensor) -> Result<(Tensor, bool)> {
        let op = self.type_name();
        if input.dim() != 2 && input.dim() != 3 {
            return Err(invalid(op, format!("{op}: Expected input to be 2D or 3D, got {}D instead", input.dim())));
        }
        check_dtype(op, input, &self.layers[0].w_ih)?;
        let batched = input.dim() == 3;
        let x = if !batched {
            input.unsqueeze(1)?
        } else if self.batch_first {
            input.transpose(0, 1)?
        } else {
            input.clone()
        };
        let feat = x.sizes()[2];
        if feat != self.input_size {
            return Err(c10::Error::shape(
                op,
                format!("input.size(-1) must be equal to input_size. Expected {}, got {feat}", self.input_size),
            ));
        }
        if x.sizes()[0] == 0 {
            return Err(invalid(op, "Expected sequence length to be larger than 0 in RNN"));
        }
        Ok((x, batched))
    }

    /// Brings an initial state to `(layers * directions, N, size)` (zeros when absent) and checks
    /// its shape.
    fn prepare_state(
        &self,
        x: &Tensor,
        state: Option<&Tensor>,
        batched: bool,
        size: i64,
        what: &str,
    ) -> Result<Tensor> {
        let op = self.type_name();
        let expected = [self.num_layers * self.num_directions(), x.sizes()[1], size];
        let Some(s) = state else { return zeros_like_input(x, &expected) };
        let s = if batched {
            if s.dim() != 3 {
                return Err(invalid(
                    op,
                    format!("For batched 3-D input, {what} should also be 3-D but got {}-D tensor", s.dim()),
                ));
            }
            s.clone()
        } else {
            if s.dim() != 2 {
                return Err(invalid(
                    op,
                    format!("For unbatched 2-D input, {what} should also be 2-D but got {}-D tensor", s.dim()),
                ));
            }
            s.unsqueeze(1)?
        };
        if s.sizes() != expected {
            return Err(c10::Error::shape(
                op,
                format!(
                    "Expected {what} size ({}, {}, {}), got {:?}",
                    expected[0],
                    expected[1],
                    expected[2],
                    s.sizes()
                ),
            ));
        }
        if s.dtype() != x.dtype() {
            return Err(invalid(
                op,
                format!("Expected {what} to have the input's dtype {}, got {}", x.dtype().name(), s.dtype().name()),
            ));
        }
        Ok(s)
    }

    /// Runs the layers over a time-major `(L, N, H_in)` input from states `(D * layers, N, _)`
    /// through the recurrent operator of the mode (`aten::gru`, ...; PyTorch's `_VF` calls).
    /// Returns the output `(L, N, D * H_out)`, `h_n` and (LSTM) `c_n`.
    fn run(&self, x: &Tensor, h0: &Tensor, c0: Option<&Tensor>) -> Result<(Tensor, Tensor, Option<Tensor>)> {
        // Note [RNN parameter lists] (aten/src/native/rnn.rs).
        let mut params: Vec<Tensor> = Vec::new();
        for l in &self.layers {
            params.push(l.w_ih.tensor().clone());
            params.push(l.w_hh.tensor().clone());
            params.extend(l.b_ih.iter().map(|p| p.tensor().clone()));
            params.extend(l.b_hh.iter().map(|p| p.tensor().clone()));
            params.extend(l.w_hr.iter().map(|p| p.tensor().clone()));
        }
        let (bias, n, p, train, bi) = (self.bias, self.num_layers, self.dropout, self.training, self.bidirectional);
        Ok(match self.mode {
            RNNMode::RnnTanh => {
                let (o, h) = ops::rnn_tanh(x, h0, &params, bias, n, p, train, bi, false)?;
                (o, h, None)
            }
            RNNMode::RnnRelu => {
                let (o, h) = ops::rnn_relu(x, h0, &params, bias, n, p, train, bi, false)?;
                (o, h, None)
            }
            RNNMode::Gru => {
                let (o, h) = ops::gru(x, h0, &params, bias, n, p, train, bi, false)?;
                (o, h, None)
            }
            RNNMode::Lstm => {
                let c0 = c0.ok_or_else(|| invalid("LSTM", "the cell state is missing"))?;
                let (o, h, c) = ops::lstm(x, &[h0.clone(), c0.clone()], &params, bias, n, p, train, bi, false)?;
                (o, h, Some(c))
            }
        })
    }

    /// Undoes `prepare_input`'s layout change on the output and the states.
    fn finish(&self, out: Tensor, batched: bool) -> Result<Tensor> {
        if !batched {
            out.squeeze_dim(1)
        } else if self.batch_first {
            out.transpose(0, 1)
        } else {
            Ok(out)
        }
    }

    fn forward_hx(&self, input: &Tensor, hx: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
        let (x, batched) = self.prepare_input(input)?;
        let h0 = self.prepare_state(&x, hx, batched, self.hidden_size, "hx")?;
        let (out, h_n, _) = self.run(&x, &h0, None)?;
        let h_n = if batched { h_n } else { h_n.squeeze_dim(1)? };
        Ok((self.finish(out, batched)?, h_n))
    }
}

macro_rules! rnn_module {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name {
            base: RNNBase,
        }

        impl std::ops::Deref for $name {
            type Target = RNNBase;
            fn deref(&self) -> &RNNBase {
                &self.base
            }
        }

        impl Module for $name {
            fn for_each_member<'a>(&'a self, f: &mut dyn FnMut(&str, Member<'a>)) {
                self.base.list(f)
            }
            fn for_each_member_mut<'a>(&'a mut self, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
                self.base.list_mut(f)
            }
            fn type_name(&self) -> &'static str {
                stringify!($name)
            }
            fn own_training(&self) -> Option<bool> {
                Some(self.base.training)
            }
            fn set_own_training(&mut self, on: bool) {
                self.base.training = on;
            }
        }

        impl Members for $name {
            fn members<'a>(&'a self, name: &str, f: &mut dyn FnMut(&str, Member<'a>)) {
                f(name, Member::Module(self))
            }
            fn members_mut<'a>(&'a mut self, name: &str, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
                f(name, MemberMut::Module(self))
            }
        }
    };
}

rnn_module!(
    /// `nn.RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    /// batch_first=False, dropout=0.0, bidirectional=False)`: the Elman recurrence
    /// `h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)` (or `relu`).
    ///
    /// The configuration and parameters are reachable through [`RNNBase`] (`Deref`).
    ///
    /// ```
    /// use nn::{Module, RNN};
    /// aten::manual_seed(0);
    /// let rnn = RNN::new(3, 4).unwrap();
    /// let x = aten::ops::randn(&[5, 2, 3], None, None, None, None).unwrap();
    /// let (out, h_n) = rnn.forward(&x, None).unwrap();
    /// assert_eq!(out.sizes(), &[5, 2, 4]);
    /// assert_eq!(h_n.sizes(), &[1, 2, 4]);
    /// ```
    RNN
);
rnn_module!(
    /// `nn.LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
    /// dropout=0.0, bidirectional=False, proj_size=0)`: gates `i, f, g, o`,
    /// `c_t = f * c_{t-1} + i * g`, `h_t = o * tanh(c_t)` (then `h_t = W_hr h_t` with
    /// `proj_size > 0`).
    ///
    /// ```
    /// use nn::{LSTM, RNNOptions};
    /// aten::manual_seed(0);
    /// let lstm = LSTM::with_options(3, 4, &RNNOptions::default().num_layers(2).batch_first(true)).unwrap();
    /// let x = aten::ops::randn(&[2, 5, 3], None, None, None, None).unwrap();
    /// let (out, (h_n, c_n)) = lstm.forward(&x, None).unwrap();
    /// assert_eq!(out.sizes(), &[2, 5, 4]);
    /// assert_eq!(h_n.sizes(), &[2, 2, 4]);
    /// assert_eq!(c_n.sizes(), &[2, 2, 4]);
    /// ```
    LSTM
);
rnn_module!(
    /// `nn.GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
    /// dropout=0.0, bidirectional=False)`: gates `r, z, n` with
    /// `n = tanh(W_in x + b_in + r * (W_hn h + b_hn))`, `h' = (1 - z) * n + z * h`.
    ///
    /// ```
    /// use nn::GRU;
    /// aten::manual_seed(0);
    /// let gru = GRU::new(3, 4).unwrap();
    /// let x = aten::ops::randn(&[5, 3], None, None, None, None).unwrap(); // unbatched
    /// let (out, h_n) = gru.forward(&x, None).unwrap();
    /// assert_eq!(out.sizes(), &[5, 4]);
    /// assert_eq!(h_n.sizes(), &[1, 4]);
    /// ```
    GRU
);

impl RNN {
    /// `RNN(input_size, hidden_size)` with PyTorch's defaults.
    pub fn new(input_size: i64, hidden_size: i64) -> Result<RNN> {
        RNN::with_options(input_size, hidden_size, &RNNOptions::default())
    }

    /// `RNN(input_size, hidden_size, **opts)`.
    pub fn with_options(input_size: i64, hidden_size: i64, opts: &RNNOptions) -> Result<RNN> {
        let mode = RNNMode::from_nonlinearity("RNN", &opts.nonlinearity)?;
        Ok(RNN { base: RNNBase::new(mode, input_size, hidden_size, opts)? })
    }

    /// The forward pass: `input` is `(L, N, H_in)` (`(N, L, H_in)` if `batch_first`) or
    /// unbatched `(L, H_in)`; `hx` is `(num_layers * D, N, H)` (or `(num_layers * D, H)`),
    /// zeros when `None`. Returns `(output, h_n)`: `output` `(L, N, D * H)` holds the last
    /// layer's `h_t` for every `t` (both directions concatenated), `h_n` every layer's final
    /// state.
    pub fn forward(&self, input: &Tensor, hx: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
        self.base.forward_hx(input, hx)
    }
}

impl GRU {
    /// `GRU(input_size, hidden_size)` with PyTorch's defaults.
    pub fn new(input_size: i64, hidden_size: i64) -> Result<GRU> {
        GRU::with_options(input_size, hidden_size, &RNNOptions::default())
    }

    /// `GRU(input_size, hidden_size, **opts)` (`opts.nonlinearity` is ignored).
    pub fn with_options(input_size: i64, hidden_size: i64, opts: &RNNOptions) -> Result<GRU> {
        Ok(GRU { base: RNNBase::new(RNNMode::Gru, input_size, hidden_size, opts)? })
    }

    /// The forward pass, with the shapes of [`RNN::forward`].
    pub fn forward(&self, input: &Tensor, hx: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
        self.base.forward_hx(input, hx)
    }
}

impl LSTM {
    /// `LSTM(input_size, hidden_size)` with PyTorch's defaults.
    pub fn new(input_size: i64, hidden_size: i64) -> Result<LSTM> {
        LSTM::with_options(input_size, hidden_size, &RNNOptions::default())
    }

    /// `LSTM(input_size, hidden_size, **opts)` (`opts.nonlinearity` is ignored).
    pub fn with_options(input_size: i64, hidden_size: i64, opts: &RNNOptions) -> Result<LSTM> {
        Ok(LSTM { base: RNNBase::new(RNNMode::Lstm, input_size, hidden_size, opts)? })
    }

    /// The forward pass: `input` as in [`RNN::forward`]; `hx = (h_0, c_0)` with `h_0`
    /// `(num_layers * D, N, H_out)` and `c_0` `(num_layers * D, N, H_cell)` (no batch dimension
    /// for unbatched input), zeros when `None`. `H_out` is `proj_size` if set, else
    /// `hidden_size`. Returns `(output, (h_n, c_n))`.
    pub fn forward(&self, input: &Tensor, hx: Option<(&Tensor, &Tensor)>) -> Result<(Tensor, (Tensor, Tensor))> {
        let base = &self.base;
        let (x, batched) = base.prepare_input(input)?;
        if let Some((h, c)) = hx {
            let want = if batched { 3 } else { 2 };
            if h.dim() != want || c.dim() != want {
                let kind = if batched { "batched 3-D" } else { "unbatched 2-D" };
                return Err(invalid(
                    "LSTM",
                    format!(
                        "For {kind} input, hx and cx should also be {want}-D but got ({}-D, {}-D) tensors",
                        h.dim(),
                        c.dim()
                    ),
                ));
            }
        }
        let h0 = base.prepare_state(&x, hx.map(|s| s.0), batched, base.real_hidden_size(), "hidden[0]")?;
        let c0 = base.prepare_state(&x, hx.map(|s| s.1), batched, base.hidden_size, "hidden[1]")?;
        let (out, h_n, c_n) = base.run(&x, &h0, Some(&c0))?;
        let c_n = c_n.ok_or_else(|| invalid("LSTM", "the cell state is missing"))?;
        let (h_n, c_n) = if batched { (h_n, c_n) } else { (h_n.squeeze_dim(1)?, c_n.squeeze_dim(1)?) };
        Ok((base.finish(out, batched)?, (h_n, c_n)))
    }
}

/// Checks a cell's input and state, adds the batch dimension to unbatched ones and fills a
/// missing state with zeros.
fn cell_inputs(
    op: &str,
    input: &Tensor,
    hx: Option<&Tensor>,
    hidden_size: i64,
    input_size: i64,
    w: &Tensor,
) -> Result<(Tensor, Tensor, bool)> {
    if input.dim() != 1 && input.dim() != 2 {
        return Err(invalid(op, format!("{op}: Expected input to be 1D or 2D, got {}D instead", input.dim())));
    }
    if let Some(h) = hx {
        if h.dim() != 1 && h.dim() != 2 {
            return Err(invalid(op, format!("{op}: Expected hidden to be 1D or 2D, got {}D instead", h.dim())));
        }
    }
    check_dtype(op, input, w)?;
    let batched = input.dim() == 2;
    let x = if batched { input.clone() } else { input.unsqueeze(0)? };
    if x.sizes()[1] != input_size {
        return Err(c10::Error::shape(
            op,
            format!("input has inconsistent input_size: got {} expected {input_size}", x.sizes()[1]),
        ));
    }
    let n = x.sizes()[0];
    let h = match hx {
        None => zeros_like_input(&x, &[n, hidden_size])?,
        Some(h) => {
            let h = if batched { h.clone() } else { h.unsqueeze(0)? };
            if h.sizes() != [n, hidden_size] {
                return Err(c10::Error::shape(
                    op,
                    format!(
                        "Expected hidden state of shape ({n}, {hidden_size}) to match the input batch, got {:?}",
                        h.sizes()
                    ),
                ));
            }
            h
        }
    };
    Ok((x, h, batched))
}

macro_rules! rnn_cell {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(crate::Module, Clone)]
        pub struct $name {
            /// `(gates * hidden_size, input_size)`.
            pub weight_ih: Parameter,
            /// `(gates * hidden_size, hidden_size)`.
            pub weight_hh: Parameter,
            /// `(gates * hidden_size,)`, if `bias`.
            pub bias_ih: Option<Parameter>,
            /// `(gates * hidden_size,)`, if `bias`.
            pub bias_hh: Option<Parameter>,
            /// `input_size`.
            pub input_size: i64,
            /// `hidden_size`.
            pub hidden_size: i64,
            /// The recurrence.
            pub mode: RNNMode,
        }

        impl $name {
            fn build(mode: RNNMode, input_size: i64, hidden_size: i64, bias: bool) -> Result<$name> {
                let op = stringify!($name);
                if input_size <= 0 || hidden_size <= 0 {
                    return Err(invalid(op, format!("input_size and hidden_size must be greater than zero, got {input_size} and {hidden_size}")));
                }
                let g = mode.num_gates() * hidden_size;
                let b = |on: bool| -> Result<Option<Parameter>> { if on { Ok(Some(Parameter::new(empty(&[g])?)?)) } else { Ok(None) } };
                let cell = $name {
                    weight_ih: Parameter::new(empty(&[g, input_size])?)?,
                    weight_hh: Parameter::new(empty(&[g, hidden_size])?)?,
                    bias_ih: b(bias)?,
                    bias_hh: b(bias)?,
                    input_size,
                    hidden_size,
                    mode,
                };
                cell.reset_parameters()?;
                Ok(cell)
            }

            /// `reset_parameters()`: every parameter U(-1/sqrt(hidden_size),
            /// 1/sqrt(hidden_size)), in registration order.
            pub fn reset_parameters(&self) -> Result<()> {
                let stdv = 1.0 / (self.hidden_size as f64).sqrt();
                for p in self.parameters() {
                    init::uniform_(&p, -stdv, stdv)?;
                }
                Ok(())
            }

            /// One step from `(N, input_size)` (or `(input_size,)`) and a state.
            fn cell_step(&self, input: &Tensor, hx: Option<&Tensor>, cx: Option<&Tensor>) -> Result<(Tensor, Option<Tensor>)> {
                let op = stringify!($name);
                let (x, h, batched) = cell_inputs(op, input, hx, self.hidden_size, self.input_size, &self.weight_ih)?;
                let c = if self.mode == RNNMode::Lstm {
                    let (_, c, _) = cell_inputs(op, input, cx, self.hidden_size, self.input_size, &self.weight_ih)?;
                    Some(c)
                } else {
                    None
                };
                let gi = ops::linear(&x, &self.weight_ih, self.bias_ih.as_deref())?;
                let gh = ops::linear(&h, &self.weight_hh, self.bias_hh.as_deref())?;
                let (h, c) = aten::native::rnn::cell_step(self.mode.aten(), &gi, &gh, &h, c.as_ref())?;
                if batched {
                    Ok((h, c))
                } else {
                    Ok((h.squeeze_dim(0)?, c.map(|c| c.squeeze_dim(0)).transpose()?))
                }
            }
        }
    };
}

rnn_cell!(
    /// `nn.RNNCell(input_size, hidden_size, bias=True, nonlinearity='tanh')`: one step
    /// `h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`.
    ///
    /// ```
    /// use nn::RNNCell;
    /// aten::manual_seed(0);
    /// let cell = RNNCell::new(3, 4).unwrap();
    /// let x = aten::ops::randn(&[2, 3], None, None, None, None).unwrap();
    /// assert_eq!(cell.forward(&x, None).unwrap().sizes(), &[2, 4]);
    /// ```
    RNNCell
);
rnn_cell!(
    /// `nn.LSTMCell(input_size, hidden_size, bias=True)`: one LSTM step.
    ///
    /// ```
    /// use nn::LSTMCell;
    /// aten::manual_seed(0);
    /// let cell = LSTMCell::new(3, 4).unwrap();
    /// let x = aten::ops::randn(&[2, 3], None, None, None, None).unwrap();
    /// let (h, c) = cell.forward(&x, None).unwrap();
    /// assert_eq!((h.sizes(), c.sizes()), (&[2, 4][..], &[2, 4][..]));
    /// ```
    LSTMCell
);
rnn_cell!(
    /// `nn.GRUCell(input_size, hidden_size, bias=True)`: one GRU step.
    ///
    /// ```
    /// use nn::GRUCell;
    /// aten::manual_seed(0);
    /// let cell = GRUCell::new(3, 4).unwrap();
    /// let x = aten::ops::randn(&[3], None, None, None, None).unwrap(); // unbatched
    /// assert_eq!(cell.forward(&x, None).unwrap().sizes(), &[4]);
    /// ```
    GRUCell
);

impl RNNCell {
    /// `RNNCell(input_size, hidden_size)`.
    pub fn new(input_size: i64, hidden_size: i64) -> Result<RNNCell> {
        RNNCell::with_options(input_size, hidden_size, true, "tanh")
    }
    /// `RNNCell(input_size, hidden_size, bias, nonlinearity)` (`tanh` or `relu`).
    pub fn with_options(input_size: i64, hidden_size: i64, bias: bool, nonlinearity: &str) -> Result<RNNCell> {
        RNNCell::build(RNNMode::from_nonlinearity("RNNCell", nonlinearity)?, input_size, hidden_size, bias)
    }
    /// `nonlinearity`: `tanh` or `relu`.
    pub fn nonlinearity(&self) -> &'static str {
        if self.mode == RNNMode::RnnRelu {
            "relu"
        } else {
            "tanh"
        }
    }
    /// `h' = cell(input, hx)`: `input` `(N, input_size)` or `(input_size,)`, `hx` of the
    /// matching `(N, hidden_size)` / `(hidden_size,)` shape, zeros when `None`.
    pub fn forward(&self, input: &Tensor, hx: Option<&Tensor>) -> Result<Tensor> {
        Ok(self.cell_step(input, hx, None)?.0)
    }
}

impl GRUCell {
    /// `GRUCell(input_size, hidden_size)`.
    pub fn new(input_size: i64, hidden_size: i64) -> Result<GRUCell> {
        GRUCell::with_bias(input_size, hidden_size, true)
    }
    /// `GRUCell(input_size, hidden_size, bias)`.
    pub fn with_bias(input_size: i64, hidden_size: i64, bias: bool) -> Result<GRUCell> {
        GRUCell::build(RNNMode::Gru, input_size, hidden_size, bias)
    }
    /// `h' = cell(input, hx)`, with the shapes of [`RNNCell::forward`].
    pub fn forward(&self, input: &Tensor, hx: Option<&Tensor>) -> Result<Tensor> {
        Ok(self.cell_step(input, hx, None)?.0)
    }
}

impl LSTMCell {
    /// `LSTMCell(input_size, hidden_size)`.
    pub fn new(input_size: i64, hidden_size: i64) -> Result<LSTMCell> {
        LSTMCell::with_bias(input_size, hidden_size, true)
    }
    /// `LSTMCell(input_size, hidden_size, bias)`.
    pub fn with_bias(input_size: i64, hidden_size: i64, bias: bool) -> Result<LSTMCell> {
        LSTMCell::build(RNNMode::Lstm, input_size, hidden_size, bias)
    }
    /// `(h', c') = cell(input, (h, c))`: shapes as in [`RNNCell::forward`], zeros when `None`.
    pub fn forward(&self, input: &Tensor, hx: Option<(&Tensor, &Tensor)>) -> Result<(Tensor, Tensor)> {
        let (h, c) = self.cell_step(input, hx.map(|s| s.0), hx.map(|s| s.1))?;
        let c = c.ok_or_else(|| invalid("LSTMCell", "the cell state is missing"))?;
        Ok((h, c))
    }
}
