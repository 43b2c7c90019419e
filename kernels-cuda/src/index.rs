//! The CUDA loops of the gathers (Note [Device gathers] in `aten::native::shape_ops`) and of
//! embedding's dense gradient (Note [Deterministic embedding backward] in `kernels/index.cu`).

use aten::Tensor;
use c10::{Error, Result, Scalar};

use crate::args::{KcRemap, KC_MAX_DIMS};
use crate::driver::{KernelArgs, StreamId};
use crate::geometry::elementwise_launch;
use crate::loops::{family, push_element};

/// `remap_<T>(KcRemap, out, src, maps, fill)` (`aten::native::stub::RemapLoop`): the output's
/// sizes and the source's strides, innermost first, with each dim's offset into `maps`.
pub(crate) fn remap(
    out: &Tensor,
    src: &Tensor,
    maps: &Tensor,
    map_offsets: &[Option<i64>],
    fill: Scalar,
) -> Result<()> {
    let op = "remap";
    let id = family!("remap").get(op, out.dtype())?;
    let n = out.dim();
    if n > KC_MAX_DIMS as usize || src.dim() != n || map_offsets.len() != n || src.dtype() != out.dtype() {
        return Err(Error::Cuda(format!(
            "remap: a {n}-d {} output from a {}-d {} source with {} maps (at most {KC_MAX_DIMS} dims)",
            out.dtype(),
            src.dim(),
            src.dtype(),
            map_offsets.len()
        )));
    }
    if !out.is_contiguous() || maps.dtype() != c10::ScalarType::I64 || !maps.is_contiguous() {
        return Err(Error::Cuda("remap: the output and the maps must be contiguous, the maps int64".into()));
    }
    let mut r = KcRemap { ndim: n as i32, numel: out.numel(), ..Default::default() };
    for (k, d) in (0..n).rev().enumerate() {
        r.sizes[k] = out.sizes()[d];
        r.src_strides[k] = src.strides()[d];
        r.map_offsets[k] = map_offsets[d].unwrap_or(-1);
    }
    if r.numel == 0 {
        return Ok(());
    }
    let device = out.device();
    let mut args = KernelArgs::new();
    args.push(r).push(out.data_ptr() as u64).push(src.data_ptr() as u64).push(maps.data_ptr() as u64);
    push_element(&mut args, out.dtype(), fill);
    let stream = StreamId(crate::runtime::current_stream(device)?.id);
    let mut params = args.params();
    // SAFETY: remap_<T> takes (KcRemap, T* out, const T* src, const int64_t* maps, T fill); out
    // is contiguous with r.numel elements; every map entry the kernel reads is inside `maps`
    // (the caller built each mapped dim's map with one entry per output coordinate), and
    // every source coordinate a map gives is inside `src`'s sizes (checked by the operator), so
    // every offset lies inside the live tensors.
    unsafe { crate::driver::launch(device.index as usize, id, &elementwise_launch(r.numel, stream), &mut params) }
}

/// `embedding_backward_<T>(groups, cols, grad_weight, grad, order, starts, rows, scale)`
/// (`aten::native::stub::EmbeddingBackwardLoop`): one thread per (group, column).
pub(crate) fn embedding_backward(
    grad_weight: &Tensor,
    grad: &Tensor,
    order: &Tensor,
    starts: &Tensor,
    rows: &Tensor,
    scale_by_freq: bool,
) -> Result<()> {
    let op = "embedding_dense_backward";
    let id = family!("embedding_backward").get(op, grad_weight.dtype())?;
    let groups = rows.numel();
    let cols = grad_weight.sizes().get(1).copied().unwrap_or(0);
    let contiguous = [grad_weight, grad, order, starts, rows].iter().all(|t| t.is_contiguous());
    if !contiguous || grad.dtype() != grad_weight.dtype() || starts.numel() != groups + 1 || grad.dim() != 2 {
        return Err(Error::Cuda(format!("{op}: the loop takes contiguous operands and {groups} + 1 group starts")));
    }
    let work = groups.checked_mul(cols).ok_or_else(|| Error::Cuda(format!("{op}: {groups} x {cols} overflows")))?;
    if work == 0 {
        return Ok(());
    }
    let device = grad_weight.device();
    let mut args = KernelArgs::new();
    args.push(groups).push(cols).push(grad_weight.data_ptr() as u64).push(grad.data_ptr() as u64);
    args.push(order.data_ptr() as u64).push(starts.data_ptr() as u64).push(rows.data_ptr() as u64);
    args.push(scale_by_freq);
    let stream = StreamId(crate::runtime::current_stream(device)?.id);
    let mut params = args.params();
    // SAFETY: embedding_backward_<T> takes (int64 groups, int64 cols, T* grad_weight, const T*
    // grad, const int64_t* order, starts, rows, bool); the operator built `order` from positions
    // of `grad`'s rows, `rows` from indices checked against grad_weight's rows and `starts` as
    // groups + 1 offsets into `order`, so every element the kernel touches is inside the live,
    // contiguous tensors.
    unsafe { crate::driver::launch(device.index as usize, id, &elementwise_launch(work, stream), &mut params) }
}
