//! RecordFunction: the hook every operator call, backward node, optimizer step, DataLoader batch,
//! TorchScript node and user range goes through, and the observers (the profiler, `tracing`) that
//! watch them. PyTorch's `ATen/record_function.h`.
//!
//! Note [RecordFunction is free when off]: the dispatcher asks [`is_active`] once per operator
//! call: one relaxed load of a counter that is non-zero while any observer is registered
//! (globally, or on any thread) or while a `tracing` subscriber wants `torch::*` spans. For the
//! latter, each scope's target has a `tracing` callsite of ours ([`register_tracing_callsites`],
//! done when the dispatcher starts); tracing tells a callsite whenever the subscribers' interest
//! in it changes, and ours fold that into the same counter, so the check stays one load (asking
//! tracing's max level as well cost four more instructions per call). Only then does a call take the
//! slow path that builds a [`RecordFunction`]: the observers that want the event's scope are
//! collected (the global ones under a read lock, the thread's own from a thread-local), the
//! input shapes are gathered if one of them asked for them, and each observer is called at the
//! start and, when the guard drops, at the end — the same observers at both ends, even if one
//! is added or removed in between. Rejected: a `tracing` span per operator unconditionally
//! (about 40 ns each even with no subscriber interested, a third of a small op's cost), and a
//! function-pointer "hook" slot (it cannot hold the several observers PyTorch allows at once).
//!
//! Note [Events beside ranges]: allocator events ([`report_memory`]) and device-kernel events
//! ([`report_kernel`]) are not ranges; they go to the observers that asked for them
//! ([`Observer::wants_memory`], [`Observer::wants_kernels`]), counted apart so that an allocation
//! costs one relaxed load when nobody profiles memory. Attribution (which operator was running)
//! is the observer's: it sees the ranges open and close on each thread.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::sync::RwLock;

use crate::Device;

/// What kind of range a [`RecordFunction`] is (PyTorch's `RecordScope`). Each has its `tracing`
/// target, so a subscriber can filter, say, `torch::ops=trace` alone.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RecordScope {
    /// An operator call through the dispatcher (`aten::add`).
    Function,
    /// A node run by the autograd engine (`autograd::engine::evaluate_function: AddBackward0`).
    BackwardFunction,
    /// A node run by the TorchScript interpreter.
    TorchscriptFunction,
    /// An optimizer's `step` (`Optimizer.step#SGD.step`).
    Optimizer,
    /// One batch of a DataLoader (`enumerate(DataLoader)#...__next__`).
    DataLoader,
    /// A range the user opened with [`record_function`].
    UserScope,
}

impl RecordScope {
    /// Every scope, in declaration order.
    pub const ALL: [RecordScope; 6] = [
        RecordScope::Function,
        RecordScope::BackwardFunction,
        RecordScope::TorchscriptFunction,
        RecordScope::Optimizer,
        RecordScope::DataLoader,
        RecordScope::UserScope,
    ];

    /// The `tracing` target of this scope's spans.
    pub fn target(self) -> &'static str {
        match self {
            RecordScope::Function => "torch::ops",
            RecordScope::BackwardFunction => "torch::autograd",
            RecordScope::TorchscriptFunction => "torch::jit",
            RecordScope::Optimizer => "torch::optim",
            RecordScope::DataLoader => "torch::data",
            RecordScope::UserScope => "torch::user",
        }
    }

    fn bit(self) -> u32 {
        1 << self as u32
    }
}

/// A set of [`RecordScope`]s an observer wants.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ScopeSet(u32);

impl ScopeSet {
    /// Every scope.
    pub const ALL: ScopeSet = ScopeSet(u32::MAX);
    /// No scope (an observer of memory or kernel events only).
    pub const NONE: ScopeSet = ScopeSet(0);

    /// The set of the given scopes.
    pub fn of(scopes: &[RecordScope]) -> Self {
        ScopeSet(scopes.iter().fold(0, |m, s| m | s.bit()))
    }
    /// Whether `scope` is in the set.
    pub fn has(self, scope: RecordScope) -> bool {
        self.0 & scope.bit() != 0
    }
}

/// One input of an operator call as the profiler records it with `record_shapes`: PyTorch's
/// "Input Dims" (`[2, 3]` for a tensor, `[]` for anything else) and "Input type" (`float`,
/// `long int`, `Scalar`, `TensorList`, ...).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InputMeta {
    /// The tensor's sizes; empty for a non-tensor (and for a zero-dimensional tensor).
    pub dims: Vec<i64>,
    /// PyTorch's name of the input's type: the C++ dtype name for tensors (`float`, `double`,
    /// `long int`, `c10::Half`, `bool`), else `Scalar`, `int`, `bool`, `TensorList`, ... and
    /// the empty string for an absent optional.
    pub ty: Cow<'static, str>,
}

impl InputMeta {
    /// A tensor input: its sizes and its element type's C++ name.
    pub fn tensor(sizes: &[i64], dtype: crate::ScalarType) -> Self {
        InputMeta { dims: sizes.to_vec(), ty: dtype.type_meta_name().into() }
    }
    /// An absent optional input (`None`).
    pub fn none() -> Self {
        InputMeta { dims: Vec::new(), ty: "".into() }
    }
}

/// What an observer is told about a range at its start and end.
#[derive(Debug)]
pub struct RecordData {
    /// The range's name: the operator (`aten::addmm`), the node, the user's string.
    pub name: Cow<'static, str>,
    /// Its kind.
    pub scope: RecordScope,
    /// A number unique in the process, the same at the start and the end.
    pub id: u64,
    /// The autograd sequence number: for an operator that records a `grad_fn`, the number the
    /// node gets; for a backward node, its own (so the two can be linked); else -1.
    pub sequence_nr: i64,
    /// The thread the range runs on (see [`current_thread_id`]).
    pub thread_id: u64,
    /// The observed range this one is nested in on its thread (0 for none).
    pub parent_id: u64,
    /// For a backward node, the thread its forward operator ran on; else 0.
    pub fwd_thread_id: u64,
    /// The inputs' shapes and types, when an observer asked for them ([`Observer::needs_inputs`]).
    pub inputs: Option<Vec<InputMeta>>,
}

/// An allocator event: `bytes` is positive for an allocation and negative for a free.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryEvent {
    /// The block's address.
    pub ptr: usize,
    /// Bytes allocated (positive) or freed (negative).
    pub bytes: i64,
    /// Bytes held by tensors on the device after the event.
    pub total_allocated: u64,
    /// Bytes the allocator holds from the system on the device after the event (allocated and
    /// cached).
    pub total_reserved: u64,
    /// The block's device.
    pub device: Device,
}

/// A kernel that ran on a device, with host-clock times (nanoseconds since [`clock_ns`]'s
/// origin): from device events on a GPU, from the launch itself on the emulated device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelEvent {
    /// The kernel's entry point.
    pub name: String,
    /// Where it ran.
    pub device: Device,
    /// The stream's id on that device.
    pub stream: u64,
    /// Start, in [`clock_ns`] time.
    pub start_ns: u64,
    /// End, in [`clock_ns`] time.
    pub end_ns: u64,
    /// The thread that launched it.
    pub thread_id: u64,
    /// The innermost observed range open on that thread at the launch ([`current_range_id`]):
    /// the operator the kernel belongs to.
    pub correlation_id: u64,
}

/// Something that watches ranges and events: the profiler, the `tracing` bridge, a test.
/// Callbacks run on the thread of the event and must not call operators.
pub trait Observer: Send + Sync {
    /// The scopes whose ranges this observer is called for.
    fn scopes(&self) -> ScopeSet {
        ScopeSet::ALL
    }
    /// Whether the ranges' inputs (shapes and types) should be gathered (`record_shapes`).
    fn needs_inputs(&self) -> bool {
        false
    }
    /// Whether allocator events should be reported to [`Observer::on_memory`].
    fn wants_memory(&self) -> bool {
        false
    }
    /// Whether device kernels should be reported to [`Observer::on_kernel`].
    fn wants_kernels(&self) -> bool {
        false
    }
    /// A range starts.
    fn on_start(&self, _data: &RecordData) {}
    /// The range ends (same `data` as at the start).
    fn on_end(&self, _data: &RecordData) {}
    /// An allocation or a free.
    fn on_memory(&self, _event: &MemoryEvent) {}
    /// A device kernel ran.
    fn on_kernel(&self, _event: &KernelEvent) {}
}

/// The handle of a registered observer, to remove it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct CallbackHandle(u64);

type Registered = (CallbackHandle, Arc<dyn Observer>);

/// Observers of ranges, registered globally.
static GLOBAL: RwLock<Vec<Registered>> = RwLock::new(Vec::new());
/// Registered observers (global, plus thread-local ones on every thread): zero means no range
/// is observed anywhere. See Note [RecordFunction is free when off].
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// Registered observers that want memory events, likewise.
static MEMORY_ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// Registered observers that want kernel events, likewise.
static KERNELS_ACTIVE: AtomicUsize = AtomicUsize::new(0);
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);
static NEXT_RECORD_ID: AtomicU64 = AtomicU64::new(1);
static NEXT_THREAD_ID: AtomicU64 = AtomicU64::new(1);

/// Observers of this thread only; removed from the counters when the thread exits.
struct LocalObservers(RefCell<Vec<Registered>>);

impl Drop for LocalObservers {
    fn drop(&mut self) {
        for (_, o) in self.0.borrow().iter() {
            count(o.as_ref(), false);
        }
    }
}

thread_local! {
    static LOCAL: LocalObservers = const { LocalObservers(RefCell::new(Vec::new())) };
    static THREAD_ID: Cell<u64> = const { Cell::new(0) };
    static ENABLED: Cell<bool> = const { Cell::new(true) };
    static CURRENT: Cell<u64> = const { Cell::new(0) };
}

/// The id of the innermost observed range open on this thread (0 for none): what allocator
/// and kernel events are attributed to.
pub fn current_range_id() -> u64 {
    CURRENT.try_with(Cell::get).unwrap_or(0)
}

fn count(o: &dyn Observer, add: bool) {
    let step = |c: &AtomicUsize| {
        if add {
            c.fetch_add(1, Ordering::SeqCst);
        } else {
            c.fetch_sub(1, Ordering::SeqCst);
        }
    };
    step(&ACTIVE);
    if o.wants_memory() {
        step(&MEMORY_ACTIVE);
    }
    if o.wants_kernels() {
        step(&KERNELS_ACTIVE);
    }
}

/// Registers an observer for every thread (PyTorch's `addGlobalCallback`).
pub fn add_global_observer(o: Arc<dyn Observer>) -> CallbackHandle {
    register_tracing_callsites();
    let h = CallbackHandle(NEXT_HANDLE.fetch_add(1, Ordering::Relaxed));
    count(o.as_ref(), true);
    GLOBAL.write().unwrap_or_else(|e| e.into_inner()).push((h, o));
    h
}

/// Registers an observer for the calling thread only (PyTorch's `addThreadLocalCallback`).
pub fn add_thread_local_observer(o: Arc<dyn Observer>) -> CallbackHandle {
    register_tracing_callsites();
    let h = CallbackHandle(NEXT_HANDLE.fetch_add(1, Ordering::Relaxed));
    count(o.as_ref(), true);
    LOCAL.with(|l| l.0.borrow_mut().push((h, o)));
    h
}

/// Removes an observer registered by either function (a thread-local one only from its own
/// thread). Returns whether it was found. Ranges already started still end on it.
pub fn remove_observer(h: CallbackHandle) -> bool {
    let take = |v: &mut Vec<Registered>| v.iter().position(|(k, _)| *k == h).map(|i| v.remove(i));
    let found = take(&mut GLOBAL.write().unwrap_or_else(|e| e.into_inner()))
        .or_else(|| LOCAL.try_with(|l| take(&mut l.0.borrow_mut())).ok().flatten());
    match found {
        Some((_, o)) => {
            count(o.as_ref(), false);
            true
        }
        None => false,
    }
}

/// Whether any range would be observed: the dispatcher's one check per call (Note
/// [RecordFunction is free when off]).
#[inline(always)]
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::Relaxed) != 0
}

/// What a subscriber's interest in one of our callsites adds to [`ACTIVE`] (above any count of
/// observers).
const TRACING_ACTIVE: usize = 1 << (usize::BITS - 2);

/// The scopes whose targets some subscriber wants, one bit per scope; under its lock, the
/// transitions between none and some move [`TRACING_ACTIVE`] in and out of [`ACTIVE`].
static TRACING_WANTS: crate::sync::Mutex<u32> = crate::sync::Mutex::new(0);

/// A `tracing` callsite standing for one scope's spans: tracing calls `set_interest` on it when
/// subscribers come and go.
struct ScopeCallsite {
    scope: RecordScope,
    meta: tracing_core::Metadata<'static>,
}

impl tracing_core::Callsite for ScopeCallsite {
    fn set_interest(&self, interest: tracing_core::subscriber::Interest) {
        let mut wants = TRACING_WANTS.lock().unwrap_or_else(|e| e.into_inner());
        let before = *wants != 0;
        if interest.is_never() {
            *wants &= !self.scope.bit();
        } else {
            *wants |= self.scope.bit();
        }
        match (before, *wants != 0) {
            (false, true) => ACTIVE.fetch_add(TRACING_ACTIVE, Ordering::SeqCst),
            (true, false) => ACTIVE.fetch_sub(TRACING_ACTIVE, Ordering::SeqCst),
            _ => 0,
        };
    }
    fn metadata(&self) -> &tracing_core::Metadata<'_> {
        &self.meta
    }
}

macro_rules! scope_callsite {
    ($name:ident, $scope:expr, $target:literal) => {
        static $name: ScopeCallsite = ScopeCallsite {
            scope: $scope,
            meta: tracing_core::Metadata::new(
                "record_function",
                $target,
                tracing_core::Level::TRACE,
                Some(file!()),
                Some(line!()),
                Some(module_path!()),
                tracing_core::field::FieldSet::new(&["name", "sequence_nr"], tracing_core::identify_callsite!(&$name)),
                tracing_core::metadata::Kind::SPAN,
            ),
        };
    };
}

scope_callsite!(OPS_CALLSITE, RecordScope::Function, "torch::ops");
scope_callsite!(AUTOGRAD_CALLSITE, RecordScope::BackwardFunction, "torch::autograd");
scope_callsite!(JIT_CALLSITE, RecordScope::TorchscriptFunction, "torch::jit");
scope_callsite!(OPTIM_CALLSITE, RecordScope::Optimizer, "torch::optim");
scope_callsite!(DATA_CALLSITE, RecordScope::DataLoader, "torch::data");
scope_callsite!(USER_CALLSITE, RecordScope::UserScope, "torch::user");

/// Registers the callsites through which `tracing` tells [`is_active`] that a subscriber wants
/// our spans (Note [RecordFunction is free when off]). Idempotent; the dispatcher calls it when
/// it starts, and observers' registration does too.
pub fn register_tracing_callsites() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for cs in [&OPS_CALLSITE, &AUTOGRAD_CALLSITE, &JIT_CALLSITE, &OPTIM_CALLSITE, &DATA_CALLSITE, &USER_CALLSITE] {
            tracing_core::callsite::register(cs);
        }
    });
}

/// Whether allocator events would be observed.
#[inline(always)]
pub fn memory_active() -> bool {
    MEMORY_ACTIVE.load(Ordering::Relaxed) != 0
}

/// Whether device kernel events would be observed.
#[inline(always)]
pub fn kernels_active() -> bool {
    KERNELS_ACTIVE.load(Ordering::Relaxed) != 0
}

/// A small number naming the calling thread, from 1 in order of first use (PyTorch's
/// `RecordFunction::currentThreadId`).
pub fn current_thread_id() -> u64 {
    THREAD_ID
        .try_with(|t| {
            if t.get() == 0 {
                t.set(NEXT_THREAD_ID.fetch_add(1, Ordering::Relaxed));
            }
            t.get()
        })
        .unwrap_or(0)
}

/// Nanoseconds on a monotonic clock shared by every observer (the origin is the first call).
pub fn clock_ns() -> u64 {
    static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    ORIGIN.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
}

/// Turns recording off on this thread while alive (PyTorch's `RecordFunctionGuard(false)`): for
/// work an observer does not want to see, such as its own.
pub struct DisableRecordGuard {
    prev: bool,
}

impl DisableRecordGuard {
    /// Disables recording on this thread until dropped.
    pub fn new() -> Self {
        DisableRecordGuard { prev: ENABLED.with(|e| e.replace(false)) }
    }
}

impl Default for DisableRecordGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for DisableRecordGuard {
    fn drop(&mut self) {
        ENABLED.with(|e| e.set(self.prev));
    }
}

/// The observers that want `scope`, or none.
fn observers_for(scope: RecordScope) -> smallvec::SmallVec<[Arc<dyn Observer>; 2]> {
    let mut v = smallvec::SmallVec::new();
    if !ENABLED.try_with(Cell::get).unwrap_or(false) {
        return v;
    }
    for (_, o) in GLOBAL.read().unwrap_or_else(|e| e.into_inner()).iter() {
        if o.scopes().has(scope) {
            v.push(o.clone());
        }
    }
    let _ = LOCAL.try_with(|l| {
        for (_, o) in l.0.borrow().iter() {
            if o.scopes().has(scope) {
                v.push(o.clone());
            }
        }
    });
    v
}

/// The `tracing` span of a range, when a subscriber wants the scope's target.
fn span_for(scope: RecordScope, name: &str, seq: i64) -> Option<tracing::span::EnteredSpan> {
    // One callsite per target, so `RUST_LOG=torch::ops=trace` style filters select by scope.
    macro_rules! span {
        ($target:literal) => {
            if tracing::enabled!(target: $target, tracing::Level::TRACE) {
                Some(tracing::trace_span!(target: $target, "record_function", name, sequence_nr = seq).entered())
            } else {
                None
            }
        };
    }
    match scope {
        RecordScope::Function => span!("torch::ops"),
        RecordScope::BackwardFunction => span!("torch::autograd"),
        RecordScope::TorchscriptFunction => span!("torch::jit"),
        RecordScope::Optimizer => span!("torch::optim"),
        RecordScope::DataLoader => span!("torch::data"),
        RecordScope::UserScope => span!("torch::user"),
    }
}

struct Active {
    data: RecordData,
    observers: smallvec::SmallVec<[Arc<dyn Observer>; 2]>,
    _span: Option<tracing::span::EnteredSpan>,
}

/// A range in flight: built at the start of an operator call, node, step or user range, it
/// calls the observers' `on_start`, and their `on_end` when dropped. Inert (nothing allocated)
/// when nothing observes the scope. Not `Send`: a range starts and ends on one thread.
pub struct RecordFunction {
    active: Option<Box<Active>>,
}

impl RecordFunction {
    /// Starts a range. `inputs` is called only if an observer wants inputs; `sequence_nr` is -1
    /// when the range has none.
    pub fn start(
        scope: RecordScope,
        name: impl Into<Cow<'static, str>>,
        sequence_nr: i64,
        inputs: impl FnOnce() -> Vec<InputMeta>,
    ) -> Self {
        Self::start_with_fwd_thread(scope, name, sequence_nr, 0, inputs)
    }

    /// [`RecordFunction::start`] for a backward node, naming the thread its forward ran on.
    pub fn start_with_fwd_thread(
        scope: RecordScope,
        name: impl Into<Cow<'static, str>>,
        sequence_nr: i64,
        fwd_thread_id: u64,
        inputs: impl FnOnce() -> Vec<InputMeta>,
    ) -> Self {
        if !is_active() {
            return RecordFunction { active: None };
        }
        let observers = observers_for(scope);
        let name = name.into();
        let span = span_for(scope, &name, sequence_nr);
        if observers.is_empty() && span.is_none() {
            return RecordFunction { active: None };
        }
        let inputs = observers.iter().any(|o| o.needs_inputs()).then(inputs);
        let id = NEXT_RECORD_ID.fetch_add(1, Ordering::Relaxed);
        let parent_id = CURRENT.try_with(|c| c.replace(id)).unwrap_or(0);
        let data = RecordData {
            name,
            scope,
            id,
            sequence_nr,
            thread_id: current_thread_id(),
            parent_id,
            fwd_thread_id,
            inputs,
        };
        for o in &observers {
            o.on_start(&data);
        }
        RecordFunction { active: Some(Box::new(Active { data, observers, _span: span })) }
    }

    /// [`RecordFunction::start`] with a name that is built only when the range is observed
    /// (for names formatted at run time: `Optimizer.step#SGD.step`), no sequence number and no
    /// inputs.
    #[inline]
    pub fn start_named<N: Into<Cow<'static, str>>>(scope: RecordScope, name: impl FnOnce() -> N) -> Self {
        if !is_active() {
            return RecordFunction { active: None };
        }
        Self::start(scope, name(), -1, Vec::new)
    }

    /// Whether any observer (or `tracing` subscriber) sees this range.
    pub fn is_observed(&self) -> bool {
        self.active.is_some()
    }

    /// The range's data, when observed.
    pub fn data(&self) -> Option<&RecordData> {
        self.active.as_ref().map(|a| &a.data)
    }
}

impl Drop for RecordFunction {
    fn drop(&mut self) {
        if let Some(a) = self.active.take() {
            // Ends run in reverse order of starts, as nested scopes would.
            for o in a.observers.iter().rev() {
                o.on_end(&a.data);
            }
            let _ = CURRENT.try_with(|c| c.set(a.data.parent_id));
        }
    }
}

/// A user range (PyTorch's `torch.profiler.record_function("name")`): the returned guard ends
/// it when dropped.
///
/// ```
/// let _r = c10::record_function::record_function("data prep");
/// // ... work that shows as a "data prep" range in a profile ...
/// ```
pub fn record_function(name: impl Into<Cow<'static, str>>) -> RecordFunction {
    RecordFunction::start(RecordScope::UserScope, name, -1, Vec::new)
}

/// Reports an allocator event to the observers that want memory (call only when
/// [`memory_active`]; cheap to check first).
pub fn report_memory(event: MemoryEvent) {
    if !ENABLED.try_with(Cell::get).unwrap_or(false) {
        return;
    }
    let each = |o: &Arc<dyn Observer>| {
        if o.wants_memory() {
            o.on_memory(&event);
        }
    };
    GLOBAL.read().unwrap_or_else(|e| e.into_inner()).iter().for_each(|(_, o)| each(o));
    let _ = LOCAL.try_with(|l| l.0.borrow().iter().for_each(|(_, o)| each(o)));
}

/// Reports a device kernel to the observers that want kernels (call only when
/// [`kernels_active`]).
pub fn report_kernel(event: KernelEvent) {
    let each = |o: &Arc<dyn Observer>| {
        if o.wants_kernels() {
            o.on_kernel(&event);
        }
    };
    GLOBAL.read().unwrap_or_else(|e| e.into_inner()).iter().for_each(|(_, o)| each(o));
    let _ = LOCAL.try_with(|l| l.0.borrow().iter().for_each(|(_, o)| each(o)));
}

/// Autograd sequence numbers (PyTorch's `at::sequence_number`): a per-thread counter that
/// numbers the nodes an autograd-recording operator creates, so that later forward operations
/// get larger numbers. It lives here, below the dispatcher, so an operator's range can carry the
/// number its node will get (see [`RecordData::sequence_nr`]).
pub mod sequence_number {
    use std::cell::Cell;

    thread_local! {
        static NEXT: Cell<u64> = const { Cell::new(0) };
    }

    /// The number the next node of this thread will get.
    pub fn peek() -> u64 {
        NEXT.with(Cell::get)
    }

    /// The next number, advancing the counter.
    pub fn get_and_increment() -> u64 {
        NEXT.with(|c| {
            let n = c.get();
            c.set(n + 1);
            n
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Log(Mutex<Vec<String>>);

    impl Observer for Log {
        fn scopes(&self) -> ScopeSet {
            ScopeSet::of(&[RecordScope::UserScope])
        }
        fn on_start(&self, d: &RecordData) {
            self.0.lock().unwrap().push(format!("+{}", d.name));
        }
        fn on_end(&self, d: &RecordData) {
            self.0.lock().unwrap().push(format!("-{}", d.name));
        }
    }

    #[test]
    fn thread_local_observers_see_nested_ranges_of_their_scopes_only() {
        let log = Arc::new(Log::default());
        let h = add_thread_local_observer(log.clone());
        {
            let _a = record_function("outer");
            let _b = record_function("inner");
            let op = RecordFunction::start(RecordScope::Function, "aten::add", -1, Vec::new);
            assert!(!op.is_observed(), "Function is not among the observer's scopes");
        }
        // Another thread does not see this thread's observer.
        std::thread::spawn(|| assert!(!record_function("elsewhere").is_observed())).join().unwrap();
        {
            let _off = DisableRecordGuard::new();
            assert!(!record_function("hidden").is_observed());
        }
        assert!(remove_observer(h));
        assert!(!remove_observer(h), "removed once");
        let _after = record_function("after");
        assert_eq!(*log.0.lock().unwrap(), ["+outer", "+inner", "-inner", "-outer"]);
    }

    #[test]
    fn sequence_numbers_count_per_thread() {
        let a = sequence_number::peek();
        assert_eq!(sequence_number::get_and_increment(), a);
        assert_eq!(sequence_number::peek(), a + 1);
        std::thread::spawn(|| assert_eq!(sequence_number::peek(), 0)).join().unwrap();
    }
}
