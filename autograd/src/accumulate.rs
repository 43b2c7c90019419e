//! `AccumulateGrad`: the node at a leaf that adds incoming gradients into its `.grad`.

use aten::{Tensor, WeakTensor};
use c10::{Result, Scalar};

use crate::node::{Grads, Node, NodeCore};

/// Accumulates gradients into a leaf tensor's `.grad` (owned by the leaf, which it refers to
/// weakly; see Note [Leaf accumulators live with their leaf]).
pub struct AccumulateGrad {
    core: NodeCore,
    variable: WeakTensor,
}

impl AccumulateGrad {
    /// The accumulator of leaf `variable`.
    pub fn new(variable: &Tensor) -> Self {
        AccumulateGrad { core: NodeCore::leaf(crate::node::InputMeta::of(variable)), variable: variable.downgrade() }
    }
}

impl Node for AccumulateGrad {
    fn name(&self) -> String {
        "AccumulateGrad".into()
    }
    fn core(&self) -> &NodeCore {
        &self.core
    }
    fn accumulated_variable(&self) -> Option<Tensor> {
        self.variable.upgrade()
    }
    fn is_accumulator(&self) -> bool {
        true
    }
    /// With grad mode off (a plain backward) the first gradient is stored (taken over when the
    /// engine hands over a tensor nobody else holds, see [`stealable`], a copy otherwise) and
    /// later ones are added in place; with
    /// grad mode on (`create_graph`) the sum is out of place so it keeps its history.
    fn apply(&self, grads: Grads) -> Result<Grads> {
        let Some(new) = grads.into_iter().next().flatten() else {
            return Ok(Grads::new());
        };
        // A leaf nobody holds any more cannot show its gradient to anyone: nothing to do.
        let Some(variable) = self.variable.upgrade() else {
            return Ok(Grads::new());
        };
        let Some(meta) = crate::meta::meta(&variable) else {
            return Ok(Grads::new());
        };
        let hooks = {
            let mut s = meta.state();
            let grad_mode = crate::grad_mode::is_grad_enabled();
            s.grad = Some(match s.grad.take() {
                None if grad_mode => new,
                None if stealable(&new, &variable) => new,
                None => fresh_copy(&new, &variable)?,
                Some(old) if grad_mode => crate::engine::sum_grads(&old, &new)?,
                Some(old) => {
                    // A sparse `.grad` and a dense new gradient: the sum is dense, a new tensor
                    // (PyTorch's accumulateGrad does the same).
                    let sparse_into_dense =
                        old.layout() != c10::Layout::Strided && new.layout() == c10::Layout::Strided;
                    if crate::meta::requires_grad(&old) || sparse_into_dense {
                        crate::engine::sum_grads(&old, &new)?
                    } else {
                        aten::ops::add_(&old, &new, Scalar::Int(1))?
                    }
                }
            });
            s.rare().map_or_else(Vec::new, |r| r.post_accumulate_hooks.clone())
        };
        for h in hooks {
            h(&variable)?;
        }
        Ok(Grads::new())
    }
}

/// Whether the first gradient of a plain backward can become `.grad` as it is (PyTorch's
/// "steal" in `accumulateGrad`): no other handle holds it or its memory (so `.grad` aliases
/// nothing a user can see), it carries no autograd history, and its layout is the one
/// [`fresh_copy`] would give.
fn stealable(g: &Tensor, variable: &Tensor) -> bool {
    if g.layout() != c10::Layout::Strided {
        // A sparse gradient has no strides to match; its members are its own.
        return g.use_count() == 1 && crate::meta::meta(g).is_none();
    }
    if g.use_count() != 1 || g.storage().use_count() != 1 || crate::meta::meta(g).is_some() {
        return false;
    }
    if variable.is_contiguous() {
        g.is_contiguous()
    } else {
        g.strides() == variable.strides() && g.storage_offset() == 0
    }
}

/// The gradient to store as a new `.grad`: a copy (the engine's buffers may be shared with
/// user-visible tensors such as `grad_outputs`), contiguous like the leaf when it is (PyTorch's
/// gradient layout contract: a linear layer's weight gradient arrives transposed from `mm`'s
/// backward, and optimizers then update `param` and `.grad` with matching strides).
fn fresh_copy(g: &Tensor, variable: &Tensor) -> Result<Tensor> {
    let d = crate::meta::detach(g);
    if d.layout() != c10::Layout::Strided {
        return aten::ops::clone(&d, None);
    }
    let format = variable.is_contiguous().then_some(c10::MemoryFormat::Contiguous);
    aten::ops::clone(&d, format)
}
