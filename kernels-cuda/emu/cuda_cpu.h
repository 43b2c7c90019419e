// cuda_cpu.h: compiles CUDA kernels (.cu) as host C++ so that they run on the CPU emulator in
// cuda_cpu_rt.cpp. It is force-included:
//
//   g++ -std=c++17 -I<cuda>/include -I<cuda>/include/cccl -x c++ -include cuda_cpu.h kernel.cu
//
// Each CUDA thread runs as a fiber; the runtime schedules them warp by warp and implements barriers and
// warp collectives with CUDA's semantics (see cuda_cpu_rt.cpp). This header supplies everything a kernel
// sees on the device: qualifiers, thread coordinates, intrinsics, atomics, math, the fp16/bf16 functions
// that the toolkit headers only define for nvcc, and the launch entry points.
//
// __CUDA_EMU__ is defined; __CUDA_ARCH__ and __CUDACC__ are not, so architecture-gated code takes its
// portable branch. The only spelling that differs between the emulator and nvcc is dynamic shared
// memory: CUDA_DYN_SHARED(T, name) here, and in kernels/common.cuh for nvcc.
#ifndef CUDA_EMU_CUDA_CPU_H
#define CUDA_EMU_CUDA_CPU_H

#if defined(__CUDACC__)
#error "cuda_cpu.h is the CPU emulator's header; it must not be used with nvcc"
#endif
#if !defined(__cplusplus) || __cplusplus < 201703L
#error "cuda_cpu.h needs C++17"
#endif

#define __CUDA_EMU__ 1

// glibc's assert() expands to a call of __assert_fail. Renaming that function before <assert.h> declares
// it routes every assert in a kernel translation unit (also one from a later #include <cassert>, which
// redefines assert) to the emulator, which fails the launch with a message instead of aborting the process.
#define __assert_fail cuda_emu_assert_fail

// Execution-space qualifiers mean nothing on the host. They are defined before the toolkit headers are
// included because crt/host_defines.h keeps definitions that already exist.
#if defined(CUDA_EMU_SCAN)
// build.rs lists a file's entry points by preprocessing it with -DCUDA_EMU_SCAN (they may be stamped out by
// macros): __global__ then survives preprocessing as this marker.
#define __global__ CUDA_EMU_GLOBAL_MARK
#else
#define __global__
#endif
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __launch_bounds__(...)
#define __cluster_dims__(...)
// One copy per OS thread. A worker thread runs one block at a time, so this is one copy per running block.
// Static shared memory is not reset between blocks; dynamic shared memory is (see CUDA_DYN_SHARED).
#define __shared__ static thread_local

#include <assert.h>
#include <math.h>

#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include <vector_types.h>
#include <vector_functions.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// host_defines.h maps these to attributes g++ does not know.
#undef __maxnreg__
#define __maxnreg__(n)
#undef __local_maxnreg__
#define __local_maxnreg__(n)

inline constexpr int warpSize = 32;

// ------------------------------------------------------------------------------------------------
// Runtime interface (implemented in cuda_cpu_rt.cpp). Not for kernel code.
// ------------------------------------------------------------------------------------------------

#define CUDA_EMU_TLS __attribute__((tls_model("initial-exec")))

namespace cuda_emu {
namespace detail {

// Coordinates of the running CUDA thread. The scheduler writes tl_thread_idx on every switch to a fiber and
// the others once per block. Fibers never move between OS threads, so addresses the compiler caches stay
// valid; the values are re-read after every call into the runtime because these are non-const globals.
extern __thread uint3 tl_thread_idx CUDA_EMU_TLS;
extern __thread uint3 tl_block_idx CUDA_EMU_TLS;
extern __thread dim3 tl_block_dim CUDA_EMU_TLS;
extern __thread dim3 tl_grid_dim CUDA_EMU_TLS;
extern __thread unsigned char* tl_dyn_smem CUDA_EMU_TLS;

// Every warp-level operation goes through warp_collective(); `op` says which.
enum CollectiveOp : int {
    kShflIdx,
    kShflUp,
    kShflDown,
    kShflXor,
    kBallot,
    kAny,
    kAll,
    kReduceAdd,
    kReduceMinU,
    kReduceMaxU,
    kReduceMinS,
    kReduceMaxS,
    kReduceAnd,
    kReduceOr,
    kReduceXor,
    kMatchAny,
    kMatchAll,
    kSyncWarp,
};

// Waits until every existing lane of `mask` has arrived at the same collective, then returns this lane's
// result. `value` holds the lane's operand zero-extended; `param` is the shuffle lane/offset. kMatchAll
// returns the lane mask in the low 32 bits and the predicate in bit 32.
std::uint64_t warp_collective(unsigned mask, int op, std::uint64_t value, int param, int width);
// __syncthreads: waits for the whole block; returns how many threads passed a non-zero `pred`.
int barrier(int pred);
// Lanes of the caller's warp that exist and have not exited.
unsigned active_mask();
// __nanosleep: lets the other lanes and warps of the block run.
void yield();
// __trap and friends: fails the launch.
[[noreturn]] void trap(const char* what);

struct LaunchDesc {
    void (*thread_main)(void* arg);  // runs one CUDA thread
    void* arg;
    unsigned grid[3];
    unsigned block[3];
    unsigned shmem;
    const char* name;  // kernel name for messages, may be null
};
int launch(const LaunchDesc& desc);

// Operands of warp collectives travel as 64-bit patterns. Any type of at most 8 bytes that can be copied
// bytewise is accepted. __half2 and __nv_bfloat162 declare copy constructors, so they are not trivially
// copyable in the C++ sense, but they are plain 4-byte values and CUDA shuffles them.
template <typename T>
inline void check_collective_type() {
    static_assert(sizeof(T) <= 8, "warp collectives take values of at most 8 bytes");
    static_assert(std::is_trivially_destructible<T>::value && std::is_default_constructible<T>::value,
                  "warp collectives take plain values");
}
template <typename T>
inline std::uint64_t to_bits(const T& v) {
    check_collective_type<T>();
    std::uint64_t b = 0;
    std::memcpy(&b, static_cast<const void*>(&v), sizeof(T));
    return b;
}
template <typename T>
inline T from_bits(std::uint64_t b) {
    T v;
    std::memcpy(static_cast<void*>(&v), &b, sizeof(T));
    return v;
}
template <typename To, typename From>
inline To bit_cast(const From& f) {
    static_assert(sizeof(To) == sizeof(From), "bit_cast between types of different sizes");
    To t;
    std::memcpy(static_cast<void*>(&t), static_cast<const void*>(&f), sizeof(To));
    return t;
}

}  // namespace detail
}  // namespace cuda_emu

// ------------------------------------------------------------------------------------------------
// Thread coordinates and dynamic shared memory
// ------------------------------------------------------------------------------------------------

#define threadIdx (static_cast<const ::uint3&>(::cuda_emu::detail::tl_thread_idx))
#define blockIdx (static_cast<const ::uint3&>(::cuda_emu::detail::tl_block_idx))
#define blockDim (static_cast<const ::dim3&>(::cuda_emu::detail::tl_block_dim))
#define gridDim (static_cast<const ::dim3&>(::cuda_emu::detail::tl_grid_dim))

// `extern __shared__ T name[]` cannot be produced by a macro on the host, so kernels spell dynamic shared
// memory this way in both builds. The buffer is 256-byte aligned and filled with 0xFF at every block start,
// so reads of unwritten floats give NaN.
#define CUDA_DYN_SHARED(T, name) T* name = reinterpret_cast<T*>(::cuda_emu::detail::tl_dyn_smem)

// ------------------------------------------------------------------------------------------------
// Synchronisation
// ------------------------------------------------------------------------------------------------

inline void __syncthreads() { ::cuda_emu::detail::barrier(0); }
inline int __syncthreads_count(int pred) { return ::cuda_emu::detail::barrier(pred); }
inline int __syncthreads_and(int pred) {
    return static_cast<unsigned>(::cuda_emu::detail::barrier(pred)) == blockDim.x * blockDim.y * blockDim.z;
}
inline int __syncthreads_or(int pred) { return ::cuda_emu::detail::barrier(pred) != 0; }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
    ::cuda_emu::detail::warp_collective(mask, ::cuda_emu::detail::kSyncWarp, 0, 0, warpSize);
}
// Approximation: the lanes of the warp that exist and have not exited. On a GPU it also depends on
// divergence, so kernels must not use it to discover which lanes took a branch.
inline unsigned __activemask() { return ::cuda_emu::detail::active_mask(); }
// The threads of a block share one OS thread and x86 is TSO, so a full fence covers all three scopes.
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
// A thread spinning on another warp's progress must call this: fibers are not preempted.
inline void __nanosleep(unsigned) { ::cuda_emu::detail::yield(); }
[[noreturn]] inline void __trap() { ::cuda_emu::detail::trap("__trap()"); }
[[noreturn]] inline void __brkpt() { ::cuda_emu::detail::trap("__brkpt()"); }

// ------------------------------------------------------------------------------------------------
// Warp intrinsics
// ------------------------------------------------------------------------------------------------

template <typename T>
inline T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize) {
    using namespace ::cuda_emu::detail;
    return from_bits<T>(warp_collective(mask, kShflIdx, to_bits(var), srcLane, width));
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
    using namespace ::cuda_emu::detail;
    return from_bits<T>(warp_collective(mask, kShflUp, to_bits(var), static_cast<int>(delta), width));
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
    using namespace ::cuda_emu::detail;
    return from_bits<T>(warp_collective(mask, kShflDown, to_bits(var), static_cast<int>(delta), width));
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize) {
    using namespace ::cuda_emu::detail;
    return from_bits<T>(warp_collective(mask, kShflXor, to_bits(var), laneMask, width));
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
    using namespace ::cuda_emu::detail;
    return static_cast<unsigned>(warp_collective(mask, kBallot, pred != 0, 0, warpSize));
}
inline int __any_sync(unsigned mask, int pred) {
    using namespace ::cuda_emu::detail;
    return static_cast<int>(warp_collective(mask, kAny, pred != 0, 0, warpSize));
}
inline int __all_sync(unsigned mask, int pred) {
    using namespace ::cuda_emu::detail;
    return static_cast<int>(warp_collective(mask, kAll, pred != 0, 0, warpSize));
}

#define CUDA_EMU_REDUCE(NAME, OP_U, OP_S)                                                               \
    inline unsigned NAME(unsigned mask, unsigned value) {                                               \
        using namespace ::cuda_emu::detail;                                                             \
        return static_cast<unsigned>(warp_collective(mask, OP_U, value, 0, warpSize));                  \
    }                                                                                                   \
    inline int NAME(unsigned mask, int value) {                                                         \
        using namespace ::cuda_emu::detail;                                                             \
        return static_cast<int>(static_cast<unsigned>(                                                  \
            warp_collective(mask, OP_S, static_cast<unsigned>(value), 0, warpSize)));                   \
    }
// Addition wraps identically for both signednesses; min and max compare differently.
CUDA_EMU_REDUCE(__reduce_add_sync, ::cuda_emu::detail::kReduceAdd, ::cuda_emu::detail::kReduceAdd)
CUDA_EMU_REDUCE(__reduce_min_sync, ::cuda_emu::detail::kReduceMinU, ::cuda_emu::detail::kReduceMinS)
CUDA_EMU_REDUCE(__reduce_max_sync, ::cuda_emu::detail::kReduceMaxU, ::cuda_emu::detail::kReduceMaxS)
#undef CUDA_EMU_REDUCE
inline unsigned __reduce_and_sync(unsigned mask, unsigned value) {
    using namespace ::cuda_emu::detail;
    return static_cast<unsigned>(warp_collective(mask, kReduceAnd, value, 0, warpSize));
}
inline unsigned __reduce_or_sync(unsigned mask, unsigned value) {
    using namespace ::cuda_emu::detail;
    return static_cast<unsigned>(warp_collective(mask, kReduceOr, value, 0, warpSize));
}
inline unsigned __reduce_xor_sync(unsigned mask, unsigned value) {
    using namespace ::cuda_emu::detail;
    return static_cast<unsigned>(warp_collective(mask, kReduceXor, value, 0, warpSize));
}

// CUDA provides these for 32- and 64-bit integers and floating point; values compare bitwise.
template <typename T>
inline unsigned __match_any_sync(unsigned mask, T value) {
    static_assert(std::is_arithmetic<T>::value && (sizeof(T) == 4 || sizeof(T) == 8),
                  "__match_any_sync takes 32- or 64-bit integers or floating point");
    using namespace ::cuda_emu::detail;
    return static_cast<unsigned>(warp_collective(mask, kMatchAny, to_bits(value), 0, warpSize));
}
template <typename T>
inline unsigned __match_all_sync(unsigned mask, T value, int* pred) {
    static_assert(std::is_arithmetic<T>::value && (sizeof(T) == 4 || sizeof(T) == 8),
                  "__match_all_sync takes 32- or 64-bit integers or floating point");
    using namespace ::cuda_emu::detail;
    const std::uint64_t r = warp_collective(mask, kMatchAll, to_bits(value), 0, warpSize);
    *pred = static_cast<int>(r >> 32);
    return static_cast<unsigned>(r);
}

// ------------------------------------------------------------------------------------------------
// Atomics: relaxed, like CUDA's (x86 makes every read-modify-write sequentially consistent anyway)
// ------------------------------------------------------------------------------------------------

namespace cuda_emu {
namespace detail {

// Compare-and-swap loop applying `f` to the value at `a`, viewed through an integer type of the same size
// (may_alias because the location is not declared with that type). Returns the old value.
template <typename Bits, typename T, typename F>
inline T atomic_update(T* a, F f) {
    static_assert(sizeof(Bits) == sizeof(T), "atomic_update needs a same-sized integer");
    typedef Bits __attribute__((may_alias)) AliasBits;
    AliasBits* p = reinterpret_cast<AliasBits*>(a);
    Bits old = __atomic_load_n(p, __ATOMIC_RELAXED);
    for (;;) {
        const T old_value = bit_cast<T>(old);
        const Bits desired = bit_cast<Bits>(static_cast<T>(f(old_value)));
        if (__atomic_compare_exchange_n(p, &old, desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            return old_value;
        }
    }
}

}  // namespace detail
}  // namespace cuda_emu

// Exactly the overloads CUDA 13 declares, so that a kernel that builds here also builds with nvcc (which,
// for example, has no atomicAdd for long long and atomicInc only for unsigned).
#define CUDA_EMU_ATOMIC_ADD_EXCH_CAS(T)                                                                 \
    inline T atomicAdd(T* a, T v) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }                \
    inline T atomicExch(T* a, T v) { return __atomic_exchange_n(a, v, __ATOMIC_RELAXED); }              \
    inline T atomicCAS(T* a, T compare, T v) {                                                          \
        __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);         \
        return compare;                                                                                 \
    }
#define CUDA_EMU_ATOMIC_MIN_MAX_BITWISE(T)                                                              \
    inline T atomicAnd(T* a, T v) { return __atomic_fetch_and(a, v, __ATOMIC_RELAXED); }                \
    inline T atomicOr(T* a, T v) { return __atomic_fetch_or(a, v, __ATOMIC_RELAXED); }                  \
    inline T atomicXor(T* a, T v) { return __atomic_fetch_xor(a, v, __ATOMIC_RELAXED); }                \
    inline T atomicMin(T* a, T v) {                                                                     \
        return ::cuda_emu::detail::atomic_update<T>(a, [v](T old) { return v < old ? v : old; });       \
    }                                                                                                   \
    inline T atomicMax(T* a, T v) {                                                                     \
        return ::cuda_emu::detail::atomic_update<T>(a, [v](T old) { return v > old ? v : old; });       \
    }
CUDA_EMU_ATOMIC_ADD_EXCH_CAS(int)
CUDA_EMU_ATOMIC_ADD_EXCH_CAS(unsigned int)
CUDA_EMU_ATOMIC_ADD_EXCH_CAS(unsigned long long)
CUDA_EMU_ATOMIC_MIN_MAX_BITWISE(int)
CUDA_EMU_ATOMIC_MIN_MAX_BITWISE(unsigned int)
CUDA_EMU_ATOMIC_MIN_MAX_BITWISE(long long)
CUDA_EMU_ATOMIC_MIN_MAX_BITWISE(unsigned long long)
#undef CUDA_EMU_ATOMIC_ADD_EXCH_CAS
#undef CUDA_EMU_ATOMIC_MIN_MAX_BITWISE

inline unsigned short atomicCAS(unsigned short* a, unsigned short compare, unsigned short v) {
    __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return compare;
}
inline int atomicSub(int* a, int v) { return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED); }
inline unsigned atomicSub(unsigned* a, unsigned v) { return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED); }
// ((old >= limit) ? 0 : old + 1)
inline unsigned atomicInc(unsigned* a, unsigned limit) {
    return ::cuda_emu::detail::atomic_update<unsigned>(a,
                                                       [limit](unsigned old) { return old >= limit ? 0u : old + 1u; });
}
// ((old == 0 || old > limit) ? limit : old - 1)
inline unsigned atomicDec(unsigned* a, unsigned limit) {
    return ::cuda_emu::detail::atomic_update<unsigned>(
        a, [limit](unsigned old) { return (old == 0 || old > limit) ? limit : old - 1u; });
}
inline float atomicExch(float* a, float v) {
    return ::cuda_emu::detail::atomic_update<std::uint32_t>(a, [v](float) { return v; });
}
inline float atomicAdd(float* a, float v) {
    return ::cuda_emu::detail::atomic_update<std::uint32_t>(a, [v](float old) { return old + v; });
}
inline double atomicAdd(double* a, double v) {
    return ::cuda_emu::detail::atomic_update<std::uint64_t>(a, [v](double old) { return old + v; });
}
inline __half atomicAdd(__half* a, __half v) {
    return ::cuda_emu::detail::atomic_update<std::uint16_t>(a, [v](__half old) { return __hadd(old, v); });
}
inline __nv_bfloat16 atomicAdd(__nv_bfloat16* a, __nv_bfloat16 v) {
    return ::cuda_emu::detail::atomic_update<std::uint16_t>(a,
                                                            [v](__nv_bfloat16 old) { return __hadd(old, v); });
}
// CUDA only promises atomicity per element for the paired and vector forms; one CAS is stronger.
inline __half2 atomicAdd(__half2* a, __half2 v) {
    return ::cuda_emu::detail::atomic_update<std::uint32_t>(a, [v](__half2 old) { return __hadd2(old, v); });
}
inline __nv_bfloat162 atomicAdd(__nv_bfloat162* a, __nv_bfloat162 v) {
    return ::cuda_emu::detail::atomic_update<std::uint32_t>(a,
                                                            [v](__nv_bfloat162 old) { return __hadd2(old, v); });
}
inline float2 atomicAdd(float2* a, float2 v) { return make_float2(atomicAdd(&a->x, v.x), atomicAdd(&a->y, v.y)); }
inline float4 atomicAdd(float4* a, float4 v) {
    return make_float4(atomicAdd(&a->x, v.x), atomicAdd(&a->y, v.y), atomicAdd(&a->z, v.z), atomicAdd(&a->w, v.w));
}

// Block and system scopes are the same thing on one host.
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicSub_block atomicSub
#define atomicSub_system atomicSub
#define atomicExch_block atomicExch
#define atomicExch_system atomicExch
#define atomicMin_block atomicMin
#define atomicMin_system atomicMin
#define atomicMax_block atomicMax
#define atomicMax_system atomicMax
#define atomicInc_block atomicInc
#define atomicInc_system atomicInc
#define atomicDec_block atomicDec
#define atomicDec_system atomicDec
#define atomicCAS_block atomicCAS
#define atomicCAS_system atomicCAS
#define atomicAnd_block atomicAnd
#define atomicAnd_system atomicAnd
#define atomicOr_block atomicOr
#define atomicOr_system atomicOr
#define atomicXor_block atomicXor
#define atomicXor_system atomicXor

// ------------------------------------------------------------------------------------------------
// Memory access hints: plain loads and stores on the host
// ------------------------------------------------------------------------------------------------

template <typename T> inline T __ldg(const T* p) { return *p; }
template <typename T> inline T __ldcg(const T* p) { return *p; }
template <typename T> inline T __ldca(const T* p) { return *p; }
template <typename T> inline T __ldcs(const T* p) { return *p; }
template <typename T> inline T __ldlu(const T* p) { return *p; }
template <typename T> inline T __ldcv(const T* p) { return *p; }
template <typename T> inline void __stwb(T* p, T v) { *p = v; }
template <typename T> inline void __stcg(T* p, T v) { *p = v; }
template <typename T> inline void __stcs(T* p, T v) { *p = v; }
template <typename T> inline void __stwt(T* p, T v) { *p = v; }

// ------------------------------------------------------------------------------------------------
// Integer and bit intrinsics
// ------------------------------------------------------------------------------------------------

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
    const unsigned lo = static_cast<unsigned>(x), hi = static_cast<unsigned>(x >> 32);
    return (static_cast<unsigned long long>(__brev(lo)) << 32) | __brev(hi);
}
inline unsigned __umulhi(unsigned a, unsigned b) {
    return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32);
}
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
inline long long __mul64hi(long long a, long long b) {
    return static_cast<long long>((static_cast<__int128>(a) * b) >> 64);
}
// Low 32 bits of the product of the sign-extended low 24 bits of a and b.
inline int __mul24(int a, int b) {
    const long long sa = static_cast<int>(static_cast<unsigned>(a) << 8) / 256;
    const long long sb = static_cast<int>(static_cast<unsigned>(b) << 8) / 256;
    return static_cast<int>(static_cast<unsigned>(sa * sb));
}
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
inline int __sad(int x, int y, unsigned z) {
    const long long diff = x > y ? static_cast<long long>(x) - y : static_cast<long long>(y) - x;
    return static_cast<int>(z + static_cast<unsigned>(diff));
}
inline unsigned __usad(unsigned x, unsigned y, unsigned z) { return z + (x > y ? x - y : y - x); }
// Byte i of the result is byte (s >> 4i) & 7 of the 8-byte value {y, x}.
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    const unsigned long long v = (static_cast<unsigned long long>(y) << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; ++i) r |= static_cast<unsigned>((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
    return r;
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
    const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
    return static_cast<unsigned>((v << (shift & 31)) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
    const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
    return static_cast<unsigned>((v << (shift < 32 ? shift : 32)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
    const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
    return static_cast<unsigned>(v >> (shift & 31));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
    const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
    return static_cast<unsigned>(v >> (shift < 32 ? shift : 32));
}

// CUDA's overloaded min and max. Mixed signedness picks the unsigned version, as in CUDA; floating point
// uses fmin/fmax (a NaN operand yields the other operand).
#define CUDA_EMU_MINMAX(R, A, B)                                                                        \
    inline R min(A a, B b) { return static_cast<R>(a) < static_cast<R>(b) ? static_cast<R>(a) : static_cast<R>(b); } \
    inline R max(A a, B b) { return static_cast<R>(a) > static_cast<R>(b) ? static_cast<R>(a) : static_cast<R>(b); }
CUDA_EMU_MINMAX(int, int, int)
CUDA_EMU_MINMAX(unsigned int, unsigned int, unsigned int)
CUDA_EMU_MINMAX(unsigned int, int, unsigned int)
CUDA_EMU_MINMAX(unsigned int, unsigned int, int)
CUDA_EMU_MINMAX(long, long, long)
CUDA_EMU_MINMAX(unsigned long, unsigned long, unsigned long)
CUDA_EMU_MINMAX(unsigned long, long, unsigned long)
CUDA_EMU_MINMAX(unsigned long, unsigned long, long)
CUDA_EMU_MINMAX(long long, long long, long long)
CUDA_EMU_MINMAX(unsigned long long, unsigned long long, unsigned long long)
CUDA_EMU_MINMAX(unsigned long long, long long, unsigned long long)
CUDA_EMU_MINMAX(unsigned long long, unsigned long long, long long)
#undef CUDA_EMU_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double min(float a, double b) { return fmin(a, b); }
inline double max(float a, double b) { return fmax(a, b); }
inline double min(double a, float b) { return fmin(a, b); }
inline double max(double a, float b) { return fmax(a, b); }
inline unsigned umin(unsigned a, unsigned b) { return min(a, b); }
inline unsigned umax(unsigned a, unsigned b) { return max(a, b); }
inline long long llmin(long long a, long long b) { return min(a, b); }
inline long long llmax(long long a, long long b) { return max(a, b); }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return min(a, b); }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return max(a, b); }

// ------------------------------------------------------------------------------------------------
// Floating point: bit casts, conversions, fast-math intrinsics
// ------------------------------------------------------------------------------------------------

inline int __float_as_int(float x) { return ::cuda_emu::detail::bit_cast<int>(x); }
inline unsigned __float_as_uint(float x) { return ::cuda_emu::detail::bit_cast<unsigned>(x); }
inline float __int_as_float(int x) { return ::cuda_emu::detail::bit_cast<float>(x); }
inline float __uint_as_float(unsigned x) { return ::cuda_emu::detail::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return ::cuda_emu::detail::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return ::cuda_emu::detail::bit_cast<double>(x); }
inline int __double2hiint(double x) { return static_cast<int>(__double_as_longlong(x) >> 32); }
inline int __double2loint(double x) { return static_cast<int>(__double_as_longlong(x)); }
inline double __hiloint2double(int hi, int lo) {
    const unsigned long long bits = (static_cast<unsigned long long>(static_cast<unsigned>(hi)) << 32) |
                                    static_cast<unsigned>(lo);
    return __longlong_as_double(static_cast<long long>(bits));
}

namespace cuda_emu {
namespace detail {

// Float-to-integer conversion as the GPU does it: round `x` in the given mode, then saturate to the range
// of I; NaN gives 0. (A plain C++ cast of an out-of-range value is undefined.)
template <typename I, typename F>
inline I saturating_convert(F rounded) {
    if (rounded != rounded) return 0;
    const F upper = std::ldexp(F(1), std::numeric_limits<I>::digits);  // 2^31 for int, 2^32 for unsigned
    if (rounded >= upper) return std::numeric_limits<I>::max();
    if (rounded <= static_cast<F>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
    return static_cast<I>(rounded);
}

}  // namespace detail
}  // namespace cuda_emu

// The current rounding mode is round-to-nearest-even (kernels must not change it), so nearbyint is _rn.
#define CUDA_EMU_FLOAT_TO_INT(F, FNAME, I, INAME)                                                       \
    inline I __##FNAME##2##INAME##_rn(F x) { return ::cuda_emu::detail::saturating_convert<I>(std::nearbyint(x)); } \
    inline I __##FNAME##2##INAME##_rz(F x) { return ::cuda_emu::detail::saturating_convert<I>(std::trunc(x)); } \
    inline I __##FNAME##2##INAME##_rd(F x) { return ::cuda_emu::detail::saturating_convert<I>(std::floor(x)); } \
    inline I __##FNAME##2##INAME##_ru(F x) { return ::cuda_emu::detail::saturating_convert<I>(std::ceil(x)); }
CUDA_EMU_FLOAT_TO_INT(float, float, int, int)
CUDA_EMU_FLOAT_TO_INT(float, float, unsigned, uint)
CUDA_EMU_FLOAT_TO_INT(float, float, long long, ll)
CUDA_EMU_FLOAT_TO_INT(float, float, unsigned long long, ull)
CUDA_EMU_FLOAT_TO_INT(double, double, int, int)
CUDA_EMU_FLOAT_TO_INT(double, double, unsigned, uint)
CUDA_EMU_FLOAT_TO_INT(double, double, long long, ll)
CUDA_EMU_FLOAT_TO_INT(double, double, unsigned long long, ull)
#undef CUDA_EMU_FLOAT_TO_INT
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline float __uint2float_rn(unsigned x) { return static_cast<float>(x); }
inline float __ll2float_rn(long long x) { return static_cast<float>(x); }
inline float __ull2float_rn(unsigned long long x) { return static_cast<float>(x); }
inline double __int2double_rn(int x) { return static_cast<double>(x); }
inline double __uint2double_rn(unsigned x) { return static_cast<double>(x); }
inline double __ll2double_rn(long long x) { return static_cast<double>(x); }
inline double __ull2double_rn(unsigned long long x) { return static_cast<double>(x); }
inline float __double2float_rn(double x) { return static_cast<float>(x); }

// Round-to-nearest arithmetic is what the host does by default. (nvcc contracts a*b+c into an FMA;
// g++ on baseline x86-64 does not, so compare results with tolerances.)
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __frsqrt_rn(float a) { return 1.0f / std::sqrt(a); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline double __drcp_rn(double a) { return 1.0 / a; }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / std::cbrt(x); }
inline double rcbrt(double x) { return 1.0 / std::cbrt(x); }
inline float fdividef(float a, float b) { return a / b; }
inline float sinpif(float x) { return static_cast<float>(std::sin(M_PI * static_cast<double>(x))); }
inline float cospif(float x) { return static_cast<float>(std::cos(M_PI * static_cast<double>(x))); }
inline void sincospif(float x, float* s, float* c) { *s = sinpif(x); *c = cospif(x); }
inline float normcdff(float x) { return 0.5f * std::erfc(-x * static_cast<float>(M_SQRT1_2)); }
inline double normcdf(double x) { return 0.5 * std::erfc(-x * M_SQRT1_2); }

// The fast-math intrinsics are approximations on the GPU; here they are the precise functions, so tests
// must allow for the GPU's error bounds.
inline float __expf(float x) { return std::exp(x); }
inline float __exp10f(float x) { return std::pow(10.0f, x); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __log10f(float x) { return std::log10(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline void __sincosf(float x, float* s, float* c) { *s = std::sin(x); *c = std::cos(x); }
inline float __powf(float a, float b) { return std::pow(a, b); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }  // NaN gives 0

// ------------------------------------------------------------------------------------------------
// fp16 / bf16 functions that cuda_fp16.h and cuda_bf16.h only define for nvcc
// ------------------------------------------------------------------------------------------------

namespace cuda_emu {
namespace detail {

// a*b+c rounded once to double precision with round-to-odd: if the double sum is inexact, it is replaced
// by the neighbouring double with an odd last bit. Rounding that to a format with at most 51 significant
// bits is then the correctly rounded fused multiply-add. a*b is exact in double for fp16 and bf16 inputs
// (at most 2 x 11 significant bits), and TwoSum gives the exact error of the addition.
inline double fma_round_to_odd(double a, double b, double c) {
    const double p = a * b;
    const double s = p + c;
    if (!std::isfinite(s)) return s;
    const double bv = s - p;
    const double err = (p - (s - bv)) + (c - bv);
    if (err == 0.0) return s;
    const std::uint64_t bits = bit_cast<std::uint64_t>(s);
    if (bits & 1u) return s;
    return std::nextafter(s, err > 0.0 ? INFINITY : -INFINITY);
}

}  // namespace detail
}  // namespace cuda_emu

// Unary functions are evaluated in float and rounded once; the GPU versions are approximate.
#define CUDA_EMU_HALF_FUNCTIONS(T, T2, TO_F, FROM_F, FROM_D, PREFIX)                                     \
    inline T __hfma(T a, T b, T c) {                                                                    \
        return FROM_D(::cuda_emu::detail::fma_round_to_odd(TO_F(a), TO_F(b), TO_F(c)));                  \
    }                                                                                                   \
    inline T __hfma_sat(T a, T b, T c) { return FROM_F(__saturatef(TO_F(__hfma(a, b, c)))); } \
    inline T __hfma_relu(T a, T b, T c) {                                                               \
        const T r = __hfma(a, b, c);                                                                    \
        return TO_F(r) < 0.0f ? FROM_F(0.0f) : r;                                                       \
    }                                                                                                   \
    inline T hexp(T a) { return FROM_F(std::exp(TO_F(a))); }                                            \
    inline T hexp2(T a) { return FROM_F(std::exp2(TO_F(a))); }                                          \
    inline T hexp10(T a) { return FROM_F(std::pow(10.0f, TO_F(a))); }                                   \
    inline T hlog(T a) { return FROM_F(std::log(TO_F(a))); }                                            \
    inline T hlog2(T a) { return FROM_F(std::log2(TO_F(a))); }                                          \
    inline T hlog10(T a) { return FROM_F(std::log10(TO_F(a))); }                                        \
    inline T hsqrt(T a) { return FROM_F(std::sqrt(TO_F(a))); }                                          \
    inline T hrsqrt(T a) { return FROM_F(1.0f / std::sqrt(TO_F(a))); }                                  \
    inline T hrcp(T a) { return FROM_F(1.0f / TO_F(a)); }                                               \
    inline T hsin(T a) { return FROM_F(std::sin(TO_F(a))); }                                            \
    inline T hcos(T a) { return FROM_F(std::cos(TO_F(a))); }                                            \
    inline T htanh(T a) { return FROM_F(std::tanh(TO_F(a))); }                                          \
    inline T hfloor(T a) { return FROM_F(std::floor(TO_F(a))); }                                        \
    inline T hceil(T a) { return FROM_F(std::ceil(TO_F(a))); }                                          \
    inline T htrunc(T a) { return FROM_F(std::trunc(TO_F(a))); }                                        \
    inline T hrint(T a) { return FROM_F(std::nearbyint(TO_F(a))); }                                     \
    inline T2 __hfma2(T2 a, T2 b, T2 c) { return T2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }    \
    inline T2 __hfma2_sat(T2 a, T2 b, T2 c) { return T2(__hfma_sat(a.x, b.x, c.x), __hfma_sat(a.y, b.y, c.y)); } \
    inline T2 __hfma2_relu(T2 a, T2 b, T2 c) {                                                          \
        return T2(__hfma_relu(a.x, b.x, c.x), __hfma_relu(a.y, b.y, c.y));                              \
    }                                                                                                   \
    inline T2 h2exp(T2 a) { return T2(hexp(a.x), hexp(a.y)); }                                          \
    inline T2 h2exp2(T2 a) { return T2(hexp2(a.x), hexp2(a.y)); }                                       \
    inline T2 h2exp10(T2 a) { return T2(hexp10(a.x), hexp10(a.y)); }                                    \
    inline T2 h2log(T2 a) { return T2(hlog(a.x), hlog(a.y)); }                                          \
    inline T2 h2log2(T2 a) { return T2(hlog2(a.x), hlog2(a.y)); }                                       \
    inline T2 h2log10(T2 a) { return T2(hlog10(a.x), hlog10(a.y)); }                                    \
    inline T2 h2sqrt(T2 a) { return T2(hsqrt(a.x), hsqrt(a.y)); }                                       \
    inline T2 h2rsqrt(T2 a) { return T2(hrsqrt(a.x), hrsqrt(a.y)); }                                    \
    inline T2 h2rcp(T2 a) { return T2(hrcp(a.x), hrcp(a.y)); }                                          \
    inline T2 h2sin(T2 a) { return T2(hsin(a.x), hsin(a.y)); }                                          \
    inline T2 h2cos(T2 a) { return T2(hcos(a.x), hcos(a.y)); }                                          \
    inline T2 h2tanh(T2 a) { return T2(htanh(a.x), htanh(a.y)); }                                       \
    inline T2 h2floor(T2 a) { return T2(hfloor(a.x), hfloor(a.y)); }                                    \
    inline T2 h2ceil(T2 a) { return T2(hceil(a.x), hceil(a.y)); }                                       \
    inline T2 h2trunc(T2 a) { return T2(htrunc(a.x), htrunc(a.y)); }                                    \
    inline T2 h2rint(T2 a) { return T2(hrint(a.x), hrint(a.y)); }                                       \
    inline int PREFIX##2int_rn(T a) { return __float2int_rn(TO_F(a)); }                                 \
    inline int PREFIX##2int_rd(T a) { return __float2int_rd(TO_F(a)); }                                 \
    inline int PREFIX##2int_ru(T a) { return __float2int_ru(TO_F(a)); }                                 \
    inline unsigned PREFIX##2uint_rn(T a) { return __float2uint_rn(TO_F(a)); }                          \
    inline unsigned PREFIX##2uint_rd(T a) { return __float2uint_rd(TO_F(a)); }                          \
    inline unsigned PREFIX##2uint_ru(T a) { return __float2uint_ru(TO_F(a)); }                          \
    inline long long PREFIX##2ll_rn(T a) { return __float2ll_rn(TO_F(a)); }                             \
    inline long long PREFIX##2ll_rd(T a) { return __float2ll_rd(TO_F(a)); }                             \
    inline long long PREFIX##2ll_ru(T a) { return __float2ll_ru(TO_F(a)); }                             \
    inline unsigned long long PREFIX##2ull_rn(T a) { return __float2ull_rn(TO_F(a)); }                  \
    inline unsigned long long PREFIX##2ull_rd(T a) { return __float2ull_rd(TO_F(a)); }                  \
    inline unsigned long long PREFIX##2ull_ru(T a) { return __float2ull_ru(TO_F(a)); }
CUDA_EMU_HALF_FUNCTIONS(__half, __half2, __half2float, __float2half, __double2half, __half)
CUDA_EMU_HALF_FUNCTIONS(__nv_bfloat16, __nv_bfloat162, __bfloat162float, __float2bfloat16, __double2bfloat16,
                        __bfloat16)
#undef CUDA_EMU_HALF_FUNCTIONS

// ------------------------------------------------------------------------------------------------
// Launching
// ------------------------------------------------------------------------------------------------

// Return codes of emu_launch_packed and of the generated cuda_emu_kernel_* entries.
#define CUDA_EMU_OK 0
#define CUDA_EMU_ERROR_CONFIG 1    // invalid launch or emulator configuration; nothing ran
#define CUDA_EMU_ERROR_KERNEL 2    // the kernel faulted: failed assert, deadlock, divergent barrier, ...
#define CUDA_EMU_ERROR_RESOURCE 3  // the emulator ran out of memory for fiber stacks

namespace cuda_emu {
namespace detail {

template <typename... A, std::size_t... I>
inline void call_unpacked(void (*kernel)(A...), void** params, std::index_sequence<I...>) {
    (void)params;  // unused for kernels without parameters
    kernel(*static_cast<const std::remove_cv_t<A>*>(params[I])...);
}

}  // namespace detail
}  // namespace cuda_emu

// Runs `kernel` over grid x block, with `shmem` bytes of dynamic shared memory. `params` has the contract of
// cuLaunchKernel's kernelParams: params[i] points at the value of the i-th argument, whose type is taken
// from the kernel's signature. Returns a CUDA_EMU_* code; on failure cuda_emu_last_error() has the message.
template <typename... A>
inline int emu_launch_packed(void (*kernel)(A...), dim3 grid, dim3 block, unsigned shmem, void** params,
                             const char* name = nullptr) {
    struct Closure {
        void (*kernel)(A...);
        void** params;
    } closure{kernel, params};
    ::cuda_emu::detail::LaunchDesc desc;
    desc.thread_main = [](void* arg) {
        Closure* c = static_cast<Closure*>(arg);
        ::cuda_emu::detail::call_unpacked(c->kernel, c->params, std::index_sequence_for<A...>{});
    };
    desc.arg = &closure;
    desc.grid[0] = grid.x;
    desc.grid[1] = grid.y;
    desc.grid[2] = grid.z;
    desc.block[0] = block.x;
    desc.block[1] = block.y;
    desc.block[2] = block.z;
    desc.shmem = shmem;
    desc.name = name;
    return ::cuda_emu::detail::launch(desc);
}

// Defines the C entry point through which the Rust side launches kernel `name`:
//   extern "C" int cuda_emu_kernel_<name>(const unsigned grid[3], const unsigned block[3], unsigned shmem,
//                                         void** params);
#define CUDA_EMU_EXPORT(name)                                                                           \
    extern "C" int cuda_emu_kernel_##name(const unsigned cuda_emu_grid_[3], const unsigned cuda_emu_block_[3], \
                                          unsigned cuda_emu_shmem_, void** cuda_emu_params_) {          \
        /* Parameter names that no kernel will have: a kernel called `params` would be shadowed. */     \
        return emu_launch_packed(name, dim3(cuda_emu_grid_[0], cuda_emu_grid_[1], cuda_emu_grid_[2]),   \
                                 dim3(cuda_emu_block_[0], cuda_emu_block_[1], cuda_emu_block_[2]),      \
                                 cuda_emu_shmem_, cuda_emu_params_, #name);                             \
    }

// ------------------------------------------------------------------------------------------------
// C API of the runtime
// ------------------------------------------------------------------------------------------------

extern "C" {
// Message of the last failed launch on the calling thread; "" if none failed. The pointer stays valid until
// the next failed launch on this thread.
const char* cuda_emu_last_error(void);
// Scheduling order of warps and lanes, process-wide: "fwd", "rev", "rand" or "rand:SEED". Overrides the
// CUDA_EMU_SCHED environment variable; NULL restores it. Returns 0, or -1 for a bad spec.
int cuda_emu_set_schedule(const char* spec);
// Worker threads per launch (the launching thread is one of them). Overrides CUDA_EMU_WORKERS; 0 restores
// it. Returns 0, or -1 for a negative count.
int cuda_emu_set_workers(int n);
// Number of launches attempted since the process started, including failed ones.
unsigned long long cuda_emu_launch_count(void);
}

#endif  // CUDA_EMU_CUDA_CPU_H
