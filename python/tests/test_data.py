"""torchrs.utils.data against PyTorch 2.15's orders for fixed seeds (the cases of
nn/tests/nn/data.rs, printed by PyTorch) and PyTorch's documented collate rules."""

import collections
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import torchrs as torch
import torchrs.utils.data
from torchrs.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, RandomSampler, SequentialSampler,
                                Subset, TensorDataset, default_collate, random_split)

ROOT = Path(__file__).resolve().parents[2]


def seeded(seed):
    g = torch.Generator()
    g.manual_seed(seed)
    return g


def rows(n):
    """Sample i is (tensor([i, -i]), tensor(i))."""
    x = torch.arange(n)
    return TensorDataset(torch.stack([x, -x], 1), x)


def test_package_layout():
    assert torchrs.utils.data.DataLoader is DataLoader
    assert Path(torchrs.utils.data.__file__).name == "__init__.py"


def test_tensor_dataset_rows_and_size_check():
    ds = rows(5)
    assert len(ds) == 5
    x, y = ds[3]
    assert x.tolist() == [3, -3] and y.item() == 3
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(torch.zeros(3), torch.zeros(4))


def test_subset_and_concat():
    ds = rows(6)
    sub = Subset(ds, [4, 1])
    assert len(sub) == 2 and sub[0][1].item() == 4 and sub[1][1].item() == 1
    cat = ds + rows(2)
    assert isinstance(cat, ConcatDataset) and len(cat) == 8
    assert cat[7][1].item() == 1 and cat[-1][1].item() == 1 and cat[5][1].item() == 5


def test_random_split_matches_pytorch():
    # random_split(range(10), [7, 3], generator=torch.Generator().manual_seed(42))
    a, b = random_split(range(10), [7, 3], generator=seeded(42))
    assert a.indices == [2, 6, 1, 8, 4, 5, 0] and b.indices == [9, 3, 7]
    assert b[0] == 9
    # random_split(range(10), [0.5, 0.3, 0.2], generator=...manual_seed(0))
    parts = random_split(range(10), [0.5, 0.3, 0.2], generator=seeded(0))
    assert [p.indices for p in parts] == [[4, 1, 7, 5, 3], [9, 0, 8], [6, 2]]
    # Remainders go round-robin from the first split: range(11), [0.3, 0.3, 0.4] -> 4, 3, 4.
    parts = random_split(range(11), [0.3, 0.3, 0.4], generator=seeded(1))
    assert [len(p) for p in parts] == [4, 3, 4]
    assert sorted(i for p in parts for i in p.indices) == list(range(11))
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        random_split(range(10), [5, 4])


def test_random_sampler_matches_pytorch():
    # s = RandomSampler(range(10), generator=torch.Generator().manual_seed(42)); list(s); list(s)
    s = RandomSampler(range(10), generator=seeded(42))
    assert len(s) == 10
    assert list(s) == [2, 6, 1, 8, 4, 5, 0, 9, 3, 7]
    assert list(s) == [7, 5, 0, 3, 1, 6, 9, 8, 4, 2]
    # RandomSampler(range(10), replacement=True, num_samples=40, generator=...manual_seed(7))
    s = RandomSampler(range(10), replacement=True, num_samples=40, generator=seeded(7))
    assert list(s) == [5, 2, 1, 6, 3, 7, 7, 9, 8, 1, 8, 1, 8, 7, 2, 0, 6, 2, 3, 8, 6, 0, 5, 1, 8, 8, 3, 7, 0, 8, 1, 0,
                       6, 3, 5, 6, 6, 7, 5, 0]
    # RandomSampler(range(4), num_samples=10, generator=...manual_seed(7)): permutations chained.
    assert list(RandomSampler(range(4), num_samples=10, generator=seeded(7))) == [3, 2, 0, 1, 2, 0, 3, 1, 3, 0]
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(0))


def test_sequential_and_batch_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert list(BatchSampler(SequentialSampler(range(7)), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(SequentialSampler(range(7)), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2


def _epoch(loader):
    return [y.tolist() for _, y in loader]


def test_dataloader_shuffle_matches_pytorch_epochs():
    # ds = TensorDataset(torch.arange(10), torch.arange(10) * 10)
    # dl = DataLoader(ds, batch_size=3, shuffle=True, generator=torch.Generator().manual_seed(0))
    loader = DataLoader(rows(10), batch_size=3, shuffle=True, generator=seeded(0))
    assert _epoch(loader) == [[3, 7, 5], [2, 0, 8], [1, 6, 9], [4]]
    assert _epoch(loader) == [[1, 3, 2], [7, 5, 9], [0, 6, 4], [8]]


def test_dataloader_batches_len_and_drop_last():
    loader = DataLoader(rows(10), batch_size=4)
    assert len(loader) == 3
    batches = list(loader)
    assert [b[0].shape for b in batches] == [torch.Size([4, 2]), torch.Size([4, 2]), torch.Size([2, 2])]
    assert isinstance(batches[0], list)  # a batch of tuples is a list, as PyTorch collates it
    assert batches[1][1].tolist() == [4, 5, 6, 7] and batches[1][0].tolist()[0] == [4, -4]
    loader = DataLoader(rows(10), batch_size=4, drop_last=True)
    assert len(loader) == 2 and [b[1].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    default = DataLoader(rows(3))
    assert len(default) == 3 and next(iter(default))[0].shape == torch.Size([1, 2])


def test_dataloader_options_are_checked_as_pytorch():
    ds = rows(4)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, sampler=SequentialSampler(ds), shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                         "sampler, and drop_last"):
        DataLoader(ds, batch_sampler=[[0, 1]], batch_size=2)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    loader = DataLoader(ds, batch_sampler=[[3, 0], [1]])
    assert [b[1].tolist() for b in loader] == [[3, 0], [1]]


def test_default_collate_follows_pytorchs_rules():
    batch = default_collate([(1, 2.5, "a", {"k": torch.tensor([1.0, 2.0])}), (3, 4.5, "b", {"k": torch.zeros(2)})])
    ints, floats, strs, d = batch
    assert ints.dtype == torch.int64 and ints.tolist() == [1, 3]
    assert floats.dtype == torch.float64 and floats.tolist() == [2.5, 4.5]
    assert strs == ("a", "b")  # the transposed samples, as PyTorch returns them
    assert d["k"].tolist() == [[1.0, 2.0], [0.0, 0.0]]
    assert default_collate([True, False]).dtype == torch.bool
    arrays = default_collate([np.ones((2,), dtype=np.float32), np.zeros((2,), dtype=np.float32)])
    assert arrays.dtype == torch.float32 and arrays.tolist() == [[1.0, 1.0], [0.0, 0.0]]
    Point = collections.namedtuple("Point", "x y")
    p = default_collate([Point(1, 2), Point(3, 4)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3]
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                                        "or lists; found <class 'object'>"):
        default_collate([object()])


def test_custom_dataset_and_collate_fn():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return i * i

    loader = DataLoader(Squares(), batch_size=2, collate_fn=lambda b: sum(b))
    assert list(loader) == [0 + 1, 4 + 9, 16]
    assert [b.tolist() for b in DataLoader(Squares(), batch_size=3)] == [[0, 1, 4], [9, 16]]
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__."):
        Dataset()[0]


def _mnist(*args):
    script = ROOT / "python" / "examples" / "mnist.py"
    return subprocess.run([sys.executable, str(script), "--data", str(ROOT / "data" / "mnist_5k.csv.gz"), *args],
                          capture_output=True, text=True, timeout=300, cwd="/")


def test_mnist_example_trains_above_chance():
    """The example for 2 epochs on a random 2000 of its 5000 digits (1600 train / 400 test; about
    10 s): it runs as a script and learns (10 classes: chance is 10%). The full run (3 epochs,
    >= 95%) is left to CI: `python python/examples/mnist.py --min-accuracy 0.95`."""
    out = _mnist("--epochs", "2", "--limit", "2000", "--min-accuracy", "0.5")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["epoch 1", "epoch 2"]
    assert all("loss" in line and "test accuracy" in line and line.endswith(" s") for line in lines)


def test_mnist_example_min_accuracy_sets_the_exit_status():
    out = _mnist("--epochs", "0", "--limit", "100", "--min-accuracy", "0.5")
    assert out.returncode == 1 and "below --min-accuracy 0.5" in out.stderr
