"""``Multinomial``, importable as ``torch.distributions.multinomial`` (PyTorch's module
name); it lives in ``binomial.py``."""

from scratchgrad.distributions.binomial import Multinomial

__all__ = ["Multinomial"]
