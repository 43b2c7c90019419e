//! The unary family: values against closed forms, integer promotion, dtype-preserving rounding,
//! in-place casting rules, errors.

use aten::{ops, Tensor};
use c10::{Error, ScalarType};

#[test]
fn float_functions_promote_integers() {
    let i = Tensor::from_vec(vec![0i64, 1, 2], &[3]).unwrap();
    let e = i.exp().unwrap();
    assert_eq!(e.dtype(), ScalarType::F32);
    let v = e.to_vec::<f32>().unwrap();
    assert!((v[2] - 2f32.exp()).abs() < 1e-6);
    // In place on an integer tensor cannot hold the float result.
    assert!(matches!(i.exp_(), Err(Error::UnsupportedDtype { .. }) | Err(Error::UnsafeCast { .. })));
    let x = Tensor::from_slice(&[0.5f64, -1.0]);
    let s = x.sigmoid().unwrap().to_vec::<f64>().unwrap();
    assert!((s[0] - 1.0 / (1.0 + (-0.5f64).exp())).abs() < 1e-15);
    let erf = x.erf().unwrap().to_vec::<f64>().unwrap();
    assert!((erf[0] - 0.520_499_877_813_046_5).abs() < 1e-15);
    let h = Tensor::from_vec(vec![c10::f16::from_f32(1.0)], &[1]).unwrap();
    assert_eq!(h.log().unwrap().dtype(), ScalarType::F16);
}

#[test]
fn rounding_keeps_dtypes_and_ties_to_even() {
    let x = Tensor::from_slice(&[0.5f32, 1.5, 2.5, -0.5, -1.7]);
    assert_eq!(x.round().unwrap().to_vec::<f32>().unwrap(), vec![0., 2., 2., -0., -2.]);
    assert_eq!(x.floor().unwrap().to_vec::<f32>().unwrap(), vec![0., 1., 2., -1., -2.]);
    assert_eq!(x.ceil().unwrap().to_vec::<f32>().unwrap(), vec![1., 2., 3., -0., -1.]);
    assert_eq!(x.trunc().unwrap().to_vec::<f32>().unwrap(), vec![0., 1., 2., -0., -1.]);
    let i = Tensor::from_vec(vec![-3i32, 0, 7], &[3]).unwrap();
    assert_eq!(i.floor().unwrap().dtype(), ScalarType::I32);
    assert_eq!(i.sign().unwrap().to_vec::<i32>().unwrap(), vec![-1, 0, 1]);
    assert_eq!(i.relu().unwrap().to_vec::<i32>().unwrap(), vec![0, 0, 7]);
    let n = Tensor::from_slice(&[f32::NAN, -0.0, 3.0]);
    assert_eq!(n.sign().unwrap().to_vec::<f32>().unwrap()[1..], [0.0, 1.0]);
    assert_eq!(n.sign().unwrap().to_vec::<f32>().unwrap()[0], 0.0);
    assert!(n.relu().unwrap().to_vec::<f32>().unwrap()[0].is_nan());
}

#[test]
fn activations_need_floating_inputs() {
    let i = Tensor::from_vec(vec![1i64], &[1]).unwrap();
    assert!(matches!(i.silu(), Err(Error::UnsupportedDtype { .. })));
    let x = Tensor::from_slice(&[-4.0f32, 0.0, 1.0, 4.0]);
    assert_eq!(x.hardsigmoid().unwrap().to_vec::<f32>().unwrap(), vec![0.0, 0.5, 1.0 / 6.0 + 0.5, 1.0]);
    assert_eq!(x.hardswish().unwrap().to_vec::<f32>().unwrap(), vec![-0.0, 0.0, 4.0 / 6.0, 4.0]);
    let out = Tensor::from_vec(vec![0f64; 4], &[4]).unwrap();
    ops::silu_out(&x, &out).unwrap();
    assert!((out.to_vec::<f64>().unwrap()[2] - 1.0 / (1.0 + (-1f64).exp())).abs() < 1e-6);
}

#[test]
fn abs_of_negative_zero_is_positive_zero() {
    // C's fabs (and PyTorch's abs) clear the sign: abs(-0.0) prints as 0., not -0.
    for dtype in [ScalarType::F32, ScalarType::F64, ScalarType::F16, ScalarType::BF16] {
        let t = ops::to(&Tensor::from_slice(&[-0.0f64, -2.5, 0.0, 3.0]), dtype, false, false, None).unwrap();
        let a = ops::to(&ops::abs(&t).unwrap(), ScalarType::F64, false, false, None).unwrap().to_vec::<f64>().unwrap();
        assert_eq!(a, [0.0, 2.5, 0.0, 3.0], "{dtype:?}");
        assert!(a.iter().all(|x| x.is_sign_positive()), "{dtype:?}: {a:?}");
    }
}
