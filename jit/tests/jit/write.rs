//! `save_torchscript`: our modules written as TorchScript archives. Every model PyTorch traced
//! or scripted (`gen.py`, `gen_script.py`) loads, is written again by us, and our loader reads
//! that archive back to the same outputs; and (ignored without PyTorch) PyTorch's
//! `torch.jit.load` runs our archives to our outputs.

use aten::IValue;
use nn::Module;

use super::load::{assert_close, io, models, MODELS};
use super::script::{
    assert_matches, flatten, inputs, DICTS, LOOP_BREAK_CONTINUE, OPTIONAL_LIST, RANGES, SCRIPTED, WHILE_TRUE,
};

/// A fresh directory for one test (removed by the test when it passes).
fn scratch(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("jit-write-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn traced_archives_written_as_torchscript_load_back_to_pytorchs_outputs() {
    let dir = scratch("traced");
    for name in MODELS {
        let m = jit::load(models().join(format!("{name}.pt"))).unwrap();
        let path = dir.join(format!("{name}.pt"));
        m.save_torchscript(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let back = jit::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let keys = |s: &jit::ScriptModule| s.state_dict().keys().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(keys(&back), keys(&m), "{name}: state_dict names");
        let (inputs, expected) = io(name);
        let _g = autograd::no_grad();
        let out = back.forward_tensors(&inputs).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out.len(), expected.len(), "{name}");
        for (k, (o, e)) in out.iter().zip(&expected).enumerate() {
            assert_close(o, e, &format!("{name} output {k}"));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn scripted_archives_written_as_torchscript_keep_their_control_flow() {
    let dir = scratch("scripted");
    for name in SCRIPTED {
        let m = jit::load(models().join(format!("{name}.pt"))).unwrap();
        let path = dir.join(format!("{name}.pt"));
        m.save_torchscript(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let back = jit::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let io = nn::serialize::load_file(models().join(format!("{name}.io.safetensors"))).unwrap();
        for tag in ["a", "b"] {
            let out = back.forward_values(&inputs(&back, &io, tag)).unwrap_or_else(|e| panic!("{name} ({tag}): {e}"));
            let mut flat: Vec<IValue> = Vec::new();
            out.into_iter().for_each(|v| flatten(v, &mut flat));
            for (i, o) in flat.iter().enumerate() {
                let e = io.tensors.get(&format!("{tag}.output{i}")).unwrap();
                assert_matches(o, e, &format!("{name} ({tag}) output {i}"));
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// TorchScript functions with every kind of control flow our printer writes (`for` over a
/// range with `break` and `continue`, `while True` with a data-dependent exit, ranges with
/// negative steps, an Optional argument, a list built with append, early returns, a raise on a
/// path these inputs do not take, dicts and list elements changed), and input sets for them.
fn sources() -> Vec<(&'static str, &'static str, Vec<Vec<IValue>>)> {
    let t = |v: &[f32]| IValue::Tensor(aten::Tensor::from_slice(v));
    vec![
        (
            "loop_break_continue",
            LOOP_BREAK_CONTINUE,
            vec![vec![t(&[0.5]), IValue::Int(20)], vec![t(&[0.5]), IValue::Int(6)], vec![t(&[0.5]), IValue::Int(0)]],
        ),
        ("while_true", WHILE_TRUE, vec![vec![t(&[100.0])], vec![t(&[0.25])]]),
        (
            "ranges",
            RANGES,
            vec![
                vec![IValue::Int(0), IValue::Int(10), IValue::Int(3)],
                vec![IValue::Int(10), IValue::Int(0), IValue::Int(-4)],
                vec![IValue::Int(5), IValue::Int(5), IValue::Int(1)],
            ],
        ),
        (
            "optional_list_returns",
            OPTIONAL_LIST,
            vec![
                vec![t(&[1.0, 2.0]), t(&[1.0, 1.0]), IValue::Int(2)],
                vec![t(&[1.0, 2.0]), IValue::None, IValue::Int(3)],
                vec![t(&[1.0, 2.0]), IValue::None, IValue::Int(0)],
            ],
        ),
        (
            "dicts",
            DICTS,
            vec![
                vec![t(&[1.0, 2.0]), IValue::Int(5)],
                vec![t(&[0.5]), IValue::Int(1)],
                vec![t(&[3.0]), IValue::Int(0)],
            ],
        ),
    ]
}

/// The values, flattened, as text (tensors by their sizes and elements).
fn shown(vs: Vec<IValue>) -> Vec<String> {
    let mut flat = Vec::new();
    vs.into_iter().for_each(|v| flatten(v, &mut flat));
    flat.iter()
        .map(|v| match v {
            IValue::Tensor(t) => format!("{:?} {:?}", t.sizes(), t.to_vec::<f64>().unwrap()),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn scripted_sources_written_as_torchscript_run_as_they_did() {
    let dir = scratch("sources");
    for (name, src, sets) in sources() {
        let m = jit::script(src).unwrap_or_else(|e| panic!("{name}: {e}"));
        let path = dir.join(format!("{name}.pt"));
        m.save_torchscript(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let back = jit::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (k, inputs) in sets.iter().enumerate() {
            let a = m.forward_values(inputs).unwrap();
            let b = back.forward_values(inputs).unwrap_or_else(|e| panic!("{name} set {k}: {e}"));
            assert_eq!(shown(a), shown(b), "{name} set {k}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Writes `module`'s archive and, for each input set, the inputs and our outputs, for
/// `check_ours.py` (see its doc).
fn export_for_pytorch(dir: &std::path::Path, name: &str, module: &jit::ScriptModule, sets: &[(String, Vec<IValue>)]) {
    module.save_torchscript(dir.join(format!("{name}.ts.pt"))).unwrap_or_else(|e| panic!("{name}: {e}"));
    for (tag, inputs) in sets {
        let _g = autograd::no_grad();
        let mut io = nn::StateDict::new();
        for (i, v) in inputs.iter().enumerate() {
            match v {
                IValue::Tensor(t) => io.insert(format!("input{i}"), t.clone()),
                IValue::Int(n) => io.insert(format!("input{i}"), aten::Tensor::from_slice(&[*n]).reshape(&[]).unwrap()),
                IValue::Double(x) => {
                    io.insert(format!("input{i}"), aten::Tensor::from_slice(&[*x]).reshape(&[]).unwrap())
                }
                IValue::Bool(b) => {
                    io.insert(format!("input{i}"), aten::Tensor::from_slice(&[*b]).reshape(&[]).unwrap())
                }
                IValue::None => {}
                other => panic!("{name}: input {i} is a {}", other.kind()),
            }
        }
        let out = module.forward_values(inputs).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut flat = Vec::new();
        out.into_iter().for_each(|v| flatten(v, &mut flat));
        for (i, v) in flat.into_iter().enumerate() {
            let t = match v {
                IValue::Tensor(t) => t,
                IValue::Int(n) => aten::Tensor::from_slice(&[n]).reshape(&[]).unwrap(),
                other => panic!("{name}: output {i} is a {}", other.kind()),
            };
            io.insert(format!("output{i}"), t.contiguous().call().unwrap());
        }
        let case = if tag.is_empty() { name.to_string() } else { format!("{name}.{tag}") };
        nn::save_pt(&io, dir.join(format!("{case}.io.pt"))).unwrap();
    }
}

/// PyTorch runs what `save_torchscript` writes and reads what `save_pt` writes
/// (`check_ours.py`): our traces of the five models of `gen.py` (with PyTorch's weights), and
/// every archive PyTorch traced or scripted for these tests, loaded and written again by us,
/// on both input sets of the scripted ones; our state dicts of the five go into PyTorch's
/// architectures with `strict=True`. Needs Python with PyTorch (`PYTHON`, `python3` by
/// default); CI runs it with `-- --ignored pytorch_`.
#[test]
#[ignore = "needs Python with PyTorch: cargo test -p jit --test jit -- --ignored pytorch_"]
fn pytorch_runs_our_torchscript_and_reads_our_state_dicts() {
    let dir = scratch("for-pytorch");
    super::state_dict::check_all(Some(&dir));
    for name in MODELS {
        let m = jit::load(models().join(format!("{name}.pt"))).unwrap();
        let (inputs, _) = io(name);
        let sets = vec![(String::new(), inputs.into_iter().map(IValue::Tensor).collect())];
        export_for_pytorch(&dir, &format!("theirs_{name}"), &m, &sets);
    }
    for name in SCRIPTED {
        let m = jit::load(models().join(format!("{name}.pt"))).unwrap();
        let io = nn::serialize::load_file(models().join(format!("{name}.io.safetensors"))).unwrap();
        let sets: Vec<(String, Vec<IValue>)> = ["a", "b"].iter().map(|t| (t.to_string(), inputs(&m, &io, t))).collect();
        export_for_pytorch(&dir, &format!("theirs_{name}"), &m, &sets);
    }
    let n_sources: usize = sources().iter().map(|(_, _, sets)| sets.len()).sum();
    for (name, src, sets) in sources() {
        let m = jit::script(src).unwrap();
        let sets: Vec<(String, Vec<IValue>)> =
            sets.into_iter().enumerate().map(|(k, s)| (format!("s{k}"), s)).collect();
        export_for_pytorch(&dir, &format!("src_{name}"), &m, &sets);
    }
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jit/check_ours.py");
    let out = std::process::Command::new(python).arg(script).arg(&dir).output().expect("running Python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let cases = MODELS.len() + 2 * SCRIPTED.len() + 5 + n_sources;
    assert!(stdout.starts_with(&format!("ok {cases} cases, 5 state dicts")), "{stdout}");
    println!("{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_fused_graph_is_refused_and_nothing_is_written() {
    let dir = scratch("fused");
    let x = aten::Tensor::from_slice(&[0.5f32, -1.0, 2.0]);
    let trace = jit::trace_fn(std::slice::from_ref(&x), |xs| {
        Ok(vec![xs[0].exp().unwrap().mul(&xs[0]).unwrap().relu().unwrap()])
    })
    .unwrap();
    let mut m = jit::ScriptModule::new(trace.graph, Vec::new(), Vec::new()).unwrap();
    m.optimize_for_inference();
    assert!(m.graph().to_string().contains("prim::FusionGroup"), "{}", m.graph());
    let path = dir.join("fused.pt");
    let err = m.save_torchscript(&path).unwrap_err().to_string();
    assert!(err.contains("prim::FusionGroup") && err.contains("fused.pt"), "{err}");
    assert!(!path.exists());
    // A path in a directory that does not exist is an error too.
    let m = jit::script("def f(x: Tensor):\n    return x + 1\n").unwrap();
    let err = m.save_torchscript(dir.join("missing").join("f.pt")).unwrap_err().to_string();
    assert!(err.contains("does not exist"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
