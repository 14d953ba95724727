"""``Pareto``, importable as ``torch.distributions.pareto`` (PyTorch's module
name); it lives in ``transformed_distribution.py``."""

from scratchgrad.distributions.transformed_distribution import Pareto

__all__ = ["Pareto"]
