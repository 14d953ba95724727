"""The graph core: ``Function``, the backward engine, grad mode, gradient checks."""

from scratchgrad.autograd.function import Function  # noqa: I001  (first: Tensor needs it)
from scratchgrad.autograd import forward_ad, functional, graph
from scratchgrad.autograd.anomaly import detect_anomaly, set_detect_anomaly
from scratchgrad.autograd.engine import backward, grad
from scratchgrad.autograd.gradcheck import gradcheck, gradgradcheck
from scratchgrad.autograd.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from scratchgrad.autograd.variable import Variable

__all__ = [
    "Function",
    "Variable",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "forward_ad",
    "functional",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "graph",
    "inference_mode",
    "no_grad",
    "set_detect_anomaly",
    "set_grad_enabled",
]
