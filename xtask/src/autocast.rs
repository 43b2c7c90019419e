//! `cargo xtask autocast [DIR] [--device cpu|cuda]`: checks autocast against PyTorch's table
//! (tests/autocast/expected.json, written by its gen.py).
//!
//! Two checks:
//! - **policies**: every operator PyTorch gives an autocast kernel on the device, and that this
//!   library defines, has one here with the same cast policy; and no operator has one here that
//!   PyTorch's list lacks;
//! - **dtypes**: the OpInfo cases the table names run inside autocast regions (bfloat16 and
//!   float16) and their results must have PyTorch's dtypes (or fail where PyTorch fails, with
//!   its message for a banned operator).
//!
//! A case whose operator this library does not define, or that PyTorch could not run on fake
//! CUDA tensors, is counted as skipped, by reason, in the summary; anything else that differs
//! is a failure.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aten::autocast::{policy, AutocastGuard};
use aten::IValue;
use c10::{Device, DeviceType, ScalarType};
use serde::Deserialize;

use crate::parity::{self, args, cases, panics, store::TensorStore};

/// Arguments of `cargo xtask autocast`.
#[derive(clap::Args)]
pub struct Args {
    /// Directory holding expected.json (default: tests/autocast).
    pub dir: Option<PathBuf>,
    /// The OpInfo cases the table refers to (default: tests/opinfo).
    #[arg(long)]
    pub opinfo: Option<PathBuf>,
    /// The autocast device (`cpu` or `cuda`): tensors are moved there and the region is that
    /// device's.
    #[arg(long, default_value = "cpu", value_parser = parity::parse_device)]
    pub device: Device,
}

#[derive(Deserialize)]
struct Expected {
    generator: String,
    policies: BTreeMap<String, BTreeMap<String, String>>,
    cases: Vec<ExpectedCase>,
}

#[derive(Deserialize)]
struct ExpectedCase {
    id: String,
    op: String,
    cpu: BTreeMap<String, Outcome>,
    cuda: BTreeMap<String, Outcome>,
}

/// What PyTorch did with a case in a region.
#[derive(Deserialize, Debug)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    /// The dtypes of the results in order (`None` for a non-tensor result).
    Dtypes(Vec<Option<String>>),
    /// PyTorch refused the call (the first line of its message).
    Error(String),
    /// PyTorch's fake tensors could not run the call: nothing to compare.
    Skip(String),
}

/// The counts of a run.
#[derive(Debug, Default)]
pub struct Summary {
    /// Operators whose policy was compared.
    pub policies_checked: usize,
    /// Policy differences, one line each.
    pub policy_failures: Vec<String>,
    /// Region calls whose dtypes (or error) matched.
    pub passed: usize,
    /// Region calls that differ, one line each.
    pub failures: Vec<String>,
    /// Region calls not compared, by reason.
    pub skipped: BTreeMap<String, usize>,
    /// Region calls that differ as known_differences.txt says they do.
    pub known: usize,
}

impl Summary {
    /// Whether anything differs from PyTorch.
    pub fn failed(&self) -> bool {
        !self.policy_failures.is_empty() || !self.failures.is_empty()
    }
}

/// Runs the check and prints the summary.
pub fn run(a: Args) -> Result<ExitCode, String> {
    if a.device.ty == DeviceType::Cuda && !cfg!(feature = "cuda") {
        return crate::rerun_with_cuda();
    }
    let root = crate::workspace_root();
    let dir = a.dir.unwrap_or_else(|| root.join("tests/autocast"));
    let opinfo = a.opinfo.unwrap_or_else(|| root.join("tests/opinfo"));
    let mut out = std::io::stdout();
    let s = check(&dir, &opinfo, a.device, &mut out)?;
    Ok(if s.failed() { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn dtype_name(d: ScalarType) -> String {
    d.name().to_string()
}

/// Checks the table against this library on `device` and writes one line per failure and a
/// summary.
pub fn check(dir: &Path, opinfo: &Path, device: Device, out: &mut dyn Write) -> Result<Summary, String> {
    let dev = device.ty;
    let key = match dev {
        DeviceType::Cpu => "cpu",
        DeviceType::Cuda => "cuda",
        _ => return Err(format!("autocast runs on cpu or cuda, not {device}")),
    };
    let path = dir.join("expected.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let expected: Expected = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let d = aten::dispatcher();
    let mut s = Summary::default();

    // Policies, both ways.
    let theirs = expected.policies.get(key).ok_or_else(|| format!("{}: no policies for {key}", path.display()))?;
    let dispatch_key =
        if dev == DeviceType::Cpu { c10::DispatchKey::AutocastCPU } else { c10::DispatchKey::AutocastCUDA };
    for (op, want) in theirs {
        let Ok((entry, _)) = d.find_schema(op) else { continue };
        s.policies_checked += 1;
        if policy(dev, op).is_some() && !entry.has_kernel_for(dispatch_key) {
            s.policy_failures.push(format!("{op}: listed with a policy but no {dispatch_key} kernel is registered"));
            continue;
        }
        match policy(dev, op) {
            None => s.policy_failures.push(format!("{op}: PyTorch casts it by {want}, we do not cast it")),
            Some(p) if want != "unknown" && p.name() != want => {
                s.policy_failures.push(format!("{op}: PyTorch's policy is {want}, ours {}", p.name()))
            }
            Some(_) => {}
        }
    }
    let ours = match dev {
        DeviceType::Cpu => aten::autocast::CPU_POLICIES,
        _ => aten::autocast::CUDA_POLICIES,
    };
    for (op, p) in ours {
        if !theirs.contains_key(*op) {
            s.policy_failures.push(format!("{op}: we cast it by {}, PyTorch has no {key} autocast kernel", p.name()));
        }
    }

    // Dtypes in regions.
    let all = cases::load_cases(&opinfo.join("cases.json"))?;
    let by_id: BTreeMap<&str, &cases::Case> = all.iter().map(|c| (c.id.as_str(), c)).collect();
    let (tpath, bytes) = parity::read_tensors(opinfo)?;
    let store = TensorStore::new(&tpath, &bytes)?;
    let known = known_differences(dir, key)?;
    let mut known_seen: BTreeMap<&str, bool> = known.iter().map(|id| (id.as_str(), false)).collect();
    let _quiet = panics::QuietPanics::install();
    for case in &expected.cases {
        let outcomes = if dev == DeviceType::Cpu { &case.cpu } else { &case.cuda };
        let Some(op_case) = by_id.get(case.id.as_str()) else {
            return Err(format!("{}: case {} is not in {}", path.display(), case.id, opinfo.display()));
        };
        for (dtype, want) in outcomes {
            let region = ScalarType::from_name(dtype).map_err(|e| e.to_string())?;
            if let Outcome::Skip(why) = want {
                *s.skipped.entry(format!("PyTorch: {}", why.split(':').next().unwrap_or(why))).or_default() += 1;
                continue;
            }
            if d.find_schema(&case.op).is_err() {
                *s.skipped.entry(format!("operator not defined here ({})", case.op)).or_default() += 1;
                continue;
            }
            let got = panics::catch(|| run_in_region(op_case, &store, device, region));
            // An operator (or dtype) without a kernel on the device cannot show its dtypes
            // there; the OpInfo device run counts those gaps (`cargo xtask opinfo --device`).
            if let Ok(Err(e)) = &got {
                if dev != DeviceType::Cpu && parity::lacks_device_kernel(e, device) {
                    *s.skipped.entry(format!("no {key} kernel for {}", case.op)).or_default() += 1;
                    continue;
                }
            }
            let got = got.map(|r| r.map_err(|e| e.to_string()));
            match (compare(want, got), known_seen.get_mut(case.id.as_str())) {
                (Ok(()), None) => s.passed += 1,
                (Ok(()), Some(_)) => s.failures.push(format!(
                    "{} in a {key} {dtype} region matches PyTorch: delete its line from known_differences.txt",
                    case.id
                )),
                (Err(_), Some(seen)) => {
                    *seen = true;
                    s.known += 1;
                }
                (Err(why), None) => s.failures.push(format!("{} in a {key} {dtype} region: {why}", case.id)),
            }
        }
    }
    for (id, seen) in known_seen {
        if !seen {
            s.failures.push(format!("{id}: listed in known_differences.txt for {key} but not run"));
        }
    }

    let w = |e: std::io::Error| format!("writing the report: {e}");
    for f in s.policy_failures.iter().chain(&s.failures) {
        writeln!(out, "FAIL {f}").map_err(w)?;
    }
    for (why, n) in &s.skipped {
        writeln!(out, "skipped {n}: {why}").map_err(w)?;
    }
    let skipped: usize = s.skipped.values().sum();
    writeln!(
        out,
        "autocast {key}: policies {} of {} operators match PyTorch's; dtypes: {} passed, {} failed, {} known \
         differences, {skipped} skipped of {} region calls ({})",
        s.policies_checked - s.policy_failures.len().min(s.policies_checked),
        s.policies_checked,
        s.passed,
        s.failures.len(),
        s.known,
        s.passed + s.failures.len() + s.known + skipped,
        expected.generator,
    )
    .map_err(w)?;
    Ok(s)
}

/// The case ids known_differences.txt lists for `device` (`cpu` or `cuda`).
fn known_differences(dir: &Path, device: &str) -> Result<Vec<String>, String> {
    let path = dir.join("known_differences.txt");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut ids = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let mut words = line.split_whitespace();
        if let (Some(id), Some(dev)) = (words.next(), words.next()) {
            if dev == device {
                ids.push(id.to_string());
            }
        }
    }
    Ok(ids)
}

/// The result dtypes of a case run in an autocast region of `device` with `dtype`, or the
/// error's message.
fn run_in_region(
    case: &cases::Case,
    store: &TensorStore<'_>,
    device: Device,
    dtype: ScalarType,
) -> Result<Result<Vec<Option<String>>, c10::Error>, String> {
    let (op, schema) = aten::dispatcher().find_schema(&case.op).map_err(|e| e.to_string())?;
    let load = |key: &str, noncontig: bool| store.tensor(key, noncontig);
    let resolved = args::resolve_args(&schema, &case.args, &case.kwargs, &load)?;
    let resolved = parity::args_on(&resolved, device)?;
    let mut stack = args::fill_stack(&schema, resolved)?;
    let _region = AutocastGuard::new(device.ty, Some(dtype)).map_err(|e| e.to_string())?;
    Ok(match op.call_boxed(&mut stack) {
        Ok(()) => Ok(parity::compare::flatten_returns(stack)
            .iter()
            .map(|v| match v {
                IValue::Tensor(t) => Some(dtype_name(t.dtype())),
                _ => None,
            })
            .collect()),
        Err(e) => Err(e),
    })
}

fn compare(want: &Outcome, got: Result<Result<Vec<Option<String>>, String>, String>) -> Result<(), String> {
    let got = got.map_err(|e| format!("could not run the case: {e}"))?;
    match (want, got) {
        (Outcome::Dtypes(w), Ok(g)) if *w == g => Ok(()),
        (Outcome::Dtypes(w), Ok(g)) => Err(format!("dtypes {g:?}, PyTorch's {w:?}")),
        (Outcome::Dtypes(w), Err(e)) => {
            Err(format!("failed ({}), PyTorch gives {w:?}", e.lines().next().unwrap_or("")))
        }
        (Outcome::Error(w), Err(e)) => {
            if e.contains(w.as_str()) || !w.contains("unsafe to autocast") {
                Ok(())
            } else {
                Err(format!("failed with '{e}', PyTorch with '{w}'"))
            }
        }
        (Outcome::Error(w), Ok(g)) => Err(format!("returned {g:?}, PyTorch fails: {w}")),
        (Outcome::Skip(_), _) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PyTorch's autocast table on the CPU: every policy and every region dtype matches (what CI's
    /// `cargo xtask autocast` checks, here inside `cargo test`).
    #[test]
    fn cpu_autocast_matches_pytorchs_table() {
        let root = crate::workspace_root();
        let mut out = Vec::new();
        let s = check(&root.join("tests/autocast"), &root.join("tests/opinfo"), Device::CPU, &mut out).unwrap();
        let text = String::from_utf8_lossy(&out);
        assert!(!s.failed(), "{text}");
        assert!(s.policies_checked >= 60, "{text}");
        assert!(s.passed >= 2000, "{text}");
    }
}
