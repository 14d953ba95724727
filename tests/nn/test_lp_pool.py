"""``lp_pool1d/2d/3d`` and ``LPPool1d/2d/3d`` against PyTorch's: values and gradients (NaN where
PyTorch's are) over norms, kernels, strides and ``ceil_mode``, gradcheck, and the layers'
repr."""

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from oracle import assert_doc_examples_run, check_against_torch

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import functional as F

CASES = list(
    itertools.product((1, 2, 3), (1, 2, 3.5), ((2, None, False), (3, 2, True), (2, 1, False)))
)


@pytest.mark.parametrize("dims, p, window", CASES, ids=str)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_lp_pool_matches_torch(dims, p, window, dtype):
    kernel, stride, ceil_mode = window
    name = f"lp_pool{dims}d"
    # positive entries: a negative one to the power 3.5 is NaN in both, but NaN != NaN
    x = np.random.default_rng(dims).uniform(0.1, 2.0, (2, 3, *(7, 6, 5)[:dims]))
    check_against_torch(
        lambda x: getattr(F, name)(x, p, kernel, stride, ceil_mode),
        lambda x: getattr(TF, name)(x, p, kernel, stride, ceil_mode),
        [x],
        dtype,
    )


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("p", [float("inf"), -float("inf")])
def test_infinite_norms_are_max_pools_of_the_absolute_values_as_torch(dims, p):
    name = f"lp_pool{dims}d"
    x = np.random.default_rng(dims).standard_normal((2, 3, *(7, 6, 5)[:dims]))
    check_against_torch(
        lambda x: getattr(F, name)(x, p, 3, 2, True),
        lambda x: getattr(TF, name)(x, p, 3, 2, True),
        [x],
    )


def test_gradcheck_and_gradgradcheck():
    x = sg.tensor(np.random.default_rng(0).uniform(0.5, 2.0, (1, 2, 4, 4)), requires_grad=True)
    assert sg.autograd.gradcheck(lambda x: F.lp_pool2d(x, 3, 2), (x,))
    assert sg.autograd.gradgradcheck(lambda x: F.lp_pool2d(x, 3, 2), (x,))


def test_the_layers_match_torchs():
    for dims in (1, 2, 3):
        ours = getattr(nn, f"LPPool{dims}d")(2, 2, 1, True)
        theirs = getattr(torch.nn, f"LPPool{dims}d")(2, 2, 1, True)
        assert repr(ours) == repr(theirs)
        x = np.random.default_rng(1).uniform(0.1, 1.0, (1, 2, *(4, 5, 3)[:dims]))
        np.testing.assert_allclose(ours(sg.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy())


def test_doc_examples_run():
    for function in (F.lp_pool1d, F.lp_pool2d, F.lp_pool3d):
        assert_doc_examples_run(function, vars(F))
    for layer in (nn.LPPool1d, nn.LPPool2d, nn.LPPool3d):
        assert_doc_examples_run(layer)
