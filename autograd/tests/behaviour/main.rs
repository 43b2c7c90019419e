//! The autograd behaviour tests, one binary.
mod basics;
mod gradgrad;
