//! Tests of nn's data: datasets, samplers and the DataLoader against PyTorch 2.15's orders for
//! fixed seeds, worker behaviour, and the IDX / CSV readers on good and malformed files.
//!
//! Nothing here draws from the default generator: other tests of this binary seed it and check
//! the values drawn after, concurrently. Every loader gets its own generator, since iterating a
//! loader draws a base seed from its generator (the default one if none is given), as PyTorch.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aten::{Generator, Tensor};
use c10::{Device, Error, Result};
use nn::data::*;

fn seeded(seed: u64) -> Generator {
    let g = Generator::new(Device::CPU);
    g.manual_seed(seed);
    g
}

/// A generator of our own (see the module docs).
fn own_generator() -> Generator {
    Generator::new(Device::CPU)
}

/// `DataLoader::builder` with a generator of our own.
fn builder<D>(dataset: D) -> DataLoaderBuilder<D, <D::Item as Collate>::Batch>
where
    D: Dataset + Send + Sync + 'static,
    D::Item: Collate,
    <D::Item as Collate>::Batch: Send + 'static,
{
    DataLoader::builder(dataset).generator(own_generator())
}

/// `x = [[0, 0], [1, 10], ...]` (f32 `[n, 2]`) and `y = 0..n` (i64), as a dataset.
fn rows(n: i64) -> TensorDataset<(Tensor, Tensor)> {
    let x = Tensor::from_vec((0..n).flat_map(|i| [i as f32, 10.0 * i as f32]).collect(), &[n, 2]).unwrap();
    let y = Tensor::from_vec((0..n).collect(), &[n]).unwrap();
    TensorDataset::new((x, y)).unwrap()
}

fn ids(t: &Tensor) -> Vec<i64> {
    t.to_vec::<i64>().unwrap()
}

fn err_text<T: std::fmt::Debug>(r: Result<T>) -> String {
    r.expect_err("an error was expected").to_string()
}

// ---- datasets ---------------------------------------------------------------------------------

#[test]
fn tensor_dataset_returns_rows_and_checks_sizes() {
    let ds = rows(5);
    assert_eq!(ds.len(), 5);
    let (x, y) = ds.get(3).unwrap();
    assert_eq!(x.sizes(), &[2]);
    assert_eq!(x.to_vec::<f32>().unwrap(), [3.0, 30.0]);
    assert_eq!(y.item::<i64>().unwrap(), 3);
    assert!(matches!(ds.get(5), Err(Error::IndexOutOfRange { index: 5, size: 5, .. })));

    let single = TensorDataset::new(Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap()).unwrap();
    assert_eq!(single.get(2).unwrap().item::<i64>().unwrap(), 3);
    let three = TensorDataset::new(vec![Tensor::from_slice(&[1i64, 2]), Tensor::from_slice(&[3i64, 4])]).unwrap();
    assert_eq!(three.get(1).unwrap().iter().map(|t| t.item::<i64>().unwrap()).collect::<Vec<_>>(), [2, 4]);

    let a = Tensor::from_vec(vec![0f32; 6], &[3, 2]).unwrap();
    let b = Tensor::from_vec(vec![0i64; 4], &[4]).unwrap();
    assert!(err_text(TensorDataset::new((a, b))).contains("Size mismatch between tensors"));
    assert!(TensorDataset::new(Tensor::scalar_tensor(1.0f32)).is_err());
}

#[test]
fn subset_and_concat_index_like_pytorch() {
    let base = Arc::new(rows(6));
    let sub = Subset::new(Arc::clone(&base), vec![4, 0, 5]);
    assert_eq!(sub.len(), 3);
    assert_eq!(sub.get(0).unwrap().1.item::<i64>().unwrap(), 4);
    assert_eq!(sub.get(2).unwrap().1.item::<i64>().unwrap(), 5);
    assert!(matches!(sub.get(3), Err(Error::IndexOutOfRange { .. })));
    let items = sub.get_items(&[2, 1]).unwrap();
    assert_eq!(items.iter().map(|s| s.1.item::<i64>().unwrap()).collect::<Vec<_>>(), [5, 0]);
    // An index beyond the base dataset fails when fetched, as in PyTorch.
    assert!(Subset::new(Arc::clone(&base), vec![9]).get(0).is_err());

    let cat = ConcatDataset::new(vec![rows(2), rows(0), rows(3)]).unwrap();
    assert_eq!(cat.len(), 5);
    assert_eq!(cat.cumulative_sizes(), [2, 2, 5]);
    let labels: Vec<i64> = (0..5).map(|i| cat.get(i).unwrap().1.item::<i64>().unwrap()).collect();
    assert_eq!(labels, [0, 1, 0, 1, 2]);
    assert!(matches!(cat.get(5), Err(Error::IndexOutOfRange { index: 5, size: 5, .. })));
    assert!(ConcatDataset::<TensorDataset>::new(vec![]).is_err());

    // Different dataset types with one item type, through trait objects.
    type Dyn = Box<dyn Dataset<Item = (Tensor, Tensor)> + Send + Sync>;
    let mixed: Vec<Dyn> = vec![Box::new(rows(2)), Box::new(Subset::new(rows(4), vec![3]))];
    let mixed = ConcatDataset::new(mixed).unwrap();
    assert_eq!(mixed.get(2).unwrap().1.item::<i64>().unwrap(), 3);
}

#[test]
fn random_split_matches_pytorch() {
    let ds = Arc::new(rows(10));
    // torch.utils.data.random_split(range(10), [7, 3], generator=torch.Generator().manual_seed(42))
    let parts = random_split(Arc::clone(&ds), &[7, 3], Some(&seeded(42))).unwrap();
    assert_eq!(parts[0].indices(), [2, 6, 1, 8, 4, 5, 0]);
    assert_eq!(parts[1].indices(), [9, 3, 7]);
    assert_eq!(parts[1].get(0).unwrap().1.item::<i64>().unwrap(), 9);
    // random_split(range(10), [0.5, 0.3, 0.2], generator=torch.Generator().manual_seed(0))
    let parts = random_split(&*ds, &[0.5, 0.3, 0.2], Some(&seeded(0))).unwrap();
    let got: Vec<&[usize]> = parts.iter().map(|p| p.indices()).collect();
    assert_eq!(got, [&[4, 1, 7, 5, 3][..], &[9, 0, 8], &[6, 2]]);
    // Remainders go round-robin from the first split: range(11), [0.3, 0.3, 0.4] -> 4, 3, 4.
    let parts = random_split(Arc::new(rows(11)), &[0.3, 0.3, 0.4], Some(&seeded(1))).unwrap();
    assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [4, 3, 4]);
    let mut all: Vec<usize> = parts.iter().flat_map(|p| p.indices().to_vec()).collect();
    all.sort();
    assert_eq!(all, (0..11).collect::<Vec<_>>());

    assert!(err_text(random_split(&*ds, &[5, 4], None)).contains("Sum of input lengths"));
    assert!(random_split(&*ds, &[0.5, 0.6], None).is_err());
    assert!(random_split(&*ds, &[1.5, -0.5], None).is_err());
}

// ---- samplers ---------------------------------------------------------------------------------

#[test]
fn random_sampler_matches_pytorch() {
    // s = RandomSampler(range(10), generator=torch.Generator().manual_seed(42)); list(s); list(s)
    let s = RandomSampler::new(10, false, None, Some(seeded(42))).unwrap();
    assert_eq!(s.len(), 10);
    assert_eq!(s.indices().unwrap(), [2, 6, 1, 8, 4, 5, 0, 9, 3, 7]);
    assert_eq!(s.indices().unwrap(), [7, 5, 0, 3, 1, 6, 9, 8, 4, 2]);
    // RandomSampler(range(10), replacement=True, num_samples=40, generator=...manual_seed(7))
    let s = RandomSampler::new(10, true, Some(40), Some(seeded(7))).unwrap();
    assert_eq!(
        s.indices().unwrap(),
        [
            5, 2, 1, 6, 3, 7, 7, 9, 8, 1, 8, 1, 8, 7, 2, 0, 6, 2, 3, 8, 6, 0, 5, 1, 8, 8, 3, 7, 0, 8, 1, 0, 6, 3, 5, 6,
            6, 7, 5, 0
        ]
    );
    // RandomSampler(range(4), num_samples=10, generator=...manual_seed(7)): permutations chained.
    let s = RandomSampler::new(4, false, Some(10), Some(seeded(7))).unwrap();
    assert_eq!(s.indices().unwrap(), [3, 2, 0, 1, 2, 0, 3, 1, 3, 0]);

    assert!(err_text(RandomSampler::new(0, false, None, None)).contains("num_samples=0"));
    assert!(RandomSampler::new(0, true, Some(3), Some(seeded(0))).unwrap().indices().is_err());
}

#[test]
fn sequential_subset_and_weighted_samplers() {
    assert_eq!(SequentialSampler::new(4).indices().unwrap(), [0, 1, 2, 3]);

    let s = SubsetRandomSampler::new(vec![10, 20, 30, 40], Some(seeded(1)));
    let mut got = s.indices().unwrap();
    got.sort();
    assert_eq!(got, [10, 20, 30, 40]);

    let w = [0.1, 0.9, 0.4, 0.7, 3.0, 0.6];
    // list(WeightedRandomSampler(w, 10, replacement=True, generator=...manual_seed(3)))
    let s = WeightedRandomSampler::new(&w, 10, true, Some(seeded(3))).unwrap();
    assert_eq!(s.indices().unwrap(), [1, 3, 4, 1, 4, 4, 2, 4, 4, 4]);
    let s = WeightedRandomSampler::new(&w, 4, false, Some(seeded(3))).unwrap();
    assert_eq!(s.indices().unwrap(), [3, 0, 1, 4]);
    assert!(WeightedRandomSampler::new(&w, 0, true, None).is_err());
    // Checked by multinomial when drawn.
    assert!(WeightedRandomSampler::new(&w, 7, false, Some(seeded(3))).unwrap().indices().is_err());
    assert!(WeightedRandomSampler::new(&[1.0, -1.0], 1, true, Some(seeded(3))).unwrap().indices().is_err());
}

#[test]
fn batch_sampler_groups_and_drops_last() {
    let keep = BatchSampler::new(SequentialSampler::new(10), 3, false).unwrap();
    assert_eq!(keep.len(), 4);
    assert_eq!(keep.indices().unwrap(), [vec![0, 1, 2], vec![3, 4, 5], vec![6, 7, 8], vec![9]]);
    let drop = BatchSampler::new(SequentialSampler::new(10), 3, true).unwrap();
    assert_eq!(drop.len(), 3);
    assert_eq!(drop.indices().unwrap(), [vec![0, 1, 2], vec![3, 4, 5], vec![6, 7, 8]]);
    let exact = BatchSampler::new(SequentialSampler::new(6), 3, true).unwrap();
    assert_eq!(exact.len(), 2);
    assert!(err_text(BatchSampler::new(SequentialSampler::new(6), 0, false)).contains("batch_size=0"));
}

#[test]
fn distributed_sampler_examples_and_errors() {
    // DistributedSampler(range(11), num_replicas=2, rank=r, shuffle=True, seed=5); epochs 0 and 1.
    let expected = [([9, 0, 10, 3, 7, 4], [2, 8, 1, 5, 3, 10]), ([5, 8, 2, 6, 1, 9], [0, 7, 4, 9, 6, 2])];
    for (rank, (e0, e1)) in expected.iter().enumerate() {
        let s = DistributedSampler::new(11, 2, rank, true, 5, false).unwrap();
        assert_eq!(s.len(), 6);
        assert_eq!(s.total_size(), 12);
        assert_eq!(s.indices().unwrap(), e0);
        assert_eq!(s.indices().unwrap(), e0, "same epoch, same order");
        s.set_epoch(1);
        assert_eq!(s.indices().unwrap(), e1);
    }
    // shuffle=False, drop_last=True: the 11th sample is dropped.
    let r0 = DistributedSampler::new(11, 2, 0, false, 0, true).unwrap();
    let r1 = DistributedSampler::new(11, 2, 1, false, 0, true).unwrap();
    assert_eq!((r0.len(), r0.indices().unwrap()), (5, vec![0, 2, 4, 6, 8]));
    assert_eq!(r1.indices().unwrap(), [1, 3, 5, 7, 9]);
    // Fewer samples than replicas: padded by repetition.
    let got: Vec<Vec<usize>> =
        (0..3).map(|r| DistributedSampler::new(2, 3, r, false, 0, false).unwrap().indices().unwrap()).collect();
    assert_eq!(got, [vec![0], vec![1], vec![0]]);

    let e = err_text(DistributedSampler::new(11, 2, 2, true, 0, false));
    assert!(e.contains("Invalid rank 2, rank should be in the interval [0, 1]"), "{e}");
    assert!(DistributedSampler::new(11, 0, 0, true, 0, false).is_err());
}

/// Every case of `distributed_sampler_expected.txt` (PyTorch's orders, written by
/// `gen_distributed_sampler.py`): lengths 0 to 30 over 1 to 7 replicas, with and without
/// `drop_last`, in order and shuffled with two seeds at epochs 0, 1 and 7.
#[test]
fn distributed_sampler_matches_pytorch() {
    let text = include_str!("distributed_sampler_expected.txt");
    let mut cases = 0;
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let parts: Vec<&str> = line.split(':').map(str::trim).collect();
        assert_eq!(parts.len(), 3, "malformed line {line:?}");
        let p: Vec<u64> = parts[0].split_whitespace().map(|v| v.parse().unwrap()).collect();
        let &[data_len, replicas, rank, shuffle, drop_last, seed, epoch] = p.as_slice() else {
            panic!("malformed settings in {line:?}")
        };
        let len: usize = parts[1].parse().unwrap();
        let expected: Vec<usize> = parts[2].split_whitespace().map(|v| v.parse().unwrap()).collect();
        let s = DistributedSampler::new(
            data_len as usize,
            replicas as usize,
            rank as usize,
            shuffle == 1,
            seed,
            drop_last == 1,
        )
        .unwrap();
        s.set_epoch(epoch);
        assert_eq!(s.len(), len, "len of {line:?}");
        assert_eq!(s.indices().unwrap(), expected, "indices of {line:?}");
        cases += 1;
    }
    assert_eq!(cases, 10 * 17 * 2 * 7, "cases in distributed_sampler_expected.txt");
}

#[test]
fn distributed_sampler_set_epoch_through_a_shared_loader() {
    let s = Arc::new(DistributedSampler::new(11, 2, 1, true, 5, false).unwrap());
    let loader = builder(rows(11)).batch_size(6).sampler(Arc::clone(&s)).build().unwrap();
    let epoch = |l: &DataLoader<(Tensor, Tensor)>| -> Vec<i64> { l.iter().flat_map(|b| ids(&b.unwrap().1)).collect() };
    assert_eq!(epoch(&loader), [5, 8, 2, 6, 1, 9]);
    s.set_epoch(1);
    assert_eq!(epoch(&loader), [0, 7, 4, 9, 6, 2]);
}

// ---- DataLoader -------------------------------------------------------------------------------

/// The label batches of one epoch.
fn epoch_labels(loader: &DataLoader<(Tensor, Tensor)>) -> Vec<Vec<i64>> {
    loader.iter().map(|b| ids(&b.unwrap().1)).collect()
}

#[test]
fn dataloader_batch_shapes_len_and_drop_last() {
    let loader = builder(rows(10)).batch_size(4).build().unwrap();
    assert_eq!(loader.len(), 3);
    assert_eq!(loader.dataset_len(), 10);
    let batches: Vec<(Tensor, Tensor)> = loader.iter().map(|b| b.unwrap()).collect();
    assert_eq!(batches.len(), 3);
    assert_eq!(batches[0].0.sizes(), &[4, 2]);
    assert_eq!(batches[0].1.sizes(), &[4]);
    assert_eq!(batches[2].0.sizes(), &[2, 2]);
    assert_eq!(batches[1].0.to_vec::<f32>().unwrap(), [4.0, 40.0, 5.0, 50.0, 6.0, 60.0, 7.0, 70.0]);
    assert_eq!(ids(&batches[2].1), [8, 9]);

    let dropped = builder(rows(10)).batch_size(4).drop_last(true).build().unwrap();
    assert_eq!(dropped.len(), 2);
    assert_eq!(epoch_labels(&dropped), [vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);

    let default = builder(rows(3)).build().unwrap();
    assert_eq!(default.len(), 3, "batch_size defaults to 1");
    assert_eq!(default.iter().next().unwrap().unwrap().0.sizes(), &[1, 2]);
}

#[test]
fn dataloader_shuffle_matches_pytorch_epochs() {
    // ds = TensorDataset(torch.arange(10), torch.arange(10) * 10)
    // dl = DataLoader(ds, batch_size=3, shuffle=True, generator=torch.Generator().manual_seed(0))
    // [[b[0].tolist() for b in dl] for epoch in range(2)]
    let expected = [
        vec![vec![3, 7, 5], vec![2, 0, 8], vec![1, 6, 9], vec![4]],
        vec![vec![1, 3, 2], vec![7, 5, 9], vec![0, 6, 4], vec![8]],
    ];
    for workers in [0, 1, 3] {
        let mut b = builder(rows(10)).batch_size(3).shuffle(true).generator(seeded(0));
        if workers > 0 {
            b = b.num_workers(workers);
        }
        let loader = b.build().unwrap();
        assert_eq!(epoch_labels(&loader), expected[0], "num_workers={workers}");
        assert_eq!(epoch_labels(&loader), expected[1], "num_workers={workers}");
    }
}

/// Samples `i` of `n`, taking longer for small `i` so that workers finish out of order, and
/// recording which worker fetched them.
struct Slow {
    n: usize,
    workers_seen: Mutex<HashSet<Option<usize>>>,
    marker: Arc<()>,
}

impl Slow {
    fn new(n: usize) -> Self {
        Slow { n, workers_seen: Mutex::new(HashSet::new()), marker: Arc::new(()) }
    }
}

impl Dataset for Slow {
    type Item = i64;
    fn len(&self) -> usize {
        self.n
    }
    fn get(&self, index: usize) -> Result<i64> {
        if index >= self.n {
            return Err(Error::invalid("Slow", "out of range"));
        }
        self.workers_seen.lock().unwrap().insert(get_worker_info().map(|w| w.id));
        std::thread::sleep(Duration::from_micros(((self.n - index) * 200) as u64));
        Ok(index as i64)
    }
}

#[test]
fn dataloader_order_does_not_depend_on_workers() {
    let epochs = |workers: usize, prefetch: Option<usize>| -> Vec<Vec<i64>> {
        let mut b = builder(Slow::new(23)).batch_size(2).shuffle(true).generator(seeded(123));
        b = b.num_workers(workers);
        if let Some(p) = prefetch {
            b = b.prefetch_factor(p);
        }
        let loader = b.build().unwrap();
        (0..3).flat_map(|_| loader.iter().map(|x| ids(&x.unwrap())).collect::<Vec<_>>()).collect()
    };
    let reference = epochs(0, None);
    assert_eq!(reference.len(), 36);
    assert_eq!(reference[..12].iter().flatten().count(), 23);
    assert_ne!(reference[..12], reference[12..24], "each epoch draws a new order");
    for (workers, prefetch) in [(1, None), (3, None), (3, Some(1)), (2, Some(5))] {
        assert_eq!(epochs(workers, prefetch), reference, "num_workers={workers} prefetch={prefetch:?}");
    }
}

#[test]
fn dataloader_workers_report_worker_info() {
    let ds = Arc::new(Slow::new(12));
    let loader = builder(Arc::clone(&ds)).batch_size(1).num_workers(3).build().unwrap();
    let got: Vec<i64> = loader.iter().map(|b| ids(&b.unwrap())[0]).collect();
    assert_eq!(got, (0..12).collect::<Vec<_>>());
    let seen = ds.workers_seen.lock().unwrap().clone();
    assert_eq!(seen, [Some(0), Some(1), Some(2)].into_iter().collect(), "batch k goes to worker k % 3");

    let ds = Arc::new(Slow::new(3));
    let loader = builder(Arc::clone(&ds)).build().unwrap();
    assert_eq!(loader.iter().count(), 3);
    assert_eq!(*ds.workers_seen.lock().unwrap(), [None].into_iter().collect());
    assert_eq!(get_worker_info(), None);
}

/// Fails at index 5 (an error) and index 7 (a panic).
struct Faulty;

impl Dataset for Faulty {
    type Item = i64;
    fn len(&self) -> usize {
        10
    }
    fn get(&self, index: usize) -> Result<i64> {
        match index {
            5 => Err(Error::Io("sample 5 is unreadable".into())),
            7 => panic!("sample 7 panicked"),
            i => Ok(i as i64),
        }
    }
}

#[test]
fn dataloader_errors_surface_as_err_items() {
    for workers in [0, 2] {
        let loader = builder(Faulty).batch_size(2).num_workers(workers).build().unwrap();
        let mut it = loader.iter();
        assert_eq!(ids(&it.next().unwrap().unwrap()), [0, 1]);
        assert_eq!(ids(&it.next().unwrap().unwrap()), [2, 3]);
        let e = it.next().unwrap().unwrap_err();
        assert_eq!(e, Error::Io("sample 5 is unreadable".into()), "num_workers={workers}");
        if workers == 0 {
            continue; // a panic in the calling thread stays a panic
        }
        let e = it.next().unwrap().unwrap_err().to_string();
        assert!(e.contains("worker 1") && e.contains("sample 7 panicked"), "{e}");
        assert_eq!(ids(&it.next().unwrap().unwrap()), [8, 9], "later batches still come");
        assert!(it.next().is_none());
    }
}

#[test]
fn dataloader_early_drop_joins_workers() {
    let ds = Arc::new(Slow::new(60));
    let marker = Arc::clone(&ds.marker);
    let loader = builder(Arc::clone(&ds)).batch_size(4).num_workers(3).build().unwrap();
    let mut it = loader.iter();
    assert_eq!(ids(&it.next().unwrap().unwrap()), [0, 1, 2, 3]);
    drop(it);
    drop(loader);
    drop(ds);
    // Every worker held the dataset; all are joined once the iterator is gone.
    assert_eq!(Arc::strong_count(&marker), 1);
}

#[test]
fn dataloader_custom_collate_and_batch_sampler() {
    let loader = builder(rows(7))
        .batch_size(3)
        .collate_fn(|samples: Vec<(Tensor, Tensor)>| -> Result<i64> {
            samples.iter().map(|(_, y)| y.item::<i64>()).sum()
        })
        .num_workers(2)
        .build()
        .unwrap();
    assert_eq!(loader.iter().collect::<Result<Vec<i64>>>().unwrap(), [3, 12, 6]);

    struct Pairs;
    impl Sampler<Vec<usize>> for Pairs {
        fn len(&self) -> usize {
            2
        }
        fn indices(&self) -> Result<Vec<Vec<usize>>> {
            Ok(vec![vec![4, 0], vec![2]])
        }
    }
    let loader = builder(rows(5)).batch_sampler(Pairs).build().unwrap();
    assert_eq!(loader.len(), 2);
    assert_eq!(epoch_labels(&loader), [vec![4, 0], vec![2]]);

    // Samples without a Collate implementation, through with_collate_fn.
    struct Words;
    impl Dataset for Words {
        type Item = String;
        fn len(&self) -> usize {
            3
        }
        fn get(&self, i: usize) -> Result<String> {
            Ok(["a", "b", "c"][i].to_string())
        }
    }
    let loader = DataLoaderBuilder::with_collate_fn(Words, |w: Vec<String>| Ok(w.concat()))
        .generator(own_generator())
        .batch_size(2)
        .build()
        .unwrap();
    assert_eq!(loader.iter().collect::<Result<Vec<_>>>().unwrap(), ["ab", "c"]);
}

#[test]
fn dataloader_rejects_conflicting_options() {
    let e = err_text(builder(rows(4)).shuffle(true).sampler(SequentialSampler::new(4)).build());
    assert!(e.contains("sampler option is mutually exclusive with shuffle"), "{e}");
    let bs = BatchSampler::new(SequentialSampler::new(4), 2, false).unwrap();
    let e = err_text(builder(rows(4)).batch_size(2).batch_sampler(bs).build());
    assert!(e.contains("batch_sampler option is mutually exclusive"), "{e}");
    let e = err_text(builder(rows(4)).prefetch_factor(2).build());
    assert!(e.contains("prefetch_factor option could only be specified in multiprocessing"), "{e}");
    assert!(builder(rows(4)).num_workers(1).prefetch_factor(0).build().is_err());
    assert!(builder(rows(4)).batch_size(0).build().is_err());
    assert!(builder(rows(0)).shuffle(true).build().is_err(), "RandomSampler needs samples");
}

#[test]
fn default_collate_stacks_tuples_vectors_and_scalars() {
    let (x, y, w) = default_collate(vec![
        (Tensor::from_slice(&[1.0f32, 2.0]), 3i64, 0.5f64),
        (Tensor::from_slice(&[4.0f32, 5.0]), 6i64, 1.5f64),
    ])
    .unwrap();
    assert_eq!((x.sizes(), x.to_vec::<f32>().unwrap()), (&[2i64, 2][..], vec![1.0, 2.0, 4.0, 5.0]));
    assert_eq!((y.dtype(), ids(&y)), (c10::ScalarType::I64, vec![3, 6]));
    assert_eq!(w.dtype(), c10::ScalarType::F64);
    let cols = default_collate(vec![vec![1i64, 2, 3], vec![4, 5, 6]]).unwrap();
    assert_eq!(cols.iter().map(ids).collect::<Vec<_>>(), [vec![1, 4], vec![2, 5], vec![3, 6]]);
    assert!(default_collate(vec![vec![1i64, 2], vec![3]]).is_err());
    assert!(default_collate(vec![Tensor::from_slice(&[1.0f32]), Tensor::from_slice(&[1.0f32, 2.0])]).is_err());
}

/// `0..n`, each worker producing the numbers `≡ id (mod num_workers)`, as PyTorch's docs shard.
struct Stream(i64);

impl IterableDataset for Stream {
    type Item = i64;
    fn iter(&self) -> Box<dyn Iterator<Item = Result<i64>> + Send> {
        let (n, id) = get_worker_info().map_or((1, 0), |w| (w.num_workers as i64, w.id as i64));
        Box::new((0..self.0).filter(move |i| i % n == id).map(|i| {
            if i == 99 {
                Err(Error::Io("bad".into()))
            } else {
                Ok(i)
            }
        }))
    }
}

#[test]
fn iterable_loader_takes_batches_from_workers_in_turn() {
    let batches = |l: &IterableDataLoader<Tensor>| -> Vec<Vec<i64>> { l.iter().map(|b| ids(&b.unwrap())).collect() };
    let single = IterableDataLoader::new(Stream(5), 2).unwrap().generator(own_generator());
    assert_eq!(batches(&single), [vec![0, 1], vec![2, 3], vec![4]]);
    // list(DataLoader(DS(), batch_size=2, num_workers=2)) with DS sharding range(11) the same way
    let two = IterableDataLoader::new(Stream(11), 2).unwrap().generator(own_generator()).num_workers(2);
    assert_eq!(batches(&two), [vec![0, 2], vec![1, 3], vec![4, 6], vec![5, 7], vec![8, 10], vec![9]]);
    let three =
        IterableDataLoader::new(Stream(11), 2).unwrap().generator(own_generator()).num_workers(3).prefetch_factor(1);
    assert_eq!(batches(&three), [vec![0, 3], vec![1, 4], vec![2, 5], vec![6, 9], vec![7, 10], vec![8]]);
    let dropped = IterableDataLoader::with_collate_fn(Stream(5), 2, true, default_collate::<i64>)
        .unwrap()
        .generator(own_generator());
    assert_eq!(batches(&dropped), [vec![0, 1], vec![2, 3]]);
    // An error of the stream takes its batch's place.
    let results: Vec<bool> = IterableDataLoader::new(Stream(102), 50)
        .unwrap()
        .generator(own_generator())
        .iter()
        .map(|b| b.is_ok())
        .collect();
    assert_eq!(results, [true, false, true]);
    // Dropping a pass early does not hang on workers blocked with full channels.
    let long = IterableDataLoader::new(Stream(10_000), 1).unwrap().generator(own_generator()).num_workers(2);
    assert_eq!(long.iter().take(3).count(), 3);
}

// ---- readers ----------------------------------------------------------------------------------

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "nn-data-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// An IDX file: magic `[0, 0, type, dims.len()]`, big-endian dims, then `data`.
fn idx(type_code: u8, dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut v = vec![0, 0, type_code, dims.len() as u8];
    for d in dims {
        v.extend(d.to_be_bytes());
    }
    v.extend_from_slice(data);
    v
}

/// `n` 28x28 images where pixel `p` of image `i` is `(i * 7 + p) % 256`, and labels `i % 10`.
fn mnist_files(n: u32) -> (Vec<u8>, Vec<u8>) {
    let pixels: Vec<u8> = (0..n as usize * 784).map(|k| ((k / 784) * 7 + k % 784) as u8).collect();
    let labels: Vec<u8> = (0..n).map(|i| (i % 10) as u8).collect();
    (idx(0x08, &[n, 28, 28], &pixels), idx(0x08, &[n], &labels))
}

#[test]
fn idx_reader_reads_raw_and_gzipped_files() {
    let dir = TempDir::new("idx");
    let (images, labels) = mnist_files(3);
    dir.write("train-images-idx3-ubyte", &images);
    dir.write("train-labels-idx1-ubyte.gz", &gzip(&labels));
    dir.write("t10k-images-idx3-ubyte.gz", &gzip(&images));
    dir.write("t10k-labels-idx1-ubyte", &labels);
    for train in [true, false] {
        let m = Mnist::load(dir.path(), train).unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m.images().sizes(), &[3, 1, 28, 28]);
        assert_eq!(m.images().dtype(), c10::ScalarType::U8);
        assert_eq!((m.labels().dtype(), ids(m.labels())), (c10::ScalarType::I64, vec![0, 1, 2]));
        let px = m.images().to_vec::<u8>().unwrap();
        assert_eq!(&px[784..788], [7, 8, 9, 10]);
        assert_eq!(px[784 + 255], 6); // (7 + 255) % 256
    }

    let m = Mnist::load(dir.path(), true).unwrap();
    let unit = m.images_f32(0.0, 1.0).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(unit[255], 1.0);
    assert_eq!(unit[1], 1.0 / 255.0);
    let norm = m.images_f32(MNIST_MEAN, MNIST_STD).unwrap().to_vec::<f32>().unwrap();
    // torchvision: ToTensor() then Normalize((0.1307,), (0.3081,)) in float32.
    assert_eq!(norm[255], (1.0f32 - 0.1307) / 0.3081);
    assert_eq!(norm[0], -0.1307f32 / 0.3081);
    let ds = m.dataset(MNIST_MEAN, MNIST_STD).unwrap();
    let (x, y) = ds.get(2).unwrap();
    assert_eq!((x.sizes(), x.dtype(), y.item::<i64>().unwrap()), (&[1i64, 28, 28][..], c10::ScalarType::F32, 2));

    // The generic reader keeps the file's element type and dimensions.
    let p = dir.write("shorts.idx", &idx(0x0b, &[2, 2], &[0, 1, 0xff, 0xfe, 1, 0, 0x80, 0]));
    let t = read_idx(&p).unwrap();
    assert_eq!((t.sizes(), t.dtype()), (&[2i64, 2][..], c10::ScalarType::I16));
    assert_eq!(t.to_vec::<i16>().unwrap(), [1, -2, 256, i16::MIN]);
    let p = dir.write("floats.idx.gz", &gzip(&idx(0x0d, &[2], &[0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0])));
    assert_eq!(read_idx(&p).unwrap().to_vec::<f32>().unwrap(), [1.0, -2.0]);
}

#[test]
fn idx_reader_reports_malformed_files() {
    let dir = TempDir::new("idx-bad");
    let (images, labels) = mnist_files(2);
    let check = |name: &str, bytes: &[u8], read: fn(&Path) -> Result<Tensor>, want: &str| {
        let p = dir.write(name, bytes);
        let e = read(&p).expect_err(name);
        let msg = e.to_string();
        assert!(matches!(e, Error::Io(_)), "{msg}");
        assert!(msg.contains(name) && msg.contains(want), "{name}: {msg}");
    };
    let images_of = |p: &Path| read_idx_images(p);
    let labels_of = |p: &Path| read_idx_labels(p);
    check("labels-as-images", &labels, images_of, "bad magic number 0x00000801");
    check("images-as-labels.gz", &gzip(&images), labels_of, "bad magic number 0x00000803");
    check("not-idx", b"PK\x03\x04 a zip file", images_of, "bad magic number 0x504b0304");
    check("unknown-type", &idx(0x07, &[1], &[0]), |p| read_idx(p), "bad magic number 0x00000701");
    check("tiny", &[0, 0], images_of, "truncated");
    check("short-header", &images[..10], images_of, "truncated: the header");
    check("truncated-data", &images[..images.len() - 1], images_of, "truncated: the header announces");
    check("truncated-data.gz", &gzip(&labels[..9]), labels_of, "found 1 bytes");
    let mut extra = labels.clone();
    extra.push(0);
    check("trailing", &extra, labels_of, "1 unexpected bytes after");
    let mut corrupt = gzip(&images);
    corrupt.truncate(corrupt.len() / 2);
    check("corrupt.gz", &corrupt, images_of, "bad gzip data");

    // Count mismatch between the image and label files of a split.
    let (_, three_labels) = mnist_files(3);
    dir.write("train-images-idx3-ubyte", &images);
    dir.write("train-labels-idx1-ubyte", &three_labels);
    let e = err_text(Mnist::load(dir.path(), true));
    assert!(e.contains("train-images-idx3-ubyte: 2 images, but") && e.contains("has 3 labels"), "{e}");
    let e = err_text(Mnist::load(dir.path(), false));
    assert!(e.contains("found neither t10k-images-idx3-ubyte nor t10k-images-idx3-ubyte.gz"), "{e}");
    assert!(err_text(read_idx(dir.path().join("missing"))).contains("cannot read"));
}

/// The shipped digits (`data/mnist_5k.csv.gz` in the repository).
fn shipped_csv() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/mnist_5k.csv.gz")
}

#[test]
fn csv_reader_reads_the_shipped_digits() {
    let m = read_mnist_csv(shipped_csv()).unwrap();
    assert_eq!(m.len(), 5000);
    assert_eq!(m.images().sizes(), &[5000, 1, 28, 28]);
    let labels = ids(m.labels());
    let mut counts = [0usize; 10];
    for &l in &labels {
        counts[l as usize] += 1;
    }
    assert_eq!(counts, [500; 10], "500 of each digit");
    let px = m.images().to_vec::<u8>().unwrap();
    assert_eq!(px.iter().map(|&p| p as u64).take(784).sum::<u64>(), 31095, "first image, as numpy reads it");
    assert_eq!((px.iter().min(), px.iter().max()), (Some(&0), Some(&255)));
    let mean = px.iter().map(|&p| p as f64).sum::<f64>() / px.len() as f64 / 255.0;
    assert!((mean - 0.131320).abs() < 1e-5, "{mean}");
}

#[test]
fn csv_reader_reports_malformed_files() {
    let dir = TempDir::new("csv");
    let line = |pixel: &str, label: &str| format!("{}{pixel},{label}\n", "0,".repeat(783));
    let good = line("255", "7");
    let m = read_mnist_csv(dir.write("good.csv", format!("{good}\n{good}").as_bytes())).unwrap();
    assert_eq!((m.len(), ids(m.labels())), (2, vec![7, 7]));
    let m = read_mnist_csv(dir.write("good.csv.gz", &gzip(good.as_bytes()))).unwrap();
    assert_eq!(m.images().to_vec::<u8>().unwrap()[783], 255);

    let cases = [
        ("short.csv", format!("{good}{}", "1,2,3\n"), "line 2: expected 785 comma-separated values", "found 3"),
        ("long.csv", format!("0,{good}"), "line 1: expected 785", "found 786"),
        ("letters.csv", line("abc", "1"), "line 1, column 784: `abc` is not a pixel value", ""),
        ("big-pixel.csv", line("256", "1"), "column 784: `256` is not a pixel value", ""),
        ("label.csv", line("0", "10"), "line 1, column 785: `10` is not a digit label", ""),
        ("empty.csv", String::new(), "no samples", ""),
    ];
    for (name, text, want, also) in cases {
        let e = err_text(read_mnist_csv(dir.write(name, text.as_bytes())));
        assert!(e.contains(name) && e.contains(want) && e.contains(also), "{name}: {e}");
    }
    let e = err_text(read_mnist_csv(dir.write("binary.csv", &[0xff, 0xfe, 0x00])));
    assert!(e.contains("not UTF-8"), "{e}");
}

#[test]
fn fashion_mnist_from_debian_package() {
    let root = Path::new("/usr/share/datasets/fashion-mnist");
    if !root.is_dir() {
        eprintln!("skipped: {} not installed (apt-get install dataset-fashion-mnist)", root.display());
        return;
    }
    // Reference values from numpy on the same files.
    let test = Mnist::load(root, false).unwrap();
    assert_eq!(test.len(), 10_000);
    assert_eq!(ids(test.labels())[..10], [9, 2, 1, 1, 6, 1, 4, 6, 5, 7]);
    let px = test.images().to_vec::<u8>().unwrap();
    assert_eq!(px[..784].iter().map(|&p| p as u64).sum::<u64>(), 33456);
    let train = Mnist::load(root, true).unwrap();
    assert_eq!(train.images().sizes(), &[60_000, 1, 28, 28]);
    assert_eq!(ids(train.labels())[..10], [9, 0, 0, 3, 0, 2, 7, 2, 5, 5]);
}
