"""Recurrent networks over packed batches (``nn.utils.rnn.pack_padded_sequence``) in jitted
steps and compiled modules. Packing reads the lengths into Python, and the recurrent layers
read the packed batch sizes: read from a small integer tensor argument, those values become
part of the recording's guard (a call passing other values records anew), as
``torch.compile`` specializes on them; read from a tensor the step computed, they are still
refused."""

import numpy as np
import pytest
from test_jit_programs import STEPS, as_numpy, assert_same, check_program, snapshot

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.jit import guards
from scratchgrad.nn import functional as F

pack = nn.utils.rnn.pack_padded_sequence
pad = nn.utils.rnn.pad_packed_sequence

pytestmark = pytest.mark.filterwarnings("ignore:scratchgrad.jit.*while it was recorded")

# lengths of a batch of 3 padded to 5 steps, unsorted; the first two have the same total (the
# packed data's shape) and the same longest (the batch sizes' shape): only their values differ
PATTERNS = [[5, 3, 2], [2, 5, 3], [4, 5, 1]]
SAME_SHAPES = ([5, 3, 2], [5, 4, 1])


def batch(lengths: list[int]) -> tuple:
    """A padded batch ``(3, 5, 4)`` of sequences of ``lengths`` and its labels."""
    return sg.randn(3, 5, 4), sg.tensor(lengths), sg.randint(0, 2, (3,))


def final_state(rnn: nn.Module, packed) -> tuple:
    """The packed outputs padded back, and the last layer's final hidden state."""
    out, h = rnn(packed)
    if isinstance(h, tuple):  # LSTM's (h, c)
        h = h[0]
    padded, lengths = pad(out, batch_first=True)
    return padded, lengths, h[-1]


@pytest.mark.parametrize("lengths_as", ["tensor", "list", "packed argument"])
@pytest.mark.parametrize("cell", ["LSTM", "GRU", "RNN"])
def test_training_over_packed_batches_of_several_length_patterns_equals_eager(cell, lengths_as):
    """A classifier over packed batches, trained with Adam, the batches' lengths in three
    patterns taken in turn: packed in the step (the lengths a tensor or a list argument) or
    passed packed; each pattern recorded twice, then replayed."""

    def program(wrap):
        rnn = getattr(nn, cell)(4, 6, num_layers=2, batch_first=True)
        head = nn.Linear(6, 2)
        params = [*rnn.parameters(), *head.parameters()]
        opt = sg.optim.Adam(params, lr=1e-2)

        @wrap
        def step(x, lengths, packed, y):
            if packed is None:
                packed = pack(x, lengths, batch_first=True, enforce_sorted=False)
            opt.zero_grad()
            padded, got, h = final_state(rnn, packed)
            loss = F.cross_entropy(head(h), y) + padded.pow(2).mean()
            loss.backward()
            opt.step()
            return loss, got

        out = []
        for i in range(6 * STEPS):
            x, lengths, y = batch(PATTERNS[i % len(PATTERNS)])
            if lengths_as == "packed argument":
                out.append(step(None, None, pack(x, lengths, True, False), y))
            else:
                given = lengths if lengths_as == "tensor" else lengths.tolist()
                out.append(step(x, given, None, y))
        return as_numpy(out), snapshot([rnn, head], [opt])

    (step,) = check_program(program, replays=len(PATTERNS) * (2 * STEPS - 3))
    # passed packed, the first two patterns have the same batch sizes (their orders differ,
    # which the program takes as arguments): one program for both
    programs = 2 if lengths_as == "packed argument" else len(PATTERNS)
    assert sum(len(r) for r in step.recordings.values()) == programs


def same_shapes_step(where: str):
    """A forward over a packed batch, jitted, recorded and replayed for lengths
    ``SAME_SHAPES[0]`` (its fast path made), and the eager function and a call of either."""
    sg.manual_seed(0)
    rnn = nn.GRU(4, 6, batch_first=True)

    def forward(x, lengths, packed):
        if packed is None:
            packed = pack(x, lengths, batch_first=True, enforce_sorted=False)
        padded, got, h = final_state(rnn, packed)
        return padded, got, h

    def call(fn, lengths):
        x, lengths, _ = batch(lengths)
        if where == "inside":
            return fn(x, lengths, None)
        return fn(None, None, pack(x, lengths, True, False))

    step = sg.jit(forward)
    for _ in range(4):
        call(step, SAME_SHAPES[0])
    return step, forward, call


@pytest.mark.parametrize("where", ["inside", "packed argument"])
def test_other_lengths_of_the_same_shapes_record_anew(where):
    """Two length patterns whose packed batches have the same shapes: the second would
    replay the first's program (other rows, a silent wrong result) but for the guard on the
    values read."""
    step, forward, call = same_shapes_step(where)
    assert sum(len(r) for r in step.recordings.values()) == 1
    for lengths in [SAME_SHAPES[1], SAME_SHAPES[1], SAME_SHAPES[0], SAME_SHAPES[1]]:
        sg.manual_seed(1)
        jitted = as_numpy(call(step, lengths))
        sg.manual_seed(1)
        eager = as_numpy(call(forward, lengths))
        for a, b in zip(jitted, eager):
            np.testing.assert_array_equal(a, b)
        assert jitted[1].tolist() == lengths
    assert sum(len(r) for r in step.recordings.values()) == 2


@pytest.mark.parametrize("where", ["inside", "packed argument"])
def test_the_fast_path_misses_other_values_of_a_tensor_argument_it_read(where):
    """The lengths passed, or the batch sizes of the packed batch passed (a namedtuple,
    unpacked by the fast path as a tuple)."""
    step, _, _ = same_shapes_step(where)
    x, lengths, _ = batch(SAME_SHAPES[0])
    other = sg.tensor(SAME_SHAPES[1])
    if where == "packed argument":
        lengths, other = (pack(x, t, True, False) for t in (lengths, other))
        x, args, other_args = None, (None, None, lengths), (None, None, other)
    else:
        args, other_args = (x, lengths, None), (x, other, None)
    assert step.fast is not None and step.fast(args, {}) is not guards.MISS
    assert step.fast(other_args, {}) is guards.MISS


def test_an_in_place_change_after_the_read_replays_as_eager():
    """The step reads the lengths, then zeroes them in place: each call's guard compares the
    values passed, and each replay zeroes the tensor it is given."""

    def program(wrap):
        @wrap
        def step(x, lengths):
            packed = pack(x, lengths, batch_first=True, enforce_sorted=False)
            lengths.zero_()
            return packed.data * 2

        out = []
        for i in range(2 * STEPS):
            x, lengths, _ = batch(PATTERNS[i % 2])
            out.append((step(x, lengths), lengths))
        return as_numpy(out)

    check_program(program, replays=2 * (STEPS - 3))


def test_values_read_by_iterating_over_an_argument_or_slicing_by_it_are_guarded():
    """Each row of the argument (a view of it) read with ``int``, and a slice bound read
    with ``__index__``: guarded as the argument's values."""

    def step(x, lengths):
        return x * sum(int(length) for length in lengths) + x[: lengths[0]].sum()

    jitted = sg.jit(step)
    for lengths in [[1, 2]] * 4 + [[2, 2], [1, 2], [2, 2], [2, 2], [2, 1]]:
        x = sg.randn(3)
        expected = step(x, sg.tensor(lengths)).numpy()
        np.testing.assert_array_equal(jitted(x, sg.tensor(lengths)).numpy(), expected)
    assert sum(len(r) for r in jitted.recordings.values()) == 3


def in_place_before(x, lengths):
    lengths.clamp_(max=4)  # the program would replay this, then read what was read here
    return pack(x, lengths, batch_first=True, enforce_sorted=False).data


def computed_lengths(x, lengths):
    return pack(x, (x[:, :, 0] != 0).sum(1), batch_first=True, enforce_sorted=False).data


def float_item(x, lengths):
    return x * x[0, 0, 0].item()


def large_argument(x, lengths):
    return x * int(lengths.sum().item())


@pytest.mark.parametrize(
    "step, what",
    [
        (in_place_before, r"\.tolist\(\) of a tensor the step changed in place"),
        (computed_lengths, r"\.tolist\(\) at "),
        (float_item, r"\.item\(\) of tensor argument #0 \(float32\) at "),
        (large_argument, r"\.item\(\) at "),
    ],
)
def test_values_not_of_an_integer_argument_as_passed_are_still_refused(step, what):
    """Values of a tensor the step computed, of a float argument, or of an argument it
    changed in place before reading it: a JitError, naming what was read."""
    jitted = sg.jit(step)
    x, lengths, _ = batch(PATTERNS[0])
    if step is large_argument:
        lengths = sg.ones(4097, dtype=sg.int64)
    jitted(x.clone(), lengths.clone())  # eager
    with pytest.raises(sg.JitError, match=what):
        jitted(x.clone(), lengths.clone())


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_a_compiled_recurrent_module_over_packed_batches_equals_eager(cell):
    """``sg.compile(rnn)`` called on packed batches of three length patterns in turn, trained
    with SGD: the same outputs, gradients and weights as the module run eagerly, and one
    program per pattern of batch sizes, replayed."""

    def train(compiled: bool) -> list:
        sg.manual_seed(0)
        rnn = getattr(nn, cell)(4, 6, batch_first=True)
        opt = sg.optim.SGD(rnn.parameters(), lr=0.1)
        net = sg.compile(rnn) if compiled else rnn
        out = []
        for i in range(6 * STEPS):
            x, lengths, _ = batch(PATTERNS[i % len(PATTERNS)])
            padded, got, h = final_state(net, pack(x, lengths, True, False))
            opt.zero_grad()
            (padded.pow(2).sum() + h.sum()).backward()
            opt.step()
            out.append(as_numpy([padded, got, h, [p.grad for p in rnn.parameters()]]))
        if compiled:
            recordings = net._compiled.recordings.values()
            assert sum(len(r) for r in recordings) == 2  # (as the packed argument's above)
            assert all(r.checked for rs in recordings for r in rs)
        return [out, as_numpy(rnn.state_dict())]

    assert_same(train(True), train(False))
