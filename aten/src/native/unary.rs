//! Unary elementwise operators on the TensorIterator: `neg`, `abs` and the sign family by hand,
//! the floating functions (`exp`, `sin`, `sigmoid`, ...) one `float_unary!` row each.

use c10::{Element, Error, Result, ScalarType};

use crate::native::cpu::loops::{unary_kernel_loop, unary_loop, unary_wide_loop, Kernel1};
use crate::native::cpu::vec::{
    erf_f32, erfc_f32, exp_f32, expm1_f32, gelu_f32, gelu_near_f32, gelu_tanh_f32, log1p_f32, log_f32, tanh_f32,
    times_sigmoid_f32,
};
use crate::native::opmath::OpMath;
use crate::native::stub;
use crate::native::tensor_iterator::{TensorIterator, TensorIteratorConfig};
use crate::Tensor;

fn run_unary(
    op: &'static str,
    device_kernel: &'static crate::native::stub::Kernel,
    out: Option<&Tensor>,
    a: &Tensor,
    kernel: impl FnOnce(&TensorIterator) -> Result<()>,
) -> Result<Tensor> {
    let iter = TensorIteratorConfig::new(op).add_output(out).add_input(a).promote_all().build()?;
    if iter.is_cpu() {
        kernel(&iter)?;
    } else {
        if op.starts_with("neg") && iter.common_dtype() == c10::ScalarType::Bool {
            return Err(neg_bool_error());
        }
        stub::run(device_kernel, &iter, &[])?;
    }
    iter.output(0)
}

fn neg_bool_error() -> Error {
    Error::invalid(
        "neg",
        "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
    )
}

fn neg_kernel(iter: &TensorIterator) -> Result<()> {
    match_float!(iter.common_dtype(), T, A => {
        unary_loop::<T, T>(iter, |a| -a);
        Ok(())
    }, other => match_int!(other, T => {
        unary_loop::<T, T>(iter, |a| (0 as T).wrapping_sub(a));
        Ok(())
    }, _ => Err(neg_bool_error())))
}

/// `neg(Tensor self) -> Tensor`
pub fn neg(self_: &Tensor) -> Result<Tensor> {
    if self_.dtype().is_complex() {
        return crate::native::complex::neg(self_);
    }
    run_unary("neg", crate::device_kernel!("neg"), None, self_, neg_kernel)
}
/// `neg.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)`
pub fn neg_out(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    run_unary("neg", crate::device_kernel!("neg"), Some(out), self_, neg_kernel)
}
/// `neg_(Tensor(a!) self) -> Tensor(a!)`
pub fn neg_(self_: &Tensor) -> Result<Tensor> {
    run_unary("neg_", crate::device_kernel!("neg"), Some(self_), self_, neg_kernel)
}

fn abs_kernel(iter: &TensorIterator) -> Result<()> {
    match_float!(iter.common_dtype(), T, A => {
        // `0 - a` for a <= 0, as C's fabs gives: -0.0 becomes +0.0 (PyTorch prints 0., not -0.).
        unary_loop::<T, T>(iter, |a| if a <= T::default() { T::default() - a } else { a });
        Ok(())
    }, other => match_int!(other, T => {
        #[allow(unused_comparisons)]
        unary_loop::<T, T>(iter, |a| if a < (0 as T) { (0 as T).wrapping_sub(a) } else { a });
        Ok(())
    }, _ => {
        unary_loop::<bool, bool>(iter, |a| a);
        Ok(())
    }))
}

/// `abs(Tensor self) -> Tensor`
pub fn abs(self_: &Tensor) -> Result<Tensor> {
    if self_.dtype().is_complex() {
        return crate::native::complex::abs(self_);
    }
    run_unary("abs", crate::device_kernel!("abs"), None, self_, abs_kernel)
}
/// `abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)`
pub fn abs_out(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    run_unary("abs", crate::device_kernel!("abs"), Some(out), self_, abs_kernel)
}
/// `abs_(Tensor(a!) self) -> Tensor(a!)`
pub fn abs_(self_: &Tensor) -> Result<Tensor> {
    run_unary("abs_", crate::device_kernel!("abs"), Some(self_), self_, abs_kernel)
}

// ---- floating unary functions: integer inputs promote to the default float dtype ---------------

/// An elementwise function of floating inputs (PyTorch's unary "float" ops: `exp`, `sin`, ...):
/// one scalar function per computation type; f16/bf16 compute in f32 (See `OpMath`).
pub trait UnaryFloatOp {
    /// The operator name, for errors.
    const NAME: &'static str;
    /// The operator's device kernel (Note [Kernel handles] in `native::stub`).
    fn device_kernel() -> &'static stub::Kernel;
    /// The function in single precision.
    fn f32(x: f32) -> f32;
    /// The function in double precision.
    fn f64(x: f64) -> f64;
    /// Whether integer inputs promote to the default float dtype (`exp`) or are an error
    /// (`silu`).
    const PROMOTE_INTEGERS: bool = true;
    /// Whether [`UnaryFloatOp::f32_fast`] is a vectorisable body of its own (Note [Vectorised
    /// transcendentals] in `cpu/vec.rs`) rather than `f32`.
    const FAST: bool = false;
    /// The function in single precision as eager kernels and the JIT's fused kernels run it:
    /// a branch-free body where there is one, whose multiply-adds are fused when `FMA`.
    #[inline(always)]
    fn f32_fast<const FMA: bool>(x: f32) -> f32 {
        Self::f32(x)
    }
    /// Below this magnitude `f32_fast_near` gives `f32_fast`'s result (Note [Chunked kernels]
    /// in `cpu/loops.rs`); None: no cheaper body.
    const NEAR_BELOW: Option<f32> = None;
    /// `f32_fast` for arguments of magnitude below `NEAR_BELOW`.
    #[inline(always)]
    fn f32_fast_near<const FMA: bool>(x: f32) -> f32 {
        Self::f32_fast::<FMA>(x)
    }
}

/// Whether eager kernels run [`UnaryFloatOp::f32_fast`] with fused multiply-adds: the CPU has
/// FMA (Note [Vectorised transcendentals] in `cpu/vec.rs`).
#[inline]
pub fn fast_with_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Applies a [`UnaryFloatOp`] in the computation type `Self` (single precision through
/// `f32_fast`).
trait ApplyFloat: Copy {
    fn apply<Op: UnaryFloatOp, const FMA: bool>(self) -> Self;
}
impl ApplyFloat for f32 {
    #[inline(always)]
    fn apply<Op: UnaryFloatOp, const FMA: bool>(self) -> f32 {
        Op::f32_fast::<FMA>(self)
    }
}
impl ApplyFloat for f64 {
    #[inline(always)]
    fn apply<Op: UnaryFloatOp, const FMA: bool>(self) -> f64 {
        Op::f64(self)
    }
}

/// [`UnaryFloatOp::f32_fast`] as a loop kernel that is always inlined into the vectorised
/// runs (Note [Always-inlined kernels] in `cpu/loops.rs`).
pub(crate) struct FastF32<Op, const FMA: bool>(std::marker::PhantomData<fn() -> Op>);

impl<Op, const FMA: bool> Clone for FastF32<Op, FMA> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<Op, const FMA: bool> Copy for FastF32<Op, FMA> {}

impl<Op: UnaryFloatOp, const FMA: bool> Kernel1<f32, f32> for FastF32<Op, FMA> {
    #[inline(always)]
    fn call(&self, x: f32) -> f32 {
        Op::f32_fast::<FMA>(x)
    }
    const CHUNKED: bool = Op::NEAR_BELOW.is_some();
    #[inline(always)]
    fn near(&self, x: f32) -> bool {
        x.abs() < Op::NEAR_BELOW.unwrap_or(0.0)
    }
    #[inline(always)]
    fn call_near(&self, x: f32) -> f32 {
        Op::f32_fast_near::<FMA>(x)
    }
}

/// Runs `Op::f32_fast` over an f32 iterator, with fused multiply-adds where the CPU has them.
pub(crate) fn fast_f32_loop<Op: UnaryFloatOp>(iter: &TensorIterator) {
    if fast_with_fma() {
        unary_wide_loop::<f32, f32, _>(iter, FastF32::<Op, true>(std::marker::PhantomData));
    } else {
        unary_kernel_loop::<f32, f32, _>(iter, FastF32::<Op, false>(std::marker::PhantomData));
    }
}

/// Runs a [`UnaryFloatOp`] into `out` (or a new tensor).
pub fn run_float_unary<Op: UnaryFloatOp>(out: Option<&Tensor>, a: &Tensor) -> Result<Tensor> {
    if !Op::PROMOTE_INTEGERS && !a.dtype().is_floating_point() {
        return Err(Error::UnsupportedDtype { op: Op::NAME.into(), dtype: a.dtype() });
    }
    let iter = TensorIteratorConfig::new(Op::NAME)
        .add_output(out)
        .add_input(a)
        .promote_all()
        .promote_integer_inputs_to_float(true)
        .build()?;
    if !iter.is_cpu() {
        stub::run(Op::device_kernel(), &iter, &[])?;
        return iter.output(0);
    }
    if Op::FAST && iter.common_dtype() == ScalarType::F32 {
        fast_f32_loop::<Op>(&iter);
        return iter.output(0);
    }
    match_float!(iter.common_dtype(), T, A => {
        // Ops without a fast body run one instantiation (`Op::FAST` is a constant).
        if Op::FAST && fast_with_fma() {
            unary_loop::<T, T>(&iter, |x| T::from_acc(<A as ApplyFloat>::apply::<Op, true>(x.to_acc())));
        } else {
            unary_loop::<T, T>(&iter, |x| T::from_acc(<A as ApplyFloat>::apply::<Op, false>(x.to_acc())));
        }
    }, d => return Err(Error::UnsupportedDtype { op: Op::NAME.into(), dtype: d }));
    iter.output(0)
}

macro_rules! float_unary {
    (@def $promote:expr, $Op:ident, $name:literal, $f:ident, $f_:ident, $f_out:ident, |$x:ident| $body32:expr, $body64:expr $(, fast $fast:ident)?) => {
        #[doc = concat!("`", $name, "` as a [`UnaryFloatOp`].")]
        pub struct $Op;
        impl UnaryFloatOp for $Op {
            const NAME: &'static str = $name;
            const PROMOTE_INTEGERS: bool = $promote;
            fn device_kernel() -> &'static stub::Kernel {
                crate::device_kernel!($name)
            }
            $(
            const FAST: bool = true;
            #[inline(always)]
            fn f32_fast<const FMA: bool>($x: f32) -> f32 {
                $fast::<FMA>($x)
            }
            )?
            #[inline(always)]
            fn f32($x: f32) -> f32 {
                $body32
            }
            #[inline(always)]
            fn f64($x: f64) -> f64 {
                $body64
            }
        }
        #[doc = concat!("`", $name, "(Tensor self) -> Tensor`")]
        pub fn $f(self_: &Tensor) -> Result<Tensor> {
            run_float_unary::<$Op>(None, self_)
        }
        #[doc = concat!("`", $name, "_(Tensor(a!) self) -> Tensor(a!)`")]
        pub fn $f_(self_: &Tensor) -> Result<Tensor> {
            run_float_unary::<$Op>(Some(self_), self_)
        }
        #[doc = concat!("`", $name, ".out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)`")]
        pub fn $f_out(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
            run_float_unary::<$Op>(Some(out), self_)
        }
    };
    ($Op:ident, $name:literal, $f:ident, $f_:ident, $f_out:ident, |$x:ident| $body32:expr, $body64:expr, fast $fast:ident) => {
        float_unary!(@def true, $Op, $name, $f, $f_, $f_out, |$x| $body32, $body64, fast $fast);
    };
    ($Op:ident, $name:literal, $f:ident, $f_:ident, $f_out:ident, |$x:ident| $body32:expr, $body64:expr) => {
        float_unary!(@def true, $Op, $name, $f, $f_, $f_out, |$x| $body32, $body64);
    };
    // With a vectorisable single-precision body `$fast::<FMA>` (Note [Vectorised
    // transcendentals]); `$body` stays the reference function in both precisions.
    ($Op:ident, $name:literal, $f:ident, $f_:ident, $f_out:ident, |$x:ident| $body:expr, fast $fast:ident) => {
        float_unary!(@def true, $Op, $name, $f, $f_, $f_out, |$x| $body, $body, fast $fast);
    };
    (floating_only $Op:ident, $name:literal, $f:ident, $f_:ident, $f_out:ident, |$x:ident| $body:expr, fast $fast:ident) => {
        float_unary!(@def false, $Op, $name, $f, $f_, $f_out, |$x| $body, $body, fast $fast);
    };
    ($Op:ident, $name:literal, $f:ident, $f_:ident, $f_out:ident, |$x:ident| $body:expr) => {
        float_unary!(@def true, $Op, $name, $f, $f_, $f_out, |$x| $body, $body);
    };
    (floating_only $Op:ident, $name:literal, $f:ident, $f_:ident, $f_out:ident, |$x:ident| $body:expr) => {
        float_unary!(@def false, $Op, $name, $f, $f_, $f_out, |$x| $body, $body);
    };
}

/// `sigmoid` in single precision, branch-free (Note [Vectorised transcendentals]).
#[inline(always)]
fn sigmoid_f32<const FMA: bool>(x: f32) -> f32 {
    times_sigmoid_f32::<FMA>(1.0, x)
}

/// `silu` in single precision, branch-free (Note [Vectorised transcendentals]).
#[inline(always)]
fn silu_f32<const FMA: bool>(x: f32) -> f32 {
    times_sigmoid_f32::<FMA>(x, x)
}

/// The exact GELU, `x Phi(x)`, as a [`UnaryFloatOp`] (the `gelu` operator with
/// `approximate='none'` in `pointwise.rs`, and the JIT's fused GELU).
pub struct GeluErf;
impl UnaryFloatOp for GeluErf {
    const NAME: &'static str = "gelu";
    const FAST: bool = true;
    fn device_kernel() -> &'static stub::Kernel {
        crate::device_kernel!("gelu")
    }
    fn f32(x: f32) -> f32 {
        gelu_f32::<false>(x)
    }
    fn f64(x: f64) -> f64 {
        0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))
    }
    #[inline(always)]
    fn f32_fast<const FMA: bool>(x: f32) -> f32 {
        gelu_f32::<FMA>(x)
    }
    // |x| < 2.8 keeps |x / sqrt 2| below 2, where erfc takes its near polynomial.
    const NEAR_BELOW: Option<f32> = Some(2.8);
    #[inline(always)]
    fn f32_fast_near<const FMA: bool>(x: f32) -> f32 {
        gelu_near_f32::<FMA>(x)
    }
}

/// The tanh-approximated GELU as a [`UnaryFloatOp`] (see [`GeluErf`]).
pub struct GeluTanh;
impl UnaryFloatOp for GeluTanh {
    const NAME: &'static str = "gelu";
    const FAST: bool = true;
    fn device_kernel() -> &'static stub::Kernel {
        crate::device_kernel!("gelu_tanh")
    }
    fn f32(x: f32) -> f32 {
        gelu_tanh_f32::<false>(x)
    }
    fn f64(x: f64) -> f64 {
        let k = (2.0 / std::f64::consts::PI).sqrt();
        0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
    }
    #[inline(always)]
    fn f32_fast<const FMA: bool>(x: f32) -> f32 {
        gelu_tanh_f32::<FMA>(x)
    }
}

float_unary!(Exp, "exp", exp, exp_, exp_out, |x| x.exp(), fast exp_f32);
float_unary!(Exp2, "exp2", exp2, exp2_, exp2_out, |x| x.exp2());
float_unary!(Expm1, "expm1", expm1, expm1_, expm1_out, |x| x.exp_m1(), fast expm1_f32);
float_unary!(Log, "log", log, log_, log_out, |x| x.ln(), fast log_f32);
float_unary!(Log2, "log2", log2, log2_, log2_out, |x| x.log2());
float_unary!(Log10, "log10", log10, log10_, log10_out, |x| x.log10());
float_unary!(Log1p, "log1p", log1p, log1p_, log1p_out, |x| x.ln_1p(), fast log1p_f32);
float_unary!(Sqrt, "sqrt", sqrt, sqrt_, sqrt_out, |x| x.sqrt());
float_unary!(Rsqrt, "rsqrt", rsqrt, rsqrt_, rsqrt_out, |x| 1.0 / x.sqrt());
float_unary!(Reciprocal, "reciprocal", reciprocal, reciprocal_, reciprocal_out, |x| 1.0 / x);
float_unary!(Sin, "sin", sin, sin_, sin_out, |x| x.sin());
float_unary!(Cos, "cos", cos, cos_, cos_out, |x| x.cos());
float_unary!(Tan, "tan", tan, tan_, tan_out, |x| x.tan());
float_unary!(Asin, "asin", asin, asin_, asin_out, |x| x.asin());
float_unary!(Acos, "acos", acos, acos_, acos_out, |x| x.acos());
float_unary!(Atan, "atan", atan, atan_, atan_out, |x| x.atan());
float_unary!(Sinh, "sinh", sinh, sinh_, sinh_out, |x| x.sinh());
float_unary!(Cosh, "cosh", cosh, cosh_, cosh_out, |x| x.cosh());
float_unary!(Tanh, "tanh", tanh, tanh_, tanh_out, |x| x.tanh(), fast tanh_f32);
float_unary!(Asinh, "asinh", asinh, asinh_, asinh_out, |x| x.asinh());
float_unary!(Acosh, "acosh", acosh, acosh_, acosh_out, |x| x.acosh());
float_unary!(Atanh, "atanh", atanh, atanh_, atanh_out, |x| x.atanh());
float_unary!(Sigmoid, "sigmoid", sigmoid, sigmoid_, sigmoid_out, |x| 1.0 / (1.0 + (-x).exp()), fast sigmoid_f32);
float_unary!(Erf, "erf", erf, erf_, erf_out, |x| libm::erff(x), libm::erf(x), fast erf_f32);
float_unary!(Erfc, "erfc", erfc, erfc_, erfc_out, |x| libm::erfcf(x), libm::erfc(x), fast erfc_f32);

/// Runs a dtype-preserving unary op: floats through `F` (in the computation type), integers
/// through the integer body of the macro below, bool through `on_bool`.
macro_rules! same_dtype_unary {
    ($name:literal, $imp:ident, $f:ident, $f_:ident, $f_out:ident, float |$x:ident| $fbody:expr, int |$y:ident| $ibody:expr, bool $bbody:expr) => {
        #[allow(unused_comparisons, clippy::absurd_extreme_comparisons)]
        fn $imp(out: Option<&Tensor>, a: &Tensor) -> Result<Tensor> {
            let iter = TensorIteratorConfig::new($name).add_output(out).add_input(a).promote_all().build()?;
            if !iter.is_cpu() {
                if iter.common_dtype() == c10::ScalarType::Bool {
                    let on_bool: Result<()> = $bbody;
                    on_bool?;
                }
                stub::run(crate::device_kernel!($name), &iter, &[])?;
                return iter.output(0);
            }
            match_float!(iter.common_dtype(), T, A => {
                unary_loop::<T, T>(&iter, |v| { let $x: A = v.to_acc(); T::from_acc($fbody) });
            }, other => match_int!(other, T => {
                unary_loop::<T, T>(&iter, |$y: T| $ibody);
            }, _ => {
                let on_bool: Result<()> = $bbody;
                on_bool?;
                unary_loop::<bool, bool>(&iter, |b| b);
            }));
            iter.output(0)
        }
        #[doc = concat!("`", $name, "(Tensor self) -> Tensor`")]
        pub fn $f(self_: &Tensor) -> Result<Tensor> {
            $imp(None, self_)
        }
        #[doc = concat!("`", $name, "_(Tensor(a!) self) -> Tensor(a!)`")]
        pub fn $f_(self_: &Tensor) -> Result<Tensor> {
            $imp(Some(self_), self_)
        }
        #[doc = concat!("`", $name, ".out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)`")]
        pub fn $f_out(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
            $imp(Some(out), self_)
        }
    };
}

fn bool_unsupported(op: &str) -> Result<()> {
    Err(Error::UnsupportedDtype { op: op.into(), dtype: c10::ScalarType::Bool })
}

same_dtype_unary!("floor", floor_impl, floor, floor_, floor_out, float |x| x.floor(), int |v| v, bool Ok(()));
same_dtype_unary!("ceil", ceil_impl, ceil, ceil_, ceil_out, float |x| x.ceil(), int |v| v, bool Ok(()));
same_dtype_unary!("trunc", trunc_impl, trunc, trunc_, trunc_out, float |x| x.trunc(), int |v| v, bool Ok(()));
same_dtype_unary!("round", round_impl, round, round_, round_out, float |x| x.round_ties_even(), int |v| v, bool Ok(()));
same_dtype_unary!("sign", sign_impl, sign, sign_, sign_out,
    float |x| ((0.0 < x) as i32 - (x < 0.0) as i32) as A,
    int |v| if v > 0 { 1 } else if v < 0 { (0 as T).wrapping_sub(1) } else { 0 },
    bool Ok(()));
same_dtype_unary!("relu", relu_impl, relu, relu_, relu_out,
    float |x| if x > 0.0 || x.is_nan() { x } else { 0.0 },
    int |v| if v > 0 { v } else { 0 },
    bool bool_unsupported("relu"));
same_dtype_unary!("frac", frac_impl, frac, frac_, frac_out, float |x| x - x.trunc(), int |v| v, bool bool_unsupported("frac"));

// Activations defined only for floating inputs (integer inputs are an error, as in PyTorch).
float_unary!(floating_only Silu, "silu", silu, silu_, silu_out, |x| x / (1.0 + (-x).exp()), fast silu_f32);
float_unary!(floating_only Mish, "mish", mish, mish_, mish_out, |x| x * (if x > 20.0 { x } else { x.exp().ln_1p() }).tanh());
float_unary!(floating_only Hardsigmoid, "hardsigmoid", hardsigmoid, hardsigmoid_, hardsigmoid_out, |x| (x / 6.0 + 0.5).clamp(0.0, 1.0));
float_unary!(floating_only Hardswish, "hardswish", hardswish, hardswish_, hardswish_out, |x| x * (x + 3.0).clamp(0.0, 6.0) / 6.0);

// ---- more unary operators: special functions and activations -----------------------------------

/// `erfinv` in f64: a rational first guess refined by Newton steps on `erf(y) - x`, which
/// converge quadratically (two steps reach f64 precision from the guess's ~1e-3).
pub(crate) fn erfinv_f64(x: f64) -> f64 {
    if x.is_nan() || !(-1.0..=1.0).contains(&x) {
        return f64::NAN;
    }
    if x == 1.0 {
        return f64::INFINITY;
    }
    if x == -1.0 {
        return f64::NEG_INFINITY;
    }
    // Initial guess from the logarithmic approximation (Winitzki's).
    let a = 0.147;
    let ln = (1.0 - x * x).ln();
    let t = 2.0 / (std::f64::consts::PI * a) + ln / 2.0;
    let mut y = (x.signum()) * ((t * t - ln / a).sqrt() - t).sqrt();
    let k = 2.0 / std::f64::consts::PI.sqrt();
    for _ in 0..3 {
        let err = libm::erf(y) - x;
        let d = k * (-y * y).exp();
        if d == 0.0 {
            break;
        }
        y -= err / d;
    }
    y
}

float_unary!(Erfinv, "erfinv", erfinv, erfinv_, erfinv_out, |x| erfinv_f64(x as f64) as f32, erfinv_f64(x));

/// SELU's constants (Klambauer et al.).
const SELU_ALPHA: f64 = 1.673_263_242_354_377_2;
const SELU_SCALE: f64 = 1.050_700_987_355_480_5;
float_unary!(@def false, Selu, "selu", selu, selu_, selu_out, |x|
    if x > 0.0 { SELU_SCALE as f32 * x } else { (SELU_SCALE * SELU_ALPHA) as f32 * x.exp_m1() },
    if x > 0.0 { SELU_SCALE * x } else { SELU_SCALE * SELU_ALPHA * x.exp_m1() });

/// `sgn(Tensor self) -> Tensor`: `sign` for real dtypes.
pub fn sgn(self_: &Tensor) -> Result<Tensor> {
    if self_.dtype().is_complex() {
        return crate::native::complex::sgn(self_);
    }
    sign_impl(None, self_)
}
/// `sgn_(Tensor(a!) self) -> Tensor(a!)`
pub fn sgn_(self_: &Tensor) -> Result<Tensor> {
    sign_impl(Some(self_), self_)
}
/// `sgn.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)`
pub fn sgn_out(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    sign_impl(Some(out), self_)
}

/// `square(Tensor self) -> Tensor`: `pow(self, 2)` (bool squares to int64, as in PyTorch).
pub fn square(self_: &Tensor) -> Result<Tensor> {
    crate::ops::pow_tensor_scalar(self_, c10::Scalar::Int(2))
}
/// `square_(Tensor(a!) self) -> Tensor(a!)`
pub fn square_(self_: &Tensor) -> Result<Tensor> {
    crate::ops::mul_(self_, &self_.clone())
}

/// A predicate on values giving a bool tensor (`isinf`, `isfinite`, ...).
/// A floating predicate (`isnan`, `isinf`, ...) of a device tensor: the kernel named like the
/// operator for a floating input; for integers and bool, which are finite, the constant
/// `finite_value` (what the predicate says of a finite number).
pub(crate) fn predicate_on_device(
    iter: TensorIterator<'_>,
    kernel: &'static crate::native::stub::Kernel,
    finite_value: bool,
) -> Result<Tensor> {
    if iter.common_dtype().is_complex() {
        return Err(Error::UnsupportedDtype { op: iter.op().into(), dtype: iter.common_dtype() });
    }
    if iter.common_dtype().is_floating_point() {
        stub::run(kernel, &iter, &[])?;
        return iter.output(0);
    }
    let meta = iter.device().is_meta();
    let out = iter.output(0)?;
    if !meta {
        crate::ops::fill_(&out, c10::Scalar::Bool(finite_value))?;
    }
    Ok(out)
}

fn predicate(
    op: &'static str,
    kernel: &'static crate::native::stub::Kernel,
    out: Option<&Tensor>,
    a: &Tensor,
    f: impl Fn(f64) -> bool + Sync,
) -> Result<Tensor> {
    let iter = TensorIteratorConfig::new(op)
        .add_output(out)
        .add_input(a)
        .check_all_same_dtype(false)
        .static_output_dtype(c10::ScalarType::Bool)
        .common_dtype(a.dtype())
        .build()?;
    if !iter.is_cpu() {
        return predicate_on_device(iter, kernel, f(0.0));
    }
    c10::dispatch_all_types!(a.dtype(), T => {
        if T::DTYPE.is_floating_point() {
            unary_loop::<bool, T>(&iter, |x| f(x.to_f64()));
        } else {
            // Integers and bool are finite: evaluate the predicate once on a finite value.
            let v = f(0.0);
            unary_loop::<bool, T>(&iter, move |_| v);
        }
    });
    iter.output(0)
}

/// `isinf(Tensor self) -> Tensor`
pub fn isinf(self_: &Tensor) -> Result<Tensor> {
    predicate("isinf", crate::device_kernel!("isinf"), None, self_, f64::is_infinite)
}
/// `isfinite(Tensor self) -> Tensor`
pub fn isfinite(self_: &Tensor) -> Result<Tensor> {
    predicate("isfinite", crate::device_kernel!("isfinite"), None, self_, f64::is_finite)
}
/// `isposinf(Tensor self) -> Tensor`
pub fn isposinf(self_: &Tensor) -> Result<Tensor> {
    predicate("isposinf", crate::device_kernel!("isposinf"), None, self_, |x| x == f64::INFINITY)
}
/// `isposinf.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)`
pub fn isposinf_out(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    predicate("isposinf", crate::device_kernel!("isposinf"), Some(out), self_, |x| x == f64::INFINITY)
}
/// `isneginf(Tensor self) -> Tensor`
pub fn isneginf(self_: &Tensor) -> Result<Tensor> {
    predicate("isneginf", crate::device_kernel!("isneginf"), None, self_, |x| x == f64::NEG_INFINITY)
}
/// `isneginf.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)`
pub fn isneginf_out(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    predicate("isneginf", crate::device_kernel!("isneginf"), Some(out), self_, |x| x == f64::NEG_INFINITY)
}

/// The largest finite value of a floating dtype.
fn finite_max(d: c10::ScalarType) -> f64 {
    match d {
        c10::ScalarType::F16 => c10::f16::MAX.to_f64(),
        c10::ScalarType::BF16 => c10::bf16::MAX.to_f64(),
        c10::ScalarType::F32 => f32::MAX as f64,
        _ => f64::MAX,
    }
}

fn nan_to_num_impl(
    op: &'static str,
    out: Option<&Tensor>,
    a: &Tensor,
    nan: Option<f64>,
    posinf: Option<f64>,
    neginf: Option<f64>,
) -> Result<Tensor> {
    let iter = TensorIteratorConfig::new(op).add_output(out).add_input(a).promote_all().build()?;
    let d = iter.common_dtype();
    let (n, p, m) = (nan.unwrap_or(0.0), posinf.unwrap_or(finite_max(d)), neginf.unwrap_or(-finite_max(d)));
    c10::dispatch_all_types!(d, T => {
        if T::DTYPE.is_floating_point() {
            let (n, p, m) = (<T as Element>::from_f64(n), <T as Element>::from_f64(p), <T as Element>::from_f64(m));
            unary_loop::<T, T>(&iter, move |x| {
                let v = x.to_f64();
                if v.is_nan() { n } else if v == f64::INFINITY { p } else if v == f64::NEG_INFINITY { m } else { x }
            });
        } else {
            unary_loop::<T, T>(&iter, |x| x);
        }
    });
    iter.output(0)
}

/// `nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor`:
/// NaN becomes `nan` (0), ±inf the given values (default: the dtype's largest finite values).
pub fn nan_to_num(self_: &Tensor, nan: Option<f64>, posinf: Option<f64>, neginf: Option<f64>) -> Result<Tensor> {
    nan_to_num_impl("nan_to_num", None, self_, nan, posinf, neginf)
}
/// `nan_to_num_(Tensor(a!) self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor(a!)`
pub fn nan_to_num_(self_: &Tensor, nan: Option<f64>, posinf: Option<f64>, neginf: Option<f64>) -> Result<Tensor> {
    nan_to_num_impl("nan_to_num_", Some(self_), self_, nan, posinf, neginf)
}
/// `nan_to_num.out(Tensor self, float? nan=None, float? posinf=None, float? neginf=None, *, Tensor(a!) out) -> Tensor(a!)`
pub fn nan_to_num_out(
    self_: &Tensor,
    nan: Option<f64>,
    posinf: Option<f64>,
    neginf: Option<f64>,
    out: &Tensor,
) -> Result<Tensor> {
    nan_to_num_impl("nan_to_num", Some(out), self_, nan, posinf, neginf)
}

fn round_decimals_impl(op: &'static str, out: Option<&Tensor>, a: &Tensor, decimals: i64) -> Result<Tensor> {
    if decimals == 0 {
        return round_impl(out, a);
    }
    let iter = TensorIteratorConfig::new(op).add_output(out).add_input(a).promote_all().build()?;
    let neg = decimals < 0;
    let e = decimals.unsigned_abs().min(400) as i32;
    match_float!(iter.common_dtype(), T, A => {
        let ten_pow: A = (10.0 as A).powi(e);
        unary_loop::<T, T>(&iter, move |x| {
            let v = x.to_acc();
            T::from_acc(if neg { (v / ten_pow).round_ties_even() * ten_pow } else { (v * ten_pow).round_ties_even() / ten_pow })
        });
    }, d => return Err(Error::UnsupportedDtype { op: "round".into(), dtype: d }));
    iter.output(0)
}

/// `round.decimals(Tensor self, *, int decimals) -> Tensor`: round half to even at `decimals`
/// decimal digits (negative: to the left of the point).
pub fn round_decimals(self_: &Tensor, decimals: i64) -> Result<Tensor> {
    round_decimals_impl("round", None, self_, decimals)
}
/// `round_.decimals(Tensor(a!) self, *, int decimals) -> Tensor(a!)`
pub fn round_decimals_(self_: &Tensor, decimals: i64) -> Result<Tensor> {
    round_decimals_impl("round_", Some(self_), self_, decimals)
}
/// `round.decimals_out(Tensor self, *, int decimals, Tensor(a!) out) -> Tensor(a!)`
pub fn round_decimals_out(self_: &Tensor, decimals: i64, out: &Tensor) -> Result<Tensor> {
    round_decimals_impl("round", Some(out), self_, decimals)
}

fn bitwise_not_impl(op: &'static str, out: Option<&Tensor>, a: &Tensor) -> Result<Tensor> {
    let iter = TensorIteratorConfig::new(op).add_output(out).add_input(a).promote_all().build()?;
    match_int!(iter.common_dtype(), T => {
        unary_loop::<T, T>(&iter, |x| !x);
    }, other => match other {
        c10::ScalarType::Bool => unary_loop::<bool, bool>(&iter, |x| !x),
        d => return Err(Error::UnsupportedDtype { op: "bitwise_not_cpu".into(), dtype: d }),
    });
    iter.output(0)
}

/// `bitwise_not(Tensor self) -> Tensor`
pub fn bitwise_not(self_: &Tensor) -> Result<Tensor> {
    bitwise_not_impl("bitwise_not", None, self_)
}
/// `bitwise_not_(Tensor(a!) self) -> Tensor(a!)`
pub fn bitwise_not_(self_: &Tensor) -> Result<Tensor> {
    bitwise_not_impl("bitwise_not_", Some(self_), self_)
}
/// `bitwise_not.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)`
pub fn bitwise_not_out(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    bitwise_not_impl("bitwise_not", Some(out), self_)
}
