"""``scratchgrad.jit`` on steps calling ``backward(inputs=...)``: the recording notes the walk
the inputs limit (only their ``.grad`` accumulated, only the nodes leading to them run), so a
replay leaves the state of the eager step bit for bit: parameters, every ``.grad`` (None where
eager leaves None), losses, and a non-leaf input's ``.grad`` returned by the step. Each test
counts the calls that ran the step's Python, so a jit running every call eagerly would fail."""

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad import nn

# the steps count their Python calls in a list, which the jit warns a replay will not do
pytestmark = pytest.mark.filterwarnings("ignore:scratchgrad.jit.*while it was recorded")

STEPS = 10


def batches(n: int = STEPS) -> list:
    rng = np.random.default_rng(0)
    return [sg.tensor(rng.normal(size=(8, 2)).astype(np.float32)) for _ in range(n)]


def gan_state(how: str, alternate: bool) -> tuple[list, int]:
    """A generator and a discriminator trained on one shared forward pass, each loss's
    gradient sent into its own network by ``inputs``: both updates in every step, or (with
    ``alternate``) one network per step, chosen by a plain argument. The losses, every
    parameter and ``.grad`` after the steps, and how many calls ran the step's Python."""
    sg.manual_seed(0)
    G, D = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 2)), nn.Linear(2, 1)
    opt_g = sg.optim.SGD(G.parameters(), lr=0.05, momentum=0.9)
    opt_d = sg.optim.Adam(D.parameters(), lr=0.01)
    calls = []

    def step(z, which):
        calls.append(1)
        fake_logits = D(G(z))
        d_loss = (D(z + 1.0) - 1).pow(2).mean() + fake_logits.pow(2).mean()
        g_loss = (fake_logits - 1).pow(2).mean()
        updates = {"D": (opt_d, d_loss, D), "G": (opt_g, g_loss, G)}
        chosen = list(updates.values()) if which == "both" else [updates[which]]
        for opt, loss, net in chosen:  # the steps after both: they change D's weights
            opt.zero_grad()
            loss.backward(inputs=list(net.parameters()), retain_graph=True)
        for opt, _, _ in chosen:
            opt.step()
        return d_loss.detach(), g_loss.detach()

    run = sg.jit(step) if how == "jit" else step
    losses = []
    for i, z in enumerate(batches()):
        which = ("D", "G")[i % 2] if alternate else "both"
        losses += [loss.numpy() for loss in run(z, which)]
    params = [*G.parameters(), *D.parameters()]
    grads = [None if p.grad is None else p.grad.numpy() for p in params]
    return [*losses, *(p.detach().numpy() for p in params), *grads], len(calls)


@pytest.mark.parametrize("alternate", [False, True], ids=["simultaneous", "alternating"])
def test_a_gan_step_with_inputs_replays_the_eager_state(alternate):
    (eager, _), (jitted, calls) = gan_state("eager", alternate), gan_state("jit", alternate)
    assert len(jitted) == len(eager)
    for mine, theirs in zip(jitted, eager):
        if theirs is None:
            assert mine is None
        else:
            np.testing.assert_array_equal(mine, theirs)
    # eager, then each program recorded twice: the other calls replayed
    assert calls == (5 if alternate else 3) < STEPS


def test_a_non_leaf_inputs_grad_returned_by_the_step_equals_eager():
    w = sg.tensor([1.0, -2.0], requires_grad=True)
    v = sg.tensor([0.5, 3.0], requires_grad=True)
    calls = []

    def step(x):
        calls.append(1)
        h = (x * w).tanh()
        ((h * v).sum() ** 2).backward(inputs=[h, w])
        return h.grad

    results = {}
    for how in ("eager", "jit"):
        w.grad = v.grad = None
        run = sg.jit(step) if how == "jit" else step
        outs = [run(x).numpy() for x in batches()]
        assert v.grad is None
        results[how] = [*outs, w.grad.numpy()]
    assert len(calls) == STEPS + 3
    for mine, theirs in zip(results["jit"], results["eager"]):
        np.testing.assert_array_equal(mine, theirs)


def test_gradients_of_a_tensor_passed_alone_in_a_list_reach_each_calls_tensor():
    """Arguments ``(x, [w])``, as many tensors as arguments but one inside a list: a replay
    through the fast path accumulates into each call's ``w`` (it took the list for ``w``)."""
    results = {}
    for how in ("eager", "jit"):

        def step(x, ws):
            ((x * ws[0]).tanh().sum() ** 2).backward(inputs=ws)

        run = sg.jit(step) if how == "jit" else step
        grads = []
        for i, x in enumerate(batches()):
            w = sg.full((8, 2), 0.1 * i, requires_grad=True)
            run(x, [w])
            grads.append(w.grad.numpy())
        if how == "jit":
            assert run.fast is not None
        results[how] = grads
    for mine, theirs in zip(results["jit"], results["eager"]):
        np.testing.assert_array_equal(mine, theirs)


def compiled_module_grads(how: str) -> list:
    """A compiled module's backward node differentiates every parameter; the engine keeps
    only the gradients of ``inputs`` (the first layer's, then the last's, by turns)."""
    sg.manual_seed(0)
    net = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1))
    run = sg.compile(net) if how == "compile" else net
    grads = []
    for i, x in enumerate(batches()):
        for p in net.parameters():
            p.grad = None
        run(x).pow(2).mean().backward(inputs=list(net[2 * (i % 2)].parameters()))
        grads += [None if p.grad is None else p.grad.numpy() for p in net.parameters()]
    if how == "compile":
        assert run._compiled.fast is not None  # replayed, not run eagerly
    return grads


def test_a_compiled_modules_backward_with_inputs_equals_eager():
    eager, compiled = compiled_module_grads("eager"), compiled_module_grads("compile")
    assert [g is None for g in compiled] == [g is None for g in eager]
    for mine, theirs in zip(compiled, eager):
        if theirs is not None:
            np.testing.assert_array_equal(mine, theirs)
