//! `Work`: the handle of a collective or point-to-point operation in flight (c10d's `Work`).
//!
//! A backend runs operations on its own thread and completes their `Work` there; the caller
//! waits on it. `wait` returns the operation's error (on every rank, for a collective whose
//! inputs the ranks disagree on), or [`Error::DistTimeout`] when the operation did not finish
//! within the process group's timeout: a rank that never arrives is an error, never a hang.

use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use c10::{Error, Result};

/// What a finished operation produced: for `recv`, the rank the message came from.
pub(crate) type Outcome = Result<Option<usize>>;

struct State {
    outcome: Option<Outcome>,
}

/// Makes the caller's current stream wait for a device operation (Note [The NCCL stream]).
pub(crate) type DeviceWait = Box<dyn Fn() -> Result<()> + Send + Sync>;

struct Inner {
    op: &'static str,
    timeout: Duration,
    state: Mutex<State>,
    done: Condvar,
    /// For an operation on a device stream: what `wait` does instead of blocking the host.
    device_wait: OnceLock<DeviceWait>,
}

/// The handle of an operation that a process group runs asynchronously (PyTorch's
/// `async_op=True` result). Dropping it does not cancel the operation.
#[derive(Clone)]
pub struct Work {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Work {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Work").field("op", &self.inner.op).field("completed", &self.is_completed()).finish()
    }
}

impl Work {
    /// A pending operation named `op` whose `wait` gives up after `timeout`.
    #[cfg_attr(not(any(feature = "mpi", feature = "cuda", feature = "gloo")), allow(dead_code))]
    pub(crate) fn pending(op: &'static str, timeout: Duration) -> Work {
        Work {
            inner: Arc::new(Inner {
                op,
                timeout,
                state: Mutex::new(State { outcome: None }),
                done: Condvar::new(),
                device_wait: OnceLock::new(),
            }),
        }
    }

    /// Makes [`Work::wait`] order the caller's current stream after the operation instead of
    /// blocking the host (set once, by a backend whose operations run on a device stream).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn set_device_wait(&self, wait: DeviceWait) {
        let _ = self.inner.device_wait.set(wait);
    }

    /// Records the outcome (the first one wins) and wakes the waiters.
    #[cfg_attr(not(any(feature = "mpi", feature = "cuda", feature = "gloo")), allow(dead_code))]
    pub(crate) fn complete(&self, outcome: Outcome) {
        let mut s = self.inner.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.outcome.is_none() {
            s.outcome = Some(outcome);
        }
        self.inner.done.notify_all();
    }

    /// The operation's name (`all_reduce`, `recv`, ...).
    pub fn op(&self) -> &'static str {
        self.inner.op
    }

    /// Whether the operation has finished, successfully or not.
    pub fn is_completed(&self) -> bool {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner()).outcome.is_some()
    }

    /// Whether the operation has finished successfully.
    pub fn is_success(&self) -> bool {
        matches!(self.inner.state.lock().unwrap_or_else(|e| e.into_inner()).outcome, Some(Ok(_)))
    }

    /// The error the operation finished with, if it has finished with one.
    pub fn exception(&self) -> Option<Error> {
        match &self.inner.state.lock().unwrap_or_else(|e| e.into_inner()).outcome {
            Some(Err(e)) => Some(e.clone()),
            _ => None,
        }
    }

    /// Waits for the operation, at most the process group's timeout, and returns its error.
    /// After a successful `wait` the output tensors hold the result. For an operation on a
    /// device stream (NCCL), as PyTorch's `work.wait()`: the caller's current stream waits for
    /// it and the host does not, so later work on that stream (reading the outputs too) sees
    /// the result; an operation that already failed returns its error, a later failure shows in
    /// the next operation of the group (Note [The NCCL stream]).
    pub fn wait(&self) -> Result<()> {
        if let Some(device_wait) = self.inner.device_wait.get() {
            if let Some(outcome) = &self.inner.state.lock().unwrap_or_else(|e| e.into_inner()).outcome {
                return outcome.clone().map(|_| ());
            }
            return device_wait();
        }
        self.wait_timeout(self.inner.timeout)
    }

    /// Waits at most `timeout` (see [`Work::wait`]).
    pub fn wait_timeout(&self, timeout: Duration) -> Result<()> {
        self.outcome(timeout).map(|_| ())
    }

    /// For a `recv` from any source: waits and returns the rank the message came from
    /// (PyTorch's `work._source_rank()`).
    pub fn source_rank(&self) -> Result<usize> {
        self.outcome(self.inner.timeout)?.ok_or_else(|| Error::Distributed {
            op: self.inner.op.into(),
            msg: "source_rank is only defined for a recv".into(),
        })
    }

    fn outcome(&self, timeout: Duration) -> Result<Option<usize>> {
        let deadline = Instant::now() + timeout;
        let mut s = self.inner.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(outcome) = &s.outcome {
                return outcome.clone();
            }
            let now = Instant::now();
            if now >= deadline {
                tracing::warn!(
                    target: "torch::distributed",
                    op = self.inner.op,
                    timeout_ms = timeout.as_millis() as u64,
                    "collective timed out"
                );
                return Err(Error::DistTimeout {
                    op: self.inner.op.into(),
                    msg: format!(
                        "the operation did not complete within the timeout of {}ms (a rank did not take part, \
                         or the ranks called collectives in different orders); the process group cannot be used \
                         after this",
                        timeout.as_millis()
                    ),
                });
            }
            s = self.inner.done.wait_timeout(s, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Note [The NCCL stream]: a work with a device wait does not block the host in `wait`; it
    /// runs the device wait while the operation is pending, and reports the outcome once there
    /// is one. `wait_timeout` still blocks the host.
    #[test]
    fn a_device_work_waits_on_the_stream_not_the_host() {
        let calls = Arc::new(AtomicUsize::new(0));
        let work = Work::pending("all_reduce", Duration::from_secs(3600));
        let seen = calls.clone();
        work.set_device_wait(Box::new(move || {
            seen.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }));
        let start = Instant::now();
        work.wait().unwrap();
        assert!(start.elapsed() < Duration::from_secs(60), "wait returned without the operation finishing");
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(!work.is_completed());
        let e = work.wait_timeout(Duration::from_millis(20)).unwrap_err();
        assert!(matches!(e, Error::DistTimeout { .. }), "{e:?}");
        // A failed operation reports its error and no longer waits on the stream.
        work.complete(Err(Error::Distributed { op: "all_reduce".into(), msg: "NCCL error".into() }));
        assert!(work.wait().unwrap_err().to_string().contains("NCCL error"));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // A host work still blocks until its outcome (here, its timeout).
        let host = Work::pending("all_reduce", Duration::from_millis(20));
        assert!(matches!(host.wait().unwrap_err(), Error::DistTimeout { .. }));
    }
}
