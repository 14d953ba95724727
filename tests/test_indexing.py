"""Tensor indexing (``x[index]`` and ``x[index] = value``) against PyTorch, where NumPy's
reading of an index differs from PyTorch's: several Ellipses, bool scalars beside ints, masks
after an int, and the value written by setitem (its shape and its dtype)."""

import numpy as np
import pytest
import torch

import scratchgrad as sg


def _both(make_index, write=None):
    """``x[index]`` (or ``x`` after ``x[index] = write(m)``) in both libraries, with the
    gradient of a weighted sum of the read; each as ("ok", values, grad) or the error's type."""
    results = []
    for m in (torch, sg):
        x = m.arange(120, dtype=m.float64).reshape(4, 5, 6).requires_grad_(write is None)
        try:
            if write is None:
                out = x[make_index(m)]
                weights = m.arange(out.numel(), dtype=m.float64).reshape(out.shape) + 1
                (out * weights).sum().backward()
                results.append(("ok", out.detach().numpy(), x.grad.numpy()))
            else:
                x[make_index(m)] = write(m)
                results.append(("ok", x.numpy(), None))
        except Exception as error:  # noqa: BLE001 (the error type is compared)
            results.append(type(error).__name__)
    return results


def _assert_same(make_index, write=None):
    expected, got = _both(make_index, write)
    assert type(got) is type(expected), (expected, got)
    if isinstance(expected, str):
        assert got == expected
        return
    for want, have in zip(expected[1:], got[1:]):
        if want is not None:
            assert have.shape == want.shape
            np.testing.assert_array_equal(have, want)


@pytest.mark.parametrize(
    "index",
    [
        (Ellipsis, Ellipsis),
        (Ellipsis, 0, Ellipsis),  # PyTorch: x[..., 0]
        (0, Ellipsis, 0, Ellipsis),
        (Ellipsis, 1, None, Ellipsis),
        (Ellipsis, Ellipsis, slice(None)),
        (None, Ellipsis, Ellipsis),
        (Ellipsis, [1, 1], Ellipsis),
        (Ellipsis, Ellipsis, 0),  # an IndexError in both
        (slice(None),) * 4,
    ],
    ids=str,
)
def test_several_ellipses_as_pytorch(index):
    _assert_same(lambda m: index)


@pytest.mark.parametrize(
    "index",
    [
        (0, slice(None), True),  # PyTorch: (5, 1, 6), NumPy: (1, 5, 6)
        (-1, slice(1, None, 2), True),
        (0, Ellipsis, True),
        (0, slice(None), False),
        (True, slice(None), 0),
        (0, None, True, slice(None)),
        (0, slice(None), True, [1, 2]),
        (0, slice(None), False, [1, 2]),
    ],
    ids=str,
)
def test_a_bool_scalar_beside_an_int_as_pytorch(index):
    _assert_same(lambda m: index)
    _assert_same(lambda m: tuple(m.tensor(i) if isinstance(i, bool) else i for i in index))


@pytest.mark.parametrize(
    "index", [(0, slice(None), [True, False] * 2), (-1, None, [True, False] * 2)], ids=str
)
def test_a_mask_after_an_int_is_checked_against_its_dims(index):
    def make(m):
        return tuple(m.tensor(i) if isinstance(i, list) else i for i in index)

    _assert_same(make)
    with pytest.raises(IndexError, match=r"mask \[4\]"):
        sg.zeros(4, 5, 6)[make(sg)]
