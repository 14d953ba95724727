"""Packed batches of sequences (``nn.utils.rnn``) and the recurrent layers running them, against
PyTorch: the packing functions' results and gradients, and RNN, LSTM (with ``proj_size``) and
GRU over packed batches, sorted or not, batch first or not, one or two directions, with an
initial state: outputs, final states and every gradient."""

import itertools

import numpy as np
import pytest
import torch
import torch.nn.utils.rnn as TR
from oracle import assert_close, assert_doc_examples_run, assert_raises_as_torch

import scratchgrad as sg
from scratchgrad.nn.utils import rnn as R


def _leaves(array):
    return sg.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)


@pytest.mark.parametrize("batch_first, enforce_sorted", list(itertools.product((0, 1), (1, 0))))
def test_packing_and_padding_match_torch(batch_first, enforce_sorted):
    lengths = [5, 3, 3, 1] if enforce_sorted else [3, 5, 1, 3]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5, 2) if batch_first else (5, 4, 2))
    ours, theirs = _leaves(x)
    packs = [
        lib.pack_padded_sequence(t, lengths, bool(batch_first), bool(enforce_sorted))
        for lib, t in ((R, ours), (TR, theirs))
    ]
    for mine, reference in zip(*packs):
        if reference is None:
            assert mine is None
        else:
            assert_close(mine, reference)
    padded = [
        lib.pad_packed_sequence(p, bool(batch_first), padding_value=-2.0, total_length=6)
        for lib, p in zip((R, TR), packs)
    ]
    assert_close(padded[0][0], padded[1][0])
    assert padded[0][1].tolist() == padded[1][1].tolist() == lengths
    weights = rng.standard_normal(padded[1][0].shape)
    for (out, _), lib in zip(padded, (sg, torch)):
        (out * lib.tensor(weights)).sum().backward()
    assert_close(ours.grad, theirs.grad)


def test_pack_sequence_and_the_inverses():
    sequences = [np.arange(3.0), np.arange(5.0), np.arange(2.0)]
    packed = R.pack_sequence([sg.tensor(s) for s in sequences], enforce_sorted=False)
    expected = TR.pack_sequence([torch.tensor(s) for s in sequences], enforce_sorted=False)
    assert_close(packed.data, expected.data)
    assert packed.batch_sizes.tolist() == expected.batch_sizes.tolist()
    assert [s.tolist() for s in R.unpack_sequence(packed)] == [s.tolist() for s in sequences]
    padded = R.pad_sequence([sg.tensor(s) for s in sequences], batch_first=True)
    cut = R.unpad_sequence(padded, sg.tensor([3, 5, 2]), batch_first=True)
    assert [s.tolist() for s in cut] == [s.tolist() for s in sequences]
    moved = packed.to(sg.float32)
    assert moved.data.dtype == sg.float32 and moved.batch_sizes is packed.batch_sizes
    assert not packed.is_cuda


LAYERS = [
    (kind, bidirectional, batch_first, enforce_sorted)
    for kind in ("RNN", "LSTM", "GRU")
    for bidirectional, batch_first, enforce_sorted in itertools.product((0, 1), repeat=3)
]


@pytest.mark.parametrize("kind, bidirectional, batch_first, enforce_sorted", LAYERS, ids=str)
def test_recurrent_layers_over_packed_batches_match_torch(
    kind, bidirectional, batch_first, enforce_sorted
):
    """Each sequence runs for its own length: h_n is its state after its last step, the
    reverse direction starts from that step, and the gradients reach the input, the initial
    state and the weights."""
    options = dict(num_layers=2, bidirectional=bool(bidirectional), batch_first=bool(batch_first))
    theirs = getattr(torch.nn, kind)(3, 4, **options).double()
    ours = getattr(sg.nn, kind)(3, 4, **options).double()
    ours.load_state_dict({k: sg.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    lengths = [5, 3, 3, 1] if enforce_sorted else [3, 5, 1, 3]
    rng = np.random.default_rng(1)
    x_ours, x_theirs = _leaves(rng.standard_normal((4, 5, 3) if batch_first else (5, 4, 3)))
    h_ours, h_theirs = _leaves(rng.standard_normal((4 if bidirectional else 2, 4, 4)))
    results = []
    for utils, layer, inputs, state in (
        (R, ours, x_ours, h_ours),
        (TR, theirs, x_theirs, h_theirs),
    ):
        hx = (state, state * 0.5) if kind == "LSTM" else state
        packed = utils.pack_padded_sequence(
            inputs, lengths, bool(batch_first), bool(enforce_sorted)
        )
        out, final = layer(packed, hx)
        padded, _ = utils.pad_packed_sequence(out, bool(batch_first))
        finals = final if kind == "LSTM" else (final,)
        ((padded**2).sum() + sum((f**3).sum() for f in finals)).backward()
        results.append(
            [padded, *finals, inputs.grad, state.grad, *(p.grad for p in layer.parameters())]
        )
    for mine, reference in zip(*results):
        assert_close(mine, reference)


def test_an_lstm_with_projections_over_a_packed_batch():
    theirs = torch.nn.LSTM(3, 5, proj_size=2).double()
    ours = sg.nn.LSTM(3, 5, proj_size=2).double()
    ours.load_state_dict({k: sg.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((4, 3, 3))
    outs = []
    for lib, utils, layer in ((sg, R, ours), (torch, TR, theirs)):
        packed = utils.pack_padded_sequence(lib.tensor(x), [2, 4, 1], enforce_sorted=False)
        out, (h, c) = layer(packed)
        outs.append((utils.pad_packed_sequence(out)[0], h, c))
    for mine, reference in zip(*outs):
        assert_close(mine, reference)


def test_a_jitted_step_guards_the_lengths_it_reads():
    """The lengths (a tensor argument) and the batch sizes are read into Python: the
    recording replays only for calls passing the same lengths (tests/jit has more)."""
    lstm = sg.nn.LSTM(3, 4)

    def run(x, lengths):
        out, _ = lstm(R.pack_padded_sequence(x, lengths, enforce_sorted=False))
        return R.pad_packed_sequence(out)[0]

    jitted = sg.jit(run)
    for lengths in [[5, 3]] * 4 + [[3, 5], [5, 3]]:
        x = sg.randn(5, 2, 3)
        got, expected = jitted(x, sg.tensor(lengths)), run(x, sg.tensor(lengths))
        np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())
    assert sum(len(r) for r in jitted.recordings.values()) == 2


@pytest.mark.parametrize(
    "call, kind, message",
    [
        (
            lambda u, lib: u.pack_padded_sequence(lib.zeros(4, 3, 2), [4, 2, 3]),
            RuntimeError,
            "must be sorted in decreasing order when `enforce_sorted` is True",
        ),
        (
            lambda u, lib: u.pack_padded_sequence(lib.zeros(4, 3, 2), [4, 2]),
            RuntimeError,
            r"Expected `len\(lengths\)` to be equal to batch_size, but got 2 \(batch_size=3\)",
        ),
        (
            lambda u, lib: u.pack_padded_sequence(lib.zeros(4, 3, 2), [4, 0, 1], False, False),
            RuntimeError,
            "Length of all samples has to be greater than 0",
        ),
        (
            lambda u, lib: u.pack_padded_sequence(lib.zeros(4, 3, 2), lib.tensor([[4, 3, 1]])),
            RuntimeError,
            "'lengths' argument should be a 1D",
        ),
        (
            lambda u, lib: u.pad_packed_sequence(
                u.pack_padded_sequence(lib.zeros(4, 1), [4]), total_length=3
            ),
            ValueError,
            "Expected total_length to be at least the length of the longest sequence",
        ),
        (
            lambda u, lib: u.pack_padded_sequence(lib.zeros(4, 0, 2), []),
            RuntimeError,
            "Cannot pack empty tensors",
        ),
        (
            lambda u, lib: u.pack_padded_sequence(lib.zeros(3), [3, 2, 1]),
            IndexError,
            "needs a time and a batch dim",
        ),
        (
            lambda u, lib: u.pad_sequence([lib.ones(2)], padding_side="middle"),
            RuntimeError,
            "padding_side must be 'left' or 'right'",
        ),
        (lambda u, lib: u.pad_sequence(3), RuntimeError, "Expected iterable"),
    ],
    ids=[
        "unsorted", "count", "empty_sequence", "lengths_2d", "total_length", "empty_batch",
        "one_dim", "padding_side", "not_iterable",
    ],
)  # fmt: skip
def test_bad_arguments_raise_as_torch(call, kind, message):
    assert_raises_as_torch(lambda lib: call(R if lib is sg else TR, lib), kind, message)


def test_a_length_past_the_padded_steps_raises():
    """PyTorch reads past the input there (its result has rows from nowhere): refused."""
    with pytest.raises(RuntimeError, match="a sequence is 5 steps long, but the padded input"):
        R.pack_padded_sequence(sg.zeros(4, 3, 2), [5, 2, 1])


@pytest.mark.parametrize(
    "make",
    [lambda lib: lib.arange(6.0).reshape(3, 2), lambda lib: (lib.ones(k) for k in (2, 3))],
    ids=["tensor", "generator"],
)
def test_pad_sequence_takes_a_tensor_or_a_generator_as_torch(make):
    assert_close(R.pad_sequence(make(sg)), TR.pad_sequence(make(torch)))


def test_pad_sequence_keeps_the_first_sequences_dtype_as_torch():
    for lib in (sg, torch):
        padded = lib.nn.utils.rnn.pad_sequence([lib.ones(2), lib.ones(1, dtype=lib.float64)])
        assert str(padded.dtype).split(".")[-1].endswith("float32")


@pytest.mark.parametrize(
    "method", ["float", "double", "half", "long", "int", "short", "char", "byte", "cpu"]
)
def test_packed_sequence_casts_as_torch(method):
    ours, theirs = (
        getattr(u.pack_sequence([lib.ones(3), lib.ones(1)], enforce_sorted=False), method)()
        for u, lib in ((R, sg), (TR, torch))
    )
    assert str(ours.data.dtype).split(".")[-1] == str(theirs.data.dtype).split(".")[-1]
    assert_close(ours.data.double(), theirs.data.double())
    assert ours.batch_sizes.tolist() == theirs.batch_sizes.tolist()
    assert ours.unsorted_indices.tolist() == theirs.unsorted_indices.tolist()
    assert ours.is_pinned() == theirs.is_pinned()


def test_invert_permutation_matches_torch():
    permutation = [3, 0, 4, 1, 2]
    assert (
        R.invert_permutation(sg.tensor(permutation)).tolist()
        == TR.invert_permutation(torch.tensor(permutation)).tolist()
    )
    assert R.invert_permutation(None) is None


def test_doc_examples_run():
    for function in (
        R.invert_permutation,
        R.pack_padded_sequence,
        R.pad_packed_sequence,
        R.pack_sequence,
        R.unpad_sequence,
        R.unpack_sequence,
    ):
        assert_doc_examples_run(function, vars(R))
