// Indexing and data movement: gathers through per-dimension index maps (flip, roll, padding,
// index_select, embedding, rot90, diag_embed's copies) and the dense gradient of embedding.
// PyTorch's native/cuda/Indexing.cu and Embedding.cu split, for our device-generic operators.
#include "scalar.cuh"

namespace {

__device__ __forceinline__ int64_t first_index() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return (int64_t)blockDim.x * gridDim.x; }

// out[i] = src at the mapped coordinates of output element i, or `fill` where a map says there
// is no source element (KcRemap in args.h). Each output element is written by one thread.
template <typename T> __device__ void remap(const KcRemap& r, T* out, const T* src, const int64_t* maps, T fill) {
    for (int64_t i = first_index(); i < r.numel; i += grid_stride()) {
        int64_t rest = i;
        int64_t off = 0;
        bool hole = false;
        for (int d = 0; d < r.ndim; ++d) {
            const int64_t c = rest % r.sizes[d];
            rest /= r.sizes[d];
            int64_t s = c;
            if (r.map_offsets[d] >= 0) {
                s = maps[r.map_offsets[d] + c];
                hole |= s < 0;
            }
            off += s * r.src_strides[d];
        }
        out[i] = hole ? fill : src[off];
    }
}

// Note [Deterministic embedding backward]: the gradient of an embedding table is a sum of
// gradient rows per looked-up index. Atomic adds would make the sum's order (and so its
// rounding) depend on the schedule; instead the positions are grouped by index first (a stable
// sort of the indices on the device, as PyTorch's deterministic CUDA path sorts them: Note
// [Grouping on the device] in aten's native/sort.rs), and one thread per
// (group, column) adds that group's rows in position order into the group's table row, which
// no other thread writes. The result is the same on every run, and the same as the CPU's.
//
// grad is contiguous [positions, cols]; `order` lists positions grouped by index; group g
// covers order[starts[g] .. starts[g + 1]) and writes table row rows[g] of grad_weight
// (contiguous [num_weights, cols], zero-filled by the caller). With `scale_by_freq` the sum is
// divided by the group's size (the index's frequency in the batch).
template <typename T>
__device__ void embedding_backward(int64_t groups, int64_t cols, T* grad_weight, const T* grad, const int64_t* order,
                                   const int64_t* starts, const int64_t* rows, bool scale_by_freq) {
    typedef typename kc::Acc<T>::type A;
    for (int64_t i = first_index(); i < groups * cols; i += grid_stride()) {
        const int64_t g = i / cols;
        const int64_t c = i % cols;
        A acc = 0;
        for (int64_t k = starts[g]; k < starts[g + 1]; ++k) acc += kc::convert<A>(grad[order[k] * cols + c]);
        if (scale_by_freq) acc /= (A)(starts[g + 1] - starts[g]);
        grad_weight[rows[g] * cols + c] = kc::convert<T>(acc);
    }
}

}  // namespace

// ---- entry points ------------------------------------------------------------------------------

#define KC_REMAP(sfx, T)                                                                                 \
    extern "C" __global__ void remap_##sfx(KcRemap r, T* out, const T* src, const int64_t* maps, T fill) { \
        remap<T>(r, out, src, maps, fill);                                                               \
    }
KC_FOR_ALL_TYPES(KC_REMAP)

#define KC_EMBEDDING_BACKWARD(sfx, T)                                                                    \
    extern "C" __global__ void embedding_backward_##sfx(int64_t groups, int64_t cols, T* grad_weight,    \
                                                        const T* grad, const int64_t* order,             \
                                                        const int64_t* starts, const int64_t* rows,      \
                                                        bool scale_by_freq) {                            \
        embedding_backward<T>(groups, cols, grad_weight, grad, order, starts, rows, scale_by_freq);       \
    }
KC_FOR_FLOAT_TYPES(KC_EMBEDDING_BACKWARD)
