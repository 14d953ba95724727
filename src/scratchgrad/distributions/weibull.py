"""``Weibull``, importable as ``torch.distributions.weibull`` (PyTorch's module
name); it lives in ``transformed_distribution.py``."""

from scratchgrad.distributions.transformed_distribution import Weibull

__all__ = ["Weibull"]
