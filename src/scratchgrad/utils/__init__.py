"""Utilities that sit beside the tensor engine, as ``torch.utils``: ``data`` for data loading,
``checkpoint`` for activation checkpointing."""

from scratchgrad.utils import checkpoint, data

__all__ = ["checkpoint", "data"]
