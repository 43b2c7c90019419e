//! `cargo xtask bench [FILTER] [--threads N] [--json FILE] [--record]`: runs the workloads of
//! `BENCHMARKS.md` on 1 and 2 threads, and the same workloads in PyTorch when `python3` can
//! import `torch`, and prints a table with the ratio. See Note [Bench timing method].

mod distributed;
mod reference;
mod report;
mod stats;
mod workloads;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use report::Row;
use stats::Config;
use workloads::Workload;

/// `cargo xtask` runs the dev build (it shares the test build's artifacts, which keeps CI's
/// compile time down); timings need the release build, so the dev build hands the command over
/// to it, passing the arguments through.
fn rerun_optimized() -> Result<ExitCode, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["run", "--quiet", "--release", "-p", "xtask"])
        // The same backends in the release build (`cargo xtask-cuda bench --device cuda`).
        .args(if cfg!(feature = "cuda") { &["--features", "cuda"][..] } else { &[] })
        .arg("--")
        .args(std::env::args_os().skip(1))
        .current_dir(crate::workspace_root())
        .status()
        .map_err(|e| format!("running the release build of xtask: {e}"))?;
    Ok(if status.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Arguments of `cargo xtask bench`.
#[derive(clap::Args)]
pub struct Args {
    /// Only run workloads whose id contains this string (e.g. `W1`, `add1`), or, after `=`,
    /// the workload with exactly this id (`=W1.add1`).
    pub filter: Option<String>,
    /// Run with this many threads only (default: 1, then 2).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Also write one JSON object per (workload, threads) line to FILE.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Rewrite the results section of BENCHMARKS.md with this run's table and machine.
    #[arg(long)]
    pub record: bool,
    /// Seconds of measurement per workload and thread count (after a 0.2 s warm-up per round).
    #[arg(long, default_value_t = 1.0)]
    pub time: f64,
    /// Rounds per workload and thread count, each ours then PyTorch's for `time / rounds`
    /// seconds; a row shows the median round of each side (Note [Measurement rounds]).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Skip the PyTorch column even if torch is installed.
    #[arg(long)]
    pub no_pytorch: bool,
    /// Time nothing: run each selected workload's body exactly N times on one thread and exit
    /// (Note [Counted iterations]).
    #[arg(long)]
    pub iterations: Option<u64>,
    /// Run the device workloads (C1, W2-W6) on this device (`cuda`, `cuda:N`), with PyTorch on the same
    /// device as the reference (Note [Device workloads]). Needs a GPU (or, for checking and
    /// not for timing, TORCH_CUDA_DRIVER=emulator) and the `cuda` feature (`cargo xtask-cuda`).
    #[arg(long, default_value = "cpu", value_parser = crate::parity::parse_device)]
    pub device: c10::Device,
    /// Time this build even when it is not optimised, instead of handing over to the release
    /// build through cargo (the GPU kit's dev-profile binaries, on a machine without cargo);
    /// the report then says the timings are of unoptimised code.
    #[arg(long)]
    pub this_build: bool,
}

/// Note [Interleaved reference]: this VM's speed drifts with its host's load, by up to 1.9x
/// within minutes (BENCHMARKS.md). When PyTorch ran once after all of our workloads, a row's
/// two medians could be taken a minute apart, in different conditions. So one PyTorch process
/// stays up for the whole run (`pytorch_reference.py --serve`, its start-up and `import torch`
/// paid once) and measures each workload right after we do, on the same thread count, with the
/// same budget. The two never run at the same time: they would share the two cores. That
/// includes the script's start-up: `import torch` keeps a core busy for seconds, and a run
/// that measured during it saw our 2-thread `matmul_1024` at 29 ms instead of 15 (one core
/// left), so the run starts once the script says it is ready.
///
/// Note [Measurement rounds]: on this VM a neighbour on the same physical core can halve our
/// speed for seconds at a time (one run's `W1.add1_grad` samples spread from 289 to 553 ns),
/// so the side measured during such a spell lost the row however the code did. Each row is
/// therefore measured in rounds (three by default), ours then PyTorch's in each, and each side
/// reports its median round: a slow spell now has to cover two rounds of a side to move it,
/// and it then covers the other side's rounds in between as well.
///
/// Note [Counted iterations]: on this VM wall-clock medians of one workload drift by tens of
/// percent between runs (a neighbour on the host), far more than the difference between two
/// ways of writing the same call. `--iterations N` runs each body N times without timing, so
/// that `valgrind --tool=callgrind` can count its instructions, which are repeatable: the
/// count of a run with 2N iterations minus one with N is N iterations' instructions, setup
/// excluded. That is how the `_front` rows were compared with the explicit ones (BENCHMARKS.md).
fn run_counted(selected: &[workloads::Workload], n: u64) -> Result<ExitCode, String> {
    for w in selected {
        let mut body = (w.setup)().map_err(|e| format!("{}: {e}", w.id))?;
        for _ in 0..n {
            body().map_err(|e| format!("{}: {e}", w.id))?;
        }
        println!("{}: {n} iterations", w.id);
    }
    Ok(ExitCode::SUCCESS)
}

/// Note [Python rows]: the P rows time the Python front end (`python/`, `import torchrs as
/// torch`) against PyTorch, both from Python: the same functions of
/// `bench/pytorch_reference.py` run once in PyTorch's process and once in a second process of
/// the same script with `BENCH_TORCH_MODULE=torchrs` (the Python in `TORCHRS_PYTHON`, default
/// `python3`, with the package installed), in rounds as the other rows (Note [Measurement
/// rounds]). The script reports medians only, so a P row's spread columns show its median.
/// When `torchrs` is not installed the P rows are left out with a message, unless the filter
/// asks for them, which is then an error.
const PYTHON_ROWS: [(&str, &str); 3] = [
    ("P1.add1", "a + b of two 1-element f32 tensors, from Python"),
    ("P1.chain100", "50 x (mul, add) on 1-element f32 tensors, sum, backward, from Python"),
    ("P6.mlp_step", "one SGD step of a 784-512-512-10 MLP on a batch of 128, from Python"),
];

fn python_rows(filter: Option<&str>) -> Vec<(&'static str, &'static str)> {
    PYTHON_ROWS
        .into_iter()
        .filter(|(id, _)| {
            filter.is_none_or(|f| match f.strip_prefix('=') {
                Some(exact) => *id == exact,
                None => id.contains(f),
            })
        })
        .collect()
}

/// Measures the P rows (Note [Python rows]).
fn measure_python_rows(
    rows: &mut Vec<Row>,
    selected: &[(&'static str, &'static str)],
    thread_counts: &[usize],
    rounds: usize,
    round_time: f64,
    explicit: bool,
    mut pytorch: Option<&mut reference::Server>,
) -> Result<(), String> {
    let root = crate::workspace_root();
    let Some(ours) = reference::Reference::detect_torchrs(&root) else {
        let msg = "torchrs is not importable from $TORCHRS_PYTHON (default python3): `pip install ./python` first";
        if explicit {
            return Err(format!("the P rows need the Python package: {msg}"));
        }
        eprintln!("{msg}; the P rows are left out");
        return Ok(());
    };
    eprintln!(
        "torchrs {} found: the P rows run bench/pytorch_reference.py with BENCH_TORCH_MODULE=torchrs",
        ours.torch_version
    );
    let mut server = ours.serve()?;
    for &n in thread_counts {
        for &(id, unit) in selected {
            eprint!("{id} ({n} thread{}) ... ", if n == 1 { "" } else { "s" });
            let (mut ours_rounds, mut theirs) = (Vec::new(), Vec::new());
            let mut error = None;
            for _ in 0..rounds {
                match server.median(id, n, round_time, c10::Device::CPU) {
                    Ok(m) => ours_rounds.push(m),
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
                if let Some(p) = pytorch.as_deref_mut() {
                    if let Ok(m) = p.median(id, n, round_time, c10::Device::CPU) {
                        theirs.push(m);
                    }
                }
            }
            let ours = match (error, stats::median_round(ours_rounds, |&m| m)) {
                (Some(e), _) => Err(e),
                (None, Some(m)) => {
                    Ok(stats::Summary { median_s: m, p10_s: m, p90_s: m, min_s: m, samples: rounds, batch: 0 })
                }
                (None, None) => Err("no round was measured".to_string()),
            };
            match &ours {
                Ok(s) => eprintln!("{}", report::format_seconds(s.median_s)),
                Err(e) => eprintln!("error: {e}"),
            }
            let pytorch_median_s = if theirs.len() == rounds { stats::median_round(theirs, |&m| m) } else { None };
            rows.push(Row { id, threads: n, unit_per_iter: unit, ours, pytorch_median_s });
        }
    }
    Ok(())
}

/// Runs the benchmark. Fails if a workload fails or nothing matches the filter.
pub fn run(a: Args) -> Result<ExitCode, String> {
    if !a.device.is_cpu() && !cfg!(feature = "cuda") {
        return crate::rerun_with_cuda();
    }
    if cfg!(debug_assertions) {
        if !a.this_build {
            return rerun_optimized();
        }
        eprintln!("warning: this xtask is the dev build: the timings below are of UNOPTIMISED code (--this-build)");
    }
    if a.filter.as_deref().is_some_and(|f| f.contains("W8")) {
        // Several processes per workload: its own runner (it needs MPI, so only when asked).
        if a.rounds == 0 || !(a.time.is_finite() && a.time > 0.0) {
            return Err("--rounds and --time must be positive".into());
        }
        return distributed::run(&crate::workspace_root(), a.time.max(3.0), a.rounds, a.no_pytorch);
    }
    let mut no_pytorch = a.no_pytorch;
    let all = if a.device.is_cpu() {
        workloads::registry()
    } else {
        crate::parity::check_device(a.device).map_err(|e| {
            format!("{e}\nno usable CUDA device, so there is nothing to time: the CUDA workloads need a GPU")
        })?;
        if std::env::var("TORCH_CUDA_DRIVER").as_deref() == Ok("emulator") {
            eprintln!(
                "warning: {} is the EMULATED device: these timings measure the CPU running the CUDA kernels, \
                 not a GPU; there is no PyTorch reference for it",
                a.device
            );
            no_pytorch = true;
        }
        workloads::device_registry(a.device)
    };
    let selected = workloads::select(all, a.filter.as_deref());
    let python_selected =
        if a.device.is_cpu() && a.iterations.is_none() { python_rows(a.filter.as_deref()) } else { Vec::new() };
    if selected.is_empty() && python_selected.is_empty() {
        let mut ids: Vec<&str> = workloads::registry().iter().map(|w| w.id).collect();
        ids.extend(PYTHON_ROWS.iter().map(|(id, _)| *id));
        return Err(format!("no workload matches {:?}; known: {}", a.filter.unwrap_or_default(), ids.join(", ")));
    }
    if let Some(n) = a.iterations {
        return run_counted(&selected, n);
    }
    let thread_counts = match a.threads {
        Some(0) => return Err("--threads must be at least 1".into()),
        Some(n) => vec![n],
        None => vec![1, 2],
    };
    if !(a.time.is_finite() && a.time >= 0.0) {
        return Err(format!("--time must be a non-negative number of seconds, got {}", a.time));
    }
    if a.rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    let round_time = a.time / a.rounds as f64;
    let cfg = Config::with_budget(round_time);
    let root = crate::workspace_root();
    let reference = if no_pytorch { None } else { reference::Reference::detect(&root) };
    match &reference {
        Some(r) => eprintln!("PyTorch {} found: the reference column runs bench/pytorch_reference.py", r.torch_version),
        None if no_pytorch => {}
        None => eprintln!("PyTorch not importable from python3: the reference column is n/a"),
    }
    let mut server = match &reference {
        Some(r) => match r.serve() {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("warning: PyTorch reference failed to start: {e}");
                None
            }
        },
        None => None,
    };

    let mut rows: Vec<Row> = Vec::new();
    // The rows with the most threads run on this thread with the global pool of that size, as a
    // user's program calls operators (and as PyTorch's reference sets `torch.set_num_threads`);
    // the others inside a pool of their own. (Note [Keeping the pool warm] in aten's `parallel`:
    // only regions started from outside the pool keep its workers spinning.)
    let most = thread_counts.iter().copied().max().unwrap_or(1);
    let global = aten::set_num_threads(most).is_ok();
    for &n in &thread_counts {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| format!("cannot build a {n}-thread pool: {e}"))?;
        for w in &selected {
            eprint!("{} ({n} thread{}) ... ", w.id, if n == 1 { "" } else { "s" });
            let _ = std::io::stderr().flush();
            // On one thread: the workload's body (built once per row) cannot leave it.
            let mut row = || measure_row(w, &cfg, a.rounds, round_time, n, a.device, server.as_mut());
            let (ours, pytorch_median_s) = if global && n == most { row() } else { pool.install(row) };
            rows.push(Row { id: w.id, threads: n, unit_per_iter: w.unit_per_iter, ours, pytorch_median_s });
        }
    }
    if !python_selected.is_empty() {
        // Explicitly asked for when the filter selects only P rows.
        let explicit = selected.is_empty();
        measure_python_rows(
            &mut rows,
            &python_selected,
            &thread_counts,
            a.rounds,
            round_time,
            explicit,
            server.as_mut(),
        )?;
    }
    drop(server);

    let table = report::render_table(&rows);
    println!("{table}");
    for w in &selected {
        println!("{}: one iteration = {}", w.id, w.unit_per_iter);
    }
    for (id, unit) in &python_selected {
        println!("{id}: one iteration = {unit}");
    }

    if let Some(path) = &a.json {
        let mut out = String::new();
        for r in &rows {
            writeln!(out, "{}", report::json_line(r)).expect("writing to a String");
        }
        std::fs::write(path, out).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if a.record {
        let path = root.join("BENCHMARKS.md");
        let torch = reference.as_ref().map(|r| r.torch_version.as_str());
        let section = format!(
            "Recorded by `cargo xtask bench{}{} --record` (median per iteration; lower is better).\n\n{table}\n{}",
            a.filter.as_ref().map_or_else(String::new, |f| format!(" {f}")),
            a.threads.map_or_else(String::new, |n| format!(" --threads {n}")),
            report::machine_description(torch)
        );
        report::record(&path, &section)?;
        eprintln!("recorded in {}", path.display());
    }

    let failed = rows.iter().filter(|r| r.ours.is_err()).count();
    if failed > 0 {
        eprintln!("{failed} measurement(s) failed");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Sets up workload `w` once and measures it in `rounds` rounds on the current (installed)
/// thread pool, each followed by PyTorch's round through `server` (Notes [Measurement rounds]
/// and [Interleaved reference]: right after ours, never concurrently). Returns our median
/// round and PyTorch's median, None if the reference is absent or failed.
fn measure_row(
    w: &Workload,
    cfg: &Config,
    rounds: usize,
    round_time: f64,
    threads: usize,
    device: c10::Device,
    mut server: Option<&mut reference::Server>,
) -> (Result<stats::Summary, String>, Option<f64>) {
    let (mut ours_rounds, mut pytorch_rounds) = (Vec::new(), Vec::new());
    let (mut ours_error, mut pytorch_error) = (None, None);
    let mut body = (w.setup)().map_err(|e| e.to_string());
    for round in 0..rounds {
        if round > 0 {
            eprint!("; ");
        }
        let measured = match &mut body {
            Ok(body) => stats::measure(cfg, &mut **body).map_err(|e| e.to_string()),
            Err(e) => Err(e.clone()),
        };
        match measured {
            Ok(s) => {
                eprint!("{} (k={}, {} samples)", report::format_seconds(s.median_s), s.batch, s.samples);
                ours_rounds.push(s);
            }
            Err(e) => {
                eprint!("error: {e}");
                ours_error = Some(e);
                break;
            }
        }
        if let (Some(server), None) = (server.as_deref_mut(), &pytorch_error) {
            match server.median(w.id, threads, round_time, device) {
                Ok(m) => {
                    eprint!(", PyTorch {}", report::format_seconds(m));
                    pytorch_rounds.push(m);
                }
                Err(e) => {
                    eprint!(", warning: PyTorch reference failed: {e}");
                    pytorch_error = Some(e);
                }
            }
        }
    }
    eprintln!();
    let ours = match (ours_error, stats::median_round(ours_rounds, |s| s.median_s)) {
        (Some(e), _) => Err(e),
        (None, Some(s)) => Ok(s),
        (None, None) => Err("no round was measured".to_string()),
    };
    let pytorch_median_s = if pytorch_error.is_some() { None } else { stats::median_round(pytorch_rounds, |&m| m) };
    (ours, pytorch_median_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_rows_are_selected_by_the_same_filter() {
        let ids = |f| python_rows(f).iter().map(|(id, _)| *id).collect::<Vec<_>>();
        assert_eq!(ids(None), ["P1.add1", "P1.chain100", "P6.mlp_step"]);
        assert_eq!(ids(Some("P1")), ["P1.add1", "P1.chain100"]);
        assert_eq!(ids(Some("=P6.mlp_step")), ["P6.mlp_step"]);
        assert!(ids(Some("W1")).is_empty());
        // Every P row has a twin in the reference script, which both sides run.
        let script = std::fs::read_to_string(crate::workspace_root().join("bench/pytorch_reference.py")).unwrap();
        for (id, _) in PYTHON_ROWS {
            assert!(script.contains(&format!("\"{id}\":")), "{id} is not in bench/pytorch_reference.py");
        }
    }
}
