//! The profiler's observer: turns RecordFunction ranges, allocator events and device kernels
//! into the events of one profile.

use std::backtrace::Backtrace;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use c10::record_function::{
    clock_ns, current_range_id, InputMeta, KernelEvent, MemoryEvent, Observer, RecordData, RecordScope, ScopeSet,
};
use c10::Device;

/// One range as profiled: PyTorch's `FunctionEvent`.
#[derive(Debug, Clone)]
pub struct FunctionEvent {
    /// The range's name (`aten::addmm`, `AddmmBackward0`, `Optimizer.step#SGD.step`, ...).
    pub name: String,
    /// What kind of range it was.
    pub scope: RecordScope,
    /// The RecordFunction id (unique in the process).
    pub id: u64,
    /// The thread it ran on.
    pub thread: u64,
    /// Start, in nanoseconds on the profiler's clock.
    pub start_ns: u64,
    /// End, in nanoseconds on the profiler's clock (the start, for a range still open when the
    /// profile ended).
    pub end_ns: u64,
    /// The autograd sequence number (-1 for none).
    pub sequence_nr: i64,
    /// For a backward node, its forward thread (0 when unknown).
    pub fwd_thread: u64,
    /// The inputs' shapes and types, with `record_shapes`.
    pub inputs: Option<Vec<InputMeta>>,
    /// The enclosing event's index in the profile (same thread).
    pub parent: Option<usize>,
    /// The indices of the events nested directly in this one.
    pub children: Vec<usize>,
    /// Bytes allocated minus freed on the CPU while this was the innermost range.
    pub self_cpu_memory: i64,
    /// Bytes allocated minus freed on devices while this was the innermost range.
    pub self_device_memory: i64,
    /// The device kernels launched while this was the innermost range (indices into
    /// [`Profile::kernels`](super::Profile::kernels)).
    pub kernels: Vec<usize>,
    /// The call stack at the start, with `with_stack` (symbolized when first printed).
    pub stack: Option<std::sync::Arc<Backtrace>>,
}

impl FunctionEvent {
    /// Duration in microseconds.
    pub fn duration_us(&self) -> f64 {
        (self.end_ns - self.start_ns) as f64 / 1000.0
    }

    /// The input shapes as PyTorch prints them (`[[2, 3], [3], []]`), or `[]`.
    pub fn input_shapes_string(&self) -> String {
        match &self.inputs {
            None => "[]".into(),
            Some(v) => {
                let parts: Vec<String> = v
                    .iter()
                    .map(|m| format!("[{}]", m.dims.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")))
                    .collect();
                format!("[{}]", parts.join(", "))
            }
        }
    }
}

/// An allocator event as profiled.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryRecord {
    /// When, in nanoseconds on the profiler's clock.
    pub ts_ns: u64,
    /// The event.
    pub event: MemoryEvent,
    /// The thread it happened on.
    pub thread: u64,
    /// The event index of the innermost range open on that thread, if any.
    pub event_index: Option<usize>,
}

/// A device kernel as profiled.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelRecord {
    /// The kernel's report.
    pub kernel: KernelEvent,
    /// The index of the launching range, if it was profiled.
    pub event_index: Option<usize>,
}

/// A live allocation seen during the profile.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveAllocation {
    /// The block's address.
    pub ptr: usize,
    /// Its bytes.
    pub bytes: i64,
    /// Its device.
    pub device: Device,
    /// The range that made it (its name), or `None` outside any range.
    pub made_by: Option<String>,
}

#[derive(Default)]
pub(crate) struct Collected {
    pub events: Vec<FunctionEvent>,
    pub by_id: HashMap<u64, usize>,
    pub memory: Vec<MemoryRecord>,
    pub kernels: Vec<KernelRecord>,
    pub live: HashMap<(Device, usize), LiveAllocation>,
    /// Nanoseconds on the c10 clock at which this collection started.
    pub origin_ns: u64,
}

/// What the collector records, fixed for one profile.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Config {
    pub record_shapes: bool,
    pub profile_memory: bool,
    pub with_stack: bool,
    pub kernels: bool,
}

pub(crate) struct Collector {
    pub config: Config,
    pub state: Mutex<Collected>,
}

impl Collector {
    pub fn new(config: Config) -> Self {
        Collector { config, state: Mutex::new(Collected { origin_ns: clock_ns(), ..Default::default() }) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Collected> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes what was collected so far and starts afresh.
    pub fn take(&self) -> Collected {
        let mut st = self.lock();
        std::mem::replace(&mut *st, Collected { origin_ns: clock_ns(), ..Default::default() })
    }
}

impl Observer for Collector {
    fn scopes(&self) -> ScopeSet {
        ScopeSet::ALL
    }
    fn needs_inputs(&self) -> bool {
        self.config.record_shapes
    }
    fn wants_memory(&self) -> bool {
        self.config.profile_memory
    }
    fn wants_kernels(&self) -> bool {
        self.config.kernels
    }

    fn on_start(&self, d: &RecordData) {
        let stack = self.config.with_stack.then(|| std::sync::Arc::new(Backtrace::force_capture()));
        let now = clock_ns();
        let mut st = self.lock();
        let parent = st.by_id.get(&d.parent_id).copied();
        let idx = st.events.len();
        st.events.push(FunctionEvent {
            name: d.name.to_string(),
            scope: d.scope,
            id: d.id,
            thread: d.thread_id,
            start_ns: now,
            end_ns: now,
            sequence_nr: d.sequence_nr,
            fwd_thread: d.fwd_thread_id,
            inputs: d.inputs.clone(),
            parent,
            children: Vec::new(),
            self_cpu_memory: 0,
            self_device_memory: 0,
            kernels: Vec::new(),
            stack,
        });
        if let Some(p) = parent {
            st.events[p].children.push(idx);
        }
        st.by_id.insert(d.id, idx);
    }

    fn on_end(&self, d: &RecordData) {
        let now = clock_ns();
        let mut st = self.lock();
        if let Some(&i) = st.by_id.get(&d.id) {
            st.events[i].end_ns = now;
        }
    }

    fn on_memory(&self, e: &MemoryEvent) {
        let now = clock_ns();
        let current = current_range_id();
        let thread = c10::record_function::current_thread_id();
        let mut st = self.lock();
        let event_index = st.by_id.get(&current).copied();
        if let Some(i) = event_index {
            let ev = &mut st.events[i];
            if e.device.is_cpu() {
                ev.self_cpu_memory += e.bytes;
            } else {
                ev.self_device_memory += e.bytes;
            }
        }
        if e.bytes > 0 {
            let made_by = event_index.map(|i| st.events[i].name.clone());
            st.live.insert((e.device, e.ptr), LiveAllocation { ptr: e.ptr, bytes: e.bytes, device: e.device, made_by });
        } else {
            st.live.remove(&(e.device, e.ptr));
        }
        st.memory.push(MemoryRecord { ts_ns: now, event: e.clone(), thread, event_index });
    }

    fn on_kernel(&self, k: &KernelEvent) {
        let mut st = self.lock();
        let event_index = st.by_id.get(&k.correlation_id).copied();
        let ki = st.kernels.len();
        if let Some(i) = event_index {
            st.events[i].kernels.push(ki);
        }
        st.kernels.push(KernelRecord { kernel: k.clone(), event_index });
    }
}
