// common.cuh: helpers shared by the kernels. Compiles with nvcc and with the CPU emulator
// (emu/cuda_cpu.h, force-included before this file).
#pragma once

#include <math.h>

// Dynamic shared memory, the one construct the two builds spell differently. Declare it with
// CUDA_DYN_SHARED(float, row); and use `row` as a float*. The emulator defines the macro first.
#ifndef CUDA_DYN_SHARED
#define CUDA_DYN_SHARED(T, name)                                         \
    extern __shared__ __align__(16) unsigned char cuda_dyn_smem_raw_[];  \
    T* name = reinterpret_cast<T*>(cuda_dyn_smem_raw_)
#endif

namespace common {

// Reduction operators. Max and min propagate NaN, as torch.max and torch.min do.
struct SumOp {
    template <typename T>
    __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};

template <typename T>
__device__ __forceinline__ bool is_nan(T) { return false; }
__device__ __forceinline__ bool is_nan(float x) { return isnan(x); }
__device__ __forceinline__ bool is_nan(double x) { return isnan(x); }

struct MaxOp {
    template <typename T>
    __device__ __forceinline__ T operator()(T a, T b) const { return (b > a || is_nan(b)) ? b : a; }
};

struct MinOp {
    template <typename T>
    __device__ __forceinline__ T operator()(T a, T b) const { return (b < a || is_nan(b)) ? b : a; }
};

__device__ __forceinline__ unsigned linear_thread_index() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

// Reduces `v` over all 32 lanes of a warp with butterfly shuffles; every lane gets the result. All 32 lanes
// must exist and call it: use block_reduce for blocks whose size is not a multiple of 32.
template <typename T, typename Op>
__device__ __forceinline__ T warp_reduce(T v, Op op) {
    for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

// Reduces `v` over lanes [0, n) of the warp into lane 0. Every existing lane calls it with a full mask (the
// lanes past the end of a partial warp do not exist, which the mask allows); values that come from lanes
// >= n are read but not used.
template <typename T, typename Op>
__device__ __forceinline__ T warp_reduce_to_lane0(T v, Op op, unsigned lane, unsigned n) {
    for (unsigned offset = 16; offset > 0; offset >>= 1) {
        const T other = __shfl_down_sync(0xffffffffu, v, offset);
        if (lane + offset < n) v = op(v, other);
    }
    return v;
}

// Reduces one value per thread over the whole block, of any shape and size; every thread gets the result.
// `scratch` is shared memory for at least 32 values of T. Every thread of the block must call it. It ends
// with a barrier, so the caller may reuse `scratch` (e.g. for the next reduction) right away.
template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T* scratch) {
    const unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
    const unsigned tid = linear_thread_index();
    const unsigned lane = tid % 32;
    const unsigned warp = tid / 32;
    const unsigned nwarps = (nthreads + 31) / 32;
    v = warp_reduce_to_lane0(v, op, lane, min(32u, nthreads - warp * 32));
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        // Lanes past the last warp hold a copy of their own value; it is never used.
        T partial = lane < nwarps ? scratch[lane] : v;
        partial = warp_reduce_to_lane0(partial, op, lane, nwarps);
        if (lane == 0) scratch[0] = partial;
    }
    __syncthreads();
    const T result = scratch[0];
    __syncthreads();
    return result;
}

}  // namespace common
