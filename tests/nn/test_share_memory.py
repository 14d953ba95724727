"""``Module.share_memory()`` and ``Tensor.share_memory_()``, as PyTorch's on CPU: the memory
moves to shared memory (``is_shared()``), so a forked process's in-place optimizer step (Hogwild
training) is seen by its parent; without it, the child changes a copy."""

import multiprocessing

import pytest
import torch

import scratchgrad as sg


def _step(model):
    optimizer = sg.optim.SGD(model.parameters(), lr=1.0)
    for p in model.parameters():
        p.grad = sg.ones_like(p)
    optimizer.step()


def _in_a_forked_process(model) -> None:
    process = multiprocessing.get_context("fork").Process(target=_step, args=(model,))
    process.start()
    process.join()
    assert process.exitcode == 0


@pytest.mark.parametrize("share", [True, False])
def test_a_forked_processs_step_is_seen_when_shared(share):
    model = sg.nn.Linear(2, 1)
    with sg.no_grad():  # values whose step of -1 is exact, whatever the random stream's state
        for p in model.parameters():
            p.fill_(0.5)
    before = [p.detach().clone() for p in model.parameters()]
    if share:
        assert model.share_memory() is model
    _in_a_forked_process(model)
    changes = [(p - b).tolist() for p, b in zip(model.parameters(), before)]
    assert changes == ([[[-1.0, -1.0]], [-1.0]] if share else [[[0.0, 0.0]], [0.0]])


def test_is_shared_as_torchs():
    for lib in (sg, torch):
        model = lib.nn.BatchNorm1d(2)
        model.weight.grad = lib.zeros(2)
        assert not model.weight.is_shared()
        model.share_memory()
        tensors = [*model.parameters(), *model.buffers(), model.weight.grad]
        assert all(t.is_shared() for t in tensors)
        x = lib.arange(3.0)
        assert x.share_memory_() is x and x.is_shared() and x.tolist() == [0.0, 1.0, 2.0]
