//! `torch.export` programs (`.pt2`, `gen_export.py`) load and match `ep.module()`'s outputs on
//! two input sets each, with a dynamic batch dimension checked against its range, buffers the
//! forward mutates written back, and bad archives refused with the file and the cause.

use std::path::{Path, PathBuf};

use aten::{IValue, Tensor};
use nn::Module;

use super::load::edited_zip;

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jit/models")
}

fn assert_close(ours: &Tensor, theirs: &Tensor, what: &str) {
    assert_eq!(ours.sizes(), theirs.sizes(), "{what}: sizes");
    assert_eq!(ours.dtype(), theirs.dtype(), "{what}: dtype");
    let (a, b) = (ours.to_vec::<f64>().unwrap(), theirs.to_vec::<f64>().unwrap());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!((x - y).abs() <= 1e-5 * y.abs() + 1e-6, "{what}[{i}]: {x} vs PyTorch's {y}");
    }
}

/// A dynamic batch (MLP, ResBlock, a flatten by `x.size(0)` with two outputs, a transformer
/// encoder layer), BatchNorm in training mode (running statistics mutated in the graph), and
/// the same decomposed to the ATen IR (mutations as `buffer_mutation` outputs).
const PROGRAMS: [&str; 6] = ["e_mlp", "e_bn_train", "e_bn_decomposed", "e_resblock", "e_flatten", "e_encoder"];

#[test]
fn exported_programs_load_and_match_pytorch_on_both_input_sets() {
    for name in PROGRAMS {
        let module = jit::load(models().join(format!("{name}.pt2"))).unwrap_or_else(|e| panic!("{name}: {e}"));
        let io = nn::serialize::load_file(models().join(format!("{name}.io.safetensors"))).unwrap().tensors;
        for tag in ["a", "b"] {
            let inputs: Vec<Tensor> = (0..).map_while(|i| io.get(&format!("{tag}.input{i}")).cloned()).collect();
            let outputs = {
                let _g = autograd::no_grad();
                module.forward_tensors(&inputs).unwrap_or_else(|e| panic!("{name} ({tag}): {e}"))
            };
            let expected: Vec<Tensor> = (0..).map_while(|i| io.get(&format!("{tag}.output{i}")).cloned()).collect();
            assert_eq!(outputs.len(), expected.len(), "{name} ({tag})");
            for (i, (o, e)) in outputs.iter().zip(&expected).enumerate() {
                assert_close(o, e, &format!("{name} ({tag}) output {i}"));
            }
            // Buffers after this set, as PyTorch's module left them.
            for (fqn, b) in module.named_buffers() {
                if let Some(e) = io.get(&format!("{tag}.buffer.{fqn}")) {
                    assert_close(&b, e, &format!("{name} ({tag}) buffer {fqn}"));
                }
            }
        }
    }
}

#[test]
fn parameters_and_buffers_have_their_state_dict_names() {
    let module = jit::load(models().join("e_bn_train.pt2")).unwrap();
    let params: Vec<String> = module.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(params, ["fc.weight", "fc.bias", "bn.weight", "bn.bias"]);
    let buffers: Vec<String> = module.named_buffers().into_iter().map(|(n, _)| n).collect();
    assert_eq!(buffers, ["bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]);
}

#[test]
fn sizes_outside_the_declared_range_are_errors_naming_the_dimension() {
    let module = jit::load(models().join("e_mlp.pt2")).unwrap();
    // batch = Dim("batch", min=2, max=64); the feature dimension is static (8).
    let run = |shape: &[i64]| {
        module.forward_values(&[IValue::Tensor(aten::ops::zeros(shape, None, None, None, None).unwrap())])
    };
    assert!(run(&[2, 8]).is_ok() && run(&[64, 8]).is_ok());
    for (shape, cause) in [
        // PyTorch names the symbol (s77), not the Dim ("batch"), in the file.
        (&[1i64, 8][..], "must be in [2, 64], got 1"),
        (&[65, 8], "must be in [2, 64], got 65"),
        (&[4, 7], "dimension 1 must be 8, got 7"),
        (&[4, 8, 1], "must have 2 dimensions, got 3"),
    ] {
        let err = run(shape).unwrap_err().to_string();
        assert!(err.contains(cause) && err.contains("input 'x'"), "{shape:?}: {err}");
    }
}

fn edited(name: &str, out: &Path, edit: impl Fn(&str, &mut Vec<u8>)) {
    edited_zip(&models().join(format!("{name}.pt2")), out, |n, b| edit(n.split_once('/').map_or(n, |(_, r)| r), b));
}

fn replace(bytes: &mut Vec<u8>, from: &str, to: &str) {
    let s = String::from_utf8(bytes.clone()).unwrap();
    assert!(s.contains(from), "{from} is not in the record");
    *bytes = s.replacen(from, to, 1).into_bytes();
}

/// An edit of one record (name relative to the archive's folder, bytes).
type Edit = dyn Fn(&str, &mut Vec<u8>);

#[test]
fn bad_programs_are_errors_naming_the_file_and_the_cause() {
    let dir = std::env::temp_dir().join(format!("jit-pt2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases: Vec<(&str, Box<Edit>, &str)> = vec![
        (
            "version",
            Box::new(|n, b| {
                if n == "models/model.json" {
                    replace(b, "\"major\": 8", "\"major\": 9")
                }
            }),
            "schema version 9.",
        ),
        (
            "target",
            Box::new(|n, b| {
                if n == "models/model.json" {
                    replace(b, "torch.ops.aten.linear.default", "torch.ops.aten.frobnicate.default")
                }
            }),
            "unknown operator aten::frobnicate",
        ),
        (
            "higher_order",
            Box::new(|n, b| {
                if n == "models/model.json" {
                    replace(b, "torch.ops.aten.linear.default", "torch.ops.higher_order.cond")
                }
            }),
            "calls torch.ops.higher_order.cond, which is not supported",
        ),
        (
            "cycle",
            // The first node reads its own output: used before it is defined.
            Box::new(|n, b| {
                if n == "models/model.json" {
                    let mut j: serde_json::Value = serde_json::from_slice(b).unwrap();
                    let node = &mut j["graph_module"]["graph"]["nodes"][0];
                    node["inputs"][0]["arg"]["as_tensor"]["name"] = node["name"].clone();
                    *b = serde_json::to_vec(&j).unwrap();
                }
            }),
            "is used before it is defined",
        ),
        (
            "weights",
            Box::new(|n, b| {
                if n == "data/weights/weight_0" {
                    b.truncate(12)
                }
            }),
            "the view reaches element",
        ),
        (
            "json",
            Box::new(|n, b| {
                if n == "models/model.json" {
                    b.truncate(b.len() / 2)
                }
            }),
            "model.json",
        ),
        (
            "format",
            Box::new(|n, b| {
                if n == "archive_format" {
                    *b = b"zip".to_vec()
                }
            }),
            "archive_format",
        ),
    ];
    for (label, edit, cause) in cases {
        let path = dir.join(format!("{label}.pt2"));
        edited("e_mlp", &path, edit);
        let err = match jit::load(&path) {
            Ok(_) => panic!("{label}: the damaged program loaded"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(cause) && err.contains(&format!("{label}.pt2")), "{label}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_thousand_corrupted_programs_never_panic() {
    let dir = std::env::temp_dir().join(format!("jit-pt2-damaged-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut next = crate::xorshift(0x2545_f491_4f6c_dd1du64);
    let good = std::fs::read(models().join("e_bn_train.pt2")).unwrap();
    let path = dir.join("damaged.pt2");
    let (mut ok, mut failed) = (0, 0);
    for k in 0..1000 {
        let mut bytes = good.clone();
        if k % 10 == 0 {
            // Truncated.
            bytes.truncate((next() % bytes.len() as u64) as usize);
        } else {
            for _ in 0..1 + next() % 3 {
                let i = (next() % bytes.len() as u64) as usize;
                bytes[i] = next() as u8;
            }
        }
        std::fs::write(&path, &bytes).unwrap();
        match jit::load(&path) {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(e.to_string().contains("damaged.pt2"), "{e}");
                failed += 1;
            }
        }
    }
    assert!(ok > 0 && failed > 0, "{ok} loaded, {failed} failed");
    std::fs::remove_dir_all(&dir).unwrap();
}
