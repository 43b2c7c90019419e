//! Checked size arithmetic: element counts, storage spans and byte sizes of tensor geometries.
//!
//! Note [Checked sizes]: every allocation and every view whose geometry a caller chooses (the
//! factories, `empty_strided`, `as_strided`, `expand`, `unfold`, tensors over external memory,
//! the readers of files) computes its counts here, with checked arithmetic, and gets PyTorch's
//! error when a count does not fit: "numel: integer multiplication overflow" for an element
//! count beyond `i64`, "Storage size calculation overflowed with sizes=..." for a byte size
//! beyond `i64`. Views made from an existing tensor by shrinking or permuting its geometry
//! (`select`, `narrow`, `transpose`, `view`, ...) cannot exceed their base and need no check.
//! Before these helpers, `numel * itemsize` wrapped to 0 for shapes like `[1 << 60, 4]`: a 0-byte
//! buffer was allocated and then written, from safe code.

use crate::{Error, Result};

/// The largest storage, in bytes, that a tensor may address: PyTorch's `storage_max()`, which is
/// also the largest size a Rust allocation may have on a 64-bit target (`isize::MAX`).
pub const STORAGE_MAX: u64 = i64::MAX as u64;

/// The element count of `sizes`, which must be non-negative and whose product must fit in an
/// `i64` (PyTorch's `safe_compute_numel`).
pub fn numel(op: &str, sizes: &[i64]) -> Result<i64> {
    let mut n: i64 = 1;
    let mut overflowed = false;
    for &s in sizes {
        if s < 0 {
            return Err(Error::shape(op, format!("Trying to create tensor with negative dimension {s}: {sizes:?}")));
        }
        match n.checked_mul(s) {
            Some(m) => n = m,
            // A later zero still makes an empty tensor, whose count is 0 and fits.
            None => overflowed = true,
        }
    }
    if sizes.contains(&0) {
        return Ok(0);
    }
    if overflowed {
        return Err(Error::shape(op, "numel: integer multiplication overflow"));
    }
    Ok(n)
}

/// The product of some of a tensor's dims (a plane, the dims after the channels), saturating at
/// `usize::MAX` instead of wrapping. Only an empty tensor has such a sub-product past int64 (its
/// zero is elsewhere), and loops over it then run zero times.
pub fn sub_numel(sizes: &[i64]) -> usize {
    sizes.iter().fold(1usize, |n, &s| n.saturating_mul(s.max(0) as usize))
}

/// Bytes of a contiguous tensor of `sizes` with elements of `itemsize` bytes (PyTorch's
/// `computeStorageNbytesContiguous`).
pub fn contiguous_nbytes(op: &str, sizes: &[i64], itemsize: usize) -> Result<usize> {
    let overflow = || Error::shape(op, format!("Storage size calculation overflowed with sizes={sizes:?}"));
    let n = numel(op, sizes).map_err(|e| if sizes.iter().any(|&s| s < 0) { e } else { overflow() })?;
    let bytes = (n as u64).checked_mul(itemsize as u64).filter(|&b| b <= STORAGE_MAX).ok_or_else(overflow)?;
    Ok(bytes as usize)
}

/// Elements of storage that a geometry addresses: one past the largest offset reached, or 0 for
/// an empty tensor. `None` when a stride is negative or the span does not fit in an `i64`.
pub fn storage_span(sizes: &[i64], strides: &[i64], storage_offset: i64) -> Option<i64> {
    debug_assert_eq!(sizes.len(), strides.len());
    if sizes.contains(&0) {
        return Some(0);
    }
    let mut span = storage_offset.checked_add(1)?;
    for (&s, &st) in sizes.iter().zip(strides) {
        if s < 0 || st < 0 {
            return None;
        }
        span = span.checked_add((s - 1).checked_mul(st)?)?;
    }
    Some(span)
}

/// Bytes of storage that a strided geometry needs (PyTorch's `computeStorageNbytes`): the span
/// of [`storage_span`] times `itemsize`, checked. Sizes must be non-negative.
pub fn strided_nbytes(op: &str, sizes: &[i64], strides: &[i64], storage_offset: i64, itemsize: usize) -> Result<usize> {
    if sizes.len() != strides.len() {
        return Err(Error::shape(
            op,
            format!("mismatch in length of strides and shape ({} vs {})", strides.len(), sizes.len()),
        ));
    }
    numel(op, sizes)?;
    if storage_offset < 0 {
        return Err(Error::shape(op, format!("Tensor: invalid storage offset {storage_offset}")));
    }
    storage_span(sizes, strides, storage_offset)
        .and_then(|span| (span as u64).checked_mul(itemsize as u64))
        .filter(|&b| b <= STORAGE_MAX)
        .map(|b| b as usize)
        .ok_or_else(|| {
            Error::shape(
                op,
                format!("Storage size calculation overflowed with sizes={sizes:?} and strides={strides:?}"),
            )
        })
}

/// An empty `Vec` with room for `n` elements, or [`Error::OutOfMemory`] when the allocator
/// refuses (or `n` elements exceed [`STORAGE_MAX`] bytes).
///
/// Note [Fallible scratch buffers]: a kernel that builds its result (or a buffer the size of
/// its result) in a `Vec` before making the tensor sizes it with this, or with
/// [`try_vec_filled`], rather than `Vec::with_capacity` / `vec![x; n]`: those abort the process
/// on an allocation failure, and an output of an empty input can still be huge (reducing
/// `[2^40, 0]` over its last dim gives 2^40 values). PyTorch reports that as an out-of-memory
/// error, and so do we.
pub fn try_vec<T>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    let nbytes = n.saturating_mul(std::mem::size_of::<T>());
    if nbytes as u64 > STORAGE_MAX {
        return Err(Error::OutOfMemory { device: crate::DeviceType::Cpu, nbytes });
    }
    v.try_reserve_exact(n).map_err(|_| Error::OutOfMemory { device: crate::DeviceType::Cpu, nbytes })?;
    Ok(v)
}

/// `a * b` for an element count, or PyTorch's "numel: integer multiplication overflow".
pub fn checked_mul(op: &str, a: i64, b: i64) -> Result<i64> {
    a.checked_mul(b).ok_or_else(|| Error::shape(op, "numel: integer multiplication overflow"))
}

/// `vec![value; n]`, or [`Error::OutOfMemory`] (Note [Fallible scratch buffers]).
pub fn try_vec_filled<T: Clone>(value: T, n: usize) -> Result<Vec<T>> {
    let mut v = try_vec(n)?;
    v.resize(n, value);
    Ok(v)
}

/// Collects an iterator of exactly-known length `n` into a `Vec` reserved up front, or
/// [`Error::OutOfMemory`] (Note [Fallible scratch buffers]).
pub fn try_collect<T>(n: usize, items: impl IntoIterator<Item = T>) -> Result<Vec<T>> {
    let mut v = try_vec(n)?;
    v.extend(items);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_buffers_fail_as_values() {
        assert!(matches!(try_vec::<f64>(1 << 62), Err(Error::OutOfMemory { nbytes, .. }) if nbytes == usize::MAX));
        // 2^48 bytes: beyond a 47-bit user address space, so refused even with overcommit.
        assert!(matches!(try_vec_filled(0f64, 1 << 45), Err(Error::OutOfMemory { nbytes, .. }) if nbytes == 1 << 48));
        assert_eq!(try_vec_filled(7u8, 3).unwrap(), vec![7, 7, 7]);
        assert_eq!(try_collect(3, 0..3).unwrap(), vec![0, 1, 2]);
        assert!(try_vec::<()>(usize::MAX).is_ok());
    }

    #[test]
    fn numel_checks_sign_and_overflow() {
        assert_eq!(numel("t", &[]).unwrap(), 1);
        assert_eq!(numel("t", &[2, 3, 4]).unwrap(), 24);
        assert_eq!(numel("t", &[1 << 40, 1 << 40, 0]).unwrap(), 0);
        let e = numel("t", &[1 << 32, 1 << 32]).unwrap_err().to_string();
        assert_eq!(e, "t: numel: integer multiplication overflow");
        let e = numel("t", &[2, -1]).unwrap_err().to_string();
        assert_eq!(e, "t: Trying to create tensor with negative dimension -1: [2, -1]");
    }

    #[test]
    fn contiguous_bytes_overflow_is_an_error() {
        assert_eq!(contiguous_nbytes("t", &[3, 5], 8).unwrap(), 120);
        assert_eq!(contiguous_nbytes("t", &[0, 1 << 62], 8).unwrap(), 0);
        // 2^62 elements of 4 bytes: the count fits, the bytes do not (they wrapped to 0 before).
        let e = contiguous_nbytes("zeros", &[1 << 60, 4], 4).unwrap_err().to_string();
        assert_eq!(e, "zeros: Storage size calculation overflowed with sizes=[1152921504606846976, 4]");
        // The count itself overflows: still the storage message, as in PyTorch.
        let e = contiguous_nbytes("zeros", &[1 << 40, 1 << 40], 1).unwrap_err().to_string();
        assert!(e.contains("Storage size calculation overflowed"), "{e}");
        // The largest byte count that fits is i64::MAX.
        assert_eq!(contiguous_nbytes("t", &[i64::MAX], 1).unwrap(), i64::MAX as usize);
        assert!(contiguous_nbytes("t", &[i64::MAX], 2).is_err());
    }

    #[test]
    fn strided_bytes_follow_the_largest_offset() {
        // [2, 3] with strides [1, 2] reaches offset 1 + 2*2 = 5: six elements.
        assert_eq!(strided_nbytes("t", &[2, 3], &[1, 2], 0, 4).unwrap(), 24);
        assert_eq!(strided_nbytes("t", &[2, 3], &[0, 0], 7, 4).unwrap(), 32);
        assert_eq!(strided_nbytes("t", &[2, 0], &[1 << 62, 1], 0, 4).unwrap(), 0);
        let e = strided_nbytes("t", &[3, 3], &[1 << 62, 1], 0, 4).unwrap_err().to_string();
        assert_eq!(e, "t: Storage size calculation overflowed with sizes=[3, 3] and strides=[4611686018427387904, 1]");
        assert!(strided_nbytes("t", &[2, 2], &[-1, 1], 0, 4).is_err());
        assert!(strided_nbytes("t", &[2], &[1, 1], 0, 4).is_err());
        assert_eq!(storage_span(&[4], &[2], 3), Some(10));
        assert_eq!(storage_span(&[4], &[i64::MAX], 0), None);
    }
}
