"""Toy 2-D classification problems, generated: XOR, two moons, two circles, spirals.

Each returns ``(X, y)``: ``X`` float32 of shape ``(n_samples, 2)``, ``y`` int64 class labels of
shape ``(n_samples,)``. ``noise`` is the standard deviation of Gaussian noise added to every
coordinate. ``seed`` makes the draw reproducible; without one, the library's generator is used,
so ``sg.manual_seed`` makes it reproducible too. ``moons`` and ``circles`` lay out their points as
scikit-learn's ``make_moons`` and ``make_circles`` do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scratchgrad import backend
from scratchgrad.creation import from_numpy

if TYPE_CHECKING:
    from scratchgrad.tensor import Tensor

# How far each spiral arm winds around the origin, in radians, from its centre to its end.
SPIRAL_ANGLE = 3 * np.pi


def xor(
    n_samples: int = 4, *, noise: float = 0.0, seed: int | None = None
) -> tuple[Tensor, Tensor]:
    """The XOR problem: the unit square's corners, labelled 1 where exactly one coordinate is 1.

    By default the four points of the truth table, in its order. With more samples the corners
    repeat in the same cycle, so the classes stay balanced; ``noise`` jitters every point.

    >>> X, y = xor()
    >>> X.tolist(), y.tolist()
    ([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], [0, 1, 1, 0])
    """
    _check(n_samples, noise)
    corners = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float64)
    which = np.arange(n_samples) % 4
    X, y = corners[which], np.array([0, 1, 1, 0])[which]
    return _finish(X, y, noise, shuffle=False, rng=_rng(seed))


def moons(
    n_samples: int = 100, *, noise: float = 0.0, seed: int | None = None, shuffle: bool = True
) -> tuple[Tensor, Tensor]:
    """Two interleaving half circles, as ``sklearn.datasets.make_moons``.

    Class 0 is the upper half of the unit circle, class 1 the lower half shifted to ``(1, 0.5)``;
    class 0 gets ``n_samples // 2`` points, class 1 the rest, evenly spaced along each arc.

    >>> X, y = moons(200, noise=0.1, seed=0)
    >>> X.shape, y.shape, y.sum().item()
    (scratchgrad.Size([200, 2]), scratchgrad.Size([200]), 100)
    """
    _check(n_samples, noise)
    n_out = n_samples // 2
    n_in = n_samples - n_out
    t_out, t_in = np.linspace(0, np.pi, n_out), np.linspace(0, np.pi, n_in)
    outer = np.stack([np.cos(t_out), np.sin(t_out)], axis=1)
    inner = np.stack([1 - np.cos(t_in), 0.5 - np.sin(t_in)], axis=1)
    y = np.repeat([0, 1], [n_out, n_in])
    return _finish(np.concatenate([outer, inner]), y, noise, shuffle, _rng(seed))


def circles(
    n_samples: int = 100,
    *,
    factor: float = 0.8,
    noise: float = 0.0,
    seed: int | None = None,
    shuffle: bool = True,
) -> tuple[Tensor, Tensor]:
    """A circle inside another, as ``sklearn.datasets.make_circles``.

    Class 0 is the unit circle, class 1 the circle of radius ``factor`` (in ``[0, 1)``); class 0
    gets ``n_samples // 2`` points, class 1 the rest, evenly spaced around each circle.

    >>> X, y = circles(100, factor=0.5, seed=0)
    >>> radius = X.pow(2).sum(1).sqrt()
    >>> sorted(set(round(r, 4) for r in radius.tolist()))
    [0.5, 1.0]
    """
    _check(n_samples, noise)
    if not 0 <= factor < 1:
        raise ValueError(f"circles: factor must be in [0, 1), got {factor}")
    n_out = n_samples // 2
    n_in = n_samples - n_out
    t_out = np.linspace(0, 2 * np.pi, n_out, endpoint=False)  # endpoint=False: no point twice
    t_in = np.linspace(0, 2 * np.pi, n_in, endpoint=False)
    outer = np.stack([np.cos(t_out), np.sin(t_out)], axis=1)
    inner = factor * np.stack([np.cos(t_in), np.sin(t_in)], axis=1)
    y = np.repeat([0, 1], [n_out, n_in])
    return _finish(np.concatenate([outer, inner]), y, noise, shuffle, _rng(seed))


def spirals(
    n_samples: int = 100,
    *,
    n_classes: int = 2,
    noise: float = 0.0,
    seed: int | None = None,
    shuffle: bool = True,
) -> tuple[Tensor, Tensor]:
    """Interleaved spiral arms, one per class: a problem no straight line comes close to solving.

    Arm ``k`` starts near the origin at angle ``2 pi k / n_classes`` and winds outwards to radius 1,
    turning through ``SPIRAL_ANGLE`` (one and a half turns): a point at radius ``r`` has angle
    ``2 pi k / n_classes + SPIRAL_ANGLE * r``. The samples are shared out as evenly as possible
    (the first arms get one more when they do not divide), evenly spaced along each arm.

    >>> X, y = spirals(300, n_classes=3, noise=0.05, seed=0)
    >>> X.shape, [(y == k).sum().item() for k in range(3)]
    (scratchgrad.Size([300, 2]), [100, 100, 100])
    """
    _check(n_samples, noise)
    if n_classes < 1:
        raise ValueError(f"spirals: n_classes must be at least 1, got {n_classes}")
    counts = [n_samples // n_classes + (k < n_samples % n_classes) for k in range(n_classes)]
    y = np.repeat(np.arange(n_classes), counts)
    # Radii (i + 1) / count in (0, 1]: no arm has a point exactly at the origin, where they meet.
    radius = np.concatenate([np.arange(1, count + 1) / count for count in counts])
    angle = 2 * np.pi * y / n_classes + SPIRAL_ANGLE * radius
    X = radius[:, None] * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    return _finish(X, y, noise, shuffle, _rng(seed))


def _check(n_samples: int, noise: float) -> None:
    if n_samples < 0:
        raise ValueError(f"n_samples must be non-negative, got {n_samples}")
    if noise < 0:
        raise ValueError(f"noise must be non-negative, got {noise}")


def _rng(seed: int | None) -> np.random.Generator:
    return np.random.default_rng(seed) if seed is not None else backend.default_generator.rng


def _finish(
    X: np.ndarray, y: np.ndarray, noise: float, shuffle: bool, rng: np.random.Generator
) -> tuple[Tensor, Tensor]:
    """Shuffle, then add noise (scikit-learn's order), then convert to float32 and int64 tensors."""
    if shuffle:
        order = rng.permutation(len(y))
        X, y = X[order], y[order]
    if noise:
        X = X + rng.normal(scale=noise, size=X.shape)
    return from_numpy(X.astype(np.float32)), from_numpy(y.astype(np.int64))
