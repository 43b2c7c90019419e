//! Rust operators on tensors: `&a + &b`, `&a * 2.0`, `-&a`, ... Each returns `Result<Tensor>`
//! (a shape or dtype error is a value, never a panic) and goes through the dispatcher like the
//! named methods.

use std::ops::{Add, Div, Mul, Neg, Sub};

use c10::{Result, Scalar};

use crate::Tensor;

macro_rules! binary_operator {
    ($trait:ident, $method:ident, $tensor_op:expr, $scalar_op:expr) => {
        impl $trait<&Tensor> for &Tensor {
            type Output = Result<Tensor>;
            #[inline]
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                $tensor_op(self, rhs)
            }
        }
        impl $trait<Tensor> for Tensor {
            type Output = Result<Tensor>;
            #[inline]
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                $tensor_op(&self, &rhs)
            }
        }
        impl<S: Into<Scalar>> $trait<S> for &Tensor {
            type Output = Result<Tensor>;
            #[inline]
            fn $method(self, rhs: S) -> Result<Tensor> {
                $scalar_op(self, rhs.into())
            }
        }
    };
}

binary_operator!(Add, add, |a: &Tensor, b: &Tensor| crate::ops::add(a, b, Scalar::Int(1)), |a: &Tensor, s| {
    crate::ops::add_scalar(a, s, Scalar::Int(1))
});
binary_operator!(Sub, sub, |a: &Tensor, b: &Tensor| crate::ops::sub(a, b, Scalar::Int(1)), |a: &Tensor, s| {
    crate::ops::sub_scalar(a, s, Scalar::Int(1))
});
binary_operator!(Mul, mul, |a: &Tensor, b: &Tensor| crate::ops::mul(a, b), |a: &Tensor, s| crate::ops::mul_scalar(
    a, s
));
binary_operator!(Div, div, |a: &Tensor, b: &Tensor| crate::ops::div(a, b), |a: &Tensor, s| crate::ops::div_scalar(
    a, s
));

impl Neg for &Tensor {
    type Output = Result<Tensor>;
    #[inline]
    fn neg(self) -> Result<Tensor> {
        crate::ops::neg(self)
    }
}
