//! `cargo xtask parity-modules DIR`: the module and training-trajectory parity cases of
//! `DIR/modules.json` + `DIR/modules.safetensors`.
//!
//! The format (`tests/parity_modules/gen.py` writes it; the shared parity set uses it too):
//! `{"format": 1, "modules": [...], "trajectories": [...]}`, every tensor a key of the
//! safetensors file.
//! - A module case: `id`, `module` (PyTorch's class name), `config` (its constructor keywords),
//!   `mode` (`train`/`eval`), `state` (state_dict name -> key), `inputs` and `outputs` (keys;
//!   outputs flattened in order, `(out, (h, c))` gives three), optional `buffers_after`
//!   (buffer name -> key), `grad` (`grad_outputs` keys, `params`: name -> expected gradient,
//!   `inputs`: expected gradients of the first floating inputs), `rtol`/`atol` (gradients are
//!   compared with ten times both).
//! - A trajectory: `id`, `model` (`MLP` or `LeNet`, below), `optimizer` and its `config`,
//!   `init` (state_dict), `x`/`y` (eight batches), `losses` (one per step of zero_grad, mean
//!   cross entropy, backward, step), `final` (state_dict after the last step), `rtol`/`atol`.
//!
//! Each module case builds the `nn` layer from PyTorch's constructor kwargs, loads its state
//! under the PyTorch state_dict names, runs the forward pass in the case's mode, and compares
//! outputs, the buffers after the forward, and the gradients of parameters and inputs for the
//! given upstream gradients. Each trajectory replays eight optimizer steps and compares the
//! losses and the final state_dict. Failures print `FAIL <id>: <reason>`; the last line is
//! `modules: N passed, M failed`.
//!
//! With `--device cuda` (or `cuda:N`) the module's parameters and buffers, the inputs, the
//! upstream gradients and the trajectories' batches are moved to the device before the forward,
//! so every operator runs there. An operator without a kernel for the device fails its case
//! with the dispatcher's error (there is no CPU fallback here, unlike `parity`), and every
//! output, buffer and gradient must live on the device (Note [Outputs on the device]); the
//! values are compared on the CPU with the CPU's tolerances, as the emulated device computes in
//! f32 as the CPU kernels do. (On a GPU, PyTorch's own convolutions default to TF32, whose
//! results can be outside them; these expected values are PyTorch's CPU ones.)

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aten::{ops, Tensor};
use autograd::TensorAutograd;
use c10::{Device, Result as TResult};
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
    /// The device to run on (`cpu`, `cuda`, `cuda:N`): modules, inputs and batches are moved
    /// there and every result must be there; values are compared on the CPU.
    #[arg(long, default_value = "cpu", value_parser = crate::parity::parse_device)]
    pub device: Device,
}

/// Runs the cases; the exit code is a failure if any case failed.
pub fn run(args: Args) -> Result<ExitCode, String> {
    if args.device.ty == c10::DeviceType::Cuda && !cfg!(feature = "cuda") {
        return crate::rerun_with_cuda();
    }
    if args.device.is_meta() {
        return Err("--device meta: module cases compare values, which the meta device has not".into());
    }
    if !args.device.is_cpu() {
        crate::parity::check_device(args.device)?;
    }
    let mut out = std::io::stdout().lock();
    let (passed, failed) = run_dir(&args.dir, args.filter.as_deref(), args.device, &mut out)?;
    Ok(if failed == 0 && passed > 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Runs every selected case of `dir` on `device`, writing `FAIL` lines and the summary to
/// `out`; returns `(passed, failed)`.
pub fn run_dir(
    dir: &Path,
    filter: Option<&str>,
    device: Device,
    out: &mut dyn Write,
) -> Result<(usize, usize), String> {
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
        let r = panics::catch(|| {
            if is_trajectory {
                run_trajectory(case, &store, device)
            } else {
                run_module(case, &store, device)
            }
        });
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

/// [`get`], moved to `device`.
fn get_on(store: &StateDict, key: &str, device: Device) -> Result<Tensor, String> {
    s(get(store, key)?.to_device(device))
}

/// `t` on the CPU for the comparison, after checking that it was computed on `device`: a
/// result that silently came back elsewhere fails the case.
fn on_cpu(t: &Tensor, device: Device, what: &str) -> Result<Tensor, String> {
    let on = t.device();
    if on.ty != device.ty || (device.index >= 0 && on.index != device.index) {
        return Err(format!("{what} is on {on}, expected {device}"));
    }
    s(t.to_device(Device::CPU))
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

/// A module whose forward is not `Forward::forward` of one input: `run` calls it.
struct Custom<M: Module>(M, fn(&M, &[Tensor]) -> TResult<Vec<Tensor>>);

/// A module whose forward takes two tensors and returns one (a loss of input and target,
/// `Bilinear`, a decoder of target and memory): `run` calls it.
struct Two<M: Module>(M, fn(&M, &Tensor, &Tensor) -> TResult<Tensor>);

impl<M: Module> ParityModule for Two<M> {
    fn module(&mut self) -> &mut dyn Module {
        &mut self.0
    }
    fn run(&self, x: &[Tensor]) -> TResult<Vec<Tensor>> {
        Ok(vec![(self.1)(&self.0, &x[0], &x[1])?])
    }
}

/// As [`Two`], for three tensors.
struct Three<M: Module>(M, fn(&M, &Tensor, &Tensor, &Tensor) -> TResult<Tensor>);

impl<M: Module> ParityModule for Three<M> {
    fn module(&mut self) -> &mut dyn Module {
        &mut self.0
    }
    fn run(&self, x: &[Tensor]) -> TResult<Vec<Tensor>> {
        Ok(vec![(self.1)(&self.0, &x[0], &x[1], &x[2])?])
    }
}

impl<M: Module> ParityModule for Custom<M> {
    fn module(&mut self) -> &mut dyn Module {
        &mut self.0
    }
    fn run(&self, inputs: &[Tensor]) -> TResult<Vec<Tensor>> {
        (self.1)(&self.0, inputs)
    }
}

/// PyTorch's `reduction` keyword.
fn reduction(cfg: &Value) -> Result<nn::Reduction, String> {
    Ok(match cfg.get("reduction").and_then(Value::as_str).unwrap_or("mean") {
        "mean" => nn::Reduction::Mean,
        "sum" => nn::Reduction::Sum,
        "none" => nn::Reduction::None,
        other => return Err(format!("unknown reduction {other:?}")),
    })
}

/// `stride` when given, else the kernel size (PyTorch's pooling default).
fn pool_stride(cfg: &Value, kernel: &[i64]) -> Option<Vec<i64>> {
    cfg.get("stride").filter(|v| !v.is_null()).map(|_| kw_ints(cfg, "stride", kernel))
}

/// The per-layer options of the transformer modules from PyTorch's kwargs.
fn transformer_layer(cfg: &Value) -> Result<nn::TransformerLayerOptions, String> {
    Ok(nn::TransformerLayerOptions {
        dim_feedforward: kw_i(cfg, "dim_feedforward", 2048),
        dropout: kw_f(cfg, "dropout", 0.1),
        activation: s(nn::TransformerActivation::from_name(
            cfg.get("activation").and_then(Value::as_str).unwrap_or("relu"),
        ))?,
        layer_norm_eps: kw_f(cfg, "layer_norm_eps", 1e-5),
        batch_first: kw_b(cfg, "batch_first", false),
        norm_first: kw_b(cfg, "norm_first", false),
        bias: kw_b(cfg, "bias", true),
    })
}

/// The modules [`build`] makes, by PyTorch class name; `tests/parity_modules` (written by its
/// `gen.py`) and the shared parity set together have a case for each, and the test
/// `every_shipped_module_has_a_builder` checks that every module `nn` ships is here.
pub(crate) const BUILT: &[&str] = &[
    "Linear",
    "Bilinear",
    "Identity",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "InstanceNorm2d",
    "LayerNorm",
    "GroupNorm",
    "Embedding",
    "EmbeddingBag",
    "LSTM",
    "GRU",
    "RNN",
    "RNNCell",
    "LSTMCell",
    "GRUCell",
    "MultiheadAttention",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
    "Transformer",
    "MaxPool1d",
    "MaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool2d",
    "Dropout",
    "Dropout2d",
    "AlphaDropout",
    "Flatten",
    "Unflatten",
    "PixelShuffle",
    "PixelUnshuffle",
    "Upsample",
    "GELU",
    "PReLU",
    "ReLU",
    "ReLU6",
    "Sigmoid",
    "Tanh",
    "SiLU",
    "Mish",
    "Hardsigmoid",
    "Hardswish",
    "SELU",
    "LogSigmoid",
    "Softsign",
    "Tanhshrink",
    "LeakyReLU",
    "ELU",
    "CELU",
    "Softplus",
    "Hardtanh",
    "Threshold",
    "GLU",
    "Softmax",
    "LogSoftmax",
    "Softmin",
    "Hardshrink",
    "Softshrink",
    "MSELoss",
    "L1Loss",
    "SmoothL1Loss",
    "HuberLoss",
    "CrossEntropyLoss",
    "NLLLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "KLDivLoss",
    "MarginRankingLoss",
    "CosineEmbeddingLoss",
    "TripletMarginLoss",
    "CTCLoss",
];

/// The optimizers [`build_optimizer`] makes.
pub(crate) const BUILT_OPTIMIZERS: &[&str] = &["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"];

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
        "Conv3d" => {
            let (i, o, k) = io(cfg);
            Box::new(Single(s(nn::Conv3d::with_options(i, o, &k, conv_opts(cfg)))?))
        }
        "ConvTranspose1d" => {
            let (i, o, k) = io(cfg);
            Box::new(Single(s(nn::ConvTranspose1d::with_options(i, o, &k, conv_opts(cfg)))?))
        }
        "Bilinear" => Box::new(Two(
            s(nn::Bilinear::new(
                kw_i(cfg, "in1_features", 0),
                kw_i(cfg, "in2_features", 0),
                kw_i(cfg, "out_features", 0),
                kw_b(cfg, "bias", true),
            ))?,
            nn::Bilinear::forward,
        )),
        "Identity" => Box::new(Single(nn::Identity::new())),
        "RNNCell" => Box::new(Custom(
            s(nn::RNNCell::with_options(
                kw_i(cfg, "input_size", 0),
                kw_i(cfg, "hidden_size", 0),
                kw_b(cfg, "bias", true),
                cfg.get("nonlinearity").and_then(Value::as_str).unwrap_or("tanh"),
            ))?,
            |m, x| Ok(vec![m.forward(&x[0], None)?]),
        )),
        "GRUCell" => Box::new(Custom(
            s(nn::GRUCell::with_bias(
                kw_i(cfg, "input_size", 0),
                kw_i(cfg, "hidden_size", 0),
                kw_b(cfg, "bias", true),
            ))?,
            |m, x| Ok(vec![m.forward(&x[0], None)?]),
        )),
        "LSTMCell" => Box::new(Custom(
            s(nn::LSTMCell::with_bias(
                kw_i(cfg, "input_size", 0),
                kw_i(cfg, "hidden_size", 0),
                kw_b(cfg, "bias", true),
            ))?,
            |m, x| {
                let (h, c) = m.forward(&x[0], None)?;
                Ok(vec![h, c])
            },
        )),
        "InstanceNorm2d" => Box::new(Single(s(nn::InstanceNorm2d::with_options(
            kw_i(cfg, "num_features", 0),
            kw_f(cfg, "eps", 1e-5),
            kw_f(cfg, "momentum", 0.1),
            kw_b(cfg, "affine", false),
            kw_b(cfg, "track_running_stats", false),
        ))?)),
        "EmbeddingBag" => {
            let mode = match cfg.get("mode").and_then(Value::as_str).unwrap_or("mean") {
                "mean" => nn::BagMode::Mean,
                "sum" => nn::BagMode::Sum,
                "max" => nn::BagMode::Max,
                other => return Err(format!("unknown EmbeddingBag mode {other:?}")),
            };
            Box::new(Custom(
                s(nn::EmbeddingBag::new(kw_i(cfg, "num_embeddings", 0), kw_i(cfg, "embedding_dim", 0), mode))?,
                |m, x| Ok(vec![m.forward_bags(&x[0], None, None)?]),
            ))
        }
        "TransformerDecoderLayer" => Box::new(Two(
            s(nn::TransformerDecoderLayer::with_options(
                kw_i(cfg, "d_model", 0),
                kw_i(cfg, "nhead", 1),
                &transformer_layer(cfg)?,
            ))?,
            nn::TransformerDecoderLayer::forward,
        )),
        "Transformer" => Box::new(Two(
            s(nn::Transformer::with_options(&nn::TransformerOptions {
                d_model: kw_i(cfg, "d_model", 512),
                nhead: kw_i(cfg, "nhead", 8),
                num_encoder_layers: kw_i(cfg, "num_encoder_layers", 6),
                num_decoder_layers: kw_i(cfg, "num_decoder_layers", 6),
                layer: transformer_layer(cfg)?,
            }))?,
            nn::Transformer::forward,
        )),
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
        "TransformerEncoderLayer" => Box::new(Single(s(nn::TransformerEncoderLayer::with_options(
            kw_i(cfg, "d_model", 0),
            kw_i(cfg, "nhead", 1),
            &transformer_layer(cfg)?,
        ))?)),
        "MaxPool1d" | "MaxPool2d" => {
            let k = kw_ints(cfg, "kernel_size", &[1]);
            let stride = pool_stride(cfg, &k);
            let (padding, dilation) = (kw_ints(cfg, "padding", &[0]), kw_ints(cfg, "dilation", &[1]));
            let ceil = kw_b(cfg, "ceil_mode", false);
            if module == "MaxPool1d" {
                Box::new(Single(s(nn::MaxPool1d::with_options(&k, stride.as_deref(), &padding, &dilation, ceil))?))
            } else {
                Box::new(Single(s(nn::MaxPool2d::with_options(&k, stride.as_deref(), &padding, &dilation, ceil))?))
            }
        }
        "AvgPool1d" | "AvgPool2d" => {
            let k = kw_ints(cfg, "kernel_size", &[1]);
            let stride = pool_stride(cfg, &k);
            let padding = kw_ints(cfg, "padding", &[0]);
            let (ceil, include) = (kw_b(cfg, "ceil_mode", false), kw_b(cfg, "count_include_pad", true));
            let divisor = cfg.get("divisor_override").and_then(Value::as_i64);
            if module == "AvgPool1d" {
                Box::new(Single(s(nn::AvgPool1d::with_options(
                    &k,
                    stride.as_deref(),
                    &padding,
                    ceil,
                    include,
                    divisor,
                ))?))
            } else {
                Box::new(Single(s(nn::AvgPool2d::with_options(
                    &k,
                    stride.as_deref(),
                    &padding,
                    ceil,
                    include,
                    divisor,
                ))?))
            }
        }
        "AdaptiveAvgPool1d" => Box::new(Single(s(nn::AdaptiveAvgPool1d::new(&kw_ints(cfg, "output_size", &[1])))?)),
        "AdaptiveAvgPool2d" => Box::new(Single(s(nn::AdaptiveAvgPool2d::new(&kw_ints(cfg, "output_size", &[1])))?)),
        "AdaptiveMaxPool2d" => Box::new(Single(s(nn::AdaptiveMaxPool2d::new(&kw_ints(cfg, "output_size", &[1])))?)),
        "Unflatten" => {
            Box::new(Single(nn::Unflatten::new(kw_i(cfg, "dim", 0), &kw_ints(cfg, "unflattened_size", &[]))))
        }
        "PixelShuffle" => Box::new(Single(nn::PixelShuffle::new(kw_i(cfg, "upscale_factor", 1)))),
        "PixelUnshuffle" => Box::new(Single(nn::PixelUnshuffle::new(kw_i(cfg, "downscale_factor", 1)))),
        "Upsample" => {
            let size = cfg.get("size").filter(|v| !v.is_null()).map(|_| kw_ints(cfg, "size", &[]));
            let scale: Option<Vec<f64>> = match cfg.get("scale_factor") {
                Some(Value::Array(a)) => Some(a.iter().filter_map(Value::as_f64).collect()),
                Some(v) => v.as_f64().map(|f| vec![f]),
                None => None,
            };
            Box::new(Single(s(nn::Upsample::new(
                size.as_deref(),
                scale.as_deref(),
                cfg.get("mode").and_then(Value::as_str).unwrap_or("nearest"),
                kw_b(cfg, "align_corners", false),
            ))?))
        }
        "PReLU" => Box::new(Single(s(nn::PReLU::with(kw_i(cfg, "num_parameters", 1), kw_f(cfg, "init", 0.25)))?)),
        "ReLU" => Box::new(Single(nn::ReLU::new())),
        "ReLU6" => Box::new(Single(nn::ReLU6::new())),
        "Sigmoid" => Box::new(Single(nn::Sigmoid::new())),
        "Tanh" => Box::new(Single(nn::Tanh::new())),
        "SiLU" => Box::new(Single(nn::SiLU::new())),
        "Mish" => Box::new(Single(nn::Mish::new())),
        "Hardsigmoid" => Box::new(Single(nn::Hardsigmoid::new())),
        "Hardswish" => Box::new(Single(nn::Hardswish::new())),
        "SELU" => Box::new(Single(nn::SELU::new())),
        "LogSigmoid" => Box::new(Single(nn::LogSigmoid::new())),
        "Softsign" => Box::new(Single(nn::Softsign::new())),
        "Tanhshrink" => Box::new(Single(nn::Tanhshrink::new())),
        "LeakyReLU" => Box::new(Single(nn::LeakyReLU::with(kw_f(cfg, "negative_slope", 0.01)))),
        "ELU" => Box::new(Single(nn::ELU::with(kw_f(cfg, "alpha", 1.0)))),
        "CELU" => Box::new(Single(nn::CELU::with(kw_f(cfg, "alpha", 1.0)))),
        "Softplus" => Box::new(Single(nn::Softplus::with(kw_f(cfg, "beta", 1.0), kw_f(cfg, "threshold", 20.0)))),
        "Hardtanh" => Box::new(Single(nn::Hardtanh::with(kw_f(cfg, "min_val", -1.0), kw_f(cfg, "max_val", 1.0)))),
        "Threshold" => Box::new(Single(nn::Threshold::with(kw_f(cfg, "threshold", 0.0), kw_f(cfg, "value", 0.0)))),
        "GLU" => Box::new(Single(nn::GLU::with(kw_i(cfg, "dim", -1)))),
        "Softmax" => Box::new(Single(nn::Softmax::with(kw_i(cfg, "dim", -1)))),
        "LogSoftmax" => Box::new(Single(nn::LogSoftmax::with(kw_i(cfg, "dim", -1)))),
        "Softmin" => Box::new(Single(nn::Softmin::with(kw_i(cfg, "dim", -1)))),
        "Hardshrink" => Box::new(Single(nn::Hardshrink::with(kw_f(cfg, "lambd", 0.5)))),
        "Softshrink" => Box::new(Single(nn::Softshrink::with(kw_f(cfg, "lambd", 0.5)))),
        "MSELoss" => Box::new(Two(nn::MSELoss::new().reduction(reduction(cfg)?), nn::MSELoss::forward)),
        "L1Loss" => Box::new(Two(nn::L1Loss::new().reduction(reduction(cfg)?), nn::L1Loss::forward)),
        "SmoothL1Loss" => {
            let mut m = nn::SmoothL1Loss::new().reduction(reduction(cfg)?);
            m.beta = kw_f(cfg, "beta", 1.0);
            Box::new(Two(m, nn::SmoothL1Loss::forward))
        }
        "HuberLoss" => {
            let mut m = nn::HuberLoss::new().reduction(reduction(cfg)?);
            m.delta = kw_f(cfg, "delta", 1.0);
            Box::new(Two(m, nn::HuberLoss::forward))
        }
        "CrossEntropyLoss" => {
            let mut m = nn::CrossEntropyLoss::new().reduction(reduction(cfg)?);
            m.ignore_index = kw_i(cfg, "ignore_index", -100);
            m.label_smoothing = kw_f(cfg, "label_smoothing", 0.0);
            Box::new(Two(m, nn::CrossEntropyLoss::forward))
        }
        "NLLLoss" => {
            let mut m = nn::NLLLoss::new().reduction(reduction(cfg)?);
            m.ignore_index = kw_i(cfg, "ignore_index", -100);
            Box::new(Two(m, nn::NLLLoss::forward))
        }
        "BCELoss" => Box::new(Two(nn::BCELoss::new().reduction(reduction(cfg)?), nn::BCELoss::forward)),
        "BCEWithLogitsLoss" => {
            Box::new(Two(nn::BCEWithLogitsLoss::new().reduction(reduction(cfg)?), nn::BCEWithLogitsLoss::forward))
        }
        "KLDivLoss" => {
            let mut m = nn::KLDivLoss::new().reduction(reduction(cfg)?);
            m.log_target = kw_b(cfg, "log_target", false);
            Box::new(Two(m, nn::KLDivLoss::forward))
        }
        "MarginRankingLoss" => {
            let mut m = nn::MarginRankingLoss::new(kw_f(cfg, "margin", 0.0));
            m.reduction = reduction(cfg)?;
            Box::new(Three(m, nn::MarginRankingLoss::forward))
        }
        "CosineEmbeddingLoss" => {
            let mut m = nn::CosineEmbeddingLoss::new(kw_f(cfg, "margin", 0.0));
            m.reduction = reduction(cfg)?;
            Box::new(Three(m, nn::CosineEmbeddingLoss::forward))
        }
        "TripletMarginLoss" => {
            let mut m = nn::TripletMarginLoss::new();
            m.margin = kw_f(cfg, "margin", 1.0);
            m.p = kw_f(cfg, "p", 2.0);
            m.eps = kw_f(cfg, "eps", 1e-6);
            m.swap = kw_b(cfg, "swap", false);
            m.reduction = reduction(cfg)?;
            Box::new(Three(m, nn::TripletMarginLoss::forward))
        }
        "CTCLoss" => {
            let mut m = nn::CTCLoss::new(kw_i(cfg, "blank", 0));
            m.zero_infinity = kw_b(cfg, "zero_infinity", false);
            m.reduction = reduction(cfg)?;
            // PyTorch's forward takes the lengths as tensors (or lists); ours as slices.
            Box::new(Custom(m, |m, x| {
                let lengths = |t: &Tensor| t.to(c10::ScalarType::I64).call()?.to_vec::<i64>();
                Ok(vec![m.forward(&x[0], &x[1], &lengths(&x[2])?, &lengths(&x[3])?)?])
            }))
        }
        "Dropout" => Box::new(Single(s(nn::Dropout::new(kw_f(cfg, "p", 0.5)))?)),
        "Dropout2d" => Box::new(Single(s(nn::Dropout2d::new(kw_f(cfg, "p", 0.5)))?)),
        "AlphaDropout" => Box::new(Single(s(nn::AlphaDropout::new(kw_f(cfg, "p", 0.5)))?)),
        "GELU" => Box::new(Single(s(nn::GELU::with_approximate(
            cfg.get("approximate").and_then(Value::as_str).unwrap_or("none"),
        ))?)),
        "Flatten" => Box::new(Single(nn::Flatten::with(kw_i(cfg, "start_dim", 1), kw_i(cfg, "end_dim", -1)))),
        other => return Err(format!("no builder for module {other} (there are builders for {})", BUILT.join(", "))),
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

fn run_module(case: &Value, store: &StateDict, device: Device) -> Result<(), String> {
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
    s(m.module().to_device(device))?;
    m.module().train(case["mode"].as_str() != Some("eval"));
    let inputs: Vec<Tensor> = keys(&case["inputs"])
        .iter()
        .map(|k| {
            let t = get_on(store, k, device)?;
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
        let o = on_cpu(&o.detach(), device, &format!("output {i}"))?;
        compare_tensors(&o, &get(store, k)?, tol).map_err(|e| format!("output {i}: {e}"))?;
    }
    if let Some(buffers) = case["buffers_after"].as_object() {
        let named = m.module().named_buffers();
        for (name, key) in buffers {
            let ours = named
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| t.clone())
                .ok_or_else(|| format!("no buffer {name}"))?;
            let ours = on_cpu(&ours, device, &format!("buffer {name}"))?;
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
        let term = s(o.mul(&get_on(store, k, device)?).and_then(|t| t.sum().call()))?;
        total = Some(match total {
            Some(t) => s(t.add(&term).call())?,
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
            let g = on_cpu(&g, device, &format!("the grad of {name}"))?;
            compare_tensors(&g, &get(store, key.as_str().unwrap_or_default())?, gtol)
                .map_err(|e| format!("grad of {name}: {e}"))?;
        }
    }
    let float_inputs: Vec<&Tensor> = inputs.iter().filter(|t| t.is_floating_point()).collect();
    for (i, k) in keys(&grad["inputs"]).iter().enumerate() {
        let x = float_inputs.get(i).ok_or_else(|| format!("no floating input {i}"))?;
        let g = x.grad().ok_or_else(|| format!("input {i} has no grad"))?;
        let g = on_cpu(&g, device, &format!("the grad of input {i}"))?;
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
    use nn::optim::{Adagrad, Adam, AdamW, RMSprop, SGD};
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
        "RMSprop" => Box::new(s(RMSprop::new(
            params,
            nn::optim::RMSpropOptions {
                lr: kw_f(cfg, "lr", 1e-2),
                alpha: kw_f(cfg, "alpha", 0.99),
                eps: kw_f(cfg, "eps", 1e-8),
                weight_decay: kw_f(cfg, "weight_decay", 0.0),
                momentum: kw_f(cfg, "momentum", 0.0),
                centered: kw_b(cfg, "centered", false),
                maximize: kw_b(cfg, "maximize", false),
            },
        ))?),
        "Adagrad" => Box::new(s(Adagrad::new(
            params,
            nn::optim::AdagradOptions {
                lr: kw_f(cfg, "lr", 1e-2),
                lr_decay: kw_f(cfg, "lr_decay", 0.0),
                weight_decay: kw_f(cfg, "weight_decay", 0.0),
                initial_accumulator_value: kw_f(cfg, "initial_accumulator_value", 0.0),
                eps: kw_f(cfg, "eps", 1e-10),
                maximize: kw_b(cfg, "maximize", false),
            },
        ))?),
        other => return Err(format!("no optimizer {other} (there are builders for {})", BUILT_OPTIMIZERS.join(", "))),
    })
}

fn run_trajectory(case: &Value, store: &StateDict, device: Device) -> Result<(), String> {
    let tol = tolerance(case);
    let ftol = Tolerance { rtol: tol.rtol, atol: tol.atol * 10.0 };
    let mut model = build_model(case["model"].as_str().unwrap_or_default())?;
    let mut init = StateDict::new();
    for (name, key) in case["init"].as_object().ok_or("trajectory without init")? {
        init.insert(name.clone(), get(store, key.as_str().unwrap_or_default())?);
    }
    s(model.load_state_dict(&init, true))?;
    // Moved before the optimizer takes the parameters (`to_device` replaces them).
    s(model.to_device(device))?;
    let mut opt = build_optimizer(case["optimizer"].as_str().unwrap_or_default(), &case["config"], model.parameters())?;
    let x = get_on(store, case["x"].as_str().unwrap_or_default(), device)?;
    let y = get_on(store, case["y"].as_str().unwrap_or_default(), device)?;
    let losses: Vec<f64> =
        case["losses"].as_array().map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default();
    for (step, want) in losses.iter().enumerate() {
        s(opt.zero_grad(true))?;
        let xs = s(x.select(0, step as i64))?;
        let ys = s(y.select(0, step as i64))?;
        let out = s(model.call(&xs))?;
        let loss = s(ops::cross_entropy_loss(&out, &ys, None, 1, -100, 0.0))?;
        let got = s(on_cpu(&loss, device, &format!("the loss at step {step}"))?.item::<f64>())?;
        if !crate::parity::compare::close(got, *want, tol) {
            return Err(format!("loss at step {step}: got {got}, expected {want}"));
        }
        s(loss.backward())?;
        s(opt.step())?;
    }
    let state = model.state_dict();
    for (name, key) in case["final"].as_object().ok_or("trajectory without final")? {
        let ours = state.get(name).ok_or_else(|| format!("model has no {name}"))?;
        let ours = on_cpu(ours, device, &format!("final {name}"))?;
        compare_tensors(&ours, &get(store, key.as_str().unwrap_or_default())?, ftol)
            .map_err(|e| format!("final {name}: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped modules [`build`] does not make, and why.
    /// (The containers `Sequential`, `ModuleList` and `ModuleDict` are not modules of their own
    /// kind: their parity is their children's, and the scan does not list them.)
    const NOT_BUILT: &[(&str, &str)] = &[
        ("TransformerEncoder", "the encoder of Transformer, which has cases"),
        ("TransformerDecoder", "the decoder of Transformer, which has cases"),
    ];

    /// The repository cases that fail today, and why: the gaps issue 19 closes. The test fails
    /// when one of them passes (take it off the list) or another one fails.
    const KNOWN_GAPS: &[(&str, &str)] = &[];

    /// The module types `nn` ships, by PyTorch class name, read from `nn/src/layers`: the
    /// `pub type X = ...` aliases, the `#[derive(Module)]` structs that are not generic, and the
    /// modules the macros define (`simple_activation! { ... }` and the like list one per entry,
    /// `rnn_module!( ... )` and the like name one after their doc comments).
    fn shipped_modules() -> Vec<String> {
        let dir = crate::workspace_root().join("nn/src/layers");
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            let mut in_macro_call = false;
            let mut in_paren_call = false;
            for (i, line) in lines.iter().enumerate() {
                let t = line.trim();
                if let Some(rest) = t.strip_prefix("pub type ") {
                    names.push(rest.split([' ', '=', '<']).next().unwrap().to_string());
                }
                if let Some(rest) = t.strip_prefix("pub struct ") {
                    let derived = lines[..i].iter().rev().take(4).any(|l| l.contains("#[derive(Module"));
                    let name: String = rest.chars().take_while(|c| c.is_alphanumeric()).collect();
                    if derived && !rest[name.len()..].starts_with('<') && !name.is_empty() {
                        names.push(name);
                    }
                }
                // `simple_activation! {`, `param_activation! {`, `loss_module! {` invocations:
                // each entry starts with the module's name followed by `=>` or `{ ... } =>`.
                if t.ends_with("!(") {
                    in_paren_call = true;
                } else if in_paren_call && t.starts_with(')') {
                    in_paren_call = false;
                } else if in_paren_call && t.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
                    let name: String = t.chars().take_while(|c| c.is_alphanumeric()).collect();
                    if matches!(&t[name.len()..], "" | ",") {
                        names.push(name);
                    }
                }
                if t.ends_with("! {") && !t.starts_with("macro_rules") {
                    in_macro_call = true;
                } else if in_macro_call && t == "}" {
                    in_macro_call = false;
                } else if in_macro_call && t.contains("=>") && t.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                {
                    names.push(t.chars().take_while(|c| c.is_alphanumeric()).collect());
                }
            }
        }
        names.sort();
        names.dedup();
        names
    }

    #[test]
    fn every_shipped_module_has_a_builder() {
        let shipped = shipped_modules();
        for probe in [
            "Linear",
            "ReLU",
            "LeakyReLU",
            "MSELoss",
            "MaxPool2d",
            "AdaptiveAvgPool2d",
            "TransformerEncoder",
            "LSTMCell",
        ] {
            assert!(shipped.iter().any(|n| n == probe), "the scan of nn/src/layers missed {probe}: {shipped:?}");
        }
        let missing: Vec<&String> =
            shipped.iter().filter(|n| !BUILT.contains(&n.as_str()) && !NOT_BUILT.iter().any(|(m, _)| m == n)).collect();
        assert!(missing.is_empty(), "modules nn ships without a builder in parity_modules.rs: {missing:?}");
        for name in BUILT.iter().chain(NOT_BUILT.iter().map(|(n, _)| n)) {
            assert!(shipped.iter().any(|n| n == name), "{name} is listed here but nn does not ship it");
        }
    }

    /// `tests/parity_modules` (PyTorch's numbers, written by its gen.py) has a case for every
    /// builder and a trajectory for every optimizer builder, and all of them pass.
    #[test]
    fn the_repository_cases_cover_every_builder_and_pass() {
        let dir = crate::workspace_root().join("tests/parity_modules");
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("modules.json")).unwrap()).unwrap();
        let has = |list: &str, field: &str, name: &str| {
            doc[list].as_array().unwrap().iter().any(|c| c[field].as_str() == Some(name))
        };
        for name in BUILT {
            assert!(has("modules", "module", name), "tests/parity_modules has no case for {name}");
        }
        for name in BUILT_OPTIMIZERS {
            assert!(has("trajectories", "optimizer", name), "tests/parity_modules has no trajectory for {name}");
        }
        let mut out = Vec::new();
        let (passed, failed) = run_dir(&dir, None, Device::CPU, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut failing: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("FAIL ")?.split(':').next()).collect();
        failing.sort_unstable();
        let mut known: Vec<&str> = KNOWN_GAPS.iter().map(|(id, _)| *id).collect();
        known.sort_unstable();
        assert_eq!(failing, known, "the failing repository cases are not the known gaps:\n{text}");
        assert_eq!(failed, KNOWN_GAPS.len());
        assert!(passed + failed >= BUILT.len() + BUILT_OPTIMIZERS.len(), "{text}");
    }

    #[test]
    fn a_wrong_expected_value_fails_its_case() {
        // The same cases with one output changed: the runner must notice.
        let src = crate::workspace_root().join("tests/parity_modules");
        let dir = std::env::temp_dir().join(format!("xtask-modules-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(src.join("modules.json")).unwrap()).unwrap();
        let case = doc["modules"].as_array_mut().unwrap().iter_mut().find(|c| c["id"] == "prelu").unwrap();
        case["outputs"] = serde_json::json!([case["inputs"][0].clone()]);
        std::fs::write(dir.join("modules.json"), doc.to_string()).unwrap();
        std::fs::copy(src.join("modules.safetensors"), dir.join("modules.safetensors")).unwrap();
        let mut out = Vec::new();
        let (_, failed) = run_dir(&dir, Some("prelu"), Device::CPU, &mut out).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(failed, 1, "{}", String::from_utf8_lossy(&out));
    }
}
