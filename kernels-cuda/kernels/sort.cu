// Sorting along one dim (sort, argsort): a stable sort of every line of a contiguous
// [lines, n] input, NaN ordered above every number as torch.sort orders it.
//
// Note [Sorting by rank]: each thread takes one element and counts the elements of its line
// that come before it (smaller, or equal and earlier in the line); that count is the element's
// place in the sorted line, so it writes its value and its index there. Ranks are distinct
// (ties are broken by position), so every output is written exactly once, the sort is stable,
// and nothing depends on the schedule. The work is n^2 per line of n: right for the short lines
// of models (top-k over classes); longer lines are merged (Note [Merging sorted runs]).
//
// Note [Merging sorted runs]: a long line is sorted by ceil(log2 n) passes, pass w merging the
// neighbouring sorted runs of w elements (runs 2k and 2k + 1) into runs of 2w. Each thread
// takes one element and finds its place in the merged run by a binary search of the
// neighbouring run: an element of the left run goes after the neighbours that sort strictly
// before it, one of the right run after those that do not sort after it, so equal keys keep
// their left-run-first order and the merge is stable. Places are distinct, so every output is
// written once and nothing depends on the schedule. n log^2 n work in all, no atomics, no
// shared memory. The values and their positions ping-pong between the output and a scratch
// pair; the first pass reads the input with positions 0..n.
//
// Note [Runs of a sorted vector]: the groups of equal keys of a sorted int64 vector (the
// grouping of coalesce, to_dense, index_add and embedding's gradient) as each run's first
// position and key, in three launches without atomics: every thread counts the run heads (a
// position whose key differs from the previous one) of its chunk of positions; one thread turns
// the counts into each chunk's first run number (an exclusive scan, the total after it); every
// thread walks its chunk again and writes starts[run] and keys[run] at each head, and the
// thread of the last chunk writes starts[total] = n.
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

template <typename T>
__device__ void merge_runs(int64_t lines, int64_t n, int64_t width, T* values, int64_t* indices, const T* in,
                           const int64_t* in_indices, bool descending) {
    typedef typename kc::Acc<T>::type A;
    for (int64_t i = first_index(); i < lines * n; i += grid_stride()) {
        const int64_t base = i - i % n;
        const int64_t p = i - base;
        const int64_t start = p - p % width;
        const bool left = (p / width) % 2 == 0;
        // The neighbouring run [lo, hi) (empty for a last left run without one) and where the
        // merged run begins.
        const int64_t lo = left ? start + width : start - width;
        int64_t hi = left ? start + 2 * width : start;
        if (hi > n) hi = n;
        if (hi < lo) hi = lo;
        const int64_t merged = left ? start : lo;
        const A x = kc::convert<A>(in[i]);
        // The first neighbour that does not go before x: the neighbours that do form a prefix.
        int64_t a = lo, b = hi;
        while (a < b) {
            const int64_t m = a + (b - a) / 2;
            const A y = kc::convert<A>(in[base + m]);
            const bool goes_before = left ? before(y, x, descending) : !before(x, y, descending);
            if (goes_before) a = m + 1; else b = m;
        }
        const int64_t dest = base + merged + (p - start) + (a - lo);
        values[dest] = in[i];
        indices[dest] = in_indices ? in_indices[i] : p;
    }
}

// Whether position p of `sorted` starts a run.
__device__ __forceinline__ bool run_head(const int64_t* sorted, int64_t p) { return p == 0 || sorted[p] != sorted[p - 1]; }

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

#define KC_MERGE(sfx, T)                                                                                 \
    extern "C" __global__ void merge_##sfx(int64_t lines, int64_t n, int64_t width, T* values,           \
                                           int64_t* indices, const T* in, const int64_t* in_indices,     \
                                           bool descending) {                                            \
        merge_runs<T>(lines, n, width, values, indices, in, in_indices, descending);                     \
    }
KC_FOR_FLOAT_TYPES(KC_MERGE)
KC_FOR_INT_TYPES(KC_MERGE)
KC_MERGE(b8, bool)

// Note [Runs of a sorted vector], pass 1: counts[c] = the run heads among positions
// [c * chunk, (c + 1) * chunk) of the n sorted keys.
extern "C" __global__ void runs_count(int64_t n, int64_t chunk, const int64_t* sorted, int64_t* counts) {
    const int64_t chunks = (n + chunk - 1) / chunk;
    for (int64_t c = first_index(); c < chunks; c += grid_stride()) {
        const int64_t end = (c + 1) * chunk < n ? (c + 1) * chunk : n;
        int64_t k = 0;
        for (int64_t p = c * chunk; p < end; ++p) k += run_head(sorted, p);
        counts[c] = k;
    }
}

// Pass 2, one thread: counts[0..chunks) become their exclusive prefix sums, counts[chunks] the
// total.
extern "C" __global__ void runs_scan(int64_t chunks, int64_t* counts) {
    if (first_index() != 0) return;
    int64_t acc = 0;
    for (int64_t c = 0; c < chunks; ++c) {
        const int64_t k = counts[c];
        counts[c] = acc;
        acc += k;
    }
    counts[chunks] = acc;
}

// Pass 3: each head's position and key at its run number; starts[total] = n.
extern "C" __global__ void runs_write(int64_t n, int64_t chunk, const int64_t* sorted, const int64_t* firsts,
                                      int64_t* starts, int64_t* keys) {
    const int64_t chunks = (n + chunk - 1) / chunk;
    for (int64_t c = first_index(); c < chunks; c += grid_stride()) {
        const int64_t end = (c + 1) * chunk < n ? (c + 1) * chunk : n;
        int64_t r = firsts[c];
        for (int64_t p = c * chunk; p < end; ++p) {
            if (run_head(sorted, p)) {
                starts[r] = p;
                keys[r] = sorted[p];
                ++r;
            }
        }
        if (c == chunks - 1) starts[firsts[chunks]] = n;
    }
}
