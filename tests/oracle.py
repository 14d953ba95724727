"""Comparing scratchgrad with PyTorch, the oracle: one tolerance table for every test."""

import numpy as np
import torch

# (rtol, atol): float64 tight, float32 loose
TOLERANCE = {"float64": (1e-7, 1e-9), "float32": (1e-4, 1e-5)}


def assert_close(actual, expected, dtype="float64", what=""):
    """``actual`` (a scratchgrad tensor or an array) equals ``expected`` (a torch tensor or an
    array) in shape, and in value within ``dtype``'s tolerance."""
    rtol, atol = TOLERANCE[dtype]
    if isinstance(expected, torch.Tensor):
        expected = expected.detach().numpy()
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)
