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
