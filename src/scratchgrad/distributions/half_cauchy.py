"""``HalfCauchy``, importable as ``torch.distributions.half_cauchy`` (PyTorch's module
name); it lives in ``transformed_distribution.py``."""

from scratchgrad.distributions.transformed_distribution import HalfCauchy

__all__ = ["HalfCauchy"]
