"""The switch through which ``scratchgrad.jit`` watches a step while it records one.

``recorder`` is None except while a jitted function records its program; then it is the
``scratchgrad.jit`` recorder, and the few places that compute on arrays outside
``Function.forward`` (gradient accumulation, in-place updates, random draws, optimizer steps)
hand their work to it so that the step can be replayed. Outside recording each hook costs one
attribute read.
"""

recorder = None

# The recorder while a call it notes as one runs unrecorded (an optimizer's step, a gradient
# hook): a replay runs that call again, so no jitted function or compiled module may run
# inside it (their programs share their thread's buffers, jit/program.py's ``Arena``).
paused = None

# How many times a module that a recording holds had an attribute set or deleted, or any
# module's train/eval mode or anomaly detection was set: an attribute's change stamps the
# module with the new count (``Module._jit_stamp``), so that a replay checks one number, and
# its modules' stamps and modes (and anomaly detection) only when that number moved (see
# ``jit.ModuleStamps``).
changes = 0

# The name of a jitted function whose replays return detached what its eager calls return
# with a graph (a forward run without a backward), for the error of a backward through one.
detached_results = None


def call(function, *args, **kwargs):
    """``function(*args, **kwargs)``, an array call made outside ``Function.forward`` (an
    in-place update, a mask, a random draw, a new array of constants): while a step records,
    noted so that every replay makes it again."""
    if recorder is None:
        return function(*args, **kwargs)
    return recorder.call(function, *args, **kwargs)
