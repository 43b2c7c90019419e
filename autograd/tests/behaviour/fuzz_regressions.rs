//! Inputs the `op_surface` fuzz target (fuzz/) found to panic inside autograd kernels, replayed
//! as plain calls: each must now be an error with PyTorch's message.

use aten::{ops, Tensor};
use autograd::TensorAutograd;

fn leaf(values: Vec<f32>, shape: &[i64]) -> Tensor {
    Tensor::from_vec(values, shape).unwrap().requires_grad_(true).unwrap()
}

/// `avg_pool2d` of a zero-dim (or 1-d) input that requires grad went to the decomposition,
/// which indexed `sizes()[1]` of the unsqueezed input; it now runs the kernel's checks first.
#[test]
fn avg_pool2d_decomposition_checks_rank_and_parameters() {
    let e = ops::avg_pool2d(&leaf(vec![1.0], &[]), &[1], &[], &[0], false, true, None).unwrap_err().to_string();
    assert!(e.contains("Expected 3D or 4D (batch mode) tensor"), "{e}");
    let x = leaf(vec![0.0; 16], &[1, 4, 4]);
    let e = ops::avg_pool2d(&x, &[2, 2, 2], &[], &[0], false, true, None).unwrap_err().to_string();
    assert!(e.contains("kernel_size must either be a single int, or a tuple of 2 ints"), "{e}");
    let e = ops::avg_pool2d(&x, &[2], &[], &[0], false, true, Some(0)).unwrap_err().to_string();
    assert!(e.contains("divisor must be not zero"), "{e}");
    // A valid call still decomposes and differentiates: each input feeds one 2x2 window.
    let y = ops::avg_pool2d(&x, &[2], &[], &[0], false, true, None).unwrap();
    assert_eq!(y.sizes(), &[1, 2, 2]);
    ops::sum(&y, None).unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![0.25; 16]);
}

/// `cross_entropy_loss` of a zero-dim input that requires grad read the class count from
/// `sizes()[1]` before `log_softmax` could reject the class dimension; now it is PyTorch's
/// dimension error.
#[test]
fn cross_entropy_decomposition_rejects_zero_dim_input() {
    let target = Tensor::from_vec(vec![0i64], &[]).unwrap();
    let e = ops::cross_entropy_loss(&leaf(vec![1.0], &[]), &target, None, 1, -100, 0.0).unwrap_err().to_string();
    assert!(e.contains("Dimension out of range"), "{e}");
}

/// The backward of a reduction over dim 0 / -1 of a zero-dim tensor indexed its (empty) sizes
/// to count the reduced elements; a zero-dim tensor reduces its one element.
#[test]
fn mean_backward_of_zero_dim_tensor_over_dim_minus_one() {
    let x = leaf(vec![3.0], &[]);
    let y = ops::mean_dim(&x, Some(&[-1]), false, None).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![3.0]);
    y.backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![1.0]);
}

/// `upsample_nearest2d` of an input with fewer than 2 dims that requires grad went to the
/// decomposition, which computed `dim - 2` in `usize`; it now runs the kernel's checks first.
#[test]
fn upsample_nearest2d_decomposition_checks_rank() {
    let e = ops::upsample_nearest2d(&leaf(vec![1.0], &[1]), Some(&[2, 2]), None).unwrap_err().to_string();
    assert!(e.contains("Expected a 4D input tensor for upsample_nearest2d"), "{e}");
    let x = leaf(vec![1.0, 2.0, 3.0, 4.0], &[1, 1, 2, 2]);
    let y = ops::upsample_nearest2d(&x, Some(&[4, 4]), None).unwrap();
    ops::sum(&y, None).unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![4.0; 4]);
}

/// An in-place op that saves its own `self` (`x.addcdiv_(x, y)`) made a reference cycle: the
/// node kept `x` (with its metadata), and `x`'s metadata then took the node as `grad_fn`
/// (Note [Saved inputs]). LeakSanitizer reported it; here the graph must be freed once the
/// tensors are gone.
#[test]
fn inplace_op_saving_its_own_self_frees_its_graph() {
    let w = leaf(vec![1.0, 2.0], &[2]);
    let y = leaf(vec![4.0, 8.0], &[2]);
    let node = {
        let x = ops::mul_scalar(&w, c10::Scalar::Float(2.0)).unwrap();
        ops::addcdiv_(&x, &x, &y, c10::Scalar::Float(1.0)).unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![2.5, 4.5]);
        std::sync::Arc::downgrade(&x.grad_fn().unwrap())
    };
    assert!(node.upgrade().is_none(), "the AddcdivBackward0 node outlived every tensor");
}

/// Same for an in-place op on a view: the base's `CopySlices` kept the view's `ViewInfo`, whose
/// `base` owns the base's metadata, which owns the `CopySlices`.
#[test]
fn inplace_op_on_a_view_frees_its_graph() {
    let w = leaf(vec![3.0, 5.0], &[2]);
    let node = {
        let base = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
        let v = ops::narrow(&base, 0, 1, 2).unwrap();
        ops::mul_(&v, &w).unwrap();
        assert_eq!(base.to_vec::<f32>().unwrap(), vec![1.0, 6.0, 15.0, 4.0]);
        let f = base.grad_fn().unwrap();
        assert_eq!(f.name(), "CopySlices");
        // The graph still works: d(sum(base))/dw = the old view values.
        ops::sum(&base, None).unwrap().backward().unwrap();
        assert_eq!(w.grad().unwrap().to_vec::<f32>().unwrap(), vec![2.0, 3.0]);
        std::sync::Arc::downgrade(&f)
    };
    assert!(node.upgrade().is_none(), "the CopySlices node outlived every tensor");
}

/// A saved non-leaf input still carries its history when the backward is differentiated
/// (Note [Saved inputs]): `d²(x³)/dw²` through `x = 2w`, with `x` saved by `pow`.
#[test]
fn saved_non_leaf_input_keeps_its_history_for_double_backward() {
    let w = leaf(vec![1.0, 2.0], &[2]);
    let x = ops::mul_scalar(&w, c10::Scalar::Float(2.0)).unwrap();
    let y = ops::sum(&ops::pow_tensor_scalar(&x, c10::Scalar::Float(3.0)).unwrap(), None).unwrap();
    let g = autograd::grad(&[y], std::slice::from_ref(&w), &[], None, true, false).unwrap().remove(0).unwrap();
    // dy/dw = 3 x² · 2 = 24 w²; d/dw of sum(24 w²) = 48 w.
    assert_eq!(g.to_vec::<f32>().unwrap(), vec![24.0, 96.0]);
    let gg = autograd::grad(&[ops::sum(&g, None).unwrap()], &[w], &[], None, false, false).unwrap().remove(0).unwrap();
    assert_eq!(gg.to_vec::<f32>().unwrap(), vec![48.0, 96.0]);
}

/// The backward of `sub(a, b, alpha=i64::MIN)` negated `alpha` in `i64` (overflow); `-alpha`
/// is 2^63 as a float.
#[test]
fn sub_backward_with_alpha_i64_min() {
    let a = Tensor::from_vec(vec![1.0f64], &[1]).unwrap().requires_grad_(true).unwrap();
    let b = Tensor::from_vec(vec![1.0f64], &[1]).unwrap().requires_grad_(true).unwrap();
    let y = ops::sub(&a, &b, c10::Scalar::Int(i64::MIN)).unwrap();
    ops::sum(&y, None).unwrap().backward().unwrap();
    assert_eq!(b.grad().unwrap().to_vec::<f64>().unwrap(), vec![2f64.powi(63)]);
}

/// `adaptive_avg_pool2d` of an input that requires grad goes to a decomposition, which indexed
/// the sizes of a 1-d input; it now runs the kernel's checks first.
#[test]
fn adaptive_avg_pool2d_decomposition_checks_rank() {
    let e = ops::adaptive_avg_pool2d(&leaf(vec![1.0], &[1]), &[1, 1]).unwrap_err().to_string();
    assert!(e.contains("Expected 3D or 4D (batch mode) tensor"), "{e}");
    let e = ops::adaptive_avg_pool2d(&leaf(vec![1.0; 4], &[1, 2, 2]), &[1, 1, 1]).unwrap_err().to_string();
    assert!(e.contains("output_size"), "{e}");
    // A single size stands for both dims, as in the kernel.
    let x = leaf(vec![1.0, 2.0, 3.0, 4.0], &[1, 2, 2]);
    let y = ops::adaptive_avg_pool2d(&x, &[1]).unwrap();
    assert_eq!((y.sizes(), y.to_vec::<f32>().unwrap()), (&[1i64, 1, 1][..], vec![2.5]));
    ops::sum(&y, None).unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![0.25; 4]);
}

/// `rot90`'s backward rotates by `-k`, which overflowed for `k = i64::MIN` (a multiple of 4:
/// no rotation either way).
#[test]
fn rot90_backward_with_k_i64_min() {
    let x = leaf(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let y = ops::rot90(&x, i64::MIN, &[0, 1]).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    let w = Tensor::from_vec(vec![1.0f32, 10.0, 100.0, 1000.0], &[2, 2]).unwrap();
    ops::sum(&ops::mul(&y, &w).unwrap(), None).unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![1.0, 10.0, 100.0, 1000.0]);
}

/// `polygamma`'s backward needs order `n + 1`, which overflowed for `n = i64::MAX`; the
/// backward is now an error value (the forward still runs), and an ordinary order still
/// differentiates: d/dx digamma(x) = polygamma(1, x) = pi^2 / 6 at x = 1.
#[test]
fn polygamma_backward_with_n_i64_max_is_an_error() {
    let x = leaf(vec![1.0, 2.0], &[2]);
    let y = ops::polygamma(i64::MAX, &x).unwrap();
    assert_eq!(y.sizes(), &[2]);
    let e = ops::sum(&y, None).unwrap().backward().unwrap_err().to_string();
    assert!(e.contains("polygamma's derivative needs order n + 1, which overflows int64"), "{e}");
    let x = leaf(vec![1.0], &[1]);
    ops::sum(&ops::polygamma(0, &x).unwrap(), None).unwrap().backward().unwrap();
    let g = x.grad().unwrap().to_vec::<f32>().unwrap()[0] as f64;
    assert!((g - std::f64::consts::PI.powi(2) / 6.0).abs() < 1e-6, "{g}");
}

/// `_values()` of a sparse tensor made from a tensor that requires grad marked the sparse
/// tensor's own member as a view of the sparse tensor: member -> base -> member, a cycle that
/// kept both (and the graph) alive. The accessors return aliases (Note [Member aliases]).
#[test]
fn sparse_member_accessors_do_not_keep_the_sparse_tensor_alive() {
    let x = leaf(vec![1.0, 0.0, 2.0], &[3, 1]);
    let weak = {
        let s = ops::to_sparse(&x, 1).unwrap();
        let v = ops::_values(&s).unwrap();
        let i = ops::_indices(&s).unwrap();
        assert_eq!(v.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
        assert_eq!(i.to_vec::<i64>().unwrap(), vec![0, 2]);
        // An alias: same memory, not the same tensor object as a second call's.
        assert!(!ops::_values(&s).unwrap().is_same(&v));
        assert_eq!(ops::_values(&s).unwrap().data_ptr(), v.data_ptr());
        s.downgrade()
    };
    assert!(weak.upgrade().is_none(), "the sparse tensor outlived every handle");
}
