//! `torch.nn.functional`, with PyTorch's names and argument names:
//! `use torch::nn::functional as F;` then `F::relu(&x)?`, `F::max_pool2d(&x, 2).call()?`,
//! `F::cross_entropy(&logits, &y).label_smoothing(0.1).call()?`.
//!
//! Most functions are the operators' front-end calls (Note [Front-end calls] in
//! `aten/src/front.rs`): the required arguments, then a setter per defaulted argument and
//! `.call()`; a function without defaulted arguments returns its result directly. The
//! functions whose PyTorch signature differs from the operator's (argument order, defaults the
//! operator lacks, a typed mode) are written here the same way.
//!
//! ```
//! use aten::Tensor;
//! use nn::functional::{self as F, Reduction};
//! let logits = Tensor::from_vec(vec![2.0f32, 0.5, -1.0, 0.0, 1.0, 3.0], &[2, 3]).unwrap();
//! let y = Tensor::from_slice(&[0i64, 2]);
//! let mean = F::cross_entropy(&logits, &y).call().unwrap();
//! let sum = F::cross_entropy(&logits, &y).reduction(Reduction::Sum).call().unwrap();
//! assert!((sum.item::<f32>().unwrap() - 2.0 * mean.item::<f32>().unwrap()).abs() < 1e-6);
//! ```

use std::marker::PhantomData;

use aten::front::IntList;
use aten::{ops, Tensor};
use c10::{Error, Result, ScalarType};

pub use aten::front::{
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, avg_pool1d, avg_pool2d, avg_pool3d, bilinear,
    binary_cross_entropy, binary_cross_entropy_with_logits, cdist, celu, channel_shuffle, conv1d, conv2d, conv3d,
    conv_transpose1d, conv_transpose2d, conv_transpose3d, cosine_embedding_loss, cosine_similarity, elu, gelu, glu,
    group_norm, hardshrink, hardsigmoid, hardswish, hardtanh, hinge_embedding_loss, huber_loss, kl_div, l1_loss,
    layer_norm, leaky_relu, linear, log_softmax, margin_ranking_loss, max_pool1d, max_pool1d_with_indices, max_pool2d,
    max_pool2d_with_indices, max_pool3d, mish, mse_loss, multi_margin_loss, multilabel_margin_loss, nll_loss, one_hot,
    pairwise_distance, pixel_shuffle, pixel_unshuffle, prelu, relu, relu6, rms_norm, rrelu,
    scaled_dot_product_attention, selu, sigmoid, silu, smooth_l1_loss, soft_margin_loss, softmax, softplus, softshrink,
    tanh, threshold, triplet_margin_loss,
};
pub use aten::front::{cross_entropy_loss as cross_entropy, Reduction};

/// Declares a functional call in the front end's shape: a function taking the required
/// arguments, a builder with a setter per option (its PyTorch default as initial value), and
/// `call`, whose body sees the builder as `$s`.
macro_rules! functional {
    ($(#[$doc:meta])* $name:ident => $B:ident ( $($req:ident : $rty:ty),* ) { $($opt:ident : $oty:ty = $odef:expr),* $(,)? } |$s:ident| $body:expr) => {
        $(#[$doc])*
        #[inline]
        pub fn $name<'a>($($req: $rty),*) -> $B<'a> {
            $B { $($req,)* $($opt: $odef,)* _lt: PhantomData }
        }

        #[doc = concat!("The options of [`", stringify!($name), "`]; `.call()` runs it.")]
        #[must_use = "a builder does nothing until `.call()`"]
        pub struct $B<'a> {
            $($req: $rty,)*
            $($opt: $oty,)*
            _lt: PhantomData<&'a ()>,
        }

        impl<'a> $B<'a> {
            $(
                #[doc = concat!("Sets `", stringify!($opt), "` (default `", stringify!($odef), "`).")]
                #[inline]
                pub fn $opt(mut self, v: impl Into<$oty>) -> Self {
                    self.$opt = v.into();
                    self
                }
            )*
            /// Runs the function.
            #[inline]
            pub fn call(self) -> Result<Tensor> {
                let $s = self;
                $body
            }
        }
    };
}

functional! {
    /// `F.dropout(input, p=0.5, training=True)`: zeroes elements with probability `p` and
    /// scales the rest by `1/(1-p)` when `training`.
    dropout => Dropout(input: &'a Tensor) { p: f64 = 0.5, training: bool = true } |s| ops::dropout(s.input, s.p, s.training)
}

functional! {
    /// `F.alpha_dropout(input, p=0.5, training=False)`.
    alpha_dropout => AlphaDropout(input: &'a Tensor) { p: f64 = 0.5, training: bool = false } |s| ops::alpha_dropout(s.input, s.p, s.training)
}

functional! {
    /// `F.feature_alpha_dropout(input, p=0.5, training=False)`.
    feature_alpha_dropout => FeatureAlphaDropout(input: &'a Tensor) { p: f64 = 0.5, training: bool = false } |s| ops::feature_alpha_dropout(s.input, s.p, s.training)
}

functional! {
    /// `F.dropout2d(input, p=0.5, training=True)`: zeroes whole channels.
    dropout2d => Dropout2d(input: &'a Tensor) { p: f64 = 0.5, training: bool = true } |s| ops::feature_dropout(s.input, s.p, s.training)
}

functional! {
    /// `F.dropout1d(input, p=0.5, training=True)`: zeroes whole channels.
    dropout1d => Dropout1d(input: &'a Tensor) { p: f64 = 0.5, training: bool = true } |s| ops::feature_dropout(s.input, s.p, s.training)
}

functional! {
    /// `F.dropout3d(input, p=0.5, training=True)`: zeroes whole channels.
    dropout3d => Dropout3d(input: &'a Tensor) { p: f64 = 0.5, training: bool = true } |s| ops::feature_dropout(s.input, s.p, s.training)
}

functional! {
    /// `F.batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
    /// momentum=0.1, eps=1e-05)`; the running statistics are updated in place when `training`.
    batch_norm => BatchNorm(input: &'a Tensor, running_mean: Option<&'a Tensor>, running_var: Option<&'a Tensor>) {
        weight: Option<&'a Tensor> = None,
        bias: Option<&'a Tensor> = None,
        training: bool = false,
        momentum: f64 = 0.1,
        eps: f64 = 1e-5,
    } |s| ops::batch_norm(s.input, s.weight, s.bias, s.running_mean, s.running_var, s.training, s.momentum, s.eps, true)
}

functional! {
    /// `F.instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
    /// use_input_stats=True, momentum=0.1, eps=1e-05)`.
    instance_norm => InstanceNorm(input: &'a Tensor) {
        running_mean: Option<&'a Tensor> = None,
        running_var: Option<&'a Tensor> = None,
        weight: Option<&'a Tensor> = None,
        bias: Option<&'a Tensor> = None,
        use_input_stats: bool = true,
        momentum: f64 = 0.1,
        eps: f64 = 1e-5,
    } |s| ops::instance_norm(s.input, s.weight, s.bias, s.running_mean, s.running_var, s.use_input_stats, s.momentum, s.eps, true)
}

functional! {
    /// `F.embedding(input, weight, padding_idx=None, scale_grad_by_freq=False, sparse=False)`:
    /// the rows of `weight` at the indices `input`. A negative `padding_idx` counts from the end,
    /// as in PyTorch; `max_norm` is not supported.
    embedding => Embedding(input: &'a Tensor, weight: &'a Tensor) {
        padding_idx: Option<i64> = None,
        scale_grad_by_freq: bool = false,
        sparse: bool = false,
    } |s| {
        let n = s.weight.sizes().first().copied().unwrap_or(0);
        let padding_idx = match s.padding_idx {
            None => -1,
            Some(p) if (0..n).contains(&p) => p,
            Some(p) if (-n..0).contains(&p) => p + n,
            Some(_) => return Err(Error::InvalidArgument { op: "embedding".into(), msg: "Padding_idx must be within num_embeddings".into() }),
        };
        ops::embedding(s.weight, s.input, padding_idx, s.scale_grad_by_freq, s.sparse)
    }
}

functional! {
    /// `F.embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
    /// mode="mean", per_sample_weights=None, include_last_offset=False, padding_idx=None)`:
    /// the sum, mean or maximum of the rows of `weight` looked up by each bag
    /// ([`crate::layers::embedding_bag`]); `sparse` makes `weight`'s gradient a sparse COO tensor.
    /// `scale_grad_by_freq` is not supported.
    embedding_bag => EmbeddingBag(input: &'a Tensor, weight: &'a Tensor) {
        offsets: Option<&'a Tensor> = None,
        max_norm: Option<f64> = None,
        norm_type: f64 = 2.0,
        mode: crate::layers::BagMode = crate::layers::BagMode::Mean,
        per_sample_weights: Option<&'a Tensor> = None,
        include_last_offset: bool = false,
        padding_idx: Option<i64> = None,
        sparse: bool = false,
    } |s| {
        let options = crate::layers::BagOptions {
            mode: s.mode,
            padding_idx: s.padding_idx,
            max_norm: s.max_norm,
            norm_type: s.norm_type,
            include_last_offset: s.include_last_offset,
            sparse: s.sparse,
        };
        crate::layers::embedding_bag(s.weight, s.input, s.offsets, s.per_sample_weights, &options)
    }
}

functional! {
    /// `F.normalize(input, p=2.0, dim=1, eps=1e-12)`: `input / max(‖input‖_p, eps)` along `dim`.
    normalize => Normalize(input: &'a Tensor) { p: f64 = 2.0, dim: i64 = 1, eps: f64 = 1e-12 } |s| {
        let norm = aten::front::linalg_vector_norm(s.input).ord(s.p).dim(s.dim).keepdim(true).call()?;
        let denom = norm.clamp_min(s.eps)?.expand_as(s.input)?;
        s.input.div(&denom).call()
    }
}

functional! {
    /// `F.softmin(input, dim)`: `softmax(-input, dim)`.
    softmin => Softmin(input: &'a Tensor, dim: i64) { dtype: Option<ScalarType> = None } |s| {
        let neg = s.input.neg()?;
        match s.dtype {
            Some(d) => neg.softmax(s.dim).dtype(d).call(),
            None => neg.softmax(s.dim).call(),
        }
    }
}

functional! {
    /// `F.poisson_nll_loss(input, target, log_input=True, full=False, eps=1e-08, reduction='mean')`.
    poisson_nll_loss => PoissonNllLoss(input: &'a Tensor, target: &'a Tensor) {
        log_input: bool = true,
        full: bool = false,
        eps: f64 = 1e-8,
        reduction: Reduction = Reduction::Mean,
    } |s| ops::poisson_nll_loss(s.input, s.target, s.log_input, s.full, s.eps, s.reduction.code())
}

/// `F.logsigmoid(input)`: `log(sigmoid(x))`, computed as `-softplus(-x)` so it stays finite
/// for large negative inputs.
pub fn logsigmoid(input: &Tensor) -> Result<Tensor> {
    aten::front::softplus(&input.neg()?).call()?.neg()
}

/// `F.softsign(input)`: `x / (1 + |x|)`.
pub fn softsign(input: &Tensor) -> Result<Tensor> {
    input.div(&input.abs()?.add(1).call()?).call()
}

/// `F.tanhshrink(input)`: `x - tanh(x)`.
pub fn tanhshrink(input: &Tensor) -> Result<Tensor> {
    input.sub(&input.tanh()?).call()
}

/// `F.adaptive_max_pool1d(input, output_size)` (the indices: `max_pool1d_with_indices` or
/// `aten::front::adaptive_max_pool1d`).
pub fn adaptive_max_pool1d<'a>(input: &'a Tensor, output_size: impl Into<IntList<'a>>) -> Result<Tensor> {
    Ok(aten::front::adaptive_max_pool1d(input, output_size)?.0)
}

/// `F.adaptive_max_pool2d(input, output_size)`.
pub fn adaptive_max_pool2d<'a>(input: &'a Tensor, output_size: impl Into<IntList<'a>>) -> Result<Tensor> {
    Ok(aten::front::adaptive_max_pool2d(input, output_size)?.0)
}

/// `F.adaptive_max_pool3d(input, output_size)`.
pub fn adaptive_max_pool3d<'a>(input: &'a Tensor, output_size: impl Into<IntList<'a>>) -> Result<Tensor> {
    Ok(aten::front::adaptive_max_pool3d(input, output_size)?.0)
}

/// The `mode` of [`pad`] (`F.pad`'s strings).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PaddingMode {
    /// `'constant'`: pad with `value` (default 0).
    #[default]
    Constant,
    /// `'reflect'`: mirror without repeating the edge.
    Reflect,
    /// `'replicate'`: repeat the edge.
    Replicate,
    /// `'circular'`: wrap around.
    Circular,
}

impl PaddingMode {
    /// PyTorch's string for the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            PaddingMode::Constant => "constant",
            PaddingMode::Reflect => "reflect",
            PaddingMode::Replicate => "replicate",
            PaddingMode::Circular => "circular",
        }
    }
}

/// `F.pad(input, pad, mode='constant', value=None)`: `pad` lists (before, after) amounts from
/// the last dimension backwards.
#[inline]
pub fn pad<'a>(input: &'a Tensor, pad: impl Into<IntList<'a>>) -> Pad<'a> {
    Pad { input, pad: pad.into(), mode: PaddingMode::Constant, value: None }
}

/// The options of [`pad`]; `.call()` runs it.
#[must_use = "a builder does nothing until `.call()`"]
pub struct Pad<'a> {
    input: &'a Tensor,
    pad: IntList<'a>,
    mode: PaddingMode,
    value: Option<f64>,
}

impl Pad<'_> {
    /// Sets `mode` (default `PaddingMode::Constant`).
    pub fn mode(mut self, mode: PaddingMode) -> Self {
        self.mode = mode;
        self
    }
    /// Sets `value`, the fill of the constant mode (default 0).
    pub fn value(mut self, value: f64) -> Self {
        self.value = Some(value);
        self
    }
    /// Runs the function.
    pub fn call(self) -> Result<Tensor> {
        ops::pad(self.input, &self.pad.expand(None), self.mode.as_str(), self.value)
    }
}

/// The `mode` of [`interpolate`] (`F.interpolate`'s strings).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InterpolateMode {
    /// `'nearest'` (the default).
    #[default]
    Nearest,
    /// `'nearest-exact'`.
    NearestExact,
    /// `'linear'` (3-D input).
    Linear,
    /// `'bilinear'` (4-D input).
    Bilinear,
    /// `'bicubic'` (4-D input).
    Bicubic,
    /// `'trilinear'` (5-D input).
    Trilinear,
    /// `'area'`: adaptive average pooling.
    Area,
}

impl InterpolateMode {
    /// PyTorch's string for the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            InterpolateMode::Nearest => "nearest",
            InterpolateMode::NearestExact => "nearest-exact",
            InterpolateMode::Linear => "linear",
            InterpolateMode::Bilinear => "bilinear",
            InterpolateMode::Bicubic => "bicubic",
            InterpolateMode::Trilinear => "trilinear",
            InterpolateMode::Area => "area",
        }
    }
}

/// `F.interpolate(input, size=None, scale_factor=None, mode='nearest', align_corners=None)`:
/// give `.size(..)` or `.scale_factor(..)` (one value for every spatial dimension, or one for
/// all).
#[inline]
pub fn interpolate(input: &Tensor) -> Interpolate<'_> {
    Interpolate { input, size: None, scale_factor: None, mode: InterpolateMode::Nearest, align_corners: None }
}

/// The options of [`interpolate`]; `.call()` runs it.
#[must_use = "a builder does nothing until `.call()`"]
pub struct Interpolate<'a> {
    input: &'a Tensor,
    size: Option<IntList<'a>>,
    scale_factor: Option<Vec<f64>>,
    mode: InterpolateMode,
    align_corners: Option<bool>,
}

impl<'a> Interpolate<'a> {
    /// Sets `size`, the output's spatial size.
    pub fn size(mut self, size: impl Into<IntList<'a>>) -> Self {
        self.size = Some(size.into());
        self
    }
    /// Sets `scale_factor`, one factor for every spatial dimension.
    pub fn scale_factor(mut self, f: f64) -> Self {
        self.scale_factor = Some(vec![f]);
        self
    }
    /// Sets `scale_factor`, one factor per spatial dimension.
    pub fn scale_factors(mut self, f: &[f64]) -> Self {
        self.scale_factor = Some(f.to_vec());
        self
    }
    /// Sets `mode` (default `InterpolateMode::Nearest`).
    pub fn mode(mut self, mode: InterpolateMode) -> Self {
        self.mode = mode;
        self
    }
    /// Sets `align_corners` (the interpolating modes only; default false).
    pub fn align_corners(mut self, align: bool) -> Self {
        self.align_corners = Some(align);
        self
    }
    /// Runs the function.
    pub fn call(self) -> Result<Tensor> {
        let size = self.size.as_ref().map(|s| s.expand(None));
        crate::layers::interpolate(
            self.input,
            size.as_deref(),
            self.scale_factor.as_deref(),
            self.mode.as_str(),
            self.align_corners,
        )
    }
}
