"""Every ``torch.nn`` layer made with default arguments (and the fewest required ones) in both
libraries: the same repr, ``state_dict`` keys, parameter and buffer names, shapes and dtypes,
and submodule classes (``MultiheadAttention``'s ``out_proj`` is PyTorch's
``NonDynamicallyQuantizableLinear``)."""

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
            (k, None if lazy else tuple(v.shape), str(v.dtype).rsplit(".", 1)[-1]) for k, v in named
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
