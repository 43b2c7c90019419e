// Self-test of the CUDA CPU emulator: runs the kernels of selftest.cu through the generated
// cuda_emu_kernel_* entry points (the path the Rust side uses) and checks the results against expectations
// computed here from CUDA's documented semantics. `selftest --bench` prints timings instead.
//
// The scheduling order and worker count come from CUDA_EMU_SCHED and CUDA_EMU_WORKERS; run.sh runs the
// suite under several of each. Prints one summary line and exits non-zero if a check failed.
#include "cuda_cpu.h"

#include "atomic_counters.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

using Entry = int (*)(const unsigned grid[3], const unsigned block[3], unsigned shmem, void** params);

#define SELFTEST_KERNELS(X)                                                                               \
    X(shfl_int) X(shfl_types) X(votes) X(reductions) X(matches) X(barrier_votes) X(syncwarp_reduce)       \
    X(atomics) X(half_ops) X(intrinsics) X(coords) X(dyn_smem) X(params) X(order_probe) X(which_worker)    \
    X(spin_handoff) X(block_reduce_rows) X(reduce_int) X(add_f32) X(sum_f32) X(barriers)                  \
    X(bug_missing_sync) X(bug_early_return_shfl) X(bug_divergent_barrier) X(bug_barrier_count)            \
    X(bug_barrier_loop_exit) X(bug_assert) X(bug_mask_without_caller) X(bug_read_outside_mask)            \
    X(bug_mismatched_collectives) X(bug_trap)
#define DECLARE_ENTRY(name)                                                                                \
    extern "C" int cuda_emu_kernel_##name(const unsigned grid[3], const unsigned block[3], unsigned shmem, \
                                          void** params);
SELFTEST_KERNELS(DECLARE_ENTRY)
#undef DECLARE_ENTRY

namespace {

constexpr unsigned kFull = 0xffffffffu;

// Launches like cuLaunchKernel: params[i] points at a copy of the i-th argument. The argument types must be
// exactly the kernel's parameter types.
template <typename... A>
int launch(Entry entry, dim3 grid, dim3 block, unsigned shmem, A... args) {
    void* params[] = {static_cast<void*>(&args)...};
    const unsigned g[3] = {grid.x, grid.y, grid.z};
    const unsigned b[3] = {block.x, block.y, block.z};
    return entry(g, b, shmem, params);
}

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

int g_passed = 0;
int g_failed = 0;

void check(bool ok, const std::string& what) {
    if (ok) {
        ++g_passed;
    } else {
        ++g_failed;
        std::printf("FAIL: %s\n", what.c_str());
    }
}

// A launch that must succeed.
void check_launch(int rc, const char* what) {
    check(rc == CUDA_EMU_OK, format("%s: launch failed with %d: %s", what, rc, cuda_emu_last_error()));
}

// A launch that must fail with `code` and a message containing each of `needles`.
void check_fails(int rc, int code, const char* what, std::initializer_list<const char*> needles) {
    const std::string msg = cuda_emu_last_error();
    bool ok = rc == code;
    for (const char* n : needles) ok = ok && msg.find(n) != std::string::npos;
    check(ok, format("%s: expected error %d mentioning the expected words, got %d: %s", what, code, rc, msg.c_str()));
}

// ---------------------------------------------------------------------------------------------------------
// Warp intrinsics
// ---------------------------------------------------------------------------------------------------------

// Source lane of a shuffle per the CUDA programming guide, with `lane` the lane in the warp.
unsigned shfl_source(int mode, unsigned lane, int arg, int width) {
    const unsigned w = static_cast<unsigned>(width);
    const unsigned base = lane / w * w;  // first lane of the lane's segment
    switch (mode) {
        case 0:  // srcLane modulo width, within the segment
            return base + static_cast<unsigned>(arg & (width - 1));
        case 1:
            return base + static_cast<unsigned>((static_cast<int>(lane) * 5 + arg) & (width - 1));
        case 2:  // up: own value if lane - delta falls below the segment
            return lane - base >= static_cast<unsigned>(arg) ? lane - static_cast<unsigned>(arg) : lane;
        case 3:  // down: own value if lane + delta falls past the segment
            return lane - base + static_cast<unsigned>(arg) < w ? lane + static_cast<unsigned>(arg) : lane;
        default:  // xor: may read earlier segments, not later ones
            return (lane ^ static_cast<unsigned>(arg)) < base + w ? lane ^ static_cast<unsigned>(arg) : lane;
    }
}

void test_shuffles() {
    const char* names[] = {"shfl idx", "shfl idx per lane", "shfl up", "shfl down", "shfl xor"};
    for (unsigned nthreads : {64u, 48u}) {  // 48: the second warp has 16 lanes
        std::vector<int> out(nthreads);
        for (int mode = 0; mode < 5; ++mode) {
            for (int width : {1, 2, 4, 8, 16, 32}) {
                for (int arg : {0, 1, 2, 3, 5, 7, 8, 15, 16, 17, 31, -1, -7}) {
                    if (arg < 0 && mode >= 2) continue;  // negative offsets only for source lanes
                    check_launch(launch(cuda_emu_kernel_shfl_int, 1, nthreads, 0, out.data(), mode, arg, width),
                                 names[mode]);
                    bool ok = true;
                    std::string detail;
                    for (unsigned t = 0; t < nthreads && ok; ++t) {
                        const unsigned warp = t / 32, lane = t % 32;
                        const unsigned src = warp * 32 + shfl_source(mode, lane, arg, width);
                        // A lane past the end of a partial warp reads as all ones.
                        const int expected = src < nthreads ? 1000 + 7 * static_cast<int>(src) : -1;
                        if (out[t] != expected) {
                            ok = false;
                            detail = format("thread %u got %d, expected %d", t, out[t], expected);
                        }
                    }
                    check(ok, format("%s, %u threads, arg %d, width %d: %s", names[mode], nthreads, arg, width,
                                     detail.c_str()));
                }
            }
        }
    }

    std::vector<double> d(64);
    std::vector<__half2> h2(64);
    std::vector<__half> h(64);
    std::vector<long long> ll(64);
    check_launch(launch(cuda_emu_kernel_shfl_types, 1, 64, 0, d.data(), h2.data(), h.data(), ll.data()), "shfl_types");
    bool ok = true;
    for (unsigned t = 0; t < 64; ++t) {
        const unsigned x = t ^ 1u;
        const unsigned down = (t % 8 + 3 < 8) ? t + 3 : t;
        ok = ok && d[t] == 0.5 + x && __low2float(h2[t]) == static_cast<float>(x) &&
             __high2float(h2[t]) == -static_cast<float>(x) &&
             __half2float(h[t]) == static_cast<float>(x) && ll[t] == (1ll << 40) + down;
    }
    check(ok, "shuffles of double, __half2, __half and long long (down by 3 in segments of 8)");
}

std::uint32_t ballot_of(unsigned nlanes, std::uint32_t mask, bool (*pred)(unsigned)) {
    std::uint32_t r = 0;
    for (unsigned l = 0; l < nlanes; ++l)
        if ((mask >> l & 1u) && pred(l)) r |= 1u << l;
    return r;
}

void test_votes() {
    const unsigned n = 48;
    std::vector<unsigned> out(6 * n);
    check_launch(launch(cuda_emu_kernel_votes, 1, n, 0, out.data()), "votes");
    for (unsigned t = 0; t < n; ++t) {
        const unsigned lane = t % 32;
        const unsigned nlanes = t < 32 ? 32 : n - 32;
        const std::uint32_t exists = nlanes == 32 ? kFull : (1u << nlanes) - 1u;
        const unsigned* o = &out[6 * t];
        unsigned e0, e1, e2;
        if (lane % 2 == 0) {
            e0 = ballot_of(nlanes, 0x55555555u, [](unsigned l) { return l % 3 == 0; });
            e1 = ballot_of(nlanes, 0x55555555u, [](unsigned l) { return l == 30; }) != 0;
            e2 = ballot_of(nlanes, 0x55555555u, [](unsigned l) { return l < 31; }) == (0x55555555u & exists);
        } else {
            e0 = ballot_of(nlanes, 0xaaaaaaaau, [](unsigned l) { return l % 4 == 1; });
            e1 = ballot_of(nlanes, 0xaaaaaaaau, [](unsigned l) { return l == 30; }) != 0;
            e2 = ballot_of(nlanes, 0xaaaaaaaau, [](unsigned l) { return l < 31; }) == (0xaaaaaaaau & exists);
        }
        const unsigned e3 = lane < 20 ? (0x000fffffu & exists) : 0;
        const bool active_ok = (o[5] >> lane & 1u) && (o[5] & ~exists) == 0;
        check(o[0] == e0 && o[1] == e1 && o[2] == e2 && o[3] == e3 && o[4] == exists && active_ok,
              format("votes thread %u: got ballot %08x any %u all %u partial %08x full %08x active %08x, expected "
                     "%08x %u %u %08x %08x",
                     t, o[0], o[1], o[2], o[3], o[4], o[5], e0, e1, e2, e3, exists));
    }
}

void test_reductions_and_matches() {
    std::vector<int> r(11 * 64);
    check_launch(launch(cuda_emu_kernel_reductions, 1, 64, 0, r.data()), "reductions");
    int add = 0, mn = 1 << 30, mx = -(1 << 30), add20 = 0;
    unsigned umn = kFull, umx = 0, xr = 0;
    for (unsigned l = 0; l < 32; ++l) {
        const int s = static_cast<int>(l) * 3 - 40;
        add += s;
        mn = std::min(mn, s);
        mx = std::max(mx, s);
        umn = std::min(umn, static_cast<unsigned>(s));
        umx = std::max(umx, static_cast<unsigned>(s));
        xr ^= l;
        if (l < 20) add20 += s;
    }
    for (unsigned t = 0; t < 64; ++t) {
        const int* o = &r[11 * t];
        const bool ok = o[0] == add && o[1] == mn && o[2] == mx && static_cast<unsigned>(o[3]) == umn &&
                        static_cast<unsigned>(o[4]) == umx && o[5] == 0xf0 && static_cast<unsigned>(o[6]) == kFull &&
                        static_cast<unsigned>(o[7]) == xr && o[8] == (t % 32 < 20 ? add20 : 0) &&
                        static_cast<unsigned>(o[9]) == kFull && o[10] == 1;
        check(ok, format("__reduce_*_sync / __match_all_sync thread %u: %d %d %d %d %d %d %d %d %d %d %d", t, o[0],
                         o[1], o[2], o[3], o[4], o[5], o[6], o[7], o[8], o[9], o[10]));
    }

    std::vector<unsigned> m(3 * 64);
    check_launch(launch(cuda_emu_kernel_matches, 1, 64, 0, m.data()), "matches");
    for (unsigned t = 0; t < 64; ++t) {
        const unsigned lane = t % 32;
        std::uint32_t same = 0;
        for (unsigned l = 0; l < 32; ++l)
            if (l % 5 == lane % 5) same |= 1u << l;
        const std::uint32_t dbl = lane < 7 ? 0x7fu : ~0x7fu;
        check(m[3 * t] == same && m[3 * t + 1] == dbl && m[3 * t + 2] == 0,
              format("__match_any_sync thread %u: %08x %08x %08x, expected %08x %08x 0", t, m[3 * t], m[3 * t + 1],
                     m[3 * t + 2], same, dbl));
    }
}

void test_barrier_votes_and_syncwarp() {
    for (unsigned n : {256u, 100u, 50u, 1u}) {
        std::vector<int> out(4 * 3);
        check_launch(launch(cuda_emu_kernel_barrier_votes, 3, n, 0, out.data()), "barrier_votes");
        const int count = static_cast<int>((n + 2) / 3);
        bool ok = true;
        for (int b = 0; b < 3; ++b) {
            ok = ok && out[4 * b] == count && out[4 * b + 1] == 1 && out[4 * b + 2] == (n > 77) && out[4 * b + 3] == 0;
        }
        check(ok, format("__syncthreads_count/and/or with %u threads: %d %d %d %d", n, out[0], out[1], out[2], out[3]));
    }

    std::vector<int> in(4 * 32), out(4);
    for (int i = 0; i < 128; ++i) in[i] = i * i - 50;
    check_launch(launch(cuda_emu_kernel_syncwarp_reduce, 4, 32, 0, in.data(), out.data()), "syncwarp_reduce");
    for (int b = 0; b < 4; ++b) {
        int s = 0;
        for (int i = 0; i < 32; ++i) s += in[32 * b + i];
        check(out[b] == s, format("__syncwarp reduction of warp %d: %d, expected %d", b, out[b], s));
    }
}

// ---------------------------------------------------------------------------------------------------------
// Atomics
// ---------------------------------------------------------------------------------------------------------

// Zero, except where the kernel's atomicMin/atomicAnd and the atomicExch check need other starting values.
AtomicCounters fresh_counters() {
    AtomicCounters c;
    std::memset(static_cast<void*>(&c), 0, sizeof c);
    c.u_min = kFull;
    c.ull_min = ~0ull;
    c.and_bits = kFull;
    c.ll_and = -1;
    c.exch = -1;
    return c;
}

void test_atomics() {
    for (dim3 block : {dim3(256), dim3(16, 16), dim3(8, 4, 8)}) {
        AtomicCounters c = fresh_counters();
        check_launch(launch(cuda_emu_kernel_atomics, 64, block, 0, &c), "atomics");
        const long long n = 64 * 256;
        bool ors = true;
        for (unsigned w : c.or_bits) ors = ors && w == kFull;
        check(c.i_add == n && c.i_sub == -2 * n && c.u_add == 3 * n && c.u_inc == n % 100 &&
                  c.u_dec == (100 - n % 100) % 100 && c.ull_add == static_cast<unsigned long long>(n) << 33 &&
                  c.u_add_block == n && c.i_sub_system == -3 * n && c.i_cas == n && c.us_cas == n % 65536 &&
                  c.ull_cas == 2ull * n,
              format("integer atomics: add %d sub %d u %u inc %u dec %u ull %llu block %u system %d cas %d/%u/%llu",
                     c.i_add, c.i_sub, c.u_add, c.u_inc, c.u_dec, c.ull_add, c.u_add_block, c.i_sub_system, c.i_cas,
                     c.us_cas, c.ull_cas));
        check(c.i_max == n - 1 && c.i_min == -(n - 1) && c.u_max == 3 * (n - 1) && c.u_min == 10 &&
                  c.ll_max == (n - 1) << 32 && c.ll_min == -((n - 1) << 32) &&
                  c.ull_max == static_cast<unsigned long long>(n - 1) << 40 && c.ull_min == 1ull << 50,
              "atomicMin / atomicMax");
        check(ors && c.and_bits == 0 && c.xor_all == 0 && c.xor_three == kFull && (c.exch_xor ^ c.exch) == -1 &&
                  c.ll_or == -1 && c.ll_and == 0 && c.f_exch == 1.0f,
              format("bitwise atomics and atomicExch: and %08x xor %08x/%08x exch %d^%d", c.and_bits, c.xor_all,
                     c.xor_three, c.exch, c.exch_xor));
        check(c.f_add == static_cast<float>(n) && c.d_add == 0.5 * n && c.f_max_cas == 499.5f,
              format("float atomics: add %g double %g max by CAS %g", c.f_add, c.d_add, c.f_max_cas));
        check(__half2float(c.h_add) == 2000.0f && __bfloat162float(c.b_add) == 250.0f &&
                  __low2float(c.h2_add) == 1000.0f && __high2float(c.h2_add) == 500.0f &&
                  __low2float(c.b2_add) == 100.0f && __high2float(c.b2_add) == 200.0f && c.f2_add.x == 100.0f &&
                  c.f2_add.y == 200.0f,
              format("fp16/bf16/float2 atomicAdd: %g %g (%g, %g) (%g, %g) (%g, %g)", __half2float(c.h_add),
                     __bfloat162float(c.b_add), __low2float(c.h2_add), __high2float(c.h2_add),
                     __low2float(c.b2_add), __high2float(c.b2_add), c.f2_add.x, c.f2_add.y));
    }
}

// ---------------------------------------------------------------------------------------------------------
// fp16 / bf16
// ---------------------------------------------------------------------------------------------------------

// Exact a*b+c of fp16 or bf16 values (finite, as floats), correctly rounded to a format with `p` significand
// bits and smallest normal exponent `emin`; overflow gives infinity. Independent of the emulator's
// round-to-odd: the sum is formed exactly in 128-bit integers.
double exact_fma(float a, float b, float c, int p, int emin, double max_finite) {
    auto parts = [](float x, __int128* m, int* e) {  // x = m * 2^e with m odd (or zero)
        int ex = 0;
        const double f = std::frexp(static_cast<double>(x), &ex);
        long long mi = static_cast<long long>(std::ldexp(f, 53));
        *e = ex - 53;
        while (mi != 0 && (mi & 1) == 0) {
            mi /= 2;
            ++*e;
        }
        *m = mi;
    };
    __int128 ma, mb, mc;
    int ea, eb, ec;
    parts(a, &ma, &ea);
    parts(b, &mb, &eb);
    parts(c, &mc, &ec);
    const __int128 mp = ma * mb;
    const int ep = ea + eb;
    if (mp == 0 && mc == 0) return 0.0;
    const int u = mp == 0 ? ec : mc == 0 ? ep : std::min(ep, ec);  // unit exponent of the sum
    const __int128 one = 1;
    // Multiplied, not shifted: the m may be negative. A zero term's exponent is meaningless, so not used.
    const __int128 s = (mp == 0 ? 0 : mp * (one << (ep - u))) + (mc == 0 ? 0 : mc * (one << (ec - u)));
    if (s == 0) return 0.0;
    const bool neg = s < 0;
    unsigned __int128 mag = static_cast<unsigned __int128>(neg ? -s : s);
    int bits = 0;
    for (unsigned __int128 t = mag; t != 0; t >>= 1) ++bits;
    const int quantum = std::max(bits - 1 + u - (p - 1), emin - (p - 1));  // exponent of the last kept bit
    const int shift = quantum - u;
    double v = 0.0;
    if (shift > 0) {  // round to nearest even at bit `shift`
        const unsigned __int128 q = mag >> shift;
        const unsigned __int128 rem = mag - (q << shift);
        const unsigned __int128 half = static_cast<unsigned __int128>(1) << (shift - 1);
        v = std::ldexp(static_cast<double>((rem > half || (rem == half && (q & 1))) ? q + 1 : q), quantum);
    } else {
        v = std::ldexp(static_cast<double>(mag), u);  // exact
    }
    const double r = v > max_finite ? INFINITY : v;
    return neg ? -r : r;
}

void test_half() {
    // Round trips through float of every finite fp16 and bf16 value.
    bool ok_h = true, ok_b = true;
    for (unsigned u = 0; u < 65536; ++u) {
        const __half h = __ushort_as_half(static_cast<unsigned short>(u));
        if (!__hisnan(h)) ok_h = ok_h && __half_as_ushort(__float2half(__half2float(h))) == u;
        const __nv_bfloat16 b = __ushort_as_bfloat16(static_cast<unsigned short>(u));
        if (!__hisnan(b)) ok_b = ok_b && __bfloat16_as_ushort(__float2bfloat16(__bfloat162float(b))) == u;
    }
    check(ok_h, "every fp16 value survives __half2float / __float2half");
    check(ok_b, "every bf16 value survives __bfloat162float / __float2bfloat16");
    check(__half_as_ushort(__float2half(1.0f + std::ldexp(1.0f, -11))) == 0x3c00 &&
              __half_as_ushort(__float2half(1.0f + 3 * std::ldexp(1.0f, -11))) == 0x3c02 &&
              __hisinf(__float2half(65520.0f)) && __half2float(__float2half(65519.0f)) == 65504.0f &&
              __bfloat16_as_ushort(__float2bfloat16(1.0f + std::ldexp(1.0f, -8))) == 0x3f80 &&
              __bfloat16_as_ushort(__float2bfloat16(1.0f + 3 * std::ldexp(1.0f, -8))) == 0x3f82,
          "float to fp16/bf16 rounds to nearest even and overflows to infinity");

    // __hfma, hexp, __hmax, __hmin in a kernel against references: random fp16 triples, and bf16 triples with
    // moderate exponents (so the exact reference fits in 128 bits).
    const int n = 1 << 16;
    std::mt19937 rng(1234);
    std::vector<__half> a(n), b(n), c(n), oh(4 * n);
    std::vector<__nv_bfloat16> ba(n), bb(n), bc(n), ob(4 * n);
    auto finite_half = [&rng] {
        for (;;) {
            const __half h = __ushort_as_half(static_cast<unsigned short>(rng()));
            if (!__hisnan(h) && !__hisinf(h)) return h;
        }
    };
    auto moderate_bf16 = [&rng] {
        const float m = static_cast<float>(rng() % 256) / 128.0f;  // 0 to 2 with 8 significant bits at most
        const int e = static_cast<int>(rng() % 40) - 20;
        return __float2bfloat16((rng() & 1 ? -1.0f : 1.0f) * std::ldexp(m, e));
    };
    for (int i = 0; i < n; ++i) {
        a[i] = finite_half();
        b[i] = finite_half();
        c[i] = finite_half();
        ba[i] = moderate_bf16();
        bb[i] = moderate_bf16();
        bc[i] = moderate_bf16();
    }
    check_launch(launch(cuda_emu_kernel_half_ops, (n + 255) / 256, 256, 0, a.data(), b.data(), c.data(), oh.data(),
                        static_cast<const __nv_bfloat16*>(ba.data()), static_cast<const __nv_bfloat16*>(bb.data()),
                        static_cast<const __nv_bfloat16*>(bc.data()), ob.data(), n),
                 "half_ops");
    int bad_fma_h = 0, bad_fma_b = 0, bad_other = 0, float_fma_differs = 0;
    for (int i = 0; i < n; ++i) {
        const float fa = __half2float(a[i]), fb = __half2float(b[i]), fc = __half2float(c[i]);
        const double e = exact_fma(fa, fb, fc, 11, -14, 65504.0);
        const float got = __half2float(oh[4 * i]);
        if (!(got == static_cast<float>(e))) ++bad_fma_h;
        // How often fmaf followed by a second rounding to fp16 differs: the cases round-to-odd exists for.
        if (__half2float(__float2half(std::fma(fa, fb, fc))) != static_cast<float>(e)) ++float_fma_differs;
        if (__half_as_ushort(oh[4 * i + 1]) != __half_as_ushort(__float2half(std::exp(fa)))) ++bad_other;
        if (__half2float(oh[4 * i + 2]) != std::max(fa, fb) || __half2float(oh[4 * i + 3]) != std::min(fa, fb)) {
            ++bad_other;
        }
        const float ga = __bfloat162float(ba[i]), gb = __bfloat162float(bb[i]), gc = __bfloat162float(bc[i]);
        const double eb = exact_fma(ga, gb, gc, 8, -126, 3.3895313892515355e38);
        if (!(__bfloat162float(ob[4 * i]) == static_cast<float>(eb))) ++bad_fma_b;
        if (__bfloat16_as_ushort(ob[4 * i + 1]) != __bfloat16_as_ushort(__float2bfloat16(std::exp(ga)))) ++bad_other;
        if (__bfloat162float(ob[4 * i + 2]) != std::max(ga, gb) || __bfloat162float(ob[4 * i + 3]) != std::min(ga, gb))
            ++bad_other;
    }
    check(bad_fma_h == 0, format("__hfma(fp16) is correctly rounded: %d of %d differ", bad_fma_h, n));
    check(bad_fma_b == 0, format("__hfma(bf16) is correctly rounded: %d of %d differ", bad_fma_b, n));
    check(float_fma_differs > 0, "the fp16 fma inputs include cases where rounding twice would be wrong");
    check(bad_other == 0, format("hexp/__hmax/__hmin: %d mismatches", bad_other));
}

void test_intrinsics() {
    std::vector<long long> out(64, -12345);
    check_launch(launch(cuda_emu_kernel_intrinsics, 1, 1, 0, out.data(), std::numeric_limits<float>::quiet_NaN()),
                 "intrinsics");
    const long long expected[] = {
        8,           40,          31,         32,         63,          5,          0,
        41,          0x80000000,  0x80000000, 1,          -1,          2,          0x3f800000,
        0x80000000,  0x3ff0000000000000ll,    3141,       1,           0xffffffff, -3,
        25,          0x55441100,  3,          0x80000000, 2,           4,          INT_MIN,
        -2,          -3,          3,          0,          0,           10,         0,
        17,          -2,          3,          200,        25,          2,          0x3c00,
        0x3f80,      47,          95,         12,         99975,       31406,
    };
    const int count = static_cast<int>(sizeof expected / sizeof expected[0]);
    for (int i = 0; i < count; ++i) {
        check(out[i] == expected[i], format("intrinsic #%d: got %lld (0x%llx), expected %lld", i, out[i],
                                            static_cast<unsigned long long>(out[i]), expected[i]));
    }
    check(out[count] == -12345, "the intrinsics kernel writes exactly the expected number of values");
}

// ---------------------------------------------------------------------------------------------------------
// Coordinates, dynamic shared memory, parameters, scheduling
// ---------------------------------------------------------------------------------------------------------

void test_coords() {
    const dim3 grid(3, 2, 2), block(8, 4, 2);
    const unsigned per_block = block.x * block.y * block.z, total = per_block * grid.x * grid.y * grid.z;
    std::vector<unsigned> out(12 * total, 0xdeadbeefu);
    check_launch(launch(cuda_emu_kernel_coords, grid, block, 0, out.data()), "coords");
    bool ok = true;
    std::string first;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx)
                for (unsigned tz = 0; tz < block.z; ++tz)
                    for (unsigned ty = 0; ty < block.y; ++ty)
                        for (unsigned tx = 0; tx < block.x; ++tx) {
                            const unsigned blk = bx + grid.x * (by + grid.y * bz);
                            const unsigned t = tx + block.x * (ty + block.y * tz);
                            const unsigned* o = &out[12 * (blk * per_block + t)];
                            const unsigned e[12] = {tx, ty, tz, bx, by, bz, block.x, block.y, block.z,
                                                    grid.x, grid.y, grid.z};
                            for (int k = 0; k < 12; ++k) {
                                if (o[k] != e[k] && ok) {
                                    ok = false;
                                    first = format("block (%u,%u,%u) thread (%u,%u,%u) value %d: %u", bx, by, bz, tx,
                                                   ty, tz, k, o[k]);
                                }
                            }
                        }
    check(ok, "threadIdx/blockIdx/blockDim/gridDim in a 3-D grid of 3-D blocks: " + first);
}

void test_dyn_smem() {
    // 227 KiB is the limit and must work; the second launch must see the buffer refilled with 0xff bytes.
    for (int words_per_thread : {1, 16, 227}) {
        for (int round = 0; round < 2; ++round) {
            const unsigned blocks = 3, threads = 256;
            const unsigned shmem = static_cast<unsigned>(words_per_thread) * threads * 4;
            std::vector<unsigned> out(blocks * threads);
            std::vector<int> fresh(blocks);
            check_launch(launch(cuda_emu_kernel_dyn_smem, blocks, threads, shmem, out.data(), fresh.data(),
                                words_per_thread),
                         "dyn_smem");
            bool ok = true;
            for (unsigned b = 0; b < blocks; ++b) {
                ok = ok && fresh[b] == static_cast<int>(threads);
                for (unsigned t = 0; t < threads; ++t) {
                    ok = ok && out[b * threads + t] == (threads - 1 - t) * 3 + b;
                }
            }
            check(ok, format("dynamic shared memory of %u bytes (launch %d): fresh %d/%d/%d", shmem, round, fresh[0],
                             fresh[1], fresh[2]));
        }
    }
}

void test_params() {
    const int n = 1000;
    std::vector<float> in(n), out(n);
    for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i);
    const float4 coeffs = make_float4(2.0f, 1.0f, 0.0f, 0.0f);
    check_launch(launch(cuda_emu_kernel_params, 4, 256, 0, out.data(), static_cast<const float*>(in.data()), coeffs,
                        n, 0.5, static_cast<char>(3)),
                 "params");
    bool ok = true;
    for (int i = 0; i < n; ++i) ok = ok && out[i] == (2.0f * i + 1.0f) * 0.5f + 3.0f + 0.25f * (i % 4);
    check(ok, "float4, int, double and char parameters by value, and __constant__ data");
}

void test_spin_handoff() {
    std::vector<int> out(4 * 64, 0);
    check_launch(launch(cuda_emu_kernel_spin_handoff, 4, 64, 0, out.data()), "spin_handoff");
    bool ok = true;
    for (int b = 0; b < 4; ++b)
        for (int t = 32; t < 64; ++t) ok = ok && out[64 * b + t] == 42 + b + t;
    check(ok, "a warp spinning with __nanosleep on another warp's flag");
}

// The API overrides CUDA_EMU_SCHED; NULL restores it.
void test_schedule_api() {
    std::vector<int> ticket(64);
    auto probe = [&ticket] {
        int counter = 0;
        check_launch(launch(cuda_emu_kernel_order_probe, 1, 64, 0, ticket.data(), &counter), "order_probe");
    };
    check(cuda_emu_set_schedule("fwd") == 0, "set_schedule(fwd)");
    probe();
    bool fwd = true;
    for (int t = 0; t < 64; ++t) fwd = fwd && ticket[t] == t;
    check(fwd, "fwd runs warp 0 first and lanes upwards");
    check(cuda_emu_set_schedule("rev") == 0, "set_schedule(rev)");
    probe();
    bool rev = true;
    for (int t = 0; t < 64; ++t) rev = rev && ticket[t] == 63 - t;
    check(rev, "rev runs the last warp first and lanes downwards");
    check(cuda_emu_set_schedule("rand:5") == 0, "set_schedule(rand:5)");
    probe();
    const std::vector<int> first = ticket;
    probe();
    std::vector<bool> seen(64, false);
    bool perm = true;
    for (int t = 0; t < 64; ++t) {
        perm = perm && ticket[t] >= 0 && ticket[t] < 64 && !seen[ticket[t]];
        if (perm) seen[ticket[t]] = true;
    }
    check(perm && ticket == first, "rand:5 runs every thread once, reproducibly");
    for (const char* bad : {"bogus", "rand:", "rand:x", "rand:-1", "fwd ", "rand:1x", ""}) {
        check(cuda_emu_set_schedule(bad) == -1, format("set_schedule(\"%s\") is rejected", bad));
    }
    check(cuda_emu_set_schedule(nullptr) == 0, "set_schedule(NULL) restores the environment's schedule");
}

// ---------------------------------------------------------------------------------------------------------
// common.cuh
// ---------------------------------------------------------------------------------------------------------

void test_common() {
    const dim3 blocks[] = {dim3(1), dim3(7), dim3(32), dim3(48), dim3(96), dim3(256), dim3(1024), dim3(8, 6),
                           dim3(16, 4, 3)};
    for (const dim3& block : blocks) {
        const int rows = 5, n = 3001;
        std::vector<float> in(static_cast<std::size_t>(rows) * n), out(4 * rows);
        for (std::size_t i = 0; i < in.size(); ++i) {
            in[i] = static_cast<float>(static_cast<int>(i * 7919 % 2001) - 1000);
        }
        check_launch(launch(cuda_emu_kernel_block_reduce_rows, rows, block, 0, static_cast<const float*>(in.data()),
                            out.data(), n),
                     "block_reduce_rows");
        for (int r = 0; r < rows; ++r) {
            float s = 0, mx = -INFINITY, mn = INFINITY;  // integer values: every order gives the exact sum
            for (int i = 0; i < n; ++i) {
                const float v = in[static_cast<std::size_t>(r) * n + i];
                s += v;
                mx = std::max(mx, v);
                mn = std::min(mn, v);
            }
            check(out[4 * r] == s && out[4 * r + 1] == mx && out[4 * r + 2] == mn && out[4 * r + 3] == 0.0f,
                  format("block_reduce with block (%u,%u,%u), row %d: %g %g %g (%g mismatching threads), expected %g "
                         "%g %g",
                         block.x, block.y, block.z, r, out[4 * r], out[4 * r + 1], out[4 * r + 2], out[4 * r + 3], s,
                         mx, mn));
        }
    }

    const unsigned nblocks = 6, threads = 128;
    std::vector<int> in(nblocks * threads), warp_out(3 * nblocks * threads);
    std::vector<long long> out(nblocks);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i * 2654435761u % 100000) - 50000;
    check_launch(launch(cuda_emu_kernel_reduce_int, nblocks, threads, 0, static_cast<const int*>(in.data()),
                        out.data(), warp_out.data()),
                 "reduce_int");
    for (unsigned b = 0; b < nblocks; ++b) {
        long long s = 0;
        for (unsigned t = 0; t < threads; ++t) s += in[b * threads + t];
        check(out[b] == s, format("block_reduce<long long> of block %u: %lld, expected %lld", b, out[b], s));
    }
    bool ok = true;
    for (unsigned g = 0; g < nblocks * threads; ++g) {
        const unsigned w0 = g / 32 * 32;
        int s = 0, mx = INT_MIN, mn = INT_MAX;
        for (unsigned l = 0; l < 32; ++l) {
            s += in[w0 + l];
            mx = std::max(mx, in[w0 + l]);
            mn = std::min(mn, in[w0 + l]);
        }
        ok = ok && warp_out[3 * g] == s && warp_out[3 * g + 1] == mx && warp_out[3 * g + 2] == mn;
    }
    check(ok, "warp_reduce sum/max/min reach every lane");
}

// ---------------------------------------------------------------------------------------------------------
// Planted bugs and invalid launches
// ---------------------------------------------------------------------------------------------------------

void test_bugs() {
    // The missing barrier must change the result (compared with a reference, not an invariant).
    {
        const unsigned blocks = 4, threads = 256;
        std::vector<float> in(blocks * threads), out(blocks * threads), sums(blocks);
        for (unsigned i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % threads);
        int wrong[2] = {0, 0};
        for (int fixed = 0; fixed < 2; ++fixed) {
            check_launch(launch(cuda_emu_kernel_bug_missing_sync, blocks, threads, 0,
                                static_cast<const float*>(in.data()), out.data(), sums.data(), fixed),
                         "bug_missing_sync");
            for (float v : out) wrong[fixed] += v != static_cast<float>(threads - 1);
            for (float s : sums) wrong[fixed] += s != static_cast<float>(threads * (threads - 1) / 2);
        }
        check(wrong[0] > 0, "a missing __syncthreads between two reductions through shared memory gives wrong maxima");
        check(wrong[1] == 0, format("with the barrier the same kernel is right (%d wrong values)", wrong[1]));
    }
    std::vector<int> out(1024);
    check_fails(launch(cuda_emu_kernel_bug_early_return_shfl, 1, 64, 0, out.data(), 40), CUDA_EMU_ERROR_KERNEL,
                "early return, then a full-mask shuffle", {"exited", "__shfl_xor_sync", "thread (", "block (0,0,0)"});
    check_fails(launch(cuda_emu_kernel_bug_divergent_barrier, 2, 128, 0, out.data()), CUDA_EMU_ERROR_KERNEL,
                "__syncthreads in a divergent branch", {"divergent barrier", "thread ("});
    check_fails(launch(cuda_emu_kernel_bug_barrier_count, 1, 64, 0, out.data()), CUDA_EMU_ERROR_KERNEL,
                "thread-dependent barrier count, then a shuffle", {"deadlock", "__shfl_xor_sync"});
    check_fails(launch(cuda_emu_kernel_bug_barrier_loop_exit, 1, 32, 0, out.data()), CUDA_EMU_ERROR_KERNEL,
                "thread-dependent barrier count, then exit", {"divergent barrier"});
    check_fails(launch(cuda_emu_kernel_bug_assert, 3, 32, 0, out.data(), 10), CUDA_EMU_ERROR_KERNEL, "failing assert",
                {"assertion", "selftest.cu", "block (0,0,0) thread ("});
    check_fails(launch(cuda_emu_kernel_bug_mask_without_caller, 1, 32, 0, out.data()), CUDA_EMU_ERROR_KERNEL,
                "mask without the calling lane", {"does not contain it", "thread (1,0,0)"});
    check_fails(launch(cuda_emu_kernel_bug_read_outside_mask, 1, 32, 0, out.data()), CUDA_EMU_ERROR_KERNEL,
                "reading a lane outside the mask", {"not in mask"});
    check_fails(launch(cuda_emu_kernel_bug_mismatched_collectives, 1, 32, 0, out.data()), CUDA_EMU_ERROR_KERNEL,
                "__ballot_sync and __any_sync under one mask", {"different collectives"});
    check_fails(launch(cuda_emu_kernel_bug_trap, 1, 32, 0, out.data()), CUDA_EMU_ERROR_KERNEL, "__trap",
                {"__trap()", "thread (5,0,0)"});

    // Invalid configurations are rejected before anything runs.
    std::vector<unsigned> words(4096);
    std::vector<int> flags(16);
    check_fails(launch(cuda_emu_kernel_bug_trap, 1, 2048, 0, out.data()), CUDA_EMU_ERROR_CONFIG, "block of 2048",
                {"invalid block dimensions (2048,1,1)"});
    check_fails(launch(cuda_emu_kernel_bug_trap, 1, dim3(32, 32, 2), 0, out.data()), CUDA_EMU_ERROR_CONFIG,
                "block of 32x32x2", {"invalid block dimensions"});
    check_fails(launch(cuda_emu_kernel_bug_trap, 1, dim3(1, 1, 65), 0, out.data()), CUDA_EMU_ERROR_CONFIG,
                "block.z of 65", {"invalid block dimensions"});
    check_fails(launch(cuda_emu_kernel_bug_trap, 1, dim3(0, 1, 1), 0, out.data()), CUDA_EMU_ERROR_CONFIG,
                "empty block", {"invalid block dimensions"});
    check_fails(launch(cuda_emu_kernel_bug_trap, dim3(1, 65536, 1), 32, 0, out.data()), CUDA_EMU_ERROR_CONFIG,
                "grid.y of 65536", {"invalid grid dimensions"});
    check_fails(launch(cuda_emu_kernel_bug_trap, dim3(1, 1, 0), 32, 0, out.data()), CUDA_EMU_ERROR_CONFIG,
                "empty grid", {"invalid grid dimensions"});
    check_fails(launch(cuda_emu_kernel_dyn_smem, 1, 256, 227 * 1024 + 4, words.data(), flags.data(), 1),
                CUDA_EMU_ERROR_CONFIG, "dynamic shared memory over 227 KiB", {"dynamic shared memory"});

    // The process survives all of that, and the next launch works.
    std::vector<int> ticket(64);
    int counter = 0;
    check_launch(launch(cuda_emu_kernel_order_probe, 1, 64, 0, ticket.data(), &counter), "launch after failures");
    check(counter == 64, "a launch after failed launches runs normally");
}

// ---------------------------------------------------------------------------------------------------------
// Host-side API
// ---------------------------------------------------------------------------------------------------------

void test_api() {
    std::string fresh_error = "unset";
    std::thread([&fresh_error] { fresh_error = cuda_emu_last_error(); }).join();
    check(fresh_error.empty(), "cuda_emu_last_error is empty on a thread without failed launches");

    std::vector<int> out(64);
    launch(cuda_emu_kernel_bug_trap, 1, 32, 0, out.data());
    const std::string failed = cuda_emu_last_error();
    int counter = 0;
    check_launch(launch(cuda_emu_kernel_order_probe, 1, 64, 0, out.data(), &counter), "order_probe");
    check(failed.find("kernel 'bug_trap'") != std::string::npos && failed == cuda_emu_last_error(),
          "cuda_emu_last_error keeps the last failure, with the kernel's name, across successful launches");

    check(cuda_emu_set_workers(-1) == -1, "set_workers(-1) is rejected");
    for (int workers : {2, 1, 3, 0}) {
        check(cuda_emu_set_workers(workers) == 0, format("set_workers(%d)", workers));
        AtomicCounters c = fresh_counters();
        check_launch(launch(cuda_emu_kernel_atomics, 64, 256, 0, &c), "atomics");
        check(c.i_add == 64 * 256 && c.f_add == 64.0f * 256, format("atomics with %d workers", workers));
    }

    // With two workers, a helper thread takes blocks too (retried: under load it may join late).
    check(cuda_emu_set_workers(2) == 0, "set_workers(2)");
    std::size_t workers_seen = 0;
    for (int attempt = 0; attempt < 20 && workers_seen < 2; ++attempt) {
        std::vector<unsigned long long> ids(64);
        check_launch(launch(cuda_emu_kernel_which_worker, 64, 256, 0, ids.data(), 2000), "which_worker");
        workers_seen = std::set<unsigned long long>(ids.begin(), ids.end()).size();
    }
    check(workers_seen == 2, format("with 2 workers the blocks ran on %zu OS thread(s)", workers_seen));
    check(cuda_emu_set_workers(0) == 0, "set_workers(0)");

    // Launches from several host threads at once, each with barriers and collectives.
    const int nthreads = 4, per_thread = 25;
    const unsigned long long before = cuda_emu_launch_count();
    std::vector<int> bad(nthreads, 0);
    std::vector<std::thread> pool;
    for (int h = 0; h < nthreads; ++h) {
        pool.emplace_back([h, &bad] {
            const unsigned nblocks = 8, threads = 128;
            std::vector<int> in(nblocks * threads), warp_out(3 * nblocks * threads);
            std::vector<long long> sums(nblocks);
            for (int it = 0; it < per_thread; ++it) {
                for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i) * (h + 1) + it;
                if (launch(cuda_emu_kernel_reduce_int, nblocks, threads, 0, static_cast<const int*>(in.data()),
                           sums.data(), warp_out.data()) != CUDA_EMU_OK) {
                    ++bad[h];
                    continue;
                }
                for (unsigned b = 0; b < nblocks; ++b) {
                    long long s = 0;
                    for (unsigned t = 0; t < threads; ++t) s += in[b * threads + t];
                    bad[h] += sums[b] != s;
                }
            }
        });
    }
    for (std::thread& t : pool) t.join();
    int total_bad = 0;
    for (int b : bad) total_bad += b;
    check(total_bad == 0, format("concurrent launches from %d host threads: %d wrong results", nthreads, total_bad));
    check(cuda_emu_launch_count() - before == static_cast<unsigned long long>(nthreads * per_thread),
          "cuda_emu_launch_count counts every launch");
}

// ---------------------------------------------------------------------------------------------------------
// Benchmarks
// ---------------------------------------------------------------------------------------------------------

double cpu_ms() {  // CPU time of the whole process
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

struct Timing {
    double wall_ms = 1e300;
    double cpu_ms = 1e300;
};

// Best wall-clock and best CPU time of `reps` runs. With one worker the CPU time is that of the launching
// thread, which other processes on the machine do not inflate the way they inflate wall-clock time.
template <typename F>
Timing best_of(F f, int reps = 5) {
    Timing best;
    for (int i = 0; i < reps; ++i) {
        const double c0 = cpu_ms();
        const auto t0 = std::chrono::steady_clock::now();
        f();
        const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        best.wall_ms = std::min(best.wall_ms, wall);
        best.cpu_ms = std::min(best.cpu_ms, cpu_ms() - c0);
    }
    return best;
}

int bench() {
    const int n = 1 << 20;
    std::vector<float> a(n), b(n), c(n);
    for (int i = 0; i < n; ++i) {
        a[i] = static_cast<float>(i % 1000);
        b[i] = 1.0f;
    }
    const float* pa = a.data();
    const float* pb = b.data();
    float* pc = c.data();
    std::vector<int> bar_out(64 * 256);
    std::printf("%-42s %16s %16s %16s\n", "benchmark (best of 5)", "2 workers, wall", "1 worker, wall",
                "1 worker, CPU");
    auto row = [](const char* name, auto f) {
        cuda_emu_set_workers(2);
        const Timing two = best_of(f);
        cuda_emu_set_workers(1);
        const Timing one = best_of(f);
        cuda_emu_set_workers(0);
        std::printf("%-42s %13.2f ms %13.2f ms %13.2f ms\n", name, two.wall_ms, one.wall_ms, one.cpu_ms);
        return one.cpu_ms;
    };
    int rc = CUDA_EMU_OK;
    auto add = [&](unsigned grid, unsigned block) {
        return [&rc, grid, block, pa, pb, pc, n] {
            rc |= launch(cuda_emu_kernel_add_f32, grid, block, 0, pa, pb, pc, n);
        };
    };
    row("add_f32 1M, block 256, grid 1024 (stride)", add(1024, 256));
    row("add_f32 1M, block 256, grid 4096", add(4096, 256));
    row("add_f32 1M, block 1024, grid 1024", add(1024, 1024));
    float total = 0.0f;
    float* pt = &total;
    row("sum_f32 1M, block 256, grid 256", [&] {
        total = 0.0f;
        rc |= launch(cuda_emu_kernel_sum_f32, 256, 256, 0, pa, pt, n);
    });
    row("sum_f32 1M, block 1024, grid 256", [&] {
        total = 0.0f;
        rc |= launch(cuda_emu_kernel_sum_f32, 256, 1024, 0, pa, pt, n);
    });
    const double bar_ms =
        row("barriers: 64 blocks x 256 threads x 100",
            [&] { rc |= launch(cuda_emu_kernel_barriers, 64, 256, 0, bar_out.data(), 100); });
    std::printf("  = %.1f ns of CPU per thread and barrier\n", bar_ms * 1e6 / (64.0 * 256 * 100));
    const Timing loop = best_of([&] {
        for (int i = 0; i < n; ++i) pc[i] = pa[i] + pb[i];
    });
    std::printf("%-42s %13s %16s %13.2f ms\n", "plain C++ loop, 1M add (for scale)", "", "", loop.cpu_ms);
    double expect = 0.0;
    for (int i = 0; i < n; ++i) expect += a[i];
    if (rc != CUDA_EMU_OK || c[12345] != a[12345] + 1.0f || std::fabs(total - expect) > 1e-4 * expect) {
        std::printf("benchmark results are wrong: %s\n", cuda_emu_last_error());
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--bench") return bench();
    test_shuffles();
    test_votes();
    test_reductions_and_matches();
    test_barrier_votes_and_syncwarp();
    test_atomics();
    test_half();
    test_intrinsics();
    test_coords();
    test_dyn_smem();
    test_params();
    test_spin_handoff();
    test_common();
    test_bugs();
    test_api();
    test_schedule_api();
    const char* sched = std::getenv("CUDA_EMU_SCHED");
    const char* workers = std::getenv("CUDA_EMU_WORKERS");
    std::printf("selftest [sched=%s workers=%s]: %d checks passed, %d failed\n", sched ? sched : "default",
                workers ? workers : "default", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
