"""nn.utils.parametrizations (weight_norm, spectral_norm, orthogonal) against PyTorch's: on
layers with PyTorch's weights (and, where PyTorch draws random numbers, its buffers), the same
state_dict keys and values, parametrized weight, outputs, gradients of every original and
values after optimizer steps; the power iteration in training mode only; orthogonality; removal;
the errors; and the maps scratchgrad does not have raising before the module changes."""

import copy
import doctest

import numpy as np
import pytest
import torch
from oracle import assert_close, assert_raises_as_torch, check_against_torch
from test_parametrize import X, assert_states_close, parametrized_pair, train_against_torch

import scratchgrad as sg
from scratchgrad.nn.utils import parametrizations, parametrize

DTYPES = ["float64", "float32"]
LAYERS = {
    "linear": (lambda nn: nn.Linear(4, 3), (5, 4)),
    "conv2d": (lambda nn: nn.Conv2d(2, 3, 2), (2, 2, 4, 4)),
    "conv_transpose2d": (lambda nn: nn.ConvTranspose2d(2, 3, 2), (2, 2, 3, 3)),
}


def inputs(shape):
    return np.random.default_rng(5).standard_normal(shape)


def loaded_pair(make, register, dtype="float64"):
    """As ``parametrized_pair``, with ours then loading PyTorch's state (its random draws)."""
    ours, theirs = parametrized_pair(make, register, dtype)
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def weight_norm(**options):
    return lambda lib, m: lib.nn.utils.parametrizations.weight_norm(m, **options)


def spectral_norm(**options):
    return lambda lib, m: lib.nn.utils.parametrizations.spectral_norm(m, **options)


def orthogonal(**options):
    return lambda lib, m: lib.nn.utils.parametrizations.orthogonal(m, **options)


# ---- weight norm -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, None, -1, -2])
@pytest.mark.parametrize("layer", LAYERS)
def test_weight_norm_matches_torch(layer, dim, dtype):
    make, shape = LAYERS[layer]
    ours, theirs = parametrized_pair(make, weight_norm(dim=dim), dtype)
    assert list(ours.state_dict())[-2:] == [
        "parametrizations.weight.original0",
        "parametrizations.weight.original1",
    ]
    assert_states_close(ours, theirs, dtype)  # g and v computed as PyTorch's
    assert_close(ours.weight, theirs.weight, dtype, "weight")
    train_against_torch(ours, theirs, inputs(shape), dtype, lr=0.1)
    assert_close(ours.weight, theirs.weight, dtype, "weight after training")


def test_weight_norm_adam_steps_match_torch():
    ours, theirs = parametrized_pair(LAYERS["linear"][0], weight_norm())
    train_against_torch(ours, theirs, inputs((5, 4)), "float64", "Adam", steps=3, lr=0.05)


def test_weight_norm_g_is_the_norm():
    layer = parametrizations.weight_norm(sg.nn.Linear(3, 4))
    g, v = layer.parametrizations.weight.original0, layer.parametrizations.weight.original1
    assert g.shape == (4, 1) and v.shape == (4, 3)
    np.testing.assert_allclose(g.detach().numpy()[:, 0], np.linalg.norm(v.detach().numpy(), axis=1))
    whole = parametrizations.weight_norm(sg.nn.Linear(3, 4), dim=None)
    assert whole.parametrizations.weight.original0.shape == ()


def test_weight_norm_remove_matches_torch():
    ours, theirs = parametrized_pair(LAYERS["linear"][0], weight_norm())
    for lib, module in ((sg, ours), (torch, theirs)):
        with lib.no_grad():
            module.parametrizations.weight.original0.mul_(2.0)
    parametrize.remove_parametrizations(ours, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(theirs, "weight")
    assert type(ours) is sg.nn.Linear and isinstance(ours.weight, sg.nn.Parameter)
    assert_states_close(ours, theirs)
    assert_raises_as_torch(
        lambda lib: lib.nn.utils.parametrize.remove_parametrizations(
            lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(2, 2)),
            "weight",
            leave_parametrized=False,
        ),
        ValueError,
        "Cannot leave unparametrized",
    )


def test_weight_norm_legacy_keys_are_an_error():
    """PyTorch maps a legacy weight_g/weight_v state_dict with a load hook; scratchgrad has
    none, so loading one is an error, never a silent partial load."""
    legacy = sg.nn.utils.weight_norm(sg.nn.Linear(3, 4)).state_dict()
    layer = parametrizations.weight_norm(sg.nn.Linear(3, 4))
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "weight_g"'):
        layer.load_state_dict(legacy)


# ---- spectral norm ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("iterations", [1, 3])
@pytest.mark.parametrize("layer", LAYERS)
def test_spectral_norm_matches_torch(layer, iterations, dtype):
    """From PyTorch's u and v: the same power iteration in training (buffers moved in place),
    none in eval, and the same outputs, gradients and buffers."""
    make, shape = LAYERS[layer]
    ours, theirs = loaded_pair(make, spectral_norm(n_power_iterations=iterations), dtype)
    x = inputs(shape)
    for train in (True, True, False):
        ours.train(train), theirs.train(train)
        check_against_torch(ours, theirs, [x], dtype, what=f"train={train}")
        assert_states_close(ours, theirs, dtype)
        for p, q in zip(ours.parameters(), theirs.parameters()):
            p.grad, q.grad = None, None


def test_spectral_norm_training_steps_match_torch():
    ours, theirs = loaded_pair(LAYERS["conv2d"][0], spectral_norm())
    train_against_torch(ours, theirs, inputs((2, 2, 4, 4)), "float64", "Adam", steps=3, lr=0.05)


def test_spectral_norm_power_iteration_in_training_only():
    layer = sg.nn.Linear(3, 4).double()
    with sg.no_grad():  # singular values 3, 1, 0.5: 16 iterations converge to 1e-15
        layer.weight.copy_(sg.tensor(np.eye(4, 3) * [3.0, 1.0, 0.5]))
    parametrizations.spectral_norm(layer)
    u = layer.parametrizations.weight[0]._u
    before = u.numpy().copy()
    layer.eval()
    layer(sg.ones(1, 3, dtype=sg.float64))
    np.testing.assert_array_equal(u.numpy(), before)
    with sg.no_grad():
        layer.parametrizations.weight.original.mul_(-1.0)  # flips the singular vectors
    layer.train()
    layer(sg.ones(1, 3, dtype=sg.float64))
    assert layer.parametrizations.weight[0]._u is u  # in place
    np.testing.assert_allclose(u.numpy(), -before, atol=1e-12)


def test_spectral_norm_largest_singular_value_is_one():
    sg.manual_seed(0)
    layer = parametrizations.spectral_norm(sg.nn.Linear(5, 6).double(), n_power_iterations=50)
    assert np.linalg.norm(layer.weight.detach().numpy(), 2) == pytest.approx(1.0, rel=1e-6)


@pytest.mark.parametrize(
    ("make", "options"),
    [
        (lambda nn: nn.ConvTranspose1d(3, 4, 2), {}),
        (lambda nn: nn.ConvTranspose2d(3, 4, 2), {}),
        (lambda nn: nn.ConvTranspose3d(3, 4, 2), {}),
        (lambda nn: nn.Conv2d(3, 4, 2), {"dim": -1}),
        (lambda nn: nn.Linear(3, 4), {"dim": 1}),
    ],
)
def test_spectral_norm_buffers_shapes_as_torch(make, options):
    ours, theirs = parametrized_pair(make, spectral_norm(**options))
    assert [(n, b.shape) for n, b in ours.named_buffers()] == [
        (n, tuple(b.shape)) for n, b in theirs.named_buffers()
    ]


def test_spectral_norm_of_a_vector_is_its_direction():
    ours, theirs = parametrized_pair(LAYERS["linear"][0], spectral_norm(name="bias"))
    assert list(ours.named_buffers()) == []
    assert_states_close(ours, theirs)
    assert_close(ours.bias, theirs.bias)
    train_against_torch(ours, theirs, inputs((5, 4)), "float64", lr=0.1)


def test_spectral_norm_remove_matches_torch():
    ours, theirs = loaded_pair(LAYERS["linear"][0], spectral_norm())
    ours.eval(), theirs.eval()  # no power iteration on removal
    parametrize.remove_parametrizations(ours, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(theirs, "weight")
    assert list(ours.state_dict()) == ["bias", "weight"]
    assert_states_close(ours, theirs)


@pytest.mark.parametrize(
    ("call", "kind", "message"),
    [
        (
            lambda lib: spectral_norm(n_power_iterations=0)(lib, lib.nn.Linear(2, 2)),
            ValueError,
            "Expected n_power_iterations to be positive",
        ),
        (
            lambda lib: spectral_norm(dim=2)(lib, lib.nn.Linear(2, 2)),
            IndexError,
            r"Dimension out of range \(expected to be in range of \[-2, 1\] but got 2\)",
        ),
        (
            lambda lib: spectral_norm(name="foo")(lib, lib.nn.Linear(2, 2)),
            ValueError,
            "has no parameter or buffer with name 'foo'",
        ),
    ],
)
def test_spectral_norm_errors_as_torch(call, kind, message):
    assert_raises_as_torch(call, kind, message)


# ---- orthogonal ------------------------------------------------------------------------------


def assert_orthogonal(Q, atol=1e-6):
    """Orthonormal columns (rows, if wide), matrix by matrix."""
    Q = Q.detach().numpy()
    if Q.shape[-2] < Q.shape[-1]:
        Q = np.swapaxes(Q, -1, -2)
    eye = np.eye(Q.shape[-1])
    np.testing.assert_allclose(
        np.swapaxes(Q, -1, -2) @ Q, np.broadcast_to(eye, Q.shape[:-2] + eye.shape), atol=atol
    )


SQUARE = {
    "linear": (lambda nn: nn.Linear(4, 4), (5, 4)),
    "bilinear": (lambda nn: nn.Bilinear(4, 4, 2), None),  # a batch of two 4 x 4 matrices
}


MAPS = ["matrix_exp", "cayley", "householder"]
SKEW_MAPS = ["matrix_exp", "cayley"]  # those that work without the trivialization


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layer", SQUARE)
@pytest.mark.parametrize("orthogonal_map", [*MAPS, None])
def test_orthogonal_square_matches_torch(orthogonal_map, layer, dtype):
    """Deterministic: the weight made orthogonal by QR is the base, the original -I."""
    make, _ = SQUARE[layer]
    ours, theirs = parametrized_pair(make, orthogonal(orthogonal_map=orthogonal_map), dtype)
    assert ours.parametrizations.weight[0].orthogonal_map.name == (orthogonal_map or "matrix_exp")
    assert list(ours.state_dict())[-2:] == [
        "parametrizations.weight.original",
        "parametrizations.weight.0.base",
    ]
    assert_states_close(ours, theirs, dtype)
    assert_close(ours.weight, theirs.weight, dtype, "weight")
    assert_orthogonal(ours.weight, 1e-6 if dtype == "float64" else 1e-5)


@pytest.mark.parametrize("orthogonal_map", MAPS)
@pytest.mark.parametrize(
    "make",
    [lambda nn: nn.Linear(4, 4), lambda nn: nn.Linear(3, 5), lambda nn: nn.Linear(5, 3)],
    ids=["square", "tall", "wide"],
)
def test_orthogonal_training_matches_torch(make, orthogonal_map):
    """From PyTorch's base (random columns complete a tall or wide one): the same outputs,
    gradients and steps, and the weight stays orthogonal."""
    ours, theirs = loaded_pair(make, orthogonal(orthogonal_map=orthogonal_map))
    assert_close(ours.weight, theirs.weight)
    assert_orthogonal(ours.weight)
    x = inputs((5, ours.in_features))
    train_against_torch(ours, theirs, x, "float64", lr=0.1)
    assert_close(ours.weight, theirs.weight)
    assert_orthogonal(ours.weight)


@pytest.mark.parametrize("orthogonal_map", MAPS)
def test_orthogonal_batch_trains_as_torch(orthogonal_map):
    make = lambda nn: nn.Bilinear(4, 3, 2)  # noqa: E731
    ours, theirs = loaded_pair(make, orthogonal(orthogonal_map=orthogonal_map))
    assert ours.weight.shape == (2, 4, 3)
    assert_orthogonal(ours.weight)
    x, y = inputs((5, 4)), inputs((5, 3))
    opt_ours = sg.optim.SGD(ours.parameters(), lr=0.1)
    opt_theirs = torch.optim.SGD(theirs.parameters(), lr=0.1)
    for _ in range(2):
        opt_ours.zero_grad(), opt_theirs.zero_grad()
        ours(sg.tensor(x), sg.tensor(y)).square().sum().backward()
        theirs(torch.tensor(x), torch.tensor(y)).square().sum().backward()
        opt_ours.step(), opt_theirs.step()
        assert_states_close(ours, theirs)
    assert_orthogonal(ours.weight)


def trained_without_trivialization(shape: tuple, orthogonal_map: str) -> tuple:
    """A Linear of ``shape`` with ``orthogonal(orthogonal_map, use_trivialization=False)``,
    ours and PyTorch's, checked alike and trained side by side; the pair."""
    make = lambda nn: nn.Linear(shape[1], shape[0])  # noqa: E731
    options = {"orthogonal_map": orthogonal_map, "use_trivialization": False}
    ours, theirs = parametrized_pair(make, orthogonal(**options))
    assert list(ours.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert_states_close(ours, theirs)
    assert_close(ours.weight, theirs.weight)
    assert_orthogonal(ours.weight)
    train_against_torch(ours, theirs, inputs((5, shape[1])), "float64", lr=0.1)
    return ours, theirs


@pytest.mark.parametrize("orthogonal_map", SKEW_MAPS)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3)])
def test_orthogonal_without_trivialization_matches_torch(shape, orthogonal_map):
    """No base: the original is the weight given, and the map alone makes it orthogonal."""
    trained_without_trivialization(shape, orthogonal_map)
    assert_raises_as_torch(
        lambda lib: setattr(
            orthogonal(use_trivialization=False)(lib, lib.nn.Linear(2, 2)), "weight", lib.eye(2)
        ),
        NotImplementedError,
        "not possible to assign to the matrix exponential or the Cayley parametrizations",
    )


def test_orthogonal_assignment_matches_torch():
    ours, theirs = parametrized_pair(SQUARE["linear"][0], orthogonal())
    rotation = np.linalg.qr(np.random.default_rng(6).standard_normal((4, 4)))[0]
    ours.weight, theirs.weight = sg.tensor(rotation), torch.tensor(rotation)
    assert_close(ours.weight, rotation)  # an orthogonal value is kept as it is
    assert_states_close(ours, theirs)
    value = np.random.default_rng(7).standard_normal((4, 4))
    ours.weight, theirs.weight = sg.tensor(value), torch.tensor(value)
    assert_states_close(ours, theirs)  # another is made orthogonal by QR
    assert_orthogonal(ours.weight)


@pytest.mark.parametrize(
    ("call", "kind", "message"),
    [
        (
            lambda lib: orthogonal(orthogonal_map="foo")(lib, lib.nn.Linear(2, 2)),
            ValueError,
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: foo',
        ),
        (
            lambda lib: orthogonal(name="bias")(lib, lib.nn.Linear(2, 2)),
            ValueError,
            "Expected a matrix or batch of matrices. Got a tensor of 1 dimensions.",
        ),
        (
            lambda lib: orthogonal(name="foo")(lib, lib.nn.Linear(2, 2)),
            ValueError,
            "has no parameter or buffer with name 'foo'",
        ),
        (
            lambda lib: setattr(
                orthogonal(orthogonal_map="cayley")(lib, lib.nn.Linear(2, 3)), "weight", lib.eye(3)
            ),
            ValueError,
            r"Expected a matrix or batch of matrices of shape scratchgrad\.Size\(\[3, 2\]\)",
        ),
    ],
)
def test_orthogonal_errors_as_torch(call, kind, message):
    assert_raises_as_torch(call, kind, message)


@pytest.mark.parametrize("shape", [(3, 2), (2, 3)])
def test_orthogonal_default_map_of_a_matrix_not_square_is_householder(shape):
    layer = parametrizations.orthogonal(sg.nn.Linear(shape[1], shape[0]))
    assert layer.parametrizations.weight[0].orthogonal_map.name == "householder"
    assert_orthogonal(layer.weight)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4)])
def test_orthogonal_householder_without_trivialization_matches_torch(shape):
    """The original is made of geqrf's reflectors (it raised for want of geqrf), at
    registration and at each assignment."""
    ours, theirs = trained_without_trivialization(shape, "householder")
    value = np.random.default_rng(7).standard_normal(shape)
    value[..., 1:, 0] = 0  # no reflection in the first column: tau 0, its sign negated
    ours.weight, theirs.weight = sg.tensor(value), torch.tensor(value)
    assert_states_close(ours, theirs)
    assert_close(ours.weight, theirs.weight)


# ---- Module methods on the parametrized layers -----------------------------------------------

ALL = {
    "weight_norm": weight_norm(),
    "spectral_norm": spectral_norm(),
    "orthogonal": orthogonal(),
}


@pytest.mark.parametrize("kind", ALL)
def test_repr_and_names_as_torch(kind):
    ours, theirs = parametrized_pair(SQUARE["linear"][0], ALL[kind])
    assert repr(ours) == repr(theirs)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]


@pytest.mark.parametrize("kind", ALL)
def test_state_dict_deepcopy_and_to(kind):
    ours, theirs = loaded_pair(SQUARE["linear"][0], ALL[kind], "float32")
    fresh = ALL[kind](sg, sg.nn.Linear(4, 4))
    assert fresh.load_state_dict(ours.state_dict()) == ([], [])
    twin = copy.deepcopy(ours)
    for module in (fresh, twin):
        assert_states_close(module, theirs, "float32")
    ours.to(sg.float64)
    theirs.to(torch.float64)
    assert_states_close(ours, theirs)
    check_against_torch(ours, theirs, [X], "float64")
    assert twin.weight.dtype == sg.float32  # the copy is its own module


def test_registration_changes_no_other_module():
    """Registering on one module changes no other module of its class."""
    other = sg.nn.Linear(4, 4)
    parametrizations.weight_norm(sg.nn.Linear(4, 4))
    assert type(other) is sg.nn.Linear and isinstance(other.weight, sg.nn.Parameter)
    assert "weight" not in vars(sg.nn.Linear)


def test_doc_examples_run():
    assert doctest.testmod(parametrizations).failed == 0


def test_orthogonal_of_a_complex_weight_raises():
    """Householder: PyTorch's ValueError; the unitary maps need a complex QR decomposition,
    which scratchgrad does not have: NotImplementedError, not a failure inside linalg.qr."""
    assert_raises_as_torch(
        lambda lib: lib.nn.utils.parametrizations.orthogonal(
            lib.nn.Linear(3, 4, dtype=lib.complex64), orthogonal_map="householder"
        ),
        ValueError,
        "householder parametrization does not support complex",
    )
    with pytest.raises(NotImplementedError, match="complex QR"):
        sg.nn.utils.parametrizations.orthogonal(sg.nn.Linear(3, 4, dtype=sg.complex64))
