"""Tensor methods that alias or wrap others (tensor.py; ``prelu`` and ``hardshrink`` attached
in nn/root_functions.py) and the layout predicates, against PyTorch's: ``prelu``,
``hardshrink``, the ``unsafe_`` splits, ``new_empty_strided``, ``map_`` and ``map2_``,
``nonzero_static``, ``dim_order``; ``is_sparse`` and the other predicates, ``is_pinned``,
``is_shared`` and ``layout``."""

import numpy as np
import pytest
import torch
from oracle import assert_close

import scratchgrad as sg

LIBS = {"scratchgrad": sg, "torch": torch}
X = np.array([[-1.5, 0.25, 2.0], [0.75, -0.4, 3.0]])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: x.prelu(m.tensor([0.1], dtype=x.dtype)),
        lambda m, x: x.hardshrink(),
        lambda m, x: x.hardshrink(lambd=0.6),
        lambda m, x: m.stack(x.unsafe_chunk(3, 1)),
        lambda m, x: m.cat(m.unsafe_split(x, 1, 0)),
        lambda m, x: m.cat(x.unsafe_split(2, 1), 1),
        lambda m, x: m.cat(m.unsafe_split_with_sizes(x, [1, 2], 1), 1),
        lambda m, x: m.unsafe_chunk(x, 2)[1],
    ],
    ids=["prelu", "hardshrink", "hardshrink_lambd", "unsafe_chunk", "unsafe_split_root",
         "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk_root"],
)  # fmt: skip
def test_aliases_match_torch_with_gradient(call, dtype):
    results = {}
    for lib, m in LIBS.items():
        x = m.tensor(X, dtype=getattr(m, dtype), requires_grad=True)
        out = call(m, x)
        (out * m.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
        results[lib] = out, x.grad
    (out, grad), (expected, expected_grad) = results.values()
    assert_close(out, expected, dtype, "forward")
    assert_close(grad, expected_grad, dtype, "gradient")


@pytest.mark.parametrize(
    "size, stride", [((2, 3), (1, 2)), ((2, 3), (3, 1)), ((4,), (2,)), ((0, 3), (1, 1)), ((), ())]
)
def test_new_empty_strided_matches_torch(size, stride):
    made = [
        m.ones(1).new_empty_strided(size, stride, dtype=m.float64, requires_grad=True)
        for m in (sg, torch)
    ]
    ours, theirs = made
    assert ours.shape == theirs.shape and ours.stride() == theirs.stride()
    assert ours.dtype == sg.float64 and ours.requires_grad
    assert ours.is_contiguous() == theirs.is_contiguous()


def test_new_empty_strided_takes_the_tensors_dtype():
    assert sg.ones(1, dtype=sg.int32).new_empty_strided((2,), (1,)).dtype == sg.int32


@pytest.mark.parametrize(
    "name, call",
    [
        ("map_", lambda m, x, y: x.map_(y, lambda a, b: a * 10 + b)),
        ("map_ of a scalar", lambda m, x, y: x.map_(m.tensor(2.0, dtype=x.dtype), max)),
        (
            "map2_",
            lambda m, x, y: x.map2_(
                y, m.tensor([0.5, -1.0, 2.0], dtype=x.dtype), lambda a, b, c: a * b - c
            ),
        ),
    ],
)
def test_map_matches_torch(name, call):
    outs = []
    for m in (sg, torch):
        x = m.tensor(X)
        out = call(m, x, m.tensor([1.0, 2.0, 3.0], dtype=x.dtype))
        assert out is x
        outs.append(x.tolist())
    assert outs[0] == outs[1], name


def mixed(v, a, b):
    """A map2_ callable whose result tells which entries it read."""
    return v * 10 + a + b * 100


@pytest.mark.parametrize(
    "call",
    [
        lambda a, u: a.map2_(a, u, mixed),  # x is self
        lambda a, u: a.map2_(u, a, mixed),  # y is self
        lambda a, u: a.map2_(a, a, mixed),
        lambda a, u: a[1:].map2_(a[:-1], u[1:], mixed),  # reads the entry just written
        lambda a, u: a[:-1].map2_(a[1:], u[1:], mixed),  # reads one not yet written
        lambda a, u: a[:-1].map2_(u[1:], a[1:], mixed),
        lambda a, u: a[:4].map2_(a[5:], a[4:8], mixed),  # one memory, apart: as without
        lambda a, u: a.map2_(a[0], u[0], mixed),  # one entry, expanded
        lambda a, u: a.view(3, 3).map2_(a.view(3, 3).t(), a.view(3, 3), mixed),
        lambda a, u: a.view(3, 3).t().map2_(a.view(3, 3), u.view(3, 3), mixed),  # row-major
        lambda a, u: a.view(3, 3)[1:].map2_(a.view(3, 3)[:2], a.view(3, 3)[0], mixed),
        lambda a, u: a[2::3].map2_(a[::3], a[1::3], mixed),  # interleaved, apart
        lambda a, u: a[1:].map_(a[:-1], lambda v, w: v * 10 + w),
        lambda a, u: a.view(3, 3)[1:].map_(a.view(3, 3)[1], lambda v, w: v - w),  # row 1 read twice
    ],
)
@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_map_with_inputs_sharing_memory_matches_torch(call, dtype):
    """PyTorch reads the other tensors' entries as it writes (row-major): an input that shares
    memory with the tensor written sees the entries already written."""
    outs = []
    for m in (sg, torch):
        a = m.arange(9, dtype=getattr(m, dtype))
        call(a, m.ones(9, dtype=a.dtype))
        outs.append(a.tolist())
    assert outs[0] == outs[1]


@pytest.mark.parametrize(
    "call, kind, message",
    [
        (lambda m, x: x.map_(m.ones(3, dtype=m.int64), max), TypeError, "map_: expected"),
        (lambda m, x: x.map_(m.ones(3), lambda a, b: "s"), TypeError, "must be real number"),
        (lambda m, x: x.requires_grad_().map_(m.ones(3), max), RuntimeError,
         r"Can't call map_\(\) on Variable that requires grad"),
        (lambda m, x: x.map_(m.ones(3, requires_grad=True), max), RuntimeError,
         r"Can't call map_\(\) on Variable that requires grad"),
        (lambda m, x: x.map_(m.ones(4), max), RuntimeError, ""),
        (lambda m, x: x.map2_(m.ones(3), m.ones(3, requires_grad=True), max), RuntimeError,
         r"Can't call map2_\(\)"),
    ],
)  # fmt: skip
def test_map_errors_match_torch(call, kind, message):
    for m in (sg, torch):
        with pytest.raises(kind, match=message):
            call(m, m.tensor(X, dtype=m.float32))


@pytest.mark.parametrize(
    "values, size, fill",
    [
        ([[0, 1], [2, 0]], 4, -1),
        ([[0, 1], [2, 0]], 1, -1),
        ([[0, 1], [2, 0]], 3, 9),
        ([0.0, 0.0], 2, -1),
        (3.0, 2, -1),
        ([[True, False]], 0, -1),
    ],
)
def test_nonzero_static_matches_torch(values, size, fill):
    outs = [m.nonzero_static(m.tensor(values), size=size, fill_value=fill) for m in (sg, torch)]
    assert outs[0].shape == tuple(outs[1].shape) and outs[0].dtype == sg.int64
    assert outs[0].tolist() == outs[1].tolist()
    assert sg.tensor(values).nonzero_static(size=size, fill_value=fill).tolist() == outs[1].tolist()


def test_nonzero_static_with_a_negative_size_raises_as_torch():
    for m in (sg, torch):
        with pytest.raises(RuntimeError, match="'size' must be an non-negative integer"):
            m.tensor([1, 0]).nonzero_static(size=-1)


@pytest.mark.parametrize(
    "shape, view",
    [
        ((2, 3, 4), lambda t: t),
        ((2, 3, 4), lambda t: t.transpose(0, 2)),
        ((2, 1, 3), lambda t: t.permute(2, 1, 0)),
        ((2, 3, 1, 1), lambda t: t),
        ((1, 3, 4), lambda t: t.expand(5, 3, 4)),
        ((2, 3, 4, 5), lambda t: t.permute(0, 2, 3, 1)),
        ((3, 4), lambda t: t[:, ::2]),
        ((3,), lambda t: t),
        ((), lambda t: t),
        ((4, 1, 5), lambda t: t.transpose(1, 2)),
        ((2, 2), lambda t: t.t()),
        ((1, 2, 1, 3), lambda t: t.permute(3, 2, 1, 0)),
        ((2, 3, 4, 1), lambda t: t.permute(0, 3, 1, 2)),
        ((4, 6), lambda t: t.as_strided((3, 2), (1, 3))),
        ((5,), lambda t: t[None]),  # new dims of size 1: NumPy's stride 0, PyTorch's not
        ((2, 3), lambda t: t[:, None]),
        ((2, 3), lambda t: t[..., None]),
        ((2, 3), lambda t: t[None][:, None]),
        ((5,), lambda t: t.expand(1, 5)),
        ((5,), lambda t: t.expand(3, 5)),  # a broadcast dim keeps its 0
        ((5,), lambda t: t.as_strided((1, 5), (0, 1))),  # as asked
    ],
)
def test_dim_order_matches_torch(shape, view):
    ours, theirs = (view(m.zeros(shape)) for m in (sg, torch))
    assert ours.stride() == theirs.stride()
    assert ours.dim_order() == theirs.dim_order()


SIZE_ONE_VIEWS = {
    "none_then_slice": lambda t: t[None, 1:],  # the None is an unsqueeze before the slice
    "slice_then_none": lambda t: t[1:, None],
    "none_between": lambda t: t[:, None, 1:],
    "nones_around": lambda t: t[None, 1:, None],
    "two_nones": lambda t: t[None, None, 1:],
    "none_then_pick": lambda t: t[None, 0],
    "none_then_step": lambda t: t[None, ::2],
    "none_then_one_row": lambda t: t[None, :1],
    "unsqueeze_then_slice": lambda t: t.unsqueeze(0)[:, 1:],
    "unsqueeze_last": lambda t: t[:, 1:].unsqueeze(2),  # 1, where a view gives another
    "unsqueeze_before_a_stepped_row": lambda t: t[1:2:2].unsqueeze(0),
    "unsqueeze_of_none_then_slice": lambda t: t[None, 1:].unsqueeze(1),
    "none_then_slice_then_transpose": lambda t: t[None, 1:].transpose(0, 1),
    "none_then_slice_then_view": lambda t: t[None, 1:].view(1, 1, -1, t.shape[1]),
    "expand_then_slice": lambda t: t.expand(1, *t.shape)[:, 1:],
    "expand_keeps_a_size_one_dim": lambda t: t[:, :1].expand(2, -1, 1),
    "sliced_broadcast_keeps_zero": lambda t: t[:1].expand(3, -1)[:1],
}


@pytest.mark.parametrize("base", ["3x3", "3x3_t", "4x5", "4x5_t"])
@pytest.mark.parametrize("name", SIZE_ONE_VIEWS)
def test_strides_of_size_one_dims_match_torch(name, base):
    """A dim of size 1 has PyTorch's stride from the op that made it, taken from that op's
    input (x[None, 1:] of a 3x3 x: 9, as unsqueeze(0) of x), whatever comes after."""
    rows, cols = (int(n) for n in base[:3].split("x"))
    outs = []
    for m in (sg, torch):
        x = m.arange(float(rows * cols)).reshape(rows, cols)
        outs.append(SIZE_ONE_VIEWS[name](x.t() if base.endswith("_t") else x))
    ours, theirs = outs
    assert ours.shape == theirs.shape and ours.stride() == theirs.stride()
    assert ours.is_contiguous() == theirs.is_contiguous()
    assert ours.tolist() == theirs.tolist()


def test_expanding_a_zero_dim_tensor_gives_torchs_zero_strides():
    assert sg.tensor(1.0).expand(1, 1).stride() == torch.tensor(1.0).expand(1, 1).stride()


PREDICATES = [
    "is_sparse", "is_sparse_csr", "is_quantized", "is_nested", "is_mkldnn", "is_mps", "is_xpu",
    "is_xla", "is_ipu", "is_mtia", "is_maia", "is_vulkan",
]  # fmt: skip


@pytest.mark.parametrize("name", PREDICATES)
def test_predicates_are_false_as_on_torch_cpu_tensors(name):
    assert getattr(sg.ones(2), name) is getattr(torch.ones(2), name) is False
    with pytest.raises(AttributeError):  # read-only, as PyTorch's
        setattr(sg.ones(2), name, True)


def test_is_pinned_is_shared_and_layout_match_torch():
    for x, t in ((sg.ones(2), torch.ones(2)), (sg.ones(2).pin_memory(), torch.ones(2))):
        assert x.is_pinned() is t.is_pinned() is False
        assert x.is_shared() is t.is_shared() is False
    assert sg.ones(2).layout is sg.strided
    assert repr(sg.strided) == "scratchgrad.strided" and str(torch.strided) == "torch.strided"
    assert isinstance(sg.strided, sg.layout)


@pytest.mark.parametrize("shape", [(0,), (0, 4), (3, 0, 2), (2, 3, 0), (0, 0)])
def test_strides_of_tensors_without_entries_are_torchs(shape):
    """NumPy zeroes an empty array's strides; PyTorch gives row-major ones."""
    assert sg.zeros(*shape).stride() == torch.zeros(*shape).stride()
    assert sg.zeros(*shape).stride(-1) == torch.zeros(*shape).stride(-1)
