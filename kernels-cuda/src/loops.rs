//! The CUDA loops of aten's device-generic elementwise operators (Note [Device-generic
//! operators] in `aten::native::stub`): each takes the operator's built `TensorIterator` (its
//! operands already broadcast, promoted and allocated on the device), turns the iteration into
//! a [`KcGeometry`] and launches the `.cu` kernel for the dtype.

use aten::native::stub::{self, KernelCache, KernelInfo, DTYPE_SLOTS};
use aten::native::tensor_iterator::TensorIterator;
use aten::{Generator, Tensor};
use c10::{bf16, f16, DeviceType, Error, Result, Scalar, ScalarType};

use crate::args::{KcGeometry, KcReduction, KC_MAX_DIMS, KC_MAX_OPERANDS};
use crate::driver::{KernelArgs, KernelId, LaunchConfig, StreamId};
use crate::geometry::elementwise_launch;

/// Registers every loop with aten (at the backend's registration).
pub(crate) fn register() {
    let cuda = DeviceType::Cuda;
    stub::register("fill", cuda, fill);
    stub::register("arange", cuda, arange);
    stub::register("threshold_backward", cuda, threshold_backward);
    stub::register("add", cuda, add);
    for k in ["mul", "div", "maximum", "minimum"] {
        stub::register(k, cuda, same_name);
    }
    for k in ["eq", "ne", "lt", "le", "gt", "ge"] {
        stub::register(k, cuda, compare);
    }
    for k in ["neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu"] {
        stub::register(k, cuda, same_name);
    }
    for k in [
        "exp2",
        "expm1",
        "log2",
        "log10",
        "log1p",
        "rsqrt",
        "reciprocal",
        "tan",
        "asin",
        "acos",
        "atan",
        "sinh",
        "cosh",
        "asinh",
        "acosh",
        "atanh",
        "erf",
        "erfc",
        "floor",
        "ceil",
        "trunc",
        "round",
        "frac",
        "sign",
        "silu",
        "mish",
        "hardsigmoid",
        "hardswish",
        "selu",
    ] {
        stub::register(k, cuda, same_name);
    }
    for k in ["atan2", "pow", "fmod", "remainder"] {
        stub::register(k, cuda, same_name);
    }
    for k in ["leaky_relu", "hardtanh", "elu", "softplus", "logit", "gelu", "gelu_tanh"] {
        stub::register(k, cuda, three_doubles);
    }
    stub::register("lerp", cuda, one_double);
    for k in [
        "where",
        "logical_and",
        "logical_or",
        "logical_xor",
        "logical_not",
        "isnan",
        "isinf",
        "isfinite",
        "isposinf",
        "isneginf",
        "div_trunc",
        "div_floor",
    ] {
        stub::register(k, cuda, same_name);
    }
    stub::register("masked_fill", cuda, masked_fill);
    for k in ["addcmul", "addcdiv"] {
        stub::register(k, cuda, addc);
    }
    for k in ["sum", "prod", "max", "min", "softmax", "log_softmax", "cumsum", "cumprod"] {
        stub::register_reduction(k, cuda, reduction);
    }
    stub::register_gemm(cuda, crate::blas::gemm);
    stub::register_remap(cuda, crate::index::remap);
    stub::register_embedding_backward(cuda, crate::index::embedding_backward);
    stub::register_sort(cuda, crate::sort::sort);
    stub::register_runs(cuda, crate::sort::runs);
    stub::register_spmm(cuda, crate::sparse::spmm);
    stub::register_columns(cuda, crate::conv::columns);
    stub::register_pool(cuda, crate::pool::pool);
    stub::register_fused_sgd(cuda, crate::optim::fused_sgd);
    stub::register_fused_adam(cuda, crate::optim::fused_adam);
    for k in ["uniform", "normal", "exponential", "bernoulli", "bernoulli_tensor", "random"] {
        stub::register_random(k, cuda, random);
    }
}

/// The kernels' dtype suffix (`add_f32`, `cast_i64_b8`).
pub(crate) fn suffix(dtype: ScalarType) -> &'static str {
    match dtype {
        ScalarType::F32 => "f32",
        ScalarType::F64 => "f64",
        ScalarType::F16 => "f16",
        ScalarType::BF16 => "bf16",
        ScalarType::U8 => "u8",
        ScalarType::I8 => "i8",
        ScalarType::I16 => "i16",
        ScalarType::I32 => "i32",
        ScalarType::I64 => "i64",
        ScalarType::Bool => "b8",
        // No `.cu` kernel has these yet; `find` reports them as not implemented.
        ScalarType::C64 => "c64",
        ScalarType::C128 => "c128",
    }
}

/// The index of kernel `<base>_<suffix of dtype>`, if a `.cu` file defines it: found by name,
/// so only where a [`Family`] or a handle resolves it, once (Note [Kernel handles] in
/// `aten::native::stub`).
fn find(base: &str, dtype: ScalarType) -> Option<u32> {
    // The same set on both drivers: the emulator's table is built from the very `.cu` files
    // nvcc compiles.
    KernelId::find(&format!("{base}_{}", suffix(dtype))).map(|k| k.index() as u32)
}

/// `kernel`'s `.cu` kernel for `dtype` (`add_f32` for `add`), resolved at its first use and then
/// read from the handle (Note [Kernel handles]).
#[inline]
fn for_dtype(kernel: &'static KernelInfo, op: &str, dtype: ScalarType) -> Result<KernelId> {
    kernel
        .resolve(DeviceType::Cuda, dtype, || find(kernel.name(), dtype))
        .map(KernelId::from_index)
        .ok_or_else(|| Error::UnsupportedDtype { op: op.into(), dtype })
}

/// A family of `.cu` kernels `<base>_<dtype suffix>` named by a static at its call site
/// ([`family!`]), each resolved at its first use (Note [Kernel handles]).
pub(crate) struct Family {
    base: &'static str,
    ids: KernelCache<DTYPE_SLOTS>,
}

impl Family {
    /// The family `<base>_<suffix>`, nothing resolved.
    pub(crate) const fn new(base: &'static str) -> Family {
        Family { base, ids: KernelCache::new() }
    }

    /// The family's kernel for `dtype`, or the "not implemented for" error naming `op`.
    #[inline]
    pub(crate) fn get(&self, op: &str, dtype: ScalarType) -> Result<KernelId> {
        self.ids
            .get_or_resolve(dtype as usize, || find(self.base, dtype))
            .map(KernelId::from_index)
            .ok_or_else(|| Error::UnsupportedDtype { op: op.into(), dtype })
    }
}

/// A static [`Family`] for the literal base name, one per expansion.
macro_rules! family {
    ($base:expr) => {{
        static FAMILY: $crate::loops::Family = $crate::loops::Family::new($base);
        &FAMILY
    }};
}
pub(crate) use family;

/// The kernel `name` (no dtype suffix), resolved once per call site, or an error naming it.
#[inline]
pub(crate) fn named(cache: &'static KernelCache<1>, name: &str) -> Result<KernelId> {
    cache
        .get_or_resolve(0, || KernelId::find(name).map(|k| k.index() as u32))
        .map(KernelId::from_index)
        .ok_or_else(|| Error::Cuda(format!("CUDA error: named symbol not found (no kernel '{name}' in kernels-cuda)")))
}

/// The kernel named by the literal, resolved once per expansion ([`named`]).
macro_rules! kernel {
    ($name:expr) => {{
        static KERNEL: aten::native::stub::KernelCache<1> = aten::native::stub::KernelCache::new();
        $crate::loops::named(&KERNEL, $name)
    }};
}
pub(crate) use kernel;

/// The geometry of a built iterator: its shape (dimension 0 fastest, as the kernels want) and
/// every operand's strides in elements.
fn geometry(iter: &TensorIterator<'_>) -> Result<KcGeometry> {
    let (shape, nops) = (iter.shape(), iter.noperands());
    if nops > KC_MAX_OPERANDS as usize || shape.len() > KC_MAX_DIMS as usize {
        return Err(Error::Cuda(format!(
            "{}: the CUDA kernels take at most {KC_MAX_OPERANDS} operands and {KC_MAX_DIMS} dims, got {nops} and {}",
            iter.op(),
            shape.len()
        )));
    }
    let mut g =
        KcGeometry { ndim: shape.len() as i32, noperands: nops as i32, numel: iter.numel(), ..Default::default() };
    for (d, &s) in shape.iter().enumerate() {
        g.sizes[d] = s;
    }
    for k in 0..nops {
        let elem = iter.operand(k).dtype().size() as isize;
        for (d, &s) in iter.strides(k).iter().enumerate() {
            g.strides[k][d] = (s / elem) as i64;
        }
    }
    Ok(g)
}

/// Launches `name` over the iterator: the geometry, one device pointer per operand (outputs
/// first), then the kernel's scalar arguments pushed by `scalars`, on the device's current
/// stream.
fn launch(iter: &TensorIterator<'_>, kernel: KernelId, scalars: impl FnOnce(&mut KernelArgs)) -> Result<()> {
    if iter.numel() == 0 {
        return Ok(());
    }
    let device = iter.device();
    let g = geometry(iter)?;
    let mut args = KernelArgs::new();
    args.push(g);
    for k in 0..iter.noperands() {
        args.push(iter.operand(k).data_ptr() as u64);
    }
    scalars(&mut args);
    let stream = StreamId(crate::runtime::current_stream(device)?.id);
    let mut params = args.params();
    // SAFETY: the kernels of this file take (KcGeometry, out, inputs..., scalars...) in that
    // order with the dtypes the names encode; the pointers are the operands' element 0 on
    // `device`, live for the call, and the geometry addresses only elements inside them.
    unsafe { crate::driver::launch(device.index as usize, kernel, &elementwise_launch(g.numel, stream), &mut params) }
}

/// Launches `kernel`, which takes no scalar arguments, over the iterator.
pub(crate) fn launch_plain(iter: &TensorIterator<'_>, kernel: KernelId) -> Result<()> {
    launch(iter, kernel, |_| {})
}

/// Kernels named like their operator, whose dtype is the common dtype (`mul_f32`,
/// `exp_bf16`): binary and unary arithmetic.
fn same_name(kernel: &'static KernelInfo, iter: &TensorIterator<'_>, _extra: &[Scalar]) -> Result<()> {
    let id = for_dtype(kernel, iter.op(), iter.common_dtype())?;
    launch(iter, id, |_| {})
}

/// The parameterised activations (`elu_f32(g, out, a, p0, p1, p2)`): the operator's scalars as
/// three doubles, 0 for those it has fewer of.
fn three_doubles(kernel: &'static KernelInfo, iter: &TensorIterator<'_>, extra: &[Scalar]) -> Result<()> {
    let id = for_dtype(kernel, iter.op(), iter.common_dtype())?;
    let p = |i: usize| extra.get(i).map_or(0.0, |s| s.to_f64());
    launch(iter, id, |a| {
        a.push(p(0)).push(p(1)).push(p(2));
    })
}

/// `lerp_<T>(g, out, start, end, weight)`: the weight as a double.
fn one_double(kernel: &'static KernelInfo, iter: &TensorIterator<'_>, extra: &[Scalar]) -> Result<()> {
    let id = for_dtype(kernel, iter.op(), iter.common_dtype())?;
    let w = extra.first().map_or(0.0, |s| s.to_f64());
    launch(iter, id, |a| {
        a.push(w);
    })
}

/// `masked_fill_<T>(g, out, self, mask, value)`: the value as an element of the dtype.
fn masked_fill(kernel: &'static KernelInfo, iter: &TensorIterator<'_>, extra: &[Scalar]) -> Result<()> {
    let dtype = iter.common_dtype();
    let id = for_dtype(kernel, iter.op(), dtype)?;
    let v = extra.first().copied().unwrap_or(Scalar::Int(0));
    launch(iter, id, |a| push_element(a, dtype, v))
}

/// `addcmul_<T>(g, out, self, t1, t2, value)` and `addcdiv_<T>`: the value as a double for
/// floating kernels, an int64 otherwise.
fn addc(kernel: &'static KernelInfo, iter: &TensorIterator<'_>, extra: &[Scalar]) -> Result<()> {
    let dtype = iter.common_dtype();
    let id = for_dtype(kernel, iter.op(), dtype)?;
    let v = extra.first().copied().unwrap_or(Scalar::Int(1));
    launch(iter, id, |a| {
        if dtype.is_floating_point() {
            a.push(v.to_f64());
        } else {
            a.push(v.to_i64());
        }
    })
}

/// Comparisons (`eq_i64`): inputs of the common dtype, a Bool output (the kernels write no other
/// dtype, so an in-place comparison into a non-bool tensor has no CUDA kernel yet).
fn compare(kernel: &'static KernelInfo, iter: &TensorIterator<'_>, extra: &[Scalar]) -> Result<()> {
    if iter.output_dtype() != ScalarType::Bool {
        return Err(Error::NotImplemented {
            op: iter.op().into(),
            msg: format!("an in-place comparison into {} on CUDA", iter.output_dtype()),
        });
    }
    same_name(kernel, iter, extra)
}

/// `add_<T>(g, out, a, b, alpha)`: alpha is a double for floating kernels, an int64 otherwise.
fn add(kernel: &'static KernelInfo, iter: &TensorIterator<'_>, extra: &[Scalar]) -> Result<()> {
    let dtype = iter.common_dtype();
    let id = for_dtype(kernel, iter.op(), dtype)?;
    let alpha = extra.first().copied().unwrap_or(Scalar::Int(1));
    launch(iter, id, |a| {
        if dtype.is_floating_point() {
            a.push(alpha.to_f64());
        } else {
            a.push(alpha.to_i64());
        }
    })
}

/// `fill_<T>(g, out, value)`, the value converted to the output's dtype (its range was checked
/// by `fill_`).
fn fill(kernel: &'static KernelInfo, iter: &TensorIterator<'_>, extra: &[Scalar]) -> Result<()> {
    let dtype = iter.output_dtype();
    let id = for_dtype(kernel, iter.op(), dtype)?;
    let v = extra.first().copied().unwrap_or(Scalar::Int(0));
    launch(iter, id, |a| push_element(a, dtype, v))
}

/// Pushes `v` as a kernel argument of element type `dtype` (a `T` parameter of the kernel).
pub(crate) fn push_element(a: &mut KernelArgs, dtype: ScalarType, v: Scalar) {
    match dtype {
        ScalarType::F32 => a.push(v.to_f64() as f32),
        ScalarType::F64 => a.push(v.to_f64()),
        ScalarType::F16 => a.push(f16::from_f64(v.to_f64())),
        ScalarType::BF16 => a.push(bf16::from_f64(v.to_f64())),
        ScalarType::U8 => a.push(v.to_i64() as u8),
        ScalarType::I8 => a.push(v.to_i64() as i8),
        ScalarType::I16 => a.push(v.to_i64() as i16),
        ScalarType::I32 => a.push(v.to_i64() as i32),
        ScalarType::Bool => a.push(v.to_bool()),
        _ => a.push(v.to_i64()),
    };
}

/// Threads per block of the reduction kernels (`KC_REDUCE_THREADS` in `kernels/reduce.cu`).
const REDUCE_THREADS: u32 = 256;
/// Threads per block for `reduced` elements per output: the next power of two, at least a warp
/// and at most [`REDUCE_THREADS`]. The kernels take any power-of-two block (`extreme`'s tree
/// halves it); a 16-element row (a bias gradient over a batch of 16, `log_softmax` over 10
/// classes) runs one warp instead of eight idle ones, which on the emulated device is one
/// fibre per thread. The block size is a function of the sizes only, so the order of
/// accumulation, and the result, is the same in every run.
fn reduce_threads(reduced: i64) -> u32 {
    (reduced.max(1) as u64).next_power_of_two().clamp(32, REDUCE_THREADS as u64) as u32
}

/// At most this many blocks; the kernels loop over further outputs.
const REDUCE_MAX_BLOCKS: i64 = 65_535;

/// The reduction loop (`aten::native::stub::ReduceLoop`): the kept dims of `input` become the
/// outer dims of a [`KcReduction`] (with the outputs' strides), the reduced dims its inner dims,
/// both innermost first and without size-1 dims; one block per output.
fn reduction(kernel: &'static KernelInfo, input: &Tensor, reduced: &[bool], outputs: &[&Tensor]) -> Result<()> {
    let id = for_dtype(kernel, kernel.name(), input.dtype())?;
    let kernel = kernel.name();
    let out0 = outputs.first().ok_or_else(|| Error::Cuda(format!("{kernel}: a reduction needs an output")))?;
    let mut r = KcReduction::default();
    let (mut nout, mut nred) = (1i64, 1i64);
    let overflow = || Error::Cuda(format!("{kernel}: the sizes {:?} overflow int64", input.sizes()));
    let too_many = |what: &str| Error::Cuda(format!("{kernel}: more than {KC_MAX_DIMS} {what} dims"));
    for d in (0..input.dim()).rev() {
        let (size, stride) = (input.sizes()[d], input.strides()[d]);
        if reduced[d] {
            nred = nred.checked_mul(size).ok_or_else(overflow)?;
            if size != 1 {
                let k = r.inner_ndim as usize;
                *r.inner_sizes.get_mut(k).ok_or_else(|| too_many("reduced"))? = size;
                r.inner_strides[k] = stride;
                r.inner_ndim += 1;
            }
        } else {
            nout = nout.checked_mul(size).ok_or_else(overflow)?;
            if size != 1 {
                let k = r.outer_ndim as usize;
                *r.outer_sizes.get_mut(k).ok_or_else(|| too_many("kept"))? = size;
                (r.outer_strides[k], r.out_strides[k]) = (stride, out0.strides()[d]);
                r.outer_ndim += 1;
            }
        }
    }
    r.outputs = nout;
    r.reduced = nred;
    if nout == 0 {
        return Ok(());
    }
    let device = input.device();
    let mut args = KernelArgs::new();
    args.push(r);
    for o in outputs {
        args.push(o.data_ptr() as u64);
    }
    args.push(input.data_ptr() as u64);
    let stream = StreamId(crate::runtime::current_stream(device)?.id);
    let cfg = LaunchConfig::linear(nout.min(REDUCE_MAX_BLOCKS) as u32, reduce_threads(nred), stream);
    let mut params = args.params();
    // SAFETY: the reduction kernels take (KcReduction, outputs..., input) with the dtypes their
    // names encode (values in the input's dtype, int64 indices); every offset the geometry
    // produces lies inside the tensors, which are live for the call.
    unsafe { crate::driver::launch(device.index as usize, id, &cfg, &mut params) }
}

/// `arange_<T>(g, out, start, step)`: start and step in the kernel's accumulation type (float
/// for float32/float16/bfloat16, double for float64, int64 for integers), as PyTorch's CUDA
/// `arange` computes.
fn arange(kernel: &'static KernelInfo, iter: &TensorIterator<'_>, extra: &[Scalar]) -> Result<()> {
    let dtype = iter.output_dtype();
    let id = for_dtype(kernel, iter.op(), dtype)?;
    let (start, step) = match extra {
        [a, b] => (*a, *b),
        _ => return Err(Error::Cuda("arange: the loop takes start and step".into())),
    };
    launch(iter, id, |a| match dtype {
        ScalarType::F64 => {
            a.push(start.to_f64()).push(step.to_f64());
        }
        ScalarType::F32 | ScalarType::F16 | ScalarType::BF16 => {
            a.push(start.to_f64() as f32).push(step.to_f64() as f32);
        }
        _ => {
            a.push(start.to_i64()).push(step.to_i64());
        }
    })
}

/// `threshold_backward_<T>(g, out, grad, x, threshold)`: the threshold as a double (floating
/// kernels only, as on the CPU).
fn threshold_backward(kernel: &'static KernelInfo, iter: &TensorIterator<'_>, extra: &[Scalar]) -> Result<()> {
    let id = for_dtype(kernel, iter.op(), iter.common_dtype())?;
    let threshold = extra.first().map_or(0.0, |s| s.to_f64());
    launch(iter, id, |a| {
        a.push(threshold);
    })
}

/// The random loop (`aten::native::stub::RandomLoop`, Note [Philox streams] in
/// `kernels/random.cu`): reserves the Philox counters the launch uses from `generator`, then
/// launches `<kernel>_<T>(g, out, [p,] seed, offset, params...)`:
/// - `uniform` (from, to), `normal` (mean, std), `exponential` (lambd): doubles;
/// - `bernoulli` (p): a double;
/// - `bernoulli_tensor`: no parameters, the probabilities are the iterator's input (of the
///   output's dtype);
/// - `random` (range as the bits of an int64, 0 for 2^64; base; whether to draw 64 bits).
fn random(
    kernel: &'static KernelInfo,
    iter: &TensorIterator<'_>,
    generator: &Generator,
    params: &[Scalar],
) -> Result<()> {
    let dtype = iter.output_dtype();
    let id = for_dtype(kernel, iter.op(), dtype)?;
    let kernel = kernel.name();
    let wide = kernel == "random" && params.get(2).is_some_and(|w| w.to_bool());
    // Elements per Philox block: 2 where an element takes two 32-bit words.
    let per: i64 = match kernel {
        "bernoulli" => 2,
        "random" if wide => 2,
        "random" => 4,
        _ if dtype == ScalarType::F64 => 2,
        _ => 4,
    };
    let counters = (iter.numel() + per - 1) / per;
    if counters == 0 {
        return Ok(());
    }
    let (seed, offset) = generator.philox_reserve(counters as u64);
    launch(iter, id, |a| {
        a.push(seed).push(offset);
        match kernel {
            "random" => {
                let range = params.first().map_or(0, |r| r.to_i64()) as u64;
                let base = params.get(1).map_or(0, |b| b.to_i64());
                a.push(range).push(base).push(wide);
            }
            _ => {
                for p in params {
                    a.push(p.to_f64());
                }
            }
        }
    })
}
