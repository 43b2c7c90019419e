//! Our own single-precision matrix product for x86-64 CPUs with AVX-512F, or with AVX2 and FMA.
//!
//! Note [Packed f32 GEMM]: `c = alpha * a @ b (+ beta * c)` with a row-major output, in the
//! classic blocked shape (Goto/BLIS), with one micro-kernel per instruction set ([`Micro`]):
//!
//! - the AVX-512 kernel keeps a 12 x 32 tile of `c` in 24 zmm registers; each step of `k` loads
//!   32 values of `b` (two vectors), broadcasts 12 values of `a` and issues 24 FMAs. The AVX2
//!   kernel does the same with a 6 x 16 tile in 12 of the 16 ymm registers (12 FMAs a step);
//! - `a` is packed in panels of MR rows (`[k][MR]`: 18 KiB for the AVX-512 kernel's 12 x 384,
//!   9 KiB for the AVX2 kernel's 6 x 384), which stay in L1 while the kernel walks across `b`;
//! - `b` is packed in blocks of KC x NC (AVX-512: 384 x 480, 720 KiB, within a Zen 4 core's
//!   1 MiB L2; AVX2: 384 x 256, 384 KiB, within a Zen 3 core's 512 KiB) made of panels of NR
//!   columns (`[k][NR]`) that the kernel streams from L2, prefetching eight steps ahead;
//! - loops, outermost first: rows of `a` in blocks of MC, `k` in blocks of KC (`a` packed once
//!   per block), columns in blocks of NC (`b` packed), panels of `a`, panels of `b`. The first
//!   `k` block writes `c` (or scales its old values by `beta`), the others add.
//!
//! A product with few rows reads a row-major `b` in place rather than packing it
//! ([`DIRECT_B_MAX_ROWS`]). Packing reads any strides, with vector paths for the common layouts
//! (row-major `a` through 8 x 8 and 4 x 4 transposes, column-major `a` and row-major `b` by
//! straight copies, column-major `b` by 8 x 8 transposes), so transposed operands cost no
//! separate copy. Partial tiles are padded with zeros in the packed panels and written through
//! masks (AVX-512) or a scratch tile (AVX2).
//!
//! Measured on a Zen 4 machine in a standalone loop (one thread, 1024² and 2048² row-major
//! products): about 115–120 GFLOP/s, against 95–115 for the `gemm` crate in interleaved runs
//! and 125–130 for PyTorch's MKL; the AVX-512 kernel alone, with its operands in cache, reaches
//! 125–130 (that VM's FMA peak). The AVX2 kernel on a Zen 3 machine: see BENCHMARKS.md.

use std::arch::x86_64::*;
use std::cell::RefCell;

use crate::native::linalg::MatRef;

/// Products with at most this many rows read a row-major `b` in place instead of packing it:
/// packing costs a copy of every element of `b` per block of `a` rows, which only pays off
/// when many panels of `a` reuse it (a convolution's `[64, 576] x [576, 3136]` spent a fifth
/// of its time packing).
const DIRECT_B_MAX_ROWS: usize = 192;
/// How many steps of `k` ahead the kernels prefetch `b`.
const PREFETCH_STEPS: isize = 8;
/// The most panels of `b` in one packed block (NC / NR of every [`Micro`]).
const MAX_PANELS_B: usize = 24;

/// The operands are the strided matrices of `linalg` (element (i, j) at `ptr + i * rs + j * cs`).
#[doc(hidden)]
pub type Strided = MatRef<f32>;

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

/// The instruction sets with a micro-kernel (Note [Packed f32 GEMM]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub enum Isa {
    /// 12 x 32 tiles in zmm registers.
    Avx512,
    /// 6 x 16 tiles in ymm registers, with FMA.
    Avx2,
}

/// Every micro-kernel, best first.
#[doc(hidden)]
pub const ISAS: [Isa; 2] = [Isa::Avx512, Isa::Avx2];

/// The best micro-kernel this CPU runs, if any.
fn isa() -> Option<Isa> {
    ISAS.into_iter().find(|&i| runs(i))
}

/// The micro-kernel for a product with `m` rows on this CPU, if ours beats the `gemm` crate
/// there: the AVX-512 kernel always; the AVX2 kernel above [`DIRECT_B_MAX_ROWS`] rows, or when
/// `b` is not row-major.
///
/// With few rows and a row-major `b`, the AVX2 kernel's 16-column steps through `b` read in
/// place each touch a new page, and packing `b` instead costs too much per use; measured on a
/// Zen 3 machine (best of 200, one thread), a convolution's `[64, 576] x [576, 3136]` ran at
/// 44–58 GFLOP/s either way against 52–76 for the `gemm` crate, and an MLP's `[128, 512] x
/// [512, 784]` at 76–86 against 85–92. Large products run at 86–91 against 84–86 (1024²).
///
/// A `b` that is not row-major (a linear layer's `x @ W.t()`) has to be copied or packed by
/// either kernel, and ours packs it into blocks that stay in L2, where Note [GEMM operand
/// layout] copied the whole of it row-major for the `gemm` crate: on an AMD EPYC (2 vCPUs,
/// `x @ W.t()` with `W` of `[512, 784]`, best of 5 rounds from Python), 128 rows ran at 76–85
/// GFLOP/s against 60–77 on one thread and at 115 against 94 on two, 32 rows at 61 against 57
/// (85 against 74 on two); with `k` of 256 ours was ahead at every row count from 8 to 192
/// (on one thread 42 against 22 GFLOP/s at 8 rows, 81 against 60 at 128).
pub(crate) fn isa_for(m: usize, b_row_major: bool) -> Option<Isa> {
    isa().filter(|&i| i == Isa::Avx512 || m > DIRECT_B_MAX_ROWS || !b_row_major)
}

/// Whether this CPU runs `isa`'s micro-kernel.
#[doc(hidden)]
pub fn runs(isa: Isa) -> bool {
    match isa {
        Isa::Avx512 => std::is_x86_feature_detected!("avx512f"),
        Isa::Avx2 => std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma"),
    }
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

/// `Micro::PACK_A` and `Micro::PACK_B`.
type PackFn = unsafe fn(usize, usize, Strided, *mut f32);
/// `Micro::KERNEL`.
type KernelFn = unsafe fn(usize, *const f32, *const f32, isize, *mut f32, isize, usize, usize, f32, Option<f32>);

/// A micro-kernel, its packing and its blocking (Note [Packed f32 GEMM]).
///
/// # Safety
/// Implementations' functions may only be called on CPUs that [`runs`] their [`Isa`].
unsafe trait Micro {
    /// Rows of a micro-tile (broadcast from packed `a`).
    const MR: usize;
    /// Columns of a micro-tile (vectors of packed `b`).
    const NR: usize;
    /// Depth of a packed block.
    const KC: usize;
    /// Columns of a packed block of `b` (a multiple of NR, at most [`MAX_PANELS_B`] panels).
    const NC: usize;
    /// Rows of `a` packed at once (a multiple of MR).
    const MC: usize;

    /// Packs `rows` (at most MR) rows by `kc` columns of `a` as `dst[p * MR + r]`, zero rows
    /// past `rows`: `(rows, kc, a, dst)`.
    ///
    /// Safety: the elements must exist, `dst` must hold `MR * kc` floats, and the CPU must run
    /// the ISA.
    const PACK_A: PackFn;

    /// Packs `kc` rows by `cols` (at most NR) columns of `b` as `dst[p * NR + j]`, zero columns
    /// past `cols`: `(kc, cols, b, dst)`.
    ///
    /// Safety: as `PACK_A`, with `dst` holding `NR * kc` floats.
    const PACK_B: PackFn;

    /// The micro-kernel, `(kc, a, b, b_step, c, ldc, rows, cols, alpha, beta)`: `kc` steps over
    /// the packed panel `a` (`[kc][MR]`) and the panel `b` (`kc` runs of NR floats, `b_step`
    /// apart: packed, or rows of a row-major `b`), then `c[r][j] = alpha * acc + beta * c[r][j]`
    /// (or `alpha * acc` when `beta` is None) for `r < rows`, `j < cols`.
    ///
    /// Safety: the panels must hold `kc` steps (`b`'s `b_step` apart); `c` must address `rows`
    /// rows of `cols` floats, rows `ldc` apart; the CPU must run the ISA.
    const KERNEL: KernelFn;
}

/// `c = alpha * a @ b + beta * c` (`beta == None` overwrites `c`) for an `m x k` by `k x n`
/// product into the row-major `c` with row stride `ldc`, with `isa`'s micro-kernel: on the
/// calling thread (Note [Packed f32 GEMM]), or on the current rayon pool when `parallel`
/// (Note [Parallel packed GEMM]).
///
/// # Safety
/// The CPU must run `isa` (as [`isa`] reports); `a`, `b` and `c` must address valid elements
/// for every index in range; `c` must not overlap `a` or `b`, and no one else may write it
/// meanwhile.
#[allow(clippy::too_many_arguments)]
#[doc(hidden)]
pub unsafe fn sgemm(
    isa: Isa,
    parallel: bool,
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
    debug_assert!(runs(isa));
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    let p = Product { m, n, k, alpha, a, b, beta, c, ldc };
    // SAFETY: forwarded contract.
    unsafe {
        match (isa, parallel) {
            (Isa::Avx512, false) => blocked::<Avx512>(p),
            (Isa::Avx2, false) => blocked::<Avx2>(p),
            (Isa::Avx512, true) => blocked_shared::<Avx512>(p),
            (Isa::Avx2, true) => blocked_shared::<Avx2>(p),
        }
    }
}

/// The arguments of one (non-empty) [`sgemm`] call.
#[derive(Clone, Copy)]
struct Product {
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    a: Strided,
    b: Strided,
    beta: Option<f32>,
    c: *mut f32,
    ldc: isize,
}

// SAFETY: the parallel driver's tasks read `a` and `b` and write disjoint columns of `c`
// (Note [Parallel packed GEMM]).
unsafe impl Send for Product {}
// SAFETY: as above.
unsafe impl Sync for Product {}

impl Product {
    /// A by-value copy: a closure that calls it captures the whole (Sync) struct rather than its
    /// raw-pointer fields.
    fn get(&self) -> Product {
        *self
    }

    /// Packs the panel of `a` starting at row `i0` (MR rows, fewer at the bottom edge) and depth
    /// `pc`, `kc` deep, into `dst` with `K::PACK_A`.
    ///
    /// # Safety
    /// `i0 < m`, `pc + kc <= k`; `dst` must hold `MR * kc` floats; the CPU must run `K`'s ISA.
    unsafe fn pack_a_panel<K: Micro>(&self, i0: usize, pc: usize, kc: usize, dst: *mut f32) {
        // SAFETY: (i0, pc) is an element of `a` and the rows and depth stay inside it, per the
        // contract.
        unsafe { (K::PACK_A)(K::MR.min(self.m - i0), kc, self.a.at(i0, pc), dst) }
    }
}

/// The loops of Note [Packed f32 GEMM] around `K`'s packing and micro-kernel.
///
/// # Safety
/// As [`sgemm`], for `K`'s ISA.
unsafe fn blocked<K: Micro>(p: Product) {
    const { assert!(K::NC % K::NR == 0 && K::NC / K::NR <= MAX_PANELS_B && K::MC % K::MR == 0) };
    let Product { m, n, k, b, beta, .. } = p;
    let (mr, ncb) = (K::MR, K::NC);
    let kcb = depth_block::<K>(k);
    let mcb = even_split(m, K::MC, mr);
    // Taken out of the thread-local for the call (a re-entrant call would find empty buffers
    // and allocate its own).
    let mut bufs = BUFFERS.with(|b| std::mem::take(&mut *b.borrow_mut()));
    let apack = aligned(&mut bufs.a, mcb.div_ceil(mr) * mr * kcb);
    let bpack = aligned(&mut bufs.b, ncb * kcb);
    // With few rows, each packed element of `b` would be used by few panels of `a`: a
    // row-major `b` is then read in place (full panels; partial ones are still packed).
    let direct_b = b.cs == 1 && m <= DIRECT_B_MAX_ROWS;
    for ic in (0..m).step_by(mcb) {
        let mc = mcb.min(m - ic);
        let panels_a = mc.div_ceil(mr);
        for pc in (0..k).step_by(kcb) {
            let kc = kcb.min(k - pc);
            for ip in 0..panels_a {
                // SAFETY: the panel is inside `a` and fits the buffer (panels_a * MR * kc
                // floats); the ISA per the contract.
                unsafe { p.pack_a_panel::<K>(ic + ip * mr, pc, kc, apack.add(ip * mr * kc)) };
            }
            let bt = if pc == 0 { beta } else { Some(1.0) };
            for jc in (0..n).step_by(ncb) {
                let blk = Block { ic, rows: mc, pc, kc, jc, cols: ncb.min(n - jc) };
                // SAFETY: the block lies inside the product; `apack` holds its packed rows of
                // `a`; `bpack` holds NC * kc floats; the contract covers the rest.
                unsafe { column_block::<K>(&p, blk, apack, bpack, direct_b, bt) };
            }
        }
    }
    BUFFERS.with(|b| *b.borrow_mut() = bufs);
}

/// Note [Even blocks]: the blockings of Note [Packed f32 GEMM] cut each dimension into blocks
/// of about the same size instead of full blocks and a remainder, and the parallel loops of
/// Note [Parallel packed GEMM] give every thread the same number of column tasks, each a share
/// of whole panels of `b`. A 2048-deep product ran five blocks of 384 and one of 128, whose
/// micro-kernel calls read and wrote their tile of `c` for a third of the steps; it now runs
/// six of 344 and less. A 2048-wide product on two threads was five tasks of 416 columns, so
/// one thread idled through a fifth of it: on the Intel Xeon (AVX-512, best of 7) 2048² took
/// 61.6 ms on two threads against 96 on one (1.55x); as six tasks of 10 or 11 panels, 50.7 ms
/// (1.91x).
///
/// The size of the blocks that cut `len` into as few blocks of at most `cap` as possible, all
/// of about the same size (a multiple of `unit`, the last one shorter): 2048 rows under a cap
/// of 2040 are two blocks of 1032 and 1016, not 2040 and 8.
fn even_split(len: usize, cap: usize, unit: usize) -> usize {
    let blocks = len.div_ceil(cap.max(unit)).max(1);
    len.div_ceil(blocks).div_ceil(unit) * unit
}

/// The depth of `K`'s packed blocks for a product `k` deep: at most KC, evened out over the
/// blocks (Note [Even blocks]).
fn depth_block<K: Micro>(k: usize) -> usize {
    even_split(k, K::KC, 8).min(K::KC)
}

/// The most floats of packed `a` that [`blocked_shared`] shares at once (16 MiB: a 2048 x
/// 2048 `a` in one block).
const SHARED_A_MAX: usize = 4 << 20;

thread_local! {
    /// The shared packed `a` of the products this thread starts (Note [Parallel packed GEMM]).
    static SHARED_A: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Note [Parallel packed GEMM]: on several threads, `a` is packed once, by all of them, for
/// the whole depth of a block of rows (up to [`SHARED_A_MAX`] floats), and the columns are
/// then cut into tasks (at least two per thread and as many for each thread, whole panels of
/// `b`, Note [Even blocks]) that rayon hands out as threads come free. Each task packs its own
/// columns of `b` into its thread's buffer, block by block of depth, and runs every panel of
/// the shared `a` against them, so no element of either operand is packed twice. Splitting the
/// product into one independent half per thread instead packed all of `a` on every thread (a
/// 1024-row `a` takes as long to pack as 4% of a half product) and left a thread slowed by its
/// neighbours holding up the other.
///
/// These are its loops around `K`'s packing and micro-kernel, on the current rayon pool.
///
/// # Safety
/// As [`sgemm`], for `K`'s ISA.
unsafe fn blocked_shared<K: Micro>(p: Product) {
    let Product { m, n, k, b, beta, .. } = p;
    let (mr, nr, ncb) = (K::MR, K::NR, K::NC);
    let kcb = depth_block::<K>(k);
    let threads = rayon::current_num_threads();
    let rows_cap = even_split(m, (SHARED_A_MAX / k).max(mr) / mr * mr, mr);
    // Whole panels of `b` per task, the same number of tasks for every thread (Note [Even
    // blocks]): five tasks on two threads left one thread idle for a fifth of the product.
    let panels_b = n.div_ceil(nr);
    let tasks = (n.div_ceil(ncb).max(2 * threads).div_ceil(threads) * threads).min(panels_b);
    let direct_b = b.cs == 1 && m <= DIRECT_B_MAX_ROWS;
    let depth_blocks = k.div_ceil(kcb);
    let mut shared = SHARED_A.with(|s| std::mem::take(&mut *s.borrow_mut()));
    for ic in (0..m).step_by(rows_cap) {
        let mc = rows_cap.min(m - ic);
        let panels_a = mc.div_ceil(mr);
        // Depth block `pc` of the packed rows starts at `panels_a * MR * pc`, panel `ip` of it
        // `ip * MR * kc` further.
        let apack = SendPtr(aligned(&mut shared, panels_a * mr * k));
        // Eight panels per item (an atomic claim each, Note [The caller works too]).
        let panels = depth_blocks * panels_a;
        crate::parallel::for_each(panels.div_ceil(8), |item| {
            for t in item * 8..(item * 8 + 8).min(panels) {
                let (p, apack) = (p.get(), apack.get());
                let (pc, ip) = ((t / panels_a) * kcb, t % panels_a);
                let kc = kcb.min(k - pc);
                // SAFETY: the panel is inside `a`; it is this task's own and lies inside the buffer
                // (panels_a * MR * k floats); the ISA per the contract.
                unsafe { p.pack_a_panel::<K>(ic + ip * mr, pc, kc, apack.add(panels_a * mr * pc + ip * mr * kc)) };
            }
        });
        crate::parallel::for_each(tasks, |t| {
            let (p, apack) = (p.get(), apack.get());
            let (j_start, j_end) = (t * panels_b / tasks * nr, ((t + 1) * panels_b / tasks * nr).min(n));
            let mut bufs = BUFFERS.with(|b| std::mem::take(&mut *b.borrow_mut()));
            let bpack = aligned(&mut bufs.b, ncb * kcb);
            for pc in (0..k).step_by(kcb) {
                let kc = kcb.min(k - pc);
                let bt = if pc == 0 { beta } else { Some(1.0) };
                for jc in (j_start..j_end).step_by(ncb) {
                    let blk = Block { ic, rows: mc, pc, kc, jc, cols: ncb.min(j_end - jc) };
                    // SAFETY: the block lies inside the product; the packed rows of `a` for
                    // depth `pc` are complete (the packing loop has returned); `bpack` holds
                    // NC * kc floats; this task alone writes columns j_start..j_end of `c`.
                    unsafe { column_block::<K>(&p, blk, apack.add(panels_a * mr * pc), bpack, direct_b, bt) };
                }
            }
            BUFFERS.with(|b| *b.borrow_mut() = bufs);
        });
    }
    SHARED_A.with(|s| *s.borrow_mut() = shared);
}

// The shared packed `a` of [`blocked_shared`] goes to its tasks as a `SendPtr`: each packing
// task writes its own panels; the column tasks start after the packing loop has returned and
// only read (Note [Sharing raw pointers with workers]).
use crate::parallel::SendPtr;

/// One step of the loops of Note [Packed f32 GEMM]: rows `ic..ic + rows` of `a` (packed),
/// depth `pc..pc + kc`, columns `jc..jc + cols` of `b` and `c`.
#[derive(Clone, Copy)]
struct Block {
    ic: usize,
    rows: usize,
    pc: usize,
    kc: usize,
    jc: usize,
    cols: usize,
}

/// Runs one [`Block`] of `p`: packs its columns of `b` into `bpack` (or, when `direct_b`,
/// points at the full panels of a row-major `b` in place) and multiplies every packed panel of
/// `a` (at `apack`, `[kc][MR]` each) by them into `c`, scaling the old values by `beta` (the
/// product's for the first depth block, 1 after).
///
/// # Safety
/// The block must lie inside the product; `apack` must hold the block's rows of `a` packed
/// by `K::PACK_A`; `bpack` must hold `cols.div_ceil(NR) * NR * kc` floats (at most NC wide);
/// `c` must address the block's tile with rows `ldc` apart, which no one else writes
/// meanwhile; the CPU must run `K`'s ISA.
#[inline(always)]
unsafe fn column_block<K: Micro>(
    p: &Product,
    blk: Block,
    apack: *const f32,
    bpack: *mut f32,
    direct_b: bool,
    beta: Option<f32>,
) {
    let Product { alpha, b, c, ldc, .. } = *p;
    let (mr, nr) = (K::MR, K::NR);
    let Block { ic, rows, pc, kc, jc, cols } = blk;
    let (row_end, col_end) = (ic + rows, jc + cols);
    let panels_b = cols.div_ceil(nr);
    debug_assert!(panels_b <= MAX_PANELS_B);
    // Where each panel of `b` is read from, and the distance between its k steps.
    let mut panel_b = [(std::ptr::null::<f32>(), 0isize); MAX_PANELS_B];
    for (jp, panel) in panel_b.iter_mut().enumerate().take(panels_b) {
        let j0 = jc + jp * nr;
        let width = nr.min(col_end - j0);
        // SAFETY: (pc, j0) is an element of `b`.
        let src = unsafe { b.at(pc, j0) };
        *panel = if direct_b && width == nr {
            (src.ptr, b.rs)
        } else {
            let dst = bpack.wrapping_add(jp * nr * kc);
            // SAFETY: the block's elements of `b` exist; the panel fits `bpack`.
            unsafe { (K::PACK_B)(kc, width, src, dst) };
            (dst.cast_const(), nr as isize)
        };
    }
    for ip in 0..rows.div_ceil(mr) {
        let i0 = ic + ip * mr;
        for (jp, &(bp, b_step)) in panel_b.iter().enumerate().take(panels_b) {
            let j0 = jc + jp * nr;
            // SAFETY: panels of kc steps (packed, or rows of `b` with NR columns in range); the
            // tile at (i0, j0) of `c` has min(MR, row_end - i0) rows and min(NR, col_end - j0)
            // columns inside the block.
            unsafe {
                (K::KERNEL)(
                    kc,
                    apack.add(ip * mr * kc),
                    bp,
                    b_step,
                    c.offset(i0 as isize * ldc + j0 as isize),
                    ldc,
                    mr.min(row_end - i0),
                    nr.min(col_end - j0),
                    alpha,
                    beta,
                )
            };
        }
    }
}

/// The packing of any layout, element by element: `dst[p * width + r] = src(r, p)` for
/// `r < count`, zero for `count <= r < width` (`a`'s rows, or `b`'s columns read transposed).
///
/// # Safety
/// `src(r, p)` must be an element for `r < count`, `p < kc`; `dst` must hold `width * kc` floats.
#[inline(always)]
unsafe fn pack_any(width: usize, count: usize, kc: usize, src: impl Fn(usize, usize) -> f32, dst: *mut f32) {
    for p in 0..kc {
        for r in 0..width {
            // SAFETY: per the contract.
            unsafe { *dst.add(p * width + r) = if r < count { src(r, p) } else { 0.0 } };
        }
    }
}

/// The AVX-512 micro-kernel (12 x 32).
struct Avx512;

// SAFETY: every function requires AVX-512F, which `runs(Isa::Avx512)` checks.
unsafe impl Micro for Avx512 {
    const MR: usize = 12;
    const NR: usize = 32;
    const KC: usize = 384;
    const NC: usize = 480;
    const MC: usize = 3072;

    const PACK_A: PackFn = pack_a_avx512;
    const PACK_B: PackFn = pack_b::<{ Self::NR }>;
    const KERNEL: KernelFn = kernel_avx512;
}

/// The AVX2 micro-kernel (6 x 16).
struct Avx2;

// SAFETY: every function requires AVX2 and FMA, which `runs(Isa::Avx2)` checks.
unsafe impl Micro for Avx2 {
    const MR: usize = 6;
    const NR: usize = 16;
    const KC: usize = 384;
    const NC: usize = 256;
    const MC: usize = 3072;

    const PACK_A: PackFn = pack_a_avx2;
    const PACK_B: PackFn = pack_b::<{ Self::NR }>;
    const KERNEL: KernelFn = kernel_avx2;
}

/// `Micro::PACK_A` of [`Avx512`].
///
/// # Safety
/// As `Micro::PACK_A`; the CPU must have AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn pack_a_avx512(rows: usize, kc: usize, a: Strided, dst: *mut f32) {
    const MR: usize = Avx512::MR;
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
            pack_any(MR, rows, kc, |r, p| a.get(r, p), dst);
        }
    }
}

/// `Micro::PACK_B` of both kernels, for `NR` columns (a multiple of 8).
///
/// # Safety
/// As `Micro::PACK_B`; the CPU must have AVX (implied by both kernels' ISAs).
#[target_feature(enable = "avx")]
unsafe fn pack_b<const NR: usize>(kc: usize, cols: usize, b: Strided, dst: *mut f32) {
    // SAFETY: every read is an element of `b` (p < kc, j < cols), every write below NR * kc.
    unsafe {
        if cols == NR && b.cs == 1 {
            for p in 0..kc {
                let s = b.at(p, 0).ptr;
                let d = dst.add(p * NR);
                for j in (0..NR).step_by(8) {
                    _mm256_storeu_ps(d.add(j), _mm256_loadu_ps(s.add(j)));
                }
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
            pack_any(NR, cols, kc, |j, p| b.get(p, j), dst);
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

/// Prefetches elements 0 and `last` of each of the `rows` rows of a tile of `c` (`ldc` apart),
/// which the kernels are about to update.
#[inline(always)]
fn prefetch_tile(c: *mut f32, ldc: isize, rows: usize, last: isize) {
    for r in 0..rows as isize {
        let row = c.wrapping_offset(r * ldc);
        // SAFETY: prefetching is a hint that cannot fault, whatever the address.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(row as *const i8);
            _mm_prefetch::<_MM_HINT_T0>(row.wrapping_offset(last) as *const i8);
        }
    }
}

/// `Micro::KERNEL` of [`Avx512`]: the 12 x 32 tile in 24 zmm accumulators, or for a last
/// partial tile of at most 4 or 8 rows, only those rows (Note [Short row tiles]).
///
/// # Safety
/// As `Micro::KERNEL`; the CPU must have AVX-512F.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
unsafe fn kernel_avx512(
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
    // SAFETY: the caller's contract; each instance reads the first R of every MR-row step of
    // the packed panel (rows <= R) and stores at most `rows` rows.
    unsafe {
        match rows {
            0..=4 => kernel_avx512_rows::<4>(kc, a, b, b_step, c, ldc, rows, cols, alpha, beta),
            5..=8 => kernel_avx512_rows::<8>(kc, a, b, b_step, c, ldc, rows, cols, alpha, beta),
            _ => kernel_avx512_rows::<{ Avx512::MR }>(kc, a, b, b_step, c, ldc, rows, cols, alpha, beta),
        }
    }
}

// Note [Short row tiles]: a product whose row count is not a multiple of 12 ends with a partial
// tile, whose panel of `a` is padded with zeros. The full kernel spent as long on it as on a
// full tile: a convolution's [64, 576] x [576, 3136] (five tiles of 12 and one of 4) did 72
// rows' work for 64. The 4- and 8-row instances issue only their rows' FMAs (8 or 16 a step,
// still enough independent accumulators to cover the FMA latency): `W5.conv_large` at one
// thread went from 37.2 to ~34 ms.

/// The kernel for the first `R` rows of a panel (`rows <= R <= MR`).
///
/// # Safety
/// As [`kernel_avx512`], with `rows <= R`.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
unsafe fn kernel_avx512_rows<const R: usize>(
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
    const MR: usize = Avx512::MR;
    let rows = rows.min(R);
    // SAFETY: reads stay within the panels (kc steps), prefetches cannot fault, and stores
    // are masked to the `rows` x `cols` tile of `c`, per the contract.
    unsafe {
        prefetch_tile(c, ldc, rows, 16);
        let mut acc = [[_mm512_setzero_ps(); 2]; R];
        let (mut ap, mut bp) = (a, b);
        for _ in 0..kc {
            let ahead = bp.wrapping_offset(PREFETCH_STEPS * b_step);
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
        // Unrolled with constant row indices so the accumulators stay in registers; rows at
        // or past R are compiled out.
        macro_rules! rows {
            ($($r:literal)*) => {$(
                if $r < R && $r < rows {
                    let row = c.offset($r * ldc);
                    store(row, acc[$r][0], m0);
                    store(row.add(16), acc[$r][1], m1);
                }
            )*};
        }
        rows!(0 1 2 3 4 5 6 7 8 9 10 11);
    }
}

/// `Micro::PACK_A` of [`Avx2`].
///
/// # Safety
/// As `Micro::PACK_A`; the CPU must have AVX2.
#[target_feature(enable = "avx2,fma")]
unsafe fn pack_a_avx2(rows: usize, kc: usize, a: Strided, dst: *mut f32) {
    const MR: usize = Avx2::MR;
    // SAFETY: every read is an element of `a` (r < rows, p < kc) and every write is below
    // MR * kc, per the contract.
    unsafe {
        if rows == MR && a.cs == 1 {
            // Rows 0-3 by 4 x 4 transposes, rows 4 and 5 element by element.
            let mut p = 0;
            while p + 4 <= kc {
                transpose4x4(a.at(0, p).ptr, a.rs, dst.add(p * MR), MR as isize);
                for q in p..p + 4 {
                    *dst.add(q * MR + 4) = a.get(4, q);
                    *dst.add(q * MR + 5) = a.get(5, q);
                }
                p += 4;
            }
            for p in p..kc {
                for r in 0..MR {
                    *dst.add(p * MR + r) = a.get(r, p);
                }
            }
        } else if rows == MR && a.rs == 1 {
            for p in 0..kc {
                let s = a.at(0, p).ptr;
                _mm_storeu_ps(dst.add(p * MR), _mm_loadu_ps(s));
                *dst.add(p * MR + 4) = *s.add(4);
                *dst.add(p * MR + 5) = *s.add(5);
            }
        } else {
            pack_any(MR, rows, kc, |r, p| a.get(r, p), dst);
        }
    }
}

/// `Micro::KERNEL` of [`Avx2`]: the 6 x 16 tile in 12 ymm accumulators. Full tiles are
/// stored directly; partial ones go through a scratch row (masked moves are slow on AMD).
///
/// # Safety
/// As `Micro::KERNEL`; the CPU must have AVX2 and FMA.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
unsafe fn kernel_avx2(
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
    const MR: usize = Avx2::MR;
    // SAFETY: reads stay within the panels (kc steps), prefetches cannot fault, and writes stay
    // in the `rows` x `cols` tile of `c`, per the contract.
    unsafe {
        prefetch_tile(c, ldc, rows, 15);
        let mut acc = [[_mm256_setzero_ps(); 2]; MR];
        let (mut ap, mut bp) = (a, b);
        for _ in 0..kc {
            _mm_prefetch::<_MM_HINT_T0>(bp.wrapping_offset(PREFETCH_STEPS * b_step) as *const i8);
            let b0 = _mm256_loadu_ps(bp);
            let b1 = _mm256_loadu_ps(bp.add(8));
            for (r, acc) in acc.iter_mut().enumerate() {
                let av = _mm256_broadcast_ss(&*ap.add(r));
                acc[0] = _mm256_fmadd_ps(av, b0, acc[0]);
                acc[1] = _mm256_fmadd_ps(av, b1, acc[1]);
            }
            ap = ap.add(MR);
            bp = bp.wrapping_offset(b_step);
        }
        let al = _mm256_set1_ps(alpha);
        let bv = _mm256_set1_ps(beta.unwrap_or(0.0));
        // `alpha * v (+ beta * old)` of 8 values.
        let update = |v: __m256, old: *const f32| match beta {
            None => _mm256_mul_ps(v, al),
            Some(1.0) => _mm256_fmadd_ps(v, al, _mm256_loadu_ps(old)),
            Some(_) => _mm256_fmadd_ps(v, al, _mm256_mul_ps(_mm256_loadu_ps(old), bv)),
        };
        let full = cols == Avx2::NR;
        let mut scratch = [0f32; Avx2::NR];
        let sp = scratch.as_mut_ptr();
        // Unrolled with constant row indices so the accumulators stay in registers.
        macro_rules! rows {
            ($($r:literal)*) => {$(
                if $r < rows {
                    let row = c.offset($r * ldc);
                    if full {
                        _mm256_storeu_ps(row, update(acc[$r][0], row));
                        _mm256_storeu_ps(row.add(8), update(acc[$r][1], row.add(8)));
                    } else {
                        // The old values (read only where `beta` is used) pass through the
                        // scratch row; only `cols` values go back.
                        if beta.is_some() {
                            std::ptr::copy_nonoverlapping(row, sp, cols);
                        }
                        _mm256_storeu_ps(sp, update(acc[$r][0], sp));
                        _mm256_storeu_ps(sp.add(8), update(acc[$r][1], sp.add(8)));
                        std::ptr::copy_nonoverlapping(sp, row, cols);
                    }
                }
            )*};
        }
        rows!(0 1 2 3 4 5);
    }
}
