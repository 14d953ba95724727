"""Run a program under ``mpiexec -n N`` for the tests: one BLAS thread per process, this
checkout's scratchgrad first on the path, and a timeout so a hung job fails instead of waiting."""

import os
import subprocess
import sys
from pathlib import Path

import scratchgrad
from scratchgrad.distributed.launch import mpiexec_command

HERE = Path(__file__).parent
SOURCE = Path(scratchgrad.__file__).parents[1]


def run_mpi(nproc: int, program: str, *args: str, timeout: float = 90, cwd=None):
    """``mpiexec -n nproc python program args``: the finished process (output captured).
    ``program`` is a file beside the tests, or ``-m`` (then ``args`` start with a module)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(SOURCE), env.get("PYTHONPATH", "")])
    program = program if program == "-m" else str(HERE / program)
    command = mpiexec_command(nproc, [sys.executable, program, *args])
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd
    )
