// Random fills: uniform_, normal_, exponential_, bernoulli_ (a probability or a tensor of them)
// and random_ (integers in a range), for the output of an output-only iteration (or the
// output and the probabilities).
//
// Note [Philox streams]: the numbers come from Philox4x32-10 (Salmon et al., "Parallel random
// numbers: as easy as 1, 2, 3", SC'11; the generator cuRAND and PyTorch's CUDA kernels use),
// a counter-based generator: block(counter, key) is four 32-bit words, a pure function. The key
// is the generator's 64-bit seed; the 128-bit counter is `offset + group` in its low 64 bits,
// where `offset` is the first counter the launch reserved from the generator
// (aten::Generator::philox_reserve) and `group` numbers the groups of KC_PER elements in
// iteration order (the output's memory order). Element i of a launch therefore depends only on
// (seed, offset, i): the same on any grid, any GPU and any emulated scheduling order, and two
// launches never share a counter. A group is 4 elements when one element takes one word, 2 when
// it takes two (53-bit doubles, 64-bit integers); the host reserves ceil(numel / per) counters.
//
// The samplers follow our CPU kernels' (and PyTorch's CPU kernels') formulas on these words: a
// 24-bit float uniform from the low bits of one word, a 53-bit double from two, Box-Muller with
// r = sqrt(-2 log1p(-u2)) and theta = 2 pi u1, `bits % range + base` for integers.
#include "scalar.cuh"

namespace {

struct Words {
    uint32_t w[4];
};

// One Philox4x32-10 block (the Random123 reference's round function and key schedule).
__device__ __forceinline__ Words philox(uint64_t counter, uint64_t seed) {
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        const uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        const uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    Words r;
    r.w[0] = c0;
    r.w[1] = c1;
    r.w[2] = c2;
    r.w[3] = c3;
    return r;
}

// Uniforms in [0, 1): 24 low bits of a word as a float, 53 low bits of two words (the first the
// high half) as a double.
__device__ __forceinline__ float u24(uint32_t w) { return (float)(w & 0xFFFFFFu) * (1.0f / 16777216.0f); }
__device__ __forceinline__ uint64_t bits64(uint32_t hi, uint32_t lo) { return ((uint64_t)hi << 32) | lo; }
__device__ __forceinline__ double u53(uint32_t hi, uint32_t lo) {
    return (double)(bits64(hi, lo) & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

__device__ __forceinline__ int64_t first_index() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return (int64_t)blockDim.x * gridDim.x; }

// Calls `f(j, k, words)` for every element j of the iteration, where k = j % per is its place in
// its group and `words` the group's Philox block; a thread takes whole groups.
template <int PER, typename F>
__device__ __forceinline__ void for_each_group(const KcGeometry& g, uint64_t seed, uint64_t offset, F f) {
    const int64_t groups = (g.numel + PER - 1) / PER;
    for (int64_t q = first_index(); q < groups; q += grid_stride()) {
        const Words words = philox(offset + (uint64_t)q, seed);
        for (int k = 0; k < PER; ++k) {
            const int64_t j = q * PER + k;
            if (j < g.numel) f(j, k, words);
        }
    }
}

// uniform_ in [from, to): the uniform scaled in the accumulation type with one fused
// multiply-add (as our CPU kernel, Note [Uniform FMA]), rounded to T, and moved to `from` if the
// rounding reached `to`.
template <typename T> __device__ void uniform(const KcGeometry& g, T* out, uint64_t seed, uint64_t offset, double from, double to) {
    const T to_t = kc::convert<T>(to), from_t = kc::convert<T>(from);
    auto store = [&](int64_t j, T v) {
        const bool hit_to = kc::convert<double>(v) == kc::convert<double>(to_t);
        out[kc::offsets(g, j).at[0]] = hit_to ? from_t : v;
    };
    const float f = (float)from, t = (float)to;
    for_each_group<4>(g, seed, offset, [&](int64_t j, int k, const Words& w) {
        store(j, kc::convert<T>(fmaf(u24(w.w[k]), t - f, f)));
    });
}
template <> __device__ void uniform<double>(const KcGeometry& g, double* out, uint64_t seed, uint64_t offset, double from, double to) {
    for_each_group<2>(g, seed, offset, [&](int64_t j, int k, const Words& w) {
        const double v = fma(u53(w.w[2 * k], w.w[2 * k + 1]), to - from, from);
        out[kc::offsets(g, j).at[0]] = v == to ? from : v;
    });
}

// normal_: Box-Muller on pairs of uniforms, the cosine sample first; in float for the 32- and
// 16-bit floats (two pairs per block), in double for double (one pair of 53-bit uniforms).
template <typename T> __device__ void normal(const KcGeometry& g, T* out, uint64_t seed, uint64_t offset, double mean, double std) {
    const float m = (float)mean, s = (float)std;
    for_each_group<4>(g, seed, offset, [&](int64_t j, int k, const Words& w) {
        const int pair = k / 2;
        const float u1 = u24(w.w[2 * pair]), u2 = u24(w.w[2 * pair + 1]);
        const float r = sqrtf(-2.0f * log1pf(-u2));
        const float theta = 2.0f * 3.14159265358979323846f * u1;
        const float z = (k % 2 == 0) ? r * cosf(theta) : r * sinf(theta);
        out[kc::offsets(g, j).at[0]] = kc::convert<T>(z * s + m);
    });
}
template <> __device__ void normal<double>(const KcGeometry& g, double* out, uint64_t seed, uint64_t offset, double mean, double std) {
    for_each_group<2>(g, seed, offset, [&](int64_t j, int k, const Words& w) {
        const double u1 = u53(w.w[0], w.w[1]), u2 = u53(w.w[2], w.w[3]);
        const double r = sqrt(-2.0 * log1p(-u2));
        const double theta = 2.0 * 3.14159265358979323846 * u1;
        const double z = k == 0 ? r * cos(theta) : r * sin(theta);
        out[kc::offsets(g, j).at[0]] = z * std + mean;
    });
}

// exponential_: -log1p(-u) / lambda, in float (double for double).
template <typename T> __device__ void exponential(const KcGeometry& g, T* out, uint64_t seed, uint64_t offset, double lambd) {
    const float l = (float)lambd;
    for_each_group<4>(g, seed, offset, [&](int64_t j, int k, const Words& w) {
        out[kc::offsets(g, j).at[0]] = kc::convert<T>(-log1pf(-u24(w.w[k])) / l);
    });
}
template <> __device__ void exponential<double>(const KcGeometry& g, double* out, uint64_t seed, uint64_t offset, double lambd) {
    for_each_group<2>(g, seed, offset, [&](int64_t j, int k, const Words& w) {
        out[kc::offsets(g, j).at[0]] = -log1p(-u53(w.w[2 * k], w.w[2 * k + 1])) / lambd;
    });
}

// bernoulli_(p): 1 where a 53-bit uniform is below p, for any output dtype.
template <typename T> __device__ void bernoulli(const KcGeometry& g, T* out, uint64_t seed, uint64_t offset, double p) {
    for_each_group<2>(g, seed, offset, [&](int64_t j, int k, const Words& w) {
        out[kc::offsets(g, j).at[0]] = kc::convert<T>(u53(w.w[2 * k], w.w[2 * k + 1]) < p);
    });
}

// bernoulli_(p tensor) with p of the output's floating dtype (operand 1): a double p is compared
// with a 53-bit uniform, any other with a 24-bit float uniform (as our CPU kernel).
template <typename T> __device__ void bernoulli_tensor(const KcGeometry& g, T* out, const T* p, uint64_t seed, uint64_t offset) {
    for_each_group<4>(g, seed, offset, [&](int64_t j, int k, const Words& w) {
        const kc::Offsets o = kc::offsets(g, j);
        out[o.at[0]] = kc::convert<T>(u24(w.w[k]) < kc::convert<float>(p[o.at[1]]));
    });
}
template <>
__device__ void bernoulli_tensor<double>(const KcGeometry& g, double* out, const double* p, uint64_t seed, uint64_t offset) {
    for_each_group<2>(g, seed, offset, [&](int64_t j, int k, const Words& w) {
        const kc::Offsets o = kc::offsets(g, j);
        out[o.at[0]] = u53(w.w[2 * k], w.w[2 * k + 1]) < p[o.at[1]] ? 1.0 : 0.0;
    });
}

// random_: `bits % range + base` with 32-bit draws, or 64-bit ones when `wide`; range 0 stands
// for 2^64 (the full int64 range). The host checked that every value fits the dtype.
template <typename T>
__device__ void random_int(const KcGeometry& g, T* out, uint64_t seed, uint64_t offset, uint64_t range, int64_t base, bool wide) {
    auto value = [&](uint64_t bits) {
        const uint64_t v = range == 0 ? bits : bits % range;
        return kc::convert<T>((int64_t)(v + (uint64_t)base));
    };
    if (wide) {
        for_each_group<2>(g, seed, offset, [&](int64_t j, int k, const Words& w) {
            out[kc::offsets(g, j).at[0]] = value(bits64(w.w[2 * k], w.w[2 * k + 1]));
        });
    } else {
        for_each_group<4>(g, seed, offset, [&](int64_t j, int k, const Words& w) {
            out[kc::offsets(g, j).at[0]] = value(w.w[k]);
        });
    }
}

}  // namespace

#define KC_RANDOM_FLOAT(sfx, T)                                                                                      \
    extern "C" __global__ void uniform_##sfx(KcGeometry g, T* out, uint64_t seed, uint64_t offset, double from,     \
                                             double to) {                                                            \
        uniform<T>(g, out, seed, offset, from, to);                                                                  \
    }                                                                                                                \
    extern "C" __global__ void normal_##sfx(KcGeometry g, T* out, uint64_t seed, uint64_t offset, double mean,      \
                                            double std) {                                                            \
        normal<T>(g, out, seed, offset, mean, std);                                                                  \
    }                                                                                                                \
    extern "C" __global__ void exponential_##sfx(KcGeometry g, T* out, uint64_t seed, uint64_t offset, double lambd) { \
        exponential<T>(g, out, seed, offset, lambd);                                                                 \
    }                                                                                                                \
    extern "C" __global__ void bernoulli_tensor_##sfx(KcGeometry g, T* out, const T* p, uint64_t seed, uint64_t offset) { \
        bernoulli_tensor<T>(g, out, p, seed, offset);                                                                \
    }
KC_FOR_FLOAT_TYPES(KC_RANDOM_FLOAT)
#undef KC_RANDOM_FLOAT

#define KC_RANDOM_ANY(sfx, T)                                                                                        \
    extern "C" __global__ void bernoulli_##sfx(KcGeometry g, T* out, uint64_t seed, uint64_t offset, double p) {    \
        bernoulli<T>(g, out, seed, offset, p);                                                                       \
    }                                                                                                                \
    extern "C" __global__ void random_##sfx(KcGeometry g, T* out, uint64_t seed, uint64_t offset, uint64_t range,   \
                                            int64_t base, bool wide) {                                               \
        random_int<T>(g, out, seed, offset, range, base, wide);                                                      \
    }
KC_FOR_ALL_TYPES(KC_RANDOM_ANY)
#undef KC_RANDOM_ANY
