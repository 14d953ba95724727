"""The programs in ``tests/programs/``, written as PyTorch's tutorials and examples are, each
run twice: with PyTorch, and with scratchgrad by changing only the import lines. Both start
from PyTorch's initial weights; the losses they print along the way must agree to float32
precision (float64 for the float64 program)."""

import re
import types
from pathlib import Path

import numpy as np
import pytest
import torch

import scratchgrad as sg

PROGRAMS = sorted((Path(__file__).parent / "programs").glob("*.py"))


def port(source: str) -> str:
    """The program with its imports of torch turned into imports of scratchgrad, and nothing
    else changed: ``import torch`` -> ``import scratchgrad as torch``, ``import torch.nn as nn``
    -> ``import scratchgrad.nn as nn``, ``from torch.x import y`` -> ``from scratchgrad.x ...``.
    """
    source = re.sub(r"^import torch$", "import scratchgrad as torch", source, flags=re.M)
    return re.sub(r"^(import|from) torch\b", r"\1 scratchgrad", source, flags=re.M)


def _load(path: Path, library: str) -> types.ModuleType:
    source = path.read_text()
    if library == "scratchgrad":
        source = port(source)
        assert "torch." not in re.sub(r"^(?!import|from).*$", "", source, flags=re.M)
    module = types.ModuleType(f"{path.stem}_{library}")
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def test_port_changes_only_the_imports():
    source = (
        "import torch\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader\n"
        "x = torch.ones(2)\n"
    )
    assert port(source).splitlines() == [
        "import scratchgrad as torch",
        "import scratchgrad.nn as nn",
        "from scratchgrad.utils.data import DataLoader",
        "x = torch.ones(2)",
    ]


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_program_gives_torchs_losses(path, capsys):
    theirs, ours = _load(path, "torch"), _load(path, "scratchgrad")
    capsys.readouterr()  # what the programs printed on import
    torch.manual_seed(0)
    torch_model = theirs.build()
    model = ours.build()
    model.load_state_dict(
        {k: sg.tensor(v.detach().numpy()) for k, v in torch_model.state_dict().items()}
    )
    expected = theirs.train(torch_model)
    torch_output = capsys.readouterr().out
    losses = ours.train(model)
    our_output = capsys.readouterr().out
    assert len(losses) == len(expected) >= 3
    dtype = "float64" if next(torch_model.parameters()).dtype == torch.float64 else "float32"
    # (a program whose float32 numbers are sensitive to rounding says so: FLOAT32_RTOL)
    rtol, atol = (
        (1e-9, 1e-10) if dtype == "float64" else (getattr(ours, "FLOAT32_RTOL", 2e-4), 1e-5)
    )
    np.testing.assert_allclose(losses, expected, rtol=rtol, atol=atol)
    assert our_output.count("\n") == torch_output.count("\n")  # the same lines were printed
