//! Our own single-precision matrix product for CPUs with AVX-512F.
//!
//! Note [Packed f32 GEMM]: `c = alpha * a @ b (+ beta * c)` with a row-major output, in the
//! classic blocked shape (Goto/BLIS):
//!
//! - the micro-kernel keeps a 12 x 32 tile of `c` in 24 zmm registers; each step of `k` loads
//!   32 values of `b` (two vectors), broadcasts 12 values of `a` and issues 24 FMAs;
//! - `a` is packed in panels of 12 rows (`[k][12]`, 18 KiB per panel for KC = 384), which stay in
//!   L1 while the kernel walks across `b`;
//! - `b` is packed in blocks of KC x NC = 384 x 480 (720 KiB, within this machine's 1 MiB L2)
//!   made of panels of 32 columns (`[k][32]`) that the kernel streams from L2, prefetching
//!   eight steps ahead;
//! - loops, outermost first: rows of `a` in blocks of [`MC`], `k` in blocks of [`KC`] (`a`
//!   packed once per block), columns in blocks of [`NC`] (`b` packed), panels of `a`, panels of
//!   `b`. The first `k` block writes `c` (or scales its old values by `beta`), the others add.
//!
//! A product with few rows reads a row-major `b` in place rather than packing it
//! ([`DIRECT_B_MAX_ROWS`]). Packing reads any strides, with vector paths for the common layouts (row-major `a` through
//! 8 x 8 and 4 x 4 transposes, column-major `a` and row-major `b` by straight copies,
//! column-major `b` by 8 x 8 transposes), so transposed operands cost no separate copy.
//! Partial tiles are padded with zeros in the packed panels and written through masks.
//!
//! Measured on this project's machine in a standalone loop (one thread, 1024² and 2048²
//! row-major products): about 115–120 GFLOP/s, against 95–115 for the `gemm` crate in
//! interleaved runs and 125–130 for PyTorch's MKL; the kernel alone, with its operands in
//! cache, reaches 125–130 (this VM's FMA peak).

use std::arch::x86_64::*;
use std::cell::RefCell;

use crate::native::linalg::MatRef;

/// Rows of a micro-tile (broadcast from packed `a`).
const MR: usize = 12;
/// Columns of a micro-tile (two 16-lane vectors of packed `b`).
const NR: usize = 32;
/// Depth of a packed block.
const KC: usize = 384;
/// Columns of a packed block of `b` (a multiple of [`NR`]).
const NC: usize = 480;
/// Rows of `a` packed at once (a multiple of [`MR`]).
const MC: usize = 3072;
/// Products with at most this many rows read a row-major `b` in place instead of packing it:
/// packing costs a copy of every element of `b` per block of `a` rows, which only pays off
/// when many panels of `a` reuse it (a convolution's `[64, 576] x [576, 3136]` spent a fifth
/// of its time packing).
const DIRECT_B_MAX_ROWS: usize = 192;
/// How many steps of `k` ahead the kernel prefetches `b`.
const PREFETCH_STEPS: usize = 8;

/// The operands are the strided matrices of `linalg` (element (i, j) at `ptr + i * rs + j * cs`).
type Strided = MatRef<f32>;

impl MatRef<f32> {
    /// The matrix starting at element (i, j).
    ///
    /// # Safety
    /// (i, j) must be an element of the matrix.
    unsafe fn at(self, i: usize, j: usize) -> Strided {
        // SAFETY: per the contract the offset stays inside the matrix.
        Strided { ptr: unsafe { self.ptr.offset(i as isize * self.rs + j as isize * self.cs) }, ..self }
    }

    /// Element (i, j).
    ///
    /// # Safety
    /// (i, j) must be an element of the matrix.
    unsafe fn get(self, i: usize, j: usize) -> f32 {
        // SAFETY: per the contract.
        unsafe { *self.ptr.offset(i as isize * self.rs + j as isize * self.cs) }
    }
}

/// Whether this CPU runs [`sgemm`].
pub(crate) fn available() -> bool {
    std::is_x86_feature_detected!("avx512f")
}

/// Packing buffers of one thread, kept between calls so products do not pay for fresh pages.
#[derive(Default)]
struct Buffers {
    a: Vec<f32>,
    b: Vec<f32>,
}

thread_local! {
    static BUFFERS: RefCell<Buffers> = RefCell::new(Buffers::default());
}

/// A 64-byte-aligned region of `len` floats inside `v` (grown as needed); returns its start.
fn aligned(v: &mut Vec<f32>, len: usize) -> *mut f32 {
    if v.len() < len + 16 {
        v.resize(len + 16, 0.0);
    }
    let off = v.as_ptr().align_offset(64);
    // `align_offset` of an f32 pointer to 64 bytes is at most 15 elements.
    v[off..].as_mut_ptr()
}

/// `c = alpha * a @ b + beta * c` (`beta == None` overwrites `c`) for an `m x k` by `k x n`
/// product into the row-major `c` with row stride `ldc`, on the calling thread. See Note
/// [Packed f32 GEMM].
///
/// # Safety
/// The CPU must have AVX-512F ([`available`]); `a`, `b` and `c` must address valid elements for
/// every index in range; `c` must not overlap `a` or `b`, and no one else may write it meanwhile.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sgemm(
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    a: Strided,
    b: Strided,
    beta: Option<f32>,
    c: *mut f32,
    ldc: isize,
) {
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    // Taken out of the thread-local for the call (a re-entrant call would find empty buffers
    // and allocate its own).
    let mut bufs = BUFFERS.with(|b| std::mem::take(&mut *b.borrow_mut()));
    let apack = aligned(&mut bufs.a, MC.min(m.div_ceil(MR) * MR) * KC.min(k));
    let bpack = aligned(&mut bufs.b, NC * KC.min(k));
    // With few rows, each packed element of `b` would be used by few panels of `a`: a
    // row-major `b` is then read in place (full panels; partial ones are still packed).
    let direct_b = b.cs == 1 && m <= DIRECT_B_MAX_ROWS;
    for ic in (0..m).step_by(MC) {
        let mc = MC.min(m - ic);
        let panels_a = mc.div_ceil(MR);
        for pc in (0..k).step_by(KC) {
            let kc = KC.min(k - pc);
            for ip in 0..panels_a {
                let i0 = ic + ip * MR;
                // SAFETY: rows i0.., columns pc.. of `a` exist; the panel fits the buffer
                // (panels_a * MR * kc elements); AVX-512F per the contract.
                unsafe { pack_a(MR.min(m - i0), kc, a.at(i0, pc), apack.add(ip * MR * kc)) };
            }
            let bt = if pc == 0 { beta } else { Some(1.0) };
            for jc in (0..n).step_by(NC) {
                let nc = NC.min(n - jc);
                let panels_b = nc.div_ceil(NR);
                // Where each panel of `b` is read from, and the distance between its k steps.
                let mut panel_b = [(std::ptr::null::<f32>(), 0isize); NC / NR];
                for (jp, panel) in panel_b.iter_mut().enumerate().take(panels_b) {
                    let j0 = jc + jp * NR;
                    let cols = NR.min(n - j0);
                    // SAFETY: (pc, j0) is an element of `b`.
                    let src = unsafe { b.at(pc, j0) };
                    *panel = if direct_b && cols == NR {
                        (src.ptr, b.rs)
                    } else {
                        let dst = bpack.wrapping_add(jp * NR * kc);
                        // SAFETY: as for `a`; the block fits NC * kc elements.
                        unsafe { pack_b(kc, cols, src, dst) };
                        (dst.cast_const(), NR as isize)
                    };
                }
                for ip in 0..panels_a {
                    let i0 = ic + ip * MR;
                    for (jp, &(bp, b_step)) in panel_b.iter().enumerate().take(panels_b) {
                        let j0 = jc + jp * NR;
                        // SAFETY: panels of kc steps (packed, or rows of `b` with 32 columns in
                        // range); the tile at (i0, j0) of `c` has min(MR, m - i0) rows and
                        // min(NR, n - j0) columns in range.
                        unsafe {
                            kernel(
                                kc,
                                apack.add(ip * MR * kc),
                                bp,
                                b_step,
                                c.offset(i0 as isize * ldc + j0 as isize),
                                ldc,
                                MR.min(m - i0),
                                NR.min(n - j0),
                                alpha,
                                bt,
                            )
                        };
                    }
                }
            }
        }
    }
    BUFFERS.with(|b| *b.borrow_mut() = bufs);
}

/// Packs `rows` (at most [`MR`]) rows by `kc` columns of `a` as `dst[p * MR + r]`, zero rows
/// past `rows`.
///
/// # Safety
/// The elements must exist, `dst` must hold `MR * kc` floats, and the CPU must have AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn pack_a(rows: usize, kc: usize, a: Strided, dst: *mut f32) {
    // SAFETY: every read is an element of `a` (r < rows, p < kc) and every write is below
    // MR * kc, per the contract.
    unsafe {
        if rows == MR && a.cs == 1 {
            let mut p = 0;
            while p + 8 <= kc {
                transpose8x8(a.at(0, p).ptr, a.rs, dst.add(p * MR), MR as isize);
                transpose4x4(a.at(8, p).ptr, a.rs, dst.add(p * MR + 8), MR as isize);
                transpose4x4(a.at(8, p + 4).ptr, a.rs, dst.add((p + 4) * MR + 8), MR as isize);
                p += 8;
            }
            for p in p..kc {
                for r in 0..MR {
                    *dst.add(p * MR + r) = a.get(r, p);
                }
            }
        } else if rows == MR && a.rs == 1 {
            for p in 0..kc {
                let s = a.at(0, p).ptr;
                _mm256_storeu_ps(dst.add(p * MR), _mm256_loadu_ps(s));
                _mm_storeu_ps(dst.add(p * MR + 8), _mm_loadu_ps(s.add(8)));
            }
        } else {
            for p in 0..kc {
                for r in 0..MR {
                    *dst.add(p * MR + r) = if r < rows { a.get(r, p) } else { 0.0 };
                }
            }
        }
    }
}

/// Packs `kc` rows by `cols` (at most [`NR`]) columns of `b` as `dst[p * NR + j]`, zero columns
/// past `cols`.
///
/// # Safety
/// As [`pack_a`], with `dst` holding `NR * kc` floats.
#[target_feature(enable = "avx512f")]
unsafe fn pack_b(kc: usize, cols: usize, b: Strided, dst: *mut f32) {
    // SAFETY: every read is an element of `b` (p < kc, j < cols), every write below NR * kc.
    unsafe {
        if cols == NR && b.cs == 1 {
            for p in 0..kc {
                let s = b.at(p, 0).ptr;
                let d = dst.add(p * NR);
                _mm512_storeu_ps(d, _mm512_loadu_ps(s));
                _mm512_storeu_ps(d.add(16), _mm512_loadu_ps(s.add(16)));
            }
        } else if cols == NR && b.rs == 1 {
            let whole = kc / 8 * 8;
            for j in (0..NR).step_by(8) {
                for p in (0..whole).step_by(8) {
                    transpose8x8(b.at(p, j).ptr, b.cs, dst.add(p * NR + j), NR as isize);
                }
            }
            for p in whole..kc {
                for j in 0..NR {
                    *dst.add(p * NR + j) = b.get(p, j);
                }
            }
        } else {
            for p in 0..kc {
                for j in 0..NR {
                    *dst.add(p * NR + j) = if j < cols { b.get(p, j) } else { 0.0 };
                }
            }
        }
    }
}

/// Writes the transpose of the 8 x 8 block whose rows start `src_ld` apart to the block whose
/// rows start `dst_ld` apart.
///
/// # Safety
/// Both blocks must be valid and the CPU must have AVX.
#[target_feature(enable = "avx")]
pub(crate) unsafe fn transpose8x8(src: *const f32, src_ld: isize, dst: *mut f32, dst_ld: isize) {
    // SAFETY: the caller guarantees the 8 rows of 8 elements of both blocks.
    unsafe {
        let r: [__m256; 8] = std::array::from_fn(|i| _mm256_loadu_ps(src.offset(i as isize * src_ld)));
        let t0 = _mm256_unpacklo_ps(r[0], r[1]);
        let t1 = _mm256_unpackhi_ps(r[0], r[1]);
        let t2 = _mm256_unpacklo_ps(r[2], r[3]);
        let t3 = _mm256_unpackhi_ps(r[2], r[3]);
        let t4 = _mm256_unpacklo_ps(r[4], r[5]);
        let t5 = _mm256_unpackhi_ps(r[4], r[5]);
        let t6 = _mm256_unpacklo_ps(r[6], r[7]);
        let t7 = _mm256_unpackhi_ps(r[6], r[7]);
        let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
        let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
        let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
        let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
        let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
        let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
        let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
        let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
        let out = [
            _mm256_permute2f128_ps::<0x20>(s0, s4),
            _mm256_permute2f128_ps::<0x20>(s1, s5),
            _mm256_permute2f128_ps::<0x20>(s2, s6),
            _mm256_permute2f128_ps::<0x20>(s3, s7),
            _mm256_permute2f128_ps::<0x31>(s0, s4),
            _mm256_permute2f128_ps::<0x31>(s1, s5),
            _mm256_permute2f128_ps::<0x31>(s2, s6),
            _mm256_permute2f128_ps::<0x31>(s3, s7),
        ];
        for (i, v) in out.into_iter().enumerate() {
            _mm256_storeu_ps(dst.offset(i as isize * dst_ld), v);
        }
    }
}

/// As [`transpose8x8`] for a 4 x 4 block.
///
/// # Safety
/// Both blocks must be valid (4 rows of 4 f32).
#[target_feature(enable = "avx")]
unsafe fn transpose4x4(src: *const f32, src_ld: isize, dst: *mut f32, dst_ld: isize) {
    // SAFETY: the caller guarantees the 4 rows of 4 elements of both blocks.
    unsafe {
        let r: [__m128; 4] = std::array::from_fn(|i| _mm_loadu_ps(src.offset(i as isize * src_ld)));
        let lo01 = _mm_unpacklo_ps(r[0], r[1]);
        let lo23 = _mm_unpacklo_ps(r[2], r[3]);
        let hi01 = _mm_unpackhi_ps(r[0], r[1]);
        let hi23 = _mm_unpackhi_ps(r[2], r[3]);
        let out = [
            _mm_movelh_ps(lo01, lo23),
            _mm_movehl_ps(lo23, lo01),
            _mm_movelh_ps(hi01, hi23),
            _mm_movehl_ps(hi23, hi01),
        ];
        for (i, v) in out.into_iter().enumerate() {
            _mm_storeu_ps(dst.offset(i as isize * dst_ld), v);
        }
    }
}

/// The 12 x 32 micro-kernel: `kc` steps over the packed panel `a` (`[kc][MR]`) and the panel
/// `b` (`kc` runs of 32 floats, `b_step` apart: packed, or rows of a row-major `b`), then `c[r][j] = alpha * acc + beta * c[r][j]` (or `alpha * acc` when `beta`
/// is None) for `r < rows`, `j < cols`.
///
/// # Safety
/// The panels must hold `kc` steps (`b`'s `b_step` apart); `c` must address `rows` rows of `cols` floats, rows `ldc`
/// apart; the CPU must have AVX-512F.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
unsafe fn kernel(
    kc: usize,
    a: *const f32,
    b: *const f32,
    b_step: isize,
    c: *mut f32,
    ldc: isize,
    rows: usize,
    cols: usize,
    alpha: f32,
    beta: Option<f32>,
) {
    // SAFETY: reads stay within the panels (kc steps), prefetches cannot fault, and stores
    // are masked to the `rows` x `cols` tile of `c`, per the contract.
    unsafe {
        for r in 0..rows {
            _mm_prefetch::<_MM_HINT_T0>(c.offset(r as isize * ldc) as *const i8);
            _mm_prefetch::<_MM_HINT_T0>(c.offset(r as isize * ldc + 16) as *const i8);
        }
        let mut acc = [[_mm512_setzero_ps(); 2]; MR];
        let (mut ap, mut bp) = (a, b);
        for _ in 0..kc {
            let ahead = bp.wrapping_offset(PREFETCH_STEPS as isize * b_step);
            _mm_prefetch::<_MM_HINT_T0>(ahead as *const i8);
            _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(16) as *const i8);
            let b0 = _mm512_loadu_ps(bp);
            let b1 = _mm512_loadu_ps(bp.add(16));
            for (r, acc) in acc.iter_mut().enumerate() {
                let av = _mm512_set1_ps(*ap.add(r));
                acc[0] = _mm512_fmadd_ps(av, b0, acc[0]);
                acc[1] = _mm512_fmadd_ps(av, b1, acc[1]);
            }
            ap = ap.add(MR);
            bp = bp.wrapping_offset(b_step);
        }
        let al = _mm512_set1_ps(alpha);
        let bv = _mm512_set1_ps(beta.unwrap_or(0.0));
        let mask = |lo: usize| -> u16 {
            if cols >= lo + 16 {
                0xffff
            } else if cols <= lo {
                0
            } else {
                ((1u32 << (cols - lo)) - 1) as u16
            }
        };
        let (m0, m1) = (mask(0), mask(16));
        let store = |dst: *mut f32, v: __m512, m: u16| {
            let v = match beta {
                None => _mm512_mul_ps(v, al),
                Some(bt) => {
                    let old = _mm512_maskz_loadu_ps(m, dst);
                    if bt == 1.0 {
                        _mm512_fmadd_ps(v, al, old)
                    } else {
                        _mm512_fmadd_ps(v, al, _mm512_mul_ps(old, bv))
                    }
                }
            };
            _mm512_mask_storeu_ps(dst, m, v);
        };
        // Unrolled with constant row indices so the accumulators stay in registers.
        macro_rules! rows {
            ($($r:literal)*) => {$(
                if $r < rows {
                    let row = c.offset($r * ldc);
                    store(row, acc[$r][0], m0);
                    store(row.add(16), acc[$r][1], m1);
                }
            )*};
        }
        rows!(0 1 2 3 4 5 6 7 8 9 10 11);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::too_many_arguments)]
    fn reference(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        ars: usize,
        acs: usize,
        b: &[f32],
        brs: usize,
        bcs: usize,
    ) -> Vec<f64> {
        let mut c = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|p| a[i * ars + p * acs] as f64 * b[p * brs + j * bcs] as f64).sum();
            }
        }
        c
    }

    #[test]
    fn products_of_every_layout_and_edge_match_a_reference() {
        if !available() {
            return;
        }
        // Sizes cover partial tiles (rows not a multiple of 12, columns not of 32), several k
        // blocks (k > 384) and several column blocks (n > 480).
        for &(m, n, k) in
            &[(1, 1, 1), (12, 32, 8), (13, 33, 9), (25, 70, 400), (40, 500, 800), (7, 3, 1000), (200, 70, 20)]
        {
            let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.125).collect();
            let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 11) as f32 - 5.0) * 0.25).collect();
            for (a_rm, b_rm) in [(true, true), (false, true), (true, false), (false, false)] {
                let (ars, acs) = if a_rm { (k, 1) } else { (1, m) };
                let (brs, bcs) = if b_rm { (n, 1) } else { (1, k) };
                let want = reference(m, n, k, &a, ars, acs, &b, brs, bcs);
                let ldc = n + 3;
                for beta in [None, Some(0.5f32), Some(1.0)] {
                    let mut c = vec![2f32; m * ldc];
                    // SAFETY: AVX-512F checked; the strides address the vectors above.
                    unsafe {
                        sgemm(
                            m,
                            n,
                            k,
                            1.5,
                            Strided { ptr: a.as_ptr(), rs: ars as isize, cs: acs as isize },
                            Strided { ptr: b.as_ptr(), rs: brs as isize, cs: bcs as isize },
                            beta,
                            c.as_mut_ptr(),
                            ldc as isize,
                        )
                    };
                    for i in 0..m {
                        for j in 0..ldc {
                            let got = c[i * ldc + j] as f64;
                            if j >= n {
                                assert_eq!(got, 2.0, "padding column written at ({i}, {j})");
                                continue;
                            }
                            let w = 1.5 * want[i * n + j] + beta.map_or(0.0, |bt| bt as f64 * 2.0);
                            assert!(
                                (got - w).abs() <= 1e-4 * (1.0 + w.abs()),
                                "{m}x{n}x{k} a_rm={a_rm} b_rm={b_rm} beta={beta:?} ({i}, {j}): {got} vs {w}"
                            );
                        }
                    }
                }
            }
        }
    }
}
