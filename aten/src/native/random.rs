//! Random operators (`uniform_`, `normal_`, `random_`, `bernoulli_`, `exponential_`, `rand`,
//! `randn`, `randint`, `*_like`). On the CPU they draw from the mt19937 `Generator` exactly as
//! PyTorch's CPU kernels do, so a seed gives PyTorch's numbers.
//!
//! Note [Random ops on devices]: the argument checks are device-generic. Off the CPU the samples
//! come from the device's random loop (`stub::run_random`) over an output-only iteration, which
//! visits the output in memory order as the CPU does; the loop draws from the device's
//! generator (a seed and a Philox offset, Note [Philox streams] in `kernels-cuda`). A seed gives
//! reproducible numbers on a device, not the CPU's numbers (nor PyTorch's CUDA ones, which depend
//! on the GPU's launch shape).
//!
//! Note [Random fill order]: PyTorch fills through a TensorIterator, which visits a strided
//! output in memory order (innermost = smallest stride), not in logical order. We do the same
//! (see [`for_each_offset_memory_order`]) so `torch.empty(2, 3).t().uniform_()` gives the same
//! matrix here.

use std::f64::consts::PI;

use c10::{Device, Element, Error, Layout, MemoryFormat, Result, Scalar, ScalarType};

use crate::generator::GeneratorState;
use crate::memory_overlap::assert_no_internal_overlap;
use crate::native::cpu::loops::for_each_offset;
use crate::native::factory::{
    check_cpu, check_factory_options, check_layout_and_pinning, check_size_nonnegative, dtype_lowest, dtype_max,
    empty_like, empty_memory_format, fmt_g, stride_order,
};
use crate::native::stub;
use crate::native::tensor_iterator::TensorIteratorConfig;
use crate::{default_generator, Generator, Tensor};

// ---- plumbing ------------------------------------------------------------------------------------

/// The generator to draw from for a tensor on `device`: the given one, which must be a generator
/// of that device type (PyTorch's `check_generator`), or the device's default generator.
fn generator_for(op: &str, generator: Option<&Generator>, device: Device) -> Result<Generator> {
    match generator {
        Some(g) if g.device().ty != device.ty => Err(Error::invalid(
            op,
            format!("Expected a '{}' device type for generator but found '{}'", device.ty, g.device().ty),
        )),
        Some(g) => Ok(g.clone()),
        None => default_generator(device),
    }
}

/// Fills `self_`, a tensor off the CPU that passed the operator's checks, with the device's
/// random loop `kernel` (Note [Random ops on devices]); `input` is an operand after the output
/// (the probabilities of `bernoulli_tensor`).
fn device_fill(
    op: &'static str,
    kernel: &'static stub::RandomKernel,
    self_: &Tensor,
    input: Option<&Tensor>,
    generator: Option<&Generator>,
    params: &[Scalar],
) -> Result<Tensor> {
    let mut config =
        TensorIteratorConfig::new(op).add_output(Some(self_)).check_all_same_dtype(false).common_dtype(self_.dtype());
    if let Some(p) = input {
        config = config.add_input(p);
    }
    let iter = config.build()?;
    if self_.device().is_meta() {
        // No values, so no generator either (Note [Meta loops]).
        return Ok(self_.clone());
    }
    let gen = generator_for(op, generator, self_.device())?;
    stub::run_random(kernel, &iter, &gen, params)?;
    Ok(self_.clone())
}

/// Calls `f(offset)` for every element of a tensor in memory order (TensorIterator's order; see
/// Note [Random fill order]).
fn for_each_offset_memory_order(sizes: &[i64], strides: &[i64], f: impl FnMut(isize)) {
    let perm = stride_order(sizes, strides);
    // `perm[0]` is the innermost dim; `for_each_offset` wants the outermost first.
    let s: smallvec::SmallVec<[i64; 6]> = perm.iter().rev().map(|&d| sizes[d]).collect();
    let st: smallvec::SmallVec<[i64; 6]> = perm.iter().rev().map(|&d| strides[d]).collect();
    for_each_offset(&s, &st, f);
}

/// Writes `f()` into every element of `t` (dtype `T`), in memory order.
fn write_memory_order<T: Element>(t: &Tensor, mut f: impl FnMut() -> T) -> Result<()> {
    let base = t.typed_data_ptr::<T>()?;
    for_each_offset_memory_order(t.sizes(), t.strides(), |off| {
        // SAFETY: `t` is a CPU tensor of dtype T (checked by `typed_data_ptr`) and every offset
        // comes from its own sizes and strides, which its storage covers (TensorImpl invariant).
        // The kernel owns the elements for the duration of the call; no Rust reference to them
        // exists while we write.
        unsafe { base.offset(off).write(f()) };
    });
    Ok(())
}

/// Mantissa digits (`std::numeric_limits<T>::digits`) of a floating dtype.
fn digits(dtype: ScalarType) -> u32 {
    match dtype {
        ScalarType::F16 => 11,
        ScalarType::BF16 => 8,
        ScalarType::F64 => 53,
        _ => 24,
    }
}

// ---- samplers (at::uniform_real_distribution, at::normal_distribution, ...) ----------------------

/// `uniform_real_distribution<double>(0, 1)`: 53 random bits from `random64()`.
#[inline]
fn uniform_f64(g: &mut GeneratorState) -> f64 {
    (g.random64() & ((1u64 << 53) - 1)) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// `uniform_real_distribution<float>(0, 1)`: 24 random bits from `random()`.
#[inline]
fn uniform_f32(g: &mut GeneratorState) -> f32 {
    (g.random() & ((1u32 << 24) - 1)) as f32 * (1.0 / (1u32 << 24) as f32)
}

/// One `uniform_` sample for a floating `T`, as PyTorch's `uniform_kernel`: drawn by
/// `uniform_real_distribution<opmath_t>(from, to)` (double for double, float otherwise), cast to
/// `T`, and moved to `from` if the cast rounded it up to `to`.
///
/// Note [Uniform FMA]: PyTorch's CPU kernels are built per CPU capability and the AVX2/AVX-512
/// builds contract `x * (to - from) + from` into one fused multiply-add; we fuse too, so
/// `uniform_(-2, 3)` matches bit for bit there. `[0, 1)` is exact either way and skips it.
#[inline]
fn uniform_sample<T: Element>(g: &mut GeneratorState, from: f64, to: f64) -> T {
    let unit = from == 0.0 && to == 1.0;
    let v = if T::DTYPE == ScalarType::F64 {
        let x = uniform_f64(g);
        T::from_f64(if unit { x } else { x.mul_add(to - from, from) })
    } else {
        let x = uniform_f32(g);
        let (f, t) = (from as f32, to as f32);
        T::from_f64(if unit { x } else { x.mul_add(t - f, f) } as f64)
    };
    if v == T::from_f64(to) {
        T::from_f64(from)
    } else {
        v
    }
}

/// `normal_distribution<double>`: Box-Muller on two 53-bit uniforms; the sine sample is cached
/// in the generator for the next call, as PyTorch's `next_double_normal_sample`.
#[inline]
fn normal_f64(g: &mut GeneratorState, mean: f64, std: f64) -> f64 {
    if let Some(z) = g.next_normal.take() {
        return z * std + mean;
    }
    let u1 = uniform_f64(g);
    let u2 = uniform_f64(g);
    let r = (-2.0 * (-u2).ln_1p()).sqrt();
    let theta = 2.0 * PI * u1;
    g.next_normal = Some(r * theta.sin());
    r * theta.cos() * std + mean
}

/// The arithmetic type of `normal_fill` (`at::opmath_type`): double for double, float for
/// float, half and bfloat16.
trait Opmath: Copy + Default {
    /// `uniform_real_distribution<Self>(0, 1)`.
    fn uniform01(g: &mut GeneratorState) -> Self;
    /// PyTorch's `NormalFill16`: Box-Muller on `buf[j]`, `buf[j + 8]` for `j < 8`, finished by
    /// `fma(radius * cos|sin(theta), std, mean)`.
    fn box_muller16(buf: &mut [Self; 16], mean: f64, std: f64);
    fn to_f64(self) -> f64;
}

impl Opmath for f64 {
    fn uniform01(g: &mut GeneratorState) -> f64 {
        uniform_f64(g)
    }
    fn box_muller16(buf: &mut [f64; 16], mean: f64, std: f64) {
        for j in 0..8 {
            let u1 = 1.0 - buf[j];
            let u2 = buf[j + 8];
            let radius = (-2.0 * u1.ln()).sqrt();
            let theta = 2.0 * PI * u2;
            buf[j] = (radius * theta.cos()).mul_add(std, mean);
            buf[j + 8] = (radius * theta.sin()).mul_add(std, mean);
        }
    }
    fn to_f64(self) -> f64 {
        self
    }
}

impl Opmath for f32 {
    fn uniform01(g: &mut GeneratorState) -> f32 {
        uniform_f32(g)
    }
    /// See Note [normal_fill on float].
    fn box_muller16(buf: &mut [f32; 16], mean: f64, std: f64) {
        let (mean, std) = (mean as f32, std as f32);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports FMA (checked just above), the only feature the function
            // enables.
            unsafe { box_muller16_f32_fma(buf, mean, std) };
            return;
        }
        box_muller16_f32(buf, mean, std)
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

/// `NormalFill16<float>` (the AVX2 kernel, one lane at a time). Its `mul_add`s are single
/// instructions only where FMA is enabled; elsewhere they are calls into libm's `fma`, exact but
/// slow, hence the FMA-enabled copy below.
#[inline(always)]
fn box_muller16_f32(buf: &mut [f32; 16], mean: f32, std: f32) {
    // `_mm256_set1_ps(2.0f * c10::pi<double>)`: 2*pi in double, rounded to float.
    let two_pi = (2.0 * PI) as f32;
    for j in 0..8 {
        let u1 = 1.0 - buf[j];
        let u2 = buf[j + 8];
        let radius = (-2.0 * avx_mathfun::log(u1)).sqrt();
        let (sin, cos) = avx_mathfun::sincos(two_pi * u2);
        buf[j] = (radius * cos).mul_add(std, mean);
        buf[j + 8] = (radius * sin).mul_add(std, mean);
    }
}

/// [`box_muller16_f32`] compiled with FMA instructions (same results, several times faster).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
fn box_muller16_f32_fma(buf: &mut [f32; 16], mean: f32, std: f32) {
    box_muller16_f32(buf, mean, std)
}

/// Note [normal_fill on float]: on x86 PyTorch's float `normal_fill` runs the AVX2 kernel
/// (`NormalFill16<float>` with `log256_ps` / `sincos256_ps` from `avx_mathfun.h`, Cephes
/// polynomials) even on AVX-512 machines, because its dispatch stub registers no AVX-512 variant.
/// Those functions differ from libm in the last ulp, so we evaluate the same polynomials, operation
/// by operation, in scalar f32: `randn` then matches PyTorch bit for bit, on every platform.
mod avx_mathfun {
    // The C header spells its constants as double literals stored into float arrays; round the
    // same way (double first, then float) so every constant has the same bits.
    const SQRTHF: f32 = std::f64::consts::FRAC_1_SQRT_2 as f32;
    const LOG_P: [f32; 9] = [
        7.0376836292E-2_f64 as f32,
        -1.1514610310E-1_f64 as f32,
        1.1676998740E-1_f64 as f32,
        -1.2420140846E-1_f64 as f32,
        1.4249322787E-1_f64 as f32,
        -1.6668057665E-1_f64 as f32,
        2.0000714765E-1_f64 as f32,
        -2.4999993993E-1_f64 as f32,
        3.3333331174E-1_f64 as f32,
    ];
    const LOG_Q1: f32 = -2.12194440e-4_f64 as f32;
    const LOG_Q2: f32 = 0.693359375_f64 as f32;
    const MINUS_DP1: f32 = -0.78515625_f64 as f32;
    const MINUS_DP2: f32 = -2.418_756_484_985_351_6e-4_f64 as f32;
    const MINUS_DP3: f32 = -3.774_894_977_445_941e-8_f64 as f32;
    const SINCOF: [f32; 3] = [-1.9515295891E-4_f64 as f32, 8.3321608736E-3_f64 as f32, -1.6666654611E-1_f64 as f32];
    const COSCOF: [f32; 3] =
        [2.443315711809948E-005_f64 as f32, -1.388731625493765E-003_f64 as f32, 4.166664568298827E-002_f64 as f32];
    const FOPI: f32 = 1.27323954473516_f64 as f32;

    /// `log256_ps` for one lane: NaN for `x <= 0`.
    #[inline(always)]
    pub(super) fn log(x: f32) -> f32 {
        if x <= 0.0 || x.is_nan() {
            return f32::NAN;
        }
        let x = x.max(f32::MIN_POSITIVE);
        let bits = x.to_bits();
        let mut e = ((bits >> 23) as i32 - 0x7f) as f32 + 1.0;
        let mut x = f32::from_bits((bits & !0x7f80_0000) | 0.5f32.to_bits());
        let small = x < SQRTHF;
        let tmp = if small { x } else { 0.0 };
        x -= 1.0;
        e -= if small { 1.0 } else { 0.0 };
        x += tmp;
        let z = x * x;
        let mut y = LOG_P[0];
        for &p in &LOG_P[1..] {
            y = y.mul_add(x, p);
        }
        y *= x;
        y = y.mul_add(z, e * LOG_Q1);
        y = (-z).mul_add(0.5, y);
        x += y;
        e.mul_add(LOG_Q2, x)
    }

    /// `sincos256_ps` for one lane: `(sin(x), cos(x))`.
    #[inline(always)]
    pub(super) fn sincos(x: f32) -> (f32, f32) {
        let sign_sin = x.to_bits() & 0x8000_0000;
        let mut x = x.abs();
        let j = (((x * FOPI) as i32).wrapping_add(1)) & !1;
        let y = j as f32;
        let swap_sign_sin = ((j & 4) as u32) << 29;
        let poly_mask = j & 2 == 0;
        x = y.mul_add(MINUS_DP1, x);
        x = y.mul_add(MINUS_DP2, x);
        x = y.mul_add(MINUS_DP3, x);
        let sign_cos = ((!(j.wrapping_sub(2)) & 4) as u32) << 29;
        let sign_sin = sign_sin ^ swap_sign_sin;
        let z = x * x;
        let mut yc = COSCOF[0].mul_add(z, COSCOF[1]);
        yc = yc.mul_add(z, COSCOF[2]);
        yc *= z;
        yc = yc.mul_add(z, -(z * 0.5));
        yc += 1.0;
        let mut ys = SINCOF[0].mul_add(z, SINCOF[1]);
        ys = ys.mul_add(z, SINCOF[2]);
        ys *= z;
        ys = ys.mul_add(x, x);
        let ysin2 = if poly_mask { ys } else { 0.0 };
        let ysin1 = if poly_mask { 0.0 } else { yc };
        let s = ysin1 + ysin2;
        let c = (yc - ysin1) + (ys - ysin2);
        (f32::from_bits(s.to_bits() ^ sign_sin), f32::from_bits(c.to_bits() ^ sign_cos))
    }
}

/// PyTorch's `normal_fill` for a contiguous floating tensor of at least 16 elements: Box-Muller
/// on blocks of 16 uniforms; a ragged tail recomputes the last 16 elements from 16 fresh
/// uniforms.
///
/// For float and double PyTorch first draws one uniform per element into the output, so the
/// `numel % 16` draws under the tail are drawn and then overwritten; half and bfloat16 draw per
/// block into a float buffer and skip them. We draw block by block for every dtype and discard
/// those draws where PyTorch makes them, which gives the same stream without a second buffer.
fn normal_fill<T: Element, A: Opmath>(t: &Tensor, mean: f64, std: f64, g: &mut GeneratorState) -> Result<()> {
    let n = t.numel() as usize;
    let base = t.typed_data_ptr::<T>()?;
    debug_assert!(t.is_contiguous() && n >= 16);
    let mut buf = [A::default(); 16];
    let mut block = |g: &mut GeneratorState, start: usize| {
        for x in buf.iter_mut() {
            *x = A::uniform01(g);
        }
        A::box_muller16(&mut buf, mean, std);
        for (j, x) in buf.iter().enumerate() {
            // SAFETY: `t` is a contiguous CPU tensor of dtype T (checked by `typed_data_ptr`)
            // with `n` elements, so elements `0..n` sit consecutively from `base` inside its
            // storage, and `start + j < n` (callers pass `start <= n - 16`). The kernel owns the
            // elements for the call; no Rust reference to them exists while we write.
            unsafe { base.add(start + j).write(T::from_f64(x.to_f64())) };
        }
    };
    let full = n / 16;
    for b in 0..full {
        block(g, 16 * b);
    }
    if !n.is_multiple_of(16) {
        if T::DTYPE == ScalarType::F32 || T::DTYPE == ScalarType::F64 {
            for _ in 0..n % 16 {
                A::uniform01(g);
            }
        }
        block(g, n - 16);
    }
    Ok(())
}

// ---- in-place random ops -------------------------------------------------------------------------

/// `uniform_`: fills `self_` with samples from `[from, to)`.
///
/// Errors like PyTorch for non-floating dtypes, bounds outside the dtype's range, `from > to`
/// and `to - from` overflowing the dtype.
pub fn uniform_(self_: &Tensor, from: f64, to: f64, generator: Option<&Generator>) -> Result<Tensor> {
    const OP: &str = "uniform_";
    let dtype = self_.dtype();
    if !dtype.is_floating_point() {
        return Err(Error::UnsupportedDtype { op: "check_uniform_bounds".into(), dtype });
    }
    let (min, max) = (dtype_lowest(dtype), dtype_max(dtype));
    let name = dtype.type_meta_name();
    if !(min..=max).contains(&from) {
        return Err(Error::invalid(OP, format!("from is out of bounds for {name}")));
    }
    if !(min..=max).contains(&to) {
        return Err(Error::invalid(OP, format!("to is out of bounds for {name}")));
    }
    if from > to {
        return Err(Error::invalid(
            OP,
            format!("uniform_ expects to return a [from, to) range, but found from={} > to={}", fmt_g(from), fmt_g(to)),
        ));
    }
    if to - from > max {
        return Err(Error::invalid(
            OP,
            format!(
                "uniform_ expects to-from <= std::numeric_limits<{}>::max(), but found to={} and from={} which \
                 result in to-from to exceed the limit",
                dtype.cpp_name(),
                fmt_g(to),
                fmt_g(from)
            ),
        ));
    }
    if self_.numel() == 0 {
        return Ok(self_.clone());
    }
    assert_no_internal_overlap(OP, self_)?;
    if !self_.device().is_cpu() {
        return device_fill(
            OP,
            crate::device_kernel!(random "uniform"),
            self_,
            None,
            generator,
            &[Scalar::Float(from), Scalar::Float(to)],
        );
    }
    let gen = generator_for(OP, generator, Device::CPU)?;
    let mut g = gen.lock();
    c10::dispatch_all_types!(dtype, T => write_memory_order::<T>(self_, || uniform_sample::<T>(&mut g, from, to)))?;
    Ok(self_.clone())
}

/// `normal_`: fills `self_` with samples from N(`mean`, `std`^2).
///
/// As PyTorch's CPU kernel: a contiguous tensor of at least 16 elements uses `normal_fill`
/// (uniforms in blocks of 16, then Box-Muller in float, or double for double); anything else draws
/// per element from `normal_distribution<double>` (which caches its second sample in the
/// generator), in memory order.
pub fn normal_(self_: &Tensor, mean: f64, std: f64, generator: Option<&Generator>) -> Result<Tensor> {
    const OP: &str = "normal_";
    if std.is_nan() || std < 0.0 {
        return Err(Error::invalid(OP, format!("normal expects std >= 0.0, but found std {}", fmt_g(std))));
    }
    let dtype = self_.dtype();
    if !dtype.is_floating_point() {
        return Err(Error::UnsupportedDtype { op: "normal_kernel_cpu".into(), dtype });
    }
    if self_.numel() == 0 {
        return Ok(self_.clone());
    }
    assert_no_internal_overlap(OP, self_)?;
    if !self_.device().is_cpu() {
        return device_fill(
            OP,
            crate::device_kernel!(random "normal"),
            self_,
            None,
            generator,
            &[Scalar::Float(mean), Scalar::Float(std)],
        );
    }
    let gen = generator_for(OP, generator, Device::CPU)?;
    let mut g = gen.lock();
    c10::dispatch_all_types!(dtype, T => {
        if self_.numel() >= 16 && self_.is_contiguous() {
            if dtype == ScalarType::F64 {
                normal_fill::<T, f64>(self_, mean, std, &mut g)?;
            } else {
                normal_fill::<T, f32>(self_, mean, std, &mut g)?;
            }
        } else {
            write_memory_order::<T>(self_, || <T as Element>::from_f64(normal_f64(&mut g, mean, std)))?;
        }
    });
    Ok(self_.clone())
}

/// PyTorch's `update_from`: rounds `from` up to the next value a floating `T` represents.
fn update_from<T: Element>(from: i64) -> i64 {
    let from_plus_1 = T::from_i64(from.wrapping_add(1)).to_i64();
    if from_plus_1 < from {
        let n = 63 - (from.wrapping_add(1)).unsigned_abs().max(1).leading_zeros() as i64;
        return from_plus_1 + (1i64 << (n - digits(T::DTYPE) as i64 + 1).max(0));
    }
    from
}

/// PyTorch's `update_to`: rounds `to` down to a value a floating `T` represents.
fn update_to<T: Element>(to: i64) -> i64 {
    let to_minus_1 = T::from_i64(to.wrapping_sub(1)).to_i64();
    if to_minus_1 >= to {
        let n = 63 - (to.wrapping_sub(1)).unsigned_abs().max(1).leading_zeros() as i64;
        return to_minus_1 - (1i64 << (n - digits(T::DTYPE) as i64 + 1).max(0));
    }
    to
}

/// PyTorch's `check_from_to_in_range`: `from` and `to_inc` must be representable in the dtype.
fn check_from_to_in_range(op: &str, from: i64, to_inc: i64, dtype: ScalarType) -> Result<()> {
    let (min, max) = (dtype_lowest(dtype), dtype_max(dtype));
    let name = dtype.type_meta_name();
    let in_range = |v: i64| {
        if dtype.is_floating_point() || dtype == ScalarType::I64 {
            (v as f64) >= min && (v as f64) <= max
        } else {
            v >= min as i64 && v <= max as i64
        }
    };
    if !in_range(from) {
        return Err(Error::invalid(op, format!("from is out of bounds for {name}")));
    }
    if !in_range(to_inc) {
        return Err(Error::invalid(op, format!("to - 1 is out of bounds for {name}")));
    }
    Ok(())
}

/// Writes `(bits % range) + base` into every element, with 64 random bits per element when
/// `wide`, else 32; `range` 0 stands for 2^64 (no modulus). The value must fit the dtype (the
/// callers check).
fn random_fill(
    op: &'static str,
    self_: &Tensor,
    range: u64,
    base: i64,
    wide: bool,
    generator: Option<&Generator>,
) -> Result<()> {
    if !self_.device().is_cpu() {
        let params = [Scalar::Int(range as i64), Scalar::Int(base), Scalar::Bool(wide)];
        return device_fill(op, crate::device_kernel!(random "random"), self_, None, generator, &params).map(|_| ());
    }
    let gen = generator_for(op, generator, Device::CPU)?;
    let mut g = gen.lock();
    c10::dispatch_all_types!(self_.dtype(), T => write_memory_order::<T>(self_, || {
        let v = if wide { g.random64() } else { g.random() as u64 };
        let v = if range == 0 { v } else { v % range };
        T::from_i64(v.wrapping_add(base as u64) as i64)
    }))
}

/// `uniform_int_from_to_distribution<T>`: `(bits % range) + base`, with 64 random bits for
/// int64/double/float/bfloat16 when `range >= 2^32`, else 32.
fn random_from_to_kernel(
    op: &'static str,
    self_: &Tensor,
    range: u64,
    base: i64,
    generator: Option<&Generator>,
) -> Result<()> {
    let wide = range >= 1u64 << 32
        && matches!(self_.dtype(), ScalarType::I64 | ScalarType::F64 | ScalarType::F32 | ScalarType::BF16);
    random_fill(op, self_, range, base, wide, generator)
}

/// `random_.from`: integers uniform in `[from, to)`; with `to` None, in `[from, max]` where `max`
/// is the dtype's largest value (`2^digits` for floating dtypes). `from = i64::MIN, to = None`
/// draws the full 64-bit range (int64, double, float and bfloat16 only).
#[allow(non_snake_case)] // `name_` + `_overload`, the codegen's naming of in-place overloads
pub fn random_from_(self_: &Tensor, from: i64, to: Option<i64>, generator: Option<&Generator>) -> Result<Tensor> {
    const OP: &str = "random_";
    let dtype = self_.dtype();
    if dtype.is_complex() {
        return Err(Error::UnsupportedDtype { op: "random_from_to".into(), dtype });
    }
    let mut from = from;
    if let Some(to) = to {
        let mut to = to;
        if from >= to {
            return Err(Error::invalid(
                OP,
                format!("random_ expects 'from' to be less than 'to', but got from={from} >= to={to}"),
            ));
        }
        if dtype.is_floating_point() {
            c10::dispatch_all_types!(dtype, T => {
                from = update_from::<T>(from);
                to = update_to::<T>(to);
            });
            if from >= to {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got \
                         from={from} >= to={to}"
                    ),
                ));
            }
        }
        check_from_to_in_range(OP, from, to - 1, dtype)?;
        if self_.numel() == 0 {
            return Ok(self_.clone());
        }
        assert_no_internal_overlap(OP, self_)?;
        let range = (to as u64).wrapping_sub(from as u64);
        random_from_to_kernel(OP, self_, range, from, generator)?;
    } else if from != i64::MIN {
        let to_inc = if dtype.is_floating_point() {
            let to_inc = if digits(dtype) >= 63 { i64::MAX } else { 1i64 << digits(dtype) };
            c10::dispatch_all_types!(dtype, T => from = update_from::<T>(from));
            if from >= to_inc {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted to \
                         dtype, but got from={from} > to_inc={to_inc}"
                    ),
                ));
            }
            to_inc
        } else {
            dtype_max(dtype) as i64
        };
        check_from_to_in_range(OP, from, to_inc, dtype)?;
        if self_.numel() == 0 {
            return Ok(self_.clone());
        }
        assert_no_internal_overlap(OP, self_)?;
        let range = (to_inc as u64).wrapping_sub(from as u64).wrapping_add(1);
        random_from_to_kernel(OP, self_, range, from, generator)?;
    } else {
        if !matches!(dtype, ScalarType::I64 | ScalarType::F64 | ScalarType::F32 | ScalarType::BF16) {
            return Err(Error::UnsupportedDtype { op: "random_full_64_bits_range_kernel_cpu".into(), dtype });
        }
        if self_.numel() == 0 {
            return Ok(self_.clone());
        }
        assert_no_internal_overlap(OP, self_)?;
        random_fill(OP, self_, 0, 0, true, generator)?;
    }
    Ok(self_.clone())
}

/// `random_.to`: integers uniform in `[0, to)`.
#[allow(non_snake_case)] // `name_` + `_overload`, the codegen's naming of in-place overloads
pub fn random_to_(self_: &Tensor, to: i64, generator: Option<&Generator>) -> Result<Tensor> {
    random_from_(self_, 0, Some(to), generator)
}

/// `random_`: integers uniform in `[0, max]` where `max` is the dtype's largest value
/// (`2^digits` for floating dtypes, 1 for bool), as `uniform_int_distribution<T>`.
pub fn random_(self_: &Tensor, generator: Option<&Generator>) -> Result<Tensor> {
    const OP: &str = "random_";
    if self_.numel() == 0 {
        return Ok(self_.clone());
    }
    assert_no_internal_overlap(OP, self_)?;
    let dtype = self_.dtype();
    if dtype.is_complex() {
        return Err(Error::UnsupportedDtype { op: "random_".into(), dtype });
    }
    let wide = matches!(dtype, ScalarType::I64 | ScalarType::F64);
    let modulus: u64 = match dtype {
        ScalarType::Bool => 2,
        ScalarType::I64 => 1u64 << 63,
        d if d.is_floating_point() => (1u64 << digits(d)) + 1,
        d => dtype_max(d) as u64 + 1,
    };
    random_fill(OP, self_, modulus, 0, wide, generator)?;
    Ok(self_.clone())
}

/// `bernoulli_.float`: each element becomes 1 with probability `p`, else 0 (a 53-bit uniform
/// compared with `p`, PyTorch's non-MKL CPU kernel).
#[allow(non_snake_case)] // `name_` + `_overload`, the codegen's naming of in-place overloads
pub fn bernoulli_float_(self_: &Tensor, p: f64, generator: Option<&Generator>) -> Result<Tensor> {
    const OP: &str = "bernoulli_";
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::invalid(OP, format!("bernoulli_ expects p to be in [0, 1], but got p={}", fmt_g(p))));
    }
    if self_.numel() == 0 {
        return Ok(self_.clone());
    }
    assert_no_internal_overlap(OP, self_)?;
    if !self_.device().is_cpu() {
        return device_fill(OP, crate::device_kernel!(random "bernoulli"), self_, None, generator, &[Scalar::Float(p)]);
    }
    let gen = generator_for(OP, generator, Device::CPU)?;
    let mut g = gen.lock();
    c10::dispatch_all_types!(self_.dtype(), T => write_memory_order::<T>(self_, || T::from_bool(uniform_f64(&mut g) < p)))?;
    Ok(self_.clone())
}

// ---- random factories ----------------------------------------------------------------------------

/// A new uninitialised tensor for a random factory (`at::empty(size, options)`).
fn empty_for(
    op: &str,
    size: &[i64],
    dtype: ScalarType,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    // Any device whose backend registered the factory: the fill picks the device's loop.
    check_layout_and_pinning(op, layout, pin_memory)?;
    check_size_nonnegative(op, size)?;
    empty_memory_format(size, Some(dtype), layout, device, pin_memory, None)
}

/// `rand`: uniform samples in `[0, 1)` from the default CPU generator (default dtype float32).
pub fn rand(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    rand_generator(size, None, dtype, layout, device, pin_memory)
}

/// `rand.generator`: uniform samples in `[0, 1)` from `generator` (default generator if None).
///
/// ```
/// use aten::native::random::rand_generator;
/// let g = aten::Generator::new(c10::Device::CPU);
/// g.manual_seed(0);
/// let t = rand_generator(&[2], Some(&g), None, None, None, None).unwrap();
/// assert_eq!(t.to_vec::<f32>().unwrap(), vec![0.496_256_6, 0.768_221_8]);
/// ```
pub fn rand_generator(
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let dtype = dtype.unwrap_or(ScalarType::default_float());
    let t = empty_for("rand", size, dtype, layout, device, pin_memory)?;
    uniform_(&t, 0.0, 1.0, generator)
}

/// `randn`: standard normal samples from the default CPU generator (default dtype float32).
pub fn randn(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    randn_generator(size, None, dtype, layout, device, pin_memory)
}

/// `randn.generator`: standard normal samples from `generator` (default generator if None).
pub fn randn_generator(
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let dtype = dtype.unwrap_or(ScalarType::default_float());
    let t = empty_for("randn", size, dtype, layout, device, pin_memory)?;
    normal_(&t, 0.0, 1.0, generator)
}

/// `randint`: integers uniform in `[0, high)` (default dtype int64).
pub fn randint(
    high: i64,
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    randint_low_generator(0, high, size, None, dtype, layout, device, pin_memory)
}

/// `randint.generator`: integers uniform in `[0, high)` from `generator`.
#[allow(clippy::too_many_arguments)]
pub fn randint_generator(
    high: i64,
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    randint_low_generator(0, high, size, generator, dtype, layout, device, pin_memory)
}

/// `randint.low`: integers uniform in `[low, high)` (default dtype int64).
#[allow(clippy::too_many_arguments)]
pub fn randint_low(
    low: i64,
    high: i64,
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    randint_low_generator(low, high, size, None, dtype, layout, device, pin_memory)
}

/// `randint.low_generator`: integers uniform in `[low, high)` from `generator`.
#[allow(clippy::too_many_arguments)]
pub fn randint_low_generator(
    low: i64,
    high: i64,
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let t = empty_for("randint", size, dtype.unwrap_or(ScalarType::I64), layout, device, pin_memory)?;
    random_from_(&t, low, Some(high), generator)
}

/// `rand_like`: [`empty_like`] filled by `uniform_(0, 1)` from the default generator.
pub fn rand_like(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let t = empty_like(self_, dtype, layout, device, pin_memory, memory_format)?;
    uniform_(&t, 0.0, 1.0, None)
}

/// `randn_like`: [`empty_like`] filled by `normal_(0, 1)` from the default generator.
pub fn randn_like(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let t = empty_like(self_, dtype, layout, device, pin_memory, memory_format)?;
    normal_(&t, 0.0, 1.0, None)
}

// ---- exponential, bernoulli with probabilities, normal with tensor moments --------------------

/// `exponential_`: fills `self_` with samples of Exp(`lambd`), as PyTorch's (non-MKL-stream) CPU
/// kernel: `-1/lambd * log1p(-u)` on a 53-bit uniform `u`, in double, cast to the dtype.
pub fn exponential_(self_: &Tensor, lambd: f64, generator: Option<&Generator>) -> Result<Tensor> {
    const OP: &str = "exponential_";
    if lambd.is_nan() || lambd <= 0.0 {
        return Err(Error::invalid(
            OP,
            format!("exponential_ expects lambda > 0.0, but found lambda={}", fmt_g(lambd)),
        ));
    }
    let dtype = self_.dtype();
    if !dtype.is_floating_point() {
        return Err(Error::invalid(
            OP,
            format!(
                "Exponential distribution is a continuous probability distribution. dtype must be a floating point but \
                 you specified {}",
                dtype.cpp_name()
            ),
        ));
    }
    if self_.numel() == 0 {
        return Ok(self_.clone());
    }
    assert_no_internal_overlap(OP, self_)?;
    if !self_.device().is_cpu() {
        return device_fill(
            OP,
            crate::device_kernel!(random "exponential"),
            self_,
            None,
            generator,
            &[Scalar::Float(lambd)],
        );
    }
    let gen = generator_for(OP, generator, Device::CPU)?;
    let mut g = gen.lock();
    c10::dispatch_all_types!(dtype, T => write_memory_order::<T>(self_, || {
        T::from_f64(-1.0 / lambd * (-uniform_f64(&mut g)).ln_1p())
    }))?;
    Ok(self_.clone())
}

/// `t`'s values in `order`'s memory order (see [`for_each_offset_memory_order`]), as f64.
fn values_in_memory_order_of(t: &Tensor, order: &Tensor) -> Result<Vec<f64>> {
    let perm = stride_order(order.sizes(), order.strides());
    let outer_first: Vec<i64> = perm.iter().rev().map(|&d| d as i64).collect();
    let permuted = crate::ops::permute(t, &outer_first)?;
    crate::native::copy::to_dtype(&permuted, ScalarType::F64)?.contiguous().call()?.to_vec::<f64>()
}

/// `bernoulli_.Tensor`: element `i` becomes 1 with probability `p[i]` (`p` broadcast to
/// `self_`'s shape). As PyTorch's CPU kernel: a double `p` is compared with a 53-bit uniform,
/// any other floating `p` with a 24-bit float uniform. Every probability is checked before
/// anything is written, so a bad one leaves `self_` and the generator untouched.
#[allow(non_snake_case)] // `name_` + `_overload`, the codegen's naming of in-place overloads
pub fn bernoulli_Tensor_(self_: &Tensor, p: &Tensor, generator: Option<&Generator>) -> Result<Tensor> {
    const OP: &str = "bernoulli_";
    if !p.dtype().is_floating_point() {
        return Err(Error::UnsupportedDtype { op: "bernoulli_tensor_cpu_p_".into(), dtype: p.dtype() });
    }
    let expanded = crate::ops::expand(p, self_.sizes(), false)?;
    if self_.numel() == 0 {
        return Ok(self_.clone());
    }
    assert_no_internal_overlap(OP, self_)?;
    if !self_.device().is_cpu() {
        return bernoulli_tensor_device(self_, p, &expanded, generator);
    }
    check_cpu(OP, p)?;
    let probs = values_in_memory_order_of(&expanded, self_)?;
    if probs.iter().any(|v| !(0.0..=1.0).contains(v)) {
        return Err(Error::invalid(OP, "Expected p_in >= 0 && p_in <= 1 to be true, but got false."));
    }
    let wide = p.dtype() == ScalarType::F64;
    let gen = generator_for(OP, generator, Device::CPU)?;
    let mut g = gen.lock();
    let mut next = probs.iter();
    c10::dispatch_all_types!(self_.dtype(), T => write_memory_order::<T>(self_, || {
        let q = next.next().copied().unwrap_or(0.0);
        T::from_bool(if wide { uniform_f64(&mut g) < q } else { uniform_f32(&mut g) < q as f32 })
    }))?;
    Ok(self_.clone())
}

/// `bernoulli_.Tensor` off the CPU (Note [Random ops on devices]): the probabilities, on the
/// output's device, are checked before anything is written; the kernel compares them in their
/// own dtype, so an output of another dtype is filled through a temporary of `p`'s.
fn bernoulli_tensor_device(
    self_: &Tensor,
    p: &Tensor,
    expanded: &Tensor,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    const OP: &str = "bernoulli_";
    if p.device() != self_.device() {
        return Err(Error::DeviceMismatch { op: OP.into(), a: self_.device().to_string(), b: p.device().to_string() });
    }
    // NaN fails the check (max and min propagate it).
    let (lo, hi) = (crate::ops::min(p)?.item::<f64>()?, crate::ops::max(p)?.item::<f64>()?);
    if !((0.0..=1.0).contains(&lo) && (0.0..=1.0).contains(&hi)) {
        return Err(Error::invalid(OP, "Expected p_in >= 0 && p_in <= 1 to be true, but got false."));
    }
    if self_.dtype() == p.dtype() {
        return device_fill(
            OP,
            crate::device_kernel!(random "bernoulli_tensor"),
            self_,
            Some(expanded),
            generator,
            &[],
        );
    }
    let tmp = empty_like(self_, Some(p.dtype()), None, None, None, Some(MemoryFormat::Preserve))?;
    device_fill(OP, crate::device_kernel!(random "bernoulli_tensor"), &tmp, Some(expanded), generator, &[])?;
    crate::ops::copy_(self_, &tmp, false)
}

/// `bernoulli`: a new tensor of 0s and 1s, 1 with probability `self_[i]` (a floating tensor).
pub fn bernoulli(self_: &Tensor, generator: Option<&Generator>) -> Result<Tensor> {
    let out = empty_like(self_, None, None, None, None, Some(MemoryFormat::Contiguous))?;
    bernoulli_Tensor_(&out, self_, generator)
}

/// `bernoulli.p`: a new tensor like `self_` of 0s and 1s, each 1 with probability `p`.
pub fn bernoulli_p(self_: &Tensor, p: f64, generator: Option<&Generator>) -> Result<Tensor> {
    let out = empty_like(self_, None, None, None, None, Some(MemoryFormat::Contiguous))?;
    bernoulli_float_(&out, p, generator)
}

/// PyTorch's `CHECK_NORMAL_TENSOR_STD`: every standard deviation must be `>= 0`.
fn check_normal_tensor_std(std: &Tensor) -> Result<()> {
    if std.numel() > 0 && !crate::ops::ge_scalar(&crate::ops::min(std)?, Scalar::Int(0))?.item::<bool>()? {
        return Err(Error::invalid("normal", "normal expects all elements of std >= 0.0"));
    }
    Ok(())
}

/// `normal.Tensor_float`: samples of N(`mean[i]`, `std`^2), drawn as `normal_(0, std)` and then
/// shifted by `mean` (PyTorch's order of random draws).
#[allow(non_snake_case)] // the overload name, as the codegen spells it
pub fn normal_Tensor_float(mean: &Tensor, std: f64, generator: Option<&Generator>) -> Result<Tensor> {
    if std.is_nan() || std < 0.0 {
        return Err(Error::invalid("normal", format!("normal expects std >= 0.0, but found std {}", fmt_g(std))));
    }
    let out = empty_like(mean, None, None, None, None, Some(MemoryFormat::Contiguous))?;
    normal_(&out, 0.0, std, generator)?;
    crate::ops::add_(&out, mean, Scalar::Int(1))
}

/// `normal.float_Tensor`: samples of N(`mean`, `std[i]`^2): standard normals scaled by `std`,
/// then shifted by `mean`.
#[allow(non_snake_case)] // the overload name, as the codegen spells it
pub fn normal_float_Tensor(mean: f64, std: &Tensor, generator: Option<&Generator>) -> Result<Tensor> {
    check_normal_tensor_std(std)?;
    let out = empty_like(std, None, None, None, None, Some(MemoryFormat::Contiguous))?;
    normal_(&out, 0.0, 1.0, generator)?;
    crate::ops::mul_(&out, std)?;
    crate::ops::add_scalar_(&out, Scalar::Float(mean), Scalar::Int(1))
}

/// `normal.Tensor_Tensor`: samples of N(`mean[i]`, `std[i]`^2) over the broadcast shape of
/// `mean` and `std`, in `mean`'s dtype.
#[allow(non_snake_case)] // the overload name, as the codegen spells it
pub fn normal_Tensor_Tensor(mean: &Tensor, std: &Tensor, generator: Option<&Generator>) -> Result<Tensor> {
    check_normal_tensor_std(std)?;
    let shape = crate::native::tensor_iterator::broadcast_shapes("normal", mean.sizes(), std.sizes())?;
    let out = crate::ops::empty(&shape, Some(mean.dtype()), None, Some(mean.device()), None, None)?;
    normal_(&out, 0.0, 1.0, generator)?;
    crate::ops::mul_(&out, std)?;
    crate::ops::add_(&out, mean, Scalar::Int(1))
}

/// `normal.float_float`: a new tensor of `size` with samples of N(`mean`, `std`^2).
#[allow(clippy::too_many_arguments)]
pub fn normal_float_float(
    mean: f64,
    std: f64,
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let t = empty_for("normal", size, dtype.unwrap_or_else(ScalarType::default_float), layout, device, pin_memory)?;
    normal_(&t, mean, std, generator)
}

// ---- randperm and multinomial ----------------------------------------------------------------

/// `randperm.generator`: a random permutation of `0..n` (int64 by default), by PyTorch's CPU
/// shuffle: Fisher-Yates swaps with `random() % (n - i)` for `n < 2^32 / 20`, else the
/// inside-out variant on 64-bit draws.
pub fn randperm_generator(
    n: i64,
    generator: Option<&Generator>,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    const OP: &str = "randperm";
    let dtype = dtype.unwrap_or(ScalarType::I64);
    check_factory_options(OP, layout, device, pin_memory)?;
    check_size_nonnegative(OP, &[n])?;
    let top = if n > 0 { n - 1 } else { n };
    let limit = match dtype {
        ScalarType::Bool | ScalarType::C64 | ScalarType::C128 => {
            return Err(Error::UnsupportedDtype { op: OP.into(), dtype })
        }
        ScalarType::F16 => Some((2049, "n cannot be greater than 2049 for Half type.")),
        ScalarType::F32 => Some(((1 << 24) + 1, "n cannot be greater than 2^24+1 for Float type.")),
        ScalarType::F64 => Some(((1 << 53) + 1, "n cannot be greater than 2^53+1 for Double type.")),
        ScalarType::BF16 => None,
        d if top as f64 > dtype_max(d) => {
            return Err(Error::invalid(
                OP,
                format!("value cannot be converted to type {} without overflow", c_int_name(d)),
            ));
        }
        _ => None,
    };
    if let Some((max_n, msg)) = limit {
        if n > max_n {
            return Err(Error::invalid(OP, msg));
        }
    }
    let gen = generator_for(OP, generator, Device::CPU)?;
    let mut g = gen.lock();
    let len = n as usize;
    let mut perm: Vec<i64> = c10::size::try_vec(len)?;
    if n < (u32::MAX / 20) as i64 {
        perm.extend(0..n);
        for i in 0..len.saturating_sub(1) {
            let z = g.random() as usize % (len - i);
            perm.swap(i, i + z);
        }
    } else {
        for i in 0..len {
            let z = (g.random64() % (i as u64 + 1)) as usize;
            perm.push(i as i64);
            perm.swap(i, z);
        }
    }
    drop(g);
    let t = Tensor::from_vec(perm, &[n])?;
    if dtype == ScalarType::I64 {
        Ok(t)
    } else {
        crate::native::copy::to_dtype(&t, dtype)
    }
}

/// `randperm`: [`randperm_generator`] on the default generator.
pub fn randperm(
    n: i64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    randperm_generator(n, None, dtype, layout, device, pin_memory)
}

/// The C type PyTorch names in its integer overflow messages.
fn c_int_name(dtype: ScalarType) -> &'static str {
    match dtype {
        ScalarType::U8 => "uint8_t",
        ScalarType::I8 => "int8_t",
        ScalarType::I16 => "int16_t",
        ScalarType::I32 => "int32_t",
        _ => "int64_t",
    }
}

/// `multinomial`: `num_samples` category indices per row of the 1-d or 2-d probability tensor
/// `self_` (weights, not necessarily normalised).
///
/// As PyTorch: without replacement, or for one sample, the Gumbel-max trick (`argmax`/`topk` of
/// `p / q` with `q ~ Exp(1)`); with replacement, a binary search of a 53-bit uniform in each
/// row's normalised cumulative distribution (accumulated in the input's dtype, float for
/// half/bfloat16). A seed gives PyTorch's samples.
pub fn multinomial(
    self_: &Tensor,
    num_samples: i64,
    replacement: bool,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    const OP: &str = "multinomial";
    check_cpu(OP, self_)?;
    if self_.dim() == 0 || self_.dim() > 2 {
        return Err(Error::invalid(OP, "prob_dist must be 1 or 2 dim"));
    }
    if !self_.dtype().is_floating_point() {
        return Err(Error::invalid(
            OP,
            format!("multinomial only supports floating-point dtypes for input, got: {}", self_.dtype().cpp_name()),
        ));
    }
    if num_samples <= 0 {
        return Err(Error::invalid(OP, "cannot sample n_sample <= 0 samples"));
    }
    let n_categories = self_.sizes()[self_.dim() - 1];
    if !replacement && num_samples > n_categories {
        return Err(Error::invalid(OP, "cannot sample n_sample > prob_dist.size(-1) samples without replacement"));
    }
    if n_categories > 1 << 24 {
        return Err(Error::invalid(OP, "number of categories cannot exceed 2^24"));
    }
    if self_.dim() == 2 && self_.sizes()[0] == 0 {
        return Tensor::from_vec(Vec::<i64>::new(), &[0, num_samples]);
    }
    if !replacement || num_samples == 1 {
        let valid = crate::ops::lt_scalar(&crate::ops::max(self_)?, Scalar::Float(f64::INFINITY))?.item::<bool>()?
            && crate::ops::ge_scalar(&crate::ops::min(self_)?, Scalar::Int(0))?.item::<bool>()?;
        if !valid {
            return Err(Error::invalid(OP, "probability tensor contains either `inf`, `nan` or element < 0"));
        }
        let row_sums = if self_.dim() == 1 {
            crate::ops::sum(self_, None)?
        } else {
            crate::ops::sum_dim_intlist(self_, Some(&[1]), false, None)?
        };
        let zero_rows = crate::ops::eq_scalar(&row_sums, Scalar::Int(0))?;
        if crate::ops::any(&zero_rows)?.item::<bool>()? {
            return Err(Error::invalid(OP, "invalid multinomial distribution (sum of probabilities <= 0)"));
        }
        let q = empty_like(self_, None, None, None, None, None)?;
        exponential_(&q, 1.0, generator)?;
        let ratio = crate::ops::div(self_, &q)?;
        return if num_samples == 1 {
            crate::ops::argmax(&ratio, Some(-1), true)
        } else {
            Ok(crate::ops::topk(&ratio, num_samples, -1, true, true)?.1)
        };
    }
    let probs = crate::native::copy::to_dtype(self_, ScalarType::F64)?.contiguous().call()?.to_vec::<f64>()?;
    let n_cat = n_categories as usize;
    let n_dist = if self_.dim() == 2 { self_.sizes()[0] as usize } else { 1 };
    let double = self_.dtype() == ScalarType::F64;
    // Every row is validated before the first draw, so a bad row leaves the generator as it was.
    let mut cdfs = Vec::with_capacity(n_dist * n_cat);
    for row in probs.chunks(n_cat.max(1)).take(n_dist) {
        if double {
            cumulative_distribution::<f64>(row, &mut cdfs)?;
        } else {
            cumulative_distribution::<f32>(row, &mut cdfs)?;
        }
    }
    if n_cat == 0 && n_dist > 0 {
        return Err(Error::invalid(OP, "invalid multinomial distribution (sum of probabilities <= 0)"));
    }
    let gen = generator_for(OP, generator, Device::CPU)?;
    let mut g = gen.lock();
    let total = c10::size::checked_mul(OP, n_dist as i64, num_samples)?;
    let mut out = c10::size::try_vec(total as usize)?;
    for cdf in cdfs.chunks(n_cat.max(1)).take(n_dist) {
        for _ in 0..num_samples {
            let u = uniform_f64(&mut g);
            // The first slot whose cumulative probability is >= u.
            out.push(cdf.partition_point(|&c| c < u) as i64);
        }
    }
    drop(g);
    let shape: Vec<i64> = if self_.dim() == 2 { vec![n_dist as i64, num_samples] } else { vec![num_samples] };
    Tensor::from_vec(out, &shape)
}

/// Arithmetic of `multinomial`'s cumulative distribution: the input's dtype (float for the
/// 16-bit floats).
trait CdfFloat: Copy + PartialOrd + std::ops::AddAssign + std::ops::Div<Output = Self> {
    const ZERO: Self;
    fn cdf_from(v: f64) -> Self;
    fn cdf_to(self) -> f64;
}
impl CdfFloat for f32 {
    const ZERO: Self = 0.0;
    fn cdf_from(v: f64) -> Self {
        v as f32
    }
    fn cdf_to(self) -> f64 {
        self as f64
    }
}
impl CdfFloat for f64 {
    const ZERO: Self = 0.0;
    fn cdf_from(v: f64) -> Self {
        v
    }
    fn cdf_to(self) -> f64 {
        self
    }
}

/// Appends the normalised cumulative distribution of one row of weights (its last slot forced to
/// exactly 1), as PyTorch's `multinomial_with_replacement` kernel computes it.
fn cumulative_distribution<A: CdfFloat>(row: &[f64], cdf: &mut Vec<f64>) -> Result<()> {
    const OP: &str = "multinomial";
    let start = cdf.len();
    let mut sum = A::ZERO;
    for &w in row {
        // NaN fails this test too, as in PyTorch.
        if w.is_nan() || w < 0.0 {
            return Err(Error::invalid(OP, "invalid multinomial distribution (encountering probability entry < 0)"));
        }
        if !w.is_finite() {
            return Err(Error::invalid(
                OP,
                "invalid multinomial distribution (encountering probability entry = infinity or NaN)",
            ));
        }
        sum += A::cdf_from(w);
        cdf.push(sum.cdf_to());
    }
    if sum.partial_cmp(&A::ZERO) != Some(std::cmp::Ordering::Greater) {
        return Err(Error::invalid(OP, "invalid multinomial distribution (sum of probabilities <= 0)"));
    }
    for c in &mut cdf[start..] {
        *c = (A::cdf_from(*c) / sum).cdf_to();
    }
    if let Some(last) = cdf.last_mut() {
        *last = 1.0;
    }
    Ok(())
}

// ---- cauchy, log-normal, geometric, randint_like ----------------------------------------------

/// Fills `self_` (CPU; a floating dtype when `float_only`) with `f(generator)`, in memory order.
fn fill_with(
    op: &str,
    self_: &Tensor,
    generator: Option<&Generator>,
    float_only: bool,
    mut f: impl FnMut(&mut GeneratorState) -> f64,
) -> Result<Tensor> {
    let dtype = self_.dtype();
    if float_only && !dtype.is_floating_point() {
        return Err(Error::invalid(op, format!("{op} expects a floating point tensor, but got {}", dtype.cpp_name())));
    }
    if self_.numel() == 0 {
        return Ok(self_.clone());
    }
    assert_no_internal_overlap(op, self_)?;
    let gen = generator_for(op, generator, Device::CPU)?;
    let mut g = gen.lock();
    c10::dispatch_all_types!(dtype, T => write_memory_order::<T>(self_, || T::from_f64(f(&mut g))))?;
    Ok(self_.clone())
}

/// `cauchy_`: `median + sigma * tan(pi * (u - 1/2))`, PyTorch's CPU transformation.
pub fn cauchy_(self_: &Tensor, median: f64, sigma: f64, generator: Option<&Generator>) -> Result<Tensor> {
    const OP: &str = "cauchy_";
    if sigma.is_nan() || sigma <= 0.0 {
        return Err(Error::invalid(OP, format!("cauchy_ expects sigma > 0.0, but found sigma={}", fmt_g(sigma))));
    }
    fill_with(OP, self_, generator, true, |g| median + sigma * (PI * (uniform_f64(g) - 0.5)).tan())
}

/// `log_normal_`: `exp(mean + std * z)` for standard normal `z`.
pub fn log_normal_(self_: &Tensor, mean: f64, std: f64, generator: Option<&Generator>) -> Result<Tensor> {
    const OP: &str = "log_normal_";
    if std.is_nan() || std <= 0.0 {
        return Err(Error::invalid(OP, format!("log_normal_ expects std > 0.0, but found std={}", fmt_g(std))));
    }
    fill_with(OP, self_, generator, true, |g| normal_f64(g, mean, std).exp())
}

/// `geometric_`: the number of Bernoulli(`p`) trials up to the first success,
/// `ceil(log(u) / log1p(-p))` (any dtype, as PyTorch).
pub fn geometric_(self_: &Tensor, p: f64, generator: Option<&Generator>) -> Result<Tensor> {
    const OP: &str = "geometric_";
    if p.is_nan() || p <= 0.0 || p >= 1.0 {
        return Err(Error::invalid(OP, format!("geometric_ expects p to be in (0, 1), but got p={}", fmt_g(p))));
    }
    let denom = (-p).ln_1p();
    fill_with(OP, self_, generator, false, |g| ((1.0 - uniform_f64(g)).ln() / denom).ceil().max(1.0))
}

/// `randint_like(Tensor self, SymInt high, *, ScalarType? dtype=None, ...)`: integers in
/// `[0, high)` shaped like `self_` (its dtype by default).
#[allow(clippy::too_many_arguments)]
pub fn randint_like(
    self_: &Tensor,
    high: i64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    randint_like_low_dtype(self_, 0, high, dtype, layout, device, pin_memory, memory_format)
}

/// `randint_like.low_dtype(Tensor self, SymInt low, SymInt high, *, ScalarType? dtype=None, ...)`
#[allow(clippy::too_many_arguments)]
pub fn randint_like_low_dtype(
    self_: &Tensor,
    low: i64,
    high: i64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let t = empty_like(self_, dtype, layout, device, pin_memory, memory_format)?;
    random_from_(&t, low, Some(high), None)
}

/// `randint_like.Tensor(Tensor self, Tensor high, *, ScalarType? dtype=None, ...)`: `high` is a
/// one-element integer tensor.
#[allow(clippy::too_many_arguments)]
#[allow(non_snake_case)]
pub fn randint_like_Tensor(
    self_: &Tensor,
    high: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    if high.numel() != 1 || high.dtype().is_floating_point() {
        return Err(Error::invalid("randint_like", "high must be a scalar tensor and on CPU"));
    }
    randint_like(self_, high.item::<i64>()?, dtype, layout, device, pin_memory, memory_format)
}
