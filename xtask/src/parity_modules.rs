//! `cargo xtask parity-modules DIR`: the module and training-trajectory parity cases of
//! `DIR/modules.json` + `DIR/modules.safetensors` (format: `DIR/MODULES.md`).
//!
//! Each module case builds the `nn` layer from PyTorch's constructor kwargs, loads its state
//! under the PyTorch state_dict names, runs the forward pass in the case's mode, and compares
//! outputs, the buffers after the forward, and the gradients of parameters and inputs for the
//! given upstream gradients. Each trajectory replays eight optimizer steps and compares the
//! losses and the final state_dict. Failures print `FAIL <id>: <reason>`; the last line is
//! `modules: N passed, M failed`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aten::{ops, Tensor};
use autograd::TensorAutograd;
use c10::Result as TResult;
use nn::optim::Optimizer;
use nn::{Forward, Module, StateDict};
use serde_json::Value;

use crate::parity::compare::{compare_tensors, Tolerance};
use crate::parity::panics;

/// Arguments of `cargo xtask parity-modules`.
#[derive(clap::Args)]
pub struct Args {
    /// Directory holding modules.json and modules.safetensors.
    pub dir: PathBuf,
    /// Runs only the cases whose id contains this string.
    #[arg(long)]
    pub filter: Option<String>,
}

/// Runs the cases; the exit code is a failure if any case failed.
pub fn run(args: Args) -> Result<ExitCode, String> {
    let mut out = std::io::stdout().lock();
    let (passed, failed) = run_dir(&args.dir, args.filter.as_deref(), &mut out)?;
    Ok(if failed == 0 && passed > 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Runs every selected case of `dir`, writing `FAIL` lines and the summary to `out`; returns
/// `(passed, failed)`.
pub fn run_dir(dir: &Path, filter: Option<&str>, out: &mut dyn Write) -> Result<(usize, usize), String> {
    let json_path = dir.join("modules.json");
    let text = std::fs::read_to_string(&json_path).map_err(|e| format!("cannot read {}: {e}", json_path.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", json_path.display()))?;
    let store = nn::serialize::load_file(dir.join("modules.safetensors")).map_err(|e| e.to_string())?.tensors;
    let (mut passed, mut failed) = (0, 0);
    let _quiet = panics::QuietPanics::install();
    let empty = Vec::new();
    let modules = doc["modules"].as_array().unwrap_or(&empty);
    let trajectories = doc["trajectories"].as_array().unwrap_or(&empty);
    let cases = modules.iter().map(|c| (c, false)).chain(trajectories.iter().map(|c| (c, true)));
    for (case, is_trajectory) in cases {
        let id = case["id"].as_str().unwrap_or("?").to_string();
        if filter.is_some_and(|f| !id.contains(f)) {
            continue;
        }
        let r = panics::catch(|| if is_trajectory { run_trajectory(case, &store) } else { run_module(case, &store) });
        match r {
            Ok(()) => passed += 1,
            Err(reason) => {
                failed += 1;
                writeln!(out, "FAIL {id}: {}", reason.lines().map(str::trim).collect::<Vec<_>>().join(" | "))
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    writeln!(out, "modules: {passed} passed, {failed} failed").map_err(|e| e.to_string())?;
    Ok((passed, failed))
}

fn s<T>(r: TResult<T>) -> Result<T, String> {
    r.map_err(|e| e.to_string())
}

fn get(store: &StateDict, key: &str) -> Result<Tensor, String> {
    store.get(key).cloned().ok_or_else(|| format!("modules.safetensors has no tensor '{key}'"))
}

fn tolerance(case: &Value) -> Tolerance {
    Tolerance { rtol: case["rtol"].as_f64().unwrap_or(1e-4), atol: case["atol"].as_f64().unwrap_or(1e-5) }
}

// ---- building modules from PyTorch kwargs ------------------------------------------------------

fn kw_i(cfg: &Value, k: &str, default: i64) -> i64 {
    cfg.get(k).and_then(Value::as_i64).unwrap_or(default)
}
fn kw_f(cfg: &Value, k: &str, default: f64) -> f64 {
    cfg.get(k).and_then(Value::as_f64).unwrap_or(default)
}
fn kw_b(cfg: &Value, k: &str, default: bool) -> bool {
    cfg.get(k).and_then(Value::as_bool).unwrap_or(default)
}
fn kw_ints(cfg: &Value, k: &str, default: &[i64]) -> Vec<i64> {
    match cfg.get(k) {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_i64).collect(),
        Some(v) => v.as_i64().map(|x| vec![x]).unwrap_or_else(|| default.to_vec()),
        None => default.to_vec(),
    }
}

/// A module under test: runs its forward on the case's inputs, returning the flattened outputs.
trait ParityModule {
    fn module(&mut self) -> &mut dyn Module;
    fn run(&self, inputs: &[Tensor]) -> TResult<Vec<Tensor>>;
}

struct Single<M: Forward>(M);

impl<M: Forward> ParityModule for Single<M> {
    fn module(&mut self) -> &mut dyn Module {
        &mut self.0
    }
    fn run(&self, inputs: &[Tensor]) -> TResult<Vec<Tensor>> {
        Ok(vec![self.0.call(&inputs[0])?])
    }
}

struct Lstm(nn::LSTM);
impl ParityModule for Lstm {
    fn module(&mut self) -> &mut dyn Module {
        &mut self.0
    }
    fn run(&self, inputs: &[Tensor]) -> TResult<Vec<Tensor>> {
        let (out, (h, c)) = self.0.forward(&inputs[0], None)?;
        Ok(vec![out, h, c])
    }
}

struct Gru(nn::GRU);
impl ParityModule for Gru {
    fn module(&mut self) -> &mut dyn Module {
        &mut self.0
    }
    fn run(&self, inputs: &[Tensor]) -> TResult<Vec<Tensor>> {
        let (out, h) = self.0.forward(&inputs[0], None)?;
        Ok(vec![out, h])
    }
}

struct Rnn(nn::RNN);
impl ParityModule for Rnn {
    fn module(&mut self) -> &mut dyn Module {
        &mut self.0
    }
    fn run(&self, inputs: &[Tensor]) -> TResult<Vec<Tensor>> {
        let (out, h) = self.0.forward(&inputs[0], None)?;
        Ok(vec![out, h])
    }
}

struct Mha(nn::MultiheadAttention);
impl ParityModule for Mha {
    fn module(&mut self) -> &mut dyn Module {
        &mut self.0
    }
    fn run(&self, inputs: &[Tensor]) -> TResult<Vec<Tensor>> {
        let (out, w) = self.0.forward(&inputs[0], &inputs[1], &inputs[2])?;
        let mut v = vec![out];
        v.extend(w);
        Ok(v)
    }
}

fn build(module: &str, cfg: &Value) -> Result<Box<dyn ParityModule>, String> {
    use nn::ConvOptions;
    let conv_opts = |cfg: &Value| {
        ConvOptions::default()
            .stride(kw_ints(cfg, "stride", &[1]))
            .padding(kw_ints(cfg, "padding", &[0]))
            .output_padding(kw_ints(cfg, "output_padding", &[0]))
            .dilation(kw_ints(cfg, "dilation", &[1]))
            .groups(kw_i(cfg, "groups", 1))
            .bias(kw_b(cfg, "bias", true))
    };
    let io =
        |cfg: &Value| (kw_i(cfg, "in_channels", 0), kw_i(cfg, "out_channels", 0), kw_ints(cfg, "kernel_size", &[1]));
    let m: Box<dyn ParityModule> = match module {
        "Linear" => Box::new(Single(s(nn::Linear::with_bias(
            kw_i(cfg, "in_features", 0),
            kw_i(cfg, "out_features", 0),
            kw_b(cfg, "bias", true),
        ))?)),
        "Conv1d" => {
            let (i, o, k) = io(cfg);
            Box::new(Single(s(nn::Conv1d::with_options(i, o, &k, conv_opts(cfg)))?))
        }
        "Conv2d" => {
            let (i, o, k) = io(cfg);
            Box::new(Single(s(nn::Conv2d::with_options(i, o, &k, conv_opts(cfg)))?))
        }
        "ConvTranspose2d" => {
            let (i, o, k) = io(cfg);
            Box::new(Single(s(nn::ConvTranspose2d::with_options(i, o, &k, conv_opts(cfg)))?))
        }
        "BatchNorm1d" | "BatchNorm2d" => {
            let n = kw_i(cfg, "num_features", 0);
            let eps = kw_f(cfg, "eps", 1e-5);
            let momentum = Some(kw_f(cfg, "momentum", 0.1));
            let affine = kw_b(cfg, "affine", true);
            let track = kw_b(cfg, "track_running_stats", true);
            if module == "BatchNorm1d" {
                Box::new(Single(s(nn::BatchNorm1d::with_options(n, eps, momentum, affine, track))?))
            } else {
                Box::new(Single(s(nn::BatchNorm2d::with_options(n, eps, momentum, affine, track))?))
            }
        }
        "LayerNorm" => Box::new(Single(s(nn::LayerNorm::with_options(
            &kw_ints(cfg, "normalized_shape", &[]),
            kw_f(cfg, "eps", 1e-5),
            kw_b(cfg, "elementwise_affine", true),
            kw_b(cfg, "bias", true),
        ))?)),
        "GroupNorm" => Box::new(Single(s(nn::GroupNorm::with_options(
            kw_i(cfg, "num_groups", 1),
            kw_i(cfg, "num_channels", 0),
            kw_f(cfg, "eps", 1e-5),
            kw_b(cfg, "affine", true),
        ))?)),
        "Embedding" => Box::new(Single(s(nn::Embedding::with_options(
            kw_i(cfg, "num_embeddings", 0),
            kw_i(cfg, "embedding_dim", 0),
            cfg.get("padding_idx").and_then(Value::as_i64),
            false,
        ))?)),
        "LSTM" => Box::new(Lstm(s(nn::LSTM::with_options(
            kw_i(cfg, "input_size", 0),
            kw_i(cfg, "hidden_size", 0),
            &cfg_rnn(cfg),
        ))?)),
        "GRU" => Box::new(Gru(s(nn::GRU::with_options(
            kw_i(cfg, "input_size", 0),
            kw_i(cfg, "hidden_size", 0),
            &cfg_rnn(cfg),
        ))?)),
        "RNN" => Box::new(Rnn(s(nn::RNN::with_options(
            kw_i(cfg, "input_size", 0),
            kw_i(cfg, "hidden_size", 0),
            &cfg_rnn(cfg),
        ))?)),
        "MultiheadAttention" => Box::new(Mha(s(nn::MultiheadAttention::with_options(
            kw_i(cfg, "embed_dim", 0),
            kw_i(cfg, "num_heads", 1),
            &nn::MultiheadAttentionOptions {
                dropout: kw_f(cfg, "dropout", 0.0),
                bias: kw_b(cfg, "bias", true),
                add_bias_kv: kw_b(cfg, "add_bias_kv", false),
                add_zero_attn: kw_b(cfg, "add_zero_attn", false),
                kdim: cfg.get("kdim").and_then(Value::as_i64),
                vdim: cfg.get("vdim").and_then(Value::as_i64),
                batch_first: kw_b(cfg, "batch_first", false),
            },
        ))?)),
        "TransformerEncoderLayer" => {
            let activation = s(nn::TransformerActivation::from_name(
                cfg.get("activation").and_then(Value::as_str).unwrap_or("relu"),
            ))?;
            let opts = nn::TransformerLayerOptions {
                dim_feedforward: kw_i(cfg, "dim_feedforward", 2048),
                dropout: kw_f(cfg, "dropout", 0.1),
                activation,
                layer_norm_eps: kw_f(cfg, "layer_norm_eps", 1e-5),
                batch_first: kw_b(cfg, "batch_first", false),
                norm_first: kw_b(cfg, "norm_first", false),
                bias: kw_b(cfg, "bias", true),
            };
            Box::new(Single(s(nn::TransformerEncoderLayer::with_options(
                kw_i(cfg, "d_model", 0),
                kw_i(cfg, "nhead", 1),
                &opts,
            ))?))
        }
        "MaxPool2d" => {
            let k = kw_ints(cfg, "kernel_size", &[1]);
            let stride = cfg.get("stride").map(|_| kw_ints(cfg, "stride", &k));
            Box::new(Single(s(nn::MaxPool2d::with_options(
                &k,
                stride.as_deref(),
                &kw_ints(cfg, "padding", &[0]),
                &kw_ints(cfg, "dilation", &[1]),
                kw_b(cfg, "ceil_mode", false),
            ))?))
        }
        "Dropout" => Box::new(Single(s(nn::Dropout::new(kw_f(cfg, "p", 0.5)))?)),
        "GELU" => Box::new(Single(s(nn::GELU::with_approximate(
            cfg.get("approximate").and_then(Value::as_str).unwrap_or("none"),
        ))?)),
        "Flatten" => Box::new(Single(nn::Flatten::with(kw_i(cfg, "start_dim", 1), kw_i(cfg, "end_dim", -1)))),
        other => return Err(format!("no builder for module {other}")),
    };
    Ok(m)
}

fn cfg_rnn(cfg: &Value) -> nn::RNNOptions {
    nn::RNNOptions {
        num_layers: kw_i(cfg, "num_layers", 1),
        nonlinearity: cfg.get("nonlinearity").and_then(Value::as_str).unwrap_or("tanh").to_string(),
        bias: kw_b(cfg, "bias", true),
        batch_first: kw_b(cfg, "batch_first", false),
        dropout: kw_f(cfg, "dropout", 0.0),
        bidirectional: kw_b(cfg, "bidirectional", false),
        proj_size: kw_i(cfg, "proj_size", 0),
    }
}

fn keys(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect()).unwrap_or_default()
}

fn run_module(case: &Value, store: &StateDict) -> Result<(), String> {
    let tol = tolerance(case);
    let gtol = Tolerance { rtol: tol.rtol * 10.0, atol: tol.atol * 10.0 };
    let module = case["module"].as_str().ok_or("case has no module")?;
    let mut m = build(module, &case["config"])?;
    let mut state = StateDict::new();
    if let Some(map) = case["state"].as_object() {
        for (name, key) in map {
            state.insert(name.clone(), get(store, key.as_str().unwrap_or_default())?);
        }
    }
    s(m.module().load_state_dict(&state, true))?;
    m.module().train(case["mode"].as_str() != Some("eval"));
    let inputs: Vec<Tensor> = keys(&case["inputs"])
        .iter()
        .map(|k| {
            let t = get(store, k)?;
            if t.is_floating_point() {
                s(t.requires_grad_(true))
            } else {
                Ok(t)
            }
        })
        .collect::<Result<_, _>>()?;
    let outputs = s(m.run(&inputs))?;
    let expected = keys(&case["outputs"]);
    if outputs.len() != expected.len() {
        return Err(format!("{} outputs, expected {}", outputs.len(), expected.len()));
    }
    for (i, (o, k)) in outputs.iter().zip(&expected).enumerate() {
        compare_tensors(&o.detach(), &get(store, k)?, tol).map_err(|e| format!("output {i}: {e}"))?;
    }
    if let Some(buffers) = case["buffers_after"].as_object() {
        let named = m.module().named_buffers();
        for (name, key) in buffers {
            let ours = named
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| t.clone())
                .ok_or_else(|| format!("no buffer {name}"))?;
            compare_tensors(&ours, &get(store, key.as_str().unwrap_or_default())?, tol)
                .map_err(|e| format!("buffer {name}: {e}"))?;
        }
    }
    let grad = &case["grad"];
    if grad.is_null() {
        return Ok(());
    }
    // Backward of sum(out_i * gout_i) gives each gradient for the upstream gradients gout_i.
    let gouts = keys(&grad["grad_outputs"]);
    let mut total: Option<Tensor> = None;
    for (o, k) in outputs.iter().zip(&gouts) {
        if !o.requires_grad() {
            continue;
        }
        let term = s(o.mul(&get(store, k)?).and_then(|t| t.sum()))?;
        total = Some(match total {
            Some(t) => s(t.add(&term))?,
            None => term,
        });
    }
    let total = total.ok_or("no output requires grad")?;
    s(total.backward())?;
    let params = m.module().named_parameters();
    if let Some(pg) = grad["params"].as_object() {
        for (name, key) in pg {
            let p = params
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, p)| p.clone())
                .ok_or_else(|| format!("no parameter {name}"))?;
            let g = p.grad().ok_or_else(|| format!("parameter {name} has no grad"))?;
            compare_tensors(&g, &get(store, key.as_str().unwrap_or_default())?, gtol)
                .map_err(|e| format!("grad of {name}: {e}"))?;
        }
    }
    let float_inputs: Vec<&Tensor> = inputs.iter().filter(|t| t.is_floating_point()).collect();
    for (i, k) in keys(&grad["inputs"]).iter().enumerate() {
        let x = float_inputs.get(i).ok_or_else(|| format!("no floating input {i}"))?;
        let g = x.grad().ok_or_else(|| format!("input {i} has no grad"))?;
        compare_tensors(&g, &get(store, k)?, gtol).map_err(|e| format!("grad of input {i}: {e}"))?;
    }
    Ok(())
}

// ---- trajectories ------------------------------------------------------------------------------

#[derive(nn::Module)]
struct Mlp {
    net: nn::Sequential,
}

impl Forward for Mlp {
    fn forward(&self, x: &Tensor) -> TResult<Tensor> {
        self.net.call(x)
    }
}

#[derive(nn::Module)]
struct LeNet {
    conv1: nn::Conv2d,
    conv2: nn::Conv2d,
    fc1: nn::Linear,
    fc2: nn::Linear,
    fc3: nn::Linear,
}

impl Forward for LeNet {
    fn forward(&self, x: &Tensor) -> TResult<Tensor> {
        let pool = |t: Tensor| ops::max_pool2d(&t, &[2, 2], &[2, 2], &[0, 0], &[1, 1], false);
        let x = pool(self.conv1.call(x)?.relu()?)?;
        let x = pool(self.conv2.call(&x)?.relu()?)?;
        let x = ops::flatten(&x, 1, -1)?;
        let x = self.fc1.call(&x)?.relu()?;
        let x = self.fc2.call(&x)?.relu()?;
        self.fc3.call(&x)
    }
}

fn build_model(name: &str) -> Result<Box<dyn Forward>, String> {
    Ok(match name {
        "MLP" => Box::new(Mlp {
            net: nn::Sequential::new()
                .add(s(nn::Linear::new(20, 32))?)
                .add(nn::ReLU::new())
                .add(s(nn::Linear::new(32, 32))?)
                .add(nn::Tanh::new())
                .add(s(nn::Linear::new(32, 5))?),
        }),
        "LeNet" => Box::new(LeNet {
            conv1: s(nn::Conv2d::with_options(1, 6, &[5], nn::ConvOptions::default().padding([2])))?,
            conv2: s(nn::Conv2d::new(6, 16, 5))?,
            fc1: s(nn::Linear::new(400, 120))?,
            fc2: s(nn::Linear::new(120, 84))?,
            fc3: s(nn::Linear::new(84, 10))?,
        }),
        other => return Err(format!("no model {other}")),
    })
}

fn build_optimizer(name: &str, cfg: &Value, params: Vec<nn::Parameter>) -> Result<Box<dyn Optimizer>, String> {
    use nn::optim::{Adam, AdamW, SGD};
    let lr = kw_f(cfg, "lr", 1e-3);
    let betas = cfg
        .get("betas")
        .and_then(Value::as_array)
        .map(|b| (b[0].as_f64().unwrap_or(0.9), b[1].as_f64().unwrap_or(0.999)));
    Ok(match name {
        "SGD" => Box::new(s(SGD::new(
            params,
            nn::optim::SGDOptions {
                lr,
                momentum: kw_f(cfg, "momentum", 0.0),
                dampening: kw_f(cfg, "dampening", 0.0),
                weight_decay: kw_f(cfg, "weight_decay", 0.0),
                nesterov: kw_b(cfg, "nesterov", false),
                maximize: false,
            },
        ))?),
        "Adam" => Box::new(s(Adam::new(
            params,
            nn::optim::AdamOptions {
                lr,
                betas: betas.unwrap_or((0.9, 0.999)),
                eps: kw_f(cfg, "eps", 1e-8),
                weight_decay: kw_f(cfg, "weight_decay", 0.0),
                amsgrad: kw_b(cfg, "amsgrad", false),
                ..Default::default()
            },
        ))?),
        "AdamW" => Box::new(s(AdamW::new(
            params,
            nn::optim::AdamWOptions {
                lr,
                betas: betas.unwrap_or((0.9, 0.999)),
                eps: kw_f(cfg, "eps", 1e-8),
                weight_decay: kw_f(cfg, "weight_decay", 0.01),
                amsgrad: kw_b(cfg, "amsgrad", false),
                ..Default::default()
            },
        ))?),
        other => return Err(format!("no optimizer {other}")),
    })
}

fn run_trajectory(case: &Value, store: &StateDict) -> Result<(), String> {
    let tol = tolerance(case);
    let ftol = Tolerance { rtol: tol.rtol, atol: tol.atol * 10.0 };
    let mut model = build_model(case["model"].as_str().unwrap_or_default())?;
    let mut init = StateDict::new();
    for (name, key) in case["init"].as_object().ok_or("trajectory without init")? {
        init.insert(name.clone(), get(store, key.as_str().unwrap_or_default())?);
    }
    s(model.load_state_dict(&init, true))?;
    let mut opt = build_optimizer(case["optimizer"].as_str().unwrap_or_default(), &case["config"], model.parameters())?;
    let x = get(store, case["x"].as_str().unwrap_or_default())?;
    let y = get(store, case["y"].as_str().unwrap_or_default())?;
    let losses: Vec<f64> =
        case["losses"].as_array().map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default();
    for (step, want) in losses.iter().enumerate() {
        s(opt.zero_grad(true))?;
        let xs = s(x.select(0, step as i64))?;
        let ys = s(y.select(0, step as i64))?;
        let out = s(model.call(&xs))?;
        let loss = s(ops::cross_entropy_loss(&out, &ys, None, 1, -100, 0.0))?;
        let got = s(loss.item::<f64>())?;
        if !crate::parity::compare::close(got, *want, tol) {
            return Err(format!("loss at step {step}: got {got}, expected {want}"));
        }
        s(loss.backward())?;
        s(opt.step())?;
    }
    let state = model.state_dict();
    for (name, key) in case["final"].as_object().ok_or("trajectory without final")? {
        let ours = state.get(name).ok_or_else(|| format!("model has no {name}"))?;
        compare_tensors(ours, &get(store, key.as_str().unwrap_or_default())?, ftol)
            .map_err(|e| format!("final {name}: {e}"))?;
    }
    Ok(())
}
