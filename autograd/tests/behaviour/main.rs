//! The autograd behaviour tests, one binary.
mod basics;
mod fast_backward;
mod gradgrad;
