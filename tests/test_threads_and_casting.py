"""``set_num_threads``/``get_num_threads``, ``use_deterministic_algorithms`` and its getters,
and ``can_cast``, as PyTorch's (scripts call them before anything else)."""

import itertools

import pytest
import torch

import scratchgrad as sg

DTYPES = [
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
]


@pytest.mark.parametrize("pair", list(itertools.product(DTYPES, repeat=2)), ids=str)
def test_can_cast_matches_torch(pair):
    a, b = pair
    assert sg.can_cast(getattr(sg, a), getattr(sg, b)) == torch.can_cast(
        getattr(torch, a), getattr(torch, b)
    )


def test_set_num_threads_limits_blas_and_get_reads_it():
    before = sg.get_num_threads()
    try:
        sg.set_num_threads(1)
        assert sg.get_num_threads() == 1
    finally:
        sg.set_num_threads(before)
    with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
        sg.set_num_threads(0)


def test_use_deterministic_algorithms_is_recorded():
    try:
        sg.use_deterministic_algorithms(True, warn_only=True)
        assert sg.are_deterministic_algorithms_enabled()
        assert sg.is_deterministic_algorithms_warn_only_enabled()
    finally:
        sg.use_deterministic_algorithms(False)
    assert not sg.are_deterministic_algorithms_enabled()
