"""``EmbeddingBag(scale_grad_by_freq=True)``: each row's gradient divided by how often the
input holds its index. Against PyTorch's ``embedding_bag`` where its CPU kernel computes that
(every index held equally often), and in general against PyTorch's ``embedding`` with
``scale_grad_by_freq`` summed per bag (what its documentation describes)."""

import numpy as np
import pytest
import torch
from oracle import assert_close, assert_raises_as_torch

import scratchgrad as sg


def _case(seed, repeats):
    """Indices of 1-D input, each distinct one ``repeats`` times (or any number with
    ``repeats=None``), shuffled; offsets of a few bags."""
    rng = np.random.default_rng(seed)
    if repeats is None:
        index = rng.integers(0, 7, 12)
    else:
        index = rng.permutation(np.repeat(rng.choice(7, 4, replace=False), repeats))
    offsets = np.concatenate([[0], np.sort(rng.choice(np.arange(1, index.size), 2, False))])
    return index, offsets, rng.standard_normal((7, 3)), rng.standard_normal(index.size)


def _bag(lib, index, offsets, weight, mode, weights=None, padding_idx=None):
    w = lib.tensor(weight, requires_grad=True)
    out = lib.nn.functional.embedding_bag(
        lib.tensor(index),
        w,
        lib.tensor(offsets),
        scale_grad_by_freq=True,
        mode=mode,
        per_sample_weights=None if weights is None else lib.tensor(weights),
        padding_idx=padding_idx,
    )
    (out * lib.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    return out, w.grad


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("repeats", [1, 2, 3])
@pytest.mark.parametrize("mode", ["sum", "mean", "sum weighted", "sum padded"])
def test_as_torchs_embedding_bag_where_its_counts_are_right(seed, repeats, mode):
    index, offsets, weight, weights = _case(seed, repeats)
    kwargs = {"mode": mode.split()[0]}
    if mode == "sum weighted":
        kwargs["weights"] = weights
    if mode == "sum padded":
        kwargs["padding_idx"] = int(index[0])
    out, grad = _bag(sg, index, offsets, weight, **kwargs)
    expected_out, expected_grad = _bag(torch, index, offsets, weight, **kwargs)
    assert_close(out, expected_out)
    assert_close(grad, expected_grad)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_as_torchs_embedding_summed_per_bag(seed, mode):
    index, offsets, weight, _ = _case(seed, None)
    _, grad = _bag(sg, index, offsets, weight, mode)
    w = torch.tensor(weight, requires_grad=True)
    rows = torch.nn.functional.embedding(torch.tensor(index), w, scale_grad_by_freq=True)
    bags = np.split(np.arange(index.size), offsets[1:])
    reduce = (lambda r: r.sum(0)) if mode == "sum" else (lambda r: r.mean(0))
    out = torch.stack([reduce(rows[torch.tensor(bag)]) for bag in bags])
    (out * torch.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    assert_close(grad, w.grad)


def test_repr_and_errors_as_torchs():
    for kwargs in [{"scale_grad_by_freq": True}, {"scale_grad_by_freq": True, "mode": "sum"}]:
        assert repr(sg.nn.EmbeddingBag(5, 2, **kwargs)) == repr(
            torch.nn.EmbeddingBag(5, 2, **kwargs)
        )
    assert_raises_as_torch(
        lambda lib: lib.nn.EmbeddingBag(5, 2, scale_grad_by_freq=True, mode="max")(
            lib.tensor([[1, 2]])
        ),
        ValueError,
        "max mode does not support scaling",
    )

    def sparse(lib):
        bag = lib.nn.EmbeddingBag(5, 2, scale_grad_by_freq=True, sparse=True)
        bag(lib.tensor([[1, 2]])).sum().backward()

    assert_raises_as_torch(sparse, RuntimeError, "not supported with sparse gradients")
