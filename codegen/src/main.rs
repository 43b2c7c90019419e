//! The `codegen` binary: regenerates `aten/src/generated/` from `aten/native_functions.yaml`
//! (and the registration files of the backend crates, `kernels-cuda/src/generated/`) and
//! `autograd/src/generated/` from `autograd/derivatives.yaml`, and the Python bindings' table
//! (`python/src/generated/`), under the workspace root given as argument, writing only files
//! whose content changed; `--check` writes nothing and fails when any file differs, is missing, or is stale.
//!
//! It is a binary of its own (run by `cargo xtask codegen`) so that it works while the
//! generated code does not compile yet.

use std::path::Path;
use std::process::ExitCode;

use codegen::autograd::{generate_autograd, parse_derivatives};
use codegen::gen::{generate_aten, generate_backend, GeneratedFile, BACKEND_CRATES};
use codegen::yaml::parse_native_functions;

fn main() -> ExitCode {
    let mut check = false;
    let mut root = None;
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--check" => check = true,
            _ => root = Some(std::path::PathBuf::from(a)),
        }
    }
    let Some(root) = root else {
        eprintln!("usage: codegen [--check] WORKSPACE_ROOT");
        return ExitCode::FAILURE;
    };
    match run(&root, check) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the generator (or the check).
fn run(root: &Path, check: bool) -> Result<ExitCode, String> {
    let yaml_path = root.join("aten/native_functions.yaml");
    let text = std::fs::read_to_string(&yaml_path).map_err(|e| format!("{}: {e}", yaml_path.display()))?;
    let fns = parse_native_functions("aten/native_functions.yaml", &text).map_err(|e| e.to_string())?;
    let mut files = generate_aten(&fns).map_err(|e| e.to_string())?;
    for f in &mut files {
        f.contents = rustfmt(root, &f.contents).map_err(|e| format!("formatting {}: {e}", f.name))?;
    }
    let out_dir = root.join("aten/src/generated");
    let mut differing = sync(&out_dir, &files, check)?;
    let mut n_files = files.len();
    // Registrations of the backends whose kernels live in crates of their own.
    for (key, dir) in BACKEND_CRATES {
        let mut be_files = generate_backend(&fns, key).map_err(|e| e.to_string())?;
        for f in &mut be_files {
            f.contents = rustfmt(root, &f.contents).map_err(|e| format!("formatting {dir}/{}: {e}", f.name))?;
        }
        differing.extend(sync(&root.join(dir).join("src/generated"), &be_files, check)?);
        n_files += be_files.len();
    }

    // The Python front end's table of bindings (Note [Python bindings are data]).
    let mut py_files = codegen::front_python::generate_python(&fns);
    for f in &mut py_files {
        f.contents = rustfmt(root, &f.contents).map_err(|e| format!("formatting python/{}: {e}", f.name))?;
    }
    differing.extend(sync(&root.join("python/src/generated"), &py_files, check)?);
    n_files += py_files.len();

    let der_path = root.join("autograd/derivatives.yaml");
    let der_text = std::fs::read_to_string(&der_path).map_err(|e| format!("{}: {e}", der_path.display()))?;
    let ders = parse_derivatives("autograd/derivatives.yaml", &der_text).map_err(|e| e.to_string())?;
    let mut ag_files = generate_autograd(&fns, &ders).map_err(|e| e.to_string())?;
    for f in &mut ag_files {
        f.contents = rustfmt(root, &f.contents).map_err(|e| format!("formatting {}: {e}", f.name))?;
    }
    differing.extend(sync(&root.join("autograd/src/generated"), &ag_files, check)?);
    let n_files = n_files + ag_files.len();
    if check {
        if differing.is_empty() {
            println!("codegen: {n_files} files up to date");
            Ok(ExitCode::SUCCESS)
        } else {
            for d in &differing {
                println!("codegen --check: {d}");
            }
            println!("run `cargo xtask codegen` and commit the result");
            Ok(ExitCode::FAILURE)
        }
    } else {
        println!("codegen: {} operators, {} derivatives, {} files changed", fns.len(), ders.len(), differing.len());
        Ok(ExitCode::SUCCESS)
    }
}

/// Formats generated code with the workspace's `rustfmt.toml`, so the checked-in files are
/// what `cargo fmt` would make of them.
fn rustfmt(root: &Path, code: &str) -> Result<String, String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2021", "--emit", "stdout", "--config-path"])
        .arg(root.join("rustfmt.toml"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running rustfmt: {e}"))?;
    child.stdin.take().ok_or("rustfmt stdin")?.write_all(code.as_bytes()).map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}

/// Compares `files` with `dir`; unless `check_only`, writes the differing ones and removes stale
/// `.rs` files. Returns a description of each difference.
fn sync(dir: &Path, files: &[GeneratedFile], check_only: bool) -> Result<Vec<String>, String> {
    let mut diffs = Vec::new();
    if !check_only {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    for f in files {
        let p = dir.join(&f.name);
        match std::fs::read_to_string(&p) {
            Ok(old) if old == f.contents => continue,
            Ok(_) => diffs.push(format!("{} differs", p.display())),
            Err(_) => diffs.push(format!("{} is missing", p.display())),
        }
        if !check_only {
            std::fs::write(&p, &f.contents).map_err(|e| format!("{}: {e}", p.display()))?;
        }
    }
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.ends_with(".rs") && !files.iter().any(|f| f.name == name) {
                diffs.push(format!("{} is stale", e.path().display()));
                if !check_only {
                    std::fs::remove_file(e.path()).map_err(|err| format!("{}: {err}", e.path().display()))?;
                }
            }
        }
    }
    Ok(diffs)
}
