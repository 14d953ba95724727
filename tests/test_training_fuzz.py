"""Random whole training loops against PyTorch: what the per-area fuzzers test one at a time,
together, as a user's script strings them. Hypothesis draws a small float64 network (an embedding
or a linear input layer, hidden blocks of Linear, LayerNorm, BatchNorm1d and activations, a block
applied twice (shared weights), a residual, dropout (not against PyTorch), an output layer tied to
the embedding's weight), a loss (cross-entropy with label smoothing and class weights, NLL after
log_softmax, MSE, L1, Huber, BCE with logits), an optimizer (SGD with momentum and Nesterov, Adam,
AdamW with AMSGrad, RMSprop, Adagrad) over one group or two (biases and norms without weight decay,
at another rate), a scheduler or none, and a loop of a few steps, some repeated: each with one to
three micro-batches whose losses are accumulated, gradient clipping by norm or value, ``zero_grad``
to None or to zeros, a layer frozen or unfrozen part way, an evaluation in ``eval()`` under
``no_grad`` now and then, a resume from a checkpoint (``save`` and ``load`` of the state dicts into
a fresh model, optimizer and scheduler). The losses, the evaluation outputs, every parameter and
buffer after each step, and the final ``state_dict`` of the model and the optimizer must agree. The
same loops with each step under ``scratchgrad.jit`` (recorded, recorded anew where a guard changed,
replayed), and with the model under ``scratchgrad.compile``, must agree with the eager ones. Set
``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples."""

import io

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import assert_close, fuzz_settings

import scratchgrad as sg

FUZZ = fuzz_settings(30)
# float64 through a few steps of the same arithmetic; the atol is for round-off where a value
# is zero in exact arithmetic (a bias's gradient before BatchNorm, and the state made from it)
TOLERANCE = (1e-9, 1e-9)
VOCABULARY, CLASSES, BATCH = 7, 3, 5

BLOCKS = [
    "linear", "layernorm", "batchnorm", "tanh", "relu", "gelu", "silu", "shared", "residual",
    "dropout",  # (not against PyTorch, whose random numbers are its own)
]  # fmt: skip
LOSSES = ["cross_entropy", "nll", "mse", "l1", "huber", "bce"]
OPTIMIZERS = ["sgd", "adam", "adamw", "rmsprop", "adagrad"]
SCHEDULERS = [None, "step", "lambda", "cosine"]


@st.composite
def programs(draw):
    """Everything one training run is made of, as plain data both libraries build from."""
    return {
        "seed": draw(st.integers(0, 2**16)),
        "width": draw(st.integers(2, 5)),
        "embedding": draw(st.booleans()),
        "tied": draw(st.booleans()),
        "blocks": draw(st.lists(st.sampled_from(BLOCKS), max_size=4)),
        "loss": draw(st.sampled_from(LOSSES)),
        "label_smoothing": draw(st.sampled_from([0.0, 0.0, 0.2])),
        "class_weights": draw(st.booleans()),
        "optimizer": draw(st.sampled_from(OPTIMIZERS)),
        "options": draw(st.integers(0, 3)),
        "two_groups": draw(st.booleans()),
        "scheduler": draw(st.sampled_from(SCHEDULERS)),
        "steps": draw(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "micro": st.integers(1, 3),
                        "clip": st.sampled_from([None, None, "norm2", "norm_inf", "value"]),
                        # zero_grad's way may change part way: a frozen layer then keeps its
                        # zeroed gradient on one call and has None on the next
                        "to_none": st.booleans(),
                        "freeze": st.sampled_from([None, None, None, "freeze", "unfreeze"]),
                        "evaluate": st.booleans(),
                        "resume": st.sampled_from([False, False, True]),
                        "repeat": st.sampled_from([1, 2, 4]),  # steps alike (replayed under jit)
                    }
                ),
                min_size=1,
                max_size=4,
            )
        ),
    }


def _model(m, program):
    """The drawn network in library ``m``, with its weights drawn from the program's seed."""
    width, nn = program["width"], m.nn
    out = _outputs(program)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            if program["embedding"]:
                self.inp = nn.Embedding(VOCABULARY, width)
            else:
                self.inp = nn.Linear(3, width)
            self.blocks = nn.ModuleList(_block(m, kind, width) for kind in program["blocks"])
            self.shared = nn.Linear(width, width)
            self.out = nn.Linear(width, out)
            if _tied(program):
                self.out.weight = self.inp.weight

        def forward(self, x):
            h = self.inp(x)
            if h.ndim == 3:  # embedded tokens: their mean per sample
                h = h.mean(1)
            for kind, block in zip(program["blocks"], self.blocks):
                if kind == "shared":
                    h = self.shared(m.tanh(self.shared(h)))
                elif kind == "residual":
                    h = h + block(h)
                else:
                    h = block(h)
            return self.out(h)

    net = Net().double()
    rng = np.random.default_rng(program["seed"])
    with m.no_grad():
        for p in net.parameters():
            p.copy_(m.tensor(rng.normal(size=tuple(p.shape)) * 0.7))
    return net


def _tied(program) -> bool:
    """Whether the output layer shares the embedding's weight (a classifier over the tokens)."""
    return program["tied"] and program["embedding"] and program["loss"] in ("cross_entropy", "nll")


def _outputs(program) -> int:
    if program["loss"] in ("mse", "l1", "huber", "bce"):
        return 1
    return VOCABULARY if _tied(program) else CLASSES


def _block(m, kind, width):
    nn = m.nn
    return {
        "linear": lambda: nn.Linear(width, width),
        "layernorm": lambda: nn.LayerNorm(width),
        "batchnorm": lambda: nn.BatchNorm1d(width, momentum=0.3),
        "tanh": nn.Tanh,
        "relu": nn.ReLU,
        "gelu": lambda: nn.GELU("tanh"),
        "silu": nn.SiLU,
        "dropout": lambda: nn.Dropout(0.3),
        "shared": nn.Identity,  # Net.forward applies its shared Linear twice
        "residual": lambda: nn.Sequential(nn.Linear(width, width), nn.Tanh()),
    }[kind]()


def _loss(m, program, output, target):
    F, kind = m.nn.functional, program["loss"]
    if kind == "cross_entropy":
        weight = m.tensor([1.0, 2.0, 0.5][: output.shape[1]] + [1.0] * (output.shape[1] - 3))
        weight = weight.double() if program["class_weights"] else None
        return F.cross_entropy(
            output, target, weight=weight, label_smoothing=program["label_smoothing"]
        )
    if kind == "nll":
        return F.nll_loss(F.log_softmax(output, dim=1), target)
    if kind == "bce":
        return F.binary_cross_entropy_with_logits(output.squeeze(1), target)
    losses = {"mse": F.mse_loss, "l1": F.l1_loss, "huber": F.huber_loss}
    return losses[kind](output.squeeze(1), target)


def _optimizer(m, program, net):
    """The drawn optimizer. The adaptive ones get an eps of 1e-3: some gradients are zero but
    for round-off (a bias before BatchNorm, or an L1 loss whose signs agree over the batch),
    and with eps at 1e-8 Adam's step divides that noise by its own size, a step of about lr."""
    optim, kind, options = m.optim, program["optimizer"], program["options"]
    decay, eps = 0.01 * options, 1e-3
    if program["two_groups"]:  # the usual split: no decay on biases and norms
        named = list(net.named_parameters())
        flat = [p for name, p in named if p.ndim < 2]
        groups = [
            {"params": [p for name, p in named if p.ndim >= 2]},
            {"params": flat, "weight_decay": 0.0, "lr": 0.03},
        ]
    else:
        groups = net.parameters()
    if kind == "sgd":
        nesterov = options % 2 == 1
        return optim.SGD(groups, lr=0.1, momentum=0.9 if options else 0.0, nesterov=nesterov,
                         weight_decay=decay)  # fmt: skip
    if kind == "adam":
        return optim.Adam(groups, lr=0.05, eps=eps, weight_decay=decay, amsgrad=options >= 2)
    if kind == "adamw":
        return optim.AdamW(groups, lr=0.05, eps=eps, weight_decay=decay, amsgrad=options % 2 == 1)
    if kind == "rmsprop":
        momentum, centered = 0.5 * (options % 2), options >= 2
        return optim.RMSprop(groups, lr=0.01, eps=eps, momentum=momentum, centered=centered)
    return optim.Adagrad(groups, lr=0.1, eps=eps, lr_decay=0.01 * options, weight_decay=decay)


def _scheduler(m, program, optimizer):
    schedulers, kind = m.optim.lr_scheduler, program["scheduler"]
    if kind == "step":
        return schedulers.StepLR(optimizer, step_size=2, gamma=0.5)
    if kind == "lambda":
        return schedulers.LambdaLR(optimizer, lambda epoch: 1 / (1 + epoch))
    if kind == "cosine":
        return schedulers.CosineAnnealingLR(optimizer, T_max=3)
    return None


def _batch(program, rng):
    """One micro-batch of inputs and targets for the drawn loss, as NumPy arrays."""
    if program["embedding"]:
        x = rng.integers(0, VOCABULARY, (BATCH, 4))
    else:
        x = rng.normal(size=(BATCH, 3))
    if _outputs(program) > 1:
        return x, rng.integers(0, _outputs(program), BATCH)
    if program["loss"] == "bce":
        return x, rng.uniform(0, 1, BATCH)
    return x, rng.normal(size=BATCH)


def _setup(m, program):
    net = _model(m, program)
    if program.get("compiled"):  # its forward captured (and the backward it records)
        net = m.compile(net)
    optimizer = _optimizer(m, program, net)
    return net, optimizer, _scheduler(m, program, optimizer)


def _resumed(m, program, parts):
    """Fresh copies of the model, optimizer and scheduler loaded from a checkpoint of
    ``parts`` saved with ``m.save`` (a file in memory)."""
    checkpoint = io.BytesIO()
    m.save([None if part is None else part.state_dict() for part in parts], checkpoint)
    checkpoint.seek(0)
    states = m.load(checkpoint, weights_only=True)
    fresh = _setup(m, program)
    for part, state in zip(fresh, states):
        if part is not None:  # (bool() of a compiled module is len()'s, as PyTorch's)
            part.load_state_dict(state)
    return fresh


def _train_step(m, program, net, optimizer, inputs, targets, clip, to_none):
    """One step over the micro-batches: their losses and the gradient norm (if clipped by it)."""
    net.train()
    results = []
    for x, target in zip(inputs, targets):
        loss = _loss(m, program, net(x), target) / len(inputs)
        loss.backward()
        results.append(loss.detach())
    if clip == "value":
        m.nn.utils.clip_grad_value_(net.parameters(), 0.5)
    elif clip:
        norm_type = 2.0 if clip == "norm2" else float("inf")
        results.append(m.nn.utils.clip_grad_norm_(net.parameters(), 1.0, norm_type))
    optimizer.step()
    optimizer.zero_grad(set_to_none=to_none)
    return results


def _run(m, program, step_with=_train_step):
    """Train as drawn in library ``m``, each step by ``step_with``; what the run gives, in
    order, as NumPy arrays."""
    m.manual_seed(program["seed"])  # (dropout's)
    net, optimizer, scheduler = _setup(m, program)
    rng = np.random.default_rng(program["seed"] + 1)
    seen = []
    for step in [each for each in program["steps"] for _ in range(each["repeat"])]:
        if step["resume"]:
            net, optimizer, scheduler = _resumed(m, program, (net, optimizer, scheduler))
        if step["freeze"]:
            net.out.bias.requires_grad_(step["freeze"] == "unfreeze")
        batches = [[m.tensor(a) for a in _batch(program, rng)] for _ in range(step["micro"])]
        inputs, targets = [list(part) for part in zip(*batches)]
        results = step_with(
            m, program, net, optimizer, inputs, targets, step["clip"], step["to_none"]
        )
        seen += [result.numpy() for result in results]
        if scheduler is not None:
            scheduler.step()
        if step["evaluate"]:
            net.eval()
            with m.no_grad():
                seen.append(net(m.tensor(_batch(program, rng)[0])).numpy())
        seen += [t.detach().numpy().copy() for t in net.state_dict().values()]
        seen += [np.array(group["lr"]) for group in optimizer.param_groups]
    return seen, net, optimizer


def _optimizer_state(optimizer) -> dict:
    """The optimizer's state dict as plain values: the state tensors per parameter index."""
    state = optimizer.state_dict()
    return {
        (index, key): np.asarray(value.detach().numpy() if hasattr(value, "detach") else value)
        for index, entries in state["state"].items()
        for key, value in entries.items()
    }


@FUZZ
@given(programs())
def test_training_loops_agree_with_pytorch(program):
    program = {**program, "blocks": [block for block in program["blocks"] if block != "dropout"]}
    ours, net, optimizer = _run(sg, program)
    theirs, torch_net, torch_optimizer = _run(torch, program)
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(a, b, what=f"value {i} of the run", tolerance=TOLERANCE)
    assert list(net.state_dict()) == list(torch_net.state_dict())
    state, torch_state = _optimizer_state(optimizer), _optimizer_state(torch_optimizer)
    assert state.keys() == torch_state.keys()
    for key in state:
        assert_close(state[key], torch_state[key], what=f"optimizer state {key}",
                     tolerance=TOLERANCE)  # fmt: skip
    groups = optimizer.state_dict()["param_groups"]
    torch_groups = torch_optimizer.state_dict()["param_groups"]
    assert [g["params"] for g in groups] == [g["params"] for g in torch_groups]


@FUZZ
@given(programs())
def test_jitted_training_loops_agree_with_eager_ones(program):
    # the same loops with each step under scratchgrad.jit (its first call runs eagerly, the
    # second records, later calls with the same guards replay): every value as eagerly
    eager, net, optimizer = _run(sg, program)
    jitted, jitted_net, jitted_optimizer = _run(sg, program, sg.jit(_train_step))
    assert len(jitted) == len(eager)
    for i, (a, b) in enumerate(zip(jitted, eager)):
        assert_close(a, b, what=f"value {i} of the run", tolerance=TOLERANCE)
    state, eager_state = _optimizer_state(jitted_optimizer), _optimizer_state(optimizer)
    assert state.keys() == eager_state.keys()
    for key in state:
        assert_close(state[key], eager_state[key], what=f"optimizer state {key}",
                     tolerance=TOLERANCE)  # fmt: skip


@FUZZ
@given(programs())
def test_training_loops_of_a_compiled_model_agree_with_eager_ones(program):
    # model = scratchgrad.compile(model), as scripts call torch.compile
    eager, net, optimizer = _run(sg, program)
    compiled, compiled_net, compiled_optimizer = _run(sg, {**program, "compiled": True})
    assert len(compiled) == len(eager)
    for i, (a, b) in enumerate(zip(compiled, eager)):
        assert_close(a, b, what=f"value {i} of the run", tolerance=TOLERANCE)
    assert [k.removeprefix("_orig_mod.") for k in compiled_net.state_dict()] == list(
        net.state_dict()
    )
