//! The ranks of the W8 benchmarks (BENCHMARKS.md), started by `cargo xtask bench W8` as
//! `mpirun -np 2 target/release/examples/w8 [--raw] [--time S]`, and on Gloo as
//! `launch --nproc-per-node 2 target/release/examples/w8 --backend gloo [--time S]`.
//!
//! - `W8.allreduce_1M`, `W8.allreduce_64M`: `all_reduce` (sum) of 1 MB and 64 MB of f32 on the
//!   default group.
//! - `W8.ddp_mlp_step`: a DistributedDataParallel training step of the MLP 784-512-512-10
//!   (ReLU), batch 128 per rank: zero_grad, forward, cross entropy, backward (with the
//!   gradient all-reduce), SGD momentum 0.9 step.
//!
//! - `W8.fsdp_step` (Gloo only): the same step with the MLP (as a `Sequential`) under
//!   FullyShardedDataParallel, FULL_SHARD with a unit per Linear and BACKWARD_PRE prefetch.
//!
//! On Gloo the ids are `W8.gloo_allreduce_1M`, `W8.gloo_allreduce_64M` and `W8.gloo_ddp_mlp_step`.
//! With `--raw`, the two all-reduces go to Open MPI directly (rsmpi's `all_reduce_into` on the
//! world communicator, no process group), which is the engine's own cost. Rank 0 prints one
//! JSON line per workload: `{"id": ..., "median_s": ..., "iters": ...}`. Every rank runs one
//! operator thread.

use std::time::Instant;

use aten::Tensor;
use autograd::TensorAutograd;
use distributed::{self as dist, DistributedDataParallel, ReduceOp};
use mpi::collective::SystemOperation;
use mpi::traits::{Communicator, CommunicatorCollectives, Root};
use nn::optim::{Optimizer, SGDOptions, SGD};
use nn::{Forward, Linear, Module};

#[derive(nn::Module)]
struct Mlp {
    l1: Linear,
    l2: Linear,
    l3: Linear,
}

impl Forward for Mlp {
    fn forward(&self, x: &Tensor) -> c10::Result<Tensor> {
        let x = self.l1.call(x)?.relu()?;
        let x = self.l2.call(&x)?.relu()?;
        self.l3.call(&x)
    }
}

/// The number of timed iterations for a budget of `time` seconds, from rank 0's estimate
/// (every rank must run the same number of collectives).
fn iterations(time: f64, estimate_s: f64) -> i64 {
    ((time / estimate_s.max(1e-9)) as i64).clamp(5, 2000)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn report(rank: usize, id: &str, times: Vec<f64>) {
    if rank == 0 {
        let id = match dist::get_backend() {
            Ok("gloo") if !id.contains("fsdp") => id.replace("W8.", "W8.gloo_"),
            _ => id.to_string(),
        };
        let n = times.len();
        println!("{{\"id\": \"{id}\", \"median_s\": {:e}, \"iters\": {n}}}", median(times));
    }
}

/// One training step: zero_grad, forward, cross entropy, backward, SGD step.
fn train_step(
    forward: &dyn Fn(&Tensor) -> c10::Result<Tensor>,
    opt: &mut SGD,
    x: &Tensor,
    y: &Tensor,
) -> c10::Result<()> {
    opt.zero_grad(true)?;
    let loss = aten::ops::cross_entropy_loss(&forward(x)?, y, None, 1, -100, 0.0)?;
    loss.backward()?;
    opt.step()
}

const SIZES: [(&str, usize); 2] = [("W8.allreduce_1M", 1 << 18), ("W8.allreduce_64M", 1 << 24)];

fn ours(time: f64, backend: &str) -> c10::Result<()> {
    dist::init_process_group(backend)?;
    let rank = dist::get_rank()?;
    // Times `f` over a number of iterations rank 0 picks from two warm-up runs.
    let timed = |f: &mut dyn FnMut() -> c10::Result<()>| -> c10::Result<Vec<f64>> {
        let t0 = Instant::now();
        f()?;
        f()?;
        let k = Tensor::from_vec(vec![iterations(time, t0.elapsed().as_secs_f64() / 2.0)], &[1])?;
        dist::broadcast(&k, 0)?;
        (0..k.item::<i64>()?)
            .map(|_| {
                let t = Instant::now();
                f().map(|_| t.elapsed().as_secs_f64())
            })
            .collect()
    };
    for (id, n) in SIZES {
        let t = Tensor::from_vec(vec![1f32; n], &[n as i64])?;
        report(rank, id, timed(&mut || dist::all_reduce(&t, ReduceOp::Sum))?);
    }
    aten::manual_seed(0);
    let model = DistributedDataParallel::new(Mlp {
        l1: Linear::new(784, 512)?,
        l2: Linear::new(512, 512)?,
        l3: Linear::new(512, 10)?,
    })?;
    let mut opt = SGD::new(model.module().parameters(), SGDOptions { lr: 0.01, momentum: 0.9, ..Default::default() })?;
    let x = aten::ops::randn(&[128, 784], None, None, None, None)?;
    let y = aten::ops::randint(10, &[128], Some(c10::ScalarType::I64), None, None, None)?;
    let times = timed(&mut || train_step(&|x| model.forward(x), &mut opt, &x, &y))?;
    report(rank, "W8.ddp_mlp_step", times);
    if backend == "gloo" {
        use distributed::fsdp::{AutoWrapPolicy, FsdpOptions, FullyShardedDataParallel};
        aten::manual_seed(0);
        let mlp = nn::Sequential::new()
            .add(Linear::new(784, 512)?)
            .add(nn::ReLU::new())
            .add(Linear::new(512, 512)?)
            .add(nn::ReLU::new())
            .add(Linear::new(512, 10)?);
        let options = FsdpOptions {
            auto_wrap_policy: Some(AutoWrapPolicy::ModuleTypes(vec!["Linear".into()])),
            ..Default::default()
        };
        let model = FullyShardedDataParallel::with_options(mlp, options)?;
        let mut opt = SGD::new(model.parameters(), SGDOptions { lr: 0.01, momentum: 0.9, ..Default::default() })?;
        let times = timed(&mut || train_step(&|x| model.call(x), &mut opt, &x, &y))?;
        report(rank, "W8.fsdp_step", times);
    }
    dist::destroy_process_group()
}

/// The engine alone: MPI_Allreduce through rsmpi on the world communicator.
fn raw(time: f64) {
    let universe = mpi::initialize().expect("MPI initialises once");
    let world = universe.world();
    let rank = world.rank() as usize;
    for (id, n) in SIZES {
        let send = vec![1f32; n];
        let mut recv = vec![0f32; n];
        let mut run = || world.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum());
        let t0 = Instant::now();
        run();
        run();
        let mut k = iterations(time, t0.elapsed().as_secs_f64() / 2.0);
        world.process_at_rank(0).broadcast_into(&mut k);
        let times = (0..k)
            .map(|_| {
                let t = Instant::now();
                run();
                t.elapsed().as_secs_f64()
            })
            .collect();
        report(rank, &format!("{id}.openmpi"), times);
    }
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1));
    let time = value("--time").and_then(|v| v.parse::<f64>().ok()).unwrap_or(1.0);
    let backend = value("--backend").map_or("mpi", String::as_str);
    if let Err(e) = aten::set_num_threads(1) {
        eprintln!("error: {e}");
        return std::process::ExitCode::FAILURE;
    }
    if args.iter().any(|a| a == "--raw") {
        raw(time);
        return std::process::ExitCode::SUCCESS;
    }
    match ours(time, backend) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
