//! candle's side of the W1 workloads on this machine, to relate the reference machine's absolute
//! targets to this one. Each is timed as 31 samples and the median per iteration is printed (the
//! same quantity as `cargo xtask bench W1`):
//! - `W1.add1`: `&a + &b` on two 1-element f32 tensors;
//! - `W1.add1_grad`: the same on two `Var`s (candle records the operation in the result);
//! - `W1.chain100`: 50 × (mul, add) on 1-element f32 tensors from a `Var`, `sum_all`, `backward`.

use candle_core::{Device, Tensor, Var};
use std::time::Instant;

fn median_ns(n: usize, mut f: impl FnMut() -> candle_core::Result<()>) -> candle_core::Result<f64> {
    let mut samples = Vec::new();
    for _ in 0..31 {
        let t = Instant::now();
        for _ in 0..n {
            f()?;
        }
        samples.push(t.elapsed().as_secs_f64() / n as f64);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2] * 1e9)
}

fn main() -> candle_core::Result<()> {
    let a = Tensor::new(&[1.0f32], &Device::Cpu)?;
    let b = Tensor::new(&[2.0f32], &Device::Cpu)?;
    let ns = median_ns(200_000, || {
        std::hint::black_box((&a + &b)?);
        Ok(())
    })?;
    println!("candle 0.11.1 W1.add1 median {ns:.1} ns");

    let va = Var::new(&[1.0f32], &Device::Cpu)?;
    let vb = Var::new(&[2.0f32], &Device::Cpu)?;
    let ns = median_ns(200_000, || {
        std::hint::black_box((va.as_tensor() + vb.as_tensor())?);
        Ok(())
    })?;
    println!("candle 0.11.1 W1.add1_grad median {ns:.1} ns");

    let x = Var::new(&[1.0f32], &Device::Cpu)?;
    let w = Tensor::new(&[0.999f32], &Device::Cpu)?;
    let c = Tensor::new(&[0.001f32], &Device::Cpu)?;
    let ns = median_ns(500, || {
        let mut y = x.as_tensor().clone();
        for _ in 0..50 {
            y = ((&y * &w)? + &c)?;
        }
        std::hint::black_box(y.sum_all()?.backward()?);
        Ok(())
    })?;
    println!("candle 0.11.1 W1.chain100 median {:.1} us", ns / 1e3);
    Ok(())
}
