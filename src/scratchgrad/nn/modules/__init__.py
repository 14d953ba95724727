"""``torch.nn.modules``: PyTorch's import paths for the layers (``torch.nn.modules.loss._Loss``,
``torch.nn.modules.batchnorm._BatchNorm``, ``torch.nn.modules.utils._pair``...), which real code
uses for base classes and ``isinstance`` checks. Each submodule re-exports the classes of the
file of ``scratchgrad.nn`` where they live; the classes are the same objects.

>>> from scratchgrad import nn
>>> from scratchgrad.nn.modules.batchnorm import _BatchNorm
>>> isinstance(nn.BatchNorm2d(3), _BatchNorm)
True
"""

from scratchgrad.nn.modules import utils
from scratchgrad.nn.modules.activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    MultiheadAttention,
    PReLU,
    ReLU,
    ReLU6,
    RReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from scratchgrad.nn.modules.adaptive import AdaptiveLogSoftmaxWithLoss
from scratchgrad.nn.modules.batchnorm import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    SyncBatchNorm,
)
from scratchgrad.nn.modules.channelshuffle import ChannelShuffle
from scratchgrad.nn.modules.container import (
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from scratchgrad.nn.modules.conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
)
from scratchgrad.nn.modules.distance import CosineSimilarity, PairwiseDistance
from scratchgrad.nn.modules.dropout import (
    AlphaDropout,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    FeatureAlphaDropout,
)
from scratchgrad.nn.modules.flatten import Flatten, Unflatten
from scratchgrad.nn.modules.fold import Fold, Unfold
from scratchgrad.nn.modules.instancenorm import (
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
)
from scratchgrad.nn.modules.lazy import LazyModuleMixin
from scratchgrad.nn.modules.linear import Bilinear, Identity, LazyLinear, Linear
from scratchgrad.nn.modules.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    CTCLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)
from scratchgrad.nn.modules.module import Module
from scratchgrad.nn.modules.normalization import GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm
from scratchgrad.nn.modules.padding import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from scratchgrad.nn.modules.pixelshuffle import PixelShuffle, PixelUnshuffle
from scratchgrad.nn.modules.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    FractionalMaxPool2d,
    FractionalMaxPool3d,
    LPPool1d,
    LPPool2d,
    LPPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
)
from scratchgrad.nn.modules.rnn import (
    GRU,
    LSTM,
    RNN,
    GRUCell,
    LSTMCell,
    RNNBase,
    RNNCell,
    RNNCellBase,
)
from scratchgrad.nn.modules.sparse import Embedding, EmbeddingBag
from scratchgrad.nn.modules.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from scratchgrad.nn.modules.upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d
