"""The Tensor API against PyTorch: dtype promotion, attributes, conversions, in-place methods,
shape methods, reductions to values and indices, every Python operator (reflected ones too), the
module-level functions, and half precision. Values, dtypes, shapes and, where the operation is
differentiable, gradients must all match.

The per-primitive forward/gradient/gradcheck table lives in tests/test_ops.py; this file checks
the API around the primitives.
"""

import functools
import itertools
import operator

import numpy as np
import oracle
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from oracle import check_against_torch, same_dtype

import scratchgrad as sg

torch = pytest.importorskip("torch")

DTYPES = ["bool", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


# the Tensor API's results are NumPy's own float64 arithmetic: only round-off may differ
assert_close = functools.partial(oracle.assert_close, tolerance=oracle.ROUND_OFF)


def check(f, *values, grad=True, tolerance=oracle.ROUND_OFF):
    """Run ``f`` on scratchgrad and torch tensors holding ``values`` (float64); compare each
    output's value, shape and dtype and, with ``grad``, the inputs' gradients of a random
    weighting of the floating outputs (tests/oracle.py)."""
    arrays = [np.asarray(v, dtype=np.float64) for v in values]
    check_against_torch(f, f, arrays, grad=grad, tolerance=tolerance)


def ones(dtype: str, ndim: int):
    """Matching ones of a dtype, 0-d or 1-d, in both libraries."""
    size = (2,) * ndim
    return sg.ones(size, dtype=getattr(sg, dtype)), torch.ones(size, dtype=getattr(torch, dtype))


# ---- dtype promotion ------------------------------------------------------------------------


PROMOTION_CASES = [
    pytest.param(
        a,
        b,
        dims,
        id=f"{a}{dims[0]}d-{b}{dims[1]}d",
    )
    for a, b in itertools.product(DTYPES, DTYPES)
    for dims in [(1, 1), (0, 1), (1, 0), (0, 0)]
]


@pytest.mark.parametrize("a, b, dims", PROMOTION_CASES)
def test_promotion_of_two_tensors_matches_torch(a, b, dims):
    (x, xt), (y, yt) = ones(a, dims[0]), ones(b, dims[1])
    assert same_dtype(x * y, xt * yt)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scalar", [True, 3])
def test_promotion_with_a_python_scalar_matches_torch(dtype, scalar):
    x, xt = ones(dtype, 1)
    for op in (operator.add, operator.mul):
        assert same_dtype(op(x, scalar), op(xt, scalar))
        assert same_dtype(op(scalar, x), op(scalar, xt))


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bfloat16"])
def test_promotion_with_a_python_float_matches_torch(dtype):
    x, xt = ones(dtype, 1)
    assert same_dtype(x * 2.5, xt * 2.5) and same_dtype(2.5 + x, 2.5 + xt)


def test_bfloat16_with_a_python_float_stays_bfloat16():
    x = sg.ones(2, dtype=sg.bfloat16)
    assert (x * 2.5).dtype == sg.bfloat16 and (1.5 + x).dtype == sg.bfloat16


def test_promotion_rules_from_the_brief():
    assert (sg.ones(2) * 2.5).dtype == sg.float32  # a scalar keeps the tensor's dtype
    assert (sg.ones(2, dtype=sg.float64) * 2.5).dtype == sg.float64
    assert (sg.tensor([1, 2]) * 2.5).dtype == sg.float32  # int tensor, float scalar
    assert (sg.ones(2) + sg.ones(2, dtype=sg.float64)).dtype == sg.float64
    assert (sg.ones(2) + sg.tensor(1.0, dtype=sg.float64)).dtype == sg.float32  # 0-d: no widen
    assert (sg.tensor([1, 2]) / 2).dtype == sg.float32  # true division of ints gives floats
    assert (sg.tensor([1, 2]) * 3).dtype == sg.int64


def test_int_tensor_divided_by_int_tensor_is_float32():
    out = sg.tensor([4, 2]) / sg.tensor([3, 3])
    out_t = torch.tensor([4, 2]) / torch.tensor([3, 3])
    assert same_dtype(out, out_t)


def test_true_division_of_ints_values():
    out = sg.tensor([4, 2, -7]) / sg.tensor([3, 3, 2])
    np.testing.assert_allclose(out.array, np.array([4, 2, -7]) / np.array([3, 3, 2]), rtol=1e-6)
    assert (1 / sg.tensor([4, 2])).dtype == sg.float32
    assert (1 / sg.tensor([4, 2])).tolist() == [0.25, 0.5]


# ---- attributes -----------------------------------------------------------------------------


def test_attributes_match_torch():
    values = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x, xt = sg.tensor(values), torch.tensor(values)
    assert x.shape == tuple(xt.shape) and isinstance(x.shape, tuple)
    assert x.ndim == xt.ndim == x.dim() == 3
    assert x.size() == tuple(xt.size()) and x.size(1) == xt.size(1) and x.size(-1) == 4
    assert x.numel() == xt.numel() == 24
    assert x.dtype == sg.float32 and x.device == sg.device("cpu") and str(x.device) == "cpu"
    assert not x.requires_grad and x.is_leaf and x.grad is None and x.grad_fn is None
    np.testing.assert_array_equal(x.mT.array, xt.mT.numpy())
    m = sg.tensor(values[0])
    np.testing.assert_array_equal(m.T.array, torch.tensor(values[0]).T.numpy())
    assert sg.ones(3).T.shape == (3,)


def test_grad_is_none_until_set_and_assignable():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    assert x.grad is None
    x.grad = sg.tensor([10.0, 10.0])
    (x * 3).sum().backward()
    assert x.grad.tolist() == [13.0, 13.0]  # accumulates into the assigned gradient
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_data_is_a_detached_view_and_assignable():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    d = x.data
    assert not d.requires_grad
    d.array[0] = 5.0
    assert x.tolist() == [5.0, 2.0]
    x.data = sg.tensor([7.0, 8.0])
    assert x.tolist() == [7.0, 8.0] and x.requires_grad


def test_item_tolist_len_iter_and_python_conversions():
    x = sg.tensor([[1.5, 2.0], [3.0, 4.0]])
    assert x.tolist() == torch.tensor([[1.5, 2.0], [3.0, 4.0]]).tolist()
    assert sg.tensor(2.5).item() == 2.5 and isinstance(sg.tensor(3).item(), int)
    assert sg.tensor([True]).item() is True
    assert len(x) == 2 and [row.tolist() for row in x] == [[1.5, 2.0], [3.0, 4.0]]
    assert float(sg.tensor(1.5)) == 1.5 and int(sg.tensor(7)) == 7
    assert [10, 20, 30][sg.tensor(2)] == 30  # __index__
    assert bool(sg.tensor([1.0])) and not bool(sg.tensor(0))


def test_numpy_shares_memory_and_refuses_grad_tensors():
    x = sg.tensor([1.0, 2.0])
    array = x.numpy()
    array[0] = 9.0
    assert x.tolist() == [9.0, 2.0]
    y = sg.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="detach"):
        y.numpy()
    assert y.detach().numpy().tolist() == [1.0]


def test_repr_matches_torch():
    cases = [
        ([1.0, 2.0, 3.0], {}),
        ([1, 2], {}),
        ([True, False], {}),
        (2.5, {}),
        ([[1.0, 2.0], [3.0, 4.0]], {}),
        ([1e-5, 1.0], {}),
        ([0.1, 100.0], {}),
        ([1.0, 2.0], {"requires_grad": True}),
    ]
    for data, kwargs in cases:
        assert repr(sg.tensor(data, **kwargs)) == repr(torch.tensor(data, **kwargs))
    got = repr(sg.tensor([1.0, 2.0], dtype=sg.float64))
    assert got == repr(torch.tensor([1.0, 2.0], dtype=torch.float64)).replace(
        "torch", "scratchgrad"
    )


# ---- conversions ----------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["float", "double", "long", "bool", "half", "int", "bfloat16"])
def test_dtype_conversion_methods_match_torch(method):
    values = [[-1.7, 0.0], [2.5, 3.9]]
    x, xt = sg.tensor(values), torch.tensor(values)
    out, out_t = getattr(x, method)(), getattr(xt, method)()
    assert same_dtype(out, out_t)
    assert_close(out, out_t)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int32", "int64"])
def test_to_dtype_and_gradient_back_in_the_input_dtype(dtype):
    x = sg.tensor([1.25, -2.5], requires_grad=True)
    xt = torch.tensor([1.25, -2.5], requires_grad=True)
    out, out_t = x.to(getattr(sg, dtype)), xt.to(getattr(torch, dtype))
    assert same_dtype(out, out_t)
    assert_close(out, out_t)
    if out_t.is_floating_point():
        (out * 3).sum().backward()
        (out_t * 3).sum().backward()
        assert x.grad.dtype == sg.float32
        assert_close(x.grad, xt.grad)


def test_to_a_tensor_a_device_and_the_same_dtype():
    x = sg.ones(2)
    assert x.to(sg.float32) is x and x.to("cpu") is x
    assert x.to(sg.ones(1, dtype=sg.float64)).dtype == sg.float64
    assert x.to(dtype=sg.float16).dtype == sg.float16
    with pytest.raises(RuntimeError, match="cuda"):
        x.to("cuda")


def test_detach_and_clone():
    x, xt = sg.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True)
    c, ct = x.clone(), xt.clone()
    assert c.requires_grad and not c.is_leaf
    (c * c).sum().backward()
    (ct * ct).sum().backward()
    assert_close(x.grad, xt.grad)
    c.array[0] = 100.0  # a clone owns its memory
    assert x.tolist() == [1.0, 2.0]
    d = x.detach()
    assert not d.requires_grad and np.shares_memory(d.array, x.array)


def test_requires_grad_():
    x = sg.tensor([1.0])
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad_(False)
    assert not x.requires_grad
    y = sg.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError):
        y.requires_grad_(False)  # as torch: only leaves can be switched off


# ---- in-place methods -----------------------------------------------------------------------


def test_zero_fill_copy_match_torch_and_bump_the_version():
    x, xt = sg.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    version = x._version
    assert x.fill_(7.0) is x
    xt.fill_(7.0)
    assert_close(x, xt)
    x.copy_(sg.tensor([1, 2], dtype=sg.int64))  # broadcast and cast, as torch
    xt.copy_(torch.tensor([1, 2]))
    assert_close(x, xt)
    assert x.dtype == sg.float32
    x.copy_(np.array([[5.0, 6.0], [7.0, 8.0]]))
    np.testing.assert_array_equal(x.array, [[5.0, 6.0], [7.0, 8.0]])
    x.zero_()
    assert not x.array.any()
    assert x._version == version + 4


def test_zero_and_fill_on_parameters_under_no_grad():
    w = sg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="no_grad"):
        w.zero_()
    assert w.tolist() == [1.0, 1.0, 1.0]
    with sg.no_grad():
        w.fill_(0.5)
    assert w.tolist() == [0.5, 0.5, 0.5] and w.requires_grad


def test_in_place_division_and_method_forms():
    x, xt = sg.tensor([2.0, 4.0]), torch.tensor([2.0, 4.0])
    x /= 2
    xt /= 2
    x.add_(sg.tensor([1.0, 1.0]), alpha=3)
    xt.add_(torch.tensor([1.0, 1.0]), alpha=3)
    x.sub_(1.0).mul_(2.0).div_(4.0)
    xt.sub_(1.0).mul_(2.0).div_(4.0)
    assert_close(x, xt)


# ---- shape methods --------------------------------------------------------------------------

GRID = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7 - 1

SHAPE_METHODS = {
    "reshape": lambda x: x.reshape(4, 6),
    "reshape_tuple": lambda x: x.reshape((3, -1)),
    "view": lambda x: x.view(-1, 4),
    "flatten": lambda x: x.flatten(),
    "flatten_1": lambda x: x.flatten(1),
    "flatten_0_1": lambda x: x.flatten(0, 1),
    "unsqueeze_0": lambda x: x.unsqueeze(0),
    "unsqueeze_-1": lambda x: x.unsqueeze(-1),
    "unsqueeze_2": lambda x: x.unsqueeze(2),
    "squeeze": lambda x: x.reshape(1, 2, 1, 12).squeeze(),
    "squeeze_dim": lambda x: x.reshape(1, 2, 1, 12).squeeze(2),
    "squeeze_not_1": lambda x: x.squeeze(1),
    "squeeze_dims": lambda x: x.reshape(1, 2, 1, 12).squeeze((0, 2)),
    # sizes and dims as several ints, as PyTorch takes them (each raised TypeError)
    "squeeze_dims_varargs": lambda x: x.reshape(1, 2, 1, 12).squeeze(0, 2),
    "broadcast_to_varargs": lambda x: x[:, :1].broadcast_to(3, 2, 5, 4),
    "broadcast_to_keyword": lambda x: x[:, :1].broadcast_to(size=(2, 5, 4)),
    "tile_varargs": lambda x: x.tile(2, 1),
    "tile_int": lambda x: x.tile(2),
    "tile_keyword": lambda x: x.tile(dims=(2, 1, 1, 1)),
    # PyTorch's keyword names (each raised TypeError: an unexpected keyword)
    "reshape_keyword": lambda x: x.reshape(shape=(4, 6)),
    "view_keyword": lambda x: x.view(size=[6, 4]),
    "permute_keyword": lambda x: x.permute(dims=(2, 0, 1)),
    "expand_keyword": lambda x: x[:, :1].expand(size=(2, 5, 4)),
    "repeat_keyword": lambda x: x.repeat(repeats=(1, 2, 1)),
    "new_zeros_keyword": lambda x: x + x.new_zeros(size=(3, 4)),
    "new_ones_keyword": lambda x: x * x.new_ones(size=(4,)),
    "permute": lambda x: x.permute(2, 0, 1),
    "permute_tuple": lambda x: x.permute((1, 2, 0)),
    "transpose": lambda x: x.transpose(0, 2),
    "transpose_neg": lambda x: x.transpose(-1, -2),
    "expand": lambda x: x[:, :1, :].expand(2, 5, 4),
    "expand_new_dim": lambda x: x[0].expand(3, 3, 4),
    "expand_minus_one": lambda x: x[:, :1].expand(-1, 3, -1),
    "repeat": lambda x: x.repeat(2, 1, 3),
    "repeat_more_dims": lambda x: x[0].repeat(2, 1, 2),
    "chunk": lambda x: x.chunk(2, 2),
    "chunk_uneven": lambda x: x.chunk(2, 1),
    "split": lambda x: x.split(2, dim=2),
    "split_sizes": lambda x: x.split([1, 2], dim=1),
    "index": lambda x: x[1, ::2, -1],
    "index_ellipsis": lambda x: x[..., 1:3],
    "index_none": lambda x: x[None, :, 0],
    "index_list": lambda x: x[:, [0, 2, 2]],
}


@pytest.mark.parametrize("name", SHAPE_METHODS)
def test_shape_methods_match_torch_with_gradients(name):
    check(SHAPE_METHODS[name], GRID)


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.broadcast_to(2, 3, size=(2, 3)),
        lambda x: x.tile(2, dims=(2,)),
        lambda x: x.tile(),
        lambda x: x.squeeze(0, dim=1),
        lambda x: x.expand(2, 3, size=(2, 3)),
        lambda x: x.repeat(1, 2, repeats=(1, 2)),
        lambda x: x.new_zeros(2, size=(2,)),
    ],
)
def test_sizes_given_twice_or_not_at_all_raise_torchs_type_error(call):
    for m in (sg, torch):
        with pytest.raises(TypeError, match=r"broadcast_to|tile|squeeze|expand|repeat|new_zeros"):
            call(m.ones(1, 3))


def test_reshape_view_and_movement_share_no_state_with_the_input_grad():
    x = sg.tensor(GRID, requires_grad=True)
    y = x.reshape(6, 4)
    assert y.shape == (6, 4) and not y.is_leaf
    assert x.flatten().shape == (24,) and sg.tensor(3.0).flatten().shape == (1,)


# ---- reductions to values and indices -------------------------------------------------------

TIES = np.array([[1.0, 5.0, 5.0], [7.0, -2.0, 7.0]])


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_value_form_splits_ties_as_torch(name):
    check(lambda x: getattr(x, name)(), TIES)


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dim, keepdim", [(0, False), (1, False), (-1, True)])
def test_max_min_dim_form_gives_values_and_indices(name, dim, keepdim):
    values = np.array([[1.0, 5.0, 3.0], [7.0, -2.0, 0.5]])
    x, xt = sg.tensor(values), torch.tensor(values)
    out, out_t = getattr(x, name)(dim, keepdim), getattr(xt, name)(dim, keepdim)
    assert_close(out.values, out_t.values)
    np.testing.assert_array_equal(out.indices.array, out_t.indices.numpy())
    assert same_dtype(out.indices, out_t.indices)
    values_, indices_ = out  # unpacks like torch's named tuple
    assert values_ is out.values and indices_ is out.indices
    check(lambda t: getattr(t, name)(dim=dim, keepdim=keepdim).values, values)


def test_max_with_a_tensor_is_the_elementwise_maximum():
    check(lambda a, b: a.max(b), [1.0, 5.0, -3.0], [2.0, 4.0, -3.5])
    check(lambda a, b: a.min(b), [1.0, 5.0, -3.0], [2.0, 4.0, -3.5])


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("kwargs", [{}, {"dim": 0}, {"dim": 1, "keepdim": True}], ids=str)
def test_argmax_argmin_match_torch(name, kwargs):
    values = np.array([[1.0, 5.0, 3.0], [7.0, -2.0, 0.5]])
    out = getattr(sg.tensor(values), name)(**kwargs)
    out_t = getattr(torch.tensor(values), name)(**kwargs)
    assert out.shape == tuple(out_t.shape) and same_dtype(out, out_t)
    np.testing.assert_array_equal(out.array, out_t.numpy())


@pytest.mark.parametrize("name", ["any", "all"])
@pytest.mark.parametrize("kwargs", [{}, {"dim": 0}, {"dim": 1, "keepdim": True}], ids=str)
def test_any_all_match_torch(name, kwargs):
    values = np.array([[True, False, True], [True, True, True]])
    for data in (values, values.astype(np.int64), values.astype(np.float32)):
        out = getattr(sg.tensor(data), name)(**kwargs)
        out_t = getattr(torch.tensor(data), name)(**kwargs)
        assert out.shape == tuple(out_t.shape) and same_dtype(out, out_t)
        np.testing.assert_array_equal(out.array, out_t.numpy())


# ---- Python operators -----------------------------------------------------------------------

A = [[0.5, -1.5, 2.0], [1.25, 3.0, -0.75]]
B = [[1.5, 2.0, -0.5], [0.25, -1.0, 4.0]]
POSITIVE = [[0.5, 1.5, 2.0], [1.25, 3.0, 0.75]]

BINARY = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
}


@pytest.mark.parametrize("name", BINARY)
def test_binary_operators_with_tensors_and_scalars_on_both_sides(name):
    op = BINARY[name]
    check(op, A, B)
    check(lambda x: op(x, 2.5), A)
    check(lambda x: op(2.5, x), A)
    check(lambda x: op(x, 3), A)
    check(lambda x: op(3, x), A)


def test_power_operators():
    check(lambda x, y: x**y, POSITIVE, B)
    check(lambda x: x**2, A)
    check(lambda x: x**0.5, POSITIVE)
    check(lambda x: x**-1, A)
    check(lambda x: 2**x, A)
    check(lambda x: 0.5**x, A)
    check(lambda x: x.pow(3), A)


def test_the_power_minus_one_half_is_rsqrt_as_torchs():
    """x ** -0.5 is PyTorch's rsqrt, 1 / sqrt(x): -inf at -0, where C's pow gives +inf (so
    does ours for a tensor exponent, as PyTorch's); float_power reads it too."""
    for dtype in ("float64", "float32"):
        x = [-0.0, 0.0, 4.0, -1.0, np.inf]
        ours = sg.tensor(x, dtype=getattr(sg, dtype))
        theirs = torch.tensor(x, dtype=getattr(torch, dtype))
        for call in (lambda t: t**-0.5, lambda t: t.float_power(-0.5), lambda t: t ** t[:1]):
            np.testing.assert_array_equal(call(ours).numpy(), call(theirs).numpy())


def test_matmul_operator_and_reflected_matmul():
    check(lambda x, y: x @ y.T, A, B)
    check(lambda x, y: x @ y[0], A, B)  # matrix @ vector
    check(lambda x, y: x[0] @ y[0], A, B)  # vector @ vector
    w = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]])
    x = sg.tensor(A, dtype=sg.float64, requires_grad=True)
    out = np.asarray(A).T @ x  # NumPy on the left defers to Tensor.__rmatmul__
    assert isinstance(out, sg.Tensor)
    np.testing.assert_allclose(out.array, np.asarray(A).T @ np.asarray(A))
    out2 = x @ w
    np.testing.assert_allclose(out2.array, np.asarray(A) @ w)


@pytest.mark.parametrize("other", [2.0, 3, [1.0, 1.0, 1.0]], ids=repr)
def test_matmul_of_a_number_or_a_list_is_a_type_error_as_torch(other):
    """``x @ 2.0`` raised AttributeError and ``[1, 1, 1] @ x`` gave a tensor; PyTorch's
    ``@`` takes tensors only: Python's TypeError, as ``x.matmul(2.0)`` (its own words)."""
    for m in (sg, torch):
        x = m.ones(3)
        with pytest.raises(TypeError, match="unsupported operand type"):
            x @ other
        with pytest.raises(TypeError, match="unsupported operand type"):
            other @ x
        with pytest.raises(TypeError, match=r"matmul\(\): argument 'other' \(position 1\)"):
            x.matmul(other)


def test_unary_operators():
    check(lambda x: -x, A)
    check(lambda x: +x, A)
    check(lambda x: abs(x), A)


def test_numpy_arrays_on_either_side_give_tensors():
    x = sg.tensor(A, dtype=sg.float64, requires_grad=True)
    xt = torch.tensor(A, dtype=torch.float64, requires_grad=True)
    b = np.asarray(B)
    outs = [b * x, b + x, b - x, b / x, x * b, x - b]
    outs_t = [
        torch.from_numpy(b) * xt,
        torch.from_numpy(b) + xt,
        torch.from_numpy(b) - xt,
        torch.from_numpy(b) / xt,
        xt * torch.from_numpy(b),
        xt - torch.from_numpy(b),
    ]
    for out, out_t in zip(outs, outs_t):
        assert isinstance(out, sg.Tensor)
        assert_close(out, out_t)
    sum(o.sum() for o in outs).backward()
    sum(o.sum() for o in outs_t).backward()
    assert_close(x.grad, xt.grad)


@pytest.mark.parametrize(
    "op", [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]
)
def test_comparisons_give_bool_tensors_without_grad(op):
    x = sg.tensor(A, requires_grad=True)
    xt = torch.tensor(A, requires_grad=True)
    for other, other_t in [(sg.tensor(B), torch.tensor(B)), (1.25, 1.25)]:
        out, out_t = op(x, other), op(xt, other_t)
        assert out.dtype == sg.bool and not out.requires_grad
        np.testing.assert_array_equal(out.array, out_t.numpy())
    # A number on the left is reflected: 3 > x runs x < 3.
    assert operator.gt(3, x).tolist() == operator.gt(3, xt).tolist()


@pytest.mark.parametrize("op", [operator.and_, operator.or_, operator.xor])
def test_bitwise_operators(op):
    a, b = [True, False, True, False], [True, True, False, False]
    out, out_t = op(sg.tensor(a), sg.tensor(b)), op(torch.tensor(a), torch.tensor(b))
    np.testing.assert_array_equal(out.array, out_t.numpy())
    m, n = [1, 6, 12], [3, 3, 10]
    np.testing.assert_array_equal(
        op(sg.tensor(m), sg.tensor(n)).array, op(torch.tensor(m), torch.tensor(n)).numpy()
    )
    assert (~sg.tensor(a)).tolist() == (~torch.tensor(a)).tolist()
    assert (~sg.tensor(m)).tolist() == (~torch.tensor(m)).tolist()


def test_floor_division_and_modulo():
    check(lambda x: x // 2, [5.0, -5.0, 7.5], grad=False)
    check(lambda x: x % 2, [5.0, -5.0, 7.5], grad=False)


def test_integer_floor_division_and_modulo_are_exact():
    a, b = [7, -7, 2**40 + 3], [2, 2, -5]
    for op in (operator.floordiv, operator.mod):
        out, expected = op(sg.tensor(a), sg.tensor(b)), op(torch.tensor(a), torch.tensor(b))
        assert out.tolist() == expected.tolist() and str(out.dtype).split(".")[-1] == "int64"
        assert op(sg.tensor(a), 3).tolist() == op(torch.tensor(a), 3).tolist()


def test_remainder_of_floats_has_gradient_one():
    x, xt = (
        sg.tensor([7.5, -7.5], requires_grad=True),
        torch.tensor([7.5, -7.5], requires_grad=True),
    )
    (x % 2).sum().backward()
    (xt % 2).sum().backward()
    assert x.grad.tolist() == xt.grad.tolist() == [1.0, 1.0]


@settings(max_examples=30, deadline=None)
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
    name=st.sampled_from(["add", "sub", "mul", "truediv", "maximum", "minimum"]),
    seed=st.integers(0, 2**16),
)
def test_binary_operators_broadcast_like_torch(shapes, name, seed):
    rng = np.random.default_rng(seed)
    a, b = (rng.uniform(0.5, 2.0, s) * rng.choice([-1, 1], s) for s in shapes.input_shapes)
    op = BINARY.get(name) or (lambda x, y: getattr(x, name)(y))
    check(op, a, b)


@pytest.mark.parametrize("name", ["exp", "log", "sin", "cos", "sqrt", "tanh", "sigmoid"])
@pytest.mark.parametrize("data", [[1, 2], [True, True]], ids=["int64", "bool"])
def test_float_functions_of_int_and_bool_tensors_are_float32(name, data):
    out, out_t = getattr(sg.tensor(data), name)(), getattr(torch.tensor(data), name)()
    assert same_dtype(out, out_t)


# ---- module-level functions -----------------------------------------------------------------


def test_module_functions_match_torch():
    check(lambda x: sg.exp(x) if isinstance(x, sg.Tensor) else torch.exp(x), A)
    for name in ["exp", "tanh", "sin", "cos", "sigmoid", "relu", "abs", "neg", "square"]:
        check(lambda x, n=name: getattr(sg if isinstance(x, sg.Tensor) else torch, n)(x), A)
    for name in ["log", "sqrt", "rsqrt"]:
        check(lambda x, n=name: getattr(sg if isinstance(x, sg.Tensor) else torch, n)(x), POSITIVE)
    for name in ["maximum", "minimum", "matmul", "add", "sub", "mul", "div"]:

        def f(x, y, n=name):
            lib = sg if isinstance(x, sg.Tensor) else torch
            return getattr(lib, n)(x, y.T if n == "matmul" else y)

        check(f, A, B)


def _lib(x):
    return sg if isinstance(x, sg.Tensor) else torch


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_and_stack(dim):
    check(lambda x, y: _lib(x).cat([x, y, x], dim=dim), A, B)
    check(lambda x, y: _lib(x).stack([x, y], dim=dim), A, B)
    check(lambda x, y: _lib(x).stack((x, y)), A, B)


def test_cat_promotes_like_torch():
    out = sg.cat([sg.ones(2, dtype=sg.int64), sg.ones(3, dtype=sg.float64)])
    out_t = torch.cat([torch.ones(2, dtype=torch.int64), torch.ones(3, dtype=torch.float64)])
    assert same_dtype(out, out_t) and out.shape == (5,)


def test_where_with_tensors_and_scalars():
    cond = [[True, False, True], [False, False, True]]

    def f(x, y):
        c = _lib(x).tensor(cond)
        return _lib(x).where(c, x, y) + _lib(x).where(c, 0.0, x) * _lib(x).where(c, y, 2.0)

    check(f, A, B)
    assert sg.where(sg.tensor(cond), sg.tensor(A), 0.0).dtype == sg.float32
    np.testing.assert_array_equal(
        sg.tensor(A).where(sg.tensor(cond), 0.0).array,
        torch.tensor(A).where(torch.tensor(cond), 0.0).numpy(),
    )


def test_more_module_functions():
    def f(x):
        lib = _lib(x)
        return [
            lib.sum(x, 1),
            lib.mean(x),
            lib.amax(x, 0),
            lib.clamp(x, -1.0, 1.0),
            lib.softmax(x, 1),
            lib.log_softmax(x, 0),
            lib.logsumexp(x, 1),
            lib.flatten(x),
            lib.transpose(x, 0, 1),
            lib.unsqueeze(x, 1),
            lib.flip(x, (0,)),
            lib.max(x),
        ]

    check(f, A, tolerance=(1e-9, 1e-12))


# ---- half precision -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_arithmetic_matches_torch(dtype):
    values = [1.5, 2.25, -3.0, 0.1]
    x = sg.tensor(values, dtype=getattr(sg, dtype), requires_grad=True)
    xt = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
    ops = [
        lambda a: a + a,
        lambda a: a * a,
        lambda a: a - 1,
        lambda a: a * 2,
        lambda a: a / 3,
        lambda a: 2 / a,
        lambda a: a**2,
        lambda a: -a,
        lambda a: a.exp(),
        lambda a: a.tanh(),
        lambda a: a.sum(),
    ]
    total, total_t = 0, 0
    for op in ops:
        out, out_t = op(x), op(xt)
        assert same_dtype(out, out_t)
        assert_close(out, out_t, tolerance=(1e-2, 1e-3))
        total, total_t = total + out.sum(), total_t + out_t.sum()
    total.backward()
    total_t.backward()
    assert x.grad.dtype == getattr(sg, dtype)
    assert_close(x.grad, xt.grad, tolerance=(2e-2, 1e-2))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_linear_matches_torch(dtype):
    """A layer's product (a 2-D ``dot``) and its bias's gradient (rows summed) in half
    precision, against PyTorch."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in [(6, 4), (3, 4), (3,)]]
    linear = sg.nn.functional.linear, torch.nn.functional.linear
    check_against_torch(*linear, arrays, dtype)


def test_bfloat16_matmul_stays_bfloat16():
    x = sg.ones(2, 2, dtype=sg.bfloat16)
    assert (x @ x).dtype == sg.bfloat16


REFLECTED = {
    "int // ints": lambda lib: 7 // lib.tensor([2, -3]),
    "int % ints": lambda lib: 7 % lib.tensor([2, -3]),
    "float // floats": lambda lib: 7.5 // lib.tensor([2.0, -3.0]),
    "float % ints": lambda lib: 7.5 % lib.tensor([2, 3]),
    "int // floats": lambda lib: 7 // lib.tensor([2.0, -3.0]),
}


@pytest.mark.parametrize("call", REFLECTED.values(), ids=REFLECTED)
def test_a_number_floor_divided_or_taken_modulo_by_a_tensor_is_pytorchs(call):
    """``7 // x`` and ``7 % x``, with PyTorch's dtypes and signs (they raised a TypeError)."""
    found, expected = call(sg), call(torch)
    assert found.tolist() == expected.tolist() and same_dtype(found, expected)


def test_searchsorted_rounds_a_number_to_the_boundaries_dtype_and_norm_refuses_integers():
    """A number searched in float32 boundaries is rounded to float32 first, as PyTorch's (1 +
    1e-10 is 1.0 there, which goes left of 1.0); ``norm`` of an integer tensor raises as
    PyTorch's, where it returned a float."""
    for lib in (sg, torch):
        assert lib.searchsorted(lib.tensor([1.0, 2.0]), 1.0000000001).item() == 0
    oracle.assert_raises_as_torch(
        lambda lib: lib.tensor([3, 4]).norm(), RuntimeError, "norm: expected a floating point"
    )


@pytest.mark.parametrize(
    "op",
    [lambda x: x >= 5, lambda x: x == 5, lambda x: x.isnan(), lambda x: x.logical_not(),
     lambda x: x.long() // 2, lambda x: x.long() % 2, lambda x: x.long().bitwise_not(),
     lambda x: x.isfinite(), lambda x: x.logical_and(x)],
)  # fmt: skip
def test_0d_results_of_ops_outside_the_graph_are_arrays_as_torchs(op):
    """NumPy's ufuncs make scalars of 0-d operands: np.asarray of the tensor refused them, and
    fill_ wrote into a copy (the tensor kept its value, silently)."""
    ours, theirs = op(sg.tensor(5.0)), op(torch.tensor(5.0))
    np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())
    assert type(ours.numpy()) is np.ndarray
    ours.zero_(), theirs.zero_()
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("convert", [float, int, operator.index])
@pytest.mark.parametrize("values", [[1, 2], []])
def test_python_numbers_of_a_tensor_not_of_one_element_raise_torchs_errors(convert, values):
    with pytest.raises(Exception) as theirs:
        convert(torch.tensor(values, dtype=torch.int64))
    with pytest.raises(theirs.type, match="only"):
        convert(sg.tensor(values, dtype=sg.int64))
