//! Custom autograd functions (`torch.autograd.Function`): a [`Function`] gives `forward` and
//! `backward`; [`apply`] runs `forward` without recording, then makes one node whose backward
//! calls the function's `backward` with the context `forward` filled.
//!
//! ```
//! use aten::{ops, Tensor};
//! use autograd::{custom, Function, FunctionCtx, TensorAutograd};
//! use c10::{Result, Scalar};
//!
//! /// A clamp to [-1, 1] whose gradient passes straight through.
//! struct StraightThroughClamp;
//! impl Function for StraightThroughClamp {
//!     fn forward(&self, _ctx: &mut FunctionCtx, x: &[Tensor]) -> Result<Vec<Tensor>> {
//!         Ok(vec![ops::clamp(&x[0], Some(Scalar::Float(-1.0)), Some(Scalar::Float(1.0)))?])
//!     }
//!     fn backward(&self, _ctx: &FunctionCtx, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
//!         Ok(vec![g[0].clone()])
//!     }
//! }
//! let x = Tensor::from_slice(&[-3.0f64, 0.5]).requires_grad_(true).unwrap();
//! let y = custom::apply(StraightThroughClamp, &[x.clone()]).unwrap().remove(0);
//! assert_eq!(y.to_vec::<f64>().unwrap(), vec![-1.0, 0.5]);
//! y.sum().call().unwrap().backward().unwrap();
//! assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![1.0, 1.0]);
//! ```

use std::any::Any;
use std::sync::{Arc, Mutex};

use aten::Tensor;
use c10::{Error, Result};

use crate::node::{Grads, Node, NodeCore, NodeRef};
use crate::saved::SavedVariable;

/// What `forward` leaves for `backward`.
#[derive(Default)]
pub struct FunctionCtx {
    to_save: Vec<Tensor>,
    saved: Vec<SavedVariable>,
    needs_input_grad: Vec<bool>,
    dirty: Vec<Tensor>,
    non_differentiable: Vec<Tensor>,
    node_name: String,
    /// Anything else `backward` needs (sizes, scalars, ...).
    pub data: Option<Box<dyn Any + Send + Sync>>,
}

impl FunctionCtx {
    /// Keeps tensors for `backward` (inputs or outputs), version-checked when unpacked.
    pub fn save_for_backward(&mut self, ts: &[Tensor]) {
        self.to_save = ts.to_vec();
    }
    /// The tensors given to `save_for_backward`; an error if one was modified in place since.
    pub fn saved_tensors(&self) -> Result<Vec<Tensor>> {
        self.saved.iter().map(|s| s.unpack(&self.node_name)).collect()
    }
    /// Whether input `i` needs a gradient.
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.needs_input_grad.get(i).copied().unwrap_or(false)
    }
    /// Declares inputs that `forward` modified in place.
    pub fn mark_dirty(&mut self, ts: &[Tensor]) {
        self.dirty.extend(ts.iter().cloned());
    }
    /// Declares outputs that have no gradient (e.g. indices).
    pub fn mark_non_differentiable(&mut self, ts: &[Tensor]) {
        self.non_differentiable.extend(ts.iter().cloned());
    }
}

/// A differentiable function defined by its forward and backward passes.
pub trait Function: Send + Sync + 'static {
    /// The node name (`<Name>Backward`); the type name by default.
    fn name(&self) -> String {
        let full = std::any::type_name::<Self>();
        full.rsplit("::").next().unwrap_or(full).to_string()
    }
    /// Computes the outputs (grad mode is off inside).
    fn forward(&self, ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>>;
    /// The gradients of the inputs (one per input; None = zero) from those of the outputs
    /// (None = zero).
    fn backward(&self, ctx: &FunctionCtx, grad_outputs: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>>;
}

struct CustomNode<F: Function> {
    core: NodeCore,
    f: F,
    ctx: Mutex<FunctionCtx>,
    n_inputs: usize,
}

impl<F: Function> Node for CustomNode<F> {
    fn name(&self) -> String {
        format!("{}Backward", self.f.name())
    }
    fn core(&self) -> &NodeCore {
        &self.core
    }
    fn apply(&self, grads: Grads) -> Result<Grads> {
        let ctx = self.ctx.lock().unwrap_or_else(|e| e.into_inner());
        let r = self.f.backward(&ctx, &grads)?;
        if r.len() != self.n_inputs {
            return Err(Error::invalid(
                "backward",
                format!(
                    "function {} returned an incorrect number of gradients (expected {}, got {})",
                    self.name(),
                    self.n_inputs,
                    r.len()
                ),
            ));
        }
        Ok(r.into())
    }
    fn release_variables(&self) {
        let ctx = self.ctx.lock().unwrap_or_else(|e| e.into_inner());
        ctx.saved.iter().for_each(SavedVariable::reset);
    }
}

/// Runs `f` on `inputs` and, if an input requires grad (and grad mode is on), records one node
/// for all outputs (`Function.apply`).
pub fn apply<F: Function>(f: F, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    let mut ctx = FunctionCtx {
        needs_input_grad: inputs.iter().map(crate::meta::requires_grad).collect(),
        node_name: format!("{}Backward", f.name()),
        ..FunctionCtx::default()
    };
    let record = crate::meta::compute_requires_grad(&inputs.iter().map(Some).collect::<Vec<_>>());
    let outputs = {
        let _g = crate::grad_mode::no_grad();
        f.forward(&mut ctx, inputs)?
    };
    if !record {
        ctx.saved = ctx.to_save.iter().map(SavedVariable::new).collect::<Result<_>>()?;
        return Ok(outputs);
    }
    let edges = crate::meta::collect_next_edges(&inputs.iter().map(Some).collect::<Vec<_>>());
    for d in &ctx.dirty {
        crate::kernel_support::check_inplace(d)?;
    }
    let to_save = std::mem::take(&mut ctx.to_save);
    let dirty = std::mem::take(&mut ctx.dirty);
    let non_diff = std::mem::take(&mut ctx.non_differentiable);
    let node = Arc::new(CustomNode { core: NodeCore::new(edges), f, ctx: Mutex::new(ctx), n_inputs: inputs.len() });
    let node_ref: NodeRef = node.clone();
    let mut results = Vec::with_capacity(outputs.len());
    for (i, out) in outputs.into_iter().enumerate() {
        let is_input = inputs.iter().any(|t| t.is_same(&out));
        let is_dirty = dirty.iter().any(|t| t.is_same(&out));
        // An input returned unchanged becomes a new tensor (an alias) with this node's history.
        let out = if is_input && !is_dirty { crate::meta::detach(&out) } else { out };
        let differentiable = !non_diff.iter().any(|t| t.is_same(&out));
        if is_dirty {
            node_ref.core().add_input_metadata(&out);
            crate::meta::set_grad_fn(&out, node_ref.clone(), i as u32)?;
        } else {
            crate::kernel_support::set_history(&out, &node_ref, i as u32, differentiable)?;
        }
        results.push(out);
    }
    let mut saved = Vec::with_capacity(to_save.len());
    for t in &to_save {
        match results.iter().position(|o| o.is_same(t)) {
            Some(i) => saved.push(SavedVariable::new_output(t, Arc::downgrade(&node_ref), i as u32)?),
            None => saved.push(SavedVariable::new(t)?),
        }
    }
    node.ctx.lock().unwrap_or_else(|e| e.into_inner()).saved = saved;
    Ok(results)
}
