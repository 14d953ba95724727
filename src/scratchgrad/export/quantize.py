"""int8 quantization: the rules, a NumPy reference of them, and the C code that follows them.

The rules (symmetric, so the real number 0 is the integer 0 and zero padding stays exact):

- A tensor of real values ``r`` is stored as int8 ``q`` with one scale ``s``: ``r ~ s * q``,
  ``q`` in [-127, 127]. Weights get one scale per output channel (``max |w| / 127``);
  activations one per tensor, from the largest magnitude seen on the calibration batch.
- Linear/Conv sum int8 products in int32, starting from the bias quantized to the scale
  ``s_in * s_w``. The sum is brought to the output scale by ``M = s_in * s_w / s_out``, held as a
  31-bit integer ``m`` and a shift: ``q_out = (acc * m + 2^(shift-1)) >> shift`` (64-bit,
  rounding half up), clamped to [-127, 127]. No float in the loops.
- ReLU, max/average pooling, Flatten and Dropout keep the scale (averages divide the int32 sum
  by the window size or divisor_override, rounding half away from zero, clamped to
  [-127, 127]), so one scale covers the largest value
  along such a run; a ReLU's input counts only its positive part (negatives may saturate).
- Tanh, Sigmoid, GELU, SiLU and LeakyReLU become a table of 256 int8 outputs, one per input.
- The input is quantized in C as ``(int)(v + 0.5f)`` (toward zero: ``v - 0.5f`` when negative)
  of ``v = x / s`` clamped to [-127, 127]; the output is dequantized as ``q * s``. Only a
  trailing Softmax/LogSoftmax runs in float, on the dequantized output.

``QuantizedModel`` holds the integers and computes the same thing in NumPy (``forward``), so the
tests can require the C output to equal it bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from scratchgrad import nn
from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.creation import tensor
from scratchgrad.export.c import EMITTERS as FLOAT_EMITTERS
from scratchgrad.export.c import (
    Layer,
    assemble,
    c_array,
    c_window,
    conv_window,
    hex_float,
    size,
    softmax_axes,
)
from scratchgrad.export.c_helpers import INT8_HELPERS
from scratchgrad.export.trace import Step, trace
from scratchgrad.nn import functional as F
from scratchgrad.tensor import Tensor

QMAX = 127
KEEPS_SCALE = (
    nn.ReLU, nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d, nn.Flatten, nn.Dropout,
    nn.Identity,
)  # fmt: skip
LOOKUP = {
    nn.Tanh: np.tanh,
    nn.Sigmoid: lambda x: 1 / (1 + np.exp(-x)),
    nn.SiLU: lambda x: x / (1 + np.exp(-x)),
}
SOFTMAX = (nn.Softmax, nn.LogSoftmax)
SUPPORTED = (
    nn.Linear, nn.Conv1d, nn.Conv2d, *KEEPS_SCALE, *LOOKUP, nn.GELU, nn.LeakyReLU, *SOFTMAX,
    nn.BatchNorm1d, nn.BatchNorm2d,
)  # fmt: skip


@dataclass
class QStep:
    """One traced layer with its integers: for Linear/Conv ``weight`` (int8), ``bias`` (int32)
    and the requantization ``multiplier`` (int32) and ``shift`` per output channel; for an
    elementwise activation its 256-entry ``table``; ``scale`` is its output's scale."""

    step: Step
    scale: float
    arrays: dict[str, np.ndarray] = field(default_factory=dict)


def requantization(
    real_multiplier: np.ndarray, of: str = "a layer"
) -> tuple[np.ndarray, np.ndarray]:
    """Each ``M`` as ``m * 2**-shift`` with ``m`` a 31-bit integer (``M = f * 2**e`` with
    ``f`` in [0.5, 1), ``m = round(f * 2**31)``, ``shift = 31 - e``); ``of`` names the layer
    in the error for an ``M`` of 2**30 or more.

    >>> requantization(np.array([0.75, 2.0**-40]))
    (array([1610612736,          0], dtype=int32), array([31,  1], dtype=int8))
    """
    multipliers, shifts = [], []
    for value in np.asarray(real_multiplier, np.float64).tolist():
        fraction, exponent = math.frexp(value)
        m = round(fraction * 2**31)
        if m == 2**31:  # the fraction rounded up to 1
            m, exponent = m // 2, exponent + 1
        shift = 31 - exponent
        if shift > 62:  # M < 2**-31: every int32 sum rounds to 0
            m, shift = 0, 1
        if shift < 1:
            raise ValueError(
                f"to_c(int8): {of}'s rescaling factor {value:g} is too large (>= 2**30): its "
                "output's scale is tiny against its input's and weights'"
            )
        multipliers.append(m)
        shifts.append(shift)
    return np.array(multipliers, np.int32), np.array(shifts, np.int8)


def _scale(absmax: float) -> float:
    return absmax / QMAX if absmax > 0 else 1.0


class QuantizedModel:
    """A model quantized to int8 by the rules above, with its NumPy reference ``forward``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> _ = sg.manual_seed(0)
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    >>> calibration = sg.randn(64, 4)
    >>> q = QuantizedModel(model, calibration)
    >>> error = q.forward(calibration.numpy()) - model(calibration).detach().numpy()
    >>> bool(abs(error).max() < 0.05)
    True
    """

    def __init__(self, model: nn.Module, calibration: Tensor) -> None:
        if not isinstance(calibration, Tensor):
            raise TypeError(
                "to_c(int8): calibration must be a batch of typical inputs (a Tensor), "
                f"got {type(calibration).__name__}"
            )
        steps = trace(model, calibration, SUPPORTED, "to_c(int8)")
        tail = len(steps)
        while tail and isinstance(steps[tail - 1].module, SOFTMAX):
            tail -= 1
        for step in steps[:tail]:
            if isinstance(step.module, SOFTMAX):
                raise NotImplementedError(
                    f"to_c(int8): {step.describe()} is not the last layer; int8 models run "
                    "Softmax/LogSoftmax only at the end, in float"
                )
        self.steps, self.softmax = steps[:tail], steps[tail:]
        self.in_shape = calibration.shape[1:]
        # need[i]: the largest magnitude going into step i (need[-1]: the output); a ReLU's
        # input needs only its positive part, which is the ReLU's output
        need = [float(np.abs(calibration.numpy()).max())] + [s.out_absmax for s in self.steps]
        for i, absmax in enumerate(need):
            if not math.isfinite(absmax):
                where = self.steps[i - 1].describe() + "'s output" if i else "the input"
                raise ValueError(
                    f"to_c(int8): {where} holds inf or nan on the calibration batch (a max "
                    "pool window that sees only padding?), which int8 cannot represent"
                )
        for i, step in enumerate(self.steps):
            if isinstance(step.module, nn.ReLU):
                need[i] = 0.0
        # one scale serves a whole run of scale-keeping steps: the largest need along it
        run = need[:]
        for i in reversed(range(len(self.steps))):
            if isinstance(self.steps[i].module, KEEPS_SCALE):
                run[i] = max(need[i], run[i + 1])
        self.input_scale = _scale(run[0])
        self.layers, scale = [], self.input_scale
        for i, step in enumerate(self.steps):
            out_scale = scale if isinstance(step.module, KEEPS_SCALE) else _scale(run[i + 1])
            self.layers.append(QStep(step, out_scale, self._integers(step, scale, out_scale)))
            scale = out_scale
        self.output_scale = scale

    @staticmethod
    def _integers(step: Step, in_scale: float, out_scale: float) -> dict[str, np.ndarray]:
        module = step.module
        if isinstance(module, (nn.Linear, nn.Conv1d, nn.Conv2d)):
            w = step.weight.reshape(len(step.weight), -1)
            w_scale = np.abs(w).max(1) / QMAX
            # a channel of zero weights outputs its bias alone: quantize that at the output's
            # scale (at s_in * 1 it rounded to 0 wherever the input's scale was the coarser)
            w_scale[w_scale == 0] = out_scale / in_scale
            weight = np.clip(np.round(w / w_scale[:, None]), -QMAX, QMAX).astype(np.int8)
            bias = step.bias if step.bias is not None else np.zeros(len(w))
            bias = np.round(bias / (in_scale * w_scale))
            if (np.abs(bias) + QMAX * QMAX * w.shape[1]).max() >= 2**31:
                raise ValueError(f"to_c(int8): the int32 sums of {step.describe()} could overflow")
            multiplier, shift = requantization(in_scale * w_scale / out_scale, step.describe())
            return {
                "weight": weight.reshape(step.weight.shape),
                "bias": bias.astype(np.int32),
                "multiplier": multiplier,
                "shift": shift,
            }
        if isinstance(module, KEEPS_SCALE):
            return {}
        # an elementwise activation: its output for each of the 256 int8 inputs
        x = np.arange(-128, 128) * in_scale
        if isinstance(module, nn.LeakyReLU):
            y = np.where(x > 0, x, module.negative_slope * x)
        elif isinstance(module, nn.GELU):
            with no_grad():
                y = F.gelu(tensor(x), module.approximate).numpy()
        else:
            y = LOOKUP[type(module)](x)
        table = np.clip(np.sign(y) * np.floor(np.abs(y) / out_scale + 0.5), -QMAX, QMAX)
        return {"table": table.astype(np.int8)}

    # ---- the NumPy reference ----------------------------------------------------------------

    def quantize_input(self, x: np.ndarray) -> np.ndarray:
        """The C code's float32 steps exactly: scale, clamp, add +-0.5, truncate."""
        v = np.asarray(x, np.float32) * np.float32(1 / self.input_scale)
        v = np.clip(v, np.float32(-QMAX), np.float32(QMAX))
        return np.trunc(v + np.where(v >= 0, np.float32(0.5), np.float32(-0.5))).astype(np.int8)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """The int8 model on a batch ``x`` (float), as float32 outputs of shape (N, out size)."""
        q = self.quantize_input(x).astype(np.int64)
        for layer in self.layers:
            q = _reference(layer, q)
        out = q.reshape(len(q), -1).astype(np.float32) * np.float32(self.output_scale)
        for step in self.softmax:
            outer, n, inner = softmax_axes(step)
            z = out.reshape(-1, outer, n, inner)
            z = z - z.max(2, keepdims=True)
            if isinstance(step.module, nn.LogSoftmax):
                z = z - np.log(np.exp(z).sum(2, keepdims=True))
            else:
                z = np.exp(z) / np.exp(z).sum(2, keepdims=True)
            out = z.reshape(len(out), -1).astype(np.float32)
        return out


def _reference(layer: QStep, q: np.ndarray) -> np.ndarray:
    """One int8 layer in NumPy on int64 arrays of int8 values. Sums of integers are computed
    by scratchgrad's float64 layers, which are exact below 2**53 (ours stay below 2**31)."""
    step, module, a = layer.step, layer.step.module, layer.arrays
    q = q.reshape(len(q), *step.in_shape)
    if isinstance(module, (nn.Linear, nn.Conv1d, nn.Conv2d)):
        x, w, b = (tensor(v.astype(np.float64)) for v in (q, a["weight"], a["bias"]))
        with no_grad():
            if isinstance(module, nn.Linear):
                acc = F.linear(x, w, b).numpy()
            else:
                acc = (
                    type(module)
                    .convolve(
                        x, w, b, module.stride, module.padding, module.dilation, module.groups
                    )
                    .numpy()
                )
        acc = acc.astype(np.int64)
        channel = -1 if isinstance(module, nn.Linear) else 1
        shape = [1] * acc.ndim
        shape[channel] = -1
        m, shift = a["multiplier"].astype(np.int64).reshape(shape), a["shift"].reshape(shape)
        out = (acc * m + (np.int64(1) << (shift - 1).astype(np.int64))) >> shift
        return np.clip(out, -QMAX, QMAX)
    if isinstance(module, nn.ReLU):
        return np.maximum(q, 0)
    if "table" in a:
        return a["table"][q + 128].astype(np.int64)
    if isinstance(module, (nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d)):
        return _pool_reference(module, q)
    return q.reshape(len(q), *step.out_shape)  # Flatten, Dropout, Identity


def _pool_reference(module: nn.Module, q: np.ndarray) -> np.ndarray:
    x = tensor(q.astype(np.float64))
    with no_grad():
        if isinstance(module, nn.MaxPool2d):
            return module(x).numpy().astype(np.int64)
        if isinstance(module, nn.AdaptiveAvgPool2d):
            counts = _adaptive_window_sizes(q.shape[-2:], module(x).shape[-2:])
            sums = np.rint(module(x).numpy() * counts)
        else:
            summing = nn.AvgPool2d(
                module.kernel_size, module.stride, module.padding, module.ceil_mode,
                module.count_include_pad, divisor_override=1,
            )  # fmt: skip
            ones = tensor(np.ones(q.shape))
            sums = summing(x).numpy()  # the divisor: a window's sum of ones over its average
            counts = np.rint(summing(ones).numpy() / module(ones).numpy())
    sums, counts = sums.astype(np.int64), counts.astype(np.int64)
    out = np.where(sums >= 0, (sums + counts // 2) // counts, -((-sums + counts // 2) // counts))
    return np.clip(out, -QMAX, QMAX)  # a divisor_override can average beyond the inputs


def _adaptive_window_sizes(size, out) -> np.ndarray:
    """Rows times columns of each adaptive pooling window: floor(i*n/o) to ceil((i+1)*n/o)."""
    rows, cols = (
        np.array([-(-(i + 1) * n // o) - i * n // o for i in range(o)]) for n, o in zip(size, out)
    )
    return np.outer(rows, cols)


# ---- the C code: one emitter per module type -------------------------------------------------


def emit_linear_q(layer: QStep, prefix: str) -> Layer:
    step = layer.step
    n_out, n_in = step.weight.shape
    return Layer(
        f"Linear({n_in} -> {n_out}), int8",
        f"linear_q({{x}}, {{y}}, {prefix}_weight, {prefix}_bias, {prefix}_multiplier, "
        f"{prefix}_shift, {size(step.in_shape[:-1])}, {n_in}, {n_out});",
        "linear_q",
        size(step.out_shape),
        declarations=_integer_arrays(layer, prefix),
    )


def emit_conv_q(layer: QStep, prefix: str) -> Layer:
    step = layer.step
    return Layer(
        f"{step.kind}: {step.in_shape} -> {step.out_shape}, int8",
        f"conv2d_q({{x}}, {{y}}, {prefix}_weight, {prefix}_bias, {prefix}_multiplier, "
        f"{prefix}_shift, &{prefix}_window);",
        "conv2d_q",
        size(step.out_shape),
        declarations=[
            *_integer_arrays(layer, prefix),
            c_window(f"{prefix}_window", **conv_window(step)),
        ],
    )


def _integer_arrays(layer: QStep, prefix: str) -> list[str]:
    types = {"weight": "int8_t", "bias": "int32_t", "multiplier": "int32_t", "shift": "int8_t"}
    return [c_array(types[key], f"{prefix}_{key}", layer.arrays[key]) for key in types]


def emit_pool_q(layer: QStep, prefix: str) -> Layer:
    """The float pooling layer's call, on int8 (``max_pool2d_q`` for ``max_pool2d``...)."""
    float_layer = FLOAT_EMITTERS[type(layer.step.module)](layer.step, prefix)
    helper = float_layer.helper
    float_layer.call = float_layer.call.replace(f"{helper}(", f"{helper}_q(")
    float_layer.helper = f"{helper}_q"
    return float_layer


def emit_relu_q(layer: QStep, prefix: str) -> Layer:
    n = size(layer.step.in_shape)
    return Layer("ReLU", f"relu_q({{x}}, {n});", "relu_q", n, in_place=True)


def emit_lookup(layer: QStep, prefix: str) -> Layer:
    n = size(layer.step.in_shape)
    return Layer(
        f"{layer.step.kind} (a table)",
        f"lookup({{x}}, {n}, {prefix}_table);",
        "lookup",
        n,
        in_place=True,
        declarations=[c_array("int8_t", f"{prefix}_table", layer.arrays["table"], per_line=16)],
    )


def emit_nothing(layer: QStep, prefix: str) -> None:
    return None


INT8_EMITTERS = {
    nn.Linear: emit_linear_q,
    nn.Conv1d: emit_conv_q,
    nn.Conv2d: emit_conv_q,
    nn.MaxPool2d: emit_pool_q,
    nn.AvgPool2d: emit_pool_q,
    nn.AdaptiveAvgPool2d: emit_pool_q,
    nn.ReLU: emit_relu_q,
    **dict.fromkeys((*LOOKUP, nn.GELU, nn.LeakyReLU), emit_lookup),
    **dict.fromkeys((nn.Flatten, nn.Dropout, nn.Identity), emit_nothing),
}


def int8_source(
    model: nn.Module, example_input: Tensor, name: str, calibration: Tensor | None
) -> tuple[str, str]:
    """The header and source of ``model`` quantized to int8 (``to_c(quantize="int8")``)."""
    if calibration is None:
        raise ValueError("to_c: quantize='int8' needs calibration=, a batch of typical inputs")
    qmodel = QuantizedModel(model, calibration)
    if tuple(example_input.shape[1:]) != tuple(qmodel.in_shape):
        raise ValueError(
            f"to_c: calibration samples have shape {qmodel.in_shape}, example_input's "
            f"{example_input.shape[1:]}"
        )
    n_in = size(qmodel.in_shape)
    n_out = size(qmodel.steps[-1].out_shape if qmodel.steps else qmodel.in_shape)
    inv_scale = hex_float(np.float32(1 / qmodel.input_scale))
    layers = [
        Layer(
            "int8 input",
            f"quantize_input({{x}}, {{y}}, {n_in}, {inv_scale});",
            "quantize_input",
            n_in,
        )
    ]
    for i, layer in enumerate(qmodel.layers):
        emitted = INT8_EMITTERS[type(layer.step.module)](layer, f"l{i}")
        if emitted is not None:
            layers.append(emitted)
    out_scale = hex_float(np.float32(qmodel.output_scale))
    layers.append(
        Layer(
            "float output", f"dequantize({{x}}, {{y}}, {n_out}, {out_scale});", "dequantize", n_out
        )
    )
    layers += [FLOAT_EMITTERS[type(step.module)](step, "") for step in qmodel.softmax]
    steps = qmodel.steps + qmodel.softmax
    return assemble(
        name, layers, steps, qmodel.in_shape, INT8_HELPERS, "int8_t", ["math.h", "stdint.h"]
    )
