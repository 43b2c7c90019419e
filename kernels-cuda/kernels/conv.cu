// Convolutions' column matrices (aten's native/conv.rs, Note [Convolution as GEMM]): the
// unfolding `im2col` that turns a convolution into matrix products (cuBLAS on a GPU), and its
// adjoint `col2im`, which folds the columns of a transposed convolution (or of the input
// gradient) back into images. PyTorch's native/cuda/im2col.cuh and vol2col.cuh do the same
// for 2-d and 3-d; here one pair of kernels serves 1-d, 2-d and 3-d (KcColumns in args.h).
//
// Note [Folding columns without atomics]: col2im is written as a gather, one thread per image
// element: the element at (z, y, x) receives column (zc, yc, xc) of kernel offset (a, b, e)
// when z = zc * stride + a * dilation - padding in every dim, so the thread walks the kernel
// offsets in order, solves for the column position and adds it when it is a whole position
// inside the output grid. Each image element is written once by one thread, the sum has the
// same order on every run, and it is the CPU's order (col2im in native/conv.rs adds the rows
// of the column matrix one after another into the zeroed image).
#include "scalar.cuh"

namespace {

__device__ __forceinline__ int64_t first_index() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return (int64_t)blockDim.x * gridDim.x; }

// cols[i] for every i of the [n, channels * k, L] column matrix: the image element window
// (a, b, e) at output position (z, y, x) reads, or 0 in the padding.
template <typename T> __device__ void im2col(const KcColumns& g, T* cols, const T* images) {
    const int64_t k = g.kernel[0] * g.kernel[1] * g.kernel[2];
    const int64_t total = g.n * g.channels * k * g.out[0] * g.out[1] * g.out[2];
    for (int64_t i = first_index(); i < total; i += grid_stride()) {
        int64_t rest = i;
        const int64_t x = rest % g.out[2];
        rest /= g.out[2];
        const int64_t y = rest % g.out[1];
        rest /= g.out[1];
        const int64_t z = rest % g.out[0];
        rest /= g.out[0];
        const int64_t e = rest % g.kernel[2];
        rest /= g.kernel[2];
        const int64_t b = rest % g.kernel[1];
        rest /= g.kernel[1];
        const int64_t a = rest % g.kernel[0];
        rest /= g.kernel[0];
        const int64_t image_channel = rest;  // n * channels + c
        const int64_t zi = z * g.stride[0] + a * g.dilation[0] - g.padding[0];
        const int64_t yi = y * g.stride[1] + b * g.dilation[1] - g.padding[1];
        const int64_t xi = x * g.stride[2] + e * g.dilation[2] - g.padding[2];
        const bool inside = zi >= 0 && zi < g.input[0] && yi >= 0 && yi < g.input[1] && xi >= 0 && xi < g.input[2];
        cols[i] = inside ? images[((image_channel * g.input[0] + zi) * g.input[1] + yi) * g.input[2] + xi]
                         : kc::convert<T>(0.0f);
    }
}

// The window position along one dim whose kernel offset `o` reads image coordinate `p`, or -1.
__device__ __forceinline__ int64_t column_of(int64_t p, int64_t o, int64_t stride, int64_t dilation, int64_t padding,
                                             int64_t out) {
    const int64_t t = p + padding - o * dilation;
    if (t < 0 || t % stride != 0) return -1;
    const int64_t c = t / stride;
    return c < out ? c : -1;
}

// images[i] for every i of the [n, channels, *input] images: the sum of the column entries
// that read it (Note [Folding columns without atomics]).
template <typename T> __device__ void col2im(const KcColumns& g, T* images, const T* cols) {
    typedef typename kc::Acc<T>::type A;
    const int64_t k = g.kernel[0] * g.kernel[1] * g.kernel[2];
    const int64_t l = g.out[0] * g.out[1] * g.out[2];
    const int64_t total = g.n * g.channels * g.input[0] * g.input[1] * g.input[2];
    for (int64_t i = first_index(); i < total; i += grid_stride()) {
        int64_t rest = i;
        const int64_t x = rest % g.input[2];
        rest /= g.input[2];
        const int64_t y = rest % g.input[1];
        rest /= g.input[1];
        const int64_t z = rest % g.input[0];
        const int64_t image_channel = rest / g.input[0];
        const T* block = cols + image_channel * k * l;
        A acc = 0;
        for (int64_t a = 0; a < g.kernel[0]; ++a) {
            const int64_t zc = column_of(z, a, g.stride[0], g.dilation[0], g.padding[0], g.out[0]);
            if (zc < 0) continue;
            for (int64_t b = 0; b < g.kernel[1]; ++b) {
                const int64_t yc = column_of(y, b, g.stride[1], g.dilation[1], g.padding[1], g.out[1]);
                if (yc < 0) continue;
                for (int64_t e = 0; e < g.kernel[2]; ++e) {
                    const int64_t xc = column_of(x, e, g.stride[2], g.dilation[2], g.padding[2], g.out[2]);
                    if (xc < 0) continue;
                    const int64_t row = (a * g.kernel[1] + b) * g.kernel[2] + e;
                    acc += kc::convert<A>(block[row * l + (zc * g.out[1] + yc) * g.out[2] + xc]);
                }
            }
        }
        images[i] = kc::convert<T>(acc);
    }
}

}  // namespace

// ---- entry points ------------------------------------------------------------------------------

#define KC_COLUMNS(sfx, T)                                                                               \
    extern "C" __global__ void im2col_##sfx(KcColumns g, T* cols, const T* images) {                     \
        im2col<T>(g, cols, images);                                                                      \
    }                                                                                                    \
    extern "C" __global__ void col2im_##sfx(KcColumns g, T* images, const T* cols) {                     \
        col2im<T>(g, images, cols);                                                                      \
    }
KC_FOR_FLOAT_TYPES(KC_COLUMNS)
