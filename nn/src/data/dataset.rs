//! Datasets (PyTorch's `torch.utils.data.dataset`): the map-style [`Dataset`] and
//! [`IterableDataset`] traits, [`TensorDataset`], [`Subset`], [`ConcatDataset`] and
//! [`random_split`].

use std::sync::Arc;

use aten::{ops, Generator, Tensor};
use c10::{Error, Result};

/// A map-style dataset: `len` samples, each fetched by index (PyTorch's `Dataset` with
/// `__len__` and `__getitem__`).
///
/// The [`DataLoader`](super::DataLoader) fetches samples from worker threads, so a dataset it
/// loads must be `Send + Sync`; `get` takes `&self` and is called concurrently.
///
/// ```
/// use nn::data::{Dataset, TensorDataset};
/// let x = aten::Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]).unwrap();
/// let y = aten::Tensor::from_vec(vec![0i64, 1, 0], &[3]).unwrap();
/// let ds = TensorDataset::new((x, y)).unwrap();
/// assert_eq!(ds.len(), 3);
/// let (row, label) = ds.get(1).unwrap();
/// assert_eq!(row.to_vec::<f32>().unwrap(), [3.0, 4.0]);
/// assert_eq!(label.item::<i64>().unwrap(), 1);
/// ```
pub trait Dataset {
    /// One sample, e.g. `(Tensor, Tensor)` for an input and its label.
    type Item;

    /// The number of samples (`__len__`).
    fn len(&self) -> usize;

    /// Whether the dataset has no samples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sample at `index` (`__getitem__`); an index `>= len()` is an error.
    fn get(&self, index: usize) -> Result<Self::Item>;

    /// The samples at `indices`, in order (PyTorch's optional `__getitems__`, which the loader
    /// calls for a whole batch). Override it when a batch can be fetched faster than one
    /// sample at a time.
    fn get_items(&self, indices: &[usize]) -> Result<Vec<Self::Item>> {
        indices.iter().map(|&i| self.get(i)).collect()
    }
}

/// A stream of samples without random access (PyTorch's `IterableDataset`), for data that is
/// read sequentially: a file too large to index, a generator, a socket.
///
/// `iter` is called once per pass; with worker threads it is called once in each worker, where
/// [`get_worker_info`](super::get_worker_info) tells the replica which share to produce (without
/// sharding, every worker yields the whole stream, as in PyTorch).
pub trait IterableDataset {
    /// One sample.
    type Item;

    /// A new pass over the samples (`__iter__`). The iterator owns what it needs (clone an
    /// `Arc` of the data into it) so that it can outlive the borrow of `self`.
    fn iter(&self) -> Box<dyn Iterator<Item = Result<Self::Item>> + Send>;
}

/// Forwards to the dataset behind the reference.
impl<D: Dataset + ?Sized> Dataset for &D {
    type Item = D::Item;
    fn len(&self) -> usize {
        (**self).len()
    }
    fn get(&self, index: usize) -> Result<Self::Item> {
        (**self).get(index)
    }
    fn get_items(&self, indices: &[usize]) -> Result<Vec<Self::Item>> {
        (**self).get_items(indices)
    }
}

/// Forwards to the boxed dataset (so `Box<dyn Dataset<Item = T> + Send + Sync>` is a dataset).
impl<D: Dataset + ?Sized> Dataset for Box<D> {
    type Item = D::Item;
    fn len(&self) -> usize {
        (**self).len()
    }
    fn get(&self, index: usize) -> Result<Self::Item> {
        (**self).get(index)
    }
    fn get_items(&self, indices: &[usize]) -> Result<Vec<Self::Item>> {
        (**self).get_items(indices)
    }
}

/// Forwards to the shared dataset (how [`random_split`] shares one dataset among subsets).
impl<D: Dataset + ?Sized> Dataset for Arc<D> {
    type Item = D::Item;
    fn len(&self) -> usize {
        (**self).len()
    }
    fn get(&self, index: usize) -> Result<Self::Item> {
        (**self).get(index)
    }
    fn get_items(&self, indices: &[usize]) -> Result<Vec<Self::Item>> {
        (**self).get_items(indices)
    }
}

/// The index error every dataset here reports.
fn index_error(op: &str, index: usize, len: usize) -> Error {
    Error::IndexOutOfRange { op: op.into(), index: index as i64, dim: 0, size: len as i64 }
}

// ---- TensorDataset ----------------------------------------------------------------------------

/// A group of tensors indexed together along dimension 0: a single tensor, a tuple of up to
/// four tensors, or a `Vec<Tensor>` (the `*tensors` of PyTorch's `TensorDataset`).
pub trait TensorTuple: Clone {
    /// The tensors, in order.
    fn tensors(&self) -> Vec<&Tensor>;
    /// The same group with `f` applied to each tensor.
    fn try_map(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self>;
}

impl TensorTuple for Tensor {
    fn tensors(&self) -> Vec<&Tensor> {
        vec![self]
    }
    fn try_map(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        f(self)
    }
}

impl TensorTuple for Vec<Tensor> {
    fn tensors(&self) -> Vec<&Tensor> {
        self.iter().collect()
    }
    fn try_map(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        self.iter().map(f).collect()
    }
}

/// `TensorTuple` for tuples of tensors; `$t` only names the positions.
macro_rules! tensor_tuple {
    ($($t:ident $i:tt),+) => {
        impl TensorTuple for ($(tensor_tuple!(@tensor $t),)+) {
            fn tensors(&self) -> Vec<&Tensor> {
                vec![$(&self.$i),+]
            }
            fn try_map(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
                Ok(($(f(&self.$i)?,)+))
            }
        }
    };
    (@tensor $t:ident) => { Tensor };
}
tensor_tuple!(A 0, B 1);
tensor_tuple!(A 0, B 1, C 2);
tensor_tuple!(A 0, B 1, C 2, D 3);

/// Samples are the rows (index along dimension 0) of tensors that share their first dimension
/// (PyTorch's `TensorDataset`). Sample `i` is `(x[i], y[i])` for `TensorDataset::new((x, y))`;
/// rows are views of the tensors, not copies.
#[derive(Clone, Debug)]
pub struct TensorDataset<T: TensorTuple = (Tensor, Tensor)> {
    tensors: T,
    len: usize,
}

impl<T: TensorTuple> TensorDataset<T> {
    /// Wraps `tensors`, which must all have at least one dimension and the same size in it.
    pub fn new(tensors: T) -> Result<Self> {
        const OP: &str = "TensorDataset";
        let all = tensors.tensors();
        let Some(first) = all.first() else {
            return Err(Error::invalid(OP, "at least one tensor is required"));
        };
        if let Some(t) = all.iter().find(|t| t.dim() == 0) {
            return Err(Error::invalid(OP, format!("a zero-dim tensor (shape {:?}) has no rows", t.sizes())));
        }
        let len = first.sizes()[0];
        if all.iter().any(|t| t.sizes()[0] != len) {
            let sizes: Vec<i64> = all.iter().map(|t| t.sizes()[0]).collect();
            return Err(Error::invalid(OP, format!("Size mismatch between tensors: first dimensions {sizes:?}")));
        }
        Ok(TensorDataset { len: len as usize, tensors })
    }

    /// The wrapped tensors.
    pub fn tensors(&self) -> &T {
        &self.tensors
    }
}

impl<T: TensorTuple> Dataset for TensorDataset<T> {
    type Item = T;
    fn len(&self) -> usize {
        self.len
    }
    fn get(&self, index: usize) -> Result<T> {
        if index >= self.len {
            return Err(index_error("TensorDataset", index, self.len));
        }
        self.tensors.try_map(&mut |t| t.select(0, index as i64))
    }
}

// ---- Subset -----------------------------------------------------------------------------------

/// The samples of `dataset` at `indices`, in that order (PyTorch's `Subset`).
#[derive(Clone, Debug)]
pub struct Subset<D> {
    dataset: D,
    indices: Vec<usize>,
}

impl<D: Dataset> Subset<D> {
    /// A view of `dataset` restricted to `indices` (checked against the dataset's length when a
    /// sample is fetched, as in PyTorch).
    pub fn new(dataset: D, indices: Vec<usize>) -> Self {
        Subset { dataset, indices }
    }

    /// The underlying dataset.
    pub fn dataset(&self) -> &D {
        &self.dataset
    }

    /// The indices into the underlying dataset.
    pub fn indices(&self) -> &[usize] {
        &self.indices
    }
}

impl<D: Dataset> Dataset for Subset<D> {
    type Item = D::Item;
    fn len(&self) -> usize {
        self.indices.len()
    }
    fn get(&self, index: usize) -> Result<D::Item> {
        let &i = self.indices.get(index).ok_or_else(|| index_error("Subset", index, self.indices.len()))?;
        self.dataset.get(i)
    }
    fn get_items(&self, indices: &[usize]) -> Result<Vec<D::Item>> {
        let inner = indices
            .iter()
            .map(|&i| self.indices.get(i).copied().ok_or_else(|| index_error("Subset", i, self.indices.len())))
            .collect::<Result<Vec<usize>>>()?;
        self.dataset.get_items(&inner)
    }
}

// ---- ConcatDataset ----------------------------------------------------------------------------

/// Several datasets one after the other (PyTorch's `ConcatDataset`). Datasets of different
/// types with the same item type can be joined as `Box<dyn Dataset<Item = T> + Send + Sync>`.
#[derive(Clone, Debug)]
pub struct ConcatDataset<D> {
    datasets: Vec<D>,
    cumulative_sizes: Vec<usize>,
}

impl<D: Dataset> ConcatDataset<D> {
    /// Joins `datasets` (at least one), reading their lengths now as PyTorch does.
    pub fn new(datasets: Vec<D>) -> Result<Self> {
        if datasets.is_empty() {
            return Err(Error::invalid("ConcatDataset", "datasets should not be an empty iterable"));
        }
        let cumulative_sizes = datasets
            .iter()
            .scan(0usize, |total, d| {
                *total += d.len();
                Some(*total)
            })
            .collect();
        Ok(ConcatDataset { datasets, cumulative_sizes })
    }

    /// The joined datasets.
    pub fn datasets(&self) -> &[D] {
        &self.datasets
    }

    /// The running totals of the datasets' lengths (`cumulative_sizes`).
    pub fn cumulative_sizes(&self) -> &[usize] {
        &self.cumulative_sizes
    }
}

impl<D: Dataset> Dataset for ConcatDataset<D> {
    type Item = D::Item;
    fn len(&self) -> usize {
        self.cumulative_sizes.last().copied().unwrap_or(0)
    }
    fn get(&self, index: usize) -> Result<D::Item> {
        if index >= self.len() {
            return Err(index_error("ConcatDataset", index, self.len()));
        }
        // The first dataset whose running total exceeds the index (`bisect_right`).
        let d = self.cumulative_sizes.partition_point(|&c| c <= index);
        let start = if d == 0 { 0 } else { self.cumulative_sizes[d - 1] };
        self.datasets[d].get(index - start)
    }
}

// ---- random_split -----------------------------------------------------------------------------

/// The lengths given to [`random_split`]: sample counts, or fractions of the dataset that sum
/// to 1. Built from `&[usize]`, `&[f64]`, arrays or vectors of either: `&[7, 3]`, `&[0.7, 0.3]`.
#[derive(Clone, Copy, Debug)]
pub enum SplitLengths<'a> {
    /// The number of samples of each split; they must add up to the dataset's length.
    Counts(&'a [usize]),
    /// The fraction of the dataset in each split, summing to 1.
    Fractions(&'a [f64]),
}

impl<'a> From<&'a [usize]> for SplitLengths<'a> {
    fn from(v: &'a [usize]) -> Self {
        SplitLengths::Counts(v)
    }
}
impl<'a, const N: usize> From<&'a [usize; N]> for SplitLengths<'a> {
    fn from(v: &'a [usize; N]) -> Self {
        SplitLengths::Counts(v)
    }
}
impl<'a> From<&'a Vec<usize>> for SplitLengths<'a> {
    fn from(v: &'a Vec<usize>) -> Self {
        SplitLengths::Counts(v)
    }
}
impl<'a> From<&'a [f64]> for SplitLengths<'a> {
    fn from(v: &'a [f64]) -> Self {
        SplitLengths::Fractions(v)
    }
}
impl<'a, const N: usize> From<&'a [f64; N]> for SplitLengths<'a> {
    fn from(v: &'a [f64; N]) -> Self {
        SplitLengths::Fractions(v)
    }
}
impl<'a> From<&'a Vec<f64>> for SplitLengths<'a> {
    fn from(v: &'a Vec<f64>) -> Self {
        SplitLengths::Fractions(v)
    }
}

impl SplitLengths<'_> {
    /// The sample count of each split of a dataset of `len` samples: fractions become
    /// `floor(len * fraction)`, then the remainder is handed out one by one from the first split
    /// on (PyTorch's rule).
    pub fn resolve(&self, len: usize) -> Result<Vec<usize>> {
        const OP: &str = "random_split";
        let counts = match *self {
            SplitLengths::Counts(c) => c.to_vec(),
            SplitLengths::Fractions(f) => {
                let sum: f64 = f.iter().sum();
                // math.isclose(sum, 1) with its default relative tolerance.
                if (sum - 1.0).abs() > 1e-9 || sum > 1.0 {
                    return Err(Error::invalid(OP, format!("fractions must sum up to 1, got {sum}")));
                }
                if let Some(i) = f.iter().position(|x| !(0.0..=1.0).contains(x)) {
                    return Err(Error::invalid(OP, format!("Fraction at index {i} is not between 0 and 1")));
                }
                let mut counts: Vec<usize> = f.iter().map(|&x| (len as f64 * x).floor() as usize).collect();
                let remainder = len - counts.iter().sum::<usize>().min(len);
                let n = counts.len();
                for i in 0..remainder {
                    counts[i % n] += 1;
                }
                counts
            }
        };
        if counts.iter().sum::<usize>() != len {
            return Err(Error::invalid(OP, "Sum of input lengths does not equal the length of the input dataset!"));
        }
        Ok(counts)
    }
}

/// Splits `dataset` into non-overlapping random subsets of the given lengths (PyTorch's
/// `random_split`): the subsets take consecutive runs of `randperm(len, generator)`, so a seed
/// gives PyTorch's split. `None` uses the default CPU generator. Pass a shared dataset
/// (`Arc<D>` or `&D`) so the subsets do not copy it.
///
/// ```
/// use nn::data::{random_split, Dataset, TensorDataset};
/// let x = aten::Tensor::from_vec((0..10i64).collect(), &[10]).unwrap();
/// let ds = std::sync::Arc::new(TensorDataset::new(x).unwrap());
/// let g = aten::Generator::new(c10::Device::CPU);
/// g.manual_seed(42);
/// let parts = random_split(ds, &[7, 3], Some(&g)).unwrap();
/// assert_eq!(parts[0].indices(), [2, 6, 1, 8, 4, 5, 0]); // as torch.utils.data.random_split
/// assert_eq!(parts[1].len(), 3);
/// ```
pub fn random_split<'a, D: Dataset + Clone>(
    dataset: D,
    lengths: impl Into<SplitLengths<'a>>,
    generator: Option<&Generator>,
) -> Result<Vec<Subset<D>>> {
    let counts = lengths.into().resolve(dataset.len())?;
    let perm = ops::randperm_generator(dataset.len() as i64, generator, None, None, None, None)?.to_vec::<i64>()?;
    let mut start = 0;
    Ok(counts
        .iter()
        .map(|&n| {
            let indices = perm[start..start + n].iter().map(|&i| i as usize).collect();
            start += n;
            Subset::new(dataset.clone(), indices)
        })
        .collect())
}
