//! The thread's grad mode flag (PyTorch's `c10/core/GradMode.h`): whether operations record
//! autograd history. It lives here, below the dispatcher, so that layers under autograd can ask
//! it (the dispatcher's profiling ranges carry a sequence number only for calls that record a
//! node); `autograd::grad_mode` has the guards users take.

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// Whether operations record autograd history on this thread.
#[inline]
pub fn is_enabled() -> bool {
    GRAD_ENABLED.with(Cell::get)
}

/// Sets the flag and returns the previous value.
#[inline]
pub fn set_enabled(enabled: bool) -> bool {
    GRAD_ENABLED.with(|g| g.replace(enabled))
}
