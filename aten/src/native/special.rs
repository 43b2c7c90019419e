//! Special functions (`torch.special`, `lgamma`, `digamma`, `polygamma`, `i0`, Bessel functions,
//! orthogonal polynomials): scalar implementations in f64 (f32 inputs are computed in f64 and
//! rounded once) and their elementwise kernels.
//!
//! The algorithms are textbook ones, chosen so every function is accurate to a few ulps of f64
//! over the whole real line: power series whose terms all have one sign (`I0`, `I1`),
//! asymptotic expansions where they converge fast (`I0e`/`I1e` for large arguments), the
//! trapezoidal rule on the integral `K_nu(x) = int_0^inf exp(-x cosh t) cosh(nu t) dt` (the
//! integrand is analytic and decays doubly exponentially, so the rule converges exponentially in
//! the step), Euler-Maclaurin summation for the Hurwitz zeta function, recurrences for the
//! polynomials, and `libm` for `lgamma` and the Bessel functions of the first and second kind.
//! Edge cases (poles, negative integers, infinities, NaN) follow PyTorch's.

use c10::Result;

use crate::native::unary::{run_float_unary, UnaryFloatOp};
use crate::Tensor;

const PI: f64 = std::f64::consts::PI;
const FRAC_1_SQRT_PI: f64 = 0.564_189_583_547_756_3;
const SQRT_2: f64 = std::f64::consts::SQRT_2;

// ---- gamma family ------------------------------------------------------------------------------

/// `ln |Gamma(x)|` (+inf at the poles).
pub fn lgamma(x: f64) -> f64 {
    libm::lgamma(x)
}

/// The digamma function `psi(x) = Gamma'(x) / Gamma(x)`: the recurrence `psi(x) = psi(x + 1) -
/// 1/x` up to `x >= 10`, then the asymptotic series; reflection for negative `x`. PyTorch's
/// conventions: `psi(+-0) = -+inf`, NaN at the negative integers.
pub fn digamma(x: f64) -> f64 {
    if x == 0.0 {
        return f64::INFINITY.copysign(-x);
    }
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x < 0.0 {
        if x == x.trunc() {
            return f64::NAN;
        }
        // psi(1 - x) - psi(x) = pi / tan(pi x).
        return digamma(1.0 - x) - PI / (PI * x).tan();
    }
    let mut x = x;
    let mut acc = 0.0;
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    // ln x - 1/(2x) - sum B_2k / (2k x^2k).
    const B: [f64; 7] =
        [1.0 / 12.0, -1.0 / 120.0, 1.0 / 252.0, -1.0 / 240.0, 1.0 / 132.0, -691.0 / 32760.0, 1.0 / 12.0];
    let z = 1.0 / (x * x);
    let mut series = 0.0;
    for b in B.iter().rev() {
        series = series * z + b;
    }
    acc + x.ln() - 0.5 / x - z * series
}

/// `B_2k / (2k)!` for k = 1..=12 (the Euler-Maclaurin coefficients).
const B2K_OVER_FACT: [f64; 12] = [
    1.0 / 12.0,
    -1.0 / 720.0,
    1.0 / 30240.0,
    -1.0 / 1_209_600.0,
    1.0 / 47_900_160.0,
    -691.0 / 1_307_674_368_000.0,
    1.0 / 74_724_249_600.0,
    -3617.0 / 10_670_622_842_880_000.0,
    43867.0 / 5_109_094_217_170_944_000.0,
    -174_611.0 / 802_857_662_698_291_200_000.0,
    77683.0 / 14_101_100_039_391_805_440_000.0,
    -236_364_091.0 / 1_693_824_136_731_743_669_452_800_000.0,
];

/// The Hurwitz zeta function `zeta(s, q) = sum_k (q + k)^-s` (PyTorch's `special.zeta(x, q)`):
/// N terms summed directly, the tail by Euler-Maclaurin. `s == 1` is a pole (+inf), `s < 1` is
/// NaN; a non-positive integer `q` is a pole (+inf), other negative `q` NaN for non-integer `s`.
pub fn zeta(s: f64, q: f64) -> f64 {
    if s.is_nan() || q.is_nan() {
        return f64::NAN;
    }
    if s == 1.0 {
        return f64::INFINITY;
    }
    if s < 1.0 {
        return f64::NAN;
    }
    if q <= 0.0 {
        if q == q.floor() {
            return f64::INFINITY;
        }
        if s != s.floor() {
            return f64::NAN;
        }
    }
    // Enough direct terms that the Euler-Maclaurin tail starts at q + N >= 9 (q may be negative).
    let n = 9 + if q < 0.0 { (-q).ceil().min(1e6) as usize } else { 0 };
    let mut sum = 0.0;
    let mut a = q;
    for _ in 0..n {
        let term = a.powf(-s);
        sum += term;
        if a > 0.0 && term.abs() < sum.abs() * 1e-17 {
            return sum;
        }
        a += 1.0;
    }
    // Tail: a^(1-s)/(s-1) + a^-s/2 + sum_k B_2k/(2k)! * s(s+1)...(s+2k-2) a^(-s-2k+1).
    let mut tail = a.powf(1.0 - s) / (s - 1.0) + 0.5 * a.powf(-s);
    let mut rising = s; // s (s+1) ... (s + 2k - 2)
    let mut pow = a.powf(-s - 1.0);
    for (k, c) in B2K_OVER_FACT.iter().enumerate() {
        let term = c * rising * pow;
        tail += term;
        if term.abs() < tail.abs() * 1e-17 {
            break;
        }
        let j = 2.0 * k as f64;
        rising *= (s + j + 1.0) * (s + j + 2.0);
        pow /= a * a;
    }
    sum + tail
}

/// `polygamma(n, x)`, the n-th derivative of digamma: `(-1)^(n+1) n! zeta(n + 1, x)`.
pub fn polygamma(n: i64, x: f64) -> f64 {
    match n {
        0 => digamma(x),
        n if n < 0 => f64::NAN,
        n => {
            let mut fact = 1.0;
            // n! is infinite past 170: the loop stops there.
            for k in 2..=n.min(171) {
                fact *= k as f64;
            }
            let sign = if n % 2 == 1 { 1.0 } else { -1.0 };
            sign * fact * zeta(n as f64 + 1.0, x)
        }
    }
}

// ---- error-function family -----------------------------------------------------------------------

/// `erfcx(x) = exp(x^2) erfc(x)`: directly below 2, by its continued fraction above (where erfc
/// underflows), and by `2 exp(x^2) - erfcx(-x)` for negative x.
pub fn erfcx(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < 0.0 {
        if x < -26.7 {
            return f64::INFINITY;
        }
        return 2.0 * (x * x).exp() - erfcx(-x);
    }
    if x < 2.0 {
        return (x * x).exp() * libm::erfc(x);
    }
    if x.is_infinite() {
        return 0.0;
    }
    // erfc(x) exp(x^2) = (1/sqrt(pi)) / (x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + ...))))),
    // evaluated from the bottom.
    let mut f = x;
    for k in (1..=60).rev() {
        f = x + (k as f64 / 2.0) / f;
    }
    FRAC_1_SQRT_PI / f
}

/// The standard normal CDF.
pub fn ndtr(x: f64) -> f64 {
    0.5 * libm::erfc(-x / SQRT_2)
}

/// `log(ndtr(x))`, through erfcx in the lower tail and log1p in the upper.
pub fn log_ndtr(x: f64) -> f64 {
    let t = x / SQRT_2;
    if x < -1.0 {
        (0.5 * erfcx(-t)).ln() - t * t
    } else {
        (-0.5 * libm::erfc(t)).ln_1p()
    }
}

/// The inverse of the standard normal CDF. For `p <= 1/2`: Abramowitz & Stegun 26.2.23 as the
/// first guess, then Newton steps on `log(ndtr(x)) = log(p)` (well conditioned in the tail,
/// where `ndtr` itself underflows); `p > 1/2` by symmetry (`1 - p` is exact there).
pub fn ndtri(p: f64) -> f64 {
    if p.is_nan() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    if p > 0.5 {
        return -ndtri_lower(1.0 - p);
    }
    ndtri_lower(p)
}

fn ndtri_lower(p: f64) -> f64 {
    let t = (-2.0 * p.ln()).sqrt();
    let mut x = -(t
        - (2.515_517 + 0.802_853 * t + 0.010_328 * t * t)
            / (1.0 + 1.432_788 * t + 0.189_269 * t * t + 0.001_308 * t * t * t));
    let target = p.ln();
    for _ in 0..8 {
        let l = log_ndtr(x);
        // d/dx log(ndtr(x)) = phi(x) / ndtr(x).
        let slope = (-0.5 * x * x - l).exp() / (2.0 * PI).sqrt();
        let step = (l - target) / slope;
        x -= step;
        if step.abs() <= 1e-16 * x.abs().max(1e-300) {
            break;
        }
    }
    x
}

/// `-x ln x` (0 at 0, -inf below 0).
pub fn entr(x: f64) -> f64 {
    if x.is_nan() {
        x
    } else if x > 0.0 {
        -x * x.ln()
    } else if x == 0.0 {
        0.0
    } else {
        f64::NEG_INFINITY
    }
}

// ---- Bessel functions --------------------------------------------------------------------------

/// `I_nu(x) exp(-|x|)` for integer order 0 or 1 by the asymptotic expansion
/// `1/sqrt(2 pi x) sum_k (-1)^k prod_j (4 nu^2 - (2j-1)^2) / (k! (8x)^k)`, used for `|x| >= 30`.
fn scaled_i_asymptotic(nu: f64, x: f64) -> f64 {
    let mu = 4.0 * nu * nu;
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..60 {
        let j = (2 * k - 1) as f64;
        term *= -(mu - j * j) / (k as f64 * 8.0 * x);
        sum += term;
        if term.abs() < 1e-17 * sum.abs() {
            break;
        }
    }
    sum / (2.0 * PI * x).sqrt()
}

/// `I_0(x)`: `sum_k (x^2/4)^k / (k!)^2` (all terms positive).
#[doc(hidden)]
pub fn i0_series(x: f64) -> f64 {
    let q = 0.25 * x * x;
    let mut term = 1.0;
    let mut sum = 1.0;
    let mut k = 1.0;
    loop {
        term *= q / (k * k);
        sum += term;
        if term < sum * 1e-17 || !sum.is_finite() {
            return sum;
        }
        k += 1.0;
    }
}

/// `I_1(x)`: `sum_k (x/2)^(2k+1) / (k! (k+1)!)` (all terms of the sign of x).
#[doc(hidden)]
pub fn i1_series(x: f64) -> f64 {
    let q = 0.25 * x * x;
    let mut term = 0.5 * x;
    let mut sum = term;
    let mut k = 1.0;
    loop {
        term *= q / (k * (k + 1.0));
        sum += term;
        if term.abs() <= sum.abs() * 1e-17 || !sum.is_finite() {
            return sum;
        }
        k += 1.0;
    }
}

/// The modified Bessel function of the first kind of order 0.
pub fn i0(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    if a > 713.0 {
        return f64::INFINITY;
    }
    i0_series(a)
}

/// `I_0(x) exp(-|x|)`.
pub fn i0e(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    if a >= 30.0 {
        scaled_i_asymptotic(0.0, a)
    } else {
        i0_series(a) * (-a).exp()
    }
}

/// The modified Bessel function of the first kind of order 1 (odd).
pub fn i1(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.abs() > 713.0 {
        return f64::INFINITY.copysign(x);
    }
    i1_series(x)
}

/// `I_1(x) exp(-|x|)`.
pub fn i1e(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let v = if a >= 30.0 { scaled_i_asymptotic(1.0, a) } else { i1_series(a) * (-a).exp() };
    v.copysign(x)
}

/// `exp(x) K_nu(x)` for `x > 0`: the trapezoidal rule on `int_0^inf exp(-x (cosh t - 1))
/// cosh(nu t) dt` with step 1/8, up to where the integrand is below 1e-300 of its start.
fn scaled_k(nu: f64, x: f64) -> f64 {
    const H: f64 = 0.125;
    let mut sum = 0.5; // t = 0: exp(0) cosh(0) / 2
    let mut k = 1.0;
    loop {
        let t = k * H;
        let e = -x * (t.cosh() - 1.0) + nu * t;
        let term = e.exp() * 0.5 * (1.0 + (-2.0 * nu * t).exp());
        sum += term;
        if e < -700.0 || term < sum * 1e-18 {
            break;
        }
        k += 1.0;
    }
    sum * H
}

fn k_common(nu: f64, x: f64, scaled: bool) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::INFINITY;
    }
    if x.is_infinite() {
        return 0.0;
    }
    let s = scaled_k(nu, x);
    if scaled {
        s
    } else {
        s * (-x).exp()
    }
}

/// `K_0(x)`.
pub fn k0(x: f64) -> f64 {
    k_common(0.0, x, false)
}
/// `K_1(x)`.
pub fn k1(x: f64) -> f64 {
    k_common(1.0, x, false)
}
/// `exp(x) K_0(x)`.
pub fn k0e(x: f64) -> f64 {
    k_common(0.0, x, true)
}
/// `exp(x) K_1(x)`.
pub fn k1e(x: f64) -> f64 {
    k_common(1.0, x, true)
}

/// `sin(x) / x` (1 at 0).
pub fn spherical_j0(x: f64) -> f64 {
    if x.is_infinite() {
        return 0.0;
    }
    if x.abs() < 0.5 {
        // 1 - x^2/6 + x^4/120 - ...: no cancellation near 0.
        let z = x * x;
        return 1.0 - z / 6.0 * (1.0 - z / 20.0 * (1.0 - z / 42.0 * (1.0 - z / 72.0 * (1.0 - z / 110.0))));
    }
    x.sin() / x
}

// ---- orthogonal polynomials ----------------------------------------------------------------------

/// The degree of a polynomial argument: PyTorch truncates it to an integer.
fn degree(n: f64) -> Option<i64> {
    if n.is_nan() {
        None
    } else {
        Some(n as i64)
    }
}

/// A three-term recurrence `p_{k+1} = step(k, p_k, p_{k-1})` from `p0`, `p1`.
fn recur(n: i64, p0: f64, p1: f64, step: impl Fn(f64, f64, f64) -> f64) -> f64 {
    if n == 0 {
        return p0;
    }
    let (mut a, mut b) = (p0, p1);
    for k in 1..n {
        let c = step(k as f64, b, a);
        a = b;
        b = c;
    }
    b
}

/// Chebyshev polynomial of the first kind `T_n(x)`.
pub fn chebyshev_t(x: f64, n: f64) -> f64 {
    let Some(n) = degree(n) else { return f64::NAN };
    if n < 0 {
        return 0.0;
    }
    if x.abs() == 1.0 {
        return if x > 0.0 || n % 2 == 0 { 1.0 } else { -1.0 };
    }
    if n > 6 && x.abs() < 1.0 {
        return (n as f64 * x.acos()).cos();
    }
    recur(n, 1.0, x, |_, b, a| 2.0 * x * b - a)
}

/// Chebyshev polynomial of the second kind `U_n(x)`.
pub fn chebyshev_u(x: f64, n: f64) -> f64 {
    let Some(n) = degree(n) else { return f64::NAN };
    if n < 0 {
        return 0.0;
    }
    if x.abs() == 1.0 {
        let v = (n + 1) as f64;
        return if x > 0.0 || n % 2 == 0 { v } else { -v };
    }
    if n > 8 && x.abs() < 1.0 {
        let t = x.acos();
        if t.sin() != 0.0 {
            return ((n + 1) as f64 * t).sin() / t.sin();
        }
        return (n + 1) as f64 * ((n + 1) as f64 * t).cos() / x;
    }
    recur(n, 1.0, 2.0 * x, |_, b, a| 2.0 * x * b - a)
}

/// Chebyshev polynomial of the third kind `V_n(x)`.
pub fn chebyshev_v(x: f64, n: f64) -> f64 {
    let Some(n) = degree(n) else { return f64::NAN };
    if n < 0 {
        return 0.0;
    }
    if x.abs() == 1.0 {
        if x > 0.0 {
            return 1.0;
        }
        let v = (2 * n + 1) as f64;
        return if n % 2 == 0 { v } else { -v };
    }
    if n > 8 && x.abs() < 1.0 {
        let t = x.acos();
        if (t / 2.0).sin() != 1.0 {
            return ((n as f64 + 0.5) * t).cos() / (t / 2.0).cos();
        }
        return if n % 2 == 0 { (2 * n + 1) as f64 } else { -((2 * n + 1) as f64) };
    }
    recur(n, 1.0, 2.0 * x - 1.0, |_, b, a| 2.0 * x * b - a)
}

/// Chebyshev polynomial of the fourth kind `W_n(x)`.
pub fn chebyshev_w(x: f64, n: f64) -> f64 {
    let Some(n) = degree(n) else { return f64::NAN };
    if n < 0 {
        return 0.0;
    }
    if x.abs() == 1.0 {
        if x > 0.0 {
            return (2 * n + 1) as f64;
        }
        return if n % 2 == 0 { 1.0 } else { -1.0 };
    }
    if n > 8 && x.abs() < 1.0 {
        let t = x.acos();
        if (t / 2.0).cos() != 1.0 {
            return ((n as f64 + 0.5) * t).sin() / (t / 2.0).sin();
        }
        return if x > 0.0 {
            (2 * n + 1) as f64
        } else if n % 2 == 0 {
            1.0
        } else {
            -1.0
        };
    }
    recur(n, 1.0, 2.0 * x + 1.0, |_, b, a| 2.0 * x * b - a)
}

/// The "physicists'" Hermite polynomial `H_n(x)`.
pub fn hermite_h(x: f64, n: f64) -> f64 {
    let Some(n) = degree(n) else { return f64::NAN };
    if n < 0 {
        return 0.0;
    }
    recur(n, 1.0, 2.0 * x, |k, b, a| 2.0 * x * b - 2.0 * k * a)
}

/// The "probabilists'" Hermite polynomial `He_n(x)`.
pub fn hermite_he(x: f64, n: f64) -> f64 {
    let Some(n) = degree(n) else { return f64::NAN };
    if n < 0 {
        return 0.0;
    }
    recur(n, 1.0, x, |k, b, a| x * b - k * a)
}

/// The Laguerre polynomial `L_n(x)`.
pub fn laguerre_l(x: f64, n: f64) -> f64 {
    let Some(n) = degree(n) else { return f64::NAN };
    if n < 0 {
        return 0.0;
    }
    if x.abs() == 0.0 {
        return 1.0;
    }
    recur(n, 1.0, 1.0 - x, |k, b, a| ((2.0 * k + 1.0 - x) * b - k * a) / (k + 1.0))
}

/// The Legendre polynomial `P_n(x)`.
pub fn legendre_p(x: f64, n: f64) -> f64 {
    let Some(n) = degree(n) else { return f64::NAN };
    if n < 0 {
        return 0.0;
    }
    if x.abs() == 1.0 {
        return if x > 0.0 || n % 2 == 0 { 1.0 } else { -1.0 };
    }
    recur(n, 1.0, x, |k, b, a| ((2.0 * k + 1.0) * x * b - k * a) / (k + 1.0))
}

// ---- kernels -------------------------------------------------------------------------------------

macro_rules! special_unary {
    ($($Op:ident, $name:literal, $f:ident, $scalar:path;)*) => {$(
        #[doc = concat!("`", $name, "` as a [`UnaryFloatOp`].")]
        pub struct $Op;
        impl UnaryFloatOp for $Op {
            const NAME: &'static str = $name;
            const PROMOTE_INTEGERS: bool = true;
            fn device_kernel() -> &'static crate::native::stub::Kernel {
                crate::device_kernel!($name)
            }
            #[inline(always)]
            fn f32(x: f32) -> f32 {
                $scalar(x as f64) as f32
            }
            #[inline(always)]
            fn f64(x: f64) -> f64 {
                $scalar(x)
            }
        }
        #[doc = concat!("`", $name, "(Tensor self) -> Tensor`")]
        pub fn $f(self_: &Tensor) -> Result<Tensor> {
            run_float_unary::<$Op>(None, self_)
        }
    )*};
}

special_unary! {
    Lgamma, "lgamma", lgamma_op, lgamma;
    Digamma, "digamma", digamma_op, digamma;
    I0, "i0", i0_op, i0;
    SpecialI0e, "special_i0e", special_i0e, i0e;
    SpecialI1, "special_i1", special_i1, i1;
    SpecialI1e, "special_i1e", special_i1e, i1e;
    SpecialErfcx, "special_erfcx", special_erfcx, erfcx;
    SpecialNdtr, "special_ndtr", special_ndtr, ndtr;
    SpecialNdtri, "special_ndtri", special_ndtri, ndtri;
    SpecialLogNdtr, "special_log_ndtr", special_log_ndtr, log_ndtr;
    SpecialEntr, "special_entr", special_entr, entr;
    SpecialBesselJ0, "special_bessel_j0", special_bessel_j0, libm::j0;
    SpecialBesselJ1, "special_bessel_j1", special_bessel_j1, libm::j1;
    SpecialBesselY0, "special_bessel_y0", special_bessel_y0, bessel_y0;
    SpecialBesselY1, "special_bessel_y1", special_bessel_y1, bessel_y1;
    SpecialModifiedBesselI0, "special_modified_bessel_i0", special_modified_bessel_i0, i0;
    SpecialModifiedBesselI1, "special_modified_bessel_i1", special_modified_bessel_i1, i1;
    SpecialModifiedBesselK0, "special_modified_bessel_k0", special_modified_bessel_k0, k0;
    SpecialModifiedBesselK1, "special_modified_bessel_k1", special_modified_bessel_k1, k1;
    SpecialScaledModifiedBesselK0, "special_scaled_modified_bessel_k0", special_scaled_modified_bessel_k0, k0e;
    SpecialScaledModifiedBesselK1, "special_scaled_modified_bessel_k1", special_scaled_modified_bessel_k1, k1e;
    SpecialSphericalBesselJ0, "special_spherical_bessel_j0", special_spherical_bessel_j0, spherical_j0;
}

/// `Y_0`, with PyTorch's values off the domain: -inf at 0, NaN below.
fn bessel_y0(x: f64) -> f64 {
    if x < 0.0 {
        f64::NAN
    } else if x == 0.0 {
        f64::NEG_INFINITY
    } else {
        libm::y0(x)
    }
}

/// `Y_1`, with PyTorch's values off the domain: -inf at 0, NaN below.
fn bessel_y1(x: f64) -> f64 {
    if x < 0.0 {
        f64::NAN
    } else if x == 0.0 {
        f64::NEG_INFINITY
    } else {
        libm::y1(x)
    }
}

/// `polygamma(int n, Tensor self) -> Tensor`
pub fn polygamma_op(n: i64, self_: &Tensor) -> Result<Tensor> {
    if n < 0 {
        return Err(c10::Error::invalid("polygamma", "polygamma(n, x) does not support negative n."));
    }
    let order = Tensor::wrapped_scalar(c10::Scalar::Int(n));
    crate::native::pointwise::zip_out("polygamma", None, self_, &order, true, |x, n| polygamma(n as i64, x))
}

/// The largest polynomial degree evaluated: the recurrences take `n` steps, so a degree of
/// 10^18 would run for centuries (in PyTorch too). Beyond this it is an error value.
pub const MAX_DEGREE: f64 = 1e6;

fn check_degree(op: &str, n: &Tensor) -> Result<()> {
    if n.numel() > 0 && !n.device().is_meta() && n.to_vec::<f64>()?.iter().any(|&d| d > MAX_DEGREE) {
        return Err(c10::Error::invalid(op, format!("{op}: degrees above {MAX_DEGREE:e} are not supported")));
    }
    Ok(())
}

macro_rules! special_binary {
    ($($name:literal, $f:ident, $scalar:path;)*) => {$(
        #[doc = concat!("`", $name, "(Tensor x, Tensor n) -> Tensor`")]
        pub fn $f(x: &Tensor, n: &Tensor) -> Result<Tensor> {
            check_degree($name, n)?;
            crate::native::pointwise::zip_out($name, None, x, n, true, $scalar)
        }
    )*};
}

/// `special_zeta(Tensor self, Tensor other) -> Tensor`: the Hurwitz zeta function.
pub fn special_zeta(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    crate::native::pointwise::zip_out("special_zeta", None, self_, other, true, zeta)
}

special_binary! {
    "special_chebyshev_polynomial_t", special_chebyshev_polynomial_t, chebyshev_t;
    "special_chebyshev_polynomial_u", special_chebyshev_polynomial_u, chebyshev_u;
    "special_chebyshev_polynomial_v", special_chebyshev_polynomial_v, chebyshev_v;
    "special_chebyshev_polynomial_w", special_chebyshev_polynomial_w, chebyshev_w;
    "special_shifted_chebyshev_polynomial_t", special_shifted_chebyshev_polynomial_t, shifted_t;
    "special_shifted_chebyshev_polynomial_u", special_shifted_chebyshev_polynomial_u, shifted_u;
    "special_shifted_chebyshev_polynomial_v", special_shifted_chebyshev_polynomial_v, shifted_v;
    "special_shifted_chebyshev_polynomial_w", special_shifted_chebyshev_polynomial_w, shifted_w;
    "special_hermite_polynomial_h", special_hermite_polynomial_h, hermite_h;
    "special_hermite_polynomial_he", special_hermite_polynomial_he, hermite_he;
    "special_laguerre_polynomial_l", special_laguerre_polynomial_l, laguerre_l;
    "special_legendre_polynomial_p", special_legendre_polynomial_p, legendre_p;
}

fn shifted_t(x: f64, n: f64) -> f64 {
    chebyshev_t(2.0 * x - 1.0, n)
}
fn shifted_u(x: f64, n: f64) -> f64 {
    chebyshev_u(2.0 * x - 1.0, n)
}
fn shifted_v(x: f64, n: f64) -> f64 {
    chebyshev_v(2.0 * x - 1.0, n)
}
fn shifted_w(x: f64, n: f64) -> f64 {
    chebyshev_w(2.0 * x - 1.0, n)
}

/// `mvlgamma(Tensor self, int p) -> Tensor`: the multivariate log-gamma function
/// `p(p-1)/4 ln(pi) + sum_{j<p} lgamma(x - j/2)`, defined for `x > (p - 1) / 2`.
pub fn mvlgamma(self_: &Tensor, p: i64) -> Result<Tensor> {
    use crate::ops;
    if p < 1 {
        return Err(c10::Error::invalid("mvlgamma", "p has to be greater than or equal to 1"));
    }
    let x = if self_.dtype().is_floating_point() {
        self_.clone()
    } else {
        ops::to(self_, c10::ScalarType::default_float(), false, false, None)?
    };
    let bound = (p - 1) as f64 / 2.0;
    if ops::le_scalar(&x, c10::Scalar::Float(bound))?.to_vec::<bool>()?.into_iter().any(|b| b) {
        return Err(c10::Error::invalid("mvlgamma", format!("All elements must be greater than (p-1)/2 = {bound}")));
    }
    let mut acc = ops::full_like(
        &x,
        c10::Scalar::Float(p as f64 * (p - 1) as f64 / 4.0 * PI.ln()),
        None,
        None,
        None,
        None,
        None,
    )?;
    // As PyTorch: the p shifted arguments as one tensor along a new last dimension (a p too
    // large to hold fails to allocate instead of looping).
    let offsets = ops::mul_scalar(
        &ops::arange(c10::Scalar::Int(p), Some(x.dtype()), None, Some(x.device()), None)?,
        c10::Scalar::Float(-0.5),
    )?;
    let shifted = ops::add(&ops::unsqueeze(&x, -1)?, &offsets, c10::Scalar::Int(1))?;
    let sum = ops::sum_dim_intlist(&ops::lgamma(&shifted)?, Some(&[-1]), false, None)?;
    acc = ops::add(&acc, &sum, c10::Scalar::Int(1))?;
    Ok(acc)
}
