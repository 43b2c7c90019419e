//! PyTorch's memory-overlap rules (`ATen/MemoryOverlap.cpp`): whether a tensor's elements alias
//! each other, and whether two tensors share memory, so that in-place and `out=` writes refuse
//! inputs they would corrupt.
//!
//! Note [Memory overlap checks]: writing through a tensor with a zero stride (an `expand`ed
//! tensor) writes several logical elements to one address, so `add_` on `[1].expand([3])`
//! used to add three times into one element and return garbage. PyTorch refuses such writes, and
//! writes into an output that partly overlaps an input (the result would depend on the order of
//! the loop). Both checks answer "too hard to tell" (and allow the write) where PyTorch does:
//! for layouts that are not dense, overlap is only asserted when it is certain.

use c10::{Error, Result};

use crate::Tensor;

/// Whether the elements of a tensor alias each other.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MemOverlap {
    /// Every element has its own address.
    No,
    /// At least two elements share an address.
    Yes,
    /// The layout is not dense and has no zero stride: not worth deciding.
    TooHard,
}

/// How the memory of two tensors relates.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MemOverlapStatus {
    /// The same elements at the same addresses.
    Full,
    /// Some but not all addresses are shared (or the same range with other strides).
    Partial,
    /// No address is shared.
    No,
    /// One of them is not dense: not worth deciding.
    TooHard,
}

/// PyTorch's `is_non_overlapping_and_dense`: the elements exactly tile a block of memory, in
/// some dimension order.
pub fn is_non_overlapping_and_dense(sizes: &[i64], strides: &[i64]) -> bool {
    let nd = sizes.len();
    if nd == 1 {
        return sizes[0] < 2 || strides[0] == 1;
    }
    let mut perm: smallvec::SmallVec<[usize; 6]> = (0..nd).collect();
    // Dims of size < 2 go last; the others by increasing stride.
    perm.sort_by(|&a, &b| match (sizes[a] < 2, sizes[b] < 2) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        (false, false) => strides[a].cmp(&strides[b]),
    });
    let mut require = 1i64;
    for &d in perm.iter() {
        if sizes[d] < 2 {
            return true;
        }
        if strides[d] != require {
            return false;
        }
        // Saturating: the sizes of an empty tensor can multiply past i64 before its 0 is
        // reached (`[2^40, 2^40, 0]`), and no stride equals the saturated value after it.
        require = require.saturating_mul(sizes[d]);
    }
    true
}

/// PyTorch's `has_internal_overlap`.
pub fn has_internal_overlap(t: &Tensor) -> MemOverlap {
    if t.is_contiguous() || is_non_overlapping_and_dense(t.sizes(), t.strides()) {
        return MemOverlap::No;
    }
    if t.sizes().iter().zip(t.strides()).any(|(&s, &st)| s > 1 && st == 0) {
        return MemOverlap::Yes;
    }
    MemOverlap::TooHard
}

/// PyTorch's `get_overlap_status`.
pub fn get_overlap_status(a: &Tensor, b: &Tensor) -> MemOverlapStatus {
    if a.is_same(b) {
        return MemOverlapStatus::Full;
    }
    if a.numel() == 0 || b.numel() == 0 || !a.storage().is_same(b.storage()) {
        return MemOverlapStatus::No;
    }
    if !is_non_overlapping_and_dense(a.sizes(), a.strides()) || !is_non_overlapping_and_dense(b.sizes(), b.strides()) {
        return MemOverlapStatus::TooHard;
    }
    // Dense tensors occupy [offset, offset + numel) elements of one storage; compare in bytes
    // since the two may have different dtypes.
    let range = |t: &Tensor| {
        let begin = t.storage_offset() as u128 * t.dtype().size() as u128;
        (begin, begin + t.numel() as u128 * t.dtype().size() as u128)
    };
    let ((a0, a1), (b0, b1)) = (range(a), range(b));
    if a0 == b0 && a1 == b1 {
        return if a.strides() == b.strides() { MemOverlapStatus::Full } else { MemOverlapStatus::Partial };
    }
    if a0 < b1 && b0 < a1 {
        return MemOverlapStatus::Partial;
    }
    MemOverlapStatus::No
}

/// PyTorch's `assert_no_internal_overlap`: `t` is about to be written.
pub fn assert_no_internal_overlap(op: &str, t: &Tensor) -> Result<()> {
    if has_internal_overlap(t) == MemOverlap::Yes {
        return Err(Error::invalid(
            op,
            "unsupported operation: more than one element of the written-to tensor refers to a single memory \
             location. Please clone() the tensor before performing the operation.",
        ));
    }
    Ok(())
}

const PARTIAL_OVERLAP_MSG: &str = "unsupported operation: some elements of the input tensor and the written-to \
                                   tensor refer to a single memory location. Please clone() the tensor before \
                                   performing the operation.";

/// PyTorch's `assert_no_partial_overlap`: `a` is written while `b` is read; sharing all of the
/// memory element for element (an in-place operation) is fine, sharing part of it is not.
pub fn assert_no_partial_overlap(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if get_overlap_status(a, b) == MemOverlapStatus::Partial {
        return Err(Error::invalid(op, PARTIAL_OVERLAP_MSG));
    }
    Ok(())
}

/// PyTorch's `assert_no_overlap`: `a` is written while `b` is read, and the operation cannot
/// even work in place.
pub fn assert_no_overlap(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if matches!(get_overlap_status(a, b), MemOverlapStatus::Partial | MemOverlapStatus::Full) {
        return Err(Error::invalid(op, PARTIAL_OVERLAP_MSG));
    }
    Ok(())
}
