//! The NCCL backend of process groups (the `cuda` feature): collectives on CUDA tensors
//! through NCCL, loaded at run time by cudarc.
//!
//! Note [The NCCL backend]: as PyTorch's `ProcessGroupNCCL`, simplified where a GPU-only detail
//! does not change what a program sees.
//! - One communicator per group on one device: `LOCAL_RANK` when the launcher set it, else
//!   `rank % device_count` (PyTorch's guess when no device was bound). Rank 0 makes the NCCL
//!   unique id and publishes it in the rendezvous store; the others read it from there with the
//!   store's timeout. `new_group` splits the communicator (`ncclCommSplit`).
//! - Tensors stay on the device: the process group packs lists into device buffers, and the
//!   backend enqueues the NCCL calls on the tensors' current stream, so they are ordered after
//!   the kernels that produced the inputs and before those that read the outputs, with no
//!   stream-to-stream events. Copies that unpack an output run right after, on the same stream.
//! - The `Work` completes when an event recorded after the operation has completed. A watchdog
//!   thread per communicator queries the events in issue order, checks `ncclCommGetAsyncError`,
//!   and, when an operation has not finished within the group's timeout, aborts the
//!   communicator (`ncclCommAbort`): every pending and later operation of the group is then an
//!   error, never a hang.
//! - Unlike the MPI backend, the ranks do not first agree on what they call (PyTorch's NCCL
//!   backend does not either, unless `TORCH_DISTRIBUTED_DEBUG=DETAIL`): an all-gather of a
//!   description before every operation would cost a device round trip. Mismatched calls
//!   wait until the watchdog's timeout, which aborts the communicator.
//! - NCCL has no tags and no receive from any source; `recv` without a source is an error, a
//!   tag is ignored. It has no bitwise reductions and no 16-bit integers: errors, as PyTorch.
//!   Booleans travel as bytes; SUM and MAX reduce them with MAX (a logical or), PRODUCT and
//!   MIN with MIN (a logical and).
//! - Everything here needs a real device: the emulated one has no NCCL, and saying so is the
//!   error at `init_process_group`.
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use aten::Tensor;
use c10::{Device, DeviceType, Error, Result, ScalarType};
use cudarc::nccl::sys as nccl;
use kernels_cuda::driver::{driver, Driver, EventId, StreamId};

use crate::process_group::{Backend, Collective, Finish, ReduceOp};
use crate::store::Store;
use crate::work::Work;

fn dist_error(op: &str, msg: impl Into<String>) -> Error {
    Error::Distributed { op: op.into(), msg: msg.into() }
}

/// An NCCL result as an error.
fn check(op: &str, r: nccl::ncclResult_t) -> Result<()> {
    if r == nccl::ncclResult_t::ncclSuccess {
        return Ok(());
    }
    // SAFETY: ncclGetErrorString returns a static NUL-terminated string for any result.
    let text = unsafe { CStr::from_ptr(nccl::ncclGetErrorString(r)) }.to_string_lossy().into_owned();
    Err(dist_error(op, format!("NCCL error: {text} ({r:?})")))
}

/// An NCCL communicator handle.
#[derive(Clone, Copy)]
struct Comm(nccl::ncclComm_t);
// SAFETY: an NCCL communicator may be used from any thread as long as calls on it are not
// concurrent; every enqueue happens under `Shared::enqueue`'s lock, and the watchdog only
// queries its asynchronous error or aborts it, which NCCL allows concurrently.
unsafe impl Send for Comm {}
// SAFETY: see the Send impl.
unsafe impl Sync for Comm {}

/// What the watchdog waits for: one enqueued operation.
struct Watch {
    event: EventId,
    work: Work,
    deadline: Instant,
    /// For a `recv`: the rank the message comes from.
    source: Option<usize>,
    /// The operation's tensors, alive until the device is done with them.
    _keep: Vec<Tensor>,
}

/// A communicator and its device, shared by the backend and its watchdog.
struct Shared {
    comm: Comm,
    device: usize,
    /// Serialises the calls that enqueue on the communicator.
    enqueue: Mutex<()>,
    /// Set when the watchdog aborted the communicator.
    aborted: AtomicBool,
    watch: Mutex<Option<mpsc::Sender<Watch>>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if !self.aborted.load(Ordering::SeqCst) {
            // SAFETY: the communicator came from ncclCommInitRank/ncclCommSplit and is destroyed
            // once; the watchdog has ended (it holds no reference to it).
            unsafe { nccl::ncclCommDestroy(self.comm.0) };
        }
    }
}

struct NcclBackend {
    shared: Arc<Shared>,
    rank: usize,
    size: usize,
}

fn datatype(op: &str, dtype: ScalarType) -> Result<nccl::ncclDataType_t> {
    use nccl::ncclDataType_t::*;
    Ok(match dtype {
        ScalarType::U8 | ScalarType::Bool => ncclUint8,
        ScalarType::I8 => ncclInt8,
        ScalarType::I32 => ncclInt32,
        ScalarType::I64 => ncclInt64,
        ScalarType::F16 => ncclFloat16,
        ScalarType::BF16 => ncclBfloat16,
        ScalarType::F32 => ncclFloat32,
        ScalarType::F64 => ncclFloat64,
        ScalarType::I16 => {
            return Err(dist_error(op, format!("Unsupported data type for NCCL process group: {}", dtype.name())))
        }
    })
}

fn redop(op: &str, r: ReduceOp, dtype: ScalarType) -> Result<nccl::ncclRedOp_t> {
    use nccl::ncclRedOp_t::*;
    if dtype == ScalarType::Bool {
        return match r {
            ReduceOp::Sum | ReduceOp::Max => Ok(ncclMax),
            ReduceOp::Product | ReduceOp::Min => Ok(ncclMin),
            _ => Err(dist_error(op, format!("Cannot use ReduceOp.{} with NCCL on bool tensors", r.name()))),
        };
    }
    match r {
        ReduceOp::Sum => Ok(ncclSum),
        ReduceOp::Avg => Ok(ncclAvg),
        ReduceOp::Product => Ok(ncclProd),
        ReduceOp::Min => Ok(ncclMin),
        ReduceOp::Max => Ok(ncclMax),
        ReduceOp::BAnd | ReduceOp::BOr | ReduceOp::BXor => {
            Err(dist_error(op, format!("Cannot use ReduceOp.{} with NCCL", r.name())))
        }
    }
}

/// The device memory of `t`, which must be a CUDA tensor on the group's device.
fn device_ptr(op: &str, t: &Tensor, device: usize) -> Result<*mut c_void> {
    let d = t.device();
    if d.ty != DeviceType::Cuda || d.index as usize != device {
        return Err(dist_error(
            op,
            format!("Tensors must be CUDA tensors on the group's device cuda:{device}, got one on {d}"),
        ));
    }
    Ok(t.data_ptr() as *mut c_void)
}

/// One point-to-point transfer of a grouped operation: a buffer, an element count, the peer.
enum Move {
    Send(*mut c_void, usize, usize),
    Recv(*mut c_void, usize, usize),
}

/// Runs `moves` as one NCCL group (gather, scatter and all-to-all are grouped sends and
/// receives). The group is always closed, also after a failed call.
///
/// # Safety
/// Each buffer addresses its count of `dt` elements on the communicator's device, alive until
/// the operation completes on `stream`; the caller holds the enqueue lock.
unsafe fn grouped(
    name: &str,
    moves: &[Move],
    dt: nccl::ncclDataType_t,
    comm: nccl::ncclComm_t,
    stream: nccl::cudaStream_t,
) -> Result<()> {
    // SAFETY: opening a group has no preconditions.
    check(name, unsafe { nccl::ncclGroupStart() })?;
    let mut result = nccl::ncclResult_t::ncclSuccess;
    for m in moves {
        // SAFETY: the buffers are valid for their counts (this function's contract).
        result = unsafe {
            match *m {
                Move::Send(p, count, peer) => nccl::ncclSend(p, count, dt, peer as c_int, comm, stream),
                Move::Recv(p, count, peer) => nccl::ncclRecv(p, count, dt, peer as c_int, comm, stream),
            }
        };
        if result != nccl::ncclResult_t::ncclSuccess {
            break;
        }
    }
    // SAFETY: closes the group opened above.
    let end = unsafe { nccl::ncclGroupEnd() };
    check(name, result)?;
    check(name, end)
}

impl NcclBackend {
    /// Enqueues `c` on `stream` (the caller holds the enqueue lock, the device is current).
    fn enqueue(&self, c: &Collective, stream: nccl::cudaStream_t) -> Result<Option<usize>> {
        let name = c.name();
        let comm = self.shared.comm.0;
        let dev = self.shared.device;
        let ptr = |t: &Tensor| device_ptr(name, t, dev);
        let dt = |t: &Tensor| datatype(name, t.dtype());
        let n = |t: &Tensor| t.numel() as usize;
        // SAFETY: (every call below) the pointers address contiguous device buffers of the
        // counts given (the process group checked the sizes), alive until the watchdog sees
        // the operation's event (`Watch::_keep`); the communicator is valid and not used
        // concurrently (enqueue lock); the stream belongs to the communicator's device.
        unsafe {
            match c {
                Collective::AllReduce { buf, op } => {
                    let p = ptr(buf)?;
                    check(
                        name,
                        nccl::ncclAllReduce(p, p, n(buf), dt(buf)?, redop(name, *op, buf.dtype())?, comm, stream),
                    )?;
                }
                Collective::Broadcast { buf, root } => {
                    let p = ptr(buf)?;
                    check(name, nccl::ncclBroadcast(p, p, n(buf), dt(buf)?, *root as c_int, comm, stream))?;
                }
                Collective::Reduce { buf, root, op } => {
                    let p = ptr(buf)?;
                    let o = redop(name, *op, buf.dtype())?;
                    check(name, nccl::ncclReduce(p, p, n(buf), dt(buf)?, o, *root as c_int, comm, stream))?;
                }
                Collective::AllGather { input, output } => {
                    check(name, nccl::ncclAllGather(ptr(input)?, ptr(output)?, n(input), dt(input)?, comm, stream))?;
                }
                Collective::ReduceScatter { input, output, op } => {
                    let o = redop(name, *op, input.dtype())?;
                    check(
                        name,
                        nccl::ncclReduceScatter(ptr(input)?, ptr(output)?, n(output), dt(input)?, o, comm, stream),
                    )?;
                }
                Collective::Barrier => unreachable!("a barrier is an all_reduce of one element"),
                Collective::Gather { input, output, root } => {
                    // Every rank sends to the root; the root receives block `peer` from each.
                    let (count, es) = (n(input), input.dtype().size());
                    let mut moves = vec![Move::Send(ptr(input)?, count, *root)];
                    if let (Some(out), true) = (output, self.rank == *root) {
                        let out = ptr(out)? as *mut u8;
                        moves.extend(
                            (0..self.size).map(|peer| Move::Recv(out.add(peer * count * es).cast(), count, peer)),
                        );
                    }
                    grouped(name, &moves, dt(input)?, comm, stream)?;
                }
                Collective::Scatter { input, output, root } => {
                    // The root sends block `peer` to each; every rank receives from the root.
                    let (count, es) = (n(output), output.dtype().size());
                    let mut moves = Vec::new();
                    if let (Some(inp), true) = (input, self.rank == *root) {
                        let inp = ptr(inp)? as *mut u8;
                        moves.extend(
                            (0..self.size).map(|peer| Move::Send(inp.add(peer * count * es).cast(), count, peer)),
                        );
                    }
                    moves.push(Move::Recv(ptr(output)?, count, *root));
                    grouped(name, &moves, dt(output)?, comm, stream)?;
                }
                Collective::AllToAll { input, send_counts, output, recv_counts } => {
                    let es = input.dtype().size();
                    let (src, dst) = (ptr(input)? as *mut u8, ptr(output)? as *mut u8);
                    let (mut s_at, mut r_at) = (0usize, 0usize);
                    let mut moves = Vec::with_capacity(2 * self.size);
                    for peer in 0..self.size {
                        moves.push(Move::Send(src.add(s_at * es).cast(), send_counts[peer], peer));
                        moves.push(Move::Recv(dst.add(r_at * es).cast(), recv_counts[peer], peer));
                        s_at += send_counts[peer];
                        r_at += recv_counts[peer];
                    }
                    grouped(name, &moves, dt(input)?, comm, stream)?;
                }
                Collective::Send { buf, dst, .. } => {
                    check(name, nccl::ncclSend(ptr(buf)?, n(buf), dt(buf)?, *dst as c_int, comm, stream))?;
                }
                Collective::Recv { buf, src, .. } => {
                    let Some(src) = src else {
                        return Err(dist_error(name, "NCCL cannot receive from any source: give the source rank"));
                    };
                    check(name, nccl::ncclRecv(ptr(buf)?, n(buf), dt(buf)?, *src as c_int, comm, stream))?;
                    return Ok(Some(*src));
                }
            }
        }
        Ok(None)
    }

    /// The tensors an operation reads or writes.
    fn tensors(c: &Collective) -> Vec<Tensor> {
        match c {
            Collective::AllReduce { buf, .. }
            | Collective::Broadcast { buf, .. }
            | Collective::Reduce { buf, .. }
            | Collective::Send { buf, .. }
            | Collective::Recv { buf, .. } => vec![buf.clone()],
            Collective::AllGather { input, output }
            | Collective::ReduceScatter { input, output, .. }
            | Collective::AllToAll { input, output, .. } => vec![input.clone(), output.clone()],
            Collective::Gather { input, output, .. } => std::iter::once(input.clone()).chain(output.clone()).collect(),
            Collective::Scatter { input, output, .. } => input.iter().cloned().chain([output.clone()]).collect(),
            Collective::Barrier => Vec::new(),
        }
    }

    fn run(&self, c: Collective, finish: Option<Finish>, timeout: Duration, work: &Work) -> Result<()> {
        let name = c.name();
        if self.shared.aborted.load(Ordering::SeqCst) {
            return Err(dist_error(
                name,
                "the NCCL communicator was aborted after an earlier operation failed or timed out",
            ));
        }
        let d = driver()?;
        let device = Device::cuda(self.shared.device as i8);
        // A barrier is an all-reduce of one element on the device, as in PyTorch.
        let c = match c {
            Collective::Barrier => Collective::AllReduce {
                buf: aten::ops::zeros(&[1], Some(ScalarType::F32), None, Some(device), None)?,
                op: ReduceOp::Sum,
            },
            c => c,
        };
        let stream = StreamId(kernels_cuda::runtime::current_stream(device)?.id);
        let event = d.event_create(self.shared.device, false)?;
        let enqueued = (|| {
            let _lock = self.shared.enqueue.lock().unwrap_or_else(|e| e.into_inner());
            d.make_current(self.shared.device)?;
            let source = self.enqueue(&c, stream.0 as nccl::cudaStream_t)?;
            if let Some(f) = finish {
                f()?;
            }
            d.event_record(event, self.shared.device, stream)?;
            Ok::<_, Error>(source)
        })();
        let source = match enqueued {
            Ok(s) => s,
            Err(e) => {
                d.event_destroy(event);
                return Err(e);
            }
        };
        let keep = Self::tensors(&c);
        let watch = Watch { event, work: work.clone(), deadline: Instant::now() + timeout, source, _keep: keep };
        let sent = self.shared.watch.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|tx| tx.send(watch));
        if !matches!(sent, Some(Ok(()))) {
            return Err(dist_error(name, "the NCCL watchdog has ended"));
        }
        Ok(())
    }
}

impl Backend for NcclBackend {
    fn name(&self) -> &'static str {
        "nccl"
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn device_buffers(&self) -> bool {
        true
    }
    fn submit(&self, c: Collective, finish: Option<Finish>, timeout: Duration) -> Work {
        let work = Work::pending(c.name(), timeout);
        if let Err(e) = self.run(c, finish, timeout, &work) {
            work.complete(Err(e));
        }
        work
    }

    fn split(&self, ranks: &[usize], _timeout: Duration) -> Result<Option<Arc<dyn Backend>>> {
        let member = ranks.iter().position(|&r| r == self.rank);
        let d = driver()?;
        let mut comm: nccl::ncclComm_t = std::ptr::null_mut();
        {
            let _lock = self.shared.enqueue.lock().unwrap_or_else(|e| e.into_inner());
            d.make_current(self.shared.device)?;
            // NCCL_SPLIT_NOCOLOR: this rank is not part of the new communicator.
            let (color, key) = member.map_or((-1, 0), |k| (0, k as c_int));
            // SAFETY: every rank of the parent communicator calls this (new_group's contract);
            // a null config inherits the parent's.
            check("new_group", unsafe {
                nccl::ncclCommSplit(self.shared.comm.0, color, key, &mut comm, std::ptr::null_mut())
            })?;
        }
        let Some(rank) = member else { return Ok(None) };
        let shared = start(Comm(comm), self.shared.device);
        Ok(Some(Arc::new(NcclBackend { shared, rank, size: ranks.len() }) as Arc<dyn Backend>))
    }
}

/// Starts the watchdog of `comm` (Note [The NCCL backend]).
fn start(comm: Comm, device: usize) -> Arc<Shared> {
    let (tx, rx) = mpsc::channel::<Watch>();
    let shared = Arc::new(Shared {
        comm,
        device,
        enqueue: Mutex::new(()),
        aborted: AtomicBool::new(false),
        watch: Mutex::new(Some(tx)),
    });
    let weak = Arc::downgrade(&shared);
    let spawned = std::thread::Builder::new().name("nccl-watchdog".into()).spawn(move || watchdog(rx, weak, comm));
    if spawned.is_err() {
        // Without a watchdog no work completes: every submit reports it.
        *shared.watch.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
    shared
}

/// Completes the works of `rx` in order as their events complete; aborts the communicator on
/// an asynchronous NCCL error or a timeout.
fn watchdog(rx: mpsc::Receiver<Watch>, shared: std::sync::Weak<Shared>, comm: Comm) {
    let Ok(d) = driver() else { return };
    let mut queue: VecDeque<Watch> = VecDeque::new();
    let mut failed: Option<Error> = None;
    loop {
        let next = if queue.is_empty() {
            match rx.recv() {
                Ok(w) => Some(w),
                Err(_) => return,
            }
        } else {
            match rx.recv_timeout(Duration::from_micros(200)) {
                Ok(w) => Some(w),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => None,
            }
        };
        queue.extend(next);
        while let Some(w) = queue.front() {
            if let Some(e) = &failed {
                w.work.complete(Err(e.clone()));
            } else {
                match d.event_query(w.event) {
                    Ok(true) => w.work.complete(Ok(w.source)),
                    Ok(false) => {
                        let async_err = async_error(&shared, comm);
                        let error = if async_err != nccl::ncclResult_t::ncclSuccess
                            && async_err != nccl::ncclResult_t::ncclInProgress
                        {
                            check(w.work.op(), async_err).err()
                        } else if Instant::now() >= w.deadline {
                            Some(Error::DistTimeout {
                                op: w.work.op().into(),
                                msg: "the NCCL operation did not complete within the process group's timeout; the \
                                      communicator was aborted"
                                    .into(),
                            })
                        } else {
                            None
                        };
                        let Some(e) = error else { break };
                        if let Some(s) = shared.upgrade() {
                            if !s.aborted.swap(true, Ordering::SeqCst) {
                                // SAFETY: aborting is allowed while operations are in flight; the
                                // communicator is not destroyed afterwards (`aborted`).
                                unsafe { nccl::ncclCommAbort(comm.0) };
                            }
                        }
                        w.work.complete(Err(e.clone()));
                        failed = Some(e);
                    }
                    Err(e) => {
                        w.work.complete(Err(e.clone()));
                        failed = Some(e);
                    }
                }
            }
            let w = queue.pop_front().expect("front exists");
            d.event_destroy(w.event);
        }
    }
}

/// The communicator's asynchronous error (success once the backend is gone).
fn async_error(shared: &std::sync::Weak<Shared>, comm: Comm) -> nccl::ncclResult_t {
    let mut result = nccl::ncclResult_t::ncclSuccess;
    // Held while querying, so that the communicator is not destroyed meanwhile.
    let Some(alive) = shared.upgrade() else { return result };
    if !alive.aborted.load(Ordering::SeqCst) {
        // SAFETY: the communicator is alive (`alive` keeps it) and not aborted; querying its
        // error concurrently with enqueues is allowed by NCCL.
        unsafe { nccl::ncclCommGetAsyncError(comm.0, &mut result) };
    }
    result
}

/// The device of this rank: `LOCAL_RANK` if set, else `rank % device_count`.
fn pick_device(d: &dyn Driver, rank: usize) -> Result<usize> {
    let count = d.device_count();
    if count == 0 {
        return Err(dist_error("init_process_group", "the NCCL backend needs a CUDA device; none was found"));
    }
    let local = std::env::var("LOCAL_RANK").ok().and_then(|v| v.trim().parse::<usize>().ok());
    Ok(local.unwrap_or(rank) % count)
}

/// The world group of the NCCL backend over `store` (Note [The NCCL backend]).
pub(crate) fn world(store: &dyn Store, rank: usize, size: usize) -> Result<Arc<dyn Backend>> {
    let name = "init_process_group";
    let d = driver()?;
    if d.name() != "cuda" {
        return Err(dist_error(
            name,
            format!("the NCCL backend needs a real CUDA device; the {} driver has no NCCL", d.name()),
        ));
    }
    // SAFETY: only probes whether libnccl can be loaded, as cudarc requires before any call.
    if !unsafe { nccl::is_culib_present() } {
        return Err(dist_error(name, "the NCCL backend needs libnccl.so.2, which could not be loaded"));
    }
    let device = pick_device(d, rank)?;
    let key = "nccl/unique_id";
    let id = if rank == 0 {
        let mut id = nccl::ncclUniqueId { internal: [0; 128] };
        // SAFETY: id is a valid ncclUniqueId for NCCL to fill.
        check(name, unsafe { nccl::ncclGetUniqueId(&mut id) })?;
        store.set(key, &id.internal.iter().map(|&c| c as u8).collect::<Vec<u8>>())?;
        id
    } else {
        let bytes = store.get(key)?;
        if bytes.len() != 128 {
            return Err(dist_error(
                name,
                format!("the NCCL unique id in the store has {} bytes, not 128", bytes.len()),
            ));
        }
        let mut id = nccl::ncclUniqueId { internal: [0; 128] };
        for (c, b) in id.internal.iter_mut().zip(bytes) {
            *c = b as std::ffi::c_char;
        }
        id
    };
    d.make_current(device)?;
    let mut comm: nccl::ncclComm_t = std::ptr::null_mut();
    // SAFETY: every rank calls this with the same id and world size and its own rank; the
    // device's context is current on this thread.
    check(name, unsafe { nccl::ncclCommInitRank(&mut comm, size as c_int, id, rank as c_int) })?;
    Ok(Arc::new(NcclBackend { shared: start(Comm(comm), device), rank, size }))
}
