// Reductions over any set of dims, and softmax / log_softmax along one dim. One block per
// output (a grid-stride loop over outputs when there are more than blocks): each thread folds
// the reduced elements k = tid, tid + blockDim.x, ... in order, then the block combines the
// per-thread values in a fixed tree. The result does not depend on the scheduling order.
//
// Offsets come from a KcReduction: output o maps to an input offset through the kept dims
// (outer_*) and to an output offset through out_strides; reduced element k maps through the
// reduced dims (inner_*). Sizes are innermost first, so k runs in the row-major order of the
// reduced dims, which makes "first index on ties" mean what it means on the CPU.
#include "scalar.cuh"
#include "common.cuh"

// Threads per block of every kernel here (the launch uses exactly this many).
#define KC_REDUCE_THREADS 256

namespace {

struct RowOffsets {
    int64_t in;
    int64_t out;
};

__device__ __forceinline__ RowOffsets row_offsets(const KcReduction& r, int64_t o) {
    RowOffsets ro = {0, 0};
    for (int d = 0; d < r.outer_ndim; ++d) {
        const int64_t size = r.outer_sizes[d];
        const int64_t i = o % size;
        o /= size;
        ro.in += i * r.outer_strides[d];
        ro.out += i * r.out_strides[d];
    }
    return ro;
}

__device__ __forceinline__ int64_t inner_offset(const KcReduction& r, int64_t k) {
    int64_t off = 0;
    for (int d = 0; d < r.inner_ndim; ++d) {
        const int64_t size = r.inner_sizes[d];
        off += (k % size) * r.inner_strides[d];
        k /= size;
    }
    return off;
}

// Integer sums and products wrap (two's complement), as on the CPU.
struct WrapSum {
    __device__ int64_t operator()(int64_t a, int64_t b) const {
        return (int64_t)((unsigned long long)a + (unsigned long long)b);
    }
    __device__ float operator()(float a, float b) const { return a + b; }
    __device__ double operator()(double a, double b) const { return a + b; }
};
struct WrapProd {
    __device__ int64_t operator()(int64_t a, int64_t b) const {
        return (int64_t)((unsigned long long)a * (unsigned long long)b);
    }
    __device__ float operator()(float a, float b) const { return a * b; }
    __device__ double operator()(double a, double b) const { return a * b; }
};

// sum / prod: out[o] = fold of in over the reduced elements, in the accumulation type.
template <typename T, typename Op>
__device__ void fold(const KcReduction& r, T* out, const T* in, Op op, typename kc::Acc<T>::type identity) {
    typedef typename kc::Acc<T>::type A;
    __shared__ A scratch[32];
    for (int64_t o = blockIdx.x; o < r.outputs; o += gridDim.x) {
        const RowOffsets ro = row_offsets(r, o);
        A acc = identity;
        for (int64_t k = threadIdx.x; k < r.reduced; k += blockDim.x) {
            acc = op(acc, kc::convert<A>(in[ro.in + inner_offset(r, k)]));
        }
        acc = common::block_reduce(acc, op, scratch);
        if (threadIdx.x == 0) out[ro.out] = kc::convert<T>(acc);
    }
}

template <typename A> __device__ __forceinline__ bool nan_(A v) { return v != v; }

// Whether (bv, bi) replaces (av, ai) as the max (or min): NaN wins (the first NaN), then the
// larger (smaller) value, then the smaller index on ties.
template <typename A> __device__ __forceinline__ bool replaces(A av, int64_t ai, A bv, int64_t bi, bool max) {
    const bool an = nan_(av), bn = nan_(bv);
    if (an || bn) return bn && (!an || bi < ai);
    if (bv == av) return bi < ai;
    return max ? bv > av : bv < av;
}

// max / min with the index of the extreme along the reduced elements. `reduced` >= 1.
template <typename T>
__device__ void extreme(const KcReduction& r, T* vals, int64_t* idx, const T* in, bool max) {
    typedef typename kc::Acc<T>::type A;
    __shared__ A sv[KC_REDUCE_THREADS];
    __shared__ int64_t si[KC_REDUCE_THREADS];
    const unsigned tid = threadIdx.x;
    for (int64_t o = blockIdx.x; o < r.outputs; o += gridDim.x) {
        const RowOffsets ro = row_offsets(r, o);
        A best = A();
        int64_t at = -1;
        for (int64_t k = tid; k < r.reduced; k += blockDim.x) {
            const A v = kc::convert<A>(in[ro.in + inner_offset(r, k)]);
            if (at < 0 || replaces(best, at, v, k, max)) {
                best = v;
                at = k;
            }
        }
        sv[tid] = best;
        si[tid] = at;
        __syncthreads();
        for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
            if (tid < s && si[tid + s] >= 0 && (si[tid] < 0 || replaces(sv[tid], si[tid], sv[tid + s], si[tid + s], max))) {
                sv[tid] = sv[tid + s];
                si[tid] = si[tid + s];
            }
            __syncthreads();
        }
        if (tid == 0) {
            vals[ro.out] = kc::convert<T>(sv[0]);
            idx[ro.out] = si[0];
        }
        __syncthreads();
    }
}

// softmax / log_softmax along the one reduced dim (inner_ndim == 1); `out` has the layout of
// `in` (the caller allocates it so), so one offset addresses both.
template <typename T>
__device__ void softmax_rows(const KcReduction& r, T* out, const T* in, bool take_log) {
    typedef typename kc::Acc<T>::type A;
    __shared__ A scratch[32];
    for (int64_t o = blockIdx.x; o < r.outputs; o += gridDim.x) {
        const RowOffsets ro = row_offsets(r, o);
        const int64_t step = r.inner_strides[0];
        A m = -INFINITY;
        for (int64_t k = threadIdx.x; k < r.reduced; k += blockDim.x) m = common::MaxOp()(m, kc::convert<A>(in[ro.in + k * step]));
        m = common::block_reduce(m, common::MaxOp(), scratch);
        A s = 0;
        for (int64_t k = threadIdx.x; k < r.reduced; k += blockDim.x) s += exp(kc::convert<A>(in[ro.in + k * step]) - m);
        s = common::block_reduce(s, common::SumOp(), scratch);
        const A ls = take_log ? (A)log(s) : (A)0;
        for (int64_t k = threadIdx.x; k < r.reduced; k += blockDim.x) {
            const A x = kc::convert<A>(in[ro.in + k * step]);
            out[ro.in + k * step] = kc::convert<T>(take_log ? x - m - ls : exp(x - m) / s);
        }
    }
}

// cumsum / cumprod along the one reduced dim (inner_ndim <= 1), into `out` laid out like `in`.
// Each thread folds a contiguous chunk of the line, thread 0 scans the chunk totals in order, and
// each thread rescans its chunk from its offset: the same association in every run, whatever the
// scheduling order.
template <typename T, typename Op>
__device__ void scan_rows(const KcReduction& r, T* out, const T* in, Op op, typename kc::Acc<T>::type identity) {
    typedef typename kc::Acc<T>::type A;
    __shared__ A partial[KC_REDUCE_THREADS];
    const int64_t n = r.reduced;
    const int64_t chunk = (n + blockDim.x - 1) / blockDim.x;
    const int64_t begin = min(n, (int64_t)threadIdx.x * chunk);
    const int64_t end = min(n, begin + chunk);
    for (int64_t o = blockIdx.x; o < r.outputs; o += gridDim.x) {
        const RowOffsets ro = row_offsets(r, o);
        const int64_t step = r.inner_ndim > 0 ? r.inner_strides[0] : 0;
        A acc = identity;
        for (int64_t k = begin; k < end; ++k) acc = op(acc, kc::convert<A>(in[ro.in + k * step]));
        partial[threadIdx.x] = acc;
        __syncthreads();
        if (threadIdx.x == 0) {
            A run = identity;
            for (unsigned t = 0; t < blockDim.x; ++t) {
                const A v = partial[t];
                partial[t] = run;
                run = op(run, v);
            }
        }
        __syncthreads();
        acc = partial[threadIdx.x];
        for (int64_t k = begin; k < end; ++k) {
            acc = op(acc, kc::convert<A>(in[ro.in + k * step]));
            out[ro.in + k * step] = kc::convert<T>(acc);
        }
        __syncthreads();
    }
}

}  // namespace

// ---- entry points ------------------------------------------------------------------------------

#define KC_FLOAT_FOLDS(sfx, T)                                                                              \
    extern "C" __global__ void __launch_bounds__(KC_REDUCE_THREADS) sum_##sfx(KcReduction r, T* out, const T* in) {  \
        fold(r, out, in, WrapSum(), (kc::Acc<T>::type)0);                                                    \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(KC_REDUCE_THREADS) prod_##sfx(KcReduction r, T* out, const T* in) { \
        fold(r, out, in, WrapProd(), (kc::Acc<T>::type)1);                                                   \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(KC_REDUCE_THREADS) softmax_##sfx(KcReduction r, T* out, const T* in) { \
        softmax_rows(r, out, in, false);                                                                    \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(KC_REDUCE_THREADS) log_softmax_##sfx(KcReduction r, T* out, const T* in) { \
        softmax_rows(r, out, in, true);                                                                     \
    }
KC_FOR_FLOAT_TYPES(KC_FLOAT_FOLDS)

#define KC_SCANS(sfx, T)                                                                                    \
    extern "C" __global__ void __launch_bounds__(KC_REDUCE_THREADS) cumsum_##sfx(KcReduction r, T* out, const T* in) { \
        scan_rows(r, out, in, WrapSum(), (kc::Acc<T>::type)0);                                              \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(KC_REDUCE_THREADS) cumprod_##sfx(KcReduction r, T* out, const T* in) { \
        scan_rows(r, out, in, WrapProd(), (kc::Acc<T>::type)1);                                             \
    }
KC_FOR_FLOAT_TYPES(KC_SCANS)
KC_SCANS(i64, int64_t)

// Integer sums and products accumulate in int64 (the caller converts the input to int64 first,
// as PyTorch's integer sums give int64).
extern "C" __global__ void __launch_bounds__(KC_REDUCE_THREADS) sum_i64(KcReduction r, int64_t* out, const int64_t* in) {
    fold(r, out, in, WrapSum(), (int64_t)0);
}
extern "C" __global__ void __launch_bounds__(KC_REDUCE_THREADS) prod_i64(KcReduction r, int64_t* out, const int64_t* in) {
    fold(r, out, in, WrapProd(), (int64_t)1);
}

#define KC_EXTREMES(sfx, T)                                                                                 \
    extern "C" __global__ void __launch_bounds__(KC_REDUCE_THREADS) max_##sfx(KcReduction r, T* vals, int64_t* idx, const T* in) { \
        extreme(r, vals, idx, in, true);                                                                    \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(KC_REDUCE_THREADS) min_##sfx(KcReduction r, T* vals, int64_t* idx, const T* in) { \
        extreme(r, vals, idx, in, false);                                                                   \
    }
KC_FOR_FLOAT_TYPES(KC_EXTREMES)
KC_FOR_INT_TYPES(KC_EXTREMES)
