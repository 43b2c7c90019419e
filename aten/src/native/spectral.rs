//! `torch.fft` on complex tensors, as PyTorch's `SpectralOps.cpp` builds it: three primitive
//! transforms on `rustfft` — `_fft_c2c` (complex to complex), `_fft_r2c` (real to complex,
//! one-sided on the last dim) and `_fft_c2r` (a Hermitian half spectrum to real) — with
//! derivatives of their own, and the user-facing `fft`, `ifft`, `rfft`, `irfft`, `hfft`,
//! `ihfft` (1-D, 2-D, n-D) written over them. Signal sizes follow PyTorch's
//! `canonicalize_fft_shape_and_dim_args`: each transformed dim is cut or zero-padded to its size.
//!
//! `normalization` is PyTorch's code: 0 none, 1 by `1/sqrt(n)`, 2 by `1/n`, with `n` the
//! product of the signal sizes (the output's for `_fft_c2r`).
//!
//! The real-input `irfft`/`hfft` family keeps its DFT-matrix form in `fft.rs` (differentiable
//! through `matmul`); complex inputs come here.

use c10::{Complex, Error, Result, ScalarType};
use rayon::prelude::*;
use rustfft::{Fft, FftDirection, FftPlanner};
use std::sync::{Arc, Mutex, OnceLock};

use crate::native::complex::Real;
use crate::{ops, Tensor};

/// The plans of the process, by element type: planning a transform (its twiddle tables and
/// the choice of algorithms) costs more than running it (13.6 ms against 2.4 ms for 2^20
/// complex64 points on the bench machine), so plans are kept and shared.
pub trait Planned: Real {
    /// A plan for `n` points in `direction`.
    fn plan(n: usize, direction: FftDirection) -> Arc<dyn Fft<Self>>;
    /// Runs `f` with a scratch buffer of `len` elements, kept per thread between calls (a
    /// fresh buffer of a few MB costs its page faults on every transform).
    fn with_scratch(len: usize, f: &mut dyn FnMut(&mut [Complex<Self>]));
}

macro_rules! planned {
    ($t:ty) => {
        impl Planned for $t {
            fn plan(n: usize, direction: FftDirection) -> Arc<dyn Fft<$t>> {
                static PLANNER: OnceLock<Mutex<FftPlanner<$t>>> = OnceLock::new();
                let planner = PLANNER.get_or_init(|| Mutex::new(FftPlanner::new()));
                // A poisoned lock only means another thread panicked while planning; the
                // planner's cache is still a cache.
                let mut p = planner.lock().unwrap_or_else(|e| e.into_inner());
                p.plan_fft(n, direction)
            }

            fn with_scratch(len: usize, f: &mut dyn FnMut(&mut [Complex<$t>])) {
                thread_local! {
                    static SCRATCH: std::cell::RefCell<Vec<Complex<$t>>> = const { std::cell::RefCell::new(Vec::new()) };
                }
                SCRATCH.with(|cell| match cell.try_borrow_mut() {
                    Ok(mut v) => {
                        if v.len() < len {
                            v.resize(len, Complex::new(0.0, 0.0));
                        }
                        f(&mut v[..len])
                    }
                    // Re-entered on this thread (a nested pool task): a buffer of its own.
                    Err(_) => f(&mut vec![Complex::new(0.0, 0.0); len]),
                })
            }
        }
    };
}
planned!(f32);
planned!(f64);

/// Transforms each of `dims` of the contiguous row-major array `data` of shape `sizes`, in place.
fn c2c_in_place<R: Planned>(data: &mut [Complex<R>], sizes: &[i64], dims: &[usize], forward: bool) -> Result<()> {
    let direction = if forward { FftDirection::Forward } else { FftDirection::Inverse };
    for &d in dims {
        let n = sizes[d] as usize;
        if n <= 1 || data.is_empty() {
            continue;
        }
        let inner: usize = sizes[d + 1..].iter().map(|&s| s as usize).product();
        let fft = R::plan(n, direction);
        if inner == 1 {
            lines(&fft, data, n);
        } else {
            columns(&fft, data, n, inner);
        }
    }
    Ok(())
}

/// Whether to split work of `elems` elements over the thread pool.
fn parallel(elems: usize) -> bool {
    elems >= 1 << 15 && rayon::current_num_threads() > 1
}

/// The FFT of every run of `n` adjacent elements.
fn lines<R: Planned>(fft: &Arc<dyn Fft<R>>, data: &mut [Complex<R>], n: usize) {
    let scratch_len = fft.get_inplace_scratch_len();
    let run = |chunk: &mut [Complex<R>]| {
        R::with_scratch(scratch_len, &mut |scratch| fft.process_with_scratch(chunk, scratch))
    };
    let count = data.len() / n;
    if parallel(data.len()) && count > 1 {
        let per_task = count.div_ceil(rayon::current_num_threads() * 4).max(1);
        crate::parallel::warm();
        data.par_chunks_mut(per_task * n).for_each(run);
    } else {
        run(data);
    }
}

/// The FFT along a dim of size `n` whose elements are `inner` apart: each `n x inner` block is
/// staged into rows of `n` a few columns at a time, transformed, and written back. The tasks
/// (a block's group of columns each) split over the pool.
fn columns<R: Planned>(fft: &Arc<dyn Fft<R>>, data: &mut [Complex<R>], n: usize, inner: usize) {
    const WIDTH: usize = 16;
    let scratch_len = fft.get_inplace_scratch_len();
    let groups = inner.div_ceil(WIDTH);
    let tasks = data.len() / (n * inner) * groups;
    let base = SharedMut(data.as_mut_ptr());
    let len = data.len();
    let task = |t: usize| {
        let (b, c0) = (t / groups, (t % groups) * WIDTH);
        let w = WIDTH.min(inner - c0);
        let zero = Complex::new(R::zero(), R::zero());
        let mut stage = vec![zero; n * w];
        let at = |k: usize, c: usize| {
            let i = b * n * inner + k * inner + c0 + c;
            debug_assert!(i < len);
            i
        };
        for k in 0..n {
            for c in 0..w {
                // SAFETY: `at` is inside `data` (b < blocks, k < n, c0 + c < inner); the tasks
                // touch disjoint elements (their own block and columns), and `data` is
                // borrowed mutably for the whole call.
                stage[c * n + k] = unsafe { *base.get().add(at(k, c)) };
            }
        }
        // The per-thread scratch `lines` uses too, not a fresh buffer per column group.
        R::with_scratch(scratch_len, &mut |scratch| fft.process_with_scratch(&mut stage, scratch));
        for k in 0..n {
            for c in 0..w {
                // SAFETY: as above.
                unsafe { *base.get().add(at(k, c)) = stage[c * n + k] };
            }
        }
    };
    if parallel(len) && tasks > 1 {
        crate::parallel::for_each(tasks, task);
    } else {
        (0..tasks).for_each(task);
    }
}

/// A pointer the column tasks share; each writes only its own elements.
#[derive(Clone, Copy)]
struct SharedMut<T>(*mut T);
// SAFETY: used only by `columns`, whose tasks access disjoint elements while the slice the
// pointer comes from stays mutably borrowed.
unsafe impl<T: Send> Send for SharedMut<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedMut<T> {}
impl<T> SharedMut<T> {
    fn get(self) -> *mut T {
        self.0
    }
}

/// The scale of normalization code `normalization` for a transform of `n` points in all.
fn scale_of(op: &str, normalization: i64, n: f64) -> Result<f64> {
    match normalization {
        0 => Ok(1.0),
        1 => Ok(1.0 / n.sqrt()),
        2 => Ok(1.0 / n),
        other => Err(Error::invalid(op, format!("Unsupported normalization type: {other}"))),
    }
}

/// `dim` wrapped against `x`, checked distinct.
fn wrap_dims(op: &str, x: &Tensor, dim: &[i64]) -> Result<Vec<usize>> {
    let dims = dim.iter().map(|&d| crate::wrap_dim(op, d, x.dim())).collect::<Result<Vec<_>>>()?;
    let mut seen = dims.clone();
    seen.sort_unstable();
    seen.dedup();
    if seen.len() != dims.len() {
        return Err(Error::invalid(op, "FFT dims must be unique"));
    }
    if x.dim() == 0 {
        return Err(Error::invalid(op, "Dimension specified as -1 but tensor has no dimensions"));
    }
    Ok(dims)
}

/// The complex result of transforming `x` (complex, any layout) along `dims` and scaling.
fn run_c2c(op: &str, x: &Tensor, dims: &[usize], forward: bool, scale: f64) -> Result<Tensor> {
    if x.device().is_meta() {
        return ops::empty(x.sizes(), Some(x.dtype()), None, Some(x.device()), None, None);
    }
    if !x.device().is_cpu() {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype: x.dtype() });
    }
    c10::dispatch_complex_types!(x.dtype(), R => {
        // The result is built in a new contiguous tensor (from the caching allocator, so a
        // repeated transform reuses its memory), filled with the input by the copy kernel.
        let out = ops::empty(x.sizes(), Some(x.dtype()), None, None, None, None)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        crate::native::copy::copy_into(&out, x)?;
        // SAFETY: `out` is a new contiguous CPU tensor of dtype R's complex type, all of whose
        // elements the copy wrote; nothing else holds it while the slice lives.
        let v = unsafe { std::slice::from_raw_parts_mut(out.data_ptr() as *mut Complex<R>, out.numel() as usize) };
        c2c_in_place(v, x.sizes(), dims, forward)?;
        if scale != 1.0 {
            let s = <R as c10::Element>::from_f64(scale);
            crate::parallel::warm();
            v.par_iter_mut().with_min_len(1 << 14).for_each(|z| *z *= s);
        }
        Ok(out)
    })
}

/// `_fft_c2c(Tensor self, SymInt[] dim, int normalization, bool forward) -> Tensor`
pub fn fft_c2c(self_: &Tensor, dim: &[i64], normalization: i64, forward: bool) -> Result<Tensor> {
    const OP: &str = "_fft_c2c";
    if !self_.dtype().is_complex() {
        return Err(Error::invalid(OP, format!("_fft_c2c expects a complex input tensor, but got {}", self_.dtype())));
    }
    let dims = wrap_dims(OP, self_, dim)?;
    let n: f64 = dims.iter().map(|&d| self_.sizes()[d] as f64).product();
    run_c2c(OP, self_, &dims, forward, scale_of(OP, normalization, n)?)
}

/// `_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor`: the forward
/// transform of a real tensor; `onesided` keeps `n / 2 + 1` bins of the last transformed dim.
pub fn fft_r2c(self_: &Tensor, dim: &[i64], normalization: i64, onesided: bool) -> Result<Tensor> {
    const OP: &str = "_fft_r2c";
    let dtype = self_.dtype();
    let Some(complex) = dtype.to_complex().filter(|_| matches!(dtype, ScalarType::F32 | ScalarType::F64)) else {
        return Err(Error::invalid(OP, format!("_fft_r2c expects a float or double input tensor, but got {dtype}")));
    };
    let dims = wrap_dims(OP, self_, dim)?;
    let n: f64 = dims.iter().map(|&d| self_.sizes()[d] as f64).product();
    let z = crate::native::copy::to_dtype(self_, complex)?;
    let full = run_c2c(OP, &z, &dims, true, scale_of(OP, normalization, n)?)?;
    match (onesided, dims.last()) {
        (true, Some(&last)) => {
            let half = self_.sizes()[last] / 2 + 1;
            ops::narrow(&full, last as i64, 0, half)?.contiguous().call()
        }
        _ => Ok(full),
    }
}

/// `_fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size) -> Tensor`: the
/// inverse of a one-sided spectrum. The other dims are inverse-transformed as complex first,
/// then each line of the last dim is extended by conjugate symmetry to `last_dim_size` points,
/// transformed, and its real part kept (so the imaginary parts of the bins that are their own
/// partners, 0 and `n / 2`, are ignored, as in PyTorch).
pub fn fft_c2r(self_: &Tensor, dim: &[i64], normalization: i64, last_dim_size: i64) -> Result<Tensor> {
    const OP: &str = "_fft_c2r";
    if !self_.dtype().is_complex() {
        return Err(Error::invalid(OP, format!("_fft_c2r expects a complex input tensor, but got {}", self_.dtype())));
    }
    if last_dim_size < 1 {
        return Err(Error::invalid(OP, format!("Invalid number of data points ({last_dim_size}) specified")));
    }
    let dims = wrap_dims(OP, self_, dim)?;
    let Some((&last, rest)) = dims.split_last() else {
        return Err(Error::invalid(OP, "_fft_c2r must transform at least one axis"));
    };
    let mut out_sizes = self_.sizes().to_vec();
    out_sizes[last] = last_dim_size;
    let real = self_.dtype().to_real();
    if self_.device().is_meta() {
        return ops::empty(&out_sizes, Some(real), None, Some(self_.device()), None, None);
    }
    if !self_.device().is_cpu() {
        return Err(Error::UnsupportedDtype { op: OP.into(), dtype: self_.dtype() });
    }
    let n: f64 = rest.iter().map(|&d| self_.sizes()[d] as f64).product::<f64>() * last_dim_size as f64;
    let scale = scale_of(OP, normalization, n)?;
    let n_last = last_dim_size as usize;
    let half = self_.sizes()[last] as usize;
    // The half spectrum with the other dims transformed, moved so the last transformed dim is
    // the innermost one.
    let y = run_c2c(OP, self_, rest, false, 1.0)?;
    let y = ops::movedim(&y, &[last as i64], &[-1])?;
    let moved_sizes = y.sizes().to_vec();
    c10::dispatch_complex_types!(self_.dtype(), R => {
        let v = y.to_complex_vec::<R>()?;
        let count = v.len().checked_div(half).unwrap_or(0);
        let zero = Complex::new(<R as num_traits::Zero>::zero(), <R as num_traits::Zero>::zero());
        let mut full = c10::size::try_vec(count * n_last)?;
        full.resize(count * n_last, zero);
        let keep = half.min(n_last / 2 + 1);
        crate::parallel::warm();
        full.par_chunks_mut(n_last).enumerate().with_min_len(64).for_each(|(i, line)| {
            let src = &v[i * half..i * half + keep];
            line[..keep].copy_from_slice(src);
            for k in 1..keep {
                if n_last - k >= keep {
                    line[n_last - k] = src[k].conj();
                }
            }
        });
        c2c_in_place(&mut full, &[count as i64, n_last as i64], &[1], false)?;
        let s = <R as c10::Element>::from_f64(scale);
        let mut out: Vec<R> = c10::size::try_vec(full.len())?;
        out.extend(full.iter().map(|z| z.re * s));
        let mut sizes = moved_sizes.clone();
        *sizes.last_mut().expect("at least one dim") = last_dim_size;
        let t = Tensor::from_vec(out, &sizes)?;
        ops::movedim(&t, &[-1], &[last as i64])?.contiguous().call()
    })
}

/// PyTorch's normalization code for a `norm` argument of a forward (`forward`) or inverse
/// transform.
fn norm_code(op: &str, norm: Option<&str>, forward: bool) -> Result<i64> {
    Ok(match norm {
        None | Some("backward") => {
            if forward {
                0
            } else {
                2
            }
        }
        Some("forward") => {
            if forward {
                2
            } else {
                0
            }
        }
        Some("ortho") => 1,
        Some(other) => return Err(Error::invalid(op, format!("Invalid normalization mode: \"{other}\""))),
    })
}

/// `x` promoted for a transform: integers and bool to the default float dtype; half types are
/// not supported on the CPU (as in PyTorch).
fn promote(op: &str, x: &Tensor, want_complex: bool) -> Result<Tensor> {
    let d = x.dtype();
    let x = if d.is_integral(true) { ops::to(x, ScalarType::default_float(), false, false, None)? } else { x.clone() };
    let d = x.dtype();
    if matches!(d, ScalarType::F16 | ScalarType::BF16) {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype: d });
    }
    if want_complex && !d.is_complex() {
        let c = d.to_complex().expect("float32/float64 have complex dtypes");
        // Through the dispatcher: the conversion is part of what autograd differentiates.
        return ops::to(&x, c, false, false, None);
    }
    Ok(x)
}

/// The transformed dims and signal sizes, PyTorch's defaults: with `dim` given, those dims;
/// with only `s`, the last `len(s)` dims; with neither, all dims. A size of -1 (or none) is the
/// input's size, except the last of a complex-to-real transform, `2 * (m - 1)`.
pub(crate) fn shape_and_dims(
    op: &str,
    x: &Tensor,
    s: Option<&[i64]>,
    dim: Option<&[i64]>,
    c2r: bool,
) -> Result<(Vec<i64>, Vec<i64>)> {
    let nd = x.dim() as i64;
    if nd == 0
        && (dim.is_some_and(|d| !d.is_empty()) || s.is_some_and(|s| !s.is_empty()) || (dim.is_none() && s.is_none()))
    {
        return Err(Error::invalid(op, "Dimension specified as -1 but tensor has no dimensions"));
    }
    let dims: Vec<i64> = match (dim, s) {
        (Some(d), _) => {
            d.iter().map(|&v| crate::wrap_dim(op, v, x.dim()).map(|w| w as i64)).collect::<Result<Vec<_>>>()?
        }
        (None, Some(s)) => {
            if s.len() as i64 > nd {
                return Err(Error::invalid(
                    op,
                    format!("Got shape with {} values but input tensor only has {nd} dimensions.", s.len()),
                ));
            }
            (nd - s.len() as i64..nd).collect()
        }
        (None, None) => (0..nd).collect(),
    };
    let mut seen = dims.clone();
    seen.sort_unstable();
    seen.dedup();
    if seen.len() != dims.len() {
        return Err(Error::invalid(op, "FFT dims must be unique"));
    }
    if let Some(s) = s {
        if s.len() != dims.len() {
            return Err(Error::invalid(
                op,
                format!("When given, dim and shape arguments must have the same length. Got dim of length {} and shape of length {}", dims.len(), s.len()),
            ));
        }
    }
    let last = dims.len().saturating_sub(1);
    let sizes = dims
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            let m = x.sizes()[d as usize];
            let n = match s.map(|s| s[i]).filter(|&v| v != -1) {
                Some(v) => v,
                None if c2r && i == last => 2 * (m - 1),
                None => m,
            };
            if n < 1 {
                return Err(Error::invalid(op, format!("Invalid number of data points ({n}) specified")));
            }
            Ok(n)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((dims, sizes))
}

/// `x` cut or zero-padded at the end of each of `dims` to `sizes`, differentiably (a narrow or
/// a `cat` with zeros).
fn resize(x: &Tensor, dims: &[i64], sizes: &[i64]) -> Result<Tensor> {
    let mut out = x.clone();
    for (&d, &n) in dims.iter().zip(sizes) {
        let have = out.sizes()[d as usize];
        if have > n {
            out = ops::narrow(&out, d, 0, n)?;
        } else if have < n {
            out = pad_end(&out, d, n - have)?;
        }
    }
    Ok(out)
}

/// `x` with `extra` zeros appended along `dim`.
fn pad_end(x: &Tensor, dim: i64, extra: i64) -> Result<Tensor> {
    let mut zs = x.sizes().to_vec();
    zs[dim as usize] = extra;
    let z = ops::zeros(&zs, Some(x.dtype()), None, Some(x.device()), None)?;
    ops::cat(&[x.clone(), z], dim)
}

/// `fftn`/`ifftn` and their 1-D and 2-D forms: complex-to-complex.
fn c2c_n(
    op: &str,
    x: &Tensor,
    s: Option<&[i64]>,
    dim: Option<&[i64]>,
    norm: Option<&str>,
    forward: bool,
) -> Result<Tensor> {
    let x = promote(op, x, true)?;
    let (dims, sizes) = shape_and_dims(op, &x, s, dim, false)?;
    let x = resize(&x, &dims, &sizes)?;
    ops::_fft_c2c(&x, &dims, norm_code(op, norm, forward)?, forward)
}

/// `rfftn` (and `ihfftn`, which conjugates it with the inverse's normalization).
fn r2c_n(
    op: &str,
    x: &Tensor,
    s: Option<&[i64]>,
    dim: Option<&[i64]>,
    norm: Option<&str>,
    forward: bool,
) -> Result<Tensor> {
    if x.dtype().is_complex() {
        return Err(Error::invalid(
            op,
            format!("{} expects a real input tensor, but got {}", op.trim_start_matches("fft_"), x.dtype()),
        ));
    }
    let x = promote(op, x, false)?;
    let (dims, sizes) = shape_and_dims(op, &x, s, dim, false)?;
    if dims.is_empty() {
        return Err(Error::invalid(op, format!("{} must transform at least one axis", op.trim_start_matches("fft_"))));
    }
    let x = resize(&x, &dims, &sizes)?;
    let y = ops::_fft_r2c(&x, &dims, norm_code(op, norm, forward)?, true)?;
    if forward {
        Ok(y)
    } else {
        ops::conj_physical(&y)
    }
}

/// `irfftn` of a complex input (and `hfftn`, which conjugates the input and uses the forward
/// transform's normalization).
pub(crate) fn c2r_n(
    op: &str,
    x: &Tensor,
    s: Option<&[i64]>,
    dim: Option<&[i64]>,
    norm: Option<&str>,
    forward: bool,
) -> Result<Tensor> {
    let (dims, sizes) = shape_and_dims(op, x, s, dim, true)?;
    let Some((&last_n, _)) = sizes.split_last() else {
        return Err(Error::invalid(op, format!("{} must transform at least one axis", op.trim_start_matches("fft_"))));
    };
    let mut half = sizes.clone();
    *half.last_mut().expect("non-empty") = last_n / 2 + 1;
    let x = resize(x, &dims, &half)?;
    let x = if forward { ops::conj_physical(&x)? } else { x };
    ops::_fft_c2r(&x, &dims, norm_code(op, norm, forward)?, last_n)
}

fn one(n: Option<i64>) -> Option<Vec<i64>> {
    n.map(|v| vec![v])
}

/// `fft_fft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor`
pub fn fft_fft(x: &Tensor, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
    c2c_n("fft_fft", x, one(n).as_deref(), Some(&[dim]), norm, true)
}

/// `fft_ifft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor`
pub fn fft_ifft(x: &Tensor, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
    c2c_n("fft_ifft", x, one(n).as_deref(), Some(&[dim]), norm, false)
}

/// `fft_fft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2,-1], str? norm=None) -> Tensor`
pub fn fft_fft2(x: &Tensor, s: Option<&[i64]>, dim: &[i64], norm: Option<&str>) -> Result<Tensor> {
    c2c_n("fft_fft2", x, s, Some(dim), norm, true)
}

/// `fft_ifft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2,-1], str? norm=None) -> Tensor`
pub fn fft_ifft2(x: &Tensor, s: Option<&[i64]>, dim: &[i64], norm: Option<&str>) -> Result<Tensor> {
    c2c_n("fft_ifft2", x, s, Some(dim), norm, false)
}

/// `fft_fftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor`
pub fn fft_fftn(x: &Tensor, s: Option<&[i64]>, dim: Option<&[i64]>, norm: Option<&str>) -> Result<Tensor> {
    c2c_n("fft_fftn", x, s, dim, norm, true)
}

/// `fft_ifftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor`
pub fn fft_ifftn(x: &Tensor, s: Option<&[i64]>, dim: Option<&[i64]>, norm: Option<&str>) -> Result<Tensor> {
    c2c_n("fft_ifftn", x, s, dim, norm, false)
}

/// `fft_rfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor`
pub fn fft_rfft(x: &Tensor, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
    r2c_n("fft_rfft", x, one(n).as_deref(), Some(&[dim]), norm, true)
}

/// `fft_rfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2,-1], str? norm=None) -> Tensor`
pub fn fft_rfft2(x: &Tensor, s: Option<&[i64]>, dim: &[i64], norm: Option<&str>) -> Result<Tensor> {
    r2c_n("fft_rfft2", x, s, Some(dim), norm, true)
}

/// `fft_rfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor`
pub fn fft_rfftn(x: &Tensor, s: Option<&[i64]>, dim: Option<&[i64]>, norm: Option<&str>) -> Result<Tensor> {
    r2c_n("fft_rfftn", x, s, dim, norm, true)
}

/// `fft_ihfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor`
pub fn fft_ihfft(x: &Tensor, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
    r2c_n("fft_ihfft", x, one(n).as_deref(), Some(&[dim]), norm, false)
}

/// `fft_ihfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2,-1], str? norm=None) -> Tensor`
pub fn fft_ihfft2(x: &Tensor, s: Option<&[i64]>, dim: &[i64], norm: Option<&str>) -> Result<Tensor> {
    r2c_n("fft_ihfft2", x, s, Some(dim), norm, false)
}

/// `fft_ihfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor`
pub fn fft_ihfftn(x: &Tensor, s: Option<&[i64]>, dim: Option<&[i64]>, norm: Option<&str>) -> Result<Tensor> {
    r2c_n("fft_ihfftn", x, s, dim, norm, false)
}

/// `fft_r2c_backward`: the gradient of `_fft_r2c` (real input) from a complex gradient. A
/// one-sided gradient is zero-padded to the full last dim first.
pub fn fft_r2c_backward(
    grad: &Tensor,
    dim: &[i64],
    normalization: i64,
    onesided: bool,
    last_dim_size: i64,
) -> Result<Tensor> {
    let last = crate::wrap_dim("_fft_r2c_backward", *dim.last().unwrap_or(&-1), grad.dim())?;
    let have = grad.sizes()[last];
    let full =
        if onesided && last_dim_size > have { pad_end(grad, last as i64, last_dim_size - have)? } else { grad.clone() };
    ops::real(&ops::_fft_c2c(&full, dim, normalization, false)?)?.contiguous().call()
}

/// `fft_c2r_backward`: the gradient of `_fft_c2r` (a one-sided spectrum) from a real gradient:
/// its one-sided forward transform, with the bins whose conjugate partners were filled in by
/// symmetry counted twice.
pub fn fft_c2r_backward(grad: &Tensor, dim: &[i64], normalization: i64) -> Result<Tensor> {
    let g = ops::_fft_r2c(grad, dim, normalization, true)?;
    let last = crate::wrap_dim("_fft_c2r_backward", *dim.last().unwrap_or(&-1), grad.dim())?;
    let (half, double) = (g.sizes()[last], grad.sizes()[last] - g.sizes()[last]);
    if double <= 0 {
        return Ok(g);
    }
    // Weights 1, 2 (x double), 1 (the rest) along the last transformed dim.
    let w: Vec<f64> = (0..half).map(|k| if k >= 1 && k <= double { 2.0 } else { 1.0 }).collect();
    let mut shape = vec![1i64; g.dim()];
    shape[last] = half;
    let w = crate::native::copy::to_dtype(&Tensor::from_vec(w, &shape)?, g.dtype().to_real())?;
    ops::mul(&g, &w)
}

/// `window` (or ones) of `win_length` points centred in `n_fft` points with zeros on both sides,
/// differentiably.
fn centred_window(
    op: &str,
    window: Option<&Tensor>,
    win_length: i64,
    n_fft: i64,
    like: &Tensor,
) -> Result<Option<Tensor>> {
    if let Some(w) = window {
        if w.dim() != 1 || w.sizes()[0] != win_length {
            return Err(Error::invalid(
                op,
                format!("{op}: expected a 1D window tensor of size equal to win_length={win_length}, but got window with size {:?}", w.sizes()),
            ));
        }
    }
    if win_length == n_fft {
        return Ok(window.cloned());
    }
    let w = match window {
        Some(w) => w.clone(),
        None => ops::ones(&[win_length], Some(like.dtype().to_real()), None, Some(like.device()), None)?,
    };
    let left = (n_fft - win_length) / 2;
    let (dtype, device) = (w.dtype(), w.device());
    let zeros = |n: i64| ops::zeros(&[n], Some(dtype), None, Some(device), None);
    Ok(Some(ops::cat(&[zeros(left)?, w, zeros(n_fft - win_length - left)?], 0)?))
}

/// `stft(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool normalized=False, bool? onesided=None, bool? return_complex=None, bool? align_to_window=None) -> Tensor`:
/// the frames `x[f * hop : f * hop + n_fft] * window`, each transformed (one-sided for a real
/// signal and window), as `[n_freq, n_frames]` (a batch dim first for a 2-D input).
#[allow(clippy::too_many_arguments)]
pub fn stft(
    x: &Tensor,
    n_fft: i64,
    hop_length: Option<i64>,
    win_length: Option<i64>,
    window: Option<&Tensor>,
    normalized: bool,
    onesided: Option<bool>,
    return_complex: Option<bool>,
    align_to_window: Option<bool>,
) -> Result<Tensor> {
    const OP: &str = "stft";
    let complex_input = x.dtype().is_complex() || window.is_some_and(|w| w.dtype().is_complex());
    let return_complex = match return_complex {
        Some(r) => r,
        None if complex_input => true,
        None => {
            return Err(Error::invalid(
                OP,
                "stft requires the return_complex parameter be given for real inputs, and will further require that return_complex=True in a future PyTorch release.",
            ))
        }
    };
    if align_to_window == Some(true) {
        return Err(Error::NotImplemented { op: OP.into(), msg: "align_to_window=True is not implemented".into() });
    }
    if x.dim() != 1 && x.dim() != 2 {
        return Err(Error::invalid(OP, format!("stft: expected a 1D or 2D tensor, but got {}D tensor", x.dim())));
    }
    let hop = hop_length.unwrap_or(n_fft >> 2);
    let win_length = win_length.unwrap_or(n_fft);
    let input = if x.dim() == 1 { ops::unsqueeze(x, 0)? } else { x.clone() };
    let len = input.sizes()[1];
    if n_fft <= 0 || n_fft > len {
        return Err(Error::invalid(OP, format!("stft: expected 0 < n_fft < {len}, but got n_fft={n_fft}")));
    }
    if hop <= 0 {
        return Err(Error::invalid(OP, format!("stft: expected hop_length > 0, but got hop_length={hop}")));
    }
    if win_length <= 0 || win_length > n_fft {
        return Err(Error::invalid(
            OP,
            format!("stft: expected 0 < win_length <= n_fft, but got win_length={win_length}"),
        ));
    }
    let window = centred_window(OP, window, win_length, n_fft, x)?;
    let mut frames = ops::unfold(&input, 1, n_fft, hop)?;
    if let Some(w) = window {
        frames = ops::mul(&frames, &w)?;
    }
    let frames = promote(OP, &frames, false)?;
    let complex_fft = frames.dtype().is_complex();
    let onesided = onesided.unwrap_or(!complex_fft);
    let norm = if normalized { 1 } else { 0 };
    let out = if complex_fft {
        if onesided {
            return Err(Error::invalid(OP, "Cannot have onesided output if window or input is complex"));
        }
        ops::_fft_c2c(&frames, &[2], norm, true)?
    } else {
        ops::_fft_r2c(&frames, &[2], norm, onesided)?
    };
    let mut out = ops::transpose(&out, 1, 2)?;
    if x.dim() == 1 {
        out = ops::squeeze_dim(&out, 0)?;
    }
    if return_complex {
        Ok(out)
    } else {
        ops::view_as_real(&out.contiguous().call()?)
    }
}

/// `stft.center(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool center=True, str pad_mode="reflect", bool normalized=False, bool? onesided=None, bool? return_complex=None, bool? align_to_window=None) -> Tensor`:
/// with `center`, the signal padded by `n_fft / 2` on both sides (`pad_mode`) first.
#[allow(clippy::too_many_arguments)]
pub fn stft_center(
    x: &Tensor,
    n_fft: i64,
    hop_length: Option<i64>,
    win_length: Option<i64>,
    window: Option<&Tensor>,
    center: bool,
    pad_mode: &str,
    normalized: bool,
    onesided: Option<bool>,
    return_complex: Option<bool>,
    align_to_window: Option<bool>,
) -> Result<Tensor> {
    let x = if center {
        if x.dim() != 1 && x.dim() != 2 {
            return Err(Error::invalid(
                "stft",
                format!("stft: expected a 1D or 2D tensor, but got {}D tensor", x.dim()),
            ));
        }
        // `pad` pads the last dim of a batched signal: [1, 1, L] or [1, B, L] as PyTorch does.
        let extended = ops::unsqueeze(&if x.dim() == 1 { ops::unsqueeze(x, 0)? } else { x.clone() }, 0)?;
        let p = n_fft / 2;
        let padded = ops::pad(&extended, &[p, p], pad_mode, None)?;
        let padded = ops::squeeze_dim(&padded, 0)?;
        if x.dim() == 1 {
            ops::squeeze_dim(&padded, 0)?
        } else {
            padded
        }
    } else {
        x.clone()
    };
    stft(&x, n_fft, hop_length, win_length, window, normalized, onesided, return_complex, align_to_window)
}

/// `istft(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool center=True, bool normalized=False, bool? onesided=None, int? length=None, bool return_complex=False) -> Tensor`:
/// the inverse of `stft`: each frame inverse-transformed and windowed, overlapped and added, and
/// divided by the overlapped squared window (which must not vanish: the NOLA condition).
#[allow(clippy::too_many_arguments)]
pub fn istft(
    x: &Tensor,
    n_fft: i64,
    hop_length: Option<i64>,
    win_length: Option<i64>,
    window: Option<&Tensor>,
    center: bool,
    normalized: bool,
    onesided: Option<bool>,
    length: Option<i64>,
    return_complex: bool,
) -> Result<Tensor> {
    const OP: &str = "istft";
    if !x.dtype().is_complex() {
        return Err(Error::invalid(
            OP,
            "istft requires a complex-valued input tensor matching the output from stft with return_complex=True.",
        ));
    }
    let hop = hop_length.unwrap_or(n_fft >> 2);
    let win_length = win_length.unwrap_or(n_fft);
    if x.numel() == 0 {
        return Err(Error::invalid(OP, "istft: Input tensor cannot be empty"));
    }
    if x.dim() != 2 && x.dim() != 3 {
        return Err(Error::invalid(
            OP,
            format!("istft: Expected a tensor with 2 or 3 dimensions of complex dtype, but got {}", x.dim()),
        ));
    }
    let (fft_size, n_frames) = (x.sizes()[x.dim() - 2], x.sizes()[x.dim() - 1]);
    let onesided = onesided.unwrap_or(fft_size != n_fft);
    if onesided && n_fft / 2 + 1 != fft_size {
        return Err(Error::invalid(OP, format!("istft: expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 + 1 when onesided=True, but got {fft_size}")));
    }
    if !onesided && n_fft != fft_size {
        return Err(Error::invalid(OP, format!("istft: expected the frequency dimension (3rd to the last) of the input tensor to match n_fft when onesided=False, but got {fft_size}")));
    }
    if !(0 < hop && hop <= win_length) {
        return Err(Error::invalid(OP, "istft: expected 0 < hop_length <= win_length"));
    }
    if !(0 < win_length && win_length <= n_fft) {
        return Err(Error::invalid(OP, "istft: expected 0 < win_length <= n_fft"));
    }
    if window.is_some_and(|w| w.dim() != 1 || w.sizes()[0] != win_length) {
        return Err(Error::invalid(OP, "Invalid window shape. window has to be 1D and length of `win_length`"));
    }
    let real = x.dtype().to_real();
    let window = match centred_window(OP, window, win_length, n_fft, x)? {
        Some(w) => w,
        None => ops::ones(&[n_fft], Some(real), None, Some(x.device()), None)?,
    };
    let input = if x.dim() == 2 { ops::unsqueeze(x, 0)? } else { x.clone() };
    // [channel, n_frames, fft_size]
    let input = ops::transpose(&input, 1, 2)?;
    let norm = if normalized { 1 } else { 2 };
    let frames = if return_complex {
        if onesided {
            return Err(Error::invalid(OP, "Cannot have onesided output if window or input is complex"));
        }
        ops::_fft_c2c(&input, &[2], norm, false)?
    } else {
        if window.dtype().is_complex() {
            return Err(Error::invalid(OP, "Complex windows are incompatible with return_complex=False"));
        }
        let half = if onesided { input } else { ops::narrow(&input, -1, 0, n_fft / 2 + 1)? };
        ops::_fft_c2r(&half, &[2], norm, n_fft)?
    };
    let expected_len = n_fft + hop * (n_frames - 1);
    let channels = frames.sizes()[0];
    let y = overlap_add(&ops::mul(&frames, &window)?, channels, expected_len, n_fft, hop)?;
    let sq = ops::expand(&ops::reshape(&ops::mul(&window, &window)?, &[1, 1, n_fft])?, &[1, n_frames, n_fft], false)?;
    let envelope = overlap_add(&sq, 1, expected_len, n_fft, hop)?;
    let start = if center { n_fft / 2 } else { 0 };
    let end = match length {
        Some(l) => start + l,
        None if center => expected_len - n_fft / 2,
        None => expected_len,
    };
    let kept = end.min(expected_len);
    let y = ops::narrow(&y, 1, start, (kept - start).max(0))?;
    let envelope = ops::narrow(&envelope, 1, start, (kept - start).max(0))?;
    if envelope.numel() > 0
        && ops::lt_scalar(&ops::min(&ops::abs(&envelope)?)?, c10::Scalar::Float(1e-11))?.item::<bool>()?
    {
        return Err(Error::invalid(
            OP,
            "istft(...): window overlap add min: 1e-11 (the window violates the NOLA condition)",
        ));
    }
    let mut y = ops::div(&y, &envelope)?;
    if x.dim() == 2 {
        y = ops::squeeze_dim(&y, 0)?;
    }
    if end > expected_len {
        let last = y.dim() as i64 - 1;
        y = pad_end(&y, last, end - expected_len)?;
    }
    Ok(y)
}

/// Overlap-add of `[channels, n_frames, n_fft]` frames `hop` apart into `[channels, len]`.
fn overlap_add(frames: &Tensor, channels: i64, len: i64, n_fft: i64, hop: i64) -> Result<Tensor> {
    let n_frames = frames.sizes()[1];
    let positions: Vec<i64> = (0..n_frames).flat_map(|f| (0..n_fft).map(move |k| f * hop + k)).collect();
    let index = ops::to_device(
        &Tensor::from_vec(positions, &[n_frames * n_fft])?,
        frames.device(),
        ScalarType::I64,
        false,
        false,
        None,
    )?;
    let flat = ops::reshape(frames, &[channels, n_frames * n_fft])?;
    let zeros = ops::zeros(&[channels, len], Some(frames.dtype()), None, Some(frames.device()), None)?;
    ops::index_add(&zeros, 1, &index, &flat, c10::Scalar::Int(1))
}
