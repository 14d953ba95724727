"""``Chi2``, importable as ``torch.distributions.chi2`` (PyTorch's module
name); it lives in ``gamma.py``."""

from scratchgrad.distributions.gamma import Chi2

__all__ = ["Chi2"]
