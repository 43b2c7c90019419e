"""``DataLoader`` and the default collate function."""

import collections.abc
import re

from ... import _C
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler, _draw_seed

Tensor = _C.Tensor
_f = _C._torch_functions

_collate_err = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
_np_str_obj_array_pattern = re.compile(r"[SaUO]")


def _numpy():
    try:
        import numpy
    except ImportError:  # pragma: no cover
        return None
    return numpy


def default_convert(data):
    """Numpy arrays (not of strings) to tensors, recursively through mappings and sequences."""
    np = _numpy()
    if isinstance(data, Tensor):
        return data
    if np is not None and isinstance(data, np.ndarray):
        if _np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return _C.from_numpy(data)
    if np is not None and isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return _C.tensor(data.item())
    if isinstance(data, collections.abc.Mapping):
        return type(data)({k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return type(data)([default_convert(d) for d in data]) if not isinstance(data, list) else \
            [default_convert(d) for d in data]
    return data


def default_collate(batch):
    """Stacks a list of samples into a batch: tensors with ``torch.stack``, numpy arrays and
    numbers into tensors (floats as float64), strings kept as a list, and mappings, named
    tuples and sequences collated field by field (a tuple becomes a list, as in PyTorch)."""
    elem = batch[0]
    elem_type = type(elem)
    np = _numpy()
    if isinstance(elem, Tensor):
        return _f["stack"](list(batch), 0)
    if np is not None and isinstance(elem, np.ndarray):
        if _np_str_obj_array_pattern.search(elem.dtype.str) is not None:
            raise TypeError(_collate_err.format(elem.dtype))
        return default_collate([_C.from_numpy(np.ascontiguousarray(b)) for b in batch])
    if np is not None and isinstance(elem, np.generic):
        if isinstance(elem, (np.str_, np.bytes_)):
            return batch
        return _C.tensor([b.item() for b in batch], dtype=_numpy_dtype(elem))
    if isinstance(elem, bool):
        return _C.tensor(batch)
    if isinstance(elem, float):
        # Through numpy: torchrs's torch.tensor(floats, dtype=float64) rounds to float32 first.
        np_ = _numpy()
        if np_ is not None:
            return _C.from_numpy(np_.array(batch, dtype=np_.float64))
        return _C.tensor(batch, dtype=_C.float64)
    if isinstance(elem, int):
        return _C.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        try:
            return elem_type({key: default_collate([d[key] for d in batch]) for key in elem})
        except TypeError:
            return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            return elem_type([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(_collate_err.format(elem_type))


def _numpy_dtype(elem):
    name = elem.dtype.name
    return {"float64": _C.float64, "float32": _C.float32, "float16": _C.float16, "int64": _C.int64,
            "int32": _C.int32, "int16": _C.int16, "int8": _C.int8, "uint8": _C.uint8, "bool": _C.bool}.get(name)


def get_worker_info():
    """None: batches are loaded in the main process."""
    return None


class _MapIter:
    def __init__(self, loader):
        self._loader = loader
        self._sampler_iter = iter(loader._index_sampler)
        # PyTorch draws a base seed for workers from the loader's generator when an iterator is
        # made; drawing it here keeps the shuffle order of a seeded generator the same.
        self._base_seed = _draw_seed(loader.generator)

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def __next__(self):
        index = next(self._sampler_iter)
        loader = self._loader
        dataset = loader.dataset
        if loader._auto_collation:
            getitems = getattr(dataset, "__getitems__", None)
            data = getitems(index) if callable(getitems) else [dataset[i] for i in index]
        else:
            data = dataset[index]
        return loader.collate_fn(data)


class _IterableIter:
    def __init__(self, loader):
        self._loader = loader
        self._it = iter(loader.dataset)
        self._base_seed = _draw_seed(loader.generator)

    def __iter__(self):
        return self

    def __next__(self):
        loader = self._loader
        if not loader._auto_collation:
            return loader.collate_fn(next(self._it))
        batch = []
        for _ in range(loader.batch_size):
            try:
                batch.append(next(self._it))
            except StopIteration:
                break
        if not batch or (loader.drop_last and len(batch) < loader.batch_size):
            raise StopIteration
        return loader.collate_fn(batch)


class DataLoader:
    """Batches of a dataset: ``batch_size`` samples at a time in the order of ``sampler``
    (``RandomSampler`` with ``shuffle=True``, drawing from ``generator``), merged by
    ``collate_fn`` (``default_collate``). Batches are loaded in the calling process whatever
    ``num_workers`` is (the order is the same as PyTorch's with workers)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.persistent_workers = persistent_workers
        if isinstance(dataset, IterableDataset):
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None and not isinstance(dataset, IterableDataset):
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and sampler is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None or (isinstance(self.dataset, IterableDataset)
                                                  and self.batch_size is not None)

    @property
    def _index_sampler(self):
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def __iter__(self):
        if isinstance(self.dataset, IterableDataset):
            return _IterableIter(self)
        return _MapIter(self)

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else -(-length // self.batch_size)
            return length
        return len(self._index_sampler)
