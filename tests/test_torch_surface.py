"""The small pieces of PyTorch's surface that programs touch first, against PyTorch: f-string
formatting, new_* factories, typed constructors, inference_mode, stable sorting, einsum's
errors, SmoothL1Loss."""

import numpy as np
import pytest
import torch
from oracle import check_against_torch

import scratchgrad as sg


@pytest.mark.parametrize("spec", ["", ".4f", "8.2e", ">10"])
def test_format_a_0d_tensor_as_its_number(spec):
    for value in (1.23456, 7):
        assert format(sg.tensor(value), spec) == format(torch.tensor(value), spec)
    assert f"{sg.tensor([1.0, 2.0])}" == str(sg.tensor([1.0, 2.0]))
    with pytest.raises(TypeError):  # as PyTorch: a spec only for a 0-d tensor
        f"{sg.tensor([1.0, 2.0]):.2f}"


@pytest.mark.parametrize(
    "make",
    [
        lambda x, m: x.new_zeros(2, 3),
        lambda x, m: x.new_ones((2,), dtype=m.int64),
        lambda x, m: x.new_full((2, 2), 7),
        lambda x, m: x.new_tensor([1, 2]),
        lambda x, m: x.new_zeros(2, requires_grad=True),
    ],
)
def test_new_factories_take_dtype_from_the_tensor(make):
    ours, theirs = make(sg.ones(1, dtype=sg.float64), sg), make(torch.ones(1).double(), torch)
    assert (
        ours.shape == tuple(theirs.shape)
        and str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    )
    assert ours.requires_grad == theirs.requires_grad
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    assert sg.ones(1).new_empty(4).shape == (4,)


def test_typed_constructors_as_torch():
    for name in ("FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "BoolTensor"):
        ours, theirs = getattr(sg, name)([1, 0, 2]), getattr(torch, name)([1, 0, 2])
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        assert getattr(sg, name)(2, 3).shape == tuple(getattr(torch, name)(2, 3).shape)
        assert isinstance(ours, getattr(sg, name)) and isinstance(ours, sg.Tensor)
    assert sg.FloatTensor((2, 3)).tolist() == torch.FloatTensor((2, 3)).tolist() == [2.0, 3.0]
    assert not isinstance(sg.zeros(2), sg.LongTensor)


def test_inference_mode_is_a_context_manager_and_a_decorator():
    x = sg.ones(2, requires_grad=True)
    with sg.inference_mode():
        assert not (x * 2).requires_grad
    with sg.inference_mode(False):
        assert (x * 2).requires_grad

    @sg.inference_mode()
    def predict(x):
        return x * 2

    @sg.inference_mode
    def predict_bare(x):
        return x * 2

    assert not predict(x).requires_grad and not predict_bare(x).requires_grad
    assert sg.is_grad_enabled()
    assert sg.autograd.inference_mode is sg.inference_mode  # torch.autograd's spelling too
    assert torch.autograd.inference_mode is torch.inference_mode


def test_inference_mode_nests_with_grad_modes_as_torch():
    """(is_inference_mode_enabled, is_grad_enabled) at each depth; inference_mode(False) turns
    grad mode on even inside no_grad (it left it off)."""

    def modes(m):
        seen = [(m.is_inference_mode_enabled(), m.is_grad_enabled())]
        with m.inference_mode():
            seen.append((m.is_inference_mode_enabled(), m.is_grad_enabled()))
            for inner in (m.inference_mode(False), m.enable_grad(), m.no_grad()):
                with inner:
                    seen.append((m.is_inference_mode_enabled(), m.is_grad_enabled()))
        with m.no_grad(), m.inference_mode(False):
            seen.append((m.is_inference_mode_enabled(), m.is_grad_enabled()))
        seen.append(m.inference_mode(m.is_inference_mode_enabled)())
        seen.append(m.inference_mode()(m.is_inference_mode_enabled)())
        return seen + [(m.is_inference_mode_enabled(), m.is_grad_enabled())]

    assert modes(sg) == modes(torch)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_stable_and_puts_nan_where_torch_does(descending):
    values = [2.0, float("nan"), 1.0, 2.0, -1.0, 1.0, float("nan")] * 4
    ours = sg.tensor(values).sort(descending=descending, stable=True)
    theirs = torch.tensor(values).sort(descending=descending, stable=True)
    assert ours.indices.tolist() == theirs.indices.tolist()
    np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
    ints = [3, 1, 3, 0, 1] * 5
    assert (
        sg.argsort(sg.tensor(ints), descending=descending, stable=True).tolist()
        == torch.argsort(torch.tensor(ints), descending=descending, stable=True).tolist()
    )


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize(
    "shape, high, dtype",
    [
        ((40,), 3, "float32"),  # past 16 entries std::sort partitions: not stable
        ((3, 50), 4, "int64"),
        ((33, 2), 2, "float64"),  # along dim 0 too
        ((40000,), 5, "int64"),  # a long 1-d integer tensor: PyTorch's radix sort, stable up
        ((2000,), 7, "float16"),
    ],
)
def test_unstable_sort_orders_ties_as_torch(shape, high, dtype, descending):
    data = np.random.default_rng(0).integers(0, high, shape)
    for dim in range(len(shape)):
        ours, theirs = (
            m.tensor(data).to(getattr(m, dtype)).sort(dim=dim, descending=descending, stable=False)
            for m in (sg, torch)
        )
        assert ours.indices.tolist() == theirs.indices.tolist()
        assert sg.tensor(data).argsort(dim, descending).tolist() == (
            torch.tensor(data).argsort(dim, descending=descending).tolist()
        )


def test_integer_cumsum_gives_int64_as_torch():
    for data in ([True, False, True], [1, 2, 3]):
        ours, theirs = sg.tensor(data).cumsum(0), torch.tensor(data).cumsum(0)
        assert (
            ours.tolist() == theirs.tolist()
            and str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        )


@pytest.mark.parametrize(
    "equation, shapes",
    [("ij,jk->ik", [(2, 3), (4, 5)]), ("ij,jk", [(2, 3)]), ("ii->i", [(2, 3)])],
)
def test_einsum_refuses_what_it_cannot_do(equation, shapes):
    for m in (sg, torch):
        with pytest.raises(RuntimeError, match="einsum"):
            m.einsum(equation, *(m.ones(*s) for s in shapes))


SUBLISTS = {
    "product": lambda m, a, b: m.einsum(a, [0, 1], b, [1, 2], [0, 2]),
    "implicit output": lambda m, a, b: m.einsum(a, [0, 1], b, [1, 2]),
    "lowercase": lambda m, a, b: m.einsum(a, [30, 51], b, [51, 2], [2, 30]),
    "ellipsis": lambda m, a, b: m.einsum(a, [Ellipsis, 1], [1, Ellipsis]),
    "tuples": lambda m, a, b: m.einsum(a, (0, 1), (1,)),
    "trace": lambda m, a, b: m.einsum(b[:3, :3], [0, 0], []),
    "out of range": lambda m, a, b: m.einsum(a, [0, 52]),
    "negative": lambda m, a, b: m.einsum(a, [0, -1]),
    "unknown output": lambda m, a, b: m.einsum(a, [0, 1], [2]),
    "too few": lambda m, a, b: m.einsum(a),
}


@pytest.mark.parametrize("call", SUBLISTS.values(), ids=SUBLISTS)
def test_einsum_sublist_form_as_torch(call):
    """``einsum(a, [0, 1], b, [1, 2], [0, 2])``: each operand's subscripts as ints (0 to 25
    are A to Z, 26 to 51 a to z), the output's last if given."""
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    try:
        expected = call(torch, torch.tensor(a), torch.tensor(b))
    except (ValueError, RuntimeError) as error:
        with pytest.raises(type(error)):
            call(sg, sg.tensor(a), sg.tensor(b))
        return
    np.testing.assert_allclose(call(sg, sg.tensor(a), sg.tensor(b)).numpy(), expected.numpy())


def test_mm_and_bmm_check_their_dims():
    with pytest.raises(RuntimeError, match="mm: expected 2-D"):
        sg.mm(sg.ones(2, 2, 2), sg.ones(2, 2))
    with pytest.raises(RuntimeError, match="bmm: batch sizes differ"):
        sg.bmm(sg.ones(2, 2, 3), sg.ones(3, 3, 2))


def test_smooth_l1_loss_module_as_torch():
    x, y = np.array([0.1, -2.0, 0.7]), np.array([0.0, 0.0, 0.0])
    for beta in (0.0, 0.5, 1.0):
        ours = sg.nn.SmoothL1Loss(beta=beta)(sg.tensor(x), sg.tensor(y))
        theirs = torch.nn.SmoothL1Loss(beta=beta)(torch.tensor(x), torch.tensor(y))
        assert ours.item() == pytest.approx(theirs.item(), rel=1e-12)


def test_index_queries_and_layout_as_torch():
    data = [[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]]
    ours, theirs = sg.tensor(data), torch.tensor(data)
    assert sg.nonzero(ours).tolist() == torch.nonzero(theirs).tolist()
    assert [t.tolist() for t in ours.nonzero(as_tuple=True)] == [
        t.tolist() for t in theirs.nonzero(as_tuple=True)
    ]
    assert sg.count_nonzero(ours, 1).tolist() == torch.count_nonzero(theirs, 1).tolist()
    assert ours.stride() == theirs.stride() and ours.T.stride() == theirs.T.stride()
    assert ours.element_size() == theirs.element_size() and ours.nelement() == 6
    assert sg.is_tensor(ours) and not sg.is_tensor(data)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.isin(m.tensor([[1, 2], [3, 4]]), m.tensor([4, 1])),
        lambda m: m.isin(m.tensor([[1, 2], [3, 4]]), m.tensor([4, 1]), invert=True),
        lambda m: m.isin(m.tensor([1.0, 2.5]), 2.5),
        lambda m: m.isin(3, m.tensor([1, 3])),
        lambda m: m.isin(m.tensor([1, 2]), m.tensor([2.0])),
        lambda m: m.isin(m.tensor([1, 2]), m.tensor([], dtype=m.int64)),
        lambda m: m.tensor([1, 8, -9]) << 2,
        lambda m: m.tensor([16, -8, 7]) >> m.tensor([2, 1, 0]),
        lambda m: 2 << m.tensor([1, 2]),
        lambda m: 64 >> m.tensor([1, 2]),
        lambda m: m.arange(24).reshape(2, 3, 4).movedim((0, 1), (2, 0)),
        lambda m: m.arange(24).reshape(2, 3, 4).moveaxis([-1, 0], [0, -1]),
        lambda m: m.movedim(m.arange(6).reshape(2, 3), 0, 1),
        lambda m: m.norm(m.tensor([[1.0, -3.0], [2.0, 0.0]]), p="nuc"),
        lambda m: m.arange(24.0).reshape(2, 3, 4).norm(p="nuc", dim=(0, 2), keepdim=True),
    ],
)
def test_isin_shifts_movedim_of_several_dims_and_the_nuclear_norm_as_torch(call):
    ours, theirs = call(sg), call(torch)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1].replace("torch.", "")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda m: m.zeros(2, 3).movedim((0, 1), (1,)), RuntimeError, "same number of dims"),
        (lambda m: m.norm(m.ones(2, 3, 4), p="nuc"), RuntimeError, "dim must be a 2-tuple"),
        (lambda m: m.isin(1, 2), TypeError, "isin"),
    ],
)
def test_their_bad_arguments_raise_as_torch(call, error, message):
    for m in (torch, sg):
        with pytest.raises(error, match=message):
            call(m)


@pytest.mark.parametrize(
    "index, message",
    [
        (slice(None, None, -1), "step must be greater than zero"),
        (slice(4, 0, -2), "step must be greater than zero"),
        (slice(None, None, 0), "slice step cannot be zero"),
    ],
)
def test_a_slice_of_step_below_one_raises_as_torch_for_reads_and_writes(index, message):
    """NumPy would flip the tensor; a program that ran so would fail under PyTorch."""
    for m in (torch, sg):
        x = m.arange(5.0)
        with pytest.raises(ValueError, match=message):
            x[index]
        with pytest.raises(ValueError, match=message):
            x[index] = 1.0
        assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.unravel_index(m.tensor([4, 7, 8, -1]), (2, 4)),
        lambda m: m.unravel_index(m.tensor([[5, 0]]), 6),
        lambda m: m.unravel_index(m.tensor(3), (2, 2)),
        lambda m: m.atleast_1d(m.tensor(1.0), m.ones(2)),
        lambda m: m.atleast_2d([m.tensor(1.0), m.ones(3)]),
        lambda m: (m.atleast_3d(m.ones(3)),),
        lambda m: (m.column_stack([m.tensor(1), m.tensor(2)]),),
        lambda m: (m.row_stack([m.ones(2), m.zeros(2)]),),
    ],
)
def test_unravel_index_atleast_and_the_stacks_as_torch(call):
    ours, theirs = call(sg), call(torch)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.dtype == getattr(sg, str(t.dtype).split(".")[-1])
        np.testing.assert_array_equal(o.numpy(), t.numpy())


def test_unravel_index_takes_only_integer_indices():
    for m in (torch, sg):
        with pytest.raises(TypeError, match="expected 'indices' to be integer dtype"):
            m.unravel_index(m.tensor([1.0]), (2,))


ARRAY_4_5_6 = np.random.default_rng(0).standard_normal((4, 5, 6))
INDICES = [
    lambda m: (1, slice(None), m.tensor([2, 2, 0])),  # an int apart from the tensor index
    lambda m: (m.tensor(1), slice(1, 3), [0, -1]),  # a 0-d tensor picks as an int
    lambda m: (0, ..., m.tensor([[1], [0]]), None),
    lambda m: (-1, None, m.tensor([True, False, True, True, False]), 1),
    lambda m: (m.tensor([0, 1]), slice(None), 1),  # apart in both: the dims go in front
    lambda m: [[0, 1], [2, 3]],  # a list of lists is a tuple, as PyTorch's
    lambda m: [m.tensor([1, 1]), slice(1, None)],
    lambda m: [],  # an empty list picks nothing (an int64 index)
]


@pytest.mark.parametrize("index", INDICES)
def test_ints_and_lists_among_tensor_indices_place_dims_as_torch(index):
    """PyTorch picks with the ints before it indexes with tensors, so an int does not keep the
    tensor indices apart: ``x[1, :, t]`` is ``x[1][:, t]``, where NumPy puts the indexed dims
    in front. Reads, gradients and writes (of a value of the read's shape) are compared."""
    check_against_torch(lambda x: x[index(sg)], lambda x: x[index(torch)], [ARRAY_4_5_6])
    out = {}
    for m in (torch, sg):
        x = m.tensor(ARRAY_4_5_6)
        read = x[index(m)]
        x[index(m)] = m.arange(read.numel(), dtype=m.float64).reshape(read.shape)
        out[m] = x.numpy()
    np.testing.assert_array_equal(out[sg], out[torch])
