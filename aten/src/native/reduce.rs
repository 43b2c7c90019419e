//! Reductions over dimensions (`sum`, `mean`, `prod`, `var`/`std`, `max`/`min` with indices,
//! `amax`/`amin`, `argmax`/`argmin`, `logsumexp`, `all`/`any`), scans (`cumsum`, `cumprod`) and
//! `softmax`/`log_softmax`.
//!
//! Note [Reference reductions]: these kernels move the reduced dimensions last, copy to a
//! contiguous block and reduce each row, accumulating floating inputs in f64 and integers in
//! i64. They are exact references for PyTorch's semantics (dtypes, shapes, keepdim, empty
//! inputs, NaN propagation, first index on ties). Sums and means over trailing or leading
//! dimensions take the vectorised path of Note [Fast sums] first.

use c10::{Error, Result, Scalar, ScalarType};

use crate::{wrap_dim, Tensor};

/// The rows to reduce: data as f64 and i64 (row-major, `rows` x `len`), and the output shape.
struct Rows {
    f: Vec<f64>,
    i: Vec<i64>,
    rows: usize,
    len: usize,
    out_shape: Vec<i64>,
}

impl Rows {
    /// One value per row (an output element), collected into a buffer reserved fallibly: an
    /// empty input can still have a huge output (Note [Fallible scratch buffers]).
    fn per_row<T>(&self, f: impl FnMut(usize) -> T) -> Result<Vec<T>> {
        c10::size::try_collect(self.rows, (0..self.rows).map(f))
    }
}

/// Which dimensions of `t` a reduction over `dims` reduces (all for `None` or `[]`), each
/// wrapped and checked, a repeat refused.
pub(crate) fn reduced_dims(op: &str, t: &Tensor, dims: Option<&[i64]>) -> Result<Vec<bool>> {
    let n = t.dim();
    let mut red = vec![false; n];
    match dims {
        None => red.iter_mut().for_each(|r| *r = true),
        Some([]) => red.iter_mut().for_each(|r| *r = true),
        Some(ds) => {
            for &d in ds {
                let w = wrap_dim(op, d, n)?;
                if n > 0 {
                    if red[w] {
                        return Err(Error::invalid(op, format!("dim {w} appears multiple times in the list of dims")));
                    }
                    red[w] = true;
                }
            }
        }
    }
    Ok(red)
}

fn rows(t: &Tensor, red: &[bool], keepdim: bool) -> Result<Rows> {
    let n = t.dim();
    let kept: Vec<i64> = (0..n).filter(|&d| !red[d]).map(|d| d as i64).collect();
    let reduced: Vec<i64> = (0..n).filter(|&d| red[d]).map(|d| d as i64).collect();
    let perm: Vec<i64> = kept.iter().chain(&reduced).copied().collect();
    let p = if n == 0 { t.clone() } else { crate::ops::permute(t, &perm)? };
    // Checked: an empty input's kept (or reduced) sizes alone can overflow (`[2^40, 2^40, 0]`).
    let sizes_of = |ds: &[i64]| ds.iter().map(|&d| t.sizes()[d as usize]).collect::<Vec<i64>>();
    let len = c10::size::numel("reduce", &sizes_of(&reduced))?;
    let rows = c10::size::numel("reduce", &sizes_of(&kept))?;
    let out_shape: Vec<i64> =
        (0..n).filter_map(|d| if red[d] { keepdim.then_some(1) } else { Some(t.sizes()[d]) }).collect();
    let integral = !t.dtype().is_floating_point();
    Ok(Rows {
        f: if integral { Vec::new() } else { p.to_vec::<f64>()? },
        i: if integral { p.to_vec::<i64>()? } else { Vec::new() },
        rows: rows as usize,
        len: len as usize,
        out_shape,
    })
}

fn from_f64(v: Vec<f64>, shape: &[i64], dtype: ScalarType) -> Result<Tensor> {
    let t = Tensor::from_vec(v, shape)?;
    if dtype == ScalarType::F64 {
        Ok(t)
    } else {
        crate::native::copy::to_dtype(&t, dtype)
    }
}

fn from_i64(v: Vec<i64>, shape: &[i64], dtype: ScalarType) -> Result<Tensor> {
    let t = Tensor::from_vec(v, shape)?;
    if dtype == ScalarType::I64 {
        Ok(t)
    } else {
        crate::native::copy::to_dtype(&t, dtype)
    }
}

/// Elements per block of a full reduction: the blocks are summed independently (in parallel)
/// and their sums added in order, so the result does not depend on the thread count.
const SUM_BLOCK: usize = 1 << 16;

// Note [Fast sums]
// ~~~~~~~~~~~~~~~~
// `sum`/`mean` of a contiguous f32/f64 tensor whose reduced dimensions are all trailing (rows)
// or all leading (columns) run on the vectorised loops of `cpu::vec`, accumulating in f64, in
// parallel over rows, column blocks or SUM_BLOCK-element blocks. Every other layout and dtype
// takes the reference path of Note [Reference reductions].

/// `sum` (or `mean` when `divide`) over the dimensions flagged in `red`, when the layout and
/// dtype have a fast path (Note [Fast sums]); `None` otherwise.
fn fast_sum(t: &Tensor, red: &[bool], keepdim: bool, divide: bool) -> Result<Option<Tensor>> {
    use crate::native::cpu::vec;
    let dt = t.dtype();
    if !matches!(dt, ScalarType::F32 | ScalarType::F64)
        || !t.is_contiguous()
        || t.dim() == 0
        || !t.device().is_cpu()
        || t.layout() != c10::Layout::Strided
    {
        return Ok(None);
    }
    let n = t.dim();
    let first_red = red.iter().position(|&r| r).unwrap_or(n);
    let trailing = red[first_red..].iter().all(|&r| r);
    // Leading: a prefix of reduced dimensions followed only by kept ones (`sum(0)` of a matrix,
    // the bias gradient of a linear layer).
    let first_kept = red.iter().position(|&r| !r).unwrap_or(n);
    let leading = !trailing && red[first_kept..].iter().all(|&r| !r);
    if !trailing && !leading {
        return Ok(None);
    }
    let out_shape: Vec<i64> =
        (0..n).filter_map(|d| if red[d] { keepdim.then_some(1) } else { Some(t.sizes()[d]) }).collect();
    let split = if trailing { first_red } else { first_kept };
    let (outer, inner) =
        (c10::size::numel("reduce", &t.sizes()[..split])?, c10::size::numel("reduce", &t.sizes()[split..])?);
    let (rows, len) = (outer as usize, inner as usize);
    // Trailing: `rows` results, each the sum of `len` contiguous values. Leading: `len` results,
    // each the sum of a column of `rows` values `len` apart.
    let count = if trailing { len } else { rows };
    let scale = if divide { 1.0 / count as f64 } else { 1.0 };
    let nout = if trailing { rows } else { len };
    let mut acc = c10::size::try_vec_filled(0f64, nout)?;
    macro_rules! go {
        ($T:ty, $sum:path, $add_row:path) => {{
            let x: &[$T] = t.as_slice::<$T>("sum")?;
            if trailing && rows == 1 {
                let mut parts = c10::size::try_vec_filled(0f64, x.len().div_ceil(SUM_BLOCK))?;
                crate::parallel::for_each_chunk_mut(&mut parts, 1, |c, part| {
                    part[0] = $sum(&x[c * SUM_BLOCK..((c + 1) * SUM_BLOCK).min(x.len())]);
                });
                acc[0] = parts.iter().sum();
            } else if trailing {
                let per = (SUM_BLOCK / len.max(1)).max(1);
                crate::parallel::for_each_chunk_mut(&mut acc, per, |c, out| {
                    for (i, o) in out.iter_mut().enumerate() {
                        let r = c * per + i;
                        *o = $sum(&x[r * len..(r + 1) * len]);
                    }
                });
            } else {
                let cols = 256usize;
                crate::parallel::for_each_chunk_mut(&mut acc, cols, |c, out| {
                    let j0 = c * cols;
                    for r in 0..rows {
                        $add_row(out, &x[r * len + j0..r * len + j0 + out.len()]);
                    }
                });
            }
        }};
    }
    if rows > 0 && len > 0 {
        match dt {
            ScalarType::F32 => go!(f32, vec::sum_f32, vec::add_row_f32),
            _ => go!(f64, vec::sum_f64, vec::add_row_f64),
        }
    }
    if divide {
        acc.iter_mut().for_each(|v| *v *= scale);
    }
    match dt {
        ScalarType::F32 => {
            Tensor::from_vec(c10::size::try_collect(nout, acc.into_iter().map(|v| v as f32))?, &out_shape)
        }
        _ => Tensor::from_vec(acc, &out_shape),
    }
    .map(Some)
}

// ---- other devices (Note [Device-generic operators]) -------------------------------------------

/// `t`'s sizes with 1 at the reduced dims (the shape of a `keepdim` result).
fn keepdim_shape(t: &Tensor, red: &[bool]) -> Vec<i64> {
    t.sizes().iter().zip(red).map(|(&s, &r)| if r { 1 } else { s }).collect()
}

/// A `keepdim` result viewed without the reduced dims unless `keepdim`.
fn drop_reduced(r: Tensor, red: &[bool], keepdim: bool) -> Result<Tensor> {
    if keepdim {
        return Ok(r);
    }
    let shape: Vec<i64> = r.sizes().iter().zip(red).filter(|(_, &x)| !x).map(|(&s, _)| s).collect();
    crate::ops::reshape(&r, &shape)
}

fn convert(t: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    if t.dtype() == dtype {
        Ok(t.clone())
    } else {
        crate::ops::_to_copy(t, Some(dtype), None, None, None, false, None)
    }
}

/// `sum`/`prod` on a device: folded in the output dtype when it is floating, in int64 otherwise
/// (as on the CPU), by the device's `sum`/`prod` loop.
fn device_fold(
    op: &'static str,
    kernel: &'static crate::native::stub::ReduceKernel,
    t: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    out_dtype: ScalarType,
) -> Result<Tensor> {
    let work = if out_dtype.is_floating_point() { out_dtype } else { ScalarType::I64 };
    let src = convert(t, work)?;
    let red = reduced_dims(op, &src, dims)?;
    let out = Tensor::empty_uninit(&keepdim_shape(&src, &red), work, src.device())?;
    crate::native::stub::run_reduction(op, kernel, &src, &red, &[&out])?;
    convert(&drop_reduced(out, &red, keepdim)?, out_dtype)
}

/// sum/prod of the rows in the output dtype.
fn sum_prod(
    op: &'static str,
    t: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<ScalarType>,
    prod: bool,
) -> Result<Tensor> {
    let out_dtype = dtype.unwrap_or(if t.dtype().is_floating_point() { t.dtype() } else { ScalarType::I64 });
    if !t.device().is_cpu() {
        return device_fold(
            op,
            if prod { crate::device_kernel!(reduce "prod") } else { crate::device_kernel!(reduce "sum") },
            t,
            dims,
            keepdim,
            out_dtype,
        );
    }
    let src = if out_dtype.is_floating_point() && !t.dtype().is_floating_point() {
        crate::native::copy::to_dtype(t, out_dtype)?
    } else {
        t.clone()
    };
    let red = reduced_dims(op, &src, dims)?;
    if !prod && out_dtype == src.dtype() {
        if let Some(r) = fast_sum(&src, &red, keepdim, false)? {
            return Ok(r);
        }
    }
    let r = rows(&src, &red, keepdim)?;
    if src.dtype().is_floating_point() {
        let v = r.per_row(|i| {
            let row = &r.f[i * r.len..(i + 1) * r.len];
            if prod {
                row.iter().product()
            } else {
                row.iter().sum()
            }
        })?;
        from_f64(v, &r.out_shape, out_dtype)
    } else {
        let v = r.per_row(|i| {
            let row = &r.i[i * r.len..(i + 1) * r.len];
            if prod {
                row.iter().fold(1i64, |a, &b| a.wrapping_mul(b))
            } else {
                row.iter().fold(0i64, |a, &b| a.wrapping_add(b))
            }
        })?;
        from_i64(v, &r.out_shape, out_dtype)
    }
}

/// `sum(Tensor self, *, ScalarType? dtype=None) -> Tensor`
pub fn sum(self_: &Tensor, dtype: Option<ScalarType>) -> Result<Tensor> {
    if self_.dtype().is_complex() {
        return crate::native::complex::sum(self_, None, false, dtype);
    }
    sum_prod("sum", self_, None, false, dtype, false)
}
/// `sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor`
pub fn sum_dim(self_: &Tensor, dim: Option<&[i64]>, keepdim: bool, dtype: Option<ScalarType>) -> Result<Tensor> {
    if self_.dtype().is_complex() {
        return crate::native::complex::sum(self_, dim, keepdim, dtype);
    }
    sum_prod("sum", self_, dim, keepdim, dtype, false)
}
/// `prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor`
pub fn prod_dim(self_: &Tensor, dim: i64, keepdim: bool, dtype: Option<ScalarType>) -> Result<Tensor> {
    sum_prod("prod", self_, Some(&[dim]), keepdim, dtype, true)
}

fn mean_impl(t: &Tensor, dims: Option<&[i64]>, keepdim: bool, dtype: Option<ScalarType>) -> Result<Tensor> {
    let out = dtype.unwrap_or(t.dtype());
    if !out.is_floating_point() {
        return Err(Error::invalid(
            "mean",
            format!("mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}", out.cpp_name()),
        ));
    }
    if !t.device().is_cpu() {
        // The sum in at least single precision, divided, then rounded once to `out`.
        let work = if out == ScalarType::F64 { out } else { ScalarType::F32 };
        let red = reduced_dims("mean", t, dims)?;
        let count = t.sizes().iter().zip(&red).filter(|(_, &r)| r).fold(1i64, |n, (&s, _)| n.saturating_mul(s));
        let s = device_fold("mean", crate::device_kernel!(reduce "sum"), t, dims, keepdim, work)?;
        return convert(&crate::ops::div_scalar(&s, Scalar::Float(count as f64))?, out);
    }
    if out == t.dtype() {
        if let Some(r) = fast_sum(t, &reduced_dims("mean", t, dims)?, keepdim, true)? {
            return Ok(r);
        }
    }
    let src = crate::native::copy::to_dtype(t, ScalarType::F64)?;
    let red = reduced_dims("mean", &src, dims)?;
    let r = rows(&src, &red, keepdim)?;
    let v = r.per_row(|i| r.f[i * r.len..(i + 1) * r.len].iter().sum::<f64>() / r.len as f64)?;
    from_f64(v, &r.out_shape, out)
}

/// `mean(Tensor self, *, ScalarType? dtype=None) -> Tensor`
pub fn mean(self_: &Tensor, dtype: Option<ScalarType>) -> Result<Tensor> {
    if self_.dtype().is_complex() {
        return crate::native::complex::mean(self_, None, false, dtype);
    }
    mean_impl(self_, None, false, dtype)
}
/// `mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor`
pub fn mean_dim(self_: &Tensor, dim: Option<&[i64]>, keepdim: bool, dtype: Option<ScalarType>) -> Result<Tensor> {
    if self_.dtype().is_complex() {
        return crate::native::complex::mean(self_, dim, keepdim, dtype);
    }
    mean_impl(self_, dim, keepdim, dtype)
}

fn var_std(
    op: &'static str,
    t: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
    sqrt: bool,
) -> Result<Tensor> {
    if !t.dtype().is_floating_point() {
        return Err(Error::invalid(
            op,
            format!("{op}(): input dtype should be floating point, got {}", t.dtype().cpp_name()),
        ));
    }
    let c = correction.map_or(1.0, |s| s.to_f64());
    let red = reduced_dims(op, t, dim)?;
    if crate::native::on_device(t) {
        return var_std_on_device(t, &red, c, keepdim, sqrt);
    }
    let r = rows(t, &red, keepdim)?;
    let v = r.per_row(|i| {
        let row = &r.f[i * r.len..(i + 1) * r.len];
        let m = row.iter().sum::<f64>() / r.len as f64;
        let ss: f64 = row.iter().map(|x| (x - m) * (x - m)).sum();
        let var = ss / (r.len as f64 - c).max(0.0);
        if sqrt {
            var.sqrt()
        } else {
            var
        }
    })?;
    from_f64(v, &r.out_shape, t.dtype())
}

// Note [Reductions composed on a device]: `var`, `std`, `logsumexp`, `all` and `any` of a device
// tensor are compositions of the device's reductions (sum, mean, amax) and elementwise kernels,
// so every temporary stays on the device. The 16-bit floats compute in float32 and round once at
// the end (the CPU computes in float64 and rounds once).

/// The dims flagged in `red`.
fn dim_list(red: &[bool]) -> Vec<i64> {
    red.iter().enumerate().filter(|(_, &r)| r).map(|(d, _)| d as i64).collect()
}

/// `keepdim`'s shape (`kept`, reduced dims of size 1) without the reduced dims.
fn squeeze_reduced(kept: &Tensor, red: &[bool]) -> Result<Tensor> {
    let shape: Vec<i64> = kept.sizes().iter().zip(red).filter(|(_, &r)| !r).map(|(&s, _)| s).collect();
    crate::ops::reshape(kept, &shape)
}

fn var_std_on_device(t: &Tensor, red: &[bool], correction: f64, keepdim: bool, sqrt: bool) -> Result<Tensor> {
    if t.dtype().is_complex() {
        return Err(Error::UnsupportedDtype { op: if sqrt { "std" } else { "var" }.into(), dtype: t.dtype() });
    }
    let dims = dim_list(red);
    let x = crate::native::copy::to_dtype(t, crate::native::device_work_dtype(t.dtype()))?;
    let mean = crate::ops::mean_dim(&x, Some(&dims), true, None)?;
    let d = crate::ops::sub(&x, &mean, Scalar::Int(1))?;
    let ss = crate::ops::sum_dim_intlist(&crate::ops::mul(&d, &d)?, Some(&dims), keepdim, None)?;
    let n = if ss.numel() == 0 { 0 } else { t.numel() / ss.numel() };
    let var = crate::ops::div_scalar(&ss, Scalar::Float((n as f64 - correction).max(0.0)))?;
    let r = if sqrt { crate::ops::sqrt(&var)? } else { var };
    crate::native::copy::to_dtype(&r, t.dtype())
}

fn logsumexp_on_device(t: &Tensor, dim: &[i64], keepdim: bool, out: ScalarType) -> Result<Tensor> {
    let red = reduced_dims("logsumexp", t, Some(dim))?;
    let dims = dim_list(&red);
    let x = crate::native::copy::to_dtype(t, crate::native::device_work_dtype(out))?;
    if x.numel() == 0 {
        // The sum of no exponentials is 0: log gives -inf.
        let s = crate::ops::sum_dim_intlist(&crate::ops::exp(&x)?, Some(&dims), keepdim, None)?;
        return crate::native::copy::to_dtype(&crate::ops::log(&s)?, out);
    }
    // The max is taken out for range, except where it is infinite (then the sum is inf or NaN
    // by itself, as on the CPU).
    let m = crate::ops::amax(&x, &dims, true)?;
    let m = crate::ops::masked_fill(&m, &crate::ops::isinf(&m)?, Scalar::Float(0.0))?;
    let shifted = crate::ops::exp(&crate::ops::sub(&x, &m, Scalar::Int(1))?)?;
    let s = crate::ops::log(&crate::ops::sum_dim_intlist(&shifted, Some(&dims), true, None)?)?;
    let r = crate::ops::add(&s, &m, Scalar::Int(1))?;
    let r = if keepdim { r } else { squeeze_reduced(&r, &red)? };
    crate::native::copy::to_dtype(&r, out)
}

/// `var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor`
pub fn var_correction(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    var_std("var", self_, dim, correction, keepdim, false)
}
/// `std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor`
pub fn std_correction(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    var_std("std", self_, dim, correction, keepdim, true)
}

/// Index of the max (or min) of a row: NaN wins, first index on ties.
fn arg_extreme_f(row: &[f64], max: bool) -> usize {
    let mut best = 0;
    for (i, &x) in row.iter().enumerate() {
        let b = row[best];
        if b.is_nan() {
            break;
        }
        if x.is_nan() || (max && x > b) || (!max && x < b) {
            best = i;
        }
    }
    best
}

fn arg_extreme_i(row: &[i64], max: bool) -> usize {
    let mut best = 0;
    for (i, &x) in row.iter().enumerate() {
        if (max && x > row[best]) || (!max && x < row[best]) {
            best = i;
        }
    }
    best
}

/// Values and indices of the extreme along `dims` (all dims when None).
fn extreme(op: &'static str, t: &Tensor, dims: Option<&[i64]>, keepdim: bool, max: bool) -> Result<(Tensor, Tensor)> {
    let red = reduced_dims(op, t, dims)?;
    if matches!(dims, None | Some([])) {
        if t.numel() == 0 {
            return Err(Error::invalid(op, format!("{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.")));
        }
    } else if let Some(d) = (0..t.dim()).find(|&d| red[d] && t.sizes()[d] == 0) {
        // An empty input reduced over non-empty dims gives empty results; only reducing over a
        // zero-size dim has no identity to return.
        return Err(Error::invalid(op, format!("{op}(): Expected reduction dim {d} to have non-zero size.")));
    }
    if !t.device().is_cpu() {
        let shape = keepdim_shape(t, &red);
        let vals = Tensor::empty_uninit(&shape, t.dtype(), t.device())?;
        let idx = Tensor::empty_uninit(&shape, ScalarType::I64, t.device())?;
        crate::native::stub::run_reduction(
            op,
            if max { crate::device_kernel!(reduce "max") } else { crate::device_kernel!(reduce "min") },
            t,
            &red,
            &[&vals, &idx],
        )?;
        return Ok((drop_reduced(vals, &red, keepdim)?, drop_reduced(idx, &red, keepdim)?));
    }
    let r = rows(t, &red, keepdim)?;
    let mut idx = c10::size::try_vec(r.rows)?;
    if t.dtype().is_floating_point() {
        let mut vals = c10::size::try_vec(r.rows)?;
        for i in 0..r.rows {
            let row = &r.f[i * r.len..(i + 1) * r.len];
            let k = arg_extreme_f(row, max);
            idx.push(k as i64);
            vals.push(row[k]);
        }
        Ok((from_f64(vals, &r.out_shape, t.dtype())?, Tensor::from_vec(idx, &r.out_shape)?))
    } else {
        let mut vals = c10::size::try_vec(r.rows)?;
        for i in 0..r.rows {
            let row = &r.i[i * r.len..(i + 1) * r.len];
            let k = arg_extreme_i(row, max);
            idx.push(k as i64);
            vals.push(row[k]);
        }
        Ok((from_i64(vals, &r.out_shape, t.dtype())?, Tensor::from_vec(idx, &r.out_shape)?))
    }
}

/// `max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)`
pub fn max_dim(self_: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    extreme("max", self_, Some(&[dim]), keepdim, true)
}
/// `min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)`
pub fn min_dim(self_: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    extreme("min", self_, Some(&[dim]), keepdim, false)
}
/// `max(Tensor self) -> Tensor`
pub fn max(self_: &Tensor) -> Result<Tensor> {
    Ok(extreme("max", self_, None, false, true)?.0)
}
/// `min(Tensor self) -> Tensor`
pub fn min(self_: &Tensor) -> Result<Tensor> {
    Ok(extreme("min", self_, None, false, false)?.0)
}
/// `amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor`
pub fn amax(self_: &Tensor, dim: &[i64], keepdim: bool) -> Result<Tensor> {
    Ok(extreme("amax", self_, Some(dim), keepdim, true)?.0)
}
/// `amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor`
pub fn amin(self_: &Tensor, dim: &[i64], keepdim: bool) -> Result<Tensor> {
    Ok(extreme("amin", self_, Some(dim), keepdim, false)?.0)
}
/// `argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor`
pub fn argmax(self_: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
    arg("argmax", self_, dim, keepdim, true)
}
/// `argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor`
pub fn argmin(self_: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
    arg("argmin", self_, dim, keepdim, false)
}

fn arg(op: &'static str, t: &Tensor, dim: Option<i64>, keepdim: bool, max: bool) -> Result<Tensor> {
    match dim {
        Some(d) => Ok(extreme(op, t, Some(&[d]), keepdim, max)?.1),
        None => {
            if t.numel() == 0 {
                return Err(Error::invalid(
                    op,
                    format!("{op}(): Expected reduction dim to be specified for input.numel() == 0."),
                ));
            }
            let flat = crate::ops::reshape(t, &[-1])?;
            let i = extreme(op, &flat, Some(&[0]), false, max)?.1;
            if keepdim {
                crate::ops::reshape(&i, &vec![1; t.dim()])
            } else {
                Ok(i)
            }
        }
    }
}

/// `logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor`
pub fn logsumexp(self_: &Tensor, dim: &[i64], keepdim: bool) -> Result<Tensor> {
    let out = if self_.dtype().is_floating_point() { self_.dtype() } else { ScalarType::default_float() };
    if crate::native::on_device(self_) {
        return logsumexp_on_device(self_, dim, keepdim, out);
    }
    let src = crate::native::copy::to_dtype(self_, ScalarType::F64)?;
    let red = reduced_dims("logsumexp", &src, Some(dim))?;
    let r = rows(&src, &red, keepdim)?;
    let v = r.per_row(|i| {
        let row = &r.f[i * r.len..(i + 1) * r.len];
        let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if m.is_infinite() {
            return m;
        }
        m + row.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
    })?;
    from_f64(v, &r.out_shape, out)
}

fn all_any(op: &'static str, t: &Tensor, dims: Option<&[i64]>, keepdim: bool, all: bool) -> Result<Tensor> {
    let nonzero = crate::native::copy::to_dtype(&crate::native::copy::to_dtype(t, ScalarType::Bool)?, ScalarType::I64)?;
    let red = reduced_dims(op, &nonzero, dims)?;
    if crate::native::on_device(t) {
        // Note [Reductions composed on a device]: the count of nonzero elements per output, by
        // the device's int64 sum, against 0 (`any`) or the reduced element count (`all`).
        let count = crate::ops::sum_dim_intlist(&nonzero, Some(&dim_list(&red)), keepdim, None)?;
        let reduced = if count.numel() == 0 { 0 } else { t.numel() / count.numel() };
        let out = if all {
            crate::ops::eq_scalar(&count, Scalar::Int(reduced))?
        } else {
            crate::ops::ne_scalar(&count, Scalar::Int(0))?
        };
        return if t.dtype() == ScalarType::U8 { crate::native::copy::to_dtype(&out, ScalarType::U8) } else { Ok(out) };
    }
    let r = rows(&nonzero, &red, keepdim)?;
    let v = r.per_row(|i| {
        let row = &r.i[i * r.len..(i + 1) * r.len];
        if all {
            row.iter().all(|&x| x != 0)
        } else {
            row.iter().any(|&x| x != 0)
        }
    })?;
    let out = Tensor::from_vec::<bool>(v, &r.out_shape)?;
    if t.dtype() == ScalarType::U8 {
        crate::native::copy::to_dtype(&out, ScalarType::U8)
    } else {
        Ok(out)
    }
}

/// `all(Tensor self) -> Tensor`
pub fn all(self_: &Tensor) -> Result<Tensor> {
    all_any("all", self_, None, false, true)
}
/// `any(Tensor self) -> Tensor`
pub fn any(self_: &Tensor) -> Result<Tensor> {
    all_any("any", self_, None, false, false)
}
/// `all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor`
pub fn all_dim(self_: &Tensor, dim: i64, keepdim: bool) -> Result<Tensor> {
    all_any("all", self_, Some(&[dim]), keepdim, true)
}
/// `any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor`
pub fn any_dim(self_: &Tensor, dim: i64, keepdim: bool) -> Result<Tensor> {
    all_any("any", self_, Some(&[dim]), keepdim, false)
}

/// Applies `f` to every line along `dim` (values in f64, in place), keeping the shape.
fn along(op: &'static str, t: &Tensor, dim: i64, out_dtype: ScalarType, f: impl Fn(&mut [f64])) -> Result<Tensor> {
    let n = t.dim();
    let d = wrap_dim(op, dim, n)?;
    if n == 0 {
        let mut v = t.to_vec::<f64>()?;
        f(&mut v);
        return from_f64(v, &[], out_dtype);
    }
    let moved = crate::ops::transpose(t, d as i64, n as i64 - 1)?;
    let mut v = moved.to_vec::<f64>()?;
    let len = t.sizes()[d] as usize;
    if len > 0 {
        for line in v.chunks_mut(len) {
            f(line);
        }
    }
    let res = from_f64(v, moved.sizes(), out_dtype)?;
    crate::ops::contiguous(&crate::ops::transpose(&res, d as i64, n as i64 - 1)?, c10::MemoryFormat::Contiguous)
}

fn scan_dtype(t: &Tensor, dtype: Option<ScalarType>) -> ScalarType {
    dtype.unwrap_or(if t.dtype().is_floating_point() { t.dtype() } else { ScalarType::I64 })
}

/// `cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor`
pub fn cumsum(self_: &Tensor, dim: i64, dtype: Option<ScalarType>) -> Result<Tensor> {
    if crate::native::on_device(self_) {
        return scan_on_device("cumsum", crate::device_kernel!(reduce "cumsum"), self_, dim, scan_dtype(self_, dtype));
    }
    along("cumsum", self_, dim, scan_dtype(self_, dtype), |l| {
        let mut acc = 0.0;
        for x in l.iter_mut() {
            acc += *x;
            *x = acc;
        }
    })
}
/// `cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor`
pub fn cumprod(self_: &Tensor, dim: i64, dtype: Option<ScalarType>) -> Result<Tensor> {
    if crate::native::on_device(self_) {
        return scan_on_device(
            "cumprod",
            crate::device_kernel!(reduce "cumprod"),
            self_,
            dim,
            scan_dtype(self_, dtype),
        );
    }
    along("cumprod", self_, dim, scan_dtype(self_, dtype), |l| {
        let mut acc = 1.0;
        for x in l.iter_mut() {
            acc *= *x;
            *x = acc;
        }
    })
}

/// `cumsum`/`cumprod` of a device tensor: the device's scan loop along `dim` (a reduction loop
/// that writes an output laid out like its contiguous input), in the output dtype when it is
/// floating and in int64 (wrapping) otherwise.
fn scan_on_device(
    op: &'static str,
    kernel: &'static crate::native::stub::ReduceKernel,
    t: &Tensor,
    dim: i64,
    out: ScalarType,
) -> Result<Tensor> {
    if out.is_complex() || out == ScalarType::Bool {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype: out });
    }
    let work = if out.is_floating_point() { out } else { ScalarType::I64 };
    convert(&along_on_device(op, kernel, t, dim, work)?, out)
}

/// Runs the device reduction loop `kernel` that writes an output laid out like its input
/// (softmax, the scans) along `dim` of `t` converted to `dtype` and made contiguous.
fn along_on_device(
    op: &'static str,
    kernel: &'static crate::native::stub::ReduceKernel,
    t: &Tensor,
    dim: i64,
    dtype: ScalarType,
) -> Result<Tensor> {
    let src = crate::ops::contiguous(&convert(t, dtype)?, c10::MemoryFormat::Contiguous)?;
    let mut red = vec![false; src.dim()];
    if src.dim() > 0 {
        red[wrap_dim(op, dim, src.dim())?] = true;
    } else {
        wrap_dim(op, dim, 0)?;
    }
    let y = Tensor::empty_uninit(src.sizes(), dtype, src.device())?;
    crate::native::stub::run_reduction(op, kernel, &src, &red, &[&y])?;
    Ok(y)
}

fn softmax_impl(op: &'static str, t: &Tensor, dim: i64, dtype: Option<ScalarType>, log: bool) -> Result<Tensor> {
    let out = dtype.unwrap_or(t.dtype());
    if !out.is_floating_point() {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype: out });
    }
    if !t.device().is_cpu() {
        return along_on_device(
            op,
            if log { crate::device_kernel!(reduce "log_softmax") } else { crate::device_kernel!(reduce "softmax") },
            t,
            dim,
            out,
        );
    }
    if let Some(r) = fast_softmax(op, t, dim, out, log)? {
        return Ok(r);
    }
    along(op, t, dim, out, |l| {
        let m = l.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = l.iter().map(|x| (x - m).exp()).sum();
        for x in l.iter_mut() {
            *x = if log { *x - m - s.ln() } else { (*x - m).exp() / s };
        }
    })
}

/// Softmax of a contiguous f32 tensor along its last dimension, row-parallel on the vectorised
/// kernels of `cpu::vec`; `None` for other layouts and dtypes (the reference path).
fn fast_softmax(op: &'static str, t: &Tensor, dim: i64, out: ScalarType, log: bool) -> Result<Option<Tensor>> {
    let n = t.dim();
    if t.dtype() != ScalarType::F32 || out != ScalarType::F32 || n == 0 || !t.is_contiguous() {
        return Ok(None);
    }
    if wrap_dim(op, dim, n)? != n - 1 || t.numel() == 0 {
        return Ok(None);
    }
    let len = t.sizes()[n - 1] as usize;
    let total = t.numel() as usize;
    let y = Tensor::empty_uninit(t.sizes(), ScalarType::F32, t.device())?;
    // SAFETY: both tensors are contiguous f32 with `total` elements; `y` is fresh, so the two
    // slices do not overlap, and the row kernels write every element of `y` before reading it.
    let (xs, ys) = unsafe {
        (
            std::slice::from_raw_parts(t.typed_data_ptr::<f32>()? as *const f32, total),
            std::slice::from_raw_parts_mut(y.typed_data_ptr::<f32>()?, total),
        )
    };
    let rows_per_task = (SUM_BLOCK / len.max(1)).max(1) * len;
    crate::parallel::for_each_chunk_mut(ys, rows_per_task, |c, yb| {
        let xb = &xs[c * rows_per_task..c * rows_per_task + yb.len()];
        for (xr, yr) in xb.chunks(len).zip(yb.chunks_mut(len)) {
            if log {
                crate::native::cpu::vec::log_softmax_row_f32(xr, yr);
            } else {
                crate::native::cpu::vec::softmax_row_f32(xr, yr);
            }
        }
    });
    Ok(Some(y))
}

/// `softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor`
pub fn softmax(self_: &Tensor, dim: i64, dtype: Option<ScalarType>) -> Result<Tensor> {
    softmax_impl("softmax", self_, dim, dtype, false)
}
/// `log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor`
pub fn log_softmax(self_: &Tensor, dim: i64, dtype: Option<ScalarType>) -> Result<Tensor> {
    softmax_impl("log_softmax", self_, dim, dtype, true)
}

/// `var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)`
pub fn var_mean_correction(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<(Tensor, Tensor)> {
    let v = var_std("var_mean", self_, dim, correction, keepdim, false)?;
    Ok((v, mean_impl(self_, dim, keepdim, None)?))
}
/// `std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)`
pub fn std_mean_correction(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<(Tensor, Tensor)> {
    let s = var_std("std_mean", self_, dim, correction, keepdim, true)?;
    Ok((s, mean_impl(self_, dim, keepdim, None)?))
}
/// `var_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)`
pub fn var_mean(self_: &Tensor, unbiased: bool) -> Result<(Tensor, Tensor)> {
    crate::ops::var_mean_correction(self_, None, Some(Scalar::Int(unbiased as i64)), false)
}
/// `var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)`
pub fn var_mean_dim(self_: &Tensor, dim: Option<&[i64]>, unbiased: bool, keepdim: bool) -> Result<(Tensor, Tensor)> {
    crate::ops::var_mean_correction(self_, dim, Some(Scalar::Int(unbiased as i64)), keepdim)
}
/// `std_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)`
pub fn std_mean(self_: &Tensor, unbiased: bool) -> Result<(Tensor, Tensor)> {
    crate::ops::std_mean_correction(self_, None, Some(Scalar::Int(unbiased as i64)), false)
}
/// `std_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)`
pub fn std_mean_dim(self_: &Tensor, dim: Option<&[i64]>, unbiased: bool, keepdim: bool) -> Result<(Tensor, Tensor)> {
    crate::ops::std_mean_correction(self_, dim, Some(Scalar::Int(unbiased as i64)), keepdim)
}
