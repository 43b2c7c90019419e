//! Rust operators on tensors: `&a + &b`, `&a * 2.0`, `1.0 - &a`, `-&a`, `&a % 3`, `&m & &n`,
//! `!&m`, ... Each returns `Result<Tensor>` (a shape or dtype error is a value, never a panic)
//! and goes through the dispatcher like the named methods. A Rust number on either side is a
//! Python number (a wrapped scalar), so the result dtypes are PyTorch's: `1.0 / &ints` is
//! float32, `&ints * 2` stays int64, `&f16s + 1.0` stays float16.
//!
//! ```
//! use aten::tensor;
//! let x = tensor![2, 4].unwrap();
//! let r = (1.0 / &x).unwrap();
//! assert_eq!(r.dtype(), c10::ScalarType::F32);
//! assert_eq!(r.to_vec::<f32>().unwrap(), vec![0.5, 0.25]);
//! assert_eq!((10 - &x).unwrap().to_vec::<i64>().unwrap(), vec![8, 6]);
//! assert_eq!((&x % 3).unwrap().to_vec::<i64>().unwrap(), vec![2, 1]);
//! assert_eq!((&x & 6).unwrap().to_vec::<i64>().unwrap(), vec![2, 4]);
//! assert!((&x + &tensor![1, 2, 3].unwrap()).is_err()); // shapes [2] and [3] do not broadcast
//! ```

use std::ops::{Add, BitAnd, BitOr, BitXor, Div, Mul, Neg, Not, Rem, Shl, Shr, Sub};

use c10::{Result, Scalar};

use crate::{ops, Tensor};

/// `Tensor op Tensor` for every mix of owned and borrowed operands, and `Tensor op number`.
macro_rules! binary_operator {
    ($trait:ident, $method:ident, $tensor_op:expr, $scalar_op:expr) => {
        binary_operator!(@tensors $trait, $method, $tensor_op, &Tensor, &Tensor, Tensor, Tensor, &Tensor, Tensor, Tensor, &Tensor);
        impl<S: Into<Scalar>> $trait<S> for &Tensor {
            type Output = Result<Tensor>;
            #[inline]
            fn $method(self, rhs: S) -> Result<Tensor> {
                $scalar_op(self, rhs.into())
            }
        }
        impl<S: Into<Scalar>> $trait<S> for Tensor {
            type Output = Result<Tensor>;
            #[inline]
            fn $method(self, rhs: S) -> Result<Tensor> {
                $scalar_op(&self, rhs.into())
            }
        }
    };
    (@tensors $trait:ident, $method:ident, $tensor_op:expr, $($lhs:ty, $rhs:ty),*) => {$(
        impl $trait<$rhs> for $lhs {
            type Output = Result<Tensor>;
            #[inline]
            #[allow(clippy::needless_borrow)]
            fn $method(self, rhs: $rhs) -> Result<Tensor> {
                $tensor_op(&self, &rhs)
            }
        }
    )*};
}

/// `number op Tensor` for the Rust number types `$s`: `2.0 * &x`, `1 - &x`.
macro_rules! scalar_lhs_operator {
    ($trait:ident, $method:ident, $op:expr, $($s:ty),*) => {$(
        impl $trait<&Tensor> for $s {
            type Output = Result<Tensor>;
            #[inline]
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                $op(Scalar::from(self), rhs)
            }
        }
        impl $trait<Tensor> for $s {
            type Output = Result<Tensor>;
            #[inline]
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                $op(Scalar::from(self), &rhs)
            }
        }
    )*};
}

/// A Rust number as PyTorch passes a Python number to a tensor-tensor kernel.
#[inline]
fn wrapped(s: Scalar) -> Tensor {
    Tensor::wrapped_scalar(s)
}

binary_operator!(Add, add, |a: &Tensor, b: &Tensor| ops::add(a, b, Scalar::Int(1)), |a: &Tensor, s| {
    ops::add_scalar(a, s, Scalar::Int(1))
});
binary_operator!(Sub, sub, |a: &Tensor, b: &Tensor| ops::sub(a, b, Scalar::Int(1)), |a: &Tensor, s| {
    ops::sub_scalar(a, s, Scalar::Int(1))
});
binary_operator!(Mul, mul, |a: &Tensor, b: &Tensor| ops::mul(a, b), |a: &Tensor, s| ops::mul_scalar(a, s));
binary_operator!(Div, div, |a: &Tensor, b: &Tensor| ops::div(a, b), |a: &Tensor, s| ops::div_scalar(a, s));
binary_operator!(Rem, rem, |a: &Tensor, b: &Tensor| ops::remainder(a, b), |a: &Tensor, s| ops::remainder(
    a,
    &wrapped(s)
));
binary_operator!(BitAnd, bitand, |a: &Tensor, b: &Tensor| ops::bitwise_and(a, b), |a: &Tensor, s| {
    ops::bitwise_and_scalar(a, s)
});
binary_operator!(BitOr, bitor, |a: &Tensor, b: &Tensor| ops::bitwise_or(a, b), |a: &Tensor, s| {
    ops::bitwise_or_scalar(a, s)
});
binary_operator!(BitXor, bitxor, |a: &Tensor, b: &Tensor| ops::bitwise_xor(a, b), |a: &Tensor, s| {
    ops::bitwise_xor_scalar(a, s)
});
binary_operator!(Shl, shl, |a: &Tensor, b: &Tensor| ops::bitwise_left_shift(a, b), |a: &Tensor, s| {
    ops::bitwise_left_shift_tensor_scalar(a, s)
});
binary_operator!(Shr, shr, |a: &Tensor, b: &Tensor| ops::bitwise_right_shift(a, b), |a: &Tensor, s| {
    ops::bitwise_right_shift_tensor_scalar(a, s)
});

// Note [Numbers on the left]: Python's reflected operators (`__radd__`, `__rsub__`, ...). `+`
// and `*` commute exactly (also in floating point); `-` is `rsub`; the others run the tensor
// kernel with the number as a wrapped scalar, so `1.0 / &ints` is a true (float) division. The
// number is an `f64` or an `i64` (Python's float and int; `bool` for the bitwise operators) or a
// `Scalar`. Rejected: also `f32` and `i32`: an unsuffixed literal then fits two impls, and
// although the compiler's fallback settles the operator, `(2.0 * &x).unwrap()` no longer compiles
// ("type annotations needed": a method call needs the receiver's type before fallback runs).
// An `f32` `s` goes on the right (`&x * s`, generic there) or as `f64::from(s)`.
scalar_lhs_operator!(Add, add, |s, x: &Tensor| ops::add_scalar(x, s, Scalar::Int(1)), f64, i64, Scalar);
scalar_lhs_operator!(Sub, sub, |s, x: &Tensor| ops::rsub(x, s, Scalar::Int(1)), f64, i64, Scalar);
scalar_lhs_operator!(Mul, mul, |s, x: &Tensor| ops::mul_scalar(x, s), f64, i64, Scalar);
scalar_lhs_operator!(Div, div, |s, x: &Tensor| ops::div(&wrapped(s), x), f64, i64, Scalar);
scalar_lhs_operator!(Rem, rem, |s, x: &Tensor| ops::remainder(&wrapped(s), x), f64, i64, Scalar);
scalar_lhs_operator!(BitAnd, bitand, |s, x: &Tensor| ops::bitwise_and_scalar_tensor(s, x), i64, bool, Scalar);
scalar_lhs_operator!(BitOr, bitor, |s, x: &Tensor| ops::bitwise_or_scalar_tensor(s, x), i64, bool, Scalar);
scalar_lhs_operator!(BitXor, bitxor, |s, x: &Tensor| ops::bitwise_xor_scalar_tensor(s, x), i64, bool, Scalar);
scalar_lhs_operator!(Shl, shl, |s, x: &Tensor| ops::bitwise_left_shift_scalar_tensor(s, x), i64, Scalar);
scalar_lhs_operator!(Shr, shr, |s, x: &Tensor| ops::bitwise_right_shift_scalar_tensor(s, x), i64, Scalar);

impl Neg for &Tensor {
    type Output = Result<Tensor>;
    #[inline]
    fn neg(self) -> Result<Tensor> {
        ops::neg(self)
    }
}

impl Neg for Tensor {
    type Output = Result<Tensor>;
    #[inline]
    fn neg(self) -> Result<Tensor> {
        ops::neg(&self)
    }
}

/// `!&x` is Python's `~x` (`bitwise_not`): logical not for bool tensors, bitwise for integers.
impl Not for &Tensor {
    type Output = Result<Tensor>;
    #[inline]
    fn not(self) -> Result<Tensor> {
        ops::bitwise_not(self)
    }
}

/// `!x` is Python's `~x` (`bitwise_not`).
impl Not for Tensor {
    type Output = Result<Tensor>;
    #[inline]
    fn not(self) -> Result<Tensor> {
        ops::bitwise_not(&self)
    }
}
