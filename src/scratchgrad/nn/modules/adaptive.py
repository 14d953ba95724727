"""``torch.nn.modules.adaptive``'s import path: its classes live in ``scratchgrad.nn.adaptive``."""

from scratchgrad.nn.adaptive import AdaptiveLogSoftmaxWithLoss, _ASMoutput

__all__ = ["_ASMoutput", "AdaptiveLogSoftmaxWithLoss"]
