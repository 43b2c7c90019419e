//! [`SavedVariable`]: a tensor kept by a node for its backward formula, with the version check
//! that catches in-place modification between forward and backward.
//!
//! Note [Saved outputs]: a node that saves one of its own outputs must not own that tensor's
//! metadata (which owns the node: a cycle). It keeps a history-less alias of the output and a
//! weak reference to itself, and `unpack` rebuilds a tensor with the node as `grad_fn` (needed
//! when the backward is itself differentiated).
//!
//! Note [Saved inputs]: a saved input must not own the input's metadata either, because an
//! in-place operation can make that input its own output later (`x.addcdiv_(x, y)` saves `x`,
//! then gives `x` the new node as `grad_fn`; an in-place op on a view gives the base a
//! `CopySlices` that holds the op's node): node → saved tensor → metadata → node, a cycle that
//! is never freed. Only a leaf that requires grad is kept as itself (an in-place op on it is an
//! error, so it never gets a `grad_fn`). Any other input is kept as a history-less alias (same
//! storage, same version counter) with the `grad_fn` it had when saved, and `unpack` rebuilds a
//! tensor with that history when grad mode is on (the backward is being differentiated); with
//! grad mode off nothing can record history, so the alias is returned as it is.
//!
//! Note [Saved tensor hooks]: `torch.autograd.graph.saved_tensors_hooks(pack, unpack)`. While a
//! [`saved_tensors_hooks`] guard is alive on a thread, every tensor saved on that thread is
//! given to the innermost pair's `pack` hook, and the node keeps what `pack` returned instead of
//! the tensor; `unpack` turns it back into a tensor when backward needs it (on whatever thread
//! runs the node). The version check still applies: the slot keeps the saved tensor's version
//! counter (not its data) and compares it when unpacking, as PyTorch does. The hooks run with
//! grad mode off. What `unpack` returns must have the saved tensor's sizes, and is what the
//! backward formula sees (FSDP gives back a re-gathered parameter, an offloading hook a copy
//! brought back from the host).

use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use aten::Tensor;
use c10::tensor_impl::VersionCounter;
use c10::{Error, Result};

use crate::node::Node;

/// PyTorch's message for saved tensors used after they were freed.
pub const ERR_BACKWARD_TWICE: &str = "Trying to backward through the graph a second time (or directly access saved \
     tensors after they have already been freed). Saved intermediate values of the graph are freed when you call \
     .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second \
     time or if you need to access saved tensors after calling backward.";

/// What a pack hook turned a saved tensor into (Note [Saved tensor hooks]).
pub type Packed = Box<dyn Any + Send + Sync>;
/// A pack hook: a saved tensor to what the node keeps.
pub type PackHook = Arc<dyn Fn(&Tensor) -> Result<Packed> + Send + Sync>;
/// An unpack hook: what the node kept back to a tensor.
pub type UnpackHook = Arc<dyn Fn(&Packed) -> Result<Tensor> + Send + Sync>;

thread_local! {
    static HOOKS: RefCell<Vec<(PackHook, UnpackHook)>> = const { RefCell::new(Vec::new()) };
}

/// Keeps a pair of saved-tensor hooks installed on this thread; dropping it removes them
/// (the end of PyTorch's `with saved_tensors_hooks(pack, unpack):` block).
#[must_use = "the hooks are removed when the guard is dropped"]
pub struct SavedTensorsHooksGuard {
    depth: usize,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for SavedTensorsHooksGuard {
    fn drop(&mut self) {
        HOOKS.with(|h| h.borrow_mut().truncate(self.depth));
    }
}

/// `torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)`: until the guard is
/// dropped, tensors saved for backward on this thread are packed by `pack` and unpacked by
/// `unpack` (Note [Saved tensor hooks]). Guards nest; the innermost pair applies.
///
/// ```
/// use aten::Tensor;
/// use autograd::saved::saved_tensors_hooks;
/// use autograd::TensorAutograd;
/// use std::sync::Arc;
/// // Keep saved tensors as plain `Vec<f64>`s and rebuild them for backward.
/// let x = Tensor::from_slice(&[1.0f64, 2.0, 3.0]).requires_grad_(true).unwrap();
/// let y = {
///     let _hooks = saved_tensors_hooks(
///         Arc::new(|t: &Tensor| Ok(Box::new(t.to_vec::<f64>()?) as autograd::saved::Packed)),
///         Arc::new(|p: &autograd::saved::Packed| Ok(Tensor::from_slice(p.downcast_ref::<Vec<f64>>().unwrap()))),
///     );
///     x.mul(&x).unwrap() // saves x twice, as Vec<f64>s
/// };
/// y.sum().call().unwrap().backward().unwrap();
/// assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), [2.0, 4.0, 6.0]);
/// ```
pub fn saved_tensors_hooks(pack: PackHook, unpack: UnpackHook) -> SavedTensorsHooksGuard {
    let depth = HOOKS.with(|h| {
        let mut h = h.borrow_mut();
        h.push((pack, unpack));
        h.len() - 1
    });
    SavedTensorsHooksGuard { depth, _not_send: std::marker::PhantomData }
}

/// A saved tensor: the tensor itself, or what a pack hook made of it.
enum Stored {
    Tensor(Tensor),
    Packed {
        packed: Packed,
        unpack: UnpackHook,
        /// The saved tensor's version counter (None for inference tensors, never saved).
        version: Option<VersionCounter>,
        /// For error messages: the saved tensor's type string and sizes.
        what: String,
    },
}

impl Stored {
    /// Packs `t` with the innermost hooks of this thread, or keeps it.
    fn new(t: Tensor) -> Result<Stored> {
        let Some((pack, unpack)) = HOOKS.with(|h| h.borrow().last().cloned()) else {
            return Ok(Stored::Tensor(t));
        };
        let packed = {
            let _g = crate::grad_mode::no_grad();
            pack(&t)?
        };
        Ok(Stored::Packed {
            packed,
            unpack,
            version: t.imp().version_counter().cloned(),
            what: format!("[{} {:?}]", type_string(&t), t.sizes()),
        })
    }

    fn version(&self) -> u32 {
        match self {
            Stored::Tensor(t) => t.version(),
            Stored::Packed { version, .. } => version.as_ref().map_or(0, VersionCounter::current),
        }
    }

    fn describe(&self) -> String {
        match self {
            Stored::Tensor(t) => format!("[{} {:?}]", type_string(t), t.sizes()),
            Stored::Packed { what, .. } => what.clone(),
        }
    }

    /// The tensor, unpacked if it was packed.
    fn get(&self) -> Result<Tensor> {
        match self {
            Stored::Tensor(t) => Ok(t.clone()),
            Stored::Packed { packed, unpack, .. } => {
                let _g = crate::grad_mode::no_grad();
                unpack(packed)
            }
        }
    }
}

struct Saved {
    data: Stored,
    version: u32,
    /// For saved outputs: the node (see Note [Saved outputs]) and output number.
    output_of: Option<(Weak<dyn Node>, u32)>,
    /// For saved inputs with history: their `grad_fn` and output number when saved (see
    /// Note [Saved inputs]), held as an `Edge` so that dropping it never recurses through the
    /// graph (Note [Freeing long graphs]).
    input_of: Option<crate::node::Edge>,
    requires_grad: bool,
}

/// A tensor saved for backward.
pub struct SavedVariable {
    inner: Mutex<Option<Saved>>,
    /// Whether anything was saved (an undefined optional saves nothing, and stays usable). A
    /// slot that never held a tensor is read and released without taking the lock: formulas
    /// whose other input needs no gradient leave one of their two saves empty.
    defined: AtomicBool,
}

impl Default for SavedVariable {
    fn default() -> Self {
        SavedVariable { inner: Mutex::new(None), defined: AtomicBool::new(false) }
    }
}

impl SavedVariable {
    /// Saves an input of the operation.
    pub fn new(t: &Tensor) -> Result<Self> {
        check_not_inference(t)?;
        // Note [Saved inputs].
        let (data, input_of) = if crate::meta::requires_grad(t) && crate::meta::is_leaf(t) {
            (t.clone(), None)
        } else {
            (
                crate::meta::detach(t),
                crate::meta::grad_fn(t).map(|f| crate::node::Edge::new(f, crate::meta::output_nr(t))),
            )
        };
        Ok(SavedVariable {
            inner: Mutex::new(Some(Saved {
                data: Stored::new(data)?,
                version: t.version(),
                output_of: None,
                input_of,
                requires_grad: false,
            })),
            defined: AtomicBool::new(true),
        })
    }

    /// Saves an optional input (None stays None when unpacked).
    pub fn new_opt(t: Option<&Tensor>) -> Result<Self> {
        match t {
            Some(t) => Self::new(t),
            None => Ok(Self::default()),
        }
    }

    /// Saves output `output_nr` of `node` (see Note [Saved outputs]).
    pub fn new_output(t: &Tensor, node: Weak<dyn Node>, output_nr: u32) -> Result<Self> {
        check_not_inference(t)?;
        Ok(SavedVariable {
            inner: Mutex::new(Some(Saved {
                data: Stored::new(crate::meta::detach(t))?,
                version: t.version(),
                output_of: Some((node, output_nr)),
                input_of: None,
                requires_grad: crate::meta::requires_grad(t),
            })),
            defined: AtomicBool::new(true),
        })
    }

    /// Fills a slot created empty with an output saved after the node existed.
    pub fn set_output(&self, t: &Tensor, node: Weak<dyn Node>, output_nr: u32) -> Result<()> {
        let s = Self::new_output(t, node, output_nr)?;
        *self.lock() = s.inner.into_inner().unwrap_or_else(|e| e.into_inner());
        self.defined.store(true, Ordering::Release);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Saved>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The saved tensor, checked against in-place modification; `node_name` names the node
    /// that saved it (for the error message).
    pub fn unpack(&self, node_name: &str) -> Result<Tensor> {
        self.unpack_opt(node_name)?.ok_or_else(|| Error::invalid("backward", ERR_BACKWARD_TWICE))
    }

    /// Like [`SavedVariable::unpack`] for optional tensors: None if nothing was saved.
    pub fn unpack_opt(&self, node_name: &str) -> Result<Option<Tensor>> {
        if !self.defined.load(Ordering::Acquire) {
            return Ok(None);
        }
        let guard = self.lock();
        let Some(s) = guard.as_ref() else {
            return Err(Error::invalid("backward", ERR_BACKWARD_TWICE));
        };
        let current = s.data.version();
        if current != s.version {
            let what = s.data.describe();
            let whose = match &s.output_of {
                Some((_, nr)) => format!("{what}, which is output {nr} of {node_name},"),
                None => what,
            };
            return Err(Error::invalid(
                "backward",
                format!(
                    "one of the variables needed for gradient computation has been modified by an inplace operation: \
                     {whose} is at version {current}; expected version {} instead. Hint: enable anomaly detection to \
                     find the operation that failed to compute its gradient, with \
                     torch.autograd.set_detect_anomaly(True).",
                    s.version
                ),
            ));
        }
        let data = s.data.get()?;
        match &s.output_of {
            Some((node, nr)) if s.requires_grad => match node.upgrade() {
                Some(n) => {
                    let t = crate::meta::detach(&data);
                    crate::meta::set_grad_fn(&t, n, *nr)?;
                    Ok(Some(t))
                }
                None => Ok(Some(data)),
            },
            None => match s.input_of.as_ref().and_then(|e| e.function.as_ref().map(|f| (f, e.input_nr))) {
                Some((f, nr)) if crate::grad_mode::is_grad_enabled() => {
                    let t = crate::meta::detach(&data);
                    crate::meta::set_grad_fn(&t, f.clone(), nr)?;
                    Ok(Some(t))
                }
                _ => Ok(Some(data)),
            },
            _ => Ok(Some(data)),
        }
    }

    /// Frees the saved tensor (after a backward pass without `retain_graph`).
    pub fn reset(&self) {
        if !self.defined.load(Ordering::Acquire) {
            return;
        }
        *self.lock() = None;
    }
}

/// PyTorch's `torch.FloatTensor`-style name of a tensor's type.
fn type_string(t: &Tensor) -> String {
    format!("torch.{}Tensor", t.dtype().legacy_name())
}

/// Inference tensors carry no version counter, so they cannot be checked later.
fn check_not_inference(t: &Tensor) -> Result<()> {
    if t.imp().is_inference() {
        return Err(Error::invalid(
            "save_for_backward",
            "Inference tensors cannot be saved for backward. To work around you can make a clone to get a normal \
             tensor and use it in autograd.",
        ));
    }
    Ok(())
}
