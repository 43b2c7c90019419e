//! The CUDA caching allocator: device memory is taken from the driver in segments, cut into
//! blocks and kept after a free for reuse on the same stream, so a training loop in steady state
//! makes no driver calls. PyTorch's `CUDACachingAllocator` policy over an abstract
//! [`DeviceMemory`], so it runs against the real driver, the emulated device or a test double.

// Note [CUDA caching allocator policy]
// ------------------------------------
// The policy is PyTorch's (`c10/cuda/CUDACachingAllocator.cpp`), with its default configuration:
//
// - Sizes. Every request is rounded up to a multiple of MIN_BLOCK_SIZE (512 B). Rounded sizes up
//   to SMALL_SIZE (1 MiB) live in the small pool, larger ones in the large pool. When the pool has
//   no fitting block, a segment is taken from the driver: SMALL_BUFFER (2 MiB) for small
//   requests, LARGE_BUFFER (20 MiB) for requests below MIN_LARGE_ALLOC (10 MiB), and otherwise
//   the request rounded up to ROUND_LARGE (2 MiB).
// - Lookup. Each pool is ordered by (stream, size, address); the allocator takes the first block
//   at or after (request stream, rounded size) and accepts it only if it belongs to the request's
//   stream: best fit, lowest address among equals, and no reuse across streams. A block freed on
//   stream A has only been ordered after A's work; handing it to stream B without an event would
//   let B overwrite memory A's kernels still read.
// - Splitting. A found block larger than the request is split when the remainder is at least
//   512 B (small pool) or more than 1 MiB (large pool); the front becomes the allocation and the
//   remainder goes back to the pool. Below that the whole block is handed out (an 11 MiB request
//   gets all of its 12 MiB segment): a large-pool sliver of at most 1 MiB would only fragment.
// - Coalescing. The blocks of one segment form a doubly linked list (`prev`/`next`). A freed
//   block absorbs free, event-free neighbours, so two adjacent free blocks never coexist; a
//   segment whose blocks are all free is one unsplit block again.
// - Cross-stream use. `record_stream(block, s)` notes that kernels on stream `s` (other than the
//   allocation stream, which is ignored) use the block. When such a block is freed, one event is
//   recorded per noted stream and the block stays out of the pool until all of them completed.
//   Completion is checked lazily: `process_events` runs at the start of each allocation and walks
//   each stream's queue of events in order, stopping at the first unfinished one (one queue per
//   stream, so a long-running stream does not hold back blocks waiting on others).
// - Out of memory. When the driver refuses a segment, every cached unsplit block of the device
//   (both pools, all streams) is returned to the driver after waiting for outstanding events
//   (`release_cached_blocks`), and the driver is asked once more (counted in
//   `num_alloc_retries`). If that fails too, the error carries PyTorch's message with the
//   device's total and free memory and the allocator's own allocated and reserved bytes. Split
//   segments are never returned: part of them is in use. The message stops before PyTorch's
//   closing hint (`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`), a setting we do not have,
//   and has no per-process line (`reportProcessMemoryInfo`, NVML).
// - `empty_cache` is `release_cached_blocks` on every device. Unlike PyTorch, which never frees
//   its caches at exit, the last handle or block to go returns every segment to the driver.
// - Zero-byte requests take no device memory and never reach the driver; their address is
//   ZERO_SIZE_ADDRESS (PyTorch's is null, which a DataPtr cannot hold).
// - Statistics are PyTorch's: per pool and in aggregate, current/peak/allocated/freed of
//   allocations, segments, active and inactive-split blocks and their bytes. "Allocated" ends
//   when the owner frees a block, "active" when its events also completed.
//
// PyTorch features left out, with their defaults taken: `max_split_size` (unlimited, so no block
// is "oversize" and `release_available_cached_blocks` is a no-op), `roundup_power2_divisions`
// (off), garbage collection thresholds (off), expandable segments, CUDA-graph private pools and
// the free-memory callbacks. `set_memory_fraction` is kept.
//
// Rejected alternative: dropping the device lock around the driver's malloc (PyTorch can, with
// `release_lock_on_cudamalloc`). Another thread could then take the block being allocated or
// change the pools under the retry logic; with one mutex per device the contention is per device
// and the driver call is rare in steady state.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::ptr::NonNull;
use std::sync::{Arc, MutexGuard, PoisonError};

use crate::sync::Mutex;

use crate::{DataPtr, Device, Error, Result};

/// A CUDA stream handle as the driver layer names it (`CUstream` as an integer).
pub type StreamId = u64;

/// Every size is rounded up to a multiple of this.
pub const MIN_BLOCK_SIZE: usize = 512;
/// Largest rounded size served from the small pool.
pub const SMALL_SIZE: usize = 1 << 20;
/// Segment size for small requests.
pub const SMALL_BUFFER: usize = 2 << 20;
/// Requests from here on get a segment of their own size (rounded to [`ROUND_LARGE`]).
pub const MIN_LARGE_ALLOC: usize = 10 << 20;
/// Segment size for large requests below [`MIN_LARGE_ALLOC`].
pub const LARGE_BUFFER: usize = 20 << 20;
/// Own-segment requests are rounded up to a multiple of this.
pub const ROUND_LARGE: usize = 2 << 20;

/// Address of every zero-byte block: never dereferenced and never given to the driver. PyTorch
/// uses a null pointer, which a [`DataPtr`] cannot hold; 512 is aligned like every real block and
/// is never a device allocation.
pub const ZERO_SIZE_ADDRESS: u64 = MIN_BLOCK_SIZE as u64;

/// A failed driver call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriverError {
    /// The device has no room for the allocation (`CUDA_ERROR_OUT_OF_MEMORY`); the allocator
    /// frees its cache and retries.
    OutOfMemory,
    /// Any other failure, with the driver's complete message ("CUDA error: ..."); reported as
    /// [`Error::Cuda`].
    Other(String),
}

/// Device memory as the allocator sees it (implemented by the real CUDA driver via cudarc and by
/// the emulated device).
pub trait DeviceMemory: Send + Sync {
    /// cuMemAlloc: `Ok(address)` or `Err(DriverError::OutOfMemory)` when the device is out of
    /// memory (other failures: `Err(DriverError::Other(msg))`).
    fn malloc(&self, device: i8, nbytes: usize) -> std::result::Result<u64, DriverError>;
    /// cuMemFree of an address returned by [`DeviceMemory::malloc`].
    fn free(&self, device: i8, ptr: u64);
    /// `(free, total)` bytes of the device, for the out-of-memory message.
    fn mem_info(&self, device: i8) -> (usize, usize);
    /// Records an event on `stream` (of `device`) and returns its handle.
    fn record_event(&self, device: i8, stream: StreamId) -> u64;
    /// Whether all work submitted before the event has finished.
    fn event_query(&self, event: u64) -> bool;
    /// Releases an event handle.
    fn event_destroy(&self, event: u64);
    /// Blocks until the event completed (cuEventSynchronize). Used before returning memory to the
    /// driver; the default polls [`DeviceMemory::event_query`].
    fn event_synchronize(&self, event: u64) {
        while !self.event_query(event) {
            std::thread::yield_now();
        }
    }
}

/// `n` rounded up to a multiple of [`MIN_BLOCK_SIZE`] (at least one); `None` if that overflows.
pub fn round_size(n: usize) -> Option<usize> {
    n.max(1).checked_next_multiple_of(MIN_BLOCK_SIZE)
}

/// The segment size the driver is asked for when no cached block fits a request of `size` bytes
/// (already rounded); `None` if that overflows. See Note [CUDA caching allocator policy].
pub fn allocation_size(size: usize) -> Option<usize> {
    if size <= SMALL_SIZE {
        Some(SMALL_BUFFER)
    } else if size < MIN_LARGE_ALLOC {
        Some(LARGE_BUFFER)
    } else {
        size.checked_next_multiple_of(ROUND_LARGE)
    }
}

/// PyTorch's size pretty-printer: up to 1024 as "N bytes", then KiB, MiB and GiB with two
/// decimals (each unit is used up to and including 1024 of it).
pub fn format_size(size: usize) -> String {
    const KIB: usize = 1 << 10;
    const MIB: usize = 1 << 20;
    const GIB: usize = 1 << 30;
    let s = size as f64;
    if size <= KIB {
        format!("{size} bytes")
    } else if size <= MIB {
        format!("{:.2} KiB", s / KIB as f64)
    } else if size <= GIB {
        format!("{:.2} MiB", s / MIB as f64)
    } else {
        format!("{:.2} GiB", s / GIB as f64)
    }
}

// ---- statistics ---------------------------------------------------------------------------------

/// One counter as PyTorch keeps it: the current value, its peak since the last reset, and the
/// cumulative increases and decreases.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// Current value.
    pub current: i64,
    /// Largest `current` since creation or [`CachingAllocator::reset_peak_memory_stats`].
    pub peak: i64,
    /// Sum of all increases.
    pub allocated: i64,
    /// Sum of all decreases.
    pub freed: i64,
}

impl Stat {
    fn increase(&mut self, n: i64) {
        self.current += n;
        self.peak = self.peak.max(self.current);
        self.allocated += n;
    }

    fn decrease(&mut self, n: i64) {
        self.current -= n;
        debug_assert!(self.current >= 0, "statistic went negative");
        self.freed += n;
    }
}

/// A [`Stat`] in aggregate and per pool.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct StatArray {
    /// Both pools together.
    pub all: Stat,
    /// The small pool (blocks up to [`SMALL_SIZE`]).
    pub small_pool: Stat,
    /// The large pool.
    pub large_pool: Stat,
}

impl StatArray {
    fn pool_mut(&mut self, pool: Pool) -> &mut Stat {
        match pool {
            Pool::Small => &mut self.small_pool,
            Pool::Large => &mut self.large_pool,
        }
    }

    fn increase(&mut self, pool: Pool, n: usize) {
        self.all.increase(n as i64);
        self.pool_mut(pool).increase(n as i64);
    }

    fn decrease(&mut self, pool: Pool, n: usize) {
        self.all.decrease(n as i64);
        self.pool_mut(pool).decrease(n as i64);
    }

    /// Adds a signed change (net effect of a merge and a reinsertion).
    fn change(&mut self, pool: Pool, delta: i64) {
        if delta > 0 {
            self.all.increase(delta);
            self.pool_mut(pool).increase(delta);
        } else if delta < 0 {
            self.all.decrease(-delta);
            self.pool_mut(pool).decrease(-delta);
        }
    }

    fn each_mut(&mut self) -> [&mut Stat; 3] {
        [&mut self.all, &mut self.small_pool, &mut self.large_pool]
    }
}

/// The statistics of one device, PyTorch's `DeviceStats`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Blocks handed out and not yet freed by their owner.
    pub allocation: StatArray,
    /// Segments obtained from the driver and not yet returned.
    pub segment: StatArray,
    /// Allocated blocks plus freed blocks still waiting for their stream events.
    pub active: StatArray,
    /// Free blocks inside split segments (cached but not returnable to the driver).
    pub inactive_split: StatArray,
    /// Bytes of `allocation` (rounded sizes).
    pub allocated_bytes: StatArray,
    /// Bytes of `segment`.
    pub reserved_bytes: StatArray,
    /// Bytes of `active`.
    pub active_bytes: StatArray,
    /// Bytes of `inactive_split`.
    pub inactive_split_bytes: StatArray,
    /// Bytes originally requested for the active blocks (before rounding).
    pub requested_bytes: StatArray,
    /// Driver allocations retried after releasing the cache.
    pub num_alloc_retries: i64,
    /// Allocations that failed with [`Error::CudaOutOfMemory`].
    pub num_ooms: i64,
    /// Segments obtained from the driver (successful cuMemAlloc calls).
    pub num_device_alloc: i64,
    /// Segments returned to the driver (cuMemFree calls).
    pub num_device_free: i64,
}

impl MemoryStats {
    /// The statistics flattened under PyTorch's `torch.cuda.memory_stats()` keys, e.g.
    /// `"allocated_bytes.all.current"`, `"reserved_bytes.large_pool.peak"`, `"num_ooms"`.
    pub fn as_map(&self) -> BTreeMap<String, i64> {
        let mut m = BTreeMap::new();
        let arrays = [
            ("allocation", &self.allocation),
            ("segment", &self.segment),
            ("active", &self.active),
            ("inactive_split", &self.inactive_split),
            ("allocated_bytes", &self.allocated_bytes),
            ("reserved_bytes", &self.reserved_bytes),
            ("active_bytes", &self.active_bytes),
            ("inactive_split_bytes", &self.inactive_split_bytes),
            ("requested_bytes", &self.requested_bytes),
        ];
        for (name, a) in arrays {
            for (pool, s) in [("all", &a.all), ("small_pool", &a.small_pool), ("large_pool", &a.large_pool)] {
                for (field, v) in
                    [("current", s.current), ("peak", s.peak), ("allocated", s.allocated), ("freed", s.freed)]
                {
                    m.insert(format!("{name}.{pool}.{field}"), v);
                }
            }
        }
        m.insert("num_alloc_retries".into(), self.num_alloc_retries);
        m.insert("num_ooms".into(), self.num_ooms);
        m.insert("num_device_alloc".into(), self.num_device_alloc);
        m.insert("num_device_free".into(), self.num_device_free);
        // PyTorch reports the unlimited default as SIZE_MAX cast to int64.
        m.insert("max_split_size".into(), -1);
        m
    }
}

// ---- summary ------------------------------------------------------------------------------------

// Note [Memory summary layout]
// ----------------------------
// `memory_summary` reproduces the table of PyTorch's `torch.cuda.memory_summary()`
// (torch/cuda/memory.py): a frame 75 characters wide between `|`s, a title, the OOM and retry
// counts, then one block per metric with its Cur Usage / Peak Usage / Tot Alloc / Tot Freed and
// the "from large pool" / "from small pool" rows. Numbers are scaled as PyTorch's `_format_size`
// and `_format_count` scale them: a byte count moves to the next unit (B, KiB, MiB, GiB, TiB,
// PiB) while the *reference* value of its column is at least 768 × 1024 of the current unit,
// and is floor-divided by 1024 each time (786,431 B prints as bytes, 786,432 B as 768 KiB);
// counts likewise with 750 × 1000 and 1000 (" ", K, M). The reference of a pool row is the
// "all" row's value in the same column, so a block's rows share units. The CPU allocator's
// `caching_allocator::memory_summary` uses the same frame and formatting.

/// Width of the summary table between its `|` borders.
pub(crate) const SUMMARY_WIDTH: usize = 75;

/// PyTorch's `memory_summary` `_format_size(sz, pref_sz)`: `sz` in the unit chosen by `pref`,
/// right-aligned in 6 columns, then the unit padded to 3 (`"  1023 B  "`, `"   768 KiB"`).
pub(crate) fn summary_size(sz: i64, pref: i64) -> String {
    const UNITS: [&str; 6] = ["B  ", "KiB", "MiB", "GiB", "TiB", "PiB"];
    scaled(sz, pref, 1024, 768 * 1024, &UNITS, |v, unit| format!("{v:6} {unit}"))
}

/// PyTorch's `memory_summary` `_format_count(cnt, pref_cnt)`: right-aligned in 7 columns, then
/// the unit (" ", "K", "M") and a space (`"   1012   "`, `"    902 M  "`).
pub(crate) fn summary_count(cnt: i64, pref: i64) -> String {
    const UNITS: [&str; 3] = [" ", "K", "M"];
    scaled(cnt, pref, 1000, 750 * 1000, &UNITS, |v, unit| format!("{v:7} {unit} "))
}

/// Moves to the next unit while `pref` (in the current unit) is at least `threshold`, dividing
/// `v` by `base` with Python's floor division. Compared exactly in integers; PyTorch divides
/// `pref` as a float, which gives the same unit for every `pref` below 2^53 (beyond that a
/// value a few units under a threshold may round onto it).
fn scaled(v: i64, pref: i64, base: i64, threshold: i64, units: &[&str], f: impl Fn(i64, &str) -> String) -> String {
    let (mut v, mut limit, mut unit) = (v, i128::from(threshold), units[0]);
    for next in &units[1..] {
        if i128::from(pref) < limit {
            break;
        }
        unit = next;
        v = v.div_euclid(base);
        limit *= i128::from(base);
    }
    f(v, unit)
}

/// A cell formatter: [`summary_size`] or [`summary_count`], as `(value, reference) -> cell`.
pub(crate) type SummaryFormat = fn(i64, i64) -> String;

/// One metric row: `" {name:<21} | {cur} | {peak} | {alloc} | {freed} "`, each value formatted
/// against the matching value of `pref` (the "all" row of its block).
pub(crate) fn summary_row(name: &str, s: &Stat, pref: &Stat, fmt: SummaryFormat) -> String {
    format!(
        " {name:<21} | {} | {} | {} | {} ",
        fmt(s.current, pref.current),
        fmt(s.peak, pref.peak),
        fmt(s.allocated, pref.allocated),
        fmt(s.freed, pref.freed)
    )
}

/// The header of the metric columns, as PyTorch prints it.
pub(crate) const SUMMARY_HEADER: &str = "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ";

/// Joins the lines into the framed table: `|line|` each, newline-terminated.
pub(crate) fn summary_frame(lines: &[String]) -> String {
    let mut out = String::with_capacity(lines.len() * (SUMMARY_WIDTH + 3));
    for l in lines {
        out.push('|');
        out.push_str(l);
        out.push_str("|\n");
    }
    out
}

/// `torch.cuda.memory_summary(device)`: PyTorch's human-readable table of `stats`, the
/// statistics of device `device` (Note [Memory summary layout]). The oversize rows are zeros:
/// without `max_split_size` no block is oversize (Note [CUDA caching allocator policy]).
pub fn memory_summary(stats: &MemoryStats, device: i8) -> String {
    let mut lines = vec![
        "=".repeat(SUMMARY_WIDTH),
        format!(" {:16} PyTorch CUDA memory summary, device ID {device:<17} ", ""),
        "-".repeat(SUMMARY_WIDTH),
        format!(
            "  {:9} CUDA OOMs: {:<12} | {:6} cudaMalloc retries: {:<8}  ",
            "", stats.num_ooms, "", stats.num_alloc_retries
        ),
        "=".repeat(SUMMARY_WIDTH),
        SUMMARY_HEADER.to_string(),
    ];
    let size: SummaryFormat = summary_size;
    let count: SummaryFormat = summary_count;
    let metrics = [
        (&stats.allocated_bytes, "Allocated memory", size),
        (&stats.active_bytes, "Active memory", size),
        (&stats.requested_bytes, "Requested memory", size),
        (&stats.reserved_bytes, "GPU reserved memory", size),
        (&stats.inactive_split_bytes, "Non-releasable memory", size),
        (&stats.allocation, "Allocations", count),
        (&stats.active, "Active allocs", count),
        (&stats.segment, "GPU reserved segments", count),
        (&stats.inactive_split, "Non-releasable allocs", count),
    ];
    for (a, name, fmt) in metrics {
        lines.push("-".repeat(SUMMARY_WIDTH));
        lines.push(summary_row(name, &a.all, &a.all, fmt));
        lines.push(summary_row("      from large pool", &a.large_pool, &a.all, fmt));
        lines.push(summary_row("      from small pool", &a.small_pool, &a.all, fmt));
    }
    for name in ["Oversize allocations", "Oversize GPU segments"] {
        lines.push("-".repeat(SUMMARY_WIDTH));
        lines.push(summary_row(name, &Stat::default(), &Stat::default(), count));
    }
    lines.push("=".repeat(SUMMARY_WIDTH));
    summary_frame(&lines)
}

// ---- snapshots ----------------------------------------------------------------------------------

/// What a block of a segment is doing, as in PyTorch's memory snapshot.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BlockState {
    /// Handed out and not yet freed.
    ActiveAllocated,
    /// Freed, but waiting for events on the streams that used it.
    ActivePendingFree,
    /// Free and cached.
    Inactive,
}

/// One block of a [`SegmentInfo`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    /// Device address of the block.
    pub address: u64,
    /// Size in bytes (rounded).
    pub size: usize,
    /// Bytes asked for by the owner; 0 for inactive blocks.
    pub requested_size: usize,
    /// Allocated, pending or free.
    pub state: BlockState,
}

/// One driver allocation and the blocks it is cut into (`torch.cuda.memory_snapshot()`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentInfo {
    /// Device address of the segment.
    pub address: u64,
    /// Size of the segment.
    pub total_size: usize,
    /// Bytes in allocated blocks.
    pub allocated_size: usize,
    /// Bytes in allocated and pending blocks.
    pub active_size: usize,
    /// Bytes requested for the allocated blocks.
    pub requested_size: usize,
    /// The stream whose pool the segment belongs to.
    pub stream: StreamId,
    /// Whether it belongs to the large pool.
    pub is_large: bool,
    /// The blocks in address order.
    pub blocks: Vec<BlockInfo>,
}

// ---- per-device state ---------------------------------------------------------------------------

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Pool {
    Small,
    Large,
}

impl Pool {
    fn for_size(size: usize) -> Pool {
        if size <= SMALL_SIZE {
            Pool::Small
        } else {
            Pool::Large
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// Whether a block of this pool with `remaining` bytes left over is split.
    fn should_split(self, remaining: usize) -> bool {
        match self {
            Pool::Small => remaining >= MIN_BLOCK_SIZE,
            Pool::Large => remaining > SMALL_SIZE,
        }
    }
}

/// Index of a block in [`DeviceState::blocks`].
type BlockId = usize;

/// Pool order: stream, then size, then address. See Note [CUDA caching allocator policy].
type PoolKey = (StreamId, usize, u64);

#[derive(Debug)]
struct Block {
    ptr: u64,
    size: usize,
    requested_size: usize,
    stream: StreamId,
    pool: Pool,
    allocated: bool,
    /// Neighbours in the same segment.
    prev: Option<BlockId>,
    next: Option<BlockId>,
    /// Outstanding events recorded when the block was freed.
    event_count: usize,
    /// Streams other than `stream` that used the block (`record_stream`).
    stream_uses: BTreeSet<StreamId>,
}

impl Block {
    fn is_split(&self) -> bool {
        self.prev.is_some() || self.next.is_some()
    }

    fn key(&self) -> PoolKey {
        (self.stream, self.size, self.ptr)
    }
}

/// Everything the allocator knows about one device, behind that device's mutex.
struct DeviceState {
    device: i8,
    driver: Arc<dyn DeviceMemory>,
    /// Block arena; `None` slots are recycled through `free_slots`.
    blocks: Vec<Option<Block>>,
    free_slots: Vec<BlockId>,
    /// Free, event-free blocks by pool.
    pools: [BTreeMap<PoolKey, BlockId>; 2],
    /// Allocated blocks by address, to find a block from a `DataPtr` (`record_stream_data_ptr`).
    allocated: HashMap<u64, BlockId>,
    /// Per stream, the events recorded for freed blocks, oldest first.
    events: BTreeMap<StreamId, VecDeque<(u64, BlockId)>>,
    stats: MemoryStats,
    /// Reserved-bytes ceiling set by `set_memory_fraction`.
    allowed_memory_maximum: Option<usize>,
}

impl DeviceState {
    fn new(device: i8, driver: Arc<dyn DeviceMemory>) -> DeviceState {
        DeviceState {
            device,
            driver,
            blocks: Vec::new(),
            free_slots: Vec::new(),
            pools: [BTreeMap::new(), BTreeMap::new()],
            allocated: HashMap::new(),
            events: BTreeMap::new(),
            stats: MemoryStats::default(),
            allowed_memory_maximum: None,
        }
    }

    fn block(&self, id: BlockId) -> &Block {
        self.blocks[id].as_ref().expect("block ids held by the allocator refer to live blocks")
    }

    fn block_mut(&mut self, id: BlockId) -> &mut Block {
        self.blocks[id].as_mut().expect("block ids held by the allocator refer to live blocks")
    }

    fn insert_block(&mut self, b: Block) -> BlockId {
        match self.free_slots.pop() {
            Some(id) => {
                self.blocks[id] = Some(b);
                id
            }
            None => {
                self.blocks.push(Some(b));
                self.blocks.len() - 1
            }
        }
    }

    fn remove_block(&mut self, id: BlockId) -> Block {
        let b = self.blocks[id].take().expect("block ids held by the allocator refer to live blocks");
        self.free_slots.push(id);
        b
    }

    fn pool_insert(&mut self, id: BlockId) {
        let b = self.block(id);
        let (pool, key) = (b.pool, b.key());
        let previous = self.pools[pool.index()].insert(key, id);
        debug_assert!(previous.is_none(), "a block is in its pool once");
    }

    fn pool_remove(&mut self, id: BlockId) {
        let b = self.block(id);
        let (pool, key) = (b.pool, b.key());
        let removed = self.pools[pool.index()].remove(&key);
        debug_assert_eq!(removed, Some(id), "a free block is in its pool");
    }

    /// Best fit on the request's stream: the smallest block of at least `size` bytes, removed
    /// from the pool.
    fn get_free_block(&mut self, pool: Pool, stream: StreamId, size: usize) -> Option<BlockId> {
        let map = &mut self.pools[pool.index()];
        let (&key, &id) = map.range((stream, size, 0)..).next()?;
        if key.0 != stream {
            return None;
        }
        map.remove(&key);
        Some(id)
    }

    /// Asks the driver for a segment. `Ok(None)` means out of memory (or over the memory
    /// fraction); other driver failures are errors.
    fn alloc_block(
        &mut self,
        pool: Pool,
        stream: StreamId,
        alloc_size: usize,
        is_retry: bool,
    ) -> Result<Option<BlockId>> {
        if is_retry {
            self.stats.num_alloc_retries += 1;
        }
        let reserved = self.stats.reserved_bytes.all.current as usize;
        if self.allowed_memory_maximum.is_some_and(|max| reserved.saturating_add(alloc_size) > max) {
            return Ok(None);
        }
        let ptr = match self.driver.malloc(self.device, alloc_size) {
            Ok(0) => {
                return Err(Error::Cuda(format!(
                    "CUDA error: cuMemAlloc returned a null pointer on device {}",
                    self.device
                )))
            }
            Ok(ptr) => ptr,
            Err(DriverError::OutOfMemory) => return Ok(None),
            Err(DriverError::Other(msg)) => return Err(Error::Cuda(msg)),
        };
        self.stats.segment.increase(pool, 1);
        self.stats.reserved_bytes.increase(pool, alloc_size);
        self.stats.num_device_alloc += 1;
        tracing::debug!(
            target: "torch::cuda::allocator",
            device = self.device,
            bytes = alloc_size,
            reserved = self.stats.reserved_bytes.all.current,
            "new segment from the driver"
        );
        Ok(Some(self.insert_block(Block {
            ptr,
            size: alloc_size,
            requested_size: 0,
            stream,
            pool,
            allocated: false,
            prev: None,
            next: None,
            event_count: 0,
            stream_uses: BTreeSet::new(),
        })))
    }

    /// Returns an unsplit free block (a whole segment) to the driver.
    fn release_block(&mut self, id: BlockId) {
        self.pool_remove(id);
        let b = self.remove_block(id);
        debug_assert!(!b.is_split() && !b.allocated && b.event_count == 0);
        self.driver.free(self.device, b.ptr);
        self.stats.num_device_free += 1;
        self.stats.segment.decrease(b.pool, 1);
        self.stats.reserved_bytes.decrease(b.pool, b.size);
    }

    /// Waits for every outstanding event and frees the blocks they held back.
    fn synchronize_and_free_events(&mut self) {
        for (_, queue) in std::mem::take(&mut self.events) {
            for (event, id) in queue {
                self.driver.event_synchronize(event);
                self.driver.event_destroy(event);
                self.event_done(id);
            }
        }
    }

    /// `release_cached_blocks`: returns every cached unsplit block of both pools to the driver,
    /// after waiting for outstanding events.
    fn release_cached_blocks(&mut self) {
        self.synchronize_and_free_events();
        for pool in [Pool::Large, Pool::Small] {
            let whole: Vec<BlockId> =
                self.pools[pool.index()].values().copied().filter(|&id| !self.block(id).is_split()).collect();
            for id in whole {
                self.release_block(id);
            }
        }
    }

    /// Frees the blocks whose events all completed, checking each stream's queue in order.
    fn process_events(&mut self) {
        if self.events.is_empty() {
            return;
        }
        let mut ready: Vec<BlockId> = Vec::new();
        let driver = &self.driver;
        self.events.retain(|_, queue| {
            while let Some(&(event, id)) = queue.front() {
                if !driver.event_query(event) {
                    break;
                }
                driver.event_destroy(event);
                ready.push(id);
                queue.pop_front();
            }
            !queue.is_empty()
        });
        for id in ready {
            self.event_done(id);
        }
    }

    /// One event of a freed block completed; the last one frees it.
    fn event_done(&mut self, id: BlockId) {
        let b = self.block_mut(id);
        debug_assert!(b.event_count > 0);
        b.event_count -= 1;
        if b.event_count == 0 {
            self.free_block(id);
        }
    }

    /// The allocation path: process events, search the pool, else get a segment (releasing the
    /// cache and retrying once on out of memory), then split.
    fn malloc(&mut self, orig_size: usize, stream: StreamId) -> Result<BlockId> {
        self.process_events();
        // Sizes near usize::MAX cannot be rounded: no driver could satisfy them either.
        let Some((size, alloc_size)) = round_size(orig_size).and_then(|s| Some((s, allocation_size(s)?))) else {
            return Err(self.out_of_memory(orig_size));
        };
        let pool = Pool::for_size(size);
        let mut found = self.get_free_block(pool, stream, size);
        if found.is_none() {
            found = self.alloc_block(pool, stream, alloc_size, false)?;
        }
        if found.is_none() {
            tracing::debug!(
                target: "torch::cuda::allocator",
                device = self.device,
                bytes = alloc_size,
                "out of device memory: releasing the cache and retrying"
            );
            self.release_cached_blocks();
            found = self.alloc_block(pool, stream, alloc_size, true)?;
        }
        match found {
            Some(id) => Ok(self.alloc_found_block(id, size, orig_size, stream)),
            None => Err(self.out_of_memory(alloc_size)),
        }
    }

    /// Counts the failure and builds PyTorch's message data.
    fn out_of_memory(&mut self, requested: usize) -> Error {
        self.stats.num_ooms += 1;
        let (free, total) = self.driver.mem_info(self.device);
        let allocated = self.stats.allocated_bytes.all.current as usize;
        let reserved = self.stats.reserved_bytes.all.current as usize;
        Error::CudaOutOfMemory {
            device: self.device,
            requested,
            total,
            free,
            allowed: self.allowed_memory_maximum,
            allocated,
            reserved_unallocated: reserved.saturating_sub(allocated),
        }
    }

    /// Splits the found block if the remainder is worth keeping and marks the front allocated.
    fn alloc_found_block(&mut self, id: BlockId, size: usize, orig_size: usize, stream: StreamId) -> BlockId {
        let b = self.block(id);
        let (pool, already_split, remaining) = (b.pool, b.is_split(), b.size - size);
        let id = if pool.should_split(remaining) {
            // The front becomes the allocation; `id` stays the remainder and goes back to the pool.
            let (ptr, prev) = (b.ptr, b.prev);
            let front = self.insert_block(Block {
                ptr,
                size,
                requested_size: 0,
                stream,
                pool,
                allocated: false,
                prev,
                next: Some(id),
                event_count: 0,
                stream_uses: BTreeSet::new(),
            });
            if let Some(p) = prev {
                self.block_mut(p).next = Some(front);
            }
            let rest = self.block_mut(id);
            rest.prev = Some(front);
            rest.ptr += size as u64;
            rest.size -= size;
            let rest_size = rest.size;
            self.pool_insert(id);
            if already_split {
                // An inactive split block shrinks by `size`.
                self.stats.inactive_split_bytes.decrease(pool, size);
            } else {
                // A new inactive split block appears.
                self.stats.inactive_split_bytes.increase(pool, rest_size);
                self.stats.inactive_split.increase(pool, 1);
            }
            front
        } else {
            if already_split {
                // An inactive split block becomes active.
                let whole = self.block(id).size;
                self.stats.inactive_split_bytes.decrease(pool, whole);
                self.stats.inactive_split.decrease(pool, 1);
            }
            id
        };
        let b = self.block_mut(id);
        b.allocated = true;
        b.requested_size = orig_size;
        let (ptr, size) = (b.ptr, b.size);
        self.allocated.insert(ptr, id);
        let s = &mut self.stats;
        s.allocation.increase(pool, 1);
        s.allocated_bytes.increase(pool, size);
        s.active.increase(pool, 1);
        s.active_bytes.increase(pool, size);
        s.requested_bytes.increase(pool, orig_size);
        self.report(ptr, size as i64);
        id
    }

    /// Tells the profiler's observers of an allocation (`bytes > 0`) or a free (Note [Events
    /// beside ranges] in c10::record_function): one relaxed load when nobody profiles memory.
    fn report(&self, ptr: u64, bytes: i64) {
        if crate::record_function::memory_active() {
            crate::record_function::report_memory(crate::record_function::MemoryEvent {
                ptr: ptr as usize,
                bytes,
                total_allocated: self.stats.allocated_bytes.all.current as u64,
                total_reserved: self.stats.reserved_bytes.all.current as u64,
                device: crate::Device::cuda(self.device),
            });
        }
    }

    /// The owner freed the block: it returns to the pool now, or once the events of the streams
    /// that used it complete.
    fn free(&mut self, id: BlockId) {
        let b = self.block_mut(id);
        debug_assert!(b.allocated);
        b.allocated = false;
        let (pool, size, ptr) = (b.pool, b.size, b.ptr);
        let streams = std::mem::take(&mut b.stream_uses);
        self.allocated.remove(&ptr);
        self.stats.allocation.decrease(pool, 1);
        self.stats.allocated_bytes.decrease(pool, size);
        self.report(ptr, -(size as i64));
        if streams.is_empty() {
            self.free_block(id);
            return;
        }
        for stream in streams {
            let event = self.driver.record_event(self.device, stream);
            self.block_mut(id).event_count += 1;
            self.events.entry(stream).or_default().push_back((event, id));
        }
    }

    /// Merges the block with its free neighbours and puts it in the pool.
    fn free_block(&mut self, id: BlockId) {
        let b = self.block(id);
        debug_assert!(!b.allocated && b.event_count == 0 && b.stream_uses.is_empty());
        let (pool, original_size, requested) = (b.pool, b.size, b.requested_size);
        let (prev, next) = (b.prev, b.next);
        let (mut net_blocks, mut net_bytes) = (0i64, 0i64);
        for neighbour in [prev, next].into_iter().flatten() {
            let subsumed = self.try_merge_blocks(id, neighbour);
            if subsumed > 0 {
                net_blocks -= 1;
                net_bytes -= subsumed as i64;
            }
        }
        let b = self.block_mut(id);
        b.requested_size = 0;
        if b.is_split() {
            net_blocks += 1;
            net_bytes += b.size as i64;
        }
        self.pool_insert(id);
        let s = &mut self.stats;
        s.inactive_split.change(pool, net_blocks);
        s.inactive_split_bytes.change(pool, net_bytes);
        s.active.decrease(pool, 1);
        s.active_bytes.decrease(pool, original_size);
        s.requested_bytes.decrease(pool, requested);
    }

    /// Absorbs the neighbour `src` into `dst` if it is free and event-free; returns the bytes
    /// absorbed (0 if not merged).
    fn try_merge_blocks(&mut self, dst: BlockId, src: BlockId) -> usize {
        let s = self.block(src);
        if s.allocated || s.event_count > 0 || !s.stream_uses.is_empty() {
            return 0;
        }
        self.pool_remove(src);
        let s = self.remove_block(src);
        let d_prev = self.block(dst).prev;
        if d_prev == Some(src) {
            // [src dst]
            let d = self.block_mut(dst);
            d.ptr = s.ptr;
            d.prev = s.prev;
            if let Some(p) = s.prev {
                self.block_mut(p).next = Some(dst);
            }
        } else {
            // [dst src]
            self.block_mut(dst).next = s.next;
            if let Some(n) = s.next {
                self.block_mut(n).prev = Some(dst);
            }
        }
        self.block_mut(dst).size += s.size;
        s.size
    }

    fn record_stream(&mut self, id: BlockId, stream: StreamId) {
        let b = self.block_mut(id);
        // Uses on the allocation stream are ordered by the stream itself.
        if stream != b.stream {
            b.stream_uses.insert(stream);
        }
    }

    fn snapshot(&self) -> Vec<SegmentInfo> {
        let mut segments = Vec::new();
        for head in self.blocks.iter().flatten().filter(|b| b.prev.is_none()) {
            let mut seg = SegmentInfo {
                address: head.ptr,
                total_size: 0,
                allocated_size: 0,
                active_size: 0,
                requested_size: 0,
                stream: head.stream,
                is_large: head.pool == Pool::Large,
                blocks: Vec::new(),
            };
            let mut cur = Some(head);
            while let Some(b) = cur {
                let state = if b.allocated {
                    BlockState::ActiveAllocated
                } else if b.event_count > 0 {
                    BlockState::ActivePendingFree
                } else {
                    BlockState::Inactive
                };
                seg.total_size += b.size;
                if state == BlockState::ActiveAllocated {
                    seg.allocated_size += b.size;
                    seg.requested_size += b.requested_size;
                }
                if state != BlockState::Inactive {
                    seg.active_size += b.size;
                }
                seg.blocks.push(BlockInfo { address: b.ptr, size: b.size, requested_size: b.requested_size, state });
                cur = b.next.map(|n| self.block(n));
            }
            segments.push(seg);
        }
        segments.sort_by_key(|s| s.address);
        segments
    }
}

// ---- the allocator ------------------------------------------------------------------------------

/// State shared by the allocator handle and every block it handed out.
struct Shared {
    devices: Vec<Mutex<DeviceState>>,
}

fn invalid_device(device: i8) -> Error {
    Error::invalid("CUDACachingAllocator", format!("Invalid device argument {device}: did you call init?"))
}

impl Shared {
    fn state(&self, device: i8) -> Result<MutexGuard<'_, DeviceState>> {
        let m = usize::try_from(device).ok().and_then(|d| self.devices.get(d)).ok_or_else(|| invalid_device(device))?;
        // The allocator does not panic while holding the lock; only a panicking driver could
        // poison it, and refusing every later free of the device would leak more than continuing.
        Ok(m.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Drop for Shared {
    /// The last handle and the last block are gone: return every segment to the driver.
    fn drop(&mut self) {
        for m in &mut self.devices {
            let st = m.get_mut().unwrap_or_else(PoisonError::into_inner);
            st.release_cached_blocks();
            debug_assert!(st.blocks.iter().all(Option::is_none), "every block is free once no handle remains");
        }
    }
}

/// PyTorch's CUDA caching allocator for `device_count` devices over a [`DeviceMemory`]. Cloning
/// gives another handle to the same caches. See Note [CUDA caching allocator policy].
#[derive(Clone)]
pub struct CachingAllocator {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for CachingAllocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CachingAllocator({} devices)", self.shared.devices.len())
    }
}

impl CachingAllocator {
    /// An allocator with empty caches for devices `0..device_count` (at most 128: device
    /// indices are `i8`).
    pub fn new(driver: Arc<dyn DeviceMemory>, device_count: usize) -> CachingAllocator {
        let n = device_count.min(i8::MAX as usize + 1);
        let devices = (0..n).map(|d| Mutex::new(DeviceState::new(d as i8, Arc::clone(&driver)))).collect();
        CachingAllocator { shared: Arc::new(Shared { devices }) }
    }

    /// The number of devices served.
    pub fn device_count(&self) -> usize {
        self.shared.devices.len()
    }

    /// `nbytes` of memory on `device` for use on `stream`. Zero bytes take no device memory.
    /// Fails with [`Error::CudaOutOfMemory`] when the driver has no room even after the cache
    /// was released, [`Error::Cuda`] on other driver failures and
    /// [`Error::InvalidArgument`] for an unknown device.
    pub fn allocate(&self, device: i8, nbytes: usize, stream: StreamId) -> Result<DeviceBlock> {
        let mut st = self.shared.state(device)?;
        if nbytes == 0 {
            return Ok(DeviceBlock {
                owner: Arc::clone(&self.shared),
                id: None,
                device,
                ptr: ZERO_SIZE_ADDRESS,
                size: 0,
                requested_size: 0,
                stream,
            });
        }
        let id = st.malloc(nbytes, stream)?;
        let b = st.block(id);
        Ok(DeviceBlock {
            owner: Arc::clone(&self.shared),
            id: Some(id),
            device,
            ptr: b.ptr,
            size: b.size,
            requested_size: nbytes,
            stream,
        })
    }

    /// Marks `block` as used by kernels on `stream`: when it is freed it is reused only after the
    /// work queued on `stream` up to the free completed. Uses on the allocation stream need no
    /// mark. (The block is recorded with the allocator that handed it out.)
    pub fn record_stream(&self, block: &DeviceBlock, stream: StreamId) {
        block.record_stream(stream);
    }

    /// [`CachingAllocator::record_stream`] for a block already turned into a [`DataPtr`]
    /// ([`DeviceBlock::into_data_ptr`]), found by device and address. Pointers this allocator
    /// did not hand out (or zero-byte ones) are ignored, as in PyTorch.
    pub fn record_stream_data_ptr(&self, data: &DataPtr, stream: StreamId) {
        let device = data.device();
        if device.ty != crate::DeviceType::Cuda {
            return;
        }
        let Ok(mut st) = self.shared.state(device.index) else { return };
        if let Some(&id) = st.allocated.get(&(data.as_ptr().addr() as u64)) {
            st.record_stream(id, stream);
        }
    }

    /// Returns every cached unsplit segment of every device to the driver (after waiting for
    /// outstanding stream events). Segments with a block in use stay.
    pub fn empty_cache(&self) {
        for m in &self.shared.devices {
            m.lock().unwrap_or_else(PoisonError::into_inner).release_cached_blocks();
        }
    }

    /// Limits the bytes reserved on `device` to `fraction` of its total memory; allocations
    /// beyond it fail as out of memory. 1 removes the limit.
    pub fn set_memory_fraction(&self, fraction: f64, device: i8) -> Result<()> {
        if !(0.0..=1.0).contains(&fraction) {
            return Err(Error::invalid(
                "set_per_process_memory_fraction",
                format!("invalid fraction: {fraction}. Please set within [0, 1]."),
            ));
        }
        let mut st = self.shared.state(device)?;
        let (_, total) = st.driver.mem_info(device);
        st.allowed_memory_maximum = (fraction < 1.0).then_some((fraction * total as f64) as usize);
        Ok(())
    }

    /// The statistics of `device`.
    pub fn memory_stats(&self, device: i8) -> Result<MemoryStats> {
        Ok(self.shared.state(device)?.stats)
    }

    /// Bytes in blocks currently allocated on `device` (rounded sizes).
    pub fn memory_allocated(&self, device: i8) -> Result<usize> {
        Ok(self.memory_stats(device)?.allocated_bytes.all.current as usize)
    }

    /// Peak of [`CachingAllocator::memory_allocated`] since the last reset.
    pub fn max_memory_allocated(&self, device: i8) -> Result<usize> {
        Ok(self.memory_stats(device)?.allocated_bytes.all.peak as usize)
    }

    /// Bytes of the segments held from the driver on `device`.
    pub fn memory_reserved(&self, device: i8) -> Result<usize> {
        Ok(self.memory_stats(device)?.reserved_bytes.all.current as usize)
    }

    /// Peak of [`CachingAllocator::memory_reserved`] since the last reset.
    pub fn max_memory_reserved(&self, device: i8) -> Result<usize> {
        Ok(self.memory_stats(device)?.reserved_bytes.all.peak as usize)
    }

    /// Sets every peak of `device` to its current value.
    pub fn reset_peak_memory_stats(&self, device: i8) -> Result<()> {
        let mut st = self.shared.state(device)?;
        for a in stat_arrays(&mut st.stats) {
            for s in a.each_mut() {
                s.peak = s.current;
            }
        }
        Ok(())
    }

    /// Zeroes the cumulative counters of `device` (allocated/freed totals, retries, OOMs,
    /// driver calls).
    pub fn reset_accumulated_memory_stats(&self, device: i8) -> Result<()> {
        let mut st = self.shared.state(device)?;
        for a in stat_arrays(&mut st.stats) {
            for s in a.each_mut() {
                s.allocated = 0;
                s.freed = 0;
            }
        }
        let s = &mut st.stats;
        (s.num_alloc_retries, s.num_ooms, s.num_device_alloc, s.num_device_free) = (0, 0, 0, 0);
        Ok(())
    }

    /// The segments of `device` and their blocks, in address order.
    pub fn memory_snapshot(&self, device: i8) -> Result<Vec<SegmentInfo>> {
        Ok(self.shared.state(device)?.snapshot())
    }
}

fn stat_arrays(s: &mut MemoryStats) -> [&mut StatArray; 9] {
    [
        &mut s.allocation,
        &mut s.segment,
        &mut s.active,
        &mut s.inactive_split,
        &mut s.allocated_bytes,
        &mut s.reserved_bytes,
        &mut s.active_bytes,
        &mut s.inactive_split_bytes,
        &mut s.requested_bytes,
    ]
}

/// Device memory from a [`CachingAllocator`]. Dropping it returns the block to the cache (see
/// Note [CUDA caching allocator policy]); [`DeviceBlock::into_data_ptr`] hands that duty to a
/// [`DataPtr`].
pub struct DeviceBlock {
    owner: Arc<Shared>,
    /// `None` for zero-byte blocks, which own no device memory.
    id: Option<BlockId>,
    device: i8,
    ptr: u64,
    size: usize,
    requested_size: usize,
    stream: StreamId,
}

impl DeviceBlock {
    /// Device address of the first byte ([`ZERO_SIZE_ADDRESS`] for zero bytes).
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Size of the block: the request rounded up, or a whole cached block when splitting it was
    /// not worthwhile.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The number of bytes asked for.
    pub fn requested_size(&self) -> usize {
        self.requested_size
    }

    /// The device index.
    pub fn device(&self) -> i8 {
        self.device
    }

    /// The stream the block was allocated for.
    pub fn stream(&self) -> StreamId {
        self.stream
    }

    /// See [`CachingAllocator::record_stream`].
    pub fn record_stream(&self, stream: StreamId) {
        let Some(id) = self.id else { return };
        if let Ok(mut st) = self.owner.state(self.device) {
            st.record_stream(id, stream);
        }
    }

    /// Turns the block into a [`DataPtr`] on `cuda:<device>` whose pointer is the device address
    /// and whose deleter returns the block to the cache.
    pub fn into_data_ptr(self) -> DataPtr {
        let device = Device::cuda(self.device);
        let addr = std::ptr::without_provenance_mut::<u8>(self.ptr as usize);
        // Blocks never have address 0: the driver's null is rejected and zero-byte blocks use
        // ZERO_SIZE_ADDRESS.
        let addr = NonNull::new(addr).unwrap_or(NonNull::dangling());
        let ctx = Box::into_raw(Box::new(self)).cast::<()>();
        // SAFETY: the device range [addr, addr + size) stays reserved for this block until the
        // deleter drops the block, which happens exactly once when the DataPtr is dropped (its
        // contract); `ctx` is the boxed block, and `DeviceBlock` is Send, so dropping it on any
        // thread is sound.
        unsafe { DataPtr::from_raw(addr, ctx, Some(drop_boxed_block), device) }
    }
}

/// The [`DataPtr`] deleter of [`DeviceBlock::into_data_ptr`].
///
/// # Safety
/// `ctx` must come from `Box::into_raw(Box<DeviceBlock>)` in `into_data_ptr` and must not be
/// used afterwards.
unsafe fn drop_boxed_block(_data: *mut u8, ctx: *mut ()) {
    // SAFETY: per the contract, `ctx` is an unaliased Box<DeviceBlock> pointer given up once.
    drop(unsafe { Box::from_raw(ctx.cast::<DeviceBlock>()) });
}

impl Drop for DeviceBlock {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        if let Ok(mut st) = self.owner.state(self.device) {
            st.free(id);
        }
    }
}

impl std::fmt::Debug for DeviceBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBlock({:#x}, {} bytes on cuda:{}, stream {})", self.ptr, self.size, self.device, self.stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: usize = 1 << 10;
    const MIB: usize = 1 << 20;
    const GIB: usize = 1 << 30;

    /// First address the fake driver hands out; segments follow each other without gaps, so a
    /// merge across segments (by address adjacency instead of the segment links) would show.
    const BASE: u64 = 0x7f00_0000_0000;

    #[derive(Default)]
    struct FakeState {
        next_addr: u64,
        live: HashMap<u64, usize>,
        used: usize,
        malloc_sizes: Vec<usize>,
        mallocs: usize,
        frees: usize,
        fail_other: bool,
        next_event: u64,
        /// event -> (stream, completed)
        events: HashMap<u64, (StreamId, bool)>,
        recorded: Vec<(i8, StreamId)>,
        destroyed: usize,
        synchronized: usize,
    }

    /// A device with `capacity` bytes per device index, a bump allocator for addresses and
    /// events that complete only when the test says so.
    struct FakeDevice {
        capacity: usize,
        state: Mutex<FakeState>,
    }

    impl FakeDevice {
        fn new(capacity: usize) -> Arc<FakeDevice> {
            Arc::new(FakeDevice { capacity, state: Mutex::new(FakeState { next_addr: BASE, ..Default::default() }) })
        }
        fn st(&self) -> MutexGuard<'_, FakeState> {
            self.state.lock().unwrap_or_else(PoisonError::into_inner)
        }
        fn mallocs(&self) -> usize {
            self.st().mallocs
        }
        fn frees(&self) -> usize {
            self.st().frees
        }
        fn used(&self) -> usize {
            self.st().used
        }
        fn complete_events_on(&self, stream: StreamId) {
            for (s, done) in self.st().events.values_mut() {
                if *s == stream {
                    *done = true;
                }
            }
        }
    }

    impl DeviceMemory for FakeDevice {
        fn malloc(&self, _device: i8, nbytes: usize) -> std::result::Result<u64, DriverError> {
            let mut st = self.st();
            if st.fail_other {
                return Err(DriverError::Other("CUDA error: unspecified launch failure".into()));
            }
            if st.used + nbytes > self.capacity {
                return Err(DriverError::OutOfMemory);
            }
            let p = st.next_addr;
            st.next_addr += nbytes as u64;
            st.used += nbytes;
            st.live.insert(p, nbytes);
            st.mallocs += 1;
            st.malloc_sizes.push(nbytes);
            Ok(p)
        }
        fn free(&self, _device: i8, ptr: u64) {
            let mut st = self.st();
            let n = st.live.remove(&ptr).expect("free of an address the driver handed out");
            st.used -= n;
            st.frees += 1;
        }
        fn mem_info(&self, _device: i8) -> (usize, usize) {
            (self.capacity - self.used(), self.capacity)
        }
        fn record_event(&self, device: i8, stream: StreamId) -> u64 {
            let mut st = self.st();
            st.next_event += 1;
            let e = st.next_event;
            st.events.insert(e, (stream, false));
            st.recorded.push((device, stream));
            e
        }
        fn event_query(&self, event: u64) -> bool {
            self.st().events[&event].1
        }
        fn event_destroy(&self, event: u64) {
            let mut st = self.st();
            st.events.remove(&event).expect("destroy of a live event");
            st.destroyed += 1;
        }
        fn event_synchronize(&self, event: u64) {
            let mut st = self.st();
            st.events.get_mut(&event).unwrap().1 = true;
            st.synchronized += 1;
        }
    }

    fn setup(capacity: usize) -> (Arc<FakeDevice>, CachingAllocator) {
        let fake = FakeDevice::new(capacity);
        let alloc = CachingAllocator::new(fake.clone(), 1);
        (fake, alloc)
    }

    fn stats(a: &CachingAllocator) -> MemoryStats {
        a.memory_stats(0).unwrap()
    }

    #[test]
    fn size_rounding_and_segment_sizes() {
        assert_eq!(round_size(0), Some(512));
        assert_eq!(round_size(1), Some(512));
        assert_eq!(round_size(512), Some(512));
        assert_eq!(round_size(513), Some(1024));
        assert_eq!(round_size(MIB + 1), Some(MIB + 512));
        assert_eq!(round_size(usize::MAX), None);
        assert_eq!(allocation_size(512), Some(2 * MIB));
        assert_eq!(allocation_size(MIB), Some(2 * MIB));
        assert_eq!(allocation_size(MIB + 512), Some(20 * MIB));
        assert_eq!(allocation_size(10 * MIB - 512), Some(20 * MIB));
        assert_eq!(allocation_size(10 * MIB), Some(10 * MIB));
        assert_eq!(allocation_size(10 * MIB + 512), Some(12 * MIB));
        assert_eq!(allocation_size(usize::MAX - 511), None);
    }

    #[test]
    fn format_size_matches_pytorch() {
        assert_eq!(format_size(0), "0 bytes");
        assert_eq!(format_size(1024), "1024 bytes");
        assert_eq!(format_size(1025), "1.00 KiB");
        assert_eq!(format_size(1536), "1.50 KiB");
        assert_eq!(format_size(MIB), "1024.00 KiB");
        assert_eq!(format_size(MIB + 1), "1.00 MiB");
        assert_eq!(format_size(512 * MIB), "512.00 MiB");
        assert_eq!(format_size(GIB), "1024.00 MiB");
        assert_eq!(format_size(2 * GIB), "2.00 GiB");
        assert_eq!(format_size(1748 * KIB), "1.71 MiB");
    }

    #[test]
    fn oom_error_display_is_pytorchs_message() {
        let e = Error::CudaOutOfMemory {
            device: 0,
            requested: 2 * GIB,
            total: 16_933_388_288, // 15.77 GiB
            free: 1_288_490_189,   // 1.20 GiB
            allowed: None,
            allocated: 12 * GIB,
            reserved_unallocated: 512 * MIB,
        };
        assert_eq!(
            e.to_string(),
            "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 15.77 GiB of which \
             1.20 GiB is free. Of the allocated memory 12.00 GiB is allocated by PyTorch, and 512.00 MiB is \
             reserved by PyTorch but unallocated."
        );
    }

    #[test]
    fn one_byte_rounds_to_512_and_small_and_large_pools_are_separate() {
        let (fake, a) = setup(GIB);
        let b = a.allocate(0, 1, 0).unwrap();
        assert_eq!((b.size(), b.requested_size(), b.device(), b.stream()), (512, 1, 0, 0));
        assert_eq!(b.ptr(), BASE);
        let s = stats(&a);
        assert_eq!(s.allocated_bytes.small_pool.current, 512);
        assert_eq!(s.reserved_bytes.small_pool.current, 2 * MIB as i64);
        assert_eq!(s.requested_bytes.all.current, 1);

        // Exactly 1 MiB is still small: it is carved from the same 2 MiB segment.
        let m = a.allocate(0, MIB, 0).unwrap();
        assert_eq!((m.ptr(), m.size()), (BASE + 512, MIB));
        assert_eq!(fake.mallocs(), 1);

        // 1 MiB + 1 is large: a 20 MiB segment of its own pool, split.
        let l = a.allocate(0, MIB + 1, 0).unwrap();
        assert_eq!(l.size(), MIB + 512);
        assert_eq!(l.ptr(), BASE + 2 * MIB as u64);
        assert_eq!(fake.st().malloc_sizes, vec![2 * MIB, 20 * MIB]);
        let s = stats(&a);
        assert_eq!(s.allocated_bytes.large_pool.current, (MIB + 512) as i64);
        assert_eq!(s.reserved_bytes.large_pool.current, 20 * MIB as i64);
        assert_eq!(s.segment.all.current, 2);
        drop((b, m, l));

        // Two 1 MiB requests fill the small segment exactly; a third small request does not take
        // from the large pool's free 20 MiB segment.
        let (_m1, _m2) = (a.allocate(0, MIB, 0).unwrap(), a.allocate(0, MIB, 0).unwrap());
        assert_eq!(fake.mallocs(), 2);
        let _s = a.allocate(0, 4 * KIB, 0).unwrap();
        assert_eq!(fake.st().malloc_sizes, vec![2 * MIB, 20 * MIB, 2 * MIB]);
    }

    #[test]
    fn large_requests_round_to_2_mib_segments() {
        let (fake, a) = setup(GIB);
        // 10 MiB exactly gets a 10 MiB segment, unsplit.
        let b10 = a.allocate(0, 10 * MIB, 0).unwrap();
        assert_eq!(b10.size(), 10 * MIB);
        // 11 MiB: a 12 MiB segment; the 1 MiB remainder is not > 1 MiB, so the block is whole.
        let b11 = a.allocate(0, 11 * MIB, 0).unwrap();
        assert_eq!(b11.size(), 12 * MIB);
        // 10 MiB + 1: 12 MiB segment, remainder 2 MiB - 512 > 1 MiB is split off.
        let b = a.allocate(0, 10 * MIB + 1, 0).unwrap();
        assert_eq!(b.size(), 10 * MIB + 512);
        // 41 MiB + 3 bytes: 42 MiB segment; the remainder 1 MiB - 512 stays in the block.
        let big = a.allocate(0, 41 * MIB + 3, 0).unwrap();
        assert_eq!(big.size(), 42 * MIB);
        assert_eq!(fake.st().malloc_sizes, vec![10 * MIB, 12 * MIB, 12 * MIB, 42 * MIB]);
        let s = stats(&a);
        assert_eq!(s.allocated_bytes.all.current, (10 * MIB + 12 * MIB + 10 * MIB + 512 + 42 * MIB) as i64);
        assert_eq!(s.requested_bytes.all.current, (10 * MIB + 11 * MIB + 10 * MIB + 1 + 41 * MIB + 3) as i64);
        assert_eq!(s.reserved_bytes.all.current, 76 * MIB as i64);
        assert_eq!(s.inactive_split.large_pool.current, 1); // the remainder of the 10 MiB + 1 request
        assert_eq!(s.inactive_split_bytes.large_pool.current, (2 * MIB - 512) as i64);
        assert_eq!(s.allocated_bytes.small_pool.current, 0);
        drop((b10, b11, b, big));

        let c = a.allocate(0, 12 * MIB, 0).unwrap();
        assert_eq!(fake.mallocs(), 4);
        assert_eq!(c.size(), 12 * MIB);
        // Best fit picks the first 12 MiB segment, not the 42 MiB one.
        assert_eq!(c.ptr(), BASE + 10 * MIB as u64);
        // A cached 42 MiB segment serves a 30 MiB request by splitting (no new driver call).
        let d = a.allocate(0, 30 * MIB, 0).unwrap();
        assert_eq!((d.ptr(), d.size()), (BASE + 34 * MIB as u64, 30 * MIB));
        assert_eq!(fake.mallocs(), 4);
        assert_eq!(stats(&a).inactive_split_bytes.large_pool.current, 12 * MIB as i64);
    }

    #[test]
    fn steady_allocate_free_loop_makes_no_new_driver_calls() {
        let (fake, a) = setup(GIB);
        let sizes = [1, 4 * KIB, MIB, 3 * MIB, 12 * MIB, 40 * MIB];
        let mut first_ptrs = Vec::new();
        for iter in 0..10 {
            let blocks: Vec<DeviceBlock> = sizes.iter().map(|&n| a.allocate(0, n, 7).unwrap()).collect();
            let ptrs: Vec<u64> = blocks.iter().map(DeviceBlock::ptr).collect();
            if iter == 0 {
                first_ptrs = ptrs;
                // Small ones share a 2 MiB segment; 3 MiB and 12 MiB share a 20 MiB one.
                assert_eq!(fake.st().malloc_sizes, vec![2 * MIB, 20 * MIB, 40 * MIB]);
            } else {
                assert_eq!(ptrs, first_ptrs, "iteration {iter} reuses the same blocks");
            }
            assert_eq!(fake.mallocs(), 3);
        }
        assert_eq!(fake.frees(), 0);
        let s = stats(&a);
        assert_eq!(s.num_device_alloc, 3);
        assert_eq!(s.allocation.all.allocated, 60);
        assert_eq!(s.allocation.all.freed, 60);
        assert_eq!(s.reserved_bytes.all.current, 62 * MIB as i64);
        assert_eq!(s.allocated_bytes.all.current, 0);
        a.empty_cache();
        assert_eq!((fake.frees(), fake.used()), (3, 0));
    }

    #[test]
    fn splitting_and_coalescing_in_one_segment() {
        let (fake, a) = setup(GIB);
        let x = a.allocate(0, 4 * KIB, 0).unwrap();
        let y = a.allocate(0, 8 * KIB, 0).unwrap();
        let z = a.allocate(0, 16 * KIB, 0).unwrap();
        assert_eq!(fake.mallocs(), 1);
        assert_eq!((x.ptr(), y.ptr(), z.ptr()), (BASE, BASE + 4096, BASE + 12288));
        let s = stats(&a);
        assert_eq!(
            (s.inactive_split.all.current, s.inactive_split_bytes.all.current),
            (1, (2 * MIB - 28 * KIB) as i64)
        );

        // Free the middle: a hole of 8 KiB beside the remainder (not adjacent, z is between).
        let y_ptr = y.ptr();
        drop(y);
        let s = stats(&a);
        assert_eq!(
            (s.inactive_split.all.current, s.inactive_split_bytes.all.current),
            (2, (2 * MIB - 20 * KIB) as i64)
        );
        // Best fit: an 8 KiB request takes the hole, not the big remainder.
        let y2 = a.allocate(0, 8 * KIB, 0).unwrap();
        assert_eq!(y2.ptr(), y_ptr);
        drop(y2);

        drop(x); // merges with the hole: 12 KiB free at the start
        let snap = a.memory_snapshot(0).unwrap();
        assert_eq!(snap.len(), 1);
        let states: Vec<(usize, BlockState)> = snap[0].blocks.iter().map(|b| (b.size, b.state)).collect();
        assert_eq!(
            states,
            vec![
                (12 * KIB, BlockState::Inactive),
                (16 * KIB, BlockState::ActiveAllocated),
                (2 * MIB - 28 * KIB, BlockState::Inactive)
            ]
        );
        assert_eq!(stats(&a).inactive_split.all.current, 2);

        drop(z); // merges with both neighbours: the segment is whole again
        let snap = a.memory_snapshot(0).unwrap();
        assert_eq!(snap.len(), 1);
        assert_eq!(
            snap[0].blocks,
            vec![BlockInfo { address: BASE, size: 2 * MIB, requested_size: 0, state: BlockState::Inactive }]
        );
        let s = stats(&a);
        assert_eq!((s.inactive_split.all.current, s.inactive_split_bytes.all.current), (0, 0));
        assert_eq!((s.active.all.current, s.active_bytes.all.current), (0, 0));

        a.empty_cache();
        assert_eq!(fake.frees(), 1);
        let s = stats(&a);
        assert_eq!((s.segment.all.current, s.reserved_bytes.all.current, s.num_device_free), (0, 0, 1));
        assert!(a.memory_snapshot(0).unwrap().is_empty());
    }

    #[test]
    fn empty_cache_keeps_split_segments() {
        let (fake, a) = setup(GIB);
        let keep = a.allocate(0, 4 * KIB, 0).unwrap();
        drop(a.allocate(0, 30 * MIB, 0).unwrap());
        a.empty_cache();
        assert_eq!(fake.frees(), 1, "only the whole 30 MiB segment goes back");
        assert_eq!(a.memory_reserved(0).unwrap(), 2 * MIB);
        drop(keep);
        a.empty_cache();
        assert_eq!((fake.frees(), fake.used()), (2, 0));
    }

    #[test]
    fn blocks_are_reused_only_on_their_stream() {
        let (fake, a) = setup(GIB);
        let b1 = a.allocate(0, 4 * KIB, 1).unwrap();
        let p1 = b1.ptr();
        drop(b1);
        let b2 = a.allocate(0, 4 * KIB, 2).unwrap();
        assert_eq!(fake.mallocs(), 2, "stream 2 gets its own segment");
        assert_ne!(b2.ptr(), p1);
        assert_eq!(b2.ptr(), BASE + 2 * MIB as u64);
        let b3 = a.allocate(0, 4 * KIB, 1).unwrap();
        assert_eq!(b3.ptr(), p1, "stream 1 reuses its block");
        assert_eq!(fake.mallocs(), 2);
        assert_eq!(a.memory_reserved(0).unwrap(), 4 * MIB);
        let snap = a.memory_snapshot(0).unwrap();
        assert_eq!(snap.iter().map(|s| s.stream).collect::<Vec<_>>(), vec![1, 2]);
    }

    #[test]
    fn record_stream_defers_reuse_until_the_event_completes() {
        let (fake, a) = setup(GIB);
        let x = a.allocate(0, 4 * KIB, 1).unwrap();
        let xp = x.ptr();
        a.record_stream(&x, 2);
        a.record_stream(&x, 1); // the allocation stream: ignored
        x.record_stream(2); // twice: one use
        drop(x);
        assert_eq!(fake.st().recorded, vec![(0, 2)]);
        let s = stats(&a);
        assert_eq!((s.allocated_bytes.all.current, s.active_bytes.all.current), (0, 4 * KIB as i64));
        assert_eq!(a.memory_snapshot(0).unwrap()[0].blocks[0].state, BlockState::ActivePendingFree);

        // Not reusable while stream 2 may still use it.
        let y = a.allocate(0, 4 * KIB, 1).unwrap();
        assert_eq!(y.ptr(), xp + 4096);
        drop(y); // merges with the remainder, but not with the pending block
        assert_eq!(stats(&a).inactive_split.all.current, 1);
        let y = a.allocate(0, 4 * KIB, 1).unwrap();
        assert_eq!(y.ptr(), xp + 4096, "still pending");
        drop(y);

        fake.complete_events_on(2);
        // Processed lazily: the next allocation frees and merges it, then reuses it.
        assert_eq!(stats(&a).active_bytes.all.current, 4 * KIB as i64);
        let z = a.allocate(0, 4 * KIB, 1).unwrap();
        assert_eq!(z.ptr(), xp);
        assert_eq!(fake.mallocs(), 1);
        assert_eq!(fake.st().destroyed, 1);
        assert!(fake.st().events.is_empty());
        drop(z);
        let s = stats(&a);
        assert_eq!((s.active_bytes.all.current, s.inactive_split.all.current), (0, 0));
    }

    #[test]
    fn record_stream_waits_for_every_stream() {
        let (fake, a) = setup(GIB);
        let x = a.allocate(0, 4 * KIB, 1).unwrap();
        let xp = x.ptr();
        x.record_stream(3);
        x.record_stream(2);
        drop(x);
        assert_eq!(fake.st().recorded, vec![(0, 2), (0, 3)]);
        fake.complete_events_on(2);
        let y = a.allocate(0, 4 * KIB, 1).unwrap();
        assert_ne!(y.ptr(), xp, "stream 3 has not finished");
        fake.complete_events_on(3);
        let z = a.allocate(0, 4 * KIB, 1).unwrap();
        assert_eq!(z.ptr(), xp);
        assert_eq!(fake.st().destroyed, 2);
    }

    #[test]
    fn record_stream_through_a_data_ptr() {
        let (fake, a) = setup(GIB);
        let d = a.allocate(0, 4 * KIB, 1).unwrap().into_data_ptr();
        assert_eq!(d.as_ptr().addr() as u64, BASE);
        assert_eq!(d.device(), Device::cuda(0));
        a.record_stream_data_ptr(&d, 5);
        assert_eq!(a.memory_allocated(0).unwrap(), 4 * KIB);
        drop(d);
        assert_eq!(a.memory_allocated(0).unwrap(), 0);
        assert_eq!(fake.st().recorded, vec![(0, 5)]);
        // A pointer the allocator did not hand out is ignored.
        let cpu = crate::CpuAllocator;
        let other = crate::Allocator::allocate(&cpu, 16).unwrap();
        a.record_stream_data_ptr(&other, 5);
        assert_eq!(fake.st().recorded.len(), 1);
    }

    #[test]
    fn empty_cache_waits_for_pending_events() {
        let (fake, a) = setup(GIB);
        let x = a.allocate(0, 4 * KIB, 1).unwrap();
        x.record_stream(2);
        drop(x);
        a.empty_cache();
        assert_eq!(fake.st().synchronized, 1);
        assert_eq!((fake.frees(), fake.used()), (1, 0));
        assert_eq!(stats(&a).active_bytes.all.current, 0);
    }

    #[test]
    fn data_ptr_returns_the_block_on_drop() {
        let (fake, a) = setup(GIB);
        let d = a.allocate(0, 3000, 4).unwrap().into_data_ptr();
        assert_eq!(a.memory_allocated(0).unwrap(), 3072);
        let d2 = std::thread::spawn(move || {
            drop(d); // freed from another thread
        });
        d2.join().unwrap();
        assert_eq!(a.memory_allocated(0).unwrap(), 0);
        let again = a.allocate(0, 3000, 4).unwrap();
        assert_eq!(again.ptr(), BASE);
        assert_eq!(fake.mallocs(), 1);
    }

    #[test]
    fn zero_byte_allocations_use_no_device_memory() {
        let (fake, a) = setup(GIB);
        let z = a.allocate(0, 0, 0).unwrap();
        assert_eq!((z.ptr(), z.size()), (ZERO_SIZE_ADDRESS, 0));
        z.record_stream(9);
        let d = z.into_data_ptr();
        assert_eq!(d.as_ptr().addr() as u64, ZERO_SIZE_ADDRESS);
        drop(d);
        drop(a.allocate(0, 0, 3).unwrap());
        assert_eq!((fake.mallocs(), fake.frees()), (0, 0));
        assert!(fake.st().recorded.is_empty());
        assert_eq!(stats(&a), MemoryStats::default());
    }

    #[test]
    fn oom_releases_cached_segments_and_retries() {
        let (fake, a) = setup(24 * MIB);
        drop(a.allocate(0, 20 * MIB, 0).unwrap()); // cached 20 MiB segment
        let keep = a.allocate(0, 4 * KIB, 3).unwrap(); // 2 MiB small segment, split: stays
        let b = a.allocate(0, 22 * MIB, 0).unwrap();
        assert_eq!(b.size(), 22 * MIB);
        let s = stats(&a);
        assert_eq!(s.num_alloc_retries, 1);
        assert_eq!(s.num_ooms, 0);
        assert_eq!((s.num_device_alloc, s.num_device_free), (3, 1));
        assert_eq!(s.reserved_bytes.all.current, 24 * MIB as i64);
        assert_eq!(s.reserved_bytes.all.peak, 24 * MIB as i64);
        assert_eq!(fake.st().malloc_sizes, vec![20 * MIB, 2 * MIB, 22 * MIB]);
        drop((keep, b));
    }

    #[test]
    fn unsatisfiable_oom_reports_pytorchs_message() {
        let (fake, a) = setup(8 * GIB);
        let _big = a.allocate(0, 6 * GIB, 0).unwrap();
        let _small = a.allocate(0, 300 * KIB, 0).unwrap();
        drop(a.allocate(0, 30 * MIB, 0).unwrap()); // cached: released on the way to the error
        let err = a.allocate(0, 3 * GIB, 0).unwrap_err();
        assert_eq!(
            err,
            Error::CudaOutOfMemory {
                device: 0,
                requested: 3 * GIB,
                total: 8 * GIB,
                free: 2 * GIB - 2 * MIB,
                allowed: None,
                allocated: 6 * GIB + 300 * KIB,
                reserved_unallocated: 2 * MIB - 300 * KIB,
            }
        );
        assert_eq!(
            err.to_string(),
            "CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of 8.00 GiB of which \
             2.00 GiB is free. Of the allocated memory 6.00 GiB is allocated by PyTorch, and 1.71 MiB is \
             reserved by PyTorch but unallocated."
        );
        let s = stats(&a);
        assert_eq!((s.num_ooms, s.num_alloc_retries, s.num_device_free), (1, 1, 1));
        assert_eq!(s.allocated_bytes.all.current, (6 * GIB + 300 * KIB) as i64);
        assert_eq!(s.allocation.all.current, 2);
        assert_eq!(fake.used(), 6 * GIB + 2 * MIB);

        // A small request reports the 2 MiB segment it needed, as PyTorch does.
        let (_fake, a) = setup(MIB);
        let err = a.allocate(0, 100, 0).unwrap_err();
        assert!(err.to_string().starts_with("CUDA out of memory. Tried to allocate 2.00 MiB. GPU 0 has a total capacity of 1024.00 KiB of which 1024.00 KiB is free."), "{err}");

        // A size that cannot even be rounded is out of memory too, without asking the driver.
        let (fake, a) = setup(MIB);
        assert!(matches!(a.allocate(0, usize::MAX, 0), Err(Error::CudaOutOfMemory { requested: usize::MAX, .. })));
        assert_eq!(fake.mallocs(), 0);
    }

    #[test]
    fn memory_fraction_limits_reserved_bytes() {
        let (fake, a) = setup(8 * GIB);
        a.set_memory_fraction(0.5, 0).unwrap();
        let _x = a.allocate(0, 3 * GIB, 0).unwrap();
        let err = a.allocate(0, 2 * GIB, 0).unwrap_err();
        assert_eq!(fake.mallocs(), 1, "the limit is checked before calling the driver");
        assert_eq!(
            err.to_string(),
            "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 8.00 GiB of which \
             5.00 GiB is free. 4.00 GiB allowed; Of the allocated memory 3.00 GiB is allocated by PyTorch, and \
             0 bytes is reserved by PyTorch but unallocated."
        );
        a.set_memory_fraction(1.0, 0).unwrap();
        assert!(a.allocate(0, 2 * GIB, 0).is_ok());
        assert!(matches!(a.set_memory_fraction(1.5, 0), Err(Error::InvalidArgument { .. })));
    }

    #[test]
    fn other_driver_errors_are_reported_without_retry() {
        let (fake, a) = setup(GIB);
        fake.st().fail_other = true;
        let err = a.allocate(0, 10, 0).unwrap_err();
        assert_eq!(err.to_string(), "CUDA error: unspecified launch failure");
        let s = stats(&a);
        assert_eq!((s.num_alloc_retries, s.num_ooms, s.num_device_alloc), (0, 0, 0));
    }

    #[test]
    fn stats_match_hand_computed_values() {
        let (fake, a) = setup(GIB);
        let x = a.allocate(0, 1000, 0).unwrap(); // 1024 B in a 2 MiB small segment
        let y = a.allocate(0, 3 * MIB, 0).unwrap(); // 3 MiB in a 20 MiB segment
        let z = a.allocate(0, 25 * MIB, 0).unwrap(); // 26 MiB segment, 1 MiB remainder not split
        assert_eq!(z.size(), 26 * MIB);
        let allocated = 1024 + 3 * MIB + 26 * MIB;
        assert_eq!(a.memory_allocated(0).unwrap(), allocated);
        assert_eq!(a.max_memory_allocated(0).unwrap(), allocated);
        assert_eq!(a.memory_reserved(0).unwrap(), 48 * MIB);
        let s = stats(&a);
        assert_eq!(s.active_bytes.all.current, allocated as i64);
        assert_eq!(s.requested_bytes.all.current, (1000 + 28 * MIB) as i64);
        assert_eq!(s.segment.small_pool.current, 1);
        assert_eq!(s.segment.large_pool.current, 2);
        assert_eq!(s.inactive_split.all.current, 2);
        assert_eq!(s.inactive_split_bytes.all.current, (2 * MIB - 1024 + 17 * MIB) as i64);
        assert_eq!(s.allocation.all.current, 3);

        drop(y); // merges into the whole 20 MiB segment
        let s = stats(&a);
        assert_eq!(s.allocated_bytes.all.current, (1024 + 26 * MIB) as i64);
        assert_eq!(s.allocated_bytes.all.peak, allocated as i64);
        assert_eq!(s.allocated_bytes.large_pool.freed, 3 * MIB as i64);
        assert_eq!((s.allocation.all.current, s.allocation.all.allocated, s.allocation.all.freed), (2, 3, 1));
        assert_eq!(s.inactive_split.all.current, 1);
        assert_eq!(s.requested_bytes.all.current, (1000 + 25 * MIB) as i64);

        a.reset_peak_memory_stats(0).unwrap();
        assert_eq!(a.max_memory_allocated(0).unwrap(), 1024 + 26 * MIB);
        assert_eq!(a.max_memory_reserved(0).unwrap(), 48 * MIB);

        a.empty_cache(); // the free 20 MiB segment goes back
        assert_eq!(a.memory_reserved(0).unwrap(), 28 * MIB);
        assert_eq!(a.max_memory_reserved(0).unwrap(), 48 * MIB);
        let s = stats(&a);
        assert_eq!((s.num_device_alloc, s.num_device_free), (3, 1));
        assert_eq!(fake.frees(), 1);

        drop((x, z));
        let s = stats(&a);
        assert_eq!((s.allocated_bytes.all.current, s.active.all.current, s.requested_bytes.all.current), (0, 0, 0));
        a.reset_accumulated_memory_stats(0).unwrap();
        let s = stats(&a);
        assert_eq!(
            (s.allocation.all.allocated, s.num_device_alloc, s.reserved_bytes.all.current),
            (0, 0, 28 * MIB as i64)
        );

        let map = s.as_map();
        assert_eq!(map["reserved_bytes.all.current"], 28 * MIB as i64);
        assert_eq!(map["reserved_bytes.large_pool.current"], 26 * MIB as i64);
        assert_eq!(map["allocated_bytes.all.peak"], (1024 + 26 * MIB) as i64);
        assert_eq!(map["num_alloc_retries"], 0);
        assert_eq!(map["max_split_size"], -1);
        assert_eq!(map.len(), 9 * 3 * 4 + 5);
    }

    #[test]
    fn devices_are_independent_and_checked() {
        let fake = FakeDevice::new(GIB);
        let a = CachingAllocator::new(fake.clone(), 2);
        let b = a.allocate(1, 4 * KIB, 0).unwrap();
        assert_eq!(b.device(), 1);
        assert_eq!(b.into_data_ptr().device(), Device::cuda(1));
        assert_eq!(a.memory_reserved(0).unwrap(), 0);
        assert_eq!(a.memory_reserved(1).unwrap(), 2 * MIB);
        for bad in [2i8, -1] {
            let e = a.allocate(bad, 10, 0).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("CUDACachingAllocator: Invalid device argument {bad}: did you call init?")
            );
            assert!(a.memory_stats(bad).is_err());
        }
    }

    #[test]
    fn dropping_the_allocator_frees_every_segment() {
        let (fake, a) = setup(GIB);
        let live = a.allocate(0, 5 * MIB, 0).unwrap();
        drop(a.allocate(0, 100, 0).unwrap());
        let pending = a.allocate(0, 100, 0).unwrap();
        pending.record_stream(1);
        drop(pending);
        drop(a);
        assert_eq!(fake.frees(), 0, "the block still alive keeps the caches");
        drop(live);
        assert_eq!((fake.mallocs(), fake.frees(), fake.used()), (2, 2, 0));
        assert!(fake.st().events.is_empty());
    }

    /// Request sizes for the concurrency test: a deterministic mix of zero, small, 1-10 MiB and
    /// large sizes, with the random word that also drives which block is freed.
    struct Requests(u64);

    impl Iterator for Requests {
        type Item = (usize, usize);
        fn next(&mut self) -> Option<(usize, usize)> {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = (self.0 >> 33) as usize;
            let size = match r % 4 {
                0 => r % 4096,
                1 => r % MIB,
                2 => MIB + r % (8 * MIB),
                _ => r % (24 * MIB),
            };
            Some((r, size))
        }
    }

    #[test]
    fn concurrent_allocate_and_free_stay_consistent() {
        const THREADS: u64 = 4;
        const ITERS: usize = 400;
        // Room enough that no interleaving runs out of memory.
        let (fake, a) = setup(64 * GIB);
        // Live ranges of all threads: an overlap means two blocks were handed the same memory.
        let live: Arc<Mutex<BTreeMap<u64, usize>>> = Arc::default();
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (a, live) = (a.clone(), live.clone());
                std::thread::spawn(move || {
                    let mut held: Vec<DeviceBlock> = Vec::new();
                    let release = |b: DeviceBlock| {
                        if b.size() > 0 {
                            live.lock().unwrap().remove(&b.ptr());
                        }
                        drop(b); // after leaving `live`: another thread may get the memory now
                    };
                    for (i, (r, size)) in Requests(t).take(ITERS).enumerate() {
                        // A third of the requests share stream 0; the rest use the thread's own.
                        let stream = if i % 3 == 0 { 0 } else { t + 1 };
                        let b = a.allocate(0, size, stream).unwrap();
                        assert_eq!((b.stream(), b.requested_size()), (stream, size));
                        if b.size() > 0 {
                            let mut l = live.lock().unwrap();
                            if let Some((&p, &n)) = l.range(..=b.ptr()).next_back() {
                                assert!(p + n as u64 <= b.ptr(), "overlap");
                            }
                            if let Some((&p, _)) = l.range(b.ptr()..).next() {
                                assert!(b.ptr() + b.size() as u64 <= p, "overlap");
                            }
                            l.insert(b.ptr(), b.size());
                        }
                        held.push(b);
                        if held.len() > 6 || r.is_multiple_of(5) {
                            release(held.swap_remove(r % held.len()));
                        }
                    }
                    held.into_iter().for_each(release);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let nonzero = (0..THREADS).flat_map(|t| Requests(t).take(ITERS)).filter(|&(_, n)| n > 0).count();
        let s = stats(&a);
        assert_eq!(s.allocation.all.allocated, nonzero as i64);
        assert_eq!((s.allocation.all.current, s.allocated_bytes.all.current, s.active_bytes.all.current), (0, 0, 0));
        assert_eq!((s.inactive_split.all.current, s.inactive_split_bytes.all.current), (0, 0));
        assert_eq!(s.reserved_bytes.all.current as usize, fake.used());
        assert_eq!(s.num_device_alloc as usize, fake.mallocs());
        // Every segment has merged back into one free block.
        let snap = a.memory_snapshot(0).unwrap();
        assert_eq!(snap.len(), fake.mallocs() - fake.frees());
        assert!(snap.iter().all(|seg| seg.blocks.len() == 1 && seg.blocks[0].state == BlockState::Inactive));
        assert_eq!(snap.iter().map(|seg| seg.total_size).sum::<usize>(), fake.used());
        a.empty_cache();
        assert_eq!((fake.used(), fake.mallocs()), (0, fake.frees()));
        assert_eq!(stats(&a).segment.all.current, 0);
    }

    /// The stats behind `PYTORCH_SUMMARY`: all = large + small, values chosen to exercise each unit
    /// (not a reachable state, a peak may be below its current value: only the formatting is tested).
    fn summary_stats() -> MemoryStats {
        MemoryStats {
            allocation: StatArray {
                all: Stat { current: 1012, peak: 2030, allocated: 902000000, freed: 901998988 },
                large_pool: Stat { current: 12, peak: 30, allocated: 2000000, freed: 1999988 },
                small_pool: Stat { current: 1000, peak: 2000, allocated: 900000000, freed: 899999000 },
            },
            segment: StatArray {
                all: Stat { current: 13, peak: 24, allocated: 40, freed: 27 },
                large_pool: Stat { current: 3, peak: 4, allocated: 10, freed: 7 },
                small_pool: Stat { current: 10, peak: 20, allocated: 30, freed: 20 },
            },
            active: StatArray {
                all: Stat { current: 1012, peak: 2030, allocated: 902000000, freed: 901998988 },
                large_pool: Stat { current: 12, peak: 30, allocated: 2000000, freed: 1999988 },
                small_pool: Stat { current: 1000, peak: 2000, allocated: 900000000, freed: 899999000 },
            },
            inactive_split: StatArray {
                all: Stat { current: 1, peak: 7, allocated: 1500000, freed: 1499999 },
                large_pool: Stat { current: 1, peak: 2, allocated: 700000, freed: 699999 },
                small_pool: Stat { current: 0, peak: 5, allocated: 800000, freed: 800000 },
            },
            allocated_bytes: StatArray {
                all: Stat { current: 6447693824, peak: 4293918720, allocated: 2613487599616, freed: 2607045148672 },
                large_pool: Stat {
                    current: 3226468352,
                    peak: 2147483648,
                    allocated: 1324997410816,
                    freed: 1321776185344,
                },
                small_pool: Stat {
                    current: 3221225472,
                    peak: 2146435072,
                    allocated: 1288490188800,
                    freed: 1285268963328,
                },
            },
            reserved_bytes: StatArray {
                all: Stat { current: 4315938816, peak: 4336910336, allocated: 5431623680, freed: 1115684864 },
                large_pool: Stat { current: 4294967296, peak: 4294967296, allocated: 5368709120, freed: 1073741824 },
                small_pool: Stat { current: 20971520, peak: 41943040, allocated: 62914560, freed: 41943040 },
            },
            active_bytes: StatArray {
                all: Stat { current: 6447693824, peak: 4293918720, allocated: 2613487599616, freed: 2607045148672 },
                large_pool: Stat {
                    current: 3226468352,
                    peak: 2147483648,
                    allocated: 1324997410816,
                    freed: 1321776185344,
                },
                small_pool: Stat {
                    current: 3221225472,
                    peak: 2146435072,
                    allocated: 1288490188800,
                    freed: 1285268963328,
                },
            },
            inactive_split_bytes: StatArray {
                all: Stat { current: 716900, peak: 926600, allocated: 849346560, freed: 848297984 },
                large_pool: Stat { current: 716800, peak: 921600, allocated: 838860800, freed: 837812224 },
                small_pool: Stat { current: 100, peak: 5000, allocated: 10485760, freed: 10485760 },
            },
            requested_bytes: StatArray {
                all: Stat { current: 6442451944, peak: 4293918720, allocated: 2613487599616, freed: 2607045148672 },
                large_pool: Stat {
                    current: 3221226472,
                    peak: 2147483648,
                    allocated: 1324997410816,
                    freed: 1321776185344,
                },
                small_pool: Stat {
                    current: 3221225472,
                    peak: 2146435072,
                    allocated: 1288490188800,
                    freed: 1285268963328,
                },
            },
            num_ooms: 2,
            num_alloc_retries: 3,
            ..MemoryStats::default()
        }
    }

    /// `torch.cuda.memory_summary(device=1)` of torch 2.15.0+cu132 for `summary_stats()`, produced
    /// without a GPU by running PyTorch's own `memory_summary` (torch/cuda/memory.py) with
    /// `torch.cuda.memory.memory_stats` replaced by the flattened `summary_stats()` (plus the
    /// `oversize_*` keys at 0).
    const PYTORCH_SUMMARY: &str = concat!(
        "|===========================================================================|\n",
        "|                  PyTorch CUDA memory summary, device ID 1                 |\n",
        "|---------------------------------------------------------------------------|\n",
        "|            CUDA OOMs: 2            |        cudaMalloc retries: 3         |\n",
        "|===========================================================================|\n",
        "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n",
        "|---------------------------------------------------------------------------|\n",
        "| Allocated memory      |   6149 MiB |   4095 MiB |   2434 GiB |   2428 GiB |\n",
        "|       from large pool |   3077 MiB |   2048 MiB |   1234 GiB |   1231 GiB |\n",
        "|       from small pool |   3072 MiB |   2047 MiB |   1200 GiB |   1197 GiB |\n",
        "|---------------------------------------------------------------------------|\n",
        "| Active memory         |   6149 MiB |   4095 MiB |   2434 GiB |   2428 GiB |\n",
        "|       from large pool |   3077 MiB |   2048 MiB |   1234 GiB |   1231 GiB |\n",
        "|       from small pool |   3072 MiB |   2047 MiB |   1200 GiB |   1197 GiB |\n",
        "|---------------------------------------------------------------------------|\n",
        "| Requested memory      |   6144 MiB |   4095 MiB |   2434 GiB |   2428 GiB |\n",
        "|       from large pool |   3072 MiB |   2048 MiB |   1234 GiB |   1231 GiB |\n",
        "|       from small pool |   3072 MiB |   2047 MiB |   1200 GiB |   1197 GiB |\n",
        "|---------------------------------------------------------------------------|\n",
        "| GPU reserved memory   |   4116 MiB |   4136 MiB |   5180 MiB |   1064 MiB |\n",
        "|       from large pool |   4096 MiB |   4096 MiB |   5120 MiB |   1024 MiB |\n",
        "|       from small pool |     20 MiB |     40 MiB |     60 MiB |     40 MiB |\n",
        "|---------------------------------------------------------------------------|\n",
        "| Non-releasable memory | 716900 B   |    904 KiB |    810 MiB |    809 MiB |\n",
        "|       from large pool | 716800 B   |    900 KiB |    800 MiB |    799 MiB |\n",
        "|       from small pool |    100 B   |      4 KiB |     10 MiB |     10 MiB |\n",
        "|---------------------------------------------------------------------------|\n",
        "| Allocations           |    1012    |    2030    |     902 M  |     901 M  |\n",
        "|       from large pool |      12    |      30    |       2 M  |       1 M  |\n",
        "|       from small pool |    1000    |    2000    |     900 M  |     899 M  |\n",
        "|---------------------------------------------------------------------------|\n",
        "| Active allocs         |    1012    |    2030    |     902 M  |     901 M  |\n",
        "|       from large pool |      12    |      30    |       2 M  |       1 M  |\n",
        "|       from small pool |    1000    |    2000    |     900 M  |     899 M  |\n",
        "|---------------------------------------------------------------------------|\n",
        "| GPU reserved segments |      13    |      24    |      40    |      27    |\n",
        "|       from large pool |       3    |       4    |      10    |       7    |\n",
        "|       from small pool |      10    |      20    |      30    |      20    |\n",
        "|---------------------------------------------------------------------------|\n",
        "| Non-releasable allocs |       1    |       7    |    1500 K  |    1499 K  |\n",
        "|       from large pool |       1    |       2    |     700 K  |     699 K  |\n",
        "|       from small pool |       0    |       5    |     800 K  |     800 K  |\n",
        "|---------------------------------------------------------------------------|\n",
        "| Oversize allocations  |       0    |       0    |       0    |       0    |\n",
        "|---------------------------------------------------------------------------|\n",
        "| Oversize GPU segments |       0    |       0    |       0    |       0    |\n",
        "|===========================================================================|\n",
    );

    #[test]
    fn memory_summary_matches_pytorch() {
        let s = memory_summary(&summary_stats(), 1);
        for (i, (got, want)) in s.lines().zip(PYTORCH_SUMMARY.lines()).enumerate() {
            assert_eq!(got, want, "line {i}");
        }
        assert_eq!(s, PYTORCH_SUMMARY);
        assert!(s.lines().all(|l| l.chars().count() == SUMMARY_WIDTH + 2), "every line is 75 wide between its bars");
    }

    #[test]
    fn memory_summary_frame_and_header_are_pytorchs() {
        // Written from torch/cuda/memory.py `memory_summary` (torch 2.15.0): the `=`/`-` rules of
        // 75, the title `" {_:16} PyTorch CUDA memory summary, device ID {device:<17d} "`, the
        // `"  {_:9} CUDA OOMs: {num_ooms:<12d} | {_:6} cudaMalloc retries: {num_alloc_retries:<8d}  "`
        // line and the column header, each between `|`s.
        let s = memory_summary(&MemoryStats::default(), 0);
        let lines: Vec<&str> = s.lines().collect();
        let rule = format!("|{}|", "=".repeat(75));
        assert_eq!(lines[0], rule);
        assert_eq!(lines[1], "|                  PyTorch CUDA memory summary, device ID 0                 |");
        assert_eq!(lines[2], format!("|{}|", "-".repeat(75)));
        assert_eq!(lines[3], "|            CUDA OOMs: 0            |        cudaMalloc retries: 0         |");
        assert_eq!(lines[4], rule);
        assert_eq!(lines[5], "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |");
        assert_eq!(lines[6], format!("|{}|", "-".repeat(75)));
        assert_eq!(lines[7], "| Allocated memory      |      0 B   |      0 B   |      0 B   |      0 B   |");
        assert_eq!(lines[8], "|       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |");
        assert_eq!(lines[27], "| Allocations           |       0    |       0    |       0    |       0    |");
        assert_eq!(
            lines[lines.len() - 2],
            "| Oversize GPU segments |       0    |       0    |       0    |       0    |"
        );
        assert_eq!(*lines.last().unwrap(), rule);
        assert_eq!(lines.len(), 6 + 9 * 4 + 2 * 2 + 1);
        assert!(s.ends_with("|\n"));
    }

    #[test]
    fn summary_sizes_and_counts_scale_as_pytorch() {
        // Expected strings from torch 2.15.0+cu132: PyTorch's nested `_format_size` and
        // `_format_count` of `torch.cuda.memory.memory_summary`, run on their own (taken from the
        // function's code constants), as `(value, reference) -> string`. Bytes move to KiB at
        // 768 KiB, not at 1 KiB; counts to K at 750,000.
        let sizes: [(i64, i64, &str); 16] = [
            (0, 0, "     0 B  "),
            (1, 1, "     1 B  "),
            (1023, 1023, "  1023 B  "),
            (1024, 1024, "  1024 B  "),
            (786431, 786431, "786431 B  "),
            (786432, 786432, "   768 KiB"),
            (1048576, 1048576, "  1024 KiB"),
            (805306367, 805306367, "786431 KiB"),
            (805306368, 805306368, "   768 MiB"),
            (1073741824, 1073741824, "  1024 MiB"),
            (5368709243, 5368709243, "  5120 MiB"),
            (824633720832, 824633720832, "   768 GiB"),
            (900719925474099200, 900719925474099200, "   800 PiB"),
            (-5, -5, "    -5 B  "),
            (1500, 1048576, "     1 KiB"),
            (3145728, 2147483648, "     3 MiB"),
        ];
        for (v, pref, want) in sizes {
            assert_eq!(summary_size(v, pref), want, "size {v} (reference {pref})");
        }
        let counts: [(i64, i64, &str); 11] = [
            (0, 0, "      0   "),
            (1, 1, "      1   "),
            (749999, 749999, " 749999   "),
            (750000, 750000, "    750 K "),
            (999999, 999999, "    999 K "),
            (1000000, 1000000, "   1000 K "),
            (749999999, 749999999, " 749999 K "),
            (750000000, 750000000, "    750 M "),
            (1099511627776, 1099511627776, "1099511 M "),
            (5, 800000, "      0 K "),
            (123456, 1000000000, "      0 M "),
        ];
        for (v, pref, want) in counts {
            assert_eq!(summary_count(v, pref), want, "count {v} (reference {pref})");
        }
    }
}
