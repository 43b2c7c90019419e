//! The CPU caching allocator: freed blocks are kept in size-class pools and handed out again,
//! so repeated operators neither pay the system allocator nor, for large outputs, the page
//! faults of touching fresh memory (about 2 µs per 4 KiB page on this machine's VM).
//!
//! Note [CPU caching allocator]: sizes are rounded up to a class: multiples of 64 bytes up to
//! 1 KiB, then 8 classes per power of two (at most 12.5% slack). Small blocks (up to
//! [`SMALL_LIMIT`]) are cached per thread without locks; a block freed on another thread joins
//! that thread's cache. Large blocks go to one global pool under a mutex, bounded by
//! [`set_max_cached_bytes`]; `empty_cache` frees the large pool and the calling thread's small blocks
//! (other threads' small caches are freed when those threads exit). Statistics
//! (bytes in use, cached, hits and misses) are per-thread counters summed when read.
//!
//! Note [CPU memory summary]: [`memory_stats`] and [`memory_summary`] are the CPU side of
//! `torch.cuda.memory_stats()` / `torch.cuda.memory_summary()`, in the CUDA table's layout
//! (Note [Memory summary layout] in `cuda_caching_allocator`), counted since the process
//! started, in size classes. The columns:
//!
//! - Allocated memory: Cur Usage is the bytes in blocks held by tensors, Tot Alloc and Tot Freed
//!   the bytes of every allocation and free so far.
//! - Reserved memory: the bytes taken from the system and not returned (allocated plus cached);
//!   Tot Alloc is what the system allocator handed out (the misses), Tot Freed what went back
//!   to it (cache bound, `empty_cache`, thread exit).
//! - Allocations: blocks held now, allocations and frees so far.
//! - Peak Usage: the sum over threads of each thread's own peak. A global peak needs an atomic
//!   read-modify-write per allocation, which the hot path avoids; a thread's peak is a compare
//!   and store on counters only it writes. The sum is at least the true peak (each thread's
//!   value at that moment is at most its peak), equal to it with one allocating thread, and
//!   larger when threads peak at different times or free each other's blocks. Peaks of exited
//!   threads stay in the sum; there is no reset.
//!
//! The hot path keeps its one thread-local access per allocation and free: the new counters are
//! stored next to the old ones, and freed bytes and free counts are derived when read
//! (`allocated_total - in_use`, `hits + misses - live`) rather than counted on each free.
//!
//! Note [CPU memory limit]: [`set_memory_limit`] caps the bytes held by tensors (size classes,
//! the allocated bytes of [`memory_stats`]), the CPU counterpart of CUDA's
//! `set_per_process_memory_fraction`: an allocation that would take the total over the limit
//! fails as out of memory (PyTorch's CPU message). Tests use it to give a rank a memory budget (FSDP's
//! "a model larger than one rank's memory"). While a limit is set, each allocation sums the
//! per-thread counters under their registry's lock, so the hot path pays one relaxed load when no
//! limit is set; [`limited_peak_bytes`] is the exact peak of those sums since the limit was set
//! (allocations racing on two threads can each pass the check, so the limit may be overshot by
//! what concurrent allocations hold).
//!
//! Note [Huge pages for large blocks]: blocks of at least [`HUGE_PAGE`] bytes are aligned to
//! 2 MiB and, on Linux, advised (`madvise(MADV_HUGEPAGE)`) to be backed by transparent huge
//! pages, which the kernel here grants only on request (`transparent_hugepage=madvise`). A
//! 64 MiB tensor then needs 32 TLB entries instead of 16,384: streaming reads run faster on
//! this machine (a standalone 16M-element f32 sum with prefetching: 6.6 → 5.3 ms), and a
//! first touch costs one fault per 2 MiB instead of one per 4 KiB. The advice is a hint: when
//! the kernel refuses it the block is used with ordinary pages.

use std::alloc::Layout;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::allocator::{Allocator, DataPtr, CPU_ALIGNMENT};
use crate::{Device, DeviceType, Error, Result};

/// Blocks up to this size are cached per thread.
pub const SMALL_LIMIT: usize = 1 << 16;
/// Per thread and size class, at most this many small blocks are kept.
const SMALL_BLOCKS_PER_CLASS: usize = 64;

static MAX_CACHED: AtomicUsize = AtomicUsize::new(8 << 30);

/// The memory limit in bytes, 0 for none (Note [CPU memory limit]).
static LIMIT: AtomicUsize = AtomicUsize::new(0);
/// The peak of the allocated bytes since the limit was set.
static LIMITED_PEAK: AtomicUsize = AtomicUsize::new(0);

/// Caps the bytes held by CPU tensors at `limit` (None removes the cap); allocations beyond it
/// fail as out of memory (Note [CPU memory limit]). Setting a limit resets
/// [`limited_peak_bytes`] to the bytes in use now; removing it keeps the peak for reading.
pub fn set_memory_limit(limit: Option<usize>) {
    if limit.is_some() {
        LIMITED_PEAK.store(memory_stats().allocated_bytes, Ordering::Relaxed);
    }
    LIMIT.store(limit.unwrap_or(0), Ordering::Relaxed);
}

/// The limit [`set_memory_limit`] set, if any.
pub fn memory_limit() -> Option<usize> {
    Some(LIMIT.load(Ordering::Relaxed)).filter(|&l| l != 0)
}

/// The most bytes held by CPU tensors at once since [`set_memory_limit`] was last called (while
/// a limit is set; 0 if none was ever set).
pub fn limited_peak_bytes() -> usize {
    LIMITED_PEAK.load(Ordering::Relaxed)
}

/// The limit's check for a block of class `size` (`nbytes` requested).
#[cold]
fn check_limit(size: usize, nbytes: usize, limit: usize) -> Result<()> {
    let in_use = memory_stats().allocated_bytes;
    if in_use + size > limit {
        return Err(Error::OutOfMemory { device: DeviceType::Cpu, nbytes });
    }
    LIMITED_PEAK.fetch_max(in_use + size, Ordering::Relaxed);
    Ok(())
}

/// Counters of one thread. Only that thread writes them (a relaxed load and store, no atomic
/// read-modify-write, which costs ~11 ns here); any thread may read them for [`memory_stats`].
/// Bytes and live blocks are signed: a block allocated on one thread may be freed on another.
/// What a free takes away is not counted separately: the freed bytes are
/// `allocated_total - in_use`, the frees `hits + misses - live` (Note [CPU memory summary]).
#[derive(Default)]
struct ThreadStats {
    in_use: AtomicIsize,
    cached: AtomicIsize,
    hits: AtomicUsize,
    misses: AtomicUsize,
    /// Bytes ever allocated by this thread (size classes).
    allocated_total: AtomicUsize,
    /// Bytes this thread took from the system allocator (its misses).
    system_total: AtomicUsize,
    /// Blocks allocated minus blocks freed on this thread.
    live: AtomicIsize,
    /// Largest `in_use`, `live` and `in_use + cached` this thread has had.
    peak_in_use: AtomicIsize,
    peak_live: AtomicIsize,
    peak_reserved: AtomicIsize,
}

impl ThreadStats {
    #[inline]
    fn add(field: &AtomicIsize, delta: isize) {
        Self::added(field, delta);
    }
    /// Adds `delta` to `field` and returns the new value.
    #[inline]
    fn added(field: &AtomicIsize, delta: isize) -> isize {
        let v = field.load(Ordering::Relaxed).wrapping_add(delta);
        field.store(v, Ordering::Relaxed);
        v
    }
    #[inline]
    fn inc(field: &AtomicUsize) {
        field.store(field.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
    #[inline]
    fn add_usize(field: &AtomicUsize, delta: usize) {
        field.store(field.load(Ordering::Relaxed).wrapping_add(delta), Ordering::Relaxed);
    }
    /// Raises `peak` to `v` (a compare and, rarely, a store).
    #[inline]
    fn raise(peak: &AtomicIsize, v: isize) {
        if v > peak.load(Ordering::Relaxed) {
            peak.store(v, Ordering::Relaxed);
        }
    }
    /// An allocation of a block of class `size`, from the cache (`hit`) or the system.
    #[inline]
    fn allocated(&self, size: usize, hit: bool) {
        let in_use = Self::added(&self.in_use, size as isize);
        Self::raise(&self.peak_in_use, in_use);
        Self::raise(&self.peak_live, Self::added(&self.live, 1));
        Self::add_usize(&self.allocated_total, size);
        if hit {
            Self::inc(&self.hits);
            Self::add(&self.cached, -(size as isize));
        } else {
            Self::inc(&self.misses);
            Self::add_usize(&self.system_total, size);
            // Only a miss grows this thread's reserved bytes (`in_use + cached`).
            Self::raise(&self.peak_reserved, in_use.wrapping_add(self.cached.load(Ordering::Relaxed)));
        }
    }
    /// A block of class `size` freed (before it goes to a pool or back to the system).
    #[inline]
    fn freed(&self, size: usize) {
        Self::add(&self.in_use, -(size as isize));
        Self::add(&self.live, -1);
    }
}

/// Every thread's counters (kept after a thread exits: its blocks may still be in use).
static ALL_STATS: Mutex<Vec<Arc<ThreadStats>>> = Mutex::new(Vec::new());

/// Applies `f` to this thread's counters (no-op during thread teardown).
#[inline]
fn with_stats(f: impl FnOnce(&ThreadStats)) {
    let _ = CACHE.try_with(|c| f(&c.stats));
}

/// Allocation statistics of the CPU caching allocator, since the process started. Bytes are
/// size classes (what the blocks hold, not what was requested); zero-byte allocations take no
/// block and are not counted. Peaks are sums of per-thread peaks (Note [CPU memory summary]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuMemoryStats {
    /// Bytes in blocks currently held by tensors (rounded to size classes).
    pub allocated_bytes: usize,
    /// Bytes in free blocks kept for reuse.
    pub cached_bytes: usize,
    /// Allocations served from the cache.
    pub cache_hits: usize,
    /// Allocations that went to the system allocator.
    pub cache_misses: usize,
    /// Bytes of all allocations so far.
    pub allocated_bytes_total: usize,
    /// Bytes of all frees so far (`allocated_bytes_total - allocated_bytes`).
    pub freed_bytes_total: usize,
    /// Allocations so far (`cache_hits + cache_misses`).
    pub allocation_count: usize,
    /// Frees so far.
    pub free_count: usize,
    /// Blocks currently held by tensors (`allocation_count - free_count`).
    pub active_allocations: usize,
    /// Sum over threads of each thread's peak `allocated_bytes` (an upper bound of the peak).
    pub peak_allocated_bytes: usize,
    /// Sum over threads of each thread's peak reserved bytes, `allocated + cached` (an upper
    /// bound of the peak of [`CpuMemoryStats::reserved_bytes`]).
    pub peak_reserved_bytes: usize,
    /// Sum over threads of each thread's peak of blocks held (an upper bound of the peak of
    /// `active_allocations`).
    pub peak_active_allocations: usize,
    /// Bytes taken from the system allocator so far (the misses' blocks).
    pub reserved_bytes_total: usize,
    /// Bytes returned to the system allocator so far.
    pub released_bytes_total: usize,
}

impl CpuMemoryStats {
    /// Bytes obtained from the system and not returned: allocated plus cached.
    pub fn reserved_bytes(&self) -> usize {
        self.allocated_bytes + self.cached_bytes
    }
}

/// Current statistics, summed over all threads.
pub fn memory_stats() -> CpuMemoryStats {
    let all = ALL_STATS.lock().unwrap_or_else(|e| e.into_inner());
    sum_stats(all.iter().map(|s| &**s))
}

/// The statistics of the given threads' counters together.
fn sum_stats<'a>(all: impl Iterator<Item = &'a ThreadStats>) -> CpuMemoryStats {
    let (mut in_use, mut cached, mut hits, mut misses) = (0isize, 0isize, 0usize, 0usize);
    let (mut allocated_total, mut system_total, mut live) = (0usize, 0usize, 0isize);
    let (mut peak_in_use, mut peak_live, mut peak_reserved) = (0isize, 0isize, 0isize);
    for s in all {
        in_use = in_use.wrapping_add(s.in_use.load(Ordering::Relaxed));
        cached = cached.wrapping_add(s.cached.load(Ordering::Relaxed));
        hits += s.hits.load(Ordering::Relaxed);
        misses += s.misses.load(Ordering::Relaxed);
        allocated_total = allocated_total.wrapping_add(s.allocated_total.load(Ordering::Relaxed));
        system_total = system_total.wrapping_add(s.system_total.load(Ordering::Relaxed));
        live = live.wrapping_add(s.live.load(Ordering::Relaxed));
        peak_in_use = peak_in_use.wrapping_add(s.peak_in_use.load(Ordering::Relaxed));
        peak_live = peak_live.wrapping_add(s.peak_live.load(Ordering::Relaxed));
        peak_reserved = peak_reserved.wrapping_add(s.peak_reserved.load(Ordering::Relaxed));
    }
    // What a free takes away is derived from the signed sums (Note [CPU memory summary]), then
    // clamped: counters are read one by one while other threads write theirs, and a subset of
    // threads may have freed more than it allocated.
    let clamp = |v: i128| v.clamp(0, usize::MAX as i128) as usize;
    let allocation_count = hits + misses;
    CpuMemoryStats {
        allocated_bytes: clamp(in_use as i128),
        cached_bytes: clamp(cached as i128),
        cache_hits: hits,
        cache_misses: misses,
        allocated_bytes_total: allocated_total,
        freed_bytes_total: clamp(allocated_total as i128 - in_use as i128),
        allocation_count,
        free_count: clamp(allocation_count as i128 - live as i128),
        active_allocations: clamp(live as i128),
        peak_allocated_bytes: clamp(peak_in_use as i128),
        peak_reserved_bytes: clamp(peak_reserved as i128),
        peak_active_allocations: clamp(peak_live as i128),
        reserved_bytes_total: system_total,
        released_bytes_total: clamp(system_total as i128 - in_use as i128 - cached as i128),
    }
}

/// `torch.cuda.memory_summary()` for the CPU caching allocator: the statistics of
/// [`memory_stats`] in PyTorch's table (Note [CPU memory summary]), followed by one line saying
/// that Peak Usage sums per-thread peaks.
pub fn memory_summary() -> String {
    summary(&memory_stats())
}

fn summary(s: &CpuMemoryStats) -> String {
    use crate::cuda_caching_allocator::{
        summary_count, summary_frame, summary_row, summary_size, Stat, SummaryFormat, SUMMARY_HEADER, SUMMARY_WIDTH,
    };
    let n = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
    let stat = |current, peak, allocated, freed| Stat {
        current: n(current),
        peak: n(peak),
        allocated: n(allocated),
        freed: n(freed),
    };
    let allocated = stat(s.allocated_bytes, s.peak_allocated_bytes, s.allocated_bytes_total, s.freed_bytes_total);
    let reserved = stat(s.reserved_bytes(), s.peak_reserved_bytes, s.reserved_bytes_total, s.released_bytes_total);
    let allocations = stat(s.active_allocations, s.peak_active_allocations, s.allocation_count, s.free_count);
    let rows: [(&str, &Stat, SummaryFormat); 3] = [
        ("Allocated memory", &allocated, summary_size),
        ("Reserved memory", &reserved, summary_size),
        ("Allocations", &allocations, summary_count),
    ];
    let mut lines = vec![
        "=".repeat(SUMMARY_WIDTH),
        format!(" {:16} {:<56} ", "", "PyTorch CPU memory summary"),
        "-".repeat(SUMMARY_WIDTH),
        format!("  {:9} Cache hits: {:<11} | {:6} Cache misses: {:<14}  ", "", s.cache_hits, "", s.cache_misses),
        "=".repeat(SUMMARY_WIDTH),
        SUMMARY_HEADER.to_string(),
    ];
    for (name, st, fmt) in rows {
        lines.push("-".repeat(SUMMARY_WIDTH));
        lines.push(summary_row(name, st, st, fmt));
    }
    lines.push("=".repeat(SUMMARY_WIDTH));
    let mut out = summary_frame(&lines);
    out.push_str(PEAK_NOTE);
    out
}

/// The line under the CPU summary's table.
const PEAK_NOTE: &str = " Peak Usage: sum of per-thread peaks, an upper bound of the true peak.\n";

/// Bounds the bytes kept in the large-block pool (default 8 GiB); blocks beyond it are freed.
pub fn set_max_cached_bytes(n: usize) {
    MAX_CACHED.store(n, Ordering::Relaxed);
}

/// The size class (the rounded size) of a request.
pub fn round_size(n: usize) -> usize {
    if n <= 1024 {
        return n.div_ceil(64).max(1) * 64;
    }
    let pow = usize::BITS - 1 - (n - 1).leading_zeros(); // 2^pow < n <= 2^(pow+1)
    let step = 1usize << (pow - 3);
    n.div_ceil(step) * step
}

/// Blocks of at least this many bytes are aligned to it and backed by transparent huge pages
/// where the system allows (Note [Huge pages for large blocks]).
pub const HUGE_PAGE: usize = 2 << 20;

/// The alignment of a block of class `size`.
fn alignment(size: usize) -> usize {
    if size >= HUGE_PAGE {
        HUGE_PAGE
    } else {
        CPU_ALIGNMENT
    }
}

fn layout(size: usize) -> Layout {
    // Both alignments are powers of two and sizes are bounded by isize::MAX through the checked
    // construction in `system_alloc`.
    Layout::from_size_align(size, alignment(size)).expect("valid layout")
}

fn system_alloc(size: usize) -> Result<NonNull<u8>> {
    let l = Layout::from_size_align(size, alignment(size))
        .map_err(|_| Error::OutOfMemory { device: DeviceType::Cpu, nbytes: size })?;
    // SAFETY: the layout has a non-zero size (classes are at least 64 bytes).
    let p = unsafe { std::alloc::alloc(l) };
    let p = NonNull::new(p).ok_or(Error::OutOfMemory { device: DeviceType::Cpu, nbytes: size })?;
    if size >= HUGE_PAGE {
        advise_huge_pages(p, size);
    }
    Ok(p)
}

/// Asks the kernel to back `[p, p + size)` with transparent huge pages; a refusal is harmless.
#[cfg(target_os = "linux")]
fn advise_huge_pages(p: NonNull<u8>, size: usize) {
    // SAFETY: the range is one live allocation of `size` bytes starting at a 2 MiB boundary (a
    // multiple of the page size, as madvise requires); MADV_HUGEPAGE changes no contents.
    let _ = unsafe { libc::madvise(p.as_ptr().cast(), size, libc::MADV_HUGEPAGE) };
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_p: NonNull<u8>, _size: usize) {}

/// # Safety
/// `p` must come from `system_alloc(size)` and not be used afterwards.
unsafe fn system_free(p: *mut u8, size: usize) {
    // SAFETY: same layout as the allocation, per the contract.
    unsafe { std::alloc::dealloc(p, layout(size)) }
}

/// Index of a small class (sizes from `round_size`, at most SMALL_LIMIT) in the per-thread cache.
fn small_index(size: usize) -> usize {
    if size <= 1024 {
        return size / 64 - 1;
    }
    let pow = (usize::BITS - 1 - (size - 1).leading_zeros()) as usize;
    let sub = size / (1usize << (pow - 3)) - 8;
    16 + (pow - 10) * 8 + (sub - 1)
}

/// Number of small classes.
const SMALL_CLASSES: usize = 64;
const _: () = assert!(SMALL_LIMIT == 1 << 16, "SMALL_CLASSES is computed for 64 KiB");

/// The size of the small class at `index` (inverse of `small_index`).
fn small_size(index: usize) -> usize {
    if index < 16 {
        return (index + 1) * 64;
    }
    let pow = 10 + (index - 16) / 8;
    let sub = (index - 16) % 8 + 1;
    (1usize << pow) + sub * (1usize << (pow - 3))
}

/// The per-thread cache of small blocks, one free list per class.
struct SmallCache {
    classes: Vec<Vec<NonNull<u8>>>,
}

/// What each thread keeps: its counters and its small blocks, behind one thread-local so an
/// allocation or a free reaches both with a single thread-local access.
struct ThreadCache {
    stats: Arc<ThreadStats>,
    small: RefCell<SmallCache>,
}

impl ThreadCache {
    fn new() -> ThreadCache {
        let stats = Arc::new(ThreadStats::default());
        ALL_STATS.lock().unwrap_or_else(|e| e.into_inner()).push(stats.clone());
        ThreadCache { stats, small: RefCell::new(SmallCache { classes: vec![Vec::new(); SMALL_CLASSES] }) }
    }
}

impl Drop for ThreadCache {
    fn drop(&mut self) {
        let stats = &self.stats;
        for (i, blocks) in self.small.get_mut().classes.iter_mut().enumerate() {
            let size = small_size(i);
            for p in blocks.drain(..) {
                ThreadStats::add(&stats.cached, -(size as isize));
                // SAFETY: cached blocks came from system_alloc(size) and are unused.
                unsafe { system_free(p.as_ptr(), size) };
            }
        }
    }
}

thread_local! {
    static CACHE: ThreadCache = ThreadCache::new();
}

/// The shared pool of large free blocks (addresses by class size) and its total bytes.
struct LargePool {
    blocks: HashMap<usize, Vec<usize>>,
    bytes: usize,
}

static LARGE: Mutex<Option<LargePool>> = Mutex::new(None);

/// The caching allocator; registered as the CPU allocator by default.
#[derive(Debug, Default)]
pub struct CachingCpuAllocator;

/// Returns a block to its pool.
///
/// # Safety
/// `data` must come from [`CachingCpuAllocator::allocate`] for `ctx` requested bytes (its class
/// is `round_size(ctx)`), unused after.
unsafe fn caching_free(data: *mut u8, ctx: *mut ()) {
    let nbytes = ctx as usize;
    // SAFETY: the caller's contract.
    unsafe { return_block(data, round_size(nbytes)) };
    if crate::record_function::memory_active() {
        // After the block went back, so the event carries the totals after the free.
        report(data, -(nbytes as i64));
    }
}

/// Puts a block of class `size` back in its pool (or frees it).
///
/// # Safety
/// As [`caching_free`], with `size` the block's class.
#[inline(always)]
unsafe fn return_block(data: *mut u8, size: usize) {
    let Some(p) = NonNull::new(data) else { return };
    if size <= SMALL_LIMIT {
        let kept = CACHE
            .try_with(|c| {
                c.stats.freed(size);
                let mut small = c.small.borrow_mut();
                let v = &mut small.classes[small_index(size)];
                if v.len() < SMALL_BLOCKS_PER_CLASS {
                    v.push(p);
                    ThreadStats::add(&c.stats.cached, size as isize);
                    true
                } else {
                    false
                }
            })
            .unwrap_or(false);
        if !kept {
            // SAFETY: the block came from system_alloc(size) (contract) and is no longer used.
            unsafe { system_free(data, size) };
        }
        return;
    }
    with_stats(|s| s.freed(size));
    let mut g = LARGE.lock().unwrap_or_else(|e| e.into_inner());
    let pool = g.get_or_insert_with(|| LargePool { blocks: HashMap::new(), bytes: 0 });
    if pool.bytes + size <= MAX_CACHED.load(Ordering::Relaxed) {
        pool.blocks.entry(size).or_default().push(data as usize);
        pool.bytes += size;
        with_stats(|s| ThreadStats::add(&s.cached, size as isize));
    } else {
        drop(g);
        // SAFETY: as above.
        unsafe { system_free(data, size) };
    }
}

/// Tells the profiler's observers of an allocation (`bytes > 0`, the requested size, as PyTorch
/// reports it) or a free; totals are the allocator's, in size classes.
#[cold]
fn report(ptr: *mut u8, bytes: i64) {
    let stats = memory_stats();
    crate::record_function::report_memory(crate::record_function::MemoryEvent {
        ptr: ptr as usize,
        bytes,
        total_allocated: stats.allocated_bytes as u64,
        total_reserved: (stats.allocated_bytes + stats.cached_bytes) as u64,
        device: Device::CPU,
    });
}

fn note_alloc(size: usize, hit: bool) {
    with_stats(|s| s.allocated(size, hit));
}

impl Allocator for CachingCpuAllocator {
    fn allocate(&self, nbytes: usize) -> Result<DataPtr> {
        if nbytes == 0 {
            let dangling = NonNull::new(CPU_ALIGNMENT as *mut u8).expect("non-zero");
            // SAFETY: a zero-size block is never dereferenced and has no deleter.
            return Ok(unsafe { DataPtr::from_raw(dangling, std::ptr::null_mut(), None, Device::CPU) });
        }
        let size = round_size(nbytes);
        let limit = LIMIT.load(Ordering::Relaxed);
        if limit != 0 {
            check_limit(size, nbytes, limit)?;
        }
        let cached = if size <= SMALL_LIMIT {
            let hit = CACHE.try_with(|c| {
                let p = c.small.borrow_mut().classes[small_index(size)].pop();
                if p.is_some() {
                    // One thread-local access for the block and the counters.
                    c.stats.allocated(size, true);
                }
                p
            });
            if let Ok(Some(p)) = hit {
                if crate::record_function::memory_active() {
                    report(p.as_ptr(), nbytes as i64);
                }
                // SAFETY: as below: `caching_free` returns the block to the pool of class
                // `round_size(nbytes)` = `size`.
                return Ok(unsafe { DataPtr::from_raw(p, nbytes as *mut (), Some(caching_free), Device::CPU) });
            }
            None
        } else {
            let mut g = LARGE.lock().unwrap_or_else(|e| e.into_inner());
            let p = g.as_mut().and_then(|m| m.blocks.get_mut(&size)).and_then(|v| v.pop());
            if p.is_some() {
                if let Some(pool) = g.as_mut() {
                    pool.bytes -= size;
                }
            }
            p.and_then(|a| NonNull::new(a as *mut u8))
        };
        let (p, hit) = match cached {
            Some(p) => (p, true),
            None => (system_alloc(size)?, false),
        };
        note_alloc(size, hit);
        if crate::record_function::memory_active() {
            report(p.as_ptr(), nbytes as i64);
        }
        // SAFETY: `caching_free` receives the requested size as ctx, and returns the block to
        // the pool of its class `round_size(nbytes)` = `size` (or frees it with that layout); it
        // runs once, when the DataPtr drops.
        Ok(unsafe { DataPtr::from_raw(p, nbytes as *mut (), Some(caching_free), Device::CPU) })
    }
}

/// Frees every cached block: the large pool, and the calling thread's small blocks.
pub fn empty_cache() {
    let pool = LARGE.lock().unwrap_or_else(|e| e.into_inner()).take();
    for (size, v) in pool.map(|p| p.blocks).into_iter().flatten() {
        for a in v {
            with_stats(|s| ThreadStats::add(&s.cached, -(size as isize)));
            // SAFETY: cached blocks came from system_alloc(size) and are unused.
            unsafe { system_free(a as *mut u8, size) };
        }
    }
    let _ = CACHE.try_with(|c| {
        let mut small = c.small.borrow_mut();
        for (i, v) in small.classes.iter_mut().enumerate() {
            let size = small_size(i);
            for p in v.drain(..) {
                ThreadStats::add(&c.stats.cached, -(size as isize));
                // SAFETY: as above.
                unsafe { system_free(p.as_ptr(), size) };
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_bound_the_slack() {
        assert_eq!(round_size(1), 64);
        assert_eq!(round_size(64), 64);
        assert_eq!(round_size(65), 128);
        assert_eq!(round_size(1024), 1024);
        assert_eq!(round_size(1025), 1152);
        for n in [1500usize, 4097, 1 << 20, (1 << 26) + 1, 123_456_789] {
            let r = round_size(n);
            assert!(r >= n && (r - n) * 8 <= n, "{n} -> {r}");
            assert_eq!(round_size(r), r, "classes are fixed points");
        }
    }

    #[test]
    fn small_class_indices_are_dense() {
        let mut seen = [false; SMALL_CLASSES];
        let mut n = 1;
        while n <= SMALL_LIMIT {
            let r = round_size(n);
            let i = small_index(r);
            assert_eq!(small_size(i), r);
            seen[i] = true;
            n = r + 1;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn freed_blocks_are_reused_and_counted() {
        let a = CachingCpuAllocator;
        let p1 = a.allocate(3000).unwrap();
        let addr = p1.as_ptr() as usize;
        assert_eq!(addr % CPU_ALIGNMENT, 0);
        let hits = memory_stats().cache_hits;
        drop(p1);
        let p2 = a.allocate(2900).unwrap();
        assert_eq!(p2.as_ptr() as usize, addr, "same class, same thread: the block comes back");
        let big = a.allocate(3 << 20).unwrap();
        let big_addr = big.as_ptr() as usize;
        drop(big);
        let big2 = a.allocate(3 << 20).unwrap();
        assert_eq!(big2.as_ptr() as usize, big_addr);
        assert!(memory_stats().cache_hits >= hits + 2);
        assert!(memory_stats().allocated_bytes >= round_size(3 << 20) + round_size(2900));
    }

    #[test]
    fn large_blocks_start_on_huge_page_boundaries() {
        let a = CachingCpuAllocator;
        for n in [HUGE_PAGE, 5 << 20, (64 << 20) + 3] {
            let p = a.allocate(n).unwrap();
            assert_eq!(p.as_ptr() as usize % HUGE_PAGE, 0, "{n} bytes");
            // The whole block is writable and keeps what is written.
            // SAFETY: the block holds at least n bytes and nothing else refers to it.
            let s = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), n) };
            s.fill(7);
            assert!(s[n - 1] == 7 && s[0] == 7);
        }
        let small = a.allocate(HUGE_PAGE / 2).unwrap();
        assert_eq!(small.as_ptr() as usize % CPU_ALIGNMENT, 0);
    }

    /// Runs `f` on a new thread: its result, that thread's statistics just before it exits, and
    /// its counters (still readable after the exit).
    fn on_thread<T: Send + 'static>(
        f: impl FnOnce(&CachingCpuAllocator) -> T + Send + 'static,
    ) -> (T, CpuMemoryStats, Arc<ThreadStats>) {
        std::thread::spawn(move || {
            let r = f(&CachingCpuAllocator);
            let stats = CACHE.with(|c| c.stats.clone());
            (r, sum_stats(std::iter::once(&*stats)), stats)
        })
        .join()
        .unwrap()
    }

    /// The statistics of the given threads' counters together.
    fn of(threads: &[&Arc<ThreadStats>]) -> CpuMemoryStats {
        sum_stats(threads.iter().map(|s| &***s))
    }

    #[test]
    fn totals_counts_and_per_thread_peaks() {
        let (small, tiny) = (round_size(3000), round_size(100));
        assert_eq!((small, tiny), (3072, 128));
        let ((), s, counters) = on_thread(|a| {
            drop(a.allocate(3000).unwrap()); // miss, then cached
            let b = a.allocate(2900).unwrap(); // hit: same class
            let c = a.allocate(100).unwrap(); // miss
            let _zero = a.allocate(0).unwrap(); // no block, not counted
            drop((b, c));
        });
        let want = CpuMemoryStats {
            allocated_bytes: 0,
            cached_bytes: small + tiny,
            cache_hits: 1,
            cache_misses: 2,
            allocated_bytes_total: 2 * small + tiny,
            freed_bytes_total: 2 * small + tiny,
            allocation_count: 3,
            free_count: 3,
            active_allocations: 0,
            peak_allocated_bytes: small + tiny,
            peak_reserved_bytes: small + tiny,
            peak_active_allocations: 2,
            reserved_bytes_total: small + tiny,
            released_bytes_total: 0,
        };
        assert_eq!(s, want);
        assert_eq!(s.reserved_bytes(), small + tiny);
        // At exit the thread's small blocks go back to the system; the peaks stay.
        assert_eq!(of(&[&counters]), CpuMemoryStats { cached_bytes: 0, released_bytes_total: small + tiny, ..want });
    }

    #[test]
    fn peak_usage_is_the_sum_of_thread_peaks() {
        // Two threads that each hold 3072 bytes at some point, one after the other: the true peak
        // is 3072, the sum of per-thread peaks 6144 (the documented upper bound).
        let ((), _, a) = on_thread(|a| drop(a.allocate(3000).unwrap()));
        let ((), _, b) = on_thread(|a| drop(a.allocate(3000).unwrap()));
        let both = of(&[&a, &b]);
        assert_eq!((of(&[&a]).peak_allocated_bytes, both.peak_allocated_bytes), (3072, 6144));
        assert_eq!((both.allocated_bytes, both.peak_reserved_bytes, both.peak_active_allocations), (0, 6144, 2));
    }

    #[test]
    fn blocks_freed_on_another_thread_are_counted_once() {
        let (block, _, owner) = on_thread(|a| a.allocate(3000).unwrap());
        let ((), freer, freer_counters) = on_thread(move |_| drop(block));
        // The freeing thread alone freed a block it never allocated: its bytes and live blocks are
        // negative, clamped to 0, and its free is counted.
        assert_eq!((freer.allocated_bytes, freer.active_allocations, freer.allocation_count), (0, 0, 0));
        assert_eq!((freer.free_count, freer.freed_bytes_total, freer.cached_bytes), (1, 3072, 3072));
        // Together: one allocation, one free, nothing held, nothing left cached after both exited.
        let both = of(&[&owner, &freer_counters]);
        assert_eq!((both.allocation_count, both.free_count, both.active_allocations), (1, 1, 0));
        assert_eq!((both.allocated_bytes_total, both.freed_bytes_total, both.allocated_bytes), (3072, 3072, 0));
        assert_eq!((both.cached_bytes, both.reserved_bytes_total, both.released_bytes_total), (0, 3072, 3072));
        assert_eq!((both.peak_allocated_bytes, both.peak_active_allocations), (3072, 1));
    }

    #[test]
    fn memory_stats_sums_the_new_counters() {
        let before = memory_stats();
        let p = CachingCpuAllocator.allocate(5 << 10).unwrap();
        let during = memory_stats();
        assert!(during.allocation_count > before.allocation_count);
        assert!(during.allocated_bytes_total >= before.allocated_bytes_total + round_size(5 << 10));
        assert!(during.peak_allocated_bytes >= round_size(5 << 10), "this thread alone peaked there");
        drop(p);
        assert!(memory_summary().starts_with(&format!("|{}|\n", "=".repeat(75))));
    }

    #[test]
    fn summary_has_pytorchs_layout() {
        // Frame, column header and row format as in PyTorch's `torch.cuda.memory_summary()`
        // (torch/cuda/memory.py, torch 2.15.0); the cells were produced by PyTorch's own
        // `_format_size` / `_format_count` (nested in that function) for these values.
        let (gib, mib, kib) = (1usize << 30, 1usize << 20, 1usize << 10);
        let (allocated, cached, hits, misses) = (3 * gib + 5 * mib, gib, 123_456_789, 4321);
        let total = 5usize << 40;
        let s = CpuMemoryStats {
            allocated_bytes: allocated,
            cached_bytes: cached,
            cache_hits: hits,
            cache_misses: misses,
            allocated_bytes_total: total,
            freed_bytes_total: total - allocated,
            allocation_count: hits + misses,
            free_count: hits + misses - 1500,
            active_allocations: 1500,
            peak_allocated_bytes: 6 * gib,
            peak_reserved_bytes: 7 * gib + 512 * kib,
            peak_active_allocations: 800_000,
            reserved_bytes_total: 20 * gib,
            released_bytes_total: 20 * gib - allocated - cached,
        };
        let want = concat!(
            "|===========================================================================|\n",
            "|                  PyTorch CPU memory summary                               |\n",
            "|---------------------------------------------------------------------------|\n",
            "|            Cache hits: 123456789   |        Cache misses: 4321            |\n",
            "|===========================================================================|\n",
            "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n",
            "|---------------------------------------------------------------------------|\n",
            "| Allocated memory      |   3077 MiB |   6144 MiB |   5120 GiB |   5116 GiB |\n",
            "|---------------------------------------------------------------------------|\n",
            "| Reserved memory       |   4101 MiB |   7168 MiB |  20480 MiB |  16379 MiB |\n",
            "|---------------------------------------------------------------------------|\n",
            "| Allocations           |    1500    |     800 K  |  123461 K  |  123459 K  |\n",
            "|===========================================================================|\n",
            " Peak Usage: sum of per-thread peaks, an upper bound of the true peak.\n",
        );
        assert_eq!(summary(&s), want);
        let zero = summary(&CpuMemoryStats::default());
        assert!(zero.contains("| Allocated memory      |      0 B   |      0 B   |      0 B   |      0 B   |\n"));
        assert!(zero.contains("| Allocations           |       0    |       0    |       0    |       0    |\n"));
    }
}
