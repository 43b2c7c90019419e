//! Mixed precision: autocast regions with autograd (casts recorded, gradients in the leaves'
//! dtype, nesting, the cast cache) and `GradScaler` against trajectories PyTorch 2.15 computed
//! (`amp_expected.txt`, written by `gen_amp.py`; the inputs are in closed form there and here).
//! The per-operator dtype table is checked by `cargo xtask autocast` (tests/autocast).

use aten::autocast::{self, AutocastGuard};
use aten::{ops, Tensor};
use autograd::TensorAutograd;
use c10::{DeviceType, Error, ScalarType};
use nn::amp::{GradScaler, GradScalerOptions};
use nn::optim::{Optimizer, SGDOptions, SGD};
use nn::Parameter;

fn expected(name: &str) -> Vec<f64> {
    crate::sparse::expected_in(include_str!("amp_expected.txt"), name).0
}

fn t(v: &[f32], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn leaf(v: &[f32], shape: &[i64]) -> Tensor {
    t(v, shape).requires_grad_(true).unwrap()
}

/// `x_t[i, j] = sin(0.37 * (3 i + j) + t)`, with an inf at [0, 0] on `inf_step` (gen_amp.py).
fn inputs(step: i64, inf_step: i64) -> Tensor {
    let mut v: Vec<f32> =
        (0..4).flat_map(|i| (0..3).map(move |j| (0.37 * (3 * i + j) as f64 + step as f64).sin() as f32)).collect();
    if step == inf_step {
        v[0] = f32::INFINITY;
    }
    t(&v, &[4, 3])
}

fn close(ours: &[f64], theirs: &[f64], rtol: f64, what: &str) {
    assert_eq!(ours.len(), theirs.len(), "{what}");
    for (a, b) in ours.iter().zip(theirs) {
        let ok = (a.is_infinite() && a == b) || (a - b).abs() <= rtol * b.abs().max(1e-30) + 1e-7;
        assert!(ok, "{what}: ours {ours:?}, PyTorch's {theirs:?}");
    }
}

fn trajectory(name: &str, options: GradScalerOptions, loss_scale: f64, inf_step: i64, steps: i64) {
    let w = Parameter::new(t(&[0.1, -0.2, 0.3, 0.05, -0.15, 0.25], &[3, 2])).unwrap();
    let mut opt = SGD::new(vec![w.clone()], SGDOptions::default().lr(0.1).momentum(0.9)).unwrap();
    let mut scaler = GradScaler::with_options(DeviceType::Cpu, options);
    for step in 0..steps {
        opt.zero_grad(true).unwrap();
        let y = inputs(step, inf_step).matmul(&w).unwrap();
        let loss =
            ops::mul_scalar(&ops::pow_tensor_scalar(&y, 2.0.into()).unwrap().mean().call().unwrap(), loss_scale.into())
                .unwrap();
        scaler.scale(&loss).unwrap().backward().unwrap();
        let stepped = scaler.step(&mut opt).unwrap();
        scaler.update(None).unwrap();
        let tracker = scaler.state_dict().unwrap().unwrap().growth_tracker;
        let ours =
            [f64::from(u8::from(stepped)), scaler.get_scale().unwrap(), tracker as f64, loss.item::<f64>().unwrap()];
        close(&ours, &expected(&format!("{name} step {step}")), 1e-6, &format!("{name} step {step}"));
        let wv: Vec<f64> = w.to_vec::<f32>().unwrap().into_iter().map(f64::from).collect();
        close(&wv, &expected(&format!("{name} weight {step}")), 1e-5, &format!("{name} weight {step}"));
    }
    let sd = scaler.state_dict().unwrap().unwrap();
    let ours = [sd.scale, sd.growth_factor, sd.backoff_factor, sd.growth_interval as f64, sd.growth_tracker as f64];
    close(&ours, &expected(&format!("{name} state_dict")), 0.0, "state_dict");
}

#[test]
fn grad_scaler_skips_a_step_with_inf_and_grows_as_pytorchs_does() {
    let options = GradScalerOptions { init_scale: 1024.0, growth_interval: 2, ..Default::default() };
    trajectory("inf", options, 1.0, 2, 7);
}

#[test]
fn grad_scaler_backs_off_from_an_overflowing_scale_as_pytorchs_does() {
    let options = GradScalerOptions {
        init_scale: 2f64.powi(125),
        backoff_factor: 0.25,
        growth_interval: 3,
        ..Default::default()
    };
    trajectory("overflow", options, 100.0, -1, 8);
}

#[test]
fn grad_scaler_unscale_then_clip_then_step() {
    let w = Parameter::new(t(&[1.0, 2.0], &[2])).unwrap();
    let mut opt = SGD::new(vec![w.clone()], SGDOptions::default().lr(1.0)).unwrap();
    let mut scaler =
        GradScaler::with_options(DeviceType::Cpu, GradScalerOptions { init_scale: 8.0, ..Default::default() });
    let loss = ops::mul(&w, &t(&[3.0, -5.0], &[2])).unwrap().sum().call().unwrap();
    scaler.scale(&loss).unwrap().backward().unwrap();
    assert_eq!(w.grad().unwrap().to_vec::<f32>().unwrap(), vec![24.0, -40.0]);
    scaler.unscale_(&mut opt).unwrap();
    assert_eq!(w.grad().unwrap().to_vec::<f32>().unwrap(), vec![3.0, -5.0]);
    let e = scaler.unscale_(&mut opt).unwrap_err();
    assert!(
        e.to_string().contains("unscale_() has already been called on this optimizer since the last update()"),
        "{e}"
    );
    assert!(scaler.step(&mut opt).unwrap());
    assert_eq!(w.to_vec::<f32>().unwrap(), vec![-2.0, 7.0]);
    let e = scaler.step(&mut opt).unwrap_err();
    assert!(e.to_string().contains("step() has already been called since the last update()"), "{e}");
    let e = scaler.unscale_(&mut opt).unwrap_err();
    assert!(e.to_string().contains("unscale_() is being called after step()"), "{e}");
    scaler.update(None).unwrap();
    assert_eq!(scaler.get_scale().unwrap(), 8.0);
    scaler.update(Some(4.0)).unwrap();
    assert_eq!(scaler.get_scale().unwrap(), 4.0);
}

#[test]
fn grad_scaler_refuses_what_pytorchs_refuses() {
    let w = Parameter::new(t(&[1.0], &[1])).unwrap();
    let mut opt = SGD::new(vec![w.clone()], SGDOptions::default().lr(1.0)).unwrap();
    let mut scaler = GradScaler::new(DeviceType::Cpu);
    assert_eq!(scaler.get_scale().unwrap(), 65536.0);
    let e = scaler.step(&mut opt).unwrap_err();
    assert!(e.to_string().contains("Attempted step but _scale is None"), "{e}");
    scaler.scale(&w.sum().call().unwrap()).unwrap();
    let half = |v: &[f32]| ops::_to_copy(&t(v, &[1]), Some(ScalarType::F16), None, None, None, false, None).unwrap();
    let w16 = Parameter::new(half(&[1.0])).unwrap();
    w16.set_grad(Some(half(&[1.0]))).unwrap();
    let mut opt16 = SGD::new(vec![w16.clone()], SGDOptions::default().lr(1.0)).unwrap();
    let e = scaler.unscale_(&mut opt16).unwrap_err();
    assert!(matches!(&e, Error::Value { msg, .. } if msg == "Attempting to unscale FP16 gradients."), "{e}");
    let e = scaler.load_state_dict(None).unwrap_err();
    assert!(e.to_string().contains("The source state dict is empty"), "{e}");
    let e = scaler.update(None).unwrap_err();
    assert!(e.to_string().contains("No inf checks were recorded prior to update."), "{e}");

    // A disabled scaler passes everything through.
    let mut off = GradScaler::with_options(DeviceType::Cpu, GradScalerOptions { enabled: false, ..Default::default() });
    let x = t(&[2.0], &[1]);
    assert!(off.scale(&x).unwrap().is_same(&x));
    assert_eq!(off.get_scale().unwrap(), 1.0);
    assert_eq!(off.state_dict().unwrap(), None);
    w.set_grad(Some(t(&[1.0], &[1]))).unwrap();
    assert!(off.step(&mut opt).unwrap());
    assert_eq!(w.to_vec::<f32>().unwrap(), vec![0.0]);
}

#[test]
fn amp_kernels_check_and_update_as_pytorchs_do() {
    let found = t(&[0.0], &[1]);
    let inv = t(&[0.5], &[1]);
    let a = t(&[2.0, 4.0], &[2]);
    let b = t(&[f32::NAN, 8.0], &[2]);
    ops::_amp_foreach_non_finite_check_and_unscale_(std::slice::from_ref(&a), &found, &inv).unwrap();
    assert_eq!((a.to_vec::<f32>().unwrap(), found.item::<f32>().unwrap()), (vec![1.0, 2.0], 0.0));
    ops::_amp_foreach_non_finite_check_and_unscale_(&[b.clone(), a.clone()], &found, &inv).unwrap();
    assert_eq!(found.item::<f32>().unwrap(), 1.0);
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![0.5, 1.0]);
    let e = ops::_amp_foreach_non_finite_check_and_unscale_(std::slice::from_ref(&a), &t(&[0.0, 0.0], &[2]), &inv)
        .unwrap_err();
    assert!(e.to_string().contains("found_inf must be a 1-element tensor."), "{e}");

    let scale = t(&[4.0], &[1]);
    let tracker = Tensor::from_vec(vec![1i32], &[1]).unwrap();
    // Clean step reaching the interval: grows, tracker restarts.
    ops::_amp_update_scale_(&scale, &tracker, &t(&[0.0], &[1]), 2.0, 0.5, 2).unwrap();
    assert_eq!((scale.item::<f32>().unwrap(), tracker.item::<i32>().unwrap()), (8.0, 0));
    ops::_amp_update_scale_(&scale, &tracker, &t(&[0.0], &[1]), 2.0, 0.5, 2).unwrap();
    assert_eq!((scale.item::<f32>().unwrap(), tracker.item::<i32>().unwrap()), (8.0, 1));
    ops::_amp_update_scale_(&scale, &tracker, &t(&[1.0], &[1]), 2.0, 0.5, 2).unwrap();
    assert_eq!((scale.item::<f32>().unwrap(), tracker.item::<i32>().unwrap()), (4.0, 0));
    // Growth that would overflow keeps the scale.
    let big = t(&[f32::MAX], &[1]);
    let tr = Tensor::from_vec(vec![0i32], &[1]).unwrap();
    ops::_amp_update_scale_(&big, &tr, &t(&[0.0], &[1]), 2.0, 0.5, 1).unwrap();
    assert_eq!((big.item::<f32>().unwrap(), tr.item::<i32>().unwrap()), (f32::MAX, 0));
    let e = ops::_amp_update_scale_(&scale, &t(&[0.0], &[1]), &t(&[0.0], &[1]), 2.0, 0.5, 2).unwrap_err();
    assert!(e.to_string().contains("growth_tracker must be an int tensor."), "{e}");
}

#[test]
fn autocast_regions_cast_record_and_nest() {
    let w = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]);
    let x = t(&[1.0, 0.5, -1.0, 2.0, 0.0, 1.5], &[2, 3]);
    assert!(!autocast::is_enabled(DeviceType::Cpu));
    let y = {
        let _region = AutocastGuard::new(DeviceType::Cpu, Some(ScalarType::BF16)).unwrap();
        assert!(autocast::is_enabled(DeviceType::Cpu));
        let y = x.mm(&w).unwrap();
        assert_eq!(y.dtype(), ScalarType::BF16);
        // The weight's cast is cached: a second product reuses it.
        let y2 = x.mm(&w).unwrap();
        assert_eq!(autocast::cache_len(), 1);
        // fp32 ops run in float32 even on lower-precision inputs.
        assert_eq!(ops::mse_loss(&y2, &y, 1).unwrap().dtype(), ScalarType::F32);
        {
            let _island = AutocastGuard::with_options(DeviceType::Cpu, None, false, None).unwrap();
            assert!(!autocast::is_enabled(DeviceType::Cpu));
            assert_eq!(x.mm(&w).unwrap().dtype(), ScalarType::F32);
        }
        assert!(autocast::is_enabled(DeviceType::Cpu));
        // Promote: float32 wins over the region's dtype.
        assert_eq!(ops::cat(&[y.clone(), x.narrow(1, 0, 2).unwrap()], 0).unwrap().dtype(), ScalarType::F32);
        // float64 is never cast.
        let xd = ops::_to_copy(&x, Some(ScalarType::F64), None, None, None, false, None).unwrap();
        assert_eq!(xd.mm(&xd.transpose(0, 1).unwrap()).unwrap().dtype(), ScalarType::F64);
        y
    };
    assert_eq!(autocast::cache_len(), 0);
    assert!(!autocast::is_enabled(DeviceType::Cpu));
    assert_eq!(autocast::get_dtype(DeviceType::Cpu), ScalarType::BF16);
    // The cast is on the tape: the leaf's gradient is float32, x^T @ ones (column sums of x).
    ops::_to_copy(&y, Some(ScalarType::F32), None, None, None, false, None)
        .unwrap()
        .sum()
        .call()
        .unwrap()
        .backward()
        .unwrap();
    let g = w.grad().unwrap();
    assert_eq!(g.dtype(), ScalarType::F32);
    assert_eq!(g.to_vec::<f32>().unwrap(), vec![3.0, 3.0, 0.5, 0.5, 0.5, 0.5]);

    let e = AutocastGuard::new(DeviceType::Cpu, Some(ScalarType::F64)).unwrap_err();
    assert!(e.to_string().contains("CPU Autocast only supports dtypes of torch.float16 and torch.bfloat16"), "{e}");
    assert!(AutocastGuard::new(DeviceType::Meta, None).is_err());
}
