//! The front end's conveniences (issue 36): `tensor!` literals and their dtypes, zero-dim tensors
//! from numbers, operators with the number on the left and the remainder/bitwise/shift
//! operators, `cuda()`/`cpu()` without a CUDA backend, and indexing with `i()`: values, shapes,
//! dtypes, views, and the error kinds. Expected values are PyTorch's (closed forms).

use aten::indexing::*;
use aten::{ops, tensor, Tensor};
use c10::{Error, Scalar, ScalarType};

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

fn i64s(t: &Tensor) -> Vec<i64> {
    t.to_vec::<i64>().unwrap()
}

fn bools(t: &Tensor) -> Vec<bool> {
    t.to_vec::<bool>().unwrap()
}

/// `torch.arange(12.).reshape(3, 4)`.
fn x34() -> Tensor {
    Tensor::from_vec((0..12).map(|v| v as f32).collect(), &[3, 4]).unwrap()
}

/// `torch.arange(24.).reshape(2, 3, 4)`.
fn y234() -> Tensor {
    Tensor::from_vec((0..24).map(|v| v as f32).collect(), &[2, 3, 4]).unwrap()
}

// ---- tensor! -----------------------------------------------------------------------------------

#[test]
fn literals_have_pytorch_shapes_and_default_dtypes() {
    let a = tensor![1., 2., 3.].unwrap();
    assert_eq!((a.sizes(), a.dtype()), (&[3i64][..], ScalarType::F32));
    assert_eq!(f32s(&a), vec![1., 2., 3.]);

    let b = tensor![[1., 2.], [3., 4.]].unwrap();
    assert_eq!((b.sizes(), b.dtype()), (&[2i64, 2][..], ScalarType::F32));
    assert_eq!(f32s(&b), vec![1., 2., 3., 4.]);

    let c = tensor![[[1, 2], [3, 4]], [[5, 6], [7, -8]]].unwrap();
    assert_eq!((c.sizes(), c.dtype()), (&[2i64, 2, 2][..], ScalarType::I64));
    assert_eq!(i64s(&c), vec![1, 2, 3, 4, 5, 6, 7, -8]);

    let d = tensor![true, false].unwrap();
    assert_eq!((d.sizes(), d.dtype()), (&[2i64][..], ScalarType::Bool));
    assert_eq!(bools(&d), vec![true, false]);

    // Exponents, underscores, hex and a trailing comma are literals too.
    let e = tensor![1e-1, -2.5E2, 1_000.,].unwrap();
    assert_eq!((e.dtype(), f32s(&e)), (ScalarType::F32, vec![0.1, -250., 1000.]));
    let h = tensor![0xff, -1_000].unwrap();
    assert_eq!((h.dtype(), i64s(&h)), (ScalarType::I64, vec![255, -1000]));

    // torch.tensor([]) is float32 of shape [0]; [[], []] is [2, 0].
    let empty = tensor![].unwrap();
    assert_eq!((empty.sizes(), empty.dtype()), (&[0i64][..], ScalarType::F32));
    assert_eq!(tensor![[], []].unwrap().sizes(), &[2, 0]);
    assert_eq!(tensor![5.].unwrap().sizes(), &[1]);
}

#[test]
fn literal_elements_promote_like_python_numbers_and_typed_values_keep_their_type() {
    let dt = |t: c10::Result<Tensor>| t.unwrap().dtype();
    // Python numbers: [1, 2.5] float32, [True, 2] int64, [True, 1.5] float32.
    let m = tensor![1, 2.5].unwrap();
    assert_eq!((m.dtype(), f32s(&m)), (ScalarType::F32, vec![1., 2.5]));
    let bi = tensor![true, 2].unwrap();
    assert_eq!((bi.dtype(), i64s(&bi)), (ScalarType::I64, vec![1, 2]));
    assert_eq!(dt(tensor![true, 1.5]), ScalarType::F32);
    // Suffixed literals and typed values are tensors of their type; literals join them as
    // wrapped numbers do: same category keeps the type, a higher one takes the default.
    assert_eq!(dt(tensor![1.0f64, 2.]), ScalarType::F64);
    assert_eq!(dt(tensor![1.5f32]), ScalarType::F32);
    assert_eq!(dt(tensor![1i32, 2]), ScalarType::I32);
    assert_eq!(dt(tensor![1u8, 2]), ScalarType::U8);
    assert_eq!(dt(tensor![1i32, 2.5]), ScalarType::F32);
    assert_eq!(dt(tensor![1i32, 2i64]), ScalarType::I64);
    assert_eq!(dt(tensor![1u8, -1i8]), ScalarType::I16);
    let x = 0.25;
    let v = tensor![x, 1.].unwrap();
    assert_eq!((v.dtype(), v.to_vec::<f64>().unwrap()), (ScalarType::F64, vec![0.25, 1.]));
    assert_eq!(dt(tensor![c10::f16::from_f32(1.0), 2.]), ScalarType::F16);
    // Rows may be arrays, Vecs or slices of typed values.
    let row = [1i64, 2];
    let r = tensor![row, row].unwrap();
    assert_eq!((r.sizes(), r.dtype(), i64s(&r)), (&[2i64, 2][..], ScalarType::I64, vec![1, 2, 1, 2]));
    let s = tensor![vec![0.5f32, 1.5], &[2.5f32, 3.5][..]].unwrap();
    assert_eq!((s.sizes(), f32s(&s)), (&[2i64, 2][..], vec![0.5, 1.5, 2.5, 3.5]));
}

#[test]
fn ragged_literals_are_error_values() {
    let msg = |r: c10::Result<Tensor>| match r {
        Err(e @ Error::Shape { .. }) => e.to_string(),
        other => panic!("expected a shape error, got {other:?}"),
    };
    assert!(msg(tensor![[1., 2.], [3.]]).contains("expected sequence of length 2 at dim 1 (got 1)"));
    assert!(msg(tensor![[[1], [2]], [[3], [4, 5]]]).contains("expected sequence of length 1 at dim 2 (got 2)"));
    assert!(msg(tensor![[1., 2.], 3.]).contains("expected sequence of length 2 at dim 1 (got a number)"));
    assert!(msg(tensor![1., [2., 3.]]).contains("expected a number at dim 1 (got a sequence of length 2)"));
    assert!(msg(tensor![[], [1.]]).contains("expected sequence of length 0 at dim 1 (got 1)"));
}

#[test]
fn unsuffixed_number_text() {
    use aten::literal::is_unsuffixed_number as lit;
    for yes in ["1", "-2.5", "- 2.5", "1.", "1e-3", "2E+4", "1_000", "0xff", "0x1f32", "0b1010", "0o17"] {
        assert!(lit(yes), "{yes}");
    }
    for no in ["1f32", "2i64", "1.0f64", "1e5f32", "0xffu8", "0xff_u8", "x", "-x", "1.0 + 2.0", "true", "", "-"] {
        assert!(!lit(no), "{no}");
    }
}

#[test]
fn zero_dim_tensors_from_numbers_keep_the_rust_type() {
    let cases = [
        (Tensor::from(2.5f32), ScalarType::F32),
        (Tensor::from(2.5f64), ScalarType::F64),
        (Tensor::from(2.5), ScalarType::F64),
        (Tensor::from(-3i64), ScalarType::I64),
        (Tensor::from(-3i32), ScalarType::I32),
        (Tensor::from(true), ScalarType::Bool),
    ];
    for (t, dtype) in cases {
        assert_eq!((t.dim(), t.dtype()), (0, dtype));
    }
    assert_eq!(Tensor::from(2.5f32).item::<f32>().unwrap(), 2.5);
    assert_eq!(Tensor::from(-3i64).item::<i64>().unwrap(), -3);
    // A zero-dim tensor takes part in promotion below dimensioned ones: f32[2] * f64[] is f32.
    let p = (&tensor![1., 2.].unwrap() * &Tensor::from(2.0)).unwrap();
    assert_eq!((p.dtype(), f32s(&p)), (ScalarType::F32, vec![2., 4.]));
}

// ---- operators -----------------------------------------------------------------------------------

#[test]
fn numbers_on_the_left() {
    let x = tensor![1., 2.].unwrap();
    assert_eq!(f32s(&(2.0 * &x).unwrap()), vec![2., 4.]);
    assert_eq!(f32s(&(1.0 - &x).unwrap()), vec![0., -1.]);
    assert_eq!(f32s(&(2 + &x).unwrap()), vec![3., 4.]);
    assert_eq!(f32s(&(1.0 / &x).unwrap()), vec![1., 0.5]);
    assert_eq!(f32s(&(2.0 * x.clone()).unwrap()), vec![2., 4.]);
    assert_eq!(f32s(&(Scalar::Float(3.0) - &x).unwrap()), vec![2., 1.]);
    assert_eq!((2.0 * &x).unwrap().dtype(), ScalarType::F32, "a Python float keeps float32");

    // 1 / int tensor is a true division: float32.
    let n = tensor![2, 4].unwrap();
    for r in [(1.0 / &n).unwrap(), (1 / &n).unwrap(), (1i64 / n.clone()).unwrap()] {
        assert_eq!((r.dtype(), f32s(&r)), (ScalarType::F32, vec![0.5, 0.25]));
    }
    let s = (10 - &n).unwrap();
    assert_eq!((s.dtype(), i64s(&s)), (ScalarType::I64, vec![8, 6]));
    let m = (3 * &n).unwrap();
    assert_eq!((m.dtype(), i64s(&m)), (ScalarType::I64, vec![6, 12]));
    let f = (2.5 * &n).unwrap();
    assert_eq!((f.dtype(), f32s(&f)), (ScalarType::F32, vec![5., 10.]));
    // A float64 tensor stays float64.
    let d = (1.0 / &tensor![4.0f64].unwrap()).unwrap();
    assert_eq!((d.dtype(), d.to_vec::<f64>().unwrap()), (ScalarType::F64, vec![0.25]));
    // Owned operands on either side.
    assert_eq!(f32s(&(x.clone() * 2.0).unwrap()), vec![2., 4.]);
    assert_eq!(f32s(&(x.clone() + &x).unwrap()), vec![2., 4.]);
    assert_eq!(f32s(&(&x - x.clone()).unwrap()), vec![0., 0.]);
    assert_eq!(f32s(&(-x.clone()).unwrap()), vec![-1., -2.]);
}

#[test]
fn remainder_bitwise_and_shift_operators() {
    // Python's remainder takes the divisor's sign.
    let a = tensor![-5, 5].unwrap();
    assert_eq!(i64s(&(&a % 3).unwrap()), vec![1, 2]);
    assert_eq!(i64s(&(&a % &tensor![3, -3].unwrap()).unwrap()), vec![1, -1]);
    assert_eq!(i64s(&(7 % &tensor![3, -4].unwrap()).unwrap()), vec![1, -1]);
    let fr = (&tensor![5.5, -0.5].unwrap() % 2).unwrap();
    assert_eq!((fr.dtype(), f32s(&fr)), (ScalarType::F32, vec![1.5, 1.5]));
    let ir = (&a % 3.5).unwrap();
    assert_eq!((ir.dtype(), f32s(&ir)), (ScalarType::F32, vec![2., 1.5]));

    let b = tensor![12, 10].unwrap();
    assert_eq!(i64s(&(&b & 6).unwrap()), vec![4, 2]);
    assert_eq!(i64s(&(&b | 1).unwrap()), vec![13, 11]);
    assert_eq!(i64s(&(&b ^ 6).unwrap()), vec![10, 12]);
    assert_eq!(i64s(&(6 & &b).unwrap()), vec![4, 2]);
    assert_eq!(i64s(&(&b ^ &tensor![12, 0].unwrap()).unwrap()), vec![0, 10]);
    assert_eq!(i64s(&(!&tensor![0, 5].unwrap()).unwrap()), vec![-1, -6]);

    let m = tensor![true, true, false].unwrap();
    let n = tensor![true, false, false].unwrap();
    assert_eq!(bools(&(&m & &n).unwrap()), vec![true, false, false]);
    assert_eq!(bools(&(&m | &n).unwrap()), vec![true, true, false]);
    assert_eq!(bools(&(true ^ &m).unwrap()), vec![false, false, true]);
    let not = (!m.clone()).unwrap();
    assert_eq!((not.dtype(), bools(&not)), (ScalarType::Bool, vec![false, false, true]));

    assert_eq!(i64s(&(&tensor![1, 2].unwrap() << 2).unwrap()), vec![4, 8]);
    assert_eq!(i64s(&(1 << &tensor![1, 3].unwrap()).unwrap()), vec![2, 8]);
    assert_eq!(i64s(&(&tensor![16, -16].unwrap() >> 2).unwrap()), vec![4, -4]);

    // Bitwise operators are for integers and bools; shapes must broadcast.
    assert!((&tensor![1.5].unwrap() & 1).is_err());
    assert!(matches!(&b + &tensor![1, 2, 3].unwrap(), Err(Error::Broadcast { .. })));
}

// ---- devices -----------------------------------------------------------------------------------

/// This binary links no CUDA backend: `cuda()` and `cuda_on(i)` are errors, `cpu()` is the
/// tensor itself.
#[test]
fn cuda_without_a_backend_is_an_error_value() {
    let t = tensor![1., 2.].unwrap();
    let e = t.cuda().unwrap_err();
    let e0 = t.cuda_on(0).unwrap_err();
    assert_eq!(std::mem::discriminant(&e), std::mem::discriminant(&e0), "{e} / {e0}");
    assert_eq!(e0, t.to_device(c10::Device::cuda(0)).unwrap_err());
    assert!(t.cpu().unwrap().is_same(&t));
}

// ---- indexing ----------------------------------------------------------------------------------

#[test]
fn integers_and_ranges_select_and_slice() {
    let x = x34();
    let r = x.i(1).unwrap();
    assert_eq!((r.sizes(), f32s(&r)), (&[4i64][..], vec![4., 5., 6., 7.]));
    assert_eq!(f32s(&x.i(-1).unwrap()), vec![8., 9., 10., 11.]);
    let c = x.i((.., 1)).unwrap();
    assert_eq!((c.sizes(), f32s(&c)), (&[3i64][..], vec![1., 5., 9.]));
    let e = x.i((1, 2)).unwrap();
    assert_eq!((e.dim(), e.item::<f32>().unwrap()), (0, 6.));

    let s = x.i((.., 1..3)).unwrap();
    assert_eq!((s.sizes(), f32s(&s)), (&[3i64, 2][..], vec![1., 2., 5., 6., 9., 10.]));
    assert_eq!(x.i(1..3).unwrap().sizes(), &[2, 4]);
    assert_eq!(f32s(&x.i((..2, 0)).unwrap()), vec![0., 4.]);
    assert_eq!(f32s(&x.i((1.., 3)).unwrap()), vec![7., 11.]);
    assert_eq!(x.i(..).unwrap().sizes(), &[3, 4]);
    assert_eq!(f32s(&x.i((0, ..=1)).unwrap()), vec![0., 1.]);
    assert_eq!(f32s(&x.i((0, 1..=2)).unwrap()), vec![1., 2.]);
    assert_eq!(f32s(&x.i((0, ..=-1)).unwrap()), vec![0., 1., 2., 3.]);
    assert_eq!(f32s(&x.i((0, -2..)).unwrap()), vec![2., 3.]);
    assert_eq!(f32s(&x.i((0, ..-1)).unwrap()), vec![0., 1., 2.]);
    // Bounds are clamped as in Python.
    assert_eq!(x.i(5..10).unwrap().sizes(), &[0, 4]);
    assert_eq!(x.i(-10..).unwrap().sizes(), &[3, 4]);
    let n: usize = 2;
    assert_eq!(x.i(..n).unwrap().sizes(), &[2, 4]);
    assert_eq!(f32s(&x.i((n, 1i64)).unwrap()), vec![9.]);
}

#[test]
fn steps_new_axes_and_ellipsis() {
    let x = x34();
    let s = x.i((.., step(.., 2))).unwrap();
    assert_eq!((s.sizes(), f32s(&s)), (&[3i64, 2][..], vec![0., 2., 4., 6., 8., 10.]));
    assert_eq!(f32s(&x.i((step(0..3, 2), 0)).unwrap()), vec![0., 8.]);
    assert_eq!(f32s(&x.i((0, step(1.., 2))).unwrap()), vec![1., 3.]);
    assert_eq!(f32s(&x.i((0, Slice::new(Some(-3), None, 2))).unwrap()), vec![1., 3.]);
    assert!(matches!(x.i(step(.., 0)), Err(Error::InvalidArgument { .. })));

    assert_eq!(x.i(NewAxis).unwrap().sizes(), &[1, 3, 4]);
    assert_eq!(x.i((.., NewAxis)).unwrap().sizes(), &[3, 1, 4]);
    assert_eq!(x.i((Ellipsis, NewAxis)).unwrap().sizes(), &[3, 4, 1]);
    assert_eq!(f32s(&x.i((Ellipsis, 1)).unwrap()), vec![1., 5., 9.]);
    let y = y234();
    let e = y.i((1, Ellipsis, 2)).unwrap();
    assert_eq!((e.sizes(), f32s(&e)), (&[3i64][..], vec![14., 18., 22.]));
    assert_eq!(y.i((Ellipsis, 0, NewAxis)).unwrap().sizes(), &[2, 3, 1]);
    assert_eq!(y.i((0, .., NewAxis, 1.., NewAxis, NewAxis)).unwrap().sizes(), &[3, 1, 3, 1, 1]);
    // A list built at run time.
    let dynamic: Vec<TensorIndex> = vec![(..).into(), 1.into()];
    assert_eq!(f32s(&x.i(dynamic).unwrap()), vec![1., 5., 9.]);
}

#[test]
fn basic_indices_give_views() {
    let x = x34();
    let col = x.i((.., 1)).unwrap();
    ops::mul_scalar_(&col, Scalar::Int(10)).unwrap();
    assert_eq!(f32s(&x.i(0).unwrap()), vec![0., 10., 2., 3.]);
    let strided = x.i((step(.., 2), step(1.., 2))).unwrap();
    assert_eq!(strided.strides(), &[8, 2]);
    ops::add_scalar_(&strided, Scalar::Int(100), Scalar::Int(1)).unwrap();
    assert_eq!(f32s(&x.i(2).unwrap()), vec![8., 190., 10., 111.]);
    // x[()] and x[...] are aliases: new tensors over the same memory.
    for a in [x.i(()).unwrap(), x.i(Ellipsis).unwrap()] {
        assert!(!a.is_same(&x));
        assert_eq!((a.sizes(), a.data_ptr()), (x.sizes(), x.data_ptr()));
    }
    // Tensor indices copy.
    let copy = x.i(tensor![0].unwrap()).unwrap();
    ops::mul_scalar_(&copy, Scalar::Int(0)).unwrap();
    assert_eq!(f32s(&x.i(0).unwrap()), vec![0., 110., 2., 103.]);
}

#[test]
fn masks_and_index_tensors() {
    let x = x34();
    let rows = x.i(tensor![true, false, true].unwrap()).unwrap();
    assert_eq!((rows.sizes(), f32s(&rows)), (&[2i64, 4][..], vec![0., 1., 2., 3., 8., 9., 10., 11.]));
    let cols = x.i((.., [true, false, false, true])).unwrap();
    assert_eq!((cols.sizes(), f32s(&cols)), (&[3i64, 2][..], vec![0., 3., 4., 7., 8., 11.]));
    let big = x.i(ops::gt_scalar(&x, Scalar::Float(5.5)).unwrap()).unwrap();
    assert_eq!((big.sizes(), f32s(&big)), (&[6i64][..], vec![6., 7., 8., 9., 10., 11.]));

    // A mask spans its dimensions; the indices after it apply to the dimensions after those.
    let y = y234();
    let m = tensor![[true, false, false], [false, false, true]].unwrap();
    let ym = y.i((&m, 1..)).unwrap();
    assert_eq!((ym.sizes(), f32s(&ym)), (&[2i64, 3][..], vec![1., 2., 3., 21., 22., 23.]));
    assert_eq!(f32s(&y.i((&m, 0)).unwrap()), vec![0., 20.]);
    assert_eq!(y.i((Ellipsis, &tensor![true, true, false, false].unwrap())).unwrap().sizes(), &[2, 3, 2]);

    let picked = x.i(tensor![2, 0].unwrap()).unwrap();
    assert_eq!((picked.sizes(), f32s(&picked)), (&[2i64, 4][..], vec![8., 9., 10., 11., 0., 1., 2., 3.]));
    assert_eq!(f32s(&x.i(([2, 0], 0)).unwrap()), vec![8., 0.]);
    assert_eq!(f32s(&x.i((.., vec![0i64, 3])).unwrap()), vec![0., 3., 4., 7., 8., 11.]);
    assert_eq!(f32s(&x.i((vec![-1i64], 0)).unwrap()), vec![8.]);
    let pairs = x.i((&tensor![0, 2].unwrap(), &tensor![1, 3].unwrap())).unwrap();
    assert_eq!(f32s(&pairs), vec![1., 11.]);
    // Index tensors broadcast: [[0], [2]] with [1, 3] is a 2x2 grid.
    let grid = x.i((&tensor![[0], [2]].unwrap(), &tensor![1, 3].unwrap())).unwrap();
    assert_eq!((grid.sizes(), f32s(&grid)), (&[2i64, 2][..], vec![1., 3., 9., 11.]));
    // A zero-dim integer tensor selects; True / False add a dimension of size 1 / 0.
    assert_eq!(x.i(Tensor::from(1i64)).unwrap().sizes(), &[4]);
    assert_eq!(x.i(true).unwrap().sizes(), &[1, 3, 4]);
    assert_eq!(x.i(false).unwrap().sizes(), &[0, 3, 4]);
    assert_eq!(x.i(Tensor::from(true)).unwrap().sizes(), &[1, 3, 4]);
}

#[test]
fn indexing_errors_are_values() {
    let x = x34();
    let invalid = |r: c10::Result<Tensor>| match r {
        Err(e @ Error::InvalidArgument { .. }) => e.to_string(),
        other => panic!("expected an invalid-argument error, got {other:?}"),
    };
    assert!(invalid(x.i((0, 0, 0))).contains("too many indices for tensor of dimension 2"));
    assert!(invalid(x.i((Ellipsis, 0, Ellipsis))).contains("an index can only have a single ellipsis"));
    assert!(invalid(x.i((&tensor![true, false].unwrap(), 0))).contains("shape of the mask"));
    assert!(invalid(x.i(tensor![0.5].unwrap())).contains("tensors used as indices must be long"));
    assert!(matches!(x.i(3), Err(Error::IndexOutOfRange { index: 3, dim: 0, size: 3, .. })));
    assert!(matches!(x.i((0, -5)), Err(Error::IndexOutOfRange { index: -5, dim: 1, size: 4, .. })));
    assert!(x.i(tensor![3].unwrap()).is_err());
    // A zero-dim tensor has no dimension to index, but takes new axes and `...`.
    let z = Tensor::from(1.5f32);
    assert!(invalid(z.i(0)).contains("too many indices for tensor of dimension 0"));
    assert_eq!(z.i(NewAxis).unwrap().sizes(), &[1]);
    assert_eq!(z.i(Ellipsis).unwrap().sizes(), &[] as &[i64]);
}
