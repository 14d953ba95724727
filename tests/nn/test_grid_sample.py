"""``affine_grid`` and ``grid_sample`` against PyTorch's: every mode, padding mode and
``align_corners``, 4-D and 5-D, the gradients for the input, the grid and the affine matrices,
second derivatives by finite differences, points exactly on the edges and far outside, and
PyTorch's errors."""

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from oracle import assert_doc_examples_run, assert_raises_as_torch, check_against_torch

import scratchgrad as sg
from scratchgrad.nn import functional as F

CASES = [
    (dims, mode, padding, aligned)
    for dims, mode, padding, aligned in itertools.product(
        (2, 3), ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection"), (0, 1)
    )
    if not (dims == 3 and mode == "bicubic")  # (PyTorch's bicubic is 4-D only)
]


def _input_and_grid(dims, seed=0, batch=2):
    """An input with unequal spatial sizes and a grid reaching past the edges (points up to
    1.6 out, where reflection folds twice), a few exactly on the edges and the centre."""
    rng = np.random.default_rng(seed)
    spatial = (3, 4, 5)[-dims:]
    x = rng.standard_normal((batch, 3, *spatial))
    grid = rng.uniform(-1.6, 1.6, (batch, *(2, 3, 4)[-dims:], dims))
    grid.flat[:8] = [-1.0, 1.0, 0.0, -1.0, 1.0, 1.0, -1.0, 0.0]
    return x, grid


@pytest.mark.parametrize("dims, mode, padding, aligned", CASES, ids=str)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_grid_sample_matches_torch(dims, mode, padding, aligned, dtype):
    options = dict(mode=mode, padding_mode=padding, align_corners=bool(aligned))
    check_against_torch(
        lambda x, grid: F.grid_sample(x, grid, **options),
        lambda x, grid: TF.grid_sample(x, grid, **options),
        list(_input_and_grid(dims)),
        dtype,
    )


@pytest.mark.parametrize(
    "mode, padding", [("bilinear", "zeros"), ("bilinear", "reflection"), ("bicubic", "border")]
)
def test_grid_sample_gradcheck_and_gradgradcheck(mode, padding):
    """Finite differences, with the points kept off the pixel grid (where the interpolation's
    derivative jumps)."""
    x, grid = _input_and_grid(2, seed=1, batch=1)
    grid = grid[..., :1, :2, :] * 0.7 + 0.013  # (1, 1, 2, 2) points inside
    x, grid = sg.tensor(x, requires_grad=True), sg.tensor(grid, requires_grad=True)

    def sample(x, grid):
        return F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=False)

    assert sg.autograd.gradcheck(sample, (x, grid))
    assert sg.autograd.gradgradcheck(sample, (x, grid))


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("aligned", [False, True])
def test_affine_grid_and_a_spatial_transformer_match_torch(dims, aligned):
    """The spatial transformer's sampling: a grid from affine matrices, then the input read
    there; the gradient reaches the matrices through both."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, *(3, 4, 5)[-dims:]))
    theta = np.eye(dims, dims + 1) + 0.3 * rng.standard_normal((2, dims, dims + 1))
    size = (2, 3, *(4, 6, 5)[-dims:])

    def transform(functional, x, theta):
        grid = functional.affine_grid(theta, size, align_corners=aligned)
        return functional.grid_sample(x, grid, align_corners=aligned)

    check_against_torch(
        lambda x, theta: transform(F, x, theta),
        lambda x, theta: transform(TF, x, theta),
        [x, theta],
    )
    check_against_torch(
        lambda theta: F.affine_grid(theta, size, align_corners=aligned),
        lambda theta: TF.affine_grid(theta, size, align_corners=aligned),
        [theta],
        "float32",
    )


def test_a_size_of_one_sits_at_the_centre():
    theta = np.array([[[2.0, 0.0, 0.5], [0.0, 1.0, 0.0]]])
    check_against_torch(
        lambda t: F.affine_grid(t, (1, 1, 1, 3), align_corners=False),
        lambda t: TF.affine_grid(t, (1, 1, 1, 3), align_corners=False),
        [theta],
    )


def test_an_unset_align_corners_warns_as_torch():
    """PyTorch's warning, naming the caller's line."""
    x, grid = (sg.tensor(a) for a in _input_and_grid(2))
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0") as warned:
        F.grid_sample(x, grid)
    assert warned[0].filename == __file__
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.affine_grid(sg.eye(2, 3).unsqueeze(0), (1, 1, 2, 2))


def test_infinities_are_clamped_with_border_padding_and_other_non_finite_points_raise():
    """With border padding PyTorch clamps an infinite point to the edge, as here. Elsewhere its
    result depends on the kernel (NaN for bilinear with zeros, zero for nearest, a folded
    point for reflection; a NaN point reads an edge pixel under border): refused, the
    error naming the value and the padding."""
    x = np.arange(12.0).reshape(1, 1, 3, 4)
    grid = np.array([[[[0.0, np.inf], [-np.inf, 0.5], [5.0, 0.0]]]])
    for mode in ("bilinear", "nearest", "bicubic"):
        ours = F.grid_sample(sg.tensor(x), sg.tensor(grid), mode, "border", False)
        theirs = TF.grid_sample(torch.tensor(x), torch.tensor(grid), mode, "border", False)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(RuntimeError, match="holds inf values.*padding_mode='zeros'"):
        F.grid_sample(sg.tensor(x), sg.tensor(grid), align_corners=False)
    grid[0, 0, 0, 0] = np.nan
    with pytest.raises(RuntimeError, match="holds nan values.*padding_mode='border'"):
        F.grid_sample(sg.tensor(x), sg.tensor(grid), padding_mode="border", align_corners=False)


def test_a_jitted_step_checks_each_calls_grid():
    """The check runs at each replay, not once when the step was recorded."""
    x = sg.randn(1, 1, 3, 3)

    @sg.jit
    def sample(grid):
        return F.grid_sample(x, grid, align_corners=False)

    for _ in range(4):
        sample(sg.zeros(1, 2, 2, 2))
    with pytest.raises(RuntimeError, match="holds nan values"):
        sample(sg.full((1, 2, 2, 2), float("nan")))


@pytest.mark.parametrize(
    "call, kind, message",
    [
        (
            lambda lib: lib.nn.functional.grid_sample(
                lib.zeros(1, 1, 2, 2), lib.zeros(1, 2, 2, 2), mode="area", align_corners=False
            ),
            ValueError,
            "expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'area'",
        ),
        (
            lambda lib: lib.nn.functional.grid_sample(
                lib.zeros(1, 1, 2, 2), lib.zeros(1, 2, 2, 2), padding_mode="wrap"
            ),
            ValueError,
            "expected padding_mode to be 'zeros', 'border', or 'reflection'",
        ),
        (
            lambda lib: lib.nn.functional.grid_sample(
                lib.zeros(1, 1, 2, 2), lib.zeros(1, 2, 2), align_corners=False
            ),
            RuntimeError,
            r"expected 4D or 5D input and grid with same number of dimensions",
        ),
        (
            lambda lib: lib.nn.functional.grid_sample(
                lib.zeros(2, 1, 2, 2), lib.zeros(1, 2, 2, 2), align_corners=False
            ),
            RuntimeError,
            "expected grid and input to have same batch size",
        ),
        (
            lambda lib: lib.nn.functional.grid_sample(
                lib.zeros(1, 1, 2, 2), lib.zeros(1, 2, 2, 3), align_corners=False
            ),
            RuntimeError,
            r"expected grid to have size 2 in last dimension, but got grid with sizes \[1, 2",
        ),
        (
            lambda lib: lib.nn.functional.grid_sample(
                lib.zeros(1, 1, 2, 2), lib.zeros(1, 2, 2, 2, dtype=lib.float64), align_corners=False
            ),
            RuntimeError,
            "expected input and grid to have same dtype",
        ),
        (
            lambda lib: lib.nn.functional.grid_sample(
                lib.zeros(1, 1, 2, 2, 2), lib.zeros(1, 2, 2, 2, 3), "bicubic", align_corners=False
            ),
            RuntimeError,
            "bicubic interpolation only supports 4D input",
        ),
        (
            lambda lib: lib.nn.functional.affine_grid(
                lib.zeros(1, 3, 3), (1, 1, 2, 2), align_corners=False
            ),
            ValueError,
            r"Expected a batch of 2D affine matrices of shape Nx2x3 for size \[1, 1, 2, 2\]",
        ),
        (
            lambda lib: lib.nn.functional.affine_grid(
                lib.zeros(1, 2, 3), (1, 1, 2), align_corners=False
            ),
            NotImplementedError,
            "affine_grid only supports 4D and 5D sizes",
        ),
        (
            lambda lib: lib.nn.functional.affine_grid(
                lib.zeros(1, 2, 3, dtype=lib.int64), (1, 1, 2, 2), align_corners=False
            ),
            ValueError,
            "Expected theta to have floating point type",
        ),
    ],
    ids=[
        "mode",
        "padding",
        "ranks",
        "batch",
        "last_dim",
        "dtypes",
        "bicubic_5d",
        "theta_shape",
        "size_rank",
        "theta_dtype",
    ],
)
def test_bad_arguments_raise_as_torch(call, kind, message):
    assert_raises_as_torch(call, kind, message)


def test_doc_examples_run():
    assert_doc_examples_run(F.grid_sample, vars(F))
    assert_doc_examples_run(F.affine_grid, vars(F))
