"""Rewrites of a recorded step that compute the same bits with less work.

One so far, ``mask_before_spreading``: a ReLU before max pooling (``F.max_pool2d(F.relu(x))``,
W5's two convolutions) has a backward that spreads the pooled gradient over the ReLU's whole
output, then masks it where that output is zero::

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
    writer = {n: i for i, step in enumerate(steps) for n in step.writes}
    readers: dict[int, list[int]] = {}
    for i, step in enumerate(steps):
        for n in step.reads:
            readers.setdefault(n, []).append(i)
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
        Step([f"v{new_mask} = {not_equal}(v{pooled}, 0)"], (pooled,), [new_mask], False),
        Step(
            [f"v{new_grad} = k_keep_where(v{new_mask}, v{pooled_grad})"],
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
