//! Normalisation operators against naive loops: values, statistics shapes, running-stat
//! updates, dtypes, non-contiguous inputs and errors.

use aten::{ops, Tensor};
use c10::{Error, ScalarType};

fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

fn seq(n: usize, shape: &[i64]) -> Tensor {
    Tensor::from_vec((0..n).map(|i| ((i * 7) % 11) as f64 * 0.3 - 1.0).collect::<Vec<f64>>(), shape).unwrap()
}

/// Naive normalisation of `row`.
fn naive(row: &[f64], eps: f64) -> (Vec<f64>, f64, f64) {
    let n = row.len() as f64;
    let m = row.iter().sum::<f64>() / n;
    let v = row.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n;
    let r = 1.0 / (v + eps).sqrt();
    (row.iter().map(|x| (x - m) * r).collect(), m, r)
}

#[test]
fn native_layer_norm_values_and_stat_shapes() {
    let x = seq(24, &[2, 3, 4]);
    let w = Tensor::from_slice(&[1.0f64, 2.0, 0.5, -1.0]);
    let b = Tensor::from_slice(&[0.0f64, 1.0, 0.0, 2.0]);
    let (y, mean, rstd) = ops::native_layer_norm(&x, &[4], Some(&w), Some(&b), 1e-5).unwrap();
    assert_eq!(y.sizes(), &[2, 3, 4]);
    assert_eq!(mean.sizes(), &[2, 3, 1]);
    assert_eq!(rstd.sizes(), &[2, 3, 1]);
    let xv = x.to_vec::<f64>().unwrap();
    let (wv, bv) = ([1.0, 2.0, 0.5, -1.0], [0.0, 1.0, 0.0, 2.0]);
    let mut expected = Vec::new();
    for (i, row) in xv.chunks(4).enumerate() {
        let (z, m, r) = naive(row, 1e-5);
        expected.extend(z.iter().enumerate().map(|(j, v)| v * wv[j] + bv[j]));
        close(&[mean.to_vec::<f64>().unwrap()[i]], &[m], 1e-12);
        close(&[rstd.to_vec::<f64>().unwrap()[i]], &[r], 1e-12);
    }
    close(&y.to_vec::<f64>().unwrap(), &expected, 1e-12);
    // Two normalised dims: statistics keep both as size 1.
    let (_, m2, _) = ops::native_layer_norm(&x, &[3, 4], None, None, 1e-5).unwrap();
    assert_eq!(m2.sizes(), &[2, 1, 1]);
}

#[test]
fn layer_norm_non_contiguous_and_half() {
    let x = seq(12, &[4, 3]);
    let xt = x.transpose(0, 1).unwrap(); // [3, 4], non-contiguous
    assert!(!xt.is_contiguous());
    let y = ops::layer_norm(&xt, &[4], None, None, 1e-5, true).unwrap();
    let rows = xt.contiguous().call().unwrap().to_vec::<f64>().unwrap();
    let expected: Vec<f64> = rows.chunks(4).flat_map(|r| naive(r, 1e-5).0).collect();
    close(&y.to_vec::<f64>().unwrap(), &expected, 1e-12);
    let h = x.to(ScalarType::F16).call().unwrap();
    let yh = ops::layer_norm(&h, &[3], None, None, 1e-5, true).unwrap();
    assert_eq!(yh.dtype(), ScalarType::F16);
    let expected: Vec<f64> = x.to_vec::<f64>().unwrap().chunks(3).flat_map(|r| naive(r, 1e-5).0).collect();
    close(&yh.to_vec::<f64>().unwrap(), &expected, 2e-3);
}

#[test]
fn layer_norm_errors() {
    let x = seq(12, &[3, 4]);
    assert!(matches!(ops::layer_norm(&x, &[3], None, None, 1e-5, true), Err(Error::Shape { .. })));
    assert!(ops::layer_norm(&x, &[], None, None, 1e-5, true).is_err());
    let w = Tensor::from_slice(&[1.0f64, 2.0]);
    assert!(matches!(ops::layer_norm(&x, &[4], Some(&w), None, 1e-5, true), Err(Error::Shape { .. })));
    let i = Tensor::from_vec(vec![1i64, 2, 3, 4], &[1, 4]).unwrap();
    assert!(matches!(ops::layer_norm(&i, &[4], None, None, 1e-5, true), Err(Error::UnsupportedDtype { .. })));
}

#[test]
fn batch_norm_train_updates_running_stats_and_eval_uses_them() {
    // [N=2, C=2, L=3]
    let x = seq(12, &[2, 2, 3]);
    let xv = x.to_vec::<f64>().unwrap();
    let rm = Tensor::from_slice(&[0.5f64, -0.5]);
    let rv = Tensor::from_slice(&[2.0f64, 1.0]);
    let w = Tensor::from_slice(&[1.5f64, 0.5]);
    let b = Tensor::from_slice(&[0.1f64, -0.2]);
    let (y, save_mean, save_invstd) =
        ops::native_batch_norm(&x, Some(&w), Some(&b), Some(&rm), Some(&rv), true, 0.1, 1e-5).unwrap();
    let mut mean = [0.0; 2];
    let mut var = [0.0; 2];
    for c in 0..2 {
        let vals: Vec<f64> = (0..2).flat_map(|n| xv[(n * 2 + c) * 3..(n * 2 + c) * 3 + 3].to_vec()).collect();
        mean[c] = vals.iter().sum::<f64>() / 6.0;
        var[c] = vals.iter().map(|v| (v - mean[c]).powi(2)).sum::<f64>() / 6.0;
    }
    close(&save_mean.to_vec::<f64>().unwrap(), &mean, 1e-12);
    close(&save_invstd.to_vec::<f64>().unwrap(), &[1.0 / (var[0] + 1e-5).sqrt(), 1.0 / (var[1] + 1e-5).sqrt()], 1e-12);
    close(&rm.to_vec::<f64>().unwrap(), &[0.9 * 0.5 + 0.1 * mean[0], 0.9 * -0.5 + 0.1 * mean[1]], 1e-12);
    close(
        &rv.to_vec::<f64>().unwrap(),
        &[0.9 * 2.0 + 0.1 * var[0] * 6.0 / 5.0, 0.9 * 1.0 + 0.1 * var[1] * 6.0 / 5.0],
        1e-12,
    );
    let yv = y.to_vec::<f64>().unwrap();
    let (wv, bv) = ([1.5, 0.5], [0.1, -0.2]);
    for (k, v) in xv.iter().enumerate() {
        let c = (k / 3) % 2;
        let e = (v - mean[c]) / (var[c] + 1e-5).sqrt() * wv[c] + bv[c];
        assert!((yv[k] - e).abs() < 1e-12);
    }
    // Eval: the (updated) running statistics normalise; nothing changes them.
    let before = rm.to_vec::<f64>().unwrap();
    let (ye, m0, _) = ops::native_batch_norm(&x, None, None, Some(&rm), Some(&rv), false, 0.1, 1e-5).unwrap();
    assert_eq!(m0.sizes(), &[0]);
    assert_eq!(rm.to_vec::<f64>().unwrap(), before);
    let rvv = rv.to_vec::<f64>().unwrap();
    let yev = ye.to_vec::<f64>().unwrap();
    for (k, v) in xv.iter().enumerate() {
        let c = (k / 3) % 2;
        assert!((yev[k] - (v - before[c]) / (rvv[c] + 1e-5).sqrt()).abs() < 1e-12);
    }
    let y2 = ops::batch_norm(&x, None, None, Some(&rm), Some(&rv), false, 0.1, 1e-5, true).unwrap();
    assert_eq!(y2.to_vec::<f64>().unwrap(), yev);
}

#[test]
fn batch_norm_errors() {
    let x = seq(12, &[2, 2, 3]);
    let bad = Tensor::from_slice(&[0.0f64, 0.0, 0.0]);
    assert!(matches!(
        ops::batch_norm(&x, None, None, Some(&bad), Some(&bad), true, 0.1, 1e-5, true),
        Err(Error::Shape { .. })
    ));
    assert!(ops::batch_norm(&x, None, None, None, None, false, 0.1, 1e-5, true).is_err());
    assert!(ops::batch_norm(&seq(3, &[3]), None, None, None, None, true, 0.1, 1e-5, true).is_err());
}

#[test]
fn instance_norm_normalises_each_instance_channel() {
    let x = seq(24, &[2, 3, 4]);
    let rm = Tensor::from_slice(&[0.0f64; 3]);
    let rv = Tensor::from_slice(&[1.0f64; 3]);
    let y = ops::instance_norm(&x, None, None, Some(&rm), Some(&rv), true, 0.1, 1e-5, true).unwrap();
    let xv = x.to_vec::<f64>().unwrap();
    let expected: Vec<f64> = xv.chunks(4).flat_map(|r| naive(r, 1e-5).0).collect();
    close(&y.to_vec::<f64>().unwrap(), &expected, 1e-12);
    // running_mean[c] = 0.1 * mean over the batch of the per-instance means
    let means: Vec<f64> = xv.chunks(4).map(|r| r.iter().sum::<f64>() / 4.0).collect();
    let rmv = rm.to_vec::<f64>().unwrap();
    for c in 0..3 {
        assert!((rmv[c] - 0.1 * (means[c] + means[3 + c]) / 2.0).abs() < 1e-12);
    }
    assert!(ops::instance_norm(&x, None, None, None, None, false, 0.1, 1e-5, true).is_err());
}

#[test]
fn group_norm_values_and_errors() {
    let x = seq(24, &[2, 4, 3]);
    let w = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0]);
    let xf = x.to(ScalarType::F32).call().unwrap();
    let (y, mean, rstd) = ops::native_group_norm(&xf, Some(&w), None, 2, 4, 3, 2, 1e-5).unwrap();
    assert_eq!(y.dtype(), ScalarType::F32);
    assert_eq!(mean.sizes(), &[2, 2]);
    assert_eq!(rstd.sizes(), &[2, 2]);
    let xv = xf.to_vec::<f64>().unwrap();
    let mut expected = Vec::new();
    for (g, row) in xv.chunks(6).enumerate() {
        let (z, _, _) = naive(row, 1e-5);
        for (k, v) in z.iter().enumerate() {
            let ch = (g % 2) * 2 + k / 3;
            expected.push(v * (ch + 1) as f64);
        }
    }
    close(&y.to_vec::<f64>().unwrap(), &expected, 1e-5);
    let y2 = ops::group_norm(&xf, 2, Some(&w), None, 1e-5, true).unwrap();
    assert_eq!(y2.to_vec::<f32>().unwrap(), y.to_vec::<f32>().unwrap());
    assert!(ops::group_norm(&xf, 3, None, None, 1e-5, true).is_err());
    assert!(ops::group_norm(&xf, 2, Some(&Tensor::from_slice(&[1.0f32])), None, 1e-5, true).is_err());
}
