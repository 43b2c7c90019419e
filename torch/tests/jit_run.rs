//! `jit-run` as a user runs it: a model traced and saved by PyTorch runs from the command line
//! and writes PyTorch's outputs; bad arguments and bad archives are messages and exit codes.

use std::path::{Path, PathBuf};
use std::process::Command;

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../jit/tests/jit/models")
}

fn jit_run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_jit-run")).args(args).output().unwrap()
}

#[test]
fn a_pytorch_model_runs_from_the_command_line() {
    let out_path = std::env::temp_dir().join(format!("jit-run-{}.safetensors", std::process::id()));
    let model = models().join("lenet.pt");
    let io = models().join("lenet.io.safetensors");
    let out =
        jit_run(&[model.to_str().unwrap(), "--input", io.to_str().unwrap(), "--output", out_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ours = torch::serialize::load_file(&out_path).unwrap().tensors;
    let theirs = torch::serialize::load_file(&io).unwrap().tensors;
    let (a, b) = (
        ours.get("output0").unwrap().to_vec::<f32>().unwrap(),
        theirs.get("output0").unwrap().to_vec::<f32>().unwrap(),
    );
    assert_eq!(a.len(), b.len());
    assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() <= 1e-5 * y.abs() + 1e-6));
    std::fs::remove_file(&out_path).unwrap();
    // Without --output the outputs are printed.
    let printed = jit_run(&[
        models().join("mlp.pt").to_str().unwrap(),
        "--input",
        models().join("mlp.io.safetensors").to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&printed.stdout).starts_with("output0: tensor([["));
}

#[test]
fn bad_arguments_and_archives_are_messages_with_exit_codes() {
    let usage = jit_run(&[]);
    assert_eq!(usage.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&usage.stderr).contains("usage: jit-run MODEL --input"));
    let missing = jit_run(&["no_such_model.pt", "--input", "x.safetensors"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no_such_model.pt"));
    // An input file whose tensors do not match the model's inputs.
    let io = models().join("lenet.io.safetensors");
    let wrong = jit_run(&[models().join("mlp.pt").to_str().unwrap(), "--input", io.to_str().unwrap()]);
    assert_eq!(wrong.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&wrong.stderr);
    assert!(msg.starts_with("jit-run: ") && msg.contains("cannot be multiplied"), "{msg}");
}

#[test]
fn scripted_models_take_numbers_and_missing_optionals_from_the_input_file() {
    let dir = std::env::temp_dir();
    // s_greedy: forward(h, start: int, max_len: int) -> (tokens, h), the ints as 0-dim tensors;
    // s_optional set b leaves out the Optional argument h.
    for (name, tag) in [("s_greedy", "a"), ("s_greedy", "b"), ("s_optional", "b"), ("s_tuple", "a")] {
        let io = torch::serialize::load_file(models().join(format!("{name}.io.safetensors"))).unwrap().tensors;
        let inputs: Vec<(String, torch::Tensor)> =
            (0..).map_while(|i| io.get(&format!("{tag}.input{i}")).map(|t| (format!("input{i}"), t.clone()))).collect();
        let in_path = dir.join(format!("jit-run-{}-{name}-{tag}-in.safetensors", std::process::id()));
        let out_path = dir.join(format!("jit-run-{}-{name}-{tag}-out.safetensors", std::process::id()));
        torch::serialize::save_file(inputs.iter().map(|(n, t)| (n.as_str(), t)), None, &in_path).unwrap();
        let model = models().join(format!("{name}.pt"));
        let args =
            [model.to_str().unwrap(), "--input", in_path.to_str().unwrap(), "--output", out_path.to_str().unwrap()];
        let out = jit_run(&[&args[..], &["--bench", "3", "--profile"]].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name} {tag}: {stderr}");
        assert!(stderr.contains("median of 3 runs"), "{stderr}");
        // The profile: a row per operator and per interpreter node kind, with counts.
        assert!(stderr.contains("# of Calls") && stderr.contains("aten::linear"), "{stderr}");
        if name == "s_greedy" {
            assert!(stderr.contains("prim::Loop") && stderr.contains("aten::gru_cell"), "{stderr}");
        }
        let ours = torch::serialize::load_file(&out_path).unwrap().tensors;
        for i in 0.. {
            let Some(theirs) = io.get(&format!("{tag}.output{i}")) else {
                assert!(ours.get(&format!("output{i}")).is_none(), "{name} {tag}: an extra output{i}");
                break;
            };
            let mine = ours.get(&format!("output{i}")).unwrap_or_else(|| panic!("{name} {tag}: no output{i}"));
            assert_eq!(mine.sizes(), theirs.sizes(), "{name} {tag} output{i}");
            let (a, b) = (mine.to_vec::<f64>().unwrap(), theirs.to_vec::<f64>().unwrap());
            assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() <= 1e-5 * y.abs() + 1e-6), "{name} {tag} output{i}");
        }
        std::fs::remove_file(&in_path).unwrap();
        std::fs::remove_file(&out_path).unwrap();
    }
}
