//! `jit-run`: runs a saved model with no code of its own.
//!
//! ```text
//! cargo run --release -p torch --bin jit-run -- MODEL --input IN.safetensors [--output OUT.safetensors] [--bench N]
//! ```
//!
//! MODEL is an archive written by `ScriptModule::save` or by PyTorch's `torch.jit.save` (of a
//! traced or scripted module). The tensors named `input0`, `input1`, ... of IN are the forward's
//! inputs, in order: an `int`, `float` or `bool` argument reads a 0-dim tensor, and an
//! `Optional` argument with no `inputN` is `None`. The outputs (tuples flattened in order,
//! numbers as 0-dim tensors) are written to OUT as `output0`, `output1`, ..., or printed when
//! there is no `--output`. `--bench N` runs N more timed forwards after the first and prints
//! their median; `--profile` runs one more under the profiler and prints where it went: a row
//! per operator and per interpreter node kind (`prim::Loop`, `prim::If`, builtins), with its
//! count, total and self time and share. Runs without gradients, as inference.

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: jit-run MODEL --input IN.safetensors [--output OUT.safetensors] [--bench N] [--profile]";

struct Args {
    model: PathBuf,
    input: PathBuf,
    output: Option<PathBuf>,
    bench: Option<usize>,
    profile: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut model = None;
    let mut input = None;
    let mut output = None;
    let mut bench = None;
    let mut profile = false;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--input" | "-i" => input = Some(it.next().ok_or("--input needs a file")?),
            "--output" | "-o" => output = Some(it.next().ok_or("--output needs a file")?),
            "--bench" => {
                let n = it.next().ok_or("--bench needs a count")?;
                bench = Some(n.parse().map_err(|_| format!("--bench needs a count, got {n:?}"))?);
            }
            "--profile" => profile = true,
            "-h" | "--help" => return Err(USAGE.to_string()),
            flag if flag.starts_with('-') => return Err(format!("unknown option {flag}\n{USAGE}")),
            path if model.is_none() => model = Some(path.to_string()),
            extra => return Err(format!("unexpected argument {extra}\n{USAGE}")),
        }
    }
    Ok(Args {
        model: model.ok_or(USAGE)?.into(),
        input: input.ok_or_else(|| format!("--input is required\n{USAGE}"))?.into(),
        output: output.map(PathBuf::from),
        bench,
        profile,
    })
}

fn run(args: &Args) -> c10::Result<()> {
    let module = torch::jit::load(&args.model)?;
    let loaded = torch::serialize::load_file(&args.input)?;
    let count = (0..).take_while(|i| loaded.tensors.get(&format!("input{i}")).is_some()).count();
    if count > module.num_inputs() {
        return Err(c10::Error::invalid(
            "jit-run",
            format!(
                "{} has {count} tensors named input0, input1, ...; the model takes {}",
                args.input.display(),
                module.num_inputs()
            ),
        ));
    }
    let inputs = module
        .inputs_from(|i| loaded.tensors.get(&format!("input{i}")).cloned())
        .map_err(|e| c10::Error::invalid("jit-run", format!("{}: {e}", args.input.display())))?;
    let _no_grad = torch::no_grad();
    let values = module.forward_values(&inputs)?;
    if let Some(n) = args.bench {
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            let start = std::time::Instant::now();
            module.forward_values(&inputs)?;
            times.push(start.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        if let Some(m) = times.get(n / 2) {
            eprintln!("jit-run: median of {n} runs: {:.3} ms", m * 1e3);
        }
    }
    if args.profile {
        let prof = torch::profiler::profile().start();
        module.forward_values(&inputs)?;
        let p = prof.stop();
        eprintln!("{}", p.key_averages().table("self_cpu_time_total", 0));
    }
    let mut outputs = Vec::new();
    for v in values {
        torch::jit::module::flatten(v, &mut outputs)?;
    }
    let named: Vec<(String, torch::Tensor)> = outputs
        .into_iter()
        .enumerate()
        .map(|(i, t)| (format!("output{i}"), t.contiguous().call()))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|(n, t)| t.map(|t| (n, t)))
        .collect::<c10::Result<_>>()?;
    match &args.output {
        Some(path) => torch::serialize::save_file(named.iter().map(|(n, t)| (n.as_str(), t)), None, path),
        None => {
            for (n, t) in &named {
                println!("{n}: {t}");
            }
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("jit-run: {e}");
            ExitCode::FAILURE
        }
    }
}
