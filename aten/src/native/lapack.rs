//! `torch.linalg` on the CPU: the LAPACK-shaped kernels (LU with partial pivoting, LU solves,
//! triangular solves, Cholesky, Householder QR, symmetric eigendecomposition, SVD) and the
//! operators PyTorch composes from them (`solve`, `inv`, `det`, `slogdet`, `pinv`,
//! `matrix_norm`, `matrix_rank`, `lstsq`, ...).
//!
//! Note [LAPACK conventions on faer]: the factorizations run on `faer` (f32 and f64, batched
//! over the leading dimensions), except LU, which is ours (Note [Recursive LU]), and their
//! results are laid out as LAPACK lays them out, since PyTorch's results are LAPACK's: `lu_factor` packs L (unit diagonal implied) and U into one
//! matrix and numbers its pivots from 1 as row swaps applied in order (`getrf`'s `ipiv`);
//! Householder QR is ours, written to `geqrf`'s conventions (`beta = -sign(alpha) * norm`, no
//! reflection when the column below the diagonal is zero), so `geqrf`, `householder_product`,
//! `ormqr` and `qr` agree with PyTorch to rounding, signs included. The eigenvectors of `eigh`
//! and the singular vectors of `svd` are unique only up to sign; ours are flipped so that the
//! entry of largest magnitude of each (left) vector is positive ([`fix_signs`]), which makes
//! them independent of the algorithm's path (LAPACK's signs are its own; the OpInfo cases
//! compare such outputs up to sign).
//!
//! Each kernel is an operator with its derivative in `derivatives.yaml`; the composites are
//! `CompositeImplicitAutograd` and are differentiated through the kernels they call.

use c10::{Error, Result, ScalarType};
use faer::linalg::triangular_solve as tri;
use faer::{Mat, MatMut as FMut, MatRef as FRef, Par};
use num_traits::{One as _, Zero as _};

use crate::native::linalg::{copy_matrix, MatMut, MatRef};
use crate::{ops, Tensor};

/// The element types the kernels run in.
pub(crate) trait Real:
    faer::traits::RealField
    + c10::Element
    + num_traits::Float
    + num_traits::NumAssign
    + crate::native::linalg::GemmFloat
    + Copy
    + Send
    + Sync
    + 'static
{
    /// The bit pattern of `|x|`, which orders as the magnitudes do for every value but NaN
    /// (whose patterns lie above infinity's): [`first_max_abs`]'s vectorised reduction.
    type Bits: Copy + Ord;
    /// `|x|`'s bits.
    fn magnitude_bits(self) -> Self::Bits;
    /// Infinity's bits, the largest magnitude that is not a NaN.
    const INFINITY_BITS: Self::Bits;
}
impl Real for f32 {
    type Bits = u32;
    #[inline(always)]
    fn magnitude_bits(self) -> u32 {
        self.to_bits() & 0x7fff_ffff
    }
    const INFINITY_BITS: u32 = 0x7f80_0000;
}
impl Real for f64 {
    type Bits = u64;
    #[inline(always)]
    fn magnitude_bits(self) -> u64 {
        self.to_bits() & 0x7fff_ffff_ffff_ffff
    }
    const INFINITY_BITS: u64 = 0x7ff0_0000_0000_0000;
}

/// Runs `$body` with `$T` bound to the Rust type of `$dtype` (f32 or f64), else the error
/// PyTorch's linalg functions give for other dtypes.
macro_rules! float_kernel {
    ($op:expr, $dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            ScalarType::F32 => {
                type $T = f32;
                $body
            }
            ScalarType::F64 => {
                type $T = f64;
                $body
            }
            d => Err(Error::invalid(
                $op,
                format!("Expected a floating point or complex tensor as input. Got {}", d.cpp_name()),
            )),
        }
    };
}

/// Products with more work than this run on rayon's threads.
fn par_for(work: usize) -> Par {
    if work >= 1 << 18 && rayon::current_num_threads() > 1 {
        Par::rayon(0)
    } else {
        Par::Seq
    }
}

pub(crate) fn check_float(op: &str, t: &Tensor) -> Result<()> {
    match t.dtype() {
        ScalarType::F32 | ScalarType::F64 => Ok(()),
        d => Err(Error::invalid(
            op,
            format!("Expected a floating point or complex tensor as input. Got {}", d.cpp_name()),
        )),
    }
}

pub(crate) fn check_matrix(op: &str, t: &Tensor, name: &str) -> Result<()> {
    if t.dim() < 2 {
        return Err(Error::shape(op, format!("The input tensor {name} must have at least 2 dimensions.")));
    }
    Ok(())
}

pub(crate) fn check_square(op: &str, t: &Tensor, name: &str) -> Result<()> {
    check_matrix(op, t, name)?;
    let (m, n) = rows_cols(t);
    if m != n {
        return Err(Error::shape(
            op,
            format!("{name} must be batches of square matrices, but they are {m} by {n} matrices"),
        ));
    }
    Ok(())
}

fn check_same_dtype(op: &str, a: &Tensor, b: &Tensor, an: &str, bn: &str) -> Result<()> {
    if a.dtype() != b.dtype() {
        return Err(Error::invalid(
            op,
            format!(
                "Expected {an} and {bn} to have the same dtype, but found {an} of type {} and {bn} of type {} instead",
                a.dtype().cpp_name(),
                b.dtype().cpp_name()
            ),
        ));
    }
    Ok(())
}

/// The last two sizes.
pub(crate) fn rows_cols(t: &Tensor) -> (i64, i64) {
    let s = t.sizes();
    (s[s.len() - 2], s[s.len() - 1])
}

/// The leading (batch) sizes of a matrix batch, and how many matrices that is (saturating: a
/// count that does not fit is refused by the allocation of the results).
fn batch_of(t: &Tensor, matrix_dims: usize) -> (Vec<i64>, usize) {
    let s = t.sizes();
    let b = s[..s.len() - matrix_dims].to_vec();
    (b.clone(), batch_count(&b))
}

/// The number of matrices in a batch shape, saturating at `usize::MAX`.
fn batch_count(batch: &[i64]) -> usize {
    if batch.contains(&0) {
        return 0;
    }
    batch.iter().try_fold(1usize, |a, &b| a.checked_mul(b.max(0) as usize)).unwrap_or(usize::MAX)
}

/// Refuses batches whose matrices cannot all be addressed (the results could not be allocated).
fn check_batch(op: &str, count: usize, per_matrix: usize) -> Result<()> {
    if count.checked_mul(per_matrix.max(1)).is_none_or(|n| n > isize::MAX as usize / 8) {
        return Err(Error::invalid(op, format!("a batch of {count} matrices is too large to compute")));
    }
    Ok(())
}

fn with_batch(batch: &[i64], tail: &[i64]) -> Vec<i64> {
    batch.iter().chain(tail).copied().collect()
}

/// The broadcast of two batch shapes, as PyTorch's linalg functions broadcast them.
fn broadcast_batch(op: &str, a: &[i64], b: &[i64]) -> Result<Vec<i64>> {
    let n = a.len().max(b.len());
    let mut out = vec![1i64; n];
    for i in 0..n {
        let x = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let y = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = if x == y || y == 1 {
            x
        } else if x == 1 {
            y
        } else {
            return Err(Error::shape(
                op,
                format!(
                    "The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {i}"
                ),
            ));
        };
    }
    Ok(out)
}

fn expand_to(t: &Tensor, batch: &[i64], matrix_dims: usize) -> Result<Tensor> {
    let s = t.sizes();
    let shape = with_batch(batch, &s[s.len() - matrix_dims..]);
    if s == shape.as_slice() {
        Ok(t.clone())
    } else {
        ops::expand(t, &shape, false)
    }
}

/// `A X = B` with square `A` (`n x n`) and `B` (`n x k`): the broadcast batch shape, how many
/// systems that is, `n` and `k`.
fn left_system(op: &str, a: &Tensor, b: &Tensor) -> Result<(Vec<i64>, usize, i64, i64)> {
    let n = rows_cols(a).0;
    let (bm, k) = rows_cols(b);
    if bm != n {
        return Err(Error::shape(
            op,
            format!("{op}: Incompatible shapes of A and B for the equation AX = B ({n}x{n} and {bm}x{k})"),
        ));
    }
    let batch = broadcast_batch(op, &batch_of(a, 2).0, &batch_of(b, 2).0)?;
    let count = batch_count(&batch);
    check_batch(op, count, (n.max(0) as usize).saturating_mul(n.max(k).max(0) as usize))?;
    Ok((batch, count, n, k))
}

fn mt(t: &Tensor) -> Result<Tensor> {
    ops::transpose(t, -2, -1)
}

/// A faer matrix (column-major) copied from a row-major `m x n` slice.
fn to_mat<T: Real>(a: &[T], m: usize, n: usize) -> Mat<T> {
    let mut out = Mat::zeros(m, n);
    load_into(a, out.as_mut());
    out
}

/// Copies the row-major slice `a` (`dst`'s shape) into the faer matrix `dst`.
fn load_into<T: Real>(a: &[T], dst: FMut<'_, T>) {
    let (m, n) = (dst.nrows(), dst.ncols());
    assert!(a.len() >= m * n, "a row-major {m} x {n} source");
    let (ptr, rs, cs) = (dst.as_ptr_mut(), dst.row_stride(), dst.col_stride());
    // SAFETY: `a` holds m * n elements (checked); `dst` addresses its own m x n elements by
    // its strides; the two are distinct borrows.
    unsafe { copy_matrix(m, n, MatRef { ptr: a.as_ptr(), rs: n as isize, cs: 1 }, MatMut { ptr, rs, cs }, false) }
}

/// Writes a faer matrix row-major into `out` (`nrows * ncols` elements).
fn store<T: Real>(a: FRef<'_, T>, out: &mut [T]) {
    let (m, n) = (a.nrows(), a.ncols());
    assert!(out.len() >= m * n, "a row-major {m} x {n} destination");
    let src = MatRef { ptr: a.as_ptr(), rs: a.row_stride(), cs: a.col_stride() };
    // SAFETY: `a` addresses its m x n elements by its strides; `out` holds m * n (checked) and
    // is a distinct, exclusive borrow.
    unsafe { copy_matrix(m, n, src, MatMut { ptr: out.as_mut_ptr(), rs: n as isize, cs: 1 }, false) }
}

// ---------------------------------------------------------------------------------------------
// LU with partial pivoting

/// `linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> (Tensor LU, Tensor pivots, Tensor info)`
pub fn linalg_lu_factor_ex(a: &Tensor, pivot: bool, check_errors: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let op = "linalg.lu_factor";
    check_matrix(op, a, "A")?;
    check_float(op, a)?;
    if !pivot {
        return Err(Error::invalid(op, "LU without pivoting is not implemented on the CPU"));
    }
    let (m, n) = rows_cols(a);
    let (batch, count) = batch_of(a, 2);
    let (mu, nu) = (m as usize, n as usize);
    let k = mu.min(nu);
    check_batch(op, count, mu.saturating_mul(nu))?;
    let mut pivots = c10::size::try_vec_filled(0i32, count * k)?;
    let mut info = c10::size::try_vec_filled(0i32, count)?;
    let lu = float_kernel!(op, a.dtype(), T => {
        // Factored in place in a row-major copy of A (Note [Recursive LU]).
        let mut out = a.to_vec::<T>()?;
        // Empty matrices need no work (and a batch of them can be huge).
        if mu * nu > 0 && count > 0 {
            let per = mu * nu;
            // A batch runs one matrix per task, each product on its thread; a single matrix
            // splits its products over the pool.
            let batched = count > 1 && rayon::current_num_threads() > 1;
            let one = |(o, (p, inf)): (&mut [T], (&mut [i32], &mut i32))| *inf = lu_one(o, mu, nu, p, !batched);
            if batched {
                use rayon::prelude::*;
                crate::parallel::warm();
                out.par_chunks_mut(per).zip(pivots.par_chunks_mut(k).zip(info.par_iter_mut())).for_each(one);
            } else {
                out.chunks_mut(per).zip(pivots.chunks_mut(k).zip(info.iter_mut())).for_each(one);
            }
        }
        Tensor::from_vec(out, a.sizes())
    })?;
    if check_errors {
        if let Some((b, &i)) = info.iter().enumerate().find(|(_, &i)| i > 0) {
            let at = if count > 1 { format!("(Batch element {b}): ") } else { String::new() };
            return Err(Error::invalid(
                op,
                format!("{at}The factorization could not be completed because the input is not invertible: U[{i},{i}] is zero."),
            ));
        }
    }
    let pivots = Tensor::from_vec(pivots, &with_batch(&batch, &[k as i64]))?;
    let info = Tensor::from_vec(info, &batch)?;
    Ok((lu, pivots, info))
}

/// Factors one row-major `m x n` matrix in place in `lu` (L below the diagonal, unit diagonal
/// implied, U on and above it) and `piv` (1-based row swaps, applied in order); returns
/// LAPACK's `info` (the 1-based index of the first exactly zero pivot, or 0). `par`: the
/// products may use the pool (Note [Recursive LU]).
fn lu_one<T: Real>(lu: &mut [T], m: usize, n: usize, piv: &mut [i32], par: bool) -> i32 {
    let k = m.min(n);
    assert!(lu.len() >= m * n && piv.len() >= k, "an m x n matrix and min(m, n) pivots");
    if k == 0 {
        return 0;
    }
    let mut rows = vec![0usize; k];
    // Every panel [`lu_rec`] factors is at most LU_PANEL wide or LU_PANEL tall.
    let mut panel = vec![T::zero(); LU_PANEL * m.max(n)];
    // SAFETY: `lu` holds the m x n row-major matrix (checked), exclusively borrowed.
    unsafe { lu_rec(m, n, lu.as_mut_ptr(), n, &mut rows, &mut panel, par) };
    for (p, r) in piv.iter_mut().zip(&rows) {
        *p = (*r + 1) as i32;
    }
    (0..k).find(|&i| lu[i * n + i] == T::zero()).map_or(0, |i| (i + 1) as i32)
}

/// Note [Recursive LU]: LU with partial pivoting is ours, on the row-major matrix in place, in
/// the recursive form of LAPACK's `getrf2`: the left half of the columns is factored (all rows),
/// its row swaps are applied to the right half, the top right block becomes `L11^-1 A12` (a
/// recursive triangular solve whose off-diagonal blocks are products), the bottom right block
/// `A22 - A21 A12` (one product), which is factored in turn, and its swaps are applied to the
/// bottom left block. Nearly every multiply-add is in a matrix product, on the packed kernel
/// for f32 (Note [Packed f32 GEMM]) and split over the threads when large enough, and each
/// row swap is two contiguous runs. Panels of at most [`LU_PANEL`] columns are factored column
/// by column with row-wise (vectorised) updates. Pivots are the first entry of largest
/// magnitude, as LAPACK's `i?amax`, so a zero column keeps its row and leaves `info` to say so.
/// faer's LU (column-major, so a copy each way) took 1.72 ms for `W9.solve_512` on one thread
/// of the Intel Xeon where LAPACK (MKL) took 1.25; this one takes 1.03 (`cargo xtask bench W9`).
/// A batch runs one matrix per task on the pool, each with single-threaded products.
///
/// `m x n` at `a` with row stride `lda`; `rows[j]` receives the row (of this block) swapped
/// with row `j` at step `j`; `panel` is the panels' scratch (at least `LU_PANEL * max(m, n)`).
///
/// # Safety
/// `a` must address the `m x n` matrix with row stride `lda >= n`, exclusively; `rows` holds
/// `min(m, n)` entries.
unsafe fn lu_rec<T: Real>(m: usize, n: usize, a: *mut T, lda: usize, rows: &mut [usize], panel: &mut [T], par: bool) {
    let k = m.min(n);
    if k == 0 {
        return;
    }
    if k <= LU_PANEL || n <= LU_PANEL {
        // SAFETY: forwarded contract.
        return unsafe { lu_panel(m, n, a, lda, rows, &mut panel[..m * n]) };
    }
    let n1 = if k >= 64 { k / 2 / 16 * 16 } else { k / 2 };
    // SAFETY: every block below lies inside the m x n matrix; the products' output never
    // overlaps their operands.
    unsafe {
        lu_rec(m, n1, a, lda, &mut rows[..n1], panel, par);
        let right = a.add(n1);
        swap_rows(right, lda, n - n1, &rows[..n1], 0);
        trsm_unit_lower(n1, n - n1, a, lda, right, lda, par);
        let (a21, a22) = (a.add(n1 * lda), a.add(n1 * lda + n1));
        product(m - n1, n - n1, n1, a21, lda, right, lda, a22, lda, par);
        lu_rec(m - n1, n - n1, a22, lda, &mut rows[n1..k], panel, par);
        for r in &mut rows[n1..k] {
            *r += n1;
        }
        swap_rows(a, lda, n1, &rows[n1..k], n1);
    }
}

/// The widest panel [`lu_rec`] factors column by column.
const LU_PANEL: usize = 16;

/// The fewest multiply-adds for which [`lu_rec`]'s products use the pool. Between two products
/// the panel runs on one thread, long enough for the pool's other threads to go to sleep, and
/// waking them cost more than they saved: on the Intel Xeon (two threads) `W9.solve_512` took
/// 1.12 ms with its largest product (2^24 multiply-adds) on the pool and 1.05 with none, so a
/// 512 x 512 factorization stays on the calling thread.
const LU_PAR_MIN: usize = 1 << 25;

/// `c -= a @ b` for `m x k` by `k x n` row-major blocks (row strides given), on the pool when
/// `par` and the product is large enough.
///
/// # Safety
/// The three blocks must be valid for their extents; `c` must not overlap `a` or `b`.
#[allow(clippy::too_many_arguments)]
unsafe fn product<T: Real>(
    m: usize,
    n: usize,
    k: usize,
    a: *const T,
    lda: usize,
    b: *const T,
    ldb: usize,
    c: *mut T,
    ldc: usize,
    par: bool,
) {
    use crate::native::linalg::{gemm_one, gemm_parallelism};
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    // Products of the recursion's lower levels are too small to pay for a fork and join.
    let p = if par && m * n * k >= LU_PAR_MIN { gemm_parallelism(m, n, k) } else { gemm::Parallelism::None };
    // SAFETY: forwarded contract.
    unsafe {
        gemm_one(
            m,
            n,
            k,
            MatMut { ptr: c, rs: ldc as isize, cs: 1 },
            MatRef { ptr: a, rs: lda as isize, cs: 1 },
            MatRef { ptr: b, rs: ldb as isize, cs: 1 },
            -T::one(),
            Some(T::one()),
            p,
        )
    }
}

/// Applies the swaps `rows` (step `j` swaps row `offset + j` with row `offset + rows[j]`, in
/// order) to `width` columns at `a`.
///
/// # Safety
/// Every named row must address `width` elements at `a + row * lda`, exclusively.
unsafe fn swap_rows<T: Copy>(a: *mut T, lda: usize, width: usize, rows: &[usize], offset: usize) {
    for (j, &r) in rows.iter().enumerate() {
        let i = offset + j;
        if r != i && width > 0 {
            // SAFETY: two distinct rows of the block.
            unsafe { std::ptr::swap_nonoverlapping(a.add(i * lda), a.add(r * lda), width) };
        }
    }
}

/// `b = L^-1 b` for the unit lower triangle `L` (`n x n` at `l`) and the `n x w` block `b`:
/// rows by substitution up to 32, halves with a product between them above.
///
/// # Safety
/// Both blocks must be valid for their extents and not overlap.
unsafe fn trsm_unit_lower<T: Real>(n: usize, w: usize, l: *const T, ldl: usize, b: *mut T, ldb: usize, par: bool) {
    if n == 0 || w == 0 {
        return;
    }
    // SAFETY: the rows and blocks named lie inside the two blocks.
    unsafe {
        if n <= 32 {
            return substitute_unit_lower(n, w, l, ldl, b, ldb);
        }
        let h = n / 2;
        trsm_unit_lower(h, w, l, ldl, b, ldb, par);
        product(n - h, w, h, l.add(h * ldl), ldl, b, ldb, b.add(h * ldb), ldb, par);
        trsm_unit_lower(n - h, w, l.add(h * ldl + h), ldl, b.add(h * ldb), ldb, par);
    }
}

/// The substitution of [`trsm_unit_lower`] for small triangles: row `i` of `b` loses `L[i, p]`
/// times row `p`, for each `p < i` (whole rows, vectorised).
///
/// # Safety
/// As [`trsm_unit_lower`].
#[inline(always)]
unsafe fn substitute_unit_lower_body<T: Real>(n: usize, w: usize, l: *const T, ldl: usize, b: *mut T, ldb: usize) {
    // SAFETY: the rows named lie inside the two blocks (the caller's contract).
    unsafe {
        for i in 1..n {
            let bi = std::slice::from_raw_parts_mut(b.add(i * ldb), w);
            for p in 0..i {
                let f = *l.add(i * ldl + p);
                if f != T::zero() {
                    let bp = std::slice::from_raw_parts(b.add(p * ldb), w);
                    for (x, &y) in bi.iter_mut().zip(bp) {
                        *x -= f * y;
                    }
                }
            }
        }
    }
}

/// Defines `unsafe fn $name<T: Real>(args)` that runs the always-inlined `$body` compiled for
/// AVX-512 or AVX2 where the CPU has them (the crate is built for the x86-64 baseline, whose
/// SSE loops ran the LU panel's updates four floats at a time), else for the baseline. Neither
/// instance fuses multiply-adds, so every CPU gets the same results.
macro_rules! lu_isa_dispatch {
    ($name:ident = $body:ident($($a:ident: $t:ty),*)) => {
        /// See the body's documentation; dispatched per ISA ([`lu_isa_dispatch`]).
        ///
        /// # Safety
        /// As the body's.
        unsafe fn $name<T: Real>($($a: $t),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
                unsafe fn avx512<T: Real>($($a: $t),*) {
                    // SAFETY: forwarded contract.
                    unsafe { $body($($a),*) }
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2<T: Real>($($a: $t),*) {
                    // SAFETY: forwarded contract.
                    unsafe { $body($($a),*) }
                }
                match crate::native::cpu::wide_isa() {
                    // SAFETY: the CPU reports every feature the function is compiled for; forwarded contract.
                    crate::native::cpu::WideIsa::Avx512 => return unsafe { avx512($($a),*) },
                    // SAFETY: as above.
                    crate::native::cpu::WideIsa::Avx2 => return unsafe { avx2($($a),*) },
                    crate::native::cpu::WideIsa::Baseline => {}
                }
            }
            // SAFETY: forwarded contract.
            unsafe { $body($($a),*) }
        }
    };
}

lu_isa_dispatch!(
    lu_panel = lu_panel_body(m: usize, n: usize, a: *mut T, lda: usize, rows: &mut [usize], buf: &mut [T])
);
lu_isa_dispatch!(
    substitute_unit_lower = substitute_unit_lower_body(n: usize, w: usize, l: *const T, ldl: usize, b: *mut T, ldb: usize)
);

/// The index of the first entry of largest magnitude in `v` (LAPACK's `i?amax`: a NaN is never
/// larger than what precedes it). Without NaNs the magnitudes order as their bit patterns with
/// the sign cleared, so the maximum is an integer reduction that vectorises, and the index the
/// first entry that has it.
#[inline(always)]
fn first_max_abs<T: Real>(v: &[T]) -> usize {
    let top = v.iter().map(|x| x.magnitude_bits()).max();
    match top {
        Some(top) if top <= T::INFINITY_BITS => v.iter().position(|x| x.magnitude_bits() == top).unwrap_or(0),
        _ => first_max_abs_scan(v),
    }
}

/// [`first_max_abs`] one entry at a time, as `i?amax` (where `v` holds a NaN).
fn first_max_abs_scan<T: Real>(v: &[T]) -> usize {
    let mut best = 0;
    let mut big = v.first().map_or(T::zero(), |x| x.abs());
    for (i, x) in v.iter().enumerate().skip(1) {
        if x.abs() > big {
            big = x.abs();
            best = i;
        }
    }
    best
}

/// Column-by-column LU of a narrow (or short) `m x n` block, as [`lu_rec`], on a column-major
/// copy of it in `buf` (`m * n` elements), so the pivot search, the division and each column's
/// update are contiguous runs (on the row-major block they were strided reads and rows of a few
/// elements, half of `W9.solve_512`'s time): for each of the `min(m, n)` columns, the first
/// entry of largest magnitude at or below the diagonal is the pivot; its row is swapped in, the
/// column below is divided by it (multiplied by its reciprocal unless that would overflow, as
/// `getrf2`), and the columns to its right are updated.
///
/// # Safety
/// As [`lu_rec`].
#[inline(always)]
unsafe fn lu_panel_body<T: Real>(m: usize, n: usize, a: *mut T, lda: usize, rows: &mut [usize], buf: &mut [T]) {
    let k = m.min(n);
    assert_eq!(buf.len(), m * n, "the panel's scratch");
    // SAFETY: the m x n block at `a` (the caller's) and `buf` (m * n, column-major) are
    // distinct.
    unsafe {
        copy_matrix(
            m,
            n,
            MatRef { ptr: a, rs: lda as isize, cs: 1 },
            MatMut { ptr: buf.as_mut_ptr(), rs: 1, cs: m as isize },
            false,
        )
    };
    for j in 0..k {
        let (left, right) = buf.split_at_mut((j + 1) * m);
        let col = &mut left[j * m..];
        let best = j + first_max_abs(&col[j..]);
        rows[j] = best;
        if best != j {
            col.swap(j, best);
            for c in left.chunks_exact_mut(m).take(j).chain(right.chunks_exact_mut(m)) {
                c.swap(j, best);
            }
        }
        let col = &mut left[j * m..];
        let d = col[j];
        if d == T::zero() {
            continue;
        }
        let below = &mut col[j + 1..];
        if d.abs() >= T::min_positive_value() {
            let inv = T::one() / d;
            below.iter_mut().for_each(|x| *x *= inv);
        } else {
            below.iter_mut().for_each(|x| *x /= d);
        }
        let below = &col[j + 1..];
        for c in right.chunks_exact_mut(m) {
            let u = c[j];
            if u != T::zero() {
                for (x, &l) in c[j + 1..].iter_mut().zip(below) {
                    *x -= u * l;
                }
            }
        }
    }
    // SAFETY: as above, the other way.
    unsafe {
        copy_matrix(
            m,
            n,
            MatRef { ptr: buf.as_ptr(), rs: 1, cs: m as isize },
            MatMut { ptr: a, rs: lda as isize, cs: 1 },
            false,
        )
    };
}

/// The row permutation of 1-based LAPACK pivots (`perm[i]` = the original row at position `i`
/// of `P^T A`).
fn pivots_to_perm(piv: &[i32], m: usize) -> Result<Vec<usize>> {
    let mut perm: Vec<usize> = (0..m).collect();
    for (i, &p) in piv.iter().enumerate() {
        let j = p as i64 - 1;
        if j < i as i64 || j >= m as i64 {
            return Err(Error::invalid(
                "lu_unpack",
                format!("the pivots must be between {} and {m} at position {i}, got {p}", i + 1),
            ));
        }
        perm.swap(i, j as usize);
    }
    Ok(perm)
}

fn check_pivots(op: &str, lu: &Tensor, pivots: &Tensor) -> Result<()> {
    if pivots.dtype() != ScalarType::I32 {
        return Err(Error::invalid(op, format!("Expected pivots to be int32, but got {}", pivots.dtype().cpp_name())));
    }
    let (m, n) = rows_cols(lu);
    let s = lu.sizes();
    let want = with_batch(&s[..s.len() - 2], &[m.min(n)]);
    if pivots.sizes() != want.as_slice() {
        return Err(Error::shape(
            op,
            format!("Expected pivots of shape {want:?} for LU of shape {:?}, but got {:?}", lu.sizes(), pivots.sizes()),
        ));
    }
    Ok(())
}

/// `linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, bool adjoint=False) -> Tensor`
pub fn linalg_lu_solve(lu: &Tensor, pivots: &Tensor, b: &Tensor, left: bool, adjoint: bool) -> Result<Tensor> {
    let op = "linalg.lu_solve";
    check_square(op, lu, "LU")?;
    check_matrix(op, b, "B")?;
    check_float(op, lu)?;
    check_same_dtype(op, lu, b, "LU", "B")?;
    check_pivots(op, lu, pivots)?;
    if !left {
        // X A = B  <=>  A^T X^T = B^T.
        return mt(&linalg_lu_solve(lu, pivots, &mt(b)?, true, !adjoint)?);
    }
    let (batch, count, n, k) = left_system(op, lu, b)?;
    let lu_e = expand_to(lu, &batch, 2)?;
    let piv_e = expand_to(pivots, &batch, 1)?;
    let b_e = expand_to(b, &batch, 2)?;
    let (nu, ku) = (n as usize, k as usize);
    let piv = piv_e.to_vec::<i32>()?;
    float_kernel!(op, lu.dtype(), T => {
        let lud = lu_e.to_vec::<T>()?;
        let mut x = b_e.to_vec::<T>()?;
        for i in 0..if nu * ku == 0 { 0 } else { count } {
            let perm = pivots_to_perm(&piv[i * nu..(i + 1) * nu], nu)?;
            lu_solve_one(&lud[i * nu * nu..(i + 1) * nu * nu], &perm, &mut x[i * nu * ku..(i + 1) * nu * ku], nu, ku, adjoint);
        }
        Tensor::from_vec(x, &with_batch(&batch, &[n, k]))
    })
}

/// Solves `A X = B` (or `A^T X = B`) in place in row-major `b` (`n x k`), with `A = P L U`
/// packed in `lu` and `perm` the rows of `P^T A`.
fn lu_solve_one<T: Real>(lu: &[T], perm: &[usize], b: &mut [T], n: usize, k: usize, adjoint: bool) {
    if n == 0 || k == 0 {
        return;
    }
    let a = FRef::from_row_major_slice(lu, n, n);
    // A few right-hand sides do not pay for the pool: one column of a 512 x 512 system took
    // 0.1 ms longer on two threads than on one.
    let par = par_for(n * n * k / 16);
    let mut tmp = vec![T::zero(); n * k];
    if !adjoint {
        // P^T B, then L^{-1}, then U^{-1}.
        for (i, &p) in perm.iter().enumerate() {
            tmp[i * k..(i + 1) * k].copy_from_slice(&b[p * k..(p + 1) * k]);
        }
        let mut x = FMut::from_row_major_slice_mut(&mut tmp, n, k);
        tri::solve_unit_lower_triangular_in_place(a, x.as_mut(), par);
        tri::solve_upper_triangular_in_place(a, x.as_mut(), par);
        b.copy_from_slice(&tmp);
    } else {
        // A^T = U^T L^T P^T: U^{-T}, then L^{-T}, then P.
        let mut x = FMut::from_row_major_slice_mut(b, n, k);
        tri::solve_lower_triangular_in_place(a.transpose(), x.as_mut(), par);
        tri::solve_unit_upper_triangular_in_place(a.transpose(), x.as_mut(), par);
        for (i, &p) in perm.iter().enumerate() {
            tmp[p * k..(p + 1) * k].copy_from_slice(&b[i * k..(i + 1) * k]);
        }
        b.copy_from_slice(&tmp);
    }
}

/// `lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, bool unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)`
pub fn lu_unpack(
    lu: &Tensor,
    pivots: &Tensor,
    unpack_data: bool,
    unpack_pivots: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    let op = "lu_unpack";
    check_matrix(op, lu, "LU_data")?;
    check_pivots(op, lu, pivots)?;
    let (m, n) = rows_cols(lu);
    let k = m.min(n);
    let empty = || empty_like_dtype(lu, lu.dtype());
    let (l, u) = if unpack_data {
        let eye = ops::eye_m(m, k, Some(lu.dtype()), None, Some(lu.device()), None)?;
        let l = ops::add(&ops::tril(&ops::narrow(lu, -1, 0, k)?, -1)?, &eye, c10::Scalar::Int(1))?;
        let u = ops::triu(&ops::narrow(lu, -2, 0, k)?, 0)?;
        (l, u)
    } else {
        (empty()?, empty()?)
    };
    let p = if unpack_pivots {
        let (batch, count) = batch_of(lu, 2);
        let (mu, ku) = (m as usize, k as usize);
        check_batch(op, count, mu.saturating_mul(mu))?;
        let piv = pivots.to_vec::<i32>()?;
        let mut out = c10::size::try_vec_filled(0f64, count * mu * mu)?;
        for b in 0..if mu == 0 { 0 } else { count } {
            let perm = pivots_to_perm(&piv[b * ku..(b + 1) * ku], mu)?;
            // A = P L U with (P^T A)[i] = A[perm[i]]: P[perm[i], i] = 1.
            for (i, &r) in perm.iter().enumerate() {
                out[b * mu * mu + r * mu + i] = 1.0;
            }
        }
        // The permutation is built from the pivots on the host; it goes back to LU's device
        // (it was left on the CPU for CUDA inputs, which the OpInfo device run caught once
        // `eye` ran on CUDA).
        let p = Tensor::from_vec(out, &with_batch(&batch, &[m, m]))?;
        ops::_to_copy(&p, Some(lu.dtype()), None, Some(lu.device()), None, false, None)?
    } else {
        empty()?
    };
    Ok((p, l, u))
}

// ---------------------------------------------------------------------------------------------
// Triangular solves

/// `linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, bool unitriangular=False) -> Tensor`
pub fn linalg_solve_triangular(a: &Tensor, b: &Tensor, upper: bool, left: bool, unitriangular: bool) -> Result<Tensor> {
    let op = "linalg.solve_triangular";
    check_square(op, a, "A")?;
    check_matrix(op, b, "B")?;
    check_float(op, a)?;
    check_same_dtype(op, a, b, "A", "B")?;
    if !left {
        // X A = B  <=>  A^T X^T = B^T, and A^T is triangular on the other side.
        return mt(&linalg_solve_triangular(&mt(a)?, &mt(b)?, !upper, true, unitriangular)?);
    }
    let (batch, count, n, k) = left_system(op, a, b)?;
    let a_e = expand_to(a, &batch, 2)?;
    let b_e = expand_to(b, &batch, 2)?;
    let (nu, ku) = (n as usize, k as usize);
    float_kernel!(op, a.dtype(), T => {
        let ad = a_e.to_vec::<T>()?;
        let mut x = b_e.to_vec::<T>()?;
        if nu > 0 && ku > 0 {
            let par = par_for(nu * nu * ku);
            for i in 0..count {
                let t = FRef::from_row_major_slice(&ad[i * nu * nu..(i + 1) * nu * nu], nu, nu);
                let mut r = FMut::from_row_major_slice_mut(&mut x[i * nu * ku..(i + 1) * nu * ku], nu, ku);
                match (upper, unitriangular) {
                    (false, false) => tri::solve_lower_triangular_in_place(t, r.as_mut(), par),
                    (false, true) => tri::solve_unit_lower_triangular_in_place(t, r.as_mut(), par),
                    (true, false) => tri::solve_upper_triangular_in_place(t, r.as_mut(), par),
                    (true, true) => tri::solve_unit_upper_triangular_in_place(t, r.as_mut(), par),
                }
            }
        }
        Tensor::from_vec(x, &with_batch(&batch, &[n, k]))
    })
}

// ---------------------------------------------------------------------------------------------
// Cholesky

/// `linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)`
///
/// Reads the lower triangle of `A` (the upper one when `upper`), as LAPACK's `potrf` does.
pub fn linalg_cholesky_ex(a: &Tensor, upper: bool, check_errors: bool) -> Result<(Tensor, Tensor)> {
    let op = "linalg.cholesky";
    check_square(op, a, "A")?;
    check_float(op, a)?;
    let n = rows_cols(a).0 as usize;
    let (batch, count) = batch_of(a, 2);
    check_batch(op, count, n.saturating_mul(n))?;
    let mut info = c10::size::try_vec_filled(0i32, count)?;
    let l = float_kernel!(op, a.dtype(), T => {
        let data = a.to_vec::<T>()?;
        let mut out = vec![T::zero(); data.len()];
        for b in 0..if n == 0 { 0 } else { count } {
            let m = &data[b * n * n..(b + 1) * n * n];
            // The lower triangle of A, or of A^T (the upper triangle of A).
            let mat = Mat::from_fn(n, n, |i, j| if upper { m[j * n + i] } else { m[i * n + j] });
            let o = &mut out[b * n * n..(b + 1) * n * n];
            match mat.llt(faer::Side::Lower) {
                Ok(llt) => {
                    let l = llt.L();
                    for i in 0..n {
                        for j in 0..=i {
                            // U = L^T when `upper`.
                            if upper { o[j * n + i] = l[(i, j)] } else { o[i * n + j] = l[(i, j)] }
                        }
                    }
                }
                Err(faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index }) => {
                    info[b] = index as i32 + 1;
                }
            }
        }
        Tensor::from_vec(out, a.sizes())
    })?;
    if check_errors {
        if let Some((b, &i)) = info.iter().enumerate().find(|(_, &i)| i > 0) {
            let at = if count > 1 { format!("(Batch element {b}): ") } else { String::new() };
            return Err(Error::LinAlg {
                op: op.into(),
                msg: format!("{at}The factorization could not be completed because the input is not positive-definite (the leading minor of order {i} is not positive-definite)."),
            });
        }
    }
    Ok((l, Tensor::from_vec(info, &batch)?))
}

// ---------------------------------------------------------------------------------------------
// Householder QR (LAPACK's geqr2 / org2r / orm2r conventions)

/// Reduces row-major `a` (`m x n`) in place to R above the diagonal and the Householder
/// vectors below it, as `geqrf` does; `tau` gets the `min(m, n)` scalars.
fn geqrf_one<T: Real>(a: &mut [T], m: usize, n: usize, tau: &mut [T]) {
    for k in 0..m.min(n) {
        let alpha = a[k * n + k];
        let mut xnorm = T::zero();
        for i in k + 1..m {
            xnorm = xnorm.hypot(a[i * n + k]);
        }
        if xnorm == T::zero() {
            tau[k] = T::zero();
            continue;
        }
        let norm = alpha.hypot(xnorm);
        let beta = if alpha >= T::zero() { -norm } else { norm };
        tau[k] = (beta - alpha) / beta;
        let scale = T::one() / (alpha - beta);
        for i in k + 1..m {
            a[i * n + k] *= scale;
        }
        a[k * n + k] = beta;
        // A[k.., k+1..] -= tau v (v^T A[k.., k+1..]), v = [1; a[k+1.., k]].
        for j in k + 1..n {
            let mut s = a[k * n + j];
            for i in k + 1..m {
                s += a[i * n + k] * a[i * n + j];
            }
            s *= tau[k];
            a[k * n + j] -= s;
            for i in k + 1..m {
                a[i * n + j] -= s * a[i * n + k];
            }
        }
    }
}

/// Applies `H_0 H_1 ... H_{k-1}` (from the vectors below the diagonal of row-major `v`, `m x
/// vn`, and `tau`) to row-major `c` (`m x cn`) from the left, or its transpose when `transpose`.
fn apply_q_left<T: Real>(v: &[T], vn: usize, tau: &[T], c: &mut [T], m: usize, cn: usize, transpose: bool) {
    let k = tau.len();
    let mut apply = |r: usize| {
        let t = tau[r];
        if t == T::zero() {
            return;
        }
        for j in 0..cn {
            let mut s = c[r * cn + j];
            for i in r + 1..m {
                s += v[i * vn + r] * c[i * cn + j];
            }
            s *= t;
            c[r * cn + j] -= s;
            for i in r + 1..m {
                c[i * cn + j] -= s * v[i * vn + r];
            }
        }
    };
    if transpose {
        (0..k).for_each(&mut apply);
    } else {
        (0..k).rev().for_each(&mut apply);
    }
}

/// `geqrf(Tensor self) -> (Tensor a, Tensor tau)`
pub fn geqrf(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let op = "geqrf";
    check_matrix(op, a, "A")?;
    check_float(op, a)?;
    let (m, n) = rows_cols(a);
    let (batch, count) = batch_of(a, 2);
    let (mu, nu) = (m as usize, n as usize);
    let k = mu.min(nu);
    check_batch(op, count, mu.saturating_mul(nu))?;
    float_kernel!(op, a.dtype(), T => {
        let mut data = a.to_vec::<T>()?;
        let mut tau = c10::size::try_vec_filled(T::zero(), count * k)?;
        for b in 0..if mu * nu == 0 { 0 } else { count } {
            geqrf_one(&mut data[b * mu * nu..(b + 1) * mu * nu], mu, nu, &mut tau[b * k..(b + 1) * k]);
        }
        Ok((Tensor::from_vec(data, a.sizes())?, Tensor::from_vec(tau, &with_batch(&batch, &[k as i64]))?))
    })
}

/// `linalg_qr(Tensor A, str mode="reduced") -> (Tensor Q, Tensor R)`
pub fn linalg_qr(a: &Tensor, mode: &str) -> Result<(Tensor, Tensor)> {
    let op = "linalg.qr";
    check_matrix(op, a, "A")?;
    check_float(op, a)?;
    let (compute_q, complete) = match mode {
        "reduced" => (true, false),
        "complete" => (true, true),
        "r" => (false, false),
        other => {
            return Err(Error::invalid(
                op,
                format!(
                "qr received unrecognized mode '{other}' but expected one of 'reduced' (default), 'r', or 'complete'"
            ),
            ))
        }
    };
    let (m, n) = rows_cols(a);
    let (batch, count) = batch_of(a, 2);
    let (mu, nu) = (m as usize, n as usize);
    let k = mu.min(nu);
    let qn = if complete { mu } else { k };
    let rm = if complete { mu } else { k };
    check_batch(op, count, mu.max(nu).saturating_mul(mu.max(nu)))?;
    float_kernel!(op, a.dtype(), T => {
        let mut data = a.to_vec::<T>()?;
        let mut tau = vec![T::zero(); k];
        let mut q = c10::size::try_vec_filled(T::zero(), if compute_q { count * mu * qn } else { 0 })?;
        let mut r = c10::size::try_vec_filled(T::zero(), count * rm * nu)?;
        // Only batches with an output to write are visited (a batch of empty matrices can be
        // huge).
        let work = (compute_q && mu * qn > 0) || rm * nu > 0;
        for b in 0..if work { count } else { 0 } {
            let v = &mut data[b * mu * nu..(b + 1) * mu * nu];
            geqrf_one(v, mu, nu, &mut tau);
            let rb = &mut r[b * rm * nu..(b + 1) * rm * nu];
            for i in 0..k {
                for j in i..nu {
                    rb[i * nu + j] = v[i * nu + j];
                }
            }
            if compute_q {
                let qb = &mut q[b * mu * qn..(b + 1) * mu * qn];
                for i in 0..qn.min(mu) {
                    qb[i * qn + i] = T::one();
                }
                apply_q_left(v, nu, &tau, qb, mu, qn, false);
            }
        }
        let q = if compute_q {
            Tensor::from_vec(q, &with_batch(&batch, &[m, qn as i64]))?
        } else {
            empty_like_dtype(a, a.dtype())?
        };
        Ok((q, Tensor::from_vec(r, &with_batch(&batch, &[rm as i64, n]))?))
    })
}

// ---------------------------------------------------------------------------------------------
// Symmetric eigendecomposition and SVD

/// Flips each column of row-major `v` (`rows x cols`) whose entry of largest magnitude (the
/// first of equal magnitude) is negative, so that the result does not depend on the sign the
/// algorithm happened to produce. `also` (row-major, `cols x also_n`) gets the same flips on
/// its rows (the matching right singular vectors).
fn fix_signs<T: Real>(v: &mut [T], rows: usize, cols: usize, also: Option<(&mut [T], usize)>) {
    let mut flips = vec![false; cols];
    for (j, f) in flips.iter_mut().enumerate() {
        let mut best = T::zero();
        let mut sign = false;
        for i in 0..rows {
            let x = v[i * cols + j];
            if x.abs() > best {
                best = x.abs();
                sign = x < T::zero();
            }
        }
        *f = sign;
    }
    for i in 0..rows {
        for j in 0..cols {
            if flips[j] {
                v[i * cols + j] = -v[i * cols + j];
            }
        }
    }
    if let Some((w, wn)) = also {
        // A full SVD of a tall matrix has more columns of U than rows of Vh: the completion's
        // columns have no partner to flip with.
        let partners = w.len().checked_div(wn).unwrap_or(0);
        for (j, &f) in flips.iter().enumerate().take(partners) {
            if f {
                for x in &mut w[j * wn..(j + 1) * wn] {
                    *x = -*x;
                }
            }
        }
    }
}

/// `linalg_eigh(Tensor self, str UPLO="L") -> (Tensor eigenvalues, Tensor eigenvectors)`
pub fn linalg_eigh(a: &Tensor, uplo: &str) -> Result<(Tensor, Tensor)> {
    eigh_impl("linalg.eigh", a, uplo, true)
}

/// `linalg_eigvalsh(Tensor self, str UPLO="L") -> Tensor`
pub fn linalg_eigvalsh(a: &Tensor, uplo: &str) -> Result<Tensor> {
    Ok(eigh_impl("linalg.eigvalsh", a, uplo, false)?.0)
}

fn eigh_impl(op: &str, a: &Tensor, uplo: &str, vectors: bool) -> Result<(Tensor, Tensor)> {
    check_square(op, a, "A")?;
    check_float(op, a)?;
    let lower = match uplo {
        "L" | "l" => true,
        "U" | "u" => false,
        _ => return Err(Error::invalid(op, format!("Expected UPLO argument to be 'L' or 'U', but got {uplo}"))),
    };
    let n = rows_cols(a).0 as usize;
    let (batch, count) = batch_of(a, 2);
    check_batch(op, count, n.saturating_mul(n))?;
    float_kernel!(op, a.dtype(), T => {
        let data = a.to_vec::<T>()?;
        let mut w = c10::size::try_vec_filled(T::zero(), count * n)?;
        let mut v = c10::size::try_vec_filled(T::zero(), if vectors { count * n * n } else { 0 })?;
        for b in 0..if n == 0 { 0 } else { count } {
            let m = &data[b * n * n..(b + 1) * n * n];
            // The triangle UPLO names, mirrored: faer reads the lower one.
            let mat = Mat::from_fn(n, n, |i, j| {
                let (r, c) = if (i >= j) == lower { (i, j) } else { (j, i) };
                m[r * n + c]
            });
            let failed = || Error::invalid(op, "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues.");
            if vectors {
                let e = mat.self_adjoint_eigen(faer::Side::Lower).map_err(|_| failed())?;
                let s = e.S();
                for i in 0..n {
                    w[b * n + i] = s[i];
                }
                let vb = &mut v[b * n * n..(b + 1) * n * n];
                store(e.U(), vb);
                fix_signs(vb, n, n, None);
            } else {
                let s = mat.self_adjoint_eigenvalues(faer::Side::Lower).map_err(|_| failed())?;
                w[b * n..(b + 1) * n].copy_from_slice(&s);
            }
        }
        let w = Tensor::from_vec(w, &with_batch(&batch, &[n as i64]))?;
        let v = if vectors {
            Tensor::from_vec(v, a.sizes())?
        } else {
            empty_like_dtype(a, a.dtype())?
        };
        Ok((w, v))
    })
}

/// `_linalg_svd(Tensor A, bool full_matrices=False, bool compute_uv=True, *, str? driver=None) -> (Tensor U, Tensor S, Tensor Vh)`
pub fn _linalg_svd(
    a: &Tensor,
    full_matrices: bool,
    compute_uv: bool,
    driver: Option<&str>,
) -> Result<(Tensor, Tensor, Tensor)> {
    let op = "linalg.svd";
    check_matrix(op, a, "A")?;
    check_float(op, a)?;
    if driver.is_some() {
        return Err(Error::invalid(
            op,
            "keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend.",
        ));
    }
    let (m, n) = rows_cols(a);
    let (batch, count) = batch_of(a, 2);
    let (mu, nu) = (m as usize, n as usize);
    let k = mu.min(nu);
    let (uc, vr) = if full_matrices { (mu, nu) } else { (k, k) };
    check_batch(op, count, mu.max(nu).saturating_mul(mu.max(nu)))?;
    float_kernel!(op, a.dtype(), T => {
        let data = a.to_vec::<T>()?;
        let mut s = c10::size::try_vec_filled(T::zero(), count * k)?;
        let mut u = c10::size::try_vec_filled(T::zero(), if compute_uv { count * mu * uc } else { 0 })?;
        let mut vh = c10::size::try_vec_filled(T::zero(), if compute_uv { count * vr * nu } else { 0 })?;
        let failed = || Error::invalid(op, "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated singular values.");
        let work = k > 0 || (compute_uv && full_matrices && mu + nu > 0);
        for b in 0..if work { count } else { 0 } {
            if k == 0 {
                // No singular values; U and Vh of a full SVD are identities.
                if compute_uv && full_matrices {
                    for i in 0..mu { u[b * mu * uc + i * uc + i] = T::one(); }
                    for i in 0..nu { vh[b * vr * nu + i * nu + i] = T::one(); }
                }
                continue;
            }
            let mat = to_mat(&data[b * mu * nu..(b + 1) * mu * nu], mu, nu);
            if compute_uv {
                let svd = if full_matrices { mat.svd() } else { mat.thin_svd() }.map_err(|_| failed())?;
                let d = svd.S();
                for i in 0..k {
                    s[b * k + i] = d[i];
                }
                let ub = &mut u[b * mu * uc..(b + 1) * mu * uc];
                store(svd.U(), ub);
                let vb = &mut vh[b * vr * nu..(b + 1) * vr * nu];
                store(svd.V().transpose(), vb);
                fix_signs(ub, mu, uc, Some((vb, nu)));
            } else {
                let d = mat.singular_values().map_err(|_| failed())?;
                s[b * k..(b + 1) * k].copy_from_slice(&d);
            }
        }
        let empty = || empty_like_dtype(a, a.dtype());
        let s = Tensor::from_vec(s, &with_batch(&batch, &[k as i64]))?;
        if compute_uv {
            Ok((
                Tensor::from_vec(u, &with_batch(&batch, &[m, uc as i64]))?,
                s,
                Tensor::from_vec(vh, &with_batch(&batch, &[vr as i64, n]))?,
            ))
        } else {
            Ok((empty()?, s, empty()?))
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Composites (CompositeImplicitAutograd): differentiated through the kernels above.

fn int(v: i64) -> c10::Scalar {
    c10::Scalar::Int(v)
}

fn float(v: f64) -> c10::Scalar {
    c10::Scalar::Float(v)
}

/// `t` without its autograd history (same storage): values the result does not differentiate
/// through (signs, tolerances, scalings).
fn detached(t: &Tensor) -> Tensor {
    let imp = t.imp();
    let sizes = c10::tensor_impl::DimVec::from_slice(imp.sizes());
    let strides = c10::tensor_impl::DimVec::from_slice(imp.strides());
    Tensor::from_impl(imp.view_of(sizes, strides, imp.storage_offset()))
}

fn requires_grad(t: &Tensor) -> bool {
    t.imp().autograd_meta().is_some_and(|m| m.requires_grad())
}

fn empty_like_dtype(t: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    ops::empty(&[0], Some(dtype), None, Some(t.device()), None, None)
}

fn eps(dtype: ScalarType) -> f64 {
    if dtype == ScalarType::F32 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    }
}

/// An identity batch shaped like the square matrices of `a`.
fn identity_like(a: &Tensor) -> Result<Tensor> {
    let n = rows_cols(a).1;
    let eye = ops::eye(n, Some(a.dtype()), None, Some(a.device()), None)?;
    let s = a.sizes();
    ops::expand(&eye, &with_batch(&s[..s.len() - 2], &[n, n]), false)
}

/// `linalg_lu_factor(Tensor A, *, bool pivot=True) -> (Tensor LU, Tensor pivots)`
pub fn linalg_lu_factor(a: &Tensor, pivot: bool) -> Result<(Tensor, Tensor)> {
    let (lu, piv, _) = crate::ops::linalg_lu_factor_ex(a, pivot, false)?;
    Ok((lu, piv))
}

/// `_lu_with_info(Tensor self, bool pivot=True, bool check_errors=True) -> (Tensor LU, Tensor pivots, Tensor info)`
pub fn _lu_with_info(a: &Tensor, pivot: bool, check_errors: bool) -> Result<(Tensor, Tensor, Tensor)> {
    crate::ops::linalg_lu_factor_ex(a, pivot, check_errors)
}

/// `linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor P, Tensor L, Tensor U)`
pub fn linalg_lu(a: &Tensor, pivot: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let (lu, piv, _) = crate::ops::linalg_lu_factor_ex(a, pivot, false)?;
    crate::ops::lu_unpack(&lu, &piv, true, true)
}

/// `lu_solve(Tensor self, Tensor LU_data, Tensor LU_pivots) -> Tensor`
pub fn lu_solve(b: &Tensor, lu: &Tensor, pivots: &Tensor) -> Result<Tensor> {
    crate::ops::linalg_lu_solve(lu, pivots, b, true, false)
}

/// Whether `B` is a (batch of) vector(s) for `A` in `linalg.solve` (PyTorch's rule: `B` is 1-D,
/// or has one dimension fewer than `A` and `A`'s leading sizes).
fn rhs_is_vector(a: &Tensor, b: &Tensor) -> bool {
    b.dim() == 1 || (b.dim() + 1 == a.dim() && b.sizes() == &a.sizes()[..a.dim() - 1])
}

/// `linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) -> (Tensor result, Tensor info)`
pub fn linalg_solve_ex(a: &Tensor, b: &Tensor, left: bool, check_errors: bool) -> Result<(Tensor, Tensor)> {
    let op = "linalg.solve";
    check_square(op, a, "A")?;
    check_float(op, a)?;
    check_same_dtype(op, a, b, "A", "B")?;
    let vector = rhs_is_vector(a, b);
    if b.dim() < 1 || (!vector && b.dim() < 2) {
        return Err(Error::shape(op, "The input tensor B must have at least 1 dimension."));
    }
    let bm = if vector { ops::unsqueeze(b, if left { -1 } else { -2 })? } else { b.clone() };
    if left {
        // The shapes are checked before A is factored, under this function's name.
        left_system(op, a, &bm)?;
    }
    let (lu, piv, info) = crate::ops::linalg_lu_factor_ex(a, true, false)?;
    if check_errors {
        singular_error(op, &info, |_| "The solver failed because the input matrix is singular.".to_string())?;
    }
    let x = crate::ops::linalg_lu_solve(&lu, &piv, &bm, left, false)?;
    let x = if vector { ops::squeeze_dim(&x, if left { -1 } else { -2 })? } else { x };
    Ok((x, info))
}

fn singular_error(op: &str, info: &Tensor, msg: impl Fn(i32) -> String) -> Result<()> {
    let v = info.to_vec::<i32>()?;
    if let Some((b, &i)) = v.iter().enumerate().find(|(_, &i)| i > 0) {
        let at = if info.dim() > 0 { format!("(Batch element {b}): ") } else { String::new() };
        return Err(Error::LinAlg { op: op.into(), msg: format!("{at}{}", msg(i)) });
    }
    Ok(())
}

/// `linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor`
pub fn linalg_solve(a: &Tensor, b: &Tensor, left: bool) -> Result<Tensor> {
    Ok(crate::ops::linalg_solve_ex(a, b, left, true)?.0)
}

/// `linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)`
pub fn linalg_inv_ex(a: &Tensor, check_errors: bool) -> Result<(Tensor, Tensor)> {
    let op = "linalg.inv";
    check_square(op, a, "A")?;
    check_float(op, a)?;
    let (lu, piv, info) = crate::ops::linalg_lu_factor_ex(a, true, false)?;
    if check_errors {
        singular_error(op, &info, |i| {
            format!("The diagonal element {i} is zero, the inversion could not be completed because the input matrix is singular.")
        })?;
    }
    Ok((crate::ops::linalg_lu_solve(&lu, &piv, &identity_like(a)?, true, false)?, info))
}

/// `linalg_inv(Tensor A) -> Tensor`
pub fn linalg_inv(a: &Tensor) -> Result<Tensor> {
    Ok(crate::ops::linalg_inv_ex(a, true)?.0)
}

/// `inverse(Tensor self) -> Tensor`
pub fn inverse(a: &Tensor) -> Result<Tensor> {
    crate::ops::linalg_inv(a)
}

/// The sign of the row permutation of LAPACK pivots, as a tensor of `dtype` (batch shape).
fn pivots_sign(piv: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    let k = piv.sizes()[piv.dim() - 1].max(0) as usize;
    let v = piv.to_vec::<i32>()?;
    let signs: Vec<f64> = if k == 0 {
        vec![1.0; batch_of(piv, 1).1]
    } else {
        v.chunks(k)
            .map(|c| {
                let swaps = c.iter().enumerate().filter(|(i, &p)| p as usize != i + 1).count();
                if swaps % 2 == 0 {
                    1.0
                } else {
                    -1.0
                }
            })
            .collect()
    };
    let s = piv.sizes();
    ops::to(&Tensor::from_vec(signs, &s[..s.len() - 1])?, dtype, false, false, None)
}

/// `linalg_det(Tensor A) -> Tensor`
pub fn linalg_det(a: &Tensor) -> Result<Tensor> {
    let op = "linalg.det";
    check_square(op, a, "A")?;
    check_float(op, a)?;
    let (lu, piv, _) = crate::ops::linalg_lu_factor_ex(a, true, false)?;
    let diag = ops::diagonal(&lu, 0, -2, -1)?;
    ops::mul(&ops::prod(&diag, -1, false, None)?, &pivots_sign(&piv, a.dtype())?)
}

/// `det(Tensor self) -> Tensor`
pub fn det(a: &Tensor) -> Result<Tensor> {
    crate::ops::linalg_det(a)
}

/// `linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)`
pub fn linalg_slogdet(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let op = "linalg.slogdet";
    check_square(op, a, "A")?;
    check_float(op, a)?;
    let (lu, piv, _) = crate::ops::linalg_lu_factor_ex(a, true, false)?;
    let diag = ops::diagonal(&lu, 0, -2, -1)?;
    let sign = ops::mul(&ops::prod(&ops::sign(&detached(&diag))?, -1, false, None)?, &pivots_sign(&piv, a.dtype())?)?;
    let logabs = ops::sum_dim_intlist(&ops::log(&ops::abs(&diag)?)?, Some(&[-1]), false, None)?;
    Ok((sign, logabs))
}

/// `slogdet(Tensor self) -> (Tensor sign, Tensor logabsdet)`
pub fn slogdet(a: &Tensor) -> Result<(Tensor, Tensor)> {
    crate::ops::linalg_slogdet(a)
}

/// `logdet(Tensor self) -> Tensor`: `log(det(A))`, NaN for a negative determinant.
pub fn logdet(a: &Tensor) -> Result<Tensor> {
    let (sign, logabs) = crate::ops::linalg_slogdet(a)?;
    ops::masked_fill(&logabs, &ops::lt_scalar(&sign, int(0))?, float(f64::NAN))
}

/// `linalg_cholesky(Tensor self, *, bool upper=False) -> Tensor`
pub fn linalg_cholesky(a: &Tensor, upper: bool) -> Result<Tensor> {
    Ok(crate::ops::linalg_cholesky_ex(a, upper, true)?.0)
}

/// `L L^T` (or `U^T U`): the matrix a Cholesky factor factors.
fn from_cholesky(l: &Tensor, upper: bool) -> Result<Tensor> {
    if upper {
        ops::matmul(&mt(l)?, l)
    } else {
        ops::matmul(l, &mt(l)?)
    }
}

/// `cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor`
///
/// Solved as `(L L^T) X = B`, so its derivative for `L` is PyTorch's `-(gB X^T + X gB^T) L`
/// (not restricted to the triangle).
pub fn cholesky_solve(b: &Tensor, l: &Tensor, upper: bool) -> Result<Tensor> {
    let op = "cholesky_solve";
    check_square(op, l, "A")?;
    check_matrix(op, b, "B")?;
    check_same_dtype(op, b, l, "self", "A")?;
    // See Note [Composites standing in for native kernels].
    let _native = crate::autocast::below_autocast();
    crate::ops::linalg_solve(&from_cholesky(l, upper)?, b, true)
}

/// `cholesky_inverse(Tensor self, bool upper=False) -> Tensor`
pub fn cholesky_inverse(l: &Tensor, upper: bool) -> Result<Tensor> {
    check_square("cholesky_inverse", l, "A")?;
    // See Note [Composites standing in for native kernels].
    let _native = crate::autocast::below_autocast();
    crate::ops::linalg_inv(&from_cholesky(l, upper)?)
}

/// `triangular_solve(Tensor self, Tensor A, bool upper=True, bool transpose=False, bool unitriangular=False) -> (Tensor solution, Tensor cloned_coefficient)`
pub fn triangular_solve(
    b: &Tensor,
    a: &Tensor,
    upper: bool,
    transpose: bool,
    unitriangular: bool,
) -> Result<(Tensor, Tensor)> {
    let op = "triangular_solve";
    check_matrix(op, b, "self")?;
    check_square(op, a, "A")?;
    let at = if transpose { mt(a)? } else { a.clone() };
    let x = crate::ops::linalg_solve_triangular(&at, b, upper != transpose, true, unitriangular)?;
    let batch = broadcast_batch(op, &batch_of(a, 2).0, &batch_of(b, 2).0)?;
    let coeff = ops::clone(&expand_to(a, &batch, 2)?, None)?;
    Ok((x, coeff))
}

/// The Householder vectors of `v` (`m x k`): unit diagonal, zero above it.
fn householder_vectors(v: &Tensor, k: i64) -> Result<Tensor> {
    let m = rows_cols(v).0;
    let vk = ops::narrow(v, -1, 0, k)?;
    let eye = ops::eye_m(m, k, Some(v.dtype()), None, Some(v.device()), None)?;
    ops::add(&ops::tril(&vk, -1)?, &eye, int(1))
}

fn check_householder(op: &str, v: &Tensor, tau: &Tensor) -> Result<()> {
    check_matrix(op, v, "input")?;
    check_float(op, v)?;
    check_same_dtype(op, v, tau, "input", "tau")?;
    if tau.dim() + 1 != v.dim() {
        return Err(Error::shape(
            op,
            format!("input.dim() - tau.dim() must be equal to 1 but got {}", v.dim() as i64 - tau.dim() as i64),
        ));
    }
    Ok(())
}

/// `linalg_householder_product(Tensor input, Tensor tau) -> Tensor`: the first `n` columns of
/// `H_0 ... H_{k-1}`, `H_i = I - tau_i v_i v_i^T` (LAPACK's `orgqr`).
pub fn linalg_householder_product(v: &Tensor, tau: &Tensor) -> Result<Tensor> {
    let op = "linalg.householder_product";
    check_householder(op, v, tau)?;
    let (m, n) = rows_cols(v);
    let k = tau.sizes()[tau.dim() - 1];
    if m < n {
        return Err(Error::shape(op, "input.shape[-2] must be greater than or equal to input.shape[-1]"));
    }
    if n < k {
        return Err(Error::shape(op, "input.shape[-1] must be greater than or equal to tau.shape[-1]"));
    }
    let s = v.sizes();
    let eye = ops::eye_m(m, n, Some(v.dtype()), None, Some(v.device()), None)?;
    let q = ops::clone(&ops::expand(&eye, &with_batch(&s[..s.len() - 2], &[m, n]), false)?, None)?;
    apply_reflectors(&householder_vectors(v, k)?, tau, q, true, false)
}

/// `orgqr(Tensor self, Tensor input2) -> Tensor`
pub fn orgqr(v: &Tensor, tau: &Tensor) -> Result<Tensor> {
    crate::ops::linalg_householder_product(v, tau)
}

/// `Q C`, `Q^T C`, `C Q` or `C Q^T` for `Q = H_0 ... H_{k-1}` with the Householder vectors
/// `vs` (columns) and scalars `tau`, one reflection at a time.
fn apply_reflectors(vs: &Tensor, tau: &Tensor, mut c: Tensor, left: bool, transpose: bool) -> Result<Tensor> {
    let k = rows_cols(vs).1;
    // Left: Q C applies H_{k-1} first; Q^T C applies H_0 first. Right: C Q applies H_0 first.
    let forward = left == transpose;
    for step in 0..k {
        let i = if forward { step } else { k - 1 - step };
        let v = ops::narrow(vs, -1, i, 1)?; // (.., m, 1)
        let t = ops::unsqueeze(&ops::narrow(tau, -1, i, 1)?, -1)?; // (.., 1, 1)
        c = if left {
            ops::sub(&c, &ops::mul(&t, &ops::matmul(&v, &ops::matmul(&mt(&v)?, &c)?)?)?, int(1))?
        } else {
            ops::sub(&c, &ops::mul(&t, &ops::matmul(&ops::matmul(&c, &v)?, &mt(&v)?)?)?, int(1))?
        };
    }
    Ok(c)
}

/// `ormqr(Tensor self, Tensor input2, Tensor input3, bool left=True, bool transpose=False) -> Tensor`
pub fn ormqr(v: &Tensor, tau: &Tensor, c: &Tensor, left: bool, transpose: bool) -> Result<Tensor> {
    let op = "ormqr";
    check_householder(op, v, tau)?;
    check_matrix(op, c, "other")?;
    check_same_dtype(op, v, c, "input", "other")?;
    let mn = if left { rows_cols(c).0 } else { rows_cols(c).1 };
    if rows_cols(v).0 != mn {
        return Err(Error::shape(
            op,
            format!(
                "input.shape[-2] must be equal to other.shape[{}], but got {} and {mn}",
                if left { -2 } else { -1 },
                rows_cols(v).0
            ),
        ));
    }
    let k = tau.sizes()[tau.dim() - 1];
    if k > rows_cols(v).1 {
        return Err(Error::shape(op, "tau.shape[-1] must be less than or equal to input.shape[-1]"));
    }
    apply_reflectors(&householder_vectors(v, k)?, tau, c.clone(), left, transpose)
}

/// `linalg_svd(Tensor A, bool full_matrices=True, *, str? driver=None) -> (Tensor U, Tensor S, Tensor Vh)`
pub fn linalg_svd(a: &Tensor, full_matrices: bool, driver: Option<&str>) -> Result<(Tensor, Tensor, Tensor)> {
    crate::ops::_linalg_svd(a, full_matrices, true, driver)
}

/// `svd(Tensor self, bool some=True, bool compute_uv=True) -> (Tensor U, Tensor S, Tensor V)`
pub fn svd(a: &Tensor, some: bool, compute_uv: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let (u, s, vh) = crate::ops::_linalg_svd(a, !some, true, None)?;
    if compute_uv {
        return Ok((u, s, mt(&vh)?));
    }
    Ok((
        ops::zeros_like(&u, None, None, None, None, None)?,
        s,
        ops::zeros_like(&mt(&vh)?, None, None, None, None, None)?,
    ))
}

/// `linalg_svdvals(Tensor A, *, str? driver=None) -> Tensor`
pub fn linalg_svdvals(a: &Tensor, driver: Option<&str>) -> Result<Tensor> {
    // The vectors only when a gradient will need them (PyTorch does the same).
    Ok(crate::ops::_linalg_svd(a, false, requires_grad(a), driver)?.1)
}

/// `linalg_eigvalsh` differentiated through `linalg_eigh` (its derivative needs the vectors).
/// Off the CPU it goes through the dispatcher too: the CPU kernel below never sees device
/// memory (a device without `linalg_eigh` is the dispatcher's error).
pub fn linalg_eigvalsh_composite(a: &Tensor, uplo: &str) -> Result<Tensor> {
    if requires_grad(a) || !a.device().is_cpu() {
        Ok(crate::ops::linalg_eigh(a, uplo)?.0)
    } else {
        linalg_eigvalsh(a, uplo)
    }
}

/// PyTorch's default relative tolerance for rank decisions: `eps * max(m, n)` when neither
/// tolerance is given, 0 when only `atol` is.
fn default_rtol(a: &Tensor, atol_given: bool) -> f64 {
    if atol_given {
        0.0
    } else {
        let (m, n) = rows_cols(a);
        eps(a.dtype()) * m.max(n) as f64
    }
}

/// The singular values of `a` (descending), or the absolute eigenvalues when `hermitian`.
fn spectrum(a: &Tensor, hermitian: bool) -> Result<Tensor> {
    if hermitian {
        ops::abs(&linalg_eigvalsh_composite(a, "L")?)
    } else {
        crate::ops::linalg_svdvals(a, None)
    }
}

/// `max(atol, rtol * largest)` per matrix, shaped to broadcast against the spectrum.
fn tolerance(a: &Tensor, s: &Tensor, atol: Option<&Tensor>, rtol: Option<&Tensor>) -> Result<Tensor> {
    let largest = if s.sizes()[s.dim() - 1] == 0 {
        ops::zeros(&s.sizes()[..s.dim() - 1], Some(s.dtype()), None, Some(s.device()), None)?
    } else {
        ops::amax(s, &[-1], false)?
    };
    let rtol = match rtol {
        Some(r) => r.clone(),
        None => ops::full(&[], float(default_rtol(a, atol.is_some())), Some(s.dtype()), None, Some(s.device()), None)?,
    };
    let mut tol = ops::mul(&rtol, &largest)?;
    if let Some(atol) = atol {
        tol = ops::maximum(atol, &tol)?;
    }
    ops::unsqueeze(&tol, -1)
}

fn scalar_tensor(a: &Tensor, v: Option<f64>) -> Result<Option<Tensor>> {
    v.map(|v| ops::full(&[], float(v), Some(a.dtype()), None, Some(a.device()), None)).transpose()
}

/// `linalg_pinv.atol_rtol_tensor(Tensor self, *, Tensor? atol=None, Tensor? rtol=None, bool hermitian=False) -> Tensor`
pub fn linalg_pinv_atol_rtol_tensor(
    a: &Tensor,
    atol: Option<&Tensor>,
    rtol: Option<&Tensor>,
    hermitian: bool,
) -> Result<Tensor> {
    let op = "linalg.pinv";
    check_matrix(op, a, "A")?;
    check_float(op, a)?;
    // Note: the eigendecomposition reads one triangle, so the derivative is that of a function
    // of the symmetric matrix; PyTorch's `pinv_backward` differentiates the general formula
    // instead (the two agree on symmetric directions only).
    if hermitian {
        let (w, v) = crate::ops::linalg_eigh(a, "L")?;
        let absw = ops::abs(&w)?;
        let tol = tolerance(a, &detached(&absw), atol, rtol)?;
        let keep = ops::gt(&absw, &tol)?;
        let inv = ops::where_self(&keep, &ops::reciprocal(&w)?, &ops::zeros_like(&w, None, None, None, None, None)?)?;
        return ops::matmul(&ops::mul(&v, &ops::unsqueeze(&inv, -2)?)?, &mt(&v)?);
    }
    let (u, s, vh) = crate::ops::_linalg_svd(a, false, true, None)?;
    let tol = tolerance(a, &detached(&s), atol, rtol)?;
    let keep = ops::gt(&s, &tol)?;
    let inv = ops::where_self(&keep, &ops::reciprocal(&s)?, &ops::zeros_like(&s, None, None, None, None, None)?)?;
    ops::matmul(&ops::mul(&mt(&vh)?, &ops::unsqueeze(&inv, -2)?)?, &mt(&u)?)
}

/// `linalg_pinv.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor`
pub fn linalg_pinv_atol_rtol_float(
    a: &Tensor,
    atol: Option<f64>,
    rtol: Option<f64>,
    hermitian: bool,
) -> Result<Tensor> {
    let (at, rt) = (scalar_tensor(a, atol)?, scalar_tensor(a, rtol)?);
    linalg_pinv_atol_rtol_tensor(a, at.as_ref(), rt.as_ref(), hermitian)
}

/// `linalg_pinv(Tensor self, float rcond, bool hermitian=False) -> Tensor`
pub fn linalg_pinv(a: &Tensor, rcond: f64, hermitian: bool) -> Result<Tensor> {
    linalg_pinv_atol_rtol_float(a, Some(0.0), Some(rcond), hermitian)
}

/// `linalg_pinv.rcond_tensor(Tensor self, Tensor rcond, bool hermitian=False) -> Tensor`
pub fn linalg_pinv_rcond_tensor(a: &Tensor, rcond: &Tensor, hermitian: bool) -> Result<Tensor> {
    let zero = ops::zeros(&[], Some(a.dtype()), None, Some(a.device()), None)?;
    linalg_pinv_atol_rtol_tensor(a, Some(&zero), Some(rcond), hermitian)
}

/// `pinverse(Tensor self, float rcond=1e-15) -> Tensor`
pub fn pinverse(a: &Tensor, rcond: f64) -> Result<Tensor> {
    linalg_pinv(a, rcond, false)
}

/// `linalg_matrix_rank.atol_rtol_tensor(Tensor input, *, Tensor? atol=None, Tensor? rtol=None, bool hermitian=False) -> Tensor`
pub fn linalg_matrix_rank_atol_rtol_tensor(
    a: &Tensor,
    atol: Option<&Tensor>,
    rtol: Option<&Tensor>,
    hermitian: bool,
) -> Result<Tensor> {
    let op = "linalg.matrix_rank";
    check_matrix(op, a, "A")?;
    check_float(op, a)?;
    let s = spectrum(&detached(a), hermitian)?;
    let tol = tolerance(a, &s, atol, rtol)?;
    ops::sum_dim_intlist(&ops::gt(&s, &tol)?, Some(&[-1]), false, Some(ScalarType::I64))
}

/// `linalg_matrix_rank.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor`
pub fn linalg_matrix_rank_atol_rtol_float(
    a: &Tensor,
    atol: Option<f64>,
    rtol: Option<f64>,
    hermitian: bool,
) -> Result<Tensor> {
    let (at, rt) = (scalar_tensor(a, atol)?, scalar_tensor(a, rtol)?);
    linalg_matrix_rank_atol_rtol_tensor(a, at.as_ref(), rt.as_ref(), hermitian)
}

/// `linalg_matrix_rank(Tensor self, float tol, bool hermitian=False) -> Tensor`
pub fn linalg_matrix_rank(a: &Tensor, tol: f64, hermitian: bool) -> Result<Tensor> {
    linalg_matrix_rank_atol_rtol_float(a, Some(tol), Some(0.0), hermitian)
}

/// `linalg_matrix_rank.tol_tensor(Tensor input, Tensor tol, bool hermitian=False) -> Tensor`
pub fn linalg_matrix_rank_tol_tensor(a: &Tensor, tol: &Tensor, hermitian: bool) -> Result<Tensor> {
    let zero = ops::zeros(&[], Some(a.dtype()), None, Some(a.device()), None)?;
    linalg_matrix_rank_atol_rtol_tensor(a, Some(tol), Some(&zero), hermitian)
}

/// The two matrix dimensions of `dim`, wrapped and distinct.
fn matrix_dims(op: &str, a: &Tensor, dim: &[i64]) -> Result<(i64, i64)> {
    if dim.len() != 2 {
        return Err(Error::invalid(op, format!("dim must be a 2-tuple. Got {dim:?}")));
    }
    let nd = a.dim() as i64;
    let wrap = |d: i64| -> Result<i64> {
        let w = if d < 0 { d + nd } else { d };
        if w < 0 || w >= nd {
            return Err(Error::invalid(
                op,
                format!("Dimension out of range (expected to be in range of [{}, {}], but got {d})", -nd, nd - 1),
            ));
        }
        Ok(w)
    };
    let (d0, d1) = (wrap(dim[0])?, wrap(dim[1])?);
    if d0 == d1 {
        return Err(Error::invalid(op, format!("dims must be different. Got ({}, {})", dim[0], dim[1])));
    }
    Ok((d0, d1))
}

fn norm_input(a: &Tensor, dtype: Option<ScalarType>) -> Result<Tensor> {
    match dtype {
        Some(d) if d != a.dtype() => ops::to(a, d, false, false, None),
        _ => Ok(a.clone()),
    }
}

/// `linalg_matrix_norm(Tensor self, Scalar ord, int[] dim=[-2,-1], bool keepdim=False, *, ScalarType? dtype=None) -> Tensor`
pub fn linalg_matrix_norm(
    a: &Tensor,
    ord: c10::Scalar,
    dim: &[i64],
    keepdim: bool,
    dtype: Option<ScalarType>,
) -> Result<Tensor> {
    let op = "linalg.matrix_norm";
    check_matrix(op, a, "A")?;
    check_float(op, a)?;
    let (d0, d1) = matrix_dims(op, a, dim)?;
    let a = norm_input(a, dtype)?;
    let o = ord.to_f64();
    let abs_o = o.abs();
    if abs_o == 2.0 {
        let moved = ops::movedim(&a, &[d0, d1], &[-2, -1])?;
        let s = crate::ops::linalg_svdvals(&moved, None)?;
        let r = if o > 0.0 { ops::amax(&s, &[-1], false)? } else { ops::amin(&s, &[-1], false)? };
        return if keepdim { ops::unsqueeze(&ops::unsqueeze(&r, d0.min(d1))?, d0.max(d1)) } else { Ok(r) };
    }
    if abs_o == 1.0 || abs_o == f64::INFINITY {
        // 1: the largest column sum; inf: the largest row sum (of absolute values).
        let (sum_dim, max_dim) = if abs_o == 1.0 { (d0, d1) } else { (d1, d0) };
        let sums = ops::sum_dim_intlist(&ops::abs(&a)?, Some(&[sum_dim]), true, None)?;
        let r = if o > 0.0 { ops::amax(&sums, &[max_dim], true)? } else { ops::amin(&sums, &[max_dim], true)? };
        return if keepdim { Ok(r) } else { ops::squeeze_dims(&r, &[d0, d1]) };
    }
    Err(Error::invalid(op, format!("Order {o} not supported.")))
}

/// `linalg_matrix_norm.str_ord(Tensor self, str ord="fro", int[] dim=[-2,-1], bool keepdim=False, *, ScalarType? dtype=None) -> Tensor`
pub fn linalg_matrix_norm_str_ord(
    a: &Tensor,
    ord: &str,
    dim: &[i64],
    keepdim: bool,
    dtype: Option<ScalarType>,
) -> Result<Tensor> {
    let op = "linalg.matrix_norm";
    check_matrix(op, a, "A")?;
    let (d0, d1) = matrix_dims(op, a, dim)?;
    match ord {
        "fro" => crate::ops::linalg_vector_norm(a, float(2.0), Some(&[d0, d1]), keepdim, dtype),
        "nuc" => {
            check_float(op, a)?;
            let a = norm_input(a, dtype)?;
            let moved = ops::movedim(&a, &[d0, d1], &[-2, -1])?;
            let r = ops::sum_dim_intlist(&crate::ops::linalg_svdvals(&moved, None)?, Some(&[-1]), false, None)?;
            if keepdim {
                ops::unsqueeze(&ops::unsqueeze(&r, d0.min(d1))?, d0.max(d1))
            } else {
                Ok(r)
            }
        }
        other => Err(Error::invalid(op, format!("Order {other} not supported."))),
    }
}

/// `linalg_norm(Tensor self, Scalar? ord=None, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor`
pub fn linalg_norm(
    a: &Tensor,
    ord: Option<c10::Scalar>,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<ScalarType>,
) -> Result<Tensor> {
    let op = "linalg.norm";
    if let Some(d) = dim {
        if d.len() != 1 && d.len() != 2 {
            return Err(Error::invalid(op, format!("If dim is specified, it must be of length 1 or 2. Got {d:?}")));
        }
    } else if ord.is_some() && a.dim() != 1 && a.dim() != 2 {
        return Err(Error::invalid(
            op,
            format!("If dim is not specified but ord is, the input must be 1D or 2D. Got {}D.", a.dim()),
        ));
    }
    let matrix = dim.map_or(ord.is_some() && a.dim() == 2, |d| d.len() == 2);
    match (ord, matrix) {
        (Some(o), true) => linalg_matrix_norm(a, o, dim.unwrap_or(&[-2, -1]), keepdim, dtype),
        (None, true) => crate::ops::linalg_vector_norm(a, float(2.0), dim, keepdim, dtype),
        (o, false) => crate::ops::linalg_vector_norm(a, o.unwrap_or(float(2.0)), dim, keepdim, dtype),
    }
}

/// `linalg_norm.ord_str(Tensor self, str ord, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor`
pub fn linalg_norm_ord_str(
    a: &Tensor,
    ord: &str,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<ScalarType>,
) -> Result<Tensor> {
    let op = "linalg.norm";
    if let Some(d) = dim {
        if d.len() != 2 {
            return Err(Error::invalid(op, format!("If dim is specified, it mut be of length 1 or 2. Got {d:?}")));
        }
    } else if a.dim() != 2 {
        return Err(Error::invalid(
            op,
            format!("If dim is not specified but ord is, the input must be 1D or 2D. Got {}D.", a.dim()),
        ));
    }
    linalg_matrix_norm_str_ord(a, ord, dim.unwrap_or(&[-2, -1]), keepdim, dtype)
}

/// `linalg_cond(Tensor self, Scalar? p=None) -> Tensor`
pub fn linalg_cond(a: &Tensor, p: Option<c10::Scalar>) -> Result<Tensor> {
    let op = "linalg.cond";
    check_matrix(op, a, "A")?;
    check_float(op, a)?;
    let o = p.as_ref().map_or(2.0, |p| p.to_f64());
    if o.abs() == 2.0 {
        let s = crate::ops::linalg_svdvals(a, None)?;
        if s.sizes()[s.dim() - 1] == 0 {
            return ops::zeros(&s.sizes()[..s.dim() - 1], Some(a.dtype()), None, Some(a.device()), None);
        }
        let (hi, lo) = (ops::amax(&s, &[-1], false)?, ops::amin(&s, &[-1], false)?);
        return if o > 0.0 { ops::div(&hi, &lo) } else { ops::div(&lo, &hi) };
    }
    check_square(op, a, "A")?;
    cond_through_inverse(a, |x| linalg_matrix_norm(x, float(o), &[-2, -1], false, None))
}

/// `norm(A) * norm(inv(A))`, infinite for singular matrices (PyTorch's convention).
fn cond_through_inverse(a: &Tensor, norm: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    if rows_cols(a).0 == 0 {
        return ops::zeros(&a.sizes()[..a.dim() - 2], Some(a.dtype()), None, Some(a.device()), None);
    }
    let (inv, info) = crate::ops::linalg_inv_ex(a, false)?;
    let r = ops::mul(&norm(a)?, &norm(&inv)?)?;
    ops::masked_fill(&r, &ops::gt_scalar(&info, int(0))?, float(f64::INFINITY))
}

/// `linalg_cond.p_str(Tensor self, str p) -> Tensor`
pub fn linalg_cond_p_str(a: &Tensor, p: &str) -> Result<Tensor> {
    let op = "linalg.cond";
    check_square(op, a, "A")?;
    check_float(op, a)?;
    cond_through_inverse(a, |x| linalg_matrix_norm_str_ord(x, p, &[-2, -1], false, None))
}

/// `linalg_tensorinv(Tensor self, int ind=2) -> Tensor`
pub fn linalg_tensorinv(a: &Tensor, ind: i64) -> Result<Tensor> {
    let op = "linalg.tensorinv";
    if ind <= 0 {
        return Err(Error::invalid(op, format!("Expected a strictly positive integer for 'ind', but got {ind}")));
    }
    let s = a.sizes();
    let ind = ind as usize;
    if ind > s.len() {
        return Err(Error::invalid(op, format!("Expected ind <= self.dim() = {}, but got {ind}", s.len())));
    }
    let prod = |v: &[i64]| {
        v.iter().try_fold(1i64, |a, &b| a.checked_mul(b)).ok_or_else(|| Error::shape(op, "the tensor is too large"))
    };
    let (rows, cols) = (prod(&s[..ind])?, prod(&s[ind..])?);
    if rows != cols {
        return Err(Error::shape(
            op,
            "Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), but got "
                .to_string()
                + &format!("{cols} != {rows}"),
        ));
    }
    let inv = crate::ops::linalg_inv(&ops::reshape(a, &[rows, cols])?)?;
    let out: Vec<i64> = s[ind..].iter().chain(&s[..ind]).copied().collect();
    ops::reshape(&inv, &out)
}

/// `linalg_tensorsolve(Tensor self, Tensor other, int[]? dims=None) -> Tensor`
pub fn linalg_tensorsolve(a: &Tensor, b: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
    let op = "linalg.tensorsolve";
    let a = match dims {
        Some(d) => {
            let dest: Vec<i64> = (0..d.len() as i64).map(|i| a.dim() as i64 - d.len() as i64 + i).collect();
            ops::movedim(a, d, &dest)?
        }
        None => a.clone(),
    };
    let s = a.sizes();
    if b.dim() > s.len() {
        return Err(Error::shape(
            op,
            format!("Expected other.dim() <= self.dim(), but got {} and {}", b.dim(), s.len()),
        ));
    }
    let rest = &s[b.dim()..];
    let n = rest
        .iter()
        .try_fold(1i64, |a, &v| a.checked_mul(v))
        .ok_or_else(|| Error::shape(op, "the tensor is too large"))?;
    let m = b.numel();
    if m != n {
        return Err(Error::shape(
            op,
            format!("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), but got {n} != {m}"),
        ));
    }
    let x = crate::ops::linalg_solve(&ops::reshape(&a, &[m, n])?, &ops::reshape(b, &[m])?, true)?;
    ops::reshape(&x, rest)
}

/// `linalg_matrix_exp(Tensor self) -> Tensor`: scaling and squaring with the degree-13 Padé
/// approximant (Higham 2005), in tensor operations so autograd differentiates it.
pub fn linalg_matrix_exp(a: &Tensor) -> Result<Tensor> {
    let op = "linalg.matrix_exp";
    check_square(op, a, "A")?;
    check_float(op, a)?;
    let n = rows_cols(a).0;
    if n == 0 || a.numel() == 0 {
        return ops::clone(a, None);
    }
    if n == 1 {
        return ops::exp(a);
    }
    if a.dtype() == ScalarType::F32 {
        // Computed in double and rounded once: the approximant's float32 rounding would
        // otherwise exceed float32 tolerances on matrices with large entries.
        let r = linalg_matrix_exp(&ops::to(a, ScalarType::F64, false, false, None)?)?;
        return ops::to(&r, ScalarType::F32, false, false, None);
    }
    const B: [f64; 14] = [
        64764752532480000.0,
        32382376266240000.0,
        7771770303897600.0,
        1187353796428800.0,
        129060195264000.0,
        10559470521600.0,
        670442572800.0,
        33522128640.0,
        1323241920.0,
        40840800.0,
        960960.0,
        16380.0,
        182.0,
        1.0,
    ];
    // The 1-norm (largest column sum) of the largest matrix decides the scaling.
    let norm1 = linalg_matrix_norm(&detached(a), float(1.0), &[-2, -1], false, None)?;
    let largest = norm1.to_vec::<f64>()?.into_iter().fold(0.0f64, f64::max);
    let theta13 = 5.371920351148152;
    // Non-finite entries give non-finite results without squaring; 2^-1100 is below every
    // normal double, so more squarings never change the approximant.
    let s =
        if largest.is_finite() && largest > theta13 { ((largest / theta13).log2().ceil() as i32).min(1100) } else { 0 };
    let x = ops::mul_scalar(a, float(0.5f64.powi(s)))?;
    let eye = identity_like(a)?;
    let x2 = ops::matmul(&x, &x)?;
    let x4 = ops::matmul(&x2, &x2)?;
    let x6 = ops::matmul(&x4, &x2)?;
    let comb = |terms: &[(f64, &Tensor)]| -> Result<Tensor> {
        let mut acc = ops::mul_scalar(terms[0].1, float(terms[0].0))?;
        for (c, t) in &terms[1..] {
            acc = ops::add(&acc, t, float(*c))?;
        }
        Ok(acc)
    };
    let u_inner = ops::matmul(&x6, &comb(&[(B[13], &x6), (B[11], &x4), (B[9], &x2)])?)?;
    let u = ops::matmul(&x, &comb(&[(1.0, &u_inner), (B[7], &x6), (B[5], &x4), (B[3], &x2), (B[1], &eye)])?)?;
    let v_inner = ops::matmul(&x6, &comb(&[(B[12], &x6), (B[10], &x4), (B[8], &x2)])?)?;
    let v = comb(&[(1.0, &v_inner), (B[6], &x6), (B[4], &x4), (B[2], &x2), (B[0], &eye)])?;
    let mut r = crate::ops::linalg_solve(&ops::sub(&v, &u, int(1))?, &ops::add(&v, &u, int(1))?, true)?;
    for _ in 0..s {
        r = ops::matmul(&r, &r)?;
    }
    Ok(r)
}

/// `matrix_exp(Tensor self) -> Tensor`
pub fn matrix_exp(a: &Tensor) -> Result<Tensor> {
    crate::ops::linalg_matrix_exp(a)
}

/// `linalg_lstsq(Tensor self, Tensor b, float? rcond=None, *, str? driver=None) -> (Tensor solution, Tensor residuals, Tensor rank, Tensor singular_values)`
///
/// Full-rank problems are solved through QR (of `A`, or of `A^T` for the minimum-norm solution
/// of an underdetermined system); `gelsd`/`gelss` go through the SVD and return the singular
/// values. `rank` is computed for every driver but `gels`, as PyTorch does; `residuals` (the
/// squared residual norms) when `m > n` and every matrix has full rank, with a driver other
/// than `gelsy`.
pub fn linalg_lstsq(
    a: &Tensor,
    b: &Tensor,
    rcond: Option<f64>,
    driver: Option<&str>,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    let op = "torch.linalg.lstsq";
    check_matrix(op, a, "A")?;
    check_float(op, a)?;
    check_same_dtype(op, a, b, "input", "b")?;
    let driver = driver.unwrap_or("gelsy");
    if !["gels", "gelsy", "gelsd", "gelss"].contains(&driver) {
        return Err(Error::invalid(
            op,
            format!("parameter `driver` should be one of (gels, gelsy, gelsd, gelss), but got {driver}"),
        ));
    }
    let vector = b.dim() + 1 == a.dim();
    let bm = if vector { ops::unsqueeze(b, -1)? } else { b.clone() };
    if bm.dim() < 2 {
        return Err(Error::shape(
            op,
            "input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1",
        ));
    }
    let (m, n) = rows_cols(a);
    if rows_cols(&bm).0 != m {
        return Err(Error::shape(
            op,
            format!("input.size(-2) should match other.size(-2). Got {m} and {}", rows_cols(&bm).0),
        ));
    }
    let batch = broadcast_batch(op, &batch_of(a, 2).0, &batch_of(&bm, 2).0)?;
    let a_e = expand_to(a, &batch, 2)?;
    let b_e = expand_to(&bm, &batch, 2)?;
    let rcond = rcond.unwrap_or(eps(a.dtype()) * m.max(n) as f64);
    let svd_driver = driver == "gelsd" || driver == "gelss";
    let s_detached = crate::ops::linalg_svdvals(&detached(&a_e), None)?;
    let rcond_t = ops::full(&[], float(rcond), Some(a.dtype()), None, Some(a.device()), None)?;
    let zero = ops::zeros(&[], Some(a.dtype()), None, Some(a.device()), None)?;
    let tol = tolerance(&a_e, &s_detached, Some(&zero), Some(&rcond_t))?;
    let rank = ops::sum_dim_intlist(&ops::gt(&s_detached, &tol)?, Some(&[-1]), false, Some(ScalarType::I64))?;
    let full_rank = rank.to_vec::<i64>()?.iter().all(|&r| r == m.min(n));
    let x = if svd_driver || !full_rank {
        ops::matmul(&linalg_pinv_atol_rtol_tensor(&a_e, Some(&zero), Some(&rcond_t), false)?, &b_e)?
    } else if m >= n {
        let (q, r) = crate::ops::linalg_qr(&a_e, "reduced")?;
        crate::ops::linalg_solve_triangular(&r, &ops::matmul(&mt(&q)?, &b_e)?, true, true, false)?
    } else {
        let (q, r) = crate::ops::linalg_qr(&mt(&a_e)?, "reduced")?;
        ops::matmul(&q, &crate::ops::linalg_solve_triangular(&mt(&r)?, &b_e, false, true, false)?)?
    };
    let residuals = if m > n && full_rank && driver != "gelsy" {
        let r = ops::sub(&ops::matmul(&a_e, &x)?, &b_e, int(1))?;
        ops::sum_dim_intlist(&ops::mul(&r, &r)?, Some(&[-2]), false, None)?
    } else {
        empty_like_dtype(a, a.dtype())?
    };
    let x = if vector { ops::squeeze_dim(&x, -1)? } else { x };
    let residuals = if vector && residuals.numel() > 0 { ops::squeeze_dim(&residuals, -1)? } else { residuals };
    let rank = if driver == "gels" { empty_like_dtype(a, ScalarType::I64)? } else { rank };
    let sv = if svd_driver { s_detached } else { empty_like_dtype(a, a.dtype())? };
    Ok((x, residuals, rank, sv))
}
