// Pooling over windows (aten's native/pool.rs, Note [Pooling windows]): max pooling with the
// flat in-plane index of each maximum, and average pooling, for strided, padded, dilated and
// adaptive windows alike. The host computes each dim's windows once (KcPool in args.h); one
// thread per output element walks its window in the CPU's order (dim 0 outermost), so the
// results and the indices are the CPU kernel's: the first maximum wins, a NaN replaces the
// running maximum (so the last NaN's index is kept), and an average sums in the opmath type
// before dividing.
#include "scalar.cuh"

namespace {

__device__ __forceinline__ int64_t first_index() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return (int64_t)blockDim.x * gridDim.x; }

// One dim's window of output position o: (first, step, count, padded_count).
struct Window {
    int64_t first, step, count, padded;
};

__device__ __forceinline__ Window window(const int64_t* table, int64_t row) {
    const int64_t* w = table + 4 * row;
    return Window{w[0], w[1], w[2], w[3]};
}

// The output element i's window in each dim, and its plane.
struct Windows {
    int64_t plane;
    Window w[3];
};

__device__ __forceinline__ Windows windows_of(const KcPool& g, const int64_t* table, int64_t i) {
    Windows r;
    const int64_t x = i % g.out[2];
    int64_t rest = i / g.out[2];
    const int64_t y = rest % g.out[1];
    rest /= g.out[1];
    const int64_t z = rest % g.out[0];
    r.plane = rest / g.out[0];
    r.w[0] = window(table, z);
    r.w[1] = window(table, g.out[0] + y);
    r.w[2] = window(table, g.out[0] + g.out[1] + x);
    return r;
}

template <typename T> __device__ __forceinline__ bool is_nan(T v) { return v != v; }

// Max pooling of any dtype: the running maximum starts at the window's first element (every
// window has one: the host rejects empty windows), which is what the CPU's start at -inf with
// the first element's index gives for every value, -inf and NaN included.
template <typename T> __device__ void pool_max(const KcPool& g, T* out, int64_t* idx, const T* x, const int64_t* table) {
    typedef typename kc::Acc<T>::type A;
    const int64_t total = g.planes * g.out[0] * g.out[1] * g.out[2];
    const int64_t hw = g.input[1] * g.input[2];
    const int64_t plane_size = g.input[0] * hw;
    for (int64_t i = first_index(); i < total; i += grid_stride()) {
        const Windows ws = windows_of(g, table, i);
        const T* xs = x + ws.plane * plane_size;
        int64_t best_i = ws.w[0].first * hw + ws.w[1].first * g.input[2] + ws.w[2].first;
        A best = kc::convert<A>(xs[best_i]);
        for (int64_t a = 0; a < ws.w[0].count; ++a) {
            const int64_t zd = (ws.w[0].first + a * ws.w[0].step) * hw;
            for (int64_t b = 0; b < ws.w[1].count; ++b) {
                const int64_t zh = zd + (ws.w[1].first + b * ws.w[1].step) * g.input[2];
                for (int64_t c = 0; c < ws.w[2].count; ++c) {
                    const int64_t at = zh + ws.w[2].first + c * ws.w[2].step;
                    const A v = kc::convert<A>(xs[at]);
                    if (v > best || is_nan(v)) {
                        best = v;
                        best_i = at;
                    }
                }
            }
        }
        out[i] = kc::convert<T>(best);
        idx[i] = best_i;
    }
}

// Average pooling of floats: the window's sum in the opmath type over the divisor (PyTorch's
// divisor_override may be negative; only 0 is refused, on the host).
template <typename T> __device__ void pool_avg(const KcPool& g, T* out, const T* x, const int64_t* table) {
    typedef typename kc::Acc<T>::type A;
    const int64_t total = g.planes * g.out[0] * g.out[1] * g.out[2];
    const int64_t hw = g.input[1] * g.input[2];
    const int64_t plane_size = g.input[0] * hw;
    for (int64_t i = first_index(); i < total; i += grid_stride()) {
        const Windows ws = windows_of(g, table, i);
        const T* xs = x + ws.plane * plane_size;
        A sum = 0;
        for (int64_t a = 0; a < ws.w[0].count; ++a) {
            const int64_t zd = (ws.w[0].first + a * ws.w[0].step) * hw;
            for (int64_t b = 0; b < ws.w[1].count; ++b) {
                const int64_t zh = zd + (ws.w[1].first + b * ws.w[1].step) * g.input[2];
                for (int64_t c = 0; c < ws.w[2].count; ++c) {
                    sum += kc::convert<A>(xs[zh + ws.w[2].first + c * ws.w[2].step]);
                }
            }
        }
        int64_t divisor = g.divisor;
        if (divisor == 0) {
            divisor = g.include_pad ? ws.w[0].padded * ws.w[1].padded * ws.w[2].padded
                                    : ws.w[0].count * ws.w[1].count * ws.w[2].count;
        }
        out[i] = kc::convert<T>(sum / kc::convert<A>(divisor));
    }
}

}  // namespace

// ---- entry points ------------------------------------------------------------------------------

#define KC_POOL_MAX(sfx, T)                                                                              \
    extern "C" __global__ void pool_max_##sfx(KcPool g, T* out, int64_t* idx, const T* x, const int64_t* table) { \
        pool_max<T>(g, out, idx, x, table);                                                              \
    }
#define KC_POOL_AVG(sfx, T)                                                                              \
    extern "C" __global__ void pool_avg_##sfx(KcPool g, T* out, const T* x, const int64_t* table) {     \
        pool_avg<T>(g, out, x, table);                                                                   \
    }
KC_FOR_FLOAT_TYPES(KC_POOL_MAX)
KC_FOR_INT_TYPES(KC_POOL_MAX)
KC_FOR_FLOAT_TYPES(KC_POOL_AVG)
