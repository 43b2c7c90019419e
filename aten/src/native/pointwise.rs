//! More pointwise operators: `maximum`/`minimum`, `atan2`, `fmod`, `remainder`, `pow`, logical
//! ops, `isnan`, `lerp`, `addcmul`/`addcdiv`, `clamp`, `masked_fill`, and the parameterised
//! activations (`leaky_relu`, `hardtanh`, `elu`, `softplus`, `gelu`, `logit`).
//!
//! Note [Pointwise computation type]: the parameterised functions here compute in f64 for every
//! floating dtype and round once on store. That is at least as accurate as PyTorch's f32
//! arithmetic. `threshold_backward`, on every ReLU network's training path, also has a direct
//! f32 loop the compiler vectorises.

use c10::{Element, Error, Result, Scalar, ScalarType};

use crate::native::cpu::loops::{binary_loop, ternary_loop, unary_kernel_loop, unary_loop, unary_wide_loop, Kernel1};
use crate::native::cpu::vec::{exp_f32, expm1_f32, log1p_f32};
use crate::native::opmath::OpMath;
use crate::native::tensor_iterator::{TensorIterator, TensorIteratorConfig};
use crate::native::unary::{fast_f32_loop, GeluErf, GeluTanh, UnaryFloatOp};
use crate::Tensor;

/// `out = f(x)` in f64 for floating dtypes (Note [Pointwise computation type]).
fn float_map(iter: &TensorIterator, op: &str, f: impl Fn(f64) -> f64 + Sync) -> Result<()> {
    c10::dispatch_all_types!(iter.common_dtype(), T => {
        if !T::DTYPE.is_floating_point() {
            return Err(Error::UnsupportedDtype { op: op.into(), dtype: T::DTYPE });
        }
        unary_loop::<T, T>(iter, |v| <T as Element>::from_f64(f(v.to_f64())));
    });
    Ok(())
}

/// `out = f(a, b)` in f64 for floating dtypes.
fn float_zip(iter: &TensorIterator, op: &str, f: impl Fn(f64, f64) -> f64 + Sync) -> Result<()> {
    c10::dispatch_all_types!(iter.common_dtype(), T => {
        if !T::DTYPE.is_floating_point() {
            return Err(Error::UnsupportedDtype { op: op.into(), dtype: T::DTYPE });
        }
        binary_loop::<T, T, T>(iter, |a, b| <T as Element>::from_f64(f(a.to_f64(), b.to_f64())));
    });
    Ok(())
}

fn unary_iter<'a>(op: &'static str, a: &'a Tensor, int_to_float: bool) -> Result<TensorIterator<'a>> {
    TensorIteratorConfig::new(op)
        .add_output(None)
        .add_input(a)
        .promote_all()
        .promote_integer_inputs_to_float(int_to_float)
        .build()
}

fn binary_iter<'a>(op: &'static str, a: &'a Tensor, b: &'a Tensor, int_to_float: bool) -> Result<TensorIterator<'a>> {
    TensorIteratorConfig::binary_op(op, None, a, b).promote_integer_inputs_to_float(int_to_float).build()
}

// ---- binary ------------------------------------------------------------------------------------

fn min_max(
    op: &'static str,
    kernel: &'static crate::native::stub::Kernel,
    a: &Tensor,
    b: &Tensor,
    take_max: bool,
) -> Result<Tensor> {
    let iter = binary_iter(op, a, b, false)?;
    if !iter.is_cpu() {
        crate::native::stub::run(kernel, &iter, &[])?;
        return iter.output(0);
    }
    match_float!(iter.common_dtype(), T, A => {
        binary_loop::<T, T, T>(&iter, move |x, y| {
            let (p, q) = (x.to_acc(), y.to_acc());
            // NaN propagates (PyTorch's maximum/minimum).
            let r = if p.is_nan() || q.is_nan() { p + q } else if (p > q) == take_max { p } else { q };
            T::from_acc(r)
        });
    }, other => c10::dispatch_all_types!(other, T => {
        #[allow(clippy::bool_comparison)] // generic over every dtype, bool included
        binary_loop::<T, T, T>(&iter, move |x, y| if (x > y) == take_max { x } else { y });
    }));
    iter.output(0)
}

/// `maximum(Tensor self, Tensor other) -> Tensor`
pub fn maximum(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    min_max("maximum", crate::device_kernel!("maximum"), self_, other, true)
}
/// `minimum(Tensor self, Tensor other) -> Tensor`
pub fn minimum(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    min_max("minimum", crate::device_kernel!("minimum"), self_, other, false)
}

/// `atan2(Tensor self, Tensor other) -> Tensor`
pub fn atan2(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let iter = binary_iter("atan2", self_, other, true)?;
    if !iter.is_cpu() {
        return run_on_device(crate::device_kernel!("atan2"), iter, &[]);
    }
    float_zip(&iter, "atan2", f64::atan2)?;
    iter.output(0)
}

fn int_mod_check(iter: &TensorIterator, op: &str) -> Result<()> {
    // (On the meta device there are no divisors to check, Note [Meta loops].)
    if !iter.common_dtype().is_floating_point()
        && !iter.device().is_meta()
        && iter.operand(2).to_vec::<i64>()?.contains(&0)
    {
        return Err(Error::invalid(op, "ZeroDivisionError"));
    }
    Ok(())
}

/// `fmod.Tensor(Tensor self, Tensor other) -> Tensor`: remainder with the dividend's sign.
pub fn fmod(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let iter = binary_iter("fmod", self_, other, false)?;
    int_mod_check(&iter, "fmod")?;
    if !iter.is_cpu() {
        return run_on_device(crate::device_kernel!("fmod"), iter, &[]);
    }
    match_float!(iter.common_dtype(), T, A => {
        binary_loop::<T, T, T>(&iter, |x, y| T::from_acc(x.to_acc() % y.to_acc()));
    }, other => match_int!(other, T => {
        binary_loop::<T, T, T>(&iter, |x, y| x.wrapping_rem(y));
    }, d => return Err(Error::UnsupportedDtype { op: "fmod".into(), dtype: d })));
    iter.output(0)
}

/// `remainder.Tensor(Tensor self, Tensor other) -> Tensor`: Python's `%` (the divisor's sign).
pub fn remainder(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let iter = binary_iter("remainder", self_, other, false)?;
    int_mod_check(&iter, "remainder")?;
    if !iter.is_cpu() {
        return run_on_device(crate::device_kernel!("remainder"), iter, &[]);
    }
    match_float!(iter.common_dtype(), T, A => {
        binary_loop::<T, T, T>(&iter, |x, y| {
            let (a, b) = (x.to_acc(), y.to_acc());
            let mut m = a % b;
            if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
                m += b;
            }
            T::from_acc(m)
        });
    }, other => match_int!(other, T => {
        #[allow(unused_comparisons, clippy::absurd_extreme_comparisons)]
        binary_loop::<T, T, T>(&iter, |x, y| {
            let m = x.wrapping_rem(y);
            if m != 0 && ((y < 0) != (m < 0)) { m.wrapping_add(y) } else { m }
        });
    }, d => return Err(Error::UnsupportedDtype { op: "remainder".into(), dtype: d })));
    iter.output(0)
}

/// Integer power with wrapping multiplication (squaring on the full exponent). A negative
/// exponent gives `1 / a^-b` truncated: 1 for `a == 1`, ±1 for `a == -1`, else 0 (PyTorch's
/// `powi`).
fn powi<T: num_traits::PrimInt + num_traits::WrappingMul + num_traits::WrappingSub>(a: T, b: T) -> T {
    let (zero, one) = (T::zero(), T::one());
    if b < zero {
        // Only signed types get here, where `zero - one` is -1.
        let minus_one = zero.wrapping_sub(&one);
        return if a == one {
            one
        } else if a == minus_one {
            if b & one == one {
                minus_one
            } else {
                one
            }
        } else {
            zero
        };
    }
    let (mut result, mut base, mut e) = (one, a, b);
    while e > zero {
        if e & one == one {
            result = result.wrapping_mul(&base);
        }
        base = base.wrapping_mul(&base);
        e = e >> 1;
    }
    result
}

fn pow_impl(a: &Tensor, b: &Tensor, scalar_exponent: bool) -> Result<Tensor> {
    let iter = binary_iter("pow", a, b, false)?;
    // An integer base with an integer Scalar exponent (pow.Tensor_Scalar): one number to look at.
    // Tensors of negative integer exponents are not checked; they follow `powi`.
    if scalar_exponent && !iter.device().is_meta() && iter.operand(2).to_vec::<i64>()?.iter().any(|&e| e < 0) {
        return Err(Error::invalid("pow", "Integers to negative integer powers are not allowed."));
    }
    if !iter.is_cpu() {
        let dtype = iter.common_dtype();
        if dtype == ScalarType::Bool || dtype.is_complex() {
            return Err(Error::UnsupportedDtype { op: "pow".into(), dtype });
        }
        return run_on_device(crate::device_kernel!("pow"), iter, &[]);
    }
    match_float!(iter.common_dtype(), T, A => {
        binary_loop::<T, T, T>(&iter, |x, y| T::from_acc(x.to_acc().powf(y.to_acc())));
    }, other => match_int!(other, T => {
        binary_loop::<T, T, T>(&iter, powi::<T>);
    }, d => return Err(Error::UnsupportedDtype { op: "pow".into(), dtype: d })));
    iter.output(0)
}

/// `pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor`
pub fn pow_tensor_tensor(self_: &Tensor, exponent: &Tensor) -> Result<Tensor> {
    pow_impl(self_, exponent, false)
}
/// `pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor`
pub fn pow_tensor_scalar(self_: &Tensor, exponent: Scalar) -> Result<Tensor> {
    let integral_base = !self_.dtype().is_floating_point() && self_.dtype() != ScalarType::Bool;
    pow_impl(self_, &Tensor::wrapped_scalar(exponent), integral_base && matches!(exponent, Scalar::Int(_)))
}
/// `pow.Scalar(Scalar self, Tensor exponent) -> Tensor`: the base as a wrapped number.
pub fn pow_scalar(self_: Scalar, exponent: &Tensor) -> Result<Tensor> {
    pow_impl(&Tensor::wrapped_scalar(self_), exponent, false)
}

// ---- logical and predicates --------------------------------------------------------------------

/// `logical_and(Tensor self, Tensor other) -> Tensor`
pub fn logical_and(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    logical_binary("logical_and", crate::device_kernel!("logical_and"), self_, other, |x, y| x && y)
}

/// `logical_not(Tensor self) -> Tensor`
pub fn logical_not(self_: &Tensor) -> Result<Tensor> {
    let iter = TensorIteratorConfig::new("logical_not")
        .add_output(None)
        .add_input(self_)
        .check_all_same_dtype(false)
        .static_output_dtype(ScalarType::Bool)
        .common_dtype(self_.dtype())
        .build()?;
    if !iter.is_cpu() {
        return run_on_device(crate::device_kernel!("logical_not"), iter, &[]);
    }
    c10::dispatch_all_types!(self_.dtype(), T => unary_loop::<bool, T>(&iter, |x| !x.to_bool()));
    iter.output(0)
}

/// `isnan(Tensor self) -> Tensor`
pub fn isnan(self_: &Tensor) -> Result<Tensor> {
    let iter = TensorIteratorConfig::new("isnan")
        .add_output(None)
        .add_input(self_)
        .check_all_same_dtype(false)
        .static_output_dtype(ScalarType::Bool)
        .common_dtype(self_.dtype())
        .build()?;
    if !iter.is_cpu() {
        return crate::native::unary::predicate_on_device(iter, crate::device_kernel!("isnan"), false);
    }
    c10::dispatch_all_types!(self_.dtype(), T => unary_loop::<bool, T>(&iter, |x| x.to_f64().is_nan()));
    iter.output(0)
}

// ---- ternary -----------------------------------------------------------------------------------

/// `lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor`
pub fn lerp_scalar(self_: &Tensor, end: &Tensor, weight: Scalar) -> Result<Tensor> {
    let w = weight.to_f64();
    let iter = binary_iter("lerp", self_, end, false)?;
    if !iter.is_cpu() {
        if !iter.common_dtype().is_floating_point() {
            return Err(Error::UnsupportedDtype { op: "lerp".into(), dtype: iter.common_dtype() });
        }
        return run_on_device(crate::device_kernel!("lerp"), iter, &[weight]);
    }
    float_zip(&iter, "lerp", move |s, e| if w.abs() < 0.5 { s + w * (e - s) } else { e - (e - s) * (1.0 - w) })?;
    iter.output(0)
}

/// `threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor`:
/// `grad_output` where `self > threshold`, else 0 (the gradient of `relu` and `threshold`).
/// Same-shaped contiguous f32 operands take a direct loop the compiler vectorises; everything
/// else goes through the TensorIterator.
pub fn threshold_backward(grad_output: &Tensor, self_: &Tensor, threshold: Scalar) -> Result<Tensor> {
    let th = threshold.to_f64();
    let fast = grad_output.dtype() == ScalarType::F32
        && self_.dtype() == ScalarType::F32
        && grad_output.sizes() == self_.sizes()
        && grad_output.is_contiguous()
        && self_.is_contiguous()
        && grad_output.device() == self_.device()
        && self_.device().is_cpu();
    if fast {
        let out = Tensor::empty_uninit(self_.sizes(), ScalarType::F32, self_.device())?;
        let n = out.numel() as usize;
        if n > 0 {
            let th = th as f32;
            let (gp, xp, op) =
                (grad_output.typed_data_ptr::<f32>()?, self_.typed_data_ptr::<f32>()?, out.typed_data_ptr::<f32>()?);
            // SAFETY: the three tensors are contiguous f32 CPU tensors of n elements; `out` is
            // fresh, so it aliases neither input.
            let (g, x, o) = unsafe {
                (
                    std::slice::from_raw_parts(gp, n),
                    std::slice::from_raw_parts(xp, n),
                    std::slice::from_raw_parts_mut(op, n),
                )
            };
            const CHUNK: usize = 1 << 16;
            let body = |c: usize, o: &mut [f32]| {
                let (g, x) = (&g[c * CHUNK..c * CHUNK + o.len()], &x[c * CHUNK..c * CHUNK + o.len()]);
                for ((o, &g), &x) in o.iter_mut().zip(g).zip(x) {
                    *o = if x > th { g } else { 0.0 };
                }
            };
            if n > CHUNK && rayon::current_num_threads() > 1 {
                crate::parallel::for_each_chunk_mut(o, CHUNK, body);
            } else {
                body(0, o);
            }
        }
        return Ok(out);
    }
    let iter = binary_iter("threshold_backward", grad_output, self_, false)?;
    if !iter.is_cpu() {
        crate::native::stub::run(crate::device_kernel!("threshold_backward"), &iter, &[threshold])?;
        return iter.output(0);
    }
    float_zip(&iter, "threshold_backward", move |g, x| if x > th { g } else { 0.0 })?;
    iter.output(0)
}

fn addc(
    op: &'static str,
    out: Option<&Tensor>,
    s: &Tensor,
    t1: &Tensor,
    t2: &Tensor,
    value: Scalar,
    div: bool,
) -> Result<Tensor> {
    let iter =
        TensorIteratorConfig::new(op).add_output(out).add_input(s).add_input(t1).add_input(t2).promote_all().build()?;
    let dtype = iter.common_dtype();
    if !dtype.is_floating_point() && div {
        return Err(Error::invalid(op, "Integer division with addcdiv is no longer supported."));
    }
    if !iter.is_cpu() {
        if dtype == ScalarType::Bool || dtype.is_complex() {
            return Err(Error::UnsupportedDtype { op: op.into(), dtype });
        }
        let kernel: &'static crate::native::stub::Kernel =
            if div { crate::device_kernel!("addcdiv") } else { crate::device_kernel!("addcmul") };
        return run_on_device(kernel, iter, &[value]);
    }
    let v = value.to_f64();
    c10::dispatch_all_types!(dtype, T => {
        ternary_loop::<T, T, T, T>(&iter, move |a, b, c| {
            let (a, b, c) = (a.to_f64(), b.to_f64(), c.to_f64());
            <T as Element>::from_f64(if div { a + v * b / c } else { a + v * b * c })
        });
    });
    iter.output(0)
}

/// `addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor`
pub fn addcmul(self_: &Tensor, tensor1: &Tensor, tensor2: &Tensor, value: Scalar) -> Result<Tensor> {
    addc("addcmul", None, self_, tensor1, tensor2, value, false)
}
/// `addcmul_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)`
pub fn addcmul_(self_: &Tensor, tensor1: &Tensor, tensor2: &Tensor, value: Scalar) -> Result<Tensor> {
    addc("addcmul_", Some(self_), self_, tensor1, tensor2, value, false)
}
/// `addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor`
pub fn addcdiv(self_: &Tensor, tensor1: &Tensor, tensor2: &Tensor, value: Scalar) -> Result<Tensor> {
    addc("addcdiv", None, self_, tensor1, tensor2, value, true)
}
/// `addcdiv_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)`
pub fn addcdiv_(self_: &Tensor, tensor1: &Tensor, tensor2: &Tensor, value: Scalar) -> Result<Tensor> {
    addc("addcdiv_", Some(self_), self_, tensor1, tensor2, value, true)
}

/// `clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor`
pub fn clamp(self_: &Tensor, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        return Err(Error::invalid("clamp", "At least one of 'min' or 'max' must not be None"));
    }
    if crate::native::on_device(self_) {
        // The loop below clamps in f64 and truncates the result to the dtype. For an integer
        // dtype the same result comes from bounds saturated to its range, then truncated
        // (`hardtanh` of uint8 by -1 and 1 clamps by 0 and 1, not by a wrapped 255).
        let range = match self_.dtype() {
            ScalarType::U8 => Some((u8::MIN as f64, u8::MAX as f64)),
            ScalarType::I8 => Some((i8::MIN as f64, i8::MAX as f64)),
            ScalarType::I16 => Some((i16::MIN as f64, i16::MAX as f64)),
            ScalarType::I32 => Some((i32::MIN as f64, i32::MAX as f64)),
            ScalarType::I64 => Some((i64::MIN as f64, i64::MAX as f64)),
            _ => None,
        };
        // A NaN bound is no bound there (f64::max and min ignore NaN).
        let f = |s: Scalar| match (range, s) {
            (Some(_), Scalar::Float(v)) if v.is_nan() => None,
            (Some((lo, hi)), Scalar::Float(v)) => Some(Scalar::Float(v.clamp(lo, hi))),
            (Some((lo, hi)), Scalar::Int(v)) => Some(Scalar::Int((v as f64).clamp(lo, hi) as i64)),
            _ => Some(s),
        };
        let (lo, hi) = (min.and_then(f), max.and_then(f));
        if lo.is_none() && hi.is_none() {
            return crate::ops::clone(self_, None);
        }
        return clamp_scalar_impl("clamp", None, self_, lo, hi);
    }
    let (lo, hi) = (min.map(|s| s.to_f64()), max.map(|s| s.to_f64()));
    let iter = unary_iter("clamp", self_, false)?;
    c10::dispatch_all_types!(iter.common_dtype(), T => {
        unary_loop::<T, T>(&iter, move |x| {
            let v = x.to_f64();
            if v.is_nan() {
                return x;
            }
            let v = lo.map_or(v, |l| v.max(l));
            <T as Element>::from_f64(hi.map_or(v, |h| v.min(h)))
        });
    });
    iter.output(0)
}

/// `masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor`
pub fn masked_fill_scalar(self_: &Tensor, mask: &Tensor, value: Scalar) -> Result<Tensor> {
    if mask.dtype() != ScalarType::Bool {
        return Err(Error::invalid(
            "masked_fill",
            format!("masked_fill_ only supports boolean masks, but got mask with dtype {}", mask.dtype().cpp_name()),
        ));
    }
    let out = crate::native::copy::empty_like_layout(self_, self_.dtype())?;
    let shape = crate::native::tensor_iterator::broadcast_shapes("masked_fill", self_.sizes(), mask.sizes())?;
    if shape.as_slice() != self_.sizes() {
        return Err(Error::shape(
            "masked_fill",
            format!("mask of shape {:?} cannot be broadcast to {:?}", mask.sizes(), self_.sizes()),
        ));
    }
    let iter = TensorIteratorConfig::new("masked_fill")
        .add_output(Some(&out))
        .add_input(self_)
        .add_input(mask)
        .check_all_same_dtype(false)
        .static_output_dtype(self_.dtype())
        .common_dtype(self_.dtype())
        .build()?;
    if !iter.is_cpu() {
        crate::native::stub::run(crate::device_kernel!("masked_fill"), &iter, &[value])?;
        drop(iter);
        return Ok(out);
    }
    c10::dispatch_all_types!(self_.dtype(), T => {
        let fill = <T as Element>::from_f64(value.to_f64());
        let fill = if T::DTYPE.is_floating_point() { fill } else { <T as Element>::from_i64(value.to_i64()) };
        binary_loop::<T, T, bool>(&iter, move |x, m| if m { fill } else { x });
    });
    drop(iter);
    Ok(out)
}

// ---- parameterised activations (floating inputs only) ------------------------------------------

/// Runs `kernel`'s device loop over `iter` with the operator's scalars (Note [Device-generic
/// operators] in `native::stub`) and returns the output.
fn run_on_device(
    kernel: &'static crate::native::stub::Kernel,
    iter: TensorIterator,
    extra: &[Scalar],
) -> Result<Tensor> {
    crate::native::stub::run(kernel, &iter, extra)?;
    iter.output(0)
}

/// A parameterised activation of a device tensor: `kernel`'s loop with the scalars `extra`.
/// `None` for a CPU (or meta) tensor, which the caller's own loops compute.
fn activation_on_device(
    op: &'static str,
    kernel: &'static crate::native::stub::Kernel,
    a: &Tensor,
    extra: &[Scalar],
) -> Option<Result<Tensor>> {
    if !crate::native::on_device(a) {
        return None;
    }
    Some(if !a.dtype().is_floating_point() {
        Err(Error::UnsupportedDtype { op: op.into(), dtype: a.dtype() })
    } else {
        unary_iter(op, a, false).and_then(|iter| run_on_device(kernel, iter, extra))
    })
}

fn activation(op: &'static str, a: &Tensor, f: impl Fn(f64) -> f64 + Sync) -> Result<Tensor> {
    if !a.dtype().is_floating_point() {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype: a.dtype() });
    }
    let iter = unary_iter(op, a, false)?;
    float_map(&iter, op, f)?;
    iter.output(0)
}

/// `leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor`
pub fn leaky_relu(self_: &Tensor, negative_slope: Scalar) -> Result<Tensor> {
    if let Some(r) = activation_on_device("leaky_relu", crate::device_kernel!("leaky_relu"), self_, &[negative_slope]) {
        return r;
    }
    let s = negative_slope.to_f64();
    activation("leaky_relu", self_, move |x| if x > 0.0 { x } else { x * s })
}
/// `hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor`
pub fn hardtanh(self_: &Tensor, min_val: Scalar, max_val: Scalar) -> Result<Tensor> {
    if !self_.dtype().is_floating_point() && self_.dtype() != ScalarType::Bool {
        // Integer inputs clamp in their own dtype (PyTorch's hardtanh accepts them).
        return crate::ops::clamp(self_, Some(min_val), Some(max_val));
    }
    if let Some(r) = activation_on_device("hardtanh", crate::device_kernel!("hardtanh"), self_, &[min_val, max_val]) {
        return r;
    }
    let (lo, hi) = (min_val.to_f64(), max_val.to_f64());
    activation("hardtanh", self_, move |x| if x.is_nan() { x } else { x.max(lo).min(hi) })
}
/// `elu` on f32 with the vectorised `expm1` (Note [Always-inlined kernels] in `cpu/loops.rs`).
#[derive(Clone, Copy)]
struct EluF32<const FMA: bool> {
    alpha_scale: f32,
    scale: f32,
    input_scale: f32,
}
impl<const FMA: bool> Kernel1<f32, f32> for EluF32<FMA> {
    #[inline(always)]
    fn call(&self, x: f32) -> f32 {
        let neg = expm1_f32::<FMA>(x * self.input_scale) * self.alpha_scale;
        if x > 0.0 {
            x * self.scale
        } else {
            neg
        }
    }
}

/// `softplus` on f32 with the vectorised `exp` and `log1p`.
#[derive(Clone, Copy)]
struct SoftplusF32<const FMA: bool> {
    beta: f32,
    threshold: f32,
}
impl<const FMA: bool> Kernel1<f32, f32> for SoftplusF32<FMA> {
    #[inline(always)]
    fn call(&self, x: f32) -> f32 {
        let z = x * self.beta;
        // max(z, 0) + log1p(e^-|z|): the same function without the overflow of e^z past 88 (a
        // threshold above that would otherwise give inf).
        let pos = if z > 0.0 { z } else { 0.0 };
        let r = (pos + log1p_f32::<FMA>(exp_f32::<FMA>(-z.abs()))) / self.beta;
        if z > self.threshold {
            x
        } else {
            r
        }
    }
}

/// For an f32 input, runs `$kernel` (a kernel type generic over fused multiply-adds, FMA where
/// the CPU has it; Note [Always-inlined kernels] in `cpu/loops.rs`) and returns its result from
/// the enclosing function; other dtypes fall through.
macro_rules! f32_kernel_activation {
    ($op:literal, $a:expr, $kernel:ident { $($field:ident: $value:expr),* $(,)? }) => {
        if $a.dtype() == ScalarType::F32 {
            let iter = unary_iter($op, $a, false)?;
            if crate::native::unary::fast_with_fma() {
                unary_wide_loop::<f32, f32, _>(&iter, $kernel::<true> { $($field: $value),* });
            } else {
                unary_kernel_loop::<f32, f32, _>(&iter, $kernel::<false> { $($field: $value),* });
            }
            return iter.output(0);
        }
    };
}

/// An activation that is a [`UnaryFloatOp`]: f32 through its vectorised body, other floating
/// dtypes in f64.
fn op_activation<Op: UnaryFloatOp>(a: &Tensor) -> Result<Tensor> {
    if a.dtype() == ScalarType::F32 {
        let iter = unary_iter(Op::NAME, a, false)?;
        fast_f32_loop::<Op>(&iter);
        return iter.output(0);
    }
    activation(Op::NAME, a, Op::f64)
}

/// `elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor`
pub fn elu(self_: &Tensor, alpha: Scalar, scale: Scalar, input_scale: Scalar) -> Result<Tensor> {
    if let Some(r) = activation_on_device("elu", crate::device_kernel!("elu"), self_, &[alpha, scale, input_scale]) {
        return r;
    }
    let (a, s, i) = (alpha.to_f64(), scale.to_f64(), input_scale.to_f64());
    f32_kernel_activation!(
        "elu",
        self_,
        EluF32 { alpha_scale: (a * s) as f32, scale: s as f32, input_scale: i as f32 }
    );
    activation("elu", self_, move |x| if x > 0.0 { x * s } else { (x * i).exp_m1() * a * s })
}
/// `softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor`
pub fn softplus(self_: &Tensor, beta: Scalar, threshold: Scalar) -> Result<Tensor> {
    if let Some(r) = activation_on_device("softplus", crate::device_kernel!("softplus"), self_, &[beta, threshold]) {
        return r;
    }
    let (b, t) = (beta.to_f64(), threshold.to_f64());
    f32_kernel_activation!("softplus", self_, SoftplusF32 { beta: b as f32, threshold: t as f32 });
    activation("softplus", self_, move |x| if x * b > t { x } else { (x * b).exp().ln_1p() / b })
}
/// `gelu(Tensor self, *, str approximate='none') -> Tensor`
pub fn gelu(self_: &Tensor, approximate: &str) -> Result<Tensor> {
    let kernel: &'static crate::native::stub::Kernel =
        if approximate == "tanh" { crate::device_kernel!("gelu_tanh") } else { crate::device_kernel!("gelu") };
    if matches!(approximate, "none" | "tanh") {
        if let Some(r) = activation_on_device("gelu", kernel, self_, &[]) {
            return r;
        }
    }
    match approximate {
        "none" => op_activation::<GeluErf>(self_),
        "tanh" => op_activation::<GeluTanh>(self_),
        other => {
            Err(Error::invalid("gelu", format!("approximate argument must be either none or tanh, got '{other}'")))
        }
    }
}
/// `logit(Tensor self, float? eps=None) -> Tensor`
pub fn logit(self_: &Tensor, eps: Option<f64>) -> Result<Tensor> {
    let iter = unary_iter("logit", self_, true)?;
    if !iter.is_cpu() {
        let e = Scalar::Float(eps.unwrap_or(0.0));
        return run_on_device(
            crate::device_kernel!("logit"),
            iter,
            &[e, Scalar::Float(if eps.is_some() { 1.0 } else { 0.0 })],
        );
    }
    float_map(&iter, "logit", move |x| {
        // PyTorch's `x < lo ? lo : (x > hi ? hi : x)`, not `f64::clamp`, which panics when
        // `eps > 0.5` (lo > hi) or eps is NaN.
        let z = eps.map_or(x, |e| {
            if x < e {
                e
            } else if x > 1.0 - e {
                1.0 - e
            } else {
                x
            }
        });
        (z / (1.0 - z)).ln()
    })?;
    iter.output(0)
}

// ---- clamp with tensor bounds, clamp_min/clamp_max ---------------------------------------------

/// `min(max(x, lo), hi)` for any dtype; NaN in any operand propagates (floating dtypes).
#[inline(always)]
#[allow(clippy::eq_op)] // `v != v` is the NaN test that also compiles for integers
fn clamp_value<T: Element>(x: T, lo: Option<T>, hi: Option<T>) -> T {
    if x != x {
        return x;
    }
    let mut v = x;
    if let Some(l) = lo {
        if l != l {
            return l;
        }
        if v < l {
            v = l;
        }
    }
    if let Some(h) = hi {
        if h != h {
            return h;
        }
        if v > h {
            v = h;
        }
    }
    v
}

/// `clamp` on a device, from its `maximum` and `minimum` kernels (a NaN in `a` or a bound
/// propagates, as PyTorch's clamp; with `lo > hi` every element becomes `hi`), written into
/// `out` when given.
fn clamp_on_device(out: Option<&Tensor>, a: &Tensor, lo: Option<Tensor>, hi: Option<Tensor>) -> Result<Tensor> {
    let mut r = a.clone();
    if let Some(l) = lo {
        r = crate::ops::maximum(&r, &l)?;
    }
    if let Some(h) = hi {
        r = crate::ops::minimum(&r, &h)?;
    }
    match out {
        Some(o) => {
            crate::native::copy::copy_into(o, &r)?;
            Ok(o.clone())
        }
        None => Ok(r),
    }
}

fn clamp_tensor_impl(
    op: &'static str,
    out: Option<&Tensor>,
    a: &Tensor,
    min: Option<&Tensor>,
    max: Option<&Tensor>,
) -> Result<Tensor> {
    if crate::native::on_device(a) && (min.is_some() || max.is_some()) {
        return clamp_on_device(out, a, min.cloned(), max.cloned());
    }
    let mut cfg = TensorIteratorConfig::new(op).add_output(out).add_input(a);
    match (min, max) {
        (None, None) => {
            return Err(Error::invalid(op, "torch.clamp: At least one of 'min' or 'max' must not be None"));
        }
        (Some(l), Some(h)) => cfg = cfg.add_input(l).add_input(h),
        (Some(b), None) | (None, Some(b)) => cfg = cfg.add_input(b),
    }
    let iter = cfg.promote_all().build()?;
    c10::dispatch_all_types!(iter.common_dtype(), T => {
        match (min.is_some(), max.is_some()) {
            (true, true) => ternary_loop::<T, T, T, T>(&iter, |x, l, h| clamp_value(x, Some(l), Some(h))),
            (true, false) => binary_loop::<T, T, T>(&iter, |x, l| clamp_value(x, Some(l), None)),
            _ => binary_loop::<T, T, T>(&iter, |x, h| clamp_value(x, None, Some(h))),
        }
    });
    iter.output(0)
}

fn clamp_scalar_impl(
    op: &'static str,
    out: Option<&Tensor>,
    a: &Tensor,
    min: Option<Scalar>,
    max: Option<Scalar>,
) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        return Err(Error::invalid(op, "torch.clamp: At least one of 'min' or 'max' must not be None"));
    }
    if crate::native::on_device(a) {
        // Each bound in the input's dtype, converted as the CPU loop below converts it
        // (`Scalar::to`, which wraps an out-of-range integer: `hardtanh` of uint8 by -1 and 1).
        let bound = |s: Scalar| -> Result<Tensor> {
            let host = c10::dispatch_all_types!(a.dtype(), T => Tensor::from_vec(vec![s.to::<T>()], &[])?);
            host.to_device(a.device())
        };
        return clamp_on_device(out, a, min.map(bound).transpose()?, max.map(bound).transpose()?);
    }
    let iter = TensorIteratorConfig::new(op).add_output(out).add_input(a).promote_all().build()?;
    c10::dispatch_all_types!(iter.common_dtype(), T => {
        let (lo, hi) = (min.map(|s| s.to::<T>()), max.map(|s| s.to::<T>()));
        unary_loop::<T, T>(&iter, move |x| clamp_value(x, lo, hi));
    });
    iter.output(0)
}

/// `clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)`
pub fn clamp_(self_: &Tensor, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
    clamp_scalar_impl("clamp_", Some(self_), self_, min, max)
}
/// `clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out) -> Tensor(a!)`
pub fn clamp_out(self_: &Tensor, min: Option<Scalar>, max: Option<Scalar>, out: &Tensor) -> Result<Tensor> {
    clamp_scalar_impl("clamp", Some(out), self_, min, max)
}
/// `clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor`
pub fn clamp_tensor(self_: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
    clamp_tensor_impl("clamp", None, self_, min, max)
}
/// `clamp_.Tensor(Tensor(a!) self, Tensor? min=None, Tensor? max=None) -> Tensor(a!)`
pub fn clamp_tensor_(self_: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
    clamp_tensor_impl("clamp_", Some(self_), self_, min, max)
}
/// `clamp.Tensor_out(Tensor self, Tensor? min=None, Tensor? max=None, *, Tensor(a!) out) -> Tensor(a!)`
pub fn clamp_tensor_out(self_: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>, out: &Tensor) -> Result<Tensor> {
    clamp_tensor_impl("clamp", Some(out), self_, min, max)
}
/// `clamp_min(Tensor self, Scalar min) -> Tensor`
pub fn clamp_min(self_: &Tensor, min: Scalar) -> Result<Tensor> {
    clamp_scalar_impl("clamp_min", None, self_, Some(min), None)
}
/// `clamp_min_(Tensor(a!) self, Scalar min) -> Tensor(a!)`
pub fn clamp_min_(self_: &Tensor, min: Scalar) -> Result<Tensor> {
    clamp_scalar_impl("clamp_min_", Some(self_), self_, Some(min), None)
}
/// `clamp_min.out(Tensor self, Scalar min, *, Tensor(a!) out) -> Tensor(a!)`
pub fn clamp_min_out(self_: &Tensor, min: Scalar, out: &Tensor) -> Result<Tensor> {
    clamp_scalar_impl("clamp_min", Some(out), self_, Some(min), None)
}
/// `clamp_min.Tensor(Tensor self, Tensor min) -> Tensor`
pub fn clamp_min_tensor(self_: &Tensor, min: &Tensor) -> Result<Tensor> {
    clamp_tensor_impl("clamp_min", None, self_, Some(min), None)
}
/// `clamp_min_.Tensor(Tensor(a!) self, Tensor min) -> Tensor(a!)`
pub fn clamp_min_tensor_(self_: &Tensor, min: &Tensor) -> Result<Tensor> {
    clamp_tensor_impl("clamp_min_", Some(self_), self_, Some(min), None)
}
/// `clamp_min.Tensor_out(Tensor self, Tensor min, *, Tensor(a!) out) -> Tensor(a!)`
pub fn clamp_min_tensor_out(self_: &Tensor, min: &Tensor, out: &Tensor) -> Result<Tensor> {
    clamp_tensor_impl("clamp_min", Some(out), self_, Some(min), None)
}
/// `clamp_max(Tensor self, Scalar max) -> Tensor`
pub fn clamp_max(self_: &Tensor, max: Scalar) -> Result<Tensor> {
    clamp_scalar_impl("clamp_max", None, self_, None, Some(max))
}
/// `clamp_max_(Tensor(a!) self, Scalar max) -> Tensor(a!)`
pub fn clamp_max_(self_: &Tensor, max: Scalar) -> Result<Tensor> {
    clamp_scalar_impl("clamp_max_", Some(self_), self_, None, Some(max))
}
/// `clamp_max.out(Tensor self, Scalar max, *, Tensor(a!) out) -> Tensor(a!)`
pub fn clamp_max_out(self_: &Tensor, max: Scalar, out: &Tensor) -> Result<Tensor> {
    clamp_scalar_impl("clamp_max", Some(out), self_, None, Some(max))
}
/// `clamp_max.Tensor(Tensor self, Tensor max) -> Tensor`
pub fn clamp_max_tensor(self_: &Tensor, max: &Tensor) -> Result<Tensor> {
    clamp_tensor_impl("clamp_max", None, self_, None, Some(max))
}
/// `clamp_max_.Tensor(Tensor(a!) self, Tensor max) -> Tensor(a!)`
pub fn clamp_max_tensor_(self_: &Tensor, max: &Tensor) -> Result<Tensor> {
    clamp_tensor_impl("clamp_max_", Some(self_), self_, None, Some(max))
}
/// `clamp_max.Tensor_out(Tensor self, Tensor max, *, Tensor(a!) out) -> Tensor(a!)`
pub fn clamp_max_tensor_out(self_: &Tensor, max: &Tensor, out: &Tensor) -> Result<Tensor> {
    clamp_tensor_impl("clamp_max", Some(out), self_, None, Some(max))
}

// ---- more activations ----------------------------------------------------------------------------

/// `relu6(Tensor self) -> Tensor`: `hardtanh(self, 0, 6)`.
pub fn relu6(self_: &Tensor) -> Result<Tensor> {
    crate::ops::hardtanh(self_, Scalar::Int(0), Scalar::Int(6))
}
/// `relu6_(Tensor(a!) self) -> Tensor(a!)`
pub fn relu6_(self_: &Tensor) -> Result<Tensor> {
    if !self_.dtype().is_floating_point() {
        return Err(Error::UnsupportedDtype { op: "relu6_".into(), dtype: self_.dtype() });
    }
    clamp_scalar_impl("relu6_", Some(self_), self_, Some(Scalar::Int(0)), Some(Scalar::Int(6)))
}

/// A result computed from device operators, returned, written in place (`out` is `a`) or into
/// an `out=` tensor.
fn device_result(op: &str, out: Option<&Tensor>, a: &Tensor, r: &Tensor) -> Result<Tensor> {
    match out {
        None => Ok(r.clone()),
        Some(o) if o.is_same(a) => {
            crate::native::copy::copy_into(o, r)?;
            Ok(o.clone())
        }
        Some(o) => crate::native::join::write_out(op, o, r),
    }
}

fn celu_impl(op: &'static str, out: Option<&Tensor>, a: &Tensor, alpha: Scalar) -> Result<Tensor> {
    let al = alpha.to_f64();
    if al == 0.0 {
        return Err(Error::invalid(op, "ZeroDivisionError"));
    }
    if !a.dtype().is_floating_point() {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype: a.dtype() });
    }
    if crate::native::on_device(a) {
        // PyTorch's own definition: `elu` with `input_scale = 1 / alpha`, the device's kernel.
        let r = crate::ops::elu(a, alpha, Scalar::Int(1), Scalar::Float(1.0 / al))?;
        return device_result(op, out, a, &r);
    }
    let iter = TensorIteratorConfig::new(op).add_output(out).add_input(a).promote_all().build()?;
    float_map(&iter, op, move |x| if x > 0.0 { x } else { al * (x / al).exp_m1() })?;
    iter.output(0)
}
/// `celu(Tensor self, Scalar alpha=1.0) -> Tensor`: `max(0, x) + min(0, alpha (exp(x / alpha) - 1))`.
pub fn celu(self_: &Tensor, alpha: Scalar) -> Result<Tensor> {
    celu_impl("celu", None, self_, alpha)
}
/// `celu_(Tensor(a!) self, Scalar alpha=1.0) -> Tensor(a!)`
pub fn celu_(self_: &Tensor, alpha: Scalar) -> Result<Tensor> {
    celu_impl("celu_", Some(self_), self_, alpha)
}

fn threshold_impl(
    op: &'static str,
    out: Option<&Tensor>,
    a: &Tensor,
    threshold: Scalar,
    value: Scalar,
) -> Result<Tensor> {
    if crate::native::on_device(a) {
        // `where(a <= threshold, value, a)` from the device's comparison and select kernels, in
        // `a`'s dtype: the threshold and the value converted to it first, as the CPU loop does
        // (for int64, a threshold of -0.5 is 0, so 0 is replaced).
        let scalar = |s: Scalar| crate::ops::full(&[], s, Some(a.dtype()), None, Some(a.device()), None);
        let (th, v) = (scalar(threshold)?, scalar(value)?);
        let r = crate::ops::where_self(&crate::ops::le(a, &th)?, &v, a)?;
        return device_result(op, out, a, &r);
    }
    let iter = TensorIteratorConfig::new(op).add_output(out).add_input(a).promote_all().build()?;
    c10::dispatch_all_types!(iter.common_dtype(), T => {
        let (th, v) = (threshold.to::<T>(), value.to::<T>());
        unary_loop::<T, T>(&iter, move |x| if x <= th { v } else { x });
    });
    iter.output(0)
}
/// `threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor`: `x <= threshold ? value : x`.
pub fn threshold(self_: &Tensor, threshold: Scalar, value: Scalar) -> Result<Tensor> {
    threshold_impl("threshold", None, self_, threshold, value)
}
/// `threshold_(Tensor(a!) self, Scalar threshold, Scalar value) -> Tensor(a!)`
pub fn threshold_(self_: &Tensor, threshold: Scalar, value: Scalar) -> Result<Tensor> {
    threshold_impl("threshold_", Some(self_), self_, threshold, value)
}
/// `threshold.out(Tensor self, Scalar threshold, Scalar value, *, Tensor(a!) out) -> Tensor(a!)`
pub fn threshold_out(self_: &Tensor, threshold: Scalar, value: Scalar, out: &Tensor) -> Result<Tensor> {
    threshold_impl("threshold", Some(out), self_, threshold, value)
}

/// `glu(Tensor self, int dim=-1) -> Tensor`: `a * sigmoid(b)` for the two halves of `dim`.
pub fn glu(self_: &Tensor, dim: i64) -> Result<Tensor> {
    const OP: &str = "glu";
    if self_.dim() == 0 {
        return Err(Error::shape(OP, "glu does not support scalars because halving size must be even"));
    }
    let d = crate::wrap_dim(OP, dim, self_.dim())?;
    let n = self_.sizes()[d];
    if n % 2 != 0 {
        return Err(Error::shape(OP, format!("Halving dimension must be even, but dimension {d} is size {n}")));
    }
    if !self_.dtype().is_floating_point() {
        return Err(Error::UnsupportedDtype { op: OP.into(), dtype: self_.dtype() });
    }
    let a = crate::ops::narrow(self_, d as i64, 0, n / 2)?;
    let b = crate::ops::narrow(self_, d as i64, n / 2, n / 2)?;
    if crate::native::on_device(self_) {
        return crate::ops::mul(&a, &crate::ops::sigmoid(&b)?);
    }
    let iter = binary_iter(OP, &a, &b, false)?;
    float_zip(&iter, OP, |x, y| x / (1.0 + (-y).exp()))?;
    iter.output(0)
}

/// `prelu(Tensor self, Tensor weight) -> Tensor`: `x > 0 ? x : weight * x`, with one weight or
/// one per channel (dimension 1).
pub fn prelu(self_: &Tensor, weight: &Tensor) -> Result<Tensor> {
    const OP: &str = "prelu";
    if crate::native::on_device(self_) {
        return prelu_by_where(self_, weight);
    }
    let w = prelu_weight(self_, weight)?;
    let iter = binary_iter(OP, self_, &w, false)?;
    float_zip(&iter, OP, |x, a| if x > 0.0 { x } else { a * x })?;
    iter.output(0)
}

/// `prelu` as `where(x > 0, x, w * x)`, the weight shaped as the kernel shapes it: on a device,
/// and autograd's decomposition.
pub fn prelu_by_where(self_: &Tensor, weight: &Tensor) -> Result<Tensor> {
    let w = prelu_weight(self_, weight)?;
    let positive = crate::ops::gt_scalar(self_, c10::Scalar::Int(0))?;
    crate::ops::where_self(&positive, self_, &crate::ops::mul(self_, &w)?)
}

/// `prelu`'s weight shaped to broadcast against `self_`: a scalar for one parameter, else one
/// per channel (dimension 1). Checks its size as PyTorch does; autograd's decomposition uses
/// it too.
pub fn prelu_weight(self_: &Tensor, weight: &Tensor) -> Result<Tensor> {
    const OP: &str = "prelu";
    if weight.dim() > 1 {
        return Err(Error::shape(
            OP,
            format!("prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {}", weight.dim()),
        ));
    }
    let nw = weight.numel();
    if nw == 1 {
        return crate::ops::reshape(weight, &[]);
    }
    let channels = if self_.dim() >= 2 { self_.sizes()[1] } else { 1 };
    if nw != channels {
        return Err(Error::shape(
            OP,
            format!(
                "Mismatch of parameter numbers and input channel size. Found parameter numbers = {nw} and channel size = {channels}."
            ),
        ));
    }
    let mut shape = vec![1i64; self_.dim()];
    shape[1] = nw;
    crate::ops::reshape(weight, &shape)
}

/// `log_sigmoid_forward(Tensor self) -> (Tensor output, Tensor buffer)`: `log(sigmoid(x))`
/// computed as `min(x, 0) - log1p(exp(-|x|))`, and the buffer `exp(-|x|)`.
pub fn log_sigmoid_forward(self_: &Tensor) -> Result<(Tensor, Tensor)> {
    if !self_.dtype().is_floating_point() {
        return Err(Error::UnsupportedDtype { op: "log_sigmoid_forward".into(), dtype: self_.dtype() });
    }
    let out = activation("log_sigmoid_forward", self_, |x| x.min(0.0) - (-x.abs()).exp().ln_1p())?;
    let buffer = activation("log_sigmoid_forward", self_, |x| (-x.abs()).exp())?;
    Ok((out, buffer))
}
/// `log_sigmoid(Tensor self) -> Tensor`
pub fn log_sigmoid(self_: &Tensor) -> Result<Tensor> {
    if crate::native::on_device(self_) {
        // `min(x, 0) - log1p(exp(-|x|))` from the device's kernels.
        if !self_.dtype().is_floating_point() {
            return Err(Error::UnsupportedDtype { op: "log_sigmoid".into(), dtype: self_.dtype() });
        }
        let tail = crate::ops::log1p(&crate::ops::exp(&crate::ops::neg(&crate::ops::abs(self_)?)?)?)?;
        let low = crate::ops::clamp(self_, None, Some(Scalar::Int(0)))?;
        return crate::ops::sub(&low, &tail, Scalar::Int(1));
    }
    activation("log_sigmoid", self_, |x| x.min(0.0) - (-x.abs()).exp().ln_1p())
}

// ---- more binary ---------------------------------------------------------------------------------

pub(crate) fn zip_out(
    op: &'static str,
    out: Option<&Tensor>,
    a: &Tensor,
    b: &Tensor,
    int_to_float: bool,
    f: impl Fn(f64, f64) -> f64 + Sync,
) -> Result<Tensor> {
    let iter = TensorIteratorConfig::binary_op(op, out, a, b).promote_integer_inputs_to_float(int_to_float).build()?;
    float_zip(&iter, op, f)?;
    iter.output(0)
}

fn fmax_fmin(op: &'static str, out: Option<&Tensor>, a: &Tensor, b: &Tensor, take_max: bool) -> Result<Tensor> {
    let iter = TensorIteratorConfig::binary_op(op, out, a, b).build()?;
    match_float!(iter.common_dtype(), T, A => {
        binary_loop::<T, T, T>(&iter, move |x, y| {
            let (p, q) = (x.to_acc(), y.to_acc());
            // NaN is ignored unless both are NaN (C's fmax/fmin).
            let r = if q.is_nan() || (!p.is_nan() && (p > q) == take_max) { p } else { q };
            T::from_acc(r)
        });
    }, other => c10::dispatch_all_types!(other, T => {
        #[allow(clippy::bool_comparison)]
        binary_loop::<T, T, T>(&iter, move |x, y| if (x > y) == take_max { x } else { y });
    }));
    iter.output(0)
}

/// `fmax(Tensor self, Tensor other) -> Tensor`: the maximum, ignoring NaN.
pub fn fmax(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    fmax_fmin("fmax", None, self_, other, true)
}
/// `fmax.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)`
pub fn fmax_out(self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<Tensor> {
    fmax_fmin("fmax", Some(out), self_, other, true)
}
/// `fmin(Tensor self, Tensor other) -> Tensor`: the minimum, ignoring NaN.
pub fn fmin(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    fmax_fmin("fmin", None, self_, other, false)
}
/// `fmin.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)`
pub fn fmin_out(self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<Tensor> {
    fmax_fmin("fmin", Some(out), self_, other, false)
}

/// `fmax`/`fmin` on a device, as compositions of device operators: the maximum (or minimum),
/// then the other operand wherever one of them is NaN (NaN only where both are).
fn fmax_fmin_device(a: &Tensor, b: &Tensor, max: bool) -> Result<Tensor> {
    let m = if max { crate::ops::maximum(a, b)? } else { crate::ops::minimum(a, b)? };
    if !m.dtype().is_floating_point() {
        return Ok(m);
    }
    let m = crate::ops::where_self(&crate::ops::isnan(a)?, b, &m)?;
    crate::ops::where_self(&crate::ops::isnan(b)?, a, &m)
}

/// `fmax(Tensor self, Tensor other) -> Tensor` on CUDA.
pub fn fmax_device(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    fmax_fmin_device(self_, other, true)
}

/// `fmin(Tensor self, Tensor other) -> Tensor` on CUDA.
pub fn fmin_device(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    fmax_fmin_device(self_, other, false)
}

/// `hypot(Tensor self, Tensor other) -> Tensor`: `sqrt(a^2 + b^2)` without overflow.
pub fn hypot(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    zip_out("hypot", None, self_, other, false, f64::hypot)
}
/// `hypot_(Tensor(a!) self, Tensor other) -> Tensor(a!)`
pub fn hypot_(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    zip_out("hypot_", Some(self_), self_, other, false, f64::hypot)
}
/// `hypot.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)`
pub fn hypot_out(self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<Tensor> {
    zip_out("hypot", Some(out), self_, other, false, f64::hypot)
}

/// `copysign.Tensor(Tensor self, Tensor other) -> Tensor`: `|self|` with the sign of `other`
/// (integers promote to the default float dtype).
pub fn copysign(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    zip_out("copysign", None, self_, other, true, f64::copysign)
}
/// `copysign_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)`
pub fn copysign_(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    zip_out("copysign_", Some(self_), self_, other, true, f64::copysign)
}
/// `copysign.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)`
pub fn copysign_out(self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<Tensor> {
    zip_out("copysign", Some(out), self_, other, true, f64::copysign)
}
/// `copysign.Scalar(Tensor self, Scalar other) -> Tensor`
pub fn copysign_scalar(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    copysign(self_, &Tensor::wrapped_scalar(other))
}
/// `copysign_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)`
pub fn copysign_scalar_(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    copysign_(self_, &Tensor::wrapped_scalar(other))
}

/// `floor_divide(Tensor self, Tensor other) -> Tensor`: `div(self, other, rounding_mode='floor')`.
pub fn floor_divide(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    crate::ops::div_tensor_mode(self_, other, Some("floor"))
}
/// `floor_divide_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)`
pub fn floor_divide_(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    crate::ops::div_tensor_mode_(self_, other, Some("floor"))
}
/// `floor_divide.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)`
pub fn floor_divide_out(self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<Tensor> {
    crate::ops::div_out_mode(self_, other, Some("floor"), out)
}
/// `floor_divide.Scalar(Tensor self, Scalar other) -> Tensor`
pub fn floor_divide_scalar(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    crate::ops::div_tensor_mode(self_, &Tensor::wrapped_scalar(other), Some("floor"))
}
/// `floor_divide_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)`
pub fn floor_divide_scalar_(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    crate::ops::div_tensor_mode_(self_, &Tensor::wrapped_scalar(other), Some("floor"))
}

// ---- bitwise -------------------------------------------------------------------------------------

#[derive(Copy, Clone)]
enum Bitwise {
    And,
    Or,
    Xor,
}

fn bitwise_impl(op: &'static str, out: Option<&Tensor>, a: &Tensor, b: &Tensor, k: Bitwise) -> Result<Tensor> {
    let iter = TensorIteratorConfig::binary_op(op, out, a, b).build()?;
    match_int!(iter.common_dtype(), T => {
        match k {
            Bitwise::And => binary_loop::<T, T, T>(&iter, |x, y| x & y),
            Bitwise::Or => binary_loop::<T, T, T>(&iter, |x, y| x | y),
            Bitwise::Xor => binary_loop::<T, T, T>(&iter, |x, y| x ^ y),
        }
    }, other => match other {
        ScalarType::Bool => match k {
            Bitwise::And => binary_loop::<bool, bool, bool>(&iter, |x, y| x & y),
            Bitwise::Or => binary_loop::<bool, bool, bool>(&iter, |x, y| x | y),
            Bitwise::Xor => binary_loop::<bool, bool, bool>(&iter, |x, y| x ^ y),
        },
        d => {
            let name = op.trim_end_matches('_');
            return Err(Error::UnsupportedDtype { op: format!("{name}_cpu"), dtype: d });
        }
    });
    iter.output(0)
}

macro_rules! bitwise_ops {
    ($k:expr, $name:literal, $t:ident, $s:ident, $st:ident, $t_:ident, $s_:ident, $t_out:ident) => {
        #[doc = concat!("`", $name, ".Tensor(Tensor self, Tensor other) -> Tensor`")]
        pub fn $t(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
            bitwise_impl($name, None, self_, other, $k)
        }
        #[doc = concat!("`", $name, ".Scalar(Tensor self, Scalar other) -> Tensor`")]
        pub fn $s(self_: &Tensor, other: Scalar) -> Result<Tensor> {
            bitwise_impl($name, None, self_, &Tensor::wrapped_scalar(other), $k)
        }
        #[doc = concat!("`", $name, ".Scalar_Tensor(Scalar self, Tensor other) -> Tensor`")]
        pub fn $st(self_: Scalar, other: &Tensor) -> Result<Tensor> {
            bitwise_impl($name, None, &Tensor::wrapped_scalar(self_), other, $k)
        }
        #[doc = concat!("`", $name, "_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)`")]
        pub fn $t_(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
            bitwise_impl(concat!($name, "_"), Some(self_), self_, other, $k)
        }
        #[doc = concat!("`", $name, "_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)`")]
        pub fn $s_(self_: &Tensor, other: Scalar) -> Result<Tensor> {
            bitwise_impl(concat!($name, "_"), Some(self_), self_, &Tensor::wrapped_scalar(other), $k)
        }
        #[doc = concat!("`", $name, ".Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)`")]
        pub fn $t_out(self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<Tensor> {
            bitwise_impl($name, Some(out), self_, other, $k)
        }
    };
}

bitwise_ops!(
    Bitwise::And,
    "bitwise_and",
    bitwise_and,
    bitwise_and_scalar,
    bitwise_and_scalar_tensor,
    bitwise_and_,
    bitwise_and_scalar_,
    bitwise_and_out
);
bitwise_ops!(
    Bitwise::Or,
    "bitwise_or",
    bitwise_or,
    bitwise_or_scalar,
    bitwise_or_scalar_tensor,
    bitwise_or_,
    bitwise_or_scalar_,
    bitwise_or_out
);
bitwise_ops!(
    Bitwise::Xor,
    "bitwise_xor",
    bitwise_xor,
    bitwise_xor_scalar,
    bitwise_xor_scalar_tensor,
    bitwise_xor_,
    bitwise_xor_scalar_,
    bitwise_xor_out
);

/// Shifts with PyTorch's rules: a shift by a negative amount or by at least the bit width gives
/// 0 (left, and right for non-negative values) or -1 (right shift of a negative value).
fn shift_impl(op: &'static str, out: Option<&Tensor>, a: &Tensor, b: &Tensor, left: bool) -> Result<Tensor> {
    let iter = TensorIteratorConfig::binary_op(op, out, a, b).build()?;
    match_int!(iter.common_dtype(), T => {
        let bits = (std::mem::size_of::<T>() * 8) as i64;
        #[allow(unused_comparisons, clippy::absurd_extreme_comparisons, clippy::unnecessary_cast)]
        if left {
            binary_loop::<T, T, T>(&iter, move |x, y| {
                let s = y as i64;
                if s < 0 || s >= bits { 0 } else { x.wrapping_shl(s as u32) }
            });
        } else {
            binary_loop::<T, T, T>(&iter, move |x, y| {
                let s = y as i64;
                if s < 0 || s >= bits { if x < 0 { (0 as T).wrapping_sub(1) } else { 0 } } else { x >> (s as u32) }
            });
        }
    }, d => {
        let name = if left { "lshift_cpu" } else { "rshift_cpu" };
        return Err(Error::UnsupportedDtype { op: name.into(), dtype: d });
    });
    iter.output(0)
}

macro_rules! shift_ops {
    ($left:expr, $name:literal, $t:ident, $ts:ident, $st:ident, $t_:ident, $ts_:ident, $t_out:ident, $ts_out:ident) => {
        #[doc = concat!("`", $name, ".Tensor(Tensor self, Tensor other) -> Tensor`")]
        pub fn $t(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
            shift_impl($name, None, self_, other, $left)
        }
        #[doc = concat!("`", $name, ".Tensor_Scalar(Tensor self, Scalar other) -> Tensor`")]
        pub fn $ts(self_: &Tensor, other: Scalar) -> Result<Tensor> {
            shift_impl($name, None, self_, &Tensor::wrapped_scalar(other), $left)
        }
        #[doc = concat!("`", $name, ".Scalar_Tensor(Scalar self, Tensor other) -> Tensor`")]
        pub fn $st(self_: Scalar, other: &Tensor) -> Result<Tensor> {
            shift_impl($name, None, &Tensor::wrapped_scalar(self_), other, $left)
        }
        #[doc = concat!("`", $name, "_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)`")]
        pub fn $t_(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
            shift_impl(concat!($name, "_"), Some(self_), self_, other, $left)
        }
        #[doc = concat!("`", $name, "_.Tensor_Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)`")]
        pub fn $ts_(self_: &Tensor, other: Scalar) -> Result<Tensor> {
            shift_impl(concat!($name, "_"), Some(self_), self_, &Tensor::wrapped_scalar(other), $left)
        }
        #[doc = concat!("`", $name, ".Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)`")]
        pub fn $t_out(self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<Tensor> {
            shift_impl($name, Some(out), self_, other, $left)
        }
        #[doc = concat!("`", $name, ".Tensor_Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)`")]
        pub fn $ts_out(self_: &Tensor, other: Scalar, out: &Tensor) -> Result<Tensor> {
            shift_impl($name, Some(out), self_, &Tensor::wrapped_scalar(other), $left)
        }
    };
}

shift_ops!(
    true,
    "bitwise_left_shift",
    bitwise_left_shift,
    bitwise_left_shift_tensor_scalar,
    bitwise_left_shift_scalar_tensor,
    bitwise_left_shift_,
    bitwise_left_shift_tensor_scalar_,
    bitwise_left_shift_out,
    bitwise_left_shift_tensor_scalar_out
);
shift_ops!(
    false,
    "bitwise_right_shift",
    bitwise_right_shift,
    bitwise_right_shift_tensor_scalar,
    bitwise_right_shift_scalar_tensor,
    bitwise_right_shift_,
    bitwise_right_shift_tensor_scalar_,
    bitwise_right_shift_out,
    bitwise_right_shift_tensor_scalar_out
);

// ---- logical -------------------------------------------------------------------------------------

fn logical_binary(
    op: &'static str,
    kernel: &'static crate::native::stub::Kernel,
    a: &Tensor,
    b: &Tensor,
    f: fn(bool, bool) -> bool,
) -> Result<Tensor> {
    let a = crate::native::copy::to_dtype(a, ScalarType::Bool)?;
    let b = crate::native::copy::to_dtype(b, ScalarType::Bool)?;
    let iter = TensorIteratorConfig::binary_op(op, None, &a, &b).build()?;
    if !iter.is_cpu() {
        return run_on_device(kernel, iter, &[]);
    }
    binary_loop::<bool, bool, bool>(&iter, f);
    iter.output(0)
}

/// `logical_or(Tensor self, Tensor other) -> Tensor`
pub fn logical_or(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    logical_binary("logical_or", crate::device_kernel!("logical_or"), self_, other, |x, y| x || y)
}
/// `logical_xor(Tensor self, Tensor other) -> Tensor`
pub fn logical_xor(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    logical_binary("logical_xor", crate::device_kernel!("logical_xor"), self_, other, |x, y| x != y)
}

/// `gcd(Tensor self, Tensor other) -> Tensor`: the non-negative greatest common divisor.
pub fn gcd(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    gcd_lcm("gcd", self_, other, false)
}

/// `lcm(Tensor self, Tensor other) -> Tensor`: `|a / gcd(a, b) * b|` (0 if either is 0).
pub fn lcm(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    gcd_lcm("lcm", self_, other, true)
}

fn gcd_lcm(op: &'static str, a: &Tensor, b: &Tensor, lcm: bool) -> Result<Tensor> {
    let iter = binary_iter(op, a, b, false)?;
    let dtype = iter.common_dtype();
    if dtype.is_floating_point() || dtype == ScalarType::Bool {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype });
    }
    match_int!(dtype, T => {
        #[allow(unused_comparisons, clippy::absurd_extreme_comparisons)]
        binary_loop::<T, T, T>(&iter, move |x, y| {
            // Euclid in wrapping arithmetic (the minimum of a signed type has no magnitude;
            // PyTorch wraps there too).
            let (mut p, mut q) = (x, y);
            while q != 0 {
                let r = p.wrapping_rem(q);
                p = q;
                q = r;
            }
            let g = if p < 0 { (0 as T).wrapping_sub(p) } else { p };
            if !lcm {
                return g;
            }
            if g == 0 {
                return 0;
            }
            let l = (x / g).wrapping_mul(y);
            if l < 0 { (0 as T).wrapping_sub(l) } else { l }
        });
    }, d => return Err(Error::UnsupportedDtype { op: op.into(), dtype: d }));
    iter.output(0)
}

/// `nextafter(Tensor self, Tensor other) -> Tensor`: the next representable value after `self`
/// toward `other`, in the (float) dtype of the operands.
pub fn nextafter(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let iter = binary_iter("nextafter", self_, other, false)?;
    match iter.common_dtype() {
        ScalarType::F32 => binary_loop::<f32, f32, f32>(&iter, libm::nextafterf),
        ScalarType::F64 => binary_loop::<f64, f64, f64>(&iter, libm::nextafter),
        d => return Err(Error::UnsupportedDtype { op: "nextafter".into(), dtype: d }),
    }
    iter.output(0)
}

/// `frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)`: `self = mantissa *
/// 2^exponent` with `|mantissa|` in [0.5, 1) (0, infinities and NaN keep exponent 0), the
/// exponent as int32.
pub fn frexp(self_: &Tensor) -> Result<(Tensor, Tensor)> {
    let dtype = self_.dtype();
    if !dtype.is_floating_point() {
        return Err(Error::invalid("frexp", "torch.frexp() only supports floating-point dtypes".to_string()));
    }
    if self_.device().is_meta() {
        let mantissa = Tensor::empty_uninit(self_.sizes(), dtype, self_.device())?;
        return Ok((mantissa, Tensor::empty_uninit(self_.sizes(), ScalarType::I32, self_.device())?));
    }
    // Every float value of a narrower type is exact in f64, and so are its mantissa and exponent.
    let v = self_.to_vec::<f64>()?;
    let (mut m, mut e) = (Vec::with_capacity(v.len()), Vec::with_capacity(v.len()));
    for x in v {
        let (mant, exp) = if x.is_finite() { libm::frexp(x) } else { (x, 0) };
        m.push(mant);
        e.push(exp);
    }
    let mantissa = crate::native::copy::to_dtype(&Tensor::from_vec(m, self_.sizes())?, dtype)?;
    Ok((mantissa, Tensor::from_vec(e, self_.sizes())?))
}

/// Cephes' convergence constants for the incomplete gamma function.
const IGAMMA_EPS: f64 = 1.1102230246251565e-16;
const IGAMMA_MAXLOG: f64 = 709.782712893384;
/// A bound on the series and continued-fraction iterations (both converge in far fewer for
/// every finite input; the bound keeps adversarial inputs from looping).
const IGAMMA_MAX_ITER: usize = 100_000;

/// `x^a e^-x / Gamma(a)`, or 0 where it underflows.
fn igamma_prefactor(a: f64, x: f64) -> f64 {
    let ax = a * x.ln() - x - libm::lgamma(a);
    if ax < -IGAMMA_MAXLOG {
        0.0
    } else {
        ax.exp()
    }
}

/// The regularized lower incomplete gamma function `P(a, x)`, with PyTorch's special values.
pub(crate) fn igamma_scalar(a: f64, x: f64) -> f64 {
    if a.is_nan() || x.is_nan() || a < 0.0 || x < 0.0 {
        return f64::NAN;
    }
    if a == 0.0 {
        return if x > 0.0 { 1.0 } else { f64::NAN };
    }
    if x == 0.0 {
        return 0.0;
    }
    if a.is_infinite() {
        return if x.is_infinite() { f64::NAN } else { 0.0 };
    }
    if x.is_infinite() {
        return 1.0;
    }
    if x > 1.0 && x > a {
        return 1.0 - igammac_cf(a, x);
    }
    // The power series.
    let ax = igamma_prefactor(a, x);
    if ax == 0.0 {
        return 0.0;
    }
    let (mut r, mut c, mut sum) = (a, 1.0, 1.0);
    for _ in 0..IGAMMA_MAX_ITER {
        r += 1.0;
        c *= x / r;
        sum += c;
        if c / sum <= IGAMMA_EPS {
            break;
        }
    }
    sum * ax / a
}

/// `Q(a, x)` by the continued fraction (for `x > 1` and `x > a`).
fn igammac_cf(a: f64, x: f64) -> f64 {
    let ax = igamma_prefactor(a, x);
    if ax == 0.0 {
        return 0.0;
    }
    const BIG: f64 = 4.503599627370496e15;
    const BIGINV: f64 = 2.220446049250313e-16;
    let mut y = 1.0 - a;
    let mut z = x + y + 1.0;
    let mut c = 0.0;
    let (mut pkm2, mut qkm2, mut pkm1, mut qkm1) = (1.0, x, x + 1.0, z * x);
    let mut ans = pkm1 / qkm1;
    for _ in 0..IGAMMA_MAX_ITER {
        c += 1.0;
        y += 1.0;
        z += 2.0;
        let yc = y * c;
        let pk = pkm1 * z - pkm2 * yc;
        let qk = qkm1 * z - qkm2 * yc;
        let t = if qk != 0.0 {
            let r = pk / qk;
            let t = ((ans - r) / r).abs();
            ans = r;
            t
        } else {
            1.0
        };
        pkm2 = pkm1;
        pkm1 = pk;
        qkm2 = qkm1;
        qkm1 = qk;
        if pk.abs() > BIG {
            pkm2 *= BIGINV;
            pkm1 *= BIGINV;
            qkm2 *= BIGINV;
            qkm1 *= BIGINV;
        }
        if t <= IGAMMA_EPS {
            break;
        }
    }
    ans * ax
}

/// The regularized upper incomplete gamma function `Q(a, x) = 1 - P(a, x)`.
pub(crate) fn igammac_scalar(a: f64, x: f64) -> f64 {
    if a.is_nan() || x.is_nan() || a < 0.0 || x < 0.0 {
        return f64::NAN;
    }
    if a == 0.0 {
        return if x > 0.0 { 0.0 } else { f64::NAN };
    }
    if x == 0.0 {
        return 1.0;
    }
    if a.is_infinite() {
        return if x.is_infinite() { f64::NAN } else { 1.0 };
    }
    if x.is_infinite() {
        return 0.0;
    }
    if x < 1.0 || x < a {
        return 1.0 - igamma_scalar(a, x);
    }
    igammac_cf(a, x)
}

fn float_only_zip(op: &'static str, a: &Tensor, b: &Tensor, f: fn(f64, f64) -> f64) -> Result<Tensor> {
    let iter = binary_iter(op, a, b, false)?;
    if !iter.common_dtype().is_floating_point() {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype: iter.common_dtype() });
    }
    float_zip(&iter, op, f)?;
    iter.output(0)
}

/// `igamma(Tensor self, Tensor other) -> Tensor`: `P(self, other)`.
pub fn igamma(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    float_only_zip("igamma", self_, other, igamma_scalar)
}

/// `igammac(Tensor self, Tensor other) -> Tensor`: `Q(self, other)`.
pub fn igammac(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    float_only_zip("igammac", self_, other, igammac_scalar)
}
