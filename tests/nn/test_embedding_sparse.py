"""``embedding(..., sparse=True)``, ``nn.Embedding(sparse=True)`` and ``embedding_bag``'s (sum
and mean) against PyTorch: the weight's ``.grad`` is a sparse COO tensor of one row per index
looked up (uncoalesced: repeated indices not summed, the padding rows left out), sums of two
such gradients concatenate, and a sparse gradient meeting a dense one gives a dense sum."""

import numpy as np
import pytest
import torch
from oracle import ROUND_OFF, assert_close

import scratchgrad as sg

WEIGHT = np.random.default_rng(0).normal(size=(6, 3))
INDICES = {
    "repeated": [4, 1, 4, 0, 4],
    "2-d": [[1, 5, 1], [0, 0, 2]],
    "0-d": 3,
    "empty": np.zeros(0, np.int64),
}


def _sparse_grads(index, backward=None, **kwargs):
    """(ours, torch's) weight after ``backward(out)`` (default: a weighted sum) of
    ``embedding(index, weight, sparse=True, **kwargs)``."""
    weights = []
    for m in (sg, torch):
        weight = m.tensor(WEIGHT, requires_grad=True)
        out = m.nn.functional.embedding(m.tensor(index), weight, sparse=True, **kwargs)
        if backward is None:
            scale = m.tensor(np.arange(out.numel(), dtype=np.float64).reshape(out.shape))
            (out * scale).sum().backward()
        else:
            backward(m, out, weight)
        weights.append(weight)
    return weights


def assert_same_sparse(ours, theirs):
    """The same sparse tensor: layout, shape, dtype, coalescing, entries in the same order."""
    assert ours.is_sparse and theirs.is_sparse
    assert ours.layout == sg.sparse_coo and theirs.layout == torch.sparse_coo
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert ours.is_coalesced() == theirs.is_coalesced()
    np.testing.assert_array_equal(ours._indices().numpy(), theirs._indices().numpy())
    assert_close(ours._values(), theirs._values(), tolerance=ROUND_OFF)
    assert_close(ours.to_dense(), theirs.to_dense(), tolerance=ROUND_OFF)
    ours, theirs = ours.coalesce(), theirs.coalesce()
    np.testing.assert_array_equal(ours.indices().numpy(), theirs.indices().numpy())
    assert_close(ours.values(), theirs.values(), tolerance=ROUND_OFF)


@pytest.mark.parametrize("padding_idx", [None, 4, -2])
@pytest.mark.parametrize("index", INDICES.values(), ids=INDICES.keys())
def test_the_gradient_is_torchs_sparse_one(index, padding_idx):
    if np.ndim(index) == 0 and padding_idx is not None:
        pytest.skip("PyTorch's backward fails there (IndexError: too many indices)")
    ours, theirs = _sparse_grads(index, padding_idx=padding_idx)
    assert_same_sparse(ours.grad, theirs.grad)


def test_indices_and_values_need_coalescing_first_as_in_torch():
    ours, theirs = _sparse_grads(INDICES["repeated"])
    for grad in (ours.grad, theirs.grad):
        for part in (grad.indices, grad.values):
            with pytest.raises(RuntimeError, match="uncoalesced tensor"):
                part()


def test_two_backwards_concatenate_the_entries():
    def twice(m, out, weight):
        out.sum().backward()
        m.nn.functional.embedding(m.tensor([5, 1]), weight, sparse=True).pow(2).sum().backward()

    ours, theirs = _sparse_grads(INDICES["repeated"], twice)
    assert ours.grad._nnz() == 7
    assert_same_sparse(ours.grad, theirs.grad)


def test_two_lookups_in_one_backward_concatenate_the_entries():
    def both(m, out, weight):
        other = m.nn.functional.embedding(m.tensor([[2, 1]]), weight, sparse=True)
        (out.sum() * 2 + other.pow(2).sum()).backward()

    ours, theirs = _sparse_grads(INDICES["repeated"], both)
    assert ours.grad._nnz() == theirs.grad._nnz() == 7
    assert not ours.grad.is_coalesced()
    # (the two lookups' entries may come in either order: compare the coalesced sums)
    assert_close(ours.grad.to_dense(), theirs.grad.to_dense(), tolerance=ROUND_OFF)


@pytest.mark.parametrize("order", ["one graph", "sparse first", "dense first"])
def test_a_dense_gradient_makes_the_sum_dense(order):
    def mixed(m, out, weight):
        dense = (weight * weight).sum()
        if order == "one graph":
            (out.sum() + dense).backward()
        else:
            first, second = (out.sum(), dense) if order == "sparse first" else (dense, out.sum())
            first.backward()
            second.backward()

    ours, theirs = _sparse_grads(INDICES["2-d"], mixed)
    assert not ours.grad.is_sparse and theirs.grad.layout == torch.strided
    assert_close(ours.grad, theirs.grad, tolerance=ROUND_OFF)


def test_max_norm_renormalizes_the_rows_and_keeps_the_gradient_sparse():
    ours, theirs = _sparse_grads(INDICES["repeated"], max_norm=0.5)
    assert_close(ours.detach(), theirs.detach(), tolerance=ROUND_OFF)
    assert_same_sparse(ours.grad, theirs.grad)


def test_scale_grad_by_freq_fails_in_backward_as_in_torch():
    for m in (sg, torch):
        weight = m.tensor(WEIGHT, requires_grad=True)
        out = m.nn.functional.embedding(
            m.tensor([1, 1]), weight, scale_grad_by_freq=True, sparse=True
        )
        with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
            out.sum().backward()


def test_gradients_of_the_sparse_gradient():
    def second_order(m, out, weight):
        (grad,) = m.autograd.grad((out**3).sum(), weight, create_graph=True)
        assert grad.is_sparse and grad.requires_grad
        grad.to_dense().sum().backward()

    ours, theirs = _sparse_grads(INDICES["repeated"], second_order)
    assert_same_sparse(ours.grad, theirs.grad)


def test_zero_grad_without_none_leaves_no_entries():
    def zeroed(m, out, weight):
        out.sum().backward()
        m.optim.SGD([weight], lr=0.1).zero_grad(set_to_none=False)
        assert weight.grad.is_sparse and weight.grad._nnz() == 0
        m.nn.functional.embedding(m.tensor([2]), weight, sparse=True).sum().backward()

    ours, theirs = _sparse_grads(INDICES["repeated"], zeroed)
    assert_same_sparse(ours.grad, theirs.grad)


def test_module_zero_grad_without_none_leaves_no_entries():
    for m in (sg, torch):
        emb = m.nn.Embedding(5, 2, sparse=True)
        emb(m.tensor([1, 1])).sum().backward()
        emb.zero_grad(set_to_none=False)
        assert emb.weight.grad.is_sparse and emb.weight.grad._nnz() == 0
        assert emb.weight.grad.to_dense().abs().sum().item() == 0


def test_hooks_and_anomaly_mode_see_the_sparse_gradient():
    seen = []
    weight = sg.tensor(WEIGHT, requires_grad=True)
    weight.register_hook(lambda grad: seen.append(grad.is_sparse))
    with pytest.warns(UserWarning), sg.autograd.detect_anomaly():
        sg.nn.functional.embedding(sg.tensor([1, 2]), weight, sparse=True).sum().backward()
    assert seen == [True] and weight.grad.is_sparse


def test_a_weight_computed_in_the_graph_gets_a_dense_gradient():
    """A difference: PyTorch passes the sparse gradient back through the ops that made the
    weight (the leaf's .grad is then sparse); here the lookup's gradient is dense there."""

    def through_a_product(m, out, weight):
        m.nn.functional.embedding(m.tensor([1, 1, 3]), weight * 2, sparse=True).sum().backward()

    ours, theirs = _sparse_grads(INDICES["repeated"], through_a_product)
    assert not ours.grad.is_sparse
    assert_close(ours.grad, theirs.grad.to_dense(), tolerance=ROUND_OFF)


def test_the_module_passes_sparse_and_shows_it():
    for m in (sg, torch):
        emb = m.nn.Embedding(5, 2, padding_idx=1, sparse=True)
        assert repr(emb) == "Embedding(5, 2, padding_idx=1, sparse=True)"
        emb(m.tensor([[1, 3]])).sum().backward()
        assert emb.weight.grad.is_sparse and emb.weight.grad._indices().tolist() == [[3]]
        pretrained = m.nn.Embedding.from_pretrained(m.ones(4, 2), freeze=False, sparse=True)
        pretrained(m.tensor([0])).sum().backward()
        assert pretrained.sparse and pretrained.weight.grad.is_sparse


def test_without_grad_the_lookup_is_plain():
    weight = sg.tensor(WEIGHT, requires_grad=True)
    with sg.no_grad():
        out = sg.nn.functional.embedding(sg.tensor([1, 2]), weight, sparse=True)
    assert out.grad_fn is None
    assert_close(out, WEIGHT[[1, 2]], tolerance=(0, 0))
    out = sg.nn.functional.embedding(sg.tensor([1]), weight, sparse=True)
    assert out.grad_fn.name() == "EmbeddingBackward0"


def test_jit_refuses_a_step_with_sparse_gradients():
    """The node keeps the batch's indices: a replay would reuse the recorded ones."""
    emb = sg.nn.Embedding(6, 3, sparse=True)
    opt = sg.optim.SparseAdam(emb.parameters())

    def step(index):
        opt.zero_grad()
        emb(index).sum().backward()
        opt.step()

    captured = sg.jit(step)
    captured(sg.tensor([1, 2]))  # the eager first call
    with pytest.raises(sg.JitError, match=r"embedding\(sparse=True\)"):
        captured(sg.tensor([3, 4]))


BAGS = {  # (input, offsets)
    "offsets": ([1, 2, 4, 5, 4, 1], [0, 2, 4]),
    "2-d": ([[1, 5, 1], [0, 0, 2]], None),
    "an empty bag": ([3, 3, 0], [0, 0, 2]),
}


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("padding_idx", [None, 5])
@pytest.mark.parametrize("bags", BAGS.values(), ids=BAGS.keys())
def test_embedding_bag_gives_torchs_sparse_gradient(bags, padding_idx, mode):
    """``embedding_bag(..., sparse=True)`` (sum and mean, with per-sample weights for sum):
    one row per index looked up, as PyTorch's, scaled by its bag's weights."""
    index, offsets = bags
    weights = []
    for m in (sg, torch):
        weight = m.tensor(WEIGHT, requires_grad=True)
        per_sample = None
        if mode == "sum":
            per_sample = m.tensor(np.arange(1.0, 1 + np.size(index)).reshape(np.shape(index)))
        out = m.nn.functional.embedding_bag(
            m.tensor(index),
            weight,
            None if offsets is None else m.tensor(offsets),
            mode=mode,
            sparse=True,
            per_sample_weights=per_sample,
            padding_idx=padding_idx,
        )
        (
            out * m.tensor(np.arange(out.numel(), dtype=np.float64).reshape(out.shape))
        ).sum().backward()
        weights.append(weight)
    assert_same_sparse(weights[0].grad, weights[1].grad)


@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_embedding_bag_module_passes_sparse_and_max_mode_refuses_it(lib):
    bag = lib.nn.EmbeddingBag(6, 3, mode="sum", sparse=True)
    bag(lib.tensor([1, 2, 4]), lib.tensor([0, 1])).sum().backward()
    assert bag.weight.grad.is_sparse
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        lib.nn.EmbeddingBag(6, 3, mode="max", sparse=True)(lib.tensor([[1, 2]]))
