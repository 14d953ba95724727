"""Layouts of the tensors a jitted (or compiled) step returns or uses, against eager calls: a
clone (or flip) of a transposed tensor keeps the transposed layout (PyTorch's
``preserve_format``), and a replay returns it so laid out, with eager's bits, as do
``as_strided`` and ``view`` of it in the step."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

CALLS = 5  # eager, record, record again, replay, replay

STEPS = {
    "clone_of_transpose": lambda x: x.t().clone(),
    "clone_of_permuted": lambda x: x.reshape(2, 3, 2).permute(2, 0, 1).clone(),
    "flip_of_transpose": lambda x: x.t().flip(0),
    "clone_then_transpose_back": lambda x: x.t().clone().t() * 1,
    "memory_of_the_clone": lambda x: x.t().clone().as_strided((12,), (1,)) * 2,
    "clone_of_the_clone": lambda x: x.t().clone().clone(),
    "detached_transpose": lambda x: x.t().detach(),
}


def _seen(t):
    """What a program can read of a tensor's layout, and its values and memory."""
    n = t.numel()
    return t.stride(), t.is_contiguous(), t.detach().numpy().tobytes(), t.as_strided((n,), (1,))


@pytest.mark.parametrize("transform", ["jit", "compile"])
@pytest.mark.parametrize("step", STEPS)
def test_a_replay_returns_eagers_layout_and_bits(step, transform):
    replay = getattr(sg, transform)(STEPS[step])
    for i in range(CALLS):
        x = sg.randn(4, 3, generator=sg.Generator().manual_seed(i))
        eager, replayed = STEPS[step](x), replay(x)
        *layout, memory = _seen(replayed)
        *expected, eager_memory = _seen(eager)
        assert layout == expected
        assert memory.numpy().tobytes() == eager_memory.numpy().tobytes()


@pytest.mark.parametrize("step", ["clone_of_transpose", "clone_of_permuted", "memory_of_the_clone"])
def test_a_compiled_clone_gives_eagers_gradient(step):
    compiled = sg.compile(STEPS[step])
    for i in range(CALLS):
        grads = []
        for call in (STEPS[step], compiled):
            x = sg.randn(4, 3, generator=sg.Generator().manual_seed(i)).requires_grad_()
            out = call(x)
            (out * sg.arange(12.0).reshape(out.shape)).sum().backward()
            grads.append((x.grad.stride(), x.grad.numpy().tobytes()))
        assert grads[0] == grads[1]


def test_a_replayed_clone_of_a_transpose_is_torchs():
    jitted = sg.jit(lambda x: x.t().clone())
    values = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    theirs = torch.tensor(values).t().clone()
    for _ in range(CALLS):
        ours = jitted(sg.tensor(values))
        assert (ours.stride(), ours.is_contiguous()) == (theirs.stride(), False)
        assert ours.as_strided((12,), (1,)).tolist() == theirs.as_strided((12,), (1,)).tolist()
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            ours.view(12)


CHANNELS_LAST_STEPS = {
    "contiguous": lambda x: x.contiguous(memory_format=sg.channels_last),
    "contiguous_then_scaled": lambda x: x.contiguous(memory_format=sg.channels_last) * 2,
    "to": lambda x: x.to(sg.float64, memory_format=sg.channels_last),
    "zeros_like": lambda x: sg.zeros_like(x.contiguous(memory_format=sg.channels_last)) + x,
    "memory": lambda x: x.contiguous(memory_format=sg.channels_last).as_strided((120,), (1,)) + 1,
    "back_to_row_major": lambda x: x.contiguous(memory_format=sg.channels_last).contiguous(),
}


@pytest.mark.parametrize("transform", ["jit", "compile"])
@pytest.mark.parametrize("step", CHANNELS_LAST_STEPS)
def test_a_replayed_channels_last_step_gives_eagers_layout_and_bits(step, transform):
    replay = getattr(sg, transform)(CHANNELS_LAST_STEPS[step])
    for i in range(CALLS):
        x = sg.randn(2, 3, 4, 5, generator=sg.Generator().manual_seed(i))
        eager, replayed = CHANNELS_LAST_STEPS[step](x), replay(x)
        seen = [
            (t.stride(), t.is_contiguous(), t.is_contiguous(memory_format=sg.channels_last))
            + (t.detach().numpy().tobytes(),)
            for t in (eager, replayed)
        ]
        assert seen[0] == seen[1]
        assert _memory(replayed) == _memory(eager)


def _memory(t):
    """The entries in memory order, or the error saying they cannot be read (a result of an
    op on a channels-last tensor: row-major to scratchgrad, its memory NumPy's)."""
    try:
        return t.as_strided((t.numel(),), (1,)).tolist()
    except RuntimeError as error:
        return str(error)
