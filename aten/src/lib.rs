//! aten (being written)
