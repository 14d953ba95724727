"""The nn names PyTorch programs use that came late: hardswish, local_response_norm,
channel_shuffle, pdist, the Poisson, Gaussian and multilabel soft margin losses, their modules
(and GLU, Softmin), and block_diag and combinations. Each against PyTorch (output and every
gradient, float64 tight and float32 loose, kinks and ties among the inputs), gradcheck and
gradgradcheck, the modules' reprs and state_dict keys, and PyTorch's errors."""

import doctest
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from oracle import assert_raises_as_torch, check_against_torch, module_pair

import scratchgrad as sg
import scratchgrad.nn.functional as F

DTYPES = ["float64", "float32"]
RNG = np.random.default_rng(0)
# hardswish's kinks (-3, 3) and points near them
KINKS = np.array([[-30.0, -3.0, -2.5, -1e-3, 0.0, 3.0], [1e-3, 0.5, 1.0, 2.9999, 3.0001, 100.0]])
EQUAL_ROWS = np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 2.0]])
TIED_ROWS = np.array([[1.0, 2.0], [2.0, 3.0], [0.0, 2.0]])  # |differences| tie: p = inf


def _normal(*shape):
    return RNG.standard_normal(shape)


def _both(name, *args, **kwargs):
    """The function ``name`` of both libraries, called with ``args`` after the inputs."""
    return (
        lambda *xs: getattr(F, name)(*xs, *args, **kwargs),
        lambda *xs: getattr(TF, name)(*xs, *args, **kwargs),
    )


# (id, ours, theirs, inputs)
FUNCTIONS = [
    ("hardswish", *_both("hardswish"), [KINKS]),
    ("lrn_3d", *_both("local_response_norm", 3), [_normal(2, 5, 4)]),
    ("lrn_5d", *_both("local_response_norm", 2, 1e-2, 0.5, 2.0), [_normal(2, 5, 3, 2, 2)]),
    ("lrn_window_past_channels", *_both("local_response_norm", 7), [_normal(2, 3, 4)]),
    ("channel_shuffle", *_both("channel_shuffle", 3), [_normal(2, 6, 2, 3)]),
    ("pdist", *_both("pdist"), [_normal(5, 3)]),
    *[(f"pdist_p{p}", *_both("pdist", p), [_normal(5, 3)]) for p in (0, 0.5, 1, 3, np.inf)],
    *[(f"pdist_equal_rows_p{p}", *_both("pdist", p), [EQUAL_ROWS]) for p in (0.5, 1, 2, 3)],
    ("pdist_equal_coordinate_p0.5", *_both("pdist", 0.5), [TIED_ROWS]),
    ("pdist_ties_inf", *_both("pdist", np.inf), [TIED_ROWS]),
    ("pdist_one_row", *_both("pdist"), [np.ones((1, 3))]),
    ("poisson", *_both("poisson_nll_loss"), [_normal(3, 4), RNG.uniform(0, 4, (3, 4))]),
    (
        "poisson_full",
        *_both("poisson_nll_loss", full=True, reduction="none"),
        [_normal(3, 4), np.array([0.5, 1.0, 1.5, 3.0])],
    ),
    (
        "poisson_rate_broadcast",
        *_both("poisson_nll_loss", log_input=False, eps=0.1, reduction="sum"),
        [RNG.uniform(0, 2, (3, 4)), RNG.uniform(0, 4, (3, 1))],
    ),
    ("gaussian", *_both("gaussian_nll_loss"), [_normal(3, 4), _normal(3, 4), _normal(3, 4) ** 2]),
    (
        "gaussian_var_without_last_dim",
        *_both("gaussian_nll_loss", full=True, reduction="none"),
        [_normal(3, 4), _normal(3, 4), RNG.uniform(0, 2, (3,))],
    ),
    (
        "gaussian_var_shared_along_dim_0",
        *_both("gaussian_nll_loss", reduction="sum"),
        [_normal(3, 4), _normal(3, 4), RNG.uniform(0, 2, (1, 4))],
    ),
    (
        "gaussian_var_below_eps",  # clamped in value, the gradient of var itself
        *_both("gaussian_nll_loss", eps=1e-3),
        [_normal(4), _normal(4), np.array([0.0, 1e-5, 1e-3, 2.0])],
    ),
    ("gaussian_float_var", *_both("gaussian_nll_loss", var=0.5), [_normal(3, 4), _normal(3, 4)]),
    (
        "multilabel",
        *_both("multilabel_soft_margin_loss"),
        [_normal(3, 4), RNG.integers(0, 2, (3, 4)).astype(float)],
    ),
    (
        "multilabel_weight_3d",
        *_both("multilabel_soft_margin_loss", reduction="none"),
        [_normal(2, 3, 4), RNG.uniform(0, 1, (2, 3, 4)), RNG.uniform(0, 1, (4,))],
    ),
    (
        "multilabel_target_broadcast",
        *_both("multilabel_soft_margin_loss", reduction="sum"),
        [_normal(4), RNG.uniform(0, 1, (3, 4))],
    ),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("ours", "theirs", "arrays"), [f[1:] for f in FUNCTIONS], ids=[f[0] for f in FUNCTIONS]
)
def test_function_matches_torch(ours, theirs, arrays, dtype):
    check_against_torch(ours, theirs, arrays, dtype)


# (id, function, float64 inputs): smooth where the inputs are (no kink, tie or equal rows)
GRADCHECKS = [
    ("hardswish", F.hardswish, [np.array([-4.0, -2.0, 0.5, 2.5, 4.0])]),
    ("lrn", lambda x: F.local_response_norm(x, 3, 0.1), [_normal(2, 4, 3)]),
    ("channel_shuffle", lambda x: F.channel_shuffle(x, 2), [_normal(1, 4, 3)]),
    *[(f"pdist_p{p}", lambda x, p=p: F.pdist(x, p), [_normal(4, 3)]) for p in (0.5, 1, 2, 3)],
    ("poisson", lambda x, t: F.poisson_nll_loss(x, t, full=True), [_normal(5), _normal(5) + 2]),
    (
        "poisson_rate",
        lambda x, t: F.poisson_nll_loss(x, t, log_input=False),
        [RNG.uniform(1, 2, 5), RNG.uniform(0, 3, 5)],
    ),
    ("gaussian", F.gaussian_nll_loss, [_normal(2, 3), _normal(2, 3), RNG.uniform(1, 2, (2, 1))]),
    (
        "multilabel",
        F.multilabel_soft_margin_loss,
        [_normal(2, 3), RNG.uniform(0, 1, (2, 3)), RNG.uniform(0, 1, 3)],
    ),
    ("block_diag", lambda a, b: sg.block_diag(a, b), [_normal(2, 3), _normal(2)]),
    ("combinations", lambda x: sg.combinations(x, 3, True), [_normal(4)]),
]


@pytest.mark.parametrize(
    ("call", "arrays"), [g[1:] for g in GRADCHECKS], ids=[g[0] for g in GRADCHECKS]
)
def test_gradcheck_and_gradgradcheck(call, arrays):
    inputs = tuple(sg.tensor(a, requires_grad=True) for a in arrays)
    assert sg.autograd.gradcheck(call, inputs)
    assert sg.autograd.gradgradcheck(call, inputs)


def test_hardswish_in_place_as_torch():
    x, t = sg.tensor(KINKS), torch.tensor(KINKS)
    assert F.hardswish(x, inplace=True) is x
    TF.hardswish(t, inplace=True)
    np.testing.assert_allclose(x.numpy(), t.numpy())
    # in a graph: recorded, the gradient flows through to what the input came from
    ours, theirs = sg.tensor(KINKS, requires_grad=True), torch.tensor(KINKS, requires_grad=True)
    (F.hardswish(ours * 1.0, inplace=True) * ours).sum().backward()
    (TF.hardswish(theirs * 1.0, inplace=True) * theirs).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy())
    assert_raises_as_torch(
        lambda lib: nnf(lib).hardswish(lib.ones(2, requires_grad=True), inplace=True),
        RuntimeError,
        "in-place",
    )


def _with_params(p):
    p.uniform_(0.5, 1.5)


# (id, builder given the nn namespace, input arrays, PyTorch's repr)
MODULES = [
    ("glu", lambda nn: nn.GLU(0), [_normal(4, 3)], "GLU(dim=0)"),
    ("hardswish", lambda nn: nn.Hardswish(), [KINKS], "Hardswish()"),
    ("hardswish_inplace", lambda nn: nn.Hardswish(inplace=True), [KINKS], "Hardswish()"),
    ("softmin", lambda nn: nn.Softmin(1), [_normal(3, 4)], "Softmin(dim=1)"),
    (
        "lrn",
        lambda nn: nn.LocalResponseNorm(3, k=2.0),
        [_normal(2, 4, 3, 3)],
        "LocalResponseNorm(3, alpha=0.0001, beta=0.75, k=2.0)",
    ),
    (
        "channel_shuffle",
        lambda nn: nn.ChannelShuffle(2),
        [_normal(2, 4, 3)],
        "ChannelShuffle(groups=2)",
    ),
    (
        "poisson",
        lambda nn: nn.PoissonNLLLoss(log_input=False, full=True, eps=1e-3, reduction="sum"),
        [RNG.uniform(0.5, 2, (3, 4)), RNG.uniform(0, 4, (3, 4))],
        "PoissonNLLLoss()",
    ),
    (
        "gaussian",
        lambda nn: nn.GaussianNLLLoss(full=True, eps=1e-2),
        [_normal(3, 4), _normal(3, 4), RNG.uniform(0, 2, (3, 1))],
        "GaussianNLLLoss()",
    ),
    (
        "multilabel",
        lambda nn: nn.MultiLabelSoftMarginLoss(reduction="none"),
        [_normal(3, 4), RNG.uniform(0, 1, (3, 4))],
        "MultiLabelSoftMarginLoss()",
    ),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("build", "arrays", "text"), [m[1:] for m in MODULES], ids=[m[0] for m in MODULES]
)
def test_module_matches_torch(build, arrays, text, dtype):
    ours, theirs = module_pair(build, dtype)
    assert repr(ours) == repr(theirs) == text
    # an in-place module changes its input: each library gets a copy of its own
    check_against_torch(
        lambda *xs: ours(*(x * 1 for x in xs)),
        lambda *xs: theirs(*(x * 1 for x in xs)),
        arrays,
        dtype,
    )


def test_multilabel_weight_is_a_buffer_as_torch():
    weight = RNG.uniform(0, 1, 4)
    ours = sg.nn.MultiLabelSoftMarginLoss(sg.tensor(weight))
    theirs = torch.nn.MultiLabelSoftMarginLoss(torch.tensor(weight))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    check_against_torch(ours, theirs, [_normal(3, 4), RNG.uniform(0, 1, (3, 4))])


def test_legacy_reduction_arguments_warn_at_the_callers_line():
    with pytest.warns(UserWarning, match="reduction='sum'") as record:
        loss = sg.nn.PoissonNLLLoss(size_average=False)
    assert loss.reduction == "sum" and record[0].filename == __file__
    with pytest.warns(UserWarning, match="reduction='none'") as record:
        out = F.multilabel_soft_margin_loss(sg.zeros(2, 3), sg.ones(2, 3), reduce=False)
    assert out.shape == (2,) and record[0].filename == __file__


def nnf(lib):
    """``nn.functional`` of scratchgrad or PyTorch."""
    return lib.nn.functional


@pytest.mark.parametrize(
    ("call", "kind", "message"),
    [
        (lambda lib: nnf(lib).hardswish(lib.arange(3)), NotImplementedError, "hardswish"),
        (lambda lib: nnf(lib).local_response_norm(lib.ones(2, 3), 2), ValueError, "3D or higher"),
        (
            lambda lib: nnf(lib).local_response_norm(lib.ones(2, 3, 4), 0),
            RuntimeError,
            "greater than zero",
        ),
        (lambda lib: nnf(lib).channel_shuffle(lib.ones(2, 6), 3), RuntimeError, "> 2 dims"),
        (
            lambda lib: nnf(lib).channel_shuffle(lib.ones(2, 6, 1), 0),
            RuntimeError,
            "must be positive",
        ),
        (
            lambda lib: nnf(lib).channel_shuffle(lib.ones(2, 6, 1), 4),
            RuntimeError,
            "divisible by groups",
        ),
        (lambda lib: nnf(lib).pdist(lib.ones(3)), RuntimeError, "only supports 2D"),
        (lambda lib: nnf(lib).pdist(lib.ones(3, 2), -1), RuntimeError, "non-negative p"),
        (
            lambda lib: nnf(lib).pdist(lib.ones(3, 2, dtype=lib.int64)),
            RuntimeError,
            "floating-point",
        ),
        (
            lambda lib: nnf(lib).poisson_nll_loss(lib.ones(2), lib.ones(2), reduction="x"),
            ValueError,
            "x is not a valid",
        ),
        (
            lambda lib: nnf(lib).poisson_nll_loss(lib.ones(3), lib.ones(4)),
            RuntimeError,
            "could not",
        ),
        (
            lambda lib: nnf(lib).gaussian_nll_loss(lib.ones(3, 2), lib.ones(3, 2), -1.0),
            ValueError,
            "negative entry",
        ),
        (
            lambda lib: nnf(lib).gaussian_nll_loss(lib.ones(3, 2), lib.ones(3, 2), -lib.ones(3, 2)),
            ValueError,
            "negative entry",
        ),
        (
            lambda lib: nnf(lib).gaussian_nll_loss(lib.ones(3, 2), lib.ones(3, 2), 1),
            TypeError,
            "Tensor or a float",
        ),
        *[
            (
                lambda lib, s=s: nnf(lib).gaussian_nll_loss(
                    lib.ones(3, 2), lib.ones(3, 2), lib.ones(s)
                ),
                ValueError,
                "incorrect size",
            )
            for s in [(2,), (1, 1), (3, 7), (3, 2, 1), ()]
        ],
        (
            lambda lib: nnf(lib).gaussian_nll_loss(
                lib.ones(3, 2), lib.ones(3, 2), lib.ones(3, 2), reduction="x"
            ),
            ValueError,
            "x is not valid",
        ),
        (
            lambda lib: nnf(lib).gaussian_nll_loss(
                lib.ones(3, 2), lib.ones(3, 2), lib.ones(3, 2, dtype=lib.int64)
            ),
            RuntimeError,
            "floating point",
        ),
        (
            lambda lib: nnf(lib).multilabel_soft_margin_loss(lib.ones(()), lib.ones(())),
            IndexError,
            "no dimensions",
        ),
        (
            lambda lib: nnf(lib).multilabel_soft_margin_loss(
                lib.ones(2, 3), lib.ones(2, 3), reduction="x"
            ),
            ValueError,
            "x is not",
        ),
        (lambda lib: lib.block_diag(lib.ones(2, 2, 2)), RuntimeError, "Input 0 has 3 dimensions"),
        (lambda lib: lib.block_diag([1.0, 2.0]), TypeError, "must be Tensor"),
        (
            lambda lib: lib.combinations(lib.ones(2, 2)),
            RuntimeError,
            r"Expect a 1D vector, but got shape \[2, 2\]",
        ),
        (lambda lib: lib.combinations(lib.ones(3), -1), RuntimeError, "non-negative"),
    ],
)
def test_errors_as_torch(call, kind, message):
    assert_raises_as_torch(call, kind, message)


BLOCKS = [
    [np.array(1.5), _normal(3), _normal(2, 1)],
    [_normal(2, 3), _normal(0, 2), _normal(1, 0), _normal(0)],
    [_normal(1, 1)],
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("arrays", BLOCKS, ids=["0d_1d_2d", "empty_blocks", "one"])
def test_block_diag_matches_torch(arrays, dtype):
    check_against_torch(sg.block_diag, torch.block_diag, arrays, dtype)


def test_block_diag_promotes_and_empty_as_torch():
    ours = sg.block_diag(sg.ones(2, 2, dtype=sg.bool), sg.tensor([3], dtype=sg.int32))
    theirs = torch.block_diag(
        torch.ones(2, 2, dtype=torch.bool), torch.tensor([3], dtype=torch.int32)
    )
    assert str(ours.dtype).split(".")[-1] == "int32" and ours.tolist() == theirs.tolist()
    assert sg.block_diag().shape == tuple(torch.block_diag().shape) == (1, 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("r", [1, 2, 3, 5])
@pytest.mark.parametrize("with_replacement", [False, True])
def test_combinations_match_torch(r, with_replacement, dtype):
    check_against_torch(
        lambda x: sg.combinations(x, r, with_replacement),
        lambda x: torch.combinations(x, r, with_replacement),
        [_normal(4)],
        dtype,
    )


def test_combinations_edges_as_torch():
    for r in (0, 2):
        for values in ([], [1, 2, 3]):
            ours, theirs = (
                sg.combinations(sg.tensor(values), r),
                torch.combinations(torch.tensor(values), r),
            )
            assert ours.shape == tuple(theirs.shape) and ours.tolist() == theirs.tolist()
            assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    leaf = sg.ones(3, requires_grad=True)
    assert not sg.combinations(leaf, 0).requires_grad and sg.combinations(leaf, 4).requires_grad


def test_names_are_exported_from_nn():
    for name in (
        "GLU", "Hardswish", "Softmin", "LocalResponseNorm", "ChannelShuffle", "PoissonNLLLoss",
        "GaussianNLLLoss", "MultiLabelSoftMarginLoss",
    ):  # fmt: skip
        assert getattr(sg.nn, name).__name__ == name and name in sg.nn.__all__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sg.nn.utils.weight_norm and sg.nn.utils.spectral_norm


def test_doc_examples_run():
    from scratchgrad import creation

    for module in (F, creation):
        assert doctest.testmod(module).failed == 0, module.__name__
