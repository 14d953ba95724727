"""Every loss against PyTorch over a grid of shapes and options (loss modules built the same
way in both frameworks): the value and the gradients of the input and, where the target is
floating point, of the target; float64 tight, float32 loose. Then gradcheck in float64 on the
composed losses (BCE with logits and Huber: the op table's rows), and the errors."""

import contextlib
import itertools
import warnings
import zlib

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_close, assert_raises_as_torch, check_against_torch, leaves, outcome

import scratchgrad as sg
import scratchgrad.nn.functional as F
from scratchgrad import nn

REDUCTIONS = ["mean", "sum", "none"]


def _check(name, kwargs, arrays, dtype):
    """Build the loss ``name`` with ``kwargs`` (arrays among them become tensors, without grad)
    in both frameworks and compare them on ``arrays`` (input, target): value and gradients."""
    options = {
        k: leaves(v, dtype, False) if isinstance(v, np.ndarray) else (v, v)
        for k, v in kwargs.items()
    }
    ours = getattr(nn, name)(**{k: v[0] for k, v in options.items()})
    theirs = getattr(torch.nn, name)(**{k: v[1] for k, v in options.items()})
    check_against_torch(ours, theirs, arrays, dtype, seed=5)


def _rng(*key):
    """A generator seeded by the test case: the same inputs in every run (hash() of a string
    changes from one process to the next)."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


# ---- regression losses ----------------------------------------------------------------------

REGRESSION = [
    (name, shape, reduction, kwargs)
    for name, extra in [
        ("MSELoss", [{}]),
        ("L1Loss", [{}]),
        ("HuberLoss", [{}, {"delta": 0.3}, {"delta": 2.5}]),
    ]
    for shape in [(5,), (3, 4), (2, 3, 4), ()]
    for reduction in REDUCTIONS
    for kwargs in extra
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("name", "shape", "reduction", "kwargs"), REGRESSION)
def test_regression_losses(name, shape, reduction, kwargs, dtype):
    rng = _rng(name, shape, reduction, dtype)
    x = np.asarray(rng.standard_normal(shape) * 2, dtype)
    y = np.asarray(rng.standard_normal(shape) * 2, dtype)
    if x.size > 1:
        y.flat[0] = x.flat[0]  # a zero difference: the kink of L1 and Huber
    _check(name, {"reduction": reduction, **kwargs}, [x, y], dtype)


def test_regression_losses_broadcast_the_target():
    x, y = np.random.default_rng(0).standard_normal((2, 3, 4))[:, :, :1], np.ones((3, 1))
    with pytest.warns(UserWarning):  # torch warns about broadcasting; we broadcast quietly
        _check("MSELoss", {}, [x, y], "float64")


# ---- classification losses ------------------------------------------------------------------

# (input shape, target shape): (N, C), (C,), (N, C, d1), (N, C, d1, d2)
CLASS_SHAPES = [((6, 5), (6,)), ((5,), ()), ((2, 5, 3), (2, 3)), ((2, 5, 3, 2), (2, 3, 2))]
CE_CASES = list(itertools.product(CLASS_SHAPES, [False, True], [-100, 1], [0.0, 0.25], REDUCTIONS))


def _class_targets(rng, shape, n_classes, ignore_index):
    target = np.asarray(rng.integers(0, n_classes, shape))
    if target.size > 1:
        target.flat[0] = ignore_index  # at least one ignored target
    return target


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    ("shapes", "weighted", "ignore_index", "label_smoothing", "reduction"), CE_CASES
)
def test_cross_entropy_with_class_indices(
    shapes, weighted, ignore_index, label_smoothing, reduction, dtype
):
    rng = _rng("ce", shapes, weighted, ignore_index, label_smoothing, reduction, dtype)
    (x_shape, t_shape), n_classes = shapes, shapes[0][0 if len(shapes[0]) == 1 else 1]
    x = (rng.standard_normal(x_shape) * 3).astype(dtype)
    target = _class_targets(rng, t_shape, n_classes, ignore_index)
    kwargs = {"ignore_index": ignore_index, "reduction": reduction}
    kwargs["label_smoothing"] = label_smoothing
    if weighted:
        kwargs["weight"] = rng.uniform(0.2, 2.0, n_classes).astype(dtype)
    _check("CrossEntropyLoss", kwargs, [x, target], dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    ("shape", "weighted", "label_smoothing", "reduction"),
    list(itertools.product([(4, 5), (5,), (2, 5, 3)], [False, True], [0.0, 0.3], REDUCTIONS)),
)
def test_cross_entropy_with_probabilities(shape, weighted, label_smoothing, reduction, dtype):
    rng = _rng("ce-prob", shape, weighted, label_smoothing, reduction, dtype)
    class_dim = 0 if len(shape) == 1 else 1
    x = (rng.standard_normal(shape) * 2).astype(dtype)
    target = rng.uniform(size=shape)
    target = (target / target.sum(class_dim, keepdims=True)).astype(dtype)
    kwargs = {"reduction": reduction, "label_smoothing": label_smoothing}
    if weighted:
        kwargs["weight"] = rng.uniform(0.2, 2.0, shape[class_dim]).astype(dtype)
    _check("CrossEntropyLoss", kwargs, [x, target], dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    ("shapes", "weighted", "ignore_index", "reduction"),
    list(itertools.product(CLASS_SHAPES, [False, True], [-100, 2], REDUCTIONS)),
)
def test_nll_loss(shapes, weighted, ignore_index, reduction, dtype):
    rng = _rng("nll", shapes, weighted, ignore_index, reduction, dtype)
    (x_shape, t_shape), n_classes = shapes, shapes[0][0 if len(shapes[0]) == 1 else 1]
    x = rng.standard_normal(x_shape).astype(dtype)
    target = _class_targets(rng, t_shape, n_classes, ignore_index)
    kwargs = {"ignore_index": ignore_index, "reduction": reduction}
    if weighted:
        kwargs["weight"] = rng.uniform(0.2, 2.0, n_classes).astype(dtype)
    _check("NLLLoss", kwargs, [x, target], dtype)


NAMED_SHAPES = [*CLASS_SHAPES, ((2, 5, 1, 2, 2), (2, 1, 2, 2)), ((0, 5), (0,)), ((3,), (1,))]
NAMED_CASES = [
    (name, shapes, *options)
    for name, shapes, *options in itertools.product(
        ["cross_entropy", "nll_loss"],
        NAMED_SHAPES,
        [False, True],
        [-100, 1],
        [0.0, 0.25],
        REDUCTIONS,
    )
    # (smoothing: cross_entropy's only, and an error for a target (1,), as PyTorch's)
    if not options[2] or (name == "cross_entropy" and shapes[1] != (1,))
]


@pytest.mark.parametrize(
    ("name", "shapes", "weighted", "ignore_index", "label_smoothing", "reduction"), NAMED_CASES
)
def test_class_index_losses_name_their_node_as_torch(
    name, shapes, weighted, ignore_index, label_smoothing, reduction
):
    """``grad_fn.name()`` of the loss is PyTorch's (NllLossBackward0, NllLoss2DBackward0,
    ViewBackward0, AddBackward0 when smoothed), not the last primitive's of the composition
    (before, WhereBackward0 or SumBackward0 unless the fused CrossEntropy ran)."""
    rng = _rng("named", shapes, weighted, ignore_index, label_smoothing, reduction)
    (x_shape, t_shape), n_classes = shapes, shapes[0][0 if len(shapes[0]) == 1 else 1]
    x, target = rng.standard_normal(x_shape), _class_targets(rng, t_shape, n_classes, 0)
    kwargs = {"ignore_index": ignore_index, "reduction": reduction}
    if label_smoothing:
        kwargs["label_smoothing"] = label_smoothing
    if weighted:
        kwargs["weight"] = rng.uniform(0.2, 2.0, n_classes)
    names = []
    for lib in (sg, torch):
        options = {k: lib.tensor(v) if k == "weight" else v for k, v in kwargs.items()}
        loss = getattr(lib.nn.functional, name)(
            lib.tensor(x, requires_grad=True), lib.tensor(target), **options
        )
        names.append(loss.grad_fn.name())
    assert names[0] == names[1]


@pytest.mark.parametrize(
    ("shape", "weighted", "label_smoothing", "reduction"),
    list(
        itertools.product(
            [(4, 3), (3,), (2, 3, 2), (0, 3), (4, 1), (1,)], [False, True], [0.0, 0.3], REDUCTIONS
        )
    ),
)
def test_probability_targets_name_their_node_and_sign_a_zero_as_torch(
    shape, weighted, label_smoothing, reduction
):
    """Probability targets: the loss is computed in PyTorch's order (the target mixed with the
    uniform one, the sum negated, the mean that over the count), so its node is PyTorch's
    (NegBackward0, DivBackward1; before, MeanBackward0, SumBackward0, AddBackward0) and one
    class's loss is -0.0 as PyTorch's (before, 0.0 once reduced)."""
    rng = _rng("named-prob", shape, weighted, label_smoothing, reduction)
    class_dim = 0 if len(shape) == 1 else 1
    x, target = rng.standard_normal(shape), rng.uniform(0.1, 1.0, shape)
    target /= target.sum(class_dim, keepdims=True)
    kwargs = {"reduction": reduction, "label_smoothing": label_smoothing}
    weight = rng.uniform(0.2, 2.0, shape[class_dim]) if weighted else None
    losses = [
        lib.nn.functional.cross_entropy(
            lib.tensor(x, requires_grad=True),
            lib.tensor(target),
            weight=None if weight is None else lib.tensor(weight),
            **kwargs,
        )
        for lib in (sg, torch)
    ]
    assert losses[0].grad_fn.name() == losses[1].grad_fn.name()
    ours, theirs = (np.asarray(loss.detach()) for loss in losses)
    assert_close(ours, theirs)
    if shape[class_dim] == 1:  # log p = 0: a loss of -0.0, not 0.0
        assert np.signbit(theirs).all() and np.array_equal(np.signbit(ours), np.signbit(theirs))


@pytest.mark.parametrize(
    ("target", "ignore_index"), [([0, 1], -100), ([0, -100], -100), ([0, 1], 2)]
)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
def test_a_loss_of_exactly_zero_has_torchs_sign(name, reduction, target, ignore_index):
    """Confident right answers (log p rounds to 0 in float32): the reduced loss is +0.0 as
    PyTorch's, which sums the -log p from 0 (before, the fused cross_entropy's was -0.0, and
    printed so); each target's own loss is -0.0 in both."""
    x = np.array([[30.0, 0.0, 0.0], [0.0, 40.0, 0.0]], np.float32)
    losses = []
    for m in (sg, torch):
        logits = m.tensor(x, requires_grad=True)
        input = logits if name == "cross_entropy" else logits.log_softmax(1)
        loss = getattr(m.nn.functional, name)(
            input, m.tensor(target), ignore_index=ignore_index, reduction=reduction
        )
        losses.append(np.asarray(loss.detach()))
    assert np.array_equal(losses[0], losses[1])
    assert np.array_equal(np.signbit(losses[0]), np.signbit(losses[1]))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    ("name", "target"), [("cross_entropy", ()), ("nll_loss", ()), ("nll_loss", (1,))]
)
def test_a_zero_loss_of_logits_c_is_plus_zero_as_torch(name, target, reduction, weighted):
    """Logits (C,): PyTorch's kernel sums the one target's loss from 0 whatever the reduction,
    so a loss of 0 is +0.0 unreduced too (it was -0.0, -log p, as a batch's target's is).
    One class for cross_entropy (log p = 0; its (1,) target would be probabilities), and the
    log-probabilities -0.0 and 0.0 for nll_loss."""
    x = np.zeros(1, np.float32) if name == "cross_entropy" else np.array([-0.0, 0.0], np.float32)
    bits = []
    for lib in (sg, torch):
        weight = lib.tensor(np.full(x.shape, 2.0, np.float32)) if weighted else None
        for index in range(len(x)):
            loss = getattr(lib.nn.functional, name)(
                lib.tensor(x, requires_grad=True),
                lib.full(target, index, dtype=lib.int64),
                weight=weight,
                reduction=reduction,
            )
            bits.append((np.asarray(loss.detach()).tobytes(), loss.grad_fn.name()))
    assert bits[: len(x)] == bits[len(x) :]
    assert not any(np.signbit(np.frombuffer(b, np.float32)).any() for b, _ in bits)


def test_cross_entropy_when_every_target_is_ignored_is_nan_as_torch():
    x = sg.randn(3, 4, requires_grad=True)
    target = sg.tensor([-100, -100, -100])
    assert np.isnan(F.cross_entropy(x, target).item())
    loss = F.cross_entropy(x, target, label_smoothing=0.1)
    assert np.isnan(loss.item())
    loss.backward()
    np.testing.assert_array_equal(x.grad.array, 0)  # torch's gradient too
    assert F.cross_entropy(x, target, reduction="sum").item() == 0


NO_COUNTED_TARGETS = [  # (input shape, targets, options): the mean's total weight is 0
    ((2, 3), [-100, -100], {}),  # (cross_entropy: the fused node)
    ((2, 3), [1, 1], {"ignore_index": 1}),
    ((3,), 1, {"ignore_index": 1}),
    ((2, 3, 2), [[1, 1], [1, 1]], {"ignore_index": 1}),
    ((2, 3), [0, 1], {"weight": [0.0, 0.0, 0.0]}),
    ((2, 3), [1, 1], {"ignore_index": 1, "label_smoothing": 0.25}),
    ((0, 3), [], {}),  # no targets: the quiet NaN PyTorch fills in (sign bit clear)
    ((2, 3, 0), [[], []], {}),
]


@pytest.mark.parametrize(("shape", "target", "options"), NO_COUNTED_TARGETS, ids=str)
@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
def test_the_mean_of_no_counted_targets_is_torchs_nan_to_the_bit(name, shape, target, options):
    """PyTorch's mean where every target is ignored (or weighs 0) is its 0 / 0, whose NaN has
    the sign bit set on x86 (this machine's 0 / 0, ``ZERO_BY_ZERO``); with no targets at all,
    its kernel fills in a quiet NaN, sign bit clear. Ours was that one in every case."""
    if name == "nll_loss":  # (which has no smoothing)
        options = {k: v for k, v in options.items() if k != "label_smoothing"}
    bits = []
    for lib in (sg, torch):
        kwargs = {k: lib.tensor(v) if k == "weight" else v for k, v in options.items()}
        index = lib.tensor(target, dtype=lib.int64)
        loss = getattr(lib.nn.functional, name)(lib.zeros(shape), index, **kwargs)
        bits.append(np.asarray(loss.detach()).tobytes())
    assert np.isnan(np.frombuffer(bits[1], np.float32)).all()
    assert bits[0] == bits[1]


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
def test_vmaps_mean_of_no_counted_targets_is_torchs_nan_to_the_bit(name):
    target = [[0, 1], [1, 1]]  # the second member's targets are all ignored
    losses = [
        lib.func.vmap(lambda x, t, lib=lib: getattr(lib.nn.functional, name)(x, t, ignore_index=1))(
            lib.zeros(2, 2, 3), lib.tensor(target)
        )
        for lib in (sg, torch)
    ]
    ours, theirs = (np.asarray(loss.detach()) for loss in losses)
    assert np.isnan(theirs[1]) and ours.tobytes() == theirs.tobytes()


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_an_ignored_target_counts_for_nothing_even_at_infinite_logits(name, reduction):
    # the loss of an ignored target was its weight (0) times its infinite or NaN entry: NaN
    x = np.array([[0.0, np.inf], [-1.0, -2.0], [np.nan, 0.5]])
    target = np.array([1, 0, 1])
    check_against_torch(
        lambda x, t: getattr(F, name)(x, t, ignore_index=1, reduction=reduction),
        lambda x, t: getattr(torch.nn.functional, name)(x, t, ignore_index=1, reduction=reduction),
        [x, target],
    )


# ---- logits (C,) with a class index in a vector of one ------------------------------------

LOGITS = np.array([0.5, -1.0, 2.0])
CLASS_WEIGHTS = np.array([1.0, 2.0, 3.0])


def _one_target(lib, name, x, options, target=(1,)):
    """``name``'s loss of logits ``x`` (C,) and the target ``target`` ((1,): [1])."""
    weight = options.get("weight")
    options = {**options, "weight": None if weight is None else lib.tensor(weight)}
    index = lib.ones(target, dtype=lib.int64)
    return getattr(lib.nn.functional, name)(x, index, **options)


ONE_TARGET_OPTIONS = [
    {"reduction": reduction, **extra}
    for reduction in REDUCTIONS
    for extra in [{}, {"weight": CLASS_WEIGHTS}, {"ignore_index": 1}]
]


@pytest.mark.parametrize("options", ONE_TARGET_OPTIONS, ids=str)
@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
def test_a_class_index_in_a_vector_of_one_is_the_0d_ones_forward_as_torch(name, options):
    """PyTorch's forward takes logits (C,) with a target of shape (1,) as the 0-d index (a 0-d
    loss whatever the reduction; NaN for the mean of an ignored one); its backward raises
    (it refused it here)."""
    outs = []
    for lib in (sg, torch):
        x = lib.tensor(LOGITS, requires_grad=True)
        out = _one_target(lib, name, x, options)
        assert out.shape == () and out.requires_grad
        with pytest.raises(
            RuntimeError, match=r"^size mismatch \(got input: \[3\], target: \[1\]\)$"
        ):
            out.backward()
        outs.append(out)
    assert_close(*outs)
    expected = _one_target(torch, name, torch.tensor(LOGITS), options, target=())
    assert_close(outs[0], expected)  # (the 0-d target's loss, whose gradient is PyTorch's)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_of_one_class_and_a_target_in_a_vector_of_one_differentiates_as_torch(reduction):
    """With one class, PyTorch's backward takes the (1,) target too."""
    check_against_torch(
        lambda x, t: F.nll_loss(
            x, t, weight=sg.tensor([2.0], dtype=sg.float64), reduction=reduction
        ),
        lambda x, t: torch.nn.functional.nll_loss(
            x, t, weight=torch.tensor([2.0], dtype=torch.float64), reduction=reduction
        ),
        [np.array([0.5]), np.array([0])],
    )


@pytest.mark.parametrize(
    ("name", "options", "target", "kind", "message"),
    [
        (
            "cross_entropy",
            {"label_smoothing": 0.1},
            (1,),
            RuntimeError,
            r"output with shape \[\] doesn't match the broadcast shape \[1\]",
        ),
        (
            "cross_entropy",
            {"label_smoothing": 0.1, "ignore_index": 1, "reduction": "none"},
            (1,),
            RuntimeError,
            "broadcast shape",
        ),
        (
            "nll_loss",
            {},
            (2,),
            ValueError,
            "For 1D input, 1D target must have size 1, but got target size: 2",
        ),
        ("cross_entropy", {}, (0,), ValueError, "but got target size: 0"),
    ],
)
def test_other_targets_of_logits_c_raise_as_torch(name, options, target, kind, message):
    assert_raises_as_torch(
        lambda lib: _one_target(lib, name, lib.tensor(LOGITS), options, target), kind, message
    )


def test_a_class_index_in_a_vector_of_one_under_vmap_raises_as_torch():
    """torch.func.vmap refuses it forward, with the error of the backward."""
    message = r"size mismatch \(got input: torch.Size\(\[3\]\), target: torch.Size\(\[1\]\)\)"
    for batched in (
        lambda lib: lib.func.vmap(lambda x: lib.nn.functional.cross_entropy(x, lib.tensor([1])))(
            lib.zeros(2, 3)
        ),
        lambda lib: lib.func.vmap(lambda t: lib.nn.functional.nll_loss(lib.zeros(3), t))(
            lib.tensor([[0], [1]])
        ),
    ):
        assert_raises_as_torch(batched, RuntimeError, message)


JITTED_CLASS_LOSSES = [
    ("class_weights", lambda x, t: F.cross_entropy(x, t, weight=sg.tensor([1.0, 2.0, 3.0]))),
    ("ignore_index", lambda x, t: F.cross_entropy(x, t, ignore_index=1)),
    ("nll_ignore_index", lambda x, t: F.nll_loss(x.log_softmax(1), t, ignore_index=1)),
]


@pytest.mark.parametrize(
    "loss", [c[1] for c in JITTED_CLASS_LOSSES], ids=[c[0] for c in JITTED_CLASS_LOSSES]
)
def test_jitted_class_losses_follow_each_batchs_targets(loss):
    """A jitted step's loss and gradient equal eager's, bit for bit, as the targets change the
    total weight and which targets are ignored (the first batch ignores none, the last all):
    the mean divided by the first batch's total, and a batch ignoring nothing took the fused
    path that ignores nothing."""
    logits = np.random.default_rng(6).standard_normal((4, 3)).astype(np.float32)

    def step(target):
        x = sg.tensor(logits, requires_grad=True)
        out = loss(x, target)
        out.backward()
        return out, x.grad

    jitted = sg.jit(step)
    for targets in ([0, 2, 0, 2], [0, 2, 0, 2], [0, 0, 0, 0], [0, 1, 1, 2], [1, 1, 1, 1]):
        expected, got = step(sg.tensor(targets)), jitted(sg.tensor(targets))
        for e, g in zip(expected, got):
            np.testing.assert_array_equal(g.detach().numpy(), e.detach().numpy())


def test_cross_entropy_ignoring_targets_differentiates_twice_as_torch():
    """The fused node with ignored targets (their rows of its gradient are 0, whatever the
    logits): its second derivative is PyTorch's, and passes gradgradcheck."""
    rng = np.random.default_rng(11)
    logits, grad = rng.standard_normal((2, 5, 4))
    target = [2, -100, 0, -100, 3]
    results = []
    for lib in (sg, torch):
        x = lib.tensor(logits, requires_grad=True)
        loss = F.cross_entropy if lib is sg else torch.nn.functional.cross_entropy
        (first,) = lib.autograd.grad(loss(x, lib.tensor(target)), x, create_graph=True)
        (second,) = lib.autograd.grad((first * lib.tensor(grad)).sum(), x)
        results.append((first.detach().numpy(), second.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)
    x = sg.tensor(logits, requires_grad=True)
    assert sg.autograd.gradgradcheck(lambda x: F.cross_entropy(x, sg.tensor(target)), (x,))


def test_jitted_cross_entropy_checks_each_batchs_targets():
    jitted, x = sg.jit(lambda x, t: F.cross_entropy(x, t)), sg.randn(3, 4)
    for _ in range(3):
        jitted(x, sg.tensor([0, 1, 2]))
    for bad in (5, -1):  # -1 picked the last class
        with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
            jitted(x, sg.tensor([0, bad, 2]))


def test_cross_entropy_is_stable_for_huge_logits():
    x = sg.tensor([[1000.0, -1000.0, 0.0]], dtype=sg.float64, requires_grad=True)
    loss = F.cross_entropy(x, sg.tensor([1]))
    loss.backward()
    assert loss.item() == pytest.approx(2000.0)
    np.testing.assert_allclose(x.grad.array, [[1.0, -1.0, 0.0]], atol=1e-12)


def test_cross_entropy_of_transposed_logits_has_torchs_gradient():
    # CLIP's loss on logits_per_image.t(): the fused gradient once lost its -1 at the targets
    logits = _rng("transposed").standard_normal((4, 5))
    target = np.array([0, 3, 1, 2, 3])
    grads = []
    for lib in (sg, torch):
        x = lib.tensor(logits, requires_grad=True)
        lib.nn.functional.cross_entropy(x.t(), lib.tensor(target)).backward()
        grads.append(np.asarray(x.grad.detach().numpy()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-14)


# ---- binary losses --------------------------------------------------------------------------

BINARY_CASES = list(itertools.product([(6,), (3, 4), (2, 3, 2)], [False, True], REDUCTIONS))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("shape", "weighted", "reduction"), BINARY_CASES)
def test_binary_cross_entropy(shape, weighted, reduction, dtype):
    rng = _rng("bce", shape, weighted, reduction, dtype)
    p = rng.uniform(0.02, 0.98, shape).astype(dtype)
    y = rng.uniform(0, 1, shape).astype(dtype)
    y.flat[0], y.flat[1] = 0.0, 1.0
    kwargs = {"reduction": reduction}
    if weighted:
        kwargs["weight"] = rng.uniform(0.5, 2.0, shape[-1:]).astype(dtype)
    _check("BCELoss", kwargs, [p, y], dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("pos_weighted", [False, True])
@pytest.mark.parametrize(("shape", "weighted", "reduction"), BINARY_CASES)
def test_binary_cross_entropy_with_logits(shape, weighted, reduction, pos_weighted, dtype):
    rng = _rng("bcel", shape, weighted, reduction, pos_weighted, dtype)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    x.flat[0], x.flat[1] = 0.0, 40.0  # the kink of a max/abs composition; a saturated logit
    y = rng.uniform(0, 1, shape).astype(dtype)
    kwargs = {"reduction": reduction}
    if weighted:
        kwargs["weight"] = rng.uniform(0.5, 2.0, shape[-1:]).astype(dtype)
    if pos_weighted:
        kwargs["pos_weight"] = rng.uniform(0.5, 3.0, shape[-1:]).astype(dtype)
    _check("BCEWithLogitsLoss", kwargs, [x, y], dtype)


def test_binary_cross_entropy_clamps_the_log_at_minus_100():
    p = sg.tensor([0.0, 1.0, 0.5], requires_grad=True)
    loss = F.binary_cross_entropy(p, sg.tensor([1.0, 0.0, 1.0]), reduction="none")
    expected = torch.nn.functional.binary_cross_entropy(
        torch.tensor([0.0, 1.0, 0.5]), torch.tensor([1.0, 0.0, 1.0]), reduction="none"
    )
    assert_close(loss.array, expected, "float32", "clamped loss")
    loss.sum().backward()
    assert np.isfinite(p.grad.array).all()


def test_binary_cross_entropy_gradients_at_probabilities_0_and_1_as_torch():
    # the gradient was the clamped logs' (0 where clamped, -t/x + (1-t)/(1-x) elsewhere), not
    # PyTorch's (x - t) / max(x (1 - x), 1e-12): 1 instead of 0 at x = t = 0, 0 instead of
    # -1e12 at x = 0 and t = 1; the target's was clamped at 100, PyTorch's is -logit(x)
    x = np.array([0.0, 0.0, 1.0, 1.0, 1e-13, 0.5, 1e-300, 0.3])
    target = np.array([0.0, 1.0, 0.0, 1.0, 0.3, 0.0, 0.5, 0.3])
    check_against_torch(
        lambda x, t: F.binary_cross_entropy(x, t, reduction="none"),
        lambda x, t: torch.nn.functional.binary_cross_entropy(x, t, reduction="none"),
        [x, target],
    )


@pytest.mark.parametrize("log_input", [True, False])
def test_poisson_nll_loss_full_target_gradient_at_zero_is_finite(log_input):
    # README, "What is different": PyTorch's is NaN there (its masked Stirling term's 0 * log 0)
    x = sg.tensor([0.5, 3.0], dtype=sg.float64)
    target = sg.tensor([0.0, 0.0], dtype=sg.float64, requires_grad=True)
    F.poisson_nll_loss(x, target, log_input=log_input, full=True, reduction="sum").backward()
    expected = [-0.5, -3.0] if log_input else [-np.log(0.5 + 1e-8), -np.log(3.0 + 1e-8)]
    np.testing.assert_allclose(target.grad.numpy(), expected, rtol=1e-12)


def test_binary_cross_entropy_with_logits_is_stable():
    x = sg.tensor([-800.0, 800.0, 0.0], dtype=sg.float64, requires_grad=True)
    y = sg.tensor([1.0, 0.0, 1.0], dtype=sg.float64)
    loss = F.binary_cross_entropy_with_logits(x, y, reduction="none")
    loss.sum().backward()
    np.testing.assert_allclose(loss.array, [800.0, 800.0, np.log(2)])
    np.testing.assert_allclose(x.grad.array, [-1.0, 1.0, -0.5])


# ---- Kullback-Leibler divergence -------------------------------------------------------------

KL_CASES = list(
    itertools.product([(5,), (3, 4), (2, 3, 4), ()], [*REDUCTIONS, "batchmean"], [False, True])
)


@contextlib.contextmanager
def _warns_as_torch(reduction):
    """Both libraries warn that "mean" is not the divergence (and nothing else warns)."""
    if reduction == "mean":
        with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
            yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("shape", "reduction", "log_target"), KL_CASES)
def test_kl_div(shape, reduction, log_target, dtype):
    """Value and the gradients of input and target (positive, where both libraries agree)."""
    rng = _rng("kl", shape, reduction, log_target, dtype)
    x = np.asarray(rng.standard_normal(shape), dtype)
    target = rng.uniform(0.05, 1.0, shape)
    y = np.asarray(np.log(target) if log_target else target, dtype)
    with _warns_as_torch(reduction):
        _check("KLDivLoss", {"reduction": reduction, "log_target": log_target}, [x, y], dtype)


def test_kl_div_where_the_target_is_zero_is_zero_as_torch():
    """xlogy's 0 * log(0) = 0: the value and the input's gradient are PyTorch's. The target's
    gradient there is -input here (its x log x part taken as 0), NaN in PyTorch (see F.kl_div's
    note)."""
    x, y = [[0.3, -1.0, 2.0]], [[0.0, 0.6, 0.4]]
    (ours, theirs), (ours_y, theirs_y) = leaves(np.array(x)), leaves(np.array(y))
    loss = F.kl_div(ours, ours_y, reduction="batchmean")
    expected = torch.nn.functional.kl_div(theirs, theirs_y, reduction="batchmean")
    assert_close(loss, expected, what="kl_div with a zero target")
    loss.backward()
    expected.backward()
    assert_close(ours.grad, theirs.grad, what="input gradient")
    assert_close(ours_y.grad.array[0, 1:], theirs_y.grad[0, 1:], what="target gradient")
    assert ours_y.grad.array[0, 0] == -0.3 and torch.isnan(theirs_y.grad[0, 0])


def test_kl_div_mean_gives_torchs_warning_at_the_callers_line():
    x, y = sg.tensor([[-1.0, -0.5]]), sg.tensor([[0.5, 0.5]])
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        F.kl_div(x, y)
        nn.KLDivLoss()(x, y)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        torch.nn.functional.kl_div(torch.tensor([[-1.0, -0.5]]), torch.tensor([[0.5, 0.5]]))
    assert [str(w.message) for w in ours] == [str(theirs[0].message)] * 2
    assert ours[0].filename == __file__ and ours[0].category is UserWarning


@pytest.mark.parametrize(
    ("size_average", "reduce"), [(None, False), (False, None), (True, True), (False, True)]
)
@pytest.mark.parametrize("reduction", ["batchmean", "sum"])
def test_kl_div_size_average_and_reduce_choose_the_reduction_as_torch(
    size_average, reduce, reduction
):
    """The deprecated arguments override ``reduction`` with PyTorch's warning, except that
    "batchmean" still divides by the batch size afterwards, as PyTorch's does."""
    x, y = np.log([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]]), np.array([[0.4, 0.6]] * 3)
    options = {"size_average": size_average, "reduce": reduce, "reduction": reduction}
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated") as w:
        check_against_torch(
            lambda a, b: F.kl_div(a, b, **options),
            lambda a, b: torch.nn.functional.kl_div(a, b, **options),
            [x, y],
        )
    assert len({str(m.message) for m in w}) == 1 and w[0].filename == __file__
    with pytest.warns(UserWarning, match="size_average"):
        ours = nn.KLDivLoss(size_average, reduce, reduction)
        theirs = torch.nn.KLDivLoss(size_average, reduce, reduction)
    assert ours.reduction == theirs.reduction


@settings(max_examples=30, deadline=None)
@given(
    rows=st.integers(1, 4),
    classes=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_batchmean_is_the_mean_divergence_of_the_rows(rows, classes, seed):
    """KL(p || q) = sum p log(p / q) per row, averaged over the rows, in either form of the
    target; never negative, and zero from a distribution to itself."""
    rng = np.random.default_rng(seed)
    p, q = rng.dirichlet(np.ones(classes), rows), rng.dirichlet(np.ones(classes), rows)
    expected = (p * np.log(p / q)).sum(1).mean()
    log_q = sg.tensor(np.log(q))
    by_probs = F.kl_div(log_q, sg.tensor(p), reduction="batchmean").item()
    by_logs = F.kl_div(log_q, sg.tensor(np.log(p)), reduction="batchmean", log_target=True)
    np.testing.assert_allclose([by_probs, by_logs.item()], expected, rtol=1e-10, atol=1e-12)
    assert by_probs >= -1e-12
    assert abs(F.kl_div(log_q, sg.tensor(q), reduction="batchmean").item()) < 1e-12


# ---- finite differences ---------------------------------------------------------------------


def _double(*shape, seed=0, low=None, high=None):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(shape) if low is None else rng.uniform(low, high, shape)
    return sg.tensor(data, dtype=sg.float64, requires_grad=True)


GRADCHECKS = {
    "cross_entropy_smoothing_weight_ignore": (
        lambda x: F.cross_entropy(
            x,
            sg.tensor([0, 2, -100, 3]),
            weight=sg.tensor([1.0, 2.0, 0.5, 1.5], dtype=sg.float64),
            label_smoothing=0.2,
        ),
        lambda: [_double(4, 4)],
    ),
    "cross_entropy_probabilities_3d": (
        lambda x, t: F.cross_entropy(x, t.softmax(1), label_smoothing=0.1),
        lambda: [_double(2, 3, 2), _double(2, 3, 2, seed=1)],
    ),
    "nll_loss_sum": (
        lambda x: F.nll_loss(x, sg.tensor([1, 0, 1]), reduction="sum"),
        lambda: [_double(3, 2)],
    ),
    "binary_cross_entropy": (
        lambda p, y: F.binary_cross_entropy(p, y),
        lambda: [_double(5, low=0.1, high=0.9), _double(5, seed=1, low=0, high=1)],
    ),
    "l1_sum": (
        lambda x, y: F.l1_loss(x, y, reduction="sum"),
        lambda: [_double(4), _double(4, seed=1)],
    ),
    "mse_none": (
        lambda x, y: F.mse_loss(x, y, reduction="none"),
        lambda: [_double(3), _double(3, seed=1)],
    ),
}


@pytest.mark.parametrize("name", list(GRADCHECKS))
def test_gradcheck(name):
    func, make_inputs = GRADCHECKS[name]
    assert sg.autograd.gradcheck(func, make_inputs())


# ---- errors ---------------------------------------------------------------------------------


def test_reduction_must_be_known():
    for loss in [F.mse_loss, F.l1_loss, F.huber_loss, F.binary_cross_entropy, F.kl_div]:
        with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
            loss(sg.rand(3), sg.rand(3), reduction="avg")
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        torch.nn.functional.kl_div(torch.rand(3), torch.rand(3), reduction="avg")
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        nn.KLDivLoss(reduction="avg")(sg.rand(3), sg.rand(3))
    with pytest.raises(ValueError, match="avg is not a valid value"):
        F.cross_entropy(sg.randn(2, 3), sg.tensor([0, 1]), reduction="avg")


def test_cross_entropy_errors():
    x = sg.randn(3, 4)
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        F.cross_entropy(x, sg.tensor([0, 5, 1]))
    with pytest.raises(IndexError, match="Target -3 is out of bounds"):
        F.nll_loss(x, sg.tensor([0, -3, 1]))
    with pytest.raises(
        ValueError, match=r"^Expected input batch_size \(3\) to match target batch_size \(2\)\.$"
    ):
        F.cross_entropy(x, sg.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="ignore_index is not supported"):
        F.cross_entropy(x, sg.rand(3, 4), ignore_index=1)
    with pytest.raises(RuntimeError, match="label_smoothing must be between"):
        F.cross_entropy(x, sg.tensor([0, 1, 2]), label_smoothing=1.2)


@pytest.mark.parametrize(
    "name, option",
    [("smooth_l1_loss", "beta"), ("huber_loss", "delta")],
    ids=["smooth_l1", "huber"],
)
def test_smooth_l1_and_huber_gradients_at_infinite_and_nan_differences(name, option):
    # the square's branch, unused there, gave 0 * inf = NaN at an infinite difference; at NaN
    # PyTorch's gradient is NaN
    x = np.array([1.0, -np.inf, np.inf, np.nan, 0.5, 2.0, 0.3])
    target = np.array([-np.inf, 0.5, 0.0, 0.0, np.nan, 0.0, 0.0])
    check_against_torch(
        lambda x, t: getattr(F, name)(x, t, reduction="none", **{option: 0.5}),
        lambda x, t: getattr(torch.nn.functional, name)(x, t, reduction="none", **{option: 0.5}),
        [x, target],
    )


@pytest.mark.parametrize("delta", [0.0, -1.0])
def test_huber_delta_must_be_positive_as_torch(delta):
    """PyTorch refuses delta <= 0 (smooth_l1_loss takes beta=0: its L1 limit)."""
    with pytest.raises(RuntimeError, match="non-positive values for delta"):
        torch.nn.functional.huber_loss(torch.rand(3), torch.rand(3), delta=delta)
    with pytest.raises(RuntimeError, match="non-positive values for delta"):
        F.huber_loss(sg.rand(3), sg.rand(3), delta=delta)


@pytest.mark.parametrize(
    "name, option",
    [
        ("binary_cross_entropy", "weight"),
        ("binary_cross_entropy_with_logits", "weight"),
        ("binary_cross_entropy_with_logits", "pos_weight"),
    ],
)
@pytest.mark.parametrize("dtype, weight_dtype", [("float32", "float64"), ("float64", "float32")])
def test_binary_cross_entropy_weights_take_the_input_dtype_as_torch(
    name, option, dtype, weight_dtype
):
    """PyTorch's kernels cast these weights to the loss's dtype: a float64 weight (from NumPy,
    say) leaves a float32 loss float32, where the other losses' weights promote."""
    x, target, weight = np.random.default_rng(10).uniform(0.1, 0.9, (3, 3, 4))
    theirs = getattr(torch.nn.functional, name)(
        torch.tensor(x, dtype=getattr(torch, dtype)),
        torch.tensor(target, dtype=getattr(torch, dtype)),
        **{option: torch.tensor(weight[0], dtype=getattr(torch, weight_dtype))},
    )
    ours = getattr(F, name)(
        sg.tensor(x, dtype=getattr(sg, dtype)),
        sg.tensor(target, dtype=getattr(sg, dtype)),
        **{option: sg.tensor(weight[0], dtype=getattr(sg, weight_dtype))},
    )
    assert str(ours.dtype).split(".")[-1] == dtype == str(theirs.dtype).split(".")[-1]
    assert_close(ours, theirs, dtype)


@pytest.mark.parametrize("pos_weighted", [False, True])
@pytest.mark.parametrize("dtype, target_dtype", [("float64", "float32"), ("float32", "float64")])
def test_binary_cross_entropy_with_logits_takes_the_targets_dtype_as_torch(
    dtype, target_dtype, pos_weighted
):
    """PyTorch's kernel computes the loss in place in ``1 - target``: a float32 target makes a
    float32 loss of float64 logits (and an integer target raises)."""
    x, target, pos_weight = np.random.default_rng(13).uniform(0.1, 0.9, (3, 3, 4))
    losses = []
    for lib in (sg, torch):
        kwargs = {"pos_weight": lib.tensor(pos_weight[0])} if pos_weighted else {}
        losses.append(
            lib.nn.functional.binary_cross_entropy_with_logits(
                lib.tensor(x, dtype=getattr(lib, dtype)),
                lib.tensor(target, dtype=getattr(lib, target_dtype)),
                **kwargs,
            )
        )
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            lib.nn.functional.binary_cross_entropy_with_logits(lib.rand(3), lib.tensor([0, 1, 1]))
    ours, theirs = losses
    assert str(ours.dtype).split(".")[-1] == target_dtype == str(theirs.dtype).split(".")[-1]
    assert_close(ours, theirs, "float32")


@pytest.mark.parametrize("dtype, target_dtype", [("float32", "float64"), ("float64", "int64")])
def test_soft_margin_loss_takes_the_input_dtype_as_torch(dtype, target_dtype):
    x = np.random.default_rng(11).standard_normal((3, 4))
    target = np.sign(np.random.default_rng(12).standard_normal((3, 4)))
    theirs = torch.nn.functional.soft_margin_loss(
        torch.tensor(x, dtype=getattr(torch, dtype)),
        torch.tensor(target, dtype=getattr(torch, target_dtype)),
    )
    ours = F.soft_margin_loss(
        sg.tensor(x, dtype=getattr(sg, dtype)), sg.tensor(target, dtype=getattr(sg, target_dtype))
    )
    assert str(ours.dtype).split(".")[-1] == dtype == str(theirs.dtype).split(".")[-1]
    assert_close(ours, theirs, dtype)


NON_DIFFERENTIABLE = {  # loss(lib, x, a tensor that requires grad) where torch refuses it
    "soft_margin_loss target": lambda lib, x, w: lib.nn.SoftMarginLoss()(x, w),
    "bce weight": lambda lib, x, w: lib.nn.functional.binary_cross_entropy(x.sigmoid(), x, w),
    "bce_with_logits weight": lambda lib, x, w: lib.nn.BCEWithLogitsLoss(w)(x, x.detach()),
    "bce_with_logits pos_weight": lambda lib, x, w: (
        lib.nn.functional.binary_cross_entropy_with_logits(x, x.detach(), pos_weight=w)
    ),
    "nll_loss weight": lambda lib, x, w: lib.nn.functional.nll_loss(x, lib.tensor([2, 0]), w[0]),
    "cross_entropy weight": lambda lib, x, w: lib.nn.functional.cross_entropy(
        x, lib.tensor([2, 0]), w[0], label_smoothing=0.1
    ),
}


@pytest.mark.parametrize("loss", NON_DIFFERENTIABLE.values(), ids=NON_DIFFERENTIABLE.keys())
def test_arguments_without_a_derivative_refuse_requires_grad_as_torch(loss):
    # (scratchgrad silently differentiated them; under no_grad both compute the loss)
    results = []
    for lib in (torch, sg):
        x, w = lib.full((2, 3), 0.5, requires_grad=True), lib.ones(2, 3, requires_grad=True)
        with pytest.raises(RuntimeError, match="is not differentiable with respect to argument"):
            loss(lib, x, w)
        with lib.no_grad():
            results.append(loss(lib, x, w).item())
    assert results[1] == pytest.approx(results[0])


def test_binary_losses_need_matching_shapes():
    with pytest.raises(ValueError, match="different to the input size"):
        F.binary_cross_entropy(sg.rand(3), sg.rand(3, 1))
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(sg.rand(3), sg.rand(3, 1))


def test_loss_modules_keep_weights_as_buffers():
    weight = sg.tensor([1.0, 2.0])
    loss = nn.CrossEntropyLoss(weight=weight)
    assert list(loss.state_dict()) == list(torch.nn.CrossEntropyLoss(torch.ones(2)).state_dict())
    assert loss.to(sg.float64).weight.dtype == sg.float64
    pos = nn.BCEWithLogitsLoss(pos_weight=sg.ones(3))
    assert list(pos.state_dict()) == ["pos_weight"]
    assert repr(loss) == "CrossEntropyLoss()"


# ---- class-index targets: PyTorch's dtypes, shapes and errors --------------------------------


def _both(name, x, target, **kwargs):
    """The loss ``name`` of both libraries on the same arrays: (ours, theirs), or the two
    exceptions' types where both raise."""
    results = []
    for lib in (sg, torch):
        try:
            results.append(
                getattr(lib.nn.functional, name)(lib.tensor(x), lib.tensor(target), **kwargs)
            )
        except Exception as error:  # noqa: BLE001 (the type is what is compared)
            results.append(type(error))
    return results


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_class_indices_of_uint8_are_read_as_torch(name, reduction):
    x = np.random.default_rng(3).standard_normal((4, 3))
    target = np.array([0, 2, 1, 2], np.uint8)
    ours, theirs = _both(name, x, target, reduction=reduction, weight=None, ignore_index=1)
    assert_close(ours, theirs)


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("dtype", ["int32", "int16", "int8", "bool"])
def test_class_indices_must_be_long_or_byte_as_torch(name, dtype):
    target = np.array([0, 1, 1, 0]).astype(dtype)
    assert _both(name, np.zeros((4, 3)), target) == [RuntimeError, RuntimeError]
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte"):
        getattr(F, name)(sg.zeros(4, 3), sg.tensor(target))


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize(
    "input_shape, target, error",
    [
        ((4, 3), np.zeros(3, np.int64), ValueError),  # batch sizes differ
        ((4, 3), np.zeros((4, 2), np.int64), RuntimeError),  # multi-target
        ((2, 3, 4), np.zeros((2, 5), np.int64), RuntimeError),  # spatial sizes differ
        ((4, 3), np.zeros(4), RuntimeError),  # float targets not of the input's shape
        ((), np.zeros((), np.int64), (ValueError, RuntimeError)),  # a 0-d input
    ],
)
def test_class_target_shape_errors_have_torch_types(name, input_shape, target, error):
    ours, theirs = _both(name, np.zeros(input_shape), target)
    assert issubclass(ours, error) and issubclass(theirs, error) and ours in (theirs, ValueError)


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
def test_class_losses_refuse_integer_input_as_torch(name):
    ours, theirs = _both(name, np.array([[1, 2, 3]]), np.array([0]))
    assert ours is theirs is NotImplementedError


def test_nll_loss_class_weights_must_match_the_classes_as_torch():
    x, target = sg.zeros(4, 3), sg.tensor([0, 1, 2, 1])
    with pytest.raises(RuntimeError, match=r"weight should hold one entry for each of the 3"):
        F.nll_loss(x, target, weight=sg.ones(2))
    with pytest.raises(RuntimeError):
        torch.nn.functional.nll_loss(torch.zeros(4, 3), torch.tensor([0, 1, 2, 1]), torch.ones(2))


@pytest.mark.parametrize("target", [np.array([0, 1, 2, 1]), np.eye(3)[[0, 1, 2, 1]] * 0.9])
def test_negative_label_smoothing_is_none_as_torch(target):
    x = np.random.default_rng(4).standard_normal((4, 3))
    ours, theirs = _both("cross_entropy", x, target, label_smoothing=-0.25)
    assert_close(ours, theirs)
    assert_close(ours, F.cross_entropy(sg.tensor(x), sg.tensor(target)))


@pytest.mark.parametrize("target_dtype", ["float64", "int64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_huber_loss_takes_the_input_dtype_as_torch(target_dtype, reduction):
    x = np.random.default_rng(13).standard_normal((3, 4)).astype(np.float32)
    target = np.random.default_rng(14).standard_normal((3, 4)).astype(target_dtype)
    ours, theirs = _both("huber_loss", x, target, reduction=reduction, delta=0.5)
    assert str(ours.dtype).split(".")[-1] == "float32" == str(theirs.dtype).split(".")[-1]
    assert_close(ours, theirs, "float32")


@pytest.mark.parametrize("name", ["mse_loss", "huber_loss", "smooth_l1_loss"])
def test_regression_losses_of_two_integer_tensors_are_refused_as_torch(name):
    ours, theirs = _both(name, np.arange(3), np.zeros(3, np.int64), reduction="none")
    assert ours is theirs is NotImplementedError
    ours, theirs = _both("huber_loss", np.arange(3), np.zeros(3, np.float32))
    assert ours is theirs is RuntimeError


def test_multi_margin_loss_wants_int64_targets_as_torch():
    ours, theirs = _both("multi_margin_loss", np.zeros((2, 3)), np.array([0, 2], np.int32))
    assert ours is theirs is RuntimeError


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses_take_pytorchs_weight(name, reduction, dtype):
    """PyTorch 2.13's ``weight``: mse and l1's mean divides by the weights' sum, huber's by
    the number of entries; the weight's gradient too."""
    rng = _rng(name, reduction, dtype)
    arrays = [rng.standard_normal((4, 3)).astype(dtype) for _ in range(2)]
    arrays.append(rng.uniform(size=(4, 3)).astype(dtype))
    check_against_torch(
        lambda x, y, w: getattr(F, name)(x, y, reduction=reduction, weight=w),
        lambda x, y, w: getattr(torch.nn.functional, name)(x, y, reduction=reduction, weight=w),
        arrays,
        dtype,
    )


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
def test_regression_loss_weight_must_have_the_input_shape(name):
    ours, theirs = _both(name, np.zeros((4, 3)), np.zeros((4, 3)), weight=None)
    assert_close(ours, theirs)
    for lib in (sg, torch):
        with pytest.raises(ValueError, match="Weights and input must have the same size"):
            getattr(lib.nn.functional, name)(lib.zeros(4, 3), lib.zeros(4, 3), weight=lib.ones(3))


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize(
    "shape, target",
    [
        ((4, 3), ()),
        ((4, 3), (2,)),
        ((4, 3), (4, 2)),
        ((3,), (2,)),
        ((4, 3, 5), (4,)),
        ((4, 3, 5), (3, 5)),
        ((4, 3, 5), (4, 5, 1)),
        ((4, 3, 5, 2), (4, 5)),
        ((4, 3, 5, 2), (4, 5, 3)),
        ((4, 3, 5, 2, 2), (4, 5, 2, 3)),
    ],
)
def test_class_targets_of_the_wrong_shape_raise_pytorchs_error(name, shape, target):
    """The error type and words of the kernel PyTorch takes for the input's dims (nll_loss,
    nll_loss2d or the nd reshape); ours said 'Expected target size (4, 5), got (3, 5)' for
    all, with a Python tuple's brackets."""
    ours = outcome(getattr(F, name), sg.randn(*shape), sg.zeros(target, dtype=sg.long))
    theirs = outcome(
        getattr(torch.nn.functional, name),
        torch.randn(*shape),
        torch.zeros(target, dtype=torch.long),
    )
    assert (type(ours), str(ours)) == (type(theirs), str(theirs))
