//! The main job, data-parallel: the MNIST CNN trained by several processes with
//! `DistributedDataParallel`, on Gloo (PyTorch's default for CPU tensors) or MPI.
//!
//! ```sh
//! cargo build --release -p torch --features gloo --example mnist_ddp
//! cargo run --release -p distributed --bin launch -- --nproc-per-node 2 target/release/examples/mnist_ddp
//!
//! cargo build --release -p torch --features mpi --example mnist_ddp
//! mpirun -np 2 target/release/examples/mnist_ddp --backend mpi
//! ```
//!
//! Every rank reads its share of the 4,000 training digits through a `DistributedSampler`
//! (a global batch of 64 split between the ranks), gradients are averaged by DDP, and rank 0
//! prints the loss and the test accuracy on the 1,000 held-out digits after every epoch. The
//! model, hyper-parameters and split are the single-process example's (`mnist`), so the
//! accuracy is comparable.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use torch::data::{DataLoader, DistributedSampler, Mnist, TensorDataset, MNIST_MEAN, MNIST_STD};
use torch::distributed::{self as dist, DistributedDataParallel, ReduceOp};
use torch::nn::{self, functional as F, Conv2d, Forward, Linear, Module};
use torch::optim::lr_scheduler::LRScheduler;
use torch::optim::{self, Optimizer};
use torch::{Tensor, TensorAutograd};

#[derive(Parser)]
#[command(about = "Train the MNIST CNN on several processes with DistributedDataParallel (start the ranks with \
             `launch --nproc-per-node N`, or with `mpirun -np N` for --backend mpi)")]
struct Args {
    /// The process-group backend: gloo, mpi or nccl (default: PyTorch's choice for CPU
    /// tensors, gloo). The binary must be built with the backend's feature.
    #[arg(long)]
    backend: Option<String>,
    /// Number of epochs.
    #[arg(long, default_value_t = 8)]
    epochs: usize,
    /// The global mini-batch size, split evenly between the ranks.
    #[arg(long, default_value_t = 64)]
    batch_size: usize,
    /// Peak learning rate of the one-cycle schedule (Adam).
    #[arg(long, default_value_t = 3e-3)]
    lr: f64,
    /// Operator threads per rank (default: the cores divided by the ranks).
    #[arg(long)]
    threads: Option<usize>,
    /// Seed for initialisation, the hold-out split and shuffling.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Exit with an error when the final test accuracy is below this fraction (for CI).
    #[arg(long)]
    min_accuracy: Option<f64>,
}

nn::module! {
    /// The `mnist` example's network: conv(1->32, 3) - relu - maxpool 2 - conv(32->64, 3) - relu -
    /// maxpool 2 - dropout - linear(1600->128) - relu - dropout - linear(128->10).
    struct Net {
        conv1 = Conv2d::new(1, 32, 3)?,
        conv2 = Conv2d::new(32, 64, 3)?,
        dropout = nn::Dropout::new(0.25)?,
        fc1 = Linear::new(1600, 128)?,
        fc2 = Linear::new(128, 10)?,
    }
}

impl Forward for Net {
    fn forward(&self, x: &Tensor) -> torch::Result<Tensor> {
        let pool = |t: &Tensor| F::max_pool2d(t, 2).call();
        let x = pool(&self.conv1.call(x)?.relu()?)?;
        let x = pool(&self.conv2.call(&x)?.relu()?)?;
        let x = self.dropout.call(&x.flatten().start_dim(1).call()?)?;
        let x = self.dropout.call(&self.fc1.call(&x)?.relu()?)?;
        self.fc2.call(&x)
    }
}

fn accuracy(model: &Net, images: &Tensor, labels: &Tensor) -> torch::Result<f64> {
    let _g = torch::no_grad();
    let pred = model.call(images)?.argmax().dim(1).call()?;
    Ok(pred.eq(labels)?.sum().call()?.item::<i64>()? as f64 / images.sizes()[0] as f64)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let backend = args.backend.clone().unwrap_or_else(|| dist::default_backend(torch::DeviceType::Cpu).into());
    let result = dist::init_process_group(&backend).and_then(|()| run(&args));
    let rank = dist::get_rank().unwrap_or(0);
    let _ = dist::destroy_process_group();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error on rank {rank}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> torch::Result<()> {
    let (rank, world) = (dist::get_rank()?, dist::get_world_size()?);
    let bad = |msg: String| Err(torch::Error::invalid("mnist_ddp", msg));
    if args.epochs == 0 {
        return bad("--epochs must be at least 1, got 0".into());
    }
    if args.batch_size == 0 || !args.batch_size.is_multiple_of(world) {
        return bad(format!("--batch-size must be a positive multiple of the {world} ranks, got {}", args.batch_size));
    }
    if !(args.lr.is_finite() && args.lr > 0.0) {
        return bad(format!("--lr must be a positive number, got {}", args.lr));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    torch::set_num_threads(args.threads.unwrap_or((cores / world).max(1)))?;

    // The single-process example's split: a seeded hold-out of 1,000 of the 5,000 digits.
    torch::manual_seed(args.seed);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/mnist_5k.csv.gz");
    let all = Mnist::from_csv(&path)?;
    let (images, labels) = (all.images_f32(MNIST_MEAN, MNIST_STD)?, all.labels().clone());
    let g = torch::Generator::default();
    g.manual_seed(args.seed);
    let perm = torch::randperm(images.sizes()[0]).generator(&g).call()?;
    let (train_idx, test_idx) = (perm.narrow(0, 0, 4000)?, perm.narrow(0, 4000, 1000)?);
    let train = TensorDataset::new((images.index_select(0, &train_idx)?, labels.index_select(0, &train_idx)?))?;
    let (test_x, test_y) = (images.index_select(0, &test_idx)?, labels.index_select(0, &test_idx)?);

    let sampler = Arc::new(DistributedSampler::new(4000, world, rank, true, args.seed, false)?);
    let per_rank = args.batch_size / world;
    let loader = DataLoader::builder(train).batch_size(per_rank).sampler(sampler.clone()).build()?;
    // Dropout draws different masks on every rank, as it would for different samples.
    torch::manual_seed(args.seed);
    let model = DistributedDataParallel::new(Net::new()?)?;
    torch::manual_seed(args.seed + 1 + rank as u64);
    let mut opt = optim::Adam::new(model.module().parameters(), args.lr)?;
    let steps = loader.len();
    let mut sched = optim::OneCycleLR::new(&mut opt, args.lr, (args.epochs * steps) as i64)?;
    if rank == 0 {
        println!(
            "{world} ranks x {} threads, global batch {} ({per_rank} per rank), {} epochs, DDP buckets {:?} bytes",
            torch::get_num_threads(),
            args.batch_size,
            args.epochs,
            model.bucket_sizes()
        );
    }
    let start = Instant::now();
    let mut model = model;
    for epoch in 0..args.epochs {
        sampler.set_epoch(epoch as u64);
        model.module_mut().train(true);
        let t0 = Instant::now();
        let (mut seen, mut loss_sum) = (0usize, 0.0f64);
        for batch in loader.iter() {
            let (x, y) = batch?;
            opt.zero_grad(true)?;
            let loss = F::cross_entropy(&model.forward(&x)?, &y).call()?;
            loss.backward()?;
            opt.step()?;
            sched.step(&mut opt)?;
            let n = x.sizes()[0] as usize;
            seen += n;
            loss_sum += loss.item::<f64>()? * n as f64;
        }
        // The mean training loss over all ranks.
        let totals = Tensor::from_vec(vec![loss_sum, seen as f64], &[2])?;
        dist::all_reduce(&totals, ReduceOp::Sum)?;
        let totals = totals.to_vec::<f64>()?;
        let secs = t0.elapsed().as_secs_f64();
        model.module_mut().eval();
        if rank == 0 {
            let acc = accuracy(model.module(), &test_x, &test_y)?;
            println!(
                "epoch {}: train loss {:.4}, test accuracy {:.2}%, {:.1} s ({:.0} img/s)",
                epoch + 1,
                totals[0] / totals[1],
                100.0 * acc,
                secs,
                totals[1] / secs
            );
        }
    }
    if rank == 0 {
        let acc = accuracy(model.module(), &test_x, &test_y)?;
        println!(
            "test accuracy {:.2}% after {} epochs on {world} ranks with {} ({:.1} s)",
            100.0 * acc,
            args.epochs,
            dist::get_backend()?,
            start.elapsed().as_secs_f64()
        );
        if let Some(min) = args.min_accuracy {
            if acc < min {
                return bad(format!("the test accuracy {:.2}% is below --min-accuracy {min}", 100.0 * acc));
            }
        }
    }
    Ok(())
}
