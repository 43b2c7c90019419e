//! The autograd behaviours PyTorch users rely on, each checked against values computed by hand
//! (or by PyTorch, where noted).

use aten::{ops, Tensor};
use autograd::{GradcheckOptions, TensorAutograd};
use c10::{Result, Scalar};

fn t64(v: &[f64], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}
fn leaf(v: &[f64], shape: &[i64]) -> Tensor {
    t64(v, shape).requires_grad_(true).unwrap()
}
fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}
fn close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-9 + 1e-9 * y.abs(), "{a:?} vs {b:?}");
    }
}

#[test]
fn simple_backward_and_grad_fn() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let w = leaf(&[0.5, -1.0, 2.0], &[3]);
    let y = x.mul(&w).unwrap();
    assert!(y.requires_grad() && !y.is_leaf());
    assert_eq!(y.grad_fn().unwrap().name(), "MulBackward0");
    let next = autograd::node::next_functions(&y.grad_fn().unwrap());
    assert_eq!(next, vec![Some(("AccumulateGrad".to_string(), 0)), Some(("AccumulateGrad".to_string(), 0))]);
    let s = y.sum().call().unwrap();
    assert_eq!(s.grad_fn().unwrap().name(), "SumBackward0");
    s.backward().unwrap();
    close(&vals(&x.grad().unwrap()), &[0.5, -1.0, 2.0]);
    close(&vals(&w.grad().unwrap()), &[1.0, 2.0, 3.0]);
    // A second pass accumulates into .grad (retain_graph not needed: a new graph).
    x.mul(&w).unwrap().sum().call().unwrap().backward().unwrap();
    close(&vals(&x.grad().unwrap()), &[1.0, -2.0, 4.0]);
}

#[test]
fn broadcasting_reduces_gradients() {
    let a = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = leaf(&[10.0, 20.0, 30.0], &[3]);
    let y = a.add(&b).call().unwrap().mul(&a).unwrap().sum().call().unwrap();
    y.backward().unwrap();
    // d/da (a+b)a = 2a + b ; d/db = sum over rows of a
    close(&vals(&a.grad().unwrap()), &[12.0, 24.0, 36.0, 18.0, 30.0, 42.0]);
    close(&vals(&b.grad().unwrap()), &[5.0, 7.0, 9.0]);
}

#[test]
fn non_scalar_output_needs_grad_outputs() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = x.mul(&x).unwrap();
    let e = y.backward().unwrap_err().to_string();
    assert!(e.contains("grad can be implicitly created only for scalar outputs"), "{e}");
    y.backward_with(Some(&t64(&[1.0, 10.0], &[2])), None, false).unwrap();
    close(&vals(&x.grad().unwrap()), &[2.0, 40.0]);
    let bad = y.backward_with(Some(&t64(&[1.0, 1.0, 1.0], &[3])), None, false).unwrap_err().to_string();
    assert!(bad.contains("Mismatch in shape"), "{bad}");
}

#[test]
fn backward_twice_and_retain_graph() {
    let x = leaf(&[2.0], &[1]);
    let y = x.exp().unwrap().sum().call().unwrap();
    y.backward_with(None, Some(true), false).unwrap();
    y.backward().unwrap();
    close(&vals(&x.grad().unwrap()), &[2.0 * 2f64.exp()]);
    let e = y.backward().unwrap_err().to_string();
    assert!(e.contains("Trying to backward through the graph a second time"), "{e}");
    assert!(e.contains("retain_graph=True"), "{e}");
}

#[test]
fn inplace_modification_of_saved_tensor_is_detected() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = x.mul(Scalar::Int(2)).unwrap();
    let z = y.exp().unwrap(); // saves its result
    let w = y.mul(&y).unwrap(); // saves y
    {
        let _g = autograd::no_grad();
        y.add_(Scalar::Int(1)).call().unwrap();
    }
    let e = w.sum().call().unwrap().backward().unwrap_err().to_string();
    assert!(
        e.contains("one of the variables needed for gradient computation has been modified by an inplace operation"),
        "{e}"
    );
    assert!(e.contains("[torch.DoubleTensor [2]] is at version 1; expected version 0 instead"), "{e}");
    // The saved output of exp was not modified: its backward works.
    z.sum().call().unwrap().backward().unwrap();
}

#[test]
fn only_tensors_a_wanted_gradient_reads_are_saved() {
    // `x * w` with only `w` requiring grad saves `x` (the gradient of `w` reads it) and not `w`:
    // changing `w` in place afterwards does not break backward, changing `x` does (as PyTorch).
    let x = t64(&[1.0, 2.0], &[2]);
    let w = leaf(&[3.0, -1.0], &[2]);
    let y = x.mul(&w).unwrap();
    {
        let _g = autograd::no_grad();
        w.add_(Scalar::Int(1)).call().unwrap();
    }
    y.sum().call().unwrap().backward().unwrap();
    close(&vals(&w.grad().unwrap()), &[1.0, 2.0]);

    let w2 = leaf(&[3.0, -1.0], &[2]);
    let y2 = x.mul(&w2).unwrap();
    x.add_(Scalar::Int(1)).call().unwrap();
    let e = y2.sum().call().unwrap().backward().unwrap_err().to_string();
    assert!(e.contains("is at version 1; expected version 0 instead"), "{e}");

    // With both inputs requiring grad both are saved, and both gradients are right.
    let a = leaf(&[2.0, 5.0], &[2]);
    let b = leaf(&[-1.0, 0.5], &[2]);
    a.mul(&b).unwrap().sum().call().unwrap().backward().unwrap();
    close(&vals(&a.grad().unwrap()), &[-1.0, 0.5]);
    close(&vals(&b.grad().unwrap()), &[2.0, 5.0]);
    // A division by a constant keeps the divisor only.
    let c = leaf(&[4.0, 6.0], &[2]);
    let d = t64(&[2.0, 3.0], &[2]);
    let q = c.div(&d).call().unwrap();
    q.sum().call().unwrap().backward().unwrap();
    close(&vals(&c.grad().unwrap()), &[0.5, 1.0 / 3.0]);
}

#[test]
fn inplace_on_leaf_is_an_error_and_inplace_ops_record() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let e = x.mul_(Scalar::Int(2)).unwrap_err().to_string();
    assert!(e.contains("a leaf Variable that requires grad is being used in an in-place operation."), "{e}");
    let y = x.mul(Scalar::Int(1)).unwrap();
    y.mul_(&x).unwrap(); // y = x * x, in place
    assert_eq!(y.grad_fn().unwrap().name(), "MulBackward0");
    y.sum().call().unwrap().backward().unwrap();
    close(&vals(&x.grad().unwrap()), &[2.0, 4.0]);
}

#[test]
fn no_grad_and_inference_mode() {
    let x = leaf(&[1.0, 2.0], &[2]);
    {
        let _g = autograd::no_grad();
        let y = x.mul(&x).unwrap();
        assert!(!y.requires_grad() && y.grad_fn().is_none());
        let _e = autograd::enable_grad();
        assert!(x.mul(&x).unwrap().requires_grad());
    }
    assert!(autograd::is_grad_enabled());
    let inf = {
        let _g = autograd::inference_mode();
        let t = x.mul(&x).unwrap();
        assert!(!t.requires_grad());
        assert!(t.imp().is_inference());
        t
    };
    // Inference tensors cannot be saved for backward.
    let e = x.mul(&inf).unwrap_err().to_string();
    assert!(e.contains("Inference tensors cannot be saved for backward"), "{e}");
}

#[test]
fn grad_with_multiple_roots_and_allow_unused() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let u = leaf(&[5.0], &[1]);
    let a = x.mul(&x).unwrap(); // 2x
    let b = x.mul(Scalar::Int(3)).unwrap(); // 3
    let g = autograd::grad(
        &[a, b],
        std::slice::from_ref(&x),
        &[Some(t64(&[1.0, 1.0], &[2])), Some(t64(&[2.0, 1.0], &[2]))],
        None,
        false,
        false,
    )
    .unwrap();
    close(&vals(g[0].as_ref().unwrap()), &[2.0 + 6.0, 4.0 + 3.0]);
    assert!(x.grad().is_none(), "grad() does not touch .grad");
    let y = x.sum().call().unwrap();
    let e = autograd::grad(std::slice::from_ref(&y), std::slice::from_ref(&u), &[], Some(true), false, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("appears to not have been used in the graph"), "{e}");
    let g = autograd::grad(&[y], &[x.clone(), u], &[], None, false, true).unwrap();
    assert!(g[1].is_none());
    close(&vals(g[0].as_ref().unwrap()), &[1.0, 1.0]);
}

#[test]
fn double_backward_through_tanh() {
    let x = leaf(&[0.3, -1.2], &[2]);
    let y = x.tanh().unwrap().sum().call().unwrap();
    let g = autograd::grad(&[y], std::slice::from_ref(&x), &[], None, true, false).unwrap().remove(0).unwrap();
    let t: Vec<f64> = [0.3f64, -1.2].iter().map(|v| v.tanh()).collect();
    close(&vals(&g), &t.iter().map(|v| 1.0 - v * v).collect::<Vec<_>>());
    assert!(g.requires_grad());
    let gg = autograd::grad(&[g.sum().call().unwrap()], std::slice::from_ref(&x), &[], None, false, false)
        .unwrap()
        .remove(0)
        .unwrap();
    // d/dx (1 - tanh^2) = -2 tanh (1 - tanh^2)
    close(&vals(&gg), &t.iter().map(|v| -2.0 * v * (1.0 - v * v)).collect::<Vec<_>>());
}

#[test]
fn hessian_vector_product_matches_analytic_hessian() {
    // f(x) = sum(x^3) + x0 * x1 ; H = diag(6x) + [[0,1],[1,0]]
    let x = leaf(&[1.5, -2.0], &[2]);
    let f = x
        .pow(Scalar::Int(3))
        .unwrap()
        .sum()
        .call()
        .unwrap()
        .add(&x.select(0, 0).unwrap().mul(&x.select(0, 1).unwrap()).unwrap())
        .call()
        .unwrap();
    let g = autograd::grad(&[f], std::slice::from_ref(&x), &[], None, true, false).unwrap().remove(0).unwrap();
    let v = t64(&[0.7, -0.3], &[2]);
    let hv = autograd::grad(&[g], std::slice::from_ref(&x), &[Some(v)], None, false, false).unwrap().remove(0).unwrap();
    let h = [[6.0 * 1.5, 1.0], [1.0, 6.0 * -2.0]];
    close(&vals(&hv), &[h[0][0] * 0.7 + h[0][1] * -0.3, h[1][0] * 0.7 + h[1][1] * -0.3]);
}

#[test]
fn hooks_run_in_order_and_can_replace_gradients() {
    use std::sync::{Arc, Mutex};
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = x.mul(Scalar::Int(3)).unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let l1 = log.clone();
    y.register_hook(move |g| {
        l1.lock().unwrap().push(format!("first {:?}", g.to_vec::<f64>().unwrap()));
        Ok(Some(g.mul(Scalar::Int(10))?))
    })
    .unwrap();
    let l2 = log.clone();
    y.register_hook(move |g| {
        l2.lock().unwrap().push(format!("second {:?}", g.to_vec::<f64>().unwrap()));
        Ok(None)
    })
    .unwrap();
    y.retain_grad().unwrap();
    let l3 = log.clone();
    x.register_hook(move |g| {
        l3.lock().unwrap().push(format!("leaf {:?}", g.to_vec::<f64>().unwrap()));
        Ok(None)
    })
    .unwrap();
    let acc = Arc::new(Mutex::new(0));
    let a2 = acc.clone();
    x.register_post_accumulate_grad_hook(move |t| {
        *a2.lock().unwrap() += 1;
        assert!(t.grad().is_some());
        Ok(())
    })
    .unwrap();
    y.sum().call().unwrap().backward().unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        vec!["first [1.0, 1.0]".to_string(), "second [10.0, 10.0]".into(), "leaf [30.0, 30.0]".into()]
    );
    // retain_grad sees the gradient after the hooks replaced it.
    close(&vals(&y.grad().unwrap()), &[10.0, 10.0]);
    close(&vals(&x.grad().unwrap()), &[30.0, 30.0]);
    assert_eq!(*acc.lock().unwrap(), 1);
}

/// A clamp with a straight-through gradient, inside a larger graph.
struct StraightThroughClamp;
impl autograd::Function for StraightThroughClamp {
    fn forward(&self, ctx: &mut autograd::FunctionCtx, x: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.save_for_backward(&[x[0].clone()]);
        Ok(vec![ops::clamp(&x[0], Some(Scalar::Float(-1.0)), Some(Scalar::Float(1.0)))?])
    }
    fn backward(&self, ctx: &autograd::FunctionCtx, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        assert_eq!(ctx.saved_tensors()?.len(), 1);
        assert!(ctx.needs_input_grad(0));
        Ok(vec![g[0].clone()])
    }
}

#[test]
fn custom_function_inside_a_graph() {
    let x = leaf(&[-3.0, 0.5, 2.0], &[3]);
    let h = x.mul(Scalar::Int(2)).unwrap();
    let c = autograd::custom::apply(StraightThroughClamp, &[h]).unwrap().remove(0);
    assert_eq!(c.grad_fn().unwrap().name(), "StraightThroughClampBackward");
    close(&vals(&c), &[-1.0, 1.0, 1.0]);
    c.mul(&c).unwrap().sum().call().unwrap().backward().unwrap();
    // d/dx (clamp(2x))^2 with straight-through clamp = 2 * clamp(2x) * 2
    close(&vals(&x.grad().unwrap()), &[-4.0, 4.0, 4.0]);
}

#[test]
fn wgan_gp_gradient_penalty_trains() {
    // Critic D(x) = tanh(x @ w); penalty (||dD/dx|| - 1)^2 on interpolates; w trained by SGD.
    let w = leaf(&[0.1, -0.2, 0.3], &[3, 1]);
    let x = t64(&[0.5, -1.0, 2.0, 1.0, 0.0, -0.5], &[2, 3]);
    let mut last = f64::INFINITY;
    let mut first = None;
    for _ in 0..20 {
        let xi = x.detach().requires_grad_(true).unwrap();
        let d = xi.mm(&w).unwrap().tanh().unwrap();
        let g = autograd::grad(&[d.sum().call().unwrap()], std::slice::from_ref(&xi), &[], None, true, false)
            .unwrap()
            .remove(0)
            .unwrap();
        let norm = g.mul(&g).unwrap().sum().dim(&[1]).call().unwrap().sqrt().unwrap();
        let pen = norm.add(Scalar::Int(-1)).call().unwrap();
        let loss = pen.mul(&pen).unwrap().mean().call().unwrap();
        let lv = loss.item::<f64>().unwrap();
        first.get_or_insert(lv);
        last = lv;
        w.set_grad(None).unwrap();
        loss.backward().unwrap();
        let gw = w.grad().expect("the penalty reaches w through the gradient");
        let _g = autograd::no_grad();
        w.sub_(&gw.mul(Scalar::Float(0.5)).unwrap()).call().unwrap();
    }
    assert!(last < first.unwrap() * 0.5, "penalty {first:?} -> {last}");
}

#[test]
fn gradcheck_and_gradgradcheck_basic_ops() {
    let o = GradcheckOptions::default();
    let a = leaf(&[0.3, -0.7, 1.1, 0.4, 0.9, -1.3], &[2, 3]);
    let b = leaf(&[0.5, 1.5, -0.2, 0.8, -0.6, 0.25], &[3, 2]);
    let f = |t: &[Tensor]| -> Result<Vec<Tensor>> { Ok(vec![t[0].matmul(&t[1])?.tanh()?.softmax(1).call()?]) };
    autograd::gradcheck(&f, &[a.clone(), b.clone()], o).unwrap();
    autograd::gradgradcheck(&f, &[a.clone(), b.clone()], o).unwrap();
    let g = |t: &[Tensor]| -> Result<Vec<Tensor>> {
        Ok(vec![t[0].div(&t[1].t()?.exp()?).call()?.log_softmax(0).call()?.mean().call()?])
    };
    autograd::gradcheck(&g, &[a.clone(), b.clone()], o).unwrap();
    autograd::gradgradcheck(&g, &[a, b], o).unwrap();
}

#[test]
fn inplace_on_a_view_of_a_leaf_derived_tensor() {
    // PyTorch: x = arange(1., 5.).requires_grad_(); y = x * 2; v = y[1:3]; v.mul_(y[0:2].detach() + 1)
    // y.pow(2).sum().backward()  ->  x.grad == [8, 48, 160, 32]
    let x = leaf(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let y = x.mul(Scalar::Int(2)).unwrap();
    let v = y.slice_with(0, Some(1), Some(3), 1).unwrap();
    let w = t64(&[3.0, 5.0], &[2]);
    v.mul_(&w).unwrap();
    close(&vals(&y), &[2.0, 12.0, 30.0, 8.0]);
    assert_eq!(y.grad_fn().unwrap().name(), "CopySlices");
    y.pow(Scalar::Int(2)).unwrap().sum().call().unwrap().backward().unwrap();
    // d/dx sum(y'^2), y' = [2x0, 2x1*3, 2x2*5, 2x3]: 2 y' * dy'/dx
    close(&vals(&x.grad().unwrap()), &[8.0, 2.0 * 12.0 * 6.0, 2.0 * 30.0 * 10.0, 32.0]);
    // The view sees the new history too: gradients through it reach x.
    let x2 = leaf(&[1.0, 2.0, 3.0], &[3]);
    let y2 = x2.mul(Scalar::Int(1)).unwrap();
    let v2 = y2.select(0, 1).unwrap();
    v2.mul_(Scalar::Int(10)).unwrap();
    v2.backward().unwrap();
    close(&vals(&x2.grad().unwrap()), &[0.0, 10.0, 0.0]);
    // A view of a leaf that requires grad cannot be modified in place.
    let leaf_view = x2.slice_with(0, Some(0), Some(2), 1).unwrap();
    let e = leaf_view.mul_(Scalar::Int(2)).unwrap_err().to_string();
    assert!(e.contains("a view of a leaf Variable that requires grad is being used in an in-place operation."), "{e}");
}

#[test]
fn anomaly_mode_names_the_node_that_returned_nan() {
    let x = leaf(&[0.0, 1.0], &[2]);
    let y = x.sqrt().unwrap().mul(Scalar::Int(0)).unwrap().sum().call().unwrap();
    // Without anomaly mode the NaN gradient just arrives.
    y.backward_with(None, Some(true), false).unwrap();
    assert!(vals(&x.grad().unwrap())[0].is_nan());
    let _a = autograd::detect_anomaly();
    let x = leaf(&[0.0, 1.0], &[2]);
    let y = x.sqrt().unwrap().mul(Scalar::Int(0)).unwrap().sum().call().unwrap();
    let e = y.backward().unwrap_err().to_string();
    assert!(e.contains("Function 'SqrtBackward0' returned nan values in its 0th output."), "{e}");
    assert!(e.contains("Traceback of forward call that caused the error"), "{e}");
}

#[test]
fn detach_set_grad_and_missing_derivatives() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = x.mul(Scalar::Int(2)).unwrap();
    let d = y.detach();
    assert!(!d.requires_grad() && d.is_leaf());
    assert_eq!(d.version(), y.version());
    y.detach_().unwrap();
    assert!(!y.requires_grad() && y.grad_fn().is_none());
    x.set_grad(Some(t64(&[5.0, 6.0], &[2]))).unwrap();
    close(&vals(&x.grad().unwrap()), &[5.0, 6.0]);
    assert!(x.set_grad(Some(t64(&[1.0], &[1]))).is_err());
    // An operator without a derivative formula (PyTorch has none for the Chebyshev polynomials'
    // x) fails at backward time, naming itself.
    let n = t64(&[2.0, 3.0], &[2]);
    let e =
        ops::special_chebyshev_polynomial_t(&x, &n).unwrap().sum().call().unwrap().backward().unwrap_err().to_string();
    assert!(e.contains("the derivative for 'special_chebyshev_polynomial_t' is not implemented."), "{e}");
}

#[test]
fn as_strided_gradients_add_up_over_overlapping_windows() {
    // Windows [0,1], [1,2], [2,3] of a 4-vector: the middle elements are read twice.
    let x = leaf(&[1.0, 2.0, 3.0, 4.0], &[4]);
    ops::as_strided(&x, &[3, 2], &[1, 1], None).unwrap().sum().call().unwrap().backward().unwrap();
    close(&vals(&x.grad().unwrap()), &[1.0, 2.0, 2.0, 1.0]);
    // From a view with an offset: the gradient lands on the base's elements 1..=3, weighted.
    let base = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0], &[5]);
    let v = ops::narrow(&base, 0, 1, 3).unwrap();
    let w = t64(&[1.0, 10.0], &[2]);
    ops::as_strided(&v, &[2], &[2], Some(1)).unwrap().mul(&w).unwrap().sum().call().unwrap().backward().unwrap();
    close(&vals(&base.grad().unwrap()), &[0.0, 1.0, 0.0, 10.0, 0.0]);
    let f = |t: &[Tensor]| -> c10::Result<Vec<Tensor>> { Ok(vec![ops::as_strided(&t[0], &[2, 3], &[1, 2], Some(0))?]) };
    autograd::gradcheck(&f, &[leaf(&[0.3, -1.2, 2.0, 0.7, 1.1, -0.4], &[6])], autograd::GradcheckOptions::default())
        .unwrap();
}

#[test]
fn out_variants_refuse_inputs_that_require_grad() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let out = t64(&[0.0, 0.0], &[2]);
    let e = ops::add_out(&x, &x, Scalar::Int(1), &out).unwrap_err().to_string();
    assert!(e.contains("add(): functions with out=... arguments don't support automatic differentiation"), "{e}");
    let _g = autograd::no_grad();
    ops::add_out(&x, &x, Scalar::Int(1), &out).unwrap();
    close(&vals(&out), &[2.0, 4.0]);
}

#[test]
fn long_chains_are_freed_without_deep_recursion() {
    // A graph 200,000 nodes long (an unrolled recurrence) is dropped, with and without a
    // backward pass, on a test thread's small stack: freeing it must not recurse node by node.
    let run = |backward: bool| {
        let x = leaf(&[1.0], &[1]);
        let w = t64(&[1.0], &[1]);
        let mut y = x.clone();
        for _ in 0..200_000 {
            y = y.mul(&w).unwrap();
        }
        if backward {
            y.sum().call().unwrap().backward().unwrap();
            close(&vals(&x.grad().unwrap()), &[1.0]);
        }
        drop(y);
    };
    // Nodes that also hold their predecessors through saved tensors (`y * v` saves `y` when `v`
    // requires grad) and nodes that save their own output (`tanh`).
    let saving = || {
        let x = leaf(&[0.5], &[1]);
        let v = leaf(&[1.0], &[1]);
        let mut y = x.clone();
        for _ in 0..100_000 {
            y = y.mul(&v).unwrap();
        }
        drop(y);
        let mut y = x.clone();
        for _ in 0..100_000 {
            y = y.tanh().unwrap();
        }
        drop(y);
    };
    let t = std::thread::Builder::new().stack_size(256 * 1024).spawn(move || {
        run(true);
        run(false);
        saving();
    });
    t.unwrap().join().expect("freeing a long graph overflowed the stack");
}

/// Note [Foreach operators]: a foreach operator's results carry the per-tensor operators'
/// gradients.
#[test]
fn foreach_results_carry_the_per_tensor_gradients() {
    let (x, y) = (leaf(&[1.0, -2.0], &[2]), leaf(&[3.0], &[1]));
    let out = ops::_foreach_mul(&[x.clone(), y.clone()], Scalar::Float(3.0)).unwrap();
    let sums = ops::_foreach_norm(&out, Scalar::Int(1), None).unwrap();
    ops::add(&sums[0], &sums[1], Scalar::Int(1)).unwrap().backward().unwrap();
    // d|3x|_1 / dx = 3 sign(x).
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), [3.0, -3.0]);
    assert_eq!(y.grad().unwrap().to_vec::<f64>().unwrap(), [3.0]);
}

/// CTC loss (Note [CTC loss]): closed forms of tiny problems, then its gradient through a
/// `log_softmax` (the gradient PyTorch's kernel gives) against finite differences, for padded
/// and concatenated targets, repeated labels, every reduction and `zero_infinity`.
#[test]
fn ctc_loss_closed_forms_and_gradcheck_through_log_softmax() {
    let lp_of = |x: &[f64], shape: &[i64]| Tensor::from_vec(x.to_vec(), shape).unwrap().log_softmax(2).call().unwrap();
    // T = 2, one element, three classes, target [1]: the alignments (1, 1), (0, 1), (1, 0).
    let x = [0.2, -0.4, 0.9, -1.0, 0.3, 0.5];
    let lp = lp_of(&x, &[2, 1, 3]);
    let y: Vec<f64> = lp.exp().unwrap().to_vec::<f64>().unwrap();
    let p = y[1] * y[4] + y[0] * y[4] + y[1] * y[3];
    let loss = ops::ctc_loss(&lp, &Tensor::from_slice(&[1i64]), &[2], &[1], 0, 0, false).unwrap();
    assert!((loss.to_vec::<f64>().unwrap()[0] + p.ln()).abs() < 1e-12, "{:?} vs {}", loss.to_vec::<f64>(), -p.ln());
    // Target [1, 1] in 2 steps needs a blank between: impossible, an infinite loss (zero with
    // zero_infinity); an empty target is all blanks.
    let two = Tensor::from_slice(&[1i64, 1]);
    let inf = ops::ctc_loss(&lp, &two.reshape(&[1, 2]).unwrap(), &[2], &[2], 0, 0, false).unwrap();
    assert_eq!(inf.to_vec::<f64>().unwrap(), [f64::INFINITY]);
    let zero = ops::ctc_loss(&lp, &two.reshape(&[1, 2]).unwrap(), &[2], &[2], 0, 0, true).unwrap();
    assert_eq!(zero.to_vec::<f64>().unwrap(), [0.0]);
    let empty = ops::ctc_loss(&lp, &Tensor::from_slice::<i64>(&[]), &[2], &[0], 0, 0, false).unwrap();
    assert!((empty.to_vec::<f64>().unwrap()[0] + (y[0] * y[3]).ln()).abs() < 1e-12);
    // Gradients with respect to the logits: T = 5, batch 2, four classes.
    let logits: Vec<f64> = (0..40).map(|i| ((i * 7 % 11) as f64 - 5.0) * 0.3).collect();
    let x = Tensor::from_vec(logits, &[5, 2, 4]).unwrap().requires_grad_(true).unwrap();
    let o = GradcheckOptions::default();
    let padded = Tensor::from_vec(vec![1i64, 2, 2, 3, 1, 0], &[2, 3]).unwrap();
    let flat = Tensor::from_slice(&[1i64, 2, 2, 3, 1]);
    for (targets, reduction, zero_inf) in [(&padded, 1, false), (&flat, 2, false), (&padded, 0, true)] {
        let f = |t: &[Tensor]| -> Result<Vec<Tensor>> {
            let lp = t[0].log_softmax(2).call()?;
            Ok(vec![ops::ctc_loss(&lp, targets, &[5, 4], &[3, 2], 0, reduction, zero_inf)?])
        };
        autograd::gradcheck(&f, std::slice::from_ref(&x), o).unwrap();
    }
    // PyTorch's errors: lengths past the input, labels out of range, one length per element.
    let lp = lp_of(&[0.0; 40], &[5, 2, 4]);
    let e = ops::ctc_loss(&lp, &padded, &[6, 4], &[3, 2], 0, 1, false).unwrap_err().to_string();
    assert!(e.contains("Expected input_lengths to have value at most 5, but got value 6"), "{e}");
    let bad = Tensor::from_vec(vec![1i64, 9, 2, 3, 1, 0], &[2, 3]).unwrap();
    let e = ops::ctc_loss(&lp, &bad, &[5, 4], &[3, 2], 0, 1, false).unwrap_err().to_string();
    assert!(e.contains("target label 9 is out of range for 4 classes"), "{e}");
    let e = ops::ctc_loss(&lp, &padded, &[5], &[3, 2], 0, 1, false).unwrap_err().to_string();
    assert!(e.contains("one entry per batch element"), "{e}");
}
