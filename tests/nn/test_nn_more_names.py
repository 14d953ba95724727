"""The nn names real PyTorch programs use that came last: the in-place functional activations
(``F.relu_`` ...), the ``*_with_indices`` pools, the deprecated ``upsample*`` functions and
``Upsampling*2d`` modules, the multilabel margin and triplet-with-distance losses and their
modules, and ``nn.Buffer``. Each against PyTorch (values, gradients, errors, warnings, reprs)."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from oracle import (
    assert_close,
    assert_doc_examples_run,
    assert_raises_as_torch,
    check_against_torch,
)

import scratchgrad as sg
import scratchgrad.nn.functional as F
from scratchgrad import nn

DTYPES = ["float64", "float32"]
RNG = np.random.default_rng(0)


def _normal(*shape):
    return RNG.standard_normal(shape)


# ---- in-place activations -------------------------------------------------------------------

# (name, extra arguments)
IN_PLACE = [
    ("relu_", ()),
    ("elu_", (0.7,)),
    ("leaky_relu_", (0.2,)),
    ("hardtanh_", (-0.5, 0.8)),
    ("threshold_", (0.1, -2.0)),
    ("celu_", (1.5,)),
    ("selu_", ()),
    ("rrelu_", (0.1, 0.4)),  # not training: the fixed mean slope
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, args", IN_PLACE)
def test_in_place_activation_matches_torch_in_a_graph(name, args, dtype):
    def call(library):
        def run(x):
            y = x * 1.0  # not a leaf: in place is allowed in the graph
            out = getattr(library, name)(y, *args)
            assert out is y
            return out * 2

        return run

    check_against_torch(call(F), call(TF), [_normal(3, 4)], dtype)


@pytest.mark.parametrize("name, args", IN_PLACE)
def test_in_place_activation_writes_into_its_input(name, args):
    array = _normal(2, 5)
    ours, theirs = sg.tensor(array), torch.tensor(array)
    assert getattr(F, name)(ours, *args) is ours
    getattr(TF, name)(theirs, *args)
    assert_close(ours, theirs)


@pytest.mark.parametrize("name, args", IN_PLACE)
def test_in_place_activation_refuses_a_leaf_that_requires_grad(name, args):
    assert_raises_as_torch(
        lambda m: getattr(m.nn.functional, name)(m.ones(3, requires_grad=True), *args),
        RuntimeError,
        "leaf Variable that requires grad",
    )


def test_rrelu_in_training_draws_slopes_between_the_bounds():
    x = -sg.rand(1000) - 0.5
    kept = x.clone()
    out = F.rrelu_(x, 0.1, 0.4, training=True)
    assert out is x
    slopes = (out / kept).numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.4 and slopes.std() > 0.05


def test_hardtanh_in_place_takes_crossed_bounds_as_torch():
    # PyTorch checks min_val <= max_val in hardtanh, not in hardtanh_ (every entry max_val)
    check_against_torch(
        lambda x: F.hardtanh_(x * 1.0, 1.0, -1.0),
        lambda x: TF.hardtanh_(x * 1.0, 1.0, -1.0),
        [_normal(2, 3)],
    )
    assert_raises_as_torch(
        lambda m: m.nn.functional.hardtanh(m.ones(2), 1.0, -1.0), ValueError, "min_val"
    )


# ---- pools returning (values, indices) ------------------------------------------------------

WITH_INDICES = [
    ("max_pool1d_with_indices", (2, 8), (3,), {"stride": 2, "padding": 1}),
    ("max_pool2d_with_indices", (2, 5, 6), (2,), {"ceil_mode": True}),
    ("max_pool3d_with_indices", (1, 2, 4, 4, 3), (2,), {"dilation": 1}),
    ("adaptive_max_pool1d_with_indices", (2, 3, 7), (3,), {}),
    ("adaptive_max_pool2d_with_indices", (1, 2, 5, 4), ((3, 2),), {}),
    ("adaptive_max_pool3d_with_indices", (2, 3, 5, 4), (2,), {}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, shape, args, kwargs", WITH_INDICES)
def test_pool_with_indices_matches_torch(name, shape, args, kwargs, dtype):
    array = RNG.permutation(int(np.prod(shape))).reshape(shape) * 0.1  # no ties
    # return_indices=False, as PyTorch's, still returns both
    ours, theirs = (
        lambda x, m=m: getattr(m, name)(x, *args, return_indices=False, **kwargs) for m in (F, TF)
    )
    (values, indices), (their_values, their_indices) = check_against_torch(
        lambda x: ours(x), lambda x: theirs(x), [array], dtype
    )
    assert_close(indices, their_indices)
    assert str(indices.dtype).split(".")[-1] == "int64"


# ---- the deprecated upsampling functions and modules ----------------------------------------

UPSAMPLE = [
    ("upsample", {"scale_factor": 2, "mode": "bilinear", "align_corners": False}),
    ("upsample", {"size": (3, 5), "mode": "bicubic", "align_corners": True}),
    ("upsample_nearest", {"scale_factor": 3}),
    ("upsample_nearest", {"size": (5, 2)}),
    ("upsample_bilinear", {"size": (4, 7)}),
    ("upsample_bilinear", {"scale_factor": (2, 1.5)}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, kwargs", UPSAMPLE)
def test_upsample_functions_match_torch(name, kwargs, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_against_torch(
            lambda x: getattr(F, name)(x, **kwargs),
            lambda x: getattr(TF, name)(x, **kwargs),
            [_normal(2, 3, 3, 4)],
            dtype,
        )


@pytest.mark.parametrize("name", ["upsample", "upsample_nearest", "upsample_bilinear"])
def test_upsample_functions_warn_as_torch_at_the_callers_line(name):
    messages = []
    for library, x in ((TF, torch.ones(1, 1, 2, 2)), (F, sg.ones(1, 1, 2, 2))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            getattr(library, name)(x, 4)
        (warning,) = caught
        assert warning.category is UserWarning and warning.filename == __file__
        messages.append(str(warning.message))
    assert messages[0] == messages[1]


def test_upsample_bilinear_aligns_corners():
    x = sg.tensor([[[[1.0, 2.0]]]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = F.upsample_bilinear(x, size=(1, 3))
    assert out.tolist() == [[[[1.0, 1.5, 2.0]]]]


MODULES = [
    ("UpsamplingNearest2d", {"scale_factor": 2}),
    ("UpsamplingNearest2d", {"size": (3, 5)}),
    ("UpsamplingBilinear2d", {"scale_factor": 2}),
    ("UpsamplingBilinear2d", {"size": 5}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, kwargs", MODULES)
def test_upsampling_modules_match_torch(name, kwargs, dtype):
    ours, theirs = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    assert repr(ours) == repr(theirs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_against_torch(ours, theirs, [_normal(2, 3, 3, 4)], dtype)
    assert not [w for w in caught if "deprecated" in str(w.message)]  # neither warns


# ---- multilabel_margin_loss -----------------------------------------------------------------


def _multilabels(n, c, rng=RNG):
    """(n, c) targets: each row a few distinct classes, then -1, then anything in [-1, c)."""
    target = rng.integers(-1, c, (n, c))
    for row in target:
        listed = rng.integers(0, c + 1)
        row[:listed] = rng.permutation(c)[:listed]
        if listed < c:
            row[listed] = -1
    return target


MULTILABEL_CASES = [
    ("matrix", _normal(5, 4), _multilabels(5, 4)),
    ("row", _normal(6), _multilabels(1, 6)[0]),
    ("scalar listed", np.array(0.3), np.array(0)),
    ("scalar unlisted", np.array(0.3), np.array(-1)),
    ("twice listed", _normal(2, 3), np.array([[1, 1, -1], [0, 2, 2]])),
    ("all listed", _normal(2, 3), np.array([[2, 0, 1], [1, -1, 0]])),
    ("kinks", np.array([[0.0, 1.0, -1.0, 0.5]]), np.array([[0, 3, -1, 2]])),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("what, x, target", MULTILABEL_CASES, ids=[c[0] for c in MULTILABEL_CASES])
def test_multilabel_margin_loss_matches_torch(what, x, target, reduction, dtype):
    check_against_torch(
        lambda x, t: F.multilabel_margin_loss(x, t, reduction=reduction),
        lambda x, t: TF.multilabel_margin_loss(x, t, reduction=reduction),
        [x, target],
        dtype,
        what=what,
    )


def test_multilabel_margin_loss_module_matches_torch():
    ours, theirs = nn.MultiLabelMarginLoss(reduction="sum"), torch.nn.MultiLabelMarginLoss()
    assert repr(ours) == repr(theirs) == "MultiLabelMarginLoss()"
    theirs.reduction = "sum"
    check_against_torch(ours, theirs, [_normal(4, 5), _multilabels(4, 5)])


def test_multilabel_margin_loss_legacy_reduction_warns_as_torch():
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        loss = nn.MultiLabelMarginLoss(size_average=False)
    assert loss.reduction == "sum"


def test_multilabel_margin_loss_gradcheck_and_gradgradcheck():
    target = sg.tensor(_multilabels(3, 4))
    x = sg.tensor(_normal(3, 4), requires_grad=True)
    call = lambda x: F.multilabel_margin_loss(x * 3, target, reduction="none")  # noqa: E731
    assert sg.autograd.gradcheck(call, (x,))
    assert sg.autograd.gradgradcheck(call, (x,))


def test_multilabel_margin_loss_of_an_empty_batch():
    x, target = sg.zeros(0, 3, requires_grad=True), sg.zeros(0, 3, dtype=sg.int64)
    assert F.multilabel_margin_loss(x, target, reduction="none").shape == (0,)
    assert F.multilabel_margin_loss(x, target, reduction="sum").item() == 0
    assert np.isnan(F.multilabel_margin_loss(x, target).item())  # PyTorch's: uninitialised


@pytest.mark.parametrize(
    "x, target, kind, message",
    [
        ((2, 3), [[0, 5, -1], [0, 1, 2]], RuntimeError, "'target' is out of range"),
        ((2, 3), [[0, -2, -1], [0, 1, 2]], RuntimeError, "'target' is out of range"),
        ((2, 3), [[0, -1, 7], [0, 1, 2]], RuntimeError, "'target' is out of range"),
        ((2, 3), [[0, -1, -1]], RuntimeError, r"inconsistent target size: \[1, 3\]"),
        ((3,), [[0, -1, -1]], RuntimeError, r"inconsistent target size: \[1, 3\] for input"),
        ((2, 0), np.zeros((2, 0), np.int64), RuntimeError, r"non-empty vector .* \[2, 0\]"),
        ((2, 3, 1), np.zeros((2, 3, 1), np.int64), RuntimeError, "non-empty vector or matrix"),
        ((2, 3), np.zeros((2, 3)), RuntimeError, "expected scalar type Long but found"),
        ((2, 3), np.zeros((2, 3), np.int32), RuntimeError, "expected scalar type Long"),
    ],
)
def test_multilabel_margin_loss_errors_as_torch(x, target, kind, message):
    target = np.asarray(target)
    assert_raises_as_torch(
        lambda m: m.nn.functional.multilabel_margin_loss(m.zeros(x), m.tensor(target)),
        kind,
        message,
    )


def test_multilabel_margin_loss_runs_in_float32_under_autocast():
    x = sg.tensor(_normal(3, 4), dtype=sg.bfloat16)
    with sg.autocast("cpu", dtype=sg.bfloat16):
        loss = F.multilabel_margin_loss(x, sg.tensor(_multilabels(3, 4)))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        theirs = TF.multilabel_margin_loss(
            torch.tensor(x.float().numpy()).bfloat16(), torch.tensor(_multilabels(3, 4))
        )
    assert str(loss.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1] == "float32"


# ---- triplet_margin_with_distance_loss ------------------------------------------------------


def _cosine_distance(library):
    return lambda x, y: 1.0 - library.nn.functional.cosine_similarity(x, y, dim=-1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("distance", [None, "cosine", "module"])
@pytest.mark.parametrize("shape", [(4, 3), (5,)])
def test_triplet_margin_with_distance_loss_matches_torch(distance, swap, reduction, dtype, shape):
    def call(library):
        if distance == "cosine":
            function = _cosine_distance(library)
        elif distance == "module":
            function = library.nn.PairwiseDistance(p=1.0)
        else:
            function = None
        return lambda a, p, n: library.nn.functional.triplet_margin_with_distance_loss(
            a, p, n, distance_function=function, margin=0.7, swap=swap, reduction=reduction
        )

    arrays = [_normal(*shape) for _ in range(3)]
    check_against_torch(call(sg), call(torch), arrays, dtype)


def test_triplet_margin_with_distance_loss_module_matches_torch():
    for kwargs in ({}, {"distance_function": _cosine_distance, "margin": 2.0, "swap": True}):
        built = {}
        for library in (sg, torch):
            given = dict(kwargs)
            if "distance_function" in given:
                given["distance_function"] = given["distance_function"](library)
            built[library] = library.nn.TripletMarginWithDistanceLoss(**given)
        ours, theirs = built[sg], built[torch]
        if not kwargs:
            assert repr(ours) == repr(theirs)
            assert isinstance(ours.distance_function, nn.PairwiseDistance)
            assert list(ours.state_dict()) == list(theirs.state_dict()) == []
        check_against_torch(ours, theirs, [_normal(4, 3) for _ in range(3)])


def test_triplet_margin_with_distance_loss_gradcheck_and_gradgradcheck():
    inputs = tuple(sg.tensor(_normal(3, 4), requires_grad=True) for _ in range(3))
    call = lambda a, p, n: F.triplet_margin_with_distance_loss(  # noqa: E731
        a, p, n, margin=2.0, swap=True, reduction="none"
    )
    assert sg.autograd.gradcheck(call, inputs)
    assert sg.autograd.gradgradcheck(call, inputs)


@pytest.mark.parametrize(
    "call, kind, message",
    [
        (
            lambda m: m.nn.functional.triplet_margin_with_distance_loss(
                m.ones(2, 3), m.ones(2, 3), m.ones(2, 3), margin=0.0
            ),
            ValueError,
            "margin must be greater than 0, got 0.0",
        ),
        (
            lambda m: m.nn.functional.triplet_margin_with_distance_loss(
                m.ones(2, 3), m.ones(2, 3), m.ones(2, 3), reduction="avg"
            ),
            ValueError,
            "avg is not a valid value for reduction",
        ),
        (
            lambda m: m.nn.functional.triplet_margin_with_distance_loss(
                m.ones(2, 3), m.ones(3), m.ones(2, 3)
            ),
            RuntimeError,
            "anchor 2D, positive 1D, and negative 2D inputs",
        ),
        (
            lambda m: m.nn.TripletMarginWithDistanceLoss(margin=-1),
            ValueError,
            "TripletMarginWithDistanceLoss: expected margin to be greater than 0, got -1",
        ),
        (
            lambda m: m.nn.TripletMarginWithDistanceLoss(None),
            TypeError,
            "positional argument",
        ),
    ],
)
def test_triplet_margin_with_distance_loss_errors_as_torch(call, kind, message):
    assert_raises_as_torch(call, kind, message)


# ---- names, docs ----------------------------------------------------------------------------

NEW_FUNCTIONS = [name for name, _ in IN_PLACE] + [name for name, *_ in WITH_INDICES] + [
    "upsample", "upsample_nearest", "upsample_bilinear", "multilabel_margin_loss",
    "triplet_margin_with_distance_loss",
]  # fmt: skip
NEW_MODULES = [
    "UpsamplingNearest2d", "UpsamplingBilinear2d", "MultiLabelMarginLoss",
    "TripletMarginWithDistanceLoss",
]  # fmt: skip


def test_every_new_name_is_exported_as_in_torch():
    for name in NEW_FUNCTIONS:
        assert hasattr(F, name) and hasattr(TF, name), name
    for name in NEW_MODULES:
        assert name in nn.__all__ and hasattr(torch.nn, name), name


@pytest.mark.parametrize(
    "function",
    [
        F.relu_,
        F.upsample,
        F.multilabel_margin_loss,
        F.triplet_margin_with_distance_loss,
    ],
)
def test_doc_examples_run(function):
    assert_doc_examples_run(function, vars(F))


@pytest.mark.parametrize("name", NEW_MODULES)
def test_module_doc_examples_run(name):
    assert_doc_examples_run(getattr(nn, name))


# ---- nn.Buffer --------------------------------------------------------------------------------


def _with_buffers(library):
    nn_ = library.nn

    class Model(nn_.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn_.Linear(2, 2)
            self.scale = nn_.Buffer(library.ones(2))
            self.cache = nn_.Buffer(library.zeros(3), persistent=False)

    return Model()


def test_buffer_assigned_as_an_attribute_is_registered_as_torch():
    ours, theirs = _with_buffers(sg), _with_buffers(torch)
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert "cache" not in ours.state_dict()
    assert isinstance(ours.scale, nn.Buffer) and isinstance(ours.scale, sg.Tensor)
    ours.cache, theirs.cache = nn.Buffer(sg.ones(1)), torch.nn.Buffer(torch.ones(1))
    assert list(ours.state_dict()) == list(theirs.state_dict())  # now persistent
    assert str(ours.double().scale.dtype).split(".")[-1] == "float64"


def test_buffer_shares_memory_and_requires_grad_but_not_history():
    x = sg.ones(2, requires_grad=True)
    buffer = nn.Buffer(x * 2)
    their = torch.nn.Buffer(torch.ones(2, requires_grad=True) * 2)
    assert buffer.requires_grad == their.requires_grad
    assert buffer.is_leaf == their.is_leaf and buffer.grad_fn is None
    plain = sg.zeros(2)
    nn.Buffer(plain).fill_(3.0)
    assert plain.tolist() == [3.0, 3.0]
    assert repr(nn.Buffer(sg.ones(2))) == repr(sg.ones(2))
    assert nn.Buffer().shape == tuple(torch.nn.Buffer().shape)


def test_buffer_assignment_errors_as_torch():
    def over_a_parameter(library):
        model = _with_buffers(library)
        model.linear.weight = library.nn.Buffer(library.ones(2, 2))

    assert_raises_as_torch(over_a_parameter, TypeError, "cannot assign 'Buffer' as parameter")

    def over_an_attribute(library):
        model = _with_buffers(library)
        model.x = 3
        model.x = library.nn.Buffer(library.ones(2))

    assert_raises_as_torch(over_an_attribute, KeyError, "attribute 'x' already exists")
    with pytest.raises(TypeError, match="Buffer: data must be a Tensor, got list"):
        nn.Buffer([1.0])  # PyTorch's: AttributeError, 'list' object has no attribute 'detach'


def test_buffer_doc_example_runs():
    assert_doc_examples_run(nn.Buffer)
