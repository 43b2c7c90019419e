//! CPU kernels and the loops they run on.

pub mod loops;
pub mod vec;
