//! `cargo xtask opinfo [DIR] [--filter SUBSTR] [--ratchet FILE [--update-ratchet]]`: PyTorch's
//! OpInfo database as the oracle.
//!
//! `DIR` (default `tests/opinfo`) is what `tests/opinfo/gen.py` writes: `cases.json` and
//! `tensors.safetensors` in the parity format (one case per sample input, id
//! `ENTRY/DTYPE/SAMPLE`), run by the parity runner, and `entries.json`, one record per `op_db`
//! entry with the samples the generator could not turn into a case and why. An entry
//!
//! - **passes** when it has cases, every one of them passes (forward values), and no sample
//!   was left unsupported;
//! - **fails** when one of its cases fails;
//! - is **unsupported** otherwise: samples the generator could not map (a Python function that
//!   is several ATen calls, complex or sparse tensors, ...) or no usable sample at all.
//!
//! Gradient checks (float64 samples of differentiable entries) are counted on their own. The
//! output is one line per entry, then the `samples:`, `grads:` and final
//! `opinfo: N passed, M failed, U unsupported of T entries` lines. The ratchet works as the
//! parity runner's: case ids and `ID#grad` ids known to pass.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use c10::Device;
use serde::Deserialize;

use crate::parity::{self, GradStatus, Outcome, Report};

/// Arguments of `cargo xtask opinfo`.
#[derive(clap::Args)]
pub struct Args {
    /// Directory holding cases.json, tensors.safetensors and entries.json (default: the
    /// repository's tests/opinfo).
    pub dir: Option<PathBuf>,
    /// Only run entries whose name contains this string.
    #[arg(long)]
    pub filter: Option<String>,
    /// A file listing the case ids (and `ID#grad` gradient checks) that must pass.
    #[arg(long)]
    pub ratchet: Option<PathBuf>,
    /// Rewrites the --ratchet file with the cases and gradient checks that pass.
    #[arg(long, requires = "ratchet")]
    pub update_ratchet: bool,
    /// The device to run on (`cpu` or `meta`), as `cargo xtask parity --device`: on `meta`
    /// each sample runs on meta tensors where the operator has a `Meta` kernel and its
    /// outputs' shapes and dtypes are checked against PyTorch's (the rest, and every gradient
    /// check, run on the CPU); a `device:` line counts both.
    #[arg(long, default_value = "cpu", value_parser = parse_device)]
    pub device: Device,
}

/// Parses `--device` (the CPU or the meta device: the OpInfo cases are checked on CUDA by
/// `cargo xtask parity --device cuda tests/opinfo`).
fn parse_device(s: &str) -> Result<Device, String> {
    match parity::parse_device(s) {
        Ok(d) if d.is_cpu() || d.is_meta() => Ok(d),
        _ => Err(format!("expected cpu or meta, got {s:?}")),
    }
}

/// `entries.json`.
#[derive(Deserialize)]
struct EntriesFile {
    entries: Vec<Entry>,
}

/// One `op_db` entry as the generator saw it.
#[derive(Deserialize)]
struct Entry {
    /// `name` or `name.variant_test_name`.
    entry: String,
    /// Whether PyTorch differentiates it (`supports_autograd`).
    #[serde(default)]
    autograd: bool,
    /// Samples that did not become cases.
    #[serde(default)]
    unsupported: Vec<Unsupported>,
}

/// A sample (or a whole dtype) the generator could not map.
#[derive(Deserialize)]
struct Unsupported {
    #[serde(default)]
    dtype: Option<String>,
    #[serde(default)]
    sample: Option<usize>,
    reason: String,
}

/// The verdict on one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryStatus {
    /// Every sample mapped and passed.
    Passed,
    /// A case failed.
    Failed,
    /// Some sample could not be run (and none failed).
    Unsupported,
}

/// Counts of one entry's cases.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EntryCounts {
    pub passed: usize,
    pub failed: usize,
    pub unsupported: usize,
    pub grads_passed: usize,
    pub grads_failed: usize,
    pub grads_not_run: usize,
    /// The first failing case and why.
    pub first_failure: Option<String>,
    /// The first failing gradient check and why.
    pub first_grad_failure: Option<String>,
}

impl EntryCounts {
    /// The entry's verdict.
    pub fn status(&self) -> EntryStatus {
        if self.failed > 0 {
            EntryStatus::Failed
        } else if self.unsupported > 0 || self.passed == 0 {
            EntryStatus::Unsupported
        } else {
            EntryStatus::Passed
        }
    }
}

/// The entry a case id belongs to: everything before the `/DTYPE/SAMPLE` suffix.
fn entry_of(id: &str) -> &str {
    let mut parts = id.rsplitn(3, '/');
    let (_, _, entry) = (parts.next(), parts.next(), parts.next());
    entry.unwrap_or(id)
}

/// Per-entry counts of a run, in entries.json's order.
fn tally(entries: &[Entry], report: &Report) -> Vec<(String, EntryCounts)> {
    let mut by_entry: BTreeMap<&str, EntryCounts> = BTreeMap::new();
    for (id, outcome, grads) in &report.results {
        let c = by_entry.entry(entry_of(id)).or_default();
        match outcome {
            Outcome::Pass => c.passed += 1,
            Outcome::Fail(reason) => {
                c.failed += 1;
                c.first_failure.get_or_insert_with(|| format!("{id}: {reason}"));
            }
        }
        match grads {
            GradStatus::None => {}
            GradStatus::NotRun => c.grads_not_run += 1,
            GradStatus::Passed => c.grads_passed += 1,
            GradStatus::Failed(reason) => {
                c.grads_failed += 1;
                c.first_grad_failure.get_or_insert_with(|| format!("{id}: {reason}"));
            }
        }
    }
    entries
        .iter()
        .map(|e| {
            let mut c = by_entry.remove(e.entry.as_str()).unwrap_or_default();
            c.unsupported = e.unsupported.len();
            (e.entry.clone(), c)
        })
        .collect()
}

/// The line printed for one entry.
fn entry_line(entry: &Entry, c: &EntryCounts) -> String {
    let grads = if c.grads_passed + c.grads_failed + c.grads_not_run > 0 {
        format!(", gradients {}/{}", c.grads_passed, c.grads_passed + c.grads_failed + c.grads_not_run)
    } else {
        String::new()
    };
    let samples = c.passed + c.failed;
    let mut line = match c.status() {
        EntryStatus::Passed => format!("PASS {}: {samples} samples{grads}", entry.entry),
        EntryStatus::Failed => format!(
            "FAIL {}: {} of {samples} samples failed{grads}; first: {}",
            entry.entry,
            c.failed,
            c.first_failure.as_deref().unwrap_or("")
        ),
        EntryStatus::Unsupported => {
            let first = entry.unsupported.first();
            let reason = first.map_or("no sample", |u| u.reason.as_str());
            let at = first
                .and_then(|u| {
                    u.dtype
                        .as_deref()
                        .map(|d| format!(" ({d}{})", u.sample.map_or(String::new(), |s| format!(" sample {s}"))))
                })
                .unwrap_or_default();
            format!(
                "UNSUPPORTED {}: {} unsupported, {} passed{grads}; first{at}: {reason}",
                entry.entry, c.unsupported, c.passed
            )
        }
    };
    if let Some(g) = &c.first_grad_failure {
        line.push_str(&format!("; first gradient failure: {g}"));
    }
    line
}

/// Runs `cargo xtask opinfo`.
pub fn run(a: Args) -> Result<ExitCode, String> {
    let listed = match &a.ratchet {
        Some(path) => Some(parity::read_ratchet(path, a.update_ratchet)?),
        None => None,
    };
    let mut out = std::io::stdout().lock();
    let dir = a.dir.clone().unwrap_or_else(|| crate::workspace_root().join("tests/opinfo"));
    let report = run_dir_on(&dir, a.filter.as_deref(), a.device, &mut out)?;
    let (Some(path), Some(listed)) = (&a.ratchet, listed) else {
        return Ok(ExitCode::SUCCESS);
    };
    parity::check_ratchet(&report, path, &listed, a.update_ratchet, a.filter.as_deref(), &mut out)
}

/// Runs the cases of `dir` (entries whose name contains `filter`), prints the per-entry lines
/// and the summary, and returns the parity report (for the ratchet).
#[cfg(test)]
pub fn run_dir(dir: &Path, filter: Option<&str>, out: &mut dyn Write) -> Result<Report, String> {
    run_dir_on(dir, filter, Device::CPU, out)
}

/// [`run_dir`] on `device`, with the `device:` line after the summary when it is not the CPU.
pub fn run_dir_on(dir: &Path, filter: Option<&str>, device: Device, out: &mut dyn Write) -> Result<Report, String> {
    let entries_path = dir.join("entries.json");
    let text =
        std::fs::read_to_string(&entries_path).map_err(|e| format!("cannot read {}: {e}", entries_path.display()))?;
    let file: EntriesFile = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", entries_path.display()))?;
    let entries: Vec<Entry> = file.entries.into_iter().filter(|e| filter.is_none_or(|f| e.entry.contains(f))).collect();
    let cases = parity::cases::load_cases(&dir.join("cases.json"))?;
    let wanted: std::collections::HashSet<&str> = entries.iter().map(|e| e.entry.as_str()).collect();
    let cases: Vec<_> = cases.into_iter().filter(|c| wanted.contains(entry_of(&c.id))).collect();
    // The parity runner's own FAIL lines are summarised per entry here instead.
    let mut sink = Vec::new();
    let report = parity::run_cases(dir, &cases, None, device, &mut sink)?;
    let write_err = |e: std::io::Error| format!("writing the report: {e}");
    let counts = tally(&entries, &report);
    let (mut passed, mut failed, mut unsupported) = (0, 0, 0);
    let mut totals = EntryCounts::default();
    let mut autograd_entries = 0;
    for (entry, (_, c)) in entries.iter().zip(&counts) {
        writeln!(out, "{}", entry_line(entry, c)).map_err(write_err)?;
        match c.status() {
            EntryStatus::Passed => passed += 1,
            EntryStatus::Failed => failed += 1,
            EntryStatus::Unsupported => unsupported += 1,
        }
        autograd_entries += usize::from(entry.autograd);
        totals.passed += c.passed;
        totals.failed += c.failed;
        totals.unsupported += c.unsupported;
        totals.grads_passed += c.grads_passed;
        totals.grads_failed += c.grads_failed;
        totals.grads_not_run += c.grads_not_run;
    }
    let all_samples = totals.passed + totals.failed + totals.unsupported;
    writeln!(
        out,
        "samples: {} passed, {} failed, {} unsupported of {all_samples}",
        totals.passed, totals.failed, totals.unsupported
    )
    .map_err(write_err)?;
    let all_grads = totals.grads_passed + totals.grads_failed + totals.grads_not_run;
    writeln!(
        out,
        "grads: {} passed, {} failed, {} not run (forward failed) of {all_grads} gradient checks ({autograd_entries} differentiable entries)",
        totals.grads_passed, totals.grads_failed, totals.grads_not_run
    )
    .map_err(write_err)?;
    writeln!(out, "opinfo: {passed} passed, {failed} failed, {unsupported} unsupported of {} entries", entries.len())
        .map_err(write_err)?;
    if !device.is_cpu() {
        writeln!(out, "{}", report.device_line(device)).map_err(write_err)?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The repository's OpInfo cases: every case and gradient check the ratchet lists passes
    /// (what CI's `cargo xtask opinfo --ratchet` checks, here inside `cargo test`).
    #[test]
    fn the_repository_ratchet_holds() {
        let dir = crate::workspace_root().join("tests/opinfo");
        let mut out = Vec::new();
        let report = run_dir(&dir, None, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.lines().last().unwrap().starts_with("opinfo: "), "{text}");
        assert_ratchet_holds(&dir, &report, "cpu");
    }

    /// Every id of the repository's ratchet passes in `report`.
    fn assert_ratchet_holds(dir: &Path, report: &Report, run: &str) {
        let listed = parity::read_ratchet(&dir.join("passing.txt"), false).unwrap();
        assert!(listed.len() > 1000, "the ratchet lists {} ids", listed.len());
        let scratch = std::env::temp_dir().join(format!("opinfo-ratchet-{run}-{}", std::process::id()));
        let mut verdict = Vec::new();
        let code = parity::check_ratchet(report, &scratch, &listed, false, None, &mut verdict).unwrap();
        let verdict = String::from_utf8(verdict).unwrap();
        assert!(!verdict.contains("listed as passing"), "{verdict}");
        assert_eq!(code, ExitCode::SUCCESS);
    }

    /// On the meta device (`cargo xtask opinfo --device meta`, also in CI): the samples of every
    /// operator with a `Meta` kernel run on meta tensors and give PyTorch's output shapes and
    /// dtypes; the ratchet holds as on the CPU.
    #[test]
    fn meta_kernels_give_pytorchs_shapes_and_dtypes() {
        let dir = crate::workspace_root().join("tests/opinfo");
        let mut out = Vec::new();
        let report = run_dir_on(&dir, None, Device::META, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let device = text.lines().last().unwrap();
        let on_meta: usize = device.strip_prefix("device: ").unwrap().split(' ').next().unwrap().parse().unwrap();
        assert!(on_meta > 5000, "{device}");
        assert_ratchet_holds(&dir, &report, "meta");
    }

    #[test]
    fn case_ids_name_their_entry() {
        assert_eq!(entry_of("add/float32/0"), "add");
        assert_eq!(entry_of("nn.functional.conv2d/float64/12"), "nn.functional.conv2d");
        assert_eq!(entry_of("normal.in_place/float32/3"), "normal.in_place");
    }

    #[test]
    fn an_entry_passes_only_with_every_sample_mapped_and_passing() {
        let mut c = EntryCounts { passed: 3, ..Default::default() };
        assert_eq!(c.status(), EntryStatus::Passed);
        c.unsupported = 1;
        assert_eq!(c.status(), EntryStatus::Unsupported);
        c.failed = 1;
        assert_eq!(c.status(), EntryStatus::Failed);
        assert_eq!(EntryCounts::default().status(), EntryStatus::Unsupported);
    }
}
