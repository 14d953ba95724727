"""Graph capture and replay: ``scratchgrad.jit`` records a training step once and replays it
as a flat list of NumPy calls (see ``jitted.jit``)."""

from scratchgrad.jit.jitted import Jitted, jit
from scratchgrad.jit.recorder import JitError

__all__ = ["JitError", "Jitted", "jit"]
