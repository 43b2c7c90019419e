// Sorting along one dim (sort, argsort): a stable sort of every line of a contiguous
// [lines, n] input, NaN ordered above every number as torch.sort orders it.
//
// Note [Sorting by rank]: each thread takes one element and counts the elements of its line
// that come before it (smaller, or equal and earlier in the line); that count is the element's
// place in the sorted line, so it writes its value and its index there. Ranks are distinct
// (ties are broken by position), so every output is written exactly once, the sort is stable,
// and nothing depends on the schedule. The work is n^2 per line of n: right for the short lines
// of models (top-k over classes, argsort of a few thousand scores); a radix sort is the
// follow-up for long lines.
#include "scalar.cuh"

namespace {

__device__ __forceinline__ int64_t first_index() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return (int64_t)blockDim.x * gridDim.x; }

template <typename A> __device__ __forceinline__ bool nan_(A v) { return v != v; }

// Whether value `a` sorts strictly before `b` (ascending: smaller first; descending: larger
// first), NaN being the largest value and NaNs equal to each other.
template <typename A> __device__ __forceinline__ bool before(A a, A b, bool descending) {
    const bool na = nan_(a), nb = nan_(b);
    if (na || nb) return descending ? (na && !nb) : (nb && !na);
    return descending ? a > b : a < b;
}

template <typename T>
__device__ void sort_rank(int64_t lines, int64_t n, T* values, int64_t* indices, const T* in, bool descending) {
    typedef typename kc::Acc<T>::type A;
    for (int64_t i = first_index(); i < lines * n; i += grid_stride()) {
        const int64_t base = i - i % n;
        const int64_t p = i - base;
        const A x = kc::convert<A>(in[i]);
        int64_t rank = 0;
        for (int64_t j = 0; j < n; ++j) {
            const A y = kc::convert<A>(in[base + j]);
            // y before x, or tied with x and earlier in the line.
            rank += before(y, x, descending) || (j < p && !before(x, y, descending));
        }
        values[base + rank] = in[i];
        indices[base + rank] = p;
    }
}

}  // namespace

// ---- entry points ------------------------------------------------------------------------------

#define KC_SORT(sfx, T)                                                                                  \
    extern "C" __global__ void sort_##sfx(int64_t lines, int64_t n, T* values, int64_t* indices,         \
                                          const T* in, bool descending) {                                \
        sort_rank<T>(lines, n, values, indices, in, descending);                                         \
    }
KC_FOR_FLOAT_TYPES(KC_SORT)
KC_FOR_INT_TYPES(KC_SORT)
KC_SORT(b8, bool)
