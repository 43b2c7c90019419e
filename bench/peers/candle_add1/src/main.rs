//! candle's `&a + &b` on two 1-element f32 tensors: 31 samples of 200,000 additions each, the
//! median time per addition printed in ns (the same quantity as `cargo xtask bench W1.add1`).

use candle_core::{Device, Tensor};
use std::time::Instant;

fn main() -> candle_core::Result<()> {
    let a = Tensor::new(&[1.0f32], &Device::Cpu)?;
    let b = Tensor::new(&[2.0f32], &Device::Cpu)?;
    let mut samples = Vec::new();
    for _ in 0..31 {
        let n = 200_000;
        let t = Instant::now();
        for _ in 0..n {
            std::hint::black_box((&a + &b)?);
        }
        samples.push(t.elapsed().as_secs_f64() / n as f64);
    }
    samples.sort_by(f64::total_cmp);
    println!("candle 0.11.1 W1.add1 median {:.1} ns", samples[samples.len() / 2] * 1e9);
    Ok(())
}
