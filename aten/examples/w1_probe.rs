use aten::Tensor;
use c10::Scalar;
fn time(name: &str, f: impl Fn()) {
    for _ in 0..100000 { f(); }
    let mut best = f64::MAX;
    for _ in 0..7 {
        let n = 300_000;
        let t = std::time::Instant::now();
        for _ in 0..n { f(); }
        best = best.min(t.elapsed().as_nanos() as f64 / n as f64);
    }
    println!("{name}: {best:.1} ns/op");
}
fn main() {
    let a = Tensor::from_slice(&[1.0f32]);
    let b = Tensor::from_slice(&[2.0f32]);
    time("public add", || { std::hint::black_box((&a + &b).unwrap()); });
    time("native add", || { std::hint::black_box(aten::native::binary::add(&a, &b, Scalar::Int(1)).unwrap()); });
    time("iter build", || { std::hint::black_box(aten::native::tensor_iterator::TensorIteratorConfig::binary_op("add", None, &a, &b).build().unwrap()); });
    time("empty", || { std::hint::black_box(Tensor::empty_uninit(&[1], c10::ScalarType::F32, c10::Device::CPU).unwrap()); });
    time("storage", || { std::hint::black_box(c10::Storage::new(4, c10::Device::CPU).unwrap()); });
    time("arc", || { std::hint::black_box(std::sync::Arc::new([0u64; 20])); });
    time("clone+drop tensor", || { std::hint::black_box(a.clone()); });
}

#[cfg(any())]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
