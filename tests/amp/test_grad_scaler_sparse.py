"""``GradScaler`` with sparse gradients (``nn.Embedding(sparse=True)``'s), against PyTorch: their
values are unscaled and checked for infinities, as PyTorch's."""

import numpy as np
import pytest
import torch
from oracle import ROUND_OFF, assert_close

import scratchgrad as sg

WEIGHT = np.random.default_rng(2).normal(size=(5, 3))


@pytest.mark.parametrize("poison", [False, True])
def test_sparse_gradients_are_unscaled_and_checked_as_torch(poison):
    results = []
    for m in (sg, torch):
        weight = m.tensor(WEIGHT, requires_grad=True)
        optimizer = m.optim.SparseAdam([weight], lr=0.1)
        scaler = m.amp.GradScaler("cpu", init_scale=1024.0)
        out = m.nn.functional.embedding(m.tensor([1, 3, 1]), weight, sparse=True)
        loss = (out * out).sum() * (float("inf") if poison else 1.0)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        grad = weight.grad.to_dense().detach().clone()
        scaler.step(optimizer)
        scaler.update()
        results.append((grad, weight.detach(), scaler.get_scale()))
    (grad, weight, scale), (their_grad, their_weight, their_scale) = results
    if not poison:
        assert_close(grad, their_grad, tolerance=ROUND_OFF)
    assert_close(weight, their_weight, tolerance=ROUND_OFF)
    assert scale == their_scale
