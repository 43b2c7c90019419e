//! Empty: the crate exists for `tests/facade.rs`, which is compiled the way a user's crate is,
//! with `torch` as its only dependency.
#![forbid(unsafe_code)]
