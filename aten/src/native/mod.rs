//! Native operator implementations, one file per op family (PyTorch's `native/*.cpp`), with the
//! loops they share under [`cpu`] and the [`tensor_iterator`].

/// Runs `$body` with `$T` bound to the storage type and `$A` to the type arithmetic is done in
/// ("opmath": f32 for f16/bf16), for the floating dtypes. Other dtypes run `$else`.
macro_rules! match_float {
    ($dt:expr, $T:ident, $A:ident => $body:block, $other:pat => $else:expr) => {
        match $dt {
            c10::ScalarType::F32 => {
                type $T = f32;
                #[allow(dead_code)]
                type $A = f32;
                $body
            }
            c10::ScalarType::F64 => {
                type $T = f64;
                #[allow(dead_code)]
                type $A = f64;
                $body
            }
            c10::ScalarType::F16 => {
                type $T = c10::f16;
                #[allow(dead_code)]
                type $A = f32;
                $body
            }
            c10::ScalarType::BF16 => {
                type $T = c10::bf16;
                #[allow(dead_code)]
                type $A = f32;
                $body
            }
            $other => $else,
        }
    };
}

/// Runs `$body` with `$T` bound to the integer type of an integral dtype (not bool).
macro_rules! match_int {
    ($dt:expr, $T:ident => $body:block, $other:pat => $else:expr) => {
        match $dt {
            c10::ScalarType::U8 => {
                type $T = u8;
                $body
            }
            c10::ScalarType::I8 => {
                type $T = i8;
                $body
            }
            c10::ScalarType::I16 => {
                type $T = i16;
                $body
            }
            c10::ScalarType::I32 => {
                type $T = i32;
                $body
            }
            c10::ScalarType::I64 => {
                type $T = i64;
                $body
            }
            $other => $else,
        }
    };
}

pub mod amp;
pub mod attention;
pub mod binary;
pub mod compare;
pub mod complex;
pub mod composite;
pub mod conv;
pub mod copy;
pub mod cpu;
pub mod dropout;
pub mod factory;
pub mod fft;
pub mod foreach;
pub mod indexing;
pub mod join;
pub mod lapack;
pub mod linalg;
pub mod loss;
pub mod norm;
pub mod normalization;
pub mod opmath;
pub mod pointwise;
pub mod pool;
pub mod random;
pub mod reduce;
pub mod rnn;
pub mod shape;
pub mod shape_ops;
pub mod sort;
pub mod sparse;
pub mod special;
pub mod spectral;
pub mod stub;
pub mod tensor_iterator;
pub mod ternary;
pub mod unary;

/// Whether `t` lives on a device whose loops are not the CPU's (and not the meta device's): the
/// operators composed from device operators take their device path for it.
pub(crate) fn on_device(t: &crate::Tensor) -> bool {
    !t.device().is_cpu() && !t.device().is_meta()
}

/// The dtype an operator composed from device operators computes in: float64 for float64,
/// float32 otherwise (the 16-bit floats round once at the end, as the CPU does).
pub(crate) fn device_work_dtype(dtype: c10::ScalarType) -> c10::ScalarType {
    if dtype == c10::ScalarType::F64 {
        c10::ScalarType::F64
    } else {
        c10::ScalarType::F32
    }
}

/// That every tensor of `others` is on `device`: the first that is not gives the
/// `DeviceMismatch` error. Kernels that run on more than one device call it before reading
/// anything (a CPU kernel handed a meta tensor would read memory that does not exist).
pub(crate) fn check_device<'a>(
    op: &str,
    device: c10::Device,
    others: impl IntoIterator<Item = &'a crate::Tensor>,
) -> c10::Result<()> {
    match others.into_iter().find(|t| t.device() != device) {
        Some(t) => Err(c10::Error::DeviceMismatch { op: op.into(), a: device.to_string(), b: t.device().to_string() }),
        None => Ok(()),
    }
}
