//! Contiguous inner loops written so that LLVM vectorises them, compiled once per instruction
//! set and selected at run time (Note [Run-time ISA selection]).

// Note [Run-time ISA selection]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The crate is compiled for the baseline x86-64 target (SSE2), so that one binary runs
// everywhere. Hot loops are plain Rust over slices, marked `#[inline(always)]`; `isa_dispatch!`
// instantiates each one inside a `#[target_feature(enable = "avx2,fma")]` and an `avx512f`
// wrapper, and the public function picks the widest one the CPU reports
// (`is_x86_feature_detected!` caches its answer in an atomic, so the check is a load). The bodies
// avoid `f32::round` (not vectorisable) and call `mul_add` only through `madd::<FMA>`, which is
// `true` in the wrappers that enable `fma` (a plain `mul_add` is a libm call without it); they
// keep several independent accumulators so the reductions vectorise without reassociation flags.

/// Defines `[pub] fn $name(args) -> ret` that runs `$body` (an `#[inline(always)]` function of the
/// same signature) compiled for AVX-512, AVX2+FMA or the baseline, whichever the CPU has.
macro_rules! isa_dispatch {
    // A body generic over `const FMA: bool` gets `true` where the wrapper enables `fma`, so that
    // its `madd` calls become fused multiply-adds, and `false` in the baseline build (where
    // `mul_add` would be a libm call).
    ($(#[$m:meta])* $v:vis fn $name:ident($($a:ident: $t:ty),*) -> $r:ty = $body:ident::<FMA>;) => {
        isa_dispatch!(@emit [$(#[$m])* $v] $name($($a: $t),*) -> $r, [$body::<true>], [$body::<false>]);
    };
    ($(#[$m:meta])* $v:vis fn $name:ident($($a:ident: $t:ty),*) -> $r:ty = $body:ident;) => {
        isa_dispatch!(@emit [$(#[$m])* $v] $name($($a: $t),*) -> $r, [$body], [$body]);
    };
    (@emit [$($m:tt)*] $name:ident($($a:ident: $t:ty),*) -> $r:ty, [$($fast:tt)*], [$($base:tt)*]) => {
        $($m)* fn $name($($a: $t),*) -> $r {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
                fn avx512($($a: $t),*) -> $r {
                    $($fast)*($($a),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn avx2($($a: $t),*) -> $r {
                    $($fast)*($($a),*)
                }
                match crate::native::cpu::wide_isa() {
                    // SAFETY: the CPU reports every feature the function is compiled for.
                    crate::native::cpu::WideIsa::Avx512 => return unsafe { avx512($($a),*) },
                    // SAFETY: as above.
                    crate::native::cpu::WideIsa::Avx2 => return unsafe { avx2($($a),*) },
                    crate::native::cpu::WideIsa::Baseline => {}
                }
            }
            $($base)*($($a),*)
        }
    };
}

const LANES: usize = 16;

/// f32 partial sums cover at most this many elements before they are folded into f64, which
/// bounds their rounding error (each of the 64 lanes adds 64 values) while the hot loop stays
/// free of conversions.
const F32_SPAN: usize = 4096;

/// How many span sums are added in f32 (lane by lane) before they are folded into f64
/// (Note [Two-level f32 sums]).
const SPANS: usize = 64;

// Note [Two-level f32 sums]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Folding every span's lanes into f64 (64 or 128 conversions and a pairwise tree) stalled the
// stream once per 16-32 KiB: on the Zen 4 EPYC of BENCHMARKS.md a one-thread 16M-element sum
// took 1.35-1.42 ms against PyTorch's 1.27-1.33 ms. The span sums are now added lane by lane
// into a second set of f32 lanes, folded into f64 once per `SPANS` spans: 1.04-1.16 ms in the
// same back-to-back runs. Each f32 lane still adds at most 64 values at either level, so the
// rounding error stays that of a 64-value sum at each of two levels (a cascade, like
// PyTorch's), and the f64 total sees `SPANS` times fewer, larger terms.

/// How far ahead of the loads the sums prefetch, in bytes, on CPUs where that pays
/// (`prefetch_pays`). The hardware prefetcher alone leaves one Skylake-SP core's streaming sum
/// short of the bandwidth PyTorch reaches: in a standalone loop a 16M-element f32 sum took
/// 6.2 ms against PyTorch's 5.8 ms, and 5.1–5.4 ms when it prefetched 4 KiB ahead over huge
/// pages (Note [Huge pages for large blocks] in c10); `W4.sum_16M` went from 1.11 to 0.98 of
/// PyTorch. On a Zen 3 EPYC the same prefetches cost 6–12% (3.2–3.3 ms against 2.97–3.1 ms
/// without, PyTorch 3.0–3.2 ms), and prefetching 1–16 KiB ahead into L1 or L2 did no better.
const PREFETCH_AHEAD: usize = 4096;

/// Prefetches the 256 bytes at `p` (four cache lines) into L1. `p` may point past the end of
/// its allocation: a prefetch never faults and the pointer is not dereferenced.
#[inline(always)]
fn prefetch_256(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        for line in 0..4 {
            // SAFETY: prefetching is a hint that cannot fault, whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(line * 64).cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Whether the sums issue software prefetches: on Intel CPUs, not on AMD's (or others, which
/// were not measured), per `PREFETCH_AHEAD`. Asked once.
fn prefetch_pays() -> bool {
    static PAYS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PAYS.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            let id = std::arch::x86_64::__cpuid(0);
            // "GenuineIntel" in EBX, EDX, ECX.
            id.ebx == u32::from_le_bytes(*b"Genu")
                && id.edx == u32::from_le_bytes(*b"ineI")
                && id.ecx == u32::from_le_bytes(*b"ntel")
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

#[inline(always)]
fn sum_f32_loop<const PREFETCH: bool>(x: &[f32]) -> f64 {
    const L: usize = 64;
    let mut total = 0f64;
    for group in x.chunks(F32_SPAN * SPANS) {
        let mut span_sums = [0f32; L];
        for block in group.chunks(F32_SPAN) {
            let mut acc = [0f32; L];
            let chunks = block.chunks_exact(L);
            let rest = chunks.remainder();
            for c in chunks {
                if PREFETCH {
                    prefetch_256(c.as_ptr().cast::<u8>().wrapping_add(PREFETCH_AHEAD));
                }
                for i in 0..L {
                    acc[i] += c[i];
                }
            }
            for (s, a) in span_sums.iter_mut().zip(&acc) {
                *s += *a;
            }
            total += rest.iter().map(|v| *v as f64).sum::<f64>();
        }
        total += fold_lanes(&span_sums);
    }
    total
}

#[inline(always)]
fn sum_f64_loop<const PREFETCH: bool>(x: &[f64]) -> f64 {
    let mut acc = [0f64; LANES];
    let chunks = x.chunks_exact(2 * LANES);
    let rest = chunks.remainder();
    for c in chunks {
        if PREFETCH {
            prefetch_256(c.as_ptr().cast::<u8>().wrapping_add(PREFETCH_AHEAD));
        }
        for i in 0..2 * LANES {
            acc[i % LANES] += c[i];
        }
    }
    let chunks = rest.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..LANES {
            acc[i] += c[i];
        }
    }
    let mut s = 0f64;
    for v in rest {
        s += *v;
    }
    pairwise(&acc) + s
}

/// The f32 lane sums `acc`, folded into f64: lane `i` into `LANES` partial sums by `i % LANES`,
/// then pairwise.
#[inline(always)]
fn fold_lanes(acc: &[f32]) -> f64 {
    let mut wide = [0f64; LANES];
    for (i, v) in acc.iter().enumerate() {
        wide[i % LANES] += *v as f64;
    }
    pairwise(&wide)
}

#[inline(always)]
fn pairwise(acc: &[f64; LANES]) -> f64 {
    let mut a = *acc;
    let mut w = LANES / 2;
    while w > 0 {
        for i in 0..w {
            a[i] += a[i + w];
        }
        w /= 2;
    }
    a[0]
}

/// How many parts of a block [`sum_f32_streams`] reads side by side.
const STREAMS: usize = 4;
/// The elements of each part.
const STREAM_SPAN: usize = 2048;

/// Note [Sums read four streams]: where software prefetching does not pay (`prefetch_pays`),
/// one core reads memory faster when it walks several places at once: more misses are in
/// flight than one sequential stream and the hardware prefetcher give. Each block of
/// `STREAMS * STREAM_SPAN` elements is cut into four parts walked in lockstep, 32 f32 lanes
/// each (16 ymm accumulators in all); each lane still adds 64 values before the f64 fold, as in
/// [`sum_f32_loop`]. Measured on a Zen 3 EPYC, one thread, a 16M-element sum over huge pages
/// (median of 200, four rounds): 3.0–4.3 ms with one stream, 2.5–3.3 ms with four (2.7–3.3
/// with four of 2048, 3.1–3.3 with eight of 1024, 3.5–3.9 with two). A tail shorter than a
/// block takes the one-stream loop.
#[inline(always)]
fn sum_f32_streams(x: &[f32]) -> f64 {
    const W: usize = 32;
    let mut total = 0f64;
    let mut groups = x.chunks_exact(STREAMS * STREAM_SPAN * SPANS);
    for group in &mut groups {
        let mut block_sums = [0f32; STREAMS * W];
        for block in group.chunks_exact(STREAMS * STREAM_SPAN) {
            let mut acc = [[0f32; W]; STREAMS];
            for j in (0..STREAM_SPAN).step_by(W) {
                for (s, a) in acc.iter_mut().enumerate() {
                    let c = &block[s * STREAM_SPAN + j..s * STREAM_SPAN + j + W];
                    for i in 0..W {
                        a[i] += c[i];
                    }
                }
            }
            for (s, a) in block_sums.iter_mut().zip(acc.as_flattened()) {
                *s += *a;
            }
        }
        total += fold_lanes(&block_sums);
    }
    total + sum_f32_loop::<false>(groups.remainder())
}

/// Both loops are compiled into every ISA instantiation; `prefetch` picks one outside the loop.
#[inline(always)]
fn sum_f32_body(x: &[f32], prefetch: bool) -> f64 {
    if prefetch {
        sum_f32_loop::<true>(x)
    } else {
        sum_f32_streams(x)
    }
}
#[inline(always)]
fn sum_f64_body(x: &[f64], prefetch: bool) -> f64 {
    if prefetch {
        sum_f64_loop::<true>(x)
    } else {
        sum_f64_loop::<false>(x)
    }
}
isa_dispatch! {
    #[doc(hidden)]
    pub fn sum_f32_with(x: &[f32], prefetch: bool) -> f64 = sum_f32_body;
}
isa_dispatch! {
    #[doc(hidden)]
    pub fn sum_f64_with(x: &[f64], prefetch: bool) -> f64 = sum_f64_body;
}

/// The sum of `x`: 64 interleaved f32 lanes over spans of 4096 elements (or four streams of 32
/// lanes, Note [Sums read four streams]), the spans added in f64.
pub fn sum_f32(x: &[f32]) -> f64 {
    sum_f32_with(x, prefetch_pays())
}

/// The sum of `x` over 16 interleaved lanes.
pub fn sum_f64(x: &[f64]) -> f64 {
    sum_f64_with(x, prefetch_pays())
}

#[inline(always)]
fn add_rows_f32_body(acc: &mut [f64], row: &[f32]) {
    for (a, v) in acc.iter_mut().zip(row) {
        *a += *v as f64;
    }
}
#[inline(always)]
fn add_rows_f64_body(acc: &mut [f64], row: &[f64]) {
    for (a, v) in acc.iter_mut().zip(row) {
        *a += *v;
    }
}
isa_dispatch! {
    /// `acc[i] += row[i]` (the column sums of a reduction over an outer dimension).
    pub fn add_row_f32(acc: &mut [f64], row: &[f32]) -> () = add_rows_f32_body;
}
isa_dispatch! {
    /// `acc[i] += row[i]`.
    pub fn add_row_f64(acc: &mut [f64], row: &[f64]) -> () = add_rows_f64_body;
}

// ---- sparse @ dense rows ----------------------------------------------------------------------

/// How many stored elements ahead the row loop of a sparse product prefetches its dense rows
/// (their order is random: the hardware prefetcher cannot guess the next one).
const SPMM_AHEAD: usize = 4;

/// How much of a dense row the loop prefetches: its start, where the random jump lands; the
/// hardware prefetcher follows the rest of a long row once it is read in order.
const SPMM_PREFETCH_BYTES: usize = 512;

/// Requests the first cache lines of `row`, up to `SPMM_PREFETCH_BYTES` (a hint: it never
/// faults).
#[inline(always)]
fn prefetch_row<T>(row: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        let bytes = std::mem::size_of_val(row).min(SPMM_PREFETCH_BYTES);
        let p = row.as_ptr() as *const i8;
        let mut off = 0;
        while off < bytes {
            // SAFETY: a prefetch is a hint that never faults, and `p + off` stays inside `row`.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.add(off)) };
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = row;
}

macro_rules! spmm_row_body {
    ($name:ident, $t:ty) => {
        /// One output row of a sparse @ dense product: `out += vals[k] * dense[cols[k]]` (rows of
        /// `out.len()` elements) for the elements `k` at positions `range` of `order` (of the
        /// positions themselves when `order` is empty), in order, each product rounded before
        /// it is added (no fused multiply-add: the same sums on every CPU).
        #[inline(always)]
        fn $name(
            out: &mut [$t],
            dense: &[$t],
            vals: &[$t],
            cols: &[i64],
            range: std::ops::Range<usize>,
            order: &[i64],
        ) {
            let n = out.len();
            let row = |k: usize| &dense[cols[k] as usize * n..][..n];
            let elem = |p: usize| if order.is_empty() { p } else { order[p] as usize };
            let end = range.end;
            for p in range {
                if p + SPMM_AHEAD < end {
                    prefetch_row(row(elem(p + SPMM_AHEAD)));
                }
                let k = elem(p);
                let v = vals[k];
                for (a, &b) in out.iter_mut().zip(row(k)) {
                    *a += v * b;
                }
            }
        }
    };
}
spmm_row_body!(spmm_row_f32_body, f32);
spmm_row_body!(spmm_row_f64_body, f64);
isa_dispatch! {
    /// One output row of a sparse @ dense product in f32 (see `spmm_row_body!`).
    pub fn spmm_row_f32(out: &mut [f32], dense: &[f32], vals: &[f32], cols: &[i64], range: std::ops::Range<usize>, order: &[i64]) -> () = spmm_row_f32_body;
}
isa_dispatch! {
    /// One output row of a sparse @ dense product in f64.
    pub fn spmm_row_f64(out: &mut [f64], dense: &[f64], vals: &[f64], cols: &[i64], range: std::ops::Range<usize>, order: &[i64]) -> () = spmm_row_f64_body;
}

// ---- exp and softmax -------------------------------------------------------------------------

/// `log2(e)`, and ln 2 split in two (Cody-Waite): the exponential's range reduction (shared with
/// the JIT's fused kernels).
pub const LOG2E: f32 = std::f32::consts::LOG2_E;
/// The high part of ln 2 (exact in f32 with room for `n * LN2_HI` to be exact).
pub const LN2_HI: f32 = 0.693_145_75;
/// ln 2 - `LN2_HI`.
pub const LN2_LO: f32 = 1.428_606_8e-6;
/// 1.5 * 2^23: adding it rounds an f32 of magnitude < 2^22 to an integer (ties to even) and
/// leaves that integer in the low mantissa bits.
pub const ROUND_MAGIC: f32 = 12_582_912.0;
/// Below this `e^x` is under f32's smallest normal number; `exp_nonpos_f32` returns 0 there.
#[doc(hidden)]
pub const EXP_UNDERFLOW: f32 = -87.3;
/// The coefficients of r^2..r^6 of a degree-6 polynomial for `e^r` on |r| <= ln2/2 (those of 1
/// and r are 1), fitted for minimal relative error (Lawson's iteration, 1.9e-9 in exact
/// arithmetic); in f32 with fused multiply-adds it is within 0.9 ulp of `e^r`.
pub const EXP_POLY: [f32; 5] = [0.499_999_9, 0.166_664_2, 0.041_668_225, 0.008_374_816, 0.001_383_684_6];

/// `a * b + c`, fused (one rounding) when `FMA`, whose caller is compiled with the `fma`
/// feature; two roundings otherwise.
#[inline(always)]
pub fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// The shared part of the f32 exp kernels (here and in jit's fused kernels): `x = n ln2 + r`
/// with |r| <= ln2/2 (Cody-Waite, two-part ln2) and the degree-6 polynomial for `e^r`. Returns
/// `t`, whose bits minus `ROUND_MAGIC`'s are `n`, and `p = e^r`; the caller scales by `2^n`.
#[inline(always)]
pub fn exp_reduced<const FMA: bool>(x: f32) -> (f32, f32) {
    let t = madd::<FMA>(x, LOG2E, ROUND_MAGIC);
    let n = t - ROUND_MAGIC;
    let r = madd::<FMA>(n, -LN2_LO, madd::<FMA>(n, -LN2_HI, x));
    let mut p = EXP_POLY[4];
    for c in EXP_POLY[..4].iter().rev() {
        p = madd::<FMA>(p, r, *c);
    }
    p = madd::<FMA>(p, r, 1.0);
    p = madd::<FMA>(p, r, 1.0);
    (t, p)
}

/// `e^x` for `x <= 0` to about 1 ulp (what softmax needs: its arguments are `x - max`),
/// branch-free so that loops over it vectorise. `x = n ln2 + r` with |r| <= ln2/2 (Cody-Waite,
/// two-part ln2), a degree-6 minimax polynomial for `e^r`, and one multiplication by `2^n`
/// assembled in the exponent bits, a normal number because n >= -126 above the underflow
/// threshold. Returns 0 below -87.3 (no subnormal results) and for -inf, and keeps NaN (a NaN
/// `p` survives the multiplication). Positive arguments are outside its contract: above 0 it
/// is wrong from about 88.4, where `2^n` stops being finite.
#[inline(always)]
pub fn exp_nonpos_f32<const FMA: bool>(x: f32) -> f32 {
    let (t, p) = exp_reduced::<FMA>(x);
    // n + 127 is the biased exponent of 2^n (wrapping: lanes below the threshold are garbage
    // here and replaced by 0 below).
    let bias = t.to_bits().wrapping_sub(ROUND_MAGIC.to_bits()).wrapping_add(127);
    let v = p * f32::from_bits(bias << 23);
    if x < EXP_UNDERFLOW {
        0.0
    } else {
        v
    }
}

/// The largest element of `x`, -inf for an empty row. A NaN element is skipped here; the
/// softmax bodies need no NaN flag because `exp(NaN - max)` is NaN and poisons the row's total.
#[inline(always)]
fn max_f32(x: &[f32]) -> f32 {
    let mut m = [f32::NEG_INFINITY; LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..LANES {
            m[i] = if c[i] > m[i] { c[i] } else { m[i] };
        }
    }
    let mut r = f32::NEG_INFINITY;
    for v in rest.iter().chain(&m) {
        r = if *v > r { *v } else { r };
    }
    r
}

#[inline(always)]
fn softmax_row_f32_body<const FMA: bool>(x: &[f32], y: &mut [f32]) {
    let m = max_f32(x);
    // A row of -inf (fully masked) gives NaN like PyTorch: exp(-inf - -inf) = exp(NaN).
    let mut acc = [0f32; LANES];
    let (xc, yc) = (x.chunks_exact(LANES), y.chunks_exact_mut(LANES));
    let (xr, mut s) = (xc.remainder(), 0f32);
    for (a, b) in xc.zip(yc) {
        for i in 0..LANES {
            let e = exp_nonpos_f32::<FMA>(a[i] - m);
            b[i] = e;
            acc[i] += e;
        }
    }
    let done = x.len() - xr.len();
    for (a, b) in xr.iter().zip(&mut y[done..]) {
        let e = exp_nonpos_f32::<FMA>(*a - m);
        *b = e;
        s += e;
    }
    let total = acc.iter().map(|v| *v as f64).sum::<f64>() + s as f64;
    let inv = (1.0 / total) as f32;
    for v in y.iter_mut() {
        *v *= inv;
    }
}

#[inline(always)]
fn log_softmax_row_f32_body<const FMA: bool>(x: &[f32], y: &mut [f32]) {
    let m = max_f32(x);
    let mut acc = [0f32; LANES];
    let xc = x.chunks_exact(LANES);
    let (xr, mut s) = (xc.remainder(), 0f32);
    for a in xc {
        for i in 0..LANES {
            acc[i] += exp_nonpos_f32::<FMA>(a[i] - m);
        }
    }
    for a in xr {
        s += exp_nonpos_f32::<FMA>(*a - m);
    }
    let total = acc.iter().map(|v| *v as f64).sum::<f64>() + s as f64;
    // (x - m) - ln(total), not x - (m + ln(total)): folding the logarithm into a large max
    // would round it to the max's ulp.
    let lse = total.ln() as f32;
    for (a, b) in x.iter().zip(y.iter_mut()) {
        *b = (*a - m) - lse;
    }
}

isa_dispatch! {
    /// `y = softmax(x)` for one contiguous row (max-subtracted, f32 exponentials, f64 total).
    pub fn softmax_row_f32(x: &[f32], y: &mut [f32]) -> () = softmax_row_f32_body::<FMA>;
}
isa_dispatch! {
    /// `y = log_softmax(x)` for one contiguous row.
    pub fn log_softmax_row_f32(x: &[f32], y: &mut [f32]) -> () = log_softmax_row_f32_body::<FMA>;
}

// ---- transcendental functions (Note [Vectorised transcendentals]) ---------------------------

// Note [Vectorised transcendentals]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// libm's `expf`, `tanhf` and `logf` are calls per element, which no loop vectorises: an eager
// `tanh` of 16M floats was most of the eager GELU's time. The f32 functions below are
// branch-free (every branch is a select), so the contiguous runs of `unary_loop` vectorise
// them inside their AVX2+FMA instantiation (Note [AVX2 elementwise runs] in `loops.rs`), and
// the JIT's fused kernels call the same functions (one implementation, so fused and eager
// results are the same bits). `FMA` is whether `madd` is fused: eager code picks `true` when
// the CPU has FMA (outside the FMA-compiled runs `mul_add` is then a correctly rounded libm
// call, so strided and contiguous runs agree bit for bit), the JIT per its compiled ISA.
//
// - `exp`: `x = n ln2 + r` with |r| <= ln2/2 (Cody-Waite, two-part ln2), a degree-6 minimax
//   polynomial for `e^r` ([`exp_reduced`]), the argument clamped to [-104, 89] and `2^n`
//   applied in two halves, so results overflow to inf and underflow through the subnormals
//   as libm's do.
// - `tanh(x)`: `(1 - e) / (1 + e)` with `e = exp(-2|x|)` above |x| = 0.625 (|x| capped at 9,
//   where tanh is 1 in f32), where that has no cancellation, and an odd polynomial below
//   (degree 11, a least-squares fit for relative error, 4.5e-9 in exact arithmetic).
// - `a sigmoid(x)`: `a / (1 + e)` or `a e / (1 + e)` with `e = exp(-|x|)`, which never
//   overflows: `sigmoid` has `a = 1`, `silu` `a = x`.
// - `log(x)`: `x = 2^e m` with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^23 first),
//   `log(m) = f - f^2/2 + f^3 P(f)` with `f = m - 1` and Cephes' degree-8 `P`, plus `e ln2`
//   in two parts; selects give -inf at 0, NaN below 0 and for NaN, inf at inf.
//
// - `log1p`/`expm1`: `ln(1 + x)` from the logarithm of the rounded `1 + x` plus its
//   first-order correction; `e^x - 1` by Kahan's `(u - 1) x / ln(u)`, `u = e^x`.
// - `erf`/`erfc`: `z P(z^2)` below |z| = 0.5; above, `erfc(a) = e^(-a^2) G(a)` with `G` a
//   polynomial in `a - 1.25` on [0.5, 2] and in `1/a` beyond (fits for relative error), and
//   `a^2` split exactly into two floats so the exponential sees all of it; `erf = 1 - erfc`
//   there. GELU (exact) is `x erfc(-x / sqrt 2) / 2` on the same pieces, GELU (tanh) is
//   `x sigmoid(2y)`.
//
// `tests/ops/transcendental.rs` measures every function's error against the f64 libm over a
// sweep of the whole f32 range, with bounds in ulps.

/// `e^x` is inf above `EXP_HI`, and 0 below -104 (under half the smallest subnormal); the
/// argument is clamped to -112, where `x e^x` is 0 too for |x| up to 112 (the `silu` tail of
/// [`times_sigmoid_f32`]), and `2^n` is still two normal halves.
const EXP_LO: f32 = -112.0;
const EXP_HI: f32 = 89.0;

/// `e^x = p s1 s2` over the whole f32 range: `p = e^r` and the two halves of `2^n`, each a
/// normal number, so `p s1 s2` rounds once, into the subnormals or to inf when the result is
/// there.
#[inline(always)]
fn exp_parts<const FMA: bool>(x: f32) -> (f32, f32, f32) {
    // Comparisons keep a NaN (it fails both).
    let x = if x < EXP_LO { EXP_LO } else { x };
    let x = if x > EXP_HI { EXP_HI } else { x };
    let (t, p) = exp_reduced::<FMA>(x);
    // n in [-162, 129] applied as 2^(n/2) 2^(n - n/2).
    let k = (t.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32);
    let (k1, k2) = (k >> 1, k - (k >> 1));
    let s1 = f32::from_bits((k1.wrapping_add(127) as u32) << 23);
    let s2 = f32::from_bits((k2.wrapping_add(127) as u32) << 23);
    (p, s1, s2)
}

/// `e^x` over the whole f32 range, branch-free (Note [Vectorised transcendentals]).
#[inline(always)]
pub fn exp_f32<const FMA: bool>(x: f32) -> f32 {
    let (p, s1, s2) = exp_parts::<FMA>(x);
    p * s1 * s2
}

/// `a / (1 + e^-x)`, branch-free: `e = e^-|x|` never overflows, and below 0 the result is
/// `a e / (1 + e)`, which keeps the tail where `e^-x` would be inf (Note [Vectorised
/// transcendentals]). There `a e` is formed as `((a s1) p) s2`, so that a subnormal `e` (below
/// -87) is not rounded before it is scaled by `a` (`silu(-104)` was 52 ulp off), and it is a
/// signed zero below -112, where the clamped exponential would not give one; exact to a few
/// ulps for |a| <= 112 (`sigmoid`, `silu`).
#[inline(always)]
pub fn times_sigmoid_f32<const FMA: bool>(a: f32, x: f32) -> f32 {
    let (p, s1, s2) = exp_parts::<FMA>(-x.abs());
    let e = p * s1 * s2;
    let tail = if x < EXP_LO { a * 0.0 } else { a * s1 * p * s2 };
    let num = if x < 0.0 { tail } else { a };
    num / (1.0 + e)
}

/// One row of a GRU step's gates (Note [Fused GRU step] in `rnn.rs`): `gi` and `gh` hold the
/// `r`, `z`, `n` projections (`[3H]`), `h` and `out` are `[H]`.
#[inline(always)]
fn gru_gates_f32_body<const FMA: bool>(gi: &[f32], gh: &[f32], h: &[f32], out: &mut [f32]) {
    let hid = out.len();
    let (gi_r, gi_z, gi_n) = (&gi[..hid], &gi[hid..2 * hid], &gi[2 * hid..3 * hid]);
    let (gh_r, gh_z, gh_n) = (&gh[..hid], &gh[hid..2 * hid], &gh[2 * hid..3 * hid]);
    let h = &h[..hid];
    for j in 0..hid {
        let r = times_sigmoid_f32::<FMA>(1.0, gi_r[j] + gh_r[j]);
        let z = times_sigmoid_f32::<FMA>(1.0, gi_z[j] + gh_z[j]);
        let n = tanh_f32::<FMA>(gi_n[j] + r * gh_n[j]);
        out[j] = (h[j] - n) * z + n;
    }
}

isa_dispatch! {
    /// One row of a GRU step: `out = (h - n) * z + n` with `r = sigmoid(gi_r + gh_r)`,
    /// `z = sigmoid(gi_z + gh_z)`, `n = tanh(gi_n + r * gh_n)`.
    pub fn gru_gates_f32(gi: &[f32], gh: &[f32], h: &[f32], out: &mut [f32]) -> () = gru_gates_f32_body::<FMA>;
}

/// Below this |x| `tanh` is a polynomial; above it, `(1 - e) / (1 + e)` with `e = exp(-2|x|)`.
const TANH_SMALL: f32 = 0.625;
/// From here on `tanh(|x|)` is 1 in f32.
const TANH_ONE: f32 = 9.0;
/// `tanh(a) = a + a^3 P(a^2)` on [0, 0.625]: P's coefficients, lowest first (a weighted
/// least-squares fit for relative error, 4.5e-9 in exact arithmetic).
const TANH_POLY: [f32; 5] = [-0.333_332_84, 0.133_314_76, -0.053_742_174, 0.020_646_28, -0.005_712_323];

/// `tanh(x)`, branch-free (Note [Vectorised transcendentals]). Above |x| = 9, `1 - 2e^-18`
/// rounds to 1, so |x| is capped there and the exponential needs no range handling.
#[inline(always)]
pub fn tanh_f32<const FMA: bool>(x: f32) -> f32 {
    let a = x.abs();
    // NaN fails the comparison and stays.
    let capped = if a > TANH_ONE { TANH_ONE } else { a };
    let e = exp_nonpos_f32::<FMA>(-2.0 * capped);
    let big = (1.0 - e) / (1.0 + e);
    let s = a * a;
    let mut p = TANH_POLY[4];
    for c in TANH_POLY[..4].iter().rev() {
        p = madd::<FMA>(p, s, *c);
    }
    let small = madd::<FMA>(a * s, p, a);
    let r = if a < TANH_SMALL { small } else { big };
    r.copysign(x)
}

/// Cephes' `logf` polynomial: `log(1 + f) = f - f^2/2 + f^3 P(f)` for `1 + f` in
/// [sqrt(1/2), sqrt(2)); P's coefficients, highest first.
const LOG_POLY: [f32; 9] = [
    7.037_683_6e-2,
    -1.151_461e-1,
    1.167_699_87e-1,
    -1.242_014_1e-1,
    1.424_932_3e-1,
    -1.666_805_7e-1,
    2.000_071_4e-1,
    -2.499_999_4e-1,
    3.333_333e-1,
];
/// ln 2 in two parts for `e ln2` (Cephes' split: the high part has few bits, so `e * hi` is
/// exact for every exponent).
const LOG_LN2_HI: f32 = 0.693_359_4;
const LOG_LN2_LO: f32 = -2.121_944_4e-4;

/// `ln(x)`, branch-free (Note [Vectorised transcendentals]).
#[inline(always)]
pub fn log_f32<const FMA: bool>(x: f32) -> f32 {
    // Subnormals are scaled into the normal range first (their exponent corrected below).
    let tiny = x < f32::MIN_POSITIVE;
    let xs = if tiny { x * 8_388_608.0 } else { x };
    let bits = xs.to_bits();
    let mut e = ((bits >> 23) & 0xff) as i32 - 126;
    if tiny {
        e -= 23;
    }
    // m in [0.5, 1); below sqrt(1/2) it is doubled (and e lowered) so that f = m - 1 is small.
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f00_0000);
    let low = m < std::f32::consts::FRAC_1_SQRT_2;
    let e = if low { e - 1 } else { e } as f32;
    let f = if low { m + m - 1.0 } else { m - 1.0 };
    let z = f * f;
    let mut p = LOG_POLY[0];
    for c in &LOG_POLY[1..] {
        p = madd::<FMA>(p, f, *c);
    }
    let mut y = p * f * z;
    y = madd::<FMA>(e, LOG_LN2_LO, y);
    y = madd::<FMA>(z, -0.5, y);
    let r = madd::<FMA>(e, LOG_LN2_HI, f + y);
    // inf stays inf, 0 gives -inf, below 0 and NaN give NaN.
    let r = if x == f32::INFINITY { x } else { r };
    let r = if x == 0.0 { f32::NEG_INFINITY } else { r };
    if x < 0.0 || x.is_nan() {
        f32::NAN
    } else {
        r
    }
}

/// `ln(1 + x)`, branch-free: `ln(u) + (x - (u - 1)) / u` with `u = 1 + x` rounded, the second
/// term the first-order correction for that rounding (exact to a few ulps where `x` is tiny and
/// `u` is 1, or huge and `u - 1` is `u`).
#[inline(always)]
pub fn log1p_f32<const FMA: bool>(x: f32) -> f32 {
    let u = 1.0 + x;
    let r = log_f32::<FMA>(u) + (x - (u - 1.0)) / u;
    // Where `u` is 1, `x` itself (ln(1 + x) = x - x^2/2 rounds to x; keeps -0); -1 gives -inf
    // and inf gives inf (the correction would be 0/0 and inf - inf).
    let r = if u == 1.0 { x } else { r };
    let r = if x == -1.0 { f32::NEG_INFINITY } else { r };
    if x == f32::INFINITY {
        x
    } else {
        r
    }
}

/// `e^x - 1`, branch-free, by Kahan's `(u - 1) x / ln(u)` with `u = e^x` rounded: the quotient
/// `x / ln(u)` undoes the rounding of `u`, so the result is as accurate near 0 as the
/// logarithm.
#[inline(always)]
pub fn expm1_f32<const FMA: bool>(x: f32) -> f32 {
    let u = exp_f32::<FMA>(x);
    let um1 = u - 1.0;
    let r = um1 * (x / log_f32::<FMA>(u));
    // u = 1: x itself (also keeps -0); u - 1 = -1: the limit; u = inf: overflow.
    let r = if u == 1.0 { x } else { r };
    let r = if um1 == -1.0 { -1.0 } else { r };
    if u == f32::INFINITY {
        u
    } else {
        r
    }
}

/// `erf(z) = z P(z^2)` for |z| < [`ERF_SMALL`]: P's coefficients, highest first (a least-squares
/// fit for relative error on Chebyshev nodes, 2e-9 in exact arithmetic).
const ERF_POLY: [f32; 6] =
    [-0.0007692329, 0.005200275, -0.026863113, 0.11283774, -0.37612638, std::f32::consts::FRAC_2_SQRT_PI];
/// Where `erf` and `erfc` switch from the series form to `erfc(a) = e^(-a^2) G(a)`.
const ERF_SMALL: f32 = 0.5;
/// `G(a) = erfc(a) e^(a^2)` on [0.5, 2] as a polynomial in `a - 1.25`, highest first (2e-8 in
/// exact arithmetic).
const ERFC_G1: [f32; 10] = [
    -0.00018216851,
    0.0005563698,
    -0.0013215991,
    0.0035120018,
    -0.009080509,
    0.022019561,
    -0.05021867,
    0.106795,
    -0.20882185,
    0.3678229,
];
/// `G(a)` on [2, 10.1] (beyond it `erfc` is 0 in f32) as a polynomial in `1 / a`, highest first
/// (2.4e-9 in exact arithmetic).
const ERFC_G2: [f32; 9] = [
    -0.25950456,
    0.88552827,
    -1.2641754,
    0.86517465,
    -0.09716067,
    -0.2683061,
    -0.0012254975,
    0.5642515,
    -1.3518977e-06,
];

#[inline(always)]
fn horner<const FMA: bool, const N: usize>(c: &[f32; N], x: f32) -> f32 {
    let mut p = c[0];
    for k in &c[1..] {
        p = madd::<FMA>(p, x, *k);
    }
    p
}

/// `v^2` as `hi + lo` exactly, for |v| <= 16: with FMA the error of the rounded square is one
/// fused multiply-add; without, Veltkamp's split of `v` into two 12-bit halves makes every
/// partial product exact.
#[inline(always)]
fn square_parts<const FMA: bool>(v: f32) -> (f32, f32) {
    let hi = v * v;
    if FMA {
        (hi, v.mul_add(v, -hi))
    } else {
        let c = 4097.0 * v;
        let vh = c - (c - v);
        let vl = v - vh;
        (hi, ((vh * vh - hi) + 2.0 * vh * vl) + vl * vl)
    }
}

/// `m erfc(a)` for `a >= ERF_SMALL` (or NaN), given `a^2 = s_hi + s_lo` exactly (where `a` is
/// small enough for the result not to be 0; the callers cap the squared value, and past 16 the
/// result is 0 regardless):
/// `e^(-s_hi) (1 - s_lo) G(a)`, the exponential's `2^n` applied last so that the result rounds
/// once where it is subnormal, after the factor `m` (GELU's `x / 2`: an `erfc` rounded into
/// the subnormals first cost its product 6 ulps) (Note [Vectorised transcendentals]).
/// Splitting the square keeps the relative error of `e^(-a^2)` at a few ulps where `a^2`
/// itself has an ulp of 2^-20.
#[inline(always)]
fn erfc_large<const FMA: bool, const NEAR: bool>(m: f32, a: f32, s_hi: f32, s_lo: f32) -> f32 {
    let beyond = a > 16.0;
    let a = cap16(a);
    let g1 = horner::<FMA, 10>(&ERFC_G1, a - 1.25);
    // NEAR: every `a` is below 2 (Note [Chunked kernels] in `loops.rs`), so the far polynomial
    // and its reciprocal are not needed.
    let g = if NEAR || a < 2.0 { g1 } else { horner::<FMA, 9>(&ERFC_G2, 1.0 / a) };
    let (p, s1, s2) = exp_parts::<FMA>(-s_hi);
    let pg = p * g;
    let r = madd::<FMA>(-s_lo, pg, pg) * m * s1 * s2;
    // Past 16, `m erfc(a)` is 0 for every finite `m` (the clamped exponential is not small
    // enough to make a huge `m` vanish).
    if beyond {
        m * 0.0
    } else {
        r
    }
}

/// |v| capped at 16 (where `erfc` is long 0), NaN kept, for [`square_parts`].
#[inline(always)]
fn cap16(a: f32) -> f32 {
    if a > 16.0 {
        16.0
    } else {
        a
    }
}

/// The two forms `erf` and `erfc` choose between: `x P(x^2)` (erf below [`ERF_SMALL`]) and
/// `erfc(|x|)` (above it), with `|x|`.
#[inline(always)]
fn erf_parts<const FMA: bool>(x: f32) -> (f32, f32, f32) {
    let a = x.abs();
    let (s_hi, s_lo) = square_parts::<FMA>(cap16(a));
    (a, x * horner::<FMA, 6>(&ERF_POLY, s_hi), erfc_large::<FMA, false>(1.0, a, s_hi, s_lo))
}

/// `erf(x)`, branch-free (Note [Vectorised transcendentals]).
#[inline(always)]
pub fn erf_f32<const FMA: bool>(x: f32) -> f32 {
    let (a, series, tail) = erf_parts::<FMA>(x);
    let large = (1.0 - tail).copysign(x);
    if a < ERF_SMALL {
        series
    } else {
        large
    }
}

/// `erfc(x)`, branch-free (Note [Vectorised transcendentals]): `2 - erfc(|x|)` below 0.
#[inline(always)]
pub fn erfc_f32<const FMA: bool>(x: f32) -> f32 {
    let (a, series, tail) = erf_parts::<FMA>(x);
    let large = if x < 0.0 { 2.0 - tail } else { tail };
    if a < ERF_SMALL {
        1.0 - series
    } else {
        large
    }
}

/// The exact GELU, `x Phi(x) = x erfc(-x / sqrt 2) / 2`, branch-free (Note [Vectorised
/// transcendentals]). Written with `erfc`, not PyTorch's `x (1 + erf(x / sqrt 2)) / 2`, so the
/// negative tail keeps its relative accuracy instead of cancelling in `1 + erf` (at x = -5 that
/// form has two correct digits in f32); `(x / sqrt 2)^2` is `x^2 / 2` from the exact square of
/// `x`, so rounding `x / sqrt 2` costs the exponential nothing.
#[inline(always)]
pub fn gelu_f32<const FMA: bool>(x: f32) -> f32 {
    gelu_body::<FMA, false>(x)
}

/// [`gelu_f32`] for |x| < 2.8 (where `|x / sqrt 2| < 2`), without the far polynomial: the same
/// bits there (Note [Chunked kernels] in `loops.rs`).
#[inline(always)]
pub fn gelu_near_f32<const FMA: bool>(x: f32) -> f32 {
    gelu_body::<FMA, true>(x)
}

/// The body of [`gelu_f32`] (`NEAR`: as [`gelu_near_f32`]).
#[inline(always)]
fn gelu_body<const FMA: bool, const NEAR: bool>(x: f32) -> f32 {
    let z = x * std::f32::consts::FRAC_1_SQRT_2;
    let a = z.abs();
    let (x_hi, x_lo) = square_parts::<FMA>(cap16(x.abs()) * 0.5);
    // (x/2)^2 * 2 = x^2 / 2, exactly.
    let (s_hi, s_lo) = (x_hi * 2.0, x_lo * 2.0);
    let half_x = 0.5 * x;
    // half_x (1 + z P), not a fused half_x + (half_x z) P: the product keeps gelu(-0) = -0.
    let small = half_x * madd::<FMA>(z, horner::<FMA, 6>(&ERF_POLY, s_hi), 1.0);
    let neg = x < 0.0;
    // Below 0 the result is x/2 erfc(a), the factor inside; above, x - x/2 erfc(a).
    let tail = erfc_large::<FMA, NEAR>(if neg { half_x } else { 1.0 }, a, s_hi, s_lo);
    // (Past 16 the correction is 0, and `inf * 0` must not make gelu(inf) NaN.)
    let pos = if a > 16.0 { x } else { madd::<FMA>(-half_x, tail, x) };
    let large = if neg { tail } else { pos };
    let r = if a < ERF_SMALL { small } else { large };
    // A NaN argument is the result (which NaN the arithmetic passes on depends on the order
    // of its operands, which vectorisation may change).
    if x.is_nan() {
        x
    } else {
        r
    }
}

/// The tanh-approximated GELU, `x (1 + tanh(y)) / 2` with `y = sqrt(2/pi) (x + 0.044715 x^3)`,
/// computed as `x sigmoid(2y)` (the same function) so that the negative tail does not cancel.
/// Where `x sigmoid(2y)` is tiny it is about `x e^(2y)`, whose relative error is the absolute
/// error of `2y` (up to 90 there): `2y` is formed in f64 and split into `hi + lo`, `lo` applied
/// as the factor `1 + lo` below 0 (an f32 `2y` left 160 ulps at x = -9.9).
#[inline(always)]
pub fn gelu_tanh_f32<const FMA: bool>(x: f32) -> f32 {
    let xd = x as f64;
    let t = 2.0 * (2.0 / std::f64::consts::PI).sqrt() * (xd + 0.044_715 * xd * xd * xd);
    // Past +-200 the sigmoid is saturated; the clamp keeps `lo` finite (NaN stays NaN).
    let t = if t < -200.0 { -200.0 } else { t };
    let t = if t > 200.0 { 200.0 } else { t };
    let hi = t as f32;
    let lo = (t - hi as f64) as f32;
    let r = times_sigmoid_f32::<FMA>(x, hi);
    let corrected = madd::<FMA>(r, lo, r);
    if hi < 0.0 {
        corrected
    } else {
        r
    }
}

// ---- pooling ---------------------------------------------------------------------------------

/// One plane of a 2 × 2 max pooling whose windows along a row are adjacent pairs (stride 2):
/// output row `r` reads input rows `rows[r].0` and `rows[r].0 + 1` of `xs` (rows of `iw`), from
/// column `c0 + 2 c`. Writes the maxima to `out` (`rows.len()` rows) and their flat in-plane
/// indices to `idx`; the window is read in row-major order and a later value wins if it is
/// greater or NaN, as in the general kernel.
///
/// Note [Branch-free pooling]: compiled for the baseline, the selects of the running maximum
/// became branches (x86-64 has no scalar float `cmov` before AVX-512 masks), and on real
/// activations which value wins is random: about 37 cycles per output, 4.1 ms for the CNN
/// step's first pooling on one thread (PyTorch's loop is alike). With the wrappers' masks and
/// blends the selects stay selects and the loop vectorises. Other windows (any size and stride,
/// inside the input) run [`max_pool_plane_f32`], the same loop compiled per ISA: a 3 × 3,
/// stride-2 pooling of [64, 32, 26, 26] went from 6.4 to 4.9 ms on one thread (PyTorch: 6.9),
/// and 2 × 2, stride 1 (which had its own straight-line loop, now gone) from 12.4 to 8.3 ms.
#[inline(always)]
fn max_pool_2x2_body(xs: &[f32], iw: usize, rows: &[(usize, usize)], c0: usize, out: &mut [f32], idx: &mut [i64]) {
    let ow = out.len() / rows.len().max(1);
    for ((&(top, _), orow), irow) in rows.iter().zip(out.chunks_exact_mut(ow)).zip(idx.chunks_exact_mut(ow)) {
        let start = top * iw + c0;
        let r0 = &xs[start..start + 2 * ow];
        let r1 = &xs[start + iw..start + iw + 2 * ow];
        let (w, w1) = (iw as i64, iw as i64 + 1);
        for (c, (o, ix)) in orow.iter_mut().zip(irow.iter_mut()).enumerate() {
            let (a, b, p, q) = (r0[2 * c], r0[2 * c + 1], r1[2 * c], r1[2 * c + 1]);
            let (mut best, mut k) = (a, 0i64);
            let t = (b > best) | b.is_nan();
            best = if t { b } else { best };
            k = if t { 1 } else { k };
            let t = (p > best) | p.is_nan();
            best = if t { p } else { best };
            k = if t { w } else { k };
            let t = (q > best) | q.is_nan();
            best = if t { q } else { best };
            k = if t { w1 } else { k };
            *o = best;
            *ix = (start + 2 * c) as i64 + k;
        }
    }
}
isa_dispatch! {
    /// A plane of 2 × 2, stride-2 max pooling (Note [Branch-free pooling]).
    pub fn max_pool_2x2_f32(xs: &[f32], iw: usize, rows: &[(usize, usize)], c0: usize, out: &mut [f32], idx: &mut [i64]) -> () = max_pool_2x2_body;
}

/// One plane of a 2-d max pooling with any windows inside the input: output `(r, c)` reads
/// rows `rows[r].0 ..+ rows[r].1` and columns `cols[c].0 ..+ cols[c].1` of `xs` (rows of `iw`),
/// in row-major order, a later value winning if it is greater or NaN; the running maximum
/// starts at -inf at the window's first element (Note [Branch-free pooling]).
#[inline(always)]
fn max_pool_plane_body(
    xs: &[f32],
    iw: usize,
    rows: &[(usize, usize)],
    cols: &[(usize, usize)],
    out: &mut [f32],
    idx: &mut [i64],
) {
    let ow = cols.len().max(1);
    for (&(rf, rc), (orow, irow)) in rows.iter().zip(out.chunks_exact_mut(ow).zip(idx.chunks_exact_mut(ow))) {
        for ((o, ix), &(cf, cc)) in orow.iter_mut().zip(irow.iter_mut()).zip(cols) {
            let (mut best, mut at) = (f32::NEG_INFINITY, rf * iw + cf);
            for a in 0..rc {
                let row = (rf + a) * iw + cf;
                for (c, &v) in xs[row..row + cc].iter().enumerate() {
                    let take = (v > best) | v.is_nan();
                    at = if take { row + c } else { at };
                    best = if take { v } else { best };
                }
            }
            *o = best;
            *ix = at as i64;
        }
    }
}
isa_dispatch! {
    /// A plane of 2-d max pooling with windows inside the input (Note [Branch-free pooling]).
    pub fn max_pool_plane_f32(xs: &[f32], iw: usize, rows: &[(usize, usize)], cols: &[(usize, usize)], out: &mut [f32], idx: &mut [i64]) -> () = max_pool_plane_body;
}
