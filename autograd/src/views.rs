//! In-place operations on differentiable views: PyTorch's `CopySlices`.
//!
//! Note [In-place on views]: when `v` views `base` and `v.mul_(w)` runs, the gradient of the
//! new `base` is: the incoming gradient everywhere, except in the region `v` covers, where it
//! is the in-place node's gradient with respect to the old `v` values. `CopySlices` becomes the
//! base's `grad_fn`: it takes the gradient of the base, runs the in-place node on the viewed
//! region, writes the result back, and passes the rest on to the base's previous history. The
//! view itself gets a node that places its gradient into a zero base-shaped gradient and sends
//! it to `CopySlices`, so gradients through the view and through the base meet there.

use aten::{ops, Tensor};
use c10::{Error, Result};

use crate::meta::ViewInfo;
use crate::node::{Edge, Grads, Node, NodeCore, NodeRef};

/// The region of a gradient shaped like `base` that the view covers (`base` must be dense in
/// row-major order, which every base this records is unless it was itself made by `as_strided`).
fn region(g: &Tensor, base: &Tensor, v: &ViewInfo) -> Result<Tensor> {
    if !base.is_contiguous() {
        return Err(Error::NotImplemented {
            op: "CopySlices".into(),
            msg: "in-place operations on views of non-contiguous tensors are not differentiable here".into(),
        });
    }
    ops::as_strided(g, &v.sizes, &v.strides, Some(v.offset - base.storage_offset()))
}

struct CopySlices {
    core: NodeCore,
    base: Tensor,
    view: ViewInfo,
    inner: NodeRef,
}

impl Node for CopySlices {
    fn name(&self) -> String {
        "CopySlices".into()
    }
    fn core(&self) -> &NodeCore {
        &self.core
    }
    fn apply(&self, grads: Grads) -> Result<Grads> {
        let n = self.core.next_edges().len();
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(Grads::from_elem(None, n));
        };
        let result = ops::clone(&g, Some(c10::MemoryFormat::Contiguous))?;
        let slice = region(&result, &self.base, &self.view)?;
        let inner = self.inner.apply(smallvec::smallvec![Some(ops::clone(&slice, None)?)])?;
        {
            let _g = crate::grad_mode::no_grad();
            match inner.first().cloned().flatten() {
                Some(r) => ops::copy_(&slice, &r, false)?,
                None => ops::zero_(&slice)?,
            };
        }
        let mut out = Grads::with_capacity(n);
        out.push(Some(result));
        out.extend(inner.into_iter().skip(1));
        out.resize(n, None);
        Ok(out)
    }
    fn release_variables(&self) {
        self.inner.release_variables();
    }
}

/// The new `grad_fn` of a view modified in place: its gradient placed into zeros shaped like
/// the base, sent to the base's `CopySlices`.
struct ViewOfBase {
    core: NodeCore,
    base: Tensor,
    view: ViewInfo,
}

impl Node for ViewOfBase {
    fn name(&self) -> String {
        "AsStridedBackward0".into()
    }
    fn core(&self) -> &NodeCore {
        &self.core
    }
    fn apply(&self, grads: Grads) -> Result<Grads> {
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(smallvec::smallvec![None]);
        };
        let z = ops::zeros(self.base.sizes(), Some(g.dtype()), None, Some(g.device()), None)?;
        let slice = region(&z, &self.base, &self.view)?;
        {
            let _g = crate::grad_mode::no_grad();
            ops::copy_(&slice, &g, false)?;
        }
        Ok(smallvec::smallvec![Some(z)])
    }
}

/// See Note [In-place on views].
pub(crate) fn rebase_view_history(view: &Tensor, v: &ViewInfo, node: &NodeRef) -> Result<()> {
    let base = &v.base;
    let mut edges = vec![crate::meta::gradient_edge(base)];
    edges.extend(node.core().next_edges().iter().skip(1).cloned());
    // The in-place node runs inside CopySlices; its first input is the view's gradient.
    node.core().add_input_metadata(view);
    // The nodes keep the view's geometry with a history-less base: `v.base` owns the base's
    // metadata, which is about to own `copy` (a cycle never freed; Note [Saved inputs]).
    let geometry = ViewInfo { base: crate::meta::detach(base), ..v.clone() };
    let copy = std::sync::Arc::new(CopySlices {
        core: NodeCore::new(edges),
        base: crate::meta::detach(base),
        view: geometry.clone(),
        inner: node.clone(),
    });
    let copy: NodeRef = copy;
    copy.core().add_input_metadata(base);
    crate::meta::set_grad_fn(base, copy.clone(), 0)?;
    let vb: NodeRef = std::sync::Arc::new(ViewOfBase {
        core: NodeCore::new(vec![Edge::new(copy, 0)]),
        base: crate::meta::detach(base),
        view: geometry,
    });
    vb.core().add_input_metadata(view);
    crate::meta::set_grad_fn(view, vb, 0)
}
