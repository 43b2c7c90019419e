//! Factory operators (`empty`, `zeros`, `ones`, `full`, `arange`, `linspace`, `eye`, the `*_like`
//! family) and the in-place fills (`fill_`, `zero_`) on the CPU, with PyTorch's dtype inference,
//! argument checks and error messages.

use c10::tensor_impl::{contiguous_strides, DimVec};
use c10::{Device, Element, Error, Layout, MemoryFormat, Result, Scalar, ScalarType};
use smallvec::SmallVec;

use crate::native::cpu::loops::for_each_offset;
use crate::Tensor;

// ---- shared helpers (also used by `native::random`) -------------------------------------------

/// Checks the `layout`, `device` and `pin_memory` arguments of a CPU factory.
pub(crate) fn check_factory_options(
    op: &str,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<()> {
    if let Some(d) = device {
        if !d.is_cpu() {
            return Err(Error::NotImplemented {
                op: op.into(),
                msg: format!("this is the CPU kernel; it cannot create a tensor on device '{d}'"),
            });
        }
    }
    check_layout_and_pinning(op, layout, pin_memory)
}

/// The options check of the allocating factories (`empty`, `empty_strided`, `empty_like`),
/// which work on every device: they touch no memory, and the dispatcher only runs them for a
/// device whose backend registered them (Note [Device arguments dispatch] in codegen).
pub(crate) fn check_layout_and_pinning(op: &str, layout: Option<Layout>, pin_memory: Option<bool>) -> Result<()> {
    if let Some(l) = layout {
        if l != Layout::Strided {
            return Err(Error::NotImplemented { op: op.into(), msg: format!("layout {l:?}") });
        }
    }
    if pin_memory == Some(true) {
        return Err(Error::NotImplemented {
            op: op.into(),
            msg: "pin_memory=True: Cannot access accelerator device when none is available.".into(),
        });
    }
    Ok(())
}

/// Errors unless `t` lives on the CPU (the kernels here read and write host memory).
pub(crate) fn check_cpu(op: &str, t: &Tensor) -> Result<()> {
    if t.device().is_cpu() {
        Ok(())
    } else {
        Err(Error::NotImplemented { op: op.into(), msg: format!("CPU kernel called with a tensor on {}", t.device()) })
    }
}

/// PyTorch's `check_size_nonnegative`.
pub(crate) fn check_size_nonnegative(op: &str, size: &[i64]) -> Result<()> {
    match size.iter().find(|&&s| s < 0) {
        Some(&d) => Err(Error::shape(op, format!("Trying to create tensor with negative dimension {d}: {size:?}"))),
        None => Ok(()),
    }
}

/// Formats a double as C++'s `operator<<` does (`%g` with 6 significant digits), so the numbers
/// in error messages read like PyTorch's (`1e+308`, `-1`, `0.5`).
#[doc(hidden)]
pub fn fmt_g(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    const P: i32 = 6;
    let sci = format!("{:.*e}", (P - 1) as usize, x);
    let (mant, exp) = sci.split_once('e').expect("`{:e}` always has an exponent");
    let exp: i32 = exp.parse().expect("exponent is an integer");
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..P).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", strip(mant), sign, exp.abs())
    } else {
        strip(&format!("{:.*}", (P - 1 - exp) as usize, x))
    }
}

/// C++'s name for a dtype's element type as `c10::Scalar::to<T>` reports it in overflow errors.
fn checked_convert_name(dtype: ScalarType) -> &'static str {
    match dtype {
        ScalarType::U8 => "uint8_t",
        ScalarType::I8 => "int8_t",
        ScalarType::I16 => "int16_t",
        ScalarType::I32 => "int",
        ScalarType::I64 => "int64_t",
        ScalarType::F16 => "c10::Half",
        ScalarType::BF16 => "c10::BFloat16",
        ScalarType::F32 => "float",
        ScalarType::F64 => "double",
        ScalarType::C64 => "c10::complex<float>",
        ScalarType::C128 => "c10::complex<double>",
        ScalarType::Bool => "bool",
    }
}

/// Largest finite value of a dtype, as f64 (of its parts for a complex dtype).
pub(crate) fn dtype_max(dtype: ScalarType) -> f64 {
    match dtype {
        ScalarType::U8 => u8::MAX as f64,
        ScalarType::I8 => i8::MAX as f64,
        ScalarType::I16 => i16::MAX as f64,
        ScalarType::I32 => i32::MAX as f64,
        ScalarType::I64 => i64::MAX as f64,
        ScalarType::F16 => c10::f16::MAX.to_f64(),
        ScalarType::BF16 => c10::bf16::MAX.to_f64(),
        ScalarType::F32 | ScalarType::C64 => f32::MAX as f64,
        ScalarType::F64 | ScalarType::C128 => f64::MAX,
        ScalarType::Bool => 1.0,
    }
}

/// Smallest (most negative) finite value of a dtype, as f64.
pub(crate) fn dtype_lowest(dtype: ScalarType) -> f64 {
    match dtype {
        ScalarType::U8 | ScalarType::Bool => 0.0,
        ScalarType::I8 => i8::MIN as f64,
        ScalarType::I16 => i16::MIN as f64,
        ScalarType::I32 => i32::MIN as f64,
        ScalarType::I64 => i64::MIN as f64,
        d => -dtype_max(d),
    }
}

/// `Scalar::to<T>()` with c10's overflow check (`checked_convert`): integers may wrap into an
/// unsigned type from a negative value (two's complement), floats must fit the target's range,
/// infinities fit only floating types, NaN fits no integer type, anything converts to bool.
pub(crate) fn checked_scalar_to<T: Element>(op: &str, v: Scalar) -> Result<T> {
    let dt = T::DTYPE;
    let overflows = match (dt, v) {
        (ScalarType::Bool, _) | (_, Scalar::Bool(_)) => false,
        (d, Scalar::Float(f)) if d.is_floating_point() => f.is_finite() && (f < dtype_lowest(d) || f > dtype_max(d)),
        (d, Scalar::Float(f)) => !f.is_finite() || f < dtype_lowest(d) || f > dtype_max(d),
        (d, Scalar::Int(i)) if d.is_floating_point() => (i as f64) > dtype_max(d) || (i as f64) < dtype_lowest(d),
        (ScalarType::I64, Scalar::Int(_)) => false,
        (ScalarType::U8, Scalar::Int(i)) => i > u8::MAX as i64 || (i < 0 && i.unsigned_abs() > u8::MAX as u64),
        (d, Scalar::Int(i)) => (i as f64) < dtype_lowest(d) || (i as f64) > dtype_max(d),
    };
    if overflows {
        return Err(Error::invalid(
            op,
            format!("value cannot be converted to type {} without overflow", checked_convert_name(dt)),
        ));
    }
    Ok(v.to::<T>())
}

/// Writes `f(i)` into the `i`-th element, in row-major logical order, of a CPU tensor of
/// element type `T`.
pub(crate) fn write_indexed<T: Element>(t: &Tensor, mut f: impl FnMut(i64) -> T) -> Result<()> {
    let base = t.typed_data_ptr::<T>()?;
    let mut i = 0i64;
    for_each_offset(t.sizes(), t.strides(), |off| {
        // SAFETY: `t` is a CPU tensor whose storage covers every offset produced from its own
        // sizes and strides (TensorImpl invariant), and `base` has `t`'s dtype (checked by
        // `typed_data_ptr`). Kernels own the data for the duration of the call: no Rust
        // reference to these elements exists while we write.
        unsafe { base.offset(off).write(f(i)) };
        i += 1;
    });
    Ok(())
}

/// TensorIterator's dimension order for one operand: dims sorted from innermost (smallest
/// stride) to outermost by a stable insertion sort; a zero stride makes a comparison ambiguous
/// (the dims keep their order), equal strides put the smaller size first. `perm[0]` is the
/// fastest-moving dim.
pub(crate) fn stride_order(sizes: &[i64], strides: &[i64]) -> SmallVec<[usize; 6]> {
    let nd = sizes.len();
    let mut perm: SmallVec<[usize; 6]> = (0..nd).rev().collect();
    // -1: dim0 goes first, 1: dim1 goes first, 0: ambiguous.
    let should_swap = |d0: usize, d1: usize| -> i32 {
        let (s0, s1) = (strides[d0], strides[d1]);
        if s0 == 0 || s1 == 0 {
            0
        } else if s0 < s1 {
            -1
        } else if s0 > s1 || sizes[d0] > sizes[d1] {
            1
        } else {
            0
        }
    };
    for i in 1..nd {
        let mut dim1 = i;
        for j in 1..=i {
            let dim0 = i - j;
            match should_swap(perm[dim0], perm[dim1]) {
                c if c > 0 => {
                    perm.swap(dim0, dim1);
                    dim1 = dim0;
                }
                c if c < 0 => break,
                _ => {}
            }
        }
    }
    perm
}

/// Dense strides that keep the input's dimension order (`at::infer_dense_strides`), used by
/// `empty_like` for strided inputs that are not dense.
#[doc(hidden)]
pub fn infer_dense_strides(sizes: &[i64], strides: &[i64]) -> DimVec {
    let nd = sizes.len();
    let mut out: DimVec = SmallVec::from_elem(1, nd);
    if nd <= 1 {
        return out;
    }
    let mut cur = 1i64;
    for &d in stride_order(sizes, strides).iter() {
        out[d] = cur;
        if sizes[d] > 1 {
            // Wrapping: the product of a real tensor's sizes fits (its numel was checked), and an
            // empty one ([2^40, 2^40, 0]) addresses nothing with whatever strides.
            cur = cur.wrapping_mul(sizes[d]);
        }
    }
    out
}

/// The strides `empty` gives a shape for a memory format (`empty_tensor_restride`).
fn strides_for_memory_format(op: &str, size: &[i64], mf: MemoryFormat) -> Result<DimVec> {
    match mf {
        MemoryFormat::Contiguous => Ok(contiguous_strides(size)),
        MemoryFormat::ChannelsLast => {
            if size.len() != 4 {
                return Err(Error::invalid(op, "required rank 4 tensor to use channels_last format"));
            }
            let mut s: DimVec = SmallVec::from_elem(0, 4);
            s[1] = 1;
            s[3] = size[1];
            // Products of sizes of a checked count, or of an empty tensor (addressing nothing).
            s[2] = s[3].wrapping_mul(size[3]);
            s[0] = s[2].wrapping_mul(size[2]);
            Ok(s)
        }
        MemoryFormat::ChannelsLast3d => {
            if size.len() != 5 {
                return Err(Error::invalid(op, "required rank 5 tensor to use channels_last_3d format"));
            }
            let mut s: DimVec = SmallVec::from_elem(0, 5);
            s[1] = 1;
            s[4] = size[1];
            s[3] = s[4].wrapping_mul(size[4]);
            // Products of sizes of a checked count, or of an empty tensor (addressing nothing).
            s[2] = s[3].wrapping_mul(size[3]);
            s[0] = s[2].wrapping_mul(size[2]);
            Ok(s)
        }
        MemoryFormat::Preserve => Err(Error::invalid(op, "unsupported memory format Preserve")),
    }
}

/// Note [Element conversions in dispatch bodies]: inside `dispatch_all_types!` the element type
/// is a concrete alias, so `T::from_f64` would pick `half`'s inherent `f16::from_f64` /
/// `bf16::from_f64`, which round from f64 differently from c10 (which goes through float). We
/// spell `<T as Element>::from_f64` there.
///
/// Note [Kernel FMA]: PyTorch's CPU kernels are compiled once per CPU capability, and on x86
/// it runs the AVX2 build (also on AVX-512 machines for most ops), where the compiler fuses
/// `a * b + c` into one fused multiply-add. Where a kernel here promises PyTorch's exact bits
/// (`arange`, `linspace`, `uniform_`, `normal_`), it uses `mul_add` in the same places.
///
/// Note [Vectorised fill emulation]: `arange` runs through `cpu_serial_kernel_vec`, which fills
/// a contiguous output two AVX2 vectors (32 bytes each) at a time and the remainder element by
/// element. A vector computes its first element like the scalar path (`base`, rounded to the
/// element type) and the others as `base + k * step`, which can differ from `start + i * step`
/// in the last bit; we reproduce that chunking. Beyond PyTorch's grain size (32768 elements) its
/// result also depends on how many threads split the range; we match the single-threaded split.
fn vector_lanes(dtype: ScalarType) -> i64 {
    (32 / dtype.size()) as i64
}

/// The first index of the vector chunk that computes element `i` of an `n`-element fill, or None
/// when the element is in the scalar remainder.
fn vector_chunk(i: i64, n: i64, lanes: i64) -> Option<i64> {
    let vectorised = n / (2 * lanes) * (2 * lanes);
    (i < vectorised).then(|| i - i % lanes)
}

// ---- empty ---------------------------------------------------------------------------------------

/// `empty.memory_format`: an uninitialised tensor; `memory_format` picks the strides
/// (contiguous by default, `ChannelsLast` for 4-d, `ChannelsLast3d` for 5-d).
pub fn empty_memory_format(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    const OP: &str = "empty";
    check_layout_and_pinning(OP, layout, pin_memory)?;
    check_size_nonnegative(OP, size)?;
    let dtype = dtype.unwrap_or(ScalarType::default_float());
    // Every memory format spans the contiguous byte count; checking it first keeps the stride
    // products below from wrapping (See Note [Checked sizes]).
    c10::size::contiguous_nbytes(OP, size, dtype.size())?;
    let strides = strides_for_memory_format(OP, size, memory_format.unwrap_or_default())?;
    Tensor::empty_strided_uninit(size, &strides, dtype, device.unwrap_or(Device::CPU))
}

/// `empty_strided`: an uninitialised tensor with the given strides (non-negative).
pub fn empty_strided(
    size: &[i64],
    stride: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    const OP: &str = "empty_strided";
    check_layout_and_pinning(OP, layout, pin_memory)?;
    if size.len() != stride.len() {
        return Err(Error::shape(
            OP,
            format!("dimensionality of sizes ({}) must match dimensionality of strides ({})", size.len(), stride.len()),
        ));
    }
    check_size_nonnegative(OP, size)?;
    if stride.iter().any(|&s| s < 0) {
        return Err(Error::shape(
            OP,
            format!("Storage size calculation overflowed with sizes={size:?} and strides={stride:?}"),
        ));
    }
    Tensor::empty_strided_uninit(
        size,
        stride,
        dtype.unwrap_or(ScalarType::default_float()),
        device.unwrap_or(Device::CPU),
    )
}

// ---- zeros / ones / full -------------------------------------------------------------------------

/// `zeros`: a tensor filled with 0 (default dtype float32).
pub fn zeros(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    if size.iter().any(|&s| s < 0) {
        return Err(Error::shape("zeros", "zeros: Dimension size must be non-negative."));
    }
    let t = empty_memory_format(size, dtype, layout, device, pin_memory, None)?;
    zero_(&t)
}

/// `ones`: a tensor filled with 1 (default dtype float32).
pub fn ones(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let t = empty_memory_format(size, dtype, layout, device, pin_memory, None)?;
    fill_scalar_(&t, Scalar::Int(1))
}

/// `full`: a tensor filled with `fill_value`. Without `dtype` the value's kind decides: bool ->
/// bool, integer -> int64, floating -> the default dtype (float32).
pub fn full(
    size: &[i64],
    fill_value: Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let dtype = dtype.unwrap_or(match fill_value {
        Scalar::Bool(_) => ScalarType::Bool,
        Scalar::Int(_) => ScalarType::I64,
        Scalar::Float(_) => ScalarType::default_float(),
    });
    let t = empty_memory_format(size, Some(dtype), layout, device, pin_memory, None)?;
    fill_scalar_(&t, fill_value)
}

// ---- arange / linspace / eye ---------------------------------------------------------------------

/// `arange`: `0, 1, ..., ceil(end) - 1`; int64 when `end` is an integer (or bool), else float32.
pub fn arange(
    end: Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    arange_start_step(Scalar::Int(0), end, Scalar::Int(1), dtype, layout, device, pin_memory)
}

/// `arange.start`: `start, start + 1, ...` up to (excluding) `end`.
pub fn arange_start(
    start: Scalar,
    end: Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    arange_start_step(start, end, Scalar::Int(1), dtype, layout, device, pin_memory)
}

/// The accumulation type of `arange` (`acc_type<scalar_t, /*is_cuda=*/false>`).
#[derive(Copy, Clone)]
enum ArangeAcc {
    Int { start: i64, step: i64 },
    Float { start: f32, step: f32 },
    Double { start: f64, step: f64 },
}

/// `arange.start_step`: `start + i * step` for `i` in `0..ceil((end - start) / step)`.
///
/// Without `dtype` the result is int64 when `start`, `end` and `step` are all integers (bool
/// counts as integer) and the default dtype (float32) otherwise. The length is computed in
/// double from the original scalars (in exact integer arithmetic for an int64 result); the
/// values are computed in the dtype's accumulation type (int64 for integers, double for
/// float/double, float for half/bfloat16), as PyTorch's CPU kernel does.
#[allow(clippy::too_many_arguments)]
pub fn arange_start_step(
    start: Scalar,
    end: Scalar,
    step: Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    const OP: &str = "arange";
    // Every device: the values come from the device's `arange` loop below.
    check_layout_and_pinning(OP, layout, pin_memory)?;
    let device = device.unwrap_or(Device::CPU);
    let all_integral = !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
    let dtype = dtype.unwrap_or(if all_integral { ScalarType::I64 } else { ScalarType::default_float() });

    // Convert the bounds to the accumulation type and validate them there. Integer bounds are
    // compared in i64 (f64 would round large values).
    let mut iend = 0i64;
    let (acc, xstart, xend, xstep) = match dtype {
        ScalarType::Bool => return Err(Error::UnsupportedDtype { op: "arange_cpu".into(), dtype }),
        ScalarType::F16 | ScalarType::BF16 => {
            let (s, e, st) = (
                checked_scalar_to::<f32>(OP, start)?,
                checked_scalar_to::<f32>(OP, end)?,
                checked_scalar_to::<f32>(OP, step)?,
            );
            (ArangeAcc::Float { start: s, step: st }, s as f64, e as f64, st as f64)
        }
        ScalarType::F32 | ScalarType::F64 => {
            let (s, e, st) = (start.to_f64(), end.to_f64(), step.to_f64());
            (ArangeAcc::Double { start: s, step: st }, s, e, st)
        }
        _ => {
            let (s, e, st) = (
                checked_scalar_to::<i64>(OP, start)?,
                checked_scalar_to::<i64>(OP, end)?,
                checked_scalar_to::<i64>(OP, step)?,
            );
            iend = e;
            (ArangeAcc::Int { start: s, step: st }, s as f64, e as f64, st as f64)
        }
    };
    let (step_pos, step_neg, end_ge, end_le) = match acc {
        ArangeAcc::Int { start: s, step: st } => (st > 0, st < 0, iend >= s, iend <= s),
        _ => (xstep > 0.0, xstep < 0.0, xend >= xstart, xend <= xstart),
    };
    if !(step_pos || step_neg) {
        return Err(Error::invalid(OP, "step must be nonzero"));
    }
    if !(xstart.is_finite() && xend.is_finite()) {
        return Err(Error::invalid(OP, format!("unsupported range: {} -> {}", fmt_g(xstart), fmt_g(xend))));
    }
    if !((step_pos && end_ge) || (step_neg && end_le)) {
        return Err(Error::invalid(OP, "upper bound and lower bound inconsistent with step sign"));
    }
    let size_d = match acc {
        ArangeAcc::Int { start: s, step: st } if dtype == ScalarType::I64 => {
            let sgn = if st > 0 { 1 } else { -1 };
            // C++ integer division truncates toward zero, as Rust's does.
            iend.wrapping_sub(s).wrapping_add(st).wrapping_sub(sgn).wrapping_div(st) as f64
        }
        _ => ((end.to_f64() - start.to_f64()) / step.to_f64()).ceil(),
    };
    if !(0.0..=i64::MAX as f64).contains(&size_d) {
        return Err(Error::invalid(OP, "invalid size, possible overflow?"));
    }
    let size = size_d as i64;
    let out = Tensor::empty_uninit(&[size], dtype, device)?;
    if !device.is_cpu() {
        // Note [Device-generic operators]: an output-only iteration; the loop gets `start` and
        // `step` in the accumulation type (the device's own, e.g. float for float32 on CUDA).
        let (s, st) = match acc {
            ArangeAcc::Int { start, step } => (Scalar::Int(start), Scalar::Int(step)),
            ArangeAcc::Float { start, step } => (Scalar::Float(start as f64), Scalar::Float(step as f64)),
            ArangeAcc::Double { start, step } => (Scalar::Float(start), Scalar::Float(step)),
        };
        {
            let iter = crate::native::tensor_iterator::TensorIteratorConfig::new(OP).add_output(Some(&out)).build()?;
            crate::native::stub::run(crate::device_kernel!("arange"), &iter, &[s, st])?;
        }
        return Ok(out);
    }
    // See Note [Vectorised fill emulation].
    let lanes = vector_lanes(dtype);
    c10::dispatch_all_types!(dtype, T => match acc {
        ArangeAcc::Int { start, step } => {
            write_indexed::<T>(&out, |i| T::from_i64(start.wrapping_add(step.wrapping_mul(i))))
        }
        // Half/bfloat16: the vector base is rounded to T, the lanes add `k * step` in float.
        ArangeAcc::Float { start, step } => write_indexed::<T>(&out, |i| match vector_chunk(i, size, lanes) {
            Some(c) => {
                let base = <T as Element>::from_f64(step.mul_add(c as f32, start) as f64).to_f64() as f32;
                <T as Element>::from_f64(((i - c) as f32).mul_add(step, base) as f64)
            }
            None => <T as Element>::from_f64(step.mul_add(i as f32, start) as f64),
        }),
        // Float/double: the vector base is rounded to T, the lanes add `k * step` in double.
        ArangeAcc::Double { start, step } => write_indexed::<T>(&out, |i| match vector_chunk(i, size, lanes) {
            Some(c) => {
                let base = <T as Element>::from_f64(step.mul_add(c as f64, start)).to_f64();
                <T as Element>::from_f64(((i - c) as f64).mul_add(step, base))
            }
            None => <T as Element>::from_f64(step.mul_add(i as f64, start)),
        }),
    })?;
    Ok(out)
}

/// `linspace`: `steps` evenly spaced values from `start` to `end` inclusive (default dtype
/// float32, whatever the scalars' kinds).
///
/// Uses PyTorch's symmetric formula: `start + i * step` for `i < steps / 2` and
/// `end - (steps - 1 - i) * step` otherwise, in the dtype's arithmetic for floating types and in
/// double (then truncated) for integer types.
#[allow(clippy::too_many_arguments)]
pub fn linspace(
    start: Scalar,
    end: Scalar,
    steps: i64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    const OP: &str = "linspace";
    check_factory_options(OP, layout, device, pin_memory)?;
    if steps < 0 {
        return Err(Error::invalid(OP, "number of steps must be non-negative"));
    }
    let dtype = dtype.unwrap_or(ScalarType::default_float());
    let out = Tensor::empty_uninit(&[steps], dtype, Device::CPU)?;
    if steps == 0 {
        return Ok(out);
    }
    if steps == 1 {
        return fill_scalar_(&out, start);
    }
    if dtype == ScalarType::Bool {
        return Err(Error::UnsupportedDtype { op: "linspace_cpu".into(), dtype });
    }
    let halfway = steps / 2;
    c10::dispatch_all_types!(dtype, T => {
        let s: T = checked_scalar_to::<T>(OP, start)?;
        let e: T = checked_scalar_to::<T>(OP, end)?;
        let (s, e) = (Element::to_f64(s), Element::to_f64(e));
        match T::DTYPE {
            // `start + step * i` and `end - step * (steps - i - 1)`, each one fused multiply-add
            // (see Note [Kernel FMA]) in the opmath type: float for float, half and bfloat16
            // (whose start and end are first rounded to the dtype), double for double. Half is
            // the exception: PyTorch 2.15's results for it are those of a separate multiply and
            // add (checked against it over 10^5 values), so we do not fuse there.
            ScalarType::F32 | ScalarType::F16 | ScalarType::BF16 => {
                let (s, e) = (s as f32, e as f32);
                let step = (e - s) / (steps - 1) as f32;
                let fused = T::DTYPE != ScalarType::F16;
                let madd = |a: f32, b: f32, c: f32| if fused { a.mul_add(b, c) } else { a * b + c };
                write_indexed::<T>(&out, |i| {
                    <T as Element>::from_f64(if i < halfway {
                        madd(step, i as f32, s)
                    } else {
                        madd(-step, (steps - i - 1) as f32, e)
                    } as f64)
                })?;
            }
            ScalarType::F64 => {
                let step = (e - s) / (steps - 1) as f64;
                write_indexed::<T>(&out, |i| {
                    <T as Element>::from_f64(if i < halfway {
                        step.mul_add(i as f64, s)
                    } else {
                        (-step).mul_add((steps - i - 1) as f64, e)
                    })
                })?;
            }
            // Integers: a double step, fused multiply-adds in double, truncated to T.
            _ => {
                let step = (e - s) / (steps - 1) as f64;
                write_indexed::<T>(&out, |i| {
                    <T as Element>::from_f64(if i < halfway {
                        step.mul_add(i as f64, s)
                    } else {
                        (-step).mul_add((steps - i - 1) as f64, e)
                    })
                })?;
            }
        }
    });
    Ok(out)
}

/// `linspace` on a device: the CPU kernel's formula (`start + step * i` below the halfway
/// point, `end - step * (steps - 1 - i)` from it, with the step rounded as the CPU rounds it) as
/// float64 operators on the device, then one cast to the dtype (a truncation for integers, as
/// on the CPU). The multiply and add are separate roundings in float64, so a float32 result can
/// differ from the CPU's fused one only where the exact value sits on a float32 tie.
pub fn linspace_device(
    start: Scalar,
    end: Scalar,
    steps: i64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    const OP: &str = "linspace";
    if layout.is_some_and(|l| l != Layout::Strided) || pin_memory == Some(true) {
        return Err(Error::invalid(OP, "linspace makes strided, unpinned tensors"));
    }
    if steps < 0 {
        return Err(Error::invalid(OP, "number of steps must be non-negative"));
    }
    let dtype = dtype.unwrap_or(ScalarType::default_float());
    let device = device.unwrap_or(Device::CPU);
    if steps <= 1 {
        let out = crate::ops::empty(&[steps], Some(dtype), None, Some(device), None, None)?;
        return if steps == 1 { crate::ops::fill_(&out, start) } else { Ok(out) };
    }
    if dtype == ScalarType::Bool || dtype.is_complex() {
        return Err(Error::UnsupportedDtype { op: "linspace_cuda".into(), dtype });
    }
    let (s, e) = c10::dispatch_all_types!(dtype, T => {
        (Element::to_f64(checked_scalar_to::<T>(OP, start)?), Element::to_f64(checked_scalar_to::<T>(OP, end)?))
    });
    let step = match dtype {
        ScalarType::F32 | ScalarType::F16 | ScalarType::BF16 => ((e as f32 - s as f32) / (steps - 1) as f32) as f64,
        _ => (e - s) / (steps - 1) as f64,
    };
    let f64_ = Some(ScalarType::F64);
    let i = crate::ops::arange(Scalar::Int(steps), f64_, None, Some(device), None)?;
    let low =
        crate::ops::add_scalar(&crate::ops::mul_scalar(&i, Scalar::Float(step))?, Scalar::Float(s), Scalar::Int(1))?;
    // end - step * (steps - 1 - i) = end - step * (steps - 1) + step * i
    let back =
        crate::ops::add_scalar(&crate::ops::mul_scalar(&i, Scalar::Int(-1))?, Scalar::Int(steps - 1), Scalar::Int(1))?;
    let high = crate::ops::add_scalar(
        &crate::ops::mul_scalar(&back, Scalar::Float(-step))?,
        Scalar::Float(e),
        Scalar::Int(1),
    )?;
    let first_half = crate::ops::lt_scalar(&i, Scalar::Int(steps / 2))?;
    let v = crate::ops::where_self(&first_half, &low, &high)?;
    crate::ops::_to_copy(&v, Some(dtype), None, None, None, false, None)
}

/// `eye`: the `n x n` identity matrix.
pub fn eye(
    n: i64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    if n < 0 {
        return Err(Error::invalid("eye", format!("n must be greater or equal to 0, got {n}")));
    }
    eye_m(n, n, dtype, layout, device, pin_memory)
}

/// `eye.m`: an `n x m` matrix with ones on the main diagonal, on any device: zeros, then a fill
/// of the diagonal view (one strided fill, the device's own on CUDA).
pub fn eye_m(
    n: i64,
    m: i64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    const OP: &str = "eye";
    if n < 0 {
        return Err(Error::invalid(OP, format!("n must be greater or equal to 0, got {n}")));
    }
    if m < 0 {
        return Err(Error::invalid(OP, format!("m must be greater or equal to 0, got {m}")));
    }
    let out = crate::ops::zeros(&[n, m], dtype, layout, device, pin_memory)?;
    crate::ops::fill_(&crate::ops::diagonal(&out, 0, 0, 1)?, Scalar::Int(1))?;
    Ok(out)
}

// ---- *_like --------------------------------------------------------------------------------------

/// `empty_like`: an uninitialised tensor with `self_`'s shape and (unless given) dtype. With
/// `memory_format` None or `Preserve`, a dense non-overlapping input's strides are kept and
/// other strided inputs get dense strides in the input's dimension order (PyTorch's preserve
/// rule); other formats behave as in `empty`.
pub fn empty_like(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    const OP: &str = "empty_like";
    check_layout_and_pinning(OP, layout, pin_memory)?;
    let dtype = dtype.unwrap_or(self_.dtype());
    let device = device.unwrap_or(self_.device());
    match memory_format.unwrap_or(MemoryFormat::Preserve) {
        MemoryFormat::Preserve => {
            let (sizes, strides) = (self_.sizes(), self_.strides());
            if crate::memory_overlap::is_non_overlapping_and_dense(sizes, strides) {
                Tensor::empty_strided_uninit(sizes, strides, dtype, device)
            } else {
                Tensor::empty_strided_uninit(sizes, &infer_dense_strides(sizes, strides), dtype, device)
            }
        }
        mf => empty_memory_format(self_.sizes(), Some(dtype), layout, Some(device), pin_memory, Some(mf)),
    }
}

/// `zeros_like`: [`empty_like`] filled with 0.
pub fn zeros_like(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let t = empty_like(self_, dtype, layout, device, pin_memory, memory_format)?;
    zero_(&t)
}

/// `ones_like`: [`empty_like`] filled with 1.
pub fn ones_like(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let t = empty_like(self_, dtype, layout, device, pin_memory, memory_format)?;
    fill_scalar_(&t, Scalar::Int(1))
}

/// `full_like`: [`empty_like`] filled with `fill_value` (the dtype is `self_`'s unless given;
/// it is not inferred from the value).
#[allow(clippy::too_many_arguments)]
pub fn full_like(
    self_: &Tensor,
    fill_value: Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let t = empty_like(self_, dtype, layout, device, pin_memory, memory_format)?;
    fill_scalar_(&t, fill_value)
}

// ---- in-place fills ------------------------------------------------------------------------------

/// `fill_.Scalar`: writes `value`, converted to the tensor's dtype with c10's overflow check,
/// into every element of `self_` (any strides). Does not bump the version counter (the
/// ADInplaceOrView layer does).
#[allow(non_snake_case)] // `name_` + `_overload`, the codegen's naming of in-place overloads
pub fn fill_scalar_(self_: &Tensor, value: Scalar) -> Result<Tensor> {
    const OP: &str = "fill_";
    crate::memory_overlap::assert_no_internal_overlap(OP, self_)?;
    if self_.dtype().is_complex() {
        // A real value: the real parts get it, the imaginary parts 0.
        let parts = crate::ops::view_as_real(self_)?;
        fill_scalar_(&crate::ops::select(&parts, -1, 0)?, value)?;
        fill_scalar_(&crate::ops::select(&parts, -1, 1)?, Scalar::Int(0))?;
        return Ok(self_.clone());
    }
    if !self_.device().is_cpu() {
        // The value must fit the dtype on every device (the CPU checks it below).
        c10::dispatch_all_types!(self_.dtype(), T => {
            checked_scalar_to::<T>(OP, value)?;
        });
        // Note [Device-generic operators]: an output-only iteration; the loop gets the value.
        let iter = crate::native::tensor_iterator::TensorIteratorConfig::new(OP).add_output(Some(self_)).build()?;
        crate::native::stub::run(crate::device_kernel!("fill"), &iter, &[value])?;
        return Ok(self_.clone());
    }
    c10::dispatch_all_types!(self_.dtype(), T => {
        let v = checked_scalar_to::<T>(OP, value)?;
        write_indexed::<T>(self_, |_| v)?;
    });
    Ok(self_.clone())
}

/// `zero_`: fills `self_` with 0.
pub fn zero_(self_: &Tensor) -> Result<Tensor> {
    fill_scalar_(self_, Scalar::Int(0))
}
