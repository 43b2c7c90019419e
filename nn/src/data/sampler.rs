//! Samplers (PyTorch's `torch.utils.data.sampler` and `DistributedSampler`): the order in
//! which a [`DataLoader`](super::DataLoader) visits a dataset, and how indices are grouped into
//! batches. Random samplers draw from a [`Generator`] exactly as PyTorch does, so a seed gives
//! PyTorch's order.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use aten::{ops, Generator, Tensor};
use c10::{Device, Error, Result, ScalarType};

/// A source of indices for one pass over a dataset (PyTorch's `Sampler`): `usize` indices for a
/// sampler, `Vec<usize>` batches of indices for a batch sampler.
///
/// `indices` is PyTorch's `__iter__`: each call is a new pass, and random samplers draw new
/// numbers each time (a new epoch, a new order). It takes `&self`, so a sampler can be shared
/// (`Arc<S>` is a sampler too) and state such as a generator or an epoch lives behind interior
/// mutability.
pub trait Sampler<T = usize>: Send + Sync {
    /// The number of indices one pass yields (`__len__`).
    fn len(&self) -> usize;

    /// Whether a pass yields nothing.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The indices of a new pass.
    fn indices(&self) -> Result<Vec<T>>;
}

impl<T, S: Sampler<T> + ?Sized> Sampler<T> for Box<S> {
    fn len(&self) -> usize {
        (**self).len()
    }
    fn indices(&self) -> Result<Vec<T>> {
        (**self).indices()
    }
}

impl<T, S: Sampler<T> + ?Sized> Sampler<T> for Arc<S> {
    fn len(&self) -> usize {
        (**self).len()
    }
    fn indices(&self) -> Result<Vec<T>> {
        (**self).indices()
    }
}

/// A seed drawn from `generator` (the default CPU generator for `None`) the way PyTorch draws
/// one: `torch.empty((), dtype=torch.int64).random_(generator=generator)`, 64 random bits modulo
/// 2^63.
pub(crate) fn draw_seed(generator: Option<&Generator>) -> Result<u64> {
    let t = ops::random_op_(&Tensor::scalar_tensor(0i64), generator)?;
    Ok(t.item::<i64>()? as u64)
}

/// `randperm(n, generator)` as indices.
fn randperm(n: usize, generator: &Generator) -> Result<Vec<usize>> {
    let perm = ops::randperm_generator(n as i64, Some(generator), None, None, None, None)?;
    Ok(perm.to_vec::<i64>()?.into_iter().map(|i| i as usize).collect())
}

/// A fresh CPU generator seeded with `seed`.
fn seeded_generator(seed: u64) -> Generator {
    let g = Generator::new(Device::CPU);
    g.manual_seed(seed);
    g
}

// ---- SequentialSampler ------------------------------------------------------------------------

/// `0, 1, ..., len - 1` (PyTorch's `SequentialSampler`).
#[derive(Clone, Debug)]
pub struct SequentialSampler {
    len: usize,
}

impl SequentialSampler {
    /// Samples the indices of a dataset of `data_len` samples in order.
    pub fn new(data_len: usize) -> Self {
        SequentialSampler { len: data_len }
    }
}

impl Sampler for SequentialSampler {
    fn len(&self) -> usize {
        self.len
    }
    fn indices(&self) -> Result<Vec<usize>> {
        Ok((0..self.len).collect())
    }
}

// ---- RandomSampler ----------------------------------------------------------------------------

/// Random indices of a dataset (PyTorch's `RandomSampler`): a permutation per pass without
/// replacement (`num_samples` beyond the length takes further permutations), uniform draws
/// with replacement.
///
/// With a generator, each pass continues its stream, so consecutive passes differ and a seed
/// reproduces PyTorch's sequence of passes. Without one, each pass seeds a fresh generator from
/// the default CPU generator, as PyTorch does.
///
/// ```
/// use nn::data::{RandomSampler, Sampler};
/// let g = aten::Generator::new(c10::Device::CPU);
/// g.manual_seed(42);
/// let s = RandomSampler::new(10, false, None, Some(g)).unwrap();
/// // list(RandomSampler(range(10), generator=torch.Generator().manual_seed(42)))
/// assert_eq!(s.indices().unwrap(), [2, 6, 1, 8, 4, 5, 0, 9, 3, 7]);
/// ```
#[derive(Clone, Debug)]
pub struct RandomSampler {
    data_len: usize,
    replacement: bool,
    num_samples: usize,
    generator: Option<Generator>,
}

impl RandomSampler {
    /// Samples a dataset of `data_len` samples; `num_samples` defaults to `data_len` and must be
    /// positive.
    pub fn new(
        data_len: usize,
        replacement: bool,
        num_samples: Option<usize>,
        generator: Option<Generator>,
    ) -> Result<Self> {
        let num_samples = num_samples.unwrap_or(data_len);
        if num_samples == 0 {
            return Err(Error::invalid(
                "RandomSampler",
                "num_samples should be a positive integer value, but got num_samples=0",
            ));
        }
        Ok(RandomSampler { data_len, replacement, num_samples, generator })
    }

    /// Whether indices are drawn with replacement.
    pub fn replacement(&self) -> bool {
        self.replacement
    }

    /// The generator, if one was given.
    pub fn generator(&self) -> Option<&Generator> {
        self.generator.as_ref()
    }
}

impl Sampler for RandomSampler {
    fn len(&self) -> usize {
        self.num_samples
    }

    fn indices(&self) -> Result<Vec<usize>> {
        let n = self.data_len;
        if n == 0 {
            return Err(Error::invalid("RandomSampler", "cannot sample from an empty dataset"));
        }
        let generator = match &self.generator {
            Some(g) => g.clone(),
            None => seeded_generator(draw_seed(None)?),
        };
        let mut out = Vec::with_capacity(self.num_samples);
        if self.replacement {
            // PyTorch draws in chunks of 32; the chunks are kept so the stream matches whatever
            // randint does per call.
            let chunks = std::iter::repeat_n(32, self.num_samples / 32).chain([self.num_samples % 32]);
            for size in chunks {
                let draw = ops::randint_generator(
                    n as i64,
                    &[size as i64],
                    Some(&generator),
                    Some(ScalarType::I64),
                    None,
                    None,
                    None,
                )?;
                out.extend(draw.to_vec::<i64>()?.into_iter().map(|i| i as usize));
            }
        } else {
            for _ in 0..self.num_samples / n {
                out.extend(randperm(n, &generator)?);
            }
            // Drawn even when the remainder is 0, as PyTorch does: it moves the generator on.
            let last = randperm(n, &generator)?;
            out.extend_from_slice(&last[..self.num_samples % n]);
        }
        Ok(out)
    }
}

// ---- SubsetRandomSampler ----------------------------------------------------------------------

/// The given indices in a random order, a new one each pass (PyTorch's `SubsetRandomSampler`).
#[derive(Clone, Debug)]
pub struct SubsetRandomSampler {
    indices: Vec<usize>,
    generator: Option<Generator>,
}

impl SubsetRandomSampler {
    /// Shuffles `indices` with `generator` (the default CPU generator for `None`).
    pub fn new(indices: Vec<usize>, generator: Option<Generator>) -> Self {
        SubsetRandomSampler { indices, generator }
    }
}

impl Sampler for SubsetRandomSampler {
    fn len(&self) -> usize {
        self.indices.len()
    }
    fn indices(&self) -> Result<Vec<usize>> {
        let perm = ops::randperm_generator(self.indices.len() as i64, self.generator.as_ref(), None, None, None, None)?;
        Ok(perm.to_vec::<i64>()?.into_iter().map(|i| self.indices[i as usize]).collect())
    }
}

// ---- WeightedRandomSampler --------------------------------------------------------------------

/// Indices `0..weights.len()` drawn with probabilities proportional to `weights` (PyTorch's
/// `WeightedRandomSampler`, one `multinomial` call per pass), typically to rebalance classes.
#[derive(Clone, Debug)]
pub struct WeightedRandomSampler {
    weights: Tensor,
    num_samples: usize,
    replacement: bool,
    generator: Option<Generator>,
}

impl WeightedRandomSampler {
    /// Draws `num_samples` (positive) indices per pass. The weights are checked by
    /// `multinomial` when a pass is drawn, as in PyTorch.
    pub fn new(weights: &[f64], num_samples: usize, replacement: bool, generator: Option<Generator>) -> Result<Self> {
        if num_samples == 0 {
            return Err(Error::invalid(
                "WeightedRandomSampler",
                "num_samples should be a positive integer value, but got num_samples=0",
            ));
        }
        Ok(WeightedRandomSampler { weights: Tensor::from_slice(weights), num_samples, replacement, generator })
    }

    /// The weights (float64).
    pub fn weights(&self) -> &Tensor {
        &self.weights
    }
}

impl Sampler for WeightedRandomSampler {
    fn len(&self) -> usize {
        self.num_samples
    }
    fn indices(&self) -> Result<Vec<usize>> {
        let draw = ops::multinomial(&self.weights, self.num_samples as i64, self.replacement, self.generator.as_ref())?;
        Ok(draw.to_vec::<i64>()?.into_iter().map(|i| i as usize).collect())
    }
}

// ---- BatchSampler -----------------------------------------------------------------------------

/// Groups the indices of `sampler` into batches of `batch_size`; the last, shorter batch is
/// kept unless `drop_last` (PyTorch's `BatchSampler`).
///
/// ```
/// use nn::data::{BatchSampler, Sampler, SequentialSampler};
/// let b = BatchSampler::new(SequentialSampler::new(10), 3, false).unwrap();
/// assert_eq!(b.indices().unwrap(), [vec![0, 1, 2], vec![3, 4, 5], vec![6, 7, 8], vec![9]]);
/// assert_eq!(b.len(), 4);
/// ```
#[derive(Clone, Debug)]
pub struct BatchSampler<S> {
    sampler: S,
    batch_size: usize,
    drop_last: bool,
}

impl<S: Sampler> BatchSampler<S> {
    /// Batches `sampler`'s indices; `batch_size` must be positive.
    pub fn new(sampler: S, batch_size: usize, drop_last: bool) -> Result<Self> {
        if batch_size == 0 {
            return Err(Error::invalid(
                "BatchSampler",
                "batch_size should be a positive integer value, but got batch_size=0",
            ));
        }
        Ok(BatchSampler { sampler, batch_size, drop_last })
    }

    /// The sampler whose indices are batched.
    pub fn sampler(&self) -> &S {
        &self.sampler
    }

    /// The number of indices per batch.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Whether a last, incomplete batch is dropped.
    pub fn drop_last(&self) -> bool {
        self.drop_last
    }
}

impl<S: Sampler> Sampler<Vec<usize>> for BatchSampler<S> {
    fn len(&self) -> usize {
        let n = self.sampler.len();
        if self.drop_last {
            n / self.batch_size
        } else {
            n.div_ceil(self.batch_size)
        }
    }
    fn indices(&self) -> Result<Vec<Vec<usize>>> {
        let all = self.sampler.indices()?;
        let chunks = all.chunks(self.batch_size);
        Ok(chunks.filter(|c| !self.drop_last || c.len() == self.batch_size).map(<[usize]>::to_vec).collect())
    }
}

// ---- DistributedSampler -----------------------------------------------------------------------

/// The share of a dataset that one of `num_replicas` processes reads (PyTorch's
/// `torch.utils.data.distributed.DistributedSampler`): replica `rank` takes every
/// `num_replicas`-th index from `rank` on, of a list padded by repetition to a multiple of
/// `num_replicas` (or cut to one with `drop_last`).
///
/// With `shuffle`, the list is `randperm(len)` from a generator seeded with `seed + epoch`, so all
/// replicas agree on it without communicating; call [`set_epoch`](Self::set_epoch) before each
/// epoch for a new order (it takes `&self`, so it also works on a sampler shared with a
/// [`DataLoader`](super::DataLoader) through an `Arc`).
#[derive(Debug)]
pub struct DistributedSampler {
    data_len: usize,
    num_replicas: usize,
    rank: usize,
    shuffle: bool,
    seed: u64,
    drop_last: bool,
    epoch: AtomicU64,
}

impl DistributedSampler {
    /// The sampler of replica `rank` (in `0..num_replicas`) over a dataset of `data_len`
    /// samples. PyTorch's defaults are `shuffle = true`, `seed = 0`, `drop_last = false`.
    pub fn new(
        data_len: usize,
        num_replicas: usize,
        rank: usize,
        shuffle: bool,
        seed: u64,
        drop_last: bool,
    ) -> Result<Self> {
        const OP: &str = "DistributedSampler";
        if num_replicas == 0 {
            return Err(Error::invalid(OP, "num_replicas should be a positive integer value, but got num_replicas=0"));
        }
        if rank >= num_replicas {
            return Err(Error::invalid(
                OP,
                format!("Invalid rank {rank}, rank should be in the interval [0, {}]", num_replicas - 1),
            ));
        }
        Ok(DistributedSampler { data_len, num_replicas, rank, shuffle, seed, drop_last, epoch: AtomicU64::new(0) })
    }

    /// Sets the epoch mixed into the shuffling seed (`set_epoch`).
    pub fn set_epoch(&self, epoch: u64) {
        self.epoch.store(epoch, Ordering::Relaxed);
    }

    /// The epoch last set (0 initially).
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }

    /// The length of the padded (or cut) list shared by all replicas.
    pub fn total_size(&self) -> usize {
        self.len() * self.num_replicas
    }
}

impl Sampler for DistributedSampler {
    fn len(&self) -> usize {
        // PyTorch's ceil((len - replicas) / replicas) with drop_last is floor(len / replicas).
        if self.drop_last {
            self.data_len / self.num_replicas
        } else {
            self.data_len.div_ceil(self.num_replicas)
        }
    }

    fn indices(&self) -> Result<Vec<usize>> {
        let mut all = if self.shuffle {
            randperm(self.data_len, &seeded_generator(self.seed.wrapping_add(self.epoch())))?
        } else {
            (0..self.data_len).collect()
        };
        let total = self.total_size();
        if all.len() < total {
            // Pad by repeating the list from its start (data_len > 0 here: total is 0 otherwise).
            let pad: Vec<usize> = all.iter().copied().cycle().take(total - all.len()).collect();
            all.extend(pad);
        } else {
            all.truncate(total);
        }
        Ok(all.into_iter().skip(self.rank).step_by(self.num_replicas).collect())
    }
}
