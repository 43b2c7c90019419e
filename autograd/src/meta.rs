//! Per-tensor autograd metadata ([`AutogradMeta`], stored in the `TensorImpl`'s autograd slot)
//! and the functions that read and change it: `requires_grad`, `grad`, `grad_fn`, the gradient
//! edge of a tensor, leaf gradient accumulators, hooks.
//!
//! Note [Leaf accumulators live with their leaf]: a leaf owns its `AccumulateGrad`, which refers
//! back to the leaf weakly (no cycle), so every graph built on the leaf shares one accumulator
//! made on first use. PyTorch does it the other way round (the leaf holds the accumulator
//! weakly, the accumulator holds the leaf), which makes and frees an accumulator per leaf for
//! every graph built: with small operations that cost a quarter of the time of recording `a + b`.
//! What differs: a graph that outlives every handle of its leaf accumulates into nothing, which
//! nobody could observe (the leaf's hooks and `.grad` went with it). A leaf's shape and dtype
//! never change in place, so the metadata the accumulator checks gradients against stays right.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use aten::Tensor;
use c10::tensor_impl::AutogradMetaInterface;
use c10::{Error, Result};

use crate::accumulate::AccumulateGrad;
use crate::node::{Edge, NodeRef, TensorHook};

/// A hook that runs after a gradient was accumulated into a leaf's `.grad`.
pub type PostAccumulateHook = Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>;

/// The mutable part of the metadata.
///
/// Note [Small autograd metadata]: every output of a recorded operation gets metadata, so what
/// only some tensors need (hooks, a view's base, a retained gradient) lives in a [`RareMeta`]
/// allocated on first use. The metadata of an ordinary output is then one cache line where it
/// was three: fewer bytes to write when the operation runs and to read when it is freed.
#[derive(Default)]
pub struct MetaState {
    /// The accumulated gradient (`.grad`).
    pub grad: Option<Tensor>,
    /// The node that produced this tensor (None for leaves).
    pub grad_fn: Option<NodeRef>,
    /// Which output of `grad_fn` this tensor is.
    pub output_nr: u32,
    /// `retain_grad()` was called on this non-leaf.
    pub retains_grad: bool,
    /// The leaf's gradient accumulator (see Note [Leaf accumulators live with their leaf]).
    pub grad_accumulator: Option<Arc<AccumulateGrad>>,
    rare: Option<Box<RareMeta>>,
}

/// The metadata few tensors have (Note [Small autograd metadata]).
#[derive(Default)]
pub struct RareMeta {
    /// Tensor hooks registered on a leaf (non-leaves keep theirs on the grad_fn).
    pub leaf_hooks: Vec<TensorHook>,
    /// Hooks run after accumulation into a leaf's `.grad`.
    pub post_accumulate_hooks: Vec<PostAccumulateHook>,
    /// For a differentiable view: the tensor it views (never itself a view) and its geometry.
    pub view: Option<ViewInfo>,
    /// The gradient kept by `retain_grad()`, shared with its hook so the hook never owns the
    /// tensor.
    retained: Option<Arc<Mutex<Option<Tensor>>>>,
}

impl MetaState {
    /// The rare part, if anything was ever stored there.
    pub fn rare(&self) -> Option<&RareMeta> {
        self.rare.as_deref()
    }
    /// The rare part, made on first use.
    pub fn rare_mut(&mut self) -> &mut RareMeta {
        self.rare.get_or_insert_with(Box::default)
    }
    /// The cell a `retain_grad` hook writes, made on first use.
    fn retained_cell(&mut self) -> Arc<Mutex<Option<Tensor>>> {
        self.rare_mut().retained.get_or_insert_with(|| Arc::new(Mutex::new(None))).clone()
    }
}

/// What a differentiable view remembers of its base (PyTorch's `DifferentiableViewMeta`).
#[derive(Clone)]
pub struct ViewInfo {
    /// The root base (a view of a view records the first base).
    pub base: Tensor,
    /// The view's sizes.
    pub sizes: Vec<i64>,
    /// The view's strides.
    pub strides: Vec<i64>,
    /// The view's storage offset.
    pub offset: i64,
}

/// What autograd stores on a tensor.
pub struct AutogradMeta {
    requires_grad: AtomicBool,
    state: Mutex<MetaState>,
}

impl std::fmt::Debug for AutogradMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state();
        f.debug_struct("AutogradMeta")
            .field("requires_grad", &self.requires_grad.load(Ordering::Relaxed))
            .field("grad_fn", &s.grad_fn.as_ref().map(|n| n.name()))
            .field("output_nr", &s.output_nr)
            .finish()
    }
}

impl Drop for AutogradMeta {
    /// A tensor's `grad_fn` is freed without recursing through the graph (Note [Freeing long
    /// graphs]).
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = state.grad_fn.take() {
            crate::node::release_node(f);
        }
    }
}

impl AutogradMetaInterface for AutogradMeta {
    fn requires_grad(&self) -> bool {
        self.requires_grad.load(Ordering::Relaxed)
    }
    fn is_leaf(&self) -> bool {
        self.state().grad_fn.is_none()
    }
    fn is_view(&self) -> bool {
        self.state().rare().is_some_and(|r| r.view.is_some())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl AutogradMeta {
    fn new(requires_grad: bool, grad_fn: Option<NodeRef>, output_nr: u32) -> Self {
        AutogradMeta {
            requires_grad: AtomicBool::new(requires_grad),
            state: Mutex::new(MetaState { grad_fn, output_nr, ..MetaState::default() }),
        }
    }

    /// The mutable state, locked.
    pub fn state(&self) -> MutexGuard<'_, MetaState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The autograd metadata of `t`, if it has any.
pub fn meta(t: &Tensor) -> Option<&AutogradMeta> {
    t.imp().autograd_meta().and_then(|m| m.as_any().downcast_ref::<AutogradMeta>())
}

/// The metadata of `t`, attached (not requiring grad) if absent.
pub(crate) fn meta_or_init(t: &Tensor) -> &AutogradMeta {
    let m = t.imp().get_or_init_autograd_meta(|| Box::new(AutogradMeta::new(false, None, 0)));
    m.as_any().downcast_ref::<AutogradMeta>().expect("only autograd attaches autograd metadata")
}

/// Whether `t` requires grad (a leaf marked so, or the output of a recorded operation).
#[inline]
pub fn requires_grad(t: &Tensor) -> bool {
    t.imp().autograd_meta().is_some_and(|m| m.requires_grad())
}

/// `requires_grad_(flag)`: marks a leaf as needing gradients. Fails on non-leaves asked to
/// stop requiring grad, on non-floating dtypes, and on inference tensors.
pub fn set_requires_grad(t: &Tensor, flag: bool) -> Result<()> {
    if !is_leaf(t) && !flag {
        return Err(Error::invalid(
            "requires_grad_",
            "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a \
             subgraph that doesn't require differentiation use var_no_grad = var.detach().",
        ));
    }
    if flag && !t.dtype().is_floating_point() && !t.dtype().is_complex() {
        return Err(Error::invalid(
            "requires_grad_",
            "only Tensors of floating point and complex dtype can require gradients",
        ));
    }
    if flag && t.imp().is_inference() {
        return Err(Error::invalid(
            "requires_grad_",
            "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.",
        ));
    }
    if !flag && meta(t).is_none() {
        return Ok(());
    }
    meta_or_init(t).requires_grad.store(flag, Ordering::Relaxed);
    Ok(())
}

/// The node that produced `t` (None for leaves and tensors without history).
pub fn grad_fn(t: &Tensor) -> Option<NodeRef> {
    meta(t).and_then(|m| m.state().grad_fn.clone())
}

/// Which output of its `grad_fn` the tensor is.
pub fn output_nr(t: &Tensor) -> u32 {
    meta(t).map_or(0, |m| m.state().output_nr)
}

/// Whether `t` is a leaf: it has no `grad_fn` (every tensor that does not require grad is one).
pub fn is_leaf(t: &Tensor) -> bool {
    grad_fn(t).is_none()
}

/// The accumulated gradient (`.grad`); for a non-leaf, the retained gradient if
/// `retain_grad()` was called.
pub fn grad(t: &Tensor) -> Option<Tensor> {
    let m = meta(t)?;
    let s = m.state();
    if s.grad_fn.is_some() {
        if s.retains_grad {
            let cell = s.rare().and_then(|r| r.retained.as_ref());
            return cell.and_then(|r| r.lock().unwrap_or_else(|e| e.into_inner()).clone());
        }
        return None;
    }
    s.grad.clone()
}

/// Sets (or clears) `.grad`. The gradient must have the tensor's shape and dtype.
pub fn set_grad(t: &Tensor, g: Option<Tensor>) -> Result<()> {
    if let Some(g) = &g {
        if g.sizes() != t.sizes() {
            return Err(Error::shape(
                "grad",
                format!("assigned grad has data of a different size: {:?} vs {:?}", g.sizes(), t.sizes()),
            ));
        }
        if g.dtype() != t.dtype() {
            return Err(Error::invalid("grad", "assigned grad has data of a different type"));
        }
    }
    let m = meta_or_init(t);
    let mut s = m.state();
    if s.grad_fn.is_some() {
        *s.retained_cell().lock().unwrap_or_else(|e| e.into_inner()) = g;
    } else {
        s.grad = g;
    }
    Ok(())
}

/// Gives `t` its history: output `output_nr` of `grad_fn` (the tensor must be fresh, as every
/// operator output is). Called by the autograd kernels.
pub fn set_grad_fn(t: &Tensor, grad_fn: NodeRef, output_nr: u32) -> Result<()> {
    // A fresh output gets its metadata with the history already in place (no lock).
    let mut pending = Some(grad_fn);
    let installed = t.imp().get_or_init_autograd_meta(|| Box::new(AutogradMeta::new(true, pending.take(), output_nr)));
    let Some(grad_fn) = pending else {
        return Ok(());
    };
    let m = installed.as_any().downcast_ref::<AutogradMeta>().expect("autograd metadata");
    m.requires_grad.store(true, Ordering::Relaxed);
    let mut s = m.state();
    s.grad_fn = Some(grad_fn);
    s.output_nr = output_nr;
    Ok(())
}

/// The leaf's gradient accumulator, made if it does not exist (see Note [Leaf accumulators live
/// with their leaf]).
pub fn grad_accumulator(t: &Tensor) -> Option<Arc<AccumulateGrad>> {
    let m = meta(t)?;
    if !m.requires_grad() {
        return None;
    }
    let mut s = m.state();
    if s.grad_fn.is_some() {
        return None;
    }
    Some(accumulator_locked(t, &mut s))
}

/// The accumulator of leaf `t`, whose metadata state is locked as `s`.
fn accumulator_locked(t: &Tensor, s: &mut MetaState) -> Arc<AccumulateGrad> {
    s.grad_accumulator.get_or_insert_with(|| Arc::new(AccumulateGrad::new(t))).clone()
}

/// Where the gradient of `t` goes: its `grad_fn` (non-leaf), its accumulator (leaf requiring
/// grad), or nowhere. One lock of the metadata.
pub fn gradient_edge(t: &Tensor) -> Edge {
    let Some(m) = meta(t) else {
        return Edge::invalid();
    };
    let mut s = m.state();
    if let Some(f) = &s.grad_fn {
        return Edge::new(f.clone(), s.output_nr);
    }
    if !m.requires_grad() {
        return Edge::invalid();
    }
    Edge::new(accumulator_locked(t, &mut s) as NodeRef, 0)
}

/// `retain_grad()`: a non-leaf keeps its gradient in `.grad` during backward. A no-op on leaves.
pub fn retain_grad(t: &Tensor) -> Result<()> {
    if !requires_grad(t) {
        return Err(Error::invalid("retain_grad", "can't retain_grad on Tensor that has requires_grad=False"));
    }
    let m = meta_or_init(t);
    let (f, nr, cell) = {
        let mut s = m.state();
        if s.grad_fn.is_none() || s.retains_grad {
            return Ok(());
        }
        s.retains_grad = true;
        (s.grad_fn.clone().expect("checked above"), s.output_nr, s.retained_cell())
    };
    let hook: TensorHook = Arc::new(move |g: &Tensor| {
        let mut slot = cell.lock().unwrap_or_else(|e| e.into_inner());
        *slot = Some(match slot.take() {
            None => aten::ops::clone(g, None)?,
            Some(old) => aten::ops::add(&old, g, c10::Scalar::Int(1))?,
        });
        Ok(None)
    });
    f.core().hooks().retains_grad.push((nr, hook));
    Ok(())
}

/// Whether `retain_grad()` was called on this non-leaf.
pub fn retains_grad(t: &Tensor) -> bool {
    meta(t).is_some_and(|m| m.state().retains_grad)
}

/// `register_hook`: `hook` sees the gradient of `t` whenever one is computed and may return a
/// replacement. Hooks run in registration order, before `retain_grad` stores the gradient.
pub fn register_hook(
    t: &Tensor,
    hook: impl Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
) -> Result<()> {
    if !requires_grad(t) {
        return Err(Error::invalid(
            "register_hook",
            "cannot register a hook on a tensor that doesn't require gradient",
        ));
    }
    let m = meta_or_init(t);
    let mut s = m.state();
    match &s.grad_fn {
        Some(f) => f.core().hooks().tensor_pre.push((s.output_nr, Arc::new(hook))),
        None => s.rare_mut().leaf_hooks.push(Arc::new(hook)),
    }
    Ok(())
}

/// `register_post_accumulate_grad_hook`: runs after a gradient is accumulated into the leaf
/// `t`'s `.grad`, with the leaf.
pub fn register_post_accumulate_grad_hook(
    t: &Tensor,
    hook: impl Fn(&Tensor) -> Result<()> + Send + Sync + 'static,
) -> Result<()> {
    if !is_leaf(t) {
        return Err(Error::invalid(
            "register_post_accumulate_grad_hook",
            "post accumulate grad hooks cannot be registered on non-leaf tensors",
        ));
    }
    if !requires_grad(t) {
        return Err(Error::invalid(
            "register_post_accumulate_grad_hook",
            "cannot register a hook on a tensor that doesn't require gradient",
        ));
    }
    meta_or_init(t).state().rare_mut().post_accumulate_hooks.push(Arc::new(hook));
    Ok(())
}

/// A new tensor sharing `t`'s storage, geometry and version counter, without history
/// (`detach()`).
pub fn detach(t: &Tensor) -> Tensor {
    let imp = t.imp();
    let sizes = c10::tensor_impl::DimVec::from_slice(imp.sizes());
    let strides = c10::tensor_impl::DimVec::from_slice(imp.strides());
    Tensor::from_impl(imp.view_of(sizes, strides, imp.storage_offset()).with_wrapped_number(imp.is_wrapped_number()))
}

/// `detach_()`: drops `t`'s history in place, making it a leaf that does not require grad.
pub fn detach_(t: &Tensor) -> Result<()> {
    if let Some(m) = meta(t) {
        let mut s = m.state();
        s.grad_fn = None;
        s.output_nr = 0;
        m.requires_grad.store(false, Ordering::Relaxed);
    }
    Ok(())
}

/// The name of `t`'s `grad_fn`, or None.
pub fn grad_fn_name(t: &Tensor) -> Option<String> {
    grad_fn(t).map(|f| f.name())
}

/// The view information of `t`, if it is a differentiable view.
pub fn view_info(t: &Tensor) -> Option<ViewInfo> {
    meta(t).and_then(|m| m.state().rare().and_then(|r| r.view.clone()))
}

/// Collects the gradient edges of several tensors (the `next_edges` of a new node).
pub fn collect_next_edges(ts: &[Option<&Tensor>]) -> crate::node::EdgeList {
    ts.iter().map(|t| t.map_or_else(Edge::invalid, gradient_edge)).collect()
}

/// Whether a new operation on these tensors must record history: grad mode is on and some
/// input requires grad.
#[inline]
pub fn compute_requires_grad(ts: &[Option<&Tensor>]) -> bool {
    crate::grad_mode::is_grad_enabled() && ts.iter().any(|t| t.is_some_and(requires_grad))
}

// Note [Small autograd metadata]: one cache line.
const _: () = assert!(std::mem::size_of::<AutogradMeta>() <= 64);
