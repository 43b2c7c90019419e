//! Autograd for the framework: the graph of `Node`s with `next_edges` and sequence numbers, the
//! engine, and the autograd kernels registered on the `Autograd<Backend>` dispatch keys.
//!
//! This crate is filled by the autograd issue. Until then the `Autograd*` keys that every tensor
//! carries fall through to the backend kernels (aten registers fallthrough fallbacks for them),
//! so operators run without recording history.
#![warn(missing_docs)]
