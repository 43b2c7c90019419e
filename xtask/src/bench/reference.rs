//! The PyTorch column: runs `bench/pytorch_reference.py` (the same workloads, shapes and timing
//! method, see Note [Bench timing method]) when `python3` can import `torch`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;

/// A Python with PyTorch, found on `PATH`.
pub struct Reference {
    /// `torch.__version__`.
    pub torch_version: String,
    script: PathBuf,
}

/// One line of the script's output.
#[derive(Debug, Deserialize, PartialEq)]
pub struct RefLine {
    /// Workload id.
    pub workload: String,
    /// Thread count (`torch.set_num_threads`).
    pub threads: usize,
    /// Median seconds per iteration.
    pub median_s: f64,
}

/// Parses the script's JSON lines; anything else (blank lines, warnings) is skipped.
pub fn parse_lines(out: &str) -> Vec<RefLine> {
    out.lines().filter_map(|l| serde_json::from_str::<RefLine>(l.trim()).ok()).collect()
}

impl Reference {
    /// `Some` if `python3 -c "import torch"` works and the script exists.
    pub fn detect(root: &Path) -> Option<Reference> {
        let script = root.join("bench").join("pytorch_reference.py");
        if !script.is_file() {
            return None;
        }
        let out = Command::new("python3")
            .args(["-c", "import torch; print(torch.__version__)"])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let torch_version = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Some(Reference { torch_version, script })
    }

    /// Runs the script for `ids` on `threads` threads and returns the median seconds per
    /// workload id. The script's stderr goes to ours.
    pub fn run(
        &self,
        threads: usize,
        filter: Option<&str>,
        ids: &[&str],
        budget_s: f64,
    ) -> Result<HashMap<String, f64>, String> {
        let mut cmd = Command::new("python3");
        cmd.arg(&self.script)
            .args(["--threads", &threads.to_string()])
            .args(["--only", &ids.join(",")])
            .args(["--time", &budget_s.to_string()]);
        if let Some(f) = filter {
            cmd.args(["--filter", f]);
        }
        let out = cmd
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("cannot run python3 {}: {e}", self.script.display()))?;
        if !out.status.success() {
            return Err(format!("{} exited with {}", self.script.display(), out.status));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(parse_lines(&text).into_iter().filter(|l| l.threads == threads).map(|l| (l.workload, l.median_s)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_json_lines_and_skips_noise() {
        let out = "warning: something\n\
                   {\"workload\": \"W1.add1\", \"threads\": 2, \"median_s\": 1.1e-06}\n\
                   \n\
                   {\"workload\": \"W2.add_1M\", \"threads\": 2, \"median_s\": 0.000232}\n";
        let v = parse_lines(out);
        assert_eq!(
            v,
            vec![
                RefLine { workload: "W1.add1".into(), threads: 2, median_s: 1.1e-6 },
                RefLine { workload: "W2.add_1M".into(), threads: 2, median_s: 0.000232 },
            ]
        );
    }
}
