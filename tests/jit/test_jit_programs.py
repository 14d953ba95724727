"""Small programs written the way PyTorch users write them, run under ``scratchgrad.jit`` and
``scratchgrad.compile``: each ends where the same program run eagerly ends, bit for bit (the
returned values, the model's and the optimizer's state dicts and the gradients, after every
step), and each checks that the step's Python ran only on the calls that record, so a jit that
silently ran everything eagerly would fail."""

import copy
import functools
import re
import warnings
from collections import namedtuple
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import functional as F

# each program's counting wrapper appends to a list, which the jit warns a replay will
# not do (tests/jit/test_jit_pitfalls.py checks that warning)
pytestmark = pytest.mark.filterwarnings("ignore:scratchgrad.jit.*while it was recorded")

STEPS = 6  # eager, record, record again (checked), then replays


def as_numpy(tree):
    """Tensors in ``tree`` (nested lists, tuples, dicts) as NumPy arrays, the rest as it is."""
    if isinstance(tree, sg.Tensor):
        return tree.detach().numpy().copy()
    if isinstance(tree, (list, tuple)):
        return [as_numpy(item) for item in tree]
    if isinstance(tree, dict):
        return {key: as_numpy(value) for key, value in tree.items()}
    return tree


def snapshot(modules: list, optimizers: list) -> dict:
    """Everything a training step changes: state dicts, optimizer states and gradients."""
    state = {}
    for i, module in enumerate(modules):
        state[f"model{i}"] = as_numpy(module.state_dict())
        state[f"grads{i}"] = [as_numpy(p.grad) for p in module.parameters()]
    for i, opt in enumerate(optimizers):
        state[f"opt{i}"] = as_numpy(opt.state_dict())
    return state


def assert_same(jitted, eager, path="") -> None:
    """Equal bit for bit, with the same dtypes and structure."""
    if isinstance(eager, np.ndarray):
        assert isinstance(jitted, np.ndarray) and jitted.dtype == eager.dtype, path
        np.testing.assert_array_equal(jitted, eager, err_msg=path)
    elif isinstance(eager, dict):
        assert jitted.keys() == eager.keys(), path
        for key in eager:
            assert_same(jitted[key], eager[key], f"{path}.{key}")
    elif isinstance(eager, (list, tuple)):
        assert len(jitted) == len(eager), path
        for i, (a, b) in enumerate(zip(jitted, eager)):
            assert_same(a, b, f"{path}[{i}]")
    else:
        assert jitted == eager or (jitted != jitted and eager != eager), path


def check_program(
    program: Callable[[Callable], tuple], replays: int = STEPS - 3, make: Callable = sg.jit
) -> list:
    """Run ``program(wrap)`` eagerly (``wrap`` the identity) and jitted (``wrap`` counting the
    calls that run the step's Python, then ``sg.jit``), from the same seed; what it returns
    (values per step and a final snapshot) must be equal bit for bit, and the jitted steps
    must have replayed at least ``replays`` times. ``make`` jits (``sg.jit``, or
    ``sg.compile`` with options). Returns the jitted functions."""
    sg.manual_seed(0)
    eager = program(lambda fn: fn)
    python_calls = []
    counted = {}

    def wrap(fn):
        def counting(*args, **kwargs):
            python_calls.append(fn)
            return fn(*args, **kwargs)

        counted[id(fn)] = make(counting)
        return counted[id(fn)]

    sg.manual_seed(0)
    jitted = program(wrap)
    assert_same(jitted, eager)
    total = sum(jitted_fn.calls for jitted_fn in counted.values())
    assert total - len(python_calls) >= replays, (total, len(python_calls))
    return list(counted.values())


def classifier(features: int = 6, hidden: int = 16, classes: int = 3) -> nn.Module:
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))


def batches(n: int, size: int = 8, features: int = 6, classes: int = 3) -> list:
    return [(sg.randn(size, features), sg.randint(0, classes, (size,))) for _ in range(n)]


def test_a_step_returning_a_dict_of_loss_and_accuracy():
    """The usual step: zero_grad, forward, loss, backward, step; accuracy through
    argmax/eq/float/mean under no_grad; a dict of tensors returned."""

    def program(wrap):
        model = classifier()
        opt = sg.optim.Adam(model.parameters(), lr=1e-2)

        @wrap
        def step(x, y):
            opt.zero_grad()
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            with sg.no_grad():
                accuracy = (logits.argmax(dim=1) == y).float().mean()
            return {"loss": loss, "accuracy": accuracy}

        data = batches(2)
        out = [as_numpy(step(*data[i % 2])) for i in range(STEPS)]
        return out, snapshot([model], [opt])

    check_program(program)


def make_scheduler(name: str, opt: sg.optim.Optimizer, steps: int):
    lr_scheduler = sg.optim.lr_scheduler
    if name == "StepLR":
        return lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    if name == "CosineAnnealingLR":
        return lr_scheduler.CosineAnnealingLR(opt, T_max=steps, eta_min=1e-4)
    return lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=steps)  # cycles beta1 too


@pytest.mark.parametrize("scheduler", ["StepLR", "CosineAnnealingLR", "OneCycleLR"])
def test_adamw_clipping_and_a_scheduler_stepped_between_jitted_steps(scheduler):
    """AdamW, ``clip_grad_norm_`` inside the step (its returned norm logged), the scheduler
    stepped outside, between calls: each replay reads the learning rate of that moment."""

    def program(wrap):
        model = classifier()
        opt = sg.optim.AdamW(model.parameters(), lr=0.02, weight_decay=0.05)
        sched = make_scheduler(scheduler, opt, 2 * STEPS)

        @wrap
        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
            opt.step()
            return loss, norm

        data = batches(3)
        out = []
        for i in range(2 * STEPS):
            out.append(as_numpy(step(*data[i % 3])))
            sched.step()
            out.append(sched.get_last_lr())
        return out, snapshot([model], [opt])

    check_program(program, replays=2 * STEPS - 3)


def test_the_compile_tutorial_s_compiled_train_and_evaluate_functions():
    """PyTorch's torch.compile tutorial: ``train(mod, data)`` (``zero_grad(True)``, a
    ``CrossEntropyLoss()`` made inside, backward, step) and ``evaluate(mod, inp)``, each
    compiled with ``mode="reduce-overhead"``, the model passed as an argument, evaluation
    under ``no_grad``."""

    def program(wrap):
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
        opt = sg.optim.Adam(model.parameters())

        @wrap
        def train(mod, data):
            opt.zero_grad(True)
            pred = mod(data[0])
            loss = nn.CrossEntropyLoss()(pred, data[1])
            loss.backward()
            opt.step()
            return loss

        @wrap
        def evaluate(mod, inp):
            return mod(inp)

        data, out = batches(3), []
        for i in range(STEPS):
            out.append(as_numpy(train(model, data[i % 3])))
            with sg.no_grad():
                out.append(as_numpy(evaluate(model, data[0][0])))
        return out, snapshot([model], [opt])

    check_program(
        program, 2 * (STEPS - 3), make=functools.partial(sg.compile, mode="reduce-overhead")
    )


def test_the_compile_tutorial_loop_with_dropout_batchnorm_and_evaluation():
    """``model = sg.compile(model)`` then the ordinary loop: ``train()``, zero_grad, forward,
    loss, backward, step per batch; ``eval()`` and a validation pass under ``no_grad`` after
    each epoch. Dropout and BatchNorm switch with the modes."""

    def program(compile_):
        model = nn.Sequential(
            nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3)
        )
        model = compile_(model)
        opt = sg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        data, validation = batches(3), batches(1)[0]
        out = []
        for _epoch in range(3):
            model.train()
            for x, y in data:
                opt.zero_grad()
                logits = model(x)
                loss = F.cross_entropy(logits, y)
                loss.backward()
                opt.step()
                out.append(as_numpy(loss))
            node = logits.grad_fn.name()
            model.eval()
            with sg.no_grad():
                logits = model(validation[0])
            out.append(as_numpy([logits, (logits.argmax(1) == validation[1]).float().mean()]))
        plain = getattr(model, "_orig_mod", model)  # the compiled module's keys have a prefix
        return out, snapshot([plain], [opt]), node

    sg.manual_seed(0)
    eager = program(lambda model: model)
    sg.manual_seed(0)
    compiled = program(sg.compile)
    assert_same(compiled[:2], eager[:2])
    assert compiled[2] == "CompiledFunctionBackward"  # the last steps replayed


def test_jitted_train_and_eval_steps_switching_dropout_and_batchnorm():
    """A jitted training step and a jitted evaluation step (``no_grad``, logits returned),
    with ``model.train()``/``model.eval()`` between them: a program per mode."""

    def program(wrap):
        model = nn.Sequential(
            nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3)
        )
        opt = sg.optim.Adam(model.parameters(), lr=1e-2)

        @wrap
        def train_step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        @wrap
        def evaluate(x):
            with sg.no_grad():
                return model(x)

        data = batches(2)
        out = []
        for i in range(STEPS):
            model.train()
            out.append(as_numpy(train_step(*data[i % 2])))
            model.eval()
            out.append(as_numpy(evaluate(data[0][0])))
        return out, snapshot([model], [opt])

    check_program(program, replays=2 * (STEPS - 3))


def test_gradient_accumulation_over_micro_batches_inside_the_step():
    """The batch split into k micro-batches inside the step, each loss divided by k and
    backpropagated, one optimizer step."""

    def program(wrap):
        model = classifier()
        opt = sg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)

        @wrap
        def step(x, y, k=4):
            opt.zero_grad(set_to_none=False)
            total = sg.zeros(())
            for xs, ys in zip(x.chunk(k), y.chunk(k)):
                loss = F.cross_entropy(model(xs), ys) / k
                loss.backward()
                total = total + loss.detach()
            opt.step()
            return total

        data = batches(2, size=16)
        out = [as_numpy(step(*data[i % 2])) for i in range(STEPS)]
        return out, snapshot([model], [opt])

    check_program(program)


def test_gradient_accumulation_over_jitted_calls_with_the_step_outside():
    """A jitted micro-step (forward, loss / k, backward) called k times, then
    ``opt.step()`` and ``opt.zero_grad(set_to_none=False)`` outside, eagerly."""

    def program(wrap):
        model = classifier()
        opt = sg.optim.Adam(model.parameters(), lr=1e-2)
        k = 3

        @wrap
        def micro_step(x, y):
            loss = F.cross_entropy(model(x), y) / k
            loss.backward()
            return loss

        data = batches(k)
        out = []
        for _ in range(4):
            for x, y in data:
                out.append(as_numpy(micro_step(x, y)))
            opt.step()
            out.append(snapshot([model], [opt]))
            opt.zero_grad(set_to_none=False)
        return out, snapshot([model], [opt])

    check_program(program, replays=4 * 3 - 3)


def test_a_last_batch_of_another_size_records_then_the_full_batches_replay_again():
    """Epochs of two full batches and a short last one: the short one records its own
    program; the next epoch's full batches replay the first program."""

    def program(wrap):
        model = classifier()
        opt = sg.optim.SGD(model.parameters(), lr=0.1)

        @wrap
        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        x, y = sg.randn(20, 6), sg.randint(0, 3, (20,))
        out = []
        for _epoch in range(4):
            for start in range(0, 20, 8):
                out.append(as_numpy(step(x[start : start + 8], y[start : start + 8])))
        return out, snapshot([model], [opt])

    (step,) = check_program(program, replays=12 - 5)
    assert [len(r) for r in step.recordings.values()] == [1, 1]  # a program per batch size


class TinyTransformer(nn.Module):
    """Embedding, LayerNorm, MultiheadAttention with a causal mask, a linear read-out."""

    def __init__(self, vocab: int = 11, width: int = 8, heads: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.norm = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, dropout=0.1, batch_first=True)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx):
        x = self.norm(self.embed(idx))
        length = idx.shape[1]
        mask = sg.triu(sg.ones(length, length, dtype=sg.bool), diagonal=1)
        attended, _ = self.attn(x, x, x, attn_mask=mask, need_weights=False)
        return self.head(x + attended)


def test_a_transformer_with_embedding_layernorm_and_attention():
    def program(wrap):
        model = TinyTransformer()
        opt = sg.optim.AdamW(model.parameters(), lr=1e-2)

        @wrap
        def step(idx, targets):
            opt.zero_grad()
            logits = model(idx)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
            loss.backward()
            opt.step()
            return loss

        data = [(sg.randint(0, 11, (2, 5)), sg.randint(0, 11, (2, 5))) for _ in range(2)]
        out = [as_numpy(step(*data[i % 2])) for i in range(STEPS)]
        return out, snapshot([model], [opt])

    check_program(program)


@pytest.mark.parametrize("bag", [False, True])
@pytest.mark.parametrize("options", [{"scale_grad_by_freq": True}, {"max_norm": 1.0}])
def test_embeddings_scaling_gradients_by_frequency_or_renormalizing_rows(options, bag):
    """``scale_grad_by_freq`` (its float32 scale was cast outside the recorded call: the
    recording's counts replayed for every batch) and ``max_norm`` (its rows, each index once,
    took a shape decided by the batch's values: a replay of another count raised a NumPy
    error). The recording calls see one batch, the replays others."""

    def program(wrap):
        emb = (
            nn.EmbeddingBag(10, 4, mode="mean", **options)
            if bag
            else nn.Embedding(10, 4, **options)
        )
        head = nn.Linear(4, 3)
        opt = sg.optim.SGD([*emb.parameters(), *head.parameters()], lr=0.5)

        @wrap
        def step(idx, y):
            opt.zero_grad()
            features = emb(idx) if bag else emb(idx).mean(1)
            loss = F.cross_entropy(head(features), y)
            loss.backward()
            opt.step()
            return loss

        data = [(sg.randint(0, 10, (4, 5)), sg.randint(0, 3, (4,))) for _ in range(3)]
        out = [as_numpy(step(*data[max(i - 2, 0) % 3])) for i in range(STEPS + 2)]
        return out, snapshot([emb, head], [opt])

    check_program(program, replays=STEPS - 1)


@pytest.mark.parametrize("loss", ["cross_entropy", "weighted_nll_loss"])
def test_an_update_per_sample_with_unbatched_logits_and_a_0d_target(loss):
    """One sample per step, as a REINFORCE agent updates after each action: (C,) logits
    and a 0-d target. The target's index and weight (0-d, NumPy's scalars) were recorded as
    constants: the recording's action replayed for every sample, silently."""

    def program(wrap):
        policy = nn.Linear(4, 3)
        opt = sg.optim.SGD(policy.parameters(), lr=0.1)
        weight = sg.tensor([1.0, 2.0, 0.5])

        @wrap
        def step(state, action):
            opt.zero_grad()
            logits = policy(state)
            if loss == "cross_entropy":
                value = F.cross_entropy(logits, action, label_smoothing=0.1)
            else:
                value = F.nll_loss(logits.log_softmax(-1), action, weight=weight)
            value.backward()
            opt.step()
            return value

        samples = [(sg.randn(4), sg.tensor(a)) for a in (0, 0, 0, 1, 2, 1)]
        out = [as_numpy(step(*sample)) for sample in samples]
        return out, snapshot([policy], [opt])

    check_program(program)


class PaddedRecurrentClassifier(nn.Module):
    """Padded token batches through an LSTM or GRU, mean-pooled over the padding mask."""

    def __init__(self, cell: str) -> None:
        super().__init__()
        self.embed = nn.Embedding(12, 6, padding_idx=0)
        self.rnn = getattr(nn, cell)(6, 8, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, tokens, mask):
        out, _ = self.rnn(self.embed(tokens))
        kept = mask.unsqueeze(-1).float()
        return self.head((out * kept).sum(1) / kept.sum(1))


def padded_batches(n: int, lengths_of_batches=(5, 7)) -> list:
    """(tokens, mask, labels) of 4 sequences each, padded to a length cycling through
    ``lengths_of_batches``; each sequence its own random length."""
    data = []
    for i in range(n):
        length = lengths_of_batches[i % len(lengths_of_batches)]
        lengths = sg.randint(1, length + 1, (4,))
        mask = sg.arange(length)[None, :] < lengths[:, None]
        tokens = sg.randint(1, 12, (4, length)).masked_fill(~mask, 0)
        data.append((tokens, mask, sg.randint(0, 3, (4,))))
    return data


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_a_recurrent_classifier_over_padded_batches_of_two_lengths(cell):
    """A padding mask multiplied in before mean pooling, batches padded to two lengths: a
    program recorded for each, each replayed on its own batches."""

    def program(wrap):
        model = PaddedRecurrentClassifier(cell)
        opt = sg.optim.Adam(model.parameters(), lr=1e-2)

        @wrap
        def step(tokens, mask, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(tokens, mask), y)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            return loss

        data = padded_batches(4)
        out = [as_numpy(step(*data[i % 4])) for i in range(2 * STEPS)]
        return out, snapshot([model], [opt])

    (step,) = check_program(program, replays=2 * (STEPS - 3))
    assert sum(len(r) for r in step.recordings.values()) == 2


def test_a_causal_transformer_encoder_layer_with_a_padding_mask_and_a_warmup_set_by_hand():
    """A language model on ``nn.TransformerEncoderLayer`` (batch_first, norm_first, dropout)
    with ``generate_square_subsequent_mask`` and ``src_key_padding_mask``, the padding's
    targets ignored and the labels smoothed; the learning rate set by hand between jitted
    steps (the update reads it at each replay), then evaluation under ``no_grad``."""

    def program(wrap):
        embed, pos = nn.Embedding(12, 8), nn.Parameter(sg.randn(1, 8, 8) * 0.02)
        layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=True)
        head = nn.Linear(8, 12)
        model = nn.ModuleList([embed, layer, head])
        opt = sg.optim.AdamW([*model.parameters(), pos], lr=1e-2, amsgrad=True)

        def logits_of(tokens, padding):
            causal = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1])
            h = embed(tokens) + pos[:, : tokens.shape[1]]
            return head(layer(h, src_mask=causal, src_key_padding_mask=padding, is_causal=True))

        @wrap
        def step(tokens, padding, targets):
            model.train()
            logits = logits_of(tokens, padding)
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), label_smoothing=0.1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss

        data = []
        for tokens, mask, _ in padded_batches(2, (7,)):
            targets = tokens[:, 1:].masked_fill(~mask[:, 1:], -100)
            data.append((tokens[:, :-1], ~mask[:, :-1], targets))
        out = []
        for i in range(STEPS):
            opt.param_groups[0]["lr"] = 1e-2 * min(1.0, (i + 1) / 4)
            out.append(as_numpy(step(*data[i % 2])))
        model.eval()
        with sg.no_grad():
            out.append(as_numpy(logits_of(*data[0][:2])))
        return out, snapshot([model], [opt])

    check_program(program)


PADDED_BATCHES = {  # which batches hold targets padded with -100
    "from the fourth batch on": lambda i: i >= 3,
    "in the recorded batches only": lambda i: i < 3,
    "every other batch": lambda i: i % 2 == 1,
    "all of one batch": lambda i: None if i == 4 else False,
}


@pytest.mark.parametrize("padded", PADDED_BATCHES.values(), ids=PADDED_BATCHES)
def test_targets_padded_with_the_ignore_index_in_some_batches_only(padded):
    """Targets padded with cross_entropy's default ignore_index (-100) in some batches only:
    the fused loss was taken by whether a batch had one, so a step recorded on batches without
    any raised IndexError at the first with one (eager went on), one recorded on batches with
    them replayed other bits than eager's on batches without, and recordings of each raised
    a JitError. Now every batch takes the fused node, which finds its ignored targets; a batch
    of ignored targets only gives NaN, as PyTorch's, and no gradient."""

    def program(wrap):
        model = classifier(classes=5)
        opt = sg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        @wrap
        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        out = []
        for i, (x, y) in enumerate(batches(STEPS + 3, size=5, classes=5)):
            pad = padded(i)
            if pad is not False:
                y = sg.where(sg.arange(5) >= (0 if pad is None else 3), -100, y)
            out.append(as_numpy(step(x, y)))
        return out, snapshot([model], [opt])

    check_program(program)


def test_a_compiled_attention_returning_its_weights_keeps_eager_layouts():
    """``compile(nn.MultiheadAttention(..., batch_first=True))`` returns the attention's output
    and its weights (``need_weights``, the default), two differentiable outputs of one node:
    they were packed into one array and came back C-ordered, where eager's output is a
    transposed view, so the loss's mean added them in another order (1 ulp off, silently)."""

    def program(compile_):
        attention = nn.MultiheadAttention(8, 2, batch_first=True)
        net = compile_(attention)
        opt = sg.optim.Adam(attention.parameters(), lr=1e-2)
        out = []
        for _ in range(STEPS + 2):
            x = sg.randn(3, 5, 8)
            opt.zero_grad()
            y, weights = net(x, x, x)
            loss = y.pow(2).mean()
            loss.backward()
            opt.step()
            out.append(as_numpy((loss, y, weights)) + [y.detach().numpy().strides])
        return out, snapshot([attention], [opt]), y.grad_fn.name()

    sg.manual_seed(0)
    *eager, _ = program(lambda module: module)
    sg.manual_seed(0)
    *compiled, node = program(sg.compile)
    assert_same(compiled, eager)
    assert node == "_UnpackBackward0"  # an output of CompiledFunctionBackward: replayed


def test_charlm_gpt_trained_jitted():
    """scratchgrad's own GPT (tied embedding, dropout, causal attention), a few steps."""
    from scratchgrad import charlm

    def program(wrap):
        config = {"block_size": 6, "n_layer": 1, "n_head": 2, "n_embd": 8, "dropout": 0.1}
        model = charlm.build_model("gpt", vocab_size=13, config=config)
        opt = sg.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)

        @wrap
        def step(idx, targets):
            logits = model(idx)
            loss = F.cross_entropy(logits.view(-1, 13), targets.view(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            return loss

        data = [(sg.randint(0, 13, (2, 6)), sg.randint(0, 13, (2, 6))) for _ in range(2)]
        out = [as_numpy(step(*data[i % 2])) for i in range(STEPS)]
        return out, snapshot([model], [opt])

    check_program(program)


def test_packing_by_lengths_computed_in_the_step_raises_naming_the_line():
    """Lengths the step computes (from a padding mask) are read into Python by packing, which
    a replay would freeze: refused while recording, naming the line. Lengths passed as an
    argument are guarded instead (``test_jit_packed_sequences.py``)."""
    rnn, head = nn.GRU(4, 6, batch_first=True), nn.Linear(6, 2)
    pack = nn.utils.rnn.pack_padded_sequence

    @sg.jit
    def step(x, mask):
        packed = pack(x, mask.sum(1), batch_first=True, enforce_sorted=False)  # READ
        _, h = rnn(packed)
        loss = F.mse_loss(head(h[-1]), sg.zeros(3, 2))
        loss.backward()
        return loss

    def call():
        mask = sg.arange(5) < sg.tensor([[5], [2], [4]])
        return step(sg.randn(3, 5, 4), mask)

    call()  # eager
    with pytest.raises(sg.JitError, match=r"\.tolist\(\) at .*test_jit_programs\.py:(\d+)") as info:
        call()
    line = int(re.search(r"test_jit_programs\.py:(\d+)", str(info.value))[1])
    assert "# READ" in Path(__file__).read_text().splitlines()[line - 1]


class CharRNN(nn.Module):
    """An embedding, a two-layer recurrent network (``cell``: LSTM, GRU or RNN) and a head;
    each run of ``forward``'s Python is noted in ``runs``."""

    def __init__(self, cell: str, runs: list, vocab: int = 11, hidden: int = 8) -> None:
        super().__init__()
        self.runs = runs
        self.embed = nn.Embedding(vocab, 6)
        self.rnn = getattr(nn, cell)(6, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, idx, state=None):
        self.runs.append(idx.shape)
        out, state = self.rnn(self.embed(idx), state)
        return self.head(out), state


@pytest.mark.parametrize("how", ["jit", "compile"])
@pytest.mark.parametrize("cell", ["LSTM", "GRU", "RNN"])
def test_truncated_backpropagation_through_time_carries_the_state_between_calls(cell, how):
    """The char-RNN tutorials' loop: each step starts from the state the last one returned,
    detached (none at the first, a program of its own). Jitted: the state returned by a
    replay goes into the next call; compiled: the model's forward is captured, the loss, its
    backward, clipping and Adam run eagerly."""

    runs = []

    def program(wrap):
        runs.clear()
        model = CharRNN(cell, runs)
        net = wrap(model) if how == "compile" else model
        opt = sg.optim.Adam(model.parameters(), lr=1e-2)

        def step(idx, targets, state):
            opt.zero_grad()
            logits, state = net(idx, state)
            loss = F.cross_entropy(logits.reshape(-1, 11), targets.reshape(-1))
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            detached = tuple(s.detach() for s in state) if cell == "LSTM" else state.detach()
            return loss, detached

        step = wrap(step) if how == "jit" else step
        data = [(sg.randint(0, 11, (2, 5)), sg.randint(0, 11, (2, 5))) for _ in range(2)]
        state, out = None, []
        for i in range(STEPS + 2):
            loss, state = step(*data[i % 2], state)
            out.append(as_numpy((loss, state)))
        return out, snapshot([model], [opt])

    if how == "jit":
        check_program(program)
        return
    sg.manual_seed(0)
    eager = program(lambda module: module)
    sg.manual_seed(0)
    assert_same(program(sg.compile), eager)
    assert len(runs) <= STEPS + 2 - 3  # the forward replayed at least three times


class Seq2Seq(nn.Module):
    """The PyTorch seq2seq tutorial's shape: a GRU encoder, a GRUCell decoder fed its own
    prediction or the target (teacher forcing), one step at a time."""

    def __init__(self, vocab: int = 10) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 6)
        self.encoder = nn.GRU(6, 8, batch_first=True)
        self.decoder = nn.GRUCell(6, 8)
        self.out = nn.Linear(8, vocab)

    def loss(self, source, target, teacher_forcing: bool):
        _, hidden = self.encoder(self.embed(source))
        hidden, token, loss = hidden[0], target[:, 0], 0
        for t in range(1, target.shape[1]):
            hidden = self.decoder(self.embed(token), hidden)
            logits = self.out(hidden)
            loss = loss + F.cross_entropy(logits, target[:, t])
            token = target[:, t] if teacher_forcing else logits.argmax(1).detach()
        return loss


def seq2seq_data(n: int) -> list:
    return [(sg.randint(0, 10, (3, 4)), sg.randint(0, 10, (3, 4))) for _ in range(n)]


def test_teacher_forcing_drawn_inside_the_step_raises_before_it_records():
    """``random.random() < ratio`` inside the step: a replay would reuse the recording's draw
    (teacher forcing on, or off, for good). The first recording refuses it, before the step
    runs, and the error says what to do."""
    import random

    model = Seq2Seq()
    opt = sg.optim.SGD(model.parameters(), lr=0.1)

    @sg.jit
    def step(source, target):
        opt.zero_grad()
        loss = model.loss(source, target, teacher_forcing=random.random() < 0.5)
        loss.backward()
        opt.step()
        return loss

    data = seq2seq_data(2)
    step(*data[0])
    before = as_numpy(model.state_dict())
    with pytest.raises(sg.JitError, match=r"outside scratchgrad \(random\).*as arguments"):
        step(*data[1])
    assert_same(as_numpy(model.state_dict()), before)


def test_teacher_forcing_passed_as_an_argument_replays_a_program_for_each_value():
    def program(wrap):
        model = Seq2Seq()
        opt = sg.optim.SGD(model.parameters(), lr=0.1)

        @wrap
        def step(source, target, teacher_forcing):
            opt.zero_grad()
            loss = model.loss(source, target, teacher_forcing)
            loss.backward()
            opt.step()
            return loss

        data = seq2seq_data(2)
        forcing = [True, True, True, False, False, False] + [True, False] * 3
        out = [as_numpy(step(*data[i % 2], f)) for i, f in enumerate(forcing)]
        return out, snapshot([model], [opt])

    check_program(program, replays=6)


def test_a_hand_written_update_of_a_polynomial_fit():
    """PyTorch's "learning by examples" fit of sin by a cubic, the update written by hand
    under ``no_grad()``, with ``p.grad.zero_()`` where the example writes ``p.grad = None``
    (which a jitted step replays: test_assigning_none_to_grad_inside_the_step_is_replayed)."""

    def program(wrap):
        x = sg.linspace(-3.0, 3.0, 50)
        coefficients = [sg.randn((), requires_grad=True) for _ in range(4)]

        @wrap
        def step(x, y):
            a, b, c, d = coefficients
            loss = (a + b * x + c * x**2 + d * x**3 - y).pow(2).sum()
            loss.backward()
            with sg.no_grad():
                for p in coefficients:
                    p -= 1e-4 * p.grad
                    p.grad.zero_()
            return loss

        out = [as_numpy(step(x, sg.sin(x))) for _ in range(STEPS)]
        return out, [as_numpy(p) for p in coefficients]

    check_program(program)


class ScaledTanh(sg.autograd.Function):
    """tanh(x) * scale with its own backward (a custom Function, written as in PyTorch)."""

    @staticmethod
    def forward(ctx, x, scale):
        out = sg.tanh(x) * scale
        ctx.save_for_backward(out)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * (ctx.scale - out * out / ctx.scale), None


def test_a_custom_autograd_function_in_the_model():
    def program(wrap):
        first, second = nn.Linear(6, 8), nn.Linear(8, 3)
        opt = sg.optim.SGD([*first.parameters(), *second.parameters()], lr=0.1)

        @wrap
        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(second(ScaledTanh.apply(first(x), 2.0)), y)
            loss.backward()
            opt.step()
            return loss

        data = batches(2)
        out = [as_numpy(step(*data[i % 2])) for i in range(STEPS)]
        return out, snapshot([first, second], [opt])

    check_program(program)


def test_logits_returned_by_each_step_are_kept_across_calls():
    """Returned tensors kept in a list stay what each call returned (the next replay
    writes into its buffers, not into them)."""

    def program(wrap):
        model = classifier()
        opt = sg.optim.SGD(model.parameters(), lr=0.5)

        @wrap
        def step(x, y):
            opt.zero_grad()
            logits = model(x)
            F.cross_entropy(logits, y).backward()
            opt.step()
            return logits, model[0].weight.grad

        x, y = batches(1)[0]
        kept = [step(x, y) for _ in range(STEPS)]
        return as_numpy(kept), snapshot([model], [opt])

    check_program(program)


def test_two_models_and_two_optimizers_in_one_step_like_a_gan():
    """A generator and a discriminator updated in turn in one jitted step: the
    discriminator on real and detached fake samples, then the generator through the
    discriminator (whose gradients it leaves behind are zeroed by its next turn)."""

    def program(wrap):
        generator = nn.Sequential(nn.Linear(3, 8), nn.LeakyReLU(0.2), nn.Linear(8, 4))
        discriminator = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
        opt_g = sg.optim.Adam(generator.parameters(), lr=2e-3, betas=(0.5, 0.999))
        opt_d = sg.optim.Adam(discriminator.parameters(), lr=2e-3, betas=(0.5, 0.999))
        bce = nn.BCEWithLogitsLoss()

        @wrap
        def step(real):
            noise = sg.randn(real.shape[0], 3)
            fake = generator(noise)
            ones, zeros = sg.ones(real.shape[0], 1), sg.zeros(real.shape[0], 1)
            opt_d.zero_grad()
            loss_d = bce(discriminator(real), ones) + bce(discriminator(fake.detach()), zeros)
            loss_d.backward()
            opt_d.step()
            opt_g.zero_grad()
            loss_g = bce(discriminator(fake), ones)
            loss_g.backward()
            opt_g.step()
            return {"d": loss_d, "g": loss_g, "fake": fake}

        real = sg.randn(8, 4) * 0.5 + 1.0
        out = [as_numpy(step(real)) for _ in range(STEPS)]
        return out, snapshot([generator, discriminator], [opt_g, opt_d])

    check_program(program)


def test_train_and_eval_called_inside_the_steps_replay_without_recording_again():
    """The PyTorch idiom: ``model.train()`` at the top of the training step,
    ``model.eval()`` at the top of the evaluation function. The steps set the modes they
    run in, so each replays one program whatever mode the model was left in, and after each
    call the model is in the mode the eager call leaves it in."""

    def program(wrap):
        model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Dropout(0.5), nn.Linear(8, 3))
        opt = sg.optim.SGD(model.parameters(), lr=0.1)

        @wrap
        def train_step(x, y):
            model.train()
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        @wrap
        def evaluate(x):
            model.eval()
            with sg.no_grad():
                return model(x)

        data = batches(2)
        out = []
        for i in range(STEPS):
            out.append([as_numpy(train_step(*data[i % 2])), model.training])
            out.append([as_numpy(evaluate(data[0][0])), model.training])
        return out, snapshot([model], [opt])

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "recorded 8 programs (cache_size)" warning
        warnings.filterwarnings("ignore", "scratchgrad.jit.*while it was recorded")  # counting
        steps = check_program(program, replays=2 * (STEPS - 3))
    assert [len(r) for step in steps for r in step.recordings.values()] == [1, 1]


def test_a_python_value_returned_from_the_step_that_changes_raises():
    """A learning rate returned from the step would be the recorded one on every replay: the
    two recording calls returned different values, so the third call raises, naming them.
    (Read by ``sched.get_last_lr()``, the rate is guarded, and a step changing it raises
    at its first recording.) A Python value that stays the same (a batch size, from a
    guarded shape) is fine."""
    model = nn.Linear(3, 2)
    opt = sg.optim.SGD(model.parameters(), lr=0.1)
    sched = sg.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

    def train(x):
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
        sched.step()
        return loss, x.shape[0], sched.state_dict()["_last_lr"][0]

    def guarded(x):
        train(x)
        return sched.get_last_lr()[0]

    x = sg.randn(4, 3)
    step = sg.jit(train)
    step(x), step(x)
    with pytest.raises(sg.JitError, match=r"train\(\) returned a different Python value .*0\.025"):
        step(x)
    guarded = sg.jit(guarded)
    guarded(x)
    with pytest.raises(sg.JitError, match=r"binds sched\._last_lr to a new object while it reads"):
        guarded(x)

    @sg.jit
    def count(x):
        return x.sum(), x.shape[0]

    assert [count(sg.ones(4, 3))[1] for _ in range(STEPS)] == [4] * STEPS


def test_namedtuples_in_and_out_of_the_step():
    """A namedtuple of tensors passed in (a batch) and returned (the step's outputs): its
    tensors are the step's inputs and outputs, rebuilt as the namedtuple at each replay."""
    Batch = namedtuple("Batch", "x y")
    Output = namedtuple("Output", "loss logits")

    def program(wrap):
        model = classifier()
        opt = sg.optim.SGD(model.parameters(), lr=0.1)

        @wrap
        def step(batch):
            opt.zero_grad()
            logits = model(batch.x)
            loss = F.cross_entropy(logits, batch.y)
            loss.backward()
            opt.step()
            return Output(loss, logits)

        data = [Batch(*b) for b in batches(3)]
        out = []
        for i in range(STEPS):
            result = step(data[i % 3])
            assert type(result) is Output
            out.append(as_numpy(list(result)))
        return out, snapshot([model], [opt])

    check_program(program)


def test_tensors_made_in_the_step_and_changed_in_place_start_anew_at_each_call():
    """``total = sg.zeros(()); total += ...`` (and ``sg.tensor(0.0)``, ``zeros_like``,
    ``new_zeros``, ``full``, ``arange``): each replay makes the tensor again, as each eager
    call does (the recorded array, changed in place, grew from one replay to the next)."""

    def program(wrap):
        model = classifier()
        opt = sg.optim.SGD(model.parameters(), lr=0.1)

        @wrap
        def step(x, y):
            opt.zero_grad()
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            seen, correct, counts = sg.zeros(()), sg.tensor(0.0), y.new_zeros(3)
            histogram, ramp = sg.zeros_like(logits[0]), sg.arange(3.0)
            with sg.no_grad():
                seen += y.shape[0]
                correct += (logits.argmax(1) == y).sum()
                counts += F.one_hot(y, 3).sum(0)
                histogram.add_(logits.mean(0)).mul_(sg.full((3,), 2.0))
                ramp += 1
            return correct / seen, counts, histogram, ramp

        data = batches(2)
        out = [as_numpy(step(*data[i % 2])) for i in range(STEPS)]
        return out, snapshot([model], [opt])

    check_program(program)


def test_adversarial_training_with_leaves_made_in_the_step():
    """FGSM (``x.clone().requires_grad_()``) and PGD (``sg.zeros_like(x,
    requires_grad=True)``, updated twice): the gradient of a leaf made in the step goes into
    that call's leaf, as eagerly (each replay makes a new one)."""

    def program(wrap):
        model = classifier()
        opt = sg.optim.SGD(model.parameters(), lr=0.1)

        @wrap
        def fgsm_step(x, y):
            x = x.clone().requires_grad_(True)
            F.cross_entropy(model(x), y).backward()
            x_adv = (x + 0.1 * x.grad.sign()).detach()
            opt.zero_grad()
            loss = F.cross_entropy(model(x_adv), y)
            loss.backward()
            opt.step()
            return loss, x_adv

        @wrap
        def pgd_step(x, y):
            delta = sg.zeros_like(x, requires_grad=True)
            for _ in range(2):
                F.cross_entropy(model(x + delta), y).backward()
                delta = (delta + 0.05 * delta.grad.sign()).clamp(-0.1, 0.1)
                delta = delta.detach().requires_grad_(True)
            opt.zero_grad()
            loss = F.cross_entropy(model(x + delta.detach()), y)
            loss.backward()
            opt.step()
            return loss

        data = batches(2)
        out = [as_numpy([fgsm_step(*data[i % 2]), pgd_step(*data[i % 2])]) for i in range(STEPS)]
        return out, snapshot([model], [opt])

    check_program(program, replays=2 * (STEPS - 3))


def test_a_warmup_set_by_hand_inside_the_step_raises_and_lambdalr_replays():
    """nanoGPT's loop sets ``group["lr"]`` by hand before each step: inside a jitted step
    that assignment is Python, which replays would skip (the learning rate stayed the
    recorded one, silently). The second recording sees a setting change outside any
    recorded call and raises, naming the next call's line; the same warmup as a
    ``LambdaLR`` stepped inside the step replays and equals eager."""
    model = classifier()
    opt = sg.optim.AdamW(model.parameters(), lr=1e-2)
    calls = []

    @sg.jit
    def by_hand(x, y):
        calls.append(1)
        for group in opt.param_groups:
            group["lr"] = 1e-2 * min(1.0, len(calls) / 4)
        opt.zero_grad()  # the line named
        F.cross_entropy(model(x), y).backward()
        opt.step()

    x, y = batches(1)[0]
    by_hand(x, y), by_hand(x, y)
    with pytest.raises(sg.JitError, match=r"param group's 'lr' set in Python") as error:
        by_hand(x, y)
    number = int(re.search(r"test_jit_programs\.py:(\d+)", str(error.value))[1])
    assert "# the line named" in Path(__file__).read_text().splitlines()[number - 1]

    def program(wrap):
        model = classifier()
        opt = sg.optim.AdamW(model.parameters(), lr=1e-2)
        warmup = sg.optim.lr_scheduler.LambdaLR(opt, lambda it: min(1.0, (it + 1) / 4))

        @wrap
        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            warmup.step()
            return loss

        data = batches(2)
        out = [as_numpy(step(*data[i % 2])) for i in range(STEPS)]
        return out, snapshot([model], [opt])

    check_program(program)


class WithLoss(nn.Module):
    """A model computing its loss inside ``forward`` when given labels, returning it beside
    the logits (as Hugging Face models do): a dict, or a tuple."""

    def __init__(self, as_dict: bool) -> None:
        super().__init__()
        self.body, self.as_dict = classifier(), as_dict

    def forward(self, x, labels=None):
        logits = self.body(x)
        if labels is None:
            return {"logits": logits} if self.as_dict else logits
        loss = F.cross_entropy(logits, labels)
        return {"logits": logits, "loss": loss} if self.as_dict else (logits, loss)


@pytest.mark.parametrize("as_dict", [True, False])
def test_a_compiled_model_returning_its_loss_beside_the_logits(as_dict):
    """``compile(model)`` of a model that returns the loss with the logits, the loss
    backpropagated: the gradient reaches the weights (from the second call on it was
    zero, the engine skipping the path from the loss through the logits)."""

    def program(compile_):
        model = compile_(WithLoss(as_dict))
        opt = sg.optim.AdamW(model.parameters(), lr=1e-2)
        data, out = batches(2), []
        for i in range(STEPS):
            opt.zero_grad()
            result = model(*data[i % 2])
            loss = result["loss"] if as_dict else result[1]
            loss.backward()
            opt.step()
            out.append(as_numpy(result))
        with sg.no_grad():
            out.append(as_numpy(model(data[0][0])))
        plain = getattr(model, "_orig_mod", model)
        return out, snapshot([plain], [opt]), loss.grad_fn.name()

    sg.manual_seed(0)
    eager = program(lambda model: model)
    sg.manual_seed(0)
    compiled = program(sg.compile)
    assert_same(compiled[:2], eager[:2])
    assert compiled[2] == "_UnpackBackward0"  # an output of CompiledFunctionBackward: replayed


@pytest.mark.parametrize("where", ["inside the step", "before each call"])
def test_reseeding_inside_the_step_or_before_each_call_replays(where):
    """``sg.manual_seed(k)`` inside the step (the same dropout masks at every call) is made
    again by each replay (replays drew on instead: silently other masks than eager's), as a
    seeding before each call is followed by the draws of the replay after it."""

    def program(wrap):
        model = nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.5), nn.Linear(8, 3))
        opt = sg.optim.SGD(model.parameters(), lr=0.1)

        @wrap
        def step(x, y):
            if where == "inside the step":
                sg.manual_seed(7)
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        data, out = batches(2), []
        for i in range(STEPS):
            if where == "before each call":
                sg.manual_seed(i % 2)
            out.append(as_numpy(step(*data[i % 2])))
        return out, snapshot([model], [opt])

    check_program(program)


def test_resuming_from_a_checkpoint_between_jitted_steps():
    """A CNN with BatchNorm, Adam and StepLR trained jitted, checkpointed (model, optimizer
    and scheduler state dicts), trained on, then loaded back and trained again: the loaded
    values are the ones the next replays read."""

    def program(wrap):
        model = nn.Sequential(
            nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(64, 3)
        )
        opt = sg.optim.Adam(model.parameters(), lr=1e-2)
        sched = sg.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

        @wrap
        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        data = [(sg.randn(4, 1, 6, 6), sg.randint(0, 3, (4,))) for _ in range(2)]
        out = []

        def train(steps):
            for i in range(steps):
                out.append(as_numpy(step(*data[i % 2])))
                sched.step()

        train(5)
        saved = [copy.deepcopy(m.state_dict()) for m in (model, opt, sched)]
        train(3)
        for m, state in zip((model, opt, sched), saved):
            m.load_state_dict(state)
        train(5)
        return out, snapshot([model], [opt])

    check_program(program, replays=5)


def test_a_gan_of_two_compiled_modules():
    """``compile`` on a generator and a discriminator: the discriminator's loss on detached
    fakes, then the generator's through the compiled discriminator into the compiled
    generator (two recorded backwards chained by the engine)."""

    def program(compile_):
        generator = compile_(nn.Sequential(nn.Linear(3, 8), nn.LeakyReLU(0.2), nn.Linear(8, 4)))
        critic = compile_(nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1)))
        opt_g = sg.optim.Adam(generator.parameters(), lr=2e-3, betas=(0.5, 0.999))
        opt_d = sg.optim.Adam(critic.parameters(), lr=2e-3, betas=(0.5, 0.999))
        bce, real, out = nn.BCEWithLogitsLoss(), sg.randn(8, 4), []
        ones, zeros = sg.ones(8, 1), sg.zeros(8, 1)
        for _ in range(STEPS):
            fake = generator(sg.randn(8, 3))
            opt_d.zero_grad()
            loss_d = bce(critic(real), ones) + bce(critic(fake.detach()), zeros)
            loss_d.backward()
            opt_d.step()
            opt_g.zero_grad()
            judged = critic(fake)
            loss_g = bce(judged, ones)
            loss_g.backward()
            opt_g.step()
            out.append(as_numpy([loss_d, loss_g, fake]))
        plain = [getattr(m, "_orig_mod", m) for m in (generator, critic)]
        return out, snapshot(plain, [opt_g, opt_d]), judged.grad_fn.name()

    sg.manual_seed(0)
    eager = program(lambda model: model)
    sg.manual_seed(0)
    compiled = program(sg.compile)
    assert_same(compiled[:2], eager[:2])
    assert compiled[2] == "CompiledFunctionBackward"


class VAE(nn.Module):
    """A variational autoencoder: the reparameterisation draws ``randn_like`` in forward,
    which returns the reconstruction with the mean and log-variance it came from."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder, self.mu, self.logvar = nn.Linear(8, 16), nn.Linear(16, 2), nn.Linear(16, 2)
        self.decoder = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 8))

    def forward(self, x):
        hidden = F.relu(self.encoder(x))
        mu, logvar = self.mu(hidden), self.logvar(hidden)
        std = sg.exp(0.5 * logvar)
        return self.decoder(mu + sg.randn_like(std) * std), mu, logvar


def train_vae(wrap: Callable, compile_: Callable) -> tuple:
    """Six Adam steps of the VAE, its step wrapped by ``wrap``, the model by ``compile_``."""
    model = VAE()
    opt = sg.optim.Adam(model.parameters(), lr=1e-3)
    forward = compile_(model)

    @wrap
    def step(x):
        opt.zero_grad()
        recon, mu, logvar = forward(x)
        bce = F.binary_cross_entropy_with_logits(recon, x, reduction="sum")
        kld = -0.5 * sg.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = (bce + kld) / x.shape[0]
        loss.backward()
        opt.step()
        return loss, kld.detach()

    data = [sg.rand(4, 8) for _ in range(2)]
    out = [as_numpy(step(data[i % 2])) for i in range(STEPS)]
    return out, snapshot([model], [opt]), forward(data[0])[0].grad_fn.name()


def test_a_vae_jitted():
    check_program(lambda wrap: train_vae(wrap, lambda model: model))


def test_a_vae_compiled():
    """The loss reads all three outputs of the compiled VAE, two of them ancestors of the
    third: its gradients were wrong before the engine's fix (a loss of 23.164 against eager's
    23.166 after six steps)."""
    sg.manual_seed(0)
    eager = train_vae(lambda fn: fn, lambda model: model)
    sg.manual_seed(0)
    compiled = train_vae(lambda fn: fn, sg.compile)
    assert_same(compiled[:2], eager[:2])
    assert compiled[2] == "_UnpackBackward0"  # an output of CompiledFunctionBackward


class WithDetached(nn.Module):
    """Returns its output and the same output detached (for logging), one array for both."""

    def __init__(self) -> None:
        super().__init__()
        self.body = classifier()

    def forward(self, x):
        logits = self.body(x)
        return logits, logits.detach()


def test_a_compiled_model_returning_an_output_and_its_detached_twin():
    """The detached twin shares the output's array: marking it non-differentiable marked the
    output too, so from the second call the loss had no gradient (backward raised)."""

    def program(compile_):
        model = compile_(WithDetached())
        opt = sg.optim.SGD(model.parameters(), lr=0.1)
        data, out = batches(2), []
        for i in range(STEPS):
            opt.zero_grad()
            logits, logged = model(data[i % 2][0])
            loss = F.cross_entropy(logits, data[i % 2][1])
            loss.backward()
            opt.step()
            out.append(as_numpy([loss, logged, logged.requires_grad]))
        plain = getattr(model, "_orig_mod", model)
        return out, snapshot([plain], [opt]), logits.grad_fn.name()

    sg.manual_seed(0)
    eager = program(lambda model: model)
    sg.manual_seed(0)
    compiled = program(sg.compile)
    assert_same(compiled[:2], eager[:2])
    assert compiled[2] == "_UnpackBackward0"  # an output of CompiledFunctionBackward


class Counting(nn.Module):
    """Returns its output and how many times it was called, a Python count."""

    def __init__(self) -> None:
        super().__init__()
        self.body, self.calls = classifier(), 0

    def forward(self, x):
        self.calls += 1
        return self.body(x), self.calls


def test_a_compiled_model_returning_a_changing_python_value_raises():
    """A replay of a compiled module returned the recorded count (3) forever: its two
    recordings returned different values, so the second's backward raises, as ``jit``
    does for a step."""
    model = sg.compile(Counting(), fullgraph=True)
    x, y = batches(1)[0]
    for _ in range(2):
        F.cross_entropy(model(x)[0], y).backward()
    logits, count = model(x)
    with pytest.raises(sg.JitError, match=r"Counting\.forward\(\) returned a different Python "):
        F.cross_entropy(logits, y).backward()
    assert count == 3


class Policy(nn.Module):
    """A policy returning its action distribution, as REINFORCE's actor does."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        return sg.distributions.Categorical(logits=self.fc(x))


def test_a_compiled_model_returning_a_distribution_raises_naming_its_tensors():
    """A replay would return the recorded distribution with the recording's logits: the
    first recording (the second call) raises, naming the Categorical and the tensors it
    holds (before, the message showed two equal-looking reprs as "a different Python value";
    then it was raised at the second recording, after a recording call whose gradients
    through the logits had reached the weights beside its node, summed in another order
    than eagerly). Without ``fullgraph`` that call and the later ones run eagerly."""
    x, y = batches(1)[0]
    model = sg.compile(Policy(), fullgraph=True)
    (-model(x).log_prob(y).mean()).backward()  # eager
    with pytest.raises(
        sg.JitError,
        match=r"Policy\.forward\(\) returned tensors inside an object \(Categorical: logits",
    ):
        model(x)
    sg.manual_seed(0)
    eager = Policy()
    model = Policy()
    model.load_state_dict(eager.state_dict())
    compiled = sg.compile(model)
    with pytest.warns(UserWarning, match="breaks the graph"):
        for _ in range(4):
            (-compiled(x).log_prob(y).mean()).backward()
            (-eager(x).log_prob(y).mean()).backward()
    np.testing.assert_array_equal(model.fc.weight.grad.numpy(), eager.fc.weight.grad.numpy())


class _AgentConfig:
    """A DQN agent's settings, changed by the training loop between updates."""

    def __init__(self):
        self.gamma, self.tau, self.huber = 0.99, 0.01, True


class _DQNAgent:
    """A DQN agent as reinforcement learning code writes one: a jitted ``learn`` method, a
    property reading the config, a target network softly updated inside the step."""

    def __init__(self, config, jit):
        sg.manual_seed(0)
        self.config = config
        self.q = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
        self.target = copy.deepcopy(self.q)
        self.opt = sg.optim.Adam(self.q.parameters(), lr=1e-3)
        self.learn = sg.jit(self._learn) if jit else self._learn

    @property
    def discount(self):
        return self.config.gamma

    def _learn(self, s, a, r, s2, done):
        q = self.q(s).gather(1, a.unsqueeze(1)).squeeze(1)
        with sg.no_grad():
            y = r + self.discount * self.target(s2).max(dim=1).values * (1 - done)
        loss = F.smooth_l1_loss(q, y) if self.config.huber else F.mse_loss(q, y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        with sg.no_grad():
            for p, target in zip(self.q.parameters(), self.target.parameters()):
                target.mul_(1 - self.config.tau).add_(p, alpha=self.config.tau)
        return loss.detach()


def test_a_dqn_agent_whose_loop_changes_its_config_equals_eager():
    """The loop lowers the discount (read by a property), switches the loss and raises the
    soft update's rate between jitted updates: each change records anew, and the losses and
    both networks end as the eager agent's, bit for bit."""

    def train(jit):
        config = _AgentConfig()
        agent, rng = _DQNAgent(config, jit), np.random.default_rng(1)
        losses = []
        for t in range(24):
            s, s2 = (sg.tensor(rng.standard_normal((8, 4)), dtype=sg.float32) for _ in "ab")
            a = sg.tensor(rng.integers(0, 2, 8))
            r, done = (sg.tensor(rng.integers(0, 2, 8), dtype=sg.float32) for _ in "ab")
            config.gamma = 0.9 if t >= 8 else config.gamma
            config.huber = t < 14
            config.tau = 0.1 if t >= 18 else config.tau
            losses.append(agent.learn(s, a, r, s2, done).item())
        return losses, snapshot([agent.q, agent.target], [agent.opt]), agent

    (eager, eager_state, _), (jitted, jitted_state, agent) = train(False), train(True)
    assert jitted == eager
    np.testing.assert_equal(jitted_state, eager_state)
    assert sum(map(len, agent.learn.recordings.values())) == 4  # one per setting
