"""Anomaly detection: name the operation whose backward first produced NaN or Inf."""

from __future__ import annotations

from scratchgrad.autograd.grad_mode import _GradMode
from scratchgrad.backend import namespace

enabled = False  # read by the engine on every gradient


def check(node, grad) -> None:
    """Raise if ``grad``, computed by ``node``'s backward, holds NaN or Inf."""
    if not namespace(grad.array).isfinite(grad.array).all():
        raise RuntimeError(
            f"{type(node).__name__}.backward returned NaN or Inf in a gradient of shape "
            f"{grad.shape}"
        )


class detect_anomaly(_GradMode):
    """Check every gradient the engine computes and name the op that made a NaN or Inf.

    Slow; use it to find where a NaN comes from, then turn it off.

    >>> import scratchgrad as sg
    >>> x = sg.tensor([0.0], requires_grad=True)
    >>> with sg.autograd.detect_anomaly():
    ...     sg.sqrt(x).sum().backward()
    Traceback (most recent call last):
    RuntimeError: Sqrt.backward returned NaN or Inf in a gradient of shape (1,)
    """

    def __enter__(self) -> None:
        global enabled
        self._prev, enabled = enabled, True

    def __exit__(self, *exc: object) -> None:
        global enabled
        enabled = self._prev
