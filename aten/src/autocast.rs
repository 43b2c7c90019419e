//! Automatic mixed precision: the `AutocastCPU` and `AutocastCUDA` kernels, the thread's autocast
//! state and the region guard (`torch.autocast`).
//!
//! Note [Autocast on the dispatcher]: as in PyTorch, every CPU tensor carries `AutocastCPU` and
//! every CUDA tensor `AutocastCUDA`, and both keys sit in the thread's default excluded set. A
//! region ([`AutocastGuard`]) takes its device's key out of the excluded set. The keys rank above
//! the autograd keys, so an operator on PyTorch's lists reaches its autocast kernel first; the
//! kernel casts the arguments by the operator's [`CastPolicy`], excludes its own key and calls
//! the operator again. The casts are ordinary `to` calls, so autograd records them and the
//! gradients flow back to the original dtypes. Every other operator falls through the keys (a
//! fallthrough fallback), so the keys cost a call nothing whether a region is active or not.
//!
//! The kernels are boxed: one function per policy serves every operator, reading the stack by
//! the operator's schema. An operator in a region pays for boxing its arguments; PyTorch's
//! typed wrappers do not, but a typed wrapper per operator is what Note [Recording through
//! the boxed path] measured to disturb how the CPU kernels inline.
//!
//! Note [Autocast cast cache]: within a region, the lower-precision cast of an fp32 leaf that
//! requires grad and is not a view (a model's weight) is made once and reused, keyed by the
//! source's address and validated by a weak handle, so a weight used by several operators is
//! cast once per region. The cache is per thread and emptied when the outermost region ends.

use std::cell::RefCell;
use std::collections::HashMap;

use c10::{DeviceType, DispatchKey, Error, ExcludeDispatchKeyGuard, LocalDispatchKeySet, Result, ScalarType};

use crate::dispatcher::{Dispatcher, KernelFunction, OperatorEntry};
use crate::ivalue::{IValue, Stack};
use crate::tensor::{Tensor, WeakTensor};

/// How an autocast kernel treats its operator's floating-point arguments (PyTorch's
/// `CastPolicy`). An argument is *eligible* when it is a floating-point tensor on the region's
/// device and not float64; only eligible arguments are ever cast.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CastPolicy {
    /// Eligible arguments become the region's dtype (f16 or bf16): matrix products,
    /// convolutions, `linear`.
    LowerPrecisionFp,
    /// Eligible arguments become float32: ops whose results need the range (`exp`, `log`,
    /// the losses, the norms).
    Fp32,
    /// When the first argument is eligible and the call gives no `dtype`, the call runs with
    /// `dtype=float32` (`softmax`, `sum`, `cumsum`): the result is float32 without a cast of
    /// the input.
    Fp32SetOptDtype,
    /// The call is redirected to the operator's `dtype` overload with `dtype=float32` for an
    /// eligible first argument (`norm.Scalar` to `norm.ScalarOpt_dtype`).
    Fp32AppendDtype,
    /// Eligible arguments become the widest dtype among them (float32 if any is float32,
    /// else the region's dtype): ops that combine several inputs (`addcmul`, `cat`).
    Promote,
    /// The operator refuses to run in a region (`binary_cross_entropy` on CUDA).
    Banned,
}

impl CastPolicy {
    /// PyTorch's name of the policy (`lower_precision_fp`, `fp32`, ...).
    pub fn name(self) -> &'static str {
        match self {
            CastPolicy::LowerPrecisionFp => "lower_precision_fp",
            CastPolicy::Fp32 => "fp32",
            CastPolicy::Fp32SetOptDtype => "fp32_set_opt_dtype",
            CastPolicy::Fp32AppendDtype => "fp32_append_dtype",
            CastPolicy::Promote => "promote",
            CastPolicy::Banned => "banned",
        }
    }
}

use CastPolicy::{Banned, Fp32, Fp32AppendDtype, Fp32SetOptDtype, LowerPrecisionFp as Lower, Promote};

/// The operators with an `AutocastCUDA` kernel and their policies, as PyTorch 2.15 registers
/// them (`ATen/autocast_mode.h`'s lists). Operators this library does not define are listed too,
/// so `cargo xtask autocast` compares the whole list with PyTorch's; they get no kernel.
pub const CUDA_POLICIES: &[(&str, CastPolicy)] = &[
    // lower_precision_fp
    ("_convolution.deprecated", Lower),
    ("_convolution", Lower),
    ("conv1d", Lower),
    ("conv2d", Lower),
    ("conv3d", Lower),
    ("conv_tbc", Lower),
    ("conv_transpose1d", Lower),
    ("conv_transpose2d.input", Lower),
    ("conv_transpose3d.input", Lower),
    ("convolution", Lower),
    ("cudnn_convolution", Lower),
    ("cudnn_convolution_transpose", Lower),
    ("prelu", Lower),
    ("addmm", Lower),
    ("addmv", Lower),
    ("addr", Lower),
    ("matmul", Lower),
    ("einsum", Lower),
    ("mm", Lower),
    ("mv", Lower),
    ("linalg_vecdot", Lower),
    ("linear", Lower),
    ("addbmm", Lower),
    ("baddbmm", Lower),
    ("bmm", Lower),
    ("chain_matmul", Lower),
    ("linalg_multi_dot", Lower),
    ("_thnn_fused_lstm_cell", Lower),
    ("_thnn_fused_gru_cell", Lower),
    ("lstm_cell", Lower),
    ("gru_cell", Lower),
    ("rnn_tanh_cell", Lower),
    ("rnn_relu_cell", Lower),
    ("_scaled_dot_product_flash_attention", Lower),
    ("scaled_dot_product_attention", Lower),
    ("_cudnn_rnn", Lower),
    // fp32
    ("acos", Fp32),
    ("asin", Fp32),
    ("cosh", Fp32),
    ("erfinv", Fp32),
    ("exp", Fp32),
    ("expm1", Fp32),
    ("log", Fp32),
    ("log10", Fp32),
    ("log2", Fp32),
    ("log1p", Fp32),
    ("reciprocal", Fp32),
    ("rsqrt", Fp32),
    ("sinh", Fp32),
    ("tan", Fp32),
    ("pow.Tensor_Scalar", Fp32),
    ("pow.Tensor_Tensor", Fp32),
    ("pow.Scalar", Fp32),
    ("softplus", Fp32),
    ("layer_norm", Fp32),
    ("native_layer_norm", Fp32),
    ("rms_norm", Fp32),
    ("group_norm", Fp32),
    ("frobenius_norm.dim", Fp32),
    ("nuclear_norm", Fp32),
    ("nuclear_norm.dim", Fp32),
    ("cosine_similarity", Fp32),
    ("poisson_nll_loss", Fp32),
    ("cosine_embedding_loss", Fp32),
    ("nll_loss", Fp32),
    ("nll_loss2d", Fp32),
    ("hinge_embedding_loss", Fp32),
    ("kl_div", Fp32),
    ("l1_loss", Fp32),
    ("smooth_l1_loss", Fp32),
    ("huber_loss", Fp32),
    ("mse_loss", Fp32),
    ("margin_ranking_loss", Fp32),
    ("multilabel_margin_loss", Fp32),
    ("soft_margin_loss", Fp32),
    ("triplet_margin_loss", Fp32),
    ("multi_margin_loss", Fp32),
    ("binary_cross_entropy_with_logits", Fp32),
    ("dist", Fp32),
    ("pdist", Fp32),
    ("cdist", Fp32),
    ("renorm", Fp32),
    ("logsumexp", Fp32),
    ("upsample_nearest1d", Fp32),
    ("_upsample_nearest_exact1d", Fp32),
    ("upsample_nearest2d", Fp32),
    ("_upsample_nearest_exact2d", Fp32),
    ("upsample_nearest3d", Fp32),
    ("_upsample_nearest_exact3d", Fp32),
    ("upsample_linear1d", Fp32),
    ("upsample_bilinear2d", Fp32),
    ("_upsample_bilinear2d_aa", Fp32),
    ("upsample_trilinear3d", Fp32),
    ("upsample_bicubic2d", Fp32),
    ("_upsample_bicubic2d_aa", Fp32),
    ("linalg_matrix_sqrth", Fp32),
    // fp32_set_opt_dtype
    ("prod", Fp32SetOptDtype),
    ("prod.dim_int", Fp32SetOptDtype),
    ("softmax.int", Fp32SetOptDtype),
    ("log_softmax.int", Fp32SetOptDtype),
    ("cumprod", Fp32SetOptDtype),
    ("cumsum", Fp32SetOptDtype),
    ("linalg_vector_norm", Fp32SetOptDtype),
    ("linalg_matrix_norm", Fp32SetOptDtype),
    ("linalg_matrix_norm.str_ord", Fp32SetOptDtype),
    ("sum", Fp32SetOptDtype),
    ("sum.dim_IntList", Fp32SetOptDtype),
    // fp32_append_dtype
    ("norm.Scalar", Fp32AppendDtype),
    ("norm.ScalarOpt_dim", Fp32AppendDtype),
    // promote
    ("addcdiv", Promote),
    ("addcmul", Promote),
    ("atan2", Promote),
    ("bilinear", Promote),
    ("cross", Promote),
    ("dot", Promote),
    ("vdot", Promote),
    ("grid_sampler", Promote),
    ("index_put", Promote),
    ("tensordot", Promote),
    ("scatter_add", Promote),
    // banned
    ("binary_cross_entropy", Banned),
];

/// The operators with an `AutocastCPU` kernel and their policies, as PyTorch 2.15 registers
/// them (`ATen/autocast_mode.cpp`): a short lower-precision list, three promoting joins, and
/// float32 for everything else it lists (losses, FFTs, linear algebra, 3-d pooling, pads).
pub const CPU_POLICIES: &[(&str, CastPolicy)] = &[
    // lower_precision_fp
    ("conv1d", Lower),
    ("conv1d.padding", Lower),
    ("conv2d", Lower),
    ("conv2d.padding", Lower),
    ("conv3d", Lower),
    ("conv3d.padding", Lower),
    ("bmm", Lower),
    ("mm", Lower),
    ("linalg_vecdot", Lower),
    ("baddbmm", Lower),
    ("addmm", Lower),
    ("_addmm_activation", Lower),
    ("addbmm", Lower),
    ("linear", Lower),
    ("_convolution.deprecated", Lower),
    ("matmul", Lower),
    ("conv_tbc", Lower),
    ("mkldnn_rnn_layer", Lower),
    ("conv_transpose1d", Lower),
    ("conv_transpose2d.input", Lower),
    ("conv_transpose3d.input", Lower),
    ("prelu", Lower),
    ("scaled_dot_product_attention", Lower),
    ("_native_multi_head_attention", Lower),
    // fp32
    ("avg_pool3d", Fp32),
    ("binary_cross_entropy", Fp32),
    ("grid_sampler", Fp32),
    ("polar", Fp32),
    ("prod", Fp32),
    ("prod.dim_int", Fp32),
    ("quantile", Fp32),
    ("quantile.scalar", Fp32),
    ("nanquantile", Fp32),
    ("nanquantile.scalar", Fp32),
    ("stft", Fp32),
    ("stft.center", Fp32),
    ("cdist", Fp32),
    ("grid_sampler_2d", Fp32),
    ("_grid_sampler_2d_cpu_fallback", Fp32),
    ("grid_sampler_3d", Fp32),
    ("trace", Fp32),
    ("view_as_complex", Fp32),
    ("cholesky_inverse", Fp32),
    ("cholesky_solve", Fp32),
    ("inverse", Fp32),
    ("lu_solve", Fp32),
    ("orgqr", Fp32),
    ("ormqr", Fp32),
    ("pinverse", Fp32),
    ("max_pool3d", Fp32),
    ("max_unpool2d", Fp32),
    ("max_unpool3d", Fp32),
    ("adaptive_avg_pool3d", Fp32),
    ("reflection_pad1d", Fp32),
    ("reflection_pad2d", Fp32),
    ("replication_pad1d", Fp32),
    ("replication_pad2d", Fp32),
    ("replication_pad3d", Fp32),
    ("mse_loss", Fp32),
    ("cosine_embedding_loss", Fp32),
    ("nll_loss", Fp32),
    ("nll_loss2d", Fp32),
    ("hinge_embedding_loss", Fp32),
    ("poisson_nll_loss", Fp32),
    ("smooth_l1_loss", Fp32),
    ("cross_entropy_loss", Fp32),
    ("l1_loss", Fp32),
    ("huber_loss", Fp32),
    ("margin_ranking_loss", Fp32),
    ("soft_margin_loss", Fp32),
    ("triplet_margin_loss", Fp32),
    ("multi_margin_loss", Fp32),
    ("ctc_loss.IntList", Fp32),
    ("ctc_loss.Tensor", Fp32),
    ("kl_div", Fp32),
    ("multilabel_margin_loss", Fp32),
    ("binary_cross_entropy_with_logits", Fp32),
    ("fft_fft", Fp32),
    ("fft_ifft", Fp32),
    ("fft_fft2", Fp32),
    ("fft_ifft2", Fp32),
    ("fft_fftn", Fp32),
    ("fft_ifftn", Fp32),
    ("fft_rfft", Fp32),
    ("fft_irfft", Fp32),
    ("fft_rfft2", Fp32),
    ("fft_irfft2", Fp32),
    ("fft_rfftn", Fp32),
    ("fft_irfftn", Fp32),
    ("fft_hfft", Fp32),
    ("fft_ihfft", Fp32),
    ("linalg_cond", Fp32),
    ("linalg_cond.p_str", Fp32),
    ("linalg_matrix_rank", Fp32),
    ("linalg_matrix_rank.atol_rtol_float", Fp32),
    ("linalg_matrix_rank.atol_rtol_tensor", Fp32),
    ("linalg_matrix_rank.tol_tensor", Fp32),
    ("linalg_solve", Fp32),
    ("linalg_cholesky", Fp32),
    ("linalg_svdvals", Fp32),
    ("linalg_eigvals", Fp32),
    ("linalg_eigvalsh", Fp32),
    ("linalg_inv", Fp32),
    ("linalg_householder_product", Fp32),
    ("linalg_tensorinv", Fp32),
    ("linalg_tensorsolve", Fp32),
    ("fake_quantize_per_tensor_affine", Fp32),
    ("geqrf", Fp32),
    ("_lu_with_info", Fp32),
    ("svd", Fp32),
    ("triangular_solve", Fp32),
    ("fractional_max_pool2d", Fp32),
    ("fractional_max_pool3d", Fp32),
    ("adaptive_max_pool3d", Fp32),
    ("multilabel_margin_loss_forward", Fp32),
    ("linalg_qr", Fp32),
    ("linalg_cholesky_ex", Fp32),
    ("linalg_svd", Fp32),
    ("linalg_eig", Fp32),
    ("linalg_eigh", Fp32),
    ("linalg_lstsq", Fp32),
    ("linalg_inv_ex", Fp32),
    ("linalg_matrix_sqrth", Fp32),
    // promote
    ("stack", Promote),
    ("cat", Promote),
    ("index_copy", Promote),
];

/// The policy of `op` (`name.overload`) on `device`'s autocast key, if it has a kernel there.
pub fn policy(device: DeviceType, op: &str) -> Option<CastPolicy> {
    let table = match device {
        DeviceType::Cpu => CPU_POLICIES,
        DeviceType::Cuda => CUDA_POLICIES,
        _ => return None,
    };
    table.iter().find(|(name, _)| *name == op).map(|&(_, p)| p)
}

/// The autocast key of a device type, or an error for devices without autocast.
fn autocast_key(op: &str, device: DeviceType) -> Result<DispatchKey> {
    match device {
        DeviceType::Cpu => Ok(DispatchKey::AutocastCPU),
        DeviceType::Cuda => Ok(DispatchKey::AutocastCUDA),
        other => Err(Error::invalid(
            op,
            format!("unsupported autocast device_type '{other}': autocast supports 'cpu' and 'cuda'"),
        )),
    }
}

/// The thread's autocast state besides the enabled bits (which are the excluded keys).
struct State {
    nesting: i64,
    cpu_dtype: ScalarType,
    cuda_dtype: ScalarType,
    cache_enabled: bool,
    /// Note [Autocast cast cache]: source address -> (source, its lower-precision cast).
    cache: HashMap<usize, (WeakTensor, Tensor)>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State {
        nesting: 0,
        cpu_dtype: ScalarType::BF16,
        cuda_dtype: ScalarType::F16,
        cache_enabled: true,
        cache: HashMap::new(),
    });
}

/// `torch.is_autocast_enabled(device_type)`.
pub fn is_enabled(device: DeviceType) -> bool {
    match device {
        DeviceType::Cpu => !LocalDispatchKeySet::is_excluded(DispatchKey::AutocastCPU),
        DeviceType::Cuda => !LocalDispatchKeySet::is_excluded(DispatchKey::AutocastCUDA),
        _ => false,
    }
}

/// `torch.set_autocast_enabled(device_type, enabled)`.
pub fn set_enabled(device: DeviceType, enabled: bool) -> Result<()> {
    let key = autocast_key("set_autocast_enabled", device)?;
    LocalDispatchKeySet::set_key_excluded(key, !enabled);
    Ok(())
}

/// `torch.get_autocast_dtype(device_type)`: float16 for CUDA and bfloat16 for the CPU unless a
/// region chose another.
pub fn get_dtype(device: DeviceType) -> ScalarType {
    STATE.with(|s| {
        let s = s.borrow();
        if device == DeviceType::Cuda {
            s.cuda_dtype
        } else {
            s.cpu_dtype
        }
    })
}

/// `torch.set_autocast_dtype(device_type, dtype)`.
pub fn set_dtype(device: DeviceType, dtype: ScalarType) -> Result<()> {
    autocast_key("set_autocast_dtype", device)?;
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        if device == DeviceType::Cuda {
            s.cuda_dtype = dtype;
        } else {
            s.cpu_dtype = dtype;
        }
    });
    Ok(())
}

/// `torch.is_autocast_cache_enabled()`.
pub fn is_cache_enabled() -> bool {
    STATE.with(|s| s.borrow().cache_enabled)
}

/// `torch.set_autocast_cache_enabled(enabled)`.
pub fn set_cache_enabled(enabled: bool) {
    STATE.with(|s| s.borrow_mut().cache_enabled = enabled);
}

/// `torch.autocast_increment_nesting()`: the new depth.
pub fn increment_nesting() -> i64 {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.nesting += 1;
        s.nesting
    })
}

/// `torch.autocast_decrement_nesting()`: the new depth.
pub fn decrement_nesting() -> i64 {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.nesting -= 1;
        s.nesting
    })
}

/// `torch.clear_autocast_cache()`.
pub fn clear_cache() {
    // Dropping the cached casts may run tensor destructors: not while the state is borrowed.
    let old = STATE.with(|s| std::mem::take(&mut s.borrow_mut().cache));
    drop(old);
}

/// How many casts the thread's cache holds (Note [Autocast cast cache]).
pub fn cache_len() -> usize {
    STATE.with(|s| s.borrow().cache.len())
}

/// An autocast region (`with torch.autocast(device_type, dtype=..., enabled=..., cache_enabled=...)`):
/// operators on PyTorch's lists run in mixed precision on `device` until the guard is dropped.
/// Regions nest; the outermost one empties the cast cache when it ends. `enabled = false` makes
/// a region in which autocast is off (a float32 island inside a mixed-precision one).
///
/// ```
/// use aten::autocast::AutocastGuard;
/// use c10::{DeviceType, ScalarType};
/// let a = aten::ops::ones(&[2, 3], None, None, None, None).unwrap();
/// let b = aten::ops::ones(&[3, 4], None, None, None, None).unwrap();
/// {
///     let _region = AutocastGuard::new(DeviceType::Cpu, Some(ScalarType::BF16)).unwrap();
///     assert_eq!(a.mm(&b).unwrap().dtype(), ScalarType::BF16);
/// }
/// assert_eq!(a.mm(&b).unwrap().dtype(), ScalarType::F32);
/// ```
#[must_use = "the region ends when the guard is dropped"]
#[derive(Debug)]
pub struct AutocastGuard {
    device: DeviceType,
    prev_enabled: bool,
    prev_dtype: ScalarType,
    prev_cache_enabled: bool,
    /// The state it restores is the thread's: the guard stays on the thread that made it.
    _thread_bound: std::marker::PhantomData<*const ()>,
}

impl AutocastGuard {
    /// An enabled region with the cast cache on; `dtype = None` keeps the device's current
    /// autocast dtype (float16 on CUDA, bfloat16 on the CPU by default).
    pub fn new(device: DeviceType, dtype: Option<ScalarType>) -> Result<Self> {
        Self::with_options(device, dtype, true, None)
    }

    /// A region with every option of `torch.autocast`: `cache_enabled = None` keeps the
    /// thread's setting. Autocast works in float16 and bfloat16 on CUDA and on the CPU; another
    /// dtype is an error (PyTorch warns and disables the region instead; a silently disabled
    /// region would leave a model in float32 without a word).
    pub fn with_options(
        device: DeviceType,
        dtype: Option<ScalarType>,
        enabled: bool,
        cache_enabled: Option<bool>,
    ) -> Result<Self> {
        autocast_key("autocast", device)?;
        let dtype = dtype.unwrap_or_else(|| get_dtype(device));
        if enabled && !matches!(dtype, ScalarType::F16 | ScalarType::BF16) {
            let dev = if device == DeviceType::Cuda { "CUDA" } else { "CPU" };
            return Err(Error::invalid(
                "autocast",
                format!(
                    "In {dev} autocast, but the target dtype {dtype} is not supported. {dev} Autocast only supports \
                     dtypes of torch.float16 and torch.bfloat16 currently."
                ),
            ));
        }
        let guard = AutocastGuard {
            device,
            prev_enabled: is_enabled(device),
            prev_dtype: get_dtype(device),
            prev_cache_enabled: is_cache_enabled(),
            _thread_bound: std::marker::PhantomData,
        };
        set_enabled(device, enabled)?;
        set_dtype(device, dtype)?;
        increment_nesting();
        if let Some(c) = cache_enabled {
            set_cache_enabled(c);
        }
        Ok(guard)
    }
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        if decrement_nesting() == 0 {
            clear_cache();
        }
        // The device was accepted when the guard was made, so these cannot fail.
        let _ = set_enabled(self.device, self.prev_enabled);
        let _ = set_dtype(self.device, self.prev_dtype);
        set_cache_enabled(self.prev_cache_enabled);
    }
}

/// Excludes both autocast keys until dropped.
///
/// Note [Composites standing in for native kernels]: an operator that PyTorch implements as one
/// native kernel, and that is a composition of other operators here, would let autocast cast
/// its parts (a DFT as a matrix product, a Cholesky solve through `matmul`) where PyTorch's
/// kernel does its arithmetic in the input's dtype. Such a composite runs its parts below
/// autocast, so its result has PyTorch's dtype in a region too (tests/autocast).
pub fn below_autocast() -> ExcludeDispatchKeyGuard {
    ExcludeDispatchKeyGuard::new(c10::DispatchKeySet::from_keys(&[DispatchKey::AutocastCPU, DispatchKey::AutocastCUDA]))
}

/// Whether autocast on `device` may cast `t`: a floating-point tensor on that device, not f64.
fn is_eligible(t: &Tensor, device: DeviceType) -> bool {
    t.is_floating_point() && t.device().ty == device && t.dtype() != ScalarType::F64
}

/// `cached_cast`: `t` in `to` if it is eligible, else `t` itself; fp32 leaves that require grad
/// go through the cache (Note [Autocast cast cache]).
fn cached_cast(t: &Tensor, to: ScalarType, device: DeviceType) -> Result<Tensor> {
    if !is_eligible(t, device) || t.dtype() == to {
        return Ok(t.clone());
    }
    let cacheable = to == get_dtype(device)
        && t.dtype() == ScalarType::F32
        && is_cache_enabled()
        && t.imp().autograd_meta().is_some_and(|m| m.requires_grad() && m.is_leaf() && !m.is_view());
    if !cacheable {
        return crate::handles::to_dtype::call(t, to, false, false, None);
    }
    let key = t.imp() as *const c10::TensorImpl as usize;
    let hit = STATE.with(|s| {
        s.borrow().cache.get(&key).and_then(|(src, cast)| {
            // The weak handle proves the address still names the same tensor.
            src.upgrade().filter(|live| std::ptr::eq(live.imp(), t.imp())).map(|_| cast.clone())
        })
    });
    if let Some(cast) = hit {
        return Ok(cast);
    }
    let cast = crate::handles::to_dtype::call(t, to, false, false, None)?;
    let old = STATE.with(|s| s.borrow_mut().cache.insert(key, (t.downgrade(), cast.clone())));
    drop(old);
    Ok(cast)
}

/// Casts every eligible tensor in a stack value.
fn cast_value(v: &mut IValue, to: ScalarType, device: DeviceType) -> Result<()> {
    match v {
        IValue::Tensor(t) => *t = cached_cast(t, to, device)?,
        IValue::TensorList(ts) => {
            for t in ts.iter_mut() {
                *t = cached_cast(t, to, device)?;
            }
        }
        IValue::OptionalTensorList(ts) => {
            for t in ts.iter_mut().flatten() {
                *t = cached_cast(t, to, device)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// `prioritize`: the widest floating dtype among the eligible tensors, starting from the
/// region's dtype (float32 wins; f64 tensors are not eligible and do not count).
fn promote_type(op: &str, stack: &Stack, device: DeviceType) -> Result<ScalarType> {
    let lower = get_dtype(device);
    let mut current = lower;
    let mut visit = |t: &Tensor| -> Result<()> {
        if !is_eligible(t, device) {
            return Ok(());
        }
        let next = t.dtype();
        if current == ScalarType::F32 || next == ScalarType::F32 {
            current = ScalarType::F32;
        } else if current != lower || next != lower {
            return Err(Error::invalid(
                op,
                format!("Unexpected floating ScalarType in at::autocast::prioritize: {next} in a {lower} region"),
            ));
        }
        Ok(())
    };
    for v in stack {
        match v {
            IValue::Tensor(t) => visit(t)?,
            IValue::TensorList(ts) => ts.iter().try_for_each(&mut visit)?,
            IValue::OptionalTensorList(ts) => ts.iter().flatten().try_for_each(&mut visit)?,
            _ => {}
        }
    }
    Ok(current)
}

/// Whether the first argument is an eligible tensor (`firstarg_is_eligible`).
fn first_is_eligible(stack: &Stack, device: DeviceType) -> bool {
    matches!(stack.first(), Some(IValue::Tensor(t)) if is_eligible(t, device))
}

/// PyTorch's message for `binary_cross_entropy` in a CUDA region.
const BCE_UNSAFE: &str = "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n\
Many models use a sigmoid layer right before the binary cross entropy layer.\n\
In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n\
or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n\
safe to autocast.";

/// The operator a `fp32_append_dtype` call is redirected to.
fn append_dtype_target(op: &str) -> Option<&'static str> {
    match op {
        "norm.Scalar" => Some("norm.ScalarOpt_dtype"),
        "norm.ScalarOpt_dim" => Some("norm.ScalarOpt_dim_dtype"),
        _ => None,
    }
}

/// Runs `op` on a stack in an autocast region of `device` by `policy`.
fn autocast_call(op: &'static OperatorEntry, device: DeviceType, policy: CastPolicy, stack: &mut Stack) -> Result<()> {
    let key = autocast_key(op.name(), device)?;
    // Operators called below this one (a composite's parts) see no autocast, as in PyTorch.
    let _below = ExcludeDispatchKeyGuard::new(key);
    match policy {
        Lower => {
            let to = get_dtype(device);
            stack.iter_mut().try_for_each(|v| cast_value(v, to, device))?;
        }
        Fp32 => stack.iter_mut().try_for_each(|v| cast_value(v, ScalarType::F32, device))?,
        Promote => {
            let to = promote_type(op.name(), stack, device)?;
            stack.iter_mut().try_for_each(|v| cast_value(v, to, device))?;
        }
        Fp32SetOptDtype => {
            if first_is_eligible(stack, device) {
                let schema = op.schema().ok_or_else(|| Error::UnknownOperator(op.name().to_string()))?;
                if let Some(i) = schema.arguments.iter().position(|a| a.name == "dtype") {
                    if matches!(stack.get(i), Some(IValue::None)) {
                        stack[i] = IValue::ScalarType(ScalarType::F32);
                    }
                }
            }
        }
        Fp32AppendDtype => {
            let Some(target) = append_dtype_target(op.name()) else {
                return Err(Error::invalid(op.name(), "autocast has no dtype overload to redirect this operator to"));
            };
            let dtype = match stack.first() {
                Some(IValue::Tensor(t)) if is_eligible(t, device) => ScalarType::F32,
                Some(IValue::Tensor(t)) => t.dtype(),
                _ => return Err(Error::invalid(op.name(), "expected a tensor as the first argument")),
            };
            stack.push(IValue::ScalarType(dtype));
            return crate::dispatcher().call_boxed(target, stack);
        }
        Banned => return Err(Error::invalid(op.name(), BCE_UNSAFE)),
    }
    op.call_boxed(stack)
}

/// Registers the fallthrough fallbacks of both autocast keys (before the operators, so adding
/// them recomputes no table; Note [Autocast on the dispatcher]).
pub(crate) fn register_fallbacks(d: &Dispatcher) {
    for key in [DispatchKey::AutocastCPU, DispatchKey::AutocastCUDA] {
        d.register_fallback(key, KernelFunction::fallthrough()).expect("a runtime key");
    }
}

/// Registers the kernels of the listed operators that are defined (after their schemas): an
/// operator this library does not define gets no entry.
pub(crate) fn register_kernels(d: &Dispatcher) {
    for (key, device, table) in [
        (DispatchKey::AutocastCPU, DeviceType::Cpu, CPU_POLICIES),
        (DispatchKey::AutocastCUDA, DeviceType::Cuda, CUDA_POLICIES),
    ] {
        for &(name, policy) in table {
            if d.find_schema(name).is_err() {
                continue;
            }
            let kernel = KernelFunction::from_boxed(move |op: &'static OperatorEntry, _ks, stack: &mut Stack| {
                autocast_call(op, device, policy, stack)
            });
            d.register_kernel(name, key, kernel).expect("a runtime key");
        }
    }
}
