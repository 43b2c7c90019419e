//! Grad mode and inference mode: thread-local switches with RAII guards that restore the
//! previous state when dropped (also during unwinding).
//!
//! Grad mode does not change dispatch: the autograd kernels still run, but with grad mode off
//! they record nothing (`compute_requires_grad` is false). Inference mode goes further: it
//! turns grad mode off and removes the autograd keys from dispatch (in-place operations on
//! normal tensors still bump their versions), and tensors created inside
//! it have no version counter and cannot be saved for backward.

use c10::ExcludeDispatchKeyGuard;

/// Whether operations record autograd history on this thread (`torch.is_grad_enabled()`).
#[inline]
pub fn is_grad_enabled() -> bool {
    c10::grad_mode::is_enabled()
}

/// Sets grad mode until the returned guard is dropped (`torch.set_grad_enabled(mode)`).
#[must_use = "grad mode is restored when the guard is dropped"]
pub fn set_grad_enabled(enabled: bool) -> GradModeGuard {
    GradModeGuard { prev: c10::grad_mode::set_enabled(enabled) }
}

/// `torch.no_grad()`: no history is recorded until the guard is dropped.
///
/// ```
/// let _g = autograd::no_grad();
/// assert!(!autograd::is_grad_enabled());
/// ```
#[must_use = "grad mode is restored when the guard is dropped"]
pub fn no_grad() -> GradModeGuard {
    set_grad_enabled(false)
}

/// `torch.enable_grad()`: history is recorded until the guard is dropped (inside `no_grad`).
#[must_use = "grad mode is restored when the guard is dropped"]
pub fn enable_grad() -> GradModeGuard {
    set_grad_enabled(true)
}

/// Restores the previous grad mode when dropped.
#[derive(Debug)]
pub struct GradModeGuard {
    prev: bool,
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        c10::grad_mode::set_enabled(self.prev);
    }
}

/// `torch.inference_mode()`: grad mode off, the autograd and ADInplaceOrView keys excluded from
/// dispatch, and new tensors created as inference tensors (no version counter, no autograd
/// keys) until the guard is dropped.
#[must_use = "inference mode ends when the guard is dropped"]
pub struct InferenceModeGuard {
    _grad: GradModeGuard,
    _keys: ExcludeDispatchKeyGuard,
    _tensors: c10::tensor_impl::InferenceTensorsGuard,
}

/// Enters inference mode (see [`InferenceModeGuard`]).
pub fn inference_mode() -> InferenceModeGuard {
    InferenceModeGuard {
        _grad: set_grad_enabled(false),
        _keys: ExcludeDispatchKeyGuard::below_autograd(),
        _tensors: c10::tensor_impl::InferenceTensorsGuard::new(),
    }
}
