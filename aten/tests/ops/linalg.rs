//! Matrix products: values against a naive reference loop, strided (transposed, sliced,
//! broadcast) operands, every dtype, matmul's rank rules, einsum, attention, and errors.

use aten::{ops, Tensor};
use c10::{Error, Scalar, ScalarType};

/// Deterministic pseudo-random values in [-1, 1).
fn vals(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) as f64 / (1u64 << 31) as f64) * 2.0 - 1.0
        })
        .collect()
}

fn rand(shape: &[i64], seed: u64) -> Tensor {
    let n = shape.iter().product::<i64>() as usize;
    Tensor::from_vec(vals(n, seed).into_iter().map(|v| v as f32).collect::<Vec<f32>>(), shape).unwrap()
}

/// Row-major naive product of [m, k] by [k, n].
fn naive_mm(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|l| a[i * k + l] * b[l * n + j]).sum();
        }
    }
    c
}

fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "element {i}: {g} vs {w}");
    }
}

#[test]
fn mm_matches_reference_for_all_float_dtypes() {
    let (m, k, n) = (37, 53, 29);
    let a = rand(&[m, k], 1);
    let b = rand(&[k, n], 2);
    let want = naive_mm(&a.to_vec::<f64>().unwrap(), &b.to_vec::<f64>().unwrap(), m as usize, k as usize, n as usize);
    for (dt, tol) in
        [(ScalarType::F32, 1e-5), (ScalarType::F64, 1e-6), (ScalarType::F16, 2e-2), (ScalarType::BF16, 6e-2)]
    {
        let r = ops::mm(&a.cast(dt), &b.cast(dt)).unwrap();
        assert_eq!(r.dtype(), dt);
        assert_eq!(r.sizes(), &[m, n]);
        assert_close(&r.to_vec::<f64>().unwrap(), &want, tol);
    }
}

trait Cast {
    fn cast(&self, dt: ScalarType) -> Tensor;
}
impl Cast for Tensor {
    fn cast(&self, dt: ScalarType) -> Tensor {
        ops::_to_copy(self, Some(dt), None, None, None, false, None).unwrap()
    }
}

#[test]
fn mm_reads_strided_operands_without_copies() {
    // Transposed and sliced views: values as if contiguous.
    let a = rand(&[40, 30], 3);
    let b = rand(&[50, 40], 4);
    let at = ops::t(&a).unwrap(); // [30, 40], column-major
    let bs = ops::slice(&ops::t(&b).unwrap(), 1, Some(0), Some(50), 2).unwrap(); // [40, 25], strided
    let want = naive_mm(
        &ops::contiguous(&at, c10::MemoryFormat::Contiguous).unwrap().to_vec::<f64>().unwrap(),
        &ops::contiguous(&bs, c10::MemoryFormat::Contiguous).unwrap().to_vec::<f64>().unwrap(),
        30,
        40,
        25,
    );
    let r = ops::mm(&at, &bs).unwrap();
    assert_eq!(r.sizes(), &[30, 25]);
    assert_close(&r.to_vec::<f64>().unwrap(), &want, 1e-5);
}

#[test]
fn integer_mm_and_empty_inner_dimension() {
    let a = Tensor::from_vec(vec![1i64, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
    let b = Tensor::from_vec(vec![1i64, 0, 0, 1, 1, 1], &[3, 2]).unwrap();
    assert_eq!(ops::mm(&a, &b).unwrap().to_vec::<i64>().unwrap(), vec![4, 5, 10, 11]);
    let e1 = Tensor::from_vec(Vec::<f32>::new(), &[2, 0]).unwrap();
    let e2 = Tensor::from_vec(Vec::<f32>::new(), &[0, 3]).unwrap();
    assert_eq!(ops::mm(&e1, &e2).unwrap().to_vec::<f32>().unwrap(), vec![0.0; 6]);
}

#[test]
fn mm_errors() {
    let a = rand(&[2, 3], 5);
    let b = rand(&[4, 5], 6);
    match ops::mm(&a, &b) {
        Err(Error::Shape { msg, .. }) => {
            assert!(msg.contains("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"), "{msg}")
        }
        other => panic!("expected a shape error, got {other:?}"),
    }
    assert!(matches!(ops::mm(&rand(&[3], 1), &b), Err(Error::Shape { .. })));
    assert!(matches!(ops::mm(&a, &rand(&[3, 2], 1).cast(ScalarType::F64)), Err(Error::InvalidArgument { .. })));
    assert!(matches!(ops::bmm(&rand(&[2, 2, 3], 1), &rand(&[3, 3, 2], 1)), Err(Error::Shape { .. })));
    assert!(matches!(ops::dot(&rand(&[3], 1), &rand(&[4], 1)), Err(Error::Shape { .. })));
    assert!(matches!(ops::matmul(&Tensor::scalar_tensor(1.0f32), &a), Err(Error::Shape { .. })));
}

#[test]
fn bmm_addmm_baddbmm_addbmm() {
    let a = rand(&[3, 4, 5], 7);
    let b = rand(&[3, 5, 2], 8);
    let r = ops::bmm(&a, &b).unwrap();
    let (av, bv, rv) = (a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap(), r.to_vec::<f64>().unwrap());
    let mut sum = vec![0.0; 8];
    for i in 0..3 {
        let want = naive_mm(&av[i * 20..(i + 1) * 20], &bv[i * 10..(i + 1) * 10], 4, 5, 2);
        assert_close(&rv[i * 8..(i + 1) * 8], &want, 1e-5);
        sum.iter_mut().zip(&want).for_each(|(s, w)| *s += w);
    }
    // addmm: beta * self (broadcast row) + alpha * a0 @ b0.
    let bias = Tensor::from_slice(&[1.0f32, -1.0]);
    let a0 = ops::select(&a, 0, 0).unwrap();
    let b0 = ops::select(&b, 0, 0).unwrap();
    let r = ops::addmm(&bias, &a0, &b0, Scalar::Float(0.5), Scalar::Float(2.0)).unwrap();
    let want: Vec<f64> = rv[..8].iter().enumerate().map(|(i, v)| 0.5 * [1.0, -1.0][i % 2] + 2.0 * v).collect();
    assert_close(&r.to_vec::<f64>().unwrap(), &want, 1e-5);
    // beta = 0 ignores NaN in self.
    let nan = Tensor::from_slice(&[f32::NAN, f32::NAN]);
    let r = ops::addmm(&nan, &a0, &b0, Scalar::Int(0), Scalar::Int(1)).unwrap();
    assert_close(&r.to_vec::<f64>().unwrap(), &rv[..8], 1e-5);
    let r = ops::baddbmm(&Tensor::scalar_tensor(1.0f32), &a, &b, Scalar::Int(1), Scalar::Int(1)).unwrap();
    assert_close(&r.to_vec::<f64>().unwrap(), &rv.iter().map(|v| v + 1.0).collect::<Vec<_>>(), 1e-5);
    let r = ops::addbmm(&Tensor::scalar_tensor(0.0f32), &a, &b, Scalar::Int(1), Scalar::Int(1)).unwrap();
    assert_eq!(r.sizes(), &[4, 2]);
    assert_close(&r.to_vec::<f64>().unwrap(), &sum, 1e-5);
}

/// `addmm`'s `self` broadcast to the product's shape in every form (0-d, a row, `[1, n]`, a
/// column, the whole matrix, a non-contiguous one), for float and integer dtypes: the row
/// broadcasts take the whole-row copy, the others the strided one; both must agree with the
/// reference sum.
#[test]
fn addmm_broadcasts_self_in_every_form() {
    let (m, k, n) = (3usize, 4usize, 5usize);
    let a = rand(&[m as i64, k as i64], 31);
    let b = rand(&[k as i64, n as i64], 32);
    let prod = naive_mm(&a.to_vec::<f64>().unwrap(), &b.to_vec::<f64>().unwrap(), m, k, n);
    let full = rand(&[m as i64, n as i64], 33);
    let fv = full.to_vec::<f64>().unwrap();
    // Each `self` with its value at (i, j).
    type Expected<'a> = Box<dyn Fn(usize, usize) -> f64 + 'a>;
    let cases: Vec<(Tensor, Expected)> = vec![
        (Tensor::scalar_tensor(0.25f32), Box::new(|_, _| 0.25)),
        (ops::select(&full, 0, 1).unwrap(), Box::new(|_, j| fv[n + j])),
        (ops::narrow(&full, 0, 2, 1).unwrap(), Box::new(|_, j| fv[2 * n + j])),
        (ops::narrow(&full, 1, 3, 1).unwrap(), Box::new(|i, _| fv[i * n + 3])),
        (full.clone(), Box::new(|i, j| fv[i * n + j])),
        (ops::t(&ops::t(&full).unwrap().contiguous().call().unwrap()).unwrap(), Box::new(|i, j| fv[i * n + j])),
    ];
    for (c, (bias, want)) in cases.iter().enumerate() {
        let r = ops::addmm(bias, &a, &b, Scalar::Float(2.0), Scalar::Int(1)).unwrap();
        assert_eq!(r.sizes(), &[m as i64, n as i64], "case {c}");
        assert_eq!(r.dtype(), ScalarType::F32, "case {c}");
        let expect: Vec<f64> = (0..m * n).map(|e| 2.0 * want(e / n, e % n) + prod[e]).collect();
        assert_close(&r.to_vec::<f64>().unwrap(), &expect, 1e-5);
    }
    // Integers: a row bias of int64 under an int64 product.
    let ai = Tensor::from_vec((0..6i64).collect::<Vec<_>>(), &[2, 3]).unwrap();
    let bi = Tensor::from_vec((0..6i64).map(|v| v - 2).collect::<Vec<_>>(), &[3, 2]).unwrap();
    let r = ops::addmm(&Tensor::from_slice(&[10i64, 20]), &ai, &bi, Scalar::Int(1), Scalar::Int(1)).unwrap();
    assert_eq!(r.dtype(), ScalarType::I64);
    // [[0,1,2],[3,4,5]] @ [[-2,-1],[0,1],[2,3]] = [[4,7],[4,16]].
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![14, 27, 14, 36]);
    // A bias that does not broadcast is the shape error it was.
    let e = ops::addmm(&Tensor::from_slice(&[1.0f32, 2.0]), &a, &b, Scalar::Int(1), Scalar::Int(1)).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e:?}");
}

#[test]
fn matmul_rank_rules() {
    let v3 = rand(&[3], 9);
    let m23 = rand(&[2, 3], 10);
    let m34 = rand(&[3, 4], 11);
    assert_eq!(ops::matmul(&v3, &v3).unwrap().sizes(), &[] as &[i64]);
    assert_eq!(ops::matmul(&m23, &v3).unwrap().sizes(), &[2]);
    assert_eq!(ops::matmul(&v3, &m34).unwrap().sizes(), &[4]);
    assert_eq!(ops::matmul(&m23, &m34).unwrap().sizes(), &[2, 4]);
    // Folding: [5, 2, 3] @ [3, 4] -> [5, 2, 4]; [5, 2, 3] @ [3] -> [5, 2].
    let b523 = rand(&[5, 2, 3], 12);
    let r = ops::matmul(&b523, &m34).unwrap();
    assert_eq!(r.sizes(), &[5, 2, 4]);
    let r0 = ops::matmul(&ops::select(&b523, 0, 4).unwrap(), &m34).unwrap();
    assert_close(&ops::select(&r, 0, 4).unwrap().to_vec::<f64>().unwrap(), &r0.to_vec::<f64>().unwrap(), 1e-6);
    assert_eq!(ops::matmul(&b523, &v3).unwrap().sizes(), &[5, 2]);
    // Broadcast batches: [2, 1, 2, 3] @ [4, 3, 5] -> [2, 4, 2, 5]; vector @ batch.
    let a = rand(&[2, 1, 2, 3], 13);
    let b = rand(&[4, 3, 5], 14);
    let r = ops::matmul(&a, &b).unwrap();
    assert_eq!(r.sizes(), &[2, 4, 2, 5]);
    let want =
        ops::mm(&ops::select(&ops::select(&a, 0, 1).unwrap(), 0, 0).unwrap(), &ops::select(&b, 0, 3).unwrap()).unwrap();
    let got = ops::select(&ops::select(&r, 0, 1).unwrap(), 0, 3).unwrap();
    assert_close(&got.to_vec::<f64>().unwrap(), &want.to_vec::<f64>().unwrap(), 1e-6);
    assert_eq!(ops::matmul(&v3, &b).unwrap().sizes(), &[4, 5]);
    assert_eq!(ops::matmul(&b, &rand(&[5], 15)).unwrap().sizes(), &[4, 3]);
    // outer, dot, mv agree with the rules.
    let o = ops::outer(&Tensor::from_slice(&[1.0f32, 2.0]), &Tensor::from_slice(&[3.0f32, 4.0, 5.0])).unwrap();
    assert_eq!(o.to_vec::<f32>().unwrap(), vec![3.0, 4.0, 5.0, 6.0, 8.0, 10.0]);
    let d = ops::dot(&Tensor::from_slice(&[1.0f64, 2.0, 3.0]), &Tensor::from_slice(&[4.0f64, 5.0, 6.0])).unwrap();
    assert_eq!(d.item::<f64>().unwrap(), 32.0);
}

#[test]
fn linear_and_tensordot() {
    let x = rand(&[2, 3, 4], 16);
    let w = rand(&[5, 4], 17);
    let b = rand(&[5], 18);
    let r = ops::linear(&x, &w, Some(&b)).unwrap();
    assert_eq!(r.sizes(), &[2, 3, 5]);
    let want = ops::add(&ops::matmul(&x, &ops::t(&w).unwrap()).unwrap(), &b, Scalar::Int(1)).unwrap();
    assert_close(&r.to_vec::<f64>().unwrap(), &want.to_vec::<f64>().unwrap(), 1e-6);
    let t = ops::tensordot(&x, &rand(&[4, 3, 6], 19), &[1, 2], &[1, 0]).unwrap();
    assert_eq!(t.sizes(), &[2, 6]);
    assert!(ops::tensordot(&x, &rand(&[4, 3], 19), &[1], &[0]).is_err());
}

#[test]
fn einsum_general() {
    let a = rand(&[2, 3, 4], 20);
    let b = rand(&[2, 4, 5], 21);
    let r = ops::einsum("bij,bjk->bik", &[a.clone(), b.clone()], None).unwrap();
    assert_close(&r.to_vec::<f64>().unwrap(), &ops::bmm(&a, &b).unwrap().to_vec::<f64>().unwrap(), 1e-6);
    // Trace, transpose, sum, implicit output, ellipsis.
    let m = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    assert_eq!(ops::einsum("ii", std::slice::from_ref(&m), None).unwrap().item::<f32>().unwrap(), 5.0);
    assert_eq!(ops::einsum("ii->i", std::slice::from_ref(&m), None).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 4.0]);
    assert_eq!(
        ops::einsum("ij->ji", std::slice::from_ref(&m), None).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0, 3.0, 2.0, 4.0]
    );
    assert_eq!(ops::einsum("ij->", std::slice::from_ref(&m), None).unwrap().item::<f32>().unwrap(), 10.0);
    assert_eq!(
        ops::einsum("ji", std::slice::from_ref(&m), None).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0, 3.0, 2.0, 4.0]
    );
    let r = ops::einsum("...ij,...jk", &[a.clone(), b.clone()], None).unwrap();
    assert_close(&r.to_vec::<f64>().unwrap(), &ops::bmm(&a, &b).unwrap().to_vec::<f64>().unwrap(), 1e-6);
    // Three operands, an index summed across two of them, an outer product.
    let v = rand(&[5], 22);
    let r = ops::einsum("bij,bjk,k->bi", &[a.clone(), b.clone(), v.clone()], None).unwrap();
    let want = ops::matmul(&ops::bmm(&a, &b).unwrap(), &v).unwrap();
    assert_close(&r.to_vec::<f64>().unwrap(), &want.to_vec::<f64>().unwrap(), 1e-5);
    let o = ops::einsum("i,j->ij", &[Tensor::from_slice(&[1.0f32, 2.0]), Tensor::from_slice(&[3.0f32, 4.0])], None)
        .unwrap();
    assert_eq!(o.to_vec::<f32>().unwrap(), vec![3.0, 4.0, 6.0, 8.0]);
    assert!(ops::einsum("ij,jk->ik", std::slice::from_ref(&a), None).is_err());
    assert!(ops::einsum("ij->k", std::slice::from_ref(&m), None).is_err());
    assert!(ops::einsum("bij,bjk->bik", &[a.clone(), a.clone()], None).is_err());
}

#[test]
fn attention_plain_causal_and_masked() {
    let q = rand(&[2, 3, 4], 30);
    let k = rand(&[2, 5, 4], 31);
    let v = rand(&[2, 5, 6], 32);
    let r = ops::scaled_dot_product_attention(&q, &k, &v, None, 0.0, false, None, false).unwrap();
    assert_eq!(r.sizes(), &[2, 3, 6]);
    // Reference: softmax(q k^T / 2) v.
    let s =
        ops::mul_scalar(&ops::matmul(&q, &ops::transpose(&k, -2, -1).unwrap()).unwrap(), Scalar::Float(0.5)).unwrap();
    let p = ops::softmax(&s, -1, None).unwrap();
    let want = ops::matmul(&p, &v).unwrap();
    assert_close(&r.to_vec::<f64>().unwrap(), &want.to_vec::<f64>().unwrap(), 1e-5);
    // Causal with L = 1 attends only to key 0: the output is v[:, 0].
    let q1 = rand(&[2, 1, 4], 33);
    let r = ops::scaled_dot_product_attention(&q1, &k, &v, None, 0.0, true, None, false).unwrap();
    let v0 = ops::select(&v, 1, 0).unwrap();
    assert_close(&r.to_vec::<f64>().unwrap(), &v0.to_vec::<f64>().unwrap(), 1e-6);
    // A boolean mask allowing only key 0 gives the same; a fully masked row gives zeros.
    let mask = Tensor::from_vec(vec![true, false, false, false, false], &[1, 5]).unwrap();
    let r = ops::scaled_dot_product_attention(&q1, &k, &v, Some(&mask), 0.0, false, None, false).unwrap();
    assert_close(&r.to_vec::<f64>().unwrap(), &v0.to_vec::<f64>().unwrap(), 1e-6);
    let none = Tensor::from_vec(vec![false; 5], &[1, 5]).unwrap();
    let r = ops::scaled_dot_product_attention(&q1, &k, &v, Some(&none), 0.0, false, None, false).unwrap();
    assert!(r.to_vec::<f32>().unwrap().iter().all(|&x| x == 0.0));
    assert!(ops::scaled_dot_product_attention(&q1, &k, &v, Some(&mask), 0.0, true, None, false).is_err());
    assert!(ops::scaled_dot_product_attention(&q, &k.cast(ScalarType::F64), &v, None, 0.0, false, None, false).is_err());
}

/// Mid-sized products large enough to be split into per-thread panels (Note [GEMM panels]):
/// split by columns (n ≥ m) and by rows (m > n), with row-major, transposed and sliced
/// operands, panel edges not on a multiple of 16, and `addmm`'s beta/alpha on the split output.
#[test]
fn panel_split_products_match_reference() {
    for &(m, k, n) in &[(40i64, 300i64, 130i64), (150, 200, 45), (17, 1000, 33)] {
        let a = rand(&[m, k], 11);
        let b = rand(&[k, n], 12);
        let want =
            naive_mm(&a.to_vec::<f64>().unwrap(), &b.to_vec::<f64>().unwrap(), m as usize, k as usize, n as usize);
        let r = ops::mm(&a, &b).unwrap();
        assert_close(&r.to_vec::<f64>().unwrap(), &want, 1e-4);
        // Transposed operands: the same values through column-major layouts.
        let at = ops::t(&a.t().unwrap().contiguous().call().unwrap()).unwrap();
        let bt = ops::t(&b.t().unwrap().contiguous().call().unwrap()).unwrap();
        assert!(!at.is_contiguous() && !bt.is_contiguous());
        assert_close(&ops::mm(&at, &bt).unwrap().to_vec::<f64>().unwrap(), &want, 1e-4);
        // addmm's beta * c + alpha * a @ b on the split output.
        let c = rand(&[m, n], 13);
        let r = ops::addmm(&c, &a, &b, Scalar::Float(0.5), Scalar::Float(2.0)).unwrap();
        let cv = c.to_vec::<f64>().unwrap();
        let want2: Vec<f64> = want.iter().zip(&cv).map(|(p, c)| 0.5 * c + 2.0 * p).collect();
        assert_close(&r.to_vec::<f64>().unwrap(), &want2, 1e-4);
        let f64r = ops::mm(&a.cast(ScalarType::F64), &b.cast(ScalarType::F64)).unwrap();
        assert_close(&f64r.to_vec::<f64>().unwrap(), &want, 1e-12);
    }
}

/// Note [GEMM operand layout]: products large enough to have their column-major operands copied
/// row-major (and column-major outputs turned around) give the reference values for every
/// combination of operand and output layouts, in f32 and f64, on one and two threads.
#[test]
fn reoriented_products_match_reference() {
    let (m, k, n) = (300i64, 40i64, 280i64);
    let a = rand(&[m, k], 21);
    let b = rand(&[k, n], 22);
    let want = naive_mm(&a.to_vec::<f64>().unwrap(), &b.to_vec::<f64>().unwrap(), m as usize, k as usize, n as usize);
    let col_major = |x: &Tensor| ops::t(&x.t().unwrap().contiguous().call().unwrap()).unwrap();
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            for dtype in [ScalarType::F32, ScalarType::F64] {
                let tol = if dtype == ScalarType::F32 { 1e-4 } else { 1e-12 };
                let (a, b) = (a.cast(dtype), b.cast(dtype));
                for (a_, b_) in [
                    (a.clone(), b.clone()),
                    (col_major(&a), b.clone()),
                    (a.clone(), col_major(&b)),
                    (col_major(&a), col_major(&b)),
                ] {
                    let r = ops::mm(&a_, &b_).unwrap();
                    assert_eq!(r.dtype(), dtype);
                    assert_close(&r.to_vec::<f64>().unwrap(), &want, tol);
                    // A column-major output (out= a transposed buffer).
                    let out = ops::t(&Tensor::empty_uninit(&[n, m], dtype, c10::Device::CPU).unwrap()).unwrap();
                    ops::mm_out(&a_, &b_, &out).unwrap();
                    assert_eq!(out.strides(), &[1, m]);
                    assert_close(&out.contiguous().call().unwrap().to_vec::<f64>().unwrap(), &want, tol);
                }
            }
        });
    }
}

/// Note [GEMM parallelism]: a batch of products large enough for each to be split over the
/// threads runs one product per task when the batch divides evenly among the threads (4 on 2),
/// and splits each product otherwise (4 on 3); either way every product matches the reference,
/// as do the row-split panels of Note [GEMM panels] (a 256-row product on 2 and 3 threads).
#[test]
fn batched_and_split_products_match_reference_on_several_threads() {
    let (count, m, k, n) = (4usize, 150usize, 200usize, 130usize);
    let a = rand(&[count as i64, m as i64, k as i64], 31);
    let b = rand(&[count as i64, k as i64, n as i64], 32);
    let (av, bv) = (a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap());
    let want: Vec<f64> = (0..count)
        .flat_map(|i| naive_mm(&av[i * m * k..(i + 1) * m * k], &bv[i * k * n..(i + 1) * k * n], m, k, n))
        .collect();
    let sq = rand(&[256, 256], 33);
    let sqv = sq.to_vec::<f64>().unwrap();
    let want_sq = naive_mm(&sqv, &sqv, 256, 256, 256);
    for threads in [2usize, 3] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let r = ops::bmm(&a, &b).unwrap();
            assert_eq!(r.sizes(), &[count as i64, m as i64, n as i64]);
            assert_close(&r.to_vec::<f64>().unwrap(), &want, 1e-4);
            let r = ops::mm(&sq, &sq).unwrap();
            assert_close(&r.to_vec::<f64>().unwrap(), &want_sq, 1e-4);
        });
    }
}
