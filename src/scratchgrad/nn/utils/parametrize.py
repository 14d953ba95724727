"""``torch.nn.utils.parametrize``: a module's parameter or buffer computed on each access from
the tensors it is parametrized by (a symmetric matrix from its upper triangle, a positive weight
from its logarithm, an orthogonal matrix from a skew-symmetric one).

``register_parametrization(module, "weight", p)`` moves the parameter into
``module.parametrizations.weight.original`` (a ``ParametrizationList``, which also holds ``p``)
and swaps the module's class for a subclass ``Parametrized<Class>`` whose ``weight`` is a class
attribute computing ``p(original)`` on each read; assigning to it goes through
``p.right_inverse``. Names, ``state_dict`` keys, errors and ``repr`` are PyTorch's.

>>> import scratchgrad as sg
>>> from scratchgrad import nn
>>> class Symmetric(nn.Module):
...     def forward(self, X):
...         return X.triu() + X.triu(1).mT
>>> layer = register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
>>> bool((layer.weight == layer.weight.T).all()), list(layer.state_dict())
(True, ['bias', 'parametrizations.weight.original'])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from copy import deepcopy
from typing import Any, TypeVar

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.autograd.graph import increment_version
from scratchgrad.nn.containers import ModuleDict, ModuleList
from scratchgrad.nn.module import Module
from scratchgrad.nn.parameter import Parameter
from scratchgrad.tensor import Tensor

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]

M = TypeVar("M", bound=Module)

# cached(): how many of its contexts are open, and the tensors computed in them
_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextmanager
def cached() -> Iterator[None]:
    """Inside this context each parametrized tensor is computed once, at its first read, and
    the same tensor is returned after that (one graph for a weight an RNN reads at every step);
    the cache is emptied when the outermost context closes.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> class Double(nn.Module):
    ...     def forward(self, X):
    ...         return 2 * X
    >>> layer = register_parametrization(nn.Linear(2, 2), "weight", Double())
    >>> with cached():
    ...     layer.weight is layer.weight
    True
    >>> layer.weight is layer.weight
    False
    """
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module: Module, name: str, tensor: Tensor) -> None:
    if isinstance(tensor, Parameter):
        module.register_parameter(name, tensor)
    else:
        module.register_buffer(name, tensor)


def _set(dest: Tensor, src: Tensor) -> None:
    """``dest`` takes ``src``'s memory (and shape) in place, as PyTorch's ``set_``: the object
    stays, so an optimizer that holds it goes on updating it."""
    dest.array = src.array
    increment_version(dest)  # a graph that saved the old values must not use the new ones


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor of a module, in the order they were registered, and
    the tensor(s) they are computed from: ``original``, or ``original0``, ``original1``, ...
    when the first parametrization's ``right_inverse`` returns a sequence (parameters if the
    tensor was one, else buffers). Made by ``register_parametrization``, not by users.

    ``unsafe=True``: the parametrization may change the tensor's shape and dtype (not checked).
    """

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                # one that has none, or raises NotImplementedError, is the identity here
                if hasattr(module, "right_inverse"):
                    with suppress(NotImplementedError):
                        new = module.right_inverse(new)
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(new).__name__}"
            )
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            self._register_original(original, new)
        else:
            self._register_originals(original, new)
        if not self.unsafe:
            _check_same_kind(self(), original_shape, original_dtype)

    def _register_original(self, original: Tensor, new: Tensor) -> None:
        if original.dtype != new.dtype:
            raise ValueError(
                "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                f"original.dtype: {original.dtype.name}\n"
                f"right_inverse(original).dtype: {new.dtype.name}"
            )
        if original.device != new.device:
            raise ValueError(
                "When `right_inverse` outputs one tensor, it may not change the device.\n"
                f"original.device: {original.device}\n"
                f"right_inverse(original).device: {new.device}"
            )
        with no_grad():  # the same object: no need to hand the optimizer a new parameter
            _set(original, new)
        _register_parameter_or_buffer(self, "original", original)

    def _register_originals(self, original: Tensor, new: Sequence) -> None:
        for i, tensor in enumerate(new):
            if not isinstance(tensor, Tensor):
                raise ValueError(
                    "'right_inverse' must return a Tensor or a Sequence of tensors "
                    f"(list, tuple...). Got element {i} of the sequence with type "
                    f"{type(tensor).__name__}."
                )
            # new parameters: as PyTorch, the user hands them to the optimizer afterwards
            if isinstance(original, Parameter):
                tensor = Parameter(tensor, original.requires_grad)
            tensor.requires_grad_(original.requires_grad)
            _register_parameter_or_buffer(self, f"original{i}", tensor)

    def right_inverse(self, value: Tensor) -> None:
        """Run the parametrizations' ``right_inverse`` on ``value``, last registered first,
        and store the result in ``original`` (in place) or ``original0``, ``original1``, ...
        What ``module.weight = value`` does."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(
                        f"parametrization {type(module).__name__} does not implement right_inverse."
                    )
                value = module.right_inverse(value)
            if self.is_tensor:
                self._set_original(value)
            else:
                self._set_originals(value)

    def _set_original(self, value: Any) -> None:
        if not isinstance(value, Tensor):
            raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
        if value.dtype != self.original.dtype:
            raise ValueError(
                f"The tensor returned by `right_inverse` has dtype {value.dtype.name} "
                f"while `original` has dtype {self.original.dtype.name}"
            )
        _set(self.original, value)

    def _set_originals(self, value: Any) -> None:
        if not isinstance(value, Sequence):
            raise ValueError(
                f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}."
            )
        if len(value) != self.ntensors:
            raise ValueError(
                "'right_inverse' must return a sequence of tensors of length "
                f"{self.ntensors}. Got a sequence of length {len(value)}."
            )
        for i, tensor in enumerate(value):
            original = getattr(self, f"original{i}")
            if not isinstance(tensor, Tensor):
                raise ValueError(
                    "'right_inverse' must return a sequence of tensors. Got element "
                    f"{i} of type {type(tensor).__name__}."
                )
            if original.dtype != tensor.dtype:
                raise ValueError(
                    f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype.name} "
                    f"while `original{i}` has dtype {original.dtype.name}"
                )
            _set(original, tensor)

    def forward(self) -> Tensor:
        first, *rest = self
        if self.is_tensor:
            x = first(self.original)
        else:
            x = first(*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in rest:
            x = module(x)
        return x


def _check_same_kind(out: Any, shape: tuple, dtype: Any) -> None:
    """A registered parametrization must give a tensor of the original's shape and dtype."""
    if not isinstance(out, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(out).__name__}.")
    if out.dtype != dtype:
        raise ValueError(
            "Registering a parametrization may not change the dtype of the tensor, unless "
            "`unsafe` flag is enabled.\n"
            f"unparametrized dtype: {dtype}\n"
            f"parametrized dtype: {out.dtype.name}"
        )
    if out.shape != shape:
        raise ValueError(
            "Registering a parametrization may not change the shape of the tensor, unless "
            "`unsafe` flag is enabled.\n"
            f"unparametrized shape: {shape}\n"
            f"parametrized shape: {out.shape}"
        )


class _Parametrized:
    """The class attribute ``<name>`` of a parametrized module's class: reading it computes
    ``module.parametrizations[name]()`` (once per ``cached()`` context inside one), assigning
    to it runs the parametrizations' ``right_inverse``. As PyTorch's property, it takes
    precedence over the instance's ``__dict__``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, module: Module | None, owner: type | None = None) -> Any:
        if module is None:
            return self
        parametrization = module.parametrizations[self.name]
        if not _cache_enabled:
            return parametrization()
        # NOTE: keyed by the module read, where PyTorch's key is the module registered on, so
        # a deepcopy read inside cached() does not get the original module's tensor
        key = (id(module), self.name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def __set__(self, module: Module, value: Any) -> None:
        module.parametrizations[self.name].right_inverse(value)


def _refuse_pickling(self: Module) -> None:
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(). See:\n"
        "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
        "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training"
    )


def _deepcopy(self: Module, memo: dict) -> Module:
    """A plain deepcopy of the instance's ``__dict__`` (pickling's path is refused)."""
    if id(self) in memo:
        return memo[id(self)]
    replica = type(self).__new__(type(self))
    memo[id(self)] = replica
    replica.__dict__ = deepcopy(self.__dict__, memo)
    return replica


def _setattr(self: Module, name: str, value: Any) -> None:
    """PyTorch refuses a Parameter for a parametrized name ("attribute already exists", from
    ``register_parameter``); scratchgrad's ``Module.__setattr__`` would register it beside the
    parametrization. Anything else goes on to the original class's ``__setattr__``."""
    if isinstance(value, Parameter) and isinstance(getattr(type(self), name, None), _Parametrized):
        raise KeyError(f"attribute '{name}' already exists")
    type(self).__bases__[0].__setattr__(self, name, value)


def _inject_new_class(module: Module) -> None:
    """Swap ``module``'s class for a new subclass to hold the parametrized attributes."""
    cls = module.__class__
    namespace = {"__getstate__": _refuse_pickling, "__setattr__": _setattr}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def register_parametrization(
    module: M, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> M:
    """Parametrize ``module.<tensor_name>`` (a parameter or buffer): from now on reading it
    returns ``parametrization(original)``, with the original tensor kept in
    ``module.parametrizations[tensor_name].original`` (``original0``, ``original1``, ... when
    ``parametrization.right_inverse`` returns a sequence). Registering on a tensor that is
    parametrized already chains the new parametrization after the others.

    If ``parametrization`` has a ``right_inverse``, it computes the original from the current
    value at registration, and from the value assigned by ``module.<tensor_name> = value``.
    Unless ``unsafe``, the parametrization must keep the tensor's shape and dtype. Returns the
    module, as PyTorch.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> class Positive(nn.Module):
    ...     def forward(self, X):
    ...         return X.exp()
    ...
    ...     def right_inverse(self, Y):
    ...         return Y.log()
    >>> layer = nn.Linear(2, 2)
    >>> _ = nn.init.ones_(layer.weight)  # the original becomes its log: 0
    >>> layer = register_parametrization(layer, "weight", Positive())
    >>> layer.weight = sg.full((2, 2), 3.0)
    >>> layer.parametrizations.weight.original
    Parameter containing:
    tensor([[1.0986, 1.0986],
            [1.0986, 1.0986]], requires_grad=True)
    >>> type(layer).__name__, is_parametrized(layer, "weight")
    ('ParametrizedLinear', True)
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_chained(module, tensor_name, parametrization)
        parametrizations = module.parametrizations[tensor_name]
        parametrizations.append(parametrization)
        parametrizations.unsafe |= unsafe  # once unsafe, always unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        setattr(type(module), tensor_name, _Parametrized(tensor_name))
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element "
            f"with name '{tensor_name}'"
        )
    return module


def _check_chained(module: Module, tensor_name: str, parametrization: Module) -> None:
    """A parametrization chained after others maps tensors of the current value's shape and
    dtype to such tensors, and so does its ``right_inverse`` (if it has one)."""
    Y = getattr(module, tensor_name)
    X = parametrization(Y)
    if not isinstance(X, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(X).__name__}.")
    unsafe = ", unless the `unsafe` flag is enabled."
    _check_like(
        X,
        Y,
        tensor_name,
        "Registering a parametrization may not change the {} of the tensor" + unsafe,
        f"parametrization(module.{tensor_name}).{{}}",
    )
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        Z = parametrization.right_inverse(X)
    except NotImplementedError:
        return
    if not isinstance(Z, Tensor):
        raise ValueError(
            f"parametrization.right_inverse must return a tensor. Got: {type(Z).__name__}"
        )
    _check_like(
        Z,
        Y,
        tensor_name,
        "The tensor returned by parametrization.right_inverse must have the same {} as "
        f"module.{tensor_name}" + unsafe,
        "returned {}",
    )


def _check_like(out: Tensor, Y: Tensor, tensor_name: str, message: str, label: str) -> None:
    """``out`` has ``Y``'s dtype and shape, or PyTorch's ValueError: ``message`` and ``label``
    (what ``out`` is) with "dtype" or "shape" in their ``{}``, then both values."""
    for kind in ("dtype", "shape"):
        expected, got = getattr(Y, kind), getattr(out, kind)
        if got != expected:
            raise ValueError(
                f"{message.format(kind)}\nmodule.{tensor_name}.{kind}: {expected}\n"
                f"{label.format(kind)}: {got}"
            )


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization on ``tensor_name`` (on any tensor if None).

    >>> from scratchgrad import nn
    >>> is_parametrized(nn.Linear(2, 2))
    False
    """
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: M, tensor_name: str, leave_parametrized: bool = True) -> M:
    """Remove the parametrizations on ``module.<tensor_name>``: it becomes a parameter (or
    buffer) again, holding its current parametrized value (``leave_parametrized=True``, in
    the original's object, so an optimizer holding it keeps working) or the original tensor
    (``leave_parametrized=False``; only for one original). When no parametrization is left,
    the module gets its class back. Returns the module.

    >>> from scratchgrad import nn
    >>> class Double(nn.Module):
    ...     def forward(self, X):
    ...         return 2 * X
    >>> layer = register_parametrization(nn.Linear(2, 2), "weight", Double())
    >>> layer = remove_parametrizations(layer, "weight")
    >>> type(layer).__name__, list(layer.state_dict())
    ('Linear', ['bias', 'weight'])
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                _set(original, getattr(module, tensor_name))
    elif leave_parametrized:
        # with grad: whether any original requires grad decides parameter or buffer
        value = getattr(module, tensor_name)
        original = Parameter(value) if value.requires_grad else value
    else:
        raise ValueError(
            "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
            "parametrized in terms of a sequence of tensors."
        )
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before any parametrization was registered (its class if none).

    >>> from scratchgrad import nn
    >>> type_before_parametrizations(nn.Linear(2, 2)).__name__
    'Linear'
    """
    if is_parametrized(module):
        return type(module).__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(
    from_module: Module, to_module: M, tensor_name: str | None = None
) -> M:
    """Register ``from_module``'s parametrizations of ``tensor_name`` (of every parametrized
    tensor if None) on ``to_module``, then make ``to_module``'s originals the very tensors of
    ``from_module`` (shared, as the parametrization modules are). A tensor ``to_module``
    lacks is first made a Parameter holding ``from_module``'s parametrized value. Does
    nothing if ``from_module`` is not parametrized. Returns ``to_module``, as PyTorch.

    >>> from scratchgrad import nn
    >>> class Double(nn.Module):
    ...     def forward(self, X):
    ...         return 2 * X
    >>> source = register_parametrization(nn.Linear(2, 2), "weight", Double())
    >>> target = transfer_parametrizations_and_params(source, nn.Linear(2, 2))
    >>> target.parametrizations.weight.original is source.parametrizations.weight.original
    True
    """
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        n = source.ntensors
        for key in ["original"] if source.is_tensor else [f"original{i}" for i in range(n)]:
            setattr(target, key, getattr(source, key))
    return to_module
