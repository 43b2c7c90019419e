//! The `#[derive(Module)]` procedural macro for the `nn` crate (filled by the nn issue).
#![forbid(unsafe_code)]
#![warn(missing_docs)]
