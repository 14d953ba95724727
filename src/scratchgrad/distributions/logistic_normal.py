"""``LogisticNormal``, importable as ``torch.distributions.logistic_normal`` (PyTorch's module
name); it lives in ``transformed_distribution.py``."""

from scratchgrad.distributions.transformed_distribution import LogisticNormal

__all__ = ["LogisticNormal"]
