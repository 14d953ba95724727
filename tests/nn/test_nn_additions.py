"""nn names that real programs use, against PyTorch: ``Embedding.from_pretrained`` and
``EmbeddingBag.from_pretrained``, ``max_norm`` lookups, ``CosineSimilarity`` and
``PairwiseDistance``."""

import numpy as np
import pytest
import torch
from oracle import assert_close, assert_raises_as_torch, check_against_torch

import scratchgrad as sg
from scratchgrad import nn

# ---- Embedding.from_pretrained, EmbeddingBag.from_pretrained, max_norm ----------------------


@pytest.mark.parametrize("freeze", [True, False])
@pytest.mark.parametrize("padding_idx", [None, 0, -1])
def test_embedding_from_pretrained_matches_torch(freeze, padding_idx):
    vectors = np.random.default_rng(0).standard_normal((6, 3))
    ours = nn.Embedding.from_pretrained(sg.tensor(vectors), freeze, padding_idx)
    theirs = torch.nn.Embedding.from_pretrained(torch.tensor(vectors), freeze, padding_idx)
    assert repr(ours) == repr(theirs)
    assert ours.weight.requires_grad == theirs.weight.requires_grad == (not freeze)
    index = np.array([[0, 5, 2], [5, 5, 1]])
    out, expected = ours(sg.tensor(index)), theirs(torch.tensor(index))
    assert_close(out, expected.detach())  # the padding row is kept as given, not zeroed
    if not freeze:
        out.sum().backward(), expected.sum().backward()
        assert_close(ours.weight.grad, theirs.weight.grad)


def test_from_pretrained_shares_memory_and_checks_the_shape():
    vectors = sg.zeros(3, 2)
    emb = nn.Embedding.from_pretrained(vectors)
    vectors.add_(1.0)
    assert emb.weight.sum().item() == 6.0
    assert_raises_as_torch(
        lambda lib: lib.nn.Embedding.from_pretrained(lib.zeros(3)),
        AssertionError,
        "Embeddings parameter is expected to be 2-dimensional",
    )
    assert_raises_as_torch(
        lambda lib: lib.nn.EmbeddingBag.from_pretrained(lib.zeros(2, 3, 4)),
        AssertionError,
        "Embeddings parameter is expected to be 2-dimensional",
    )
    assert_raises_as_torch(
        lambda lib: lib.nn.Embedding(3, 2, _weight=lib.zeros(2, 3)),
        AssertionError,
        "Shape of weight does not match",
    )


@pytest.mark.parametrize("freeze", [True, False])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_from_pretrained_matches_torch(freeze, mode):
    vectors = np.random.default_rng(1).standard_normal((6, 3))
    ours = nn.EmbeddingBag.from_pretrained(sg.tensor(vectors), freeze, mode=mode, padding_idx=2)
    theirs = torch.nn.EmbeddingBag.from_pretrained(
        torch.tensor(vectors), freeze, mode=mode, padding_idx=2
    )
    assert ours.weight.requires_grad == theirs.weight.requires_grad == (not freeze)
    index = np.array([[0, 2, 4], [5, 5, 1]])
    assert_close(ours(sg.tensor(index)), theirs(torch.tensor(index)).detach())


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_embedding_max_norm_renormalizes_the_rows_looked_up_as_torch(norm_type, dtype):
    torch_dtype = getattr(torch, dtype)
    vectors = np.random.default_rng(2).standard_normal((8, 4)) * 2
    ours = nn.Embedding(8, 4, max_norm=1.5, norm_type=norm_type).to(getattr(sg, dtype))
    theirs = torch.nn.Embedding(8, 4, max_norm=1.5, norm_type=norm_type).to(torch_dtype)
    ours.load_state_dict({"weight": sg.tensor(vectors).to(getattr(sg, dtype))})
    theirs.load_state_dict({"weight": torch.tensor(vectors).to(torch_dtype)})
    assert repr(ours) == repr(theirs)
    index = np.array([[1, 3, 3], [7, 1, 0]])
    out, expected = ours(sg.tensor(index)), theirs(torch.tensor(index))
    assert_close(out, expected.detach(), dtype)
    assert_close(ours.weight.detach(), theirs.weight.detach(), dtype)  # rows 2, 4-6 untouched
    out.square().sum().backward(), expected.square().sum().backward()
    assert_close(ours.weight.grad, theirs.weight.grad, dtype)


def test_functional_embedding_and_bag_max_norm_as_torch():
    vectors = np.random.default_rng(3).standard_normal((5, 3)) * 3
    index = np.array([0, 2, 2, 4])
    ours_w, theirs_w = sg.tensor(vectors), torch.tensor(vectors)
    out = sg.nn.functional.embedding_bag(
        sg.tensor(index), ours_w, sg.tensor([0, 1]), max_norm=2.0, mode="sum"
    )
    expected = torch.nn.functional.embedding_bag(
        torch.tensor(index), theirs_w, torch.tensor([0, 1]), max_norm=2.0, mode="sum"
    )
    assert_close(out, expected)
    assert_close(ours_w, theirs_w)
    assert_raises_as_torch(
        lambda lib: lib.nn.functional.embedding(lib.tensor([0]), lib.zeros(3, 2), padding_idx=3),
        AssertionError,
        "Padding_idx must be within num_embeddings",
    )


# ---- CosineSimilarity, PairwiseDistance --------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    ("kwargs", "shapes"),
    [
        ({}, [(4, 5), (4, 5)]),
        ({"dim": -1, "eps": 1e-3}, [(2, 3, 4), (3, 4)]),
        ({"dim": 0}, [(3,), (3,)]),
    ],
)
def test_cosine_similarity_module_matches_torch(kwargs, shapes, dtype):
    arrays = [np.random.default_rng(4).standard_normal(s) for s in shapes]
    ours, theirs = nn.CosineSimilarity(**kwargs), torch.nn.CosineSimilarity(**kwargs)
    assert repr(ours) == repr(theirs)
    check_against_torch(ours, theirs, arrays, dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    ("kwargs", "shapes"),
    [
        ({}, [(4, 5), (4, 5)]),
        ({"p": 1.0, "keepdim": True}, [(2, 3, 4), (3, 4)]),
        ({"p": 3.0, "eps": 0.0}, [(3,), (3,)]),
        ({"p": float("inf")}, [(4, 2), (1, 2)]),
    ],
)
def test_pairwise_distance_module_matches_torch(kwargs, shapes, dtype):
    arrays = [np.random.default_rng(5).standard_normal(s) for s in shapes]
    ours, theirs = nn.PairwiseDistance(**kwargs), torch.nn.PairwiseDistance(**kwargs)
    assert repr(ours) == repr(theirs)
    check_against_torch(ours, theirs, arrays, dtype)


@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_embedding_scale_grad_by_freq_divides_each_rows_gradient_as_torch(padding_idx, dtype):
    vectors = np.random.default_rng(4).standard_normal((6, 3))
    index = np.array([[0, 2, 2, 5], [5, 5, 1, 2]])
    upstream = np.random.default_rng(5).standard_normal((2, 4, 3))
    ours = nn.Embedding(6, 3, padding_idx=padding_idx, scale_grad_by_freq=True)
    theirs = torch.nn.Embedding(6, 3, padding_idx=padding_idx, scale_grad_by_freq=True)
    ours, theirs = ours.to(getattr(sg, dtype)), theirs.to(getattr(torch, dtype))
    ours.load_state_dict({"weight": sg.tensor(vectors).to(getattr(sg, dtype))})
    theirs.load_state_dict({"weight": torch.tensor(vectors).to(getattr(torch, dtype))})
    assert repr(ours) == repr(theirs)
    out, expected = ours(sg.tensor(index)), theirs(torch.tensor(index))
    assert_close(out, expected.detach(), dtype)
    (out * sg.tensor(upstream).to(out.dtype)).sum().backward()
    (expected * torch.tensor(upstream).to(expected.dtype)).sum().backward()
    assert_close(ours.weight.grad, theirs.weight.grad, dtype)


def test_functional_embedding_scale_grad_by_freq_with_max_norm_as_torch():
    vectors = np.random.default_rng(6).standard_normal((4, 2)) * 2
    grads = []
    for m in (sg, torch):
        weight = m.tensor(vectors, requires_grad=True)
        index = m.tensor([[3, 0, 3], [3, 1, 0]])
        out = m.nn.functional.embedding(index, weight, max_norm=1.0, scale_grad_by_freq=True)
        out.pow(3).sum().backward()
        grads.append((out.detach(), weight.grad))
    for ours, theirs in zip(*grads):
        assert_close(ours, theirs)
