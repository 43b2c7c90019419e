use aten::Tensor;
fn main() {
    let a = Tensor::from_slice(&[1.0f32]);
    let b = Tensor::from_slice(&[2.0f32]);
    let n = 5_000_000;
    let t = std::time::Instant::now();
    for _ in 0..n { std::hint::black_box((&a + &b).unwrap()); }
    println!("{:.1} ns/op", t.elapsed().as_nanos() as f64 / n as f64);
}
