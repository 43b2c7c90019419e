//! The NCCL backend of process groups (the `cuda` feature): collectives on CUDA tensors
//! through NCCL, loaded at run time.
//!
//! Note [The NCCL backend]: as PyTorch's `ProcessGroupNCCL`, simplified where a GPU-only detail
//! does not change what a program sees.
//! - NCCL is `dlopen`ed at `init_process_group` (`libnccl.so.2`, the name its runtime packages
//!   ship, else `libnccl.so`), so building needs no NCCL and a binary runs without it. cudarc's
//!   loader is not used: it looks for `libnccl.so.<CUDA major>` but never `.so.2`. Functions
//!   and codes are C `int`s here, never Rust enums filled from C.
//! - One communicator per group on one device: `LOCAL_RANK` when the launcher set it, else
//!   `rank % device_count` (PyTorch's guess when no device was bound); that device becomes the
//!   calling thread's current CUDA device. Rank 0 makes the NCCL unique id and publishes it in
//!   the rendezvous store under a key numbered per initialisation, and deletes it once every
//!   rank has joined; the others read it with the store's timeout. `new_group` splits the
//!   communicator (`ncclCommSplit`, NCCL 2.18 or newer).
//! - Tensors stay on the device: the process group packs lists into buffers on the group's
//!   device (and rejects tensors elsewhere).
//! - Note [The NCCL stream]: as in PyTorch, the NCCL calls run on a stream of the
//!   communicator's own, not on the compute stream, so communication overlaps computation (DDP's
//!   bucket all-reduces run while backward goes on). Each operation first makes the
//!   communicator's stream wait on an event recorded on the caller's current stream (the
//!   kernels that produced the inputs), then enqueues NCCL and records the operation's event
//!   there. Copies that unpack an output are enqueued on the current stream after a wait on that
//!   event. `Work::wait` does not block the host: it makes the caller's current stream wait on
//!   the event (PyTorch's `work.wait()`), so whatever the caller enqueues next, reading the
//!   outputs included, runs after the collective; `wait_timeout` and a barrier block the host.
//!   The operation's tensors stay alive until the watchdog has seen the event complete, so the
//!   caching allocator cannot hand their blocks to other work while NCCL still uses them.
//! - Enqueueing, recording the completion event and handing the operation to the watchdog
//!   happen under one lock, in issue order. The `Work` completes when that event has. A
//!   watchdog thread per communicator queries the events in order with a backoff, checks
//!   `ncclCommGetAsyncError`, and, when an operation fails or has not finished within the
//!   group's timeout, marks the communicator aborted and aborts it (`ncclCommAbort`) under the
//!   same lock: every pending and later operation of the group is then an error, never a hang.
//! - The watchdog owns the communicator's end: when the group is dropped it finishes the
//!   operations in flight (or aborts at their deadline), then destroys the communicator. A
//!   group dropped with work pending never blocks the caller.
//! - Unlike the MPI backend, the ranks do not first agree on what they call (PyTorch's NCCL
//!   backend does not either, unless `TORCH_DISTRIBUTED_DEBUG=DETAIL`): that would cost a
//!   device round trip per operation. Mismatched calls wait until the watchdog's timeout.
//!   `ncclCommInitRank` and `ncclCommSplit` themselves block until every rank has called them.
//! - NCCL has no tags and no receive from any source; `recv` without a source is an error, a
//!   tag is ignored. It has no bitwise reductions and no 16-bit integers: errors, as PyTorch.
//!   Booleans travel as bytes; SUM and MAX reduce them with MAX (a logical or), PRODUCT and
//!   MIN with MIN (a logical and).
//! - Everything here needs a real device: the emulated one has no NCCL, and saying so is the
//!   error at `init_process_group`.
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use aten::Tensor;
use c10::{Device, DeviceType, Error, Result, ScalarType};
use kernels_cuda::driver::{driver, Driver, EventId, StreamId};

use crate::process_group::{Backend, Collective, Finish, ReduceOp};
use crate::store::Store;
use crate::work::Work;

fn dist_error(op: &str, msg: impl Into<String>) -> Error {
    Error::Distributed { op: op.into(), msg: msg.into() }
}

// ---- the library -------------------------------------------------------------------------------

/// `ncclUniqueId`.
#[repr(C)]
#[derive(Clone, Copy)]
struct UniqueId {
    internal: [c_char; 128],
}

type RawComm = *mut c_void;
type RawStream = *mut c_void;

// `ncclResult_t` values.
const SUCCESS: c_int = 0;
const IN_PROGRESS: c_int = 7;

// `ncclDataType_t` values (bfloat16 since NCCL 2.10).
const INT8: c_int = 0;
const UINT8: c_int = 1;
const INT32: c_int = 2;
const INT64: c_int = 4;
const FLOAT16: c_int = 6;
const FLOAT32: c_int = 7;
const FLOAT64: c_int = 8;
const BFLOAT16: c_int = 9;

// `ncclRedOp_t` values (average since NCCL 2.10).
const SUM: c_int = 0;
const PROD: c_int = 1;
const MAX: c_int = 2;
const MIN: c_int = 3;
const AVG: c_int = 4;

/// `NCCL_SPLIT_NOCOLOR`: the rank takes no part in the split's communicator.
const SPLIT_NOCOLOR: c_int = -1;

/// The NCCL functions this backend calls, resolved once.
struct Lib {
    _lib: libloading::Library,
    get_version: unsafe extern "C" fn(*mut c_int) -> c_int,
    get_error_string: unsafe extern "C" fn(c_int) -> *const c_char,
    get_unique_id: unsafe extern "C" fn(*mut UniqueId) -> c_int,
    comm_init_rank: unsafe extern "C" fn(*mut RawComm, c_int, UniqueId, c_int) -> c_int,
    comm_destroy: unsafe extern "C" fn(RawComm) -> c_int,
    comm_abort: unsafe extern "C" fn(RawComm) -> c_int,
    comm_get_async_error: unsafe extern "C" fn(RawComm, *mut c_int) -> c_int,
    /// NCCL 2.18 and newer.
    comm_split: Option<unsafe extern "C" fn(RawComm, c_int, c_int, *mut RawComm, *mut c_void) -> c_int>,
    all_reduce: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, RawComm, RawStream) -> c_int,
    broadcast: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, RawComm, RawStream) -> c_int,
    reduce: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, c_int, RawComm, RawStream) -> c_int,
    all_gather: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, RawComm, RawStream) -> c_int,
    reduce_scatter: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, RawComm, RawStream) -> c_int,
    send: unsafe extern "C" fn(*const c_void, usize, c_int, c_int, RawComm, RawStream) -> c_int,
    recv: unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, RawComm, RawStream) -> c_int,
    group_start: unsafe extern "C" fn() -> c_int,
    group_end: unsafe extern "C" fn() -> c_int,
}

/// The library names tried, in order.
const LIB_NAMES: [&str; 2] = ["libnccl.so.2", "libnccl.so"];

/// NCCL, loaded at the first use (Note [The NCCL backend]).
fn lib() -> Result<&'static Lib> {
    static LIB: OnceLock<std::result::Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(load).as_ref().map_err(|e| dist_error("init_process_group", e.clone()))
}

fn load() -> std::result::Result<Lib, String> {
    let mut tried = Vec::new();
    for name in LIB_NAMES {
        // SAFETY: loading NCCL runs its initialisers, which have no preconditions.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => return resolve(lib),
            Err(e) => tried.push(format!("{name}: {e}")),
        }
    }
    Err(format!("the NCCL backend needs NCCL (libnccl.so.2), which could not be loaded ({})", tried.join("; ")))
}

fn resolve(lib: libloading::Library) -> std::result::Result<Lib, String> {
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol is NCCL's function of that name, whose C signature is the
            // field's type (nccl.h).
            *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("NCCL has no {} ({e}); this backend needs NCCL 2.10 or newer", $name))?
        };
    }
    // SAFETY: as in `sym!`; a missing ncclCommSplit only disables `new_group`.
    let comm_split = unsafe { lib.get(b"ncclCommSplit\0") }.ok().map(|s| *s);
    Ok(Lib {
        get_version: sym!("ncclGetVersion"),
        get_error_string: sym!("ncclGetErrorString"),
        get_unique_id: sym!("ncclGetUniqueId"),
        comm_init_rank: sym!("ncclCommInitRank"),
        comm_destroy: sym!("ncclCommDestroy"),
        comm_abort: sym!("ncclCommAbort"),
        comm_get_async_error: sym!("ncclCommGetAsyncError"),
        comm_split,
        all_reduce: sym!("ncclAllReduce"),
        broadcast: sym!("ncclBroadcast"),
        reduce: sym!("ncclReduce"),
        all_gather: sym!("ncclAllGather"),
        reduce_scatter: sym!("ncclReduceScatter"),
        send: sym!("ncclSend"),
        recv: sym!("ncclRecv"),
        group_start: sym!("ncclGroupStart"),
        group_end: sym!("ncclGroupEnd"),
        _lib: lib,
    })
}

impl Lib {
    /// An NCCL result as an error.
    fn check(&self, op: &str, r: c_int) -> Result<()> {
        if r == SUCCESS {
            return Ok(());
        }
        // SAFETY: ncclGetErrorString returns a static NUL-terminated string for any value.
        let text = unsafe {
            let p = (self.get_error_string)(r);
            if p.is_null() {
                "unknown error".into()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        Err(dist_error(op, format!("NCCL error {r}: {text}")))
    }
}

// ---- the communicator --------------------------------------------------------------------------

/// An NCCL communicator handle.
#[derive(Clone, Copy)]
struct Comm(RawComm);
// SAFETY: an NCCL communicator may be used from any thread as long as calls on it are not
// concurrent: every call on it is made under `Core::enqueue`, except ncclCommGetAsyncError,
// which NCCL allows at any time before the communicator is aborted or destroyed (both of which
// also happen under the lock, after `aborted`/`ended` are set).
unsafe impl Send for Comm {}
// SAFETY: see the Send impl.
unsafe impl Sync for Comm {}

/// What the backend and its watchdog share.
struct Core {
    lib: &'static Lib,
    comm: Comm,
    device: usize,
    /// Serialises every call on the communicator, and the hand-over of operations to the
    /// watchdog (so they reach it in issue order).
    enqueue: Mutex<()>,
    /// Set (under `enqueue`) when the communicator was aborted: nothing may use it after.
    aborted: AtomicBool,
    /// The stream the NCCL calls run on (Note [The NCCL stream]), destroyed with the
    /// communicator.
    stream: StreamId,
}

impl Core {
    /// Aborts the communicator once (Note [The NCCL backend]).
    fn abort(&self) {
        let _lock = self.enqueue.lock().unwrap_or_else(|e| e.into_inner());
        if !self.aborted.swap(true, Ordering::SeqCst) {
            // SAFETY: the communicator is valid and not aborted; no other call is in progress
            // (the lock), and none follows (`aborted`).
            unsafe { (self.lib.comm_abort)(self.comm.0) };
        }
    }

    /// The communicator's asynchronous error (success once aborted).
    fn async_error(&self) -> c_int {
        let mut result = SUCCESS;
        if !self.aborted.load(Ordering::SeqCst) {
            // SAFETY: the communicator is valid; reading its error concurrently with calls on
            // it is allowed by NCCL. The watchdog, the only caller, is also the only thread
            // that aborts or destroys it.
            unsafe { (self.lib.comm_get_async_error)(self.comm.0, &mut result) };
        }
        result
    }
}

/// An event of the communicator's device, destroyed when the last holder (the watchdog's
/// [`Watch`], a `Work`'s device wait) lets go.
struct DeviceEvent(EventId);

impl DeviceEvent {
    fn new(d: &dyn Driver, device: usize) -> Result<DeviceEvent> {
        d.event_create(device, false).map(DeviceEvent)
    }
}

impl Drop for DeviceEvent {
    fn drop(&mut self) {
        if let Ok(d) = driver() {
            d.event_destroy(self.0);
        }
    }
}

/// What the watchdog waits for: one enqueued operation.
struct Watch {
    event: Arc<DeviceEvent>,
    work: Work,
    deadline: Instant,
    /// For a `recv`: the rank the message comes from.
    source: Option<usize>,
    /// The operation's tensors, alive until the device is done with them.
    _keep: Vec<Tensor>,
}

struct NcclBackend {
    core: Arc<Core>,
    /// The watchdog's queue; dropping the backend closes it, and the watchdog then ends the
    /// communicator.
    watch: mpsc::Sender<Watch>,
    rank: usize,
    size: usize,
}

fn datatype(op: &str, dtype: ScalarType) -> Result<c_int> {
    Ok(match dtype {
        ScalarType::U8 | ScalarType::Bool => UINT8,
        ScalarType::I8 => INT8,
        ScalarType::I32 => INT32,
        ScalarType::I64 => INT64,
        ScalarType::F16 => FLOAT16,
        ScalarType::BF16 => BFLOAT16,
        ScalarType::F32 => FLOAT32,
        ScalarType::F64 => FLOAT64,
        ScalarType::I16 | ScalarType::C64 | ScalarType::C128 => {
            return Err(dist_error(op, format!("Unsupported data type for NCCL process group: {}", dtype.name())))
        }
    })
}

fn redop(op: &str, r: ReduceOp, dtype: ScalarType) -> Result<c_int> {
    if dtype == ScalarType::Bool {
        return match r {
            ReduceOp::Sum | ReduceOp::Max => Ok(MAX),
            ReduceOp::Product | ReduceOp::Min => Ok(MIN),
            _ => Err(dist_error(op, format!("Cannot use ReduceOp.{} with NCCL on bool tensors", r.name()))),
        };
    }
    match r {
        ReduceOp::Sum => Ok(SUM),
        ReduceOp::Avg => Ok(AVG),
        ReduceOp::Product => Ok(PROD),
        ReduceOp::Min => Ok(MIN),
        ReduceOp::Max => Ok(MAX),
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

impl NcclBackend {
    /// Runs `moves` (those with elements) as one NCCL group: gather, scatter and all-to-all are
    /// grouped sends and receives. The group is always closed, also after a failed call.
    ///
    /// # Safety
    /// Each buffer addresses its count of `dt` elements on the communicator's device, alive
    /// until the operation completes on `stream`; the caller holds the enqueue lock.
    unsafe fn grouped(&self, name: &str, moves: &[Move], dt: c_int, stream: RawStream) -> Result<()> {
        let (lib, comm) = (self.core.lib, self.core.comm.0);
        // SAFETY: opening a group has no preconditions.
        lib.check(name, unsafe { (lib.group_start)() })?;
        let mut result = SUCCESS;
        for m in moves {
            // SAFETY: the buffers are valid for their counts (this function's contract).
            result = unsafe {
                match *m {
                    Move::Send(_, 0, _) | Move::Recv(_, 0, _) => SUCCESS,
                    Move::Send(p, count, peer) => (lib.send)(p, count, dt, peer as c_int, comm, stream),
                    Move::Recv(p, count, peer) => (lib.recv)(p, count, dt, peer as c_int, comm, stream),
                }
            };
            if result != SUCCESS {
                break;
            }
        }
        // SAFETY: closes the group opened above.
        let end = unsafe { (lib.group_end)() };
        lib.check(name, result)?;
        lib.check(name, end)
    }

    /// Enqueues `c` on `stream` (the caller holds the enqueue lock, the device is current).
    fn enqueue(&self, c: &Collective, stream: RawStream) -> Result<Option<usize>> {
        let name = c.name();
        let (lib, comm, dev) = (self.core.lib, self.core.comm.0, self.core.device);
        let ptr = |t: &Tensor| device_ptr(name, t, dev);
        let dt = |t: &Tensor| datatype(name, t.dtype());
        let n = |t: &Tensor| t.numel() as usize;
        // SAFETY: (every call below) the pointers address contiguous device buffers of the
        // counts given (the process group checked the sizes), alive until the watchdog sees
        // the operation's event (`Watch::_keep`); the communicator is valid, not aborted and
        // not used concurrently (enqueue lock); the stream belongs to the communicator's device.
        unsafe {
            match c {
                Collective::AllReduce { buf, op } => {
                    let (p, o) = (ptr(buf)?, redop(name, *op, buf.dtype())?);
                    lib.check(name, (lib.all_reduce)(p, p, n(buf), dt(buf)?, o, comm, stream))?;
                }
                Collective::Broadcast { buf, root } => {
                    let p = ptr(buf)?;
                    lib.check(name, (lib.broadcast)(p, p, n(buf), dt(buf)?, *root as c_int, comm, stream))?;
                }
                Collective::Reduce { buf, root, op } => {
                    let (p, o) = (ptr(buf)?, redop(name, *op, buf.dtype())?);
                    lib.check(name, (lib.reduce)(p, p, n(buf), dt(buf)?, o, *root as c_int, comm, stream))?;
                }
                Collective::AllGather { input, output } => {
                    let (i, o) = (ptr(input)?, ptr(output)?);
                    lib.check(name, (lib.all_gather)(i, o, n(input), dt(input)?, comm, stream))?;
                }
                Collective::ReduceScatter { input, output, op } => {
                    let (i, o, r) = (ptr(input)?, ptr(output)?, redop(name, *op, input.dtype())?);
                    lib.check(name, (lib.reduce_scatter)(i, o, n(output), dt(input)?, r, comm, stream))?;
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
                    self.grouped(name, &moves, dt(input)?, stream)?;
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
                    self.grouped(name, &moves, dt(output)?, stream)?;
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
                    self.grouped(name, &moves, dt(input)?, stream)?;
                }
                Collective::Send { buf, dst, .. } => {
                    lib.check(name, (lib.send)(ptr(buf)?, n(buf), dt(buf)?, *dst as c_int, comm, stream))?;
                }
                Collective::Recv { buf, src, .. } => {
                    let Some(src) = src else {
                        return Err(dist_error(name, "NCCL cannot receive from any source: give the source rank"));
                    };
                    lib.check(name, (lib.recv)(ptr(buf)?, n(buf), dt(buf)?, *src as c_int, comm, stream))?;
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

    /// Enqueues `c` and its `finish`, and hands the operation to the watchdog, all under the
    /// enqueue lock (Note [The NCCL backend]).
    fn run(&self, c: Collective, finish: Option<Finish>, timeout: Duration, work: &Work) -> Result<()> {
        let name = c.name();
        let d = driver()?;
        let dev = self.core.device;
        let device = Device::cuda(dev as i8);
        // A barrier is an all-reduce of one element on the device, as in PyTorch.
        let c = match c {
            Collective::Barrier => Collective::AllReduce {
                buf: aten::ops::zeros(&[1], Some(ScalarType::F32), None, Some(device), None)?,
                op: ReduceOp::Sum,
            },
            c => c,
        };
        let compute = StreamId(kernels_cuda::runtime::current_stream(device)?.id);
        let comm_stream = self.core.stream;
        let barrier = name == "barrier";
        let _lock = self.core.enqueue.lock().unwrap_or_else(|e| e.into_inner());
        if self.core.aborted.load(Ordering::SeqCst) {
            return Err(dist_error(
                name,
                "the NCCL communicator was aborted after an earlier operation failed or timed out",
            ));
        }
        d.make_current(dev)?;
        // Note [The NCCL stream]: after the work queued so far on the caller's stream.
        let ready = DeviceEvent::new(d, dev)?;
        d.event_record(ready.0, dev, compute)?;
        d.stream_wait_event(dev, comm_stream, ready.0)?;
        let event = Arc::new(DeviceEvent::new(d, dev)?);
        let source = (|| {
            let source = self.enqueue(&c, comm_stream.0 as RawStream)?;
            d.event_record(event.0, dev, comm_stream)?;
            if let Some(f) = finish {
                // The unpacking copies read the outputs: on the caller's stream, after them.
                d.stream_wait_event(dev, compute, event.0)?;
                f()?;
            }
            Ok::<_, Error>(source)
        })()?;
        // Whatever was enqueued before a failure completes in stream order; the event lives
        // until the watchdog and the work let go of it.
        if !barrier {
            let waited = event.clone();
            work.set_device_wait(Box::new(move || {
                let d = driver()?;
                let current = StreamId(kernels_cuda::runtime::current_stream(device)?.id);
                d.stream_wait_event(dev, current, waited.0)
            }));
        }
        let watch =
            Watch { event, work: work.clone(), deadline: Instant::now() + timeout, source, _keep: Self::tensors(&c) };
        if let Err(mpsc::SendError(w)) = self.watch.send(watch) {
            // The watchdog is gone: wait here so that the tensors outlive the operation.
            let _ = d.event_synchronize(w.event.0);
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
    fn device(&self) -> Device {
        Device::cuda(self.core.device as i8)
    }
    fn submit(&self, c: Collective, finish: Option<Finish>, timeout: Duration) -> Work {
        let work = Work::pending(c.name(), timeout);
        if let Err(e) = self.run(c, finish, timeout, &work) {
            work.complete(Err(e));
        }
        work
    }

    fn split(&self, ranks: &[usize], _timeout: Duration) -> Result<Option<Arc<dyn Backend>>> {
        let name = "new_group";
        let member = ranks.iter().position(|&r| r == self.rank);
        let d = driver()?;
        let lib = self.core.lib;
        let split = lib.comm_split.ok_or_else(|| dist_error(name, "new_group with NCCL needs NCCL 2.18 or newer"))?;
        let mut comm: RawComm = std::ptr::null_mut();
        {
            let _lock = self.core.enqueue.lock().unwrap_or_else(|e| e.into_inner());
            if self.core.aborted.load(Ordering::SeqCst) {
                return Err(dist_error(name, "the NCCL communicator was aborted"));
            }
            d.make_current(self.core.device)?;
            let (color, key) = member.map_or((SPLIT_NOCOLOR, 0), |k| (0, k as c_int));
            // SAFETY: every rank of the parent communicator calls this (new_group's contract);
            // the parent is valid and not aborted (checked under the lock); a null config
            // inherits the parent's.
            lib.check(name, unsafe { split(self.core.comm.0, color, key, &mut comm, std::ptr::null_mut()) })?;
        }
        let Some(rank) = member else { return Ok(None) };
        let stream = d.stream_create(self.core.device)?;
        Ok(Some(Arc::new(start(lib, Comm(comm), self.core.device, rank, ranks.len(), stream)) as Arc<dyn Backend>))
    }
}

/// A backend over `comm` and its watchdog (Note [The NCCL backend]).
fn start(lib: &'static Lib, comm: Comm, device: usize, rank: usize, size: usize, stream: StreamId) -> NcclBackend {
    let (tx, rx) = mpsc::channel::<Watch>();
    let core = Arc::new(Core { lib, comm, device, enqueue: Mutex::new(()), aborted: AtomicBool::new(false), stream });
    let watched = core.clone();
    let spawned = std::thread::Builder::new().name("nccl-watchdog".into()).spawn(move || watchdog(rx, watched));
    if spawned.is_err() {
        // Without a watchdog no work could complete: abort now, so every submit says so.
        core.abort();
    }
    NcclBackend { core, watch: tx, rank, size }
}

/// Completes the works of `rx` in order as their events complete; aborts the communicator on
/// an asynchronous NCCL error, a failed event query or a timeout; destroys the communicator
/// once the backend is gone and nothing is in flight.
fn watchdog(rx: mpsc::Receiver<Watch>, core: Arc<Core>) {
    let Ok(d) = driver() else { return };
    let _ = d.make_current(core.device);
    let mut queue: VecDeque<Watch> = VecDeque::new();
    let mut failed: Option<Error> = None;
    let mut open = true;
    let mut backoff = Duration::from_micros(20);
    loop {
        if queue.is_empty() {
            if !open {
                break;
            }
            match rx.recv() {
                Ok(w) => queue.push_back(w),
                Err(_) => break,
            }
            backoff = Duration::from_micros(20);
        } else if open {
            match rx.recv_timeout(backoff) {
                Ok(w) => queue.push_back(w),
                Err(mpsc::RecvTimeoutError::Timeout) => backoff = (backoff * 2).min(Duration::from_millis(2)),
                Err(mpsc::RecvTimeoutError::Disconnected) => open = false,
            }
        } else {
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_millis(2));
        }
        while let Some(w) = queue.front() {
            let outcome = match &failed {
                Some(e) => Err(e.clone()),
                None => match d.event_query(w.event.0) {
                    Ok(true) => Ok(w.source),
                    Ok(false) => {
                        let async_err = core.async_error();
                        if async_err != SUCCESS && async_err != IN_PROGRESS {
                            Err(core.lib.check(w.work.op(), async_err).unwrap_err())
                        } else if Instant::now() >= w.deadline {
                            Err(Error::DistTimeout {
                                op: w.work.op().into(),
                                msg: "the NCCL operation did not complete within the process group's timeout; the \
                                      communicator was aborted"
                                    .into(),
                            })
                        } else {
                            break;
                        }
                    }
                    Err(e) => Err(e),
                },
            };
            if let (Err(e), None) = (&outcome, &failed) {
                core.abort();
                failed = Some(e.clone());
            }
            let w = queue.pop_front().expect("front exists");
            if failed.is_some() {
                // After the abort the device no longer runs the operation's kernels; wait for
                // the stream to let go of the buffers before they are freed.
                let _ = d.event_synchronize(w.event.0);
            }
            w.work.complete(outcome);
        }
    }
    let _lock = core.enqueue.lock().unwrap_or_else(|e| e.into_inner());
    if !core.aborted.swap(true, Ordering::SeqCst) {
        // SAFETY: the backend is gone (the channel closed) and nothing is in flight, so this is
        // the communicator's last use; it came from ncclCommInitRank/ncclCommSplit.
        unsafe { (core.lib.comm_destroy)(core.comm.0) };
    }
    // Nothing is in flight and the communicator is gone (destroyed or aborted).
    d.stream_destroy(core.device, core.stream);
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

/// How many NCCL worlds this process has initialised: the store key of each one's unique id.
static GENERATION: AtomicUsize = AtomicUsize::new(0);

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
    let lib = lib()?;
    let mut version: c_int = 0;
    // SAFETY: version is a valid int for NCCL to fill.
    lib.check(name, unsafe { (lib.get_version)(&mut version) })?;
    if version < 21000 {
        return Err(dist_error(name, format!("the NCCL backend needs NCCL 2.10 or newer; this one is {version}")));
    }
    let device = pick_device(d, rank)?;
    kernels_cuda::runtime::set_device(Device::cuda(device as i8))?;
    let key = format!("nccl/unique_id/{}", GENERATION.fetch_add(1, Ordering::SeqCst));
    let mut id = UniqueId { internal: [0; 128] };
    if rank == 0 {
        // SAFETY: id is a valid ncclUniqueId for NCCL to fill.
        lib.check(name, unsafe { (lib.get_unique_id)(&mut id) })?;
        store.set(&key, &id.internal.iter().map(|&c| c as u8).collect::<Vec<u8>>())?;
    } else {
        let bytes = store.get(&key)?;
        if bytes.len() != id.internal.len() {
            return Err(dist_error(
                name,
                format!("the NCCL unique id in the store has {} bytes, not 128", bytes.len()),
            ));
        }
        for (c, b) in id.internal.iter_mut().zip(bytes) {
            *c = b as c_char;
        }
    }
    d.make_current(device)?;
    let mut comm: RawComm = std::ptr::null_mut();
    // SAFETY: every rank calls this with the same id and world size and its own rank; the
    // device's context is current on this thread.
    lib.check(name, unsafe { (lib.comm_init_rank)(&mut comm, size as c_int, id, rank as c_int) })?;
    if rank == 0 {
        // Every rank has joined, so every rank has read the id.
        let _ = store.delete_key(&key);
    }
    let stream = d.stream_create(device)?;
    Ok(Arc::new(start(lib, Comm(comm), device, rank, size, stream)))
}
