"""``scratchgrad.nn``: modules, layers, losses, ``functional``, ``init`` and ``utils``, with
PyTorch's names, signatures and defaults (including its default initialisation).
"""

from scratchgrad.nn.parameter import Parameter  # noqa: I001  (the base classes come first)
from scratchgrad.nn.module import Module
from scratchgrad.nn import functional, init, parallel, utils
from scratchgrad.nn.activation import (
    ELU,
    GELU,
    SELU,
    Hardtanh,
    LeakyReLU,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from scratchgrad.nn.attention import MultiheadAttention
from scratchgrad.nn.batchnorm import BatchNorm1d, BatchNorm2d
from scratchgrad.nn.containers import ModuleDict, ModuleList, Sequential
from scratchgrad.nn.conv import Conv1d, Conv2d
from scratchgrad.nn.dropout import Dropout
from scratchgrad.nn.embedding import Embedding
from scratchgrad.nn.linear import Flatten, Identity, Linear, Unflatten
from scratchgrad.nn.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    MarginRankingLoss,
    SmoothL1Loss,
    L1Loss,
    MSELoss,
    NLLLoss,
    TripletMarginLoss,
)
from scratchgrad.nn.normalization import GroupNorm, LayerNorm, RMSNorm
from scratchgrad.nn.padding import ConstantPad2d, ZeroPad2d
from scratchgrad.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from scratchgrad.nn.pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from scratchgrad.nn.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "RNNCellBase",
    "RNNCell",
    "RNNBase",
    "RNN",
    "LSTMCell",
    "LSTM",
    "GRUCell",
    "GRU",
    "TransformerEncoderLayer",
    "TransformerEncoder",
    "TransformerDecoderLayer",
    "TransformerDecoder",
    "Transformer",
    "MultiheadAttention",
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BCELoss",
    "BCEWithLogitsLoss",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "CrossEntropyLoss",
    "Dropout",
    "Embedding",
    "Flatten",
    "GELU",
    "HuberLoss",
    "KLDivLoss",
    "SmoothL1Loss",
    "Identity",
    "L1Loss",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LogSoftmax",
    "MSELoss",
    "MaxPool2d",
    "Module",
    "ModuleDict",
    "ModuleList",
    "NLLLoss",
    "Parameter",
    "ReLU",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "ELU",
    "SELU",
    "Hardtanh",
    "Mish",
    "PReLU",
    "ReLU6",
    "Softplus",
    "Unflatten",
    "CosineEmbeddingLoss",
    "MarginRankingLoss",
    "TripletMarginLoss",
    "GroupNorm",
    "RMSNorm",
    "ConstantPad2d",
    "ZeroPad2d",
    "functional",
    "init",
    "parallel",
    "utils",
]
