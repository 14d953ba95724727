"""Every case of ``linalg_cases.py`` against PyTorch: the values and the gradients of a random
weighting of the outputs, over batch shapes (float64 tight, float32 loose), and finite
differences (gradcheck, gradgradcheck) in float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from linalg_cases import CASES

import scratchgrad as sg
import scratchgrad.linalg  # noqa: F401  (sg.linalg)

TOLERANCES = {np.float64: dict(rtol=1e-9, atol=1e-10), np.float32: dict(rtol=2e-4, atol=2e-5)}
IDS = [case.name for case in CASES]


def _outputs(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def _run(lib, case, arrays, weights):
    """The case's outputs and the gradients of sum(output * weight) for each input."""
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    outs = _outputs(case.call(lib, *xs))
    dtype = arrays[0].dtype  # (every output weighed: one input may give several outputs)
    loss = sum((o * lib.tensor(w.astype(dtype))).sum() for o, w in zip(outs, weights))
    grads = lib.autograd.grad(loss, xs, allow_unused=True)
    return [o.detach().numpy() for o in outs], [
        np.zeros(a.shape) if g is None else g.numpy() for g, a in zip(grads, arrays)
    ]


def _inputs(case, batch, seed=0):
    rng = np.random.default_rng(seed)
    return [make(rng, batch) for make in case.inputs], rng


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_and_gradients_are_pytorchs(case, dtype):
    for batch in case.batches:
        arrays, rng = _inputs(case, batch)
        arrays = [a.astype(dtype) for a in arrays]
        theirs = _outputs(case.call(torch, *(torch.tensor(a) for a in arrays)))
        if not case.grad:
            values = _outputs(case.call(sg, *(sg.tensor(a) for a in arrays)))
            _close([v.numpy() for v in values], [t.numpy() for t in theirs], dtype, case, batch)
            continue
        weights = [rng.standard_normal(t.shape) for t in theirs]
        values, grads = _run(sg, case, arrays, weights)
        their_values, their_grads = _run(torch, case, arrays, weights)
        _close(values, their_values, dtype, case, batch)
        _close(grads, their_grads, dtype, case, batch)
        assert all(v.dtype == dtype for v in values if v.dtype.kind == "f")


def _close(ours, theirs, dtype, case, batch):
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape, (case.name, batch)
        np.testing.assert_allclose(o, t, **TOLERANCES[dtype], err_msg=f"{case.name} {batch}")


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=lambda c: c.name)
def test_gradcheck(case):
    arrays, _ = _inputs(case, case.check_batch, seed=1)
    xs = [sg.tensor(a, requires_grad=True) for a in arrays]
    assert sg.autograd.gradcheck(lambda *ts: case.call(sg, *ts), xs)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad and c.gradgrad], ids=lambda c: c.name)
def test_gradgradcheck(case):
    arrays, _ = _inputs(case, case.check_batch, seed=2)
    xs = [sg.tensor(a, requires_grad=True) for a in arrays]
    assert sg.autograd.gradgradcheck(lambda *ts: case.call(sg, *ts), xs)
