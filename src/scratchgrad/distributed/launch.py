"""Finding the MPI launcher and building the command that starts N processes."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path


def find_mpiexec() -> str:
    """The ``mpiexec`` beside this Python (where the ``mpich`` wheel puts it), else on PATH.

    >>> Path(find_mpiexec()).name  # doctest: +SKIP
    'mpiexec'
    """
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    found = shutil.which("mpiexec", path=search)
    if found is None:
        raise FileNotFoundError(
            "mpiexec not found beside Python or on PATH: pip install 'scratchgrad[distributed]'"
        )
    return found


def mpiexec_command(nproc: int, argv: Sequence[str]) -> list[str]:
    """The command that runs ``argv`` in ``nproc`` processes on this machine.

    >>> mpiexec_command(2, ["python", "train.py"])[1:]  # doctest: +SKIP
    ['-n', '2', 'python', 'train.py']
    """
    if nproc < 1:
        raise ValueError(f"mpiexec: the number of processes must be at least 1, got {nproc}")
    return [find_mpiexec(), "-n", str(nproc), *argv]
