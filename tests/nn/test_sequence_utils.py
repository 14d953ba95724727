"""Sequence utilities against PyTorch: pad_sequence, F.pad's reflect/replicate/circular modes
beyond the op table (2-D and 3-D padding, cropping, errors), and conv layers' padding_mode."""

import numpy as np
import pytest
import torch
from oracle import check_against_torch, module_pair

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import functional as F
from scratchgrad.nn.utils.rnn import pad_sequence


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch_with_gradients(batch_first, padding_side):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((n, 2, 3)) for n in (3, 5, 1)]
    kwargs = {"batch_first": batch_first, "padding_value": -1.5, "padding_side": padding_side}
    check_against_torch(
        lambda *xs: pad_sequence(xs, **kwargs),
        lambda *xs: torch.nn.utils.rnn.pad_sequence(xs, **kwargs),
        arrays,
    )


def test_pad_sequence_of_token_ids_and_errors():
    ids = pad_sequence([sg.tensor([1, 2, 3]), sg.tensor([4])], padding_value=9)
    assert ids.dtype == sg.int64 and ids.tolist() == [[1, 4], [2, 9], [3, 9]]
    with pytest.raises(RuntimeError, match="same shape after their first dim"):
        pad_sequence([sg.zeros(2, 3), sg.zeros(2, 4)])


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize(
    ("shape", "pad"),
    [((2, 5), (-1, 2)), ((1, 2, 4, 5), (2, 1, -1, 3)), ((3, 4, 3, 5), (1, 2, 0, 2)),
     ((1, 2, 3, 4, 5), (1, 1, 2, 0, 0, 2))],
)  # fmt: skip
def test_pad_modes_match_torch_in_two_and_three_dims(mode, shape, pad):
    x = np.random.default_rng(1).standard_normal(shape)
    check_against_torch(
        lambda x: F.pad(x, pad, mode), lambda x: torch.nn.functional.pad(x, pad, mode), [x]
    )


def test_pad_mode_errors_as_torch():
    with pytest.raises(RuntimeError, match="should be less than the dim's size 3"):
        F.pad(sg.zeros(1, 3), (3, 0), "reflect")
    with pytest.raises(RuntimeError, match="wraps around more than once"):
        F.pad(sg.zeros(1, 3), (0, 4), "circular")
    with pytest.raises(NotImplementedError, match="needs a 2-D or 3-D input"):
        F.pad(sg.zeros(1, 2, 3, 4), (1, 1), "replicate")
    with pytest.raises(NotImplementedError, match="mode must be"):
        F.pad(sg.zeros(1, 3), (1, 1), "mirror")


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize(("dims", "padding"), [(1, 2), (2, (1, 2)), (2, "same"), (1, "valid")])
def test_conv_padding_mode_matches_torch(mode, dims, padding):
    def build(nn):
        conv = nn.Conv1d if dims == 1 else nn.Conv2d
        return conv(2, 3, 3, padding=padding, padding_mode=mode, dilation=2)

    ours, theirs = module_pair(build)
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(2).standard_normal((2, 2, *[7] * dims))
    check_against_torch(ours, theirs, [x])
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv1d(2, 3, 3, padding_mode="mirror")
