//! Every module `torch.nn` ships, traced and scripted by PyTorch (`gen_modules.py`, run here
//! with the PyTorch installed), loads and runs to PyTorch's outputs (and, in train mode, to its
//! buffers after the call). The cases that do not yet are listed in `modules_failing.txt`, a
//! ratchet: a listed case that passes, or a failing case not listed, fails the test. Needs
//! Python with PyTorch (`PYTHON`, `python3` by default); CI runs it with `-- --ignored pytorch_`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use aten::{IValue, Tensor};
use jit::JitType;
use nn::Module;

use super::script::flatten;

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jit")
}

/// Compares one output; `None` when it matches. A value that cannot be read is a mismatch.
fn mismatch(ours: &IValue, theirs: &Tensor) -> Option<String> {
    let scalar = |t: c10::Result<Tensor>| t.and_then(|t| t.reshape(&[]));
    let t = match ours {
        IValue::Tensor(t) => Ok(t.clone()),
        IValue::Int(i) => scalar(Ok(Tensor::from_slice(&[*i]))),
        IValue::Double(x) => scalar(Ok(Tensor::from_slice(&[*x]))),
        IValue::Bool(b) => scalar(Ok(Tensor::from_slice(&[*b]))),
        other => return Some(format!("a {} where PyTorch gave a tensor", other.kind())),
    };
    let t = match t {
        Ok(t) => t,
        Err(e) => return Some(format!("our value: {e}")),
    };
    if t.sizes() != theirs.sizes() {
        return Some(format!("sizes {:?}, PyTorch's {:?}", t.sizes(), theirs.sizes()));
    }
    if theirs.dtype().is_floating_point() != t.dtype().is_floating_point() {
        return Some(format!("dtype {:?}, PyTorch's {:?}", t.dtype(), theirs.dtype()));
    }
    let values = |t: &Tensor| aten::ops::to(t, c10::ScalarType::F64, false, true, None)?.to_vec::<f64>();
    let (a, b) = match (values(&t), values(theirs)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return Some(format!("reading the values: {e}")),
    };
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let close = (x - y).abs() <= 1e-5 * y.abs() + 1e-5 || (x.is_nan() && y.is_nan());
        if !close {
            return Some(format!("element {i}: {x} vs PyTorch's {y}"));
        }
    }
    None
}

/// Loads and runs one archive against its io file; `Err` says why it does not match.
fn check(archive: &Path, io: &nn::StateDict, train: bool) -> Result<(), String> {
    let mut m = jit::load(archive).map_err(|e| format!("load: {e}"))?;
    m.train(train);
    let g = m.graph();
    let mut inputs = Vec::new();
    for i in 0..m.num_inputs() {
        let ty = g.value_type(g.inputs()[i]).clone();
        inputs.push(match (io.get(&format!("input{i}")), ty) {
            // PyTorch's call left it out: the forward's default (filled in by forward_values).
            (None, _) if m.input_defaults()[i].is_some() => break,
            (None, JitType::Optional(_)) => IValue::None,
            (None, ty) => return Err(format!("input {i} ({ty}) is not in the io file")),
            (Some(t), JitType::Int) => IValue::Int(t.item_scalar().map_err(|e| e.to_string())?.to_f64() as i64),
            (Some(t), _) => IValue::Tensor(t.clone()),
        });
    }
    let out = {
        let _g = autograd::no_grad();
        m.forward_values(&inputs).map_err(|e| format!("run: {e}"))?
    };
    let mut flat = Vec::new();
    out.into_iter().for_each(|v| flatten(v, &mut flat));
    flat.retain(|v| !matches!(v, IValue::None));
    let expected: Vec<Tensor> = (0..).map_while(|i| io.get(&format!("output{i}")).cloned()).collect();
    if flat.len() != expected.len() {
        return Err(format!("{} outputs, PyTorch's {}", flat.len(), expected.len()));
    }
    for (k, (o, e)) in flat.iter().zip(&expected).enumerate() {
        if let Some(why) = mismatch(o, e) {
            return Err(format!("output {k}: {why}"));
        }
    }
    for (name, b) in m.named_buffers() {
        if let Some(e) = io.get(&format!("buffer.{name}")) {
            if let Some(why) = mismatch(&IValue::Tensor(b), e) {
                return Err(format!("buffer {name} after the call: {why}"));
            }
        }
    }
    Ok(())
}

#[test]
#[ignore = "needs Python with PyTorch: cargo test -p jit --test jit -- --ignored pytorch_"]
fn pytorch_traced_and_scripted_nn_modules_load_and_match() {
    let dir = std::env::temp_dir().join(format!("jit-nn-modules-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let gen = std::process::Command::new(python).arg(here().join("gen_modules.py")).arg(&dir).output().unwrap();
    assert!(gen.status.success(), "{}", String::from_utf8_lossy(&gen.stderr));
    println!("{}", String::from_utf8_lossy(&gen.stdout).trim());
    let mut failing: BTreeMap<String, String> = BTreeMap::new();
    let mut passed = 0;
    let mut io_files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".io.pt"))
        .collect();
    io_files.sort();
    for io_path in io_files {
        let case = io_path.file_name().unwrap().to_string_lossy().trim_end_matches(".io.pt").to_string();
        let io = nn::load_pt(&io_path).unwrap();
        let train = case.ends_with(".train");
        for how in ["traced", "scripted"] {
            let archive = dir.join(format!("{case}.{how}.pt"));
            if !archive.exists() {
                continue; // PyTorch could not write it (pytorch_failed.txt)
            }
            match check(&archive, &io, train) {
                Ok(()) => passed += 1,
                Err(why) => {
                    failing.insert(format!("{case}.{how}"), why);
                }
            }
        }
    }
    let listed: Vec<String> = std::fs::read_to_string(here().join("modules_failing.txt"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    let new: Vec<String> =
        failing.iter().filter(|(c, _)| !listed.contains(c)).map(|(c, w)| format!("{c}: {w}")).collect();
    let fixed: Vec<&String> = listed.iter().filter(|c| !failing.contains_key(*c)).collect();
    println!("{passed} archives load and match; {} do not:", failing.len());
    for (c, w) in &failing {
        println!("  {c}: {w}");
    }
    assert!(new.is_empty(), "failing and not in modules_failing.txt:\n{}", new.join("\n"));
    assert!(fixed.is_empty(), "passing now, remove from modules_failing.txt: {fixed:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
