//! Reductions, scans and softmax: values, dtypes, keepdim, ties and NaN, empty inputs, errors.

use aten::{ops, Tensor};
use c10::{Error, ScalarType};

fn t23() -> Tensor {
    Tensor::from_vec(vec![1.0f32, 5.0, 3.0, 4.0, 2.0, 6.0], &[2, 3]).unwrap()
}

#[test]
fn sums_means_and_dtypes() {
    let a = t23();
    assert_eq!(a.sum().call().unwrap().item::<f32>().unwrap(), 21.0);
    let s = ops::sum_dim_intlist(&a, Some(&[1]), true, None).unwrap();
    assert_eq!(s.sizes(), &[2, 1]);
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![9.0, 12.0]);
    let i = Tensor::from_vec(vec![1i32, 2, 3], &[3]).unwrap();
    assert_eq!(i.sum().call().unwrap().dtype(), ScalarType::I64, "integer sums accumulate in int64");
    assert!(matches!(i.mean().call(), Err(Error::InvalidArgument { .. })));
    assert_eq!(ops::mean_dim(&a, Some(&[0]), false, None).unwrap().to_vec::<f32>().unwrap(), vec![2.5, 3.5, 4.5]);
    let empty = Tensor::from_vec(Vec::<f32>::new(), &[0, 3]).unwrap();
    assert_eq!(ops::sum_dim_intlist(&empty, Some(&[0]), false, None).unwrap().to_vec::<f32>().unwrap(), vec![0.0; 3]);
    let v = ops::var(&a, Some(&[1]), Some(c10::Scalar::Int(1)), false).unwrap();
    assert_eq!(v.to_vec::<f32>().unwrap(), vec![4.0, 4.0]);
}

#[test]
fn extremes_ties_and_nan() {
    let a = Tensor::from_slice(&[3.0f32, 7.0, 7.0, 1.0]);
    assert_eq!(a.argmax().call().unwrap().item::<i64>().unwrap(), 1, "first index on ties");
    let (v, i) = ops::max_dim(&t23(), 1, false).unwrap();
    assert_eq!((v.to_vec::<f32>().unwrap(), i.to_vec::<i64>().unwrap()), (vec![5.0, 6.0], vec![1, 2]));
    let n = Tensor::from_slice(&[1.0f32, f32::NAN, 9.0]);
    assert!(n.max().unwrap().item::<f32>().unwrap().is_nan());
    assert_eq!(n.argmax().call().unwrap().item::<i64>().unwrap(), 1);
    let empty = Tensor::from_vec(Vec::<f32>::new(), &[0]).unwrap();
    assert!(empty.max().is_err());
    // An empty input reduced over a non-empty dim gives empty results; over a zero-size dim it
    // is an error naming the dim (PyTorch's messages).
    let e05 = ops::zeros(&[0, 5], Some(ScalarType::F32), None, None, None).unwrap();
    let (v, i) = ops::max_dim(&e05, 1, false).unwrap();
    assert_eq!((v.sizes().to_vec(), i.sizes().to_vec(), i.dtype()), (vec![0], vec![0], ScalarType::I64));
    assert_eq!(ops::amax(&e05, &[1], true).unwrap().sizes(), &[0, 1]);
    let msg = |r: c10::Result<Tensor>| r.unwrap_err().to_string();
    assert!(msg(ops::amax(&e05, &[0], false)).contains("amax(): Expected reduction dim 0 to have non-zero size."));
    assert!(msg(ops::amax(&e05, &[-1, 0], false)).contains("Expected reduction dim 0 to have non-zero size."));
    assert!(msg(ops::amax(&e05, &[], false)).contains("Expected reduction dim to be specified for input.numel() == 0."));
    assert!(msg(ops::argmax(&e05, None, false))
        .contains("argmax(): Expected reduction dim to be specified for input.numel() == 0."));
    assert_eq!(ops::argmin(&e05, Some(1), false).unwrap().sizes(), &[0]);
}

#[test]
fn scans_and_softmax() {
    let a = t23();
    assert_eq!(a.cumsum(1).call().unwrap().to_vec::<f32>().unwrap(), vec![1.0, 6.0, 9.0, 4.0, 6.0, 12.0]);
    let sm = a.softmax(1).call().unwrap().to_vec::<f32>().unwrap();
    assert!((sm[..3].iter().sum::<f32>() - 1.0).abs() < 1e-6);
    let big = Tensor::from_slice(&[1000.0f32, 1000.0]);
    assert_eq!(big.log_softmax(0).call().unwrap().to_vec::<f32>().unwrap(), vec![-std::f32::consts::LN_2; 2]);
    let i = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    assert!(i.softmax(0).call().is_err());
    assert_eq!(i.softmax_with(0, Some(ScalarType::F64)).unwrap().dtype(), ScalarType::F64);
    let b = Tensor::from_vec(vec![true, false, true, true], &[2, 2]).unwrap();
    assert_eq!(b.any_dim(1).call().unwrap().to_vec::<bool>().unwrap(), vec![true, true]);
    assert!(!b.all().call().unwrap().item::<bool>().unwrap());
}

/// Sums over leading dimensions of a contiguous tensor (the fast column path) agree with the
/// same sums over a non-contiguous copy (the reference path), for f32 and f64, with and
/// without keepdim, across the 256-column blocks.
#[test]
fn leading_dim_sums_match_the_reference_path() {
    let n = 2 * 3 * 300;
    let v: Vec<f64> = (0..n).map(|i| ((i * 37 % 101) as f64) * 0.25 - 7.0).collect();
    for dtype in [ScalarType::F32, ScalarType::F64] {
        let a = Tensor::from_vec(v.clone(), &[2, 3, 300]).unwrap().to(dtype).call().unwrap();
        // The same values laid out non-contiguously: a transposed copy transposed back.
        let strided = ops::transpose(&ops::transpose(&a, 0, 2).unwrap().contiguous().call().unwrap(), 0, 2).unwrap();
        assert!(!strided.is_contiguous());
        for (dims, keepdim, shape) in
            [(vec![0i64], false, vec![3i64, 300]), (vec![0, 1], true, vec![1, 1, 300]), (vec![0, 1], false, vec![300])]
        {
            let fast = ops::sum_dim_intlist(&a, Some(&dims), keepdim, None).unwrap();
            let reference = ops::sum_dim_intlist(&strided, Some(&dims), keepdim, None).unwrap();
            assert_eq!(fast.sizes(), shape.as_slice());
            assert_eq!(fast.dtype(), dtype);
            assert_eq!(fast.to_vec::<f64>().unwrap(), reference.to_vec::<f64>().unwrap(), "{dtype} dims {dims:?}");
            let mean = ops::mean_dim(&a, Some(&dims), keepdim, None).unwrap();
            let count = if dims.len() == 1 { 2.0 } else { 6.0 };
            for (m, s) in mean.to_vec::<f64>().unwrap().iter().zip(fast.to_vec::<f64>().unwrap()) {
                assert!((m - s / count).abs() < 1e-5, "{dtype} mean over {dims:?}: {m} vs {}", s / count);
            }
        }
        // Column 0 of the [2*3, 300] view: elements 0, 300, ..., 1500.
        let s = ops::sum_dim_intlist(&a, Some(&[0, 1]), false, None).unwrap().to_vec::<f64>().unwrap();
        let want: f64 = (0..6).map(|r| v[r * 300]).sum();
        assert!((s[0] - want).abs() < 1e-4, "{dtype}: {} vs {want}", s[0]);
    }
}
