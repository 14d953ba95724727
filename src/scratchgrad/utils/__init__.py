"""Utilities that sit beside the tensor engine, as ``torch.utils``: ``data`` for data loading."""

from scratchgrad.utils import data

__all__ = ["data"]
