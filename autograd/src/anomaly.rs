//! Anomaly mode (`torch.autograd.detect_anomaly`): nodes record the forward backtrace that
//! created them, and the engine checks every gradient a node returns for NaN, naming the node
//! and showing that backtrace when a check or a node fails.

use std::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether anomaly mode is on.
pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Turns anomaly mode on or off (`torch.autograd.set_detect_anomaly`); returns the previous
/// setting.
pub fn set_detect_anomaly(on: bool) -> bool {
    ENABLED.swap(on, Ordering::Relaxed)
}

/// Anomaly mode until dropped (`with torch.autograd.detect_anomaly():`).
#[must_use = "anomaly mode ends when the guard is dropped"]
pub struct DetectAnomalyGuard {
    prev: bool,
}

/// Enters anomaly mode until the guard is dropped.
pub fn detect_anomaly() -> DetectAnomalyGuard {
    DetectAnomalyGuard { prev: set_detect_anomaly(true) }
}

impl Drop for DetectAnomalyGuard {
    fn drop(&mut self) {
        set_detect_anomaly(self.prev);
    }
}

/// The current backtrace, as recorded for a node created in anomaly mode.
pub(crate) fn capture_trace() -> String {
    std::backtrace::Backtrace::force_capture().to_string()
}
