"""The optimizer updates a replay runs as generated NumPy code (scratchgrad/jit/updates.py):
SGD and Adam/AdamW under every option they cover leave, step after step, the parameters and
the optimizer state of the eager optimizer bit for bit (the oracle: scratchgrad's own eager
step on a second copy, itself checked against PyTorch by tests/test_optim*.py), while the
hyper-parameters change between steps; and whatever the generated code was not made for
(a parameter losing its gradient, another branch of the update, another optimizer state, a
new param group, a NumPy learning rate) runs the eager step instead, with the same result.
"""

import ast

import numpy as np
import pytest
from test_jit import train_step

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.jit import updates

# count_updates counts the eager update's calls in a list, which the jit warns a replay will
# not do (the warning's own tests: tests/jit/test_jit_pitfalls.py).
pytestmark = pytest.mark.filterwarnings("ignore:scratchgrad.jit.*while it was recorded")

STEPS = 12  # eager, record, record again, then replays


def mlp(dtype=sg.float32):
    sg.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).to(dtype)


def groups(model):
    """Two param groups, the second with its own learning rate."""
    first, second = list(model[0].parameters()), list(model[2].parameters())
    return [{"params": first}, {"params": second, "lr": 0.03}]


OPTIONS = {
    "sgd": lambda ps: sg.optim.SGD(ps, lr=0.1),
    "sgd-maximize-decay": lambda ps: sg.optim.SGD(ps, lr=0.1, weight_decay=0.01, maximize=True),
    "sgd-momentum": lambda ps: sg.optim.SGD(ps, lr=0.1, momentum=0.9),
    "sgd-momentum-dampening-decay": lambda ps: sg.optim.SGD(
        ps, lr=0.1, momentum=0.8, dampening=0.3, weight_decay=0.01
    ),
    "sgd-nesterov-maximize": lambda ps: sg.optim.SGD(
        ps, lr=0.1, momentum=0.9, nesterov=True, maximize=True
    ),
    "adam": lambda ps: sg.optim.Adam(ps, lr=0.01),
    "adam-decay-maximize": lambda ps: sg.optim.Adam(ps, lr=0.01, weight_decay=0.1, maximize=True),
    # 1 - beta1 >= 0.5: lerp_'s other form
    "adam-amsgrad-small-beta1": lambda ps: sg.optim.Adam(
        ps, lr=0.01, betas=(0.3, 0.9), amsgrad=True
    ),
    "adam-decoupled": lambda ps: sg.optim.Adam(
        ps, lr=0.01, weight_decay=0.1, decoupled_weight_decay=True
    ),
    "adamw": lambda ps: sg.optim.AdamW(ps, lr=0.01),
    "adamw-amsgrad-maximize": lambda ps: sg.optim.AdamW(
        ps, lr=0.01, weight_decay=0.1, amsgrad=True, maximize=True
    ),
}


def data(steps=STEPS, dtype=np.float32):
    rng = np.random.default_rng(1)
    return [
        (sg.from_numpy(rng.standard_normal((6, 4)).astype(dtype)), sg.tensor(rng.integers(0, 3, 6)))
        for _ in range(steps)
    ]


def arrays(model, opt):
    """Everything a step changes, as arrays: parameters, gradients, optimizer state."""
    out = [p.array for p in model.parameters()]
    out += [np.asarray("no grad" if p.grad is None else p.grad.array) for p in model.parameters()]
    for entries in opt.state_dict()["state"].values():
        out += [np.asarray(v.array if isinstance(v, sg.Tensor) else v) for v in entries.values()]
    return out


def assert_equal(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and np.array_equal(x, y)


def count_updates(monkeypatch, cls):
    """Count the calls of ``cls._update``, the eager update (the generated code never calls
    it)."""
    calls = []
    eager_update = cls._update

    def counted(self, group, params):
        calls.append(1)
        return eager_update(self, group, params)

    monkeypatch.setattr(cls, "_update", counted)
    return calls


def change_hyperparameters(opt, step):
    """What users change between steps: the learning rate (a scheduler), the betas, the
    momentum, the weight decay."""
    for group in opt.param_groups:
        group["lr"] *= 0.9
        if "betas" in group:
            beta1, beta2 = group["betas"]
            group["betas"] = (beta1 * 0.99, beta2)
        if group.get("momentum"):
            group["momentum"] = 0.9 - 0.01 * step
        if group["weight_decay"]:
            group["weight_decay"] *= 1.1


@pytest.mark.parametrize("name", OPTIONS)
@pytest.mark.parametrize("dtype", [sg.float32, sg.float64])
@pytest.mark.parametrize(
    "bucket_size", [1 << 16, 1, 30]
)  # a bucket per group, per parameter, mixed
def test_every_step_equals_eager_bit_for_bit(name, dtype, bucket_size, monkeypatch):
    """Adam updates buckets of parameters as one flat array: all of a group's parameters
    here, or each alone, or (30 numbers) the 8x4 weight alone and its bias with the next."""
    monkeypatch.setattr(updates, "_BUCKET_SIZE", bucket_size)
    model_e, model_j = mlp(dtype), mlp(dtype)
    opt_e, opt_j = OPTIONS[name](groups(model_e)), OPTIONS[name](groups(model_j))
    calls = count_updates(monkeypatch, type(opt_e))
    eager, jitted = train_step(model_e, opt_e), sg.jit(train_step(model_j, opt_j))
    for i, (x, y) in enumerate(data(dtype=np.float32 if dtype == sg.float32 else np.float64)):
        assert eager(x, y).item() == jitted(x, y).item()
        assert_equal(arrays(model_j, opt_j), arrays(model_e, opt_e))
        change_hyperparameters(opt_e, i), change_hyperparameters(opt_j, i)
    # per param group: STEPS eager updates, 3 of the jitted step's (eager, two recordings)
    assert len(calls) == 2 * (STEPS + 3)


@pytest.mark.parametrize("name", ["sgd", "sgd-momentum", "sgd-nesterov-maximize"])
@pytest.mark.parametrize("dtype", [sg.float16, sg.float32, sg.float64])
def test_sgd_multiplies_by_0d_arrays_holding_the_hyperparameters_read(name, dtype):
    """The generated SGD update multiplies by 0-d arrays of the parameters' dtype holding
    the learning rate and momentum it reads (half the cost of NumPy converting a Python
    number at each call), set again only when it reads another object: eager bits for each
    value, the same object again, a new one, an int, one that float16 rounds to 0."""
    model_e, model_j = mlp(dtype), mlp(dtype)
    opt_e, opt_j = OPTIONS[name](model_e.parameters()), OPTIONS[name](model_j.parameters())
    eager, jitted = train_step(model_e, opt_e), sg.jit(train_step(model_j, opt_j))
    rates = [0.1, 0.1, 0.1, 0.1, 0.05, 1, 0.05, 0.0501, 1e-9, 0.2, 0.2, 0.2]
    numpy_dtype = np.float64 if dtype == sg.float64 else np.float32
    for i, (lr, (x, y)) in enumerate(zip(rates, data(dtype=numpy_dtype))):
        for opt in (opt_e, opt_j):
            opt.param_groups[0]["lr"] = lr
            opt.param_groups[0]["momentum"] = opt.param_groups[0]["momentum"] and 0.9 - i / 64
        x = x.to(dtype)
        assert eager(x, y).item() == jitted(x, y).item()
        assert_equal(arrays(model_j, opt_j), arrays(model_e, opt_e))
    (recording,) = [r for recordings in jitted.recordings.values() for r in recordings]
    (update,) = [c for c in recording.replay.__globals__.values() if isinstance(c, updates.Update)][
        1:
    ]
    lr_array = f"lr_0_{np.dtype(numpy_dtype if dtype != sg.float16 else np.float16).name}"
    assert f"np_multiply(grad0b0, {lr_array}, " in update.source or name != "sgd"
    assert update.namespace[lr_array].dtype == model_j[0].weight.array.dtype
    assert update.namespace[lr_array] == np.array(0.2, update.namespace[lr_array].dtype)


@pytest.mark.parametrize("name", OPTIONS)
def test_the_generated_updates_ufuncs_take_no_python_number(name):
    """Each hyper-parameter and each number computed from them (Adam's bias corrections)
    reaches NumPy as a 0-d array of the parameters' dtype (see the test above; the bits:
    ``test_every_step_equals_eager_bit_for_bit``)."""
    model = mlp()
    opt = OPTIONS[name](groups(model))
    jitted = sg.jit(train_step(model, opt))
    for x, y in data(steps=4):
        jitted(x, y)
    (recording,) = [r for recordings in jitted.recordings.values() for r in recordings]
    (update,) = [c for c in recording.replay.__globals__.values() if isinstance(c, updates.Update)][
        1:
    ]
    calls = [
        node
        for node in ast.walk(ast.parse(update.source))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "").startswith("np_")
    ]
    numbers = {f"{k}_{g}" for g, group in enumerate(opt.param_groups) for k in [*group, "beta2"]}
    arguments = [a for call in calls for a in call.args]  # (the code names the numbers lr_0, ...)
    assert calls and all(isinstance(a, ast.Name | ast.Tuple) for a in arguments)
    assert not numbers & {a.id for a in arguments if isinstance(a, ast.Name)}


def test_zero_grad_to_zeros_is_the_python_call():
    model_e, model_j = mlp(), mlp()
    opt_e, opt_j = (sg.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (model_e, model_j))

    def step_of(model, opt):
        def step(x, y):
            opt.zero_grad(set_to_none=False)
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

        return step

    eager, jitted = step_of(model_e, opt_e), sg.jit(step_of(model_j, opt_j))
    for x, y in data(6):
        eager(x, y), jitted(x, y)
        assert_equal(arrays(model_j, opt_j), arrays(model_e, opt_e))


@pytest.mark.parametrize("name", ["sgd-momentum", "adam"])
@pytest.mark.parametrize("frozen_at, to_none_at", [(3, 4), (3, 5), (4, 4), (1, 2)])
def test_zero_grad_to_none_taking_over_while_a_layer_is_frozen_records_anew(
    name, frozen_at, to_none_at
):
    """A frozen layer keeps its zeroed gradient while ``zero_grad`` sets zeros, and loses it
    once ``set_to_none=True`` takes over: the two recordings around the change see it with a
    gradient, then without, so their updates differ (in which parameters they update). Each
    guards on that, so the later one is kept, not refused (a JitError before), and every
    step is eager's bit for bit."""
    models = mlp(), mlp()
    opts = [OPTIONS[name](m.parameters()) for m in models]
    to_none = [False]

    def step_of(model, opt):
        def step(x, y):
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=to_none[0])
            return loss

        return step

    eager, jitted = step_of(models[0], opts[0]), sg.jit(step_of(models[1], opts[1]))
    for i, (x, y) in enumerate(data(8)):
        to_none[0] = i >= to_none_at
        for model in models:
            model[2].bias.requires_grad_(i < frozen_at)
        assert eager(x, y).item() == jitted(x, y).item()
        assert_equal(arrays(models[1], opts[1]), arrays(models[0], opts[0]))


# ---- what the generated code was not made for runs the eager step ----------------------------


def _drop_last_gradient(model, opt):
    model[2].bias.grad = None  # no gradient: the eager step skips it


def _toggle_nesterov(model, opt):
    opt.param_groups[0]["nesterov"] = not opt.param_groups[0]["nesterov"]


def _maximize(model, opt):
    opt.param_groups[1]["maximize"] = True


def _no_momentum(model, opt):
    opt.param_groups[0]["momentum"] = 0


def _numpy_learning_rate(model, opt):
    opt.param_groups[0]["lr"] = np.float64(opt.param_groups[0]["lr"])  # promotes to float64


def _reload_state(model, opt):
    opt.load_state_dict(opt.state_dict())


def _clear_state(model, opt):
    opt.state.clear()  # Adam starts its moments again


def _replace_a_state_tensor(model, opt):
    state = opt.state[model[0].bias]
    state["exp_avg_sq"] = state["exp_avg_sq"] * 2  # not the array the generated code updates


def _set_step_counts(model, opt):
    for state in opt.state.values():  # as a resumed run may: the bias corrections follow
        state["step"] = 1000


def _new_param_group(model, opt):
    bias = opt.param_groups[1]["params"].pop()  # moved from the second group into a new one
    opt.add_param_group({"params": [bias], "lr": 0.5})


CHANGES = {
    "a gradient is None": ("sgd-nesterov-maximize", _drop_last_gradient),
    # then that parameter's step count lags behind the others' of its bucket
    "a gradient is None, Adam": ("adam-decay-maximize", _drop_last_gradient),
    "nesterov toggled": ("sgd-nesterov-maximize", _toggle_nesterov),
    "momentum set to 0": ("sgd-momentum", _no_momentum),
    "maximize set": ("adam", _maximize),
    "a NumPy learning rate": ("adamw", _numpy_learning_rate),
    "a loaded state dict": ("adam-amsgrad-small-beta1", _reload_state),
    "the state cleared": ("adam", _clear_state),
    "a state tensor replaced": ("adamw", _replace_a_state_tensor),
    "a new param group": ("sgd-momentum", _new_param_group),
}


@pytest.mark.parametrize("change", CHANGES)
def test_what_the_generated_update_was_not_made_for_runs_the_eager_step(change):
    """The update is jitted alone (gradients made eagerly between the calls), so that a
    change between replays reaches it without a new recording."""
    _update_equals_eager_after(*CHANGES[change])


def test_step_counts_set_between_replays_are_read_by_the_generated_update(monkeypatch):
    """Adam's bias corrections come from each parameter's step count, read at each replay
    (here set to 1000, as a resumed run may), still by the generated code."""
    calls = count_updates(monkeypatch, sg.optim.Adam)
    _update_equals_eager_after("adam-decay-maximize", _set_step_counts)
    assert len(calls) == 2 * (8 + 1 + 2)  # eager steps; the first call; two recordings


def _update_equals_eager_after(name, make_change):
    """Eager and jitted updates after the same gradients, ``make_change`` made to both after
    two replays: equal arrays after every step."""
    model_e, model_j = mlp(), mlp()
    opt_e, opt_j = OPTIONS[name](groups(model_e)), OPTIONS[name](groups(model_j))
    update = sg.jit(opt_j.step)
    for i, (x, y) in enumerate(data(8)):
        for model in (model_e, model_j):
            model.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
        if i == 5:  # after two replays of the generated code
            make_change(model_e, opt_e), make_change(model_j, opt_j)
        opt_e.step(), update()
        assert_equal(arrays(model_j, opt_j), arrays(model_e, opt_e))


def test_two_programs_of_one_optimizer_share_its_flattened_state(monkeypatch):
    """A step recorded for two batch sizes (a short last batch): both programs update the
    same state arrays with generated code (neither falls back to the eager update)."""
    model_e, model_j = mlp(), mlp()
    opt_e, opt_j = OPTIONS["adam"](groups(model_e)), OPTIONS["adam"](groups(model_j))
    calls = count_updates(monkeypatch, sg.optim.Adam)
    eager, jitted = train_step(model_e, opt_e), sg.jit(train_step(model_j, opt_j))
    for i, (x, y) in enumerate(data(16)):
        if i % 4 == 3:
            x, y = x[:2], y[:2]
        assert eager(x, y).item() == jitted(x, y).item()
        assert_equal(arrays(model_j, opt_j), arrays(model_e, opt_e))
    assert len(calls) == 2 * (16 + 1 + 2 * 2)  # eager steps; the first call; two recordings each


def test_a_numpy_learning_rate_when_recording_keeps_the_python_step(monkeypatch):
    """No generated code for hyper-parameters that are not Python numbers (a NumPy float64
    promotes the eager update to float64): every replay runs the eager step."""
    model_e, model_j = mlp(), mlp()
    opt_e, opt_j = (sg.optim.Adam(m.parameters(), lr=np.float64(0.01)) for m in (model_e, model_j))
    calls = count_updates(monkeypatch, sg.optim.Adam)
    eager, jitted = train_step(model_e, opt_e), sg.jit(train_step(model_j, opt_j))
    for x, y in data(6):
        assert eager(x, y).item() == jitted(x, y).item()
        assert_equal(arrays(model_j, opt_j), arrays(model_e, opt_e))
    assert len(calls) == 2 * 6


class Mixed(nn.Module):
    """A float32 layer, then a float64 one: one param group of both dtypes."""

    def __init__(self):
        super().__init__()
        sg.manual_seed(0)
        self.body, self.head = nn.Linear(4, 8), nn.Linear(8, 3).double()

    def forward(self, x):
        return self.head(self.body(x).tanh().double())


@pytest.mark.parametrize("name", ["sgd-momentum", "adam"])
def test_a_group_of_float32_and_float64_parameters_keeps_each_dtype(name, monkeypatch):
    """A bucket takes parameters of one dtype: the float64 ones' state stays float64 and
    both dtypes get generated code, equal to eager. (They shared the float32 parameters'
    bucket: their momentum buffers or moments became views of a float32 array, losing bits,
    and the next recording, finding other dtypes, raised a JitError.)"""
    model_e, model_j = Mixed(), Mixed()
    opt_e, opt_j = OPTIONS[name](model_e.parameters()), OPTIONS[name](model_j.parameters())
    calls = count_updates(monkeypatch, type(opt_e))
    eager, jitted = train_step(model_e, opt_e), sg.jit(train_step(model_j, opt_j))
    for x, y in data():
        assert eager(x, y).item() == jitted(x, y).item()
        assert_equal(arrays(model_j, opt_j), arrays(model_e, opt_e))
    assert len(calls) == STEPS + 3  # eager steps; the jitted step's eager call and recordings
