"""Argument types for the command line's subcommands: each checks its range, so a bad value is
a usage error (exit status 2, argparse's message) before any work starts.

>>> import argparse
>>> parser = argparse.ArgumentParser()
>>> _ = parser.add_argument("--epochs", type=positive_int)
>>> parser.parse_args(["--epochs", "3"]).epochs
3
"""

from __future__ import annotations

import argparse
import math


def positive_int(text: str) -> int:
    """An integer >= 1 (epochs, batch size, steps)."""
    value = _parse(int, text, "an integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def nonnegative_int(text: str) -> int:
    """An integer >= 0 (a seed)."""
    value = _parse(int, text, "an integer")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (a learning rate)."""
    value = _parse(float, text, "a number")
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text}")
    return value


def _parse(kind: type, text: str, what: str):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
