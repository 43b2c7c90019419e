//! The state_dicts PyTorch saved with `torch.save` for the models of `gen.py` load into the same
//! architectures built with our `nn`, under identical names (strict), and give PyTorch's outputs.

use std::path::{Path, PathBuf};

use aten::Tensor;

use super::assert_bit_identical;
use nn::layers::rnn::RNNOptions;
use nn::{
    BatchNorm2d, Conv2d, ConvOptions, Forward, Linear, Module, TransformerEncoderLayer, TransformerLayerOptions, GRU,
};

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jit/models")
}

fn io(name: &str) -> (Vec<Tensor>, Vec<Tensor>) {
    let loaded = nn::serialize::load_file(models().join(format!("{name}.io.safetensors"))).unwrap();
    let get = |p: &str| (0..).map_while(|i| loaded.tensors.get(&format!("{p}{i}")).cloned()).collect::<Vec<_>>();
    (get("input"), get("output"))
}

/// Checks one model (see the file's doc); with `export`, also writes there, for PyTorch, our
/// trace as TorchScript (`<name>.ts.pt`), the state dict (`<name>.state.pt`) and the input with
/// our outputs (`<name>.io.pt`: `input0`, `output0`, ...), all with our writers.
fn check<M: Module>(name: &str, mut model: M, run: impl Fn(&M, &Tensor) -> Vec<Tensor>, export: Option<&Path>) {
    let keys = nn::load_pt_into(&mut model, models().join(format!("{name}.state.pt")), true)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(keys.missing_keys.is_empty() && keys.unexpected_keys.is_empty(), "{name}: {keys:?}");
    model.eval();
    let (inputs, expected) = io(name);
    {
        let _g = autograd::no_grad();
        let out = run(&model, &inputs[0]);
        assert_eq!(out.len(), expected.len(), "{name}");
        for (o, e) in out.iter().zip(&expected) {
            assert_eq!(o.sizes(), e.sizes(), "{name}");
            let (a, b) = (o.contiguous().call().unwrap().to_vec::<f32>().unwrap(), e.to_vec::<f32>().unwrap());
            for (x, y) in a.iter().zip(&b) {
                assert!((x - y).abs() <= 1e-5 * y.abs() + 1e-6, "{name}: {x} vs PyTorch's {y}");
            }
        }
    }
    round_trip(name, &model, &inputs[0], &run);
    if let Some(dir) = export {
        let script = jit::trace_module(&model, &inputs[..1], |xs| Ok(run(&model, &xs[0]))).unwrap();
        script.save_torchscript(dir.join(format!("{name}.ts.pt"))).unwrap();
        nn::save_pt(&model.state_dict(), dir.join(format!("{name}.state.pt"))).unwrap();
        let _g = autograd::no_grad();
        let mut io = nn::StateDict::new();
        io.insert("input0", inputs[0].clone());
        for (i, o) in run(&model, &inputs[0]).into_iter().enumerate() {
            io.insert(format!("output{i}"), o);
        }
        nn::save_pt(&io, dir.join(format!("{name}.io.pt"))).unwrap();
    }
}

/// Our own trace → save → load → run of the model: bit-identical to eager, with gradients
/// (of the loaded module's parameters) bit-identical to eager's, and a text form that
/// round-trips.
fn round_trip<M: Module>(name: &str, model: &M, x: &Tensor, run: &impl Fn(&M, &Tensor) -> Vec<Tensor>) {
    use autograd::TensorAutograd;
    let script = jit::trace_module(model, std::slice::from_ref(x), |xs| Ok(run(model, &xs[0]))).unwrap();
    let text = script.graph().to_string();
    let reparsed = jit::parse_with(&text, script.graph().tensor_constants.clone()).unwrap();
    assert_eq!(reparsed.to_string(), text, "{name}");
    check_shape_propagation(name, script.graph(), &text);
    let path = std::env::temp_dir().join(format!("jit-ours-{name}-{}.zip", std::process::id()));
    script.save(&path).unwrap();
    let loaded = jit::load(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    // Written as TorchScript and read back by our TorchScript front end: the same results.
    script.save_torchscript(&path).unwrap();
    let printed = jit::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    std::fs::remove_file(&path).unwrap();
    {
        let _g = autograd::no_grad();
        let a = printed.forward_tensors(std::slice::from_ref(x)).unwrap();
        let b = script.forward_tensors(std::slice::from_ref(x)).unwrap();
        assert_eq!(a.len(), b.len(), "{name}");
        for (p, q) in a.iter().zip(&b) {
            assert_bit_identical(p, q);
        }
    }
    for p in model.parameters() {
        p.set_grad(None).unwrap();
    }
    let eager = run(model, x);
    eager[0].sum().call().unwrap().backward().unwrap();
    let ours = loaded.forward_tensors(std::slice::from_ref(x)).unwrap();
    ours[0].sum().call().unwrap().backward().unwrap();
    assert_eq!(ours.len(), eager.len(), "{name}");
    for (a, b) in ours.iter().zip(&eager) {
        assert_bit_identical(a, b);
    }
    let eager_grads = model.named_parameters();
    let loaded_grads = loaded.named_parameters();
    assert_eq!(eager_grads.len(), loaded_grads.len(), "{name}");
    for ((n, p), (m, q)) in eager_grads.iter().zip(&loaded_grads) {
        assert_eq!(n, m, "{name}");
        assert_bit_identical(&p.grad().unwrap(), &q.grad().unwrap());
    }
}

/// Shape propagation on the meta device reproduces the types tracing recorded from the real
/// tensors: the traced graph with every node output's type erased, propagated from the input
/// types, has every dtype, size, stride and device back.
fn check_shape_propagation(name: &str, traced: &jit::Graph, text: &str) {
    use jit::JitType;
    let mut g = jit::parse_with(text, traced.tensor_constants.clone()).unwrap();
    let erase = |t: &JitType| match t {
        JitType::Tensor(_) => JitType::tensor(),
        other => other.clone(),
    };
    for n in g.all_nodes() {
        for v in g.outputs_of(n).to_vec() {
            let t = erase(g.value_type(v));
            g.set_type(v, t);
        }
    }
    let report = jit::passes::propagate_shapes(&mut g);
    assert!(report.unknown.is_empty(), "{name}: {:?}", report.unknown);
    let mut compared = 0;
    for (n, m) in traced.all_nodes().into_iter().zip(g.all_nodes()) {
        for (&v, &w) in traced.outputs_of(n).iter().zip(g.outputs_of(m)) {
            let (JitType::Tensor(want), JitType::Tensor(got)) = (traced.value_type(v), g.value_type(w)) else {
                continue;
            };
            let what = format!("{name}: %{} = {}", traced.value_name(v).unwrap_or("?"), traced.kind(n));
            assert_eq!((got.dtype, &got.sizes, got.device), (want.dtype, &want.sizes, want.device), "{what}");
            assert_eq!(got.strides, want.strides, "{what}");
            compared += 1;
        }
    }
    assert!(compared > 0, "{name}");
}

#[derive(nn::Module)]
struct Mlp {
    fc1: Linear,
    fc2: Linear,
}

#[derive(nn::Module)]
struct LeNet {
    conv1: Conv2d,
    conv2: Conv2d,
    fc1: Linear,
    fc2: Linear,
}

#[derive(nn::Module)]
struct ResBlock {
    conv1: Conv2d,
    bn1: BatchNorm2d,
    conv2: Conv2d,
    bn2: BatchNorm2d,
}

#[derive(nn::Module)]
struct GruNet {
    gru: GRU,
    head: Linear,
}

#[derive(nn::Module)]
struct Encoder {
    layer: TransformerEncoderLayer,
}

#[test]
fn pytorch_state_dicts_load_into_our_modules_with_identical_names() {
    check_all(None);
}

/// The five models of `gen.py` built with our `nn` and PyTorch's weights, checked (see
/// [`check`]); with `export`, written there for PyTorch as well.
pub(crate) fn check_all(export: Option<&Path>) {
    use aten::ops;
    let conv = |i, o, k, pad: i64, bias| {
        Conv2d::with_options(i, o, &[k, k], ConvOptions::default().padding(vec![pad, pad]).bias(bias)).unwrap()
    };
    let pool = |x: &Tensor| ops::max_pool2d(x, &[2, 2], &[], &[0, 0], &[1, 1], false).unwrap();

    let mlp = Mlp { fc1: Linear::new(8, 16).unwrap(), fc2: Linear::new(16, 4).unwrap() };
    let run_mlp = |m: &Mlp, x: &Tensor| vec![m.fc2.forward(&m.fc1.forward(x).unwrap().relu().unwrap()).unwrap()];
    check("mlp", mlp, run_mlp, export);
    let lenet = LeNet {
        conv1: conv(1, 4, 5, 0, true),
        conv2: conv(4, 8, 5, 0, true),
        fc1: Linear::new(128, 32).unwrap(),
        fc2: Linear::new(32, 10).unwrap(),
    };
    check(
        "lenet",
        lenet,
        |m, x| {
            let x = pool(&m.conv1.forward(x).unwrap().relu().unwrap());
            let x = pool(&m.conv2.forward(&x).unwrap().relu().unwrap());
            let x = ops::flatten(&x, 1, -1).unwrap();
            let x = m.fc2.forward(&m.fc1.forward(&x).unwrap().relu().unwrap()).unwrap();
            vec![ops::log_softmax(&x, 1, None).unwrap()]
        },
        export,
    );
    let res = ResBlock {
        conv1: conv(4, 4, 3, 1, false),
        bn1: BatchNorm2d::new(4).unwrap(),
        conv2: conv(4, 4, 3, 1, false),
        bn2: BatchNorm2d::new(4).unwrap(),
    };
    check(
        "resblock",
        res,
        |m, x| {
            let y = m.bn1.forward(&m.conv1.forward(x).unwrap()).unwrap().relu().unwrap();
            let y = m.bn2.forward(&m.conv2.forward(&y).unwrap()).unwrap();
            vec![y.add(x).call().unwrap().relu().unwrap()]
        },
        export,
    );
    let gru = GruNet {
        gru: GRU::with_options(6, 8, &RNNOptions::default().batch_first(true)).unwrap(),
        head: Linear::new(8, 3).unwrap(),
    };
    check(
        "gru",
        gru,
        |m, x| {
            let (out, h) = m.gru.forward(x, None).unwrap();
            let last = out.select(1, -1).unwrap();
            vec![m.head.forward(&last).unwrap(), h]
        },
        export,
    );
    let opts = TransformerLayerOptions { dim_feedforward: 16, dropout: 0.0, batch_first: true, ..Default::default() };
    let enc = Encoder { layer: TransformerEncoderLayer::with_options(8, 2, &opts).unwrap() };
    check("encoder", enc, |m, x| vec![m.layer.forward(x).unwrap()], export);
}
