//! The Gloo backend of process groups (c10d's `ProcessGroupGloo`), over the Gloo library
//! (Debian's `libgloo-dev`) through a small C++ shim (`gloo/shim.cc`, built by `build.rs`).
//!
//! Note [The Gloo backend]:
//! - A group is a Gloo context over TCP: every rank opens a device on its address, publishes it
//!   in the rendezvous store under the group's prefix (`gloo/<world>/` for a world,
//!   `.../group<k>/` for the k-th `new_group`), and connects to every other rank (a full mesh).
//!   The device binds the address of `GLOO_SOCKET_IFNAME`'s interface when it is set, else the
//!   host name's address, else the loopback address (PyTorch's order).
//! - Collectives run on the group's own thread in the order they were issued, each with the
//!   next tag (the same on every rank), and complete their [`Work`] there. Before each one the
//!   ranks agree on it (Note [Agreeing on a collective]): ranks that disagree get an error,
//!   never a hang or a crash.
//! - Gloo has no reduce-scatter of its own for this API: the shim runs a ring over Gloo's
//!   point-to-point messages on a copy of the input (Note [Gloo reduce-scatter] in shim.cc).
//!   `AVG` is a sum divided afterwards. Reductions
//!   are Rust functions that Gloo calls back, one per dtype and operation (16-bit floats are
//!   combined in f32 and rounded; min and max propagate NaN, as `torch.minimum`).
//! - Point-to-point messages (Note [Gloo messages]) are posted when issued, so `isend` then
//!   `recv` on two ranks cannot deadlock, and each is waited for on a thread of its own.
//! - A failed or timed-out operation leaves the context unusable, as in PyTorch: the group's
//!   later operations fail too. A rank that died is noticed and named (Note [Noticing a dead
//!   rank]).
//!
//! Note [Gloo messages]: Gloo aborts the process when a message is longer than the buffer
//! posted for it, and silently fills part of a longer buffer. So a send is two messages: a
//! header (the byte count and the sender's sequence number for this destination) on the tag's
//! header slot, then the data on a slot of its own built from the sequence number. The receiver
//! posts the header receive when the receive is issued (so receives match sends in order, per
//! source and tag), reads the header, and receives the data into the tensor when the sizes
//! agree, or into scratch memory followed by an error naming both sizes when they do not.
//!
//! Note [Noticing a dead rank]: when a rank's process dies, the kernel closes its sockets and
//! its peers' pending Gloo operations fail at once ("Connection closed by peer"), but Gloo
//! names an address, not a rank; a rank that hangs or whose host vanished closes nothing. So
//! each world keeps a [`Liveness`]:
//! - at connection every rank publishes its host name and process id in the store, and a
//!   heartbeat thread then adds 1 to the rank's `heartbeat/<rank>` counter every second and
//!   reads every rank's; a rank whose counter stands still for [`DEAD_AFTER`] is declared
//!   dead (on any host). A store that stops answering is a failure too (rank 0 serves it),
//!   named after a rank of this host whose process ended when there is one (rank 0 often exits
//!   because it noticed another rank's death, and its published verdict goes with its store).
//! - when an operation fails in Gloo, the ranks on this host are checked directly (their
//!   process is gone, or a zombie), so the error names the dead rank at once; otherwise it
//!   waits a little for the heartbeat's verdict.
//! - a verdict fails every pending [`Work`] of the world and of its sub-groups with an error
//!   naming the rank, and every later operation fails with it at once: a rank blocked in a
//!   collective returns instead of waiting for the group's timeout (30 minutes by default).
//! - the first verdict is published in the store, and each heartbeat reads it: a rank blocked
//!   on a live peer (whose transport says nothing until that peer exits) adopts it within a
//!   second. Each rank that holds a verdict counts itself in the store, and rank 0's world
//!   waits on drop (at most [`LINGER`]) until every rank still running has, so that its
//!   store, which goes with its process, outlives the reading.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use aten::Tensor;
use c10::{bf16, f16, Complex, Error, Result, ScalarType};

use crate::host::{check_agreement, check_counts, counts_row, describe_collective, dist_error, divide, finish_work};
use crate::process_group::{Backend, Collective, Finish, ReduceOp};
use crate::store::{PrefixStore, Store};
use crate::work::Work;

#[allow(non_camel_case_types, dead_code, clippy::all)]
mod ffi {
    include!(concat!(env!("OUT_DIR"), "/gloo_shim.rs"));
}

const ERR_LEN: usize = 1024;

/// Runs a shim call with an error buffer; its status as a `Result`.
fn call(op: &str, f: impl FnOnce(*mut c_char, usize) -> c_int) -> Result<()> {
    let mut err = [0 as c_char; ERR_LEN];
    let rc = f(err.as_mut_ptr(), ERR_LEN);
    if rc == ffi::GLOO_SHIM_OK as c_int {
        return Ok(());
    }
    Err(shim_error(op, rc, &err))
}

/// The error of a failed shim call: its status and message.
fn shim_error(op: &str, rc: c_int, err: &[c_char]) -> Error {
    let bytes: Vec<u8> = err.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    let msg = String::from_utf8_lossy(&bytes).into_owned();
    if rc == ffi::GLOO_SHIM_TIMEOUT as c_int {
        Error::DistTimeout { op: op.into(), msg: format!("Gloo: {msg}") }
    } else {
        dist_error(op, format!("Gloo: {msg}"))
    }
}

fn millis(timeout: Duration) -> i64 {
    timeout.as_millis().clamp(1, i64::MAX as u128) as i64
}

// ---- reductions ------------------------------------------------------------------------------

/// An element type Gloo reduces, with the operations that apply to it.
trait Elem: Copy {
    fn sum(a: Self, b: Self) -> Self;
    fn prod(a: Self, b: Self) -> Self;
    fn min(a: Self, b: Self) -> Self;
    fn max(a: Self, b: Self) -> Self;
    fn and(a: Self, b: Self) -> Self {
        Self::min(a, b)
    }
    fn or(a: Self, b: Self) -> Self {
        Self::max(a, b)
    }
    fn xor(a: Self, _b: Self) -> Self {
        a
    }
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            fn sum(a: Self, b: Self) -> Self { a.wrapping_add(b) }
            fn prod(a: Self, b: Self) -> Self { a.wrapping_mul(b) }
            fn min(a: Self, b: Self) -> Self { Ord::min(a, b) }
            fn max(a: Self, b: Self) -> Self { Ord::max(a, b) }
            fn and(a: Self, b: Self) -> Self { a & b }
            fn or(a: Self, b: Self) -> Self { a | b }
            fn xor(a: Self, b: Self) -> Self { a ^ b }
        }
    )*};
}
int_elem!(u8, i8, i16, i32, i64);

macro_rules! float_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            fn sum(a: Self, b: Self) -> Self { a + b }
            fn prod(a: Self, b: Self) -> Self { a * b }
            // NaN propagates (torch.minimum); bitwise operations are refused for floats.
            fn min(a: Self, b: Self) -> Self { if a.is_nan() || a < b { a } else { b } }
            fn max(a: Self, b: Self) -> Self { if a.is_nan() || a > b { a } else { b } }
        }
    )*};
}
float_elem!(f32, f64, f16, bf16);

macro_rules! complex_elem {
    ($($t:ty),*) => {$(
        impl Elem for Complex<$t> {
            fn sum(a: Self, b: Self) -> Self { a + b }
            fn prod(a: Self, b: Self) -> Self { a * b }
            // Complex numbers have no order: MIN and MAX are refused before a reduction.
            fn min(a: Self, _b: Self) -> Self { a }
            fn max(a: Self, _b: Self) -> Self { a }
        }
    )*};
}
complex_elem!(f32, f64);

/// A bool element (0 or 1): sum is or, product is and, as in PyTorch.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct Bool(u8);

impl Elem for Bool {
    fn sum(a: Self, b: Self) -> Self {
        Bool(a.0 | b.0)
    }
    fn prod(a: Self, b: Self) -> Self {
        Bool(a.0 & b.0)
    }
    fn min(a: Self, b: Self) -> Self {
        Bool(a.0 & b.0)
    }
    fn max(a: Self, b: Self) -> Self {
        Bool(a.0 | b.0)
    }
    fn xor(a: Self, b: Self) -> Self {
        Bool(a.0 ^ b.0)
    }
}

type ReduceFn = unsafe extern "C" fn(*mut c_void, *const c_void, *const c_void, usize);

#[inline(always)]
fn apply<T: Elem, const OP: u8>(x: T, y: T) -> T {
    match OP {
        0 => T::sum(x, y),
        1 => T::prod(x, y),
        2 => T::min(x, y),
        3 => T::max(x, y),
        4 => T::and(x, y),
        5 => T::or(x, y),
        _ => T::xor(x, y),
    }
}

/// `c[i] = a[i] op b[i]` for `n` elements of `T`; `c` may be `a` or `b` (Gloo's contract).
/// Note [Gloo reductions]: the usual cases (in place into `a` or `b`, or three separate
/// buffers, all aligned) run as slice loops the compiler vectorises; through raw pointers
/// that may alias, it checks for overlap, finds `c == a`, and falls back to one element at
/// a time (a sixth of a rank's time in a 1 MB all-reduce of f32 on two ranks went there).
/// Anything else (unaligned or partly overlapping buffers) still goes one element at a time.
unsafe extern "C" fn combine<T: Elem, const OP: u8>(c: *mut c_void, a: *const c_void, b: *const c_void, n: usize) {
    let (c, a, b) = (c as *mut T, a as *const T, b as *const T);
    let bytes = n * std::mem::size_of::<T>();
    let aligned = |p: *const T| (p as usize).is_multiple_of(std::mem::align_of::<T>());
    let apart = |p: *const T, q: *const T| {
        let (p, q) = (p as usize, q as usize);
        p + bytes <= q || q + bytes <= p
    };
    // Gloo passes three buffers of n elements of T; each slice case below checks alignment and
    // that its mutable slice overlaps no shared one.
    if n > 0 && aligned(c) && aligned(a) && aligned(b) {
        if std::ptr::eq(c, a) && apart(a, b) {
            // SAFETY: see above (c is a, apart from b).
            let (c, b) = unsafe { (std::slice::from_raw_parts_mut(c, n), std::slice::from_raw_parts(b, n)) };
            for (x, &y) in c.iter_mut().zip(b) {
                *x = apply::<T, OP>(*x, y);
            }
            return;
        }
        if std::ptr::eq(c, b) && apart(a, b) {
            // SAFETY: see above (c is b, apart from a).
            let (c, a) = unsafe { (std::slice::from_raw_parts_mut(c, n), std::slice::from_raw_parts(a, n)) };
            for (y, &x) in c.iter_mut().zip(a) {
                *y = apply::<T, OP>(x, *y);
            }
            return;
        }
        if apart(c, a) && apart(c, b) {
            // SAFETY: see above (c apart from a and b, which may overlap each other: both shared).
            let (c, a, b) = unsafe {
                (
                    std::slice::from_raw_parts_mut(c, n),
                    std::slice::from_raw_parts(a, n),
                    std::slice::from_raw_parts(b, n),
                )
            };
            for ((z, &x), &y) in c.iter_mut().zip(a).zip(b) {
                *z = apply::<T, OP>(x, y);
            }
            return;
        }
    }
    for i in 0..n {
        // SAFETY: as above; elements are read and written through pointers, one at a time.
        unsafe {
            let (x, y) = (a.add(i).read_unaligned(), b.add(i).read_unaligned());
            c.add(i).write_unaligned(apply::<T, OP>(x, y));
        }
    }
}

fn reduce_fn_of<T: Elem>(op: ReduceOp) -> ReduceFn {
    match op {
        ReduceOp::Sum | ReduceOp::Avg => combine::<T, 0>,
        ReduceOp::Product => combine::<T, 1>,
        ReduceOp::Min => combine::<T, 2>,
        ReduceOp::Max => combine::<T, 3>,
        ReduceOp::BAnd => combine::<T, 4>,
        ReduceOp::BOr => combine::<T, 5>,
        ReduceOp::BXor => combine::<T, 6>,
    }
}

fn reduce_fn(op: ReduceOp, dtype: ScalarType) -> ReduceFn {
    match dtype {
        ScalarType::U8 => reduce_fn_of::<u8>(op),
        ScalarType::I8 => reduce_fn_of::<i8>(op),
        ScalarType::I16 => reduce_fn_of::<i16>(op),
        ScalarType::I32 => reduce_fn_of::<i32>(op),
        ScalarType::I64 => reduce_fn_of::<i64>(op),
        ScalarType::F16 => reduce_fn_of::<f16>(op),
        ScalarType::BF16 => reduce_fn_of::<bf16>(op),
        ScalarType::F32 => reduce_fn_of::<f32>(op),
        ScalarType::F64 => reduce_fn_of::<f64>(op),
        ScalarType::C64 => reduce_fn_of::<Complex<f32>>(op),
        ScalarType::C128 => reduce_fn_of::<Complex<f64>>(op),
        ScalarType::Bool => reduce_fn_of::<Bool>(op),
    }
}

// ---- the store, as Gloo's rendezvous store ---------------------------------------------------

fn write_err(err: *mut c_char, errlen: usize, msg: &str) {
    if err.is_null() || errlen == 0 {
        return;
    }
    let n = msg.len().min(errlen - 1);
    // SAFETY: the shim passes a buffer of errlen bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(msg.as_ptr() as *const c_char, err, n);
        *err.add(n) = 0;
    }
}

/// The status of a store call for the shim: an error's message goes into `err`.
fn store_status(r: std::thread::Result<Result<()>>, err: *mut c_char, errlen: usize) -> c_int {
    match r {
        Ok(Ok(())) => ffi::GLOO_SHIM_OK as c_int,
        Ok(Err(e)) => {
            write_err(err, errlen, &e.to_string());
            if matches!(e, Error::DistTimeout { .. }) {
                ffi::GLOO_SHIM_TIMEOUT as c_int
            } else {
                ffi::GLOO_SHIM_ERROR as c_int
            }
        }
        Err(_) => {
            write_err(err, errlen, "the store panicked");
            ffi::GLOO_SHIM_ERROR as c_int
        }
    }
}

/// # Safety
/// `user` is the `&dyn Store` that [`connect`] passed.
unsafe fn user_store<'a>(user: *mut c_void) -> &'a dyn Store {
    // SAFETY: as the function's contract says.
    unsafe { *(user as *const &dyn Store) }
}

/// # Safety
/// `ptr` has `len` bytes (or `len` is 0).
unsafe fn bytes<'a>(ptr: *const c_char, len: usize) -> &'a [u8] {
    if len == 0 {
        // An empty run may come as a null pointer.
        return &[];
    }
    // SAFETY: as the function's contract says.
    unsafe { std::slice::from_raw_parts(ptr as *const u8, len) }
}

/// # Safety
/// As [`bytes`].
unsafe fn key_of(ptr: *const c_char, len: usize) -> String {
    // SAFETY: as the function's contract says.
    String::from_utf8_lossy(unsafe { bytes(ptr, len) }).into_owned()
}

unsafe extern "C" fn store_set(
    user: *mut c_void,
    key: *const c_char,
    keylen: usize,
    data: *const c_char,
    len: usize,
    err: *mut c_char,
    errlen: usize,
) -> c_int {
    let r = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the shim passes the user pointer of `connect`, and key/data of the given lengths.
        let (store, key, value) = unsafe { (user_store(user), key_of(key, keylen), bytes(data, len)) };
        store.set(&key, value)
    }));
    store_status(r, err, errlen)
}

unsafe extern "C" fn store_get(
    user: *mut c_void,
    key: *const c_char,
    keylen: usize,
    sink: *mut c_void,
    sinkfn: ffi::gloo_shim_sink_fn,
    err: *mut c_char,
    errlen: usize,
) -> c_int {
    let r = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: as in store_set.
        let (store, key) = unsafe { (user_store(user), key_of(key, keylen)) };
        let value = store.get(&key)?;
        if let Some(f) = sinkfn {
            // SAFETY: the shim's sink copies `value` before returning.
            unsafe { f(sink, value.as_ptr() as *const c_char, value.len()) };
        }
        Ok(())
    }));
    store_status(r, err, errlen)
}

unsafe extern "C" fn store_wait(
    user: *mut c_void,
    keys: *const *const c_char,
    keylens: *const usize,
    nkeys: usize,
    timeout_ms: i64,
    err: *mut c_char,
    errlen: usize,
) -> c_int {
    let r = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the shim passes the user pointer of `connect` and nkeys keys with their lengths.
        let store = unsafe { user_store(user) };
        let names: Vec<String> = (0..nkeys)
            // SAFETY: as above, i < nkeys.
            .map(|i| unsafe { key_of(*keys.add(i), *keylens.add(i)) })
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        store.wait_timeout(&refs, Duration::from_millis(timeout_ms.max(1) as u64))
    }));
    store_status(r, err, errlen)
}

// ---- contexts ----------------------------------------------------------------------------------

/// A connected Gloo context.
struct Context {
    raw: NonNull<ffi::gloo_shim_context>,
}

// SAFETY: a Gloo context may be used from several threads at once (PyTorch runs collectives on
// worker threads and posts sends and receives from the caller's); it is freed once, on drop.
unsafe impl Send for Context {}
// SAFETY: as above.
unsafe impl Sync for Context {}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: raw came from gloo_shim_connect and is freed once.
        unsafe { ffi::gloo_shim_context_free(self.raw.as_ptr()) }
    }
}

/// Where a TCP device binds.
enum Device {
    Interface(String),
    Host(String),
}

/// `GLOO_SOCKET_IFNAME`'s interface, else this host's name when it resolves, else the loopback
/// address.
fn device_address() -> Device {
    if let Ok(iface) = std::env::var("GLOO_SOCKET_IFNAME") {
        if !iface.is_empty() {
            // PyTorch takes a comma-separated list and uses one device per entry; one here.
            return Device::Interface(iface.split(',').next().unwrap_or_default().to_string());
        }
    }
    let host = host_name();
    let resolves = !host.is_empty()
        && std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), 0)).is_ok_and(|mut a| a.next().is_some());
    Device::Host(if resolves { host } else { "127.0.0.1".into() })
}

/// Connects `rank` of `size` ranks through `store` (every rank calls it with the same store).
fn connect(store: &dyn Store, rank: usize, size: usize, timeout: Duration) -> Result<Context> {
    let name = "init_process_group";
    let to_c = |s: String| CString::new(s).map_err(|_| dist_error(name, "a NUL in an address"));
    let (host, iface) = match device_address() {
        Device::Interface(i) => (None, Some(to_c(i)?)),
        Device::Host(h) => (Some(to_c(h)?), None),
    };
    let user: &&dyn Store = &store;
    let vtable = ffi::gloo_shim_store {
        user: user as *const &dyn Store as *mut c_void,
        set: Some(store_set),
        get: Some(store_get),
        wait: Some(store_wait),
    };
    let mut raw = std::ptr::null_mut();
    call(name, |err, len| {
        // SAFETY: the vtable's user pointer outlives the call (connecting happens inside it);
        // the strings are NUL-terminated or null.
        unsafe {
            ffi::gloo_shim_connect(
                &vtable,
                rank as c_int,
                size as c_int,
                host.as_ref().map_or(std::ptr::null(), |h| h.as_ptr()),
                iface.as_ref().map_or(std::ptr::null(), |i| i.as_ptr()),
                millis(timeout),
                &mut raw,
                err,
                len,
            )
        }
    })?;
    NonNull::new(raw).map(|raw| Context { raw }).ok_or_else(|| dist_error(name, "Gloo returned no context"))
}

// ---- liveness (Note [Noticing a dead rank]) -----------------------------------------------------

/// How often a rank's heartbeat counter moves.
const HEARTBEAT: Duration = Duration::from_secs(1);
/// How long a heartbeat may stand still before its rank is declared dead.
const DEAD_AFTER: Duration = Duration::from_secs(6);
/// The store key where the first rank to notice a failure describes it.
const FAILURE_KEY: &str = "failure";
/// The store counter of the ranks that hold a verdict.
const SEEN_KEY: &str = "failure/seen";
/// How long rank 0 keeps its store up, at most, for the other ranks to read its verdict.
const LINGER: Duration = Duration::from_secs(3);

/// This host's name (empty when unknown).
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf has 256 bytes; gethostname NUL-terminates within them when it succeeds.
    if unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) } != 0 {
        return String::new();
    }
    String::from_utf8_lossy(&buf[..buf.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned()
}

/// Whether process `pid` of this host has ended (gone, or a zombie not yet reaped).
fn process_ended(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        return true;
    }
    // The state follows the command name's closing parenthesis: Z (zombie) or X (dead).
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])))
        .unwrap_or(false)
}

/// Which ranks of a world are alive (Note [Noticing a dead rank]).
pub(crate) struct Liveness {
    rank: usize,
    host: String,
    /// Every rank's host name and process id.
    peers: Vec<(String, i32)>,
    /// The first failure noticed: every later operation fails with it.
    verdict: Mutex<Option<String>>,
    /// The works not known to be complete, failed by a verdict.
    pending: Mutex<Vec<Work>>,
    /// The world's store, through a connection of its own where the store has them.
    store: Arc<dyn Store>,
}

impl Liveness {
    /// Publishes this rank in `store` (the world's) and reads every rank's entry, then starts
    /// the heartbeat.
    fn start(store: Arc<dyn Store>, rank: usize, size: usize) -> Result<Arc<Liveness>> {
        let host = host_name();
        store.add(&format!("heartbeat/{rank}"), 1)?;
        store.set(&format!("peer/{rank}"), format!("{}\n{}", std::process::id(), host).as_bytes())?;
        let mut peers = Vec::with_capacity(size);
        for r in 0..size {
            let v = store.get(&format!("peer/{r}"))?;
            let v = String::from_utf8_lossy(&v).into_owned();
            let (pid, h) = v.split_once('\n').unwrap_or(("0", ""));
            peers.push((h.to_string(), pid.parse().unwrap_or(0)));
        }
        // A connection of its own where the store has them: a rank blocked in the store (a
        // `new_group` waiting for late ranks) keeps beating.
        let store = store.clone_store()?.unwrap_or(store);
        let live =
            Arc::new(Liveness { rank, host, peers, verdict: Mutex::new(None), pending: Mutex::new(Vec::new()), store });
        let weak = Arc::downgrade(&live);
        std::thread::Builder::new()
            .name("gloo-heartbeat".into())
            .spawn(move || heartbeat(weak, rank, size))
            .map_err(|e| dist_error("init_process_group", format!("cannot start the heartbeat thread: {e}")))?;
        Ok(live)
    }

    /// The verdict, if a failure was noticed.
    fn verdict(&self) -> Option<String> {
        self.verdict.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Records the first failure and fails every pending work with it; with `publish`, tells
    /// the other ranks through the store (the first rank to notice names the failure for all).
    fn fail(&self, why: String, publish: bool) {
        if publish && self.verdict().is_none() {
            // Best effort: a store that cannot take it (its rank died) leaves each rank to its
            // own verdict, which this one still records below.
            let _ = self.store.set(FAILURE_KEY, why.as_bytes());
        }
        {
            let mut v = self.verdict.lock().unwrap_or_else(|e| e.into_inner());
            if v.is_some() {
                return;
            }
            tracing::error!(target: "torch::distributed", "{why}");
            *v = Some(why.clone());
        }
        // Best effort, for rank 0's linger.
        let _ = self.store.add(SEEN_KEY, 1);
        for w in self.pending.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            w.complete(Err(dist_error(w.op(), why.clone())));
        }
    }

    /// Tracks `work` until it completes; fails it at once after a verdict.
    fn track(&self, work: &Work) {
        if let Some(why) = self.verdict() {
            work.complete(Err(dist_error(work.op(), why)));
            return;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.retain(|w| !w.is_completed());
        pending.push(work.clone());
    }

    /// The other ranks of this host whose process has ended.
    fn dead_local_ranks(&self) -> Vec<usize> {
        (0..self.peers.len())
            .filter(|&r| {
                let (host, pid) = &self.peers[r];
                r != self.rank && *host == self.host && *pid > 0 && process_ended(*pid)
            })
            .collect()
    }

    /// The ranks of this host whose process has ended, described, or `None` when there are none.
    /// Rank 0 comes last: it serves the store, and when it ended beside another rank it most
    /// likely exited because it noticed that one's death (and its published verdict went with
    /// its store).
    fn describe_dead_local_ranks(&self) -> Option<String> {
        let mut dead = self.dead_local_ranks();
        dead.sort_by_key(|&r| (r == 0, r));
        let (&first, rest) = dead.split_first()?;
        let (host, pid) = &self.peers[first];
        let mut why = format!("rank {first} has died (its process {pid} on {host} ended)");
        if !rest.is_empty() {
            let others: Vec<String> = rest.iter().map(|r| r.to_string()).collect();
            why.push_str(&format!("; the processes of ranks {} have ended too", others.join(", ")));
        }
        Some(why)
    }

    /// `e` with the dead rank named when it is a failure in Gloo (see [`Liveness::explain`]).
    fn explained(&self, e: Error) -> Error {
        match &e {
            Error::Distributed { msg, .. } | Error::DistTimeout { msg, .. } if msg.starts_with("Gloo: ") => {
                self.explain(e)
            }
            _ => e,
        }
    }

    /// On rank 0, which serves the store, after a verdict: waits (at most [`LINGER`]) until
    /// every rank still running holds a verdict too, so that the published one is read before
    /// the store goes away with this process.
    fn linger(&self) {
        if self.rank != 0 || self.verdict().is_none() {
            return;
        }
        let want = (self.peers.len() - self.dead_local_ranks().len()) as i64;
        let deadline = Instant::now() + LINGER;
        while Instant::now() < deadline {
            match self.store.add(SEEN_KEY, 0) {
                Ok(seen) if seen < want => std::thread::sleep(Duration::from_millis(20)),
                _ => return,
            }
        }
    }

    /// The failure another rank published, if any.
    fn published(&self) -> Option<String> {
        match self.store.check(&[FAILURE_KEY]) {
            Ok(true) => self.store.get(FAILURE_KEY).ok().map(|v| String::from_utf8_lossy(&v).into_owned()),
            _ => None,
        }
    }

    /// `e`, a failure in Gloo, with the dead rank named when one can be found: a failure
    /// another rank published, a rank of this host whose process ended, or (waited for a
    /// little) the heartbeat's verdict.
    fn explain(&self, e: Error) -> Error {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            if self.verdict().is_none() {
                if let Some(why) = self.published() {
                    self.fail(why, false);
                } else if let Some(dead) = self.describe_dead_local_ranks() {
                    // A rank that noticed the failure first published it before it exited:
                    // read the store again before naming this one.
                    match self.published() {
                        Some(why) => self.fail(why, false),
                        None => self.fail(dead, true),
                    }
                }
            }
            if let Some(why) = self.verdict() {
                return match e {
                    Error::DistTimeout { op, msg } => Error::DistTimeout { op, msg: format!("{why}; {msg}") },
                    Error::Distributed { op, msg } => Error::Distributed { op, msg: format!("{why}; {msg}") },
                    other => other,
                };
            }
            if Instant::now() >= deadline || matches!(e, Error::DistTimeout { .. }) {
                return e;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The heartbeat thread of a world, until the world is dropped (Note [Noticing a dead rank]).
fn heartbeat(live: Weak<Liveness>, rank: usize, size: usize) {
    let keys: Vec<String> = (0..size).map(|r| format!("heartbeat/{r}")).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let mut seen: Vec<(Vec<u8>, Instant)> = vec![(Vec::new(), Instant::now()); size];
    loop {
        std::thread::sleep(HEARTBEAT);
        let Some(live) = live.upgrade() else { return };
        if live.verdict().is_some() {
            return;
        }
        // A rank blocked on a live peer learns of a failure here, not from its own transport.
        if let Some(why) = live.published() {
            live.fail(why, false);
            return;
        }
        let beat = live.store.add(keys[rank], 1).and_then(|_| live.store.multi_get(&keys));
        match beat {
            Ok(values) => {
                let now = Instant::now();
                for (r, v) in values.into_iter().enumerate() {
                    if seen[r].0 != v {
                        seen[r] = (v, now);
                    } else if r != rank && now - seen[r].1 > DEAD_AFTER {
                        live.fail(
                            format!(
                            "rank {r} has stopped responding (no heartbeat for {} s: its process died or hung, or its \
                             host is unreachable)",
                            DEAD_AFTER.as_secs()
                        ),
                            true,
                        );
                        return;
                    }
                }
            }
            Err(e) => {
                // The store's host often exits because it noticed a dead rank first (and its
                // published verdict went with it): a rank of this host whose process ended is
                // the better answer.
                let why = live.describe_dead_local_ranks().unwrap_or_else(|| {
                    format!("the rendezvous store stopped answering (rank 0 serves it; it may have died): {e}")
                });
                live.fail(why, false);
                return;
            }
        }
    }
}

// ---- the backend ------------------------------------------------------------------------------

type Job = Box<dyn FnOnce(&Context) + Send>;

pub(crate) struct GlooBackend {
    ctx: Arc<Context>,
    rank: usize,
    size: usize,
    /// The group's thread, which runs its collectives in order.
    jobs: Mutex<mpsc::Sender<Job>>,
    /// The tag of the next collective (the same sequence on every rank).
    next_tag: AtomicU32,
    /// The sequence number of the next message to each rank (Note [Gloo messages]).
    sent: Vec<AtomicU64>,
    store: Arc<dyn Store>,
    prefix: String,
    /// How many groups were split off this one (names their store prefix).
    splits: AtomicUsize,
    /// The world's (Note [Noticing a dead rank]).
    live: Arc<Liveness>,
    /// Whether this is the world (whose drop lingers for the verdict, Note [Noticing a dead rank]).
    is_world: bool,
}

impl Drop for GlooBackend {
    fn drop(&mut self) {
        if self.is_world {
            // Before `store` (and rank 0's server in it) goes.
            self.live.linger();
        }
    }
}

/// The worlds this process connected, for their store prefixes.
static WORLDS: AtomicUsize = AtomicUsize::new(0);

/// A group of `size` ranks, connected through `store` under `prefix`.
fn group(
    store: Arc<dyn Store>,
    prefix: String,
    rank: usize,
    size: usize,
    timeout: Duration,
    live: Option<Arc<Liveness>>,
) -> Result<GlooBackend> {
    let scoped = Arc::new(PrefixStore::new(&prefix, store.clone()));
    let ctx = Arc::new(connect(&*scoped, rank, size, timeout)?);
    let is_world = live.is_none();
    let live = match live {
        Some(live) => live,
        None => Liveness::start(scoped, rank, size)?,
    };
    let (tx, rx) = mpsc::channel::<Job>();
    let thread_ctx = ctx.clone();
    std::thread::Builder::new()
        .name(format!("gloo-{prefix}"))
        .spawn(move || {
            while let Ok(job) = rx.recv() {
                job(&thread_ctx);
            }
        })
        .map_err(|e| dist_error("init_process_group", format!("cannot start the Gloo thread: {e}")))?;
    Ok(GlooBackend {
        ctx,
        rank,
        size,
        jobs: Mutex::new(tx),
        next_tag: AtomicU32::new(0),
        sent: (0..size).map(|_| AtomicU64::new(0)).collect(),
        store,
        prefix,
        splits: AtomicUsize::new(0),
        live,
        is_world,
    })
}

/// The world group of the Gloo backend (Note [The Gloo backend]).
pub(crate) fn world(store: Arc<dyn Store>, rank: usize, size: usize, timeout: Duration) -> Result<Arc<dyn Backend>> {
    let k = WORLDS.fetch_add(1, Ordering::SeqCst);
    Ok(Arc::new(group(store, format!("gloo/{k}"), rank, size, timeout, None)?))
}

/// A collective on the group's thread.
struct Run<'a> {
    ctx: &'a Context,
    rank: usize,
    size: usize,
    tag: u32,
    timeout: Duration,
}

fn ptr(t: &Tensor) -> *mut c_void {
    t.data_ptr() as *mut c_void
}

fn nbytes(t: &Tensor) -> usize {
    t.numel() as usize * t.dtype().size()
}

impl Run<'_> {
    fn raw(&self) -> *mut ffi::gloo_shim_context {
        self.ctx.raw.as_ptr()
    }

    /// All-gathers `mine` (the same length on every rank).
    fn allgather_i64(&self, name: &str, mine: &[i64]) -> Result<Vec<i64>> {
        let mut all = vec![0i64; mine.len() * self.size];
        call(name, |err, len| {
            // SAFETY: mine has n elements, all has n per rank.
            unsafe {
                ffi::gloo_shim_allgather(
                    self.raw(),
                    mine.as_ptr() as *mut c_void,
                    all.as_mut_ptr() as *mut c_void,
                    std::mem::size_of_val(mine),
                    self.tag,
                    millis(self.timeout),
                    err,
                    len,
                )
            }
        })?;
        Ok(all)
    }

    fn allreduce(&self, name: &str, buf: &Tensor, op: ReduceOp) -> Result<()> {
        let f = reduce_fn(op, buf.dtype());
        call(name, |err, len| {
            // SAFETY: buf is a contiguous host tensor that the caller keeps alive.
            unsafe {
                ffi::gloo_shim_allreduce(
                    self.raw(),
                    ptr(buf),
                    buf.numel() as usize,
                    buf.dtype().size(),
                    Some(f),
                    self.tag,
                    millis(self.timeout),
                    err,
                    len,
                )
            }
        })
    }

    fn collective(&self, c: &Collective) -> Result<()> {
        let name = c.name();
        if let Some(desc) = describe_collective(c) {
            let all = self.allgather_i64(name, &desc)?;
            check_agreement(name, &all, &desc)?;
            // Every rank agreed on an empty buffer: nothing to move (Gloo wants bytes).
            if desc[2] == 0 && !matches!(c, Collective::Barrier | Collective::AllToAll { .. }) {
                return Ok(());
            }
        }
        let (raw, tag, ms) = (self.raw(), self.tag, millis(self.timeout));
        match c {
            Collective::AllReduce { buf, op } => {
                self.allreduce(name, buf, *op)?;
                if *op == ReduceOp::Avg {
                    divide(buf, self.size);
                }
            }
            Collective::Broadcast { buf, root } => call(name, |err, len| {
                // SAFETY: buf is a contiguous host tensor.
                unsafe { ffi::gloo_shim_broadcast(raw, ptr(buf), nbytes(buf), *root as c_int, tag, ms, err, len) }
            })?,
            Collective::Reduce { buf, root, op } => {
                let is_root = self.rank == *root;
                let f = reduce_fn(*op, buf.dtype());
                call(name, |err, len| {
                    // SAFETY: buf is a contiguous host tensor; the root reduces into it, the
                    // others into scratch memory of the shim's.
                    unsafe {
                        ffi::gloo_shim_reduce(
                            raw,
                            ptr(buf),
                            if is_root { ptr(buf) } else { std::ptr::null_mut() },
                            buf.numel() as usize,
                            buf.dtype().size(),
                            Some(f),
                            *root as c_int,
                            tag,
                            ms,
                            err,
                            len,
                        )
                    }
                })?;
                if is_root && *op == ReduceOp::Avg {
                    divide(buf, self.size);
                }
            }
            Collective::AllGather { input, output } => call(name, |err, len| {
                // SAFETY: output holds size blocks of input's bytes.
                unsafe { ffi::gloo_shim_allgather(raw, ptr(input), ptr(output), nbytes(input), tag, ms, err, len) }
            })?,
            Collective::Gather { input, output, root } => call(name, |err, len| {
                let out = output.as_ref().map_or(std::ptr::null_mut(), ptr);
                // SAFETY: out (root only) holds size blocks of input's bytes.
                unsafe { ffi::gloo_shim_gather(raw, ptr(input), out, nbytes(input), *root as c_int, tag, ms, err, len) }
            })?,
            Collective::Scatter { input, output, root } => call(name, |err, len| {
                let inp = input.as_ref().map_or(std::ptr::null_mut(), ptr);
                // SAFETY: inp (root only) holds size blocks of output's bytes.
                unsafe {
                    ffi::gloo_shim_scatter(raw, inp, ptr(output), nbytes(output), *root as c_int, tag, ms, err, len)
                }
            })?,
            Collective::ReduceScatter { input, output, op } => {
                // The ring only reads the input (Note [Gloo reduce-scatter] in shim.cc).
                let f = reduce_fn(*op, input.dtype());
                call(name, |err, len| {
                    // SAFETY: input holds size blocks of output's element count, both
                    // contiguous host tensors of input's dtype.
                    unsafe {
                        ffi::gloo_shim_reduce_scatter(
                            raw,
                            ptr(input),
                            ptr(output),
                            output.numel() as usize,
                            output.dtype().size(),
                            Some(f),
                            tag,
                            ms,
                            err,
                            len,
                        )
                    }
                })?;
                if *op == ReduceOp::Avg {
                    divide(output, self.size);
                }
            }
            Collective::AllToAll { input, send_counts, output, recv_counts } => {
                let all = self.allgather_i64(name, &counts_row(send_counts, recv_counts))?;
                check_counts(name, self.size, &all)?;
                let es = input.dtype().size() as i64;
                let sends: Vec<i64> = send_counts.iter().map(|&n| n as i64 * es).collect();
                let recvs: Vec<i64> = recv_counts.iter().map(|&n| n as i64 * es).collect();
                call(name, |err, len| {
                    // SAFETY: the byte counts describe consecutive blocks of input and output.
                    unsafe {
                        ffi::gloo_shim_alltoallv(
                            raw,
                            ptr(input),
                            sends.as_ptr(),
                            ptr(output),
                            recvs.as_ptr(),
                            tag,
                            ms,
                            err,
                            len,
                        )
                    }
                })?;
            }
            Collective::Barrier => call(name, |err, len| {
                // SAFETY: a connected context.
                unsafe { ffi::gloo_shim_barrier(raw, tag, ms, err, len) }
            })?,
            Collective::Send { .. } | Collective::Recv { .. } => unreachable!("posted, not queued"),
        }
        Ok(())
    }
}

// ---- point to point (Note [Gloo messages]) ------------------------------------------------------

/// A posted send or receive buffer.
struct Posted {
    raw: NonNull<ffi::gloo_shim_buffer>,
    _ctx: Arc<Context>,
}

// SAFETY: an unbound buffer is posted on one thread and waited for on another, never both at
// once; it is freed once, on drop.
unsafe impl Send for Posted {}

impl Drop for Posted {
    fn drop(&mut self) {
        // SAFETY: raw came from gloo_shim_buffer_new and is freed once.
        unsafe { ffi::gloo_shim_buffer_free(self.raw.as_ptr()) }
    }
}

impl Posted {
    /// A buffer over `len` bytes at `p`, which the caller keeps alive until it is dropped.
    fn new(op: &str, ctx: &Arc<Context>, p: *mut c_void, len: usize) -> Result<Posted> {
        let mut err = [0 as c_char; ERR_LEN];
        // SAFETY: a connected context; p addresses len bytes.
        let raw = unsafe { ffi::gloo_shim_buffer_new(ctx.raw.as_ptr(), p, len, err.as_mut_ptr(), ERR_LEN) };
        NonNull::new(raw)
            .map(|raw| Posted { raw, _ctx: ctx.clone() })
            .ok_or_else(|| shim_error(op, ffi::GLOO_SHIM_ERROR as c_int, &err))
    }

    fn send(&self, op: &str, dst: usize, slot: u64) -> Result<()> {
        // SAFETY: a live buffer.
        call(op, |err, len| unsafe { ffi::gloo_shim_send(self.raw.as_ptr(), dst as c_int, slot, err, len) })
    }

    fn recv(&self, op: &str, srcs: &[c_int], slot: u64) -> Result<()> {
        // SAFETY: a live buffer; srcs has srcs.len() ranks.
        call(op, |err, len| unsafe {
            ffi::gloo_shim_recv(self.raw.as_ptr(), srcs.as_ptr(), srcs.len(), slot, err, len)
        })
    }

    fn wait_send(&self, op: &str, timeout: Duration) -> Result<()> {
        // SAFETY: a live, posted buffer.
        call(op, |err, len| unsafe { ffi::gloo_shim_wait_send(self.raw.as_ptr(), millis(timeout), err, len) })
    }

    /// The rank the message came from.
    fn wait_recv(&self, op: &str, timeout: Duration) -> Result<usize> {
        let mut src: c_int = -1;
        // SAFETY: a live, posted buffer.
        call(op, |err, len| unsafe {
            ffi::gloo_shim_wait_recv(self.raw.as_ptr(), &mut src, millis(timeout), err, len)
        })?;
        Ok(src.max(0) as usize)
    }
}

/// The slot of the headers of messages with `tag`; Gloo's collectives use prefixes 1 to 8 in
/// the top byte.
fn header_slot(tag: i32) -> u64 {
    (0x7f << 56) | tag as u32 as u64
}

/// The slot of the data of message `seq` (from one sender to one receiver) with `tag`.
fn data_slot(seq: u64, tag: i32) -> u64 {
    (0x7e << 56) | ((seq & 0xff_ffff) << 32) | tag as u32 as u64
}

impl GlooBackend {
    fn send(&self, buf: Tensor, dst: usize, tag: i32, timeout: Duration, work: Work) -> Result<()> {
        let op = "send";
        let seq = self.sent[dst].fetch_add(1, Ordering::Relaxed);
        let mut header = Box::new([nbytes(&buf) as u64, seq]);
        let h = Posted::new(op, &self.ctx, header.as_mut_ptr() as *mut c_void, 16)?;
        let d = Posted::new(op, &self.ctx, ptr(&buf), nbytes(&buf))?;
        h.send(op, dst, header_slot(tag))?;
        d.send(op, dst, data_slot(seq, tag))?;
        let live = self.live.clone();
        spawn_waiter(op, work.clone(), move || {
            let r = h.wait_send(op, timeout).and_then(|_| d.wait_send(op, timeout)).map_err(|e| live.explained(e));
            // The buffers go before the memory they point at.
            drop((h, d));
            drop((header, buf));
            finish_work(&work, r.map(|_| None), None);
        })
    }

    fn recv(
        &self,
        buf: Tensor,
        src: Option<usize>,
        tag: i32,
        timeout: Duration,
        work: Work,
        finish: Option<Finish>,
    ) -> Result<()> {
        let op = "recv";
        let srcs: Vec<c_int> = match src {
            Some(s) => vec![s as c_int],
            None => (0..self.size).filter(|&r| r != self.rank).map(|r| r as c_int).collect(),
        };
        let mut header = Box::new([0u64; 2]);
        let h = Posted::new(op, &self.ctx, header.as_mut_ptr() as *mut c_void, 16)?;
        h.recv(op, &srcs, header_slot(tag))?;
        let (ctx, live) = (self.ctx.clone(), self.live.clone());
        spawn_waiter(op, work.clone(), move || {
            let r = (|| {
                let from = h.wait_recv(op, timeout)?;
                drop(h);
                let (len, seq) = (header[0] as usize, header[1]);
                let want = nbytes(&buf);
                let slot = data_slot(seq, tag);
                if len != want {
                    // Take the message off the wire, then report both sizes.
                    let mut scratch = vec![0u8; len];
                    let d = Posted::new(op, &ctx, scratch.as_mut_ptr() as *mut c_void, len)?;
                    d.recv(op, &[from as c_int], slot)?;
                    d.wait_recv(op, timeout)?;
                    let es = buf.dtype().size();
                    return Err(dist_error(
                        op,
                        format!(
                            "the message from rank {from} has {} elements, the receiving tensor {}",
                            len / es,
                            buf.numel()
                        ),
                    ));
                }
                let d = Posted::new(op, &ctx, ptr(&buf), want)?;
                d.recv(op, &[from as c_int], slot)?;
                d.wait_recv(op, timeout)?;
                Ok(Some(from))
            })();
            finish_work(&work, r.map_err(|e| live.explained(e)), finish);
        })
    }
}

/// Runs `f` on a thread of its own; a panic there fails `work`.
fn spawn_waiter(op: &str, work: Work, f: impl FnOnce() + Send + 'static) -> Result<()> {
    std::thread::Builder::new()
        .name(format!("gloo-{op}"))
        .spawn(move || {
            if catch_unwind(AssertUnwindSafe(f)).is_err() {
                work.complete(Err(dist_error(work.op(), "the Gloo backend panicked waiting for this operation")));
            }
        })
        .map(|_| ())
        .map_err(|e| dist_error(op, format!("cannot start a thread: {e}")))
}

impl Backend for GlooBackend {
    fn name(&self) -> &'static str {
        "gloo"
    }

    fn rank(&self) -> usize {
        self.rank
    }

    fn submit(&self, c: Collective, finish: Option<Finish>, timeout: Duration) -> Work {
        let work = Work::pending(c.name(), timeout);
        self.live.track(&work);
        if work.is_completed() {
            return work;
        }
        let posted = match c {
            Collective::Send { buf, dst, tag } => self.send(buf, dst, tag, timeout, work.clone()),
            Collective::Recv { buf, src, tag } => self.recv(buf, src, tag, timeout, work.clone(), finish),
            c => {
                let tag = self.next_tag.fetch_add(1, Ordering::Relaxed);
                let (rank, size, w, live) = (self.rank, self.size, work.clone(), self.live.clone());
                let job: Job = Box::new(move |ctx| {
                    let run = Run { ctx, rank, size, tag, timeout };
                    match catch_unwind(AssertUnwindSafe(|| run.collective(&c))) {
                        Ok(outcome) => finish_work(&w, outcome.map(|_| None).map_err(|e| live.explained(e)), finish),
                        Err(_) => {
                            w.complete(Err(dist_error(w.op(), "the Gloo backend panicked running this operation")))
                        }
                    }
                });
                let sent = self.jobs.lock().unwrap_or_else(|e| e.into_inner()).send(job).is_ok();
                if sent {
                    Ok(())
                } else {
                    Err(dist_error(work.op(), "the Gloo thread of this group has ended"))
                }
            }
        };
        if let Err(e) = posted {
            work.complete(Err(e));
        }
        work
    }

    fn split(&self, ranks: &[usize], timeout: Duration) -> Result<Option<Arc<dyn Backend>>> {
        let k = self.splits.fetch_add(1, Ordering::SeqCst);
        let Some(member) = ranks.iter().position(|&r| r == self.rank) else {
            return Ok(None);
        };
        let prefix = format!("{}/group{k}", self.prefix);
        Ok(Some(Arc::new(group(self.store.clone(), prefix, member, ranks.len(), timeout, Some(self.live.clone()))?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every aliasing case of [`combine`] (Note [Gloo reductions]) against the sums and minima
    /// written out, including NaN, which `min` propagates.
    #[test]
    fn combine_in_place_apart_unaligned_and_overlapping() {
        let a0: Vec<f32> = (0..37).map(|i| i as f32 * 0.5).collect();
        let b0: Vec<f32> = (0..37).map(|i| if i == 5 { f32::NAN } else { 10.0 - i as f32 }).collect();
        let want = |op: u8, i: usize| match op {
            0 => a0[i] + b0[i],
            _ if i == 5 => f32::NAN,
            _ => a0[i].min(b0[i]),
        };
        let check = |got: &[f32], op: u8, case: &str| {
            for (i, g) in got.iter().enumerate() {
                let w = want(op, i);
                assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{case} op {op} [{i}]: {g} != {w}");
            }
        };
        for (op, f) in [(0u8, combine::<f32, 0> as ReduceFn), (2, combine::<f32, 2>)] {
            let (mut a, b) = (a0.clone(), b0.clone());
            // SAFETY: buffers of 37 f32, c aliasing a or b as Gloo allows (so below too).
            unsafe { f(a.as_mut_ptr().cast(), a.as_ptr().cast(), b.as_ptr().cast(), 37) };
            check(&a, op, "c == a");
            let (a, mut b) = (a0.clone(), b0.clone());
            // SAFETY: as above.
            unsafe { f(b.as_mut_ptr().cast(), a.as_ptr().cast(), b.as_ptr().cast(), 37) };
            check(&b, op, "c == b");
            let mut c = vec![0f32; 37];
            // SAFETY: as above.
            unsafe { f(c.as_mut_ptr().cast(), a0.as_ptr().cast(), b0.as_ptr().cast(), 37) };
            check(&c, op, "apart");
            // Unaligned: the same values one byte into a byte buffer.
            let mut raw = [0u8; 37 * 4 + 1];
            let bytes: Vec<u8> = a0.iter().flat_map(|x| x.to_ne_bytes()).collect();
            raw[1..].copy_from_slice(&bytes);
            // SAFETY: as above, c and a one byte into `raw`.
            unsafe { f(raw[1..].as_mut_ptr().cast(), raw[1..].as_ptr().cast(), b0.as_ptr().cast(), 37) };
            let got: Vec<f32> = raw[1..].chunks(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect();
            check(&got, op, "unaligned");
        }
        // c overlapping a shifted by one element: element by element, each read before written.
        let mut buf: Vec<i32> = (0..9).collect();
        let tens = [10i32; 8];
        let p = buf.as_mut_ptr();
        // SAFETY: c = buf[1..9], a = buf[0..8], b = tens: 8 elements each inside their buffers.
        unsafe { combine::<i32, 0>(p.add(1).cast(), p.cast(), tens.as_ptr().cast(), 8) };
        assert_eq!(buf, [0, 10, 20, 30, 40, 50, 60, 70, 80]);
    }
}
