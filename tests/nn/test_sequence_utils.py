"""Sequence utilities against PyTorch: pad_sequence, F.pad's reflect/replicate/circular modes
beyond the op table (2-D and 3-D padding, cropping, errors), and conv layers' padding_mode."""

import numpy as np
import pytest
import torch
from oracle import assert_close

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import functional as F
from scratchgrad.nn.utils.rnn import pad_sequence


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch_with_gradients(batch_first, padding_side):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((n, 2, 3)) for n in (3, 5, 1)]
    ours = [sg.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    kwargs = {"batch_first": batch_first, "padding_value": -1.5, "padding_side": padding_side}
    out = pad_sequence(ours, **kwargs)
    expected = torch.nn.utils.rnn.pad_sequence(theirs, **kwargs)
    assert_close(out, expected, "float64", "padded")
    upstream = rng.standard_normal(out.shape)
    (out * sg.tensor(upstream)).sum().backward()
    (expected * torch.tensor(upstream)).sum().backward()
    for i, (s, t) in enumerate(zip(ours, theirs)):
        assert_close(s.grad, t.grad, "float64", f"gradient of sequence {i}")


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
    ours, theirs = sg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, expected = F.pad(ours, pad, mode), torch.nn.functional.pad(theirs, pad, mode)
    assert_close(out, expected, "float64", "padded")
    weights = np.arange(out.numel(), dtype=np.float64).reshape(out.shape)  # tells entries apart
    (out * sg.tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    assert_close(ours.grad, theirs.grad, "float64", "gradient")


def test_pad_mode_errors_as_torch():
    with pytest.raises(ValueError, match="should be less than the dim's size 3"):
        F.pad(sg.zeros(1, 3), (3, 0), "reflect")
    with pytest.raises(ValueError, match="wraps around more than once"):
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
        return conv(2, 3, 3, padding=padding, padding_mode=mode, dilation=2).double()

    torch.manual_seed(0)
    theirs, ours = build(torch.nn), build(nn)
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(2).standard_normal((2, 2, *[7] * dims))
    sx, tx = sg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, expected = ours(sx), theirs(tx)
    assert_close(out, expected, "float64", "output")
    out.sum().backward(), expected.sum().backward()
    assert_close(sx.grad, tx.grad, "float64", "input gradient")
    assert_close(ours.weight.grad, theirs.weight.grad, "float64", "weight gradient")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv1d(2, 3, 3, padding_mode="mirror")
