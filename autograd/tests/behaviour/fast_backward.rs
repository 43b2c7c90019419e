//! The direct backward kernels (max-pool scatter, convolution weight gradient) agree with the
//! differentiable formulas they stand in for, and double backward still works through them.

use aten::{ops, Tensor};
use autograd::{gradcheck, gradgradcheck, GradcheckOptions, TensorAutograd};
use c10::{Scalar, ScalarType};

fn rand(shape: &[i64], seed: u64, dtype: ScalarType) -> Tensor {
    let g = aten::Generator::new(c10::Device::CPU);
    g.manual_seed(seed);
    let t = ops::rand_generator(shape, Some(&g), Some(dtype), None, None, None).unwrap();
    t.mul(Scalar::Float(2.0)).unwrap().sub(Scalar::Float(1.0)).call().unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to(ScalarType::F64).call().unwrap().contiguous().call().unwrap().to_vec::<f64>().unwrap()
}

fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "element {i}: {x} vs {y}");
    }
}

/// The weight gradient of a convolution computed without a graph (the direct kernel) equals
/// the one computed while recording (the differentiable formula), for strides, padding,
/// dilation and groups, in f32 and f64.
#[test]
fn conv_weight_gradient_kernel_matches_formula() {
    for (dtype, tol) in [(ScalarType::F64, 1e-12), (ScalarType::F32, 1e-5)] {
        for &(stride, pad, dil, groups) in &[(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 2), (3, 0, 1, 4)] {
            let x = rand(&[3, 4, 9, 8], 1, dtype);
            let w = rand(&[8, 4 / groups, 3, 2], 2, dtype).requires_grad_(true).unwrap();
            let gy_shape = ops::conv2d(&x, &w.detach(), None, &[stride], &[pad], &[dil], groups).unwrap();
            let gy = rand(gy_shape.sizes(), 3, dtype);
            let y = ops::conv2d(&x, &w, None, &[stride], &[pad], &[dil], groups).unwrap();
            let direct = autograd::grad(
                std::slice::from_ref(&y),
                std::slice::from_ref(&w),
                &[Some(gy.clone())],
                Some(true),
                false,
                false,
            )
            .unwrap();
            let y2 = ops::conv2d(&x, &w, None, &[stride], &[pad], &[dil], groups).unwrap();
            let recorded = autograd::grad(&[y2], std::slice::from_ref(&w), &[Some(gy)], None, true, false).unwrap();
            let (d, r) = (direct[0].as_ref().unwrap(), recorded[0].as_ref().unwrap());
            assert_eq!(d.sizes(), w.sizes());
            close(&vals(d), &vals(r), tol);
        }
    }
}

#[test]
fn conv_weight_backward_rejects_mismatched_shapes() {
    let x = rand(&[2, 3, 5, 5], 1, ScalarType::F32);
    let gy = rand(&[2, 4, 3, 3], 2, ScalarType::F32);
    assert!(ops::_convolution_weight_backward(&gy, &x, &[4, 3, 3, 3], &[1], &[0], &[1], 1).is_ok());
    let e = ops::_convolution_weight_backward(&gy, &x, &[4, 3, 2, 2], &[1], &[0], &[1], 1).unwrap_err().to_string();
    assert!(e.contains("is not the output size"), "{e}");
    let e = ops::_convolution_weight_backward(&gy, &x, &[4, 2, 3, 3], &[1], &[0], &[1], 1).unwrap_err().to_string();
    assert!(e.contains("does not fit"), "{e}");
}

/// max_pool2d through the fast path (f32, no padding) and the general one (padding, f64) has
/// gradients and second derivatives that pass gradcheck, and the f32 fast path agrees with the
/// general kernel on values and indices.
#[test]
fn max_pool2d_backward_and_double_backward() {
    let f = |t: &[Tensor]| Ok(vec![ops::max_pool2d(&t[0], &[2, 2], &[2, 1], &[1, 0], &[1, 1], false)?]);
    let x = rand(&[2, 3, 6, 5], 5, ScalarType::F64).requires_grad_(true).unwrap();
    gradcheck(&f, std::slice::from_ref(&x), GradcheckOptions::default()).unwrap();
    gradgradcheck(&f, std::slice::from_ref(&x), GradcheckOptions::default()).unwrap();
    let x32 = rand(&[2, 3, 7, 6], 6, ScalarType::F32);
    let (fast, fi) = ops::max_pool2d_with_indices(&x32, &[3, 2], &[2, 2], &[0, 0], &[1, 1], false).unwrap();
    let (slow, si) = ops::max_pool2d_with_indices(
        &x32.to(ScalarType::F64).call().unwrap(),
        &[3, 2],
        &[2, 2],
        &[0, 0],
        &[1, 1],
        false,
    )
    .unwrap();
    close(&vals(&fast), &vals(&slow), 0.0);
    assert_eq!(fi.to_vec::<i64>().unwrap(), si.to_vec::<i64>().unwrap());
    // Overlapping windows: gradients of a position chosen twice add up.
    let t =
        Tensor::from_vec(vec![1.0f32, 9.0, 2.0, 3.0, 0.0, 4.0], &[1, 1, 2, 3]).unwrap().requires_grad_(true).unwrap();
    ops::max_pool2d(&t, &[2, 2], &[1, 1], &[0], &[1], false).unwrap().sum().call().unwrap().backward().unwrap();
    assert_eq!(vals(&t.grad().unwrap()), [0.0, 2.0, 0.0, 0.0, 0.0, 0.0]);
}

/// `mm`/`addmm` gradients follow the layout of a column-major operand (PyTorch's
/// `mm_mat1_backward`/`mm_mat2_backward`): the gradient of `linear`'s weight reaches the leaf
/// already contiguous, with the same values as the row-major formula, and the formulas stay
/// twice differentiable.
#[test]
fn mm_gradients_follow_the_operand_layout() {
    let x = rand(&[6, 5], 1, ScalarType::F64).requires_grad_(true).unwrap();
    let w = rand(&[4, 5], 2, ScalarType::F64).requires_grad_(true).unwrap();
    let b = rand(&[4], 3, ScalarType::F64).requires_grad_(true).unwrap();
    let gy = rand(&[6, 4], 4, ScalarType::F64);
    let wt = w.t().unwrap();
    for y in [ops::mm(&x, &wt).unwrap(), ops::addmm(&b, &x, &wt, Scalar::Float(0.5), Scalar::Float(2.0)).unwrap()] {
        let alpha = if autograd::meta::grad_fn_name(&y).as_deref() == Some("AddmmBackward0") { 2.0 } else { 1.0 };
        let g = autograd::grad(&[y], &[wt.clone(), x.clone()], &[Some(gy.clone())], None, false, false).unwrap();
        let (gwt, gx) = (g[0].as_ref().unwrap(), g[1].as_ref().unwrap());
        // Column-major like `wt`: its transpose (the weight's gradient) is contiguous.
        assert_eq!(gwt.sizes(), &[5, 4]);
        assert_eq!(gwt.strides(), &[1, 5], "the gradient of a transposed operand keeps its layout");
        assert!(gx.is_contiguous());
        let want_wt = ops::mm(&x.detach().t().unwrap(), &gy).unwrap().mul(Scalar::Float(alpha)).unwrap();
        let want_x = ops::mm(&gy, &w.detach()).unwrap().mul(Scalar::Float(alpha)).unwrap();
        close(&vals(gwt), &vals(&want_wt), 1e-12);
        close(&vals(gx), &vals(&want_x), 1e-12);
    }
    // A column-major first operand: the gradient comes back column-major too.
    let xt = rand(&[5, 6], 5, ScalarType::F64).requires_grad_(true).unwrap();
    let y = ops::mm(&xt.t().unwrap(), &w.detach().t().unwrap()).unwrap();
    let g = autograd::grad(&[y], std::slice::from_ref(&xt), &[Some(gy.clone())], None, false, false).unwrap();
    assert!(g[0].as_ref().unwrap().is_contiguous(), "xt's gradient arrives contiguous");
    let f = |i: &[Tensor]| Ok(vec![ops::addmm(&i[0], &i[1], &i[2].t()?, Scalar::Float(0.5), Scalar::Float(2.0))?]);
    gradcheck(&f, &[b.clone(), x.clone(), w.clone()], GradcheckOptions::default()).unwrap();
    gradgradcheck(&f, &[b, x, w], GradcheckOptions::default()).unwrap();
}

/// A leaf's first gradient is taken over when nobody else holds it (no copy), and copied when
/// it is a tensor the caller can still see: changing the caller's tensor afterwards must not
/// change `.grad`, and a later accumulation must not change the caller's tensor.
#[test]
fn first_gradient_is_taken_over_only_when_unshared() {
    // Unshared: `x * w` sends a fresh product to the leaf.
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap().requires_grad_(true).unwrap();
    let w = Tensor::from_vec(vec![2.0f32, 3.0, 4.0], &[3]).unwrap();
    ops::mul(&x, &w).unwrap().sum().call().unwrap().backward().unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![2.0, 3.0, 4.0]);
    ops::mul(&x, &w).unwrap().sum().call().unwrap().backward().unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![4.0, 6.0, 8.0]);
    assert_eq!(vals(&w), vec![2.0, 3.0, 4.0]);

    // Shared: the identity-like backward of `clone` hands the caller's gradient itself over.
    let y = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap().requires_grad_(true).unwrap();
    let g = Tensor::from_vec(vec![5.0f32, 7.0], &[2]).unwrap();
    ops::clone(&y, None).unwrap().backward_with(Some(&g), None, false).unwrap();
    assert_eq!(vals(&y.grad().unwrap()), vec![5.0, 7.0]);
    ops::fill_(&g, Scalar::Float(0.0)).unwrap();
    assert_eq!(vals(&y.grad().unwrap()), vec![5.0, 7.0], ".grad aliased the caller's gradient");
    let g2 = Tensor::from_vec(vec![1.0f32, 1.0], &[2]).unwrap();
    ops::clone(&y, None).unwrap().backward_with(Some(&g2), None, false).unwrap();
    assert_eq!(vals(&y.grad().unwrap()), vec![6.0, 8.0]);
    assert_eq!(vals(&g2), vec![1.0, 1.0]);

    // A non-contiguous leaf: the gradient (contiguous here) does not match its strides, so it is
    // copied rather than taken over, with the same values.
    let base = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let t = base.t().unwrap().contiguous().call().unwrap().t().unwrap().requires_grad_(true).unwrap();
    assert_eq!(t.strides(), &[1, 2]);
    ops::mul(&t, &base).unwrap().sum().call().unwrap().backward().unwrap();
    let gt = t.grad().unwrap();
    assert_eq!(vals(&gt), vals(&base));
}
