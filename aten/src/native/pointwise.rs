//! More pointwise operators: `maximum`/`minimum`, `atan2`, `fmod`, `remainder`, `pow`, logical
//! ops, `isnan`, `lerp`, `addcmul`/`addcdiv`, `clamp`, `masked_fill`, and the parameterised
//! activations (`leaky_relu`, `hardtanh`, `elu`, `softplus`, `gelu`, `logit`).
//!
//! Note [Pointwise computation type]: the parameterised functions here compute in f64 for every
//! floating dtype and round once on store. That is at least as accurate as PyTorch's f32
//! arithmetic; vectorised f32 paths are the operator-library issue's performance work.

use c10::{Element, Error, Result, Scalar, ScalarType};

use crate::native::opmath::OpMath;
use crate::native::tensor_iterator::{binary_loop, ternary_loop, unary_loop, TensorIterator, TensorIteratorConfig};
use crate::Tensor;

/// `out = f(x)` in f64 for floating dtypes (Note [Pointwise computation type]).
fn float_map(iter: &TensorIterator, op: &str, f: impl Fn(f64) -> f64 + Sync) -> Result<()> {
    c10::dispatch_all_types!(iter.common_dtype(), T => {
        if !T::DTYPE.is_floating_point() {
            return Err(Error::UnsupportedDtype { op: op.into(), dtype: T::DTYPE });
        }
        unary_loop::<T, T>(iter, |v| <T as Element>::from_f64(f(v.to_f64())));
    });
    Ok(())
}

/// `out = f(a, b)` in f64 for floating dtypes.
fn float_zip(iter: &TensorIterator, op: &str, f: impl Fn(f64, f64) -> f64 + Sync) -> Result<()> {
    c10::dispatch_all_types!(iter.common_dtype(), T => {
        if !T::DTYPE.is_floating_point() {
            return Err(Error::UnsupportedDtype { op: op.into(), dtype: T::DTYPE });
        }
        binary_loop::<T, T, T>(iter, |a, b| <T as Element>::from_f64(f(a.to_f64(), b.to_f64())));
    });
    Ok(())
}

fn unary_iter<'a>(op: &'static str, a: &'a Tensor, int_to_float: bool) -> Result<TensorIterator<'a>> {
    TensorIteratorConfig::new(op)
        .add_output(None)
        .add_input(a)
        .promote_all()
        .promote_integer_inputs_to_float(int_to_float)
        .build()
}

fn binary_iter<'a>(op: &'static str, a: &'a Tensor, b: &'a Tensor, int_to_float: bool) -> Result<TensorIterator<'a>> {
    TensorIteratorConfig::binary_op(op, None, a, b).promote_integer_inputs_to_float(int_to_float).build()
}

// ---- binary ------------------------------------------------------------------------------------

fn min_max(op: &'static str, a: &Tensor, b: &Tensor, take_max: bool) -> Result<Tensor> {
    let iter = binary_iter(op, a, b, false)?;
    match_float!(iter.common_dtype(), T, A => {
        binary_loop::<T, T, T>(&iter, move |x, y| {
            let (p, q) = (x.to_acc(), y.to_acc());
            // NaN propagates (PyTorch's maximum/minimum).
            let r = if p.is_nan() || q.is_nan() { p + q } else if (p > q) == take_max { p } else { q };
            T::from_acc(r)
        });
    }, other => c10::dispatch_all_types!(other, T => {
        #[allow(clippy::bool_comparison)] // generic over every dtype, bool included
        binary_loop::<T, T, T>(&iter, move |x, y| if (x > y) == take_max { x } else { y });
    }));
    iter.output(0)
}

/// `maximum(Tensor self, Tensor other) -> Tensor`
pub fn maximum(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    min_max("maximum", self_, other, true)
}
/// `minimum(Tensor self, Tensor other) -> Tensor`
pub fn minimum(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    min_max("minimum", self_, other, false)
}

/// `atan2(Tensor self, Tensor other) -> Tensor`
pub fn atan2(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let iter = binary_iter("atan2", self_, other, true)?;
    float_zip(&iter, "atan2", f64::atan2)?;
    iter.output(0)
}

fn int_mod_check(iter: &TensorIterator, op: &str) -> Result<()> {
    if !iter.common_dtype().is_floating_point() && iter.operand(2).to_vec::<i64>()?.contains(&0) {
        return Err(Error::invalid(op, "ZeroDivisionError"));
    }
    Ok(())
}

/// `fmod.Tensor(Tensor self, Tensor other) -> Tensor`: remainder with the dividend's sign.
pub fn fmod(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let iter = binary_iter("fmod", self_, other, false)?;
    int_mod_check(&iter, "fmod")?;
    match_float!(iter.common_dtype(), T, A => {
        binary_loop::<T, T, T>(&iter, |x, y| T::from_acc(x.to_acc() % y.to_acc()));
    }, other => match_int!(other, T => {
        binary_loop::<T, T, T>(&iter, |x, y| x.wrapping_rem(y));
    }, d => return Err(Error::UnsupportedDtype { op: "fmod".into(), dtype: d })));
    iter.output(0)
}

/// `remainder.Tensor(Tensor self, Tensor other) -> Tensor`: Python's `%` (the divisor's sign).
pub fn remainder(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let iter = binary_iter("remainder", self_, other, false)?;
    int_mod_check(&iter, "remainder")?;
    match_float!(iter.common_dtype(), T, A => {
        binary_loop::<T, T, T>(&iter, |x, y| {
            let (a, b) = (x.to_acc(), y.to_acc());
            let mut m = a % b;
            if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
                m += b;
            }
            T::from_acc(m)
        });
    }, other => match_int!(other, T => {
        #[allow(unused_comparisons, clippy::absurd_extreme_comparisons)]
        binary_loop::<T, T, T>(&iter, |x, y| {
            let m = x.wrapping_rem(y);
            if m != 0 && ((y < 0) != (m < 0)) { m.wrapping_add(y) } else { m }
        });
    }, d => return Err(Error::UnsupportedDtype { op: "remainder".into(), dtype: d })));
    iter.output(0)
}

fn pow_impl(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let iter = binary_iter("pow", a, b, false)?;
    match_float!(iter.common_dtype(), T, A => {
        binary_loop::<T, T, T>(&iter, |x, y| T::from_acc(x.to_acc().powf(y.to_acc())));
    }, other => match_int!(other, T => {
        #[allow(unused_comparisons, clippy::absurd_extreme_comparisons)]
        {
            if iter.operand(2).to_vec::<i64>()?.iter().any(|&e| e < 0) {
                return Err(Error::invalid("pow", "Integers to negative integer powers are not allowed."));
            }
            binary_loop::<T, T, T>(&iter, |x, y| x.wrapping_pow(y as u32));
        }
    }, d => return Err(Error::UnsupportedDtype { op: "pow".into(), dtype: d })));
    iter.output(0)
}

/// `pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor`
pub fn pow_tensor_tensor(self_: &Tensor, exponent: &Tensor) -> Result<Tensor> {
    pow_impl(self_, exponent)
}
/// `pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor`
pub fn pow_tensor_scalar(self_: &Tensor, exponent: Scalar) -> Result<Tensor> {
    pow_impl(self_, &Tensor::wrapped_scalar(exponent))
}

// ---- logical and predicates --------------------------------------------------------------------

/// `logical_and(Tensor self, Tensor other) -> Tensor`
pub fn logical_and(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let a = crate::native::copy::to_dtype(self_, ScalarType::Bool)?;
    let b = crate::native::copy::to_dtype(other, ScalarType::Bool)?;
    let iter = TensorIteratorConfig::binary_op("logical_and", None, &a, &b).build()?;
    binary_loop::<bool, bool, bool>(&iter, |x, y| x && y);
    iter.output(0)
}

/// `logical_not(Tensor self) -> Tensor`
pub fn logical_not(self_: &Tensor) -> Result<Tensor> {
    let iter = TensorIteratorConfig::new("logical_not")
        .add_output(None)
        .add_input(self_)
        .check_all_same_dtype(false)
        .static_output_dtype(ScalarType::Bool)
        .common_dtype(self_.dtype())
        .build()?;
    c10::dispatch_all_types!(self_.dtype(), T => unary_loop::<bool, T>(&iter, |x| !x.to_bool()));
    iter.output(0)
}

/// `isnan(Tensor self) -> Tensor`
pub fn isnan(self_: &Tensor) -> Result<Tensor> {
    let iter = TensorIteratorConfig::new("isnan")
        .add_output(None)
        .add_input(self_)
        .check_all_same_dtype(false)
        .static_output_dtype(ScalarType::Bool)
        .common_dtype(self_.dtype())
        .build()?;
    c10::dispatch_all_types!(self_.dtype(), T => unary_loop::<bool, T>(&iter, |x| x.to_f64().is_nan()));
    iter.output(0)
}

// ---- ternary -----------------------------------------------------------------------------------

/// `lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor`
pub fn lerp_scalar(self_: &Tensor, end: &Tensor, weight: Scalar) -> Result<Tensor> {
    let w = weight.to_f64();
    let iter = binary_iter("lerp", self_, end, false)?;
    float_zip(&iter, "lerp", move |s, e| if w.abs() < 0.5 { s + w * (e - s) } else { e - (e - s) * (1.0 - w) })?;
    iter.output(0)
}

fn addc(op: &'static str, s: &Tensor, t1: &Tensor, t2: &Tensor, value: Scalar, div: bool) -> Result<Tensor> {
    let iter = TensorIteratorConfig::new(op)
        .add_output(None)
        .add_input(s)
        .add_input(t1)
        .add_input(t2)
        .promote_all()
        .build()?;
    let v = value.to_f64();
    c10::dispatch_all_types!(iter.common_dtype(), T => {
        if !T::DTYPE.is_floating_point() && div {
            return Err(Error::invalid(op, "Integer division with addcdiv is no longer supported."));
        }
        ternary_loop::<T, T, T, T>(&iter, move |a, b, c| {
            let (a, b, c) = (a.to_f64(), b.to_f64(), c.to_f64());
            <T as Element>::from_f64(if div { a + v * b / c } else { a + v * b * c })
        });
    });
    iter.output(0)
}

/// `addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor`
pub fn addcmul(self_: &Tensor, tensor1: &Tensor, tensor2: &Tensor, value: Scalar) -> Result<Tensor> {
    addc("addcmul", self_, tensor1, tensor2, value, false)
}
/// `addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor`
pub fn addcdiv(self_: &Tensor, tensor1: &Tensor, tensor2: &Tensor, value: Scalar) -> Result<Tensor> {
    addc("addcdiv", self_, tensor1, tensor2, value, true)
}

/// `clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor`
pub fn clamp(self_: &Tensor, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        return Err(Error::invalid("clamp", "At least one of 'min' or 'max' must not be None"));
    }
    let (lo, hi) = (min.map(|s| s.to_f64()), max.map(|s| s.to_f64()));
    let iter = unary_iter("clamp", self_, false)?;
    c10::dispatch_all_types!(iter.common_dtype(), T => {
        unary_loop::<T, T>(&iter, move |x| {
            let v = x.to_f64();
            if v.is_nan() {
                return x;
            }
            let v = lo.map_or(v, |l| v.max(l));
            <T as Element>::from_f64(hi.map_or(v, |h| v.min(h)))
        });
    });
    iter.output(0)
}

/// `masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor`
pub fn masked_fill_scalar(self_: &Tensor, mask: &Tensor, value: Scalar) -> Result<Tensor> {
    if mask.dtype() != ScalarType::Bool {
        return Err(Error::invalid(
            "masked_fill",
            format!("masked_fill_ only supports boolean masks, but got mask with dtype {}", mask.dtype().cpp_name()),
        ));
    }
    let out = crate::native::copy::empty_like_layout(self_, self_.dtype())?;
    let shape = crate::native::tensor_iterator::broadcast_shapes("masked_fill", self_.sizes(), mask.sizes())?;
    if shape.as_slice() != self_.sizes() {
        return Err(Error::shape(
            "masked_fill",
            format!("mask of shape {:?} cannot be broadcast to {:?}", mask.sizes(), self_.sizes()),
        ));
    }
    let iter = TensorIteratorConfig::new("masked_fill")
        .add_output(Some(&out))
        .add_input(self_)
        .add_input(mask)
        .check_all_same_dtype(false)
        .static_output_dtype(self_.dtype())
        .common_dtype(self_.dtype())
        .build()?;
    c10::dispatch_all_types!(self_.dtype(), T => {
        let fill = <T as Element>::from_f64(value.to_f64());
        let fill = if T::DTYPE.is_floating_point() { fill } else { <T as Element>::from_i64(value.to_i64()) };
        binary_loop::<T, T, bool>(&iter, move |x, m| if m { fill } else { x });
    });
    drop(iter);
    Ok(out)
}

// ---- parameterised activations (floating inputs only) ------------------------------------------

fn activation(op: &'static str, a: &Tensor, f: impl Fn(f64) -> f64 + Sync) -> Result<Tensor> {
    if !a.dtype().is_floating_point() {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype: a.dtype() });
    }
    let iter = unary_iter(op, a, false)?;
    float_map(&iter, op, f)?;
    iter.output(0)
}

/// `leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor`
pub fn leaky_relu(self_: &Tensor, negative_slope: Scalar) -> Result<Tensor> {
    let s = negative_slope.to_f64();
    activation("leaky_relu", self_, move |x| if x > 0.0 { x } else { x * s })
}
/// `hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor`
pub fn hardtanh(self_: &Tensor, min_val: Scalar, max_val: Scalar) -> Result<Tensor> {
    let (lo, hi) = (min_val.to_f64(), max_val.to_f64());
    activation("hardtanh", self_, move |x| if x.is_nan() { x } else { x.max(lo).min(hi) })
}
/// `elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor`
pub fn elu(self_: &Tensor, alpha: Scalar, scale: Scalar, input_scale: Scalar) -> Result<Tensor> {
    let (a, s, i) = (alpha.to_f64(), scale.to_f64(), input_scale.to_f64());
    activation("elu", self_, move |x| if x > 0.0 { x * s } else { (x * i).exp_m1() * a * s })
}
/// `softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor`
pub fn softplus(self_: &Tensor, beta: Scalar, threshold: Scalar) -> Result<Tensor> {
    let (b, t) = (beta.to_f64(), threshold.to_f64());
    activation("softplus", self_, move |x| if x * b > t { x } else { (x * b).exp().ln_1p() / b })
}
/// `gelu(Tensor self, *, str approximate='none') -> Tensor`
pub fn gelu(self_: &Tensor, approximate: &str) -> Result<Tensor> {
    match approximate {
        "none" => activation("gelu", self_, |x| 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))),
        "tanh" => activation("gelu", self_, |x| {
            let k = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
        }),
        other => {
            Err(Error::invalid("gelu", format!("approximate argument must be either none or tanh, got '{other}'")))
        }
    }
}
/// `logit(Tensor self, float? eps=None) -> Tensor`
pub fn logit(self_: &Tensor, eps: Option<f64>) -> Result<Tensor> {
    let iter = unary_iter("logit", self_, true)?;
    float_map(&iter, "logit", move |x| {
        let z = eps.map_or(x, |e| x.clamp(e, 1.0 - e));
        (z / (1.0 - z)).ln()
    })?;
    iter.output(0)
}
