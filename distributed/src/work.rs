//! `Work`: the handle of a collective or point-to-point operation in flight (c10d's `Work`).
//!
//! A backend runs operations on its own thread and completes their `Work` there; the caller
//! waits on it. `wait` returns the operation's error (on every rank, for a collective whose
//! inputs the ranks disagree on), or [`Error::DistTimeout`] when the operation did not finish
//! within the process group's timeout: a rank that never arrives is an error, never a hang.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use c10::{Error, Result};

/// What a finished operation produced: for `recv`, the rank the message came from.
pub(crate) type Outcome = Result<Option<usize>>;

struct State {
    outcome: Option<Outcome>,
}

struct Inner {
    op: &'static str,
    timeout: Duration,
    state: Mutex<State>,
    done: Condvar,
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
    #[cfg_attr(not(any(feature = "mpi", feature = "cuda")), allow(dead_code))]
    pub(crate) fn pending(op: &'static str, timeout: Duration) -> Work {
        Work {
            inner: Arc::new(Inner { op, timeout, state: Mutex::new(State { outcome: None }), done: Condvar::new() }),
        }
    }

    /// Records the outcome (the first one wins) and wakes the waiters.
    #[cfg_attr(not(any(feature = "mpi", feature = "cuda")), allow(dead_code))]
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
    /// After a successful `wait` the output tensors hold the result.
    pub fn wait(&self) -> Result<()> {
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
