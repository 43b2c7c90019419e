//! Tests of `native::cpu::gather`'s internals (moved out of the crate: Note [Tests outside aten]).

use aten::native::cpu::gather::*;
#[allow(unused_imports)]
use aten::{Generator, Tensor};
#[allow(unused_imports)]
use c10::{Device, Element, MemoryFormat, Result, Scalar, ScalarType};

#[test]
fn separable_index_reads_maps() {
    // A [2, 3] input read with rows flipped and a padded column.
    let idx = separable_index(&[2, 3], &[vec![Some(1), Some(0)], vec![None, Some(0), Some(2)]]).unwrap();
    assert_eq!(idx, vec![None, Some(3), Some(5), None, Some(0), Some(2)]);
    assert_eq!(separable_index(&[], &[]).unwrap(), vec![Some(0)]);
    assert!(separable_index(&[2], &[vec![]]).unwrap().is_empty());
}

#[test]
fn nan_sorts_last() {
    let mut v = [2.0, f64::NAN, 1.0];
    v.sort_by(cmp_nan_last);
    assert_eq!(&v[..2], &[1.0, 2.0]);
    assert!(v[2].is_nan());
}
