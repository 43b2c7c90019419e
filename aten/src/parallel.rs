//! `torch.set_num_threads` / `torch.get_num_threads`: the size of the thread pool the CPU
//! kernels split their work over (rayon's global pool), and [`Dense`], chunked parallel loops
//! over dense tensors for code outside aten (which has no unsafe code of its own).

use c10::{Element, Error, Result};
use rayon::prelude::*;

use crate::Tensor;

/// Elements per chunk handed to one task by [`Dense::run`]: large enough to amortise
/// scheduling, small enough to split a 512×512 weight between two threads.
const CHUNK: usize = 1 << 15;

/// The number of threads the CPU kernels use.
pub fn get_num_threads() -> usize {
    rayon::current_num_threads()
}

/// Sets the number of threads the CPU kernels use. The pool is created once, so this must run
/// before the first parallel operation (as early in `main` as possible); asking again for the
/// size the pool already has is accepted.
pub fn set_num_threads(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::invalid("set_num_threads", "Expected a positive number of threads"));
    }
    match rayon::ThreadPoolBuilder::new().num_threads(n).build_global() {
        Ok(()) => Ok(()),
        Err(_) if rayon::current_num_threads() == n => Ok(()),
        Err(_) => Err(Error::invalid(
            "set_num_threads",
            format!(
                "the CPU thread pool already runs {} threads; call set_num_threads({n}) before the first operation",
                rayon::current_num_threads()
            ),
        )),
    }
}

/// `N` tensors a fused elementwise loop written outside aten may run over (the optimizers'
/// fused updates): dense, on the CPU, of dtype `T`, of one shape, with
/// pairwise disjoint memory.
pub struct Dense<'a, T, const N: usize> {
    tensors: [&'a Tensor; N],
    ptrs: [usize; N],
    len: usize,
    _t: std::marker::PhantomData<T>,
}

impl<'a, T: Element, const N: usize> Dense<'a, T, N> {
    /// The tensors if a fused loop can run over them, `None` otherwise.
    pub fn new(tensors: [&'a Tensor; N]) -> Result<Option<Self>> {
        let first = tensors[0];
        for t in tensors {
            if t.dtype() != T::DTYPE || !t.device().is_cpu() || !t.is_contiguous() || t.sizes() != first.sizes() {
                return Ok(None);
            }
        }
        let len = first.numel() as usize;
        let mut ptrs = [0usize; N];
        for (p, t) in ptrs.iter_mut().zip(tensors) {
            *p = t.typed_data_ptr::<T>()? as usize;
        }
        // Disjoint memory: the loops hold a `&mut` slice of every tensor at once.
        let bytes = len * size_of::<T>();
        for i in 0..N {
            for j in i + 1..N {
                if ptrs[i] < ptrs[j] + bytes && ptrs[j] < ptrs[i] + bytes {
                    return Ok(None);
                }
            }
        }
        Ok(Some(Dense { tensors, ptrs, len, _t: std::marker::PhantomData }))
    }

    /// Runs `kernel` over matching chunks of the tensors (in parallel when large), then bumps
    /// the version counters of the tensors flagged in `written`.
    pub fn run(self, written: [bool; N], kernel: impl Fn([&mut [T]; N]) + Sync) {
        let chunks = self.len.div_ceil(CHUNK);
        let ptrs = self.ptrs;
        let len = self.len;
        let chunk = |c: usize| {
            let start = c * CHUNK;
            let n = CHUNK.min(len - start);
            // SAFETY: every pointer addresses `len` elements of a live contiguous tensor of
            // dtype T (checked in `new`; the tensors are borrowed for 'a); the tensors' memory
            // is pairwise disjoint (checked in `new`) and chunks are disjoint ranges, so no two
            // slices overlap. Like every in-place operator, the loop assumes no other thread
            // touches these tensors while it runs (concurrent writes race in PyTorch too).
            kernel(ptrs.map(|p| unsafe { std::slice::from_raw_parts_mut((p as *mut T).add(start), n) }));
        };
        if chunks > 1 && rayon::current_num_threads() > 1 {
            warm();
            (0..chunks).into_par_iter().for_each(chunk);
        } else {
            (0..chunks).for_each(chunk);
        }
        for (t, w) in self.tensors.iter().zip(written) {
            if w {
                t.bump_version();
            }
        }
    }
}

/// A raw pointer, or a set of them (`SendPtr<*mut T>`, `SendPtr<Ptrs>`), handed to the workers
/// of a parallel loop: the one place aten's kernels assert that raw pointers may cross threads.
///
/// Note [Sharing raw pointers with workers]: raw pointers are neither `Send` nor `Sync`, so a
/// kernel that splits work over rayon wraps its buffers' base pointers in this. Wrapping is
/// safe; what makes it sound is the kernel's obligation, stated at each wrap: the buffers
/// outlive the parallel region (the caller holds the tensors), workers write disjoint elements,
/// and what one worker writes no other reads. Closures call [`SendPtr::get`] (a method, so they
/// capture the whole `Sync` wrapper rather than its raw field, as disjoint closure captures would).
#[derive(Clone, Copy)]
pub(crate) struct SendPtr<P>(pub(crate) P);

// SAFETY: see Note [Sharing raw pointers with workers]; every wrap site states why its workers'
// accesses are disjoint.
unsafe impl<P> Send for SendPtr<P> {}
// SAFETY: as above.
unsafe impl<P> Sync for SendPtr<P> {}

impl<P: Copy> SendPtr<P> {
    /// The pointer(s).
    #[inline]
    pub(crate) fn get(self) -> P {
        self.0
    }
}

// Note [Keeping the pool warm]: rayon's idle workers spin for 32 `yield`s (a few microseconds)
// and then sleep on a futex; waking one costs the next parallel region a context switch, and on
// a virtual machine, whose idle vCPU halted, an exit to the host. On the 2-vCPU Intel Xeon VM
// the CI runs on, a ReLU of 200K floats took 17 µs on two warm threads, 20 µs on one, and
// 46 µs (10 µs after the last parallel region) to 106 µs (after 50 µs or more) on two threads
// that had gone to sleep: every operator of a model that runs serial code between parallel
// regions paid it. PyTorch's OpenMP threads spin for a while after each parallel region
// (libgomp's `GOMP_SPINCOUNT`) before they sleep.
//
// So a parallel region started from a thread outside the pool (the user's thread: where eager
// operators and the interpreter run) first calls [`warm`], which counts the region and, when no
// worker is spinning, spawns one spinner per worker of the global pool. A spinner polls the
// pool for work (`rayon::yield_now`, which runs what it finds: the region's jobs, stolen halves,
// broadcasts) and calls `sched_yield` between polls, so a runnable thread of the process is
// not kept off the core; it ends when no region has started and it has run no work for
// [`KEEP_WARM`], and its worker sleeps as before. Regions started inside the pool (nested
// parallelism, custom pools) do not start spinners: their workers are awake already.

/// How long the workers keep spinning after the last parallel region started: long enough to
/// bridge the serial code between a model's operators, short enough that an idle process
/// stops using its cores at once.
pub const KEEP_WARM: std::time::Duration = std::time::Duration::from_millis(1);

/// Parallel regions started from outside the pool (a counter the spinners watch).
static REGIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Spinners running, or spawned and not yet ended.
static SPINNERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Called before a parallel region (Note [Keeping the pool warm]): keeps the global pool's
/// workers spinning for [`KEEP_WARM`] after it, starting them if none is.
#[inline]
pub(crate) fn warm() {
    use std::sync::atomic::Ordering::Relaxed;
    if rayon::current_thread_index().is_some() {
        return;
    }
    REGIONS.fetch_add(1, Relaxed);
    if SPINNERS.load(Relaxed) == 0 {
        start_spinners();
    }
}

#[cold]
fn start_spinners() {
    use std::sync::atomic::Ordering::{AcqRel, Relaxed};
    let threads = rayon::current_num_threads();
    if threads < 2 || SPINNERS.compare_exchange(0, threads, AcqRel, Relaxed).is_err() {
        return;
    }
    rayon::spawn_broadcast(|_| {
        spin();
        SPINNERS.fetch_sub(1, AcqRel);
    });
}

/// One worker's spinning: runs the pool's work as it comes until [`KEEP_WARM`] passes with no
/// region started and nothing run.
fn spin() {
    use std::sync::atomic::Ordering::Relaxed;
    let mut seen = REGIONS.load(Relaxed);
    let mut since = std::time::Instant::now();
    loop {
        match rayon::yield_now() {
            Some(rayon::Yield::Executed) => since = std::time::Instant::now(),
            Some(rayon::Yield::Idle) => {
                let now = REGIONS.load(Relaxed);
                if now != seen {
                    seen = now;
                    since = std::time::Instant::now();
                } else if since.elapsed() >= KEEP_WARM {
                    return;
                }
                std::thread::yield_now();
            }
            None => return,
        }
    }
}

/// How many workers of the global pool are spinning (Note [Keeping the pool warm]): all of
/// them shortly after a parallel region started from outside the pool, none [`KEEP_WARM`]
/// after the last one.
pub fn spinning_threads() -> usize {
    SPINNERS.load(std::sync::atomic::Ordering::Relaxed)
}

// Note [The caller works too]: a parallel region that rayon runs for a thread outside its pool
// (`par_iter` from the user's thread: where eager operators and the interpreter run) is
// injected into the pool's queue while the caller sleeps on a condition variable until the last
// job ends; waking it again cost about 20 µs per region on the 2-vCPU Xeon VM, and on two
// threads the caller's core did none of the work meanwhile. A residual block's eight regions
// (two convolutions, two batch norms, two ReLUs, an add) lost 0.3 ms of 2 that way. PyTorch's
// OpenMP regions run on the calling thread and its team.
//
// So [`try_for_each_init`] called from outside the pool runs the region itself: the items are
// claimed one at a time from a shared counter by the caller and by `threads - 1` jobs it hands
// to the pool (whose workers spin after a region, Note [Keeping the pool warm]); the caller
// then spins until every claimed item is done. A job that starts after the items ran out
// claims nothing and never touches the region's closures, which is what lets the caller return
// without waiting for it: only the shared counters (kept alive by the job's `Arc`) outlive the
// call. Inside the pool (nested regions, a custom pool's `install`) the region is rayon's
// `par_iter`, as before.

/// The shared state of a region run by the caller and the pool (Note [The caller works too]).
struct Region {
    /// The next item to claim; at or past `n` once they ran out.
    next: std::sync::atomic::AtomicUsize,
    /// Items finished (or ended by a panic).
    done: std::sync::atomic::AtomicUsize,
    /// Whether a worker's item panicked (the caller panics in turn).
    panicked: std::sync::atomic::AtomicBool,
    /// Whether an item returned an error (the items not yet started are skipped).
    failed: std::sync::atomic::AtomicBool,
    n: usize,
}

impl Region {
    /// Claims an item: `Some(i)` while items remain.
    #[inline]
    fn claim(&self) -> Option<usize> {
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (i < self.n).then_some(i)
    }
}

/// Counts a claimed item as done when dropped, also while unwinding from a panic in it, so the
/// caller's wait ends.
struct Finished<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Release);
    }
}

/// Runs `body(&mut state, i)` for every `i` in `0..n` over the CPU threads, each participating
/// thread making its `state` with `init` before its first item (rayon's `try_for_each_init`),
/// the calling thread among them (Note [The caller works too]); the first error is returned
/// once every started item has ended. Items should be coarse (a chunk of a loop): each costs an
/// atomic claim.
#[doc(hidden)]
pub fn try_for_each_init<S, E: Send>(
    n: usize,
    init: impl Fn() -> S + Sync,
    body: impl Fn(&mut S, usize) -> std::result::Result<(), E> + Sync,
) -> std::result::Result<(), E> {
    use std::sync::atomic::Ordering::{Acquire, Relaxed};
    let threads = rayon::current_num_threads();
    if n <= 1 || threads <= 1 {
        let mut state = init();
        return (0..n).try_for_each(|i| body(&mut state, i));
    }
    if rayon::current_thread_index().is_some() {
        return (0..n).into_par_iter().with_max_len(1).try_for_each_init(&init, |s, i| body(s, i));
    }
    warm();
    let error = std::sync::Mutex::new(None);
    let region = std::sync::Arc::new(Region {
        next: std::sync::atomic::AtomicUsize::new(0),
        done: std::sync::atomic::AtomicUsize::new(0),
        panicked: std::sync::atomic::AtomicBool::new(false),
        failed: std::sync::atomic::AtomicBool::new(false),
        n,
    });
    // The participant loop: runs claimed item `first`, then claims and runs more.
    let work = {
        let (region, error, init, body) = (&*region, &error, &init, &body);
        move |first: usize| {
            let mut state = None;
            let mut i = first;
            loop {
                let done = Finished(&region.done);
                // After an error the remaining items are claimed and counted without running:
                // the caller waits for every claimed item, so claims must stay exact.
                if !region.failed.load(Relaxed) {
                    let s = state.get_or_insert_with(init);
                    if let Err(e) = body(s, i) {
                        error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                        region.failed.store(true, Relaxed);
                    }
                }
                drop(done);
                match region.claim() {
                    Some(j) => i = j,
                    None => return,
                }
            }
        }
    };
    let work_dyn: &(dyn Fn(usize) + Sync) = &work;
    // SAFETY: the lifetime is erased so that jobs of the pool can hold the pointer; a job calls
    // it only after claiming an item, which the caller then waits for (below, also while
    // unwinding) before this frame, and `work` with it, goes away.
    let erased =
        SendPtr(unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync), &'static (dyn Fn(usize) + Sync)>(work_dyn) }
            as *const (dyn Fn(usize) + Sync));
    for _ in 1..threads.min(n) {
        let region = region.clone();
        rayon::spawn(move || {
            if let Some(i) = region.claim() {
                // SAFETY: `i` was claimed, so the caller is still waiting for it (above).
                let work = unsafe { &*erased.get() };
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(i))).is_err() {
                    region.panicked.store(true, Relaxed);
                }
            }
        });
    }
    /// Waits, also while unwinding, until every claimed item has finished.
    struct Wait<'a>(&'a Region);
    impl Drop for Wait<'_> {
        fn drop(&mut self) {
            let claimed = self.0.next.swap(usize::MAX / 2, Relaxed).min(self.0.n);
            let mut spins = 0u32;
            while self.0.done.load(Acquire) < claimed {
                spins = spins.saturating_add(1);
                if spins < 1 << 12 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
    }
    {
        let _wait = Wait(&region);
        if let Some(i) = region.claim() {
            work(i);
        }
    }
    if region.panicked.load(Relaxed) {
        panic!("a parallel region's item panicked on a worker thread");
    }
    match error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// [`try_for_each_init`] without state or errors: `body(i)` for every `i` in `0..n`.
#[doc(hidden)]
pub fn for_each(n: usize, body: impl Fn(usize) + Sync) {
    let r: std::result::Result<(), std::convert::Infallible> = try_for_each_init(
        n,
        || (),
        |_, i| {
            body(i);
            Ok(())
        },
    );
    match r {
        Ok(()) => {}
        Err(never) => match never {},
    }
}

/// `body(i, chunk)` for each `chunk`-element piece of `data` (the last one shorter), in tasks of
/// several pieces run by [`for_each`] (Note [The caller works too]).
#[doc(hidden)]
pub fn for_each_chunk_mut<T: Send>(data: &mut [T], chunk: usize, body: impl Fn(usize, &mut [T]) + Sync) {
    let (len, chunk) = (data.len(), chunk.max(1));
    let count = len.div_ceil(chunk);
    let per = count.div_ceil(count.min(rayon::current_num_threads() * 4).max(1)).max(1);
    let base = SendPtr(data.as_mut_ptr());
    for_each(count.div_ceil(per), |t| {
        for i in t * per..((t + 1) * per).min(count) {
            let start = i * chunk;
            // SAFETY: pieces are disjoint ranges inside `data`, which is borrowed mutably for the
            // whole call, and each piece is handed to one call of `body` only.
            let piece = unsafe { std::slice::from_raw_parts_mut(base.get().add(start), chunk.min(len - start)) };
            body(i, piece);
        }
    });
}
