"""``normal`` (its four overloads), ``randint_like`` (and ``randint``'s dtypes and range checks)
and the module-level ``dropout``, against PyTorch: shapes, dtypes, requires_grad, gradients
(``normal``'s are zero, as PyTorch's), errors and warnings. Random values cannot match
PyTorch's, so values are compared where the draw does not matter (``std=0``, ``[k, k + 1)``,
``p=0``) and the distributions are checked by their moments."""

import numpy as np
import pytest
import strict  # noqa: F401  (registers the "strict" device)
import torch
from oracle import (
    assert_doc_examples_run,
    assert_raises_as_torch,
    check_outputs_and_gradients,
    leaves,
    same_dtype,
)

import scratchgrad as sg
from scratchgrad.func import vmap as sg_vmap

# ---- normal ---------------------------------------------------------------------------------


def _pair(shape, dtype="float32", requires_grad=False, low=-2.0, high=2.0, seed=0):
    """The same tensor of uniform draws in both libraries, (ours, PyTorch's)."""
    array = np.random.default_rng(seed).uniform(low, high, shape)
    return leaves(array, dtype, requires_grad)


TENSOR_FORMS = {  # a call of ``m.normal`` on a mean ``a`` and a std ``s``
    "tensor mean, tensor std": lambda m, a, s: m.normal(a, s),
    "keywords": lambda m, a, s: m.normal(mean=a, std=s),
    "tensor mean, number std": lambda m, a, s: m.normal(a, 0.5),
    "tensor mean, default std": lambda m, a, s: m.normal(a),
    "number mean, tensor std": lambda m, a, s: m.normal(1.5, s),
    "int mean by keyword, tensor std": lambda m, a, s: m.normal(mean=1, std=s),
}
SHAPES = {  # mean's and std's shapes: broadcast together as PyTorch's
    "same": ((2, 3), (2, 3)),
    "broadcast both": ((3, 1), (4,)),
    "0-d mean": ((), (3,)),
    "0-d std": ((2, 2), ()),
    "both 0-d": ((), ()),
    "empty": ((0, 3), (3,)),
}


@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("form", TENSOR_FORMS)
def test_normal_of_tensors_gives_torchs_shape_dtype_and_node(form, requires_grad, shapes):
    """A float32 mean and a float64 std: the result takes the mean's dtype, or the std's when
    the mean is a number; its node is NormalBackward1, 2 or 3 as PyTorch's."""
    mean_shape, std_shape = SHAPES[shapes]
    a, ta = _pair(mean_shape, "float32", requires_grad)
    s, ts = _pair(std_shape, "float64", requires_grad, 0.0, 2.0, seed=1)
    ours, theirs = TENSOR_FORMS[form](sg, a, s), TENSOR_FORMS[form](torch, ta, ts)
    assert ours.shape == tuple(theirs.shape) and same_dtype(ours, theirs)
    assert ours.requires_grad == theirs.requires_grad
    assert (ours.grad_fn and ours.grad_fn.name()) == (theirs.grad_fn and theirs.grad_fn.name())


NUMBER_FORMS = {  # a call of ``m.normal`` on numbers and a size
    "floats": lambda m: m.normal(2.0, 3.0, (2, 3)),
    "ints and a list size": lambda m: m.normal(2, 3, [4]),
    "size by keyword, 0-d": lambda m: m.normal(0.0, 1.0, size=()),
    "all by keyword": lambda m: m.normal(mean=0.0, std=1.0, size=(2,)),
    "a zero std": lambda m: m.normal(0.0, 0.0, (2,)),
    "float64": lambda m: m.normal(0.0, 1.0, (3,), dtype=m.float64),
    "float16": lambda m: m.normal(0.0, 1.0, (3,), dtype=m.float16),
    "bfloat16": lambda m: m.normal(0.0, 1.0, (3,), dtype=m.bfloat16),
    "requires_grad": lambda m: m.normal(0.0, 1.0, (3,), requires_grad=True),
    "device": lambda m: m.normal(0.0, 1.0, (3,), device="cpu"),
    "empty": lambda m: m.normal(0.0, 1.0, (0, 2)),
    "a generator": lambda m: m.normal(0.0, 1.0, (3,), generator=m.Generator().manual_seed(2)),
}


@pytest.mark.parametrize("form", NUMBER_FORMS)
def test_normal_of_numbers_and_a_size_gives_torchs_shape_dtype_and_leaf(form):
    ours, theirs = NUMBER_FORMS[form](sg), NUMBER_FORMS[form](torch)
    assert ours.shape == tuple(theirs.shape) and same_dtype(ours, theirs)
    assert ours.requires_grad == theirs.requires_grad and ours.is_leaf and theirs.is_leaf


ZERO_STD_FORMS = {  # a call of ``m.normal`` on a mean ``a`` and a std ``s`` of zeros
    "tensor mean, tensor std": lambda m, a, s: m.normal(a, s),
    "tensor mean, integer tensor std": lambda m, a, s: m.normal(a, s.detach().long()),
    "tensor mean, number std": lambda m, a, s: m.normal(a, 0.0),
    "number mean, tensor std": lambda m, a, s: m.normal(1.5, s),
}


@pytest.mark.parametrize(
    "dtypes",
    [
        ("float32", "float64"),
        ("float64", "float32"),
        ("float16", "float32"),
        ("bfloat16", "float64"),
        ("float64", "float64"),
    ],
)
@pytest.mark.parametrize("form", ZERO_STD_FORMS)
def test_normal_with_a_zero_std_is_the_mean_with_torchs_zero_gradients(form, dtypes):
    """With std = 0 the draw does not matter: the result is exactly the mean in both
    libraries, and the gradients (zero, in each input's shape and dtype, also where mean (3, 1)
    and std (4,) broadcast) are compared by the oracle."""
    mean_dtype, std_dtype = dtypes
    a, ta = leaves(np.random.default_rng(2).standard_normal((3, 1)), mean_dtype)
    s, ts = leaves(np.zeros(4), std_dtype)
    out, expected = ZERO_STD_FORMS[form](sg, a, s), ZERO_STD_FORMS[form](torch, ta, ts)
    check_outputs_and_gradients(out, expected, [(a, ta), (s, ts)], tolerance=(0, 0))


def test_normal_gradient_is_zero_even_for_a_nan_or_inf_gradient_as_torch():
    grads = []
    for m in (sg, torch):
        mean = m.zeros(3, requires_grad=True)
        std = m.ones(3, dtype=m.float64, requires_grad=True)
        m.normal(mean, std).backward(m.tensor([float("nan"), float("inf"), 1.0]))
        grads.append((mean.grad, std.grad))
    for ours, theirs in zip(*grads):
        assert same_dtype(ours, theirs) and ours.tolist() == theirs.tolist() == [0.0] * 3


def test_normal_under_no_grad_makes_no_graph():
    mean = sg.zeros(2, requires_grad=True)
    with sg.no_grad():
        assert not sg.normal(mean, 1.0).requires_grad
    assert sg.normal(mean, 1.0).requires_grad


def test_normal_samples_follow_the_broadcast_means_and_stds():
    """Per column of 40,000 float64 draws, the mean and the standard deviation are within
    5 standard errors of the column's."""
    sg.manual_seed(0)
    means, stds = np.array([-3.0, 0.0, 10.0]), np.array([0.5, 1.0, 4.0])
    for mean, std in [
        (sg.tensor(means).expand(40_000, 3), sg.tensor(stds)),
        (sg.tensor(means), sg.tensor(stds).expand(40_000, 3)),
    ]:
        a = sg.normal(mean, std).numpy()
        assert a.shape == (40_000, 3) and a.dtype == np.float64
        n = a.shape[0]
        assert (abs(a.mean(0) - means) < 5 * stds / np.sqrt(n)).all()
        assert (abs(a.std(0) - stds) < 5 * stds / np.sqrt(2 * n)).all()
    a = sg.normal(3.0, 2.0, (100_000,), dtype=sg.float64).numpy()
    assert abs(a.mean() - 3.0) < 5 * 2.0 / np.sqrt(1e5) and abs(a.std() - 2.0) < 0.02


def test_normal_draws_the_librarys_float64_normals_for_the_seed():
    """Each overload draws N(0, 1) in float64 from the generator, times std plus mean, then
    rounds to the dtype: the same numbers as ``normal_``, NumPy's ``default_rng(seed)``."""
    expected = np.random.default_rng(4).standard_normal(5) * 3.0 + 2.0
    draws = []
    for call in [
        lambda: sg.normal(2.0, 3.0, (5,), dtype=sg.float64),
        lambda: sg.normal(sg.full((5,), 2.0, dtype=sg.float64), 3.0),
        lambda: sg.normal(2.0, sg.full((5,), 3.0, dtype=sg.float64)),
        lambda: sg.empty(5, dtype=sg.float64).normal_(2.0, 3.0),
    ]:
        sg.manual_seed(4)
        draws.append(call().numpy())
    for a in draws:
        np.testing.assert_array_equal(a, expected)
    sg.manual_seed(4)
    np.testing.assert_array_equal(sg.normal(2.0, 3.0, (5,)).numpy(), expected.astype(np.float32))


def test_normal_draws_from_a_generator_given_and_leaves_the_librarys_alone():
    sg.manual_seed(1)
    a = sg.normal(0.0, 1.0, (4,), generator=sg.Generator().manual_seed(9)).tolist()
    b = sg.normal(sg.zeros(4), sg.ones(4), generator=sg.Generator().manual_seed(9)).tolist()
    c = sg.rand(3).tolist()
    sg.manual_seed(1)
    assert a == b and sg.rand(3).tolist() == c


NORMAL_ERRORS = {
    # name: (call of m, error, our message)
    "negative number std": (
        lambda m: m.normal(m.zeros(3), -1.0),
        RuntimeError,
        "normal expects std >= 0.0, but found std -1",
    ),
    "NaN number std": (
        lambda m: m.normal(m.zeros(3), float("nan")),
        RuntimeError,
        "found std nan",
    ),
    "negative std with numbers": (
        lambda m: m.normal(0.0, -2.0, (3,)),
        RuntimeError,
        "std >= 0.0",
    ),
    "a negative entry of a tensor std": (
        lambda m: m.normal(m.zeros(3), m.tensor([1.0, -1.0, 1.0])),
        RuntimeError,
        "normal expects all elements of std >= 0.0",
    ),
    "a NaN entry of a tensor std, number mean": (
        lambda m: m.normal(0.0, m.tensor([1.0, float("nan")])),
        RuntimeError,
        "all elements of std >= 0.0",
    ),
    "a negative 0-d tensor std": (
        lambda m: m.normal(m.zeros(3), m.tensor(-1.0)),
        RuntimeError,
        "all elements of std >= 0.0",
    ),
    "shapes that do not broadcast": (
        lambda m: m.normal(m.zeros(2), m.ones(3)),
        RuntimeError,
        r"shapes of mean and std \[\(2,\), \(3,\)\] cannot be broadcast",
    ),
    "same numel, other shapes": (
        lambda m: m.normal(m.zeros(2, 3), m.ones(6)),
        RuntimeError,
        "cannot be broadcast",
    ),
    "an integer mean": (
        lambda m: m.normal(m.zeros(3, dtype=m.int64), 1.0),
        NotImplementedError,
        "normal: not implemented for int64",
    ),
    "a bool mean with a tensor std": (
        lambda m: m.normal(m.zeros(3, dtype=m.bool), m.ones(3)),
        NotImplementedError,
        "not implemented for bool",
    ),
    "an integer std with a number mean": (
        lambda m: m.normal(0.0, m.ones(3, dtype=m.int64)),
        NotImplementedError,
        "not implemented for int64",
    ),
    "an integer dtype with numbers": (
        lambda m: m.normal(0.0, 1.0, (2,), dtype=m.int64),
        NotImplementedError,
        "not implemented for int64",
    ),
    "numbers without a size": (
        lambda m: m.normal(0.0, 1.0),
        TypeError,
        "give size as a tuple",
    ),
    "an int size": (lambda m: m.normal(0.0, 1.0, 3), TypeError, "give size as a tuple"),
    "a size with tensors": (
        lambda m: m.normal(m.zeros(3), 1.0, (3,)),
        TypeError,
        "taken only with a number mean and std",
    ),
    "a dtype with tensors": (
        lambda m: m.normal(m.zeros(3), m.ones(3), dtype=m.float64),
        TypeError,
        "taken only with a number mean and std",
    ),
    "a device with tensors": (
        lambda m: m.normal(m.zeros(3), 1.0, device="cpu"),
        TypeError,
        "taken only",
    ),
    "a list mean": (lambda m: m.normal([0.0], 1.0), TypeError, "mean must be a Tensor"),
    "a list std": (lambda m: m.normal(0.0, [1.0]), TypeError, "std must be a Tensor"),
    "a number mean alone": (lambda m: m.normal(0.0), TypeError, "give size"),
}


@pytest.mark.parametrize("case", NORMAL_ERRORS)
def test_normal_refuses_what_torch_refuses_before_drawing(case):
    """A tensor std's values are checked after the draw (see ``creation.Normal``)."""
    call, error, message = NORMAL_ERRORS[case]
    assert_raises_as_torch(call, error, message)
    if "tensor std" in case:
        return
    sg.manual_seed(3)
    with pytest.raises(error):
        call(sg)
    after = sg.rand(2).tolist()
    sg.manual_seed(3)
    assert sg.rand(2).tolist() == after  # the generator did not move


def test_normal_and_randint_like_replay_their_draws_under_jit():
    """Inside a jitted step each call draws again (and checks std again), as eager."""

    def step(x):
        return sg.normal(x, x.abs()) + sg.normal(0.0, 1.0, (3,)) + sg.randint_like(x, 5)

    def run(fn):
        sg.manual_seed(3)
        return [fn(sg.full((3,), float(i))).numpy() for i in range(4)]

    jitted = sg.jit(step)
    for e, j in zip(run(step), run(jitted)):
        np.testing.assert_array_equal(j, e)
    assert all(r.checked for rs in jitted.recordings.values() for r in rs)  # replayed
    with pytest.raises(RuntimeError, match="all elements of std >= 0.0"):
        jitted(sg.full((3,), float("nan")))


# ---- randint_like and randint -----------------------------------------------------------------

RANDINT_LIKE_FORMS = {
    "high": lambda m, x: m.randint_like(x, 5),
    "low, high": lambda m, x: m.randint_like(x, 2, 5),
    "high by keyword": lambda m, x: m.randint_like(x, high=5),
    "both by keyword": lambda m, x: m.randint_like(x, low=2, high=5),
    "a 0-d tensor high": lambda m, x: m.randint_like(x, m.tensor(5)),
    "0-d tensor bounds": lambda m, x: m.randint_like(x, m.tensor(2), m.tensor(5)),
    "dtype": lambda m, x: m.randint_like(x, 5, dtype=m.int64),
    "dtype float64": lambda m, x: m.randint_like(x, 5, dtype=m.float64),
    "requires_grad": lambda m, x: m.randint_like(x.float(), 5, requires_grad=True),
    "device": lambda m, x: m.randint_like(x, 5, device="cpu"),
    "a generator": lambda m, x: m.randint_like(x, 5, generator=m.Generator().manual_seed(1)),
}
INPUTS = {
    "float32": lambda m: m.zeros(2, 3),
    "float16": lambda m: m.zeros(4, dtype=m.float16),
    "bfloat16": lambda m: m.zeros(4, dtype=m.bfloat16),
    "int32": lambda m: m.zeros(3, dtype=m.int32),
    "int64 0-d": lambda m: m.tensor(0),
    "uint8 empty": lambda m: m.zeros(0, 2, dtype=m.uint8),
}


@pytest.mark.parametrize("given", INPUTS)
@pytest.mark.parametrize("form", RANDINT_LIKE_FORMS)
def test_randint_like_gives_torchs_shape_dtype_and_range(form, given):
    ours = RANDINT_LIKE_FORMS[form](sg, INPUTS[given](sg))
    theirs = RANDINT_LIKE_FORMS[form](torch, INPUTS[given](torch))
    assert ours.shape == tuple(theirs.shape) and same_dtype(ours, theirs)
    assert ours.requires_grad == theirs.requires_grad
    values = ours.detach().double().numpy()
    low = 2 if form in ("low, high", "both by keyword", "0-d tensor bounds") else 0
    assert ((values >= low) & (values < 5) & (values == np.round(values))).all()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "uint8", "int64"])
def test_randint_like_with_one_integer_in_range_gives_it_as_torch(dtype):
    for low in (0, 7):
        ours = sg.randint_like(sg.zeros(2, 3, dtype=getattr(sg, dtype)), low, low + 1)
        theirs = torch.randint_like(torch.zeros(2, 3, dtype=getattr(torch, dtype)), low, low + 1)
        assert same_dtype(ours, theirs) and ours.tolist() == theirs.tolist()


def test_randint_like_draws_every_integer_of_the_range_for_the_seed():
    sg.manual_seed(0)
    draws = sg.randint_like(sg.zeros(4000), -2, 3)
    assert draws.dtype == sg.float32 and set(draws.tolist()) == {-2.0, -1.0, 0.0, 1.0, 2.0}
    sg.manual_seed(0)
    assert sg.randint(-2, 3, (4000,), dtype=sg.float32).tolist() == draws.tolist()
    assert sg.randint(0, 2, (100,), dtype=sg.bool).dtype == sg.bool


EMPTY_RANGE = "random_ expects 'from' to be less than 'to'"
RANDINT_ERRORS = {
    "an empty range": (lambda m: m.randint_like(m.zeros(3), 5, 5), RuntimeError, EMPTY_RANGE),
    "a reversed range": (
        lambda m: m.randint_like(m.zeros(3), 5, 2),
        RuntimeError,
        "random_ expects 'from' to be less than 'to', but got from=5 >= to=2",
    ),
    "high 0": (lambda m: m.randint_like(m.zeros(3), 0), RuntimeError, EMPTY_RANGE),
    "a negative high": (lambda m: m.randint_like(m.zeros(3), -3), RuntimeError, EMPTY_RANGE),
    "randint high 0, empty size": (lambda m: m.randint(0, (0,)), RuntimeError, EMPTY_RANGE),
    "past int8": (
        lambda m: m.randint_like(m.zeros(3, dtype=m.int8), 1000),
        RuntimeError,
        "to - 1 is out of bounds for int8",
    ),
    "past bool": (
        lambda m: m.randint_like(m.zeros(3, dtype=m.bool), 3),
        RuntimeError,
        "to - 1 is out of bounds for bool",
    ),
    "below uint8": (
        lambda m: m.randint_like(m.zeros(3, dtype=m.uint8), -1, 5),
        RuntimeError,
        "from is out of bounds for uint8",
    ),
    "past int32": (
        lambda m: m.randint(0, 2**31 + 1, (3,), dtype=m.int32),
        RuntimeError,
        "to - 1 is out of bounds for int32",
    ),
    "past float16": (
        lambda m: m.randint_like(m.zeros(3, dtype=m.float16), 70000),
        RuntimeError,
        "to - 1 is out of bounds for float16",
    ),
    "below float16": (
        lambda m: m.randint_like(m.zeros(3, dtype=m.float16), -70000, 0),
        RuntimeError,
        "from is out of bounds for float16",
    ),
    "an integer tensor requiring grad": (
        lambda m: m.randint_like(m.zeros(3), 5, dtype=m.int64, requires_grad=True),
        RuntimeError,
        "cannot require gradients",
    ),
    "a 1-d tensor high": (
        lambda m: m.randint_like(m.zeros(3), m.tensor([5])),
        RuntimeError,
        "high must be a scalar tensor",
    ),
    "a float high": (lambda m: m.randint_like(m.zeros(3), 5.5), TypeError, "high must be an int"),
    "float bounds": (lambda m: m.randint(2.5, 5.5, (3,)), TypeError, "low must be an int"),
    "a bool high": (lambda m: m.randint_like(m.zeros(3), True), TypeError, "must be an int"),
    "past 64 bits": (lambda m: m.randint_like(m.zeros(3), 2**63), ValueError, "64-bit"),
}


@pytest.mark.parametrize("case", RANDINT_ERRORS)
def test_randint_like_and_randint_refuse_what_torch_refuses(case):
    call, error, message = RANDINT_ERRORS[case]
    assert_raises_as_torch(call, error, message)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.randint_like(m.zeros(3), 2**25),
        lambda m: m.randint(-(2**12), 0, (3,), dtype=m.float16),
        lambda m: m.randint_like(m.zeros(3, dtype=m.bfloat16), 258),
    ],
)
def test_randint_warns_past_the_integers_a_float_dtype_holds_as_torch(call):
    for m in (torch, sg):
        with pytest.warns(UserWarning, match="is out of bounds"):
            call(m)


# ---- dropout ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.dropout(x, 0.5, False),
        lambda m, x: m.dropout(x, 0.0, True),
        lambda m, x: m.dropout(x, 1.0, True),
        lambda m, x: m.dropout(input=x, p=0.3, train=False),
    ],
)
def test_dropout_gives_torchs_values_where_no_draw_decides(call):
    x, tx = leaves(np.random.default_rng(0).standard_normal((3, 4)), "float64")
    ours, theirs = call(sg, x), call(torch, tx)
    check_outputs_and_gradients(ours, theirs, [(x, tx)])


def test_dropout_keeps_each_entry_with_probability_1_minus_p_and_scales_it():
    sg.manual_seed(0)
    out = sg.dropout(sg.ones(40_000), 0.25, True).numpy()
    assert set(np.unique(out)) == {0.0, np.float32(1 / 0.75)}
    assert abs((out == 0).mean() - 0.25) < 0.01  # 4.6 standard errors


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda m: m.dropout(m.ones(3), 1.5, True), RuntimeError, "between 0 and 1, but got 1.5"),
        (lambda m: m.dropout(m.ones(3), -0.5, False), RuntimeError, "between 0 and 1"),
        (lambda m: m.dropout(m.ones(3), 0.5), TypeError, "train"),
        (lambda m: m.dropout(m.ones(3), 0.5, training=True), TypeError, "training"),
    ],
)
def test_dropout_refuses_what_torch_refuses(call, error, message):
    assert_raises_as_torch(call, error, message)


@pytest.mark.parametrize(
    "function, globs",
    [
        (sg.normal, vars(sg.creation)),
        (sg.randint, vars(sg.creation)),
        (sg.randint_like, vars(sg.creation)),
        (sg.dropout, vars(sg)),
    ],
)
def test_doc_examples_run(function, globs):
    assert_doc_examples_run(function, globs)


def test_normal_and_randint_like_draw_on_the_tensors_device():
    """On the strict device (arrays that refuse what CuPy's refuse)."""
    mean = sg.zeros(3, device="strict", requires_grad=True)
    out = sg.normal(mean, sg.ones(3, device="strict"))
    out.sum().backward()
    assert out.device.type == mean.grad.device.type == "strict" and mean.grad.tolist() == [0.0] * 3
    assert sg.normal(0.0, 1.0, (2,), device="strict").device.type == "strict"
    with pytest.raises(RuntimeError, match="all elements of std >= 0.0"):
        sg.normal(mean, sg.tensor([1.0, -1.0, 1.0], device="strict"))
    ints = sg.randint_like(sg.zeros(3, device="strict"), 4, 5)
    assert ints.device.type == "strict" and ints.tolist() == [4.0] * 3


VMAPS = {"scratchgrad": (sg, sg_vmap), "torch": (torch, torch.func.vmap)}


@pytest.mark.parametrize("lib", VMAPS)
@pytest.mark.parametrize("randomness", ["different", "same"])
def test_normal_under_vmap_draws_per_member_or_once_as_torch(randomness, lib):
    """A draw per member ('different') or one for all ('same'), in both libraries; with
    std = 0 every member is its own mean exactly. (With 'same', PyTorch refuses a batched
    mean or std; this vmap draws one noise for all members and adds each member's mean.)"""
    m, vmap = VMAPS[lib]
    zeros = m.zeros(2)  # not batched
    noise = vmap(
        lambda x: x + m.normal(zeros, 1.0) + m.normal(0.0, 1.0, (2,)), randomness=randomness
    )(m.zeros(4, 2)).numpy()
    assert noise.shape == (4, 2) and noise.dtype == np.float32
    assert (len({tuple(row) for row in noise}) == 1) == (randomness == "same")
    if randomness == "different":
        means = np.arange(8.0).reshape(4, 2)
        exact = vmap(lambda x: m.normal(x, m.zeros(2)), randomness=randomness)
        np.testing.assert_array_equal(exact(m.tensor(means)).numpy(), means)


@pytest.mark.parametrize("lib", VMAPS)
def test_normal_under_vmap_checks_a_batched_std_as_torch(lib):
    m, vmap = VMAPS[lib]
    draw = vmap(lambda s: m.normal(m.zeros(2), s), randomness="different")
    assert draw(m.zeros(3, 2)).tolist() == [[0.0, 0.0]] * 3
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        draw(m.tensor([[1.0, 1.0], [1.0, -1.0], [1.0, 1.0]]))


# ---- poisson and binomial -------------------------------------------------------------------

DRAWS = {  # (which were missing)
    "poisson": lambda m, x, y: m.poisson(x),
    "binomial": lambda m, x, y: m.binomial(x, y),
}


@pytest.mark.parametrize("name", DRAWS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 1), (3,)), ((), ()), ((0, 2), (2,))])
def test_poisson_and_binomial_shapes_and_dtypes_are_torch(name, dtype, shapes):
    (x, tx), (y, ty) = _pair(shapes[0], dtype, low=1, high=5), _pair(shapes[1], dtype, low=0)
    ours, theirs = DRAWS[name](sg, x, y.abs() / 2), DRAWS[name](torch, tx, ty.abs() / 2)
    assert ours.shape == tuple(theirs.shape) and same_dtype(ours, theirs)


def test_poisson_keeps_16_bit_floats_and_draws_zero_at_rate_zero():
    for dtype in ("float16", "bfloat16"):
        rates = sg.zeros(3, dtype=getattr(sg, dtype))
        draws = sg.poisson(rates)
        assert draws.dtype == rates.dtype and draws.tolist() == [0.0] * 3


@pytest.mark.parametrize(
    "rate, count, prob", [(0.5, 1.0, 0.3), (4.0, 10.0, 0.5), (30.0, 200.0, 0.9)]
)
def test_poisson_and_binomial_draw_with_the_right_mean_and_variance(rate, count, prob):
    """Within 5 standard errors of the moments, with a fixed seed (PyTorch's stream is not
    ours)."""
    sg.manual_seed(0)
    n = 20000
    for draws, mean, var in (
        (sg.poisson(sg.full((n,), rate, dtype=sg.float64)), rate, rate),
        (
            sg.binomial(
                sg.full((n,), count, dtype=sg.float64), sg.full((n,), prob, dtype=sg.float64)
            ),
            count * prob,
            count * prob * (1 - prob),
        ),
    ):
        values = draws.numpy()
        assert (values == np.round(values)).all() and (values >= 0).all()
        assert abs(values.mean() - mean) < 5 * np.sqrt(var / n)
        assert abs(values.var() - var) < 5 * var * np.sqrt(2 / n) + 5 * np.sqrt(var / n)


def test_poisson_and_binomial_repeat_with_a_seed_and_follow_a_generator():
    rates, count, prob = sg.full((50,), 3.0), sg.full((50,), 8.0), sg.full((50,), 0.4)
    seeded = [
        (sg.manual_seed(7), sg.poisson(rates), sg.binomial(count, prob))[1:] for _ in range(2)
    ]
    assert all(a.tolist() == b.tolist() for a, b in zip(*seeded))
    ours = [sg.Generator().manual_seed(3) for _ in range(2)]
    first = sg.poisson(rates, ours[0]), sg.binomial(count, prob, generator=ours[0])
    sg.poisson(rates)  # (the default generator's draws change nothing of a generator's)
    second = sg.poisson(rates, generator=ours[1]), sg.binomial(count, prob, ours[1])
    assert all(a.tolist() == b.tolist() for a, b in zip(first, second))


def test_binomial_edges_are_torch():
    """A count of 0 or below draws 0, a probability of 0 or below 0, of 1 or above the count,
    a NaN one NaN: PyTorch checks none of them."""
    for m in (sg, torch):
        draws = m.binomial(
            m.tensor([0.0, -3.0, 5.0, 5.0, 5.0, 5.0, 5.0]),
            m.tensor([0.5, 0.5, 0.0, -1.0, 1.0, 2.0, float("nan")]),
        )
        np.testing.assert_array_equal(draws.numpy(), [0, 0, 0, 0, 5, 5, np.nan])


def test_poisson_gradient_is_zero_and_binomial_has_none_as_torch():
    for m in (sg, torch):
        rates = m.tensor([1.0, 2.0], requires_grad=True)
        m.poisson(rates).sum().backward()
        assert rates.grad.tolist() == [0.0, 0.0]
        for which in range(2):
            count, prob = m.tensor([4.0]), m.tensor([0.5])
            (count, prob)[which].requires_grad_()
            draws = m.binomial(count, prob)
            assert draws.requires_grad
            with pytest.raises(RuntimeError, match="derivative for aten::binomial"):
                draws.sum().backward()


@pytest.mark.parametrize(
    "call, kind, message",
    [
        (lambda m: m.poisson(m.tensor([-1.0, 1.0])), RuntimeError, "non-negative"),
        (lambda m: m.poisson(m.tensor([float("nan")])), RuntimeError, "non-negative"),
        (lambda m: m.poisson(m.tensor([1, 2])), NotImplementedError, "Long"),
        (lambda m: m.poisson(m.tensor([1j])), NotImplementedError, "poisson_cpu"),
        (lambda m: m.poisson([1.0]), TypeError, "must be Tensor"),
        (lambda m: m.poisson(m.ones(1), out=m.ones(1)), TypeError, "out"),
        (lambda m: m.binomial(m.tensor([2]), m.tensor([0.5])), ValueError, "floating-point"),
        (lambda m: m.binomial(m.ones(1), m.ones(1, dtype=m.float64)), RuntimeError, "Double"),
        (lambda m: m.binomial(m.ones(1).half(), m.ones(1).half()), NotImplementedError, "Half"),
        (lambda m: m.binomial(m.ones(1), 0.5), TypeError, "must be Tensor"),
        (lambda m: m.binomial(m.ones(2), m.ones(3)), RuntimeError, "broadcast"),
    ],
)
def test_poisson_and_binomial_refuse_what_torch_refuses(call, kind, message):
    assert_raises_as_torch(call, kind, message)
