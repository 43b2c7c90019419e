//! Operators PyTorch defines by composing others (`CompositeImplicitAutograd`) that its OpInfo
//! database exercises: array-API views and stacks, the `*_copy` forms of views, `new_*`
//! factories, and elementwise formulas (`xlogy`, `sinc`, `logaddexp`, ...). Each is written with
//! `ops::` calls, so autograd differentiates through the operators it calls and every backend
//! those operators have runs it. Semantics, defaults and messages follow PyTorch's
//! implementations (`aten/src/ATen/native/*.cpp`); the results are checked against PyTorch by
//! `cargo xtask opinfo`.

use c10::{Device, Error, Layout, MemoryFormat, Result, Scalar, ScalarType};

use crate::native::loss::apply_loss_reduction as reduce;
use crate::{ops, Tensor};

fn one() -> Scalar {
    Scalar::Int(1)
}

/// The default float dtype for integral or bool inputs, else the input's dtype (PyTorch's
/// "integer inputs compute in the default float dtype").
fn float_dtype(t: &Tensor) -> ScalarType {
    if t.dtype().is_floating_point() {
        t.dtype()
    } else {
        ScalarType::default_float()
    }
}

fn to_float(t: &Tensor) -> Result<Tensor> {
    let d = float_dtype(t);
    if d == t.dtype() {
        Ok(t.clone())
    } else {
        ops::to(t, d, false, false, None)
    }
}

/// The size of `t` at `dim` (wrapped); a 0-dim tensor has no dimension to name, as in
/// PyTorch's "Dimension specified as 0 but tensor has no dimensions".
fn size_at(op: &str, t: &Tensor, dim: i64) -> Result<(usize, i64)> {
    if t.dim() == 0 {
        return Err(Error::invalid(op, format!("Dimension specified as {dim} but tensor has no dimensions")));
    }
    let d = crate::wrap_dim(op, dim, t.dim())?;
    Ok((d, t.sizes()[d]))
}

fn scalar_like(t: &Tensor, v: f64) -> Result<Tensor> {
    ops::full(&[], Scalar::Float(v), Some(t.dtype()), None, Some(t.device()), None)
}

// ---- array-API views ---------------------------------------------------------------------------

/// `atleast_1d(Tensor self) -> Tensor`
pub fn atleast_1d(self_: &Tensor) -> Result<Tensor> {
    if self_.dim() == 0 {
        ops::reshape(self_, &[1])
    } else {
        Ok(self_.clone())
    }
}

/// `atleast_2d(Tensor self) -> Tensor`
pub fn atleast_2d(self_: &Tensor) -> Result<Tensor> {
    match self_.dim() {
        0 => ops::reshape(self_, &[1, 1]),
        1 => ops::unsqueeze(self_, 0),
        _ => Ok(self_.clone()),
    }
}

/// `atleast_3d(Tensor self) -> Tensor`: a vector of n becomes `[1, n, 1]`, a matrix `[r, c, 1]`.
pub fn atleast_3d(self_: &Tensor) -> Result<Tensor> {
    match self_.dim() {
        0 => ops::reshape(self_, &[1, 1, 1]),
        1 => ops::unsqueeze(&ops::unsqueeze(self_, 0)?, -1),
        2 => ops::unsqueeze(self_, -1),
        _ => Ok(self_.clone()),
    }
}

/// `atleast_1d.Sequence(Tensor[] tensors) -> Tensor[]`
pub fn atleast_1d_sequence(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
    tensors.iter().map(atleast_1d).collect()
}

/// `atleast_2d.Sequence(Tensor[] tensors) -> Tensor[]`
pub fn atleast_2d_sequence(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
    tensors.iter().map(atleast_2d).collect()
}

/// `atleast_3d.Sequence(Tensor[] tensors) -> Tensor[]`
pub fn atleast_3d_sequence(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
    tensors.iter().map(atleast_3d).collect()
}

/// `mT(Tensor(a) self) -> Tensor(a)`: the last two dimensions swapped.
pub fn mt(self_: &Tensor) -> Result<Tensor> {
    if self_.dim() < 2 {
        return Err(Error::invalid(
            "mT",
            format!("tensor.mT is only supported on matrices or batches of matrices. Got {}-D tensor.", self_.dim()),
        ));
    }
    ops::transpose(self_, -2, -1)
}

/// `mH(Tensor(a) self) -> Tensor(a)`: the conjugate transpose of the last two dimensions (the
/// transpose for real dtypes).
pub fn mh(self_: &Tensor) -> Result<Tensor> {
    if self_.dim() < 2 {
        return Err(Error::invalid(
            "mH",
            format!("tensor.mH is only supported on matrices or batches of matrices. Got {}-D tensor.", self_.dim()),
        ));
    }
    ops::transpose(self_, -2, -1)
}

/// `matrix_H(Tensor(a) self) -> Tensor(a)`: `tensor.H` of a matrix.
pub fn matrix_h(self_: &Tensor) -> Result<Tensor> {
    if self_.dim() != 2 {
        return Err(Error::invalid(
            "matrix_H",
            format!("tensor.H is only supported on matrices (2-D tensors). Got {}-D tensor.", self_.dim()),
        ));
    }
    ops::transpose(self_, 0, 1)
}

/// `numpy_T(Tensor(a) self) -> Tensor(a)`: `tensor.T`, every dimension reversed.
pub fn numpy_t(self_: &Tensor) -> Result<Tensor> {
    let n = self_.dim() as i64;
    let dims: Vec<i64> = (0..n).rev().collect();
    ops::permute(self_, &dims)
}

/// `ravel(Tensor(a) self) -> Tensor(a)`
pub fn ravel(self_: &Tensor) -> Result<Tensor> {
    ops::reshape(self_, &[-1])
}

/// `flipud(Tensor self) -> Tensor`
pub fn flipud(self_: &Tensor) -> Result<Tensor> {
    if self_.dim() < 1 {
        return Err(Error::invalid("flipud", "Input must be >= 1-d."));
    }
    ops::flip(self_, &[0])
}

/// `fliplr(Tensor self) -> Tensor`
pub fn fliplr(self_: &Tensor) -> Result<Tensor> {
    if self_.dim() < 2 {
        return Err(Error::invalid("fliplr", "Input must be >= 2-d."));
    }
    ops::flip(self_, &[1])
}

fn nonempty(op: &str, tensors: &[Tensor]) -> Result<()> {
    if tensors.is_empty() {
        return Err(Error::invalid(op, format!("{op} expects a non-empty TensorList")));
    }
    Ok(())
}

/// `hstack(Tensor[] tensors) -> Tensor`: along dim 0 for vectors, else dim 1.
pub fn hstack(tensors: &[Tensor]) -> Result<Tensor> {
    nonempty("hstack", tensors)?;
    let ts = atleast_1d_sequence(tensors)?;
    let dim = if ts[0].dim() == 1 { 0 } else { 1 };
    ops::cat(&ts, dim)
}

/// `vstack(Tensor[] tensors) -> Tensor`
pub fn vstack(tensors: &[Tensor]) -> Result<Tensor> {
    nonempty("vstack", tensors)?;
    ops::cat(&atleast_2d_sequence(tensors)?, 0)
}

/// `dstack(Tensor[] tensors) -> Tensor`
pub fn dstack(tensors: &[Tensor]) -> Result<Tensor> {
    nonempty("dstack", tensors)?;
    ops::cat(&atleast_3d_sequence(tensors)?, 2)
}

/// `column_stack(Tensor[] tensors) -> Tensor`: vectors (and scalars) become columns.
pub fn column_stack(tensors: &[Tensor]) -> Result<Tensor> {
    nonempty("column_stack", tensors)?;
    let cols = tensors
        .iter()
        .map(|t| if t.dim() <= 1 { ops::reshape(t, &[t.numel(), 1]) } else { Ok(t.clone()) })
        .collect::<Result<Vec<_>>>()?;
    ops::cat(&cols, 1)
}

/// `positive(Tensor(a) self) -> Tensor(a)`: unary `+`, the tensor itself.
pub fn positive(self_: &Tensor) -> Result<Tensor> {
    if self_.dtype() == ScalarType::Bool {
        return Err(Error::invalid("positive", "The `+` operator, on a bool tensor is not supported."));
    }
    Ok(self_.clone())
}

/// `resolve_neg(Tensor(a) self) -> Tensor(a)`: no lazy negation exists here, so the tensor.
pub fn resolve_neg(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

/// `resolve_conj(Tensor(a) self) -> Tensor(a)`: real tensors have no lazy conjugate.
pub fn resolve_conj(self_: &Tensor) -> Result<Tensor> {
    // Conjugation is never lazy here (Note [Complex operands]), so complex tensors too.
    Ok(self_.clone())
}

/// `conj_physical(Tensor self) -> Tensor`: the conjugates; a copy for real dtypes.
pub fn conj_physical(self_: &Tensor) -> Result<Tensor> {
    if self_.dtype().is_complex() {
        return crate::native::complex::conj_physical(self_);
    }
    ops::clone(self_, None)
}

/// `conj(Tensor(a) self) -> Tensor(a)`: a real tensor itself; for a complex one, its
/// conjugates in a new tensor (PyTorch's is a lazy view; see Note [Complex operands]).
pub fn conj(self_: &Tensor) -> Result<Tensor> {
    if self_.dtype().is_complex() {
        return ops::conj_physical(self_);
    }
    Ok(self_.clone())
}

/// `real(Tensor(a) self) -> Tensor(a)`: a view of a complex tensor's real parts; a real tensor
/// is its own real part.
pub fn real(self_: &Tensor) -> Result<Tensor> {
    crate::native::complex::real(self_)
}

/// `imag(Tensor(a) self) -> Tensor(a)`: a view of a complex tensor's imaginary parts.
pub fn imag(self_: &Tensor) -> Result<Tensor> {
    crate::native::complex::imag(self_)
}

/// `isreal(Tensor self) -> Tensor`: true everywhere for real dtypes.
pub fn isreal(self_: &Tensor) -> Result<Tensor> {
    if self_.dtype().is_complex() {
        return crate::native::complex::isreal(self_);
    }
    ops::ones_like(self_, Some(ScalarType::Bool), None, None, None, Some(MemoryFormat::Preserve))
}

/// `broadcast_tensors(Tensor[] tensors) -> Tensor[]`: every tensor expanded to the common shape.
pub fn broadcast_tensors(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
    let mut shape: Vec<i64> = Vec::new();
    for t in tensors {
        shape = crate::native::tensor_iterator::broadcast_shapes("broadcast_tensors", &shape, t.sizes())?.to_vec();
    }
    tensors.iter().map(|t| ops::expand(t, &shape, false)).collect()
}

// ---- copies of views ---------------------------------------------------------------------------

fn copy_of(view: Result<Tensor>) -> Result<Tensor> {
    ops::clone(&view?, Some(MemoryFormat::Contiguous))
}

fn copies_of(views: Result<Vec<Tensor>>) -> Result<Vec<Tensor>> {
    views?.iter().map(|v| ops::clone(v, Some(MemoryFormat::Contiguous))).collect()
}

/// `view_copy(Tensor self, SymInt[] size) -> Tensor`
pub fn view_copy(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
    copy_of(ops::view(self_, size))
}
/// `unsqueeze_copy(Tensor self, int dim) -> Tensor`
pub fn unsqueeze_copy(self_: &Tensor, dim: i64) -> Result<Tensor> {
    copy_of(ops::unsqueeze(self_, dim))
}
/// `unfold_copy(Tensor self, int dimension, int size, int step) -> Tensor`
pub fn unfold_copy(self_: &Tensor, dimension: i64, size: i64, step: i64) -> Result<Tensor> {
    copy_of(ops::unfold(self_, dimension, size, step))
}
/// `unbind_copy.int(Tensor self, int dim=0) -> Tensor[]`
pub fn unbind_copy(self_: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    copies_of(ops::unbind(self_, dim))
}
/// `transpose_copy.int(Tensor self, int dim0, int dim1) -> Tensor`
pub fn transpose_copy(self_: &Tensor, dim0: i64, dim1: i64) -> Result<Tensor> {
    copy_of(ops::transpose(self_, dim0, dim1))
}
/// `permute_copy(Tensor self, int[] dims) -> Tensor`
pub fn permute_copy(self_: &Tensor, dims: &[i64]) -> Result<Tensor> {
    copy_of(ops::permute(self_, dims))
}
/// `expand_copy(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor`
pub fn expand_copy(self_: &Tensor, size: &[i64], implicit: bool) -> Result<Tensor> {
    copy_of(ops::expand(self_, size, implicit))
}
/// `diagonal_copy(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor`
pub fn diagonal_copy(self_: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    copy_of(ops::diagonal(self_, offset, dim1, dim2))
}
/// `as_strided_copy(Tensor self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor`
pub fn as_strided_copy(self_: &Tensor, size: &[i64], stride: &[i64], storage_offset: Option<i64>) -> Result<Tensor> {
    copy_of(ops::as_strided(self_, size, stride, storage_offset))
}
/// `split_with_sizes_copy(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]`
pub fn split_with_sizes_copy(self_: &Tensor, split_sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    copies_of(ops::split_with_sizes(self_, split_sizes, dim))
}
/// `t_copy(Tensor self) -> Tensor`
pub fn t_copy(self_: &Tensor) -> Result<Tensor> {
    copy_of(ops::t(self_))
}
/// `alias_copy(Tensor self) -> Tensor`
pub fn alias_copy(self_: &Tensor) -> Result<Tensor> {
    copy_of(ops::alias(self_))
}
/// `squeeze_copy(Tensor self) -> Tensor`
pub fn squeeze_copy(self_: &Tensor) -> Result<Tensor> {
    copy_of(ops::squeeze(self_))
}
/// `squeeze_copy.dim(Tensor self, int dim) -> Tensor`
pub fn squeeze_copy_dim(self_: &Tensor, dim: i64) -> Result<Tensor> {
    copy_of(ops::squeeze_dim(self_, dim))
}
/// `narrow_copy(Tensor self, int dim, SymInt start, SymInt length) -> Tensor`
pub fn narrow_copy(self_: &Tensor, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    // A sparse tensor has no views to narrow: its own copy (the decomposition stays the
    // operator's only kernel, so dense calls keep their gradient through `narrow`).
    if self_.layout() == c10::Layout::SparseCoo {
        return crate::native::sparse::narrow_copy_sparse(self_, dim, start, length);
    }
    copy_of(ops::narrow(self_, dim, start, length))
}

// ---- new_* factories ---------------------------------------------------------------------------

/// `new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor`
pub fn new_zeros(
    self_: &Tensor,
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    ops::zeros(size, Some(dtype.unwrap_or(self_.dtype())), layout, Some(device.unwrap_or(self_.device())), pin_memory)
}

/// `new_ones(Tensor self, SymInt[] size, *, ...) -> Tensor`
pub fn new_ones(
    self_: &Tensor,
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let (dtype, device) = (Some(dtype.unwrap_or(self_.dtype())), Some(device.unwrap_or(self_.device())));
    ops::full(size, one(), dtype, layout, device, pin_memory)
}

/// `new_empty(Tensor self, SymInt[] size, *, ...) -> Tensor`
pub fn new_empty(
    self_: &Tensor,
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let (dtype, device) = (Some(dtype.unwrap_or(self_.dtype())), Some(device.unwrap_or(self_.device())));
    ops::empty(size, dtype, layout, device, pin_memory, None)
}

/// `new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ...) -> Tensor`
#[allow(clippy::too_many_arguments)]
pub fn new_full(
    self_: &Tensor,
    size: &[i64],
    fill_value: Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let (dtype, device) = (Some(dtype.unwrap_or(self_.dtype())), Some(device.unwrap_or(self_.device())));
    ops::full(size, fill_value, dtype, layout, device, pin_memory)
}

/// `new_empty_strided(Tensor self, SymInt[] size, SymInt[] stride, *, ...) -> Tensor`
#[allow(clippy::too_many_arguments)]
pub fn new_empty_strided(
    self_: &Tensor,
    size: &[i64],
    stride: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let (dtype, device) = (Some(dtype.unwrap_or(self_.dtype())), Some(device.unwrap_or(self_.device())));
    ops::empty_strided(size, stride, dtype, layout, device, pin_memory)
}

/// `empty_permuted(SymInt[] size, int[] physical_layout, *, ...) -> Tensor`: allocated in the
/// order `physical_layout` names (outermost first), viewed in the logical order.
pub fn empty_permuted(
    size: &[i64],
    physical_layout: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let n = size.len();
    let mut seen = vec![false; n];
    let valid = physical_layout.len() == n
        && physical_layout.iter().all(|&d| {
            let ok = d >= 0 && (d as usize) < n && !seen[d as usize];
            if ok {
                seen[d as usize] = true;
            }
            ok
        });
    if !valid {
        return Err(Error::invalid(
            "empty_permuted",
            format!("Dimension mismatch or invalid permutation: size {size:?}, physical_layout {physical_layout:?}"),
        ));
    }
    let physical: Vec<i64> = physical_layout.iter().map(|&d| size[d as usize]).collect();
    let t = ops::empty(&physical, dtype, layout, device, pin_memory, None)?;
    let mut inverse = vec![0i64; n];
    for (i, &d) in physical_layout.iter().enumerate() {
        inverse[d as usize] = i as i64;
    }
    ops::permute(&t, &inverse)
}

/// `scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor`
pub fn scalar_tensor(
    s: Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    ops::full(&[], s, Some(dtype.unwrap_or(ScalarType::default_float())), layout, device, pin_memory)
}

// ---- elementwise formulas ----------------------------------------------------------------------

/// `min.other(Tensor self, Tensor other) -> Tensor`: `minimum`.
pub fn min_other(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    ops::minimum(self_, other)
}

/// `max.other(Tensor self, Tensor other) -> Tensor`: `maximum`.
pub fn max_other(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    ops::maximum(self_, other)
}

/// `rad2deg(Tensor self) -> Tensor`
pub fn rad2deg(self_: &Tensor) -> Result<Tensor> {
    ops::mul_scalar(&to_float(self_)?, Scalar::Float(180.0 / std::f64::consts::PI))
}

/// `deg2rad(Tensor self) -> Tensor`
pub fn deg2rad(self_: &Tensor) -> Result<Tensor> {
    ops::mul_scalar(&to_float(self_)?, Scalar::Float(std::f64::consts::PI / 180.0))
}

/// `signbit(Tensor self) -> Tensor`: the sign bit (set for -0.0 and negative NaNs).
pub fn signbit(self_: &Tensor) -> Result<Tensor> {
    match self_.dtype() {
        ScalarType::Bool => ops::zeros_like(self_, Some(ScalarType::Bool), None, None, None, None),
        d if d.is_floating_point() => {
            let ones = ops::ones_like(self_, None, None, None, None, None)?;
            ops::lt_scalar(&ops::copysign(&ones, self_)?, Scalar::Int(0))
        }
        _ => ops::lt_scalar(self_, Scalar::Int(0)),
    }
}

/// `logaddexp(Tensor self, Tensor other) -> Tensor`: `log(exp(a) + exp(b))` as
/// `max + log1p(exp(-|a - b|))`; equal infinities give themselves.
pub fn logaddexp(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    logaddexp_impl(self_, other, false)
}

/// `logaddexp2(Tensor self, Tensor other) -> Tensor`: base 2.
pub fn logaddexp2(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    logaddexp_impl(self_, other, true)
}

fn logaddexp_impl(a: &Tensor, b: &Tensor, base2: bool) -> Result<Tensor> {
    let (a, b) = (to_float(a)?, to_float(b)?);
    let m = ops::maximum(&a, &b)?;
    let same_inf = ops::logical_and(&ops::isinf(&a)?, &ops::eq(&a, &b)?)?;
    // Where both are the same infinity the difference is NaN; it is replaced before use.
    let d = ops::abs(&ops::sub(&a, &b, one())?)?;
    let d = ops::masked_fill(&d, &same_inf, Scalar::Int(0))?;
    let tail = if base2 {
        ops::div_scalar(&ops::log1p(&ops::exp2(&ops::neg(&d)?)?)?, Scalar::Float(std::f64::consts::LN_2))?
    } else {
        ops::log1p(&ops::exp(&ops::neg(&d)?)?)?
    };
    ops::where_self(&same_inf, &a, &ops::add(&m, &tail, one())?)
}

/// `sinc(Tensor self) -> Tensor`: `sin(pi x) / (pi x)`, 1 at 0 (with a zero derivative there).
pub fn sinc(self_: &Tensor) -> Result<Tensor> {
    let x = to_float(self_)?;
    let zero = ops::eq_scalar(&x, Scalar::Int(0))?;
    // x is replaced by 1 where it is 0, so neither branch divides 0 by 0 (in forward or backward).
    let safe = ops::masked_fill(&x, &zero, one())?;
    let px = ops::mul_scalar(&safe, Scalar::Float(std::f64::consts::PI))?;
    let v = ops::div(&ops::sin(&px)?, &px)?;
    ops::masked_fill(&v, &zero, one())
}

fn xlogy_impl(x: &Tensor, y: &Tensor, log1p: bool) -> Result<Tensor> {
    let dtype = crate::native::tensor_iterator::binary_result_dtype(x, y);
    let dtype = if dtype.is_floating_point() { dtype } else { ScalarType::default_float() };
    let shape = crate::native::tensor_iterator::broadcast_shapes("xlogy", x.sizes(), y.sizes())?;
    let x = ops::expand(&ops::to(x, dtype, false, false, None)?, &shape, false)?;
    let y = ops::expand(&ops::to(y, dtype, false, false, None)?, &shape, false)?;
    let zero = ops::eq_scalar(&x, Scalar::Int(0))?;
    // y is replaced where x is 0, so log(0) never meets 0 (in forward or backward).
    let safe_y = ops::masked_fill(&y, &zero, Scalar::Int(if log1p { 0 } else { 1 }))?;
    let l = if log1p { ops::log1p(&safe_y)? } else { ops::log(&safe_y)? };
    let v = ops::mul(&x, &l)?;
    let v = ops::masked_fill(&v, &zero, Scalar::Int(0))?;
    ops::masked_fill(&v, &ops::isnan(&y)?, Scalar::Float(f64::NAN))
}

/// `xlogy.Tensor(Tensor self, Tensor other) -> Tensor`: `x * log(y)`, 0 where `x == 0` (unless
/// `y` is NaN).
pub fn xlogy(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    xlogy_impl(self_, other, false)
}
/// `xlogy.Scalar_Self(Scalar self, Tensor other) -> Tensor`
pub fn xlogy_scalar_self(self_: Scalar, other: &Tensor) -> Result<Tensor> {
    xlogy_impl(&Tensor::wrapped_scalar(self_), other, false)
}
/// `xlogy.Scalar_Other(Tensor self, Scalar other) -> Tensor`
pub fn xlogy_scalar_other(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    xlogy_impl(self_, &Tensor::wrapped_scalar(other), false)
}
/// `special_xlog1py(Tensor self, Tensor other) -> Tensor`: `x * log1p(y)`, 0 where `x == 0`.
pub fn special_xlog1py(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    xlogy_impl(self_, other, true)
}
/// `special_xlogy(Tensor self, Tensor other) -> Tensor`
pub fn special_xlogy(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    xlogy_impl(self_, other, false)
}

/// `heaviside(Tensor self, Tensor values) -> Tensor`: 0 below zero, 1 above, `values` at zero.
pub fn heaviside(self_: &Tensor, values: &Tensor) -> Result<Tensor> {
    if self_.dtype() != values.dtype() {
        return Err(Error::invalid("heaviside", "heaviside is not yet implemented for tensors with different dtypes"));
    }
    let step = ops::to(&ops::gt_scalar(self_, Scalar::Int(0))?, self_.dtype(), false, false, None)?;
    ops::where_self(&ops::eq_scalar(self_, Scalar::Int(0))?, values, &step)
}

/// `float_power.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor`: `pow` in float64.
pub fn float_power_tensor_tensor(self_: &Tensor, exponent: &Tensor) -> Result<Tensor> {
    let d = ScalarType::F64;
    ops::pow(&ops::to(self_, d, false, false, None)?, &ops::to(exponent, d, false, false, None)?)
}
/// `float_power.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor`
pub fn float_power_tensor_scalar(self_: &Tensor, exponent: Scalar) -> Result<Tensor> {
    let d = ScalarType::F64;
    ops::pow_tensor_scalar(&ops::to(self_, d, false, false, None)?, Scalar::Float(exponent.to_f64()))
}
/// `float_power.Scalar(Scalar self, Tensor exponent) -> Tensor`
pub fn float_power_scalar(self_: Scalar, exponent: &Tensor) -> Result<Tensor> {
    let d = ScalarType::F64;
    ops::pow_scalar(Scalar::Float(self_.to_f64()), &ops::to(exponent, d, false, false, None)?)
}

/// `ldexp.Tensor(Tensor self, Tensor other) -> Tensor`: `self * 2^other`.
pub fn ldexp(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    ops::mul(self_, &ops::pow_scalar(Scalar::Float(2.0), other)?)
}

/// `isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> Tensor`
pub fn isclose(self_: &Tensor, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<Tensor> {
    if self_.dtype() != other.dtype() {
        return Err(Error::invalid(
            "isclose",
            format!("{} did not match {}", self_.dtype().cpp_name(), other.dtype().cpp_name()),
        ));
    }
    if rtol < 0.0 {
        return Err(Error::invalid("isclose", format!("rtol must be greater than or equal to zero, but got {rtol}")));
    }
    if atol < 0.0 {
        return Err(Error::invalid("isclose", format!("atol must be greater than or equal to zero, but got {atol}")));
    }
    let mut close = ops::eq(self_, other)?;
    if self_.dtype() == ScalarType::Bool {
        return Ok(close);
    }
    if equal_nan && self_.dtype().is_floating_point() {
        close = ops::logical_or(&close, &ops::logical_and(&ops::isnan(self_)?, &ops::isnan(other)?)?)?;
    }
    // The error is measured in floating point (integers in the default float dtype).
    let (a, b) = (to_float(self_)?, to_float(other)?);
    let allowed = ops::add_scalar(&ops::abs(&ops::mul_scalar(&b, Scalar::Float(rtol))?)?, Scalar::Float(atol), one())?;
    let actual = ops::abs(&ops::sub(&a, &b, one())?)?;
    let within = ops::logical_and(&ops::isfinite(&actual)?, &ops::le(&actual, &allowed)?)?;
    ops::logical_or(&close, &within)
}

/// `hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor`: 0 inside `[-lambd, lambd]`.
pub fn hardshrink(self_: &Tensor, lambd: Scalar) -> Result<Tensor> {
    let l = lambd.to_f64();
    let inside =
        ops::logical_and(&ops::ge_scalar(self_, Scalar::Float(-l))?, &ops::le_scalar(self_, Scalar::Float(l))?)?;
    ops::masked_fill(self_, &inside, Scalar::Int(0))
}

/// `softshrink(Tensor self, Scalar lambd=0.5) -> Tensor`: moves values toward 0 by `lambd`.
pub fn softshrink(self_: &Tensor, lambd: Scalar) -> Result<Tensor> {
    let l = lambd.to_f64();
    if l < 0.0 {
        return Err(Error::invalid(
            "softshrink",
            format!("lambda must be greater or equal to 0, but found to be {l}."),
        ));
    }
    let above = ops::gt_scalar(self_, Scalar::Float(l))?;
    let below = ops::lt_scalar(self_, Scalar::Float(-l))?;
    let zero = ops::zeros_like(self_, None, None, None, None, None)?;
    let down = ops::sub_scalar(self_, Scalar::Float(l), one())?;
    let up = ops::add_scalar(self_, Scalar::Float(l), one())?;
    ops::where_self(&above, &down, &ops::where_self(&below, &up, &zero)?)
}

// ---- reductions ------------------------------------------------------------------------------

/// `prod(Tensor self, *, ScalarType? dtype=None) -> Tensor`: of every element.
pub fn prod_all(self_: &Tensor, dtype: Option<ScalarType>) -> Result<Tensor> {
    ops::prod(&ops::reshape(self_, &[-1])?, 0, false, dtype)
}

/// `var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor`
pub fn var_dim(self_: &Tensor, dim: Option<&[i64]>, unbiased: bool, keepdim: bool) -> Result<Tensor> {
    ops::var(self_, dim, Some(Scalar::Int(i64::from(unbiased))), keepdim)
}
/// `var(Tensor self, bool unbiased=True) -> Tensor`
pub fn var_all(self_: &Tensor, unbiased: bool) -> Result<Tensor> {
    ops::var(self_, None, Some(Scalar::Int(i64::from(unbiased))), false)
}
/// `std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor`
pub fn std_dim(self_: &Tensor, dim: Option<&[i64]>, unbiased: bool, keepdim: bool) -> Result<Tensor> {
    ops::std(self_, dim, Some(Scalar::Int(i64::from(unbiased))), keepdim)
}
/// `std(Tensor self, bool unbiased=True) -> Tensor`
pub fn std_all(self_: &Tensor, unbiased: bool) -> Result<Tensor> {
    ops::std(self_, None, Some(Scalar::Int(i64::from(unbiased))), false)
}

/// `nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor`
pub fn nansum(self_: &Tensor, dim: Option<&[i64]>, keepdim: bool, dtype: Option<ScalarType>) -> Result<Tensor> {
    let x = if self_.dtype().is_floating_point() {
        ops::masked_fill(self_, &ops::isnan(self_)?, Scalar::Int(0))?
    } else {
        self_.clone()
    };
    ops::sum_dim_intlist(&x, dim, keepdim, dtype)
}

/// `nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor`
pub fn nanmean(self_: &Tensor, dim: Option<&[i64]>, keepdim: bool, dtype: Option<ScalarType>) -> Result<Tensor> {
    if !self_.dtype().is_floating_point() {
        return Err(Error::invalid(
            "nanmean",
            format!(
                "nanmean(): expected input to have floating point or complex dtype but got {}",
                self_.dtype().cpp_name()
            ),
        ));
    }
    let count = ops::sum_dim_intlist(&ops::logical_not(&ops::isnan(self_)?)?, dim, keepdim, None)?;
    ops::div(&nansum(self_, dim, keepdim, dtype)?, &count)
}

/// `aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)`
pub fn aminmax(self_: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<(Tensor, Tensor)> {
    match dim {
        Some(d) => Ok((ops::amin(self_, &[d], keepdim)?, ops::amax(self_, &[d], keepdim)?)),
        None => {
            if self_.numel() == 0 {
                return Err(Error::invalid(
                    "aminmax",
                    "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.",
                ));
            }
            let (lo, hi) = (ops::amin(self_, &[], false)?, ops::amax(self_, &[], false)?);
            if keepdim {
                let ones = vec![1i64; self_.dim()];
                Ok((ops::reshape(&lo, &ones)?, ops::reshape(&hi, &ones)?))
            } else {
                Ok((lo, hi))
            }
        }
    }
}

/// `logcumsumexp(Tensor self, int dim) -> Tensor`: `log(cumsum(exp(x)))` shifted by the
/// maximum along `dim` (infinite maxima shift by 0).
pub fn logcumsumexp(self_: &Tensor, dim: i64) -> Result<Tensor> {
    let x = to_float(self_)?;
    if x.dim() == 0 {
        return Ok(x);
    }
    if x.numel() == 0 {
        return Ok(x);
    }
    let m = ops::amax(&x, &[dim], true)?;
    let m = ops::masked_fill(&m, &ops::logical_not(&ops::isfinite(&m)?)?, Scalar::Int(0))?;
    let s = ops::cumsum(&ops::exp(&ops::sub(&x, &m, one())?)?, dim, None)?;
    ops::add(&ops::log(&s)?, &m, one())
}

/// `trace(Tensor self) -> Tensor`: the sum of the main diagonal of a matrix.
pub fn trace(self_: &Tensor) -> Result<Tensor> {
    if self_.dim() != 2 {
        return Err(Error::invalid(
            "trace",
            format!("trace: expected a matrix, but got tensor with dim {}", self_.dim()),
        ));
    }
    ops::sum(&ops::diagonal(self_, 0, 0, 1)?, None)
}

/// `sum_to_size(Tensor self, SymInt[] size) -> Tensor`: sums the broadcast dimensions away.
pub fn sum_to_size(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
    if size.is_empty() {
        // PyTorch's `sum_to` of an empty shape is `sum()` (integers promote to int64).
        return ops::sum(self_, None);
    }
    let s = self_.sizes();
    let ok =
        size.len() <= s.len() && size.iter().rev().zip(s.iter().rev()).all(|(&want, &have)| want == have || want == 1);
    if !ok {
        return Err(Error::invalid("sum_to_size", format!("size {{{size:?}}} is not expandable to size {{{s:?}}}.")));
    }
    let lead = s.len() - size.len();
    let mut dims: Vec<i64> = (0..lead as i64).collect();
    for (i, &want) in size.iter().enumerate() {
        if want == 1 && s[lead + i] != 1 {
            dims.push((lead + i) as i64);
        }
    }
    if dims.is_empty() {
        return Ok(self_.clone());
    }
    let r = ops::sum_dim_intlist(self_, Some(&dims), true, None)?;
    ops::reshape(&r, size)
}

// ---- products and distances ------------------------------------------------------------------

/// `inner(Tensor self, Tensor other) -> Tensor`: contracts the last dimensions.
pub fn inner(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    if self_.dim() == 0 || other.dim() == 0 {
        return ops::mul(self_, other);
    }
    let (a, b) = (self_.sizes()[self_.dim() - 1], other.sizes()[other.dim() - 1]);
    if a != b {
        return Err(Error::shape(
            "inner",
            format!(
                "inner() the last dimension must match on both input tensors but got shapes {:?} and {:?}",
                self_.sizes(),
                other.sizes()
            ),
        ));
    }
    ops::tensordot(self_, other, &[-1], &[-1])
}

fn scaled(t: &Tensor, s: Scalar) -> Result<Tensor> {
    if s.to_f64() == 1.0 {
        Ok(t.clone())
    } else {
        ops::mul_scalar(t, s)
    }
}

/// `beta * self + alpha * product`, with `beta == 0` ignoring `self` (NaN included). For integer
/// tensors the coefficients are first converted to the integer type (truncated), as PyTorch's
/// kernels do.
fn beta_alpha(self_: &Tensor, product: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    let integral = !product.dtype().is_floating_point() && product.dtype() != ScalarType::Bool;
    let (beta, alpha) =
        if integral { (Scalar::Int(beta.to_f64() as i64), Scalar::Int(alpha.to_f64() as i64)) } else { (beta, alpha) };
    let p = scaled(product, alpha)?;
    if beta.to_f64() == 0.0 {
        let shape = crate::native::tensor_iterator::broadcast_shapes("addmv", self_.sizes(), p.sizes())?;
        return ops::expand(&p, &shape, false).and_then(|e| ops::clone(&e, None));
    }
    ops::add(&scaled(self_, beta)?, &p, one())
}

/// `addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor`
pub fn addmv(self_: &Tensor, mat: &Tensor, vec: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    beta_alpha(self_, &ops::mv(mat, vec)?, beta, alpha)
}

/// `addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor`
pub fn addr(self_: &Tensor, vec1: &Tensor, vec2: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    if vec1.dim() != 1 || vec2.dim() != 1 {
        return Err(Error::shape(
            "addr",
            format!(
                "addr: Expected 1-D argument vec1, but got {}-D",
                if vec1.dim() != 1 { vec1.dim() } else { vec2.dim() }
            ),
        ));
    }
    let outer = ops::outer(vec1, vec2)?;
    if self_.dtype() == ScalarType::Bool {
        // Booleans: `beta && self || alpha && outer`.
        let o = if alpha.to_f64() != 0.0 { outer } else { ops::zeros_like(&outer, None, None, None, None, None)? };
        return if beta.to_f64() != 0.0 { ops::logical_or(self_, &o) } else { Ok(o) };
    }
    beta_alpha(self_, &outer, beta, alpha)
}

/// `linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor`
pub fn linalg_cross(self_: &Tensor, other: &Tensor, dim: i64) -> Result<Tensor> {
    if self_.dim() != other.dim() {
        return Err(Error::shape(
            "linalg_cross",
            format!(
                "linalg.cross: inputs must have the same number of dimensions. Got {} and {}",
                self_.dim(),
                other.dim()
            ),
        ));
    }
    let shape = crate::native::tensor_iterator::broadcast_shapes("linalg_cross", self_.sizes(), other.sizes())?;
    if shape.is_empty() {
        return Err(Error::invalid(
            "linalg_cross",
            format!("Dimension specified as {dim} but tensor has no dimensions"),
        ));
    }
    let d = crate::wrap_dim("linalg_cross", dim, shape.len())?;
    if shape[d] != 3 {
        return Err(Error::shape(
            "linalg_cross",
            format!(
                "linalg.cross: inputs dimension {dim} must have length 3. Got {} and {}",
                self_.sizes()[d],
                other.sizes()[d]
            ),
        ));
    }
    let a = ops::expand(self_, &shape, false)?;
    let b = ops::expand(other, &shape, false)?;
    let c = |t: &Tensor, i: i64| ops::narrow(t, d as i64, i, 1);
    let part = |i: i64, j: i64| -> Result<Tensor> {
        ops::sub(&ops::mul(&c(&a, i)?, &c(&b, j)?)?, &ops::mul(&c(&a, j)?, &c(&b, i)?)?, one())
    };
    ops::cat(&[part(1, 2)?, part(2, 0)?, part(0, 1)?], d as i64)
}

/// `cross(Tensor self, Tensor other, int? dim=None) -> Tensor`: without `dim`, the first
/// dimension of length 3 (deprecated in PyTorch, kept for compatibility).
pub fn cross(self_: &Tensor, other: &Tensor, dim: Option<i64>) -> Result<Tensor> {
    let dim = match dim {
        Some(d) => d,
        None => {
            let shape = crate::native::tensor_iterator::broadcast_shapes("cross", self_.sizes(), other.sizes())?;
            match shape.iter().position(|&s| s == 3) {
                Some(p) => p as i64,
                None => return Err(Error::shape("cross", "no dimension of size 3 in input")),
            }
        }
    };
    linalg_cross(self_, other, dim)
}

/// `kron(Tensor self, Tensor other) -> Tensor`: the Kronecker product.
pub fn kron(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let n = self_.dim().max(other.dim());
    let pad = |t: &Tensor| -> Vec<i64> {
        let mut s = vec![1i64; n - t.dim()];
        s.extend_from_slice(t.sizes());
        s
    };
    let (sa, sb) = (pad(self_), pad(other));
    let mut a_shape = Vec::with_capacity(2 * n);
    let mut b_shape = Vec::with_capacity(2 * n);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        a_shape.extend([sa[i], 1]);
        b_shape.extend([1, sb[i]]);
        out.push(c10::size::checked_mul("kron", sa[i], sb[i])?);
    }
    let a = ops::reshape(self_, &a_shape)?;
    let b = ops::reshape(other, &b_shape)?;
    ops::reshape(&ops::mul(&a, &b)?, &out)
}

/// `dist(Tensor self, Tensor other, Scalar p=2) -> Tensor`
pub fn dist(self_: &Tensor, other: &Tensor, p: Scalar) -> Result<Tensor> {
    ops::norm(&ops::sub(self_, other, one())?, p)
}

/// `pairwise_distance(Tensor x1, Tensor x2, float p=2, float eps=1e-06, bool keepdim=False) -> Tensor`
pub fn pairwise_distance(x1: &Tensor, x2: &Tensor, p: f64, eps: f64, keepdim: bool) -> Result<Tensor> {
    let out_dim = x1.dim().max(x2.dim());
    let inner = if out_dim == 0 { 0 } else { out_dim as i64 - 1 };
    let diff = ops::add_scalar(&ops::sub(x1, x2, one())?, Scalar::Float(eps), one())?;
    if out_dim == 0 {
        return ops::abs(&diff);
    }
    ops::norm_scalaropt_dim(&diff, Some(Scalar::Float(p)), &[inner], keepdim)
}

/// `cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08) -> Tensor`: each side
/// divided by its norm (clamped below by `eps`), then the dot product along `dim`.
pub fn cosine_similarity(x1: &Tensor, x2: &Tensor, dim: i64, eps: f64) -> Result<Tensor> {
    let shape = crate::native::tensor_iterator::broadcast_shapes("cosine_similarity", x1.sizes(), x2.sizes())?;
    let dtype = crate::native::tensor_iterator::binary_result_dtype(x1, x2);
    let a = ops::to(&ops::expand(x1, &shape, false)?, dtype, false, false, None)?;
    let b = ops::to(&ops::expand(x2, &shape, false)?, dtype, false, false, None)?;
    let na = ops::clamp_min(&ops::norm_scalaropt_dim(&a, Some(Scalar::Int(2)), &[dim], true)?, Scalar::Float(eps))?;
    let nb = ops::clamp_min(&ops::norm_scalaropt_dim(&b, Some(Scalar::Int(2)), &[dim], true)?, Scalar::Float(eps))?;
    ops::sum_dim_intlist(&ops::mul(&ops::div(&a, &na)?, &ops::div(&b, &nb)?)?, Some(&[dim]), false, None)
}

/// `cdist(Tensor x1, Tensor x2, float p=2, int? compute_mode=None) -> Tensor`: the p-norm
/// distance between every row of `x1` and every row of `x2` (batched).
pub fn cdist(x1: &Tensor, x2: &Tensor, p: f64, _compute_mode: Option<i64>) -> Result<Tensor> {
    if x1.dim() < 2 || x2.dim() < 2 {
        return Err(Error::shape(
            "cdist",
            format!(
                "cdist only supports at least 2D tensors, X{} got: {}D",
                if x1.dim() < 2 { 1 } else { 2 },
                x1.dim().min(x2.dim())
            ),
        ));
    }
    let (m1, m2) = (x1.sizes()[x1.dim() - 1], x2.sizes()[x2.dim() - 1]);
    if m1 != m2 {
        return Err(Error::shape(
            "cdist",
            format!("X1 and X2 must have the same number of columns. X1: {m1} X2: {m2}"),
        ));
    }
    if p < 0.0 {
        return Err(Error::invalid("cdist", format!("cdist only supports non-negative p values, got {p}")));
    }
    let diff = ops::sub(&ops::unsqueeze(x1, -2)?, &ops::unsqueeze(x2, -3)?, one())?;
    ops::norm_scalaropt_dim(&diff, Some(Scalar::Float(p)), &[-1], false)
}

/// `pdist(Tensor self, float p=2) -> Tensor`: distances between the rows `i < j`, in row-major
/// order of the pairs.
pub fn pdist(self_: &Tensor, p: f64) -> Result<Tensor> {
    if self_.dim() != 2 {
        return Err(Error::shape("pdist", format!("pdist only supports 2D tensors, got: {}D", self_.dim())));
    }
    if p < 0.0 {
        return Err(Error::invalid("pdist", format!("pdist only supports non-negative p values, got {p}")));
    }
    let n = self_.sizes()[0];
    let pairs = (n as u128) * (n.max(1) as u128 - 1) / 2;
    let _probe: Vec<i64> = c10::size::try_vec(usize::try_from(pairs.saturating_mul(2)).unwrap_or(usize::MAX))?;
    let (mut is, mut js) = (Vec::new(), Vec::new());
    for i in 0..n {
        for j in i + 1..n {
            is.push(i);
            js.push(j);
        }
    }
    let k = is.len() as i64;
    if k == 0 {
        return ops::zeros(&[0], Some(self_.dtype()), None, Some(self_.device()), None);
    }
    let ii = Tensor::from_vec(is, &[k])?.to_device(self_.device())?;
    let jj = Tensor::from_vec(js, &[k])?.to_device(self_.device())?;
    let diff = ops::sub(&ops::index_select(self_, 0, &ii)?, &ops::index_select(self_, 0, &jj)?, one())?;
    ops::norm_scalaropt_dim(&diff, Some(Scalar::Float(p)), &[1], false)
}

// ---- losses ----------------------------------------------------------------------------------

/// `soft_margin_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor`
pub fn soft_margin_loss(self_: &Tensor, target: &Tensor, reduction: i64) -> Result<Tensor> {
    let l = ops::log1p(&ops::exp(&ops::neg(&ops::mul(target, self_)?)?)?)?;
    reduce("soft_margin_loss", l, reduction)
}

/// `hinge_embedding_loss(Tensor self, Tensor target, float margin=1.0, int reduction=Mean) -> Tensor`
pub fn hinge_embedding_loss(self_: &Tensor, target: &Tensor, margin: f64, reduction: i64) -> Result<Tensor> {
    let zeros = ops::zeros_like(self_, None, None, None, None, None)?;
    let margin_clamp = ops::clamp_min(&ops::rsub(self_, Scalar::Float(margin), one())?, Scalar::Int(0))?;
    let out_margin = ops::where_self(&ops::ne_scalar(target, one())?, &margin_clamp, &zeros)?;
    let out_self = ops::where_self(&ops::ne_scalar(target, Scalar::Int(-1))?, self_, &zeros)?;
    reduce("hinge_embedding_loss", ops::add(&out_margin, &out_self, one())?, reduction)
}

/// `poisson_nll_loss(Tensor input, Tensor target, bool log_input, bool full, float eps, int reduction) -> Tensor`
pub fn poisson_nll_loss(
    input: &Tensor,
    target: &Tensor,
    log_input: bool,
    full: bool,
    eps: f64,
    reduction: i64,
) -> Result<Tensor> {
    let mut loss = if log_input {
        ops::sub(&ops::exp(input)?, &ops::mul(target, input)?, one())?
    } else {
        let l = ops::log(&ops::add_scalar(input, Scalar::Float(eps), one())?)?;
        ops::sub(input, &ops::mul(target, &l)?, one())?
    };
    if full {
        // Stirling's approximation of log(target!), for targets above 1.
        let t = target;
        let st = ops::add(
            &ops::sub(&ops::mul(t, &ops::log(t)?)?, t, one())?,
            &ops::mul_scalar(
                &ops::log(&ops::mul_scalar(t, Scalar::Float(2.0 * std::f64::consts::PI))?)?,
                Scalar::Float(0.5),
            )?,
            one(),
        )?;
        let st = ops::masked_fill(&st, &ops::le_scalar(t, one())?, Scalar::Int(0))?;
        loss = ops::add(&loss, &st, one())?;
    }
    reduce("poisson_nll_loss", loss, reduction)
}

// ---- normalisation and shuffles -----------------------------------------------------------------

/// `rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor`:
/// `x / sqrt(mean(x^2) + eps)` over the last `len(normalized_shape)` dimensions, times `weight`;
/// `eps` defaults to the dtype's machine epsilon.
pub fn rms_norm(input: &Tensor, normalized_shape: &[i64], weight: Option<&Tensor>, eps: Option<f64>) -> Result<Tensor> {
    let k = normalized_shape.len();
    let n = input.dim();
    if k == 0 || k > n || input.sizes()[n - k..] != *normalized_shape {
        return Err(Error::shape(
            "rms_norm",
            format!(
                "Given normalized_shape={normalized_shape:?}, expected input with shape [*, {}], but got input of size{:?}",
                normalized_shape.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "),
                input.sizes()
            ),
        ));
    }
    let eps = eps.unwrap_or(match input.dtype() {
        ScalarType::F64 => f64::EPSILON,
        ScalarType::F16 => 0.000_976_562_5,
        ScalarType::BF16 => 0.007_812_5,
        _ => f32::EPSILON as f64,
    });
    let dims: Vec<i64> = ((n - k) as i64..n as i64).collect();
    let ms = ops::mean_dim(&ops::mul(input, input)?, Some(&dims), true, None)?;
    let out = ops::mul(input, &ops::rsqrt(&ops::add_scalar(&ms, Scalar::Float(eps), one())?)?)?;
    match weight {
        Some(w) => ops::mul(&out, w),
        None => Ok(out),
    }
}

/// `channel_shuffle(Tensor self, SymInt groups) -> Tensor`
pub fn channel_shuffle(self_: &Tensor, groups: i64) -> Result<Tensor> {
    if self_.dim() < 3 {
        return Err(Error::shape(
            "channel_shuffle",
            format!(
                "channel_shuffle expects input to have at least 3 dimensions, but got input with {} dimension(s)",
                self_.dim()
            ),
        ));
    }
    if groups <= 0 {
        return Err(Error::invalid(
            "channel_shuffle",
            format!("Number of groups to divide channels in must be positive. Value of groups:{groups}"),
        ));
    }
    let c = self_.sizes()[1];
    if c % groups != 0 {
        return Err(Error::shape(
            "channel_shuffle",
            format!("Number of channels must be divisible by groups. Got {c} channels and {groups} groups."),
        ));
    }
    let s = self_.sizes();
    let mut split = vec![s[0], groups, c / groups];
    split.extend_from_slice(&s[2..]);
    let t = ops::transpose(&ops::reshape(self_, &split)?, 1, 2)?;
    ops::reshape(&ops::clone(&t, Some(MemoryFormat::Contiguous))?, s)
}

// ---- linalg helpers ----------------------------------------------------------------------------

/// `linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor`
pub fn linalg_vector_norm(
    self_: &Tensor,
    ord: Scalar,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<ScalarType>,
) -> Result<Tensor> {
    if !self_.dtype().is_floating_point() {
        return Err(Error::invalid(
            "linalg.vector_norm",
            format!(
                "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
                self_.dtype().cpp_name().trim_start_matches("c10::")
            ),
        ));
    }
    let x = match dtype {
        Some(d) => ops::to(self_, d, false, false, None)?,
        None => self_.clone(),
    };
    let dims: Vec<i64> = dim.map(<[i64]>::to_vec).unwrap_or_default();
    ops::norm_scalaropt_dim(&x, Some(ord), &dims, keepdim)
}

/// `linalg_diagonal(Tensor(a) A, *, int offset=0, int dim1=-2, int dim2=-1) -> Tensor(a)`
pub fn linalg_diagonal(a: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    ops::diagonal(a, offset, dim1, dim2)
}

// ---- building tensors from tensors ---------------------------------------------------------------

/// `diagflat(Tensor self, int offset=0) -> Tensor`
pub fn diagflat(self_: &Tensor, offset: i64) -> Result<Tensor> {
    ops::diag(&ops::reshape(self_, &[-1])?, offset)
}

/// `block_diag(Tensor[] tensors) -> Tensor`: the inputs (at most 2-D) along the diagonal, built
/// by padding each with zeros left and right and stacking the rows.
pub fn block_diag(tensors: &[Tensor]) -> Result<Tensor> {
    let mut mats = Vec::with_capacity(tensors.len());
    let mut dtype: Option<ScalarType> = None;
    for (i, t) in tensors.iter().enumerate() {
        if t.dim() > 2 {
            return Err(Error::shape(
                "block_diag",
                format!(
                    "torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has {} dimensions",
                    t.dim()
                ),
            ));
        }
        dtype = Some(dtype.map_or(t.dtype(), |d| c10::promote_types(d, t.dtype())));
        mats.push(match t.dim() {
            0 => ops::reshape(t, &[1, 1])?,
            1 => ops::unsqueeze(t, 0)?,
            _ => t.clone(),
        });
    }
    let dtype = dtype.unwrap_or(ScalarType::default_float());
    let total = mats
        .iter()
        .try_fold(0i64, |acc, m| acc.checked_add(m.sizes()[1]))
        .ok_or_else(|| Error::shape("block_diag", "numel: integer multiplication overflow"))?;
    let device = tensors.first().map_or(Device::CPU, Tensor::device);
    let mut rows = Vec::with_capacity(mats.len());
    let mut left = 0;
    for m in &mats {
        let (r, c) = (m.sizes()[0], m.sizes()[1]);
        let z = |w: i64| ops::zeros(&[r, w], Some(dtype), None, Some(device), None);
        let m = ops::to(m, dtype, false, false, None)?;
        rows.push(ops::cat(&[z(left)?, m, z(total - left - c)?], 1)?);
        left += c;
    }
    if rows.is_empty() {
        return ops::zeros(&[0, 0], Some(dtype), None, Some(device), None);
    }
    ops::cat(&rows, 0)
}

/// `cartesian_prod(Tensor[] tensors) -> Tensor`
pub fn cartesian_prod(tensors: &[Tensor]) -> Result<Tensor> {
    for t in tensors {
        if t.dim() != 1 {
            return Err(Error::shape("cartesian_prod", format!("Expect a 1D vector, but got shape {:?}", t.sizes())));
        }
    }
    if tensors.len() == 1 {
        return Ok(tensors[0].clone());
    }
    let grids = ops::meshgrid_indexing(tensors, "ij")?;
    let flat = grids.iter().map(|g| ops::reshape(g, &[-1])).collect::<Result<Vec<_>>>()?;
    ops::stack(&flat, 1)
}

/// `combinations(Tensor self, int r=2, bool with_replacement=False) -> Tensor`: the length-`r`
/// combinations of a vector's elements, in lexicographic order of positions.
pub fn combinations(self_: &Tensor, r: i64, with_replacement: bool) -> Result<Tensor> {
    if self_.dim() != 1 {
        return Err(Error::shape("combinations", format!("Expect a 1D vector, but got shape {:?}", self_.sizes())));
    }
    if r < 0 {
        return Err(Error::invalid("combinations", format!("Expect a non-negative number, but got {r}")));
    }
    if r == 0 {
        return ops::empty(&[0], Some(self_.dtype()), None, Some(self_.device()), None, None);
    }
    let n = self_.sizes()[0];
    // The result has C(n, r) (or C(n + r - 1, r)) rows: counted first, so a huge request is an
    // out-of-memory error rather than a long loop.
    let top = if with_replacement { (n as u128).saturating_add(r as u128).saturating_sub(1) } else { n as u128 };
    let mut count: u128 = 1;
    for i in 0..(r as u128).min(top.saturating_add(1)) {
        count = count.saturating_mul(top - i) / (i + 1);
        if count > u32::MAX as u128 {
            break;
        }
    }
    if (r as u128) > top {
        count = 0;
    }
    if count == 0 {
        // Nothing to enumerate: no per-position state either (r may be huge).
        return ops::empty(&[0, r], Some(self_.dtype()), None, Some(self_.device()), None, None);
    }
    let cells = count.saturating_mul(r as u128);
    let _probe: Vec<i64> = c10::size::try_vec(usize::try_from(cells).unwrap_or(usize::MAX))?;
    let r = r as usize;
    let mut columns: Vec<Vec<i64>> = c10::size::try_vec(r)?;
    columns.resize_with(r, Vec::new);
    let mut idx: Vec<i64> = if with_replacement { vec![0; r] } else { (0..r as i64).collect() };
    let valid = |idx: &[i64]| idx.iter().all(|&i| i < n);
    if n > 0 && valid(&idx) {
        loop {
            for (c, &i) in columns.iter_mut().zip(&idx) {
                c.push(i);
            }
            // The rightmost position that can still advance.
            let mut k = r;
            let mut advanced = false;
            while k > 0 {
                k -= 1;
                let limit = if with_replacement { n - 1 } else { n - (r - k) as i64 };
                if idx[k] < limit {
                    idx[k] += 1;
                    for j in k + 1..r {
                        idx[j] = if with_replacement { idx[k] } else { idx[j - 1] + 1 };
                    }
                    advanced = true;
                    break;
                }
            }
            if !advanced {
                break;
            }
        }
    }
    let count = columns[0].len() as i64;
    if count == 0 {
        return ops::empty(&[0, r as i64], Some(self_.dtype()), None, Some(self_.device()), None, None);
    }
    let cols = columns
        .into_iter()
        .map(|c| ops::index_select(self_, 0, &Tensor::from_vec(c, &[count])?.to_device(self_.device())?))
        .collect::<Result<Vec<_>>>()?;
    ops::stack(&cols, 1)
}

/// `diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor`
pub fn diff(self_: &Tensor, n: i64, dim: i64, prepend: Option<&Tensor>, append: Option<&Tensor>) -> Result<Tensor> {
    if self_.dim() == 0 {
        return Err(Error::invalid("diff", "diff expects input to be at least one-dimensional"));
    }
    if n < 0 {
        return Err(Error::invalid("diff", format!("order must be non-negative but got {n}")));
    }
    let mut parts = Vec::new();
    if let Some(p) = prepend {
        parts.push(p.clone());
    }
    parts.push(self_.clone());
    if let Some(a) = append {
        parts.push(a.clone());
    }
    let mut x = if parts.len() > 1 { ops::cat(&parts, dim)? } else { self_.clone() };
    let d = crate::wrap_dim("diff", dim, x.dim())? as i64;
    if x.numel() == 0 {
        // Each difference only shortens `dim` by one: no need to take them one by one (a long
        // empty dimension would loop as long).
        let len = x.sizes()[d as usize];
        return ops::narrow(&x, d, 0, len.saturating_sub(n).max(0));
    }
    for _ in 0..n {
        let len = x.sizes()[d as usize];
        if len == 0 {
            break;
        }
        let hi = ops::narrow(&x, d, 1, len - 1)?;
        let lo = ops::narrow(&x, d, 0, len - 1)?;
        x = if x.dtype() == ScalarType::Bool { ops::logical_xor(&hi, &lo)? } else { ops::sub(&hi, &lo, one())? };
    }
    Ok(x)
}

fn trapezoid_sum(y: &Tensor, dx: &Tensor, dim: i64) -> Result<Tensor> {
    let (_, len) = size_at("trapezoid", y, dim)?;
    if len == 0 {
        return ops::sum_dim_intlist(y, Some(&[dim]), false, None);
    }
    let s = ops::add(&ops::narrow(y, dim, 1, len - 1)?, &ops::narrow(y, dim, 0, len - 1)?, one())?;
    ops::div_scalar(&ops::sum_dim_intlist(&ops::mul(dx, &s)?, Some(&[dim]), false, None)?, Scalar::Float(2.0))
}

fn spacing(y: &Tensor, x: &Tensor, dim: i64) -> Result<Tensor> {
    if x.dim() == 1 {
        // A 1-D x spaces y along `dim`: its differences shaped to broadcast there.
        let (d, len) = size_at("trapezoid", y, dim)?;
        if x.sizes()[0] != len {
            return Err(Error::shape(
                "trapezoid",
                format!("trapezoid: There must be one `x` value for each sample point, got {} and {len}", x.sizes()[0]),
            ));
        }
        let dx = diff(x, 1, 0, None, None)?;
        let mut shape = vec![1i64; y.dim()];
        shape[d] = (len - 1).max(0);
        return ops::reshape(&dx, &shape);
    }
    diff(x, 1, dim, None, None)
}

/// `trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor`
pub fn trapezoid_x(y: &Tensor, x: &Tensor, dim: i64) -> Result<Tensor> {
    trapezoid_sum(y, &spacing(y, x, dim)?, dim)
}

/// `trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor`
pub fn trapezoid_dx(y: &Tensor, dx: Scalar, dim: i64) -> Result<Tensor> {
    let (_, len) = size_at("trapezoid", y, dim)?;
    if len == 0 {
        return ops::sum_dim_intlist(y, Some(&[dim]), false, None);
    }
    let ends = ops::add(&ops::select(y, dim, 0)?, &ops::select(y, dim, -1)?, one())?;
    let inner = ops::sub(
        &ops::sum_dim_intlist(y, Some(&[dim]), false, None)?,
        &ops::mul_scalar(&ends, Scalar::Float(0.5))?,
        one(),
    )?;
    ops::mul_scalar(&inner, dx)
}

/// `trapz.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor`
pub fn trapz_x(y: &Tensor, x: &Tensor, dim: i64) -> Result<Tensor> {
    trapezoid_x(y, x, dim)
}

/// `trapz.dx(Tensor y, *, float dx=1, int dim=-1) -> Tensor`
pub fn trapz_dx(y: &Tensor, dx: f64, dim: i64) -> Result<Tensor> {
    trapezoid_dx(y, Scalar::Float(dx), dim)
}

fn cumulative_trapezoid_impl(y: &Tensor, dx: &Tensor, dim: i64) -> Result<Tensor> {
    let (_, len) = size_at("cumulative_trapezoid", y, dim)?;
    if len == 0 {
        return ops::narrow(y, dim, 0, 0);
    }
    let s = ops::add(&ops::narrow(y, dim, 1, len - 1)?, &ops::narrow(y, dim, 0, len - 1)?, one())?;
    ops::cumsum(&ops::div_scalar(&ops::mul(dx, &s)?, Scalar::Float(2.0))?, dim, None)
}

/// `cumulative_trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor`
pub fn cumulative_trapezoid_x(y: &Tensor, x: &Tensor, dim: i64) -> Result<Tensor> {
    cumulative_trapezoid_impl(y, &spacing(y, x, dim)?, dim)
}

/// `cumulative_trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor`
pub fn cumulative_trapezoid_dx(y: &Tensor, dx: Scalar, dim: i64) -> Result<Tensor> {
    cumulative_trapezoid_impl(y, &scalar_like(y, dx.to_f64())?, dim)
}

// ---- splitting ---------------------------------------------------------------------------------

/// `tensor_split.sections(Tensor(a -> *) self, SymInt sections, int dim=0) -> Tensor(a)[]`: the
/// first `size % sections` pieces get one element more.
pub fn tensor_split_sections(self_: &Tensor, sections: i64, dim: i64) -> Result<Vec<Tensor>> {
    if self_.dim() == 0 {
        return Err(Error::invalid(
            "tensor_split",
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims",
        ));
    }
    if sections <= 0 {
        return Err(Error::invalid(
            "tensor_split",
            format!("number of sections must be larger than 0, got {sections}"),
        ));
    }
    let d = crate::wrap_dim("tensor_split", dim, self_.dim())?;
    let size = self_.sizes()[d];
    let (base, extra) = (size / sections, size % sections);
    let count = usize::try_from(sections).unwrap_or(usize::MAX);
    let mut out = c10::size::try_vec(count)?;
    let mut start = 0;
    for i in 0..sections {
        let len = base + i64::from(i < extra);
        out.push(ops::slice(self_, d as i64, Some(start), Some(start + len), 1)?);
        start += len;
    }
    Ok(out)
}

/// `tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]`
pub fn tensor_split_indices(self_: &Tensor, indices: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    if self_.dim() == 0 {
        return Err(Error::invalid(
            "tensor_split",
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims",
        ));
    }
    let d = crate::wrap_dim("tensor_split", dim, self_.dim())? as i64;
    let mut out = Vec::with_capacity(indices.len() + 1);
    let mut start = 0i64;
    for &i in indices {
        out.push(ops::slice(self_, d, Some(start), Some(i), 1)?);
        start = i;
    }
    out.push(ops::slice(self_, d, Some(start), None, 1)?);
    Ok(out)
}

/// `tensor_split.tensor_indices_or_sections(Tensor(a -> *) self, Tensor tensor_indices_or_sections, int dim=0) -> Tensor(a)[]`
pub fn tensor_split_tensor(self_: &Tensor, tios: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    if tios.dtype() != ScalarType::I64 || tios.dim() > 1 {
        return Err(Error::invalid(
            "tensor_split",
            format!(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional tensor of dtype long, but got a tensor with {} dims and dtype {}",
                tios.dim(),
                tios.dtype().cpp_name()
            ),
        ));
    }
    let v = tios.to_vec::<i64>()?;
    if tios.dim() == 0 {
        tensor_split_sections(self_, v[0], dim)
    } else {
        tensor_split_indices(self_, &v, dim)
    }
}

/// The `torch.{h,v,d}split` rank requirement.
fn require_dims(op: &str, self_: &Tensor, min_dims: usize) -> Result<()> {
    if self_.dim() < min_dims {
        return Err(Error::invalid(
            op,
            format!(
                "torch.{op} requires a tensor with at least {min_dims} dimension, but got a tensor with {} dimensions!",
                self_.dim()
            ),
        ));
    }
    Ok(())
}

/// `torch.{h,v,d}split(t, sections)`: equal pieces along `dim`.
fn split_even(op: &str, self_: &Tensor, dim: usize, sections: i64, min_dims: usize) -> Result<Vec<Tensor>> {
    require_dims(op, self_, min_dims)?;
    if sections == 0 || self_.sizes()[dim] % sections != 0 {
        return Err(Error::invalid(
            op,
            format!(
                "torch.{op} attempted to split along dimension {dim}, but the size of the dimension {} is not divisible by the split_size {sections}!",
                self_.sizes()[dim]
            ),
        ));
    }
    tensor_split_sections(self_, sections, dim as i64)
}

/// `torch.{h,v,d}split(t, indices)`: pieces between the indices along `dim`.
fn split_at(op: &str, self_: &Tensor, dim: usize, indices: &[i64], min_dims: usize) -> Result<Vec<Tensor>> {
    require_dims(op, self_, min_dims)?;
    tensor_split_indices(self_, indices, dim as i64)
}

/// The dimension `hsplit` splits: 0 for vectors, else 1.
fn hsplit_dim(self_: &Tensor) -> usize {
    if self_.dim() == 1 {
        0
    } else {
        1
    }
}

/// `hsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]`
pub fn hsplit_int(self_: &Tensor, sections: i64) -> Result<Vec<Tensor>> {
    split_even("hsplit", self_, hsplit_dim(self_), sections, 1)
}
/// `vsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]`
pub fn vsplit_int(self_: &Tensor, sections: i64) -> Result<Vec<Tensor>> {
    split_even("vsplit", self_, 0, sections, 2)
}
/// `dsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]`
pub fn dsplit_int(self_: &Tensor, sections: i64) -> Result<Vec<Tensor>> {
    split_even("dsplit", self_, 2, sections, 3)
}
/// `hsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]`
pub fn hsplit_array(self_: &Tensor, indices: &[i64]) -> Result<Vec<Tensor>> {
    split_at("hsplit", self_, hsplit_dim(self_), indices, 1)
}
/// `vsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]`
pub fn vsplit_array(self_: &Tensor, indices: &[i64]) -> Result<Vec<Tensor>> {
    split_at("vsplit", self_, 0, indices, 2)
}
/// `dsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]`
pub fn dsplit_array(self_: &Tensor, indices: &[i64]) -> Result<Vec<Tensor>> {
    split_at("dsplit", self_, 2, indices, 3)
}

/// `unsafe_split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]`
pub fn unsafe_split(self_: &Tensor, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
    ops::split(self_, split_size, dim)
}
/// `unsafe_chunk(Tensor self, int chunks, int dim=0) -> Tensor[]`
pub fn unsafe_chunk(self_: &Tensor, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
    ops::chunk(self_, chunks, dim)
}

// ---- indexing ------------------------------------------------------------------------------------

/// `take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor`
pub fn take_along_dim(self_: &Tensor, indices: &Tensor, dim: Option<i64>) -> Result<Tensor> {
    if !matches!(indices.dtype(), ScalarType::I64 | ScalarType::I32) {
        return Err(Error::invalid(
            "take_along_dim",
            format!("torch.take_along_dim(): dtype of indices should be int64 but got {}", indices.dtype().cpp_name()),
        ));
    }
    // Negative indices count from the end, as in numpy.take_along_axis.
    let wrap = |idx: &Tensor, size: i64| -> Result<Tensor> {
        let shifted = ops::add_scalar(idx, Scalar::Int(size), one())?;
        ops::where_self(&ops::lt_scalar(idx, Scalar::Int(0))?, &shifted, idx)
    };
    let Some(dim) = dim else {
        let flat = ops::reshape(indices, &[-1])?;
        return ops::gather(&ops::reshape(self_, &[-1])?, 0, &wrap(&flat, self_.numel())?, false);
    };
    if self_.dim() != indices.dim() {
        return Err(Error::shape(
            "take_along_dim",
            format!(
                "torch.take_along_dim(): input and indices should have the same number of dimensions, but got {} dimensions for input, and {} dimensions for indices",
                self_.dim(),
                indices.dim()
            ),
        ));
    }
    let (d, _) = size_at("take_along_dim", self_, dim)?;
    // Broadcast every dimension but `dim`.
    let mut a = self_.sizes().to_vec();
    let mut b = indices.sizes().to_vec();
    a[d] = 1;
    b[d] = 1;
    let shape = crate::native::tensor_iterator::broadcast_shapes("take_along_dim", &a, &b)?.to_vec();
    let mut sa = shape.clone();
    sa[d] = self_.sizes()[d];
    let mut sb = shape;
    sb[d] = indices.sizes()[d];
    let idx = wrap(&ops::expand(indices, &sb, false)?, self_.sizes()[d])?;
    ops::gather(&ops::expand(self_, &sa, false)?, d as i64, &idx, false)
}

/// `argwhere(Tensor self) -> Tensor`: `nonzero`.
pub fn argwhere(self_: &Tensor) -> Result<Tensor> {
    ops::nonzero(self_)
}

/// `narrow.Tensor(Tensor(a) self, int dim, Tensor start, SymInt length) -> Tensor(a)`
pub fn narrow_tensor(self_: &Tensor, dim: i64, start: &Tensor, length: i64) -> Result<Tensor> {
    if start.dim() != 0
        || !matches!(
            start.dtype(),
            ScalarType::I64 | ScalarType::I32 | ScalarType::I16 | ScalarType::I8 | ScalarType::U8
        )
    {
        return Err(Error::invalid("narrow", "start must be an 0-dim integral Tensor."));
    }
    ops::narrow(self_, dim, start.to_vec::<i64>()?[0], length)
}

/// `masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)`: the
/// out-of-place result copied into `self` (which the mask must not broadcast).
pub fn masked_fill_scalar_(self_: &Tensor, mask: &Tensor, value: Scalar) -> Result<Tensor> {
    let filled = ops::masked_fill(self_, mask, value)?;
    check_in_place_shape("masked_fill_", self_, &filled)?;
    ops::copy_(self_, &filled, false)
}

/// `masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)`.
pub fn masked_fill_tensor_(self_: &Tensor, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
    let filled = masked_fill_tensor(self_, mask, value)?;
    check_in_place_shape("masked_fill_", self_, &filled)?;
    ops::copy_(self_, &filled, false)
}

fn check_in_place_shape(op: &str, self_: &Tensor, result: &Tensor) -> Result<()> {
    if result.sizes() != self_.sizes() {
        return Err(Error::shape(
            op,
            format!("the result's shape {:?} is not self's {:?}", result.sizes(), self_.sizes()),
        ));
    }
    Ok(())
}

/// `masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor`: `value` is a 0-dim
/// tensor (differentiable).
pub fn masked_fill_tensor(self_: &Tensor, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
    if value.dim() != 0 {
        return Err(Error::invalid(
            "masked_fill",
            format!(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                value.dim()
            ),
        ));
    }
    if mask.dtype() != ScalarType::Bool {
        return Err(Error::invalid(
            "masked_fill",
            format!("masked_fill_ only supports boolean masks, but got mask with dtype {}", mask.dtype().cpp_name()),
        ));
    }
    let v = ops::to(value, self_.dtype(), false, false, None)?;
    let out = ops::where_self(mask, &v, self_)?;
    // The result keeps self's shape (the mask only broadcasts into it).
    if out.sizes() != self_.sizes() {
        return Err(Error::shape(
            "masked_fill",
            format!(
                "The size of the mask {:?} must be broadcastable to the size of self {:?}",
                mask.sizes(),
                self_.sizes()
            ),
        ));
    }
    Ok(out)
}

/// `logspace(Scalar start, Scalar end, int steps, float base=10.0, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor`
#[allow(clippy::too_many_arguments)]
pub fn logspace(
    start: Scalar,
    end: Scalar,
    steps: i64,
    base: f64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let dtype = dtype.unwrap_or(ScalarType::default_float());
    let exps = ops::linspace(start, end, steps, Some(ScalarType::F64), layout, device, pin_memory)?;
    let v = ops::pow_scalar(Scalar::Float(base), &exps)?;
    ops::to(&v, dtype, false, false, None)
}

// ---- second batch: convolution spellings, interpolation, searching, scatters -------------------

/// `_convolution(...)`: `convolution` (the backend flags do not change the result here).
#[allow(clippy::too_many_arguments)]
pub fn _convolution(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
    _benchmark: bool,
    _deterministic: bool,
    _cudnn_enabled: bool,
    _allow_tf32: bool,
) -> Result<Tensor> {
    ops::convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
}

/// `_convolution_mode(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, str padding, SymInt[] dilation, SymInt groups) -> Tensor`
pub fn _convolution_mode(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &str,
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    match weight.dim() {
        3 => ops::conv1d_padding(input, weight, bias, stride, padding, dilation, groups),
        4 => ops::conv2d_padding(input, weight, bias, stride, padding, dilation, groups),
        5 => ops::conv3d_padding(input, weight, bias, stride, padding, dilation, groups),
        d => Err(Error::shape(
            "_convolution_mode",
            format!("Expected 3D, 4D or 5D weight for a convolution with padding=\"{padding}\", but got {d}D"),
        )),
    }
}

/// `upsample_linear1d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor`:
/// bilinear interpolation of the input seen as one row high.
pub fn upsample_linear1d_vec(
    input: &Tensor,
    output_size: Option<&[i64]>,
    align_corners: bool,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    if input.dim() != 3 {
        return Err(Error::shape(
            "upsample_linear1d",
            format!("Expected 3D input (N, C, W), but got input of size {:?}", input.sizes()),
        ));
    }
    let size = output_size.map(|s| [1, s.first().copied().unwrap_or(0)]);
    let scales = scale_factors.map(|s| [1.0, s.first().copied().unwrap_or(1.0)]);
    let x = ops::unsqueeze(input, 2)?;
    let y =
        ops::upsample_bilinear2d(&x, size.as_ref().map(|s| &s[..]), align_corners, scales.as_ref().map(|s| &s[..]))?;
    ops::squeeze_dim(&y, 2)
}

/// `upsample_linear1d(Tensor self, SymInt[1] output_size, bool align_corners, float? scales=None) -> Tensor`
pub fn upsample_linear1d(
    self_: &Tensor,
    output_size: &[i64],
    align_corners: bool,
    _scales: Option<f64>,
) -> Result<Tensor> {
    upsample_linear1d_vec(self_, Some(output_size), align_corners, None)
}

/// `lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor`: `self + w (end - self)`, as
/// `end - (end - self)(1 - w)` for `|w| >= 1/2` (exact at `w == 1`).
pub fn lerp_tensor(self_: &Tensor, end: &Tensor, weight: &Tensor) -> Result<Tensor> {
    let diff = ops::sub(end, self_, one())?;
    let low = ops::add(self_, &ops::mul(weight, &diff)?, one())?;
    let high = ops::sub(end, &ops::mul(&diff, &ops::rsub(weight, one(), one())?)?, one())?;
    ops::where_self(&ops::lt_scalar(&ops::abs(weight)?, Scalar::Float(0.5))?, &low, &high)
}

/// `angle(Tensor self) -> Tensor`: for real numbers, pi below zero and 0 elsewhere (NaN stays).
pub fn angle(self_: &Tensor) -> Result<Tensor> {
    if self_.dtype().is_complex() {
        return crate::native::complex::angle(self_);
    }
    let x = to_float(self_)?;
    let pi = ops::full_like(&x, Scalar::Float(std::f64::consts::PI), None, None, None, None, None)?;
    let zero = ops::zeros_like(&x, None, None, None, None, None)?;
    let a = ops::where_self(&ops::lt_scalar(&x, Scalar::Int(0))?, &pi, &zero)?;
    ops::where_self(&ops::isnan(&x)?, &x, &a)
}

/// `isin.Tensor_Tensor(Tensor elements, Tensor test_elements, *, bool assume_unique=False, bool invert=False) -> Tensor`
pub fn isin(elements: &Tensor, test_elements: &Tensor, _assume_unique: bool, invert: bool) -> Result<Tensor> {
    let test = ops::reshape(test_elements, &[-1])?;
    let eq = ops::eq(&ops::unsqueeze(elements, -1)?, &test)?;
    let found = if test.numel() == 0 {
        ops::zeros_like(elements, Some(ScalarType::Bool), None, None, None, None)?
    } else {
        ops::any_dim(&eq, -1, false)?
    };
    if invert {
        ops::logical_not(&found)
    } else {
        Ok(found)
    }
}

/// The insertion points of `values` into the sorted last dimension of `sorted`: the count of
/// elements below each value (`right`: at or below).
fn insertion_points(sorted: &Tensor, values: &Tensor, right: bool, out_int32: bool) -> Result<Tensor> {
    let (s, v) = if sorted.dim() <= 1 {
        (ops::reshape(sorted, &[-1])?, ops::unsqueeze(values, -1)?)
    } else {
        (ops::unsqueeze(sorted, -2)?, ops::unsqueeze(values, -1)?)
    };
    let below = if right { ops::le(&s, &v)? } else { ops::lt(&s, &v)? };
    let dtype = if out_int32 { ScalarType::I32 } else { ScalarType::I64 };
    if s.numel() == 0 {
        return ops::zeros_like(values, Some(dtype), None, None, None, None);
    }
    ops::sum_dim_intlist(&below, Some(&[-1]), false, Some(dtype))
}

/// `bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor`
pub fn bucketize(self_: &Tensor, boundaries: &Tensor, out_int32: bool, right: bool) -> Result<Tensor> {
    if boundaries.dim() != 1 {
        return Err(Error::shape(
            "bucketize",
            format!("boundaries tensor must be 1 dimension, but got dim({})", boundaries.dim()),
        ));
    }
    insertion_points(boundaries, self_, right, out_int32)
}

/// `searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor`
pub fn searchsorted(
    sorted_sequence: &Tensor,
    self_: &Tensor,
    out_int32: bool,
    right: bool,
    side: Option<&str>,
    sorter: Option<&Tensor>,
) -> Result<Tensor> {
    let right = match side {
        Some("right") => true,
        Some("left") => {
            if right {
                return Err(Error::invalid(
                    "searchsorted",
                    "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True",
                ));
            }
            false
        }
        Some(s) => {
            return Err(Error::invalid(
                "searchsorted",
                format!("torch.searchsorted(): side can only be 'left' or 'right' but got {s}"),
            ))
        }
        None => right,
    };
    let seq = match sorter {
        Some(idx) => ops::gather(sorted_sequence, -1, idx, false)?,
        None => sorted_sequence.clone(),
    };
    if seq.dim() > 1 && seq.sizes()[..seq.dim() - 1] != self_.sizes()[..self_.dim().saturating_sub(1)] {
        return Err(Error::shape(
            "searchsorted",
            format!(
                "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor {:?} and input value tensor {:?}",
                seq.sizes(),
                self_.sizes()
            ),
        ));
    }
    insertion_points(&seq, self_, right, out_int32)
}

/// `msort(Tensor self) -> Tensor`: sorted along dimension 0.
pub fn msort(self_: &Tensor) -> Result<Tensor> {
    Ok(ops::sort(self_, 0, false)?.0)
}

fn reduce_dims_bool(
    self_: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    one_dim: fn(&Tensor, i64, bool) -> Result<Tensor>,
) -> Result<Tensor> {
    let n = self_.dim();
    let mut dims: Vec<usize> = match dim {
        None => (0..n).collect(),
        Some([]) => (0..n).collect(),
        Some(ds) => ds.iter().map(|&d| crate::wrap_dim("any", d, n)).collect::<Result<_>>()?,
    };
    dims.sort_unstable();
    dims.dedup();
    if n == 0 {
        return one_dim(self_, 0, keepdim);
    }
    let mut x = self_.clone();
    // Highest dimension first, so the indices of the others stay valid without keepdim.
    for &d in dims.iter().rev() {
        x = one_dim(&x, d as i64, keepdim)?;
    }
    Ok(x)
}

/// `any.dims(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor`
pub fn any_dims(self_: &Tensor, dim: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    reduce_dims_bool(self_, dim, keepdim, ops::any_dim)
}

/// `all.dims(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor`
pub fn all_dims(self_: &Tensor, dim: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    reduce_dims_bool(self_, dim, keepdim, ops::all_dim)
}

fn index_vec(v: Vec<i64>, device: Device) -> Result<Tensor> {
    let n = v.len() as i64;
    Tensor::from_vec(v, &[n])?.to_device(device)
}

/// `select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor`: `self` with
/// `self.select(dim, index)` replaced by `src` (a functional `index_put`).
pub fn select_scatter(self_: &Tensor, src: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    let (d, size) = size_at("select_scatter", self_, dim)?;
    let d = d as i64;
    let i = if index < 0 { index + size } else { index };
    if i < 0 || i >= size {
        return Err(Error::IndexOutOfRange { op: "select_scatter".into(), index, dim: d, size });
    }
    let moved = ops::movedim(self_, &[d], &[0])?;
    let values = ops::unsqueeze(&ops::to(src, self_.dtype(), false, false, None)?, 0)?;
    let out = ops::index_put(&moved, &[Some(index_vec(vec![i], self_.device())?)], &values, false)?;
    ops::movedim(&out, &[0], &[d])
}

/// `diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor`
pub fn diagonal_scatter(self_: &Tensor, src: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    let diag = ops::diagonal(self_, offset, dim1, dim2)?;
    if diag.sizes() != src.sizes() {
        return Err(Error::shape(
            "diagonal_scatter",
            format!(
                "expected src to have a size equal to the diagonal of the input. Got {:?} for a diagonal of size {:?}.",
                src.sizes(),
                diag.sizes()
            ),
        ));
    }
    let (d1, d2) = (
        crate::wrap_dim("diagonal_scatter", dim1, self_.dim())? as i64,
        crate::wrap_dim("diagonal_scatter", dim2, self_.dim())? as i64,
    );
    let len = diag.sizes()[diag.dim() - 1];
    let rows: Vec<i64> = (0..len).map(|k| k + (-offset).max(0)).collect();
    let cols: Vec<i64> = (0..len).map(|k| k + offset.max(0)).collect();
    let moved = ops::movedim(self_, &[d1, d2], &[0, 1])?;
    let values = ops::movedim(&ops::to(src, self_.dtype(), false, false, None)?, &[-1], &[0])?;
    let idx = [Some(index_vec(rows, self_.device())?), Some(index_vec(cols, self_.device())?)];
    let out = ops::index_put(&moved, &idx, &values, false)?;
    ops::movedim(&out, &[0, 1], &[d1, d2])
}

/// `put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor`: writes
/// `source` at the flat positions `index` (negative ones count from the end).
pub fn put(self_: &Tensor, index: &Tensor, source: &Tensor, accumulate: bool) -> Result<Tensor> {
    if index.numel() != source.numel() {
        return Err(Error::shape(
            "put",
            format!(
                "put_(): Expected source and index to have the same number of elements, but got source.numel() = {}, index.numel() = {}",
                source.numel(),
                index.numel()
            ),
        ));
    }
    let n = self_.numel();
    let flat_idx = ops::reshape(index, &[-1])?;
    let wrapped = ops::where_self(
        &ops::lt_scalar(&flat_idx, Scalar::Int(0))?,
        &ops::add_scalar(&flat_idx, Scalar::Int(n), one())?,
        &flat_idx,
    )?;
    let flat = ops::reshape(self_, &[-1])?;
    let values = ops::to(&ops::reshape(source, &[-1])?, self_.dtype(), false, false, None)?;
    let out = ops::index_put(&flat, &[Some(wrapped)], &values, accumulate)?;
    ops::reshape(&out, self_.sizes())
}

/// `nonzero_static(Tensor self, *, SymInt size, int fill_value=-1) -> Tensor`: `nonzero`
/// truncated or padded with `fill_value` to `size` rows.
pub fn nonzero_static(self_: &Tensor, size: i64, fill_value: i64) -> Result<Tensor> {
    if size < 0 {
        return Err(Error::invalid(
            "nonzero_static",
            format!("nonzero_static: 'size' must be an non-negative integer, got {size}"),
        ));
    }
    let nz = ops::nonzero(self_)?;
    let k = nz.sizes()[0];
    if k >= size {
        return ops::narrow(&nz, 0, 0, size);
    }
    let pad = ops::full(
        &[size - k, self_.dim() as i64],
        Scalar::Int(fill_value),
        Some(ScalarType::I64),
        None,
        Some(self_.device()),
        None,
    )?;
    ops::cat(&[nz, pad], 0)
}

/// `_safe_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor`: softmax, with rows
/// that are entirely -inf giving 0 instead of NaN.
pub fn _safe_softmax(self_: &Tensor, dim: i64, dtype: Option<ScalarType>) -> Result<Tensor> {
    let masked = ops::all_dim(&ops::eq_scalar(self_, Scalar::Float(f64::NEG_INFINITY))?, dim, true)?;
    // Those rows are zeroed before the softmax too, so neither its value nor its gradient is NaN.
    let safe = ops::masked_fill(self_, &masked, Scalar::Int(0))?;
    let s = ops::softmax(&safe, dim, dtype)?;
    ops::masked_fill(&s, &masked, Scalar::Int(0))
}

/// `_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor`
pub fn _softmax_backward_data(
    grad_output: &Tensor,
    output: &Tensor,
    dim: i64,
    input_dtype: ScalarType,
) -> Result<Tensor> {
    let dot = ops::sum_dim_intlist(&ops::mul(grad_output, output)?, Some(&[dim]), true, None)?;
    let g = ops::mul(output, &ops::sub(grad_output, &dot, one())?)?;
    ops::to(&g, input_dtype, false, false, None)
}

/// `native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor`
pub fn native_dropout_backward(grad_output: &Tensor, mask: &Tensor, scale: f64) -> Result<Tensor> {
    let m = ops::to(mask, grad_output.dtype(), false, false, None)?;
    ops::mul_scalar(&ops::mul(grad_output, &m)?, Scalar::Float(scale))
}

/// `bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias) -> Tensor`:
/// `y_o = x1^T W_o x2 + b_o`.
pub fn bilinear(input1: &Tensor, input2: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    if weight.dim() != 3 {
        return Err(Error::shape(
            "bilinear",
            format!("bilinear(): weight must be 3-dimensional, got {}", weight.dim()),
        ));
    }
    // [..., i] x [o, i, j] -> [..., o, j], then the product with x2 summed over j.
    let t = ops::tensordot(input1, weight, &[-1], &[1])?;
    let prod = ops::mul(&t, &ops::unsqueeze(input2, -2)?)?;
    let y = ops::sum_dim_intlist(&prod, Some(&[-1]), false, Some(prod.dtype()))?;
    match bias {
        Some(b) => ops::add(&y, b, one()),
        None => Ok(y),
    }
}

/// `cov(Tensor self, *, int correction=1, Tensor? fweights=None, Tensor? aweights=None) -> Tensor`:
/// the covariance of the rows (variables) of a matrix whose columns are observations.
pub fn cov(self_: &Tensor, correction: i64, fweights: Option<&Tensor>, aweights: Option<&Tensor>) -> Result<Tensor> {
    if self_.dim() > 2 {
        return Err(Error::shape(
            "cov",
            format!(
                "cov(): expected input to have two or fewer dimensions but got an input with {} dimensions",
                self_.dim()
            ),
        ));
    }
    let x = to_float(&if self_.dim() < 2 { ops::reshape(self_, &[1, -1])? } else { self_.clone() })?;
    let n = x.sizes()[1];
    let w = match (fweights, aweights) {
        (Some(f), Some(a)) => Some(ops::mul(&to_float(f)?, &to_float(a)?)?),
        (Some(f), None) => Some(to_float(f)?),
        (None, Some(a)) => Some(to_float(a)?),
        (None, None) => None,
    };
    let (avg, w_sum) = match &w {
        Some(w) => {
            let w_sum = ops::sum(w, None)?;
            let avg = ops::div(&ops::sum_dim_intlist(&ops::mul(&x, w)?, Some(&[1]), false, None)?, &w_sum)?;
            (avg, w_sum)
        }
        None => (ops::mean_dim(&x, Some(&[1]), false, None)?, scalar_like(&x, n as f64)?),
    };
    let norm = match (&w, aweights) {
        (Some(w), Some(a)) => {
            let wa = ops::div(&ops::sum(&ops::mul(w, &to_float(a)?)?, None)?, &w_sum)?;
            ops::sub(&w_sum, &ops::mul_scalar(&wa, Scalar::Int(correction))?, one())?
        }
        _ => ops::sub_scalar(&w_sum, Scalar::Int(correction), one())?,
    };
    let norm = ops::clamp_min(&norm, Scalar::Int(0))?;
    let xm = ops::sub(&x, &ops::unsqueeze(&avg, 1)?, one())?;
    let xw = match &w {
        Some(w) => ops::mul(&xm, w)?,
        None => xm.clone(),
    };
    let c = ops::div(&ops::mm(&xw, &ops::t(&xm)?)?, &norm)?;
    if c.sizes() == [1, 1] {
        return ops::reshape(&c, &[]);
    }
    Ok(c)
}

/// `corrcoef(Tensor self) -> Tensor`: the covariance normalised by the standard deviations,
/// clipped to [-1, 1].
pub fn corrcoef(self_: &Tensor) -> Result<Tensor> {
    let c = cov(self_, 1, None, None)?;
    if c.dim() == 0 {
        return ops::div(&c, &c);
    }
    let sd = ops::sqrt(&ops::diagonal(&c, 0, 0, 1)?)?;
    let c = ops::div(&c, &ops::unsqueeze(&sd, 1)?)?;
    let c = ops::div(&c, &ops::unsqueeze(&sd, 0)?)?;
    ops::clamp(&c, Some(Scalar::Int(-1)), Some(Scalar::Int(1)))
}

/// `renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor`: each slice along `dim`
/// whose p-norm exceeds `maxnorm` is scaled down to it.
pub fn renorm(self_: &Tensor, p: Scalar, dim: i64, maxnorm: Scalar) -> Result<Tensor> {
    if p.to_f64() <= 0.0 {
        return Err(Error::invalid("renorm", "renorm: non-positive-norm not supported"));
    }
    if maxnorm.to_f64() < 0.0 {
        return Err(Error::invalid(
            "renorm",
            format!("renorm: expected maxnorm to be >= 0 but got {}", maxnorm.to_f64()),
        ));
    }
    let d = crate::wrap_dim("renorm", dim, self_.dim())?;
    let others: Vec<i64> = (0..self_.dim() as i64).filter(|&k| k != d as i64).collect();
    let norm = ops::norm_scalaropt_dim(self_, Some(p), &others, true)?;
    let m = maxnorm.to_f64();
    let factor = ops::div(&scalar_like(&norm, m)?, &ops::add_scalar(&norm, Scalar::Float(1e-7), one())?)?;
    let ones = ops::ones_like(&norm, None, None, None, None, None)?;
    let factor = ops::where_self(&ops::gt_scalar(&norm, Scalar::Float(m))?, &factor, &ones)?;
    ops::mul(self_, &factor)
}

/// `bincount(Tensor self, Tensor? weights=None, int minlength=0) -> Tensor`
pub fn bincount(self_: &Tensor, weights: Option<&Tensor>, minlength: i64) -> Result<Tensor> {
    if self_.dim() != 1 || self_.dtype().is_floating_point() || self_.dtype() == ScalarType::Bool {
        return Err(Error::invalid("bincount", "bincount only supports 1-d non-negative integral inputs."));
    }
    if minlength < 0 {
        return Err(Error::invalid("bincount", "minlength should be >= 0"));
    }
    let v = self_.to_vec::<i64>()?;
    if v.iter().any(|&x| x < 0) {
        return Err(Error::invalid("bincount", "bincount only supports 1-d non-negative integral inputs."));
    }
    if let Some(w) = weights {
        if w.dim() != 1 || w.numel() != self_.numel() {
            return Err(Error::shape("bincount", "weights should be 1-d and have the same length as input"));
        }
    }
    let n = v.iter().max().map_or(0, |&m| m + 1).max(minlength);
    let dtype = match weights {
        None => ScalarType::I64,
        Some(w) if w.dtype() == ScalarType::F32 => ScalarType::F32,
        Some(_) => ScalarType::F64,
    };
    let out = ops::zeros(&[n], Some(dtype), None, Some(self_.device()), None)?;
    let src = match weights {
        Some(w) => ops::to(w, dtype, false, false, None)?,
        None => ops::ones_like(self_, Some(dtype), None, None, None, None)?,
    };
    ops::index_add(&out, 0, &ops::to(self_, ScalarType::I64, false, false, None)?, &src, one())
}

/// `histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor`: counts in `bins`
/// equal bins over [min, max] (the data's range when both are 0); values outside are ignored.
pub fn histc(self_: &Tensor, bins: i64, min: Scalar, max: Scalar) -> Result<Tensor> {
    if bins <= 0 {
        return Err(Error::invalid("histc", "torch.histc(): bins must be > 0"));
    }
    if !self_.dtype().is_floating_point() {
        return Err(Error::UnsupportedDtype { op: "histc".into(), dtype: self_.dtype() });
    }
    let v = self_.to_vec::<f64>()?;
    let (mut lo, mut hi) = (min.to_f64(), max.to_f64());
    if lo == hi && !v.is_empty() {
        lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    }
    if lo == hi {
        lo -= 1.0;
        hi += 1.0;
    }
    if lo > hi {
        return Err(Error::invalid(
            "histc",
            format!("torch.histc(): max must be larger than min, but got min {lo} max {hi}"),
        ));
    }
    if !lo.is_finite() || !hi.is_finite() {
        return Err(Error::invalid("histc", format!("torch.histc(): range of [{lo}, {hi}] is not finite")));
    }
    let mut counts = c10::size::try_vec_filled(0f64, bins as usize)?;
    for &x in &v {
        if x >= lo && x <= hi {
            let b = (((x - lo) * bins as f64) / (hi - lo)) as i64;
            counts[b.min(bins - 1) as usize] += 1.0;
        }
    }
    ops::to(&Tensor::from_vec(counts, &[bins])?.to_device(self_.device())?, self_.dtype(), false, false, None)
}

fn tri_indices(
    op: &str,
    row: i64,
    col: i64,
    offset: i64,
    upper: bool,
    dtype: Option<ScalarType>,
    device: Option<Device>,
) -> Result<Tensor> {
    if row < 0 || col < 0 {
        return Err(Error::invalid(op, format!("row and col must be non-negative, got {row} and {col}")));
    }
    if row == 0 || col == 0 {
        let t = ops::zeros(&[2, 0], Some(ScalarType::I64), None, device, None)?;
        return ops::to(&t, dtype.unwrap_or(ScalarType::I64), false, false, None);
    }
    // Row r holds the columns [a(r), b(r)); only rows with some column are visited, so the work
    // is bounded by the result's size (which is allocated fallibly first).
    let span = |r: i64| -> (i64, i64) {
        if upper {
            ((r as i128 + offset as i128).clamp(0, col as i128) as i64, col)
        } else {
            (0, (r as i128 + offset as i128 + 1).clamp(0, col as i128) as i64)
        }
    };
    let (first, last) = if upper {
        (0i64, (col as i128 - offset as i128).clamp(0, row as i128) as i64)
    } else {
        ((-(offset as i128)).clamp(0, row as i128) as i64, row)
    };
    let mut total: i64 = 0;
    let mut rows = Vec::new();
    let mut cols = Vec::new();
    for r in first..last {
        let (a, b) = span(r);
        let n = b - a;
        total = total.checked_add(n).ok_or_else(|| Error::shape(op, "numel: integer multiplication overflow"))?;
        if rows.capacity() < total as usize {
            // Grows by doubling, fallibly (Note [Fallible scratch buffers]).
            let want = (total as usize).max(rows.capacity() * 2);
            let mut bigger = c10::size::try_vec(want)?;
            bigger.extend_from_slice(&rows);
            rows = bigger;
            let mut bigger = c10::size::try_vec(want)?;
            bigger.extend_from_slice(&cols);
            cols = bigger;
        }
        for c in a..b {
            rows.push(r);
            cols.push(c);
        }
    }
    rows.extend(cols);
    let t = Tensor::from_vec(rows, &[2, total])?.to_device(device.unwrap_or(Device::CPU))?;
    ops::to(&t, dtype.unwrap_or(ScalarType::I64), false, false, None)
}

/// `triu_indices(int row, int col, int offset=0, *, ScalarType? dtype=long, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor`
pub fn triu_indices(
    row: i64,
    col: i64,
    offset: i64,
    dtype: Option<ScalarType>,
    _layout: Option<Layout>,
    device: Option<Device>,
    _pin_memory: Option<bool>,
) -> Result<Tensor> {
    tri_indices("triu_indices", row, col, offset, true, dtype, device)
}

/// `tril_indices(int row, int col, int offset=0, *, ScalarType? dtype=long, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor`
pub fn tril_indices(
    row: i64,
    col: i64,
    offset: i64,
    dtype: Option<ScalarType>,
    _layout: Option<Layout>,
    device: Option<Device>,
    _pin_memory: Option<bool>,
) -> Result<Tensor> {
    tri_indices("tril_indices", row, col, offset, false, dtype, device)
}

/// `_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)`
#[allow(clippy::too_many_arguments)]
pub fn _native_batch_norm_legit(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: &Tensor,
    running_var: &Tensor,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    ops::native_batch_norm(input, weight, bias, Some(running_mean), Some(running_var), training, momentum, eps)
}

/// `_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)`:
/// the functional form `torch.export`'s ATen IR uses, where the updated running statistics are
/// new tensors (the inputs are left as they were).
#[allow(clippy::too_many_arguments)]
pub fn _native_batch_norm_legit_functional(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: &Tensor,
    running_var: &Tensor,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor, Tensor, Tensor)> {
    let mean = ops::clone(running_mean, None)?;
    let var = ops::clone(running_var, None)?;
    let (out, save_mean, save_invstd) =
        ops::native_batch_norm(input, weight, bias, Some(&mean), Some(&var), training, momentum, eps)?;
    Ok((out, save_mean, save_invstd, mean, var))
}

/// `_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)`
pub fn _native_batch_norm_legit_no_stats(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    ops::native_batch_norm(input, weight, bias, None, None, training, momentum, eps)
}

/// `_batch_norm_with_update(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor)`:
/// training batch norm, plus an empty reserve buffer (cuDNN's; nothing here).
pub fn _batch_norm_with_update(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: &Tensor,
    running_var: &Tensor,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    let (out, mean, invstd) =
        ops::native_batch_norm(input, weight, bias, Some(running_mean), Some(running_var), true, momentum, eps)?;
    let reserve = ops::empty(&[0], Some(ScalarType::U8), None, Some(input.device()), None, None)?;
    Ok((out, mean, invstd, reserve))
}

// ---- third batch: fft shifts, small linalg, quantiles, mode ----------------------------------------

fn shift_dims(self_: &Tensor, dim: Option<&[i64]>) -> Vec<i64> {
    match dim {
        Some(d) if !d.is_empty() => d.to_vec(),
        _ => (0..self_.dim() as i64).collect(),
    }
}

fn fft_shift(op: &str, self_: &Tensor, dim: Option<&[i64]>, inverse: bool) -> Result<Tensor> {
    let dims = shift_dims(self_, dim);
    let mut shifts = Vec::with_capacity(dims.len());
    for &d in &dims {
        let (_, n) = size_at(op, self_, d)?;
        // fftshift moves the zero frequency to the middle (n / 2 to the right); ifftshift undoes it.
        shifts.push(if inverse { -(n / 2) } else { n / 2 });
    }
    if dims.is_empty() {
        return Ok(self_.clone());
    }
    ops::roll(self_, &shifts, &dims)
}

/// `fft_fftshift(Tensor self, int[1]? dim=None) -> Tensor`
pub fn fft_fftshift(self_: &Tensor, dim: Option<&[i64]>) -> Result<Tensor> {
    fft_shift("fft_fftshift", self_, dim, false)
}

/// `fft_ifftshift(Tensor self, int[1]? dim=None) -> Tensor`
pub fn fft_ifftshift(self_: &Tensor, dim: Option<&[i64]>) -> Result<Tensor> {
    fft_shift("fft_ifftshift", self_, dim, true)
}

/// `linalg_vecdot(Tensor x, Tensor y, *, int dim=-1) -> Tensor`: `sum(x * y, dim)` (x conjugated
/// for complex inputs; real here).
pub fn linalg_vecdot(x: &Tensor, y: &Tensor, dim: i64) -> Result<Tensor> {
    let p = ops::mul(x, y)?;
    size_at("linalg.vecdot", &p, dim)?;
    ops::sum_dim_intlist(&p, Some(&[dim]), false, None)
}

/// `linalg_vander(Tensor x, *, SymInt? N=None) -> Tensor`: `[..., i, j] = x[..., i]^j` for
/// `j < N` (default: the length of x), as a running product (exact for integers).
pub fn linalg_vander(x: &Tensor, n: Option<i64>) -> Result<Tensor> {
    // A scalar is a vector of one.
    let x = &(if x.dim() == 0 { ops::reshape(x, &[1])? } else { x.clone() });
    let len = x.sizes()[x.dim() - 1];
    let n = n.unwrap_or(len);
    if n <= 1 {
        return Err(Error::invalid("linalg.vander", "N must be greater than 1."));
    }
    let col = ops::unsqueeze(x, -1)?;
    let mut shape = x.sizes().to_vec();
    shape.push(n - 1);
    let powers = ops::cumprod(&ops::expand(&col, &shape, false)?, -1, None)?;
    let ones = ops::ones_like(&col, Some(powers.dtype()), None, None, None, None)?;
    ops::cat(&[ones, powers], -1)
}

/// `linalg_multi_dot(Tensor[] tensors) -> Tensor`: the chained matrix product (a first 1-D
/// operand is a row, a last one a column), left to right.
pub fn linalg_multi_dot(tensors: &[Tensor]) -> Result<Tensor> {
    if tensors.len() < 2 {
        return Err(Error::invalid(
            "linalg.multi_dot",
            format!("multi_dot(): expected at least 2 tensors but got {}", tensors.len()),
        ));
    }
    let last = tensors.len() - 1;
    for (i, t) in tensors.iter().enumerate() {
        let ok = if i == 0 || i == last { (1..=2).contains(&t.dim()) } else { t.dim() == 2 };
        if !ok {
            return Err(Error::shape(
                "linalg.multi_dot",
                format!(
                    "multi_dot(): tensor {i} must be 2D{} but got {}D",
                    if i == 0 || i == last { " or 1D" } else { "" },
                    t.dim()
                ),
            ));
        }
    }
    let mut acc = tensors[0].clone();
    for t in &tensors[1..] {
        acc = ops::matmul(&acc, t)?;
    }
    Ok(acc)
}

/// `linalg_matrix_power(Tensor self, int n) -> Tensor`: by repeated squaring (the identity for
/// 0); a negative power is that power of `linalg.inv(A)`.
pub fn linalg_matrix_power(self_: &Tensor, n: i64) -> Result<Tensor> {
    let d = self_.dim();
    if d < 2 || self_.sizes()[d - 1] != self_.sizes()[d - 2] {
        return Err(Error::shape(
            "linalg.matrix_power",
            format!(
                "linalg.matrix_power: A must be batches of square matrices, but they are {:?} matrices",
                self_.sizes()
            ),
        ));
    }
    if n < 0 {
        return linalg_matrix_power(&ops::linalg_inv(self_)?, n.checked_neg().unwrap_or(i64::MAX));
    }
    let m = self_.sizes()[d - 1];
    let eye = ops::eye(m, Some(self_.dtype()), None, Some(self_.device()), None)?;
    let mut result = ops::clone(&ops::expand(&eye, self_.sizes(), false)?, None)?;
    if n == 0 {
        return Ok(result);
    }
    let (mut base, mut e, mut first) = (self_.clone(), n, true);
    while e > 0 {
        if e & 1 == 1 {
            result = if first { base.clone() } else { ops::matmul(&result, &base)? };
            first = false;
        }
        e >>= 1;
        if e > 0 {
            base = ops::matmul(&base, &base)?;
        }
    }
    Ok(result)
}

fn quantile_impl(
    op: &str,
    self_: &Tensor,
    q: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    interpolation: &str,
    ignore_nan: bool,
) -> Result<Tensor> {
    if !self_.dtype().is_floating_point() {
        return Err(Error::invalid(op, format!("{op}() input tensor must be either float or double dtype")));
    }
    if q.dim() > 1 {
        return Err(Error::invalid(op, format!("{op}() q must be a scalar or 1D tensor")));
    }
    if q.dtype() != self_.dtype() {
        return Err(Error::invalid(op, format!("{op}() q tensor must be same dtype as the input tensor")));
    }
    let qs = q.to_vec::<f64>()?;
    if qs.iter().any(|&v| !(0.0..=1.0).contains(&v)) {
        return Err(Error::invalid(op, format!("{op}() q values must be in the range [0, 1]")));
    }
    if !matches!(interpolation, "linear" | "lower" | "higher" | "midpoint" | "nearest") {
        return Err(Error::invalid(
            op,
            format!(
                "{op}() interpolation must be one of linear, lower, higher, midpoint or nearest. Got {interpolation}"
            ),
        ));
    }
    // Reduce over the last dimension of a [..., n] view.
    let (x, out_shape): (Tensor, Vec<i64>) = match dim {
        None => {
            let shape = if keepdim { vec![1; self_.dim()] } else { vec![] };
            (ops::reshape(self_, &[-1])?, shape)
        }
        Some(d) => {
            let (dd, _) = if self_.dim() == 0 { (0, 1) } else { size_at(op, self_, d)? };
            let mut shape = self_.sizes().to_vec();
            if self_.dim() > 0 {
                if keepdim {
                    shape[dd] = 1;
                } else {
                    shape.remove(dd);
                }
            }
            let moved =
                if self_.dim() == 0 { ops::reshape(self_, &[1])? } else { ops::movedim(self_, &[dd as i64], &[-1])? };
            (moved, shape)
        }
    };
    let n = x.sizes()[x.dim() - 1];
    if n == 0 {
        return Err(Error::invalid(op, format!("{op}() input tensor must be non-empty")));
    }
    let sorted = ops::sort(&x, -1, false)?.0;
    let valid = ops::logical_not(&ops::isnan(&sorted)?)?;
    // The count of values a quantile ranks among, per row: all of them, or the non-NaN ones.
    let k = if ignore_nan {
        ops::sum_dim_intlist(&valid, Some(&[-1]), true, Some(ScalarType::F64))?
    } else {
        ops::full(&[1], Scalar::Int(n), Some(ScalarType::F64), None, Some(x.device()), None)?
    };
    let any_nan = ops::logical_not(&ops::all_dim(&valid, -1, true)?)?;
    let mut results = Vec::with_capacity(qs.len());
    for &qv in &qs {
        let rank = ops::mul_scalar(&ops::sub_scalar(&k, one(), one())?, Scalar::Float(qv))?;
        let rank = ops::clamp_min(&rank, Scalar::Int(0))?;
        let lo = ops::floor(&rank)?;
        let hi = ops::ceil(&rank)?;
        let idx = |t: &Tensor| -> Result<Tensor> {
            let i = ops::to(t, ScalarType::I64, false, false, None)?;
            let i = ops::clamp(&i, Some(Scalar::Int(0)), Some(Scalar::Int(n - 1)))?;
            let mut shape = sorted.sizes().to_vec();
            *shape.last_mut().expect("at least 1-d") = 1;
            ops::expand(&i, &shape, false)
        };
        let below = ops::gather(&sorted, -1, &idx(&lo)?, false)?;
        let above = ops::gather(&sorted, -1, &idx(&hi)?, false)?;
        let v = match interpolation {
            "lower" => below,
            "higher" => above,
            "midpoint" => ops::mul_scalar(&ops::add(&below, &above, one())?, Scalar::Float(0.5))?,
            "nearest" => ops::gather(&sorted, -1, &idx(&ops::round(&rank)?)?, false)?,
            _ => {
                let w = ops::to(&ops::sub(&rank, &lo, one())?, sorted.dtype(), false, false, None)?;
                ops::lerp_tensor(&below, &above, &ops::expand(&w, below.sizes(), false)?)?
            }
        };
        // A NaN among the values (quantile) or no value at all (nanquantile) gives NaN.
        let nan_rows = if ignore_nan { ops::eq_scalar(&k, Scalar::Int(0))? } else { any_nan.clone() };
        let v = ops::masked_fill(&v, &ops::expand(&nan_rows, v.sizes(), false)?, Scalar::Float(f64::NAN))?;
        results.push(ops::reshape(&v, &out_shape)?);
    }
    if q.dim() == 0 {
        return Ok(results.remove(0));
    }
    ops::stack(&results, 0)
}

/// `quantile(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, str interpolation='linear') -> Tensor`
pub fn quantile(self_: &Tensor, q: &Tensor, dim: Option<i64>, keepdim: bool, interpolation: &str) -> Result<Tensor> {
    quantile_impl("quantile", self_, q, dim, keepdim, interpolation, false)
}
/// `quantile.scalar(Tensor self, float q, int? dim=None, bool keepdim=False, *, str interpolation='linear') -> Tensor`
pub fn quantile_scalar(self_: &Tensor, q: f64, dim: Option<i64>, keepdim: bool, interpolation: &str) -> Result<Tensor> {
    let qt = ops::full(&[], Scalar::Float(q), Some(self_.dtype()), None, Some(self_.device()), None)?;
    quantile_impl("quantile", self_, &qt, dim, keepdim, interpolation, false)
}
/// `nanquantile(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, str interpolation='linear') -> Tensor`
pub fn nanquantile(self_: &Tensor, q: &Tensor, dim: Option<i64>, keepdim: bool, interpolation: &str) -> Result<Tensor> {
    quantile_impl("nanquantile", self_, q, dim, keepdim, interpolation, true)
}
/// `nanquantile.scalar(Tensor self, float q, int? dim=None, bool keepdim=False, *, str interpolation='linear') -> Tensor`
pub fn nanquantile_scalar(
    self_: &Tensor,
    q: f64,
    dim: Option<i64>,
    keepdim: bool,
    interpolation: &str,
) -> Result<Tensor> {
    let qt = ops::full(&[], Scalar::Float(q), Some(self_.dtype()), None, Some(self_.device()), None)?;
    quantile_impl("nanquantile", self_, &qt, dim, keepdim, interpolation, true)
}

/// The lower median of the non-NaN values along the last dimension of `x` (NaN where there are
/// none), with its index in `x`.
fn nanmedian_last(x: &Tensor) -> Result<(Tensor, Tensor)> {
    let n = x.sizes()[x.dim() - 1];
    let (sorted, order) = ops::sort(x, -1, false)?;
    let valid = ops::sum_dim_intlist(&ops::logical_not(&ops::isnan(&sorted)?)?, Some(&[-1]), true, None)?;
    // (k - 1) / 2 rounded down, 0 for an all-NaN row.
    let pos = ops::div_tensor_mode(
        &ops::clamp_min(&ops::sub_scalar(&valid, one(), one())?, Scalar::Int(0))?,
        &Tensor::wrapped_scalar(Scalar::Int(2)),
        Some("floor"),
    )?;
    let pos = ops::clamp(&pos, Some(Scalar::Int(0)), Some(Scalar::Int((n - 1).max(0))))?;
    let v = ops::gather(&sorted, -1, &pos, false)?;
    let i = ops::gather(&order, -1, &pos, false)?;
    Ok((ops::squeeze_dim(&v, -1)?, ops::squeeze_dim(&i, -1)?))
}

/// `nanmedian(Tensor self) -> Tensor`: the lower median of the non-NaN values.
pub fn nanmedian(self_: &Tensor) -> Result<Tensor> {
    if self_.numel() == 0 {
        return ops::full(&[], Scalar::Float(f64::NAN), Some(self_.dtype()), None, Some(self_.device()), None);
    }
    Ok(nanmedian_last(&ops::reshape(self_, &[-1])?)?.0)
}

/// `nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)`
pub fn nanmedian_dim(self_: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    if self_.dim() == 0 {
        crate::wrap_dim("nanmedian", dim, 0)?;
        return Ok((self_.clone(), ops::zeros(&[], Some(ScalarType::I64), None, Some(self_.device()), None)?));
    }
    let (d, n) = size_at("nanmedian", self_, dim)?;
    if n == 0 {
        return Err(Error::invalid(
            "nanmedian",
            format!("nanmedian(): Expected reduction dim {d} to have non-zero size."),
        ));
    }
    let (v, i) = nanmedian_last(&ops::movedim(self_, &[d as i64], &[-1])?)?;
    if keepdim {
        Ok((ops::unsqueeze(&v, d as i64)?, ops::unsqueeze(&i, d as i64)?))
    } else {
        Ok((v, i))
    }
}

/// `mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)`: the
/// most frequent value of each slice (the smallest among equally frequent ones) and the index of
/// its last occurrence.
pub fn mode(self_: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let x = if self_.dim() == 0 { ops::reshape(self_, &[1])? } else { self_.clone() };
    let (d, n) = size_at("mode", &x, dim)?;
    if n == 0 {
        return Err(Error::invalid("mode", format!("mode(): Expected reduction dim {d} to have non-zero size.")));
    }
    let moved = ops::contiguous(&ops::movedim(&x, &[d as i64], &[-1])?, MemoryFormat::Contiguous)?;
    let rows = ops::reshape(&moved, &[-1, n])?;
    let count = rows.sizes()[0] as usize;
    let vals = rows.to_vec::<f64>()?;
    let mut idx = c10::size::try_vec(count)?;
    for r in 0..count {
        let row = &vals[r * n as usize..(r + 1) * n as usize];
        let mut order: Vec<usize> = (0..row.len()).collect();
        order.sort_by(|&a, &b| row[a].total_cmp(&row[b]).then(a.cmp(&b)));
        let (mut best, mut best_len, mut i) = (order[0], 0usize, 0usize);
        while i < order.len() {
            let mut j = i;
            while j + 1 < order.len() && row[order[j + 1]].total_cmp(&row[order[i]]).is_eq() {
                j += 1;
            }
            if j - i + 1 > best_len {
                best_len = j - i + 1;
                best = order[j];
            }
            i = j + 1;
        }
        idx.push(best as i64);
    }
    let index = Tensor::from_vec(idx, &[count as i64, 1])?.to_device(self_.device())?;
    let values = ops::gather(&rows, 1, &index, false)?;
    let mut shape = moved.sizes().to_vec();
    shape.pop();
    let (values, index) = (ops::reshape(&values, &shape)?, ops::reshape(&index, &shape)?);
    if self_.dim() == 0 {
        return Ok((ops::reshape(&values, &[])?, ops::reshape(&index, &[])?));
    }
    if keepdim {
        Ok((ops::unsqueeze(&values, d as i64)?, ops::unsqueeze(&index, d as i64)?))
    } else {
        Ok((values, index))
    }
}

/// `max_unpool2d(Tensor self, Tensor indices, SymInt[2] output_size) -> Tensor`: each value
/// written at its index into the flattened output plane, zeros elsewhere.
pub fn max_unpool2d(self_: &Tensor, indices: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    max_unpool_nd("max_unpool2d", self_, indices, output_size, 2)
}

/// `max_unpool3d(Tensor self, Tensor indices, SymInt[3] output_size, int[3] stride, int[3] padding) -> Tensor`
pub fn max_unpool3d(
    self_: &Tensor,
    indices: &Tensor,
    output_size: &[i64],
    _stride: &[i64],
    _padding: &[i64],
) -> Result<Tensor> {
    max_unpool_nd("max_unpool3d", self_, indices, output_size, 3)
}

fn max_unpool_nd(op: &str, self_: &Tensor, indices: &Tensor, output_size: &[i64], nsp: usize) -> Result<Tensor> {
    if output_size.len() != nsp {
        return Err(Error::invalid(
            op,
            format!("{op}(): There should be exactly {nsp} elements but got {}", output_size.len()),
        ));
    }
    if indices.dtype() != ScalarType::I64 {
        return Err(Error::invalid(
            op,
            format!("{op}(): Expected indices to have type int64 but got {}", indices.dtype().cpp_name()),
        ));
    }
    if self_.sizes() != indices.sizes() {
        return Err(Error::shape(
            op,
            format!(
                "Expected shape of indices to be same as that of the input tensor ({:?}) but got indices tensor with shape: {:?}",
                self_.sizes(),
                indices.sizes()
            ),
        ));
    }
    let d = self_.dim();
    if d != nsp + 1 && d != nsp + 2 {
        return Err(Error::shape(
            op,
            format!("{op}(): Expected {}D or {}D tensor, but got {:?}", nsp + 1, nsp + 2, self_.sizes()),
        ));
    }
    let lead = &self_.sizes()[..d - nsp];
    let plane = c10::size::numel(op, output_size)?;
    let mut flat_shape = lead.to_vec();
    flat_shape.push(-1);
    let mut out_flat = lead.to_vec();
    out_flat.push(plane);
    let x = ops::reshape(self_, &flat_shape)?;
    let idx = ops::reshape(indices, &flat_shape)?;
    if idx.numel() > 0 {
        let bad = ops::logical_or(&ops::lt_scalar(&idx, Scalar::Int(0))?, &ops::ge_scalar(&idx, Scalar::Int(plane))?)?;
        if ops::any(&bad)?.to_vec::<bool>()?[0] {
            let sizes = output_size.iter().map(|s| s.to_string()).collect::<Vec<_>>().join("x");
            return Err(Error::invalid(op, format!("Found an invalid max index (output volumes are of size {sizes})")));
        }
    }
    let zeros = ops::zeros(&out_flat, Some(self_.dtype()), None, Some(self_.device()), None)?;
    let out = ops::scatter(&zeros, lead.len() as i64, &idx, &x)?;
    let mut shape = lead.to_vec();
    shape.extend_from_slice(output_size);
    ops::reshape(&out, &shape)
}

/// `upsample_nearest1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor`
pub fn upsample_nearest1d_size(self_: &Tensor, output_size: &[i64], _scales: Option<f64>) -> Result<Tensor> {
    ops::upsample_nearest1d(self_, Some(output_size), None)
}

/// `rrelu(Tensor self, Scalar lower=1/8, Scalar upper=1/3, bool training=False, Generator? generator=None) -> Tensor`:
/// in training, each negative element is scaled by a slope drawn uniformly from
/// `[lower, upper]`; otherwise by their mean (a leaky ReLU).
pub fn rrelu(
    self_: &Tensor,
    lower: Scalar,
    upper: Scalar,
    training: bool,
    generator: Option<&crate::Generator>,
) -> Result<Tensor> {
    let (lo, hi) = (lower.to_f64(), upper.to_f64());
    if !self_.dtype().is_floating_point() {
        return Err(Error::UnsupportedDtype { op: "rrelu".into(), dtype: self_.dtype() });
    }
    if lo > hi {
        return Err(Error::invalid(
            "rrelu",
            format!("Lower bound should be less than or equal to the upper bound, got {lo} and {hi}"),
        ));
    }
    if !training {
        return ops::leaky_relu(self_, Scalar::Float((lo + hi) / 2.0));
    }
    let noise = ops::empty_like(self_, None, None, None, None, Some(MemoryFormat::Contiguous))?;
    ops::uniform_(&noise, lo, hi, generator)?;
    let negative = ops::lt_scalar(self_, Scalar::Int(0))?;
    let slopes = ops::where_self(&negative, &noise, &ops::ones_like(self_, None, None, None, None, None)?)?;
    ops::mul(self_, &slopes)
}

/// `item(Tensor self) -> Scalar`: the value of a one-element tensor, as a number of its kind.
pub fn item(self_: &Tensor) -> Result<Scalar> {
    if self_.numel() != 1 {
        return Err(Error::invalid(
            "item",
            format!("a Tensor with {} elements cannot be converted to Scalar", self_.numel()),
        ));
    }
    let d = self_.dtype();
    Ok(if d.is_floating_point() {
        Scalar::Float(self_.item::<f64>()?)
    } else if d == ScalarType::Bool {
        Scalar::Bool(self_.item::<bool>()?)
    } else {
        Scalar::Int(self_.item::<i64>()?)
    })
}

/// `equal(Tensor self, Tensor other) -> bool`: the same sizes and equal elements (after type
/// promotion; NaN equals nothing).
pub fn equal(self_: &Tensor, other: &Tensor) -> Result<bool> {
    if self_.device() != other.device() {
        return Err(Error::DeviceMismatch {
            op: "equal".into(),
            a: self_.device().to_string(),
            b: other.device().to_string(),
        });
    }
    if self_.sizes() != other.sizes() {
        return Ok(false);
    }
    ops::all(&ops::eq(self_, other)?)?.item::<bool>()
}

/// `allclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> bool`
pub fn allclose(self_: &Tensor, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<bool> {
    ops::all(&ops::isclose(self_, other, rtol, atol, equal_nan)?)?.item::<bool>()
}

// ---- linspace/logspace of tensors, chunk_cat, scatter and index helpers --------------------------

/// A `linspace`/`logspace` end point given as a tensor or a number.
pub enum SpaceEnd<'a> {
    /// A 0-dim tensor.
    Tensor(&'a Tensor),
    /// A number.
    Scalar(Scalar),
}

fn space_end(op: &str, which: &str, e: SpaceEnd<'_>) -> Result<Scalar> {
    match e {
        SpaceEnd::Scalar(s) => Ok(s),
        SpaceEnd::Tensor(t) if t.dim() == 0 => item(t),
        SpaceEnd::Tensor(t) => Err(Error::invalid(
            op,
            format!(
                "{op} only supports 0-dimensional start and end tensors, but got {which} with {} dimension(s).",
                t.dim()
            ),
        )),
    }
}

/// `linspace.Tensor_Scalar` and `linspace.Scalar_Tensor`: the tensor end point is a 0-dim
/// tensor's value.
#[allow(clippy::too_many_arguments)]
pub fn linspace_ends(
    start: SpaceEnd<'_>,
    end: SpaceEnd<'_>,
    steps: i64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let (a, b) = (space_end("linspace", "start", start)?, space_end("linspace", "end", end)?);
    ops::linspace(a, b, steps, dtype, layout, device, pin_memory)
}

/// `logspace.Tensor_Scalar` and `logspace.Scalar_Tensor`.
#[allow(clippy::too_many_arguments)]
pub fn logspace_ends(
    start: SpaceEnd<'_>,
    end: SpaceEnd<'_>,
    steps: i64,
    base: f64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let (a, b) = (space_end("logspace", "start", start)?, space_end("logspace", "end", end)?);
    ops::logspace(a, b, steps, base, dtype, layout, device, pin_memory)
}

macro_rules! space_overloads {
    ($($name:ident: $base:ident($a:ident: $at:ty => $aw:expr, $b:ident: $bt:ty => $bw:expr $(, $extra:ident: $et:ty)?);)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: see [`", stringify!($base), "`].")]
        #[allow(clippy::too_many_arguments, non_snake_case)]
        pub fn $name(
            $a: $at,
            $b: $bt,
            steps: i64,
            $($extra: $et,)?
            dtype: Option<ScalarType>,
            layout: Option<Layout>,
            device: Option<Device>,
            pin_memory: Option<bool>,
        ) -> Result<Tensor> {
            $base($aw, $bw, steps, $($extra,)? dtype, layout, device, pin_memory)
        }
    )*};
}

space_overloads! {
    linspace_Tensor_Scalar: linspace_ends(start: &Tensor => SpaceEnd::Tensor(start), end: Scalar => SpaceEnd::Scalar(end));
    linspace_Scalar_Tensor: linspace_ends(start: Scalar => SpaceEnd::Scalar(start), end: &Tensor => SpaceEnd::Tensor(end));
    logspace_Tensor_Scalar: logspace_ends(start: &Tensor => SpaceEnd::Tensor(start), end: Scalar => SpaceEnd::Scalar(end), base: f64);
    logspace_Scalar_Tensor: logspace_ends(start: Scalar => SpaceEnd::Scalar(start), end: &Tensor => SpaceEnd::Tensor(end), base: f64);
}

/// `linspace.Tensor_Tensor(Tensor start, Tensor end, int steps, *, ScalarType? dtype=None, ...)`
#[allow(clippy::too_many_arguments, non_snake_case)]
pub fn linspace_Tensor_Tensor(
    start: &Tensor,
    end: &Tensor,
    steps: i64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    linspace_ends(SpaceEnd::Tensor(start), SpaceEnd::Tensor(end), steps, dtype, layout, device, pin_memory)
}

/// `logspace.Tensor_Tensor(Tensor start, Tensor end, int steps, float base=10., *, ScalarType? dtype=None, ...)`
#[allow(clippy::too_many_arguments, non_snake_case)]
pub fn logspace_Tensor_Tensor(
    start: &Tensor,
    end: &Tensor,
    steps: i64,
    base: f64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    logspace_ends(SpaceEnd::Tensor(start), SpaceEnd::Tensor(end), steps, base, dtype, layout, device, pin_memory)
}

/// `_chunk_cat(Tensor[] tensors, int dim, int num_chunks) -> Tensor`: each tensor, zero-padded
/// along `dim` to a multiple of `num_chunks`, is split into `num_chunks` chunks; chunk `i` of
/// every tensor is flattened from `dim` on and the pieces are concatenated, giving
/// `leading + [num_chunks, total]`.
pub fn _chunk_cat(tensors: &[Tensor], dim: i64, num_chunks: i64) -> Result<Tensor> {
    const OP: &str = "_chunk_cat";
    let first =
        tensors.first().ok_or_else(|| Error::invalid(OP, "_chunk_cat expects a non-empty input tensor list"))?;
    if num_chunks < 1 {
        return Err(Error::invalid(OP, "_chunk_cat expects positive num_chunks"));
    }
    let (d, _) = size_at(OP, first, dim)?;
    let lead = &first.sizes()[..d];
    let mut pieces = Vec::with_capacity(tensors.len());
    for t in tensors {
        if t.dim() <= d || &t.sizes()[..d] != lead {
            return Err(Error::shape(
                OP,
                "_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all tensors".to_string(),
            ));
        }
        let size = t.sizes()[d];
        let padded = size
            .checked_add(num_chunks - 1)
            .map(|v| v / num_chunks * num_chunks)
            .ok_or_else(|| Error::shape(OP, "size overflow"))?;
        let t = if padded == size {
            t.clone()
        } else {
            let mut pad = vec![0i64; 2 * (t.dim() - d)];
            let n = pad.len();
            pad[n - 1] = padded - size;
            ops::constant_pad_nd(t, &pad, Scalar::Int(0))?
        };
        let mut shape = lead.to_vec();
        shape.extend([num_chunks, -1]);
        pieces.push(ops::reshape(&t, &shape)?);
    }
    ops::cat(&pieces, d as i64 + 1)
}

/// `as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor`:
/// a copy of `self` whose `as_strided(size, stride, storage_offset)` view holds `src`.
pub fn as_strided_scatter(
    self_: &Tensor,
    src: &Tensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    let out = ops::clone(self_, Some(MemoryFormat::Contiguous))?;
    let view = ops::as_strided(&out, size, stride, storage_offset)?;
    if view.sizes() != src.sizes() {
        return Err(Error::shape(
            "as_strided_scatter",
            format!(
                "expected src to have a size equal to the slice of self. src size = {:?}, slice size = {:?}",
                src.sizes(),
                view.sizes()
            ),
        ));
    }
    ops::copy_(&view, src, false)?;
    Ok(out)
}

/// `nonzero_numpy(Tensor self) -> Tensor[]`: the indices of the nonzero elements, one tensor per
/// dimension (a 0-dim input counts as 1-d).
pub fn nonzero_numpy(self_: &Tensor) -> Result<Vec<Tensor>> {
    let t = if self_.dim() == 0 { ops::unsqueeze(self_, 0)? } else { self_.clone() };
    ops::unbind(&ops::nonzero(&t)?, 1)
}

/// The indices of `_unsafe_masked_index*`, clamped into `self`'s sizes (masked-out positions may
/// hold any index).
fn clamped_indices(self_: &Tensor, indices: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
    indices
        .iter()
        .enumerate()
        .map(|(i, ix)| match ix {
            None => Ok(None),
            Some(t) => {
                let size = *self_.sizes().get(i).ok_or_else(|| {
                    Error::invalid(
                        "_unsafe_masked_index",
                        format!("too many indices for tensor of dimension {}", self_.dim()),
                    )
                })?;
                Ok(Some(ops::clamp(t, Some(Scalar::Int(-size)), Some(Scalar::Int(size - 1)))?))
            }
        })
        .collect()
}

/// `_unsafe_masked_index(Tensor self, Tensor mask, Tensor?[] indices, Scalar fill) -> Tensor`:
/// `where(mask, self[indices], fill)`, with the indices of masked-out positions never read.
pub fn _unsafe_masked_index(self_: &Tensor, mask: &Tensor, indices: &[Option<Tensor>], fill: Scalar) -> Result<Tensor> {
    let picked = ops::index(self_, &clamped_indices(self_, indices)?)?;
    ops::masked_fill(&picked, &ops::logical_not(mask)?, fill)
}

/// `_unsafe_masked_index_put_accumulate(Tensor self, Tensor mask, Tensor?[] indices, Tensor values) -> Tensor`:
/// `self` with `values` (where `mask`) added at `indices`.
pub fn _unsafe_masked_index_put_accumulate(
    self_: &Tensor,
    mask: &Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
) -> Result<Tensor> {
    let masked = ops::masked_fill(values, &ops::logical_not(mask)?, Scalar::Int(0))?;
    ops::index_put(self_, &clamped_indices(self_, indices)?, &masked, true)
}

/// A 2-element size argument (one value stands for both).
fn pair(op: &str, name: &str, v: &[i64]) -> Result<[i64; 2]> {
    match v {
        [a] => Ok([*a, *a]),
        [a, b] => Ok([*a, *b]),
        _ => Err(Error::invalid(op, format!("It is expected {name} equals to 2, but got size {}", v.len()))),
    }
}

/// The kernel size, dilation, padding and stride of `im2col`/`col2im`, checked as PyTorch checks
/// them.
fn sliding_geometry(
    op: &str,
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
) -> Result<[[i64; 2]; 4]> {
    let (k, d, p, s) = (
        pair(op, "kernel_size", kernel_size)?,
        pair(op, "dilation", dilation)?,
        pair(op, "padding", padding)?,
        pair(op, "stride", stride)?,
    );
    if k.iter().any(|&v| v <= 0) || d.iter().any(|&v| v <= 0) || s.iter().any(|&v| v <= 0) || p.iter().any(|&v| v < 0) {
        return Err(Error::invalid(
            op,
            format!("kernel size, dilation and stride should be greater than zero and padding non-negative, but got kernel_size={k:?} dilation={d:?} padding={p:?} stride={s:?}"),
        ));
    }
    Ok([k, d, p, s])
}

/// `im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor`:
/// the sliding blocks of a `[N, C, H, W]` (or `[C, H, W]`) input as columns,
/// `[N, C * kh * kw, L]`, written with slices so autograd differentiates it.
pub fn im2col(
    self_: &Tensor,
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
) -> Result<Tensor> {
    const OP: &str = "im2col";
    let [k, d, p, s] = sliding_geometry(OP, kernel_size, dilation, padding, stride)?;
    let batched = match self_.dim() {
        4 => true,
        3 => false,
        n => return Err(Error::shape(OP, format!("Expected 3D or 4D (batch mode) tensor for input, but got: {n}D"))),
    };
    let x = if batched { self_.clone() } else { ops::unsqueeze(self_, 0)? };
    let sz = x.sizes().to_vec();
    let out = |i: usize| -> i64 {
        let eff = d[i] as i128 * (k[i] as i128 - 1) + 1;
        let v = (sz[2 + i] as i128 + 2 * p[i] as i128 - eff).div_euclid(s[i] as i128) + 1;
        v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    };
    let (oh, ow) = (out(0), out(1));
    if oh < 1 || ow < 1 {
        return Err(Error::shape(
            OP,
            format!(
                "Given input with spatial size ({}, {}), kernel_size={k:?}, dilation={d:?}, padding={p:?}, calculated shape of the array of sliding blocks as ({oh}, {ow}), but its components must be at least one.",
                sz[2], sz[3]
            ),
        ));
    }
    let xp = ops::constant_pad_nd(&x, &[p[1], p[1], p[0], p[0]], Scalar::Int(0))?;
    let mut blocks = Vec::new();
    for i in 0..k[0] {
        for j in 0..k[1] {
            let rows = ops::slice(&xp, 2, Some(i * d[0]), Some(i * d[0] + (oh - 1) * s[0] + 1), s[0])?;
            blocks.push(ops::slice(&rows, 3, Some(j * d[1]), Some(j * d[1] + (ow - 1) * s[1] + 1), s[1])?);
        }
    }
    // [N, C, kh * kw, oh, ow] -> [N, C * kh * kw, oh * ow]
    let cols = ops::reshape(&ops::stack(&blocks, 2)?, &[sz[0], sz[1] * k[0] * k[1], oh * ow])?;
    if batched {
        Ok(cols)
    } else {
        ops::squeeze_dim(&cols, 0)
    }
}

/// `split.sizes(Tensor(a -> *) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]`: `split`
/// given a list of sizes (what TorchScript calls for `x.split([2, 3])`), `split_with_sizes`.
pub fn split_sizes(self_: &Tensor, split_size: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    ops::split_with_sizes(self_, split_size, dim)
}

/// `col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2]
/// padding, int[2] stride) -> Tensor` (`nn.Fold`): the adjoint of [`im2col`]. Columns
/// `[N, C * kh * kw, L]` (or `[C * kh * kw, L]`) are summed into `[N, C, H, W]` where their
/// sliding blocks overlap. Each kernel offset's block is spread out by the stride (padded with
/// stride - 1 zeros after each element), moved to its offset by padding, and added; every step
/// is a differentiable operator, so autograd gives `im2col` back as the gradient.
pub fn col2im(
    self_: &Tensor,
    output_size: &[i64],
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
) -> Result<Tensor> {
    const OP: &str = "col2im";
    let size = pair(OP, "output_size", output_size)?;
    let [k, d, p, s] = sliding_geometry(OP, kernel_size, dilation, padding, stride)?;
    let batched = match self_.dim() {
        3 => true,
        2 => false,
        n => return Err(Error::shape(OP, format!("Expected 2D or 3D (batch mode) tensor for input, but got: {n}D"))),
    };
    let x = if batched { self_.clone() } else { ops::unsqueeze(self_, 0)? };
    let (n, rows, l) = (x.sizes()[0], x.sizes()[1], x.sizes()[2]);
    let blocks = |i: usize| -> i64 {
        let eff = d[i] as i128 * (k[i] as i128 - 1) + 1;
        let v = (size[i] as i128 + 2 * p[i] as i128 - eff).div_euclid(s[i] as i128) + 1;
        v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    };
    let (oh, ow) = (blocks(0), blocks(1));
    if rows % (k[0] * k[1]) != 0 {
        return Err(Error::shape(
            OP,
            format!(
                "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)={rows} and kernel_size={k:?}"
            ),
        ));
    }
    if oh < 1 || ow < 1 || oh * ow != l {
        return Err(Error::shape(
            OP,
            format!(
                "Given output_size={size:?}, kernel_size={k:?}, dilation={d:?}, padding={p:?}, stride={s:?}, expected size of input's dimension 2 to match the calculated number of sliding blocks {oh} * {ow} = {}, but got input.size(2)={l}.",
                oh.max(0) * ow.max(0)
            ),
        ));
    }
    let c = rows / (k[0] * k[1]);
    let (hp, wp) = (size[0] + 2 * p[0], size[1] + 2 * p[1]);
    let cols = ops::reshape(&x, &[n, c, k[0] * k[1], oh, 1, ow, 1])?;
    // Each block spread out by the stride: [N, C, oh * sh, ow * sw], zeros between elements.
    let spread = |t: &Tensor| -> Result<Tensor> {
        let t = ops::constant_pad_nd(t, &[0, s[1] - 1, 0, 0, 0, s[0] - 1], Scalar::Int(0))?;
        ops::reshape(&t, &[n, c, oh * s[0], ow * s[1]])
    };
    let mut out: Option<Tensor> = None;
    for i in 0..k[0] {
        for j in 0..k[1] {
            let block = spread(&ops::select(&cols, 2, i * k[1] + j)?)?;
            let (top, left) = (i * d[0], j * d[1]);
            // Keep what fits (only the trailing zeros of the spread can fall outside), then pad
            // the block to its place in the padded output.
            let block = ops::narrow(&block, 2, 0, (oh * s[0]).min(hp - top))?;
            let block = ops::narrow(&block, 3, 0, (ow * s[1]).min(wp - left))?;
            let (bh, bw) = (block.sizes()[2], block.sizes()[3]);
            let placed = ops::constant_pad_nd(&block, &[left, wp - left - bw, top, hp - top - bh], Scalar::Int(0))?;
            out = Some(match out {
                None => placed,
                Some(acc) => ops::add(&acc, &placed, one())?,
            });
        }
    }
    let out = out.ok_or_else(|| Error::invalid(OP, "an empty kernel"))?;
    let out = ops::narrow(&ops::narrow(&out, 2, p[0], size[0])?, 3, p[1], size[1])?;
    if batched {
        Ok(out)
    } else {
        ops::squeeze_dim(&out, 0)
    }
}

/// `linalg_matrix_sqrth(Tensor self) -> Tensor`: the symmetric positive-definite square root,
/// `V diag(sqrt(w)) V^T` from the eigendecomposition of the lower triangle.
pub fn linalg_matrix_sqrth(self_: &Tensor) -> Result<Tensor> {
    let (w, v) = ops::linalg_eigh(self_, "L")?;
    ops::matmul(&ops::mul(&v, &ops::unsqueeze(&ops::sqrt(&w)?, -2)?)?, &ops::transpose(&v, -2, -1)?)
}

/// `linalg_polar(Tensor A) -> (Tensor U, Tensor H)`: `A = U H` from the thin SVD `W S Vh`:
/// `U = W Vh`, `H = Vh^T S Vh` (`m >= n`).
pub fn linalg_polar(a: &Tensor) -> Result<(Tensor, Tensor)> {
    const OP: &str = "linalg.polar";
    if a.dim() < 2 {
        return Err(Error::shape(OP, "The input tensor A must have at least 2 dimensions."));
    }
    let (m, n) = (a.sizes()[a.dim() - 2], a.sizes()[a.dim() - 1]);
    if m < n {
        return Err(Error::shape(
            OP,
            format!("input must have at least as many rows as columns, but got {m} by {n} matrices"),
        ));
    }
    // See Note [Composites standing in for native kernels].
    let _native = crate::autocast::below_autocast();
    let (w, s, vh) = ops::_linalg_svd(a, false, true, None)?;
    let v = ops::transpose(&vh, -2, -1)?;
    let u = ops::matmul(&w, &vh)?;
    let h = ops::matmul(&ops::mul(&v, &ops::unsqueeze(&s, -2)?)?, &vh)?;
    Ok((u, h))
}

/// `unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None) -> (Tensor, Tensor, Tensor)`:
/// runs of equal consecutive elements (or slices along `dim`) collapsed to one; the inverse
/// (each element's run, shaped like the input, or like `dim`) and the run lengths on request
/// (empty int64 tensors otherwise).
pub fn unique_consecutive(
    self_: &Tensor,
    return_inverse: bool,
    return_counts: bool,
    dim: Option<i64>,
) -> Result<(Tensor, Tensor, Tensor)> {
    const OP: &str = "unique_consecutive";
    let long = Some(ScalarType::I64);
    let empty = || ops::empty(&[0], long, None, Some(self_.device()), None, None);
    // The rows whose runs are compared: elements (flattened) or slices along `dim`.
    let (rows, d) = match dim {
        None => (ops::reshape(self_, &[-1, 1])?, None),
        Some(dm) => {
            let (d, _) = size_at(OP, self_, dm)?;
            let moved = ops::movedim(self_, &[d as i64], &[0])?;
            let n = moved.sizes()[0];
            (ops::reshape(&moved, &[n, -1])?, Some(d as i64))
        }
    };
    let n = rows.sizes()[0];
    let starts = if n == 0 {
        ops::empty(&[0], Some(ScalarType::Bool), None, Some(self_.device()), None, None)?
    } else {
        // A run starts at row 0 and wherever a row differs from the one before.
        let prev = ops::narrow(&rows, 0, 0, n - 1)?;
        let next = ops::narrow(&rows, 0, 1, n - 1)?;
        let differs = ops::any_dim(&ops::ne(&next, &prev)?, 1, false)?;
        let first = ops::ones(&[1], Some(ScalarType::Bool), None, Some(self_.device()), None)?;
        ops::cat(&[first, differs], 0)?
    };
    let run_starts = ops::squeeze_dim(&ops::nonzero(&starts)?, 1)?;
    let values = match d {
        None => ops::index_select(&ops::reshape(self_, &[-1])?, 0, &run_starts)?,
        Some(d) => ops::index_select(self_, d, &run_starts)?,
    };
    let inverse = if return_inverse {
        let inv = ops::sub_scalar(&ops::cumsum(&starts, 0, long)?, Scalar::Int(1), Scalar::Int(1))?;
        if d.is_none() {
            ops::reshape(&inv, self_.sizes())?
        } else {
            inv
        }
    } else {
        empty()?
    };
    let counts = if return_counts && n > 0 {
        // Each run ends where the next starts (the last at n).
        let later = ops::narrow(&run_starts, 0, 1, run_starts.numel() - 1)?;
        let last = ops::full(&[1], Scalar::Int(n), long, None, Some(self_.device()), None)?;
        ops::sub(&ops::cat(&[later, last], 0)?, &run_starts, Scalar::Int(1))?
    } else {
        empty()?
    };
    Ok((values, inverse, counts))
}

/// `gradient.scalarint(Tensor self, *, Scalar? spacing=None, int? dim=None, int edge_order=1) -> Tensor[]`:
/// NumPy's `gradient` with a uniform spacing `h`: central differences `(f[i+1] - f[i-1]) / 2h`
/// inside, one-sided ones of order `edge_order` (1 or 2) at the ends, per dimension (`dim` or
/// all). Integer inputs give the default float dtype.
pub fn gradient_scalarint(
    self_: &Tensor,
    spacing: Option<Scalar>,
    dim: Option<i64>,
    edge_order: i64,
) -> Result<Vec<Tensor>> {
    const OP: &str = "torch.gradient";
    if edge_order != 1 && edge_order != 2 {
        return Err(Error::invalid(
            OP,
            format!("torch.gradient only supports edge_order=1 and edge_order=2, but got {edge_order}"),
        ));
    }
    let dims: Vec<usize> = match dim {
        Some(d) => vec![size_at(OP, self_, d)?.0],
        None => (0..self_.dim()).collect(),
    };
    let h = spacing.map_or(1.0, |s| s.to_f64());
    let f = to_float(self_)?;
    let mut out = Vec::with_capacity(dims.len());
    for d in dims {
        let n = f.sizes()[d];
        if n < edge_order + 1 {
            return Err(Error::invalid(
                OP,
                "torch.gradient expected each dimension size to be at least edge_order+1".to_string(),
            ));
        }
        let di = d as i64;
        let at = |start: i64, len: i64| ops::narrow(&f, di, start, len);
        let scaled = |t: Tensor, c: f64| ops::mul_scalar(&t, Scalar::Float(c));
        let inner = scaled(ops::sub(&at(2, n - 2)?, &at(0, n - 2)?, Scalar::Int(1))?, 1.0 / (2.0 * h))?;
        let (first, last) = if edge_order == 1 {
            (
                scaled(ops::sub(&at(1, 1)?, &at(0, 1)?, Scalar::Int(1))?, 1.0 / h)?,
                scaled(ops::sub(&at(n - 1, 1)?, &at(n - 2, 1)?, Scalar::Int(1))?, 1.0 / h)?,
            )
        } else {
            // (-3 f0 + 4 f1 - f2) / 2h and (3 f[n-1] - 4 f[n-2] + f[n-3]) / 2h
            let lhs = ops::add(
                &ops::add(&scaled(at(0, 1)?, -1.5)?, &scaled(at(1, 1)?, 2.0)?, Scalar::Int(1))?,
                &scaled(at(2, 1)?, -0.5)?,
                Scalar::Int(1),
            )?;
            let rhs = ops::add(
                &ops::add(&scaled(at(n - 1, 1)?, 1.5)?, &scaled(at(n - 2, 1)?, -2.0)?, Scalar::Int(1))?,
                &scaled(at(n - 3, 1)?, 0.5)?,
                Scalar::Int(1),
            )?;
            (scaled(lhs, 1.0 / h)?, scaled(rhs, 1.0 / h)?)
        };
        out.push(ops::cat(&[first, inner, last], di)?);
    }
    Ok(out)
}

/// Equal-width bin edges per dimension of `points` (`[N, D]`): `bins[d]` bins over `range`
/// (pairs), else each dimension's min and max, widened by 0.5 each way when equal.
fn uniform_edges(op: &str, points: &Tensor, bins: &[i64], range: Option<&[f64]>) -> Result<Vec<Tensor>> {
    let d = bins.len();
    let n = points.sizes()[0] as usize;
    if bins.iter().any(|&b| b <= 0) {
        return Err(Error::invalid(op, format!("{op}(): bins must be > 0, but got {bins:?}")));
    }
    if let Some(r) = range {
        if r.len() != 2 * d {
            return Err(Error::invalid(
                op,
                format!("{op}(): expected {} sequences of min and max, but got {} values", d, r.len()),
            ));
        }
    }
    let x = points.to_vec::<f64>()?;
    let mut edges = Vec::with_capacity(d);
    for k in 0..d {
        let (mut lo, mut hi) = match range {
            Some(r) => (r[2 * k], r[2 * k + 1]),
            None if n == 0 => (0.0, 0.0),
            None => {
                (0..n).map(|i| x[i * d + k]).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)))
            }
        };
        if !(lo.is_finite() && hi.is_finite()) {
            return Err(Error::invalid(op, format!("{op}(): range of [{lo}, {hi}] is not finite")));
        }
        if lo > hi {
            return Err(Error::invalid(op, format!("{op}(): min should not exceed max, but got min {lo} max {hi}")));
        }
        if lo == hi {
            lo -= 0.5;
            hi += 0.5;
        }
        edges.push(ops::linspace(
            Scalar::Float(lo),
            Scalar::Float(hi),
            bins[k].checked_add(1).ok_or_else(|| Error::invalid(op, format!("{op}(): too many bins: {}", bins[k])))?,
            Some(points.dtype()),
            None,
            Some(points.device()),
            None,
        )?);
    }
    Ok(edges)
}

/// The histogram of the rows of `points` (`[N, D]`) over the bins between consecutive
/// `edges` (one 1-d tensor per dimension, increasing), counting `weight` (or 1) per point; a
/// point outside the edges is not counted, one on the last edge falls in the last bin. With
/// `density`, counts are divided by the total and the bin volume.
fn histogram_impl(
    op: &str,
    points: &Tensor,
    edges: Vec<Tensor>,
    weight: Option<&Tensor>,
    density: bool,
) -> Result<(Tensor, Vec<Tensor>)> {
    let dtype = points.dtype();
    if !matches!(dtype, ScalarType::F32 | ScalarType::F64) {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype });
    }
    let d = edges.len();
    let n = points.sizes()[0] as usize;
    let mut edge_vals = Vec::with_capacity(d);
    for e in &edges {
        if e.dim() != 1 || e.numel() < 2 || e.dtype() != dtype {
            return Err(Error::invalid(
                op,
                format!(
                    "{op}(): bins tensors should be 1-d with at least 2 edges and the input's dtype, got {:?} of {}",
                    e.sizes(),
                    e.dtype().cpp_name()
                ),
            ));
        }
        // Not checked for order, as in PyTorch: with the first edge above the last nothing is
        // counted.
        edge_vals.push(e.to_vec::<f64>()?);
    }
    let nbins: Vec<usize> = edge_vals.iter().map(|e| e.len() - 1).collect();
    let x = points.to_vec::<f64>()?;
    let w = match weight {
        Some(w) => {
            if w.numel() as usize != n {
                return Err(Error::shape(op, format!("{op}(): if weight tensor is provided, it should have the same shape as the input tensor excluding its innermost dimension, but got {:?}", w.sizes())));
            }
            Some(w.to_vec::<f64>()?)
        }
        None => None,
    };
    let total = nbins.iter().try_fold(1usize, |a, &b| a.checked_mul(b)).unwrap_or(usize::MAX);
    let mut hist = c10::size::try_vec_filled(0f64, total)?;
    'points: for i in 0..n {
        let mut cell = 0usize;
        for k in 0..d {
            let v = x[i * d + k];
            let e = &edge_vals[k];
            if !(e[0]..=e[e.len() - 1]).contains(&v) {
                continue 'points;
            }
            // The last edge <= v (the last bin also takes v on the last edge).
            let pos = e.partition_point(|&edge| edge <= v).saturating_sub(1).min(nbins[k] - 1);
            cell = cell * nbins[k] + pos;
        }
        hist[cell] += w.as_ref().map_or(1.0, |w| w[i]);
    }
    if density {
        let sum: f64 = hist.iter().sum();
        let mut idx = vec![0usize; d];
        for h in hist.iter_mut() {
            let volume: f64 = (0..d).map(|k| edge_vals[k][idx[k] + 1] - edge_vals[k][idx[k]]).product();
            *h /= sum * volume;
            for k in (0..d).rev() {
                idx[k] += 1;
                if idx[k] < nbins[k] {
                    break;
                }
                idx[k] = 0;
            }
        }
    }
    let shape: Vec<i64> = nbins.iter().map(|&b| b as i64).collect();
    let hist = crate::native::copy::to_dtype(&Tensor::from_vec(hist, &shape)?, dtype)?;
    Ok((hist, edges))
}

fn check_hist_weight(self_: &Tensor, weight: Option<&Tensor>) -> Result<()> {
    if let Some(w) = weight {
        if w.sizes() != self_.sizes() {
            return Err(Error::shape(
                "histogram",
                "torch.histogram(): if weight tensor is provided, it should have the same shape as the input tensor",
            ));
        }
    }
    Ok(())
}

/// `histogram.bins_tensor(Tensor self, Tensor bins, *, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)`
pub fn histogram_bins_tensor(
    self_: &Tensor,
    bins: &Tensor,
    weight: Option<&Tensor>,
    density: bool,
) -> Result<(Tensor, Tensor)> {
    check_hist_weight(self_, weight)?;
    let points = ops::reshape(self_, &[-1, 1])?;
    let (hist, mut edges) = histogram_impl("torch.histogram", &points, vec![bins.clone()], weight, density)?;
    Ok((hist, edges.remove(0)))
}

/// `histogram.bin_ct(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)`
pub fn histogram_bin_ct(
    self_: &Tensor,
    bins: i64,
    range: Option<&[f64]>,
    weight: Option<&Tensor>,
    density: bool,
) -> Result<(Tensor, Tensor)> {
    check_hist_weight(self_, weight)?;
    let points = ops::reshape(self_, &[-1, 1])?;
    let edges = uniform_edges("torch.histogram", &points, &[bins], range)?;
    let (hist, mut edges) = histogram_impl("torch.histogram", &points, edges, weight, density)?;
    Ok((hist, edges.remove(0)))
}

/// The points of `histogramdd`'s input (`[..., D]`) as `[N, D]`, with one bin spec per
/// dimension.
fn histogramdd_points(self_: &Tensor, specs: usize) -> Result<Tensor> {
    const OP: &str = "torch.histogramdd";
    if self_.dim() < 2 {
        return Err(Error::shape(
            OP,
            format!("{OP}: input tensor should have at least 2 dimensions, but got {}", self_.dim()),
        ));
    }
    let d = self_.sizes()[self_.dim() - 1];
    if specs as i64 != d {
        return Err(Error::invalid(
            OP,
            format!("{OP}: expected {d} sequences of bin edges for each of the {d} dimensions of the input, but got {specs}"),
        ));
    }
    ops::reshape(self_, &[-1, d])
}

/// `histogramdd(Tensor self, int[] bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)`:
/// the innermost dimension of `self` holds the coordinates.
pub fn histogramdd(
    self_: &Tensor,
    bins: &[i64],
    range: Option<&[f64]>,
    weight: Option<&Tensor>,
    density: bool,
) -> Result<(Tensor, Vec<Tensor>)> {
    const OP: &str = "torch.histogramdd";
    let points = histogramdd_points(self_, bins.len())?;
    let edges = uniform_edges(OP, &points, bins, range)?;
    histogram_impl(OP, &points, edges, weight, density)
}

/// `histogramdd.TensorList_bins(Tensor self, Tensor[] bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)`:
/// explicit edges per dimension (`range` is not used).
#[allow(non_snake_case)]
pub fn histogramdd_TensorList_bins(
    self_: &Tensor,
    bins: &[Tensor],
    _range: Option<&[f64]>,
    weight: Option<&Tensor>,
    density: bool,
) -> Result<(Tensor, Vec<Tensor>)> {
    const OP: &str = "torch.histogramdd";
    let points = histogramdd_points(self_, bins.len())?;
    histogram_impl(OP, &points, bins.to_vec(), weight, density)
}

/// `histogramdd.int_bins(Tensor self, int bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)`
pub fn histogramdd_int_bins(
    self_: &Tensor,
    bins: i64,
    range: Option<&[f64]>,
    weight: Option<&Tensor>,
    density: bool,
) -> Result<(Tensor, Vec<Tensor>)> {
    let d = self_.sizes().last().copied().unwrap_or(1).max(0) as usize;
    histogramdd(self_, &vec![bins; d], range, weight, density)
}

/// `segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, Tensor? indices=None, Tensor? offsets=None, int axis=0, bool unsafe=False, Scalar? initial=None) -> Tensor`:
/// `data` split along `axis` into consecutive segments (`lengths`, or `offsets` boundaries;
/// batched over the dimensions before `axis`), each reduced by `reduce` (`sum`, `prod`, `max`,
/// `min`, `mean`) together with `initial` when given; an empty segment is `initial`, else the
/// reduction's identity (NaN for `mean`). A composite of narrow and reductions, so autograd
/// differentiates it.
#[allow(clippy::too_many_arguments)]
pub fn segment_reduce(
    data: &Tensor,
    reduce: &str,
    lengths: Option<&Tensor>,
    indices: Option<&Tensor>,
    offsets: Option<&Tensor>,
    axis: i64,
    _unsafe: bool,
    initial: Option<Scalar>,
) -> Result<Tensor> {
    const OP: &str = "segment_reduce";
    if !["sum", "prod", "max", "min", "mean"].contains(&reduce) {
        return Err(Error::invalid(
            OP,
            format!("reduce argument must be either sum, prod, max, min or mean, got {reduce}"),
        ));
    }
    if indices.is_some() {
        return Err(Error::NotImplemented {
            op: OP.into(),
            msg: "segment_reduce(): indices based reduction is not supported yet.".into(),
        });
    }
    let (a, size) = size_at(OP, data, axis)?;
    let lens = match (lengths, offsets) {
        (Some(l), None) => l.clone(),
        (None, Some(o)) => {
            let k = o.sizes().last().copied().unwrap_or(0);
            if o.dim() == 0 || k < 1 {
                return Err(Error::invalid(OP, "offsets should have at least one element"));
            }
            ops::sub(&ops::narrow(o, -1, 1, k - 1)?, &ops::narrow(o, -1, 0, k - 1)?, Scalar::Int(1))?
        }
        _ => return Err(Error::invalid(OP, "segment_reduce(): Either lengths or offsets must be defined")),
    };
    if lens.dim() != a + 1 || lens.sizes()[..a] != data.sizes()[..a] {
        return Err(Error::shape(OP, format!("segment_reduce(): Expected lengths/offsets to have {} dimensions matching data's leading sizes, got {:?}", a + 1, lens.sizes())));
    }
    let segs = lens.sizes()[a];
    let tail: Vec<i64> = data.sizes()[a + 1..].to_vec();
    let shape: Vec<i64> = data.sizes()[..a].iter().chain(&[segs]).chain(&tail).copied().collect();
    if lens.numel() == 0 {
        // No segments (or no rows): nothing to reduce.
        return ops::empty(&shape, Some(data.dtype()), None, Some(data.device()), None, None);
    }
    let lv = lens.to_vec::<i64>()?;
    // At most lens.numel() rows: the product fits.
    let lead: i64 = data.sizes()[..a].iter().product();
    let rows = ops::reshape(data, &[lead].iter().chain(&data.sizes()[a..]).copied().collect::<Vec<_>>())?;
    let identity = |v: f64| ops::full(&tail, Scalar::Float(v), Some(data.dtype()), None, Some(data.device()), None);
    let mut out_rows = Vec::with_capacity(lead as usize);
    for r in 0..lead {
        let row = ops::select(&rows, 0, r)?;
        let ls = &lv[(r * segs) as usize..((r + 1) * segs) as usize];
        if ls.iter().any(|&l| l < 0) || ls.iter().sum::<i64>() != size {
            return Err(Error::invalid(
                OP,
                "segment_reduce(): Expected all lengths to be non-negative and to sum to the size of data along axis",
            ));
        }
        let mut start = 0;
        let mut vals = Vec::with_capacity(segs as usize);
        for &l in ls {
            let v = if l == 0 {
                match initial {
                    Some(i) => identity(i.to_f64())?,
                    None => identity(match reduce {
                        "sum" => 0.0,
                        "prod" => 1.0,
                        "max" => f64::NEG_INFINITY,
                        "min" => f64::INFINITY,
                        _ => f64::NAN,
                    })?,
                }
            } else {
                let seg = ops::narrow(&row, 0, start, l)?;
                let red = match reduce {
                    "sum" | "mean" => ops::sum_dim_intlist(&seg, Some(&[0]), false, None)?,
                    "prod" => ops::prod(&seg, 0, false, None)?,
                    "max" => ops::amax(&seg, &[0], false)?,
                    _ => ops::amin(&seg, &[0], false)?,
                };
                let red = match (initial, reduce) {
                    (None, _) => red,
                    (Some(i), "sum" | "mean") => ops::add_scalar(&red, i, Scalar::Int(1))?,
                    (Some(i), "prod") => ops::mul_scalar(&red, i)?,
                    (Some(i), "max") => ops::clamp_min(&red, i)?,
                    (Some(i), _) => ops::clamp_max(&red, i)?,
                };
                if reduce == "mean" {
                    ops::div_scalar(&red, Scalar::Int(l))?
                } else {
                    red
                }
            };
            vals.push(v);
            start += l;
        }
        out_rows.push(if vals.is_empty() {
            ops::empty(
                &[0].iter().chain(&tail).copied().collect::<Vec<_>>(),
                Some(data.dtype()),
                None,
                Some(data.device()),
                None,
                None,
            )?
        } else {
            ops::stack(&vals, 0)?
        });
    }
    ops::reshape(&ops::stack(&out_rows, 0)?, &shape)
}
