"""Differences found by a differential sweep of scratchgrad.distributions against
torch.distributions, each compared with PyTorch: gradients at the edges of a formula's domain
(where PyTorch's gradient is 0 or infinite, not NaN), the mode's gradient at a clamp, Chi2's
expand and Binomial's error message."""

import numpy as np
import pytest
import torch
import torch.distributions as TD
from oracle import assert_close, leaves

import scratchgrad as sg
import scratchgrad.distributions as D


def _grads(lib, out, inputs):
    return lib.autograd.grad(out.sum(), inputs, allow_unused=True)


def _compare(build, arrays):
    """``build(module, *tensors)`` in both libraries: the output and every input's gradient."""
    pairs = [leaves(a) for a in arrays]
    ours = build(D, *(p[0] for p in pairs))
    theirs = build(TD, *(p[1] for p in pairs))
    assert_close(ours, theirs, tolerance=(1e-10, 1e-12), what="output")
    got = _grads(sg, ours, [p[0] for p in pairs])
    expected = _grads(torch, theirs, [p[1] for p in pairs])
    for i, (g, e) in enumerate(zip(got, expected)):
        assert_close(g, e, tolerance=(1e-10, 1e-12), what=f"gradient {i}")


def test_laplace_icdf_gradient_at_the_ends_and_outside():
    # sign's gradient is 0 even where the incoming one is infinite or NaN, as PyTorch's
    u = np.array([0.0, 1.0, -0.1, 1.1, 0.3])
    _compare(lambda m, loc, scale, u: m.Laplace(loc, scale).icdf(u), [0.5, 2.0, u])


def test_sign_and_floor_gradients_are_zero_under_an_infinite_gradient():
    x = np.array([-1.5, 0.5, 2.0])
    for name in ("sign", "floor", "ceil", "trunc"):
        ours, theirs = leaves(x)
        got = _grads(sg, getattr(ours, name)() * float("inf"), [ours])[0]
        expected = _grads(torch, getattr(theirs, name)() * float("inf"), [theirs])[0]
        assert_close(got, expected, what=name)


def test_student_t_variance_gradient_at_df_two_and_below():
    df = np.array([0.5, 1.0, 1.5, 2.0, 3.0])
    _compare(lambda m, df, scale: m.StudentT(df, 0.0, scale).variance, [df, np.full(5, 1.5)])
    _compare(lambda m, df, scale: m.StudentT(df, 0.0, scale).stddev, [df, np.full(5, 1.5)])


def test_binomial_mode_gradient_where_the_clamp_holds():
    # PyTorch clamps at total_count: where (n + 1) p rounds down to n, n gets no gradient
    n, p = np.array([3.0, 5.0, 4.0]), np.array([0.3, 0.9, 1.0])
    _compare(lambda m, n, p: m.Binomial(n, p).mode, [n, p])


def test_chi2_expand():
    # the batch shape of every result is the expanded one, not the parameters'
    df = np.array([0.5, 2.0, 3.0])
    value = np.array([[0.5], [1.0]])
    for build in (
        lambda m, df: m.Chi2(df).expand((2, 3)).log_prob(_tensor(m, value)),
        lambda m, df: m.Chi2(df).expand((2, 3)).mean,
        lambda m, df: m.Chi2(df).expand((2, 3)).variance,
    ):
        _compare(build, [df])
    assert D.Chi2(sg.tensor(df)).expand((2, 3)).sample().shape == (2, 3)


def _tensor(m, array):
    return torch.tensor(array) if m is TD else sg.tensor(array)


def test_binomial_enumerate_support_error_names_the_method():
    n = [2.0, 3.0]
    with pytest.raises(NotImplementedError) as theirs:
        TD.Binomial(torch.tensor(n), torch.tensor(0.5)).enumerate_support()
    with pytest.raises(NotImplementedError) as ours:
        D.Binomial(sg.tensor(n), sg.tensor(0.5)).enumerate_support()
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("validate_args", [True, False])
@pytest.mark.parametrize("bad", [1.5, -1.0, float("nan")])
def test_continuous_bernoulli_checks_given_probs_as_pytorch(bad, validate_args):
    # PyTorch checks probs before clamping them whenever validate_args is given, even False
    probs = [0.3, bad]
    with pytest.raises(ValueError) as theirs:
        TD.ContinuousBernoulli(torch.tensor(probs), validate_args=validate_args)
    with pytest.raises(ValueError) as ours:
        D.ContinuousBernoulli(sg.tensor(probs), validate_args=validate_args)
    assert str(ours.value) == str(theirs.value)


def test_precision_matrix_of_a_singular_scale_tril_raises_as_pytorchs():
    # a zero on the diagonal (validate_args=False): PyTorch's cholesky_inverse raises; inverting
    # L L^T gave entries of 1e17
    tril = [[0.3, 0.0, 0.0], [-1.5, 0.3, 0.0], [-1.5, -1.5, 0.0]]
    for m, lib in ((TD, torch), (D, sg)):
        d = m.MultivariateNormal(lib.zeros(3), scale_tril=lib.tensor(tril), validate_args=False)
        with pytest.raises(RuntimeError, match="cholesky_inverse: The diagonal element 3 is zero"):
            _ = d.precision_matrix


def test_binomial_log_prob_and_entropy_gradients_at_logits_zero():
    # max(logits, 0) inside log(1 + exp(logits)) has gradient 1/2 at 0 in PyTorch's (clamp's 1
    # made d log_prob / d logits of Binomial(1, logits=0) at [0, 1] -1, not 0)
    counts = np.array([0.0, 1.0, 2.0, 3.0])
    _compare(lambda m, x, v: m.Binomial(3, logits=x).log_prob(v), [np.zeros(1), counts])
    _compare(lambda m, x: m.Binomial(3, logits=x).entropy(), [np.array([0.0, 0.5])])
