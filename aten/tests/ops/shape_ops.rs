//! Joining, splitting and rearranging operators: values, views, dtypes, non-contiguous and
//! empty inputs, and the error cases.

use aten::{ops, Tensor};
use c10::{Error, Scalar, ScalarType};

/// `[[0, 1, 2], [3, 4, 5]]` as f32.
fn t23() -> Tensor {
    Tensor::from_vec((0..6).map(|x| x as f32).collect(), &[2, 3]).unwrap()
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

#[test]
fn cat_promotes_and_skips_legacy_empty() {
    let a = t23();
    let b = Tensor::from_vec(vec![10i64, 11, 12], &[1, 3]).unwrap();
    let c = ops::cat(&[a.clone(), b], 0).unwrap();
    assert_eq!(c.sizes(), &[3, 3]);
    assert_eq!(c.dtype(), ScalarType::F32);
    assert_eq!(f32s(&c)[6..], [10.0, 11.0, 12.0]);
    // dim 1 with a transposed (non-contiguous) input.
    let t = ops::transpose(&Tensor::from_vec(vec![7.0f32, 8.0, 9.0, 10.0], &[2, 2]).unwrap(), 0, 1).unwrap();
    let d = ops::cat(&[a.clone(), t], -1).unwrap();
    assert_eq!(f32s(&d), vec![0.0, 1.0, 2.0, 7.0, 9.0, 3.0, 4.0, 5.0, 8.0, 10.0]);
    let empty = Tensor::from_vec(Vec::<f32>::new(), &[0]).unwrap();
    assert_eq!(ops::cat(&[empty, a.clone()], 1).unwrap().sizes(), &[2, 3]);
    assert!(ops::cat(&[], 0).is_err());
    assert!(matches!(aten::native::join::cat(&[], 0), Err(Error::Value { .. })));
    let bad = Tensor::from_vec(vec![0.0f32; 4], &[2, 2]).unwrap();
    assert!(matches!(ops::cat(&[a.clone(), bad], 0), Err(Error::Shape { .. })));
    assert!(ops::cat(&[Tensor::scalar_tensor(1.0f32)], 0).is_err());
    // out=: shape must match, the result casts into it.
    let out = Tensor::from_vec(vec![0.0f64; 12], &[4, 3]).unwrap();
    ops::cat_out(&[a.clone(), a.clone()], 0, &out).unwrap();
    assert_eq!(out.to_vec::<f64>().unwrap()[9..], [3.0, 4.0, 5.0]);
    assert!(ops::cat_out(std::slice::from_ref(&a), 0, &out).is_err());
}

#[test]
fn stack_split_chunk_unbind() {
    let a = t23();
    let s = ops::stack(&[a.clone(), a.clone()], 1).unwrap();
    assert_eq!(s.sizes(), &[2, 2, 3]);
    assert_eq!(f32s(&s)[..6], [0.0, 1.0, 2.0, 0.0, 1.0, 2.0]);
    let short = Tensor::from_vec(vec![0.0f32; 2], &[2]).unwrap();
    assert!(matches!(ops::stack(&[a.clone(), short], 0), Err(Error::Shape { .. })));
    assert!(ops::stack(std::slice::from_ref(&a), 3).is_err());

    let parts = ops::split(&a, 2, 1).unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[1].sizes(), &[2, 1]);
    assert_eq!(f32s(&parts[1]), vec![2.0, 5.0]);
    assert!(parts[0].storage().data_ptr() == a.storage().data_ptr(), "split returns views");
    assert!(ops::split(&a, 0, 1).is_err());
    let sizes = ops::split_with_sizes(&a, &[1, 2], 1).unwrap();
    assert_eq!(f32s(&sizes[1]), vec![1.0, 2.0, 4.0, 5.0]);
    assert!(ops::split_with_sizes(&a, &[1, 1], 1).is_err());

    let c = ops::chunk(&Tensor::from_slice(&[1i32, 2, 3, 4, 5]), 3, 0).unwrap();
    assert_eq!(c.iter().map(|t| t.numel()).collect::<Vec<_>>(), vec![2, 2, 1]);
    assert!(ops::chunk(&a, 0, 0).is_err());
    let e = ops::chunk(&Tensor::from_vec(Vec::<f32>::new(), &[0]).unwrap(), 2, 0).unwrap();
    assert_eq!(e.len(), 2);

    let u = ops::unbind(&a, 1).unwrap();
    assert_eq!(u.len(), 3);
    assert_eq!(f32s(&u[2]), vec![2.0, 5.0]);
    assert!(ops::unbind(&Tensor::scalar_tensor(1.0f32), 0).is_err());
}

#[test]
fn meshgrid_both_indexings() {
    let x = Tensor::from_slice(&[1i64, 2, 3]);
    let y = Tensor::from_slice(&[4i64, 5]);
    let ij = ops::meshgrid(&[x.clone(), y.clone()]).unwrap();
    assert_eq!(ij[0].sizes(), &[3, 2]);
    assert_eq!(ij[0].to_vec::<i64>().unwrap(), vec![1, 1, 2, 2, 3, 3]);
    assert_eq!(ij[1].to_vec::<i64>().unwrap(), vec![4, 5, 4, 5, 4, 5]);
    let xy = ops::meshgrid_indexing(&[x.clone(), y], "xy").unwrap();
    assert_eq!(xy[0].sizes(), &[2, 3]);
    assert_eq!(xy[0].to_vec::<i64>().unwrap(), vec![1, 2, 3, 1, 2, 3]);
    assert!(ops::meshgrid_indexing(&[x], "ab").is_err());
}

#[test]
fn repeat_tile_interleave() {
    let a = Tensor::from_slice(&[1u8, 2]);
    let r = ops::repeat(&a, &[2, 2]).unwrap();
    assert_eq!(r.sizes(), &[2, 4]);
    assert_eq!(r.to_vec::<u8>().unwrap(), vec![1, 2, 1, 2, 1, 2, 1, 2]);
    assert!(ops::repeat(&t23(), &[2]).is_err());
    assert_eq!(ops::repeat(&a, &[0]).unwrap().numel(), 0);
    assert_eq!(ops::tile(&t23(), &[2]).unwrap().sizes(), &[2, 6]);

    let t = ops::transpose(&t23(), 0, 1).unwrap(); // [[0,3],[1,4],[2,5]]
    let ri = ops::repeat_interleave_self_int(&t, 2, Some(0), None).unwrap();
    assert_eq!(ri.sizes(), &[6, 2]);
    assert_eq!(f32s(&ri)[..4], [0.0, 3.0, 0.0, 3.0]);
    let flat = ops::repeat_interleave_self_int(&a, 3, None, None).unwrap();
    assert_eq!(flat.to_vec::<u8>().unwrap(), vec![1, 1, 1, 2, 2, 2]);
    let reps = Tensor::from_slice(&[1i64, 0, 2]);
    assert_eq!(ops::repeat_interleave(&reps, None).unwrap().to_vec::<i64>().unwrap(), vec![0, 2, 2]);
    assert!(ops::repeat_interleave_self_tensor(&t23(), &reps, Some(0), None).is_err());
    assert!(ops::repeat_interleave_self_int(&a, -1, None, None).is_err());
}

#[test]
fn flip_roll_rot90() {
    let a = t23();
    assert_eq!(f32s(&ops::flip(&a, &[0, 1]).unwrap()), vec![5.0, 4.0, 3.0, 2.0, 1.0, 0.0]);
    assert!(ops::flip(&a, &[1, -1]).is_err());
    let nc = ops::transpose(&a, 0, 1).unwrap();
    assert_eq!(f32s(&ops::flip(&nc, &[1]).unwrap()), vec![3.0, 0.0, 4.0, 1.0, 5.0, 2.0]);

    assert_eq!(f32s(&ops::roll(&a, &[1], &[1]).unwrap()), vec![2.0, 0.0, 1.0, 5.0, 3.0, 4.0]);
    assert_eq!(f32s(&ops::roll(&a, &[-1], &[]).unwrap()), vec![1.0, 2.0, 3.0, 4.0, 5.0, 0.0]);
    assert!(ops::roll(&a, &[1, 2], &[0]).is_err());

    let r = ops::rot90(&a, 1, &[0, 1]).unwrap();
    assert_eq!(r.sizes(), &[3, 2]);
    assert_eq!(f32s(&r), vec![2.0, 5.0, 1.0, 4.0, 0.0, 3.0]);
    assert_eq!(f32s(&ops::rot90(&a, -2, &[0, 1]).unwrap()), f32s(&ops::flip(&a, &[0, 1]).unwrap()));
    assert!(ops::rot90(&a, 1, &[0, 0]).is_err());
}

#[test]
fn tril_triu_all_variants() {
    let m = Tensor::from_vec((1..=9).collect(), &[3, 3]).unwrap();
    assert_eq!(ops::tril(&m, 0).unwrap().to_vec::<i32>().unwrap(), vec![1, 0, 0, 4, 5, 0, 7, 8, 9]);
    assert_eq!(ops::triu(&m, 1).unwrap().to_vec::<i32>().unwrap(), vec![0, 2, 3, 0, 0, 6, 0, 0, 0]);
    let b = Tensor::from_vec(vec![true; 4], &[2, 2]).unwrap();
    assert_eq!(ops::triu(&b, 0).unwrap().to_vec::<bool>().unwrap(), vec![true, true, false, true]);
    let c = m.clone_tensor().unwrap();
    ops::tril_(&c, -1).unwrap();
    assert_eq!(c.to_vec::<i32>().unwrap(), vec![0, 0, 0, 4, 0, 0, 7, 8, 0]);
    let out = Tensor::from_vec(vec![0i32; 9], &[3, 3]).unwrap();
    ops::triu_out(&ops::transpose(&m, 0, 1).unwrap(), 0, &out).unwrap();
    assert_eq!(out.to_vec::<i32>().unwrap(), vec![1, 4, 7, 0, 5, 8, 0, 0, 9]);
    assert!(ops::tril(&Tensor::from_slice(&[1.0f32]), 0).is_err());
}

#[test]
fn diag_and_diag_embed() {
    let v = Tensor::from_slice(&[1i64, 2]);
    let d = ops::diag(&v, 1).unwrap();
    assert_eq!(d.sizes(), &[3, 3]);
    assert_eq!(d.to_vec::<i64>().unwrap(), vec![0, 1, 0, 0, 0, 2, 0, 0, 0]);
    assert_eq!(f32s(&ops::diag(&t23(), 0).unwrap()), vec![0.0, 4.0]);
    assert!(ops::diag(&Tensor::scalar_tensor(1.0f32), 0).is_err());
    let e = ops::diag_embed(&t23(), 0, -2, -1).unwrap();
    assert_eq!(e.sizes(), &[2, 3, 3]);
    assert_eq!(f32s(&e)[9..], [3.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 5.0]);
}

#[test]
fn views_broadcast_movedim_unflatten() {
    let a = t23();
    let b = ops::broadcast_to(&Tensor::from_slice(&[1.0f32, 2.0, 3.0]), &[2, 3]).unwrap();
    assert_eq!(f32s(&b), vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    assert!(ops::broadcast_to(&a, &[3, 3]).is_err());
    let x = Tensor::from_vec(vec![0.0f32; 24], &[2, 3, 4]).unwrap();
    assert_eq!(ops::movedim(&x, &[0, 1], &[2, 0]).unwrap().sizes(), &[3, 4, 2]);
    assert_eq!(ops::movedim_int(&x, -1, 0).unwrap().sizes(), &[4, 2, 3]);
    assert!(ops::movedim(&x, &[0, 0], &[1, 2]).is_err());
    assert_eq!(ops::unflatten(&x, 2, &[2, -1]).unwrap().sizes(), &[2, 3, 2, 2]);
    assert!(ops::unflatten(&x, 2, &[3, 2]).is_err());
}

#[test]
fn pad_modes() {
    let a = t23();
    let c = ops::pad(&a, &[1, 0], "constant", Some(9.0)).unwrap();
    assert_eq!(f32s(&c), vec![9.0, 0.0, 1.0, 2.0, 9.0, 3.0, 4.0, 5.0]);
    // Negative padding crops.
    assert_eq!(f32s(&ops::pad(&a, &[0, -1, -1, 0], "constant", None).unwrap()), vec![3.0, 4.0]);
    let x = ops::unsqueeze(&a, 0).unwrap(); // [1, 2, 3]
    assert_eq!(f32s(&ops::pad(&x, &[2, 1], "reflect", None).unwrap())[..6], [2.0, 1.0, 0.0, 1.0, 2.0, 1.0]);
    assert_eq!(f32s(&ops::pad(&x, &[2, 1], "replicate", None).unwrap())[..6], [0.0, 0.0, 0.0, 1.0, 2.0, 2.0]);
    assert_eq!(f32s(&ops::pad(&x, &[2, 1], "circular", None).unwrap())[..6], [1.0, 2.0, 0.0, 1.0, 2.0, 0.0]);
    assert!(ops::pad(&x, &[3, 0], "reflect", None).is_err());
    assert!(ops::pad(&x, &[1], "constant", None).is_err());
    assert!(ops::pad(&x, &[1, 1], "wrap", None).is_err());
    let i = Tensor::from_slice(&[1i64, 2]);
    let ci = ops::constant_pad_nd(&i, &[1, 1], Scalar::Int(-1)).unwrap();
    assert_eq!((ci.dtype(), ci.to_vec::<i64>().unwrap()), (ScalarType::I64, vec![-1, 1, 2, -1]));
}
