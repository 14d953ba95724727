"""``GradScaler``: dynamic loss scaling, so that float16 gradients do not underflow to zero.

The algorithm is PyTorch's (``torch.amp.GradScaler``): multiply the loss by a large scale before
``backward``; divide the gradients by it before the step; skip the step when any gradient is
inf or NaN and halve the scale; double it after ``growth_interval`` clean steps in a row.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from enum import Enum
from typing import Any

import numpy

from scratchgrad import backend
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.backend import float16
from scratchgrad.tensor import Tensor


class _Stage(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _check_settings(growth_factor: float, backoff_factor: float, growth_interval: int) -> None:
    """PyTorch checks the two factors (with AssertionErrors); the interval is checked here too,
    since update() needs an int to count to."""
    if not growth_factor > 1.0:
        raise ValueError(f"GradScaler: growth_factor must be > 1, got {growth_factor}")
    if not 0.0 < backoff_factor < 1.0:
        raise ValueError(f"GradScaler: backoff_factor must be in (0, 1), got {backoff_factor}")
    if not (isinstance(growth_interval, int) and growth_interval > 0):
        raise ValueError(
            f"GradScaler: growth_interval must be a positive int, got {growth_interval}"
        )


def _refuse_recording(call: str) -> None:
    """Raise the JitError of an enabled scaler's ``call`` in a jitted step: the scale and the
    skipped steps are decided in Python from the gradients' values, and unscale_ divides the
    gradients' arrays outside the recorded calls (a replay would clip scaled gradients)."""
    if capture_hook.recorder is not None:
        capture_hook.recorder.refuse(
            f"{call}() of a GradScaler inside scratchgrad.jit",
            "Its step skips the update when a gradient is not finite, and its scale "
            "changes with that, Python a replay would not run: bfloat16 autocast needs no "
            "scaler (its range is float32's), scale the loss by a constant yourself, or call "
            "the scaler outside the step (pass it scaler.scale(torch.ones(())) to multiply the "
            "loss by)",
        )


class GradScaler:
    """Scale the loss, unscale the gradients, skip steps that overflowed, adapt the scale.

    >>> import scratchgrad as sg
    >>> w = sg.nn.Parameter(sg.ones(2))
    >>> opt = sg.optim.SGD([w], lr=0.1)
    >>> scaler = sg.amp.GradScaler(init_scale=1024.0)
    >>> scaler.scale((w * 3).sum()).backward()
    >>> w.grad  # still scaled
    tensor([3072., 3072.])
    >>> scaler.step(opt)  # unscales, then steps: w -= 0.1 * 3
    >>> scaler.update()
    >>> w
    Parameter containing:
    tensor([0.7000, 0.7000], requires_grad=True)
    """

    def __init__(
        self,
        device: str = "cpu",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        if enabled and device == "cuda" and not backend.is_available("cuda"):
            warnings.warn(
                "GradScaler is enabled, but CUDA is not available. Disabling.", stacklevel=2
            )
            enabled = False
        if enabled:  # (a disabled scaler takes any settings, as PyTorch's)
            _check_settings(growth_factor, backoff_factor, growth_interval)
        self._enabled = enabled
        # The scale is a float32 number, as PyTorch keeps it, so trajectories agree bit for bit.
        # As PyTorch's, it is made by the first scale(): unscale_, step and update refuse to
        # run before, and get_scale gives init_scale as it was given.
        self._init_scale, self._scale = init_scale, None
        self._growth_factor, self._backoff_factor = growth_factor, backoff_factor
        self._growth_interval, self._growth_tracker = growth_interval, 0
        self._per_optimizer: dict[int, dict] = {}

    # ---- the four calls of a training step --------------------------------------------------

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or lists and tuples of them, or another iterable of them,
        scaled lazily as PyTorch's ``map``) times the current scale."""
        if not self._enabled:
            return outputs
        _refuse_recording("scale")
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._scale = numpy.float32(self._init_scale)
            return outputs * float(self._scale)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, Iterable):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place, and note any inf or NaN.
        Call it once per step, before clipping gradients; ``step`` calls it if you did not."""
        if not self._enabled:
            return
        _refuse_recording("unscale_")
        self._check_scaled("unscale_")
        state = self._state_of(optimizer)
        if state["stage"] is _Stage.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        if state["stage"] is _Stage.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = numpy.float32(1.0 / numpy.float64(self._scale))  # in float64, as PyTorch
        found_inf, checked = False, False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if p.grad.dtype == float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grad = p.grad.array
                    if p.grad.is_sparse:  # (embedding(sparse=True)'s: its values, as PyTorch)
                        grad = p.grad._values().array
                    xp = backend.namespace(grad)
                    checked = True
                    found_inf |= not bool(xp.isfinite(grad).all())
                    # bfloat16 gradients times the float32 inverse in float32, rounded once
                    xp.multiply(grad, inv_scale, out=grad, casting="unsafe")
        # (None: no gradient was checked, and step refuses to run, as PyTorch's)
        state["found_inf"] = found_inf if checked else None
        state["stage"] = _Stage.UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale if needed, then ``optimizer.step()`` unless a gradient was inf or NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        _refuse_recording("step")
        self._check_scaled("step")
        state = self._state_of(optimizer)
        if state["stage"] is _Stage.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is _Stage.READY:
            self.unscale_(optimizer)
        if state["found_inf"] is None:  # no gradient to check: PyTorch refuses to step
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = _Stage.STEPPED
        return result

    def update(self, new_scale: float | Any | None = None) -> None:
        """Adapt the scale for the next step (or set it to ``new_scale``)."""
        if not self._enabled:
            return
        _refuse_recording("update")
        self._check_scaled("update")
        if isinstance(new_scale, Tensor) and (new_scale.numel() != 1 or new_scale.requires_grad):
            raise AssertionError(
                "new_scale should be a float or a 1-element FloatTensor with requires_grad=False."
            )
        if new_scale is not None:
            self._scale = numpy.float32(float(new_scale))
        else:
            seen = [
                s["found_inf"]
                for s in self._per_optimizer.values()
                if s.get("found_inf") is not None
            ]
            if not seen:
                raise AssertionError("No inf checks were recorded prior to update.")
            self._update_scale(any(seen))
        self._per_optimizer = {}

    def _update_scale(self, found_inf: bool) -> None:
        """PyTorch's ``_amp_update_scale_``: back off on inf, grow after a run of clean steps
        (unless growing would overflow float32). As in its kernel, the float32 scale times the
        float64 factor is computed in float64 and rounded once to float32."""
        if found_inf:
            self._scale = numpy.float32(float(self._scale) * self._backoff_factor)
            self._growth_tracker = 0
        elif self._growth_tracker + 1 == self._growth_interval:
            with numpy.errstate(over="ignore"):  # an overflow to inf is refused just below
                grown = numpy.float32(float(self._scale) * self._growth_factor)
            if numpy.isfinite(grown):
                self._scale = grown
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1

    def _check_scaled(self, what: str) -> None:
        if self._scale is None:  # PyTorch's AssertionError
            raise AssertionError(
                f"Attempted {what} but _scale is None.  This may indicate your script did not "
                "use scaler.scale(loss or outputs) earlier in the iteration."
            )

    def _state_of(self, optimizer: Any) -> dict:
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _Stage.READY})

    # ---- introspection and checkpoints ------------------------------------------------------

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled; ``init_scale`` before the first ``scale``)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale)

    def get_growth_factor(self) -> float:
        """What ``update`` multiplies the scale by after ``growth_interval`` clean steps."""
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        """What ``update`` multiplies the scale by after a step with an inf or NaN."""
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        """How many clean steps in a row grow the scale."""
        return self._growth_interval

    def set_growth_factor(self, new_factor: float) -> None:
        """Set what ``update`` multiplies the scale by after ``growth_interval`` clean steps."""
        self._growth_factor = new_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set what ``update`` multiplies the scale by after a step with an inf or NaN."""
        self._backoff_factor = new_factor

    def set_growth_interval(self, new_interval: int) -> None:
        """Set how many clean steps in a row grow the scale."""
        self._growth_interval = new_interval

    def is_enabled(self) -> bool:
        """Whether this scaler scales at all (``enabled=False`` makes every call a no-op)."""
        return self._enabled

    def state_dict(self) -> dict:
        """The five entries PyTorch saves (empty when disabled)."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._growth_tracker,
        }

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what ``state_dict`` saved; an empty dict (a disabled scaler's) raises."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled "
                "instance of GradScaler."
            )
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale = numpy.float32(float(state_dict["scale"]))
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
