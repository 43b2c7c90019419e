// Kernels of the emulator self-test (main.cpp checks their results). They follow the kernel-author rules:
// extern "C" __global__ entry points, dynamic shared memory through CUDA_DYN_SHARED, and they also compile
// with nvcc for sm_90 (run.sh checks that). The kernels named bug_* contain deliberate bugs that the
// emulator must catch.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "atomic_counters.h"
#include "common.cuh"

#if defined(__CUDA_EMU__) && (defined(__CUDA_ARCH__) || defined(__CUDACC__))
#error "the emulator must not define __CUDA_ARCH__ or __CUDACC__"
#endif

#define FULL_MASK 0xffffffffu

__device__ __forceinline__ unsigned lane_id() { return common::linear_thread_index() % warpSize; }
__device__ __forceinline__ unsigned global_index() {
    return blockIdx.x * (blockDim.x * blockDim.y * blockDim.z) + common::linear_thread_index();
}

// ---------------------------------------------------------------------------------------------------------
// Warp shuffles
// ---------------------------------------------------------------------------------------------------------

// mode 0: __shfl_sync with one source lane `arg`; 1: __shfl_sync with source lane*5 + arg; 2: up by arg;
// 3: down by arg; 4: xor with arg. Each thread contributes 1000 + 7 * its linear index.
extern "C" __global__ void shfl_int(int* out, int mode, int arg, int width) {
    const unsigned tid = common::linear_thread_index();
    const int v = 1000 + 7 * static_cast<int>(tid);
    int r = 0;
    switch (mode) {
        case 0:
            r = __shfl_sync(FULL_MASK, v, arg, width);
            break;
        case 1:
            r = __shfl_sync(FULL_MASK, v, static_cast<int>(lane_id()) * 5 + arg, width);
            break;
        case 2:
            r = __shfl_up_sync(FULL_MASK, v, static_cast<unsigned>(arg), width);
            break;
        case 3:
            r = __shfl_down_sync(FULL_MASK, v, static_cast<unsigned>(arg), width);
            break;
        default:
            r = __shfl_xor_sync(FULL_MASK, v, arg, width);
            break;
    }
    out[tid] = r;
}

// Shuffles of 8-, 4- and 2-byte types (__half2 has a copy constructor, so it is not trivially copyable in
// the C++ sense): every lane gets its xor-1 neighbour's value.
extern "C" __global__ void shfl_types(double* out_d, __half2* out_h2, __half* out_h, long long* out_ll) {
    const unsigned tid = common::linear_thread_index();
    out_d[tid] = __shfl_xor_sync(FULL_MASK, 0.5 + tid, 1);
    out_h2[tid] = __shfl_xor_sync(FULL_MASK, __floats2half2_rn(static_cast<float>(tid), -1.0f * tid), 1);
    out_h[tid] = __shfl_xor_sync(FULL_MASK, __float2half(static_cast<float>(tid)), 1);
    out_ll[tid] = __shfl_down_sync(FULL_MASK, (1ll << 40) + tid, 3, 8);
}

// ---------------------------------------------------------------------------------------------------------
// Votes, reductions and matches
// ---------------------------------------------------------------------------------------------------------

// Even and odd lanes vote in two disjoint groups at the same time. out has 6 words per thread.
extern "C" __global__ void votes(unsigned* out) {
    const unsigned tid = common::linear_thread_index();
    const unsigned lane = lane_id();
    unsigned* o = out + 6 * tid;
    if (lane % 2 == 0) {
        o[0] = __ballot_sync(0x55555555u, lane % 3 == 0);
        o[1] = __any_sync(0x55555555u, lane == 30);
        o[2] = __all_sync(0x55555555u, lane < 31);
    } else {
        o[0] = __ballot_sync(0xaaaaaaaau, lane % 4 == 1);
        o[1] = __any_sync(0xaaaaaaaau, lane == 30);
        o[2] = __all_sync(0xaaaaaaaau, lane < 31);
    }
    // Only the lanes below 20 take part.
    if (lane < 20) o[3] = __ballot_sync(0x000fffffu, 1);
    else o[3] = 0;
    o[4] = __ballot_sync(FULL_MASK, 1);  // in a partial warp, only the existing lanes
    o[5] = __activemask();  // depends on which lanes have already exited: only partly checked
}

// out has 11 words per thread.
extern "C" __global__ void reductions(int* out) {
    const unsigned lane = lane_id();
    int* o = out + 11 * common::linear_thread_index();
    const int s = static_cast<int>(lane) * 3 - 40;
    o[0] = __reduce_add_sync(FULL_MASK, s);
    o[1] = __reduce_min_sync(FULL_MASK, s);
    o[2] = __reduce_max_sync(FULL_MASK, s);
    o[3] = static_cast<int>(__reduce_min_sync(FULL_MASK, static_cast<unsigned>(s)));  // unsigned compare
    o[4] = static_cast<int>(__reduce_max_sync(FULL_MASK, static_cast<unsigned>(s)));
    o[5] = static_cast<int>(__reduce_and_sync(FULL_MASK, 0xf0u | (1u << lane)));
    o[6] = static_cast<int>(__reduce_or_sync(FULL_MASK, 1u << lane));
    o[7] = static_cast<int>(__reduce_xor_sync(FULL_MASK, lane));
    if (lane < 20) o[8] = __reduce_add_sync(0x000fffffu, s);
    else o[8] = 0;
    int pred = -1;
    o[9] = static_cast<int>(__match_all_sync(FULL_MASK, 42, &pred));
    o[10] = pred;
}

// out has 3 words per thread.
extern "C" __global__ void matches(unsigned* out) {
    const unsigned lane = lane_id();
    unsigned* o = out + 3 * common::linear_thread_index();
    o[0] = __match_any_sync(FULL_MASK, lane % 5);
    o[1] = __match_any_sync(FULL_MASK, lane < 7 ? 1.5 : -2.0);  // 64-bit values
    int pred = -1;
    o[2] = __match_all_sync(FULL_MASK, lane % 2, &pred);
    if (pred != 0) o[2] = 0xdeadbeefu;
}

// out has 4 words per block.
extern "C" __global__ void barrier_votes(int* out) {
    const unsigned tid = common::linear_thread_index();
    int* o = out + 4 * blockIdx.x;
    const int count = __syncthreads_count(tid % 3 == 0);
    const int all = __syncthreads_and(tid < 100000);
    const int any = __syncthreads_or(tid == 77);
    const int none = __syncthreads_or(0);
    if (tid == 0) {
        o[0] = count;
        o[1] = all;
        o[2] = any;
        o[3] = none;
    }
}

// A warp reduction in shared memory that relies on __syncwarp, not on implicit lock-step.
extern "C" __global__ void syncwarp_reduce(const int* in, int* out) {
    __shared__ int buf[32];
    const unsigned lane = lane_id();
    buf[lane] = in[global_index()];
    __syncwarp();
    for (unsigned offset = 16; offset > 0; offset >>= 1) {
        int v = 0;
        if (lane < offset) v = buf[lane] + buf[lane + offset];
        __syncwarp();
        if (lane < offset) buf[lane] = v;
        __syncwarp();
    }
    if (lane == 0) out[blockIdx.x] = buf[0];
}

// ---------------------------------------------------------------------------------------------------------
// Atomics
// ---------------------------------------------------------------------------------------------------------

// Every thread of the grid hits the same counters, so with two workers the blocks contend for real.
extern "C" __global__ void atomics(AtomicCounters* c) {
    const unsigned g = global_index();
    const int gi = static_cast<int>(g);
    atomicAdd(&c->i_add, 1);
    atomicSub(&c->i_sub, 2);
    atomicAdd(&c->u_add, 3u);
    atomicInc(&c->u_inc, 99u);
    atomicDec(&c->u_dec, 99u);
    atomicAdd(&c->ull_add, 1ull << 33);
    atomicAdd_block(&c->u_add_block, 1u);
    atomicSub_system(&c->i_sub_system, 3);
    atomicOr(&c->ll_or, static_cast<long long>(1ull << (g % 64)));
    atomicAnd(&c->ll_and, static_cast<long long>(~(1ull << (g % 64))));
    atomicExch(&c->f_exch, 1.0f);
    atomicMax(&c->i_max, gi);
    atomicMin(&c->i_min, -gi);
    atomicMax(&c->u_max, g * 3u);
    atomicMin(&c->u_min, g + 10u);
    atomicMax(&c->ll_max, static_cast<long long>(g) << 32);
    atomicMin(&c->ll_min, -(static_cast<long long>(g) << 32));
    atomicMax(&c->ull_max, static_cast<unsigned long long>(g) << 40);
    atomicMin(&c->ull_min, static_cast<unsigned long long>(g) + (1ull << 50));
    atomicOr(&c->or_bits[g % 8], 1u << (g / 8 % 32));
    atomicAnd(&c->and_bits, ~(1u << (g % 32)));
    atomicXor(&c->xor_all, 1u << (g % 32));
    if (g < 96) atomicXor(&c->xor_three, 1u << (g % 32));
    atomicXor(&c->exch_xor, atomicExch(&c->exch, gi));
    // Increments through compare-and-swap loops, the usual way to build other atomics.
    int old = c->i_cas, assumed;
    do {
        assumed = old;
        old = atomicCAS(&c->i_cas, assumed, assumed + 1);
    } while (old != assumed);
    unsigned short old16 = c->us_cas, assumed16;
    do {
        assumed16 = old16;
        old16 = atomicCAS(&c->us_cas, assumed16, static_cast<unsigned short>(assumed16 + 1));
    } while (old16 != assumed16);
    unsigned long long old64 = c->ull_cas, assumed64;
    do {
        assumed64 = old64;
        old64 = atomicCAS(&c->ull_cas, assumed64, assumed64 + 2);
    } while (old64 != assumed64);
    // Float max through atomicCAS on the bit pattern (values are non-negative).
    const float mine = static_cast<float>(g * 37 % 1000) * 0.5f;
    int cur = __float_as_int(c->f_max_cas);
    while (__int_as_float(cur) < mine) {
        const int prev = atomicCAS(reinterpret_cast<int*>(&c->f_max_cas), cur, __float_as_int(mine));
        if (prev == cur) break;
        cur = prev;
    }
    atomicAdd(&c->f_add, 1.0f);
    atomicAdd(&c->d_add, 0.5);
    if (g < 2000) atomicAdd(&c->h_add, __float2half(1.0f));  // integers up to 2048 are exact in fp16
    if (g < 250) atomicAdd(&c->b_add, __float2bfloat16(1.0f));  // and up to 256 in bf16
    if (g < 1000) atomicAdd(&c->h2_add, __floats2half2_rn(1.0f, 0.5f));
    if (g < 100) atomicAdd(&c->b2_add, __floats2bfloat162_rn(1.0f, 2.0f));
    if (g < 100) atomicAdd(&c->f2_add, make_float2(1.0f, 2.0f));
}

// ---------------------------------------------------------------------------------------------------------
// fp16 / bf16 functions
// ---------------------------------------------------------------------------------------------------------

// out_h has 4 values per input triple: fma, exp, max, min. out_b the same for bf16.
extern "C" __global__ void half_ops(const __half* a, const __half* b, const __half* c, __half* out_h,
                                    const __nv_bfloat16* ba, const __nv_bfloat16* bb, const __nv_bfloat16* bc,
                                    __nv_bfloat16* out_b, int n) {
    const unsigned i = global_index();
    if (i >= static_cast<unsigned>(n)) return;
    out_h[4 * i + 0] = __hfma(a[i], b[i], c[i]);
    out_h[4 * i + 1] = hexp(a[i]);
    out_h[4 * i + 2] = __hmax(a[i], b[i]);
    out_h[4 * i + 3] = __hmin(a[i], b[i]);
    out_b[4 * i + 0] = __hfma(ba[i], bb[i], bc[i]);
    out_b[4 * i + 1] = hexp(ba[i]);
    out_b[4 * i + 2] = __hmax(ba[i], bb[i]);
    out_b[4 * i + 3] = __hmin(ba[i], bb[i]);
}

// ---------------------------------------------------------------------------------------------------------
// Integer, bit and conversion intrinsics, evaluated by one thread
// ---------------------------------------------------------------------------------------------------------

extern "C" __global__ void intrinsics(long long* out, float nan) {
    int k = 0;
    out[k++] = __popc(0xf0f0u);
    out[k++] = __popcll(0xffffffffffull);
    out[k++] = __clz(1);
    out[k++] = __clz(0);
    out[k++] = __clzll(1ll);
    out[k++] = __ffs(0x50);
    out[k++] = __ffs(0);
    out[k++] = __ffsll(1ll << 40);
    out[k++] = __brev(1u);
    out[k++] = static_cast<long long>(__brevll(1ull) >> 32);
    out[k++] = __umulhi(0xffffffffu, 2u);
    out[k++] = __mulhi(-2, 0x40000000);
    out[k++] = static_cast<long long>(__umul64hi(1ull << 63, 4ull));
    out[k++] = __float_as_int(1.0f);
    out[k++] = __float_as_uint(-0.0f);
    out[k++] = __double_as_longlong(1.0);
    out[k++] = static_cast<long long>(__int_as_float(0x40490fdb) * 1000.0f);
    out[k++] = min(-1, 1u);  // CUDA picks the unsigned overload
    out[k++] = max(-1, 1u);
    out[k++] = min(-3ll, 2ll);
    out[k++] = static_cast<long long>(max(2.5f, -1.0f) * 10.0f);
    out[k++] = __byte_perm(0x33221100u, 0x77665544u, 0x5410u);
    out[k++] = __funnelshift_l(0x80000000u, 0x1u, 1u);
    out[k++] = __funnelshift_r(0x1u, 0x3u, 1u);
    out[k++] = __float2int_rn(2.5f);
    out[k++] = __float2int_rn(3.5f);
    out[k++] = __float2int_rn(-1e10f);
    out[k++] = __float2int_rz(-2.7f);
    out[k++] = __float2int_rd(-2.2f);
    out[k++] = __float2int_ru(2.2f);
    out[k++] = __float2uint_rz(-3.0f);
    out[k++] = __float2int_rn(nan);
    out[k++] = static_cast<long long>(__saturatef(1.5f) * 10.0f);
    out[k++] = static_cast<long long>(__saturatef(nan) * 10.0f);
    out[k++] = __sad(-3, 4, 10u);
    out[k++] = __mul24(0xffffff, 2);
    out[k++] = __umul24(0x1000001u, 3u);
    // Approximate on the GPU, hence the rounding.
    out[k++] = __float2int_rn(rsqrtf(0.25f) * 100.0f);
    out[k++] = __float2int_rn(__fdividef(1.0f, 4.0f) * 100.0f);
    out[k++] = __float2int_rn(__expf(0.0f) + __logf(1.0f) + __sinf(0.0f) + __cosf(0.0f));
    out[k++] = __half_as_ushort(__float2half(1.0f));
    out[k++] = __bfloat16_as_ushort(__float2bfloat16(1.0f));
    out[k++] = static_cast<long long>(__fadd_rn(1.5f, 2.0f) * 10.0f + __fmul_rn(3.0f, 4.0f));
    out[k++] = static_cast<long long>(__fmaf_rn(2.0f, 3.0f, 1.0f) * 10.0f + __fdiv_rn(1.0f, 4.0f) * 100.0f);
    out[k++] = static_cast<long long>(__uint_as_float(0x3f800000u) * 10.0f +
                                      __longlong_as_double(0x4000000000000000ll));
    out[k++] = static_cast<long long>(__half2float(__float2half(0.1f)) * 1e6f);
    out[k++] = static_cast<long long>(__bfloat162float(__float2bfloat16(3.14159f)) * 1e4f);
}

// ---------------------------------------------------------------------------------------------------------
// Thread coordinates, dynamic shared memory, parameters
// ---------------------------------------------------------------------------------------------------------

// 12 words per thread, at the thread's linear index in the whole grid.
extern "C" __global__ void coords(unsigned* out) {
    const unsigned per_block = blockDim.x * blockDim.y * blockDim.z;
    const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned* o = out + 12 * (block * per_block + common::linear_thread_index());
    const unsigned v[12] = {threadIdx.x, threadIdx.y, threadIdx.z, blockIdx.x, blockIdx.y, blockIdx.z,
                            blockDim.x,  blockDim.y,  blockDim.z,  gridDim.x,  gridDim.y,  gridDim.z};
    for (int i = 0; i < 12; ++i) o[i] = v[i];
}

// Dynamic shared memory: it starts out as 0xff bytes in every block, holds a block-wide exchange, and can be
// declared twice with different types. out[tid] is the value of the mirrored thread; flags[block] counts the
// threads that saw only 0xff bytes in their part.
extern "C" __global__ void __launch_bounds__(256) dyn_smem(unsigned* out, int* flags, int words_per_thread) {
    CUDA_DYN_SHARED(unsigned, words);
    CUDA_DYN_SHARED(float, floats);
    const unsigned tid = threadIdx.x;
    bool fresh = true;
    for (int k = 0; k < words_per_thread; ++k) fresh = fresh && words[tid * words_per_thread + k] == 0xffffffffu;
    fresh = fresh && isnan(floats[tid * words_per_thread]);
    const int nfresh = __syncthreads_count(fresh);
    for (int k = 0; k < words_per_thread; ++k) words[tid * words_per_thread + k] = tid * 3 + k + blockIdx.x;
    __syncthreads();
    out[blockIdx.x * blockDim.x + tid] = words[(blockDim.x - 1 - tid) * words_per_thread];
    if (tid == 0) flags[blockIdx.x] = nfresh;
}

__constant__ float kOffsets[4] = {0.0f, 0.25f, 0.5f, 0.75f};

__host__ __device__ __forceinline__ float affine(float x, float4 c) { return c.x * x + c.y; }

// Scalar and struct parameters by value, __constant__ data, streaming loads and stores.
extern "C" __global__ void params(float* __restrict__ out, const float* __restrict__ in, float4 coeffs, int n,
                                  double scale, char tag) {
    const unsigned i = global_index();
    if (i < static_cast<unsigned>(n)) {
        __stcs(&out[i], affine(__ldcs(&in[i]), coeffs) * static_cast<float>(scale) + tag + kOffsets[i % 4]);
    }
}

// Which thread runs first: tickets from an atomic counter, in the order threads reach it.
extern "C" __global__ void order_probe(int* ticket, int* counter) {
    ticket[common::linear_thread_index()] = atomicAdd(counter, 1);
}

// Records which worker ran each block: in the emulator, static shared memory is per OS thread, so its address
// tells the workers apart. The loop makes a block last long enough for helper workers to join.
extern "C" __global__ void which_worker(unsigned long long* out, int spin) {
    __shared__ int marker;
    int x = 0;
    for (int i = 0; i < spin; ++i) x += i ^ static_cast<int>(threadIdx.x);
    if (threadIdx.x == 0) out[blockIdx.x] = reinterpret_cast<unsigned long long>(&marker) + (x == -1 ? 1 : 0);
}

// Warp 1 spins until warp 0 has published a value: __nanosleep lets warp 0 run in the emulator.
extern "C" __global__ void spin_handoff(int* out) {
    __shared__ volatile int flag;
    __shared__ volatile int data;
    const unsigned tid = threadIdx.x;
    if (tid == 0) flag = 0;
    __syncthreads();
    if (tid >= 32) {
        while (flag == 0) __nanosleep(100);
        __threadfence_block();
        out[blockIdx.x * blockDim.x + tid] = data + static_cast<int>(tid);
    } else if (tid == 0) {
        data = 42 + static_cast<int>(blockIdx.x);
        __threadfence_block();
        flag = 1;
    }
}

// ---------------------------------------------------------------------------------------------------------
// common.cuh
// ---------------------------------------------------------------------------------------------------------

// One block per row of `n` values: sum, max and min of the row (every thread checks it got the same result
// as thread 0; mismatches are counted in out[4 * row + 3]).
extern "C" __global__ void block_reduce_rows(const float* in, float* out, int n) {
    __shared__ float scratch[32];
    const float* row = in + static_cast<long long>(blockIdx.x) * n;
    const unsigned tid = common::linear_thread_index();
    const unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
    float s = 0.0f, mx = -INFINITY, mn = INFINITY;
    for (unsigned i = tid; i < static_cast<unsigned>(n); i += nthreads) {
        s += row[i];
        mx = fmaxf(mx, row[i]);
        mn = fminf(mn, row[i]);
    }
    // Three reductions in a row through the same scratch: block_reduce's final barrier makes that safe.
    s = common::block_reduce(s, common::SumOp(), scratch);
    mx = common::block_reduce(mx, common::MaxOp(), scratch);
    mn = common::block_reduce(mn, common::MinOp(), scratch);
    float* o = out + 4 * blockIdx.x;
    if (tid == 0) {
        o[0] = s;
        o[1] = mx;
        o[2] = mn;
        o[3] = 0.0f;
    }
    __syncthreads();
    if (o[0] != s || o[1] != mx || o[2] != mn) atomicAdd(&o[3], 1.0f);
}

// Integer block sum and full-warp reductions; out[block] and warp_out[thread] (sum, max, min of the warp).
extern "C" __global__ void reduce_int(const int* in, long long* out, int* warp_out) {
    __shared__ long long scratch[32];
    const unsigned g = global_index();
    const long long total = common::block_reduce(static_cast<long long>(in[g]), common::SumOp(), scratch);
    if (common::linear_thread_index() == 0) out[blockIdx.x] = total;
    warp_out[3 * g + 0] = common::warp_reduce(in[g], common::SumOp());
    warp_out[3 * g + 1] = common::warp_reduce(in[g], common::MaxOp());
    warp_out[3 * g + 2] = common::warp_reduce(in[g], common::MinOp());
}

// ---------------------------------------------------------------------------------------------------------
// Benchmarks
// ---------------------------------------------------------------------------------------------------------

extern "C" __global__ void add_f32(const float* a, const float* b, float* c, int n) {
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < static_cast<unsigned>(n); i += stride) {
        c[i] = __ldg(&a[i]) + __ldg(&b[i]);
    }
}

extern "C" __global__ void sum_f32(const float* x, float* total, int n) {
    __shared__ float scratch[32];
    const unsigned stride = gridDim.x * blockDim.x;
    float s = 0.0f;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < static_cast<unsigned>(n); i += stride) s += x[i];
    s = common::block_reduce(s, common::SumOp(), scratch);
    if (threadIdx.x == 0) atomicAdd(total, s);
}

// `rounds` barriers per thread, to measure their cost.
extern "C" __global__ void barriers(int* out, int rounds) {
    __shared__ int acc[1024];
    acc[threadIdx.x] = 0;
    for (int r = 0; r < rounds; ++r) {
        __syncthreads();
        acc[threadIdx.x] += r;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc[threadIdx.x];
}

// ---------------------------------------------------------------------------------------------------------
// Deliberate bugs
// ---------------------------------------------------------------------------------------------------------

// Block max and block sum through one partial[] array, with the barrier between the two reductions
// missing: a warp that runs ahead overwrites partial[] with its sum while slower warps still read the
// maxima. out[global thread] is the maximum that thread saw. With `fixed` the barrier is there.
extern "C" __global__ void bug_missing_sync(const float* in, float* out, float* sums, int fixed) {
    __shared__ float partial[32];
    const unsigned tid = threadIdx.x;
    const unsigned lane = tid % 32, warp = tid / 32, nwarps = blockDim.x / 32;
    const float v = in[blockIdx.x * blockDim.x + tid];
    const float warp_max = common::warp_reduce(v, common::MaxOp());
    if (lane == 0) partial[warp] = warp_max;
    __syncthreads();
    float block_max = partial[0];
    for (unsigned w = 1; w < nwarps; ++w) block_max = fmaxf(block_max, partial[w]);
    if (fixed) __syncthreads();
    const float warp_sum = common::warp_reduce(v, common::SumOp());
    if (lane == 0) partial[warp] = warp_sum;
    __syncthreads();
    if (tid == 0) {
        float s = 0.0f;
        for (unsigned w = 0; w < nwarps; ++w) s += partial[w];
        sums[blockIdx.x] = s;
    }
    out[blockIdx.x * blockDim.x + tid] = block_max;
}

// Threads past n return early; the rest then shuffle with a full mask, which names the exited lanes.
extern "C" __global__ void bug_early_return_shfl(int* out, int n) {
    const unsigned tid = threadIdx.x;
    if (tid >= static_cast<unsigned>(n)) return;
    out[tid] = __shfl_xor_sync(FULL_MASK, static_cast<int>(tid), 1);
}

// A barrier in a branch that only part of the block takes.
extern "C" __global__ void bug_divergent_barrier(int* out) {
    if (threadIdx.x < 64) {
        __syncthreads();
        out[threadIdx.x] = 1;
    }
}

// A thread-dependent number of barriers (one or two), then a warp shuffle: the odd lanes wait at their second
// barrier while the even lanes wait in the shuffle for them.
extern "C" __global__ void bug_barrier_count(int* out) {
    for (unsigned i = 0; i <= (threadIdx.x & 1u); ++i) __syncthreads();
    out[threadIdx.x] = __shfl_xor_sync(FULL_MASK, static_cast<int>(threadIdx.x), 1);
}

// A thread-dependent number of barriers (zero to two), then the threads return.
extern "C" __global__ void bug_barrier_loop_exit(int* out) {
    for (unsigned i = 0; i < threadIdx.x % 3; ++i) __syncthreads();
    out[threadIdx.x] = 1;
}

extern "C" __global__ void bug_assert(int* out, int n) {
    assert(static_cast<int>(threadIdx.x) < n);
    out[threadIdx.x] = 1;
}

// Lane 1 passes a mask that does not contain it.
extern "C" __global__ void bug_mask_without_caller(int* out) {
    const unsigned lane = lane_id();
    if (lane < 2) out[lane] = __shfl_sync(0x1u, static_cast<int>(lane), 0);
}

// Lanes 0-15 read lanes 16-31, which are not in their mask.
extern "C" __global__ void bug_read_outside_mask(int* out) {
    const unsigned lane = lane_id();
    if (lane < 16) out[lane] = __shfl_sync(0x0000ffffu, static_cast<int>(lane), static_cast<int>(lane) + 16);
}

// Even lanes vote with __ballot_sync, odd ones with __any_sync, under the same full mask.
extern "C" __global__ void bug_mismatched_collectives(unsigned* out) {
    const unsigned lane = lane_id();
    if (lane % 2 == 0) out[lane] = __ballot_sync(FULL_MASK, 1);
    else out[lane] = static_cast<unsigned>(__any_sync(FULL_MASK, 1));
}

extern "C" __global__ void bug_trap(int* out) {
    if (threadIdx.x == 5) __trap();
    out[threadIdx.x] = 1;
}
