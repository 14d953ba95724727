"""Small data sets, all offline: shipped (the 8x8 digits, a Shakespeare text), generated
(XOR, moons, circles, spirals), or read from files the user already has (MNIST's IDX files).

>>> from scratchgrad import datasets
>>> X, y = datasets.moons(100, noise=0.1, seed=0)
>>> images, labels = datasets.load_digits()
>>> X.shape, images.shape
(scratchgrad.Size([100, 2]), scratchgrad.Size([1797, 1, 8, 8]))
"""

from scratchgrad.datasets.digits import load_digits
from scratchgrad.datasets.mnist import MNIST, load_mnist, read_idx
from scratchgrad.datasets.shakespeare import load_shakespeare
from scratchgrad.datasets.synthetic import circles, moons, spirals, xor

__all__ = [
    "MNIST",
    "circles",
    "load_digits",
    "load_mnist",
    "load_shakespeare",
    "moons",
    "read_idx",
    "spirals",
    "xor",
]
