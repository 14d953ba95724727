"""MNIST from IDX files already on disk (raw or gzipped); nothing is downloaded.

The IDX format (http://yann.lecun.com/exdb/mnist/): a 4-byte magic number ``0x00 0x00 T D``
where ``T`` is the element type and ``D`` the number of dimensions, then ``D`` big-endian uint32
sizes, then the elements, big-endian, in C order. Fashion-MNIST uses the same files and names.
"""

from __future__ import annotations

import gzip
import math
import os
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from scratchgrad.creation import from_numpy
from scratchgrad.utils.data import Dataset

if TYPE_CHECKING:
    from scratchgrad.tensor import Tensor

# The element type byte of the magic number, and the big-endian dtype it names.
IDX_DTYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
GZIP_MAGIC = b"\x1f\x8b"


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file, raw or gzipped, into a NumPy array of its type and shape.

    Whether the file is gzipped is read from its first bytes, not its name. Raises ``ValueError``
    naming the file for a bad magic number, truncated data or bytes left over after the data.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "labels-idx1-ubyte"
    >>> _ = path.write_bytes(bytes([0, 0, 0x08, 1, 0, 0, 0, 3, 7, 2, 1]))
    >>> read_idx(path)
    array([7, 2, 1], dtype=uint8)
    """
    raw = Path(path).read_bytes()
    if raw[:2] == GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as error:
            raise ValueError(f"read_idx: {path}: broken gzip data ({error})") from error
    if len(raw) < 4:
        raise ValueError(f"read_idx: {path}: truncated: {len(raw)} bytes, too short for a header")
    if raw[:2] != b"\x00\x00" or raw[2] not in IDX_DTYPES:
        raise ValueError(
            f"read_idx: {path}: bad magic number 0x{raw[:4].hex().upper()}; an IDX file starts "
            f"with 0x0000 then a type byte (one of {', '.join(f'0x{t:02X}' for t in IDX_DTYPES)}) "
            "and the number of dimensions"
        )
    dtype, ndim = IDX_DTYPES[raw[2]], raw[3]
    offset = 4 + 4 * ndim
    if len(raw) < offset:
        raise ValueError(
            f"read_idx: {path}: truncated header: {ndim} dimensions need {offset} bytes, "
            f"found {len(raw)}"
        )
    shape = tuple(np.frombuffer(raw, dtype=">u4", count=ndim, offset=4).tolist())
    count = math.prod(shape)  # Python ints: np.prod would wrap around silently in int64
    if count * dtype.itemsize > sys.maxsize:
        raise ValueError(
            f"read_idx: {path}: dimensions {shape} hold {count} elements of {dtype.name}, more "
            "than any array can (the product of the dimensions overflows)"
        )
    expected = offset + count * dtype.itemsize
    if len(raw) != expected:
        problem = "truncated" if len(raw) < expected else "has extra bytes"
        raise ValueError(
            f"read_idx: {path}: {problem}: shape {shape} of {dtype.name} needs {expected} bytes, "
            f"found {len(raw)}"
        )
    data = np.frombuffer(raw, dtype=dtype, count=count, offset=offset).reshape(shape)
    return data.astype(dtype.newbyteorder("="))  # a writable copy in the machine's byte order


class MNIST(Dataset):
    """The MNIST digits from the four IDX files in ``root``, as ``torchvision.datasets.MNIST``.

    Reads ``train-images-idx3-ubyte`` and ``train-labels-idx1-ubyte`` (or the ``t10k-`` pair when
    ``train=False``), each raw or with ``.gz`` appended, from ``root`` or from ``root/MNIST/raw``
    (where torchvision keeps them). Works for Fashion-MNIST's files too. ``dataset[i]`` is
    ``(image, label)``: the image a float32 tensor of shape ``(1, rows, cols)`` in [0, 1],
    passed through ``transform`` if given, and the label an int. ``images`` and ``labels`` hold
    the files' uint8 arrays. For training, ``load_mnist`` gives the whole set as two tensors,
    which a ``TensorDataset`` batches much faster than this class item by item.

    >>> train = MNIST("~/data/mnist")  # doctest: +SKIP
    >>> image, label = train[0]  # doctest: +SKIP
    >>> image.shape, label  # doctest: +SKIP
    ((1, 28, 28), 5)
    """

    def __init__(
        self,
        root: str | os.PathLike,
        train: bool = True,
        transform: Callable[[Tensor], object] | None = None,
    ) -> None:
        self.images, self.labels = _read_pair(root, train)
        self.train = train
        self.transform = transform

    def __getitem__(self, index: int) -> tuple[object, int]:
        image = from_numpy(self.images[index][None].astype(np.float32) / np.float32(255))
        if self.transform is not None:
            image = self.transform(image)
        return image, int(self.labels[index])

    def __len__(self) -> int:
        return len(self.labels)


def load_mnist(root: str | os.PathLike, train: bool = True) -> tuple[Tensor, Tensor]:
    """MNIST as two tensors, ``(images, labels)``, read from the IDX files as ``MNIST`` reads them.

    ``images`` is float32 of shape ``(n, 1, rows, cols)`` scaled from 0..255 to [0, 1], ``labels``
    int64 of shape ``(n,)``: ready for ``TensorDataset`` and the ``DataLoader``'s fast path.

    >>> images, labels = load_mnist("~/data/mnist", train=False)  # doctest: +SKIP
    >>> images.shape, labels.shape  # doctest: +SKIP
    ((10000, 1, 28, 28), (10000,))
    """
    images, labels = _read_pair(root, train)
    images = images[:, None].astype(np.float32) / np.float32(255)
    return from_numpy(images), from_numpy(labels.astype(np.int64))


def _read_pair(root: str | os.PathLike, train: bool) -> tuple[np.ndarray, np.ndarray]:
    """The images and labels of one split, checked to be uint8 and to match in number."""
    split = "train" if train else "t10k"
    images_path = _find(root, f"{split}-images-idx3-ubyte")
    labels_path = _find(root, f"{split}-labels-idx1-ubyte")
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.ndim != 3 or images.dtype != np.uint8:
        raise ValueError(
            f"MNIST: {images_path}: expected uint8 images of shape (n, rows, cols), "
            f"got {images.dtype.name} of shape {images.shape}"
        )
    if labels.ndim != 1 or labels.dtype != np.uint8:
        raise ValueError(
            f"MNIST: {labels_path}: expected uint8 labels of shape (n,), "
            f"got {labels.dtype.name} of shape {labels.shape}"
        )
    if len(images) != len(labels):
        raise ValueError(
            f"MNIST: {len(images)} images in {images_path} "
            f"but {len(labels)} labels in {labels_path}"
        )
    return images, labels


def _find(root: str | os.PathLike, name: str) -> Path:
    """The first that exists of ``root/name``, ``root/name.gz``, and both in ``root/MNIST/raw``."""
    root = Path(root).expanduser()
    tried = [
        folder / (name + suffix)
        for folder in (root, root / "MNIST" / "raw")
        for suffix in ("", ".gz")
    ]
    for path in tried:
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"MNIST: no {name} file found (raw or .gz); tried: {', '.join(map(str, tried))}. "
        "scratchgrad downloads nothing: put the IDX files there first."
    )
