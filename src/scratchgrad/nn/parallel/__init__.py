"""``scratchgrad.nn.parallel``: ``DistributedDataParallel``, as ``torch.nn.parallel``."""

from scratchgrad.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
