//! The CUDA loops of the fused optimizer steps (`kernels/optim.cu`, Note [Fused optimizer
//! kernels]): `aten::native::stub::FusedSgdLoop` and `FusedAdamLoop`, which nn's SGD, Adam and
//! AdamW call for parameters on the device (Note [Fused updates] in nn).

use aten::native::stub::{FusedAdam, FusedSgd};
use aten::Tensor;
use c10::{Result, ScalarType};

use crate::driver::{KernelArgs, KernelId, StreamId};
use crate::geometry::elementwise_launch;
use crate::loops::family;

/// Whether the tensors qualify for a fused kernel: dense, contiguous, float32 or float64, and
/// of one dtype, shape and device (anything else takes the operator path).
fn qualifies(tensors: &[&Tensor]) -> bool {
    let first = tensors[0];
    matches!(first.dtype(), ScalarType::F32 | ScalarType::F64)
        && tensors.iter().all(|t| {
            t.layout() == c10::Layout::Strided
                && t.is_contiguous()
                && t.dtype() == first.dtype()
                && t.device() == first.device()
                && t.sizes() == first.sizes()
        })
}

/// Launches `kernel` over the `param`'s elements, then bumps the version counters of the
/// tensors written (as in-place operators do).
///
/// # Safety
/// `args` must be the kernel's parameters after the element count, with every pointer that of
/// a live, contiguous tensor of `param`'s numel and dtype on its device.
unsafe fn launch(kernel: KernelId, param: &Tensor, args: &mut KernelArgs, written: &[&Tensor]) -> Result<()> {
    let device = param.device();
    let stream = StreamId(crate::runtime::current_stream(device)?.id);
    let mut params = args.params();
    // SAFETY: the caller's contract.
    unsafe {
        crate::driver::launch(device.index as usize, kernel, &elementwise_launch(param.numel(), stream), &mut params)?
    };
    for t in written {
        t.bump_version();
    }
    Ok(())
}

/// `fused_sgd_<T>(n, param, grad, buf, weight_decay, momentum, keep, neg_lr, nesterov,
/// maximize)`: one thread per element.
pub(crate) fn fused_sgd(param: &Tensor, grad: &Tensor, buf: &Tensor, o: &FusedSgd) -> Result<bool> {
    if !qualifies(&[param, grad, buf]) {
        return Ok(false);
    }
    if param.numel() == 0 {
        return Ok(true);
    }
    let id = family!("fused_sgd").get("_fused_sgd_", param.dtype())?;
    let mut args = KernelArgs::new();
    args.push(param.numel()).push(param.data_ptr() as u64).push(grad.data_ptr() as u64).push(buf.data_ptr() as u64);
    args.push(o.weight_decay).push(o.momentum).push(o.keep).push(o.neg_lr).push(o.nesterov).push(o.maximize);
    // SAFETY: fused_sgd_<T> takes (int64 n, T* param, const T* grad, T* buf, four doubles, two
    // bools); the three tensors qualified above: live, contiguous, n elements of T each.
    unsafe { launch(id, param, &mut args, &[param, buf])? };
    Ok(true)
}

/// `fused_adam_<T>(n, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq or null, w1, lerp_low,
/// beta2, c2, eps, bc2, neg_step, decay, decoupled, coupled, maximize)`: one thread per
/// element.
pub(crate) fn fused_adam(
    param: &Tensor,
    grad: &Tensor,
    exp_avg: &Tensor,
    exp_avg_sq: &Tensor,
    max: Option<&Tensor>,
    o: &FusedAdam,
) -> Result<bool> {
    // amsgrad's maximum stands in for itself or, without amsgrad, repeats the parameter.
    let all = [param, grad, exp_avg, exp_avg_sq, max.unwrap_or(param)];
    if !qualifies(&all) {
        return Ok(false);
    }
    if param.numel() == 0 {
        return Ok(true);
    }
    let id = family!("fused_adam").get("_fused_adam_", param.dtype())?;
    let mut args = KernelArgs::new();
    args.push(param.numel()).push(param.data_ptr() as u64).push(grad.data_ptr() as u64);
    args.push(exp_avg.data_ptr() as u64).push(exp_avg_sq.data_ptr() as u64);
    args.push(max.map_or(0u64, |m| m.data_ptr() as u64));
    args.push(o.w1).push(o.lerp_low).push(o.beta2).push(o.c2).push(o.eps).push(o.bias_correction2_sqrt);
    args.push(o.neg_step).push(o.decay).push(o.decoupled).push(o.coupled).push(o.maximize);
    let written = [param, exp_avg, exp_avg_sq, max.unwrap_or(param)];
    let written = &written[..if max.is_some() { 4 } else { 3 }];
    // SAFETY: fused_adam_<T> takes (int64 n, five T pointers, the last null without amsgrad,
    // double, bool, six doubles, three bools); every tensor qualified above: live, contiguous,
    // n elements of T each.
    unsafe { launch(id, param, &mut args, written)? };
    Ok(true)
}
