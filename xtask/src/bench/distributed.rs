//! `cargo xtask bench W8`: the distributed workloads, which need several processes. Ours run
//! under `mpirun -np 2` on MPI and under our `launch` binary on Gloo
//! (`distributed/examples/w8.rs`, built here with the `mpi` and `gloo` features), PyTorch's
//! under its own launcher on the gloo backend (`bench/pytorch_distributed.py`), and the engine
//! alone (Open MPI's all-reduce without our process group) under `mpirun` too. Each round runs
//! them one after the other, never at the same time, each a launch of its own; a row shows
//! each side's fastest launch (Note [W8 launch modes]). The `W8.gloo_*` rows compare ours on
//! Gloo with PyTorch on Gloo (the same PyTorch measurement as the MPI rows').
//!
//! Note [W8 launch modes]: on the 2-core VM of BENCHMARKS.md, a launch of two ranks lands in
//! one of two speed modes and keeps it for its whole life: a 1 MB all-reduce then takes about
//! 185 µs or about 490 µs, for Open MPI called directly just as for our process group, with
//! or without binding the ranks to cores (six launches of each side, one after the other:
//! ours 183/532/509/200/464/490 µs, Open MPI alone 186/482/476/236/186/196 µs). The mode is
//! the machine's (the 1 MB buffers are twice the size of a core's L2 cache, so where their
//! pages land matters), not the program's. A side's median launch would compare modes, not
//! programs; its fastest launch compares the programs in the same (fast) mode. W8 therefore
//! runs at least six launches per side, so that each side's fastest is the fast mode unless
//! six in a row were slow.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, ExitCode};

/// Every rank prints one `{"id", "median_s", "iters"}` line per workload on rank 0.
fn parse(out: &str) -> BTreeMap<String, f64> {
    out.lines()
        .map(|l| if l.starts_with("[rank ") { l.split_once("] ").map_or(l, |(_, rest)| rest) } else { l })
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
        .filter_map(|v| Some((v.get("id")?.as_str()?.to_string(), v.get("median_s")?.as_f64()?)))
        .collect()
}

fn run_ranks(cmd: &mut Command, what: &str) -> Result<BTreeMap<String, f64>, String> {
    let out = cmd.output().map_err(|e| format!("cannot start {what}: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!("{what} failed:\n{text}{}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(parse(&text))
}

fn mpirun(root: &Path, extra: &[&str], time: f64) -> Command {
    let mut c = Command::new("mpirun");
    c.args(["-np", "2", "--oversubscribe", "--bind-to", "none"])
        .arg(root.join("target/release/examples/w8"))
        .args(extra)
        .args(["--time", &time.to_string()])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .current_dir(root);
    c
}

/// PyTorch's row for our row `id`: PyTorch runs on Gloo, the reference of the MPI rows
/// (`W8.allreduce_1M`) and of the Gloo rows (`W8.gloo_allreduce_1M`) alike.
fn reference(id: &str) -> String {
    id.replace("W8.gloo_", "W8.")
}

/// Launches per side at least (Note [W8 launch modes]).
const MIN_LAUNCHES: usize = 6;

/// A side's fastest launch (Note [W8 launch modes]).
fn fastest(v: &[f64]) -> Option<f64> {
    v.iter().copied().min_by(|a, b| a.total_cmp(b))
}

/// The slowest launch, shown beside the fastest so the spread stays visible.
fn slowest(v: &[f64]) -> Option<f64> {
    v.iter().copied().max_by(|a, b| a.total_cmp(b))
}

fn seconds(s: Option<f64>) -> String {
    match s {
        Some(s) if s < 1e-3 => format!("{:.1} µs", s * 1e6),
        Some(s) => format!("{:.2} ms", s * 1e3),
        None => "n/a".into(),
    }
}

/// Runs W8: `time` seconds of measurement per workload and side, in `rounds` rounds.
pub fn run(root: &Path, time: f64, rounds: usize, no_pytorch: bool) -> Result<ExitCode, String> {
    if Command::new("mpirun").arg("--version").output().is_err() {
        return Err("W8 needs mpirun (Debian: openmpi-bin libopenmpi-dev)".into());
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--release", "-p", "distributed", "--features", "mpi,gloo", "--example", "w8"])
        .args(["--bin", "launch"])
        .current_dir(root)
        .status()
        .map_err(|e| format!("building the W8 ranks: {e}"))?;
    if !status.success() {
        return Err("building distributed/examples/w8.rs with the mpi and gloo features failed".into());
    }
    // From bench/, so that the workspace's `torch/` directory does not shadow the package.
    let bench_dir = root.join("bench");
    let torch = !no_pytorch
        && Command::new("python3")
            .args(["-c", "import torch.distributed as d; assert d.is_gloo_available()"])
            .current_dir(&bench_dir)
            .output()
            .is_ok_and(|o| o.status.success());
    if !torch {
        eprintln!("PyTorch with gloo not importable from python3: the reference column is n/a");
    }
    let rounds = rounds.max(MIN_LAUNCHES);
    let per_round = time / rounds as f64;
    let (mut ours, mut theirs, mut engine) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    let push = |into: &mut BTreeMap<String, Vec<f64>>, got: BTreeMap<String, f64>| {
        for (k, v) in got {
            into.entry(k).or_default().push(v);
        }
    };
    for round in 0..rounds {
        eprintln!("W8 round {}/{rounds}: ours, PyTorch, Open MPI alone", round + 1);
        push(&mut ours, run_ranks(&mut mpirun(root, &[], per_round), "mpirun w8")?);
        let mut gloo = Command::new(root.join("target/release/launch"));
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_or(29517, |a| a.port());
        gloo.args(["--nproc-per-node", "2", "--master-port", &port.to_string()])
            .arg(root.join("target/release/examples/w8"))
            .args(["--backend", "gloo", "--time", &per_round.to_string()])
            .current_dir(root);
        // The launcher prefixes every line with `[rank N] ` (`parse` drops it).
        push(&mut ours, run_ranks(&mut gloo, "launch w8 --backend gloo")?);
        if torch {
            let mut py = Command::new("python3");
            py.args(["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "pytorch_distributed.py"])
                .args(["--time", &per_round.to_string()])
                .current_dir(&bench_dir);
            push(&mut theirs, run_ranks(&mut py, "PyTorch's W8")?);
        }
        push(&mut engine, run_ranks(&mut mpirun(root, &["--raw"], per_round), "mpirun w8 --raw")?);
    }
    println!("| workload | ours | PyTorch (gloo) | ratio | Open MPI alone | our overhead |");
    println!("|---|---|---|---|---|---|");
    for (id, v) in &ours {
        let o = fastest(v);
        let t = theirs.get(&reference(id)).and_then(|v| fastest(v));
        let e = engine.get(&format!("{id}.openmpi")).and_then(|v| fastest(v));
        let ratio = o.zip(t).map_or("n/a".into(), |(o, t)| format!("{:.2}", o / t));
        let overhead = o.zip(e).map_or("".into(), |(o, e)| format!("{:+.1}%", 100.0 * (o / e - 1.0)));
        println!("| {id} | {} | {} | {ratio} | {} | {overhead} |", seconds(o), seconds(t), seconds(e));
    }
    println!();
    for (id, v) in &ours {
        let spread = |side: Option<&Vec<f64>>| {
            side.map_or("n/a".into(), |v| format!("{} – {}", seconds(fastest(v)), seconds(slowest(v))))
        };
        println!(
            "{id} launches, fastest – slowest: ours {}, PyTorch {}, Open MPI alone {}",
            spread(Some(v)),
            spread(theirs.get(&reference(id))),
            spread(engine.get(&format!("{id}.openmpi")))
        );
    }
    for (id, v) in &engine {
        if let Some(e) = fastest(v) {
            let bytes = if id.contains("64M") { 64 << 20 } else { 1 << 20 };
            println!("{id}: {:.2} GB/s algorithm bandwidth", bytes as f64 / e / 1e9);
        }
    }
    Ok(ExitCode::SUCCESS)
}
