//! The registry of benchmark workloads: one entry per workload id of `BENCHMARKS.md`. Each entry
//! builds its inputs once (untimed) and returns the body that one timed iteration runs.
//!
//! Adding a workload is one entry in [`registry`] here plus the same entry in
//! `bench/pytorch_reference.py` (same id, shapes, dtype and operation), e.g.
//!
//! ```ignore
//! Workload::new("W2.add_1M", "add of two contiguous [1048576] f32 tensors", || {
//!     let (a, b) = (randn(&[1 << 20])?, randn(&[1 << 20])?);
//!     Ok(body(move || &a + &b))
//! }),
//! ```
//!
//! The planned ids, in order: W1 (per-op overhead: `add1`, `add1_front`, `add1_grad`,
//! `chain100`, `chain100_front`; the `_front` rows are the same work written with the front
//! end's builders, to show they cost nothing), W2
//! (elementwise: `add_1M`, `add_16M`, `bcast_add`, `transposed_add`), W3 (`matmul_256`,
//! `matmul_1024`, `matmul_2048`), W4 (`sum_16M`, `softmax`, `log_softmax`), W5 (`conv_large`,
//! `conv_small`), W6 (`mlp_step`, `mlp_step_front`, `mlp_step_profiled`, `cnn_step` training steps; one iteration is one step, so
//! steps/s is the inverse of the time per iteration) and W7 (the JIT: `gelu_eager`,
//! `gelu_fused`, `chain100_eager`, `chain100_jit`) and W9 (linear algebra and FFT: `solve_512`,
//! `svd_256`, `fft_1M`) and W10 (sparse: `spmm_coo`, `spmm_csr`, `coalesce_1M`,
//! `embedding_sparse_step`). The peers' figures on this machine (candle
//! and others) are in BENCHMARKS.md, with how they were taken.

use std::hint::black_box;

use aten::{IValue, Tensor};
use c10::Result;

/// What one timed iteration runs. Errors stop the measurement and are reported in the table.
pub type Body = Box<dyn FnMut() -> Result<()>>;

/// Builds a workload's inputs and returns its body. Runs inside the thread pool of the
/// measurement, untimed.
pub type Setup = Box<dyn Fn() -> Result<Body> + Send + Sync>;

/// One benchmark workload.
pub struct Workload {
    /// Stable id, `W<group>.<name>`; the key shared with `bench/pytorch_reference.py`.
    pub id: &'static str,
    /// What one iteration is, e.g. "add of two 1-element f32 tensors".
    pub unit_per_iter: &'static str,
    /// Builds the inputs and the body.
    pub setup: Setup,
}

impl Workload {
    /// A workload from its id, unit and setup closure.
    pub fn new(
        id: &'static str,
        unit_per_iter: &'static str,
        setup: impl Fn() -> Result<Body> + Send + Sync + 'static,
    ) -> Workload {
        Workload { id, unit_per_iter, setup: Box::new(setup) }
    }
}

/// Wraps a closure returning any value (usually `Result<Tensor>`) into a [`Body`]; the value is
/// passed through `black_box` and dropped inside the timed region, as in Python.
pub fn body<T>(mut f: impl FnMut() -> Result<T> + 'static) -> Body {
    Box::new(move || {
        black_box(f()?);
        Ok(())
    })
}

/// Every workload, in table order.
pub fn registry() -> Vec<Workload> {
    vec![
        // Per-op overhead of the full public path: operator impl -> dispatcher -> CPU kernel ->
        // output allocation. PyTorch's figure is `a + b` from Python.
        Workload::new("W1.add1", "add of two 1-element f32 tensors (&a + &b)", || {
            let a = Tensor::from_slice(&[1.0f32]);
            let b = Tensor::from_slice(&[1.0f32]);
            Ok(body(move || &a + &b))
        }),
        // The same add through the front end's call (Note [Front-end calls] in aten's front.rs):
        // its builder must cost nothing over the explicit call above.
        Workload::new("W1.add1_front", "W1.add1 written with the front end (a.add(&b).call())", || {
            let a = Tensor::from_slice(&[1.0f32]);
            let b = Tensor::from_slice(&[1.0f32]);
            Ok(body(move || a.add(&b).call()))
        }),
        Workload::new("W1.add1_grad", "add of two 1-element f32 tensors that require grad (records the node)", || {
            use autograd::TensorAutograd;
            let a = Tensor::from_slice(&[1.0f32]).requires_grad_(true)?;
            let b = Tensor::from_slice(&[1.0f32]).requires_grad_(true)?;
            Ok(body(move || &a + &b))
        }),
        Workload::new("W1.chain100", "50 x (mul, add) on 1-element f32 tensors, sum, backward", || {
            use autograd::TensorAutograd;
            let x = Tensor::from_slice(&[1.0f32]).requires_grad_(true)?;
            let w = Tensor::from_slice(&[0.999f32]);
            let c = Tensor::from_slice(&[0.001f32]);
            Ok(body(move || {
                let mut y = x.clone();
                for _ in 0..50 {
                    y = (&(&y * &w)? + &c)?;
                }
                aten::ops::sum(&y, None)?.backward()?;
                x.set_grad(None)
            }))
        }),
        Workload::new(
            "W1.chain100_front",
            "W1.chain100 written with the front end (y.mul(&w)?.add(&c).call()?)",
            || {
                use autograd::TensorAutograd;
                let x = Tensor::from_slice(&[1.0f32]).requires_grad_(true)?;
                let w = Tensor::from_slice(&[0.999f32]);
                let c = Tensor::from_slice(&[0.001f32]);
                Ok(body(move || {
                    let mut y = x.clone();
                    for _ in 0..50 {
                        y = y.mul(&w)?.add(&c).call()?;
                    }
                    y.sum().call()?.backward()?;
                    x.set_grad(None)
                }))
            },
        ),
        Workload::new("W2.add_1M", "out-of-place add of two contiguous [1048576] f32 tensors", || {
            let (a, b) = (randn(&[1 << 20])?, randn(&[1 << 20])?);
            Ok(body(move || &a + &b))
        }),
        Workload::new("W2.add_16M", "out-of-place add of two contiguous [16777216] f32 tensors", || {
            let (a, b) = (randn(&[1 << 24])?, randn(&[1 << 24])?);
            Ok(body(move || &a + &b))
        }),
        Workload::new("W2.bcast_add", "[4096,4096] + [4096] f32 (broadcast over rows)", || {
            let (a, b) = (randn(&[4096, 4096])?, randn(&[4096])?);
            Ok(body(move || &a + &b))
        }),
        Workload::new("W2.transposed_add", "A.t() + B, [4096,4096] f32", || {
            let (a, b) = (randn(&[4096, 4096])?, randn(&[4096, 4096])?);
            Ok(body(move || &a.t()? + &b))
        }),
        // Note [Vectorised transcendentals] in aten's `cpu/vec.rs`: the eager operators.
        Workload::new("W2.exp_16M", "exp of a contiguous [16777216] f32 tensor", || {
            let a = randn(&[1 << 24])?;
            Ok(body(move || aten::ops::exp(&a)))
        }),
        Workload::new("W2.tanh_16M", "tanh of a contiguous [16777216] f32 tensor", || {
            let a = randn(&[1 << 24])?;
            Ok(body(move || aten::ops::tanh(&a)))
        }),
        Workload::new("W2.gelu_16M", "gelu (exact, the eager operator) of a contiguous [16777216] f32 tensor", || {
            let a = randn(&[1 << 24])?;
            Ok(body(move || aten::ops::gelu(&a, "none")))
        }),
        Workload::new("W4.sum_16M", "sum of a contiguous [16777216] f32 tensor", || {
            let a = randn(&[1 << 24])?;
            Ok(body(move || a.sum().call()))
        }),
        Workload::new("W4.softmax", "softmax over the last dim of [4096,1024] f32", || {
            let a = randn(&[4096, 1024])?;
            Ok(body(move || a.softmax(-1).call()))
        }),
        Workload::new("W4.log_softmax", "log_softmax over the last dim of [4096,1024] f32", || {
            let a = randn(&[4096, 1024])?;
            Ok(body(move || a.log_softmax(-1).call()))
        }),
        // Square f32 matrix products (the GEMM; See Note [Strided GEMM] in aten's linalg.rs).
        Workload::new("W3.matmul_256", "matmul of two [256, 256] f32 tensors", || matmul_square(256)),
        Workload::new("W3.matmul_1024", "matmul of two [1024, 1024] f32 tensors", || matmul_square(1024)),
        Workload::new("W3.matmul_2048", "matmul of two [2048, 2048] f32 tensors", || matmul_square(2048)),
        Workload::new("W3.bmm_64x256", "bmm of two [64, 256, 256] f32 tensors", || {
            let (a, b) = (randn(&[64, 256, 256])?, randn(&[64, 256, 256])?);
            Ok(body(move || aten::ops::bmm(&a, &b)))
        }),
        // Convolutions with bias (as nn.Conv2d), f32, NCHW.
        Workload::new("W5.conv_large", "conv2d [32, 64, 56, 56] by [64, 64, 3, 3] + bias, padding 1, f32", || {
            conv(&[32, 64, 56, 56], &[64, 64, 3, 3], 1)
        }),
        Workload::new("W5.conv_small", "conv2d [64, 1, 28, 28] by [32, 1, 3, 3] + bias, no padding, f32", || {
            conv(&[64, 1, 28, 28], &[32, 1, 3, 3], 0)
        }),
        // Training steps: zero_grad, forward, cross entropy (mean), backward, SGD momentum 0.9.
        Workload::new("W6.mlp_step", "train step of an MLP 784-512-512-10 (ReLU), batch 128, SGD momentum 0.9", || {
            train_step(mlp()?, randn(&[128, 784])?, 128, false)
        }),
        Workload::new(
            "W6.mlp_step_front",
            "W6.mlp_step with the loss through the front end (F::cross_entropy)",
            || train_step(mlp()?, randn(&[128, 784])?, 128, true),
        ),
        // Note [Profiled rows]: the step under the profiler with shapes recorded, on a schedule
        // whose cycle ends every 10 steps (each cycle's events are aggregated and dropped, so
        // memory stays bounded and the cost of finishing a cycle is in the time), PyTorch's the
        // same way (`torch.profiler.profile(record_shapes=True, schedule=schedule(wait=0,
        // warmup=0, active=10))` and `prof.step()`).
        Workload::new(
            "W6.mlp_step_profiled",
            "W6.mlp_step under the profiler, shapes recorded, a cycle every 10 steps",
            || {
                let mut step = train_step(mlp()?, randn(&[128, 784])?, 128, false)?;
                let mut prof = autograd::profiler::profile()
                    .record_shapes(true)
                    .schedule(autograd::profiler::schedule(0, 0, 10, 0))
                    .on_trace_ready(|p| {
                        black_box(p.key_averages());
                    })
                    .start();
                Ok(Box::new(move || {
                    step()?;
                    prof.step();
                    Ok(())
                }))
            },
        ),
        Workload::new(
            "W6.cnn_step",
            "train step of a small CNN (conv 1-32-64 3x3, maxpool, linear 1600-128-10), batch 64, 28x28",
            || train_step(cnn()?, randn(&[64, 1, 28, 28])?, 64, false),
        ),
        // The JIT (Note [W7 workloads]): elementwise fusion and the interpreter's overhead.
        Workload::new("W7.gelu_eager", "tanh GELU as 8 elementwise ops, op by op, on a [16777216] f32 tensor", || {
            let x = randn(&[1 << 24])?;
            Ok(body(move || gelu_tanh_ops(&x)))
        }),
        Workload::new(
            "W7.gelu_fused",
            "the same 8 ops traced, fused into one prim::FusionGroup and run by the interpreter",
            || {
                let x = randn(&[1 << 24])?;
                let code = jit_code(&x, gelu_tanh_ops, true)?;
                Ok(body(move || code.run(vec![IValue::Tensor(x.clone())])))
            },
        ),
        Workload::new(
            "W7.chain100_eager",
            "forward of W1.chain100: 50 x (mul, add) on 1-element f32 tensors, sum",
            || {
                let (x, w, c) = chain_inputs();
                Ok(body(move || chain100(&x, &w, &c)))
            },
        ),
        Workload::new("W7.chain100_jit", "the same forward traced and run by the interpreter (no fusion)", || {
            let (x, w, c) = chain_inputs();
            let code = jit_code(&x, move |x| chain100(x, &w, &c), false)?;
            Ok(body(move || code.run(vec![IValue::Tensor(x.clone())])))
        }),
        Workload::new(
            "W7.script_loop",
            "a scripted GRUCell(32, 64) loop over 50 steps, batch 8, loaded from PyTorch's torch.jit.save archive",
            || {
                let m = jit::load(jit_model("w7_script_loop.pt"))?;
                let x = IValue::Tensor(randn(&[50, 8, 32])?);
                Ok(body(move || {
                    let _g = autograd::no_grad();
                    m.forward_values(std::slice::from_ref(&x))
                }))
            },
        ),
        Workload::new(
            "W7.export_resnet_block",
            "a torch.export residual block (conv-bn-relu-conv-bn + x, relu; 32 channels), batch 8, 28x28, from its .pt2",
            || {
                let m = jit::load(jit_model("w7_resblock.pt2"))?;
                let x = randn(&[8, 32, 28, 28])?;
                Ok(body(move || {
                    let _g = autograd::no_grad();
                    m.forward_tensors(std::slice::from_ref(&x))
                }))
            },
        ),
        // Linear algebra (Note [W9 workloads]).
        Workload::new(
            "W9.solve_512",
            "linalg.solve of a [512, 512] f32 system with a [512, 1] right-hand side",
            || {
                let (a, b) = (randn(&[512, 512])?, randn(&[512, 1])?);
                Ok(body(move || aten::ops::linalg_solve(&a, &b, true)))
            },
        ),
        Workload::new("W9.svd_256", "linalg.svd of a [256, 256] f32 matrix (full_matrices=False: U, S, Vh)", || {
            let a = randn(&[256, 256])?;
            Ok(body(move || aten::ops::linalg_svd(&a, false, None)))
        }),
        Workload::new("W9.fft_1M", "fft.fft of a [2^20] complex64 signal (parts random normal)", || {
            let z = aten::ops::complex(&randn(&[1 << 20])?, &randn(&[1 << 20])?)?;
            Ok(body(move || aten::ops::fft_fft(&z, None, -1, None)))
        }),
        // Sparse tensors (Note [W10 workloads]).
        Workload::new(
            "W10.spmm_coo",
            "torch.sparse.mm of a coalesced COO [100000, 100000] f32 matrix, 1M stored, @ dense [100000, 64]",
            || {
                let s = aten::ops::coalesce(&random_coo(100_000, 1_000_000)?)?;
                let d = randn(&[100_000, 64])?;
                Ok(body(move || aten::ops::_sparse_mm(&s, &d)))
            },
        ),
        Workload::new("W10.spmm_csr", "the same product with the matrix in CSR", || {
            let s = aten::ops::to_sparse_csr(&random_coo(100_000, 1_000_000)?, None)?;
            let d = randn(&[100_000, 64])?;
            Ok(body(move || aten::ops::mm(&s, &d)))
        }),
        Workload::new(
            "W10.coalesce_1M",
            "coalesce of 1M random COO entries of a [100000, 100000] f32 matrix (with duplicates)",
            || {
                let s = random_coo(100_000, 1_000_000)?;
                Ok(body(move || aten::ops::_coalesce(&s)))
            },
        ),
        Workload::new(
            "W10.embedding_sparse_step",
            "train step: EmbeddingBag(100000, 64, mean, sparse) of 32 bags of 8, Linear 64-32, ReLU, Linear 32-1, BCE; SparseAdam + Adam",
            embedding_sparse_step,
        ),
    ]
}

// Note [W10 workloads]: random COO matrices (indices uniform over the [100000, 100000] grid,
// values random normal, so a few positions repeat), the same construction on both sides:
// `spmm_coo` multiplies a coalesced one by a dense [100000, 64] through `torch.sparse.mm`,
// `spmm_csr` the same in CSR through `mm`, `coalesce_1M` sorts and sums an uncoalesced one
// (`_coalesce`, which always does the work), and `embedding_sparse_step` is one training
// step of `nn/tests/nn/sparse.rs`'s recommendation model on random ids.

fn random_coo(n: i64, nnz: i64) -> Result<Tensor> {
    let idx = aten::ops::randint(n, &[2, nnz], None, None, None, None)?;
    aten::ops::sparse_coo_tensor(&idx, &randn(&[nnz])?, &[n, n], None, None, None, None, None)
}

fn embedding_sparse_step() -> Result<Body> {
    use autograd::TensorAutograd;
    use nn::optim::Optimizer;
    use nn::{Forward, Module};
    let emb = nn::EmbeddingBag::new(100_000, 64, nn::BagMode::Mean)?.with_sparse(true);
    let (fc1, fc2) = (nn::Linear::new(64, 32)?, nn::Linear::new(32, 1)?);
    let mut sparse = nn::optim::SparseAdam::new(emb.parameters(), 0.01)?;
    let dense: Vec<nn::Parameter> = fc1.parameters().into_iter().chain(fc2.parameters()).collect();
    let mut adam = nn::optim::Adam::new(dense, 0.01)?;
    let ids = aten::ops::randint(100_000, &[32, 8], None, None, None, None)?;
    let target = aten::ops::to(
        &aten::ops::randint(2, &[32], None, None, None, None)?,
        c10::ScalarType::F32,
        false,
        false,
        None,
    )?;
    Ok(body(move || {
        sparse.zero_grad(true)?;
        adam.zero_grad(true)?;
        let h = aten::ops::relu(&fc1.forward(&emb.forward_bags(&ids, None, None)?)?)?;
        let logits = aten::ops::squeeze_dim(&fc2.forward(&h)?, 1)?;
        aten::ops::binary_cross_entropy_with_logits(&logits, &target, None, None, 1)?.backward()?;
        sparse.step()?;
        adam.step()
    }))
}

// Note [W9 workloads]: `solve_512` (an LU factorisation with partial pivoting and two
// triangular solves) and `svd_256` (all three factors) of random normal f32 matrices, here on
// our LU (Note [Recursive LU] in aten's `lapack.rs`) and faer (the triangular solves, the SVD),
// and on LAPACK (MKL in PyTorch's x86 wheels) in PyTorch; `fft_1M`, a complex-to-complex
// transform of 2^20 points, on rustfft here and on MKL's DFT (or pocketfft) in PyTorch.

/// Note [W7 workloads]: `gelu_eager` and `gelu_fused` time the tanh-approximated GELU written as
/// eight elementwise operators, `0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x^3)))`
/// (`pow`, `mul`, `add`, `mul`, `tanh`, `add`, `mul`, `mul`), on 16M f32 elements: eagerly, and
/// traced, fused by `jit::passes::fuse` into one `prim::FusionGroup` and run by the
/// interpreter (the setup fails if the trace does not become exactly one group). PyTorch's
/// rows are the same eight operators eagerly and `torch.compile` of the same function. The
/// `chain100` pair times the forward of `W1.chain100` (no gradient) eagerly and traced into
/// the interpreter unfused: the interpreter's overhead per operator (PyTorch:
/// `torch.jit.trace`).
fn gelu_tanh_ops(x: &Tensor) -> Result<Tensor> {
    use aten::ops::{add, add_scalar, mul, mul_scalar, pow_tensor_scalar, tanh};
    use c10::Scalar;
    let cube = pow_tensor_scalar(x, Scalar::Int(3))?;
    let inner = add(x, &mul_scalar(&cube, Scalar::Float(0.044715))?, Scalar::Int(1))?;
    let t = tanh(&mul_scalar(&inner, Scalar::Float(0.7978845608))?)?;
    mul(&mul_scalar(x, Scalar::Float(0.5))?, &add_scalar(&t, Scalar::Int(1), Scalar::Int(1))?)
}

/// `W1.chain100`'s tensors, none requiring grad.
fn chain_inputs() -> (Tensor, Tensor, Tensor) {
    (Tensor::from_slice(&[1.0f32]), Tensor::from_slice(&[0.999f32]), Tensor::from_slice(&[0.001f32]))
}

fn chain100(x: &Tensor, w: &Tensor, c: &Tensor) -> Result<Tensor> {
    let mut y = x.clone();
    for _ in 0..50 {
        y = (&(&y * w)? + c)?;
    }
    y.sum().call()
}

/// `f` traced on `x` (fused when `fuse`, which must then give one group) and compiled.
fn jit_code(x: &Tensor, f: impl FnOnce(&Tensor) -> Result<Tensor>, fuse: bool) -> Result<jit::Code> {
    let mut g = jit::trace_fn(std::slice::from_ref(x), |xs| Ok(vec![f(&xs[0])?]))?.graph;
    if fuse {
        jit::passes::fuse::fuse_elementwise(&mut g);
        let kinds: Vec<&str> = g.block_nodes(g.root()).iter().map(|&n| g.kind(n)).collect();
        if kinds.iter().any(|k| k.starts_with("aten::"))
            || kinds.iter().filter(|k| k.starts_with("prim::Fusion")).count() != 1
        {
            return Err(c10::Error::invalid("bench", format!("the trace did not fuse into one group:\n{g}")));
        }
    }
    jit::Code::new(&g)
}

/// A model of the jit tests' fixtures (`jit/tests/jit/gen_script.py`, `gen_export.py`), which
/// the W7 rows of loaded models run (PyTorch loads the same file).
fn jit_model(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../jit/tests/jit/models").join(name)
}

/// The small CNN of the W6.cnn_step rows.
fn cnn() -> Result<nn::Sequential> {
    let pool = || nn::MaxPool2d::new(2);
    Ok(nn::Sequential::new()
        .add(nn::Conv2d::new(1, 32, 3)?)
        .add(nn::ReLU::new())
        .add(pool()?)
        .add(nn::Conv2d::new(32, 64, 3)?)
        .add(nn::ReLU::new())
        .add(pool()?)
        .add(nn::Flatten::new())
        .add(nn::Linear::new(1600, 128)?)
        .add(nn::ReLU::new())
        .add(nn::Linear::new(128, 10)?))
}

/// The MLP 784-512-512-10 with ReLUs of the W6.mlp_step rows.
fn mlp() -> Result<nn::Sequential> {
    Ok(nn::Sequential::new()
        .add(nn::Linear::new(784, 512)?)
        .add(nn::ReLU::new())
        .add(nn::Linear::new(512, 512)?)
        .add(nn::ReLU::new())
        .add(nn::Linear::new(512, 10)?))
}

/// One SGD (momentum 0.9, lr 0.01) training step of `net` on a fixed batch with random labels;
/// the loss through `F::cross_entropy` when `front`, the explicit `ops::cross_entropy_loss`
/// otherwise.
fn train_step(net: nn::Sequential, x: Tensor, batch: i64, front: bool) -> Result<Body> {
    let y = aten::ops::randint(10, &[batch], None, None, None, None)?;
    sgd_step(net, x, y, front)
}

/// [`train_step`]'s step on given inputs and labels, on the device they and `net` are on.
fn sgd_step(net: nn::Sequential, x: Tensor, y: Tensor, front: bool) -> Result<Body> {
    use autograd::TensorAutograd;
    use nn::optim::Optimizer;
    use nn::{Forward, Module};
    let mut opt =
        nn::optim::SGD::new(net.parameters(), nn::optim::SGDOptions { lr: 0.01, momentum: 0.9, ..Default::default() })?;
    Ok(body(move || {
        opt.zero_grad(true)?;
        let logits = net.call(&x)?;
        let loss = if front {
            nn::functional::cross_entropy(&logits, &y).call()?
        } else {
            aten::ops::cross_entropy_loss(&logits, &y, None, 1, -100, 0.0)?
        };
        loss.backward()?;
        opt.step()
    }))
}

/// The C1 (launch overhead), W2 (elementwise), large W3 (matrix product), W4 (reduction), W5
/// (convolution) and W6 (training step) workloads on `device`
/// (Note [Device workloads]):
/// the same ids, shapes and operations as [`registry`], the inputs generated on the CPU and
/// moved to the device, and every iteration but C1's ending with the device synchronised, so it
/// times the work and not only its launch (PyTorch's side calls `torch.cuda.synchronize()`
/// likewise).
///
/// Note [Device workloads]: only the families whose operators have device kernels (the
/// launch overhead row C1, the elementwise arithmetic, the products, the reductions, the
/// convolutions and the MLP and CNN training steps) are defined on a device; the others (the
/// front-end and profiled variants, the JIT, data loading) time the host and stay on the CPU.
pub fn device_registry(device: c10::Device) -> Vec<Workload> {
    let on = move |shape: &[i64]| randn(shape)?.to_device(device);
    let sync = move || c10::stream::device_guard_impl(device.ty)?.synchronize_device(device);
    let timed = move |mut f: Box<dyn FnMut() -> Result<Tensor>>| -> Body {
        Box::new(move || {
            black_box(f()?);
            sync()
        })
    };
    let binary = move |a: Vec<i64>, b: Vec<i64>, transpose: bool| -> Result<Body> {
        let (a, b) = (on(&a)?, on(&b)?);
        Ok(timed(Box::new(move || if transpose { &a.t()? + &b } else { &a + &b })))
    };
    let reduce = move |shape: Vec<i64>, f: fn(&Tensor) -> Result<Tensor>| -> Result<Body> {
        let a = on(&shape)?;
        Ok(timed(Box::new(move || f(&a))))
    };
    let conv = move |input: &[i64], weight: &[i64], padding: i64| -> Result<Body> {
        let (x, w, b) = (on(input)?, on(weight)?, on(&weight[..1])?);
        Ok(timed(Box::new(move || aten::ops::conv2d(&x, &w, Some(&b), &[1], &[padding], &[1], 1))))
    };
    // The CPU rows' training step with the network, the batch and the labels on the device.
    let step = move |mut net: nn::Sequential, input: &[i64], batch: i64| -> Result<Body> {
        nn::Module::to_device(&mut net, device)?;
        let y = aten::ops::randint(10, &[batch], None, None, None, None)?.to_device(device)?;
        let mut run = sgd_step(net, on(input)?, y, false)?;
        Ok(Box::new(move || {
            run()?;
            sync()
        }))
    };
    vec![
        Workload::new("W2.add_1M", "out-of-place add of two contiguous [1048576] f32 tensors", move || {
            binary(vec![1 << 20], vec![1 << 20], false)
        }),
        Workload::new("W2.add_16M", "out-of-place add of two contiguous [16777216] f32 tensors", move || {
            binary(vec![1 << 24], vec![1 << 24], false)
        }),
        Workload::new("W2.bcast_add", "[4096,4096] + [4096] f32 (broadcast over rows)", move || {
            binary(vec![4096, 4096], vec![4096], false)
        }),
        Workload::new("W2.transposed_add", "A.t() + B, [4096,4096] f32", move || {
            binary(vec![4096, 4096], vec![4096, 4096], true)
        }),
        Workload::new("W4.sum_16M", "sum of a contiguous [16777216] f32 tensor", move || {
            reduce(vec![1 << 24], |a| a.sum().call())
        }),
        Workload::new("W4.softmax", "softmax over the last dim of [4096,1024] f32", move || {
            reduce(vec![4096, 1024], |a| a.softmax(-1).call())
        }),
        Workload::new("W4.log_softmax", "log_softmax over the last dim of [4096,1024] f32", move || {
            reduce(vec![4096, 1024], |a| a.log_softmax(-1).call())
        }),
        // Note [Launch overhead row]: the host's cost of one small operator call, the dispatcher,
        // the iterator, the output's allocation and the launch, without waiting for the device
        // (PyTorch's side does not synchronise this row either). On the emulated device the
        // launch runs the kernel on the host, so the row is an upper bound of the host path.
        Workload::new("C1.add1", "a + b on [1] f32 device tensors: host time per call, not synchronised", move || {
            let (a, b) = (on(&[1])?, on(&[1])?);
            let body: Body = Box::new(move || {
                black_box(&a + &b)?;
                Ok(())
            });
            Ok(body)
        }),
        Workload::new("W5.conv_large", "conv2d [32, 64, 56, 56] by [64, 64, 3, 3] + bias, padding 1, f32", move || {
            conv(&[32, 64, 56, 56], &[64, 64, 3, 3], 1)
        }),
        Workload::new("W5.conv_small", "conv2d [64, 1, 28, 28] by [32, 1, 3, 3] + bias, no padding, f32", move || {
            conv(&[64, 1, 28, 28], &[32, 1, 3, 3], 0)
        }),
        Workload::new(
            "W6.mlp_step",
            "train step of an MLP 784-512-512-10 (ReLU), batch 128, SGD momentum 0.9",
            move || step(mlp()?, &[128, 784], 128),
        ),
        Workload::new(
            "W6.cnn_step",
            "train step of a small CNN (conv 1-32-64 3x3, maxpool, linear 1600-128-10), batch 64, 28x28",
            move || step(cnn()?, &[64, 1, 28, 28], 64),
        ),
        // The products run on the device's GEMM (cuBLAS).
        Workload::new("W3.matmul_1024", "matmul of two [1024, 1024] f32 tensors", move || {
            let (a, b) = (on(&[1024, 1024])?, on(&[1024, 1024])?);
            Ok(timed(Box::new(move || aten::ops::matmul(&a, &b))))
        }),
        Workload::new("W3.matmul_2048", "matmul of two [2048, 2048] f32 tensors", move || {
            let (a, b) = (on(&[2048, 2048])?, on(&[2048, 2048])?);
            Ok(timed(Box::new(move || aten::ops::matmul(&a, &b))))
        }),
    ]
}

/// A standard-normal f32 tensor of `shape` from the default generator.
fn randn(shape: &[i64]) -> Result<Tensor> {
    aten::ops::randn(shape, Some(c10::ScalarType::F32), None, None, None)
}

fn matmul_square(n: i64) -> Result<Body> {
    let (a, b) = (randn(&[n, n])?, randn(&[n, n])?);
    Ok(body(move || aten::ops::matmul(&a, &b)))
}

fn conv(input: &[i64], weight: &[i64], padding: i64) -> Result<Body> {
    let (x, w, b) = (randn(input)?, randn(weight)?, randn(&weight[..1])?);
    Ok(body(move || aten::ops::conv2d(&x, &w, Some(&b), &[1], &[padding], &[1], 1)))
}

/// The workloads whose id contains `filter` (all of them without one), in registry order.
pub fn select(all: Vec<Workload>, filter: Option<&str>) -> Vec<Workload> {
    all.into_iter()
        .filter(|w| {
            filter.is_none_or(|f| match f.strip_prefix('=') {
                Some(exact) => w.id == exact,
                None => w.id.contains(f),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_well_formed() {
        let all = registry();
        assert!(!all.is_empty());
        let mut ids: Vec<&str> = all.iter().map(|w| w.id).collect();
        for id in &ids {
            let (group, name) = id.split_once('.').expect("W<n>.<name>");
            assert!(group.starts_with('W') && group[1..].parse::<u32>().is_ok(), "{id}");
            assert!(!name.is_empty(), "{id}");
        }
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), all.len(), "duplicate workload id");
    }

    #[test]
    fn filter_is_a_substring_match() {
        let ids = |f| select(registry(), f).iter().map(|w| w.id).collect::<Vec<_>>();
        assert_eq!(ids(Some("add1")), vec!["W1.add1", "W1.add1_front", "W1.add1_grad"]);
        assert!(ids(Some("no-such-workload")).is_empty());
        assert_eq!(ids(Some("=W1.add1")), vec!["W1.add1"]);
        assert_eq!(ids(None).len(), registry().len());
    }
}
