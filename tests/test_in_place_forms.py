"""The in-place forms of elementwise methods (``clamp_``, ``masked_fill_``, ``relu_``,
``addcmul_``, ...) against PyTorch's: the values written, the gradient through one in a graph,
and the errors (a leaf that requires grad, a float result into an integer tensor, a result of
another shape); and under ``scratchgrad.jit``, the WGAN critic's weight clipping."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)
POSITIVE = np.abs(X) + 0.5
MASK = RNG.random((3, 4)) > 0.5

# name -> (the input, the arguments given as (lib -> args)); tensors are made by each library
INSIDE_ONE = X * 0.3  # for asin and acos
WITH_SPECIALS = X.copy()
WITH_SPECIALS[0, :3] = [np.nan, np.inf, -np.inf]

FORMS = {
    "abs": (X, lambda lib: ()),
    "acos": (INSIDE_ONE, lambda lib: ()),
    "asin": (INSIDE_ONE, lambda lib: ()),
    "atan": (X, lambda lib: ()),
    "atan2": (X, lambda lib: (lib.tensor(POSITIVE),)),
    "clamp_max": (X, lambda lib: (-0.2,)),
    "clamp_min": (X, lambda lib: (0.1,)),
    "cosh": (X, lambda lib: ()),
    "exp2": (X, lambda lib: ()),
    "frac": (X * 3, lambda lib: ()),
    "hypot": (X, lambda lib: (lib.tensor(POSITIVE),)),
    "log10": (POSITIVE, lambda lib: ()),
    "log2": (POSITIVE, lambda lib: ()),
    "rsqrt": (POSITIVE, lambda lib: ()),
    "sinh": (X, lambda lib: ()),
    "tan": (INSIDE_ONE, lambda lib: ()),
    "ceil": (X, lambda lib: ()),
    "clamp": (X, lambda lib: (-0.5, 0.5)),
    "clip": (X, lambda lib: (None, 0.25)),
    "cos": (X, lambda lib: ()),
    "erf": (X, lambda lib: ()),
    "exp": (X, lambda lib: ()),
    "expm1": (X, lambda lib: ()),
    "floor": (X, lambda lib: ()),
    "log": (POSITIVE, lambda lib: ()),
    "log1p": (POSITIVE, lambda lib: ()),
    "masked_fill": (X, lambda lib: (lib.tensor(MASK), -1.5)),
    "nan_to_num": (WITH_SPECIALS, lambda lib: ({"posinf": 9.0},)),
    "neg": (X, lambda lib: ()),
    "pow": (POSITIVE, lambda lib: (1.5,)),
    "reciprocal": (POSITIVE, lambda lib: ()),
    "relu": (X, lambda lib: ()),
    "remainder": (X * 4, lambda lib: (1.5,)),
    "round": (X * 3, lambda lib: ()),
    "sigmoid": (X, lambda lib: ()),
    "sign": (X, lambda lib: ()),
    "sin": (X, lambda lib: ()),
    "sqrt": (POSITIVE, lambda lib: ()),
    "square": (X, lambda lib: ()),
    "tanh": (X, lambda lib: ()),
    "trunc": (X * 3, lambda lib: ()),
    "logical_and": (X, lambda lib: (lib.tensor(MASK),)),
    "logical_not": (X * (X > 0), lambda lib: ()),
    "logical_or": (X * (X > 0), lambda lib: (lib.tensor(MASK),)),
    "logical_xor": (X, lambda lib: (lib.tensor(MASK),)),
    "addcmul": (X, lambda lib: (lib.tensor(POSITIVE), lib.tensor(X), {"value": 0.5})),
    "addcdiv": (X, lambda lib: (lib.tensor(X), lib.tensor(POSITIVE), {"value": -2.0})),
}


def call(lib, x, name):
    """``x.<name>_(...)`` with the form's arguments (a trailing dict: keyword arguments), its
    floating tensors in ``x``'s dtype (mixed dtypes round differently: PyTorch's atan2
    backward squares a float32 argument in float32)."""
    args = [
        a.to(x.dtype) if isinstance(a, lib.Tensor) and a.is_floating_point() else a
        for a in FORMS[name][1](lib)
    ]
    kwargs = args.pop() if args and isinstance(args[-1], dict) else {}
    return getattr(x, f"{name}_")(*args, **kwargs)


@pytest.mark.parametrize("name", FORMS)
def test_an_in_place_form_writes_what_pytorch_writes(name):
    ours, theirs = sg.tensor(FORMS[name][0]), torch.tensor(FORMS[name][0])
    assert call(sg, ours, name) is ours
    call(torch, theirs, name)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7)


# The logical forms write a constant: PyTorch keeps the tensor's old gradient path (a
# gradient of 3 through ``(1.5 * x).logical_not_() * 2``), here none flows (x.grad stays None)
@pytest.mark.parametrize("name", [name for name in FORMS if not name.startswith("logical")])
def test_the_gradient_through_an_in_place_form_in_a_graph_is_pytorchs(name):
    grads = []
    for lib in (sg, torch):
        leaf = lib.tensor(FORMS[name][0].astype(np.float64), requires_grad=True)
        hidden = leaf * 1.5
        call(lib, hidden, name)
        (hidden * lib.tensor(X.astype(np.float64))).sum().backward()
        grads.append(leaf.grad.numpy())
    np.testing.assert_allclose(*grads, rtol=1e-9, atol=1e-12)


def test_an_in_place_form_refuses_what_pytorch_refuses():
    leaf = sg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="clamp_: a leaf Variable that requires grad"):
        leaf.clamp_(0, 1)
    integers = sg.tensor([1, 4])
    with pytest.raises(RuntimeError, match="sqrt_: result type float32 can't be cast"):
        integers.sqrt_()
    assert integers.tolist() == [1, 4]  # unchanged
    row = sg.zeros(3)
    with pytest.raises(RuntimeError, match=r"masked_fill_: the result's shape \(2, 3\)"):
        row.masked_fill_(sg.tensor([[True, False, True], [False, True, False]]), 1.0)
    assert row.tolist() == [0.0, 0.0, 0.0]


def critic_trained(jit: bool) -> tuple[list, object]:
    """The WGAN critic's weights after six steps (RMSprop, then each weight clamped in place
    through ``.data``), and the step, jitted or not."""
    sg.manual_seed(0)
    critic = sg.nn.Sequential(sg.nn.Linear(4, 8), sg.nn.ReLU(), sg.nn.Linear(8, 1))
    opt = sg.optim.RMSprop(critic.parameters(), lr=5e-3)

    def step(real, fake):
        opt.zero_grad()
        (critic(fake).mean() - critic(real).mean()).backward()
        opt.step()
        for p in critic.parameters():
            p.data.clamp_(-0.05, 0.05)

    step = sg.jit(step) if jit else step
    rng = np.random.default_rng(1)
    for _ in range(6):
        step(*(sg.tensor(rng.standard_normal((5, 4)).astype(np.float32)) for _ in range(2)))
    return [p.detach().numpy().copy() for p in critic.parameters()], step


def test_weight_clipping_of_a_wgan_critic_jitted_equals_eager():
    eager, _ = critic_trained(jit=False)
    replayed, step = critic_trained(jit=True)
    for found, expected in zip(replayed, eager):
        np.testing.assert_array_equal(found, expected)
    assert max(np.abs(w).max() for w in eager) <= 0.05
    assert sum(map(len, step.recordings.values())) == 1  # recorded once, then replayed


SPECIAL = np.array([np.nan, np.inf, -np.inf, 1.5, -2.0, 0.0], dtype=np.float32)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize(
    "kwargs", [{}, {"nan": 2.0}, {"posinf": 7.0, "neginf": -7.0}], ids=["defaults", "nan", "infs"]
)
def test_nan_to_num_is_pytorchs_with_its_gradient(dtype, kwargs):
    ours = sg.tensor(SPECIAL, dtype=getattr(sg, dtype), requires_grad=dtype != "float16")
    theirs = torch.tensor(SPECIAL).to(getattr(torch, dtype)).requires_grad_(dtype != "float16")
    found, expected = sg.nan_to_num(ours, **kwargs), torch.nan_to_num(theirs, **kwargs)
    np.testing.assert_array_equal(found.detach().numpy(), expected.detach().numpy())
    if dtype != "float16":
        found.sum().backward()
        expected.sum().backward()
        np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
    assert sg.tensor([3, 4]).nan_to_num().tolist() == [3, 4]


def test_clamp_min_max_remainder_floor_divide_and_trace_are_pytorchs():
    a, b = X * 4, POSITIVE
    for name, args in [
        ("clamp_min", (0.1,)),
        ("clamp_max", (-0.2,)),
        ("remainder", (1.5,)),
        ("floor_divide", (0.7,)),
    ]:
        found = getattr(sg, name)(sg.tensor(a), *args)
        expected = getattr(torch, name)(torch.tensor(a), *args)
        np.testing.assert_allclose(found.numpy(), expected.numpy(), rtol=1e-6, err_msg=name)
    halves = sg.tensor(a)
    assert halves.floor_divide_(0.7) is halves  # not differentiable in PyTorch: values only
    np.testing.assert_array_equal(halves.numpy(), torch.tensor(a).floor_divide_(0.7).numpy())
    integers = RNG.integers(-9, 9, (4, 4))
    assert sg.tensor(integers).trace().item() == torch.tensor(integers).trace().item()
    assert sg.tensor(b[:3, :3]).trace().item() == pytest.approx(
        torch.tensor(b[:3, :3]).trace().item()
    )
    with pytest.raises(RuntimeError, match="trace"):
        sg.ones(3).trace()


@pytest.mark.parametrize(
    "values, bounds",
    [
        ([1, 2, 3], {"max": 1.5}),
        ([1, 2, 3], {"min": 1.5, "max": 2}),
        ([1, 2, 3], {"min": 1, "max": 2}),
        ([1.0, 2.0, 3.0], {"min": 1, "max": 2}),
        ([True, False], {"max": 0.5}),
    ],
)
def test_clamp_by_a_number_promotes_as_pytorchs(values, bounds):
    """An integer tensor clamped by a float gives floats (the default dtype), as PyTorch's;
    before, the bound was cut to an int silently."""
    found, expected = sg.tensor(values).clamp(**bounds), torch.tensor(values).clamp(**bounds)
    assert (found.tolist(), str(found.dtype).split(".")[-1]) == (
        expected.tolist(),
        str(expected.dtype).split(".")[-1],
    )


@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_allclose_and_equal_are_pytorchs(equal_nan):
    a = np.array([1.0, np.nan, 2.0, 1e-9, np.inf], dtype=np.float32)
    b = np.array([1.0 + 1e-6, np.nan, 2.1, 0.0, np.inf], dtype=np.float32)
    found = sg.isclose(sg.tensor(a), sg.tensor(b), equal_nan=equal_nan)
    expected = torch.isclose(torch.tensor(a), torch.tensor(b), equal_nan=equal_nan)
    assert found.tolist() == expected.tolist()
    for x, y in [(a, a), (a, b), (a[[0, 2]], b[[0, 2]])]:
        assert sg.allclose(sg.tensor(x), sg.tensor(y), equal_nan=equal_nan) == torch.allclose(
            torch.tensor(x), torch.tensor(y), equal_nan=equal_nan
        )
    for x, y in [([1, 2], [1, 2]), ([1, 2], [1.0, 2.0]), ([1, 2], [1, 3]), ([1, 2], [1, 2, 3])]:
        assert sg.equal(sg.tensor(x), sg.tensor(y)) == torch.equal(torch.tensor(x), torch.tensor(y))


AUGMENTED = {
    "&=": ("__iand__", [[True, True, False], [True, False, True]], [True, False, True]),
    "|=": ("__ior__", [[True, False, False], [False, False, True]], [False, True, False]),
    "^=": ("__ixor__", [[1, 2, 5], [7, 0, 3]], [3, 3, 1]),
    "<<=": ("__ilshift__", [[1, 2, 5], [7, 0, 3]], 2),
    ">>=": ("__irshift__", [[8, 2, 5], [7, 0, 3]], [1, 0, 2]),
    "%=": ("__imod__", [[3.25, -2.0, 5.0], [1.0, 2.5, -0.5]], 1.5),
    "//=": ("__ifloordiv__", [[-3, 4, 5], [7, -8, 9]], 2),
    "**=": ("__ipow__", [[1.5, -2.0, 0.5], [1.0, 3.0, -1.0]], 2),
}


@pytest.mark.parametrize("operator", AUGMENTED)
def test_an_augmented_assignment_writes_in_place_as_pytorchs(operator):
    """``row &= other`` on a row of a buffer writes into the buffer, as PyTorch's (Python
    alone would rebind ``row`` to a new tensor and leave the buffer as it was)."""
    dunder, values, other = AUGMENTED[operator]
    written = []
    for lib in (sg, torch):
        buffer = lib.tensor(values)
        row = buffer[0]
        returned = getattr(row, dunder)(lib.tensor(other) if isinstance(other, list) else other)
        assert returned is row
        written.append(buffer.tolist())
    assert written[0] == written[1] and written[0] != values


@pytest.mark.parametrize(
    "write",
    [
        lambda v: v.mul_(2.0),  # a binary in-place op
        lambda v: v.exp_(),  # a unary one
        lambda v: v.fill_(1.0),
        lambda v: v.__setitem__(0, 3.0),
        lambda v: v.copy_(v.detach() + 1),
    ],
)
def test_a_view_taken_under_no_grad_written_with_grad_on_is_refused_as_pytorchs(write):
    """The view is out of the graph, so its change would be missing from the base's gradient
    (scratchgrad gave that gradient silently). Both inside no_grad, or a detached tensor's
    view, is allowed, as in PyTorch."""
    for m in (torch, sg):
        y = m.ones(2, 3, dtype=m.float64, requires_grad=True) * 1
        with m.no_grad():
            view = y[1]
        with pytest.raises(RuntimeError, match="created in no_grad mode"):
            write(view)
        with m.no_grad():
            write(y[0])
        write(y.detach()[0])


def test_a_view_taken_before_its_base_entered_a_graph_may_be_written():
    for m in (torch, sg):
        buf = m.zeros(3, dtype=m.float64)
        early = buf[:1]
        x = m.ones(2, dtype=m.float64, requires_grad=True)
        buf[1:] = x * 2
        early[0] = 4.0
        (buf * m.arange(3.0, dtype=m.float64)).sum().backward()
        assert buf.tolist() == [4.0, 2.0, 2.0] and x.grad.tolist() == [2.0, 4.0]


@pytest.mark.parametrize("name", ["masked_fill", "masked_fill_"])
def test_masked_fill_refuses_a_value_tensor_with_dims_as_pytorchs(name):
    """Broadcast, it would fill each column with its own value (it did)."""
    for m in (torch, sg):
        x = m.zeros(3, 4)
        with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
            getattr(x, name)(m.ones(3, 4, dtype=m.bool), m.arange(4.0))
        assert x.tolist() == [[0.0] * 4] * 3
        getattr(x, name)(m.ones(3, 4, dtype=m.bool), m.tensor(2.0))  # a 0-d one is taken


def _flags_and_gradients(lib, name, start, dtype="float64"):
    """``a.<name>(b)`` where ``b`` requires grad and ``a`` is a plain tensor (``start`` "plain")
    or a result of the leaf ``w`` ("result"): the flags of ``a`` after it, and the gradients of
    ``b`` and ``w`` after a backward through ``a`` (or the error type it raised)."""
    b = lib.tensor([0.5, 1.2, 0.7], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([0.3, 1.2, 2.5], dtype=getattr(lib, dtype), requires_grad=True)
    a = w.detach().clone() if start == "plain" else w * 1
    assert getattr(a, name)(b * 1) is a
    flags = (a.requires_grad, a.is_leaf, a.grad_fn is None, a.tolist())
    try:
        (a.double() * lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)).sum().backward()
    except RuntimeError:
        return flags, "RuntimeError"
    grads = [None if t.grad is None else t.grad.tolist() for t in (b, w)]
    return flags, grads


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("start", ["plain", "result"])
@pytest.mark.parametrize("name", ["gt_", "lt_", "ge_", "le_", "eq_", "ne_", "greater_"])
def test_an_in_place_comparison_gives_both_operands_pytorchs_zero_gradient(name, start, dtype):
    """The other operand's gradient is zeros, as PyTorch's (it was None); with a plain
    ``a``, ``a`` joins the graph with a node, not as a new leaf that requires grad."""
    ours = _flags_and_gradients(sg, name, start, dtype)
    assert ours == _flags_and_gradients(torch, name, start, dtype)


@pytest.mark.parametrize("start", ["plain", "result"])
@pytest.mark.parametrize("name", ["logical_and_", "logical_or_", "logical_xor_"])
def test_a_logical_op_in_place_leaves_the_history_as_pytorchs(name, start):
    """PyTorch records nothing for a logical op: a plain tensor stays outside any graph, and a
    result keeps its node, its gradient flowing through the old one. Ours turned a plain
    tensor, changed with one that requires grad, into a leaf that requires grad, and so a
    result too, whose backward then stopped there (``w.grad`` None)."""
    assert _flags_and_gradients(sg, name, start) == _flags_and_gradients(torch, name, start)


def test_a_logical_op_in_place_on_a_view_leaves_the_bases_history_as_pytorchs():
    """Through a view, the base's gradient was cut where the view was written (zeros)."""

    def gradient(lib):
        w = lib.tensor([1.5, 0.0, 2.0], requires_grad=True)
        h = w * 2
        h[1:].logical_not_()
        (h * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        return h.tolist(), h._version, w.grad.tolist()

    assert gradient(sg) == gradient(torch)


@pytest.mark.parametrize("name", ["add_", "sub_", "mul_", "div_"])
def test_an_integer_tensor_refuses_a_float_that_requires_grad_as_pytorch(name):
    """It took the float silently (truncated), and became a leaf that requires grad."""
    for lib in (sg, torch):
        integers = lib.tensor([1, 2, 3])
        with pytest.raises(RuntimeError, match="cast"):
            getattr(integers, name)(lib.tensor([0.5, 1.5, 2.5], requires_grad=True))
        assert integers.tolist() == [1, 2, 3] and not integers.requires_grad


def test_an_integer_tensor_compared_in_place_with_a_float_that_requires_grad_stays_out():
    """NOTE: PyTorch's result requires grad (its backward then fails on an internal assert);
    ours stays outside any graph, as any integer tensor (ours was a leaf requiring grad)."""
    integers = sg.tensor([1, 2, 3])
    integers.gt_(sg.tensor([0.5, 2.5, 2.5], requires_grad=True))
    assert integers.tolist() == [1, 0, 1] and not integers.requires_grad


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_div_in_place_takes_a_rounding_mode_as_pytorchs(mode):
    results = []
    for lib in (sg, torch):
        floats, integers = lib.tensor([-7.0, 7.5, 3.0]), lib.tensor([-7, 7, 3])
        w = lib.tensor([-7.0, 7.5, 3.0], requires_grad=True)
        hidden = w * 1
        hidden.div_(lib.tensor(2.0), rounding_mode=mode)
        hidden.sum().backward()
        results.append(
            (
                floats.div_(2, rounding_mode=mode).tolist(),
                integers.div_(2, rounding_mode=mode).tolist(),
                hidden.tolist(),
                w.grad.tolist(),
            )
        )
    assert results[0] == results[1]


def test_requires_grad_in_place_on_a_graphs_result_is_pytorchs():
    """True is a no-op on a result (it raised); False raises, as PyTorch's."""
    for lib in (sg, torch):
        hidden = lib.ones(2, requires_grad=True) * 2
        grad_fn = hidden.grad_fn
        assert hidden.requires_grad_() is hidden and hidden.grad_fn is grad_fn
        with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
            hidden.requires_grad_(False)
