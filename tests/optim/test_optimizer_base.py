"""The ``Optimizer`` base class against PyTorch's: step hooks
(``register_step_pre_hook`` / ``register_step_post_hook``) run in order around each step,
once, with the step's arguments; a pre-hook can replace the arguments; handles remove them; a
custom optimizer's own ``step`` runs them too. A 0-d tensor learning rate steps as a number."""

import numpy as np
import pytest
import torch

import scratchgrad as sg


def _run(m, make_optimizer, steps=3):
    """Parameters after ``steps`` SGD-like steps with hooks logging and an EMA post-hook."""
    w = m.tensor([1.0, -2.0, 3.0], requires_grad=True)
    optimizer = make_optimizer(m, w)
    ema, log = w.detach().clone(), []

    def pre(opt, args, kwargs):
        log.append(("pre", len(args), sorted(kwargs), opt is optimizer))

    def post(opt, args, kwargs):
        log.append(("post", len(args), sorted(kwargs)))
        with m.no_grad():
            ema.lerp_(w, 0.5)

    handles = [optimizer.register_step_pre_hook(pre), optimizer.register_step_post_hook(post)]
    for step in range(steps):
        optimizer.zero_grad()
        (w**2).sum().backward()
        if step == steps - 1:
            for handle in handles:
                handle.remove()
        optimizer.step()
    return w.detach().numpy(), ema.numpy(), log


def _adam(m, w):
    return m.optim.Adam([w], lr=0.1)


def _custom(m, w):
    class SignSGD(m.optim.Optimizer):
        def __init__(self, params, lr):
            super().__init__(params, {"lr": lr})

        @m.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    p.add_(p.grad.sign(), alpha=-group["lr"])

    return SignSGD([w], lr=0.25)


def _subclass_calling_super(m, w):
    class CountingSGD(m.optim.SGD):
        def step(self, closure=None):
            return super().step(closure)

    return CountingSGD([w], lr=0.1, momentum=0.9)


@pytest.mark.parametrize("make", [_adam, _custom])
def test_hooks_run_around_each_step_as_torchs(make):
    ours, theirs = _run(sg, make), _run(torch, make)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
    assert ours[2] == theirs[2]
    assert len(ours[2]) == 4  # two steps with hooks, each hook once per step


def test_a_step_calling_super_step_runs_the_hooks_once():
    """PyTorch's run twice here if an SGD was made earlier in the process (its SGD.step is then
    patched too), once otherwise; ours run once always."""
    ours, theirs = _run(sg, _subclass_calling_super), _run(torch, _subclass_calling_super)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    assert [entry[0] for entry in ours[2]] == ["pre", "post", "pre", "post"]


@pytest.mark.parametrize("m", [sg, torch], ids=["scratchgrad", "torch"])
def test_a_pre_hook_can_replace_the_arguments(m):
    w = m.ones(1, requires_grad=True)
    optimizer = m.optim.SGD([w], lr=0.1)
    calls = []

    def closure():
        calls.append(1)
        return m.tensor(7.0)

    optimizer.register_step_pre_hook(lambda opt, args, kwargs: ((opt, closure), {}))
    w.sum().backward()
    assert optimizer.step().item() == 7.0
    assert calls == [1]


@pytest.mark.parametrize("m", [sg, torch], ids=["scratchgrad", "torch"])
def test_a_pre_hook_returning_something_else_is_an_error(m):
    w = m.ones(1, requires_grad=True)
    optimizer = m.optim.SGD([w], lr=0.1)
    optimizer.register_step_pre_hook(lambda opt, args, kwargs: 3)
    w.sum().backward()
    message = r"must return None or a tuple of \(new_args, new_kwargs\), but got 3"
    with pytest.raises(RuntimeError, match=message):
        optimizer.step()


NAMES = ["SGD", "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "Adagrad", "RMSprop", "ASGD", "Rprop"]


@pytest.mark.parametrize("name", NAMES)
def test_a_tensor_learning_rate_steps_as_torchs(name):
    results = []
    for m in (sg, torch):
        p = m.tensor([1.0, -2.0, 0.5], requires_grad=True)
        optimizer = getattr(m.optim, name)([p], lr=m.tensor(0.1))
        scheduler = m.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
        for _ in range(3):
            optimizer.zero_grad()
            (p**2).sum().backward()
            optimizer.step()
            scheduler.step()
        results.append((p.detach().numpy(), float(optimizer.param_groups[0]["lr"])))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    assert results[0][1] == pytest.approx(results[1][1])
