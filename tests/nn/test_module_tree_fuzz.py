"""Random module trees against PyTorch's ``nn.Module``: hypothesis draws a tree of
``Sequential``, ``ModuleList``, ``ModuleDict`` and plain modules holding layers, parameters,
buffers (persistent or not, float or integer), a submodule or parameter shared between two
places, and ``None`` slots; then one operation: the names of ``named_parameters``/
``named_buffers``/``named_modules`` (with ``remove_duplicate`` either way), ``state_dict``
(keys, values, ``keep_vars``), ``load_state_dict`` of a changed dict (keys missing, unexpected,
of another shape; ``strict`` either way: the reported keys, or the error, and the values after),
``to(dtype)``/``half()``/``double()`` (every tensor's dtype after), ``requires_grad_``,
``zero_grad``, ``train``/``eval`` (every module's flag), ``get_submodule``/``get_parameter``/
``get_buffer`` of drawn paths, ``apply``, ``children``. Both libraries must raise alike (the
same error class) and give the same result. Set ``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more
examples."""

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import fuzz_settings, outcome, raised_alike

import scratchgrad as sg

FUZZ = fuzz_settings(200)


@st.composite
def trees(draw, depth=0):
    """A module's description: ("leaf", layer) or (container kind, children)."""
    if depth >= 2 or draw(st.integers(0, 2)) == 0:
        return ("leaf", draw(st.sampled_from(["linear", "bn", "conv", "params", "none"])))
    kind = draw(st.sampled_from(["sequential", "list", "dict", "plain"]))
    return (kind, draw(st.lists(trees(depth + 1), min_size=1, max_size=3)))


def _leaf(m, layer, seed):
    rng = np.random.default_rng(seed)
    if layer == "linear":
        module = m.nn.Linear(2, 3, bias=bool(seed % 2))
    elif layer == "bn":
        module = m.nn.BatchNorm1d(3, track_running_stats=bool(seed % 3))
    elif layer == "conv":
        module = m.nn.Conv1d(1, 2, 2)
    elif layer == "params":  # a module with its own parameter and buffers
        module = m.nn.Module()
        module.weight = m.nn.Parameter(m.tensor(rng.normal(size=(2,)), dtype=m.float32))
        module.register_buffer("count", m.tensor([seed], dtype=m.int64))
        module.register_buffer("cache", m.zeros(2), persistent=False)
        module.register_buffer("empty", None)
        return module
    else:
        return None
    with m.no_grad():  # values of the seed, the same in both libraries
        for p in module.parameters():
            p.copy_(m.tensor(rng.normal(size=tuple(p.shape)), dtype=p.dtype))
    return module


def _build(m, tree, seed=0):
    kind, content = tree
    if kind == "leaf":
        return _leaf(m, content, seed)
    children = [_build(m, child, seed * 7 + n + 1) for n, child in enumerate(content)]
    if kind == "sequential":
        return m.nn.Sequential(*[c for c in children if c is not None] or [m.nn.Identity()])
    if kind == "list":
        return m.nn.ModuleList(children)
    if kind == "dict":
        return m.nn.ModuleDict({f"d{n}": c for n, c in enumerate(children)})
    module = m.nn.Module()
    for n, child in enumerate(children):
        setattr(module, f"c{n}", child)
    return module


def _model(m, tree, share):
    root = m.nn.Module()
    root.body = _build(m, tree)
    root.head = m.nn.Linear(3, 1)
    with m.no_grad():
        root.head.weight.copy_(m.tensor([[0.5, -1.0, 2.0]]))
        root.head.bias.fill_(0.25)
    if share == "module":  # one submodule in two places
        root.again = root.head
    elif share == "parameter":
        root.tied = root.head.weight
    root.register_buffer("step", m.tensor(0))
    return root


OPERATIONS = ["names", "names_all", "state_dict", "keep_vars", "load", "load_strict", "to"]
OPERATIONS += ["half", "requires_grad_", "zero_grad", "train_eval", "get", "apply", "children"]


def _names(module, remove_duplicate=True):
    return [
        [n for n, _ in module.named_parameters(remove_duplicate=remove_duplicate)],
        [n for n, _ in module.named_buffers(remove_duplicate=remove_duplicate)],
        [n for n, _ in module.named_modules(remove_duplicate=remove_duplicate)],
    ]


def _values(m, state):
    return {k: (str(v.dtype).split(".")[-1], v.detach().cpu().numpy().tolist()) for k, v in state}


def _changed_state(m, module, change):
    """The module's state_dict with a key dropped, one added, or one of another shape."""
    state = dict(module.state_dict())
    keys = list(state)
    if change == "drop" and keys:
        del state[keys[0]]
    elif change == "extra":
        state["nowhere.weight"] = m.ones(1)
    elif change == "shape" and keys:
        state[keys[-1]] = m.zeros(7)
    elif keys:
        state[keys[0]] = state[keys[0]] + 1
    return state


def _operate(m, tree, share, operation, choice):
    module = _model(m, tree, share)
    if operation == "names":
        return _names(module)
    if operation == "names_all":
        return _names(module, remove_duplicate=False)
    if operation in ("state_dict", "keep_vars"):
        state = module.state_dict(keep_vars=operation == "keep_vars")
        kept = [isinstance(v, m.nn.Parameter) for v in state.values()]
        return list(state), kept, _values(m, state.items())
    if operation in ("load", "load_strict"):
        change = ["drop", "extra", "shape", "values"][choice % 4]
        result = module.load_state_dict(
            _changed_state(m, module, change), strict=operation == "load_strict"
        )
        return (
            sorted(result.missing_keys),
            sorted(result.unexpected_keys),
            _values(m, module.state_dict().items()),
        )
    if operation in ("to", "half"):
        module = module.to(m.float64) if operation == "to" else module.half()
        return {n: str(t.dtype).split(".")[-1] for n, t in module.state_dict().items()}
    if operation == "requires_grad_":
        module.body.requires_grad_(False)
        return {n: p.requires_grad for n, p in module.named_parameters()}
    if operation == "zero_grad":
        for p in module.parameters():
            p.grad = m.ones_like(p)
        module.zero_grad(set_to_none=bool(choice % 2))
        return {n: None if p.grad is None else p.grad.sum().item() for n, p in _params(module)}
    if operation == "train_eval":
        module.eval()
        module.body.train(bool(choice % 2))
        return {n: sub.training for n, sub in module.named_modules()}
    if operation == "get":
        names = _names(module)
        paths = [p for group in names for p in group if p] or ["nothing"]
        path = paths[choice % len(paths)]
        getter = [module.get_submodule, module.get_parameter, module.get_buffer][choice % 3]
        found = getter(path)
        return type(found).__name__, tuple(getattr(found, "shape", ()))
    if operation == "apply":
        seen = []
        module.apply(lambda sub: seen.append(type(sub).__name__))
        return seen
    return [type(c).__name__ for c in module.body.children()]


def _params(module):
    return module.named_parameters(remove_duplicate=False)


@given(trees(), st.sampled_from(["none", "module", "parameter"]), st.sampled_from(OPERATIONS))
@FUZZ
def test_a_module_tree_operation_matches_torch(tree, share, operation):
    choice = len(str(tree))  # a fixed "random" choice for the operation's argument
    ours = outcome(_operate, sg, tree, share, operation, choice)
    theirs = outcome(_operate, torch, tree, share, operation, choice)
    what = f"{tree} share={share} {operation}"
    if raised_alike(ours, theirs, what):
        return
    assert ours == theirs, f"{what}:\nours   {ours}\ntheirs {theirs}"
