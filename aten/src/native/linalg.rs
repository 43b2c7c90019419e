//! Matrix products: `mm`, `bmm`, `addmm`, `baddbmm`, `addbmm`, `mv`, `dot` (CPU kernels over the
//! `gemm` crate), and the composites written with them: `matmul`, `linear`, `outer`,
//! `tensordot`, `einsum`.
//!
//! Note [Strided GEMM]: every product goes through [`batched_gemm`], which hands `gemm` the
//! operands' own row and column strides (any sign, zero for broadcast batch dimensions), so a
//! transposed or sliced operand is never copied. f32/f64 run natively; f16/bf16 are widened to
//! f32, multiplied, and rounded once (PyTorch's CPU behaviour for reduced-precision GEMM with
//! f32 accumulation); integer dtypes run a plain triple loop with wrapping arithmetic.
//!
//! Note [GEMM parallelism]: a large single product uses `Parallelism::Rayon(n)` with rayon's
//! current thread count (so `pool.install` and `RAYON_NUM_THREADS` are honoured); a batch of
//! small products is split over the batch with rayon and each product runs on one thread.

use gemm::Parallelism;

use c10::{Error, Result, Scalar, ScalarType};

use crate::{ops, Tensor};

/// Products with fewer multiply-adds than this run on the calling thread.
const PAR_MIN_FLOPS: usize = 1 << 17;

/// The parallelism for one product of `m x k` by `k x n` (See Note [GEMM parallelism]).
pub(crate) fn gemm_parallelism(m: usize, n: usize, k: usize) -> Parallelism {
    let threads = rayon::current_num_threads();
    if threads > 1 && m.saturating_mul(n).saturating_mul(k) >= PAR_MIN_FLOPS {
        Parallelism::Rayon(threads)
    } else {
        Parallelism::None
    }
}

/// A strided matrix: element (i, j) is at `ptr + i * rs + j * cs` (strides in elements).
#[derive(Clone, Copy, Debug)]
#[doc(hidden)]
pub struct MatRef<T> {
    pub ptr: *const T,
    pub rs: isize,
    pub cs: isize,
}

/// A strided mutable matrix, as [`MatRef`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct MatMut<T> {
    pub ptr: *mut T,
    pub rs: isize,
    pub cs: isize,
}

impl<T> MatRef<T> {
    /// The base address (a method, so closures capture the whole `Send` wrapper).
    #[inline]
    fn base(self) -> *const T {
        self.ptr
    }
}

impl<T> MatMut<T> {
    /// The base address (a method, so closures capture the whole `Send` wrapper).
    #[inline]
    fn base(self) -> *mut T {
        self.ptr
    }
}

// SAFETY: these are plain addresses handed to rayon workers; every user writes disjoint output
// matrices (one per batch element) and only reads the inputs.
unsafe impl<T> Send for MatRef<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for MatRef<T> {}
// SAFETY: as above.
unsafe impl<T> Send for MatMut<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for MatMut<T> {}

/// Element types `gemm` multiplies natively.
pub(crate) trait GemmFloat: Copy + Send + Sync + 'static + num_traits::Float + c10::Element {}
impl GemmFloat for f32 {}
impl GemmFloat for f64 {}

/// `c = alpha * a @ b + beta * c` for one `m x k` by `k x n` product; `beta == None`
/// overwrites `c` (a `beta` of zero also ignores `c`'s old values, NaN included, as PyTorch).
///
/// # Safety
/// The three matrices must address valid elements of their dtype for every index in range, and
/// `c` must not overlap `a` or `b` nor be written concurrently by someone else.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn gemm_one<T: GemmFloat>(
    m: usize,
    n: usize,
    k: usize,
    c: MatMut<T>,
    a: MatRef<T>,
    b: MatRef<T>,
    alpha: T,
    beta: Option<T>,
    par: Parallelism,
) {
    if let Parallelism::Rayon(threads) = par {
        if let Some(isa) = packed_isa::<T>(m, n, k, b.cs == 1) {
            if n >= m && k > 0 && c.cs == 1 {
                // Note [Parallel packed GEMM] in `cpu/sgemm.rs`: `a` packed once, column
                // tasks on the pool.
                // SAFETY: forwarded contract; `c` is row-major.
                return unsafe { packed_f32(isa, true, m, n, k, c, a, b, alpha, beta) };
            }
            // More rows than columns: one band of rows per thread, each a single-threaded
            // product (sharing `a` there would give each column task the whole of it).
            // SAFETY: forwarded contract.
            return unsafe { gemm_panels(m, n, k, c, a, b, alpha, beta, threads) };
        }
    }
    // SAFETY: forwarded contract. The scratch copies live in `o` until the end of the call;
    // operands already in the preferred layout (as in the panels of `gemm_panels`) are left
    // as they are.
    let o = unsafe { orient(m, n, k, c, a, b, matches!(par, Parallelism::Rayon(_))) };
    let (m, n, c, a, b) = (o.m, o.n, o.c, o.a, o.b);
    if m == 0 || n == 0 {
        return;
    }
    let beta = beta.filter(|b| *b != T::zero());
    if k == 0 {
        for i in 0..m as isize {
            for j in 0..n as isize {
                // SAFETY: (i, j) is in range of `c` (caller's contract).
                let p = unsafe { c.ptr.offset(i * c.rs + j * c.cs) };
                // SAFETY: as above.
                unsafe { *p = beta.map_or(T::zero(), |bt| bt * *p) };
            }
        }
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(isa) = packed_isa::<T>(m, n, k, b.cs == 1).filter(|_| c.cs == 1) {
        // SAFETY: forwarded contract; `c` is row-major.
        return unsafe { packed_f32(isa, false, m, n, k, c, a, b, alpha, beta) };
    }
    // SAFETY: the caller guarantees the extents; `gemm` reads `a`/`b` and writes `c` within
    // them. Its argument order is (dst, col stride, row stride, read_dst, ...), and it computes
    // dst = alpha' * dst + beta' * lhs @ rhs.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.ptr,
            c.cs,
            c.rs,
            beta.is_some(),
            a.ptr,
            a.cs,
            a.rs,
            b.ptr,
            b.cs,
            b.rs,
            beta.unwrap_or(T::zero()),
            alpha,
            false,
            false,
            false,
            par,
        )
    }
}

/// A product on our packed f32 kernel (Note [Packed f32 GEMM] in `cpu/sgemm.rs`), on the
/// current rayon pool when `parallel` (Note [Parallel packed GEMM]). A zero `beta` overwrites
/// `c` (its old values, NaN included, are not read).
///
/// # Safety
/// As [`gemm_one`]; `T` must be f32 (as [`packed_isa`] checks), `c` row-major, and the CPU
/// must run `isa`.
#[allow(clippy::too_many_arguments)]
unsafe fn packed_f32<T: GemmFloat>(
    isa: PackedIsa,
    parallel: bool,
    m: usize,
    n: usize,
    k: usize,
    c: MatMut<T>,
    a: MatRef<T>,
    b: MatRef<T>,
    alpha: T,
    beta: Option<T>,
) {
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (parallel, m, n, k, c, a, b, alpha, beta);
        match isa {}
    }
    #[cfg(target_arch = "x86_64")]
    {
        use crate::native::cpu::sgemm;
        let f = |x: MatRef<T>| MatRef { ptr: x.ptr as *const f32, rs: x.rs, cs: x.cs };
        let to_f32 = |x: T| x.to_f32().unwrap_or(f32::NAN);
        let beta = beta.filter(|b| *b != T::zero()).map(to_f32);
        let (alpha, a, b, ldc, c) = (to_f32(alpha), f(a), f(b), c.rs, c.ptr as *mut f32);
        // SAFETY: T is f32 per the contract, so the casts keep the element type; the extents,
        // the no-overlap condition and the ISA are the caller's.
        unsafe { sgemm::sgemm(isa, parallel, m, n, k, alpha, a, b, beta, c, ldc) }
    }
}

/// Note [GEMM operand layout]: the `gemm` crate is fastest when the output and both operands
/// are row-major. Measured on this project's machine (one thread, f32): a weight gradient
/// `g.t() @ x` (`[512, 128] x [128, 784]`) ran at 72 GFLOP/s with `g.t()` passed by its
/// strides and at 112 with the same operand row-major; `x @ W.t()` (`[128, 784] x [784, 512]`)
/// at 54 against 84. So a product whose output is column-major is turned around
/// (`C^T = B^T A^T`, which makes the output row-major), and then an operand that is not
/// row-major is copied row-major into scratch memory when the product does at least
/// [`ORIENT_MIN_REUSE`] multiply-adds per copied element. The copy (8 x 8 AVX transposes for
/// column-major f32, 16 x 16 tiles otherwise) costs about 0.7 ns per element here (1.2 for the
/// tiles): copying `W.t()` for a batch of 128 rows takes 0.28 ms and saves 0.7 ms of the 1.9 ms
/// product; the weight gradient's copy (64 K elements) takes 0.05 ms and saves 0.5 ms. The
/// copies change where operands are read from, not the arithmetic. Products that run on our
/// own kernel (f32 with AVX-512F or AVX2, [`packed_isa`]) skip the copies: its packing reads any
/// layout; they are still turned around to a row-major output.
const ORIENT_MIN_REUSE: usize = 128;

/// Products with fewer multiply-adds than this are never reoriented (Note [GEMM operand
/// layout]).
const ORIENT_MIN_WORK: usize = 1 << 18;

/// A product after Note [GEMM operand layout]: the (possibly turned-around) geometry and the
/// scratch copies its operands may point into.
struct Oriented<T> {
    m: usize,
    n: usize,
    c: MatMut<T>,
    a: MatRef<T>,
    b: MatRef<T>,
    _scratch: [Option<Tensor>; 2],
}

/// See Note [GEMM operand layout]; `parallel` copies with rayon.
///
/// # Safety
/// As [`gemm_one`].
#[allow(clippy::too_many_arguments)]
unsafe fn orient<T: GemmFloat>(
    m: usize,
    n: usize,
    k: usize,
    c: MatMut<T>,
    a: MatRef<T>,
    b: MatRef<T>,
    parallel: bool,
) -> Oriented<T> {
    let t = |x: MatRef<T>| MatRef { ptr: x.ptr, rs: x.cs, cs: x.rs };
    let (m, n, c, a, b) = if c.cs != 1 && c.rs == 1 {
        (n, m, MatMut { ptr: c.ptr, rs: c.cs, cs: c.rs }, t(b), t(a))
    } else {
        (m, n, c, a, b)
    };
    let mut o = Oriented { m, n, c, a, b, _scratch: [None, None] };
    if m.saturating_mul(n).saturating_mul(k) < ORIENT_MIN_WORK
        || c.cs != 1
        || packed_isa::<T>(m, n, k, b.cs == 1).is_some()
    {
        return o;
    }
    if a.cs != 1 && n >= ORIENT_MIN_REUSE {
        // SAFETY: `a` addresses an m x k matrix (caller's contract).
        if let Some((copy, ptr)) = unsafe { copy_row_major(m, k, a, parallel) } {
            o.a = MatRef { ptr, rs: k as isize, cs: 1 };
            o._scratch[0] = Some(copy);
        }
    }
    if b.cs != 1 && m >= ORIENT_MIN_REUSE {
        // SAFETY: `b` addresses a k x n matrix (caller's contract).
        if let Some((copy, ptr)) = unsafe { copy_row_major(k, n, b, parallel) } {
            o.b = MatRef { ptr, rs: n as isize, cs: 1 };
            o._scratch[1] = Some(copy);
        }
    }
    o
}

/// Products with fewer multiply-adds than this, or fewer than 8 rows or 16 columns, go to the
/// `gemm` crate rather than Note [Packed f32 GEMM] (whose tiles would mostly compute padding,
/// and whose packing does not pay off on tiny products).
const PACKED_MIN_WORK: usize = 1 << 15;

/// The instruction sets of Note [Packed f32 GEMM] (none off x86-64).
#[cfg(target_arch = "x86_64")]
type PackedIsa = crate::native::cpu::sgemm::Isa;
#[cfg(not(target_arch = "x86_64"))]
type PackedIsa = std::convert::Infallible;

/// The micro-kernel an `m x k` by `k x n` product of `T` with a row-major output runs on (Note
/// [Packed f32 GEMM] in `cpu/sgemm.rs`): f32 on a CPU with AVX-512F, or with AVX2 and FMA for
/// products with enough rows or a `b` that is not row-major (`isa_for`), or None for the
/// `gemm` crate (`b_row_major`: `b`'s column stride is 1). The packing reads any operand
/// layout, so such products need no copies from Note [GEMM operand layout].
fn packed_isa<T: GemmFloat>(m: usize, n: usize, k: usize, b_row_major: bool) -> Option<PackedIsa> {
    #[cfg(target_arch = "x86_64")]
    {
        (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()
            && m >= 8
            && n >= 16
            && m.saturating_mul(n).saturating_mul(k) >= PACKED_MIN_WORK)
            .then(|| crate::native::cpu::sgemm::isa_for(m, b_row_major))
            .flatten()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (m, n, k, b_row_major);
        None
    }
}

/// A row-major copy of the `rows x cols` matrix `src` in a fresh tensor (None if it cannot be
/// allocated: the product then reads `src` by its strides), and the copy's first element, by
/// [`copy_matrix`] (on rayon when `parallel`).
///
/// # Safety
/// `src` must address valid elements for every index in range.
unsafe fn copy_row_major<T: GemmFloat>(
    rows: usize,
    cols: usize,
    src: MatRef<T>,
    parallel: bool,
) -> Option<(Tensor, *const T)> {
    let copy = Tensor::empty_uninit(&[rows as i64, cols as i64], T::DTYPE, c10::Device::CPU).ok()?;
    let dst = MatMut { ptr: copy.data_ptr() as *mut T, rs: cols as isize, cs: 1 };
    // SAFETY: the caller's contract for `src`; `dst` is the fresh rows x cols tensor.
    unsafe { copy_matrix(rows, cols, src, dst, parallel) };
    let ptr = copy.data_ptr() as *const T;
    Some((copy, ptr))
}

/// Copies the `rows x cols` matrix `src` into `dst`, each with its own strides. Bands of 16
/// rows go to rayon when `parallel`; an f32 copy between a column-major and a row-major layout
/// is transposed in 8 x 8 register blocks where the CPU has AVX, any other in 16 x 16 tiles
/// (either way each cache line of both is touched once per tile, not once per element).
///
/// # Safety
/// `src` and `dst` must address valid elements for every index in range, and must not overlap;
/// no one else may write `dst` meanwhile.
pub(crate) unsafe fn copy_matrix<T: Copy + Send + Sync + 'static>(
    rows: usize,
    cols: usize,
    src: MatRef<T>,
    dst: MatMut<T>,
    parallel: bool,
) {
    const BAND: usize = 16;
    if dst.cs != 1 && dst.rs == 1 {
        // A column-major destination: copy the transposes, whose destination is row-major.
        let (src, dst) =
            (MatRef { ptr: src.ptr, rs: src.cs, cs: src.rs }, MatMut { ptr: dst.ptr, rs: dst.cs, cs: dst.rs });
        // SAFETY: the same elements, addressed through the transposes.
        return unsafe { copy_matrix(cols, rows, src, dst, parallel) };
    }
    let blocks =
        src.rs == 1 && dst.cs == 1 && std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>() && has_avx();
    let band = move |r0: usize| {
        let (src, dst) = (src, dst);
        let r1 = (r0 + BAND).min(rows);
        // Columns done by 8 x 8 blocks (whole blocks of a full band only).
        let done = if blocks && r1 - r0 == BAND { cols / 8 * 8 } else { 0 };
        for c0 in (0..done).step_by(8) {
            for i0 in [r0, r0 + 8] {
                let (i0, c0) = (i0 as isize, c0 as isize);
                // SAFETY: the 8 x 8 block at (i0, c0) is inside both matrices; with src.rs == 1
                // the source block is 8 runs of 8 contiguous f32 (T is f32, checked above), one
                // per column, `src.cs` apart, and with dst.cs == 1 the destination's rows are
                // runs `dst.rs` apart; AVX is present (checked above).
                unsafe {
                    transpose8x8_f32(
                        src.base().offset(i0 + c0 * src.cs) as *const f32,
                        src.cs,
                        dst.base().offset(i0 * dst.rs + c0) as *mut f32,
                        dst.rs,
                    )
                };
            }
        }
        for c0 in (done..cols).step_by(BAND) {
            let c1 = (c0 + BAND).min(cols);
            for i in r0..r1 {
                for j in c0..c1 {
                    let (i, j) = (i as isize, j as isize);
                    // SAFETY: (i, j) is inside both matrices by the caller's contract; each band
                    // writes its own rows.
                    unsafe {
                        *dst.base().offset(i * dst.rs + j * dst.cs) = *src.base().offset(i * src.rs + j * src.cs)
                    };
                }
            }
        }
    };
    if parallel {
        crate::parallel::for_each(rows.div_ceil(BAND), |b| band(b * BAND));
    } else {
        (0..rows.div_ceil(BAND)).for_each(|b| band(b * BAND));
    }
}

/// Whether the CPU has AVX (the 8 x 8 transpose of [`copy_row_major`]).
fn has_avx() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The 8 x 8 f32 transpose of [`copy_row_major`] (shared with Note [Packed f32 GEMM]'s
/// packing).
#[cfg(target_arch = "x86_64")]
use crate::native::cpu::sgemm::transpose8x8 as transpose8x8_f32;

/// Never called: [`copy_row_major`] checks [`has_avx`] first.
///
/// # Safety
/// None needed; it panics.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn transpose8x8_f32(_src: *const f32, _src_ld: isize, _dst: *mut f32, _dst_ld: isize) {
    unreachable!("the 8 x 8 transpose needs AVX")
}

/// The geometry of a batch of products over 3-d strided views `[B, m, k] @ [B, k, n] -> [B, m, n]`
/// (batch strides may be zero).
struct Batch3 {
    count: usize,
    m: usize,
    n: usize,
    k: usize,
    a: [isize; 3],
    b: [isize; 3],
    c: [isize; 3],
}

fn strides3(t: &Tensor) -> [isize; 3] {
    let s = t.strides();
    [s[0] as isize, s[1] as isize, s[2] as isize]
}

/// Runs a batch of float products (See Note [GEMM parallelism]).
///
/// # Safety
/// `a`, `b`, `c` point at element 0 of tensors whose geometry `g` describes; `c` has no two
/// batch elements sharing memory and does not overlap the inputs.
unsafe fn batched_gemm<T: GemmFloat>(g: &Batch3, c: *mut T, a: *const T, b: *const T, alpha: T, beta: Option<T>) {
    let (c0, a0, b0) =
        (MatMut { ptr: c, rs: 0, cs: 0 }, MatRef { ptr: a, rs: 0, cs: 0 }, MatRef { ptr: b, rs: 0, cs: 0 });
    let mat = move |i: usize| {
        let i = i as isize;
        let (c, a, b) = (c0.base(), a0.base(), b0.base());
        (
            // SAFETY: batch index in range; offsets stay inside the tensors (caller's contract).
            MatMut { ptr: unsafe { c.offset(i * g.c[0]) }, rs: g.c[1], cs: g.c[2] },
            // SAFETY: as above.
            MatRef { ptr: unsafe { a.offset(i * g.a[0]) }, rs: g.a[1], cs: g.a[2] },
            // SAFETY: as above.
            MatRef { ptr: unsafe { b.offset(i * g.b[0]) }, rs: g.b[1], cs: g.b[2] },
        )
    };
    let one = g.m.saturating_mul(g.n).saturating_mul(g.k);
    let threads = rayon::current_num_threads();
    // A batch that splits evenly over the threads (or has many products) runs one product per
    // task whatever their size: a fork and join per product cost `bmm` of 64 x [256 x 256] a
    // fifth of its time on two threads.
    let by_batch = one < PAR_MIN_FLOPS * 4 || g.count.is_multiple_of(threads) || g.count >= 4 * threads;
    if g.count > 1 && threads > 1 && by_batch && one.saturating_mul(g.count) >= PAR_MIN_FLOPS {
        crate::parallel::for_each(g.count, |i| {
            let (cm, am, bm) = mat(i);
            // SAFETY: distinct batch elements write disjoint output matrices.
            unsafe { gemm_one(g.m, g.n, g.k, cm, am, bm, alpha, beta, Parallelism::None) };
        });
    } else {
        let par = gemm_parallelism(g.m, g.n, g.k);
        // Large products on our packed kernel are split by `gemm_one` itself.
        let panels = matches!(par, Parallelism::Rayon(_)) && g.m.saturating_mul(g.n) < PANEL_MAX_OUTPUT;
        for i in 0..g.count {
            let (cm, am, bm) = mat(i);
            if panels {
                // SAFETY: forwarded contract.
                unsafe { gemm_panels(g.m, g.n, g.k, cm, am, bm, alpha, beta, threads) };
            } else {
                // SAFETY: forwarded contract.
                unsafe { gemm_one(g.m, g.n, g.k, cm, am, bm, alpha, beta, par) };
            }
        }
    }
}

/// Products with fewer output elements than this are split into panels by [`gemm_panels`];
/// larger ones use the `gemm` crate's own threading.
const PANEL_MAX_OUTPUT: usize = 1 << 20;

/// Note [GEMM panels]: the `gemm` crate's threading leaves the second thread mostly idle on the
/// mid-sized products of a training step (`[128, 784] @ [784, 512]` ran as fast on two threads
/// as on one). Such a product is split here into one panel of output columns (or rows, when
/// there are more rows) per thread, each an independent single-threaded product. Panel edges
/// are multiples of 32 columns or 48 rows (12 on the packed kernel) so every panel keeps whole
/// micro-kernel tiles (16 wide for the `gemm` crate; 12 x 32 for Note [Packed f32 GEMM], whose
/// large products with more rows than columns run this way, the others as Note [Parallel
/// packed GEMM]).
///
/// On the packed kernel rows are split unless `a` is short (under 96 rows a thread) and `b`
/// wider than `a` is tall: each row panel packs only its own rows of `a`, and a panel of at
/// most `DIRECT_B_MAX_ROWS` rows reads a row-major `b` in place, where each column panel packs
/// all of `a`. On the Intel Xeon (AVX-512, best of 7, two threads), `[256, 256] @ [256, 256]`
/// took 101 µs split by rows against 149 by columns; `[784, 512] @ [512, 128]` 301 against
/// 435; `[128, 512] @ [512, 784]` 381 against 344, which stays split by columns.
///
/// # Safety
/// As [`gemm_one`].
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_panels<T: GemmFloat>(
    m: usize,
    n: usize,
    k: usize,
    c: MatMut<T>,
    a: MatRef<T>,
    b: MatRef<T>,
    alpha: T,
    beta: Option<T>,
    threads: usize,
) {
    // SAFETY: forwarded contract; the scratch copies live in `o` until the panels are done.
    let o = unsafe { orient(m, n, k, c, a, b, true) };
    let (m, n, c, a, b) = (o.m, o.n, o.c, o.a, o.b);
    // On our packed kernel, halves of the rows each pack their own rows of `a` and read a
    // row-major `b` in place when they are short enough (`DIRECT_B_MAX_ROWS`), where halves
    // of the columns would each pack all of `a` (Note [GEMM panels]); only a short `a` is split
    // by columns.
    let packed = packed_isa::<T>(m, n, k, b.cs == 1).is_some();
    let split_cols = if packed { n > m && m < 96 * threads } else { n >= m };
    let total = if split_cols { n } else { m };
    let grain = match (packed, split_cols) {
        (_, true) => 32,
        // Whole 12-row tiles of the packed kernel (48-row panels made 256 rows 144 + 112).
        (true, false) => 12,
        (false, false) => 48,
    };
    let per = total.div_ceil(threads).div_ceil(grain) * grain;
    let parts = total.div_ceil(per.max(1));
    crate::parallel::for_each(parts, |p| {
        let (start, end) = (p * per, ((p + 1) * per).min(total));
        let (c, a, b) = (c, a, b);
        let off = start as isize;
        if split_cols {
            // SAFETY: columns start..end of `c` and `b` are in range (caller's contract); the
            // panels write disjoint column ranges of `c`.
            let (cp, bp) = unsafe { (c.base().offset(off * c.cs), b.base().offset(off * b.cs)) };
            let (cp, bp) = (MatMut { ptr: cp, ..c }, MatRef { ptr: bp, ..b });
            // SAFETY: a sub-product of the caller's, on disjoint output.
            unsafe { gemm_one(m, end - start, k, cp, a, bp, alpha, beta, Parallelism::None) };
        } else {
            // SAFETY: rows start..end of `c` and `a` are in range; disjoint row ranges of `c`.
            let (cp, ap) = unsafe { (c.base().offset(off * c.rs), a.base().offset(off * a.rs)) };
            let (cp, ap) = (MatMut { ptr: cp, ..c }, MatRef { ptr: ap, ..a });
            // SAFETY: as above.
            unsafe { gemm_one(end - start, n, k, cp, ap, b, alpha, beta, Parallelism::None) };
        }
    });
}

/// Integer products: a triple loop with wrapping arithmetic (PyTorch's CPU integer GEMM).
#[allow(clippy::unnecessary_cast)] // `as i64` is a no-op for the i64 instance of the macro.
fn int_bmm(out: &Tensor, a: &Tensor, b: &Tensor, alpha: i64, beta: Option<i64>) -> Result<()> {
    let g = geometry(out, a, b);
    match_int!(out.dtype(), T => {
        let (cp, ap, bp) = (out.data_ptr() as *mut T, a.data_ptr() as *const T, b.data_ptr() as *const T);
        for bi in 0..g.count as isize {
            for i in 0..g.m as isize {
                for j in 0..g.n as isize {
                    let mut acc: i64 = 0;
                    for l in 0..g.k as isize {
                        // SAFETY: indices are within the [B, m, k] and [B, k, n] views.
                        let (x, y) = unsafe {
                            (*ap.offset(bi * g.a[0] + i * g.a[1] + l * g.a[2]),
                             *bp.offset(bi * g.b[0] + l * g.b[1] + j * g.b[2]))
                        };
                        acc = acc.wrapping_add((x as i64).wrapping_mul(y as i64));
                    }
                    // SAFETY: (bi, i, j) is within the output view.
                    let p = unsafe { cp.offset(bi * g.c[0] + i * g.c[1] + j * g.c[2]) };
                    let mut v = acc.wrapping_mul(alpha);
                    if let Some(bt) = beta.filter(|&x| x != 0) {
                        // SAFETY: as above.
                        v = v.wrapping_add(bt.wrapping_mul(unsafe { *p } as i64));
                    }
                    // SAFETY: as above.
                    unsafe { *p = v as T };
                }
            }
        }
        Ok(())
    }, d => Err(Error::UnsupportedDtype { op: "addmm_impl_cpu_".into(), dtype: d }))
}

fn geometry(out: &Tensor, a: &Tensor, b: &Tensor) -> Batch3 {
    Batch3 {
        count: out.sizes()[0] as usize,
        m: a.sizes()[1] as usize,
        k: a.sizes()[2] as usize,
        n: b.sizes()[2] as usize,
        a: strides3(a),
        b: strides3(b),
        c: strides3(out),
    }
}

/// `out[i] = alpha * a[i] @ b[i] + beta * out[i]` for 3-d views of one dtype; `out` must not
/// overlap the inputs and must have distinct elements (checked by the callers' allocation).
/// f16/bf16 compute in f32 (See Note [Strided GEMM]).
pub(crate) fn bmm_into(out: &Tensor, a: &Tensor, b: &Tensor, alpha: f64, beta: Option<f64>) -> Result<()> {
    debug_assert!(out.dim() == 3 && a.dim() == 3 && b.dim() == 3);
    if !out.device().is_cpu() {
        // Note [Device-generic operators]: the checks and allocations above this are shared;
        // the product is the device's (cuBLAS on CUDA).
        return crate::native::stub::run_gemm("bmm", out, a, b, alpha, beta);
    }
    let g = geometry(out, a, b);
    if g.count == 0 || g.m == 0 || g.n == 0 {
        return Ok(());
    }
    match out.dtype() {
        ScalarType::F32 => {
            // SAFETY: the views describe live tensors of dtype f32; `out` is a distinct tensor.
            unsafe {
                batched_gemm::<f32>(
                    &g,
                    out.data_ptr() as *mut f32,
                    a.data_ptr() as *const f32,
                    b.data_ptr() as *const f32,
                    alpha as f32,
                    beta.map(|v| v as f32),
                )
            };
            Ok(())
        }
        ScalarType::F64 => {
            // SAFETY: as above, for f64.
            unsafe {
                batched_gemm::<f64>(
                    &g,
                    out.data_ptr() as *mut f64,
                    a.data_ptr() as *const f64,
                    b.data_ptr() as *const f64,
                    alpha,
                    beta,
                )
            };
            Ok(())
        }
        ScalarType::F16 | ScalarType::BF16 => {
            let a32 = crate::native::copy::to_dtype(a, ScalarType::F32)?;
            let b32 = crate::native::copy::to_dtype(b, ScalarType::F32)?;
            let o32 = match beta {
                Some(bt) if bt != 0.0 => crate::native::copy::to_dtype(out, ScalarType::F32)?,
                _ => Tensor::empty_uninit(out.sizes(), ScalarType::F32, out.device())?,
            };
            bmm_into(&o32, &a32, &b32, alpha, beta)?;
            crate::native::copy::copy_into(out, &o32)
        }
        d if d.is_floating_point() || d == ScalarType::Bool => {
            Err(Error::UnsupportedDtype { op: "addmm_impl_cpu_".into(), dtype: d })
        }
        _ => {
            let int = |v: f64| v as i64;
            int_bmm(out, a, b, int(alpha), beta.map(int))
        }
    }
}

fn dtype_name(d: ScalarType) -> &'static str {
    d.cpp_name()
}

/// Every tensor on the first one's device (the products run on any device with a GEMM loop).
fn check_same_device(op: &str, ts: &[&Tensor]) -> Result<()> {
    crate::native::check_device(op, ts[0].device(), ts[1..].iter().copied())
}

/// `dst.copy_(src)` on any device (the CPU's copy directly, others through dispatch).
fn copy_any(dst: &Tensor, src: &Tensor) -> Result<()> {
    if dst.device().is_cpu() && src.device().is_cpu() {
        crate::native::copy::copy_into(dst, src)
    } else {
        ops::copy_(dst, src, false).map(|_| ())
    }
}

fn check_same_dtype(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() != b.dtype() {
        return Err(Error::invalid(
            op,
            format!(
                "expected m1 and m2 to have the same dtype, but got: {} != {}",
                dtype_name(a.dtype()),
                dtype_name(b.dtype())
            ),
        ));
    }
    Ok(())
}

fn check_matrix(op: &str, t: &Tensor, name: &str) -> Result<()> {
    if t.dim() != 2 {
        return Err(Error::shape(op, format!("{name} must be a matrix")));
    }
    Ok(())
}

fn check_mm_shapes(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.sizes()[1] != b.sizes()[0] {
        return Err(Error::shape(
            op,
            format!(
                "mm: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
                a.sizes()[0],
                a.sizes()[1],
                b.sizes()[0],
                b.sizes()[1]
            ),
        ));
    }
    Ok(())
}

/// A 2-d tensor as a 1-batch 3-d view.
fn as_batch(t: &Tensor) -> Tensor {
    let (s, st) = (t.sizes(), t.strides());
    let bs = s[0] * s[1];
    crate::native::shape::make_view(t, &[1, s[0], s[1]], &[bs.max(1), st[0], st[1]], t.storage_offset())
}

/// `mm(Tensor self, Tensor mat2) -> Tensor`
pub fn mm(self_: &Tensor, mat2: &Tensor) -> Result<Tensor> {
    check_same_device("mm", &[self_, mat2])?;
    check_matrix("mm", self_, "self")?;
    check_matrix("mm", mat2, "mat2")?;
    check_mm_shapes("mm", self_, mat2)?;
    check_same_dtype("mm", self_, mat2)?;
    let out = Tensor::empty_uninit(&[self_.sizes()[0], mat2.sizes()[1]], self_.dtype(), self_.device())?;
    bmm_into(&as_batch(&out), &as_batch(self_), &as_batch(mat2), 1.0, None)?;
    Ok(out)
}

/// `mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)`
pub fn mm_out(self_: &Tensor, mat2: &Tensor, out: &Tensor) -> Result<Tensor> {
    check_same_device("mm", &[self_, out])?;
    let r = mm(self_, mat2)?;
    write_out("mm", &r, out)
}

/// Resizes-or-checks `out` like PyTorch's `resize_output` for an exact shape and copies `r`
/// (an `out` on another device than `r` is refused: the result would be copied across, or,
/// to a meta `out`, dropped).
fn write_out(op: &str, r: &Tensor, out: &Tensor) -> Result<Tensor> {
    check_same_device(op, &[r, out])?;
    if out.sizes() != r.sizes() {
        return Err(Error::shape(
            op,
            format!("out tensor has shape {:?} but the result has shape {:?}", out.sizes(), r.sizes()),
        ));
    }
    if out.dtype() != r.dtype() {
        return Err(Error::invalid(
            op,
            format!(
                "Expected out tensor to have dtype {}, but got {} instead",
                dtype_name(r.dtype()),
                dtype_name(out.dtype())
            ),
        ));
    }
    copy_any(out, r)?;
    Ok(out.clone())
}

fn check_bmm(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    check_same_device(op, &[a, b])?;
    if a.dim() != 3 {
        return Err(Error::shape(op, "batch1 must be a 3D tensor"));
    }
    if b.dim() != 3 {
        return Err(Error::shape(op, "batch2 must be a 3D tensor"));
    }
    let (bs, k) = (a.sizes()[0], a.sizes()[2]);
    if b.sizes()[0] != bs || b.sizes()[1] != k {
        return Err(Error::shape(
            op,
            format!(
                "Expected size for first two dimensions of batch2 tensor to be: [{bs}, {k}] but got: [{}, {}].",
                b.sizes()[0],
                b.sizes()[1]
            ),
        ));
    }
    if a.dtype() != b.dtype() {
        return Err(Error::invalid(
            op,
            format!("expected scalar type {} but found {}", dtype_name(a.dtype()), dtype_name(b.dtype())),
        ));
    }
    Ok(())
}

/// `bmm(Tensor self, Tensor mat2) -> Tensor`
pub fn bmm(self_: &Tensor, mat2: &Tensor) -> Result<Tensor> {
    check_bmm("bmm", self_, mat2)?;
    let out =
        Tensor::empty_uninit(&[self_.sizes()[0], self_.sizes()[1], mat2.sizes()[2]], self_.dtype(), self_.device())?;
    bmm_into(&out, self_, mat2, 1.0, None)?;
    Ok(out)
}

/// `bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)`
pub fn bmm_out(self_: &Tensor, mat2: &Tensor, out: &Tensor) -> Result<Tensor> {
    check_same_device("bmm", &[self_, out])?;
    let r = bmm(self_, mat2)?;
    write_out("bmm", &r, out)
}

fn scalar_f64(s: &Scalar) -> f64 {
    s.to_f64()
}

fn check_int_scalars(op: &str, dtype: ScalarType, ss: &[&Scalar]) -> Result<()> {
    if !dtype.is_floating_point() && ss.iter().any(|s| matches!(s, Scalar::Float(_))) {
        return Err(Error::invalid(
            op,
            format!(
                "For integral input tensors, argument beta/alpha must not be a floating point number (dtype {dtype})"
            ),
        ));
    }
    Ok(())
}

/// `self` broadcast to `shape` and materialised into a fresh contiguous tensor of `dtype`.
fn broadcast_copy(op: &str, self_: &Tensor, shape: &[i64], dtype: ScalarType) -> Result<Tensor> {
    // A contiguous CPU tensor broadcast along leading dimensions only (a linear layer's bias
    // under its `[N, out]` product) is copied whole per row, without an expanded view and a
    // strided copy through the iterator: a GRU step's two `addmm`s spent 2% of it there.
    let lead = shape.len().wrapping_sub(self_.dim());
    if self_.device().is_cpu()
        && self_.layout() == c10::Layout::Strided
        && self_.dtype() == dtype
        && self_.is_contiguous()
        && self_.numel() > 0
        && lead <= shape.len()
        && shape[lead..] == *self_.sizes()
    {
        let out = Tensor::empty_uninit(shape, dtype, self_.device())?;
        let (row, total) = (self_.numel() as usize * dtype.size(), out.numel() as usize * dtype.size());
        // SAFETY: `self_` is a contiguous CPU tensor of `row` bytes from its data pointer; `out`
        // is a fresh contiguous CPU tensor of `total` bytes (a whole number of rows: its
        // trailing dimensions are `self_`'s sizes) that nothing else refers to, written through
        // `MaybeUninit` since its memory is uninitialised.
        let (src, dst) = unsafe {
            (
                std::slice::from_raw_parts(self_.data_ptr() as *const std::mem::MaybeUninit<u8>, row),
                std::slice::from_raw_parts_mut(out.data_ptr() as *mut std::mem::MaybeUninit<u8>, total),
            )
        };
        for chunk in dst.chunks_exact_mut(row) {
            chunk.copy_from_slice(src);
        }
        return Ok(out);
    }
    let e = crate::native::shape::expand(self_, shape, false).map_err(|_| {
        Error::shape(
            op,
            format!("The expanded size of the tensor ({:?}) must match the existing size {:?}", shape, self_.sizes()),
        )
    })?;
    let out = Tensor::empty_uninit(shape, dtype, self_.device())?;
    copy_any(&out, &e)?;
    Ok(out)
}

/// `addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor`
pub fn addmm(self_: &Tensor, mat1: &Tensor, mat2: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    check_same_device("addmm", &[self_, mat1, mat2])?;
    check_matrix("addmm", mat1, "mat1")?;
    check_matrix("addmm", mat2, "mat2")?;
    check_mm_shapes("addmm", mat1, mat2)?;
    check_same_dtype("addmm", mat1, mat2)?;
    if self_.dtype() != mat1.dtype() {
        return Err(Error::invalid(
            "addmm",
            format!(
                "self and mat2 must have the same dtype, but got {} and {}",
                dtype_name(self_.dtype()),
                dtype_name(mat2.dtype())
            ),
        ));
    }
    check_int_scalars("addmm", mat1.dtype(), &[&beta, &alpha])?;
    let shape = [mat1.sizes()[0], mat2.sizes()[1]];
    let b = scalar_f64(&beta);
    let out = if b == 0.0 {
        Tensor::empty_uninit(&shape, mat1.dtype(), mat1.device())?
    } else {
        broadcast_copy("addmm", self_, &shape, mat1.dtype())?
    };
    bmm_into(&as_batch(&out), &as_batch(mat1), &as_batch(mat2), scalar_f64(&alpha), Some(b))?;
    Ok(out)
}

/// `baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor`
pub fn baddbmm(self_: &Tensor, batch1: &Tensor, batch2: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    check_bmm("baddbmm", batch1, batch2)?;
    check_same_device("baddbmm", &[batch1, self_])?;
    if self_.dtype() != batch1.dtype() {
        return Err(Error::invalid(
            "baddbmm",
            format!(
                "Expected self and batch1 to have the same dtype, but got: {} != {}",
                dtype_name(self_.dtype()),
                dtype_name(batch1.dtype())
            ),
        ));
    }
    check_int_scalars("baddbmm", batch1.dtype(), &[&beta, &alpha])?;
    let shape = [batch1.sizes()[0], batch1.sizes()[1], batch2.sizes()[2]];
    let b = scalar_f64(&beta);
    let out = if b == 0.0 {
        Tensor::empty_uninit(&shape, batch1.dtype(), batch1.device())?
    } else {
        broadcast_copy("baddbmm", self_, &shape, batch1.dtype())?
    };
    bmm_into(&out, batch1, batch2, scalar_f64(&alpha), Some(b))?;
    Ok(out)
}

/// `addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor`:
/// `beta * self + alpha * sum_i batch1[i] @ batch2[i]`.
pub fn addbmm(self_: &Tensor, batch1: &Tensor, batch2: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    check_bmm("addbmm", batch1, batch2)?;
    check_same_device("addbmm", &[batch1, self_])?;
    if self_.dtype() != batch1.dtype() {
        return Err(Error::invalid(
            "addbmm",
            format!(
                "Expected self and batch1 to have the same dtype, but got: {} != {}",
                dtype_name(self_.dtype()),
                dtype_name(batch1.dtype())
            ),
        ));
    }
    check_int_scalars("addbmm", batch1.dtype(), &[&beta, &alpha])?;
    // sum_i A_i @ B_i is one product of [m, B*k] by [B*k, n]: fold the batch into k.
    let (bs, m, k) = (batch1.sizes()[0], batch1.sizes()[1], batch1.sizes()[2]);
    let n = batch2.sizes()[2];
    let a = ops::reshape(&ops::permute(batch1, &[1, 0, 2])?, &[m, bs * k])?;
    let b = ops::reshape(batch2, &[bs * k, n])?;
    let bt = scalar_f64(&beta);
    let out = if bt == 0.0 {
        Tensor::empty_uninit(&[m, n], batch1.dtype(), batch1.device())?
    } else {
        broadcast_copy("addbmm", self_, &[m, n], batch1.dtype())?
    };
    bmm_into(&as_batch(&out), &as_batch(&a), &as_batch(&b), scalar_f64(&alpha), Some(bt))?;
    Ok(out)
}

/// `mv(Tensor self, Tensor vec) -> Tensor`
pub fn mv(self_: &Tensor, vec: &Tensor) -> Result<Tensor> {
    // Any device with a GEMM loop (cuBLAS's on CUDA).
    check_same_device("mv", &[self_, vec])?;
    if self_.dim() != 2 || vec.dim() != 1 {
        return Err(Error::shape(
            "mv",
            format!("vector + matrix @ vector expected, got {}, {}, {}", 1, self_.dim(), vec.dim()),
        ));
    }
    if self_.sizes()[1] != vec.sizes()[0] {
        return Err(Error::shape(
            "mv",
            format!(
                "size mismatch, got input ({}), mat ({}x{}), vec ({})",
                self_.sizes()[0],
                self_.sizes()[0],
                self_.sizes()[1],
                vec.sizes()[0]
            ),
        ));
    }
    check_same_dtype("mv", self_, vec)?;
    let m = self_.sizes()[0];
    let out = Tensor::empty_uninit(&[m], self_.dtype(), self_.device())?;
    let out3 = crate::native::shape::make_view(&out, &[1, m, 1], &[m.max(1), 1, 1], 0);
    let v3 =
        crate::native::shape::make_view(vec, &[1, vec.sizes()[0], 1], &[0, vec.strides()[0], 1], vec.storage_offset());
    bmm_into(&out3, &as_batch(self_), &v3, 1.0, None)?;
    Ok(out)
}

fn check_dot(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    check_same_device(op, &[a, b])?;
    if a.dim() != 1 || b.dim() != 1 {
        return Err(Error::shape(op, format!("1D tensors expected, but got {}D and {}D tensors", a.dim(), b.dim())));
    }
    if a.dtype() != b.dtype() {
        return Err(Error::invalid(
            op,
            format!(
                "{op} : expected both vectors to have same dtype, but found {} and {}",
                dtype_name(a.dtype()),
                dtype_name(b.dtype())
            ),
        ));
    }
    if a.numel() != b.numel() {
        return Err(Error::shape(
            op,
            format!(
                "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
                a.numel(),
                b.numel(),
                a.numel(),
                b.numel()
            ),
        ));
    }
    Ok(())
}

/// `dot(Tensor self, Tensor tensor) -> Tensor`
pub fn dot(self_: &Tensor, tensor: &Tensor) -> Result<Tensor> {
    check_dot("dot", self_, tensor)?;
    let n = self_.sizes()[0];
    let out = Tensor::empty_uninit(&[], self_.dtype(), self_.device())?;
    let o3 = crate::native::shape::make_view(&out, &[1, 1, 1], &[1, 1, 1], 0);
    let a3 = crate::native::shape::make_view(self_, &[1, 1, n], &[0, 0, self_.strides()[0]], self_.storage_offset());
    let b3 = crate::native::shape::make_view(tensor, &[1, n, 1], &[0, tensor.strides()[0], 1], tensor.storage_offset());
    bmm_into(&o3, &a3, &b3, 1.0, None)?;
    Ok(out)
}

/// `vdot(Tensor self, Tensor other) -> Tensor` (real dtypes: the same as `dot`).
pub fn vdot(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    check_dot("vdot", self_, other)?;
    dot(self_, other)
}

/// `outer(Tensor self, Tensor vec2) -> Tensor`
pub fn outer(self_: &Tensor, vec2: &Tensor) -> Result<Tensor> {
    if self_.dim() != 1 || vec2.dim() != 1 {
        return Err(Error::shape(
            "outer",
            format!(
                "outer: Expected 1-D argument self, but got {}-D",
                if self_.dim() != 1 { self_.dim() } else { vec2.dim() }
            ),
        ));
    }
    ops::mul(&ops::reshape(self_, &[-1, 1])?, vec2)
}

/// `matmul(Tensor self, Tensor other) -> Tensor`: PyTorch's rank rules — dot, mv, mm, folding
/// of a batched left operand into one `mm`, and batched products with broadcast batch dims.
pub fn matmul(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let (d1, d2) = (self_.dim(), other.dim());
    if d1 == 0 || d2 == 0 {
        return Err(Error::shape(
            "matmul",
            format!("both arguments to matmul need to be at least 1D, but they are {d1}D and {d2}D"),
        ));
    }
    match (d1, d2) {
        (1, 1) => ops::dot(self_, other),
        (2, 1) => ops::mv(self_, other),
        (1, 2) => ops::squeeze_dim(&ops::mm(&ops::unsqueeze(self_, 0)?, other)?, 0),
        (2, 2) => ops::mm(self_, other),
        (_, 1 | 2) if d1 >= 3 => {
            // Fold the batch of `self` into the rows of one mm.
            let s = self_.sizes();
            let m = s[d1 - 1];
            let rows = c10::size::numel("matmul", &s[..d1 - 1])?;
            let folded = ops::reshape(self_, &[rows, m])?;
            let mut out_shape: Vec<i64> = s[..d1 - 1].to_vec();
            let r = if d2 == 1 {
                ops::mv(&folded, other)?
            } else {
                out_shape.push(other.sizes()[1]);
                ops::mm(&folded, other)?
            };
            ops::view(&r, &out_shape)
        }
        _ => {
            // Batched: broadcast the batch dimensions, bmm, and view back.
            let a = if d1 == 1 { ops::unsqueeze(self_, 0)? } else { self_.clone() };
            let b = if d2 == 1 { ops::unsqueeze(other, 1)? } else { other.clone() };
            let (sa, sb) = (a.sizes(), b.sizes());
            let (n, m) = (sa[sa.len() - 2], sa[sa.len() - 1]);
            let (m2, p) = (sb[sb.len() - 2], sb[sb.len() - 1]);
            if m != m2 {
                return Err(Error::shape(
                    "matmul",
                    format!(
                        "Expected size for first two dimensions of batch2 tensor to be: [{}, {m}] but got: [{}, {m2}].",
                        broadcast_batch(&sa[..sa.len() - 2], &sb[..sb.len() - 2]).map_or(0, |v| v.iter().product()),
                        broadcast_batch(&sa[..sa.len() - 2], &sb[..sb.len() - 2])
                            .map_or(0, |v| c10::size::sub_numel(&v) as i64),
                    ),
                ));
            }
            let batch = broadcast_batch(&sa[..sa.len() - 2], &sb[..sb.len() - 2])?;
            let bsz = c10::size::numel("matmul", &batch)?;
            let mut ea: Vec<i64> = batch.clone();
            ea.extend([n, m]);
            let mut eb: Vec<i64> = batch.clone();
            eb.extend([m, p]);
            let a3 = ops::reshape(&ops::expand(&a, &ea, false)?, &[bsz, n, m])?;
            let b3 = ops::reshape(&ops::expand(&b, &eb, false)?, &[bsz, m, p])?;
            let r = ops::bmm(&a3, &b3)?;
            let mut out_shape = batch;
            if d1 > 1 {
                out_shape.push(n);
            }
            if d2 > 1 {
                out_shape.push(p);
            }
            ops::view(&r, &out_shape)
        }
    }
}

/// The broadcast of two batch shapes.
fn broadcast_batch(a: &[i64], b: &[i64]) -> Result<Vec<i64>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for (i, o) in out.iter_mut().enumerate() {
        let x = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let y = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        *o = if x == y || y == 1 {
            x
        } else if x == 1 {
            y
        } else {
            return Err(Error::Broadcast { op: "matmul".into(), a: x, b: y, dim: i });
        };
    }
    Ok(out)
}

/// `linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor`
pub fn linear(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    let wt = ops::t(weight)?;
    if input.dim() == 2 {
        if let Some(b) = bias {
            return ops::addmm(b, input, &wt, Scalar::Int(1), Scalar::Int(1));
        }
    }
    let out = ops::matmul(input, &wt)?;
    match bias {
        Some(b) => ops::add(&out, b, Scalar::Int(1)),
        None => Ok(out),
    }
}

/// `tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) -> Tensor`
pub fn tensordot(self_: &Tensor, other: &Tensor, dims_self: &[i64], dims_other: &[i64]) -> Result<Tensor> {
    if dims_self.len() != dims_other.len() {
        return Err(Error::invalid(
            "tensordot",
            format!(
                "both dimension lists should have same length, but got {} and {}",
                dims_self.len(),
                dims_other.len()
            ),
        ));
    }
    let (na, nb) = (self_.dim(), other.dim());
    // PyTorch reads `sym_size(dim)`, which wraps without treating a 0-dim tensor as 1-dim.
    if let (Some(&x), Some(&y)) = (dims_self.first(), dims_other.first()) {
        if na == 0 || nb == 0 {
            let d = if na == 0 { x } else { y };
            return Err(Error::invalid(
                "tensordot",
                format!("Dimension specified as {d} but tensor has no dimensions"),
            ));
        }
    }
    let mut ca = vec![false; na];
    let mut cb = vec![false; nb];
    let mut ka = Vec::new();
    let mut kb = Vec::new();
    // A contracted dimension of size 1 broadcasts against the other side's: that side is summed
    // over it first (keeping it as size 1), as PyTorch does.
    let (mut a, mut b) = (self_.clone(), other.clone());
    for (&x, &y) in dims_self.iter().zip(dims_other) {
        let (i, j) = (crate::wrap_dim("tensordot", x, na)?, crate::wrap_dim("tensordot", y, nb)?);
        let (si, sj) = (a.sizes()[i], b.sizes()[j]);
        if si != sj && sj == 1 {
            a = ops::sum_dim_intlist(&a, Some(&[i as i64]), true, Some(a.dtype()))?;
        } else if si != sj && si == 1 {
            b = ops::sum_dim_intlist(&b, Some(&[j as i64]), true, Some(b.dtype()))?;
        } else if si != sj {
            return Err(Error::shape(
                "tensordot",
                format!("contracted dimensions need to match, but first has size {si} in dim {i} and second has size {sj} in dim {j}"),
            ));
        }
        if ca[i] || cb[j] {
            return Err(Error::invalid("tensordot", format!("dim {i} appears multiple times in the list of dims")));
        }
        ca[i] = true;
        cb[j] = true;
        ka.push(i as i64);
        kb.push(j as i64);
    }
    // Checked: the sizes of an empty operand can multiply past i64 ([2^40, 2^40, 0]).
    let sizes_of = |t: &Tensor, ds: &[i64]| ds.iter().map(|&d| t.sizes()[d as usize]).collect::<Vec<i64>>();
    let csize = c10::size::numel("tensordot", &sizes_of(&a, &ka))?;
    let free_a: Vec<i64> = (0..na as i64).filter(|&d| !ca[d as usize]).collect();
    let free_b: Vec<i64> = (0..nb as i64).filter(|&d| !cb[d as usize]).collect();
    let rows = c10::size::numel("tensordot", &sizes_of(&a, &free_a))?;
    let cols = c10::size::numel("tensordot", &sizes_of(&b, &free_b))?;
    let pa: Vec<i64> = free_a.iter().chain(&ka).copied().collect();
    let pb: Vec<i64> = kb.iter().chain(&free_b).copied().collect();
    let a2 = ops::reshape(&ops::permute(&a, &pa)?, &[rows, csize])?;
    let b2 = ops::reshape(&ops::permute(&b, &pb)?, &[csize, cols])?;
    let r = ops::mm(&a2, &b2)?;
    let shape: Vec<i64> =
        free_a.iter().map(|&d| a.sizes()[d as usize]).chain(free_b.iter().map(|&d| b.sizes()[d as usize])).collect();
    ops::view(&r, &shape)
}

// ---- einsum ---------------------------------------------------------------------------------

/// Label of an einsum subscript; ellipsis dimensions get labels 52.. (one per broadcast dim).
type Label = usize;
const ELLIPSIS_BASE: Label = 52;

fn letter(c: char) -> Option<Label> {
    match c {
        'a'..='z' => Some(c as usize - 'a' as usize + 26),
        'A'..='Z' => Some(c as usize - 'A' as usize),
        _ => None,
    }
}

/// One operand's subscripts: labels with an ellipsis position.
struct Subscripts {
    labels: Vec<Label>,
    ellipsis: Option<usize>,
}

fn parse_subscripts(s: &str) -> Result<Subscripts> {
    let mut labels = Vec::new();
    let mut ellipsis = None;
    let mut rest = s.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("...") {
            if ellipsis.is_some() {
                return Err(Error::invalid(
                    "einsum",
                    "einsum(): found '.' for operand that is not part of any ellipsis",
                ));
            }
            ellipsis = Some(labels.len());
            rest = r;
            continue;
        }
        let c = rest.chars().next().unwrap_or(' ');
        rest = &rest[c.len_utf8()..];
        if c == ' ' {
            continue;
        }
        match letter(c) {
            Some(l) => labels.push(l),
            None => {
                return Err(Error::invalid(
                    "einsum",
                    format!("einsum(): invalid subscript given at index {} in the equation string, subscripts must be in [a-zA-Z]", s.find(c).unwrap_or(0)),
                ))
            }
        }
    }
    Ok(Subscripts { labels, ellipsis })
}

/// `einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor`
///
/// Each operand is brought to one label per dimension (repeated labels take the diagonal, the
/// ellipsis expands to numbered labels, right-aligned across operands), labels used nowhere
/// else are summed out, and operands are contracted left to right with `bmm` (batch labels,
/// contracted labels, and each side's free labels), then permuted into the output order.
pub fn einsum(equation: &str, tensors: &[Tensor], _path: Option<&[i64]>) -> Result<Tensor> {
    if tensors.is_empty() {
        return Err(Error::invalid("einsum", "einsum(): must provide at least one operand"));
    }
    let (lhs, rhs) = match equation.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (equation, None),
    };
    let parts: Vec<&str> = lhs.split(',').collect();
    if parts.len() != tensors.len() {
        return Err(Error::invalid(
            "einsum",
            format!(
                "einsum(): {} operands were provided than specified in the equation",
                if parts.len() < tensors.len() { "more" } else { "fewer" }
            ),
        ));
    }
    let subs: Vec<Subscripts> = parts.iter().map(|p| parse_subscripts(p)).collect::<Result<_>>()?;
    // Ellipsis dims per operand and overall.
    let mut ell_dims = 0usize;
    for (i, (s, t)) in subs.iter().zip(tensors).enumerate() {
        let n = s.labels.len();
        match s.ellipsis {
            None if n != t.dim() => {
                return Err(Error::invalid(
                    "einsum",
                    format!("einsum(): the number of subscripts in the equation ({n}) does not match the number of dimensions ({}) for operand {i} and no ellipsis was given", t.dim()),
                ))
            }
            Some(_) if n > t.dim() => {
                return Err(Error::invalid(
                    "einsum",
                    format!("einsum(): the number of subscripts in the equation ({n}) is more than the number of dimensions ({}) for operand {i}", t.dim()),
                ))
            }
            Some(_) => ell_dims = ell_dims.max(t.dim() - n),
            None => {}
        }
    }
    // Expand each operand's labels.
    let mut ops_labels: Vec<Vec<Label>> = Vec::new();
    for (s, t) in subs.iter().zip(tensors) {
        let mut l = Vec::with_capacity(t.dim());
        for (i, &x) in s.labels.iter().enumerate() {
            if s.ellipsis == Some(i) {
                let k = t.dim() - s.labels.len();
                l.extend((ell_dims - k..ell_dims).map(|e| ELLIPSIS_BASE + e));
            }
            l.push(x);
        }
        if s.ellipsis == Some(s.labels.len()) {
            let k = t.dim() - s.labels.len();
            l.extend((ell_dims - k..ell_dims).map(|e| ELLIPSIS_BASE + e));
        }
        ops_labels.push(l);
    }
    // Output labels.
    let mut count = [0usize; ELLIPSIS_BASE + 64];
    for l in &ops_labels {
        for &x in l {
            count[x] += 1;
        }
    }
    let out_labels: Vec<Label> = match rhs {
        Some(r) => {
            let s = parse_subscripts(r)?;
            let mut out = Vec::new();
            for (i, &x) in s.labels.iter().enumerate() {
                if s.ellipsis == Some(i) {
                    out.extend((0..ell_dims).map(|e| ELLIPSIS_BASE + e));
                }
                if count[x] == 0 {
                    return Err(Error::invalid(
                        "einsum",
                        format!(
                            "einsum(): output subscript {} does not appear in the equation for any input operand",
                            label_char(x)
                        ),
                    ));
                }
                if out.contains(&x) {
                    return Err(Error::invalid(
                        "einsum",
                        format!("einsum(): output subscript {} appears more than once in the output", label_char(x)),
                    ));
                }
                out.push(x);
            }
            if s.ellipsis == Some(s.labels.len()) {
                out.extend((0..ell_dims).map(|e| ELLIPSIS_BASE + e));
            }
            // Ellipsis dims missing from an explicit output are summed out below.
            out
        }
        None => {
            let mut out: Vec<Label> = (0..ell_dims).map(|e| ELLIPSIS_BASE + e).collect();
            // Implicit output: labels appearing exactly once, in alphabetical order.
            let mut once: Vec<Label> = (0..ELLIPSIS_BASE).filter(|&x| count[x] == 1).collect();
            once.sort_by_key(|&x| label_char(x));
            out.extend(once);
            out
        }
    };
    // Sizes per label (broadcast 1s).
    let mut size = [1i64; ELLIPSIS_BASE + 64];
    let mut seen = [false; ELLIPSIS_BASE + 64];
    for (l, t) in ops_labels.iter().zip(tensors) {
        for (&x, &s) in l.iter().zip(t.sizes()) {
            if !seen[x] || size[x] == 1 {
                size[x] = s;
                seen[x] = true;
            } else if s != size[x] && s != 1 {
                return Err(Error::invalid(
                    "einsum",
                    format!("einsum(): operands do not broadcast with remapped shapes (original->remapped): subscript {} has size {s} and {}", label_char(x), size[x]),
                ));
            }
        }
    }
    // Reduce each operand to distinct labels (diagonals for repeats).
    let mut cur: Vec<(Tensor, Vec<Label>)> = Vec::new();
    for (l, t) in ops_labels.iter().zip(tensors) {
        let mut t = t.clone();
        let mut l = l.clone();
        loop {
            let dup = (0..l.len()).find_map(|i| (i + 1..l.len()).find(|&j| l[j] == l[i]).map(|j| (i, j)));
            let Some((i, j)) = dup else { break };
            if t.sizes()[i] != t.sizes()[j] {
                return Err(Error::invalid(
                    "einsum",
                    format!(
                        "einsum(): subscript {} is repeated for operand but the sizes don't match, {} != {}",
                        label_char(l[i]),
                        t.sizes()[i],
                        t.sizes()[j]
                    ),
                ));
            }
            // diagonal moves the pair to the end.
            t = ops::diagonal(&t, 0, i as i64, j as i64)?;
            let x = l[i];
            l.remove(j);
            l.remove(i);
            l.push(x);
        }
        cur.push((t, l));
    }
    // Contract left to right.
    let needed_later = |k: usize, cur: &[(Tensor, Vec<Label>)], x: Label| -> bool {
        out_labels.contains(&x) || cur[k..].iter().any(|(_, l)| l.contains(&x))
    };
    let (mut acc, mut acc_l) = cur[0].clone();
    // Sum labels of the first operand that appear nowhere else.
    {
        let rest = &cur[1..];
        let drop: Vec<i64> = acc_l
            .iter()
            .enumerate()
            .filter(|(_, &x)| !out_labels.contains(&x) && !rest.iter().any(|(_, l)| l.contains(&x)))
            .map(|(i, _)| i as i64)
            .collect();
        if !drop.is_empty() {
            acc = ops::sum_dim_intlist(&acc, Some(&drop), false, None)?;
            acc_l = acc_l.iter().enumerate().filter(|(i, _)| !drop.contains(&(*i as i64))).map(|(_, &x)| x).collect();
        }
    }
    for k in 1..cur.len() {
        let (mut b, mut b_l) = cur[k].clone();
        // Sum labels only in b that are not needed anywhere else.
        let drop: Vec<i64> = b_l
            .iter()
            .enumerate()
            .filter(|(_, &x)| !acc_l.contains(&x) && !needed_later(k + 1, &cur, x))
            .map(|(i, _)| i as i64)
            .collect();
        if !drop.is_empty() {
            b = ops::sum_dim_intlist(&b, Some(&drop), false, None)?;
            b_l = b_l.iter().enumerate().filter(|(i, _)| !drop.contains(&(*i as i64))).map(|(_, &x)| x).collect();
        }
        let batch: Vec<Label> =
            acc_l.iter().copied().filter(|x| b_l.contains(x) && needed_later(k + 1, &cur, *x)).collect();
        let contr: Vec<Label> =
            acc_l.iter().copied().filter(|x| b_l.contains(x) && !needed_later(k + 1, &cur, *x)).collect();
        let a_free: Vec<Label> = acc_l.iter().copied().filter(|x| !b_l.contains(x)).collect();
        let b_free: Vec<Label> = b_l.iter().copied().filter(|x| !acc_l.contains(x)).collect();
        let pos = |l: &[Label], x: Label| l.iter().position(|&y| y == x).unwrap_or(0) as i64;
        let sz = |ls: &[Label]| ls.iter().map(|&x| size[x]).product::<i64>();
        let full = |t: &Tensor, l: &[Label]| -> Result<Tensor> {
            let shape: Vec<i64> = l.iter().map(|&x| size[x]).collect();
            ops::expand(t, &shape, false)
        };
        let pa: Vec<i64> = batch.iter().chain(&a_free).chain(&contr).map(|&x| pos(&acc_l, x)).collect();
        let pb: Vec<i64> = batch.iter().chain(&contr).chain(&b_free).map(|&x| pos(&b_l, x)).collect();
        let a_p = ops::permute(&full(&acc, &acc_l)?, &pa)?;
        let b_p = ops::permute(&full(&b, &b_l)?, &pb)?;
        let (nb, na, nc, nf) = (sz(&batch), sz(&a_free), sz(&contr), sz(&b_free));
        let a3 = ops::reshape(&a_p, &[nb, na, nc])?;
        let b3 = ops::reshape(&b_p, &[nb, nc, nf])?;
        let r = ops::bmm(&a3, &b3)?;
        let new_l: Vec<Label> = batch.iter().chain(&a_free).chain(&b_free).copied().collect();
        let shape: Vec<i64> = new_l.iter().map(|&x| size[x]).collect();
        acc = ops::reshape(&r, &shape)?;
        acc_l = new_l;
    }
    // Labels of the result not in the output (single operand case) are summed.
    let drop: Vec<i64> =
        acc_l.iter().enumerate().filter(|(_, x)| !out_labels.contains(x)).map(|(i, _)| i as i64).collect();
    if !drop.is_empty() {
        acc = ops::sum_dim_intlist(&acc, Some(&drop), false, None)?;
        acc_l.retain(|x| out_labels.contains(x));
    }
    let full_shape: Vec<i64> = acc_l.iter().map(|&x| size[x]).collect();
    let acc = ops::expand(&acc, &full_shape, false)?;
    let perm: Vec<i64> = out_labels.iter().map(|x| acc_l.iter().position(|y| y == x).unwrap_or(0) as i64).collect();
    ops::permute(&acc, &perm)
}

fn label_char(x: Label) -> char {
    if x < 26 {
        (b'A' + x as u8) as char
    } else if x < 52 {
        (b'a' + (x - 26) as u8) as char
    } else {
        '.'
    }
}
