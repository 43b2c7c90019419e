//! Loss operators against values computed by hand or naive loops: reductions, weights,
//! ignore_index, label smoothing, probability targets, spatial inputs, dtypes and errors.

use aten::{ops, Tensor};
use c10::{Error, ScalarType};

const NONE: i64 = 0;
const MEAN: i64 = 1;
const SUM: i64 = 2;

fn f64s(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

fn t(v: &[f64], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

#[test]
fn regression_losses_and_reductions() {
    let x = t(&[1.0, 2.0, 3.0, -1.0], &[2, 2]);
    let y = t(&[0.5, 2.0, 5.0, 1.0], &[2, 2]);
    let none = ops::mse_loss(&x, &y, NONE).unwrap();
    assert_eq!(none.sizes(), &[2, 2]);
    assert_eq!(f64s(&none), vec![0.25, 0.0, 4.0, 4.0]);
    let mean = ops::mse_loss(&x, &y, MEAN).unwrap();
    assert_eq!(mean.sizes(), &[] as &[i64]);
    assert_eq!(f64s(&mean), vec![2.0625]);
    assert_eq!(f64s(&ops::mse_loss(&x, &y, SUM).unwrap()), vec![8.25]);
    assert_eq!(f64s(&ops::l1_loss(&x, &y, SUM).unwrap()), vec![4.5]);
    // smooth_l1 (beta 1): |d| < 1 -> 0.5 d^2, else |d| - 0.5
    assert_eq!(f64s(&ops::smooth_l1_loss(&x, &y, NONE, 1.0).unwrap()), vec![0.125, 0.0, 1.5, 1.5]);
    // huber (delta 0.5): |d| < 0.5 -> 0.5 d^2 else 0.5 (|d| - 0.25)
    assert_eq!(f64s(&ops::huber_loss(&x, &y, NONE, 0.5).unwrap()), vec![0.125, 0.0, 0.875, 0.875]);
    assert!(ops::smooth_l1_loss(&x, &y, MEAN, -1.0).is_err());
    assert!(ops::huber_loss(&x, &y, MEAN, 0.0).is_err());
    assert!(ops::mse_loss(&x, &y, 3).is_err());
    // Non-contiguous input and f32.
    let xt = x.to(ScalarType::F32).call().unwrap().transpose(0, 1).unwrap();
    let yt = y.to(ScalarType::F32).call().unwrap().transpose(0, 1).unwrap();
    let l = ops::mse_loss(&xt, &yt, NONE).unwrap();
    assert_eq!(l.dtype(), ScalarType::F32);
    assert_eq!(l.to_vec::<f32>().unwrap(), vec![0.25, 4.0, 0.0, 4.0]);
    let i = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    assert!(matches!(ops::mse_loss(&i, &i, MEAN), Err(Error::UnsupportedDtype { .. })));
}

#[test]
fn binary_cross_entropy_family() {
    let p = t(&[0.25, 0.5, 1.0], &[3]);
    let y = t(&[1.0, 0.0, 0.0], &[3]);
    let l = f64s(&ops::binary_cross_entropy(&p, &y, None, NONE).unwrap());
    close(&l, &[-(0.25f64.ln()), -(0.5f64.ln()), 100.0], 1e-12);
    assert!(ops::binary_cross_entropy(&t(&[1.5], &[1]), &t(&[1.0], &[1]), None, MEAN).is_err());
    assert!(ops::binary_cross_entropy(&p, &t(&[1.0], &[1]), None, MEAN).is_err());
    let w = t(&[2.0, 1.0, 0.0], &[3]);
    let lw = f64s(&ops::binary_cross_entropy(&p, &y, Some(&w), SUM).unwrap());
    close(&lw, &[-2.0 * 0.25f64.ln() - 0.5f64.ln()], 1e-12);

    let x = t(&[-2.0, 0.0, 3.0], &[3]);
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    let expected: Vec<f64> = [(-2.0, 1.0), (0.0, 0.0), (3.0, 0.0)]
        .iter()
        .map(|&(v, tt)| -(tt * sig(v).ln() + (1.0 - tt) * (1.0 - sig(v)).ln()))
        .collect();
    close(&f64s(&ops::binary_cross_entropy_with_logits(&x, &y, None, None, NONE).unwrap()), &expected, 1e-12);
    let pw = t(&[3.0], &[1]);
    let expected_pw: Vec<f64> = [(-2.0, 1.0), (0.0, 0.0), (3.0, 0.0)]
        .iter()
        .map(|&(v, tt)| -(3.0 * tt * sig(v).ln() + (1.0 - tt) * (1.0 - sig(v)).ln()))
        .collect();
    close(&f64s(&ops::binary_cross_entropy_with_logits(&x, &y, None, Some(&pw), NONE).unwrap()), &expected_pw, 1e-12);
    let m = f64s(&ops::binary_cross_entropy_with_logits(&x, &y, Some(&w), None, MEAN).unwrap());
    close(&m, &[(2.0 * expected[0] + expected[1]) / 3.0], 1e-12);
}

#[test]
fn kl_div_and_margin_losses() {
    let x = t(&[-1.0, -2.0, -0.5], &[3]);
    let y = t(&[0.5, 0.0, 0.25], &[3]);
    let l = f64s(&ops::kl_div(&x, &y, NONE, false).unwrap());
    close(&l, &[0.5 * (0.5f64.ln() + 1.0), 0.0, 0.25 * (0.25f64.ln() + 0.5)], 1e-12);
    let lt = f64s(&ops::kl_div(&x, &y, NONE, true).unwrap());
    close(&lt, &[0.5f64.exp() * 1.5, 2.0, 0.25f64.exp() * 0.75], 1e-12);

    let a = t(&[1.0, 2.0, 3.0], &[3]);
    let b = t(&[2.0, 2.0, 1.0], &[3]);
    let s = t(&[1.0, -1.0, -1.0], &[3]);
    assert_eq!(f64s(&ops::margin_ranking_loss(&a, &b, &s, 0.5, NONE).unwrap()), vec![1.5, 0.5, 2.5]);

    let u = t(&[1.0, 0.0, 1.0, 1.0], &[2, 2]);
    let v = t(&[1.0, 0.0, -1.0, 0.0], &[2, 2]);
    let target = t(&[1.0, -1.0], &[2]);
    let c = f64s(&ops::cosine_embedding_loss(&u, &v, &target, 0.0, NONE).unwrap());
    close(&c, &[0.0, 0.0], 1e-9);
    let c2 = f64s(&ops::cosine_embedding_loss(&u, &u, &target, 0.5, NONE).unwrap());
    close(&c2, &[0.0, 0.5], 1e-9);
    assert!(ops::cosine_embedding_loss(&u, &v, &t(&[1.0], &[]), 0.0, MEAN).is_err());

    let anchor = t(&[0.0, 0.0, 1.0, 1.0], &[2, 2]);
    let pos = t(&[3.0, 4.0, 1.0, 1.0], &[2, 2]);
    let neg = t(&[0.0, 1.0, 1.0, 2.0], &[2, 2]);
    let l = f64s(&ops::triplet_margin_loss(&anchor, &pos, &neg, 1.0, 2.0, 0.0, false, NONE).unwrap());
    close(&l, &[5.0, 0.0], 1e-12);
    let l1 = f64s(&ops::triplet_margin_loss(&anchor, &pos, &neg, 1.0, 1.0, 0.0, false, NONE).unwrap());
    close(&l1, &[7.0, 0.0], 1e-12);
    // swap: d(pos, neg) = sqrt(9 + 9) < d(anchor, neg) = 1 is false, so row 0 is unchanged
    let ls = f64s(&ops::triplet_margin_loss(&anchor, &pos, &neg, 1.0, 2.0, 0.0, true, NONE).unwrap());
    close(&ls, &[5.0, 0.0], 1e-12);
    assert!(ops::triplet_margin_loss(&anchor, &pos, &t(&[1.0, 2.0], &[2]), 1.0, 2.0, 1e-6, false, MEAN).is_err());
}

fn log_softmax_rows(x: &[f64], c: usize) -> Vec<f64> {
    x.chunks(c)
        .flat_map(|r| {
            let m = r.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let lse = m + r.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
            r.iter().map(move |v| v - lse).collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn nll_loss_weights_ignore_index_and_errors() {
    let x = t(&[-1.0, -2.0, -3.0, -0.5, -1.5, -2.5], &[2, 3]);
    let target = Tensor::from_vec(vec![2i64, 0], &[2]).unwrap();
    assert_eq!(f64s(&ops::nll_loss(&x, &target, None, NONE, -100).unwrap()), vec![3.0, 0.5]);
    assert_eq!(f64s(&ops::nll_loss(&x, &target, None, MEAN, -100).unwrap()), vec![1.75]);
    let w = t(&[2.0, 1.0, 0.5], &[3]);
    // weighted mean: (0.5 * 3 + 2 * 0.5) / (0.5 + 2)
    close(&f64s(&ops::nll_loss(&x, &target, Some(&w), MEAN, -100).unwrap()), &[1.0], 1e-12);
    assert_eq!(f64s(&ops::nll_loss(&x, &target, None, MEAN, 2).unwrap()), vec![0.5]);
    assert_eq!(f64s(&ops::nll_loss(&x, &target, None, SUM, 2).unwrap()), vec![0.5]);
    // Unbatched.
    let l = ops::nll_loss(&t(&[-1.0, -2.0], &[2]), &Tensor::scalar_tensor(1i64), None, NONE, -100).unwrap();
    assert_eq!(l.sizes(), &[] as &[i64]);
    assert_eq!(f64s(&l), vec![2.0]);
    let bad = Tensor::from_vec(vec![3i64, 0], &[2]).unwrap();
    let e = ops::nll_loss(&x, &bad, None, MEAN, -100).unwrap_err();
    assert!(matches!(&e, Error::Index { .. }) && e.pytorch_message() == "Target 3 is out of bounds.", "{e}");
    let short = Tensor::from_vec(vec![0i64], &[1]).unwrap();
    let e = ops::nll_loss(&x, &short, None, MEAN, -100).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e:?}");
    assert!(ops::nll_loss(&x, &target, Some(&t(&[1.0], &[1])), MEAN, -100).is_err());
    let int_target = Tensor::from_vec(vec![2i32, 0], &[2]).unwrap();
    assert!(ops::nll_loss(&x, &int_target, None, MEAN, -100).is_err());
}

#[test]
fn nll_loss_spatial() {
    // [N=1, C=2, H=1, W=2]
    let x = t(&[-1.0, -2.0, -3.0, -4.0], &[1, 2, 1, 2]);
    let target = Tensor::from_vec(vec![1i64, 0], &[1, 1, 2]).unwrap();
    let l = ops::nll_loss2d(&x, &target, None, NONE, -100).unwrap();
    assert_eq!(l.sizes(), &[1, 1, 2]);
    assert_eq!(f64s(&l), vec![3.0, 2.0]);
    assert!(ops::nll_loss2d(&x, &Tensor::from_vec(vec![1i64, 0], &[1, 2]).unwrap(), None, NONE, -100).is_err());
    // 3-D input through nll_loss_nd: [N=1, C=2, L=2]
    let x3 = t(&[-1.0, -2.0, -3.0, -4.0], &[1, 2, 2]);
    let t3 = Tensor::from_vec(vec![1i64, 1], &[1, 2]).unwrap();
    assert_eq!(f64s(&ops::nll_loss_nd(&x3, &t3, None, NONE, -100).unwrap()), vec![3.0, 4.0]);
    assert!(ops::nll_loss_nd(&x3, &Tensor::from_vec(vec![1i64, 1, 1], &[1, 3]).unwrap(), None, NONE, -100).is_err());
}

#[test]
fn cross_entropy_indices_smoothing_probabilities_and_spatial() {
    let xv = [1.0, 2.0, 0.5, -1.0, 0.0, 3.0];
    let x = t(&xv, &[2, 3]);
    let lp = log_softmax_rows(&xv, 3);
    let target = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    let l = f64s(&ops::cross_entropy_loss(&x, &target, None, NONE, -100, 0.0).unwrap());
    close(&l, &[-lp[1], -lp[5]], 1e-12);
    // Label smoothing 0.3 and ignore_index = 2 (row 1 ignored).
    let ls = f64s(&ops::cross_entropy_loss(&x, &target, None, MEAN, 2, 0.3).unwrap());
    let smooth0 = -(lp[0] + lp[1] + lp[2]);
    close(&ls, &[0.7 * -lp[1] + 0.1 * smooth0], 1e-12);
    // Probability targets equal to one-hot give the index loss.
    let probs = t(&[0.0, 1.0, 0.0, 0.0, 0.0, 1.0], &[2, 3]);
    let lpb = f64s(&ops::cross_entropy_loss(&x, &probs, None, NONE, -100, 0.0).unwrap());
    close(&lpb, &l, 1e-12);
    assert!(ops::cross_entropy_loss(&x, &probs, None, NONE, 1, 0.0).is_err());
    assert!(ops::cross_entropy_loss(&x, &target, None, MEAN, -100, 1.5).is_err());
    // Weighted.
    let w = t(&[1.0, 2.0, 3.0], &[3]);
    let lw = f64s(&ops::cross_entropy_loss(&x, &target, Some(&w), MEAN, -100, 0.0).unwrap());
    close(&lw, &[(2.0 * -lp[1] + 3.0 * -lp[5]) / 5.0], 1e-12);
    // Spatial [N=1, C=3, L=2], non-contiguous input.
    let xs = t(&xv, &[1, 2, 3]).transpose(1, 2).unwrap();
    let ts = Tensor::from_vec(vec![1i64, 2], &[1, 2]).unwrap();
    let lsp = ops::cross_entropy_loss(&xs, &ts, None, NONE, -100, 0.0).unwrap();
    assert_eq!(lsp.sizes(), &[1, 2]);
    close(&f64s(&lsp), &l, 1e-12);
    // f32 in, f32 out.
    let lf = ops::cross_entropy_loss(&x.to(ScalarType::F32).call().unwrap(), &target, None, MEAN, -100, 0.0).unwrap();
    assert_eq!(lf.dtype(), ScalarType::F32);
}

#[test]
fn dropout_identity_cases_and_statistics() {
    let x = Tensor::from_vec(vec![1.0f32; 1000], &[10, 100]).unwrap();
    assert_eq!(ops::dropout(&x, 0.5, false).unwrap().to_vec::<f32>().unwrap(), vec![1.0; 1000]);
    assert_eq!(ops::dropout(&x, 0.0, true).unwrap().to_vec::<f32>().unwrap(), vec![1.0; 1000]);
    assert!(ops::dropout(&x, 1.5, true).is_err());
    let y = ops::dropout(&x, 0.5, true).unwrap().to_vec::<f32>().unwrap();
    assert!(y.iter().all(|&v| v == 0.0 || v == 2.0));
    let kept = y.iter().filter(|&&v| v == 2.0).count();
    assert!((350..650).contains(&kept), "{kept}");
    assert_eq!(ops::dropout(&x, 1.0, true).unwrap().to_vec::<f32>().unwrap(), vec![0.0; 1000]);
    // Feature dropout zeroes whole (n, c) planes.
    let x3 = Tensor::from_vec(vec![1.0f32; 1000], &[10, 20, 5]).unwrap();
    let f = ops::feature_dropout(&x3, 0.5, true).unwrap().to_vec::<f32>().unwrap();
    for plane in f.chunks(5) {
        assert!(plane.iter().all(|&v| v == plane[0]));
    }
    assert!(ops::feature_dropout(&Tensor::from_slice(&[1.0f32]), 0.5, true).is_err());
    // Alpha dropout keeps zero mean / unit variance inputs roughly normalised; dropped elements
    // take one value.
    let a = ops::alpha_dropout(&x, 0.2, true).unwrap().to_vec::<f32>().unwrap();
    let mut distinct: Vec<f32> = a.clone();
    distinct.sort_by(|p, q| p.partial_cmp(q).unwrap());
    distinct.dedup();
    assert_eq!(distinct.len(), 2);
    let (out, mask) = ops::native_dropout(&x, 0.25, Some(true)).unwrap();
    assert_eq!(mask.dtype(), ScalarType::Bool);
    let (o, m) = (out.to_vec::<f32>().unwrap(), mask.to_vec::<bool>().unwrap());
    for (v, k) in o.iter().zip(m) {
        assert_eq!(*v, if k { 1.0 / 0.75 } else { 0.0 });
    }
    let z = x.clone_tensor().unwrap();
    ops::dropout_(&z, 0.5, true).unwrap();
    assert!(z.to_vec::<f32>().unwrap().contains(&0.0));
}
