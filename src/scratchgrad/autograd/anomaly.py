"""Anomaly detection: name the operation whose backward first produced NaN.

The mode is one global switch, as PyTorch's: ``detect_anomaly`` turns it on for a block,
``set_detect_anomaly`` on or off at once (or for a block), ``is_anomaly_enabled`` reads it.
As PyTorch's, it checks the gradients backward computes for NaN only: an infinite gradient
(the derivative of sqrt at 0) passes, and so does a NaN in a forward result.
"""

from __future__ import annotations

import warnings

from scratchgrad.autograd import capture_hook
from scratchgrad.backend import namespace

enabled = False  # read by the engine on every gradient
checks_nan = True  # whether a NaN then raises; PyTorch's mode only records without it


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on, as ``torch.is_anomaly_enabled``.

    >>> is_anomaly_enabled()
    False
    """
    return enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection, when on, raises for NaN, as
    ``torch.is_anomaly_check_nan_enabled`` (True unless a mode set it off).

    >>> is_anomaly_check_nan_enabled()
    True
    """
    return checks_nan


def set_anomaly_enabled(mode: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off, as ``torch.set_anomaly_enabled``.

    >>> set_anomaly_enabled(True, check_nan=False)
    >>> is_anomaly_enabled(), is_anomaly_check_nan_enabled()
    (True, False)
    >>> set_anomaly_enabled(False)
    """
    global enabled, checks_nan
    enabled, checks_nan = bool(mode), bool(check_nan)
    capture_hook.changes += 1  # scratchgrad.jit's calls look again: replays check no gradient


def check(node, grad, index: int) -> None:
    """Raise PyTorch's error if ``grad``, output ``index`` of ``node``'s backward (the gradient
    for its input ``index``), holds a NaN (and the mode checks for them)."""
    if not checks_nan:
        return
    array = grad._values().array if grad.is_sparse else grad.array  # (a sparse one's values)
    if namespace(array).isnan(array).any():
        raise RuntimeError(f"Function '{node.name()}' returned nan values in its {index}th output.")


class detect_anomaly:
    """Check every gradient the engine computes in the block and name the op that made a NaN,
    as ``torch.autograd.detect_anomaly`` (which warns that it is slow, as this does); infinite
    gradients pass, as in PyTorch. ``check_nan=False``: check nothing (PyTorch then only
    records forward tracebacks, which this does not).

    Slow; use it to find where a NaN comes from, then turn it off.

    >>> import scratchgrad as sg
    >>> x = sg.tensor([-1.0], requires_grad=True)
    >>> with sg.autograd.detect_anomaly():
    ...     sg.sqrt(x).sum().backward()
    Traceback (most recent call last):
    RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should "
            "only be enabled for debugging.",
            stacklevel=2,
        )

    def __enter__(self) -> None:
        self._prev = enabled, checks_nan
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc: object) -> None:
        set_anomaly_enabled(*self._prev)


class set_detect_anomaly:
    """Turn anomaly detection on or off at once, as ``torch.autograd.set_detect_anomaly``; used
    as a context manager, the mode before comes back at the end of the block.

    >>> import scratchgrad as sg
    >>> with sg.autograd.set_detect_anomaly(True):
    ...     sg.autograd.anomaly.is_anomaly_enabled()
    True
    >>> sg.autograd.anomaly.is_anomaly_enabled()
    False
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._prev = enabled, checks_nan
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        set_anomaly_enabled(*self._prev)
