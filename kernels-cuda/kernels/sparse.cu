// Sparse @ dense products (mm/addmm with a COO or CSR first operand; PyTorch's
// native/sparse/cuda/SparseBlas.cu calls cuSPARSE for them).
//
// Note [Row-wise sparse products]: the sparse operand comes in compressed rows: row r's stored
// elements are entries crow[r] .. crow[r + 1] of `order` (or those positions themselves when
// `order` is null: a CSR tensor, or a coalesced COO one), element k holding `values[k]` at
// column `col[k]`. One thread per output element (r, j) sums values[k] * dense[col[k], j] over
// row r's elements in that order, accumulating in float for the 32- and 16-bit floats and in
// double for float64, and writes the sum once: no atomics and no zero-fill, every output
// element written by exactly one thread, the same sums in the same order on every run and
// as the CPU's loop (`spmm_rows` in aten's sparse kernels). The host checked every column
// against dense's rows and built crow from the row indices, so every read is in bounds.
#include "scalar.cuh"

namespace {

__device__ __forceinline__ int64_t first_index() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return (int64_t)blockDim.x * gridDim.x; }

template <typename T>
__device__ void spmm_rows(int64_t rows, int64_t n, T* out, const T* dense, const T* values, const int64_t* crow,
                          const int64_t* col, const int64_t* order) {
    typedef typename kc::Acc<T>::type A;
    for (int64_t i = first_index(); i < rows * n; i += grid_stride()) {
        const int64_t r = i / n;
        const int64_t j = i % n;
        A acc = 0;
        for (int64_t p = crow[r]; p < crow[r + 1]; ++p) {
            const int64_t k = order ? order[p] : p;
            acc += kc::convert<A>(values[k]) * kc::convert<A>(dense[col[k] * n + j]);
        }
        out[i] = kc::convert<T>(acc);
    }
}

}  // namespace

// ---- entry points ------------------------------------------------------------------------------

#define KC_SPMM(sfx, T)                                                                                  \
    extern "C" __global__ void spmm_##sfx(int64_t rows, int64_t n, T* out, const T* dense,               \
                                          const T* values, const int64_t* crow, const int64_t* col,      \
                                          const int64_t* order) {                                        \
        spmm_rows<T>(rows, n, out, dense, values, crow, col, order);                                     \
    }
KC_FOR_FLOAT_TYPES(KC_SPMM)
