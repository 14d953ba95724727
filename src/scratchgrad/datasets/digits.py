"""The 8x8 handwritten digits (UCI optdigits test set), shipped inside the package.

Source, licence (CC BY 4.0) and how ``digits.npz`` was made: ``DIGITS_LICENSE.txt`` next to it.
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

import numpy as np

from scratchgrad.creation import from_numpy

if TYPE_CHECKING:
    from scratchgrad.tensor import Tensor


def load_digits() -> tuple[Tensor, Tensor]:
    """The 1,797 handwritten digits: ``(images, labels)``.

    ``images`` is float32 of shape ``(1797, 1, 8, 8)`` (channels first, as a conv layer wants),
    scaled from the stored pixel counts 0..16 to [0, 1]; ``labels`` is int64 of shape ``(1797,)``,
    the digits 0..9. Each call reads the file afresh, so the tensors are the caller's own.

    >>> images, labels = load_digits()
    >>> images.shape, labels.shape, labels[:5].tolist()
    (scratchgrad.Size([1797, 1, 8, 8]), scratchgrad.Size([1797]), [0, 1, 2, 3, 4])
    """
    with (
        resources.files(__package__).joinpath("digits.npz").open("rb") as file,
        np.load(file, allow_pickle=False) as data,
    ):
        images, labels = data["images"], data["labels"]
    images = images[:, None].astype(np.float32) / np.float32(16)
    return from_numpy(images), from_numpy(labels.astype(np.int64))
