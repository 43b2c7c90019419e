//! `cargo xtask parity DIR [--filter SUBSTR] [--ratchet FILE [--update-ratchet]]`: the operator
//! parity runner. It executes every case of `DIR/cases.json` (format in `parity/FORMAT.md`)
//! through the dispatcher by schema name on the boxed path, compares the returns with the
//! PyTorch results in `DIR/tensors.safetensors`, and prints one `FAIL <id>: <reason>` line per
//! failing case and a final `ops: N passed, M failed` line.
//!
//! A case passes because the operator is right: the runner knows nothing about particular
//! operators. Arguments are built from the schema alone ([`args`]), tensors are decoded from
//! the file ([`store`]), returns are compared elementwise ([`compare`]); gradient blocks run
//! backward through autograd and compare the input gradients ([`grad`]).
//!
//! The ratchet ([`ratchet`]) lists the cases known to pass and, as `ID#grad`, the gradient
//! checks known to pass: a regression of either fails the run.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aten::{IValue, Tensor};
use c10::Device;

pub(crate) mod args;
pub(crate) mod cases;
pub(crate) mod compare;
pub(crate) mod gauge;
pub(crate) mod grad;
pub(crate) mod graph;
pub(crate) mod panics;
mod ratchet;
pub(crate) mod store;
#[cfg(test)]
mod tests;

use args::{fill_stack, resolve_args, ResolvedArgs};
use cases::Case;
use compare::{compare_tensors, flatten_returns, value_as_tensor, Tolerance};
use store::TensorStore;

/// Arguments of `cargo xtask parity`.
#[derive(clap::Args)]
pub struct Args {
    /// Directory holding cases.json and tensors.safetensors.
    pub dir: PathBuf,
    /// Only run cases whose id contains this string.
    #[arg(long)]
    pub filter: Option<String>,
    /// A file listing the ids of cases that must pass (one per line, `#` comments): fails when
    /// one of them fails and reports newly passing cases.
    #[arg(long)]
    pub ratchet: Option<PathBuf>,
    /// Rewrites the --ratchet file with the cases that pass.
    #[arg(long, requires = "ratchet")]
    pub update_ratchet: bool,
    /// The device to run on (`cpu`, `meta`, `cuda`, `cuda:N`): tensor arguments are moved there,
    /// the operator runs there and its results are compared on the CPU. A case whose operator
    /// (or dtype) has no kernel for the device runs on the CPU instead and is counted in the
    /// `device:` line. On `meta` the results' shapes and dtypes are compared (there are no
    /// values) and gradient checks run on the CPU.
    #[arg(long, default_value = "cpu", value_parser = parse_device)]
    pub device: Device,
}

/// Parses `--device`.
pub(crate) fn parse_device(s: &str) -> Result<Device, String> {
    match s {
        "cpu" => Ok(Device::CPU),
        "meta" => Ok(Device::META),
        "cuda" => Ok(Device::cuda(0)),
        _ => s
            .strip_prefix("cuda:")
            .and_then(|i| i.parse::<i8>().ok())
            .filter(|i| *i >= 0)
            .map(Device::cuda)
            .ok_or_else(|| format!("expected cpu, meta, cuda or cuda:N, got {s:?}")),
    }
}

/// Where a case's operator ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// On the requested device (the CPU when that is the device).
    Device,
    /// On the CPU, because the device has no kernel for the operator or its dtypes: the
    /// operator (or `outputs`) that sent it back.
    Fallback(String),
}

/// How one case ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Values (and, once they run, gradients) match.
    Pass,
    /// The reason, on one line.
    Fail(String),
}

/// Whether a case's gradients were checked.
#[derive(Debug, Clone, PartialEq)]
pub enum GradStatus {
    /// The case has no `grad` block (or expects an error).
    None,
    /// The case has a `grad` block that did not run because the call failed.
    NotRun,
    /// Gradients were checked and matched.
    Passed,
    /// Gradients were checked and did not match (or could not be computed), and why.
    Failed(String),
}

/// The result of a run: every case that ran, in file order.
#[derive(Debug, Default)]
pub struct Report {
    /// The id of every case in the file, run or filtered out.
    pub all_ids: Vec<String>,
    /// The ratchet id ([`grad_id`]) of every gradient check in the file, run or filtered out.
    pub grad_ids: Vec<String>,
    /// Case id, outcome and gradient status of the cases that ran.
    pub results: Vec<(String, Outcome, GradStatus)>,
    /// Where each case that ran was executed (parallel to `results`).
    pub placements: Vec<Placement>,
}

impl Report {
    /// Number of passing cases.
    pub fn passed(&self) -> usize {
        self.results.iter().filter(|(_, o, _)| *o == Outcome::Pass).count()
    }

    /// Number of failing cases.
    pub fn failed(&self) -> usize {
        self.results.len() - self.passed()
    }

    fn count_grads(&self, status: fn(&GradStatus) -> bool) -> usize {
        self.results.iter().filter(|(_, _, g)| status(g)).count()
    }

    /// The `grads:` summary line.
    pub fn grads_line(&self) -> String {
        let (passed, failed, not_run) = (
            self.count_grads(|g| *g == GradStatus::Passed),
            self.count_grads(|g| matches!(g, GradStatus::Failed(_))),
            self.count_grads(|g| *g == GradStatus::NotRun),
        );
        if passed + failed == 0 {
            format!("grads: not run ({not_run} cases have gradient checks whose forward failed)")
        } else {
            format!("grads: {passed} passed, {failed} failed, {not_run} not run")
        }
    }

    /// The `device:` line of a run on another device than the CPU.
    pub fn device_line(&self, device: Device) -> String {
        let on = self.placements.iter().filter(|p| **p == Placement::Device).count();
        let name = device.ty.name();
        format!("device: {on} on {name}, {} without a {name} kernel", self.placements.len() - on)
    }

    /// The `fallbacks:` line: the ids of the cases that ran on the CPU for want of a kernel.
    pub fn fallbacks_line(&self) -> String {
        let ids: Vec<String> = self
            .results
            .iter()
            .zip(&self.placements)
            .filter_map(|((id, _, _), p)| match p {
                Placement::Fallback(why) => Some(format!("{id} ({why})")),
                Placement::Device => None,
            })
            .collect();
        format!("fallbacks: {}", if ids.is_empty() { "none".to_string() } else { ids.join(" ") })
    }

    /// The final `ops:` line.
    pub fn ops_line(&self) -> String {
        format!("ops: {} passed, {} failed", self.passed(), self.failed())
    }
}

/// The ratchet id of case `id`'s gradient check.
pub(crate) fn grad_id(id: &str) -> String {
    format!("{id}{}", ratchet::GRAD_SUFFIX)
}

/// The ratchet's view of a run: every case that ran with whether it passed, then, for each
/// case with a gradient check, [`grad_id`] with whether the check ran and passed.
fn ratchet_results(report: &Report) -> Vec<(String, bool)> {
    let mut results = Vec::with_capacity(2 * report.results.len());
    for (id, outcome, grads) in &report.results {
        results.push((id.clone(), *outcome == Outcome::Pass));
        if *grads != GradStatus::None {
            results.push((grad_id(id), *grads == GradStatus::Passed));
        }
    }
    results
}

/// Runs `cargo xtask parity`: exit 0 when the run completes (failing cases included), exit 1
/// when the ratchet is broken, an error when the files cannot be read.
pub fn run(a: Args) -> Result<ExitCode, String> {
    if a.device.ty == c10::DeviceType::Cuda && !cfg!(feature = "cuda") {
        return crate::rerun_with_cuda();
    }
    let listed = match &a.ratchet {
        Some(path) => Some(read_ratchet(path, a.update_ratchet)?),
        None => None,
    };
    if !a.device.is_cpu() {
        check_device(a.device)?;
    }
    let mut out = std::io::stdout().lock();
    let report = run_dir_on(&a.dir, a.filter.as_deref(), a.device, &mut out)?;
    let (Some(path), Some(listed)) = (&a.ratchet, listed) else {
        return Ok(ExitCode::SUCCESS);
    };
    check_ratchet(&report, path, &listed, a.update_ratchet, a.filter.as_deref(), &mut out)
}

/// Compares a run with the ratchet file's ids (`listed`), prints the verdict and, with
/// `update`, rewrites the file: exit 1 when a listed case or gradient check failed or vanished.
pub(crate) fn check_ratchet(
    report: &Report,
    path: &Path,
    listed: &[String],
    update: bool,
    filter: Option<&str>,
    out: &mut dyn Write,
) -> Result<ExitCode, String> {
    let all_ids: HashSet<&str> = report.all_ids.iter().chain(&report.grad_ids).map(String::as_str).collect();
    let results = ratchet_results(report);
    let verdict = ratchet::Verdict::new(listed, &results, &all_ids, |id| {
        selected(id.strip_suffix(ratchet::GRAD_SUFFIX).unwrap_or(id), filter)
    });
    for line in verdict.lines() {
        writeln!(out, "{line}").map_err(|e| format!("writing the report: {e}"))?;
    }
    if update {
        let text = ratchet::render(verdict.updated.iter().map(String::as_str));
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        writeln!(out, "RATCHET: wrote {} ids to {}", verdict.updated.len(), path.display())
            .map_err(|e| format!("writing the report: {e}"))?;
    }
    Ok(if verdict.is_broken() { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// The ids of a ratchet file; a missing file is empty when it is about to be written.
pub(crate) fn read_ratchet(path: &Path, will_update: bool) -> Result<Vec<String>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(ratchet::parse(&text)),
        Err(e) if will_update && e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Whether a case id is within the `--filter`.
pub(crate) fn selected(id: &str, filter: Option<&str>) -> bool {
    filter.is_none_or(|f| id.contains(f))
}

/// Whether `device` can hold tensors in this build, with the way to get it when not.
pub(crate) fn check_device(device: Device) -> Result<(), String> {
    // The backends register their allocators at the dispatcher's first use.
    let _ = aten::dispatcher();
    if c10::allocator::get_allocator(device.ty).is_err() {
        return Err(format!(
            "--device {device}: this xtask has no {} backend (it needs xtask's `cuda` feature, and \
             TORCH_CUDA_DRIVER=emulator on a machine without a GPU)",
            device.ty.name()
        ));
    }
    let probe =
        aten::ops::zeros(&[1], None, None, Some(device), None).map_err(|e| format!("--device {device}: {e}"))?;
    drop(probe);
    Ok(())
}

/// Reads `dir/cases.json` and `dir/tensors.safetensors` and runs the cases on the CPU (see
/// [`run_cases`]).
#[cfg(test)]
pub fn run_dir(dir: &Path, filter: Option<&str>, out: &mut dyn Write) -> Result<Report, String> {
    run_dir_on(dir, filter, Device::CPU, out)
}

/// [`run_dir`] on `device`.
pub fn run_dir_on(dir: &Path, filter: Option<&str>, device: Device, out: &mut dyn Write) -> Result<Report, String> {
    let cases = cases::load_cases(&dir.join("cases.json"))?;
    run_cases(dir, &cases, filter, device, out)
}

/// Runs the cases whose id contains `filter` against `dir/tensors.safetensors`, writing a
/// `FAIL` line per failing case as it happens, then the `grads:` and `ops:` summary lines.
/// Errors only when the tensor file cannot be read or the output cannot be written.
pub(crate) fn run_cases(
    dir: &Path,
    cases: &[Case],
    filter: Option<&str>,
    device: Device,
    out: &mut dyn Write,
) -> Result<Report, String> {
    let (path, bytes) = read_tensors(dir)?;
    let store = TensorStore::new(&path, &bytes)?;
    let write_err = |e: std::io::Error| format!("writing the report: {e}");
    let mut report = Report {
        all_ids: cases.iter().map(|c| c.id.clone()).collect(),
        grad_ids: cases.iter().filter(|c| c.grad.is_some()).map(|c| grad_id(&c.id)).collect(),
        ..Default::default()
    };
    {
        let _quiet = panics::QuietPanics::install();
        for case in cases.iter().filter(|c| selected(&c.id, filter)) {
            let (outcome, grads, placement) = run_case(case, &store, device);
            if let Outcome::Fail(reason) = &outcome {
                writeln!(out, "FAIL {}: {reason}", case.id).map_err(write_err)?;
            }
            if let GradStatus::Failed(reason) = &grads {
                writeln!(out, "FAIL-GRAD {}: {reason}", case.id).map_err(write_err)?;
            }
            report.results.push((case.id.clone(), outcome, grads));
            report.placements.push(placement);
        }
    }
    writeln!(out, "{}", report.grads_line()).map_err(write_err)?;
    if !device.is_cpu() {
        writeln!(out, "{}", report.device_line(device)).map_err(write_err)?;
        writeln!(out, "{}", report.fallbacks_line()).map_err(write_err)?;
    }
    writeln!(out, "{}", report.ops_line()).map_err(write_err)?;
    Ok(report)
}

/// The bytes of `dir/tensors.safetensors`, or of `dir/tensors.safetensors.gz` decompressed
/// when only that exists (tests/opinfo keeps its tensors compressed).
pub(crate) fn read_tensors(dir: &Path) -> Result<(PathBuf, Vec<u8>), String> {
    let plain = dir.join("tensors.safetensors");
    let gz = dir.join("tensors.safetensors.gz");
    if plain.exists() || !gz.exists() {
        let bytes = std::fs::read(&plain).map_err(|e| format!("cannot read {}: {e}", plain.display()))?;
        return Ok((plain, bytes));
    }
    let file = std::fs::File::open(&gz).map_err(|e| format!("cannot read {}: {e}", gz.display()))?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(file), &mut bytes)
        .map_err(|e| format!("cannot decompress {}: {e}", gz.display()))?;
    Ok((gz, bytes))
}

/// Joins the lines of a multi-line message so that each failure stays on one output line.
fn one_line(s: &str) -> String {
    s.trim().lines().map(str::trim).collect::<Vec<_>>().join(" | ")
}

/// Runs one case under [`panics::catch`]: the values first, then (if they pass) the gradients,
/// on `device` when it has the kernels, else on the CPU.
fn run_case(case: &Case, store: &TensorStore<'_>, device: Device) -> (Outcome, GradStatus, Placement) {
    let unchecked = if case.grad.is_some() { GradStatus::NotRun } else { GradStatus::None };
    let mut placement = Placement::Device;
    let checked = panics::catch(|| check_values(case, store, device, &mut placement));
    let (resolved, n_outputs) = match checked {
        Ok(Some(call)) => call,
        Ok(None) => return (Outcome::Pass, GradStatus::None, placement),
        Err(reason) => return (Outcome::Fail(one_line(&reason)), unchecked, placement),
    };
    let grads = |args: &ResolvedArgs| match panics::catch(|| Ok(grad::check_grad(case, args, n_outputs, Some(store)))) {
        Ok(r) => r,
        Err(reason) => Some(Err(grad::GradError::Check(reason))),
    };
    let mut result = grads(&resolved);
    if let Some(Err(grad::GradError::Call(e))) = &result {
        // A backward without a device kernel: the gradients are checked on the CPU instead.
        if lacks_device_kernel(e, device) && !device.is_cpu() {
            placement = Placement::Fallback(fallback_reason(e));
            result = match args_on(&resolved, Device::CPU) {
                Ok(cpu) => grads(&cpu),
                Err(e) => Some(Err(grad::GradError::Check(e))),
            };
        }
    }
    let status = match result {
        None => unchecked,
        Some(Ok(())) => GradStatus::Passed,
        Some(Err(e)) => GradStatus::Failed(one_line(&e.to_string())),
    };
    (Outcome::Pass, status, placement)
}

/// `v` with every tensor in it moved to `device`.
fn value_on(v: &IValue, device: Device) -> Result<IValue, String> {
    let to = |t: &Tensor| t.to_device(device).map_err(|e| format!("moving an argument to {device}: {e}"));
    Ok(match v {
        IValue::Tensor(t) => IValue::Tensor(to(t)?),
        IValue::TensorList(ts) => IValue::TensorList(ts.iter().map(to).collect::<Result<_, _>>()?),
        IValue::OptionalTensorList(ts) => {
            IValue::OptionalTensorList(ts.iter().map(|t| t.as_ref().map(to).transpose()).collect::<Result<_, _>>()?)
        }
        // A sample made for the CPU names it (`zeros_like(x, device="cpu")`); PyTorch's OpInfo
        // makes each sample for the device under test, so the device argument moves too.
        IValue::Device(d) if d.is_cpu() => IValue::Device(device),
        other => other.clone(),
    })
}

/// The arguments with every tensor (and every `device="cpu"` argument) moved to `device`.
pub(crate) fn args_on(r: &ResolvedArgs, device: Device) -> Result<ResolvedArgs, String> {
    Ok(ResolvedArgs {
        positional: r.positional.iter().map(|v| value_on(v, device)).collect::<Result<_, _>>()?,
        kwargs: r.kwargs.iter().map(|(k, v)| Ok((k.clone(), value_on(v, device)?))).collect::<Result<_, String>>()?,
    })
}

/// Whether a call on `device` that failed with `e` runs again on the CPU: when the device lacks
/// a kernel, and on `meta` also when the operator needs values (reading one copies out of a
/// meta tensor, a `NotImplemented` error by design, Note [Meta loops]) or makes CPU tensors
/// whatever its inputs' device (a `DeviceMismatch`). Any other error on meta (a shape check
/// that fails where the CPU's passes) is the case's result.
fn falls_back(e: &c10::Error, device: Device) -> bool {
    lacks_device_kernel(e, device)
        || (device.is_meta() && matches!(e, c10::Error::NotImplemented { .. } | c10::Error::DeviceMismatch { .. }))
}

/// Whether every tensor a meta run returned is a meta tensor (an operator that returns CPU
/// tensors for meta inputs did not run on meta, whatever it returned).
fn all_on_meta(values: &[IValue]) -> bool {
    misplaced(values, Device::META).is_none()
}

/// The device of the first returned tensor that is not on `device`, if any.
///
/// Note [Outputs on the device]: on a device other than meta, a call that returns a tensor
/// elsewhere (a composite that computed on the host and returned CPU tensors for CUDA inputs)
/// is a failed case, not a pass and not a fallback: PyTorch's operators return their results
/// on their inputs' device, and a silent device change is a wrong answer. On meta such a call
/// runs again on the CPU (meta has no values to compute from, Note [Meta loops]).
pub(crate) fn misplaced(values: &[IValue], device: Device) -> Option<Device> {
    values.iter().find_map(|v| match v {
        IValue::Tensor(t) => (t.device() != device).then(|| t.device()),
        IValue::TensorList(ts) => ts.iter().map(Tensor::device).find(|&d| d != device),
        IValue::OptionalTensorList(ts) => ts.iter().flatten().map(Tensor::device).find(|&d| d != device),
        IValue::Tuple(vs) => misplaced(vs, device),
        _ => None,
    })
}

/// The error of a device run whose outputs are not all on `device` (Note [Outputs on the device]).
/// A call with neither tensor arguments nor a device argument (a factory with no `device=`)
/// makes CPU tensors, as PyTorch's.
fn check_placement(values: &[IValue], args: &ResolvedArgs, device: Device) -> Result<(), String> {
    let has_tensor = |v: &IValue| match v {
        IValue::Tensor(_) => true,
        IValue::TensorList(ts) => !ts.is_empty(),
        IValue::OptionalTensorList(ts) => ts.iter().any(Option::is_some),
        IValue::Device(d) => *d == device,
        _ => false,
    };
    if !args.positional.iter().chain(args.kwargs.iter().map(|(_, v)| v)).any(has_tensor) {
        return Ok(());
    }
    match misplaced(values, device) {
        Some(other) if !device.is_meta() && !device.is_cpu() => {
            Err(format!("the inputs were on {device}, but an output is on {other}"))
        }
        _ => Ok(()),
    }
}

/// Whether a call on a device failed only because the device lacks a kernel (for the operator,
/// one it calls, or the dtype): the case then runs on the CPU.
pub(crate) fn lacks_device_kernel(e: &c10::Error, device: Device) -> bool {
    let name = device.ty.name();
    match e {
        c10::Error::MissingKernel { key, .. } => key.to_lowercase().contains(name),
        c10::Error::NotImplemented { msg, .. } => msg.contains(&format!("there is no {name} kernel")),
        c10::Error::UnsupportedDtype { .. } => true,
        _ => false,
    }
}

/// What sent a case back to the CPU, for the `fallbacks:` line: the operator without a kernel.
fn fallback_reason(e: &c10::Error) -> String {
    match e {
        c10::Error::MissingKernel { op, .. } => op.clone(),
        c10::Error::UnsupportedDtype { op, dtype } => format!("{op} for {dtype:?}"),
        other => one_line(&other.to_string()).chars().take(80).collect(),
    }
}

/// Looks up the operator, builds the stack, calls, and checks the returns against the expected
/// tensors, or that the call failed for an `expect_error` case (then `Ok(None)`). Returns the
/// resolved arguments and the number of returned values for the gradient check.
fn check_values(
    case: &Case,
    store: &TensorStore<'_>,
    device: Device,
    placement: &mut Placement,
) -> Result<Option<(ResolvedArgs, usize)>, String> {
    let load = |key: &str, noncontig: bool| store.tensor(key, noncontig);
    if let Some(g) = &case.graph {
        let mut resolved = ResolvedArgs { positional: graph::inputs(&case.args, &load)?, kwargs: Vec::new() };
        let mut result = None;
        if !device.is_cpu() {
            let moved = args_on(&resolved, device)?;
            match graph::run(g, &moved.positional, &load) {
                Err(grad::GradError::Call(e)) if falls_back(&e, device) => {
                    *placement = Placement::Fallback(fallback_reason(&e))
                }
                Ok(values) if device.is_meta() && !all_on_meta(&values) => {
                    *placement = Placement::Fallback("outputs off meta".into())
                }
                r => {
                    result = Some(r);
                    if !device.is_meta() {
                        // Meta tensors have no values to differentiate: the gradient check
                        // runs on the CPU arguments.
                        resolved = moved;
                    }
                }
            }
        }
        let result = result.unwrap_or_else(|| graph::run(g, &resolved.positional, &load));
        if case.expect_error {
            return match result {
                Ok(_) => Err("expected an error, but the call succeeded".to_string()),
                Err(_) => Ok(None),
            };
        }
        let returned = result.map_err(|e| e.to_string())?;
        if *placement == Placement::Device {
            check_placement(&returned, &resolved, device)?;
        }
        if let Some(outputs) = &case.outputs {
            check_outputs(case, outputs, &returned, store)?;
        }
        return Ok(Some((resolved, returned.len())));
    }
    let (op, schema) = aten::dispatcher().find_schema(&case.op).map_err(|e| e.to_string())?;
    let mut resolved = resolve_args(&schema, &case.args, &case.kwargs, &load)?;
    let mut attempt = None;
    if !device.is_cpu() {
        let moved = args_on(&resolved, device)?;
        let mut stack = fill_stack(&schema, moved.clone())?;
        match op.call_boxed(&mut stack) {
            Err(e) if falls_back(&e, device) => *placement = Placement::Fallback(fallback_reason(&e)),
            Ok(()) if device.is_meta() && !all_on_meta(&stack) => {
                *placement = Placement::Fallback("outputs off meta".into())
            }
            result => {
                if !device.is_meta() {
                    resolved = moved; // (meta: as for graphs above)
                }
                attempt = Some((stack, result));
            }
        }
    }
    let (stack, result) = match attempt {
        Some(a) => a,
        None => {
            let mut stack = fill_stack(&schema, resolved.clone())?;
            let result = op.call_boxed(&mut stack);
            (stack, result)
        }
    };
    if case.expect_error {
        return match result {
            Ok(()) => Err("expected an error, but the call succeeded".to_string()),
            Err(_) => Ok(None),
        };
    }
    result.map_err(|e| e.to_string())?;
    if stack.len() != schema.returns.len() {
        return Err(format!(
            "the kernel left {} values on the stack, but {schema} has {} returns",
            stack.len(),
            schema.returns.len()
        ));
    }
    let returned = flatten_returns(stack);
    if *placement == Placement::Device {
        check_placement(&returned, &resolved, device)?;
    }
    if let Some(outputs) = &case.outputs {
        check_outputs(case, outputs, &returned, store)?;
    }
    Ok(Some((resolved, returned.len())))
}

/// Compares the returned values with the expected tensors named by `outputs`.
fn check_outputs(
    case: &Case,
    outputs: &[Option<String>],
    returned: &[IValue],
    store: &TensorStore<'_>,
) -> Result<(), String> {
    if returned.len() != outputs.len() {
        return Err(format!("returned {} outputs, expected {}", returned.len(), outputs.len()));
    }
    let tol = Tolerance { rtol: case.rtol, atol: case.atol };
    // The flips of gauge outputs, for the outputs that follow them.
    let mut flips: Vec<(usize, Tensor)> = Vec::new();
    for (i, (value, key)) in returned.iter().zip(outputs).enumerate() {
        let Some(key) = key else { continue };
        let Some(ours) = value_as_tensor(value) else {
            return Err(format!("output {i}: returned {}, expected a tensor", value.kind()));
        };
        let expected = store.tensor(key, false)?;
        if ours.device().is_meta() || case.compare == cases::Compare::Meta {
            // Random results, and results on the meta device (which have no values): what is
            // checked is the shape and the dtype.
            if ours.sizes() != expected.sizes() || ours.dtype() != expected.dtype() {
                return Err(format!(
                    "output {i}: {}{:?}, expected {}{:?}",
                    ours.dtype().name(),
                    ours.sizes(),
                    expected.dtype().name(),
                    expected.sizes()
                ));
            }
            continue;
        }
        let ours = ours.cpu().map_err(|e| format!("output {i}: copying it to the CPU: {e}"))?;
        if let Some(spec) = case.gauge.iter().find(|g| g.output == i) {
            let followed = spec.follow.and_then(|f| flips.iter().find(|(j, _)| *j == f).map(|(_, t)| t));
            let (ours, expected, f) =
                gauge::align(&ours, &expected, spec, followed).map_err(|e| format!("output {i}: {e}"))?;
            compare_tensors(&ours, &expected, tol)
                .map_err(|e| format!("output {i} (up to the sign of each vector): {e}"))?;
            flips.push((i, f));
            continue;
        }
        compare_tensors(&ours, &expected, tol).map_err(|e| format!("output {i}: {e}"))?;
    }
    Ok(())
}
