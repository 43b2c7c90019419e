//! The vectorised f32 functions of Note [Vectorised transcendentals] (`cpu/vec.rs`): their
//! error against the f64 libm over a sweep of the whole f32 range, in ulps of the result, through
//! the eager operators (the contiguous runs that vectorise, and strided runs, which must give
//! the same bits) and through the functions themselves without fused multiply-adds (what a CPU
//! without FMA runs).

use aten::native::cpu::vec;
use aten::{ops, Tensor};

/// 2^24 arguments: every 256th f32 bit pattern, both signs and every exponent, with the low
/// byte varied so that the mantissas are not all alike.
fn sweep() -> Vec<f32> {
    (0u32..1 << 24).map(|i| f32::from_bits((i << 8) | (i.wrapping_mul(2_654_435_761) >> 24))).collect()
}

/// The spacing of f32 numbers at the magnitude of `r` (the subnormal spacing below the normal
/// range).
fn ulp_at(r: f64) -> f64 {
    let e = (((r.abs().to_bits() >> 52) & 0x7ff) as i64 - 1023).max(-126);
    2f64.powi((e - 23) as i32)
}

/// The largest error of `got` against `reference` over the arguments, in ulps, and the
/// argument where it occurs. Non-finite references must be matched exactly (NaN by NaN, inf by
/// inf of the same sign; a finite reference beyond f32's range by inf).
fn max_ulp(name: &str, xs: &[f32], got: &[f32], reference: Reference) -> (f64, f32) {
    let mut worst = (0.0, 0.0);
    for (&x, &y) in xs.iter().zip(got) {
        let r = reference(x as f64);
        if r.is_nan() {
            assert!(y.is_nan(), "{name}({x:e}) = {y:e}, expected NaN");
            continue;
        }
        if r.abs() > f32::MAX as f64 * (1.0 + f32::EPSILON as f64 / 2.0) {
            assert!(y.is_infinite() && y.signum() as f64 == r.signum(), "{name}({x:e}) = {y:e}, expected {r:e}");
            continue;
        }
        assert!(y.is_finite(), "{name}({x:e}) = {y:e}, expected {r:e}");
        let err = (y as f64 - r).abs() / ulp_at(r);
        if err > worst.0 {
            worst = (err, x);
        }
    }
    worst
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

/// The exact GELU, `x Phi(x)`, without the cancellation of `1 + erf` in the negative tail.
fn gelu(x: f64) -> f64 {
    0.5 * x * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// `elu` with PyTorch's default parameters.
fn elu(x: f64) -> f64 {
    if x > 0.0 {
        x
    } else {
        x.exp_m1()
    }
}

/// `softplus` with PyTorch's default parameters (beta 1, threshold 20).
fn softplus(x: f64) -> f64 {
    if x > 20.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

/// The tanh-approximated GELU, `x (1 + tanh(y)) / 2 = x sigmoid(2y)`.
fn gelu_tanh(x: f64) -> f64 {
    let y = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
    x / (1.0 + (-2.0 * y).exp())
}

type Eager = fn(&Tensor) -> c10::Result<Tensor>;
type Fast = fn(f32) -> f32;
type Reference = fn(f64) -> f64;
/// The name, the eager operator, the function without FMA, the reference and the bounds.
type Function = (&'static str, Eager, Fast, Reference, [f64; 2]);

/// Each function: the eager operator, the function without FMA, the f64 reference, and the
/// bounds in ulps with FMA (the eager kernels on a CPU with FMA) and without. With FMA they are
/// what the exhaustive sweep below measured on every f32 (exp 1.06, log 0.83, tanh 1.54,
/// sigmoid 2.40, silu 3.34), rounded up; without, what the 2^24 sweep measured (exp 1.27, log
/// 0.77, tanh 1.54, sigmoid 2.31, silu 3.18) with room for the arguments it skips. SLEEF's
/// `_u10` functions, which PyTorch vectorises `exp`, `log` and `tanh` with, promise 1.0
/// (`sigmoid` and `silu` are compositions in PyTorch too). `erf`, `erfc` and the two GELUs
/// measured 2.76, 5.11, 5.71 and 3.67 on every f32 with FMA (2.44, 4.81, 4.81 and 3.04
/// without, on the 2^24 sweep); PyTorch's vectorised `erf` (and its GELU,
/// `x (1 + erf(x / sqrt 2)) / 2`) has an absolute error of about 1e-7, many ulps near 0 and in
/// the negative tail (its f32 GELU of -5 is 4% off), and SLEEF's `erfc` promises 1.5. `expm1`,
/// `log1p`, `elu` and `softplus` (PyTorch's defaults) were measured on the 2^24 sweep only:
/// 2.38, 1.44, 2.38 and 1.98 with FMA (2.38, 1.44, 2.38, 2.04 without).
const FUNCTIONS: [Function; 13] = [
    ("exp", ops::exp, vec::exp_f32::<false>, f64::exp, [1.1, 1.4]),
    ("log", ops::log, vec::log_f32::<false>, f64::ln, [0.85, 0.9]),
    ("tanh", ops::tanh, vec::tanh_f32::<false>, f64::tanh, [1.6, 1.7]),
    ("sigmoid", ops::sigmoid, |x| vec::times_sigmoid_f32::<false>(1.0, x), sigmoid, [2.45, 2.6]),
    ("silu", ops::silu, |x| vec::times_sigmoid_f32::<false>(x, x), silu, [3.4, 3.6]),
    ("erf", ops::erf, vec::erf_f32::<false>, libm::erf, [2.8, 2.9]),
    ("erfc", ops::erfc, vec::erfc_f32::<false>, libm::erfc, [5.2, 5.4]),
    ("gelu", |t| ops::gelu(t, "none"), vec::gelu_f32::<false>, gelu, [5.8, 5.9]),
    ("gelu_tanh", |t| ops::gelu(t, "tanh"), vec::gelu_tanh_f32::<false>, gelu_tanh, [3.7, 3.8]),
    ("expm1", ops::expm1, vec::expm1_f32::<false>, f64::exp_m1, [2.8, 2.8]),
    ("log1p", ops::log1p, vec::log1p_f32::<false>, f64::ln_1p, [1.7, 1.7]),
    (
        "elu",
        |t| ops::elu(t, 1.0.into(), 1.0.into(), 1.0.into()),
        |x| if x > 0.0 { x } else { vec::expm1_f32::<false>(x) },
        elu,
        [2.8, 2.8],
    ),
    (
        "softplus",
        |t| ops::softplus(t, 1.0.into(), 20.0.into()),
        |x| if x > 20.0 { x } else { x.max(0.0) + vec::log1p_f32::<false>(vec::exp_f32::<false>(-x.abs())) },
        softplus,
        [2.2, 2.4],
    ),
];

#[test]
fn vectorised_functions_are_within_their_ulp_bounds_over_the_f32_range() {
    let xs = sweep();
    let n = xs.len() as i64;
    let t = Tensor::from_vec(xs.clone(), &[n]).unwrap();
    // A strided view of the same values: every other element of a tensor twice as long.
    let spread = ops::stack(&[t.clone(), t.clone()], 1).unwrap();
    let strided = spread.select(1, 0).unwrap();
    assert_ne!(strided.strides(), &[1]);
    let fma = aten::native::unary::fast_with_fma();
    for (name, eager, fast, reference, [fma_bound, plain_bound]) in FUNCTIONS {
        let got = eager(&t).unwrap().to_vec::<f32>().unwrap();
        let (err, at) = max_ulp(name, &xs, &got, reference);
        println!("{name}: {err:.3} ulp at {at:e} (eager, FMA: {fma})");
        let bound = if fma { fma_bound } else { plain_bound };
        assert!(err <= bound, "{name}: {err} ulp at {at:e} (bound {bound})");
        let by_strides = eager(&strided).unwrap().to_vec::<f32>().unwrap();
        // The same bits, except that a NaN's sign and payload are not compared (the AVX-512 run
        // of softplus returns the default NaN for a signalling NaN, the scalar loop the input's).
        let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        let differ = got.iter().zip(&by_strides).filter(|(a, b)| !same(**a, **b)).count();
        let first = (0..xs.len()).find(|&i| !same(got[i], by_strides[i]));
        let first = first.map(|i| (xs[i].to_bits(), got[i].to_bits(), by_strides[i].to_bits()));
        assert_eq!(differ, 0, "{name}: contiguous and strided runs differ in {differ} elements, first (input, contiguous, strided bits): {first:x?}");
        let plain: Vec<f32> = xs.iter().map(|&x| fast(x)).collect();
        let (err, at) = max_ulp(name, &xs, &plain, reference);
        println!("{name}: {err:.3} ulp at {at:e} (without FMA)");
        assert!(err <= plain_bound, "{name} without FMA: {err} ulp at {at:e} (bound {plain_bound})");
    }
}

/// Every one of the 2^32 f32 arguments through the eager operators, in chunks of 2^24 (minutes
/// in a release build: `cargo test --release -p aten --test ops exhaustive -- --ignored`).
#[test]
#[ignore = "the exhaustive sweep; the test above runs a 2^24 subset"]
fn exhaustive_sweep_within_the_bounds() {
    let fma = aten::native::unary::fast_with_fma();
    let mut over = Vec::new();
    for (name, eager, _, reference, [fma_bound, plain_bound]) in FUNCTIONS {
        let bound = if fma { fma_bound } else { plain_bound };
        let mut worst = (0.0, 0.0f32);
        for chunk in 0u32..256 {
            let xs: Vec<f32> = (0u32..1 << 24).map(|i| f32::from_bits((chunk << 24) | i)).collect();
            let t = Tensor::from_vec(xs.clone(), &[xs.len() as i64]).unwrap();
            let got = eager(&t).unwrap().to_vec::<f32>().unwrap();
            let w = max_ulp(name, &xs, &got, reference);
            if w.0 > worst.0 {
                worst = w;
            }
        }
        println!("{name}: {:.3} ulp at {:e} (every f32, FMA: {fma})", worst.0, worst.1);
        if worst.0 > bound {
            over.push(format!("{name}: {} ulp at {:e} (bound {bound})", worst.0, worst.1));
        }
    }
    assert!(over.is_empty(), "{over:?}");
}

#[test]
fn vectorised_functions_keep_special_values() {
    let x = Tensor::from_slice(&[
        0.0f32,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE / 4.0,
        -1.0,
        1.0,
    ]);
    let bits = |t: Tensor| t.to_vec::<f32>().unwrap();
    let exp = bits(x.exp().unwrap());
    assert_eq!(&exp[..4], &[1.0, 1.0, f32::INFINITY, 0.0]);
    assert!(exp[4].is_nan());
    let log = bits(x.log().unwrap());
    assert_eq!(&log[..3], &[f32::NEG_INFINITY, f32::NEG_INFINITY, f32::INFINITY]);
    assert!(log[3].is_nan() && log[4].is_nan() && log[6].is_nan());
    assert_eq!(log[5], (f32::MIN_POSITIVE as f64 / 4.0).ln() as f32);
    assert_eq!(log[7], 0.0);
    let tanh = bits(x.tanh().unwrap());
    assert_eq!(&tanh[..4], &[0.0, -0.0, 1.0, -1.0]);
    assert!(tanh[1].is_sign_negative() && tanh[4].is_nan());
    let sig = bits(x.sigmoid().unwrap());
    assert_eq!(&sig[..4], &[0.5, 0.5, 1.0, 0.0]);
    assert!(sig[4].is_nan());
    let erf = bits(x.erf().unwrap());
    assert_eq!(&erf[..4], &[0.0, -0.0, 1.0, -1.0]);
    assert!(erf[1].is_sign_negative() && erf[4].is_nan());
    let erfc = bits(x.erfc().unwrap());
    assert_eq!(&erfc[..4], &[1.0, 1.0, 0.0, 2.0]);
    assert!(erfc[2].is_sign_positive() && erfc[4].is_nan());
    let expm1 = bits(x.expm1().unwrap());
    assert_eq!(&expm1[..4], &[0.0, -0.0, f32::INFINITY, -1.0]);
    assert!(expm1[1].is_sign_negative() && expm1[4].is_nan());
    assert_eq!(expm1[5], f32::MIN_POSITIVE / 4.0);
    let log1p = bits(x.log1p().unwrap());
    assert_eq!(&log1p[..3], &[0.0, -0.0, f32::INFINITY]);
    assert!(log1p[1].is_sign_negative() && log1p[3].is_nan() && log1p[4].is_nan());
    assert_eq!(log1p[6], f32::NEG_INFINITY);
    assert_eq!(log1p[5], f32::MIN_POSITIVE / 4.0);
    // softplus with a threshold past where e^x overflows f32 is still about x there.
    let sp = bits(ops::softplus(&Tensor::from_slice(&[95.0f32, 1000.0]), 1.0.into(), 2000.0.into()).unwrap());
    assert_eq!(sp, [95.0, 1000.0]);
    // PyTorch's values: gelu(-inf) = -inf * 0 is NaN in both forms, gelu(inf) = inf.
    for approximate in ["none", "tanh"] {
        let g = bits(ops::gelu(&x, approximate).unwrap());
        assert_eq!(&g[..3], &[0.0, -0.0, f32::INFINITY], "{approximate}");
        assert!(g[1].is_sign_negative() && g[3].is_nan() && g[4].is_nan(), "{approximate}: {g:?}");
        // Huge arguments: x itself above 0, a zero of x's sign below.
        let big = bits(ops::gelu(&Tensor::from_slice(&[f32::MAX, -f32::MAX, -1e30]), approximate).unwrap());
        assert_eq!(big[0], f32::MAX, "{approximate}");
        assert!(big[1] == 0.0 && big[2] == 0.0, "{approximate}: {big:?}");
    }
}

/// Note [Chunked kernels]: the GELU's near body gives the full body's bits for every argument
/// of magnitude below 2.8 (every 997th f32 of either sign, with and without FMA), so a chunk
/// that takes it computes what the element loop would.
#[test]
fn gelu_near_body_equals_the_full_body_below_its_bound() {
    let top = 2.8f32.to_bits();
    let mut checked = 0;
    for b in (0..top).step_by(997).chain([top - 1]) {
        for x in [f32::from_bits(b), -f32::from_bits(b)] {
            assert!(x.abs() < 2.8);
            assert_eq!(vec::gelu_near_f32::<false>(x).to_bits(), vec::gelu_f32::<false>(x).to_bits(), "gelu({x:e})");
            if aten::native::unary::fast_with_fma() {
                assert_eq!(
                    vec::gelu_near_f32::<true>(x).to_bits(),
                    vec::gelu_f32::<true>(x).to_bits(),
                    "gelu({x:e}), FMA"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 2_000_000);
}
