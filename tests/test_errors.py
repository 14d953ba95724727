"""Errors: each names the operation and the shapes or dtypes involved, is raised where PyTorch
raises one, and is raised before anything changes (values, versions, gradients, the graph).
"""

import operator
import re

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis.extra import numpy as hnp

import scratchgrad as sg

torch = pytest.importorskip("torch")

SHAPE_ERROR = RuntimeError  # as PyTorch


# ---- shape errors name the op and both shapes -----------------------------------------------


@pytest.mark.parametrize(
    "name, f",
    [
        ("mul", lambda x, y: x * y),
        ("add", lambda x, y: x + y),
        ("sub", lambda x, y: x - y),
        ("div", lambda x, y: x / y),
        ("pow", lambda x, y: x**y),
        ("maximum", lambda x, y: x.maximum(y)),
    ],
)
def test_broadcast_errors_name_the_op_and_both_shapes(name, f):
    with pytest.raises(SHAPE_ERROR, match=rf"{name}.*\(2, 3\).*\(4,\)"):
        f(sg.ones(2, 3), sg.ones(4))
    with pytest.raises(RuntimeError):
        f(torch.ones(2, 3), torch.ones(4))


@pytest.mark.parametrize(
    "name, f",
    [
        ("equal", lambda x, y: x == y),
        ("less", lambda x, y: x < y),
        ("bitwise_or", lambda x, y: x.int() | y.int()),
        ("logical_xor", lambda x, y: sg.logical_xor(x, y)),
        ("floor_divide", lambda x, y: x.int() // y.int()),
    ],
)
def test_ops_that_are_no_function_raise_runtime_error_for_shapes_that_do_not_broadcast(name, f):
    """As arithmetic does, and PyTorch: comparisons, bitwise and integer ops raised NumPy's
    ValueError."""
    with pytest.raises(RuntimeError, match=rf"{name}: shapes \(2,\), \(3,\)"):
        f(sg.ones(2), sg.ones(3))


def test_matmul_shape_error_message():
    with pytest.raises(
        SHAPE_ERROR, match=r"^matmul: shapes \(3, 4\) and \(5, 2\) are not aligned: 4 != 5$"
    ):
        sg.ones(3, 4) @ sg.ones(5, 2)
    with pytest.raises(SHAPE_ERROR, match=r"matmul.*not aligned"):
        sg.ones(2, 3, 4).matmul(sg.ones(3))
    with pytest.raises(RuntimeError, match="matmul.*at least 1 dim"):
        sg.ones(3) @ sg.tensor(2.0)


@pytest.mark.parametrize(
    "name, f, shapes",
    [
        ("matmul", lambda lib, x, y: x @ y, [(2, 3), (3, 2)]),
        ("matmul", lambda lib, x, y: x @ y, [(4, 2, 3), (3, 2)]),
        ("mm", lambda lib, x, y: x.mm(y), [(2, 3), (3, 2)]),
        ("bmm", lambda lib, x, y: lib.bmm(x, y), [(4, 2, 3), (4, 3, 2)]),
        ("mv", lambda lib, x, y: x.mv(y), [(2, 3), (3,)]),
        ("dot", lambda lib, x, y: x.dot(y), [(3,), (3,)]),
        ("linear", lambda lib, x, y: lib.nn.functional.linear(x, y), [(4, 3), (2, 3)]),
    ],
)
@pytest.mark.parametrize(
    "dtypes", [("float32", "float64"), ("float64", "float32"), ("float32", "int64")]
)
def test_matrix_products_of_two_dtypes_raise_as_pytorch(name, f, shapes, dtypes):
    """PyTorch's matrix products take one dtype: a float64 batch into a float32 model is an
    error there, not a float64 result."""
    for lib in (torch, sg):
        x, y = (lib.ones(s, dtype=getattr(lib, d)) for s, d in zip(shapes, dtypes))
        message = rf"^{name}: .*same dtype.*{dtypes[0]}.*{dtypes[1]}" if lib is sg else None
        with pytest.raises(RuntimeError, match=message):
            f(lib, x, y)


@pytest.mark.parametrize(
    "shapes, kernel",
    [
        ([(2, 3), (3, 2)], "addmm_impl_cpu_"),
        ([(3,), (3, 2)], "addmm_impl_cpu_"),
        ([(4, 2, 3), (3, 2)], "addmm_impl_cpu_"),
        ([(2, 3), (3,)], "addmv_impl_cpu"),
        ([(3,), (3,)], "dot"),
        ([(2, 3), (4, 3, 2)], "bmm"),
    ],
)
def test_matrix_products_of_bools_raise_as_pytorch(shapes, kernel):
    # NumPy's bool product is an AND-OR one; PyTorch has no bool kernel for any of them
    for lib in (torch, sg):
        x, y = (lib.ones(s, dtype=lib.bool) for s in shapes)
        for product in (operator.matmul, lib.matmul):
            with pytest.raises(NotImplementedError, match=f'^"{kernel}" not implemented'):
                product(x, y)
        empty = lib.ones(0, 3, dtype=lib.bool)  # no kernel runs: an empty product
        assert tuple(lib.matmul(empty, lib.ones(3, 2, dtype=lib.bool)).shape) == (0, 2)


def test_linear_of_bools_raises_as_pytorch():
    for lib in (torch, sg):
        with pytest.raises(NotImplementedError, match='^"addmm_impl_cpu_" not implemented'):
            lib.nn.functional.linear(lib.ones(4, 3).bool(), lib.ones(2, 3).bool())


def test_linear_bias_of_another_dtype_raises_as_pytorch():
    for lib in (torch, sg):
        with pytest.raises(RuntimeError, match=None if lib is torch else "^linear: .*same dtype"):
            lib.nn.functional.linear(lib.ones(4, 3), lib.ones(2, 3), lib.ones(2, dtype=lib.float64))


def _f(lib, *shape_dtypes):
    """Tensors of these (shape, dtype name) pairs in ``lib``, the same values in both libraries
    (in (0.1, 1.1): a norm's statistics, probabilities and distances need more than ones)."""
    rng = np.random.default_rng(0)
    return [lib.tensor(rng.uniform(0.1, 1.1, s), dtype=getattr(lib, d)) for s, d in shape_dtypes]


# Each op family that PyTorch's kernels run in one dtype: ``f(lib, a, b)`` gives the first
# tensor dtype ``a`` and the other (a weight, a second operand) ``b``.
TWO_DTYPE_OPS = [
    ("einsum", lambda lib, a, b: lib.einsum("ij,jk->ik", *_f(lib, ((2, 3), a), ((3, 4), b)))),
    ("cdist", lambda lib, a, b: lib.cdist(*_f(lib, ((2, 3), a), ((4, 3), b)))),
    ("tensordot", lambda lib, a, b: lib.tensordot(*_f(lib, ((2, 3), a), ((3, 4), b)), dims=1)),
    ("addmm", lambda lib, a, b: lib.addmm(*_f(lib, ((2, 4), a), ((2, 3), b), ((3, 4), b)))),
    (
        "baddbmm",
        lambda lib, a, b: lib.baddbmm(*_f(lib, ((1, 2, 4), a), ((1, 2, 3), b), ((1, 3, 4), b))),
    ),
    ("addbmm", lambda lib, a, b: lib.addbmm(*_f(lib, ((2, 4), a), ((1, 2, 3), b), ((1, 3, 4), b)))),
    ("addmv", lambda lib, a, b: lib.addmv(*_f(lib, ((2,), a), ((2, 3), b), ((3,), b)))),
    (
        "bilinear",
        lambda lib, a, b: lib.nn.functional.bilinear(
            *_f(lib, ((2, 3), a), ((2, 4), a), ((5, 3, 4), b))
        ),
    ),
    (
        "layer_norm",
        lambda lib, a, b: lib.nn.functional.layer_norm(
            *_f(lib, ((4, 3), a)), (3,), *_f(lib, ((3,), b))
        ),
    ),
    (
        "layer_norm",
        lambda lib, a, b: lib.nn.LayerNorm(3, dtype=getattr(lib, b))(*_f(lib, ((4, 3), a))),
    ),
    (
        "batch_norm",
        lambda lib, a, b: lib.nn.BatchNorm1d(3, dtype=getattr(lib, b))(*_f(lib, ((4, 3), a))),
    ),
    (
        "batch_norm",
        lambda lib, a, b: lib.nn.functional.batch_norm(*_f(lib, ((4, 3), a), ((3,), b), ((3,), b))),
    ),
    (
        "group_norm",
        lambda lib, a, b: lib.nn.GroupNorm(2, 4, dtype=getattr(lib, b))(*_f(lib, ((3, 4), a))),
    ),
    (
        "instance_norm",
        lambda lib, a, b: lib.nn.InstanceNorm1d(3, affine=True, dtype=getattr(lib, b))(
            *_f(lib, ((2, 3, 5), a))
        ),
    ),
    (
        "scaled_dot_product_attention",
        lambda lib, a, b: lib.nn.functional.scaled_dot_product_attention(
            *_f(lib, ((1, 2, 3), a), ((1, 2, 3), a), ((1, 2, 3), b))
        ),
    ),
    (
        "nll_loss",
        lambda lib, a, b: lib.nn.functional.nll_loss(
            *_f(lib, ((2, 3), a)), lib.tensor([0, 2]), *_f(lib, ((3,), b))
        ),
    ),
    (
        "cross_entropy",
        lambda lib, a, b: lib.nn.CrossEntropyLoss(*_f(lib, ((3,), b)))(
            *_f(lib, ((2, 3), a)), lib.tensor([0, 2])
        ),
    ),
    (
        "multi_margin_loss",
        lambda lib, a, b: lib.nn.functional.multi_margin_loss(
            *_f(lib, ((2, 3), a)), lib.tensor([0, 2]), weight=_f(lib, ((3,), b))[0]
        ),
    ),
    (
        "binary_cross_entropy",
        lambda lib, a, b: lib.nn.functional.binary_cross_entropy(
            *(t / 2 for t in _f(lib, ((2, 3), a), ((2, 3), b)))
        ),
    ),
]


@pytest.mark.parametrize("name, f", TWO_DTYPE_OPS)
@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("float64", "float32")])
def test_ops_of_one_dtype_raise_as_pytorch_for_two(name, f, dtypes):
    """A float64 batch into a float32 model (or float64 weights for a float32 batch) is an
    error in PyTorch's kernels, not a promoted result; scratchgrad names the op and both."""
    with pytest.raises(RuntimeError):
        f(torch, *dtypes)
    with pytest.raises(RuntimeError, match=rf"^{name}: .*{dtypes[0]}.*{dtypes[1]}"):
        f(sg, *dtypes)


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("float64", "float32")])
def test_a_recurrent_layer_refuses_an_input_of_another_dtype_as_pytorch(mode, dtypes):
    for lib in (torch, sg):
        message = rf"RNN input dtype \({lib.__name__}\.{dtypes[0]}\) does not match weight dtype"
        layer = getattr(lib.nn, mode)(3, 4, dtype=getattr(lib, dtypes[1]))
        with pytest.raises(ValueError, match=message):
            layer(*_f(lib, ((2, 1, 3), dtypes[0])))


# The same families where PyTorch does promote (or keeps the input's dtype): left as they are.
PROMOTING_OPS = {
    "einsum": lambda lib, a, b: lib.einsum("ij,ij->ij", *_f(lib, ((2, 3), a), ((2, 3), b))),
    "addr": lambda lib, a, b: lib.addr(*_f(lib, ((2, 3), a), ((2,), b), ((3,), b))),
    # NOTE: a float64 input only: PyTorch's rms_norm and binary_cross_entropy keep a float32
    # input's dtype against float64 weights, where scratchgrad promotes (left for now)
    "rms_norm": lambda lib, a, b: lib.nn.functional.rms_norm(
        *_f(lib, ((4, 3), "float64")), (3,), *_f(lib, ((3,), "float32"))
    ),
    "instance_norm": lambda lib, a, b: lib.nn.functional.instance_norm(
        *_f(lib, ((2, 3, 5), a), ((3,), b), ((3,), b))
    ),
    "binary_cross_entropy": lambda lib, a, b: lib.nn.functional.binary_cross_entropy(
        *(t / 2 for t in _f(lib, ((2, 3), "float64"), ((2, 3), "float64"))),
        weight=_f(lib, ((3,), "float32"))[0],
    ),
    "cross_entropy": lambda lib, a, b: lib.nn.functional.cross_entropy(
        *_f(lib, ((2, 3), a), ((2, 3), a)), weight=_f(lib, ((3,), b))[0]
    ),
    "scaled_dot_product_attention": lambda lib, a, b: (
        lib.nn.functional.scaled_dot_product_attention(
            *_f(lib, ((1, 2, 3), "float64"), ((1, 2, 3), "float64"), ((1, 2, 3), "float64")),
            attn_mask=_f(lib, ((2, 2), "float32"))[0],
        )
    ),
}


@pytest.mark.parametrize("f", PROMOTING_OPS.values(), ids=PROMOTING_OPS)
@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("float64", "float32")])
def test_ops_that_pytorch_lets_promote_still_promote(f, dtypes):
    expected, out = f(torch, *dtypes), f(sg, *dtypes)
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-5)


# einsum of operands of several dtypes: PyTorch takes them pairwise, left to right, summing a
# letter held by both of a pair with bmm (one dtype; none for bool) and multiplying the others
# with mul (which promotes); a lone operand's sum gives int64 for integers
EINSUM_DTYPES = [
    ("i,i,i->", ["float32", "float64", "float64"], [(2,)] * 3),  # mul promotes, then bmm
    ("i,i,i->", ["float32", "float32", "float64"], [(2,)] * 3),  # bmm of float32 and float64
    ("i,i,i->", ["float16", "float32", "float32"], [(2,)] * 3),
    ("i,i,i->", ["float32", "float64", "float32"], [(1,)] * 3),  # dims of 1 broadcast: mul
    ("ij,jk,kl->il", ["float32", "float64", "float32"], [(2, 2)] * 3),
    ("ij,j,j->i", ["float64", "float32", "float32"], [(2, 3), (3,), (3,)]),
    ("bij,bjk,bk->bi", ["float64", "float64", "float32"], [(2, 2, 3), (2, 3, 2), (2, 2)]),
    ("i,j,k->ijk", ["float32", "float64", "float32"], [(2,), (3,), (2,)]),  # no sum: mul only
    ("ij,jk,k->i", ["int32", "int32", "int64"], [(2, 3), (3, 2), (2,)]),
    ("ij,k->", ["int32", "int32"], [(2, 3), (2,)]),  # each summed alone first: int64
    ("i,i,i->", ["bool"] * 3, [(2,)] * 3),  # bmm has no bool kernel
    ("i->", ["int32"], [(3,)]),
    ("ij->i", ["bool"], [(2, 3)]),
    ("ii->i", ["int32"], [(2, 2)]),  # a diagonal, no sum
]


@pytest.mark.parametrize("equation, dtypes, shapes", EINSUM_DTYPES, ids=str)
def test_einsum_of_several_dtypes_promotes_or_raises_as_pytorch(equation, dtypes, shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.integers(0, 3, s) for s in shapes]
    results = []
    for lib in (torch, sg):
        operands = [lib.tensor(a).to(getattr(lib, d)) for a, d in zip(arrays, dtypes)]
        try:
            results.append(lib.einsum(equation, *operands))
        except (RuntimeError, NotImplementedError) as error:
            results.append(error)
    theirs, ours = results
    if isinstance(theirs, Exception):
        assert type(ours) is type(theirs) and str(ours).startswith("einsum: ")
    else:
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-3)


def test_under_autocast_the_one_dtype_checks_come_after_the_casts():
    """bfloat16 activations meet float32 weights in a norm, cdist, a loss and a GRU as in
    PyTorch's autocast; a float64 operand (not cast) is still refused by einsum and addmm."""
    cases = [
        lambda lib: lib.nn.functional.layer_norm(
            *_f(lib, ((4, 3), "bfloat16")), (3,), *_f(lib, ((3,), "float32"))
        ),
        lambda lib: lib.cdist(*_f(lib, ((2, 3), "bfloat16"), ((4, 3), "float32"))),
        lambda lib: lib.nn.functional.nll_loss(
            *_f(lib, ((2, 3), "bfloat16")), lib.tensor([0, 2]), *_f(lib, ((3,), "float32"))
        ),
        lambda lib: lib.nn.GRU(3, 4)(*_f(lib, ((2, 1, 3), "bfloat16")))[0],
        lambda lib: lib.einsum("ij,jk->ik", *_f(lib, ((2, 3), "float32"), ((3, 4), "float32"))),
    ]
    for f in cases:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            expected = f(torch)
        with sg.autocast("cpu", dtype=sg.bfloat16):
            out = f(sg)
        assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    for lib in (torch, sg):
        with lib.autocast("cpu", dtype=lib.bfloat16), pytest.raises(RuntimeError):
            lib.einsum("ij,jk->ik", *_f(lib, ((2, 3), "float64"), ((3, 4), "float32")))
        with lib.autocast("cpu", dtype=lib.bfloat16), pytest.raises(RuntimeError):
            lib.addmm(*_f(lib, ((2, 4), "float64"), ((2, 3), "float32"), ((3, 4), "float32")))


@settings(max_examples=25, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3))
def test_shapes_that_do_not_broadcast_fail_as_in_torch(shapes):
    a, b = shapes.input_shapes
    # Make the pair incompatible by changing one side's last dim to a size that cannot match.
    b = (*b[:-1], max(a[-1], b[-1]) + 2)
    assume(a[-1] != 1)
    with pytest.raises(RuntimeError):
        torch.ones(a) + torch.ones(b)
    with pytest.raises(SHAPE_ERROR, match=rf"add.*{re.escape(str(a))}.*{re.escape(str(b))}"):
        sg.ones(a) + sg.ones(b)


@pytest.mark.parametrize(
    "pattern, f",
    [
        (r"reshape: shapes \(2, 3\)", lambda: sg.ones(2, 3).reshape(4)),
        (r"cat: shapes \(2, 3\), \(2, 4\)", lambda: sg.cat([sg.ones(2, 3), sg.ones(2, 4)])),
        (r"stack: .*\(2,\), \(3,\)", lambda: sg.stack([sg.ones(2), sg.ones(3)])),
        (r"expand: shapes \(2, 3\)", lambda: sg.ones(2, 3).expand(4, 3)),
        (r"split: sizes \[1, 1\] do not add up to 3", lambda: sg.ones(3).split([1, 1])),
        (r"permute: \(0, 0\) .*\(2, 3\)", lambda: sg.ones(2, 3).permute(0, 0)),
    ],
)
def test_movement_errors_name_the_op_and_the_shapes(pattern, f):
    with pytest.raises(SHAPE_ERROR, match=f"^{pattern}"):
        f()


@pytest.mark.parametrize(
    "f",
    [
        lambda: sg.ones(2, 3) * sg.ones(4),
        lambda: sg.ones(3, 4) @ sg.ones(5, 2),
        lambda: sg.ones(2, 3).reshape(4),
        lambda: sg.cat([sg.ones(2, 3), sg.ones(2, 4)]),
        lambda: sg.ones(2, 3).expand(4, 3),
    ],
)
def test_shape_errors_are_runtime_errors_as_in_torch(f):
    with pytest.raises(RuntimeError):
        f()


def test_dim_out_of_range_is_an_index_error():
    for f in (lambda t: t.sum(2), lambda t: t.squeeze(4), lambda t: t.mean(-3)):
        with pytest.raises(IndexError, match="Dimension out of range"):
            f(sg.ones(2, 3))


@pytest.mark.parametrize(
    "f",
    [
        lambda t: t.unsqueeze(5),
        lambda t: t.unsqueeze(-4),
        lambda t: t.flatten(3),
        lambda t: t.transpose(0, 3),
    ],
)
def test_out_of_range_dims_raise_and_name_the_dim(f):
    with pytest.raises(IndexError):
        f(torch.ones(2, 3))
    with pytest.raises(IndexError, match="Dimension out of range"):
        f(sg.ones(2, 3))


def test_value_errors_of_single_tensors():
    with pytest.raises(RuntimeError, match="item.*3 elements"):
        sg.ones(3).item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(sg.ones(3))
    with pytest.raises(IndexError, match="out of bounds"):
        sg.ones(3)[5]
    with pytest.raises(TypeError, match="0-d"):
        len(sg.tensor(1.0))
    with pytest.raises(RuntimeError, match="mean.*int64"):
        sg.tensor([1, 2]).mean()


# ---- dtype errors say which dtype -----------------------------------------------------------


def test_a_float_index_tensor_is_refused_and_named():
    with pytest.raises(IndexError, match="float32"):
        sg.ones(3)[sg.tensor([0.0, 1.0])]
    with pytest.raises(IndexError):
        torch.ones(3)[torch.tensor([0.0, 1.0])]
    with pytest.raises(TypeError, match="integer"):
        [1, 2, 3][sg.tensor(1.0)]


@pytest.mark.parametrize(
    "make",
    [
        lambda: sg.tensor([1, 2], requires_grad=True),
        lambda: sg.zeros(2, dtype=sg.int64, requires_grad=True),
        lambda: sg.tensor([True], requires_grad=True),
        lambda: sg.tensor([1, 2]).requires_grad_(),
    ],
)
def test_integer_and_bool_tensors_cannot_require_grad(make):
    with pytest.raises(RuntimeError, match="int64|bool"):
        make()
    with pytest.raises(RuntimeError):
        torch.tensor([1, 2], requires_grad=True)


def test_where_needs_a_bool_condition():
    with pytest.raises((TypeError, RuntimeError), match="bool.*int64"):
        sg.where(sg.tensor([1, 0]), sg.ones(2), 0.0)
    with pytest.raises(TypeError):
        torch.where(5, torch.ones(2), 0.0)
    with pytest.raises(TypeError, match=r"where\(\): argument 'condition' .* not int"):
        sg.where(5, sg.ones(2), 0.0)


def test_a_string_is_not_tensor_data():
    with pytest.raises(TypeError, match="str"):
        sg.ones(2) + "a"


# ---- backward errors ------------------------------------------------------------------------


def test_backward_on_a_non_scalar_without_gradient_says_so():
    x = sg.ones(2, 3, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=r"scalar outputs.*\(2, 3\)"):
        y.backward()
    with pytest.raises(RuntimeError, match="scalar outputs"):
        (torch.ones(2, 3, requires_grad=True) * 2).backward()
    assert x.grad is None
    y.backward(sg.ones(2, 3))  # the graph is intact: nothing was freed by the failed call
    assert x.grad.tolist() == [[2.0] * 3] * 2


def test_a_gradient_of_the_wrong_dtype_or_shape_says_which():
    """(A gradient of another real dtype is cast, as PyTorch's: tests/autograd/test_engine.py.)"""
    x = sg.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="complex128.*float32"):
        y.backward(sg.ones(2, dtype=sg.complex128))
    with pytest.raises(RuntimeError, match=r"\(3,\).*\(2,\)"):
        y.backward(sg.ones(3))
    with pytest.raises(TypeError, match="Tensor"):
        y.backward(np.ones(2, dtype=np.float32))
    assert x.grad is None
    y.backward(sg.ones(2))
    assert x.grad.tolist() == [2.0, 2.0]


def test_a_failed_backward_leaves_existing_grads_untouched():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    w = sg.tensor([3.0, 4.0], requires_grad=True)
    x.grad = sg.tensor([10.0, 20.0])
    a = x.exp()
    out = (a * w).sum() + (x * w).sum()
    a += 1  # Mul saved a: backward must fail when it reaches that node
    with pytest.raises(RuntimeError, match="in-place"):
        out.backward()
    assert x.grad.tolist() == [10.0, 20.0]
    assert w.grad is None


def test_a_failing_custom_backward_leaves_grads_untouched():
    class Broken(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            raise ValueError("broken backward")

    x = sg.tensor([1.0], requires_grad=True)
    y = sg.tensor([1.0], requires_grad=True)
    out = (Broken.apply(x) + y * 3).sum()
    with pytest.raises(ValueError, match="broken"):
        out.backward()
    assert x.grad is None and y.grad is None


# ---- failed in-place operations change nothing ----------------------------------------------


def _state(t):
    return t.array.copy(), t._version, t.grad_fn, t.requires_grad


def _assert_unchanged(t, before):
    array, version, grad_fn, requires_grad = before
    np.testing.assert_array_equal(t.array, array)
    assert t._version == version and t.grad_fn is grad_fn and t.requires_grad == requires_grad


@pytest.mark.parametrize(
    "op, other",
    [
        ("__iadd__", lambda: sg.ones(4)),
        ("__imul__", lambda: sg.ones(2, 3)),
        ("__isub__", lambda: np.ones(5)),
    ],
)
@pytest.mark.parametrize("mode", ["no_grad", "graph"])
def test_a_failed_in_place_shape_mismatch_changes_nothing(op, other, mode):
    if mode == "no_grad":
        t = sg.tensor([1.0, 2.0, 3.0])
        before = _state(t)
        with pytest.raises(SHAPE_ERROR, match=r"\(3,\)"):
            getattr(t, op)(other())
    else:
        x = sg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        t = x * 1
        before = _state(t)
        with pytest.raises(SHAPE_ERROR, match=r"\(3,\)"):
            getattr(t, op)(other())
    _assert_unchanged(t, before)


def test_a_failed_in_place_cast_changes_nothing():
    t = sg.tensor([1, 2, 3])
    before = _state(t)
    with pytest.raises(RuntimeError, match="float64.*int64"):
        t += 1.5
    with pytest.raises(RuntimeError):
        torch.tensor([1, 2, 3]).add_(1.5)
    _assert_unchanged(t, before)


def test_a_refused_in_place_on_a_parameter_changes_nothing():
    w = sg.tensor([1.0, 2.0], requires_grad=True)
    before = _state(w)
    for f in (
        lambda: w.__iadd__(1.0),
        lambda: w.mul_(2.0),
        lambda: w.fill_(0.0),
        lambda: w.zero_(),
        lambda: w.copy_(sg.zeros(2)),
    ):
        with pytest.raises(RuntimeError, match="no_grad"):
            f()
        _assert_unchanged(w, before)
    with pytest.raises(RuntimeError, match="no_grad"):
        w[0] = 5.0
    _assert_unchanged(w, before)


def test_a_failed_copy_changes_nothing():
    t = sg.tensor([1.0, 2.0, 3.0])
    before = _state(t)
    with pytest.raises(RuntimeError, match=r"copy_.*\(2,\).*\(3,\)"):
        t.copy_(sg.ones(2))
    _assert_unchanged(t, before)


def test_updating_a_parameter_before_backward_is_caught():
    w = sg.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * w).sum()  # (w times a constant would not keep w: its gradient needs no w)
    with sg.no_grad():
        w -= 0.1  # an optimizer step before backward: Mul saved w
    with pytest.raises(RuntimeError, match="in-place"):
        loss.backward()
    assert w.grad is None
