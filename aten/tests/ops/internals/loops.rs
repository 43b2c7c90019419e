//! Tests of `native::cpu::loops`'s internals (moved out of the crate: Note [Tests outside aten]).

use aten::native::cpu::loops::*;
#[allow(unused_imports)]
use aten::{Generator, Tensor};
#[allow(unused_imports)]
use c10::{Device, Element, MemoryFormat, Result, Scalar, ScalarType};

#[test]
fn visits_transposed_in_logical_order() {
    let mut v = Vec::new();
    for_each_offset(&[2, 3], &[1, 2], |o| v.push(o));
    assert_eq!(v, vec![0, 2, 4, 1, 3, 5]);
    let mut n = 0;
    for_each_offset(&[], &[], |_| n += 1);
    assert_eq!(n, 1);
    for_each_offset(&[3, 0], &[1, 1], |_| n += 1);
    assert_eq!(n, 1);
}
