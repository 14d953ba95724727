"""Compile generated C with the host's gcc and call it through ctypes: how the export is
checked (by ``scratchgrad export`` and the tests)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np

CFLAGS = ("-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic")


def gcc(*args: str) -> None:
    """Run gcc with the strict flags. FileNotFoundError when there is no gcc; RuntimeError
    with gcc's messages when it fails (any warning does)."""
    if shutil.which("gcc") is None:
        raise FileNotFoundError("gcc is not installed")
    done = subprocess.run(["gcc", *CFLAGS, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"gcc {' '.join(args)} failed:\n{done.stderr}")


def compile_shared(sources: Sequence[Path], out: Path) -> ctypes.CDLL:
    """The C files as one shared library, loaded (several models link into one)."""
    gcc("-shared", "-fPIC", *map(str, sources), "-o", str(out), "-lm")
    return ctypes.CDLL(str(out))


def run_compiled(library: ctypes.CDLL, name: str, inputs: np.ndarray, out_size: int) -> np.ndarray:
    """``NAME_predict`` on each sample of the batch ``inputs``, one call per sample."""
    predict = getattr(library, f"{name}_predict")
    float_p = ctypes.POINTER(ctypes.c_float)
    outputs = np.zeros((len(inputs), out_size), np.float32)
    for sample, out in zip(np.ascontiguousarray(inputs, np.float32), outputs):
        predict(sample.ctypes.data_as(float_p), out.ctypes.data_as(float_p))
    return outputs
