//! Inputs the `op_surface` fuzz target (fuzz/) found to panic inside aten kernels, replayed as
//! plain calls with the values PyTorch gives.

use aten::{ops, Tensor};

/// `logit(x, eps)` with `eps > 0.5` (lower clamp bound above the upper one) panicked in
/// `f64::clamp`; PyTorch clamps with `x < eps ? eps : (x > 1 - eps ? 1 - eps : x)`.
#[test]
fn logit_with_eps_above_one_half_does_not_panic() {
    let x = Tensor::from_vec(vec![0.1f64, 0.9], &[2]).unwrap();
    let y = ops::logit(&x, Some(0.75)).unwrap().to_vec::<f64>().unwrap();
    // 0.1 < 0.75 → 0.75; 0.9 ≥ 0.75 and > 0.25 → 0.25.
    assert_eq!(y, vec![(0.75f64 / 0.25).ln(), (0.25f64 / 0.75).ln()]);
    let y = ops::logit(&x, Some(f64::NAN)).unwrap().to_vec::<f64>().unwrap();
    assert_eq!(y, vec![(0.1f64 / 0.9).ln(), (0.9f64 / 0.1).ln()]);
}

/// Integer floor division of `i64::MIN` by `-1` overflowed in the remainder test; the quotient
/// wraps to `i64::MIN`, as in PyTorch.
#[test]
fn floor_divide_min_by_minus_one_wraps() {
    let a = Tensor::from_vec(vec![i64::MIN, -7, 7], &[3]).unwrap();
    let b = Tensor::from_vec(vec![-1i64, 2, -2], &[3]).unwrap();
    assert_eq!(ops::floor_divide(&a, &b).unwrap().to_vec::<i64>().unwrap(), vec![i64::MIN, -4, -4]);
}
