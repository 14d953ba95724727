"""``ctc_loss``: the Connectionist Temporal Classification loss (Graves et al. 2006,
https://www.cs.toronto.edu/~graves/icml_2006.pdf), after ``torch.nn.functional.ctc_loss``.

Composed of Tensor ops, so that its gradient (and its gradient's gradient) comes from the
engine: the forward variables ``alpha`` of every extended label position (blank, label, blank,
..., blank) of every sequence move one time step per Python step, in log space.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from scratchgrad import backend
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.backend import namespace
from scratchgrad.creation import arange, full, tensor
from scratchgrad.dtypes import torch_name
from scratchgrad.tensor import Tensor, cat, stack, where

_REDUCTIONS = ("none", "mean", "sum")


@autocast_policy("float32")
def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor | Sequence[int],
    target_lengths: Tensor | Sequence[int],
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """The negative log-likelihood of each target sequence under all the alignments of its
    labels (with blanks between and around them) to the first ``input_lengths[n]`` steps of
    ``log_probs`` (T, N, C), or (T, C) for one sequence. ``targets`` is padded (N, S) or the
    sequences concatenated (sum(target_lengths),). ``reduction="mean"`` divides each loss by
    its target length (at least 1), then averages. ``zero_infinity`` zeroes the infinite losses
    of impossible alignments and their gradients.

    As PyTorch's, the gradient with respect to ``log_probs`` is the one that is right when
    ``log_probs`` is a ``log_softmax`` output: it adds ``exp(log_probs)`` (over the steps in
    ``input_lengths``) to the true one, which a log_softmax's backward cancels; an infinite
    loss without ``zero_infinity`` gets a NaN gradient.

    >>> import scratchgrad as sg
    >>> log_probs = sg.full((2, 1, 2), 0.5).log()  # 2 steps, classes {blank, a}, each p = 1/2
    >>> round(ctc_loss(log_probs, sg.tensor([[1]]), [2], [1], reduction="sum").exp().item(), 4)
    1.3333
    """
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    batched = log_probs.ndim == 3
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(
            f"ctc_loss: log_probs must be 2-D (T, C) or 3-D (T, N, C), got shape {log_probs.shape}"
        )
    if not log_probs.is_floating_point():
        raise NotImplementedError(
            f'"ctc_loss_cpu" not implemented for {torch_name(log_probs.dtype)}'
        )
    if log_probs.numel() == 0:
        raise RuntimeError(
            f"ctc_loss: log_probs tensor must not be empty, got shape {log_probs.shape}"
        )
    if not batched:  # one sequence: a batch of one, its targets read as concatenated
        log_probs, targets = log_probs.unsqueeze(1), targets.reshape(-1)
        input_lengths, target_lengths = _one_length(input_lengths), _one_length(target_lengths)
    steps, batch, classes = log_probs.shape
    input_lengths = _lengths(input_lengths, batch, "input_lengths", log_probs.device)
    target_lengths = _lengths(target_lengths, batch, "target_lengths", log_probs.device)
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    labels = _padded_targets(targets, target_lengths, steps, classes, input_lengths, batched)
    loss = -_log_likelihood(log_probs, labels, input_lengths, target_lengths, blank)
    # PyTorch's gradient adds exp(log_probs) over the steps of each sequence (see above)
    active = (arange(steps, device=log_probs.device)[:, None] < input_lengths).unsqueeze(-1)
    extra = where(active, log_probs.exp(), 0.0).sum((0, 2))
    loss = loss + (extra - extra.detach())
    # zero_infinity: no loss nor gradient from impossible alignments; otherwise the value is
    # unchanged and d/d(extra) is loss * 0: NaN for an infinite loss, as PyTorch's gradient
    infinite = loss.detach().isinf()
    loss = where(infinite, 0.0, loss) if zero_infinity else loss * (extra * 0.0 + 1.0)
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return (loss / target_lengths.clamp(min=1).to(loss.dtype)).mean()
    return loss if batched else loss.squeeze(0)


def _one_length(length) -> Tensor | Sequence[int]:
    return length.reshape(-1) if isinstance(length, Tensor) else length


def _lengths(lengths, batch: int, name: str, device) -> Tensor:
    if not isinstance(lengths, Tensor):
        if not isinstance(lengths, (list, tuple)):
            raise TypeError(
                f"ctc_loss: {name} must be a Tensor or a tuple of ints, got "
                f"{type(lengths).__name__}"
            )
        lengths = tensor(list(lengths), dtype=backend.int64, device=device)
    if lengths.dtype.kind not in "iu" or lengths.ndim != 1 or lengths.shape[0] != batch:
        raise RuntimeError(f"{name} must be of size batch_size")
    return lengths


def _padded_targets(targets, target_lengths, steps, classes, input_lengths, batched) -> Tensor:
    """(N, S) labels, from padded or concatenated targets, after PyTorch's checks."""
    if targets.dtype != backend.int64:  # PyTorch reads any labels as integers (gather int64's)
        targets = targets.to(backend.int64)
    capture_hook.call(_check_lengths, input_lengths.array, target_lengths.array, steps)
    if targets.ndim == 2 and batched:
        capture_hook.call(_check_padded, targets.array, target_lengths.array, classes)
        return targets
    capture_hook.call(_check_concatenated, targets.array, target_lengths.array, classes)
    # the longest target; a recorded step, whose next batch may hold longer ones, takes all
    width = targets.shape[0]
    if capture_hook.recorder is None and target_lengths.shape[0]:
        width = int(target_lengths.max())
    starts = target_lengths.cumsum(0) - target_lengths
    index = starts[:, None] + arange(width, device=targets.device)
    index = index.clamp(max=max(targets.shape[0] - 1, 0))
    return targets.reshape(-1)[index] if targets.shape[0] else index * 0


def _check_lengths(input_lengths, target_lengths, steps: int) -> None:
    for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if lengths.size and lengths.min() < 0:
            raise RuntimeError(
                f"Expected {name} to have value at least 0, but got value {lengths.min()}"
            )
    if input_lengths.size and input_lengths.max() > steps:
        raise RuntimeError(
            f"Expected input_lengths to have value at most {steps}, but got value "
            f"{input_lengths.max()}"
        )


def _check_padded(targets, target_lengths, classes: int) -> None:
    longest = int(target_lengths.max()) if target_lengths.size else 0
    for dim, size in ((0, target_lengths.size), (1, longest)):
        at_least = " at least" if dim else ""
        if targets.shape[dim] < size or (dim == 0 and targets.shape[0] != size):
            raise RuntimeError(
                f"Expected tensor to have size{at_least} {size} at dimension {dim}, but got "
                f"size {targets.shape[dim]} for argument #2 'targets' (ctc_loss: targets of "
                f"shape {targets.shape})"
            )
    used = namespace(targets).arange(targets.shape[1]) < target_lengths[:, None]
    _check_labels(targets[used], classes)


def _check_concatenated(targets, target_lengths, classes: int) -> None:
    total = int(target_lengths.sum())
    if targets.shape[0] != total:
        raise RuntimeError(
            f"Expected tensor to have size {total} at dimension 0, but got size "
            f"{targets.shape[0]} for argument #2 'targets' (ctc_loss: targets of shape "
            f"{targets.shape})"
        )
    _check_labels(targets, classes)


def _check_labels(labels, classes: int) -> None:
    # PyTorch reads a label outside [0, C) from outside log_probs' memory: a wrong loss
    outside = (labels < 0) | (labels >= classes)
    if outside.any():
        raise RuntimeError(
            f"ctc_loss: target label {labels[outside][0]} is not in the range of the "
            f"{classes} classes [0, {classes})"
        )


def _log_likelihood(log_probs, labels, input_lengths, target_lengths, blank) -> Tensor:
    """log p(labels | log_probs) of each sequence, by the alpha recursion over time."""
    steps, batch, _ = log_probs.shape
    width = 2 * labels.shape[1] + 1
    positions = arange(width, device=log_probs.device)
    valid = positions < (2 * target_lengths + 1)[:, None]
    # extended labels: blank, l1, blank, l2, ..., blank; the padding's labels read as blank
    padded = where(positions[: labels.shape[1]] < target_lengths[:, None], labels, blank)
    pairs = cat([padded.repeat_interleave(2, 1), padded.new_full((batch, 1), blank)], 1)
    extended = where(valid & (positions % 2 == 1), pairs, blank)
    # a label may follow the label two positions back (skipping a blank) unless they are equal
    skip = cat([valid[:, :2] & False, extended[:, 2:] != extended[:, :-2]], 1)
    skip = skip & (positions % 2 == 1)
    emissions = log_probs.gather(2, extended.unsqueeze(0).expand(steps, batch, width))
    # before the first step the whole probability sits on the leading blank
    alpha = where(positions == 0, 0.0, -math.inf).to(log_probs.dtype).expand(batch, width)
    never = full((batch, 2), -math.inf, dtype=log_probs.dtype, device=log_probs.device)
    for t in range(steps):
        stay, step = alpha, cat([never[:, :1], alpha], 1)[:, :width]
        jump = where(skip, cat([never, alpha], 1)[:, :width], -math.inf)
        moved = _logsumexp((stay, step, jump)) + emissions[t]
        alpha = where(valid & (t < input_lengths)[:, None], moved, alpha)
    last = (2 * target_lengths)[:, None]
    ends = alpha.gather(1, last), alpha.gather(1, (last - 1).clamp(min=0))
    ends = ends[0], where(last > 0, ends[1], -math.inf)
    return _logsumexp(ends).squeeze(1)


def _logsumexp(terms: Sequence[Tensor]) -> Tensor:
    """log(sum(exp(terms))) elementwise, -inf where every term is -inf, with gradients that
    stay finite (zero) there: the all -inf case never reaches log(0) or -inf - -inf."""
    stacked = stack(list(terms), -1)
    top = stacked.detach().amax(-1, keepdim=True)
    finite = top > -math.inf
    top = where(finite, top, 0.0)
    total = (stacked - top).exp().sum(-1, keepdim=True)
    return where(finite, top + where(finite, total, 1.0).log(), -math.inf).squeeze(-1)
