//! `DistributedDataParallel`: data-parallel training with gradients averaged over the ranks,
//! the all-reduces overlapping the backward pass (PyTorch's DDP and its C++ `Reducer`).
//!
//! Note [DDP buckets and overlap]: as PyTorch's reducer.
//! - At construction every rank checks that all ranks have the same parameters (count, shapes,
//!   dtypes), then parameters and buffers are broadcast from rank 0, so all replicas start
//!   equal.
//! - Parameters that require grad are grouped into buckets, walking them in reverse order
//!   (the order their gradients tend to become ready in backward), one dtype and device per
//!   bucket. The first bucket is capped at 1 MiB so that communication starts early, the
//!   others at `bucket_cap_mb` (25 MiB). Each bucket owns one flat gradient buffer.
//! - A post-accumulate-grad hook on every parameter copies its gradient into the bucket. When a
//!   bucket's last gradient arrives, its all-reduce (an average) is started asynchronously and
//!   backward goes on meanwhile. Buckets are started in bucket order on every rank (a ready
//!   bucket waits for the ones before it), so every rank issues the same collectives in the
//!   same order.
//! - When the last bucket has started, the hook waits for all of them and writes the averaged
//!   gradients into `.grad` (with `gradient_as_bucket_view`, `.grad` becomes a view of the
//!   bucket, saving the copy; later backward passes accumulate into it in place). It waits
//!   after releasing the reducer's lock. With NCCL the all-reduces run on the communicator's
//!   stream while backward's kernels go on on the compute stream, and the wait makes the
//!   compute stream, not the host, wait for them (Note [The NCCL stream] in `nccl.rs`).
//! - `find_unused_parameters`: the forward pass walks the autograd graph from the output; the
//!   parameters it does not reach are marked ready (with zero gradients) when the first
//!   gradient arrives. A parameter unused on every rank keeps its `.grad` (None stays None).
//!   Without it, a parameter that gets no gradient leaves the reduction unfinished, and the
//!   next forward pass says so (PyTorch's error).
//! - Under [`DistributedDataParallel::no_sync`], hooks do nothing: gradients accumulate in
//!   `.grad` locally, and the first synchronised backward afterwards averages the sums.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use aten::Tensor;
use autograd::TensorAutograd;
use c10::{Device, Error, Result, ScalarType};
use nn::{Forward, Module};

use crate::comm_hooks::{CommFuture, CommHook, GradBucket};
use crate::process_group::{ProcessGroup, ReduceOp};

/// PyTorch's `dist._DEFAULT_FIRST_BUCKET_BYTES`.
pub const DEFAULT_FIRST_BUCKET_BYTES: usize = 1024 * 1024;

/// The options of [`DistributedDataParallel`], with PyTorch's defaults.
#[derive(Clone, Debug)]
pub struct DdpOptions {
    /// The size of the buckets after the first, in MiB (25).
    pub bucket_cap_mb: f64,
    /// Detect parameters that get no gradient in an iteration (false).
    pub find_unused_parameters: bool,
    /// Broadcast the buffers from rank 0 before every forward pass (true).
    pub broadcast_buffers: bool,
    /// Make `.grad` a view of the bucket buffers instead of copying into them (false).
    pub gradient_as_bucket_view: bool,
    /// The group to average over (the default group when `None`).
    pub process_group: Option<ProcessGroup>,
}

impl Default for DdpOptions {
    fn default() -> Self {
        DdpOptions {
            bucket_cap_mb: 25.0,
            find_unused_parameters: false,
            broadcast_buffers: true,
            gradient_as_bucket_view: false,
            process_group: None,
        }
    }
}

fn ddp_error(msg: impl Into<String>) -> Error {
    Error::Distributed { op: "DistributedDataParallel".into(), msg: msg.into() }
}

/// A flat gradient buffer for some parameters.
struct Bucket {
    /// Indices into the reducer's parameters, in bucket order.
    params: Vec<usize>,
    /// Element offset of each parameter in `buffer`.
    offsets: Vec<i64>,
    buffer: Tensor,
    pending: usize,
    /// The end of the bucket's communication, once started.
    future: Option<CommFuture>,
}

struct State {
    buckets: Vec<Bucket>,
    /// The next bucket to start.
    next_bucket: usize,
    param_ready: Vec<bool>,
    /// A forward pass prepared a reduction that has not finished.
    expect_backward: bool,
    /// The parameters the last forward pass did not reach (`find_unused_parameters`).
    unused: Vec<usize>,
    unused_marked: bool,
    locally_used: Vec<bool>,
}

/// The end of an iteration's reduction, taken out of the reducer's state (see
/// [`Reducer::take_pending`]).
struct Pending {
    /// Each started bucket's future and buffer.
    futures: Vec<(CommFuture, Tensor)>,
    locally_used: Vec<bool>,
    views: Vec<Tensor>,
}

struct Reducer {
    params: Vec<Tensor>,
    /// (bucket, position in bucket) of each parameter.
    location: Vec<(usize, usize)>,
    group: ProcessGroup,
    find_unused: bool,
    as_view: bool,
    no_sync: AtomicBool,
    /// The communication hook, when one is registered (Note [DDP comm hooks]).
    hook: OnceLock<Box<dyn CommHook>>,
    state: Mutex<State>,
}

/// The bucket assignment (Note [DDP buckets and overlap]): parameter indices per bucket.
fn assign_buckets(params: &[Tensor], first_cap: usize, cap: usize) -> Vec<Vec<usize>> {
    // Open buckets per (dtype, device); each key's first bucket has the small cap.
    struct Open {
        key: (ScalarType, Device),
        members: Vec<usize>,
        bytes: usize,
        first: bool,
    }
    let mut open: Vec<Open> = Vec::new();
    let mut done = Vec::new();
    for i in (0..params.len()).rev() {
        let p = &params[i];
        let key = (p.dtype(), p.device());
        let bytes = p.numel() as usize * p.dtype().size();
        let slot = match open.iter().position(|o| o.key == key) {
            Some(s) => s,
            None => {
                open.push(Open { key, members: Vec::new(), bytes: 0, first: true });
                open.len() - 1
            }
        };
        let o = &mut open[slot];
        o.members.push(i);
        o.bytes += bytes;
        if o.bytes >= if o.first { first_cap } else { cap } {
            done.push(std::mem::take(&mut o.members));
            o.bytes = 0;
            o.first = false;
        }
    }
    done.extend(open.into_iter().map(|o| o.members).filter(|m| !m.is_empty()));
    // Start order: the bucket whose parameters come last in the model first.
    done.sort_by_key(|b| std::cmp::Reverse(b.iter().copied().max().unwrap_or(0)));
    done
}

impl Reducer {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The part of bucket `b`'s buffer that holds parameter `i`, shaped like it.
    fn view(&self, st: &State, i: usize) -> Result<Tensor> {
        let (b, pos) = self.location[i];
        let bucket = &st.buckets[b];
        let p = &self.params[i];
        bucket.buffer.narrow(0, bucket.offsets[pos], p.numel())?.view(p.sizes())
    }

    /// An error when the last prepared reduction has not finished (a parameter got no
    /// gradient without `find_unused_parameters`).
    fn check_finished(st: &State) -> Result<()> {
        if st.expect_backward {
            return Err(ddp_error(
                "Expected to have finished reduction in the prior iteration before starting a new one. This error \
                 indicates that your module has parameters that were not used in producing loss. You can enable \
                 unused parameter detection by passing `find_unused_parameters: true` in DdpOptions, and by making \
                 sure all forward function outputs participate in calculating loss.",
            ));
        }
        Ok(())
    }

    /// Prepares the reduction of the backward pass of `output` (Note [DDP buckets and overlap]).
    fn prepare_for_backward(&self, output: &Tensor) -> Result<()> {
        let mut st = self.lock();
        Self::check_finished(&st)?;
        for b in &mut st.buckets {
            b.pending = b.params.len();
            b.future = None;
        }
        st.next_bucket = 0;
        st.param_ready.iter_mut().for_each(|r| *r = false);
        st.locally_used.iter_mut().for_each(|u| *u = false);
        st.unused.clear();
        st.unused_marked = false;
        if self.find_unused {
            let reached = reachable_leaves(output);
            st.unused = (0..self.params.len()).filter(|&i| !reached.contains(&leaf_key(&self.params[i]))).collect();
        }
        st.expect_backward = true;
        Ok(())
    }

    /// The post-accumulate-grad hook of parameter `i`.
    fn on_grad_ready(&self, i: usize) -> Result<()> {
        if self.no_sync.load(Ordering::SeqCst) {
            return Ok(());
        }
        let mut st = self.lock();
        if !st.expect_backward {
            // A backward pass that did not come from a DDP forward: nothing to reduce.
            return Ok(());
        }
        if st.param_ready[i] {
            return Err(ddp_error(format!(
                "Expected to mark a variable ready only once: parameter {i} got a second gradient in this iteration \
                 (a module used twice under DDP needs find_unused_parameters or a single backward per forward)"
            )));
        }
        st.locally_used[i] = true;
        self.mark_ready(&mut st, i, true)?;
        if !st.unused_marked {
            st.unused_marked = true;
            for u in std::mem::take(&mut st.unused) {
                if !st.param_ready[u] {
                    self.mark_ready(&mut st, u, false)?;
                }
            }
        }
        self.launch_ready(&mut st)?;
        if st.next_bucket == st.buckets.len() {
            // The reductions are waited for without the lock: a collective can take as long as
            // the slowest rank, and nothing else may block on the reducer meanwhile.
            let pending = self.take_pending(&mut st)?;
            drop(st);
            self.finalize(pending)?;
        }
        Ok(())
    }

    /// Puts parameter `i`'s gradient (zeros when `has_grad` is false) into its bucket.
    fn mark_ready(&self, st: &mut State, i: usize, has_grad: bool) -> Result<()> {
        let view = self.view(st, i)?;
        match self.params[i].grad().filter(|_| has_grad) {
            Some(g) if g.data_ptr() == view.data_ptr() && g.strides() == view.strides() => {}
            Some(g) => {
                view.copy_(&g).call()?;
            }
            None => {
                view.zero_()?;
            }
        }
        st.param_ready[i] = true;
        let (b, _) = self.location[i];
        st.buckets[b].pending -= 1;
        Ok(())
    }

    /// Starts, in bucket order, the all-reduces (or the hook's communication) of the buckets
    /// whose gradients are all ready.
    fn launch_ready(&self, st: &mut State) -> Result<()> {
        while st.next_bucket < st.buckets.len() && st.buckets[st.next_bucket].pending == 0 {
            let b = st.next_bucket;
            let future = match self.hook.get() {
                None => {
                    let buffer = st.buckets[b].buffer.clone();
                    CommFuture::of_work(self.group.all_reduce(&buffer, ReduceOp::Avg)?, buffer)
                }
                Some(hook) => hook.run(&self.group, &self.grad_bucket(st, b)?)?,
            };
            st.buckets[b].future = Some(future);
            st.next_bucket += 1;
        }
        Ok(())
    }

    /// Bucket `b` as a communication hook sees it.
    fn grad_bucket(&self, st: &State, b: usize) -> Result<GradBucket> {
        let bucket = &st.buckets[b];
        Ok(GradBucket {
            index: b,
            buffer: bucket.buffer.clone(),
            gradients: bucket.params.iter().map(|&i| self.view(st, i)).collect::<Result<_>>()?,
            parameters: bucket.params.iter().map(|&i| self.params[i].clone()).collect(),
            is_last: b + 1 == st.buckets.len(),
        })
    }

    /// Ends the iteration's bookkeeping under the lock and returns what [`Reducer::finalize`]
    /// needs after it is released: the buckets' works, the locally used flags and every
    /// parameter's view into its bucket.
    fn take_pending(&self, st: &mut State) -> Result<Pending> {
        st.expect_backward = false;
        let futures = st.buckets.iter_mut().filter_map(|b| Some((b.future.take()?, b.buffer.clone()))).collect();
        let views = (0..self.params.len()).map(|i| self.view(st, i)).collect::<Result<_>>()?;
        Ok(Pending { futures, locally_used: st.locally_used.clone(), views })
    }

    /// Waits for every bucket and writes the averaged gradients into `.grad` (without the
    /// reducer's lock).
    fn finalize(&self, pending: Pending) -> Result<()> {
        let Pending { futures, locally_used, views } = pending;
        for (future, buffer) in futures {
            let reduced = future.wait()?;
            if reduced.data_ptr() != buffer.data_ptr() {
                if reduced.numel() != buffer.numel() {
                    return Err(ddp_error(format!(
                        "the communication hook's result has {} elements, but its bucket has {}",
                        reduced.numel(),
                        buffer.numel()
                    )));
                }
                buffer.copy_(&reduced.reshape(&[-1])?).call()?;
            }
        }
        let globally_used = if self.find_unused {
            let used: Vec<i32> = locally_used.iter().map(|&u| u as i32).collect();
            let n = used.len() as i64;
            let t = self.group.to_backend_device(Tensor::from_vec(used, &[n])?)?;
            self.group.all_reduce(&t, ReduceOp::Max)?.wait()?;
            t.cpu()?.to_vec::<i32>()?.into_iter().map(|u| u != 0).collect()
        } else {
            vec![true; self.params.len()]
        };
        for ((p, view), used) in self.params.iter().zip(views).zip(globally_used) {
            if !used {
                continue;
            }
            match p.grad() {
                Some(g) if g.data_ptr() == view.data_ptr() && g.strides() == view.strides() => {}
                _ if self.as_view => p.set_grad(Some(view))?,
                Some(g) => {
                    g.copy_(&view).call()?;
                }
                None => p.set_grad(Some(view.clone_tensor()?))?,
            }
        }
        Ok(())
    }
}

/// Identifies a leaf tensor by its implementation's address.
fn leaf_key(t: &Tensor) -> usize {
    t.imp() as *const c10::TensorImpl as usize
}

/// The leaves (by [`leaf_key`]) whose accumulators the graph of `output` reaches.
fn reachable_leaves(output: &Tensor) -> HashSet<usize> {
    let mut leaves = HashSet::new();
    let Some(root) = output.grad_fn() else {
        return leaves;
    };
    let mut seen = HashSet::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if !seen.insert(Arc::as_ptr(&node) as *const () as usize) {
            continue;
        }
        if node.is_accumulator() {
            if let Some(v) = node.accumulated_variable() {
                leaves.insert(leaf_key(&v));
            }
        }
        stack.extend(node.core().next_edges().iter().filter_map(|e| e.function.clone()));
    }
    leaves
}

/// Data-parallel training of `M` (`torch.nn.parallel.DistributedDataParallel`; see Note [DDP
/// buckets and overlap]). Build it on every rank, call [`forward`](Self::forward), then
/// `backward` on the loss: when `backward` returns, every rank's `.grad` holds the average over
/// the ranks, and an optimizer step keeps the replicas equal.
pub struct DistributedDataParallel<M: Module> {
    module: M,
    reducer: Arc<Reducer>,
    broadcast_buffers: bool,
    bucket_sizes: Vec<usize>,
}

/// While alive, backward passes accumulate gradients locally ([`DistributedDataParallel::no_sync`]).
pub struct NoSync<'a> {
    flag: &'a AtomicBool,
    previous: bool,
}

impl Drop for NoSync<'_> {
    fn drop(&mut self) {
        self.flag.store(self.previous, Ordering::SeqCst);
    }
}

impl<M: Module> DistributedDataParallel<M> {
    /// Wraps `module` on this rank, with the defaults of [`DdpOptions`].
    pub fn new(module: M) -> Result<Self> {
        Self::with_options(module, DdpOptions::default())
    }

    /// Wraps `module` on this rank (Note [DDP buckets and overlap]).
    pub fn with_options(module: M, options: DdpOptions) -> Result<Self> {
        let group = match options.process_group.clone() {
            Some(g) => g,
            None => crate::api::default_group()?,
        };
        if options.bucket_cap_mb.is_nan() || options.bucket_cap_mb <= 0.0 {
            return Err(ddp_error(format!("bucket_cap_mb must be positive, got {}", options.bucket_cap_mb)));
        }
        let params: Vec<Tensor> =
            module.parameters().into_iter().map(|p| p.tensor().clone()).filter(|t| t.requires_grad()).collect();
        if params.is_empty() {
            return Err(ddp_error(
                "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient.",
            ));
        }
        verify_same_model(&group, &params)?;
        // Every replica starts from rank 0's parameters and buffers.
        {
            let _g = autograd::no_grad();
            for t in params.iter().chain(module.named_buffers().iter().map(|(_, b)| b)) {
                group.broadcast(t, 0)?.wait()?;
            }
        }
        let cap = (options.bucket_cap_mb * 1024.0 * 1024.0) as usize;
        let assignment = assign_buckets(&params, DEFAULT_FIRST_BUCKET_BYTES.min(cap), cap);
        let mut location = vec![(0, 0); params.len()];
        let mut buckets = Vec::with_capacity(assignment.len());
        let mut bucket_sizes = Vec::new();
        for (b, members) in assignment.into_iter().enumerate() {
            let mut offsets = Vec::with_capacity(members.len());
            let mut total = 0i64;
            for (pos, &i) in members.iter().enumerate() {
                location[i] = (b, pos);
                offsets.push(total);
                total += params[i].numel();
            }
            let p0 = &params[members[0]];
            let buffer = aten::ops::zeros(&[total], Some(p0.dtype()), None, Some(p0.device()), None)?;
            bucket_sizes.push(total as usize * p0.dtype().size());
            buckets.push(Bucket { pending: members.len(), params: members, offsets, buffer, future: None });
        }
        let n = params.len();
        let reducer = Arc::new(Reducer {
            params,
            location,
            group,
            find_unused: options.find_unused_parameters,
            as_view: options.gradient_as_bucket_view,
            no_sync: AtomicBool::new(false),
            hook: OnceLock::new(),
            state: Mutex::new(State {
                buckets,
                next_bucket: 0,
                param_ready: vec![false; n],
                expect_backward: false,
                unused: Vec::new(),
                unused_marked: false,
                locally_used: vec![false; n],
            }),
        });
        for (i, p) in reducer.params.iter().enumerate() {
            let weak: Weak<Reducer> = Arc::downgrade(&reducer);
            p.register_post_accumulate_grad_hook(move |_| match weak.upgrade() {
                Some(r) => r.on_grad_ready(i),
                None => Ok(()),
            })?;
        }
        Ok(DistributedDataParallel { module, reducer, broadcast_buffers: options.broadcast_buffers, bucket_sizes })
    }

    /// The wrapped module.
    pub fn module(&self) -> &M {
        &self.module
    }

    /// The wrapped module, mutably (e.g. for `train`/`eval`).
    pub fn module_mut(&mut self) -> &mut M {
        &mut self.module
    }

    /// The process group gradients are averaged over.
    pub fn process_group(&self) -> &ProcessGroup {
        &self.reducer.group
    }

    /// The size in bytes of each gradient bucket, in the order they are reduced.
    pub fn bucket_sizes(&self) -> &[usize] {
        &self.bucket_sizes
    }

    /// Replaces the all-reduce of each gradient bucket with `hook` (PyTorch's
    /// `register_comm_hook`; Note [DDP comm hooks]), e.g. with
    /// [`fp16_compress_hook`](crate::comm_hooks::fp16_compress_hook). A second registration is
    /// an error.
    pub fn register_comm_hook(&self, hook: impl CommHook + 'static) -> Result<()> {
        self.reducer
            .hook
            .set(Box::new(hook))
            .map_err(|_| ddp_error("register_comm_hook or register_builtin_comm_hook can only be called once."))
    }

    /// Until the guard is dropped, backward passes do not synchronise: gradients accumulate
    /// in `.grad` locally (PyTorch's `with ddp.no_sync():`).
    pub fn no_sync(&self) -> NoSync<'_> {
        let previous = self.reducer.no_sync.swap(true, Ordering::SeqCst);
        NoSync { flag: &self.reducer.no_sync, previous }
    }
}

impl<M: Forward> DistributedDataParallel<M> {
    /// Runs the module (after broadcasting the buffers from rank 0 when `broadcast_buffers`)
    /// and prepares the gradient reduction of the backward pass of the output.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let grad_sync = autograd::is_grad_enabled() && !self.reducer.no_sync.load(Ordering::SeqCst);
        if self.broadcast_buffers {
            let buffers = self.module.named_buffers();
            if !buffers.is_empty() {
                let _g = autograd::no_grad();
                for (_, b) in &buffers {
                    self.reducer.group.broadcast(b, 0)?.wait()?;
                }
            }
        }
        if grad_sync {
            // Checked before running the module, so the error leaves nothing half done.
            Reducer::check_finished(&self.reducer.lock())?;
        }
        let out = self.module.call(x)?;
        if grad_sync {
            self.reducer.prepare_for_backward(&out)?;
        }
        Ok(out)
    }
}

/// Every rank checks every rank's parameter list against rank 0's (the same error everywhere).
fn verify_same_model(group: &ProcessGroup, params: &[Tensor]) -> Result<()> {
    let mine: Vec<(Vec<i64>, String)> =
        params.iter().map(|p| (p.sizes().to_vec(), p.dtype().name().to_string())).collect();
    let all = crate::api::all_gather_object_in(group, &mine)?;
    let reference = &all[0];
    for (r, theirs) in all.iter().enumerate().skip(1) {
        if theirs.len() != reference.len() {
            return Err(ddp_error(format!(
                "DDP expects same model across all ranks, but Rank {r} has {} params, while rank 0 has inconsistent {} params.",
                theirs.len(),
                reference.len()
            )));
        }
        for (i, (a, b)) in reference.iter().zip(theirs).enumerate() {
            if a != b {
                return Err(ddp_error(format!(
                    "DDP expects same model across all ranks: parameter {i} is {} {:?} on rank {r} but {} {:?} on rank 0",
                    b.1, b.0, a.1, a.0
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: usize) -> Tensor {
        Tensor::from_vec(vec![0f32; n], &[n as i64]).unwrap()
    }

    #[test]
    fn buckets_walk_the_parameters_backwards_with_a_small_first_bucket() {
        // 4-byte floats: 300k elements = 1.2 MB.
        let params = vec![t(300_000), t(10), t(300_000), t(10), t(100)];
        let b = assign_buckets(&params, 1 << 20, 4 << 20);
        // From the back: 100 + 10 + 300k crosses 1 MiB and closes the first bucket; the rest
        // stays under the 4 MiB cap.
        assert_eq!(b, vec![vec![4, 3, 2], vec![1, 0]]);
        let b = assign_buckets(&params, 1 << 20, 1 << 20);
        assert_eq!(b, vec![vec![4, 3, 2], vec![1, 0]]);
        let b = assign_buckets(&params, 400, 1 << 30);
        assert_eq!(b, vec![vec![4], vec![3, 2, 1, 0]]);
        // One dtype per bucket.
        let h = Tensor::from_vec(vec![0f64; 10], &[10]).unwrap();
        let b = assign_buckets(&[t(10), h.clone(), t(10), h], 1 << 20, 1 << 20);
        assert_eq!(b, vec![vec![3, 1], vec![2, 0]]);
    }
}
