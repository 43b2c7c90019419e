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

/// `nn.Upsample(size=None, scale_factor=None, mode='nearest', align_corners=None)`: every mode of
/// [`interpolate`](crate::interpolate) (`nearest`, `linear`, `bilinear`, `bicubic`, `trilinear`,
/// `area`, `nearest-exact`).
#[derive(Module, Clone)]
pub struct Upsample {
    /// Target spatial size (one value applies to every spatial dimension).
    pub size: Option<Vec<i64>>,
    /// Scale per spatial dimension (one value applies to all).
    pub scale_factor: Option<Vec<f64>>,
    /// The interpolation mode.
    pub mode: String,
    /// `align_corners` (the interpolating modes only).
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
            return Err(invalid(
                "Upsample",
                if size.is_some() {
                    "only one of size or scale_factor should be defined"
                } else {
                    "either size or scale_factor should be defined"
                },
            ));
        }
        crate::layers::interpolate::check_mode("Upsample", mode, align_corners, || {
            format!("unsupported upsampling mode '{mode}' (expected one of {})", crate::layers::interpolate::MODES)
        })?;
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
        crate::interpolate(
            x,
            self.size.as_deref(),
            self.scale_factor.as_deref(),
            &self.mode,
            self.align_corners.then_some(true),
        )
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
