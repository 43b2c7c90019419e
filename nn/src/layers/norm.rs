//! Normalisation layers: BatchNorm1d/2d, LayerNorm, GroupNorm, InstanceNorm2d.

use aten::{ops, Tensor};
use c10::{Result, ScalarType};

use crate::layers::invalid;
use crate::layers::linear::empty;
use crate::module::{Buffer, Forward, Hooks, Parameter};
use crate::Module;

fn ones(shape: &[i64]) -> Result<Tensor> {
    ops::ones(shape, None, None, None, None)
}

/// `nn.BatchNorm1d` / `BatchNorm2d` (`N` is 1 or 2; the input is `(N, C)` / `(N, C, L)` or
/// `(N, C, H, W)`).
#[derive(Module, Clone)]
pub struct BatchNormNd<const N: usize> {
    /// `gamma`, ones (if `affine`).
    pub weight: Option<Parameter>,
    /// `beta`, zeros (if `affine`).
    pub bias: Option<Parameter>,
    /// Running mean, zeros (if `track_running_stats`).
    pub running_mean: Option<Buffer>,
    /// Running (unbiased) variance, ones.
    pub running_var: Option<Buffer>,
    /// Number of training batches seen (int64).
    pub num_batches_tracked: Option<Buffer>,
    /// `num_features`.
    pub num_features: i64,
    /// `eps` (default 1e-5).
    pub eps: f64,
    /// `momentum` (default 0.1; `None` = cumulative moving average).
    pub momentum: Option<f64>,
    training: bool,
    hooks: Hooks,
}

/// `nn.BatchNorm1d`.
pub type BatchNorm1d = BatchNormNd<1>;
/// `nn.BatchNorm2d`.
pub type BatchNorm2d = BatchNormNd<2>;

impl<const N: usize> BatchNormNd<N> {
    /// `BatchNormNd(num_features)`: eps 1e-5, momentum 0.1, affine, tracking running stats.
    pub fn new(num_features: i64) -> Result<Self> {
        Self::with_options(num_features, 1e-5, Some(0.1), true, true)
    }

    /// `BatchNormNd(num_features, eps, momentum, affine, track_running_stats)`.
    pub fn with_options(
        num_features: i64,
        eps: f64,
        momentum: Option<f64>,
        affine: bool,
        track_running_stats: bool,
    ) -> Result<Self> {
        let (weight, bias) = if affine {
            (Some(Parameter::new(ones(&[num_features])?)?), Some(Parameter::new(empty(&[num_features])?)?))
        } else {
            (None, None)
        };
        let (rm, rv, nbt) = if track_running_stats {
            (
                Some(Buffer::new(empty(&[num_features])?)),
                Some(Buffer::new(ones(&[num_features])?)),
                Some(Buffer::new(ops::zeros(&[], Some(ScalarType::I64), None, None, None)?)),
            )
        } else {
            (None, None, None)
        };
        Ok(BatchNormNd {
            weight,
            bias,
            running_mean: rm,
            running_var: rv,
            num_batches_tracked: nbt,
            num_features,
            eps,
            momentum,
            training: true,
            hooks: Hooks::default(),
        })
    }
}

impl<const N: usize> Forward for BatchNormNd<N> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let ok = if N == 1 { x.dim() == 2 || x.dim() == 3 } else { x.dim() == N + 2 };
        if !ok {
            let want = if N == 1 { "2D or 3D".to_string() } else { format!("{}D", N + 2) };
            return Err(invalid(&format!("BatchNorm{N}d"), format!("expected {want} input (got {}D input)", x.dim())));
        }
        let mut factor = self.momentum.unwrap_or(0.0);
        if self.training {
            if let Some(n) = &self.num_batches_tracked {
                let _g = autograd::no_grad();
                n.add_(1).call()?;
                if self.momentum.is_none() {
                    factor = 1.0 / n.item::<i64>()? as f64;
                }
            }
        }
        let use_batch_stats = self.training || self.running_mean.is_none();
        // In training mode the running statistics are updated in place by the kernel.
        let (rm, rv) = if !self.training || self.running_mean.is_some() {
            (self.running_mean.as_deref(), self.running_var.as_deref())
        } else {
            (None, None)
        };
        ops::batch_norm(
            x,
            self.weight.as_deref(),
            self.bias.as_deref(),
            rm,
            rv,
            use_batch_stats,
            factor,
            self.eps,
            false,
        )
    }
}

/// `nn.LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=True, bias=True)`.
#[derive(Module, Clone)]
pub struct LayerNorm {
    /// Ones of `normalized_shape`.
    pub weight: Option<Parameter>,
    /// Zeros of `normalized_shape`.
    pub bias: Option<Parameter>,
    /// `normalized_shape`.
    pub normalized_shape: Vec<i64>,
    /// `eps`.
    pub eps: f64,
    hooks: Hooks,
}

impl LayerNorm {
    /// `LayerNorm(normalized_shape)`.
    pub fn new(normalized_shape: &[i64]) -> Result<LayerNorm> {
        LayerNorm::with_options(normalized_shape, 1e-5, true, true)
    }
    /// `LayerNorm(normalized_shape, eps, elementwise_affine, bias)`.
    pub fn with_options(normalized_shape: &[i64], eps: f64, elementwise_affine: bool, bias: bool) -> Result<LayerNorm> {
        let (w, b) = if elementwise_affine {
            (
                Some(Parameter::new(ones(normalized_shape)?)?),
                if bias { Some(Parameter::new(empty(normalized_shape)?)?) } else { None },
            )
        } else {
            (None, None)
        };
        Ok(LayerNorm { weight: w, bias: b, normalized_shape: normalized_shape.to_vec(), eps, hooks: Hooks::default() })
    }
}

impl Forward for LayerNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::layer_norm(x, &self.normalized_shape, self.weight.as_deref(), self.bias.as_deref(), self.eps, false)
    }
}

/// `nn.GroupNorm(num_groups, num_channels, eps=1e-5, affine=True)`.
#[derive(Module, Clone)]
pub struct GroupNorm {
    /// Ones of `(num_channels,)`.
    pub weight: Option<Parameter>,
    /// Zeros of `(num_channels,)`.
    pub bias: Option<Parameter>,
    /// `num_groups`.
    pub num_groups: i64,
    /// `num_channels`.
    pub num_channels: i64,
    /// `eps`.
    pub eps: f64,
    hooks: Hooks,
}

impl GroupNorm {
    /// `GroupNorm(num_groups, num_channels)`.
    pub fn new(num_groups: i64, num_channels: i64) -> Result<GroupNorm> {
        GroupNorm::with_options(num_groups, num_channels, 1e-5, true)
    }
    /// `GroupNorm(num_groups, num_channels, eps, affine)`.
    pub fn with_options(num_groups: i64, num_channels: i64, eps: f64, affine: bool) -> Result<GroupNorm> {
        if num_groups <= 0 || num_channels % num_groups != 0 {
            return Err(invalid("GroupNorm", "num_channels must be divisible by num_groups"));
        }
        let (w, b) = if affine {
            (Some(Parameter::new(ones(&[num_channels])?)?), Some(Parameter::new(empty(&[num_channels])?)?))
        } else {
            (None, None)
        };
        Ok(GroupNorm { weight: w, bias: b, num_groups, num_channels, eps, hooks: Hooks::default() })
    }
}

impl Forward for GroupNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::group_norm(x, self.num_groups, self.weight.as_deref(), self.bias.as_deref(), self.eps, false)
    }
}

/// `nn.InstanceNorm2d(num_features, eps=1e-5, momentum=0.1, affine=False,
/// track_running_stats=False)`.
#[derive(Module, Clone)]
pub struct InstanceNorm2d {
    /// Ones (if `affine`).
    pub weight: Option<Parameter>,
    /// Zeros (if `affine`).
    pub bias: Option<Parameter>,
    /// Running mean (if `track_running_stats`).
    pub running_mean: Option<Buffer>,
    /// Running variance.
    pub running_var: Option<Buffer>,
    /// Batches seen.
    pub num_batches_tracked: Option<Buffer>,
    /// `num_features`.
    pub num_features: i64,
    /// `eps`.
    pub eps: f64,
    /// `momentum`.
    pub momentum: f64,
    training: bool,
    hooks: Hooks,
}

impl InstanceNorm2d {
    /// `InstanceNorm2d(num_features)`.
    pub fn new(num_features: i64) -> Result<InstanceNorm2d> {
        InstanceNorm2d::with_options(num_features, 1e-5, 0.1, false, false)
    }
    /// `InstanceNorm2d(num_features, eps, momentum, affine, track_running_stats)`.
    pub fn with_options(
        num_features: i64,
        eps: f64,
        momentum: f64,
        affine: bool,
        track_running_stats: bool,
    ) -> Result<InstanceNorm2d> {
        let bn = BatchNorm2d::with_options(num_features, eps, Some(momentum), affine, track_running_stats)?;
        Ok(InstanceNorm2d {
            weight: bn.weight,
            bias: bn.bias,
            running_mean: bn.running_mean,
            running_var: bn.running_var,
            num_batches_tracked: bn.num_batches_tracked,
            num_features,
            eps,
            momentum,
            training: true,
            hooks: Hooks::default(),
        })
    }
}

impl Forward for InstanceNorm2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if x.dim() != 3 && x.dim() != 4 {
            return Err(invalid("InstanceNorm2d", format!("expected 3D or 4D input (got {}D input)", x.dim())));
        }
        let unbatched = x.dim() == 3;
        let input = if unbatched { x.unsqueeze(0)? } else { x.clone() };
        let use_input_stats = self.training || self.running_mean.is_none();
        let y = ops::instance_norm(
            &input,
            self.weight.as_deref(),
            self.bias.as_deref(),
            self.running_mean.as_deref(),
            self.running_var.as_deref(),
            use_input_stats,
            self.momentum,
            self.eps,
            false,
        )?;
        if unbatched {
            y.squeeze_dim(0)
        } else {
            Ok(y)
        }
    }
}
