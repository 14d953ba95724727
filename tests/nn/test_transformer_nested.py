"""TransformerEncoder's nested-tensor fast path against PyTorch's: in eval mode with no
gradient to record and a ``src_key_padding_mask``, PyTorch runs each sequence on its unpadded
tokens and pads the output with zeros; where any of its conditions fails, it does not. Both
libraries hold the same weights; outputs compared float64 tight and float32 loose."""

import warnings

import numpy as np
import pytest
import torch
from oracle import DTYPES, assert_close, module_pair

import scratchgrad as sg
from scratchgrad import nn


def _encoder(dtype="float64", norm=True, enable_nested_tensor=True, mask_check=True, **options):
    options = {"batch_first": True, "dropout": 0.0, **options}

    def build(nn):
        layer = nn.TransformerEncoderLayer(4, 2, 6, **options)
        return nn.TransformerEncoder(
            layer,
            2,
            norm=nn.LayerNorm(4) if norm else None,
            enable_nested_tensor=enable_nested_tensor,
            mask_check=mask_check,
        )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = module_pair(build, dtype)
    return ours.eval(), theirs.eval()


def _run(ours, theirs, src, padding, dtype, grad=False, **kwargs):
    x = sg.tensor(src).to(DTYPES[dtype][0])
    t = torch.tensor(src).to(DTYPES[dtype][1])
    with sg.set_grad_enabled(grad), torch.set_grad_enabled(grad):
        out = ours(x, src_key_padding_mask=sg.tensor(padding), **kwargs)
        with warnings.catch_warnings():  # PyTorch's "nested tensors are a prototype"
            warnings.simplefilter("ignore")
            expected = theirs(t, src_key_padding_mask=torch.tensor(padding), **kwargs)
    return out, expected


LEFT_ALIGNED = np.array([[0, 0, 0, 1, 1], [0, 0, 0, 0, 0], [0, 1, 1, 1, 1]], dtype=bool)
SCATTERED = np.array([[1, 0, 0, 1, 0], [0, 0, 0, 0, 0], [0, 1, 0, 1, 1]], dtype=bool)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("norm", [True, False], ids=["norm", "no_norm"])
def test_nested_fast_path_zeros_padded_positions_as_torch(dtype, norm):
    ours, theirs = _encoder(dtype, norm)
    src = np.random.default_rng(0).standard_normal((3, 5, 4))
    out, expected = _run(ours, theirs, src, LEFT_ALIGNED, dtype)
    assert_close(out, expected, dtype)
    if not norm:
        assert (out.numpy()[LEFT_ALIGNED] == 0).all()


def test_a_fully_padded_sequence_gives_zeros_as_torch():
    ours, theirs = _encoder(norm=False)
    padding = np.ones((2, 5), dtype=bool)
    padding[0, :2] = False
    out, expected = _run(ours, theirs, np.random.default_rng(1).standard_normal((2, 5, 4)),
                         padding, "float64")  # fmt: skip
    assert_close(out, expected)
    assert (out.numpy()[1] == 0).all()


def test_float_padding_mask_keeps_its_zeros_as_torch():
    ours, theirs = _encoder()
    padding = np.where(LEFT_ALIGNED, -np.inf, 0.0)
    out, expected = _run(ours, theirs, np.random.default_rng(2).standard_normal((3, 5, 4)),
                         padding, "float64")  # fmt: skip
    assert_close(out, expected)


@pytest.mark.parametrize("mask_check", [True, False])
def test_a_mask_that_is_not_left_aligned_as_torch(mask_check):
    # checked: the layers see the mask as it is; unchecked: the leading tokens, as many as kept
    ours, theirs = _encoder(norm=False, mask_check=mask_check)
    src = np.random.default_rng(3).standard_normal((3, 5, 4))
    out, expected = _run(ours, theirs, src, SCATTERED, "float64")
    assert_close(out, expected)
    assert (out.numpy()[[0, 2], -1] == 0).all() == (not mask_check)


@pytest.mark.parametrize(
    "case",
    ["nested_disabled", "training", "grad_enabled", "with_mask", "unbatched"],
)
def test_without_the_fast_path_padded_positions_are_computed_as_torch(case):
    ours, theirs = _encoder(norm=False, enable_nested_tensor=case != "nested_disabled")
    src = np.random.default_rng(4).standard_normal((3, 5, 4))
    padding, kwargs, grad = LEFT_ALIGNED, {}, case == "grad_enabled"
    if case == "training":
        ours.train(), theirs.train()
    if case == "with_mask":
        kwargs = {"mask": np.triu(np.ones((5, 5), dtype=bool), 1)}
    if case == "unbatched":
        src, padding = src[0], padding[0]
    x, t = (lib.tensor(src) for lib in (sg, torch))
    with sg.set_grad_enabled(grad), torch.set_grad_enabled(grad):
        out = ours(x, src_key_padding_mask=sg.tensor(padding),
                   **{k: sg.tensor(v) for k, v in kwargs.items()})  # fmt: skip
        expected = theirs(t, src_key_padding_mask=torch.tensor(padding),
                          **{k: torch.tensor(v) for k, v in kwargs.items()})  # fmt: skip
    assert_close(out.detach(), expected.detach())
    assert (out.detach().numpy()[..., -1, :] != 0).all()  # a padded position, computed


def test_cpu_autocast_keeps_the_fast_path():
    # PyTorch's fast path asks torch.is_autocast_enabled(), CUDA's autocast only (under CPU
    # autocast its fused layer then fails on bfloat16 activations): compared out of autocast
    ours, theirs = _encoder("float32", norm=False)
    src = np.random.default_rng(5).standard_normal((3, 5, 4))
    with sg.autocast("cpu"):
        out, expected = _run(ours, theirs, src, LEFT_ALIGNED, "float32")
    assert_close(out.float(), expected, tolerance=(0.05, 0.05))
    assert (out.float().numpy()[LEFT_ALIGNED] == 0).all()


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"batch_first": False}, "self_attn.batch_first was not True"),
        ({"norm_first": True}, "norm_first was True"),
        ({"bias": False}, "self_attn was passed bias=False"),
        ({"activation": sg.tanh}, "activation_relu_or_gelu was not True"),
    ],
)
def test_layers_without_the_fast_path_warn_as_torch(options, reason):
    def build(nn, layer_options):
        layer = nn.TransformerEncoderLayer(4, 2, 6, **{"batch_first": True, **layer_options})
        return nn.TransformerEncoder(layer, 2)

    torch_options = {**options, "activation": torch.tanh} if "activation" in options else options
    with pytest.warns(UserWarning, match=reason):
        build(torch.nn, torch_options)
    with pytest.warns(
        UserWarning, match=f"use_nested_tensor is False because encoder_layer.*{reason}"
    ):
        encoder = build(nn, options)
    assert not encoder.use_nested_tensor
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert build(nn, {"activation": "gelu"}).use_nested_tensor
        assert build(nn, {"activation": nn.ReLU()}).use_nested_tensor


def test_odd_heads_warn_as_torch():
    with pytest.warns(UserWarning, match="num_heads is odd"):
        torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(3, 3, batch_first=True), 1)
    with pytest.warns(UserWarning, match="num_heads is odd"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(3, 3, batch_first=True), 1)


def test_a_jitted_eval_step_replays_the_fast_path_check_with_each_mask():
    layer = sg.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    encoder = sg.nn.TransformerEncoder(layer, 2).eval()

    def run(x, padding):
        with sg.no_grad():
            return encoder(x, src_key_padding_mask=padding)

    jitted = sg.jit(run)
    aligned = sg.tensor([[False, False, True], [False, False, False]])
    not_aligned = sg.tensor([[False, True, False], [False, False, False]])
    for padding in [aligned, aligned, not_aligned, aligned, not_aligned]:  # recorded, replayed
        x = sg.randn(2, 3, 8)
        np.testing.assert_array_equal(jitted(x, padding).numpy(), run(x, padding).numpy())
    assert run(x, aligned)[0, 2].abs().sum().item() == 0.0  # the fast path's zeros
    assert run(x, not_aligned)[0, 1].abs().sum().item() > 0.0  # no fast path: no zeros


@pytest.mark.parametrize("mask_check", [True, False])
def test_a_batch_with_every_token_padded_raises_as_torch(mask_check):
    """PyTorch's nested tensor cannot hold no token at all (ours gave zeros); a jitted step
    replays the check with each mask."""
    ours, theirs = _encoder(norm=False, mask_check=mask_check)
    src, padded = np.zeros((2, 3, 4)), np.ones((2, 3), dtype=bool)
    with torch.no_grad(), pytest.raises(RuntimeError, match="at least one constituent tensor"):
        theirs(torch.tensor(src), src_key_padding_mask=torch.tensor(padded))

    def run(x, padding):
        with sg.no_grad():
            return ours(x, src_key_padding_mask=padding)

    jitted = sg.jit(run)
    for _ in range(2):  # recorded, replayed
        out = jitted(sg.tensor(src), sg.tensor(~padded))
        np.testing.assert_array_equal(out.numpy(), run(sg.tensor(src), sg.tensor(~padded)).numpy())
    for step in (run, jitted):
        with pytest.raises(RuntimeError, match="at least one constituent tensor"):
            step(sg.tensor(src), sg.tensor(padded))
