"""``torch.nn.modules.dropout``'s import path: its classes live in ``scratchgrad.nn.dropout``."""

from scratchgrad.nn.dropout import (
    AlphaDropout,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    FeatureAlphaDropout,
    _DropoutNd,
)

__all__ = [
    "_DropoutNd",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "AlphaDropout",
    "FeatureAlphaDropout",
]
