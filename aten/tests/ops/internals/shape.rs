//! Tests of `native::shape`'s internals (moved out of the crate: Note [Tests outside aten]).

use aten::native::shape::*;
#[allow(unused_imports)]
use aten::{Generator, Tensor};
#[allow(unused_imports)]
use c10::{Device, Element, MemoryFormat, Result, Scalar, ScalarType};

#[test]
fn view_strides_follow_compute_stride() {
    assert_eq!(compute_view_strides(&[2, 3, 4], &[12, 4, 1], &[6, 4]).unwrap().as_slice(), &[4, 1]);
    // A transposed matrix cannot be flattened without a copy.
    assert!(compute_view_strides(&[3, 2], &[1, 3], &[6]).is_none());
    // But splitting its dimensions works.
    assert_eq!(compute_view_strides(&[4, 2], &[1, 4], &[2, 2, 2]).unwrap().as_slice(), &[2, 1, 4]);
}

#[test]
fn infer_size_errors() {
    assert_eq!(infer_size("view", &[-1, 4], 12).unwrap().as_slice(), &[3, 4]);
    assert!(infer_size("view", &[-1, -1], 12).is_err());
    assert!(infer_size("view", &[5], 12).is_err());
}
