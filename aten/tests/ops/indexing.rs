//! Indexing, scatter/gather, masks, sorting and norms: values, dtypes, non-contiguous and empty
//! inputs, and the error cases.

use aten::{ops, Tensor};
use c10::{Error, Scalar, ScalarType};

/// `[[0, 1, 2], [3, 4, 5]]` as f32.
fn t23() -> Tensor {
    Tensor::from_vec((0..6).map(|x| x as f32).collect(), &[2, 3]).unwrap()
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

fn longs(v: &[i64]) -> Tensor {
    Tensor::from_slice(v)
}

#[test]
fn index_select_and_embedding() {
    let a = t23();
    let r = ops::index_select(&a, 1, &longs(&[2, 0, 2])).unwrap();
    assert_eq!(r.sizes(), &[2, 3]);
    assert_eq!(f32s(&r), vec![2.0, 0.0, 2.0, 5.0, 3.0, 5.0]);
    let nc = ops::transpose(&a, 0, 1).unwrap();
    let i32_idx = Tensor::from_slice(&[1i32]);
    assert_eq!(f32s(&ops::index_select(&nc, 0, &i32_idx).unwrap()), vec![1.0, 4.0]);
    assert!(matches!(ops::index_select(&a, 0, &longs(&[2])), Err(Error::IndexOutOfRange { .. })));
    assert!(ops::index_select(&a, 0, &longs(&[-1])).is_err());
    assert!(ops::index_select(&a, 0, &Tensor::from_slice(&[0.0f32])).is_err());
    assert_eq!(ops::index_select(&a, 0, &longs(&[])).unwrap().sizes(), &[0, 3]);

    let w = Tensor::from_vec((0..8).map(|x| x as f64).collect(), &[4, 2]).unwrap();
    let idx = Tensor::from_vec(vec![3i64, 0, 1, 3], &[2, 2]).unwrap();
    let e = ops::embedding(&w, &idx, -1, false, false).unwrap();
    assert_eq!(e.sizes(), &[2, 2, 2]);
    assert_eq!(e.to_vec::<f64>().unwrap(), vec![6.0, 7.0, 0.0, 1.0, 2.0, 3.0, 6.0, 7.0]);
    assert!(ops::embedding(&w, &longs(&[4]), -1, false, false).is_err());
    assert!(ops::embedding(&Tensor::from_slice(&[1.0f32]), &longs(&[0]), -1, false, false).is_err());
}

#[test]
fn gather_scatter() {
    let a = t23();
    let idx = Tensor::from_vec(vec![2i64, 0, 1, 1], &[2, 2]).unwrap();
    assert_eq!(f32s(&ops::gather(&a, 1, &idx, false).unwrap()), vec![2.0, 0.0, 4.0, 4.0]);
    assert!(ops::gather(&a, 1, &Tensor::from_vec(vec![3i64], &[1, 1]).unwrap(), false).is_err());
    // int32 indices are accepted (as in PyTorch); other dtypes are not.
    assert_eq!(f32s(&ops::gather(&a, 1, &Tensor::from_vec(vec![0i32], &[1, 1]).unwrap(), false).unwrap()), vec![0.0]);
    assert!(ops::gather(&a, 1, &Tensor::from_vec(vec![0i16], &[1, 1]).unwrap(), false).is_err());
    assert!(ops::gather(&a, 1, &longs(&[0]), false).is_err(), "rank mismatch");

    let zeros = Tensor::from_vec(vec![0.0f32; 6], &[2, 3]).unwrap();
    let src = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let s = ops::scatter(&zeros, 1, &idx, &src).unwrap();
    assert_eq!(f32s(&s), vec![2.0, 0.0, 1.0, 0.0, 4.0, 0.0]);
    let sa = ops::scatter_add(&zeros, 1, &idx, &src).unwrap();
    assert_eq!(f32s(&sa), vec![2.0, 0.0, 1.0, 0.0, 7.0, 0.0]);
    let sv =
        ops::scatter_value(&zeros, 0, &Tensor::from_vec(vec![1i64], &[1, 1]).unwrap(), Scalar::Float(9.0)).unwrap();
    assert_eq!(f32s(&sv), vec![0.0, 0.0, 0.0, 9.0, 0.0, 0.0]);
    let ones = Tensor::from_vec(vec![2.0f32; 6], &[2, 3]).unwrap();
    let sm = ops::scatter_reduce(&ones, 1, &idx, &src, "multiply").unwrap();
    assert_eq!(f32s(&sm), vec![4.0, 2.0, 2.0, 2.0, 24.0, 2.0]);
    assert!(ops::scatter_reduce(&ones, 1, &idx, &src, "max").is_err());
    assert!(ops::scatter(&zeros, 1, &idx, &Tensor::from_vec(vec![1.0f64; 4], &[2, 2]).unwrap()).is_err());
    // In place on an integer tensor; out=.
    let it = Tensor::from_vec(vec![0i64; 3], &[3]).unwrap();
    ops::scatter_add_(&it, 0, &longs(&[1, 1, 2]), &longs(&[5, 6, 7])).unwrap();
    assert_eq!(it.to_vec::<i64>().unwrap(), vec![0, 11, 7]);
    let out = Tensor::from_vec(vec![0.0f32; 6], &[2, 3]).unwrap();
    ops::scatter_add_out(&zeros, 1, &idx, &src, &out).unwrap();
    assert_eq!(f32s(&out), f32s(&sa));
}

#[test]
fn index_add_copy_fill_take() {
    let a = t23();
    let src = Tensor::from_vec(vec![1.0f32; 4], &[2, 2]).unwrap();
    let r = ops::index_add(&a, 1, &longs(&[0, 0]), &src, Scalar::Int(2)).unwrap();
    assert_eq!(f32s(&r), vec![4.0, 1.0, 2.0, 7.0, 4.0, 5.0]);
    let c = ops::index_copy(&a, 1, &longs(&[2, 0]), &src).unwrap();
    assert_eq!(f32s(&c), vec![1.0, 1.0, 1.0, 1.0, 4.0, 1.0]);
    let f = ops::index_fill(&a, 0, &longs(&[-1]), Scalar::Float(-1.0)).unwrap();
    assert_eq!(f32s(&f), vec![0.0, 1.0, 2.0, -1.0, -1.0, -1.0]);
    assert!(ops::index_add(&a, 1, &longs(&[0]), &src, Scalar::Int(1)).is_err(), "slice shape mismatch");
    assert!(ops::index_copy(&a, 1, &longs(&[3, 0]), &src).is_err());

    let nc = ops::transpose(&a, 0, 1).unwrap();
    let t = ops::take(&nc, &Tensor::from_vec(vec![1i64, -1], &[2, 1]).unwrap()).unwrap();
    assert_eq!((t.sizes().to_vec(), f32s(&t)), (vec![2, 1], vec![3.0, 5.0]));
    assert!(ops::take(&a, &longs(&[6])).is_err());
}

#[test]
fn advanced_indexing() {
    let x = Tensor::from_vec((0..24).map(|v| v as i64).collect(), &[2, 3, 4]).unwrap();
    // Adjacent index tensors replace their dims in place.
    let r = ops::index(&x, &[None, Some(longs(&[0, 2])), Some(longs(&[1, -1]))]).unwrap();
    assert_eq!(r.sizes(), &[2, 2]);
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![1, 11, 13, 23]);
    // Separated index tensors go first.
    let s = ops::index(&x, &[Some(longs(&[1])), None, Some(longs(&[0]))]).unwrap();
    assert_eq!(s.sizes(), &[1, 3]);
    assert_eq!(s.to_vec::<i64>().unwrap(), vec![12, 16, 20]);
    // Broadcasting index tensors.
    let rows = Tensor::from_vec(vec![0i64, 1], &[2, 1]).unwrap();
    let b = ops::index(&x, &[Some(rows), Some(longs(&[0, 1, 2]))]).unwrap();
    assert_eq!(b.sizes(), &[2, 3, 4]);
    // Bool masks select their true coordinates; non-contiguous self.
    let m = ops::transpose(&Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap(), 0, 1).unwrap();
    let mask = Tensor::from_vec(vec![true, false, false, true], &[2, 2]).unwrap();
    assert_eq!(f32s(&ops::index(&m, &[Some(mask)]).unwrap()), vec![1.0, 4.0]);
    let row_mask = Tensor::from_slice(&[false, true]);
    assert_eq!(f32s(&ops::index(&m, &[Some(row_mask)]).unwrap()), vec![2.0, 4.0]);

    assert!(matches!(ops::index(&x, &[Some(longs(&[2]))]), Err(Error::IndexOutOfRange { .. })));
    assert!(ops::index(&x, &[Some(longs(&[0, 1])), Some(longs(&[0, 1, 2]))]).is_err());
    assert!(ops::index(&x, &[None, None, None, Some(longs(&[0]))]).is_err());
    assert!(ops::index(&x, &[Some(Tensor::from_slice(&[0.0f32]))]).is_err());
    assert!(ops::index(&x, &[Some(Tensor::from_slice(&[true, false, true]))]).is_err());
}

#[test]
fn index_put_assign_and_accumulate() {
    let z = Tensor::from_vec(vec![0.0f32; 4], &[4]).unwrap();
    let idx = longs(&[1, 1, 3]);
    let v = Tensor::from_slice(&[1.0f32, 2.0, 3.0]);
    assert_eq!(f32s(&ops::index_put(&z, &[Some(idx.clone())], &v, true).unwrap()), vec![0.0, 3.0, 0.0, 3.0]);
    let one = Tensor::scalar_tensor(7.0f32);
    assert_eq!(f32s(&ops::index_put(&z, &[Some(idx.clone())], &one, false).unwrap()), vec![0.0, 7.0, 0.0, 7.0]);
    ops::index_put_(&z, &[Some(Tensor::from_slice(&[true, false, false, true]))], &one, false).unwrap();
    assert_eq!(f32s(&z), vec![7.0, 0.0, 0.0, 7.0]);
    assert!(ops::index_put(&z, &[Some(idx.clone())], &Tensor::from_slice(&[1.0f64]), false).is_err());
    assert!(ops::index_put(&z, &[Some(idx)], &Tensor::from_slice(&[1.0f32, 2.0]), false).is_err());
}

#[test]
fn masks_nonzero_one_hot() {
    let a = t23();
    let mask = Tensor::from_slice(&[true, false, true]);
    assert_eq!(f32s(&ops::masked_select(&a, &mask).unwrap()), vec![0.0, 2.0, 3.0, 5.0]);
    assert!(ops::masked_select(&a, &Tensor::from_slice(&[1i64, 0, 1])).is_err());
    let src = Tensor::from_slice(&[10.0f32, 20.0, 30.0, 40.0]);
    let ms = ops::masked_scatter(&a, &mask, &src).unwrap();
    assert_eq!(f32s(&ms), vec![10.0, 1.0, 20.0, 30.0, 4.0, 40.0]);
    assert!(ops::masked_scatter(&a, &mask, &Tensor::from_slice(&[1.0f32])).is_err());

    let nz = ops::nonzero(&ops::transpose(&a, 0, 1).unwrap()).unwrap();
    assert_eq!(nz.sizes(), &[5, 2]);
    assert_eq!(nz.to_vec::<i64>().unwrap(), vec![0, 1, 1, 0, 1, 1, 2, 0, 2, 1]);
    assert_eq!(ops::nonzero(&Tensor::scalar_tensor(3i32)).unwrap().sizes(), &[1, 0]);
    assert_eq!(ops::nonzero(&Tensor::from_vec(Vec::<f32>::new(), &[0, 2]).unwrap()).unwrap().sizes(), &[0, 2]);
    let cnt = ops::count_nonzero_dim_intlist(&a, &[0]).unwrap();
    assert_eq!((cnt.dtype(), cnt.to_vec::<i64>().unwrap()), (ScalarType::I64, vec![1, 2, 2]));
    assert_eq!(ops::count_nonzero(&a, None).unwrap().item::<i64>().unwrap(), 5);

    let oh = ops::one_hot(&longs(&[0, 2]), -1).unwrap();
    assert_eq!((oh.sizes().to_vec(), oh.to_vec::<i64>().unwrap()), (vec![2, 3], vec![1, 0, 0, 0, 0, 1]));
    assert!(ops::one_hot(&longs(&[3]), 3).is_err());
    assert!(ops::one_hot(&longs(&[-1]), 3).is_err());
    assert!(ops::one_hot(&longs(&[]), -1).is_err());
    assert!(ops::one_hot(&Tensor::from_slice(&[1i32]), 3).is_err());
}

#[test]
fn sort_topk_and_order_statistics() {
    let v = Tensor::from_slice(&[3.0f32, f32::NAN, 1.0, 3.0]);
    let (s, i) = ops::sort(&v, -1, false).unwrap();
    let s = f32s(&s);
    assert_eq!(&s[..3], &[1.0, 3.0, 3.0]);
    assert!(s[3].is_nan(), "NaN sorts last");
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![2, 0, 3, 1], "stable on ties");
    let (sd, id) = ops::sort_stable(&v, Some(true), 0, true).unwrap();
    assert!(f32s(&sd)[0].is_nan());
    assert_eq!(id.to_vec::<i64>().unwrap(), vec![1, 0, 3, 2]);
    let a = ops::transpose(&t23(), 0, 1).unwrap(); // [[0,3],[1,4],[2,5]]
    assert_eq!(ops::argsort(&a, 0, true).unwrap().to_vec::<i64>().unwrap(), vec![2, 2, 1, 1, 0, 0]);
    let ints = Tensor::from_slice(&[5i8, -1, 3]);
    let (tv, ti) = ops::topk(&ints, 2, -1, true, true).unwrap();
    assert_eq!((tv.to_vec::<i8>().unwrap(), ti.to_vec::<i64>().unwrap()), (vec![5, 3], vec![0, 2]));
    let (bv, _) = ops::topk(&ints, 1, 0, false, true).unwrap();
    assert_eq!(bv.to_vec::<i8>().unwrap(), vec![-1]);
    assert!(ops::topk(&ints, 4, -1, true, true).is_err());
    assert_eq!(ops::sort(&Tensor::from_vec(Vec::<f32>::new(), &[0]).unwrap(), 0, false).unwrap().0.numel(), 0);

    let (kv, ki) = ops::kthvalue(&t23(), 2, 1, true).unwrap();
    assert_eq!((kv.sizes().to_vec(), f32s(&kv), ki.to_vec::<i64>().unwrap()), (vec![2, 1], vec![1.0, 4.0], vec![1, 1]));
    assert!(ops::kthvalue(&t23(), 4, 1, false).is_err());
    assert_eq!(ops::median(&Tensor::from_slice(&[4i64, 1, 3, 2])).unwrap().item::<i64>().unwrap(), 2);
    assert!(ops::median(&v).unwrap().item::<f32>().unwrap().is_nan());
    let (mv, mi) = ops::median_dim(&t23(), 0, false).unwrap();
    assert_eq!((f32s(&mv), mi.to_vec::<i64>().unwrap()), (vec![0.0, 1.0, 2.0], vec![0, 0, 0]));

    let (cv, ci) = ops::cummax(&Tensor::from_slice(&[1i32, 3, 2, 3]), 0).unwrap();
    assert_eq!((cv.to_vec::<i32>().unwrap(), ci.to_vec::<i64>().unwrap()), (vec![1, 3, 3, 3], vec![0, 1, 1, 3]));
    let (mnv, _) = ops::cummin(&t23(), 0).unwrap();
    assert_eq!(f32s(&mnv), vec![0.0, 1.0, 2.0, 0.0, 1.0, 2.0]);
}

#[test]
fn unique_with_inverse_and_counts() {
    let x = Tensor::from_vec(vec![3i64, 1, 3, 2, 1, 3], &[2, 3]).unwrap();
    let (u, inv, cnt) = ops::_unique2(&x, true, true, true).unwrap();
    assert_eq!(u.to_vec::<i64>().unwrap(), vec![1, 2, 3]);
    assert_eq!(inv.sizes(), &[2, 3]);
    assert_eq!(inv.to_vec::<i64>().unwrap(), vec![2, 0, 2, 1, 0, 2]);
    assert_eq!(cnt.to_vec::<i64>().unwrap(), vec![2, 1, 3]);
    let (_, inv, cnt) = ops::_unique2(&x, true, false, false).unwrap();
    assert_eq!((inv.numel(), cnt.numel()), (0, 0));
}

#[test]
fn norms() {
    let a = Tensor::from_vec(vec![3.0f64, -4.0, 0.0, 1.0], &[2, 2]).unwrap();
    assert_eq!(ops::norm(&a, Scalar::Int(2)).unwrap().item::<f64>().unwrap(), 26f64.sqrt());
    let n1 = ops::norm_scalaropt_dim(&a, Some(Scalar::Int(1)), &[1], true).unwrap();
    assert_eq!((n1.sizes().to_vec(), n1.to_vec::<f64>().unwrap()), (vec![2, 1], vec![7.0, 1.0]));
    let inf = ops::norm_scalaropt_dim(&a, Some(Scalar::Float(f64::INFINITY)), &[0], false).unwrap();
    assert_eq!(inf.to_vec::<f64>().unwrap(), vec![3.0, 4.0]);
    let zero = ops::norm_scalaropt_dim(&a, Some(Scalar::Int(0)), &[0], false).unwrap();
    assert_eq!(zero.to_vec::<f64>().unwrap(), vec![1.0, 2.0]);
    let fro = ops::norm_scalaropt_dim(&ops::transpose(&a, 0, 1).unwrap(), None, &[0, 1], false).unwrap();
    assert_eq!(fro.item::<f64>().unwrap(), 26f64.sqrt());
    let half = ops::norm_scalaropt_dim_dtype(&a, None, &[1], false, ScalarType::F32).unwrap();
    assert_eq!(half.dtype(), ScalarType::F32);
    assert!(ops::norm(&Tensor::from_slice(&[1i64]), Scalar::Int(2)).is_err());
}

/// `embedding_bag.padding_idx` against closed forms on a table whose row `r` is
/// `[r, -r, 10 r, r % 3]`: sums, means and maxima of each bag's rows, padding left out, an
/// empty bag of zeros, and PyTorch's bookkeeping outputs (`offset2bag` the bag of every entry,
/// `bag_size` the kept entries (zeros for sums), `max_indices` the row of each maximum); then
/// PyTorch's errors.
#[test]
fn embedding_bag_reduces_each_bag_and_keeps_pytorchs_bookkeeping() {
    let table: Vec<f32> = (0..10).flat_map(|r| [r as f32, -(r as f32), 10.0 * r as f32, (r % 3) as f32]).collect();
    let w = Tensor::from_vec(table, &[10, 4]).unwrap();
    let idx = longs(&[1, 9, 0, 4, 5, 0, 7, 8]);
    let offsets = longs(&[0, 3, 3]);
    // Bags: [1, 9, 0], [], [4, 5, 0, 7, 8]; with padding_idx -10 (row 0) the zeros drop out.
    let run = |mode: i64, pad: Option<i64>| {
        ops::embedding_bag_padding_idx(&w, &idx, &offsets, false, mode, false, None, false, pad).unwrap()
    };
    let row = |r: i64| [r as f32, -(r as f32), 10.0 * r as f32, (r % 3) as f32];
    let sum = |rows: &[i64]| (0..4).map(|j| rows.iter().map(|&r| row(r)[j]).sum::<f32>()).collect::<Vec<_>>();
    let (a, b) = ([1, 9], [4, 5, 7, 8]);
    let (out, offset2bag, bag_size, max_indices) = run(0, Some(-10));
    assert_eq!(f32s(&out), [sum(&a), vec![0.0; 4], sum(&b)].concat());
    assert_eq!(offset2bag.to_vec::<i64>().unwrap(), [0, 0, 0, 2, 2, 2, 2, 2]);
    assert_eq!((bag_size.to_vec::<i64>().unwrap(), max_indices.to_vec::<i64>().unwrap()), (vec![0; 3], vec![0; 3]));
    // Without padding, sums of a float table take PyTorch's fast path: no offset2bag.
    assert_eq!(run(0, None).1.sizes(), [0]);
    let (out, _, bag_size, max_indices) = run(1, Some(-10));
    let mean = |rows: &[i64]| sum(rows).iter().map(|s| s / rows.len() as f32).collect::<Vec<_>>();
    let got = f32s(&out);
    for (g, w) in got.iter().zip([mean(&a), vec![0.0; 4], mean(&b)].concat()) {
        assert!((g - w).abs() <= 1e-6 * w.abs().max(1.0), "{got:?}");
    }
    assert_eq!(bag_size.to_vec::<i64>().unwrap(), [2, 0, 4]);
    assert_eq!(max_indices.to_vec::<i64>().unwrap(), [2, 0, 4]);
    // Without padding, row 0 is in the first and last bags: it is the maximum of column 1.
    let (out, _, bag_size, max_indices) = run(2, None);
    assert_eq!(f32s(&out), [9.0, 0.0, 90.0, 1.0, 0.0, 0.0, 0.0, 0.0, 8.0, 0.0, 80.0, 2.0]);
    assert_eq!(bag_size.to_vec::<i64>().unwrap(), [3, 0, 5]);
    assert_eq!(max_indices.sizes(), [3, 4]);
    let m = max_indices.to_vec::<i64>().unwrap();
    assert_eq!((&m[..3], &m[4..8], &m[8..11]), (&[9, 0, 9][..], &[0; 4][..], &[8, 0, 8][..]));
    // Column 3 of the last bag ties (5 % 3 = 8 % 3): either row holds the maximum.
    assert!(m[3] == 1 && [5, 8].contains(&m[11]), "{m:?}");
    // Per-sample weights scale the rows of a sum; the plain overload has no padding.
    let psw = Tensor::from_vec(vec![2.0f32, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], &[8]).unwrap();
    let (out, ..) = ops::embedding_bag(&w, &idx, &offsets, false, 0, false, Some(&psw), false).unwrap();
    assert_eq!(&f32s(&out)[..4], &[2.0, -2.0, 20.0, 2.0]);
    // PyTorch's errors.
    let err = |r: c10::Result<(Tensor, Tensor, Tensor, Tensor)>| r.unwrap_err().to_string();
    let e = err(ops::embedding_bag_padding_idx(&w, &idx, &offsets, false, 1, false, None, false, Some(-11)));
    assert!(e.contains("padding_idx must be within the number of embeddings, -10 through 9, but got -11"), "{e}");
    let e = err(ops::embedding_bag(&w, &idx, &offsets, false, 3, false, None, false));
    assert!(e.contains("`mode` must be sum, mean, or max."), "{e}");
    let e = err(ops::embedding_bag(&w, &idx, &offsets, false, 1, false, Some(&psw), false));
    assert!(e.contains("per_sample_weights only supported with mode='sum'"), "{e}");
    let e = err(ops::embedding_bag(&w, &idx, &longs(&[1, 3]), false, 0, false, None, false));
    assert!(e.contains("offsets[0] has to be 0"), "{e}");
    let e = err(ops::embedding_bag(&w, &longs(&[1, 99]), &longs(&[0]), false, 0, false, None, false));
    assert!(e.contains("99"), "{e}");
}
