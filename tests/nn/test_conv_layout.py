"""The layout a convolution's result reports, against PyTorch's: scratchgrad keeps the batch
last in memory, PyTorch's result is row-major. ``stride()``, ``is_contiguous()``,
``contiguous()`` and ``view`` of the results and of views of them all answer as PyTorch's, and
never contradict each other; as do those of ``as_strided`` views reaching outside their base."""

import copy
import math

import numpy as np
import pytest

import scratchgrad as sg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
IMAGES = {1: RNG.standard_normal((4, 3, 9)), 2: RNG.standard_normal((4, 3, 6, 6))}
IMAGES[3] = RNG.standard_normal((2, 3, 4, 4, 4))
WEIGHTS = {n: RNG.standard_normal((5, 3, *(3,) * n)) for n in (1, 2, 3)}

RESULTS = {
    "conv1d": lambda m, F: F.conv1d(image(m, 1), weight(m, 1)),
    "conv2d": lambda m, F: F.conv2d(image(m, 2), weight(m, 2), padding=1),
    "conv2d strided": lambda m, F: F.conv2d(image(m, 2), weight(m, 2), stride=2),
    "conv3d": lambda m, F: F.conv3d(image(m, 3), weight(m, 3)),
    "conv_transpose2d": lambda m, F: F.conv_transpose2d(image(m, 2), weight(m, 2).transpose(0, 1)),
    "max_pool2d": lambda m, F: F.max_pool2d(image(m, 2), 2),
    "avg_pool2d": lambda m, F: F.avg_pool2d(image(m, 2), 2),
    "relu of conv": lambda m, F: F.conv2d(image(m, 2), weight(m, 2)).relu(),
    "conv + 1": lambda m, F: F.conv2d(image(m, 2), weight(m, 2)) + 1,
    "batch norm of conv": lambda m, F: F.batch_norm(
        F.conv2d(image(m, 2), weight(m, 2)), None, None, training=True
    ),
    "sum of conv": lambda m, F: F.conv2d(image(m, 2), weight(m, 2)).sum(1),
}
VIEWS = {
    "itself": lambda t: t,
    "one channel": lambda t: t[:, 1],
    "one sample": lambda t: t[1],
    "channels sliced": lambda t: t[:, 1:3],
    "every other row": lambda t: t[..., ::2, :] if t.ndim > 3 else t[..., ::2],
    "transpose": lambda t: t.transpose(1, 2),
    "batch last": lambda t: t.movedim(0, -1),
    "flattened": lambda t: t.view(t.shape[0], -1),
    "unsqueezed": lambda t: t.unsqueeze(2),
}


def image(m, n):
    return m.tensor(IMAGES[n])


def weight(m, n):
    return m.tensor(WEIGHTS[n])


def view_shapes(shape):
    """Shapes a view may ask for: all flat, batch apart, channels merged with the batch,
    the last dim split."""
    shapes = [(-1,), (shape[0], -1)]
    if len(shape) > 1:
        shapes.append((shape[0] * shape[1], -1))
    if shape[-1] % 2 == 0:
        shapes.append((*shape[:-1], 2, shape[-1] // 2))
    return shapes


def row_major(shape):
    return tuple(math.prod(shape[d + 1 :]) for d in range(len(shape)))


def check_layout(ours, theirs):
    """Strides, contiguity, views and contiguous() of ``ours`` as PyTorch's ``theirs``."""
    assert ours.shape == tuple(theirs.shape)
    assert ours.stride() == theirs.stride()
    assert ours.is_contiguous() == theirs.is_contiguous()
    sizes = [(n, s) for n, s in zip(ours.shape, ours.stride()) if n != 1]  # (any stride there)
    assert ours.is_contiguous() == (
        sizes == [(n, s) for n, s in zip(ours.shape, row_major(ours.shape)) if n != 1]
    )
    for shape in view_shapes(ours.shape):
        try:
            expected = theirs.view(shape)
        except RuntimeError:
            with pytest.raises(RuntimeError, match="view size is not compatible"):
                ours.view(shape)
        else:
            np.testing.assert_allclose(ours.view(shape).numpy(), expected.numpy(), rtol=1e-12)
    made = ours.contiguous()
    assert (made is ours) == theirs.is_contiguous()
    assert made.is_contiguous() and made.stride() == theirs.contiguous().stride()
    np.testing.assert_allclose(made.numpy(), theirs.contiguous().numpy(), rtol=1e-12)


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("result", RESULTS)
def test_strides_contiguity_and_views_of_convolution_results_match_torch(result, view):
    ours = VIEWS[view](RESULTS[result](sg, sg.nn.functional))
    theirs = VIEWS[view](RESULTS[result](torch, torch.nn.functional))
    check_layout(ours, theirs)


def test_a_convolutions_memory_is_kept_batch_last():
    """What the layout answers stand for: the result's memory itself is not copied to
    PyTorch's order (``.array`` tells it)."""
    out = sg.nn.functional.conv2d(image(sg, 2), weight(sg, 2))
    assert out.array.strides[0] == out.array.itemsize  # the batch innermost
    assert out.stride() == torch.nn.functional.conv2d(image(torch, 2), weight(torch, 2)).stride()


@pytest.mark.parametrize(
    "call",
    [
        lambda t: t.as_strided((2, 2), (1, 2), 1),  # reaches before the slice
        lambda t: t.as_strided((3,), (1,), 5),
        lambda t: t.as_strided((2, 2), (1, 2), 1).t(),
        lambda t: t.as_strided((2, 3), (3, 1), 0)[:, 1:],
    ],
)
def test_as_strided_of_a_detached_slice_matches_torch(call):
    made = [call(m.arange(10.0, dtype=m.float64)[4:].detach()) for m in (sg, torch)]
    check_layout(*made)


def test_writes_through_a_copied_view_raise_and_change_nothing():
    """``view`` of a convolution's result that scratchgrad's memory cannot give as a view is a
    copy: an in-place op on it raises, naming the op, where PyTorch's would reach the result,
    and neither tensor changes. A view that shares the memory still writes through, as
    PyTorch's does."""
    ours = sg.nn.functional.conv2d(image(sg, 2), weight(sg, 2))
    theirs = torch.nn.functional.conv2d(image(torch, 2), weight(torch, 2))
    flat, before = ours.view(-1), ours.numpy().copy()
    writes = {
        "add_": lambda t: t.add_(1),
        "fill_": lambda t: t.fill_(0),
        "copy_": lambda t: t.copy_(sg.zeros(t.shape, dtype=t.dtype)),
        "relu_": lambda t: t.relu_(),
        "setitem": lambda t: t.__setitem__(0, 1.0),
    }
    for name, write in writes.items():
        with pytest.raises(RuntimeError, match=f"{name}: .*read-only.*view\\(\\).*clone"):
            write(flat)
        np.testing.assert_array_equal(ours.numpy(), before)
        np.testing.assert_array_equal(flat.numpy(), before.reshape(-1))
    shared = ours.view(4, 5, -1)  # the batch and channels kept: NumPy's view of the memory
    shared.add_(1)
    theirs.view(4, 5, -1).add_(1)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_a_copied_view_follows_in_place_changes_of_the_result_as_torchs_view_does():
    """The copy is brought up to date after each in-place change of the memory it copies:
    through the result, through another view of it, and recorded in a graph."""
    flats = []
    for m in (sg, torch):
        w = weight(m, 2).requires_grad_()
        result = m.nn.functional.conv2d(image(m, 2), w)
        flat = result.view(-1)  # a copy here (the batch is last in memory), a view in torch
        result.mul_(2)
        result[1].zero_()  # a view of the result
        result.relu_()  # recorded: the result requires grad
        flat.sum().backward()
        flats.append((flat, w.grad))
    for ours, theirs in zip(*flats):
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)


def test_a_copied_view_of_an_inference_tensor_follows_in_place_changes_as_torchs_view_does():
    """Inference tensors count no versions, as PyTorch's, but their memory still keeps its
    view() copies: through the result, a view of it, its ``.data`` and its ``detach()``."""
    flats = []
    for m in (sg, torch):
        with m.inference_mode():
            result = m.nn.functional.conv2d(image(m, 2), weight(m, 2))
            flat = result.view(-1)  # a copy here (the batch is last in memory), a view in torch
            result.mul_(2)
            result[1].zero_()
            result.data.add_(1)
            result.detach().relu_()
        assert flat.is_inference()
        flats.append(flat.clone())
    np.testing.assert_allclose(flats[0].numpy(), flats[1].numpy(), rtol=1e-12)


def test_a_deep_copy_of_the_result_leaves_the_copied_view_alone():
    """The deep copy is new memory: its in-place changes are not the view's (the copied
    counter once refreshed the original's view from the deep copy)."""
    result = sg.nn.functional.conv2d(image(sg, 2), weight(sg, 2))
    flat = result.view(-1)
    copied = copy.deepcopy(result)
    copied.add_(5)
    np.testing.assert_array_equal(flat.numpy(), result.numpy().reshape(-1))
    result.mul_(2)  # the view still follows its own result
    np.testing.assert_array_equal(flat.numpy(), result.numpy().reshape(-1))


def test_a_copied_view_saved_for_backward_is_refused_after_a_change_as_torchs():
    for m in (sg, torch):
        result = m.nn.functional.conv2d(image(m, 2), weight(m, 2).requires_grad_())
        flat = result.view(-1)
        loss = (flat * flat).sum()  # saves the view
        result.add_(1)
        with pytest.raises(RuntimeError, match="modified by an in-?place operation"):
            loss.backward()


def test_copied_views_that_are_gone_are_no_longer_brought_up_to_date():
    result = sg.nn.functional.conv2d(image(sg, 2), weight(sg, 2))
    for _ in range(10):
        result.view(-1)
    kept = result.view(-1)
    result.add_(1)
    assert len(result._counter) == 2  # the count, and the one copy alive
    np.testing.assert_array_equal(kept.numpy(), result.numpy().reshape(-1))


def test_an_in_place_change_of_a_copied_views_result_is_refused_by_jit():
    conv = sg.nn.Conv2d(3, 5, 3).double()

    def step(x):
        result = conv(x)
        flat = result.view(-1)
        result.relu_()
        return flat.sum()

    jitted = sg.jit(step)
    jitted(image(sg, 2))  # the eager call
    with pytest.raises(sg.JitError, match=r"in-place change of a tensor that a view\(\) copied"):
        jitted(image(sg, 2))


def test_a_shape_error_of_a_writable_tensor_does_not_say_read_only():
    with pytest.raises(RuntimeError, match=r"^copy_: cannot copy shape \(4,\) into \(3,\)$"):
        sg.zeros(3).copy_(sg.zeros(4))
