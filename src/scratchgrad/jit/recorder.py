"""The recorder: while a jitted function runs for the second time, it notes every array call
of the step (each ``Function.forward``, every array call made outside one: gradient
accumulation, in-place updates, random draws) and every Python call that must run again on
each replay (optimizer steps, ``zero_grad``, learning-rate schedulers, gradient clipping).

Each note is a line of Python over numbered values ``v0, v1, ...`` (the arrays of the step);
``program.compile`` joins the lines into one function. An array the recorder did not see being
made (a parameter, a buffer, an optimizer's state, a constant) enters the program as itself,
so in-place updates of it are seen by later replays.
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
import threading
import weakref
from collections.abc import Callable
from typing import Any

from scratchgrad import backend
from scratchgrad.autograd import capture_hook, engine, function
from scratchgrad.autograd.grad_mode import InferenceCounter
from scratchgrad.backend import device_of, memory_owner, xp
from scratchgrad.jit import gemm, kernels, updates
from scratchgrad.optim.optimizer import Optimizer
from scratchgrad.tensor import Tensor

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIBRARIES = tuple({sysconfig.get_path("stdlib"), sysconfig.get_path("purelib")})


class JitError(RuntimeError):
    """Something in a function given to ``scratchgrad.jit`` cannot be recorded and replayed
    (reading a tensor's value into Python, printing a tensor, creating a parameter, a nested
    jitted call). Raised while recording, naming what was done and where.

    >>> import scratchgrad as sg
    >>> issubclass(sg.JitError, RuntimeError)
    True
    """


# For the errors raised once the step has run in full (recorded): a caller falling back to an
# eager call would apply its updates twice.
ALREADY_RUN = "This call has run the step in full (its updates are made): do not repeat it eagerly."


class Step:
    """One recorded call: its lines of code, the values it reads and writes, and whether it
    changes something outside its results (then it is never pruned)."""

    __slots__ = (
        "lines",
        "reads",
        "writes",
        "effect",
        "place",
        "reusable",
        "layout",
        "scratch",
        "tried",
        "like",
    )

    def __init__(self, lines: list[str], reads: tuple, writes: list, effect: bool) -> None:
        # (reads: a tuple, not a set: a set takes 216 bytes however few it holds, and a
        # recording keeps a step per call until it is compiled)
        self.lines, self.reads, self.writes, self.effect = lines, reads, writes, effect
        self.place = user_line()  # for the JitError of two recordings that differ
        # for a kernel whose code takes an out= (see kernels.OUT): the inputs its result could
        # overwrite, and the (shape, dtype) of a C-ordered buffer that could hold the result
        # as the call would lay it out (None: the program lets the call allocate it)
        self.reusable: tuple[int, ...] = ()
        self.layout: tuple | None = None
        # what asks for scratch memory while the step runs (an optimizer's generated update,
        # a swapped product: ``nbytes``, and ``place(memory)`` before its first run), lent by
        # the program
        self.scratch: Any = None
        # a big matrix product that the program may compute the other way round, decided
        # when the program is compiled (see gemm.py)
        self.tried: gemm.Tried | None = None
        # for a kernel: the positions of its array arguments laid out as its result (shape
        # and strides), which a rewrite may put in its place (see rewrite.py)
        self.like: tuple[int, ...] = ()


# The most entries of a tensor argument whose values a step may read (each call compares them).
MOST_READ = 4096

# What a refused read of values (``Recorder.refuse``) should do instead.
_MOVE_OUT = "Move it out of the jitted function (return the tensor and read it after the call)"


def _call(function: Callable, *args: Any, **kwargs: Any) -> Any:
    return function(*args, **kwargs)


def _nothing(*args: Any) -> None:
    return None


def _assign_grad(tensor: Tensor, grad: Tensor) -> None:
    tensor._grad = grad


def _declined(*args: Any) -> bool:
    return False


def _forward(cls: type, ctx: Any, args: tuple, arrays: list, kwargs: dict) -> Any:
    return cls.forward(ctx, *arrays, **kwargs)


def _other_threads(eager: Callable) -> Callable:
    """For a method the library's hooks call while a step records (``capture_hook.recorder``
    is the process's): called from another thread than the recording one, it does what eager
    code does (``eager``), so that the thread's work runs as usual and stays out of the
    program."""

    def decorate(method: Callable) -> Callable:
        @functools.wraps(method)
        def hook(self: Recorder, *args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != self.thread:
                return eager(*args, **kwargs)
            return method(self, *args, **kwargs)

        return hook

    return decorate


class Recorder:
    """What ``capture_hook.recorder`` is while a step records (see the module's doc string)."""

    def __init__(self, name: str) -> None:
        self.name = name  # the jitted function's, for error messages
        self.thread = threading.get_ident()  # the recording one (see _other_threads)
        # value number -> its size, and which memory it lives in (a number per owning array:
        # a view's base and the view share theirs)
        self.sizes: list[int] = []
        self.memory: list[int] = []
        self._owners: dict[int, int] = {}  # id(owning array) -> its memory number
        self._watch: list = []  # weak references that forget an id when its array dies
        self.number: dict[int, int] = {}  # id(array) -> its value number
        self._tables = (self.number, self._owners)  # what they forget
        self.constants: dict[str, Any] = {}  # names the program's code uses -> objects
        self.constant_names: dict[int, str] = {}
        self.places: dict[str, str] = {}  # constant name -> the user's line that first used it
        self.steps: list[Step] = []
        self.modules: list = []  # every Module called, for the train/eval guard
        # id(module) -> (module, its mode before the step first called train()/eval() on it):
        # the guard reads that mode, and a module the step sets before calling it needs none
        self.modes_before: dict[int, tuple[Any, bool]] = {}
        # id(tensor argument) -> its index in the call's tensors: a replay accumulates the
        # gradient of an argument into the tensor passed to that call, not this one
        self.arguments: dict[int, int] = {}
        # id(.grad array of a tensor argument, as the call found it) -> (the argument's index,
        # the array, kept so that its id stays its own): a replay cannot read it (see constant)
        self.argument_grads: dict[int, tuple[int, Any]] = {}
        # the tensor arguments that require grad and were made by a graph outside the step: a
        # backward would run into that graph, which a replay cannot rebuild for a new call
        self.outside_graphs: list[int] = []
        # id(leaf) -> (leaf, its array, requires_grad, hooks) for each leaf the step reached by
        # name (a parameter, a buffer, a tensor of an outer scope): the program holds its array
        # and was recorded for its requires_grad and hooks, so a replay is valid only while
        # they stay
        self.reached: dict[int, tuple] = {}
        self._reads: set = set()  # the values read by the step being noted
        # whether a backward added into a .grad: a step, not a forward whose result is
        # backpropagated by the caller (see ``Jitted.graph_results``)
        self.accumulated = False
        # the optimizers the step called (for the next recording's watch, with the leaves it
        # reached), and what is watched: id(leaf) -> (leaf, the .grad recorded calls left), and
        # each param group with the settings recorded calls left
        self.optimizers: list[Optimizer] = []
        self._grads: dict[int, tuple[Tensor, Any]] = {}
        self._groups: list[tuple[dict, list]] = []
        # id(.grad of a watched leaf or optimized parameter, as the call found it) -> its
        # leaf; and id(leaf) -> (leaf, that .grad) for each the step read: a replay reads
        # the same tensor, so it is valid only while the leaf's .grad is still it
        self._grad_owners: dict[int, Tensor] = {}
        self.grads_read: dict[int, tuple[Tensor, Tensor]] = {}
        # id(array) -> (the argument's index, or None, the tensor, its version, its values)
        # for each tensor whose values the step may read into Python (see read_values): a
        # small integer or bool argument, and a tensor the step made from Python values
        self.readable: dict[int, tuple] = {}
        # the argument's index -> its values, for each argument whose values the step read:
        # the recording replays only for calls passing these values there
        self.values_read: dict[int, list] = {}
        # the call's tensors, for the JitError of a read of values refused (see read_values)
        self.given: list[Tensor] = []
        # whether a refusal gives the recording up instead of raising (a compiled module's,
        # where torch.compile breaks the graph: see ``refuse``), and then the JitError's
        # message, the first refusal's
        self.lenient = False
        self.abandoned: str | None = None

    def here(self) -> bool:
        """Whether the step records in this thread. The hooks whose call a replay makes again
        (an optimizer's step, a scheduler's, ``zero_grad``, seeding) ask first: another
        thread's call runs as it is (it would run into its own hook again from
        ``_other_threads``)."""
        return threading.get_ident() == self.thread

    # ---- values and the code that names them ----------------------------------------------

    def value(self, array: Any) -> int:
        """A new value number for ``array`` (a result of the step)."""
        if not isinstance(array, (xp.ndarray, xp.generic)):  # a device's array
            raise JitError(
                f"scratchgrad.jit: {self.name}() computes on {device_of(array)} at "
                f"{user_line()}: a recorded step replays NumPy calls, so jit runs CPU "
                "tensors only; call the function without jit on other devices"
            )
        number, key = len(self.sizes), id(array)
        self.number[key] = number
        self.sizes.append(array.size)
        memory, owned = self._memory_of(array, key)
        self.memory.append(memory)
        # Not kept alive (the step's memory stays eager's): once it dies, its id may name
        # another array, which must not be taken for this value (nor for its memory, where
        # it is the array's own: one weak reference forgets both).
        self._watch.append(_watch(array, self._tables, key, number, memory if owned else -1))
        return number

    def made(self, tensor: Any) -> bool:
        """Whether the step made ``tensor``: its array is a value of the recording, and not
        one the program names as a constant (a parameter's, updated in place by the step)."""
        key = id(tensor.array)
        return key in self.number and key not in self.constant_names

    def new_value(self, size: int) -> int:
        """A number for a value that a rewrite adds: an array of ``size`` entries, in memory of
        its own (see rewrite.py)."""
        self.sizes.append(size)
        self.memory.append(max(self.memory, default=-1) + 1)
        return len(self.sizes) - 1

    def _memory_of(self, array: Any, key: int) -> tuple[int, bool]:
        """The memory number of ``array`` (``key``: its id), and whether it is new and the
        array's own (a view's base is watched here, for its memory)."""
        owner = memory_owner(array)
        owner_key = key if owner is array else id(owner)
        memory = self._owners.get(owner_key)
        if memory is not None:
            return memory, False
        memory = self._owners[owner_key] = len(self._watch)  # any number not given before
        if owner is not array:
            self._watch.append(_watch(owner, self._tables, owner_key, -1, memory))
        return memory, owner is array

    def input(self, array: Any) -> int:
        """The value number of ``array`` as an input of the program: a new one, or the one it
        has already (the same array passed twice)."""
        number = self.number.get(id(array))
        return self.value(array) if number is None else number

    def constant(self, obj: Any) -> str:
        """The name under which the program's code refers to ``obj`` itself."""
        name = self.constant_names.get(id(obj))
        if name is None:
            self.check_not_argument_grad(obj.array if isinstance(obj, Tensor) else obj)
            # interned: the second recording's names are then the first's strings, and the
            # program's code and globals share them (64 bytes each otherwise)
            name = sys.intern(f"c{len(self.constants)}")
            self.constants[name] = obj
            self.constant_names[id(obj)] = name
            self.places[name] = user_line()
        return name

    def check_not_argument_grad(self, array: Any) -> None:
        """Refuse ``array`` if it is the ``.grad`` a tensor argument came with: the program
        would hold the recording's, whatever tensor a replay is given."""
        argument = self.argument_grads.get(id(array))
        if argument is not None:
            self.refuse(
                f"reading the .grad of tensor argument #{argument[0]} as the call found it",
                "A replay would read the recording's: clear it (x.grad = None) or zero it "
                "before the call, or pass the gradient as an argument",
            )

    def expr(self, obj: Any) -> str:
        """Code for ``obj`` as an argument: a value of the step, a constant, or a tuple, list or
        dict (of string keys) of those. Tensors made in the step are rebuilt from their value;
        others are themselves (a parameter the step updated in place, whose ``.grad`` a
        replayed call may set)."""
        if isinstance(obj, xp.ndarray):
            number = self.number.get(id(obj))
            if number is None:
                return self.constant(obj)
            self._reads.add(number)
            return f"v{number}"
        if isinstance(obj, Tensor):
            if not self.made(obj):
                return self.constant(obj)
            number = self.number[id(obj.array)]
            self._reads.add(number)
            return f"make(v{number})"
        if type(obj) in (tuple, list):
            inner = ", ".join(self.expr(item) for item in obj)
            if type(obj) is list:
                return f"[{inner}]"
            return f"({inner},)" if len(obj) == 1 else f"({inner})"  # as repr: () and (x,)
        if type(obj) is dict and all(type(key) is str for key in obj):  # an op's attributes
            # (setitem's view steps: their index may hold an index array the step computed)
            return f"{{{', '.join(f'{key!r}: {self.expr(v)}' for key, v in obj.items())}}}"
        if obj is None or type(obj) in (bool, int):
            return repr(obj)
        return self.constant(obj)

    def calls(self) -> tuple[str, list[str]]:
        """The lines recorded, one string of them (each line ends with a newline), and the
        user's line (``file:line``) that made each. One string, not a list: a recording keeps
        them until the next is compared with it, and the recorder's own lines are freed, so
        their small strings would hold pages of small objects while the next one records."""
        lines = "".join(f"{line}\n" for step in self.steps for line in step.lines)
        return lines, [step.place for step in self.steps for _ in step.lines]

    def note(self, lines: list[str], writes: list, effect: bool) -> None:
        """Add a step of ``lines`` writing ``writes``, reading the values named since the last."""
        self.steps.append(Step(lines, tuple(self._reads), writes, effect))
        self._reads.clear()

    # ---- the hooks (see capture_hook) ------------------------------------------------------

    @_other_threads(_forward)
    def forward(self, cls: type, ctx: Any, args: tuple, arrays: list, kwargs: dict) -> Any:
        """Run ``cls.forward`` on ``arrays`` (those of ``args``) and note it; the arrays it
        leaves on ``ctx`` (saved intermediates a backward will use) become values of the step
        too."""
        for a in args:
            if isinstance(a, Tensor):
                self.reach(a)
        out = cls.forward(ctx, *arrays, **kwargs)
        positional = [self.expr(a) for a in arrays]
        args = positional + [f"{key}={self.expr(value)}" for key, value in kwargs.items()]
        ctx_name = f"x{len(self.steps)}"
        call = f"{self.constant(cls.forward)}({ctx_name}, {', '.join(args)})"
        # a user's forward that changed an input in place (mark_dirty): the program takes its
        # array, and apply the mark (a user's Function has no kernel rule, returning below)
        marked = type(out) is function.Dirty
        if marked:
            out, call = out.array, f"{call}.array"
        lines, writes = [], []
        if isinstance(out, tuple):
            out = tuple(_as_saved_array(ctx, o) for o in out)
            lines.append(f"t = {call}")
            for i, o in enumerate(out):
                writes.append(self.value(o))
                lines.append(f"v{writes[-1]} = asarray(t[{i}])")
            lines.append("del t")
        else:
            scalar = not isinstance(out, xp.ndarray)  # NumPy gives 0-d scalars
            if scalar:
                out, call = _as_saved_array(ctx, out), f"asarray({call})"
            writes.append(self.value(out))
            lines.append(f"v{writes[-1]} = {call}")
        extra = []
        for name, saved in vars(ctx).items():  # arrays a backward may read from ctx
            items = saved if type(saved) is tuple else (saved,)
            for i, item in enumerate(items):
                # a user's forward works on Tensors: what it leaves on ctx is their arrays
                array = item.array if isinstance(item, Tensor) else item
                scalar = isinstance(array, xp.generic)  # (of a 0-d array: fmax's mask)
                if scalar:  # as an array, which the backward then reads
                    array = _as_saved_array(ctx, array)
                if (
                    isinstance(array, xp.ndarray)
                    # numbered: an earlier value, or this call's (its results, an item seen)
                    and id(array) not in self.number
                    and not any(array is a for a in arrays)  # an input: named already
                ):
                    writes.append(self.value(array))
                    at = f"[{i}]" if type(saved) is tuple else ""
                    of = ".array" if isinstance(item, Tensor) else ""
                    read = f"{ctx_name}.{name}{at}{of}"
                    extra.append(f"v{writes[-1]} = {f'asarray({read})' if scalar else read}")
        rule = kernels.RULES.get(cls)
        if rule is not None and not extra and not isinstance(out, tuple):
            code = rule(positional, arrays, kwargs, self.expr)
            tried = None
            if isinstance(code, gemm.Product):  # its layouts noted, for the compiled program
                tried = gemm.tried(code, out, self.constant, f"v{writes[0]}")
                code = code.code
            if code is not None:  # (NumPy's ufuncs give a 0-d result as a scalar)
                lines = [f"v{writes[0]} = {f'asarray({code})' if not out.ndim else code}"]
                self.note(lines, writes, effect=False)
                self.steps[-1].tried = tried
                self._kernel_out(code, out, positional, arrays, kernels.OVERWRITES.get(cls, ()))
                return out
        make_ctx = f"new({self.constant(cls)})"
        if extra:  # the ctx is kept until its arrays are taken, then dropped
            lines = [f"{ctx_name} = {make_ctx}", *lines, *extra, f"del {ctx_name}"]
        else:
            lines = [line.replace(f"({ctx_name}, ", f"({make_ctx}, ", 1) for line in lines]
        self.note(lines, writes, effect=False)
        return function.Dirty(out) if marked else out

    @_other_threads(_nothing)
    def reach(self, tensor: Tensor) -> None:
        """Note ``tensor``, used by the step, in ``reached`` if it is a leaf the step did not
        make (a parameter, a buffer, a tensor of an outer scope): the program holds its array."""
        if tensor._ctx is None and id(tensor.array) not in self.number:
            self.check_not_argument_grad(tensor.array)  # (before the call changes anything)
            owner = self._grad_owners.get(id(tensor))
            if owner is not None and owner.grad is tensor:
                self.grads_read.setdefault(id(owner), (owner, tensor))
            post_hooks = engine._post_accumulate_hooks.get(id(tensor))  # (DDP's: accumulate)
            entry = (tensor, tensor.array, tensor.requires_grad, tensor._hooks, post_hooks)
            self.reached.setdefault(id(tensor), entry)

    def _kernel_out(
        self, code: str, out: Any, positional: list, arrays: list, overwrites: tuple
    ) -> None:
        """Note where the result of the kernel just noted (``code``) may be written: over
        which of its inputs, or into a buffer of which layout (see ``Step``)."""
        step = self.steps[-1]
        step.like = tuple(
            i
            for i, a in enumerate(arrays)
            if isinstance(a, xp.ndarray) and (a.shape, a.strides) == (out.shape, out.strides)
        )
        if kernels.OUT not in code:
            return
        step.reusable = tuple(
            int(name[1:])
            for i, (name, a) in enumerate(zip(positional, arrays))
            if i in overwrites
            and name.startswith("v")
            # its own memory, or a view of the step's (W5's ReLU over a permuted product:
            # 2% of its step), not a parameter's
            and (a.base is None or self._made_here(a))
            and a.flags.writeable
            # and laid out as the result: written over another layout, the result would be
            # added in another order by later reductions and products
            and (a.shape, a.dtype, a.strides) == (out.shape, out.dtype, out.strides)
            # NOTE: and of more than one entry: NumPy multiplies complex numbers of one entry
            # written over a factor by another loop than its result's (other bits)
            and out.size > 1
        )
        if out.ndim and out.flags.c_contiguous:  # (a 0-d result comes as a NumPy scalar)
            step.layout = (out.shape, out.dtype)

    def _made_here(self, view: Any) -> bool:
        """Whether the memory ``view`` shares is an array the step made or was given (a
        value), whose readers the program knows: not a parameter's, which it must not
        overwrite. (A given array is never overwritten either: ``program._free_after``.)"""
        return id(memory_owner(view)) in self.number

    @_other_threads(_call)
    def call(self, function: Callable, *args: Any, **kwargs: Any) -> Any:
        """Run ``function`` (an array call made outside ``Function.forward``: an in-place
        update, a random draw, a mask) and note it. Kept even when nothing reads its result
        (it may change its arguments, or the state of a random generator), unless it is one
        of ``kernels.PURE_CALLS``."""
        result = function(*args, **kwargs)
        positional = [self.expr(a) for a in args]
        code = ", ".join(positional + [f"{k}={self.expr(v)}" for k, v in kwargs.items()])
        call = f"{self.constant(function)}({code})"
        effect = function not in kernels.PURE_CALLS
        scalar = isinstance(result, xp.generic)  # NumPy gives a 0-d result as a scalar:
        if scalar:  # handed on as an array, the value a replay makes again
            result = xp.asarray(result)
        if isinstance(result, xp.ndarray):
            writes = [self.value(result)]
            rule = None if kwargs else kernels.CALL_RULES.get(function)
            kernel = rule and rule(positional, args, self.expr)
            made = kernel or call
            # (a kernel's ufunc gives a 0-d result as a scalar, where the call gave an array)
            wrapped = scalar or (kernel and not result.ndim)
            self.note([f"v{writes[0]} = {f'asarray({made})' if wrapped else made}"], writes, effect)
            if kernel:
                self._kernel_out(kernel, result, positional, args, ())
        elif type(result) is tuple and all(isinstance(r, (xp.ndarray, xp.generic)) for r in result):
            if any(isinstance(r, xp.generic) for r in result):  # as above, each one
                result = tuple(xp.asarray(r) for r in result)
                call = f"tuple(asarray(r) for r in {call})"
            writes = [self.value(r) for r in result]
            targets = ", ".join(f"v{w}" for w in writes)
            self.note([f"{targets}, = {call}"], writes, effect=effect)
        else:
            self.note([call], [], effect=True)
        return result

    @_other_threads(_declined)
    def accumulate(self, leaf: Tensor, g: Tensor, create_graph: bool, owned: dict) -> bool:
        """Add ``g`` into ``leaf.grad`` now, and note it: a replay does it again, deciding then
        (as eager code does) whether ``.grad`` is created or added to. True: done (False from
        another thread: ``engine._accumulate`` does it)."""
        self.accumulated = True
        if create_graph:
            return self.refuse("backward(create_graph=True)")  # (given up: the engine adds)
        hooks = engine._post_accumulate_hooks.get(id(leaf), ())
        if not all(getattr(hook, "replays_itself", False) for hook in hooks):  # (DDP's do)
            return self.refuse(
                "a post-accumulate-grad hook",
                "Its Python (an optimizer's step per parameter) runs inside backward(), which "
                "a replay runs as recorded calls: remove the hook and step the optimizer after "
                "backward() in the step",
            )
        if self.outside_graphs:
            return self.refuse(
                f"backward() with tensor argument #{self.outside_graphs[0]} made by operations "
                "outside the step (requires grad, not a leaf: pass .detach(), or a leaf)"
            )
        index = self.arguments.get(id(leaf))
        if index is not None:
            target = f"tensors[{index}]"
        elif id(leaf.array) in self.number:  # a leaf the step made: a new one at each replay
            grad = "None" if leaf.grad is None else self.expr(leaf.grad.array)
            target = f"made_leaf({self.expr(leaf.array)}, {grad})"
        else:  # reached by name
            target = self.constant(leaf)
        code = f"accumulate({target}, {self.expr(g.array)}, {owned.get(g) is leaf})"
        watched = self._grads.get(id(leaf))
        if watched is not None:
            self._check_grads([watched])
        with _Paused():
            engine._accumulate(leaf, g, False, owned)
        if watched is not None:
            self._grads[id(leaf)] = (leaf, leaf.grad)
        writes = [self.value(leaf.grad.array)]  # later calls may read or change .grad's array
        self.note([f"v{writes[0]} = {code}"], writes, effect=True)
        return True

    @_other_threads(_assign_grad)
    def assign_grad(self, tensor: Tensor, grad: Tensor | None) -> None:
        """``tensor.grad = grad`` in the step: a gradient of ``func.grad`` handed to an
        optimizer, or None (``p.grad = None``, as PyTorch's performance guide suggests in place
        of ``zero_grad()``; ``del p.grad``). Noted as a call, so that a replay assigns it again
        (the recording's gradient stayed, silently, or the next backward added to the last).
        A tensor the step made is new at each replay; a tensor argument's ``.grad`` is the
        one of the tensor each call passes."""
        index = self.arguments.get(id(tensor))
        if index is not None:
            if grad is not None:
                self.refuse(
                    f"assigning .grad of tensor argument #{index}",
                    "A replay would assign the recording's gradient: return the gradient",
                )
                return _assign_grad(tensor, grad)  # (given up: as eagerly)
            self.check_watched()
            _assign_grad(tensor, None)
            if id(tensor) in self._grads:
                self._grads[id(tensor)] = (tensor, None)
            self.note([f"{self.constant(_assign_grad)}(tensors[{index}], None)"], [], True)
        elif self.made(tensor):
            _assign_grad(tensor, grad)
        else:
            self.replayed(_assign_grad, tensor, grad)

    def watch(self, leaves: list[Tensor], optimizers: list[Optimizer]) -> None:
        """Check that the ``.grad`` of ``leaves`` and the param groups' settings of
        ``optimizers`` (those an earlier recording reached and called) are changed only by
        recorded calls (``zero_grad()``, ``backward()``, ``p.grad = None``, a scheduler's
        ``step()``): an assignment such as ``group["lr"] = lr``, or one another thread makes,
        is Python that a replay would not run."""
        self._grads = {id(leaf): (leaf, leaf.grad) for leaf in leaves}
        self._groups = [(g, _settings(g)) for opt in optimizers for g in opt.param_groups]
        optimized = [p for group, _ in self._groups for p in group["params"]]
        self._grad_owners = {id(t.grad): t for t in [*leaves, *optimized] if t.grad is not None}

    def check_watched(self) -> None:
        """No ``.grad`` or group setting watched was assigned since the last recorded call."""
        self._check_grads(self._grads.values())
        for group, settings in self._groups:
            now = _settings(group)
            changed = [k for (k, a), (_, b) in zip(settings, now) if not (a is b or a == b)]
            if changed or len(now) != len(settings):
                self.refuse(
                    f"a param group's {changed[0] if changed else 'settings'!r} set in Python "
                    f"(group[{changed[0] if changed else 'lr'!r}] = ...; an LR scheduler's "
                    "step() is replayed: use one, e.g. LambdaLR) before the call"
                )

    def _check_grads(self, watched: Any) -> None:
        for leaf, grad in watched:
            if leaf.grad is not grad:
                self.refuse(
                    f"a .grad changed by no recorded call (of a tensor of shape "
                    f"{tuple(leaf.shape)}: assigned by another thread?) before the call",
                    "Change it in the step's own thread",
                )

    @_other_threads(_nothing)
    def called(self, module: Any) -> None:
        """``module`` is called: guard on its train/eval mode, unless the step set it."""
        if id(module) not in self.modes_before:
            self.modules.append(module)

    def set_mode(self, train: Callable, module: Any, mode: bool) -> Any:
        """``train(module, mode)`` (``Module.train``) inside the step: note the modes it
        changes had before, and note the call itself, which a replay makes again (the modes
        after a replayed step are the eager step's)."""
        for m in module.modules():
            self.modes_before.setdefault(id(m), (m, m.training))
        return self.replayed(train, module, mode)

    def modules_held(self) -> list:
        """Every module the step called or set the mode of (its submodules included)."""
        return [*self.modules, *(m for m, _ in self.modes_before.values())]

    def guarded_modes(self) -> tuple[list, list[bool]]:
        """The modules whose train/eval mode the recording depends on (each called before
        the step set its mode, if it did), and each one's mode when the step began."""
        modules = list({id(m): m for m in self.modules}.values())
        return modules, [self.modes_before.get(id(m), (m, m.training))[1] for m in modules]

    def replayed(self, function: Callable, *args: Any) -> Any:
        """Run ``function(*args)`` now without recording its inside, and note the call: a
        replay calls it again, so it reads what it reads (learning rates, step counts,
        ``.grad``) at that time. A tensor it returns becomes a value of the step."""
        if any(callable(a) and not isinstance(a, (Tensor, type)) for a in args[1:]):
            self.refuse(f"{getattr(function, '__qualname__', function)} with a closure")
            return function(*args)  # (given up: as eagerly)
        arguments = ", ".join(self.expr(a) for a in args)
        self.check_watched()
        with _Paused():  # an optimizer's update or zero_grad: generated code where there is one
            result, update = updates.recorded(function, args)
        if args and isinstance(args[0], Optimizer) and args[0] not in self.optimizers:
            self.optimizers.append(args[0])
        self._grads = {key: (leaf, leaf.grad) for key, (leaf, _) in self._grads.items()}
        self._groups = [(group, _settings(group)) for group, _ in self._groups]  # as left
        call = self.constant(function) if update is None else f"{self.constant(update)}.run"
        code = f"{call}({arguments})"
        if isinstance(result, Tensor) and id(result.array) not in self.number:
            writes = [self.value(result.array)]
            self.note([f"v{writes[0]} = {code}.array"], writes, effect=True)
        else:
            self.note([code], [], effect=True)
        self.steps[-1].scratch = None if update is None else update.scratch
        return result

    def readable_arguments(self, tensors: list[Tensor]) -> None:
        """Note which of the call's ``tensors`` the step may read the values of (see
        ``read_values``): integer or bool CPU tensors of at most ``MOST_READ`` entries that
        do not require grad (a packed batch's sizes, the lengths to pack). Not an inference
        tensor: its version counter counts no change in place."""
        self.given = tensors
        for index, t in enumerate(tensors):
            array = t.array
            if (
                type(array) is xp.ndarray
                and array.dtype.kind in "iub"
                and array.size <= MOST_READ
                and not t.requires_grad
                and type(t._counter) is not InferenceCounter
            ):
                entry = (index, t, t._version, array.tolist())
                self.readable.setdefault(id(array), entry)

    def made_from_values(self, tensor: Tensor) -> None:
        """Note that the step made ``tensor`` from Python values (not by an operation the
        program replays): they are frozen into the program as its constant, so reading them
        back (see ``read_values``) freezes nothing more."""
        if type(tensor._counter) is not InferenceCounter:  # (whose version counts nothing)
            entry = (None, tensor, tensor._version, tensor.array.tolist())
            self.readable[id(tensor.array)] = entry

    @_other_threads(_nothing)
    def read_values(self, tensor: Tensor, what: str) -> None:
        """Let the step read ``tensor``'s values into Python (``what``: ``.tolist()``,
        ``.item()``...) if they are those of a readable argument (itself, or a view of its
        memory) as the call passed it, which the recording then guards (a replay only for
        calls passing the same values), or of a tensor the step made from Python values;
        else raise the JitError. Refused too where the step changed them in place before
        (its version moved, or its values): the program would replay that change before
        reading what was read here, which may differ."""
        array = tensor.array
        entry = self.readable.get(id(array)) or self.readable.get(id(memory_owner(array)))
        if entry is None:
            return self._refuse_read(array, what)
        index, source, version, values = entry
        if source._version != version or source.array.tolist() != values:
            return self.refuse(f"{what} of a tensor the step changed in place")
        if index is not None:
            self.values_read[index] = values

    def _refuse_read(self, array: Any, what: str) -> None:
        """Refuse reading the values of ``array`` (``what``), saying why they are not guarded
        where it is (a view of) a tensor argument's: floating values, or too many of them."""
        owner = memory_owner(array)
        index = next((i for i, t in enumerate(self.given) if memory_owner(t.array) is owner), -1)
        if index < 0:  # computed by the step: no guard could know its values before the call
            return self.refuse(what)
        given = self.given[index].array
        if given.dtype.kind not in "iub":
            return self.refuse(
                f"{what} of tensor argument #{index} ({given.dtype})",
                "Floating values are not guarded (a guard on them would record a new program "
                "for nearly every new value): pass the number as a Python number (each value "
                "records a program of its own) or read it outside the step",
            )
        if given.size > MOST_READ:
            return self.refuse(
                f"{what} of tensor argument #{index} ({given.size} entries)",
                f"Only integer arguments of at most {MOST_READ} entries are guarded (each "
                "call compares their values): a guard on more would cost more than the step. "
                "Read it outside the step and pass what the step needs (Python numbers, a "
                "smaller tensor)",
            )
        return self.refuse(what)  # (one that requires grad, an inference tensor)

    @_other_threads(_nothing)
    def refuse(self, what: str, instead: str = _MOVE_OUT) -> None:
        """Raise the JitError for ``what``, naming the user's line that did it; ``instead``:
        what to do (by default, move it out of the step). A lenient recorder gives the
        recording up instead (``abandon``) and returns: the call goes on eagerly from here,
        so a caller returns what eager code gives."""
        error = JitError(
            f"scratchgrad.jit: {what} at {user_line()} while recording {self.name}(): a "
            "recorded step is replayed without running Python, so the value would be frozen "
            f"into the program. {instead}, or call the function without jit."
        )
        if not self.lenient:
            raise error
        self.abandon(str(error))

    def check_kept(self) -> None:
        """Raise the JitError of the refusal that gave the recording up, if one did."""
        if self.abandoned is not None:
            raise JitError(self.abandoned)

    def abandon(self, why: str) -> None:
        """Stop recording (the first reason given is kept): the rest of the call runs as
        eager code, and its recording is dropped."""
        if self.abandoned is None:
            self.abandoned = why
        if capture_hook.recorder is self:
            capture_hook.recorder = backend.recorder = None


def _settings(group: dict) -> list:
    """A param group's settings (all but its parameters), to compare."""
    return [(key, value) for key, value in group.items() if key != "params"]


def _as_saved_array(ctx: Any, out: Any) -> Any:
    """``out`` as an array (NumPy's reductions give 0-d scalars), put in its place wherever
    ``forward`` left it on ``ctx``: a backward then reads this array, the value the recorder
    numbers, instead of a second copy made by ``Function.apply`` that a replay would never
    update."""
    if isinstance(out, xp.ndarray):
        return out
    array = xp.asarray(out)
    for name, saved in vars(ctx).items():
        if saved is out:
            setattr(ctx, name, array)
        elif type(saved) is tuple and any(item is out for item in saved):
            setattr(ctx, name, tuple(array if item is out else item for item in saved))
    return array


def _watch(array: Any, tables: tuple, key: int, number: int, memory: int) -> Any:
    """A weak reference to ``array`` that forgets its value ``number`` and its ``memory``
    (-1: none) in ``tables`` (see ``_Forget``) when the array dies; a NumPy scalar (which
    takes no weak references) is kept alive instead."""
    try:
        return _Forget(array, tables, key, number, memory)
    except TypeError:
        return array


class _Forget(weakref.ref):
    """A weak reference holding what its callback forgets: ``key`` (the array's id) in the
    recorder's tables of value numbers and of memory owners, if they still hold ``number``
    and ``memory``. One object of 112 bytes per array, where a ``functools.partial``
    callback per table took 224 with its own and its arguments' (a recording watches each
    array it numbers, and the peak of such small objects sets the pages a recording adds).
    The callback must not reference the recorder (which holds the weak reference): in that
    cycle a dropped recording, its lines and its generated updates would wait for the cycle
    collector, piling up in memory."""

    __slots__ = ("tables", "key", "number", "memory")

    def __new__(cls, array: Any, tables: tuple, key: int, number: int, memory: int) -> _Forget:
        self = super().__new__(cls, array, _forget)
        self.tables, self.key, self.number, self.memory = tables, key, number, memory
        return self

    def __init__(self, array: Any, *_: Any) -> None:
        super().__init__(array, _forget)


def _forget(dead: _Forget) -> None:
    """Drop the dead array's entries that are still its own (its id may name another array
    by now)."""
    for table, entry in zip(dead.tables, (dead.number, dead.memory)):
        if entry >= 0 and table.get(dead.key) == entry:
            del table[dead.key]


def refuse_rebound_leaves(recorder: Recorder) -> None:
    """Raise a JitError if the step just recorded gave a leaf it reached by name a new array
    (``p.data = ...``), another requires_grad or a hook: Python, which a replay would not run.
    The error names the user's line that first used the leaf."""
    changed = _first_changed(recorder.reached.values())
    if changed is not None:
        array = changed[1]
        place = recorder.places.get(recorder.constant_names.get(id(array), ""), "<unknown>")
        raise JitError(
            f"scratchgrad.jit: {recorder.name}() gives a tensor it uses (first at {place}) "
            "a new array (`.data = ...`), another requires_grad or a hook: a replay would "
            f"not repeat that Python. {ALREADY_RUN} Update it in place (`p.sub_(...)` "
            "under no_grad()), use an optimizer, register hooks before the call, or call the "
            "function without jit."
        )


def unchanged(reached: list[tuple]) -> bool:
    """Whether each leaf a recording reached by name (see ``Recorder.reached``) still has the
    array, the requires_grad and the hooks it had (not frozen, unfrozen, given new ``.data``,
    converted by ``model.double()``, hooked)."""
    return _first_changed(reached) is None


class ModuleStamps:
    """The modules a recording depends on (those the step called, set the mode of, or read by
    name, and their submodules), the train/eval mode of those whose mode it assumed, and
    ``seen``, the count of ``capture_hook.changes`` when all were last found as recorded: a
    replay is valid only while none of them had an attribute set or deleted since (a layer
    or parameter replaced, ``dropout.p = 0.2``, ``self.scale = 2.0``), which the program,
    holding the old objects and values, would not see, and each is in its recorded mode.
    Made once the step has run: what the recording call itself set (a forward caching
    ``self.last = x``) is what its replays keep."""

    def __init__(
        self, roots: list, moded: list, training: list[bool], optimizers: list = ()
    ) -> None:
        memo: set[int] = set()
        self.modules = [m for root in roots for _, m in root.named_modules(memo)]
        # and the optimizers it called, stamped when their step hooks change (Optimizer's
        # __setattr__)
        self.modules += optimizers
        for module in self.modules:  # held from now: its changes are stamped
            module.__dict__.setdefault("_jit_stamp", 0)
        self.moded, self.training = moded, training
        self.seen = capture_hook.changes
        if [m.training for m in moded] != training:  # the step left other modes: checked next
            capture_hook.changes += 1

    def unchanged(self) -> bool:
        """Whether no module had an attribute set or deleted since the recording."""
        seen = self.seen
        return all(module._jit_stamp <= seen for module in self.modules)

    def hold(self) -> bool:
        """Whether the modules are unchanged and in their recorded modes: one comparison
        while no module was changed and no mode set anywhere since the last look."""
        changes = capture_hook.changes
        if self.seen == changes:
            return True
        if not self.unchanged() or [m.training for m in self.moded] != self.training:
            return False
        self.seen = changes
        return True


def _first_changed(reached: Any) -> tuple | None:
    """The first entry of ``reached`` whose leaf's array, requires_grad or hooks changed."""
    hooked = engine._post_accumulate_hooks  # empty unless someone registered one
    for entry in reached:
        leaf, array, requires_grad, hooks, post_hooks = entry
        if leaf.array is not array or leaf.requires_grad != requires_grad:
            return entry
        if leaf._hooks is not hooks or (hooked and hooked.get(id(leaf)) is not post_hooks):
            return entry
    return None


class RecordingElsewhere(Exception):
    """Raised on entering ``Capturing`` while another thread records: the caller runs its
    call eagerly instead, and records on a later call."""


class Capturing:
    """Record into ``recorder`` inside: ``capture_hook.recorder`` is it, then None again.
    One step records at a time in a process (the hooks have one recorder to call). Entered
    while another thread records, it raises ``RecordingElsewhere`` rather than wait: that
    step may be waiting for this thread (a queue, an event, a join), which would never end;
    entered again by the recording thread (a jitted call inside a custom Function's forward,
    where the hooks are off), a nested jit ``JitError``."""

    holder: Recorder | None = None  # the recorder inside, while one records

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def __enter__(self) -> None:
        if not _RECORDING.acquire(blocking=False):
            holder = Capturing.holder  # (read once: another thread may be setting it)
            if holder is not None and holder.here():  # (only this thread sets it to its own)
                holder.refuse(f"recording {self.recorder.name}() too (nested jit)")
            raise RecordingElsewhere
        Capturing.holder = self.recorder
        capture_hook.recorder = backend.recorder = self.recorder

    def __exit__(self, *exc: object) -> None:
        capture_hook.recorder = backend.recorder = Capturing.holder = None
        _RECORDING.release()


_RECORDING = threading.Lock()


class _Paused:
    """No recording inside: what runs here is noted as one call by the recorder."""

    def __enter__(self) -> None:
        self.recorder = capture_hook.paused = capture_hook.recorder
        capture_hook.recorder = backend.recorder = None

    def __exit__(self, *exc: object) -> None:
        recorder = self.recorder  # (None again where the call inside gave the recording up)
        kept = recorder is not None and recorder.abandoned is None
        capture_hook.recorder = backend.recorder = recorder if kept else None
        capture_hook.paused = None


def user_line() -> str:
    """``file:line`` of the innermost frame of the user's code: outside scratchgrad and the
    installed libraries (one may wrap ``print``), else outside scratchgrad. Interned: a
    recording notes one for each call and constant, most of them the same few lines (a
    step's ``loss.backward()`` makes most of its calls), and keeps them until it is checked."""
    outside = None  # the innermost frame outside scratchgrad
    frame = sys._getframe(1)
    while frame is not None:  # from the innermost out, stopping at the user's frame
        name = frame.f_code.co_filename
        if not name.startswith(_PACKAGE):
            if users_file(name):
                return sys.intern(f"{name}:{frame.f_lineno}")
            outside = outside or frame
        frame = frame.f_back
    if outside is None:
        return "<unknown>"
    return sys.intern(f"{outside.f_code.co_filename}:{outside.f_lineno}")


def users_file(name: str) -> bool:
    """Whether the file ``name`` is the user's code: outside scratchgrad and the installed
    libraries."""
    return not name.startswith((_PACKAGE, *_LIBRARIES)) and "site-packages" not in name
