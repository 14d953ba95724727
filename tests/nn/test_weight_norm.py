"""nn.utils.weight_norm, remove_weight_norm, spectral_norm and remove_spectral_norm (PyTorch's
legacy hook forms) against PyTorch: parameter and state_dict names and shapes, the forward and
every gradient after a few training steps (float64 tight, float32 loose), the power
iteration's buffers, and the errors."""

import doctest
import warnings

import numpy as np
import pytest
import torch
from oracle import assert_close, check_against_torch, parameter_pairs

import scratchgrad as sg
from scratchgrad.nn.utils import (
    remove_spectral_norm,
    remove_weight_norm,
    spectral_norm,
    weight_norm,
)

# the legacy weight_norm's deprecation warning, ours as PyTorch's (test_weight_norm_is_deprecated)
pytestmark = pytest.mark.filterwarnings("ignore:`nn.utils.weight_norm` is deprecated:FutureWarning")

DTYPES = ["float64", "float32"]
LAYERS = [
    ("linear", lambda nn: nn.Linear(3, 4), (5, 3)),
    ("conv2d", lambda nn: nn.Conv2d(2, 3, 2), (2, 2, 4, 4)),
    ("conv_transpose2d", lambda nn: nn.ConvTranspose2d(2, 3, 2), (2, 2, 3, 3)),
]


def _torch_weight_norm(module, **options):
    with warnings.catch_warnings():  # PyTorch's deprecation warning
        warnings.simplefilter("ignore", FutureWarning)
        return torch.nn.utils.weight_norm(module, **options)


def _pair(build, reparametrize_ours, reparametrize_theirs, dtype):
    """The layer in both libraries with PyTorch's initial state, each reparametrized, ours
    loaded from PyTorch's state_dict (whose keys must be ours)."""
    torch.manual_seed(0)
    theirs = reparametrize_theirs(build(torch.nn).to(getattr(torch, dtype)))
    ours = reparametrize_ours(build(sg.nn).to(getattr(sg, dtype)))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, None, -1, -2])
@pytest.mark.parametrize(("build", "shape"), [l[1:] for l in LAYERS], ids=[l[0] for l in LAYERS])
def test_weight_norm_matches_torch(build, shape, dim, dtype):
    ours, theirs = _pair(
        build,
        lambda m: weight_norm(m, dim=dim),
        lambda m: _torch_weight_norm(m, dim=dim),
        dtype,
    )
    assert ours.weight_g.shape == tuple(theirs.weight_g.shape)
    x = np.random.default_rng(1).standard_normal(shape)
    for step in range(2):  # the weight is recomputed from the changed g and v at each forward
        check_against_torch(ours, theirs, [x], dtype, what=f"step {step}")
        for _, p, q in parameter_pairs(ours, theirs):
            with sg.no_grad():
                p -= 0.1 * p.grad
            with torch.no_grad():
                q -= 0.1 * q.grad
            p.grad, q.grad = None, None
    assert_close(ours.weight, theirs.weight, dtype)


def test_weight_norm_is_deprecated_as_torchs():
    for lib in (torch, sg):
        with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
            lib.nn.utils.weight_norm(lib.nn.Linear(3, 4))


def test_weight_norm_names_shapes_and_start():
    layer = weight_norm(sg.nn.Linear(3, 4))
    assert [name for name, _ in layer.named_parameters()] == ["bias", "weight_g", "weight_v"]
    assert layer.weight_g.shape == (4, 1) and layer.weight_v.shape == (4, 3)
    assert layer.weight.requires_grad and not isinstance(layer.weight, sg.nn.Parameter)
    assert_close(layer.weight.detach(), layer.weight_v.detach().numpy(), "float32")  # g = |v|
    whole = weight_norm(sg.nn.Linear(3, 4), dim=None)
    assert whole.weight_g.shape == ()


def test_remove_weight_norm_matches_torch():
    ours, theirs = _pair(lambda nn: nn.Linear(3, 4), weight_norm, _torch_weight_norm, "float64")
    with sg.no_grad():
        ours.weight_g.mul_(2.0)
    with torch.no_grad():
        theirs.weight_g.mul_(2.0)
    remove_weight_norm(ours)
    torch.nn.utils.remove_weight_norm(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["bias", "weight"]
    assert isinstance(ours.weight, sg.nn.Parameter)
    assert_close(ours.weight, theirs.weight)
    assert ours._forward_pre_hooks == ()


@pytest.mark.parametrize(
    ("call", "kind", "message"),
    [
        (
            lambda nn, u: u.remove_weight_norm(nn.Linear(2, 2)),
            ValueError,
            "weight_norm of 'weight' not found",
        ),
        (
            lambda nn, u: u.weight_norm(u.weight_norm(nn.Linear(2, 2))),
            RuntimeError,
            "Cannot register two weight_norm hooks",
        ),
        (lambda nn, u: u.weight_norm(nn.Linear(2, 2), name="foo"), AttributeError, "foo"),
        (
            lambda nn, u: u.remove_spectral_norm(nn.Linear(2, 2)),
            ValueError,
            "spectral_norm of 'weight' not found",
        ),
        (
            lambda nn, u: u.spectral_norm(u.spectral_norm(nn.Linear(2, 2))),
            RuntimeError,
            "Cannot register two spectral_norm hooks",
        ),
        (
            lambda nn, u: u.spectral_norm(nn.Linear(2, 2), n_power_iterations=0),
            ValueError,
            "n_power_iterations to be positive",
        ),
        (
            lambda nn, u: u.spectral_norm(nn.Linear(2, 2, bias=False), name="bias"),
            ValueError,
            "parameter `bias` is None",
        ),
    ],
)
def test_errors_as_torch(call, kind, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(kind):
            call(torch.nn, torch.nn.utils)
    with pytest.raises(kind, match=message):
        call(sg.nn, sg.nn.utils)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("iterations", [1, 3])
@pytest.mark.parametrize(("build", "shape"), [l[1:] for l in LAYERS], ids=[l[0] for l in LAYERS])
def test_spectral_norm_matches_torch(build, shape, iterations, dtype):
    """From PyTorch's u and v: the same power iteration in training (buffers moved in place),
    none in eval, and the same output and gradients."""
    ours, theirs = _pair(
        build,
        lambda m: spectral_norm(m, n_power_iterations=iterations),
        lambda m: torch.nn.utils.spectral_norm(m, n_power_iterations=iterations),
        dtype,
    )
    x = np.random.default_rng(2).standard_normal(shape)
    for train in (True, True, False):
        ours.train(train), theirs.train(train)
        check_against_torch(ours, theirs, [x], dtype, what=f"train={train}")
        for name in ("weight_u", "weight_v"):
            assert_close(getattr(ours, name), getattr(theirs, name), dtype, name)
        for _, p, q in parameter_pairs(ours, theirs):
            p.grad, q.grad = None, None


def test_spectral_norm_shapes_and_largest_singular_value_one():
    layer = spectral_norm(sg.nn.ConvTranspose2d(3, 4, 2))  # dim 1: the output channels
    assert layer.weight_u.shape == (4,) and layer.weight_v.shape == (12,)
    linear = spectral_norm(sg.nn.Linear(5, 6), n_power_iterations=50)
    linear(sg.zeros(1, 5))
    assert np.linalg.norm(linear.weight.detach().numpy(), 2) == pytest.approx(1.0, rel=1e-5)
    assert [name for name, _ in linear.named_parameters()] == ["bias", "weight_orig"]
    assert [name for name, _ in linear.named_buffers()] == ["weight_u", "weight_v"]


def test_remove_spectral_norm_matches_torch():
    ours, theirs = _pair(
        lambda nn: nn.Linear(3, 4), spectral_norm, torch.nn.utils.spectral_norm, "float64"
    )
    remove_spectral_norm(ours)
    torch.nn.utils.remove_spectral_norm(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["bias", "weight"]
    assert_close(ours.weight, theirs.weight)
    assert ours._forward_pre_hooks == ()


def test_doc_examples_run():
    from scratchgrad.nn.utils import reparametrize

    assert doctest.testmod(reparametrize).failed == 0
