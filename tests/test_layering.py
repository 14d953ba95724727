"""The layers of docs/design.md, checked on the source: each module imports only from its own layer
or the layers below it, the scalar engine imports nothing of the package, and nothing but the
tools at the top imports the package root (which re-exports everything).

A new top-level module or package joins a layer in ``LAYERS``; a deliberate upward import goes
into ``ALLOWED`` with its reason.
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "scratchgrad"

# Bottom to top; a module may import its own layer and the ones before it.
LAYERS = [
    # (cpu_order: the orders of ties in PyTorch's CPU sorts, on NumPy rows)
    {"backend", "dtypes", "cuda", "accelerator", "backends", "meta", "cpu_order"},
    {"autograd"},
    {"ops"},
    # (testing: torch.testing, built on Tensor and its factories)
    {
        "tensor",
        "creation",
        "printing",
        "linalg",
        "special",
        "indexed_writes",
        "statistics",
        "testing",
        "foreach",
        "sparse",  # COO tensors: a Tensor subclass with its own product (a Function)
        "signal",  # torch.signal.windows, on creation's windows
        "fft",  # torch.fft: its transforms are ops (ops/fft.py), on Tensor
        "complex_numbers",  # polar, view_as_complex...: on Tensor and ops/complex
    },
    # distributed's process group and collectives need only Tensor; nn.parallel's DDP and
    # utils.data's DistributedSampler build on them, where PyTorch has them
    # (distributions: on nn.functional and linalg, as PyTorch's)
    # (spectral: torch.stft and istft pad with nn.functional.pad, as PyTorch's)
    {"nn", "optim", "distributed", "distributions", "spectral"},
    {"utils", "datasets", "serialization"},
    {"func", "jit", "compiled", "compiler", "amp", "cpu"},  # transforms
    {"evo", "export", "onnx"},  # applications
    {"viz", "cli", "train", "charlm", "evolve", "argtypes", "__main__", "profiler"},  # tools
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}

# (importing module, imported module): why the upward edge is there.
ALLOWED = {
    ("autograd.function", "tensor"): "a Function's result is a Tensor (imported last, E402)",
    ("autograd.engine", "tensor"): "the engine walks Tensors and fills .grad",
    ("autograd.engine", "ops"): "a broadcast gradient is summed to its input's shape by "
    "SumToSize, as Tensor.sum_to_size does, without that method's two calls per gradient",
    ("autograd.functional", "tensor"): "jacobian and hessian build Tensors",
    ("autograd.forward_ad", "tensor"): "dual tensors are Tensors",
    ("autograd.node_hooks", "tensor"): "node hooks are given and return Tensors",
    ("autograd.gradcheck", "tensor"): "finite differences perturb Tensors",
    ("autograd.variable", "tensor"): "the legacy Variable(x) returns a detached Tensor",
    ("autograd.profiler", "tensor"): "the profiler notes the shapes and bytes of Tensors",
    ("autograd.grad_mode", "tensor"): "inference_mode makes Tensor._make mark what it makes",
    ("backend", "tensor"): "Generator.get_state returns a uint8 Tensor, as PyTorch's",
    ("cuda.amp", "amp"): "torch.cuda.amp's old spellings of scratchgrad.amp, loaded on demand",
    ("nn.utils.stateless", "func"): "the deprecated functional_call calls torch.func's",
    ("nn.module", "compiled"): "Module.compile() captures the module in place, when called",
    ("export.command", "train"): "`scratchgrad export` rebuilds models `scratchgrad train` made",
    ("export.command", "scratchgrad"): "the export command is a tool, like cli and train",
}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def _is_module(dotted: str) -> bool:
    path = PACKAGE.joinpath(*dotted.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _imports(path: Path):
    """(line, imported module relative to the package, '' for the root) for each import."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "scratchgrad" or alias.name.startswith("scratchgrad."):
                    yield node.lineno, alias.name.partition(".")[2]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "scratchgrad":
                for alias in node.names:  # `from scratchgrad import backend` names a module
                    yield node.lineno, alias.name if _is_module(alias.name) else ""
            elif node.module.startswith("scratchgrad."):
                yield node.lineno, node.module.partition(".")[2]


def _violations():
    for module, path in _modules():
        top = module.split(".")[0]
        for line, imported in _imports(path):
            where = f"{path.relative_to(PACKAGE.parent)}:{line}"
            if top == "scalar":
                yield f"{where}: the scalar engine imports {imported or 'scratchgrad'}"
            elif not module:
                continue  # the package root re-exports everything
            elif top not in RANK:
                continue  # reported by test_every_module_has_a_layer
            elif not imported:
                if RANK[top] < RANK["viz"] and (module, "scratchgrad") not in ALLOWED:
                    yield f"{where}: {module} imports the package root; import from the module"
            elif imported.split(".")[0] not in RANK:
                continue  # reported by test_every_module_has_a_layer
            elif RANK[imported.split(".")[0]] > RANK[top]:
                key = (module, imported.split(".")[0])
                if key not in ALLOWED:
                    yield f"{where}: {module} (layer {RANK[top]}) imports {imported} (higher)"


def test_every_module_has_a_layer():
    tops = {module.split(".")[0] for module, _ in _modules() if module}
    assert {"backend", "tensor", "nn", "scalar"} <= tops  # the scan found the package
    assert tops - {"scalar"} <= set(RANK), f"add to LAYERS: {sorted(tops - set(RANK))}"


def test_imports_follow_the_layers():
    assert list(_violations()) == []


def test_the_allowed_upward_imports_still_exist():
    found = set()
    for module, path in _modules():
        for _, imported in _imports(path):
            found.add((module, imported.split(".")[0] or "scratchgrad"))
    assert set(ALLOWED) <= found, f"stale: {set(ALLOWED) - found}"


def _package(module: str) -> str | None:
    """The package a module belongs to; None for a top-level module such as ``tensor``, which
    is a package of its own (the root package is the whole library)."""
    if (PACKAGE.joinpath(*module.split(".")) / "__init__.py").exists():
        return module
    return module.rpartition(".")[0] or None


# packages whose job is to re-export other packages' private names, with why
PRIVATE_REEXPORTS = {
    "nn.modules": "PyTorch's import paths of nn's base classes (modules.loss._Loss...)",
}


def _private_imports():
    """``from scratchgrad.X import _name`` across packages: what ``_name`` promises (nothing
    outside its package depends on it) would not hold."""
    for module, path in _modules():
        if _package(module) in PRIVATE_REEXPORTS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
                continue
            if not node.module.startswith("scratchgrad."):
                continue
            imported = node.module.partition(".")[2]
            package = _package(imported)
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and (package is None or package != _package(module)):
                    where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
                    yield f"{where}: {module} imports {alias.name} from {imported}"


def test_private_names_stay_in_their_package():
    assert list(_private_imports()) == []
