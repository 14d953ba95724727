"""Modules as pure functions of their state: ``functional_call`` and ``stack_module_state``,
after ``torch.func``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from scratchgrad.nn.module import Module, mark_changed
from scratchgrad.tensor import Tensor, stack


def functional_call(
    module: Module,
    parameter_and_buffer_dicts: Mapping[str, Tensor] | Sequence[Mapping[str, Tensor]],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """Call ``module(*args, **kwargs)`` with some of its parameters and buffers replaced by the
    tensors given by name (``"0.weight"``), as ``torch.func.functional_call``.

    The module is left as it was afterwards. The given tensors can be anything: leaves to
    differentiate, tensors batched by ``vmap`` (a population of networks in one call), or
    stacked states from ``stack_module_state``. With ``tie_weights``, a parameter registered
    under two names is replaced under both when one is given; with ``strict``, every parameter
    and buffer must be given, and no other name.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> layer = nn.Linear(2, 1)
    >>> functional_call(layer, {"weight": sg.ones(1, 2), "bias": sg.zeros(1)}, (sg.ones(2),))
    tensor([2.])
    """
    if isinstance(parameter_and_buffer_dicts, Mapping):
        given = dict(parameter_and_buffer_dicts)
    else:
        given = {}
        for entries in parameter_and_buffer_dicts:
            repeated = given.keys() & entries.keys()
            if repeated:
                raise ValueError(
                    f"functional_call: {sorted(repeated)} appear in more than one dict"
                )
            given.update(entries)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _replaced(module, _with_tied(module, given) if tie_weights else given, strict):
        return module(*args, **(kwargs or {}))


def stack_module_state(models: Sequence[Module]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """The parameters and buffers of same-shaped ``models``, each stacked along a new first dim
    of size ``len(models)``: ``(params, buffers)``, as ``torch.func.stack_module_state``.

    The stacked parameters are new leaves (they require grad where the originals do), so one
    optimizer step over them trains the whole population.

    >>> from scratchgrad import nn
    >>> params, buffers = stack_module_state([nn.Linear(2, 3) for _ in range(5)])
    >>> params["weight"].shape, buffers
    (scratchgrad.Size([5, 3, 2]), {})
    """
    if not models:
        raise RuntimeError("stack_module_state: expected at least one model, got an empty list")
    first = models[0]
    for i, model in enumerate(models[1:], 1):
        if type(model) is not type(first) or model.training != first.training:
            raise RuntimeError(
                f"stack_module_state: model {i} is a {type(model).__name__} in "
                f"{'training' if model.training else 'eval'} mode, model 0 a "
                f"{type(first).__name__} in {'training' if first.training else 'eval'} mode; "
                "expected the same class and mode"
            )
    return (
        _stacked(models, "named_parameters", keep_grad=True),
        _stacked(models, "named_buffers", keep_grad=False),
    )


def _stacked(models: Sequence[Module], members: str, keep_grad: bool) -> dict[str, Tensor]:
    names = [dict(getattr(model, members)()) for model in models]
    stacked = {}
    for name, first in names[0].items():
        for i, entries in enumerate(names):
            if name not in entries:  # a KeyError, as PyTorch's lookup of model 0's names raises
                raise KeyError(f"stack_module_state: model {i} has no entry {name!r}")
            if entries[name].shape != first.shape:
                raise RuntimeError(
                    f"stack_module_state: {name!r} of model {i} has shape "
                    f"{tuple(entries[name].shape)}, of model 0 {tuple(first.shape)}; all models "
                    "must have the same shapes"
                )
            if entries[name].requires_grad != first.requires_grad:
                raise RuntimeError(
                    f"stack_module_state: {name!r} of model {i} has requires_grad="
                    f"{entries[name].requires_grad}, of model 0 {first.requires_grad}; expected "
                    "the same .requires_grad in every model"
                )
        out = stack([entries[name].detach() for entries in names])
        stacked[name] = out.requires_grad_() if keep_grad and first.requires_grad else out
    return stacked


def _with_tied(module: Module, given: dict[str, Tensor]) -> dict[str, Tensor]:
    """``given``, plus every other name under which a given parameter is registered."""
    names_of: dict[int, list[str]] = {}
    for name, param in module.named_parameters(remove_duplicate=False):
        names_of.setdefault(id(param), []).append(name)
    owners = dict(module.named_parameters(remove_duplicate=False))
    tied = dict(given)
    for name, value in given.items():
        if name in owners:
            for other in names_of[id(owners[name])]:
                if other in given and given[other] is not value:
                    raise ValueError(
                        f"functional_call: {name!r} and {other!r} are tied in the module but "
                        "were given different values"
                    )
                tied.setdefault(other, value)
    return tied


@contextlib.contextmanager
def _replaced(module: Module, given: dict[str, Tensor], strict: bool) -> Iterator[None]:
    """Put ``given`` in place of the module's entries of those names; restore them on exit."""
    known = {name for name, _ in module.named_parameters(remove_duplicate=False)} | {
        name for name, _ in module.named_buffers(remove_duplicate=False)
    }
    if strict and known != given.keys():
        missing, unexpected = sorted(known - given.keys()), sorted(given.keys() - known)
        raise RuntimeError(
            f"functional_call: error(s) in reparametrizing for {type(module).__name__}: "
            f"unexpected key(s) {unexpected}, missing key(s) {missing}"
        )
    for value in given.values():  # (None removes one, as PyTorch's)
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"functional_call: {value!r} is not an instance of scratchgrad.Tensor")
    previous = []
    try:
        for name, value in given.items():
            owner, _, attr = name.rpartition(".")
            child = module.get_submodule(owner) if owner else module
            previous.append((child, attr, _swap(child, attr, value)))
    except BaseException:
        _restore(previous)
        raise
    try:
        yield
    finally:
        _restore(previous)


_ABSENT = object()


def _swap(module: Module, name: str, value: Any) -> tuple[str | None, Any]:
    """Set ``name`` to ``value`` in the store that holds it (and as the attribute, which the
    module reads first); return where it was and what it held. The module is stamped as
    changed, as by a ``setattr``: a jitted step or compiled module recorded with the old
    tensors would replay them."""
    mark_changed(module)
    for store in ("_parameters", "_buffers"):
        entries = module.__dict__[store]
        if name in entries:
            old = entries[name]
            entries[name] = value
            object.__setattr__(module, name, value)
            return store, old
    old = module.__dict__.get(name, _ABSENT)  # not a parameter or buffer: a plain attribute
    object.__setattr__(module, name, value)
    return None, old


def _restore(previous: list) -> None:
    for module, name, (store, old) in reversed(previous):
        mark_changed(module)  # (see _swap)
        if store is not None:
            module.__dict__[store][name] = old
        if old is _ABSENT:
            object.__delattr__(module, name)
        else:
            object.__setattr__(module, name, old)
