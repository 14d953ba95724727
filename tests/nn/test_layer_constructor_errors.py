"""Layer constructors given bad arguments raise PyTorch's error types (a negative size:
RuntimeError; bad reductions, probabilities, paddings: ValueError; where PyTorch asserts,
an AssertionError or a ValueError), and accept what PyTorch's accept."""

import warnings

import pytest
import torch

import scratchgrad as sg

# (layer, positional arguments, keyword arguments)
CASES = [
    ("Linear", (-1, 2), {}),
    ("Linear", (2, -3), {}),
    ("Linear", (2.5, 3), {}),
    ("Linear", (0, 3), {}),
    ("Bilinear", (2, -1, 3), {}),
    ("Conv2d", (3, 4, 3), {"groups": 2}),
    ("Conv2d", (4, 3, 3), {"groups": 2}),
    ("Conv2d", (4, 4, 3), {"groups": 0}),
    ("Conv2d", (4, 4, 3), {"padding": "same", "stride": 2}),
    ("Conv2d", (4, 4, 3), {"padding": "bogus"}),
    ("Conv2d", (4, 4, 3), {"padding_mode": "bogus"}),
    ("Conv2d", (4, 4, 0), {}),
    ("Conv2d", (4, 4, 3), {"stride": 0}),
    ("Conv2d", (-4, 4, 3), {}),
    ("Conv2d", (4, 4, (3, 3, 3)), {}),
    ("ConvTranspose2d", (4, 4, 3), {"padding": "same"}),
    ("ConvTranspose2d", (4, 4, 3), {"padding_mode": "reflect"}),
    ("Dropout", (1.5,), {}),
    ("Dropout", (-0.1,), {}),
    ("Dropout2d", (2,), {}),
    ("AlphaDropout", (1.1,), {}),
    ("Embedding", (5, 2), {"padding_idx": 5}),
    ("Embedding", (5, 2), {"padding_idx": -6}),
    ("Embedding", (-1, 2), {}),
    ("EmbeddingBag", (5, 2), {"mode": "bogus"}),
    ("EmbeddingBag", (5, 2), {"padding_idx": 7}),
    ("BatchNorm1d", (-1,), {}),
    ("BatchNorm1d", (0,), {}),
    ("LayerNorm", ((0,),), {}),
    ("LayerNorm", (-2,), {}),
    ("GroupNorm", (3, 4), {}),
    ("GroupNorm", (0, 4), {}),
    ("RMSNorm", (-1,), {}),
    ("MaxPool2d", (0,), {}),
    ("MaxPool2d", (2,), {"stride": 0}),
    ("MaxPool2d", (2,), {"padding": 2}),
    ("AvgPool2d", (2,), {"padding": 2}),
    ("MultiheadAttention", (5, 2), {}),
    ("MultiheadAttention", (4, 0), {}),
    ("MultiheadAttention", (0, 1), {}),
    ("TransformerEncoderLayer", (8, 3), {}),
    ("TransformerEncoderLayer", (8, 2), {"activation": "bogus"}),
    ("RNN", (3, 4), {"nonlinearity": "bogus"}),
    ("RNN", (3, 4), {"dropout": 1.5}),
    ("RNN", (3, 4), {"num_layers": 0}),
    ("LSTM", (3, 4), {"proj_size": 4}),
    ("LSTM", (3, 4), {"proj_size": -1}),
    ("GRU", (3, 0), {}),
    ("RNN", (3, 4), {"hidden_size": 2}),
    ("RNNCell", (3, 4), {"nonlinearity": "bogus"}),
    ("LSTM", (3, 4.5), {}),
    ("GRU", (3, 4), {"num_layers": 2.0}),
    ("Softmax", (), {"dim": "x"}),
    ("PixelShuffle", (0,), {}),
    ("Upsample", (), {}),
    ("Upsample", (), {"size": 2, "scale_factor": 2}),
    ("Upsample", (2,), {"mode": "bogus"}),
    ("ELU", (), {"alpha": -1}),
    ("Hardtanh", (1.0, 0.5), {}),
    ("Softplus", (), {"beta": 0}),
    ("RReLU", (0.5, 0.1), {}),
    ("Threshold", (), {}),
    ("PReLU", (0,), {}),
    ("LocalResponseNorm", (0,), {}),
    ("CrossEntropyLoss", (), {"reduction": "bogus"}),
    ("CrossEntropyLoss", (), {"label_smoothing": 1.5}),
    ("MSELoss", (), {"reduction": "bogus"}),
    ("NLLLoss", (), {"reduction": "bogus"}),
    ("KLDivLoss", (), {"reduction": "bogus"}),
    ("HuberLoss", (), {"delta": -1}),
    ("SmoothL1Loss", (), {"beta": -1}),
    ("TripletMarginLoss", (), {"margin": -1}),
    ("CTCLoss", (), {"reduction": "bogus"}),
    ("Fold", (4,), {}),
    ("Unflatten", (1, (2, -1, -1)), {}),
    ("Flatten", (), {"start_dim": "a"}),
    ("ConstantPad2d", ((1, 2, 3),), {"value": 0}),
    ("ReflectionPad2d", ((1, 2, 3),), {}),
    ("ZeroPad2d", ((1, 2, 3),), {}),
    ("AdaptiveAvgPool2d", ((1, 2, 3),), {}),
    ("ChannelShuffle", (0,), {}),
    ("CosineSimilarity", (), {"dim": 1.5}),
    ("LPPool2d", (0, 2), {}),
    ("MaxUnpool2d", (0,), {}),
    ("Transformer", (8, 3), {}),
    ("AdaptiveLogSoftmaxWithLoss", (8, 10, [4, 4]), {}),
    ("AdaptiveLogSoftmaxWithLoss", (8, 10, [12]), {}),
    ("AdaptiveLogSoftmaxWithLoss", (8, 10, [4]), {"div_value": 0}),
    ("Upsample", (), {"scale_factor": [2, 3]}),  # (a list: PyTorch's float() refuses it)
    ("Upsample", (), {"scale_factor": (2, 3)}),
    ("GRU", (3, 4), {"proj_size": 2}),
    ("GRU", (3, 4), {"proj_size": 0}),  # (given at all: refused)
    ("RNN", (3, 4), {"proj_size": 1}),
    ("Conv2d", (1, 1, 3), {"padding": 1.5}),  # (accepted: refused at the first call)
]
# refused here when made, by PyTorch's at the first call (a TypeError, a RuntimeError)
REFUSED_EARLIER = [
    ("ConvTranspose2d", (4, 4, 3), {"padding": "same"}),
    ("RNNCell", (3, 4), {"nonlinearity": "bogus"}),
]


def _outcome(lib, name, args, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            getattr(lib.nn, name)(*args, **kwargs)
        except Exception as error:
            return type(error)
    return None


@pytest.mark.parametrize(
    "name, args, kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_constructor_errors_as_torchs(name, args, kwargs):
    expected = _outcome(torch, name, args, kwargs)
    if (name, args, kwargs) in REFUSED_EARLIER:
        expected = ValueError
    ours = _outcome(sg, name, args, kwargs)
    if expected is AssertionError:  # (a PyTorch assert: some are ValueErrors here, kept by -O)
        assert ours in (AssertionError, ValueError)
    else:
        assert ours is expected


# (layer, its arguments, the input of its first call)
FIRST_CALLS = {
    "Conv2d padding=1.5": (lambda nn: nn.Conv2d(1, 1, 3, padding=1.5), (1, 1, 5, 5)),
    "Conv1d stride=1.5": (lambda nn: nn.Conv1d(1, 1, 3, stride=1.5), (1, 1, 5)),
    "Unfold of 2-d": (lambda nn: nn.Unfold(2), (3, 3)),
    "Unfold of 1-d": (lambda nn: nn.Unfold(2), (3,)),
    "BatchNorm2d eps=0 training": (lambda nn: nn.BatchNorm2d(2, eps=0), (2, 2, 3, 3)),
    "BatchNorm1d eps=-1 training": (lambda nn: nn.BatchNorm1d(2, eps=-1.0), (4, 2)),
    "BatchNorm1d eps=-1 eval": (lambda nn: nn.BatchNorm1d(2, eps=-1.0).eval(), (4, 2)),
}


@pytest.mark.parametrize("name", FIRST_CALLS)
def test_first_call_errors_as_torchs(name):
    """Refused at the first call with PyTorch's error type, naming the argument (a float
    padding failed to be made: "'float' object is not iterable"; an Unfold of a 2-d input
    raised RuntimeError, PyTorch's IndexError; a BatchNorm with eps <= 0 ran in training)."""
    make, shape = FIRST_CALLS[name]
    with pytest.raises(Exception) as theirs:
        make(torch.nn)(torch.ones(shape))
    with pytest.raises(theirs.type) as ours:
        make(sg.nn)(sg.ones(shape))
    assert any(word in str(ours.value) for word in ("padding", "stride", "unfold", "eps"))
