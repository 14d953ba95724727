"""``to_c``: a trained model as standalone C99, for microcontrollers.

The model is traced on an example batch (``trace.trace``), BatchNorms are folded away, and each
layer becomes one call of a small C helper (``c_helpers``) on static buffers: a table below maps
each module type to the function (its *emitter*) that writes that call and the layer's constant
weights. ``assemble`` then lays out the buffers and writes ``NAME.h`` and ``NAME.c``.

The generated code uses no dynamic memory and no stdio, only ``<math.h>``; weights are
``static const`` arrays of exact hex-float literals (the C file holds the very float32 values
scratchgrad computed with), and the two scratch buffers are sized from the trace. The C function
is not reentrant: its buffers are static, shared by all calls.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from scratchgrad import nn
from scratchgrad.export.c_helpers import HELPERS, WINDOW
from scratchgrad.export.trace import Step, trace
from scratchgrad.tensor import Tensor


@dataclass
class Layer:
    """One line of the generated ``predict``: ``call`` is a C statement in which ``{x}`` and
    ``{y}`` stand for the input and output buffers (an ``in_place`` layer has only ``{x}``)."""

    comment: str
    call: str
    helper: str
    out_size: int
    in_place: bool = False
    declarations: list[str] = field(default_factory=list)


# ---- constants as C text ---------------------------------------------------------------------


def hex_float(value: float) -> str:
    """The exact C literal of a float32 value, e.g. ``0x1.8p-1f`` for 0.75.

    >>> hex_float(0.75), hex_float(-3.0), hex_float(0.0)
    ('0x1.8p-1f', '-0x1.8p+1f', '0.0f')
    """
    if value == 0:
        return "-0.0f" if math.copysign(1, value) < 0 else "0.0f"
    mantissa, exponent = float(value).hex().split("p")
    return f"{mantissa.rstrip('0').rstrip('.')}p{exponent}f"


def c_array(c_type: str, name: str, values: np.ndarray, per_line: int = 6) -> str:
    """``static const TYPE NAME[n] = {...};`` with floats as exact hex literals."""
    flat = np.asarray(values).reshape(-1)
    if c_type == "float":
        flat = flat.astype(np.float32)
        if not np.isfinite(flat).all():
            raise ValueError(
                f"to_c: {name} holds inf or nan as a C float (float32 holds up to 3.4e38), "
                "which cannot be exported"
            )
        items = [hex_float(v) for v in flat.tolist()]
    else:
        items = [str(v) for v in flat.tolist()]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    body = ",\n    ".join(lines)
    return f"static const {c_type} {name}[{len(items)}] = {{\n    {body}\n}};"


def c_window(name: str, **fields: int) -> str:
    values = ", ".join(f".{key} = {value}" for key, value in fields.items())
    return f"static const struct window {name} = {{{values}}};"


# ---- geometry shared by the float and int8 emitters -------------------------------------------


def pair(value) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else tuple(value)


def conv_window(step: Step) -> dict[str, int]:
    """The ``struct window`` of a Conv1d/Conv2d, a Conv1d being a Conv2d of height 1."""
    conv = step.module
    (c_in, *size), (c_out, *out) = step.in_shape, step.out_shape
    kernel, stride, dilation = conv.kernel_size, conv.stride, conv.dilation
    if conv.padding == "valid":
        padding = (0,) * len(kernel)
    elif conv.padding == "same":  # PyTorch puts the odd one of an even total on the far side
        padding = tuple(d * (k - 1) // 2 for d, k in zip(dilation, kernel))
    else:
        padding = conv.padding
    if len(size) == 1:  # a height of 1, swept by a kernel of height 1 with no padding
        size, out, kernel, stride, dilation = (
            (1, *t) for t in (size, out, kernel, stride, dilation)
        )
        padding = (0, *padding)
    return _window(c_in, size, c_out, out, kernel, stride, padding, dilation, conv.groups)


def pool_window(step: Step) -> dict[str, int]:
    pool = step.module
    (c, *size), (_, *out) = step.in_shape, step.out_shape
    dilation = getattr(pool, "dilation", 1)
    return _window(
        c, size, c, out, pair(pool.kernel_size), pair(pool.stride), pair(pool.padding),
        pair(dilation), 1,
    )  # fmt: skip


def _window(c_in, size, c_out, out, kernel, stride, padding, dilation, groups) -> dict[str, int]:
    names = ("h", "w", "oh", "ow", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw")
    values = (*size, *out, *kernel, *stride, *padding, *dilation)
    return {"c_in": c_in, "c_out": c_out, **dict(zip(names, values)), "groups": groups}


def softmax_axes(step: Step) -> tuple[int, int, int]:
    """(outer, n, inner): the softmax dim of one sample as the middle of a 3-d array."""
    dim, shape = step.module.dim, step.in_shape
    if dim is None or dim % (len(shape) + 1) == 0:
        raise NotImplementedError(
            f"to_c: {step.describe()} with dim={dim}: give the dim explicitly, and not the "
            "batch dim (the C function sees one sample)"
        )
    axis = dim % (len(shape) + 1) - 1
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])


def size(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


# ---- one emitter per module type ---------------------------------------------------------------


def emit_linear(step: Step, prefix: str) -> Layer:
    n_out, n_in = step.weight.shape
    bias = step.bias if step.bias is not None else np.zeros(n_out)
    rows = size(step.in_shape[:-1])
    return Layer(
        f"Linear({n_in} -> {n_out})",
        f"linear({{x}}, {{y}}, {prefix}_weight, {prefix}_bias, {rows}, {n_in}, {n_out});",
        "linear",
        size(step.out_shape),
        declarations=[
            c_array("float", f"{prefix}_weight", step.weight),
            c_array("float", f"{prefix}_bias", bias),
        ],
    )


def emit_conv(step: Step, prefix: str) -> Layer:
    bias = step.bias if step.bias is not None else np.zeros(step.weight.shape[0])
    return Layer(
        f"{step.kind}: {step.in_shape} -> {step.out_shape}",
        f"conv2d({{x}}, {{y}}, {prefix}_weight, {prefix}_bias, &{prefix}_window);",
        "conv2d",
        size(step.out_shape),
        declarations=[
            c_array("float", f"{prefix}_weight", step.weight),
            c_array("float", f"{prefix}_bias", bias),
            c_window(f"{prefix}_window", **conv_window(step)),
        ],
    )


def emit_max_pool(step: Step, prefix: str) -> Layer:
    return Layer(
        f"MaxPool2d: {step.in_shape} -> {step.out_shape}",
        f"max_pool2d({{x}}, {{y}}, &{prefix}_window);",
        "max_pool2d",
        size(step.out_shape),
        declarations=[c_window(f"{prefix}_window", **pool_window(step))],
    )


def emit_avg_pool(step: Step, prefix: str) -> Layer:
    pool = step.module
    flags = f"{int(pool.count_include_pad)}, {pool.divisor_override or 0}"
    return Layer(
        f"AvgPool2d: {step.in_shape} -> {step.out_shape}",
        f"avg_pool2d({{x}}, {{y}}, &{prefix}_window, {flags});",
        "avg_pool2d",
        size(step.out_shape),
        declarations=[c_window(f"{prefix}_window", **pool_window(step))],
    )


def emit_adaptive_avg_pool(step: Step, prefix: str) -> Layer:
    (c, h, w), (_, oh, ow) = step.in_shape, step.out_shape
    return Layer(
        f"AdaptiveAvgPool2d: {step.in_shape} -> {step.out_shape}",
        f"adaptive_avg_pool2d({{x}}, {{y}}, {c}, {h}, {w}, {oh}, {ow});",
        "adaptive_avg_pool2d",
        size(step.out_shape),
    )


def emit_activation(step: Step, prefix: str) -> Layer:
    module, n = step.module, size(step.in_shape)
    helper = {nn.ReLU: "relu", nn.Tanh: "tanh", nn.Sigmoid: "sigmoid", nn.SiLU: "silu"}.get(
        type(module)
    )
    extra = ""
    if isinstance(module, nn.GELU):
        helper = "gelu_tanh" if module.approximate == "tanh" else "gelu"
    if isinstance(module, nn.LeakyReLU):
        helper, extra = "leaky_relu", f", {hex_float(np.float32(module.negative_slope))}"
    return Layer(step.kind, f"apply_{helper}({{x}}, {n}{extra});", f"apply_{helper}", n, True)


def emit_softmax(step: Step, prefix: str) -> Layer:
    outer, n, inner = softmax_axes(step)
    log = int(isinstance(step.module, nn.LogSoftmax))
    return Layer(
        f"{step.kind}(dim={step.module.dim})",
        f"softmax({{x}}, {outer}, {n}, {inner}, {log});",
        "softmax",
        size(step.in_shape),
        in_place=True,
    )


def emit_nothing(step: Step, prefix: str) -> None:
    """Flatten, Dropout (identity in eval mode) and Identity: one sample's memory is unchanged."""
    return None


EMITTERS: dict[type, Callable[[Step, str], Layer | None]] = {
    nn.Linear: emit_linear,
    nn.Conv1d: emit_conv,
    nn.Conv2d: emit_conv,
    nn.MaxPool2d: emit_max_pool,
    nn.AvgPool2d: emit_avg_pool,
    nn.AdaptiveAvgPool2d: emit_adaptive_avg_pool,
    nn.ReLU: emit_activation,
    nn.LeakyReLU: emit_activation,
    nn.Tanh: emit_activation,
    nn.Sigmoid: emit_activation,
    nn.GELU: emit_activation,
    nn.SiLU: emit_activation,
    nn.Softmax: emit_softmax,
    nn.LogSoftmax: emit_softmax,
    nn.Flatten: emit_nothing,
    nn.Dropout: emit_nothing,
    nn.Identity: emit_nothing,
    nn.BatchNorm1d: emit_nothing,  # never reached: folded into the layer before by trace()
    nn.BatchNorm2d: emit_nothing,
}


# ---- the files -------------------------------------------------------------------------------


def to_c(
    model: nn.Module,
    example_input: Tensor,
    out_dir: str | Path,
    name: str,
    quantize: str | None = None,
    calibration: Tensor | None = None,
) -> list[Path]:
    """Write ``NAME.h`` and ``NAME.c``: ``void NAME_predict(const float *in, float *out)``
    computes ``model`` on one sample in C99, with constants ``NAME_INPUT_SIZE`` and
    ``NAME_OUTPUT_SIZE`` (the floats of one sample in and out, row-major).

    ``example_input`` is a batch (its first dim is the batch): the model runs on it once, in
    eval mode, to find the layers and their shapes. With ``quantize="int8"`` the weights and
    activations are 8-bit integers (``calibration``, a batch of typical inputs, sets the
    activation scales); see ``scratchgrad.export.quantize``.

    >>> import tempfile
    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> model = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1))
    >>> [p.name for p in to_c(model, sg.zeros(1, 2), tempfile.mkdtemp(), "xor")]
    ['xor.h', 'xor.c']
    """
    _check_name(name)
    if quantize not in (None, "int8"):
        raise ValueError(f"to_c: quantize must be None or 'int8', got {quantize!r}")
    if quantize == "int8":
        from scratchgrad.export.quantize import int8_source

        header, source = int8_source(model, example_input, name, calibration)
    else:
        steps = trace(model, example_input, tuple(EMITTERS), "to_c")
        layers = [
            layer
            for i, step in enumerate(steps)
            if (layer := EMITTERS[type(step.module)](step, f"l{i}")) is not None
        ]
        header, source = assemble(
            name, layers, steps, example_input.shape[1:], HELPERS, "float", ["math.h"]
        )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.h", out_dir / f"{name}.c"]
    for path, text in zip(paths, (header, source)):
        path.write_text(text)
    return paths


def assemble(
    name: str,
    layers: list[Layer],
    steps: list[Step],
    in_shape: tuple[int, ...],
    helpers: dict[str, str],
    buffer_type: str,
    includes: list[str],
    preamble: str = "",
) -> tuple[str, str]:
    """The header and the source: the helpers used, the constants, the scratch buffers and
    ``NAME_predict``, which calls each layer's helper in turn.

    Each layer that makes a new array writes it into the other of two static buffers (the last
    one straight into ``out``); elementwise layers work in place. Each buffer is as large as
    the largest array it ever holds.
    """
    in_size, out_size = size(in_shape), size(steps[-1].out_shape if steps else in_shape)
    if not layers or layers[0].in_place:  # the caller's input is read-only: copy it first
        layers.insert(
            0, Layer("copy the input", f"copy({{x}}, {{y}}, {in_size});", "copy", in_size)
        )
    last_producer = max(i for i, layer in enumerate(layers) if not layer.in_place)
    buffer_sizes, statements, current, free = [0, 0], [], "in", 0
    for i, layer in enumerate(layers):
        if layer.in_place:
            statements.append(f"    {layer.call.format(x=current)} /* {layer.comment} */")
            continue
        target = "out"
        if i != last_producer:
            target, buffer_sizes[free] = f"buf{free}", max(buffer_sizes[free], layer.out_size)
            free = 1 - free
        statements.append(f"    {layer.call.format(x=current, y=target)} /* {layer.comment} */")
        current = target

    guard = f"{name.upper()}_H"
    shape = "x".join(map(str, in_shape))
    header = (
        f"/* {name}: generated by scratchgrad.export.to_c. One sample in, one out. */\n"
        f"#ifndef {guard}\n#define {guard}\n\n"
        f"#define {name.upper()}_INPUT_SIZE {in_size} /* floats: one sample of {shape} */\n"
        f"#define {name.upper()}_OUTPUT_SIZE {out_size}\n\n"
        f"void {name}_predict(const float *in, float *out);\n\n#endif\n"
    )
    called = {layer.helper for layer in layers}  # and the helpers those call:
    used = [h for h in helpers if h in called or any(f" {h}(" in helpers[c] for c in called)]
    parts = [
        f"/* {name}: generated by scratchgrad.export.to_c from these layers (BatchNorm folded):",
        *[f" *   {step.describe()}: {step.in_shape} -> {step.out_shape}" for step in steps],
        " */",
        *[f"#include <{include}>" for include in includes],
        f'#include "{name}.h"\n',
    ]
    if any("_window" in layer.call for layer in layers):
        parts.append(WINDOW)
    if preamble:
        parts.append(preamble)
    parts += [helpers[h] for h in used]
    parts += [d + "\n" for layer in layers for d in layer.declarations]
    parts += [f"static {buffer_type} buf{k}[{n}];" for k, n in enumerate(buffer_sizes) if n]
    parts += [f"\nvoid {name}_predict(const float *in, float *out)\n{{", *statements, "}\n"]
    return header, "\n".join(parts)


def _check_name(name: str) -> None:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"to_c: name must be a C identifier (it prefixes the API), got {name!r}")
