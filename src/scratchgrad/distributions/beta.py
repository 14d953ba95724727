"""``Beta``, importable as ``torch.distributions.beta`` (PyTorch's module
name); it lives in ``gamma.py``."""

from scratchgrad.distributions.gamma import Beta

__all__ = ["Beta"]
