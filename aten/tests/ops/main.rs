//! The operator tests of aten, one binary (each test file used to link its own copy of aten).
mod binary;
mod catalogue;
mod conv;
mod fuzz_regressions;
mod indexing;
mod internals;
mod lapack;
mod linalg;
mod loss;
mod meta;
mod norm;
mod pointwise;
mod random;
mod reduce;
mod rnn;
mod shape_ops;
mod unary;
