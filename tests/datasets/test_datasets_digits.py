"""The shipped 8x8 digits: facts about the UCI optdigits test set that the file must reproduce."""

import hashlib
import re
from importlib import resources

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad.datasets import load_digits

# Test-set class counts, digits 0..9, from the UCI data set's description.
UCI_TEST_COUNTS = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
# The first two pixel rows of the first image: the first line of optdigits.tes.
FIRST_IMAGE_ROWS = [[0, 0, 5, 13, 9, 1, 0, 0], [0, 0, 13, 15, 10, 15, 5, 0]]


@pytest.fixture(scope="module")
def digits():
    return load_digits()


def test_shapes_and_dtypes(digits):
    images, labels = digits
    assert isinstance(images, sg.Tensor) and isinstance(labels, sg.Tensor)
    assert images.shape == (1797, 1, 8, 8) and images.dtype == sg.float32
    assert labels.shape == (1797,) and labels.dtype == sg.int64


def test_known_facts(digits):
    images, labels = digits
    pixels = images.numpy() * 16
    np.testing.assert_array_equal(pixels, np.round(pixels))  # the counts 0..16, divided by 16
    assert pixels.min() == 0 and pixels.max() == 16
    assert images.numpy().max() == 1.0
    counts = np.bincount(labels.numpy(), minlength=10)
    assert counts.tolist() == UCI_TEST_COUNTS and counts.sum() == 1797
    assert labels.numpy()[:10].tolist() == list(range(10))
    np.testing.assert_array_equal(pixels[0, 0, :2], FIRST_IMAGE_ROWS)


def test_matches_the_checksums_in_the_licence_file(digits):
    notes = resources.files("scratchgrad.datasets").joinpath("DIGITS_LICENSE.txt").read_text()
    recorded = re.findall(r"\b[0-9a-f]{64}\b", notes)
    images, labels = digits
    pixels = (images.numpy()[:, 0] * 16).round().astype(np.uint8)
    computed = [
        hashlib.sha256(a.tobytes()).hexdigest() for a in (pixels, labels.numpy().astype(np.uint8))
    ]
    assert recorded == computed
    assert "CC BY 4.0" in notes and "Alpaydin" in notes


def test_identical_to_scikit_learn_when_installed(digits):
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    reference = sklearn_datasets.load_digits()
    images, labels = digits
    np.testing.assert_array_equal(images.numpy().reshape(1797, 64) * 16, reference.data)
    np.testing.assert_array_equal(labels.numpy(), reference.target)


def test_each_call_returns_fresh_tensors(digits):
    images, _ = load_digits()
    images.numpy()[0] = 7
    assert load_digits()[0].numpy()[0].max() <= 1
