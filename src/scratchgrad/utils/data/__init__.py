"""Data loading, as ``torch.utils.data``: datasets, splits, and the loader that batches them.

>>> import scratchgrad as sg
>>> from scratchgrad.utils.data import DataLoader, TensorDataset
>>> loader = DataLoader(TensorDataset(sg.arange(10), -sg.arange(10)), batch_size=4)
>>> [x.tolist() for x, y in loader]
[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
"""

from scratchgrad.utils.data.dataloader import DataLoader, default_collate, default_convert
from scratchgrad.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from scratchgrad.utils.data.distributed import DistributedSampler
from scratchgrad.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from scratchgrad.utils.data.worker import WorkerInfo, get_worker_info

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
