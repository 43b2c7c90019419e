//! Module full backward hooks (Note [Module backward hooks]).
//!
//! Note [Module backward hooks]: as in PyTorch's `BackwardHook`, the module's input and output
//! pass through identity autograd functions. The output's identity node runs first during
//! backward and records the gradient of the output; the input's identity node runs when the
//! gradient of the input is known and calls the hooks with `(grad_input, grad_output)`, letting
//! them replace `grad_input`. If the input does not require grad, the output's node calls the
//! hooks itself with `grad_input = [None]`.

use std::sync::{Arc, Mutex};

use aten::Tensor;
use autograd::{Function, FunctionCtx, TensorAutograd};
use c10::Result;

use crate::module::BackwardHook;

#[derive(Default)]
struct Shared {
    grad_output: Option<Vec<Option<Tensor>>>,
}

/// The state shared by the two identity nodes of one module call.
pub(crate) struct BackwardHookState {
    hooks: Arc<Vec<BackwardHook>>,
    shared: Arc<Mutex<Shared>>,
    input_requires_grad: Mutex<bool>,
}

fn run_hooks(
    hooks: &[BackwardHook],
    grad_input: Vec<Option<Tensor>>,
    grad_output: &[Option<Tensor>],
) -> Result<Vec<Option<Tensor>>> {
    let mut gi = grad_input;
    for h in hooks {
        if let Some(new) = h(&gi, grad_output)? {
            gi = new;
        }
    }
    Ok(gi)
}

struct InputHook {
    hooks: Arc<Vec<BackwardHook>>,
    shared: Arc<Mutex<Shared>>,
}

impl Function for InputHook {
    fn name(&self) -> String {
        "BackwardHookFunction".into()
    }
    fn forward(&self, _ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        Ok(inputs.to_vec())
    }
    fn backward(&self, _ctx: &FunctionCtx, grads: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let go = self.shared.lock().unwrap_or_else(|e| e.into_inner()).grad_output.take().unwrap_or_default();
        let gi = run_hooks(&self.hooks, grads.to_vec(), &go)?;
        if gi.len() != grads.len() {
            return Err(c10::Error::InvalidArgument {
                op: "register_full_backward_hook".into(),
                msg: format!(
                    "Backward hook returned an invalid number of grad_input, got {}, but expected {}",
                    gi.len(),
                    grads.len()
                ),
            });
        }
        Ok(gi)
    }
}

struct OutputHook {
    hooks: Arc<Vec<BackwardHook>>,
    shared: Arc<Mutex<Shared>>,
    call_hooks: bool,
}

impl Function for OutputHook {
    fn name(&self) -> String {
        "BackwardHookFunction".into()
    }
    fn forward(&self, _ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        Ok(inputs.to_vec())
    }
    fn backward(&self, _ctx: &FunctionCtx, grads: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        if self.call_hooks {
            run_hooks(&self.hooks, vec![None], grads)?;
        } else {
            self.shared.lock().unwrap_or_else(|e| e.into_inner()).grad_output = Some(grads.to_vec());
        }
        Ok(grads.to_vec())
    }
}

impl BackwardHookState {
    pub(crate) fn new(hooks: Vec<BackwardHook>) -> BackwardHookState {
        BackwardHookState { hooks: Arc::new(hooks), shared: Arc::default(), input_requires_grad: Mutex::new(false) }
    }

    pub(crate) fn wrap_input(&self, x: &Tensor) -> Result<Tensor> {
        if !x.requires_grad() || !autograd::is_grad_enabled() {
            return Ok(x.clone());
        }
        *self.input_requires_grad.lock().unwrap_or_else(|e| e.into_inner()) = true;
        let f = InputHook { hooks: self.hooks.clone(), shared: self.shared.clone() };
        Ok(autograd::custom::apply(f, std::slice::from_ref(x))?.remove(0))
    }

    pub(crate) fn wrap_output(&self, y: &Tensor) -> Result<Tensor> {
        if !y.requires_grad() || !autograd::is_grad_enabled() {
            return Ok(y.clone());
        }
        let call_hooks = !*self.input_requires_grad.lock().unwrap_or_else(|e| e.into_inner());
        let f = OutputHook { hooks: self.hooks.clone(), shared: self.shared.clone(), call_hooks };
        Ok(autograd::custom::apply(f, std::slice::from_ref(y))?.remove(0))
    }
}
