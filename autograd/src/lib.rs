//! Autograd: PyTorch's model of reverse-mode differentiation, as a dispatch layer.
//!
//! Every tensor carries the `Autograd<Backend>` key. The kernels registered there (generated
//! from `autograd/derivatives.yaml`) check whether an input requires grad; if so they build a
//! backward [`Node`] that saves what its formulas need, run the operator below autograd, and
//! make the node the `grad_fn` of the outputs. [`backward`] and [`grad`] run the graph with the
//! [engine](engine), which sums gradients per input, orders nodes by sequence number and, with
//! `create_graph`, records the backward itself, so gradients of gradients work.
//! Operators without a formula get a fallback that fails at backward time, naming them.
//!
//! ```
//! use aten::Tensor;
//! use autograd::TensorAutograd;
//! let x = Tensor::from_slice(&[1.0f64, 2.0, 3.0]).requires_grad_(true).unwrap();
//! let y = x.mul(&x).unwrap().sum().call().unwrap();
//! y.backward().unwrap();
//! assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![2.0, 4.0, 6.0]);
//! ```
#![warn(missing_docs)]

pub mod accumulate;
pub mod anomaly;
pub mod custom;
pub mod decompositions;
pub mod engine;
pub mod formulas;
pub mod generated;
pub mod grad_mode;
pub mod gradcheck;
pub mod kernel_support;
pub mod linalg_formulas;
pub mod meta;
pub mod node;
pub mod profiler;
pub mod saved;
pub mod views;

mod fallback;

use aten::Tensor;
use c10::Result;

pub use anomaly::{detect_anomaly, set_detect_anomaly};
pub use custom::{Function, FunctionCtx};
pub use engine::{backward, grad};
pub use grad_mode::{enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled};
pub use gradcheck::{gradcheck, gradgradcheck, GradcheckOptions};
pub use node::{Edge, Node, NodeRef};

/// Registers the generated autograd kernels and the fallback for operators without formulas.
fn register_autograd(d: &aten::Dispatcher) {
    d.register_fallback(
        c10::DispatchKey::AutogradFunctionality,
        aten::KernelFunction::from_boxed(fallback::autograd_fallback),
    )
    .expect("per-backend key");
    generated::kernels::register_all(d);
}

inventory::submit! { aten::dispatcher::Registrar(register_autograd) }

/// Autograd's methods on [`Tensor`] (`requires_grad_`, `backward`, `grad`, ...), as PyTorch
/// has them on `torch.Tensor`.
pub trait TensorAutograd: Sized {
    /// Marks a leaf as needing gradients (`x.requires_grad_(True)`); returns the tensor.
    fn requires_grad_(self, flag: bool) -> Result<Self>;
    /// Whether the tensor requires grad.
    fn requires_grad(&self) -> bool;
    /// Whether the tensor is a leaf (no `grad_fn`).
    fn is_leaf(&self) -> bool;
    /// The accumulated gradient.
    fn grad(&self) -> Option<Tensor>;
    /// Sets or clears `.grad`.
    fn set_grad(&self, g: Option<Tensor>) -> Result<()>;
    /// The node that produced the tensor.
    fn grad_fn(&self) -> Option<NodeRef>;
    /// `backward()` of a one-element tensor.
    fn backward(&self) -> Result<()>;
    /// `backward(gradient, retain_graph, create_graph)`.
    fn backward_with(&self, gradient: Option<&Tensor>, retain_graph: Option<bool>, create_graph: bool) -> Result<()>;
    /// A tensor sharing the data, without history.
    fn detach(&self) -> Tensor;
    /// Drops the history in place.
    fn detach_(&self) -> Result<()>;
    /// Keeps the gradient of a non-leaf in `.grad`.
    fn retain_grad(&self) -> Result<()>;
    /// Whether `retain_grad` was called.
    fn retains_grad(&self) -> bool;
    /// Adds a hook that sees (and may replace) the tensor's gradient.
    fn register_hook(&self, hook: impl Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static) -> Result<()>;
    /// Adds a hook that runs after a gradient was accumulated into the leaf's `.grad`.
    fn register_post_accumulate_grad_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<()> + Send + Sync + 'static,
    ) -> Result<()>;
}

impl TensorAutograd for Tensor {
    fn requires_grad_(self, flag: bool) -> Result<Self> {
        meta::set_requires_grad(&self, flag)?;
        Ok(self)
    }
    fn requires_grad(&self) -> bool {
        meta::requires_grad(self)
    }
    fn is_leaf(&self) -> bool {
        meta::is_leaf(self)
    }
    fn grad(&self) -> Option<Tensor> {
        meta::grad(self)
    }
    fn set_grad(&self, g: Option<Tensor>) -> Result<()> {
        meta::set_grad(self, g)
    }
    fn grad_fn(&self) -> Option<NodeRef> {
        meta::grad_fn(self)
    }
    fn backward(&self) -> Result<()> {
        engine::backward(std::slice::from_ref(self), &[], None, false, &[])
    }
    fn backward_with(&self, gradient: Option<&Tensor>, retain_graph: Option<bool>, create_graph: bool) -> Result<()> {
        engine::backward(std::slice::from_ref(self), &[gradient.cloned()], retain_graph, create_graph, &[])
    }
    fn detach(&self) -> Tensor {
        meta::detach(self)
    }
    fn detach_(&self) -> Result<()> {
        meta::detach_(self)
    }
    fn retain_grad(&self) -> Result<()> {
        meta::retain_grad(self)
    }
    fn retains_grad(&self) -> bool {
        meta::retains_grad(self)
    }
    fn register_hook(&self, hook: impl Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static) -> Result<()> {
        meta::register_hook(self, hook)
    }
    fn register_post_accumulate_grad_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<()> + Send + Sync + 'static,
    ) -> Result<()> {
        meta::register_post_accumulate_grad_hook(self, hook)
    }
}
