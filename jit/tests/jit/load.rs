//! Models traced and saved by PyTorch (`gen.py`) load and reproduce PyTorch's outputs; our own
//! archives round-trip bit for bit; bad archives are errors naming the file and the cause.

use std::path::{Path, PathBuf};

use aten::Tensor;
use autograd::TensorAutograd;
use jit::ScriptModule;
use nn::Module;

use super::assert_bit_identical;

pub(crate) fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jit/models")
}

/// The inputs and PyTorch's outputs of a model.
pub(crate) fn io(name: &str) -> (Vec<Tensor>, Vec<Tensor>) {
    let loaded = nn::serialize::load_file(models().join(format!("{name}.io.safetensors"))).unwrap();
    let get =
        |prefix: &str| (0..).map_while(|i| loaded.tensors.get(&format!("{prefix}{i}")).cloned()).collect::<Vec<_>>();
    (get("input"), get("output"))
}

pub(crate) fn assert_close(ours: &Tensor, theirs: &Tensor, what: &str) {
    assert_eq!(ours.sizes(), theirs.sizes(), "{what}");
    let a = ours.contiguous().call().unwrap().to_vec::<f32>().unwrap();
    let b = theirs.to_vec::<f32>().unwrap();
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!((x - y).abs() <= 1e-5 * y.abs() + 1e-6, "{what}[{i}]: {x} vs PyTorch's {y}");
    }
}

/// `sequential` reads its children with `getattr(self, "0")`; `mha` is one
/// `aten::_native_multi_head_attention` (PyTorch's inference fast path), with its head-averaged
/// attention weights as a second output; `gelu` keeps its version in `.data/version`.
pub(crate) const MODELS: [&str; 8] = ["mlp", "lenet", "resblock", "gru", "encoder", "sequential", "mha", "gelu"];

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
            s.forward_tensors(&inputs).unwrap()[0].sum().call().unwrap().backward().unwrap();
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
        edited_zip(&ours, out, |name, bytes| {
            if name.ends_with(entry) {
                *bytes = String::from_utf8(bytes.clone()).unwrap().replacen(from, to, 1).into_bytes();
            }
        })
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

/// A copy of the zip archive `from` at `out` with `edit` applied to each entry (name, bytes).
pub(crate) fn edited_zip(from: &Path, out: &Path, edit: impl Fn(&str, &mut Vec<u8>)) {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(from).unwrap()).unwrap();
    let mut w = zip::ZipWriter::new(std::fs::File::create(out).unwrap());
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).unwrap();
        let name = f.name().unwrap().to_string();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut bytes).unwrap();
        edit(&name, &mut bytes);
        w.start_file(name, zip::write::SimpleFileOptions::default()).unwrap();
        std::io::Write::write_all(&mut w, &bytes).unwrap();
    }
    w.finish().unwrap();
}

/// A copy of `mlp.pt` at `out` with `edit` applied to each record (name relative to the
/// archive's folder, bytes).
fn edited_mlp(out: &Path, edit: impl Fn(&str, &mut Vec<u8>)) {
    edited_zip(&models().join("mlp.pt"), out, |name, bytes| edit(name.strip_prefix("mlp/").unwrap_or(name), bytes));
}

/// The root's code of `mlp.pt` with `forward(self, x)` being `return <expr>`.
fn forward_returning(code: &[u8], expr: &str) -> Vec<u8> {
    let code = String::from_utf8(code.to_vec()).unwrap();
    let body = code.find("-> Tensor:\n").expect("forward's signature") + "-> Tensor:\n".len();
    format!("{}    return {expr}\n", &code[..body]).into_bytes()
}

/// `mlp.pt` with the root's `forward` returning `expr` instead.
fn mlp_returning(out: &Path, expr: &str) {
    edited_mlp(out, |name, bytes| {
        if name == "code/__torch__.py" {
            *bytes = forward_returning(bytes, expr);
        }
    });
}

#[test]
fn deeply_nested_code_is_an_error_not_a_stack_overflow() {
    // Run on the test's own thread (2 MiB of stack): a recursion per level would abort.
    let dir = std::env::temp_dir().join(format!("jit-deep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        ("parens", format!("{}x{}", "(".repeat(10_000), ")".repeat(10_000))),
        ("attrs", format!("x{}", ".a".repeat(30_000))),
        ("calls", format!("{}x{}", "torch.relu(".repeat(10_000), ")".repeat(10_000))),
        ("subscripts", format!("x{}", "[0]".repeat(30_000))),
        ("negations", format!("{}x", "-".repeat(30_000))),
        ("lists", format!("{}x{}", "[".repeat(10_000), "]".repeat(10_000))),
    ];
    for (what, expr) in cases {
        let path = dir.join(format!("{what}.pt"));
        mlp_returning(&path, &expr);
        let err = jit::load(&path).unwrap_err().to_string();
        assert!(
            err.contains(&format!("{what}.pt"))
                && err.contains("code/__torch__.py")
                && err.contains("nests more than 200 levels deep"),
            "{what}: {err}"
        );
        assert!(err.len() < 1000, "{what}: the error quotes the whole line: {err}");
    }
    // Nesting within the limit still compiles (and the compiler does not overflow on it).
    let path = dir.join("relu66.pt");
    mlp_returning(&path, &format!("{}x{}", "torch.relu(".repeat(66), ")".repeat(66)));
    let m = jit::load(&path).unwrap();
    let out = m.forward_tensors(&[Tensor::from_vec(vec![-1.0f32, 2.0], &[1, 2]).unwrap()]).unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), [0.0, 2.0]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A protocol-2 pickle of `levels` nested `__torch__.MLP` modules, each the attribute `m` of
/// its parent; the innermost has no attributes.
fn nested_modules(levels: usize) -> Vec<u8> {
    let mut p = b"\x80\x02c__torch__\nMLP\nq\x00)\x81".to_vec(); // the root, memo 0 = the class
    for _ in 1..levels {
        p.extend_from_slice(b"}X\x01\x00\x00\x00mh\x00)\x81"); // {'m': MLP.__new__(MLP) ...
    }
    p.extend_from_slice(b"}b"); // the innermost's empty state
    for _ in 1..levels {
        p.extend_from_slice(b"sb"); // ... set as the parent's m, and the parent's state
    }
    p.push(b'.');
    p
}

#[test]
fn hostile_module_trees_are_errors() {
    let dir = std::env::temp_dir().join(format!("jit-tree-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let with_data = |name: &str, data: Vec<u8>| {
        let path = dir.join(name);
        edited_mlp(&path, |record, bytes| {
            if record == "data.pkl" {
                *bytes = data.clone();
            }
        });
        jit::load(&path).unwrap_err().to_string()
    };
    let err = with_data("deep.pt", nested_modules(100_000));
    assert!(err.contains("deep.pt") && err.contains("modules nested more than 64 deep"), "{err}");
    // 64 nested modules, each calling the next inside 60 nested calls: the compiler's
    // recursion reaches its limit (on the test's own thread) before the module depth does.
    let path = dir.join("calls.pt");
    let relus = format!("{}(self.m).forward(x, ){}", "torch.relu(".repeat(60), ")".repeat(60));
    edited_mlp(&path, |record, bytes| {
        if record == "data.pkl" {
            *bytes = nested_modules(64);
        } else if record == "code/__torch__.py" {
            *bytes = forward_returning(bytes, &relus);
        }
    });
    let err = jit::load(&path).unwrap_err().to_string();
    assert!(err.contains("calls.pt") && err.contains("expressions and module calls nest more than 400 deep"), "{err}");
    // A module that is its own attribute: m = MLP(); m.m = m.
    let err = with_data("cycle.pt", b"\x80\x02c__torch__\nMLP\n)\x81q\x00}X\x01\x00\x00\x00mh\x00sb.".to_vec());
    assert!(err.contains("cycle.pt") && err.contains("module \"m\" contains itself"), "{err}");
    // A global outside what TorchScript archives name: os.system in place of OrderedDict.
    let path = dir.join("system.pt");
    edited_mlp(&path, |record, bytes| {
        if record == "data.pkl" {
            let at = bytes.windows(24).position(|w| w == b"collections\nOrderedDict\n").unwrap();
            bytes.splice(at..at + 24, b"os\nsystem\n".iter().copied());
        }
    });
    let err = jit::load(&path).unwrap_err().to_string();
    assert!(
        err.contains("GLOBAL os.system is not an allowed global")
            && err.contains("mlp/data.pkl in ")
            && err.contains("system.pt"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn deeply_nested_graph_text_is_an_error_not_a_stack_overflow() {
    let lists = format!(
        "graph(%x : Tensor):\n  %l : int[] = prim::Constant[value={}1{}]()\n  return (%x)\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let types = format!("graph(%x : Tensor{}):\n  return (%x)\n", "[]".repeat(30_000));
    let optionals = format!("graph(%x : Tensor{}):\n  return (%x)\n", "?".repeat(30_000));
    let tuples = format!("graph(%x : {}Tensor{}):\n  return (%x)\n", "(".repeat(10_000), ")".repeat(10_000));
    let mut blocks = String::from("graph(%c : bool):\n");
    for i in 0..10_000 {
        blocks.push_str(&format!("  %o{i} : int = prim::If(%c)\n    block0():\n"));
    }
    for case in [lists, types, optionals, tuples, blocks] {
        let err = jit::parse(&case).unwrap_err().to_string();
        assert!(err.contains("at most 200 levels of nested blocks, lists and types"), "{err}");
    }
}

/// Damages single bytes of PyTorch archives (a fixed pseudo-random sequence): every load is a
/// module or an error naming the file, never a panic.
#[test]
fn damaged_archives_never_panic() {
    let dir = std::env::temp_dir().join(format!("jit-damaged-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15u64);
    let (mut ok, mut failed) = (0, 0);
    // 1,000 seeded corruptions: traced archives and scripted ones (control flow in `code/`).
    for name in ["mlp", "sequential", "mha", "s_greedy", "s_while_break"] {
        let good = std::fs::read(models().join(format!("{name}.pt"))).unwrap();
        let path = dir.join(format!("{name}.pt"));
        for _ in 0..200 {
            let mut bytes = good.clone();
            for _ in 0..1 + next() % 3 {
                let i = (next() % bytes.len() as u64) as usize;
                bytes[i] = next() as u8;
            }
            std::fs::write(&path, &bytes).unwrap();
            match jit::load(&path) {
                Ok(_) => ok += 1,
                Err(e) => {
                    assert!(e.to_string().contains(&format!("{name}.pt")), "{e}");
                    failed += 1;
                }
            }
        }
    }
    assert!(ok > 0 && failed > 0, "{ok} loaded, {failed} failed");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `|a - b| <= 1e-5 * |b| + 1e-6` element by element, NaN where PyTorch has NaN.
fn assert_close_nan(ours: &Tensor, theirs: &Tensor, what: &str) {
    assert_eq!(ours.sizes(), theirs.sizes(), "{what}");
    let a = ours.contiguous().call().unwrap().to_vec::<f32>().unwrap();
    let b = theirs.to_vec::<f32>().unwrap();
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let ok = if y.is_nan() { x.is_nan() } else { (x - y).abs() <= 1e-5 * y.abs() + 1e-6 };
        assert!(ok, "{what}[{i}]: {x} vs PyTorch's {y}");
    }
}

#[test]
fn native_multi_head_attention_matches_pytorch_with_masks_and_options() {
    let data = nn::serialize::load_file(models().join("mha_variants.safetensors")).unwrap();
    let t = |name: &str| data.tensors.get(name).unwrap_or_else(|| panic!("no {name}")).clone();
    let (x, w, b, pw, pb) = (t("x"), t("qkv_weight"), t("qkv_bias"), t("proj_weight"), t("proj_bias"));
    let mha = |mask: Option<&Tensor>, need_weights: bool, average: bool, mask_type: Option<i64>| {
        aten::ops::_native_multi_head_attention(
            &x,
            &x,
            &x,
            8,
            2,
            &w,
            &b,
            &pw,
            &pb,
            mask,
            need_weights,
            average,
            mask_type,
        )
        .unwrap()
    };
    let (out, weights) = mha(None, true, false, None);
    assert_close_nan(&out, &t("per_head.out"), "per-head out");
    assert_close_nan(&weights, &t("per_head.weights"), "per-head weights");
    // Batch entry 1 may attend to no key: NaN, as in PyTorch.
    let (out, weights) = mha(Some(&t("padding_mask")), true, true, Some(1));
    assert_close_nan(&out, &t("padding.out"), "padding out");
    assert_close_nan(&weights, &t("padding.weights"), "padding weights");
    let (out, weights) = mha(Some(&t("causal_mask")), true, true, Some(0));
    assert_close_nan(&out, &t("causal.out"), "causal out");
    assert_close_nan(&weights, &t("causal.weights"), "causal weights");
    let (out, weights) = mha(None, false, true, None);
    assert_close_nan(&out, &t("no_weights.out"), "out without weights");
    assert_eq!(weights.sizes(), [0]);
    // PyTorch's checks: one shape for query, key and value; heads dividing embed_dim.
    let short = x.narrow(1, 0, 3).unwrap();
    let err =
        aten::ops::_native_multi_head_attention(&x, &short, &short, 8, 2, &w, &b, &pw, &pb, None, true, true, None)
            .unwrap_err()
            .to_string();
    assert!(err.contains("expected `query`/`key`/`value` shapes to match"), "{err}");
    let err = aten::ops::_native_multi_head_attention(&x, &x, &x, 8, 3, &w, &b, &pw, &pb, None, true, true, None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("embed_dim (8) must be divisible by num_head (3)"), "{err}");
}

#[test]
fn native_multi_head_attention_of_empty_inputs_is_not_a_panic() {
    // embed_dim 0: three empty projections; a batch of 0 and a sequence of 0.
    let z = |s: &[i64]| aten::ops::zeros(s, None, None, None, None).unwrap();
    for (b, l, e) in [(1, 2, 0), (0, 3, 4), (2, 0, 4)] {
        let x = z(&[b, l, e]);
        let (w, bias, pw, pb) = (z(&[3 * e, e]), z(&[3 * e]), z(&[e, e]), z(&[e]));
        let r = aten::ops::_native_multi_head_attention(&x, &x, &x, e, 2, &w, &bias, &pw, &pb, None, true, true, None);
        if let Ok((out, weights)) = r {
            assert_eq!((out.sizes(), weights.sizes()), (&[b, l, e][..], &[b, l, l][..]));
        }
    }
}

/// `_transformer_encoder_layer_fwd` (what `nn.TransformerEncoderLayer` traced in eval mode
/// calls; PyTorch's values are checked by `modules.rs`) against a closed form: with zero
/// projection weights, every attention output is the output projection's bias and the
/// feed-forward block gives its second bias, so with `norm_first` the layer adds both biases to
/// its input whatever the norms and the activation do; a 2-D input is an error, as PyTorch's.
#[test]
fn transformer_encoder_layer_fast_path_adds_its_blocks_to_the_input() {
    let z = |s: &[i64]| aten::ops::zeros(s, None, None, None, None).unwrap();
    let ones = |s: &[i64]| aten::ops::ones(s, None, None, None, None).unwrap();
    let (e, ff) = (4, 6);
    let src = Tensor::from_vec((0..2 * 3 * e).map(|i| (i as f32 * 0.7).sin()).collect(), &[2, 3, e]).unwrap();
    let proj_bias = Tensor::from_vec(vec![0.5f32, -1.0, 2.0, 0.25], &[e]).unwrap();
    let ffn_bias_2 = Tensor::from_vec(vec![1.0f32, 0.0, -0.5, 3.0], &[e]).unwrap();
    let ffn_bias_1 = Tensor::from_vec((0..ff).map(|i| i as f32 - 2.0).collect(), &[ff]).unwrap();
    let run = |x: &Tensor, use_gelu: bool| {
        aten::ops::_transformer_encoder_layer_fwd(
            x,
            e,
            2,
            &z(&[3 * e, e]),
            &z(&[3 * e]),
            &z(&[e, e]),
            &proj_bias,
            use_gelu,
            true,
            1e-5,
            &ones(&[e]),
            &z(&[e]),
            &ones(&[e]),
            &z(&[e]),
            &z(&[ff, e]),
            &ffn_bias_1,
            &z(&[e, ff]),
            &ffn_bias_2,
            None,
            None,
        )
    };
    let (s, p, f) =
        (src.to_vec::<f32>().unwrap(), proj_bias.to_vec::<f32>().unwrap(), ffn_bias_2.to_vec::<f32>().unwrap());
    let want: Vec<f32> = s.iter().enumerate().map(|(i, v)| v + p[i % 4] + f[i % 4]).collect();
    for use_gelu in [false, true] {
        let out = run(&src, use_gelu).unwrap();
        assert_eq!(out.sizes(), [2, 3, e]);
        for (a, b) in out.to_vec::<f32>().unwrap().iter().zip(&want) {
            assert!((a - b).abs() <= 1e-6 * b.abs().max(1.0), "{a} vs {b}");
        }
    }
    let err = run(&src.reshape(&[6, e]).unwrap(), false).unwrap_err().to_string();
    assert!(err.contains("(batch, sequence, embed_dim)"), "{err}");
}
