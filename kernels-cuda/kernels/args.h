// Kernel argument structs shared by the `.cu` kernels and Rust: this header is the one
// definition; kernels-cuda/build.rs mirrors it into Rust with bindgen (OUT_DIR/args.rs), so
// the two sides cannot drift apart. Plain C: fixed-width integers, no pointers, 8-byte aligned.
#ifndef KERNELS_CUDA_ARGS_H
#define KERNELS_CUDA_ARGS_H

#include <stdint.h>

// Most dims an operand may have after coalescing (PyTorch's MAX_DIMS is 25; ours is smaller so
// the struct stays well below the 4 KiB kernel parameter limit).
#define KC_MAX_DIMS 12
// Operands of one elementwise launch: the output and up to three inputs.
#define KC_MAX_OPERANDS 4

// The geometry of an elementwise launch, like PyTorch's OffsetCalculator: `numel` elements
// over `ndim` dims (sizes[0] innermost, after the iterator sorted and coalesced them), and the
// stride of every operand in every dim, in elements. Operand 0 is the output. A broadcast
// input has stride 0 in the broadcast dims.
typedef struct KcGeometry {
    int32_t ndim;
    int32_t noperands;
    int64_t numel;
    int64_t sizes[KC_MAX_DIMS];
    int64_t strides[KC_MAX_OPERANDS][KC_MAX_DIMS];
} KcGeometry;

// The geometry of a reduction: `outputs` results, each reducing `reduced` elements. The output
// index maps to an input offset through `outer_sizes`/`outer_strides` (sizes innermost first),
// and the reduced index through `inner_sizes`/`inner_strides`. Strides in elements.
typedef struct KcReduction {
    int32_t outer_ndim;
    int32_t inner_ndim;
    int64_t outputs;
    int64_t reduced;
    int64_t outer_sizes[KC_MAX_DIMS];
    int64_t outer_strides[KC_MAX_DIMS];
    int64_t out_strides[KC_MAX_DIMS];
    int64_t inner_sizes[KC_MAX_DIMS];
    int64_t inner_strides[KC_MAX_DIMS];
} KcReduction;

// A gather through per-dimension maps (flip, roll, padding, index_select, embedding): output
// element i (row-major over `sizes`, which are innermost first, so coordinate c_0 varies
// fastest) reads the source at sum_d s_d * src_strides[d], where s_d = maps[map_offsets[d] + c_d]
// for a mapped dim (map_offsets[d] >= 0) and s_d = c_d otherwise. A negative s_d makes the
// element the fill value. The output is contiguous; strides in elements.
typedef struct KcRemap {
    int32_t ndim;
    int32_t unused;
    int64_t numel;
    int64_t sizes[KC_MAX_DIMS];
    int64_t src_strides[KC_MAX_DIMS];
    int64_t map_offsets[KC_MAX_DIMS];
} KcRemap;

// A convolution's column matrix (Note [Convolution as GEMM] in aten's native/conv.rs): `n`
// images of `channels` channels, spatial size `input` (3 dims, outermost first; 1-d and 2-d
// convolutions have leading 1s), windows of `kernel` with `stride`, `padding` and `dilation`
// at the `out` positions. The columns are contiguous [n, channels * k, L] (k = kernel's
// element count, L = out's), row (c, a, b, e) and column (z, y, x) row-major.
typedef struct KcColumns {
    int64_t n;
    int64_t channels;
    int64_t input[3];
    int64_t kernel[3];
    int64_t out[3];
    int64_t stride[3];
    int64_t padding[3];
    int64_t dilation[3];
} KcColumns;

// A pooling (Note [Pooling windows] in aten's native/pool.rs): `planes` contiguous planes of
// spatial size `input` (3 dims, outermost first; 1-d and 2-d poolings have leading 1s) pooled to
// `out`. The windows come as a table of int64 rows (first, step, count, padded_count), the
// out[0] rows of dim 0, then the out[1] rows of dim 1, then the out[2] rows of dim 2: the
// positions first + j * step (j < count) are inside the input, and padded_count is the window's
// extent counted by count_include_pad. An average divides by `divisor` when it is not 0, else by
// the product of the padded counts (`include_pad` 1) or of the counts.
typedef struct KcPool {
    int64_t planes;
    int64_t input[3];
    int64_t out[3];
    int64_t divisor;
    int32_t include_pad;
    int32_t unused;
} KcPool;

#endif
