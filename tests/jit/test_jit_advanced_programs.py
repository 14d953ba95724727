"""Advanced training programs under ``scratchgrad.jit`` and ``scratchgrad.compile``, written as
PyTorch users write them (a gradient penalty, MAML, per-sample gradients, checkpointing, mixed
precision, hooks, second derivatives): each equals the same program run eagerly, bit for bit,
after every step (see ``check_program``), or raises a ``JitError`` naming what it refuses."""

import pytest
from test_jit_programs import as_numpy, check_program, snapshot

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import functional as F

pytestmark = pytest.mark.filterwarnings("ignore:scratchgrad.jit.*while it was recorded")

STEPS = 8


def regression_batches(n: int = STEPS, size: int = 8, features: int = 4) -> list:
    return [(sg.randn(size, features), sg.randn(size, 1)) for _ in range(n)]


def mlp(activation: type = nn.Tanh, hidden: int = 16) -> nn.Module:
    return nn.Sequential(nn.Linear(4, hidden), activation(), nn.Linear(hidden, 1))


def test_a_wgan_gp_step_differentiating_its_gradient_penalty():
    def program(wrap):
        critic, gen = mlp(), nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 4))
        opt_c = sg.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.5, 0.9))
        opt_g = sg.optim.Adam(gen.parameters(), lr=1e-3, betas=(0.5, 0.9))

        @wrap
        def step(real, z):
            fake = gen(z)
            opt_c.zero_grad()
            eps = sg.rand(real.shape[0], 1)
            x_hat = (eps * real + (1 - eps) * fake.detach()).requires_grad_(True)
            (g,) = sg.autograd.grad(critic(x_hat).sum(), x_hat, create_graph=True)
            penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
            loss_c = critic(fake.detach()).mean() - critic(real).mean() + 10 * penalty
            loss_c.backward()
            opt_c.step()
            opt_g.zero_grad()
            loss_g = -critic(fake).mean()
            loss_g.backward()
            opt_g.step()
            return loss_c, loss_g, penalty

        losses = [as_numpy(step(x, sg.randn(8, 3))) for x, _ in regression_batches()]
        return losses, snapshot([critic, gen], [opt_c, opt_g])

    check_program(program, replays=STEPS - 3)


def test_maml_adapting_with_create_graph_through_functional_call():
    def program(wrap):
        model = mlp()
        opt = sg.optim.Adam(model.parameters(), lr=1e-3)

        @wrap
        def step(x_support, y_support, x_query, y_query):
            opt.zero_grad()
            params = dict(model.named_parameters())
            inner = F.mse_loss(sg.func.functional_call(model, params, (x_support,)), y_support)
            grads = sg.autograd.grad(inner, list(params.values()), create_graph=True)
            adapted = {k: p - 0.1 * g for (k, p), g in zip(params.items(), grads)}
            outer = F.mse_loss(sg.func.functional_call(model, adapted, (x_query,)), y_query)
            outer.backward()
            opt.step()
            return outer

        tasks = regression_batches(2 * STEPS)
        losses = [as_numpy(step(*tasks[i], *tasks[i + 1])) for i in range(0, 2 * STEPS, 2)]
        return losses, snapshot([model], [opt])

    check_program(program, replays=STEPS - 3)


OPTIMIZERS = {
    "Adam": lambda params: sg.optim.Adam(params, lr=0.01),
    "SGD": lambda params: sg.optim.SGD(params, lr=0.01, momentum=0.9, nesterov=True),
    "RMSprop": lambda params: sg.optim.RMSprop(params, lr=0.01),
}


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_gradients_of_func_grad_assigned_to_grad_are_each_replays(optimizer):
    """``p.grad = g`` of a gradient the step computed (``func.grad``'s, then ``opt.step()``)
    is replayed: before, replays kept the recording's gradient in ``.grad``, and the
    optimizer stepped with it, silently."""

    def program(wrap):
        model = mlp()
        opt = OPTIMIZERS[optimizer](model.parameters())

        def loss_of(params, x, y):
            return F.mse_loss(sg.func.functional_call(model, params, (x,)), y)

        @wrap
        def step(x, y):
            params = {k: v.detach() for k, v in model.named_parameters()}
            grads = sg.func.grad(loss_of)(params, x, y)
            for name, p in model.named_parameters():
                p.grad = grads[name]
            nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            opt.step()
            return grads["0.weight"]

        grads = [as_numpy(step(x, y)) for x, y in regression_batches()]
        return grads, snapshot([model], [opt])

    check_program(program, replays=STEPS - 3)


def test_assigning_the_grad_of_a_tensor_argument_raises():
    def step(x):
        x.grad = sg.ones_like(x)

    jitted, x = sg.jit(step), sg.zeros(2, requires_grad=True)
    jitted(x)
    with pytest.raises(sg.JitError, match="assigning .grad of tensor argument #0 at"):
        jitted(x)


def test_per_sample_gradients_of_vmap_and_func_grad_clipped_as_dp_sgd():
    def program(wrap):
        model = mlp()

        def loss_of(params, x, y):
            out = sg.func.functional_call(model, params, (x.unsqueeze(0),))
            return F.mse_loss(out, y.unsqueeze(0))

        per_sample = sg.func.vmap(sg.func.grad(loss_of), in_dims=(None, 0, 0))

        @wrap
        def step(x, y):
            grads = per_sample({k: v.detach() for k, v in model.named_parameters()}, x, y)
            norms = sg.stack([g.flatten(1).norm(dim=1) for g in grads.values()], 1).norm(dim=1)
            factor = (1.0 / (norms + 1e-6)).clamp(max=1.0)
            with sg.no_grad():
                for name, p in model.named_parameters():
                    g = (grads[name] * factor.view(-1, *[1] * (p.dim()))).sum(0)
                    p.sub_(0.05 * (g + 0.01 * sg.randn_like(g)) / x.shape[0])
            return norms

        norms = [as_numpy(step(x, y)) for x, y in regression_batches()]
        return norms, snapshot([model], [])

    check_program(program, replays=STEPS - 3)


@pytest.mark.parametrize("randomness", ["different", "same"])
def test_dropout_inside_vmap_draws_again_at_each_replay(randomness):
    """A random draw inside vmap was made outside the recorded calls: a constant of the
    program, which the third call refused as a "different constant"."""

    def program(wrap):
        model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.3), nn.Linear(8, 1))
        opt = sg.optim.SGD(model.parameters(), lr=0.01)

        @wrap
        def step(x, y):
            opt.zero_grad()
            out = sg.func.vmap(model, randomness=randomness)(x)
            loss = F.mse_loss(out, y)
            loss.backward()
            opt.step()
            return loss

        losses = [as_numpy(step(x, y)) for x, y in regression_batches()]
        return losses, snapshot([model], [opt])

    check_program(program, replays=STEPS - 3)


@pytest.mark.parametrize("reentrant", [False, True])
def test_a_checkpointed_block_with_dropout(reentrant):
    def program(wrap):
        block = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 4))
        model = nn.ModuleList([block, nn.Linear(4, 1)])
        opt = sg.optim.AdamW(model.parameters(), lr=0.01)

        @wrap
        def step(x, y):
            opt.zero_grad()
            h = sg.utils.checkpoint.checkpoint(block, x, use_reentrant=reentrant)
            loss = F.mse_loss(model[1](h + x), y)
            loss.backward()
            opt.step()
            return loss

        batches = regression_batches()
        losses = [as_numpy(step(x.requires_grad_(reentrant), y)) for x, y in batches]
        return losses, snapshot([model], [opt])

    check_program(program, replays=STEPS - 3)


def test_bfloat16_autocast_inside_the_step():
    """(Its tanh's gradient in bfloat16 was replayed by a kernel multiplying in bfloat16,
    where the eager one computes in float32 and rounds once.)"""

    def program(wrap):
        model = mlp()
        opt = sg.optim.Adam(model.parameters(), lr=0.01)

        @wrap
        def step(x, y):
            opt.zero_grad()
            with sg.autocast("cpu", dtype=sg.bfloat16):
                out = model(x)
                loss = F.mse_loss(out.float(), y)
            loss.backward()
            opt.step()
            return loss, out

        losses = [as_numpy(step(x, y)) for x, y in regression_batches()]
        return losses, snapshot([model], [opt])

    check_program(program, replays=STEPS - 3)


def _with_an_overflow() -> list:
    """Batches of which the fifth (a replay) makes an inf gradient: a skipped step."""
    batches = regression_batches()
    batches[4] = (batches[4][0] * 1e38, batches[4][1])
    return batches


@pytest.mark.parametrize("make", [sg.jit, sg.compile])
def test_a_grad_scaler_outside_the_step_skips_the_overflowing_replay(make):
    """The scaler runs eagerly around a jitted backward (given the scale as a tensor) or a
    compiled forward: it reads each replay's gradients, so the inf one is skipped and the
    scale halved, as eagerly. (A compiled function runs its Python four times: the fourth
    call captures its backward.)"""

    def program(wrap):
        model = mlp(nn.ReLU)
        opt = sg.optim.SGD(model.parameters(), lr=0.01)
        scaler = sg.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=2)

        @wrap
        def backward(x, y, scale):  # a whole backward, or a compiled forward (scale unused)
            with sg.autocast("cpu", dtype=sg.bfloat16):
                loss = F.mse_loss(model(x).float(), y)
            if make is sg.jit:
                (loss * scale).backward()
            return loss

        found = []
        for x, y in _with_an_overflow():
            opt.zero_grad()
            loss = backward(x, y, scaler.scale(sg.ones(())))  # (the scale, as a tensor)
            if make is sg.compile:
                scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            found.append((as_numpy(loss), scaler.get_scale()))
        return found, snapshot([model], [opt])

    check_program(program, replays=STEPS - 4, make=make)
    scales = [scale for _, scale in program(lambda fn: fn)[0]]
    assert scales[4] < scales[3]  # (the fifth step was skipped)


def test_a_grad_scaler_inside_the_step_raises():
    model = mlp()
    opt = sg.optim.SGD(model.parameters(), lr=0.01)
    scaler = sg.amp.GradScaler("cpu")

    @sg.jit
    def step(x, y):
        opt.zero_grad()
        scaler.scale(F.mse_loss(model(x), y)).backward()
        scaler.step(opt)
        scaler.update()

    x, y = regression_batches(1)[0]
    step(x, y)
    with pytest.raises(sg.JitError, match="GradScaler inside scratchgrad.jit"):
        step(x, y)


@pytest.mark.parametrize("call", ["unscale_", "step"])
def test_a_grad_scalers_unscale_or_step_inside_the_step_raises_naming_it(call):
    """The loss scaled outside (by the scale passed in), the gradients unscaled (and clipped)
    or the step taken inside: unscale_ divides the gradients' arrays in Python and step skips
    by their values, which replays did not repeat (silently: replays clipped the scaled
    gradients, or stepped on an overflow; update() then found no inf checks)."""
    model = mlp()
    opt = sg.optim.SGD(model.parameters(), lr=0.01)
    scaler = sg.amp.GradScaler("cpu")

    @sg.jit
    def step(x, y, scale):
        opt.zero_grad()
        (F.mse_loss(model(x), y) * scale).backward()
        getattr(scaler, call)(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)

    x, y = regression_batches(1)[0]
    step(x, y, scaler.scale(sg.ones(())))  # eager
    if call == "unscale_":
        scaler.step(opt)
    scaler.update()
    with pytest.raises(sg.JitError, match=rf"{call}\(\) of a GradScaler inside "):
        step(x, y, scaler.scale(sg.ones(())))


def test_averaging_the_weights_inside_the_step_raises_and_between_steps_replays():
    """``AveragedModel.update_parameters`` copies at its first average and averages after,
    chosen by ``n_averaged``'s value (``.item()``): refused inside the step, naming the line. Called
    between jitted steps, it reads each replay's weights, as eagerly (SWA, and EMA by
    ``get_ema_multi_avg_fn``)."""
    model = mlp()
    averaged = sg.optim.swa_utils.AveragedModel(model)
    opt = sg.optim.SGD(model.parameters(), lr=0.01)

    @sg.jit
    def step(x, y):
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        averaged.update_parameters(model)

    x, y = regression_batches(1)[0]
    step(x, y)  # eager
    with pytest.raises(sg.JitError, match=r"\.item\(\) at .*test_jit_advanced_programs.py:\d+"):
        step(x, y)

    def program(wrap):
        model = mlp()
        swa = sg.optim.swa_utils.AveragedModel(model)
        ema = sg.optim.swa_utils.AveragedModel(
            model, multi_avg_fn=sg.optim.swa_utils.get_ema_multi_avg_fn(0.9)
        )
        opt = sg.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

        @wrap
        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss

        losses = []
        for x, y in regression_batches():
            losses.append(as_numpy(step(x, y)))
            swa.update_parameters(model)
            ema.update_parameters(model)
        return losses, snapshot([model, swa, ema], [opt])

    check_program(program)


def test_tensor_and_module_hooks_scaling_gradients():
    def program(wrap):
        model = mlp()
        opt = sg.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        model[0].register_forward_hook(lambda m, inputs, out: out * 2)
        model[2].register_full_backward_hook(lambda m, grad_in, grad_out: (grad_in[0] * 0.5,))

        @wrap
        def step(x, y):
            opt.zero_grad()
            h = model[1](model[0](x))
            h.register_hook(lambda g: g * 3)
            loss = F.mse_loss(model[2](h), y)
            loss.backward()
            opt.step()
            return loss

        losses = [as_numpy(step(x, y)) for x, y in regression_batches()]
        return losses, snapshot([model], [opt])

    check_program(program, replays=STEPS - 3)


def test_an_optimizer_stepped_by_post_accumulate_grad_hooks_raises_saying_what_to_do():
    """The optimizer-in-backward pattern: each hook's step is Python run inside backward()."""
    model = mlp()
    optimizers = {p: sg.optim.SGD([p], lr=0.05) for p in model.parameters()}

    def step_and_zero(p):
        optimizers[p].step()
        optimizers[p].zero_grad()

    # (removed at the end: a hook anywhere turns off the jit's fast path, see guards.py)
    handles = [p.register_post_accumulate_grad_hook(step_and_zero) for p in model.parameters()]
    step = sg.jit(lambda x, y: F.mse_loss(model(x), y).backward())
    x, y = regression_batches(1)[0]
    try:
        step(x, y)
        with pytest.raises(sg.JitError, match="post-accumulate-grad hook at .*after backward"):
            step(x, y)
    finally:
        for handle in handles:
            handle.remove()


SECOND_ORDER = {
    "cumsum": lambda t: t.cumsum(0) ** 2,
    "logcumsumexp": lambda t: t.logcumsumexp(0),
    "cummax": lambda t: t.cummax(0).values ** 2,
    "softmax": lambda t: t.softmax(0) ** 2,
}


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_a_running_op_differentiated_twice(name):
    def program(wrap):
        w = sg.randn(6, requires_grad=True)
        opt = sg.optim.SGD([w], lr=0.01)

        @wrap
        def step(x):
            opt.zero_grad()
            y = SECOND_ORDER[name](x * w)
            (g,) = sg.autograd.grad(y.sum(), w, create_graph=True)
            loss = y.sum() + (g**2).sum()
            loss.backward()
            opt.step()
            return loss

        losses = [as_numpy(step(sg.rand(6) + 0.5)) for _ in range(STEPS)]
        return losses, as_numpy([w, w.grad])

    check_program(program, replays=STEPS - 3)


def test_cumprod_differentiated_twice_raises_naming_it():
    """Its second derivative's formula is chosen by whether an entry is 0 (as PyTorch's):
    before, the recorder's error named a ``bool(tensor)`` and no op."""
    w = sg.ones(3, requires_grad=True)

    @sg.jit
    def step(x):
        (g,) = sg.autograd.grad((x * w).cumprod(0).sum(), w, create_graph=True)
        g.sum().backward()

    step(sg.ones(3))
    with pytest.raises(sg.JitError, match=r"cumprod of shape \(3,\) differentiated with create"):
        step(sg.ones(3))
