//! The `_foreach_*` operators (Note [Foreach operators]): each list element gets the per-tensor
//! operator's value, in place where the name ends in `_`, and the lists are checked as PyTorch
//! checks them. Expected values are the closed forms on small numbers.

use aten::{ops, Tensor};
use c10::{Scalar, ScalarType};

fn t(v: &[f32]) -> Tensor {
    Tensor::from_slice(v)
}

fn vals(ts: &[Tensor]) -> Vec<Vec<f32>> {
    ts.iter().map(|x| x.to_vec::<f32>().unwrap()).collect()
}

#[test]
fn foreach_operators_apply_the_per_tensor_operator_to_every_element() {
    let a = [t(&[1.0, -2.0]), t(&[4.0])];
    let b = [t(&[0.5, 3.0]), t(&[-1.0])];
    let f = Scalar::Float;
    assert_eq!(vals(&ops::_foreach_add(&a, f(1.5)).unwrap()), [vec![2.5, -0.5], vec![5.5]]);
    assert_eq!(vals(&ops::_foreach_add_list(&a, &b, f(2.0)).unwrap()), [vec![2.0, 4.0], vec![2.0]]);
    assert_eq!(vals(&ops::_foreach_mul(&a, f(-2.0)).unwrap()), [vec![-2.0, 4.0], vec![-8.0]]);
    assert_eq!(vals(&ops::_foreach_mul_list(&a, &b).unwrap()), [vec![0.5, -6.0], vec![-4.0]]);
    assert_eq!(vals(&ops::_foreach_div(&a, f(4.0)).unwrap()), [vec![0.25, -0.5], vec![1.0]]);
    // self + value * t1 * t2 and self + value * t1 / t2.
    let c = [t(&[2.0, 2.0]), t(&[4.0])];
    assert_eq!(vals(&ops::_foreach_addcmul(&a, &b, &c, f(0.5)).unwrap()), [vec![1.5, 1.0], vec![2.0]]);
    assert_eq!(vals(&ops::_foreach_addcdiv(&a, &b, &c, f(2.0)).unwrap()), [vec![1.5, 1.0], vec![3.5]]);
    // start + weight * (end - start).
    assert_eq!(vals(&ops::_foreach_lerp(&a, &b, f(0.5)).unwrap()), [vec![0.75, 0.5], vec![1.5]]);
    assert_eq!(vals(&ops::_foreach_sqrt(&[t(&[4.0, 9.0])]).unwrap()), [vec![2.0, 3.0]]);
    assert_eq!(vals(&ops::_foreach_neg(&a).unwrap()), [vec![-1.0, 2.0], vec![-4.0]]);
    assert_eq!(vals(&ops::_foreach_maximum(&a, &b).unwrap()), [vec![1.0, 3.0], vec![4.0]]);
    let norms = ops::_foreach_norm(&[t(&[3.0, -4.0]), t(&[1.0])], f(2.0), None).unwrap();
    assert_eq!(vals(&norms), [vec![5.0], vec![1.0]]);
    assert_eq!(norms[0].dim(), 0);
    let n64 = ops::_foreach_norm(&[t(&[3.0, -4.0])], Scalar::Int(1), Some(ScalarType::F64)).unwrap();
    assert_eq!((n64[0].dtype(), n64[0].to_vec::<f64>().unwrap()), (ScalarType::F64, vec![7.0]));
    // The inputs are untouched by the out-of-place forms.
    assert_eq!(vals(&a), [vec![1.0, -2.0], vec![4.0]]);
}

#[test]
fn in_place_foreach_operators_write_every_tensor() {
    let f = Scalar::Float;
    let a = [t(&[1.0, -2.0]), t(&[4.0])];
    let b = [t(&[0.5, 3.0]), t(&[-1.0])];
    ops::_foreach_add_list_(&a, &b, f(2.0)).unwrap();
    assert_eq!(vals(&a), [vec![2.0, 4.0], vec![2.0]]);
    ops::_foreach_mul_(&a, f(0.5)).unwrap();
    assert_eq!(vals(&a), [vec![1.0, 2.0], vec![1.0]]);
    ops::_foreach_add_(&a, f(1.0)).unwrap();
    ops::_foreach_mul_list_(&a, &b).unwrap();
    assert_eq!(vals(&a), [vec![1.0, 9.0], vec![-2.0]]);
    ops::_foreach_div_(&a, f(-1.0)).unwrap();
    ops::_foreach_neg_(&a).unwrap();
    assert_eq!(vals(&a), [vec![1.0, 9.0], vec![-2.0]]);
    ops::_foreach_sqrt_(&a[..1]).unwrap();
    assert_eq!(vals(&a[..1]), [vec![1.0, 3.0]]);
    ops::_foreach_lerp_(&a, &b, f(0.5)).unwrap();
    assert_eq!(vals(&a), [vec![0.75, 3.0], vec![-1.5]]);
    ops::_foreach_maximum_(&a, &b).unwrap();
    assert_eq!(vals(&a), [vec![0.75, 3.0], vec![-1.0]]);
    let (c, d) = ([t(&[2.0, 2.0]), t(&[4.0])], [t(&[1.0, 4.0]), t(&[2.0])]);
    ops::_foreach_addcmul_(&a, &c, &d, f(0.25)).unwrap();
    assert_eq!(vals(&a), [vec![1.25, 5.0], vec![1.0]]);
    ops::_foreach_addcdiv_(&a, &c, &d, f(1.0)).unwrap();
    assert_eq!(vals(&a), [vec![3.25, 5.5], vec![3.0]]);
    ops::_foreach_copy_(&a, &b, false).unwrap();
    assert_eq!(vals(&a), vals(&b));
    let version = a[0].version();
    ops::_foreach_zero_(&a).unwrap();
    assert_eq!(vals(&a), [vec![0.0, 0.0], vec![0.0]]);
    assert!(a[0].version() > version, "an in-place foreach operator bumps the version");
}

#[test]
fn foreach_lists_are_checked_as_pytorch_checks_them() {
    let e = ops::_foreach_add(&[], Scalar::Int(1)).unwrap_err().to_string();
    assert!(e.contains("Tensor list must have at least one tensor."), "{e}");
    let (a, b) = ([t(&[1.0]), t(&[2.0])], [t(&[1.0])]);
    let e = ops::_foreach_add_list_(&a, &b, Scalar::Int(1)).unwrap_err().to_string();
    assert!(e.contains("Tensor lists must have the same number of tensors, got 2 and 1"), "{e}");
    let e = ops::_foreach_addcmul(&a, &a, &b, Scalar::Int(1)).unwrap_err().to_string();
    assert!(e.contains("got 2 and 1"), "{e}");
    // A shape mismatch inside a pair is the per-tensor operator's error.
    assert!(ops::_foreach_mul_list(&[t(&[1.0, 2.0])], &[t(&[1.0, 2.0, 3.0])]).is_err());
    assert_eq!(vals(&a), [vec![1.0], vec![2.0]], "nothing was written by the refused calls");
}
