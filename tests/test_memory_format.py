"""Memory formats as PyTorch programs use them, against PyTorch: ``contiguous``, ``to`` and
``clone`` lay a tensor out channels-last (or row-major) with PyTorch's strides and copy only
where PyTorch's would, ``is_contiguous`` reads the layout from the strides by PyTorch's rules,
the ``*_like`` factories lay out their results as PyTorch's, gradients flow through, and ops
on a channels-last tensor give the row-major computation's bits."""

import numpy as np
import pytest
import torch

import scratchgrad as sg
import scratchgrad.nn.functional as F

LIBS = {"scratchgrad": sg, "torch": torch}
FORMATS = ["contiguous_format", "channels_last", "channels_last_3d"]

# inputs of each rank and layout (row-major, channels-last, permuted, sliced, size 1, empty)
INPUTS = {
    "row_major": lambda m: m.arange(120.0).reshape(2, 3, 4, 5),
    "channels_last": lambda m: (
        m.arange(120.0).reshape(2, 3, 4, 5).contiguous(memory_format=m.channels_last)
    ),
    "permuted_nhwc": lambda m: m.arange(120.0).reshape(2, 4, 5, 3).permute(0, 3, 1, 2),
    "permuted_other": lambda m: m.arange(120.0).reshape(2, 3, 4, 5).permute(0, 2, 3, 1),
    "sliced": lambda m: m.arange(120.0).reshape(2, 3, 4, 5)[:, :, ::2],
    "one_channel": lambda m: m.arange(40.0).reshape(2, 1, 4, 5),
    "one_pixel": lambda m: m.arange(6.0).reshape(2, 3, 1, 1),
    "all_ones": lambda m: m.ones(1, 1, 1, 1),
    "one_batch": lambda m: m.arange(60.0).reshape(1, 3, 4, 5),
    "empty_batch": lambda m: m.zeros(0, 3, 4, 5),
    "empty_pixels": lambda m: m.zeros(2, 3, 0, 5),
    "empty_channels_last": lambda m: m.zeros(0, 3, 4, 5).contiguous(memory_format=m.channels_last),
    "row_major_5d": lambda m: m.arange(240.0).reshape(2, 3, 2, 4, 5),
    "channels_last_5d": lambda m: (
        m.arange(240.0).reshape(2, 3, 2, 4, 5).contiguous(memory_format=m.channels_last_3d)
    ),
}

CONVERSIONS = {
    "contiguous": lambda m, x, f: x.contiguous(memory_format=f),
    "to": lambda m, x, f: x.to(memory_format=f),
    "to_dtype": lambda m, x, f: x.to(m.float64, memory_format=f),
    "to_device_and_dtype": lambda m, x, f: x.to("cpu", m.float64, memory_format=f),
    "to_copy": lambda m, x, f: x.to(memory_format=f, copy=True),
    "clone": lambda m, x, f: x.clone(memory_format=f),
}


def _seen(m, t):
    """What a program can read of a tensor's layout: strides and is_contiguous per format."""
    formats = [getattr(m, f) for f in FORMATS]
    return t.stride(), [t.is_contiguous(memory_format=f) for f in formats]


@pytest.mark.parametrize("conversion", CONVERSIONS)
@pytest.mark.parametrize("form", FORMATS)
@pytest.mark.parametrize("made", INPUTS)
def test_a_conversion_lays_out_and_copies_as_torch(made, form, conversion):
    seen = {}
    for name, m in LIBS.items():
        x = INPUTS[made](m)
        try:
            out = CONVERSIONS[conversion](m, x, getattr(m, form))
        except RuntimeError as error:
            seen[name] = str(error)
            continue
        seen[name] = (out is x, *_seen(m, out), out.tolist())
    assert seen["scratchgrad"] == seen["torch"]


@pytest.mark.parametrize("made", INPUTS)
def test_is_contiguous_reads_the_strides_as_torch(made):
    assert _seen(sg, INPUTS[made](sg)) == _seen(torch, INPUTS[made](torch))


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4), (2, 3, 4, 5), (2, 3, 4, 5, 6)])
def test_is_contiguous_of_another_rank_is_false_as_torch(shape):
    assert _seen(sg, sg.zeros(shape)) == _seen(torch, torch.zeros(shape))


def test_is_contiguous_by_torchs_rule_for_any_strides():
    # size-1 dims skipped, gaps and overlaps refused: random strides of a 4-D view
    rng = np.random.default_rng(0)
    for _ in range(300):
        shape = tuple(int(n) for n in rng.integers(1, 4, 4))
        stride = tuple(int(s) for s in rng.integers(0, 30, 4))
        views = [m.zeros(400).as_strided(shape, stride) for m in (sg, torch)]
        assert _seen(sg, views[0]) == _seen(torch, views[1]), (shape, stride)


def test_the_wrong_memory_format_raises_torchs_errors():
    for call in (
        lambda m: m.zeros(2, 3).to(memory_format=m.channels_last),
        lambda m: m.zeros(2, 3).contiguous(memory_format=m.channels_last),
        lambda m: m.zeros(2, 3, 1).to(memory_format=m.channels_last_3d),
        lambda m: m.zeros(2, 3).t().contiguous(memory_format=m.preserve_format),
        lambda m: m.zeros_like(m.zeros(2, 3), memory_format=m.channels_last),
        lambda m: m.randint_like(m.zeros(2, 3), 4, memory_format=m.channels_last_3d),
    ):
        with pytest.raises(RuntimeError) as theirs:
            call(torch)
        with pytest.raises(RuntimeError) as ours:
            call(sg)
        assert str(ours.value) == str(theirs.value)
    for call in (
        lambda m: m.zeros(2, 3).is_contiguous(memory_format="channels_last"),
        lambda m: m.zeros_like(m.zeros(2, 3), memory_format="channels_last"),
    ):
        with pytest.raises(TypeError) as theirs:
            call(torch)
        with pytest.raises(TypeError) as ours:
            call(sg)
        assert str(ours.value) == str(theirs.value)


LIKES = {
    "zeros_like": lambda m, x, **kw: m.zeros_like(x, **kw),
    "ones_like": lambda m, x, **kw: m.ones_like(x, **kw),
    "empty_like": lambda m, x, **kw: m.empty_like(x, **kw),
    "full_like": lambda m, x, **kw: m.full_like(x, 2.5, **kw),
    "rand_like": lambda m, x, **kw: m.rand_like(x, **kw),
    "randn_like": lambda m, x, **kw: m.randn_like(x, **kw),
    "randint_like": lambda m, x, **kw: m.randint_like(x, 3, 5, **kw),
    "zeros_like_int": lambda m, x, **kw: m.zeros_like(x, dtype=m.int64, **kw),
}
LIKE_INPUTS = ["row_major", "channels_last", "permuted_nhwc", "sliced", "one_pixel", "row_major_5d"]


@pytest.mark.parametrize("form", [None, "preserve_format", *FORMATS])
@pytest.mark.parametrize("made", LIKE_INPUTS)
@pytest.mark.parametrize("like", LIKES)
def test_a_like_factory_lays_out_its_result_as_torch(like, made, form):
    seen = {}
    for name, m in LIBS.items():
        options = {} if form is None else {"memory_format": getattr(m, form)}
        try:
            out = LIKES[like](m, INPUTS[made](m), **options)
        except RuntimeError as error:
            seen[name] = str(error)
            continue
        values = out.tolist() if like in ("zeros_like", "ones_like", "full_like") else None
        seen[name] = (*_seen(m, out), out.dtype.itemsize, values)
    assert seen["scratchgrad"] == seen["torch"]


@pytest.mark.parametrize(
    "conversion",
    [
        lambda m, x: x.contiguous(memory_format=m.channels_last),
        lambda m, x: x.to(memory_format=m.channels_last),
        lambda m, x: x.to(m.float64, memory_format=m.channels_last),
        lambda m, x: x.contiguous(memory_format=m.channels_last).contiguous(),
        lambda m, x: x.contiguous(memory_format=m.channels_last).permute(0, 2, 3, 1),
    ],
)
def test_gradients_flow_through_a_conversion_as_torchs(conversion):
    values = np.random.default_rng(1).standard_normal((2, 3, 4, 5))
    weights = np.random.default_rng(2).standard_normal((2, 3, 4, 5))
    grads = []
    for m in (sg, torch):
        x = m.tensor(values, requires_grad=True)
        out = conversion(m, x)
        (out * m.tensor(weights).reshape(out.shape)).sum().backward()
        grads.append((x.grad.numpy(), x.grad.stride(), out.grad_fn.name()))
    np.testing.assert_array_equal(grads[0][0], grads[1][0])
    assert grads[0][1:] == grads[1][1:]


CALLS = {
    "conv2d": lambda x, w: F.conv2d(x, w, padding=1),
    "conv2d_strided": lambda x, w: F.conv2d(x, w, stride=2),
    "elementwise": lambda x, w: (x * 2.5 + 1).relu() / 3,
    "broadcast_with_weight": lambda x, w: x * w[:1, :, :1, :1],
    "max_pool": lambda x, w: F.max_pool2d(x, 2),
    "gradient_of_conv2d": lambda x, w: sg.autograd.grad(F.conv2d(x, w).square().sum(), w)[0],
}
# sums follow the memory order (as PyTorch's do): close to the row-major ones, not the bits
SUMS = {
    "mean_over_pixels": lambda x, w: x.mean((2, 3)),
    "batch_norm": lambda x, w: F.batch_norm(x, None, None, training=True),
}


def _both_layouts(call):
    g = sg.Generator().manual_seed(3)
    x, w = sg.randn(4, 3, 6, 6, generator=g), sg.randn(5, 3, 3, 3, generator=g)
    x.requires_grad_(), w.requires_grad_()
    channels_last = [t.contiguous(memory_format=sg.channels_last) for t in (x, w)]
    return call(x, w), call(*channels_last)


@pytest.mark.parametrize("call", CALLS)
def test_ops_on_channels_last_tensors_give_the_row_major_bits(call):
    expected, out = _both_layouts(CALLS[call])
    assert out.detach().numpy().tobytes() == expected.detach().numpy().tobytes()
    # a result counts as row-major (PyTorch's keeps channels-last): its strides say so
    assert out.is_contiguous() and out.stride() == expected.stride()


@pytest.mark.parametrize("call", SUMS)
def test_sums_over_channels_last_tensors_are_close_to_the_row_major_ones(call):
    expected, out = _both_layouts(SUMS[call])
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-5)


def test_a_channels_last_clone_under_vmap_keeps_the_values():
    # (a batched tensor has no strides of its own to lay out: clone keeps the values)
    x = sg.arange(120.0).reshape(2, 1, 3, 4, 5)
    y = sg.func.vmap(lambda t: t.clone(memory_format=sg.channels_last))(x)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    y = sg.func.vmap(lambda t: t.to(memory_format=sg.channels_last) + sg.zeros_like(t))(x)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
