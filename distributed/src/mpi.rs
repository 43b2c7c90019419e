//! The MPI backend of process groups (c10d's `ProcessGroupMPI`), over the system's MPI through
//! rsmpi's bindings.
//!
//! Note [The MPI thread]: as PyTorch's MPI backend.
//! - MPI is initialised (`MPI_THREAD_FUNNELED`) by one thread that this module starts, and only
//!   that thread calls MPI. Every process group of the process queues its operations there,
//!   so they run in the order they were issued; the caller gets a [`Work`].
//! - Collectives block that thread. Point-to-point operations are posted (`MPI_Isend`,
//!   `MPI_Irecv`) and polled between jobs, so `isend` then `recv` on two ranks cannot
//!   deadlock each other.
//! - Before a collective, the ranks agree on it (Note [Agreeing on a collective] in host.rs):
//!   ranks that disagree all get the same error, and nothing is transferred.
//! - Each group has its own communicator (`MPI_Comm_dup` of the world, `MPI_Comm_split` for
//!   `new_group`) whose errors are returned (`MPI_ERRORS_RETURN`), not fatal.
//! - MPI stays initialised until the process exits (an `atexit` handler finalises it), so a
//!   group can be destroyed and created again, as in PyTorch. If the thread is stuck in a
//!   collective that some rank never joined, exit does not wait for it.
//! - Half-precision reductions are user-defined MPI operations over 16-bit words (each pair
//!   is combined in f32 and rounded, like a half-precision add); `AVG` is a sum divided by the
//!   group size afterwards.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use aten::Tensor;
use c10::{bf16, f16, Error, Result, ScalarType};
use mpi::ffi;
use mpi::traits::Communicator;

use crate::host::{
    check_agreement, check_counts, counts_row, describe_collective, dist_error, divide, finish_work, DESC,
};
use crate::process_group::{Backend, Collective, Finish, ReduceOp};
use crate::work::Work;

/// An MPI communicator handle.
#[derive(Clone, Copy)]
struct Comm(ffi::MPI_Comm);
// SAFETY: a communicator handle is an opaque value that MPI lets a program keep anywhere; it is
// only ever passed to MPI on the MPI thread (Note [The MPI thread]).
unsafe impl Send for Comm {}
// SAFETY: as above; the handle is never dereferenced by us.
unsafe impl Sync for Comm {}

type Job = Box<dyn FnOnce(&mut Thread) + Send>;

enum Msg {
    Job(Job),
    /// Finalise MPI and end the thread, then acknowledge.
    Shutdown(mpsc::Sender<()>),
}

struct Runtime {
    tx: Mutex<mpsc::Sender<Msg>>,
    rank: usize,
    size: usize,
}

/// The MPI thread, once started; `Err` once MPI was finalised.
static RUNTIME: Mutex<Option<std::result::Result<Arc<Runtime>, ()>>> = Mutex::new(None);

/// The text of an MPI error code.
fn mpi_error(op: &str, rc: c_int) -> Error {
    let mut buf = [0 as c_char; ffi::MPI_MAX_ERROR_STRING as usize];
    let mut len: c_int = 0;
    // SAFETY: buf has MPI_MAX_ERROR_STRING bytes, as MPI_Error_string requires.
    let ok = unsafe { ffi::MPI_Error_string(rc, buf.as_mut_ptr(), &mut len) } == ffi::MPI_SUCCESS as c_int;
    let text = if ok {
        let bytes: Vec<u8> = buf[..len.clamp(0, buf.len() as c_int) as usize].iter().map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    } else {
        "unknown error".into()
    };
    dist_error(op, format!("MPI error {rc}: {text}"))
}

fn check(op: &str, rc: c_int) -> Result<()> {
    if rc == ffi::MPI_SUCCESS as c_int {
        Ok(())
    } else {
        Err(mpi_error(op, rc))
    }
}

/// An element count as MPI's `int`.
fn count(op: &str, n: usize) -> Result<c_int> {
    c_int::try_from(n).map_err(|_| {
        dist_error(op, format!("the MPI backend moves at most {} elements per call; this call needs {n}", c_int::MAX))
    })
}

fn datatype(dtype: ScalarType) -> ffi::MPI_Datatype {
    // SAFETY: the RSMPI_* handles are constants that mpi-sys initialises from the MPI headers.
    unsafe {
        match dtype {
            ScalarType::U8 => ffi::RSMPI_UINT8_T,
            ScalarType::I8 => ffi::RSMPI_INT8_T,
            ScalarType::I16 => ffi::RSMPI_INT16_T,
            ScalarType::I32 => ffi::RSMPI_INT32_T,
            ScalarType::I64 => ffi::RSMPI_INT64_T,
            ScalarType::F16 | ScalarType::BF16 => ffi::RSMPI_UINT16_T,
            ScalarType::F32 => ffi::RSMPI_FLOAT,
            ScalarType::F64 => ffi::RSMPI_DOUBLE,
            ScalarType::Bool => ffi::RSMPI_C_BOOL,
            ScalarType::C64 => ffi::RSMPI_FLOAT_COMPLEX,
            ScalarType::C128 => ffi::RSMPI_DOUBLE_COMPLEX,
        }
    }
}

fn int64() -> ffi::MPI_Datatype {
    // SAFETY: as in `datatype`.
    unsafe { ffi::RSMPI_INT64_T }
}

/// Defines an MPI user function that combines 16-bit floats in f32.
macro_rules! half_fn {
    ($name:ident, $t:ty, |$a:ident, $b:ident| $e:expr) => {
        unsafe extern "C" fn $name(
            invec: *mut c_void,
            inoutvec: *mut c_void,
            len: *mut c_int,
            _datatype: *mut ffi::MPI_Datatype,
        ) {
            // SAFETY: MPI calls a user function with two buffers of `*len` elements of the
            // datatype of the reduction, which for these functions is 16-bit words holding
            // `$t` values (`datatype`), and the two buffers do not overlap.
            let (input, inout) = unsafe {
                let n = (*len).max(0) as usize;
                (std::slice::from_raw_parts(invec as *const $t, n), std::slice::from_raw_parts_mut(inoutvec as *mut $t, n))
            };
            for (x, y) in input.iter().zip(inout.iter_mut()) {
                let ($a, $b) = (x.to_f32(), y.to_f32());
                *y = <$t>::from_f32($e);
            }
        }
    };
}

/// The minimum that propagates NaN (as `torch.minimum`).
fn nan_min(a: f32, b: f32) -> f32 {
    if a.is_nan() || a < b {
        a
    } else {
        b
    }
}

/// The maximum that propagates NaN (as `torch.maximum`).
fn nan_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || a > b {
        a
    } else {
        b
    }
}

half_fn!(f16_sum, f16, |a, b| a + b);
half_fn!(f16_prod, f16, |a, b| a * b);
half_fn!(f16_min, f16, |a, b| nan_min(a, b));
half_fn!(f16_max, f16, |a, b| nan_max(a, b));
half_fn!(bf16_sum, bf16, |a, b| a + b);
half_fn!(bf16_prod, bf16, |a, b| a * b);
half_fn!(bf16_min, bf16, |a, b| nan_min(a, b));
half_fn!(bf16_max, bf16, |a, b| nan_max(a, b));

/// The state of the MPI thread.
struct Thread {
    /// MPI_IN_PLACE, when the MPI implementation is known (see `in_place_marker`).
    in_place: Option<*mut c_void>,
    /// Sum, product, min, max over f16 and over bf16.
    half_ops: [[ffi::MPI_Op; 4]; 2],
    pending: Vec<Pending>,
}

/// A posted send or receive.
struct Pending {
    request: ffi::MPI_Request,
    /// Keeps the buffer alive until MPI is done with it.
    buf: Tensor,
    /// For a receive: the element count expected.
    recv_count: Option<c_int>,
    work: Work,
    finish: Option<Finish>,
}

/// `MPI_IN_PLACE` is a macro whose value depends on the implementation, and the bindings do
/// not export it: Open MPI's is `(void*)1`, MPICH's (and its derivatives') `(void*)-1`. With
/// another implementation, in-place reductions go through a copy.
fn in_place_marker() -> Option<*mut c_void> {
    let version = mpi::environment::library_version().unwrap_or_default();
    if version.starts_with("Open MPI") {
        Some(std::ptr::without_provenance_mut(1))
    } else if ["MPICH", "Intel", "MVAPICH"].iter().any(|k| version.contains(k)) {
        Some(std::ptr::without_provenance_mut(usize::MAX))
    } else {
        None
    }
}

impl Thread {
    fn new() -> Result<Thread> {
        let fns: [[ffi::MPI_User_function; 4]; 2] = [
            [Some(f16_sum), Some(f16_prod), Some(f16_min), Some(f16_max)],
            [Some(bf16_sum), Some(bf16_prod), Some(bf16_min), Some(bf16_max)],
        ];
        // SAFETY: an MPI_Op handle is plain data; MPI_Op_create overwrites each one.
        let mut half_ops: [[ffi::MPI_Op; 4]; 2] = unsafe { std::mem::zeroed() };
        for (ops, fs) in half_ops.iter_mut().zip(fns) {
            for (op, f) in ops.iter_mut().zip(fs) {
                // SAFETY: f is a valid user function for the lifetime of the program; op is
                // written by MPI.
                check("init_process_group", unsafe { ffi::MPI_Op_create(f, 1, op) })?;
            }
        }
        Ok(Thread { in_place: in_place_marker(), half_ops, pending: Vec::new() })
    }

    /// Runs jobs until a shutdown, polling posted sends and receives in between.
    fn run(&mut self, rx: mpsc::Receiver<Msg>) -> Option<mpsc::Sender<()>> {
        let mut backoff = Duration::from_micros(5);
        loop {
            let msg = if self.pending.is_empty() {
                rx.recv().ok()
            } else {
                match rx.recv_timeout(backoff) {
                    Ok(m) => Some(m),
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        backoff = (backoff * 2).min(Duration::from_millis(1));
                        self.poll();
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => None,
                }
            };
            match msg {
                Some(Msg::Job(job)) => {
                    backoff = Duration::from_micros(5);
                    job(self);
                    self.poll();
                }
                Some(Msg::Shutdown(ack)) => {
                    self.abandon_pending();
                    return Some(ack);
                }
                None => {
                    self.abandon_pending();
                    return None;
                }
            }
        }
    }

    /// Completes the posted operations that MPI has finished.
    fn poll(&mut self) {
        let mut i = 0;
        while i < self.pending.len() {
            let p = &mut self.pending[i];
            let mut flag: c_int = 0;
            // SAFETY: MPI_Status is plain data that MPI_Test fills.
            let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
            // SAFETY: the request was returned by MPI_Isend/MPI_Irecv and is still active; its
            // buffer is kept alive by `p.buf`.
            let rc = unsafe { ffi::MPI_Test(&mut p.request, &mut flag, &mut status) };
            if rc == ffi::MPI_SUCCESS as c_int && flag == 0 {
                i += 1;
                continue;
            }
            let p = self.pending.swap_remove(i);
            let name = p.work.op();
            let mut outcome = check(name, rc).map(|_| None);
            if let (Ok(_), Some(expected)) = (&outcome, p.recv_count) {
                let mut got: c_int = 0;
                // SAFETY: status was filled by MPI_Test for this receive.
                outcome = check(name, unsafe { ffi::MPI_Get_count(&status, datatype(p.buf.dtype()), &mut got) })
                    .and_then(|_| {
                        if got != expected {
                            Err(dist_error(
                                name,
                                format!(
                                    "the message from rank {} has {got} elements, the receiving tensor {expected}",
                                    status.MPI_SOURCE
                                ),
                            ))
                        } else {
                            Ok(Some(status.MPI_SOURCE as usize))
                        }
                    });
            }
            finish_work(&p.work, outcome, p.finish);
        }
    }

    fn abandon_pending(&mut self) {
        for mut p in self.pending.drain(..) {
            // SAFETY: an active request from MPI_Isend/MPI_Irecv; cancelling it is allowed.
            unsafe { ffi::MPI_Cancel(&mut p.request) };
            p.work.complete(Err(dist_error(
                p.work.op(),
                "the process group was shut down before the operation completed",
            )));
        }
    }

    fn mpi_op(&self, op: ReduceOp, dtype: ScalarType) -> ffi::MPI_Op {
        let half = match dtype {
            ScalarType::F16 => Some(0),
            ScalarType::BF16 => Some(1),
            _ => None,
        };
        if let Some(h) = half {
            let k = match op {
                ReduceOp::Sum | ReduceOp::Avg => 0,
                ReduceOp::Product => 1,
                ReduceOp::Min => 2,
                // Bitwise operations are rejected for floats before they get here.
                ReduceOp::Max | ReduceOp::BAnd | ReduceOp::BOr | ReduceOp::BXor => 3,
            };
            return self.half_ops[h][k];
        }
        // SAFETY: the RSMPI_* handles are constants that mpi-sys initialises from the MPI headers.
        unsafe {
            if dtype == ScalarType::Bool {
                return match op {
                    ReduceOp::Sum | ReduceOp::Avg | ReduceOp::Max | ReduceOp::BOr => ffi::RSMPI_LOR,
                    ReduceOp::Product | ReduceOp::Min | ReduceOp::BAnd => ffi::RSMPI_LAND,
                    ReduceOp::BXor => ffi::RSMPI_LXOR,
                };
            }
            match op {
                ReduceOp::Sum | ReduceOp::Avg => ffi::RSMPI_SUM,
                ReduceOp::Product => ffi::RSMPI_PROD,
                ReduceOp::Min => ffi::RSMPI_MIN,
                ReduceOp::Max => ffi::RSMPI_MAX,
                ReduceOp::BAnd => ffi::RSMPI_BAND,
                ReduceOp::BOr => ffi::RSMPI_BOR,
                ReduceOp::BXor => ffi::RSMPI_BXOR,
            }
        }
    }

    /// All ranks all-gather `desc`; an error on every rank when they differ (Note [The MPI
    /// thread]).
    fn agree(&self, comm: Comm, size: usize, name: &str, desc: [i64; DESC]) -> Result<()> {
        let mut all = vec![0i64; DESC * size];
        // SAFETY: desc has DESC elements, all has DESC per rank of the communicator.
        check(name, unsafe {
            ffi::MPI_Allgather(
                desc.as_ptr() as *const c_void,
                DESC as c_int,
                int64(),
                all.as_mut_ptr() as *mut c_void,
                DESC as c_int,
                int64(),
                comm.0,
            )
        })?;
        check_agreement(name, &all, &desc)
    }

    /// Runs a collective, or posts a send or receive.
    fn execute(&mut self, comm: Comm, rank: usize, size: usize, c: Collective, finish: Option<Finish>, work: Work) {
        let name = c.name();
        match c {
            Collective::Send { buf, dst, tag } => self.post(comm, name, buf, dst as c_int, tag, false, work, finish),
            Collective::Recv { buf, src, tag } => {
                // SAFETY: a constant from the MPI headers.
                let any = unsafe { ffi::RSMPI_ANY_SOURCE };
                self.post(comm, name, buf, src.map_or(any, |s| s as c_int), tag, true, work, finish)
            }
            c => {
                let outcome = self.collective(comm, rank, size, c).map(|_| None);
                finish_work(&work, outcome, finish);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn post(
        &mut self,
        comm: Comm,
        name: &str,
        buf: Tensor,
        peer: c_int,
        tag: i32,
        recv: bool,
        work: Work,
        finish: Option<Finish>,
    ) {
        let posted = (|| {
            let n = count(name, buf.numel() as usize)?;
            // SAFETY: MPI_Request is plain data that MPI_Isend/MPI_Irecv fill.
            let mut request: ffi::MPI_Request = unsafe { std::mem::zeroed() };
            let dt = datatype(buf.dtype());
            // SAFETY: buf is a contiguous host tensor of n elements of dt, kept alive (in
            // `Pending`) until the request completes.
            let rc = unsafe {
                if recv {
                    ffi::MPI_Irecv(buf.data_ptr() as *mut c_void, n, dt, peer, tag, comm.0, &mut request)
                } else {
                    ffi::MPI_Isend(buf.data_ptr() as *const c_void, n, dt, peer, tag, comm.0, &mut request)
                }
            };
            check(name, rc)?;
            Ok((request, n))
        })();
        match posted {
            Ok((request, n)) => {
                self.pending.push(Pending { request, buf, recv_count: recv.then_some(n), work, finish });
            }
            Err(e) => work.complete(Err(e)),
        }
    }

    fn collective(&mut self, comm: Comm, rank: usize, size: usize, c: Collective) -> Result<()> {
        let name = c.name();
        if let Some(desc) = describe_collective(&c) {
            self.agree(comm, size, name, desc)?;
        }
        match &c {
            Collective::AllReduce { buf, op } => {
                let mop = self.mpi_op(*op, buf.dtype());
                self.chunked(name, buf, |ptr, n, dt| {
                    self.in_place_reduce(ptr, n, dt, |send, recv| {
                        // SAFETY: send/recv address n elements of dt (or send is MPI_IN_PLACE).
                        unsafe { ffi::MPI_Allreduce(send, recv, n, dt, mop, comm.0) }
                    })
                })?;
                if *op == ReduceOp::Avg {
                    divide(buf, size);
                }
            }
            Collective::Broadcast { buf, root } => {
                self.chunked(name, buf, |ptr, n, dt| {
                    // SAFETY: ptr addresses n elements of dt.
                    unsafe { ffi::MPI_Bcast(ptr, n, dt, *root as c_int, comm.0) }
                })?;
            }
            Collective::Reduce { buf, root, op } => {
                let mop = self.mpi_op(*op, buf.dtype());
                let is_root = rank == *root;
                self.chunked(name, buf, |ptr, n, dt| {
                    if is_root {
                        self.in_place_reduce(ptr, n, dt, |send, recv| {
                            // SAFETY: as for MPI_Allreduce; recv is only read on the root.
                            unsafe { ffi::MPI_Reduce(send, recv, n, dt, mop, *root as c_int, comm.0) }
                        })
                    } else {
                        // SAFETY: ptr addresses n elements of dt; the receive buffer is not
                        // used on other ranks.
                        unsafe { ffi::MPI_Reduce(ptr, std::ptr::null_mut(), n, dt, mop, *root as c_int, comm.0) }
                    }
                })?;
                if is_root && *op == ReduceOp::Avg {
                    divide(buf, size);
                }
            }
            Collective::AllGather { input, output } => {
                let n = count(name, output.numel() as usize).and(count(name, input.numel() as usize))?;
                let dt = datatype(input.dtype());
                // SAFETY: input has n elements, output n per rank, both of dt.
                check(name, unsafe {
                    ffi::MPI_Allgather(
                        input.data_ptr() as *const c_void,
                        n,
                        dt,
                        output.data_ptr() as *mut c_void,
                        n,
                        dt,
                        comm.0,
                    )
                })?;
            }
            Collective::Gather { input, output, root } => {
                let n = count(name, input.numel() as usize * size).and(count(name, input.numel() as usize))?;
                let dt = datatype(input.dtype());
                let out = output.as_ref().map_or(std::ptr::null_mut(), |o| o.data_ptr() as *mut c_void);
                // SAFETY: input has n elements; out (root only) n per rank.
                check(name, unsafe {
                    ffi::MPI_Gather(input.data_ptr() as *const c_void, n, dt, out, n, dt, *root as c_int, comm.0)
                })?;
            }
            Collective::Scatter { input, output, root } => {
                let n = count(name, output.numel() as usize * size).and(count(name, output.numel() as usize))?;
                let dt = datatype(output.dtype());
                let inp = input.as_ref().map_or(std::ptr::null(), |i| i.data_ptr() as *const c_void);
                // SAFETY: inp (root only) has n elements per rank; output has n.
                check(name, unsafe {
                    ffi::MPI_Scatter(inp, n, dt, output.data_ptr() as *mut c_void, n, dt, *root as c_int, comm.0)
                })?;
            }
            Collective::ReduceScatter { input, output, op } => {
                let n = count(name, input.numel() as usize).and(count(name, output.numel() as usize))?;
                let dt = datatype(output.dtype());
                let mop = self.mpi_op(*op, output.dtype());
                // SAFETY: input has n elements per rank, output n.
                check(name, unsafe {
                    ffi::MPI_Reduce_scatter_block(
                        input.data_ptr() as *const c_void,
                        output.data_ptr() as *mut c_void,
                        n,
                        dt,
                        mop,
                        comm.0,
                    )
                })?;
                if *op == ReduceOp::Avg {
                    divide(output, size);
                }
            }
            Collective::AllToAll { input, send_counts, output, recv_counts } => {
                self.agree_counts(comm, size, name, send_counts, recv_counts)?;
                let to_int = |v: &[usize]| v.iter().map(|&n| count(name, n)).collect::<Result<Vec<c_int>>>();
                let displs = |v: &[usize]| {
                    let mut at = 0usize;
                    v.iter()
                        .map(|&n| {
                            let d = count(name, at);
                            at += n;
                            d
                        })
                        .collect::<Result<Vec<c_int>>>()
                };
                let (sc, rc) = (to_int(send_counts)?, to_int(recv_counts)?);
                let (sd, rd) = (displs(send_counts)?, displs(recv_counts)?);
                let dt = datatype(input.dtype());
                // SAFETY: counts and displacements describe runs inside input and output.
                check(name, unsafe {
                    ffi::MPI_Alltoallv(
                        input.data_ptr() as *const c_void,
                        sc.as_ptr(),
                        sd.as_ptr(),
                        dt,
                        output.data_ptr() as *mut c_void,
                        rc.as_ptr(),
                        rd.as_ptr(),
                        dt,
                        comm.0,
                    )
                })?;
            }
            Collective::Barrier => {
                // SAFETY: a valid communicator.
                check(name, unsafe { ffi::MPI_Barrier(comm.0) })?;
            }
            Collective::Send { .. } | Collective::Recv { .. } => unreachable!("posted, not run"),
        }
        Ok(())
    }

    /// Every rank checks every pair of an all-to-all: what `i` sends to `j` is what `j`
    /// expects from `i`.
    fn agree_counts(&self, comm: Comm, size: usize, name: &str, send: &[usize], recv: &[usize]) -> Result<()> {
        let mine = counts_row(send, recv);
        let mut all = vec![0i64; 2 * size * size];
        // SAFETY: mine has 2*size elements, all has 2*size per rank.
        check(name, unsafe {
            ffi::MPI_Allgather(
                mine.as_ptr() as *const c_void,
                (2 * size) as c_int,
                int64(),
                all.as_mut_ptr() as *mut c_void,
                (2 * size) as c_int,
                int64(),
                comm.0,
            )
        })?;
        check_counts(name, size, &all)
    }

    /// Runs `f(ptr, n, datatype)` over pieces of `buf` of at most `c_int::MAX` elements.
    fn chunked(
        &self,
        name: &str,
        buf: &Tensor,
        mut f: impl FnMut(*mut c_void, c_int, ffi::MPI_Datatype) -> c_int,
    ) -> Result<()> {
        let total = buf.numel() as usize;
        let es = buf.dtype().size();
        let dt = datatype(buf.dtype());
        let mut at = 0usize;
        while at < total || (total == 0 && at == 0) {
            let n = (total - at).min(c_int::MAX as usize);
            // SAFETY: at < total (or both 0), so the offset stays inside the buffer.
            let ptr = unsafe { buf.data_ptr().add(at * es) } as *mut c_void;
            check(name, f(ptr, n as c_int, dt))?;
            if total == 0 {
                break;
            }
            at += n;
        }
        Ok(())
    }

    /// Calls `f(send, recv)` for an in-place reduction into `ptr`: with MPI_IN_PLACE when the
    /// implementation is known, else from a copy.
    fn in_place_reduce(
        &self,
        ptr: *mut c_void,
        n: c_int,
        dt: ffi::MPI_Datatype,
        f: impl FnOnce(*const c_void, *mut c_void) -> c_int,
    ) -> c_int {
        match self.in_place {
            Some(marker) => f(marker as *const c_void, ptr),
            None => {
                let mut size: c_int = 0;
                // SAFETY: dt is a valid datatype.
                unsafe { ffi::MPI_Type_size(dt, &mut size) };
                let bytes = n as usize * size as usize;
                // SAFETY: ptr addresses n elements of dt, i.e. `bytes` bytes.
                let copy: Vec<u8> = unsafe { std::slice::from_raw_parts(ptr as *const u8, bytes) }.to_vec();
                f(copy.as_ptr() as *const c_void, ptr)
            }
        }
    }

    fn dup_world(&self) -> Result<Comm> {
        // SAFETY: MPI_Comm is a plain handle that MPI_Comm_dup fills.
        let mut comm: ffi::MPI_Comm = unsafe { std::mem::zeroed() };
        // SAFETY: the world communicator exists while MPI is initialised.
        check("init_process_group", unsafe { ffi::MPI_Comm_dup(ffi::RSMPI_COMM_WORLD, &mut comm) })?;
        set_errors_return(Comm(comm))?;
        Ok(Comm(comm))
    }

    fn split(&self, parent: Comm, member: Option<usize>) -> Result<Option<Comm>> {
        // SAFETY: MPI_Comm is a plain handle that MPI_Comm_split fills.
        let mut comm: ffi::MPI_Comm = unsafe { std::mem::zeroed() };
        // SAFETY: a constant from the MPI headers.
        let undefined = unsafe { ffi::RSMPI_UNDEFINED };
        let (color, key) = member.map_or((undefined, 0), |k| (0, k as c_int));
        // SAFETY: parent is a valid communicator; every member of it calls this.
        check("new_group", unsafe { ffi::MPI_Comm_split(parent.0, color, key, &mut comm) })?;
        if member.is_none() {
            return Ok(None);
        }
        set_errors_return(Comm(comm))?;
        Ok(Some(Comm(comm)))
    }
}

fn set_errors_return(comm: Comm) -> Result<()> {
    // SAFETY: comm is a valid communicator; ERRORS_RETURN is a predefined handler.
    check("init_process_group", unsafe { ffi::MPI_Comm_set_errhandler(comm.0, ffi::RSMPI_ERRORS_RETURN) })
}

impl Runtime {
    /// Starts the MPI thread (once per process).
    fn get() -> Result<Arc<Runtime>> {
        let mut slot = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
        match &*slot {
            Some(Ok(rt)) => return Ok(rt.clone()),
            Some(Err(())) => {
                return Err(dist_error("init_process_group", "MPI was finalized; it cannot be initialized again"))
            }
            None => {}
        }
        let (tx, rx) = mpsc::channel::<Msg>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(usize, usize)>>();
        std::thread::Builder::new()
            .name("mpi".into())
            .spawn(move || {
                let Some((universe, level)) = mpi::initialize_with_threading(mpi::Threading::Funneled) else {
                    let _ = ready_tx
                        .send(Err(dist_error("init_process_group", "MPI was already initialized by someone else")));
                    return;
                };
                if level == mpi::Threading::Single {
                    let _ = ready_tx.send(Err(dist_error(
                        "init_process_group",
                        "the MPI library supports only MPI_THREAD_SINGLE; the MPI backend needs MPI_THREAD_FUNNELED",
                    )));
                    return;
                }
                let world = universe.world();
                let ids = (world.rank() as usize, world.size() as usize);
                let mut thread = match Thread::new() {
                    Ok(t) => t,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(ids));
                let ack = thread.run(rx);
                drop(thread);
                // Finalises MPI.
                drop(universe);
                if let Some(ack) = ack {
                    let _ = ack.send(());
                }
            })
            .map_err(|e| dist_error("init_process_group", format!("cannot start the MPI thread: {e}")))?;
        let (rank, size) = ready_rx
            .recv()
            .map_err(|_| dist_error("init_process_group", "the MPI thread ended during initialization"))??;
        let rt = Arc::new(Runtime { tx: Mutex::new(tx), rank, size });
        *slot = Some(Ok(rt.clone()));
        // SAFETY: `finalize_at_exit` is an `extern "C" fn()` that stays valid until exit.
        unsafe { libc::atexit(finalize_at_exit) };
        Ok(rt)
    }

    fn send(&self, job: Job) -> bool {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).send(Msg::Job(job)).is_ok()
    }

    /// Runs `f` on the MPI thread and returns its result.
    fn call<R: Send + 'static>(
        &self,
        op: &str,
        timeout: Duration,
        f: impl FnOnce(&mut Thread) -> Result<R> + Send + 'static,
    ) -> Result<R> {
        let (tx, rx) = mpsc::channel();
        let job: Job = Box::new(move |t| {
            let _ = tx.send(f(t));
        });
        let gone = || dist_error(op, "the MPI thread has ended");
        if !self.send(job) {
            return Err(gone());
        }
        match rx.recv_timeout(timeout) {
            Ok(r) => r,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(Error::DistTimeout {
                op: op.into(),
                msg: format!("not every rank took part within the timeout of {}ms", timeout.as_millis()),
            }),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(gone()),
        }
    }
}

/// Finalises MPI when the process exits (Note [The MPI thread]): waits a little for the MPI
/// thread, never forever.
extern "C" fn finalize_at_exit() {
    let rt = {
        let mut slot = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
        match slot.replace(Err(())) {
            Some(Ok(rt)) => rt,
            _ => return,
        }
    };
    let (ack_tx, ack_rx) = mpsc::channel();
    if rt.tx.lock().unwrap_or_else(|e| e.into_inner()).send(Msg::Shutdown(ack_tx)).is_ok() {
        let _ = ack_rx.recv_timeout(Duration::from_secs(10));
    }
}

/// A process group's MPI communicator.
struct MpiBackend {
    rt: Arc<Runtime>,
    comm: Comm,
    rank: usize,
    size: usize,
}

impl Drop for MpiBackend {
    fn drop(&mut self) {
        let comm = self.comm;
        // Freeing is local in MPI; if the thread has ended, MPI is finalised and so is the handle.
        self.rt.send(Box::new(move |_| {
            // (Binding `comm` whole makes the closure capture the Send wrapper, not its field.)
            let whole: Comm = comm;
            let mut raw = whole.0;
            // SAFETY: the communicator came from MPI_Comm_dup/MPI_Comm_split and is freed once.
            unsafe { ffi::MPI_Comm_free(&mut raw) };
        }));
    }
}

impl Backend for MpiBackend {
    fn name(&self) -> &'static str {
        "mpi"
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn submit(&self, c: Collective, finish: Option<Finish>, timeout: Duration) -> Work {
        let work = Work::pending(c.name(), timeout);
        let (w, comm, rank, size) = (work.clone(), self.comm, self.rank, self.size);
        let job: Job = Box::new(move |t| {
            let w2 = w.clone();
            if catch_unwind(AssertUnwindSafe(|| t.execute(comm, rank, size, c, finish, w))).is_err() {
                w2.complete(Err(dist_error(w2.op(), "the MPI backend panicked running this operation")));
            }
        });
        if !self.rt.send(job) {
            work.complete(Err(dist_error(work.op(), "the MPI thread has ended (MPI was finalized)")));
        }
        work
    }

    fn split(&self, ranks: &[usize], timeout: Duration) -> Result<Option<Arc<dyn Backend>>> {
        let member = ranks.iter().position(|&r| r == self.rank);
        let parent = self.comm;
        let comm = self.rt.call("new_group", timeout, move |t| t.split(parent, member))?;
        Ok(comm.map(|comm| {
            Arc::new(MpiBackend { rt: self.rt.clone(), comm, rank: member.unwrap_or(0), size: ranks.len() })
                as Arc<dyn Backend>
        }))
    }
}

/// The world group of the MPI backend: every process that `mpirun` started.
pub(crate) fn world(timeout: Duration) -> Result<(Arc<dyn Backend>, usize, usize)> {
    let rt = Runtime::get()?;
    let comm = rt.call("init_process_group", timeout, |t| t.dup_world())?;
    let (rank, size) = (rt.rank, rt.size);
    Ok((Arc::new(MpiBackend { rt, comm, rank, size }), rank, size))
}
