//! Normalisation: `native_layer_norm`/`layer_norm`, `native_batch_norm`/`batch_norm` (with the
//! in-place running-statistics update), `instance_norm`, `native_group_norm`/`group_norm`.
//!
//! Note [Fused normalisation kernels]: each kernel reads its input once into row-major order
//! (which also makes non-contiguous inputs contiguous), computes the statistics of a row or a
//! channel with f64 accumulators (two passes over data already in cache: mean, then the centred
//! sum of squares, which avoids the cancellation of `E[x^2] - E[x]^2`), and writes the
//! normalised, affine-transformed output in the input's dtype in the same sweep. f16/bf16 are
//! widened on load and rounded once on store. Rows are spread over rayon above
//! `GRAIN_SIZE` elements.

use rayon::prelude::*;

use std::mem::MaybeUninit;

use c10::{Element, Error, Result, Scalar, ScalarType};

use crate::native::tensor_iterator::GRAIN_SIZE;
use crate::Tensor;

/// Values of an optional per-feature parameter (`weight`, `bias`, running stats) as f64, checked
/// to hold `n` elements.
/// The checks of [`param`] alone: `n` elements of a floating dtype.
fn check_param(op: &str, name: &str, t: Option<&Tensor>, n: usize) -> Result<()> {
    if let Some(t) = t {
        if t.numel() as usize != n {
            return Err(Error::shape(op, format!("{name} should contain {n} elements not {}", t.numel())));
        }
        if !t.dtype().is_floating_point() {
            return Err(Error::UnsupportedDtype { op: op.into(), dtype: t.dtype() });
        }
    }
    Ok(())
}

fn param(op: &str, name: &str, t: Option<&Tensor>, n: usize) -> Result<Option<Vec<f64>>> {
    check_param(op, name, t, n)?;
    match t {
        None => Ok(None),
        Some(t) => {
            if t.device().is_meta() {
                // Checked, and no values to read: the callers return meta outputs next.
                return Ok(None);
            }
            Ok(Some(t.to_vec::<f64>()?))
        }
    }
}

fn check_float(op: &str, t: &Tensor) -> Result<()> {
    if t.dtype().is_floating_point() {
        Ok(())
    } else {
        Err(Error::UnsupportedDtype { op: op.into(), dtype: t.dtype() })
    }
}

/// A tensor of `dtype` and `shape` from f64 values (rounded once).
pub(crate) fn tensor_from_f64(v: &[f64], shape: &[i64], dtype: ScalarType) -> Result<Tensor> {
    c10::dispatch_all_types!(dtype, T => Tensor::from_vec(v.iter().map(|&x| <T as Element>::from_f64(x)).collect::<Vec<T>>(), shape))
}

/// Mean and biased variance of a slice, in f64 (two passes; Note [Fused normalisation kernels]).
#[inline]
fn moments<T: Element>(x: impl Iterator<Item = T> + Clone, n: usize) -> (f64, f64) {
    let nf = n as f64;
    let mean = x.clone().map(|v| v.to_f64()).sum::<f64>() / nf;
    let var = x
        .map(|v| {
            let d = v.to_f64() - mean;
            d * d
        })
        .sum::<f64>()
        / nf;
    (mean, var)
}

/// One row's input and output, and its mean and rstd slots.
type RowIo<'a, T> = ((&'a [T], &'a mut [MaybeUninit<T>]), (&'a mut f64, &'a mut f64));

// ---- layer norm ----------------------------------------------------------------------------------

/// Normalises rows of length `n` of `x`: returns the output and the per-row mean and rstd.
fn layer_norm_rows<T: Element>(
    x: &[T],
    sizes: &[i64],
    n: usize,
    w: Option<&[f64]>,
    b: Option<&[f64]>,
    eps: f64,
) -> Result<(Tensor, Vec<f64>, Vec<f64>)> {
    let m = x.len().checked_div(n).unwrap_or(0);
    let mut mean = vec![f64::NAN; m];
    let mut rstd = vec![f64::NAN; m];
    let out = fresh_cpu(sizes, |out: &mut [MaybeUninit<T>]| {
        if n == 0 {
            return;
        }
        let row = |((xr, yr), (mu, rs)): RowIo<'_, T>| {
            let (mean, var) = moments(xr.iter().copied(), n);
            let r = 1.0 / (var + eps).sqrt();
            for (j, (y, &v)) in yr.iter_mut().zip(xr).enumerate() {
                let mut z = (v.to_f64() - mean) * r;
                if let Some(w) = w {
                    z *= w[j];
                }
                if let Some(b) = b {
                    z += b[j];
                }
                y.write(T::from_f64(z));
            }
            *mu = mean;
            *rs = r;
        };
        if x.len() as i64 >= GRAIN_SIZE {
            crate::parallel::warm();
            x.par_chunks(n).zip(out.par_chunks_mut(n)).zip(mean.par_iter_mut().zip(rstd.par_iter_mut())).for_each(row);
        } else {
            x.chunks(n).zip(out.chunks_mut(n)).zip(mean.iter_mut().zip(rstd.iter_mut())).for_each(row);
        }
    })?;
    Ok((out, mean, rstd))
}

// Note [Normalisation on a device]: layer, batch and group norm of a device tensor are
// compositions of the device's reductions (`mean` over the normalised dims, the biased variance
// as the mean of squared deviations, PyTorch's statistics) and elementwise kernels, in float32
// (float64 for float64) and rounded once to the input's dtype at the end, so every temporary
// and statistic stays on the device. Batch norm's running statistics are updated in place on
// the device with the unbiased variance, as on the CPU.

/// The statistics over some dims of a work-dtype tensor, kept (size 1) there.
struct Moments {
    normalised: Tensor,
    mean: Tensor,
    /// The biased variance.
    var: Tensor,
    rstd: Tensor,
}

/// `(x - mean) * rstd` with the biased variance over `dims` of the work-dtype `x`.
fn normalise_on_device(x: &Tensor, dims: &[i64], eps: f64) -> Result<Moments> {
    let mean = crate::ops::mean_dim(x, Some(dims), true, None)?;
    let xc = crate::ops::sub(x, &mean, Scalar::Int(1))?;
    let var = crate::ops::mean_dim(&crate::ops::mul(&xc, &xc)?, Some(dims), true, None)?;
    let rstd = crate::ops::rsqrt(&crate::ops::add_scalar(&var, Scalar::Float(eps), Scalar::Int(1))?)?;
    Ok(Moments { normalised: crate::ops::mul(&xc, &rstd)?, mean, var, rstd })
}

/// `y * weight + bias` with the parameters viewed as `shape` (in `y`'s dtype).
fn affine_on_device(y: Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>, shape: &[i64]) -> Result<Tensor> {
    let dtype = y.dtype();
    let view = |t: &Tensor| crate::ops::reshape(&crate::native::copy::to_dtype(t, dtype)?, shape);
    let mut y = y;
    if let Some(w) = weight {
        y = crate::ops::mul(&y, &view(w)?)?;
    }
    if let Some(b) = bias {
        y = crate::ops::add(&y, &view(b)?, Scalar::Int(1))?;
    }
    Ok(y)
}

/// `native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)`
///
/// Returns the output, and the mean and rstd of every normalised row with shape
/// `input.shape[:axis] + [1] * len(normalized_shape)`.
pub fn native_layer_norm(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    const OP: &str = "native_layer_norm";
    if normalized_shape.is_empty() {
        return Err(Error::invalid(
            OP,
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = []",
        ));
    }
    for (name, t) in [("weight", weight), ("bias", bias)] {
        if let Some(t) = t {
            if t.sizes() != normalized_shape {
                return Err(Error::shape(
                    OP,
                    format!(
                        "Expected {name} to be of same shape as normalized_shape, but got {name} of shape {:?} and normalized_shape = {normalized_shape:?}",
                        t.sizes()
                    ),
                ));
            }
        }
    }
    let nd = input.dim();
    let k = normalized_shape.len();
    if nd < k || &input.sizes()[nd - k..] != normalized_shape {
        let mut expected = String::from("[*");
        for s in normalized_shape {
            expected.push_str(&format!(", {s}"));
        }
        expected.push(']');
        return Err(Error::shape(
            OP,
            format!(
                "Given normalized_shape={normalized_shape:?}, expected input with shape {expected}, but got input of size{:?}",
                input.sizes()
            ),
        ));
    }
    crate::native::check_device(OP, input.device(), [weight, bias].into_iter().flatten())?;
    check_float(OP, input)?;
    let n = c10::size::numel(OP, normalized_shape)?;
    if crate::native::on_device(input) {
        // Note [Normalisation on a device]
        let dtype = input.dtype();
        let x = crate::native::copy::to_dtype(input, crate::native::device_work_dtype(dtype))?;
        let dims: Vec<i64> = ((nd - k) as i64..nd as i64).collect();
        let m = normalise_on_device(&x, &dims, eps)?;
        let y = affine_on_device(m.normalised, weight, bias, normalized_shape)?;
        let back = |t: &Tensor| crate::native::copy::to_dtype(t, dtype);
        return Ok((back(&y)?, back(&m.mean)?, back(&m.rstd)?));
    }
    let w = param(OP, "weight", weight, n as usize)?;
    let b = param(OP, "bias", bias, n as usize)?;
    let mut stat_shape: Vec<i64> = input.sizes()[..nd - k].to_vec();
    stat_shape.extend(std::iter::repeat_n(1, k));
    if input.device().is_meta() {
        let meta = |shape: &[i64]| Tensor::empty_uninit(shape, input.dtype(), input.device());
        return Ok((meta(input.sizes())?, meta(&stat_shape)?, meta(&stat_shape)?));
    }
    match_float!(input.dtype(), T, A => {
        let xc = input.contiguous().call()?;
        let (y, mean, rstd) =
            layer_norm_rows(xc.as_slice::<T>(OP)?, input.sizes(), n as usize, w.as_deref(), b.as_deref(), eps)?;
        Ok((
            y,
            tensor_from_f64(&mean, &stat_shape, input.dtype())?,
            tensor_from_f64(&rstd, &stat_shape, input.dtype())?,
        ))
    }, d => Err(Error::UnsupportedDtype { op: OP.into(), dtype: d }))
}

/// `layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor`
pub fn layer_norm(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    _cudnn_enable: bool,
) -> Result<Tensor> {
    Ok(crate::ops::native_layer_norm(input, normalized_shape, weight, bias, eps)?.0)
}

// ---- batch norm and instance norm ----------------------------------------------------------------

/// Per-channel statistics of `x` viewed as `[outer, c, inner]`: mean and biased variance.
fn channel_moments<T: Element>(x: &[T], outer: usize, c: usize, inner: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let count = (outer * inner) as f64;
    let stats = |ch: usize| {
        let mut s = 0.0;
        for o in 0..outer {
            let base = (o * c + ch) * inner;
            s += x[base..base + inner].iter().map(|v| v.to_f64()).sum::<f64>();
        }
        let mean = s / count;
        let mut ss = 0.0;
        for o in 0..outer {
            let base = (o * c + ch) * inner;
            ss += x[base..base + inner]
                .iter()
                .map(|v| {
                    let d = v.to_f64() - mean;
                    d * d
                })
                .sum::<f64>();
        }
        (mean, ss / count)
    };
    // Sized fallibly (Note [Fallible scratch buffers] in c10): an empty input can still have a
    // huge channel count.
    let mut pairs = c10::size::try_vec_filled((0.0f64, 0.0f64), c)?;
    if x.len() as i64 >= GRAIN_SIZE {
        crate::parallel::for_each_chunk_mut(&mut pairs, 1, |ch, p| p[0] = stats(ch));
    } else {
        pairs.iter_mut().enumerate().for_each(|(ch, p)| *p = stats(ch));
    }
    let (mut mean, mut var) = (c10::size::try_vec(c)?, c10::size::try_vec(c)?);
    for (m, v) in pairs {
        mean.push(m);
        var.push(v);
    }
    Ok((mean, var))
}

/// `y = (x - mean[ch]) * invstd[ch] * w[ch] + b[ch]` over `x` viewed as `[outer, c, inner]`,
/// into a fresh CPU tensor of `sizes` ([`fresh_cpu`]).
#[allow(clippy::too_many_arguments)]
fn channel_affine<T: Element>(
    x: &[T],
    sizes: &[i64],
    c: usize,
    inner: usize,
    mean: &[f64],
    invstd: &[f64],
    w: Option<&[f64]>,
    b: Option<&[f64]>,
) -> Result<Tensor> {
    fresh_cpu(sizes, |y: &mut [MaybeUninit<T>]| {
        if inner == 0 {
            return;
        }
        let plane = |(i, (xr, yr)): (usize, (&[T], &mut [MaybeUninit<T>]))| {
            let ch = i % c;
            let scale = invstd[ch] * w.map_or(1.0, |w| w[ch]);
            let shift = b.map_or(0.0, |b| b[ch]) - mean[ch] * scale;
            affine_span(xr, yr, scale, shift);
        };
        if x.len() as i64 >= GRAIN_SIZE {
            crate::parallel::for_each_chunk_mut(y, inner, |i, yr| plane((i, (&x[i * inner..][..yr.len()], yr))));
        } else {
            x.chunks(inner).zip(y.chunks_mut(inner)).enumerate().for_each(plane);
        }
    })
}

/// `y = x * scale + shift` over one span. Float32 spans compute in float32 with the factors
/// rounded once, as PyTorch's CPU kernels do (`alpha`/`beta` in its batch norm): the same
/// results to an ulp, and vectorised eight or sixteen lanes wide where the conversions through
/// float64 ran at a quarter of the speed; other types go through float64.
fn affine_span<T: Element>(x: &[T], y: &mut [MaybeUninit<T>], scale: f64, shift: f64) {
    if T::DTYPE == ScalarType::F32 {
        // SAFETY: T is f32 (its dtype says so; Element's dtypes are one per type), so both
        // slices are reinterpreted as what they are.
        let (x, y) = unsafe {
            (
                std::slice::from_raw_parts(x.as_ptr() as *const f32, x.len()),
                std::slice::from_raw_parts_mut(y.as_mut_ptr() as *mut MaybeUninit<f32>, y.len()),
            )
        };
        let (a, b) = (scale as f32, shift as f32);
        for (y, &v) in y.iter_mut().zip(x) {
            y.write(v * a + b);
        }
        return;
    }
    for (y, v) in y.iter_mut().zip(x) {
        y.write(T::from_f64(v.to_f64() * scale + shift));
    }
}

/// A fresh contiguous CPU tensor of `sizes` and `T`'s dtype, from the caching allocator, whose
/// every element `fill` must write. Outputs built as a `Vec` were freed to the system allocator,
/// which gave large ones' pages back and faulted them in again on every call: a third of
/// `W7.export_resnet_block`'s time was the kernel's, for its batch norms.
fn fresh_cpu<T: Element>(sizes: &[i64], fill: impl FnOnce(&mut [MaybeUninit<T>])) -> Result<Tensor> {
    let out = Tensor::empty_uninit(sizes, T::DTYPE, c10::Device::CPU)?;
    let len = out.numel() as usize;
    // SAFETY: a fresh contiguous CPU tensor of dtype T holds numel (uninitialised) elements from
    // its data pointer, and nothing else refers to it yet.
    fill(unsafe { std::slice::from_raw_parts_mut(out.data_ptr() as *mut MaybeUninit<T>, len) });
    Ok(out)
}

/// Writes `(1 - momentum) * old + momentum * new` into a running-statistics tensor in place.
fn update_running(t: &Tensor, old: &[f64], new: &[f64], momentum: f64) -> Result<()> {
    let v: Vec<f64> = old.iter().zip(new).map(|(o, n)| (1.0 - momentum) * o + momentum * n).collect();
    crate::native::copy::copy_into(t, &Tensor::from_vec(v, t.sizes())?)
}

/// The shared body of batch norm over `input` viewed as `[outer, c, inner]`.
#[allow(clippy::too_many_arguments)]
fn batch_norm_impl(
    op: &str,
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    if input.dim() < 2 {
        return Err(Error::shape(op, format!("Expected 2D or higher input (got {}D input)", input.dim())));
    }
    // The kernels here run on the CPU and, for shapes only, on the meta device.
    crate::native::check_device(op, input.device(), [weight, bias, running_mean, running_var].into_iter().flatten())?;
    check_float(op, input)?;
    let sizes = input.sizes();
    let (outer, c) = (sizes[0] as usize, sizes[1] as usize);
    let inner: usize = c10::size::sub_numel(&sizes[2..]);
    if crate::native::on_device(input) {
        return batch_norm_on_device(op, input, weight, bias, running_mean, running_var, training, momentum, eps);
    }
    let w = param(op, "weight", weight, c)?;
    let b = param(op, "bias", bias, c)?;
    let rm = param(op, "running_mean", running_mean, c)?;
    let rv = param(op, "running_var", running_var, c)?;
    if !training && (running_mean.is_none() || running_var.is_none()) {
        return Err(Error::invalid(op, "running_mean and running_var must be defined in evaluation mode"));
    }
    let dtype = input.dtype();
    if input.device().is_meta() {
        // Note [Meta loops]: the statistics are per channel in training, empty in evaluation.
        let stats = if training { c as i64 } else { 0 };
        let meta = |shape: &[i64]| Tensor::empty_uninit(shape, dtype, input.device());
        return Ok((meta(sizes)?, meta(&[stats])?, meta(&[stats])?));
    }
    match_float!(dtype, T, A => {
        let xc = input.contiguous().call()?;
        let x = xc.as_slice::<T>(op)?;
        let (mean, invstd) = if training {
            let (mean, var) = channel_moments(x, outer, c, inner)?;
            let n = outer as f64 * inner as f64;
            if let (Some(t), Some(old)) = (running_mean, rm.as_deref()) {
                update_running(t, old, &mean, momentum)?;
            }
            if let (Some(t), Some(old)) = (running_var, rv.as_deref()) {
                let unbiased: Vec<f64> = var.iter().map(|v| v * n / (n - 1.0)).collect();
                update_running(t, old, &unbiased, momentum)?;
            }
            let mut invstd = c10::size::try_vec(c)?;
            invstd.extend(var.iter().map(|v| 1.0 / (v + eps).sqrt()));
            (mean, invstd)
        } else {
            let invstd = rv.as_deref().unwrap_or_default().iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
            (rm.clone().unwrap_or_default(), invstd)
        };
        let out = channel_affine(x, sizes, c, inner, &mean, &invstd, w.as_deref(), b.as_deref())?;
        if training {
            let cs = [c as i64];
            Ok((out, tensor_from_f64(&mean, &cs, dtype)?, tensor_from_f64(&invstd, &cs, dtype)?))
        } else {
            Ok((out, tensor_from_f64(&[], &[0], dtype)?, tensor_from_f64(&[], &[0], dtype)?))
        }
    }, d => Err(Error::UnsupportedDtype { op: op.into(), dtype: d }))
}

/// Batch norm of a device tensor (Note [Normalisation on a device]); `input` has at least two
/// dims and a floating dtype.
#[allow(clippy::too_many_arguments)]
fn batch_norm_on_device(
    op: &str,
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let c = input.sizes()[1];
    for (name, t) in [("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var)]
    {
        check_param(op, name, t, c as usize)?;
    }
    if !training && (running_mean.is_none() || running_var.is_none()) {
        return Err(Error::invalid(op, "running_mean and running_var must be defined in evaluation mode"));
    }
    let dtype = input.dtype();
    let x = crate::native::copy::to_dtype(input, crate::native::device_work_dtype(dtype))?;
    let mut shape = vec![1i64; input.dim()];
    shape[1] = c;
    let back = |t: &Tensor| crate::native::copy::to_dtype(&crate::ops::reshape(t, &[-1])?, dtype);
    if training {
        let dims: Vec<i64> = (0..input.dim() as i64).filter(|&d| d != 1).collect();
        let m = normalise_on_device(&x, &dims, eps)?;
        let n = (input.numel() / c.max(1)) as f64;
        // (1 - momentum) * old + momentum * new, written into the running statistic.
        let update = |t: &Tensor, new: &Tensor| -> Result<()> {
            let old =
                crate::ops::mul_scalar(&crate::native::copy::to_dtype(t, x.dtype())?, Scalar::Float(1.0 - momentum))?;
            let new = crate::ops::reshape(&crate::ops::mul_scalar(new, Scalar::Float(momentum))?, t.sizes())?;
            crate::native::copy::copy_into(t, &crate::ops::add(&old, &new, Scalar::Int(1))?)
        };
        if let Some(t) = running_mean {
            update(t, &m.mean)?;
        }
        if let Some(t) = running_var {
            update(t, &crate::ops::mul_scalar(&m.var, Scalar::Float(n / (n - 1.0)))?)?;
        }
        let y = affine_on_device(m.normalised, weight, bias, &shape)?;
        return Ok((crate::native::copy::to_dtype(&y, dtype)?, back(&m.mean)?, back(&m.rstd)?));
    }
    let (rm, rv) = match (running_mean, running_var) {
        (Some(m), Some(v)) => (m, v),
        _ => return Err(Error::invalid(op, "running_mean and running_var must be defined in evaluation mode")),
    };
    let view = |t: &Tensor| crate::ops::reshape(&crate::native::copy::to_dtype(t, x.dtype())?, &shape);
    let invstd = crate::ops::rsqrt(&crate::ops::add_scalar(&view(rv)?, Scalar::Float(eps), Scalar::Int(1))?)?;
    let y = crate::ops::mul(&crate::ops::sub(&x, &view(rm)?, Scalar::Int(1))?, &invstd)?;
    let y = affine_on_device(y, weight, bias, &shape)?;
    let empty = || Tensor::empty_uninit(&[0], dtype, input.device());
    Ok((crate::native::copy::to_dtype(&y, dtype)?, empty()?, empty()?))
}

/// `native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)`
///
/// Returns the output and, in training, the batch mean and inverse standard deviation per
/// channel (empty tensors in evaluation). Training updates `running_mean`/`running_var` in place
/// with the unbiased batch variance, as PyTorch does.
#[allow(clippy::too_many_arguments)]
pub fn native_batch_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    batch_norm_impl("native_batch_norm", input, weight, bias, running_mean, running_var, training, momentum, eps)
}

/// `batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor`
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
    _cudnn_enabled: bool,
) -> Result<Tensor> {
    if input.numel() == 0 {
        // PyTorch's `_batch_norm_impl_index`: an empty input of any rank gives an empty output
        // that still depends on the input, weight and bias (no statistics to update).
        let mut out = crate::ops::clone(input, None)?;
        if let Some(w) = weight.filter(|w| w.numel() > 0) {
            out = crate::ops::mul(&out, &crate::ops::select(&crate::ops::reshape(w, &[-1])?, 0, 0)?)?;
        }
        if let Some(b) = bias.filter(|b| b.numel() > 0) {
            out = crate::ops::add(
                &out,
                &crate::ops::select(&crate::ops::reshape(b, &[-1])?, 0, 0)?,
                c10::Scalar::Int(1),
            )?;
        }
        return Ok(out);
    }
    Ok(crate::ops::native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)?.0)
}

/// The checks of `instance_norm` (also run by autograd's decomposition); the values of the
/// weight, bias and running statistics given.
pub fn check_instance_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    use_input_stats: bool,
) -> Result<[Option<Vec<f64>>; 4]> {
    const OP: &str = "instance_norm";
    if !use_input_stats && (running_mean.is_none() || running_var.is_none()) {
        return Err(Error::invalid(
            OP,
            "Expected running_mean and running_var to be defined when use_input_stats is false",
        ));
    }
    if input.dim() < 2 {
        return Err(Error::shape(OP, format!("Expected 2D or higher input (got {}D input)", input.dim())));
    }
    check_float(OP, input)?;
    let c = input.sizes()[1] as usize;
    Ok([
        param(OP, "weight", weight, c)?,
        param(OP, "bias", bias, c)?,
        param(OP, "running_mean", running_mean, c)?,
        param(OP, "running_var", running_var, c)?,
    ])
}

/// `instance_norm` as PyTorch composes it: `batch_norm` over the input viewed as `[1, N * C,
/// ...]`, with the affine parameters and running statistics repeated per sample, and the
/// updated running statistics averaged back over the samples. On a device (its batch norm),
/// and autograd's decomposition, which differentiates it through `batch_norm`.
#[allow(clippy::too_many_arguments)]
pub fn instance_norm_by_batch_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    use_input_stats: bool,
    momentum: f64,
    eps: f64,
    cudnn_enabled: bool,
) -> Result<Tensor> {
    check_instance_norm(input, weight, bias, running_mean, running_var, use_input_stats)?;
    let sizes = input.sizes().to_vec();
    let (n, c) = (sizes[0], sizes[1]);
    let repeat = |t: Option<&Tensor>| t.map(|t| crate::ops::repeat(t, &[n])).transpose();
    let (w, b) = (repeat(weight)?, repeat(bias)?);
    let (rm, rv) = (repeat(running_mean)?, repeat(running_var)?);
    let mut shape = sizes.clone();
    shape[0] = 1;
    shape[1] = n * c;
    let x = crate::ops::reshape(input, &shape)?;
    let out = crate::ops::batch_norm(
        &x,
        w.as_ref(),
        b.as_ref(),
        rm.as_ref(),
        rv.as_ref(),
        use_input_stats,
        momentum,
        eps,
        cudnn_enabled,
    )?;
    if use_input_stats {
        for (running, updated) in [(running_mean, &rm), (running_var, &rv)] {
            if let (Some(running), Some(updated)) = (running, updated) {
                let mean = crate::ops::mean_dim(&crate::ops::reshape(updated, &[n, c])?, Some(&[0]), false, None)?;
                crate::ops::copy_(running, &mean, false)?;
            }
        }
    }
    crate::ops::reshape(&out, &sizes)
}

/// `instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool use_input_stats, float momentum, float eps, bool cudnn_enabled) -> Tensor`
///
/// Batch norm of `input` viewed as `[1, N*C, *]`; the running statistics (per channel) are
/// updated with the mean over the batch of the per-instance updates.
#[allow(clippy::too_many_arguments)]
pub fn instance_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    use_input_stats: bool,
    momentum: f64,
    eps: f64,
    _cudnn_enabled: bool,
) -> Result<Tensor> {
    const OP: &str = "instance_norm";
    if crate::native::on_device(input) {
        return instance_norm_by_batch_norm(
            input,
            weight,
            bias,
            running_mean,
            running_var,
            use_input_stats,
            momentum,
            eps,
            _cudnn_enabled,
        );
    }
    let [w, b, rm, rv] = check_instance_norm(input, weight, bias, running_mean, running_var, use_input_stats)?;
    let sizes = input.sizes();
    let (n, c) = (sizes[0] as usize, sizes[1] as usize);
    let inner: usize = c10::size::sub_numel(&sizes[2..]);
    if input.numel() == 0 {
        // Nothing to normalise, and the statistics tiled over `N` (which may be huge) are not
        // needed; the running statistics are left as they are.
        return crate::ops::clone(input, None);
    }
    let tile = |v: Option<Vec<f64>>| v.map(|v| v.repeat(n));
    let (w, b) = (tile(w), tile(b));
    match_float!(input.dtype(), T, A => {
        let xc = input.contiguous().call()?;
        let x = xc.as_slice::<T>(OP)?;
        let (mean, invstd) = if use_input_stats {
            let (mean, var) = channel_moments(x, 1, n * c, inner)?;
            let cnt = inner as f64;
            let batch_avg = |v: &[f64]| -> Vec<f64> {
                (0..c).map(|ch| (0..n).map(|i| v[i * c + ch]).sum::<f64>() / n as f64).collect()
            };
            if let (Some(t), Some(old)) = (running_mean, rm.as_deref()) {
                update_running(t, old, &batch_avg(&mean), momentum)?;
            }
            if let (Some(t), Some(old)) = (running_var, rv.as_deref()) {
                let unbiased: Vec<f64> = var.iter().map(|v| v * cnt / (cnt - 1.0)).collect();
                update_running(t, old, &batch_avg(&unbiased), momentum)?;
            }
            (mean, var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect::<Vec<f64>>())
        } else {
            let rm = rm.unwrap_or_default();
            let invstd: Vec<f64> = rv.unwrap_or_default().iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
            (rm.repeat(n), invstd.repeat(n))
        };
        channel_affine(x, sizes, n * c, inner, &mean, &invstd, w.as_deref(), b.as_deref())
    }, d => Err(Error::UnsupportedDtype { op: OP.into(), dtype: d }))
}

// ---- group norm ----------------------------------------------------------------------------------

/// `native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)`
///
/// Returns the output and the mean and rstd of every `(n, group)`, shaped `[N, group]`.
#[allow(clippy::too_many_arguments)]
pub fn native_group_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    n: i64,
    c: i64,
    hxw: i64,
    group: i64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    const OP: &str = "native_group_norm";
    if group <= 0 || c % group != 0 {
        return Err(Error::invalid(
            OP,
            format!(
                "Expected number of channels in input to be divisible by num_groups, but got input of shape {:?} and num_groups={group}",
                input.sizes()
            ),
        ));
    }
    if n < 0 || c < 0 || hxw < 0 || n.checked_mul(c).and_then(|v| v.checked_mul(hxw)) != Some(input.numel()) {
        return Err(Error::shape(
            OP,
            format!("Expected the input of shape {:?} to have N * C * HxW = {n} * {c} * {hxw} elements", input.sizes()),
        ));
    }
    check_float(OP, input)?;
    for (name, t) in [("weight", weight), ("bias", bias)] {
        if let Some(t) = t {
            if t.dim() != 1 || t.numel() != c {
                return Err(Error::shape(
                    OP,
                    format!(
                        "Expected {name} to be a vector of size equal to the number of channels in input, but got {name} of shape {:?} and input of shape {:?}",
                        t.sizes(),
                        input.sizes()
                    ),
                ));
            }
        }
    }
    if crate::native::on_device(input) {
        // Note [Normalisation on a device]
        let dtype = input.dtype();
        let x = crate::ops::reshape(
            &crate::native::copy::to_dtype(input, crate::native::device_work_dtype(dtype))?,
            &[n, group, -1],
        )?;
        crate::native::check_device(OP, input.device(), [weight, bias].into_iter().flatten())?;
        let m = normalise_on_device(&x, &[2], eps)?;
        let mut shape = vec![1i64; input.dim()];
        if input.dim() > 1 {
            shape[1] = c;
        }
        let y = affine_on_device(crate::ops::reshape(&m.normalised, input.sizes())?, weight, bias, &shape)?;
        let stat = |t: &Tensor| crate::native::copy::to_dtype(&crate::ops::reshape(t, &[n, group])?, dtype);
        return Ok((crate::native::copy::to_dtype(&y, dtype)?, stat(&m.mean)?, stat(&m.rstd)?));
    }
    let w = param(OP, "weight", weight, c as usize)?;
    let b = param(OP, "bias", bias, c as usize)?;
    let (cg, inner) = ((c / group) as usize, hxw as usize);
    let row_len = cg * inner;
    let dtype = input.dtype();
    let stat_shape = [n, group];
    if input.device().is_meta() {
        // Note [Meta loops]: shapes only.
        crate::native::check_device(OP, input.device(), [weight, bias].into_iter().flatten())?;
        let meta = |shape: &[i64]| Tensor::empty_uninit(shape, dtype, input.device());
        return Ok((meta(input.sizes())?, meta(&stat_shape)?, meta(&stat_shape)?));
    }
    match_float!(dtype, T, A => {
        let xc = input.contiguous().call()?;
        let x = xc.as_slice::<T>(OP)?;
        // The statistics of an empty input's groups can still be too many for memory.
        let rows = c10::size::numel(OP, &stat_shape)? as usize;
        let mut mean = c10::size::try_vec_filled(f64::NAN, rows)?;
        let mut rstd = c10::size::try_vec_filled(f64::NAN, rows)?;
        let out = fresh_cpu(input.sizes(), |out: &mut [MaybeUninit<T>]| {
            if row_len == 0 {
                return;
            }
            let row = |(i, ((xr, yr), (mu, rs))): (usize, RowIo<'_, T>)| {
                let (m, var) = moments(xr.iter().copied(), row_len);
                let r = 1.0 / (var + eps).sqrt();
                let g = i % group as usize;
                for k in 0..cg {
                    let ch = g * cg + k;
                    let scale = r * w.as_deref().map_or(1.0, |w| w[ch]);
                    let shift = b.as_deref().map_or(0.0, |b| b[ch]) - m * scale;
                    let span = k * inner..(k + 1) * inner;
                    affine_span(&xr[span.clone()], &mut yr[span], scale, shift);
                }
                *mu = m;
                *rs = r;
            };
            if x.len() as i64 >= GRAIN_SIZE {
                crate::parallel::warm();
                x.par_chunks(row_len)
                    .zip(out.par_chunks_mut(row_len))
                    .zip(mean.par_iter_mut().zip(rstd.par_iter_mut()))
                    .enumerate()
                    .for_each(row);
            } else {
                x.chunks(row_len)
                    .zip(out.chunks_mut(row_len))
                    .zip(mean.iter_mut().zip(rstd.iter_mut()))
                    .enumerate()
                    .for_each(row);
            }
        })?;
        Ok((
            out,
            tensor_from_f64(&mean, &stat_shape, dtype)?,
            tensor_from_f64(&rstd, &stat_shape, dtype)?,
        ))
    }, d => Err(Error::UnsupportedDtype { op: OP.into(), dtype: d }))
}

/// `group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enabled=True) -> Tensor`
pub fn group_norm(
    input: &Tensor,
    num_groups: i64,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    _cudnn_enabled: bool,
) -> Result<Tensor> {
    if input.dim() < 2 {
        return Err(Error::shape(
            "group_norm",
            format!("Expected at least 2 dimensions for input tensor but received {}", input.dim()),
        ));
    }
    let s = input.sizes();
    let hxw = c10::size::numel("group_norm", &s[2..])?;
    Ok(crate::ops::native_group_norm(input, weight, bias, s[0], s[1], hxw, num_groups, eps)?.0)
}
