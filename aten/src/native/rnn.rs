//! The recurrent operators `rnn_tanh`, `rnn_relu`, `gru` and `lstm` (`.input` overloads, as
//! `torch._VF` calls them from `nn.RNN`/`nn.GRU`/`nn.LSTM`): composites over `linear` and
//! pointwise operators, so autograd differentiates them through their decomposition. `nn`'s
//! recurrent layers call them, and a traced layer records one `aten::gru` node as PyTorch's does.
//!
//! Note [RNN parameter lists]: `params` holds, for each layer and then each direction, `w_ih`,
//! `w_hh`, then `b_ih`, `b_hh` when `has_biases`, then an LSTM's projection `w_hr` when it has
//! one (the list is one longer per layer and direction). The input is `(L, N, H_in)`, or
//! `(N, L, H_in)` with `batch_first`; states are `(layers * directions, N, H)`.

use c10::{Error, Result};

use crate::ops;
use crate::Tensor;

/// The recurrence of a layer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RnnMode {
    /// `h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`.
    Tanh,
    /// `h' = relu(W_ih x + b_ih + W_hh h + b_hh)`.
    Relu,
    /// Gates `r, z, n`.
    Gru,
    /// Gates `i, f, g, o`, with a cell state.
    Lstm,
}

impl RnnMode {
    fn name(self) -> &'static str {
        match self {
            RnnMode::Tanh => "rnn_tanh",
            RnnMode::Relu => "rnn_relu",
            RnnMode::Gru => "gru",
            RnnMode::Lstm => "lstm",
        }
    }
}

struct Layer<'a> {
    w_ih: &'a Tensor,
    w_hh: &'a Tensor,
    b_ih: Option<&'a Tensor>,
    b_hh: Option<&'a Tensor>,
    w_hr: Option<&'a Tensor>,
}

/// One step from the projections `gi = W_ih x + b_ih`, `gh = W_hh h + b_hh` (both
/// `(N, gates * hidden)`): the new `h` (before an LSTM's projection) and an LSTM's new cell
/// state. The layers here and `nn`'s cells (`RNNCell`, `GRUCell`, `LSTMCell`) share it.
pub fn cell_step(
    mode: RnnMode,
    gi: &Tensor,
    gh: &Tensor,
    h: &Tensor,
    c: Option<&Tensor>,
) -> Result<(Tensor, Option<Tensor>)> {
    match mode {
        RnnMode::Tanh => Ok((gi.add(gh).call()?.tanh()?, None)),
        RnnMode::Relu => Ok((gi.add(gh).call()?.relu()?, None)),
        RnnMode::Lstm => {
            let c = c.ok_or_else(|| Error::invalid("lstm", "the cell state is missing"))?;
            let gates = gi.add(gh).call()?.chunk_with(4, -1)?;
            let [i, f, g, o] = <[Tensor; 4]>::try_from(gates)
                .map_err(|_| Error::invalid("lstm", "the gate size must be 4 * hidden_size"))?;
            let (i, f, g, o) = (i.sigmoid()?, f.sigmoid()?, g.tanh()?, o.sigmoid()?);
            let c_new = f.mul(c)?.add(&i.mul(&g)?).call()?;
            let h_new = o.mul(&c_new.tanh()?)?;
            Ok((h_new, Some(c_new)))
        }
        RnnMode::Gru => {
            if let Some(out) = gru_step_fused(gi, gh, h)? {
                return Ok((out, None));
            }
            let i = gi.chunk_with(3, -1)?;
            let hh = gh.chunk_with(3, -1)?;
            if i.len() != 3 || hh.len() != 3 {
                return Err(Error::invalid("gru", "the gate size must be 3 * hidden_size"));
            }
            let r = i[0].add(&hh[0]).call()?.sigmoid()?;
            let z = i[1].add(&hh[1]).call()?.sigmoid()?;
            // n = tanh(W_in x + b_in + r * (W_hn h + b_hn)); h' = (1 - z) * n + z * h, written as
            // ATen does: (h - n) * z + n.
            let n = i[2].add(&r.mul(&hh[2])?).call()?.tanh()?;
            Ok((h.sub(&n).call()?.mul(&z)?.add(&n).call()?, None))
        }
    }
}

/// Note [Fused GRU step]: a GRU step after its two projections is ten pointwise operators over
/// `[N, H]` (three chunks' worth of views, two sigmoids, a tanh, the blend), each with its own
/// iterator, output and dispatch; for the small batches of a decoding loop that is most of the
/// step (`W7.script_loop`). When nothing needs a gradient, f32 rows run in one pass instead,
/// with the same f32 operations in the same order as the operators (`sigmoid` and `tanh` are
/// aten's own bodies, `vec::times_sigmoid_f32` and `vec::tanh_f32`), so the result is the same
/// bits. With a gradient to record, the operators run, and autograd differentiates them.
fn gru_step_fused(gi: &Tensor, gh: &Tensor, h: &Tensor) -> Result<Option<Tensor>> {
    let ts = [gi, gh, h];
    let records =
        c10::grad_mode::is_enabled() && ts.iter().any(|t| t.imp().autograd_meta().is_some_and(|m| m.requires_grad()));
    let plain = ts
        .iter()
        .all(|t| t.dtype() == c10::ScalarType::F32 && t.device().is_cpu() && t.dim() == 2 && t.is_contiguous());
    if records || !plain {
        return Ok(None);
    }
    let (rows, hid) = (h.sizes()[0], h.sizes()[1]);
    if gi.sizes() != [rows, 3 * hid] || gh.sizes() != [rows, 3 * hid] {
        return Ok(None);
    }
    let out = ops::empty(&[rows, hid], Some(c10::ScalarType::F32), None, Some(h.device()), None, None)?;
    let (rows, hid) = (rows as usize, hid as usize);
    // SAFETY: the three inputs are contiguous f32 CPU tensors of `rows * 3 * hid`, `rows * 3 *
    // hid` and `rows * hid` elements (checked above), and `out` was just allocated with `rows *
    // hid`, so each slice covers exactly its tensor's elements; `out` aliases none of them.
    let (gi, gh, h, o) = unsafe {
        (
            std::slice::from_raw_parts(gi.data_ptr() as *const f32, rows * 3 * hid),
            std::slice::from_raw_parts(gh.data_ptr() as *const f32, rows * 3 * hid),
            std::slice::from_raw_parts(h.data_ptr() as *const f32, rows * hid),
            std::slice::from_raw_parts_mut(out.data_ptr() as *mut f32, rows * hid),
        )
    };
    for (r, o) in o.chunks_exact_mut(hid.max(1)).enumerate().take(rows) {
        let g = r * 3 * hid..(r + 1) * 3 * hid;
        crate::native::cpu::vec::gru_gates_f32(&gi[g.clone()], &gh[g], &h[r * hid..(r + 1) * hid], o);
    }
    Ok(Some(out))
}

#[allow(clippy::too_many_arguments)]
fn run(
    mode: RnnMode,
    input: &Tensor,
    h0: &Tensor,
    c0: Option<&Tensor>,
    params: &[Tensor],
    has_biases: bool,
    num_layers: i64,
    dropout: f64,
    train: bool,
    bidirectional: bool,
    batch_first: bool,
) -> Result<(Tensor, Tensor, Option<Tensor>)> {
    let op = mode.name();
    if input.dim() != 3 {
        return Err(Error::invalid(op, format!("{op}: Expected input to be 3D, got {}D instead", input.dim())));
    }
    let x = if batch_first { input.transpose(0, 1)? } else { input.clone() };
    let (seq_len, batch) = (x.sizes()[0], x.sizes()[1]);
    if seq_len == 0 {
        return Err(Error::invalid(op, "Expected sequence length to be larger than 0 in RNN"));
    }
    if x.numel() == 0 {
        return Err(Error::invalid(
            op,
            format!("{op}: an input with no elements ({:?}) is not supported", input.sizes()),
        ));
    }
    let d: i64 = if bidirectional { 2 } else { 1 };
    let groups = num_layers.checked_mul(d).filter(|g| *g > 0 && *g <= params.len() as i64).ok_or_else(|| {
        Error::invalid(op, format!("{op}: num_layers ({num_layers}) does not match the {} parameters", params.len()))
    })? as usize;
    let base = if has_biases { 4 } else { 2 };
    let per = params.len() / groups;
    let projected = mode == RnnMode::Lstm && per == base + 1;
    if !params.len().is_multiple_of(groups) || !(per == base || projected) {
        return Err(Error::invalid(
            op,
            format!(
                "{op}: got {} parameters for {num_layers} layer(s) and {d} direction(s) (has_biases={has_biases})",
                params.len()
            ),
        ));
    }
    let layers: Vec<Layer<'_>> = params
        .chunks(per)
        .map(|p| Layer {
            w_ih: &p[0],
            w_hh: &p[1],
            b_ih: has_biases.then(|| &p[2]),
            b_hh: has_biases.then(|| &p[3]),
            w_hr: projected.then(|| &p[per - 1]),
        })
        .collect();
    for (what, s) in [("hx", Some(h0)), ("cx", c0)] {
        if let Some(s) = s {
            if s.dim() != 3 || s.sizes()[0] != groups as i64 || s.sizes()[1] != batch {
                return Err(Error::shape(
                    op,
                    format!("Expected {what} of size ({groups}, {batch}, hidden), got {:?}", s.sizes()),
                ));
            }
        }
    }
    let mut layer_input = x;
    let mut h_n = Vec::new();
    let mut c_n = Vec::new();
    for layer in 0..num_layers {
        let mut dir_outputs = Vec::new();
        for dir in 0..d {
            let idx = layer * d + dir;
            let p = &layers[idx as usize];
            // One matmul for the input projection of every time step.
            let gi_all = ops::linear(&layer_input, p.w_ih, p.b_ih)?;
            let mut h = h0.select(0, idx)?;
            let mut c = match c0 {
                Some(c0) => Some(c0.select(0, idx)?),
                None => None,
            };
            let mut outs: Vec<Option<Tensor>> = vec![None; seq_len as usize];
            for s in 0..seq_len {
                let t = if dir == 1 { seq_len - 1 - s } else { s };
                let gi = gi_all.select(0, t)?;
                let gh = ops::linear(&h, p.w_hh, p.b_hh)?;
                let (h_new, c_new) = cell_step(mode, &gi, &gh, &h, c.as_ref())?;
                h = match p.w_hr {
                    Some(w_hr) => ops::linear(&h_new, w_hr, None)?,
                    None => h_new,
                };
                c = c_new;
                outs[t as usize] = Some(h.clone());
            }
            let outs: Vec<Tensor> = outs.into_iter().flatten().collect();
            dir_outputs.push(ops::stack(&outs, 0)?);
            h_n.push(h);
            c_n.extend(c);
        }
        layer_input = if d == 1 { dir_outputs.swap_remove(0) } else { ops::cat(&dir_outputs, 2)? };
        if train && dropout > 0.0 && layer + 1 < num_layers {
            layer_input = ops::dropout(&layer_input, dropout, true)?;
        }
    }
    let out = if batch_first { layer_input.transpose(0, 1)? } else { layer_input };
    let h_n = ops::stack(&h_n, 0)?;
    let c_n = if c0.is_some() { Some(ops::stack(&c_n, 0)?) } else { None };
    Ok((out, h_n, c_n))
}

/// The single-state recurrent operators: `NAME.input(Tensor input, Tensor hx, Tensor[] params,
/// bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool
/// batch_first) -> (Tensor output, Tensor h_n)`.
macro_rules! single_state_rnn {
    ($($(#[$doc:meta])* $name:ident => $mode:expr;)*) => {$(
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        pub fn $name(
            input: &Tensor,
            hx: &Tensor,
            params: &[Tensor],
            has_biases: bool,
            num_layers: i64,
            dropout: f64,
            train: bool,
            bidirectional: bool,
            batch_first: bool,
        ) -> Result<(Tensor, Tensor)> {
            let (o, h, _) =
                run($mode, input, hx, None, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)?;
            Ok((o, h))
        }
    )*};
}

single_state_rnn! {
    /// `rnn_tanh.input(...)`.
    rnn_tanh_input => RnnMode::Tanh;
    /// `rnn_relu.input(...)`.
    rnn_relu_input => RnnMode::Relu;
    /// `gru.input(...)`.
    gru_input => RnnMode::Gru;
}

/// The single-state cells: `NAME(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor?
/// b_ih=None, Tensor? b_hh=None) -> Tensor`, one step of the recurrence (what `nn.RNNCell` and
/// `nn.GRUCell` call, and what their scripted code names).
macro_rules! single_state_cell {
    ($($(#[$doc:meta])* $name:ident => $mode:expr;)*) => {$(
        $(#[$doc])*
        pub fn $name(
            input: &Tensor,
            hx: &Tensor,
            w_ih: &Tensor,
            w_hh: &Tensor,
            b_ih: Option<&Tensor>,
            b_hh: Option<&Tensor>,
        ) -> Result<Tensor> {
            let gi = ops::linear(input, w_ih, b_ih)?;
            let gh = ops::linear(hx, w_hh, b_hh)?;
            Ok(cell_step($mode, &gi, &gh, hx, None)?.0)
        }
    )*};
}

single_state_cell! {
    /// `rnn_tanh_cell(...)`.
    rnn_tanh_cell => RnnMode::Tanh;
    /// `rnn_relu_cell(...)`.
    rnn_relu_cell => RnnMode::Relu;
    /// `gru_cell(...)`.
    gru_cell => RnnMode::Gru;
}

/// `lstm_cell(Tensor input, Tensor[] hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor?
/// b_hh=None) -> (Tensor, Tensor)`: `hx` is `[h, c]`; the new `h` and `c`.
pub fn lstm_cell(
    input: &Tensor,
    hx: &[Tensor],
    w_ih: &Tensor,
    w_hh: &Tensor,
    b_ih: Option<&Tensor>,
    b_hh: Option<&Tensor>,
) -> Result<(Tensor, Tensor)> {
    let [h, c] = hx else {
        return Err(Error::invalid(
            "lstm_cell",
            format!("lstm_cell: expected hx to be [h, c], got {} tensors", hx.len()),
        ));
    };
    let gi = ops::linear(input, w_ih, b_ih)?;
    let gh = ops::linear(h, w_hh, b_hh)?;
    let (h, c) = cell_step(RnnMode::Lstm, &gi, &gh, h, Some(c))?;
    let c = c.ok_or_else(|| Error::invalid("lstm_cell", "the cell state is missing"))?;
    Ok((h, c))
}

/// `lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers,
/// float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor)`:
/// `hx` is `[h0, c0]`.
#[allow(clippy::too_many_arguments)]
pub fn lstm_input(
    input: &Tensor,
    hx: &[Tensor],
    params: &[Tensor],
    has_biases: bool,
    num_layers: i64,
    dropout: f64,
    train: bool,
    bidirectional: bool,
    batch_first: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    let [h0, c0] = hx else {
        return Err(Error::invalid("lstm", format!("lstm: expected hx to be [h0, c0], got {} tensors", hx.len())));
    };
    let (o, h, c) = run(
        RnnMode::Lstm,
        input,
        h0,
        Some(c0),
        params,
        has_biases,
        num_layers,
        dropout,
        train,
        bidirectional,
        batch_first,
    )?;
    Ok((o, h, c.expect("an LSTM returns its cell state")))
}
