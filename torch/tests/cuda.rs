//! CUDA as a user of the facade sees it: modules moved to the device and back with their
//! gradients, and autograd through operators that run on the device, compared with the same
//! program on the CPU. On the device `TORCH_CUDA_DRIVER` names (the emulated one by default).
#![cfg(feature = "cuda")]

use torch::nn::{Linear, Module};
use torch::prelude::*;
use torch::{ops, DeviceType};

fn setup() -> Device {
    if std::env::var_os("TORCH_CUDA_DRIVER").is_none() {
        torch::cuda::select_driver(torch::cuda::DriverKind::Emulator).unwrap();
    }
    assert!(torch::cuda::is_available());
    Device::cuda(0)
}

/// `sum(sigmoid(x * w + b) - x)` on whatever device `x`, `w` and `b` are on.
fn program(x: &Tensor, w: &Tensor, b: &Tensor) -> Tensor {
    let h = ops::add(&ops::mul(x, w).unwrap(), b, Scalar::Int(1)).unwrap();
    let s = ops::sub(&ops::sigmoid(&h).unwrap(), x, Scalar::Int(1)).unwrap();
    ops::sum(&ops::exp(&ops::neg(&s).unwrap()).unwrap(), None).unwrap()
}

#[test]
fn gradients_on_the_device_match_the_cpu() {
    let gpu = setup();
    let x = Tensor::from_vec(vec![0.5f32, -1.0, 2.0, 0.25, -0.75, 1.5], &[2, 3]).unwrap();
    let w = Tensor::from_vec(vec![1.5f32, -0.5, 0.25], &[3]).unwrap();
    let b = Tensor::from_vec(vec![0.1f32], &[1]).unwrap();

    let leaves = |d: Device| -> [Tensor; 3] {
        [&x, &w, &b].map(|t| t.to_device(d).unwrap().detach().requires_grad_(true).unwrap())
    };
    let [xc, wc, bc] = leaves(Device::CPU);
    let yc = program(&xc, &wc, &bc);
    yc.backward().unwrap();
    let [xg, wg, bg] = leaves(gpu);
    let yg = program(&xg, &wg, &bg);
    assert_eq!(yg.device(), gpu);
    yg.backward().unwrap();

    let close = |a: &Tensor, b: &Tensor, what: &str| {
        let (a, b) = (a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap());
        for (i, (p, q)) in a.iter().zip(&b).enumerate() {
            assert!((p - q).abs() <= 1e-5 * q.abs().max(1.0), "{what}[{i}]: cuda {p}, cpu {q}");
        }
    };
    close(&yg, &yc, "loss");
    for (g, c, what) in [(&xg, &xc, "x.grad"), (&wg, &wc, "w.grad"), (&bg, &bc, "b.grad")] {
        let gg = g.grad().expect("a gradient on the device");
        assert_eq!(gg.device(), gpu, "{what} lives where its tensor does");
        close(&gg, &c.grad().unwrap(), what);
    }

    // A leaf on the CPU used on the device: the gradient flows back through the copy.
    let xc2 = x.detach().requires_grad_(true).unwrap();
    let y = program(&xc2.cuda_on(0).unwrap(), &wg.detach(), &bg.detach());
    y.backward().unwrap();
    let g = xc2.grad().unwrap();
    assert!(g.device().is_cpu());
    close(&g, &xc.grad().unwrap(), "x.grad through .cuda()");
}

/// `tensor.cuda()` is the current device and `cuda_on(i)` device `i` (PyTorch's `x.cuda()` and
/// `x.cuda(i)`); `cpu()` comes back.
#[test]
fn tensors_move_to_the_current_device() {
    let gpu = setup();
    let x = tensor![1.0, -2.0].unwrap();
    let g = x.cuda().unwrap();
    assert_eq!(g.device(), gpu);
    assert_eq!(x.cuda_on(0).unwrap().device(), gpu);
    assert_eq!(g.cuda().unwrap().device(), gpu);
    let back = g.cpu().unwrap();
    assert!(back.device().is_cpu());
    assert_eq!(back.to_vec::<f32>().unwrap(), vec![1.0, -2.0]);
}

#[test]
fn modules_move_parameters_buffers_and_gradients() {
    let gpu = setup();
    let mut m = Linear::new(3, 2).unwrap();
    let before: Vec<Vec<f32>> = m.parameters().iter().map(|p| p.tensor().to_vec::<f32>().unwrap()).collect();
    for p in m.parameters() {
        p.tensor().set_grad(Some(ops::ones_like(p.tensor(), None, None, None, None, None).unwrap())).unwrap();
    }
    m.cuda().unwrap();
    for (p, v) in m.parameters().iter().zip(&before) {
        assert_eq!(p.tensor().device(), gpu);
        assert!(p.tensor().requires_grad());
        assert_eq!(&p.tensor().to_vec::<f32>().unwrap(), v, "values survive the move");
        let g = p.tensor().grad().expect("the gradient moves with its parameter");
        assert_eq!((g.device(), g.to_vec::<f32>().unwrap()), (gpu, vec![1.0; v.len()]));
    }
    m.cpu().unwrap();
    for (p, v) in m.parameters().iter().zip(&before) {
        assert_eq!(p.tensor().device().ty, DeviceType::Cpu);
        assert_eq!(&p.tensor().to_vec::<f32>().unwrap(), v);
    }
    // A device that does not exist is an error, and the module stays where it was.
    let e = m.to_device(Device::cuda(64)).unwrap_err().to_string();
    assert!(e.contains("invalid device ordinal"), "{e}");
    assert!(m.parameters().iter().all(|p| p.tensor().device().is_cpu()));
}

#[test]
fn a_training_step_on_the_device_matches_the_cpu() {
    use torch::nn::{Forward, ReLU, Sequential};
    use torch::optim::{Optimizer, SGDOptions, SGD};
    let gpu = setup();
    torch::manual_seed(7);
    let build = || Sequential::new().add(Linear::new(4, 8).unwrap()).add(ReLU::new()).add(Linear::new(8, 2).unwrap());
    let cpu_net = build();
    let mut gpu_net = build();
    // The same initial weights on both.
    for (d, s) in gpu_net.parameters().iter().zip(cpu_net.parameters()) {
        let _g = torch::no_grad();
        ops::copy_(d.tensor(), s.tensor(), false).unwrap();
    }
    gpu_net.cuda().unwrap();
    let x = Tensor::from_vec((0..12).map(|i| (i as f32 - 6.0) * 0.3).collect::<Vec<_>>(), &[3, 4]).unwrap();
    let step = |net: &Sequential, x: &Tensor| -> Tensor {
        let mut opt = SGD::new(net.parameters(), SGDOptions { lr: 0.1, ..Default::default() }).unwrap();
        opt.zero_grad(true).unwrap();
        let y = net.forward(x).unwrap();
        let loss = ops::sum(&ops::mul(&y, &y).unwrap(), None).unwrap();
        loss.backward().unwrap();
        opt.step().unwrap();
        loss
    };
    let lc = step(&cpu_net, &x);
    let lg = step(&gpu_net, &x.cuda_on(0).unwrap());
    assert_eq!(lg.device(), gpu);
    let (a, b) = (lg.item::<f64>().unwrap(), lc.item::<f64>().unwrap());
    assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "loss: cuda {a}, cpu {b}");
    for (pg, pc) in gpu_net.parameters().iter().zip(cpu_net.parameters()) {
        assert_eq!(pg.tensor().device(), gpu);
        let (g, c) = (pg.tensor().to_vec::<f64>().unwrap(), pc.tensor().to_vec::<f64>().unwrap());
        for (p, q) in g.iter().zip(&c) {
            assert!((p - q).abs() <= 1e-5 * q.abs().max(1.0), "updated parameter: cuda {p}, cpu {q}");
        }
    }
}
