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
pub(crate) fn fmt_g(x: f64) -> String {
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
pub(crate) fn infer_dense_strides(sizes: &[i64], strides: &[i64]) -> DimVec {
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
        return Err(Error::shape("zeros", "Dimension size must be non-negative."));
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
            crate::native::stub::run("arange", &iter, &[s, st])?;
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

/// `eye.m`: an `n x m` matrix with ones on the main diagonal.
pub fn eye_m(
    n: i64,
    m: i64,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    const OP: &str = "eye";
    check_factory_options(OP, layout, device, pin_memory)?;
    if n < 0 {
        return Err(Error::invalid(OP, format!("n must be greater or equal to 0, got {n}")));
    }
    if m < 0 {
        return Err(Error::invalid(OP, format!("m must be greater or equal to 0, got {m}")));
    }
    let out = zeros(&[n, m], dtype, layout, device, pin_memory)?;
    let diag = out.strides()[0] + out.strides()[1];
    c10::dispatch_all_types!(out.dtype(), T => {
        let base = out.typed_data_ptr::<T>()?;
        for i in 0..n.min(m) {
            // SAFETY: `out` is a fresh contiguous n x m CPU tensor of dtype T, and for
            // i < min(n, m) the offset i * (stride0 + stride1) addresses element (i, i), which is
            // inside its storage; nothing else references the new tensor yet.
            unsafe { base.offset((i * diag) as isize).write(T::from_i64(1)) };
        }
    });
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
        crate::native::stub::run("fill", &iter, &[value])?;
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

// ---- convenience constructors --------------------------------------------------------------------

impl Tensor {
    /// A contiguous CPU tensor of zeros.
    ///
    /// ```
    /// use aten::Tensor;
    /// use c10::ScalarType;
    /// let t = Tensor::zeros(&[2, 3], ScalarType::F32).unwrap();
    /// assert_eq!(t.to_vec::<f32>().unwrap(), vec![0.0; 6]);
    /// ```
    pub fn zeros(size: &[i64], dtype: ScalarType) -> Result<Tensor> {
        zeros(size, Some(dtype), None, None, None)
    }

    /// A contiguous CPU tensor of ones.
    pub fn ones(size: &[i64], dtype: ScalarType) -> Result<Tensor> {
        ones(size, Some(dtype), None, None, None)
    }

    /// A contiguous CPU tensor filled with `value` converted to `dtype`.
    ///
    /// ```
    /// use aten::Tensor;
    /// use c10::ScalarType;
    /// let t = Tensor::full(&[2], 7, ScalarType::I32).unwrap();
    /// assert_eq!(t.to_vec::<i32>().unwrap(), vec![7, 7]);
    /// ```
    pub fn full(size: &[i64], value: impl Into<Scalar>, dtype: ScalarType) -> Result<Tensor> {
        full(size, value.into(), Some(dtype), None, None, None)
    }

    /// The int64 tensor `[0, 1, ..., end - 1]` (`torch.arange(end)`).
    ///
    /// ```
    /// let t = aten::Tensor::arange(4).unwrap();
    /// assert_eq!(t.to_vec::<i64>().unwrap(), vec![0, 1, 2, 3]);
    /// ```
    pub fn arange(end: i64) -> Result<Tensor> {
        arange(Scalar::Int(end), None, None, None, None)
    }
}

// Expected values are PyTorch's float32 outputs printed as doubles (exactly the f32 values).
#[allow(clippy::excessive_precision)]
#[cfg(test)]
mod tests {
    use super::*;
    use c10::{bf16, f16};

    fn err_msg<T: std::fmt::Debug>(r: Result<T>) -> String {
        r.expect_err("expected an error").to_string()
    }

    #[test]
    fn empty_and_strides() {
        let t = empty_memory_format(&[2, 3], None, None, None, None, None).unwrap();
        assert_eq!((t.sizes(), t.strides(), t.dtype()), (&[2i64, 3][..], &[3i64, 1][..], ScalarType::F32));
        let cl = empty_memory_format(&[2, 3, 4, 5], None, None, None, None, Some(MemoryFormat::ChannelsLast)).unwrap();
        assert_eq!(cl.strides(), &[60, 1, 15, 3]);
        let cl0 = empty_memory_format(&[2, 0, 3, 3], None, None, None, None, Some(MemoryFormat::ChannelsLast)).unwrap();
        assert_eq!(cl0.strides(), &[0, 1, 0, 0]);
        assert_eq!(
            err_msg(empty_memory_format(&[2, 3], None, None, None, None, Some(MemoryFormat::ChannelsLast))),
            "empty: required rank 4 tensor to use channels_last format"
        );
        assert_eq!(
            err_msg(empty_memory_format(&[2], None, None, None, None, Some(MemoryFormat::Preserve))),
            "empty: unsupported memory format Preserve"
        );
        assert_eq!(
            err_msg(empty_memory_format(&[-1, 2], None, None, None, None, None)),
            "empty: Trying to create tensor with negative dimension -1: [-1, 2]"
        );
        let s = empty_strided(&[2, 3], &[1, 2], Some(ScalarType::F64), None, None, None).unwrap();
        assert_eq!((s.strides(), s.dtype()), (&[1i64, 2][..], ScalarType::F64));
        assert_eq!(
            err_msg(empty_strided(&[2, 3], &[1], None, None, None, None)),
            "empty_strided: dimensionality of sizes (2) must match dimensionality of strides (1)"
        );
        assert!(empty_strided(&[2, 3], &[1, -2], None, None, None, None).is_err());
        assert!(empty_memory_format(&[2], None, None, Some(Device::cuda(0)), None, None).is_err());
        assert!(zeros(&[2], None, None, None, Some(true)).is_err());
    }

    #[test]
    fn zeros_ones_full_infer_dtypes() {
        let z = zeros(&[2, 2], None, None, None, None).unwrap();
        assert_eq!((z.dtype(), z.to_vec::<f32>().unwrap()), (ScalarType::F32, vec![0.0; 4]));
        assert_eq!(err_msg(zeros(&[-1, 2], None, None, None, None)), "zeros: Dimension size must be non-negative.");
        let o = ones(&[3], Some(ScalarType::I32), None, None, None).unwrap();
        assert_eq!(o.to_vec::<i32>().unwrap(), vec![1, 1, 1]);
        let f = full(&[2, 3], Scalar::Float(1.5), None, None, None, None).unwrap();
        assert_eq!((f.dtype(), f.to_vec::<f32>().unwrap()), (ScalarType::F32, vec![1.5; 6]));
        let fi = full(&[2], Scalar::Int(3), None, None, None, None).unwrap();
        assert_eq!((fi.dtype(), fi.to_vec::<i64>().unwrap()), (ScalarType::I64, vec![3, 3]));
        let fb = full(&[2], Scalar::Bool(true), None, None, None, None).unwrap();
        assert_eq!((fb.dtype(), fb.to_vec::<bool>().unwrap()), (ScalarType::Bool, vec![true, true]));
        let ft = full(&[2], Scalar::Float(3.7), Some(ScalarType::I32), None, None, None).unwrap();
        assert_eq!(ft.to_vec::<i32>().unwrap(), vec![3, 3]);
        assert_eq!(
            err_msg(full(&[2], Scalar::Int(300), Some(ScalarType::U8), None, None, None)),
            "fill_: value cannot be converted to type uint8_t without overflow"
        );
        let h = Tensor::full(&[1], 2.5, ScalarType::F16).unwrap();
        assert_eq!(h.to_vec::<f16>().unwrap(), vec![f16::from_f32(2.5)]);
        assert_eq!(Tensor::ones(&[2], ScalarType::Bool).unwrap().to_vec::<bool>().unwrap(), vec![true; 2]);
        assert_eq!(Tensor::zeros(&[0, 3], ScalarType::F32).unwrap().numel(), 0);
    }

    #[test]
    fn fill_checks_overflow_like_c10() {
        let t = |dt| empty_memory_format(&[2], Some(dt), None, None, None, None).unwrap();
        assert_eq!(fill_scalar_(&t(ScalarType::U8), Scalar::Int(-1)).unwrap().to_vec::<u8>().unwrap(), vec![255; 2]);
        assert_eq!(fill_scalar_(&t(ScalarType::U8), Scalar::Int(-200)).unwrap().to_vec::<u8>().unwrap(), vec![56; 2]);
        assert!(fill_scalar_(&t(ScalarType::U8), Scalar::Float(-1.0)).is_err());
        assert!(fill_scalar_(&t(ScalarType::Bool), Scalar::Float(1e39)).unwrap().to_vec::<bool>().unwrap()[0]);
        assert_eq!(
            err_msg(fill_scalar_(&t(ScalarType::I32), Scalar::Float(f64::NAN))),
            "fill_: value cannot be converted to type int without overflow"
        );
        assert_eq!(
            err_msg(fill_scalar_(&t(ScalarType::F16), Scalar::Int(70000))),
            "fill_: value cannot be converted to type c10::Half without overflow"
        );
        assert!(fill_scalar_(&t(ScalarType::F16), Scalar::Float(f64::INFINITY)).is_ok());
        assert!(fill_scalar_(&t(ScalarType::F32), Scalar::Float(1e39)).is_err());
        assert!(fill_scalar_(&t(ScalarType::F64), Scalar::Float(1e39)).is_ok());
        assert_eq!(
            fill_scalar_(&t(ScalarType::I32), Scalar::Float(-2.7)).unwrap().to_vec::<i32>().unwrap(),
            vec![-2; 2]
        );
    }

    #[test]
    fn fill_writes_strided_views_and_zero() {
        // A transposed (non-contiguous) view of a 2x3 buffer: fill must reach every element.
        let base = Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap();
        let t =
            Tensor::from_storage(base.storage().clone(), &[3, 2], SmallVec::from_slice(&[1, 3]), 0, ScalarType::F32);
        fill_scalar_(&t, Scalar::Float(4.0)).unwrap();
        assert_eq!(base.to_vec::<f32>().unwrap(), vec![4.0; 6]);
        assert_eq!(t.version(), 0, "fill_ itself bumps nothing");
        // A strided view that covers every other element.
        let every_other =
            Tensor::from_storage(base.storage().clone(), &[3], SmallVec::from_slice(&[2]), 1, ScalarType::F32);
        zero_(&every_other).unwrap();
        assert_eq!(base.to_vec::<f32>().unwrap(), vec![4.0, 0.0, 4.0, 0.0, 4.0, 0.0]);
        let r = zero_(&base).unwrap();
        assert!(r.is_same(&base));
        assert_eq!(base.to_vec::<f32>().unwrap(), vec![0.0; 6]);
    }

    #[test]
    fn arange_values_dtypes_and_errors() {
        let a = arange(Scalar::Int(5), None, None, None, None).unwrap();
        assert_eq!((a.dtype(), a.to_vec::<i64>().unwrap()), (ScalarType::I64, vec![0, 1, 2, 3, 4]));
        let b = arange_start_step(Scalar::Int(0), Scalar::Int(10), Scalar::Int(3), None, None, None, None).unwrap();
        assert_eq!(b.to_vec::<i64>().unwrap(), vec![0, 3, 6, 9]);
        let c = arange_start_step(Scalar::Float(0.0), Scalar::Float(1.0), Scalar::Float(0.25), None, None, None, None)
            .unwrap();
        assert_eq!((c.dtype(), c.to_vec::<f32>().unwrap()), (ScalarType::F32, vec![0.0, 0.25, 0.5, 0.75]));
        let d = arange_start_step(Scalar::Int(10), Scalar::Int(0), Scalar::Int(-3), None, None, None, None).unwrap();
        assert_eq!(d.to_vec::<i64>().unwrap(), vec![10, 7, 4, 1]);
        let e = arange_start(Scalar::Float(0.5), Scalar::Int(3), None, None, None, None).unwrap();
        assert_eq!(e.to_vec::<f32>().unwrap(), vec![0.5, 1.5, 2.5]);
        let f = arange_start(Scalar::Bool(true), Scalar::Int(3), None, None, None, None).unwrap();
        assert_eq!((f.dtype(), f.to_vec::<i64>().unwrap()), (ScalarType::I64, vec![1, 2]));
        // -1 .. 1 step 0.3 has 7 elements computed in double.
        let g = arange_start_step(Scalar::Int(-1), Scalar::Int(1), Scalar::Float(0.3), None, None, None, None).unwrap();
        assert_eq!(g.numel(), 7);
        assert_eq!(g.to_vec::<f32>().unwrap()[6], 0.8f32);
        // PyTorch quirks for integer dtypes: the step truncates in the accumulation type while the
        // length comes from the original scalars.
        let h = arange_start_step(
            Scalar::Int(0),
            Scalar::Int(5),
            Scalar::Float(1.5),
            Some(ScalarType::I32),
            None,
            None,
            None,
        )
        .unwrap();
        assert_eq!(h.to_vec::<i32>().unwrap(), vec![0, 1, 2, 3]);
        let u = arange_start(Scalar::Int(-1), Scalar::Int(2), Some(ScalarType::U8), None, None, None).unwrap();
        assert_eq!(u.to_vec::<u8>().unwrap(), vec![255, 0, 1]);
        let hf = arange_start_step(
            Scalar::Int(0),
            Scalar::Int(1),
            Scalar::Float(0.1),
            Some(ScalarType::F16),
            None,
            None,
            None,
        )
        .unwrap();
        let expect: Vec<f16> = [0.0, 0.1, 0.2, 0.3, 0.3999, 0.5, 0.6001, 0.7002, 0.7998, 0.8999]
            .iter()
            .map(|&x| f16::from_f32(x))
            .collect();
        assert_eq!(hf.to_vec::<f16>().unwrap(), expect);

        let st = |s, e, st| arange_start_step(s, e, st, None, None, None, None);
        assert_eq!(err_msg(st(Scalar::Int(0), Scalar::Int(10), Scalar::Int(0))), "arange: step must be nonzero");
        assert_eq!(
            err_msg(st(Scalar::Int(10), Scalar::Int(0), Scalar::Int(1))),
            "arange: upper bound and lower bound inconsistent with step sign"
        );
        assert_eq!(
            err_msg(st(Scalar::Int(0), Scalar::Float(f64::INFINITY), Scalar::Int(1))),
            "arange: unsupported range: 0 -> inf"
        );
        assert_eq!(
            err_msg(st(Scalar::Int(0), Scalar::Float(1e20), Scalar::Float(1e-30))),
            "arange: invalid size, possible overflow?"
        );
        assert_eq!(
            err_msg(arange(Scalar::Int(5), Some(ScalarType::Bool), None, None, None)),
            "arange_cpu: \"arange_cpu\" not implemented for 'Bool'"
        );
        assert_eq!(
            err_msg(arange_start_step(
                Scalar::Int(0),
                Scalar::Int(5),
                Scalar::Float(0.5),
                Some(ScalarType::I32),
                None,
                None,
                None
            )),
            "arange: step must be nonzero"
        );
        assert_eq!(Tensor::arange(3).unwrap().to_vec::<i64>().unwrap(), vec![0, 1, 2]);
    }

    #[test]
    fn linspace_values_and_errors() {
        let l = linspace(Scalar::Float(0.0), Scalar::Float(1.0), 5, None, None, None, None).unwrap();
        assert_eq!((l.dtype(), l.to_vec::<f32>().unwrap()), (ScalarType::F32, vec![0.0, 0.25, 0.5, 0.75, 1.0]));
        let l7 = linspace(Scalar::Int(-2), Scalar::Int(3), 7, None, None, None, None).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(l7[0], -2.0);
        assert_eq!(l7[6], 3.0);
        assert!((l7[1] - -1.1666666).abs() < 1e-6);
        let li = linspace(Scalar::Int(0), Scalar::Int(10), 4, Some(ScalarType::I64), None, None, None).unwrap();
        assert_eq!(li.to_vec::<i64>().unwrap(), vec![0, 3, 6, 10]);
        let l8 = linspace(Scalar::Int(3), Scalar::Int(-2), 8, Some(ScalarType::I8), None, None, None).unwrap();
        assert_eq!(l8.to_vec::<i8>().unwrap(), vec![3, 2, 1, 0, 0, 0, -1, -2]);
        let one = linspace(Scalar::Int(0), Scalar::Int(1), 1, None, None, None, None).unwrap();
        assert_eq!(one.to_vec::<f32>().unwrap(), vec![0.0]);
        assert_eq!(linspace(Scalar::Int(0), Scalar::Int(1), 0, None, None, None, None).unwrap().numel(), 0);
        assert_eq!(
            err_msg(linspace(Scalar::Int(0), Scalar::Int(1), -1, None, None, None, None)),
            "linspace: number of steps must be non-negative"
        );
        assert!(linspace(Scalar::Int(0), Scalar::Int(1), 5, Some(ScalarType::Bool), None, None, None).is_err());
        assert!(linspace(Scalar::Int(0), Scalar::Int(300), 3, Some(ScalarType::U8), None, None, None).is_err());
        let b = linspace(Scalar::Int(0), Scalar::Int(1), 3, Some(ScalarType::BF16), None, None, None).unwrap();
        assert_eq!(b.to_vec::<bf16>().unwrap()[1], bf16::from_f32(0.5));
    }

    #[test]
    fn ranges_match_pytorch_bits() {
        // Values from PyTorch 2.15 where a naive `start + i * step` differs in the last bit; see
        // Note [Kernel FMA] and Note [Vectorised fill emulation].
        let f = linspace(Scalar::Float(-3.0), Scalar::Float(7.7), 16, None, None, None, None).unwrap();
        assert_eq!(f.to_vec::<f32>().unwrap()[3], -0.860_000_07_f32);
        let b =
            linspace(Scalar::Float(-3.0), Scalar::Float(7.7), 5000, Some(ScalarType::BF16), None, None, None).unwrap();
        assert_eq!(b.to_vec::<f64>().unwrap()[539], -1.8515625);
        let h =
            linspace(Scalar::Float(-3.0), Scalar::Float(7.7), 5000, Some(ScalarType::F16), None, None, None).unwrap();
        assert_eq!(h.to_vec::<f64>().unwrap()[1398], -0.007904052734375);
        let d = arange_start_step(
            Scalar::Float(0.0),
            Scalar::Float(100.0),
            Scalar::Float(0.3),
            Some(ScalarType::F64),
            None,
            None,
            None,
        )
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
        assert_eq!((d.len(), d[13], d[14], d[23]), (334, 3.8999999999999995, 4.199999999999999, 6.9));
        let a =
            arange_start_step(Scalar::Float(-3.0), Scalar::Float(7.7), Scalar::Float(0.013), None, None, None, None)
                .unwrap()
                .to_vec::<f32>()
                .unwrap();
        assert_eq!((a.len(), a[11], a[13]), (824, -2.856_999_9_f32, -2.830_999_9_f32));
    }

    #[test]
    fn eye_variants() {
        let e = eye(3, None, None, None, None).unwrap();
        assert_eq!(e.to_vec::<f32>().unwrap(), vec![1., 0., 0., 0., 1., 0., 0., 0., 1.]);
        let r = eye_m(2, 3, Some(ScalarType::I32), None, None, None).unwrap();
        assert_eq!((r.sizes(), r.to_vec::<i32>().unwrap()), (&[2i64, 3][..], vec![1, 0, 0, 0, 1, 0]));
        let b = eye_m(3, 2, Some(ScalarType::Bool), None, None, None).unwrap();
        assert_eq!(b.to_vec::<bool>().unwrap(), vec![true, false, false, true, false, false]);
        assert_eq!(err_msg(eye(-1, None, None, None, None)), "eye: n must be greater or equal to 0, got -1");
        assert_eq!(err_msg(eye_m(2, -1, None, None, None, None)), "eye: m must be greater or equal to 0, got -1");
        assert_eq!(eye(0, None, None, None, None).unwrap().sizes(), &[0, 0]);
    }

    #[test]
    fn like_ops_preserve_layout() {
        let base = Tensor::from_vec((0..24).map(|x| x as f32).collect(), &[4, 6]).unwrap();
        // Transposed: dense, so strides are kept.
        let t =
            Tensor::from_storage(base.storage().clone(), &[6, 4], SmallVec::from_slice(&[1, 6]), 0, ScalarType::F32);
        let z = zeros_like(&t, None, None, None, None, None).unwrap();
        assert_eq!((z.sizes(), z.strides()), (&[6i64, 4][..], &[1i64, 6][..]));
        assert_eq!(z.to_vec::<f32>().unwrap(), vec![0.0; 24]);
        // Every other column: not dense, gets dense strides in the same order.
        let s =
            Tensor::from_storage(base.storage().clone(), &[4, 3], SmallVec::from_slice(&[6, 2]), 0, ScalarType::F32);
        assert_eq!(empty_like(&s, None, None, None, None, None).unwrap().strides(), &[3, 1]);
        // Transposed and strided: keeps the transposed order.
        let ts =
            Tensor::from_storage(base.storage().clone(), &[3, 4], SmallVec::from_slice(&[2, 6]), 0, ScalarType::F32);
        assert_eq!(empty_like(&ts, None, None, None, None, None).unwrap().strides(), &[1, 3]);
        // Expanded (stride 0): ambiguous order, row-major result.
        let ex =
            Tensor::from_storage(base.storage().clone(), &[4, 3], SmallVec::from_slice(&[0, 1]), 0, ScalarType::F32);
        assert_eq!(empty_like(&ex, None, None, None, None, None).unwrap().strides(), &[3, 1]);
        // An explicit format wins.
        let c = empty_like(&t, None, None, None, None, Some(MemoryFormat::Contiguous)).unwrap();
        assert_eq!(c.strides(), &[4, 1]);
        let o = ones_like(&t, Some(ScalarType::I64), None, None, None, None).unwrap();
        assert_eq!((o.dtype(), o.to_vec::<i64>().unwrap()), (ScalarType::I64, vec![1; 24]));
        let f = full_like(&base, Scalar::Int(7), None, None, None, None, None).unwrap();
        assert_eq!((f.dtype(), f.to_vec::<f32>().unwrap()), (ScalarType::F32, vec![7.0; 24]));
    }

    #[test]
    fn helpers_match_pytorch() {
        assert_eq!(fmt_g(1e308), "1e+308");
        assert_eq!(fmt_g(-1.0), "-1");
        assert_eq!(fmt_g(0.5), "0.5");
        assert_eq!(fmt_g(123456789.0), "1.23457e+08");
        assert_eq!(fmt_g(0.0001), "0.0001");
        assert_eq!(fmt_g(1.0 / 3.0), "0.333333");
        assert_eq!(infer_dense_strides(&[6, 5, 4, 3, 2], &[6, 0, 120, 0, 1]).as_slice(), &[6, 36, 180, 2, 1]);
    }
}
