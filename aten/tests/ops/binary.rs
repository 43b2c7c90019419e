//! The binary family through the public path: values, promotion, broadcasting, in-place and
//! out= variants, errors.

use aten::{ops, Tensor};
use c10::{Error, Scalar, ScalarType};

fn t(v: &[f32], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

#[test]
fn add_broadcasts_and_applies_alpha() {
    let a = t(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let b = t(&[10., 20., 30.], &[3]);
    let c = (&a + &b).unwrap();
    assert_eq!(c.sizes(), &[2, 3]);
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![11., 22., 33., 14., 25., 36.]);
    let d = a.add_with(&b, Scalar::Int(2)).unwrap();
    assert_eq!(d.to_vec::<f32>().unwrap(), vec![21., 42., 63., 24., 45., 66.]);
    let e = (&a - &b).unwrap();
    assert_eq!(e.to_vec::<f32>().unwrap(), vec![-9., -18., -27., -6., -15., -24.]);
}

#[test]
fn promotion_follows_pytorch() {
    let i = Tensor::from_vec(vec![1i32, 2, 3], &[3]).unwrap();
    let f = (&i + 2.5).unwrap();
    assert_eq!(f.dtype(), ScalarType::F32);
    assert_eq!(f.to_vec::<f32>().unwrap(), vec![3.5, 4.5, 5.5]);
    let l = (&i + 2).unwrap();
    assert_eq!(l.dtype(), ScalarType::I32);
    let d = (&i / &i).unwrap();
    assert_eq!(d.dtype(), ScalarType::F32);
    let z = Tensor::scalar_tensor(2.0f64);
    assert_eq!((&i * &z).unwrap().dtype(), ScalarType::F64);
    let h = Tensor::from_vec(vec![c10::f16::from_f32(1.5)], &[1]).unwrap();
    assert_eq!((&h + 1.0).unwrap().dtype(), ScalarType::F16);
}

#[test]
fn div_rounding_modes() {
    let a = t(&[7., -7., 7.5], &[3]);
    let b = t(&[2., 2., -2.], &[3]);
    assert_eq!(ops::div_tensor_mode(&a, &b, Some("trunc")).unwrap().to_vec::<f32>().unwrap(), vec![3., -3., -3.]);
    assert_eq!(ops::div_tensor_mode(&a, &b, Some("floor")).unwrap().to_vec::<f32>().unwrap(), vec![3., -4., -4.]);
    let ia = Tensor::from_vec(vec![7i64, -7], &[2]).unwrap();
    let ib = Tensor::from_vec(vec![2i64, 2], &[2]).unwrap();
    assert_eq!(ops::div_tensor_mode(&ia, &ib, Some("floor")).unwrap().to_vec::<i64>().unwrap(), vec![3, -4]);
    assert!(ops::div_tensor_mode(&ia, &ib, Some("round")).is_err());
    let zero = Tensor::from_vec(vec![0i64, 1], &[2]).unwrap();
    assert!(ops::div_tensor_mode(&ia, &zero, Some("trunc")).is_err());
}

#[test]
fn inplace_and_out_variants() {
    let a = t(&[1., 2., 3.], &[3]);
    let v0 = a.version();
    a.add_(&t(&[1., 1., 1.], &[3])).call().unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![2., 3., 4.]);
    assert_eq!(a.version(), v0 + 1, "in-place ops bump the version counter");
    let out = t(&[0., 0., 0.], &[3]);
    ops::mul_out(&a, &a, &out).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![4., 9., 16.]);
    // out= of a wider dtype receives the cast result.
    let out64 = Tensor::from_vec(vec![0f64; 3], &[3]).unwrap();
    ops::add_out(&a, &a, Scalar::Int(1), &out64).unwrap();
    assert_eq!(out64.to_vec::<f64>().unwrap(), vec![4., 6., 8.]);
    // An int tensor cannot receive a float result in place.
    let i = Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap();
    let e = i.add_(&a).call().unwrap_err();
    assert!(matches!(e, Error::UnsafeCast { .. }), "{e}");
    // Broadcasting must not change self's shape in place.
    let small = t(&[1.], &[1]);
    assert!(small.add_(&a).call().is_err());
}

/// Note [In-place runs]: contiguous runs whose output is one of their inputs (or both) take
/// their own loops; long enough tensors reach the vector body and its remainder.
#[test]
fn aliased_runs_compute_elementwise() {
    let n = 1037usize;
    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 100.0).collect();
    let ys: Vec<f32> = (0..n).map(|i| (i % 7) as f32 + 1.0).collect();
    let x = || Tensor::from_vec(xs.clone(), &[n as i64]).unwrap();
    let y = Tensor::from_vec(ys.clone(), &[n as i64]).unwrap();

    let a = x();
    a.mul_(0.25).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), xs.iter().map(|v| v * 0.25).collect::<Vec<_>>());

    let a = x();
    a.add_(&y).alpha(2).call().unwrap();
    let want: Vec<f32> = xs.iter().zip(&ys).map(|(a, b)| a + 2.0 * b).collect();
    assert_eq!(a.to_vec::<f32>().unwrap(), want);

    // The output is both inputs.
    let a = x();
    ops::mul_out(&a, &a, &a).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), xs.iter().map(|v| v * v).collect::<Vec<_>>());

    // The output is the second input.
    let b = Tensor::from_vec(ys.clone(), &[n as i64]).unwrap();
    ops::sub_out(&x(), &b, Scalar::Int(1), &b).unwrap();
    let want: Vec<f32> = xs.iter().zip(&ys).map(|(a, b)| a - b).collect();
    assert_eq!(b.to_vec::<f32>().unwrap(), want);

    // A ternary in place: self += 0.5 * y * y.
    let a = x();
    ops::addcmul_(&a, &y, &y, Scalar::Float(0.5)).unwrap();
    let want: Vec<f32> = xs.iter().zip(&ys).map(|(a, b)| a + 0.5 * (b * b)).collect();
    assert_eq!(a.to_vec::<f32>().unwrap(), want);

    // An f64 tensor updated in place from an f32 one (the input is converted, not aliased).
    let d = Tensor::from_vec(xs.iter().map(|&v| v as f64).collect::<Vec<_>>(), &[n as i64]).unwrap();
    d.add_(&y).call().unwrap();
    let want: Vec<f64> = xs.iter().zip(&ys).map(|(a, b)| *a as f64 + *b as f64).collect();
    assert_eq!(d.to_vec::<f64>().unwrap(), want);

    // A strided view updated in place (every other element).
    let a = x();
    let v = ops::slice(&a, 0, Some(0), Some(n as i64), 2).unwrap();
    v.mul_(2.0).unwrap();
    let want: Vec<f32> = xs.iter().enumerate().map(|(i, v)| if i % 2 == 0 { v * 2.0 } else { *v }).collect();
    assert_eq!(a.to_vec::<f32>().unwrap(), want);
}

#[test]
fn errors_are_values() {
    let a = t(&[1., 2., 3.], &[3]);
    let b = t(&[1., 2., 3., 4.], &[4]);
    let e = (&a + &b).unwrap_err();
    assert!(
        e.to_string()
            .contains("The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"),
        "{e}"
    );
    let bools = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    assert!((&bools - &bools).is_err());
    assert!((-&bools).is_err());
}

#[test]
fn comparisons_where_neg_abs() {
    let a = t(&[1., -2., 3.], &[3]);
    let b = t(&[1., 2., -3.], &[3]);
    let m = a.lt(&b).unwrap();
    assert_eq!(m.dtype(), ScalarType::Bool);
    assert_eq!(m.to_vec::<bool>().unwrap(), vec![false, true, false]);
    assert_eq!(a.eq(Scalar::Int(1)).unwrap().to_vec::<bool>().unwrap(), vec![true, false, false]);
    let w = ops::where_self(&m, &a, &b).unwrap();
    assert_eq!(w.to_vec::<f32>().unwrap(), vec![1., -2., -3.]);
    assert_eq!(a.neg().unwrap().to_vec::<f32>().unwrap(), vec![-1., 2., -3.]);
    assert_eq!(a.abs().unwrap().to_vec::<f32>().unwrap(), vec![1., 2., 3.]);
    assert!(ops::where_self(&a, &a, &b).is_err(), "condition must be bool");
}

#[test]
fn noncontiguous_inputs_and_layout_inheritance() {
    let a = t(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let at = a.transpose(0, 1).unwrap();
    assert!(!at.is_contiguous());
    let s = (&at + &at).unwrap();
    assert_eq!(s.sizes(), &[3, 2]);
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![2., 8., 4., 10., 6., 12.]);
    assert_eq!(s.strides(), &[1, 3], "the output inherits the transposed layout");
}

#[test]
fn large_parallel_add_matches_serial() {
    let n = 300_000usize;
    let a = Tensor::from_vec((0..n).map(|x| x as f32).collect(), &[n as i64]).unwrap();
    let b = Tensor::from_vec((0..n).map(|x| (2 * x) as f32).collect(), &[n as i64]).unwrap();
    let c = (&a + &b).unwrap().to_vec::<f32>().unwrap();
    assert!(c.iter().enumerate().all(|(i, &v)| v == (3 * i) as f32));
}

/// Without an accelerator backend (this test binary links none): no tensor is pinned, pinning
/// is PyTorch's error, and moving to a device without a backend is an error, not a crash.
#[test]
fn pinning_and_devices_without_a_backend_are_errors() {
    let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    assert!(!t.is_pinned());
    let e = t.pin_memory().unwrap_err().to_string();
    assert!(e.contains("Cannot access accelerator device when none is available."), "{e}");
    assert!(t.cuda_on(0).is_err());
    // The CPU is where the tensor is: `to_device(cpu)` is the tensor itself.
    assert!(t.to_device(c10::Device::CPU).unwrap().is_same(&t));
    assert!(t.cpu().unwrap().is_same(&t));
}
