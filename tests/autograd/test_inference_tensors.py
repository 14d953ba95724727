"""Inference tensors: what ``inference_mode`` makes, which uses of them outside it raise, and
with which words, each case run on scratchgrad and on PyTorch and compared.
"""

import copy
import sys
import threading

import numpy as np
import pytest

import scratchgrad as sg

torch = pytest.importorskip("torch")


def outcome(lib, case):
    """What ``case(lib, x, w)`` gives, ``x`` an inference tensor of ones and ``w`` a normal
    leaf that requires grad: its value as a list or bool, or the error's type and message."""
    with lib.inference_mode():
        x = lib.ones(3)
    w = lib.ones(3, requires_grad=True)
    try:
        out = case(lib, x, w)
    except (RuntimeError, TypeError) as error:
        return type(error).__name__, str(error)
    return out.tolist() if hasattr(out, "tolist") else out


CASES = {
    # which tensors are inference tensors
    "made inside": lambda lib, x, w: x.is_inference(),
    "normal": lambda lib, x, w: w.is_inference(),
    "view": lambda lib, x, w: x[1:].is_inference(),
    "detach": lambda lib, x, w: x.detach().is_inference(),
    "data": lambda lib, x, w: x.data.is_inference(),
    "clone": lambda lib, x, w: x.clone().is_inference(),
    "op outside": lambda lib, x, w: (x * 2).is_inference(),
    "op outside with grad, nothing saved": lambda lib, x, w: (x + w).is_inference(),
    # saved for backward outside inference mode
    "mul": lambda lib, x, w: x * w,
    "mul of a view": lambda lib, x, w: x.view(3, 1) * w,
    "matmul": lambda lib, x, w: x @ w,
    "loss": lambda lib, x, w: lib.nn.functional.mse_loss(w, x),
    "under no_grad": lambda lib, x, w: _under(lib.no_grad(), lambda: x * w),
    "under inference_mode(False)": lambda lib, x, w: _under(
        lib.inference_mode(False), lambda: x * w
    ),
    "under inference_mode": lambda lib, x, w: _under(lib.inference_mode(), lambda: x * w),
    # in place
    "add_": lambda lib, x, w: x.add_(1),
    "mul_ of a view": lambda lib, x, w: x[1:].mul_(2),
    "fill_": lambda lib, x, w: x.fill_(2.0),
    "copy_": lambda lib, x, w: x.copy_(lib.zeros(3)),
    "setitem": lambda lib, x, w: x.__setitem__(0, 5.0),
    "add_ under no_grad": lambda lib, x, w: _under(lib.no_grad(), lambda: x.add_(1)),
    "add_ in inference mode": lambda lib, x, w: _under(lib.inference_mode(), lambda: x.add_(1)),
    "add_ of a normal tensor in inference mode": lambda lib, x, w: _under(
        lib.inference_mode(), lambda: w.detach().add_(1)
    ),
    "optimizer step": lambda lib, x, w: _step(lib, x),
    # requires_grad and the version counter
    "requires_grad_": lambda lib, x, w: x.requires_grad_(),
    "requires_grad_(False)": lambda lib, x, w: x.requires_grad_(False).requires_grad,
    "requires_grad_ in inference mode": lambda lib, x, w: _under(
        lib.inference_mode(), lambda: x.requires_grad_().requires_grad
    ),
    "Parameter": lambda lib, x, w: lib.nn.Parameter(x),
    "_version": lambda lib, x, w: x._version,
}


def _under(mode, fn):
    with mode:
        return fn()


def _step(lib, x):
    """An SGD step on a parameter made in inference mode from ``x``."""
    with lib.inference_mode():
        p = lib.nn.Parameter(x)
    p.grad = lib.ones(3)
    lib.optim.SGD([p], lr=0.1).step()


@pytest.mark.parametrize("name", list(CASES))
def test_as_torch(name):
    assert outcome(sg, CASES[name]) == outcome(torch, CASES[name])


def test_mode_inside_mode():
    """A tensor made in ``inference_mode(False)`` inside inference mode, or in ``no_grad``,
    is a normal tensor; one made in inference mode from a normal tensor is an inference one,
    its view is not."""
    for lib in (sg, torch):
        w = lib.ones(2)
        with lib.inference_mode():
            with lib.inference_mode(False):
                inner = lib.ones(2)
            made, view = w * 2, w[1:]
        with lib.no_grad():
            plain = lib.ones(2)
        assert (inner.is_inference(), made.is_inference(), view.is_inference()) == (
            False,
            True,
            False,
        )
        assert not plain.is_inference()


def test_enable_grad_inside_inference_mode_records_nothing_as_torch():
    """Grad mode turns on (``is_grad_enabled``), but inference mode keeps ops from recording;
    ``inference_mode(False)`` inside records again, and each block restores both."""
    seen = []
    for lib in (sg, torch):
        w = lib.ones(2, requires_grad=True)
        with lib.inference_mode():
            modes = [lib.is_grad_enabled()]
            with lib.enable_grad():
                y = w * 2
                modes.append(lib.is_grad_enabled())
                with lib.inference_mode(False):
                    z = w * 2
                    modes.append(lib.is_grad_enabled())
            with lib.set_grad_enabled(True):
                v = w * 2
            modes.append(lib.is_grad_enabled())
        modes.append(lib.is_grad_enabled())
        seen.append((modes, y.requires_grad, y.is_inference(), z.requires_grad, v.requires_grad))
    assert seen[0] == seen[1]


def test_other_threads_make_normal_tensors():
    """The mode is per thread: while one thread is in inference mode, the tensors another
    makes are normal ones."""
    inside, done = threading.Event(), threading.Event()

    def infer():
        with sg.inference_mode():
            inside.set()
            done.wait(10)

    thread = threading.Thread(target=infer)
    thread.start()
    inside.wait(10)
    try:
        assert not sg.ones(2).is_inference()
    finally:
        done.set()
        thread.join()
    with sg.inference_mode():
        assert sg.ones(2).is_inference()
    assert not sg.ones(2).is_inference()


def test_the_plain_make_is_back_after_every_block():
    """Outside every inference_mode block (left normally or by an error), the op results are
    made by the plain ``Tensor._make``: the eager engine pays nothing for the mark."""
    plain = sys.modules["scratchgrad.tensor"]._make
    with pytest.raises(ValueError), sg.inference_mode(), sg.inference_mode():
        assert sg.Tensor._make is not plain
        raise ValueError
    assert sg.Tensor._make is plain


def test_training_after_evaluation():
    """Evaluating in inference mode between steps leaves training as it was (the parameters
    stay normal tensors), and a clone of an inference result trains."""
    model = sg.nn.Linear(3, 1)
    opt = sg.optim.SGD(model.parameters(), lr=0.1)
    x = sg.from_numpy(np.ones((4, 3), dtype=np.float32))
    for _ in range(2):
        with sg.inference_mode():
            features = model(x)
        assert features.is_inference() and not model.weight.is_inference()
        loss = (model(x) - features.clone()).pow(2).mean() + model(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()


def test_a_deep_copy_of_an_inference_tensor_is_a_normal_one_as_torchs():
    for m in (sg, torch):
        with m.inference_mode():
            x = m.ones(3)
        copied = copy.deepcopy(x)
        assert x.is_inference() and not copied.is_inference(), m.__name__
        copied.add_(1)  # outside the mode: allowed on a normal tensor
        assert x.tolist() == [1.0] * 3 and copied.tolist() == [2.0] * 3
