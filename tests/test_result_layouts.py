"""Layouts (strides) of results of ops on non-contiguous inputs, against PyTorch's: ``flip``,
``sort`` and ``clone`` lay their results out as the input (its strides where its entries are
dense, else dense ones in its order of dims), so ``stride``, ``is_contiguous``, ``view`` and
``as_strided`` of them agree with PyTorch's (tensor.py's ``_laid_out_like``). Also the tensors
that carry such a layout: ``.data =``, the in-place view ops and ``share_memory_`` keep or drop
it as PyTorch."""

import math

import pytest
import torch

import scratchgrad as sg

LIBS = {"scratchgrad": sg, "torch": torch}

# inputs that are no row-major base: transposed, permuted, sliced (with gaps), expanded
INPUTS = {
    "transposed": lambda m: m.arange(20.0).reshape(4, 5).t(),
    "permuted_201": lambda m: m.arange(60.0).reshape(3, 4, 5).permute(2, 0, 1),
    "permuted_120": lambda m: m.arange(60.0).reshape(3, 4, 5).permute(1, 2, 0),
    "permuted_021": lambda m: m.arange(60.0).reshape(3, 4, 5).permute(0, 2, 1),
    "permuted_4d": lambda m: m.arange(120.0).reshape(2, 3, 4, 5).permute(0, 2, 3, 1),
    "sliced": lambda m: m.arange(20.0).reshape(4, 5)[:, 1:4],
    "strided": lambda m: m.arange(20.0).reshape(4, 5)[::2],
    "transposed_slice": lambda m: m.arange(20.0).reshape(4, 5).t()[1:],
    "permuted_with_gaps": lambda m: m.arange(60.0).reshape(3, 4, 5)[:, ::2].permute(2, 0, 1),
    "size_one_dims": lambda m: m.arange(60.0).reshape(3, 4, 5)[:, :1].permute(2, 1, 0),
    "expanded_transposed": lambda m: m.arange(3.0).expand(4, 3).t(),
    "unsqueezed_transpose": lambda m: m.arange(20.0).reshape(4, 5).t()[None],
}

OPS = {
    "flip": lambda m, x: x.flip(0),
    "flip_all": lambda m, x: x.flip(list(range(x.ndim))),
    "fliplr": lambda m, x: m.fliplr(x),
    "flipud": lambda m, x: m.flipud(x),
    "rot90": lambda m, x: m.rot90(x),
    "rot90_twice": lambda m, x: m.rot90(x, 2),
    "rot90_thrice": lambda m, x: m.rot90(x, 3),
    "sort_values": lambda m, x: x.sort(0).values,
    "sort_indices": lambda m, x: x.sort(-1).indices,
    "sort_descending_stable": lambda m, x: x.sort(dim=-1, descending=True, stable=True).values,
    "argsort": lambda m, x: x.argsort(0),
    "msort": lambda m, x: m.msort(x),
    "clone": lambda m, x: x.clone(),
    "clone_contiguous_format": lambda m, x: x.clone(memory_format=m.contiguous_format),
    "clone_of_a_clone": lambda m, x: x.clone().clone(),
}


def _layout(t):
    """What a program can read of a tensor's layout, and its entries in memory order."""
    n = t.numel()
    memory = sorted(range(n), key=lambda i: t.as_strided((n,), (1,)).tolist()[i])
    return t.stride(), t.is_contiguous(), t.storage_offset(), t.tolist(), memory


@pytest.mark.parametrize("x", INPUTS)
@pytest.mark.parametrize("op", OPS)
def test_layout_of_the_result_matches_torch(op, x):
    ours, theirs = (OPS[op](m, INPUTS[x](m)) for m in (sg, torch))
    assert ours.stride() == theirs.stride()
    assert ours.is_contiguous() == theirs.is_contiguous()
    assert ours.tolist() == theirs.tolist()
    n = theirs.numel()
    assert ours.as_strided((n,), (1,)).tolist() == theirs.as_strided((n,), (1,)).tolist()
    assert ours[1:].stride() == theirs[1:].stride()  # a view of it starts from its layout


def test_as_strided_of_a_flipped_transpose_reads_torchs_memory():
    # was [[4, 19], [9, 3]]: the result was laid out row-major, PyTorch's keeps (1, 5)
    for m in (sg, torch):
        y = m.arange(20.0).reshape(4, 5).t().flip(0)
        assert y.stride() == (1, 5)
        assert y.as_strided((2, 2), (1, 3)).tolist() == [[4.0, 1.0], [3.0, 0.0]]


@pytest.mark.parametrize("lib", LIBS)
def test_view_of_a_sorted_transpose_is_refused_as_torchs(lib):
    m = LIBS[lib]
    y = m.arange(20.0).reshape(4, 5).t().sort(0).values
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        y.view(20)


@pytest.mark.parametrize("op", ["flip", "sort_values", "rot90", "clone"])
def test_gradient_through_a_permuted_input_matches_torch(op):
    base = torch.randn(3, 4, 5, dtype=torch.float64).tolist()
    grads = []
    for m in (sg, torch):
        x = m.tensor(base, dtype=m.float64, requires_grad=True)
        y = OPS[op](m, x.permute(2, 0, 1))
        (y * m.arange(60.0, dtype=m.float64).reshape(y.shape).cos()).sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1]


# tensors with a layout of their own though no view: a flip's result, a detached view
OWN_LAYOUTS = {
    "flipped": lambda m: m.arange(20.0).reshape(4, 5).t().flip(0),
    "detached_view": lambda m: m.arange(20.0).reshape(4, 5)[:, 1:].t().detach(),
}


@pytest.mark.parametrize("source", OWN_LAYOUTS)
@pytest.mark.parametrize("change", ["t_", "transpose_", "swapdims_", "unsqueeze_", "as_strided_"])
def test_in_place_view_ops_start_from_the_layout(change, source):
    calls = {
        "t_": lambda y: y.t_(),
        "transpose_": lambda y: y.transpose_(0, 1),
        "swapdims_": lambda y: y.swapdims_(0, 1),
        "unsqueeze_": lambda y: y.unsqueeze_(1),
        "as_strided_": lambda y: y.as_strided_((2, 2), (1, 3)),
    }
    ours, theirs = (calls[change](OWN_LAYOUTS[source](m)) for m in (sg, torch))
    assert _layout(ours) == _layout(theirs)


def test_data_takes_the_strides_of_the_new_tensor_and_drops_the_old():
    for make in (*OWN_LAYOUTS.values(), lambda m: m.zeros(2, 3)):
        for new in (lambda m: m.zeros(2, 3), lambda m: m.arange(20.0).reshape(4, 5).t()):
            ours, theirs = make(sg), make(torch)
            ours.data, theirs.data = new(sg), new(torch)
            assert _layout(ours) == _layout(theirs)


@pytest.mark.parametrize("source", OWN_LAYOUTS)
def test_share_memory_keeps_the_layout(source):
    ours = OWN_LAYOUTS[source](sg).share_memory_()
    assert ours.is_shared()
    assert _layout(ours) == _layout(OWN_LAYOUTS[source](torch).share_memory_())


def test_a_row_major_input_gives_a_row_major_result():
    x = sg.arange(20.0).reshape(4, 5)
    for y in (x.flip(0), x.sort(0).values, x.argsort(0), x[:, 1:].t().t().flip(1)):
        assert y.is_contiguous()
        assert y.array.flags.c_contiguous


def test_share_memory_of_a_view_keeps_its_place_in_the_memory():
    # was a copy of the view's entries alone, whose storage_offset counted from the old memory
    ours, theirs = (m.arange(20.0).reshape(4, 5)[1:, 2:].t().share_memory_() for m in (sg, torch))
    assert ours.is_shared()
    assert _layout(ours) == _layout(theirs)
    assert ours.as_strided((3,), (2,)).tolist() == theirs.as_strided((3,), (2,)).tolist()


# clone's inputs beyond INPUTS: offsets, 0-d, strides that tie, repeats in the middle
CLONED = {
    "offset_transpose": lambda m: m.arange(20.0).reshape(4, 5)[1:].t(),
    "zero_d": lambda m: m.arange(20.0).reshape(4, 5)[1, 2],
    "column": lambda m: m.arange(20.0).reshape(4, 5)[:, :1],
    "transposed_row": lambda m: m.arange(20.0).reshape(4, 5).t()[:1],
    "size_one_permuted": lambda m: m.arange(12.0).reshape(1, 3, 4).permute(2, 0, 1),
    "expanded_middle": lambda m: m.arange(12.0).reshape(3, 1, 4).expand(3, 5, 4).permute(2, 1, 0),
    "transposed_gaps": lambda m: m.arange(24.0).reshape(4, 6).t()[::2],
    "overlapping_windows": lambda m: m.arange(10.0).as_strided((3, 4), (2, 1)),
    "real_of_transposed": lambda m: m.complex(m.ones(3, 4), m.zeros(3, 4)).t().real,
    "detached_transpose": lambda m: m.arange(20.0).reshape(4, 5).t().detach(),
}


@pytest.mark.parametrize("x", CLONED)
def test_clone_keeps_the_layout_as_torchs(x):
    ours, theirs = (CLONED[x](m).clone() for m in (sg, torch))
    assert _layout(ours) == _layout(theirs)


@pytest.mark.parametrize(
    "shape", [(2, 3, 4, 5), (2, 0, 3, 3), (1, 3, 1, 1), (2, 3, 4, 5, 2), (0, 2, 3, 4, 5)]
)
@pytest.mark.parametrize("permuted", [False, True])
def test_clone_to_channels_last_has_torchs_strides(shape, permuted):
    def cloned(m):
        x = m.arange(float(math.prod(shape))).reshape(shape)
        x = x.transpose(-1, -2) if permuted else x
        return x.clone(memory_format=m.channels_last if len(shape) == 4 else m.channels_last_3d)

    assert _layout(cloned(sg)) == _layout(cloned(torch))


def test_clone_in_contiguous_format_is_row_major_in_memory_too():
    # the memory was the input's order, only counted as row-major
    y = sg.arange(20.0).reshape(4, 5).t().clone(memory_format=sg.contiguous_format)
    assert y.stride() == (4, 1)
    assert y.array.flags.c_contiguous


def test_clone_of_a_row_major_tensor_stays_a_tensor_of_its_own():
    y = sg.arange(20.0).reshape(4, 5).clone()
    assert not y._has_steps()
    assert y.array.flags.c_contiguous


def test_a_transposed_clone_keeps_the_copys_memory():
    # NumPy's order "K" copy is already laid out: no second copy, its memory viewed
    y = sg.arange(20.0).reshape(4, 5).t().clone()
    assert y.array.strides == (4, 20)  # (float32)
    assert y.array.base is y._base_array.base
