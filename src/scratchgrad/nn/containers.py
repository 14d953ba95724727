"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList`` and
``ParameterDict``, after PyTorch's."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from scratchgrad.nn.module import Module, _indent
from scratchgrad.nn.parameter import Parameter
from scratchgrad.tensor import Tensor


class Sequential(Module):
    """Modules applied one after the other; built from modules or an ordered dict of them.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> net = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
    >>> net(sg.ones(5, 2)).shape
    scratchgrad.Size([5, 1])
    >>> net[0]
    Linear(in_features=2, out_features=8, bias=True)
    """

    def __init__(self, *args: Module) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def forward(self, input: Any) -> Any:
        for module in self._modules.values():
            input = module(input)
        return input

    def __getitem__(self, index: int | slice) -> Module:
        items = list(self._modules.items())
        if isinstance(index, slice):
            return type(self)(OrderedDict(items[index]))
        return items[_checked(index, len(items))][1]

    def __setitem__(self, index: int, module: Module) -> None:
        key = list(self._modules)[_checked(index, len(self))]
        self.add_module(key, module)

    def __delitem__(self, index: int | slice) -> None:
        _renumber(self, _deleted(list(self._modules.values()), index))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __add__(self, other: Sequential) -> Sequential:
        return Sequential().extend(self).extend(_sequential(other))

    def __iadd__(self, other: Sequential) -> Sequential:
        return self.extend(_sequential(other))

    def __mul__(self, times: int) -> Sequential:
        """A Sequential of this one's modules ``times`` over (the same objects, as PyTorch's)."""
        return Sequential().extend(list(self) * _repeats(self, times))

    __rmul__ = __mul__

    def __imul__(self, times: int) -> Sequential:
        return self.extend(list(self) * (_repeats(self, times) - 1))

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Put ``module`` before the one at ``index`` (``len(self)``: at the end), as PyTorch's;
        the modules are numbered from 0 again (PyTorch's raises a KeyError for names of an
        OrderedDict)."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        if not -len(self) <= index <= len(self):
            raise IndexError(f"Index out of range: {index}")
        modules = list(self._modules.values())
        modules.insert(index, module)
        _renumber(self, modules)
        return self

    def pop(self, index: int | slice) -> Module:
        module = self[index]
        del self[index]
        return module


class ModuleList(Module):
    """A list of modules, registered so their parameters are found; it has no ``forward``.

    >>> from scratchgrad import nn
    >>> layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
    >>> len(list(layers.parameters()))
    6
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index: int | slice) -> Module | ModuleList:
        values = list(self._modules.values())
        if isinstance(index, slice):
            return type(self)(values[index])
        return values[_checked(index, len(values))]

    def __setitem__(self, index: int, module: Module) -> None:
        self.add_module(str(_checked(index, len(self))), module)

    def __delitem__(self, index: int | slice) -> None:
        _renumber(self, _deleted(list(self._modules.values()), index))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, modules: Iterable[Module]) -> ModuleList:
        return ModuleList(self).extend(modules)

    def pop(self, index: int | slice) -> Module:
        module = self[index]
        del self[index]
        return module

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Put ``module`` before the one at ``index``, as Python's ``list.insert``: unlike
        PyTorch's, a negative index counts from the end (PyTorch's raises a KeyError, the
        entries already moved) and one past the end appends (PyTorch's registers it under that
        number, leaving a gap)."""
        values = list(self._modules.values())
        values.insert(index, module)
        _renumber(self, values)

    def __repr__(self) -> str:
        """As PyTorch: runs of identical entries are shown once, as "(0-2): 3 x Linear(...)"."""
        if not self._modules:
            return f"{self._get_name()}()"
        lines, start = [], 0
        reprs = [repr(m) for m in self._modules.values()]
        for i in range(1, len(reprs) + 1):
            if i < len(reprs) and reprs[i] == reprs[start]:
                continue
            label = f"({start})" if i - start == 1 else f"({start}-{i - 1}): {i - start} x"
            sep = ": " if i - start == 1 else " "
            lines.append(f"{label}{sep}{_indent(reprs[start], 2)}")
            start = i
        return f"{self._get_name()}(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules, registered under their keys.

    >>> from scratchgrad import nn
    >>> heads = nn.ModuleDict({"cls": nn.Linear(4, 3), "box": nn.Linear(4, 4)})
    >>> list(heads.keys())
    ['cls', 'box']
    """

    def __init__(self, modules: Mapping[str, Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        if key not in self._modules:
            raise KeyError(key)
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        pairs = modules.items() if isinstance(modules, (Mapping, ModuleDict)) else modules
        for key, module in pairs:
            self.add_module(key, module)

    def pop(self, key: str) -> Module:
        module = self._modules[key]
        del self[key]
        return module

    def clear(self) -> None:
        for key in list(self._modules):
            del self[key]


def _renumber(container: Module, modules: list[Module]) -> None:
    """Register ``modules`` as "0", "1", ... in place of the container's entries: as PyTorch's,
    a Sequential or ModuleList is numbered from 0 again after a deletion or an insertion."""
    for key in list(container._modules):
        delattr(container, key)
    for i, module in enumerate(modules):
        container.add_module(str(i), module)


def _deleted(modules: list[Module], index: int | slice) -> list[Module]:
    """``modules`` without the one at ``index`` (IndexError outside them), or the slice's."""
    del modules[index if isinstance(index, slice) else _checked(index, len(modules))]
    return modules


def _sequential(other: Any) -> Sequential:
    """``other``, which ``sequential + other`` needs to be a Sequential (PyTorch's error)."""
    if not isinstance(other, Sequential):
        raise ValueError(
            f"add operator supports only objects of Sequential class, but {type(other)} is given."
        )
    return other


def _repeats(container: Sequential, times: Any) -> int:
    """``times``, which ``container * times`` needs to be a positive int (PyTorch's errors)."""
    if not isinstance(times, int):
        raise TypeError(f"unsupported operand type(s) for *: {type(container)} and {type(times)}")
    if times <= 0:
        raise ValueError(f"Non-positive multiplication factor {times} for {type(container)}")
    return times


def _checked(index: int, length: int) -> int:
    """A non-negative index into a container of ``length``, or IndexError."""
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range")
    return index % length


class ParameterList(Module):
    """A list of parameters, registered as "0", "1", ... so ``parameters()`` and ``state_dict``
    find them; a plain Tensor put in becomes a ``Parameter``. It has no ``forward``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> params = nn.ParameterList([sg.ones(2, 3), nn.Parameter(sg.zeros(3))])
    >>> list(params.state_dict())
    ['0', '1']
    >>> params
    ParameterList(
        (0): Parameter containing: [scratchgrad.float32 of size 2x3]
        (1): Parameter containing: [scratchgrad.float32 of size 3]
    )
    """

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return ParameterList(self[i] for i in range(*index.indices(len(self))))
        return getattr(self, str(_checked(index, len(self))))

    def __setitem__(self, index: int, value: Any) -> None:
        setattr(self, str(_checked(index, len(self))), _as_parameter(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def append(self, value: Any) -> ParameterList:
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(
                "ParameterList.extend should be called with an iterable, but got "
                + type(values).__name__
            )
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({i}): {_describe(value)}" for i, value in enumerate(self))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters, registered under their keys; a plain Tensor put in
    becomes a ``Parameter``. As PyTorch, ``update`` with a plain (unordered) dict adds its keys
    in sorted order, and with an ordered dict, a ParameterDict or pairs in their own order.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> params = nn.ParameterDict({"scale": sg.ones(3), "bias": sg.zeros(3)})
    >>> list(params.state_dict())
    ['bias', 'scale']
    """

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, _string_key(key))

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, _string_key(key), _as_parameter(value))  # (which checks the name)
        self._keys[key] = None

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._keys)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        return ParameterDict(OrderedDict(self.items()))

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for key in list(self._keys):
            del self[key]

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        if not self._keys:
            raise KeyError("popitem(): dictionary is empty")
        key = next(reversed(self._keys))
        return key, self.pop(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default  # noqa: SIM401  (this is self.get)

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> ParameterDict:
        return ParameterDict((key, default) for key in keys)

    def keys(self) -> Iterable[str]:
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        return ((key, self[key]) for key in self._keys)

    def values(self) -> Iterable[Any]:
        return (self[key] for key in self._keys)

    def __or__(self, other: ParameterDict) -> ParameterDict:
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        merged = other.copy()
        merged.update(self)
        return merged

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self

    def update(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
        if not isinstance(parameters, Iterable):
            raise TypeError(
                "ParametersDict.update should be called with an iterable of key/value pairs, "
                f"but got {type(parameters).__name__}"
            )
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = list(parameters)
            for j, pair in enumerate(pairs):
                if not isinstance(pair, Iterable) or len(pair) != 2:
                    raise ValueError(
                        f"ParameterDict update sequence element #{j} must be a (key, value) "
                        f"pair, got {pair!r}"
                    )
        for key, value in pairs:
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(
            f"  ({key}): {_describe(value, legacy_type=True)}" for key, value in self.items()
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")


def _as_parameter(value: Any) -> Any:
    """A plain Tensor as a Parameter (sharing its memory); anything else as it is."""
    return (
        Parameter(value)
        if isinstance(value, Tensor) and not isinstance(value, Parameter)
        else value
    )


def _describe(value: Any, legacy_type: bool = False) -> str:
    """A ParameterList/ParameterDict entry as PyTorch prints it: kind, dtype (a ParameterDict's
    as its legacy type, "torch.FloatTensor") and size only."""
    if not isinstance(value, Tensor):
        return f"Object of type: {type(value).__name__}"
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    dtype = value.type() if legacy_type else str(value.dtype)
    device = "" if value.device.type == "cpu" else f" ({value.device})"
    size = "x".join(map(str, value.shape))
    return f"{kind} containing: [{dtype} of size {size}{device}]"


def _string_key(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(
            "Index given to ParameterDict cannot be used as a key as it is not a string (type "
            f"is '{type(key).__name__}')"
        )
    return key
