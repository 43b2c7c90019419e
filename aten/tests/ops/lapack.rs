//! torch.linalg on faer (native/lapack.rs): closed-form values, reconstructions of the
//! factorizations, LAPACK's layouts (packed LU, 1-based pivots, Householder scalars), batches,
//! and PyTorch's errors. PyTorch's own values for every op_db sample are checked by
//! `cargo xtask opinfo`.

use aten::{ops, Tensor};
use c10::{Error, ScalarType};

fn t64(v: &[f64], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn assert_close(got: &Tensor, want: &[f64], tol: f64) {
    let g = vals(got);
    assert_eq!(g.len(), want.len(), "{:?}", got.sizes());
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        assert!((a - b).abs() <= tol * (1.0 + b.abs()), "element {i}: {a} vs {b} (all: {g:?})");
    }
}

fn assert_same(a: &Tensor, b: &Tensor, tol: f64) {
    assert_eq!(a.sizes(), b.sizes());
    assert_close(a, &vals(b), tol);
}

/// A well-conditioned batch: random entries plus `n` on the diagonal.
fn well_conditioned(batch: &[i64], n: i64, seed: u64) -> Tensor {
    let count = batch.iter().product::<i64>() * n * n;
    let mut s = seed;
    let mut v = Vec::new();
    for i in 0..count {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let r = ((s >> 33) as f64 / (1u64 << 31) as f64) * 2.0 - 1.0;
        let (row, col) = ((i / n) % n, i % n);
        v.push(if row == col { r + n as f64 } else { r });
    }
    let shape: Vec<i64> = batch.iter().copied().chain([n, n]).collect();
    t64(&v, &shape)
}

fn message(e: Error) -> String {
    e.to_string()
}

#[test]
fn lu_factor_packs_lapack_layout_and_pivots() {
    // Swapping the rows is the whole factorization: pivots [2, 2] (1-based, applied in order).
    let a = t64(&[0.0, 1.0, 1.0, 0.0], &[2, 2]);
    let (lu, piv, info) = ops::linalg_lu_factor_ex(&a, true, false).unwrap();
    assert_close(&lu, &[1.0, 0.0, 0.0, 1.0], 0.0);
    assert_eq!(piv.dtype(), ScalarType::I32);
    assert_eq!(piv.to_vec::<i32>().unwrap(), vec![2, 2]);
    assert_eq!(info.to_vec::<i32>().unwrap(), vec![0]);
    // Partial pivoting picks the largest entry of the column: [[1, 2], [3, 4]] swaps rows,
    // L = [[1, 0], [1/3, 1]], U = [[3, 4], [0, 2/3]].
    let (lu, piv, _) = ops::linalg_lu_factor_ex(&t64(&[1.0, 2.0, 3.0, 4.0], &[2, 2]), true, false).unwrap();
    assert_close(&lu, &[3.0, 4.0, 1.0 / 3.0, 2.0 / 3.0], 1e-15);
    assert_eq!(piv.to_vec::<i32>().unwrap(), vec![2, 2]);
}

#[test]
fn lu_reconstructs_square_tall_wide_and_batched() {
    for shape in [vec![4i64, 4], vec![5, 3], vec![3, 5], vec![2, 3, 4, 4]] {
        let n = shape.iter().product::<i64>() as usize;
        let v: Vec<f64> = (0..n).map(|i| ((i * 37 + 11) % 17) as f64 - 8.0).collect();
        let a = t64(&v, &shape);
        let (p, l, u) = ops::linalg_lu(&a, true).unwrap();
        let back = ops::matmul(&p, &ops::matmul(&l, &u).unwrap()).unwrap();
        assert_same(&back, &a, 1e-12);
        // L is unit lower triangular, U upper triangular.
        assert_same(
            &ops::tril(&l, -1).unwrap(),
            &ops::sub(
                &l,
                &ops::eye_m(l.sizes()[l.dim() - 2], l.sizes()[l.dim() - 1], Some(ScalarType::F64), None, None, None)
                    .unwrap(),
                c10::Scalar::Int(1),
            )
            .unwrap(),
            0.0,
        );
        assert_same(&ops::triu(&u, 0).unwrap(), &u, 0.0);
    }
}

#[test]
fn singular_matrices_report_info_and_errors() {
    let a = t64(&[1.0, 2.0, 2.0, 4.0], &[2, 2]);
    let (_, _, info) = ops::linalg_lu_factor_ex(&a, true, false).unwrap();
    assert_eq!(info.to_vec::<i32>().unwrap(), vec![2]);
    let e = message(ops::linalg_inv(&a).unwrap_err());
    assert!(e.contains("The diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular."), "{e}");
    let e = message(ops::linalg_solve(&a, &t64(&[1.0, 1.0], &[2]), true).unwrap_err());
    assert!(e.contains("The solver failed because the input matrix is singular."), "{e}");
    // The _ex forms report instead of failing.
    let (_, info) = ops::linalg_inv_ex(&a, false).unwrap();
    assert_eq!(info.to_vec::<i32>().unwrap(), vec![2]);
    assert_close(&ops::linalg_det(&a).unwrap(), &[0.0], 0.0);
}

#[test]
fn solve_handles_vectors_batches_and_right_sides() {
    let a = well_conditioned(&[3], 4, 1);
    let b = well_conditioned(&[3], 4, 2);
    let x = ops::linalg_solve(&a, &b, true).unwrap();
    assert_same(&ops::matmul(&a, &x).unwrap(), &b, 1e-12);
    // X A = B
    let x = ops::linalg_solve(&a, &b, false).unwrap();
    assert_same(&ops::matmul(&x, &a).unwrap(), &b, 1e-12);
    // A batch of vectors (B has A's leading sizes) and one vector broadcast over the batch.
    let v = t64(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0], &[3, 4]);
    let x = ops::linalg_solve(&a, &v, true).unwrap();
    assert_eq!(x.sizes(), &[3, 4]);
    assert_same(&ops::squeeze_dim(&ops::matmul(&a, &ops::unsqueeze(&x, -1).unwrap()).unwrap(), -1).unwrap(), &v, 1e-12);
    let one = t64(&[1.0, 0.0, 0.0, 1.0], &[4]);
    assert_eq!(ops::linalg_solve(&a, &one, true).unwrap().sizes(), &[3, 4]);
    let e = message(ops::linalg_solve(&t64(&[1.0; 6], &[2, 3]), &one, true).unwrap_err());
    assert!(e.contains("A must be batches of square matrices, but they are 2 by 3 matrices"), "{e}");
}

#[test]
fn inverse_det_and_slogdet_match_closed_forms() {
    let a = t64(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    assert_close(&ops::linalg_inv(&a).unwrap(), &[-2.0, 1.0, 1.5, -0.5], 1e-14);
    assert_close(&ops::linalg_det(&a).unwrap(), &[-2.0], 1e-14);
    let (sign, logabs) = ops::linalg_slogdet(&a).unwrap();
    assert_close(&sign, &[-1.0], 0.0);
    assert_close(&logabs, &[2f64.ln()], 1e-14);
    assert!(vals(&ops::logdet(&a).unwrap())[0].is_nan());
    // A negative power is a power of the inverse.
    let inv2 = ops::matmul(&ops::linalg_inv(&a).unwrap(), &ops::linalg_inv(&a).unwrap()).unwrap();
    assert_same(&ops::linalg_matrix_power(&a, -2).unwrap(), &inv2, 1e-13);
    let e = message(ops::linalg_det(&Tensor::from_vec(vec![1i64, 2, 3, 4], &[2, 2]).unwrap()).unwrap_err());
    assert!(e.contains("Expected a floating point or complex tensor as input. Got Long"), "{e}");
}

#[test]
fn cholesky_lower_upper_and_not_positive_definite() {
    let a = t64(&[4.0, 2.0, 2.0, 3.0], &[2, 2]);
    let s2 = 2f64.sqrt();
    assert_close(&ops::linalg_cholesky(&a, false).unwrap(), &[2.0, 0.0, 1.0, s2], 1e-15);
    assert_close(&ops::linalg_cholesky(&a, true).unwrap(), &[2.0, 1.0, 0.0, s2], 1e-15);
    // Only the named triangle is read.
    let lower_only = t64(&[4.0, 99.0, 2.0, 3.0], &[2, 2]);
    assert_close(&ops::linalg_cholesky(&lower_only, false).unwrap(), &[2.0, 0.0, 1.0, s2], 1e-15);
    let bad = t64(&[1.0, 2.0, 2.0, 1.0], &[2, 2]);
    let (_, info) = ops::linalg_cholesky_ex(&bad, false, false).unwrap();
    assert_eq!(info.to_vec::<i32>().unwrap(), vec![2]);
    let e = message(ops::linalg_cholesky(&bad, false).unwrap_err());
    assert!(e.contains("the leading minor of order 2 is not positive-definite"), "{e}");
    // cholesky_solve and cholesky_inverse through the factor.
    let l = ops::linalg_cholesky(&a, false).unwrap();
    assert_close(&ops::cholesky_inverse(&l, false).unwrap(), &[0.375, -0.25, -0.25, 0.5], 1e-14);
    let x = ops::cholesky_solve(&t64(&[2.0, 1.0], &[2, 1]), &l, false).unwrap();
    assert_close(&x, &[0.5, 0.0], 1e-14);
}

#[test]
fn householder_qr_follows_geqrf() {
    // One column [3, 4]: beta = -5, tau = 1.6, v = [1, 0.5].
    let (a, tau) = ops::geqrf(&t64(&[3.0, 4.0], &[2, 1])).unwrap();
    assert_close(&a, &[-5.0, 0.5], 1e-15);
    assert_close(&tau, &[1.6], 1e-15);
    let q = ops::linalg_householder_product(&a, &tau).unwrap();
    assert_close(&q, &[-0.6, -0.8], 1e-15);
    // A column already zero below the diagonal is not reflected (R keeps the sign).
    let (q, r) = ops::linalg_qr(&t64(&[2.0, 1.0, 0.0, 3.0], &[2, 2]), "reduced").unwrap();
    assert_close(&q, &[1.0, 0.0, 0.0, 1.0], 0.0);
    assert_close(&r, &[2.0, 1.0, 0.0, 3.0], 0.0);
    for (shape, mode) in [([5i64, 3], "reduced"), ([3, 5], "reduced"), ([5, 3], "complete")] {
        let n = (shape[0] * shape[1]) as usize;
        let a = t64(&(0..n).map(|i| ((i * 7 + 3) % 11) as f64 - 5.0).collect::<Vec<_>>(), &shape);
        let (q, r) = ops::linalg_qr(&a, mode).unwrap();
        assert_same(&ops::matmul(&q, &r).unwrap(), &a, 1e-13);
        let k = q.sizes()[1];
        assert_same(
            &ops::matmul(&ops::transpose(&q, 0, 1).unwrap(), &q).unwrap(),
            &ops::eye(k, Some(ScalarType::F64), None, None, None).unwrap(),
            1e-13,
        );
        assert_same(&ops::triu(&r, 0).unwrap(), &r, 0.0);
        // ormqr applies the same Q.
        let (v, tau) = ops::geqrf(&a).unwrap();
        let c = ops::eye(shape[0], Some(ScalarType::F64), None, None, None).unwrap();
        let full_q = ops::ormqr(&v, &tau, &c, true, false).unwrap();
        assert_same(&ops::narrow(&full_q, 1, 0, k).unwrap(), &q, 1e-13);
    }
    let e = message(ops::linalg_qr(&t64(&[1.0], &[1, 1]), "thin").unwrap_err());
    assert!(e.contains("qr received unrecognized mode 'thin'"), "{e}");
}

#[test]
fn eigh_and_svd_closed_forms() {
    let (w, v) = ops::linalg_eigh(&t64(&[2.0, 1.0, 1.0, 2.0], &[2, 2]), "L").unwrap();
    assert_close(&w, &[1.0, 3.0], 1e-14);
    let h = 0.5f64.sqrt();
    // Each eigenvector's largest-magnitude entry is positive (the first of equal ones).
    assert_close(&v, &[h, h, -h, h], 1e-14);
    // UPLO picks the triangle read.
    let (w, _) = ops::linalg_eigh(&t64(&[2.0, 1.0, 7.0, 2.0], &[2, 2]), "U").unwrap();
    assert_close(&w, &[1.0, 3.0], 1e-14);
    let a = t64(&[3.0, 0.0, 0.0, 0.0, -2.0, 0.0], &[2, 3]);
    let (u, s, vh) = ops::linalg_svd(&a, false, None).unwrap();
    assert_close(&s, &[3.0, 2.0], 1e-14);
    assert_eq!((u.sizes(), vh.sizes()), (&[2i64, 2][..], &[2i64, 3][..]));
    let back = ops::matmul(&ops::mul(&u, &ops::unsqueeze(&s, 0).unwrap()).unwrap(), &vh).unwrap();
    assert_same(&back, &a, 1e-14);
    let (u, _, vh) = ops::linalg_svd(&a, true, None).unwrap();
    assert_eq!((u.sizes(), vh.sizes()), (&[2i64, 2][..], &[3i64, 3][..]));
    assert_close(&ops::linalg_svdvals(&a, None).unwrap(), &[3.0, 2.0], 1e-14);
    assert_close(&ops::linalg_matrix_norm_str_ord(&a, "nuc", &[-2, -1], false, None).unwrap(), &[5.0], 1e-14);
    assert_close(&ops::linalg_matrix_rank_atol_rtol_float(&a, None, None, false).unwrap().to_dtype_f64(), &[2.0], 0.0);
}

trait ToF64 {
    fn to_dtype_f64(&self) -> Tensor;
}
impl ToF64 for Tensor {
    fn to_dtype_f64(&self) -> Tensor {
        ops::to(self, ScalarType::F64, false, false, None).unwrap()
    }
}

#[test]
fn pinv_lstsq_and_matrix_exp() {
    // Overdetermined: the least-squares line through (0, 1), (1, 2), (2, 4): y = 0.8333 + 1.5 x.
    let a = t64(&[1.0, 0.0, 1.0, 1.0, 1.0, 2.0], &[3, 2]);
    let b = t64(&[1.0, 2.0, 4.0], &[3, 1]);
    let (x, res, rank, sv) = ops::linalg_lstsq(&a, &b, None, Some("gelsd")).unwrap();
    assert_close(&x, &[5.0 / 6.0, 1.5], 1e-13);
    assert_close(&res, &[1.0 / 6.0], 1e-13);
    assert_eq!(rank.to_vec::<i64>().unwrap(), vec![2]);
    assert_eq!(sv.sizes(), &[2]);
    let (x, res, _, sv) = ops::linalg_lstsq(&a, &b, None, None).unwrap();
    assert_close(&x, &[5.0 / 6.0, 1.5], 1e-13);
    // gelsy (the CPU default) returns neither residuals nor singular values.
    assert_eq!((res.numel(), sv.numel()), (0, 0));
    let p = ops::linalg_pinv_atol_rtol_float(&a, None, None, false).unwrap();
    assert_same(&ops::matmul(&p, &b).unwrap(), &x, 1e-13);
    // exp of a rotation generator.
    let th = 0.7f64;
    let e = ops::linalg_matrix_exp(&t64(&[0.0, th, -th, 0.0], &[2, 2])).unwrap();
    assert_close(&e, &[th.cos(), th.sin(), -th.sin(), th.cos()], 1e-14);
    // Large norms go through scaling and squaring.
    let e = ops::linalg_matrix_exp(&t64(&[10.0, 0.0, 0.0, -3.0], &[2, 2])).unwrap();
    assert_close(&e, &[10f64.exp(), 0.0, 0.0, (-3f64).exp()], 1e-13);
}

/// The textbook LU with partial pivoting (Doolittle, one column at a time, f64): the reference
/// for Note [Recursive LU]. Returns the packed factors and the 1-based pivots.
fn textbook_lu(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<i32>) {
    let mut a = a.to_vec();
    let mut piv = Vec::new();
    for j in 0..m.min(n) {
        let mut p = j;
        for i in j + 1..m {
            if a[i * n + j].abs() > a[p * n + j].abs() {
                p = i;
            }
        }
        piv.push(p as i32 + 1);
        for c in 0..n {
            a.swap(j * n + c, p * n + c);
        }
        if a[j * n + j] == 0.0 {
            continue;
        }
        for i in j + 1..m {
            let f = a[i * n + j] / a[j * n + j];
            a[i * n + j] = f;
            for c in j + 1..n {
                a[i * n + c] -= f * a[j * n + c];
            }
        }
    }
    (a, piv)
}

fn noise(count: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..count)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) as f64 / (1u64 << 31) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// Note [Recursive LU]: square, tall and wide matrices large enough for several levels of
/// recursion (panels, triangular solves split by products, products on the packed f32 kernel)
/// give the textbook algorithm's pivots and factors, in f64 and f32, on one and two threads; a
/// batch runs one matrix per thread; a zero column leaves its row in place and sets `info`.
#[test]
fn recursive_lu_matches_the_textbook_algorithm() {
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            for &(m, n) in &[(200usize, 200usize), (150, 90), (90, 170), (65, 65), (17, 40)] {
                let v = noise(m * n, (m * 1000 + n) as u64);
                let (want, want_piv) = textbook_lu(&v, m, n);
                for (dtype, tol) in [(ScalarType::F64, 1e-10), (ScalarType::F32, 2e-3)] {
                    let a = ops::_to_copy(&t64(&v, &[m as i64, n as i64]), Some(dtype), None, None, None, false, None)
                        .unwrap();
                    let (lu, piv, info) = ops::linalg_lu_factor_ex(&a, true, false).unwrap();
                    assert_eq!(lu.dtype(), dtype);
                    assert_eq!(piv.to_vec::<i32>().unwrap(), want_piv, "{m}x{n} {dtype:?} on {threads} threads");
                    assert_close(&lu, &want, tol);
                    assert_eq!(info.to_vec::<i32>().unwrap(), vec![0]);
                }
            }
            // A batch of three: each matrix its own factorization.
            let (b, n) = (3usize, 48usize);
            let v = noise(b * n * n, 7);
            let (lu, piv, _) =
                ops::linalg_lu_factor_ex(&t64(&v, &[b as i64, n as i64, n as i64]), true, false).unwrap();
            let (lu, piv) = (vals(&lu), piv.to_vec::<i32>().unwrap());
            for i in 0..b {
                let (want, want_piv) = textbook_lu(&v[i * n * n..(i + 1) * n * n], n, n);
                assert_eq!(&piv[i * n..(i + 1) * n], want_piv.as_slice(), "batch element {i}");
                for (g, w) in lu[i * n * n..(i + 1) * n * n].iter().zip(&want) {
                    assert!((g - w).abs() <= 1e-10 * (1.0 + w.abs()), "batch element {i}: {g} vs {w}");
                }
            }
            // Column 20 of 40 is zero: U[20, 20] is the first zero pivot (info 21, 1-based).
            let n = 40usize;
            let mut v = noise(n * n, 9);
            for i in 0..n {
                v[i * n + 20] = 0.0;
            }
            let (lu, piv, info) = ops::linalg_lu_factor_ex(&t64(&v, &[n as i64, n as i64]), true, false).unwrap();
            let (want, want_piv) = textbook_lu(&v, n, n);
            assert_eq!(piv.to_vec::<i32>().unwrap(), want_piv);
            assert_eq!(piv.to_vec::<i32>().unwrap()[20], 21, "a zero column keeps its row");
            assert_close(&lu, &want, 1e-10);
            assert_eq!(info.to_vec::<i32>().unwrap(), vec![21]);
            // A NaN is never the larger magnitude (`i?amax`): column 0 pivots past it, and
            // once it has spread, each column keeps its own row.
            let mut v = noise(n * n, 10);
            v[3 * n] = f64::NAN;
            let (_, piv, _) = ops::linalg_lu_factor_ex(&t64(&v, &[n as i64, n as i64]), true, false).unwrap();
            let (_, want_piv) = textbook_lu(&v, n, n);
            assert_eq!(piv.to_vec::<i32>().unwrap(), want_piv);
            assert_ne!(want_piv[0], 4, "the NaN's row is not the first pivot");
        });
    }
}
