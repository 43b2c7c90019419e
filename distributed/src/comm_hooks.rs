//! DDP communication hooks (PyTorch's `DistributedDataParallel.register_comm_hook` and
//! `torch.distributed.algorithms.ddp_comm_hooks.default_hooks`).
//!
//! Note [DDP comm hooks]: a hook replaces the reducer's all-reduce of a bucket.
//! - The reducer calls it when a bucket's gradients are all in the bucket's flat buffer, in
//!   bucket order on every rank, from the backward pass (under the reducer's lock: a hook starts
//!   its collectives and returns; it must not wait for them there).
//! - It returns a [`CommFuture`]: what finishes the bucket's communication, run once backward
//!   has started every bucket (without the reducer's lock). The future's tensor is the bucket's
//!   reduced gradients, flat; the reducer copies it into the buffer unless it is the buffer
//!   itself, then into `.grad` as without a hook. The hook decides what "reduced" means: the
//!   built-in hooks average, as DDP does without one.
//! - [`allreduce_hook`] is DDP's own reduction (divide by the world size, all-reduce a sum);
//!   [`fp16_compress_hook`] and [`bf16_compress_hook`] all-reduce a half-precision copy (half
//!   the bytes on the wire) and cast the result back.
//! - [`PowerSgd`] is PyTorch's `powerSGD_hook`: low-rank compression with error feedback
//!   (Note [PowerSGD]).
//! - A hook is registered once (PyTorch's error otherwise).

use aten::Tensor;
use c10::{Result, Scalar, ScalarType};

use crate::process_group::{ProcessGroup, ReduceOp};

/// One bucket of gradients, as a hook sees it (PyTorch's `dist.GradBucket`).
pub struct GradBucket {
    pub(crate) index: usize,
    pub(crate) buffer: Tensor,
    pub(crate) gradients: Vec<Tensor>,
    pub(crate) parameters: Vec<Tensor>,
    pub(crate) is_last: bool,
}

impl GradBucket {
    /// The bucket's position in the order buckets are reduced (0 first).
    pub fn index(&self) -> usize {
        self.index
    }

    /// The flat buffer of the bucket's gradients (1-D, the bucket's dtype and device).
    pub fn buffer(&self) -> &Tensor {
        &self.buffer
    }

    /// Each parameter's gradient: a view of [`buffer`](Self::buffer) shaped like the parameter,
    /// in the order of [`parameters`](Self::parameters).
    pub fn gradients(&self) -> &[Tensor] {
        &self.gradients
    }

    /// The bucket's parameters.
    pub fn parameters(&self) -> &[Tensor] {
        &self.parameters
    }

    /// Whether this is the last bucket of the iteration (PyTorch's `is_last`).
    pub fn is_last(&self) -> bool {
        self.is_last
    }
}

/// The end of a bucket's communication: yields its reduced gradients, flat (PyTorch's
/// `torch.futures.Future[Tensor]`; see Note [DDP comm hooks]).
pub struct CommFuture(Box<dyn FnOnce() -> Result<Tensor> + Send>);

impl CommFuture {
    /// A future that runs `finish` when waited for.
    pub fn new(finish: impl FnOnce() -> Result<Tensor> + Send + 'static) -> CommFuture {
        CommFuture(Box::new(finish))
    }

    /// A future whose value is already known.
    pub fn ready(value: Tensor) -> CommFuture {
        CommFuture::new(move || Ok(value))
    }

    /// The value of the collective `work` writes into `tensor`.
    pub fn of_work(work: crate::Work, tensor: Tensor) -> CommFuture {
        CommFuture::new(move || work.wait().map(|()| tensor))
    }

    /// A future that applies `f` to this one's value (PyTorch's `Future.then`).
    pub fn then(self, f: impl FnOnce(Tensor) -> Result<Tensor> + Send + 'static) -> CommFuture {
        CommFuture::new(move || f(self.wait()?))
    }

    /// Waits for the value.
    pub fn wait(self) -> Result<Tensor> {
        (self.0)()
    }
}

/// A communication hook (see Note [DDP comm hooks]): any
/// `Fn(&ProcessGroup, &GradBucket) -> Result<CommFuture>`, or a type holding state across
/// iterations (PyTorch's `state` argument).
pub trait CommHook: Send + Sync {
    /// Starts the communication of `bucket` over `group` (DDP's group).
    fn run(&self, group: &ProcessGroup, bucket: &GradBucket) -> Result<CommFuture>;
}

impl<F> CommHook for F
where
    F: Fn(&ProcessGroup, &GradBucket) -> Result<CommFuture> + Send + Sync,
{
    fn run(&self, group: &ProcessGroup, bucket: &GradBucket) -> Result<CommFuture> {
        self(group, bucket)
    }
}

/// Divides `tensor` by the group's size and all-reduces the sum, in place (the average).
fn allreduce_average(group: &ProcessGroup, tensor: Tensor) -> Result<CommFuture> {
    tensor.div_(Scalar::Int(group.size() as i64)).call()?;
    let work = group.all_reduce(&tensor, ReduceOp::Sum)?;
    Ok(CommFuture::of_work(work, tensor))
}

/// DDP's reduction as a hook: the bucket divided by the world size, then all-reduced (PyTorch's
/// `default_hooks.allreduce_hook`).
pub fn allreduce_hook(group: &ProcessGroup, bucket: &GradBucket) -> Result<CommFuture> {
    allreduce_average(group, bucket.buffer.clone())
}

/// All-reduces a copy of the bucket in `dtype`, divided by the world size, and writes the
/// result back into the bucket's buffer.
fn compress_hook(group: &ProcessGroup, bucket: &GradBucket, dtype: ScalarType) -> Result<CommFuture> {
    let buffer = bucket.buffer.clone();
    let compressed = buffer.to(dtype).call()?;
    Ok(allreduce_average(group, compressed)?.then(move |reduced| {
        buffer.copy_(&reduced).call()?;
        Ok(buffer)
    }))
}

/// All-reduces the bucket in float16 (half the bytes of float32), divided by the world size
/// before the sum as PyTorch's `default_hooks.fp16_compress_hook`, then casts it back.
pub fn fp16_compress_hook(group: &ProcessGroup, bucket: &GradBucket) -> Result<CommFuture> {
    compress_hook(group, bucket, ScalarType::F16)
}

/// [`fp16_compress_hook`] in bfloat16 (PyTorch's `default_hooks.bf16_compress_hook`).
pub fn bf16_compress_hook(group: &ProcessGroup, bucket: &GradBucket) -> Result<CommFuture> {
    compress_hook(group, bucket, ScalarType::BF16)
}

// ---- PowerSGD ---------------------------------------------------------------------------------

/// The options of [`PowerSgd`], with PyTorch's defaults (`PowerSGDState`).
#[derive(Clone, Debug)]
pub struct PowerSgdOptions {
    /// The rank of each gradient matrix's approximation (1).
    pub matrix_approximation_rank: usize,
    /// Iterations of plain all-reduce before compression starts (1000); above 1 with error
    /// feedback or warm start.
    pub start_powersgd_iter: usize,
    /// A matrix is compressed only when its approximation is this many times smaller (2).
    pub min_compression_rate: f64,
    /// Add the last iteration's compression error to the gradient first (true).
    pub use_error_feedback: bool,
    /// Start each iteration's power iteration from the last one's `Q` (true).
    pub warm_start: bool,
    /// Added to the column norms in Gram-Schmidt (0).
    pub orthogonalization_epsilon: f64,
    /// The seed of the random initial `Q`s, the same on every rank (0).
    pub random_seed: u32,
}

impl Default for PowerSgdOptions {
    fn default() -> Self {
        PowerSgdOptions {
            matrix_approximation_rank: 1,
            start_powersgd_iter: 1000,
            min_compression_rate: 2.0,
            use_error_feedback: true,
            warm_start: true,
            orthogonalization_epsilon: 0.0,
            random_seed: 0,
        }
    }
}

/// What PowerSGD keeps across iterations, per bucket index.
struct PowerSgdState {
    iter: usize,
    /// numpy's `RandomState(random_seed)`, which draws each new seed of the random `Q`s.
    rng: aten::generator::Mt19937,
    error: std::collections::HashMap<usize, Tensor>,
    p_memory: std::collections::HashMap<usize, Tensor>,
    q_memory: std::collections::HashMap<usize, Tensor>,
    numel_before: u64,
    numel_after: u64,
}

/// PowerSGD gradient compression (Vogels et al., NeurIPS 2019) as PyTorch's `powerSGD_hook`:
/// register it with
/// [`DistributedDataParallel::register_comm_hook`](crate::DistributedDataParallel::register_comm_hook).
///
/// Note [PowerSGD]: for the first `start_powersgd_iter` iterations the bucket is averaged
/// plainly. Then each gradient viewed as an `n x m` matrix `M` (its first dimension by the
/// rest) is compressed when `(n + m) r * min_compression_rate < n m` (`r` the rank, at most `n`
/// and `m`); the others (biases) are concatenated and averaged. With error feedback `M` first
/// gets last iteration's error added. Then `P = M Q` is all-reduced (a sum) and orthogonalised
/// (Gram-Schmidt up to rank 2, a QR decomposition above), `Q = M^T P` is all-reduced and divided
/// by the world size, and `M` becomes `P Q^T`; the error is what that lost. The matrices are
/// taken grouped by shape (the first shape seen first), which orders the `P`s and `Q`s in their
/// flat memories. `Q` starts random: drawn once with warm start (later iterations start from the
/// last `Q`), each iteration without it, from `randn` seeded by numpy's `RandomState(seed)
/// .randint(1_000_000_000)`, which PyTorch draws the same way, so the values match PyTorch's.
pub struct PowerSgd {
    options: PowerSgdOptions,
    state: std::sync::Arc<std::sync::Mutex<PowerSgdState>>,
}

impl PowerSgd {
    /// A PowerSGD hook with `options` (PyTorch's `PowerSGDState` errors for bad ones).
    pub fn new(options: PowerSgdOptions) -> Result<PowerSgd> {
        if (options.use_error_feedback || options.warm_start) && options.start_powersgd_iter <= 1 {
            return Err(c10::Error::invalid(
                "PowerSGDState",
                "Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or `warm_start` is enabled, because PowerSGD \
                 can only be applied after the first two iterations in DDP.",
            ));
        }
        if options.matrix_approximation_rank == 0 {
            return Err(c10::Error::invalid("PowerSGDState", "matrix_approximation_rank must be at least 1"));
        }
        let state = PowerSgdState {
            iter: 0,
            rng: aten::generator::Mt19937::new(options.random_seed as u64),
            error: Default::default(),
            p_memory: Default::default(),
            q_memory: Default::default(),
            numel_before: 0,
            numel_after: 0,
        };
        Ok(PowerSgd { options, state: std::sync::Arc::new(std::sync::Mutex::new(state)) })
    }

    /// The iterations seen so far (counted at each iteration's last bucket).
    pub fn iteration(&self) -> usize {
        self.lock().iter
    }

    /// The compression so far: elements before and after (PyTorch's `compression_stats`,
    /// whose rate is their ratio).
    pub fn compression_stats(&self) -> (u64, u64) {
        let st = self.lock();
        (st.numel_before, st.numel_after)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PowerSgdState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// numpy's legacy `RandomState.randint(1_000_000_000)`: 32-bit draws masked to 30 bits until
/// one is in range.
fn numpy_randint_1e9(rng: &mut aten::generator::Mt19937) -> u64 {
    loop {
        let v = rng.next_u32() & ((1 << 30) - 1);
        if v < 1_000_000_000 {
            return v as u64;
        }
    }
}

/// Orthogonalises the columns of `m` (`n x r`) in place (see Note [PowerSGD]).
fn orthogonalize(m: &Tensor, epsilon: f64) -> Result<()> {
    let r = m.sizes()[1];
    if r <= 2 || matches!(m.dtype(), ScalarType::F16 | ScalarType::BF16) {
        for i in 0..r {
            let col = m.narrow(1, i, 1)?;
            let norm = col.norm().call()?;
            if epsilon == 0.0 {
                col.div_(&norm).call()?;
            } else {
                col.div_(&norm.add(Scalar::Float(epsilon)).call()?).call()?;
            }
            if i + 1 < r {
                let rest = m.narrow(1, i + 1, r - i - 1)?;
                let dots = col.mul(&rest)?.sum().dim(&[0i64][..]).keepdim(true).call()?;
                rest.sub_(&dots.mul(&col)?).call()?;
            }
        }
    } else {
        let (q, _) = aten::ops::linalg_qr(m, "reduced")?;
        m.copy_(&q).call()?;
    }
    Ok(())
}

/// The gradients PowerSGD compresses in a bucket (as `n x m` views) and their `P` and `Q` (views
/// of the bucket's flat P and Q memories).
struct Compressed {
    matrices: Vec<Tensor>,
    ps: Vec<Tensor>,
    qs: Vec<Tensor>,
}

impl CommHook for PowerSgd {
    fn run(&self, group: &ProcessGroup, bucket: &GradBucket) -> Result<CommFuture> {
        let o = &self.options;
        let mut st = self.lock();
        let buffer = bucket.buffer.clone();
        if st.iter < o.start_powersgd_iter {
            if bucket.is_last {
                st.iter += 1;
            }
            drop(st);
            return allreduce_average(group, buffer);
        }
        let index = bucket.index;
        let (dtype, device) = (buffer.dtype(), buffer.device());
        let input_copy = if o.use_error_feedback {
            match st.error.get(&index) {
                Some(e) => {
                    buffer.add_(e).call()?;
                }
                None => {
                    let zeros = aten::ops::zeros(&[buffer.numel()], Some(dtype), None, Some(device), None)?;
                    st.error.insert(index, zeros);
                }
            }
            Some(buffer.clone_tensor()?)
        } else {
            None
        };

        // Which gradients are compressed, grouped by shape in the order shapes first appear.
        let mut uncompressed = Vec::new();
        let mut by_shape: Vec<((i64, i64, i64), Vec<Tensor>)> = Vec::new();
        let (mut p_len, mut q_len) = (0, 0);
        for g in &bucket.gradients {
            if g.dim() == 0 {
                uncompressed.push(g.clone());
                continue;
            }
            let n = g.sizes()[0];
            let m = g.numel() / n.max(1);
            let r = n.min(m).min(o.matrix_approximation_rank as i64);
            let (before, after) = ((n * m) as u64, ((n + m) * r) as u64);
            st.numel_before += before;
            if (after as f64) * o.min_compression_rate < before as f64 {
                st.numel_after += after;
                p_len += n * r;
                q_len += m * r;
                let matrix = g.view(&[n, m])?;
                match by_shape.iter_mut().find(|(s, _)| *s == (n, m, r)) {
                    Some((_, v)) => v.push(matrix),
                    None => by_shape.push(((n, m, r), vec![matrix])),
                }
            } else {
                st.numel_after += before;
                uncompressed.push(g.clone());
            }
        }
        let flat: Vec<Tensor> = uncompressed.iter().map(|t| t.reshape(&[-1])).collect::<Result<_>>()?;
        let uncompressed_memory = if flat.is_empty() {
            aten::ops::zeros(&[0], Some(dtype), None, Some(device), None)?
        } else {
            aten::ops::cat(&flat, 0)?
        };

        let randomize = !o.warm_start || !st.p_memory.contains_key(&index);
        if randomize {
            st.p_memory.insert(index, aten::ops::empty(&[p_len], Some(dtype), None, Some(device), None, None)?);
            st.q_memory.insert(index, aten::ops::empty(&[q_len], Some(dtype), None, Some(device), None, None)?);
        }
        let (p_memory, q_memory) = (st.p_memory[&index].clone(), st.q_memory[&index].clone());
        let mut c = Compressed { matrices: Vec::new(), ps: Vec::new(), qs: Vec::new() };
        let (mut p_at, mut q_at) = (0, 0);
        for ((n, m, r), matrices) in by_shape {
            for matrix in matrices {
                c.ps.push(p_memory.narrow(0, p_at, n * r)?.view(&[n, r])?);
                c.qs.push(q_memory.narrow(0, q_at, m * r)?.view(&[m, r])?);
                c.matrices.push(matrix);
                p_at += n * r;
                q_at += m * r;
            }
        }
        if randomize {
            // The same seed on every rank: the same initial Qs.
            let generator = aten::Generator::new(c10::Device::CPU);
            generator.manual_seed(numpy_randint_1e9(&mut st.rng));
            for q in &c.qs {
                let sizes = [1, q.sizes()[0], q.sizes()[1]];
                q.copy_(
                    &aten::ops::randn_generator(&sizes, Some(&generator), Some(dtype), None, None, None)?
                        .view(q.sizes())?,
                )
                .call()?;
                orthogonalize(q, o.orthogonalization_epsilon)?;
            }
        } else {
            for q in &c.qs {
                orthogonalize(q, o.orthogonalization_epsilon)?;
            }
        }
        for ((matrix, p), q) in c.matrices.iter().zip(&c.ps).zip(&c.qs) {
            p.copy_(&matrix.mm(q)?).call()?;
        }
        drop(st);

        let uncompressed_work = group.all_reduce(&uncompressed_memory, ReduceOp::Sum)?;
        let p_work = group.all_reduce(&p_memory, ReduceOp::Sum)?;
        let (group, state, options) = (group.clone(), self.state.clone(), o.clone());
        let is_last = bucket.is_last;
        Ok(CommFuture::new(move || {
            let world = Scalar::Int(group.size() as i64);
            uncompressed_work.wait()?;
            uncompressed_memory.div_(world).call()?;
            let mut at = 0;
            for t in &uncompressed {
                t.copy_(&uncompressed_memory.narrow(0, at, t.numel())?.view(t.sizes())?).call()?;
                at += t.numel();
            }
            p_work.wait()?;
            for p in &c.ps {
                orthogonalize(p, options.orthogonalization_epsilon)?;
            }
            for ((matrix, p), q) in c.matrices.iter().zip(&c.ps).zip(&c.qs) {
                q.copy_(&matrix.t()?.mm(p)?).call()?;
            }
            group.all_reduce(&q_memory, ReduceOp::Sum)?.wait()?;
            q_memory.div_(world).call()?;
            for ((matrix, p), q) in c.matrices.iter().zip(&c.ps).zip(&c.qs) {
                matrix.copy_(&p.mm(&q.t()?)?).call()?;
            }
            let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(input) = input_copy {
                st.error.insert(index, input.sub(&buffer).call()?);
            }
            if !options.warm_start {
                st.p_memory.clear();
                st.q_memory.clear();
            }
            if is_last {
                st.iter += 1;
            }
            Ok(buffer)
        }))
    }
}
