//! Integration tests live in `tests/tests/*.rs`; this library only holds shared helpers.
#![warn(missing_docs)]
