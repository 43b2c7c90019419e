//! The PyTorch column: runs `bench/pytorch_reference.py` (the same workloads, shapes and timing
//! method, see Note [Bench timing method]) when `python3` can import `torch`, as one process
//! that answers a request per workload (Note [Interleaved reference] in `bench.rs`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde::Deserialize;

/// A Python with PyTorch, found on `PATH` (or, for the ours side of the P rows, a Python with
/// this repository's `torchrs` package: Note [Python rows] in `bench.rs`).
pub struct Reference {
    /// `torch.__version__` (or `torchrs.__version__`).
    pub torch_version: String,
    script: PathBuf,
    python: String,
    /// The module the script imports as `torch` (BENCH_TORCH_MODULE), when not `torch`.
    module: Option<&'static str>,
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

/// The script's first line in `--serve` mode, once `import torch` is done.
#[derive(Debug, Deserialize, PartialEq)]
struct Ready {
    ready: String,
}

/// A failed request, as the script reports it.
#[derive(Debug, Deserialize, PartialEq)]
struct RefError {
    error: String,
}

/// Parses one answer of the script's `--serve` mode: the median of `id` on `threads` threads.
fn parse_answer(line: &str, id: &str, threads: usize) -> Result<f64, String> {
    if let Ok(l) = serde_json::from_str::<RefLine>(line.trim()) {
        return if l.workload == id && l.threads == threads {
            Ok(l.median_s)
        } else {
            Err(format!("asked for {id} on {threads} threads, got {} on {}", l.workload, l.threads))
        };
    }
    match serde_json::from_str::<RefError>(line.trim()) {
        Ok(e) => Err(e.error),
        Err(_) => Err(format!("unexpected answer {:?}", line.trim())),
    }
}

/// A running `pytorch_reference.py --serve`; dropping it ends the process.
pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Reference {
    /// `Some` if `python3 -c "import torch"` works and the script exists.
    pub fn detect(root: &Path) -> Option<Reference> {
        Self::detect_module(root, "python3".into(), None)
    }

    /// `Some` if the Python in `TORCHRS_PYTHON` (default `python3`) can import `torchrs`.
    pub fn detect_torchrs(root: &Path) -> Option<Reference> {
        let python = std::env::var("TORCHRS_PYTHON").unwrap_or_else(|_| "python3".into());
        Self::detect_module(root, python, Some("torchrs"))
    }

    fn detect_module(root: &Path, python: String, module: Option<&'static str>) -> Option<Reference> {
        let script = root.join("bench").join("pytorch_reference.py");
        if !script.is_file() {
            return None;
        }
        let name = module.unwrap_or("torch");
        let out = Command::new(&python)
            .args(["-c", &format!("import {name}; print({name}.__version__)")])
            // Not from the source tree, where python/torchrs would shadow the installed package.
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let torch_version = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Some(Reference { torch_version, script, python, module })
    }

    /// Starts the script in `--serve` mode (its stderr goes to ours) and waits until it is
    /// ready: its start-up (`import torch` takes a core for seconds) must not overlap our
    /// first measurement (Note [Interleaved reference]).
    pub fn serve(&self) -> Result<Server, String> {
        let mut cmd = Command::new(&self.python);
        if let Some(m) = self.module {
            cmd.env("BENCH_TORCH_MODULE", m).current_dir(std::env::temp_dir());
        }
        let mut child = cmd
            .arg(&self.script)
            .arg("--serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot run {} {}: {e}", self.python, self.script.display()))?;
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let mut server = match (stdin, stdout) {
            (Some(stdin), Some(stdout)) => Server { child, stdin: Some(stdin), stdout: BufReader::new(stdout) },
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("python3's pipes were not set up".into());
            }
        };
        let mut line = String::new();
        match server.stdout.read_line(&mut line) {
            Ok(n) if n > 0 && serde_json::from_str::<Ready>(line.trim()).is_ok() => Ok(server),
            Ok(0) => Err("the reference process exited before it was ready".into()),
            Ok(_) => Err(format!("unexpected first line from the reference process {:?}", line.trim())),
            Err(e) => Err(format!("cannot read the reference process's first line: {e}")),
        }
    }
}

impl Server {
    /// PyTorch's median seconds per iteration of workload `id` on `threads` threads and
    /// `device`, measured now for `budget_s` seconds.
    pub fn median(&mut self, id: &str, threads: usize, budget_s: f64, device: c10::Device) -> Result<f64, String> {
        let stdin = self.stdin.as_mut().ok_or("the reference process has ended")?;
        // PyTorch spells the device as we print it (`cpu`, `cuda:0`).
        writeln!(stdin, "{threads} {id} {budget_s} {device}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot send a request to the reference process: {e}"))?;
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => Err("the reference process exited".into()),
            Ok(_) => parse_answer(&line, id, threads),
            Err(e) => Err(format!("cannot read the reference process's answer: {e}")),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Closing stdin ends the script's loop.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_matched_to_their_request() {
        let ok = "{\"workload\": \"W1.add1\", \"threads\": 2, \"median_s\": 1.1e-06}\n";
        assert_eq!(parse_answer(ok, "W1.add1", 2), Ok(1.1e-6));
        let other = parse_answer(ok, "W1.add1", 1).expect_err("wrong thread count");
        assert!(other.contains("got W1.add1 on 2"), "{other}");
        let err = "{\"error\": \"KeyError: 'unknown workload W9.x'\", \"request\": \"1 W9.x 1\"}";
        assert_eq!(parse_answer(err, "W9.x", 1), Err("KeyError: 'unknown workload W9.x'".into()));
        let noise = parse_answer("Traceback (most recent call last):", "W1.add1", 1).expect_err("noise");
        assert!(noise.starts_with("unexpected answer"), "{noise}");
    }
}
