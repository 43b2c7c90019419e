//! The profiler (PyTorch's `torch.profiler`): records every operator call, backward node,
//! optimizer step, DataLoader batch and user range through c10's RecordFunction, with input
//! shapes, allocator events and device kernels when asked; aggregates them
//! ([`Profile::key_averages`], `table()`) and writes Chrome traces
//! ([`Profile::export_chrome_trace`]) that Perfetto and `chrome://tracing` open.
//!
//! ```
//! use autograd::profiler::{profile, ProfilerActivity};
//! let a = aten::ops::ones(&[64, 64], None, None, None, None)?;
//! let mut prof = profile().activities(&[ProfilerActivity::CPU]).record_shapes(true).start();
//! let b = aten::ops::mm(&a, &a)?;
//! let p = prof.stop();
//! let table = p.key_averages().table("cpu_time_total", 10);
//! assert!(table.contains("aten::mm"));
//! # Ok::<(), c10::Error>(())
//! ```
//!
//! Note [One profile per cycle]: with a [`schedule`], the profiler observes from the first
//! warm-up step, throws away what the warm-up collected when the active steps begin, and at the
//! end of each active cycle hands the cycle's [`Profile`] to `on_trace_ready` (PyTorch's
//! semantics; `stop` ends a cycle in progress the same way). Without a schedule, the whole span
//! from `start` to `stop` is one cycle. The collector is registered only while the schedule
//! wants events, so skipped steps cost what an unprofiled step costs.

mod averages;
mod chrome;
mod collector;

use std::sync::Arc;

use c10::record_function::{add_global_observer, remove_observer, CallbackHandle};

pub use averages::{EventAverages, KeyAverages};
pub use collector::{FunctionEvent, KernelRecord, LiveAllocation, MemoryRecord};

use collector::{Collector, Config};

/// What to profile (PyTorch's `ProfilerActivity`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ProfilerActivity {
    /// Ranges on the host: operators, backward nodes, steps, batches, user ranges.
    CPU,
    /// Kernels on CUDA devices (from device events on a GPU, from the launch on the emulated
    /// device), on their own tracks, and their time in the tables' CUDA columns.
    CUDA,
}

/// What the schedule asks of one step (PyTorch's `ProfilerAction`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ProfilerAction {
    /// Not profiled.
    None,
    /// Profiled, and the events thrown away (the first steps pay one-time costs).
    Warmup,
    /// Profiled.
    Record,
    /// Profiled; the cycle ends with this step and its profile is handed on.
    RecordAndSave,
}

/// A profiling schedule: which steps are skipped, warmed up and recorded.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Steps skipped once, before the first cycle.
    pub skip_first: u64,
    /// Steps skipped at the start of each cycle.
    pub wait: u64,
    /// Steps profiled and thrown away after the wait.
    pub warmup: u64,
    /// Steps recorded; the last one ends the cycle.
    pub active: u64,
    /// Cycles to run (0: until the profiler stops).
    pub repeat: u64,
}

/// PyTorch's `torch.profiler.schedule(wait=, warmup=, active=, repeat=)`.
pub fn schedule(wait: u64, warmup: u64, active: u64, repeat: u64) -> Schedule {
    Schedule { skip_first: 0, wait, warmup, active, repeat }
}

impl Schedule {
    /// Skips `n` steps once, before the first cycle (PyTorch's `skip_first`).
    pub fn skip_first(mut self, n: u64) -> Self {
        self.skip_first = n;
        self
    }

    /// The action for step `step` (counted from 0).
    pub fn action(&self, step: u64) -> ProfilerAction {
        if step < self.skip_first {
            return ProfilerAction::None;
        }
        let step = step - self.skip_first;
        let cycle = self.wait + self.warmup + self.active;
        if cycle == 0 || self.active == 0 || (self.repeat > 0 && step / cycle >= self.repeat) {
            return ProfilerAction::None;
        }
        let m = step % cycle;
        if m < self.wait {
            ProfilerAction::None
        } else if m < self.wait + self.warmup {
            ProfilerAction::Warmup
        } else if m + 1 < cycle {
            ProfilerAction::Record
        } else {
            ProfilerAction::RecordAndSave
        }
    }
}

type TraceReady = Box<dyn FnMut(&Profile) + Send>;

/// Settings of a profiler, finished by [`ProfileBuilder::start`]. From [`profile`].
pub struct ProfileBuilder {
    activities: Vec<ProfilerActivity>,
    config: Config,
    schedule: Option<Schedule>,
    on_trace_ready: Option<TraceReady>,
}

/// PyTorch's `torch.profiler.profile(...)`: the settings, then `.start()`. By default it
/// profiles the CPU and, when a CUDA device is in use, CUDA kernels.
pub fn profile() -> ProfileBuilder {
    ProfileBuilder {
        activities: vec![ProfilerActivity::CPU, ProfilerActivity::CUDA],
        config: Config::default(),
        schedule: None,
        on_trace_ready: None,
    }
}

impl ProfileBuilder {
    /// What to profile.
    pub fn activities(mut self, a: &[ProfilerActivity]) -> Self {
        self.activities = a.to_vec();
        self
    }
    /// Record each operator's input shapes and types.
    pub fn record_shapes(mut self, on: bool) -> Self {
        self.config.record_shapes = on;
        self
    }
    /// Record allocations and frees, attributed to the operator running.
    pub fn profile_memory(mut self, on: bool) -> Self {
        self.config.profile_memory = on;
        self
    }
    /// Record the call stack of each range (Rust backtraces, symbolized when printed).
    pub fn with_stack(mut self, on: bool) -> Self {
        self.config.with_stack = on;
        self
    }
    /// Profile on a schedule, advanced by [`Profiler::step`].
    pub fn schedule(mut self, s: Schedule) -> Self {
        self.schedule = Some(s);
        self
    }
    /// Called with each finished cycle's profile (see Note [One profile per cycle]).
    pub fn on_trace_ready(mut self, f: impl FnMut(&Profile) + Send + 'static) -> Self {
        self.on_trace_ready = Some(Box::new(f));
        self
    }

    /// Starts profiling.
    pub fn start(self) -> Profiler {
        let cpu = self.activities.contains(&ProfilerActivity::CPU);
        let mut config = self.config;
        config.kernels = self.activities.contains(&ProfilerActivity::CUDA);
        let mut p = Profiler {
            config,
            cpu,
            schedule: self.schedule,
            on_trace_ready: self.on_trace_ready,
            step_num: 0,
            action: ProfilerAction::None,
            collector: None,
            last: None,
            step_range: None,
        };
        let first = p.action_at(0);
        p.enter(first);
        p.open_step_range();
        p
    }
}

/// A running profiler. [`Profiler::stop`] ends it; dropping it stops it too.
pub struct Profiler {
    config: Config,
    cpu: bool,
    schedule: Option<Schedule>,
    on_trace_ready: Option<TraceReady>,
    step_num: u64,
    action: ProfilerAction,
    collector: Option<(Arc<Collector>, CallbackHandle)>,
    last: Option<Profile>,
    step_range: Option<c10::record_function::RecordFunction>,
}

impl Profiler {
    fn action_at(&self, step: u64) -> ProfilerAction {
        match &self.schedule {
            Some(s) => s.action(step),
            None => ProfilerAction::Record,
        }
    }

    fn enter(&mut self, next: ProfilerAction) {
        use ProfilerAction::*;
        let recording = |a| matches!(a, Warmup | Record | RecordAndSave);
        if recording(next) && self.collector.is_none() {
            let c = Arc::new(Collector::new(self.config));
            let observer: Arc<dyn c10::record_function::Observer> = c.clone();
            let h = add_global_observer(if self.cpu { observer } else { Arc::new(KernelsOnly(c.clone())) });
            self.collector = Some((c, h));
        }
        if matches!(next, Record | RecordAndSave) && self.action == Warmup {
            if let Some((c, _)) = &self.collector {
                c.take();
            }
        }
        self.action = next;
    }

    /// Ends the current cycle: hands its profile on and stops observing.
    fn finish_cycle(&mut self) {
        self.step_range = None;
        if let Some((c, h)) = self.collector.take() {
            remove_observer(h);
            let keep = matches!(self.action, ProfilerAction::Record | ProfilerAction::RecordAndSave);
            if keep {
                let profile = Profile::from_collected(c.take());
                if let Some(f) = &mut self.on_trace_ready {
                    f(&profile);
                }
                self.last = Some(profile);
            }
        }
    }

    fn open_step_range(&mut self) {
        if self.schedule.is_some() && self.collector.is_some() {
            self.step_range = Some(c10::record_function::RecordFunction::start(
                c10::record_function::RecordScope::UserScope,
                format!("ProfilerStep#{}", self.step_num),
                -1,
                Vec::new,
            ));
        }
    }

    /// Marks the end of a step (PyTorch's `prof.step()`): the schedule decides what the next
    /// step is; a cycle that ends here hands its profile to `on_trace_ready`.
    pub fn step(&mut self) {
        self.step_range = None;
        let prev = self.action;
        self.step_num += 1;
        let next = self.action_at(self.step_num);
        if prev == ProfilerAction::RecordAndSave || (prev != ProfilerAction::None && next == ProfilerAction::None) {
            self.finish_cycle();
        }
        self.enter(next);
        self.open_step_range();
    }

    /// The steps counted so far.
    pub fn step_num(&self) -> u64 {
        self.step_num
    }

    /// Stops profiling and returns the last cycle's profile (empty if no cycle recorded).
    pub fn stop(mut self) -> Profile {
        self.finish_cycle();
        self.last.take().unwrap_or_else(|| Profile::from_collected(Default::default()))
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        self.step_range = None;
        if let Some((_, h)) = self.collector.take() {
            remove_observer(h);
        }
    }
}

/// An observer that passes on kernel (and memory) events only: `activities(&[CUDA])`.
struct KernelsOnly(Arc<Collector>);

impl c10::record_function::Observer for KernelsOnly {
    fn scopes(&self) -> c10::record_function::ScopeSet {
        c10::record_function::ScopeSet::NONE
    }
    fn wants_kernels(&self) -> bool {
        true
    }
    fn wants_memory(&self) -> bool {
        self.0.config.profile_memory
    }
    fn on_memory(&self, e: &c10::record_function::MemoryEvent) {
        c10::record_function::Observer::on_memory(&*self.0, e);
    }
    fn on_kernel(&self, k: &c10::record_function::KernelEvent) {
        c10::record_function::Observer::on_kernel(&*self.0, k);
    }
}

/// The events of one profiling cycle.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    /// Every range, in start order.
    pub events: Vec<FunctionEvent>,
    /// Allocator events, in order.
    pub memory: Vec<MemoryRecord>,
    /// Device kernels, in report order.
    pub kernels: Vec<KernelRecord>,
    /// Allocations made during the cycle and not freed by its end.
    pub live: Vec<LiveAllocation>,
    /// Start of the cycle, in nanoseconds on c10's clock (trace timestamps count from here).
    pub origin_ns: u64,
}

impl Profile {
    fn from_collected(c: collector::Collected) -> Profile {
        let mut live: Vec<LiveAllocation> = c.live.into_values().collect();
        live.sort_by_key(|a| (a.device.index, a.ptr));
        Profile { events: c.events, memory: c.memory, kernels: c.kernels, live, origin_ns: c.origin_ns }
    }

    /// The events grouped by name (PyTorch's `prof.key_averages()`), in order of first
    /// appearance.
    pub fn key_averages(&self) -> KeyAverages {
        averages::key_averages(self, false)
    }

    /// The events grouped by name and input shapes (`key_averages(group_by_input_shape=True)`).
    pub fn key_averages_by_input_shape(&self) -> KeyAverages {
        averages::key_averages(self, true)
    }

    /// The Chrome trace (Trace Event Format) as JSON text.
    pub fn chrome_trace(&self) -> String {
        chrome::trace_json(self)
    }

    /// Writes the Chrome trace to `path` (PyTorch's `export_chrome_trace`), through a
    /// temporary file renamed into place, so a failed write leaves no partial trace.
    pub fn export_chrome_trace(&self, path: impl AsRef<std::path::Path>) -> c10::Result<()> {
        let path = path.as_ref();
        let io = |e: std::io::Error| c10::Error::invalid("export_chrome_trace", format!("{}: {e}", path.display()));
        let tmp = path.with_extension("json.partial");
        std::fs::write(&tmp, self.chrome_trace()).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io(e)
        })
    }

    /// The events whose name is `name`, in start order.
    pub fn events_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a FunctionEvent> + 'a {
        self.events.iter().filter(move |e| e.name == name)
    }

    /// The device time of kernel `k`, in nanoseconds.
    fn kernel_ns(&self, k: usize) -> u64 {
        let k = &self.kernels[k].kernel;
        k.end_ns.saturating_sub(k.start_ns)
    }
}
