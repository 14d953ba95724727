"""vmap over ``scratchgrad.distributions``: log-densities, entropies and KL divergences of
Normal, Categorical and MultivariateNormal with any of their parameters and values batched,
against a Python loop and ``torch.func.vmap`` where PyTorch batches them; per-member gradients
(``vmap(grad)``) against PyTorch's."""

import sys

import numpy as np
import pytest
import torch
import torch.distributions as td
from oracle import assert_close, outcome, raised_alike

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


# Samples drawn by NumPy's generator (the gamma family, Poisson, Binomial, VonMises), which
# raised inside vmap: made as vmap's randomness says, each member's from its own parameters.
# name: (a member's distribution of its parameter p, whether torch.func.vmap batches its
# samples: PyTorch's Beta and Dirichlet samples are a Function without a vmap rule, StudentT's
# fill an unbatched tensor in place, VonMises's rejection loop branches on values)
SAMPLED = {
    "Poisson": (lambda d, p: d.Poisson(p), True),
    "Gamma": (lambda d, p: d.Gamma(p, 2.0), True),
    "Chi2": (lambda d, p: d.Chi2(p), True),
    "Binomial": (lambda d, p: d.Binomial(10, probs=p / 5), True),
    "NegativeBinomial": (lambda d, p: d.NegativeBinomial(3, probs=p / 5), True),
    "Beta": (lambda d, p: d.Beta(p, 2.0), False),
    "Dirichlet": (lambda d, p: d.Dirichlet(p.expand(2) * p.new_tensor([1.0, 2.0])), False),
    "StudentT": (lambda d, p: d.StudentT(p + 4), False),
    "VonMises": (lambda d, p: d.VonMises(p, p), False),
}
PARAMS = [0.5, 1.5, 4.0]


def _samples(lib, d, name, randomness, count=2):
    draw = SAMPLED[name][0]
    params = lib.tensor(PARAMS, dtype=lib.float64)
    return lib.func.vmap(lambda p: draw(d, p).sample((count,)), randomness=randomness)(params)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("randomness", ["error", "same", "different"])
@pytest.mark.parametrize("name", SAMPLED)
def test_samples_drawn_by_numpy_follow_randomness_as_torch(name, randomness):
    ours = outcome(_samples, sg, sd, name, randomness)
    theirs = outcome(_samples, torch, td, name, randomness)
    if SAMPLED[name][1] or randomness != "different":
        if raised_alike(ours, theirs, f"{name} under {randomness!r}"):
            return
        assert tuple(ours.shape) == tuple(theirs.shape)
    else:  # batched where PyTorch's vmap raises (docs/func.md)
        assert isinstance(theirs, Exception) and not isinstance(ours, Exception)
        assert tuple(ours.shape) == (BATCH, 2, *((2,) if name == "Dirichlet" else ()))
    assert ours.dtype == sg.float64


@pytest.mark.parametrize("name", [n for n in SAMPLED if n != "VonMises"])
def test_samples_drawn_by_numpy_follow_each_members_parameters(name):
    """Each member's sample mean is its distribution's mean, within 6 standard errors."""
    sg.manual_seed(0)
    count = 4000
    samples = _samples(sg, sd, name, "different", count)
    params = sg.tensor(PARAMS, dtype=sg.float64)
    mean = vmap(lambda p: SAMPLED[name][0](sd, p).mean)(params)
    error = (vmap(lambda p: SAMPLED[name][0](sd, p).variance)(params) / count).sqrt()
    assert ((samples.mean(1) - mean).abs() < 6 * error).all(), (samples.mean(1), mean)


def test_per_member_reparameterized_gamma_gradients_are_each_members():
    """vmap(grad) through Gamma.rsample: each member's gradient is d sample / d concentration
    at its own draws, the draws a loop with the same seed makes member by member."""

    def member(p):
        return sd.Gamma(p, 1.0).rsample((5,)).sum()

    params = sg.tensor(PARAMS, dtype=sg.float64)
    sg.manual_seed(3)
    ours = vmap(grad(member), randomness="different")(params)
    sg.manual_seed(3)
    draws = sg.distributions.Gamma(params.reshape(3, 1).expand(3, 5), 1.0).sample()
    loop = [
        grad(lambda p, x=x: sd.gamma.StandardGamma.apply(p.expand(5), x).sum())(p)
        for p, x in zip(params, draws)
    ]
    assert_close(ours, sg.stack(loop), "float64")
