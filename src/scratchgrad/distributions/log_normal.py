"""``LogNormal``, importable as ``torch.distributions.log_normal`` (PyTorch's module
name); it lives in ``transformed_distribution.py``."""

from scratchgrad.distributions.transformed_distribution import LogNormal

__all__ = ["LogNormal"]
