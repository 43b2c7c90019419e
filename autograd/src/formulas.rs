//! Helpers for the backward formulas of `autograd/derivatives.yaml` (PyTorch's
//! `FunctionsManual.cpp`). Every helper is written with differentiable operators, so a backward
//! computed with `create_graph` is itself differentiable: higher-order gradients need no extra
//! formulas.

use aten::{ops, Tensor};
use c10::{Error, Result, Scalar, ScalarType};

pub use crate::engine::sum_to;
pub use crate::linalg_formulas::*;

/// `Scalar::Float(x)`.
pub fn sf(x: f64) -> Scalar {
    Scalar::Float(x)
}

/// `Scalar` 1.
pub fn one() -> Scalar {
    Scalar::Int(1)
}

/// `-s`.
pub fn neg_scalar(s: &Scalar) -> Scalar {
    match *s {
        // `-i64::MIN` does not fit: it is 2^63 as a float (PyTorch's `-Scalar` would overflow).
        Scalar::Int(i) => i.checked_neg().map_or(Scalar::Float(-(i as f64)), Scalar::Int),
        Scalar::Bool(b) => Scalar::Int(-(b as i64)),
        _ => Scalar::Float(-s.to_f64()),
    }
}

/// `t * s` (skips the multiplication when `s` is 1).
pub fn maybe_multiply(t: &Tensor, s: &Scalar) -> Result<Tensor> {
    if s.to_f64() == 1.0 {
        Ok(t.clone())
    } else {
        ops::mul_scalar(t, *s)
    }
}

/// Whether a matrix is laid out column-major (its transpose is contiguous), PyTorch's test in
/// `mm_mat1_backward` / `mm_mat2_backward`.
fn is_column_major(t: &Tensor) -> bool {
    t.dim() == 2 && t.strides()[0] == 1 && t.strides()[1] == t.sizes()[0]
}

/// Gradient of `mm(mat1, mat2)` (times `alpha`) for `mat1`: `grad @ mat2ᵀ`. When `mat1` is
/// column-major (a transposed weight) it is computed as `(mat2 @ gradᵀ)ᵀ`, so the gradient has
/// the layout of `mat1` and reaches the leaf as a contiguous tensor without a transposing copy.
pub fn mm_mat1_backward(grad: &Tensor, mat1: &Tensor, mat2: &Tensor, alpha: &Scalar) -> Result<Tensor> {
    let g =
        if is_column_major(mat1) { ops::t(&ops::mm(mat2, &ops::t(grad)?)?)? } else { ops::mm(grad, &ops::t(mat2)?)? };
    maybe_multiply(&g, alpha)
}

/// Gradient of `mm(mat1, mat2)` (times `alpha`) for `mat2`: `mat1ᵀ @ grad`, computed as
/// `(gradᵀ @ mat1)ᵀ` when `mat2` is column-major (`linear`'s `weight.t()`), for the same reason.
pub fn mm_mat2_backward(grad: &Tensor, mat1: &Tensor, mat2: &Tensor, alpha: &Scalar) -> Result<Tensor> {
    let g =
        if is_column_major(mat2) { ops::t(&ops::mm(&ops::t(grad)?, mat1)?)? } else { ops::mm(&ops::t(mat1)?, grad)? };
    maybe_multiply(&g, alpha)
}

/// `t * x`.
pub fn scale(t: &Tensor, x: f64) -> Result<Tensor> {
    ops::mul_scalar(t, sf(x))
}

/// `a * b`.
pub fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    ops::mul(a, b)
}

/// `a / b`.
pub fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    ops::div(a, b)
}

/// `a + b`.
pub fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    ops::add(a, b, one())
}

/// `a - b`.
pub fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    ops::sub(a, b, one())
}

/// `t + x`.
pub fn add_s(t: &Tensor, x: f64) -> Result<Tensor> {
    ops::add_scalar(t, sf(x), one())
}

/// `x - t`.
pub fn rsub_s(t: &Tensor, x: f64) -> Result<Tensor> {
    ops::add_scalar(&ops::neg(t)?, sf(x), one())
}

/// Zeros like `t`.
pub fn zeros_like(t: &Tensor) -> Result<Tensor> {
    ops::zeros_like(t, None, None, None, None, None)
}

/// Zeros of `sizes` with `like`'s dtype.
pub fn zeros_of(sizes: &[i64], like: &Tensor) -> Result<Tensor> {
    ops::zeros(sizes, Some(like.dtype()), None, Some(like.device()), None)
}

/// `grad` where `mask`, else 0.
pub fn masked(grad: &Tensor, mask: &Tensor) -> Result<Tensor> {
    ops::mul(grad, &mask.to(grad.dtype()).call()?)
}

/// Gradient of `self` for `self * other`.
pub fn mul_tensor_backward(grad: &Tensor, other: &Tensor, self_st: ScalarType) -> Result<Tensor> {
    // PyTorch's convention for complex numbers: the gradient is `grad * conj(other)`, and a real
    // input whose product was complex gets its real part.
    real_if(ops::mul(grad, &ops::conj(other)?)?, self_st)
}

/// Gradient of `_fft_r2c`'s real input (see `aten::native::spectral::fft_r2c_backward`).
pub fn fft_r2c_backward(
    grad: &Tensor,
    dim: &[i64],
    normalization: i64,
    onesided: bool,
    self_sizes: &[i64],
) -> Result<Tensor> {
    let last = aten::wrap_dim("_fft_r2c_backward", *dim.last().unwrap_or(&-1), self_sizes.len())?;
    aten::native::spectral::fft_r2c_backward(grad, dim, normalization, onesided, self_sizes[last])
}

/// Gradient of `other` for `self / other`: `-grad * conj(self / other^2)` (the conjugate
/// matters only for complex inputs), real for a real `other`.
pub fn div_tensor_other_backward(grad: &Tensor, self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let q = ops::div(self_, &ops::mul(other, other)?)?;
    let g = ops::neg(&ops::mul(grad, &ops::conj(&q)?)?)?;
    real_if(g, other.dtype())
}

/// Gradient of `self` for `self / other`: `grad / conj(other)`, real for a real `self`.
pub fn div_tensor_self_backward(grad: &Tensor, other: &Tensor, self_st: ScalarType) -> Result<Tensor> {
    real_if(ops::div(grad, &ops::conj(other)?)?, self_st)
}

/// PyTorch's `handle_r_to_c`: the real part of a complex gradient of a real input.
fn real_if(g: Tensor, input: ScalarType) -> Result<Tensor> {
    if g.dtype().is_complex() && !input.is_complex() {
        ops::real(&g)
    } else {
        Ok(g)
    }
}

/// `Re(conj(g) * w)` for complex `g` and `w`, from their parts.
fn re_conj_mul(g: &Tensor, wr: &Tensor, wi: &Tensor) -> Result<Tensor> {
    let (gr, gi) = (ops::real(g)?, ops::imag(g)?);
    ops::add(&ops::mul(&gr, wr)?, &ops::mul(&gi, wi)?, Scalar::Int(1))
}

/// Gradient of `abs` for `polar(abs, angle)`: `Re(conj(grad) * sgn(result))`.
pub fn polar_backward_abs(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    let s = ops::sgn(result)?;
    re_conj_mul(grad, &ops::real(&s)?, &ops::imag(&s)?)
}

/// Gradient of `angle` for `polar(abs, angle)`: `Re(conj(grad) * i * result)`, where
/// `i * result = -Im(result) + i Re(result)`.
pub fn polar_backward_angle(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    re_conj_mul(grad, &ops::neg(&ops::imag(result)?)?, &ops::real(result)?)
}

/// Gradient of `sgn`: zero for real inputs. The complex case (PyTorch's `sgn_backward`) is not
/// written yet, and says so instead of returning zeros.
pub fn sgn_backward(grad: &Tensor, self_: &Tensor) -> Result<Tensor> {
    if self_.dtype().is_complex() {
        return Err(Error::NotImplemented {
            op: "sgn".into(),
            msg: "the derivative of sgn for complex inputs is not implemented".into(),
        });
    }
    zeros_like(grad)
}

/// Gradient of `angle`: zero for real inputs; for complex `z`, `grad * i z / |z|^2` (zero at
/// `z = 0`), PyTorch's `angle_backward`.
pub fn angle_backward(grad: &Tensor, self_: &Tensor) -> Result<Tensor> {
    if !self_.dtype().is_complex() {
        return zeros_like(self_);
    }
    let r2 = ops::mul(&ops::abs(self_)?, &ops::abs(self_)?)?;
    // |z|^2 with the zeros replaced by 1: z is 0 there, so the quotient is 0 as PyTorch masks it.
    let one = ops::ones_like(&r2, None, None, None, None, None)?;
    let r2 = ops::where_self(&ops::eq_scalar(&r2, Scalar::Int(0))?, &one, &r2)?;
    let (re, im) = (ops::real(self_)?, ops::imag(self_)?);
    // i z = -im + i re
    let iz = ops::complex(&ops::neg(&im)?.contiguous().call()?, &re.contiguous().call()?)?;
    ops::mul(grad, &ops::div(&iz, &r2)?)
}

/// Gradient of `self` for `self ** exponent` (a scalar exponent).
pub fn pow_backward(grad: &Tensor, self_: &Tensor, exponent: &Scalar) -> Result<Tensor> {
    let e = exponent.to_f64();
    if e == 0.0 {
        return zeros_like(self_);
    }
    let p = ops::pow_tensor_scalar(self_, sf(e - 1.0))?;
    ops::mul(grad, &scale(&p, e)?)
}

/// Gradient of `self` for `self ** exponent` (a tensor exponent); 0 where the exponent is 0.
pub fn pow_backward_self(grad: &Tensor, self_: &Tensor, exponent: &Tensor) -> Result<Tensor> {
    let p = ops::pow(self_, &ops::sub_scalar(exponent, one(), one())?)?;
    let g = ops::mul(grad, &ops::mul(exponent, &p)?)?;
    let zero = ops::eq_scalar(exponent, Scalar::Int(0))?;
    ops::masked_fill(&g, &zero, Scalar::Int(0))
}

/// Gradient of `exponent` for `self ** exponent`: `grad * result * log(self)`, 0 where
/// `self == 0` and `exponent >= 0`.
pub fn pow_backward_exponent(grad: &Tensor, self_: &Tensor, exponent: &Tensor, result: &Tensor) -> Result<Tensor> {
    let g = ops::mul(grad, &ops::mul(result, &ops::log(self_)?)?)?;
    let cond = ops::logical_and(&ops::eq_scalar(self_, Scalar::Int(0))?, &ops::ge_scalar(exponent, Scalar::Int(0))?)?;
    ops::masked_fill(&g, &cond, Scalar::Int(0))
}

/// Expands the gradient of a reduction back to the input's shape.
pub fn sum_backward(grad: &Tensor, sizes: &[i64], dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    let n = sizes.len() as i64;
    let mut g = grad.clone();
    if !keepdim && n > 0 {
        if let Some(ds) = dims.filter(|d| !d.is_empty()) {
            let mut w: Vec<i64> = ds.iter().map(|&d| if d < 0 { d + n } else { d }).collect();
            w.sort_unstable();
            for d in w {
                g = ops::unsqueeze(&g, d)?;
            }
        } else {
            g = ops::reshape(&g, &vec![1; n as usize])?;
        }
    }
    ops::expand(&g, sizes, false)
}

/// Number of elements reduced by `dims` of `sizes` (all when None or empty).
fn reduced_count(sizes: &[i64], dims: Option<&[i64]>) -> i64 {
    let n = sizes.len() as i64;
    match dims.filter(|d| !d.is_empty()) {
        None => sizes.iter().product(),
        // A zero-dim tensor takes dim 0 or -1 (the forward accepted it): its one element.
        Some(ds) => ds
            .iter()
            .map(|&d| {
                let i = if d < 0 { d + n } else { d };
                usize::try_from(i).ok().and_then(|i| sizes.get(i)).copied().unwrap_or(1)
            })
            .product(),
    }
}

/// Gradient of `mean`.
pub fn mean_backward(grad: &Tensor, sizes: &[i64], dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    let count = reduced_count(sizes, dims).max(1);
    scale(&sum_backward(grad, sizes, dims, keepdim)?, 1.0 / count as f64)
}

/// Gradient of `var` (with `correction`).
pub fn var_backward(
    grad: &Tensor,
    self_: &Tensor,
    dims: Option<&[i64]>,
    correction: &Option<Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    let c = correction.as_ref().map_or(1.0, |s| s.to_f64());
    let count = reduced_count(self_.sizes(), dims) as f64;
    let g = sum_backward(grad, self_.sizes(), dims, keepdim)?;
    let all: Vec<i64> = (0..self_.dim() as i64).collect();
    let d = dims.filter(|d| !d.is_empty()).unwrap_or(&all);
    let mean = ops::mean_dim(self_, Some(d), true, None)?;
    let centered = ops::sub(self_, &mean, one())?;
    ops::mul(&g, &scale(&centered, 2.0 / (count - c).max(0.0))?)
}

/// Gradient of `std`: `var_backward / (2 * result)`.
pub fn std_backward(
    grad: &Tensor,
    self_: &Tensor,
    dims: Option<&[i64]>,
    correction: &Option<Scalar>,
    keepdim: bool,
    result: &Tensor,
) -> Result<Tensor> {
    let g = ops::div(grad, &scale(result, 2.0)?)?;
    var_backward(&g, self_, dims, correction, keepdim)
}

/// Gradient of a full `max`/`min`: shared evenly by the elements equal to the result.
pub fn evenly_distribute_backward(grad: &Tensor, self_: &Tensor, result: &Tensor) -> Result<Tensor> {
    let mask = ops::eq(self_, result)?.to(grad.dtype()).call()?;
    let count = ops::sum(&mask, None)?;
    ops::mul(&mask, &ops::div(grad, &count)?)
}

/// Gradient of `amax`/`amin` over `dims`: shared evenly by the extremal elements.
pub fn amax_backward(grad: &Tensor, self_: &Tensor, result: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    let r = sum_backward(result, self_.sizes(), Some(dims), keepdim)?;
    let g = sum_backward(grad, self_.sizes(), Some(dims), keepdim)?;
    let mask = ops::eq(self_, &r)?.to(grad.dtype()).call()?;
    let all: Vec<i64> = (0..self_.dim() as i64).collect();
    let d = if dims.is_empty() { &all[..] } else { dims };
    let count = ops::sum_dim_intlist(&mask, Some(d), true, None)?;
    ops::div(&ops::mul(&g, &mask)?, &count)
}

/// Gradient of a value-selecting reduction (`max.dim`, `min.dim`, ...): `grad` scattered to
/// the selected indices.
pub fn value_selecting_reduction_backward(
    grad: &Tensor,
    dim: i64,
    indices: &Tensor,
    sizes: &[i64],
    keepdim: bool,
) -> Result<Tensor> {
    let (g, i) = if keepdim || sizes.is_empty() {
        (grad.clone(), indices.clone())
    } else {
        (ops::unsqueeze(grad, dim)?, ops::unsqueeze(indices, dim)?)
    };
    let z = zeros_of(sizes, grad)?;
    if sizes.is_empty() {
        return Ok(g);
    }
    ops::scatter_add(&z, dim, &i, &g)
}

/// Gradient of `logsumexp`: `grad * exp(self - result)`.
pub fn logsumexp_backward(
    grad: &Tensor,
    self_: &Tensor,
    result: &Tensor,
    dims: &[i64],
    keepdim: bool,
) -> Result<Tensor> {
    let g = sum_backward(grad, self_.sizes(), Some(dims), keepdim)?;
    let r = sum_backward(result, self_.sizes(), Some(dims), keepdim)?;
    ops::mul(&g, &ops::exp(&ops::sub(self_, &r, one())?)?)
}

/// Gradient of `cumsum`: the reversed cumulative sum of `grad`.
pub fn cumsum_backward(grad: &Tensor, dim: i64) -> Result<Tensor> {
    if grad.dim() == 0 {
        return Ok(grad.clone());
    }
    let f = ops::flip(grad, &[dim])?;
    ops::flip(&ops::cumsum(&f, dim, None)?, &[dim])
}

/// Gradient of `softmax`: `y * (grad - sum(grad * y))`.
pub fn softmax_backward(grad: &Tensor, output: &Tensor, dim: i64) -> Result<Tensor> {
    let gy = ops::mul(grad, output)?;
    let s = ops::sum_dim_intlist(&gy, Some(&[dim]), true, None)?;
    ops::sub(&gy, &ops::mul(output, &s)?, one())
}

/// Gradient of `log_softmax`: `grad - exp(y) * sum(grad)`.
pub fn log_softmax_backward(grad: &Tensor, output: &Tensor, dim: i64) -> Result<Tensor> {
    let s = ops::sum_dim_intlist(grad, Some(&[dim]), true, None)?;
    ops::sub(grad, &ops::mul(&ops::exp(output)?, &s)?, one())
}

/// `grad * (x > threshold)`.
pub fn threshold_backward(grad: &Tensor, x: &Tensor, threshold: f64) -> Result<Tensor> {
    ops::threshold_backward(grad, x, sf(threshold))
}

/// Gradient of `sigmoid` from its result.
pub fn sigmoid_backward(grad: &Tensor, y: &Tensor) -> Result<Tensor> {
    ops::mul(grad, &ops::mul(y, &rsub_s(y, 1.0)?)?)
}

/// Gradient of `tanh` from its result.
pub fn tanh_backward(grad: &Tensor, y: &Tensor) -> Result<Tensor> {
    ops::mul(grad, &rsub_s(&ops::mul(y, y)?, 1.0)?)
}

/// Gradient of `softplus(x, beta, threshold)`.
pub fn softplus_backward(grad: &Tensor, x: &Tensor, beta: &Scalar, threshold: &Scalar) -> Result<Tensor> {
    let b = beta.to_f64();
    let bx = scale(x, b)?;
    let s = ops::sigmoid(&bx)?;
    let linear = ops::gt_scalar(&bx, sf(threshold.to_f64()))?;
    let g = ops::mul(grad, &s)?;
    ops::where_self(&linear, grad, &g)
}

/// Gradient of `silu`.
pub fn silu_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    let s = ops::sigmoid(x)?;
    let d = ops::mul(&s, &add_s(&ops::mul(x, &rsub_s(&s, 1.0)?)?, 1.0)?)?;
    ops::mul(grad, &d)
}

/// Gradient of `gelu` (`approximate` = "none" or "tanh").
pub fn gelu_backward(grad: &Tensor, x: &Tensor, approximate: &str) -> Result<Tensor> {
    let d = if approximate == "tanh" {
        let k = (2.0 / std::f64::consts::PI).sqrt();
        let x3 = ops::mul(x, &ops::mul(x, x)?)?;
        let inner = scale(&ops::add(x, &scale(&x3, 0.044715)?, one())?, k)?;
        let t = ops::tanh(&inner)?;
        let left = scale(&add_s(&t, 1.0)?, 0.5)?;
        let dinner = scale(&add_s(&scale(&ops::mul(x, x)?, 3.0 * 0.044715)?, 1.0)?, k)?;
        let right = ops::mul(&scale(x, 0.5)?, &ops::mul(&rsub_s(&ops::mul(&t, &t)?, 1.0)?, &dinner)?)?;
        ops::add(&left, &right, one())?
    } else {
        let cdf = scale(&add_s(&ops::erf(&scale(x, std::f64::consts::FRAC_1_SQRT_2)?)?, 1.0)?, 0.5)?;
        let pdf = scale(&ops::exp(&scale(&ops::mul(x, x)?, -0.5)?)?, 1.0 / (2.0 * std::f64::consts::PI).sqrt())?;
        ops::add(&cdf, &ops::mul(x, &pdf)?, one())?
    };
    ops::mul(grad, &d)
}

/// Gradient of `elu(x, alpha, scale, input_scale)`.
pub fn elu_backward(
    grad: &Tensor,
    x: &Tensor,
    alpha: &Scalar,
    scale_: &Scalar,
    input_scale: &Scalar,
) -> Result<Tensor> {
    let (a, s, is) = (alpha.to_f64(), scale_.to_f64(), input_scale.to_f64());
    let neg = scale(&ops::exp(&scale(x, is)?)?, a * s * is)?;
    let pos = ops::gt_scalar(x, Scalar::Int(0))?;
    ops::mul(grad, &ops::where_self(&pos, &ops::full_like(x, sf(s), None, None, None, None, None)?, &neg)?)
}

/// Gradient of `leaky_relu`.
pub fn leaky_relu_backward(grad: &Tensor, x: &Tensor, slope: &Scalar) -> Result<Tensor> {
    let pos = ops::gt_scalar(x, Scalar::Int(0))?;
    ops::where_self(&pos, grad, &ops::mul_scalar(grad, *slope)?)
}

/// `grad` where `lo < x < hi` (or `<=` when `inclusive`), else 0.
pub fn between_backward(
    grad: &Tensor,
    x: &Tensor,
    lo: Option<f64>,
    hi: Option<f64>,
    inclusive: bool,
) -> Result<Tensor> {
    let mut mask = ops::ones_like(x, Some(ScalarType::Bool), None, None, None, None)?;
    if let Some(l) = lo {
        let m = if inclusive { ops::ge_scalar(x, sf(l))? } else { ops::gt_scalar(x, sf(l))? };
        mask = ops::logical_and(&mask, &m)?;
    }
    if let Some(h) = hi {
        let m = if inclusive { ops::le_scalar(x, sf(h))? } else { ops::lt_scalar(x, sf(h))? };
        mask = ops::logical_and(&mask, &m)?;
    }
    masked(grad, &mask)
}

/// Gradient of `hardswish`.
pub fn hardswish_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    let mid = add_s(&scale(x, 1.0 / 3.0)?, 0.5)?;
    let lo = ops::lt_scalar(x, sf(-3.0))?;
    let hi = ops::gt_scalar(x, sf(3.0))?;
    let d = ops::masked_fill(&ops::masked_fill(&mid, &lo, Scalar::Int(0))?, &hi, Scalar::Int(1))?;
    ops::mul(grad, &d)
}

/// Gradient of `mish`: `tanh(sp) + x * sigmoid(x) * (1 - tanh(sp)^2)`, `sp = softplus(x)`.
pub fn mish_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    let t = ops::tanh(&ops::softplus(x, Scalar::Int(1), Scalar::Int(20))?)?;
    let s = ops::sigmoid(x)?;
    let d = ops::add(&t, &ops::mul(&ops::mul(x, &s)?, &rsub_s(&ops::mul(&t, &t)?, 1.0)?)?, one())?;
    ops::mul(grad, &d)
}

/// Gradient of `maximum`/`minimum` for `self` (`for_self`) or `other`: the selected side gets
/// the gradient, ties share it.
pub fn extremum_backward(grad: &Tensor, self_: &Tensor, other: &Tensor, max: bool, for_self: bool) -> Result<Tensor> {
    let (a, b) = if for_self { (self_, other) } else { (other, self_) };
    let wins = if max { ops::gt(a, b)? } else { ops::lt(a, b)? };
    let ties = ops::eq(a, b)?;
    let w = ops::add(&wins.to(grad.dtype()).call()?, &scale(&ties.to(grad.dtype()).call()?, 0.5)?, one())?;
    ops::mul(grad, &w)
}

/// The inverse of a permutation.
pub fn invert_permutation(dims: &[i64]) -> Vec<i64> {
    let n = dims.len() as i64;
    let mut inv = vec![0; dims.len()];
    for (i, &d) in dims.iter().enumerate() {
        inv[(if d < 0 { d + n } else { d }) as usize] = i as i64;
    }
    inv
}

/// Gradient of `unsqueeze`/`squeeze`-like views: `grad` reshaped to the input's sizes.
pub fn reshape_to(grad: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    ops::reshape(grad, sizes)
}

/// Gradient of `slice(dim, start, end, step)`: `grad` placed in zeros of the input's shape.
pub fn slice_backward(
    grad: &Tensor,
    sizes: &[i64],
    dim: i64,
    start: Option<i64>,
    _end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    let n = sizes.len() as i64;
    let d = (if dim < 0 { dim + n } else { dim }) as usize;
    let len = sizes[d];
    let clampi = |v: i64| if v < 0 { (v + len).max(0) } else { v.min(len) };
    let s = clampi(start.unwrap_or(0));
    if step == 1 {
        // Zero padding before and after along `d` (constant_pad_nd lists the last dim first).
        let after = len - s - grad.sizes()[d];
        let mut pad = vec![0i64; 2 * (sizes.len() - d)];
        let k = 2 * (sizes.len() - 1 - d);
        pad[k] = s;
        pad[k + 1] = after;
        return ops::constant_pad_nd(grad, &pad, Scalar::Int(0));
    }
    let count = grad.sizes()[d];
    let idx = ops::arange_start_step(
        Scalar::Int(s),
        Scalar::Int(s + count * step),
        Scalar::Int(step),
        Some(ScalarType::I64),
        None,
        Some(grad.device()),
        None,
    )?;
    ops::index_add(&zeros_of(sizes, grad)?, d as i64, &idx, grad, one())
}

/// Gradient of `select(dim, index)`.
pub fn select_backward(grad: &Tensor, sizes: &[i64], dim: i64, index: i64) -> Result<Tensor> {
    let n = sizes.len() as i64;
    let d = if dim < 0 { dim + n } else { dim };
    let len = sizes[d as usize];
    let i = if index < 0 { index + len } else { index };
    slice_backward(&ops::unsqueeze(grad, d)?, sizes, d, Some(i), Some(i + 1), 1)
}

/// Gradient of `narrow(dim, start, length)`.
pub fn narrow_backward(grad: &Tensor, sizes: &[i64], dim: i64, start: i64) -> Result<Tensor> {
    slice_backward(grad, sizes, dim, Some(start), None, 1)
}

/// Gradient of `constant_pad_nd`: the un-padded region of `grad` (negative padding crops).
pub fn constant_pad_backward(grad: &Tensor, pad: &[i64]) -> Result<Tensor> {
    let neg: Vec<i64> = pad.iter().map(|p| -p).collect();
    ops::constant_pad_nd(grad, &neg, Scalar::Int(0))
}

/// Gradient of `cat`: `grad` split back into the inputs' sizes along `dim`.
pub fn cat_backward(grad: &Tensor, sizes: &[Vec<i64>], dim: i64) -> Result<Vec<Tensor>> {
    let nd = grad.dim() as i64;
    let d = if dim < 0 { dim + nd } else { dim };
    let mut out = Vec::with_capacity(sizes.len());
    let mut at = 0;
    for s in sizes {
        if s.len() == 1 && s[0] == 0 && grad.dim() != 1 {
            // A legacy empty input of cat: its gradient is empty too.
            out.push(zeros_of(s, grad)?);
            continue;
        }
        let len = s[d as usize];
        out.push(ops::narrow(grad, d, at, len)?);
        at += len;
    }
    Ok(out)
}

/// Gradient of `stack`: `grad` unbound along `dim`.
pub fn stack_backward(grad: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    ops::unbind(grad, dim)
}

/// Gradient of `split`/`unbind`-like operators returning several views: the gradients
/// concatenated back (`unsqueeze` first for `unbind`).
pub fn gather_pieces_backward(grads: &[Tensor], dim: i64, unsqueeze: bool) -> Result<Tensor> {
    let pieces: Vec<Tensor> =
        if unsqueeze { grads.iter().map(|g| ops::unsqueeze(g, dim)).collect::<Result<_>>()? } else { grads.to_vec() };
    ops::cat(&pieces, dim)
}

/// Gradient of `index_select`: `grad` added back at the selected indices.
pub fn index_select_backward(grad: &Tensor, sizes: &[i64], dim: i64, index: &Tensor) -> Result<Tensor> {
    ops::index_add(&zeros_of(sizes, grad)?, dim, index, grad, one())
}

/// Gradient of `gather`: `grad` added back at the gathered positions.
pub fn gather_backward(grad: &Tensor, sizes: &[i64], dim: i64, index: &Tensor) -> Result<Tensor> {
    ops::scatter_add(&zeros_of(sizes, grad)?, dim, index, grad)
}

/// Gradient of `index.Tensor`: `grad` accumulated at the indexed positions.
pub fn index_backward(grad: &Tensor, sizes: &[i64], indices: &[Option<Tensor>]) -> Result<Tensor> {
    ops::index_put(&zeros_of(sizes, grad)?, indices, grad, true)
}

/// Gradient of `embedding_dense_backward` for `grad_output`: each position gets the table
/// gradient's row of its index, zero at `padding_idx` and divided by the index's count with
/// `scale_grad_by_freq` (the forward's sum is linear in each row).
pub fn embedding_dense_double_backward(
    grad: &Tensor,
    indices: &Tensor,
    padding_idx: i64,
    scale_grad_by_freq: bool,
) -> Result<Tensor> {
    let mut g = ops::embedding(grad, indices, -1, false, false)?;
    if padding_idx >= 0 {
        let keep = ops::ne_scalar(indices, Scalar::Int(padding_idx))?;
        g = masked(&g, &ops::unsqueeze(&keep, -1)?)?;
    }
    if scale_grad_by_freq {
        // Each index's count: the table gradient of an all-ones gradient.
        let mut ones_shape = indices.sizes().to_vec();
        ones_shape.push(1);
        let ones = ops::ones(&ones_shape, Some(grad.dtype()), None, Some(grad.device()), None)?;
        let counts = ops::embedding_dense_backward(&ones, indices, grad.sizes()[0], -1, false)?;
        let per_position = ops::embedding(&counts, indices, -1, false, false)?;
        g = ops::div(&g, &per_position)?;
    }
    Ok(g)
}

/// Gradient of `mse_loss` for `self` (negate for `target`).
pub fn mse_loss_backward(grad: &Tensor, self_: &Tensor, target: &Tensor, reduction: i64) -> Result<Tensor> {
    let d = scale(&ops::sub(self_, target, one())?, 2.0)?;
    let g = ops::mul(&d, grad)?;
    if reduction == 1 {
        scale(&g, 1.0 / (self_.numel().max(1)) as f64)
    } else {
        Ok(g)
    }
}

/// Gradient of `l1_loss` for `self`.
pub fn l1_loss_backward(grad: &Tensor, self_: &Tensor, target: &Tensor, reduction: i64) -> Result<Tensor> {
    let g = ops::mul(&ops::sgn(&ops::sub(self_, target, one())?)?, grad)?;
    if reduction == 1 {
        scale(&g, 1.0 / (self_.numel().max(1)) as f64)
    } else {
        Ok(g)
    }
}

/// Gradient of `binary_cross_entropy_with_logits` for `self`.
pub fn bce_with_logits_backward(
    grad: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    pos_weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let s = ops::sigmoid(self_)?;
    let mut d = match pos_weight {
        // (1 + (pw - 1) t) s - pw t
        Some(pw) => {
            let coef = add_s(&ops::mul(&add_s(pw, -1.0)?, target)?, 1.0)?;
            ops::sub(&ops::mul(&coef, &s)?, &ops::mul(pw, target)?, one())?
        }
        None => ops::sub(&s, target, one())?,
    };
    if let Some(w) = weight {
        d = ops::mul(&d, w)?;
    }
    let g = ops::mul(&d, grad)?;
    if reduction == 1 {
        scale(&g, 1.0 / (self_.numel().max(1)) as f64)
    } else {
        Ok(g)
    }
}

/// The class dimension of a loss input (`0` for an unbatched `[C]` input).
fn class_dim(x: &Tensor) -> i64 {
    if x.dim() == 1 {
        0
    } else {
        1
    }
}

/// Gradient of `nll_loss`/`nll_loss2d` for `self`: `-w[t] * grad` at the target class of each
/// position (0 where `t == ignore_index`), divided by the total weight for `mean`.
pub fn nll_loss_backward(
    grad: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
) -> Result<Tensor> {
    let cd = class_dim(self_);
    let keep = ops::ne_scalar(target, Scalar::Int(ignore_index))?;
    let safe_t = ops::masked_fill(target, &ops::logical_not(&keep)?, Scalar::Int(0))?;
    let w = match weight {
        Some(w) => ops::index_select(w, 0, &ops::reshape(&safe_t, &[-1])?)?.reshape(safe_t.sizes())?,
        None => ops::ones_like(&safe_t, Some(self_.dtype()), None, None, None, None)?,
    };
    let w = masked(&w, &keep)?;
    let coef = match reduction {
        1 => ops::div(&ops::neg(&w)?, &ops::sum(&w, None)?)?,
        _ => ops::neg(&w)?,
    };
    let g = ops::mul(&coef, grad)?;
    let z = zeros_like(self_)?;
    ops::scatter_add(&z, cd, &ops::unsqueeze(&safe_t, cd)?, &ops::unsqueeze(&g, cd)?)
}

/// Gradient of `max_pool*_with_indices` for `self`: `grad` added at the argmax positions.
pub fn max_pool_backward(grad: &Tensor, sizes: &[i64], indices: &Tensor, spatial: usize) -> Result<Tensor> {
    let lead = sizes.len() - spatial;
    let mut flat: Vec<i64> = sizes[..lead].to_vec();
    flat.push(-1);
    let g = ops::reshape(grad, &flat)?;
    let i = ops::reshape(indices, &flat)?;
    let mut zs: Vec<i64> = sizes[..lead].to_vec();
    zs.push(sizes[lead..].iter().product());
    let z = zeros_of(&zs, grad)?;
    ops::reshape(&ops::scatter_add(&z, lead as i64, &i, &g)?, sizes)
}

/// Gradient of `max_pool*_with_indices_backward` for `grad_output`: the incoming gradient (of
/// the input's shape) read back at the positions of the maxima.
pub fn max_pool_double_backward(grad: &Tensor, indices: &Tensor, spatial: usize) -> Result<Tensor> {
    let lead = indices.dim() - spatial;
    let mut flat: Vec<i64> = indices.sizes()[..lead].to_vec();
    flat.push(-1);
    let g = ops::reshape(grad, &flat)?;
    let i = ops::reshape(indices, &flat)?;
    ops::reshape(&ops::gather(&g, lead as i64, &i, false)?, indices.sizes())
}

/// Gradient of `convolution` for `input`: a transposed convolution of `grad` (a plain one for
/// a transposed forward), with the output padding that restores the input's size.
#[allow(clippy::too_many_arguments)]
pub fn convolution_backward_input(
    grad: &Tensor,
    input_sizes: &[i64],
    weight: &Tensor,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    groups: i64,
) -> Result<Tensor> {
    let sp = input_sizes.len() - 2;
    let at = |v: &[i64], i: usize| if v.len() == 1 { v[0] } else { v[i] };
    if transposed {
        let zeros = vec![0; sp];
        let mut g = ops::convolution(grad, weight, None, stride, padding, dilation, false, &zeros, groups)?;
        // An output_padding of a stride or more (allowed when below the dilation) adds output
        // rows no input position reaches: the convolution then yields extra trailing positions.
        for i in 0..sp {
            if g.sizes()[2 + i] > input_sizes[2 + i] {
                g = ops::narrow(&g, 2 + i as i64, 0, input_sizes[2 + i])?;
            }
        }
        return Ok(g);
    }
    let mut op = Vec::with_capacity(sp);
    for i in 0..sp {
        let k = weight.sizes()[2 + i];
        let out = grad.sizes()[2 + i];
        let full = (out - 1) * at(stride, i) - 2 * at(padding, i) + at(dilation, i) * (k - 1) + 1;
        op.push(input_sizes[2 + i] - full);
    }
    ops::convolution(grad, weight, None, stride, padding, dilation, true, &op, groups)
}

/// Gradient of `convolution` for `weight`: per group, a convolution of the input (batch and
/// channels swapped) with the output gradient as kernel, stride and dilation exchanged.
#[allow(clippy::too_many_arguments)]
pub fn convolution_backward_weight(
    grad: &Tensor,
    input: &Tensor,
    weight_sizes: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    groups: i64,
) -> Result<Tensor> {
    let sp = weight_sizes.len() - 2;
    let expand = |v: &[i64]| -> Vec<i64> {
        if v.len() == 1 {
            vec![v[0]; sp]
        } else {
            v.to_vec()
        }
    };
    let (stride, padding, dilation) = (expand(stride), expand(padding), expand(dilation));
    // Without a graph to record, the direct kernel (See Note [Convolution weight gradient]).
    if !transposed && !crate::grad_mode::is_grad_enabled() {
        return ops::_convolution_weight_backward(grad, input, weight_sizes, &stride, &padding, &dilation, groups);
    }
    let zeros = vec![0; sp];
    // Non-transposed: data = input, kernel = grad. Transposed: data = grad, kernel = input.
    let (data, kern) = if transposed { (grad, input) } else { (input, grad) };
    let cd = data.sizes()[1] / groups;
    let ck = kern.sizes()[1] / groups;
    let mut parts = Vec::with_capacity(groups as usize);
    for g in 0..groups {
        let d = ops::transpose(&ops::narrow(data, 1, g * cd, cd)?, 0, 1)?;
        let k = ops::transpose(&ops::narrow(kern, 1, g * ck, ck)?, 0, 1)?;
        let mut w = ops::convolution(&d, &k, None, &dilation, &padding, &stride, false, &zeros, 1)?;
        for i in 0..sp {
            w = ops::narrow(&w, 2 + i as i64, 0, weight_sizes[2 + i])?;
        }
        // w is [data channels, kernel channels, ...]; the weight layout has them the other way
        // round in both cases ([out, in/g] plain, [in, out/g] transposed).
        parts.push(ops::transpose(&w, 0, 1)?);
    }
    let w = if parts.len() == 1 { parts.pop().expect("one group") } else { ops::cat(&parts, 0)? };
    ops::contiguous(&w, c10::MemoryFormat::Contiguous)
}

/// Gradient of `convolution` for `bias`: `grad` summed over every dim but the channels.
pub fn convolution_backward_bias(grad: &Tensor) -> Result<Tensor> {
    // Sum the contiguous spatial run of each (image, channel) first, then over the batch: two
    // single-dimension reductions instead of one over scattered dimensions.
    let (n, c) = (grad.sizes()[0], grad.sizes()[1]);
    if grad.numel() == 0 {
        let dims: Vec<i64> = (0..grad.dim() as i64).filter(|&d| d != 1).collect();
        return ops::sum_dim_intlist(grad, Some(&dims), false, None);
    }
    let rows = ops::sum_dim_intlist(&ops::reshape(grad, &[n, c, -1])?, Some(&[2]), false, None)?;
    ops::sum_dim_intlist(&rows, Some(&[0]), false, None)
}

/// An error for formulas that are not available for some argument combination.
pub fn not_implemented(what: &str) -> Result<Tensor> {
    Err(Error::NotImplemented { op: what.to_string(), msg: format!("the derivative for '{what}' is not implemented.") })
}

/// Gradient of `logit(x, eps)`: `grad / (x (1 - x))`, 0 outside `[eps, 1 - eps]` when `eps` is
/// given.
pub fn logit_backward(grad: &Tensor, x: &Tensor, eps: Option<f64>) -> Result<Tensor> {
    let d = ops::div(grad, &ops::mul(x, &rsub_s(x, 1.0)?)?)?;
    match eps {
        None => Ok(d),
        Some(e) => between_backward(&d, x, Some(e), Some(1.0 - e), true),
    }
}

/// Gradient of `prod(dim)` for inputs without zeros: `grad * result / self`.
pub fn prod_backward(grad: &Tensor, self_: &Tensor, result: &Tensor, dim: i64, keepdim: bool) -> Result<Tensor> {
    let g = sum_backward(grad, self_.sizes(), Some(&[dim]), keepdim)?;
    let r = sum_backward(result, self_.sizes(), Some(&[dim]), keepdim)?;
    ops::div(&ops::mul(&g, &r)?, self_)
}

/// Gradient of `cumprod` for inputs without zeros: the reversed cumulative sum of
/// `grad * result`, divided by `self`.
pub fn cumprod_backward(grad: &Tensor, self_: &Tensor, result: &Tensor, dim: i64) -> Result<Tensor> {
    ops::div(&cumsum_backward(&ops::mul(grad, result)?, dim)?, self_)
}

/// Gradient of `norm(p, dim)`: `grad * x |x|^(p-2) / norm^(p-1)` (p = 2 by default).
pub fn norm_backward(
    grad: &Tensor,
    self_: &Tensor,
    p: &Option<Scalar>,
    result: &Tensor,
    dims: &[i64],
    keepdim: bool,
) -> Result<Tensor> {
    let p = p.as_ref().map_or(2.0, |s| s.to_f64());
    if p == 0.0 {
        // The count of non-zeros is piecewise constant.
        return ops::zeros_like(self_, None, None, None, None, None);
    }
    let g = sum_backward(grad, self_.sizes(), Some(dims), keepdim)?;
    let r = sum_backward(result, self_.sizes(), Some(dims), keepdim)?;
    if p.is_infinite() {
        // The gradient is shared evenly by the elements whose magnitude is the norm.
        let hit = ops::eq(&ops::abs(self_)?, &r)?;
        let hit_f = ops::to(&hit, self_.dtype(), false, false, None)?;
        let count = sum_backward(
            &ops::sum_dim_intlist(&hit_f, Some(dims), keepdim, None)?,
            self_.sizes(),
            Some(dims),
            keepdim,
        )?;
        let share = ops::div(&ops::mul(&ops::sgn(self_)?, &hit_f)?, &count)?;
        return ops::mul(&g, &share);
    }
    let d = if p == 2.0 {
        ops::div(self_, &r)?
    } else if p == 1.0 {
        ops::sgn(self_)?
    } else if p < 1.0 {
        // sgn(x) |x|^(p-1) / norm^(p-1), 0 at x == 0 (where |x|^(p-1) is infinite).
        let num = ops::mul(&ops::sgn(self_)?, &ops::pow_tensor_scalar(&ops::abs(self_)?, sf(p - 1.0))?)?;
        let num = ops::masked_fill(&num, &ops::eq_scalar(self_, Scalar::Int(0))?, Scalar::Int(0))?;
        ops::div(&num, &ops::pow_tensor_scalar(&r, sf(p - 1.0))?)?
    } else {
        let num = ops::mul(self_, &ops::pow_tensor_scalar(&ops::abs(self_)?, sf(p - 2.0))?)?;
        ops::div(&num, &ops::pow_tensor_scalar(&r, sf(p - 1.0))?)?
    };
    let g = ops::mul(&g, &d)?;
    // 0/0 where the norm is 0: the subgradient 0.
    ops::masked_fill(&g, &ops::eq_scalar(&r, Scalar::Int(0))?, Scalar::Int(0))
}

/// Gradient of `repeat`: the repeated blocks of `grad` summed.
pub fn repeat_backward(grad: &Tensor, self_sizes: &[i64], repeats: &[i64]) -> Result<Tensor> {
    let lead = repeats.len() - self_sizes.len();
    let mut sizes: Vec<i64> = vec![1; lead];
    sizes.extend_from_slice(self_sizes);
    let mut split = Vec::with_capacity(2 * repeats.len());
    for (r, s) in repeats.iter().zip(&sizes) {
        split.push(*r);
        split.push(*s);
    }
    let g = ops::reshape(grad, &split)?;
    let dims: Vec<i64> = (0..repeats.len() as i64).map(|i| 2 * i).collect();
    let g = ops::sum_dim_intlist(&g, Some(&dims), false, None)?;
    ops::reshape(&g, self_sizes)
}

/// Gradient of `smooth_l1_loss` for `self`.
pub fn smooth_l1_backward(grad: &Tensor, self_: &Tensor, target: &Tensor, reduction: i64, beta: f64) -> Result<Tensor> {
    let d = ops::sub(self_, target, one())?;
    let lin = ops::sgn(&d)?;
    let g = if beta == 0.0 {
        lin
    } else {
        let small = ops::lt_scalar(&ops::abs(&d)?, sf(beta))?;
        ops::where_self(&small, &scale(&d, 1.0 / beta)?, &lin)?
    };
    reduce_grad(&ops::mul(&g, grad)?, self_, reduction)
}

/// Gradient of `huber_loss` for `self`.
pub fn huber_backward(grad: &Tensor, self_: &Tensor, target: &Tensor, reduction: i64, delta: f64) -> Result<Tensor> {
    let d = ops::sub(self_, target, one())?;
    let small = ops::le_scalar(&ops::abs(&d)?, sf(delta))?;
    let g = ops::where_self(&small, &d, &scale(&ops::sgn(&d)?, delta)?)?;
    reduce_grad(&ops::mul(&g, grad)?, self_, reduction)
}

/// Gradient of `kl_div` for `self`: `-target` (or `-exp(target)` for log targets).
pub fn kl_div_backward(
    grad: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    log_target: bool,
) -> Result<Tensor> {
    let t = if log_target { ops::exp(target)? } else { target.clone() };
    let g = ops::neg(&ops::mul(&ops::expand(&t, self_.sizes(), false)?, grad)?)?;
    reduce_grad(&g, self_, reduction)
}

/// Divides a pointwise loss gradient by the element count for `mean` reduction.
fn reduce_grad(g: &Tensor, self_: &Tensor, reduction: i64) -> Result<Tensor> {
    if reduction == 1 {
        scale(g, 1.0 / self_.numel().max(1) as f64)
    } else {
        Ok(g.clone())
    }
}

/// Gradient of `index_put` for `values`: the indexed elements of `grad`.
pub fn index_put_values_backward(grad: &Tensor, indices: &[Option<Tensor>]) -> Result<Tensor> {
    ops::index(grad, indices)
}

/// Gradient of `index_put` for `self`: `grad`, with the overwritten positions zeroed unless
/// accumulating.
pub fn index_put_self_backward(grad: &Tensor, indices: &[Option<Tensor>], accumulate: bool) -> Result<Tensor> {
    if accumulate {
        return Ok(grad.clone());
    }
    let z = ops::zeros(&[], Some(grad.dtype()), None, Some(grad.device()), None)?;
    ops::index_put(grad, indices, &z, false)
}

/// Gradient of `kl_div` for `target`.
pub fn kl_div_target_backward(
    grad: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    log_target: bool,
) -> Result<Tensor> {
    let d = if log_target {
        ops::mul(&ops::exp(target)?, &add_s(&ops::sub(target, self_, one())?, 1.0)?)?
    } else {
        add_s(&ops::sub(&ops::log(target)?, self_, one())?, 1.0)?
    };
    reduce_grad(&ops::mul(&d, grad)?, target, reduction)
}

/// Gradient of `binary_cross_entropy_with_logits` for `target`:
/// `-w (pw logsigmoid(x) - logsigmoid(-x))`.
pub fn bce_with_logits_target_backward(
    grad: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    pos_weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let lp = ops::log_sigmoid(self_)?;
    let lp = match pos_weight {
        Some(pw) => ops::mul(pw, &lp)?,
        None => lp,
    };
    let mut d = ops::neg(&ops::sub(&lp, &ops::log_sigmoid(&ops::neg(self_)?)?, one())?)?;
    if let Some(w) = weight {
        d = ops::mul(&d, w)?;
    }
    reduce_grad(&ops::mul(&d, grad)?, target, reduction)
}

/// Gradient of `glu(self, dim)`: `[grad sigmoid(b), grad a sigmoid(b) (1 - sigmoid(b))]`.
pub fn glu_backward(grad: &Tensor, self_: &Tensor, dim: i64) -> Result<Tensor> {
    let n = self_.dim() as i64;
    let d = if dim < 0 { dim + n } else { dim };
    let half = self_.sizes()[d as usize] / 2;
    let a = ops::narrow(self_, d, 0, half)?;
    let b = ops::narrow(self_, d, half, half)?;
    let s = ops::sigmoid(&b)?;
    let ga = ops::mul(grad, &s)?;
    let gb = ops::mul(&ops::mul(grad, &a)?, &ops::mul(&s, &rsub_s(&s, 1.0)?)?)?;
    ops::cat(&[ga, gb], d)
}

/// Gradient of `repeat_interleave(self, repeats, dim)` with a scalar `repeats`.
pub fn repeat_interleave_backward(grad: &Tensor, sizes: &[i64], repeats: i64, dim: Option<i64>) -> Result<Tensor> {
    match dim {
        None => {
            let g = ops::reshape(grad, &[-1, repeats])?;
            ops::reshape(&ops::sum_dim_intlist(&g, Some(&[1]), false, None)?, sizes)
        }
        Some(d) => {
            let n = sizes.len() as i64;
            let d = (if d < 0 { d + n } else { d }) as usize;
            let mut split: Vec<i64> = sizes.to_vec();
            split.insert(d + 1, repeats);
            let g = ops::reshape(grad, &split)?;
            ops::sum_dim_intlist(&g, Some(&[d as i64 + 1]), false, None)
        }
    }
}

/// Gradient of `repeat_interleave` with a tensor of repeats: each output's gradient added to
/// the element it repeats (`index_add` with the repeated positions).
pub fn repeat_interleave_tensor_backward(
    grad: &Tensor,
    sizes: &[i64],
    repeats: &Tensor,
    dim: Option<i64>,
) -> Result<Tensor> {
    let (flat_sizes, d) = match dim {
        None => (vec![sizes.iter().product::<i64>()], 0),
        Some(d) => (sizes.to_vec(), if d < 0 { d + sizes.len() as i64 } else { d }),
    };
    let n = flat_sizes.get(d as usize).copied().unwrap_or(1);
    let positions = ops::arange(Scalar::Int(n), Some(ScalarType::I64), None, Some(repeats.device()), None)?;
    let index = ops::repeat_interleave_self_tensor(&positions, repeats, Some(0), None)?;
    let z = zeros_of(&flat_sizes, grad)?;
    ops::reshape(&ops::index_add(&z, d, &index, grad, one())?, sizes)
}

/// Gradient of `unfold(dimension, size, step)`: each window element's gradient added back at
/// its position `window * step + k` along `dimension` (`index_add`, so overlapping windows
/// add up).
pub fn unfold_backward(grad: &Tensor, sizes: &[i64], dimension: i64, size: i64, step: i64) -> Result<Tensor> {
    if sizes.is_empty() {
        // A zero-dim input unfolds to one window of one element.
        return ops::reshape(grad, &[]);
    }
    let n = sizes.len() as i64;
    let d = if dimension < 0 { dimension + n } else { dimension };
    // grad: sizes with `d` replaced by the window count, then `size`. Put the window's elements
    // right after the window index and merge the two.
    let windows = grad.sizes()[d as usize];
    let g = ops::movedim(grad, &[n], &[d + 1])?;
    let mut merged: Vec<i64> = g.sizes().to_vec();
    merged[d as usize] = windows * size;
    merged.remove(d as usize + 1);
    let g = ops::reshape(&g, &merged)?;
    let positions: Vec<i64> = (0..windows).flat_map(|w| (0..size).map(move |k| w * step + k)).collect();
    let index = Tensor::from_vec(positions, &[windows * size])?;
    let index = ops::to_device(&index, grad.device(), ScalarType::I64, false, false, None)?;
    ops::index_add(&zeros_of(sizes, grad)?, d, &index, &g, one())
}

/// Gradient of `masked_select`: `grad` scattered back to the selected positions.
pub fn masked_select_backward(grad: &Tensor, self_: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let shape = aten::native::tensor_iterator::broadcast_shapes("masked_select", self_.sizes(), mask.sizes())?;
    let m = ops::expand(mask, &shape, false)?;
    let z = zeros_of(&shape, grad)?;
    sum_to(&ops::index_put(&z, &[Some(m)], grad, false)?, self_.sizes())
}

/// Gradient of `take`: `grad` accumulated at the flat indices (negative ones wrap).
pub fn take_backward(grad: &Tensor, sizes: &[i64], index: &Tensor) -> Result<Tensor> {
    let numel: i64 = sizes.iter().product();
    let flat = ops::reshape(index, &[-1])?;
    let neg = ops::lt_scalar(&flat, Scalar::Int(0))?;
    let flat = ops::where_self(&neg, &ops::add_scalar(&flat, Scalar::Int(numel), one())?, &flat)?;
    let z = zeros_of(&[numel], grad)?;
    ops::reshape(&ops::index_add(&z, 0, &flat, &ops::reshape(grad, &[-1])?, one())?, sizes)
}

/// Gradient of `diag`: the diagonal of `grad` for a vector input, `grad` on the diagonal of
/// zeros for a matrix input.
pub fn diag_backward(grad: &Tensor, sizes: &[i64], diagonal: i64) -> Result<Tensor> {
    if sizes.len() == 1 {
        return ops::diagonal(grad, diagonal, 0, 1);
    }
    let (r, c) = (sizes[0], sizes[1]);
    let len = grad.sizes()[0];
    let rows: Vec<i64> = (0..len).map(|i| if diagonal >= 0 { i } else { i - diagonal }).collect();
    let cols: Vec<i64> = (0..len).map(|i| if diagonal >= 0 { i + diagonal } else { i }).collect();
    let ri = Tensor::from_vec(rows, &[len])?.to_device(grad.device())?;
    let ci = Tensor::from_vec(cols, &[len])?.to_device(grad.device())?;
    ops::index_put(&zeros_of(&[r, c], grad)?, &[Some(ri), Some(ci)], grad, true)
}

/// Gradient of `copysign(self, other)` for `self`: `grad * result / self` (0 where self is 0).
pub fn copysign_backward(grad: &Tensor, self_: &Tensor, result: &Tensor) -> Result<Tensor> {
    let g = ops::mul(grad, &ops::div(result, self_)?)?;
    ops::masked_fill(&g, &ops::eq_scalar(self_, Scalar::Int(0))?, Scalar::Int(0))
}

/// Gradient of `diagonal` for `self`: `grad` on that diagonal of zeros, built out of place
/// (`diag_embed`, then each of the two dimensions cut or zero-padded to the input's size) so
/// that it is differentiable again.
pub fn diagonal_backward(grad: &Tensor, sizes: &[i64], offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    let n = sizes.len() as i64;
    let (d1, d2) = (dim1.rem_euclid(n), dim2.rem_euclid(n));
    let mut out = ops::diag_embed(grad, offset, d1, d2)?;
    for d in [d1, d2] {
        let (have, want) = (out.sizes()[d as usize], sizes[d as usize]);
        if have > want {
            out = ops::narrow(&out, d, 0, want)?;
        } else if have < want {
            // constant_pad_nd pads from the last dimension back: (before, after) for dim d.
            let mut pad = vec![0i64; 2 * (n - d) as usize];
            pad[2 * (n - 1 - d) as usize + 1] = want - have;
            out = ops::constant_pad_nd(&out, &pad, Scalar::Int(0))?;
        }
    }
    Ok(out)
}

/// Gradient of `div(self, other, rounding_mode)` for `self`: `grad / other` without rounding,
/// zero with it (a rounded quotient is piecewise constant), as in PyTorch.
pub fn rounding_div_backward(grad: &Tensor, other: &Tensor, rounding_mode: Option<&str>) -> Result<Tensor> {
    match rounding_mode {
        None => div(grad, other),
        Some(_) => zeros_like(grad),
    }
}

/// Gradient of `div(self, other, rounding_mode)` for `other`.
pub fn rounding_div_other_backward(
    grad: &Tensor,
    self_: &Tensor,
    other: &Tensor,
    rounding_mode: Option<&str>,
) -> Result<Tensor> {
    match rounding_mode {
        None => div_tensor_other_backward(grad, self_, other),
        Some(_) => zeros_like(grad),
    }
}

/// Gradient of `div(self, scalar, rounding_mode)` for `self`.
pub fn rounding_div_scalar_backward(grad: &Tensor, other: &Scalar, rounding_mode: Option<&str>) -> Result<Tensor> {
    match rounding_mode {
        None => ops::div_scalar(grad, *other),
        Some(_) => zeros_like(grad),
    }
}

/// `grad` (`[n, p]`) repeated over `b` batches (`[b, n, p]`): `addbmm`'s sum over the batch
/// undone.
pub fn expand_batches(grad: &Tensor, b: i64) -> Result<Tensor> {
    let mut sizes = vec![b];
    sizes.extend(grad.sizes());
    ops::expand(&ops::unsqueeze(grad, 0)?, &sizes, false)
}

/// Every dimension of `t`.
pub fn all_dims(t: &Tensor) -> Vec<i64> {
    (0..t.dim() as i64).collect()
}

/// Where `self` lies within the tensor bounds given (`clamp.Tensor` passes it through).
fn within(self_: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Option<Tensor>> {
    let lo = min.map(|m| ops::ge(self_, m)).transpose()?;
    let hi = max.map(|m| ops::le(self_, m)).transpose()?;
    Ok(match (lo, hi) {
        (Some(l), Some(h)) => Some(ops::logical_and(&l, &h)?),
        (l, h) => l.or(h),
    })
}

/// `grad` where `mask`, else 0.
fn where_grad(grad: &Tensor, mask: &Tensor) -> Result<Tensor> {
    ops::where_self(mask, grad, &zeros_like(grad)?)
}

/// Gradient of `clamp(self, min, max)` (tensor bounds) for `self`: `grad` where `self` is within
/// the bounds.
pub fn clamp_tensor_backward(
    grad: &Tensor,
    self_: &Tensor,
    min: Option<&Tensor>,
    max: Option<&Tensor>,
) -> Result<Tensor> {
    match within(self_, min, max)? {
        Some(mask) => where_grad(grad, &mask),
        None => Ok(grad.clone()),
    }
}

/// Gradient of `clamp(self, min, max)` for `min`: `grad` where `self < min` and `min < max`
/// (where `min > max` the result is `max`), as PyTorch's `clamp_backward_min_max`.
pub fn clamp_tensor_min_backward(
    grad: &Tensor,
    self_: &Tensor,
    min: Option<&Tensor>,
    max: Option<&Tensor>,
) -> Result<Tensor> {
    let Some(min) = min else { return zeros_like(grad) };
    let mut mask = ops::lt(self_, min)?;
    if let Some(max) = max {
        mask = ops::logical_and(&mask, &ops::lt(min, max)?)?;
    }
    where_grad(grad, &mask)
}

/// Gradient of `clamp(self, min, max)` for `max`: `grad` where `self > max` or `max < min`.
pub fn clamp_tensor_max_backward(
    grad: &Tensor,
    self_: &Tensor,
    min: Option<&Tensor>,
    max: Option<&Tensor>,
) -> Result<Tensor> {
    let Some(max) = max else { return zeros_like(grad) };
    let mut mask = ops::gt(self_, max)?;
    if let Some(min) = min {
        mask = ops::logical_or(&mask, &ops::lt(max, min)?)?;
    }
    where_grad(grad, &mask)
}

/// Gradient of `native_dropout` for `input`: `grad * mask / (1 - p)` in training (the mask's
/// kept elements scaled as the forward scaled them), `grad` otherwise.
pub fn native_dropout_backward(grad: &Tensor, mask: &Tensor, p: f64, train: Option<bool>) -> Result<Tensor> {
    if train == Some(false) {
        return Ok(grad.clone());
    }
    if p >= 1.0 {
        return zeros_like(grad);
    }
    scale(&ops::mul(grad, &mask.to(grad.dtype()).call()?)?, 1.0 / (1.0 - p))
}

/// Gradient of `index_copy` for `source`: the rows of `grad` at `index` (a zero-dim source gets
/// the one element).
pub fn index_source_backward(grad: &Tensor, dim: i64, index: &Tensor, source_dim: usize) -> Result<Tensor> {
    let g = ops::index_select(grad, dim, index)?;
    if source_dim == 0 {
        ops::reshape(&g, &[])
    } else {
        Ok(g)
    }
}

/// Gradient of `masked_scatter` for `source`: the masked elements of `grad` in order, then
/// zeros for the source elements the mask did not use, in `source`'s shape.
pub fn masked_scatter_backward(grad: &Tensor, mask: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    let taken = ops::masked_select(grad, mask)?;
    let total: i64 = sizes.iter().product();
    let rest = total - taken.numel();
    let flat = if rest > 0 { ops::cat(&[taken, zeros_of(&[rest], grad)?], 0)? } else { taken };
    ops::reshape(&flat, sizes)
}

/// The derivative of an order-one Bessel function `f1` from its order-zero partner `f0`:
/// `f0(x) - f1(x) / x`, `at_zero` at 0 (`J1`, `I1`).
pub fn order_one_backward(self_: &Tensor, result: &Tensor, f0: &Tensor, at_zero: f64) -> Result<Tensor> {
    let zero = ops::eq_scalar(self_, Scalar::Int(0))?;
    let safe = ops::masked_fill(self_, &zero, Scalar::Int(1))?;
    let d = ops::sub(f0, &ops::div(result, &safe)?, Scalar::Int(1))?;
    ops::masked_fill(&d, &zero, Scalar::Float(at_zero))
}

/// `d I1e(x) / dx = I0e(x) - I1e(x) (sgn(x) + 1/x)`, 1/2 at 0.
pub fn i1e_backward(self_: &Tensor, result: &Tensor, i0e: &Tensor) -> Result<Tensor> {
    let zero = ops::eq_scalar(self_, Scalar::Int(0))?;
    let safe = ops::masked_fill(self_, &zero, Scalar::Int(1))?;
    let factor = ops::add(&ops::sgn(self_)?, &ops::reciprocal(&safe)?, Scalar::Int(1))?;
    let d = ops::sub(i0e, &ops::mul(result, &factor)?, Scalar::Int(1))?;
    ops::masked_fill(&d, &zero, Scalar::Float(0.5))
}

/// The storage positions a geometry addresses, in row-major order of its elements.
fn strided_positions(sizes: &[i64], strides: &[i64], offset: i64) -> Result<Vec<i64>> {
    let n = c10::size::numel("as_strided_backward", sizes)?;
    let mut out = c10::size::try_vec(n as usize)?;
    if n == 0 {
        return Ok(out);
    }
    let mut idx = vec![0i64; sizes.len()];
    loop {
        out.push(offset + idx.iter().zip(strides).map(|(i, s)| i * s).sum::<i64>());
        let mut d = sizes.len();
        loop {
            if d == 0 {
                return Ok(out);
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < sizes[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Gradient of `as_strided(self, size, stride, storage_offset)`: the output gradient is summed
/// into the storage positions the result addresses (overlapping positions add up), then read
/// back at the positions of `self`'s own geometry; where `self` itself addresses a position
/// several times (an expanded input), each of its elements gets an equal share.
pub fn as_strided_backward(
    grad: &Tensor,
    self_: &Tensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    let out_pos = strided_positions(size, stride, storage_offset.unwrap_or(self_.storage_offset()))?;
    let in_pos = strided_positions(self_.sizes(), self_.strides(), self_.storage_offset())?;
    let lo = out_pos.iter().chain(&in_pos).copied().min().unwrap_or(0);
    let hi = out_pos.iter().chain(&in_pos).copied().max().unwrap_or(-1);
    let len = hi - lo + 1;
    let device = grad.device();
    let index = |p: Vec<i64>| -> Result<Tensor> {
        let n = p.len() as i64;
        Tensor::from_vec(p.into_iter().map(|x| x - lo).collect::<Vec<_>>(), &[n])?.to_device(device)
    };
    let (out_idx, in_idx) = (index(out_pos)?, index(in_pos)?);
    let storage = ops::zeros(&[len.max(0)], Some(grad.dtype()), None, Some(device), None)?;
    let storage = ops::index_add(&storage, 0, &out_idx, &ops::reshape(grad, &[-1])?, Scalar::Int(1))?;
    let ones = ops::ones_like(&in_idx, Some(grad.dtype()), None, None, None, None)?;
    let hits =
        ops::index_add(&ops::zeros_like(&storage, None, None, None, None, None)?, 0, &in_idx, &ones, Scalar::Int(1))?;
    let shared = ops::div(&storage, &ops::clamp_min(&hits, Scalar::Int(1))?)?;
    ops::reshape(&ops::index_select(&shared, 0, &in_idx)?, self_.sizes())
}

/// `d igamma(a, x) / dx = x^(a-1) e^-x / Gamma(a)` (negated for `igammac`); PyTorch
/// differentiates only `x`.
pub fn igamma_other_backward(grad: &Tensor, a: &Tensor, x: &Tensor, upper: bool) -> Result<Tensor> {
    let log_density = ops::sub(
        &ops::sub(&ops::mul(&ops::sub_scalar(a, one(), one())?, &ops::log(x)?)?, x, one())?,
        &ops::lgamma(a)?,
        one(),
    )?;
    let d = mul(grad, &ops::exp(&log_density)?)?;
    if upper {
        ops::neg(&d)
    } else {
        Ok(d)
    }
}

// ---- sparse COO tensors (aten's native::sparse) ----

/// Gradient of `embedding` for its table: dense, or a COO tensor with one stored row per
/// looked-up position with `sparse=true` (PyTorch's `embedding_backward`).
pub fn embedding_backward(
    grad: &Tensor,
    indices: &Tensor,
    num_weights: i64,
    padding_idx: i64,
    scale_grad_by_freq: bool,
    sparse: bool,
) -> Result<Tensor> {
    if sparse {
        ops::embedding_sparse_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq)
    } else {
        ops::embedding_dense_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq)
    }
}

/// Gradient of the COO constructor for its values: the gradient read at each index column.
pub fn sparse_constructor_values_backward(grad: &Tensor, indices: &Tensor, size: &[i64]) -> Result<Tensor> {
    aten::native::sparse::sparse_constructor_values_backward(grad, indices, size)
}

/// Gradient of `_to_dense`.
pub fn to_dense_backward(grad: &Tensor, input: &Tensor, masked_grad: Option<bool>) -> Result<Tensor> {
    ops::to_dense_backward(grad, input, masked_grad)
}

/// Gradient of `values()`: a COO tensor on `self`'s pattern.
pub fn values_backward(grad: &Tensor, self_: &Tensor) -> Result<Tensor> {
    aten::native::sparse::values_backward(grad, self_)
}

/// Gradient of `sparse_mask` for its strided `self`: the gradient at the mask's positions,
/// strided (the mask coalesced, so a position repeated in it counts once).
pub fn sparse_mask_backward(grad: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let m = ops::coalesce(mask)?;
    let g = if grad.layout() == c10::Layout::Strided { ops::sparse_mask(grad, &m)? } else { grad.clone() };
    ops::to_dense(&g, None, None)
}

/// Gradient of `_sparse_addmm` for its sparse operand: masked to its pattern.
pub fn mm_mat1_sparse_backward(grad: &Tensor, mat1: &Tensor, mat2: &Tensor, alpha: &Scalar) -> Result<Tensor> {
    aten::native::sparse::mm_mat1_sparse_backward(grad, mat1, mat2, alpha)
}
