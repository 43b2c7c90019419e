//! A tour of the framework: tensors and their PyTorch-style printing, views, broadcasting and
//! type promotion, errors as values, and the dispatcher underneath every operator.
//!
//! Run it with `cargo run --release -p torch --example tour`. The book in `docs/` explains what
//! happens behind each call ("Life of an operator call").

use torch::dispatch::{dispatcher, IValue, Stack};
use torch::{Scalar, Tensor};

fn heading(title: &str) {
    println!("\n== {title} {}", "=".repeat(72usize.saturating_sub(title.len())));
}

/// Prints `label -> tensor`, or the tensor on its own lines when it spans several.
fn show(label: &str, t: &Tensor) {
    let s = t.to_string();
    if s.contains('\n') {
        println!("{label}:\n{s}");
    } else {
        println!("{label:<17} -> {s}");
    }
}

fn main() -> torch::Result<()> {
    heading("Creating tensors");
    // Zero-copy from a Vec (the tensor takes ownership), or copied from a slice.
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    let b = Tensor::from_slice(&[10i64, 20, 30]);
    show("from_vec", &a);
    show("from_slice", &b);
    // A factory takes PyTorch's required arguments and returns a builder for the rest (dtype,
    // device, ...), finished by `.call()`. (`torch::ops` has the explicit forms that take every
    // schema argument, for generated and generic code.)
    show("arange(0, 10, 3)", &torch::arange_start(0, 10).step(3).call()?);
    show("zeros(2, 2)", &Tensor::zeros(&[2, 2]).call()?);
    show("ones(3, int32)", &torch::ones(3).dtype(torch::int32).call()?);
    show("full(2, 7.5)", &torch::full(2, 7.5).call()?);
    show("linspace(0, 1, 5)", &torch::linspace(0, 1, 5).call()?);
    show("eye(3)", &torch::eye(3).call()?);
    // The CPU generator is PyTorch's mt19937: the same seed gives PyTorch's numbers.
    torch::manual_seed(0);
    show("rand(3), seed 0", &torch::rand(3).call()?);
    show("randn(3)", &torch::randn(3).call()?);

    heading("Printing");
    // `Display` is PyTorch's `str(t)`: precision 4, summarised above 1000 elements.
    println!("{}", Tensor::from_slice(&[1e-5f64, 1.0, 3.0]));
    println!("{}", Tensor::from_slice(&[true, false]));
    println!("{}", torch::arange(2000).call()?);
    println!("{}", Tensor::scalar_tensor(2.5f32));

    heading("Views share storage and the version counter");
    let base = torch::arange(12).dtype(torch::float32).call()?.view(&[3, 4])?;
    let t = base.transpose(0, 1)?;
    let row = base.select(0, 1)?;
    let cols = base.narrow(1, 1, 2)?;
    let flat = base.reshape(&[12])?;
    println!("base {:?} strides {:?}", base.sizes(), base.strides());
    println!("transpose(0, 1) {:?} strides {:?} contiguous={}", t.sizes(), t.strides(), t.is_contiguous());
    println!("select(0, 1)    {:?} offset {}", row.sizes(), row.storage_offset());
    println!("narrow(1, 1, 2) {:?} strides {:?}", cols.sizes(), cols.strides());
    for (name, v) in [("transpose", &t), ("select", &row), ("narrow", &cols), ("reshape", &flat)] {
        println!("{name:>9}: shares base's storage = {}", v.storage().is_same(base.storage()));
    }
    println!("version before: base {} row {}", base.version(), row.version());
    row.neg_()?; // in place, through the view: writes into base's storage
    println!("after row.neg_():  base {} row {}", base.version(), row.version());
    show("base", &base);

    heading("Broadcasting and type promotion");
    let col = Tensor::from_vec(vec![100.0f32, 200.0], &[2, 1])?;
    show("f32 [2, 3] + f32 [2, 1]", &(&a + &col)?);
    show("i64 [3] + f32 [2, 3]", &(&b + &a)?);
    let ints = Tensor::from_slice(&[1i32, 2, 3]);
    let halves = (&ints + 0.5)?;
    println!("{:<17} -> {halves} ({})", "int32 + 0.5", halves.dtype().name());
    let times = (&ints * 2)?;
    println!("{:<17} -> {times} (a Rust integer does not widen the tensor)", "int32 * 2");
    let div = (&ints / 2)?;
    println!("{:<17} -> {div} (true division gives the default float)", "int32 / 2");

    heading("Errors are values");
    let four = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0]);
    match &a + &four {
        Ok(t) => println!("unexpected success: {t}"),
        Err(e) => println!("[2, 3] + [4]: {e}"),
    }
    if let Err(e) = a.view(&[4, 2]) {
        println!("view([4, 2]): {e}");
    }
    if let Err(e) = t.view(&[12]) {
        println!("transposed.view([12]): {e}");
    }

    heading("Calling an operator by schema name (boxed)");
    // Every argument in schema order, defaults included; the returns replace them on the stack.
    let mut stack: Stack = vec![IValue::from(&a), IValue::from(&col), IValue::from(Scalar::Int(2))];
    dispatcher().call_boxed("add.Tensor", &mut stack)?;
    if let [IValue::Tensor(sum)] = stack.as_slice() {
        show("aten::add.Tensor(a, col, alpha=2)", sum);
    }
    if let Err(e) = dispatcher().call_boxed("no_such_op", &mut Vec::new()) {
        println!("call_boxed(\"no_such_op\"): {e}");
    }

    heading("Dispatcher introspection");
    let names = dispatcher().operator_names();
    let first: Vec<&str> = names.iter().take(6).map(String::as_str).collect();
    println!("{} operators registered, e.g. {}, ...", names.len(), first.join(", "));
    let (op, schema) = dispatcher().find_schema("add.Tensor")?;
    println!("schema: {schema}");
    // The keys of `a + col`: the tensors' keys, then the thread-local sets and the operator's
    // fallthrough keys (autograd and ADInplaceOrView have no kernel for add yet) applied.
    let ks = op.compute_key_set(a.key_set() | col.key_set());
    println!("tensor keys:   {:?}", a.key_set());
    println!("dispatch keys: {ks:?} -> the {} kernel", ks.highest_priority_type_id());
    Ok(())
}
