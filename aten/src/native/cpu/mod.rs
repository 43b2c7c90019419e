//! CPU kernels and the loops they run on.

pub mod gather;
pub mod loops;
#[cfg(target_arch = "x86_64")]
#[doc(hidden)]
pub mod sgemm;
pub mod vec;
