"""Pruning, as ``torch.nn.utils.prune``: pruning the parameter ``name`` of a module moves it to
``name_orig`` (the same Parameter), adds the buffer ``name_mask`` (1 kept, 0 pruned) and sets
the plain attribute ``name = name_orig * name_mask``, recomputed by a forward pre-hook before
each forward, so the gradient reaches ``name_orig`` through the mask. Pruning the same parameter
again combines the masks: the new method acts on what the old mask left (the entries still 1
for unstructured methods, the channels not yet all zero for structured ones), and the hook is
then a ``PruningContainer`` holding the methods in the order applied, as PyTorch's. ``remove``
makes the pruning permanent.

Differences from PyTorch: the random methods draw different (equally distributed) masks. Among
entries or channels of equal score, ``topk`` picks as PyTorch's does. A pruning that raises
leaves the module as it was (PyTorch's drops the hook of an earlier pruning of that tensor).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.creation import ones_like, rand, rand_like, zeros
from scratchgrad.nn.module import Module
from scratchgrad.nn.utils.convert_parameters import parameters_to_vector
from scratchgrad.tensor import RemovableHandle, Tensor

M = TypeVar("M", bound=Module)


class BasePruningMethod:
    """A way of computing a pruning mask; applied to a module it is the forward pre-hook that
    recomputes ``name`` from ``name_orig`` and ``name_mask``."""

    PRUNING_TYPE = "unstructured"  # or "structured" (whole channels), "global" (a given mask)
    _tensor_name: str

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for ``t`` (the importance scores), on top of ``default_mask``."""
        raise NotImplementedError

    def apply_mask(self, module: Module) -> Tensor:
        """The pruned tensor: ``name_orig * name_mask``, in the original's dtype (a mask from
        importance scores of another dtype has theirs)."""
        name = self._tensor_name
        orig = getattr(module, name + "_orig")
        return orig * getattr(module, name + "_mask").to(orig.dtype)

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @classmethod
    def apply(
        cls,
        module: Module,
        name: str,
        *args: Any,
        importance_scores: Tensor | None = None,
        **kwargs: Any,
    ) -> BasePruningMethod:
        """Prune ``module``'s ``name`` with ``cls(*args, **kwargs)``, ranking its entries by
        ``importance_scores`` (default: the tensor itself); returns the hook: the method, or
        the ``PruningContainer`` it joined if ``name`` was pruned before."""
        method = cls(*args, **kwargs)
        method._tensor_name = name
        weight = getattr(module, name)
        if not isinstance(weight, Tensor):  # (a layer's bias=False: None)
            raise TypeError(
                f"{cls.__name__}: {name} of {module} is {type(weight).__name__}, not a tensor "
                "to prune"
            )
        scores = weight if importance_scores is None else importance_scores
        if scores.shape != weight.shape:
            raise AssertionError(
                f"importance_scores should have the same shape as parameter {name} of "
                f"{module}, got {scores.shape} vs {weight.shape}"
            )
        old = _hook_entry(module, name)
        with no_grad():  # the mask is a constant (computed before the module changes)
            if old is None:
                mask = method.compute_mask(scores, default_mask=ones_like(weight))
            else:
                mask = _combined_mask(method, scores, getattr(module, name + "_mask").clone())
        if old is None:
            module.register_parameter(name + "_orig", weight)  # (a buffer raises here)
            delattr(module, name)
            hook = method
        else:
            RemovableHandle(module, "_forward_pre_hooks", old).remove()
            hook = old[0] if isinstance(old[0], PruningContainer) else PruningContainer(old[0])
            hook.add_pruning_method(method)
        module.register_buffer(name + "_mask", mask)
        hook(module, ())
        module.register_forward_pre_hook(hook)
        return hook

    def prune(
        self,
        t: Tensor,
        default_mask: Tensor | None = None,
        importance_scores: Tensor | None = None,
    ) -> Tensor:
        """``t`` times its mask (ranked by ``importance_scores``, default ``t``, on top of
        ``default_mask``, default all ones), with no module involved.

        >>> import scratchgrad as sg
        >>> L1Unstructured(amount=1).prune(sg.tensor([3.0, -1.0, 2.0]))
        tensor([3., -0., 2.])
        """
        scores = t if importance_scores is None else importance_scores
        if scores.shape != t.shape:
            raise AssertionError(
                "importance_scores should have the same shape as tensor t, got "
                f"{scores.shape} vs {t.shape}"
            )
        mask = ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(scores, default_mask=mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``name`` is the Parameter ``name_orig`` again, holding
        the pruned values; ``name_orig`` and ``name_mask`` go away."""
        name = self._tensor_name
        weight = self.apply_mask(module).detach()
        orig = getattr(module, name + "_orig")
        delattr(module, name)
        delattr(module, name + "_orig")
        delattr(module, name + "_mask")
        orig.data = weight
        setattr(module, name, orig)


class PruningContainer(BasePruningMethod):
    """The pruning methods applied to one tensor, in order: the hook of a tensor pruned more
    than once. Its mask is the last method's, computed on what the mask before it left.

    >>> from scratchgrad import nn
    >>> layer = l1_unstructured(nn.Linear(2, 3), "weight", 2)
    >>> container = RandomStructured.apply(layer, "weight", 1, dim=0)
    >>> [type(method).__name__ for method in container], container._tensor_name
    (['L1Unstructured', 'RandomStructured'], 'weight')
    """

    def __init__(self, *methods: BasePruningMethod) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(methods) == 1:  # (with several, as PyTorch's: set _tensor_name first)
            self._tensor_name = methods[0]._tensor_name
        for method in methods:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        """Append ``method``, which must act on this container's tensor."""
        if method is not None and not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(
                "Can only add pruning methods acting on the parameter named "
                f"'{self._tensor_name}' to PruningContainer {self}. Found '{method._tensor_name}'"
            )
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Iterator[BasePruningMethod]:
        return iter(self._pruning_methods)

    def __getitem__(self, index: int | slice) -> Any:
        return self._pruning_methods[index]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return _combined_mask(self._pruning_methods[-1], t, default_mask)


def _hook_entry(module: Module, name: str) -> tuple | None:
    """The entry (hook, with_kwargs) of the pruning hook on ``module``'s ``name``, if any."""
    for entry in module._forward_pre_hooks:
        if isinstance(entry[0], BasePruningMethod) and entry[0]._tensor_name == name:
            return entry
    return None


def _combined_mask(method: BasePruningMethod, scores: Tensor, mask: Tensor) -> Tensor:
    """``mask`` with ``method`` applied to the part it left unpruned, as PyTorch's
    ``PruningContainer``: the entries still 1, the channels not all zero, or all of it."""
    if method.PRUNING_TYPE == "unstructured":
        part = mask == 1
    elif method.PRUNING_TYPE == "structured":
        dim = _channel_dim(scores, method.dim)
        others = tuple(d for d in range(scores.ndim) if d != dim)
        part = (slice(None),) * dim + (mask.sum(others) != 0,)
    elif method.PRUNING_TYPE == "global":
        part = (slice(None),) * scores.ndim
    else:
        raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
    new_mask = mask.to(scores.dtype)
    new_mask[part] = method.compute_mask(scores[part], default_mask=mask[part]).to(scores.dtype)
    return new_mask


# ---- amounts ---------------------------------------------------------------------------------


def _check_amount(amount: Any) -> None:
    """PyTorch's errors for an amount that is neither a count nor a fraction."""
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
        not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0
    ):
        raise ValueError(
            f"amount={amount} should either be a float in the range [0, 1] or a "
            "non-negative integer"
        )


def _count(amount: int | float, size: int) -> int:
    """How many of ``size`` entries (or channels) to prune: ``amount`` itself if an int, else
    ``round(amount * size)`` (Python's round: half to even, as PyTorch)."""
    count = amount if isinstance(amount, numbers.Integral) else round(amount * size)
    if count > size:
        raise ValueError(
            f"amount={count} should be smaller than the number of parameters to prune={size}"
        )
    return int(count)


# ---- the methods -----------------------------------------------------------------------------


class Identity(BasePruningMethod):
    """Prune nothing: the mask is all ones (the reparametrization alone)."""

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask


class CustomFromMask(BasePruningMethod):
    """Prune where the given ``mask`` is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise AssertionError(
                f"default_mask shape {default_mask.shape} must match self.mask shape "
                f"{self.mask.shape}"
            )
        return default_mask * self.mask.to(default_mask.dtype)


class _Unstructured(BasePruningMethod):
    """Prune the ``amount`` entries of lowest ``scores(t)``."""

    def __init__(self, amount: int | float) -> None:
        _check_amount(amount)
        self.amount = amount

    def scores(self, t: Tensor) -> Tensor:
        raise NotImplementedError

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        count = _count(self.amount, t.numel())
        if count and isinstance(self.amount, bool):  # (PyTorch's topk refuses k=True)
            raise TypeError(
                f"{type(self).__name__}: amount=True is a bool, not a count of entries to prune "
                "(PyTorch's topk(): argument 'k' must be int, not bool)"
            )
        mask = default_mask.reshape(-1).clone()
        if count:
            mask[self.scores(t).reshape(-1).topk(count, largest=False).indices] = 0
        return mask.reshape(default_mask.shape)


class L1Unstructured(_Unstructured):
    """Prune the ``amount`` entries of smallest absolute value (``amount``: a count, or a
    fraction of the entries)."""

    def scores(self, t: Tensor) -> Tensor:
        return t.abs()


class RandomUnstructured(_Unstructured):
    """Prune ``amount`` entries chosen at random."""

    def scores(self, t: Tensor) -> Tensor:
        return rand_like(t)


def _channel_dim(t: Tensor, dim: int) -> int:
    """``dim`` wrapped, with PyTorch's errors for a tensor without channels or a bad ``dim``."""
    if t.ndim <= 1:
        raise ValueError(
            "Structured pruning can only be applied to multidimensional tensors. Found tensor "
            f"of shape {t.shape} with {t.ndim} dims"
        )
    if not -t.ndim <= dim < t.ndim:
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")
    return dim % t.ndim


class _Structured(BasePruningMethod):
    """Prune ``amount`` whole channels (slices along ``dim``), chosen by ``channels_to_keep``."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def channels_to_keep(self, t: Tensor, dim: int, count: int) -> Tensor:
        """A boolean per channel: False for the ``count`` channels to prune."""
        raise NotImplementedError

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        dim = _channel_dim(t, self.dim)
        size = t.shape[dim]
        count = _count(self.amount, size)
        if count == 0:
            return default_mask
        keep = self.channels_to_keep(t, dim, count).to(t.dtype)
        return keep.reshape([size if d == dim else 1 for d in range(t.ndim)]) * default_mask


class LnStructured(_Structured):
    """Prune the ``amount`` channels along ``dim`` of smallest ``n``-norm (``n`` as
    ``torch.norm``'s ``p``)."""

    def __init__(self, amount: int | float, n: float | str, dim: int = -1) -> None:
        super().__init__(amount, dim)
        self.n = n

    def channels_to_keep(self, t: Tensor, dim: int, count: int) -> Tensor:
        norms = t.norm(self.n, dim=tuple(d for d in range(t.ndim) if d != dim))
        keep = zeros(t.shape[dim], dtype=bool)
        keep[norms.topk(t.shape[dim] - count).indices] = True
        return keep


class RandomStructured(_Structured):
    """Prune ``amount`` channels along ``dim`` chosen at random."""

    def channels_to_keep(self, t: Tensor, dim: int, count: int) -> Tensor:
        draws = rand(t.shape[dim])
        return draws > draws.kthvalue(count).values


# ---- the functions ---------------------------------------------------------------------------


def identity(module: M, name: str) -> M:
    """Prune nothing, but reparametrize ``name`` as pruning does (a mask of ones).

    >>> from scratchgrad import nn
    >>> sorted(identity(nn.Linear(2, 3), "weight").state_dict())
    ['bias', 'weight_mask', 'weight_orig']
    """
    Identity.apply(module, name)
    return module


def random_unstructured(module: M, name: str, amount: int | float) -> M:
    """Prune ``amount`` entries of ``name`` (a count, or a fraction) chosen at random.

    >>> from scratchgrad import nn
    >>> int((random_unstructured(nn.Linear(2, 3), "weight", 4).weight_mask == 0).sum())
    4
    """
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(
    module: M, name: str, amount: int | float, importance_scores: Tensor | None = None
) -> M:
    """Prune the ``amount`` entries of ``name`` (a count, or a fraction rounded as Python's
    ``round``) of smallest absolute value (of ``importance_scores`` when given).

    >>> import scratchgrad as sg
    >>> layer = sg.nn.Linear(3, 1)
    >>> layer.weight.data = sg.tensor([[0.5, 0.1, 2.0]])
    >>> l1_unstructured(layer, "weight", amount=0.34).weight
    tensor([[0.5000, 0.0000, 2.0000]], grad_fn=<MulBackward0>)
    """
    L1Unstructured.apply(module, name, amount, importance_scores=importance_scores)
    return module


def random_structured(module: M, name: str, amount: int | float, dim: int) -> M:
    """Prune ``amount`` channels (slices along ``dim``) of ``name`` chosen at random.

    >>> from scratchgrad import nn
    >>> layer = random_structured(nn.Linear(2, 4), "weight", amount=2, dim=0)
    >>> int((layer.weight_mask.sum(1) == 0).sum())
    2
    """
    RandomStructured.apply(module, name, amount, dim=dim)
    return module


def ln_structured(
    module: M,
    name: str,
    amount: int | float,
    n: float | str,
    dim: int,
    importance_scores: Tensor | None = None,
) -> M:
    """Prune the ``amount`` channels (slices along ``dim``) of ``name`` of smallest
    ``n``-norm.

    >>> import scratchgrad as sg
    >>> layer = sg.nn.Linear(2, 2, bias=False)
    >>> layer.weight.data = sg.tensor([[1.0, 1.0], [3.0, 0.0]])
    >>> ln_structured(layer, "weight", amount=1, n=2, dim=0).weight_mask
    tensor([[0., 0.],
            [1., 1.]])
    """
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: M, name: str, mask: Tensor) -> M:
    """Prune the entries of ``name`` where ``mask`` is 0.

    >>> import scratchgrad as sg
    >>> layer = custom_from_mask(sg.nn.Linear(2, 1), "weight", sg.tensor([[0.0, 1.0]]))
    >>> (layer.weight == 0).tolist()
    [[True, False]]
    """
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(
    parameters: Iterable[tuple[Module, str]],
    pruning_method: type[BasePruningMethod],
    importance_scores: dict | None = None,
    **kwargs: Any,
) -> None:
    """Prune the ``(module, name)`` pairs of ``parameters`` as one vector, with
    ``pruning_method(**kwargs)`` (an unstructured method: ``amount`` counts over all of them);
    ``importance_scores`` maps a pair to the scores to rank it by instead of its values.

    >>> import scratchgrad as sg
    >>> a, b = sg.nn.Linear(2, 2), sg.nn.Linear(2, 2)
    >>> global_unstructured([(a, "weight"), (b, "weight")], L1Unstructured, amount=3)
    >>> int((a.weight_mask == 0).sum() + (b.weight_mask == 0).sum())
    3
    """
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = {} if importance_scores is None else importance_scores
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(
            'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
            f"{pruning_method} of type {method.PRUNING_TYPE}"
        )
    tensors = [getattr(module, name) for module, name in parameters]
    with no_grad():
        scores = parameters_to_vector(
            importance_scores.get(pair, t) for pair, t in zip(parameters, tensors)
        )
        masks = parameters_to_vector(
            getattr(module, name + "_mask") if hasattr(module, name + "_mask") else ones_like(t)
            for (module, name), t in zip(parameters, tensors)
        )
        mask = _combined_mask(method, scores, masks)
    start = 0
    for (module, name), t in zip(parameters, tensors):
        custom_from_mask(module, name, mask[start : start + t.numel()].reshape(t.shape))
        start += t.numel()


def remove(module: M, name: str) -> M:
    """Make the pruning of ``name`` permanent: ``name`` is a Parameter again, holding the
    pruned values, and ``name_orig``, ``name_mask`` and the hook are gone.

    >>> from scratchgrad import nn
    >>> list(remove(identity(nn.Linear(2, 3), "weight"), "weight").state_dict())
    ['bias', 'weight']
    """
    entry = _hook_entry(module, name)
    if entry is None:
        raise ValueError(
            f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed"
        )
    RemovableHandle(module, "_forward_pre_hooks", entry).remove()
    entry[0].remove(module)
    return module


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or any module inside it has a pruning hook.

    >>> from scratchgrad import nn
    >>> net = nn.Sequential(nn.Linear(2, 2))
    >>> is_pruned(net), is_pruned(identity(net[0], "bias"))
    (False, True)
    """
    return any(
        isinstance(hook, BasePruningMethod)
        for submodule in module.modules()
        for hook, _ in submodule._forward_pre_hooks
    )
