// Element types, their accumulation types and conversions with PyTorch's semantics, shared by
// the kernels. Compiles under nvcc and under the emulator (emu/cuda_cpu.h).
#ifndef KERNELS_CUDA_SCALAR_CUH
#define KERNELS_CUDA_SCALAR_CUH

#include <stdint.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "args.h"

namespace kc {

// The type arithmetic runs in: float for the 16-bit floats (as PyTorch's opmath_type), the
// type itself otherwise.
template <typename T> struct Acc { typedef T type; };
template <> struct Acc<__half> { typedef float type; };
template <> struct Acc<__nv_bfloat16> { typedef float type; };

// Float to int64 as our CPU kernels (Rust's `as`) and the GPU's cvt.rzi.sat do: truncate
// toward zero, saturate at int64's range, NaN to 0. A C++ cast of an out-of-range value is
// undefined. Narrower integers then wrap from the int64, as PyTorch's CPU casts do.
__device__ __forceinline__ int64_t float_to_i64(double v) {
    if (v != v) return 0;
    // -2^63 is exact; 2^63 is the first double above int64's range.
    if (v <= -9223372036854775808.0) return (int64_t)(-9223372036854775807LL - 1);
    if (v >= 9223372036854775808.0) return 9223372036854775807LL;
    return (int64_t)v;
}

template <typename D> struct Convert;
template <> struct Convert<double> {
    template <typename S> __device__ static double from(S v) { return (double)v; }
    __device__ static double from(__half v) { return __half2float(v); }
    __device__ static double from(__nv_bfloat16 v) { return __bfloat162float(v); }
    __device__ static double from(bool v) { return v ? 1.0 : 0.0; }
};
template <> struct Convert<float> {
    template <typename S> __device__ static float from(S v) { return (float)v; }
    __device__ static float from(__half v) { return __half2float(v); }
    __device__ static float from(__nv_bfloat16 v) { return __bfloat162float(v); }
    __device__ static float from(bool v) { return v ? 1.0f : 0.0f; }
};
template <> struct Convert<__half> {
    template <typename S> __device__ static __half from(S v) { return __float2half_rn((float)v); }
    // Integers wider than float's 24-bit mantissa and doubles round once, directly.
    __device__ static __half from(double v) { return __double2half(v); }
    __device__ static __half from(int64_t v) { return __double2half((double)v); }
    __device__ static __half from(int32_t v) { return __double2half((double)v); }
    __device__ static __half from(__half v) { return v; }
    __device__ static __half from(__nv_bfloat16 v) { return __float2half_rn(__bfloat162float(v)); }
    __device__ static __half from(bool v) { return __float2half_rn(v ? 1.0f : 0.0f); }
};
template <> struct Convert<__nv_bfloat16> {
    template <typename S> __device__ static __nv_bfloat16 from(S v) { return __float2bfloat16_rn((float)v); }
    __device__ static __nv_bfloat16 from(double v) { return __double2bfloat16(v); }
    __device__ static __nv_bfloat16 from(int64_t v) { return __double2bfloat16((double)v); }
    __device__ static __nv_bfloat16 from(int32_t v) { return __double2bfloat16((double)v); }
    __device__ static __nv_bfloat16 from(__nv_bfloat16 v) { return v; }
    __device__ static __nv_bfloat16 from(__half v) { return __float2bfloat16_rn(__half2float(v)); }
    __device__ static __nv_bfloat16 from(bool v) { return __float2bfloat16_rn(v ? 1.0f : 0.0f); }
};
template <> struct Convert<bool> {
    template <typename S> __device__ static bool from(S v) { return v != (S)0; }
    __device__ static bool from(__half v) { return __half2float(v) != 0.0f; }
    __device__ static bool from(__nv_bfloat16 v) { return __bfloat162float(v) != 0.0f; }
    __device__ static bool from(bool v) { return v; }
};

// Integers: from another integer by two's-complement truncation (C++ conversion, as PyTorch),
// from a float through a saturated int64.
#define KC_INT_CONVERT(I)                                                                        \
    template <> struct Convert<I> {                                                              \
        template <typename S> __device__ static I from(S v) { return (I)v; }                     \
        __device__ static I from(double v) { return (I)float_to_i64(v); }                        \
        __device__ static I from(float v) { return (I)float_to_i64(v); }                         \
        __device__ static I from(__half v) { return (I)float_to_i64(__half2float(v)); }          \
        __device__ static I from(__nv_bfloat16 v) { return (I)float_to_i64(__bfloat162float(v)); } \
        __device__ static I from(bool v) { return v ? 1 : 0; }                                   \
    };
KC_INT_CONVERT(int8_t)
KC_INT_CONVERT(uint8_t)
KC_INT_CONVERT(int16_t)
KC_INT_CONVERT(int32_t)
KC_INT_CONVERT(int64_t)
#undef KC_INT_CONVERT

template <typename D, typename S> __device__ __forceinline__ D convert(S v) { return Convert<D>::from(v); }

// The offsets of element `linear` in every operand of a geometry (PyTorch's OffsetCalculator,
// with plain 64-bit division; sizes[0] is the innermost dim).
struct Offsets {
    int64_t at[KC_MAX_OPERANDS];
};
__device__ __forceinline__ Offsets offsets(const KcGeometry& g, int64_t linear) {
    Offsets o;
    for (int k = 0; k < KC_MAX_OPERANDS; ++k) o.at[k] = 0;
    for (int d = 0; d < g.ndim; ++d) {
        int64_t size = g.sizes[d];
        int64_t idx = linear % size;
        linear /= size;
        for (int k = 0; k < g.noperands; ++k) o.at[k] += idx * g.strides[k][d];
    }
    return o;
}

// Whether every offset of the geometry fits in 32 bits (then kc::offsets32 computes them with
// 32-bit division, several times cheaper on the GPU). Strides are non-negative.
__device__ __forceinline__ bool fits_32_bits(const KcGeometry& g) {
    const int64_t limit = 2147483647;
    if (g.numel > limit) return false;
    for (int k = 0; k < g.noperands; ++k) {
        int64_t extent = 0;
        for (int d = 0; d < g.ndim; ++d) extent += (g.sizes[d] - 1) * g.strides[k][d];
        if (extent > limit) return false;
    }
    return true;
}

// kc::offsets with 32-bit index math; only for geometries that kc::fits_32_bits accepts.
__device__ __forceinline__ Offsets offsets32(const KcGeometry& g, uint32_t linear) {
    uint32_t at[KC_MAX_OPERANDS] = {};
    for (int d = 0; d < g.ndim; ++d) {
        const uint32_t size = (uint32_t)g.sizes[d];
        const uint32_t idx = linear % size;
        linear /= size;
        for (int k = 0; k < g.noperands; ++k) at[k] += idx * (uint32_t)g.strides[k][d];
    }
    Offsets o;
    for (int k = 0; k < KC_MAX_OPERANDS; ++k) o.at[k] = at[k];
    return o;
}

// Whether every operand walks the elements contiguously (one dim of stride 1 after coalescing).
__device__ __forceinline__ bool is_contiguous(const KcGeometry& g) {
    if (g.ndim > 1) return false;
    for (int k = 0; k < g.noperands; ++k) {
        if (g.ndim == 1 && g.strides[k][0] != 1) return false;
    }
    return true;
}

}  // namespace kc

// One name per element type, used to stamp out `extern "C"` entry points from templates:
// KC_FOR_ALL_TYPES(M) expands M(suffix, type) for every dtype we have kernels for.
#define KC_FOR_FLOAT_TYPES(M) M(f32, float) M(f64, double) M(f16, __half) M(bf16, __nv_bfloat16)
#define KC_FOR_INT_TYPES(M) M(u8, uint8_t) M(i8, int8_t) M(i16, int16_t) M(i32, int32_t) M(i64, int64_t)
#define KC_FOR_ALL_TYPES(M) KC_FOR_FLOAT_TYPES(M) KC_FOR_INT_TYPES(M) M(b8, bool)

#endif
