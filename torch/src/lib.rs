//! `torch`: the crate users depend on. It re-exports the tensor type, the operators, dtypes and
//! devices, and (as later layers land) `autograd`, `nn`, `optim` and `data`, so a program reads
//! like its PyTorch counterpart:
//!
//! ```
//! use torch::prelude::*;
//! let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0]);
//! let b = (&a * 2.0).unwrap();
//! assert_eq!(b.to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0]);
//! ```
#![warn(missing_docs)]

pub use aten::{ops, Tensor};
pub use c10::{bf16, f16, Device, DeviceType, Error, Result, Scalar, ScalarType};

/// Dtype constants under PyTorch's names: `torch::kind::float32`.
pub mod kind {
    #![allow(non_upper_case_globals)]
    use c10::ScalarType;
    /// `torch.float32`
    pub const float32: ScalarType = ScalarType::F32;
    /// `torch.float64`
    pub const float64: ScalarType = ScalarType::F64;
    /// `torch.float16`
    pub const float16: ScalarType = ScalarType::F16;
    /// `torch.bfloat16`
    pub const bfloat16: ScalarType = ScalarType::BF16;
    /// `torch.int64`
    pub const int64: ScalarType = ScalarType::I64;
    /// `torch.int32`
    pub const int32: ScalarType = ScalarType::I32;
    /// `torch.int16`
    pub const int16: ScalarType = ScalarType::I16;
    /// `torch.int8`
    pub const int8: ScalarType = ScalarType::I8;
    /// `torch.uint8`
    pub const uint8: ScalarType = ScalarType::U8;
    /// `torch.bool`
    pub const bool: ScalarType = ScalarType::Bool;
}

/// Everything a typical program needs.
pub mod prelude {
    pub use aten::Tensor;
    pub use c10::{Device, Scalar, ScalarType};
}
