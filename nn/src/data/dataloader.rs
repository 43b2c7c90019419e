//! The `DataLoader` (PyTorch's `torch.utils.data.DataLoader`): batches of a dataset in sampler
//! order, collated into tensors, optionally loaded by worker threads ahead of use.
//!
//! Note [Deterministic batch order]: the order of batches depends only on the sampler (and so
//! on the generator's seed), never on `num_workers` or on which worker finishes first. Batch
//! `k` goes to worker `k % num_workers`; results carry their batch number and wait in a reorder
//! buffer until every earlier batch has been yielded. This is PyTorch's design, with threads in
//! place of processes: datasets and tensors are shared, not pickled.
//!
//! Note [Bounded prefetch]: at most `prefetch_factor * num_workers` batches are outstanding
//! (dispatched and not yet yielded). The task and result channels are bounded by that count, so
//! no send ever blocks: a worker can always deliver its batch, and dropping the iterator only
//! has to close the task channels and join the threads.

use std::cell::Cell;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use aten::{ops, Generator, Tensor};
use c10::{Error, Result};

use super::dataset::{Dataset, IterableDataset};
use super::sampler::{draw_seed, BatchSampler, RandomSampler, Sampler, SequentialSampler};

// ---- collation --------------------------------------------------------------------------------

/// How a batch is made from a list of samples (PyTorch's `default_collate`): tensors are
/// stacked along a new dimension 0, scalars become a 1-d tensor, tuples and vectors are
/// collated position by position.
///
/// ```
/// use nn::data::default_collate;
/// use aten::Tensor;
/// let samples = vec![(Tensor::from_slice(&[1.0f32, 2.0]), 0i64), (Tensor::from_slice(&[3.0f32, 4.0]), 1)];
/// let (x, y) = default_collate(samples).unwrap();
/// assert_eq!(x.sizes(), &[2, 2]);
/// assert_eq!(y.to_vec::<i64>().unwrap(), [0, 1]);
/// ```
pub trait Collate: Sized {
    /// The batched form of a sample.
    type Batch;
    /// Collates `samples` (one batch) into a batch.
    fn collate(samples: Vec<Self>) -> Result<Self::Batch>;
}

/// Collates `samples` with their [`Collate`] implementation (PyTorch's `default_collate`).
pub fn default_collate<T: Collate>(samples: Vec<T>) -> Result<T::Batch> {
    T::collate(samples)
}

/// Tensors are stacked: `n` samples of shape `s` make a batch of shape `[n, ...s]`.
impl Collate for Tensor {
    type Batch = Tensor;
    fn collate(samples: Vec<Tensor>) -> Result<Tensor> {
        ops::stack(&samples, 0)
    }
}

/// `Collate` for scalars: `n` values make a 1-d tensor of their dtype.
macro_rules! collate_scalar {
    ($($t:ty),+) => {$(
        impl Collate for $t {
            type Batch = Tensor;
            fn collate(samples: Vec<$t>) -> Result<Tensor> {
                let n = samples.len() as i64;
                Tensor::from_vec(samples, &[n])
            }
        }
    )+};
}
collate_scalar!(u8, i8, i16, i32, i64, f32, f64, bool);

/// `Collate` for tuples: each position is collated on its own.
macro_rules! collate_tuple {
    ($(($t:ident, $v:ident, $i:tt)),+) => {
        impl<$($t: Collate),+> Collate for ($($t,)+) {
            type Batch = ($($t::Batch,)+);
            fn collate(samples: Vec<Self>) -> Result<Self::Batch> {
                $(let mut $v = Vec::with_capacity(samples.len());)+
                for s in samples {
                    $($v.push(s.$i);)+
                }
                Ok(($($t::collate($v)?,)+))
            }
        }
    };
}
collate_tuple!((A, a, 0), (B, b, 1));
collate_tuple!((A, a, 0), (B, b, 1), (C, c, 2));
collate_tuple!((A, a, 0), (B, b, 1), (C, c, 2), (D, d, 3));

/// Vectors of equal length are collated position by position (PyTorch's rule for lists).
impl<T: Collate> Collate for Vec<T> {
    type Batch = Vec<T::Batch>;
    fn collate(samples: Vec<Vec<T>>) -> Result<Vec<T::Batch>> {
        let width = samples.first().map_or(0, Vec::len);
        if samples.iter().any(|s| s.len() != width) {
            return Err(Error::invalid("default_collate", "each element in list of batch should be of equal size"));
        }
        let mut columns: Vec<Vec<T>> = (0..width).map(|_| Vec::with_capacity(samples.len())).collect();
        for s in samples {
            for (column, v) in columns.iter_mut().zip(s) {
                column.push(v);
            }
        }
        columns.into_iter().map(T::collate).collect()
    }
}

// ---- worker info ------------------------------------------------------------------------------

/// What a worker thread knows about itself (PyTorch's `WorkerInfo`), from
/// [`get_worker_info`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkerInfo {
    /// This worker's number, in `0..num_workers`.
    pub id: usize,
    /// The number of workers of the loader.
    pub num_workers: usize,
    /// `base_seed + id`, where the base seed is drawn from the loader's generator each time it
    /// is iterated; seed a [`Generator`] with it for per-worker randomness.
    pub seed: u64,
}

thread_local! {
    static WORKER_INFO: Cell<Option<WorkerInfo>> = const { Cell::new(None) };
}

/// The calling worker thread's [`WorkerInfo`], or `None` outside a loader's worker (PyTorch's
/// `torch.utils.data.get_worker_info`). An [`IterableDataset`] uses it to give each worker its
/// own share of the stream.
pub fn get_worker_info() -> Option<WorkerInfo> {
    WORKER_INFO.with(Cell::get)
}

/// Starts worker thread `id`, which runs `body` with its [`WorkerInfo`] set.
fn spawn_worker(info: WorkerInfo, body: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>> {
    thread::Builder::new()
        .name(format!("dataloader-worker-{}", info.id))
        .spawn(move || {
            WORKER_INFO.with(|w| w.set(Some(info)));
            body();
        })
        .map_err(|e| Error::invalid("DataLoader", format!("could not start worker {}: {e}", info.id)))
}

/// The error standing for a panic caught in worker `id`.
fn worker_panic(id: usize, payload: Box<dyn std::any::Any + Send>) -> Error {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".into());
    Error::invalid("DataLoader", format!("Caught a panic in DataLoader worker {id}: {msg}"))
}

/// Checks the worker options, returning the prefetch factor to use (PyTorch's rules).
fn check_workers(num_workers: usize, prefetch_factor: Option<usize>) -> Result<usize> {
    match (num_workers, prefetch_factor) {
        (0, Some(_)) => Err(Error::invalid(
            "DataLoader",
            "prefetch_factor option could only be specified in multiprocessing. let num_workers > 0 to enable \
             multiprocessing, otherwise set prefetch_factor to None.",
        )),
        (_, Some(0)) => Err(Error::invalid("DataLoader", "prefetch_factor must be greater than 0")),
        (_, p) => Ok(p.unwrap_or(2)),
    }
}

// ---- DataLoader -------------------------------------------------------------------------------

/// Loads one batch: fetches the samples at the indices and collates them.
type FetchFn<B> = dyn Fn(&[usize]) -> Result<B> + Send + Sync;

/// A collate function from samples of type `T` to batches of type `B`.
type CollateFn<T, B> = dyn Fn(Vec<T>) -> Result<B> + Send + Sync;

/// Batches of a map-style [`Dataset`] (PyTorch's `DataLoader`). Iterating it (`for batch in
/// &loader`) is one epoch; it yields `Result<B>` batches in the order of its batch sampler.
///
/// Build one with [`DataLoader::builder`] (default collation) or
/// [`DataLoaderBuilder::with_collate_fn`]. Options follow PyTorch: `batch_size` (1),
/// `shuffle`, `sampler`, `batch_sampler`, `drop_last`, `generator`, `collate_fn`,
/// `num_workers` (0: load in the calling thread) and `prefetch_factor` (2 per worker).
///
/// With `shuffle` and a generator, every epoch draws a new permutation from the generator, so
/// a seed fixes the sequence of epochs — PyTorch's sequence for the same seed, since the
/// loader also draws PyTorch's per-epoch base seed from it first. The order never depends on
/// `num_workers` (see Note [Deterministic batch order]).
///
/// An error while loading a batch (including a panic in a worker) is yielded as an `Err` in
/// that batch's place; later batches still follow. Dropping the iterator early stops and joins
/// its workers.
///
/// ```
/// use nn::data::{DataLoader, TensorDataset};
/// use aten::Tensor;
/// let x = Tensor::from_vec((0..20).map(|v| v as f32).collect(), &[10, 2]).unwrap();
/// let y = Tensor::from_vec((0..10i64).collect(), &[10]).unwrap();
/// let g = aten::Generator::new(c10::Device::CPU);
/// g.manual_seed(0);
/// let loader = DataLoader::builder(TensorDataset::new((x, y)).unwrap())
///     .batch_size(4)
///     .shuffle(true)
///     .generator(g)
///     .num_workers(2)
///     .build()
///     .unwrap();
/// assert_eq!(loader.len(), 3);
/// let mut seen = Vec::new();
/// for batch in &loader {
///     let (xb, yb) = batch.unwrap();
///     assert_eq!(xb.sizes()[1], 2);
///     seen.extend(yb.to_vec::<i64>().unwrap());
/// }
/// seen.sort();
/// assert_eq!(seen, (0..10).collect::<Vec<i64>>());
/// ```
pub struct DataLoader<B> {
    fetch: Arc<FetchFn<B>>,
    batch_sampler: Box<dyn Sampler<Vec<usize>>>,
    dataset_len: usize,
    num_workers: usize,
    prefetch_factor: usize,
    generator: Option<Generator>,
}

impl<B: Send + 'static> DataLoader<B> {
    /// A builder for a loader of `dataset` with [`default_collate`].
    pub fn builder<D>(dataset: D) -> DataLoaderBuilder<D, B>
    where
        D: Dataset + Send + Sync + 'static,
        D::Item: Collate<Batch = B>,
    {
        DataLoaderBuilder::with_collate_fn(dataset, default_collate::<D::Item>)
    }

    /// The number of batches per epoch (`len(loader)`).
    pub fn len(&self) -> usize {
        self.batch_sampler.len()
    }

    /// Whether an epoch has no batches.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of samples in the dataset.
    pub fn dataset_len(&self) -> usize {
        self.dataset_len
    }

    /// The number of worker threads (0: batches are loaded in the iterating thread).
    pub fn num_workers(&self) -> usize {
        self.num_workers
    }

    /// The batch sampler that orders the epochs.
    pub fn batch_sampler(&self) -> &dyn Sampler<Vec<usize>> {
        &*self.batch_sampler
    }

    /// Starts an epoch: draws the base seed from the generator, then the epoch's batches from
    /// the batch sampler, and starts the workers (PyTorch's `iter(loader)`). A failure is
    /// yielded by the iterator as its only item.
    pub fn iter(&self) -> DataLoaderIter<B> {
        let mut it = DataLoaderIter {
            fetch: Arc::clone(&self.fetch),
            batches: Vec::new().into_iter(),
            pending_error: None,
            pool: None,
            base_seed: 0,
        };
        if let Err(e) = self.start(&mut it) {
            it.batches = Vec::new().into_iter();
            it.pending_error = Some(e);
        }
        it
    }

    /// The fallible part of [`iter`](Self::iter), in PyTorch's order of generator draws.
    fn start(&self, it: &mut DataLoaderIter<B>) -> Result<()> {
        it.base_seed = draw_seed(self.generator.as_ref())?;
        it.batches = self.batch_sampler.indices()?.into_iter();
        if self.num_workers > 0 {
            let mut pool = WorkerPool::start(&self.fetch, self.num_workers, self.prefetch_factor, it.base_seed)?;
            pool.fill(&mut it.batches);
            it.pool = Some(pool);
        }
        Ok(())
    }
}

impl<B: Send + 'static> IntoIterator for &DataLoader<B> {
    type Item = Result<B>;
    type IntoIter = DataLoaderIter<B>;
    fn into_iter(self) -> DataLoaderIter<B> {
        self.iter()
    }
}

impl<B> std::fmt::Debug for DataLoader<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataLoader")
            .field("dataset_len", &self.dataset_len)
            .field("batches", &self.batch_sampler.len())
            .field("num_workers", &self.num_workers)
            .field("prefetch_factor", &self.prefetch_factor)
            .finish_non_exhaustive()
    }
}

/// The options of a [`DataLoader`], set one by one and checked by [`build`](Self::build).
pub struct DataLoaderBuilder<D: Dataset, B> {
    dataset: D,
    collate: Arc<CollateFn<D::Item, B>>,
    batch_size: Option<usize>,
    shuffle: bool,
    sampler: Option<Box<dyn Sampler>>,
    batch_sampler: Option<Box<dyn Sampler<Vec<usize>>>>,
    drop_last: bool,
    num_workers: usize,
    prefetch_factor: Option<usize>,
    generator: Option<Generator>,
}

impl<D, B> DataLoaderBuilder<D, B>
where
    D: Dataset + Send + Sync + 'static,
    B: Send + 'static,
{
    /// A builder for a loader of `dataset` that makes batches with `collate` (PyTorch's
    /// `collate_fn`), for samples without a [`Collate`] implementation or other batch layouts.
    pub fn with_collate_fn(dataset: D, collate: impl Fn(Vec<D::Item>) -> Result<B> + Send + Sync + 'static) -> Self {
        DataLoaderBuilder {
            dataset,
            collate: Arc::new(collate),
            batch_size: None,
            shuffle: false,
            sampler: None,
            batch_sampler: None,
            drop_last: false,
            num_workers: 0,
            prefetch_factor: None,
            generator: None,
        }
    }

    /// Replaces the collate function, which may change the batch type.
    pub fn collate_fn<B2>(
        self,
        collate: impl Fn(Vec<D::Item>) -> Result<B2> + Send + Sync + 'static,
    ) -> DataLoaderBuilder<D, B2> {
        DataLoaderBuilder {
            dataset: self.dataset,
            collate: Arc::new(collate),
            batch_size: self.batch_size,
            shuffle: self.shuffle,
            sampler: self.sampler,
            batch_sampler: self.batch_sampler,
            drop_last: self.drop_last,
            num_workers: self.num_workers,
            prefetch_factor: self.prefetch_factor,
            generator: self.generator,
        }
    }

    /// Samples per batch (default 1).
    pub fn batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = Some(batch_size);
        self
    }

    /// Reshuffles the data every epoch (a [`RandomSampler`] on the loader's generator).
    pub fn shuffle(mut self, shuffle: bool) -> Self {
        self.shuffle = shuffle;
        self
    }

    /// Draws sample indices from `sampler` (exclusive with `shuffle`).
    pub fn sampler(mut self, sampler: impl Sampler + 'static) -> Self {
        self.sampler = Some(Box::new(sampler));
        self
    }

    /// Draws whole batches of indices from `batch_sampler` (exclusive with `batch_size`,
    /// `shuffle`, `sampler` and `drop_last`).
    pub fn batch_sampler(mut self, batch_sampler: impl Sampler<Vec<usize>> + 'static) -> Self {
        self.batch_sampler = Some(Box::new(batch_sampler));
        self
    }

    /// Drops the last batch when it is incomplete.
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.drop_last = drop_last;
        self
    }

    /// Loads batches in `num_workers` threads (0, the default, loads in the iterating thread).
    pub fn num_workers(mut self, num_workers: usize) -> Self {
        self.num_workers = num_workers;
        self
    }

    /// Batches loaded ahead per worker (default 2; only with workers).
    pub fn prefetch_factor(mut self, prefetch_factor: usize) -> Self {
        self.prefetch_factor = Some(prefetch_factor);
        self
    }

    /// The generator for shuffling and for the per-epoch base seed (default: the default CPU
    /// generator).
    pub fn generator(mut self, generator: Generator) -> Self {
        self.generator = Some(generator);
        self
    }

    /// Checks the options and makes the loader.
    pub fn build(self) -> Result<DataLoader<B>> {
        const OP: &str = "DataLoader";
        let prefetch_factor = check_workers(self.num_workers, self.prefetch_factor)?;
        let len = self.dataset.len();
        let batch_sampler: Box<dyn Sampler<Vec<usize>>> = match self.batch_sampler {
            Some(bs) => {
                if self.batch_size.is_some_and(|b| b != 1) || self.shuffle || self.sampler.is_some() || self.drop_last {
                    return Err(Error::invalid(
                        OP,
                        "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last",
                    ));
                }
                bs
            }
            None => {
                let sampler: Box<dyn Sampler> = match self.sampler {
                    Some(_) if self.shuffle => {
                        return Err(Error::invalid(OP, "sampler option is mutually exclusive with shuffle"));
                    }
                    Some(s) => s,
                    None if self.shuffle => Box::new(RandomSampler::new(len, false, None, self.generator.clone())?),
                    None => Box::new(SequentialSampler::new(len)),
                };
                Box::new(BatchSampler::new(sampler, self.batch_size.unwrap_or(1), self.drop_last)?)
            }
        };
        let dataset = self.dataset;
        let collate = self.collate;
        let fetch = move |indices: &[usize]| collate(dataset.get_items(indices)?);
        Ok(DataLoader {
            fetch: Arc::new(fetch),
            batch_sampler,
            dataset_len: len,
            num_workers: self.num_workers,
            prefetch_factor,
            generator: self.generator,
        })
    }
}

/// One epoch of a [`DataLoader`]: yields the batches, in sampler order.
pub struct DataLoaderIter<B> {
    fetch: Arc<FetchFn<B>>,
    batches: std::vec::IntoIter<Vec<usize>>,
    pending_error: Option<Error>,
    pool: Option<WorkerPool<B>>,
    base_seed: u64,
}

impl<B> DataLoaderIter<B> {
    /// The base seed drawn for this epoch (worker `i` gets `base_seed + i`).
    pub fn base_seed(&self) -> u64 {
        self.base_seed
    }
}

/// The profiling range of fetching one batch, named as PyTorch's DataLoader names it.
fn batch_range(workers: bool) -> c10::record_function::RecordFunction {
    use c10::record_function::{RecordFunction, RecordScope};
    RecordFunction::start_named(RecordScope::DataLoader, || {
        if workers {
            "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
        } else {
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
        }
    })
}

impl<B> Iterator for DataLoaderIter<B> {
    type Item = Result<B>;

    fn next(&mut self) -> Option<Result<B>> {
        if let Some(e) = self.pending_error.take() {
            return Some(Err(e));
        }
        let _range = batch_range(self.pool.is_some());
        match &mut self.pool {
            None => {
                let indices = self.batches.next()?;
                Some((self.fetch)(&indices))
            }
            Some(pool) => pool.next(&mut self.batches),
        }
    }
}

impl<B> std::fmt::Debug for DataLoaderIter<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataLoaderIter")
            .field("batches_left_to_dispatch", &self.batches.len())
            .field("workers", &self.pool.as_ref().map_or(0, |p| p.handles.len()))
            .field("base_seed", &self.base_seed)
            .finish_non_exhaustive()
    }
}

/// Worker threads of a map-style epoch and the bookkeeping that keeps their batches in order.
/// See Note [Deterministic batch order] and Note [Bounded prefetch].
struct WorkerPool<B> {
    tasks: Vec<SyncSender<(usize, Vec<usize>)>>,
    results: Receiver<(usize, Result<B>)>,
    handles: Vec<JoinHandle<()>>,
    /// Results that arrived before an earlier batch.
    reorder: HashMap<usize, Result<B>>,
    /// Batches dispatched so far; batch `k` went to worker `k % workers`.
    sent: usize,
    /// Batches yielded so far.
    yielded: usize,
    /// `prefetch_factor * workers`, the most batches outstanding at once.
    limit: usize,
    /// Set when the workers are gone; nothing more can arrive.
    broken: bool,
}

impl<B: Send + 'static> WorkerPool<B> {
    fn start(fetch: &Arc<FetchFn<B>>, num_workers: usize, prefetch_factor: usize, base_seed: u64) -> Result<Self> {
        let (result_tx, results) = sync_channel(prefetch_factor * num_workers);
        let mut pool = WorkerPool {
            tasks: Vec::with_capacity(num_workers),
            results,
            handles: Vec::with_capacity(num_workers),
            reorder: HashMap::new(),
            sent: 0,
            yielded: 0,
            limit: prefetch_factor * num_workers,
            broken: false,
        };
        for id in 0..num_workers {
            let (task_tx, task_rx) = sync_channel::<(usize, Vec<usize>)>(prefetch_factor);
            let result_tx = result_tx.clone();
            let fetch = Arc::clone(fetch);
            let info = WorkerInfo { id, num_workers, seed: base_seed.wrapping_add(id as u64) };
            // On failure `pool` is dropped, which stops the workers already started.
            pool.handles.push(spawn_worker(info, move || {
                while let Ok((k, indices)) = task_rx.recv() {
                    let batch = catch_unwind(AssertUnwindSafe(|| fetch(&indices)))
                        .unwrap_or_else(|payload| Err(worker_panic(id, payload)));
                    if result_tx.send((k, batch)).is_err() {
                        break;
                    }
                }
            })?);
            pool.tasks.push(task_tx);
        }
        Ok(pool)
    }
}

impl<B> WorkerPool<B> {
    /// Dispatches batches until `limit` are outstanding or the epoch has no more.
    fn fill(&mut self, batches: &mut std::vec::IntoIter<Vec<usize>>) {
        while !self.broken && self.sent - self.yielded < self.limit {
            let Some(indices) = batches.next() else { break };
            let worker = self.sent % self.tasks.len();
            // Never blocks (Note [Bounded prefetch]); fails only if the worker is gone.
            if self.tasks[worker].send((self.sent, indices)).is_err() {
                self.broken = true;
            }
            self.sent += 1;
        }
    }

    /// The next batch in order, refilling the pipeline behind it.
    fn next(&mut self, batches: &mut std::vec::IntoIter<Vec<usize>>) -> Option<Result<B>> {
        if self.yielded == self.sent {
            return None;
        }
        let batch = loop {
            if let Some(b) = self.reorder.remove(&self.yielded) {
                break b;
            }
            if self.broken {
                // A worker thread is gone: the epoch cannot complete.
                self.sent = self.yielded;
                batches.for_each(drop);
                return Some(Err(Error::invalid("DataLoader", "DataLoader worker exited unexpectedly")));
            }
            match self.results.recv() {
                Ok((k, b)) => {
                    self.reorder.insert(k, b);
                }
                Err(_) => self.broken = true,
            }
        };
        self.yielded += 1;
        self.fill(batches);
        Some(batch)
    }
}

impl<B> Drop for WorkerPool<B> {
    fn drop(&mut self) {
        // Closing the task channels ends each worker's loop once its current batch is sent
        // (sends cannot block: Note [Bounded prefetch]).
        self.tasks.clear();
        for h in self.handles.drain(..) {
            // Panics in the dataset were caught in the worker; nothing is left to report.
            let _ = h.join();
        }
    }
}

// ---- IterableDataLoader -----------------------------------------------------------------------

/// Makes one stream of batches (one per worker with workers).
type BatchStreamFn<B> = dyn Fn() -> Box<dyn Iterator<Item = Result<B>> + Send> + Send + Sync;

/// Batches of an [`IterableDataset`] (PyTorch's `DataLoader` over an `IterableDataset`):
/// consecutive samples of the stream, `batch_size` at a time, collated.
///
/// With `num_workers` threads, each worker iterates its own pass of the dataset (which uses
/// [`get_worker_info`] to produce its share) and the batches are taken from the workers in
/// turn, skipping workers whose stream has ended — PyTorch's order. Each worker keeps up to
/// `prefetch_factor` batches ready.
///
/// ```
/// use nn::data::{IterableDataLoader, IterableDataset};
/// struct Count(i64);
/// impl IterableDataset for Count {
///     type Item = i64;
///     fn iter(&self) -> Box<dyn Iterator<Item = c10::Result<i64>> + Send> {
///         Box::new((0..self.0).map(Ok))
///     }
/// }
/// let loader = IterableDataLoader::new(Count(5), 2).unwrap();
/// let batches: Vec<Vec<i64>> = loader.iter().map(|b| b.unwrap().to_vec::<i64>().unwrap()).collect();
/// assert_eq!(batches, [vec![0, 1], vec![2, 3], vec![4]]);
/// ```
pub struct IterableDataLoader<B> {
    stream: Arc<BatchStreamFn<B>>,
    num_workers: usize,
    prefetch_factor: Option<usize>,
    generator: Option<Generator>,
}

impl<B: Send + 'static> IterableDataLoader<B> {
    /// Batches of `batch_size` (positive) samples of `dataset`, with [`default_collate`]; the
    /// last batch may be shorter.
    pub fn new<I>(dataset: I, batch_size: usize) -> Result<Self>
    where
        I: IterableDataset + Send + Sync + 'static,
        I::Item: Collate<Batch = B> + 'static,
    {
        Self::with_collate_fn(dataset, batch_size, false, default_collate::<I::Item>)
    }

    /// Batches of `batch_size` samples of `dataset` made by `collate`; with `drop_last` an
    /// incomplete last batch (of each worker's stream) is dropped.
    pub fn with_collate_fn<I>(
        dataset: I,
        batch_size: usize,
        drop_last: bool,
        collate: impl Fn(Vec<I::Item>) -> Result<B> + Send + Sync + 'static,
    ) -> Result<Self>
    where
        I: IterableDataset + Send + Sync + 'static,
        I::Item: 'static,
    {
        if batch_size == 0 {
            return Err(Error::invalid(
                "DataLoader",
                "batch_size should be a positive integer value, but got batch_size=0",
            ));
        }
        let collate: Arc<CollateFn<I::Item, B>> = Arc::new(collate);
        let stream = move || -> Box<dyn Iterator<Item = Result<B>> + Send> {
            Box::new(Batched {
                samples: dataset.iter(),
                batch_size,
                drop_last,
                collate: Arc::clone(&collate),
                done: false,
            })
        };
        Ok(IterableDataLoader { stream: Arc::new(stream), num_workers: 0, prefetch_factor: None, generator: None })
    }

    /// Loads in `num_workers` threads, each iterating its own pass of the dataset.
    pub fn num_workers(mut self, num_workers: usize) -> Self {
        self.num_workers = num_workers;
        self
    }

    /// Batches each worker keeps ready (default 2; only with workers).
    pub fn prefetch_factor(mut self, prefetch_factor: usize) -> Self {
        self.prefetch_factor = Some(prefetch_factor);
        self
    }

    /// The generator the per-pass base seed of [`WorkerInfo::seed`] is drawn from (default:
    /// the default CPU generator).
    pub fn generator(mut self, generator: Generator) -> Self {
        self.generator = Some(generator);
        self
    }

    /// Starts a pass; a failure to start is yielded as the only item.
    pub fn iter(&self) -> IterableDataLoaderIter<B> {
        match self.start() {
            Ok(it) => it,
            Err(e) => IterableDataLoaderIter { inner: IterableSource::Failed(Some(e)) },
        }
    }

    fn start(&self) -> Result<IterableDataLoaderIter<B>> {
        let prefetch_factor = check_workers(self.num_workers, self.prefetch_factor)?;
        let base_seed = draw_seed(self.generator.as_ref())?;
        if self.num_workers == 0 {
            return Ok(IterableDataLoaderIter { inner: IterableSource::Local((self.stream)()) });
        }
        let mut workers = StreamWorkers { streams: Vec::new(), handles: Vec::new(), turn: 0 };
        for id in 0..self.num_workers {
            let (tx, rx) = sync_channel::<Result<B>>(prefetch_factor);
            let stream = Arc::clone(&self.stream);
            let info = WorkerInfo { id, num_workers: self.num_workers, seed: base_seed.wrapping_add(id as u64) };
            workers.handles.push(spawn_worker(info, move || {
                let mut batches = match catch_unwind(AssertUnwindSafe(|| stream())) {
                    Ok(b) => b,
                    Err(payload) => {
                        let _ = tx.send(Err(worker_panic(id, payload)));
                        return;
                    }
                };
                loop {
                    match catch_unwind(AssertUnwindSafe(|| batches.next())) {
                        Ok(Some(b)) => {
                            if tx.send(b).is_err() {
                                return;
                            }
                        }
                        Ok(None) => return,
                        Err(payload) => {
                            let _ = tx.send(Err(worker_panic(id, payload)));
                            return;
                        }
                    }
                }
            })?);
            workers.streams.push(Some(rx));
        }
        Ok(IterableDataLoaderIter { inner: IterableSource::Workers(workers) })
    }
}

impl<B: Send + 'static> IntoIterator for &IterableDataLoader<B> {
    type Item = Result<B>;
    type IntoIter = IterableDataLoaderIter<B>;
    fn into_iter(self) -> IterableDataLoaderIter<B> {
        self.iter()
    }
}

impl<B> std::fmt::Debug for IterableDataLoader<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IterableDataLoader")
            .field("num_workers", &self.num_workers)
            .field("prefetch_factor", &self.prefetch_factor)
            .finish_non_exhaustive()
    }
}

/// Groups a sample stream into collated batches.
struct Batched<T, B> {
    samples: Box<dyn Iterator<Item = Result<T>> + Send>,
    batch_size: usize,
    drop_last: bool,
    collate: Arc<CollateFn<T, B>>,
    done: bool,
}

impl<T, B> Iterator for Batched<T, B> {
    type Item = Result<B>;
    fn next(&mut self) -> Option<Result<B>> {
        if self.done {
            return None;
        }
        let mut items = Vec::with_capacity(self.batch_size);
        while items.len() < self.batch_size {
            match self.samples.next() {
                Some(Ok(s)) => items.push(s),
                // The batch's samples so far are lost, as when PyTorch's fetcher raises.
                Some(Err(e)) => return Some(Err(e)),
                None => {
                    self.done = true;
                    break;
                }
            }
        }
        if items.is_empty() || (self.done && self.drop_last && items.len() < self.batch_size) {
            return None;
        }
        Some((self.collate)(items))
    }
}

/// One pass of an [`IterableDataLoader`].
pub struct IterableDataLoaderIter<B> {
    inner: IterableSource<B>,
}

/// Where an [`IterableDataLoaderIter`] takes its batches from.
enum IterableSource<B> {
    /// The pass could not start; the error is yielded once.
    Failed(Option<Error>),
    /// Batches are made in the iterating thread.
    Local(Box<dyn Iterator<Item = Result<B>> + Send>),
    /// Batches come from worker threads, in turn.
    Workers(StreamWorkers<B>),
}

/// Worker threads, each producing its own stream of batches.
struct StreamWorkers<B> {
    /// Each worker's channel; `None` once its stream has ended.
    streams: Vec<Option<Receiver<Result<B>>>>,
    handles: Vec<JoinHandle<()>>,
    /// The worker whose batch comes next.
    turn: usize,
}

impl<B> Iterator for IterableDataLoaderIter<B> {
    type Item = Result<B>;
    fn next(&mut self) -> Option<Result<B>> {
        let _range = batch_range(matches!(self.inner, IterableSource::Workers(_)));
        match &mut self.inner {
            IterableSource::Failed(e) => e.take().map(Err),
            IterableSource::Local(batches) => batches.next(),
            IterableSource::Workers(w) => {
                let n = w.streams.len();
                for _ in 0..n {
                    let id = w.turn;
                    w.turn = (w.turn + 1) % n;
                    let Some(rx) = &w.streams[id] else { continue };
                    match rx.recv() {
                        Ok(b) => return Some(b),
                        Err(_) => w.streams[id] = None,
                    }
                }
                None
            }
        }
    }
}

impl<B> std::fmt::Debug for IterableDataLoaderIter<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let workers = match &self.inner {
            IterableSource::Workers(w) => w.handles.len(),
            _ => 0,
        };
        f.debug_struct("IterableDataLoaderIter").field("workers", &workers).finish_non_exhaustive()
    }
}

impl<B> Drop for StreamWorkers<B> {
    fn drop(&mut self) {
        // A worker blocked on a full channel wakes with an error once its receiver is gone, and a
        // busy one stops at its next send.
        self.streams.clear();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}
