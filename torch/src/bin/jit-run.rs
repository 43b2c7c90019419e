//! `jit-run`: runs a saved model with no code of its own.
//!
//! ```text
//! cargo run --release -p torch --bin jit-run -- MODEL --input IN.safetensors [--output OUT.safetensors]
//! ```
//!
//! MODEL is an archive written by `ScriptModule::save` or by PyTorch's `torch.jit.save` (of a
//! traced module). The tensors named `input0`, `input1`, ... of IN are the forward's inputs, in
//! order; the outputs (a tuple flattened in order) are written to OUT as `output0`, `output1`,
//! ..., or printed when there is no `--output`. Runs without gradients, as inference.

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: jit-run MODEL --input IN.safetensors [--output OUT.safetensors]";

struct Args {
    model: PathBuf,
    input: PathBuf,
    output: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut model = None;
    let mut input = None;
    let mut output = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--input" | "-i" => input = Some(it.next().ok_or("--input needs a file")?),
            "--output" | "-o" => output = Some(it.next().ok_or("--output needs a file")?),
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
    })
}

fn run(args: &Args) -> c10::Result<()> {
    let module = torch::jit::load(&args.model)?;
    let loaded = torch::serialize::load_file(&args.input)?;
    let inputs: Vec<torch::Tensor> = (0..).map_while(|i| loaded.tensors.get(&format!("input{i}")).cloned()).collect();
    if inputs.len() != module.num_inputs() {
        return Err(c10::Error::invalid(
            "jit-run",
            format!(
                "{} has {} tensors named input0, input1, ...; the model takes {}",
                args.input.display(),
                inputs.len(),
                module.num_inputs()
            ),
        ));
    }
    let _no_grad = torch::no_grad();
    let outputs = module.forward_tensors(&inputs)?;
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
