//! Tests of `native::cpu::vec`'s internals (moved out of the crate: Note [Tests outside aten]).

use aten::native::cpu::vec::*;
#[allow(unused_imports)]
use aten::{Generator, Tensor};
#[allow(unused_imports)]
use c10::{Device, Element, MemoryFormat, Result, Scalar, ScalarType};

/// The largest error of `exp_nonpos_f32::<FMA>` over [-87.3, 0], in ulps of the exact
/// result rounded to f32.
fn worst_exp_ulps<const FMA: bool>() -> f64 {
    let mut worst = 0f64;
    let mut x = EXP_UNDERFLOW;
    while x <= 0.0 {
        let (ours, exact) = (exp_nonpos_f32::<FMA>(x) as f64, (x as f64).exp());
        let ulp = {
            let e = exact as f32;
            (f32::from_bits(e.to_bits() + 1) - e) as f64
        };
        worst = worst.max((ours - exact).abs() / ulp);
        x = f32::from_bits(x.to_bits() - 97);
    }
    worst
}

#[test]
fn exp_is_within_about_one_ulp_on_the_softmax_range() {
    // Every 97th f32 in [-87.3, 0]: about 11 million arguments.
    let fused = worst_exp_ulps::<true>();
    let unfused = worst_exp_ulps::<false>();
    assert!(fused < 1.25, "worst error with FMA {fused} ulp");
    assert!(unfused < 1.5, "worst error without FMA {unfused} ulp");
    for exp in [exp_nonpos_f32::<true>, exp_nonpos_f32::<false>] {
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-0.0), 1.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(-87.4), 0.0);
        assert_eq!(exp(-1e30), 0.0);
        assert!(exp(f32::NAN).is_nan());
        assert!(exp(f32::from_bits(0xffc0_1234)).is_nan());
        let e = exp(-87.29);
        assert!(e.is_normal() && (e as f64 / (-87.29f64).exp() - 1.0).abs() < 1e-6);
    }
}

#[test]
fn sums_and_softmax_rows() {
    let x: Vec<f32> = (0..37).map(|i| i as f32 * 0.25 - 3.0).collect();
    let exact: f64 = x.iter().map(|v| *v as f64).sum();
    assert!((sum_f32(&x) - exact).abs() < 1e-12);
    // Both loops, whichever this CPU uses; 20_000 elements cover four full spans, two
    // blocks of four streams and a tail.
    let big: Vec<f32> = (0..20_000).map(|i| (i % 13) as f32 - 6.0).collect();
    let big_exact: f64 = big.iter().map(|v| *v as f64).sum();
    assert_eq!(sum_f32_with(&big, true), big_exact);
    assert_eq!(sum_f32_with(&big, false), big_exact);
    // Inexact values: both loops stay within a millionth of the sum of magnitudes.
    let wavy: Vec<f32> = (0..50_000).map(|i| (i as f32 * 0.37).sin() * 100.0).collect();
    let wavy_exact: f64 = wavy.iter().map(|v| *v as f64).sum();
    let scale: f64 = wavy.iter().map(|v| v.abs() as f64).sum();
    for prefetch in [true, false] {
        let err = (sum_f32_with(&wavy, prefetch) - wavy_exact).abs();
        assert!(err <= 1e-6 * scale, "prefetch={prefetch}: error {err} of {scale}");
    }
    // Past two groups of 64 spans (Note [Two-level f32 sums]), with a partial group and a tail:
    // integers stay exact, inexact values stay within a millionth of the sum of magnitudes.
    let long_ints: Vec<f32> = (0..600_001).map(|i| (i % 13) as f32 - 5.0).collect();
    let long_exact: f64 = long_ints.iter().map(|v| *v as f64).sum();
    let long_wavy: Vec<f32> = (0..600_001).map(|i| (i as f32 * 0.37).sin() * 100.0 + 1.0).collect();
    let long_wavy_exact: f64 = long_wavy.iter().map(|v| *v as f64).sum();
    let long_scale: f64 = long_wavy.iter().map(|v| v.abs() as f64).sum();
    for prefetch in [true, false] {
        assert_eq!(sum_f32_with(&long_ints, prefetch), long_exact, "prefetch={prefetch}");
        let err = (sum_f32_with(&long_wavy, prefetch) - long_wavy_exact).abs();
        assert!(err <= 1e-6 * long_scale, "prefetch={prefetch}: error {err} of {long_scale}");
    }
    let bigd: Vec<f64> = big.iter().map(|v| *v as f64 + 0.5).collect();
    assert_eq!(sum_f64_with(&bigd, true), big_exact + 10_000.0);
    assert_eq!(sum_f64_with(&bigd, false), big_exact + 10_000.0);
    let xd: Vec<f64> = x.iter().map(|v| *v as f64).collect();
    assert!((sum_f64(&xd) - exact).abs() < 1e-12);
    // 53 = one 32-element step, one 16-element step and 5 left over.
    let long: Vec<f64> = (0..53).map(|i| i as f64 * 0.5 - 7.0).collect();
    assert_eq!(sum_f64(&long), long.iter().sum::<f64>());
    let mut y = vec![0f32; 37];
    softmax_row_f32(&x, &mut y);
    let m = 6.0f64;
    let z: f64 = xd.iter().map(|v| (v - m).exp()).sum();
    for (a, b) in y.iter().zip(&xd) {
        assert!((*a as f64 - (b - m).exp() / z).abs() < 1e-6);
    }
    log_softmax_row_f32(&x, &mut y);
    for (a, b) in y.iter().zip(&xd) {
        assert!((*a as f64 - (b - m - z.ln())).abs() < 1e-5);
    }
    let mut acc = vec![1.0f64; 3];
    add_row_f32(&mut acc, &[1.0, 2.0, 3.0]);
    assert_eq!(acc, vec![2.0, 3.0, 4.0]);
}

#[test]
fn a_nan_or_inf_poisons_its_row_like_pytorch() {
    // A NaN at either end of the vectorised part or in the tail, in a 37-element row.
    for at in [0, 15, 16, 36] {
        let mut x: Vec<f32> = (0..37).map(|i| i as f32 * 0.1).collect();
        x[at] = f32::NAN;
        let mut y = vec![0f32; 37];
        softmax_row_f32(&x, &mut y);
        assert!(y.iter().all(|v| v.is_nan()), "softmax, NaN at {at}");
        log_softmax_row_f32(&x, &mut y);
        assert!(y.iter().all(|v| v.is_nan()), "log_softmax, NaN at {at}");
    }
    // +inf: inf - inf is NaN, so the whole row is NaN (as in PyTorch).
    let mut x = vec![0f32; 20];
    x[3] = f32::INFINITY;
    let mut y = vec![0f32; 20];
    softmax_row_f32(&x, &mut y);
    assert!(y.iter().all(|v| v.is_nan()));
    // A masked -inf entry is exactly 0.
    x[3] = f32::NEG_INFINITY;
    softmax_row_f32(&x, &mut y);
    assert_eq!(y[3], 0.0);
    assert!((y[0] - 1.0 / 19.0).abs() < 1e-7);
}
