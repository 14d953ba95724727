"""Transforms and TransformedDistribution against torch.distributions.transforms: values,
inverses, log-determinants and their gradients; sign, domains and codomains, caching; the
SAC policy (a tanh-squashed Gaussian's rsample and the log_prob of that sample, with every
gradient PyTorch's for the same noise)."""

import numpy as np
import pytest
import torch
import torch.distributions as TD
import torch.distributions.transforms as TT
from oracle import assert_close, check_outputs_and_gradients, leaves

import scratchgrad as sg
import scratchgrad.distributions as D
import scratchgrad.distributions.transforms as T

RNG = np.random.default_rng(3)

# name -> (build(transforms module, lib), a domain of x)
TRANSFORMS = {
    "Exp": (lambda m, lib: m.ExpTransform(), lambda s: RNG.standard_normal(s)),
    "Sigmoid": (lambda m, lib: m.SigmoidTransform(), lambda s: RNG.standard_normal(s)),
    "Tanh": (lambda m, lib: m.TanhTransform(), lambda s: RNG.standard_normal(s)),
    "Affine": (
        lambda m, lib: m.AffineTransform(lib.tensor([1.0, -2.0], dtype=lib.float64), -3.0),
        lambda s: RNG.standard_normal(s),
    ),
    "Affine(event_dim=1)": (
        lambda m, lib: m.AffineTransform(0.5, lib.tensor([2.0, -0.5], dtype=lib.float64), 1),
        lambda s: RNG.standard_normal(s),
    ),
    "Power": (
        lambda m, lib: m.PowerTransform(lib.tensor([0.5, -2.0], dtype=lib.float64)),
        lambda s: RNG.uniform(0.5, 2, s),
    ),
    "StickBreaking": (lambda m, lib: m.StickBreakingTransform(), lambda s: RNG.standard_normal(s)),
    "Compose": (
        lambda m, lib: m.ComposeTransform(
            [m.AffineTransform(0.0, 2.0), m.ExpTransform(), m.PowerTransform(0.5)]
        ),
        lambda s: RNG.standard_normal(s),
    ),
    "Exp.inv": (lambda m, lib: m.ExpTransform().inv, lambda s: RNG.uniform(0.5, 2, s)),
    "Compose with StickBreaking": (
        lambda m, lib: m.ComposeTransform(
            [m.AffineTransform(0.0, 2.0), m.StickBreakingTransform()]
        ),
        lambda s: RNG.standard_normal(s),
    ),
}


@pytest.mark.parametrize("name", TRANSFORMS)
def test_values_inverses_and_jacobians_are_pytorchs(name):
    build, domain = TRANSFORMS[name]
    ours, theirs = build(T, sg), build(TT, torch)
    x = leaves(domain((3, 2)))
    y, y_t = ours(x[0]), theirs(x[1])
    outs = [y, ours.inv(y), ours.log_abs_det_jacobian(x[0], y)]
    expected = [y_t, theirs.inv(y_t), theirs.log_abs_det_jacobian(x[1], y_t)]
    check_outputs_and_gradients(outs, expected, [x], what=name)
    assert_close(outs[1], x[1])  # the inverse undoes it
    assert ours.bijective == theirs.bijective
    assert repr(ours) == repr(theirs), name
    assert repr(ours.domain) == repr(theirs.domain), name
    assert repr(ours.codomain) == repr(theirs.codomain), name
    assert ours.forward_shape((3, 2)) == tuple(theirs.forward_shape((3, 2)))
    assert ours.inverse_shape((3, 2)) == tuple(theirs.inverse_shape((3, 2)))
    if "StickBreaking" in name:  # no sign: not monotone
        return
    sign, sign_t = ours.sign, theirs.sign
    if isinstance(sign_t, torch.Tensor):
        assert_close(sign, sign_t)
    else:
        assert sign == sign_t


def test_softmax_and_abs_are_pytorchs_and_have_no_jacobian():
    x = leaves(RNG.standard_normal((3, 4)))
    for build in (lambda m: m.SoftmaxTransform(), lambda m: m.AbsTransform()):
        ours, theirs = build(T), build(TT)
        check_outputs_and_gradients(
            [ours(x[0]), ours.inv(ours(x[0]))], [theirs(x[1]), theirs.inv(theirs(x[1]))], [x]
        )
        for t in (ours, theirs):
            with pytest.raises(NotImplementedError):
                t.log_abs_det_jacobian(x[0] if t is ours else x[1], None)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # atanh(1.0), uncached
def test_cache_returns_the_input_that_made_a_value_and_its_misuse_raises_as_pytorch():
    for m, lib in ((T, sg), (TT, torch)):
        t = m.TanhTransform(cache_size=1)
        x = lib.tensor([30.0], dtype=lib.float64)
        y = t(x)
        assert y.item() == 1.0 and t.inv(y) is x  # atanh(1.0) would be inf
        assert t(x) is y and m.TanhTransform().inv(y).isinf().all()
        assert t.with_cache(1) is t and t.with_cache(0)._cache_size == 0
        with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
            m.ExpTransform(cache_size=2)
        assert m.ExpTransform() == m.ExpTransform() and m.ExpTransform().inv.inv == m.ExpTransform()
        assert m.ComposeTransform([m.ExpTransform()], cache_size=1).parts[0]._cache_size == 1


def test_the_sac_policy_is_pytorchs():
    """a = tanh(mu + std * eps), log pi(a) through the cached pre-tanh value; the loss and the
    gradients of mu and log_std are PyTorch's for the same eps."""
    mu, log_std = RNG.standard_normal((5, 2)), RNG.standard_normal((5, 2)) - 1
    mu[0, 0] = 20.0  # a saturated action: tanh rounds to 1.0, its log_prob stays finite
    sg.manual_seed(4)
    results = []
    for lib, m in ((sg, D), (torch, TD)):
        mu_, log_std_ = (lib.tensor(a, requires_grad=True) for a in (mu, log_std))
        policy = m.TransformedDistribution(
            m.Normal(mu_, log_std_.exp()), [m.TanhTransform(cache_size=1)]
        )
        if lib is sg:
            sg.manual_seed(4)
            action = policy.rsample()
            sg.manual_seed(4)
            eps = torch.tensor(sg.randn(5, 2, dtype=sg.float64).numpy())
        else:  # the same noise through PyTorch's transforms
            action = policy.transforms[0](mu_ + log_std_.exp() * eps)
        log_prob = policy.log_prob(action).sum(-1)
        loss = (0.2 * log_prob - action.sum(-1)).mean()
        loss.backward()
        results.append((action, log_prob, loss, mu_.grad, log_std_.grad))
    assert np.isfinite(results[0][1].detach().numpy()).all()
    for ours, theirs in zip(*results):
        assert_close(ours, theirs, tolerance=(1e-10, 1e-12))


def test_transformed_distribution_shapes_and_errors_are_pytorchs():
    for m, lib in ((D, sg), (TD, torch)):
        base = m.Normal(lib.zeros(4, 3), lib.ones(4, 3))
        d = m.TransformedDistribution(base, [m.StickBreakingTransform()])
        assert (tuple(d.batch_shape), tuple(d.event_shape)) == ((4,), (4,))
        assert tuple(d.sample((2,)).shape) == (2, 4, 4)
        assert tuple(d.expand((5, 4)).batch_shape) == (5, 4)
        assert (
            d.has_rsample
            and not m.TransformedDistribution(
                m.Bernoulli(lib.tensor(0.5)), m.ExpTransform()
            ).has_rsample
        )
        with pytest.raises(ValueError, match="transforms must be a Transform or list, but was exp"):
            m.TransformedDistribution(base, "exp")
        with pytest.raises(ValueError, match="base_distribution needs to have shape"):
            m.TransformedDistribution(m.Normal(0.0, 1.0), m.StickBreakingTransform())
        with pytest.raises(ValueError, match="within the support"):
            m.LogNormal(0.0, 1.0).log_prob(lib.tensor(-1.0))


def test_a_transform_of_parameters_that_do_not_broadcast_raises_runtime_error_as_pytorchs():
    # NumPy's broadcast_shapes raised its ValueError where PyTorch's raises RuntimeError
    for m, lib in ((D, sg), (TD, torch)):
        base = m.Normal(lib.zeros(4), lib.ones(4))
        with pytest.raises(RuntimeError, match="broadcast"):
            m.TransformedDistribution(base, m.AffineTransform(lib.zeros(3), 1.0))
        with pytest.raises(RuntimeError, match="broadcast"):
            m.transforms.PowerTransform(lib.ones(3)).forward_shape((4,))
