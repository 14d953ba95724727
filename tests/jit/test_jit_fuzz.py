"""A differential fuzz test of ``scratchgrad.jit`` (and ``scratchgrad.compile``) against eager
execution: hypothesis draws a small model, a loss, an optimizer and the features of a training
step (where gradients are cleared, clipping, accumulation, a ``no_grad`` block, in-place ops,
what is returned, a scheduler, a mode switch, batches whose size changes), builds the same
model twice from one seed, and runs one eagerly and one jitted (or compiled) on the same
batches. After every call the returned values, parameters, gradients (None-ness too), buffers
and optimizer states must be equal bit for bit; a ``JitError`` is accepted only while
recording, and only if it names the line of the step."""

import copy
import dataclasses
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_jit_programs import as_numpy, assert_same

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import functional as F

CALLS = 6  # eager, record, record again (checked), then replays
FEATURES, LENGTH, VOCAB, OUTPUTS = 3, 4, 7, 3

OPTIMIZERS = {
    "sgd": lambda ps: sg.optim.SGD(ps, lr=0.1),
    "sgd_momentum": lambda ps: sg.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01),
    "sgd_nesterov": lambda ps: sg.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    "sgd_dampening": lambda ps: sg.optim.SGD(ps, lr=0.1, momentum=0.5, dampening=0.1),
    "adam": lambda ps: sg.optim.Adam(ps, lr=0.01),
    "adam_amsgrad": lambda ps: sg.optim.Adam(ps, lr=0.01, amsgrad=True, weight_decay=0.1),
    "adamw": lambda ps: sg.optim.AdamW(ps, lr=0.01, weight_decay=0.1),
    "rmsprop": lambda ps: sg.optim.RMSprop(ps, lr=0.01),
    "rmsprop_centered": lambda ps: sg.optim.RMSprop(ps, lr=0.01, momentum=0.5, centered=True),
    "adagrad": lambda ps: sg.optim.Adagrad(ps, lr=0.1, weight_decay=0.01),
    "adamax": lambda ps: sg.optim.Adamax(ps, lr=0.01),
    "nadam": lambda ps: sg.optim.NAdam(ps, lr=0.01),
    "radam": lambda ps: sg.optim.RAdam(ps, lr=0.01),
    "adadelta": lambda ps: sg.optim.Adadelta(ps),
    "sgd_maximize": lambda ps: sg.optim.SGD(ps, lr=0.1, momentum=0.9, maximize=True),
    "adam_maximize": lambda ps: sg.optim.Adam(ps, lr=0.01, maximize=True, betas=(0.8, 0.9)),
    "adamw_amsgrad": lambda ps: sg.optim.AdamW(ps, lr=0.01, amsgrad=True),
    "asgd": lambda ps: sg.optim.ASGD(ps, lr=0.01),
    "rprop": lambda ps: sg.optim.Rprop(ps, lr=0.01),
    "adafactor": lambda ps: sg.optim.Adafactor(ps, lr=0.01),
}

SCHEDULERS = {
    "none": None,
    "step": lambda opt: sg.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5),
    "exponential": lambda opt: sg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9),
    "cosine": lambda opt: sg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4),
    "lambda": lambda opt: sg.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 1 / (1 + epoch)),
    "onecycle": lambda opt: sg.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=0.1, total_steps=10, cycle_momentum=False
    ),
    "plateau": lambda opt: sg.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0),
    "cyclic": lambda opt: sg.optim.lr_scheduler.CyclicLR(
        opt, 0.01, 0.1, step_size_up=2, cycle_momentum=False
    ),
}

REAL_TARGETS = ("mse", "huber", "l1", "bce", "custom")
LOSSES = ["mse", "cross_entropy", "cross_entropy_options", "nll", "huber", "l1", "bce", "custom"]

HIDDEN_LAYERS = [
    "linear",
    "linear_no_bias",
    "linear_frozen",
    "layernorm",
    "layernorm_plain",
    "batchnorm",
    "batchnorm_cumulative",
    "batchnorm_no_stats",
    "dropout",
    "relu",
    "relu_in_place",
    "leaky_relu_in_place",
    "tanh",
    "gelu",
    "gelu_tanh",
]


def halve_the_learning_rate(call: int, model: nn.Module, opt, saved: dict) -> None:
    for group in opt.param_groups:
        group["lr"] = group["lr"] * 0.5


def clip_the_weights(call: int, model: nn.Module, opt, saved: dict) -> None:
    with sg.no_grad():  # (as WGAN's critic does after each step)
        for p in model.parameters():
            p.clamp_(-0.3, 0.3)


def toggle_the_first_weight(call: int, model: nn.Module, opt, saved: dict) -> None:
    first = next(model.parameters())
    first.requires_grad_(call % 2 == 1)


def zero_every_other_call(call: int, model: nn.Module, opt, saved: dict) -> None:
    if call % 2:
        opt.zero_grad()


def reload_the_model(call: int, model: nn.Module, opt, saved: dict) -> None:
    state = model.state_dict()
    model.load_state_dict({name: value * 0.9 for name, value in state.items()})


def reload_the_optimizer(call: int, model: nn.Module, opt, saved: dict) -> None:
    opt.load_state_dict(opt.state_dict())


def roll_back(call: int, model: nn.Module, opt, saved: dict) -> None:
    """Save both state dicts after the second call, load them back after the fifth (a resume
    from a checkpoint: the optimizer's state tensors are new ones)."""
    if call == 1:
        saved.update(model=copy.deepcopy(model.state_dict()), opt=copy.deepcopy(opt.state_dict()))
    elif call == 4:
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["opt"])


def evaluate(call: int, model: nn.Module, opt, saved: dict):
    """An evaluation between training calls: eval mode, no_grad, then train mode again."""
    was_training = model.training
    model.eval()
    with sg.no_grad():
        out = model(saved["x"])
    model.train(was_training)
    return as_numpy(out)


BETWEEN = {
    "evaluate": evaluate,
    "nothing": lambda call, model, opt, saved: None,
    "roll_back": roll_back,
    "halve_lr": halve_the_learning_rate,
    "clip_weights": clip_the_weights,
    "toggle_requires_grad": toggle_the_first_weight,
    "zero_every_other": zero_every_other_call,
    "reload_model": reload_the_model,
    "reload_optimizer": reload_the_optimizer,
}


@dataclasses.dataclass(frozen=True)
class Case:
    """One drawn training program."""

    inputs: str  # "vector" (Linear first), "conv" (Conv1d first), "embedding"
    layers: tuple
    loss: str  # "mse", "cross_entropy", "custom"
    optimizer: str
    zero: str  # "before", "before_none", "after", "grad_none", "outside", "never"
    clip: str  # "none", "norm", "value"
    accumulate: bool
    no_grad_stat: bool
    in_place: str  # "none", "chain" (mul_ then add_), "view" (writes through views), "detached"
    detach_term: bool
    returns: str  # "loss", "tuple", "dict", "logits"
    scheduler: str
    scheduler_inside: bool
    modes: tuple  # model.train() (True) or eval() (False) before each call
    batch_sizes: tuple
    compiled: bool  # sg.compile(model) in an eager step instead of sg.jit(step)
    embedding_max_norm: float | None = None  # (renormalises the embedding's rows in place)
    dtype: str = "float32"
    return_norm: bool = False  # return clip_grad_norm_'s total norm too
    between: str = "nothing"  # what the loop does between calls (BETWEEN)
    reuse_inputs: bool = False  # one x and y, refilled in place (copy_) for each call
    mutate_returned: bool = False  # the caller changes the returned tensors in place
    mode_inside: str = "none"  # "train" or "eval": model.train()/eval() at the step's top
    two_groups: bool = False  # the last layer in a param group of its own, with its own lr
    input_grad: bool = False  # float inputs require grad; the step returns their .grad
    retain_graph: bool = False  # a second backward through the same graph
    hook: str = "none"  # "tensor" (on the output, in the step), "parameter", "forward"
    strided_calls: tuple = ()  # the calls given a transposed (not contiguous) input
    scale_argument: bool = False  # a Python number argument, another at some calls
    autocast: bool = False  # the forward and loss under bfloat16 autocast
    compile_inside_jit: bool = False  # sg.jit(step) calling sg.compile(model) (inlined)


@st.composite
def cases(draw) -> Case:
    compiled = draw(st.booleans())
    batch = draw(st.sampled_from([4, 5, 6]))
    changing = draw(st.booleans())
    sizes = tuple(
        draw(st.sampled_from([4, 5, 6])) if changing and i >= 3 else batch for i in range(CALLS)
    )
    switch = draw(st.booleans())
    return Case(
        inputs=draw(st.sampled_from(["vector", "conv", "embedding"])),
        layers=tuple(draw(st.lists(st.sampled_from(HIDDEN_LAYERS), max_size=4))),
        loss=draw(st.sampled_from(LOSSES)),
        optimizer=draw(st.sampled_from(sorted(OPTIMIZERS))),
        zero=draw(
            st.sampled_from(["before", "before_none", "after", "grad_none", "outside", "never"])
        ),
        clip=draw(st.sampled_from(["none", "norm", "value"])),
        accumulate=draw(st.booleans()),
        no_grad_stat=draw(st.booleans()),
        in_place=draw(st.sampled_from(["none", "chain", "view", "detached"])),
        detach_term=draw(st.booleans()),
        returns=draw(
            st.sampled_from(["loss", "tuple", "dict", "logits", "parameter", "grad", "input"])
        ),
        scheduler=draw(st.sampled_from(sorted(SCHEDULERS))),
        scheduler_inside=draw(st.booleans()),
        modes=tuple(not switch or i % 3 != 2 for i in range(CALLS)),
        batch_sizes=sizes,
        compiled=compiled,
        embedding_max_norm=draw(st.sampled_from([None, 0.5])),
        dtype=draw(st.sampled_from(["float32", "float64"])),
        return_norm=draw(st.booleans()),
        between=draw(st.sampled_from(sorted(BETWEEN))),
        reuse_inputs=draw(st.booleans()),
        mutate_returned=draw(st.booleans()),
        mode_inside=draw(st.sampled_from(["none", "train", "eval"])),
        two_groups=draw(st.booleans()),
        input_grad=draw(st.booleans()),
        retain_graph=draw(st.booleans()),
        hook=draw(st.sampled_from(["none", "tensor", "parameter", "forward"])),
        strided_calls=tuple(draw(st.sets(st.sampled_from(range(CALLS)), max_size=3))),
        scale_argument=draw(st.booleans()),
        autocast=draw(st.booleans()),
        compile_inside_jit=draw(st.booleans()),
    )


def hidden_layer(name: str, width: int) -> nn.Module:
    layers = {
        "linear": lambda: nn.Linear(width, width),
        "linear_no_bias": lambda: nn.Linear(width, width, bias=False),
        "linear_frozen": lambda: nn.Linear(width, width).requires_grad_(False),
        "layernorm": lambda: nn.LayerNorm(width),
        "layernorm_plain": lambda: nn.LayerNorm(width, elementwise_affine=False),
        "batchnorm": lambda: nn.BatchNorm1d(width),
        "batchnorm_cumulative": lambda: nn.BatchNorm1d(width, momentum=None),
        "batchnorm_no_stats": lambda: nn.BatchNorm1d(width, track_running_stats=False),
        "dropout": lambda: nn.Dropout(0.3),
        "relu": nn.ReLU,
        "relu_in_place": lambda: nn.ReLU(inplace=True),
        "leaky_relu_in_place": lambda: nn.LeakyReLU(0.1, inplace=True),
        "tanh": nn.Tanh,
        "gelu": nn.GELU,
        "gelu_tanh": lambda: nn.GELU(approximate="tanh"),
    }
    return layers[name]()


def build_model(case: Case) -> nn.Module:
    """The drawn stack: a first layer for the inputs, the hidden layers, a last Linear."""
    width = 5
    if case.inputs == "vector":
        first = [nn.Linear(FEATURES, width)]
    elif case.inputs == "conv":
        first = [nn.Conv1d(FEATURES, 2, kernel_size=2), nn.Flatten(), nn.Linear(6, width)]
    else:
        embedding = nn.Embedding(VOCAB, 2, padding_idx=0, max_norm=case.embedding_max_norm)
        first = [embedding, nn.Flatten(), nn.Linear(2 * LENGTH, width)]
    hidden = [hidden_layer(name, width) for name in case.layers]
    model = nn.Sequential(*first, *hidden, nn.Linear(width, OUTPUTS))
    return model.to(getattr(sg, case.dtype))


def make_batch(case: Case, rng: np.random.Generator, size: int) -> tuple:
    if case.inputs == "vector":
        x = sg.tensor(rng.standard_normal((size, FEATURES)), dtype=getattr(sg, case.dtype))
    elif case.inputs == "conv":
        x = sg.tensor(rng.standard_normal((size, FEATURES, LENGTH)), dtype=getattr(sg, case.dtype))
    else:
        x = sg.tensor(rng.integers(0, VOCAB, (size, LENGTH)))
    if case.loss in ("cross_entropy", "cross_entropy_options", "nll"):
        y = sg.tensor(rng.integers(0, OUTPUTS, (size,)))
    else:
        y = sg.tensor(rng.standard_normal((size, OUTPUTS)), dtype=getattr(sg, case.dtype))
    return x, y


def loss_of(case: Case, out: sg.Tensor, y: sg.Tensor) -> sg.Tensor:
    if case.loss == "mse":
        return F.mse_loss(out, y)
    if case.loss == "cross_entropy":
        return F.cross_entropy(out, y)
    if case.loss == "cross_entropy_options":
        weight = sg.tensor([1.0, 2.0, 0.5], dtype=out.dtype)
        return F.cross_entropy(out, y, weight=weight, ignore_index=1, label_smoothing=0.1)
    if case.loss == "nll":
        return F.nll_loss(F.log_softmax(out, dim=1), y)
    if case.loss == "huber":
        return F.huber_loss(out, y, delta=0.5)
    if case.loss == "l1":
        return F.l1_loss(out, y)
    if case.loss == "bce":
        return F.binary_cross_entropy_with_logits(out, (y > 0).to(out.dtype))
    return (out * y).sum() * 0.1 + out.pow(2).mean()


def step_scheduler(sched) -> None:
    if isinstance(sched, sg.optim.lr_scheduler.ReduceLROnPlateau):
        sched.step(1.0)  # (a loss that never improves: the rate falls at each step)
    else:
        sched.step()


def make_step(case: Case, model: nn.Module, forward: nn.Module, opt, sched):
    """The drawn training step, as a user would write it for these choices; ``forward`` is
    ``model`` or ``sg.compile(model)``."""

    def clear():
        if case.zero in ("before", "after"):
            opt.zero_grad(set_to_none=False)
        elif case.zero == "before_none":
            opt.zero_grad()
        elif case.zero == "grad_none":
            for p in model.parameters():
                p.grad = None

    def forward_and_loss(x, y):
        with sg.autocast("cpu", dtype=sg.bfloat16, enabled=case.autocast):
            return forward_and_loss_of(x, y)

    def forward_and_loss_of(x, y):
        out = forward(x)
        if case.hook == "tensor":
            out.register_hook(lambda grad: grad * 1.5)
        if case.in_place == "chain":
            out = out * 1.0
            out.mul_(0.5).add_(0.25)
        elif case.in_place == "view":
            out = out + 0.0
            out[:, 0] = out[:, 1] * 2
            out[:, 1:].mul_(0.5)
        elif case.in_place == "detached":
            out = out + 0.0
            out.detach().mul_(0.5)  # (changes the values, not the gradient)
        loss = loss_of(case, out, y)
        if case.detach_term:
            loss = loss + (out.detach() * out).mean() * 0.01
        return out, loss

    def step(x, y):
        if case.mode_inside != "none":
            forward.train(case.mode_inside == "train")
        if case.zero != "after":
            clear()
        if case.accumulate:
            half = x.shape[0] // 2
            out1, loss1 = forward_and_loss(x[:half], y[:half])
            (loss1 * 0.5).backward()
            out2, loss2 = forward_and_loss(x[half:], y[half:])
            (loss2 * 0.5).backward()
            out, loss = sg.cat([out1, out2]), (loss1 + loss2) * 0.5
        else:
            out, loss = forward_and_loss(x, y)
            loss.backward(retain_graph=case.retain_graph)
            if case.retain_graph:
                (loss * 0.5).backward()
        norm = None
        if case.clip == "norm":
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
        elif case.clip == "value":
            nn.utils.clip_grad_value_(model.parameters(), clip_value=0.05)
        opt.step()
        if sched is not None and case.scheduler_inside:
            step_scheduler(sched)
        if case.zero == "after":
            clear()
        stat = norm if case.return_norm else None
        if case.input_grad and x.requires_grad:
            stat = x.grad
        if case.no_grad_stat:
            with sg.no_grad():
                stat = (out.argmax(1) == 0).float().mean() + out.abs().sum()
        if case.returns == "loss":
            return loss
        if case.returns == "tuple":
            return loss, out.detach(), stat
        if case.returns == "dict":
            return {"loss": loss, "stat": stat}
        if case.returns == "parameter":
            return loss, model[-1].bias
        if case.returns == "grad":
            return loss, model[-1].weight.grad
        if case.returns == "input":
            return x, loss.detach()
        return out

    return step


def param_groups(case: Case, model: nn.Module) -> list:
    if not case.two_groups:
        return list(model.parameters())
    last = list(model[-1].parameters())
    rest = [p for p in model.parameters() if all(p is not q for q in last)]
    return [{"params": rest}, {"params": last, "lr": 0.003}]


def tensors_in(tree) -> list:
    if isinstance(tree, sg.Tensor):
        return [tree]
    if isinstance(tree, dict):
        tree = list(tree.values())
    if isinstance(tree, (list, tuple)):
        return [tensor for item in tree for tensor in tensors_in(item)]
    return []


def snapshot(model: nn.Module, opt) -> dict:
    return {
        "model": as_numpy(model.state_dict()),
        "grads": [as_numpy(p.grad) for p in model.parameters()],
        "opt": as_numpy(opt.state_dict()),
    }


@dataclasses.dataclass(frozen=True)
class Raised:
    error: str
    message: str
    ran_python: bool  # (a replay runs none)


def train(case: Case, jitted: bool, python_runs: list) -> list:
    """Each call's returned values and snapshot; the last item is the error, if one was
    raised (the run stops there). ``python_runs`` gets None for each call that
    ran the step's Python, and the input's shape for each that ran the model's."""
    sg.manual_seed(1)
    model = build_model(case)
    opt = OPTIMIZERS[case.optimizer](param_groups(case, model))
    if case.hook == "parameter":
        model[-1].weight.register_hook(lambda grad: grad.clamp(-0.1, 0.1))
    elif case.hook == "forward":
        model[0].register_forward_hook(lambda module, args, out: out * 0.5)
    sched = SCHEDULERS[case.scheduler] and SCHEDULERS[case.scheduler](opt)
    python_forward = model.forward

    def forward(x):
        python_runs.append(x.shape)
        return python_forward(x)

    model.__dict__["forward"] = forward  # (past Module.__setattr__, which compile watches)
    compiling = jitted and (case.compiled or case.compile_inside_jit)
    compiled = sg.compile(model) if compiling else model
    python_step = make_step(case, model, compiled, opt, sched)

    def step(x, y, scale):
        python_runs.append(None)
        return python_step(x, y * scale if case.loss in REAL_TARGETS else y)

    if jitted and not case.compiled:
        step = sg.jit(step)
    rng = np.random.default_rng(2)
    results, returned, buffers, saved = [], [], {}, {}
    for call, (mode, size) in enumerate(zip(case.modes, case.batch_sizes)):
        model.train(mode)
        if case.zero == "outside":
            opt.zero_grad()
        x, y = make_batch(case, rng, size)
        if case.reuse_inputs:
            x, y = (buffers.setdefault((size, i), new) for i, new in enumerate((x, y)))
            with sg.no_grad():
                x.copy_(make_batch(case, np.random.default_rng(call), size)[0])
        if call in case.strided_calls:  # the same values, laid out transposed
            x = x.detach().transpose(0, -1).contiguous().transpose(0, -1)
        if case.input_grad and x.is_floating_point():
            x.requires_grad_()
        runs = len(python_runs)
        saved["x"] = x.detach().clone()  # (for evaluate: the caller may change x in place)
        try:
            out = step(x, y, 1.0 + (call % 2 and case.scale_argument))
        except Exception as error:  # (eager's errors must be the jitted step's too)
            ran_python = len(python_runs) > runs + case.compiled  # (compile's step is eager)
            results.append(Raised(type(error).__name__, str(error), ran_python))
            break
        if sched is not None and not case.scheduler_inside:
            step_scheduler(sched)
        results.append((as_numpy(out), snapshot(model, opt)))
        returned.append(out)
        if case.mutate_returned:
            with sg.no_grad():
                for tensor in tensors_in(out):
                    tensor.add_(1)
        results.append(BETWEEN[case.between](call, compiled, opt, saved))
    results.append(as_numpy(returned))  # (what the caller kept, after the later calls)
    return results


def check_case(case: Case) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eager = train(case, jitted=False, python_runs=[])
        python_runs = []
        jitted = train(case, jitted=True, python_runs=python_runs)
    for call, (got, expected) in enumerate(zip(jitted, eager)):
        if isinstance(got, Raised) and got.error == "JitError":
            assert got.ran_python, f"JitError on call {call}, not while recording: {got}"
            assert re.search(r"test_jit_fuzz\.py:\d+", got.message), got  # (names the line)
            return
        if isinstance(expected, Raised):
            assert (got.error, got.message) == (expected.error, expected.message), call
            return
        assert not isinstance(got, Raised), f"call {call}: {got}"
        assert_same(got, expected, f"call {call}")
    assert len(jitted) == len(eager)
    same_key = len(set(case.batch_sizes)) == len(set(case.modes)) == 1
    same_key = same_key and not (case.strided_calls or case.scale_argument)
    if same_key and case.between not in ("toggle_requires_grad", "evaluate"):
        steps = python_runs.count(None)
        if case.compiled:
            forwards = len(python_runs) - steps
            assert forwards < steps * (1 + case.accumulate), "the compiled model must replay"
        else:
            assert steps == 3, "the calls after the two recordings must replay"


@settings(
    max_examples=100,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(cases())
def test_jitted_training_steps_equal_eager_ones(case):
    check_case(case)


@pytest.mark.parametrize("between", ["roll_back", "toggle_requires_grad"])
@pytest.mark.parametrize("compiled", [False, True])
def test_every_feature_at_once_equals_eager(compiled, between):
    check_case(
        Case(
            inputs="conv",
            layers=("batchnorm", "gelu", "dropout", "linear", "layernorm", "tanh"),
            loss="cross_entropy",
            optimizer="adamw",
            zero="grad_none",
            clip="norm",
            accumulate=True,
            no_grad_stat=True,
            in_place="view",
            detach_term=True,
            returns="tuple",
            scheduler="step",
            scheduler_inside=True,
            modes=(True, True, False, True, True, False),
            batch_sizes=(4, 4, 4, 5, 4, 4),
            compiled=compiled,
            between=between,
            mutate_returned=True,
            two_groups=True,
            hook="tensor",
            strided_calls=(3,),
        )
    )
