//! Tests of `native::tensor_iterator`'s internals (moved out of the crate: Note [Tests outside aten]).

use aten::native::tensor_iterator::*;
#[allow(unused_imports)]
use aten::{Generator, Tensor};
#[allow(unused_imports)]
use c10::{Device, Element, MemoryFormat, Result, Scalar, ScalarType};

#[test]
fn broadcast_rules() {
    assert_eq!(broadcast_shapes("t", &[2, 1, 3], &[4, 1]).unwrap().as_slice(), &[2, 4, 3]);
    assert_eq!(broadcast_shapes("t", &[], &[3]).unwrap().as_slice(), &[3]);
    let e = broadcast_shapes("add", &[3], &[4]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "add: The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"
    );
}

#[test]
fn coalesces_contiguous_dims() {
    let a = Tensor::from_vec((0..24).map(|x| x as f32).collect(), &[2, 3, 4]).unwrap();
    let b = Tensor::from_vec((0..24).map(|x| x as f32).collect(), &[2, 3, 4]).unwrap();
    let it = TensorIteratorConfig::binary_op("add", None, &a, &b).build().unwrap();
    assert_eq!(it.shape(), &[24]);
    assert_eq!(it.operand(0).strides(), &[12, 4, 1]);
}

#[test]
fn output_inherits_transposed_layout() {
    let a = Tensor::from_vec((0..6).map(|x| x as f32).collect(), &[2, 3]).unwrap();
    let t = aten::native::shape::transpose(&a, 0, 1).unwrap();
    let it = TensorIteratorConfig::binary_op("add", None, &t, &t).build().unwrap();
    // The output is laid out like the input (column-major for the transposed view).
    assert_eq!(it.operand(0).strides(), &[1, 3]);
    assert_eq!(it.shape(), &[6]);
}

/// Note [Tiled iteration]: transposed inputs of several element sizes, sizes that are not
/// multiples of the tile, a batch dimension, and an in-place output, against the
/// element-by-element definition.
#[test]
fn tiled_iteration_matches_elementwise_definition() {
    use aten::ops;
    for (rows, cols, dt) in [(300i64, 200i64, ScalarType::F64), (257, 130, ScalarType::I16), (129, 300, ScalarType::U8)]
    {
        let n = rows * cols;
        let a =
            Tensor::from_vec((0..n).map(|x| (x % 97) as f64).collect(), &[cols, rows]).unwrap().to(dt).call().unwrap();
        let b =
            Tensor::from_vec((0..n).map(|x| (x % 89) as f64).collect(), &[rows, cols]).unwrap().to(dt).call().unwrap();
        let at = ops::t(&a).unwrap();
        let it = TensorIteratorConfig::binary_op("add", None, &at, &b).build().unwrap();
        assert!(it.wants_tiling());
        let sum = (&at + &b).unwrap().to(ScalarType::F64).call().unwrap();
        let as_f64 = |t: &Tensor| t.to(ScalarType::F64).call().unwrap().to_vec::<f64>().unwrap();
        let (av, bv) = (as_f64(&a), as_f64(&b));
        let got = sum.contiguous().call().unwrap().to_vec::<f64>().unwrap();
        for i in 0..rows as usize {
            for j in 0..cols as usize {
                let want = av[j * rows as usize + i] + bv[i * cols as usize + j];
                let want = if dt == ScalarType::U8 { (want as i64 % 256) as f64 } else { want };
                assert_eq!(got[i * cols as usize + j], want, "{dt:?} at ({i}, {j})");
            }
        }
    }
    // A batch of transposed matrices added in place into a contiguous output.
    let x = Tensor::from_vec((0..3 * 200 * 150).map(|v| v as f32).collect(), &[3, 200, 150]).unwrap();
    let out = ops::zeros(&[3, 150, 200], Some(ScalarType::F32), None, None, None).unwrap();
    out.add_(&ops::transpose(&x, 1, 2).unwrap()).call().unwrap();
    let got = out.to_vec::<f32>().unwrap();
    for (bi, i, j) in [(0usize, 0usize, 0usize), (1, 149, 199), (2, 70, 33), (2, 149, 0)] {
        assert_eq!(got[bi * 30000 + i * 200 + j], (bi * 30000 + j * 150 + i) as f32);
    }
}
