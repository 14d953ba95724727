"""``scratchgrad.nn.parallel``: ``DataParallel`` (``data_parallel``) and
``DistributedDataParallel``, as ``torch.nn.parallel``."""

from scratchgrad.nn.parallel.data_parallel import DataParallel, data_parallel
from scratchgrad.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
