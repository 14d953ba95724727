"""vmap over ``scratchgrad.distributions``: log-densities, entropies and KL divergences of
Normal, Categorical and MultivariateNormal with any of their parameters and values batched,
against a Python loop and ``torch.func.vmap`` where PyTorch batches them; per-member gradients
(``vmap(grad)``) against PyTorch's."""

import sys

import numpy as np
import pytest
import torch
import torch.distributions as td
from oracle import assert_close

import scratchgrad as sg
import scratchgrad.distributions as sd
from scratchgrad.func import grad, vmap

BATCH = 3
RNG = np.random.default_rng(0)
MEAN, STD, X = (
    RNG.standard_normal((BATCH, 4)),
    RNG.uniform(0.5, 2, (BATCH, 4)),
    RNG.standard_normal((BATCH, 4)),
)
LOGITS, OTHER_LOGITS = RNG.standard_normal((2, BATCH, 5))
CLASSES = RNG.integers(0, 5, BATCH)
TRIL = np.tril(RNG.standard_normal((BATCH, 3, 3)), -1) + np.eye(3) * RNG.uniform(
    1, 2, (BATCH, 3, 1)
)
COVARIANCE = TRIL @ np.swapaxes(TRIL, -1, -2)
MEAN3, X3 = RNG.standard_normal((2, BATCH, 3))

# name: (a member's call, written once for both libraries (d: the distributions module), its
# inputs, and whether torch.func.vmap batches it)
CASES = {
    "Normal.log_prob": (lambda d, m, s, x: d.Normal(m, s).log_prob(x), [MEAN, STD, X], True),
    "Normal.log_prob, one scale for a row": (
        lambda d, m, s, x: d.Normal(m, s[0]).log_prob(x),
        [MEAN, STD, X],
        True,
    ),
    "Normal.entropy": (lambda d, m, s: d.Normal(m, s).entropy(), [MEAN, STD], True),
    "kl_divergence of Normals": (
        lambda d, m, s, x: d.kl_divergence(d.Normal(m, s), d.Normal(x, s * 2)),
        [MEAN, STD, X],
        True,
    ),
    "Categorical(logits).log_prob": (
        lambda d, logits, k: d.Categorical(logits=logits).log_prob(k),
        [LOGITS, CLASSES],
        True,
    ),
    "Categorical(probs).log_prob": (
        lambda d, logits, k: d.Categorical(probs=logits.softmax(-1)).log_prob(k),
        [LOGITS, CLASSES],
        True,
    ),
    "Categorical.entropy": (
        lambda d, logits: d.Categorical(logits=logits).entropy(),
        [LOGITS],
        True,
    ),
    # torch.func.vmap refuses ("operators that can support dynamic shape"): a loop only
    "kl_divergence of Categoricals": (
        lambda d, p, q: d.kl_divergence(d.Categorical(logits=p), d.Categorical(logits=q)),
        [LOGITS, OTHER_LOGITS],
        False,
    ),
    "MultivariateNormal(scale_tril).log_prob": (
        lambda d, m, tril, x: d.MultivariateNormal(m, scale_tril=tril).log_prob(x),
        [MEAN3, TRIL, X3],
        True,
    ),
    "MultivariateNormal(covariance_matrix).log_prob, unchecked": (
        lambda d, m, cov, x: d.MultivariateNormal(m, cov, validate_args=False).log_prob(x),
        [MEAN3, COVARIANCE, X3],
        True,
    ),
    "MultivariateNormal(precision_matrix).entropy, unchecked": (
        lambda d, m, cov: d.MultivariateNormal(
            m, precision_matrix=cov, validate_args=False
        ).entropy(),
        [MEAN3, COVARIANCE],
        True,
    ),
    "kl_divergence of MultivariateNormals": (
        lambda d, m, tril, x: d.kl_divergence(
            d.MultivariateNormal(m, scale_tril=tril), d.MultivariateNormal(x, scale_tril=tril * 2)
        ),
        [MEAN3, TRIL, X3],
        True,
    ),
}


def _in_dims_cases(n):
    """All batched, and each one alone."""
    return [(0,) * n] + [tuple(0 if j == i else None for j in range(n)) for i in range(n)]


def _arguments(arrays, in_dims):
    return [a if d == 0 else a[0] for a, d in zip(arrays, in_dims)]


@pytest.mark.parametrize("name", CASES)
def test_vmap_matches_a_loop_and_torch(name):
    call, arrays, torch_batches = CASES[name]
    for in_dims in _in_dims_cases(len(arrays)):
        args = _arguments(arrays, in_dims)
        ours = vmap(lambda *xs: call(sd, *xs), in_dims=in_dims)(*map(sg.tensor, args))
        loop = [
            call(sd, *(sg.tensor(a if d is None else a[k]) for a, d in zip(args, in_dims)))
            for k in range(BATCH)
        ]
        assert_close(ours, sg.stack(loop), "float64", f"{name} in_dims={in_dims} vs a loop")
        if torch_batches:
            theirs = torch.func.vmap(lambda *xs: call(td, *xs), in_dims=in_dims)(
                *map(torch.tensor, args)
            )
            assert_close(ours, theirs, "float64", f"{name} in_dims={in_dims} vs torch.func")


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if case[2]])
def test_per_member_gradients_match_torch(name):
    """vmap(grad) of every floating input (the class indices are not differentiated)."""
    call, arrays, _ = CASES[name]
    argnums = tuple(i for i, a in enumerate(arrays) if a.dtype.kind == "f")
    ours = vmap(grad(lambda *xs: call(sd, *xs).sum(), argnums=argnums))(*map(sg.tensor, arrays))
    theirs = torch.func.vmap(torch.func.grad(lambda *xs: call(td, *xs).sum(), argnums=argnums))(
        *map(torch.tensor, arrays)
    )
    for k, (o, t) in enumerate(zip(ours, theirs, strict=True)):
        assert_close(o, t, "float64", f"{name}: vmap(grad) of input {argnums[k]}")


@pytest.mark.filterwarnings("ignore:There is a performance drop")  # PyTorch's loop fallback
def test_a_checked_batched_covariance_raises_as_torch_does():
    """A limit shared with torch.func.vmap: checking that each member's covariance matrix is
    positive-definite branches on its values (symmetric first), which vmap cannot batch; both
    raise rather than skip the check (validate_args=False, or scale_tril, avoids it)."""
    # Once torch.compile has run in the process (tests/jit/test_compile.py), torch.func.vmap
    # goes through dynamo, which runs such branches member by member instead of raising.
    if "torch._dynamo" not in sys.modules:
        with pytest.raises(RuntimeError, match="data-dependent control flow"):
            torch.func.vmap(
                lambda c: td.MultivariateNormal(torch.zeros(3), c).log_prob(torch.ones(3))
            )(torch.tensor(COVARIANCE))
    with pytest.raises(RuntimeError, match="vmap: .*batched tensor was used directly"):
        vmap(lambda c: sd.MultivariateNormal(sg.zeros(3), c).log_prob(sg.ones(3)))(
            sg.tensor(COVARIANCE)
        )


@pytest.mark.filterwarnings("ignore:There is a performance drop")  # PyTorch's loop fallback
@pytest.mark.parametrize("in_dims", [(0, 0), (0, None)], ids=str)
def test_isclose_batches(in_dims):
    """isclose (which the positive-definite check calls) compares arrays outside a Function:
    a batch runs it on the whole batch."""
    x = COVARIANCE
    y = np.swapaxes(x, -1, -2) + RNG.choice([0.0, 1e-3], x.shape)
    args = _arguments([x, y], in_dims)
    ours = vmap(lambda a, b: a.isclose(b, atol=1e-6), in_dims=in_dims)(*map(sg.tensor, args))
    theirs = torch.func.vmap(lambda a, b: a.isclose(b, atol=1e-6), in_dims=in_dims)(
        *map(torch.tensor, args)
    )
    assert np.array_equal(ours.numpy(), theirs.numpy())
