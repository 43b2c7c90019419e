//! Pointwise operators beyond arithmetic: values, NaN handling, integer semantics and errors.

use aten::{ops, Tensor};
use c10::{Error, Scalar, ScalarType};

#[test]
fn maximum_propagates_nan_and_mod_ops_follow_their_sign_rules() {
    let a = Tensor::from_slice(&[1.0f32, f32::NAN, -3.0]);
    let b = Tensor::from_slice(&[2.0f32, 0.0, -4.0]);
    let m = a.maximum(&b).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(m[0], 2.0);
    assert!(m[1].is_nan());
    assert_eq!(m[2], -3.0);
    let x = Tensor::from_vec(vec![-7i64, 7], &[2]).unwrap();
    let y = Tensor::from_vec(vec![3i64, -3], &[2]).unwrap();
    assert_eq!(x.fmod(&y).unwrap().to_vec::<i64>().unwrap(), vec![-1, 1]);
    assert_eq!(x.remainder(&y).unwrap().to_vec::<i64>().unwrap(), vec![2, -2]);
    let zero = Tensor::from_vec(vec![0i64, 1], &[2]).unwrap();
    assert!(x.remainder(&zero).is_err());
    assert!(x.pow(&Tensor::from_vec(vec![-1i64, 2], &[2]).unwrap()).is_err());
    assert_eq!(x.pow_tensor_scalar(Scalar::Int(2)).unwrap().to_vec::<i64>().unwrap(), vec![49, 49]);
    assert_eq!(x.pow_tensor_scalar(Scalar::Float(0.5)).unwrap().dtype(), ScalarType::F32);
}

#[test]
fn clamp_masked_fill_and_logical_ops() {
    let a = Tensor::from_slice(&[-1.0f64, 0.25, 2.0, f64::NAN]);
    let c = a.clamp_with(Some(Scalar::Float(-0.5)), Some(Scalar::Float(0.5))).unwrap().to_vec::<f64>().unwrap();
    assert_eq!(c[..3], [-0.5, 0.25, 0.5]);
    assert!(c[3].is_nan());
    assert!(a.clamp_with(None, None).is_err());
    let mask = a.gt_scalar(Scalar::Int(0)).unwrap();
    let f = a.masked_fill(&mask, Scalar::Float(9.0)).unwrap().to_vec::<f64>().unwrap();
    assert_eq!(f[..3], [-1.0, 9.0, 9.0]);
    assert!(matches!(a.masked_fill(&a, Scalar::Int(0)), Err(Error::InvalidArgument { .. })));
    assert_eq!(a.isnan().unwrap().to_vec::<bool>().unwrap(), vec![false, false, false, true]);
    assert_eq!(mask.logical_not().unwrap().to_vec::<bool>().unwrap(), vec![true, false, false, true]);
    let i = Tensor::from_vec(vec![0i32, 3], &[2]).unwrap();
    assert_eq!(i.logical_and(&i).unwrap().to_vec::<bool>().unwrap(), vec![false, true]);
}

#[test]
fn activations_and_ternaries() {
    let x = Tensor::from_slice(&[-2.0f32, 0.5]);
    assert_eq!(ops::leaky_relu(&x, Scalar::Float(0.1)).unwrap().to_vec::<f32>().unwrap(), vec![-0.2, 0.5]);
    assert_eq!(ops::hardtanh(&x, Scalar::Int(-1), Scalar::Int(1)).unwrap().to_vec::<f32>().unwrap(), vec![-1.0, 0.5]);
    let g = ops::gelu(&x, "none").unwrap().to_vec::<f32>().unwrap();
    assert!((g[1] - 0.345_731_13).abs() < 1e-6);
    assert!(ops::gelu(&x, "fast").is_err());
    let s = ops::addcdiv(&x, &x, &Tensor::from_slice(&[2.0f32]), Scalar::Float(0.5)).unwrap();
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![-2.5, 0.625]);
    let l = x.lerp(&Tensor::from_slice(&[2.0f32, 2.0]), Scalar::Float(0.25)).unwrap();
    assert_eq!(l.to_vec::<f32>().unwrap(), vec![-1.0, 0.875]);
    let i = Tensor::from_vec(vec![1i64], &[1]).unwrap();
    assert!(matches!(
        ops::elu(&i, Scalar::Int(1), Scalar::Int(1), Scalar::Int(1)),
        Err(Error::UnsupportedDtype { .. })
    ));
}
