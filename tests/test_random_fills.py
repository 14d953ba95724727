"""The in-place random fills ``uniform_``, ``normal_``, ``exponential_`` and ``bernoulli_``:
their argument forms and errors against PyTorch's, their distributions, the seeding (the
library's generator or one given), and how they meet autograd (a leaf that requires grad is
refused, a result keeps its graph with a zero gradient, as PyTorch's). Replays under
``scratchgrad.jit`` are in ``tests/jit/test_jit.py`` (``RANDOM_OPS``)."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import scratchgrad as sg
from scratchgrad import nn

FILLS = {  # the same call in both libraries; ``options``: a generator
    "uniform_": lambda t, **options: t.uniform_(-1.5, 2.0, **options),
    "uniform_ from keyword": lambda t, **options: t.uniform_(**{"from": 2.0, "to": 3.0}, **options),
    "normal_": lambda t, **options: t.normal_(1.0, 0.5, **options),
    "exponential_": lambda t, **options: t.exponential_(3.0, **options),
    "log_normal_": lambda t, **options: t.log_normal_(0.5, 0.25, **options),
    "cauchy_": lambda t, **options: t.cauchy_(2.0, 0.5, **options),
    "geometric_": lambda t, **options: t.geometric_(0.25, **options),
    "random_": lambda t, **options: t.random_(-3, 5, **options),
    "bernoulli_": lambda t, **options: t.bernoulli_(0.25, **options),
    "bernoulli_ tensor p": lambda t, **options: t.bernoulli_(
        t.new_tensor([0.0, 0.5, 1.0]), **options
    ),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("fill", FILLS)
def test_a_fill_returns_the_tensor_in_its_dtype_and_shape_and_counts_a_change(fill, dtype):
    for m in (sg, torch):
        t = m.zeros(4, 3, dtype=getattr(m, dtype))
        version = t._version
        assert FILLS[fill](t) is t
        assert t.shape == (4, 3) and t.dtype == getattr(m, dtype)
        assert t._version == version + 1


@pytest.mark.parametrize(
    "fill, check",
    [
        ("uniform_", lambda a: a.min() >= -1.5 and a.max() < 2.0 and abs(a.mean() - 0.25) < 0.02),
        ("uniform_ from keyword", lambda a: a.min() >= 2 and a.max() < 3),
        ("normal_", lambda a: abs(a.mean() - 1.0) < 0.01 and abs(a.std() - 0.5) < 0.01),
        ("exponential_", lambda a: a.min() >= 0 and abs(a.mean() - 1 / 3) < 0.01),
        # log-normal: its log's moments; Cauchy: median and quartiles (it has no mean)
        ("log_normal_", lambda a: abs(np.log(a).mean() - 0.5) < 0.006),
        (
            "cauchy_",
            lambda a: abs(np.median(a) - 2) < 0.02 and abs(np.percentile(a, 75) - 2.5) < 0.03,
        ),
        (
            "geometric_",
            lambda a: a.min() == 1 and np.all(a == a.round()) and abs(a.mean() - 4) < 0.1,
        ),
        ("bernoulli_", lambda a: set(np.unique(a)) == {0, 1} and abs(a.mean() - 0.25) < 0.01),
        ("random_", lambda a: set(np.unique(a)) == set(range(-3, 5))),
    ],
)
def test_the_samples_follow_their_distribution(fill, check):
    """Over 30,000 samples the bounds hold and the moments are within 4 standard errors."""
    sg.manual_seed(0)
    t = FILLS[fill](sg.empty(10_000, 3, dtype=sg.float64))
    assert check(t.numpy())


def test_bernoulli_with_a_tensor_of_probabilities_broadcasts_it_as_torch():
    probs = [0.0, 0.3, 1.0]
    draws = sg.zeros(20_000, 3, dtype=sg.int64).bernoulli_(sg.tensor(probs)).numpy()
    np.testing.assert_allclose(draws.mean(axis=0), probs, atol=0.013)  # 4 standard errors
    assert torch.zeros(2, 3, dtype=torch.int64).bernoulli_(torch.tensor(probs)).dtype == (
        torch.int64
    )


@pytest.mark.parametrize("fill", FILLS)
def test_manual_seed_and_generators_make_the_fills_reproducible(fill):
    def drawn(**options):
        return FILLS[fill](sg.empty(3, 3), **options).tolist()

    sg.manual_seed(5)
    first = drawn()
    sg.manual_seed(5)
    assert drawn() == first
    sg.manual_seed(5)
    assert drawn(generator=sg.Generator().manual_seed(5)) == first
    assert drawn(generator=sg.Generator().manual_seed(6)) != first
    assert drawn() == first  # the generators given did not move the library's


def test_uniform_and_normal_draw_numpys_numbers_for_the_seed():
    """The library's generator is NumPy's ``default_rng(seed)`` and the fills draw in float64
    (then round to the tensor's dtype), so that a seeded model keeps the weights nn.init gave
    it before these methods existed."""
    sg.manual_seed(11)
    u = sg.empty(2, 3).uniform_(-0.5, 0.5)
    n = sg.empty(4, dtype=sg.float64).normal_(2.0, 3.0)
    rng = np.random.default_rng(11)
    np.testing.assert_array_equal(u.numpy(), rng.uniform(-0.5, 0.5, (2, 3)).astype(np.float32))
    np.testing.assert_array_equal(n.numpy(), rng.standard_normal(4) * 3.0 + 2.0)


def test_nn_init_fills_draw_what_the_tensor_methods_draw():
    sg.manual_seed(3)
    by_init = [nn.init.uniform_(sg.empty(5), -2.0, 1.0), nn.init.normal_(sg.empty(5), 1.0, 4.0)]
    sg.manual_seed(3)
    by_method = [sg.empty(5).uniform_(-2.0, 1.0), sg.empty(5).normal_(1.0, 4.0)]
    for a, b in zip(by_init, by_method):
        assert a.tolist() == b.tolist()


BAD = {
    "uniform_ from > to": (lambda t: t.uniform_(2.0, 1.0), RuntimeError, r"\[from, to\) range"),
    "normal_ negative std": (lambda t: t.normal_(0.0, -1.0), RuntimeError, "std >= 0.0"),
    "exponential_ zero rate": (lambda t: t.exponential_(0.0), RuntimeError, "lambda > 0.0"),
    "bernoulli_ p above 1": (lambda t: t.bernoulli_(1.5), RuntimeError, r"p to be in \[0, 1\]"),
    "bernoulli_ tensor p below 0": (
        lambda t: t.bernoulli_(t.new_tensor([0.5, -0.1, 0.2])),
        RuntimeError,
        None,  # PyTorch's words are an internal check's
    ),
    "uniform_ on integers": (lambda t: t.long().uniform_(), NotImplementedError, "int64|Long"),
    "normal_ on integers": (lambda t: t.long().normal_(), NotImplementedError, "int64|Long"),
    "exponential_ on integers": (lambda t: t.long().exponential_(), RuntimeError, "floating"),
    "log_normal_ zero std": (lambda t: t.log_normal_(std=0.0), RuntimeError, "std > 0.0"),
    "log_normal_ on integers": (lambda t: t.long().log_normal_(), NotImplementedError, "Long"),
    "cauchy_ negative sigma": (lambda t: t.cauchy_(sigma=-1.0), RuntimeError, "sigma > 0.0"),
    "cauchy_ on integers": (lambda t: t.long().cauchy_(), RuntimeError, "floating point"),
    "random_ from not below to": (lambda t: t.random_(5, 5), RuntimeError, "less than 'to'"),
    "random_ to of 0": (lambda t: t.random_(0), RuntimeError, "less than 'to'"),
    "random_ a float bound": (lambda t: t.random_(2.5), TypeError, "random_"),
    "random_ out of uint8": (lambda t: t.byte().random_(0, 300), RuntimeError, "out of bounds"),
    "geometric_ p of 1": (lambda t: t.geometric_(1.0), RuntimeError, r"p to be in \(0, 1\)"),
    "uniform_ from_ keyword": (lambda t: t.uniform_(from_=1.0), TypeError, "from_"),
    "uniform_ from twice": (lambda t: t.uniform_(1.0, **{"from": 1.0}), TypeError, "'from'"),
    "uniform_ from nan": (lambda t: t.uniform_(float("nan"), 1.0), RuntimeError, "from.* out of"),
    "uniform_ to inf": (lambda t: t.uniform_(0.0, float("inf")), RuntimeError, "to.* out of"),
    "uniform_ past float32": (lambda t: t.uniform_(0.0, 1e39), RuntimeError, "out of bounds"),
    "uniform_ past float16": (lambda t: t.half().uniform_(0, 7e4), RuntimeError, "out of bounds"),
    "uniform_ too wide": (lambda t: t.uniform_(-3e38, 3e38), RuntimeError, "to-from <="),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_arguments_raise_torchs_error_and_change_nothing(case):
    call, error, words = BAD[case]
    with pytest.raises(error, match=words):
        call(torch.zeros(3))
    t = sg.zeros(3)
    with pytest.raises(error, match=words):
        call(t)
    assert t.tolist() == [0.0, 0.0, 0.0] and t._version == 0


@pytest.mark.parametrize("fill", FILLS)
def test_a_leaf_that_requires_grad_is_refused_outside_no_grad(fill):
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used"):
        FILLS[fill](torch.zeros(3, requires_grad=True))
    w = sg.zeros(3, requires_grad=True)
    name = fill.split()[0]
    with pytest.raises(
        RuntimeError, match=f"{name}: a leaf Variable that requires grad is being used in an"
    ):
        FILLS[fill](w)
    assert w.tolist() == [0.0, 0.0, 0.0] and w._version == 0
    with sg.no_grad():
        FILLS[fill](w)
    assert w.is_leaf and w.requires_grad and w._version == 1


@pytest.mark.parametrize("fill", FILLS)
def test_a_filled_result_stays_in_the_graph_with_a_zero_gradient_as_torch(fill):
    """The old values are gone: their gradient is zero, and the result is no new leaf (a
    later in-place op on it is recorded, not refused)."""
    grads = []
    for m in (sg, torch):
        x = m.ones(2, 3, requires_grad=True)
        y = x * 2
        FILLS[fill](y[1])  # through a view: the base's other row keeps its gradient
        assert not y.is_leaf and y.grad_fn is not None
        y.mul_(3)
        y.sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1] == [[6.0] * 3, [0.0] * 3]


@settings(max_examples=25, deadline=None)
@given(
    shape=array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
    low=st.floats(-1e3, 1e3),
    width=st.floats(0.0, 1e3),
    dtype=st.sampled_from(["float16", "bfloat16", "float32", "float64"]),
)
def test_uniform_stays_inside_its_bounds(shape, low, width, dtype):
    """In [from, to) for any bounds, also where a draw rounds up to ``to`` in the tensor's
    dtype (then the dtype's largest number below it); ``from`` itself where the dtype has no
    number in between (``from`` rounded), as where ``from == to``."""
    t = sg.empty(shape, dtype=getattr(sg, dtype)).uniform_(low, low + width)
    a = t.double().numpy()  # (float32 would round a float64 draw, up to the bound)
    rounded_low = sg.tensor(low, dtype=getattr(sg, dtype)).double().item()
    assert t.shape == shape and (a >= min(low, rounded_low)).all()
    assert ((a < low + width) | (a == rounded_low)).all()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_rand_and_uniform_in_a_narrow_dtype_never_reach_the_upper_bound(dtype):
    """Drawn wider and rounded, about 1 in 4,000 float16 draws (1 in 500 bfloat16) would
    round up to 1: they become the dtype's largest number below it, as PyTorch's [0, 1)."""
    sg.manual_seed(0)
    dtype = getattr(sg, dtype)
    largest = np.nextafter(np.asarray(1.0, sg.tensor(0.0, dtype=dtype).numpy().dtype), -np.inf)
    for t in (sg.rand(200_000, dtype=dtype), sg.empty(200_000, dtype=dtype).uniform_()):
        a = t.float().numpy()
        assert a.max() == np.float32(largest) and (a >= 0).all()


@pytest.mark.parametrize(
    "dtype, top",
    [("float32", 2**24), ("float64", 2**53), ("float16", 2**11), ("bfloat16", 2**8),
     ("int64", 2**63 - 1), ("uint8", 255), ("int8", 127), ("bool", 1)],
)  # fmt: skip
def test_random_without_bounds_draws_up_to_the_dtypes_largest_exact_integer(dtype, top):
    """As PyTorch's (its own draws checked against the same top): every integer up to it is
    exact in the dtype."""
    for m in (torch, sg):
        drawn = m.empty(4000, dtype=getattr(m, dtype)).random_().double()
        assert drawn.min().item() >= 0 and drawn.max().item() <= top
        assert drawn.max().item() > top * 0.99 and (drawn == drawn.round()).all()
        assert m.empty(1000, dtype=getattr(m, dtype)).random_(2).max().item() == 1


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_uniform_and_normal_fill_complex_tensors_as_torch(dtype):
    """Each part of a complex entry: U(from, to), or N(mean, std**2 / 2) (std the whole's)."""
    moments = []
    for lib in (sg, torch):
        lib.manual_seed(0)
        uniform = lib.zeros(100_000, dtype=getattr(lib, dtype)).uniform_(-1.0, 3.0)
        normal = lib.zeros(100_000, dtype=getattr(lib, dtype)).normal_(5.0, 2.0)
        assert uniform.dtype == normal.dtype == getattr(lib, dtype)
        parts = [p.numpy().astype(np.float64) for p in (uniform.real, uniform.imag)]
        assert all(p.min() >= -1 and p.max() < 3 for p in parts)
        parts += [p.numpy().astype(np.float64) for p in (normal.real, normal.imag)]
        moments.append([(p.mean(), p.std()) for p in parts])
    np.testing.assert_allclose(moments[0], moments[1], atol=0.03)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_layers_initialise_as_torch(dtype):
    sg.manual_seed(0)
    torch.manual_seed(0)
    ours = nn.Linear(300, 200, dtype=getattr(sg, dtype)).weight.detach().numpy()
    theirs = torch.nn.Linear(300, 200, dtype=getattr(torch, dtype)).weight.detach().numpy()
    for part in (np.real, np.imag):
        assert abs(part(ours).std() - part(theirs).std()) < 0.02 * part(theirs).std()
        assert abs(part(ours)).max() <= abs(part(theirs)).max() * 1.01
