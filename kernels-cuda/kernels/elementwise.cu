// Elementwise kernels over any strides and broadcasting: fill, casting copy, binary arithmetic
// and comparisons, unary math. One grid-stride loop per kernel; every operand's element offset
// comes from the launch's KcGeometry (kc::offsets, or kc::offsets32 when every offset fits in
// 32 bits), so views, transposes and expanded inputs need no copies; operands that are all
// contiguous and aligned are read and written KC_VEC elements at a time. Arithmetic runs in
// kc::Acc<T> (float for f16/bf16), as PyTorch's opmath.
#include "scalar.cuh"

namespace {

__device__ __forceinline__ int64_t first_index() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return (int64_t)blockDim.x * gridDim.x; }

// Visits every element of the geometry with its operands' offsets, in a grid-stride loop: with
// 32-bit index math when every offset fits (kc::fits_32_bits, the common case; PyTorch's
// OffsetCalculator does the same), 64-bit otherwise.
template <typename F> __device__ __forceinline__ void for_each_element(const KcGeometry& g, F f) {
    if (kc::fits_32_bits(g)) {
        for (int64_t i = first_index(); i < g.numel; i += grid_stride()) f(kc::offsets32(g, (uint32_t)i));
    } else {
        for (int64_t i = first_index(); i < g.numel; i += grid_stride()) f(kc::offsets(g, i));
    }
}

// Vectorised access on contiguous operands: VEC elements per load and store.
#define KC_VEC 4
template <typename T> struct alignas(sizeof(T) * KC_VEC) Pack {
    T v[KC_VEC];
};
template <typename T> __device__ __forceinline__ bool pack_aligned(const void* p) {
    return ((uintptr_t)p % sizeof(Pack<T>)) == 0;
}
// Whether the vectorised path applies: one contiguous dim for every operand and pointers
// aligned to a whole pack (a view starting mid-pack takes the general path).
template <typename O, typename I> __device__ __forceinline__ bool vectorisable(const KcGeometry& g, const O* out, const I* in) {
    return kc::is_contiguous(g) && pack_aligned<O>(out) && pack_aligned<I>(in);
}

template <typename T> __device__ void fill(const KcGeometry& g, T* out, T value) {
    for_each_element(g, [&](const kc::Offsets& o) { out[o.at[0]] = value; });
}

// arange: element i is `start + i * step`, computed in the accumulation type (float for the
// 16- and 32-bit floats, double for double, as PyTorch's CUDA kernel), rounded once.
template <typename T, typename A> __device__ void arange(const KcGeometry& g, T* out, A start, A step) {
    for (int64_t i = first_index(); i < g.numel; i += grid_stride()) {
        out[kc::offsets(g, i).at[0]] = kc::convert<T>((A)(start + (A)i * step));
    }
}
// Integers: in int64 with wrapping arithmetic (computed unsigned), then narrowed.
template <typename T> __device__ void int_arange(const KcGeometry& g, T* out, int64_t start, int64_t step) {
    typedef unsigned long long U;
    for (int64_t i = first_index(); i < g.numel; i += grid_stride()) {
        out[kc::offsets(g, i).at[0]] = (T)(int64_t)((U)start + (U)i * (U)step);
    }
}

// The contiguous path of a one-input kernel: `out[i] = f(in[i])`, a pack at a time, then the
// tail. The caller checked `vectorisable`.
template <typename O, typename I, typename F> __device__ __forceinline__ void map_packs(const KcGeometry& g, O* out, const I* in, F f) {
    const int64_t packs = g.numel / KC_VEC;
    const Pack<I>* src = reinterpret_cast<const Pack<I>*>(in);
    Pack<O>* dst = reinterpret_cast<Pack<O>*>(out);
    for (int64_t p = first_index(); p < packs; p += grid_stride()) {
        const Pack<I> x = src[p];
        Pack<O> r;
#pragma unroll
        for (int j = 0; j < KC_VEC; ++j) r.v[j] = f(x.v[j]);
        dst[p] = r;
    }
    for (int64_t i = packs * KC_VEC + first_index(); i < g.numel; i += grid_stride()) out[i] = f(in[i]);
}

// The contiguous path of a two-input kernel: `out[i] = f(a[i], b[i])`.
template <typename O, typename I, typename F>
__device__ __forceinline__ void zip_packs(const KcGeometry& g, O* out, const I* a, const I* b, F f) {
    const int64_t packs = g.numel / KC_VEC;
    const Pack<I>* pa = reinterpret_cast<const Pack<I>*>(a);
    const Pack<I>* pb = reinterpret_cast<const Pack<I>*>(b);
    Pack<O>* dst = reinterpret_cast<Pack<O>*>(out);
    for (int64_t p = first_index(); p < packs; p += grid_stride()) {
        const Pack<I> x = pa[p];
        const Pack<I> y = pb[p];
        Pack<O> r;
#pragma unroll
        for (int j = 0; j < KC_VEC; ++j) r.v[j] = f(x.v[j], y.v[j]);
        dst[p] = r;
    }
    for (int64_t i = packs * KC_VEC + first_index(); i < g.numel; i += grid_stride()) out[i] = f(a[i], b[i]);
}

template <typename S, typename D> __device__ void cast_copy(const KcGeometry& g, D* out, const S* in) {
    if (vectorisable(g, out, in)) {
        map_packs(g, out, in, [](S x) { return kc::convert<D>(x); });
        return;
    }
    for_each_element(g, [&](const kc::Offsets& o) { out[o.at[0]] = kc::convert<D>(in[o.at[1]]); });
}

template <typename T, typename Op> __device__ void binary(const KcGeometry& g, T* out, const T* a, const T* b, Op op) {
    typedef typename kc::Acc<T>::type A;
    auto f = [&](T x, T y) { return kc::convert<T>(op(kc::convert<A>(x), kc::convert<A>(y))); };
    if (vectorisable(g, out, a) && pack_aligned<T>(b)) {
        zip_packs(g, out, a, b, f);
        return;
    }
    for_each_element(g, [&](const kc::Offsets& o) { out[o.at[0]] = f(a[o.at[1]], b[o.at[2]]); });
}

template <typename T, typename Op> __device__ void compare(const KcGeometry& g, bool* out, const T* a, const T* b, Op op) {
    typedef typename kc::Acc<T>::type A;
    auto f = [&](T x, T y) { return (bool)op(kc::convert<A>(x), kc::convert<A>(y)); };
    if (vectorisable(g, out, a) && pack_aligned<T>(b)) {
        zip_packs(g, out, a, b, f);
        return;
    }
    for_each_element(g, [&](const kc::Offsets& o) { out[o.at[0]] = f(a[o.at[1]], b[o.at[2]]); });
}

template <typename T, typename Op> __device__ void unary(const KcGeometry& g, T* out, const T* a, Op op) {
    typedef typename kc::Acc<T>::type A;
    auto f = [&](T x) { return kc::convert<T>(op(kc::convert<A>(x))); };
    if (vectorisable(g, out, a)) {
        map_packs(g, out, a, f);
        return;
    }
    for_each_element(g, [&](const kc::Offsets& o) { out[o.at[0]] = f(a[o.at[1]]); });
}

// `a + alpha * b` and `a - alpha * b`. For floats alpha is a double narrowed to the opmath type
// (as PyTorch); integers use the integer alpha with wrapping arithmetic.
template <typename A> struct AddOp {
    A alpha;
    __device__ A operator()(A x, A y) const { return x + alpha * y; }
};
template <typename A> struct SubOp {
    A alpha;
    __device__ A operator()(A x, A y) const { return x - alpha * y; }
};
// Integer add/sub wrap like PyTorch's (two's complement), computed unsigned to avoid C++'s
// signed-overflow undefined behaviour.
template <typename A> struct IntAddOp {
    A alpha;
    __device__ A operator()(A x, A y) const {
        typedef unsigned long long U;
        return (A)((U)(long long)x + (U)(long long)alpha * (U)(long long)y);
    }
};
template <typename A> struct IntSubOp {
    A alpha;
    __device__ A operator()(A x, A y) const {
        typedef unsigned long long U;
        return (A)((U)(long long)x - (U)(long long)alpha * (U)(long long)y);
    }
};
struct MulOp {
    template <typename A> __device__ A operator()(A x, A y) const { return x * y; }
};
struct IntMulOp {
    template <typename A> __device__ A operator()(A x, A y) const {
        typedef unsigned long long U;
        return (A)((U)(long long)x * (U)(long long)y);
    }
};
struct DivOp {
    template <typename A> __device__ A operator()(A x, A y) const { return x / y; }
};
// maximum/minimum propagate NaN (PyTorch's torch.maximum).
struct MaxOp {
    template <typename A> __device__ A operator()(A x, A y) const { return (x != x || x > y) ? x : (y != y ? y : (x > y ? x : y)); }
};
struct MinOp {
    template <typename A> __device__ A operator()(A x, A y) const { return (x != x || x < y) ? x : (y != y ? y : (x < y ? x : y)); }
};
// ReLU's gradient: the incoming gradient where the input is above the threshold, else 0.
template <typename A> struct ThresholdBackwardOp {
    A threshold;
    __device__ A operator()(A grad, A x) const { return x > threshold ? grad : (A)0; }
};
struct EqOp { template <typename A> __device__ bool operator()(A x, A y) const { return x == y; } };
struct NeOp { template <typename A> __device__ bool operator()(A x, A y) const { return x != y; } };
struct LtOp { template <typename A> __device__ bool operator()(A x, A y) const { return x < y; } };
struct LeOp { template <typename A> __device__ bool operator()(A x, A y) const { return x <= y; } };
struct GtOp { template <typename A> __device__ bool operator()(A x, A y) const { return x > y; } };
struct GeOp { template <typename A> __device__ bool operator()(A x, A y) const { return x >= y; } };

struct NegOp { template <typename A> __device__ A operator()(A x) const { return -x; } };
struct IntNegOp {
    template <typename A> __device__ A operator()(A x) const { return (A)(0ull - (unsigned long long)(long long)x); }
};
struct AbsOp { template <typename A> __device__ A operator()(A x) const { return x < 0 ? -x : (x == 0 ? (A)0 : x); } };
struct IntAbsOp {
    // Written so unsigned types compile without a "comparison with zero" warning.
    template <typename A> __device__ A operator()(A x) const { return (x > (A)0 || x == (A)0) ? x : IntNegOp()(x); }
};
struct ExpOp { template <typename A> __device__ A operator()(A x) const { return exp(x); } };
struct LogOp { template <typename A> __device__ A operator()(A x) const { return log(x); } };
struct SqrtOp { template <typename A> __device__ A operator()(A x) const { return sqrt(x); } };
struct SinOp { template <typename A> __device__ A operator()(A x) const { return sin(x); } };
struct CosOp { template <typename A> __device__ A operator()(A x) const { return cos(x); } };
struct TanhOp { template <typename A> __device__ A operator()(A x) const { return tanh(x); } };
struct SigmoidOp { template <typename A> __device__ A operator()(A x) const { return (A)1 / ((A)1 + exp(-x)); } };
// relu keeps NaN (PyTorch's clamp_min(0) semantics).
struct ReluOp { template <typename A> __device__ A operator()(A x) const { return x > (A)0 || x != x ? x : (A)0; } };

}  // namespace

// ---- entry points ------------------------------------------------------------------------------

#define KC_FILL(sfx, T) \
    extern "C" __global__ void fill_##sfx(KcGeometry g, T* out, T value) { fill<T>(g, out, value); }
KC_FOR_ALL_TYPES(KC_FILL)

#define KC_FLOAT_ARANGE(sfx, T)                                                                                   \
    extern "C" __global__ void arange_##sfx(KcGeometry g, T* out, kc::Acc<T>::type start, kc::Acc<T>::type step) { \
        arange<T, kc::Acc<T>::type>(g, out, start, step);                                                       \
    }
KC_FOR_FLOAT_TYPES(KC_FLOAT_ARANGE)
#define KC_INT_ARANGE(sfx, T) \
    extern "C" __global__ void arange_##sfx(KcGeometry g, T* out, int64_t start, int64_t step) { int_arange<T>(g, out, start, step); }
KC_FOR_INT_TYPES(KC_INT_ARANGE)

// cast_<src>_<dst>: the strided copy with dtype conversion behind copy_ and .to().
#define KC_CAST_TO(dsfx, D, ssfx, S)                                                       \
    extern "C" __global__ void cast_##ssfx##_##dsfx(KcGeometry g, D* out, const S* in) {   \
        cast_copy<S, D>(g, out, in);                                                       \
    }
#define KC_CAST_FROM(ssfx, S)                                                                     \
    KC_CAST_TO(f32, float, ssfx, S) KC_CAST_TO(f64, double, ssfx, S) KC_CAST_TO(f16, __half, ssfx, S) \
    KC_CAST_TO(bf16, __nv_bfloat16, ssfx, S) KC_CAST_TO(u8, uint8_t, ssfx, S) KC_CAST_TO(i8, int8_t, ssfx, S) \
    KC_CAST_TO(i16, int16_t, ssfx, S) KC_CAST_TO(i32, int32_t, ssfx, S) KC_CAST_TO(i64, int64_t, ssfx, S)  \
    KC_CAST_TO(b8, bool, ssfx, S)
KC_FOR_ALL_TYPES(KC_CAST_FROM)

#define KC_FLOAT_BINARY(sfx, T)                                                                          \
    extern "C" __global__ void add_##sfx(KcGeometry g, T* out, const T* a, const T* b, double alpha) {   \
        AddOp<kc::Acc<T>::type> op = {(kc::Acc<T>::type)alpha};                                          \
        binary(g, out, a, b, op);                                                                        \
    }                                                                                                    \
    extern "C" __global__ void sub_##sfx(KcGeometry g, T* out, const T* a, const T* b, double alpha) {   \
        SubOp<kc::Acc<T>::type> op = {(kc::Acc<T>::type)alpha};                                          \
        binary(g, out, a, b, op);                                                                        \
    }                                                                                                    \
    extern "C" __global__ void mul_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, MulOp()); } \
    extern "C" __global__ void div_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, DivOp()); } \
    extern "C" __global__ void maximum_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, MaxOp()); } \
    extern "C" __global__ void minimum_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, MinOp()); } \
    extern "C" __global__ void threshold_backward_##sfx(KcGeometry g, T* out, const T* grad, const T* x, double threshold) { \
        ThresholdBackwardOp<kc::Acc<T>::type> op = {(kc::Acc<T>::type)threshold};                       \
        binary(g, out, grad, x, op);                                                                     \
    }
KC_FOR_FLOAT_TYPES(KC_FLOAT_BINARY)

#define KC_INT_BINARY(sfx, T)                                                                            \
    extern "C" __global__ void add_##sfx(KcGeometry g, T* out, const T* a, const T* b, int64_t alpha) {  \
        IntAddOp<T> op = {(T)alpha};                                                                     \
        binary(g, out, a, b, op);                                                                        \
    }                                                                                                    \
    extern "C" __global__ void sub_##sfx(KcGeometry g, T* out, const T* a, const T* b, int64_t alpha) {  \
        IntSubOp<T> op = {(T)alpha};                                                                     \
        binary(g, out, a, b, op);                                                                        \
    }                                                                                                    \
    extern "C" __global__ void mul_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, IntMulOp()); } \
    extern "C" __global__ void maximum_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, MaxOp()); } \
    extern "C" __global__ void minimum_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, MinOp()); }
KC_FOR_INT_TYPES(KC_INT_BINARY)

#define KC_COMPARE(sfx, T)                                                                                      \
    extern "C" __global__ void eq_##sfx(KcGeometry g, bool* out, const T* a, const T* b) { compare(g, out, a, b, EqOp()); } \
    extern "C" __global__ void ne_##sfx(KcGeometry g, bool* out, const T* a, const T* b) { compare(g, out, a, b, NeOp()); } \
    extern "C" __global__ void lt_##sfx(KcGeometry g, bool* out, const T* a, const T* b) { compare(g, out, a, b, LtOp()); } \
    extern "C" __global__ void le_##sfx(KcGeometry g, bool* out, const T* a, const T* b) { compare(g, out, a, b, LeOp()); } \
    extern "C" __global__ void gt_##sfx(KcGeometry g, bool* out, const T* a, const T* b) { compare(g, out, a, b, GtOp()); } \
    extern "C" __global__ void ge_##sfx(KcGeometry g, bool* out, const T* a, const T* b) { compare(g, out, a, b, GeOp()); }
KC_FOR_FLOAT_TYPES(KC_COMPARE)
KC_FOR_INT_TYPES(KC_COMPARE)

#define KC_FLOAT_UNARY(sfx, T)                                                                           \
    extern "C" __global__ void neg_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, NegOp()); }         \
    extern "C" __global__ void abs_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, AbsOp()); }         \
    extern "C" __global__ void exp_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, ExpOp()); }         \
    extern "C" __global__ void log_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, LogOp()); }         \
    extern "C" __global__ void sqrt_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, SqrtOp()); }       \
    extern "C" __global__ void sin_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, SinOp()); }         \
    extern "C" __global__ void cos_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, CosOp()); }         \
    extern "C" __global__ void tanh_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, TanhOp()); }       \
    extern "C" __global__ void sigmoid_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, SigmoidOp()); } \
    extern "C" __global__ void relu_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, ReluOp()); }
KC_FOR_FLOAT_TYPES(KC_FLOAT_UNARY)

#define KC_INT_UNARY(sfx, T)                                                                             \
    extern "C" __global__ void neg_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, IntNegOp()); } \
    extern "C" __global__ void abs_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, IntAbsOp()); } \
    extern "C" __global__ void relu_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, ReluOp()); }
KC_FOR_INT_TYPES(KC_INT_UNARY)
