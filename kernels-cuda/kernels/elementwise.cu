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

// The rest of the floating functions, each as aten's CPU body (native/unary.rs) writes it.
#define KC_MATH_OP(Name, expr) \
    struct Name { template <typename A> __device__ A operator()(A x) const { return expr; } };
KC_MATH_OP(Exp2Op, exp2(x))
KC_MATH_OP(Expm1Op, expm1(x))
KC_MATH_OP(Log2Op, log2(x))
KC_MATH_OP(Log10Op, log10(x))
KC_MATH_OP(Log1pOp, log1p(x))
KC_MATH_OP(RsqrtOp, (A)1 / sqrt(x))
KC_MATH_OP(ReciprocalOp, (A)1 / x)
KC_MATH_OP(TanOp, tan(x))
KC_MATH_OP(AsinOp, asin(x))
KC_MATH_OP(AcosOp, acos(x))
KC_MATH_OP(AtanOp, atan(x))
KC_MATH_OP(SinhOp, sinh(x))
KC_MATH_OP(CoshOp, cosh(x))
KC_MATH_OP(AsinhOp, asinh(x))
KC_MATH_OP(AcoshOp, acosh(x))
KC_MATH_OP(AtanhOp, atanh(x))
KC_MATH_OP(ErfOp, erf(x))
KC_MATH_OP(ErfcOp, erfc(x))
KC_MATH_OP(FloorOp, floor(x))
KC_MATH_OP(CeilOp, ceil(x))
KC_MATH_OP(TruncOp, trunc(x))
// Halves to even, as torch.round (the default rounding mode).
KC_MATH_OP(RoundOp, rint(x))
KC_MATH_OP(FracOp, x - trunc(x))
// 0 for NaN, as the CPU's (0 < x) - (x < 0).
KC_MATH_OP(SignOp, (A)((int)((A)0 < x) - (int)(x < (A)0)))
KC_MATH_OP(SiluOp, x / ((A)1 + exp(-x)))
KC_MATH_OP(MishOp, x * tanh(x > (A)20 ? x : log1p(exp(x))))
// The clamps written with comparisons, so NaN passes through (fmin/fmax would drop it).
KC_MATH_OP(HardsigmoidOp, (x / (A)6 + (A)0.5) < (A)0 ? (A)0 : ((x / (A)6 + (A)0.5) > (A)1 ? (A)1 : x / (A)6 + (A)0.5))
KC_MATH_OP(HardswishOp, x * ((x + (A)3) < (A)0 ? (A)0 : ((x + (A)3) > (A)6 ? (A)6 : x + (A)3)) / (A)6)
// SELU's constants (Klambauer et al.), as aten's.
KC_MATH_OP(SeluOp, x > (A)0 ? (A)1.0507009873554805 * x : (A)(1.0507009873554805 * 1.6732632423543772) * expm1(x))
#undef KC_MATH_OP

// Activations with parameters (p0, p1, p2: the operator's scalars as doubles, narrowed to the
// opmath type as PyTorch's kernels do), each as aten's CPU body (native/pointwise.rs).
template <typename A> struct LeakyReluOp {
    A slope;
    __device__ A operator()(A x) const { return x > (A)0 ? x : x * slope; }
};
template <typename A> struct HardtanhOp {
    A lo, hi;
    __device__ A operator()(A x) const { return x != x ? x : (x < lo ? lo : (x > hi ? hi : x)); }
};
template <typename A> struct EluOp {
    A alpha, scale, input_scale;
    __device__ A operator()(A x) const { return x > (A)0 ? x * scale : expm1(x * input_scale) * alpha * scale; }
};
template <typename A> struct SoftplusOp {
    A beta, threshold;
    __device__ A operator()(A x) const { return x * beta > threshold ? x : log1p(exp(x * beta)) / beta; }
};
// `x Phi(x)` exactly, and its tanh approximation.
struct GeluOp {
    template <typename A> __device__ A operator()(A x) const { return (A)0.5 * x * ((A)1 + erf(x * (A)0.7071067811865476)); }
};
struct GeluTanhOp {
    template <typename A> __device__ A operator()(A x) const {
        return (A)0.5 * x * ((A)1 + tanh((A)0.7978845608028654 * (x + (A)0.044715 * x * x * x)));
    }
};
// logit with an optional eps (`has_eps` 0 or 1): PyTorch's `x < lo ? lo : (x > hi ? hi : x)`.
template <typename A> struct LogitOp {
    A eps, has_eps;
    __device__ A operator()(A x) const {
        const A z = has_eps != (A)0 ? (x < eps ? eps : (x > (A)1 - eps ? (A)1 - eps : x)) : x;
        return log(z / ((A)1 - z));
    }
};

// Binary floating functions (integer inputs were promoted by the operator where PyTorch does).
struct Atan2Op {
    template <typename A> __device__ A operator()(A y, A x) const { return atan2(y, x); }
};
struct PowOp {
    template <typename A> __device__ A operator()(A x, A y) const { return pow(x, y); }
};
// fmod takes the dividend's sign; remainder (Python's %) the divisor's.
struct FmodOp {
    template <typename A> __device__ A operator()(A x, A y) const { return fmod(x, y); }
};
struct RemainderOp {
    template <typename A> __device__ A operator()(A x, A y) const {
        A m = fmod(x, y);
        return (m != (A)0 && ((y < (A)0) != (m < (A)0))) ? m + y : m;
    }
};
// lerp's two formulas, chosen by |weight| for accuracy at both ends (aten's CPU body).
template <typename A> struct LerpOp {
    A w;
    __device__ A operator()(A s, A e) const { return (w < (A)0.5 && w > (A)-0.5) ? s + w * (e - s) : e - (e - s) * ((A)1 - w); }
};
// Integers: wrapping remainders (the operator refused zero divisors) and powers by squaring; a
// negative exponent gives 1 / a^-b truncated (PyTorch's powi).
template <typename A> __device__ __forceinline__ constexpr bool signed_int() { return (A)-1 < (A)0; }
// Below zero, written so unsigned types compile without a "comparison with zero" warning.
template <typename A> __device__ __forceinline__ bool negative(A x) { return !(x > (A)0 || x == (A)0); }
struct IntFmodOp {
    template <typename A> __device__ A operator()(A x, A y) const {
        // A signed -1 divides everything exactly; INT_MIN % -1 would trap.
        return (signed_int<A>() && y == (A)-1) ? (A)0 : (A)(x % y);
    }
};
struct IntRemainderOp {
    template <typename A> __device__ A operator()(A x, A y) const {
        const A m = IntFmodOp()(x, y);
        return (m != (A)0 && (negative(y) != negative(m))) ? IntAddOp<A>{(A)1}(m, y) : m;
    }
};
struct IntPowOp {
    template <typename A> __device__ A operator()(A a, A b) const {
        if (negative(b)) {
            if (a == (A)1) return (A)1;
            if (a == (A)-1) return (b & (A)1) ? (A)-1 : (A)1;
            return (A)0;
        }
        typedef unsigned long long U;
        U result = 1, base = (U)(long long)a;
        for (A e = b; e > (A)0; e = (A)(e >> 1)) {
            if (e & (A)1) result *= base;
            base *= base;
        }
        return (A)result;
    }
};

// Integers: floor, ceil, trunc, round and frac are the identity; sign is -1, 0 or 1.
struct IdentityOp { template <typename A> __device__ A operator()(A x) const { return x; } };
struct IntSignOp {
    // Written so unsigned types compile without a "comparison with zero" warning.
    template <typename A> __device__ A operator()(A x) const { return x > (A)0 ? (A)1 : (x == (A)0 ? (A)0 : (A)-1); }
};

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

#define KC_FLOAT_MATH(sfx, T, name, Op) \
    extern "C" __global__ void name##_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, Op()); }
#define KC_FLOAT_MATH_ALL(sfx, T)                                                                        \
    KC_FLOAT_MATH(sfx, T, exp2, Exp2Op) KC_FLOAT_MATH(sfx, T, expm1, Expm1Op)                           \
    KC_FLOAT_MATH(sfx, T, log2, Log2Op) KC_FLOAT_MATH(sfx, T, log10, Log10Op)                           \
    KC_FLOAT_MATH(sfx, T, log1p, Log1pOp) KC_FLOAT_MATH(sfx, T, rsqrt, RsqrtOp)                         \
    KC_FLOAT_MATH(sfx, T, reciprocal, ReciprocalOp) KC_FLOAT_MATH(sfx, T, tan, TanOp)                   \
    KC_FLOAT_MATH(sfx, T, asin, AsinOp) KC_FLOAT_MATH(sfx, T, acos, AcosOp)                             \
    KC_FLOAT_MATH(sfx, T, atan, AtanOp) KC_FLOAT_MATH(sfx, T, sinh, SinhOp)                             \
    KC_FLOAT_MATH(sfx, T, cosh, CoshOp) KC_FLOAT_MATH(sfx, T, asinh, AsinhOp)                           \
    KC_FLOAT_MATH(sfx, T, acosh, AcoshOp) KC_FLOAT_MATH(sfx, T, atanh, AtanhOp)                         \
    KC_FLOAT_MATH(sfx, T, erf, ErfOp) KC_FLOAT_MATH(sfx, T, erfc, ErfcOp)                               \
    KC_FLOAT_MATH(sfx, T, floor, FloorOp) KC_FLOAT_MATH(sfx, T, ceil, CeilOp)                           \
    KC_FLOAT_MATH(sfx, T, trunc, TruncOp) KC_FLOAT_MATH(sfx, T, round, RoundOp)                         \
    KC_FLOAT_MATH(sfx, T, frac, FracOp) KC_FLOAT_MATH(sfx, T, sign, SignOp)                             \
    KC_FLOAT_MATH(sfx, T, silu, SiluOp) KC_FLOAT_MATH(sfx, T, mish, MishOp)                             \
    KC_FLOAT_MATH(sfx, T, hardsigmoid, HardsigmoidOp) KC_FLOAT_MATH(sfx, T, hardswish, HardswishOp)     \
    KC_FLOAT_MATH(sfx, T, selu, SeluOp)
KC_FOR_FLOAT_TYPES(KC_FLOAT_MATH_ALL)

#define KC_INT_ROUNDING(sfx, T)                                                                          \
    KC_FLOAT_MATH(sfx, T, floor, IdentityOp) KC_FLOAT_MATH(sfx, T, ceil, IdentityOp)                    \
    KC_FLOAT_MATH(sfx, T, trunc, IdentityOp) KC_FLOAT_MATH(sfx, T, round, IdentityOp)                   \
    KC_FLOAT_MATH(sfx, T, frac, IdentityOp) KC_FLOAT_MATH(sfx, T, sign, IntSignOp)
KC_FOR_INT_TYPES(KC_INT_ROUNDING)

// The parameterised activations take three doubles (unused ones 0).
#define KC_FLOAT_PARAM_UNARY(sfx, T)                                                                     \
    extern "C" __global__ void leaky_relu_##sfx(KcGeometry g, T* out, const T* a, double p0, double /*p1*/, double /*p2*/) { \
        LeakyReluOp<kc::Acc<T>::type> op = {(kc::Acc<T>::type)p0};                                       \
        unary(g, out, a, op);                                                                            \
    }                                                                                                    \
    extern "C" __global__ void hardtanh_##sfx(KcGeometry g, T* out, const T* a, double p0, double p1, double /*p2*/) { \
        HardtanhOp<kc::Acc<T>::type> op = {(kc::Acc<T>::type)p0, (kc::Acc<T>::type)p1};                  \
        unary(g, out, a, op);                                                                            \
    }                                                                                                    \
    extern "C" __global__ void elu_##sfx(KcGeometry g, T* out, const T* a, double p0, double p1, double p2) { \
        EluOp<kc::Acc<T>::type> op = {(kc::Acc<T>::type)p0, (kc::Acc<T>::type)p1, (kc::Acc<T>::type)p2}; \
        unary(g, out, a, op);                                                                            \
    }                                                                                                    \
    extern "C" __global__ void softplus_##sfx(KcGeometry g, T* out, const T* a, double p0, double p1, double /*p2*/) { \
        SoftplusOp<kc::Acc<T>::type> op = {(kc::Acc<T>::type)p0, (kc::Acc<T>::type)p1};                  \
        unary(g, out, a, op);                                                                            \
    }                                                                                                    \
    extern "C" __global__ void logit_##sfx(KcGeometry g, T* out, const T* a, double p0, double p1, double /*p2*/) { \
        LogitOp<kc::Acc<T>::type> op = {(kc::Acc<T>::type)p0, (kc::Acc<T>::type)p1};                     \
        unary(g, out, a, op);                                                                            \
    }                                                                                                    \
    extern "C" __global__ void gelu_##sfx(KcGeometry g, T* out, const T* a, double /*p0*/, double /*p1*/, double /*p2*/) { \
        unary(g, out, a, GeluOp());                                                                      \
    }                                                                                                    \
    extern "C" __global__ void gelu_tanh_##sfx(KcGeometry g, T* out, const T* a, double /*p0*/, double /*p1*/, double /*p2*/) { \
        unary(g, out, a, GeluTanhOp());                                                                  \
    }                                                                                                    \
    extern "C" __global__ void atan2_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, Atan2Op()); } \
    extern "C" __global__ void pow_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, PowOp()); } \
    extern "C" __global__ void fmod_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, FmodOp()); } \
    extern "C" __global__ void remainder_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, RemainderOp()); } \
    extern "C" __global__ void lerp_##sfx(KcGeometry g, T* out, const T* a, const T* b, double w) {     \
        LerpOp<kc::Acc<T>::type> op = {(kc::Acc<T>::type)w};                                             \
        binary(g, out, a, b, op);                                                                        \
    }
KC_FOR_FLOAT_TYPES(KC_FLOAT_PARAM_UNARY)

#define KC_INT_ARITH(sfx, T)                                                                             \
    extern "C" __global__ void pow_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, IntPowOp()); } \
    extern "C" __global__ void fmod_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, IntFmodOp()); } \
    extern "C" __global__ void remainder_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, IntRemainderOp()); }
KC_FOR_INT_TYPES(KC_INT_ARITH)

#define KC_INT_UNARY(sfx, T)                                                                             \
    extern "C" __global__ void neg_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, IntNegOp()); } \
    extern "C" __global__ void abs_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, IntAbsOp()); } \
    extern "C" __global__ void relu_##sfx(KcGeometry g, T* out, const T* a) { unary(g, out, a, ReluOp()); }
KC_FOR_INT_TYPES(KC_INT_UNARY)

// ---- selection, masks, logical operators, predicates, addcmul/addcdiv, rounded division -----

namespace {

// where: `c ? a : b` (the operator converted both values to the output dtype).
template <typename T> __device__ void select(const KcGeometry& g, T* out, const bool* c, const T* a, const T* b) {
    for_each_element(g, [&](const kc::Offsets& o) { out[o.at[0]] = c[o.at[1]] ? a[o.at[2]] : b[o.at[3]]; });
}
// masked_fill: `m ? value : a`, the value already in the dtype.
template <typename T> __device__ void mask_fill(const KcGeometry& g, T* out, const T* a, const bool* m, T value) {
    for_each_element(g, [&](const kc::Offsets& o) { out[o.at[0]] = m[o.at[2]] ? value : a[o.at[1]]; });
}
// A bool-valued function of one element.
template <typename T, typename F> __device__ void test(const KcGeometry& g, bool* out, const T* a, F f) {
    for_each_element(g, [&](const kc::Offsets& o) { out[o.at[0]] = f(a[o.at[1]]); });
}
template <typename F> __device__ void logical(const KcGeometry& g, bool* out, const bool* a, const bool* b, F f) {
    for_each_element(g, [&](const kc::Offsets& o) { out[o.at[0]] = f(a[o.at[1]], b[o.at[2]]); });
}
// `s + v * t1 * t2` and `s + v * t1 / t2`, in the opmath type.
template <typename T, typename Op> __device__ void addc(const KcGeometry& g, T* out, const T* s, const T* t1, const T* t2, Op op) {
    typedef typename kc::Acc<T>::type A;
    for_each_element(g, [&](const kc::Offsets& o) {
        out[o.at[0]] = kc::convert<T>(op(kc::convert<A>(s[o.at[1]]), kc::convert<A>(t1[o.at[2]]), kc::convert<A>(t2[o.at[3]])));
    });
}
template <typename A> struct AddcmulOp {
    A v;
    __device__ A operator()(A s, A a, A b) const { return s + v * a * b; }
};
template <typename A> struct AddcdivOp {
    A v;
    __device__ A operator()(A s, A a, A b) const { return s + v * a / b; }
};
// Integers wrap (computed unsigned).
template <typename A> struct IntAddcmulOp {
    A v;
    __device__ A operator()(A s, A a, A b) const {
        typedef unsigned long long U;
        return (A)((U)(long long)s + (U)(long long)v * (U)(long long)a * (U)(long long)b);
    }
};

// Rounded division, as aten's CPU bodies (native/binary.rs): trunc of the true quotient, and
// Python's floor division (PyTorch's div_floor_floating).
struct DivTruncOp {
    template <typename A> __device__ A operator()(A x, A y) const { return trunc(x / y); }
};
struct DivFloorOp {
    template <typename A> __device__ A operator()(A a, A b) const {
        if (b == (A)0) return a / b;
        const A m = fmod(a, b);
        A div = (a - m) / b;
        if (m != (A)0 && ((b < (A)0) != (m < (A)0))) div -= (A)1;
        if (div == (A)0) return copysign((A)0, a / b);
        const A fl = floor(div);
        return div - fl > (A)0.5 ? fl + (A)1 : fl;
    }
};
// Integers (the operator refused zero divisors): a signed -1 divisor negates with wrapping, as
// INT_MIN / -1 would trap.
struct IntDivTruncOp {
    template <typename A> __device__ A operator()(A a, A b) const {
        if (signed_int<A>() && b == (A)-1) return IntNegOp()(a);
        return (A)(a / b);
    }
};
struct IntDivFloorOp {
    template <typename A> __device__ A operator()(A a, A b) const {
        if (signed_int<A>() && b == (A)-1) return IntNegOp()(a);
        const A q = (A)(a / b);
        return ((A)(a % b) != (A)0 && (negative(a) != negative(b))) ? (A)(q - (A)1) : q;
    }
};

}  // namespace

#define KC_SELECT(sfx, T)                                                                                \
    extern "C" __global__ void where_##sfx(KcGeometry g, T* out, const bool* c, const T* a, const T* b) { \
        select(g, out, c, a, b);                                                                         \
    }                                                                                                    \
    extern "C" __global__ void masked_fill_##sfx(KcGeometry g, T* out, const T* a, const bool* m, T value) { \
        mask_fill(g, out, a, m, value);                                                                  \
    }
KC_FOR_ALL_TYPES(KC_SELECT)

extern "C" __global__ void logical_and_b8(KcGeometry g, bool* out, const bool* a, const bool* b) {
    logical(g, out, a, b, [](bool x, bool y) { return x && y; });
}
extern "C" __global__ void logical_or_b8(KcGeometry g, bool* out, const bool* a, const bool* b) {
    logical(g, out, a, b, [](bool x, bool y) { return x || y; });
}
extern "C" __global__ void logical_xor_b8(KcGeometry g, bool* out, const bool* a, const bool* b) {
    logical(g, out, a, b, [](bool x, bool y) { return x != y; });
}

// logical_not of any dtype (NaN is true, so its negation false).
#define KC_LOGICAL_NOT(sfx, T)                                                                           \
    extern "C" __global__ void logical_not_##sfx(KcGeometry g, bool* out, const T* a) {                  \
        test(g, out, a, [](T x) { return !kc::convert<bool>(x); });                                      \
    }
KC_FOR_ALL_TYPES(KC_LOGICAL_NOT)

// The floating predicates (integers are finite: the operator fills a constant).
#define KC_PREDICATES(sfx, T)                                                                            \
    extern "C" __global__ void isnan_##sfx(KcGeometry g, bool* out, const T* a) {                        \
        test(g, out, a, [](T x) { const kc::Acc<T>::type v = kc::convert<kc::Acc<T>::type>(x); return v != v; }); \
    }                                                                                                    \
    extern "C" __global__ void isinf_##sfx(KcGeometry g, bool* out, const T* a) {                        \
        test(g, out, a, [](T x) { return (bool)isinf(kc::convert<kc::Acc<T>::type>(x)); });              \
    }                                                                                                    \
    extern "C" __global__ void isfinite_##sfx(KcGeometry g, bool* out, const T* a) {                     \
        test(g, out, a, [](T x) { return (bool)isfinite(kc::convert<kc::Acc<T>::type>(x)); });           \
    }                                                                                                    \
    extern "C" __global__ void isposinf_##sfx(KcGeometry g, bool* out, const T* a) {                     \
        test(g, out, a, [](T x) { return kc::convert<kc::Acc<T>::type>(x) == (kc::Acc<T>::type)INFINITY; }); \
    }                                                                                                    \
    extern "C" __global__ void isneginf_##sfx(KcGeometry g, bool* out, const T* a) {                     \
        test(g, out, a, [](T x) { return kc::convert<kc::Acc<T>::type>(x) == -(kc::Acc<T>::type)INFINITY; }); \
    }
KC_FOR_FLOAT_TYPES(KC_PREDICATES)

#define KC_FLOAT_ADDC(sfx, T)                                                                            \
    extern "C" __global__ void addcmul_##sfx(KcGeometry g, T* out, const T* s, const T* t1, const T* t2, double v) { \
        AddcmulOp<kc::Acc<T>::type> op = {(kc::Acc<T>::type)v};                                          \
        addc(g, out, s, t1, t2, op);                                                                     \
    }                                                                                                    \
    extern "C" __global__ void addcdiv_##sfx(KcGeometry g, T* out, const T* s, const T* t1, const T* t2, double v) { \
        AddcdivOp<kc::Acc<T>::type> op = {(kc::Acc<T>::type)v};                                          \
        addc(g, out, s, t1, t2, op);                                                                     \
    }                                                                                                    \
    extern "C" __global__ void div_trunc_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, DivTruncOp()); } \
    extern "C" __global__ void div_floor_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, DivFloorOp()); }
KC_FOR_FLOAT_TYPES(KC_FLOAT_ADDC)

#define KC_INT_ADDC(sfx, T)                                                                              \
    extern "C" __global__ void addcmul_##sfx(KcGeometry g, T* out, const T* s, const T* t1, const T* t2, int64_t v) { \
        IntAddcmulOp<T> op = {(T)v};                                                                     \
        addc(g, out, s, t1, t2, op);                                                                     \
    }                                                                                                    \
    extern "C" __global__ void div_trunc_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, IntDivTruncOp()); } \
    extern "C" __global__ void div_floor_##sfx(KcGeometry g, T* out, const T* a, const T* b) { binary(g, out, a, b, IntDivFloorOp()); }
KC_FOR_INT_TYPES(KC_INT_ADDC)
