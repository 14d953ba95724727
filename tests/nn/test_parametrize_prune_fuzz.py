"""nn.utils.parametrize / parametrizations and nn.utils.prune fuzzed against PyTorch: random
two-layer models (Linear, Conv1d, ConvTranspose1d; float64 and float32), random sequences of
parametrizations (orthogonal, spectral_norm, weight_norm, custom ones, chained) or of pruning
methods (l1, ln, custom masks, identity, global; repeated on one tensor; ties in the scores);
the state_dict (keys and values), outputs and gradients in train and eval mode, assignment
through right_inverse, and the state after remove_parametrizations / prune.remove, as
PyTorch's (the same error class where PyTorch raises)."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.utils.parametrizations
import torch.nn.utils.parametrize
import torch.nn.utils.prune
from oracle import DTYPES, assert_close, module_pair, outcome, raised_alike
from test_parametrize import assert_states_close, train_against_torch

import scratchgrad as sg

LIBS = (sg, torch)


def _model(kinds, sizes):
    """Layers of ``kinds`` ("linear", "conv", "convT") from ``sizes[i]`` to ``sizes[i + 1]``
    features, a Tanh after each."""

    def build(nn):
        layers = []
        for kind, n_in, n_out in zip(kinds, sizes, sizes[1:]):
            if kind == "linear":
                layers.append(nn.Linear(n_in, n_out))
            else:
                conv = nn.Conv1d if kind == "conv" else nn.ConvTranspose1d
                layers.append(conv(n_in, n_out, 2))
            layers.append(nn.Tanh())
        return nn.Sequential(*layers)

    return build


class Pair:
    """A random model in both libraries (ours with PyTorch's weights, rounded to halves half of
    the time so that rankings have ties), an input for it, and ``both(call)``: ``call(lib,
    model)`` on each library's model, asserting that both went on or both raised alike."""

    def __init__(self, seed):
        rng = self.rng = np.random.default_rng(seed)
        self.dtype = ["float64", "float32"][seed % 2]
        linear = rng.random() < 0.4
        kinds = ["linear"] * 2 if linear else [str(k) for k in rng.choice(["conv", "convT"], 2)]
        sizes = [int(n) for n in rng.integers(1, 5, 3)]
        halves = (lambda p: p.copy_((p * 2).round() / 2)) if rng.random() < 0.5 else None
        self.ours, self.theirs = module_pair(_model(kinds, sizes), self.dtype, init=halves)
        self.x = rng.standard_normal((2, sizes[0]) if linear else (2, sizes[0], 3))

    def both(self, call, what):
        """Whether ``call`` went on in both libraries (else both raised alike)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (the legacy functions' deprecations)
            ours = outcome(call, sg, self.ours)
            theirs = outcome(call, torch, self.theirs)
        return not raised_alike(ours, theirs, what)

    def tensor(self, lib, array):
        return lib.tensor(array, dtype=DTYPES[self.dtype][LIBS.index(lib)])

    def check_forward_and_backward(self, what):
        """The same outputs and gradients of every parameter, for the same loss; False where
        both raised alike (PyTorch's errors: a map chained where it cannot run)."""
        results = []
        for lib, model in zip(LIBS, (self.ours, self.theirs)):
            model.zero_grad()
            results.append(outcome(model, self.tensor(lib, self.x)))
        if raised_alike(*results, f"{what}: forward"):
            return False
        for out in results:
            (out * out).sum().backward()
        assert_close(results[0], results[1], self.dtype, f"{what}: output")
        theirs = dict(self.theirs.named_parameters())
        assert [name for name, _ in self.ours.named_parameters()] == list(theirs), what
        for name, p in self.ours.named_parameters():
            assert (p.grad is None) == (theirs[name].grad is None), f"{what}: {name}'s gradient"
            if p.grad is not None:
                assert_close(p.grad, theirs[name].grad, self.dtype, f"{what}: {name}'s gradient")
        assert_states_close(self.ours, self.theirs, self.dtype)
        return True


def _parametrized(model):
    """(layer index, tensor name) of each parametrized tensor of ``model``."""
    return [
        (i, name)
        for i, layer in enumerate(model)
        for name in getattr(layer, "parametrizations", {})
    ]


def _pruned(model):
    """(layer index, tensor name) of each pruned tensor of ``model``."""
    names = ("weight", "bias")
    return [(i, n) for i, layer in enumerate(model) for n in names if hasattr(layer, n + "_orig")]


# ---- parametrizations ------------------------------------------------------------------------


def _custom(lib, kind):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

        def right_inverse(self, A):
            return A.triu()

    class Scale(lib.nn.Module):
        def forward(self, X):
            return X * 2

        def right_inverse(self, A):
            return A / 2

    class Split(lib.nn.Module):  # two originals
        def forward(self, X, Y):
            return X + Y

        def right_inverse(self, Z):
            return Z * 0.25, Z * 0.75

    class Tanh(lib.nn.Module):  # no right_inverse
        def forward(self, X):
            return X.tanh()

    return {"symmetric": Symmetric, "scale": Scale, "split": Split, "tanh": Tanh}[kind]()


KINDS = ["orthogonal", "spectral_norm", "weight_norm", "symmetric", "scale", "split", "tanh"]


def _random_parametrization(rng):
    """A call ``(lib, model)`` registering a random parametrization, and what it is."""
    kind = str(rng.choice(KINDS, p=[0.2, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1]))
    index, name = int(rng.choice([0, 2])), str(rng.choice(["weight", "weight", "bias"]))
    options = {}
    if kind == "orthogonal":
        # (householder, the default of a matrix not square, needs geqrf without the
        # trivialization: not here, documented)
        mapping = rng.choice(["default", "matrix_exp", "cayley", "householder"])
        options["orthogonal_map"] = None if mapping == "default" else str(mapping)
        exp_or_cayley = mapping in ("matrix_exp", "cayley")
        options["use_trivialization"] = not exp_or_cayley or bool(rng.random() < 0.7)
    elif kind == "spectral_norm":
        options["n_power_iterations"] = int(rng.integers(1, 3))
    if kind in ("spectral_norm", "weight_norm"):
        dim = rng.choice([None, 0, 1, -1])
        options["dim"] = None if dim is None else int(dim)

    def register(lib, model):
        if kind in ("orthogonal", "spectral_norm", "weight_norm"):
            getattr(lib.nn.utils.parametrizations, kind)(model[index], name, **options)
        else:
            lib.nn.utils.parametrize.register_parametrization(
                model[index], name, _custom(lib, kind)
            )

    return register, (kind, index, name, options)


@pytest.mark.parametrize("seed", range(40))
def test_random_parametrizations_as_torch(seed):
    pair = Pair(seed)
    rng = pair.rng
    for _ in range(int(rng.integers(1, 4))):
        register, what = _random_parametrization(rng)
        if not pair.both(register, what):
            return
    # PyTorch's random draws (spectral_norm's u and v, orthogonal's completed base)
    pair.ours.load_state_dict(
        {k: sg.tensor(v.numpy()) for k, v in pair.theirs.state_dict().items()}
    )
    for training in (True, False, True):  # (power iterations run in training mode only)
        pair.ours.train(training), pair.theirs.train(training)
        if not pair.check_forward_and_backward(f"seed {seed}, training={training}"):
            return
    for index, name in _parametrized(pair.theirs):
        shape = tuple(getattr(pair.ours[index], name).shape)
        getattr(pair.theirs[index], name)  # (both read it: a power iteration each)
        if not any("base" in key for key in pair.theirs[index].state_dict()):  # (random)
            value = rng.standard_normal(shape)
            pair.both(
                lambda lib, m, i=index, n=name, v=value: setattr(m[i], n, pair.tensor(lib, v)),
                "assign",
            )
    assert_states_close(pair.ours, pair.theirs, pair.dtype)
    leave = bool(rng.random() < 0.6)
    for index, name in _parametrized(pair.theirs):
        pair.both(
            lambda lib, m, i=index, n=name: lib.nn.utils.parametrize.remove_parametrizations(
                m[i], n, leave_parametrized=leave
            ),
            f"remove {name}",
        )
    assert [type(m).__name__ for m in pair.ours] == [type(m).__name__ for m in pair.theirs]
    assert_states_close(pair.ours, pair.theirs, pair.dtype)


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("dim", [0, None])
def test_weight_norm_of_a_vector_as_torch(dim, legacy):
    """A 1-d tensor (a bias) with dim=0: g is the norm of each entry, of v's shape (it was the
    norm of the whole vector, of shape (1,): the same weight at first, then other gradients
    and steps, and a state_dict PyTorch cannot load)."""

    def register(lib, module):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # (the legacy function's)
            if legacy:
                return lib.nn.utils.weight_norm(module, "bias", dim=dim)
            return lib.nn.utils.parametrizations.weight_norm(module, "bias", dim=dim)

    ours, theirs = module_pair(lambda nn: nn.Linear(3, 4))
    ours, theirs = register(sg, ours), register(torch, theirs)
    assert_states_close(ours, theirs)
    x = np.random.default_rng(0).standard_normal((5, 3))
    train_against_torch(ours, theirs, x, "float64", steps=3, lr=0.5)


# ---- pruning ---------------------------------------------------------------------------------


def _amount(rng, size):
    """A fraction, or a count up to ``size``."""
    if rng.random() < 0.5:
        return float(rng.choice([0.0, 0.3, 0.5, 1.0]))
    return int(rng.integers(0, size + 1))


def _random_pruning(pair):
    """A call ``(lib, model)`` pruning with a random method, and what it is."""
    rng = pair.rng
    index, name = int(rng.choice([0, 2])), str(rng.choice(["weight", "weight", "bias"]))
    layer = pair.theirs[index]
    shape = tuple(getattr(layer, name + "_orig", getattr(layer, name)).shape)
    kind = str(rng.choice(["l1", "l1_scores", "ln", "custom", "identity", "global"]))
    if kind == "ln" and len(shape) == 1:
        kind = "l1"
    if kind in ("l1", "l1_scores"):
        amount = _amount(rng, int(np.prod(shape)))
        scores = rng.standard_normal(shape).round() if kind == "l1_scores" else None

        def call(lib, model):
            given = None if scores is None else pair.tensor(lib, scores)
            module = model[index]
            lib.nn.utils.prune.l1_unstructured(module, name, amount, importance_scores=given)

    elif kind == "ln":
        dim = int(rng.integers(-len(shape), len(shape)))
        amount, n = _amount(rng, shape[dim]), rng.choice([1.0, 2.0, 3.0, np.inf, -np.inf, 0.0])
        n = float(n)

        def call(lib, model):
            lib.nn.utils.prune.ln_structured(model[index], name, amount, n, dim)

    elif kind == "custom":
        mask = (rng.random(shape) < 0.6).astype(float)

        def call(lib, model):
            lib.nn.utils.prune.custom_from_mask(model[index], name, lib.tensor(mask))

    elif kind == "identity":

        def call(lib, model):
            lib.nn.utils.prune.identity(model[index], name)

    else:
        amount = float(rng.choice([0.2, 0.5])) if rng.random() < 0.5 else int(rng.integers(4))

        def call(lib, model):
            pruning = lib.nn.utils.prune
            pairs = [(model[0], "weight"), (model[2], name)]
            pruning.global_unstructured(pairs, pruning.L1Unstructured, amount=amount)

    return call, (kind, index, name)


@pytest.mark.parametrize("seed", range(40))
def test_random_pruning_as_torch(seed):
    pair = Pair(seed)
    for _ in range(int(pair.rng.integers(1, 4))):
        call, what = _random_pruning(pair)
        if not pair.both(call, what):
            return
    assert_states_close(pair.ours, pair.theirs, pair.dtype)
    pair.check_forward_and_backward(f"seed {seed}")
    for index, name in _pruned(pair.theirs):
        pair.both(lambda lib, m, i=index, n=name: lib.nn.utils.prune.remove(m[i], n), name)
    assert not sg.nn.utils.prune.is_pruned(pair.ours)
    assert_states_close(pair.ours, pair.theirs, pair.dtype)
    pair.check_forward_and_backward(f"seed {seed}, after remove")


@pytest.mark.parametrize("method", ["ln_structured", "l1_unstructured"])
def test_scores_of_another_dtype_leave_the_weight_in_its_own_as_torch(method):
    """float64 importance scores on a float32 weight: a structured mask is float64, as
    PyTorch's, and the pruned weight float32 still (it had become float64: the layer then
    refused its float32 input, and remove left a float64 parameter)."""
    scores = np.random.default_rng(0).standard_normal((4, 3))
    pruned = []
    for lib, module in zip(LIBS, module_pair(lambda nn: nn.Linear(3, 4), "float32")):
        options = {"n": 2, "dim": 0} if method == "ln_structured" else {}
        given = lib.tensor(scores, dtype=lib.float64)
        getattr(lib.nn.utils.prune, method)(module, "weight", 1, importance_scores=given, **options)
        pruned.append(module)
    ours, theirs = pruned
    assert str(ours.weight_mask.dtype) == str(theirs.weight_mask.dtype).replace(
        "torch", "scratchgrad"
    )
    assert ours.weight.dtype == sg.float32 and theirs.weight.dtype == torch.float32
    x = np.random.default_rng(1).standard_normal((2, 3))
    assert_close(
        ours(sg.tensor(x, dtype=sg.float32)),
        theirs(torch.tensor(x, dtype=torch.float32)),
        "float32",
    )
    for lib, module in zip(LIBS, pruned):
        lib.nn.utils.prune.remove(module, "weight")
    assert ours.weight.dtype == sg.float32 and theirs.weight.dtype == torch.float32
    assert_states_close(ours, theirs, "float32")


def test_pruning_a_missing_bias_raises_a_type_error_as_torch():
    """(It had raised AttributeError, reading the shape of None.)"""
    for lib in LIBS:
        module = lib.nn.Linear(2, 2, bias=False)
        with pytest.raises(TypeError, match="NoneType"):
            lib.nn.utils.prune.l1_unstructured(module, "bias", 1)
        assert list(module.state_dict()) == ["weight"] and not module._forward_pre_hooks
