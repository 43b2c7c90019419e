//! Shape layers: Flatten, Unflatten, Upsample, PixelShuffle, PixelUnshuffle.

use aten::{ops, Tensor};
use c10::Result;

use crate::layers::invalid;
use crate::module::{Forward, Hooks};
use crate::Module;

/// `nn.Flatten(start_dim=1, end_dim=-1)`.
#[derive(Module, Clone)]
pub struct Flatten {
    /// `start_dim`.
    pub start_dim: i64,
    /// `end_dim`.
    pub end_dim: i64,
    hooks: Hooks,
}

impl Flatten {
    /// `Flatten()`: keeps the batch dimension.
    pub fn new() -> Flatten {
        Flatten::with(1, -1)
    }
    /// `Flatten(start_dim, end_dim)`.
    pub fn with(start_dim: i64, end_dim: i64) -> Flatten {
        Flatten { start_dim, end_dim, hooks: Hooks::default() }
    }
}

impl Default for Flatten {
    fn default() -> Flatten {
        Flatten::new()
    }
}

impl Forward for Flatten {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::flatten(x, self.start_dim, self.end_dim)
    }
}

/// `nn.Unflatten(dim, unflattened_size)`.
#[derive(Module, Clone)]
pub struct Unflatten {
    /// `dim`.
    pub dim: i64,
    /// `unflattened_size`.
    pub sizes: Vec<i64>,
    hooks: Hooks,
}

impl Unflatten {
    /// `Unflatten(dim, sizes)`.
    pub fn new(dim: i64, sizes: &[i64]) -> Unflatten {
        Unflatten { dim, sizes: sizes.to_vec(), hooks: Hooks::default() }
    }
}

impl Forward for Unflatten {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::unflatten(x, self.dim, &self.sizes)
    }
}

/// `nn.Upsample(size=None, scale_factor=None, mode='nearest', align_corners=None)`; modes
/// `nearest` and `bilinear` (4-D input for bilinear).
#[derive(Module, Clone)]
pub struct Upsample {
    /// Target spatial size.
    pub size: Option<Vec<i64>>,
    /// Scale per spatial dimension (one value applies to all).
    pub scale_factor: Option<Vec<f64>>,
    /// `nearest` or `bilinear`.
    pub mode: String,
    /// `align_corners` (bilinear only).
    pub align_corners: bool,
    hooks: Hooks,
}

impl Upsample {
    /// `Upsample(size=..., scale_factor=..., mode=..., align_corners=...)`: exactly one of
    /// `size` and `scale_factor`.
    pub fn new(
        size: Option<&[i64]>,
        scale_factor: Option<&[f64]>,
        mode: &str,
        align_corners: bool,
    ) -> Result<Upsample> {
        if size.is_some() == scale_factor.is_some() {
            return Err(invalid("Upsample", "only one of size or scale_factor should be defined"));
        }
        if mode != "nearest" && mode != "bilinear" {
            return Err(invalid(
                "Upsample",
                format!("unsupported upsampling mode '{mode}' (nearest and bilinear are implemented)"),
            ));
        }
        if align_corners && mode == "nearest" {
            return Err(invalid(
                "Upsample",
                "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear",
            ));
        }
        Ok(Upsample {
            size: size.map(|s| s.to_vec()),
            scale_factor: scale_factor.map(|s| s.to_vec()),
            mode: mode.into(),
            align_corners,
            hooks: Hooks::default(),
        })
    }
}

impl Forward for Upsample {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let spatial = x.dim().saturating_sub(2);
        let size = match &self.size {
            Some(s) if s.len() == 1 => Some(vec![s[0]; spatial]),
            other => other.clone(),
        };
        let scale = match &self.scale_factor {
            Some(s) if s.len() == 1 => Some(vec![s[0]; spatial]),
            other => other.clone(),
        };
        match (self.mode.as_str(), spatial) {
            ("nearest", 1) => ops::upsample_nearest1d(x, size.as_deref(), scale.as_deref()),
            ("nearest", 2) => ops::upsample_nearest2d(x, size.as_deref(), scale.as_deref()),
            ("nearest", 3) => ops::upsample_nearest3d(x, size.as_deref(), scale.as_deref()),
            ("bilinear", 2) => ops::upsample_bilinear2d(x, size.as_deref(), self.align_corners, scale.as_deref()),
            (m, _) => Err(invalid("Upsample", format!("mode '{m}' does not support {}-D input", x.dim()))),
        }
    }
}

/// `nn.PixelShuffle(upscale_factor)`.
#[derive(Module, Clone)]
pub struct PixelShuffle {
    /// `upscale_factor`.
    pub upscale_factor: i64,
    hooks: Hooks,
}

impl PixelShuffle {
    /// `PixelShuffle(r)`.
    pub fn new(upscale_factor: i64) -> PixelShuffle {
        PixelShuffle { upscale_factor, hooks: Hooks::default() }
    }
}

impl Forward for PixelShuffle {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::pixel_shuffle(x, self.upscale_factor)
    }
}

/// `nn.PixelUnshuffle(downscale_factor)`.
#[derive(Module, Clone)]
pub struct PixelUnshuffle {
    /// `downscale_factor`.
    pub downscale_factor: i64,
    hooks: Hooks,
}

impl PixelUnshuffle {
    /// `PixelUnshuffle(r)`.
    pub fn new(downscale_factor: i64) -> PixelUnshuffle {
        PixelUnshuffle { downscale_factor, hooks: Hooks::default() }
    }
}

impl Forward for PixelUnshuffle {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::pixel_unshuffle(x, self.downscale_factor)
    }
}
