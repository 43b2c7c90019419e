//! gradcheck and gradgradcheck (f64, PyTorch's tolerances) for the operators the autograd issue
//! lists, through the same entry points users call.

use aten::{ops, Tensor};
use autograd::{gradcheck, gradgradcheck, GradcheckOptions, TensorAutograd};
use c10::{Result, Scalar};

fn leaf(shape: &[i64], seed: u64, lo: f64, hi: f64) -> Tensor {
    let g = aten::Generator::new(c10::Device::CPU);
    g.manual_seed(seed);
    let t = ops::rand_generator(shape, Some(&g), Some(c10::ScalarType::F64), None, None, None).unwrap();
    let t = t.mul_scalar(Scalar::Float(hi - lo)).unwrap().add_scalar(Scalar::Float(lo)).unwrap();
    t.requires_grad_(true).unwrap()
}

fn both(name: &str, f: &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>, inputs: &[Tensor]) {
    let o = GradcheckOptions::default();
    gradcheck(f, inputs, o).unwrap_or_else(|e| panic!("{name}: gradcheck: {e}"));
    gradgradcheck(f, inputs, o).unwrap_or_else(|e| panic!("{name}: gradgradcheck: {e}"));
}

#[test]
fn elementwise() {
    let a = leaf(&[2, 3], 1, -1.0, 1.0);
    let b = leaf(&[3], 2, 0.5, 1.5);
    let p = leaf(&[2, 3], 3, 0.5, 2.0);
    both("add", &|t| Ok(vec![t[0].add(&t[1])?]), &[a.clone(), b.clone()]);
    both("mul", &|t| Ok(vec![t[0].mul(&t[1])?]), &[a.clone(), b.clone()]);
    both("div", &|t| Ok(vec![t[0].div(&t[1])?]), &[a.clone(), b.clone()]);
    both("pow", &|t| Ok(vec![ops::pow(&t[0], &t[1])?]), &[p.clone(), b.clone()]);
    both("pow scalar", &|t| Ok(vec![t[0].pow_tensor_scalar(Scalar::Float(2.5))?]), std::slice::from_ref(&p));
    both("exp", &|t| Ok(vec![t[0].exp()?]), std::slice::from_ref(&a));
    both("log", &|t| Ok(vec![t[0].log()?]), std::slice::from_ref(&p));
    both("tanh", &|t| Ok(vec![t[0].tanh()?]), std::slice::from_ref(&a));
    both("sigmoid", &|t| Ok(vec![t[0].sigmoid()?]), std::slice::from_ref(&a));
    both("relu", &|t| Ok(vec![t[0].relu()?]), std::slice::from_ref(&a));
    both("softplus", &|t| Ok(vec![ops::softplus(&t[0], Scalar::Int(1), Scalar::Int(20))?]), std::slice::from_ref(&a));
}

#[test]
fn reductions_and_softmax() {
    let a = leaf(&[3, 4], 4, -2.0, 2.0);
    both("sum", &|t| Ok(vec![t[0].sum()?]), std::slice::from_ref(&a));
    both("sum dim", &|t| Ok(vec![ops::sum_dim_intlist(&t[0], Some(&[1]), false, None)?]), std::slice::from_ref(&a));
    both("mean", &|t| Ok(vec![t[0].mean()?]), std::slice::from_ref(&a));
    both("softmax", &|t| Ok(vec![t[0].softmax(1)?]), std::slice::from_ref(&a));
    both("log_softmax", &|t| Ok(vec![t[0].log_softmax(0)?]), std::slice::from_ref(&a));
}

#[test]
fn matmul_conv_pool_norm() {
    let a = leaf(&[2, 3], 5, -1.0, 1.0);
    let b = leaf(&[3, 2], 6, -1.0, 1.0);
    both("matmul", &|t| Ok(vec![t[0].matmul(&t[1])?]), &[a, b]);
    let x = leaf(&[1, 2, 5, 5], 7, -1.0, 1.0);
    let w = leaf(&[3, 2, 3, 3], 8, -1.0, 1.0);
    let bias = leaf(&[3], 9, -1.0, 1.0);
    both(
        "conv2d",
        &|t| Ok(vec![ops::conv2d(&t[0], &t[1], Some(&t[2]), &[2, 1], &[1, 0], &[1, 1], 1)?]),
        &[x.clone(), w, bias],
    );
    let wg = leaf(&[4, 1, 2, 2], 10, -1.0, 1.0);
    both(
        "conv2d groups",
        &|t| Ok(vec![ops::conv2d(&t[0], &t[1], None, &[1, 1], &[0, 0], &[2, 2], 2)?]),
        &[x.clone(), wg],
    );
    both(
        "max_pool2d",
        &|t| Ok(vec![ops::max_pool2d(&t[0], &[2, 2], &[2, 2], &[0, 0], &[1, 1], false)?]),
        std::slice::from_ref(&x),
    );
    let ln_w = leaf(&[5], 11, 0.5, 1.5);
    let ln_b = leaf(&[5], 12, -0.5, 0.5);
    both(
        "layer_norm",
        &|t| Ok(vec![ops::layer_norm(&t[0], &[5], Some(&t[1]), Some(&t[2]), 1e-5, true)?]),
        &[x, ln_w, ln_b],
    );
}

#[test]
fn losses() {
    let p = leaf(&[4, 3], 13, -1.0, 1.0);
    let y = leaf(&[4, 3], 14, -1.0, 1.0).detach();
    both("mse_loss", &|t| Ok(vec![ops::mse_loss(&t[0], &t[1], 1)?]), &[p.clone(), y]);
    let target = Tensor::from_vec(vec![0i64, 2, 1, 2], &[4]).unwrap();
    both(
        "cross_entropy",
        &move |t| Ok(vec![ops::cross_entropy_loss(&t[0], &target, None, 1, -100, 0.1)?]),
        std::slice::from_ref(&p),
    );
}
