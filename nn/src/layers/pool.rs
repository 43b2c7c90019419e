//! Pooling: MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d, AdaptiveMaxPool2d.

use aten::{ops, Tensor};
use c10::Result;

use crate::layers::expand_arg;
use crate::module::{Forward, Hooks};
use crate::Module;

/// `nn.MaxPool1d` / `MaxPool2d` (`N` spatial dimensions).
#[derive(Module, Clone)]
pub struct MaxPoolNd<const N: usize> {
    /// `kernel_size`.
    pub kernel_size: Vec<i64>,
    /// `stride` (default: `kernel_size`).
    pub stride: Vec<i64>,
    /// `padding` (default 0).
    pub padding: Vec<i64>,
    /// `dilation` (default 1).
    pub dilation: Vec<i64>,
    /// `ceil_mode` (default false).
    pub ceil_mode: bool,
    hooks: Hooks,
}

/// `nn.MaxPool1d`.
pub type MaxPool1d = MaxPoolNd<1>;
/// `nn.MaxPool2d`.
pub type MaxPool2d = MaxPoolNd<2>;

impl<const N: usize> MaxPoolNd<N> {
    /// `MaxPoolNd(kernel_size)`: stride = kernel_size, no padding.
    pub fn new(kernel_size: i64) -> Result<Self> {
        Self::with_options(&[kernel_size], None, &[0], &[1], false)
    }
    /// `MaxPoolNd(kernel_size, stride, padding, dilation, ceil_mode)`.
    pub fn with_options(
        kernel_size: &[i64],
        stride: Option<&[i64]>,
        padding: &[i64],
        dilation: &[i64],
        ceil_mode: bool,
    ) -> Result<Self> {
        let op = format!("MaxPool{N}d");
        let kernel_size = expand_arg(&op, "kernel_size", kernel_size, N)?;
        let stride = match stride {
            Some(s) => expand_arg(&op, "stride", s, N)?,
            None => kernel_size.clone(),
        };
        Ok(MaxPoolNd {
            padding: expand_arg(&op, "padding", padding, N)?,
            dilation: expand_arg(&op, "dilation", dilation, N)?,
            kernel_size,
            stride,
            ceil_mode,
            hooks: Hooks::default(),
        })
    }

    /// The output and the flat indices of the maxima within each input plane: PyTorch's
    /// `MaxPoolNd(..., return_indices=True)` (indices are what `max_unpool` takes).
    pub fn forward_with_indices(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        let (k, s, p, d) = (&self.kernel_size, &self.stride, &self.padding, &self.dilation);
        match N {
            1 => ops::max_pool1d_with_indices(x, k, s, p, d, self.ceil_mode),
            2 => ops::max_pool2d_with_indices(x, k, s, p, d, self.ceil_mode),
            _ => ops::max_pool3d_with_indices(x, k, s, p, d, self.ceil_mode),
        }
    }
}

impl<const N: usize> Forward for MaxPoolNd<N> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match N {
            1 => ops::max_pool1d(x, &self.kernel_size, &self.stride, &self.padding, &self.dilation, self.ceil_mode),
            2 => ops::max_pool2d(x, &self.kernel_size, &self.stride, &self.padding, &self.dilation, self.ceil_mode),
            _ => ops::max_pool3d(x, &self.kernel_size, &self.stride, &self.padding, &self.dilation, self.ceil_mode),
        }
    }
}

/// `nn.AvgPool1d` / `AvgPool2d`.
#[derive(Module, Clone)]
pub struct AvgPoolNd<const N: usize> {
    /// `kernel_size`.
    pub kernel_size: Vec<i64>,
    /// `stride` (default: `kernel_size`).
    pub stride: Vec<i64>,
    /// `padding`.
    pub padding: Vec<i64>,
    /// `ceil_mode`.
    pub ceil_mode: bool,
    /// `count_include_pad` (default true).
    pub count_include_pad: bool,
    /// `divisor_override` (2d only).
    pub divisor_override: Option<i64>,
    hooks: Hooks,
}

/// `nn.AvgPool1d`.
pub type AvgPool1d = AvgPoolNd<1>;
/// `nn.AvgPool2d`.
pub type AvgPool2d = AvgPoolNd<2>;

impl<const N: usize> AvgPoolNd<N> {
    /// `AvgPoolNd(kernel_size)`.
    pub fn new(kernel_size: i64) -> Result<Self> {
        Self::with_options(&[kernel_size], None, &[0], false, true, None)
    }
    /// `AvgPoolNd(kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)`.
    pub fn with_options(
        kernel_size: &[i64],
        stride: Option<&[i64]>,
        padding: &[i64],
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Option<i64>,
    ) -> Result<Self> {
        let op = format!("AvgPool{N}d");
        let kernel_size = expand_arg(&op, "kernel_size", kernel_size, N)?;
        let stride = match stride {
            Some(s) => expand_arg(&op, "stride", s, N)?,
            None => kernel_size.clone(),
        };
        Ok(AvgPoolNd {
            padding: expand_arg(&op, "padding", padding, N)?,
            kernel_size,
            stride,
            ceil_mode,
            count_include_pad,
            divisor_override,
            hooks: Hooks::default(),
        })
    }
}

impl<const N: usize> Forward for AvgPoolNd<N> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match N {
            1 => ops::avg_pool1d(
                x,
                &self.kernel_size,
                &self.stride,
                &self.padding,
                self.ceil_mode,
                self.count_include_pad,
            ),
            2 => ops::avg_pool2d(
                x,
                &self.kernel_size,
                &self.stride,
                &self.padding,
                self.ceil_mode,
                self.count_include_pad,
                self.divisor_override,
            ),
            _ => ops::avg_pool3d(
                x,
                &self.kernel_size,
                &self.stride,
                &self.padding,
                self.ceil_mode,
                self.count_include_pad,
                self.divisor_override,
            ),
        }
    }
}

/// `nn.AdaptiveAvgPool1d` / `AdaptiveAvgPool2d`.
#[derive(Module, Clone)]
pub struct AdaptiveAvgPoolNd<const N: usize> {
    /// `output_size`.
    pub output_size: Vec<i64>,
    hooks: Hooks,
}

/// `nn.AdaptiveAvgPool1d`.
pub type AdaptiveAvgPool1d = AdaptiveAvgPoolNd<1>;
/// `nn.AdaptiveAvgPool2d`.
pub type AdaptiveAvgPool2d = AdaptiveAvgPoolNd<2>;

impl<const N: usize> AdaptiveAvgPoolNd<N> {
    /// `AdaptiveAvgPoolNd(output_size)`.
    pub fn new(output_size: &[i64]) -> Result<Self> {
        Ok(AdaptiveAvgPoolNd {
            output_size: expand_arg("AdaptiveAvgPool", "output_size", output_size, N)?,
            hooks: Hooks::default(),
        })
    }
}

impl<const N: usize> Forward for AdaptiveAvgPoolNd<N> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match N {
            1 => ops::adaptive_avg_pool1d(x, &self.output_size),
            2 => ops::adaptive_avg_pool2d(x, &self.output_size),
            _ => ops::adaptive_avg_pool3d(x, &self.output_size),
        }
    }
}

/// `nn.AdaptiveMaxPool2d(output_size, return_indices=False)`.
#[derive(Module, Clone)]
pub struct AdaptiveMaxPool2d {
    /// `output_size`.
    pub output_size: Vec<i64>,
    hooks: Hooks,
}

impl AdaptiveMaxPool2d {
    /// `AdaptiveMaxPool2d(output_size)`.
    pub fn new(output_size: &[i64]) -> Result<Self> {
        Ok(AdaptiveMaxPool2d {
            output_size: expand_arg("AdaptiveMaxPool2d", "output_size", output_size, 2)?,
            hooks: Hooks::default(),
        })
    }
    /// The output and the indices of the maxima (`return_indices=True`).
    pub fn forward_with_indices(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        ops::adaptive_max_pool2d(x, &self.output_size)
    }
}

impl Forward for AdaptiveMaxPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(ops::adaptive_max_pool2d(x, &self.output_size)?.0)
    }
}
