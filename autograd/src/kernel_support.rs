//! What the generated autograd kernels and nodes call: attaching history to outputs, the
//! in-place rules, and zero-filling undefined incoming gradients.

use aten::Tensor;
use c10::{Error, Result};

use crate::node::{Grads, NodeCore, NodeRef};

/// Records `t` as output `output_nr` of `node`: its shape and dtype become the node's input
/// metadata, and, when `differentiable` (and `t` is floating or complex), `node` becomes its
/// `grad_fn`.
pub fn set_history(t: &Tensor, node: &NodeRef, output_nr: u32, differentiable: bool) -> Result<()> {
    set_history_owned(t, node.clone(), output_nr, differentiable)
}

/// [`set_history`] for the last output of a node: the handle moves into the output's metadata
/// instead of being cloned there, which spares a recorded operation an atomic increment and the
/// matching decrement on its node's count.
pub fn set_history_owned(t: &Tensor, node: NodeRef, output_nr: u32, differentiable: bool) -> Result<()> {
    let nr = node.core().add_input_metadata(t);
    debug_assert_eq!(nr, output_nr);
    if differentiable && (t.dtype().is_floating_point() || t.dtype().is_complex()) {
        crate::meta::set_grad_fn(t, node, output_nr)?;
    }
    Ok(())
}

/// PyTorch's `check_inplace`: a leaf that requires grad, or a view of one, cannot be modified
/// in place while grad mode is on.
pub fn check_inplace(t: &Tensor) -> Result<()> {
    if !crate::grad_mode::is_grad_enabled() {
        return Ok(());
    }
    if let Some(v) = crate::meta::view_info(t) {
        if crate::meta::requires_grad(&v.base) && crate::meta::is_leaf(&v.base) {
            return Err(Error::invalid(
                "inplace",
                "a view of a leaf Variable that requires grad is being used in an in-place operation.",
            ));
        }
        return Ok(());
    }
    if crate::meta::requires_grad(t) && crate::meta::is_leaf(t) {
        return Err(Error::invalid(
            "inplace",
            "a leaf Variable that requires grad is being used in an in-place operation.",
        ));
    }
    Ok(())
}

/// Records `out` as a differentiable view of `input` (or of `input`'s base when `input` is a
/// view itself), so an in-place change of `out` can be propagated to the base's history.
pub fn mark_view(out: &Tensor, input: &Tensor) -> Result<()> {
    if out.is_same(input) || !crate::grad_mode::is_grad_enabled() || out.imp().is_inference() {
        return Ok(());
    }
    let base = crate::meta::view_info(input).map_or_else(|| input.clone(), |v| v.base);
    let info = crate::meta::ViewInfo {
        base,
        sizes: out.sizes().to_vec(),
        strides: out.strides().to_vec(),
        offset: out.storage_offset(),
    };
    crate::meta::meta_or_init(out).state().rare_mut().view = Some(info);
    Ok(())
}

/// The value of `self` before an in-place operation, for formulas that need it.
pub fn original_self(t: &Tensor) -> Result<Tensor> {
    aten::ops::clone(t, None)
}

/// After an in-place operation recorded as `node`: `t` is now output 0 of `node`. For a view,
/// the base's history is rebased instead, through a `CopySlices` node, and the view becomes a
/// view of the new base history (PyTorch's `rebase_history`).
pub fn rebase_history(t: &Tensor, node: &NodeRef) -> Result<()> {
    match crate::meta::view_info(t) {
        None => {
            node.core().add_input_metadata(t);
            crate::meta::set_grad_fn(t, node.clone(), 0)
        }
        Some(v) => crate::views::rebase_view_history(t, &v, node),
    }
}

/// The incoming gradients with every undefined one replaced by zeros of the output's shape
/// (only called when at least one is defined).
pub fn materialize(core: &NodeCore, mut grads: Grads) -> Result<smallvec::SmallVec<[Tensor; 2]>> {
    // Most nodes have one input, and it is defined.
    if let [g @ Some(_)] = grads.as_mut_slice() {
        return Ok(g.take().into_iter().collect());
    }
    // A plain loop: collecting through a `Result` adapter cost as much as the rest of a small
    // node's bookkeeping.
    let mut out = smallvec::SmallVec::with_capacity(grads.len());
    for (i, g) in grads.into_iter().enumerate() {
        out.push(match g {
            Some(g) => g,
            None => core
                .input_metadata(i)
                .ok_or_else(|| Error::invalid("backward", format!("no metadata for gradient {i}")))?
                .zeros()?,
        });
    }
    Ok(out)
}
