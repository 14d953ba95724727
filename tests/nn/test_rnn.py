"""RNN, LSTM, GRU and their cells against PyTorch with the same weights (PyTorch's state_dict
copied into ours, which also checks the parameter names and shapes): outputs, final states and
the gradient of the input, of the initial states and of every parameter, over a grid of the
options, float64 tight and float32 loose; PyTorch's initialisation; gradcheck; errors."""

import doctest

import numpy as np
import pytest
import torch
from oracle import (
    assert_close,
    assert_raises_as_torch,
    check_outputs_and_gradients,
    leaves,
    module_pair,
    parameter_pairs,
)

import scratchgrad as sg
from scratchgrad import nn


def _flat(result):
    """(output, h_n) or (output, (h_n, c_n)) as a flat tuple of tensors."""
    output, final = result
    return (output, *(final if isinstance(final, tuple) else (final,)))


LAYER_CASES = [
    ("rnn_tanh", "RNN", {}),
    ("rnn_relu_2_layers", "RNN", {"nonlinearity": "relu", "num_layers": 2}),
    ("rnn_bidirectional_batch_first", "RNN", {"bidirectional": True, "batch_first": True}),
    ("lstm", "LSTM", {}),
    ("lstm_2_layers_bidirectional", "LSTM", {"num_layers": 2, "bidirectional": True}),
    ("lstm_proj", "LSTM", {"proj_size": 2, "num_layers": 2}),
    ("lstm_proj_bidirectional_batch_first",
     "LSTM", {"proj_size": 3, "bidirectional": True, "batch_first": True}),
    ("lstm_no_bias", "LSTM", {"bias": False}),
    ("gru", "GRU", {}),
    ("gru_3_layers_bidirectional_no_bias",
     "GRU", {"num_layers": 3, "bidirectional": True, "bias": False}),
    ("gru_batch_first", "GRU", {"batch_first": True}),
]  # fmt: skip


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    ("unbatched", "initial"),
    [(False, False), (False, True), (True, True)],
    ids=["batched-zero_state", "batched-given_state", "unbatched-given_state"],
)
@pytest.mark.parametrize(("kind", "options"), [c[1:] for c in LAYER_CASES],
                         ids=[c[0] for c in LAYER_CASES])  # fmt: skip
def test_recurrent_layer_matches_torch(kind, options, unbatched, initial, dtype):
    ours, theirs = module_pair(lambda nn: getattr(nn, kind)(3, 5, **options), dtype)
    rng = np.random.default_rng(1)
    length, batch = 4, 2
    shape = (batch, length, 3) if options.get("batch_first") else (length, batch, 3)
    x = rng.standard_normal((length, 3) if unbatched else shape)
    inputs = [leaves(x, dtype)]
    if initial:
        count = options.get("num_layers", 1) * (2 if options.get("bidirectional") else 1)
        lead = (count,) if unbatched else (count, batch)
        states = [rng.standard_normal((*lead, options.get("proj_size") or 5))]
        if kind == "LSTM":
            states.append(rng.standard_normal((*lead, 5)))
        inputs += [leaves(s, dtype) for s in states]
    hx = [pair for pair in inputs[1:]]
    ours_hx = None if not hx else (tuple(s for s, _ in hx) if kind == "LSTM" else hx[0][0])
    theirs_hx = None if not hx else (tuple(t for _, t in hx) if kind == "LSTM" else hx[0][1])

    out, expected = _flat(ours(inputs[0][0], ours_hx)), _flat(theirs(inputs[0][1], theirs_hx))
    params = parameter_pairs(ours, theirs)
    check_outputs_and_gradients(out, expected, inputs, dtype, kind, params)


CELL_CASES = [
    ("rnn_cell", "RNNCell", {}),
    ("rnn_cell_relu_no_bias", "RNNCell", {"nonlinearity": "relu", "bias": False}),
    ("lstm_cell", "LSTMCell", {}),
    ("gru_cell", "GRUCell", {}),
    ("gru_cell_no_bias", "GRUCell", {"bias": False}),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("unbatched", [False, True], ids=["batched", "unbatched"])
@pytest.mark.parametrize(("kind", "options"), [c[1:] for c in CELL_CASES],
                         ids=[c[0] for c in CELL_CASES])  # fmt: skip
def test_cell_matches_torch(kind, options, unbatched, dtype):
    ours, theirs = module_pair(lambda nn: getattr(nn, kind)(3, 4, **options), dtype)
    rng = np.random.default_rng(2)
    lead = () if unbatched else (2,)
    inputs = [leaves(rng.standard_normal((*lead, n)), dtype) for n in (3, 4, 4)]
    (x, tx), (h, th), (c, tc) = inputs
    if kind == "LSTMCell":
        out, expected = ours(x, (h, c)), theirs(tx, (th, tc))
    else:
        out, expected = (ours(x, h),), (theirs(tx, th),)
        inputs = inputs[:2]
    check_outputs_and_gradients(out, expected, inputs, dtype, kind, parameter_pairs(ours, theirs))


def test_cells_without_a_state_start_from_zeros():
    ours, theirs = module_pair(lambda nn: nn.LSTMCell(3, 4), "float64")
    x = np.random.default_rng(3).standard_normal((2, 3))
    for o, e in zip(ours(sg.tensor(x)), theirs(torch.tensor(x))):
        assert_close(o, e, "float64", "zero state")


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize(
    ("input_shape", "hidden_shape", "error"),
    [
        ((3,), (2, 4), RuntimeError),  # an unbatched input's state broadcast to a batch of 2
        ((3,), (1, 4), RuntimeError),
        ((2, 3), (4,), RuntimeError),  # a batch's state broadcast from one state
        ((2, 3), (1, 2, 4), ValueError),
    ],
)
def test_cell_refuses_a_hidden_state_of_another_shape_as_torch(
    kind, input_shape, hidden_shape, error
):
    def call(m):
        cell = getattr(m.nn, kind)(3, 4)
        h = m.zeros(hidden_shape)
        return cell(m.zeros(input_shape), (h, h) if kind == "LSTMCell" else h)

    assert_raises_as_torch(call, error, f"{kind}: expected a .*hidden state")


def test_dropout_between_layers_only_in_training():
    sg.manual_seed(0)
    lstm = nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = sg.randn(5, 2, 3)
    first, second = lstm(x)[0], lstm(x)[0]
    assert not np.allclose(first.detach().numpy(), second.detach().numpy())
    lstm.eval()
    assert np.array_equal(lstm(x)[0].detach().numpy(), lstm(x)[0].detach().numpy())


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_dropout_with_one_layer_warns_as_torch(kind):
    """Its dropout is never applied (word_language_model with --nlayers 1 --dropout 0.5): PyTorch
    says so, pointing at the line that built the layer; so does scratchgrad (it was silent)."""
    with pytest.warns(UserWarning) as theirs:
        getattr(torch.nn, kind)(3, 4, 1, dropout=0.5)
    with pytest.warns(UserWarning) as ours:
        getattr(nn, kind)(3, 4, 1, dropout=0.5)
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
    assert ours[0].filename == __file__


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_initialisation_is_torchs(kind):
    """Every parameter uniform in +-1/sqrt(hidden_size), spread over the whole range."""
    layer = getattr(nn, kind)(6, 16, num_layers=2)
    values = np.concatenate([p.detach().numpy().ravel() for p in layer.parameters()])
    assert np.abs(values).max() <= 0.25 and np.abs(values).max() > 0.24
    assert abs(values.mean()) < 0.01 and abs(values.std() - 0.25 / np.sqrt(3)) < 0.005


def test_gradcheck_lstm_with_projection_and_gru():
    sg.manual_seed(0)
    lstm = nn.LSTM(2, 3, proj_size=2, bidirectional=True).double()
    gru = nn.GRU(2, 3, num_layers=2).double()
    x = sg.randn(3, 1, 2, dtype=sg.float64, requires_grad=True)
    assert sg.autograd.gradcheck(lambda x: lstm(x)[0], (x,))
    assert sg.autograd.gradcheck(lambda x: gru(x)[1], (x,))
    assert sg.autograd.gradgradcheck(lambda x: gru(x)[0], (x,))


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.RNNBase("GRU", 3, 4, proj_size=2)
    with pytest.raises(ValueError, match="proj_size \\(4\\) has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size"):
        nn.GRU(3, 4)(sg.randn(5, 2, 4))
    with pytest.raises(RuntimeError, match="expected hidden size \\(2, 2, 4\\), got \\(1, 2, 4\\)"):
        nn.RNN(3, 4, bidirectional=True)(sg.randn(5, 2, 3), sg.zeros(1, 2, 4))
    with pytest.raises(TypeError, match="hx must be a tuple"):
        nn.LSTM(3, 4)(sg.randn(5, 2, 3), sg.zeros(1, 2, 4))


@pytest.mark.parametrize(
    "shape", [(0, 2, 3), (0, 3), (2, 0, 3)], ids=["seq", "unbatched", "batch_first"]
)
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_a_sequence_of_no_steps_raises_as_pytorch(kind, shape):
    # (ours raised "stack expects a non-empty TensorList", which named neither layer nor input)
    def call(lib):
        layer = getattr(lib.nn, kind)(3, 4, batch_first=len(shape) == 3 and shape[1] == 0)
        return layer(lib.zeros(shape))

    assert_raises_as_torch(call, RuntimeError, f"{kind}: Expected sequence length to be larger")


def test_repr_as_torch():
    for build in (lambda nn: nn.LSTM(3, 4, num_layers=2, batch_first=True, proj_size=2),
                  lambda nn: nn.GRU(3, 4, bias=False, dropout=0.5, num_layers=2,
                                    bidirectional=True),
                  lambda nn: nn.GRUCell(3, 4)):  # fmt: skip
        assert repr(build(nn)) == repr(build(torch.nn))


def test_doctests():
    from scratchgrad.nn import rnn

    assert doctest.testmod(rnn).failed == 0


@pytest.mark.parametrize(
    "kind, options",
    [
        ("RNN", {}),
        ("GRU", {"num_layers": 2, "bidirectional": True}),
        ("LSTM", {"bias": False, "num_layers": 2}),
        ("LSTM", {"proj_size": 2, "bidirectional": True}),
    ],
)
def test_all_weights_lists_each_layer_and_directions_parameters_as_torch(kind, options):
    ours, theirs = getattr(nn, kind)(3, 4, **options), getattr(torch.nn, kind)(3, 4, **options)
    names = {id(p): name for name, p in ours.named_parameters()}
    their_names = {id(p): name for name, p in theirs.named_parameters()}
    assert [[names[id(w)] for w in ws] for ws in ours.all_weights] == [
        [their_names[id(w)] for w in ws] for ws in theirs.all_weights
    ]


@pytest.mark.parametrize(("kind", "options"), [c[1:] for c in LAYER_CASES],
                         ids=[c[0] for c in LAYER_CASES])  # fmt: skip
def test_recurrent_layers_under_bfloat16_autocast_match_torch(kind, options):
    """PyTorch's CPU LSTM is one oneDNN kernel on autocast's lower-precision list: its outputs
    and final states are bfloat16 (RNN's too, GRU's float32), but with a projection or a
    packed batch (other kernels); a packed batch's outputs keep its steps' dtype."""
    ours, theirs = module_pair(lambda nn: getattr(nn, kind)(3, 5, **options), "float32")
    x = np.random.default_rng(2).standard_normal((4, 2, 3))
    packed = [
        lib.nn.utils.rnn.pack_padded_sequence(lib.tensor(x, dtype=lib.float32), [4, 3])
        for lib in (sg, torch)
    ]
    for module, lib, batch in ((ours, sg, packed[0]), (theirs, torch, packed[1])):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            try:
                out = _flat(module(lib.tensor(x, dtype=lib.float32)))
            except RuntimeError as error:  # (PyTorch's: oneDNN has it with AVX-512 only)
                if lib is torch and "LSTM forward propagation primitive" in str(error):
                    pytest.skip("PyTorch's oneDNN has no bfloat16 LSTM on this CPU")
                raise
            output, final = module(batch)
            out_packed = [t.dtype for t in _flat((output.data, final))]
        sum(t.float().sum() for t in out).backward()
        module.outputs = out, out_packed
    (out, out_packed), (expected, expected_packed) = ours.outputs, theirs.outputs
    assert [str(t.dtype).split(".")[-1] for t in out] == [
        str(t.dtype).split(".")[-1] for t in expected
    ]
    assert [str(t) for t in out_packed] == [
        str(t).replace("torch", "scratchgrad") for t in expected_packed
    ]
    for o, e in zip(out, expected):
        assert_close(o.float(), e.float(), "bfloat16")
    for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert p.grad.dtype == sg.float32
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=0.1, atol=0.1)
