//! Tests of `memory_overlap`'s internals (moved out of the crate: Note [Tests outside aten]).

use aten::memory_overlap::*;
#[allow(unused_imports)]
use aten::{Generator, Tensor};
#[allow(unused_imports)]
use c10::{Device, Element, MemoryFormat, Result, Scalar, ScalarType};

#[test]
fn dense_layouts() {
    assert!(is_non_overlapping_and_dense(&[2, 3], &[1, 2]));
    assert!(!is_non_overlapping_and_dense(&[2, 3], &[0, 1]));
    assert!(is_non_overlapping_and_dense(&[], &[]));
    assert!(is_non_overlapping_and_dense(&[1, 3], &[7, 1]));
}

#[test]
fn internal_overlap_of_expanded_and_strided_tensors() {
    let base = Tensor::from_vec((0..12).map(|x| x as f32).collect(), &[3, 4]).unwrap();
    assert_eq!(has_internal_overlap(&base), MemOverlap::No);
    let one = Tensor::from_vec(vec![1f32], &[1]).unwrap();
    let expanded = aten::ops::expand(&one, &[3], false).unwrap();
    assert_eq!(has_internal_overlap(&expanded), MemOverlap::Yes);
    let e = assert_no_internal_overlap("add_", &expanded).unwrap_err().to_string();
    assert!(e.starts_with("add_: unsupported operation: more than one element of the written-to tensor"), "{e}");
    // Every other column: not dense, no zero stride.
    let strided = aten::ops::as_strided(&base, &[3, 2], &[4, 2], None).unwrap();
    assert_eq!(has_internal_overlap(&strided), MemOverlap::TooHard);
    assert!(assert_no_internal_overlap("add_", &strided).is_ok());
}

#[test]
fn overlap_between_tensors() {
    let base = Tensor::from_vec((0..8).map(|x| x as f32).collect(), &[8]).unwrap();
    let head = aten::ops::slice(&base, 0, Some(0), Some(4), 1).unwrap();
    let mid = aten::ops::slice(&base, 0, Some(2), Some(6), 1).unwrap();
    let tail = aten::ops::slice(&base, 0, Some(4), Some(8), 1).unwrap();
    let head_again = aten::ops::slice(&base, 0, Some(0), Some(4), 1).unwrap();
    assert_eq!(get_overlap_status(&head, &head), MemOverlapStatus::Full);
    assert_eq!(get_overlap_status(&head, &head_again), MemOverlapStatus::Full);
    assert_eq!(get_overlap_status(&head, &mid), MemOverlapStatus::Partial);
    assert_eq!(get_overlap_status(&head, &tail), MemOverlapStatus::No);
    let other = Tensor::from_vec(vec![0f32; 4], &[4]).unwrap();
    assert_eq!(get_overlap_status(&head, &other), MemOverlapStatus::No);
    assert!(assert_no_partial_overlap("add", &head, &head_again).is_ok());
    assert!(assert_no_partial_overlap("add", &head, &mid).is_err());
    assert!(assert_no_overlap("cat", &head, &head_again).is_err());
    assert!(assert_no_overlap("cat", &head, &tail).is_ok());
}
