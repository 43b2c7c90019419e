//! `nn`: the `Module` trait and `#[derive(Module)]`, layers with PyTorch's constructor
//! arguments and state_dict names, losses, `optim`, `data` and serialization.
//!
//! Filled by the nn issue; it already links the layers below it so the dependency graph of the
//! workspace is the final one.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
