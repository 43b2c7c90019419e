//! Data loading (PyTorch's `torch.utils.data`): datasets, samplers, the [`DataLoader`] with
//! worker threads, and readers for MNIST-style digit files.
//!
//! - [`dataset`]: the [`Dataset`] and [`IterableDataset`] traits, [`TensorDataset`],
//!   [`Subset`], [`ConcatDataset`], [`random_split`].
//! - [`sampler`]: [`SequentialSampler`], [`RandomSampler`], [`SubsetRandomSampler`],
//!   [`WeightedRandomSampler`], [`BatchSampler`], [`DistributedSampler`].
//! - [`dataloader`]: [`DataLoader`], [`IterableDataLoader`], [`Collate`] / [`default_collate`],
//!   [`get_worker_info`].
//! - [`mnist`]: IDX (MNIST, Fashion-MNIST) and CSV digit readers.
//!
//! Random choices (shuffling, splitting, sampling) draw from an [`aten::Generator`] the way
//! PyTorch does, so the same seed gives PyTorch's order.
//!
//! ```
//! use nn::data::{DataLoader, TensorDataset};
//! let x = aten::Tensor::from_vec((0..30).map(|v| v as f32).collect(), &[10, 3]).unwrap();
//! let y = aten::Tensor::from_vec((0..10i64).collect(), &[10]).unwrap();
//! let dataset = TensorDataset::new((x, y)).unwrap();
//! let loader = DataLoader::builder(dataset).batch_size(4).drop_last(true).build().unwrap();
//! let shapes: Vec<Vec<i64>> = loader.iter().map(|b| b.unwrap().0.sizes().to_vec()).collect();
//! assert_eq!(shapes, [vec![4, 3], vec![4, 3]]);
//! ```

pub mod dataloader;
pub mod dataset;
pub mod mnist;
pub mod sampler;

pub use dataloader::{
    default_collate, get_worker_info, Collate, DataLoader, DataLoaderBuilder, DataLoaderIter, IterableDataLoader,
    IterableDataLoaderIter, WorkerInfo,
};
pub use dataset::{
    random_split, ConcatDataset, Dataset, IterableDataset, SplitLengths, Subset, TensorDataset, TensorTuple,
};
pub use mnist::{
    parse_mnist_csv, read_idx, read_idx_bytes, read_idx_images, read_idx_images_bytes, read_idx_labels,
    read_idx_labels_bytes, read_mnist_csv, Mnist, FASHION_MNIST_MEAN, FASHION_MNIST_STD, MNIST_MEAN, MNIST_STD,
};
pub use sampler::{
    BatchSampler, DistributedSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
    WeightedRandomSampler,
};
