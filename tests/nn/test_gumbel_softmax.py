"""F.gumbel_softmax: random, so checked by its properties (soft samples are distributions, hard
ones one-hot at the soft sample's largest entry with the soft gradient, tau's effect, the
Gumbel-max frequencies, one generator stream), and against PyTorch given the same
Exponential(1) draws (both libraries draw them with ``exponential_``, patched here to give a
fixed array): the same samples and gradients, float64 tight."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from oracle import assert_doc_examples_run, assert_raises_as_torch, check_against_torch

import scratchgrad as sg
import scratchgrad.nn.functional as F

RNG = np.random.default_rng(0)


def _sample(logits, seed=0, **options):
    sg.manual_seed(seed)
    return F.gumbel_softmax(logits, **options)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("tau", [0.1, 1.0, 5.0])
def test_soft_samples_are_distributions_along_dim(tau, dim):
    y = _sample(sg.tensor(RNG.standard_normal((6, 5, 4))), tau=tau, dim=dim).numpy()
    assert (y >= 0).all()
    np.testing.assert_allclose(y.sum(dim), 1.0, rtol=1e-12)


@pytest.mark.parametrize("dim", [0, -1])
def test_hard_samples_are_one_hot_at_the_soft_samples_largest_entry(dim):
    logits = sg.tensor(RNG.standard_normal((7, 5)))
    soft = _sample(logits, seed=3, tau=0.7, dim=dim).numpy()
    hard = _sample(logits, seed=3, tau=0.7, dim=dim, hard=True).numpy()
    expected = np.zeros_like(soft)
    np.put_along_axis(expected, np.expand_dims(soft.argmax(dim), dim), 1, axis=dim)
    np.testing.assert_array_equal(hard, expected)


def test_hard_samples_have_the_soft_samples_gradient():
    values, weights = RNG.standard_normal((4, 6)), sg.tensor(RNG.standard_normal((4, 6)))
    grads = []
    for hard in (False, True):
        logits = sg.tensor(values, requires_grad=True)
        (_sample(logits, seed=5, tau=0.5, hard=hard) * weights).sum().backward()
        grads.append(logits.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-15)
    assert np.abs(grads[0]).max() > 1e-3  # a gradient that says something


def test_the_same_seed_gives_the_same_samples_and_another_seed_others():
    logits = sg.tensor(RNG.standard_normal((3, 8)))
    first, again = _sample(logits, seed=11).numpy(), _sample(logits, seed=11).numpy()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, _sample(logits, seed=12).numpy())
    sg.manual_seed(11)
    a, b = F.gumbel_softmax(logits).numpy(), F.gumbel_softmax(logits).numpy()
    assert not np.array_equal(a, b)  # each call draws anew from the stream
    np.testing.assert_array_equal(a, first)


def test_a_low_tau_gives_nearly_one_hot_samples_and_a_high_one_nearly_uniform():
    logits = sg.zeros(2000, 4)
    cold = _sample(logits, tau=0.05).numpy()
    hot = _sample(logits, tau=100.0).numpy()
    assert cold.max(-1).mean() > 0.95
    assert np.abs(hot - 0.25).max() < 0.05


def test_the_largest_entry_falls_on_each_class_with_its_softmax_probability():
    """The Gumbel-max trick: argmax(logits + g) is a sample of softmax(logits)."""
    logits = sg.tensor([[0.0, 1.0, 2.0]]).expand(20000, 3)
    hard = _sample(logits, seed=1, hard=True).numpy()
    expected = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    np.testing.assert_allclose(hard.mean(0), expected, atol=0.015)  # 4 standard errors


@pytest.fixture
def fixed_draws(monkeypatch):
    """Both libraries' ``exponential_`` give the entries of one array of Exponential(1) draws,
    in the tensor's dtype; ``draws[0]`` is set by the test."""
    draws = [None]

    def ours(self, lambd=1.0, *, generator=None):
        return sg.tensor(draws[0], dtype=self.dtype)

    def theirs(self, lambd=1.0, *, generator=None):
        return self.copy_(torch.tensor(draws[0]))

    monkeypatch.setattr(sg.Tensor, "exponential_", ours)
    monkeypatch.setattr(torch.Tensor, "exponential_", theirs)
    return draws


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    "options",
    [dict(), dict(tau=0.3), dict(tau=2.0, dim=0), dict(hard=True), dict(tau=0.5, hard=True, dim=1)],
    ids=str,
)
def test_matches_torch_given_the_same_exponential_draws(fixed_draws, options, dtype):
    shape = (3, 4, 5)
    fixed_draws[0] = RNG.standard_exponential(shape)
    check_against_torch(
        lambda x: F.gumbel_softmax(x, **options),
        lambda x: TF.gumbel_softmax(x, **options),
        [RNG.standard_normal(shape)],
        dtype,
    )


def test_the_soft_sample_is_softmax_of_logits_plus_gumbel_noise(fixed_draws):
    """The formula with the noise drawn as PyTorch does: g = -log(e), e ~ Exponential(1)."""
    logits, draws = RNG.standard_normal((2, 6)), RNG.standard_exponential((2, 6))
    fixed_draws[0] = draws
    scores = (logits - np.log(draws)) / 0.4
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    out = F.gumbel_softmax(sg.tensor(logits), tau=0.4).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_eps_warns_as_torch_that_it_has_no_effect():
    for given, library in ((TF, torch), (F, sg)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            given.gumbel_softmax(library.zeros(2, 3))
            given.gumbel_softmax(library.zeros(2, 3), eps=1e-5)
        assert [str(w.message) for w in caught] == [
            "`eps` parameter is deprecated and has no effect."
        ]
        assert caught[0].filename == __file__  # the warning points at the caller


def test_errors_as_torch():
    assert_raises_as_torch(
        lambda m: m.nn.functional.gumbel_softmax(m.tensor([1, 2])),
        RuntimeError,
        "continuous probability distribution",
    )
    assert_raises_as_torch(
        lambda m: m.nn.functional.gumbel_softmax(m.zeros(2, 3), dim=2),
        IndexError,
        r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)",
    )


def test_jitted_draws_follow_the_eager_stream():
    logits = sg.tensor(RNG.standard_normal((4, 3)))
    sample = sg.jit(lambda x: F.gumbel_softmax(x, tau=0.5, hard=True) * 1.0)
    sg.manual_seed(2)
    jitted = [sample(logits).numpy() for _ in range(4)]
    sg.manual_seed(2)
    eager = [F.gumbel_softmax(logits, tau=0.5, hard=True).numpy() for _ in range(4)]
    for a, b in zip(jitted, eager):
        np.testing.assert_array_equal(a, b)
    assert not all(np.array_equal(jitted[0], a) for a in jitted[1:])  # fresh draws


def test_doc_example_runs():
    assert_doc_examples_run(F.gumbel_softmax, {"gumbel_softmax": F.gumbel_softmax})
