//! CPU kernels and the loops they run on.

pub mod gather;
pub mod loops;
pub mod vec;
