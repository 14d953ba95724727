"""scratchgrad.jit: a jitted training step leaves the same state as the eager one.

The oracle is scratchgrad's own eager step, run side by side on a second copy of the model
(itself checked against PyTorch by the rest of the suite): after N jitted calls, parameters,
gradients and optimizer state must equal N eager calls bit for bit, since a replay makes the
same NumPy calls on the same arrays.
"""

import random
import re
from random import random as random_draw

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad import nn

# A step that counts its calls in a list changes Python state, which the jit warns a replay
# will not change again (the warning's own tests: tests/jit/test_jit_pitfalls.py).
COUNTING = pytest.mark.filterwarnings("ignore:scratchgrad.jit.*while it was recorded")

N_STEPS = 5


def mlp(seed=0):
    sg.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))


def cnn(seed=0):
    sg.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 2, 3, padding=1),
        nn.BatchNorm2d(2),  # on a permuted view (conv's result): its ufuncs mix memory layouts
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(2 * 3 * 3, 3),
    )


def batches(shape, n=N_STEPS, classes=3, seed=1):
    rng = np.random.default_rng(seed)
    return [
        (
            sg.tensor(rng.standard_normal(shape).astype(np.float32)),
            sg.tensor(rng.integers(0, classes, shape[0])),
        )
        for _ in range(n)
    ]


def train_step(model, opt, clip=None):
    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        return loss

    return step


def assert_same_state(model_a, opt_a, model_b, opt_b):
    for (name, a), b in zip(model_a.state_dict().items(), model_b.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    for p, q in zip(model_a.parameters(), model_b.parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    state_a, state_b = opt_a.state_dict(), opt_b.state_dict()
    assert state_a["param_groups"] == state_b["param_groups"]
    for index, entries in state_a["state"].items():
        for key, value in entries.items():
            other = state_b["state"][index][key]
            if isinstance(value, sg.Tensor):
                np.testing.assert_array_equal(value.numpy(), other.numpy(), err_msg=key)
            else:
                assert value == other, key


def run_both(make_model, make_opt, data, clip=None):
    """The same steps eagerly and jitted, from the same weights; the losses of each."""
    model_e, model_j = make_model(), make_model()
    opt_e, opt_j = make_opt(model_e.parameters()), make_opt(model_j.parameters())
    eager, jitted = train_step(model_e, opt_e, clip), sg.jit(train_step(model_j, opt_j, clip))
    losses = [(eager(x, y).item(), jitted(x, y).item()) for x, y in data]
    assert_same_state(model_e, opt_e, model_j, opt_j)
    return losses


OPTIMIZERS = {
    "sgd": lambda ps: sg.optim.SGD(ps, lr=0.1),
    "sgd-momentum-decay": lambda ps: sg.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-2),
    "sgd-nesterov": lambda ps: sg.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    "adam": lambda ps: sg.optim.Adam(ps, lr=0.01),
    "adamw-amsgrad": lambda ps: sg.optim.AdamW(ps, lr=0.01, amsgrad=True),
    "rmsprop": lambda ps: sg.optim.RMSprop(ps, lr=0.01, momentum=0.5),
    "adafactor": lambda ps: sg.optim.Adafactor(ps, lr=0.05, weight_decay=0.1, d=1.5),
}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_mlp_state_equals_eager(name):
    losses = run_both(mlp, OPTIMIZERS[name], batches((6, 4)))
    assert [e for e, _ in losses] == [j for _, j in losses]


@pytest.mark.parametrize("name", ["sgd-momentum-decay", "adam"])
def test_cnn_state_equals_eager(name):
    losses = run_both(cnn, OPTIMIZERS[name], batches((2, 1, 6, 6)))
    assert [e for e, _ in losses] == [j for _, j in losses]


def w5_like_cnn(seed=0):
    """W5's network at a small size: batch-last images through conv, ReLU and max pooling."""
    sg.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(8 * 4 * 4, 3),
    )


def w5_like_training_source() -> str:
    """Trains ``w5_like_cnn`` with SGD eagerly and jitted on 16x16 images, batch 8 (16,384
    entries, as many as take ReLU's rows), asserting equal losses and states bit for bit;
    the jitted step's program source."""
    model_e, model_j = w5_like_cnn(), w5_like_cnn()
    opt_e = sg.optim.SGD(model_e.parameters(), lr=0.1, momentum=0.9)
    opt_j = sg.optim.SGD(model_j.parameters(), lr=0.1, momentum=0.9)
    eager, jitted = train_step(model_e, opt_e), sg.jit(train_step(model_j, opt_j))
    for x, y in batches((8, 1, 16, 16)):
        assert jitted(x, y).item() == eager(x, y).item()
    assert_same_state(model_e, opt_e, model_j, opt_j)
    (recording,) = [r for recordings in jitted.recordings.values() for r in recordings]
    return recording.source


def test_conv_kernels_replay_as_eager():
    """Convolution's windows (Unfold, Fold), max pooling's gradient (Spread) and the ReLU of
    a batch-last image replay as kernels (jit/kernels.py) and end where eager steps end."""
    source = w5_like_training_source()
    for kernel in ("k_unfold", "k_fold", "k_spread", "k_relu"):
        assert f"= {kernel}(" in source, kernel


@pytest.mark.parametrize("size", [4, 1 << 14], ids=["small", "rows"])
def test_a_float16_relu_replays_as_eager_at_minus_zero(size):
    """A 16-bit ReLU is computed in float32 (Relu.forward), where maximum(-0.0, 0) is +0.0;
    NumPy's float16 maximum keeps -0.0, so a replay must not call it on the float16 array."""
    x = np.resize(np.array([-0.0, -1.0, 2.0, -0.0], np.float16), size)
    jitted = sg.jit(lambda t: (t * 2).relu())
    for _ in range(5):  # the eager call, two recordings, replays
        out = jitted(sg.from_numpy(x.copy())).numpy()
        expected = (sg.from_numpy(x.copy()) * 2).relu().numpy()
        np.testing.assert_array_equal(out.view(np.uint16), expected.view(np.uint16))
    assert np.signbit(np.maximum(x * 2, 0)).any() and not np.signbit(expected).any()
    assert all(r.checked for rs in jitted.recordings.values() for r in rs)  # replayed


class HalvingSGD(sg.optim.SGD):
    """A subclass whose ``step`` changes the gradients before the base class's update."""

    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                p.grad.mul_(0.5)
        return super().step(closure)


def test_a_subclass_step_calling_the_base_step_runs_once_per_call():
    """The recorder notes the base class's step, not ``type(opt).step``: the override's own
    operations are recorded once (noting the override would run them again inside the
    noted call: gradients halved twice while recording)."""
    losses = run_both(mlp, lambda ps: HalvingSGD(ps, lr=0.1, momentum=0.9), batches((6, 4)))
    assert [e for e, _ in losses] == [j for _, j in losses]


def test_gradient_clipping_inside_the_step():
    run_both(mlp, OPTIMIZERS["sgd"], batches((6, 4)), clip=0.05)


def test_replays_after_the_third_call():
    """Python side effects run on the eager call and the two recording calls only, and a
    recording that changes Python state says so."""
    seen = []
    model = mlp()

    @sg.jit
    def forward(x):
        seen.append(x.shape)
        return model(x)

    x = sg.randn(2, 4)
    forward(x)
    with pytest.warns(UserWarning, match=r"forward\(\) changed 'seen' of its enclosing function"):
        for _ in range(4):
            forward(x)
    assert len(seen) == 3


def test_returned_tensors_are_not_overwritten():
    model = mlp()
    forward = sg.jit(lambda x: model(x) * 2)
    xs = [sg.randn(3, 4) for _ in range(4)]
    outs = [forward(x) for x in xs]
    with sg.no_grad():
        for x, out in zip(xs, outs):
            np.testing.assert_array_equal(out.detach().numpy(), (model(x) * 2).numpy())


def test_a_backward_through_a_forwards_detached_result_names_compile():
    """Eagerly a forward's result requires grad; a replay returns it detached, so a backward
    after the call fails from the fourth call (the first replay): its error names the jitted
    function and
    ``compile``, which records that backward (and gives eager's gradients)."""
    model = mlp()
    forward = sg.jit(lambda x: model(x) * 2)
    outs = [forward(sg.randn(3, 4)) for _ in range(4)]  # eager, records twice, replays
    assert all(out.requires_grad for out in outs[:3]) and not outs[3].requires_grad
    with pytest.raises(RuntimeError, match=r"jitted <lambda>\(\).*scratchgrad\.compile"):
        outs[3].sum().backward()
    compiled = sg.compile(lambda x: model(x) * 2)
    for _ in range(4):
        model.zero_grad()
        x = sg.randn(3, 4)
        compiled(x).sum().backward()
        got = model[0].weight.grad.numpy().copy()
        model.zero_grad()
        (model(x) * 2).sum().backward()
        np.testing.assert_array_equal(got, model[0].weight.grad.numpy())


def _normalize_in_place(x, m):
    with sg.no_grad():
        x.sub_(x.mean()).mul_(2)  # the caller's tensor changes, as eagerly
        m[0] = x.sum()  # and an indexed write into another argument
    return x * 3


def test_in_place_changes_of_the_arguments_reach_the_callers_tensors():
    """A step that changes its arguments in place changes each call's tensors (not the
    recorded ones), and returns what eager returns from them."""
    jitted = sg.jit(_normalize_in_place)
    for i in range(N_STEPS):
        values = np.arange(4.0) * (i + 1)
        x_e, x_j = sg.tensor(values), sg.tensor(values)
        m_e, m_j = sg.zeros(2, dtype=sg.float64), sg.zeros(2, dtype=sg.float64)
        out_e, out_j = _normalize_in_place(x_e, m_e), jitted(x_j, m_j)
        for e, j in [(out_e, out_j), (x_e, x_j), (m_e, m_j)]:
            np.testing.assert_array_equal(j.numpy(), e.numpy())


def _fgsm(model):
    def step(x, y):
        x.requires_grad_()  # the argument itself, as many adversarial examples write it
        nn.functional.cross_entropy(model(x), y).backward()
        with sg.no_grad():
            return x + 0.1 * x.grad.sign()

    return step


def test_an_argument_made_to_require_grad_inside_the_step_does_after_each_replay():
    """``x.requires_grad_()`` on an argument inside the step is Python: each replay sets it
    again, so the caller's tensor ends as eagerly (requiring grad, with its gradient)."""
    model = mlp()
    eager, jitted = _fgsm(model), sg.jit(_fgsm(model))
    for x, y in batches((6, 4)):
        x_e, x_j = x.clone(), x.clone()
        model.zero_grad()
        out_e = eager(x_e, y)
        model.zero_grad()
        np.testing.assert_array_equal(jitted(x_j, y).numpy(), out_e.numpy())
        assert x_j.requires_grad and x_e.requires_grad
        np.testing.assert_array_equal(x_j.grad.numpy(), x_e.grad.numpy())


def test_views_of_parameters_returned_follow_the_parameters_as_eagerly():
    """A view of a parameter returned by the step (a row of the weight, its transpose) is a
    view of the parameter's array, as eagerly: it shows the later updates."""
    model = nn.Linear(3, 2)
    opt = sg.optim.SGD(model.parameters(), lr=0.1)

    @sg.jit
    def step(x):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        return model.weight[0], model.weight.t(), model.weight

    kept = [step(sg.ones(4, 3)) for _ in range(N_STEPS)]
    weight = model.weight.detach().numpy()
    for row, transposed, parameter in kept:
        np.testing.assert_array_equal(row.detach().numpy(), weight[0])
        np.testing.assert_array_equal(transposed.detach().numpy(), weight.T)
        assert parameter is model.weight  # not made in the step: itself, as eagerly


def test_learning_rate_is_read_at_replay():
    model_e, model_j = mlp(), mlp()
    opt_e = sg.optim.SGD(model_e.parameters(), lr=0.1, momentum=0.9)
    opt_j = sg.optim.SGD(model_j.parameters(), lr=0.1, momentum=0.9)
    sched_e = sg.optim.lr_scheduler.StepLR(opt_e, step_size=1, gamma=0.5)
    sched_j = sg.optim.lr_scheduler.StepLR(opt_j, step_size=1, gamma=0.5)
    eager, jitted = train_step(model_e, opt_e), sg.jit(train_step(model_j, opt_j))
    for x, y in batches((6, 4)):
        eager(x, y), jitted(x, y)
        sched_e.step(), sched_j.step()  # between the calls, as most loops do
    assert opt_j.param_groups[0]["lr"] == 0.1 * 0.5**N_STEPS
    assert_same_state(model_e, opt_e, model_j, opt_j)


def test_scheduler_inside_the_step_steps_at_every_replay():
    model = mlp()
    opt = sg.optim.Adam(model.parameters(), lr=0.1)
    sched = sg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    inner = train_step(model, opt)

    def step(x, y):
        loss = inner(x, y)
        sched.step()
        return loss

    jitted = sg.jit(step)
    for x, y in batches((6, 4)):
        jitted(x, y)
    assert opt.param_groups[0]["lr"] == 0.1 * 0.5**N_STEPS
    assert opt.state[next(model.parameters())]["step"] == N_STEPS


def test_gradients_accumulate_over_calls_without_zero_grad():
    model_e, model_j = mlp(), mlp()

    def accumulate(model):
        def step(x, y):
            nn.functional.cross_entropy(model(x), y).backward()

        return step

    eager, jitted = accumulate(model_e), sg.jit(accumulate(model_j))
    for x, y in batches((6, 4)):
        eager(x, y), jitted(x, y)
    for p, q in zip(model_e.parameters(), model_j.parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    model_j.zero_grad()  # outside the step: the replay makes .grad again
    eager_grads = [p.grad.numpy().copy() for p in model_e.parameters()]
    model_e.zero_grad()
    x, y = batches((6, 4), n=1, seed=5)[0]
    eager(x, y), jitted(x, y)
    for p, q, old in zip(model_e.parameters(), model_j.parameters(), eager_grads):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
        assert not np.array_equal(p.grad.numpy(), old)


@COUNTING
def test_gradients_accumulate_over_two_calls_with_zero_grad_outside():
    # The usual accumulation loop: zero_grad() outside the step every second call, so one
    # recording call finds .grad empty and the other full (a JitError before: the recording
    # noted whether .grad could adopt the gradient only when .grad was empty).
    models = mlp(), mlp()
    optimizers = [sg.optim.SGD(m.parameters(), lr=0.1) for m in models]

    python_calls = []

    def backward_of(model):
        def step(x, y):
            python_calls.append(model)
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            return loss

        return step

    eager, jitted = backward_of(models[0]), sg.jit(backward_of(models[1]))
    for i, (x, y) in enumerate(batches((6, 4), n=8)):
        np.testing.assert_array_equal(eager(x, y).item(), jitted(x, y).item())
        if i % 2:
            for opt in optimizers:
                opt.step()
                opt.zero_grad()
    for p, q in zip(models[0].parameters(), models[1].parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    # eagerly, then recorded twice: the five calls after them replayed the program
    assert python_calls.count(models[1]) == 3


def test_no_grad_inside_the_step():
    model_e, model_j = mlp(), mlp()

    def step_of(model):
        def step(x, y):
            with sg.no_grad():
                target = model(x).softmax(1)  # a target made by the model itself, no graph
            loss = ((model(x).softmax(1) - target.detach() * 0.5) ** 2).sum()
            loss.backward()
            return loss, target

        return step

    eager, jitted = step_of(model_e), sg.jit(step_of(model_j))
    for x, _ in batches((6, 4)):
        (loss_e, target_e), (loss_j, target_j) = eager(x, None), jitted(x, None)
        np.testing.assert_array_equal(target_e.numpy(), target_j.numpy())
        assert loss_e.item() == loss_j.item()
        assert not target_j.requires_grad


class Cube(sg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.square = x * x  # an intermediate kept on ctx, read by backward
        return ctx.square * x

    @staticmethod
    def backward(ctx, grad):
        return grad * 3 * ctx.square


def test_custom_autograd_function():
    w_e = sg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    w_j = sg.tensor([0.5, -1.0, 2.0], requires_grad=True)

    def step_of(w):
        def step(x):
            (Cube.apply(w * x)).sum().backward()
            return w.grad

        return step

    eager, jitted = step_of(w_e), sg.jit(step_of(w_j))
    for value in [1.0, 2.0, -3.0, 0.5]:
        x = sg.full((3,), value)
        w_e.grad = w_j.grad = None  # outside the step: a Python assignment is not recorded
        np.testing.assert_array_equal(eager(x).detach().numpy(), jitted(x).detach().numpy())
        np.testing.assert_allclose(
            w_j.grad.numpy(), 3 * value**3 * w_j.detach().numpy() ** 2, rtol=1e-6
        )


def test_a_backward_reading_a_0d_result_reads_the_replayed_one():
    # norm = sqrt(sum(x * x)): sqrt's forward gets a NumPy scalar and its backward reads it.
    # The recording calls see the same input, so a frozen scalar would pass the record-twice
    # check and be wrong only on replay.
    w_e, w_j = (sg.tensor([1.0, 1.0], dtype=sg.float64, requires_grad=True) for _ in range(2))

    def step_of(w):
        def step(x):
            (x * w).norm().backward()

        return step

    eager, jitted = step_of(w_e), sg.jit(step_of(w_j))
    for value in [[3.0, 4.0]] * 3 + [[1.0, 5.0], [-2.0, 0.5]]:
        x = sg.tensor(value, dtype=sg.float64)
        w_e.grad = w_j.grad = None  # outside the step: a Python assignment is not recorded
        eager(x), jitted(x)
        np.testing.assert_array_equal(w_j.grad.numpy(), w_e.grad.numpy())
        x = np.array(value)
        np.testing.assert_allclose(w_j.grad.numpy(), x * x / np.linalg.norm(x), rtol=1e-12)


def test_dropout_draws_from_the_same_stream_as_eager():
    def run(jitted):
        sg.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.5), nn.Linear(16, 3))
        sg.manual_seed(42)
        forward = sg.jit(model) if jitted else model
        return [forward(x).detach().numpy() for x, _ in batches((5, 4), n=4)]

    eager, jitted = run(False), run(True)
    for a, b in zip(eager, jitted):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(jitted[2], jitted[3])  # fresh draws at each replay


def test_random_draws_follow_a_reseed():
    noise = sg.jit(lambda x: x + sg.randn(3))
    x = sg.zeros(3)
    for _ in range(3):
        noise(x)
    sg.manual_seed(7)
    first = noise(x).numpy()
    sg.manual_seed(7)
    np.testing.assert_array_equal(noise(x).numpy(), first)
    sg.manual_seed(7)
    np.testing.assert_array_equal(sg.randn(3).numpy(), first)


def test_new_parameters_unfrozen_and_added_to_the_optimizer_record_anew():
    """Progressive unfreezing: a frozen first layer, outside the optimizer, is unfrozen and
    added as a new param group between replays; the step records anew and trains it as the
    eager step does."""
    models = mlp(), mlp()
    optimizers = []
    for model in models:
        model[0].requires_grad_(False)
        optimizers.append(sg.optim.Adam(model[2].parameters(), lr=0.01))
    eager = train_step(models[0], optimizers[0])
    jitted = sg.jit(train_step(models[1], optimizers[1]))
    for i, (x, y) in enumerate(batches((6, 4), n=9)):
        if i == 5:  # after two replays
            for model, opt in zip(models, optimizers):
                model[0].requires_grad_(True)
                opt.add_param_group({"params": list(model[0].parameters()), "lr": 0.1})
        assert eager(x, y).item() == jitted(x, y).item(), i
    assert_same_state(models[0], optimizers[0], models[1], optimizers[1])


def _shrink_weights(opt, args, kwargs):
    """A step post-hook: weight decay by hand after each update."""
    with sg.no_grad():
        for group in opt.param_groups:
            for p in group["params"]:
                p.mul_(0.9)


def _halve_gradients(opt, args, kwargs):
    """A step pre-hook."""
    for group in opt.param_groups:
        for p in group["params"]:
            p.grad.mul_(0.5)


def _replace_step(opt):
    """``opt.step`` replaced on the instance: plain SGD at half the rate."""

    def step(closure=None):
        with sg.no_grad():
            for p in opt.param_groups[0]["params"]:
                p.sub_(p.grad, alpha=0.05)

    opt.step = step


OPTIMIZER_CHANGES = {
    "post-hook registered": lambda opt, hooks: hooks.append(
        opt.register_step_post_hook(_shrink_weights)
    ),
    "pre-hook registered": lambda opt, hooks: hooks.append(
        opt.register_step_pre_hook(_halve_gradients)
    ),
    "hook removed": lambda opt, hooks: hooks.pop().remove(),
    "step replaced": lambda opt, hooks: _replace_step(opt),
    "zero_grad replaced": lambda opt, hooks: setattr(opt, "zero_grad", lambda: None),
}


@pytest.mark.parametrize("name", ["sgd-momentum-decay", "adam", "rmsprop"])
@pytest.mark.parametrize("change", OPTIMIZER_CHANGES)
def test_an_optimizers_step_hooks_or_methods_changed_between_calls_record_anew(change, name):
    """A step hook registered on the optimizer or removed, or its ``step`` or ``zero_grad``
    replaced on the instance, between replays: the next call records anew and equals eager
    (replays went on with the generated update, without the hook, silently)."""
    models = mlp(), mlp()
    optimizers = [OPTIMIZERS[name](model.parameters()) for model in models]
    hooks = [[opt.register_step_post_hook(_shrink_weights)] for opt in optimizers]
    steps = train_step(models[0], optimizers[0]), sg.jit(train_step(models[1], optimizers[1]))
    for i, (x, y) in enumerate(batches((6, 4), n=9)):
        if i == 5:  # after two replays
            for opt, registered in zip(optimizers, hooks):
                OPTIMIZER_CHANGES[change](opt, registered)
        assert steps[0](x, y).item() == steps[1](x, y).item(), i
    assert_same_state(models[0], optimizers[0], models[1], optimizers[1])


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_an_optimizers_step_hooks_run_once_per_replay(name):
    """Step hooks registered before the first call run once per replay, their Python too:
    the step, hooks and all, is called again by each replay (before, a replay of an optimizer
    without a generated update ran a hook twice: recorded into the program, and by the step;
    a generated update skipped their Python)."""
    models = mlp(), mlp()
    optimizers = [OPTIMIZERS[name](model.parameters()) for model in models]
    calls = [[], []]
    for opt, seen in zip(optimizers, calls):
        opt.register_step_pre_hook(lambda o, args, kwargs, seen=seen: seen.append(1))
        opt.register_step_post_hook(_shrink_weights)
    steps = train_step(models[0], optimizers[0]), sg.jit(train_step(models[1], optimizers[1]))
    for x, y in batches((6, 4), n=7):
        assert steps[0](x, y).item() == steps[1](x, y).item()
    assert_same_state(models[0], optimizers[0], models[1], optimizers[1])
    assert len(calls[1]) == len(calls[0]) == 7


def _train_with_a_parameter_put_in_anothers_place(name, jitted):
    """The parameters after 9 steps training ``mlp()`` and another layer the loss reaches,
    with the optimizer (over the MLP's parameters) given the other layer's weight in the
    first weight's place in its list before the sixth step."""
    model, other = mlp(), nn.Linear(4, 8)
    opt = OPTIMIZERS[name](model.parameters())

    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y) + other(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    step = sg.jit(step) if jitted else step
    for i, (x, y) in enumerate(batches((6, 4), n=9)):
        if i == 5:  # after two replays
            opt.param_groups[0]["params"][0] = other.weight
        step(x, y)
    return [p.detach().numpy() for p in (*model.parameters(), *other.parameters())]


@pytest.mark.parametrize("name", ["sgd-momentum-decay", "adam"])
def test_a_parameter_replaced_in_its_param_groups_list_is_the_one_updated(name):
    """The optimizer's list of parameters changed in place between replays (the list itself
    stays): another layer's weight, which the step also trains through, put in the first
    weight's place. The generated update checks each parameter listed, so it runs the eager
    step, which updates the other weight, as eagerly (before, replays went on updating the
    first one, silently)."""
    eager = _train_with_a_parameter_put_in_anothers_place(name, jitted=False)
    jitted = _train_with_a_parameter_put_in_anothers_place(name, jitted=True)
    for j, e in zip(jitted, eager):
        np.testing.assert_array_equal(j, e)


def test_a_post_accumulate_grad_hook_registered_after_the_recording_raises():
    """A post-accumulate-grad hook registered on a parameter between replays (replays skipped
    it, silently): the next call records anew, which refuses the hook, naming the line."""
    model = mlp()
    step = sg.jit(train_step(model, sg.optim.SGD(model.parameters(), lr=0.1)))
    batch = batches((6, 4), n=1)[0]
    for _ in range(4):
        step(*batch)
    model[0].weight.register_post_accumulate_grad_hook(lambda p: p.grad.mul_(10))
    with pytest.raises(sg.JitError, match="a post-accumulate-grad hook at "):
        step(*batch)


def _manual_sgd(w, in_place):
    """micrograd's training step: the update by hand."""

    def step(x):
        loss = (w * x).sum()  # USES w
        loss.backward()
        if in_place:
            with sg.no_grad():
                w.sub_(0.1 * w.grad)
        else:
            w.data = w.data - 0.1 * w.grad
        return loss

    return step


def test_a_step_giving_a_parameter_a_new_array_raises_naming_its_first_use():
    """micrograd's update, ``p.data = p.data - lr * p.grad``, inside the step: a Python
    assignment, which a replay would not make. Recording refuses it, naming the line that
    first used the parameter; an in-place update (``p.sub_(...)`` under no_grad) is replayed."""
    w = sg.ones(3, requires_grad=True)
    jitted, x = sg.jit(_manual_sgd(w, in_place=False)), sg.tensor([1.0, 2.0, 3.0])
    jitted(x)  # eager
    with pytest.raises(sg.JitError, match=r"gives a tensor it uses \(first at .*\) a new") as info:
        jitted(x)
    assert f"test_jit.py:{line_of('# USES w')})" in str(info.value)
    assert "has run the step in full" in str(info.value)  # an eager retry would step twice
    w_e, w_j = sg.ones(3, requires_grad=True), sg.ones(3, requires_grad=True)
    eager, jitted = _manual_sgd(w_e, in_place=True), sg.jit(_manual_sgd(w_j, in_place=True))
    for _ in range(N_STEPS):
        assert eager(x).item() == jitted(x).item()
        w_e.grad = w_j.grad = None  # outside the step: a Python assignment is not recorded
    assert w_j.tolist() == w_e.tolist()


RANDOM_OPS = {
    "rand": lambda x: x + sg.rand(x.shape),
    "randn float64": lambda x: x.double() * sg.randn(*x.shape, dtype=sg.float64),
    "rand_like": lambda x: x * sg.rand_like(x),
    "randn_like": lambda x: x + sg.randn_like(x),
    "randint": lambda x: x + sg.randint(0, 10, x.shape),
    "randint from a generator": lambda x: x + sg.randint(0, 10, x.shape, generator=GENERATOR),
    "randperm": lambda x: x[:, sg.randperm(x.shape[1])],
    "multinomial": lambda x: x.softmax(1).multinomial(3),
    "multinomial with replacement": lambda x: x.softmax(1).multinomial(7, replacement=True),
    "dropout": lambda x: nn.functional.dropout(x, 0.5),
    "bernoulli": lambda x: (x / 6).bernoulli(),
    "bernoulli with p": lambda x: x.bernoulli(0.3, generator=GENERATOR),
    "nn.init.normal_": lambda x: x + nn.init.normal_(sg.empty(x.shape), 1.0, 2.0),
    "Tensor.normal_": lambda x: x + sg.empty(x.shape).normal_(1.0, 2.0),
    "Tensor.uniform_ from a generator": lambda x: (
        x * x.clone().uniform_(-1, 3, generator=GENERATOR)
    ),
    "Tensor.exponential_ of a result": lambda x: (x * 2).exponential_(0.5),
    "Tensor.bernoulli_ with a tensor p": lambda x: sg.empty(x.shape).bernoulli_(x / 6),
    "nn.init.uniform_ from a generator": lambda x: (
        x * nn.init.uniform_(sg.empty(x.shape), -1.0, 3.0, generator=GENERATOR)
    ),
    "poisson": lambda x: sg.poisson(x + 0.5),
    "binomial from a generator": lambda x: sg.binomial(x, x / 6, generator=GENERATOR),
}
GENERATOR = sg.Generator()


@pytest.mark.parametrize("op", RANDOM_OPS)
def test_random_ops_in_the_step_follow_a_seeded_eager_run(op):
    """Each random draw inside the step is made again at each replay, from the generator of
    that moment: a seeded jitted run draws what the same seeded eager run draws."""
    step = RANDOM_OPS[op]

    def run(fn):
        sg.manual_seed(3)
        GENERATOR.manual_seed(4)
        return [fn(sg.full((2, 5), float(i))).numpy() for i in range(6)]

    jitted = sg.jit(step)
    for call, (e, j) in enumerate(zip(run(step), run(jitted))):
        np.testing.assert_array_equal(j, e, err_msg=f"call {call}")
    assert all(r.checked for rs in jitted.recordings.values() for r in rs)  # replayed


def _random_features(init):
    """A step drawing its first layer's weights anew with ``init`` (random features), then
    training the head on them."""
    sg.manual_seed(0)
    features, head = nn.Linear(4, 16), nn.Linear(16, 3)
    opt = sg.optim.SGD(head.parameters(), lr=0.1)

    def step(x, y):
        init(features.weight)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(head(features(x).relu()), y)
        loss.backward()
        opt.step()
        return loss

    return step, head


INITS = {
    "normal_": lambda w: nn.init.normal_(w, 0.0, 0.5),
    "xavier_uniform_": nn.init.xavier_uniform_,
    "kaiming_normal_": lambda w: nn.init.kaiming_normal_(w, nonlinearity="relu"),
}


@pytest.mark.parametrize("init", INITS)
def test_nn_init_inside_the_step_draws_again_at_each_replay(init):
    """Re-initialising a parameter inside the step with ``nn.init`` (random features drawn for
    each batch) is replayed: each call fills it with new draws from the generator, as the
    eager step does, so the losses and the trained head equal eager's bit for bit."""
    data = batches((6, 4), n=6)

    def run(step):
        sg.manual_seed(7)  # then each call draws on from the generator
        return [step(x, y).item() for x, y in data]

    (eager, head_e), (step, head_j) = _random_features(INITS[init]), _random_features(INITS[init])
    jitted = sg.jit(step)
    assert run(jitted) == run(eager)
    for a, b in zip(head_e.parameters(), head_j.parameters()):
        np.testing.assert_array_equal(b.detach().numpy(), a.detach().numpy())
    assert all(r.checked for rs in jitted.recordings.values() for r in rs)  # replayed


def _seeded_noise(x):
    sg.manual_seed(5)  # the library's generators
    OWN.manual_seed(6)  # and one of the step's own
    return x + sg.rand(3) + sg.randn(3, generator=OWN)


OWN = sg.Generator()


def test_seeding_inside_the_step_seeds_again_at_each_replay():
    """``manual_seed`` inside the step (the library's or a generator's) is made again by each
    replay: every call draws what the eager step draws (replays drew on from the old stream)."""
    jitted, x = sg.jit(_seeded_noise), sg.zeros(3)
    expected = _seeded_noise(x).numpy()
    sg.rand(5), OWN.rng.random()  # moved on between the calls
    for _ in range(N_STEPS):
        np.testing.assert_array_equal(jitted(x).numpy(), expected)
        sg.rand(5), OWN.rng.random()


def test_batchnorm_train_and_eval_are_separate_programs():
    def make():
        sg.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 3))

    model_e, model_j = make(), make()
    opt_e = sg.optim.SGD(model_e.parameters(), lr=0.1)
    opt_j = sg.optim.SGD(model_j.parameters(), lr=0.1)
    eager, jitted = train_step(model_e, opt_e), sg.jit(train_step(model_j, opt_j))
    for i, (x, y) in enumerate(batches((6, 4), n=8)):
        mode = "train" if i % 4 < 2 else "eval"  # train, train, eval, eval, train, ...
        getattr(model_e, mode)(), getattr(model_j, mode)()
        assert eager(x, y).item() == jitted(x, y).item()
    assert_same_state(model_e, opt_e, model_j, opt_j)
    assert int(model_j[1].num_batches_tracked) == 4
    (recordings,) = jitted.recordings.values()
    assert len(recordings) == 2


@pytest.mark.parametrize("how", ["left by the step", "assigned after a replay"])
def test_modes_are_guarded_however_they_are_set(how):
    """A step that ends in eval mode, so that its next call begins in it, and a mode set by
    assigning ``training`` (not by train()/eval()) after a replay: each call runs the program
    of the modes it begins in (dropout or not), as eager calls do."""
    leaves_eval = how == "left by the step"

    def run(wrap):
        sg.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 6), nn.Dropout(0.5), nn.Linear(6, 3))

        def step(x):
            out = model(x)  # drops only if the model began the call in train mode
            if leaves_eval:
                model.eval()
            return out

        step, x, outputs = wrap(step), sg.randn(5, 4), []
        for i in range(10):
            if leaves_eval and i in (0, 1, 3, 4, 6):  # else it begins in the mode last left
                model.train()
            if not leaves_eval and i == 4:
                model[1].training = False
            sg.manual_seed(i)
            outputs.append(step(x).detach().numpy())
        return outputs

    for jitted, eager in zip(run(sg.jit), run(lambda step: step)):
        np.testing.assert_array_equal(jitted, eager)


def test_a_new_shape_or_dtype_records_a_new_program():
    model = mlp()
    forward = sg.jit(lambda x: model(x))
    for x in [sg.randn(2, 4), sg.randn(2, 4), sg.randn(5, 4), sg.randn(5, 4)]:
        with sg.no_grad():
            expected = model(x).numpy()
        np.testing.assert_array_equal(forward(x).detach().numpy(), expected)
    assert len(forward.recordings) == 2
    model.double()
    x = sg.randn(2, 4, dtype=sg.float64)
    forward(x)
    assert forward(x).dtype == sg.float64
    assert len(forward.recordings) == 3


def test_fortran_order_and_a_strided_view_are_separate_programs():
    # neither is C-ordered, but BLAS reads them differently (a product's orientation is
    # checked for the layout it was recorded with)
    model = mlp()
    forward = sg.jit(lambda x: model(x))
    fortran, strided = sg.randn(4, 8).t(), sg.randn(4, 16)[:, ::2].t()  # both (8, 4)
    for x in [fortran, fortran, strided, strided]:
        with sg.no_grad():
            expected = model(x).numpy()
        np.testing.assert_array_equal(forward(x).detach().numpy(), expected)
    assert len(forward.recordings) == 2


def test_strided_views_with_their_dims_in_another_order_are_separate_programs():
    """Two strided views of one shape (neither C nor Fortran ordered), one row-major and one
    column-major in memory: NumPy lays an elementwise result out in its input's order, so a
    later sum adds in another order. Each records its own program, equal to eager bit for
    bit (one program for both gave sums 1e-4 apart)."""
    rng = np.random.default_rng(0)

    def by_rows():
        return sg.tensor(rng.standard_normal((64, 200)).astype(np.float32))[:, ::2]

    def by_columns():
        return sg.tensor(rng.standard_normal((200, 64)).astype(np.float32)).t()[:, ::2]

    def f(x):
        return ((x * 1.1).exp() * 3).sum(0)

    jitted = sg.jit(f)
    for make in [by_rows] * 4 + [by_columns] * 3:
        x = make()
        np.testing.assert_array_equal(jitted(x).numpy(), f(x).numpy())
    assert sum(map(len, jitted.recordings.values())) == 2


def test_other_arguments_are_part_of_the_key():
    scale = sg.jit(lambda x, k: x * k)
    x = sg.ones(2)
    assert [scale(x, k).tolist() for k in (2.0, 2.0, 3.0, 3.0, 2.0)] == [
        [2.0, 2.0],
        [2.0, 2.0],
        [3.0, 3.0],
        [3.0, 3.0],
        [2.0, 2.0],
    ]


def _difference(d):
    return d["a"] - d["b"]


def _doubled_first_then_second(a, b):
    with sg.no_grad():
        a.mul_(2)  # b too, when it is a
    return b + 0


def _gradient_of_the_first(x, w):
    (x * w).sum().backward()


def _by_grad_mode(x, w):
    y = x * w
    return y * 2 if y.requires_grad else y * 3  # a Python branch on the grad mode


def _tensors_in(tree):
    if isinstance(tree, sg.Tensor):
        return [tree]
    items = tree.values() if isinstance(tree, dict) else tree
    return [t for item in items for t in _tensors_in(item)]


STRUCTURE_CHANGES = {  # the step, and its arguments before and after the change
    "dict keys in another order": (
        _difference,
        lambda x, y: ({"a": x, "b": y},),
        lambda x, y: ({"b": y, "a": x},),
    ),
    "a tensor passed twice": (
        _doubled_first_then_second,
        lambda x, y: (x, y),
        lambda x, y: (x, x),
    ),
    "a tuple for a list": (
        lambda pair: pair[0] * 2 + pair[1] if type(pair) is tuple else pair[0] - pair[1],
        lambda x, y: ((x, y),),
        lambda x, y: ([x, y],),
    ),
    "requires_grad of an argument": (
        _gradient_of_the_first,
        lambda x, y: (x.requires_grad_(), y.requires_grad_()),
        lambda x, y: (x, y.requires_grad_()),
    ),
    "grad mode": (_by_grad_mode, lambda x, y: (x, y.requires_grad_()), None),
    "a gradient hook on an argument": (
        _gradient_of_the_first,
        lambda x, y: (x.requires_grad_(), y),
        lambda x, y: (_hooked(x.requires_grad_()), y),
    ),
}


def _hooked(t):
    t.register_hook(_times_ten)
    return t


def _times_ten(grad):
    return grad * 10


@pytest.mark.parametrize("change", STRUCTURE_CHANGES)
def test_a_new_structure_aliasing_requires_grad_or_grad_mode_records_a_new_program(change):
    """The arguments' structure (containers, dict keys and their order, the same tensor
    passed twice), each tensor's requires_grad and hooks and the grad mode are part of the key:
    a call that changes one records anew, equal to eager, and the old program replays after."""
    fn, before, after = STRUCTURE_CHANGES[change]
    jitted = sg.jit(fn)

    def both(make_args, grad=True):
        results = []
        for f in (fn, jitted):
            args = make_args(sg.tensor([1.0, 2.0]), sg.tensor([5.0, 7.0]))
            with sg.set_grad_enabled(grad):
                out = f(*args)
            leaves = _tensors_in(args)
            results.append([out, *leaves, *(t.grad for t in leaves)])
        for e, j in zip(*results):
            assert (e is None) == (j is None)
            if e is not None:
                np.testing.assert_array_equal(j.detach().numpy(), e.detach().numpy())

    for _ in range(4):  # eager, two recordings, a replay
        both(before)
    for _ in range(3):  # two recordings, a replay
        both(before, grad=False) if after is None else both(after)
    both(before)  # the first program again
    assert sum(map(len, jitted.recordings.values())) == 2


def test_an_unhashable_argument_is_the_same_only_as_itself():
    """A NumPy array passed to the step is part of the key as that object: a new array records
    anew, even one made where a dead one was (its id, which the key held, was reused: a
    replay then gave the length of the dead array, silently)."""
    scale = sg.jit(lambda x, labels: x * len(labels), cache_size=16)
    x = sg.ones(2)
    for n in [1, 1, 1, 1, 2, 5]:
        labels = np.zeros(n)
        assert scale(x, labels).tolist() == [float(n)] * 2
        del labels  # its memory, and so its id, goes to the next one
    same = np.zeros(3)
    assert [scale(x, same).tolist()[0] for _ in range(4)] == [3.0] * 4
    assert sum(map(len, scale.recordings.values())) <= 1 + 5 + 1


def test_recompile_limit_warns_and_runs_eagerly():
    double = sg.jit(lambda x: x * 2, cache_size=2)
    double(sg.ones(1))
    for n in (1, 2):
        double(sg.ones(n))
    with pytest.warns(UserWarning, match="cache_size") as warned:
        assert double(sg.ones(3)).tolist() == [2.0, 2.0, 2.0]
    assert warned[0].filename == __file__  # the user's line
    assert sum(map(len, double.recordings.values())) == 2


def test_nested_structures_of_tensors():
    @sg.jit
    def swap(pair, extra):
        a, b = pair
        return {"sum": a + extra["c"], "both": [b * 2, a]}

    for i in range(4):
        a, b, c = sg.full((2,), float(i)), sg.ones(2), sg.full((2,), 10.0)
        out = swap((a, b), {"c": c})
        assert out["sum"].tolist() == [i + 10.0] * 2
        assert out["both"][0].tolist() == [2.0, 2.0]
        assert out["both"][1].tolist() == [float(i)] * 2


def line_of(fragment):
    """The line number of ``fragment`` in this file."""
    with open(__file__) as source:
        return next(i for i, line in enumerate(source, 1) if fragment in line)


READS = {
    ".item()": lambda y: y.sum().item(),  # READ item
    ".numpy()": lambda y: y.detach().numpy(),  # READ numpy
    ".tolist()": lambda y: y.tolist(),  # READ tolist
    "bool(tensor)": lambda y: y.sum() > 0 and y,  # READ bool
    "printing a tensor": lambda y: print(y),  # READ print
    "creating an nn.Parameter": lambda y: nn.Parameter(y.detach()),  # READ parameter
}


@pytest.mark.parametrize("what", READS)
def test_reading_values_raises_jit_error_naming_the_line(what):
    read = READS[what]

    @sg.jit
    def step(x):
        y = x * 2
        read(y)
        return y

    x = sg.ones(2)
    step(x)  # eager: fine
    with pytest.raises(sg.JitError, match=re.escape(what)) as info:
        step(x)
    tag = what.split("(")[0].split()[-1].strip(".")
    fragment = "# READ " + {"tensor": "print", "nn.Parameter": "parameter"}.get(tag, tag)
    assert f"test_jit.py:{line_of(fragment)}" in str(info.value)
    step2 = sg.jit(lambda x: x * 2)
    step2(x), step2(x)
    assert step2(x).tolist() == [2.0, 2.0]  # the failed recording left no recorder behind


def test_nested_jit_raises():
    inner = sg.jit(lambda x: x + 1)
    outer = sg.jit(lambda x: inner(x) * 2)  # REFUSED nested
    x = sg.ones(1)
    outer(x)
    with pytest.raises(sg.JitError, match=r"<lambda>\(\) \(nested jit\) at ") as info:
        outer(x)
    assert f"test_jit.py:{line_of('# REFUSED nested')} " in str(info.value)


def test_create_graph_raises():
    w = sg.ones(2, requires_grad=True)
    step = sg.jit(lambda x: (w * x).sum().backward(create_graph=True))  # REFUSED create_graph
    step(sg.ones(2))
    with pytest.raises(sg.JitError, match=r"create_graph=True\) at ") as info:
        step(sg.ones(2))
    assert f"test_jit.py:{line_of('# REFUSED create_graph')} " in str(info.value)


def _post_accumulate_hook():
    w = sg.ones(2, requires_grad=True)
    w.register_post_accumulate_grad_hook(lambda p: None)
    return lambda x: (w * x).sum().backward()  # REFUSED hook


def _step_with_a_closure():
    w = sg.ones(2, requires_grad=True)
    opt = sg.optim.SGD([w], lr=0.1)

    def step(x):
        def closure():
            return (w * x).sum()

        return opt.step(closure)  # REFUSED closure

    return step


def _lbfgs():
    w = sg.ones(2, requires_grad=True)
    opt = sg.optim.LBFGS([w], max_iter=2)

    def step(x):
        def closure():
            opt.zero_grad()
            loss = (w * x).square().sum()
            loss.backward()
            return loss

        return opt.step(closure)  # REFUSED lbfgs

    return step


REFUSED = {  # what the step does -> (the JitError's words, the step, the tag of its line)
    "a post-accumulate-grad hook": (_post_accumulate_hook, "hook"),
    "Optimizer.step with a closure": (_step_with_a_closure, "closure"),
    "LBFGS.step (its closure re-runs the step)": (_lbfgs, "lbfgs"),
    "nonzero() (its shape depends on the values)": (
        lambda: lambda x: x.nonzero(),  # REFUSED nonzero
        "nonzero",
    ),
    "unique() (its shape depends on the values)": (
        lambda: lambda x: x.unique(),  # REFUSED unique
        "unique",
    ),
    "unique_consecutive() (its shape depends on the values)": (
        lambda: lambda x: x.unique_consecutive(),  # REFUSED consecutive
        "consecutive",
    ),
    "bincount() (its shape depends on the values)": (
        lambda: lambda x: x.long().bincount(),  # REFUSED bincount
        "bincount",
    ),
    "one_hot(num_classes=-1), its shape read from the values": (
        lambda: lambda x: nn.functional.one_hot(x.long(), -1),  # REFUSED one_hot
        "one_hot",
    ),
}


@pytest.mark.parametrize("what", REFUSED)
def test_what_cannot_be_replayed_raises_jit_error_naming_the_line(what):
    make, tag = REFUSED[what]
    step = sg.jit(make())
    x = sg.ones(2)
    step(x)  # eager: fine
    with pytest.raises(sg.JitError, match=re.escape(what) + " at ") as info:
        step(x)
    assert f"test_jit.py:{line_of(f'# REFUSED {tag}')} " in str(info.value)


def test_as_a_method_decorator_one_recording_per_instance():
    class Scaler:
        def __init__(self, k):
            self.k = k

        @sg.jit
        def __call__(self, x):
            return x * self.k

    two, three = Scaler(2.0), Scaler(3.0)
    x = sg.ones(1)
    for _ in range(3):
        assert two(x).tolist() == [2.0]
        assert three(x).tolist() == [3.0]


def test_buffers_reused_only_when_nothing_reads_them_later():
    """A replay writes a ufunc's result over an input that is dead afterwards; a view of that
    input read later, the caller's input and a returned tensor keep theirs."""

    def f(x):
        h = x * 2
        row = h.reshape(-1)[:3]  # a view of h, read after h's last direct use
        y = (h.exp() + 1).relu()  # each result could overwrite the one before
        return row * 1, y, x

    jitted = sg.jit(f)
    for i in range(4):
        x = sg.full((2, 3), float(i))
        x_before = x.numpy().copy()
        for a, b in zip(f(x), jitted(x)):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_array_equal(x.numpy(), x_before)
    source = next(iter(jitted.recordings.values()))[0].source
    assert "out=" in source  # the test exercises the reuse


def test_values_computed_from_tensor_data_outside_the_ops_raise_on_the_third_call():
    """NumPy on a tensor's data (here through np.asarray) is invisible to the recorder: the
    second recording of the step sees another constant, and says so instead of replaying."""

    @sg.jit
    def masked(x):
        mask = sg.from_numpy(np.asarray(x) > 0)
        return x * mask  # CONSTANT used

    masked(sg.tensor([1.0, -1.0]))
    masked(sg.tensor([1.0, -1.0]))
    with pytest.raises(sg.JitError, match="different constant") as info:
        masked(sg.tensor([-1.0, 1.0]))
    assert f"test_jit.py:{line_of('# CONSTANT used')} " in str(info.value)


def test_python_branches_on_tensor_data_raise_on_the_third_call():
    @sg.jit
    def branchy(x):
        if np.asarray(x).sum() > 0:
            return x.exp()  # BRANCH exp
        return x.tanh()  # BRANCH tanh

    branchy(sg.ones(2))
    branchy(sg.ones(2))
    with pytest.raises(
        sg.JitError, match=r"different calls \('.*exp.*' at .*, then '.*tanh"
    ) as info:
        branchy(-sg.ones(2))
    exp, tanh = line_of("# BRANCH exp"), line_of("# BRANCH tanh")
    assert f"test_jit.py:{exp}, then " in str(info.value)
    assert f"test_jit.py:{tanh}) " in str(info.value)


RNG = np.random.default_rng(0)


def _python_random(x):
    return x * 2 if random.random() < 0.5 else x * 3


def _numpy_random(x):
    return x * np.random.rand()


def _a_generator_of_the_module(x):
    return x * RNG.random()


def _calls_a_helper_drawing(x):
    return _python_random(x) + 1


def _draws_in_a_lambda(x):
    draw = lambda: random_draw()  # noqa: E731
    return x * draw()


def _a_generator_in_the_closure():
    rng = np.random.default_rng(1)
    return lambda x: x * (rng.normal() > 0)


class _Explorer:
    """An agent drawing its exploration with its own NumPy generator (``self.rng``)."""

    def __init__(self):
        self.rng = np.random.default_rng(2)

    def act(self, x):
        return x * (self.rng.random() < 0.1)


DRAWING = {
    "random.random()": (_python_random, "random"),
    "np.random.rand()": (_numpy_random, "np.random"),
    "a Generator global": (_a_generator_of_the_module, "RNG.random"),
    "in a helper": (_calls_a_helper_drawing, "random"),
    "from random import random": (_draws_in_a_lambda, "random_draw"),
    "a Generator in the closure": (_a_generator_in_the_closure(), "rng"),
    "a Generator of self": (_Explorer().act, "self.rng"),
}


@pytest.mark.parametrize("case", DRAWING)
def test_random_numbers_drawn_outside_scratchgrad_raise_before_recording(case):
    """Python's or NumPy's random numbers in the step would be drawn once, when it records,
    and reused by every replay (a branch on them taking the recorded way for good): the
    first recording refuses, naming what draws, before the step runs."""
    fn, name = DRAWING[case]
    jitted = sg.jit(fn)
    jitted(sg.ones(2))  # eager
    with pytest.raises(sg.JitError, match=rf"draws random numbers outside scratchgrad \({name}"):
        jitted(sg.ones(2))


def test_a_compiled_module_drawing_python_random_numbers_raises():
    class StochasticDepth(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(2, 2)

        def forward(self, x):
            return x + self.layer(x) if random.random() < 0.8 else x

    net = sg.compile(StochasticDepth(), fullgraph=True)
    net(sg.ones(1, 2))
    # the error names where the forward is defined (before, "defined at StochasticDepth")
    line = StochasticDepth.forward.__code__.co_firstlineno
    where = rf"\(defined at {re.escape(__file__)}:{line}\)"
    with pytest.raises(
        sg.JitError, match=rf"StochasticDepth\.forward\(\) {where}.*\(random\.random\)"
    ):
        net(sg.ones(1, 2))


@COUNTING
def test_a_branch_on_python_state_that_changes_between_calls_raises_saying_so():
    seen = []

    @sg.jit
    def alternating(x):
        seen.append(1)
        return x.exp() if len(seen) % 2 else x.tanh()

    alternating(sg.ones(2))
    alternating(sg.ones(2))
    with pytest.raises(sg.JitError, match=r"Python state that changes between calls"):
        alternating(sg.ones(2))


TOTAL = sg.zeros(())


@sg.jit
def _summing(x):  # SUMMING defined
    global TOTAL
    TOTAL = TOTAL + x.sum()  # a new tensor each call, which a replay would not bind
    return x * 2


def test_a_step_binding_a_global_to_a_new_tensor_raises():
    """``global total; total = total + loss`` inside the step: the recording refuses it,
    naming the global and where the step is defined (replays would leave it alone)."""
    _summing(sg.ones(2))  # eager
    with pytest.raises(
        sg.JitError, match=r"_summing\(\) \(defined at .*\) binds the global 'TOTAL'"
    ) as info:
        _summing(sg.ones(2))
    assert f"test_jit.py:{line_of('# SUMMING defined') - 1})" in str(info.value)
    # raised once the call had run (TOTAL is 2 + 2): the message says so
    assert "has run the step in full" in str(info.value) and TOTAL.item() == 4.0


@COUNTING
def test_a_changing_python_value_returned_names_the_step_and_its_definition():
    """The JitError of a Python value returned that changes between the two recordings names
    the step's definition (where the value is returned from)."""
    calls = []

    @sg.jit
    def counted(x):  # RETURNS count
        calls.append(1)
        return x * 2, len(calls)

    counted(sg.ones(1)), counted(sg.ones(1))
    with pytest.raises(
        sg.JitError, match=r"counted\(\) returned a different .*\(2, then 3; counted is defined at "
    ) as info:
        counted(sg.ones(1))
    assert f"test_jit.py:{line_of('# RETURNS count') - 1})" in str(info.value)  # the decorator's


def test_the_same_constants_made_again_are_equal():
    """Constants made anew at each call (a tensor from a list, a drawn-shape lambda) do not
    count as differences."""

    @sg.jit
    def f(x):
        return x * sg.tensor([1.0, 2.0]) + sg.rand(2) * 0

    for _ in range(4):
        assert f(sg.ones(2)).tolist() == [1.0, 2.0]


def test_nll_loss_one_hot_and_padded_embeddings_follow_the_targets():
    """Losses and layers that compute from the targets' values with NumPy (class indices,
    one-hot rows, a padding mask) do it again at each replay."""

    def make():
        sg.manual_seed(0)
        return nn.Embedding(5, 3, padding_idx=0), nn.Linear(3, 4)

    def step_of(embedding, linear):
        def step(tokens, y):
            hidden = embedding(tokens).sum(1)
            log_probs = nn.functional.log_softmax(linear(hidden), 1)
            loss = nn.functional.nll_loss(log_probs, y)
            loss = loss + (nn.functional.one_hot(y, 4) * log_probs).sum() * 0.1
            loss.backward()
            return loss

        return step

    (emb_e, lin_e), (emb_j, lin_j) = make(), make()
    eager, jitted = step_of(emb_e, lin_e), sg.jit(step_of(emb_j, lin_j))
    rng = np.random.default_rng(3)
    for _ in range(5):
        tokens, y = sg.tensor(rng.integers(0, 5, (6, 2))), sg.tensor(rng.integers(0, 4, 6))
        assert eager(tokens, y).item() == jitted(tokens, y).item()
    params_e = [*emb_e.parameters(), *lin_e.parameters()]
    params_j = [*emb_j.parameters(), *lin_j.parameters()]
    for p, q in zip(params_e, params_j):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


def test_grad_scaler_raises():
    """GradScaler decides in Python (from the gradients' values) whether a step is skipped and
    how the scale moves: not replayable."""
    model = mlp()
    opt, scaler = sg.optim.SGD(model.parameters(), lr=0.1), sg.amp.GradScaler()

    @sg.jit
    def step(x, y):
        opt.zero_grad()
        scaler.scale(nn.functional.cross_entropy(model(x), y)).backward()
        scaler.step(opt)
        scaler.update()

    (x, y), *_ = batches((6, 4))
    step(x, y)
    with pytest.raises(sg.JitError, match="GradScaler"):
        step(x, y)


def test_autocast_is_part_of_the_key():
    """A step recorded outside an autocast region is not replayed inside one (its casts
    differ), nor the other way round: each records its own program, equal to eager."""
    model = nn.Linear(3, 2)
    fn = sg.jit(lambda x: model(x) * 2)
    x = sg.randn(4, 3)
    with sg.no_grad():
        for inside in (False, False, False, False, True, True, True, False, True):
            with sg.autocast("cpu", dtype=sg.bfloat16, enabled=inside):
                found, expected = fn(x), model(x) * 2
            assert found.dtype == expected.dtype == (sg.bfloat16 if inside else sg.float32)
            assert found.float().tolist() == expected.float().tolist()
    assert sum(map(len, fn.recordings.values())) == 2


def _freeze_first_weight(model):
    model[0].weight.requires_grad_(False)
    model[0].weight.grad = None  # as eager code freezing a layer: no update from now on


def _unfreeze_first_weight(model):
    model[0].weight.requires_grad_(True)


def _assign_data(model):
    model[0].weight.data = model[0].weight.data * 0.5  # a new array for the same parameter


def _hook_first_weight(model):
    model[0].weight.register_hook(lambda grad: grad * 10)


PARAMETER_CHANGES = {
    "hooked": (_hook_first_weight, None),
    "frozen": (_freeze_first_weight, None),
    "unfrozen": (_unfreeze_first_weight, _freeze_first_weight),
    ".data assigned": (_assign_data, None),
    "converted": (lambda model: model.double().float(), None),  # new arrays, the same values
}


@pytest.mark.parametrize("change", PARAMETER_CHANGES)
def test_a_changed_parameter_records_a_new_program(change):
    """A parameter reached by name enters the program as its array: freezing or unfreezing it,
    hooking its gradient, or giving it a new array (``.data = ``, ``model.double()``), between
    replays records anew (a replay would still update the frozen weight, or the old array, or
    skip the hook)."""
    make_change, before = PARAMETER_CHANGES[change]
    models = mlp(), mlp()
    if before is not None:
        before(models[0]), before(models[1])
    optimizers = [sg.optim.SGD(m.parameters(), lr=0.1) for m in models]
    eager, jitted = (
        train_step(models[0], optimizers[0]),
        sg.jit(train_step(*models[1:], *optimizers[1:])),
    )
    for i, (x, y) in enumerate(batches((6, 4), n=8)):
        if i == 5:  # after two replays
            make_change(models[0]), make_change(models[1])
        assert eager(x, y).item() == jitted(x, y).item(), i
    for (name, a), b in zip(models[0].state_dict().items(), models[1].state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    assert sum(map(len, jitted.recordings.values())) == 2


def test_writes_through_several_views_of_an_activation_record_alike_when_frozen_in_turn():
    """Writing through a view of an activation takes the activation's other views again, in
    the order they were made. They were taken in the order of their addresses (a WeakSet's),
    so a step recorded twice could record them in two orders and be refused as one whose calls
    changed: found by tests/jit/test_jit_fuzz.py, freezing the first weight every other call."""
    sg.manual_seed(0)
    models = nn.Linear(3, 3), nn.Linear(3, 3)
    models[1].load_state_dict(models[0].state_dict())

    def step_of(model):
        def step(x):
            out = model(x) + 0.0
            for i in range(3):
                out[:, i] = out[:, (i + 1) % 3] * 2
            out[:, 1:].mul_(0.5)
            out.sum().backward()
            return out

        return step

    eager, jitted = step_of(models[0]), sg.jit(step_of(models[1]))
    for call in range(8):
        x = sg.randn(4, 3)
        for model in models:
            model.weight.requires_grad_(call != 1)
        np.testing.assert_array_equal(jitted(x).detach().numpy(), eager(x).detach().numpy())
        for a, b in zip(models[1].parameters(), models[0].parameters()):
            assert (a.grad is None) == (b.grad is None)
            if a.grad is not None:
                np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
