//! Running a case so that a panic in an operator becomes a failure message instead of a
//! backtrace on stderr: [`QuietPanics`] swaps in a panic hook for the duration of a run and
//! [`catch`] runs one case under it.
//!
//! Note [Quiet panic hook]: the hook is process-wide, but only panics on a thread that is inside
//! [`catch`] are silenced (their location is kept for the message); any other panic goes to the
//! previous hook, so concurrent tests and bugs in the runner itself still print normally. Panics
//! on helper threads (rayon workers of large kernels) are not silenced for the same reason.
//! Installs are counted so that overlapping runs (parallel tests) restore the original hook once.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe, PanicHookInfo};
use std::sync::{Arc, Mutex, PoisonError};

type Hook = dyn Fn(&PanicHookInfo<'_>) + Send + Sync + 'static;

/// How many [`QuietPanics`] are alive, and the hook to restore when none is.
static INSTALLED: Mutex<(usize, Option<Arc<Hook>>)> = Mutex::new((0, None));

thread_local! {
    /// Whether this thread is inside [`catch`].
    static IN_CASE: Cell<bool> = const { Cell::new(false) };
    /// Where the last silenced panic of this thread happened.
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Keeps the quiet panic hook installed while alive (see Note [Quiet panic hook]).
pub struct QuietPanics(());

impl QuietPanics {
    /// Installs the quiet hook (or counts one more user of it).
    pub fn install() -> QuietPanics {
        let mut state = INSTALLED.lock().unwrap_or_else(PoisonError::into_inner);
        if state.0 == 0 {
            let previous: Arc<Hook> = Arc::from(panic::take_hook());
            let delegate = Arc::clone(&previous);
            panic::set_hook(Box::new(move |info| {
                if IN_CASE.with(Cell::get) {
                    let at = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
                    LOCATION.with(|l| *l.borrow_mut() = at);
                } else {
                    delegate(info);
                }
            }));
            state.1 = Some(previous);
        }
        state.0 += 1;
        QuietPanics(())
    }
}

impl Drop for QuietPanics {
    fn drop(&mut self) {
        let mut state = INSTALLED.lock().unwrap_or_else(PoisonError::into_inner);
        state.0 -= 1;
        // Replacing the hook while unwinding would abort; the quiet hook forwards panics outside
        // cases anyway, so leaving it in place is harmless.
        if state.0 == 0 && !std::thread::panicking() {
            if let Some(previous) = state.1.take() {
                drop(panic::take_hook());
                panic::set_hook(Box::new(move |info| previous(info)));
            }
        }
    }
}

/// The text of a panic payload.
fn payload_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

/// Runs `f`, turning a panic into `Err("panicked: MESSAGE at FILE:LINE")`.
pub fn catch<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    IN_CASE.with(|c| c.set(true));
    LOCATION.with(|l| l.borrow_mut().take());
    let r = panic::catch_unwind(AssertUnwindSafe(f));
    IN_CASE.with(|c| c.set(false));
    r.unwrap_or_else(|payload| {
        let msg = payload_message(payload.as_ref());
        Err(match LOCATION.with(|l| l.borrow_mut().take()) {
            Some(at) => format!("panicked: {msg} at {at}"),
            None => format!("panicked: {msg}"),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_messages() {
        let _quiet = QuietPanics::install();
        let e = catch::<()>(|| panic!("boom {}", 7)).unwrap_err();
        assert!(e.starts_with("panicked: boom 7 at ") && e.contains("panics.rs:"), "{e}");
        let e = catch::<()>(|| std::panic::panic_any(3u8)).unwrap_err();
        assert!(e.starts_with("panicked: (non-string panic payload)"), "{e}");
        assert_eq!(catch(|| Ok::<_, String>(5)), Ok(5));
        assert_eq!(catch::<()>(|| Err("plain".into())), Err("plain".to_string()));
    }
}
