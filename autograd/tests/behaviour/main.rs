//! The autograd behaviour tests, one binary.
mod basics;
mod fast_backward;
mod fuzz_regressions;
mod gradgrad;
