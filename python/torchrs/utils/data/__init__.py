"""torch.utils.data: datasets, samplers and the DataLoader."""

from .dataloader import DataLoader, default_collate, default_convert, get_worker_info  # noqa: F401
from .dataset import (ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset,  # noqa: F401
                      random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,  # noqa: F401
                      WeightedRandomSampler)
