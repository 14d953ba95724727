"""PyTorch's ``torch._foreach_*`` functions: one operation over a list of tensors, as EMA and
optimizer code calls them (``torch._foreach_lerp_(ema_params, params, 1 - decay)``). Here
``add_`` is ``scratchgrad._foreach_add_``, and so on. PyTorch fuses the list into few kernels;
here each is a loop over the Tensor methods of the same name, so gradients, in-place checks and
errors come from those methods. The in-place forms return the list they changed and the others
a tuple, as PyTorch's do.
"""

from typing import Any

from scratchgrad.tensor import Tensor

# (the root names each ``_foreach_<name>``)
__all__ = [
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "lerp", "lerp_", "copy_",
    "zero_", "norm", "maximum", "maximum_", "addcmul", "addcmul_", "addcdiv", "addcdiv_",
    "sqrt", "sqrt_", "neg", "neg_", "sign", "sign_", "abs", "abs_", "exp", "exp_",
    "reciprocal", "reciprocal_",
]  # fmt: skip


def _per_tensor(name: str, tensors: list[Tensor], other: Any) -> list[Any]:
    """``other`` spread over ``tensors``: a list gives one item per tensor, a number or a single
    Tensor is used for all."""
    if not tensors:
        raise RuntimeError(f"{name}: Tensor list must have at least one tensor.")
    if not isinstance(other, (list, tuple)):
        return [other] * len(tensors)
    if len(other) != len(tensors):
        if all(isinstance(o, Tensor) for o in other):
            raise RuntimeError(
                f"{name}: Tensor lists must have the same number of tensors, "
                f"got {len(tensors)} and {len(other)}"
            )
        raise RuntimeError(f"{name}: Tensor list must have same number of elements as scalar list.")
    return list(other)


def _each(name: str, tensors: list[Tensor], other: Any, **kwargs: Any) -> list[Tensor]:
    """``tensors[i].<name>(other[i], **kwargs)`` for each i, named as torch's ``_foreach_`` op."""
    others = _per_tensor(f"_foreach_{name}", tensors, other)
    return [getattr(t, name)(o, **kwargs) for t, o in zip(tensors, others)]


def add(self: list[Tensor], other: Any, *, alpha: float = 1) -> tuple[Tensor, ...]:
    """``self[i] + alpha * other[i]`` for each tensor (``other`` a list, or one number or tensor
    for all).

    >>> import scratchgrad as sg
    >>> sg._foreach_add([sg.ones(2), sg.zeros(1)], 1.5)
    (tensor([2.5000, 2.5000]), tensor([1.5000]))
    """
    return tuple(_each("add", self, other, alpha=alpha))


def add_(self: list[Tensor], other: Any, *, alpha: float = 1) -> list[Tensor]:
    """``_foreach_add`` in place.

    >>> import scratchgrad as sg
    >>> sg._foreach_add_([sg.ones(2)], [sg.tensor([1.0, 2.0])], alpha=2)
    [tensor([3., 5.])]
    """
    _each("add_", self, other, alpha=alpha)
    return self


def sub(self: list[Tensor], other: Any, *, alpha: float = 1) -> tuple[Tensor, ...]:
    """``self[i] - alpha * other[i]`` for each tensor.

    >>> import scratchgrad as sg
    >>> sg._foreach_sub([sg.ones(2)], [sg.tensor([1.0, 2.0])])
    (tensor([ 0., -1.]),)
    """
    return tuple(_each("sub", self, other, alpha=alpha))


def sub_(self: list[Tensor], other: Any, *, alpha: float = 1) -> list[Tensor]:
    """``_foreach_sub`` in place.

    >>> import scratchgrad as sg
    >>> sg._foreach_sub_([sg.ones(2)], 0.25)
    [tensor([0.7500, 0.7500])]
    """
    _each("sub_", self, other, alpha=alpha)
    return self


def mul(self: list[Tensor], other: Any) -> tuple[Tensor, ...]:
    """``self[i] * other[i]`` for each tensor.

    >>> import scratchgrad as sg
    >>> sg._foreach_mul([sg.ones(2), sg.ones(1)], [2.0, 3.0])
    (tensor([2., 2.]), tensor([3.]))
    """
    return tuple(_each("mul", self, other))


def mul_(self: list[Tensor], other: Any) -> list[Tensor]:
    """``_foreach_mul`` in place.

    >>> import scratchgrad as sg
    >>> sg._foreach_mul_([sg.ones(2)], 0.5)
    [tensor([0.5000, 0.5000])]
    """
    _each("mul_", self, other)
    return self


def div(self: list[Tensor], other: Any) -> tuple[Tensor, ...]:
    """``self[i] / other[i]`` for each tensor.

    >>> import scratchgrad as sg
    >>> sg._foreach_div([sg.ones(2)], 4)
    (tensor([0.2500, 0.2500]),)
    """
    return tuple(_each("div", self, other))


def div_(self: list[Tensor], other: Any) -> list[Tensor]:
    """``_foreach_div`` in place.

    >>> import scratchgrad as sg
    >>> sg._foreach_div_([sg.ones(2)], [sg.tensor([2.0, 4.0])])
    [tensor([0.5000, 0.2500])]
    """
    _each("div_", self, other)
    return self


def _lerp(name: str, self: list[Tensor], tensors1: list[Tensor], weight: Any) -> list[Tensor]:
    """``self[i].<name>(tensors1[i], weight[i])``: ``tensors1`` must be a list as long as
    ``self``, ``weight`` a list or one number or tensor for all."""
    ends = _per_tensor(f"_foreach_{name}", self, list(tensors1))
    weights = _per_tensor(f"_foreach_{name}", self, weight)
    return [getattr(t, name)(end, w) for t, end, w in zip(self, ends, weights)]


def lerp(self: list[Tensor], tensors1: list[Tensor], weight: Any) -> tuple[Tensor, ...]:
    """``self[i] + weight[i] * (tensors1[i] - self[i])`` for each tensor.

    >>> import scratchgrad as sg
    >>> sg._foreach_lerp([sg.zeros(2)], [sg.ones(2)], 0.25)
    (tensor([0.2500, 0.2500]),)
    """
    return tuple(_lerp("lerp", self, tensors1, weight))


def lerp_(self: list[Tensor], tensors1: list[Tensor], weight: Any) -> list[Tensor]:
    """``_foreach_lerp`` in place: the usual EMA update of a model's weights.

    >>> import scratchgrad as sg
    >>> ema, params = [sg.zeros(2)], [sg.ones(2)]
    >>> sg._foreach_lerp_(ema, params, 0.1)
    [tensor([0.1000, 0.1000])]
    """
    _lerp("lerp_", self, tensors1, weight)
    return self


def copy_(self: list[Tensor], src: list[Tensor]) -> list[Tensor]:
    """``self[i].copy_(src[i])`` for each tensor.

    >>> import scratchgrad as sg
    >>> sg._foreach_copy_([sg.zeros(2)], [sg.tensor([1.0, 2.0])])
    [tensor([1., 2.])]
    """
    _each("copy_", self, list(src))
    return self


def zero_(self: list[Tensor]) -> list[Tensor]:
    """Every tensor of the list filled with zeros.

    >>> import scratchgrad as sg
    >>> sg._foreach_zero_([sg.ones(2)])
    [tensor([0., 0.])]
    """
    _per_tensor("_foreach_zero_", self, None)  # (an empty list raises, as PyTorch's)
    for t in self:
        t.zero_()
    return self


def norm(self: list[Tensor], ord: float = 2) -> tuple[Tensor, ...]:
    """The ``ord``-norm of each tensor, flattened (as ``clip_grad_norm_`` needs them).

    >>> import scratchgrad as sg
    >>> sg._foreach_norm([sg.tensor([3.0, 4.0]), sg.ones(4)])
    (tensor(5.), tensor(2.))
    """
    return tuple(_each("norm", self, ord))


def maximum(self: list[Tensor], other: Any) -> tuple[Tensor, ...]:
    """The elementwise larger of ``self[i]`` and ``other[i]`` (a list, or one number or tensor
    for all), as Adam's amsgrad keeps its running maximum.

    >>> import scratchgrad as sg
    >>> sg._foreach_maximum([sg.tensor([1.0, 3.0])], 2.0)
    (tensor([2., 3.]),)
    """
    return tuple(_each("maximum", self, _as_tensors(self, other)))


def maximum_(self: list[Tensor], other: Any) -> list[Tensor]:
    """``_foreach_maximum`` in place.

    >>> import scratchgrad as sg
    >>> sg._foreach_maximum_([sg.tensor([1.0, 3.0])], [sg.tensor([2.0, 2.0])])
    [tensor([2., 3.])]
    """
    for t, larger in zip(self, maximum(self, other)):
        t.copy_(larger)
    return self


def _as_tensors(tensors: list[Tensor], other: Any) -> list[Any]:
    """``other`` spread over ``tensors``, its numbers made tensors of their tensor's dtype
    (``Tensor.maximum`` takes tensors only)."""
    others = _per_tensor("_foreach_maximum", tensors, other)
    return [o if isinstance(o, Tensor) else t.new_tensor(o) for t, o in zip(tensors, others)]


def _pointwise(name: str, self: list[Tensor], tensor1: Any, tensor2: Any, value: Any) -> list:
    """``self[i].<name>(tensor1[i], tensor2[i], value=value[i])`` for each i; as PyTorch's, a
    1-D tensor ``value`` holds one number per tensor."""
    if isinstance(value, Tensor):
        value = value.tolist()
    firsts = _per_tensor(f"_foreach_{name}", self, list(tensor1))
    seconds = _per_tensor(f"_foreach_{name}", self, list(tensor2))
    values = _per_tensor(f"_foreach_{name}", self, value)
    return [getattr(t, name)(a, b, value=v) for t, a, b, v in zip(self, firsts, seconds, values)]


def addcmul(
    self: list[Tensor], tensor1: list[Tensor], tensor2: list[Tensor], value: Any = 1
) -> tuple[Tensor, ...]:
    """``self[i] + value[i] * tensor1[i] * tensor2[i]`` (``value`` a list, a 1-D tensor or one
    number).

    >>> import scratchgrad as sg
    >>> sg._foreach_addcmul([sg.ones(2)], [sg.tensor([1.0, 2.0])], [sg.tensor([3.0, 4.0])], 0.5)
    (tensor([2.5000, 5.0000]),)
    """
    return tuple(_pointwise("addcmul", self, tensor1, tensor2, value))


def addcmul_(
    self: list[Tensor], tensor1: list[Tensor], tensor2: list[Tensor], value: Any = 1
) -> list[Tensor]:
    """``_foreach_addcmul`` in place: Adam's second moment, ``v.addcmul_(g, g, 1 - beta2)``.

    >>> import scratchgrad as sg
    >>> g = [sg.tensor([2.0])]
    >>> sg._foreach_addcmul_([sg.ones(1)], g, g, value=0.25)
    [tensor([2.])]
    """
    _pointwise("addcmul_", self, tensor1, tensor2, value)
    return self


def addcdiv(
    self: list[Tensor], tensor1: list[Tensor], tensor2: list[Tensor], value: Any = 1
) -> tuple[Tensor, ...]:
    """``self[i] + value[i] * tensor1[i] / tensor2[i]`` (``value`` a list, a 1-D tensor or one
    number).

    >>> import scratchgrad as sg
    >>> sg._foreach_addcdiv([sg.ones(2)], [sg.tensor([1.0, 2.0])], [sg.tensor([4.0, 4.0])], -1)
    (tensor([0.7500, 0.5000]),)
    """
    return tuple(_pointwise("addcdiv", self, tensor1, tensor2, value))


def addcdiv_(
    self: list[Tensor], tensor1: list[Tensor], tensor2: list[Tensor], value: Any = 1
) -> list[Tensor]:
    """``_foreach_addcdiv`` in place: Adam's update, ``p.addcdiv_(m, v.sqrt() + eps, -lr)``.

    >>> import scratchgrad as sg
    >>> sg._foreach_addcdiv_([sg.ones(1)], [sg.tensor([1.0])], [sg.tensor([2.0])], value=-0.5)
    [tensor([0.7500])]
    """
    _pointwise("addcdiv_", self, tensor1, tensor2, value)
    return self


def _unary(name: str) -> tuple[Any, Any]:
    """``_foreach_<name>`` and ``_foreach_<name>_``: the Tensor method ``name`` on each tensor,
    out of place (a tuple) and in place (the list back)."""

    def out_of_place(self: list[Tensor]) -> tuple[Tensor, ...]:
        _per_tensor(f"_foreach_{name}", self, None)
        return tuple(getattr(t, name)() for t in self)

    def in_place(self: list[Tensor]) -> list[Tensor]:
        _per_tensor(f"_foreach_{name}_", self, None)
        for t in self:
            getattr(t, f"{name}_")()
        return self

    out_of_place.__name__ = out_of_place.__qualname__ = name
    in_place.__name__ = in_place.__qualname__ = f"{name}_"
    out_of_place.__doc__ = (
        f"``self[i].{name}()`` for each tensor.\n\n    >>> import scratchgrad as sg\n"
        f"    >>> len(sg._foreach_{name}([sg.ones(2), sg.ones(3)]))\n    2\n    "
    )
    in_place.__doc__ = (
        f"``_foreach_{name}`` in place.\n\n    >>> import scratchgrad as sg\n"
        f"    >>> len(sg._foreach_{name}_([sg.ones(2), sg.ones(3)]))\n    2\n    "
    )
    return out_of_place, in_place


# the unary forms optimizers written with foreach ops call (Adam's sqrt, Lion's sign)
sqrt, sqrt_ = _unary("sqrt")
neg, neg_ = _unary("neg")
sign, sign_ = _unary("sign")
abs, abs_ = _unary("abs")  # noqa: A001 (torch's name)
exp, exp_ = _unary("exp")
reciprocal, reciprocal_ = _unary("reciprocal")
