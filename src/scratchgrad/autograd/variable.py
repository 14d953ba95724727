"""``Variable``: the pre-0.4 wrapper of a tensor, kept as PyTorch keeps it for old code."""

from __future__ import annotations

import warnings


class _VariableMeta(type):
    """Every tensor is a Variable, as in PyTorch since 0.4 (``isinstance(t, Variable)``)."""

    def __instancecheck__(cls, other: object) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False)``: ``data`` cut from its graph, sharing its memory,
    with ``requires_grad`` set, as ``torch.autograd.Variable`` (Variables and tensors were merged
    in PyTorch 0.4; the call survives in old code). ``volatile`` has no effect and warns.

    >>> import scratchgrad as sg
    >>> from scratchgrad.autograd import Variable
    >>> x = sg.ones(2)
    >>> v = Variable(x, requires_grad=True)
    >>> v.requires_grad, x.requires_grad, isinstance(x, Variable)
    (True, False, True)
    """

    def __new__(cls, data: Tensor, requires_grad: bool = False, volatile: bool = False) -> Tensor:
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        return data.detach().requires_grad_(requires_grad)


from scratchgrad.tensor import Tensor  # noqa: E402  (Variable(x) returns a Tensor)
