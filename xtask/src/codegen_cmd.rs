//! `cargo xtask codegen [--check]`: runs the `codegen` binary on this workspace. It is a separate
//! build (only the `codegen` crate) so it works while the generated code does not compile.

use std::process::{Command, ExitCode};

/// Runs the generator (or the check) and returns its exit status.
pub fn run(check: bool) -> Result<ExitCode, String> {
    let root = crate::workspace_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root).args(["run", "--quiet", "--release", "-p", "codegen", "--"]);
    if check {
        cmd.arg("--check");
    }
    cmd.arg(&root);
    let status = cmd.status().map_err(|e| format!("running the codegen binary: {e}"))?;
    Ok(if status.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
