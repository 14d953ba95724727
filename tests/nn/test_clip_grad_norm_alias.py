"""``nn.utils.clip_grad_norm``, the deprecated alias of ``clip_grad_norm_``: PyTorch's
FutureWarning at the caller's line, and the same clipping and returned norm as PyTorch's."""

import numpy as np
import pytest
import torch
from oracle import assert_close, assert_doc_examples_run

import scratchgrad as sg


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_warns_and_clips_as_torch(norm_type):
    grads = [np.random.default_rng(i).standard_normal(s) for i, s in enumerate([(3, 2), (4,)])]
    results = []
    for lib in (sg, torch):
        params = [lib.zeros(g.shape, requires_grad=True) for g in grads]
        for p, g in zip(params, grads):
            p.grad = lib.tensor(g, dtype=p.dtype)
        with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated") as record:
            norm = lib.nn.utils.clip_grad_norm(params, 0.5, norm_type)
        assert record[0].filename == __file__
        results.append((norm, [p.grad for p in params]))
    (norm, ours), (expected, theirs) = results
    # (the norm as a float: clip_grad_norm_'s 1- and inf-norms are NumPy scalars inside)
    assert_close(norm.item(), expected.item(), "float32")
    for a, b in zip(ours, theirs):
        assert_close(a, b, "float32")


def test_doc_example_runs():
    assert_doc_examples_run(sg.nn.utils.clip_grad_norm, vars(sg.nn.utils))
