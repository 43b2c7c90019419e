//! Native operator implementations, one file per op family, with CPU kernels under [`cpu`].

pub mod cpu;
