"""nn.utils.parametrize against PyTorch's: custom parametrizations (one, chained, and one of two
tensors) on layers with PyTorch's weights give the same parametrized tensor, state_dict (keys and
values), outputs, gradients of every original and values after optimizer steps; assignment
through right_inverse, removal, caching, the errors, and the Module methods a parametrized
module keeps (repr, deepcopy, to, load_state_dict, train/eval)."""

import copy
import doctest
import pickle

import numpy as np
import pytest
import torch
from oracle import assert_close, assert_raises_as_torch, check_against_torch, module_pair

import scratchgrad as sg
from scratchgrad.nn.utils import parametrize

DTYPES = ["float64", "float32"]


# ---- parametrizations, one class per library -------------------------------------------------


def symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

        def right_inverse(self, A):
            return A.triu()

    return Symmetric()


def affine(lib):
    class Affine(lib.nn.Module):
        def forward(self, X):
            return 2 * X + 1

        def right_inverse(self, Y):
            return (Y - 1) / 2

    return Affine()


def split(lib):
    """Two originals: the tensor and zeros, summed."""

    class Split(lib.nn.Module):
        def forward(self, a, b):
            return a + b

        def right_inverse(self, X):
            return X, lib.zeros_like(X)

    return Split()


def counting(lib):
    """Counts its calls (to see what cached() saves)."""

    class Counting(lib.nn.Module):
        calls = 0

        def forward(self, X):
            type(self).calls += 1
            return X * 3

    return Counting()


def without_inverse(lib):
    class Triangle(lib.nn.Module):
        def forward(self, X):
            return X.tril()

    return Triangle()


CASES = {
    "symmetric": [symmetric],
    "affine": [affine],
    "split": [split],
    "chained": [symmetric, affine],
}
KEYS = {
    "symmetric": ["bias", "parametrizations.weight.original"],
    "affine": ["bias", "parametrizations.weight.original"],
    "split": ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"],
    "chained": ["bias", "parametrizations.weight.original"],
}


def parametrized_pair(make, register, dtype="float64", seed=0):
    """``make(nn)`` in both libraries with PyTorch's initial state, then ``register(lib,
    module)`` on each (``lib``: scratchgrad or torch)."""
    ours, theirs = module_pair(make, dtype, seed=seed)
    return register(sg, ours), register(torch, theirs)


def register_all(factories, name="weight"):
    """A ``register(lib, module)`` chaining ``factory(lib)`` for each of ``factories`` on
    ``module.<name>``."""

    def register(lib, module):
        for factory in factories:
            lib.nn.utils.parametrize.register_parametrization(module, name, factory(lib))
        return module

    return register


def assert_states_close(ours, theirs, dtype="float64"):
    """The same state_dict keys, in order, with the same values."""
    mine, expected = ours.state_dict(), theirs.state_dict()
    assert list(mine) == list(expected)
    for key in mine:
        assert_close(mine[key], expected[key], dtype, key)


def train_against_torch(ours, theirs, x, dtype, optimizer="SGD", steps=2, **options):
    """``steps`` optimizer steps on both: each compares the output, the gradient of the input
    and of every parameter (the originals), then the whole state after the step."""
    opt_ours = getattr(sg.optim, optimizer)(ours.parameters(), **options)
    opt_theirs = getattr(torch.optim, optimizer)(theirs.parameters(), **options)
    for step in range(steps):
        opt_ours.zero_grad(), opt_theirs.zero_grad()
        check_against_torch(ours, theirs, [x], dtype, what=f"step {step}")
        opt_ours.step(), opt_theirs.step()
        assert_states_close(ours, theirs, dtype)


def linear(nn):
    return nn.Linear(4, 4)


X = np.random.default_rng(3).standard_normal((5, 4))


# ---- values, gradients, training -------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES)
def test_matches_torch(case, dtype):
    ours, theirs = parametrized_pair(linear, register_all(CASES[case]), dtype)
    assert list(ours.state_dict()) == KEYS[case]
    assert_states_close(ours, theirs, dtype)
    assert_close(ours.weight, theirs.weight, dtype, "weight")
    assert ours.weight.requires_grad and not isinstance(ours.weight, sg.nn.Parameter)
    train_against_torch(ours, theirs, X, dtype, lr=0.1)
    assert_close(ours.weight, theirs.weight, dtype, "weight after training")


@pytest.mark.parametrize("case", ["symmetric", "split"])
def test_adam_steps_match_torch(case):
    ours, theirs = parametrized_pair(linear, register_all(CASES[case]))
    train_against_torch(ours, theirs, X, "float64", "Adam", steps=3, lr=0.05)


def test_symmetric_weight_is_symmetric():
    layer = register_all([symmetric])(sg, sg.nn.Linear(4, 4))
    weight = layer.weight.detach().numpy()
    np.testing.assert_array_equal(weight, weight.T)


def test_a_buffer_is_parametrized_into_a_buffer():
    def make(nn):
        module = nn.Linear(3, 3)
        module.register_buffer("scale", module.weight.detach().clone())
        return module

    ours, theirs = parametrized_pair(make, register_all([affine], "scale"))
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_buffers()] == ["parametrizations.scale.original"]
    assert [n for n, _ in ours.named_parameters()] == ["weight", "bias"]
    assert not ours.scale.requires_grad
    assert_states_close(ours, theirs)
    assert_close(ours.scale, theirs.scale)


def test_originals_keep_their_requires_grad():
    ours, theirs = parametrized_pair(
        lambda nn: nn.Linear(3, 3).requires_grad_(False), register_all([split])
    )
    for o, t in zip(ours.parameters(), theirs.parameters()):
        assert o.requires_grad == t.requires_grad is False


# ---- assignment through right_inverse --------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_assignment_goes_through_right_inverse(case):
    ours, theirs = parametrized_pair(linear, register_all(CASES[case]))
    originals = list(ours.parameters())
    value = np.random.default_rng(4).standard_normal((4, 4))
    ours.weight = sg.tensor(value)
    theirs.weight = torch.tensor(value)
    assert_states_close(ours, theirs)
    assert_close(ours.weight, theirs.weight)
    # in place: an optimizer made before still holds the originals
    assert all(a is b for a, b in zip(ours.parameters(), originals))


def test_assignment_without_right_inverse_raises():
    assert_raises_as_torch(
        lambda lib: setattr(
            register_all([without_inverse])(lib, lib.nn.Linear(2, 2)), "weight", lib.ones(2, 2)
        ),
        RuntimeError,
        "parametrization Triangle does not implement right_inverse",
    )


def test_assigning_a_parameter_raises():
    assert_raises_as_torch(
        lambda lib: setattr(
            register_all([affine])(lib, lib.nn.Linear(2, 2)),
            "weight",
            lib.nn.Parameter(lib.ones(2, 2)),
        ),
        KeyError,
        "attribute 'weight' already exists",
    )


def test_assignment_of_another_dtype_raises():
    assert_raises_as_torch(
        lambda lib: setattr(
            register_all([affine])(lib, lib.nn.Linear(2, 2)),
            "weight",
            lib.ones(2, 2, dtype=lib.float64),
        ),
        ValueError,
        "has dtype float64 while `original` has dtype float32",
    )


# ---- removal ---------------------------------------------------------------------------------


@pytest.mark.parametrize("leave_parametrized", [True, False])
@pytest.mark.parametrize("case", ["symmetric", "affine", "chained"])
def test_remove_matches_torch(case, leave_parametrized):
    ours, theirs = parametrized_pair(linear, register_all(CASES[case]))
    original = ours.parametrizations.weight.original
    for lib, module in ((sg, ours), (torch, theirs)):
        with lib.no_grad():
            module.parametrizations.weight.original.mul_(1.5)  # away from the start
    parametrize.remove_parametrizations(ours, "weight", leave_parametrized)
    torch.nn.utils.parametrize.remove_parametrizations(theirs, "weight", leave_parametrized)
    assert type(ours) is sg.nn.Linear and not hasattr(ours, "parametrizations")
    assert not parametrize.is_parametrized(ours)
    assert ours.weight is original and isinstance(ours.weight, sg.nn.Parameter)
    assert_states_close(ours, theirs)
    check_against_torch(ours, theirs, [X], "float64")


def test_remove_with_two_originals():
    ours, theirs = parametrized_pair(linear, register_all([split]))
    parametrize.remove_parametrizations(ours, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(theirs, "weight")
    assert isinstance(ours.weight, sg.nn.Parameter) and ours.weight.requires_grad
    assert_states_close(ours, theirs)
    assert_raises_as_torch(
        lambda lib: lib.nn.utils.parametrize.remove_parametrizations(
            register_all([split])(lib, lib.nn.Linear(2, 2)), "weight", leave_parametrized=False
        ),
        ValueError,
        r"Cannot leave unparametrized \(`leave_parametrized=False`\) a tensor",
    )


def test_class_comes_back_after_the_last_removal():
    ours, theirs = parametrized_pair(
        linear,
        lambda lib, m: register_all([affine], "bias")(lib, register_all([symmetric])(lib, m)),
    )
    assert type(ours).__name__ == type(theirs).__name__ == "ParametrizedLinear"
    assert list(ours.state_dict()) == list(theirs.state_dict())
    parametrize.remove_parametrizations(ours, "weight")
    assert type(ours).__name__ == "ParametrizedLinear" and parametrize.is_parametrized(ours)
    assert not parametrize.is_parametrized(ours, "weight")
    assert "weight" not in vars(type(ours)) and "bias" in vars(type(ours))
    parametrize.remove_parametrizations(ours, "bias")
    assert type(ours) is sg.nn.Linear
    assert list(ours.state_dict()) == ["weight", "bias"]


def test_type_before_parametrizations():
    layer = sg.nn.Linear(2, 2)
    assert parametrize.type_before_parametrizations(layer) is sg.nn.Linear
    register_all([affine])(sg, layer)
    assert type(layer) is not sg.nn.Linear and isinstance(layer, sg.nn.Linear)
    assert parametrize.type_before_parametrizations(layer) is sg.nn.Linear
    assert parametrize.is_parametrized(layer) and parametrize.is_parametrized(layer, "weight")
    assert not parametrize.is_parametrized(layer, "bias")


# ---- caching ---------------------------------------------------------------------------------


def test_cached_computes_once_per_context():
    calls = {}
    for lib in (sg, torch):
        layer = register_all([counting])(lib, lib.nn.Linear(2, 2))
        counter = type(layer.parametrizations.weight[0])
        counter.calls = 0
        with lib.nn.utils.parametrize.cached():
            first = layer.weight
            assert layer.weight is first
            with lib.nn.utils.parametrize.cached():  # nested: the same cache
                assert layer.weight is first
            assert layer.weight is first
        assert layer.weight is not first  # computed anew once the context is closed
        calls[lib.__name__] = counter.calls
    assert calls == {"scratchgrad": 2, "torch": 2}


def test_cached_weight_used_twice_gets_both_gradients():
    ours, theirs = parametrized_pair(linear, register_all([symmetric]))
    results = []
    for lib, module in ((sg, ours), (torch, theirs)):
        with lib.nn.utils.parametrize.cached():
            x = lib.tensor(X)
            out = module(module(x))  # the weight read twice, computed once
        out.sum().backward()
        results.append([p.grad for p in module.parameters()])
    for mine, expected in zip(*results):
        assert_close(mine, expected)


# ---- errors ----------------------------------------------------------------------------------


def shape_changing(lib):
    class FirstRows(lib.nn.Module):
        def forward(self, X):
            return X[:2]

    return FirstRows()


def dtype_changing(lib):
    class Double(lib.nn.Module):
        def forward(self, X):
            return X.double()

    return Double()


def bad_inverse(result):
    def make(lib):
        class BadInverse(lib.nn.Module):
            def forward(self, X):
                return X

            def right_inverse(self, X):
                return result(lib, X)

        return BadInverse()

    return make


def _register(factory, name="weight", unsafe=False, first=None):
    """A call(lib) registering ``factory(lib)`` on a Linear(3, 3) (after ``first``)."""

    def call(lib):
        module = lib.nn.Linear(3, 3)
        if first is not None:
            register_all([first])(lib, module)
        return lib.nn.utils.parametrize.register_parametrization(
            module, name, factory(lib), unsafe=unsafe
        )

    return call


@pytest.mark.parametrize(
    ("call", "kind", "message"),
    [
        (
            _register(affine, name="foo"),
            ValueError,
            "does not have a parameter, a buffer, or a parametrized element with name 'foo'",
        ),
        (
            lambda lib: lib.nn.utils.parametrize.remove_parametrizations(
                lib.nn.Linear(2, 2), "weight"
            ),
            ValueError,
            "does not have a parametrization on weight",
        ),
        (_register(shape_changing), ValueError, "may not change the shape of the tensor"),
        (_register(dtype_changing), ValueError, "may not change the dtype of the tensor"),
        (
            _register(bad_inverse(lambda lib, X: 3)),
            ValueError,
            "'right_inverse' must return a Tensor or a Sequence of tensors",
        ),
        (
            _register(bad_inverse(lambda lib, X: (X, 3))),
            ValueError,
            "Got element 1 of the sequence with type int",
        ),
        (
            _register(bad_inverse(lambda lib, X: X.double())),
            ValueError,
            "When `right_inverse` outputs one tensor, it may not change the dtype",
        ),
        (
            _register(shape_changing, first=affine),
            ValueError,
            r"may not change the shape of the tensor.*\nmodule.weight.shape: ",
        ),
        (
            _register(bad_inverse(lambda lib, X: (X, X)), first=affine),
            ValueError,
            "parametrization.right_inverse must return a tensor. Got: tuple",
        ),
        (
            _register(bad_inverse(lambda lib, X: X[:2]), first=affine),
            ValueError,
            "right_inverse must have the same shape as module.weight",
        ),
        (
            lambda lib: lib.nn.utils.parametrize.ParametrizationList([], lib.ones(2)),
            ValueError,
            "ParametrizationList requires one or more modules",
        ),
    ],
)
def test_errors_as_torch(call, kind, message):
    assert_raises_as_torch(call, kind, message)


def test_failed_registration_leaves_the_module_alone():
    layer = sg.nn.Linear(3, 3)
    weight = layer.weight
    with pytest.raises(ValueError):
        parametrize.register_parametrization(layer, "weight", shape_changing(sg))
    assert type(layer) is sg.nn.Linear and layer.weight is weight
    assert list(layer.state_dict()) == ["weight", "bias"]


@pytest.mark.parametrize("chained", [False, True])
def test_unsafe_allows_a_new_shape(chained):
    call = _register(shape_changing, unsafe=True, first=affine if chained else None)
    ours, theirs = call(sg), call(torch)
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    assert ours.weight.shape == tuple(theirs.weight.shape) == (2, 3)
    assert ours.parametrizations.weight.unsafe is theirs.parametrizations.weight.unsafe is True
    assert_close(ours.weight, theirs.weight, "float32")
    (ours.weight * sg.tensor(X[:2, :3])).sum().backward()
    (theirs.weight * torch.tensor(X[:2, :3])).sum().backward()
    mine, expected = ours.parametrizations.weight.original, theirs.parametrizations.weight.original
    assert_close(mine.grad, expected.grad, "float32")


# ---- Module methods on a parametrized module -------------------------------------------------


def test_repr_as_torch():
    ours, theirs = parametrized_pair(linear, register_all(CASES["chained"]))
    assert repr(ours) == repr(theirs)
    assert repr(ours).startswith("ParametrizedLinear(\n  in_features=4")


def test_named_parameters_and_buffers_as_torch():
    ours, theirs = parametrized_pair(linear, register_all([split]))
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert len(list(ours.parameters())) == 3


def test_state_dict_round_trip():
    ours, theirs = parametrized_pair(linear, register_all(CASES["chained"]))
    fresh = register_all(CASES["chained"])(sg, sg.nn.Linear(4, 4))
    assert fresh.load_state_dict(ours.state_dict()) == ([], [])
    assert_close(fresh.weight, theirs.weight)
    with pytest.raises(RuntimeError, match="Missing key"):
        fresh.load_state_dict(sg.nn.Linear(4, 4).state_dict())


def test_to_converts_the_originals():
    ours, theirs = parametrized_pair(linear, register_all([symmetric]), "float32")
    ours.to(sg.float64), theirs.to(torch.float64)
    assert ours.weight.dtype == sg.float64
    assert_states_close(ours, theirs)
    check_against_torch(ours, theirs, [X], "float64")


def test_deepcopy_is_independent():
    ours, theirs = parametrized_pair(linear, register_all([symmetric]))
    twin = copy.deepcopy(ours)
    assert type(twin) is type(ours)
    assert_states_close(twin, theirs)
    with sg.no_grad():
        twin.parametrizations.weight.original.mul_(2.0)
    assert_states_close(ours, theirs)  # the original is untouched
    assert_close(twin.weight, 2 * theirs.weight.detach().numpy())
    with parametrize.cached():  # each module its own entry in the cache
        assert not np.allclose(twin.weight.detach().numpy(), ours.weight.detach().numpy())


def test_pickling_is_refused_as_torch():
    assert_raises_as_torch(
        lambda lib: pickle.dumps(register_all([affine])(lib, lib.nn.Linear(2, 2))),
        RuntimeError,
        "Serialization of parametrized modules is only supported through state_dict",
    )


def test_train_and_eval_reach_the_parametrization():
    layer = sg.nn.Linear(2, 2).eval()
    register_all([affine])(sg, layer)
    assert not layer.parametrizations.weight[0].training  # set at registration
    layer.train()
    assert layer.parametrizations.weight[0].training


def test_doc_examples_run():
    assert doctest.testmod(parametrize).failed == 0


def _transferred(lib, source, target, tensor_name=None):
    """``transfer_parametrizations_and_params(source, target)``: its result is ``target``."""
    out = lib.nn.utils.parametrize.transfer_parametrizations_and_params(source, target, tensor_name)
    assert out is target
    return target


def _originals(module, name):
    """The original tensors of ``module``'s parametrized ``name``, by their names."""
    return dict(module.parametrizations[name].named_parameters()) | dict(
        module.parametrizations[name].named_buffers()
    )


@pytest.mark.parametrize("case", ["chained", "split"])
@pytest.mark.parametrize("target", ["same layer", "empty module"])
def test_transfer_parametrizations_and_params_as_torch(case, target):
    """The target gets the source's parametrizations (the same modules) and originals (the
    same tensors): the same state_dict and named parameters as PyTorch's, a training step
    that moves both; a target without the tensor gets it."""
    ours, theirs = parametrized_pair(linear, register_all(CASES[case]))
    if target == "empty module":
        our_target, their_target = sg.nn.Module(), torch.nn.Module()
    else:  # (the target's own parametrization, on its bias, stays)
        our_target, their_target = parametrized_pair(linear, register_all([affine], "bias"), seed=1)
    _transferred(sg, ours, our_target), _transferred(torch, theirs, their_target)
    assert type(our_target).__name__ == type(their_target).__name__
    assert [n for n, _ in our_target.named_parameters()] == [
        n for n, _ in their_target.named_parameters()
    ]
    assert_states_close(our_target, their_target)
    assert list(our_target.parametrizations.weight) == list(ours.parametrizations.weight)
    assert _originals(our_target, "weight") == _originals(ours, "weight")  # the same tensors
    assert_close(our_target.weight, their_target.weight)
    train_against_torch(ours, theirs, X, "float64", steps=1)
    assert_close(our_target.weight, their_target.weight)  # moved with the source


def test_transfer_of_one_tensor_and_of_none_as_torch():
    results = []
    for lib in (sg, torch):
        source = register_all([split], "bias")(lib, register_all([symmetric])(lib, linear(lib.nn)))
        one = _transferred(lib, source, lib.nn.Module(), "bias")
        plain = lib.nn.Linear(4, 4)
        none = _transferred(lib, lib.nn.Linear(4, 4), plain)
        assert type(none) is lib.nn.Linear
        results.append(
            (
                [n for n, _ in one.named_parameters()],
                [n for n, _ in none.named_parameters()],
                one.parametrizations.bias.original0 is source.parametrizations.bias.original0,
            )
        )
    assert results[0] == results[1]
    assert results[0][0] == ["parametrizations.bias.original0", "parametrizations.bias.original1"]


def test_transfer_of_a_buffer_and_its_errors_as_torch():
    """A parametrized buffer joins the target's buffers; into a module without it, the new
    Parameter refuses the buffer original, with PyTorch's TypeError."""
    states = []
    for lib in (sg, torch):
        source = register_all([affine], "running_mean")(lib, lib.nn.BatchNorm1d(3))
        target = _transferred(lib, source, lib.nn.BatchNorm1d(3))
        assert (
            target.parametrizations.running_mean.original
            is source.parametrizations.running_mean.original
        )
        states.append(([n for n, _ in target.named_buffers()], list(target.state_dict())))
        with pytest.raises(TypeError, match="cannot assign .* as parameter 'original'"):
            _transferred(lib, source, lib.nn.Module())
        with pytest.raises(AttributeError, match="has no attribute 'nope'"):
            _transferred(lib, source, lib.nn.BatchNorm1d(3), "nope")
    assert states[0] == states[1]
