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
    // A tensor of negative integer exponents truncates 1 / x^-e (PyTorch's powi); a negative
    // Scalar exponent of an integer tensor is an error.
    let base = Tensor::from_vec(vec![2i64, 3, 1, -1, -1, 5], &[6]).unwrap();
    let e = Tensor::from_vec(vec![-1i64, 2, -3, -3, -2, -1], &[6]).unwrap();
    assert_eq!(base.pow(&e).unwrap().to_vec::<i64>().unwrap(), vec![0, 9, 1, -1, 1, 0]);
    assert!(x.pow(Scalar::Int(-1)).is_err());
    assert_eq!(x.pow(Scalar::Int(2)).unwrap().to_vec::<i64>().unwrap(), vec![49, 49]);
    assert_eq!(x.pow(Scalar::Float(0.5)).unwrap().dtype(), ScalarType::F32);
}

#[test]
fn clamp_masked_fill_and_logical_ops() {
    let a = Tensor::from_slice(&[-1.0f64, 0.25, 2.0, f64::NAN]);
    let c = a.clamp_with(Some(Scalar::Float(-0.5)), Some(Scalar::Float(0.5))).unwrap().to_vec::<f64>().unwrap();
    assert_eq!(c[..3], [-0.5, 0.25, 0.5]);
    assert!(c[3].is_nan());
    assert!(a.clamp_with(None, None).is_err());
    let mask = a.gt(Scalar::Int(0)).unwrap();
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

fn f64s(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

#[test]
fn erfinv_sgn_square_selu_and_predicates() {
    let x = Tensor::from_slice(&[-0.5f64, 0.0, 0.3, 0.999, 1.0, 2.0]);
    let y = f64s(&ops::erfinv(&x).unwrap());
    for (v, &e) in y.iter().zip(&[-0.476_936_276_204_47, 0.0, 0.272_462_714_726_754_4, 2.326_753_765_513_524]) {
        assert!((v - e).abs() < 1e-12, "{v} vs {e}");
    }
    assert_eq!(y[4], f64::INFINITY);
    assert!(y[5].is_nan());
    let yf = ops::erfinv(&Tensor::from_slice(&[0.3f32])).unwrap();
    assert_eq!(yf.dtype(), ScalarType::F32);
    assert!((yf.to_vec::<f32>().unwrap()[0] - 0.272_462_7).abs() < 1e-6);
    assert_eq!(ops::erfinv(&Tensor::from_slice(&[0i64])).unwrap().dtype(), ScalarType::F32);

    let s = Tensor::from_slice(&[-2.0f32, 0.0, 3.0]);
    assert_eq!(ops::sgn(&s).unwrap().to_vec::<f32>().unwrap(), vec![-1.0, 0.0, 1.0]);
    let i = Tensor::from_slice(&[-3i64, 4]);
    assert_eq!(ops::square(&i).unwrap().to_vec::<i64>().unwrap(), vec![9, 16]);
    assert_eq!(ops::square(&i).unwrap().dtype(), ScalarType::I64);
    let z = s.clone_tensor().unwrap();
    ops::square_(&z).unwrap();
    assert_eq!(z.to_vec::<f32>().unwrap(), vec![4.0, 0.0, 9.0]);
    let se = f64s(&ops::selu(&Tensor::from_slice(&[-1.0f64, 2.0])).unwrap());
    assert!((se[0] - 1.050_700_987_355_480_5 * 1.673_263_242_354_377_2 * (-1.0f64).exp_m1()).abs() < 1e-12);
    assert!((se[1] - 2.101_401_974_710_961).abs() < 1e-12);
    assert!(matches!(ops::selu(&i), Err(Error::UnsupportedDtype { .. })));

    let v = Tensor::from_slice(&[f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1.0]);
    assert_eq!(ops::isinf(&v).unwrap().to_vec::<bool>().unwrap(), vec![true, true, false, false]);
    assert_eq!(ops::isfinite(&v).unwrap().to_vec::<bool>().unwrap(), vec![false, false, false, true]);
    assert_eq!(ops::isposinf(&v).unwrap().to_vec::<bool>().unwrap(), vec![true, false, false, false]);
    assert_eq!(ops::isneginf(&v).unwrap().to_vec::<bool>().unwrap(), vec![false, true, false, false]);
    assert_eq!(ops::isfinite(&i).unwrap().to_vec::<bool>().unwrap(), vec![true, true]);
    let n = ops::nan_to_num(&v, None, None, Some(-5.0)).unwrap();
    assert_eq!(f64s(&n), vec![f64::MAX, -5.0, 0.0, 1.0]);
    let nf = ops::nan_to_num(&v.to(ScalarType::F32).call().unwrap(), Some(2.0), None, None).unwrap();
    assert_eq!(nf.to_vec::<f32>().unwrap(), vec![f32::MAX, f32::MIN, 2.0, 1.0]);
}

#[test]
fn round_decimals_bitwise_and_shifts() {
    let x = Tensor::from_slice(&[1.2345f64, -2.5, 125.0, 0.125]);
    assert_eq!(f64s(&ops::round_decimals(&x, 2).unwrap()), vec![1.23, -2.5, 125.0, 0.12]);
    assert_eq!(f64s(&ops::round_decimals(&x, -1).unwrap()), vec![0.0, -0.0, 120.0, 0.0]);
    assert_eq!(f64s(&ops::round_decimals(&x, 0).unwrap()), vec![1.0, -2.0, 125.0, 0.0]);

    let a = Tensor::from_slice(&[12i32, -1, 5]);
    let b = Tensor::from_slice(&[10i32, 3, 6]);
    assert_eq!(ops::bitwise_and(&a, &b).unwrap().to_vec::<i32>().unwrap(), vec![8, 3, 4]);
    assert_eq!(ops::bitwise_or(&a, &b).unwrap().to_vec::<i32>().unwrap(), vec![14, -1, 7]);
    assert_eq!(ops::bitwise_xor(&a, &b).unwrap().to_vec::<i32>().unwrap(), vec![6, -4, 3]);
    assert_eq!(ops::bitwise_not(&a).unwrap().to_vec::<i32>().unwrap(), vec![-13, 0, -6]);
    assert_eq!(ops::bitwise_and_scalar(&a, Scalar::Int(4)).unwrap().to_vec::<i32>().unwrap(), vec![4, 4, 4]);
    assert_eq!(ops::bitwise_or_scalar_tensor(Scalar::Int(1), &a).unwrap().to_vec::<i32>().unwrap(), vec![13, -1, 5]);
    let m = Tensor::from_slice(&[true, false]);
    assert_eq!(ops::bitwise_xor(&m, &m).unwrap().to_vec::<bool>().unwrap(), vec![false, false]);
    assert_eq!(ops::bitwise_not(&m).unwrap().to_vec::<bool>().unwrap(), vec![false, true]);
    let f = Tensor::from_slice(&[1.0f32]);
    assert!(matches!(ops::bitwise_and(&f, &f), Err(Error::UnsupportedDtype { .. })));
    assert!(ops::bitwise_not(&f).is_err());

    let s = Tensor::from_slice(&[1i64, 3, 64, -1]);
    let v = Tensor::from_slice(&[-8i64, -8, -8, -8]);
    assert_eq!(ops::bitwise_left_shift(&v, &s).unwrap().to_vec::<i64>().unwrap(), vec![-16, -64, 0, 0]);
    assert_eq!(ops::bitwise_right_shift(&v, &s).unwrap().to_vec::<i64>().unwrap(), vec![-4, -1, -1, -1]);
    let u = Tensor::from_slice(&[200u8]);
    assert_eq!(ops::bitwise_left_shift_tensor_scalar(&u, Scalar::Int(1)).unwrap().to_vec::<u8>().unwrap(), vec![144]);
    assert_eq!(ops::bitwise_right_shift_tensor_scalar(&u, Scalar::Int(9)).unwrap().to_vec::<u8>().unwrap(), vec![0]);
    assert!(ops::bitwise_left_shift(&f, &f).is_err());
}

#[test]
fn clamp_family_with_tensor_bounds() {
    let x = Tensor::from_slice(&[-2.0f32, 0.5, 3.0, f32::NAN]);
    let lo = Tensor::from_slice(&[-1.0f32, 1.0, -1.0, 0.0]);
    let hi = Tensor::from_slice(&[2.0f32]);
    let c = ops::clamp_tensor(&x, Some(&lo), Some(&hi)).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(c[..3], [-1.0, 1.0, 2.0]);
    assert!(c[3].is_nan());
    assert_eq!(ops::clamp_min_tensor(&x, &lo).unwrap().to_vec::<f32>().unwrap()[..3], [-1.0, 1.0, 3.0]);
    assert_eq!(ops::clamp_max_tensor(&x, &hi).unwrap().to_vec::<f32>().unwrap()[..3], [-2.0, 0.5, 2.0]);
    assert!(ops::clamp_tensor(&x, None, None).is_err());
    let i = Tensor::from_slice(&[-5i64, 0, 9]);
    assert_eq!(ops::clamp_min(&i, Scalar::Int(-1)).unwrap().to_vec::<i64>().unwrap(), vec![-1, 0, 9]);
    assert_eq!(ops::clamp_max(&i, Scalar::Int(3)).unwrap().to_vec::<i64>().unwrap(), vec![-5, 0, 3]);
    // In place and out=, on a non-contiguous tensor.
    let m = Tensor::from_vec(vec![1.0f64, -3.0, 5.0, 7.0], &[2, 2]).unwrap().transpose(0, 1).unwrap();
    ops::clamp_min_(&m, Scalar::Float(2.0)).unwrap();
    assert_eq!(f64s(&m), vec![2.0, 5.0, 2.0, 7.0]);
    let out = Tensor::from_slice(&[0.0f64; 4]);
    ops::clamp_max_out(&Tensor::from_slice(&[1.0f64, 2.0, 3.0, 4.0]), Scalar::Int(2), &out).unwrap();
    assert_eq!(f64s(&out), vec![1.0, 2.0, 2.0, 2.0]);
}

#[test]
fn more_activations() {
    let x = Tensor::from_slice(&[-3.0f64, -0.5, 0.0, 2.0, 7.0]);
    assert_eq!(f64s(&ops::relu6(&x).unwrap()), vec![0.0, 0.0, 0.0, 2.0, 6.0]);
    let c = f64s(&ops::celu(&x, Scalar::Float(2.0)).unwrap());
    assert!((c[0] - 2.0 * (-1.5f64).exp_m1()).abs() < 1e-12);
    assert_eq!(c[3], 2.0);
    assert!(ops::celu(&x, Scalar::Int(0)).is_err());
    assert_eq!(
        f64s(&ops::threshold(&x, Scalar::Float(0.0), Scalar::Int(-9)).unwrap()),
        vec![-9.0, -9.0, -9.0, 2.0, 7.0]
    );
    let g = Tensor::from_vec(vec![1.0f64, 2.0, 0.0, 3.0], &[2, 2]).unwrap();
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    let gl = f64s(&ops::glu(&g, -1).unwrap());
    assert!((gl[0] - sig(2.0)).abs() < 1e-12 && gl[1] == 0.0);
    let g0 = ops::glu(&g, 0).unwrap();
    assert_eq!(g0.sizes(), &[1, 2]);
    assert!(matches!(ops::glu(&Tensor::from_slice(&[1.0f64, 2.0, 3.0]), 0), Err(Error::Shape { .. })));
    let p = Tensor::from_vec(vec![-1.0f32, 2.0, -3.0, 4.0], &[1, 2, 2]).unwrap();
    let w = Tensor::from_slice(&[0.5f32, 0.25]);
    assert_eq!(ops::prelu(&p, &w).unwrap().to_vec::<f32>().unwrap(), vec![-0.5, 2.0, -0.75, 4.0]);
    assert!(ops::prelu(&p, &Tensor::from_slice(&[0.5f32, 0.25, 1.0])).is_err());
    let ls = f64s(&ops::log_sigmoid(&x).unwrap());
    for (v, xi) in ls.iter().zip([-3.0f64, -0.5, 0.0, 2.0, 7.0]) {
        assert!((v - sig(xi).ln()).abs() < 1e-12);
    }
    let (o, buf) = ops::log_sigmoid_forward(&x).unwrap();
    assert_eq!(f64s(&o), ls);
    assert!((f64s(&buf)[0] - (-3.0f64).exp()).abs() < 1e-15);
}

#[test]
fn nan_aware_binary_ops_and_floor_divide() {
    let a = Tensor::from_slice(&[1.0f64, f64::NAN, f64::NAN, -2.0]);
    let b = Tensor::from_slice(&[f64::NAN, 3.0, f64::NAN, 5.0]);
    let mx = f64s(&ops::fmax(&a, &b).unwrap());
    assert_eq!(mx[..2], [1.0, 3.0]);
    assert!(mx[2].is_nan());
    assert_eq!(mx[3], 5.0);
    assert_eq!(f64s(&ops::fmin(&a, &b).unwrap())[3], -2.0);
    let h = f64s(&ops::hypot(&Tensor::from_slice(&[3.0f64, 1e300]), &Tensor::from_slice(&[4.0f64, 1e300])).unwrap());
    assert_eq!(h[0], 5.0);
    assert!(h[1].is_finite());
    let i = Tensor::from_slice(&[-7i64, 7]);
    let cs = ops::copysign(&i, &Tensor::from_slice(&[1i64, -1])).unwrap();
    assert_eq!(cs.dtype(), ScalarType::F32);
    assert_eq!(cs.to_vec::<f32>().unwrap(), vec![7.0, -7.0]);
    assert_eq!(
        ops::copysign_scalar(&Tensor::from_slice(&[2.0f64]), Scalar::Float(-0.0)).unwrap().to_vec::<f64>().unwrap(),
        vec![-2.0]
    );
    assert_eq!(ops::floor_divide(&i, &Tensor::from_slice(&[2i64, -2])).unwrap().to_vec::<i64>().unwrap(), vec![-4, -4]);
    assert_eq!(
        ops::floor_divide_scalar(&Tensor::from_slice(&[7.5f64]), Scalar::Int(2)).unwrap().to_vec::<f64>().unwrap(),
        vec![3.0]
    );
    let t = Tensor::from_slice(&[true, false, false]);
    let u = Tensor::from_slice(&[1i32, 1, 0]);
    assert_eq!(ops::logical_or(&t, &u).unwrap().to_vec::<bool>().unwrap(), vec![true, true, false]);
    assert_eq!(ops::logical_xor(&t, &u).unwrap().to_vec::<bool>().unwrap(), vec![false, true, false]);
}

#[test]
fn var_mean_and_std_mean() {
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 5.0, 7.0, 9.0], &[2, 3]).unwrap();
    let (v, m) = ops::var_mean(&x, true).unwrap();
    let mean = 27.0 / 6.0;
    let ss: f64 = [1.0f64, 2.0, 3.0, 5.0, 7.0, 9.0].iter().map(|a| (a - mean) * (a - mean)).sum();
    assert!((f64s(&m)[0] - mean).abs() < 1e-12);
    assert!((f64s(&v)[0] - ss / 5.0).abs() < 1e-12);
    let (v1, m1) = ops::var_mean_correction(&x, Some(&[1]), Some(Scalar::Int(0)), true).unwrap();
    assert_eq!(v1.sizes(), &[2, 1]);
    assert_eq!(f64s(&m1), vec![2.0, 7.0]);
    assert!((f64s(&v1)[0] - 2.0 / 3.0).abs() < 1e-12);
    let (s, _) = ops::std_mean_dim(&x, Some(&[1]), true, false).unwrap();
    assert_eq!(f64s(&s), vec![1.0, 2.0]);
}

#[test]
fn nextafter_frexp_and_incomplete_gamma() {
    let x = Tensor::from_vec(vec![1.0f32, 0.0, -2.0], &[3]).unwrap();
    let y = Tensor::from_vec(vec![2.0f32, -1.0, -2.0], &[3]).unwrap();
    let n = ops::nextafter(&x, &y).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(n, vec![1.0 + f32::EPSILON, -f32::from_bits(1), -2.0]);
    let e = ops::nextafter(&Tensor::from_vec(vec![1i64], &[1]).unwrap(), &Tensor::from_vec(vec![2i64], &[1]).unwrap());
    assert!(matches!(e, Err(Error::UnsupportedDtype { .. })));

    let (m, ex) = ops::frexp(&Tensor::from_vec(vec![8.0f64, -0.375, 0.0, f64::INFINITY], &[4]).unwrap()).unwrap();
    assert_eq!(m.to_vec::<f64>().unwrap(), vec![0.5, -0.75, 0.0, f64::INFINITY]);
    assert_eq!((ex.dtype(), ex.to_vec::<i32>().unwrap()), (ScalarType::I32, vec![4, -1, 0, 0]));

    // P(1, x) = 1 - e^-x and P(1/2, x) = erf(sqrt(x)); Q = 1 - P; PyTorch's special values.
    let a = Tensor::from_vec(vec![1.0f64, 1.0, 0.5, 0.5, 0.0, 2.0, -1.0], &[7]).unwrap();
    let xs = [0.3f64, 7.0, 0.2, 9.0, 1.0, 0.0, 1.0];
    let x = Tensor::from_vec(xs.to_vec(), &[7]).unwrap();
    let p = ops::igamma(&a, &x).unwrap().to_vec::<f64>().unwrap();
    let want = [1.0 - (-0.3f64).exp(), 1.0 - (-7.0f64).exp(), libm::erf(0.2f64.sqrt()), libm::erf(3.0), 1.0, 0.0];
    for (g, w) in p.iter().zip(want) {
        assert!((g - w).abs() < 1e-14, "{p:?}");
    }
    assert!(p[6].is_nan());
    let q = ops::igammac(&a, &x).unwrap().to_vec::<f64>().unwrap();
    for (g, w) in q.iter().zip(want) {
        assert!((g - (1.0 - w)).abs() < 1e-14, "{q:?}");
    }
}

/// Note [Keeping the pool warm]: a parallel region started from a thread outside the pool (this
/// test's) leaves the global pool's workers spinning, every one of them when there are two or
/// more, none on a one-thread pool; results computed while they spin are right; and they stop,
/// [`aten::parallel::KEEP_WARM`] after the last region anywhere in the process.
#[test]
fn parallel_regions_keep_the_pool_warm_for_a_while() {
    let n = 1 << 20;
    let x = Tensor::from_vec((0..n).map(|i| (i % 7) as f32 - 3.0).collect::<Vec<f32>>(), &[n as i64]).unwrap();
    let threads = aten::get_num_threads();
    let mut warm = 0;
    for _ in 0..20 {
        let r = ops::relu(&x).unwrap();
        let spinning = aten::parallel::spinning_threads();
        assert!(spinning <= threads, "{spinning} spinning of {threads}");
        warm += usize::from(spinning > 0);
        let got = r.to_vec::<f32>().unwrap();
        assert!(got.iter().enumerate().all(|(i, &v)| v == ((i % 7) as f32 - 3.0).max(0.0)));
    }
    // (A spinner that had seen no region for a millisecond may end just as one starts.)
    if threads >= 2 {
        assert!(warm >= 10, "spinning after {warm} of 20 regions");
    } else {
        assert_eq!(warm, 0);
    }
    // Other tests of this binary start regions too; once they are done (or idle for a
    // millisecond) the spinners end.
    let start = std::time::Instant::now();
    while aten::parallel::spinning_threads() != 0 {
        assert!(start.elapsed().as_secs() < 300, "the workers still spin after 300 s");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(ops::relu(&x).unwrap().to_vec::<f32>().unwrap()[3] == 0.0);
}
