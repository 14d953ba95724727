"""``Module``: the base class of layers and models, after ``torch.nn.Module``.

A module registers what it is given as attributes: a ``Parameter`` goes into ``_parameters``, a
``Module`` into ``_modules``, a tensor passed to ``register_buffer`` into ``_buffers``, each in the
order of assignment, so ``named_parameters()`` and ``state_dict()`` list entries in the order
PyTorch does and with its key names ("0.weight", "bn.running_mean", ...).

Unlike PyTorch, every registered entry is kept in the instance ``__dict__`` too, so reading
``self.weight`` in ``forward`` is a plain attribute lookup instead of a call to the
``__getattr__`` fallback, a cost a training loop pays on every access (docs/benchmarks.md).
``__setattr__`` and ``__delattr__`` keep the two in step; ``__getattr__`` still finds entries
put straight into the dicts, as PyTorch code sometimes does.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from functools import partial
from typing import Any, NoReturn

from scratchgrad import backend
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.function import Function
from scratchgrad.autograd.grad_mode import is_grad_enabled, no_grad
from scratchgrad.autograd.graph import increment_version
from scratchgrad.backend import xp
from scratchgrad.dtypes import (
    check_memory_format,
    requested_device_and_dtype,
    split_to_arguments,
)
from scratchgrad.nn.parameter import Buffer, Parameter
from scratchgrad.tensor import RemovableHandle, Size, Tensor, new_shape


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys missing from the state dict and those it had
    that the module has not; printed as PyTorch's (whose class this is named after).

    >>> _IncompatibleKeys([], []), _IncompatibleKeys(["bias"], [])
    (<All keys matched successfully>, _IncompatibleKeys(missing_keys=['bias'], unexpected_keys=[]))
    """

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


_STORES = ("_parameters", "_buffers", "_modules")
_EXTRA_STATE = "_extra_state"  # a module's key for its get_extra_state() in a state dict
# the load_state_dict under way (in this thread), whose matching Module._load_from_state_dict does
_LOADING: ContextVar[_Load | None] = ContextVar("scratchgrad_load_state_dict", default=None)

# PyTorch's warning, word for word, when a module is converted to a complex dtype
_COMPLEX_MODULES = (
    "Complex modules are a new feature under active development whose design may change, and "
    "some modules might not work as expected when using complex tensors as parameters or "
    "buffers. Please file an issue at https://github.com/pytorch/pytorch/issues/new?template="
    "bug-report.yml if a complex module does not work as expected."
)


class Module:
    """Base class for all layers and models: subclass it, assign layers and parameters as
    attributes in ``__init__`` (after ``super().__init__()``), and write ``forward``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> class Net(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = nn.Linear(2, 3)
    ...         self.register_buffer("steps", sg.zeros((), dtype=sg.int64))
    ...
    ...     def forward(self, x):
    ...         return self.fc(x).relu()
    >>> net = Net()
    >>> list(net.state_dict())  # as PyTorch: own parameters and buffers, then the children's
    ['steps', 'fc.weight', 'fc.bias']
    >>> net(sg.ones(4, 2)).shape
    scratchgrad.Size([4, 3])
    """

    training: bool
    # scratchgrad.jit: None while no recording holds this module; then the count of
    # ``capture_hook.changes`` at its last change (an attribute set or deleted: a layer
    # replaced, ``dropout.p = 0.2``, ``self.scale = 2.0``), which a replay recorded before
    # cannot have seen (see ``mark_changed``)
    _jit_stamp: int | None = None
    # hooks (register_forward_pre_hook, register_forward_hook, register_full_backward_hook,
    # register_full_backward_pre_hook): (hook, with_kwargs) pairs, empty on the class; and
    # whether a hook was ever registered, so that a call without hooks looks at one attribute
    _forward_pre_hooks: tuple = ()
    _forward_hooks: tuple = ()
    _backward_pre_hooks: tuple = ()
    _backward_hooks: tuple = ()
    _hooked = False
    # the entries of _forward_hooks registered with ``always_call`` (kept after their removal:
    # only those still in _forward_hooks are called)
    _forward_hooks_always_called: tuple = ()
    # state-dict hooks (register_state_dict_pre_hook, register_state_dict_post_hook,
    # register_load_state_dict_pre_hook, register_load_state_dict_post_hook): as above, (hook,
    # flag) pairs, empty on the class; they leave ``_hooked`` alone, since calls never see them.
    # The flag is False but for PyTorch's private forms' differences: a load pre-hook's says
    # whether it takes the module first, a state-dict post-hook's whether it may return a dict
    _state_dict_pre_hooks: tuple = ()
    _state_dict_hooks: tuple = ()
    _load_state_dict_pre_hooks: tuple = ()
    _load_state_dict_post_hooks: tuple = ()
    # the version a state dict's ``_metadata`` records for the module, as PyTorch's (a layer
    # whose checkpoints changed form counts up: batch norm is at 2)
    _version: int = 1
    # Module.compile's capture of this module's calls (None: not compiled in place)
    _compiled_call_impl: Any = None

    def __init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", OrderedDict())
        set_(self, "_buffers", OrderedDict())
        set_(self, "_non_persistent_buffers", set())
        set_(self, "_modules", OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the "forward" method')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if capture_hook.recorder is not None:  # scratchgrad.jit guards on its train/eval mode
            capture_hook.recorder.called(self)
        if self._hooked:  # hooks registered, or compiled in place: the slower way
            compiled = self._compiled_call_impl
            if compiled is not None:
                return compiled(*args, **kwargs)
            return self._call_impl(*args, **kwargs)
        return self.forward(*args, **kwargs)

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Capture this module's calls in place, as ``torch.nn.Module.compile``, with
        ``scratchgrad.compile``'s options: its forward and the backward it records are recorded
        per input signature and replayed, as ``compile(module)``'s wrapper's are, while the
        module stays itself (its ``state_dict`` keys unchanged).

        >>> import scratchgrad as sg
        >>> from scratchgrad import nn
        >>> model = nn.Linear(2, 1)
        >>> model.compile(mode="reduce-overhead")
        >>> [model(sg.ones(3, 2)).sum().backward() for _ in range(4)] and model.weight.grad
        tensor([[12., 12.]])
        """
        from scratchgrad.compiled import compile_in_place  # (the jit layer, above nn)

        compile_in_place(self, *args, **kwargs)

    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        """``forward`` between its hooks, as PyTorch's (and ``compile``'s capture's way in): a
        pre-hook may return new inputs (a tuple, or one value), a hook a new output; each sees
        what the ones before it left. With backward hooks, the tensors going in and coming out
        pass through identity nodes whose backward runs them (``_BackwardHooks``). After an
        exception, the forward hooks registered with ``always_call`` not yet called are."""
        output, started = None, 0  # (what those get: the output so far, the hooks called)
        forward_hooks = _global_hooks.forward + self._forward_hooks  # the global ones first
        try:
            for hook, with_kwargs in _global_hooks.forward_pre + self._forward_pre_hooks:
                if with_kwargs:
                    args, kwargs = _args_and_kwargs(hook(self, args, kwargs), args, kwargs)
                else:
                    result = hook(self, args)
                    if result is not None:
                        args = result if isinstance(result, tuple) else (result,)
            backward = None
            if self._backward_hooks or self._backward_pre_hooks or _global_hooks.backward_any:
                backward = _BackwardHooks(self)
                args = backward.inputs(args)
            output = self.forward(*args, **kwargs)
            for hook, with_kwargs in forward_hooks:
                started += 1
                result = (
                    hook(self, args, kwargs, output) if with_kwargs else hook(self, args, output)
                )
                if result is not None:
                    output = result
        except Exception:
            self._call_always_called_hooks(forward_hooks[started:], args, kwargs, output)
            raise
        return output if backward is None else backward.outputs(output)

    def _call_always_called_hooks(
        self, hooks: tuple, args: tuple, kwargs: dict, output: Any
    ) -> None:
        """Those of the forward ``hooks`` (not called yet) that were registered with
        ``always_call``, as PyTorch's after an exception: an exception of theirs only warns."""
        always_called = _global_hooks.forward_always_called + self._forward_hooks_always_called
        for entry in hooks:
            if not any(entry is always for always in always_called):
                continue
            hook, with_kwargs = entry
            try:
                result = (
                    hook(self, args, kwargs, output) if with_kwargs else hook(self, args, output)
                )
            except Exception as error:
                warnings.warn(
                    "module forward hook with ``always_call=True`` raised an exception that "
                    f"was silenced as another error was raised in forward: {error}",
                    stacklevel=3,
                )
                continue
            if result is not None:
                output = result

    def register_forward_pre_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, args)`` before each ``forward`` (``hook(module, args, kwargs)``
        with ``with_kwargs``); what it returns, if not None, replaces the inputs. ``prepend``:
        before the hooks registered already. Returns a handle whose ``remove()`` takes it off.

        >>> import scratchgrad as sg
        >>> layer = sg.nn.Linear(2, 1)
        >>> handle = layer.register_forward_pre_hook(lambda module, args: (args[0] * 0,))
        >>> layer(sg.ones(1, 2)).tolist() == [layer.bias.tolist()]
        True
        >>> handle.remove()
        """
        return self._register_hook("_forward_pre_hooks", hook, prepend, with_kwargs)

    def register_forward_hook(
        self,
        hook: Callable,
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after each ``forward`` (``hook(module, args,
        kwargs, output)`` with ``with_kwargs``); what it returns, if not None, replaces the
        output. ``prepend`` as for ``register_forward_pre_hook``; ``always_call``: called after
        an exception in ``forward`` or a hook too (with the output so far, None if ``forward``
        raised), before it propagates. Returns a handle to ``remove()`` it.

        >>> import scratchgrad as sg
        >>> features = {}
        >>> layer = sg.nn.Linear(2, 3)
        >>> _ = layer.register_forward_hook(lambda m, args, out: features.update(fc=out.detach()))
        >>> _ = layer(sg.ones(4, 2))
        >>> features["fc"].shape
        scratchgrad.Size([4, 3])
        """
        handle = self._register_hook("_forward_hooks", hook, prepend, with_kwargs)
        if always_call:
            always = (*self._forward_hooks_always_called, handle._hook)
            self._forward_hooks_always_called = always
        return handle

    def register_full_backward_pre_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` when the gradients of the module's outputs are
        computed (``grad_output``: a tuple, one per tensor output), before they flow into its
        ``forward``'s graph; what it returns, if not None, replaces them. Returns a handle
        whose ``remove()`` takes it off.

        >>> import scratchgrad as sg
        >>> layer = sg.nn.Linear(2, 1)
        >>> _ = layer.register_full_backward_pre_hook(lambda module, grad: (grad[0] * 0,))
        >>> layer(sg.ones(1, 2)).sum().backward()
        >>> layer.weight.grad.tolist()
        [[0.0, 0.0]]
        """
        return self._register_hook("_backward_pre_hooks", hook, prepend, False)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` once the gradients of the module's
        tensor inputs are computed (``grad_input``: a tuple, one per positional tensor input,
        None for one that needs none; ``grad_output``: one per tensor output), as Grad-CAM
        does; what it returns, if not None, replaces ``grad_input``. With no input needing a
        gradient, it is called when ``grad_output`` is. Returns a handle to ``remove()`` it.

        >>> import scratchgrad as sg
        >>> grads = {}
        >>> layer = sg.nn.Linear(2, 3)
        >>> _ = layer.register_full_backward_hook(lambda m, gi, go: grads.update(out=go[0]))
        >>> layer(sg.ones(4, 2, requires_grad=True)).sum().backward()
        >>> grads["out"].shape
        scratchgrad.Size([4, 3])
        """
        return self._register_hook("_backward_hooks", hook, prepend, False)

    def register_backward_hook(self, hook: Callable) -> NoReturn:
        """PyTorch's deprecated backward hook, which sees the gradients of the last autograd
        node of the module's forward (not those of its inputs): not in scratchgrad, whose
        nodes take no hooks, so it raises, naming ``register_full_backward_hook``."""
        raise _old_backward_hooks_refused("Module.register_backward_hook")

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(module, prefix, keep_vars)`` in ``state_dict``, before the module's
        entries are collected (in each module of the tree where it is registered). Returns a
        handle whose ``remove()`` takes it off.

        >>> from scratchgrad import nn
        >>> seen = []
        >>> net = nn.Sequential(nn.Linear(2, 1))
        >>> _ = net[0].register_state_dict_pre_hook(lambda m, prefix, k: seen.append(prefix))
        >>> _ = net.state_dict()
        >>> seen
        ['0.']
        """
        return self._register_hook("_state_dict_pre_hooks", hook)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(module, state_dict, prefix, local_metadata)`` in ``state_dict`` once the
        module's entries and its children's are in; it may change ``state_dict`` in place and
        must return None (else a RuntimeError, as PyTorch's). Returns a handle to ``remove()``.

        >>> from scratchgrad import nn
        >>> def drop_bias(module, state_dict, prefix, local_metadata):
        ...     del state_dict[prefix + "bias"]
        >>> layer = nn.Linear(2, 1)
        >>> _ = layer.register_state_dict_post_hook(drop_bias)
        >>> list(layer.state_dict())
        ['weight']
        """
        return self._register_hook("_state_dict_hooks", hook)

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """PyTorch's private form of ``register_state_dict_post_hook``: what ``hook`` returns,
        if not None, replaces the state dict (kept where the module is the one asked)."""
        return self._register_hook("_state_dict_hooks", hook, False, True)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` in ``load_state_dict`` before the module's keys are
        matched: ``state_dict`` is a copy holding the keys under ``prefix``, which the hook may
        rename or convert (to load an old checkpoint), ``local_metadata`` what the checkpoint's
        ``_metadata`` holds for the module (else ``{}``), ``strict`` True (as PyTorch passes
        it), the three lists what was found so far. Returns a handle to ``remove()`` it.

        >>> import scratchgrad as sg
        >>> def rename(module, state_dict, prefix, *rest):
        ...     if prefix + "w" in state_dict:  # the old name
        ...         state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
        >>> layer = sg.nn.Linear(2, 1)
        >>> _ = layer.register_load_state_dict_pre_hook(rename)
        >>> layer.load_state_dict({"w": sg.ones(1, 2), "bias": sg.zeros(1)})
        <All keys matched successfully>
        """
        return self._register_hook("_load_state_dict_pre_hooks", hook, False, True)

    def _register_load_state_dict_pre_hook(
        self, hook: Callable, with_module: bool = False
    ) -> RemovableHandle:
        """PyTorch's private form of ``register_load_state_dict_pre_hook``, still much used:
        ``hook`` takes the module first only ``with_module``."""
        return self._register_hook("_load_state_dict_pre_hooks", hook, False, with_module)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(module, incompatible_keys)`` in ``load_state_dict`` once the values are
        copied (``incompatible_keys.missing_keys``, ``.unexpected_keys``: the keys left over
        so far). A hook may clear or add to those lists in place, which a strict load then
        checks; it must return None (else an AssertionError, as PyTorch's). Returns a handle
        whose ``remove()`` takes it off.

        >>> import scratchgrad as sg
        >>> layer = sg.nn.Linear(2, 1)
        >>> _ = layer.register_load_state_dict_post_hook(lambda m, keys: keys.missing_keys.clear())
        >>> layer.load_state_dict({"weight": sg.ones(1, 2)})  # no bias, and strict
        <All keys matched successfully>
        """
        return self._register_hook("_load_state_dict_post_hooks", hook)

    def _register_hook(
        self, kind: str, hook: Callable, prepend: bool = False, flag: bool = False
    ) -> RemovableHandle:
        """Add ``(hook, flag)`` to the tuple ``kind`` (``flag``: ``with_kwargs`` for a hook on
        calls; for a state-dict hook, see their note above). Set as an attribute (so is its
        removal), which stamps the module as changed: a jitted step recorded without the hook
        records anew. A hook on calls (not on state dicts) sends ``__call__`` the slower way."""
        entry, hooks = (hook, flag), getattr(self, kind)
        setattr(self, kind, (entry, *hooks) if prepend else (*hooks, entry))
        if "state_dict" not in kind:
            self._hooked = True
        return RemovableHandle(self, kind, entry)

    # ---- registration -----------------------------------------------------------------------

    def __setattr__(self, name: str, value: Any) -> None:
        if name != "training":  # modes are part of scratchgrad.jit's guard already
            mark_changed(self)
        elif capture_hook.recorder is None:  # a mode set: replays check their modes again
            capture_hook.changes += 1
        stores = self.__dict__
        # PyTorch's order: a parameter's name takes only a Parameter or None, then a child's
        # only a Module or None, so a layer assigned over a parameter raises
        if isinstance(value, Parameter):
            if "_parameters" not in stores:
                raise AttributeError(
                    f"cannot assign parameter '{name}' before Module.__init__() call"
                )
            self._forget(name, keep="_parameters")
            stores.pop(name, None)  # (a plain attribute of that name gives way, as PyTorch's)
            self.register_parameter(name, value)  # (which checks the name)
            return
        if name in stores.get("_parameters", ()):
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(scratchgrad.nn.Parameter or None expected)"
                )
            stores["_parameters"][name] = None
        elif isinstance(value, Module):
            if "_modules" not in stores:
                raise AttributeError(f"cannot assign module '{name}' before Module.__init__() call")
            if _global_hooks.module_registration:
                value = _global_hooks.registered("module_registration", self, name, value)
            self._forget(name, keep="_modules")
            stores["_modules"][name] = value
        elif name in stores.get("_modules", ()):
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' "
                    "(scratchgrad.nn.Module or None expected)"
                )
            if _global_hooks.module_registration:
                value = _global_hooks.registered("module_registration", self, name, value)
            stores["_modules"][name] = value
        elif isinstance(value, Buffer):  # registered, its persistence with it (as PyTorch's)
            self.register_buffer(name, value, value.persistent)
            return
        elif name in stores.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                    "(scratchgrad.Tensor or None expected)"
                )
            if _global_hooks.buffer_registration:
                value = _global_hooks.registered("buffer_registration", self, name, value)
            stores["_buffers"][name] = value
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # only reached when ``name`` is not in __dict__: an entry put into a store directly
        for store in _STORES:
            entries = self.__dict__.get(store)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        mark_changed(self)
        registered = any(name in self.__dict__[store] for store in _STORES)
        self._forget(name)
        if name in self.__dict__ or not registered:  # (neither: AttributeError, as PyTorch's)
            object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        """As PyTorch's: the class's names, the attributes and the registered entries, less
        those that are no Python name (a Sequential's "0")."""
        keys = {*dir(type(self)), *self.__dict__, *self._parameters, *self._modules, *self._buffers}
        return sorted(key for key in keys if not key[0].isdigit())

    def _forget(self, name: str, keep: str | None = None) -> None:
        """Drop ``name`` from every store but ``keep`` (where a new value replaces the old one
        in its place, so the order of entries stays put)."""
        for store in _STORES:
            if store != keep:
                self.__dict__[store].pop(name, None)
        if keep != "_buffers":
            self._non_persistent_buffers.discard(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a None placeholder, as a layer without bias does)."""
        self._check_name(name, "parameter", "_parameters")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(scratchgrad.nn.Parameter or None required)"
            )
        if param is not None and _global_hooks.parameter_registration:
            param = _global_hooks.registered("parameter_registration", self, name, param)
        mark_changed(self)
        self._forget(name, keep="_parameters")
        self._parameters[name] = param
        object.__setattr__(self, name, param)

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (BatchNorm's running mean).

        Buffers are in ``state_dict`` unless ``persistent=False``, and ``to(dtype)`` converts
        them when they are floating point.
        """
        self._check_name(name, "buffer", "_buffers")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                "(scratchgrad.Tensor or None required)"
            )
        if _global_hooks.buffer_registration:
            tensor = _global_hooks.registered("buffer_registration", self, name, tensor)
        mark_changed(self)
        self._forget(name, keep="_buffers")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)
        object.__setattr__(self, name, tensor)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name`` (what attribute assignment does)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module", "_modules")
        if _global_hooks.module_registration:
            module = _global_hooks.registered("module_registration", self, name, module)
        mark_changed(self)
        self._forget(name, keep="_modules")
        self._modules[name] = module
        object.__setattr__(self, name, module)

    register_module = add_module

    def _check_name(self, name: str, kind: str, store: str) -> None:
        """PyTorch's checks of a name given to ``register_*``: a string, no ".", and no
        attribute of that name but an entry of ``store`` (a buffer's name takes no parameter)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if not name or "." in name:
            raise KeyError(f'{kind} name can\'t be empty or contain ".", got {name!r}')
        if hasattr(self, name) and name not in self.__dict__[store]:
            raise KeyError(f"attribute '{name}' already exists")

    def get_submodule(self, target: str) -> Module:
        """The module at a dotted path such as ``"encoder.0"``; ``""`` is this module."""
        module = self
        for part in target.split(".") if target else ():
            child = module._modules.get(part)
            if child is None:
                raise AttributeError(f"{module._get_name()} has no submodule `{part}`")
            module = child
        return module

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path such as ``"encoder.0.weight"``, as PyTorch's.

        >>> from scratchgrad import nn
        >>> net = nn.Sequential(nn.Linear(2, 3))
        >>> net.get_parameter("0.bias").shape
        scratchgrad.Size([3])
        """
        owner, name = self._owner_of(target)
        if not isinstance(getattr(owner, name), Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return getattr(owner, name)

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path such as ``"norm.running_mean"``, as PyTorch's."""
        owner, name = self._owner_of(target)
        if name not in owner._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(owner, name)

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put ``module`` at a dotted path such as ``"encoder.0"`` (replacing a layer, as in
        quantization or LoRA scripts), as PyTorch's: its parent must exist; with ``strict``,
        so must the attribute."""
        if not target:
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        path, _, name = target.rpartition(".")
        parent = self.get_submodule(path)
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        setattr(parent, name, module)

    def _owner_of(self, target: str) -> tuple[Module, str]:
        """The module holding the attribute at the dotted path ``target``, and its name."""
        path, _, name = target.rpartition(".")
        owner = self.get_submodule(path)
        if not hasattr(owner, name):
            raise AttributeError(f"{owner._get_name()} has no attribute `{name}`")
        return owner, name

    # ---- walking the tree -------------------------------------------------------------------

    def named_modules(
        self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """This module and all below it, depth first, each once (unless told otherwise)."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:  # (the modules themselves, as PyTorch's: a caller may pass some)
                return
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                sub = f"{prefix}.{name}" if prefix else name
                yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(
        self, store: str, prefix: str, recurse: bool, remove_duplicate: bool
    ) -> Iterator[tuple[str, Tensor]]:
        if recurse:
            modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        else:
            modules = [(prefix, self)]
        seen = set()
        for module_prefix, module in modules:
            for name, value in module.__dict__[store].items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """(name, parameter) pairs with dotted names; a shared parameter is listed once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters to hand to an optimizer."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every submodule (children first) and then on this module.

        >>> from scratchgrad import nn
        >>> net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        >>> def zero_bias(m):
        ...     if isinstance(m, nn.Linear):
        ...         nn.init.zeros_(m.bias)
        >>> net.apply(zero_bias)[0].bias
        Parameter containing:
        tensor([0., 0.], requires_grad=True)
        """
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ---- training state ---------------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        """Set training mode (Dropout drops, BatchNorm uses batch statistics) recursively:
        as PyTorch's, through each child's ``train``, so a layer that overrides it (to keep
        its batch norms in eval mode while fine-tuning) has its way."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        # scratchgrad.jit: done again at every replay
        if capture_hook.recorder is not None and capture_hook.recorder.here():
            return capture_hook.recorder.set_mode(Module.train, self, mode)
        object.__setattr__(self, "training", mode)
        for module in self.children():
            module.train(mode)
        capture_hook.changes += 1  # scratchgrad.jit's replays check their modes again
        return self

    def eval(self) -> Module:
        """Set evaluation mode: the same as ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (the default), or to zeros."""
        # scratchgrad.jit: done again at every replay
        if capture_hook.recorder is not None and capture_hook.recorder.here():
            return capture_hook.recorder.replayed(Module.zero_grad, self, set_to_none)
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:  # zeroed in place: whoever holds the gradient sees it zeroed, as PyTorch's
                grad = param.grad
                grad.detach_() if grad.grad_fn is not None else grad.requires_grad_(False)
                grad.zero_()

    # ---- dtype ------------------------------------------------------------------------------

    def to(
        self,
        *args: Any,
        dtype: Any = None,
        device: Any = None,
        tensor: Tensor | None = None,
        non_blocking: bool = False,
        copy: bool | None = None,
        memory_format: Any = None,
    ) -> Module:
        """Move parameters and buffers to a device and convert the floating point and complex
        ones to ``dtype`` (a floating or complex one), in place (``model.to(device)``,
        ``model.to(sg.float64)``, or both).

        The parameter objects stay the same, so an optimizer built before still holds them;
        state it has already made stays where it was (as in PyTorch): move the model before
        the first step, or load the optimizer's state dict again. A device without a backend
        raises.

        >>> import scratchgrad as sg
        >>> from scratchgrad import nn
        >>> lin = nn.Linear(2, 2).to(sg.float64)
        >>> lin.weight.dtype
        scratchgrad.float64
        """
        if memory_format is not None:  # for 4-D and 5-D tensors, as PyTorch's (before any change)
            check_memory_format(memory_format, None)
            for t in (*self.parameters(), *self.buffers()):
                if t.ndim in (4, 5):
                    check_memory_format(memory_format, t.ndim)
        args, flags = split_to_arguments(args, tensor, non_blocking)
        if copy is not None or len(flags) > 1:
            raise RuntimeError(".to() does not accept copy argument")
        device, dtype = requested_device_and_dtype(args, device, dtype)
        if dtype is not None and not backend.can_require_grad(dtype):
            raise TypeError(
                f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                f"dtype={dtype}"
            )
        if dtype is not None and dtype.kind == "c":
            warnings.warn(_COMPLEX_MODULES, stacklevel=2)
        if device is not None:
            backend.array_module(device)  # raises for a device without a backend
        # (complex to real drops the imaginary part, as PyTorch's)
        which = backend.can_require_grad
        if memory_format is None:
            return self._apply(partial(_converted, device=device, dtype=dtype, which=which))
        return self._apply(partial(_laid_out, device, dtype, which, memory_format))

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        """``fn`` on every parameter, buffer and gradient, as PyTorch's ``_apply`` (what ``to``,
        ``float``, ``type``... do): each tensor takes the array of ``fn``'s result in place
        (the same objects); the children's through their own ``_apply``, so a layer that
        overrides it (to convert tensors it keeps unregistered) has its way."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for tensor in (*self._parameters.values(), *self._buffers.values()):
            if tensor is None:
                continue
            new = fn(tensor)
            if new.array is not tensor.array:
                tensor._take_memory(new)  # (its layout too: see ``to``'s memory_format)
                increment_version(tensor)  # a graph that saved the old array must not use it
            if tensor.grad is not None:
                tensor.grad = fn(tensor.grad)
        return self

    def share_memory(self) -> Module:
        """``Tensor.share_memory_`` on every parameter, buffer and gradient, as PyTorch's: the
        model's memory shared with processes forked afterwards (Hogwild training)."""
        return self._apply(lambda t: t.share_memory_())

    def to_empty(self, *, device: Any, recurse: bool = True) -> Module:
        """Give every parameter and buffer new, uninitialised memory on ``device`` (their
        shapes and dtypes kept), as ``torch.nn.Module.to_empty``: the way off the meta device,
        before loading a state dict or initialising. The tensor objects stay the same.

        >>> import scratchgrad as sg
        >>> with sg.device("meta"):
        ...     layer = sg.nn.Linear(2, 3)
        >>> layer.to_empty(device="cpu").weight.shape, layer.weight.device
        (scratchgrad.Size([3, 2]), device(type='cpu'))
        """
        module = backend.array_module(device)  # raises for a device without a backend
        return self._apply(lambda t: Tensor._make(module.empty(t.shape, t.dtype)), recurse)

    # as PyTorch's, these four convert the floating tensors only (``to`` the complex ones too)
    def _cast(self, dtype: Any) -> Module:
        return self._apply(partial(_converted, device=None, dtype=dtype, which=backend.is_floating))

    def float(self) -> Module:
        return self._cast(backend.float32)

    def double(self) -> Module:
        return self._cast(backend.float64)

    def half(self) -> Module:
        return self._cast(backend.float16)

    def bfloat16(self) -> Module:
        return self._cast(backend.bfloat16)

    def type(self, dst_type: Any) -> Module:
        """Cast every parameter and buffer (and gradient) to ``dst_type``, as
        ``torch.nn.Module.type``: a dtype, a legacy type or its name. Unlike ``to``, integer
        buffers are cast too (as PyTorch's).

        >>> from scratchgrad import nn
        >>> import scratchgrad as sg
        >>> nn.Linear(2, 1).type(sg.DoubleTensor).weight.dtype
        scratchgrad.float64
        """
        return self._apply(lambda t: t.type(dst_type))

    def cpu(self) -> Module:
        return self.to(backend.cpu)

    def cuda(self, device: Any = None) -> Module:
        """Move to a CUDA device (``scratchgrad[cuda]``); raises when there is none."""
        return self.to(backend.cuda_device(device))

    # ---- state dict -------------------------------------------------------------------------

    def state_dict(
        self,
        *args: Any,
        destination: OrderedDict | None = None,
        prefix: str = "",
        keep_vars: bool = False,
    ) -> OrderedDict[str, Tensor]:
        """Parameters and persistent buffers by dotted name, as detached tensors that share
        memory with the module (PyTorch's key names and order), and a module's
        ``get_extra_state()`` under "_extra_state" where it defines one. As PyTorch's, the
        dict's ``_metadata`` holds each module's ``{"version": ...}`` by module name, and each
        module's state-dict pre-hooks run before its entries are collected, its post-hooks
        after its children's. The deprecated positional form ``state_dict(destination, prefix,
        keep_vars)`` (older modules' overrides call it) warns as PyTorch's.

        >>> from scratchgrad import nn
        >>> list(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).state_dict())
        ['0.weight', '0.bias', '1.weight', '1.bias', '1.running_mean', '1.running_var', \
'1.num_batches_tracked']
        """
        if args:
            warnings.warn(
                "Positional args are being deprecated, use kwargs instead. Refer to https://"
                "pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
                " for details.",
                FutureWarning,
                stacklevel=2,
            )
            destination, prefix, keep_vars = (*args, destination, prefix, keep_vars)[:3]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()  # what load_state_dict passes its hooks
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook, _ in self._state_dict_pre_hooks:
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=f"{prefix}{name}.", keep_vars=keep_vars
                )
        for hook, may_replace in self._state_dict_hooks:
            result = hook(self, destination, prefix, local_metadata)
            if result is not None and not may_replace:
                raise RuntimeError("state_dict post-hook must return None")
            destination = destination if result is None else result
        return destination

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """``state_dict``'s step for this module's own entries, as PyTorch's (a layer may
        override it): its parameters and persistent buffers, then its extra state."""
        for name, tensor in self._local_state().items():
            # (an uninitialized tensor of nn.lazy goes in as itself: it has no data to detach)
            kept = keep_vars or hasattr(type(tensor), "materialize")
            destination[prefix + name] = tensor if kept else tensor.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()

    def get_extra_state(self) -> Any:
        """State other than tensors for ``state_dict`` to hold (under "_extra_state"): a module
        that has some overrides this and ``set_extra_state``, as PyTorch's."""
        raise RuntimeError("Module.get_extra_state() is to be overridden, not called")

    def set_extra_state(self, state: Any) -> None:
        """Take back what ``get_extra_state`` returned, from ``load_state_dict``."""
        raise RuntimeError("Module.set_extra_state() is to be overridden, not called")

    def _load_from_state_dict(
        self,
        state_dict: dict,
        prefix: str,
        local_metadata: dict,
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        """``load_state_dict``'s step for this module alone, as PyTorch's: run its load
        pre-hooks, then match its own entries in ``state_dict`` (the keys under ``prefix``),
        noting what is missing, unexpected or wrong in the lists. A layer may override it, to
        convert an old checkpoint's entries before calling this one, as in PyTorch."""
        load = _LOADING.get()
        if load is None:  # called by itself: the values are copied at once, as PyTorch's
            load = _Load(None, copy_as_matched=True, assign=False)
            load.keys, load.errors = _IncompatibleKeys(missing_keys, unexpected_keys), error_msgs
        load.match_own(self, state_dict, prefix, local_metadata)

    def _upgrade_state_dict(
        self, state_dict: dict, prefix: str, version: int | None, errors: list[str]
    ) -> None:
        """Bring the entries under ``prefix`` of a checkpoint saved at an older ``version`` of
        this module (None: the checkpoint has no ``_metadata`` for it) to the current form, in
        place, before they are matched (what PyTorch's ``_load_from_state_dict`` overrides do
        first); ``errors`` takes what cannot be loaded. Layers whose form changed override it."""

    def _local_state(self) -> dict[str, Tensor]:
        """The module's own parameters and persistent buffers (those not None), in order."""
        persistent = [
            (name, buffer)
            for name, buffer in self._buffers.items()
            if name not in self._non_persistent_buffers
        ]
        entries = (*self._parameters.items(), *persistent)
        return {name: tensor for name, tensor in entries if tensor is not None}

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> _IncompatibleKeys:
        """Copy values into the parameters and buffers in place (their dtypes are kept).

        Everything is checked before anything is copied: a wrongly shaped value is an error,
        and so, with ``strict=True``, are missing and unexpected keys. Returns the missing and
        unexpected keys. With ``assign=True`` each tensor takes the state dict's array itself
        (its dtype and device, sharing its memory) instead of a copy into its own: how a model
        built on the meta device gets its values, as in PyTorch. NOTE: the parameters stay
        the same objects (an optimizer built before keeps them), so a weight tied under two
        names stays tied, with the later name's array; PyTorch's assign puts new Parameters
        in, which unties them (two parameters, starting from the two arrays).

        Hooks as PyTorch's: each module's load pre-hooks may change the keys (in a copy of
        ``state_dict``: the part under the module's prefix) before they are matched; its
        post-hooks, run after its children's, get the keys left over so far and may clear them
        in place so that a strict load passes. With a post-hook anywhere in the tree, each
        module's values are copied as soon as its keys are matched (the post-hooks see them
        loaded) and the errors raised at the end, as PyTorch does.

        >>> from scratchgrad import nn
        >>> a, b = nn.Linear(3, 2), nn.Linear(3, 2)
        >>> b.load_state_dict(a.state_dict())
        <All keys matched successfully>
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)  # a copy: the pre-hooks may change it
        if metadata is not None:
            state_dict._metadata = metadata
        post_hooked = any(module._load_state_dict_post_hooks for module in self.modules())
        load = _Load(metadata, copy_as_matched=post_hooked, assign=assign)
        loading = _LOADING.set(load)
        try:
            load.match(self, state_dict, "")
        finally:
            _LOADING.reset(loading)
        load.raise_errors(self, strict)
        load.copy()  # (what was not copied as matched)
        return load.keys

    # ---- printing ---------------------------------------------------------------------------

    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The settings shown between the parentheses of ``repr``; layers override this."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [
            f"({name}): {_indent(repr(module), 2)}" for name, module in self._modules.items()
        ]
        lines = extra_lines + child_lines
        body = ""
        if len(extra_lines) == 1 and not child_lines:
            body = extra_lines[0]
        elif lines:
            body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"


def mark_changed(module: Module | Any) -> None:
    """Stamp ``module`` (or an optimizer) as changed if a recording of scratchgrad.jit holds
    it: its replays would go on with the objects and values the recording read (see
    ``jit.ModuleStamps``).
    Not while a recording runs: a forward that caches an attribute (``self.last = x``) would
    otherwise make its own recording, or another step's that calls the module, stale at once;
    what a recording sets is what its replays keep."""
    if module._jit_stamp is not None and capture_hook.recorder is None:
        capture_hook.changes += 1
        module.__dict__["_jit_stamp"] = capture_hook.changes


def _empty_parameter(shape: tuple[int, ...], device: Any, dtype) -> Parameter:
    """An uninitialised parameter for a layer's constructor, on ``device`` (None: the CPU)."""
    dtype = backend.default_float if dtype is None else backend.to_dtype(dtype)
    shape = new_shape("empty", (shape,))  # (a negative size: PyTorch's RuntimeError)
    return Parameter(Tensor._make(backend.array_module(device).empty(shape, dtype)))


def _indent(text: str, spaces: int) -> str:
    """Indent every line but the first (a child's repr follows its "(name): " label)."""
    return text.replace("\n", "\n" + " " * spaces)


def _quoted(keys: list[str]) -> str:
    return ", ".join(f'"{key}"' for key in keys)


class _Load:
    """One ``load_state_dict``: its walk down the modules (PyTorch's ``_load_from_state_dict``
    in each, then its load post-hooks), what it found, the values it has yet to copy."""

    def __init__(self, metadata: Mapping | None, copy_as_matched: bool, assign: bool) -> None:
        self.metadata, self.copy_as_matched, self.assign = metadata, copy_as_matched, assign
        self.keys = _IncompatibleKeys([], [])
        self.errors: list[str] = []
        self.values: list[tuple[Tensor, Any]] = []
        self.extra_states: list[tuple[Module, Any]] = []

    def match(self, module: Module, state_dict: dict, prefix: str) -> None:
        """Match ``module``'s own entries in ``state_dict`` (the keys under ``prefix``), then
        its children's, then run its post-hooks."""
        metadata = {} if self.metadata is None else self.metadata.get(prefix[:-1], {})
        module._upgrade_state_dict(state_dict, prefix, metadata.get("version"), self.errors)
        module._load_from_state_dict(state_dict, prefix, metadata, True, *self.keys, self.errors)
        for name, child in module._modules.items():
            if child is not None:
                inner = f"{prefix}{name}."
                part = {key: v for key, v in state_dict.items() if key.startswith(inner)}
                self.match(child, part, inner)
        for hook, _ in module._load_state_dict_post_hooks:
            if hook(module, self.keys) is not None:
                raise AssertionError(
                    "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                    "expected to return new values, if incompatible_keys need to be modified, "
                    "it should be done inplace."
                )

    def match_own(self, module: Module, state_dict: dict, prefix: str, metadata: dict) -> None:
        """Run ``module``'s pre-hooks on ``state_dict``, then match its own entries (what
        ``Module._load_from_state_dict`` does)."""
        missing, unexpected = self.keys
        for hook, with_module in module._load_state_dict_pre_hooks:
            arguments = (state_dict, prefix, metadata, True, missing, unexpected, self.errors)
            hook(module, *arguments) if with_module else hook(*arguments)
        own = module._local_state()
        for name, target in own.items():
            if prefix + name in state_dict:
                self.take(prefix + name, target, state_dict[prefix + name])
            else:
                missing.append(prefix + name)
        if type(module).set_extra_state is not Module.set_extra_state:
            own = {**own, _EXTRA_STATE: None}  # (so its key is expected)
            if prefix + _EXTRA_STATE in state_dict:
                self.extra_states.append((module, state_dict[prefix + _EXTRA_STATE]))
            else:
                missing.append(prefix + _EXTRA_STATE)
        if self.copy_as_matched:
            self.copy()
        for key in state_dict:
            if key.startswith(prefix):  # (a pre-hook may have put others in)
                first, *rest = key[len(prefix) :].split(".", 1)
                if first not in (module._modules if rest else own):  # "a.b": a child's
                    unexpected.append(key)

    def take(self, key: str, target: Tensor, value: Any) -> None:
        """Keep ``value`` for ``target`` as an array on its device, or note its wrong shape."""
        lazy = hasattr(type(target), "materialize")  # an UninitializedParameter (nn.lazy)
        if lazy and hasattr(type(value), "materialize"):
            return  # uninitialized into uninitialized: nothing to load (as PyTorch)
        if not isinstance(value, Tensor) and not hasattr(value, "__array__"):
            # (arrays, NumPy's and others', load as tensors would: scratchgrad's own extension)
            self.errors.append(
                f'While copying the parameter named "{key}", expected torch.Tensor or '
                f"Tensor-like object from checkpoint but received {type(value)}"
            )
            return
        value = value.array if isinstance(value, Tensor) else xp.asarray(value)
        if not self.assign:  # copied into the model's tensor: map it to the model's device
            value = backend.to_device(value, backend.device_of(target.array))
        if not lazy and target.shape == () and value.shape == (1,):
            value = value.reshape(())  # PyTorch 0.3 saved 0-d tensors as (1,); PyTorch reads them
        if not lazy and value.shape != target.shape:
            self.errors.append(
                f"size mismatch for {key}: copying a param with shape {Size(value.shape)} from "
                f"checkpoint, the shape in current model is {target.shape}."
            )
        elif self.assign and target.requires_grad and not backend.can_require_grad(value.dtype):
            self.errors.append(
                f'While copying the parameter named "{key}", a {value.dtype.name} tensor cannot '
                "replace it: only tensors of floating point and complex dtype can require gradients"
            )
        else:
            self.values.append((target, value))

    def copy(self) -> None:
        with no_grad():
            for target, value in self.values:
                if hasattr(type(target), "materialize"):  # takes the loaded shape first
                    target.materialize(value.shape)
                if self.assign:
                    target.array = value
                    increment_version(target)  # a graph that saved the old array must not
                else:
                    target.copy_(value)
        self.values.clear()
        for module, state in self.extra_states:
            module.set_extra_state(state)
        self.extra_states.clear()

    def raise_errors(self, module: Module, strict: bool) -> None:
        """Raise PyTorch's error naming every problem found, if any."""
        missing, unexpected = self.keys
        errors = []
        if strict and missing:
            errors.append(f"Missing key(s) in state_dict: {_quoted(missing)}. ")
        if strict and unexpected:
            errors.append(f"Unexpected key(s) in state_dict: {_quoted(unexpected)}. ")
        errors += self.errors
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {module._get_name()}:\n\t"
                + "\n\t".join(errors)
            )


def _converted(tensor: Tensor, device: Any, dtype: Any, which: Callable[[Any], bool]) -> Tensor:
    """What ``Module.to`` applies: ``tensor`` on ``device`` and, where ``which(its dtype)``,
    of ``dtype`` (None: kept), rounded as Tensor.to rounds (float64 to float16 through
    float32); the tensor itself when nothing changes."""
    array = tensor.array
    if device is not None and not backend.is_on(array, device):
        array = backend.to_device(array, device)
    if dtype is not None and which(array.dtype) and array.dtype != dtype:
        array = backend.cast(array, dtype)
    return tensor if array is tensor.array else Tensor._make(array)


def _laid_out(
    device: Any, dtype: Any, which: Callable[[Any], bool], memory_format: Any, tensor: Tensor
) -> Tensor:
    """What ``Module.to(memory_format=...)`` applies: ``_converted``, and a 4-D or 5-D tensor
    laid out in ``memory_format`` (``Tensor.to``), as PyTorch's."""
    if tensor.ndim not in (4, 5):
        return _converted(tensor, device, dtype, which)
    with no_grad():
        return tensor.to(device=device, dtype=dtype if which(tensor.dtype) else None,
                         memory_format=memory_format)  # fmt: skip


class _Identity(Function):
    """The tensors given, copied (so no one aliases the caller's), whose backward hands the
    gradients to ``hooks`` (the module's ``inputs``' node, or else its outputs') and passes
    on what they return (see ``_BackwardHooks``)."""

    @staticmethod
    def forward(ctx: Any, *arrays: Any, hooks: _BackwardHooks, inputs: bool) -> Any:
        ctx.module_hooks, ctx.inputs = hooks, inputs  # (a node's .hooks are its tensor's)
        # as PyTorch's: changing its outputs in place (inside the module, its inputs) would
        # leave the caller's tensor unchanged or the hooks' gradients stale
        ctx.refuses_in_place = (  # PyTorch's words (its BackwardHookFunction's outputs are views)
            "an output of a module's backward hooks (BackwardHookFunction) is a view and is "
            "being modified inplace: the change would bypass the hooks, leading to incorrect "
            "gradients. This behavior is forbidden. You can fix this by cloning the output"
        )
        # an output no gradient reached is None in grad_output, as PyTorch's
        ctx.materialize_grads = inputs
        return arrays[0].copy() if len(arrays) == 1 else arrays  # (several: packed anew)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> Any:
        hooks = ctx.module_hooks
        return hooks.inputs_done(grads) if ctx.inputs else hooks.outputs_done(grads)


class _BackwardHooks:
    """One call's backward hooks, as PyTorch's ``BackwardHook``: the module's tensor inputs go
    into ``forward`` through one identity node and its tensor outputs come out through
    another. The outputs' node runs the backward pre-hooks on their gradients and keeps
    them; the inputs' node, reached once every gradient into the module's inputs is summed,
    runs the full backward hooks with both."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.at: list[int] = []  # where the tensors are among the positional inputs
        self.needs: list[bool] = []  # whether each of those requires grad
        self.count = 0  # how many positional inputs (one gradient each: None but tensors')
        self.through = False  # whether the inputs went through their node
        self.grad_output: tuple = ()

    def __eq__(self, other: object) -> bool:
        """Those of one module are equal: a jitted step records its calls twice, and compares
        what the two recordings passed to their nodes."""
        return type(other) is _BackwardHooks and other.module is self.module

    __hash__ = None  # type: ignore[assignment]

    def inputs(self, args: tuple) -> tuple:
        """``args`` with their tensors passed through the inputs' identity node."""
        self.at, self.count = [i for i, a in enumerate(args) if isinstance(a, Tensor)], len(args)
        self.needs = [args[i].requires_grad for i in self.at]
        self.through = any(self.needs) and is_grad_enabled()
        if not self.through:  # (the full hooks then run with the outputs' gradients)
            return args
        tensors = (args[i] for i in self.at)
        return _replaced(args, self.at, _Identity.apply(*tensors, hooks=self, inputs=True))

    def outputs(self, output: Any) -> Any:
        """``output`` (a tensor, or a tuple holding some) through the outputs' identity node."""
        items = (output,) if isinstance(output, Tensor) else output
        tensors = type(items) is tuple
        at = [i for i, o in enumerate(items) if isinstance(o, Tensor)] if tensors else []
        if not any(items[i].requires_grad for i in at) or not is_grad_enabled():
            return output
        new = _replaced(
            items, at, _Identity.apply(*(items[i] for i in at), hooks=self, inputs=False)
        )
        return new[0] if isinstance(output, Tensor) else new

    def outputs_done(self, grads: tuple) -> tuple:
        """The backward pre-hooks on the outputs' gradients; the gradients they leave."""
        for hook, _ in _global_hooks.backward_pre + self.module._backward_pre_hooks:
            result = hook(self.module, grads)
            if result is not None:
                grads = _checked(result, len(grads), "backward pre-hook", "grad_output")
        self.grad_output = grads
        if not self.through and (_global_hooks.backward or self.module._backward_hooks):
            warnings.warn(
                "Full backward hook is firing when gradients are computed with respect to "
                "module outputs since no inputs require gradients",
                stacklevel=2,
            )
            self._call_hooks((None,) * self.count)
        return grads

    def inputs_done(self, grads: tuple) -> tuple:
        """The full hooks on one gradient per positional input (a tensor not needing one:
        zeros, as PyTorch; another input: None); the gradients of the tensors they leave."""
        grad_input = [None] * self.count
        for i, grad, needs in zip(self.at, grads, self.needs):
            grad_input[i] = grad if needs else grad.new_zeros(grad.shape)
        grad_input = self._call_hooks(tuple(grad_input))
        return tuple(grad_input[i] for i in self.at)

    def _call_hooks(self, grad_input: tuple) -> tuple:
        for hook, _ in _global_hooks.backward + self.module._backward_hooks:
            result = hook(self.module, grad_input, self.grad_output)
            if result is not None:
                grad_input = _checked(result, len(grad_input), "backward hook", "grad_input")
        return grad_input


class _GlobalHooks:
    """The hooks of every module's calls (``register_module_forward_hook``...), kept as a
    module's own: (hook, with_kwargs) pairs. While any is registered, ``Module._hooked`` is
    set on the class, so every module's call takes the slower way (``_call_impl``), which runs
    them before the module's own, as PyTorch's; with none, a call costs what it did."""

    forward_pre: tuple = ()
    forward: tuple = ()
    forward_always_called: tuple = ()  # (as Module._forward_hooks_always_called)
    backward_pre: tuple = ()
    backward: tuple = ()
    backward_any = False
    # (hook, False) pairs called as a parameter, buffer or child module is registered; calls
    # never see them
    parameter_registration: tuple = ()
    buffer_registration: tuple = ()
    module_registration: tuple = ()

    def __setattr__(self, name: str, value: tuple) -> None:  # (RemovableHandle sets them too)
        object.__setattr__(self, name, value)
        object.__setattr__(self, "backward_any", bool(self.backward_pre or self.backward))
        Module._hooked = bool(self.forward_pre or self.forward or self.backward_any)

    def register(self, kind: str, hook: Callable, flag: bool = False) -> RemovableHandle:
        entry = (hook, flag)
        setattr(self, kind, (*getattr(self, kind), entry))
        return RemovableHandle(self, kind, entry)

    def registered(self, kind: str, module: Module, name: str, value: Any) -> Any:
        """``value`` after the registration hooks of ``kind``: each may return a new one."""
        for hook, _ in getattr(self, kind):
            output = hook(module, name, value)
            if output is not None:
                value = output
        return value


_global_hooks = _GlobalHooks()


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, args)`` before every module's forward, before the module's own
    pre-hooks, as ``torch.nn.modules.module.register_module_forward_pre_hook``; it may return
    new ``args`` (a tuple, or one value).

    >>> import scratchgrad as sg
    >>> from scratchgrad.nn.modules.module import register_module_forward_pre_hook
    >>> seen = []
    >>> with register_module_forward_pre_hook(lambda m, args: seen.append(type(m).__name__)):
    ...     _ = sg.nn.Sequential(sg.nn.Linear(2, 2), sg.nn.ReLU())(sg.ones(1, 2))
    >>> seen
    ['Sequential', 'Linear', 'ReLU']
    """
    return _global_hooks.register("forward_pre", hook)


def register_module_forward_hook(
    hook: Callable, *, with_kwargs: bool = False, always_call: bool = False
) -> RemovableHandle:
    """Call ``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
    ``with_kwargs``) after every module's forward, before the module's own hooks, as
    ``torch.nn.modules.module.register_module_forward_hook``; it may return a new output.
    With ``always_call`` it runs after a forward that raised too."""
    handle = _global_hooks.register("forward", hook, with_kwargs)
    if always_call:
        _global_hooks.forward_always_called = (*_global_hooks.forward_always_called, handle._hook)
    return handle


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """Every module's ``register_full_backward_pre_hook``, run before the module's own."""
    return _global_hooks.register("backward_pre", hook)


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """Every module's ``register_full_backward_hook``, run before the module's own."""
    return _global_hooks.register("backward", hook)


def register_module_backward_hook(hook: Callable) -> NoReturn:
    """PyTorch's deprecated global form of ``Module.register_backward_hook``: raises as it."""
    raise _old_backward_hooks_refused("register_module_backward_hook")


def _old_backward_hooks_refused(name: str) -> NotImplementedError:
    full = name.replace("backward", "full_backward")
    return NotImplementedError(
        f"{name} (deprecated in PyTorch, its hook seeing the gradients of the module's last "
        f"autograd node only) is not supported: use {full}, whose hook gets the gradients of "
        "the module's inputs and outputs"
    )


def register_module_parameter_registration_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, name, param)`` as any module registers a parameter (not None), as
    ``torch.nn.modules.module.register_module_parameter_registration_hook``; it may return
    the parameter to register instead."""
    return _global_hooks.register("parameter_registration", hook)


def register_module_buffer_registration_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, name, buffer)`` as any module registers or assigns a buffer (None
    too), as PyTorch's; it may return the buffer to register instead."""
    return _global_hooks.register("buffer_registration", hook)


def register_module_module_registration_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, name, submodule)`` as any module registers or assigns a child
    module (None too), as PyTorch's; it may return the module to register instead.

    >>> import scratchgrad as sg
    >>> from scratchgrad.nn.modules.module import register_module_module_registration_hook
    >>> with register_module_module_registration_hook(lambda m, name, sub: sg.nn.Tanh()):
    ...     net = sg.nn.Sequential(sg.nn.Linear(1, 1), sg.nn.ReLU())
    >>> net
    Sequential(
      (0): Tanh()
      (1): Tanh()
    )
    """
    return _global_hooks.register("module_registration", hook)


def _args_and_kwargs(result: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The inputs after a ``with_kwargs`` forward pre-hook returned ``result``."""
    if result is None:
        return args, kwargs
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(
            "forward pre-hook must return None or a tuple of (new_args, new_kwargs), but got "
            f"{result}."
        )
    return result


def _replaced(items: tuple, at: list[int], new: Any) -> tuple:
    """``items`` with the ones at ``at`` replaced by ``new`` (one tensor, or a tuple)."""
    new = new if isinstance(new, tuple) else (new,)
    items = list(items)
    for i, tensor in zip(at, new):
        items[i] = tensor
    return tuple(items)


def _checked(result: Any, count: int, what: str, name: str) -> tuple:
    """A hook's replacement gradients, as a tuple of ``count`` tensors or Nones (PyTorch's
    errors otherwise: it counts a bare tensor's rows, so that one fails its count check)."""
    if not isinstance(result, (tuple, list)):
        kind = RuntimeError if isinstance(result, Tensor) else TypeError
        raise kind(
            f"{what} returned {type(result).__name__!r}: it must return None or a tuple of "
            f"{count} values for {name} (Tensors or None)"
        )
    if len(result) != count:
        raise RuntimeError(
            f"{what} returned an invalid number of values for {name} (got {len(result)}, "
            f"but expected {count})"
        )
    for value in result:
        if value is not None and not isinstance(value, Tensor):
            kind = type(value).__name__
            raise TypeError(f"expected Tensor or None, but {what} returned {kind!r}")
    return tuple(result)
