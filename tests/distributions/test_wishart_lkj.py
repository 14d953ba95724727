"""Wishart and LKJCholesky against torch.distributions: log_prob (of PyTorch's samples),
entropy, moments and KL(Wishart || Wishart) with the gradients of every parameter in float64,
over batch shapes that broadcast; sample shapes and support; sample moments against the
analytic ones (fixed seed, 5 standard errors); validation errors as PyTorch's."""

import warnings

import numpy as np
import pytest
import torch
import torch.distributions as TD
from oracle import assert_close, assert_raises_as_torch, check_outputs_and_gradients, leaves

import scratchgrad as sg
import scratchgrad.distributions as D

RNG = np.random.default_rng(11)
EXACT = (1e-9, 1e-12)
P = 3


def spd(*batch, n=P):
    a = RNG.standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + np.eye(n)


# parameterization -> (df, the matrix) as arrays: df of batch (2, 1), the matrix of batch (3,)
WISHART = {
    "covariance_matrix": lambda: (RNG.uniform(P, P + 3, (2, 1)), spd(3)),
    "precision_matrix": lambda: (RNG.uniform(P, P + 3, (2, 1)), spd(3)),
    "scale_tril": lambda: (RNG.uniform(P, P + 3, (2, 1)), np.linalg.cholesky(spd(3))),
}


def _wishart(m, name, df, matrix):
    return m.Wishart(df, **{name: matrix})


def _wishart_both(name):
    df, matrix = WISHART[name]()
    params = [leaves(df), leaves(matrix)]
    ours = _wishart(D, name, *(x for x, _ in params))
    theirs = _wishart(TD, name, *(t for _, t in params))
    return ours, theirs, params


@pytest.mark.parametrize("name", WISHART)
def test_wishart_log_prob_is_pytorchs(name):
    ours, theirs, params = _wishart_both(name)
    with torch.no_grad():
        value = theirs.sample((4,)).numpy()  # of sample shape (4,) + batch (2, 3)
    x, t = leaves(value)
    check_outputs_and_gradients(
        ours.log_prob(x), theirs.log_prob(t), [*params, (x, t)], what=name, tolerance=EXACT
    )


@pytest.mark.parametrize("method", ["entropy", "mean", "variance", "stddev"])
@pytest.mark.parametrize("name", WISHART)
def test_wishart_entropy_and_moments_are_pytorchs(name, method):
    ours, theirs, params = _wishart_both(name)
    get = (lambda d: d.entropy()) if method == "entropy" else (lambda d: getattr(d, method))
    tolerance = (1e-7, 1e-9) if method == "entropy" else EXACT  # PyTorch's digamma's gradient
    check_outputs_and_gradients(get(ours), get(theirs), params, what=method, tolerance=tolerance)


def test_wishart_mode_is_pytorchs_nan_where_df_is_small():
    cov = spd()
    df = np.array([P + 0.5, P + 1.0, P + 2.5])  # no mode for df <= p + 1
    ours = D.Wishart(sg.tensor(df), covariance_matrix=sg.tensor(cov)).mode
    theirs = TD.Wishart(torch.tensor(df), covariance_matrix=torch.tensor(cov)).mode
    assert np.isnan(ours.numpy()[:2]).all()
    assert_close(ours, theirs)


def test_kl_wishart_wishart_is_pytorchs_bregman_divergence():
    (p, p_theirs, p_params), (q, q_theirs, q_params) = (
        _wishart_both("covariance_matrix"),
        _wishart_both("scale_tril"),
    )
    ours, theirs = D.kl_divergence(p, q), TD.kl_divergence(p_theirs, q_theirs)
    params = [*p_params, *q_params]  # p's get none: theta_p is detached, as PyTorch's
    check_outputs_and_gradients(ours, theirs, params, what="KL", tolerance=(1e-7, 1e-9))


def test_wishart_rsample_shape_gradient_and_moments():
    df, cov = 5.5, spd()
    df_leaf = sg.tensor(df, requires_grad=True)
    d = D.Wishart(df_leaf, covariance_matrix=sg.tensor(cov))
    assert tuple(d.batch_shape) == () and tuple(d.event_shape) == (P, P)
    assert tuple(d.expand((2,)).rsample((4,)).shape) == (4, 2, P, P)
    sg.manual_seed(0)
    samples = d.rsample((20000,))
    assert samples.requires_grad
    samples.sum().backward()
    assert df_leaf.grad is not None and np.isfinite(df_leaf.grad.numpy())
    x = samples.detach().numpy()
    assert np.allclose(x, np.swapaxes(x, -1, -2)) and (np.linalg.eigvalsh(x) > 0).all()
    mean = df * cov
    variance = df * (cov**2 + np.outer(np.diag(cov), np.diag(cov)))
    assert (np.abs(x.mean(0) - mean) < 5 * np.sqrt(variance / len(x))).all()
    np.testing.assert_allclose(x.var(0), variance, rtol=0.1)


def test_wishart_expand_keeps_the_distribution():
    d = D.Wishart(sg.tensor(4.0), covariance_matrix=sg.tensor(spd()))
    value = sg.tensor(spd(2))
    expanded = d.expand((2,))
    assert tuple(expanded.batch_shape) == (2,)
    assert_close(expanded.log_prob(value), d.log_prob(value).numpy())
    assert_close(expanded.mean, np.broadcast_to(d.mean.numpy(), (2, P, P)))


def test_wishart_errors_are_pytorchs():
    eye = {lib: lib.eye(P, dtype=lib.float64) for lib in (sg, torch)}
    for m, lib in ((D, sg), (TD, torch)):
        with pytest.raises(AssertionError, match="Exactly one of covariance_matrix"):
            m.Wishart(4.0, covariance_matrix=eye[lib], scale_tril=eye[lib])
        with pytest.raises(ValueError, match="at least two-dimensional"):
            m.Wishart(4.0, covariance_matrix=lib.ones(P, dtype=lib.float64))
        with pytest.raises(ValueError, match="expected to be greater than ndim - 1 = 2"):
            m.Wishart(lib.tensor([4.0, 2.0]), covariance_matrix=eye[lib])
        with pytest.warns(UserWarning, match="Low df values detected"):
            m.Wishart(lib.tensor(2.5), covariance_matrix=eye[lib])
        with pytest.raises(ValueError, match="covariance_matrix"):
            m.Wishart(4.0, covariance_matrix=-eye[lib])  # not positive definite
        with pytest.raises(ValueError, match="support"):
            m.Wishart(4.0, covariance_matrix=eye[lib]).log_prob(-eye[lib])
    assert_raises_as_torch(
        lambda lib: (D if lib is sg else TD).Wishart(
            lib.ones(2), covariance_matrix=lib.eye(P).expand(3, P, P)
        ),
        RuntimeError,
        "",
    )


# ---- LKJCholesky ----


@pytest.mark.parametrize("dim", [2, 3, 5])
def test_lkj_log_prob_is_pytorchs(dim):
    c, c_theirs = leaves(RNG.uniform(0.3, 3.0, (2,)))
    theirs = TD.LKJCholesky(dim, c_theirs)
    with torch.no_grad():
        value = theirs.sample((4,)).numpy()
    x, t = leaves(value)
    ours = D.LKJCholesky(dim, c).log_prob(x)
    check_outputs_and_gradients(
        ours, theirs.log_prob(t), [(c, c_theirs), (x, t)], what=f"dim {dim}", tolerance=EXACT
    )


@pytest.mark.parametrize("eta", [0.5, 1.0, 3.0])
def test_lkj_samples_are_cholesky_factors_of_lkj_correlations(eta):
    dim, n = 4, 20000
    d = D.LKJCholesky(dim, sg.tensor([eta, eta], dtype=sg.float64))
    sg.manual_seed(1)
    L = d.sample((n,))
    assert tuple(L.shape) == (n, 2, dim, dim) and not L.requires_grad
    assert D.constraints.corr_cholesky.check(L).numpy().all()
    corr = (L @ L.mT).numpy()[..., np.tril_indices(dim, -1)[0], np.tril_indices(dim, -1)[1]]
    # each correlation is 2 B - 1, B of Beta(a, a), a = eta - 1 + dim / 2: mean 0 and
    # variance 1 / (2 eta + dim - 1)
    variance = 1 / (2 * eta + dim - 1)
    assert (np.abs(corr.mean(0)) < 5 * np.sqrt(variance / n)).all()
    np.testing.assert_allclose(corr.var(0), variance, rtol=0.05)


def test_lkj_expand_and_shapes():
    d = D.LKJCholesky(3, 2.0)
    assert tuple(d.batch_shape) == () and tuple(d.event_shape) == (3, 3)
    expanded = d.expand((2, 4))
    assert tuple(expanded.sample((5,)).shape) == (5, 2, 4, 3, 3)
    assert_close(expanded.log_prob(sg.eye(3)), np.full((2, 4), d.log_prob(sg.eye(3)).item()))


def test_lkj_errors_are_pytorchs():
    for m, lib in ((D, sg), (TD, torch)):
        with pytest.raises(ValueError, match="greater than or equal to 2. Found dim=1"):
            m.LKJCholesky(1)
        with pytest.raises(ValueError):
            m.LKJCholesky(3, lib.tensor(-1.0))
        with pytest.raises(ValueError, match="support"):
            m.LKJCholesky(3).log_prob(2 * lib.eye(3))
        d = m.LKJCholesky(3)
        for name in ("mean", "variance"):
            with pytest.raises(NotImplementedError):
                getattr(d, name)
        with pytest.raises(NotImplementedError):
            d.entropy()
        with pytest.raises(NotImplementedError):
            d.rsample()


def test_the_new_submodules_import():
    from scratchgrad.distributions.lkj_cholesky import LKJCholesky
    from scratchgrad.distributions.wishart import Wishart

    assert (Wishart, LKJCholesky) == (D.Wishart, D.LKJCholesky)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Singular sample" warning for a healthy df
        D.Wishart(sg.tensor(10.0), covariance_matrix=sg.eye(2)).rsample((100,))
