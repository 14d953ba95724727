"""Data loading, as ``torch.utils.data``: datasets, splits, and the loader that batches them.

>>> import scratchgrad as sg
>>> from scratchgrad.utils.data import DataLoader, TensorDataset
>>> loader = DataLoader(TensorDataset(sg.arange(10), -sg.arange(10)), batch_size=4)
>>> [x.tolist() for x, y in loader]
[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
"""

from scratchgrad.utils.data.dataloader import DataLoader, default_collate
from scratchgrad.utils.data.dataset import Dataset, Subset, TensorDataset, random_split

__all__ = ["DataLoader", "Dataset", "Subset", "TensorDataset", "default_collate", "random_split"]
