//! Contiguous inner loops written so that LLVM vectorises them, compiled once per instruction
//! set and selected at run time (Note [Run-time ISA selection]).

// Note [Run-time ISA selection]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The crate is compiled for the baseline x86-64 target (SSE2), so that one binary runs
// everywhere. Hot loops are plain Rust over slices, marked `#[inline(always)]`; `isa_dispatch!`
// instantiates each one inside a `#[target_feature(enable = "avx2,fma")]` and an `avx512f`
// wrapper, and the public function picks the widest one the CPU reports
// (`is_x86_feature_detected!` caches its answer in an atomic, so the check is a load). The bodies
// avoid `mul_add` (a libm call without FMA) and `f32::round` (not vectorisable); they keep
// several independent accumulators so the reductions vectorise without reassociation flags.

/// Defines `pub fn $name(args) -> ret` that runs `$body` (an `#[inline(always)]` function of the
/// same signature) compiled for AVX-512, AVX2+FMA or the baseline, whichever the CPU has.
macro_rules! isa_dispatch {
    ($(#[$m:meta])* pub fn $name:ident($($a:ident: $t:ty),*) -> $r:ty = $body:ident;) => {
        $(#[$m])*
        pub fn $name($($a: $t),*) -> $r {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
                fn avx512($($a: $t),*) -> $r {
                    $body($($a),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn avx2($($a: $t),*) -> $r {
                    $body($($a),*)
                }
                if std::is_x86_feature_detected!("avx512f")
                    && std::is_x86_feature_detected!("avx512vl")
                    && std::is_x86_feature_detected!("avx512dq")
                {
                    // SAFETY: the CPU reports every feature the function is compiled for.
                    return unsafe { avx512($($a),*) };
                }
                if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                    // SAFETY: the CPU reports every feature the function is compiled for.
                    return unsafe { avx2($($a),*) };
                }
            }
            $body($($a),*)
        }
    };
}

const LANES: usize = 16;

/// f32 partial sums cover at most this many elements before they are folded into f64, which
/// bounds their rounding error (each of the 64 lanes adds 64 values) while the hot loop stays
/// free of conversions.
const F32_SPAN: usize = 4096;

/// How far ahead of the loads the sums prefetch, in bytes. The hardware prefetcher alone
/// leaves one core's streaming sum short of the bandwidth PyTorch reaches here: in a
/// standalone loop a 16M-element f32 sum took 6.2 ms against PyTorch's 5.8 ms, and 5.1–5.4 ms
/// when it prefetched 4 KiB ahead over huge pages (Note [Huge pages for large blocks] in c10).
/// `W4.sum_16M` went from 1.11 to 0.98 of PyTorch.
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

#[inline(always)]
fn sum_f32_body(x: &[f32]) -> f64 {
    const L: usize = 64;
    let mut total = 0f64;
    for block in x.chunks(F32_SPAN) {
        let mut acc = [0f32; L];
        let chunks = block.chunks_exact(L);
        let rest = chunks.remainder();
        for c in chunks {
            prefetch_256(c.as_ptr().cast::<u8>().wrapping_add(PREFETCH_AHEAD));
            for i in 0..L {
                acc[i] += c[i];
            }
        }
        let mut wide = [0f64; LANES];
        for (i, v) in acc.iter().enumerate() {
            wide[i % LANES] += *v as f64;
        }
        total += pairwise(&wide) + rest.iter().map(|v| *v as f64).sum::<f64>();
    }
    total
}

#[inline(always)]
fn sum_f64_body(x: &[f64]) -> f64 {
    let mut acc = [0f64; LANES];
    let chunks = x.chunks_exact(2 * LANES);
    let rest = chunks.remainder();
    for c in chunks {
        prefetch_256(c.as_ptr().cast::<u8>().wrapping_add(PREFETCH_AHEAD));
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

isa_dispatch! {
    /// The sum of `x`: 64 interleaved f32 lanes over spans of 4096 elements, the spans added in
    /// f64.
    pub fn sum_f32(x: &[f32]) -> f64 = sum_f32_body;
}
isa_dispatch! {
    /// The sum of `x` over 16 interleaved lanes.
    pub fn sum_f64(x: &[f64]) -> f64 = sum_f64_body;
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

// ---- exp and softmax -------------------------------------------------------------------------

const LOG2E: f32 = std::f32::consts::LOG2_E;
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;
/// 1.5 * 2^23: adding it rounds an f32 of magnitude < 2^22 to an integer (ties to even) and
/// leaves that integer in the low mantissa bits.
const ROUND_MAGIC: f32 = 12_582_912.0;

/// `e^x` in f32 to about 1 ulp, branch-free so that loops over it vectorise: `x = n ln2 + r`
/// with |r| <= ln2/2 (Cody-Waite, two-part ln2), a degree-7 Taylor polynomial for `e^r`, and
/// `2^n` assembled in the exponent bits. Underflows to 0 below -87.3 (no subnormal results),
/// overflows to inf above 88.72, and keeps NaN.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    let xc = x.clamp(-87.5, 88.8);
    let t = xc * LOG2E + ROUND_MAGIC;
    let n = t - ROUND_MAGIC;
    let r = (xc - n * LN2_HI) - n * LN2_LO;
    let mut p = 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    let ni = t.to_bits().wrapping_sub(ROUND_MAGIC.to_bits()) as i32;
    // n in [-127, 129]: split 2^n = 2^(n/2) * 2^(n - n/2) so both halves are normal numbers.
    let h = ni >> 1;
    let s1 = f32::from_bits(((h + 127) as u32) << 23);
    let s2 = f32::from_bits(((ni - h + 127) as u32) << 23);
    let v = p * s1 * s2;
    let v = if x < -87.3 { 0.0 } else { v };
    let v = if x > 88.72 { f32::INFINITY } else { v };
    if x.is_nan() {
        x
    } else {
        v
    }
}

#[inline(always)]
fn max_f32(x: &[f32]) -> f32 {
    let mut m = [f32::NEG_INFINITY; LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    let mut nan = false;
    for c in chunks {
        for i in 0..LANES {
            nan |= c[i].is_nan();
            m[i] = if c[i] > m[i] { c[i] } else { m[i] };
        }
    }
    let mut r = f32::NEG_INFINITY;
    for v in rest.iter().chain(&m) {
        nan |= v.is_nan();
        r = if *v > r { *v } else { r };
    }
    if nan {
        f32::NAN
    } else {
        r
    }
}

#[inline(always)]
fn softmax_row_f32_body(x: &[f32], y: &mut [f32]) {
    let m = max_f32(x);
    // A row of -inf (fully masked) gives NaN like PyTorch: exp(-inf - -inf) = exp(NaN).
    let mut acc = [0f32; LANES];
    let (xc, yc) = (x.chunks_exact(LANES), y.chunks_exact_mut(LANES));
    let (xr, mut s) = (xc.remainder(), 0f32);
    for (a, b) in xc.zip(yc) {
        for i in 0..LANES {
            let e = exp_f32(a[i] - m);
            b[i] = e;
            acc[i] += e;
        }
    }
    let done = x.len() - xr.len();
    for (a, b) in xr.iter().zip(&mut y[done..]) {
        let e = exp_f32(*a - m);
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
fn log_softmax_row_f32_body(x: &[f32], y: &mut [f32]) {
    let m = max_f32(x);
    let mut acc = [0f32; LANES];
    let xc = x.chunks_exact(LANES);
    let (xr, mut s) = (xc.remainder(), 0f32);
    for a in xc {
        for i in 0..LANES {
            acc[i] += exp_f32(a[i] - m);
        }
    }
    for a in xr {
        s += exp_f32(*a - m);
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
    pub fn softmax_row_f32(x: &[f32], y: &mut [f32]) -> () = softmax_row_f32_body;
}
isa_dispatch! {
    /// `y = log_softmax(x)` for one contiguous row.
    pub fn log_softmax_row_f32(x: &[f32], y: &mut [f32]) -> () = log_softmax_row_f32_body;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_matches_std_within_two_ulp() {
        let mut worst = 0f64;
        let mut x = -87.0f32;
        while x < 88.0 {
            let (ours, exact) = (exp_f32(x) as f64, (x as f64).exp());
            worst = worst.max(((ours - exact) / exact).abs());
            x += 0.0137;
        }
        assert!(worst < 2.5e-7, "worst relative error {worst}");
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(-100.0), 0.0);
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(100.0), f32::INFINITY);
        assert!(exp_f32(f32::NAN).is_nan());
        assert_eq!(exp_f32(0.0), 1.0);
    }

    #[test]
    fn sums_and_softmax_rows() {
        let x: Vec<f32> = (0..37).map(|i| i as f32 * 0.25 - 3.0).collect();
        let exact: f64 = x.iter().map(|v| *v as f64).sum();
        assert!((sum_f32(&x) - exact).abs() < 1e-12);
        let xd: Vec<f64> = x.iter().map(|v| *v as f64).collect();
        assert!((sum_f64(&xd) - exact).abs() < 1e-12);
        // 53 = one 32-element step, one 16-element step and 5 left over.
        let long: Vec<f64> = (0..53).map(|i| i as f64 * 0.5 - 7.0).collect();
        assert_eq!(sum_f64(&long), long.iter().sum::<f64>());
        let mut y = vec![0f32; 37];
        softmax_row_f32(&x, &mut y);
        let m = 6.0f64;
        let z: f64 = xd.iter().map(|v| (v - m).exp()).sum();
        for (a, b) in y.iter().zip(&xd) {
            assert!((*a as f64 - (b - m).exp() / z).abs() < 1e-6);
        }
        log_softmax_row_f32(&x, &mut y);
        for (a, b) in y.iter().zip(&xd) {
            assert!((*a as f64 - (b - m - z.ln())).abs() < 1e-5);
        }
        let mut acc = vec![1.0f64; 3];
        add_row_f32(&mut acc, &[1.0, 2.0, 3.0]);
        assert_eq!(acc, vec![2.0, 3.0, 4.0]);
    }

    #[test]
    fn nan_propagates_through_max() {
        let x = [1.0f32, f32::NAN, 3.0];
        let mut y = [0f32; 3];
        softmax_row_f32(&x, &mut y);
        assert!(y.iter().all(|v| v.is_nan()));
    }
}
