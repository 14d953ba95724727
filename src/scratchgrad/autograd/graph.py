"""``scratchgrad.autograd.graph``, after ``torch.autograd.graph``: the bookkeeping that code
outside the ops calls when it changes a tensor's memory behind the graph's back."""

from __future__ import annotations

from typing import Any

from scratchgrad.autograd.grad_mode import INPLACE_INFERENCE_TENSOR


def increment_version(tensor: Any) -> None:
    """Count an in-place change of ``tensor``'s memory (a tensor, or an iterable of tensors),
    as ``torch.autograd.graph.increment_version``: a graph that saved this memory, or a view of
    it, then refuses to use it in backward instead of computing with the new values.

    In-place ops count their own changes; code that writes into ``tensor.array`` directly (an
    optimizer's step, a collective, ``Module.to``) calls this, the one place the count moves.

    >>> import scratchgrad as sg
    >>> x = sg.ones(2)
    >>> x.array += 1
    >>> increment_version(x)
    >>> x._version
    1
    """
    for t in (tensor,) if hasattr(tensor, "_counter") else tensor:  # one call for a list
        counter = t._counter  # shared by views; made on first need
        if counter is None:
            t._counter = [1]
        else:
            try:  # (free in Python 3.11+ when nothing is raised: no test on the hot path)
                counter[0] += 1
            except RuntimeError:  # an inference tensor's, outside inference mode
                raise RuntimeError(INPLACE_INFERENCE_TENSOR) from None
            if len(counter) > 1:  # copies made by view() to bring up to date (Tensor.view)
                counter[1:] = [copy for copy in counter[1:] if copy()]
