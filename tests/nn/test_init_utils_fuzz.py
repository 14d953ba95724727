"""Random calls of ``nn.init`` and ``nn.utils`` against PyTorch's.

``nn.init``: every initializer on a random shape (0-d to 5-d, empty dims, a transposed view),
dtype and options (modes, nonlinearities, gains, bounds, sparsity, generators). Both libraries
must raise or not (the same error class) and warn or not; a filled tensor is the one given,
still a leaf with its ``requires_grad``. Draws cannot equal PyTorch's bits, so the
deterministic fills (``constant_``, ``eye_``, ``dirac_``...) are compared entry for entry and
the random ones by their law: every entry within the bounds PyTorch's formula gives (its
``calculate_gain`` and fans), the sample mean and standard deviation of a large tensor close
to the law's, ``orthogonal_``'s rows or columns orthonormal times the gain, and ``sparse_``'s
zeros per column counted as PyTorch's.

``nn.utils``: random sets of parameters (some without a gradient, some 0-d or empty, gradients
with zeros, infinities and NaN) through ``clip_grad_norm_`` (orders 0, 1, 2, 3.5, inf, -inf,
``max_norm`` 0 or negative, ``error_if_nonfinite``, ``foreach``, one tensor or a generator),
``clip_grad_value_``, ``get_total_norm`` and ``clip_grads_with_norm_``: the same errors, the
same totals (value and dtype) and gradients after the call. ``parameters_to_vector`` and
``vector_to_parameters`` on random shapes and vector sizes; the ``rnn`` helpers on random
lengths; ``fuse_conv_bn_eval`` and ``fuse_linear_bn_eval``; parametrizations registered,
evaluated, cached and removed; ``prune`` in sequences of methods, then ``remove``; the legacy
``weight_norm`` and ``spectral_norm`` hooks; ``stateless.functional_call``. Set
``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples (thousands while hunting)."""

import contextlib
import functools
import math
import warnings

import numpy as np
import torch
import torch.nn.utils.prune  # noqa: F401 (torch.nn.utils does not import it)
from hypothesis import assume, given
from hypothesis import strategies as st
from oracle import (
    check_outputs_and_gradients,
    fuzz_settings,
    outcome,
    parameter_pairs,
    raised_alike,
    same_dtype,
)

import scratchgrad as sg

FUZZ = fuzz_settings(60)
FEWER = fuzz_settings(30)  # (the slow ones: a layer built, run and differentiated per example)

# ---- nn.init ----------------------------------------------------------------------------------

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64"]
# machine epsilon by dtype: the slack of a bound rounded to the dtype
EPSILON = {"float32": 2**-23, "float64": 2**-52, "float16": 2**-10, "bfloat16": 2**-7}
# the smallest normal number by dtype: the absolute slack of values rounded to subnormals
TINY = {"float32": 2.0**-126, "float64": 2.0**-1022, "float16": 2.0**-14, "bfloat16": 2.0**-126}
BIG_SHAPES = [(60, 50), (2000,), (20, 8, 3, 3), (8, 40, 7), (4, 6, 5, 4, 3)]


@st.composite
def init_shapes(draw) -> tuple:
    """A small shape (sizes 0 to 5, mostly not 0) or a large one whose statistics say something."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(BIG_SHAPES))
    size = st.one_of(st.integers(1, 5), st.just(0)) if draw(st.booleans()) else st.integers(1, 5)
    return tuple(draw(st.lists(size, min_size=0, max_size=5)))


def _number(low=-3.0, high=3.0):
    """A float in [low, high], now and then an edge value."""
    edges = st.sampled_from([0.0, 1.0, -1.0, 1e-3, 1e30, -1e30, math.inf, math.nan])
    return st.one_of(st.floats(low, high), st.floats(low, high), edges)


NONLINEARITIES = [
    "linear", "conv1d", "conv3d", "conv_transpose2d", "sigmoid", "tanh", "relu", "leaky_relu",
    "selu", "gelu",
]  # fmt: skip
MODES = ["fan_in", "fan_out", "FAN_OUT", "fan_avg"]


@st.composite
def init_cases(draw):
    """(name, keyword arguments) of an initializer; ``generator`` is a seed or None."""
    name = draw(
        st.sampled_from(
            [
                "uniform_", "normal_", "trunc_normal_", "constant_", "zeros_", "ones_", "eye_",
                "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
                "kaiming_normal_", "orthogonal_", "sparse_",
            ]
        )
    )  # fmt: skip
    kwargs = {}
    if name == "uniform_":
        kwargs = {"a": draw(_number()), "b": draw(_number())}
    elif name == "normal_":
        kwargs = {"mean": draw(_number()), "std": draw(_number(0.0, 3.0))}
    elif name == "trunc_normal_":
        kwargs = {
            "mean": draw(st.floats(-3.0, 3.0)),
            "std": draw(st.one_of(st.floats(0.05, 3.0), st.sampled_from([0.0, -1.0]))),
            "a": draw(st.floats(-4.0, 2.0)),
            "b": draw(st.floats(-2.0, 4.0)),
        }
        # (both libraries draw uniform proposals in [a, b] until each is accepted: hours where
        # few are, far in a tail)
        assume(_acceptance(**kwargs) > 0.02)
    elif name == "constant_":
        kwargs = {"val": draw(st.one_of(_number(), st.integers(-5, 5), st.booleans()))}
    elif name == "dirac_":
        kwargs = {"groups": draw(st.sampled_from([1, 1, 2, 3, 0, -1]))}
    elif name in ("xavier_uniform_", "xavier_normal_", "orthogonal_"):
        kwargs = {"gain": draw(st.one_of(st.floats(-3.0, 3.0), st.just(1)))}
    elif name.startswith("kaiming"):
        kwargs = {
            "a": draw(st.one_of(st.floats(-3.0, 3.0), st.sampled_from([0, 5, math.sqrt(5)]))),
            "mode": draw(st.sampled_from(MODES)),
            "nonlinearity": draw(st.sampled_from(NONLINEARITIES)),
        }
    elif name == "sparse_":
        kwargs = {"sparsity": draw(st.floats(-0.5, 1.5)), "std": draw(st.floats(0.0, 2.0))}
    random = name not in ("constant_", "zeros_", "ones_", "eye_", "dirac_")
    if random and draw(st.booleans()):
        kwargs["generator"] = draw(st.integers(0, 2**32))
    return name, kwargs


def _acceptance(mean, std, a, b) -> float:
    """The share of uniform proposals in [a, b] that trunc_normal_'s rejection accepts."""
    if std == 0 or b <= a:
        return 1.0
    peak = max(a, min(mean, b))
    z = np.linspace(a, b, 201)
    return float(np.exp(-0.5 * ((z - mean) / std) ** 2 + 0.5 * ((peak - mean) / std) ** 2).mean())


def _empty(lib, shape, dtype, requires_grad, transposed):
    """An uninitialised tensor of ``shape``: a transposed view of one (its first two dims
    swapped) where asked, which the initializer must fill through."""
    if transposed:
        swapped = (shape[1], shape[0], *shape[2:])
        base = lib.empty(swapped, dtype=getattr(lib, dtype), requires_grad=requires_grad)
        return base.transpose(0, 1)
    return lib.empty(shape, dtype=getattr(lib, dtype), requires_grad=requires_grad)


def _run_init(lib, name, kwargs, tensor):
    """The initializer's result or error, and the warnings' classes it gave."""
    kwargs = dict(kwargs)
    if "generator" in kwargs:
        kwargs["generator"] = lib.Generator().manual_seed(kwargs["generator"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = getattr(lib.nn.init, name)(tensor, **kwargs)
        except Exception as error:  # noqa: BLE001 (the error is the result compared)
            result = error
    return result, sorted({w.category.__name__ for w in caught})


def _values(t) -> np.ndarray:
    return np.asarray(t.detach().double().numpy())


def _law(name, kwargs, theirs):
    """The law an initializer draws from, by PyTorch's formulas: ("uniform", low, high),
    ("normal", mean, std), or None where the fill is checked otherwise."""
    init = torch.nn.init
    if name == "uniform_":
        return "uniform", kwargs["a"], kwargs["b"]
    if name == "normal_":
        return "normal", kwargs["mean"], kwargs["std"]
    if name.startswith("xavier"):
        fan_in, fan_out = init._calculate_fan_in_and_fan_out(theirs)
        std = kwargs["gain"] * math.sqrt(2.0 / (fan_in + fan_out))
    elif name.startswith("kaiming"):
        fan = init._calculate_correct_fan(theirs, kwargs["mode"])
        std = init.calculate_gain(kwargs["nonlinearity"], kwargs["a"]) / math.sqrt(fan)
    else:
        return None
    if name.endswith("uniform_"):
        bound = math.sqrt(3.0) * abs(std)
        return "uniform", -bound, bound
    return "normal", 0.0, std


def _check_law(law, values, dtype, what):
    """Every entry within a uniform law's bounds (rounded to ``dtype``); a large sample's mean
    and standard deviation within six standard errors of the law's."""
    kind, first, second = law
    slack, tiny = EPSILON[dtype], TINY[dtype]
    if kind == "uniform":
        low, high = first, second
        assert (values >= low - slack * abs(low) - tiny).all(), f"{what}: below {low}"
        assert (values <= high + slack * abs(high) + tiny).all(), f"{what}: above {high}"
        mean, std = (low + high) / 2, (high - low) / math.sqrt(12)
        sd_of_std = std / math.sqrt(values.size or 1)
    else:
        mean, std = first, abs(second)
        sd_of_std = std / math.sqrt(2 * values.size or 1)
    if values.size < 1000 or not math.isfinite(std) or not math.isfinite(mean):
        return
    tol = 6 * std / math.sqrt(values.size) + 4 * slack * (abs(mean) + std) + tiny
    assert abs(values.mean() - mean) <= tol, f"{what}: mean {values.mean()}, not {mean}"
    tol = 6 * sd_of_std + 4 * slack * (abs(mean) + std) + tiny
    assert abs(values.std() - std) <= tol, f"{what}: std {values.std()}, not {std}"


def _check_fill(name, kwargs, ours, theirs, dtype, what):
    """The entries ours wrote, against PyTorch's entries or the law PyTorch draws from."""
    values, expected = _values(ours), _values(theirs)
    if name in ("constant_", "zeros_", "ones_", "eye_", "dirac_"):
        np.testing.assert_array_equal(values, expected, err_msg=what)
        return
    if name == "sparse_":
        # (PyTorch's rows to zero come from the global generator, whatever ``generator`` is)
        if kwargs["std"] > 0:
            assert ((values == 0).sum(0) == (expected == 0).sum(0)).all(), what
        _check_law(("normal", 0.0, kwargs["std"]), values[values != 0], dtype, what)
        return
    if name == "orthogonal_":
        rows = values.shape[0]
        flat = values.reshape(rows, -1)
        gram = flat @ flat.T if rows <= flat.shape[1] else flat.T @ flat
        scale = kwargs["gain"] ** 2
        atol = 100 * EPSILON[dtype] * max(1.0, scale)
        np.testing.assert_allclose(gram, np.eye(len(gram)) * scale, atol=atol, err_msg=what)
        return
    if name == "trunc_normal_":
        low, high = kwargs["a"], kwargs["b"]
        rounding = EPSILON[dtype] * max(abs(low), abs(high)) + TINY[dtype]
        assert (values >= low - rounding).all() and (values <= high + rounding).all(), what
        if values.size >= 1000 and kwargs["std"] > 0:
            # against PyTorch's sample: both within six standard errors of the law's mean
            spread = max(values.std(), expected.std())
            tol = 12 * spread / math.sqrt(values.size) + 2 * rounding
            assert abs(values.mean() - expected.mean()) <= tol, f"{what}: mean"
            assert abs(values.std() - expected.std()) <= tol, f"{what}: std"
        return
    _check_law(_law(name, kwargs, theirs), values, dtype, what)


@given(
    init_cases(),
    init_shapes(),
    st.sampled_from(DTYPES),
    st.booleans(),
    st.booleans(),
)
@FUZZ
def test_init_matches_pytorch(case, shape, dtype, requires_grad, transposed):
    name, kwargs = case
    requires_grad = requires_grad and dtype != "int64"
    # PyTorch's normal_ (and exponential_...) of an empty integer tensor returns it: the dtype
    # check lies in the kernel, which no entry runs; ours refuses integers always
    assume(dtype != "int64" or 0 not in shape)
    transposed = transposed and len(shape) >= 2
    what = f"{name}({shape}, {dtype}, {kwargs}, requires_grad={requires_grad}, T={transposed})"
    ours_t = _empty(sg, shape, dtype, requires_grad, transposed)
    theirs_t = _empty(torch, shape, dtype, requires_grad, transposed)
    grad_fn = ours_t.grad_fn  # (a transposed view's)
    ours, our_warnings = _run_init(sg, name, kwargs, ours_t)
    theirs, their_warnings = _run_init(torch, name, kwargs, theirs_t)
    if name == "orthogonal_" and transposed and len(shape) > 2 and ours_t.numel():
        # README, What is different: "nn.init.orthogonal_ fills a non-contiguous tensor of 3
        # or more dims"; PyTorch's copies through ``tensor.view_as(q)``, which raises
        theirs = _run_init(torch, name, kwargs, theirs_t.contiguous())[0]
    if raised_alike(ours, theirs, what):
        return
    assert our_warnings == their_warnings, f"{what}: warned {our_warnings}, {their_warnings}"
    assert ours is ours_t, f"{what}: not the tensor given"
    assert ours.requires_grad == requires_grad and ours.grad_fn is grad_fn, what
    assert tuple(ours.shape) == tuple(theirs.shape) and same_dtype(ours, theirs), what
    if not ours.numel():
        return
    _check_fill(name, kwargs, ours, theirs, dtype, what)


@given(
    st.sampled_from([*NONLINEARITIES, "Linear", "relu6"]),
    st.one_of(st.none(), st.floats(-5.0, 5.0), st.integers(-3, 3), st.booleans(), st.just("a")),
)
@FUZZ
def test_calculate_gain_matches_pytorch(nonlinearity, param):
    ours = outcome(sg.nn.init.calculate_gain, nonlinearity, param)
    theirs = outcome(torch.nn.init.calculate_gain, nonlinearity, param)
    if not raised_alike(ours, theirs, f"calculate_gain({nonlinearity!r}, {param!r})"):
        assert type(ours) is type(theirs) and ours == theirs, (ours, theirs)


@given(init_cases(), init_shapes(), st.integers(0, 2**32))
@FUZZ
def test_init_with_a_generator_repeats_its_draws_and_leaves_the_global_one(case, shape, seed):
    name, kwargs = case
    kwargs = {**kwargs, "generator": seed}
    state = sg.get_rng_state()
    first = outcome(lambda: _run_init(sg, name, kwargs, sg.empty(shape))[0].clone())
    if isinstance(first, Exception):
        return
    second = _run_init(sg, name, kwargs, sg.empty(shape))[0]
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    assert (sg.get_rng_state() == state).all(), f"{name} drew from the global generator"


# ---- nn.utils: gradient clipping --------------------------------------------------------------

NORM_TYPES = [1, 2, 2.0, 3.5, 0, 0.5, -1, math.inf, -math.inf, "inf"]


@st.composite
def gradients(draw) -> list:
    """[(parameter array, its gradient array or None)]: 0-d, empty and small shapes, gradients
    of zeros, random ones, or random with infinities and NaN."""
    dtype = draw(st.sampled_from(["float64", "float32", "float16"]))
    pairs = []
    for _ in range(draw(st.integers(0, 4))):
        shape = draw(st.sampled_from([(), (0,), (3,), (2, 3), (1,), (4, 0, 2)]))
        param = np.ones(shape, dtype)
        kind = draw(st.sampled_from(["none", "zeros", "random", "random", "special"]))
        grad = None
        if kind != "none":
            values = (
                st.floats(-100, 100)
                if kind != "special"
                else st.sampled_from([0.0, 1.5, -2.0, math.inf, -math.inf, math.nan])
            )
            size = math.prod(shape)
            grad = np.array(draw(st.lists(values, min_size=size, max_size=size)), dtype)
            grad = (grad * (kind != "zeros")).reshape(shape)
        pairs.append((param, grad))
    return pairs


def _parameters(lib, pairs):
    params = []
    for param, grad in pairs:
        p = lib.tensor(param, requires_grad=True)
        p.grad = None if grad is None else lib.tensor(grad)
        params.append(p)
    return params


def _pass_as(params, form):
    """The parameters as a list, a generator, or the one tensor alone."""
    if form == "generator":
        return (p for p in params)
    if form == "tensor" and len(params) == 1:
        return params[0]
    return params


@st.composite
def clip_calls(draw):
    """(name, keyword arguments other than the parameters) of a clipping call."""
    name = draw(
        st.sampled_from(
            ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]
        )
    )
    foreach = draw(st.sampled_from([None, False, True]))
    max_norm = draw(st.sampled_from([1.0, 0.5, 0.0, -1.0, 1e-8, 1e10, 3]))
    if name == "clip_grad_value_":
        return name, {
            "clip_value": draw(st.sampled_from([0.5, 0, -1.0, 1e10, 3])),
            "foreach": foreach,
        }
    kwargs = {"norm_type": draw(st.sampled_from(NORM_TYPES)), "foreach": foreach}
    if name != "clip_grads_with_norm_":
        kwargs["error_if_nonfinite"] = draw(st.booleans())
    if name != "get_total_norm":
        kwargs["max_norm"] = max_norm
    return name, kwargs


def _clip(lib, name, kwargs, params, form):
    utils = lib.nn.utils
    kwargs = dict(kwargs)
    if name == "get_total_norm":
        return utils.get_total_norm(
            _pass_as([p.grad for p in params if p.grad is not None], form), **kwargs
        )
    if name == "clip_grads_with_norm_":
        grads = [p.grad for p in params if p.grad is not None]
        total = utils.get_total_norm(grads, kwargs.pop("norm_type"))
        return utils.clip_grads_with_norm_(_pass_as(params, form), total_norm=total, **kwargs)
    return getattr(utils, name)(_pass_as(params, form), **kwargs)


def _assert_same_values(ours, theirs, what, dtype):
    """Tensors (or None) of the same dtype and shape whose entries agree within ``dtype``'s
    round-off, relative to the largest finite entry (a sum's small entries carry the round-off
    of its large terms), NaN where PyTorch's are."""
    assert (ours is None) == (theirs is None), what
    if theirs is None:
        return
    assert same_dtype(ours, theirs), f"{what}: {ours.dtype}, PyTorch's {theirs.dtype}"
    rtol = {"float64": 1e-10, "float32": 1e-5, "float16": 2e-3}[dtype]
    expected = theirs.detach().double().numpy()
    finite = np.abs(expected[np.isfinite(expected)])
    atol = rtol * max(finite.max(initial=0.0), 1e-3)
    actual = ours.detach().double().numpy()
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)


def _reciprocal_overflows(name, kwargs, their_params) -> bool:
    """Whether PyTorch's ``max_norm / (total_norm + 1e-6)`` is wrong: a Python number divided
    by a float16 tensor is computed as the number times its reciprocal, which overflows to inf
    below 1.5e-5 (``0.0 / tensor(1e-5, dtype=float16)`` is NaN, ``1e-8 / ...`` inf: NaN
    gradients, or none clipped); ours divides."""
    grads = [p.grad for p in their_params if p.grad is not None]
    if name not in ("clip_grad_norm_", "clip_grads_with_norm_") or not grads:
        return False
    total = outcome(torch.nn.utils.get_total_norm, grads, kwargs["norm_type"])
    if isinstance(total, Exception) or total.dtype != torch.float16:
        return False
    return bool(torch.isinf(1 / (total + 1e-6)))


@given(gradients(), clip_calls(), st.sampled_from(["list", "generator", "tensor"]))
@FUZZ
def test_clipping_matches_pytorch(pairs, call, form):
    name, kwargs = call
    shown = [(p.shape, None if g is None else g.tolist()) for p, g in pairs]
    what = f"{name}({shown}, {kwargs}, {form})"
    dtype = str(pairs[0][0].dtype) if pairs else "float64"
    ours_params, their_params = _parameters(sg, pairs), _parameters(torch, pairs)
    assume(not _reciprocal_overflows(name, kwargs, their_params))
    ours = outcome(_clip, sg, name, kwargs, ours_params, form)
    theirs = outcome(_clip, torch, name, kwargs, their_params, form)
    if name == "clip_grad_value_" and all(p.grad is None for p in their_params):
        # README, What is different: "nn.utils.clip_grad_value_ over parameters none of which
        # has a gradient does nothing" (PyTorch's raises "Expected !nested_tensorlist[0].empty()")
        theirs = None
    if raised_alike(ours, theirs, what):
        return
    _assert_same_values(ours, theirs, f"{what}: result", dtype)
    for i, (o, t) in enumerate(zip(ours_params, their_params)):
        _assert_same_values(o.grad, t.grad, f"{what}: gradient {i}", dtype)


# ---- nn.utils: parameters as one vector -------------------------------------------------------


@given(
    st.lists(st.sampled_from([(), (0,), (3,), (2, 3), (1, 1, 2)]), max_size=4),
    st.lists(st.sampled_from(["float64", "float32"]), min_size=4, max_size=4),
    st.integers(-2, 2),
    st.sampled_from(["float64", "float32"]),
)
@FUZZ
def test_parameters_as_a_vector_match_pytorch(shapes, dtypes, extra, vec_dtype):
    rng = np.random.default_rng(len(shapes))
    arrays = [rng.standard_normal(s).astype(d) for s, d in zip(shapes, dtypes)]
    vector = rng.standard_normal(max(sum(a.size for a in arrays) + extra, 0))
    what = f"{[(a.shape, a.dtype) for a in arrays]}, {extra:+} entries, {vec_dtype}"
    results = {}
    for lib in (sg, torch):
        params = [lib.tensor(a, requires_grad=True) for a in arrays]
        flat = outcome(lib.nn.utils.parameters_to_vector, params)
        if not isinstance(flat, Exception):
            (flat * lib.arange(flat.numel(), dtype=flat.dtype)).sum().backward()
        copied = [p.detach().clone() for p in params]
        vec = lib.tensor(vector, dtype=getattr(lib, vec_dtype))
        done = outcome(lib.nn.utils.vector_to_parameters, vec, copied)
        results[lib] = flat, [p.grad for p in params], done, copied
    (flat, grads, done, copied), (t_flat, t_grads, t_done, t_copied) = results.values()
    if not raised_alike(flat, t_flat, f"parameters_to_vector({what})"):
        _assert_same_values(flat.detach(), t_flat.detach(), what, "float64")
        for g, t in zip(grads, t_grads):
            _assert_same_values(g, t, f"{what}: gradient", "float64")
    if not raised_alike(done, t_done, f"vector_to_parameters({what})"):
        for p, t in zip(copied, t_copied):
            _assert_same_values(p, t, f"{what}: parameter after", "float64")


# ---- nn.utils.rnn: padding and packing --------------------------------------------------------


@st.composite
def sequence_calls(draw):
    """(lengths, feature shape, name, keyword arguments) of a padding or packing helper."""
    lengths = draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))
    features = draw(st.sampled_from([(), (2,), (1, 3)]))
    name = draw(
        st.sampled_from(
            ["pad_sequence", "pack_sequence", "pack_padded_sequence", "pad_packed_sequence",
             "unpad_sequence", "unpack_sequence"]
        )
    )  # fmt: skip
    kwargs = {}
    if name in ("pad_sequence", "pack_padded_sequence", "pad_packed_sequence", "unpad_sequence"):
        kwargs["batch_first"] = draw(st.booleans())
    if name in ("pad_sequence", "pad_packed_sequence"):
        kwargs["padding_value"] = draw(st.sampled_from([0.0, -1.5, math.inf, 2]))
    if name == "pad_sequence":
        kwargs["padding_side"] = draw(st.sampled_from(["right", "left", "up"]))
    if name in ("pack_sequence", "pack_padded_sequence", "pad_packed_sequence", "unpack_sequence"):
        kwargs["enforce_sorted"] = draw(st.booleans())
    if name == "pad_packed_sequence":
        kwargs["total_length"] = draw(st.sampled_from([None, max(lengths), max(lengths) + 2, 1]))
    if name == "pack_padded_sequence":
        kwargs["lengths_as"] = draw(st.sampled_from(["list", "tensor"]))
    return lengths, features, name, kwargs


def _run_sequences(lib, lengths, arrays, name, kwargs):
    """The helper's outputs as a flat tuple of tensors (and lists of ints), from leaves
    made of ``arrays`` (one per sequence)."""
    utils = lib.nn.utils.rnn
    kwargs = dict(kwargs)
    seqs = [lib.tensor(a, requires_grad=True) for a in arrays]
    leaves = list(seqs)
    if name == "pad_sequence":
        return (utils.pad_sequence(seqs, **kwargs),), leaves
    if name == "pack_sequence":
        return tuple(utils.pack_sequence(seqs, **kwargs)), leaves
    padded = utils.pad_sequence(seqs, batch_first=kwargs.get("batch_first", False))
    if name == "unpad_sequence":
        return tuple(utils.unpad_sequence(padded, lib.tensor(lengths), **kwargs)), leaves
    if name == "pack_padded_sequence":
        as_tensor = kwargs.pop("lengths_as") == "tensor"
        given = lib.tensor(lengths) if as_tensor else lengths
        return tuple(utils.pack_padded_sequence(padded, given, **kwargs)), leaves
    packed = utils.pack_sequence(seqs, enforce_sorted=kwargs.pop("enforce_sorted"))
    if name == "unpack_sequence":
        return tuple(utils.unpack_sequence(packed)), leaves
    out, out_lengths = utils.pad_packed_sequence(packed, **kwargs)
    return (out, out_lengths), leaves


@given(sequence_calls(), st.integers(0, 2**16))
@FUZZ
def test_sequence_helpers_match_pytorch(call, seed):
    lengths, features, name, kwargs = call
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((n, *features)) for n in lengths]
    what = f"{name}(lengths {lengths}, features {features}, {kwargs})"
    ours = outcome(_run_sequences, sg, lengths, arrays, name, kwargs)
    theirs = outcome(_run_sequences, torch, lengths, arrays, name, kwargs)
    if raised_alike(ours, theirs, what):
        return
    (outs, leaves), (t_outs, t_leaves) = ours, theirs
    assert len(outs) == len(t_outs), what
    weights = []
    for i, (o, t) in enumerate(zip(outs, t_outs)):
        if t is None or o is None:
            assert o is t, f"{what}: output {i} is {o}, PyTorch's {t}"
            continue
        assert same_dtype(o, t) and tuple(o.shape) == tuple(t.shape), f"{what}: output {i}"
        np.testing.assert_array_equal(o.detach().numpy(), t.detach().numpy(), err_msg=what)
        assert o.requires_grad == t.requires_grad, f"{what}: output {i} requires_grad"
        if t.requires_grad:
            weights.append((o, t, rng.standard_normal(tuple(t.shape))))
    if weights:
        sum((o * sg.tensor(w)).sum() for o, _, w in weights).backward()
        sum((t * torch.tensor(w)).sum() for _, t, w in weights).backward()
    for x, t in zip(leaves, t_leaves):
        _assert_same_values(x.grad, t.grad, f"{what}: gradient", "float64")


# ---- nn.utils.fusion --------------------------------------------------------------------------


@st.composite
def fusions(draw):
    """(layer builder, batch norm builder, input shape, transpose, modes) of a fusion."""
    kind = draw(st.sampled_from(["linear", "conv1d", "conv2d", "conv3d", "conv_transpose2d"]))
    channels = draw(st.integers(1, 3))
    bias = draw(st.booleans())
    affine = draw(st.booleans())
    bn_channels = draw(st.sampled_from([channels, channels, 1, channels + 1]))
    dims = 1 if kind == "linear" else int(kind[-2])
    shape = (3, 2) if kind == "linear" else (2, 2, *[3] * dims)
    layer_name = {"linear": "Linear", "conv_transpose2d": "ConvTranspose2d"}.get(kind)

    def layer(nn):
        if kind == "linear":
            return nn.Linear(2, channels, bias=bias)
        return getattr(nn, layer_name or f"Conv{dims}d")(2, channels, 2, bias=bias)

    def bn(nn):
        return getattr(nn, f"BatchNorm{dims}d")(bn_channels, affine=affine)

    transpose = draw(st.booleans()) if "transpose" in kind else False
    training = draw(st.sampled_from([(False, False), (False, False), (True, False), (False, True)]))
    dtypes = draw(
        st.sampled_from([("float64", "float64"), ("float32", "float64"), ("float64", "float32")])
    )
    return kind, layer, bn, shape, transpose, training, dtypes


@given(fusions(), st.integers(0, 2**16))
@FUZZ
def test_fusion_matches_pytorch(fusion, seed):
    kind, layer, bn, shape, transpose, (layer_training, bn_training), dtypes = fusion
    rng = np.random.default_rng(seed)
    results = []
    for lib in (sg, torch):
        torch.manual_seed(seed)
        theirs_layer = layer(torch.nn)
        state = {k: v.numpy() for k, v in theirs_layer.state_dict().items()}
        module = layer(lib.nn).to(getattr(lib, dtypes[0]))
        module.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
        norm = bn(lib.nn).to(getattr(lib, dtypes[1]))
        stats = np.random.default_rng(seed)
        for buffer in [*norm.parameters(), *norm.buffers()]:
            if buffer.dtype != lib.int64:  # (not num_batches_tracked)
                values = stats.uniform(0.5, 2.0, tuple(buffer.shape))
                buffer.data = lib.tensor(values, dtype=buffer.dtype)
        module.train(layer_training)
        norm.train(bn_training)
        fuse = lib.nn.utils.fusion
        if kind == "linear":
            fused = outcome(fuse.fuse_linear_bn_eval, module, norm)
        else:
            fused = outcome(fuse.fuse_conv_bn_eval, module, norm, transpose)
        results.append(fused)
    ours, theirs = results
    what = f"{kind}, transpose={transpose}, training={layer_training, bn_training}, {dtypes}"
    if raised_alike(ours, theirs, what):
        return
    for name, t in theirs.named_parameters():
        o = getattr(ours, name)
        assert o.requires_grad == t.requires_grad, f"{what}: {name} requires_grad"
        _assert_same_values(o, t, f"{what}: fused {name}", "float32")
    x = rng.standard_normal(shape)
    ours_out = outcome(lambda: ours(sg.tensor(x, dtype=ours.weight.dtype)))
    theirs_out = outcome(lambda: theirs(torch.tensor(x, dtype=theirs.weight.dtype)))
    if not raised_alike(ours_out, theirs_out, f"{what}: the fused layer's output"):
        _assert_same_values(ours_out, theirs_out, f"{what}: output", "float32")


# ---- nn.utils.parametrize and parametrizations ------------------------------------------------


class Doubled(torch.nn.Module):
    """A custom parametrization with a right inverse (PyTorch's; ours is ``_doubled(sg.nn)``)."""

    def forward(self, x):
        return x * 2

    def right_inverse(self, x):
        return x / 2


def _doubled(nn):
    if nn is torch.nn:
        return Doubled()

    class OursDoubled(nn.Module):
        def forward(self, x):
            return x * 2

        def right_inverse(self, x):
            return x / 2

    return OursDoubled()


@st.composite
def parametrizations(draw):
    """A chain of parametrizations of a linear layer's weight: [(name, keyword arguments)]."""
    chain = []
    for _ in range(draw(st.integers(1, 2))):
        name = draw(st.sampled_from(["orthogonal", "weight_norm", "spectral_norm", "doubled"]))
        kwargs = {}
        if name == "orthogonal":
            kwargs = {
                "orthogonal_map": draw(
                    st.sampled_from([None, "matrix_exp", "cayley", "householder"])
                ),
                "use_trivialization": draw(st.booleans()),
            }
        elif name == "weight_norm":
            kwargs = {"dim": draw(st.sampled_from([0, 1, None, -1]))}
        elif name == "spectral_norm":
            kwargs = {
                "n_power_iterations": draw(st.integers(1, 3)),
                "dim": draw(st.sampled_from([0, 1, None])),
            }
        chain.append((name, kwargs))
    return chain


def _parametrized(lib, state, shape, chain):
    """A linear layer of ``shape`` holding ``state``, its weight parametrized by ``chain``."""
    layer = lib.nn.Linear(shape[1], shape[0]).double()
    layer.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    for name, kwargs in chain:
        if name == "doubled":
            lib.nn.utils.parametrize.register_parametrization(layer, "weight", _doubled(lib.nn))
        else:
            getattr(lib.nn.utils.parametrizations, name)(layer, **kwargs)
    return layer


def _twice(lib, layer, x, cached):
    """The layer's output on ``x`` twice, summed (the parametrization computed twice, or once
    under ``parametrize.cached()``)."""
    with lib.nn.utils.parametrize.cached() if cached else contextlib.nullcontext():
        return layer(lib.tensor(x)) + layer(lib.tensor(x))


@given(
    parametrizations(),
    st.tuples(st.integers(1, 4), st.integers(1, 4)),
    st.booleans(),
    st.sampled_from([None, True, False]),
    st.integers(0, 2**16),
)
@FEWER
def test_parametrizations_match_pytorch(chain, shape, training, leave_parametrized, seed):
    for name, kwargs in chain:
        # (ours refuses householder without the trivialization, the default of a weight that
        # is not square: it needs geqrf, which scratchgrad lacks; see orthogonal's doc string)
        default = "matrix_exp" if shape[0] == shape[1] else "householder"
        householder = (kwargs.get("orthogonal_map") or default) == "householder"
        assume(name != "orthogonal" or kwargs["use_trivialization"] or not householder)
    rng = np.random.default_rng(seed)
    state = {"weight": rng.standard_normal(shape), "bias": rng.standard_normal(shape[0])}
    what = f"{chain} of a {shape} weight, training={training}"
    theirs = outcome(_parametrized, torch, state, shape, chain)
    ours = outcome(_parametrized, sg, state, shape, chain)
    if raised_alike(ours, theirs, what):
        return
    # spectral_norm's power iteration starts from random vectors: ours from PyTorch's
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    ours.train(training)
    theirs.train(training)
    x = rng.standard_normal((2, shape[1]))
    tolerance = (1e-7, 1e-9)
    for cached in (False, True):
        out = outcome(_twice, sg, ours, x, cached)
        expected = outcome(_twice, torch, theirs, x, cached)
        if raised_alike(out, expected, f"{what}, cached={cached}"):
            return
        pairs = parameter_pairs(ours, theirs)
        check_outputs_and_gradients(out, expected, [], "float64", what, pairs, tolerance=tolerance)
    for name, t in theirs.named_buffers():
        _assert_same_values(
            dict(ours.named_buffers())[name], t, f"{what}: buffer {name}", "float64"
        )
    if leave_parametrized is None:
        return
    removed = outcome(
        sg.nn.utils.parametrize.remove_parametrizations, ours, "weight", leave_parametrized
    )
    t_removed = outcome(
        torch.nn.utils.parametrize.remove_parametrizations, theirs, "weight", leave_parametrized
    )
    what = f"{what}, removed with leave_parametrized={leave_parametrized}"
    if raised_alike(removed, t_removed, what):
        return
    assert type(ours).__name__ == type(theirs).__name__ == "Linear", what
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    _assert_same_values(ours.weight.detach(), theirs.weight.detach(), f"{what}: weight", "float64")


# ---- nn.utils.prune ---------------------------------------------------------------------------


@st.composite
def prunings(draw):
    """A sequence of one to three deterministic pruning steps on a linear or conv layer's
    weight or bias: [(method name, keyword arguments)], then whether to ``remove``."""
    amounts = st.one_of(
        st.floats(0.0, 1.0), st.integers(0, 13), st.sampled_from([-1, 1.5, 0.0, 1.0, 2, True])
    )
    steps = []
    for _ in range(draw(st.integers(1, 3))):
        method = draw(st.sampled_from(["l1_unstructured", "ln_structured", "identity", "global"]))
        kwargs = {"name": draw(st.sampled_from(["weight", "weight", "bias"]))}
        if method != "identity":
            kwargs["amount"] = draw(amounts)
        if method == "ln_structured":
            # (not the bias: after an earlier pruning PyTorch's finds its channels by a sum
            # over dims=[], which sums them all, and prunes the 1-d tensor as (1, n) where a
            # first pruning raises "Structured pruning can only be applied to
            # multidimensional tensors")
            kwargs["name"] = "weight"
            kwargs["n"] = draw(st.sampled_from([1, 2, math.inf, -math.inf, "fro", 0]))
            kwargs["dim"] = draw(st.sampled_from([0, 1, -1, 2, 3]))
        steps.append((method, kwargs))
    return steps, draw(st.booleans())


def _pruned(lib, state, conv, steps, remove):
    prune = lib.nn.utils.prune
    layer = (lib.nn.Conv1d(2, 3, 2) if conv else lib.nn.Linear(4, 3)).double()
    layer.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    for method, kwargs in steps:
        kwargs = dict(kwargs)
        if method == "global":
            name, amount = kwargs["name"], kwargs["amount"]
            prune.global_unstructured(
                [(layer, name), (layer, "weight")], prune.L1Unstructured, amount=amount
            )
        else:
            getattr(prune, method)(layer, **kwargs)
    if remove:
        prune.remove(layer, steps[-1][1]["name"])
    return layer


@given(prunings(), st.booleans(), st.integers(0, 2**16))
@FUZZ
def test_pruning_matches_pytorch(pruning, conv, seed):
    steps, remove = pruning
    rng = np.random.default_rng(seed)
    shapes = {"weight": (3, 2, 2) if conv else (3, 4), "bias": (3,)}
    state = {k: rng.standard_normal(s) for k, s in shapes.items()}
    what = f"{steps}, remove={remove}, conv={conv}"
    ours = outcome(_pruned, sg, state, conv, steps, remove)
    theirs = outcome(_pruned, torch, state, conv, steps, remove)
    if raised_alike(ours, theirs, what):
        return
    assert list(ours.state_dict()) == list(theirs.state_dict()), what
    for name, t in theirs.state_dict().items():
        o = ours.state_dict()[name]
        assert same_dtype(o, t), f"{what}: {name} is {o.dtype}"
        np.testing.assert_array_equal(o.numpy(), t.numpy(), err_msg=f"{what}: {name}")
    for name in ("weight", "bias"):
        np.testing.assert_array_equal(
            getattr(ours, name).detach().numpy(), getattr(theirs, name).detach().numpy(), what
        )


# ---- nn.utils.weight_norm and spectral_norm (the legacy hooks) -------------------------------


def _hooked(lib, layer_name, state, norm, kwargs):
    """A layer holding ``state`` whose weight is normalised by the legacy hook ``norm``."""
    layer = getattr(lib.nn, layer_name)(2, 3, 2).double() if layer_name != "Linear" else None
    layer = layer if layer is not None else lib.nn.Linear(2, 3).double()
    layer.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    return getattr(lib.nn.utils, norm)(layer, **kwargs)


@given(
    st.sampled_from(["Linear", "Conv1d", "ConvTranspose1d"]),
    st.sampled_from(["weight_norm", "spectral_norm"]),
    st.sampled_from([0, 1, -1, 2, -3, None]),
    st.integers(1, 3),
    st.booleans(),
    st.booleans(),
    st.integers(0, 2**16),
)
@FUZZ
def test_legacy_norm_hooks_match_pytorch(layer_name, norm, dim, iterations, training, remove, seed):
    # PyTorch's spectral_norm permutes the weight by (dim, *[d for d in range(ndim) if d !=
    # dim]), one dim too many for a negative dim: a RuntimeError "number of dimensions ... does
    # not match"; ours wraps it (and raises IndexError for a dim past the weight's, as other
    # ops do, where PyTorch's permute raises that RuntimeError)
    ndim = 2 if layer_name == "Linear" else 3
    assume(norm != "spectral_norm" or dim is None or 0 <= dim < ndim)
    rng = np.random.default_rng(seed)
    shape = (
        (3, 2)
        if layer_name == "Linear"
        else ((2, 3, 2) if "Transpose" in layer_name else (3, 2, 2))
    )
    state = {"weight": rng.standard_normal(shape), "bias": rng.standard_normal(3)}
    kwargs = (
        {"dim": dim} if norm == "weight_norm" else {"n_power_iterations": iterations, "dim": dim}
    )
    what = f"{norm}({layer_name}, {kwargs}), training={training}"
    theirs = outcome(_hooked, torch, layer_name, state, norm, kwargs)
    ours = outcome(_hooked, sg, layer_name, state, norm, kwargs)
    if raised_alike(ours, theirs, what):
        return
    # spectral_norm's power iteration starts from random vectors: ours from PyTorch's
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    assert list(ours.state_dict()) == list(theirs.state_dict()), what
    ours.train(training)
    theirs.train(training)
    x = rng.standard_normal((2, 2) if layer_name == "Linear" else (2, 2, 4))
    out = outcome(lambda: ours(sg.tensor(x)) + ours(sg.tensor(x)))
    expected = outcome(lambda: theirs(torch.tensor(x)) + theirs(torch.tensor(x)))
    if raised_alike(out, expected, what):
        return
    pairs = parameter_pairs(ours, theirs)
    check_outputs_and_gradients(out, expected, [], "float64", what, pairs, tolerance=(1e-7, 1e-9))
    for name, t in theirs.named_buffers():
        _assert_same_values(dict(ours.named_buffers())[name], t, f"{what}: {name}", "float64")
    if remove:
        removed = outcome(getattr(sg.nn.utils, f"remove_{norm}"), ours)
        t_removed = outcome(getattr(torch.nn.utils, f"remove_{norm}"), theirs)
        if not raised_alike(removed, t_removed, f"{what}, removed"):
            assert list(ours.state_dict()) == list(theirs.state_dict()), what
            _assert_same_values(ours.weight, theirs.weight, f"{what}: removed", "float64")


# ---- nn.utils.stateless.functional_call -------------------------------------------------------


def _net(nn):
    """A small net with a buffer and a weight shared by two layers (``tie_weights``)."""
    net = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3), nn.Linear(3, 3))
    net[2].weight = net[0].weight
    return net.double().eval()


NET_ENTRIES = {
    "0.weight": (3, 3), "0.bias": (3,), "1.weight": (3,), "1.running_mean": (3,),
    "2.bias": (3,), "2.weight": (3, 3), "missing": (3,), "0.bias_wrong_shape": (2,),
}  # fmt: skip


@given(
    st.lists(st.sampled_from(list(NET_ENTRIES)), unique=True, max_size=5),
    st.sampled_from(["right", "bad shape", "not a tensor"]),
    st.booleans(),
    st.booleans(),
    st.integers(0, 2**16),
)
@FUZZ
def test_functional_call_matches_pytorch(names, kind, tie_weights, strict, seed):
    rng = np.random.default_rng(seed)
    arrays = {}
    for name in names:
        shape = NET_ENTRIES[name]
        if name == "0.bias_wrong_shape" or (kind == "bad shape" and name == names[0]):
            name, shape = name.removesuffix("_wrong_shape"), (2,)
        arrays[name] = rng.standard_normal(shape)
    x = rng.standard_normal((2, 3))
    shown = [(k, v.shape) for k, v in arrays.items()]
    what = f"functional_call({shown}, {kind}, tie={tie_weights}, strict={strict})"
    results = []
    for lib in (sg, torch):
        torch.manual_seed(seed)
        theirs_net = _net(torch.nn)
        net = _net(lib.nn) if lib is sg else theirs_net
        if lib is sg:
            net.load_state_dict(
                {k: sg.tensor(v.numpy()) for k, v in theirs_net.state_dict().items()}
            )
        given_ = {k: lib.tensor(v, requires_grad=True) for k, v in arrays.items()}
        if kind == "not a tensor" and given_:
            given_[next(iter(given_))] = 1.5
        call = functools.partial(
            lib.nn.utils.stateless.functional_call, tie_weights=tie_weights, strict=strict
        )
        out = outcome(call, net, given_, (lib.tensor(x),))
        results.append((out, given_, net))
    (out, given_, net), (expected, their_given, their_net) = results
    if raised_alike(out, expected, what):
        return
    inputs = [(given_[k], their_given[k]) for k in given_ if isinstance(given_[k], sg.Tensor)]
    check_outputs_and_gradients(
        out,
        expected,
        inputs,
        "float64",
        what,
        parameter_pairs(net, their_net),
        tolerance=(1e-7, 1e-9),
    )
