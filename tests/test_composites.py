"""The PyTorch functions composed of other ops (hstack, vstack, dstack, meshgrid,
broadcast_tensors, unflatten, diff, var_mean, std_mean, logaddexp, true_divide, logspace,
tensor_split, cross) against PyTorch: values and gradients on a few shapes each, float64 tight and
float32 loose; gradcheck and gradgradcheck in float64; and each one's errors where PyTorch
raises. Their op table rows (``tests/op_table.py``) add random shapes, every dim, jit and vmap."""

import warnings

import numpy as np
import pytest
import torch
from oracle import (
    assert_close,
    assert_doc_examples_run,
    assert_raises_as_torch,
    check_against_torch,
)

import scratchgrad as sg

# name -> (call(m, *xs) for both libraries, the input shapes of each case)
CASES = {
    "hstack": (lambda m, x, y: m.hstack([x, y]), [((3,), (2,)), ((2, 3), (2, 1)), ((), (2,))]),
    "vstack": (lambda m, x, y: m.vstack([x, y]), [((3,), (3,)), ((2, 3), (3,)), ((), ())]),
    "dstack": (lambda m, x, y: m.dstack([x, y]), [((3,), (3,)), ((2, 3), (2, 3, 2)), ((), ())]),
    "meshgrid_ij": (
        lambda m, x, y: m.meshgrid(x, y, x, indexing="ij"),
        [((3,), (2,)), ((), (4,)), ((0,), (2,))],
    ),
    "meshgrid_xy": (
        lambda m, x, y: m.meshgrid([y, x, y], indexing="xy"),
        [((3,), (2,)), ((1,), ())],
    ),
    "broadcast_tensors": (
        lambda m, x, y: m.broadcast_tensors(x, y, x[..., :1]),
        [((2, 1), (3,)), ((4, 1, 3), (2, 1)), ((1,), ())],
    ),
    "unflatten": (
        lambda m, x: m.unflatten(x, 1, (2, -1)) + x.unflatten(-1, (2, -1, 1)).flatten(2),
        [((3, 4),), ((1, 6),), ((0, 2),)],
    ),
    "diff": (
        lambda m, x, y: m.diff(x, 2, 0, prepend=y, append=y) + x.diff(dim=0, prepend=y)[:1],
        [((4, 3), (2, 3)), ((5,), (1,))],
    ),
    "diff_past_the_length": (lambda m, x: x.diff(n=7, dim=-1), [((2, 3),), ((4,),)]),
    "var_mean": (
        lambda m, x: (*m.var_mean(x, 1, keepdim=True), *m.var_mean(x, correction=0)),
        [((3, 4),), ((2, 5, 2),)],
    ),
    "std_mean": (
        lambda m, x: (*m.std_mean(x, (0, -1)), *m.std_mean(x, dim=None, keepdim=True)),
        [((3, 4),), ((2, 5, 2),)],
    ),
    "std_mean_unbiased_positional": (lambda m, x: m.std_mean(x, False), [((3, 4),)]),
    "logaddexp": (
        lambda m, x, y: m.logaddexp(x, y * 40) + (x * 30).logaddexp(y),
        [((3,), (3,)), ((2, 1), (4,)), ((), (2, 2))],
    ),
    "true_divide": (lambda m, x, y: m.true_divide(x, y.exp()), [((3,), (3,)), ((2, 3), (3,))]),
    "tensor_split_sections": (
        lambda m, x: m.tensor_split(x, 3, dim=-1),
        [((2, 7),), ((2,),), ((4, 3, 2),)],
    ),
    "tensor_split_indices": (
        lambda m, x: x.tensor_split([1, -1, 20], 0) + x.tensor_split(m.tensor([2]), 0),
        [((5, 2),), ((3,),)],
    ),
    "cross": (
        lambda m, x, y: m.cross(x, y, dim=-1) + x.cross(y * 2, dim=-1),
        [((3,), (3,)), ((4, 3), (1, 3)), ((2, 1, 3), (1, 5, 3))],
    ),
    "cross_dim_0": (lambda m, x, y: m.cross(x, y, 0), [((3, 4), (3, 4)), ((3, 1), (3, 2))]),
}
ROWS = [
    pytest.param(name, shapes, id=f"{name}-{i}")
    for name, (_, cases) in CASES.items()
    for i, shapes in enumerate(cases)
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("name", "shapes"), ROWS)
def test_forward_and_gradients_match_torch(name, shapes, dtype):
    call = CASES[name][0]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape) for shape in shapes]
    check_against_torch(
        lambda *xs: call(sg, *xs), lambda *xs: call(torch, *xs), arrays, dtype, what=name
    )


@pytest.mark.parametrize("check", ["gradcheck", "gradgradcheck"])
@pytest.mark.parametrize(("name", "shapes"), ROWS)
def test_gradcheck_and_gradgradcheck(name, shapes, check):
    call = CASES[name][0]
    rng = np.random.default_rng(0)
    xs = [sg.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    outs = call(sg, *xs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    if not any(o.numel() for o in outs):
        pytest.skip("an empty output has no derivative to check")

    def joined(*xs):  # every output, so that each one's derivative is checked
        outs = call(sg, *xs)
        return sg.cat([o.reshape(-1) for o in (outs if isinstance(outs, tuple) else (outs,))])

    assert getattr(sg.autograd, check)(joined, xs)


def test_logaddexp_is_stable_and_exact_at_infinities_as_torch():
    values = [0.0, 1e4, -1e4, 88.0, -np.inf, np.inf, np.nan]
    x, y = np.meshgrid(values, values)
    for dtype in ("float32", "float64"):
        ours = sg.logaddexp(*(sg.tensor(a, dtype=getattr(sg, dtype)) for a in (x, y)))
        theirs = torch.logaddexp(*(torch.tensor(a, dtype=getattr(torch, dtype)) for a in (x, y)))
        assert_close(ours, theirs, dtype, "logaddexp")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NaN made on the way, so no warning either
        sg.logaddexp(sg.tensor([np.inf, -np.inf]), sg.tensor([np.inf, -np.inf]))


def test_logaddexp_gradient_at_a_tie_is_split_in_half():
    for m in (sg, torch):
        x = m.tensor([2.0, -1.0], dtype=m.float64, requires_grad=True)
        y = m.tensor([2.0, -1.0], dtype=m.float64, requires_grad=True)
        m.logaddexp(x, y).sum().backward()
        assert x.grad.tolist() == y.grad.tolist() == [0.5, 0.5]


def test_true_divide_of_integers_is_floating_as_torch():
    ours = sg.true_divide(sg.tensor([1, 2, 3]), 2)
    theirs = torch.true_divide(torch.tensor([1, 2, 3]), 2)
    assert ours.tolist() == theirs.tolist() and str(ours.dtype).split(".")[-1] == "float32"
    assert sg.tensor([3.0]).true_divide(sg.tensor([2.0])).tolist() == [1.5]


def test_diff_of_bool_and_integer_tensors_as_torch():
    for data in ([True, False, False, True], [1, 5, 2, 2]):
        for m in (sg, torch):
            assert str(m.diff(m.tensor(data)).dtype).split(".")[-1] == (
                "bool" if isinstance(data[0], bool) else "int64"
            )
        assert sg.diff(sg.tensor(data)).tolist() == torch.diff(torch.tensor(data)).tolist()
    prepend = sg.tensor([0.5], dtype=sg.float64)  # promoted with the input, as torch.cat does
    assert sg.diff(sg.tensor([1, 2]), prepend=prepend).tolist() == [0.5, 1.0]
    assert sg.diff(sg.tensor([1.0, 4.0]), n=0).tolist() == [1.0, 4.0]


@pytest.mark.parametrize(
    "args", [(0, 2, 5), (1, -2, 4, 2), (-1.5, 3, 7, 3.0), (0, 2, 1), (0, 2, 0)]
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_logspace_matches_torch(args, dtype):
    ours = sg.logspace(*args, dtype=getattr(sg, dtype))
    theirs = torch.logspace(*args, dtype=getattr(torch, dtype))
    assert str(ours.dtype).split(".")[-1] == dtype
    assert_close(ours, theirs, "float64" if dtype == "int64" else dtype)
    made = sg.logspace(*args, requires_grad=True)
    assert made.requires_grad and made.is_leaf and made.dtype == sg.float32


def test_meshgrid_without_indexing_warns_and_gives_ij():
    with pytest.warns(UserWarning, match="indexing"):
        ours = sg.meshgrid(sg.arange(3), sg.arange(2))
    with pytest.warns(UserWarning, match="indexing"):
        theirs = torch.meshgrid(torch.arange(3), torch.arange(2))
    assert [o.tolist() for o in ours] == [t.tolist() for t in theirs]


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.tensor([1.5]).std(),  # an RL batch of one: its advantages' std is NaN
        lambda m: m.tensor([[1.0, 2.0]]).var(0),
        lambda m: m.tensor([1.0, 2.0]).std(correction=3),
        lambda m: m.zeros(0).var(unbiased=False),
        lambda m: m.var_mean(m.tensor([2.0])),
        lambda m: m.std_mean(m.tensor([[2.0], [3.0]]), 1),
        lambda m: m.var(m.tensor([2.0])),  # the module functions too (through their wrapper)
        lambda m: m.std(m.tensor([[2.0], [3.0]]), 1),
    ],
)
def test_var_and_std_without_degrees_of_freedom_warn_as_torch(call):
    results, messages = [], []
    for m in (sg, torch):
        with pytest.warns(UserWarning, match="degrees of freedom is <= 0") as caught:
            results.append(call(m))
        messages.append(str(caught[0].message).split(" (Triggered")[0])
        assert caught[0].filename == __file__  # the warning points at the caller's line
    assert messages[0] == messages[1]
    ours, theirs = ((r,) if isinstance(r, sg.Tensor | torch.Tensor) else r for r in results)
    for o, t in zip(ours, theirs, strict=True):
        assert_close(o, t)  # NaN where PyTorch's is
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sg.tensor([1.0, 2.0]).std(), sg.var_mean(sg.tensor([[1.0, 2.0]]), 1, correction=0)


def test_cross_without_dim_takes_the_first_of_size_3_and_warns():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 3))
    with pytest.warns(UserWarning, match="dim"):
        ours = sg.cross(sg.tensor(x), sg.tensor(y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns only once per process
        theirs = torch.cross(torch.tensor(x), torch.tensor(y))
    assert_close(ours, theirs)
    assert_close(ours, torch.linalg.cross(torch.tensor(x), torch.tensor(y), dim=1))


def test_unflatten_and_tensor_split_with_int64_tensors_keep_their_dtype():
    for m in (sg, torch):
        x = m.arange(12).reshape(3, 4)
        assert x.unflatten(0, (-1, 1)).tolist() == x.reshape(3, 1, 4).tolist()
        parts = m.tensor_split(x, m.tensor(2), dim=1)
        assert [p.tolist() for p in parts] == [[[0, 1], [4, 5], [8, 9]], [[2, 3], [6, 7], [10, 11]]]


# the errors: (call(m), the exception type both raise, what ours says)
ERRORS = {
    "hstack_empty": (lambda m: m.hstack([]), RuntimeError, "hstack expects a non-empty"),
    "hstack_sizes": (
        lambda m: m.hstack([m.ones(2, 3), m.ones(3, 3)]),
        RuntimeError,
        r"cat: shapes \(2, 3\), \(3, 3\)",
    ),
    "vstack_a_tensor": (
        lambda m: m.vstack(m.ones(2, 3)),
        TypeError,
        "vstack.*must be a sequence of Tensors, not Tensor",
    ),
    "vstack_sizes": (lambda m: m.vstack([m.ones(3), m.ones(4)]), RuntimeError, "cat: shapes"),
    "dstack_empty": (lambda m: m.dstack(()), RuntimeError, "dstack expects a non-empty"),
    "meshgrid_empty": (lambda m: m.meshgrid(indexing="ij"), RuntimeError, "meshgrid expects"),
    "meshgrid_2d": (
        lambda m: m.meshgrid(m.ones(2, 2), m.ones(3), indexing="ij"),
        RuntimeError,
        r"meshgrid: expected 0-D or 1-D tensors, got shape \(2, 2\)",
    ),
    "meshgrid_indexing": (
        lambda m: m.meshgrid(m.ones(2), indexing="ji"),
        RuntimeError,
        'indexing must be one of "xy" or "ij", but received: ji',
    ),
    "meshgrid_a_list": (
        lambda m: m.meshgrid(m.ones(2), [1.0], indexing="ij"),
        TypeError,
        "meshgrid.*must be a sequence of Tensors, not tuple",
    ),
    "meshgrid_dtypes": (
        lambda m: m.meshgrid(m.ones(2), m.ones(2, dtype=m.float64), indexing="xy"),
        RuntimeError,
        "same dtype",
    ),
    "broadcast_tensors": (
        lambda m: m.broadcast_tensors(m.ones(2), m.ones(3, 1), m.ones(3)),
        RuntimeError,
        r"broadcast_tensors: shapes \[\(2,\), \(3, 1\), \(3,\)\] cannot be broadcast",
    ),
    "broadcast_tensors_a_list": (
        lambda m: m.broadcast_tensors([m.ones(2)]),
        TypeError,
        "expected Tensor as element 0",
    ),
    "unflatten_product": (
        lambda m: m.ones(2, 6).unflatten(1, (4, -1)),
        RuntimeError,
        r"Provided sizes \[4, -1\] don't multiply up to the size of dim 1 \(6\)",
    ),
    "unflatten_two_inferred": (
        lambda m: m.unflatten(m.ones(2, 6), 1, (-1, -1)),
        RuntimeError,
        "only one dimension can be inferred",
    ),
    "unflatten_empty_sizes": (
        lambda m: m.ones(2, 6).unflatten(1, ()),
        RuntimeError,
        "sizes must be non-empty",
    ),
    "diff_0d": (lambda m: m.diff(m.tensor(1.0)), RuntimeError, "at least one-dimensional"),
    "diff_negative_order": (
        lambda m: m.ones(3).diff(n=-1),
        RuntimeError,
        "order must be non-negative but got -1",
    ),
    "diff_prepend_dims": (
        lambda m: m.diff(m.ones(3, 4), dim=0, prepend=m.ones(4)),
        RuntimeError,
        r"prepend of shape \(4,\) must match the input's shape \(3, 4\) except along dim 0",
    ),
    "diff_append_shape": (
        lambda m: m.ones(3, 4).diff(append=m.ones(2, 2)),
        RuntimeError,
        r"append of shape \(2, 2\)",
    ),
    "diff_append_a_number": (
        lambda m: m.ones(3).diff(append=1.0),
        TypeError,
        "argument 'append' must be Tensor, not float",
    ),
    "var_mean_integers": (
        lambda m: m.var_mean(m.tensor([1, 2])),
        RuntimeError,
        "var_mean: only supports floating point",
    ),
    "std_mean_dim": (lambda m: m.std_mean(m.ones(2, 3), dim=2), IndexError, "out of range"),
    "logaddexp_integers": (
        lambda m: m.logaddexp(m.tensor([1, 2]), m.tensor([3, 4])),
        NotImplementedError,
        "logaddexp: not implemented for int64",
    ),
    "logaddexp_a_number": (
        lambda m: m.ones(2).logaddexp(2.0),
        TypeError,
        "argument 'other' .* must be Tensor, not float",
    ),
    # atan2, dist, isclose, allclose and equal took a number (or said AttributeError)
    **{
        f"{name}_a_number": (call, TypeError, f"{name}\\(\\): argument 'other' .* must be Tensor")
        for name, call in {
            "atan2": lambda m: m.ones(2).atan2(2.5),
            "arctan2": lambda m: m.arctan2(m.ones(2), 2),
            "dist": lambda m: m.dist(m.ones(2), 2.5),
            "isclose": lambda m: m.isclose(m.ones(2), 1.0),
            "allclose": lambda m: m.ones(2).allclose(1.0),
            "equal": lambda m: m.ones(2).equal(1.0),
        }.items()
    },
    "logaddexp_shapes": (
        lambda m: m.logaddexp(m.ones(2), m.ones(3)),
        RuntimeError,
        r"shapes \(2,\), \(3,\)",
    ),
    "true_divide_shapes": (
        lambda m: m.true_divide(m.ones(2), m.ones(3)),
        RuntimeError,
        r"shapes \(2,\), \(3,\)",
    ),
    "logspace_steps": (
        lambda m: m.logspace(0, 1, -1),
        RuntimeError,
        "logspace: number of steps must be non-negative, got -1",
    ),
    "linspace_steps": (
        lambda m: m.linspace(0, 1, -2),
        RuntimeError,
        "linspace: number of steps must be non-negative, got -2",
    ),
    "tensor_split_0d": (
        lambda m: m.tensor_split(m.tensor(1.0), 2),
        RuntimeError,
        "at least a 1-dimensional tensor",
    ),
    "tensor_split_sections": (
        lambda m: m.ones(4).tensor_split(0),
        RuntimeError,
        "number of sections must be larger than 0, got 0",
    ),
    "tensor_split_a_float": (
        lambda m: m.tensor_split(m.ones(4), 2.0),
        TypeError,
        "indices_or_sections must be an int, .* not float",
    ),
    "tensor_split_float_tensor": (
        lambda m: m.tensor_split(m.ones(4), m.tensor([1.0])),
        RuntimeError,
        "to have dtype of long, but got float32",
    ),
    "tensor_split_2d_tensor": (
        lambda m: m.tensor_split(m.ones(4), m.tensor([[1]])),
        RuntimeError,
        "got a tensor with 2 dims",
    ),
    "tensor_split_dim": (lambda m: m.ones(4).tensor_split(2, 1), IndexError, "out of range"),
    "cross_length": (
        lambda m: m.cross(m.ones(3, 4), m.ones(3, 4), dim=1),
        RuntimeError,
        r"cross: inputs dimension 1 must have length 3, got shapes \(3, 4\) and \(3, 4\)",
    ),
    "cross_no_dim_of_3": (
        lambda m: m.cross(m.ones(2, 4), m.ones(2, 4)),
        RuntimeError,
        r"no dimension of size 3 in input of shape \(2, 4\)",
    ),
    "cross_ndims": (
        lambda m: m.cross(m.ones(3), m.ones(2, 3), dim=-1),
        RuntimeError,
        "same number of dimensions",
    ),
    "cross_dtypes": (
        lambda m: m.ones(3).cross(m.ones(3, dtype=m.float64), dim=0),
        RuntimeError,
        "float32 and float64",
    ),
    "var_mean_list": (lambda m: m.var_mean([1.0, 2.0]), TypeError, "must be Tensor, not list"),
    "cross_0d": (
        lambda m: m.cross(m.tensor(1.0), m.tensor(1.0), dim=0),
        IndexError,
        "no dimensions",
    ),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_as_torch(name):
    assert_raises_as_torch(*ERRORS[name])


@pytest.mark.parametrize(
    "function",
    [
        sg.Tensor.cross,
        sg.Tensor.diff,
        sg.Tensor.logaddexp,
        sg.Tensor.tensor_split,
        sg.Tensor.unflatten,
        sg.broadcast_tensors,
        sg.dstack,
        sg.hstack,
        sg.logspace,
        sg.meshgrid,
        sg.std_mean,
        sg.var_mean,
        sg.vstack,
    ],
    ids=lambda f: f.__name__,
)
def test_doc_examples_run(function):
    assert_doc_examples_run(function, {"logspace": sg.logspace})
