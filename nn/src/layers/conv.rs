//! Convolutions: Conv1d/2d/3d and ConvTranspose1d/2d.

use aten::{ops, Tensor};
use c10::Result;

use crate::layers::linear::{empty, reset_bias, reset_weight};
use crate::layers::{expand_arg, invalid};
use crate::module::{Forward, Hooks, Parameter};
use crate::Module;

/// Padding of a convolution: explicit sizes, or PyTorch's `"same"` / `"valid"` strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Padding {
    /// Explicit padding per spatial dimension (or one value for all).
    Explicit(Vec<i64>),
    /// `padding="same"` (stride 1 only).
    Same,
    /// `padding="valid"` (no padding).
    Valid,
}

/// The keyword arguments of the convolution constructors, with PyTorch's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvOptions {
    /// `stride` (default 1).
    pub stride: Vec<i64>,
    /// `padding` (default 0).
    pub padding: Padding,
    /// `output_padding` (transposed convolutions only; default 0).
    pub output_padding: Vec<i64>,
    /// `dilation` (default 1).
    pub dilation: Vec<i64>,
    /// `groups` (default 1).
    pub groups: i64,
    /// `bias` (default true).
    pub bias: bool,
    /// `padding_mode`: `zeros` (default), `reflect`, `replicate` or `circular`.
    pub padding_mode: String,
}

impl Default for ConvOptions {
    fn default() -> ConvOptions {
        ConvOptions {
            stride: vec![1],
            padding: Padding::Explicit(vec![0]),
            output_padding: vec![0],
            dilation: vec![1],
            groups: 1,
            bias: true,
            padding_mode: "zeros".into(),
        }
    }
}

impl ConvOptions {
    /// Sets `stride`.
    pub fn stride(mut self, s: impl Into<Vec<i64>>) -> Self {
        self.stride = s.into();
        self
    }
    /// Sets an explicit `padding`.
    pub fn padding(mut self, p: impl Into<Vec<i64>>) -> Self {
        self.padding = Padding::Explicit(p.into());
        self
    }
    /// Sets `output_padding`.
    pub fn output_padding(mut self, p: impl Into<Vec<i64>>) -> Self {
        self.output_padding = p.into();
        self
    }
    /// Sets `dilation`.
    pub fn dilation(mut self, d: impl Into<Vec<i64>>) -> Self {
        self.dilation = d.into();
        self
    }
    /// Sets `groups`.
    pub fn groups(mut self, g: i64) -> Self {
        self.groups = g;
        self
    }
    /// Sets `bias`.
    pub fn bias(mut self, b: bool) -> Self {
        self.bias = b;
        self
    }
    /// Sets `padding_mode`.
    pub fn padding_mode(mut self, m: &str) -> Self {
        self.padding_mode = m.into();
        self
    }
}

/// A convolution over `N` spatial dimensions (`Conv1d` = `ConvNd<1>` and so on); with
/// `TRANSPOSED`, the transposed convolution (`ConvTranspose2d` = `ConvNd<2, true>`), so each
/// alias's constructors build the layer its name says.
#[derive(Module, Clone)]
pub struct ConvNd<const N: usize, const TRANSPOSED: bool = false> {
    /// `(out_channels, in_channels / groups, *kernel_size)`; transposed:
    /// `(in_channels, out_channels / groups, *kernel_size)`.
    pub weight: Parameter,
    /// `(out_channels,)`.
    pub bias: Option<Parameter>,
    /// `in_channels`.
    pub in_channels: i64,
    /// `out_channels`.
    pub out_channels: i64,
    /// `kernel_size`.
    pub kernel_size: Vec<i64>,
    /// `stride`.
    pub stride: Vec<i64>,
    /// Explicit padding (resolved from `same`/`valid`), per dimension.
    pub padding: Vec<i64>,
    /// `output_padding` (transposed only).
    pub output_padding: Vec<i64>,
    /// `dilation`.
    pub dilation: Vec<i64>,
    /// `groups`.
    pub groups: i64,
    /// `padding_mode`.
    pub padding_mode: String,
    /// `padding="same"` with an even kernel needs asymmetric padding: the per-side amounts.
    same_pad: Vec<i64>,
    hooks: Hooks,
}

/// `nn.Conv1d`.
pub type Conv1d = ConvNd<1>;
/// `nn.Conv2d`.
pub type Conv2d = ConvNd<2>;
/// `nn.Conv3d`.
pub type Conv3d = ConvNd<3>;

/// `nn.ConvTranspose1d`.
pub type ConvTranspose1d = ConvNd<1, true>;
/// `nn.ConvTranspose2d`.
pub type ConvTranspose2d = ConvNd<2, true>;

impl<const N: usize, const TRANSPOSED: bool> ConvNd<N, TRANSPOSED> {
    /// `ConvNd(in_channels, out_channels, kernel_size)` (or `ConvTransposeNd(...)`) with the
    /// default options.
    ///
    /// ```
    /// use nn::{Conv2d, ConvOptions, Forward};
    /// let c = Conv2d::with_options(1, 6, &[5], ConvOptions::default().padding([2])).unwrap();
    /// let x = aten::ops::zeros(&[1, 1, 28, 28], None, None, None, None).unwrap();
    /// assert_eq!(c.call(&x).unwrap().sizes(), &[1, 6, 28, 28]);
    /// ```
    pub fn new(in_channels: i64, out_channels: i64, kernel_size: i64) -> Result<Self> {
        Self::with_options(in_channels, out_channels, &[kernel_size], ConvOptions::default())
    }

    /// `ConvNd(in_channels, out_channels, kernel_size, **options)` (or `ConvTransposeNd(...)`).
    pub fn with_options(in_channels: i64, out_channels: i64, kernel_size: &[i64], opts: ConvOptions) -> Result<Self> {
        Self::build(in_channels, out_channels, kernel_size, opts)
    }

    /// Whether this is a transposed convolution (the type's `TRANSPOSED`).
    pub fn is_transposed(&self) -> bool {
        TRANSPOSED
    }

    fn build(in_channels: i64, out_channels: i64, kernel_size: &[i64], opts: ConvOptions) -> Result<Self> {
        let op = if TRANSPOSED { format!("ConvTranspose{N}d") } else { format!("Conv{N}d") };
        let g = opts.groups;
        if g <= 0 {
            return Err(invalid(&op, "groups must be a positive integer"));
        }
        if in_channels % g != 0 {
            return Err(invalid(&op, "in_channels must be divisible by groups"));
        }
        if out_channels % g != 0 {
            return Err(invalid(&op, "out_channels must be divisible by groups"));
        }
        if !["zeros", "reflect", "replicate", "circular"].contains(&opts.padding_mode.as_str()) {
            return Err(invalid(
                &op,
                format!("padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], but got padding_mode='{}'", opts.padding_mode),
            ));
        }
        if TRANSPOSED && opts.padding_mode != "zeros" {
            return Err(invalid(&op, format!("Only \"zeros\" padding mode is supported for {op}")));
        }
        let kernel_size = expand_arg(&op, "kernel_size", kernel_size, N)?;
        let stride = expand_arg(&op, "stride", &opts.stride, N)?;
        let dilation = expand_arg(&op, "dilation", &opts.dilation, N)?;
        let output_padding = expand_arg(&op, "output_padding", &opts.output_padding, N)?;
        let (padding, same_pad) = match &opts.padding {
            Padding::Explicit(p) => (expand_arg(&op, "padding", p, N)?, Vec::new()),
            Padding::Valid => (vec![0; N], Vec::new()),
            Padding::Same => {
                if TRANSPOSED {
                    return Err(invalid(&op, "padding='same' is not supported for transposed convolutions"));
                }
                if stride.iter().any(|&s| s != 1) {
                    return Err(invalid(&op, "padding='same' is not supported for strided convolutions"));
                }
                // Total padding d * (k - 1), the extra element on the right (PyTorch's rule);
                // checked, since a huge dilation overflows it.
                let totals: Vec<i64> = (0..N)
                    .map(|i| {
                        dilation[i].checked_mul(kernel_size[i] - 1).ok_or_else(|| {
                            invalid(
                                &op,
                                format!(
                                    "padding='same': dilation {} times kernel size {} minus 1 overflows",
                                    dilation[i], kernel_size[i]
                                ),
                            )
                        })
                    })
                    .collect::<Result<_>>()?;
                let mut sides = Vec::with_capacity(2 * N);
                for i in (0..N).rev() {
                    let left = totals[i] / 2;
                    sides.push(left);
                    sides.push(totals[i] - left);
                }
                let sym: Vec<i64> = totals.iter().map(|t| t / 2).collect();
                let asym = totals.iter().any(|t| t % 2 != 0);
                (if asym { vec![0; N] } else { sym }, if asym { sides } else { Vec::new() })
            }
        };
        let mut wshape =
            if TRANSPOSED { vec![in_channels, out_channels / g] } else { vec![out_channels, in_channels / g] };
        wshape.extend_from_slice(&kernel_size);
        let w = empty(&wshape)?;
        reset_weight(&w)?;
        let bias = if opts.bias {
            let b = empty(&[out_channels])?;
            reset_bias(&b, &w)?;
            Some(Parameter::new(b)?)
        } else {
            None
        };
        Ok(ConvNd {
            weight: Parameter::new(w)?,
            bias,
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            output_padding,
            dilation,
            groups: g,
            padding_mode: opts.padding_mode,
            same_pad,
            hooks: Hooks::default(),
        })
    }

    /// The transposed convolution with an explicit `output_size` (PyTorch's
    /// `forward(input, output_size)`): the output padding is chosen to reach it.
    pub fn forward_with_output_size(&self, x: &Tensor, output_size: &[i64]) -> Result<Tensor> {
        if !TRANSPOSED {
            return Err(invalid("ConvNd", "output_size is only accepted by transposed convolutions"));
        }
        let spatial = &output_size[output_size.len().saturating_sub(N)..];
        if spatial.len() != N || x.dim() < N {
            return Err(invalid("ConvTranspose", format!("output_size must have {N} or {} elements", N + 2)));
        }
        let mut op = Vec::with_capacity(N);
        for i in 0..N {
            let inp = x.sizes()[x.dim() - N + i];
            let min =
                (inp - 1) * self.stride[i] - 2 * self.padding[i] + self.dilation[i] * (self.kernel_size[i] - 1) + 1;
            let extra = spatial[i] - min;
            if extra < 0 || extra >= self.stride[i].max(self.dilation[i]) {
                return Err(invalid(
                    "ConvTranspose",
                    format!("requested an output size of {spatial:?}, but valid sizes range from {min} to {} (for an input of {inp})", min + self.stride[i] - 1),
                ));
            }
            op.push(extra);
        }
        self.run(x, &op)
    }

    fn run(&self, x: &Tensor, output_padding: &[i64]) -> Result<Tensor> {
        let b = self.bias.as_deref();
        if TRANSPOSED {
            return match N {
                1 => ops::conv_transpose1d(
                    x,
                    &self.weight,
                    b,
                    &self.stride,
                    &self.padding,
                    output_padding,
                    self.groups,
                    &self.dilation,
                ),
                2 => ops::conv_transpose2d(
                    x,
                    &self.weight,
                    b,
                    &self.stride,
                    &self.padding,
                    output_padding,
                    self.groups,
                    &self.dilation,
                ),
                _ => ops::conv_transpose3d(
                    x,
                    &self.weight,
                    b,
                    &self.stride,
                    &self.padding,
                    output_padding,
                    self.groups,
                    &self.dilation,
                ),
            };
        }
        let (input, padding) = if self.padding_mode != "zeros" {
            let mut pad = Vec::with_capacity(2 * N);
            for i in (0..N).rev() {
                pad.push(self.padding[i]);
                pad.push(self.padding[i]);
            }
            (ops::pad(x, &pad, &self.padding_mode, None)?, vec![0; N])
        } else if !self.same_pad.is_empty() {
            (ops::pad(x, &self.same_pad, "constant", None)?, vec![0; N])
        } else {
            (x.clone(), self.padding.clone())
        };
        match N {
            1 => ops::conv1d(&input, &self.weight, b, &self.stride, &padding, &self.dilation, self.groups),
            2 => ops::conv2d(&input, &self.weight, b, &self.stride, &padding, &self.dilation, self.groups),
            _ => ops::conv3d(&input, &self.weight, b, &self.stride, &padding, &self.dilation, self.groups),
        }
    }
}

impl<const N: usize, const TRANSPOSED: bool> Forward for ConvNd<N, TRANSPOSED> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.run(x, &self.output_padding)
    }
}
