//! The main job (`examples/mnist.rs`) as a user runs it: bad arguments and unwritable checkpoint
//! paths fail before any data is read or any training is done, errors read as messages (not
//! Debug dumps), no temporary file is left behind, and a resumed run reports what it really did.
//!
//! `cargo test` builds the workspace's examples before it runs any test, so the binary is found
//! beside this test's own executable (`target/<profile>/examples/mnist`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>");
    let bin = profile_dir.join("examples").join(format!("mnist{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.is_file(), "{} is missing: run the tests with `cargo test`, which builds the examples", bin.display());
    bin
}

fn run(args: &[&str]) -> (Output, String, String) {
    let out = Command::new(example_binary()).args(args).output().expect("the example starts");
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    (out, stdout, stderr)
}

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "torch-main-job-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self) -> &Path {
        &self.0
    }
    fn arg(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }
    /// The names of the files in the directory, sorted.
    fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes a tiny MNIST-format dataset (IDX files): `n` 28x28 images per split, labels `i % 10`.
fn tiny_mnist(dir: &Path, n: u32) {
    let idx = |dims: &[u32], data: &[u8]| {
        let mut v = vec![0, 0, 0x08, dims.len() as u8];
        for d in dims {
            v.extend(d.to_be_bytes());
        }
        v.extend_from_slice(data);
        v
    };
    let pixels: Vec<u8> = (0..n as usize * 784).map(|k| ((k / 784) * 37 + k % 784) as u8).collect();
    let labels: Vec<u8> = (0..n).map(|i| (i % 10) as u8).collect();
    for split in ["train", "t10k"] {
        std::fs::write(dir.join(format!("{split}-images-idx3-ubyte")), idx(&[n, 28, 28], &pixels)).unwrap();
        std::fs::write(dir.join(format!("{split}-labels-idx1-ubyte")), idx(&[n], &labels)).unwrap();
    }
}

fn assert_failed_before_training(out: &Output, stdout: &str, stderr: &str) {
    assert!(!out.status.success(), "the run should fail\nstdout: {stdout}\nstderr: {stderr}");
    assert!(stderr.starts_with("error: "), "errors are reported as messages: {stderr}");
    assert!(!stderr.contains(" { op:") && !stderr.contains("InvalidArgument"), "no Debug dump: {stderr}");
    // The first line of a run that got as far as loading data starts with "data:".
    assert!(!stdout.contains("data:") && !stdout.contains("epoch"), "nothing was loaded or trained: {stdout}");
}

#[test]
fn an_unwritable_checkpoint_path_fails_before_training() {
    let (out, stdout, stderr) = run(&["--checkpoint", "/nonexistent/dir/x.safetensors"]);
    assert_failed_before_training(&out, &stdout, &stderr);
    assert!(
        stderr.contains("/nonexistent/dir/x.safetensors: the directory /nonexistent/dir does not exist"),
        "{stderr}"
    );

    let dir = TempDir::new("dir-as-checkpoint");
    let (out, stdout, stderr) = run(&["--checkpoint", dir.path().to_str().unwrap()]);
    assert_failed_before_training(&out, &stdout, &stderr);
    assert!(stderr.contains("is a directory, not a file name"), "{stderr}");
    assert!(dir.files().is_empty(), "no stray files: {:?}", dir.files());
}

#[test]
fn bad_arguments_are_reported_as_themselves() {
    let dir = TempDir::new("args");
    let ck = dir.arg("ck.safetensors");
    for (args, want) in [
        (vec!["--epochs", "0"], "--epochs must be at least 1, got 0"),
        (vec!["--batch-size", "0"], "--batch-size must be at least 1, got 0"),
        (vec!["--lr=-1"], "--lr must be a positive number, got -1"),
        (vec!["--threads", "0"], "--threads must be at least 1, got 0"),
        (
            vec!["--resume", "/nonexistent/ck.safetensors"],
            "--resume /nonexistent/ck.safetensors: no such checkpoint file",
        ),
        (vec!["--data", "/nonexistent/mnist"], "--data /nonexistent/mnist: no such directory"),
    ] {
        let mut all = args.clone();
        all.extend(["--checkpoint", &ck]);
        let (out, stdout, stderr) = run(&all);
        assert_failed_before_training(&out, &stdout, &stderr);
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!stderr.contains("OneCycleLR"), "{args:?}: {stderr}");
    }
    assert!(dir.files().is_empty(), "no stray files: {:?}", dir.files());
}

#[test]
fn a_resumed_run_reports_what_it_did() {
    let dir = TempDir::new("resume");
    tiny_mnist(dir.path(), 32);
    let (data, ck) = (dir.path().to_str().unwrap().to_string(), dir.arg("ck.safetensors"));
    let common = ["--data", &data, "--batch-size", "16", "--threads", "1", "--checkpoint", &ck];

    let mut args = common.to_vec();
    args.extend(["--epochs", "1"]);
    let (out, stdout, stderr) = run(&args);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains(&format!("checkpoint saved to {ck}")), "{stdout}");
    let saved = std::fs::read(&ck).unwrap();
    let before: Vec<String> = dir.files();
    assert!(before.iter().all(|f| !f.ends_with(".partial")), "no stray files: {before:?}");

    // Resuming a checkpoint that already covers every epoch trains nothing and saves nothing.
    args.extend(["--resume", &ck]);
    let (out, stdout, stderr) = run(&args);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("resumed from") && stdout.contains("after epoch 1"), "{stdout}");
    assert!(stdout.contains("nothing to train"), "{stdout}");
    assert!(stdout.contains("no checkpoint written"), "{stdout}");
    assert!(!stdout.contains("checkpoint saved"), "{stdout}");
    assert_eq!(std::fs::read(&ck).unwrap(), saved, "the checkpoint is untouched");
    assert_eq!(dir.files(), before);

    // One more epoch continues from the checkpoint and replaces it.
    let mut more = common.to_vec();
    more.extend(["--epochs", "2", "--resume", &ck]);
    let (out, stdout, stderr) = run(&more);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("epoch 2:") && !stdout.contains("epoch 1:"), "{stdout}");
    assert!(stdout.contains("1 trained in this run") && stdout.contains("checkpoint saved"), "{stdout}");
    assert_ne!(std::fs::read(&ck).unwrap(), saved);
    assert_eq!(dir.files(), before);

    // Asking for fewer epochs than the checkpoint has is not an error either: nothing to do.
    let mut fewer = common.to_vec();
    fewer.extend(["--epochs", "1", "--resume", &ck]);
    let (out, stdout, _) = run(&fewer);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("covers 2 of 1 epochs: nothing to train"), "{stdout}");
    assert!(stdout.contains("no checkpoint written"), "{stdout}");
}

/// `--amp` trains in bfloat16 autocast regions with a GradScaler: the run completes with a
/// finite loss and saves its checkpoint.
#[test]
fn an_amp_run_trains_and_saves() {
    let dir = TempDir::new("amp");
    tiny_mnist(dir.path(), 32);
    let (data, ck) = (dir.path().to_str().unwrap().to_string(), dir.arg("ck.safetensors"));
    let args = ["--data", &data, "--batch-size", "16", "--threads", "1", "--checkpoint", &ck, "--epochs", "1", "--amp"];
    let (out, stdout, stderr) = run(&args);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    let line = stdout.lines().find(|l| l.starts_with("epoch 1: train loss")).expect("an epoch line");
    let loss: f64 = line["epoch 1: train loss ".len()..].split(',').next().unwrap().trim().parse().unwrap();
    assert!(loss.is_finite() && loss > 0.0, "{line}");
    assert!(stdout.contains(&format!("checkpoint saved to {ck}")), "{stdout}");
}

// ---- length against PyTorch -------------------------------------------------------------------

/// The text between `pytorch-comparison: begin` and `end` marker lines (comment lines in either
/// language), all regions concatenated.
fn comparison_regions(text: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in text.lines() {
        let t = line.trim();
        if t.ends_with("pytorch-comparison: begin") {
            assert!(!inside, "nested begin marker");
            inside = true;
        } else if t.ends_with("pytorch-comparison: end") {
            assert!(inside, "end marker without begin");
            inside = false;
        } else if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(!inside, "unclosed region");
    out
}

const MULTI_PUNCT: &[&str] = &[
    "..=", "**=", "//=", "<<=", ">>=", "::", "->", "=>", "..", "==", "!=", "<=", ">=", "&&", "||", "+=", "-=", "*=",
    "/=", "%=", "**", "//", "<<", ">>",
];

/// Lexical tokens of `src`, comments excluded: identifiers and keywords, numbers, string
/// literals, lifetimes, and operators (multi-character ones such as `::`, `->`, `**` as one).
/// `python` adds Python's own structure tokens: one NEWLINE per logical line and an INDENT or
/// DEDENT per change of indentation (what `;` and braces are in Rust), as `tokenize` does.
fn count_tokens(src: &str, python: bool) -> usize {
    let mut n = 0;
    let mut depth = 0i32; // bracket nesting: no NEWLINE inside brackets
    let mut indents = vec![0usize];
    for line in src.lines() {
        let code = line.trim_start();
        if code.is_empty() || code.starts_with('#') && python || code.starts_with("//") && !python {
            continue;
        }
        if python && depth == 0 {
            let ind = line.len() - code.len();
            if ind > *indents.last().unwrap() {
                indents.push(ind);
                n += 1;
            }
            while ind < *indents.last().unwrap() {
                indents.pop();
                n += 1;
            }
        }
        let b = code.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i] as char;
            if c.is_whitespace() {
                i += 1;
            } else if python && c == '#' || !python && code[i..].starts_with("//") {
                break;
            } else if c.is_ascii_alphabetic() || c == '_' {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                // A Python string prefix (f"...") belongs to the string.
                if python && i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
                    continue;
                }
                n += 1;
            } else if c.is_ascii_digit() {
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric()
                        || b[i] == b'_'
                        || b[i] == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
                {
                    i += 1;
                }
                n += 1;
            } else if c == '"' || c == '\'' && python {
                i += 1;
                while i < b.len() && b[i] as char != c {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                n += 1;
            } else if c == '\'' {
                // A lifetime or a char literal.
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                if i < b.len() && b[i] == b'\'' {
                    i += 1;
                }
                n += 1;
            } else {
                let p = MULTI_PUNCT.iter().find(|p| code[i..].starts_with(**p)).map_or(1, |p| p.len());
                match c {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => depth -= 1,
                    _ => {}
                }
                i += p;
                n += 1;
            }
        }
        if python && depth == 0 {
            n += 1; // NEWLINE
        }
    }
    n + if python { indents.len() - 1 } else { 0 }
}

#[test]
fn token_counter_counts_what_it_says() {
    assert_eq!(count_tokens("let x = a::b(&c)?; // note", false), 12);
    assert_eq!(count_tokens("fn f<'a>(x: &'a str) -> &'a str { \"s\" }", false), 19);
    assert_eq!(count_tokens("x = f(a ** 2)  # note\n", true), 9);
    assert_eq!(count_tokens("def f(x):\n    return x\n", true), 12);
    assert_eq!(count_tokens("y = g(1,\n      2)\n", true), 9);
}

/// The main job's model, training loop and evaluation against the same PyTorch code
/// (`examples/mnist_pytorch.py`), in tokens. Issue 36 asks for at most 1.3x: the front end's
/// builders took it from 1.55 (every default spelled out) to 1.46, and `nn::module!` (fields
/// declared with their constructors, as `__init__` does), optimizers built from a learning rate
/// and `Generator::default()` to 1.29. What is left is Rust itself (`?`, `&`, `let`, the
/// signatures' types) and the builders' `.call()` (docs/src/from-pytorch.md, "Length against
/// PyTorch").
const MAX_RATIO: f64 = 1.3;

#[test]
fn main_job_length_against_pytorch() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let rust = comparison_regions(&std::fs::read_to_string(dir.join("mnist.rs")).unwrap());
    let py = comparison_regions(&std::fs::read_to_string(dir.join("mnist_pytorch.py")).unwrap());
    let (r, p) = (count_tokens(&rust, false), count_tokens(&py, true));
    let ratio = r as f64 / p as f64;
    println!("main job: {r} Rust tokens, {p} PyTorch tokens, ratio {ratio:.3}");
    assert!(p > 200 && r > 200, "the regions are missing: {r} and {p} tokens");
    assert!(ratio <= MAX_RATIO, "the Rust main job is {ratio:.3}x the PyTorch tokens ({r} vs {p}), over {MAX_RATIO}");
}
