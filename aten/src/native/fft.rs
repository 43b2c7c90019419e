//! `torch.fft` transforms of real input that return real output: `irfft`, `irfft2`, `irfftn`
//! (complex-to-real inverse transforms of a Hermitian half spectrum) and `hfft`, `hfft2`,
//! `hfftn` (their forward duals). Here for float32/float64 tensors, which are spectra with zero
//! imaginary part; a complex input goes to `spectral.rs`'s `_fft_c2r`, as do the transforms
//! that return complex tensors.
//!
//! They are written as DFTs along each dimension (real and imaginary parts carried as two real
//! tensors through `matmul`), so autograd differentiates them and the gradient is PyTorch's:
//! the map from the real input to the output is linear, and PyTorch's complex backward restricted
//! to a real input is its transpose. Sizes follow PyTorch's `canonicalize_fft_shape_and_dim_args`:
//! each transformed dimension is cut or zero-padded to its signal size (the last one to
//! `n / 2 + 1`), and the last output size defaults to `2 * (m - 1)`.

use std::f64::consts::PI;

use c10::{Error, Result, Scalar, ScalarType};

use crate::{ops, Tensor};

/// The scale of an inverse transform of `n` points under `norm`.
fn inverse_scale(op: &str, norm: Option<&str>, n: i64) -> Result<f64> {
    match norm {
        None | Some("backward") => Ok(1.0 / n as f64),
        Some("forward") => Ok(1.0),
        Some("ortho") => Ok(1.0 / (n as f64).sqrt()),
        Some(other) => Err(Error::invalid(op, format!("Invalid normalization mode: \"{other}\""))),
    }
}

/// `hfft`'s normalization as that of the `irfft` it is computed with.
fn dual(op: &str, norm: Option<&str>) -> Result<Option<&'static str>> {
    match norm {
        None | Some("backward") => Ok(Some("forward")),
        Some("forward") => Ok(Some("backward")),
        Some("ortho") => Ok(Some("ortho")),
        Some(other) => Err(Error::invalid(op, format!("Invalid normalization mode: \"{other}\""))),
    }
}

/// `t` cut or zero-padded at the end of `dim` to `len`.
fn resize_dim(t: &Tensor, dim: i64, len: i64) -> Result<Tensor> {
    let cur = t.sizes()[dim as usize];
    if cur == len {
        Ok(t.clone())
    } else if cur > len {
        ops::narrow(t, dim, 0, len)
    } else {
        let mut pad = vec![0i64; 2 * (t.dim() - dim as usize)];
        let n = pad.len();
        pad[n - 1] = len - cur;
        ops::constant_pad_nd(t, &pad, Scalar::Int(0))
    }
}

/// A `rows x cols` matrix of `f(k, j)` in `dtype`.
fn matrix(rows: i64, cols: i64, dtype: ScalarType, f: impl Fn(i64, i64) -> f64) -> Result<Tensor> {
    let n = (rows.max(0) as usize).saturating_mul(cols.max(0) as usize);
    let mut v = c10::size::try_vec(n)?;
    for k in 0..rows {
        for j in 0..cols {
            v.push(f(k, j));
        }
    }
    crate::native::copy::to_dtype(&Tensor::from_vec(v, &[rows, cols])?, dtype)
}

/// `m` (`[rows, cols]`) applied along `dim` of `t`: `out[.., k, ..] = sum_j m[k, j] t[.., j, ..]`.
/// The matrix is built on the host and goes to `t`'s device.
fn along(t: &Tensor, dim: i64, m: &Tensor) -> Result<Tensor> {
    let moved = ops::movedim(t, &[dim], &[-1])?;
    let r = ops::matmul(&moved, &ops::transpose(&m.to_device(t.device())?, 0, 1)?)?;
    ops::movedim(&r, &[-1], &[dim])
}

/// The angle `2 pi k j / n`, reduced exactly first (`k * j` mod `n`).
fn angle(k: i64, j: i64, n: i64) -> f64 {
    let r = ((k as i128 * j as i128) % n as i128) as f64;
    2.0 * PI * r / n as f64
}

fn irfftn_impl(op: &str, x: &Tensor, s: Option<&[i64]>, dim: Option<&[i64]>, norm: Option<&str>) -> Result<Tensor> {
    // See Note [Composites standing in for native kernels] (the DFT matrices are products).
    let _native = crate::autocast::below_autocast();
    let dtype = x.dtype();
    if dtype.is_complex() {
        return crate::native::spectral::c2r_n(op, x, s, dim, norm, false);
    }
    if !dtype.is_floating_point() {
        // Integers and bool promote to the default float dtype, as in PyTorch.
        let f = ops::to(x, ScalarType::default_float(), false, false, None)?;
        return irfftn_impl(op, &f, s, dim, norm);
    }
    if !matches!(dtype, ScalarType::F32 | ScalarType::F64) {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype });
    }
    let (dims, sizes) = crate::native::spectral::shape_and_dims(op, x, s, dim, true)?;
    if dims.is_empty() {
        return Err(Error::invalid(op, "irfftn must transform at least one axis"));
    }
    let total = sizes
        .iter()
        .try_fold(1i64, |a, &b| a.checked_mul(b))
        .ok_or_else(|| Error::invalid(op, "signal size overflows"))?;
    let scale = inverse_scale(op, norm, total)?;
    let mut re = x.clone();
    let mut im: Option<Tensor> = None;
    let last = dims.len() - 1;
    for (i, (&d, &n)) in dims.iter().zip(&sizes).enumerate() {
        if i == last {
            break;
        }
        // Inverse complex DFT of n points along d: (re + i im) e^{+i angle}.
        re = resize_dim(&re, d, n)?;
        im = im.map(|t| resize_dim(&t, d, n)).transpose()?;
        let c = matrix(n, n, dtype, |k, j| angle(k, j, n).cos())?;
        let sn = matrix(n, n, dtype, |k, j| angle(k, j, n).sin())?;
        let (r2, i2) = match &im {
            None => (along(&re, d, &c)?, along(&re, d, &sn)?),
            Some(im) => (
                ops::sub(&along(&re, d, &c)?, &along(im, d, &sn)?, Scalar::Int(1))?,
                ops::add(&along(&re, d, &sn)?, &along(im, d, &c)?, Scalar::Int(1))?,
            ),
        };
        re = r2;
        im = Some(i2);
    }
    // Complex-to-real along the last dim: the half spectrum j = 0..=n/2, each inner bin
    // counted twice (its conjugate partner), the imaginary parts of the real bins ignored.
    let (d, n) = (dims[last], sizes[last]);
    let half = n / 2 + 1;
    re = resize_dim(&re, d, half)?;
    let weight = |j: i64| if j == 0 || (n % 2 == 0 && j == n / 2) { 1.0 } else { 2.0 };
    let c = matrix(n, half, dtype, |k, j| weight(j) * angle(k, j, n).cos())?;
    let mut y = along(&re, d, &c)?;
    if let Some(im) = im {
        let im = resize_dim(&im, d, half)?;
        let sn = matrix(n, half, dtype, |k, j| weight(j) * angle(k, j, n).sin())?;
        y = ops::sub(&y, &along(&im, d, &sn)?, Scalar::Int(1))?;
    }
    ops::mul_scalar(&y, Scalar::Float(scale))
}

/// `fft_irfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor`
pub fn fft_irfft(x: &Tensor, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
    let s = n.map(|v| vec![v]);
    irfftn_impl("fft_irfft", x, s.as_deref(), Some(&[dim]), norm)
}

/// `fft_irfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2,-1], str? norm=None) -> Tensor`
pub fn fft_irfft2(x: &Tensor, s: Option<&[i64]>, dim: &[i64], norm: Option<&str>) -> Result<Tensor> {
    irfftn_impl("fft_irfft2", x, s, Some(dim), norm)
}

/// `fft_irfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor`
pub fn fft_irfftn(x: &Tensor, s: Option<&[i64]>, dim: Option<&[i64]>, norm: Option<&str>) -> Result<Tensor> {
    irfftn_impl("fft_irfftn", x, s, dim, norm)
}

/// A complex input of the `hfft` family conjugated: `hfft(x) = irfft(conj(x))` with the dual
/// normalization. A real input is its own conjugate.
fn conj_if_complex(x: &Tensor) -> Result<Tensor> {
    if x.dtype().is_complex() {
        ops::conj_physical(x)
    } else {
        Ok(x.clone())
    }
}

/// `fft_hfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor`: for a real
/// (self-conjugate) input, `irfft` with the dual normalization.
pub fn fft_hfft(x: &Tensor, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
    let s = n.map(|v| vec![v]);
    let x = &conj_if_complex(x)?;
    irfftn_impl("fft_hfft", x, s.as_deref(), Some(&[dim]), dual("fft_hfft", norm)?)
}

/// `fft_hfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2,-1], str? norm=None) -> Tensor`
pub fn fft_hfft2(x: &Tensor, s: Option<&[i64]>, dim: &[i64], norm: Option<&str>) -> Result<Tensor> {
    let x = &conj_if_complex(x)?;
    irfftn_impl("fft_hfft2", x, s, Some(dim), dual("fft_hfft2", norm)?)
}

/// `fft_hfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor`
pub fn fft_hfftn(x: &Tensor, s: Option<&[i64]>, dim: Option<&[i64]>, norm: Option<&str>) -> Result<Tensor> {
    let x = &conj_if_complex(x)?;
    irfftn_impl("fft_hfftn", x, s, dim, dual("fft_hfftn", norm)?)
}
