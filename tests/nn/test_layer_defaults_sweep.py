"""Every ``torch.nn`` layer made with default arguments (and the fewest required ones), and
many made with others (``NON_DEFAULT``), in both libraries: the same repr, ``state_dict``
keys, parameter and buffer names, shapes and dtypes, and submodule classes
(``MultiheadAttention``'s ``out_proj`` is PyTorch's ``NonDynamicallyQuantizableLinear``)."""

import warnings

import pytest
import torch

import scratchgrad as sg

# the positional arguments of each layer (None: built from others, tested through them)
ARGS = {
    "AdaptiveAvgPool1d": (3,),
    "AdaptiveAvgPool2d": (3,),
    "AdaptiveAvgPool3d": (3,),
    "AdaptiveMaxPool1d": (3,),
    "AdaptiveMaxPool2d": (3,),
    "AdaptiveMaxPool3d": (3,),
    "AdaptiveLogSoftmaxWithLoss": (8, 10, [4]),
    "AvgPool1d": (2,),
    "AvgPool2d": (2,),
    "AvgPool3d": (2,),
    "BatchNorm1d": (3,),
    "BatchNorm2d": (3,),
    "BatchNorm3d": (3,),
    "SyncBatchNorm": (3,),
    "Bilinear": (2, 3, 4),
    "ChannelShuffle": (2,),
    "CircularPad1d": (1,),
    "CircularPad2d": (1,),
    "CircularPad3d": (1,),
    "ConstantPad1d": (1, 0.5),
    "ConstantPad2d": (1, 0.5),
    "ConstantPad3d": (1, 0.5),
    "Conv1d": (2, 3, 3),
    "Conv2d": (2, 3, 3),
    "Conv3d": (2, 3, 3),
    "ConvTranspose1d": (2, 3, 3),
    "ConvTranspose2d": (2, 3, 3),
    "ConvTranspose3d": (2, 3, 3),
    "CosineSimilarity": (),
    "CrossEntropyLoss": (),
    "Embedding": (5, 2),
    "EmbeddingBag": (5, 2),
    "Fold": (4, 2),
    "Unfold": (2,),
    "FractionalMaxPool2d": (2,),
    "GroupNorm": (2, 4),
    "GRU": (3, 4),
    "GRUCell": (3, 4),
    "LSTM": (3, 4),
    "LSTMCell": (3, 4),
    "RNN": (3, 4),
    "RNNCell": (3, 4),
    "InstanceNorm1d": (3,),
    "InstanceNorm2d": (3,),
    "InstanceNorm3d": (3,),
    "LayerNorm": (4,),
    "LazyLinear": (3,),
    "Linear": (2, 3),
    "LocalResponseNorm": (2,),
    "LPPool1d": (2, 3),
    "LPPool2d": (2, 3),
    "LPPool3d": (2, 3),
    "MaxPool1d": (2,),
    "MaxPool2d": (2,),
    "MaxPool3d": (2,),
    "MaxUnpool1d": (2,),
    "MaxUnpool2d": (2,),
    "MaxUnpool3d": (2,),
    "MultiheadAttention": (4, 2),
    "PixelShuffle": (2,),
    "PixelUnshuffle": (2,),
    "PReLU": (),
    "ReflectionPad1d": (1,),
    "ReflectionPad2d": (1,),
    "ReflectionPad3d": (1,),
    "ReplicationPad1d": (1,),
    "ReplicationPad2d": (1,),
    "ReplicationPad3d": (1,),
    "RMSNorm": (4,),
    "Softmax": (1,),
    "LogSoftmax": (1,),
    "Softmin": (1,),
    "Threshold": (0.1, 0.2),
    "Transformer": (8, 2, 1, 1, 16),
    "TransformerEncoderLayer": (8, 2, 16),
    "TransformerDecoderLayer": (8, 2, 16),
    "Unflatten": (1, (2, 2)),
    "Upsample": (None, 2),
    "UpsamplingNearest2d": (None, 2),
    "UpsamplingBilinear2d": (None, 2),
    "ZeroPad1d": (1,),
    "ZeroPad2d": (1,),
    "ZeroPad3d": (1,),
    "GLU": (),
    "Hardtanh": (),
    "ELU": (),
    "LazyConv1d": (3, 2),
    "LazyConv2d": (3, 2),
    "LazyConv3d": (3, 2),
    "LazyConvTranspose1d": (3, 2),
    "LazyConvTranspose2d": (3, 2),
    "LazyConvTranspose3d": (3, 2),
    "LazyBatchNorm1d": (),
    "LazyBatchNorm2d": (),
    "LazyBatchNorm3d": (),
    "LazyInstanceNorm1d": (),
    "LazyInstanceNorm2d": (),
    "LazyInstanceNorm3d": (),
    "TransformerEncoder": None,
    "TransformerDecoder": None,
    "FractionalMaxPool3d": (2,),
}
ARGS |= {"RNNBase": ("LSTM", 3, 4), "RNNCellBase": (3, 4, True, 4)}
KEYWORDS = {"FractionalMaxPool2d": {"output_size": 3}, "FractionalMaxPool3d": {"output_size": 3}}
NOT_LAYERS = {"Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"}
NOT_IN_SCRATCHGRAD = {
    *("Container", "NLLLoss2d", "CrossMapLRN2d", "DataParallel", "LinearCrossEntropyLoss")
}
LAYERS = sorted(
    name
    for name, cls in vars(torch.nn).items()
    if isinstance(cls, type) and issubclass(cls, torch.nn.Module) and not name.startswith("_")
    if name not in NOT_LAYERS | NOT_IN_SCRATCHGRAD and ARGS.get(name, ()) is not None
)


def _described(module, lazy):
    """What the libraries must agree on, with shapes left out while a lazy layer has none."""

    def entries(named):
        return [
            (k, None if lazy else tuple(v.shape), str(v.dtype).split(".")[-1].rsplit(".", 1)[-1])
            for k, v in named
        ]

    return (
        repr(module),
        list(module.state_dict()),
        entries(module.named_parameters()),
        entries(module.named_buffers()),
        [type(m).__name__ for m in module.modules()],
        module.training,
    )


@pytest.mark.parametrize("name", LAYERS)
def test_layer_made_with_defaults_as_torchs(name):
    args, kwargs = ARGS.get(name, ()), KEYWORDS.get(name, {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (PyTorch's about nested tensors, lazy modules...)
        theirs = getattr(torch.nn, name)(*args, **kwargs)
        ours = getattr(sg.nn, name)(*args, **kwargs)
    lazy = name.startswith("Lazy")
    assert _described(ours, lazy) == _described(theirs, lazy)


# (layer, positional arguments, keyword arguments) other than the defaults
NON_DEFAULT = [
    (
        "Conv2d",
        (2, 4, 3),
        dict(stride=2, padding=1, dilation=2, groups=2, bias=False, padding_mode="reflect"),
    ),
    ("Conv1d", (2, 4, 3), dict(padding="same", padding_mode="circular")),
    ("Conv3d", (2, 4, (1, 2, 3)), dict(stride=(1, 2, 1), padding="valid")),
    (
        "ConvTranspose2d",
        (2, 4, 3),
        dict(stride=2, padding=1, output_padding=1, groups=2, dilation=1, bias=False),
    ),
    ("MaxPool2d", (3,), dict(stride=2, padding=1, dilation=2, return_indices=True, ceil_mode=True)),
    ("MaxPool1d", (3,), dict(stride=1)),
    (
        "AvgPool2d",
        (3,),
        dict(stride=2, padding=1, ceil_mode=True, count_include_pad=False, divisor_override=2),
    ),
    ("AvgPool1d", (3,), dict(stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("AvgPool3d", (3,), dict(stride=2, padding=1, divisor_override=3)),
    ("LPPool2d", (2, 3), dict(stride=2, ceil_mode=True)),
    ("MaxUnpool2d", (2,), dict(stride=1, padding=1)),
    ("AdaptiveMaxPool2d", ((2, None),), dict(return_indices=True)),
    ("BatchNorm2d", (3,), dict(eps=1e-3, momentum=None, affine=False, track_running_stats=False)),
    ("InstanceNorm2d", (3,), dict(affine=True, track_running_stats=True)),
    ("LayerNorm", ((3, 4),), dict(eps=1e-6, elementwise_affine=False)),
    ("LayerNorm", (3,), dict(bias=False)),
    ("GroupNorm", (2, 4), dict(affine=False, eps=1e-3)),
    ("RMSNorm", ((3, 4),), dict(eps=1e-6, elementwise_affine=False)),
    ("RMSNorm", (3,), dict()),
    ("LocalResponseNorm", (3,), dict(alpha=1e-3, beta=0.5, k=2.0)),
    (
        "Embedding",
        (5, 2),
        dict(padding_idx=1, max_norm=1.0, norm_type=3.0, scale_grad_by_freq=True, sparse=True),
    ),
    ("Linear", (2, 3), dict(bias=False)),
    ("Bilinear", (2, 3, 4), dict(bias=False)),
    ("Dropout", (0.3,), dict(inplace=True)),
    ("Dropout2d", (0.3,), {}),
    ("AlphaDropout", (0.2,), {}),
    ("LeakyReLU", (0.2, True), {}),
    ("ELU", (0.5, True), {}),
    ("CELU", (0.5,), {}),
    ("GELU", (), dict(approximate="tanh")),
    ("Softplus", (2, 10), {}),
    ("Hardtanh", (-2.0, 2.0), {}),
    ("ReLU6", (True,), {}),
    ("RReLU", (0.1, 0.3), {}),
    ("Threshold", (0.1, 20.0), {}),
    ("Softshrink", (0.3,), {}),
    ("Hardshrink", (0.3,), {}),
    ("PReLU", (3, 0.1), {}),
    ("Softmax", (), dict(dim=-1)),
    ("Softmax", (), {}),
    ("LogSoftmax", (), {}),
    ("GLU", (-2,), {}),
    ("SiLU", (True,), {}),
    ("Mish", (True,), {}),
    ("Hardswish", (True,), {}),
    ("Hardsigmoid", (True,), {}),
    ("Tanhshrink", (), {}),
    ("Softsign", (), {}),
    ("Flatten", (0, 2), {}),
    ("Unflatten", (-1, (2, 3)), {}),
    ("Upsample", (), dict(scale_factor=2.5, mode="bilinear", align_corners=True)),
    ("Upsample", ((4, 5),), dict(mode="nearest")),
    ("PixelShuffle", (3,), {}),
    ("ChannelShuffle", (3,), {}),
    ("ConstantPad2d", ((1, 2, 3, 4), 2.5), {}),
    ("ReflectionPad1d", ((1, 2),), {}),
    ("ZeroPad2d", ((1, 2, 0, 1),), {}),
    ("CircularPad2d", (2,), {}),
    ("Fold", ((4, 5), 2), dict(dilation=2, padding=1, stride=2)),
    ("Unfold", ((2, 3),), dict(dilation=1, padding=(1, 0), stride=2)),
    ("CosineSimilarity", (0, 1e-6), {}),
    ("PairwiseDistance", (1.0, 1e-5, True), {}),
    (
        "RNN",
        (3, 4),
        dict(
            num_layers=2,
            nonlinearity="relu",
            bias=False,
            batch_first=True,
            dropout=0.5,
            bidirectional=True,
        ),
    ),
    ("LSTM", (3, 4), dict(proj_size=2, num_layers=2)),
    ("GRU", (3, 4), dict(bidirectional=True)),
    ("LSTMCell", (3, 4), dict(bias=False)),
    ("RNNCell", (3, 4), dict(nonlinearity="relu")),
    (
        "MultiheadAttention",
        (4, 2),
        dict(dropout=0.1, bias=False, add_bias_kv=True, kdim=3, vdim=5, batch_first=True),
    ),
    (
        "TransformerEncoderLayer",
        (8, 2, 16),
        dict(dropout=0.0, activation="gelu", norm_first=True, batch_first=True, bias=False),
    ),
    ("CrossEntropyLoss", (), dict(ignore_index=3, reduction="sum", label_smoothing=0.1)),
    ("MSELoss", (), dict(reduction="none")),
    ("NLLLoss", (), dict(weight=None, ignore_index=1)),
    ("BCEWithLogitsLoss", (), dict(reduction="sum")),
    ("HuberLoss", (), dict(delta=2.0)),
    ("SmoothL1Loss", (), dict(beta=0.5)),
    ("KLDivLoss", (), dict(reduction="batchmean", log_target=True)),
    ("TripletMarginLoss", (), dict(margin=2.0, p=1.0, swap=True)),
    ("CTCLoss", (), dict(blank=1, zero_infinity=True)),
    ("MarginRankingLoss", (0.5,), {}),
    ("GaussianNLLLoss", (), dict(full=True, eps=1e-3)),
    ("PoissonNLLLoss", (), dict(log_input=False, full=True)),
    ("MultiMarginLoss", (), dict(p=2, margin=0.5)),
    ("CosineEmbeddingLoss", (0.2,), {}),
    ("TripletMarginWithDistanceLoss", (), dict(margin=0.5, swap=True)),
    ("HingeEmbeddingLoss", (0.5,), {}),
    ("SoftMarginLoss", (), {}),
    ("EmbeddingBag", (5, 2), dict(mode="max", include_last_offset=True)),
    ("AdaptiveLogSoftmaxWithLoss", (8, 10, [4, 8]), dict(div_value=2.0, head_bias=True)),
    ("Identity", (3,), dict(foo=1)),
    ("Softmin", (1,), {}),
    ("Softmax2d", (), {}),
    ("LogSigmoid", (), {}),
    ("FractionalMaxPool2d", ((2, 3),), dict(output_ratio=(0.5, 0.6), return_indices=True)),
    ("UpsamplingBilinear2d", (), dict(scale_factor=2)),
    ("UpsamplingNearest2d", ((3, 4),), {}),
]


@pytest.mark.parametrize(
    "name, args, kwargs", NON_DEFAULT, ids=[f"{c[0]}-{i}" for i, c in enumerate(NON_DEFAULT)]
)
def test_layer_made_with_other_arguments_as_torchs(name, args, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = getattr(torch.nn, name)(*args, **kwargs)
        ours = getattr(sg.nn, name)(*args, **kwargs)
    assert _described(ours, False) == _described(theirs, False)
