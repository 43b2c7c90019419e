//! The operator table (PyTorch's OpInfo): one entry per operator with its dtypes, how to build
//! sample inputs and, for elementwise operators, a scalar reference. Generic tests run every
//! entry over every dtype and sample layout:
//!
//! - **values**: elementwise entries against their f64 reference, at a tolerance of the dtype;
//! - **layouts**: the same call with non-contiguous copies of the inputs gives the same result;
//! - **broadcast**: binary entries with broadcast operands agree with the expanded operands;
//! - **edges**: empty and zero-dim samples succeed with the right shape, or fail with an error
//!   value when the entry says so, and nothing panics;
//! - **dtypes**: the result dtype follows the entry's rule (same, float-promoting, bool).
//!
//! Operator-specific semantics (index errors, reductions' keepdim, ...) are asserted by the
//! family tests in `aten/tests/ops/` and by the PyTorch parity cases.

use std::panic::{catch_unwind, AssertUnwindSafe};

use aten::{ops, Tensor};
use c10::{Result, Scalar, ScalarType};

use ScalarType::{Bool, BF16, F16, F32, F64, I32, I64, U8};

const FLOATS: &[ScalarType] = &[F32, F64, F16, BF16];
const FLOATS_INTS: &[ScalarType] = &[F32, F64, F16, BF16, I64, I32, U8];
const ALL: &[ScalarType] = &[F32, F64, F16, BF16, I64, I32, U8, Bool];
/// Floats and the signed integers: results that can be negative, which an unsigned dtype wraps.
const SIGNED: &[ScalarType] = &[F32, F64, F16, BF16, I64, I32];
const INTS: &[ScalarType] = &[I64, I32, U8];

/// The dtype of an entry's result for an input dtype.
#[derive(Clone, Copy, Debug)]
enum OutDtype {
    /// The input's dtype.
    Same,
    /// Integers and bool compute in the default float dtype.
    Float,
    /// Always bool.
    Bool,
    /// Bool and integers go to i64 (sums), floats stay.
    SumLike,
    /// Always i64.
    Long,
    /// Always f64.
    Double,
}

impl OutDtype {
    fn of(self, d: ScalarType) -> ScalarType {
        match self {
            OutDtype::Same => d,
            OutDtype::Float if d.is_floating_point() => d,
            OutDtype::Float => F32,
            OutDtype::Bool => Bool,
            OutDtype::SumLike if d.is_floating_point() => d,
            OutDtype::SumLike => I64,
            OutDtype::Long => I64,
            OutDtype::Double => F64,
        }
    }
}

/// The expected outcome of a call whose inputs have their first dimension narrowed to 0.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Empty {
    /// Succeeds (an empty or reduced-over-nothing result).
    Ok,
    /// Fails with an error value (e.g. a max over no elements).
    Err,
    /// Narrowing every input makes them inconsistent (e.g. a weight and an input); the edge is
    /// covered by the operator's family tests instead.
    Skip,
}

/// How the inputs of an entry are made, and what the result's shape is.
#[derive(Clone, Copy)]
enum Kind {
    /// One input; elementwise; values drawn from `lo..hi`.
    Unary { lo: f64, hi: f64 },
    /// Two inputs; elementwise with broadcasting; values drawn from `lo..hi` (the second
    /// avoids zero when `nonzero_rhs`).
    Binary { lo: f64, hi: f64, nonzero_rhs: bool },
    /// Inputs from a function of the dtype; the result shape is not checked generically.
    Custom(fn(ScalarType) -> Vec<Tensor>),
}

/// The f64 reference of an elementwise entry.
#[derive(Clone, Copy)]
enum Reference {
    None,
    Unary(fn(f64) -> f64),
    Binary(fn(f64, f64) -> f64),
}

type Call = fn(&[Tensor]) -> Result<Vec<Tensor>>;

struct OpInfo {
    name: &'static str,
    dtypes: &'static [ScalarType],
    kind: Kind,
    call: Call,
    reference: Reference,
    out: OutDtype,
    /// What the operator does when the first dimension of every input is 0.
    empty: Empty,
}

fn one(r: Result<Tensor>) -> Result<Vec<Tensor>> {
    r.map(|t| vec![t])
}

fn two(r: Result<(Tensor, Tensor)>) -> Result<Vec<Tensor>> {
    r.map(|(a, b)| vec![a, b])
}

macro_rules! unary {
    ($name:literal, $f:expr, $r:expr, $dtypes:expr, $out:ident, $lo:expr, $hi:expr) => {
        OpInfo {
            name: $name,
            dtypes: $dtypes,
            kind: Kind::Unary { lo: $lo, hi: $hi },
            call: |t| one($f(&t[0])),
            reference: Reference::Unary($r),
            out: OutDtype::$out,
            empty: Empty::Ok,
        }
    };
}

macro_rules! binary {
    ($name:literal, $f:expr, $r:expr, $dtypes:expr, $out:ident, $nz:expr) => {
        OpInfo {
            name: $name,
            dtypes: $dtypes,
            kind: Kind::Binary { lo: -4.0, hi: 4.0, nonzero_rhs: $nz },
            call: |t| one($f(&t[0], &t[1])),
            reference: Reference::Binary($r),
            out: OutDtype::$out,
            empty: Empty::Ok,
        }
    };
}

macro_rules! custom {
    ($name:literal, $dtypes:expr, $inputs:expr, $call:expr, $out:ident) => {
        custom!($name, $dtypes, $inputs, $call, $out, Ok)
    };
    ($name:literal, $dtypes:expr, $inputs:expr, $call:expr, $out:ident, $empty:ident) => {
        OpInfo {
            name: $name,
            dtypes: $dtypes,
            kind: Kind::Custom($inputs),
            call: $call,
            reference: Reference::None,
            out: OutDtype::$out,
            empty: Empty::$empty,
        }
    };
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn erf(x: f64) -> f64 {
    libm_erf(x)
}

/// erf by its series / continued fraction, good to ~1e-13 (the table's reference only).
fn libm_erf(x: f64) -> f64 {
    if x.abs() < 2.5 {
        let (mut sum, mut term, mut n) = (x, x, 0.0);
        while term.abs() > 1e-17 {
            n += 1.0;
            term *= -x * x / n;
            sum += term / (2.0 * n + 1.0);
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        // Continued fraction for erfc, evaluated bottom-up.
        let z = x.abs();
        let mut f = 0.0;
        for k in (1..60).rev() {
            f = k as f64 / 2.0 / (z + f);
        }
        let erfc = (-z * z).exp() / std::f64::consts::PI.sqrt() / (z + f);
        (1.0 - erfc).copysign(x)
    }
}

fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2))
}

fn round_half_even(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 {
        2.0 * (x / 2.0).round()
    } else {
        r
    }
}

fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    }
}

// ---- sample inputs for the custom entries --------------------------------------------------

fn randt(shape: &[i64], d: ScalarType, lo: f64, hi: f64, seed: u64) -> Tensor {
    let n: i64 = shape.iter().product();
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let v: Vec<f64> = (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            let x = lo + (hi - lo) * u;
            if d.is_floating_point() {
                (x * 64.0).round() / 64.0
            } else {
                x.round()
            }
        })
        .collect();
    let t = Tensor::from_vec(v, shape).unwrap();
    let t = if d == Bool { ops::ne_scalar(&t, Scalar::Float(0.0)).unwrap() } else { t };
    t.to(d).call().unwrap()
}

fn mat(d: ScalarType) -> Vec<Tensor> {
    vec![randt(&[3, 5], d, -3.0, 3.0, 7)]
}

fn batch(d: ScalarType) -> Vec<Tensor> {
    vec![randt(&[2, 3, 4], d, -3.0, 3.0, 11)]
}

fn pair_same(d: ScalarType) -> Vec<Tensor> {
    vec![randt(&[3, 4], d, -3.0, 3.0, 1), randt(&[3, 4], d, -3.0, 3.0, 2)]
}

fn triple_same(d: ScalarType) -> Vec<Tensor> {
    vec![randt(&[3, 4], d, -3.0, 3.0, 1), randt(&[3, 4], d, -3.0, 3.0, 2), randt(&[3, 4], d, 0.5, 3.0, 3)]
}

fn long(v: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len() as i64]).unwrap()
}

fn long2<const N: usize>(v: &[[i64; N]]) -> Tensor {
    Tensor::from_vec(v.iter().flatten().copied().collect(), &[v.len() as i64, N as i64]).unwrap()
}

// ---- the table ----------------------------------------------------------------------------

fn table() -> Vec<OpInfo> {
    vec![
        // Unary math.
        unary!("abs", ops::abs, f64::abs, FLOATS_INTS, Same, -4.0, 4.0),
        unary!("neg", ops::neg, |x: f64| -x, SIGNED, Same, -4.0, 4.0),
        unary!("sign", ops::sign, sign, FLOATS_INTS, Same, -4.0, 4.0),
        unary!("exp", ops::exp, f64::exp, FLOATS_INTS, Float, -4.0, 4.0),
        unary!("exp2", ops::exp2, f64::exp2, FLOATS_INTS, Float, -4.0, 4.0),
        unary!("expm1", ops::expm1, f64::exp_m1, FLOATS_INTS, Float, -4.0, 4.0),
        unary!("log", ops::log, f64::ln, FLOATS_INTS, Float, 0.25, 8.0),
        unary!("log2", ops::log2, f64::log2, FLOATS_INTS, Float, 0.25, 8.0),
        unary!("log10", ops::log10, f64::log10, FLOATS_INTS, Float, 0.25, 8.0),
        unary!("log1p", ops::log1p, f64::ln_1p, FLOATS_INTS, Float, 0.0, 8.0),
        unary!("sqrt", ops::sqrt, f64::sqrt, FLOATS_INTS, Float, 0.0, 8.0),
        unary!("rsqrt", ops::rsqrt, |x: f64| 1.0 / x.sqrt(), FLOATS, Float, 0.25, 8.0),
        unary!("reciprocal", ops::reciprocal, |x: f64| 1.0 / x, FLOATS, Float, 0.25, 8.0),
        unary!("sin", ops::sin, f64::sin, FLOATS_INTS, Float, -4.0, 4.0),
        unary!("cos", ops::cos, f64::cos, FLOATS_INTS, Float, -4.0, 4.0),
        unary!("tan", ops::tan, f64::tan, FLOATS, Float, -1.2, 1.2),
        unary!("asin", ops::asin, f64::asin, FLOATS, Float, -1.0, 1.0),
        unary!("acos", ops::acos, f64::acos, FLOATS, Float, -1.0, 1.0),
        unary!("atan", ops::atan, f64::atan, FLOATS_INTS, Float, -4.0, 4.0),
        unary!("sinh", ops::sinh, f64::sinh, FLOATS, Float, -4.0, 4.0),
        unary!("cosh", ops::cosh, f64::cosh, FLOATS, Float, -4.0, 4.0),
        unary!("tanh", ops::tanh, f64::tanh, FLOATS_INTS, Float, -4.0, 4.0),
        unary!("asinh", ops::asinh, f64::asinh, FLOATS, Float, -4.0, 4.0),
        unary!("acosh", ops::acosh, f64::acosh, FLOATS, Float, 1.0, 6.0),
        unary!("atanh", ops::atanh, f64::atanh, FLOATS, Float, -0.9, 0.9),
        unary!("sigmoid", ops::sigmoid, sigmoid, FLOATS_INTS, Float, -6.0, 6.0),
        unary!("erf", ops::erf, erf, FLOATS_INTS, Float, -3.0, 3.0),
        unary!("erfc", ops::erfc, |x| 1.0 - erf(x), FLOATS, Float, -3.0, 3.0),
        unary!("floor", ops::floor, f64::floor, FLOATS_INTS, Same, -4.0, 4.0),
        unary!("ceil", ops::ceil, f64::ceil, FLOATS_INTS, Same, -4.0, 4.0),
        unary!("round", ops::round, round_half_even, FLOATS_INTS, Same, -4.0, 4.0),
        unary!("trunc", ops::trunc, f64::trunc, FLOATS_INTS, Same, -4.0, 4.0),
        unary!("frac", ops::frac, f64::fract, FLOATS, Same, -4.0, 4.0),
        unary!("isnan", ops::isnan, |_| 0.0, ALL, Bool, -4.0, 4.0),
        // Activations.
        unary!("relu", ops::relu, |x: f64| x.max(0.0), FLOATS_INTS, Same, -4.0, 4.0),
        unary!("gelu", |t| ops::gelu(t, "none"), gelu, FLOATS, Same, -4.0, 4.0),
        unary!("silu", ops::silu, |x| x * sigmoid(x), FLOATS, Same, -4.0, 4.0),
        unary!("mish", ops::mish, |x: f64| x * (x.exp().ln_1p()).tanh(), FLOATS, Same, -4.0, 4.0),
        unary!("hardsigmoid", ops::hardsigmoid, |x: f64| (x / 6.0 + 0.5).clamp(0.0, 1.0), FLOATS, Same, -4.0, 4.0),
        unary!("hardswish", ops::hardswish, |x: f64| x * (x + 3.0).clamp(0.0, 6.0) / 6.0, FLOATS, Same, -4.0, 4.0),
        unary!(
            "leaky_relu",
            |t| ops::leaky_relu(t, Scalar::Float(0.01)),
            |x: f64| if x > 0.0 { x } else { 0.01 * x },
            FLOATS,
            Same,
            -4.0,
            4.0
        ),
        unary!(
            "elu",
            |t| ops::elu(t, Scalar::Int(1), Scalar::Int(1), Scalar::Int(1)),
            |x: f64| if x > 0.0 { x } else { x.exp_m1() },
            FLOATS,
            Same,
            -4.0,
            4.0
        ),
        unary!(
            "softplus",
            |t| ops::softplus(t, Scalar::Int(1), Scalar::Int(20)),
            |x: f64| x.exp().ln_1p(),
            FLOATS,
            Same,
            -4.0,
            4.0
        ),
        unary!(
            "hardtanh",
            |t| ops::hardtanh(t, Scalar::Int(-1), Scalar::Int(1)),
            |x: f64| x.clamp(-1.0, 1.0),
            FLOATS,
            Same,
            -4.0,
            4.0
        ),
        unary!(
            "clamp",
            |t| ops::clamp(t, Some(Scalar::Float(-1.5)), Some(Scalar::Float(2.0))),
            |x: f64| x.clamp(-1.5, 2.0),
            FLOATS,
            Same,
            -4.0,
            4.0
        ),
        unary!("logit", |t| ops::logit(t, None), |x: f64| (x / (1.0 - x)).ln(), FLOATS, Float, 0.05, 0.95),
        // Binary.
        binary!("add.Tensor", |a, b| ops::add(a, b, Scalar::Int(1)), |a, b| a + b, FLOATS_INTS, Same, false),
        binary!("sub.Tensor", |a, b| ops::sub(a, b, Scalar::Int(1)), |a, b| a - b, SIGNED, Same, false),
        binary!("mul.Tensor", ops::mul, |a, b| a * b, FLOATS_INTS, Same, false),
        binary!("div.Tensor", ops::div, |a, b| a / b, FLOATS, Same, true),
        binary!("maximum", ops::maximum, f64::max, FLOATS_INTS, Same, false),
        binary!("minimum", ops::minimum, f64::min, FLOATS_INTS, Same, false),
        binary!("atan2", ops::atan2, f64::atan2, FLOATS, Same, false),
        binary!("fmod.Tensor", ops::fmod, |a, b| a % b, FLOATS, Same, true),
        binary!("remainder.Tensor", ops::remainder, |a, b| a - b * (a / b).floor(), FLOATS, Same, true),
        binary!("eq.Tensor", ops::eq, |a, b| (a == b) as u8 as f64, FLOATS_INTS, Bool, false),
        binary!("lt.Tensor", ops::lt, |a, b| (a < b) as u8 as f64, FLOATS_INTS, Bool, false),
        binary!("ge.Tensor", ops::ge, |a, b| (a >= b) as u8 as f64, FLOATS_INTS, Bool, false),
        binary!("logical_and", ops::logical_and, |a, b| (a != 0.0 && b != 0.0) as u8 as f64, ALL, Bool, false),
        // Ternary / pointwise with more inputs.
        custom!(
            "where.self",
            FLOATS_INTS,
            |d| {
                let mut v = pair_same(d);
                v.insert(0, randt(&[3, 4], Bool, -1.0, 1.0, 5));
                v
            },
            |t| one(ops::where_self(&t[0], &t[1], &t[2])),
            Same
        ),
        custom!("lerp.Scalar", FLOATS, pair_same, |t| one(ops::lerp(&t[0], &t[1], Scalar::Float(0.3))), Same),
        custom!("addcmul", FLOATS, triple_same, |t| one(ops::addcmul(&t[0], &t[1], &t[2], Scalar::Float(0.5))), Same),
        custom!("addcdiv", FLOATS, triple_same, |t| one(ops::addcdiv(&t[0], &t[1], &t[2], Scalar::Float(0.5))), Same),
        custom!("pow.Tensor_Scalar", FLOATS, mat, |t| one(ops::pow_tensor_scalar(&t[0], Scalar::Int(2))), Same),
        custom!(
            "masked_fill.Scalar",
            FLOATS_INTS,
            |d| vec![randt(&[3, 4], d, -3.0, 3.0, 1), randt(&[3, 4], Bool, -1.0, 1.0, 9)],
            |t| one(ops::masked_fill(&t[0], &t[1], Scalar::Int(1))),
            Same
        ),
        // Reductions.
        custom!("sum", ALL, mat, |t| one(ops::sum(&t[0], None)), SumLike),
        custom!(
            "sum.dim_IntList",
            FLOATS_INTS,
            batch,
            |t| one(ops::sum_dim_intlist(&t[0], Some(&[1]), true, None)),
            SumLike
        ),
        custom!("mean.dim", FLOATS, batch, |t| one(ops::mean_dim(&t[0], Some(&[0, 2]), false, None)), Same),
        custom!("prod.dim_int", FLOATS_INTS, mat, |t| one(ops::prod(&t[0], 1, false, None)), SumLike),
        custom!(
            "var.correction",
            FLOATS,
            batch,
            |t| one(ops::var(&t[0], Some(&[2]), Some(Scalar::Int(1)), false)),
            Same
        ),
        // The empty edge reduces `[0, n]` over its non-empty dim 1: empty values and indices.
        custom!("max.dim", FLOATS_INTS, mat, |t| two(ops::max_dim(&t[0], 1, false)), Same),
        custom!("min.dim", FLOATS_INTS, mat, |t| two(ops::min_dim(&t[0], 1, true)), Same),
        custom!("amax", FLOATS_INTS, batch, |t| one(ops::amax(&t[0], &[0, 1], false)), Same, Err),
        custom!("argmax", FLOATS_INTS, mat, |t| one(ops::argmax(&t[0], Some(0), false)), Long, Err),
        custom!("logsumexp", FLOATS, batch, |t| one(ops::logsumexp(&t[0], &[-1], false)), Same),
        custom!("cumsum", FLOATS_INTS, mat, |t| one(ops::cumsum(&t[0], 1, None)), SumLike),
        custom!("softmax.int", FLOATS, batch, |t| one(ops::softmax(&t[0], -1, None)), Same),
        custom!("log_softmax.int", FLOATS, batch, |t| one(ops::log_softmax(&t[0], 1, None)), Same),
        // Pointwise additions.
        unary!("square", ops::square, |x: f64| x * x, FLOATS_INTS, Same, -4.0, 4.0),
        unary!("sgn", ops::sgn, sign, FLOATS_INTS, Same, -4.0, 4.0),
        unary!(
            "erfinv",
            ops::erfinv,
            |y: f64| {
                // Newton on erf(x) = y from a rough start; the reference only.
                let mut x = y;
                for _ in 0..60 {
                    x -= (erf(x) - y) / (2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp());
                }
                x
            },
            &[F32, F64],
            Float,
            -0.9,
            0.9
        ),
        unary!("isinf", ops::isinf, |_| 0.0, ALL, Bool, -4.0, 4.0),
        unary!("isfinite", ops::isfinite, |_| 1.0, ALL, Bool, -4.0, 4.0),
        unary!("nan_to_num", |t| ops::nan_to_num(t, None, None, None), |x| x, FLOATS, Same, -4.0, 4.0),
        unary!("relu6", ops::relu6, |x: f64| x.clamp(0.0, 6.0), FLOATS, Same, -8.0, 8.0),
        unary!(
            "selu",
            ops::selu,
            |x: f64| { 1.050_700_987_355_480_5 * if x > 0.0 { x } else { 1.673_263_242_354_377_3 * x.exp_m1() } },
            FLOATS,
            Same,
            -4.0,
            4.0
        ),
        unary!(
            "celu",
            |t| ops::celu(t, Scalar::Float(1.0)),
            |x: f64| if x > 0.0 { x } else { x.exp_m1() },
            FLOATS,
            Same,
            -4.0,
            4.0
        ),
        unary!("log_sigmoid", ops::log_sigmoid, |x: f64| sigmoid(x).ln(), FLOATS, Same, -6.0, 6.0),
        unary!("clamp_min", |t| ops::clamp_min(t, Scalar::Float(0.5)), |x: f64| x.max(0.5), FLOATS, Same, -4.0, 4.0),
        binary!("hypot", ops::hypot, f64::hypot, FLOATS, Same, false),
        binary!("copysign.Tensor", ops::copysign, f64::copysign, FLOATS, Float, false),
        binary!("fmax", ops::fmax, f64::max, FLOATS_INTS, Same, false),
        binary!("fmin", ops::fmin, f64::min, FLOATS_INTS, Same, false),
        binary!("floor_divide", ops::floor_divide, |a, b| (a / b).floor(), FLOATS, Same, true),
        binary!("bitwise_and.Tensor", ops::bitwise_and, |a, b| ((a as i64) & (b as i64)) as f64, INTS, Same, false),
        custom!("glu", FLOATS, batch, |t| one(ops::glu(&t[0], 2)), Same),
        custom!("var_mean", FLOATS, batch, |t| two(ops::var_mean(&t[0], true)), Same),
        // Shape.
        custom!("cat", ALL, pair_same, |t| one(ops::cat(t, 1)), Same),
        custom!("stack", ALL, pair_same, |t| one(ops::stack(t, 0)), Same),
        custom!("split.Tensor", ALL, batch, |t| ops::split(&t[0], 2, 2), Same),
        custom!("chunk", ALL, batch, |t| ops::chunk(&t[0], 2, 1), Same),
        custom!("flip", ALL, batch, |t| one(ops::flip(&t[0], &[0, 2])), Same),
        custom!("roll", ALL, batch, |t| one(ops::roll(&t[0], &[1, -2], &[1, 2])), Same),
        custom!("tril", ALL, batch, |t| one(ops::tril(&t[0], 0)), Same),
        custom!("triu", ALL, batch, |t| one(ops::triu(&t[0], 1)), Same),
        custom!("repeat", ALL, mat, |t| one(ops::repeat(&t[0], &[2, 1, 3])), Same),
        custom!("tile", ALL, mat, |t| one(ops::tile(&t[0], &[2, 2])), Same),
        custom!("rot90", ALL, mat, |t| one(ops::rot90(&t[0], 1, &[0, 1])), Same),
        custom!("diag", ALL, mat, |t| one(ops::diag(&t[0], 0)), Same),
        custom!(
            "repeat_interleave.self_int",
            ALL,
            mat,
            |t| one(ops::repeat_interleave_self_int(&t[0], 2, Some(1), None)),
            Same
        ),
        custom!("pad", FLOATS, batch, |t| one(ops::pad(&t[0], &[1, 2], "constant", Some(0.5))), Same),
        custom!("pad (reflect)", FLOATS, batch, |t| one(ops::pad(&t[0], &[2, 1], "reflect", None)), Same, Skip),
        // Indexing.
        custom!("index_select", ALL, mat, |t| one(ops::index_select(&t[0], 1, &long(&[4, 0, 4]))), Same),
        custom!(
            "gather",
            ALL,
            mat,
            |t| one(ops::gather(&t[0], 1, &long2(&[[0, 2], [1, 1], [4, 3]]), false)),
            Same,
            Skip
        ),
        custom!(
            "scatter_add",
            FLOATS_INTS,
            pair_same,
            |t| { one(ops::scatter_add(&t[0], 1, &long2(&[[0, 2, 2, 1], [3, 3, 0, 1], [1, 0, 2, 3]]), &t[1])) },
            Same,
            Skip
        ),
        custom!("nonzero", ALL, mat, |t| one(ops::nonzero(&t[0])), Long),
        custom!(
            "masked_select",
            ALL,
            |d| vec![randt(&[3, 4], d, -3.0, 3.0, 1), randt(&[3, 4], Bool, -1.0, 1.0, 4)],
            |t| one(ops::masked_select(&t[0], &t[1])),
            Same
        ),
        custom!("take", ALL, mat, |t| one(ops::take(&t[0], &long(&[0, 14, 7]))), Same, Err),
        custom!(
            "embedding",
            FLOATS,
            |d| vec![randt(&[6, 3], d, -1.0, 1.0, 3)],
            |t| { one(ops::embedding(&t[0], &long2(&[[0, 5], [2, 2]]), -1, false, false)) },
            Same,
            Skip
        ),
        // Sorting and order statistics.
        custom!("sort", FLOATS_INTS, batch, |t| two(ops::sort(&t[0], -1, true)), Same),
        custom!("argsort", FLOATS_INTS, batch, |t| one(ops::argsort(&t[0], 1, false)), Long),
        custom!("topk", FLOATS_INTS, batch, |t| two(ops::topk(&t[0], 2, -1, true, true)), Same),
        custom!("kthvalue", FLOATS_INTS, batch, |t| two(ops::kthvalue(&t[0], 2, -1, false)), Same),
        custom!("cummax", FLOATS_INTS, batch, |t| two(ops::cummax(&t[0], 1)), Same),
        custom!("median", FLOATS_INTS, batch, |t| one(ops::median(&t[0])), Same, Skip),
        custom!(
            "norm.ScalarOpt_dim",
            FLOATS,
            batch,
            |t| one(ops::norm_scalaropt_dim(&t[0], Some(Scalar::Int(2)), &[1], false)),
            Same
        ),
        // Linear algebra.
        custom!(
            "mm",
            FLOATS,
            |d| vec![randt(&[3, 5], d, -2.0, 2.0, 1), randt(&[5, 4], d, -2.0, 2.0, 2)],
            |t| one(ops::mm(&t[0], &t[1])),
            Same,
            Skip
        ),
        custom!(
            "bmm",
            FLOATS,
            |d| vec![randt(&[2, 3, 5], d, -2.0, 2.0, 1), randt(&[2, 5, 4], d, -2.0, 2.0, 2)],
            |t| one(ops::bmm(&t[0], &t[1])),
            Same
        ),
        custom!(
            "matmul",
            FLOATS,
            |d| vec![randt(&[2, 3, 5], d, -2.0, 2.0, 1), randt(&[5, 4], d, -2.0, 2.0, 2)],
            |t| one(ops::matmul(&t[0], &t[1])),
            Same,
            Skip
        ),
        custom!(
            "addmm",
            FLOATS,
            |d| vec![randt(&[3, 4], d, -2.0, 2.0, 3), randt(&[3, 5], d, -2.0, 2.0, 1), randt(&[5, 4], d, -2.0, 2.0, 2)],
            |t| { one(ops::addmm(&t[0], &t[1], &t[2], Scalar::Float(0.5), Scalar::Int(2))) },
            Same,
            Skip
        ),
        custom!(
            "linear",
            FLOATS,
            |d| vec![randt(&[3, 5], d, -2.0, 2.0, 1), randt(&[4, 5], d, -2.0, 2.0, 2)],
            |t| one(ops::linear(&t[0], &t[1], None)),
            Same,
            Skip
        ),
        custom!(
            "outer",
            FLOATS,
            |d| vec![randt(&[3], d, -2.0, 2.0, 1), randt(&[4], d, -2.0, 2.0, 2)],
            |t| one(ops::outer(&t[0], &t[1])),
            Same
        ),
        custom!(
            "dot",
            &[F32, F64],
            |d| vec![randt(&[5], d, -2.0, 2.0, 1), randt(&[5], d, -2.0, 2.0, 2)],
            |t| one(ops::dot(&t[0], &t[1])),
            Same
        ),
        custom!(
            "einsum",
            FLOATS,
            |d| vec![randt(&[2, 3, 5], d, -2.0, 2.0, 1), randt(&[2, 5, 4], d, -2.0, 2.0, 2)],
            |t| one(ops::einsum("bij,bjk->bik", t, None)),
            Same
        ),
        // Neural-network functionals.
        custom!(
            "conv2d",
            FLOATS,
            |d| vec![randt(&[2, 4, 6, 5], d, -1.0, 1.0, 1), randt(&[6, 2, 3, 3], d, -1.0, 1.0, 2)],
            |t| { one(ops::conv2d(&t[0], &t[1], None, &[1], &[1], &[1], 2)) },
            Same,
            Skip
        ),
        custom!(
            "conv1d",
            FLOATS,
            |d| vec![randt(&[2, 3, 9], d, -1.0, 1.0, 1), randt(&[4, 3, 3], d, -1.0, 1.0, 2)],
            |t| { one(ops::conv1d(&t[0], &t[1], None, &[2], &[1], &[1], 1)) },
            Same,
            Skip
        ),
        custom!(
            "max_pool2d",
            FLOATS,
            |d| vec![randt(&[2, 3, 6, 5], d, -1.0, 1.0, 1)],
            |t| { one(ops::max_pool2d(&t[0], &[2, 2], &[2, 2], &[0, 0], &[1, 1], false)) },
            Same,
            Skip
        ),
        custom!(
            "avg_pool2d",
            FLOATS,
            |d| vec![randt(&[2, 3, 6, 5], d, -1.0, 1.0, 1)],
            |t| { one(ops::avg_pool2d(&t[0], &[3, 3], &[2, 2], &[1, 1], false, true, None)) },
            Same,
            Skip
        ),
        custom!(
            "adaptive_avg_pool2d",
            FLOATS,
            |d| vec![randt(&[2, 3, 7, 5], d, -1.0, 1.0, 1)],
            |t| one(ops::adaptive_avg_pool2d(&t[0], &[3, 2])),
            Same,
            Skip
        ),
        custom!(
            "upsample_nearest2d.vec",
            FLOATS,
            |d| vec![randt(&[1, 2, 3, 4], d, -1.0, 1.0, 1)],
            |t| one(ops::upsample_nearest2d(&t[0], Some(&[6, 6]), None)),
            Same,
            Skip
        ),
        custom!(
            "pixel_shuffle",
            FLOATS,
            |d| vec![randt(&[1, 8, 2, 3], d, -1.0, 1.0, 1)],
            |t| one(ops::pixel_shuffle(&t[0], 2)),
            Same,
            Skip
        ),
        custom!("layer_norm", FLOATS, batch, |t| one(ops::layer_norm(&t[0], &[4], None, None, 1e-5, true)), Same),
        custom!(
            "group_norm",
            FLOATS,
            |d| vec![randt(&[2, 4, 3], d, -1.0, 1.0, 1)],
            |t| one(ops::group_norm(&t[0], 2, None, None, 1e-5, true)),
            Same,
            Skip
        ),
        custom!(
            "scaled_dot_product_attention",
            FLOATS,
            |d| { (1..4).map(|s| randt(&[2, 3, 4], d, -1.0, 1.0, s)).collect() },
            |t| one(ops::scaled_dot_product_attention(&t[0], &t[1], &t[2], None, 0.0, true, None, false)),
            Same,
            Skip
        ),
        // Losses (mean reduction).
        custom!("mse_loss", FLOATS, pair_same, |t| one(ops::mse_loss(&t[0], &t[1], 1)), Same),
        custom!("l1_loss", FLOATS, pair_same, |t| one(ops::l1_loss(&t[0], &t[1], 1)), Same),
        custom!("smooth_l1_loss", FLOATS, pair_same, |t| one(ops::smooth_l1_loss(&t[0], &t[1], 1, 1.0)), Same),
        custom!("huber_loss", FLOATS, pair_same, |t| one(ops::huber_loss(&t[0], &t[1], 2, 1.0)), Same),
        custom!("kl_div", FLOATS, pair_same, |t| one(ops::kl_div(&t[0], &t[1], 1, true)), Same),
        custom!(
            "binary_cross_entropy_with_logits",
            FLOATS,
            pair_same,
            |t| { one(ops::binary_cross_entropy_with_logits(&t[0], &ops::sigmoid(&t[1])?, None, None, 1)) },
            Same
        ),
        custom!(
            "cross_entropy_loss",
            FLOATS,
            |d| vec![randt(&[3, 5], d, -2.0, 2.0, 1)],
            |t| { one(ops::cross_entropy_loss(&t[0], &long(&[4, 0, 2]), None, 1, -100, 0.1)) },
            Same,
            Skip
        ),
        custom!(
            "nll_loss",
            FLOATS,
            |d| vec![randt(&[3, 5], d, -2.0, 0.0, 1)],
            |t| { one(ops::nll_loss(&t[0], &long(&[4, 0, 2]), None, 2, -100)) },
            Same,
            Skip
        ),
        // Conversions and copies.
        custom!("_to_copy", ALL, mat, |t| one(t[0].to(F64).call()), Double),
    ]
}

// ---- the generic checks --------------------------------------------------------------------

fn tolerance(d: ScalarType) -> (f64, f64) {
    match d {
        F16 => (2e-3, 2e-3),
        BF16 => (1.6e-2, 1.6e-2),
        F32 => (1.3e-6, 1e-5),
        F64 => (1e-10, 1e-10),
        _ => (0.0, 0.0),
    }
}

fn values(t: &Tensor) -> Vec<f64> {
    t.to(F64).call().and_then(|c| c.to_vec::<f64>()).expect("readable result")
}

fn close(name: &str, what: &str, got: &Tensor, want: &Tensor, d: ScalarType) {
    assert_eq!(got.sizes(), want.sizes(), "{name} ({what}, {d:?}): shape");
    assert_eq!(got.dtype(), want.dtype(), "{name} ({what}, {d:?}): dtype");
    let (rtol, atol) = tolerance(got.dtype());
    for (i, (a, b)) in values(got).iter().zip(values(want)).enumerate() {
        let ok = (a.is_nan() && b.is_nan()) || a == &b || (a - b).abs() <= atol + rtol * b.abs();
        assert!(ok, "{name} ({what}, {d:?}): element {i}: {a} vs {b}");
    }
}

/// The same values with a non-contiguous layout: the last two dimensions transposed in memory,
/// or every other element of a twice-as-long buffer for one dimension.
fn noncontig(t: &Tensor) -> Tensor {
    match t.dim() {
        0 => t.clone(),
        1 => {
            let n = t.sizes()[0];
            let buf = ops::zeros(&[2 * n], Some(t.dtype()), None, None, None).unwrap();
            let view = ops::slice(&buf, 0, Some(0), Some(2 * n), 2).unwrap();
            ops::copy_(&view, t, false).unwrap();
            assert!(!view.is_contiguous() || n <= 1);
            view
        }
        n => {
            let (a, b) = (n as i64 - 1, n as i64 - 2);
            let tt = ops::transpose(t, a, b).unwrap().contiguous().call().unwrap();
            ops::transpose(&tt, a, b).unwrap()
        }
    }
}

fn run(op: &OpInfo, args: &[Tensor]) -> Result<Vec<Tensor>> {
    match catch_unwind(AssertUnwindSafe(|| (op.call)(args))) {
        Ok(r) => r,
        Err(_) => {
            panic!("{} panicked on inputs {:?}", op.name, args.iter().map(|t| t.sizes().to_vec()).collect::<Vec<_>>())
        }
    }
}

fn elementwise_samples(kind: Kind, d: ScalarType) -> Vec<(&'static str, Vec<Tensor>)> {
    let (lo, hi) = match kind {
        Kind::Unary { lo, hi } | Kind::Binary { lo, hi, .. } => (lo, hi),
        Kind::Custom(_) => unreachable!(),
    };
    // Integer dtypes cannot hold negative values for u8, and ranges below 1 round to 0.
    let (lo, hi) = if d == U8 { (lo.max(0.0), hi.max(1.0)) } else { (lo, hi) };
    let r = |shape: &[i64], seed| randt(shape, d, lo, hi, seed);
    let rhs = |shape: &[i64], seed| {
        let t = r(shape, seed);
        if matches!(kind, Kind::Binary { nonzero_rhs: true, .. }) {
            // Shift zeros away: where t == 0 put 1.
            let z = ops::eq_scalar(&t, Scalar::Int(0)).unwrap();
            ops::masked_fill(&t, &z, Scalar::Int(1)).unwrap()
        } else {
            t
        }
    };
    match kind {
        Kind::Unary { .. } => vec![
            ("matrix", vec![r(&[4, 5], 1)]),
            ("3-d", vec![r(&[2, 3, 4], 2)]),
            ("zero-dim", vec![r(&[], 3)]),
            ("empty", vec![r(&[0, 3], 4)]),
        ],
        _ => vec![
            ("same shape", vec![r(&[4, 5], 1), rhs(&[4, 5], 2)]),
            ("broadcast row", vec![r(&[4, 5], 3), rhs(&[5], 4)]),
            ("broadcast both", vec![r(&[3, 1], 5), rhs(&[1, 4], 6)]),
            ("zero-dim rhs", vec![r(&[2, 3], 7), rhs(&[], 8)]),
            ("empty", vec![r(&[0, 4], 9), rhs(&[4], 10)]),
        ],
    }
}

fn reference_result(op: &OpInfo, args: &[Tensor], d: ScalarType, got: &Tensor) -> Option<Tensor> {
    let out_dtype = op.out.of(d);
    let shape = got.sizes().to_vec();
    let v: Vec<f64> = match op.reference {
        Reference::None => return None,
        Reference::Unary(f) => values(&args[0]).into_iter().map(f).collect(),
        Reference::Binary(f) => {
            let a = values(&args[0].expand(&shape).call().unwrap().contiguous().call().unwrap());
            let b = values(&args[1].expand(&shape).call().unwrap().contiguous().call().unwrap());
            a.iter().zip(&b).map(|(x, y)| f(*x, *y)).collect()
        }
    };
    // Integer-dtype entries only use formulas that are exact on their inputs, so the f64 result
    // converts to the output dtype without rounding.
    Some(Tensor::from_vec(v, &shape).unwrap().to(out_dtype).call().unwrap())
}

#[test]
fn every_entry_is_registered_with_the_dispatcher() {
    let d = aten::dispatcher();
    for op in table() {
        // An entry may be a variant of an operator ("pad (reflect)"): the schema name comes first.
        let schema = op.name.split(" (").next().unwrap_or(op.name);
        assert!(d.find_schema(schema).is_ok(), "{schema} is not a registered operator");
    }
}

#[test]
fn elementwise_values_layouts_and_broadcasting() {
    for op in table() {
        if matches!(op.kind, Kind::Custom(_)) {
            continue;
        }
        for &d in op.dtypes {
            for (what, args) in elementwise_samples(op.kind, d) {
                let got = run(&op, &args).unwrap_or_else(|e| panic!("{} ({what}, {d:?}): {e}", op.name));
                let got = &got[0];
                assert_eq!(got.dtype(), op.out.of(d), "{} ({what}, {d:?}): result dtype", op.name);
                let shape = args.iter().skip(1).fold(args[0].sizes().to_vec(), |s, t| {
                    aten::native::tensor_iterator::broadcast_shapes("t", &s, t.sizes()).unwrap().to_vec()
                });
                assert_eq!(got.sizes(), &shape[..], "{} ({what}, {d:?}): result shape", op.name);
                if let Some(want) = reference_result(&op, &args, d, got) {
                    // Low-precision inputs were rounded before the reference saw them, so the
                    // reference is of the same inputs; tolerance is of the result dtype.
                    close(op.name, what, got, &want, d);
                }
                let nc: Vec<Tensor> = args.iter().map(noncontig).collect();
                let got_nc = run(&op, &nc).unwrap_or_else(|e| panic!("{} (non-contiguous {what}): {e}", op.name));
                close(op.name, &format!("non-contiguous {what}"), &got_nc[0], got, d);
                if let Kind::Binary { .. } = op.kind {
                    let expanded: Vec<Tensor> =
                        args.iter().map(|t| t.expand(&shape).call().unwrap().contiguous().call().unwrap()).collect();
                    let got_x = run(&op, &expanded).unwrap();
                    close(op.name, &format!("expanded {what}"), &got_x[0], got, d);
                }
            }
        }
    }
}

#[test]
fn custom_entries_layouts_dtypes_and_edges() {
    let mut bad = Vec::new();
    for op in table() {
        let Kind::Custom(inputs) = op.kind else { continue };
        for &d in op.dtypes {
            let args = inputs(d);
            let got = run(&op, &args).unwrap_or_else(|e| panic!("{} ({d:?}): {e}", op.name));
            assert_eq!(got[0].dtype(), op.out.of(d), "{} ({d:?}): result dtype", op.name);
            let nc: Vec<Tensor> = args.iter().map(noncontig).collect();
            let got_nc = run(&op, &nc).unwrap_or_else(|e| panic!("{} (non-contiguous, {d:?}): {e}", op.name));
            assert_eq!(got.len(), got_nc.len());
            for (a, b) in got_nc.iter().zip(&got) {
                close(op.name, "non-contiguous", a, b, d);
            }
            // Empty inputs: the first dimension of every input set to 0 when shapes allow.
            let empty: Vec<Tensor> =
                args.iter().map(|t| if t.dim() == 0 { t.clone() } else { ops::narrow(t, 0, 0, 0).unwrap() }).collect();
            match (run(&op, &empty), op.empty) {
                (_, Empty::Skip) => {}
                (Ok(outs), Empty::Ok) => {
                    assert_eq!(outs[0].dtype(), op.out.of(d), "{} (empty, {d:?}): result dtype", op.name);
                }
                (Err(_), Empty::Err) => {}
                (Ok(_), Empty::Err) => bad.push(format!("{} ({d:?}): empty input should be an error", op.name)),
                (Err(e), _) => bad.push(format!("{} (empty, {d:?}): unexpected error {e}", op.name)),
            }
        }
    }
    assert!(bad.is_empty(), "empty-input expectations failed:\n{}", bad.join("\n"));
}

#[test]
fn integer_and_bool_dtype_lists_are_honest() {
    // Entries that do not list integer dtypes must reject or promote them without panicking.
    for op in table() {
        for &d in INTS {
            if op.dtypes.contains(&d) {
                continue;
            }
            let args: Vec<Tensor> = match op.kind {
                Kind::Custom(inputs) => inputs(d),
                k => elementwise_samples(k, d).swap_remove(0).1,
            };
            let _ = run(&op, &args);
        }
    }
}

/// Entries whose gradient PyTorch does not define at the sampled points or at all (integer,
/// boolean or index results are skipped automatically): none are exempt today, so a missing
/// formula fails this test.
const NOT_DIFFERENTIABLE: &[&str] = &[];

#[test]
fn gradcheck_every_differentiable_entry() {
    use autograd::TensorAutograd;
    let mut bad = Vec::new();
    let mut checked = 0;
    for op in table() {
        if !op.dtypes.contains(&F64) || NOT_DIFFERENTIABLE.contains(&op.name) {
            continue;
        }
        // Elementwise entries get unquantised values (the table's samples are exact in every
        // dtype, which puts some on the jumps of floor, sign, relu, ...).
        let smooth = |shape: &[i64], lo: f64, hi: f64, seed: u64| -> Tensor {
            let g = aten::Generator::new(c10::Device::CPU);
            g.manual_seed(seed);
            let u = ops::rand_generator(shape, Some(&g), Some(F64), None, None, None).unwrap();
            u.mul(Scalar::Float(hi - lo)).unwrap().add(Scalar::Float(lo)).call().unwrap()
        };
        let args: Vec<Tensor> = match op.kind {
            Kind::Custom(inputs) => inputs(F64),
            Kind::Unary { lo, hi } => vec![smooth(&[3, 4], lo, hi, 1)],
            Kind::Binary { lo, hi, .. } => vec![smooth(&[3, 4], lo, hi, 2), smooth(&[4], lo, hi, 3)],
        };
        let leaves: Vec<Tensor> = args
            .iter()
            .map(|t| if t.dtype() == F64 { t.detach().requires_grad_(true).unwrap() } else { t.clone() })
            .collect();
        let call = op.call;
        let Ok(outs) = call(&leaves) else {
            bad.push(format!("{}: the call fails with inputs that require grad", op.name));
            continue;
        };
        if !outs.iter().any(|o| o.dtype().is_floating_point() && o.requires_grad()) {
            continue;
        }
        // Only floating outputs are differentiated.
        let f = move |t: &[Tensor]| -> Result<Vec<Tensor>> {
            Ok(call(t)?.into_iter().filter(|o| o.dtype().is_floating_point()).collect())
        };
        checked += 1;
        if let Err(e) = autograd::gradcheck(&f, &leaves, autograd::GradcheckOptions::default()) {
            bad.push(format!("{}: {e}", op.name));
        }
    }
    assert!(bad.is_empty(), "gradcheck failed for {} of {checked} entries:\n{}", bad.len(), bad.join("\n"));
}
