"""Rewrites of a recorded step that compute the same bits with less work.

Two so far, both for a ReLU before max pooling (``F.max_pool2d(F.relu(x))``, W5's two
convolutions). First, ``mask_before_spreading``: the pair's backward spreads the pooled
gradient over the ReLU's whole output, then masks it where that output is zero::

    g = spread(pooled_grad, winners)       # each window's gradient to its winner, zeros elsewhere
    mask = relu_out != 0                   # a pass over the ReLU's output
    grad = keep_where(mask, g)             # and another over the gradient

Only the winners' entries of ``g`` are not zero, and a winner's entry of the ReLU's output is
its window's maximum, the pooled value. So the mask can be taken on the pooled values, four
times fewer for 2 x 2 windows, before spreading::

    mask = pooled != 0
    grad = spread(keep_where(mask, pooled_grad), winners)

``keep_where`` multiplies the gradient's bits by 0 or 1, and ``spread`` multiplies them by its
winners, so both orders give each entry the same bits (a NaN or -0.0 that is masked becomes
+0.0 either way). The ReLU's output need not be kept for the backward any more: the pooled
values are, a quarter of its size. W5's replayed step (both of its convolutions) took 5.87-6.06
ms instead of 6.21-6.30 (four processes each, alternating, on a busy machine), and its peak
(``tracemalloc``) went from 9.8 to 8.6 MB above the built step.

Then, ``relu_after_pooling``: once nothing but the pooling reads the ReLU's output, the ReLU
can run on the pooled values instead, ``relu(max(x)) == max(relu(x))``::

    pooled = max_over(relu(x))     # becomes    pooled = relu(max_over(x))

a pass over a quarter of the entries for 2 x 2 windows. A window's maximum is the same
either way when it is positive (the ReLU keeps positive entries as they are, and its
winner, the first maximum, is the same entry), and +0.0 when it is not (the ReLU makes -0.0
+0.0 too; a NaN stays NaN, and the same NaN wins). Only the winners of the windows whose
maximum is not positive differ (the first entry of ReLU's zeros, or the largest of the
entries), and their gradient is masked to +0.0 by the first rewrite before it is spread, so
the rewrite is made only where that mask is there and nothing else reads the winners.
"""

from __future__ import annotations

import re
from typing import Any

from scratchgrad.backend import xp
from scratchgrad.jit.kernels import OUT
from scratchgrad.jit.recorder import Recorder, Step
from scratchgrad.ops.conv import MaxOver
from scratchgrad.ops.movement import Reshape

_V = r"v(\d+)"
_KEEP_WHERE = re.compile(rf"{_V} = k_keep_where\({_V}, {_V}{re.escape(OUT)}\)")
_NOT_ZERO = re.compile(rf"{_V} = (c\d+)\({_V}, 0{re.escape(OUT)}\)")
_RESHAPE = re.compile(rf"{_V} = (c\d+)\(new\((c\d+)\), {_V}, shape=")
_SPREAD = re.compile(rf"{_V} = k_spread\({_V}, {_V}, ")
_MAX_OVER = re.compile(rf"{_V} = (c\d+)\((x\d+), {_V}, dims=")
_NEW = re.compile(r"(x\d+) = new\((c\d+)\)$")
_RELU = re.compile(rf"{_V} = (?:k_relu|np_maximum)\({_V}(?:, 0)?{re.escape(OUT)}\)")


def mask_before_spreading(recorder: Recorder, steps: list[Step], outputs: list[int]) -> list[Step]:
    """``steps`` with each ReLU mask of a spread pooled gradient taken on the pooled values
    before spreading (see the module's doc); the recorder gets the new values."""
    for _ in range(len(steps)):  # each rewrite drops two steps: this ends
        found = _find(recorder, steps, outputs)
        if found is None:
            return steps
        steps = _rewritten(recorder, steps, *found)
    return steps


def _find(recorder: Recorder, steps: list[Step], outputs: list[int]) -> tuple | None:
    """The first match: the indices of the mask's, the spread's and the keep_where's steps,
    and the values: the mask, the gradient kept (the spread's or its reshape), the result,
    the pooled values and the pooled gradient."""
    writer, readers = _links(steps)
    constants = recorder.constants
    for k, step in enumerate(steps):
        keep = _match(_KEEP_WHERE, step)
        if keep is None:
            continue
        result, mask, kept = keep
        if step.like != (1,) or result in outputs or not _only_read_by(readers, k, mask, kept):
            continue  # (the result must be laid out as the gradient it replaces)
        mask_at = writer.get(mask)
        not_zero = None if mask_at is None else _match(_NOT_ZERO, steps[mask_at])
        if not_zero is None or constants[not_zero[1]] is not xp.not_equal:
            continue
        masked = int(not_zero[2])  # the ReLU's output, or any array: its entries are compared
        spread_at, spread = _through_reshape(steps, writer, readers, constants, kept)
        spread_match = _match(_SPREAD, steps[spread_at]) if spread_at is not None else None
        if spread_match is None or spread_match[0] != spread:
            continue
        _, pooled_grad, winners = spread_match
        max_at = writer.get(winners)
        if max_at is None or len(steps[max_at].writes) != 2 or steps[max_at].writes[1] != winners:
            continue
        pool, made = _match(_MAX_OVER, steps[max_at], line=1), _match(_NEW, steps[max_at])
        if pool is None or made is None or made[0] != pool[2] or constants[made[1]] is not MaxOver:
            continue
        pooled, pooled_input = steps[max_at].writes[0], int(pool[3])
        if _reshaped_from(steps, writer, constants, pooled_input) != masked:
            continue
        return mask_at, spread_at, k, mask, kept, result, pooled, pooled_grad
    return None


def _rewritten(
    recorder: Recorder,
    steps: list[Step],
    mask_at: int,
    spread_at: int,
    keep_at: int,
    mask: int,
    kept: int,
    result: int,
    pooled: int,
    pooled_grad: int,
) -> list[Step]:
    """The steps with the match's mask and keep_where dropped, the pooled gradient masked
    before the spread, and the keep_where's result read as the gradient it kept."""
    not_equal = _match(_NOT_ZERO, steps[mask_at])[1]  # the comparison's constant
    small = recorder.sizes[pooled]
    new_mask, new_grad = recorder.new_value(small), recorder.new_value(small)
    masking = [
        # (OUT, never replaced, as recorded lines have it: relu_after_pooling looks for these)
        Step([f"v{new_mask} = {not_equal}(v{pooled}, 0{OUT})"], (pooled,), [new_mask], False),
        Step(
            [f"v{new_grad} = k_keep_where(v{new_mask}, v{pooled_grad}{OUT})"],
            (new_mask, pooled_grad),
            [new_grad],
            False,
        ),
    ]
    spread = steps[spread_at]
    spread.lines = [
        spread.lines[0].replace(f"k_spread(v{pooled_grad}, ", f"k_spread(v{new_grad}, ")
    ]
    spread.reads = tuple(new_grad if n == pooled_grad else n for n in spread.reads)
    out = []
    for i, step in enumerate(steps):
        if i == spread_at:
            out += masking
        if i in (mask_at, keep_at):
            continue
        if result in step.reads:
            step.lines = [re.sub(rf"\bv{result}\b", f"v{kept}", line) for line in step.lines]
            step.reads = tuple(kept if n == result else n for n in step.reads)
        out.append(step)
    return out


def _links(steps: list[Step]) -> tuple[dict, dict]:
    """Which step writes each value, and which steps read it (in order)."""
    writer = {n: i for i, step in enumerate(steps) for n in step.writes}
    readers: dict[int, list[int]] = {}
    for i, step in enumerate(steps):
        for n in step.reads:
            readers.setdefault(n, []).append(i)
    return writer, readers


def _match(pattern: re.Pattern, step: Step, line: int = 0) -> list[Any] | None:
    """The groups of ``pattern`` matched at the start of the step's line (value numbers as
    ints), or None."""
    if len(step.lines) <= line:
        return None
    found = pattern.match(step.lines[line])
    if found is None:
        return None
    return [int(g) if g.isdigit() else g for g in found.groups()]


def _only_read_by(readers: dict, at: int, *values: int) -> bool:
    return all(readers.get(n) == [at] for n in values)


def _through_reshape(
    steps: list[Step], writer: dict, readers: dict, constants: dict, value: int
) -> tuple[int | None, int]:
    """The step writing ``value`` and the value it writes, past a reshape that only the
    keep_where reads (``value`` itself if it is no reshape's)."""
    at = writer.get(value)
    if at is None:
        return None, value
    reshape = _match(_RESHAPE, steps[at])
    if reshape is None or constants[reshape[2]] is not Reshape:
        return at, value
    source = reshape[3]
    if readers.get(source) != [at]:
        return None, value
    return writer.get(source), source


def _reshaped_from(steps: list[Step], writer: dict, constants: dict, value: int) -> int:
    """The value that ``value`` is a reshape of (itself if it is no reshape's)."""
    at = writer.get(value)
    reshape = None if at is None else _match(_RESHAPE, steps[at])
    if reshape is None or constants[reshape[2]] is not Reshape:
        return value
    return reshape[3]


def relu_after_pooling(recorder: Recorder, steps: list[Step], outputs: list[int]) -> list[Step]:
    """``steps`` with each ReLU whose output only max pooling reads (its winners' gradient
    masked as ``mask_before_spreading`` masks it) run on the pooled values instead (see the
    module's doc); the recorder gets the new values."""
    writer, readers = _links(steps)
    moved: dict[int, int] = {}  # the pooling's step -> the ReLU's step, run after it
    for relu_at, step in enumerate(steps):
        relu = _match(_RELU, step)
        if relu is None or relu[0] in outputs or len(readers.get(relu[0], ())) != 1:
            continue
        (reshape_at,) = readers[relu[0]]
        reshape = _match(_RESHAPE, steps[reshape_at])
        if reshape is None or recorder.constants[reshape[2]] is not Reshape:
            continue
        pool_at = _pooling_of(recorder, steps, readers, reshape[0])
        if pool_at is not None and _winners_masked(recorder, steps, writer, readers, pool_at):
            _swap_relu_and_pooling(recorder, steps, relu_at, reshape_at, pool_at)
            moved[pool_at] = relu_at
    out = []
    for i, step in enumerate(steps):
        if i not in moved.values():
            out.append(step)
        if i in moved:
            out.append(steps[moved[i]])
    return out


def _pooling_of(
    recorder: Recorder, steps: list[Step], readers: dict, pooled_input: int
) -> int | None:
    """The index of the ``MaxOver`` step that alone reads ``pooled_input`` (else None)."""
    only = readers.get(pooled_input, ())
    if len(only) != 1:
        return None
    (at,) = only
    pool, made = _match(_MAX_OVER, steps[at], line=1), _match(_NEW, steps[at])
    if pool is None or made is None or recorder.constants[made[1]] is not MaxOver:
        return None
    return at if pool[3] == pooled_input else None


def _winners_masked(
    recorder: Recorder, steps: list[Step], writer: dict, readers: dict, pool_at: int
) -> bool:
    """Whether the winners of the pooling at ``pool_at`` are read by one spread at most, of a
    gradient masked where the pooled values are zero (``mask_before_spreading``'s)."""
    pooled, winners = steps[pool_at].writes
    spreads = readers.get(winners, [])
    if not spreads:
        return True
    spread = _match(_SPREAD, steps[spreads[0]]) if len(spreads) == 1 else None
    keep_at = None if spread is None else writer.get(spread[1])
    keep = None if keep_at is None else _match(_KEEP_WHERE, steps[keep_at])
    mask_at = None if keep is None else writer.get(keep[1])
    not_zero = None if mask_at is None else _match(_NOT_ZERO, steps[mask_at])
    return (
        not_zero is not None
        and recorder.constants[not_zero[1]] is xp.not_equal
        and not_zero[2] == pooled
    )


def _swap_relu_and_pooling(
    recorder: Recorder, steps: list[Step], relu_at: int, reshape_at: int, pool_at: int
) -> None:
    """Make the pooling read the ReLU's input and write new pooled values, and the ReLU
    read those and write the old ones, in place (the caller moves the ReLU's step after the
    pooling's)."""
    relu, reshape, pool = steps[relu_at], steps[reshape_at], steps[pool_at]
    relu_out, relu_in = _match(_RELU, relu)[0], relu.reads[0]
    pooled = pool.writes[0]
    raw = recorder.new_value(recorder.sizes[pooled])
    reshape.lines = [
        re.sub(rf"new\((c\d+)\), v{relu_out},", rf"new(\1), v{relu_in},", reshape.lines[0])
    ]
    reshape.reads = (relu_in,)
    pool.lines[1] = re.sub(rf"^v{pooled} =", f"v{raw} =", pool.lines[1])
    pool.writes = [raw, *pool.writes[1:]]
    relu.lines = [f"v{pooled} = k_relu(v{raw}{OUT})"]
    relu.reads, relu.writes, relu.reusable, relu.like = (raw,), [pooled], (raw,), (0,)
