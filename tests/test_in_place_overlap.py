"""In-place writes whose input shares part of the written memory (``x[1:].add_(x[:-1])``): PyTorch
refuses them (NumPy would read a copy), while the same entries in the same order, memory that
does not overlap, and inputs that do not cover their memory densely pass. Each case runs in both
libraries."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

PARTLY_SHARED = "some elements of the input tensor and the written-to tensor refer to a single"
I = [4, 5]

# each writes into (a view of) x = arange(1, 7) while reading a part of it
REFUSED = {
    "add_": lambda m, x: x[1:].add_(x[:-1]),
    "iadd": lambda m, x: x[1:].__iadd__(x[:-1]),
    "sub_": lambda m, x: x[1:].sub_(x[:-1], alpha=2),
    "mul_": lambda m, x: x[1:].mul_(x[:-1]),
    "div_": lambda m, x: x[1:].div_(x[:-1]),
    "add_0d": lambda m, x: x.add_(x[0]),
    "add_broadcast": lambda m, x: x.view(2, 3).add_(x[:3]),
    "pow_": lambda m, x: x[1:].pow_(x[:-1]),
    "clamp_": lambda m, x: x[1:].clamp_(max=x[:-1]),
    "atan2_": lambda m, x: x[1:].atan2_(x[:-1]),
    "addcmul_": lambda m, x: x[1:].addcmul_(x[:-1], m.ones(5)),
    "lerp_": lambda m, x: x[1:].lerp_(x[:-1], 0.5),
    "lerp_weight": lambda m, x: x[1:].lerp_(m.ones(5), x[:-1]),
    "eq_": lambda m, x: x[1:].eq_(x[:-1]),
    "copy_": lambda m, x: x[1:].copy_(x[:-1]),
    "copy_0d": lambda m, x: x.copy_(x[0]),
    "copy_transposed": lambda m, x: x[:4].view(2, 2).copy_(x[:4].view(2, 2).t()),
    "setitem": lambda m, x: x.__setitem__(slice(1, None), x[:-1]),
    "setitem_index": lambda m, x: x.__setitem__(m.tensor(I), x[:2]),
    "setitem_mask": lambda m, x: x.__setitem__(x > 4, x[:2]),
    "setitem_index_0d": lambda m, x: x.__setitem__(m.tensor(I), x[0]),
    "index_put_": lambda m, x: x.index_put_((m.tensor(I),), x[:2], accumulate=True),
    "index_copy_": lambda m, x: x.index_copy_(0, m.tensor(I), x[:2]),
    "index_add_": lambda m, x: x.index_add_(0, m.tensor(I), x[:2]),
    "scatter_": lambda m, x: x.scatter_(0, m.tensor(I), x[:2]),
    "scatter_add_": lambda m, x: x.scatter_add_(0, m.tensor(I), x[:2]),
    "put_": lambda m, x: x.put_(m.tensor(I), x[:2]),
    "data": lambda m, x: x.data[1:].add_(x.data[:-1]),
}
ALLOWED = {
    "same": lambda m, x: x.add_(x),
    "same_view": lambda m, x: x[1:].mul_(x[1:]),
    "same_layout": lambda m, x: x.view(2, 3).add_(x.view(2, 3)),
    "disjoint": lambda m, x: x[:3].add_(x[3:]),
    "interleaved": lambda m, x: x[::2].add_(x[1::2]),  # (neither covers its memory densely)
    "expanded": lambda m, x: x[1:4].add_(x[0:1].expand(3)),
    "beside": lambda m, x: x[3:].add_(x[2]),
    "empty": lambda m, x: x[1:1].add_(x[0:0]),
    "a_copy": lambda m, x: x[1:].add_(x[:-1] + 0),
    "setitem_slice_0d": lambda m, x: x.__setitem__(slice(0, 6), x[0]),  # a fill by a number
    "setitem_int_0d": lambda m, x: x.__setitem__(0, x[1]),
    "setitem_disjoint": lambda m, x: x.__setitem__(slice(0, 2), x[2:4]),
    "masked_fill_0d": lambda m, x: x.masked_fill_(x > 2, x[0]),
    "index_fill_0d": lambda m, x: x.index_fill_(0, m.tensor(I), x[0]),
    "fill_0d": lambda m, x: x.fill_(x[2]),
    "ldexp_": lambda m, x: x[1:].ldexp_(x[:-1]),
    "addmm_": lambda m, x: x[:4].view(2, 2).addmm_(x[1:5].view(2, 2), m.ones(2, 2)),
}


@pytest.mark.parametrize("lib", [sg, torch])
@pytest.mark.parametrize("write", REFUSED.values(), ids=REFUSED)
def test_a_write_reading_part_of_its_own_memory_raises_and_changes_nothing(lib, write):
    x = lib.arange(1.0, 7.0)
    with pytest.raises(RuntimeError, match=PARTLY_SHARED):
        write(lib, x)
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


@pytest.mark.parametrize("write", ALLOWED.values(), ids=ALLOWED)
def test_writes_pytorch_allows_give_its_values(write):
    ours, theirs = sg.arange(1.0, 7.0), torch.arange(1.0, 7.0)
    write(sg, ours)
    write(torch, theirs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("lib", [sg, torch])
def test_in_a_graph_too(lib):
    w = lib.arange(1.0, 7.0, requires_grad=True)
    y = w * 1
    with pytest.raises(RuntimeError, match=PARTLY_SHARED):
        y[1:].add_(y[:-1])
    with pytest.raises(RuntimeError, match=PARTLY_SHARED):
        y[1:].copy_(y[:-1])
    y.sum().backward()
    assert w.grad.tolist() == [1.0] * 6


@pytest.mark.parametrize("lib", [sg, torch])
def test_setitem_of_a_tensor_into_all_of_itself_passes_with_leading_ones(lib):
    # (setitem dropped the value's leading 1 before its overlap check, which then saw another
    # layout of the same entries: PyTorch copies the value as given where the shapes match)
    x = lib.arange(3.0).reshape(1, 3)
    x[0:] = x
    x[0, :] = x[0]
    x[:, 1:] = x[:, 1:]
    assert x.tolist() == [[0.0, 1.0, 2.0]] and x._version == 3
    with pytest.raises(RuntimeError, match=PARTLY_SHARED):
        x[:, 1:] = x[:, :2]


@pytest.mark.parametrize("lib", [sg, torch])
def test_setitem_of_a_row_into_a_tensor_of_that_one_row_passes(lib):
    # (the row, broadcast to (1, 3) as NumPy does, stepped 0 over the new dim, where PyTorch's
    # expand steps over the row: the check saw another layout of the same bytes, and raised)
    q = lib.arange(3.0).reshape(1, 3)
    q[:] = q[0]
    q[0:1] = q[0]
    u = lib.arange(3.0).reshape(1, 1, 3)
    u[:] = u[0, 0]
    u[:] = u[0]
    assert q.tolist() == [[0.0, 1.0, 2.0]] and q._version == 2 and u._version == 2
    x = lib.arange(4.0).reshape(1, 4)
    with pytest.raises(RuntimeError, match=PARTLY_SHARED):  # some of the same entries
        x[:, 1:] = x[0, :3]
    assert x.tolist() == [[0.0, 1.0, 2.0, 3.0]] and x._version == 0


@pytest.mark.parametrize("lib", [sg, torch])
def test_setitem_of_a_tensor_into_a_strided_view_of_itself_raises(lib):
    # (x[:, ::2] = x of a 2x1x3 x: both arrays own their memory, the fast test let it pass)
    x = lib.arange(6.0).reshape(2, 1, 3)
    with pytest.raises(RuntimeError, match=PARTLY_SHARED):
        x[:, ::2] = x
    assert x.flatten().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and x._version == 0
