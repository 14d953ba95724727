"""Activation layers (and ``ChannelShuffle``, parameter-free too): thin modules over
``nn.functional``."""

from __future__ import annotations

from scratchgrad.nn import functional as F
from scratchgrad.nn.init import constant_
from scratchgrad.nn.module import Module, _empty_parameter
from scratchgrad.tensor import Tensor


class _InplaceActivation(Module):
    """An activation whose only option is ``inplace``: the result is written into the input
    and returned, as PyTorch's."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_InplaceActivation):
    """max(x, 0)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, self.inplace)


class LeakyReLU(Module):
    """x for x > 0, else ``negative_slope * x``."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """x * Phi(x); ``approximate="tanh"`` for the tanh approximation."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(_InplaceActivation):
    """x * sigmoid(x)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, self.inplace)


class ELU(Module):
    """x for x > 0, else ``alpha * (exp(x) - 1)``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> [round(v, 4) for v in nn.ELU(alpha=0.5)(sg.tensor([-1.0, 2.0])).tolist()]
    [-0.3161, 2.0]
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class SELU(_InplaceActivation):
    """``scale * elu(x, alpha)`` with the self-normalising constants; see ``F.selu``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> round(nn.SELU()(sg.tensor(1.0)).item(), 6)
    1.050701
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.selu(input, self.inplace)


class Mish(_InplaceActivation):
    """x * tanh(softplus(x)).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> round(nn.Mish()(sg.tensor(1.0)).item(), 6)
    0.865098
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input, self.inplace)


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, and x where beta * x > ``threshold``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> round(nn.Softplus(beta=2.0)(sg.tensor(0.0)).item(), 6)
    0.346574
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """x clipped to [``min_val``, ``max_val``] (gradient 0 at the bounds, as PyTorch's).

    PyTorch checks ``max_val > min_val`` with an ``assert``; here it is a ValueError with the
    same words, which ``python -O`` does not remove.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.Hardtanh(-0.5, 0.5)(sg.tensor([-2.0, 0.25, 3.0])).tolist()
    [-0.5, 0.25, 0.5]
    """

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        if not max_val > min_val:
            raise ValueError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        inplace = ", inplace=True" if self.inplace else ""
        return f"min_val={self.min_val}, max_val={self.max_val}{inplace}"


class ReLU6(Hardtanh):
    """min(max(x, 0), 6): ``Hardtanh(0, 6)``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.ReLU6()(sg.tensor([-1.0, 3.0, 7.0])).tolist()
    [0.0, 3.0, 6.0]
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class PReLU(Module):
    """x for x > 0, else ``weight * x``, with a learnable slope: one shared
    (``num_parameters=1``) or one for each channel (dim 1), starting at ``init``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> act = nn.PReLU(2)
    >>> act.weight.tolist(), act(sg.tensor([[-2.0, -4.0]])).tolist()
    ([0.25, 0.25], [[-0.5, -1.0]])
    """

    def __init__(
        self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None
    ) -> None:
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = _empty_parameter((num_parameters,), device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class Hardsigmoid(_InplaceActivation):
    """relu6(x + 3) / 6; see ``F.hardsigmoid``. As PyTorch's, the repr does not show
    ``inplace``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.Hardsigmoid()(sg.tensor([-4.0, 0.0, 4.0])).tolist()
    [0.0, 0.5, 1.0]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.hardsigmoid(input, self.inplace)

    def extra_repr(self) -> str:
        return ""


class CELU(Module):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); see ``F.celu``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> [round(v, 4) for v in nn.CELU(2.0)(sg.tensor([-1.0, 2.0])).tolist()]
    [-0.7869, 2.0]
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Threshold(Module):
    """x where x > ``threshold``, else ``value``; see ``F.threshold``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.Threshold(0.1, 20.0)(sg.tensor([0.0, 0.5])).tolist()
    [20.0, 0.5]
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        inplace = ", inplace=True" if self.inplace else ""
        return f"threshold={self.threshold}, value={self.value}{inplace}"


class _Shrink(Module):
    """A shrinkage towards 0 by ``lambd``, whose repr is the amount."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    """x where |x| > ``lambd``, else 0.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.Hardshrink()(sg.tensor([-1.0, 0.5, 0.75])).tolist()
    [-1.0, 0.0, 0.75]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)


class Softshrink(_Shrink):
    """x moved ``lambd`` towards 0, 0 where |x| <= ``lambd``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.Softshrink()(sg.tensor([-1.0, 0.25, 0.75])).tolist()
    [-0.5, 0.0, 0.25]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)


class Tanhshrink(Module):
    """x - tanh(x).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> round(nn.Tanhshrink()(sg.tensor(1.0)).item(), 6)
    0.238406
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)


class Softsign(Module):
    """x / (1 + |x|).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.Softsign()(sg.tensor([-3.0, 1.0])).tolist()
    [-0.75, 0.5]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class LogSigmoid(Module):
    """log(sigmoid(x)), computed stably.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> round(nn.LogSigmoid()(sg.tensor(0.0)).item(), 6)
    -0.693147
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class RReLU(Module):
    """The randomized leaky ReLU: in training, each negative entry gets its own slope drawn
    from U(``lower``, ``upper``); in eval mode the slope is ``(lower + upper) / 2``. See
    ``F.rrelu``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.RReLU(0.25, 0.75).eval()(sg.tensor([-2.0, 3.0])).tolist()
    [-1.0, 3.0]
    """

    def __init__(
        self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False
    ) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        inplace = ", inplace=True" if self.inplace else ""
        return f"lower={self.lower}, upper={self.upper}{inplace}"


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        return input.tanh()


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return input.sigmoid()


class _AlongDim(Module):
    """A normalisation along one ``dim`` (give it: without one PyTorch's legacy choice
    applies, with a warning)."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_AlongDim):
    """exp(x) / sum(exp(x)) along ``dim``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim)


class LogSoftmax(_AlongDim):
    """log(softmax(x)) along ``dim``, computed stably in one step."""

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)


class Softmin(_AlongDim):
    """softmax(-x) along ``dim``: the smallest entries get the largest weights.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> [round(v, 4) for v in nn.Softmin(dim=0)(sg.tensor([1.0, 2.0])).tolist()]
    [0.7311, 0.2689]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim)


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of (N, C, H, W) or (C, H, W): at each location, the
    channels' values sum to 1.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.Softmax2d()(sg.zeros(2, 4, 3, 3)).sum(1).tolist() == [[[1.0] * 3] * 3] * 2
    True
    """

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3)


class GLU(Module):
    """The gated linear unit ``a * sigmoid(b)``, ``a`` and ``b`` the halves of ``dim``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.GLU()(sg.tensor([[1.0, 2.0, 0.0, 0.0]])).tolist()
    [[0.5, 1.0]]
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Hardswish(Module):
    """x * relu6(x + 3) / 6; ``inplace`` writes the result into the input, as PyTorch's (whose
    repr does not show it).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.Hardswish()(sg.tensor([-4.0, 0.0, 4.0])).tolist()
    [-0.0, 0.0, 4.0]
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardswish(input, self.inplace)


class ChannelShuffle(Module):
    """The channels (dim 1), split into ``groups`` groups, interleaved; see
    ``F.channel_shuffle``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.ChannelShuffle(3)(sg.arange(6).reshape(1, 6, 1)).flatten().tolist()
    [0, 2, 4, 1, 3, 5]
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
