//! The rank side of the multi-process tests, shared by the backends that run them: `mpi.rs`
//! starts these under `mpirun`, `gloo.rs` under the `launch` binary. Each function is the
//! body of one rank; the launching test checks that every rank reached [`done`].
#![allow(dead_code)]

use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use aten::Tensor;
use c10::{Error, ScalarType};
use distributed::{self as dist, InitOptions, ReduceOp};

pub mod sharded;

/// Waits for a launcher (`mpirun`, `launch`) started with piped output: whether it succeeded
/// and what it printed (read while it runs, so a full pipe never stalls it). Kills it and fails
/// the test if it runs past `limit`.
pub fn finish(child: Child, what: &str, limit: Duration) -> (bool, String) {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let (out, late) = match rx.recv_timeout(limit) {
        Ok(out) => (out, false),
        Err(_) => {
            // SAFETY: signals the launcher this test started, which has not been waited for.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            (rx.recv().expect("the waiting thread sends once"), true)
        }
    };
    let out = out.expect("waiting for the launcher");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!late, "{what} did not end within {limit:?}:\n{text}");
    (out.status.success(), text)
}

/// Called by a rank at the end of its test.
pub fn done(rank: usize) {
    let dir = std::env::var("TORCH_DIST_TEST_DIR").expect("started by a launcher");
    std::fs::write(std::path::Path::new(&dir).join(format!("rank{rank}")), b"").unwrap();
}

/// The backend the launching test asked for (`TORCH_DIST_TEST_BACKEND`: `mpi` or `gloo`).
pub fn backend() -> String {
    std::env::var("TORCH_DIST_TEST_BACKEND").unwrap_or_else(|_| "mpi".into())
}

/// Initialises the default group in a rank started by the launching test (`mpirun` for MPI,
/// the `launch` binary for Gloo, which rendezvous through `env://`).
pub fn init() -> (usize, usize) {
    let np: usize = std::env::var("TORCH_DIST_TEST_RANKS")
        .expect("this test is one rank of a multi-process test: it is started by a launcher from another test")
        .parse()
        .unwrap();
    dist::init_process_group(&backend()).unwrap();
    let (rank, size) = (dist::get_rank().unwrap(), dist::get_world_size().unwrap());
    assert_eq!(size, np);
    (rank, size)
}

// ---- values computed on one rank -----------------------------------------------------------

/// Element `i` of rank `r`'s input: 1..=3 (0/1 for bool), so sums, products and the bitwise
/// operations stay exact in every dtype with 4 ranks.
fn value(dtype: ScalarType, r: usize, i: usize) -> f64 {
    if dtype == ScalarType::Bool {
        ((r + i) % 2) as f64
    } else {
        (1 + (r + i) % 3) as f64
    }
}

fn input(dtype: ScalarType, r: usize, n: usize) -> Tensor {
    let v: Vec<f64> = (0..n).map(|i| value(dtype, r, i)).collect();
    Tensor::from_vec(v, &[n as i64]).unwrap().to(dtype).call().unwrap()
}

/// The reduction of element `i` over `size` ranks, in f64.
fn reduced(dtype: ScalarType, op: ReduceOp, size: usize, i: usize) -> f64 {
    let vals: Vec<f64> = (0..size).map(|r| value(dtype, r, i)).collect();
    let ints = || vals.iter().map(|&v| v as i64);
    let bool_ = dtype == ScalarType::Bool;
    match op {
        ReduceOp::Sum if bool_ => vals.iter().cloned().fold(0.0, f64::max),
        ReduceOp::Sum => vals.iter().sum(),
        ReduceOp::Avg if dtype.is_floating_point() => vals.iter().sum::<f64>() / size as f64,
        ReduceOp::Avg => (vals.iter().sum::<f64>() as i64 / size as i64) as f64,
        ReduceOp::Product if bool_ => vals.iter().cloned().fold(1.0, f64::min),
        ReduceOp::Product => vals.iter().product(),
        ReduceOp::Min => vals.iter().cloned().fold(f64::INFINITY, f64::min),
        ReduceOp::Max => vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        ReduceOp::BAnd => ints().fold(-1, |a, b| a & b) as f64,
        ReduceOp::BOr => ints().fold(0, |a, b| a | b) as f64,
        ReduceOp::BXor => ints().fold(0, |a, b| a ^ b) as f64,
    }
}

fn values(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

const OPS: [ReduceOp; 8] = [
    ReduceOp::Sum,
    ReduceOp::Avg,
    ReduceOp::Product,
    ReduceOp::Min,
    ReduceOp::Max,
    ReduceOp::BAnd,
    ReduceOp::BOr,
    ReduceOp::BXor,
];

fn op_applies(op: ReduceOp, dtype: ScalarType) -> bool {
    match op {
        ReduceOp::BAnd | ReduceOp::BOr | ReduceOp::BXor => dtype.is_integral(true),
        ReduceOp::Avg => dtype != ScalarType::Bool,
        _ => true,
    }
}

// ---- the ranks -----------------------------------------------------------------------------

pub fn collectives() {
    let (rank, size) = init();
    let n = 7;
    // The real dtypes: `input` and `values` go through f64 (complex collectives are MPI's
    // complex datatypes, not covered here).
    for dtype in ScalarType::REAL {
        let ctx = |what: &str| format!("{what} {} on rank {rank}", dtype.name());
        // all_reduce with every reduction that applies.
        for op in OPS.into_iter().filter(|op| op_applies(*op, dtype)) {
            let t = input(dtype, rank, n);
            dist::all_reduce(&t, op).unwrap();
            let want: Vec<f64> = (0..n).map(|i| reduced(dtype, op, size, i)).collect();
            assert_eq!(values(&t), want, "{}", ctx(&format!("all_reduce {op:?}")));
            assert_eq!(t.dtype(), dtype);
        }
        // broadcast from the last rank.
        let t = input(dtype, rank, n);
        dist::broadcast(&t, size - 1).unwrap();
        assert_eq!(values(&t), values(&input(dtype, size - 1, n)), "{}", ctx("broadcast"));
        // reduce into rank 1: the others' tensors are unchanged.
        let t = input(dtype, rank, n);
        let op = if dtype == ScalarType::Bool { ReduceOp::Max } else { ReduceOp::Sum };
        dist::reduce(&t, 1, op).unwrap();
        let want: Vec<f64> = if rank == 1 {
            (0..n).map(|i| reduced(dtype, op, size, i)).collect()
        } else {
            values(&input(dtype, rank, n))
        };
        assert_eq!(values(&t), want, "{}", ctx("reduce"));
        // all_gather into a list and into one tensor (2-d inputs).
        let x = input(dtype, rank, 6).view(&[2, 3]).unwrap();
        let outs: Vec<Tensor> = (0..size).map(|_| input(dtype, 0, 6).view(&[2, 3]).unwrap().zero_().unwrap()).collect();
        dist::all_gather(&outs, &x).unwrap();
        for (r, o) in outs.iter().enumerate() {
            assert_eq!(o.sizes(), &[2, 3]);
            assert_eq!(values(o), values(&input(dtype, r, 6)), "{}", ctx("all_gather"));
        }
        let big = input(dtype, 0, 6 * size).view(&[2 * size as i64, 3]).unwrap();
        dist::all_gather_into_tensor(&big, &x).unwrap();
        let want: Vec<f64> = (0..size).flat_map(|r| values(&input(dtype, r, 6))).collect();
        assert_eq!(values(&big), want, "{}", ctx("all_gather_into_tensor"));
        // gather into rank 0, scatter from rank 0.
        let outs: Vec<Tensor> = (0..size).map(|_| input(dtype, 0, n).zero_().unwrap()).collect();
        dist::gather(&input(dtype, rank, n), (rank == 0).then_some(&outs[..]), 0).unwrap();
        if rank == 0 {
            for (r, o) in outs.iter().enumerate() {
                assert_eq!(values(o), values(&input(dtype, r, n)), "{}", ctx("gather"));
            }
        }
        let ins: Vec<Tensor> = (0..size).map(|r| input(dtype, r + 10, n)).collect();
        let out = input(dtype, 0, n).zero_().unwrap();
        dist::scatter(&out, (rank == 0).then_some(&ins[..]), 0).unwrap();
        assert_eq!(values(&out), values(&input(dtype, rank + 10, n)), "{}", ctx("scatter"));
        // reduce_scatter: block j of every rank's input is reduced into rank j.
        let op = if dtype == ScalarType::Bool { ReduceOp::BOr } else { ReduceOp::Sum };
        let ins: Vec<Tensor> = (0..size).map(|j| input(dtype, rank + j, n)).collect();
        let out = input(dtype, 0, n).zero_().unwrap();
        dist::reduce_scatter(&out, &ins, op).unwrap();
        let want: Vec<f64> = (0..n)
            .map(|i| {
                let vals = (0..size).map(|r| value(dtype, r + rank, i));
                if dtype == ScalarType::Bool {
                    vals.fold(0.0, f64::max)
                } else {
                    vals.sum()
                }
            })
            .collect();
        assert_eq!(values(&out), want, "{}", ctx("reduce_scatter"));
        let flat = Tensor::from_vec(
            (0..size * n).map(|k| value(dtype, rank + k / n, k % n)).collect::<Vec<f64>>(),
            &[(size * n) as i64],
        )
        .unwrap()
        .to(dtype)
        .call()
        .unwrap();
        let out = input(dtype, 0, n).zero_().unwrap();
        let before = values(&flat);
        dist::reduce_scatter_tensor(&out, &flat, op).unwrap();
        assert_eq!(values(&out), want, "{}", ctx("reduce_scatter_tensor"));
        assert_eq!(values(&flat), before, "{}: the input is left as it was", ctx("reduce_scatter_tensor"));
        // all_to_all with a different size for every pair: rank r sends r + j + 1 elements of
        // value 10 r + j to rank j.
        let fill = |len: usize, v: usize| {
            let v = if dtype == ScalarType::Bool { (v % 2) as f64 } else { (v % 50) as f64 };
            Tensor::from_vec(vec![v; len], &[len as i64]).unwrap().to(dtype).call().unwrap()
        };
        let ins: Vec<Tensor> = (0..size).map(|j| fill(rank + j + 1, 10 * rank + j)).collect();
        let outs: Vec<Tensor> = (0..size).map(|j| fill(rank + j + 1, 0)).collect();
        dist::all_to_all(&outs, &ins).unwrap();
        for (j, o) in outs.iter().enumerate() {
            assert_eq!(values(o), values(&fill(rank + j + 1, 10 * j + rank)), "{}", ctx("all_to_all"));
        }
    }
    // Empty buffers: every rank agrees and nothing moves.
    let empty = Tensor::from_vec(Vec::<f32>::new(), &[0]).unwrap();
    dist::all_reduce(&empty, ReduceOp::Sum).unwrap();
    dist::broadcast(&empty, 0).unwrap();
    let gathered = Tensor::from_vec(Vec::<f32>::new(), &[0]).unwrap();
    dist::all_gather_into_tensor(&gathered, &empty).unwrap();
    dist::reduce_scatter_tensor(&empty, &gathered, ReduceOp::Sum).unwrap();
    assert_eq!((empty.sizes(), gathered.sizes()), (&[0i64][..], &[0i64][..]));
    // A large all_reduce: the result is exact.
    let m = 1 << 20;
    let t = Tensor::from_vec(vec![(rank + 1) as f32; m], &[m as i64]).unwrap();
    dist::all_reduce(&t, ReduceOp::Sum).unwrap();
    let want = (size * (size + 1) / 2) as f32;
    assert!(t.to_vec::<f32>().unwrap().iter().all(|&v| v == want));
    dist::barrier().unwrap();
    dist::destroy_process_group().unwrap();
    assert!(!dist::is_initialized());
    if backend() == "mpi" {
        // The group can be made again (MPI stays initialised until exit).
        dist::init_process_group("mpi").unwrap();
        let t = Tensor::from_vec(vec![1i64], &[1]).unwrap();
        dist::all_reduce(&t, ReduceOp::Sum).unwrap();
        assert_eq!(t.item::<i64>().unwrap(), size as i64);
        dist::destroy_process_group().unwrap();
    }
    done(rank);
}

pub fn point_to_point() {
    let (rank, size) = init();
    // A ring: every rank posts its send before receiving, which must not deadlock.
    let next = (rank + 1) % size;
    let prev = (rank + size - 1) % size;
    let out = Tensor::from_vec(vec![rank as f64; 5], &[5]).unwrap();
    let w = dist::isend(&out, next).unwrap();
    let inp = Tensor::from_vec(vec![-1.0f64; 5], &[5]).unwrap();
    assert_eq!(dist::recv(&inp, Some(prev)).unwrap(), prev);
    w.wait().unwrap();
    assert!(w.is_completed() && w.is_success());
    assert_eq!(inp.to_vec::<f64>().unwrap(), vec![prev as f64; 5]);
    // Rank 0 receives from any source, and learns who sent each message (tag 5: later messages
    // from the same ranks must not match).
    let g = dist::default_group().unwrap();
    if rank == 0 {
        let mut seen = Vec::new();
        for _ in 1..size {
            let t = Tensor::from_vec(vec![0i32; 2], &[2]).unwrap();
            let src = g.recv(&t, None, 5).unwrap().source_rank().unwrap();
            assert_eq!(t.to_vec::<i32>().unwrap(), vec![src as i32 * 7; 2]);
            seen.push(src);
        }
        seen.sort();
        assert_eq!(seen, (1..size).collect::<Vec<_>>());
    } else {
        g.send(&Tensor::from_vec(vec![rank as i32 * 7; 2], &[2]).unwrap(), 0, 5).unwrap().wait().unwrap();
    }
    // Tags keep messages apart.
    if rank == 0 {
        let a = Tensor::from_vec(vec![0u8; 1], &[1]).unwrap();
        let b = Tensor::from_vec(vec![0u8; 1], &[1]).unwrap();
        let wb = g.recv(&b, Some(1), 2).unwrap();
        let wa = g.recv(&a, Some(1), 1).unwrap();
        wa.wait().unwrap();
        wb.wait().unwrap();
        assert_eq!((a.item::<u8>().unwrap(), b.item::<u8>().unwrap()), (11, 22));
    } else if rank == 1 {
        g.send(&Tensor::from_vec(vec![11u8], &[1]).unwrap(), 0, 1).unwrap().wait().unwrap();
        g.send(&Tensor::from_vec(vec![22u8], &[1]).unwrap(), 0, 2).unwrap().wait().unwrap();
    }
    // A receive whose tensor is larger than the message is an error, not a partial result.
    if rank == 0 {
        let t = Tensor::from_vec(vec![0f32; 4], &[4]).unwrap();
        let err = dist::recv(&t, Some(1)).unwrap_err();
        assert!(err.to_string().contains("has 3 elements"), "{err}");
    } else if rank == 1 {
        dist::send(&Tensor::from_vec(vec![1f32; 3], &[3]).unwrap(), 0).unwrap();
    }
    // Asynchronous collectives: issue several, then wait.
    let ts: Vec<Tensor> = (0..3).map(|k| Tensor::from_vec(vec![(rank + k) as f32; 1000], &[1000]).unwrap()).collect();
    let works: Vec<_> = ts.iter().map(|t| g.all_reduce(t, ReduceOp::Max).unwrap()).collect();
    for (k, (w, t)) in works.iter().zip(&ts).enumerate() {
        w.wait().unwrap();
        assert!(w.is_completed());
        assert!(w.exception().is_none());
        assert_eq!(t.to_vec::<f32>().unwrap()[999], (size - 1 + k) as f32);
    }
    // Objects.
    let mine = (rank, format!("rank {rank}"), vec![rank as f64 * 0.5; rank]);
    let all = dist::all_gather_object(&mine).unwrap();
    for (r, o) in all.iter().enumerate() {
        assert_eq!(o, &(r, format!("rank {r}"), vec![r as f64 * 0.5; r]));
    }
    let mut objs: Vec<Option<String>> =
        if rank == 2 { vec![Some("a".into()), None, Some("ccc".into())] } else { vec![None, None, None] };
    dist::broadcast_object_list(&mut objs, 2).unwrap();
    assert_eq!(objs, vec![Some("a".to_string()), None, Some("ccc".to_string())]);
    dist::destroy_process_group().unwrap();
    done(rank);
}

pub fn groups_and_errors() {
    let (rank, size) = init();
    assert_eq!(size, 4);
    // new_group sorts the ranks; non-members get a group whose operations are errors.
    let g = dist::new_group(&[3, 1]).unwrap();
    assert_eq!(g.ranks(), &[1, 3]);
    assert_eq!(g.size(), 2);
    let t = Tensor::from_vec(vec![rank as i64 + 1], &[1]).unwrap();
    if rank == 1 || rank == 3 {
        assert_eq!(g.rank(), Some(rank / 2));
        g.all_reduce(&t, ReduceOp::Sum).unwrap().wait().unwrap();
        assert_eq!(t.item::<i64>().unwrap(), 2 + 4);
        // Group ranks: broadcast from group rank 1 (global rank 3).
        let b = Tensor::from_vec(vec![rank as i64], &[1]).unwrap();
        g.broadcast(&b, 1).unwrap().wait().unwrap();
        assert_eq!(b.item::<i64>().unwrap(), 3);
        assert_eq!(g.global_rank(1).unwrap(), 3);
        assert_eq!(g.group_rank(1).unwrap(), 0);
    } else {
        assert!(!g.is_member());
        assert_eq!(g.rank(), None);
        let err = g.all_reduce(&t, ReduceOp::Sum).unwrap_err();
        assert!(err.to_string().contains("not a member"), "{err}");
    }
    // Errors every rank finds alone leave the group usable.
    let nc = Tensor::from_vec((0..6).map(|v| v as f32).collect(), &[2, 3]).unwrap().transpose(0, 1).unwrap();
    let err = dist::all_reduce(&nc, ReduceOp::Sum).unwrap_err();
    assert!(err.to_string().contains("Tensors must be contiguous"), "{err}");
    let f = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let err = dist::all_reduce(&f, ReduceOp::BAnd).unwrap_err();
    assert!(err.to_string().contains("Cannot use ReduceOp.BAND with float32"), "{err}");
    let b = Tensor::from_vec(vec![true], &[1]).unwrap();
    assert!(dist::all_reduce(&b, ReduceOp::Avg).is_err());
    assert!(dist::broadcast(&f, 4).unwrap_err().to_string().contains("invalid source rank 4"));
    let err = dist::all_gather(std::slice::from_ref(&f), &f).unwrap_err();
    assert!(err.to_string().contains("expected the group size 4"), "{err}");
    let err = dist::gather(&f, Some(&[f.clone(), f.clone(), f.clone(), f.clone()]), (rank + 1) % 4).unwrap_err();
    assert!(err.to_string().contains("must NOT be specified"), "{err}");
    let err = dist::all_gather_into_tensor(&f, &f).unwrap_err();
    assert!(err.to_string().contains("world_size times input tensor size"), "{err}");
    // Sizes that differ between ranks: an error on every rank, naming each rank's call, and
    // nothing is transferred.
    let n = if rank == 2 { 5 } else { 4 };
    let t = Tensor::from_vec(vec![rank as f32; n], &[n as i64]).unwrap();
    let err = dist::all_reduce(&t, ReduceOp::Sum).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Distributed { .. }), "{err:?}");
    assert!(msg.contains("rank 2 called all_reduce of 5 float32 elements"), "{msg}");
    assert!(msg.contains("rank 0 called all_reduce of 4 float32 elements"), "{msg}");
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![rank as f32; n]);
    // Different dtypes and different collectives, too.
    let t = if rank == 0 {
        Tensor::from_vec(vec![1i32; 4], &[4]).unwrap()
    } else {
        Tensor::from_vec(vec![1i64; 4], &[4]).unwrap()
    };
    let err = dist::all_reduce(&t, ReduceOp::Sum).unwrap_err();
    assert!(err.to_string().contains("int32") && err.to_string().contains("int64"), "{err}");
    let t = Tensor::from_vec(vec![1f32; 4], &[4]).unwrap();
    let err = if rank == 3 { dist::broadcast(&t, 0) } else { dist::all_reduce(&t, ReduceOp::Sum) }.unwrap_err();
    assert!(err.to_string().contains("rank 3 called broadcast"), "{err}");
    // all_to_all whose sizes disagree between a pair.
    let ins: Vec<Tensor> = (0..4).map(|_| Tensor::from_vec(vec![1f32; 2], &[2]).unwrap()).collect();
    let outs: Vec<Tensor> = (0..4)
        .map(|j| {
            let len = if rank == 1 && j == 0 { 3 } else { 2 };
            Tensor::from_vec(vec![0f32; len], &[len as i64]).unwrap()
        })
        .collect();
    let err = dist::all_to_all(&outs, &ins).unwrap_err();
    assert!(err.to_string().contains("rank 0 sends 2 elements to rank 1, which expects 3"), "{err}");
    // After all that, the group still works.
    let t = Tensor::from_vec(vec![1f32; 4], &[4]).unwrap();
    dist::all_reduce(&t, ReduceOp::Sum).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![4.0; 4]);
    // A second init is an error; so is an MPI world size that is not the one asked for.
    assert!(dist::init_process_group(&backend()).unwrap_err().to_string().contains("twice"));
    dist::destroy_process_group().unwrap();
    if backend() == "mpi" {
        let err = dist::init_process_group_with(InitOptions::new("mpi").world_size(3)).unwrap_err();
        assert!(err.to_string().contains("mpirun"), "{err}");
    }
    // NCCL is refused: not built in, or (with `cuda`) no GPU on the emulated device. Under our
    // launcher env:// would first rendezvous for real, at the port this job's store still
    // serves (the group `g` keeps it), so only where that cannot happen.
    if backend() == "mpi" || !dist::is_nccl_available() {
        assert!(dist::init_process_group("nccl").is_err());
    }
    assert!(dist::get_rank().unwrap_err().to_string().contains("has not been initialized"));
    done(rank);
}

pub fn timeout() {
    let np: usize = std::env::var("TORCH_DIST_TEST_RANKS").expect("started by a launcher").parse().unwrap();
    assert_eq!(np, 2);
    dist::init_process_group_with(InitOptions::new(&backend()).timeout(Duration::from_millis(1500))).unwrap();
    let rank = dist::get_rank().unwrap();
    let t = Tensor::from_vec(vec![1f32; 3], &[3]).unwrap();
    if rank == 0 {
        let start = Instant::now();
        let err = dist::all_reduce(&t, ReduceOp::Sum).unwrap_err();
        let waited = start.elapsed();
        assert!(matches!(err, Error::DistTimeout { .. }), "{err:?}");
        assert!(waited >= Duration::from_millis(1400) && waited < Duration::from_secs(10), "{waited:?}");
    } else {
        // Arrive late: after rank 0 gave up, so that the job can end cleanly.
        std::thread::sleep(Duration::from_secs(3));
        let start = Instant::now();
        let late = dist::all_reduce(&t, ReduceOp::Sum);
        if backend() == "mpi" {
            late.unwrap();
        } else {
            // Gloo closes a group's connections when an operation times out (as PyTorch's does):
            // the late rank gets an error at once instead of waiting out its own timeout.
            let err = late.unwrap_err();
            assert!(start.elapsed() < Duration::from_millis(1400), "{:?}: {err}", start.elapsed());
        }
    }
    if backend() == "mpi" {
        // The late all_reduce completes, then the barrier.
        dist::default_group().unwrap().barrier().unwrap().wait_timeout(Duration::from_secs(30)).unwrap();
    } else {
        // The group cannot be used after a timeout.
        assert!(dist::barrier().is_err());
    }
    dist::destroy_process_group().unwrap();
    done(rank);
}

// ---- DistributedDataParallel ---------------------------------------------------------------

pub mod ddp_model {
    use super::*;
    use autograd::TensorAutograd;
    use nn::data::{Mnist, MNIST_MEAN, MNIST_STD};
    use nn::optim::{Optimizer, SGDOptions, SGD};
    use nn::{Conv2d, Forward, Linear, Module};

    /// The main job's CNN without its dropout (whose masks would differ between a rank and
    /// the single process): conv(1->32, 3) - relu - pool - conv(32->64, 3) - relu - pool -
    /// linear(1600->128) - relu - linear(128->10).
    #[derive(nn::Module)]
    pub struct Cnn {
        conv1: Conv2d,
        conv2: Conv2d,
        fc1: Linear,
        fc2: Linear,
    }

    impl Cnn {
        pub fn new() -> Cnn {
            aten::manual_seed(7);
            Cnn {
                conv1: Conv2d::new(1, 32, 3).unwrap(),
                conv2: Conv2d::new(32, 64, 3).unwrap(),
                fc1: Linear::new(1600, 128).unwrap(),
                fc2: Linear::new(128, 10).unwrap(),
            }
        }
    }

    impl Forward for Cnn {
        fn forward(&self, x: &Tensor) -> c10::Result<Tensor> {
            let pool = |t: &Tensor| aten::ops::max_pool2d(t, &[2], &[2], &[0], &[1], false);
            let x = pool(&self.conv1.call(x)?.relu()?)?;
            let x = pool(&self.conv2.call(&x)?.relu()?)?;
            let x = aten::ops::flatten(&x, 1, -1)?;
            self.fc2.call(&self.fc1.call(&x)?.relu()?)
        }
    }

    /// The CNN and a layer that the forward pass never uses.
    #[derive(nn::Module)]
    pub struct WithUnused {
        pub cnn: Cnn,
        pub spare: Linear,
    }

    impl Forward for WithUnused {
        fn forward(&self, x: &Tensor) -> c10::Result<Tensor> {
            self.cnn.forward(x)
        }
    }

    pub const STEPS: usize = 20;
    pub const LR: f64 = 0.05;

    /// The first `STEPS * 64` shipped digits.
    pub fn digits() -> (Tensor, Tensor) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/mnist_5k.csv.gz");
        let all = Mnist::from_csv(&path).unwrap();
        let n = (STEPS * 64) as i64;
        (all.images_f32(MNIST_MEAN, MNIST_STD).unwrap().narrow(0, 0, n).unwrap(), all.labels().narrow(0, 0, n).unwrap())
    }

    pub fn loss(out: &Tensor, y: &Tensor) -> Tensor {
        aten::ops::cross_entropy_loss(out, y, None, 1, -100, 0.0).unwrap()
    }

    pub fn sgd(m: &impl Module) -> SGD {
        SGD::new(m.parameters(), SGDOptions::default().lr(LR)).unwrap()
    }

    /// One process, batch 64.
    pub fn reference(x: &Tensor, y: &Tensor) -> Cnn {
        let model = Cnn::new();
        let mut opt = sgd(&model);
        for s in 0..STEPS as i64 {
            opt.zero_grad(true).unwrap();
            loss(&model.call(&x.narrow(0, 64 * s, 64).unwrap()).unwrap(), &y.narrow(0, 64 * s, 64).unwrap())
                .backward()
                .unwrap();
            opt.step().unwrap();
        }
        model
    }

    /// Every parameter within 1e-5 relative (in norm) of the reference's.
    pub fn assert_close(what: &str, got: &impl Module, want: &impl Module) {
        let want = want.named_parameters();
        let got = got.named_parameters();
        assert_eq!(got.len(), want.len());
        for ((name, g), (_, w)) in got.iter().zip(&want) {
            let (g, w) = (g.tensor().to_vec::<f64>().unwrap(), w.tensor().to_vec::<f64>().unwrap());
            let diff: f64 = g.iter().zip(&w).map(|(a, b)| (a - b) * (a - b)).sum::<f64>().sqrt();
            let norm: f64 = w.iter().map(|b| b * b).sum::<f64>().sqrt();
            assert!(diff <= 1e-5 * norm, "{what}: {name} differs by {diff:e} (norm {norm:e})");
        }
    }
}

pub fn ddp() {
    use autograd::TensorAutograd;
    use ddp_model::*;
    use distributed::{DdpOptions, DistributedDataParallel};
    use nn::optim::Optimizer;
    aten::set_num_threads(1).unwrap();
    let (rank, size) = init();
    assert_eq!(size, 2);
    let (x, y) = digits();
    let want = reference(&x, &y);
    // This rank's half of step s's batch of 64, or a quarter of it.
    let part = |t: &Tensor, s: usize, k: usize, n: usize| t.narrow(0, (64 * s + n * k) as i64, n as i64).unwrap();

    // The CNN's 0.9 MB fit in the first bucket; with 10 kB buckets the all-reduces of the last
    // layers start while backward still computes the first ones.
    // Bytes per bucket, from the last layer back (fc2+fc1, conv2, conv1 with 10 kB buckets).
    let all: &[usize] = &[900_136];
    let small: &[usize] = &[824_872, 73_984, 1_280];
    for (as_view, cap, buckets) in [(false, 25.0, all), (true, 25.0, all), (false, 0.01, small)] {
        let options = DdpOptions { gradient_as_bucket_view: as_view, bucket_cap_mb: cap, ..Default::default() };
        let model = DistributedDataParallel::with_options(Cnn::new(), options).unwrap();
        assert_eq!(model.bucket_sizes(), buckets);
        let mut opt = sgd(model.module());
        for s in 0..STEPS {
            opt.zero_grad(true).unwrap();
            loss(&model.forward(&part(&x, s, rank, 32)).unwrap(), &part(&y, s, rank, 32)).backward().unwrap();
            opt.step().unwrap();
        }
        assert_close(&format!("DDP, gradient_as_bucket_view={as_view}, {cap} MB buckets"), model.module(), &want);
    }

    // Gradient accumulation: two micro-batches of 16 per rank, the first under no_sync.
    let model = DistributedDataParallel::new(Cnn::new()).unwrap();
    let mut opt = sgd(model.module());
    for s in 0..STEPS {
        opt.zero_grad(true).unwrap();
        {
            let _local = model.no_sync();
            let l = loss(&model.forward(&part(&x, s, 2 * rank, 16)).unwrap(), &part(&y, s, 2 * rank, 16));
            l.mul(c10::Scalar::Float(0.5)).unwrap().backward().unwrap();
        }
        let l = loss(&model.forward(&part(&x, s, 2 * rank + 1, 16)).unwrap(), &part(&y, s, 2 * rank + 1, 16));
        l.mul(c10::Scalar::Float(0.5)).unwrap().backward().unwrap();
        opt.step().unwrap();
    }
    assert_close("DDP with no_sync accumulation", model.module(), &want);

    // An unused parameter with find_unused_parameters: its gradient stays None, the rest
    // trains as before.
    let make = || {
        let cnn = Cnn::new();
        WithUnused { cnn, spare: nn::Linear::new(4, 3).unwrap() }
    };
    let options = DdpOptions { find_unused_parameters: true, ..Default::default() };
    let model = DistributedDataParallel::with_options(make(), options).unwrap();
    let spare_before = model.module().spare.weight.tensor().to_vec::<f32>().unwrap();
    let mut opt = sgd(model.module());
    for s in 0..STEPS {
        opt.zero_grad(true).unwrap();
        loss(&model.forward(&part(&x, s, rank, 32)).unwrap(), &part(&y, s, rank, 32)).backward().unwrap();
        assert!(model.module().spare.weight.tensor().grad().is_none());
        opt.step().unwrap();
    }
    assert_close("DDP with an unused parameter", &model.module().cnn, &want);
    assert_eq!(model.module().spare.weight.tensor().to_vec::<f32>().unwrap(), spare_before);

    // Without find_unused_parameters the reduction cannot finish, and the next forward says so.
    let model = DistributedDataParallel::new(make()).unwrap();
    loss(&model.forward(&part(&x, 0, rank, 32)).unwrap(), &part(&y, 0, rank, 32)).backward().unwrap();
    let err = model.forward(&part(&x, 1, rank, 32)).unwrap_err();
    assert!(err.to_string().contains("Expected to have finished reduction in the prior iteration"), "{err}");

    // Models that differ between ranks are an error on every rank.
    let odd = if rank == 0 { nn::Linear::new(4, 3).unwrap() } else { nn::Linear::new(4, 5).unwrap() };
    let err = DistributedDataParallel::new(odd).err().expect("different models");
    assert!(err.to_string().contains("DDP expects same model across all ranks"), "{err}");
    dist::destroy_process_group().unwrap();
    done(rank);
}

// ---- DDP communication hooks --------------------------------------------------------------------

/// Note [DDP comm hooks] on 2 ranks. A linear layer under `loss = sum(out * c)` has the
/// gradients `c^T x` (weight) and `sum(c)` (bias) whatever its weights, so every rank knows
/// both ranks' gradients and the exact result of each hook: the average; in float16 (bfloat16)
/// each rank's gradient rounded, halved and summed in that precision.
pub fn comm_hooks() {
    use autograd::TensorAutograd;
    use distributed::comm_hooks::{allreduce_hook, bf16_compress_hook, fp16_compress_hook};
    use distributed::{CommFuture, DdpOptions, DistributedDataParallel, GradBucket, ProcessGroup};
    aten::set_num_threads(1).unwrap();
    let (rank, size) = init();
    assert_eq!(size, 2);
    // Inputs of 14 significant bits and small integer weights in the loss: every product and
    // sum is exact in float32 (so however a kernel orders them), none fits in half precision.
    let input = |r: usize| -> Tensor {
        let v: Vec<f32> = (0..8).map(|i| ((r + 1) * (i + 1)) as f32 + (i + 1) as f32 / 1024.0).collect();
        Tensor::from_vec(v, &[2, 4]).unwrap()
    };
    let c = Tensor::from_vec(vec![3f32, -5.0, 7.0, 1.0, -2.0, 6.0], &[2, 3]).unwrap();
    // Gradients of rank r: weight (3x4) then bias (3).
    let grads = |r: usize| -> (Tensor, Tensor) {
        (c.t().unwrap().matmul(&input(r)).unwrap(), c.sum().dim(&[0i64][..]).call().unwrap())
    };
    let expected = |dtype: Option<ScalarType>| -> (Vec<f32>, Vec<f32>) {
        let reduce = |a: Tensor, b: Tensor| -> Vec<f32> {
            let r = match dtype {
                None => a.add(&b).call().unwrap().div(c10::Scalar::Float(2.0)).call().unwrap(),
                Some(d) => {
                    let half = |t: Tensor| t.to(d).call().unwrap().div(c10::Scalar::Int(2)).call().unwrap();
                    half(a).add(&half(b)).call().unwrap().to(ScalarType::F32).call().unwrap()
                }
            };
            r.to_vec::<f32>().unwrap()
        };
        let ((w0, b0), (w1, b1)) = (grads(0), grads(1));
        (reduce(w0, w1), reduce(b0, b1))
    };
    type Hook = fn(&ProcessGroup, &GradBucket) -> c10::Result<CommFuture>;
    let hooks: [(&str, Hook, Option<ScalarType>); 3] = [
        ("allreduce_hook", allreduce_hook, None),
        ("fp16_compress_hook", fp16_compress_hook, Some(ScalarType::F16)),
        ("bf16_compress_hook", bf16_compress_hook, Some(ScalarType::BF16)),
    ];
    for (name, hook, dtype) in hooks {
        let model = DistributedDataParallel::new(nn::Linear::new(4, 3).unwrap()).unwrap();
        model.register_comm_hook(hook).unwrap();
        for _ in 0..2 {
            let m = model.module();
            m.weight.tensor().set_grad(None).unwrap();
            m.bias.as_ref().unwrap().tensor().set_grad(None).unwrap();
            model.forward(&input(rank)).unwrap().mul(&c).unwrap().sum().call().unwrap().backward().unwrap();
            let got = |p: &nn::Parameter| p.tensor().grad().unwrap().to_vec::<f32>().unwrap();
            let (w, b) = expected(dtype);
            assert_eq!(got(&m.weight), w, "{name}: weight gradient");
            assert_eq!(got(m.bias.as_ref().unwrap()), b, "{name}: bias gradient");
            if dtype.is_some() {
                assert_ne!(w, expected(None).0, "{name}: the inputs must show the compression");
            }
        }
        let err = model.register_comm_hook(allreduce_hook).unwrap_err();
        assert!(err.to_string().contains("can only be called once"), "{err}");
    }

    // A hook of our own sees the bucket as PyTorch's GradBucket and decides the result.
    let options = DdpOptions { bucket_cap_mb: 1e-5, ..Default::default() };
    let model = DistributedDataParallel::with_options(nn::Linear::new(4, 3).unwrap(), options).unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    model
        .register_comm_hook(move |_: &ProcessGroup, b: &GradBucket| {
            let shapes: Vec<Vec<i64>> = b.gradients().iter().map(|g| g.sizes().to_vec()).collect();
            let params: Vec<Vec<i64>> = b.parameters().iter().map(|p| p.sizes().to_vec()).collect();
            assert_eq!(shapes, params);
            log.lock().unwrap().push((b.index(), b.is_last(), shapes, b.buffer().numel()));
            // Every gradient becomes 3, whatever was computed.
            let out = aten::ops::full(&[b.buffer().numel()], c10::Scalar::Float(3.0), None, None, None, None).unwrap();
            Ok(CommFuture::ready(out))
        })
        .unwrap();
    model.forward(&input(rank)).unwrap().mul(&c).unwrap().sum().call().unwrap().backward().unwrap();
    // Two buckets (the cap is tiny), the last layer's bias first.
    assert_eq!(
        *seen.lock().unwrap(),
        vec![(0, false, vec![vec![3]], 3), (1, true, vec![vec![3, 4]], 12)],
        "the buckets a hook saw"
    );
    let m = model.module();
    assert_eq!(m.weight.tensor().grad().unwrap().to_vec::<f32>().unwrap(), vec![3.0; 12]);
    assert_eq!(m.bias.as_ref().unwrap().tensor().grad().unwrap().to_vec::<f32>().unwrap(), vec![3.0; 3]);
    dist::destroy_process_group().unwrap();
    done(rank);
}

/// Note [PowerSGD] against PyTorch (`tests/data/powersgd_gen.py` wrote `powersgd.json` from two
/// Gloo ranks running DDP with PyTorch's `powerSGD_hook`): the same MLP, weights and batches
/// here give every step's averaged gradients and the final weights of each case, in plain
/// all-reduce iterations and compressed ones, at approximation ranks 1 to 3, with and without
/// warm start and error feedback.
pub fn powersgd() {
    use autograd::TensorAutograd;
    use distributed::comm_hooks::{PowerSgd, PowerSgdOptions};
    use distributed::DistributedDataParallel;
    use nn::optim::{Optimizer, SGDOptions, SGD};
    use nn::{Forward, Linear, Module};

    #[derive(nn::Module)]
    struct Mlp {
        fc1: Linear,
        fc2: Linear,
    }
    impl Forward for Mlp {
        fn forward(&self, x: &Tensor) -> c10::Result<Tensor> {
            self.fc2.call(&self.fc1.call(x)?.relu()?)
        }
    }
    let floats = |v: &serde_json::Value| -> Vec<f32> {
        v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
    };
    let tensor =
        |v: Vec<f64>, shape: &[i64]| Tensor::from_vec(v.into_iter().map(|x| x as f32).collect(), shape).unwrap();
    let batch = |rank: usize, step: usize| {
        let (s, r) = (step as f64, rank as f64);
        let x = (0..4 * 32).map(|i| (0.11 * i as f64 + 0.7 * s + 1.9 * r).cos()).collect();
        let y = (0..4 * 8).map(|i| (0.23 * i as f64 - 0.3 * s + 0.8 * r).sin()).collect();
        (tensor(x, &[4, 32]), tensor(y, &[4, 8]))
    };
    let close = |what: &str, got: &[f32], want: &[f32]| {
        assert_eq!(got.len(), want.len(), "{what}");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!((g - w).abs() <= 2e-6 + 2e-4 * w.abs(), "{what}[{i}]: {g} against PyTorch's {w}");
        }
    };

    aten::set_num_threads(1).unwrap();
    let (rank, size) = init();
    assert_eq!(size, 2);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/powersgd.json");
    let expected: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let steps = expected["steps"].as_u64().unwrap() as usize;
    let cases = expected["cases"].as_object().unwrap();
    assert_eq!(cases.len(), 3);
    for (name, case) in cases {
        let mlp = Mlp { fc1: Linear::new(32, 16).unwrap(), fc2: Linear::new(16, 8).unwrap() };
        {
            let _g = autograd::no_grad();
            for (k, p) in mlp.parameters().iter().enumerate() {
                let t = p.tensor();
                let v = (0..t.numel()).map(|i| (0.37 * i as f64 + 1.3 * k as f64 + 0.5).sin() * 0.4).collect();
                t.copy_(&tensor(v, t.sizes())).call().unwrap();
            }
        }
        let options = PowerSgdOptions {
            matrix_approximation_rank: case["rank"].as_u64().unwrap() as usize,
            start_powersgd_iter: case["start_powerSGD_iter"].as_u64().unwrap() as usize,
            use_error_feedback: case["use_error_feedback"].as_bool().unwrap(),
            warm_start: case["warm_start"].as_bool().unwrap(),
            ..Default::default()
        };
        let model = DistributedDataParallel::new(mlp).unwrap();
        model.register_comm_hook(PowerSgd::new(options).unwrap()).unwrap();
        let mut opt = SGD::new(model.module().parameters(), SGDOptions::default().lr(0.1)).unwrap();
        for step in 0..steps {
            opt.zero_grad(true).unwrap();
            let (x, y) = batch(rank, step);
            aten::ops::mse_loss(&model.forward(&x).unwrap(), &y, 1).unwrap().backward().unwrap();
            for (k, p) in model.module().parameters().iter().enumerate() {
                let got = p.tensor().grad().unwrap().to_vec::<f32>().unwrap();
                close(
                    &format!("{name}: step {step}, gradient of parameter {k}"),
                    &got,
                    &floats(&case["grads"][step][k]),
                );
            }
            opt.step().unwrap();
        }
        for (k, p) in model.module().parameters().iter().enumerate() {
            let got = p.tensor().to_vec::<f32>().unwrap();
            close(&format!("{name}: final parameter {k}"), &got, &floats(&case["final"][k]));
        }
    }
    // PyTorch's check of the options.
    let bad = PowerSgdOptions { start_powersgd_iter: 1, ..Default::default() };
    let err = PowerSgd::new(bad).err().expect("start_powersgd_iter 1 with error feedback");
    assert!(err.to_string().contains("Expect `start_powerSGD_iter` > 1"), "{err}");
    dist::destroy_process_group().unwrap();
    done(rank);
}

// ---- CUDA tensors staged through host memory --------------------------------------------

/// CUDA tensors (on the emulated device) in every kind of operation: the process group copies
/// them to the host, MPI moves the host copies, and the results land back on the device.
#[cfg(feature = "cuda")]
pub fn cuda_staging() {
    kernels_cuda::driver::select(kernels_cuda::driver::DriverKind::Emulator).unwrap();
    kernels_cuda::runtime::init();
    let (rank, size) = init();
    let cuda = c10::Device::cuda(0);
    let on_device = |v: Vec<f32>| {
        let n = v.len() as i64;
        let t = Tensor::from_vec(v, &[n]).unwrap().cuda_on(0).unwrap();
        assert_eq!(t.device(), cuda);
        t
    };
    let host = |t: &Tensor| {
        assert_eq!(t.device(), cuda, "the result stays on the device");
        t.cpu().unwrap().to_vec::<f32>().unwrap()
    };
    let r = rank as f32;

    // all_reduce, synchronous and asynchronous.
    let t = on_device(vec![r + 1.0, 10.0 * (r + 1.0), -r]);
    dist::all_reduce(&t, ReduceOp::Sum).unwrap();
    assert_eq!(host(&t), [3.0, 30.0, -1.0]);
    let t = on_device(vec![r + 1.0; 4]);
    dist::default_group().unwrap().all_reduce(&t, ReduceOp::Max).unwrap().wait().unwrap();
    assert_eq!(host(&t), [2.0; 4]);

    // broadcast from rank 1.
    let t = on_device(vec![r * 5.0, 7.0]);
    dist::broadcast(&t, 1).unwrap();
    assert_eq!(host(&t), [5.0, 7.0]);

    // all_gather into a list of device tensors, and into one device tensor.
    let outs: Vec<Tensor> = (0..size).map(|_| on_device(vec![0.0; 2])).collect();
    dist::all_gather(&outs, &on_device(vec![r, r + 0.5])).unwrap();
    assert_eq!(outs.iter().map(host).collect::<Vec<_>>(), [vec![0.0, 0.5], vec![1.0, 1.5]]);
    let out = on_device(vec![0.0; 4]);
    dist::all_gather_into_tensor(&out, &on_device(vec![r, -r])).unwrap();
    assert_eq!(host(&out), [0.0, 0.0, 1.0, -1.0]);

    // reduce_scatter from a list of device tensors.
    let out = on_device(vec![0.0; 2]);
    let ins = [on_device(vec![r, 1.0]), on_device(vec![2.0 * r, 3.0])];
    dist::reduce_scatter(&out, &ins, ReduceOp::Sum).unwrap();
    assert_eq!(host(&out), if rank == 0 { [1.0, 2.0] } else { [2.0, 6.0] });

    // send and recv.
    if rank == 0 {
        dist::send(&on_device(vec![4.0, 5.0, 6.0]), 1).unwrap();
    } else {
        let t = on_device(vec![0.0; 3]);
        assert_eq!(dist::recv(&t, Some(0)).unwrap(), 0);
        assert_eq!(host(&t), [4.0, 5.0, 6.0]);
    }
    dist::destroy_process_group().unwrap();
    done(rank);
}
