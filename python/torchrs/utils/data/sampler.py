"""Samplers: the orders in which a DataLoader visits a dataset."""

from ... import _C

_f = _C._torch_functions


def _draw_seed(generator=None):
    """A 64-bit seed drawn as PyTorch draws one: ``empty((), int64).random_(generator=...)``."""
    t = _f["empty"]((), dtype=_C.int64)
    return int((t.random_() if generator is None else t.random_(generator=generator)).item())


class Sampler:
    """An iterable of dataset indices (or of lists of them, for a batch sampler)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation per pass (``randperm(n, generator=generator)``), or ``num_samples``
    draws with replacement. Without a generator each pass seeds a fresh one from a number drawn
    from the default generator, as PyTorch does."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.generator is None:
            generator = _C.Generator()
            generator.manual_seed(_draw_seed())
        else:
            generator = self.generator
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from _f["randint"](n, (32,), dtype=_C.int64, generator=generator).tolist()
            yield from _f["randint"](n, (self.num_samples % 32,), dtype=_C.int64, generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from _f["randperm"](n, generator=generator).tolist()
            yield from _f["randperm"](n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        perm = _f["randperm"](len(self.indices)) if self.generator is None else \
            _f["randperm"](len(self.indices), generator=self.generator)
        for i in perm.tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        self.weights = _C.tensor(list(weights), dtype=_C.float64) if not isinstance(weights, _C.Tensor) \
            else weights.double()
        if self.weights.dim() != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(self.weights.shape)}")
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        if self.generator is None:
            rand = self.weights.multinomial(self.num_samples, self.replacement)
        else:
            rand = self.weights.multinomial(self.num_samples, self.replacement, generator=self.generator)
        yield from iter(rand.tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler``; a short last one unless ``drop_last``."""

    def __init__(self, sampler, batch_size, drop_last):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
