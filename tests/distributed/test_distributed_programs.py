"""A nanoGPT-style script written for PyTorch runs with scratchgrad after changing its imports:
alone, and data-parallel under mpiexec; the same file with torch's imports runs with PyTorch."""

import os
import re
import socket
import subprocess
import sys

import pytest
from mpirun import HERE, SOURCE, run_mpi

SCRIPT = HERE / "nanogpt_style.py"
DOCS = HERE.parents[1] / "docs" / "distributed.md"


def losses(stdout: str) -> tuple[float, float]:
    first, last = re.search(r"train loss (\S+) -> (\S+)", stdout).groups()
    return float(first), float(last)


def test_alone_it_trains_in_one_process():
    env = dict(os.environ, PYTHONPATH=str(SOURCE))
    env.pop("RANK", None)
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=90, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    first, last = losses(done.stdout)
    assert last < first - 1.0


def test_under_mpiexec_it_trains_data_parallel_printing_from_rank_0():
    done = run_mpi(2, "nanogpt_style.py")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("step 0:") == 1  # only the master process prints
    first, last = losses(done.stdout)
    assert last < first - 1.0


@pytest.fixture
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_same_script_with_torchs_imports_runs_with_pytorch(tmp_path, free_port):
    """Proof that the script is PyTorch code: its DDP path under torch's gloo backend (one
    process, as torchrun would start it)."""
    torch_version = tmp_path / "nanogpt_torch.py"
    torch_version.write_text(SCRIPT.read_text().replace("scratchgrad", "torch"))
    env = dict(os.environ, RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1")
    env["MASTER_PORT"] = str(free_port)
    command = [sys.executable, str(torch_version), "--backend=gloo", "--max_iters=2"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "step 0: val loss" in done.stdout


def test_the_docs_training_script_runs_under_mpiexec(tmp_path):
    (block,) = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    (tmp_path / "train.py").write_text(block)
    done = run_mpi(2, str(tmp_path / "train.py"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "model.safetensors").exists()
