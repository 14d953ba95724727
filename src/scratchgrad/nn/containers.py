"""Containers: ``Sequential``, ``ModuleList`` and ``ModuleDict``, after PyTorch's."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from scratchgrad.nn.module import Module, _indent


class Sequential(Module):
    """Modules applied one after the other; built from modules or an ordered dict of them.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> net = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
    >>> net(sg.ones(5, 2)).shape
    (5, 1)
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
            return Sequential(OrderedDict(items[index]))
        return items[_checked(index, len(items))][1]

    def __setitem__(self, index: int, module: Module) -> None:
        key = list(self._modules)[_checked(index, len(self))]
        self.add_module(key, module)

    def __delitem__(self, index: int | slice) -> None:
        keys = list(self._modules)
        for key in keys[index] if isinstance(index, slice) else [keys[_checked(index, len(keys))]]:
            delattr(self, key)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self


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
            return ModuleList(values[index])
        return values[_checked(index, len(values))]

    def __setitem__(self, index: int, module: Module) -> None:
        self.add_module(str(_checked(index, len(self))), module)

    def __delitem__(self, index: int | slice) -> None:
        values = list(self._modules.values())
        del values[index if isinstance(index, slice) else _checked(index, len(values))]
        for key in list(self._modules):
            delattr(self, key)
        self.extend(values)  # renumber from 0, as PyTorch

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        values = list(self._modules.values())
        values.insert(index, module)
        for key in list(self._modules):
            delattr(self, key)
        self.extend(values)

    def __repr__(self) -> str:
        """As PyTorch: runs of identical entries are shown once, as "(0-2): 3 x Linear(...)"."""
        if not self._modules:
            return "ModuleList()"
        lines, start = [], 0
        reprs = [repr(m) for m in self._modules.values()]
        for i in range(1, len(reprs) + 1):
            if i < len(reprs) and reprs[i] == reprs[start]:
                continue
            label = f"({start})" if i - start == 1 else f"({start}-{i - 1}): {i - start} x"
            sep = ": " if i - start == 1 else " "
            lines.append(f"{label}{sep}{_indent(reprs[start], 2)}")
            start = i
        return "ModuleList(\n  " + "\n  ".join(lines) + "\n)"


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
        for key, module in modules.items() if isinstance(modules, Mapping) else modules:
            self.add_module(key, module)

    def pop(self, key: str) -> Module:
        module = self._modules[key]
        del self[key]
        return module


def _checked(index: int, length: int) -> int:
    """A non-negative index into a container of ``length``, or IndexError."""
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range")
    return index % length
