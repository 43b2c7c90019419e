//! Views share storage and version counter with their base; `reshape` views when it can and
//! copies when it must; zero-copy construction and the `from_blob` deleter contract.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use aten::{ops, Tensor};
use c10::{Error, ScalarType};

fn arange(n: usize, shape: &[i64]) -> Tensor {
    Tensor::from_vec((0..n).map(|x| x as f32).collect(), shape).unwrap()
}

#[test]
fn views_share_storage_and_version_counter() {
    let a = arange(12, &[3, 4]);
    let views = [
        a.view(&[4, 3]).unwrap(),
        a.transpose(0, 1).unwrap(),
        a.permute(&[1, 0]).unwrap(),
        a.narrow(1, 1, 2).unwrap(),
        a.select(0, 2).unwrap(),
        a.slice_with(1, Some(0), None, 2).unwrap(),
        a.unsqueeze(0).unwrap(),
        a.unsqueeze(2).unwrap().squeeze().unwrap(),
        a.unsqueeze(0).unwrap().expand(&[2, 3, 4]).call().unwrap(),
        a.diagonal().call().unwrap(),
        a.reshape(&[2, 6]).unwrap(),
        a.flatten().call().unwrap(),
        ops::as_strided(&a, &[2, 2], &[4, 1], Some(1)).unwrap(),
        a.unfold(1, 2, 2).unwrap(),
    ];
    for v in &views {
        assert!(v.storage().is_same(a.storage()), "{:?} does not share storage", v.sizes());
    }
    let before = a.version();
    views[4].add_(&Tensor::from_slice(&[100.0f32])).call().unwrap();
    assert_eq!(a.version(), before + 1, "an in-place op on a view bumps the base's version");
    assert_eq!(views[0].version(), a.version());
    assert_eq!(a.to_vec::<f32>().unwrap()[8..], [108.0, 109.0, 110.0, 111.0]);
    // A composite in-place op (mul_.Scalar calls mul_.Tensor) still bumps exactly once.
    let before = a.version();
    views[4].mul_(c10::Scalar::Int(-1)).unwrap();
    assert_eq!(a.version(), before + 1);
}

#[test]
fn view_values_and_strides() {
    let a = arange(12, &[3, 4]);
    let t = a.transpose(0, 1).unwrap();
    assert_eq!(t.sizes(), &[4, 3]);
    assert_eq!(t.strides(), &[1, 4]);
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![0., 4., 8., 1., 5., 9., 2., 6., 10., 3., 7., 11.]);
    let s = a.slice_with(1, Some(1), Some(4), 2).unwrap();
    assert_eq!(s.sizes(), &[3, 2]);
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![1., 3., 5., 7., 9., 11.]);
    assert_eq!(a.select(1, -1).unwrap().to_vec::<f32>().unwrap(), vec![3., 7., 11.]);
    assert_eq!(a.diagonal_with(1, 0, 1).unwrap().to_vec::<f32>().unwrap(), vec![1., 6., 11.]);
    let e = Tensor::from_slice(&[1.0f32, 2.0]).unsqueeze(1).unwrap().expand(&[2, 3]).call().unwrap();
    assert_eq!(e.strides(), &[1, 0]);
    assert_eq!(e.to_vec::<f32>().unwrap(), vec![1., 1., 1., 2., 2., 2.]);
    let u = arange(5, &[5]).unfold(0, 2, 1).unwrap();
    assert_eq!(u.sizes(), &[4, 2]);
    assert_eq!(u.to_vec::<f32>().unwrap(), vec![0., 1., 1., 2., 2., 3., 3., 4.]);
}

#[test]
fn reshape_views_when_possible_and_copies_otherwise() {
    let a = arange(12, &[3, 4]);
    let r = a.reshape(&[-1, 6]).unwrap();
    assert!(r.storage().is_same(a.storage()));
    assert_eq!(r.sizes(), &[2, 6]);
    let t = a.t().unwrap();
    let c = t.reshape(&[12]).unwrap();
    assert!(!c.storage().is_same(a.storage()), "a transposed tensor cannot be flattened as a view");
    assert_eq!(c.to_vec::<f32>().unwrap(), t.to_vec::<f32>().unwrap());
    assert!(matches!(t.view(&[12]), Err(Error::ViewStride { .. })));
    assert!(a.view(&[5, -1]).is_err());
    assert!(a.reshape(&[-1, -1]).is_err());
}

#[test]
fn view_errors_are_values() {
    let a = arange(6, &[2, 3]);
    assert!(matches!(a.transpose(0, 2), Err(Error::DimOutOfRange { .. })));
    assert!(a.permute(&[0, 0]).is_err());
    assert!(a.expand(&[4, 3]).call().is_err());
    assert!(a.narrow(1, 2, 2).is_err());
    let e = a.select(0, 2).unwrap_err();
    assert!(matches!(e, Error::Index { .. }), "{e:?}");
    assert_eq!(e.pytorch_message(), "select(): index 2 out of range for tensor of size [2, 3] at dimension 0");
    assert!(a.slice_with(0, None, None, 0).is_err());
    assert!(ops::as_strided(&a, &[3, 3], &[3, 1], None).is_err(), "out of the storage's bounds");
}

#[test]
fn contiguous_clone_and_conversions() {
    let a = arange(6, &[2, 3]);
    let t = a.t().unwrap();
    let c = t.contiguous().call().unwrap();
    assert!(c.is_contiguous());
    assert_eq!(c.strides(), &[2, 1]);
    assert!(a.contiguous().call().unwrap().is_same(&a), "contiguous() of a contiguous tensor is itself");
    let d = a.to(ScalarType::I64).call().unwrap();
    assert_eq!(d.dtype(), ScalarType::I64);
    assert_eq!(d.to_vec::<i64>().unwrap(), vec![0, 1, 2, 3, 4, 5]);
    assert!(a.to(ScalarType::F32).call().unwrap().is_same(&a));
    let k = a.clone_tensor().unwrap();
    assert!(!k.storage().is_same(a.storage()));
    let h = Tensor::from_slice(&[-1.7f32, 2.5, 300.0]).to(ScalarType::U8).call().unwrap();
    assert_eq!(h.to_vec::<u8>().unwrap(), vec![255, 2, 44]);
    // copy_ broadcasts and converts.
    let dst = Tensor::from_vec(vec![0i32; 6], &[2, 3]).unwrap();
    dst.copy_(&Tensor::from_slice(&[1.9f64, -2.9, 3.0])).call().unwrap();
    assert_eq!(dst.to_vec::<i32>().unwrap(), vec![1, -2, 3, 1, -2, 3]);
    assert_eq!(
        a.item::<f32>().unwrap_err().to_string(),
        "item: a Tensor with 6 elements cannot be converted to Scalar"
    );
    assert_eq!(Tensor::from_slice(&[7i64]).item::<f64>().unwrap(), 7.0);
}

#[test]
fn from_vec_is_zero_copy_and_from_blob_deleter_runs_once_after_the_last_view() {
    let v = vec![1.0f32, 2.0, 3.0, 4.0];
    let p = v.as_ptr();
    let t = Tensor::from_vec(v, &[2, 2]).unwrap();
    assert_eq!(t.data_ptr() as *const f32, p);

    let calls = Arc::new(AtomicUsize::new(0));
    let mut buf = vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0].into_boxed_slice();
    let ptr = NonNull::new(buf.as_mut_ptr() as *mut u8).unwrap();
    let c2 = calls.clone();
    // SAFETY: `buf` outlives every tensor below (it is dropped at the end of the test, after the
    // deleter ran), holds 6 aligned f64 values, and is not accessed while the tensors exist.
    let t = unsafe {
        Tensor::from_blob(ptr, &[2, 3], &[3, 1], ScalarType::F64, move || {
            c2.fetch_add(1, Ordering::SeqCst);
        })
    }
    .unwrap();
    let view = t.transpose(0, 1).unwrap();
    let sel = view.select(0, 1).unwrap();
    drop(t);
    drop(view);
    assert_eq!(calls.load(Ordering::SeqCst), 0, "a view still uses the memory");
    assert_eq!(sel.to_vec::<f64>().unwrap(), vec![2.0, 5.0]);
    drop(sel);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    drop(buf);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
