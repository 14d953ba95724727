"""``Gumbel``, importable as ``torch.distributions.gumbel`` (PyTorch's module
name); it lives in ``transformed_distribution.py``."""

from scratchgrad.distributions.transformed_distribution import Gumbel

__all__ = ["Gumbel"]
