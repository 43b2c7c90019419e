//! Binary arithmetic: `add`, `sub`, `mul`, `div` (with rounding modes), their Scalar overloads,
//! in-place and `out=` variants, all on the TensorIterator with PyTorch's type promotion.

use c10::{Error, Result, Scalar, ScalarType};

use crate::native::cpu::loops::binary_loop;
use crate::native::opmath::OpMath;
use crate::native::stub;
use crate::native::tensor_iterator::{TensorIterator, TensorIteratorConfig};
use crate::Tensor;

/// Builds the iterator of a binary op, runs `kernel`, and returns the output.
fn run_binary(
    op: &'static str,
    out: Option<&Tensor>,
    a: &Tensor,
    b: &Tensor,
    int_to_float: bool,
    kernel: impl FnOnce(&TensorIterator) -> Result<()>,
) -> Result<Tensor> {
    // The iterator stays inside `built` (no move out of the `Result`): for one-element tensors
    // copying it around costs as much as the arithmetic and the allocation together.
    // Every kernel here has a complex branch (Note [Complex operands]).
    let mut built = TensorIteratorConfig::binary_op(op, out, a, b)
        .promote_integer_inputs_to_float(int_to_float)
        .allow_complex()
        .build();
    let iter = match built {
        Ok(ref mut iter) => iter,
        Err(e) => return Err(e),
    };
    kernel(iter)?;
    iter.take_output(0)
}

/// `a + alpha * b` in the common dtype.
fn add_kernel(iter: &TensorIterator, alpha: Scalar) -> Result<()> {
    if !iter.is_cpu() {
        // `sub` is `add` with the negated alpha.
        return stub::run(crate::device_kernel!("add"), iter, &[alpha]);
    }
    let dt = iter.common_dtype();
    if dt.is_complex() {
        return crate::native::complex::kernels::add(iter, alpha);
    }
    match_float!(dt, T, A => {
        let al = alpha.to_f64() as A;
        binary_loop::<T, T, T>(iter, move |a, b| T::from_acc(a.to_acc() + al * b.to_acc()));
        Ok(())
    }, other => match_int!(other, T => {
        let al = alpha.to_i64() as T;
        binary_loop::<T, T, T>(iter, move |a, b| a.wrapping_add(al.wrapping_mul(b)));
        Ok(())
    }, _ => {
        let al = alpha.to_bool();
        binary_loop::<bool, bool, bool>(iter, move |a, b| a || (al && b));
        Ok(())
    }))
}

fn check_alpha(op: &str, dtype: ScalarType, alpha: Scalar) -> Result<()> {
    if matches!(alpha, Scalar::Float(_)) && !dtype.is_floating_point() && !dtype.is_complex() {
        return Err(Error::invalid(
            op,
            "For integral input tensors, argument alpha must not be a floating point number.",
        ));
    }
    if matches!(alpha, Scalar::Int(_) | Scalar::Float(_))
        && dtype == ScalarType::Bool
        && alpha.to_f64() != 0.0
        && alpha.to_f64() != 1.0
    {
        return Err(Error::invalid(op, "Boolean alpha only supported for Boolean results."));
    }
    Ok(())
}

fn add_impl(op: &'static str, out: Option<&Tensor>, a: &Tensor, b: &Tensor, alpha: Scalar) -> Result<Tensor> {
    run_binary(op, out, a, b, false, |it| {
        check_alpha(op, it.common_dtype(), alpha)?;
        add_kernel(it, alpha)
    })
}

/// `add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`
pub fn add(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
    add_impl("add", None, self_, other, alpha)
}
/// `add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)`
pub fn add_out(self_: &Tensor, other: &Tensor, alpha: Scalar, out: &Tensor) -> Result<Tensor> {
    add_impl("add", Some(out), self_, other, alpha)
}
/// `add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)`
pub fn add_(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
    add_impl("add_", Some(self_), self_, other, alpha)
}

fn check_sub(a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() == ScalarType::Bool && b.dtype() == ScalarType::Bool {
        return Err(Error::invalid("sub", "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead."));
    }
    if a.dtype() == ScalarType::Bool || b.dtype() == ScalarType::Bool {
        return Err(Error::invalid("sub", "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."));
    }
    Ok(())
}

fn neg_scalar(s: Scalar) -> Scalar {
    match s {
        Scalar::Int(i) => Scalar::Int(i.wrapping_neg()),
        Scalar::Float(f) => Scalar::Float(-f),
        Scalar::Bool(b) => Scalar::Int(-(b as i64)),
    }
}

/// `sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`
pub fn sub(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
    check_sub(self_, other)?;
    add_impl("sub", None, self_, other, neg_scalar(alpha))
}
/// `sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)`
pub fn sub_out(self_: &Tensor, other: &Tensor, alpha: Scalar, out: &Tensor) -> Result<Tensor> {
    check_sub(self_, other)?;
    add_impl("sub", Some(out), self_, other, neg_scalar(alpha))
}
/// `sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)`
pub fn sub_(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
    check_sub(self_, other)?;
    add_impl("sub_", Some(self_), self_, other, neg_scalar(alpha))
}

fn mul_kernel(iter: &TensorIterator) -> Result<()> {
    if !iter.is_cpu() {
        return stub::run(crate::device_kernel!("mul"), iter, &[]);
    }
    if iter.common_dtype().is_complex() {
        return crate::native::complex::kernels::mul(iter);
    }
    match_float!(iter.common_dtype(), T, A => {
        binary_loop::<T, T, T>(iter, |a, b| T::from_acc(a.to_acc() * b.to_acc()));
        Ok(())
    }, other => match_int!(other, T => {
        binary_loop::<T, T, T>(iter, |a, b| a.wrapping_mul(b));
        Ok(())
    }, _ => {
        binary_loop::<bool, bool, bool>(iter, |a, b| a && b);
        Ok(())
    }))
}

/// `mul.Tensor(Tensor self, Tensor other) -> Tensor`
pub fn mul(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    run_binary("mul", None, self_, other, false, mul_kernel)
}
/// `mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)`
pub fn mul_out(self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<Tensor> {
    run_binary("mul", Some(out), self_, other, false, mul_kernel)
}
/// `mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)`
pub fn mul_(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    run_binary("mul_", Some(self_), self_, other, false, mul_kernel)
}

/// Rounding mode of `div`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Rounding {
    True,
    Trunc,
    Floor,
}

fn rounding(mode: Option<&str>) -> Result<Rounding> {
    match mode {
        None => Ok(Rounding::True),
        Some("trunc") => Ok(Rounding::Trunc),
        Some("floor") => Ok(Rounding::Floor),
        Some(m) => Err(Error::invalid(
            "div",
            format!("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{m}'"),
        )),
    }
}

/// Python's floor division for floats, as PyTorch computes it (`div_floor_floating`).
#[inline]
fn div_floor_f<F: num_traits::Float>(a: F, b: F) -> F {
    if b == F::zero() {
        return a / b;
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != F::zero() && (b < F::zero()) != (m < F::zero()) {
        div = div - F::one();
    }
    if div == F::zero() {
        return F::zero().copysign(a / b);
    }
    let fl = div.floor();
    if div - fl > F::from(0.5).expect("0.5 is representable") {
        fl + F::one()
    } else {
        fl
    }
}

fn div_kernel(iter: &TensorIterator, mode: Rounding) -> Result<()> {
    if !iter.is_cpu() {
        let kernel: &'static stub::Kernel = match mode {
            Rounding::True => crate::device_kernel!("div"),
            Rounding::Trunc => crate::device_kernel!("div_trunc"),
            Rounding::Floor => crate::device_kernel!("div_floor"),
        };
        let dt = iter.common_dtype();
        if !dt.is_floating_point() && !dt.is_complex() && !iter.device().is_meta() {
            // Integer division by zero is an error on every device (one flag read back).
            let zero = crate::ops::any(&crate::ops::eq_scalar(iter.operand(2), c10::Scalar::Int(0))?)?;
            if zero.to_vec::<bool>()?.first() == Some(&true) {
                return Err(Error::invalid("div", "ZeroDivisionError"));
            }
        }
        return stub::run(kernel, iter, &[]);
    }
    let dt = iter.common_dtype();
    if dt.is_complex() {
        return match mode {
            Rounding::True => crate::native::complex::kernels::true_div(iter),
            Rounding::Trunc => Err(Error::unsupported_dtype("div_trunc", dt)),
            Rounding::Floor => Err(Error::unsupported_dtype("div_floor", dt)),
        };
    }
    match_float!(dt, T, A => {
        match mode {
            Rounding::True => binary_loop::<T, T, T>(iter, |a, b| T::from_acc(a.to_acc() / b.to_acc())),
            Rounding::Trunc => binary_loop::<T, T, T>(iter, |a, b| T::from_acc((a.to_acc() / b.to_acc()).trunc())),
            Rounding::Floor => binary_loop::<T, T, T>(iter, |a, b| T::from_acc(div_floor_f::<A>(a.to_acc(), b.to_acc()))),
        }
        Ok(())
    }, other => match_int!(other, T => {
        // Integer division by zero is an error, not UB (PyTorch raises ZeroDivisionError).
        let b = iter.operand(2);
        if b.to_vec::<i64>()?.contains(&0) {
            return Err(Error::invalid("div", "ZeroDivisionError"));
        }
        match mode {
            #[allow(unused_comparisons, clippy::absurd_extreme_comparisons)]
            Rounding::Floor => binary_loop::<T, T, T>(iter, |a, b| {
                let q = a.wrapping_div(b);
                // `wrapping_rem`: `MIN % -1` overflows (the quotient wraps to MIN, as in PyTorch).
                if (a.wrapping_rem(b) != 0) && ((a < 0) != (b < 0)) { q.wrapping_sub(1) } else { q }
            }),
            _ => binary_loop::<T, T, T>(iter, |a, b| a.wrapping_div(b)),
        }
        Ok(())
    }, d => Err(Error::UnsupportedDtype { op: "div".into(), dtype: d })))
}

fn div_impl(op: &'static str, out: Option<&Tensor>, a: &Tensor, b: &Tensor, mode: Option<&str>) -> Result<Tensor> {
    let m = rounding(mode)?;
    if m != Rounding::True && a.dtype() == ScalarType::Bool && b.dtype() == ScalarType::Bool {
        return Err(Error::UnsupportedDtype { op: "div_trunc".into(), dtype: ScalarType::Bool });
    }
    run_binary(op, out, a, b, m == Rounding::True, |it| div_kernel(it, m))
}

/// `div.Tensor(Tensor self, Tensor other) -> Tensor`: true division (integers promote to float).
pub fn div(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    div_impl("div", None, self_, other, None)
}
/// `div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor`
pub fn div_mode(self_: &Tensor, other: &Tensor, rounding_mode: Option<&str>) -> Result<Tensor> {
    div_impl("div", None, self_, other, rounding_mode)
}
/// `div.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)`
pub fn div_out(self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<Tensor> {
    div_impl("div", Some(out), self_, other, None)
}
/// `div.out_mode(Tensor self, Tensor other, *, str? rounding_mode, Tensor(a!) out) -> Tensor(a!)`
pub fn div_out_mode(self_: &Tensor, other: &Tensor, rounding_mode: Option<&str>, out: &Tensor) -> Result<Tensor> {
    div_impl("div", Some(out), self_, other, rounding_mode)
}
/// `div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)`
pub fn div_(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    div_impl("div_", Some(self_), self_, other, None)
}
/// `div_.Tensor_mode(Tensor(a!) self, Tensor other, *, str? rounding_mode) -> Tensor(a!)`
pub fn div_mode_(self_: &Tensor, other: &Tensor, rounding_mode: Option<&str>) -> Result<Tensor> {
    div_impl("div_", Some(self_), self_, other, rounding_mode)
}

// ---- Scalar overloads: the scalar becomes a wrapped-number tensor (lowest promotion class) ----

/// `add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor`
pub fn add_scalar(self_: &Tensor, other: Scalar, alpha: Scalar) -> Result<Tensor> {
    crate::ops::add(self_, &Tensor::wrapped_scalar(other), alpha)
}
/// `add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)`
pub fn add_scalar_(self_: &Tensor, other: Scalar, alpha: Scalar) -> Result<Tensor> {
    crate::ops::add_(self_, &Tensor::wrapped_scalar(other), alpha)
}
/// `sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor`
pub fn sub_scalar(self_: &Tensor, other: Scalar, alpha: Scalar) -> Result<Tensor> {
    crate::ops::sub(self_, &Tensor::wrapped_scalar(other), alpha)
}
/// `sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)`
pub fn sub_scalar_(self_: &Tensor, other: Scalar, alpha: Scalar) -> Result<Tensor> {
    crate::ops::sub_(self_, &Tensor::wrapped_scalar(other), alpha)
}
/// `rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor`: `other - alpha * self`.
pub fn rsub_scalar(self_: &Tensor, other: Scalar, alpha: Scalar) -> Result<Tensor> {
    crate::ops::sub(&Tensor::wrapped_scalar(other), self_, alpha)
}
/// `mul.Scalar(Tensor self, Scalar other) -> Tensor`
pub fn mul_scalar(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    crate::ops::mul(self_, &Tensor::wrapped_scalar(other))
}
/// `mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)`
pub fn mul_scalar_(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    crate::ops::mul_(self_, &Tensor::wrapped_scalar(other))
}
/// `div.Scalar(Tensor self, Scalar other) -> Tensor`
pub fn div_scalar(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    crate::ops::div(self_, &Tensor::wrapped_scalar(other))
}
/// `div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor`
pub fn div_scalar_mode(self_: &Tensor, other: Scalar, rounding_mode: Option<&str>) -> Result<Tensor> {
    crate::ops::div_tensor_mode(self_, &Tensor::wrapped_scalar(other), rounding_mode)
}
/// `div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)`
pub fn div_scalar_(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    crate::ops::div_(self_, &Tensor::wrapped_scalar(other))
}
