// cuda_cpu_rt.cpp: the runtime of the CUDA CPU emulator (the kernel-side header is cuda_cpu.h).
//
// Execution model
// - A launch's blocks are spread over worker OS threads. The launching thread is worker 0; helpers come
//   from a process-wide pool and claim block indices from the launch's atomic counter, in increasing order.
//   Several host threads may launch at the same time: each launch has its own state, and helpers serve
//   whichever launch is open.
// - Inside a block every CUDA thread is a fiber with its own stack. Switching is a small assembly routine
//   on x86-64 (callee-saved registers and rsp) or swapcontext elsewhere and under -DCUDA_EMU_UCONTEXT.
// - Scheduling is warp-granular: a warp runs until every lane waits at __syncthreads or has exited (or a
//   lane calls __nanosleep); then the next warp runs. A lane that blocks hands control directly to the next
//   runnable lane of its warp. Letting one warp run ahead of the others is what exposes missing barriers.
//   The order of warps and lanes is fwd, rev or rand[:seed] (CUDA_EMU_SCHED or cuda_emu_set_schedule).
// - Execution contexts (stacks) are separate from CUDA threads: a thread gets a context when it first runs,
//   and when it exits, its context goes to the next lane if that lane has not started yet. Kernels without
//   barriers or collectives therefore run a whole warp on one hot stack, without switches.
// - Warp collectives: a lane records its operation and waits; the last lane of the mask to arrive computes
//   every lane's result at once, which gives CUDA's semantics for widths, partial masks and out-of-range
//   lanes. Misuse (exited lanes, mismatched collectives, divergent barriers, deadlocks, failed asserts)
//   fails the launch with a message naming the block and thread.

#include "cuda_cpu.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#if !defined(__x86_64__) || defined(CUDA_EMU_UCONTEXT)
#define CUDA_EMU_USE_UCONTEXT 1
#include <ucontext.h>
#else
#define CUDA_EMU_USE_UCONTEXT 0
#endif

#if defined(__SANITIZE_ADDRESS__)
#define CUDA_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUDA_EMU_ASAN 1
#endif
#endif
#ifndef CUDA_EMU_ASAN
#define CUDA_EMU_ASAN 0
#endif
#if CUDA_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace cuda_emu {
namespace detail {

__thread uint3 tl_thread_idx CUDA_EMU_TLS;
__thread uint3 tl_block_idx CUDA_EMU_TLS;
__thread dim3 tl_block_dim CUDA_EMU_TLS;
__thread dim3 tl_grid_dim CUDA_EMU_TLS;
__thread unsigned char* tl_dyn_smem CUDA_EMU_TLS;

namespace {

constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxWarps = kMaxThreadsPerBlock / 32;
constexpr unsigned kMaxDynSmem = 227 * 1024;  // opt-in maximum of sm_90
constexpr unsigned kDefaultStackKb = 64;

// ------------------------------------------------------------------------------------------------
// Configuration: environment variables, overridden process-wide by the C API
// ------------------------------------------------------------------------------------------------

enum class Order { kFwd, kRev, kRand };

struct Schedule {
    Order order = Order::kFwd;
    std::uint64_t seed = 0;
};

// "rand" without a seed uses one random seed per process; messages print it as rand:SEED to reproduce.
std::uint64_t process_seed() {
    static const std::uint64_t seed = [] {
        std::random_device rd;
        return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
    }();
    return seed;
}

bool parse_schedule(const char* s, Schedule* out) {
    if (std::strcmp(s, "fwd") == 0) {
        *out = Schedule{Order::kFwd, 0};
    } else if (std::strcmp(s, "rev") == 0) {
        *out = Schedule{Order::kRev, 0};
    } else if (std::strcmp(s, "rand") == 0) {
        *out = Schedule{Order::kRand, process_seed()};
    } else if (std::strncmp(s, "rand:", 5) == 0) {
        const char* digits = s + 5;
        if (*digits < '0' || *digits > '9') return false;
        errno = 0;
        char* end = nullptr;
        const unsigned long long seed = std::strtoull(digits, &end, 10);
        if (errno != 0 || *end != '\0') return false;
        *out = Schedule{Order::kRand, seed};
    } else {
        return false;
    }
    return true;
}

std::string schedule_name(const Schedule& s) {
    switch (s.order) {
        case Order::kFwd:
            return "fwd";
        case Order::kRev:
            return "rev";
        case Order::kRand:
            break;
    }
    return "rand:" + std::to_string(s.seed);
}

// Parses a decimal integer in [lo, hi]; false for anything else.
bool parse_uint(const char* s, unsigned long lo, unsigned long hi, unsigned long* out) {
    if (*s < '0' || *s > '9') return false;
    errno = 0;
    char* end = nullptr;
    const unsigned long v = std::strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
    *out = v;
    return true;
}

unsigned hardware_cores() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return static_cast<unsigned>(n);
    }
    const unsigned n = std::thread::hardware_concurrency();
    return n > 0 ? n : 1;
}

// Read once; a bad value makes every launch fail with a message rather than silently using a default.
struct EnvConfig {
    Schedule schedule;
    unsigned workers = 1;
    std::size_t stack_bytes = kDefaultStackKb * 1024;
    std::string error;
};

const EnvConfig& env_config() {
    static const EnvConfig config = [] {
        EnvConfig c;
        c.workers = hardware_cores();
        if (const char* s = std::getenv("CUDA_EMU_SCHED")) {
            if (!parse_schedule(s, &c.schedule)) {
                c.error = std::string("CUDA_EMU_SCHED='") + s + "' is not fwd, rev, rand or rand:SEED";
            }
        }
        unsigned long v = 0;
        if (const char* s = std::getenv("CUDA_EMU_WORKERS")) {
            if (parse_uint(s, 1, 1024, &v)) {
                c.workers = static_cast<unsigned>(v);
            } else {
                c.error = std::string("CUDA_EMU_WORKERS='") + s + "' is not an integer in [1, 1024]";
            }
        }
        if (const char* s = std::getenv("CUDA_EMU_STACK_KB")) {
            if (parse_uint(s, 16, 1024 * 1024, &v)) {
                c.stack_bytes = v * 1024;
            } else {
                c.error = std::string("CUDA_EMU_STACK_KB='") + s + "' is not an integer in [16, 1048576]";
            }
        }
        return c;
    }();
    return config;
}

std::mutex g_settings_mu;
bool g_schedule_overridden = false;  // guarded by g_settings_mu
Schedule g_schedule_override;        // guarded by g_settings_mu
std::atomic<unsigned> g_workers_override{0};
std::atomic<unsigned long long> g_launch_count{0};

Schedule current_schedule() {
    std::lock_guard<std::mutex> lock(g_settings_mu);
    return g_schedule_overridden ? g_schedule_override : env_config().schedule;
}

unsigned current_workers() {
    const unsigned n = g_workers_override.load(std::memory_order_relaxed);
    return n > 0 ? n : env_config().workers;
}

thread_local std::string tl_last_error;

// ------------------------------------------------------------------------------------------------
// Execution contexts
// ------------------------------------------------------------------------------------------------

struct Ctx {
#if CUDA_EMU_USE_UCONTEXT
    ucontext_t uc;
#else
    void* sp = nullptr;  // saved stack pointer; the callee-saved registers are pushed below it
#endif
    char* map = nullptr;  // whole mapping, guard page first; null for an OS thread's own stack
    std::size_t map_size = 0;
    char* stack_lo = nullptr;  // usable stack [stack_lo, stack_lo + stack_size), for the sanitizer
    std::size_t stack_size = 0;
    char* top = nullptr;  // where a fresh fiber's stack starts, a little below the end (see new_fiber_context)
#if CUDA_EMU_ASAN
    void* fake_stack = nullptr;  // AddressSanitizer's fake stack of this context while it is switched out
#endif

    Ctx() = default;
    Ctx(const Ctx&) = delete;
    Ctx& operator=(const Ctx&) = delete;
    ~Ctx() {
        if (map != nullptr) munmap(map, map_size);
    }
};

#if !CUDA_EMU_USE_UCONTEXT
// Saves the callee-saved registers and rsp of the running context in *save_sp and resumes the context whose
// stack pointer is load_sp. MXCSR and the x87 control word are deliberately not switched (that was most of
// the cost): kernels must not change floating-point modes.
extern "C" void cuda_emu_switch_stack(void** save_sp, void* load_sp);
asm(R"(
    .text
    .p2align 4
    .globl cuda_emu_switch_stack
    .hidden cuda_emu_switch_stack
    .type cuda_emu_switch_stack, @function
cuda_emu_switch_stack:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size cuda_emu_switch_stack, .-cuda_emu_switch_stack
)");
#endif

[[noreturn]] void fiber_main();

// Makes `c` start fiber_main when it is next switched to.
void init_fresh_context(Ctx* c) {
#if CUDA_EMU_ASAN
    // A pooled stack keeps the poison of the frames the previous fiber left on it (ASan poisons a
    // frame's redzones and does not see the switch away); the new fiber starts from a clean stack.
    ASAN_UNPOISON_MEMORY_REGION(c->stack_lo, static_cast<std::size_t>(c->top - c->stack_lo));
#endif
#if CUDA_EMU_USE_UCONTEXT
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = c->stack_lo;
    c->uc.uc_stack.ss_size = static_cast<std::size_t>(c->top - c->stack_lo);
    c->uc.uc_link = nullptr;
    makecontext(&c->uc, fiber_main, 0);
#else
    // Frame popped by cuda_emu_switch_stack: six zeroed registers, then the return address fiber_main. The
    // stack top is 64-byte aligned, so after the `ret` rsp is 8 mod 16, as on entry to a called function. The
    // last slot is fiber_main's own (never used) return address.
    void** sp = reinterpret_cast<void**>(c->top) - 8;
    for (int i = 0; i < 6; ++i) sp[i] = nullptr;
    sp[6] = reinterpret_cast<void*>(&fiber_main);
    sp[7] = nullptr;
    c->sp = sp;
#endif
}

// A context with `stack_bytes` of stack for the fiber, above a guard page. `ordinal` numbers the worker's
// contexts: the stacks are page aligned and all the same size, so their tops would all fall into the same
// few cache sets, and switching between hundreds of fibers (a block waiting at a barrier) would miss the
// cache on every switch. Each top is therefore moved down by a different multiple of 64 bytes, within one
// extra page.
std::unique_ptr<Ctx> new_fiber_context(std::size_t stack_bytes, std::size_t ordinal) {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t usable = (stack_bytes + page - 1) / page * page + page;
    const std::size_t size = usable + page;
    // MAP_NORESERVE: only the pages a fiber touches are committed, usually one or two.
    void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                   -1, 0);
    if (m == MAP_FAILED) return nullptr;
    std::unique_ptr<Ctx> c(new Ctx());
    c->map = static_cast<char*>(m);
    c->map_size = size;
    if (mprotect(m, page, PROT_NONE) != 0) return nullptr;  // guard page below the stack
    c->stack_lo = c->map + page;
    c->stack_size = usable;
    c->top = c->stack_lo + usable - ordinal % (page / 64) * 64;
    return c;
}

// ------------------------------------------------------------------------------------------------
// Launch, worker and block state
// ------------------------------------------------------------------------------------------------

struct Launch {
    LaunchDesc desc;
    const char* name = "<kernel>";
    Schedule schedule;
    std::uint64_t nblocks = 0;
    std::atomic<std::uint64_t> next_block{0};
    std::atomic<bool> abort{false};  // set by the first error: no further blocks are claimed
    unsigned helpers_wanted = 0;     // guarded by the pool mutex
    unsigned helpers_joined = 0;     // guarded by the pool mutex
    unsigned helpers_active = 0;     // guarded by the pool mutex

    // The error of the lowest failing block is kept, so the message does not depend on the worker count.
    std::mutex error_mu;
    std::uint64_t error_block = std::numeric_limits<std::uint64_t>::max();
    int error_code = CUDA_EMU_OK;
    std::string error;
};

struct Warp {
    std::uint32_t exists = 0;      // lanes that exist (a partial last warp has fewer than 32)
    std::uint32_t runnable = 0;    // lanes that can run now (also the ones not started yet)
    std::uint32_t exited = 0;      // lanes whose thread returned
    std::uint32_t waiting = 0;     // lanes waiting in a warp collective
    std::uint32_t at_barrier = 0;  // lanes waiting at __syncthreads
    unsigned last_lane = 0;        // lane that last handed control to the scheduler; the next pick follows it
};

struct Thread {
    Ctx* ctx = nullptr;  // null until the thread first runs and after it exits
    uint3 idx;
    unsigned tid = 0;  // linear index in the block: lane = tid % 32, warp = tid / 32
    // The collective this lane waits in, and its result once the last lane has arrived.
    int op = 0;
    std::uint32_t mask = 0;
    int param = 0;
    int width = 0;
    std::uint64_t value = 0;
    std::uint64_t result = 0;
};

struct Worker {
    Ctx sched;  // the OS thread's own stack, which runs the block scheduler
    std::size_t stack_bytes = 0;
    std::vector<std::unique_ptr<Ctx>> contexts;  // every fiber context this worker made
    std::vector<Ctx*> free_contexts;             // reusable ones, most recently used last
    Ctx* release_after_switch = nullptr;         // context of an exited thread, freed once off its stack

    unsigned char* dyn_smem = nullptr;  // kMaxDynSmem bytes, page aligned
    std::size_t dyn_smem_size = 0;

    std::vector<Thread> threads;
    Warp warps[kMaxWarps];
    Thread* cur = nullptr;  // the running CUDA thread; null on the scheduler

    // The block being run.
    Launch* launch = nullptr;
    std::uint64_t block = 0;
    unsigned nthreads = 0;
    unsigned nwarps = 0;
    unsigned exited = 0;
    unsigned bar_waiters = 0;
    unsigned bar_count = 0;     // predicates that were true among the current barrier's arrivals
    unsigned bar_released = 0;  // count of the barrier released last, returned by __syncthreads_count
    bool failed = false;
    Order order = Order::kFwd;
    std::uint64_t rng = 0;

    Worker() : threads(kMaxThreadsPerBlock) {}
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;
    ~Worker();

    std::uint64_t next_random() {  // splitmix64
        std::uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
};

__thread Worker* tl_worker CUDA_EMU_TLS;
thread_local std::unique_ptr<Worker> tl_worker_owner;  // frees the worker's stacks when its thread ends

Worker::~Worker() {
    if (dyn_smem != nullptr) munmap(dyn_smem, dyn_smem_size);
    tl_worker = nullptr;
}

// Returns the calling thread's worker, creating it on first use; null if its shared-memory buffer cannot
// be mapped.
Worker* this_worker() {
    Worker* w = tl_worker;
    if (w != nullptr) return w;
    std::unique_ptr<Worker> owned(new Worker());
    owned->stack_bytes = env_config().stack_bytes;
    owned->dyn_smem_size = kMaxDynSmem;
    void* m = mmap(nullptr, owned->dyn_smem_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) return nullptr;
    owned->dyn_smem = static_cast<unsigned char*>(m);
#if CUDA_EMU_ASAN
    // The scheduler runs on the OS thread's stack; the sanitizer needs its bounds to switch back to it.
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void* lo = nullptr;
        std::size_t size = 0;
        pthread_attr_getstack(&attr, &lo, &size);
        owned->sched.stack_lo = static_cast<char*>(lo);
        owned->sched.stack_size = size;
        pthread_attr_destroy(&attr);
    }
#endif
    w = owned.get();
    tl_worker_owner = std::move(owned);
    tl_worker = w;
    return w;
}

Ctx* acquire_context(Worker& w) {
    if (!w.free_contexts.empty()) {
        Ctx* c = w.free_contexts.back();
        w.free_contexts.pop_back();
        return c;
    }
    std::unique_ptr<Ctx> c = new_fiber_context(w.stack_bytes, w.contexts.size());
    if (!c) return nullptr;
    w.contexts.push_back(std::move(c));
    return w.contexts.back().get();
}

void release_context(Worker& w, Ctx* c) {
#if CUDA_EMU_ASAN
    // A context may be abandoned mid-kernel (failed launch) or left inside runtime frames; clear the
    // sanitizer's stale redzones before the stack is reused.
    __asan_unpoison_memory_region(c->stack_lo, c->stack_size);
#endif
    w.free_contexts.push_back(c);
}

// ------------------------------------------------------------------------------------------------
// Switching
// ------------------------------------------------------------------------------------------------

// The switching path is kept small and inlined into barrier() and warp_collective(): with hundreds of
// fibers waiting at a barrier, every byte a fiber keeps on its stack while suspended is a cache miss later.
#define CUDA_EMU_HOT inline __attribute__((always_inline))
#define CUDA_EMU_COLD __attribute__((noinline, cold))

// Frees the context of a thread that exited just before the switch that resumed the caller.
CUDA_EMU_COLD void release_pending_context(Worker& w) {
    release_context(w, w.release_after_switch);
    w.release_after_switch = nullptr;
}

// Runs right after a context resumes.
CUDA_EMU_HOT void after_switch(Worker& w) {
    if (__builtin_expect(w.release_after_switch != nullptr, 0)) release_pending_context(w);
}

// Leaves `from` for `to`. `from_dies` says `from` will never be resumed (its thread exited or failed).
CUDA_EMU_HOT void switch_context(Worker& w, Ctx* from, Ctx* to, bool from_dies) {
#if CUDA_EMU_ASAN
    __sanitizer_start_switch_fiber(from_dies ? nullptr : &from->fake_stack, to->stack_lo, to->stack_size);
#else
    (void)from_dies;
#endif
#if CUDA_EMU_USE_UCONTEXT
    swapcontext(&from->uc, &to->uc);
#else
    cuda_emu_switch_stack(&from->sp, to->sp);
#endif
    // Resumed.
#if CUDA_EMU_ASAN
    __sanitizer_finish_switch_fiber(from->fake_stack, nullptr, nullptr);
#endif
    after_switch(w);
}

// Gives `t`, which has not run yet, a fresh context. False if no stack could be allocated.
CUDA_EMU_COLD bool start_context(Worker& w, Thread* t) {
    Ctx* c = acquire_context(w);
    if (c == nullptr) return false;
    init_fresh_context(c);
    t->ctx = c;
    return true;
}

// Makes `t` the running thread and switches to it, giving it a context if it has not started. False if no
// stack could be allocated (nothing happened then).
CUDA_EMU_HOT bool switch_to_thread(Worker& w, Ctx* from, Thread* t, bool from_dies) {
    if (__builtin_expect(t->ctx == nullptr, 0) && !start_context(w, t)) return false;
    w.cur = t;
    tl_thread_idx = t->idx;
    switch_context(w, from, t->ctx, from_dies);
    return true;
}

CUDA_EMU_HOT void switch_to_scheduler(Worker& w, Ctx* from, unsigned lane, bool from_dies) {
    w.warps[w.cur->tid / 32].last_lane = lane;
    w.cur = nullptr;
    switch_context(w, from, &w.sched, from_dies);
}

// Next lane of warp `wi` to run after lane `after`, among the runnable ones (at least one): cyclically
// upwards (fwd), downwards (rev) or at random.
CUDA_EMU_HOT Thread* pick_lane(Worker& w, unsigned wi, unsigned after) {
    std::uint32_t r = w.warps[wi].runnable;
    unsigned lane = 0;
    switch (w.order) {
        case Order::kFwd: {
            const std::uint32_t above = r & ~((2u << after) - 1u);  // 2u << 31 wraps to 0: none above 31
            lane = static_cast<unsigned>(__builtin_ctz(above != 0 ? above : r));
            break;
        }
        case Order::kRev: {
            const std::uint32_t below = r & ((1u << after) - 1u);
            lane = 31u - static_cast<unsigned>(__builtin_clz(below != 0 ? below : r));
            break;
        }
        case Order::kRand: {
            const unsigned n = static_cast<unsigned>(__builtin_popcount(r));
            for (std::uint64_t k = w.next_random() % n; k > 0; --k) r &= r - 1;  // drop the k lowest lanes
            lane = static_cast<unsigned>(__builtin_ctz(r));
            break;
        }
    }
    return &w.threads[wi * 32 + lane];
}

// ------------------------------------------------------------------------------------------------
// Errors
// ------------------------------------------------------------------------------------------------

// Records an error of the current block at thread `at` (null: the block as a whole) and stops the launch
// from claiming further blocks.
void record_error(Worker& w, int code, const Thread* at, const char* what) {
    Launch& l = *w.launch;
    const uint3 b = tl_block_idx;
    std::string msg = std::string("kernel '") + l.name + "': " + what + " [block (" + std::to_string(b.x) + "," +
                      std::to_string(b.y) + "," + std::to_string(b.z) + ")";
    if (at != nullptr) {
        msg += " thread (" + std::to_string(at->idx.x) + "," + std::to_string(at->idx.y) + "," +
               std::to_string(at->idx.z) + ")";
    }
    msg += "] (schedule " + schedule_name(l.schedule) + ")";
    {
        std::lock_guard<std::mutex> lock(l.error_mu);
        if (w.block < l.error_block) {
            l.error_block = w.block;
            l.error_code = code;
            l.error = std::move(msg);
        }
    }
    l.abort.store(true, std::memory_order_relaxed);
    w.failed = true;
}

// Fails the block from inside a CUDA thread and abandons the thread: its stack is reclaimed when the
// scheduler ends the block. The message is formatted into a local buffer because no destructor of this
// frame will ever run.
[[noreturn]] __attribute__((format(printf, 4, 5))) void fail_thread(Worker& w, int code, const Thread* at,
                                                                    const char* fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    record_error(w, code, at, what);
    Thread* t = w.cur;
    switch_to_scheduler(w, t->ctx, t->tid % 32, true);
    __builtin_unreachable();
}

CUDA_EMU_COLD [[noreturn]] void called_outside_kernel(const char* what) {
    std::fprintf(stderr, "cuda_emu: %s called outside a kernel launch\n", what);
    std::abort();
}

// The running CUDA thread's worker. Device functions called outside a kernel have nothing to act on.
CUDA_EMU_HOT Worker& running_worker(const char* what) {
    Worker* w = tl_worker;
    if (__builtin_expect(w == nullptr || w->cur == nullptr, 0)) called_outside_kernel(what);
    return *w;
}

const char* const kOpNames[] = {
    "__shfl_sync",       "__shfl_up_sync",    "__shfl_down_sync",  "__shfl_xor_sync",   "__ballot_sync",
    "__any_sync",        "__all_sync",        "__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync",
    "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync", "__reduce_or_sync",  "__reduce_xor_sync",
    "__match_any_sync",  "__match_all_sync",  "__syncwarp",
};
static_assert(sizeof(kOpNames) / sizeof(kOpNames[0]) == kSyncWarp + 1, "a name for every collective");

// ------------------------------------------------------------------------------------------------
// Blocking and exiting
// ------------------------------------------------------------------------------------------------

// The running thread has just stopped being runnable: hand over to the next runnable lane of its warp, or
// to the scheduler if there is none. Returns when someone resumes the thread.
CUDA_EMU_HOT void block_running_thread(Worker& w) {
    Thread* t = w.cur;
    const unsigned wi = t->tid / 32;
    if (w.warps[wi].runnable != 0) {
        if (!switch_to_thread(w, t->ctx, pick_lane(w, wi, t->tid % 32), false)) {
            fail_thread(w, CUDA_EMU_ERROR_RESOURCE, t, "cannot allocate a fiber stack");
        }
    } else {
        switch_to_scheduler(w, t->ctx, t->tid % 32, false);
    }
}

// The running thread's kernel function returned. Returns only if the thread's context continues with the
// next lane of the warp, which had not started yet (then w.cur is that lane).
void exit_running_thread(Worker& w) {
    Thread* t = w.cur;
    const unsigned wi = t->tid / 32;
    const unsigned lane = t->tid % 32;
    const std::uint32_t bit = 1u << lane;
    Warp& wp = w.warps[wi];
    wp.runnable &= ~bit;
    wp.exited |= bit;
    ++w.exited;
    for (std::uint32_t m = wp.waiting; m != 0; m &= m - 1) {
        const Thread& o = w.threads[wi * 32 + static_cast<unsigned>(__builtin_ctz(m))];
        if (o.mask & bit) {
            fail_thread(w, CUDA_EMU_ERROR_KERNEL, t,
                        "a thread exited while lane %u of its warp waits for it in %s (mask 0x%08x)",
                        static_cast<unsigned>(__builtin_ctz(m)), kOpNames[o.op], o.mask);
        }
    }
    if (w.bar_waiters != 0) {
        fail_thread(w, CUDA_EMU_ERROR_KERNEL, t,
                    "a thread exited while %u thread(s) wait at __syncthreads (divergent barrier, UB)",
                    w.bar_waiters);
    }
    Ctx* c = t->ctx;
    t->ctx = nullptr;
    if (wp.runnable == 0) {
        w.release_after_switch = c;
        switch_to_scheduler(w, c, lane, true);
        __builtin_unreachable();
    }
    Thread* next = pick_lane(w, wi, lane);
    if (next->ctx == nullptr) {
        next->ctx = c;
        w.cur = next;
        tl_thread_idx = next->idx;
        return;
    }
    w.release_after_switch = c;
    switch_to_thread(w, c, next, true);  // `next` has a context, so this cannot fail
    __builtin_unreachable();
}

// Entry of every fiber context: runs CUDA threads one after another on this stack, for as long as
// exit_running_thread hands it the next lane; never returns.
[[noreturn]] void fiber_main() {
#if CUDA_EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
    Worker& w = *tl_worker;
    after_switch(w);
    for (;;) {
        w.launch->desc.thread_main(w.launch->desc.arg);
        exit_running_thread(w);
    }
}

// ------------------------------------------------------------------------------------------------
// Warp collectives
// ------------------------------------------------------------------------------------------------

// True if every lane of `eff` waits in the collective that `t` has just entered (same operation and mask).
// Lanes of the mask may still wait in an earlier collective of their own: the group then completes when
// they arrive.
bool group_arrived(const Worker& w, const Thread* t, unsigned wi, std::uint32_t eff) {
    if ((w.warps[wi].waiting & eff) != eff) return false;
    const Thread* lanes = &w.threads[wi * 32];
    for (std::uint32_t m = eff; m != 0; m &= m - 1) {
        const Thread& o = lanes[__builtin_ctz(m)];
        if (o.op != t->op || o.mask != t->mask) return false;
    }
    return true;
}

// Every lane of `eff` waits in the collective of `t`, the last one to arrive, which is running: compute each
// lane's result and make the lanes runnable.
__attribute__((noinline)) void complete_collective(Worker& w, Thread* t, unsigned wi, std::uint32_t eff) {
    Warp& wp = w.warps[wi];
    Thread* lanes = &w.threads[wi * 32];
    const int op = t->op;
    switch (op) {
        case kShflIdx:
        case kShflUp:
        case kShflDown:
        case kShflXor:
            // PTX shfl.sync: the width becomes a segment mask; offsets and lanes use their low 5 bits. A
            // source outside the segment (up/down) yields the lane's own value; xor may read lower segments.
            for (std::uint32_t m = eff; m != 0; m &= m - 1) {
                const unsigned i = static_cast<unsigned>(__builtin_ctz(m));
                Thread& o = lanes[i];
                const unsigned seg = static_cast<unsigned>(32 - o.width) & 31u;
                const unsigned b = static_cast<unsigned>(o.param) & 31u;
                const unsigned min_lane = i & seg;
                const unsigned max_lane = min_lane | (31u & ~seg);
                unsigned j = i;
                switch (op) {
                    case kShflIdx:
                        j = min_lane | (b & ~seg);
                        break;
                    case kShflUp:
                        j = (i >= min_lane + b) ? i - b : i;
                        break;
                    case kShflDown:
                        j = (i + b <= max_lane) ? i + b : i;
                        break;
                    default:
                        j = ((i ^ b) <= max_lane) ? (i ^ b) : i;
                        break;
                }
                if (j == i) {
                    o.result = o.value;
                } else if (!(wp.exists >> j & 1u)) {
                    // A lane past the end of a partial warp: undefined on the GPU; all ones (NaN for floats)
                    // makes a use of it visible.
                    o.result = ~std::uint64_t{0};
                } else if (!(eff >> j & 1u)) {
                    fail_thread(w, CUDA_EMU_ERROR_KERNEL, &o,
                                "lane %u reads lane %u in %s, which is not in mask 0x%08x", i, j, kOpNames[op],
                                t->mask);
                } else {
                    o.result = lanes[j].value;
                }
            }
            break;
        case kBallot:
        case kAny:
        case kAll: {
            std::uint32_t ballot = 0;
            for (std::uint32_t m = eff; m != 0; m &= m - 1) {
                const unsigned i = static_cast<unsigned>(__builtin_ctz(m));
                if (lanes[i].value != 0) ballot |= 1u << i;
            }
            const std::uint64_t r = op == kBallot ? ballot : op == kAny ? ballot != 0 : ballot == eff;
            for (std::uint32_t m = eff; m != 0; m &= m - 1) lanes[__builtin_ctz(m)].result = r;
            break;
        }
        case kReduceAdd:
        case kReduceMinU:
        case kReduceMaxU:
        case kReduceMinS:
        case kReduceMaxS:
        case kReduceAnd:
        case kReduceOr:
        case kReduceXor: {
            std::uint32_t acc = static_cast<std::uint32_t>(lanes[__builtin_ctz(eff)].value);
            for (std::uint32_t m = eff & (eff - 1); m != 0; m &= m - 1) {
                const std::uint32_t v = static_cast<std::uint32_t>(lanes[__builtin_ctz(m)].value);
                switch (op) {
                    case kReduceAdd:
                        acc += v;
                        break;
                    case kReduceMinU:
                        acc = std::min(acc, v);
                        break;
                    case kReduceMaxU:
                        acc = std::max(acc, v);
                        break;
                    case kReduceMinS:
                        acc = static_cast<std::uint32_t>(
                            std::min(static_cast<std::int32_t>(acc), static_cast<std::int32_t>(v)));
                        break;
                    case kReduceMaxS:
                        acc = static_cast<std::uint32_t>(
                            std::max(static_cast<std::int32_t>(acc), static_cast<std::int32_t>(v)));
                        break;
                    case kReduceAnd:
                        acc &= v;
                        break;
                    case kReduceOr:
                        acc |= v;
                        break;
                    default:
                        acc ^= v;
                        break;
                }
            }
            for (std::uint32_t m = eff; m != 0; m &= m - 1) lanes[__builtin_ctz(m)].result = acc;
            break;
        }
        case kMatchAny:
            for (std::uint32_t m = eff; m != 0; m &= m - 1) {
                Thread& o = lanes[__builtin_ctz(m)];
                std::uint32_t same = 0;
                for (std::uint32_t n = eff; n != 0; n &= n - 1) {
                    const unsigned j = static_cast<unsigned>(__builtin_ctz(n));
                    if (lanes[j].value == o.value) same |= 1u << j;
                }
                o.result = same;
            }
            break;
        case kMatchAll: {
            bool all = true;
            const std::uint64_t first = lanes[__builtin_ctz(eff)].value;
            for (std::uint32_t m = eff; m != 0; m &= m - 1) all = all && lanes[__builtin_ctz(m)].value == first;
            const std::uint64_t r = all ? (std::uint64_t{1} << 32) | eff : 0;
            for (std::uint32_t m = eff; m != 0; m &= m - 1) lanes[__builtin_ctz(m)].result = r;
            break;
        }
        default:  // kSyncWarp: arriving was the point
            for (std::uint32_t m = eff; m != 0; m &= m - 1) lanes[__builtin_ctz(m)].result = 0;
            break;
    }
    wp.waiting &= ~eff;
    wp.runnable |= eff;
}

void release_barrier(Worker& w) {
    w.bar_released = w.bar_count;
    w.bar_count = 0;
    w.bar_waiters = 0;
    for (unsigned i = 0; i < w.nwarps; ++i) {
        w.warps[i].runnable |= w.warps[i].at_barrier;
        w.warps[i].at_barrier = 0;
    }
}

// Nothing can run and the barrier is incomplete, so some lane waits in a collective for lanes that will not
// come: they wait at __syncthreads or in a different collective. Describe the first such lane.
void report_deadlock(Worker& w) {
    for (unsigned wi = 0; wi < w.nwarps; ++wi) {
        const Warp& wp = w.warps[wi];
        if (wp.waiting == 0) continue;
        const Thread* lanes = &w.threads[wi * 32];
        const Thread& t = lanes[__builtin_ctz(wp.waiting)];
        char what[512];
        const std::uint32_t at_barrier = t.mask & wp.at_barrier;
        std::uint32_t elsewhere = 0;
        for (std::uint32_t m = t.mask & wp.waiting; m != 0; m &= m - 1) {
            const Thread& o = lanes[__builtin_ctz(m)];
            if (o.op != t.op || o.mask != t.mask) elsewhere |= 1u << (o.tid % 32);
        }
        if (elsewhere != 0) {
            const Thread& o = lanes[__builtin_ctz(elsewhere)];
            std::snprintf(what, sizeof what,
                          "deadlock: lanes %u and %u of a warp wait in different collectives: %s(mask 0x%08x) and "
                          "%s(mask 0x%08x)",
                          t.tid % 32, o.tid % 32, kOpNames[t.op], t.mask, kOpNames[o.op], o.mask);
        } else {
            std::snprintf(what, sizeof what,
                          "deadlock: lane %u waits in %s(mask 0x%08x) for lane(s) 0x%08x, which wait at "
                          "__syncthreads (%u thread(s) of the block wait there)",
                          t.tid % 32, kOpNames[t.op], t.mask, at_barrier, w.bar_waiters);
        }
        record_error(w, CUDA_EMU_ERROR_KERNEL, &t, what);
        return;
    }
    record_error(w, CUDA_EMU_ERROR_KERNEL, nullptr, "deadlock: no thread of the block can make progress");
}

// ------------------------------------------------------------------------------------------------
// Blocks
// ------------------------------------------------------------------------------------------------

void run_warp(Worker& w, unsigned wi) {
    Thread* t = pick_lane(w, wi, w.warps[wi].last_lane);
    if (!switch_to_thread(w, &w.sched, t, false)) {
        record_error(w, CUDA_EMU_ERROR_RESOURCE, t, "cannot allocate a fiber stack");
    }
}

void run_block(Worker& w, Launch& l, std::uint64_t b) {
    const unsigned gx = l.desc.grid[0], gy = l.desc.grid[1];
    const unsigned bx = l.desc.block[0], by = l.desc.block[1], bz = l.desc.block[2];
    w.launch = &l;
    w.block = b;
    tl_block_idx = uint3{static_cast<unsigned>(b % gx), static_cast<unsigned>(b / gx % gy),
                         static_cast<unsigned>(b / (static_cast<std::uint64_t>(gx) * gy))};
    tl_block_dim = dim3(bx, by, bz);
    tl_grid_dim = dim3(gx, gy, l.desc.grid[2]);
    tl_dyn_smem = w.dyn_smem;
#if CUDA_EMU_ASAN
    // Accesses past the requested dynamic shared memory are reported like heap overflows.
    __asan_unpoison_memory_region(w.dyn_smem, w.dyn_smem_size);
    const std::size_t used = (l.desc.shmem + 7u) & ~std::size_t{7};
    __asan_poison_memory_region(w.dyn_smem + used, w.dyn_smem_size - used);
#endif
    std::memset(w.dyn_smem, 0xff, l.desc.shmem);

    w.nthreads = bx * by * bz;
    w.nwarps = (w.nthreads + 31) / 32;
    w.exited = 0;
    w.bar_waiters = 0;
    w.bar_count = 0;
    w.bar_released = 0;
    w.failed = false;
    w.order = l.schedule.order;
    w.rng = l.schedule.seed ^ (b * 0xd1b54a32d192ed03ull);
    unsigned tid = 0;
    for (unsigned z = 0; z < bz; ++z) {
        for (unsigned y = 0; y < by; ++y) {
            for (unsigned x = 0; x < bx; ++x, ++tid) {
                Thread& t = w.threads[tid];
                t.ctx = nullptr;
                t.idx = uint3{x, y, z};
                t.tid = tid;
            }
        }
    }
    for (unsigned i = 0; i < w.nwarps; ++i) {
        Warp& wp = w.warps[i];
        const unsigned lanes = std::min(32u, w.nthreads - i * 32);
        wp.exists = lanes == 32 ? ~0u : (1u << lanes) - 1u;
        wp.runnable = wp.exists;
        wp.exited = wp.waiting = wp.at_barrier = 0;
        wp.last_lane = w.order == Order::kRev ? 0 : 31;  // so that the first pick is lane 31 or lane 0
    }

    unsigned order[kMaxWarps];
    for (unsigned i = 0; i < w.nwarps; ++i) order[i] = w.order == Order::kRev ? w.nwarps - 1 - i : i;
    while (!w.failed) {
        // One pass: every warp with runnable lanes runs until none is left, or one of its lanes yields.
        if (w.order == Order::kRand) {
            for (unsigned i = w.nwarps; i > 1; --i) std::swap(order[i - 1], order[w.next_random() % i]);
        }
        for (unsigned k = 0; k < w.nwarps && !w.failed; ++k) {
            if (w.warps[order[k]].runnable != 0) run_warp(w, order[k]);
        }
        if (w.failed || w.exited == w.nthreads) break;
        bool runnable = false;
        for (unsigned i = 0; i < w.nwarps; ++i) runnable = runnable || w.warps[i].runnable != 0;
        if (runnable) continue;  // a lane yielded in __nanosleep
        if (w.bar_waiters == w.nthreads) {
            release_barrier(w);
        } else {
            report_deadlock(w);
        }
    }
    if (w.failed) {
        // Threads abandoned mid-kernel still hold their contexts.
        for (unsigned i = 0; i < w.nthreads; ++i) {
            if (w.threads[i].ctx != nullptr) {
                release_context(w, w.threads[i].ctx);
                w.threads[i].ctx = nullptr;
            }
        }
    }
    w.launch = nullptr;
}

void run_blocks(Launch& l) {
    Worker* w = this_worker();
    if (w == nullptr) {
        std::lock_guard<std::mutex> lock(l.error_mu);
        if (l.error_code == CUDA_EMU_OK) {
            l.error_code = CUDA_EMU_ERROR_RESOURCE;
            l.error = std::string("kernel '") + l.name + "': cannot allocate the emulator's worker state";
        }
        l.abort.store(true, std::memory_order_relaxed);
        return;
    }
    while (!l.abort.load(std::memory_order_relaxed)) {
        const std::uint64_t b = l.next_block.fetch_add(1, std::memory_order_relaxed);
        if (b >= l.nblocks) break;
        run_block(*w, l, b);
    }
}

// ------------------------------------------------------------------------------------------------
// Helper threads
// ------------------------------------------------------------------------------------------------

// Process-wide pool of helper threads. Deliberately leaked: helpers block on its condition variable until
// the process exits, so it must outlive static destruction.
struct Pool {
    std::mutex mu;
    std::condition_variable work_cv;  // helpers wait here for an open launch
    std::condition_variable done_cv;  // launching threads wait here for their helpers to leave
    std::deque<Launch*> open;         // launches that still accept helpers
    unsigned helpers = 0;
};

Pool& pool() {
    static Pool* p = new Pool();
    return *p;
}

[[noreturn]] void helper_main() {
    Pool& p = pool();
    std::unique_lock<std::mutex> lock(p.mu);
    for (;;) {
        p.work_cv.wait(lock, [&p] { return !p.open.empty(); });
        Launch* l = p.open.front();
        if (++l->helpers_joined == l->helpers_wanted) p.open.pop_front();
        ++l->helpers_active;
        lock.unlock();
        run_blocks(*l);
        lock.lock();
        if (--l->helpers_active == 0) p.done_cv.notify_all();
    }
}

// Opens `l` to up to `wanted` helpers, starting helper threads as needed.
void open_to_helpers(Launch& l, unsigned wanted) {
    Pool& p = pool();
    {
        std::lock_guard<std::mutex> lock(p.mu);
        while (p.helpers < wanted) {
            try {
                std::thread(helper_main).detach();
            } catch (const std::system_error&) {
                break;  // no more threads: run with the helpers there are
            }
            ++p.helpers;
        }
        l.helpers_wanted = std::min(wanted, p.helpers);
        if (l.helpers_wanted == 0) return;
        p.open.push_back(&l);
    }
    p.work_cv.notify_all();
}

// Called once the launching thread finds no more blocks: closes `l` and waits for helpers still in it.
void close_to_helpers(Launch& l) {
    Pool& p = pool();
    std::unique_lock<std::mutex> lock(p.mu);
    const auto it = std::find(p.open.begin(), p.open.end(), &l);
    if (it != p.open.end()) p.open.erase(it);
    p.done_cv.wait(lock, [&l] { return l.helpers_active == 0; });
}

__attribute__((format(printf, 2, 3))) int launch_error(int code, const char* fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    tl_last_error = buf;
    return code;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Interface used by cuda_cpu.h
// ------------------------------------------------------------------------------------------------

std::uint64_t warp_collective(unsigned mask, int op, std::uint64_t value, int param, int width) {
    Worker& w = running_worker("a warp collective");
    Thread* t = w.cur;
    const unsigned wi = t->tid / 32;
    const unsigned lane = t->tid % 32;
    const std::uint32_t bit = 1u << lane;
    Warp& wp = w.warps[wi];
    if (!(mask & bit)) {
        fail_thread(w, CUDA_EMU_ERROR_KERNEL, t, "lane %u calls %s with mask 0x%08x, which does not contain it",
                    lane, kOpNames[op], mask);
    }
    // Lanes past the end of a partial warp are ignored, so full masks work in any block size.
    const std::uint32_t eff = mask & wp.exists;
    if (eff & wp.exited) {
        fail_thread(w, CUDA_EMU_ERROR_KERNEL, t, "lane %u calls %s with mask 0x%08x, whose lane(s) 0x%08x have exited",
                    lane, kOpNames[op], mask, eff & wp.exited);
    }
    if (op <= kShflXor && (width < 1 || width > 32 || (width & (width - 1)) != 0)) {
        fail_thread(w, CUDA_EMU_ERROR_KERNEL, t,
                    "lane %u calls %s with width %d, which is not a power of two in [1, 32]", lane, kOpNames[op],
                    width);
    }
    t->op = op;
    t->mask = mask;
    t->param = param;
    t->width = width;
    t->value = value;
    wp.waiting |= bit;
    if (group_arrived(w, t, wi, eff)) {
        complete_collective(w, t, wi, eff);  // the last lane to arrive computes for all and runs on
    } else {
        wp.runnable &= ~bit;
        block_running_thread(w);
    }
    return t->result;
}

int barrier(int pred) {
    Worker& w = running_worker("__syncthreads");
    Thread* t = w.cur;
    if (w.exited != 0) {
        fail_thread(w, CUDA_EMU_ERROR_KERNEL, t,
                    "__syncthreads reached after %u thread(s) of the block exited (divergent barrier, UB)", w.exited);
    }
    const std::uint32_t bit = 1u << (t->tid % 32);
    Warp& wp = w.warps[t->tid / 32];
    wp.at_barrier |= bit;
    wp.runnable &= ~bit;
    ++w.bar_waiters;
    w.bar_count += pred != 0;
    block_running_thread(w);
    // bar_released stays valid until every thread arrives at the next barrier, which includes this one.
    return static_cast<int>(w.bar_released);
}

unsigned active_mask() {
    Worker& w = running_worker("__activemask");
    const Warp& wp = w.warps[w.cur->tid / 32];
    return wp.exists & ~wp.exited;
}

void yield() {
    Worker& w = running_worker("__nanosleep");
    Thread* t = w.cur;
    switch_to_scheduler(w, t->ctx, t->tid % 32, false);  // stays runnable
}

void trap(const char* what) {
    Worker& w = running_worker(what);
    fail_thread(w, CUDA_EMU_ERROR_KERNEL, w.cur, "%s called", what);
}

int launch(const LaunchDesc& desc) {
    g_launch_count.fetch_add(1, std::memory_order_relaxed);
    const char* name = desc.name != nullptr ? desc.name : "<kernel>";
    const EnvConfig& env = env_config();
    if (!env.error.empty()) return launch_error(CUDA_EMU_ERROR_CONFIG, "%s", env.error.c_str());
    const unsigned* b = desc.block;
    const unsigned* g = desc.grid;
    if (b[0] == 0 || b[1] == 0 || b[2] == 0 || b[0] > 1024 || b[1] > 1024 || b[2] > 64 ||
        static_cast<std::uint64_t>(b[0]) * b[1] * b[2] > kMaxThreadsPerBlock) {
        return launch_error(CUDA_EMU_ERROR_CONFIG,
                            "kernel '%s': invalid block dimensions (%u,%u,%u): each must be at least 1, x and y "
                            "at most 1024, z at most 64, and at most 1024 threads in all",
                            name, b[0], b[1], b[2]);
    }
    if (g[0] == 0 || g[1] == 0 || g[2] == 0 || g[0] > 0x7fffffffu || g[1] > 65535 || g[2] > 65535) {
        return launch_error(CUDA_EMU_ERROR_CONFIG,
                            "kernel '%s': invalid grid dimensions (%u,%u,%u): each must be at least 1, x at most "
                            "2^31-1, y and z at most 65535",
                            name, g[0], g[1], g[2]);
    }
    if (desc.shmem > kMaxDynSmem) {
        return launch_error(CUDA_EMU_ERROR_CONFIG,
                            "kernel '%s': %u bytes of dynamic shared memory requested, at most %u (227 KiB)", name,
                            desc.shmem, kMaxDynSmem);
    }
    if (tl_worker != nullptr && tl_worker->launch != nullptr) {
        return launch_error(CUDA_EMU_ERROR_CONFIG, "kernel '%s': launched from inside a kernel", name);
    }

    Launch l;
    l.desc = desc;
    l.name = name;
    l.schedule = current_schedule();
    l.nblocks = static_cast<std::uint64_t>(g[0]) * g[1] * g[2];
    const std::uint64_t helpers = std::min<std::uint64_t>(current_workers() - 1, l.nblocks - 1);
    if (helpers > 0) open_to_helpers(l, static_cast<unsigned>(helpers));
    run_blocks(l);
    if (helpers > 0) close_to_helpers(l);
    if (l.error_code != CUDA_EMU_OK) {
        tl_last_error = l.error;
        return l.error_code;
    }
    return CUDA_EMU_OK;
}

}  // namespace detail
}  // namespace cuda_emu

// ------------------------------------------------------------------------------------------------
// C API
// ------------------------------------------------------------------------------------------------

using namespace cuda_emu::detail;

// Target of assert() in kernel translation units (cuda_cpu.h renames __assert_fail). Inside a kernel it
// fails the launch; anywhere else it behaves like glibc's.
extern "C" void cuda_emu_assert_fail(const char* assertion, const char* file, unsigned int line,
                                     const char* function) noexcept {
    Worker* w = tl_worker;
    if (w != nullptr && w->cur != nullptr) {
        fail_thread(*w, CUDA_EMU_ERROR_KERNEL, w->cur, "assertion `%s' failed at %s:%u in %s", assertion, file, line,
                    function);
    }
    std::fprintf(stderr, "%s:%u: %s: Assertion `%s' failed.\n", file, line, function, assertion);
    std::abort();
}

extern "C" const char* cuda_emu_last_error(void) { return tl_last_error.c_str(); }

extern "C" int cuda_emu_set_schedule(const char* spec) {
    Schedule s;
    if (spec != nullptr && !parse_schedule(spec, &s)) return -1;
    std::lock_guard<std::mutex> lock(g_settings_mu);
    g_schedule_overridden = spec != nullptr;
    g_schedule_override = s;
    return 0;
}

extern "C" int cuda_emu_set_workers(int n) {
    if (n < 0 || n > 1024) return -1;
    g_workers_override.store(static_cast<unsigned>(n), std::memory_order_relaxed);
    return 0;
}

extern "C" unsigned long long cuda_emu_launch_count(void) { return g_launch_count.load(std::memory_order_relaxed); }
