//! The autograd behaviour tests, one binary.
mod basics;
mod complex;
mod fast_backward;
mod fuzz_regressions;
mod gradgrad;
mod saved_hooks;
