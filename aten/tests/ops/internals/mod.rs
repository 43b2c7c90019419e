//! Tests of aten's internals (SIMD loops, the iterator, printing, generators, special
//! functions) through its public paths.
//!
//! Note [Tests outside aten]
//! ~~~~~~~~~~~~~~~~~~~~~~~~~
//! aten has no unit tests of its own (`[lib] test = false` in aten/Cargo.toml): a
//! `#[cfg(test)]` module makes `cargo test` compile the whole crate a second time, which took
//! 156 s of a fresh clone's first `cargo test --workspace` on two cores (6m47s with it, 5m40s
//! without). The tests live here instead, in the `ops` binary, and reach what they test
//! through public paths; items public only for them are `#[doc(hidden)]`.

mod complex;
mod ctc;
mod display;
mod factory;
mod gather;
mod generator;
mod ivalue;
mod loops;
mod memory_overlap;
mod parallel;
mod random;
mod sgemm;
mod shape;
mod special;
mod tensor_iterator;
mod vec;
