//! Device loops of device-generic operators (PyTorch's `DispatchStub`).
//!
//! Note [Device-generic operators]: an elementwise operator is written once, in aten: argument
//! checks, type promotion, broadcasting and output allocation happen in the operator function
//! and the [`TensorIterator`] it builds, which allocates on the inputs' device. Only the loop
//! over the built iterator is per device. On the CPU it is the typed loop right next to the
//! operator; for another device type the operator calls [`run`] with its kernel's static handle
//! ([`crate::device_kernel!`]), which finds the loop a backend crate registered with [`register`]
//! under the kernel's name (kernels-cuda registers the CUDA launches at its initialisation) once,
//! and keeps it (Note [Kernel handles]). The operator function itself is registered for every
//! backend that has its loops (`CPU, CUDA: binary::add` in `native_functions.yaml`), as PyTorch
//! registers `add_out` for both and lets `add_stub` pick the loop.
//!
//! A kernel that has no loop for the iterator's device is an error naming both, never a CPU loop
//! over device memory.
//!
//! Note [Meta loops]: on the `meta` device every loop is empty. A device-generic operator has
//! checked its arguments, promoted dtypes, broadcast shapes and allocated its outputs before its
//! loop runs, so registering it for `Meta` (`CPU, CUDA, Meta: binary::add`) is all it takes
//! for it to compute output shapes and dtypes without data (Note [Meta storage]). The CPU loop
//! of a [`TensorIterator`] is empty for meta operands as well, so an operator that touches
//! values only through its iterator (the pointwise families: `CPU, Meta: pointwise::gelu`)
//! is a meta kernel as it stands. An operator that reads values any other way is not, and
//! gets a meta kernel of its own (`native::meta`) or none; `cargo xtask opinfo --device meta`
//! checks every one against PyTorch's shapes and dtypes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use c10::sync::RwLock;

use c10::{DeviceType, Error, Result, Scalar, ScalarType};

use crate::native::tensor_iterator::TensorIterator;
use crate::{Generator, Tensor};

// Note [Kernel handles]: a device launch resolves nothing by name on its hot path. Every call
// site names its kernel through a static handle ([`Kernel`], made by [`crate::device_kernel!`]),
// as PyTorch's `DispatchStub` is a static per stub: the first launch on a device type finds the
// loop a backend registered under the kernel's name (a lock and a hash lookup, once) and keeps
// it in the handle; every later launch is one atomic load. The handle also carries, per device
// type, a [`KernelCache`] in which the backend keeps the device kernel it resolved per dtype (a
// CUDA function index), so the backend's loop does not look the dtype's kernel up by name
// either. Operators whose loops are not per kernel name (the batched product, gathers, sorts,
// ...) have one static handle each in this file.

/// A backend's resolved device kernels, one slot per index (a dtype, or a pair of dtypes),
/// kept in a static handle (Note [Kernel handles]). A slot is resolved once: the backends'
/// kernel tables are compiled in, so "no kernel for this dtype" is cached too.
pub struct KernelCache<const N: usize>([AtomicU32; N]);

/// A slot not resolved yet.
const UNRESOLVED: u32 = u32::MAX;
/// A slot resolved to "no such kernel".
const MISSING: u32 = u32::MAX - 1;

impl<const N: usize> KernelCache<N> {
    /// Every slot unresolved.
    pub const fn new() -> Self {
        KernelCache([const { AtomicU32::new(UNRESOLVED) }; N])
    }

    /// Slot `i`'s kernel, resolved by `resolve` the first time (its answer must be the same
    /// every time: two threads may both resolve a slot). Panics when `i >= N`, a bug of the
    /// caller's indexing.
    #[inline]
    pub fn get_or_resolve(&self, i: usize, resolve: impl FnOnce() -> Option<u32>) -> Option<u32> {
        match self.0[i].load(Ordering::Acquire) {
            MISSING => None,
            UNRESOLVED => {
                let r = resolve();
                debug_assert!(r.is_none_or(|v| v < MISSING), "kernel indices stay below u32::MAX - 1");
                self.0[i].store(r.unwrap_or(MISSING), Ordering::Release);
                r
            }
            v => Some(v),
        }
    }
}

impl<const N: usize> Default for KernelCache<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// Slots of a per-dtype [`KernelCache`]: the dtypes' enum values are below 16.
pub const DTYPE_SLOTS: usize = 16;

/// The name of a device kernel and the per-device-type caches of its backends' kernels, the
/// part of a [`Stub`] its loop sees.
pub struct KernelInfo {
    name: &'static str,
    ids: [KernelCache<DTYPE_SLOTS>; DeviceType::COUNT],
}

impl KernelInfo {
    /// The kernel's name (`add`), as loops are registered under it.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The backend of device type `ty`'s kernel for `dtype`, resolved by `resolve` at first use
    /// (Note [Kernel handles]).
    #[inline]
    pub fn resolve(&self, ty: DeviceType, dtype: ScalarType, resolve: impl FnOnce() -> Option<u32>) -> Option<u32> {
        self.ids[ty as usize].get_or_resolve(dtype as usize, resolve)
    }
}

/// A static handle of one device kernel (Note [Kernel handles]): its name and, per device type,
/// the loop found for it.
pub struct Stub<F: Copy + 'static> {
    info: KernelInfo,
    loops: [OnceLock<F>; DeviceType::COUNT],
}

impl<F: Copy + 'static> Stub<F> {
    /// The handle of kernel `name`, nothing resolved.
    pub const fn new(name: &'static str) -> Self {
        Stub {
            info: KernelInfo { name, ids: [const { KernelCache::new() }; DeviceType::COUNT] },
            loops: [const { OnceLock::new() }; DeviceType::COUNT],
        }
    }

    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.info.name
    }

    /// What the kernel's loop sees of the handle.
    pub fn info(&'static self) -> &'static KernelInfo {
        &self.info
    }

    /// The loop for device type `ty`: the one kept in the handle, else the one `registry` has
    /// under the kernel's name (then kept), else the error naming operator, kernel, device
    /// and dtype.
    #[inline]
    fn loop_for(&self, registry: &Loops<F>, op: &str, ty: DeviceType, dtype: ScalarType) -> Result<F> {
        if let Some(f) = self.loops[ty as usize].get() {
            return Ok(*f);
        }
        let f = registry.get(op, self.info.name, ty, dtype)?;
        Ok(*self.loops[ty as usize].get_or_init(|| f))
    }
}

/// The elementwise kernel handle of a call site.
pub type Kernel = Stub<DeviceLoop>;
/// A reduction kernel's handle.
pub type ReduceKernel = Stub<ReduceLoop>;
/// A random kernel's handle.
pub type RandomKernel = Stub<RandomLoop>;

/// A static [`Stub`] handle for the kernel named by the literal (Note [Kernel handles]): a
/// [`Kernel`], or with `reduce`/`random` first a [`ReduceKernel`]/[`RandomKernel`]. One handle
/// per expansion, so write it at the call site (`stub::run(device_kernel!("add"), ...)`), not
/// in a loop over names.
#[macro_export]
macro_rules! device_kernel {
    (reduce $name:expr) => {
        $crate::device_kernel!(@ $crate::native::stub::ReduceKernel, $name)
    };
    (random $name:expr) => {
        $crate::device_kernel!(@ $crate::native::stub::RandomKernel, $name)
    };
    (@ $ty:ty, $name:expr) => {{
        static HANDLE: $ty = $crate::native::stub::Stub::new($name);
        &HANDLE
    }};
    ($name:expr) => {
        $crate::device_kernel!(@ $crate::native::stub::Kernel, $name)
    };
}

/// The loop of one kernel on one device type, called with what it sees of the kernel's handle
/// (one loop may serve several kernels: [`KernelInfo::name`] tells which). `extra` carries the
/// kernel's scalar arguments (`add`'s alpha, `fill_`'s value), as documented where the kernel
/// name is used.
pub type DeviceLoop = fn(kernel: &'static KernelInfo, iter: &TensorIterator<'_>, extra: &[Scalar]) -> Result<()>;

/// A reduction's loop on one device type: `kernel` folds `input` over the dims flagged in
/// `reduced` into `outputs`, which the operator allocated with `input`'s rank and size 1 at the
/// reduced dims (the `keepdim` shape). `max`/`min` write values then int64 indices; `softmax`
/// and `log_softmax` reduce one dim and write an output laid out like `input`.
pub type ReduceLoop =
    fn(kernel: &'static KernelInfo, input: &Tensor, reduced: &[bool], outputs: &[&Tensor]) -> Result<()>;

/// Loops by kernel name and device type: where backends register them, read once per handle
/// and device type (Note [Kernel handles]).
struct Loops<F: Copy>(OnceLock<RwLock<HashMap<(&'static str, DeviceType), F>>>);

impl<F: Copy> Loops<F> {
    const fn new() -> Self {
        Loops(OnceLock::new())
    }
    fn map(&self) -> &RwLock<HashMap<(&'static str, DeviceType), F>> {
        self.0.get_or_init(|| RwLock::new(HashMap::new()))
    }
    fn insert(&self, kernel: &'static str, ty: DeviceType, f: F) {
        self.map().write().unwrap_or_else(|e| e.into_inner()).insert((kernel, ty), f);
    }
    /// The loop, or the error naming the operator, kernel, device and dtype.
    fn get(&self, op: &str, kernel: &'static str, ty: DeviceType, dtype: ScalarType) -> Result<F> {
        let f = self.map().read().unwrap_or_else(|e| e.into_inner()).get(&(kernel, ty)).copied();
        f.ok_or_else(|| Error::NotImplemented {
            op: op.into(),
            msg: format!("there is no {} kernel for `{kernel}` with dtype {dtype}", ty.name()),
        })
    }
}

/// A batched matrix product's loop on one device type: `out[i] = alpha * a[i] @ b[i] + beta *
/// out[i]` for 3-d tensors of one dtype (`[batch, m, k] @ [batch, k, n]` into the `[batch, m,
/// n]` output the operator allocated). With `beta` `None` or 0, `out` is not read.
pub type GemmLoop = fn(out: &Tensor, a: &Tensor, b: &Tensor, alpha: f64, beta: Option<f64>) -> Result<()>;

/// A random fill's loop on one device type: writes samples of `kernel`'s distribution into the
/// iterator's output (after it, for `bernoulli_tensor`, the probabilities), drawing from
/// `generator`, a generator of the output's device type. `params` are the distribution's
/// parameters, as documented where the kernel name is used.
pub type RandomLoop =
    fn(kernel: &'static KernelInfo, iter: &TensorIterator<'_>, generator: &Generator, params: &[Scalar]) -> Result<()>;

/// A gather's loop on one device type (Note [Device gathers] in `native::shape_ops`): fills the
/// contiguous `out` with elements of `src`, output coordinate `c` of dim `d` reading source
/// coordinate `maps[map_offsets[d] + c]` (a negative one: `fill`) where `map_offsets[d]` is
/// `Some`, and `c` itself otherwise. `maps` is an int64 tensor on `out`'s device; `src` has
/// `out`'s dtype and device and as many dims.
pub type RemapLoop =
    fn(out: &Tensor, src: &Tensor, maps: &Tensor, map_offsets: &[Option<i64>], fill: Scalar) -> Result<()>;

/// A sort's loop on one device type: sorts every line of the contiguous `[lines, n]` `input`
/// stably (NaN above every number, as `torch.sort` orders it) into the contiguous `values`
/// (the input's dtype) and int64 `indices` of the same shape.
pub type SortLoop = fn(values: &Tensor, indices: &Tensor, input: &Tensor, descending: bool) -> Result<()>;

/// The dense gradient of `embedding` on one device type (Note [Deterministic embedding
/// backward] in `kernels-cuda`): `grad_weight` (contiguous `[num_weights, cols]`, zeros) gets,
/// for each group `g`, the sum of the rows `order[starts[g]..starts[g + 1]]` of `grad`
/// (contiguous `[positions, cols]`) in that order, written to row `rows[g]`; divided by the
/// group's size with `scale_by_freq`. `order`, `starts` and `rows` are int64 tensors on the
/// device.
pub type EmbeddingBackwardLoop = fn(
    grad_weight: &Tensor,
    grad: &Tensor,
    order: &Tensor,
    starts: &Tensor,
    rows: &Tensor,
    scale_by_freq: bool,
) -> Result<()>;

/// A sparse @ dense product's loop on one device type (Note [Row-wise sparse products] in
/// `kernels-cuda`): writes every element of the contiguous `[rows, n]` `out` (not read) with
/// `sum values[k] * dense[col[k], j]` over row `r`'s elements `k`, which are
/// `order[crow[r]..crow[r + 1]]` (the positions themselves when `order` is `None`), in that
/// order. `dense` is contiguous `[k, n]` and `values` contiguous `[nnz]`, both of `out`'s dtype;
/// `crow` (`rows + 1` offsets), `col` and `order` are contiguous int64 tensors on the device,
/// every column below `k`.
pub type SpmmLoop = fn(
    out: &Tensor,
    dense: &Tensor,
    values: &Tensor,
    crow: &Tensor,
    col: &Tensor,
    order: Option<&Tensor>,
) -> Result<()>;

/// The runs of equal keys of a sorted vector on one device type (Note [Runs of a sorted vector]
/// in `kernels-cuda`): `sorted` holds `n` nondecreasing int64 keys; the loop writes each run's
/// first position into `starts` (`n + 1` entries, `n` after the last run) and its key into
/// `keys` (`n` entries), and returns the number of runs `u` (only `starts[..=u]` and
/// `keys[..u]` are written). All three are contiguous 1-d int64 tensors on the device.
pub type RunsLoop = fn(sorted: &Tensor, starts: &Tensor, keys: &Tensor) -> Result<i64>;

/// The geometry of a convolution's column matrix (Note [Convolution as GEMM] in
/// `native::conv`), on 3 spatial dims (1-d and 2-d convolutions have leading 1s): images of
/// `channels` channels and spatial size `input`, windows of `kernel` with `stride`, `padding`
/// and `dilation`, at the `out` window positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnGeometry {
    /// Channels of every image.
    pub channels: i64,
    /// The images' spatial size, outermost first.
    pub input: [i64; 3],
    /// The window's size.
    pub kernel: [i64; 3],
    /// The window positions per dim (the convolution's output size).
    pub out: [i64; 3],
    /// Steps between window positions.
    pub stride: [i64; 3],
    /// Implicit zeros before (and after) the images.
    pub padding: [i64; 3],
    /// Steps between a window's taps.
    pub dilation: [i64; 3],
}

/// A convolution's unfolding on one device type. With `fold` false (`im2col`) the loop writes
/// every element of `cols` (contiguous `[n, channels * k, L]`, `k` the kernel's and `L` the
/// output's element count) from `images` (contiguous `[n, channels, *input]`), zero where a
/// window reaches into the padding. With `fold` true (`col2im`, the adjoint) it writes every
/// element of `images` as the sum of the `cols` entries that read it, in kernel-offset order.
/// Both have `images`' dtype and device.
pub type ColumnsLoop = fn(images: &Tensor, cols: &Tensor, geometry: &ColumnGeometry, fold: bool) -> Result<()>;

/// What a pooling loop computes (Note [Pooling windows] in `native::pool`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolMode {
    /// The window's maximum and its flat in-plane index (the first maximum, or the last NaN).
    Max,
    /// The window's mean: its sum over `divisor`, or over the window's cell count inside the
    /// padded input (`include_pad`) or inside the input.
    Avg {
        /// Counts the padding's cells in the divisor.
        include_pad: bool,
        /// `divisor_override` (never 0).
        divisor: Option<i64>,
    },
}

/// The geometry of a pooling on 3 spatial dims (1-d and 2-d poolings have leading 1s):
/// `planes` contiguous planes of spatial size `input`, pooled to `out`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolGeometry {
    /// The number of planes (batch times channels).
    pub planes: i64,
    /// Each plane's spatial size, outermost first.
    pub input: [i64; 3],
    /// The output's spatial size.
    pub out: [i64; 3],
    /// Max or average.
    pub mode: PoolMode,
}

/// A pooling on one device type: writes every element of `out` (contiguous `[planes, *out]`)
/// from `input` (contiguous `[planes, *input]`, the same dtype) and, for [`PoolMode::Max`], the
/// flat in-plane index of each maximum into `indices` (contiguous int64 of `out`'s shape).
/// `windows` has `out[0] + out[1] + out[2]` rows: per output position of each dim in turn, the
/// window's `(first, step, count, padded_count)`; the loop checks that every window is
/// non-empty and inside the input before it launches.
pub type PoolLoop = fn(
    input: &Tensor,
    out: &Tensor,
    indices: Option<&Tensor>,
    windows: &[[i64; 4]],
    geometry: &PoolGeometry,
) -> Result<()>;

/// The constants of one fused SGD step with a momentum buffer (nn's Note [Fused updates]), as
/// the element loop uses them, each rounded to the parameter's dtype: per element,
/// `g = ±grad (+ weight_decay * p)`, `buf = buf * momentum + keep * g`,
/// `p += neg_lr * (nesterov ? g + momentum * buf : buf)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FusedSgd {
    /// The L2 penalty (0: none).
    pub weight_decay: f64,
    /// The momentum.
    pub momentum: f64,
    /// `1 - dampening`.
    pub keep: f64,
    /// `-lr`.
    pub neg_lr: f64,
    /// Nesterov momentum.
    pub nesterov: bool,
    /// Ascend instead of descend.
    pub maximize: bool,
}

/// The constants of one fused Adam/AdamW step (nn's Note [Fused updates]), each rounded to the
/// parameter's dtype by the loop: per element, `g = ±grad`; decoupled decay `p *= decay` or
/// coupled `g += decay * p`; `m = lerp(m, g, w1)` (torch.lerp's two-sided formula, the low side
/// when `lerp_low`); `v = v * beta2 + c2 * g * g`; with amsgrad `max = maximum(max, v)` (NaN
/// propagates); `p += neg_step * m / (sqrt(v or max) / bias_correction2_sqrt + eps)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FusedAdam {
    /// `1 - beta1`, the weight of `lerp`.
    pub w1: f64,
    /// Whether `|1 - beta1| < 0.5` (`lerp`'s `m + w1 * (g - m)` form).
    pub lerp_low: bool,
    /// `beta2`.
    pub beta2: f64,
    /// `1 - beta2`.
    pub c2: f64,
    /// `eps`.
    pub eps: f64,
    /// `sqrt(1 - beta2^step)`.
    pub bias_correction2_sqrt: f64,
    /// `-lr / (1 - beta1^step)`.
    pub neg_step: f64,
    /// `1 - lr * weight_decay` when decoupled (AdamW), `weight_decay` when coupled.
    pub decay: f64,
    /// AdamW's decay of the parameter.
    pub decoupled: bool,
    /// Adam's L2 penalty on the gradient.
    pub coupled: bool,
    /// Ascend instead of descend.
    pub maximize: bool,
}

/// A fused SGD step's loop on one device type: updates `param` and `buf` from `grad` in place
/// ([`FusedSgd`]); `Ok(false)` when the tensors do not qualify (not dense, contiguous, of one
/// floating dtype, shape and device), leaving everything untouched for the operator path.
pub type FusedSgdLoop = fn(param: &Tensor, grad: &Tensor, buf: &Tensor, o: &FusedSgd) -> Result<bool>;

/// A fused Adam step's loop on one device type, as [`FusedSgdLoop`] ([`FusedAdam`]); `max` is
/// amsgrad's running maximum.
pub type FusedAdamLoop = fn(
    param: &Tensor,
    grad: &Tensor,
    exp_avg: &Tensor,
    exp_avg_sq: &Tensor,
    max: Option<&Tensor>,
    o: &FusedAdam,
) -> Result<bool>;

static ELEMENTWISE: Loops<DeviceLoop> = Loops::new();
static REDUCTIONS: Loops<ReduceLoop> = Loops::new();
static GEMMS: Loops<GemmLoop> = Loops::new();
static RANDOM: Loops<RandomLoop> = Loops::new();
static REMAPS: Loops<RemapLoop> = Loops::new();
static SORTS: Loops<SortLoop> = Loops::new();
static EMBEDDING_BACKWARDS: Loops<EmbeddingBackwardLoop> = Loops::new();
static SPMMS: Loops<SpmmLoop> = Loops::new();
static RUNS: Loops<RunsLoop> = Loops::new();
static COLUMNS: Loops<ColumnsLoop> = Loops::new();
static POOLS: Loops<PoolLoop> = Loops::new();
static FUSED_SGDS: Loops<FusedSgdLoop> = Loops::new();
static FUSED_ADAMS: Loops<FusedAdamLoop> = Loops::new();

// The handles of the operators with one loop each (Note [Kernel handles]).
static GEMM: Stub<GemmLoop> = Stub::new("bmm");
static REMAP: Stub<RemapLoop> = Stub::new("remap");
static SORT: Stub<SortLoop> = Stub::new("sort");
static EMBEDDING_BACKWARD: Stub<EmbeddingBackwardLoop> = Stub::new("embedding_backward");
static SPMM: Stub<SpmmLoop> = Stub::new("spmm");
static RUN: Stub<RunsLoop> = Stub::new("runs");
static COLUMN: Stub<ColumnsLoop> = Stub::new("columns");
static POOL: Stub<PoolLoop> = Stub::new("pool");
static FUSED_SGD: Stub<FusedSgdLoop> = Stub::new("fused_sgd");
static FUSED_ADAM: Stub<FusedAdamLoop> = Stub::new("fused_adam");

/// Registers `f` as the loop of `kernel` on devices of type `ty` (a later registration of the
/// same pair replaces the earlier one for handles that have not run on that device type yet:
/// backends register at their initialisation, before their first launch).
pub fn register(kernel: &'static str, ty: DeviceType, f: DeviceLoop) {
    ELEMENTWISE.insert(kernel, ty, f);
}

/// Runs `kernel`'s loop for the iterator's device (not the CPU: CPU loops are called directly).
#[inline]
pub fn run(kernel: &'static Kernel, iter: &TensorIterator<'_>, extra: &[Scalar]) -> Result<()> {
    if iter.device().is_meta() {
        return Ok(()); // Note [Meta loops]
    }
    kernel.loop_for(&ELEMENTWISE, iter.op(), iter.device().ty, iter.common_dtype())?(kernel.info(), iter, extra)
}

/// Registers the reduction loop of `kernel` on devices of type `ty`.
pub fn register_reduction(kernel: &'static str, ty: DeviceType, f: ReduceLoop) {
    REDUCTIONS.insert(kernel, ty, f);
}

/// Runs the reduction loop of `kernel` for `input`'s device (see [`ReduceLoop`]).
pub fn run_reduction(
    op: &str,
    kernel: &'static ReduceKernel,
    input: &Tensor,
    reduced: &[bool],
    outputs: &[&Tensor],
) -> Result<()> {
    if input.device().is_meta() {
        return Ok(()); // Note [Meta loops]
    }
    kernel.loop_for(&REDUCTIONS, op, input.device().ty, input.dtype())?(kernel.info(), input, reduced, outputs)
}

/// Registers the batched matrix product of devices of type `ty`.
pub fn register_gemm(ty: DeviceType, f: GemmLoop) {
    GEMMS.insert("bmm", ty, f);
}

/// Runs the batched matrix product for `out`'s device (see [`GemmLoop`]).
pub fn run_gemm(op: &str, out: &Tensor, a: &Tensor, b: &Tensor, alpha: f64, beta: Option<f64>) -> Result<()> {
    if out.device().is_meta() {
        return Ok(()); // Note [Meta loops]
    }
    GEMM.loop_for(&GEMMS, op, out.device().ty, out.dtype())?(out, a, b, alpha, beta)
}

/// Registers the random loop of `kernel` on devices of type `ty`.
pub fn register_random(kernel: &'static str, ty: DeviceType, f: RandomLoop) {
    RANDOM.insert(kernel, ty, f);
}

/// Runs the random loop of `kernel` for the iterator's device (see [`RandomLoop`]).
pub fn run_random(
    kernel: &'static RandomKernel,
    iter: &TensorIterator<'_>,
    generator: &Generator,
    params: &[Scalar],
) -> Result<()> {
    if iter.device().is_meta() {
        return Ok(()); // Note [Meta loops]
    }
    kernel.loop_for(&RANDOM, iter.op(), iter.device().ty, iter.output_dtype())?(kernel.info(), iter, generator, params)
}

/// Registers the gather loop of devices of type `ty` (see [`RemapLoop`]).
pub fn register_remap(ty: DeviceType, f: RemapLoop) {
    REMAPS.insert("remap", ty, f);
}

/// Runs the gather loop for `out`'s device (see [`RemapLoop`]).
pub fn run_remap(
    op: &str,
    out: &Tensor,
    src: &Tensor,
    maps: &Tensor,
    map_offsets: &[Option<i64>],
    fill: Scalar,
) -> Result<()> {
    if out.device().is_meta() {
        return Ok(()); // Note [Meta loops]
    }
    REMAP.loop_for(&REMAPS, op, out.device().ty, out.dtype())?(out, src, maps, map_offsets, fill)
}

/// Registers the sort loop of devices of type `ty` (see [`SortLoop`]).
pub fn register_sort(ty: DeviceType, f: SortLoop) {
    SORTS.insert("sort", ty, f);
}

/// Runs the sort loop for `input`'s device (see [`SortLoop`]).
pub fn run_sort(op: &str, values: &Tensor, indices: &Tensor, input: &Tensor, descending: bool) -> Result<()> {
    if input.device().is_meta() {
        return Ok(()); // Note [Meta loops]
    }
    SORT.loop_for(&SORTS, op, input.device().ty, input.dtype())?(values, indices, input, descending)
}

/// Registers the sparse @ dense loop of devices of type `ty` (see [`SpmmLoop`]).
pub fn register_spmm(ty: DeviceType, f: SpmmLoop) {
    SPMMS.insert("spmm", ty, f);
}

/// The sparse @ dense loop for `out`'s device and dtype, when a backend registered one (see
/// [`SpmmLoop`]); the caller falls back to dense operators otherwise.
pub fn spmm_loop(device: c10::Device, dtype: c10::ScalarType) -> Option<SpmmLoop> {
    if device.is_meta() {
        return None;
    }
    SPMM.loop_for(&SPMMS, "mm", device.ty, dtype).ok()
}

/// Registers the embedding gradient loop of devices of type `ty` (see
/// [`EmbeddingBackwardLoop`]).
pub fn register_embedding_backward(ty: DeviceType, f: EmbeddingBackwardLoop) {
    EMBEDDING_BACKWARDS.insert("embedding_backward", ty, f);
}

/// Runs the embedding gradient loop for `grad_weight`'s device (see [`EmbeddingBackwardLoop`]).
pub fn run_embedding_backward(
    grad_weight: &Tensor,
    grad: &Tensor,
    order: &Tensor,
    starts: &Tensor,
    rows: &Tensor,
    scale_by_freq: bool,
) -> Result<()> {
    if grad_weight.device().is_meta() {
        return Ok(()); // Note [Meta loops]
    }
    let ty = grad_weight.device().ty;
    EMBEDDING_BACKWARD.loop_for(&EMBEDDING_BACKWARDS, "embedding_dense_backward", ty, grad_weight.dtype())?(
        grad_weight,
        grad,
        order,
        starts,
        rows,
        scale_by_freq,
    )
}

/// Registers the runs loop of devices of type `ty` (see [`RunsLoop`]).
pub fn register_runs(ty: DeviceType, f: RunsLoop) {
    RUNS.insert("runs", ty, f);
}

/// Runs the runs loop for `sorted`'s device (see [`RunsLoop`]).
pub fn run_runs(op: &str, sorted: &Tensor, starts: &Tensor, keys: &Tensor) -> Result<i64> {
    RUN.loop_for(&RUNS, op, sorted.device().ty, sorted.dtype())?(sorted, starts, keys)
}

/// Registers the convolution unfolding loop of devices of type `ty` (see [`ColumnsLoop`]).
pub fn register_columns(ty: DeviceType, f: ColumnsLoop) {
    COLUMNS.insert("columns", ty, f);
}

/// Runs the unfolding loop (`fold` false) or its adjoint for `images`' device (see
/// [`ColumnsLoop`]).
pub fn run_columns(op: &str, images: &Tensor, cols: &Tensor, geometry: &ColumnGeometry, fold: bool) -> Result<()> {
    if images.device().is_meta() {
        return Ok(()); // Note [Meta loops]
    }
    COLUMN.loop_for(&COLUMNS, op, images.device().ty, images.dtype())?(images, cols, geometry, fold)
}

/// Registers the pooling loop of devices of type `ty` (see [`PoolLoop`]).
pub fn register_pool(ty: DeviceType, f: PoolLoop) {
    POOLS.insert("pool", ty, f);
}

/// Runs the pooling loop for `input`'s device (see [`PoolLoop`]).
pub fn run_pool(
    op: &str,
    input: &Tensor,
    out: &Tensor,
    indices: Option<&Tensor>,
    windows: &[[i64; 4]],
    geometry: &PoolGeometry,
) -> Result<()> {
    if input.device().is_meta() {
        return Ok(()); // Note [Meta loops]
    }
    POOL.loop_for(&POOLS, op, input.device().ty, input.dtype())?(input, out, indices, windows, geometry)
}

/// Registers the fused SGD loop of devices of type `ty` (see [`FusedSgdLoop`]).
pub fn register_fused_sgd(ty: DeviceType, f: FusedSgdLoop) {
    FUSED_SGDS.insert("fused_sgd", ty, f);
}

/// Runs the fused SGD loop of `param`'s device (see [`FusedSgdLoop`]); `Ok(false)` on the CPU
/// (whose loop is nn's own), on `meta` and on a device type without one.
pub fn run_fused_sgd(param: &Tensor, grad: &Tensor, buf: &Tensor, o: &FusedSgd) -> Result<bool> {
    let d = param.device();
    if d.is_cpu() || d.is_meta() {
        return Ok(false);
    }
    match FUSED_SGD.loop_for(&FUSED_SGDS, "_fused_sgd_", d.ty, param.dtype()) {
        Ok(f) => f(param, grad, buf, o),
        Err(_) => Ok(false),
    }
}

/// Registers the fused Adam loop of devices of type `ty` (see [`FusedAdamLoop`]).
pub fn register_fused_adam(ty: DeviceType, f: FusedAdamLoop) {
    FUSED_ADAMS.insert("fused_adam", ty, f);
}

/// Runs the fused Adam loop of `param`'s device (see [`FusedAdamLoop`]); `Ok(false)` as
/// [`run_fused_sgd`].
pub fn run_fused_adam(
    param: &Tensor,
    grad: &Tensor,
    exp_avg: &Tensor,
    exp_avg_sq: &Tensor,
    max: Option<&Tensor>,
    o: &FusedAdam,
) -> Result<bool> {
    let d = param.device();
    if d.is_cpu() || d.is_meta() {
        return Ok(false);
    }
    match FUSED_ADAM.loop_for(&FUSED_ADAMS, "_fused_adam_", d.ty, param.dtype()) {
        Ok(f) => f(param, grad, exp_avg, exp_avg_sq, max, o),
        Err(_) => Ok(false),
    }
}
