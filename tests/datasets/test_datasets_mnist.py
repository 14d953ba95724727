"""read_idx, MNIST and load_mnist on small IDX files written here, raw and gzipped."""

import gzip
import struct

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad.datasets import MNIST, load_mnist, read_idx
from scratchgrad.utils.data import DataLoader

TYPE_BYTES = {"u1": 0x08, "i1": 0x09, "i2": 0x0B, "i4": 0x0C, "f4": 0x0D, "f8": 0x0E}


def idx_bytes(array):
    """The IDX encoding of ``array``, written out field by field from the format's description."""
    header = bytes([0, 0, TYPE_BYTES[array.dtype.str[1:]], array.ndim])
    sizes = b"".join(struct.pack(">I", size) for size in array.shape)
    return header + sizes + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write(path, data, gz=False):
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def write_split(folder, split, images, labels, gz=False):
    folder.mkdir(parents=True, exist_ok=True)
    suffix = ".gz" if gz else ""
    write(folder / f"{split}-images-idx3-ubyte{suffix}", idx_bytes(images), gz)
    write(folder / f"{split}-labels-idx1-ubyte{suffix}", idx_bytes(labels), gz)


def fake_mnist(n, rows=5, cols=7, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, rows, cols), dtype=np.uint8)
    images[0, 0, 0], images[0, 0, 1] = 0, 255  # the ends of the range are in the data
    return images, rng.integers(0, 10, size=n, dtype=np.uint8)


@pytest.mark.parametrize("gz", [False, True], ids=["raw", "gz"])
@pytest.mark.parametrize("dtype", ["u1", "i1", "i2", "i4", "f4", "f8"])
def test_read_idx_round_trip(tmp_path, dtype, gz):
    rng = np.random.default_rng(1)
    array = (rng.standard_normal((3, 4, 2)) * 100).astype(dtype)
    out = read_idx(write(tmp_path / "data.idx", idx_bytes(array), gz))
    assert out.dtype == np.dtype(dtype) and out.dtype.isnative and out.flags.writeable
    np.testing.assert_array_equal(out, array)


def test_read_idx_known_bytes(tmp_path):
    # Two big-endian int16 values, 258 = 0x0102 and -2 = 0xFFFE, in a 1-D file of size 2.
    data = bytes([0, 0, 0x0B, 1, 0, 0, 0, 2, 0x01, 0x02, 0xFF, 0xFE])
    assert read_idx(write(tmp_path / "a", data)).tolist() == [258, -2]
    empty = read_idx(write(tmp_path / "b", bytes([0, 0, 0x08, 3, 0, 0, 0, 0] + [0, 0, 0, 28] * 2)))
    assert empty.shape == (0, 28, 28)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "truncated"),
        (bytes([0, 0, 8]), "truncated"),
        (bytes([0x1F, 0x8C, 0, 0, 1, 2, 3, 4]), "bad magic number 0x1F8C0000"),
        (bytes([0, 1, 8, 1, 0, 0, 0, 0]), "bad magic number"),
        (bytes([0, 0, 0x07, 1, 0, 0, 0, 0]), "bad magic number 0x00000701"),
        (bytes([0, 0, 8, 3, 0, 0, 0, 2, 0, 0]), "truncated header"),
        (bytes([0, 0, 8, 1, 0, 0, 0, 3, 1, 2]), "truncated.*needs 11 bytes, found 10"),
        (bytes([0, 0, 8, 1, 0, 0, 0, 1, 1, 2]), "extra bytes"),
        # 65536**4 = 2**64 elements: in int64 the product wraps around to 0, which this
        # empty data region would have matched.
        (
            bytes([0, 0, 8, 4] + [0, 1, 0, 0] * 4),
            r"dimensions \(65536, 65536, 65536, 65536\).*overflows",
        ),
        (bytes([0, 0, 0x0E, 2] + [0xFF] * 8), "overflows"),
    ],
    ids=[
        "empty",
        "short",
        "png-like",
        "nonzero",
        "bad-type",
        "header",
        "data",
        "extra",
        "wrapping-product",
        "huge-product",
    ],
)
@pytest.mark.parametrize("gz", [False, True], ids=["raw", "gz"])
def test_read_idx_errors(tmp_path, data, message, gz):
    path = write(tmp_path / "bad-idx", data, gz)
    with pytest.raises(ValueError, match=message) as info:
        read_idx(path)
    assert str(path) in str(info.value)


def test_read_idx_broken_gzip(tmp_path):
    whole = gzip.compress(idx_bytes(np.arange(1000, dtype=np.int32)))
    path = write(tmp_path / "cut.gz", whole[: len(whole) // 2])
    with pytest.raises(ValueError, match="gzip"):
        read_idx(path)


@pytest.mark.parametrize("gz", [False, True], ids=["raw", "gz"])
@pytest.mark.parametrize("train", [True, False])
def test_mnist_items(tmp_path, train, gz):
    images, labels = fake_mnist(6)
    write_split(tmp_path, "train" if train else "t10k", images, labels, gz)
    ds = MNIST(tmp_path, train=train)
    assert len(ds) == 6
    for i in range(6):
        image, label = ds[i]
        assert isinstance(image, sg.Tensor) and image.dtype == sg.float32
        assert image.shape == (1, 5, 7)
        np.testing.assert_allclose(image.numpy()[0], images[i] / 255, rtol=1e-6)
        assert type(label) is int and label == labels[i]
    first = ds[0][0].numpy()
    assert first[0, 0, 0] == 0.0 and first[0, 0, 1] == 1.0


def test_mnist_finds_torchvision_layout_and_mixed_compression(tmp_path):
    images, labels = fake_mnist(4)
    folder = tmp_path / "MNIST" / "raw"
    folder.mkdir(parents=True)
    write(folder / "train-images-idx3-ubyte.gz", idx_bytes(images), gz=True)
    write(folder / "train-labels-idx1-ubyte", idx_bytes(labels))
    np.testing.assert_array_equal(MNIST(str(tmp_path)).images, images)


def test_mnist_transform(tmp_path):
    images, labels = fake_mnist(3)
    write_split(tmp_path, "train", images, labels)
    ds = MNIST(tmp_path, transform=lambda image: image.reshape(-1))
    assert ds[2][0].shape == (35,)


def test_mnist_with_data_loader(tmp_path):
    images, labels = fake_mnist(10)
    write_split(tmp_path, "t10k", images, labels, gz=True)
    batches = list(DataLoader(MNIST(tmp_path, train=False), batch_size=4))
    assert [x.shape for x, _ in batches] == [(4, 1, 5, 7), (4, 1, 5, 7), (2, 1, 5, 7)]
    assert [y.dtype for _, y in batches] == [sg.int64] * 3
    np.testing.assert_array_equal(np.concatenate([y.numpy() for _, y in batches]), labels)


def test_load_mnist(tmp_path):
    images, labels = fake_mnist(8, rows=28, cols=28)
    write_split(tmp_path, "train", images, labels, gz=True)
    x, y = load_mnist(tmp_path)
    assert x.shape == (8, 1, 28, 28) and x.dtype == sg.float32
    assert y.shape == (8,) and y.dtype == sg.int64
    np.testing.assert_allclose(x.numpy()[:, 0], images / 255, rtol=1e-6)
    np.testing.assert_array_equal(y.numpy(), labels)


def test_missing_file_names_every_path_tried(tmp_path):
    images, labels = fake_mnist(2)
    write_split(tmp_path, "train", images, labels)
    with pytest.raises(FileNotFoundError) as info:
        MNIST(tmp_path, train=False)
    message = str(info.value)
    for path in [
        tmp_path / "t10k-images-idx3-ubyte",
        tmp_path / "t10k-images-idx3-ubyte.gz",
        tmp_path / "MNIST" / "raw" / "t10k-images-idx3-ubyte",
        tmp_path / "MNIST" / "raw" / "t10k-images-idx3-ubyte.gz",
    ]:
        assert str(path) in message


@pytest.mark.parametrize(
    ("images", "labels", "message"),
    [
        (np.zeros((3, 2, 2), np.uint8), np.zeros(4, np.uint8), "3 images.*but 4 labels"),
        (np.zeros((3, 4), np.uint8), np.zeros(3, np.uint8), r"shape \(n, rows, cols\)"),
        (np.zeros((3, 2, 2), np.float32), np.zeros(3, np.uint8), "uint8 images"),
        (np.zeros((3, 2, 2), np.uint8), np.zeros((3, 1), np.uint8), "uint8 labels"),
    ],
    ids=["count", "ndim", "dtype", "labels"],
)
def test_mnist_file_mismatch(tmp_path, images, labels, message):
    write_split(tmp_path, "train", images, labels)
    with pytest.raises(ValueError, match=message):
        MNIST(tmp_path)
