"""Shared by the export tests: compiling generated C and calling it through ctypes."""

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

CFLAGS = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic"]


def gcc(*args: str) -> None:
    """Run gcc with the strict flags; a warning fails the test with gcc's message."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    done = subprocess.run(["gcc", *CFLAGS, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def compile_library(sources: list[Path], out: Path) -> ctypes.CDLL:
    """All the generated files in one shared library (several models link into one program)."""
    gcc("-shared", "-fPIC", *map(str, sources), "-o", str(out), "-lm")
    return ctypes.CDLL(str(out))


def run_c(library: ctypes.CDLL, name: str, inputs: np.ndarray, out_size: int) -> np.ndarray:
    """NAME_predict on each sample of ``inputs`` (a batch), one call per sample."""
    predict = getattr(library, f"{name}_predict")
    float_p = ctypes.POINTER(ctypes.c_float)
    outputs = np.zeros((len(inputs), out_size), np.float32)
    for sample, out in zip(np.ascontiguousarray(inputs, np.float32), outputs):
        predict(sample.ctypes.data_as(float_p), out.ctypes.data_as(float_p))
    return outputs
