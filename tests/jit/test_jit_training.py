"""Training under ``scratchgrad.jit`` ends where eager training ends: the benchmark workloads
W1-W5 (at tiny sizes), and an epoch with what users put around a step (an LR scheduler and
new betas between jitted steps, gradient clipping, dropout from a seeded generator, a last
batch of another size; tests/jit/test_jit.py checks each alone) give,
after N jitted steps, the model and optimizer state dicts and the losses of N eager steps,
bit for bit (a replay runs the same array calls). Each test also counts the calls that ran the
step's Python code (the eager first one and each recording), so a jit that silently ran
everything eagerly would fail."""

import sys
from pathlib import Path

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import tensor_api  # noqa: E402
import workloads  # noqa: E402

# each step counts its Python calls in a list, which the jit warns a replay will not do
# (tests/jit/test_jit_pitfalls.py checks that warning)
pytestmark = pytest.mark.filterwarnings("ignore:scratchgrad.jit.*while it was recorded")

STEPS = 6  # eager, record, record again, then replays
WORKLOAD_STEPS = 200  # issue 14's check: about 0.8 s for the five at these sizes


def tiny(workload_id: str) -> workloads.Problem:
    """The workload's model, loss and optimizer with fewer units and rows, for speed."""
    problem = workloads.make_problem(workload_id)
    if workload_id == "W3":  # digits 64-16-10, Adam, two batches of 8
        problem.sizes = (64, 16, 10)
        problem.params = workloads.mlp_params(problem.sizes, seed=14)
        problem.batches = [(x[:8], y[:8]) for x, y in problem.batches[:2]]
    if workload_id == "W4":  # 784-32-32-10, SGD with momentum, batch 8
        problem.sizes = (784, 32, 32, 10)
        problem.params = workloads.mlp_params(problem.sizes, seed=16)
        problem.batches = [(x[:8], y[:8]) for x, y in problem.batches]
    if workload_id == "W5":  # the CNN as it is, batch 4
        problem.batches = [(x[:4], y[:4]) for x, y in problem.batches]
    return problem


def state(model: nn.Module, opt: sg.optim.Optimizer) -> dict:
    """Everything a step changes, as NumPy arrays and Python values."""
    arrays = {k: v.numpy() for k, v in model.state_dict().items()}
    opt_state = opt.state_dict()
    for i, entry in opt_state["state"].items():
        for k, v in entry.items():
            arrays[f"opt.{i}.{k}"] = v.numpy() if isinstance(v, sg.Tensor) else np.asarray(v)
    arrays["lr"] = np.array([group["lr"] for group in opt_state["param_groups"]])
    return arrays


def assert_same_state(jitted: dict, eager: dict) -> None:
    assert jitted.keys() == eager.keys()
    for key in eager:
        np.testing.assert_array_equal(jitted[key], eager[key], err_msg=key)


def train_workload(problem: workloads.Problem, jit: bool, steps: int = STEPS):
    """``steps`` steps of the workload (tensor_api's model, loss and optimizer); the losses,
    the final state and how many calls ran the Python code of the step."""
    model = tensor_api.build_model(sg, problem)
    opt = tensor_api.make_optimizer(sg, problem, model.parameters())
    loss_fn = F.mse_loss if problem.loss == "mse" else F.cross_entropy
    python_calls = []

    def step(x, y):
        python_calls.append(1)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step = sg.jit(step) if jit else step
    batches = [(sg.from_numpy(x), sg.from_numpy(y)) for x, y in problem.batches]
    losses = [step(*batches[i % len(batches)]).item() for i in range(steps)]
    return losses, state(model, opt), len(python_calls)


@pytest.mark.parametrize("workload_id", ["W1", "W2", "W3", "W4", "W5"])
def test_workload_trained_jitted_equals_eager(workload_id):
    problem = tiny(workload_id)
    eager_losses, eager_state, _ = train_workload(problem, jit=False, steps=WORKLOAD_STEPS)
    jit_losses, jit_state, python_calls = train_workload(problem, jit=True, steps=WORKLOAD_STEPS)
    assert jit_losses == eager_losses
    assert_same_state(jit_state, eager_state)
    assert python_calls == 3  # eager, record, record again; the other steps were replays


def _run(jit: bool, between_steps, clip: float | None = None, steps=STEPS, sizes=(6,)):
    """Train an MLP with dropout with Adam for ``steps`` steps on batches of the given sizes
    (in turn), clipping the gradients' norm to ``clip`` inside the step; ``between_steps(opt)``
    makes what runs after each step returns (outside the jitted function)."""
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 3))
    opt = sg.optim.Adam(model.parameters(), lr=0.01, betas=(0.8, 0.9))
    after_step = between_steps(opt)
    rng = np.random.default_rng(1)
    batches = [
        (sg.from_numpy(rng.standard_normal((n, 4))).float(), sg.from_numpy(rng.integers(0, 3, n)))
        for n in sizes
    ]
    python_calls = []

    def step(x, y):
        python_calls.append(1)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        return loss

    step = sg.jit(step) if jit else step
    sg.manual_seed(2)  # the dropout masks' stream, the same for both runs
    losses = []
    for i in range(steps):
        losses.append(step(*batches[i % len(batches)]).item())
        after_step()
    return losses, state(model, opt), len(python_calls)


def _assert_jitted_equals_eager(between_steps, programs=1, **options):
    eager = _run(False, between_steps, **options)
    jitted = _run(True, between_steps, **options)
    assert jitted[0] == eager[0]
    assert_same_state(jitted[1], eager[1])
    assert jitted[2] == 1 + 2 * programs  # the eager call and two recordings per program


def test_betas_changed_between_jitted_steps_are_read_at_replay():
    def lower_beta1(opt):
        def after_step():
            beta1, beta2 = opt.param_groups[0]["betas"]
            opt.param_groups[0]["betas"] = (beta1 * 0.9, beta2)

        return after_step

    _assert_jitted_equals_eager(lower_beta1)


def test_an_epoch_with_dropout_a_scheduler_clipping_and_a_short_last_batch():
    """All at once, as a training loop has them: dropout masks drawn at each replay from the
    seeded stream, a learning rate that a scheduler lowers between steps, gradient clipping
    inside the step, and a smaller last batch, which records a second program."""
    _assert_jitted_equals_eager(
        lambda opt: sg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.7).step,
        programs=2,
        clip=0.05,
        steps=8,
        sizes=(6, 6, 2),
    )


class SignMomentum(sg.optim.Optimizer):
    """An optimizer written as PyTorch's tutorials write one: its own ``step`` reads each
    group's hyper-parameters in Python and keeps a momentum buffer in ``self.state``."""

    def __init__(self, params, lr=0.01, beta=0.9):
        super().__init__(params, {"lr": lr, "beta": beta})

    @sg.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "buffer" not in state:
                    state["buffer"] = sg.zeros_like(p)
                state["buffer"].mul_(group["beta"]).add_(p.grad)
                p.add_(state["buffer"].sign(), alpha=-group["lr"])


@pytest.mark.parametrize("schedule", ["StepLR", "LambdaLR", "beta set between calls"])
def test_an_optimizer_of_the_users_code_follows_its_schedule_under_jit(schedule):
    """A user's ``Optimizer`` subclass with its own ``step`` is run again whole by each replay
    (as ``Optimizer.step`` is), so the learning rate a scheduler sets, or a setting changed
    between calls, is read at each call: jitted steps equal eager ones bit for bit. Recorded
    as array calls, its ``group["lr"]`` would be frozen at the recording's value."""

    def train(jit):
        sg.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
        opt = SignMomentum(model.parameters(), lr=0.1)
        if schedule == "StepLR":
            scheduler = sg.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        else:
            scheduler = sg.optim.lr_scheduler.LambdaLR(opt, lambda t: 1 / (1 + t))
        x, y = sg.randn(5, 3), sg.randn(5, 1)

        def step(x, y):
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if schedule != "beta set between calls":
                scheduler.step()
            return loss.detach()

        run, losses = sg.jit(step) if jit else step, []
        for _ in range(STEPS + 3):
            losses.append(run(x, y).item())
            if schedule == "beta set between calls":
                opt.param_groups[0]["beta"] *= 0.5
        return losses, model.state_dict(), run

    (eager, state, _), (jitted, jitted_state, run) = train(False), train(True)
    assert jitted == eager
    for key in state:
        np.testing.assert_array_equal(jitted_state[key].numpy(), state[key].numpy())
    assert run.calls == STEPS + 3 and run.fast is not None  # it replayed
