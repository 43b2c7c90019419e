//! Backward formulas of the `torch.linalg` kernels (`aten/src/native/lapack.rs`), after
//! PyTorch's `FunctionsManual.cpp` (real inputs): LU factorization and LU solves, triangular
//! solves, Cholesky, QR, the symmetric eigendecomposition and the SVD. Written with
//! differentiable operators, so they can be differentiated again.

use aten::{ops, Tensor};
use c10::{Error, Result, Scalar};

use crate::engine::sum_to;

fn one() -> Scalar {
    Scalar::Int(1)
}

fn mt(t: &Tensor) -> Result<Tensor> {
    ops::transpose(t, -2, -1)
}

fn rows_cols(t: &Tensor) -> (i64, i64) {
    let s = t.sizes();
    (s[s.len() - 2], s[s.len() - 1])
}

/// `L^{-T} X` for unit lower triangular `L`.
fn unit_lower_t_solve(l: &Tensor, x: &Tensor) -> Result<Tensor> {
    ops::linalg_solve_triangular(&mt(l)?, x, true, true, true)
}

/// `X U^{-T}` for upper triangular `U`.
fn right_upper_t_solve(x: &Tensor, u: &Tensor) -> Result<Tensor> {
    ops::linalg_solve_triangular(&mt(u)?, x, false, false, false)
}

/// Whether a (materialized) incoming gradient has any nonzero entry: an output whose gradient
/// was never defined arrives as zeros, and terms that divide by singular values are skipped for
/// it as PyTorch skips undefined gradients.
fn nonzero(g: &Tensor) -> Result<bool> {
    Ok(g.numel() > 0 && ops::any(&ops::ne_scalar(g, Scalar::Int(0))?)?.item::<bool>()?)
}

/// The gradient of `A = P L U` (`L` `m x k` unit lower, `U` `k x n` upper) from those of `L`
/// and `U` (PyTorch's `linalg_lu_backward`).
pub fn linalg_lu_backward(gl: &Tensor, gu: &Tensor, p: &Tensor, l: &Tensor, u: &Tensor) -> Result<Tensor> {
    let (m, n) = (rows_cols(l).0, rows_cols(u).1);
    let x = if m == n {
        let x =
            ops::add(&ops::tril(&ops::matmul(&mt(l)?, gl)?, -1)?, &ops::triu(&ops::matmul(gu, &mt(u)?)?, 0)?, one())?;
        right_upper_t_solve(&unit_lower_t_solve(l, &x)?, u)?
    } else if m < n {
        let u1 = ops::narrow(u, -1, 0, m)?;
        let x = ops::sub(&ops::matmul(&mt(l)?, gl)?, &ops::matmul(&ops::triu(gu, 0)?, &mt(u)?)?, one())?;
        let x = right_upper_t_solve(&ops::tril(&x, -1)?, &u1)?;
        let left = ops::add(&x, &ops::triu(&ops::narrow(gu, -1, 0, m)?, 0)?, one())?;
        let x = ops::cat(&[left, ops::narrow(gu, -1, m, n - m)?], -1)?;
        unit_lower_t_solve(l, &x)?
    } else {
        let l1 = ops::narrow(l, -2, 0, n)?;
        let x = ops::sub(&ops::matmul(gu, &mt(u)?)?, &ops::matmul(&mt(l)?, &ops::tril(gl, -1)?)?, one())?;
        let x = unit_lower_t_solve(&l1, &ops::triu(&x, 0)?)?;
        let top = ops::add(&x, &ops::tril(&ops::narrow(gl, -2, 0, n)?, -1)?, one())?;
        let x = ops::cat(&[top, ops::narrow(gl, -2, n, m - n)?], -2)?;
        right_upper_t_solve(&x, u)?
    };
    ops::matmul(p, &x)
}

/// `linalg_lu_factor_ex`: the gradient of the packed `LU` split into those of `L` and `U`.
pub fn lu_factor_ex_backward(grad: &Tensor, lu: &Tensor, pivots: &Tensor) -> Result<Tensor> {
    let (m, n) = rows_cols(lu);
    let k = m.min(n);
    let (p, l, u) = ops::lu_unpack(lu, pivots, true, true)?;
    let gl = ops::narrow(grad, -1, 0, k)?;
    let gu = ops::narrow(grad, -2, 0, k)?;
    linalg_lu_backward(&gl, &gu, &p, &l, &u)
}

/// `linalg_lu_solve` for `B`: `A^{-T} gX` (or `A^{-1} gX` for the adjoint), summed to `B`'s
/// shape.
pub fn lu_solve_b_backward(
    grad: &Tensor,
    lu: &Tensor,
    pivots: &Tensor,
    left: bool,
    adjoint: bool,
    b_sizes: &[i64],
) -> Result<Tensor> {
    sum_to(&ops::linalg_lu_solve(lu, pivots, grad, left, !adjoint)?, b_sizes)
}

/// `linalg_lu_solve` for the packed `LU` (PyTorch's `linalg_lu_solve_LU`).
pub fn lu_solve_lu_backward(
    grad: &Tensor,
    lu: &Tensor,
    pivots: &Tensor,
    x: &Tensor,
    left: bool,
    adjoint: bool,
) -> Result<Tensor> {
    if !left {
        // X A = B is A^T X^T = B^T.
        return lu_solve_lu_backward(&mt(grad)?, lu, pivots, &mt(x)?, true, !adjoint);
    }
    let (p, l, u) = ops::lu_unpack(lu, pivots, true, true)?;
    let g = if !adjoint {
        // R = -U^{-T} gX X^T; gLU = tril(L^{-T} R U^T, -1) + triu(R).
        let r = ops::neg(&ops::linalg_solve_triangular(&mt(&u)?, &ops::matmul(grad, &mt(x)?)?, false, true, false)?)?;
        let low = ops::tril(&ops::matmul(&unit_lower_t_solve(&l, &r)?, &mt(&u)?)?, -1)?;
        ops::add(&low, &ops::triu(&r, 0)?, one())?
    } else {
        // R = -P^T X gX^T P L^{-T}; gLU = tril(R, -1) + triu(L^T R U^{-T}).
        let r = ops::neg(&ops::matmul(&ops::matmul(&mt(&p)?, &ops::matmul(x, &mt(grad)?)?)?, &p)?)?;
        let r = ops::linalg_solve_triangular(&mt(&l)?, &r, true, false, true)?;
        let up = ops::triu(&right_upper_t_solve(&ops::matmul(&mt(&l)?, &r)?, &u)?, 0)?;
        ops::add(&ops::tril(&r, -1)?, &up, one())?
    };
    sum_to(&g, lu.sizes())
}

/// `linalg_solve_triangular` for `B`.
pub fn solve_triangular_b_backward(
    grad: &Tensor,
    a: &Tensor,
    upper: bool,
    left: bool,
    unitriangular: bool,
    b_sizes: &[i64],
) -> Result<Tensor> {
    sum_to(&ops::linalg_solve_triangular(&mt(a)?, grad, !upper, left, unitriangular)?, b_sizes)
}

/// `linalg_solve_triangular` for `A`: `-gB X^T` (or `-X^T gB`), on `A`'s triangle.
pub fn solve_triangular_a_backward(
    grad: &Tensor,
    a: &Tensor,
    x: &Tensor,
    upper: bool,
    left: bool,
    unitriangular: bool,
) -> Result<Tensor> {
    let gb = ops::linalg_solve_triangular(&mt(a)?, grad, !upper, left, unitriangular)?;
    let ga = if left { ops::matmul(&gb, &mt(x)?)? } else { ops::matmul(&mt(x)?, &gb)? };
    let ga = ops::neg(&ga)?;
    let ga = if upper {
        ops::triu(&ga, if unitriangular { 1 } else { 0 })?
    } else {
        ops::tril(&ga, if unitriangular { -1 } else { 0 })?
    };
    sum_to(&ga, a.sizes())
}

/// `linalg_cholesky_ex`: `L^{-T} Phi L^{-1}` with `Phi` the symmetric matrix of
/// `tril(L^T gL)`'s halves (PyTorch's `cholesky_backward`).
pub fn cholesky_backward(grad: &Tensor, upper: bool, l: &Tensor) -> Result<Tensor> {
    let (l, gl) = if upper { (mt(l)?, mt(grad)?) } else { (l.clone(), grad.clone()) };
    let t = ops::tril(&ops::matmul(&mt(&l)?, &gl)?, 0)?;
    let phi = ops::mul_scalar(&ops::add(&t, &mt(&ops::tril(&t, -1)?)?, one())?, Scalar::Float(0.5))?;
    // L^{-T} Phi L^{-1}
    let y = ops::linalg_solve_triangular(&mt(&l)?, &phi, true, true, false)?;
    ops::linalg_solve_triangular(&l, &y, false, false, false)
}

/// `linalg_qr` (the result of PyTorch's `linalg_qr_backward`).
pub fn linalg_qr_backward(gq: &Tensor, gr: &Tensor, q: &Tensor, r: &Tensor, mode: &str) -> Result<Tensor> {
    let op = "linalg.qr";
    if mode == "r" {
        return Err(Error::invalid(op, "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr."));
    }
    let (m, n) = (rows_cols(q).0, rows_cols(r).1);
    if mode == "complete" && m > n {
        return Err(Error::invalid(
            op,
            "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.",
        ));
    }
    if m >= n {
        square_qr_backward(gq, gr, q, r)
    } else {
        // A = Q [X | Y] with X = Q R1 square: Y = Q V feeds Q's gradient, and Y's own gradient
        // is Q gV.
        let r1 = ops::narrow(r, -1, 0, m)?;
        let v = ops::narrow(r, -1, m, n - m)?;
        let gr1 = ops::narrow(gr, -1, 0, m)?;
        let gv = ops::narrow(gr, -1, m, n - m)?;
        let gq = ops::add(gq, &ops::matmul(&ops::matmul(q, &v)?, &mt(&gv)?)?, one())?;
        let gx = square_qr_backward(&gq, &gr1, q, &r1)?;
        ops::cat(&[gx, ops::matmul(q, &gv)?], -1)
    }
}

/// `A = Q R` with `R` square: `(gQ + Q copyltu(M)) R^{-T}`, `M = R gR^T - gQ^T Q`, where
/// `copyltu` mirrors the lower triangle onto the upper one.
fn square_qr_backward(gq: &Tensor, gr: &Tensor, q: &Tensor, r: &Tensor) -> Result<Tensor> {
    let mm = ops::sub(&ops::matmul(r, &mt(gr)?)?, &ops::matmul(&mt(gq)?, q)?, one())?;
    let s = ops::add(&ops::tril(&mm, 0)?, &mt(&ops::tril(&mm, -1)?)?, one())?;
    right_upper_t_solve(&ops::add(gq, &ops::matmul(q, &s)?, one())?, r)
}

/// `E_ij = x_j - x_i` off the diagonal, 1 on it.
fn differences(x: &Tensor, squared: bool) -> Result<Tensor> {
    let x = if squared { ops::mul(x, x)? } else { x.clone() };
    let e = ops::sub(&ops::unsqueeze(&x, -2)?, &ops::unsqueeze(&x, -1)?, one())?;
    let n = x.sizes()[x.dim() - 1];
    let eye = ops::eye(n, Some(x.dtype()), None, Some(x.device()), None)?;
    ops::add(&e, &eye, one())
}

/// `linalg_eigh` (PyTorch's `linalg_eig_backward` for Hermitian input):
/// `V (diag(gL) + sym(V^T gV) / E) V^T`.
pub fn eigh_backward(gl: &Tensor, gv: &Tensor, l: &Tensor, v: &Tensor) -> Result<Tensor> {
    let k = ops::matmul(&mt(v)?, gv)?;
    let w = ops::mul_scalar(&ops::sub(&k, &mt(&k)?, one())?, Scalar::Float(0.5))?;
    let f = ops::div(&w, &differences(l, false)?)?;
    // W has a zero diagonal: F's diagonal is gL.
    let f = ops::add(&f, &ops::diag_embed(gl, 0, -2, -1)?, one())?;
    ops::matmul(&ops::matmul(v, &f)?, &mt(v)?)
}

/// `_linalg_svd` (PyTorch's `svd_backward`, on the first `k = min(m, n)` singular vectors).
#[allow(clippy::too_many_arguments)]
pub fn svd_backward(
    gu: &Tensor,
    gs: &Tensor,
    gvh: &Tensor,
    u: &Tensor,
    s: &Tensor,
    vh: &Tensor,
    full_matrices: bool,
    compute_uv: bool,
) -> Result<Tensor> {
    if !compute_uv {
        return Err(Error::invalid(
            "linalg.svd",
            "The derivative of linalg.svd depends on U and Vh, which are not computed when compute_uv=False. Please use linalg.svd(A, full_matrices=False) if you are going to differentiate through it.",
        ));
    }
    let k = s.sizes()[s.dim() - 1];
    let (m, n) = (rows_cols(u).0, rows_cols(vh).1);
    let (u, vh, gu, gvh) = if full_matrices {
        (ops::narrow(u, -1, 0, k)?, ops::narrow(vh, -2, 0, k)?, ops::narrow(gu, -1, 0, k)?, ops::narrow(gvh, -2, 0, k)?)
    } else {
        (u.clone(), vh.clone(), gu.clone(), gvh.clone())
    };
    let (use_u, use_v) = (nonzero(&gu)?, nonzero(&gvh)?);
    if !use_u && !use_v {
        return ops::matmul(&ops::mul(&u, &ops::unsqueeze(gs, -2)?)?, &vh);
    }
    let uhgu = ops::matmul(&mt(&u)?, &gu)?;
    let uhgu = ops::sub(&uhgu, &mt(&uhgu)?, one())?;
    let vhgv = ops::matmul(&vh, &mt(&gvh)?)?;
    let vhgv = ops::sub(&vhgv, &mt(&vhgv)?, one())?;
    let num = ops::add(&ops::mul(&uhgu, &ops::unsqueeze(s, -2)?)?, &ops::mul(&ops::unsqueeze(s, -1)?, &vhgv)?, one())?;
    let x = ops::div(&num, &differences(s, true)?)?;
    let x = ops::add(&x, &ops::diag_embed(gs, 0, -2, -1)?, one())?;
    let sinv = ops::reciprocal(s)?;
    if m > n && use_u {
        // [U X + (I - U U^T) gU S^{-1}] Vh
        let proj = ops::sub(&gu, &ops::matmul(&u, &ops::matmul(&mt(&u)?, &gu)?)?, one())?;
        let inner = ops::add(&ops::matmul(&u, &x)?, &ops::mul(&proj, &ops::unsqueeze(&sinv, -2)?)?, one())?;
        ops::matmul(&inner, &vh)
    } else if m < n && use_v {
        // U [X Vh + S^{-1} gVh (I - V V^T)]
        let proj = ops::sub(&gvh, &ops::matmul(&ops::matmul(&gvh, &mt(&vh)?)?, &vh)?, one())?;
        let inner = ops::add(&ops::matmul(&x, &vh)?, &ops::mul(&ops::unsqueeze(&sinv, -1)?, &proj)?, one())?;
        ops::matmul(&u, &inner)
    } else {
        ops::matmul(&ops::matmul(&u, &x)?, &vh)
    }
}
