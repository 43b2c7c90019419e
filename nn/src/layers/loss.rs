//! Losses as modules. Each takes `(input, target)` through an inherent `forward`; the
//! reductions are PyTorch's (`mean` by default).

use aten::{ops, Tensor};
use c10::Result;

use crate::module::Buffer;
use crate::Module;

pub use aten::front::Reduction;

// Tensor options (`weight`, `pos_weight`) are `Option<Buffer>` fields: PyTorch registers them
// as buffers, so they appear in the state_dict.
macro_rules! loss_module {
    ($($(#[$doc:meta])* $name:ident { $($field:ident : $ty:ty = $default:expr),* } => |$s:ident, $x:ident, $y:ident| $body:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Module, Clone)]
        pub struct $name {
            /// The reduction.
            #[module(skip)]
            pub reduction: Reduction,
            $(
                #[doc = concat!("`", stringify!($field), "`.")]
                pub $field: $ty,
            )*
        }
        impl $name {
            #[doc = concat!("`nn.", stringify!($name), "()` with PyTorch's defaults.")]
            pub fn new() -> $name {
                $name { reduction: Reduction::Mean, $($field: $default,)* }
            }
            /// Sets the reduction.
            pub fn reduction(mut self, r: Reduction) -> $name {
                self.reduction = r;
                self
            }
            /// The loss of `input` against `target`.
            pub fn forward(&self, $x: &Tensor, $y: &Tensor) -> Result<Tensor> {
                let $s = self;
                $body
            }
        }
        impl Default for $name {
            fn default() -> $name {
                $name::new()
            }
        }
    )*};
}

loss_module! {
    /// `nn.MSELoss()`.
    MSELoss {} => |s, x, y| ops::mse_loss(x, y, s.reduction.code());
    /// `nn.L1Loss()`.
    L1Loss {} => |s, x, y| ops::l1_loss(x, y, s.reduction.code());
    /// `nn.SmoothL1Loss(beta=1.0)`.
    SmoothL1Loss { beta: f64 = 1.0 } => |s, x, y| ops::smooth_l1_loss(x, y, s.reduction.code(), s.beta);
    /// `nn.HuberLoss(delta=1.0)`.
    HuberLoss { delta: f64 = 1.0 } => |s, x, y| ops::huber_loss(x, y, s.reduction.code(), s.delta);
    /// `nn.CrossEntropyLoss(weight=None, ignore_index=-100, label_smoothing=0.0)`: class
    /// indices or probabilities as the target.
    CrossEntropyLoss { weight: Option<Buffer> = None, ignore_index: i64 = -100, label_smoothing: f64 = 0.0 } =>
        |s, x, y| ops::cross_entropy_loss(x, y, s.weight.as_ref().map(Buffer::tensor), s.reduction.code(), s.ignore_index, s.label_smoothing);
    /// `nn.NLLLoss(weight=None, ignore_index=-100)`.
    NLLLoss { weight: Option<Buffer> = None, ignore_index: i64 = -100 } =>
        |s, x, y| ops::nll_loss_nd(x, y, s.weight.as_ref().map(Buffer::tensor), s.reduction.code(), s.ignore_index);
    /// `nn.BCELoss(weight=None)`.
    BCELoss { weight: Option<Buffer> = None } => |s, x, y| ops::binary_cross_entropy(x, y, s.weight.as_ref().map(Buffer::tensor), s.reduction.code());
    /// `nn.BCEWithLogitsLoss(weight=None, pos_weight=None)`.
    BCEWithLogitsLoss { weight: Option<Buffer> = None, pos_weight: Option<Buffer> = None } =>
        |s, x, y| ops::binary_cross_entropy_with_logits(x, y, s.weight.as_ref().map(Buffer::tensor), s.pos_weight.as_ref().map(Buffer::tensor), s.reduction.code());
    /// `nn.KLDivLoss(log_target=False)` (PyTorch's default reduction `mean`; use `Sum` and
    /// divide by the batch for `batchmean`).
    KLDivLoss { log_target: bool = false } => |s, x, y| ops::kl_div(x, y, s.reduction.code(), s.log_target);
}

/// `nn.MarginRankingLoss(margin=0.0)`: `max(0, -y * (x1 - x2) + margin)`.
#[derive(Module, Clone, Default)]
pub struct MarginRankingLoss {
    /// `margin`.
    pub margin: f64,
    /// The reduction.
    #[module(skip)]
    pub reduction: Reduction,
}

impl MarginRankingLoss {
    /// `MarginRankingLoss(margin)`.
    pub fn new(margin: f64) -> MarginRankingLoss {
        MarginRankingLoss { margin, reduction: Reduction::Mean }
    }
    /// The loss.
    pub fn forward(&self, x1: &Tensor, x2: &Tensor, y: &Tensor) -> Result<Tensor> {
        ops::margin_ranking_loss(x1, x2, y, self.margin, self.reduction.code())
    }
}

/// `nn.CosineEmbeddingLoss(margin=0.0)`.
#[derive(Module, Clone, Default)]
pub struct CosineEmbeddingLoss {
    /// `margin`.
    pub margin: f64,
    /// The reduction.
    #[module(skip)]
    pub reduction: Reduction,
}

impl CosineEmbeddingLoss {
    /// `CosineEmbeddingLoss(margin)`.
    pub fn new(margin: f64) -> CosineEmbeddingLoss {
        CosineEmbeddingLoss { margin, reduction: Reduction::Mean }
    }
    /// The loss.
    pub fn forward(&self, x1: &Tensor, x2: &Tensor, y: &Tensor) -> Result<Tensor> {
        ops::cosine_embedding_loss(x1, x2, y, self.margin, self.reduction.code())
    }
}

/// `nn.CTCLoss(blank=0, reduction="mean", zero_infinity=False)`: connectionist temporal
/// classification of `log_probs` `(T, N, C)` (or unbatched `(T, C)`, log-softmax outputs)
/// against `targets` (`(N, S)` padded or 1-D concatenated), with each element's input and target
/// lengths; `Mean` divides each loss by its target length before averaging.
#[derive(Module, Clone, Default)]
pub struct CTCLoss {
    /// `blank`: the blank label.
    pub blank: i64,
    /// `zero_infinity`: impossible alignments give a loss and gradient of zero.
    pub zero_infinity: bool,
    /// The reduction.
    #[module(skip)]
    pub reduction: Reduction,
}

impl CTCLoss {
    /// `CTCLoss(blank=blank)`.
    pub fn new(blank: i64) -> CTCLoss {
        CTCLoss { blank, zero_infinity: false, reduction: Reduction::Mean }
    }
    /// The loss.
    pub fn forward(
        &self,
        log_probs: &Tensor,
        targets: &Tensor,
        input_lengths: &[i64],
        target_lengths: &[i64],
    ) -> Result<Tensor> {
        ops::ctc_loss(
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            self.blank,
            self.reduction.code(),
            self.zero_infinity,
        )
    }
}

/// `nn.TripletMarginLoss(margin=1.0, p=2.0, eps=1e-6, swap=False)`.
#[derive(Module, Clone)]
pub struct TripletMarginLoss {
    /// `margin`.
    pub margin: f64,
    /// `p`.
    pub p: f64,
    /// `eps`.
    pub eps: f64,
    /// `swap`.
    pub swap: bool,
    /// The reduction.
    #[module(skip)]
    pub reduction: Reduction,
}

impl Default for TripletMarginLoss {
    fn default() -> TripletMarginLoss {
        TripletMarginLoss { margin: 1.0, p: 2.0, eps: 1e-6, swap: false, reduction: Reduction::Mean }
    }
}

impl TripletMarginLoss {
    /// `TripletMarginLoss()`.
    pub fn new() -> TripletMarginLoss {
        TripletMarginLoss::default()
    }
    /// The loss.
    pub fn forward(&self, anchor: &Tensor, positive: &Tensor, negative: &Tensor) -> Result<Tensor> {
        ops::triplet_margin_loss(
            anchor,
            positive,
            negative,
            self.margin,
            self.p,
            self.eps,
            self.swap,
            self.reduction.code(),
        )
    }
}
