"""``Dirichlet``, importable as ``torch.distributions.dirichlet`` (PyTorch's module
name); it lives in ``gamma.py``."""

from scratchgrad.distributions.gamma import Dirichlet

__all__ = ["Dirichlet"]
