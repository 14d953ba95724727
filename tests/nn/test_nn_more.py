"""The activations, distances, norms, padding and ranking losses added after the first layers:
each function and module against PyTorch (output and every gradient, float64 tight and float32
loose), their reprs, and the errors where PyTorch raises. gradcheck, gradgradcheck, jit, vmap,
autocast and every dim come from the op table's rows (tests/op_table.py)."""

import doctest

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from oracle import assert_close, check_against_torch, module_pair

import scratchgrad as sg
import scratchgrad.nn.functional as F
from scratchgrad.nn import activation, loss, normalization, padding

DTYPES = ["float64", "float32"]
# the kinks of elu, hardtanh and relu6 (0, +-1, 6) are among the entries: their gradients
# there are PyTorch's choices
X = np.array([[-30.0, -2.5, -1.0, -1e-3, 0.0, 6.0], [1e-3, 0.5, 1.0, 3.0, 30.0, 100.0]])


def _normal(*shape):
    return np.random.default_rng(sum(shape)).standard_normal(shape)


# (id, ours, theirs, inputs)
FUNCTIONS = [
    ("elu", F.elu, TF.elu, [X]),
    ("elu_alpha", lambda x: F.elu(x, 0.3), lambda x: TF.elu(x, 0.3), [X]),
    ("selu", F.selu, TF.selu, [X]),
    ("mish", F.mish, TF.mish, [X]),
    ("hardtanh", F.hardtanh, TF.hardtanh, [X]),
    ("hardtanh_bounds", lambda x: F.hardtanh(x, 0.0, 3.0), lambda x: TF.hardtanh(x, 0.0, 3.0), [X]),
    ("relu6", F.relu6, TF.relu6, [X]),
    ("logsigmoid", F.logsigmoid, TF.logsigmoid, [X]),
    ("softmin", lambda x: F.softmin(x, 1), lambda x: TF.softmin(x, 1), [X / 10]),
    (
        "softmin_dtype",
        lambda x: F.softmin(x.float(), 0, dtype=sg.float64),
        lambda x: TF.softmin(x.float(), 0, dtype=torch.float64),
        [X / 10],
    ),
    ("glu", F.glu, TF.glu, [X]),
    ("glu_dim0", lambda x: F.glu(x, 0), lambda x: TF.glu(x, 0), [_normal(4, 3)]),
    ("prelu_shared", F.prelu, TF.prelu, [_normal(2, 3, 4), np.array([0.2])]),
    ("prelu_channels", F.prelu, TF.prelu, [X.T, np.array([0.1, -0.5])]),
    ("prelu_1d", F.prelu, TF.prelu, [X[0], np.array([0.3])]),
    ("normalize", F.normalize, TF.normalize, [_normal(3, 4)]),
    ("normalize_zero_row", F.normalize, TF.normalize, [np.array([[0.0, 0.0], [3.0, 4.0]])]),
    (
        "normalize_p1_dim0",
        lambda x: F.normalize(x, 1.0, 0),
        lambda x: TF.normalize(x, 1.0, 0),
        [_normal(3, 4)],
    ),
    (
        "normalize_inf",
        lambda x: F.normalize(x, float("inf"), -1),
        lambda x: TF.normalize(x, float("inf"), -1),
        [_normal(2, 5)],
    ),
    ("cosine_similarity", F.cosine_similarity, TF.cosine_similarity, [_normal(3, 4), _normal(4)]),
    (
        "cosine_similarity_tiny_norm",  # a norm below eps: clamped in value only, as PyTorch's
        lambda x, y: F.cosine_similarity(x, y, 0),
        lambda x, y: TF.cosine_similarity(x, y, 0),
        [np.array([1e-10, -2e-10, 0.0]), np.array([0.5, 1.0, -1.0])],
    ),
    ("pairwise_distance", F.pairwise_distance, TF.pairwise_distance, [_normal(3, 4), _normal(4)]),
    (
        "pairwise_distance_p1_keepdim",
        lambda x, y: F.pairwise_distance(x, y, 1.0, keepdim=True),
        lambda x, y: TF.pairwise_distance(x, y, 1.0, keepdim=True),
        [_normal(2, 3, 4), _normal(2, 3, 4)],
    ),
    ("pairwise_distance_equal", F.pairwise_distance, TF.pairwise_distance, [X, X]),
    ("pairwise_distance_1d", F.pairwise_distance, TF.pairwise_distance, [X[0], X[1]]),
    (
        "group_norm",
        lambda x, w, b: F.group_norm(x, 3, w, b, eps=1e-3),
        lambda x, w, b: TF.group_norm(x, 3, w, b, eps=1e-3),
        [_normal(2, 6, 2, 3), _normal(6), _normal(6)],
    ),
    ("group_norm_plain", lambda x: F.group_norm(x, 1), lambda x: TF.group_norm(x, 1), [X]),
    (
        "rms_norm",
        lambda x, w: F.rms_norm(x, (3, 4), w),
        lambda x, w: TF.rms_norm(x, (3, 4), w),
        [_normal(2, 3, 4), _normal(3, 4)],
    ),
    (
        "rms_norm_eps",
        lambda x: F.rms_norm(x, 6, eps=0.5),
        lambda x: TF.rms_norm(x, [6], eps=0.5),
        [X / 100],
    ),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("ours", "theirs", "arrays"), [f[1:] for f in FUNCTIONS], ids=[f[0] for f in FUNCTIONS]
)
def test_function_matches_torch(ours, theirs, arrays, dtype):
    check_against_torch(ours, theirs, arrays, dtype)


def _with_params(p):
    p.normal_()


# (id, builder given the nn namespace, input arrays, init of the parameters or None)
MODULES = [
    ("elu", lambda nn: nn.ELU(0.7), [X], None),
    ("selu", lambda nn: nn.SELU(), [X], None),
    ("mish", lambda nn: nn.Mish(), [X], None),
    ("softplus", lambda nn: nn.Softplus(2.0, 5.0), [X], None),
    ("hardtanh", lambda nn: nn.Hardtanh(-2.0, 0.5), [X], None),
    ("relu6", lambda nn: nn.ReLU6(), [X], None),
    ("prelu", lambda nn: nn.PReLU(), [X], None),
    ("prelu_channels", lambda nn: nn.PReLU(3, init=0.1), [_normal(2, 3, 4)], _with_params),
    ("unflatten", lambda nn: nn.Unflatten(1, (2, -1)), [_normal(3, 6)], None),
    ("unflatten_last", lambda nn: nn.Unflatten(-1, [2, 1, 3]), [_normal(2, 6)], None),
    ("zero_pad", lambda nn: nn.ZeroPad2d(1), [_normal(2, 3, 4)], None),
    ("zero_pad_crop", lambda nn: nn.ZeroPad2d((2, -1, 0, 1)), [_normal(1, 2, 3, 4)], None),
    ("constant_pad", lambda nn: nn.ConstantPad2d((1, 0, 2, 1), 1.5), [_normal(3, 4)], None),
    ("group_norm", lambda nn: nn.GroupNorm(2, 4), [_normal(3, 4, 5)], _with_params),
    ("group_norm_4d", lambda nn: nn.GroupNorm(3, 6), [_normal(2, 6, 2, 2)], _with_params),
    ("group_norm_no_affine", lambda nn: nn.GroupNorm(2, 4, affine=False), [_normal(2, 4)], None),
    ("group_norm_no_bias", lambda nn: nn.GroupNorm(1, 3, bias=False), [_normal(2, 3)], None),
    ("rms_norm", lambda nn: nn.RMSNorm(5), [_normal(2, 3, 5)], _with_params),
    ("rms_norm_2d_eps", lambda nn: nn.RMSNorm((3, 5), eps=1e-2), [_normal(2, 3, 5)], None),
    ("rms_norm_no_affine", lambda nn: nn.RMSNorm(5, elementwise_affine=False), [X[:, :5]], None),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("build", "arrays", "init"), [m[1:] for m in MODULES], ids=[m[0] for m in MODULES]
)
def test_module_matches_torch(build, arrays, init, dtype):
    ours, theirs = module_pair(build, dtype, init)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    check_against_torch(ours, theirs, arrays, dtype)


# ---- ranking losses -------------------------------------------------------------------------

SIGNS = np.array([1, -1, 1, -1, 1])
# (id, loss name, options, inputs and target); the targets carry no gradient
LOSSES = [
    ("cosine_embedding", "CosineEmbeddingLoss", {}, [_normal(5, 3), _normal(5, 4)[:, :3], SIGNS]),
    (
        "cosine_embedding_margin",
        "CosineEmbeddingLoss",
        {"margin": -0.5},
        [_normal(5, 3), _normal(5, 4)[:, :3], -SIGNS],
    ),
    (
        "cosine_embedding_0d_target",
        "CosineEmbeddingLoss",
        {"margin": 0.1},
        [_normal(4), _normal(5)[:4], np.array(-1)],
    ),
    ("margin_ranking", "MarginRankingLoss", {}, [_normal(5), _normal(6)[:5], SIGNS]),
    (
        "margin_ranking_broadcast",
        "MarginRankingLoss",
        {"margin": 0.5},
        [_normal(2, 5), _normal(1, 5), SIGNS[None]],
    ),
    ("triplet", "TripletMarginLoss", {}, [_normal(4, 3), _normal(4, 5)[:, :3], _normal(3)[None]]),
    (
        "triplet_swap_p1",
        "TripletMarginLoss",
        {"margin": 2.0, "p": 1.0, "swap": True},
        [_normal(4, 3), _normal(4, 5)[:, :3], _normal(4, 6)[:, :3]],
    ),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(
    ("name", "options", "arrays"), [c[1:] for c in LOSSES], ids=[c[0] for c in LOSSES]
)
def test_loss_matches_torch(name, options, arrays, reduction, dtype):
    ours = getattr(sg.nn, name)(**options, reduction=reduction)
    theirs = getattr(torch.nn, name)(**options, reduction=reduction)
    assert repr(ours) == repr(theirs)
    check_against_torch(ours, theirs, arrays, dtype)


@pytest.mark.parametrize("name", ["CosineEmbeddingLoss", "MarginRankingLoss", "TripletMarginLoss"])
def test_losses_take_the_deprecated_size_average_and_reduce(name):
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated") as w:
        ours = getattr(sg.nn, name)(size_average=False)
    assert ours.reduction == getattr(torch.nn, name)(size_average=False).reduction == "sum"
    assert w[0].filename == __file__
    x = np.array([[1.0, 2.0], [3.0, -1.0]])
    y, z = np.flipud(x).copy(), np.fliplr(x).copy()
    arrays = {
        "CosineEmbeddingLoss": [x, y, SIGNS[:2]],
        "MarginRankingLoss": [x[0], y[0], SIGNS[:2]],
        "TripletMarginLoss": [x, y, z],
    }[name]
    options = {"reduce": False}
    with pytest.warns(UserWarning, match="reduction='none'") as w:
        check_against_torch(
            lambda *xs: getattr(F, _functional(name))(*xs, **options),
            lambda *xs: getattr(TF, _functional(name))(*xs, **options),
            arrays,
        )
    assert w[0].filename == __file__


P = np.array([[0.2, 0.9], [0.6, 0.1]])
CLASSES = np.array([1, 0])
# (loss, inputs, the target as a constant): the losses of 2017-2019 code, which spelled the
# reduction with size_average and reduce (positional too: F.mse_loss(x, y, False))
COMMON_LOSSES = [
    ("mse_loss", [X[:, :2]], P),
    ("l1_loss", [X[:, :2]], P),
    ("smooth_l1_loss", [X[:, :2]], P),
    ("nll_loss", [np.log(P)], CLASSES),
    ("cross_entropy", [X[:, :2]], CLASSES),
    ("binary_cross_entropy", [P], P[::-1].copy()),
    ("binary_cross_entropy_with_logits", [X[:, :2]], P),
]
MODULES = {
    "mse_loss": "MSELoss",
    "l1_loss": "L1Loss",
    "smooth_l1_loss": "SmoothL1Loss",
    "nll_loss": "NLLLoss",
    "cross_entropy": "CrossEntropyLoss",
    "binary_cross_entropy": "BCELoss",
    "binary_cross_entropy_with_logits": "BCEWithLogitsLoss",
}


@pytest.mark.parametrize("options", [{"size_average": False}, {"reduce": False}])
@pytest.mark.parametrize(("name", "arrays", "target"), COMMON_LOSSES, ids=lambda c: str(c)[:20])
def test_common_losses_take_the_deprecated_size_average_and_reduce(name, arrays, target, options):
    """Values and gradients as PyTorch's, from the function and from the module, each warned
    at the caller's line, in PyTorch's words."""
    ours_t, theirs_t = sg.tensor(target), torch.tensor(target)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated") as w:
        check_against_torch(
            lambda x: getattr(F, name)(x, ours_t, **options),
            lambda x: getattr(TF, name)(x, theirs_t, **options),
            arrays,
        )
        module = getattr(sg.nn, MODULES[name])(**options)
    assert len(w) == 3 and len({str(m.message) for m in w}) == 1  # ours twice, PyTorch's once
    assert w[0].filename == w[2].filename == __file__  # (PyTorch's own points into torch)
    theirs = getattr(torch.nn, MODULES[name])(**options)
    assert module.reduction == theirs.reduction
    assert_close(module(sg.tensor(arrays[0]), ours_t), theirs(torch.tensor(arrays[0]), theirs_t))


def test_the_legacy_positional_size_average_is_read_as_pytorch_reads_it():
    x, y = sg.tensor([1.0, 2.0]), sg.tensor([0.0, 0.0])
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert F.mse_loss(x, y, False).item() == 5.0
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert sg.nn.MSELoss(False)(x, y).item() == 5.0


def _functional(name):
    return {
        "CosineEmbeddingLoss": "cosine_embedding_loss",
        "MarginRankingLoss": "margin_ranking_loss",
        "TripletMarginLoss": "triplet_margin_loss",
    }[name]


# ---- dtypes and reprs -----------------------------------------------------------------------


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_norms_of_16_bit_inputs_compute_in_float32_and_keep_the_dtype(low):
    x, y = sg.tensor(_normal(2, 4, 3), dtype=getattr(sg, low)), torch.tensor(_normal(2, 4, 3))
    y = y.to(getattr(torch, low))
    for ours, theirs in [
        (F.group_norm(x, 2), TF.group_norm(y, 2)),
        (F.rms_norm(x, 3), TF.rms_norm(y, [3])),
    ]:
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1] == low
        assert_close(ours, theirs, low)


def test_rms_norm_default_eps_is_the_dtypes_machine_epsilon():
    x = np.full((2, 3), 1e-4)  # mean square 1e-8: float32's eps (1.2e-7) counts, float64's not
    for dtype in ("float64", "float32"):
        check_against_torch(lambda x: F.rms_norm(x, 3), lambda x: TF.rms_norm(x, [3]), [x], dtype)


def test_prelu_module_has_torchs_weight_and_runs_low_under_autocast():
    ours, theirs = sg.nn.PReLU(4, init=-0.1), torch.nn.PReLU(4, init=-0.1)
    assert_close(ours.weight, theirs.weight)
    x = _normal(3, 4)
    with sg.autocast("cpu", dtype=sg.bfloat16):
        out = ours(sg.tensor(x, dtype=sg.float32))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = theirs(torch.tensor(x, dtype=torch.float32))
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1] == "bfloat16"


# ---- errors ---------------------------------------------------------------------------------

# (id, call given the library (scratchgrad or torch), the exception PyTorch raises, what ours
# must say)
ERRORS = [
    (
        "hardtanh_bounds",
        lambda m: m.nn.functional.hardtanh(m.ones(2), 2.0, 1.0),
        ValueError,
        "min_val",
    ),
    ("Hardtanh_bounds", lambda m: m.nn.Hardtanh(1.0, 1.0), (ValueError, AssertionError), "max_val"),
    (
        "elu_integer",
        lambda m: m.nn.functional.elu(m.ones(2, dtype=m.int64)),
        NotImplementedError,
        "elu",
    ),
    (
        "glu_odd",
        lambda m: m.nn.functional.glu(m.ones(2, 3)),
        RuntimeError,
        "glu.*dimension -1 is size 3",
    ),
    ("glu_scalar", lambda m: m.nn.functional.glu(m.tensor(1.0)), RuntimeError, "scalars"),
    (
        "prelu_channels",
        lambda m: m.nn.functional.prelu(m.ones(2, 3), m.ones(2)),
        RuntimeError,
        "parameter numbers = 2 and channel size = 3",
    ),
    (
        "prelu_dtype",
        lambda m: m.nn.functional.prelu(m.ones(2, 3), m.ones(3, dtype=m.float64)),
        RuntimeError,
        "prelu: Type promoting",
    ),
    (
        "prelu_2d_weight",
        lambda m: m.nn.functional.prelu(m.ones(2, 3), m.ones(1, 3)),
        RuntimeError,
        "ndim = 2",
    ),
    (
        "cosine_similarity_sizes",
        lambda m: m.nn.functional.cosine_similarity(m.ones(2, 3), m.ones(2, 4)),
        RuntimeError,
        r"\(2, 3\).*\(2, 4\)",
    ),
    (
        "cosine_similarity_integer",
        lambda m: m.nn.functional.cosine_similarity(
            m.ones(2, 3, dtype=m.int64), m.ones(2, 3, dtype=m.int64)
        ),
        RuntimeError,
        "floating point",
    ),
    ("normalize_dim", lambda m: m.nn.functional.normalize(m.ones(3)), IndexError, "out of range"),
    (
        "pairwise_distance_sizes",
        lambda m: m.nn.functional.pairwise_distance(m.ones(2, 3), m.ones(2, 4)),
        RuntimeError,
        r"\(2, 3\).*\(2, 4\)",
    ),
    (
        "group_norm_1d",
        lambda m: m.nn.functional.group_norm(m.ones(3), 1),
        RuntimeError,
        "at least 2 dimensions",
    ),
    (
        "group_norm_groups",
        lambda m: m.nn.functional.group_norm(m.ones(2, 3, 4), 2),
        RuntimeError,
        r"group_norm.*\[2, 3, 4\] and num_groups=2",
    ),
    (
        "group_norm_one_value",
        lambda m: m.nn.functional.group_norm(m.ones(1, 3, 1), 3),
        ValueError,
        "more than 1 value",
    ),
    (
        "group_norm_weight",
        lambda m: m.nn.functional.group_norm(m.ones(2, 4, 3), 2, m.ones(3)),
        RuntimeError,
        r"weight of shape \[3\]",
    ),
    (
        "GroupNorm_channels",
        lambda m: m.nn.GroupNorm(2, 3),
        ValueError,
        r"num_channels \(3\) must be divisible by num_groups \(2\)",
    ),
    (
        "rms_norm_shape",
        lambda m: m.nn.functional.rms_norm(m.ones(2, 3), [4]),
        RuntimeError,
        r"normalized_shape=\[4\]",
    ),
    (
        "rms_norm_weight",
        lambda m: m.nn.functional.rms_norm(m.ones(2, 3), [3], m.ones(4)),
        RuntimeError,
        r"weight of shape \[4\]",
    ),
    (
        "cosine_embedding_2d_target",
        lambda m: m.nn.functional.cosine_embedding_loss(m.ones(2, 3), m.ones(2, 3), m.ones(2, 1)),
        RuntimeError,
        "0D or 1D target",
    ),
    (
        "cosine_embedding_dims",
        lambda m: m.nn.functional.cosine_embedding_loss(m.ones(3), m.ones(3), m.ones(1)),
        RuntimeError,
        r"1D target tensor expects 2D input tensors.*\[3\] and \[3\]",
    ),
    (
        "cosine_embedding_reduction",
        lambda m: m.nn.CosineEmbeddingLoss(reduction="avg")(m.ones(2, 3), m.ones(2, 3), m.ones(2)),
        ValueError,
        "avg is not a valid",
    ),
    (
        "margin_ranking_dims",
        lambda m: m.nn.functional.margin_ranking_loss(m.ones(3), m.ones(3), m.ones(1, 3)),
        RuntimeError,
        "same dimension",
    ),
    (
        "triplet_dims",
        lambda m: m.nn.functional.triplet_margin_loss(m.ones(2, 3), m.ones(2, 3), m.ones(3)),
        RuntimeError,
        "anchor 2D, positive 2D, and negative 1D",
    ),
    (
        "triplet_margin",
        lambda m: m.nn.functional.triplet_margin_loss(m.ones(3), m.ones(3), m.ones(3), margin=0.0),
        ValueError,
        "margin must be greater than 0",
    ),
    (
        "TripletMarginLoss_margin",
        lambda m: m.nn.TripletMarginLoss(margin=-1.0),
        ValueError,
        "greater than 0",
    ),
    (
        "Unflatten_sizes",
        lambda m: m.nn.Unflatten(1, (2, 2))(m.ones(2, 3)),
        RuntimeError,
        "unflatten",
    ),
    ("Unflatten_int", lambda m: m.nn.Unflatten(1, 3), TypeError, "found type int"),
    (
        "Unflatten_element",
        lambda m: m.nn.Unflatten(1, [3, "a"]),
        TypeError,
        "element of type str at pos 1",
    ),
]


@pytest.mark.parametrize(
    ("call", "error", "match"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS]
)
def test_errors_where_torch_raises(call, error, match):
    with pytest.raises(error):
        call(torch)
    ours = error[0] if isinstance(error, tuple) else error
    with pytest.raises(ours, match=match):
        call(sg)


def test_doc_examples():
    for module in (F, activation, loss, normalization, padding):
        assert doctest.testmod(module).failed == 0


def test_logsigmoid_of_large_inputs_is_plus_zero_as_torchs():
    """log(sigmoid(x)) rounds to 0 for large x: +0 in PyTorch (min(x, 0) - log1p(exp(-x)));
    ours was -0 (the negation of log(1 + exp(-x)))."""
    x = [40.0, 1e300, np.inf, -np.inf, 0.0]
    for dtype in ("float64", "float32"):
        ours = F.logsigmoid(sg.tensor(x, dtype=getattr(sg, dtype))).numpy()
        theirs = TF.logsigmoid(torch.tensor(x, dtype=getattr(torch, dtype))).numpy()
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))
