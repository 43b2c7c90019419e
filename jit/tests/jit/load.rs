//! Models traced and saved by PyTorch (`gen.py`) load and reproduce PyTorch's outputs; our own
//! archives round-trip bit for bit; bad archives are errors naming the file and the cause.

use std::path::{Path, PathBuf};

use aten::Tensor;
use autograd::TensorAutograd;
use jit::ScriptModule;
use nn::Module;

use super::assert_bit_identical;

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jit/models")
}

/// The inputs and PyTorch's outputs of a model.
fn io(name: &str) -> (Vec<Tensor>, Vec<Tensor>) {
    let loaded = nn::serialize::load_file(models().join(format!("{name}.io.safetensors"))).unwrap();
    let get =
        |prefix: &str| (0..).map_while(|i| loaded.tensors.get(&format!("{prefix}{i}")).cloned()).collect::<Vec<_>>();
    (get("input"), get("output"))
}

fn assert_close(ours: &Tensor, theirs: &Tensor, what: &str) {
    assert_eq!(ours.sizes(), theirs.sizes(), "{what}");
    let a = ours.contiguous().unwrap().to_vec::<f32>().unwrap();
    let b = theirs.to_vec::<f32>().unwrap();
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!((x - y).abs() <= 1e-5 * y.abs() + 1e-6, "{what}[{i}]: {x} vs PyTorch's {y}");
    }
}

/// `sequential` reads its children with `getattr(self, "0")`; `mha` is one
/// `aten::_native_multi_head_attention` (PyTorch's inference fast path), with its head-averaged
/// attention weights as a second output; `gelu` keeps its version in `.data/version`.
const MODELS: [&str; 8] = ["mlp", "lenet", "resblock", "gru", "encoder", "sequential", "mha", "gelu"];

#[test]
fn pytorch_traced_models_load_and_match_pytorch() {
    for name in MODELS {
        let m = jit::load(models().join(format!("{name}.pt"))).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (inputs, expected) = io(name);
        let _g = autograd::no_grad();
        let out = m.forward_tensors(&inputs).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out.len(), expected.len(), "{name}");
        for (k, (o, e)) in out.iter().zip(&expected).enumerate() {
            assert_close(o, e, &format!("{name} output {k}"));
        }
    }
}

#[test]
fn parameters_of_a_loaded_model_have_the_state_dict_names() {
    let m = jit::load(models().join("resblock.pt")).unwrap();
    let names: Vec<String> = m.state_dict().keys().map(str::to_string).collect();
    let theirs = nn::load_pt(models().join("resblock.state.pt")).unwrap();
    let expected: Vec<String> = theirs.keys().map(str::to_string).collect();
    let (mut a, mut b) = (names.clone(), expected.clone());
    a.sort();
    b.sort();
    assert_eq!(a, b);
    for (n, t) in theirs.iter() {
        let ours = m.state_dict();
        assert_eq!(ours.get(n).unwrap().to_vec::<f64>().unwrap(), t.to_vec::<f64>().unwrap(), "{n}");
    }
}

#[test]
fn our_archives_round_trip_bit_for_bit_with_gradients() {
    let dir = std::env::temp_dir().join(format!("jit-roundtrip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in MODELS {
        let m = jit::load(models().join(format!("{name}.pt"))).unwrap();
        let path = dir.join(format!("{name}.zip"));
        m.save(&path).unwrap();
        let back = jit::load(&path).unwrap();
        assert_eq!(back.graph().to_string(), m.graph().to_string(), "{name}");
        let (inputs, _) = io(name);
        let a = m.forward_tensors(&inputs).unwrap();
        let b = back.forward_tensors(&inputs).unwrap();
        for (x, y) in a.iter().zip(&b) {
            assert_bit_identical(x, y);
        }
        // Gradients through the loaded module equal those through the original.
        let grads = |s: &ScriptModule| {
            s.forward_tensors(&inputs).unwrap()[0].sum().unwrap().backward().unwrap();
            s.parameters().iter().map(|p| p.grad().unwrap()).collect::<Vec<_>>()
        };
        for (x, y) in grads(&m).iter().zip(&grads(&back)) {
            assert_bit_identical(x, y);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_text_form_round_trips_for_every_model() {
    for name in MODELS {
        let m = jit::load(models().join(format!("{name}.pt"))).unwrap();
        let text = m.graph().to_string();
        let g = jit::parse_with(&text, m.graph().tensor_constants.clone()).unwrap();
        assert_eq!(g.to_string(), text, "{name}");
    }
}

#[test]
fn bad_archives_are_errors_naming_the_file_and_the_cause() {
    let dir = std::env::temp_dir().join(format!("jit-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = std::fs::read(models().join("mlp.pt")).unwrap();
    // Truncated.
    let truncated = dir.join("truncated.pt");
    std::fs::write(&truncated, &good[..good.len() / 2]).unwrap();
    let err = jit::load(&truncated).unwrap_err().to_string();
    assert!(err.contains("truncated.pt") && err.contains("zip"), "{err}");
    // Not a zip.
    let text = dir.join("text.pt");
    std::fs::write(&text, b"hello").unwrap();
    let err = jit::load(&text).unwrap_err().to_string();
    assert!(err.contains("text.pt") && err.contains("not a zip archive"), "{err}");
    // One of ours with an unknown operator and one with a newer version.
    let m = jit::load(models().join("mlp.pt")).unwrap();
    let ours = dir.join("ours.zip");
    m.save(&ours).unwrap();
    let rewrite = |from: &str, to: &str, entry: &str, out: &Path| {
        let mut zip = zip::ZipArchive::new(std::fs::File::open(&ours).unwrap()).unwrap();
        let mut w = zip::ZipWriter::new(std::fs::File::create(out).unwrap());
        for i in 0..zip.len() {
            let mut f = zip.by_index(i).unwrap();
            let name = f.name().unwrap().to_string();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut bytes).unwrap();
            if name.ends_with(entry) {
                bytes = String::from_utf8(bytes).unwrap().replacen(from, to, 1).into_bytes();
            }
            w.start_file(name, zip::write::SimpleFileOptions::default()).unwrap();
            std::io::Write::write_all(&mut w, &bytes).unwrap();
        }
        w.finish().unwrap();
    };
    let unknown = dir.join("unknown_op.zip");
    rewrite("aten::relu", "aten::not_an_op", "graph.txt", &unknown);
    let err = jit::load(&unknown).unwrap_err().to_string();
    assert!(err.contains("unknown_op.zip") && err.contains("aten::not_an_op"), "{err}");
    let newer = dir.join("newer.zip");
    rewrite("\"version\": 1", "\"version\": 99", "jit.json", &newer);
    let err = jit::load(&newer).unwrap_err().to_string();
    assert!(err.contains("newer.zip") && err.contains("archive version 99 is not supported"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn models_optimized_for_inference_give_the_same_outputs() {
    for name in MODELS {
        let mut m = jit::load(models().join(format!("{name}.pt"))).unwrap();
        let (inputs, expected) = io(name);
        let _g = autograd::no_grad();
        let before = m.forward_tensors(&inputs).unwrap();
        m.optimize_for_inference();
        m.graph().lint().unwrap();
        let after = m.forward_tensors(&inputs).unwrap();
        for ((a, b), e) in after.iter().zip(&before).zip(&expected) {
            assert_close(a, e, &format!("{name} optimized"));
            assert_close(a, b, &format!("{name} optimized vs not"));
        }
    }
}

#[test]
fn the_fixtures_are_what_their_tests_say() {
    // Guards against a regenerated fixture that no longer exercises its case.
    let records = |name: &str| nn::PtArchive::open(models().join(format!("{name}.pt"))).unwrap().record_names();
    let gelu = records("gelu");
    assert!(gelu.iter().any(|r| r == ".data/version") && !gelu.iter().any(|r| r == "version"), "{gelu:?}");
    assert!(records("mlp").iter().any(|r| r == "version"));
    let m = jit::load(models().join("mha.pt")).unwrap();
    assert!(m.graph().to_string().contains("aten::_native_multi_head_attention"), "{}", m.graph());
    let m = jit::load(models().join("sequential.pt")).unwrap();
    let names: Vec<String> = m.state_dict().keys().map(str::to_string).collect();
    assert_eq!(names, ["0.weight", "0.bias", "2.weight", "2.bias"]);
}
