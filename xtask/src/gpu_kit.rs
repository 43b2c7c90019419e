//! `cargo xtask gpu-kit`: the GPU check kit.
//!
//! Note [GPU check kit]: no machine that builds this project has a GPU, and a machine with one
//! may have no Rust toolchain and only minutes to spare. The kit is a folder built here that
//! runs there with nothing but a shell, an NVIDIA driver and (for the PyTorch column) a
//! `python3` that imports torch:
//! - `bin/*.xz`: the CUDA test binaries (`kernels`, `runtime`, `device_ops` and torch's `cuda`,
//!   the suite CI runs on the emulated device) and the xtask binary (for `bench`), stripped
//!   and xz-compressed (the folder stays under [`MAX_KIT_BYTES`], what a session can carry to
//!   a lent machine). Every binary embeds the fatbins (SASS for sm_80 and sm_90, PTX for
//!   compute_90), so the real driver loads the same kernels the emulator ran.
//! - `data/`: what the tests read (the MNIST digits of the training-equivalence tests, found
//!   through `TORCH_TEST_DATA`), and `bench/pytorch_reference.py` (found through
//!   `XTASK_ROOT`).
//! - `run.sh`: unpacks the binaries into a temporary folder and runs, on the real driver
//!   (`TORCH_CUDA_DRIVER=cuda`), the whole CUDA suite, then `bench --device cuda` (the C1, W2,
//!   W3, W4, W5 and W6 device rows, against PyTorch on the same GPU when it imports), and prints
//!   one summary: each step's result, test counts and seconds. `run.sh --quick` runs the suite
//!   without the two MNIST trainings and only the C1 row, on the emulated device unless
//!   `TORCH_CUDA_DRIVER` says otherwise: CI runs it on every change, so the kit never rots.
//! - `MANIFEST`: the commit, the profile, the binaries and their sizes.
//!
//! `--release` builds the binaries optimised (the kit to carry to a GPU: timings from the dev
//! profile measure unoptimised host code, and the bench says so). Without it the kit reuses
//! the dev profile's test builds, which CI has already compiled, so building it there costs
//! the compression only.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

/// The largest kit: what a session carries to a lent GPU machine (64 MiB) with room to spare.
pub const MAX_KIT_BYTES: u64 = 60 << 20;

/// The CUDA suite: the test targets `.ci/run` runs on the emulated device.
const TEST_TARGETS: [&str; 4] = ["kernels", "runtime", "device_ops", "cuda"];

/// Arguments of `cargo xtask gpu-kit`.
#[derive(clap::Args)]
pub struct Args {
    /// The folder to write (replaced if it exists).
    #[arg(long, default_value = "target/gpu-kit")]
    pub out: PathBuf,
    /// Build the binaries in the release profile (the kit to time on a GPU).
    #[arg(long)]
    pub release: bool,
}

/// Builds the kit (Note [GPU check kit]).
pub fn run(a: Args) -> Result<ExitCode, String> {
    let root = crate::workspace_root();
    let out = if a.out.is_absolute() { a.out.clone() } else { root.join(&a.out) };
    let profile = if a.release { "release" } else { "dev" };
    println!("gpu-kit: building the CUDA suite and xtask ({profile} profile)");
    let mut binaries = test_binaries(&root, a.release)?;
    binaries.push(("xtask".to_string(), xtask_binary(&root, a.release)?));

    if out.exists() {
        std::fs::remove_dir_all(&out).map_err(|e| format!("removing {}: {e}", out.display()))?;
    }
    for dir in ["bin", "data", "bench"] {
        std::fs::create_dir_all(out.join(dir)).map_err(|e| format!("creating {}: {e}", out.join(dir).display()))?;
    }
    let mut manifest = format!(
        "GPU check kit (Note [GPU check kit] in xtask/src/gpu_kit.rs)\ncommit: {}\nprofile: {profile}\n",
        git_commit(&root)
    );
    for (name, path) in &binaries {
        let packed = out.join("bin").join(format!("{name}.xz"));
        let size = pack(path, &packed)?;
        let line = format!("bin/{name}.xz: {size} bytes (from {})", path.display());
        println!("gpu-kit: {line}");
        manifest.push_str(&line);
        manifest.push('\n');
    }
    copy(&root.join("data/mnist_5k.csv.gz"), &out.join("data/mnist_5k.csv.gz"))?;
    copy(&root.join("bench/pytorch_reference.py"), &out.join("bench/pytorch_reference.py"))?;
    write(&out.join("MANIFEST"), &manifest)?;
    let script = out.join("run.sh");
    write(&script, RUN_SH)?;
    set_executable(&script)?;

    let total = folder_bytes(&out)?;
    println!("gpu-kit: {} ({:.1} MiB, at most {} MiB)", out.display(), total as f64 / 1048576.0, MAX_KIT_BYTES >> 20);
    if total > MAX_KIT_BYTES {
        return Err(format!(
            "the kit is {total} bytes, over the {MAX_KIT_BYTES}-byte limit a session can carry to a GPU machine"
        ));
    }
    println!("gpu-kit: run `{}/run.sh` on the GPU machine (`--quick` checks it on the emulated device)", out.display());
    Ok(ExitCode::SUCCESS)
}

/// Builds the suite's test binaries without running them and returns `(target, executable)`.
fn test_binaries(root: &Path, release: bool) -> Result<Vec<(String, PathBuf)>, String> {
    let mut cmd = cargo(root);
    // The feature set of `.ci/run`'s CUDA step, so CI's kit reuses that step's build.
    cmd.args([
        "test",
        "--workspace",
        "--features",
        "torch/cuda",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ]);
    for t in TEST_TARGETS {
        cmd.args(["--test", t]);
    }
    if release {
        cmd.arg("--release");
    }
    let output = cmd.stderr(Stdio::inherit()).output().map_err(|e| format!("running cargo test --no-run: {e}"))?;
    if !output.status.success() {
        return Err("building the CUDA test binaries failed".into());
    }
    let mut found = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let (Some(exe), Some(name)) = (msg["executable"].as_str(), msg["target"]["name"].as_str()) else { continue };
        let is_test = msg["target"]["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "test"));
        if is_test && TEST_TARGETS.contains(&name) {
            found.push((name.to_string(), PathBuf::from(exe)));
        }
    }
    for t in TEST_TARGETS {
        if !found.iter().any(|(n, _)| n == t) {
            return Err(format!("cargo test --no-run built no `{t}` test binary"));
        }
    }
    Ok(found)
}

/// Builds xtask with the CUDA backend (`.ci/run`'s `xtask_cuda` build) and returns its path.
fn xtask_binary(root: &Path, release: bool) -> Result<PathBuf, String> {
    let mut cmd = cargo(root);
    cmd.args(["build", "--quiet", "--workspace", "--bin", "xtask", "--features", "torch/cuda,xtask/cuda"]);
    if release {
        cmd.arg("--release");
    }
    let status = cmd.status().map_err(|e| format!("running cargo build: {e}"))?;
    if !status.success() {
        return Err("building xtask with the cuda feature failed".into());
    }
    let dir = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    Ok(dir.join(if release { "release" } else { "debug" }).join("xtask"))
}

fn cargo(root: &Path) -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root);
    cmd
}

/// Writes `src` stripped of symbols and xz-compressed to `dst`; returns `dst`'s size.
fn pack(src: &Path, dst: &Path) -> Result<u64, String> {
    let tmp = dst.with_extension("tmp");
    copy(src, &tmp)?;
    let stripped = Command::new("strip").arg("--strip-all").arg(&tmp).status();
    if !stripped.is_ok_and(|s| s.success()) {
        // Symbols only cost room; the kit checks its size below.
        eprintln!("gpu-kit: warning: could not strip {} (binutils' strip missing?)", src.display());
    }
    let file = std::fs::File::create(dst).map_err(|e| format!("creating {}: {e}", dst.display()))?;
    let status = Command::new("xz")
        .args(["-T0", "-6", "-c"])
        .arg(&tmp)
        .stdout(file)
        .status()
        .map_err(|e| format!("running xz (apt install xz-utils): {e}"))?;
    std::fs::remove_file(&tmp).map_err(|e| format!("removing {}: {e}", tmp.display()))?;
    if !status.success() {
        return Err(format!("xz failed on {}", src.display()));
    }
    Ok(std::fs::metadata(dst).map_err(|e| format!("{}: {e}", dst.display()))?.len())
}

fn copy(src: &Path, dst: &Path) -> Result<(), String> {
    std::fs::copy(src, dst).map(|_| ()).map_err(|e| format!("copying {} to {}: {e}", src.display(), dst.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

fn set_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("making {} executable: {e}", path.display()))
}

fn folder_bytes(dir: &Path) -> Result<u64, String> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))? {
        let entry = entry.map_err(|e| format!("reading {}: {e}", dir.display()))?;
        let meta = entry.metadata().map_err(|e| format!("{}: {e}", entry.path().display()))?;
        total += if meta.is_dir() { folder_bytes(&entry.path())? } else { meta.len() };
    }
    Ok(total)
}

fn git_commit(root: &Path) -> String {
    let out = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(root).output();
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .current_dir(root)
        .output()
        .is_ok_and(|o| !o.stdout.is_empty());
    match out {
        Ok(o) if o.status.success() => {
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout).trim(),
                if dirty { " (with uncommitted changes)" } else { "" }
            )
        }
        _ => "unknown (not a git checkout)".into(),
    }
}

/// The kit's entry point (Note [GPU check kit]).
const RUN_SH: &str = include_str!("gpu_kit_run.sh");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_sh_parses_and_knows_the_suite() {
        let dir = std::env::temp_dir().join(format!("gpu-kit-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("run.sh");
        write(&script, RUN_SH).unwrap();
        let check = Command::new("bash").arg("-n").arg(&script).output().unwrap();
        assert!(check.status.success(), "bash -n: {}", String::from_utf8_lossy(&check.stderr));
        // An unknown argument is refused before anything runs.
        let bad = Command::new("bash").arg(&script).arg("--fast").output().unwrap();
        assert_eq!(bad.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown argument --fast"));
        std::fs::remove_dir_all(&dir).unwrap();
        // The script runs every binary the kit packs.
        for t in TEST_TARGETS {
            assert!(RUN_SH.contains(&format!(" {t} ")) || RUN_SH.contains(&format!(" {t};")), "{t} not run");
        }
    }
}
