//! The rank side of the sharding tests: FSDP against one process, under a memory cap; a
//! distributed checkpoint saved at one world size and loaded at another; ZeRO.

use aten::Tensor;
use autograd::TensorAutograd;
use c10::caching_allocator::{limited_peak_bytes, set_memory_limit};
use c10::ScalarType;
use distributed::fsdp::{AutoWrapPolicy, FsdpOptions, FullyShardedDataParallel, MixedPrecision, ShardingStrategy};
use distributed::{self as dist, checkpoint, ReduceOp};
use nn::optim::{Optimizer, SGDOptions, SGD};
use nn::{Forward, Linear, Module, Sequential, Tanh};

use super::{done, init};

/// Width and depth of the FSDP test's model: `LAYERS` × (Linear(W, W), Tanh), then
/// Linear(W, 4). 24 layers of 256: 1,580,036 parameters, 6.3 MB in f32.
pub const W: i64 = 256;
pub const LAYERS: usize = 24;
pub const STEPS: usize = 20;
pub const BATCH: i64 = 32;
const LR: f64 = 0.05;

/// The model, the same on every rank and in every process (seeded).
pub fn make(width: i64) -> c10::Result<Sequential> {
    make_deep(width, LAYERS)
}

/// `layers` × (Linear(width, width), Tanh), then Linear(width, 4) (seeded).
pub fn make_deep(width: i64, layers: usize) -> c10::Result<Sequential> {
    aten::manual_seed(11);
    let mut seq = Sequential::new();
    for _ in 0..layers {
        seq.push(Linear::new(width, width)?);
        seq.push(Tanh::new());
    }
    seq.push(Linear::new(width, 4)?);
    Ok(seq)
}

/// Step `s`'s batch: inputs [BATCH, W] and targets [BATCH, 4], the same everywhere.
pub fn batch(s: usize) -> (Tensor, Tensor) {
    batch_of(s, W)
}

/// Step `s`'s batch for a model of `width`.
pub fn batch_of(s: usize, width: i64) -> (Tensor, Tensor) {
    aten::manual_seed(1000 + s as u64);
    let x = aten::ops::randn(&[BATCH, width], None, None, None, None).unwrap();
    let y = aten::ops::randn(&[BATCH, 4], None, None, None, None).unwrap();
    (x, y)
}

/// The probe input whose outputs the checkpoint tests compare.
pub fn probe() -> Tensor {
    aten::manual_seed(99);
    aten::ops::randn(&[5, W], None, None, None, None).unwrap()
}

pub fn mse(out: &Tensor, y: &Tensor) -> Tensor {
    aten::ops::mse_loss(out, y, 1).unwrap()
}

/// One process, the whole batch: the losses per step and the trained model.
pub fn reference() -> (Vec<f64>, Sequential) {
    reference_of(W, LAYERS)
}

/// [`reference`] for [`make_deep`]`(width, layers)`.
pub fn reference_of(width: i64, layers: usize) -> (Vec<f64>, Sequential) {
    let model = make_deep(width, layers).unwrap();
    let mut opt = SGD::new(model.parameters(), SGDOptions::default().lr(LR)).unwrap();
    let mut losses = Vec::new();
    for s in 0..STEPS {
        let (x, y) = batch_of(s, width);
        opt.zero_grad(true).unwrap();
        let l = mse(&model.call(&x).unwrap(), &y);
        losses.push(l.item::<f64>().unwrap());
        l.backward().unwrap();
        opt.step().unwrap();
    }
    (losses, model)
}

/// `a` within 1e-5 relative (in norm) of `b`.
pub fn assert_close(what: &str, a: &Tensor, b: &Tensor) {
    assert_eq!(a.sizes(), b.sizes(), "{what}");
    let (a, b) = (a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap());
    let diff: f64 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>().sqrt();
    let norm: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    assert!(diff <= 1e-5 * norm.max(1e-30), "{what}: differs by {diff:e} (norm {norm:e})");
}

fn options(strategy: ShardingStrategy) -> FsdpOptions {
    FsdpOptions {
        sharding_strategy: strategy,
        auto_wrap_policy: Some(AutoWrapPolicy::ModuleTypes(vec!["Linear".into()])),
        ..Default::default()
    }
}

/// Trains the FSDP model for `STEPS` steps on this rank's quarter of each batch; the losses
/// averaged over the ranks.
fn train(model: &FullyShardedDataParallel<Sequential>, rank: usize, size: usize) -> Vec<f64> {
    train_with(model, rank, size, W, c10::Device::CPU, &mut |_| {})
}

/// [`train`] for a model of `width` whose targets live on `device`; `check` sees each step's
/// output after its backward.
fn train_with(
    model: &FullyShardedDataParallel<Sequential>,
    rank: usize,
    size: usize,
    width: i64,
    device: c10::Device,
    check: &mut dyn FnMut(&Tensor),
) -> Vec<f64> {
    let mut opt = SGD::new(model.parameters(), SGDOptions::default().lr(LR)).unwrap();
    let part = BATCH / size as i64;
    let mut losses = Vec::new();
    for s in 0..STEPS {
        let (x, y) = batch_of(s, width);
        let x = x.narrow(0, part * rank as i64, part).unwrap();
        let y = y.narrow(0, part * rank as i64, part).unwrap().to_device(device).unwrap();
        opt.zero_grad(true).unwrap();
        let out = model.call(&x).unwrap();
        let l = mse(&out, &y);
        let mean = l.detach().reshape(&[1]).unwrap();
        dist::all_reduce(&mean, ReduceOp::Sum).unwrap();
        losses.push(mean.item::<f64>().unwrap() / size as f64);
        l.backward().unwrap();
        check(&out);
        opt.step().unwrap();
    }
    losses
}

fn assert_losses(what: &str, got: &[f64], want: &[f64]) {
    for (s, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{what}: step {s}: loss {g} vs one process {w}");
    }
}

/// FSDP on 4 ranks: FULL_SHARD under a memory cap the whole model exceeds, then SHARD_GRAD_OP
/// and NO_SHARD, each against one process; the FULL_SHARD model is saved as a distributed
/// checkpoint in `TORCH_DIST_TEST_CKPT`.
pub fn fsdp() {
    aten::set_num_threads(1).unwrap();
    let (rank, size) = init();
    assert_eq!(size, 4);
    let (want_losses, want_model) = reference();
    let want_state = want_model.state_dict();
    let want_probe = want_model.call(&probe()).unwrap();
    drop(want_model);
    let model_bytes = make(W).unwrap().num_parameters() as usize * 4;
    assert_eq!(model_bytes, 6_320_144);

    // What this rank holds before the FSDP model exists. (The model is built whole, then
    // sharded: PyTorch's meta-device initialisation, which avoids that, has no counterpart here.)
    let base = c10::caching_allocator::memory_stats().allocated_bytes;
    let model = FullyShardedDataParallel::with_options(make(W).unwrap(), options(ShardingStrategy::FullShard)).unwrap();
    assert_eq!(model.num_units(), LAYERS + 2, "a unit per Linear, and the root");
    // The optimizer sees one shard per unit; each rank holds a quarter of the model (the root
    // unit has no parameters of its own).
    let shards = model.parameters();
    assert_eq!(shards.len(), LAYERS + 2);
    let held: i64 = shards.iter().map(|p| p.numel()).sum();
    assert!(held * 4 <= 1_580_036 + 4 * 26, "{held} elements on this rank");
    assert_eq!(model.module().get(0).unwrap().named_parameters()[0].0, "_flat_param");

    // The cap: 4/5 of the model's bytes for everything this rank holds for the FSDP model (its
    // shards, their gradients, the working memory of forward and backward). The model's
    // parameters do not fit under it.
    let budget = model_bytes * 4 / 5;
    set_memory_limit(Some(base + budget));
    match make(W) {
        Err(c10::Error::OutOfMemory { .. }) => {}
        Err(e) => panic!("expected out of memory, got {e}"),
        Ok(_) => panic!("the whole model fits under the cap"),
    }
    set_memory_limit(Some(base + budget)); // the peak starts here
    let losses = train(&model, rank, size);
    set_memory_limit(None);
    let peak = limited_peak_bytes() - base;
    println!(
        "rank {rank}: FULL_SHARD peak {peak} bytes (shards {} bytes, their gradients, working memory): {:.0}% of the \
         model's {model_bytes} bytes, under a cap of {budget}",
        held * 4,
        100.0 * peak as f64 / model_bytes as f64
    );
    assert!(peak <= budget);
    assert_losses("FULL_SHARD", &losses, &want_losses);
    let state = model.full_state_dict().unwrap();
    assert_eq!(state.keys().collect::<Vec<_>>(), want_state.keys().collect::<Vec<_>>());
    for (name, t) in want_state.iter() {
        assert_close(&format!("FULL_SHARD {name}"), state.get(name).unwrap(), t);
    }
    {
        let _g = autograd::no_grad();
        assert_close("FULL_SHARD probe", &model.call(&probe()).unwrap(), &want_probe);
    }
    let dir = std::env::var("TORCH_DIST_TEST_CKPT").expect("the launching test names a checkpoint directory");
    checkpoint::save(&model, &dir).unwrap();
    drop(model);

    for strategy in [ShardingStrategy::ShardGradOp, ShardingStrategy::NoShard] {
        let mut o = options(strategy);
        o.backward_prefetch = Some(distributed::fsdp::BackwardPrefetch::BackwardPost);
        o.forward_prefetch = true;
        let model = FullyShardedDataParallel::with_options(make(W).unwrap(), o).unwrap();
        let losses = train(&model, rank, size);
        assert_losses(&format!("{strategy:?}"), &losses, &want_losses);
        let state = model.full_state_dict().unwrap();
        for (name, t) in want_state.iter() {
            assert_close(&format!("{strategy:?} {name}"), state.get(name).unwrap(), t);
        }
    }

    // bf16 parameters and communication, f32 shards: the outputs are bf16, the optimizer's
    // shards f32, and the losses follow the f32 run to bf16's precision.
    let mut o = options(ShardingStrategy::FullShard);
    o.mixed_precision = Some(MixedPrecision {
        param_dtype: Some(ScalarType::BF16),
        reduce_dtype: Some(ScalarType::BF16),
        ..Default::default()
    });
    let model = FullyShardedDataParallel::with_options(make(W).unwrap(), o).unwrap();
    assert!(model.parameters().iter().all(|p| p.dtype() == ScalarType::F32));
    assert_eq!(model.call(&probe()).unwrap().dtype(), ScalarType::BF16);
    let losses = train(&model, rank, size);
    for (s, (g, w)) in losses.iter().zip(&want_losses).enumerate() {
        assert!((g - w).abs() <= 0.03 * w.abs(), "bf16: step {s}: loss {g} vs f32 {w}");
    }
    let state = model.full_state_dict().unwrap();
    assert!(state.iter().all(|(_, t)| t.dtype() == ScalarType::F32));

    // A model that differs between ranks is an error on every rank.
    let odd = Sequential::new().add(Linear::new(if rank == 0 { 3 } else { 4 }, 2).unwrap());
    let err = FullyShardedDataParallel::new(odd).err().expect("different models").to_string();
    assert!(err.contains("FSDP expects same model across all ranks"), "{err}");
    dist::destroy_process_group().unwrap();
    done(rank);
}

/// Loads the checkpoint the 4-rank FSDP test saved into a 2-rank FSDP model: its outputs and
/// full state are the trained model's (recomputed here by one process).
pub fn reshard() {
    aten::set_num_threads(1).unwrap();
    let (rank, size) = init();
    assert_eq!(size, 2);
    let dir = std::env::var("TORCH_DIST_TEST_CKPT").expect("the launching test names a checkpoint directory");
    let (_, want) = reference();
    let model = FullyShardedDataParallel::with_options(make(W).unwrap(), options(ShardingStrategy::FullShard)).unwrap();
    checkpoint::load(&model, &dir).unwrap();
    {
        let _g = autograd::no_grad();
        assert_close("outputs after resharding 4 -> 2", &model.call(&probe()).unwrap(), &want.call(&probe()).unwrap());
    }
    let state = model.full_state_dict().unwrap();
    for (name, t) in want.state_dict().iter() {
        assert_close(&format!("resharded {name}"), state.get(name).unwrap(), t);
    }
    // A model of another shape: an error naming the parameter, and the model unchanged.
    let wrong =
        FullyShardedDataParallel::with_options(make(W / 2).unwrap(), options(ShardingStrategy::FullShard)).unwrap();
    let before = wrong.full_state_dict().unwrap();
    let err = checkpoint::load(&wrong, &dir).unwrap_err().to_string();
    assert!(err.contains("size mismatch for 0.weight"), "{err}");
    let after = wrong.full_state_dict().unwrap();
    for (name, t) in before.iter() {
        assert_eq!(after.get(name).unwrap().to_vec::<f32>().unwrap(), t.to_vec::<f32>().unwrap(), "{name}");
    }
    // A directory that is not a checkpoint.
    let err = checkpoint::load(&model, std::env::temp_dir()).unwrap_err().to_string();
    assert!(err.contains(".metadata"), "{err}");
    dist::destroy_process_group().unwrap();
    done(rank);
}

/// ZeroRedundancyOptimizer with Adam over a DDP model on 2 ranks against one process.
pub fn zero() {
    use distributed::{DistributedDataParallel, ZeroRedundancyOptimizer};
    use nn::optim::{Adam, AdamOptions};
    aten::set_num_threads(1).unwrap();
    let (rank, size) = init();
    assert_eq!(size, 2);
    let make = || {
        aten::manual_seed(5);
        Sequential::new().add(Linear::new(W, 64).unwrap()).add(Tanh::new()).add(Linear::new(64, 4).unwrap())
    };
    let adam = |p: Vec<nn::Parameter>| -> c10::Result<Box<dyn Optimizer>> {
        Ok(Box::new(Adam::new(p, AdamOptions::default().lr(0.01))?))
    };
    let want = make();
    let mut opt = adam(want.parameters()).unwrap();
    for s in 0..STEPS {
        let (x, y) = batch(s);
        opt.zero_grad(true).unwrap();
        mse(&want.call(&x).unwrap(), &y).backward().unwrap();
        opt.step().unwrap();
    }

    let model = DistributedDataParallel::new(make()).unwrap();
    let mut zero = ZeroRedundancyOptimizer::new(model.module().parameters(), Box::new(adam), None).unwrap();
    // Largest first, each to the emptiest rank: 0.weight (16384) -> 0, 2.weight (256) -> 1,
    // 0.bias (64) -> 1, 2.bias (4) -> 1.
    assert_eq!(zero.owners(), [0, 1, 1, 1]);
    let mine = zero.local_optimizer().group_params(0).len();
    assert_eq!(mine, if rank == 0 { 1 } else { 3 });
    let part = BATCH / 2;
    for s in 0..STEPS {
        let (x, y) = batch(s);
        let (x, y) = (x.narrow(0, part * rank as i64, part).unwrap(), y.narrow(0, part * rank as i64, part).unwrap());
        zero.zero_grad(true).unwrap();
        mse(&model.forward(&x).unwrap(), &y).backward().unwrap();
        zero.step().unwrap();
    }
    // Only this rank's parameters have Adam state here.
    let local = zero.local_optimizer().state_dict().unwrap();
    assert_eq!(local.state.len(), mine);
    for ((name, got), (_, w)) in model.module().named_parameters().iter().zip(want.named_parameters()) {
        assert_close(&format!("ZeRO {name}"), got.tensor(), w.tensor());
    }
    let err = zero.state_dict().unwrap_err().to_string();
    assert!(err.contains("consolidate_state_dict"), "{err}");
    dist::destroy_process_group().unwrap();
    done(rank);
}

/// The offloaded model of [`fsdp_offload`]: 29 × (Linear(384, 384), Tanh), then
/// Linear(384, 4): 4,288,900 parameters, 17,155,600 bytes in f32, 4.09 times the device cap of
/// 4 MiB. A unit's gathered parameters (591 KB) stay under the allocator's 1 MB small-block size.
pub const OFFLOAD_W: i64 = 384;
pub const OFFLOAD_LAYERS: usize = 29;
pub const DEVICE_CAP: usize = 4 << 20;

/// FSDP with CPU offload on 4 ranks, each computing on its emulated CUDA device under a cap of a
/// quarter of the model's bytes (Note [FSDP CPU offload]): the shards and their gradients stay
/// on the CPU, the losses match one process within 1e-5 for 20 steps, the device's peak is
/// reported and under the cap, and the whole model does not fit on the device. Then `device_id`
/// without offload: the shards and gradients on the device, the outputs of the CPU model.
#[cfg(feature = "cuda")]
pub fn fsdp_offload() {
    use distributed::fsdp::CpuOffload;
    kernels_cuda::driver::select(kernels_cuda::driver::DriverKind::Emulator).unwrap();
    kernels_cuda::runtime::init();
    aten::set_num_threads(1).unwrap();
    let (rank, size) = init();
    assert_eq!(size, 4);
    let cuda = c10::Device::cuda(0);
    let (want_losses, want_model) = reference_of(OFFLOAD_W, OFFLOAD_LAYERS);
    let want_state = want_model.state_dict();
    drop(want_model);
    let model_bytes = make_deep(OFFLOAD_W, OFFLOAD_LAYERS).unwrap().num_parameters() as usize * 4;
    assert_eq!(model_bytes, 17_155_600);
    assert!(model_bytes >= 4 * DEVICE_CAP, "the model is 4x the device cap");

    // The cap on the device's caching allocator (PyTorch's set_per_process_memory_fraction).
    let capacity = kernels_cuda::runtime::mem_get_info(cuda).unwrap().1;
    kernels_cuda::runtime::set_per_process_memory_fraction(DEVICE_CAP as f64 / capacity as f64, cuda).unwrap();
    // The whole model does not fit on the device.
    let mut whole = make_deep(OFFLOAD_W, OFFLOAD_LAYERS).unwrap();
    match whole.to_device(cuda) {
        Err(c10::Error::CudaOutOfMemory { allowed: Some(DEVICE_CAP), .. }) => {}
        Err(e) => panic!("expected out of memory, got {e}"),
        Ok(_) => panic!("the whole model fits under the device cap"),
    }
    drop(whole);
    kernels_cuda::runtime::empty_cache().unwrap();
    kernels_cuda::runtime::reset_peak_memory_stats(cuda).unwrap();

    let options = FsdpOptions {
        auto_wrap_policy: Some(AutoWrapPolicy::ModuleTypes(vec!["Linear".into()])),
        cpu_offload: CpuOffload { offload_params: true },
        device_id: Some(cuda),
        ..Default::default()
    };
    let model = FullyShardedDataParallel::with_options(make_deep(OFFLOAD_W, OFFLOAD_LAYERS).unwrap(), options).unwrap();
    let shards = model.parameters();
    assert!(shards.iter().all(|p| p.device().is_cpu()), "the shards stay on the CPU");
    let losses = train_with(&model, rank, size, OFFLOAD_W, cuda, &mut |out| {
        assert_eq!(out.device(), cuda, "the model computes on the device");
        // (The root unit has no parameters of its own: its shard is empty and gets no gradient.)
        for p in shards.iter().filter(|p| p.numel() > 0) {
            let g = p.tensor().grad().expect("every shard has a gradient");
            assert!(g.device().is_cpu(), "the gradients stay on the CPU");
        }
    });
    let peak = kernels_cuda::runtime::max_memory_reserved(cuda).unwrap();
    let allocated = kernels_cuda::runtime::max_memory_allocated(cuda).unwrap();
    println!(
        "rank {rank}: CPU offload device peak {peak} bytes reserved ({allocated} allocated) under a cap of \
         {DEVICE_CAP}, for a model of {model_bytes} bytes"
    );
    assert!(peak <= DEVICE_CAP);
    assert_losses("CPU offload", &losses, &want_losses);
    let state = model.full_state_dict().unwrap();
    for (name, t) in want_state.iter() {
        assert_close(&format!("CPU offload {name}"), &state.get(name).unwrap().to_device(c10::Device::CPU).unwrap(), t);
    }

    // `device_id` without offload: the shards move to the device, and the model computes there
    // with the outputs of the model on the CPU.
    kernels_cuda::runtime::set_per_process_memory_fraction(1.0, cuda).unwrap();
    let options = FsdpOptions {
        auto_wrap_policy: Some(AutoWrapPolicy::ModuleTypes(vec!["Linear".into()])),
        device_id: Some(cuda),
        ..Default::default()
    };
    let on_device =
        FullyShardedDataParallel::with_options(make_deep(OFFLOAD_W, OFFLOAD_LAYERS).unwrap(), options).unwrap();
    assert!(on_device.parameters().iter().all(|p| p.device() == cuda), "the shards move to device_id");
    let (x, _) = batch_of(0, OFFLOAD_W);
    let out = on_device.call(&x).unwrap();
    assert_eq!(out.device(), cuda);
    let want = make_deep(OFFLOAD_W, OFFLOAD_LAYERS).unwrap().call(&x).unwrap();
    assert_close("device_id", &out.cpu().unwrap(), &want);
    aten::ops::sum(&out, None).unwrap().backward().unwrap();
    for p in on_device.parameters().iter().filter(|p| p.numel() > 0) {
        assert_eq!(p.tensor().grad().expect("a gradient").device(), cuda, "the gradients stay on the device");
    }
    dist::destroy_process_group().unwrap();
    done(rank);
}
