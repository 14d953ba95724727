"""The ``nn.Module`` API against PyTorch, case by case: each case is one function of either
library, run on both, and what it returns (names, dtypes: plain Python) or the type of error it
raises must be the same."""

from collections import OrderedDict

import pytest
import torch

import scratchgrad as sg


def outcome(case, lib):
    try:
        return case(lib)
    except Exception as error:  # noqa: BLE001  (the error's type is the outcome)
        return type(error)


def same_as_torch(case):
    assert outcome(case, sg) == outcome(case, torch)


def net(lib):
    """A module with a parameter "w", a buffer "b" and a child "sub"."""
    module = lib.nn.Module()
    module.w = lib.nn.Parameter(lib.ones(2))
    module.register_buffer("b", lib.zeros(2))
    module.sub = lib.nn.Linear(2, 2)
    return module


def names(module):
    return [list(module._parameters), list(module._buffers), list(module._modules)]


def registered_after(change):
    def case(lib):
        module = net(lib)
        change(lib, module)
        return names(module) + [list(module.state_dict())]

    return case


REGISTRATION = {
    "a layer over a parameter": lambda lib, m: setattr(m, "w", lib.nn.Linear(1, 1)),
    "a layer over a buffer": lambda lib, m: setattr(m, "b", lib.nn.Linear(1, 1)),
    "a parameter over a layer": lambda lib, m: setattr(m, "sub", lib.nn.Parameter(lib.ones(1))),
    "a parameter named with a dot": lambda lib, m: setattr(m, "a.b", lib.nn.Parameter(lib.ones(1))),
    "a parameter with an empty name": lambda lib, m: setattr(m, "", lib.nn.Parameter(lib.ones(1))),
    "register_buffer over a parameter": lambda lib, m: m.register_buffer("w", lib.ones(1)),
    "register_buffer over a layer": lambda lib, m: m.register_buffer("sub", lib.ones(1)),
    "register_parameter over a buffer": lambda lib, m: m.register_parameter(
        "b", lib.nn.Parameter(lib.ones(1))
    ),
    "register_parameter over a layer": lambda lib, m: m.register_parameter(
        "sub", lib.nn.Parameter(lib.ones(1))
    ),
    "add_module over a parameter": lambda lib, m: m.add_module("w", lib.nn.ReLU()),
    "add_module over a buffer": lambda lib, m: m.add_module("b", lib.nn.ReLU()),
    "add_module of a non-module under a bad name": lambda lib, m: m.add_module("a.b", 3),
    "a parameter over a plain attribute": lambda lib, m: (
        setattr(m, "plain", 1),
        setattr(m, "plain", lib.nn.Parameter(lib.ones(1))),
    ),
    "del of a missing attribute": lambda lib, m: delattr(m, "missing"),
    "del of a parameter": lambda lib, m: delattr(m, "w"),
}


@pytest.mark.parametrize("change", REGISTRATION.values(), ids=REGISTRATION)
def test_registration_accepts_and_refuses_as_torch(change):
    same_as_torch(registered_after(change))


def test_dir_lists_the_entries_but_no_digit_names_as_torch():
    def case(lib):
        module = lib.nn.Sequential(lib.nn.ReLU())
        module._parameters["direct"] = lib.nn.Parameter(lib.ones(1))
        listed = dir(module)
        return [name in listed for name in ("0", "direct", "training", "forward", "_modules")]

    same_as_torch(case)


def test_named_modules_skips_the_modules_a_caller_put_in_memo_as_torch():
    def case(lib):
        module = net(lib)
        return [name for name, _ in module.named_modules(memo={module.sub})]

    same_as_torch(case)


def dtypes(module):
    tensors = [*module.named_parameters(), *module.named_buffers()]
    return [(name, str(tensor.dtype).split(".")[-1].rpartition(".")[2]) for name, tensor in tensors]


def complex_net(lib):
    module = net(lib)
    module.register_buffer("c", lib.ones(2, dtype=lib.complex64))
    module.register_buffer("steps", lib.zeros((), dtype=lib.int64))
    return module


CONVERSIONS = {
    "to(complex128)": lambda lib, m: m.to(lib.complex128),
    "to(dtype=complex64)": lambda lib, m: m.to(dtype=lib.complex64),
    "to(float64) takes complex buffers too": lambda lib, m: m.to(lib.float64),
    "double() leaves them": lambda lib, m: m.double(),
    "half() leaves them": lambda lib, m: m.half(),
    "to(int64) raises": lambda lib, m: m.to(lib.int64),
    "to(device, dtype, non_blocking)": lambda lib, m: m.to("cpu", lib.float64, True),
    # a Python number is read as a 0-d tensor of it (ours raised, or took True as non_blocking)
    "to(2.5) reads a float64 tensor": lambda lib, m: m.to(2.5),
    "to(1j) reads a complex128 tensor": lambda lib, m: m.to(1j),
    "to(True) reads a bool tensor: raises": lambda lib, m: m.to(True),
    "to(tensor=) takes the tensor's dtype": lambda lib, m: m.to(tensor=lib.zeros(1).double()),
    "to(tensor, non_blocking)": lambda lib, m: m.to(lib.zeros(1).double(), True),
    "to(dtype, non_blocking, copy) raises": lambda lib, m: m.to(lib.float64, False, True),
    "to(copy=False) raises": lambda lib, m: m.to(lib.float64, copy=False),
    "to(device, dtype, non_blocking, an int) raises": lambda lib, m: m.to("cpu", lib.float64, 0, 1),
}


@pytest.mark.filterwarnings("ignore")  # (complex modules, complex to real: both warn)
@pytest.mark.parametrize("convert", CONVERSIONS.values(), ids=CONVERSIONS)
def test_dtype_conversions_pick_the_tensors_torch_picks(convert):
    def case(lib):
        module = complex_net(lib)
        return [convert(lib, module) is module, dtypes(module)]

    same_as_torch(case)


def test_to_complex_warns_as_torch():
    with pytest.warns(UserWarning, match="Complex modules are a new feature"):
        net(sg).to(sg.complex64)


def test_half_of_a_float64_module_rounds_through_float32_as_torch():
    value = 1 + 2**-11 + 2**-40  # to float16 directly: up; through float32: a tie, to even

    def case(lib):
        module = lib.nn.Linear(1, 1).double()
        with lib.no_grad():
            module.weight.fill_(value)
        module.weight.grad = lib.full((1, 1), value, dtype=lib.float64)
        module.half()
        return [module.weight.double().item(), module.weight.grad.double().item()]

    same_as_torch(case)


def test_zero_grad_without_set_to_none_zeroes_the_gradient_in_place_as_torch():
    def case(lib):
        module = lib.nn.Linear(2, 1)
        module(lib.ones(3, 2)).sum().backward()
        grad = module.weight.grad
        module.zero_grad(set_to_none=False)
        return [module.weight.grad is grad, module.weight.grad.abs().sum().item()]

    same_as_torch(case)


def layers(lib, count=4):
    """Linear layers told apart by their output sizes 1, 2, ..."""
    return [lib.nn.Linear(1, size) for size in range(1, count + 1)]


def entries(container):
    """A container's names, each with its layer's output size (or its class)."""
    return [
        (name, module.out_features if hasattr(module, "out_features") else type(module).__name__)
        for name, module in container._modules.items()
    ]


def sequential(lib):
    return lib.nn.Sequential(*layers(lib))


def named_sequential(lib):
    return lib.nn.Sequential(OrderedDict((name, lib.nn.ReLU()) for name in "abc"))


def module_list(lib):
    return lib.nn.ModuleList(layers(lib))


CONTAINERS = {
    "del seq[1]": lambda lib, s=sequential: (lambda c: c.__delitem__(1) or c)(s(lib)),
    "del seq[-1]": lambda lib, s=sequential: (lambda c: c.__delitem__(-1) or c)(s(lib)),
    "del seq[::2]": lambda lib, s=sequential: (lambda c: c.__delitem__(slice(None, None, 2)) or c)(
        s(lib)
    ),
    "del of a named seq": lambda lib: (lambda c: c.__delitem__(1) or c)(named_sequential(lib)),
    "seq[9] deleted": lambda lib: sequential(lib).__delitem__(9),
    "seq.insert(1)": lambda lib: sequential(lib).insert(1, lib.nn.ReLU()),
    "seq.insert(-1)": lambda lib: sequential(lib).insert(-1, lib.nn.ReLU()),
    "seq.insert(len)": lambda lib: sequential(lib).insert(4, lib.nn.ReLU()),
    "seq.insert(9)": lambda lib: sequential(lib).insert(9, lib.nn.ReLU()),
    "seq.insert(-9)": lambda lib: sequential(lib).insert(-9, lib.nn.ReLU()),
    "seq.insert of a non-module": lambda lib: sequential(lib).insert(0, 3),
    "seq.extend": lambda lib: sequential(lib).extend([lib.nn.ReLU(), lib.nn.Tanh()]),
    "seq.pop(1)": lambda lib: (lambda c: [entries(lib.nn.Sequential(c.pop(1))), c])(
        sequential(lib)
    ),
    "seq.pop(slice)": lambda lib: (lambda c: [entries(c.pop(slice(0, 2))), c])(sequential(lib)),
    "seq + seq": lambda lib: sequential(lib) + lib.nn.Sequential(lib.nn.ReLU()),
    "seq + list": lambda lib: sequential(lib) + [lib.nn.ReLU()],
    "seq += seq": lambda lib: (lambda c: c.__iadd__(lib.nn.Sequential(lib.nn.ReLU())))(
        sequential(lib)
    ),
    "seq * 2": lambda lib: lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh()) * 2,
    "2 * seq": lambda lib: 2 * lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh()),
    "seq *= 3": lambda lib: lib.nn.Sequential(lib.nn.ReLU()).__imul__(3),
    "seq * 0": lambda lib: lib.nn.Sequential(lib.nn.ReLU()) * 0,
    "seq * 1.5": lambda lib: lib.nn.Sequential(lib.nn.ReLU()).__mul__(1.5),
    "del ml[::2]": lambda lib: (lambda c: c.__delitem__(slice(None, None, 2)) or c)(
        module_list(lib)
    ),
    "ml.pop(-1)": lambda lib: (lambda c: [c.pop(-1).out_features, c])(module_list(lib)),
    "ml.pop(slice)": lambda lib: (lambda c: [entries(c.pop(slice(1, 3))), c])(module_list(lib)),
    "ml + ml": lambda lib: module_list(lib) + lib.nn.ModuleList([lib.nn.ReLU()]),
    "ml + list": lambda lib: module_list(lib) + [lib.nn.ReLU()],
    "ml.insert(1)": lambda lib: (lambda c: c.insert(1, lib.nn.ReLU()) or c)(module_list(lib)),
    "md.update(md)": lambda lib: (
        lambda c: c.update(lib.nn.ModuleDict({"q": lib.nn.ReLU(), "a": lib.nn.Tanh()})) or c
    )(lib.nn.ModuleDict({"a": lib.nn.ReLU(), "b": lib.nn.ReLU()})),
    "md.clear()": lambda lib: (lambda c: c.clear() or c)(lib.nn.ModuleDict({"a": lib.nn.ReLU()})),
}


@pytest.mark.parametrize("change", CONTAINERS.values(), ids=CONTAINERS)
def test_container_methods_as_torch(change):
    def case(lib):
        result = change(lib)
        if isinstance(result, list):
            return [entries(r) if isinstance(r, lib.nn.Module) else r for r in result]
        return [type(result).__name__, entries(result)]

    same_as_torch(case)


def test_slicing_keeps_the_container_subclass_as_torch():
    def case(lib):
        class Stack(lib.nn.Sequential):
            pass

        class Layers(lib.nn.ModuleList):
            pass

        return [type(Stack(*layers(lib))[1:]).__name__, type(Layers(layers(lib))[1:]).__name__]

    same_as_torch(case)


def parameter_dict(lib):
    return lib.nn.ParameterDict({"b": lib.ones(2), "a": lib.nn.Parameter(lib.zeros(1))})


PARAMETER_DICTS = {
    "a key with a dot": lambda lib, d: d.__setitem__("x.y", lib.ones(1)),
    "a key naming a method": lambda lib, d: d.__setitem__("keys", lib.ones(1)),
    "popitem until empty": lambda lib, d: [d.popitem(), d.popitem(), d.popitem()],
    "d | other": lambda lib, d: d | lib.nn.ParameterDict({"q": lib.ones(1)}),
    "other | d": lambda lib, d: lib.nn.ParameterDict({"q": lib.ones(1)}) | d,
    "d |= other": lambda lib, d: d.__ior__(lib.nn.ParameterDict({"q": lib.ones(1)})) is d,
}


@pytest.mark.parametrize("change", PARAMETER_DICTS.values(), ids=PARAMETER_DICTS)
def test_parameter_dict_as_torch(change):
    def case(lib):
        params = parameter_dict(lib)
        result = outcome(lambda lib: change(lib, params), lib)
        listed = [name for name, _ in params.named_parameters()]
        # (after a refused key, PyTorch's lists it still, with no value: not compared)
        listed = [listed, None if isinstance(result, type) else list(params)]
        if isinstance(result, lib.nn.ParameterDict):
            return [list(result), [type(v).__name__ for v in result.values()]] + listed
        return [result if isinstance(result, (type, bool)) else None] + listed

    same_as_torch(case)


def test_parameter_dict_prints_the_legacy_type_as_torch():
    def case(lib):
        return repr(parameter_dict(lib).double()).replace("torch.", "")

    same_as_torch(case)


def failing(lib, where):
    """A layer whose ``forward`` raises (``where="forward"``) or whose first forward hook does."""

    class Failing(lib.nn.Module):
        def forward(self, x):
            if where == "forward":
                raise ValueError("forward failed")
            return x * 2

    module = Failing()
    if where == "hook":
        module.register_forward_hook(lambda m, args, out: (_ for _ in ()).throw(KeyError("x")))
    return module


def seen(value):
    return value.tolist() if hasattr(value, "tolist") else value


ALWAYS_CALLED = {
    "forward raises": ("forward", lambda log, lib, m: None),
    "a hook raises after forward": ("hook", lambda log, lib, m: None),
    "a removed hook": ("forward", lambda log, lib, m: log.remove_handle.remove()),
    "an always-called hook raises too": (
        "forward",
        lambda log, lib, m: m.register_forward_hook(
            lambda *a: (_ for _ in ()).throw(RuntimeError("again")), always_call=True
        ),
    ),
}


@pytest.mark.filterwarnings("ignore:module forward hook")
@pytest.mark.parametrize(("where", "add"), ALWAYS_CALLED.values(), ids=ALWAYS_CALLED)
def test_forward_hooks_with_always_call_run_after_an_exception_as_torch(where, add):
    def case(lib):
        log = type("Log", (list,), {})()
        module = failing(lib, where)
        module.register_forward_hook(lambda m, args, out: log.append(("plain", seen(out))))
        log.remove_handle = module.register_forward_hook(
            lambda m, args, out: log.append(("always", seen(out))), always_call=True
        )
        module.register_forward_hook(
            lambda m, args, kwargs, out: log.append(("kwargs", sorted(kwargs), seen(out))),
            with_kwargs=True,
            always_call=True,
        )
        add(log, lib, module)
        return [outcome(lambda lib: module(lib.ones(2), **{}), lib), list(log)]

    same_as_torch(case)


def test_an_always_called_hook_that_raises_after_an_exception_warns_as_torch():
    module = failing(sg, "forward")
    module.register_forward_hook(lambda *a: 1 / 0, always_call=True)
    warns = pytest.warns(UserWarning, match="always_call=True`` raised an exception")
    with warns, pytest.raises(ValueError, match="forward failed"):
        module(sg.ones(2))


def test_a_pre_hook_with_kwargs_must_return_args_and_kwargs_as_torch():
    def case(lib):
        module = lib.nn.Identity()
        module.register_forward_pre_hook(lambda m, args, kwargs: args, with_kwargs=True)
        return module(lib.ones(2))

    same_as_torch(case)


def test_the_private_state_dict_hooks_as_torch():
    def case(lib):
        log = []
        net = lib.nn.Sequential(lib.nn.Linear(2, 1))
        net[0]._register_load_state_dict_pre_hook(
            lambda state_dict, prefix, *rest: log.append(("plain", prefix, sorted(state_dict)))
        )
        net[0]._register_load_state_dict_pre_hook(
            lambda module, state_dict, prefix, *rest: log.append(("module", type(module).__name__)),
            with_module=True,
        )
        net.load_state_dict(net.state_dict())
        net[0]._register_state_dict_hook(lambda *args: {"child's": 1})  # (the parent's kept)
        net._register_state_dict_hook(lambda module, state_dict, *rest: {"only": 2, **state_dict})
        return [log, list(net.state_dict()), list(net[0].state_dict())]

    same_as_torch(case)


def with_extra_state(lib, value):
    class Counter(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(1, 1)
            self.count = value

        def get_extra_state(self):
            return {"count": self.count}

        def set_extra_state(self, state):
            self.count = state["count"]

    return lib.nn.Sequential(lib.nn.ReLU(), Counter())


EXTRA_STATES = {
    "saved and loaded": lambda lib, sd: sd,
    "missing": lambda lib, sd: {k: v for k, v in sd.items() if "extra" not in k},
    "unexpected in a module without": lambda lib, sd: {**sd, "0._extra_state": 1},
}


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("change", EXTRA_STATES.values(), ids=EXTRA_STATES)
def test_extra_state_is_saved_and_loaded_as_torch(change, strict):
    def case(lib):
        state_dict = change(lib, with_extra_state(lib, 7).state_dict())
        module = with_extra_state(lib, 0)
        keys = outcome(lambda lib: module.load_state_dict(state_dict, strict=strict), lib)
        if isinstance(keys, type):  # (a failed load copies nothing, unlike PyTorch's: see docs)
            return [list(state_dict), keys]
        return [list(state_dict), list(keys), module[1].count]

    same_as_torch(case)


def test_state_dict_takes_the_deprecated_positional_arguments_as_torch():
    def case(lib):
        with pytest.warns(FutureWarning, match="Positional args are being deprecated"):
            state_dict = lib.nn.Linear(1, 1).state_dict(None, "layer.", True)
        return [(key, type(value).__name__) for key, value in state_dict.items()]

    same_as_torch(case)


@pytest.mark.parametrize("flag", [1, "no", None])
def test_requires_grad_takes_a_bool_only_as_torch(flag):
    same_as_torch(lambda lib: lib.nn.Linear(1, 1).requires_grad_(flag).weight.requires_grad)


def test_train_goes_through_each_childs_train_as_torch():
    def case(lib):
        class FrozenNorm(lib.nn.Module):  # fine-tuning with its batch norm kept in eval mode
            def __init__(self):
                super().__init__()
                self.norm = lib.nn.BatchNorm1d(2)

            def train(self, mode=True):
                super().train(mode)
                self.norm.eval()
                return self

        net = lib.nn.Sequential(FrozenNorm(), lib.nn.Dropout())
        return [(name, module.training) for name, module in net.eval().train().named_modules()]

    same_as_torch(case)


def renaming(lib):
    """A layer whose ``_load_from_state_dict`` reads an old checkpoint's name "w" as
    "weight", as older PyTorch layers do."""

    class Renaming(lib.nn.Linear):
        def _load_from_state_dict(self, state_dict, prefix, *args):
            if prefix + "w" in state_dict:
                state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
            super()._load_from_state_dict(state_dict, prefix, *args)

    return Renaming(2, 1)


@pytest.mark.parametrize("strict", [True, False])
def test_an_overridden_load_from_state_dict_is_called_as_torch(strict):
    def case(lib):
        net = lib.nn.Sequential(renaming(lib))
        state_dict = {"0.w": lib.full((1, 2), 3.0), "0.bias": lib.zeros(1)}
        keys = net.load_state_dict(state_dict, strict=strict)
        return [list(keys), net[0].weight.tolist()]

    same_as_torch(case)


def test_load_from_state_dict_called_by_itself_copies_and_notes_as_torch():
    def case(lib):
        layer, missing, unexpected, errors = lib.nn.Linear(2, 1), [], [], []
        state_dict = {"p.weight": lib.ones(1, 2), "p.extra": lib.ones(1)}
        layer._load_from_state_dict(state_dict, "p.", {}, True, missing, unexpected, errors)
        return [missing, unexpected, errors, layer.weight.tolist()]

    same_as_torch(case)


def test_an_overridden_save_to_state_dict_is_called_as_torch():
    def case(lib):
        class Scaled(lib.nn.Linear):  # saves its weight doubled, under another name
            def _save_to_state_dict(self, destination, prefix, keep_vars):
                super()._save_to_state_dict(destination, prefix, keep_vars)
                destination[prefix + "doubled"] = destination.pop(prefix + "weight") * 2

        state_dict = lib.nn.Sequential(Scaled(2, 1)).state_dict()
        return [list(state_dict), state_dict["0.doubled"].shape == (1, 2)]

    same_as_torch(case)


@pytest.mark.parametrize("convert", ["double", "half", "to"])
def test_an_overridden_apply_is_called_by_the_conversions_as_torch(convert):
    def case(lib):
        class Cached(lib.nn.Linear):  # keeps a tensor it does not register, converted with it
            def __init__(self):
                super().__init__(2, 1)
                self.cache = lib.ones(2)

            def _apply(self, fn, recurse=True):
                super()._apply(fn, recurse)
                self.cache = fn(self.cache)
                return self

        net = lib.nn.Sequential(Cached())
        getattr(net, convert)(*([lib.float64] if convert == "to" else []))
        return [str(net[0].cache.dtype).split(".")[-1].rpartition(".")[2], dtypes(net)]

    same_as_torch(case)
