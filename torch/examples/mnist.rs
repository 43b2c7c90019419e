//! The main job: train a LeNet-style CNN on real handwritten digits.
//!
//! `cargo run --release -p torch --example mnist` trains on the 5,000 MNIST digits shipped in
//! `data/mnist_5k.csv.gz` (4,000 to train, a seeded hold-out of 1,000 to test), prints the test
//! accuracy after every epoch and saves a safetensors checkpoint (model, optimizer, epoch).
//! `--data DIR` trains on IDX files instead (MNIST or Fashion-MNIST, e.g. Debian's
//! `/usr/share/datasets/fashion-mnist`), with their own train/test split.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use torch::amp::{AutocastGuard, GradScaler, GradScalerOptions};
use torch::data::{DataLoader, Dataset, Mnist, TensorDataset, MNIST_MEAN, MNIST_STD};
use torch::indexing::IndexOp;
use torch::nn::{self, functional as F, Conv2d, Dropout, Forward, Linear, Module};
use torch::optim::lr_scheduler::LRScheduler;
use torch::optim::{self, Optimizer};
use torch::profiler;
use torch::serialize::Checkpoint;
use torch::{no_grad, Device, DeviceType, Result, ScalarType, Tensor, TensorAutograd};

#[derive(Parser)]
#[command(about = "Train a LeNet-style CNN on MNIST digits (or Fashion-MNIST with --data)")]
struct Args {
    /// Directory of IDX files (train-images-idx3-ubyte[.gz], ...) to train on instead of the
    /// embedded 5,000 digits.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Number of epochs (default: 8 on the embedded digits, 3 with --data).
    #[arg(long)]
    epochs: Option<usize>,
    /// Mini-batch size.
    #[arg(long, default_value_t = 64)]
    batch_size: usize,
    /// Peak learning rate of the one-cycle schedule (Adam).
    #[arg(long, default_value_t = 3e-3)]
    lr: f64,
    /// Worker threads for the operators (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Resume from this checkpoint (model, optimizer and epoch).
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Where to save the checkpoint after each epoch.
    #[arg(long, default_value = "mnist_checkpoint.safetensors")]
    checkpoint: PathBuf,
    /// Seed for initialisation, the hold-out split and shuffling.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Profile a few training steps of the first epoch (one to wait, one to warm up, three
    /// recorded), write their Chrome trace here (open it in Perfetto) and print the top
    /// operators.
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Where to train: cpu, cuda or cuda:N. CUDA needs the `cuda` feature (`--features cuda`)
    /// and a GPU, or `TORCH_CUDA_DRIVER=emulator` for the emulated device.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Mixed precision: the forward pass in bfloat16 autocast regions, the loss scaled by a
    /// GradScaler (`torch.autocast` + `torch.amp.GradScaler`).
    #[arg(long)]
    amp: bool,
}

// The parts between `pytorch-comparison` markers are what a PyTorch user writes (model,
// training loop, evaluation); `mnist_pytorch.py` beside this file is the same in PyTorch, and
// `torch/tests/main_job.rs` checks the two stay within 1.3x of each other in tokens.
// pytorch-comparison: begin
nn::module! {
    /// conv(1->32, 3) - relu - maxpool 2 - conv(32->64, 3) - relu - maxpool 2 - dropout -
    /// linear(1600->128) - relu - dropout - linear(128->10).
    struct Net {
        conv1 = Conv2d::new(1, 32, 3)?,
        conv2 = Conv2d::new(32, 64, 3)?,
        dropout = Dropout::new(0.25)?,
        fc1 = Linear::new(1600, 128)?,
        fc2 = Linear::new(128, 10)?,
    }
}

impl Forward for Net {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = F::max_pool2d(&self.conv1.call(x)?.relu()?, 2).call()?;
        let x = F::max_pool2d(&self.conv2.call(&x)?.relu()?, 2).call()?;
        let x = self.dropout.call(&x.flatten().start_dim(1).call()?)?;
        let x = self.dropout.call(&self.fc1.call(&x)?.relu()?)?;
        self.fc2.call(&x)
    }
}
// pytorch-comparison: end

struct Split {
    train: TensorDataset,
    test: (Tensor, Tensor),
    name: String,
}

fn load(args: &Args) -> torch::Result<Split> {
    let (mean, std) = (MNIST_MEAN, MNIST_STD);
    match &args.data {
        Some(dir) => {
            let train = Mnist::load(dir, true)?;
            let test = Mnist::load(dir, false)?;
            Ok(Split {
                train: train.dataset(mean, std)?,
                test: (test.images_f32(mean, std)?, test.labels().clone()),
                name: dir.display().to_string(),
            })
        }
        None => {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/mnist_5k.csv.gz");
            let all = Mnist::from_csv(&path)?;
            let (images, labels) = (all.images_f32(mean, std)?, all.labels().clone());
            // A seeded hold-out of 1,000 digits (the file is ordered by class).
            let g = torch::Generator::default();
            g.manual_seed(args.seed);
            let perm = torch::randperm(images.sizes()[0]).generator(&g).call()?;
            let (train_idx, test_idx) = (perm.narrow(0, 0, 4000)?, perm.narrow(0, 4000, 1000)?);
            Ok(Split {
                train: TensorDataset::new((images.index_select(0, &train_idx)?, labels.index_select(0, &train_idx)?))?,
                test: (images.index_select(0, &test_idx)?, labels.index_select(0, &test_idx)?),
                name: "data/mnist_5k.csv.gz".into(),
            })
        }
    }
}

// pytorch-comparison: begin
fn accuracy(model: &Net, (images, labels): &(Tensor, Tensor)) -> Result<f64> {
    let _g = no_grad();
    let n = images.size(0)?;
    let mut correct = 0;
    for start in (0..n).step_by(1000) {
        let pred = model.call(&images.i(start..start + 1000)?)?.argmax().dim(1).call()?;
        correct += pred.eq(&labels.i(start..start + 1000)?)?.sum().call()?.item::<i64>()?;
    }
    Ok(correct as f64 / n as f64)
}
// pytorch-comparison: end

fn main() -> ExitCode {
    let args = Args::parse();
    // Errors are reported in their Display form, as a user reads them, never as Debug.
    match check_args(&args).and_then(|()| run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Validates the arguments, and that the checkpoint can be written, before any data is read or
/// any training is done: a typo must not cost an epoch.
fn check_args(args: &Args) -> torch::Result<()> {
    let bad = |msg: String| Err(torch::Error::invalid("mnist", msg));
    if args.epochs == Some(0) {
        return bad("--epochs must be at least 1, got 0".into());
    }
    if args.batch_size == 0 {
        return bad("--batch-size must be at least 1, got 0".into());
    }
    if !(args.lr.is_finite() && args.lr > 0.0) {
        return bad(format!("--lr must be a positive number, got {}", args.lr));
    }
    if args.threads == Some(0) {
        return bad("--threads must be at least 1, got 0".into());
    }
    if let Some(path) = &args.resume {
        if !path.is_file() {
            return bad(format!("--resume {}: no such checkpoint file", path.display()));
        }
    }
    if let Some(dir) = &args.data {
        if !dir.is_dir() {
            return bad(format!("--data {}: no such directory", dir.display()));
        }
    }
    if let Some(path) = &args.profile {
        torch::serialize::check_writable(path)?;
    }
    let device: Device = args.device.parse()?;
    match device.ty {
        DeviceType::Cpu => {}
        DeviceType::Cuda if torch::cuda::is_available() => {}
        DeviceType::Cuda => {
            return bad(format!(
                "--device {}: CUDA is not available (build with --features cuda; without a GPU, set TORCH_CUDA_DRIVER=emulator)",
                args.device
            ))
        }
        _ => return bad(format!("--device {}: train on cpu or cuda", args.device)),
    }
    torch::serialize::check_writable(&args.checkpoint)
}

fn run(args: &Args) -> torch::Result<()> {
    if let Some(t) = args.threads {
        torch::set_num_threads(t)?;
    }
    torch::manual_seed(args.seed);
    let device: Device = args.device.parse()?;
    let split = load(args)?;
    let test = (split.test.0.to_device(device)?, split.test.1.to_device(device)?);
    let epochs = args.epochs.unwrap_or(if args.data.is_some() { 3 } else { 8 });
    let train_len = split.train.len();
    println!(
        "data: {} ({} train, {} test), {} threads, batch {}, {} epochs, on {device}",
        split.name,
        train_len,
        test.0.sizes()[0],
        torch::get_num_threads(),
        args.batch_size,
        epochs
    );

    // pytorch-comparison: begin
    let mut model = Net::new()?;
    model.to_device(device)?;
    let mut opt = optim::Adam::new(model.parameters(), args.lr)?;
    let shuffle = torch::Generator::default();
    shuffle.manual_seed(args.seed);
    let loader =
        DataLoader::builder(split.train).batch_size(args.batch_size).shuffle(true).generator(shuffle).build()?;
    let steps_per_epoch = loader.len();
    let mut sched = optim::OneCycleLR::new(&mut opt, args.lr, (epochs * steps_per_epoch) as i64)?;
    let mut scaler = GradScaler::with_options(device.ty, GradScalerOptions { enabled: args.amp, ..Default::default() });
    // pytorch-comparison: end
    let mut first_epoch = 0;
    if let Some(path) = &args.resume {
        let ck = Checkpoint::load(path)?;
        model.load_state_dict(&ck.model, true)?;
        // The schedule is a function of the step count: replay it to where the run stopped,
        // then restore the optimizer (its state includes the learning rates).
        first_epoch = ck.epoch.min(epochs);
        for _ in 0..first_epoch * steps_per_epoch {
            sched.step(&mut opt)?;
        }
        opt.load_state_dict(&ck.optimizer)?;
        println!("resumed from {} after epoch {}", path.display(), ck.epoch);
        if ck.epoch >= epochs {
            println!(
                "the checkpoint already covers {} of {epochs} epochs: nothing to train (raise --epochs to continue)",
                ck.epoch
            );
        }
    }

    let start = Instant::now();
    let mut saved = false;
    let mut prof = args.profile.as_ref().map(|_| {
        // Wait a step, warm up a step, record three; fewer when an epoch is shorter.
        let n = steps_per_epoch as u64;
        let schedule = if n >= 5 { profiler::schedule(1, 1, 3, 1) } else { profiler::schedule(0, 0, n.max(1), 1) };
        profiler::profile().record_shapes(true).profile_memory(true).schedule(schedule).start()
    });
    for epoch in first_epoch..epochs {
        // pytorch-comparison: begin
        model.train(true);
        // pytorch-comparison: end
        let bar = ProgressBar::new(steps_per_epoch as u64);
        bar.set_style(
            ProgressStyle::with_template("epoch {prefix} [{bar:30}] {pos}/{len} {msg}")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(format!("{}/{epochs}", epoch + 1));
        let t0 = Instant::now();
        let (mut seen, mut loss_sum) = (0usize, 0.0f64);
        // pytorch-comparison: begin
        for batch in &loader {
            let (x, y) = batch?;
            let (x, y) = (x.to_device(device)?, y.to_device(device)?);
            opt.zero_grad(true)?;
            let loss = {
                let _amp = AutocastGuard::with_options(device.ty, Some(ScalarType::BF16), args.amp, None)?;
                F::cross_entropy(&model.call(&x)?, &y).call()?
            };
            scaler.scale(&loss)?.backward()?;
            scaler.step(&mut opt)?;
            scaler.update(None)?;
            sched.step(&mut opt)?;
            // pytorch-comparison: end
            if let Some(p) = &mut prof {
                p.step();
            }
            let n = x.sizes()[0] as usize;
            seen += n;
            loss_sum += loss.item::<f64>()? * n as f64;
            bar.inc(1);
            bar.set_message(format!(
                "loss {:.4}  {:.0} img/s",
                loss_sum / seen as f64,
                seen as f64 / t0.elapsed().as_secs_f64()
            ));
        }
        bar.finish();
        if let (Some(p), Some(path)) = (prof.take(), &args.profile) {
            let profile = p.stop();
            profile.export_chrome_trace(path)?;
            println!("{}", profile.key_averages().table("self_cpu_time_total", 15));
            let steps = profile.events.iter().filter(|e| e.name.starts_with("ProfilerStep#")).count();
            println!("profile: {} events of {steps} steps written to {}", profile.events.len(), path.display());
        }
        // pytorch-comparison: begin
        model.eval();
        let acc = accuracy(&model, &test)?;
        // pytorch-comparison: end
        println!(
            "epoch {}: train loss {:.4}, test accuracy {:.2}%, {:.1} s",
            epoch + 1,
            loss_sum / seen.max(1) as f64,
            100.0 * acc,
            t0.elapsed().as_secs_f64()
        );
        // pytorch-comparison: begin
        Checkpoint { model: model.state_dict(), optimizer: opt.state_dict()?, epoch: epoch + 1 }
            .save(&args.checkpoint)?;
        // pytorch-comparison: end
        saved = true;
    }
    model.eval();
    let acc = accuracy(&model, &test)?;
    let trained = epochs - first_epoch;
    print!("test accuracy {:.2}% after {epochs} epochs", 100.0 * acc);
    if saved {
        println!(
            " ({trained} trained in this run, {:.1} s); checkpoint saved to {}",
            start.elapsed().as_secs_f64(),
            args.checkpoint.display()
        );
    } else {
        println!(" (none trained in this run); no checkpoint written");
    }
    Ok(())
}
