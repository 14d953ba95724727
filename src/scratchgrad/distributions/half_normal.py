"""``HalfNormal``, importable as ``torch.distributions.half_normal`` (PyTorch's module
name); it lives in ``transformed_distribution.py``."""

from scratchgrad.distributions.transformed_distribution import HalfNormal

__all__ = ["HalfNormal"]
