//! `where(condition, self, other)`: elementwise selection with broadcasting and promotion of
//! `self`/`other`.

use c10::{Error, Result, ScalarType};

use crate::native::cpu::loops::ternary_loop;
use crate::native::tensor_iterator::TensorIteratorConfig;
use crate::Tensor;

fn where_impl(condition: &Tensor, self_: &Tensor, other: &Tensor, out: Option<&Tensor>) -> Result<Tensor> {
    if condition.dtype() != ScalarType::Bool && condition.dtype() != ScalarType::U8 {
        return Err(Error::invalid(
            "where",
            format!(
                "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
                condition.dtype().cpp_name()
            ),
        ));
    }
    let dtype = crate::native::tensor_iterator::binary_result_dtype(self_, other);
    let a = if self_.dtype() != dtype { crate::native::copy::to_dtype(self_, dtype)? } else { self_.clone() };
    let b = if other.dtype() != dtype { crate::native::copy::to_dtype(other, dtype)? } else { other.clone() };
    let cond = if condition.dtype() == ScalarType::U8 {
        crate::native::copy::to_dtype(condition, ScalarType::Bool)?
    } else {
        condition.clone()
    };
    let iter = TensorIteratorConfig::new("where")
        .add_output(out)
        .add_input(&cond)
        .add_input(&a)
        .add_input(&b)
        .check_all_same_dtype(false)
        .static_output_dtype(dtype)
        .common_dtype(dtype)
        .build()?;
    if iter.output_dtype() != dtype {
        return Err(Error::invalid(
            "where",
            format!("Expected out type to be {dtype} but got {}", iter.output_dtype()),
        ));
    }
    if !iter.is_cpu() {
        crate::native::stub::run(crate::device_kernel!("where"), &iter, &[])?;
        return iter.output(0);
    }
    c10::dispatch_all_types!(dtype, T => ternary_loop::<T, bool, T, T>(&iter, |c, x, y| if c { x } else { y }));
    iter.output(0)
}

/// `where.self(Tensor condition, Tensor self, Tensor other) -> Tensor`
pub fn where_self(condition: &Tensor, self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    where_impl(condition, self_, other, None)
}

/// `where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)`
pub fn where_self_out(condition: &Tensor, self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<Tensor> {
    where_impl(condition, self_, other, Some(out))
}

/// `where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor`
pub fn where_scalar_other(condition: &Tensor, self_: &Tensor, other: c10::Scalar) -> Result<Tensor> {
    crate::ops::where_self(condition, self_, &Tensor::wrapped_scalar(other))
}

/// `where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor`
pub fn where_scalar_self(condition: &Tensor, self_: c10::Scalar, other: &Tensor) -> Result<Tensor> {
    crate::ops::where_self(condition, &Tensor::wrapped_scalar(self_), other)
}
