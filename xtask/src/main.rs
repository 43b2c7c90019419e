//! Project automation: `cargo xtask codegen [--check] | parity DIR | parity-modules DIR | opinfo [DIR] | autocast [DIR] | bench [FILTER]`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
// Links the CUDA backend, whose registrar adds its kernels (and, with the `cuda` feature, its
// allocator) at the dispatcher's first use.
use kernels_cuda as _;

mod autocast;
mod bench;
mod codegen_cmd;
mod gpu_kit;
mod opinfo;
mod parity;
mod parity_modules;

#[derive(Parser)]
#[command(name = "xtask", about = "Project automation for the workspace")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Regenerates `*/src/generated/` from `native_functions.yaml` (and `derivatives.yaml`).
    Codegen {
        /// Fails, without writing, if any generated file differs from what is checked in.
        #[arg(long)]
        check: bool,
    },
    /// Runs the operator parity cases of DIR (cases.json + tensors.safetensors).
    Parity(parity::Args),
    /// Runs the module and training-trajectory parity cases of DIR (modules.json +
    /// modules.safetensors).
    ParityModules(parity_modules::Args),
    /// Runs PyTorch's OpInfo samples (tests/opinfo, written by its gen.py) and reports
    /// coverage per op_db entry.
    Opinfo(opinfo::Args),
    /// Checks autocast against PyTorch's table (tests/autocast, written by its gen.py):
    /// the cast policies and the dtypes of the OpInfo cases inside autocast regions.
    Autocast(autocast::Args),
    /// Runs the benchmark workloads and prints (and optionally records) a table.
    Bench(bench::Args),
    /// Builds the GPU check kit: the CUDA suite and the bench as binaries plus a run.sh, for a
    /// machine with a GPU and no Rust toolchain (Note [GPU check kit]).
    GpuKit(gpu_kit::Args),
}

/// The workspace root (the parent of this crate's directory), or the folder `XTASK_ROOT` names:
/// the GPU kit's, which holds the files xtask reads there (Note [GPU check kit]).
pub fn workspace_root() -> PathBuf {
    if let Some(root) = std::env::var_os("XTASK_ROOT") {
        return PathBuf::from(root);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

/// Runs this same command again from an xtask built with the `cuda` feature (the CUDA backend,
/// which needs the CUDA headers of kernels-cuda/setup-cuda.sh): what `parity --device cuda`
/// and `bench --device cuda` do when this build has no CUDA backend, so `cargo xtask ...
/// --device cuda` works as written.
pub fn rerun_with_cuda() -> Result<ExitCode, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("--device cuda: running xtask with its `cuda` feature (cargo xtask-cuda)");
    let status = std::process::Command::new(cargo)
        .args(["run", "--quiet", "-p", "xtask", "--features", "cuda", "--"])
        .args(std::env::args_os().skip(1))
        .current_dir(workspace_root())
        .status()
        .map_err(|e| format!("running xtask with the cuda feature: {e}"))?;
    Ok(if status.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Codegen { check } => codegen_cmd::run(check),
        Cmd::Parity(a) => parity::run(a),
        Cmd::ParityModules(a) => parity_modules::run(a),
        Cmd::Opinfo(a) => opinfo::run(a),
        Cmd::Autocast(a) => autocast::run(a),
        Cmd::Bench(a) => bench::run(a),
        Cmd::GpuKit(a) => gpu_kit::run(a),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
