"""``scratchgrad.onnx.export``: a trained model as an ONNX file, for onnxruntime and the others,
with ``torch.onnx.export``'s arguments (``torch.onnx`` after ``import scratchgrad as torch``).

Like ``scratchgrad.export.to_c`` it traces the model on an example batch into a straight list of
layers (BatchNorm folded into the Conv/Linear before it), then a table maps each module type to
its *emitter*, which adds that layer's ONNX nodes and weights to the graph. The graph is built
with the ``onnx`` package's helpers and checked with ``onnx.checker`` before it is written.
Install the extra: ``pip install 'scratchgrad[onnx]'``.
"""

from __future__ import annotations

import enum
import inspect
import math
import os
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import IO, Any

import numpy as np

from scratchgrad import nn
from scratchgrad.export.trace import Step, trace
from scratchgrad.nn import functional as F
from scratchgrad.tensor import Tensor


class _Graph:
    """The nodes and weights (initializers) of the graph being built; each value is named."""

    def __init__(self, onnx_module) -> None:
        self.onnx, self.nodes, self.initializers = onnx_module, [], []

    def constant(self, name: str, array, dtype=np.float32) -> str:
        values = np.asarray(array, dtype)
        if (np.isfinite(values) != np.isfinite(array)).any():  # a float64 beyond float32's range
            raise ValueError(
                f"onnx.export: {name} holds values beyond float32's range (3.4e38), which "
                "ONNX's FLOAT cannot hold"
            )
        self.initializers.append(self.onnx.numpy_helper.from_array(values, name))
        return name

    def node(self, op: str, inputs: Sequence[str], **attributes) -> str:
        """Add one node; returns the name of its output."""
        out = f"{op.lower()}_{len(self.nodes)}"
        self.nodes.append(self.onnx.helper.make_node(op, list(inputs), [out], **attributes))
        return out


def _pads(begin: Sequence[int], end: Sequence[int] | None = None) -> list[int]:
    """ONNX's pads: all the starts, then all the ends."""
    return [*begin, *(begin if end is None else end)]


def _tuple(value, dims: int) -> tuple[int, ...]:
    return (value,) * dims if isinstance(value, int) else tuple(value)


# ---- one emitter per module type: (graph, step, input name, weight prefix) -> output name -----


def _linear(g: _Graph, x: str, weight: np.ndarray, bias: np.ndarray | None, prefix: str) -> str:
    out = g.node("MatMul", [x, g.constant(f"{prefix}.weight", weight.T)])
    return out if bias is None else g.node("Add", [out, g.constant(f"{prefix}.bias", bias)])


def emit_linear(g: _Graph, step: Step, x: str, prefix: str) -> str:
    return _linear(g, x, step.weight, step.bias, prefix)


def emit_conv(g: _Graph, step: Step, x: str, prefix: str) -> str:
    conv = step.module
    kernel, dilation = conv.kernel_size, conv.dilation
    if conv.padding == "same":  # PyTorch puts the odd one of an even total at the end
        total = [d * (k - 1) for d, k in zip(dilation, kernel)]
        pads = _pads([t // 2 for t in total], [t - t // 2 for t in total])
    else:
        pads = _pads((0,) * len(kernel) if conv.padding == "valid" else conv.padding)
    inputs = [x, g.constant(f"{prefix}.weight", step.weight)]
    if step.bias is not None:
        inputs.append(g.constant(f"{prefix}.bias", step.bias))
    return g.node(
        "Conv",
        inputs,
        kernel_shape=list(kernel),
        strides=list(conv.stride),
        pads=pads,
        dilations=list(dilation),
        group=conv.groups,
    )


def _pool_pads(step: Step) -> tuple[list[int], list[int]]:
    """A pooling layer's padding at the start and at the end of each spatial dim, the end
    widened to reach PyTorch's last window, so that ONNX's floor mode makes PyTorch's windows.
    (ONNX's ceil_mode may add one more window than PyTorch, which drops a last window that
    would start in the right padding.)"""
    pool, (_, *size), (_, *out) = step.module, step.in_shape, step.out_shape
    begin = _tuple(pool.padding, 2)
    reach = zip(
        size, out, _tuple(pool.kernel_size, 2), _tuple(pool.stride, 2),
        _tuple(getattr(pool, "dilation", 1), 2), begin,
    )  # fmt: skip
    end = [max(p, (o - 1) * s + d * (k - 1) + 1 - p - n) for n, o, k, s, d, p in reach]
    return list(begin), end


def _pad(g: _Graph, x: str, begin: list[int], end: list[int], value: float, prefix: str) -> str:
    """``x`` (N, C, H, W) padded with ``value`` around its last two dims."""
    pads = g.constant(f"{prefix}.pads", [0, 0, *begin, 0, 0, *end], np.int64)
    return g.node("Pad", [x, pads, g.constant(f"{prefix}.fill", value)])


def emit_max_pool(g: _Graph, step: Step, x: str, prefix: str) -> str:
    pool = step.module
    kernel = _tuple(pool.kernel_size, 2)
    begin, end = _pool_pads(step)
    if any(p >= k for p, k in zip(begin + end, kernel + kernel)):
        # onnxruntime takes pads below the kernel size only; a dilated window reaches further
        x, begin, end = _pad(g, x, begin, end, -np.inf, prefix), [0, 0], [0, 0]
    return g.node(
        "MaxPool",
        [x],
        kernel_shape=list(kernel),
        strides=list(_tuple(pool.stride, 2)),
        pads=_pads(begin, end),
        dilations=list(_tuple(pool.dilation, 2)),
    )


def emit_avg_pool(g: _Graph, step: Step, x: str, prefix: str) -> str:
    pool = step.module
    if pool.divisor_override:
        raise NotImplementedError(
            f"onnx.export: {step.describe()} has divisor_override, which ONNX's AveragePool lacks"
        )
    begin, end = _pool_pads(step)
    count_include_pad = pool.count_include_pad
    if count_include_pad and end != begin:
        # PyTorch's divisor counts the padding but not the widened end: pad with zeros
        # first, then count only what is inside
        x = _pad(g, x, begin, begin, 0.0, prefix)
        begin, end, count_include_pad = [0, 0], [e - b for b, e in zip(begin, end)], False
    return g.node(
        "AveragePool",
        [x],
        kernel_shape=list(_tuple(pool.kernel_size, 2)),
        strides=list(_tuple(pool.stride, 2)),
        pads=_pads(begin, end),
        count_include_pad=int(count_include_pad),
    )


def emit_adaptive_avg_pool(g: _Graph, step: Step, x: str, prefix: str) -> str:
    """ONNX has no adaptive pooling; when the output size divides the input size, its windows
    are an ordinary average pool's."""
    (_, *size), (_, *out) = step.in_shape, step.out_shape
    if out == [1, 1]:
        return g.node("GlobalAveragePool", [x])
    if any(s % o for s, o in zip(size, out)):
        raise NotImplementedError(
            f"onnx.export: {step.describe()} pools {tuple(size)} to {tuple(out)}; ONNX can "
            "express adaptive pooling only when the output size divides the input size"
        )
    kernel = [s // o for s, o in zip(size, out)]
    return g.node("AveragePool", [x], kernel_shape=kernel, strides=kernel)


def emit_reshape(g: _Graph, step: Step, x: str, prefix: str) -> str:
    """Flatten: a reshape to one sample's output shape (0 keeps the batch dim as it is)."""
    shape = g.constant(f"{prefix}.shape", [0, *step.out_shape], np.int64)
    return g.node("Reshape", [x, shape])


def emit_activation(g: _Graph, step: Step, x: str, prefix: str) -> str:
    module = step.module
    if isinstance(module, nn.LeakyReLU):
        return g.node("LeakyRelu", [x], alpha=float(module.negative_slope))
    if isinstance(module, nn.SiLU):
        return g.node("Mul", [x, g.node("Sigmoid", [x])])
    op = {nn.ReLU: "Relu", nn.Tanh: "Tanh", nn.Sigmoid: "Sigmoid"}[type(module)]
    return g.node(op, [x])


def emit_gelu(g: _Graph, step: Step, x: str, prefix: str) -> str:
    return _gelu(g, x, step.module.approximate, prefix)


def _gelu(g: _Graph, x: str, approximate: str, prefix: str) -> str:
    """GELU from opset 17's ops (``Gelu`` itself came in opset 20):
    x * (1 + erf(x / sqrt 2)) / 2, or with tanh(sqrt(2/pi) (x + 0.044715 x^3)) for erf."""
    half = g.constant(f"{prefix}.half", 0.5)
    one = g.constant(f"{prefix}.one", 1.0)
    if approximate == "tanh":
        cube = g.node("Mul", [x, g.node("Mul", [x, x])])
        inner = g.node("Add", [x, g.node("Mul", [cube, g.constant(f"{prefix}.c", 0.044715)])])
        scaled = g.node("Mul", [inner, g.constant(f"{prefix}.k", math.sqrt(2 / math.pi))])
        curve = g.node("Tanh", [scaled])
    else:
        curve = g.node("Erf", [g.node("Mul", [x, g.constant(f"{prefix}.k", math.sqrt(0.5))])])
    return g.node("Mul", [g.node("Mul", [x, half]), g.node("Add", [curve, one])])


def emit_softmax(g: _Graph, step: Step, x: str, prefix: str) -> str:
    if step.module.dim is None:
        raise NotImplementedError(f"onnx.export: {step.describe()} needs an explicit dim")
    return g.node(step.kind, [x], axis=step.module.dim)  # "Softmax" and "LogSoftmax" alike


def emit_layer_norm(g: _Graph, step: Step, x: str, prefix: str) -> str:
    return _layer_norm(g, x, step.module, prefix)


def _layer_norm(g: _Graph, x: str, norm: nn.LayerNorm, prefix: str) -> str:
    shape = norm.normalized_shape
    scale = np.ones(shape) if norm.weight is None else _array(norm.weight)
    inputs = [x, g.constant(f"{prefix}.weight", scale)]
    if norm.bias is not None:
        inputs.append(g.constant(f"{prefix}.bias", _array(norm.bias)))
    return g.node("LayerNormalization", inputs, axis=-len(shape), epsilon=norm.eps)


def _array(parameter) -> np.ndarray | None:
    return None if parameter is None else parameter.detach().numpy()


def emit_encoder(g: _Graph, step: Step, x: str, prefix: str) -> str:
    """TransformerEncoder: its layers one after the other, then its norm if it has one."""
    encoder = step.module
    for i, layer in enumerate(encoder.layers):
        x = _encoder_layer(g, x, layer, f"{prefix}.layers.{i}", step.describe())
    return x if encoder.norm is None else _layer_norm(g, x, encoder.norm, f"{prefix}.norm")


def emit_encoder_layer(g: _Graph, step: Step, x: str, prefix: str) -> str:
    return _encoder_layer(g, x, step.module, prefix, step.describe())


def _encoder_layer(g: _Graph, x: str, layer, prefix: str, where: str) -> str:
    """TransformerEncoderLayer on (N, L, E): self-attention and a feed-forward block, each
    added to its input, with LayerNorm after each sum (or before each block, ``norm_first``)."""
    if not layer.self_attn.batch_first:
        raise NotImplementedError(
            f"onnx.export: {where} has batch_first=False; export needs the batch first"
        )
    if layer.activation not in (F.relu, F.gelu):
        raise NotImplementedError(f"onnx.export: {where}'s activation is not relu or gelu")

    def feed_forward(h: str) -> str:
        h = _linear(
            g, h, _array(layer.linear1.weight), _array(layer.linear1.bias), f"{prefix}.linear1"
        )
        h = g.node("Relu", [h]) if layer.activation is F.relu else _gelu(g, h, "none", prefix)
        return _linear(
            g, h, _array(layer.linear2.weight), _array(layer.linear2.bias), f"{prefix}.linear2"
        )

    attend = lambda h: _self_attention(g, h, layer.self_attn, f"{prefix}.self_attn")  # noqa: E731
    norm1 = lambda h: _layer_norm(g, h, layer.norm1, f"{prefix}.norm1")  # noqa: E731
    norm2 = lambda h: _layer_norm(g, h, layer.norm2, f"{prefix}.norm2")  # noqa: E731
    if layer.norm_first:
        x = g.node("Add", [x, attend(norm1(x))])
        return g.node("Add", [x, feed_forward(norm2(x))])
    x = norm1(g.node("Add", [x, attend(x)]))
    return norm2(g.node("Add", [x, feed_forward(x)]))


def _self_attention(g: _Graph, x: str, mha: nn.MultiheadAttention, prefix: str) -> str:
    """Multi-head self-attention on (N, L, E), no mask: softmax(q k^T / sqrt(d)) v per head."""
    heads, dim = mha.num_heads, mha.head_dim
    weights = np.split(_array(mha.in_proj_weight), 3)
    biases = [None] * 3 if mha.in_proj_bias is None else np.split(_array(mha.in_proj_bias), 3)
    split = g.constant(f"{prefix}.heads", [0, 0, heads, dim], np.int64)  # (N, L, heads, d)
    q, k, v = (
        g.node("Reshape", [_linear(g, x, w, b, f"{prefix}.{name}"), split])
        for w, b, name in zip(weights, biases, "qkv")
    )
    q = g.node("Transpose", [q], perm=[0, 2, 1, 3])  # (N, heads, L, d)
    k = g.node("Transpose", [k], perm=[0, 2, 3, 1])  # (N, heads, d, L)
    v = g.node("Transpose", [v], perm=[0, 2, 1, 3])
    scale = g.constant(f"{prefix}.scale", 1 / math.sqrt(dim))
    scores = g.node("MatMul", [g.node("Mul", [q, scale]), k])
    out = g.node("MatMul", [g.node("Softmax", [scores], axis=-1), v])
    out = g.node("Transpose", [out], perm=[0, 2, 1, 3])  # (N, L, heads, d)
    merge = g.constant(f"{prefix}.merge", [0, 0, heads * dim], np.int64)
    out = g.node("Reshape", [out, merge])
    return _linear(g, out, _array(mha.out_proj.weight), _array(mha.out_proj.bias), f"{prefix}.out")


def emit_embedding(g: _Graph, step: Step, x: str, prefix: str) -> str:
    # max_norm rescales the rows each forward looks up; a Gather of fixed weights would not
    if step.module.max_norm is not None:
        raise NotImplementedError(
            f"onnx.export: {step.describe()} has max_norm, which renormalizes its weights in "
            "forward; ONNX's Gather looks up fixed weights"
        )
    return g.node("Gather", [g.constant(f"{prefix}.weight", step.weight), x], axis=0)


def emit_nothing(g: _Graph, step: Step, x: str, prefix: str) -> str:
    """Dropout (identity in eval mode) and Identity."""
    return x


EMITTERS: dict[type, Callable[[_Graph, Step, str, str], str]] = {
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
    nn.SiLU: emit_activation,
    nn.GELU: emit_gelu,
    nn.Softmax: emit_softmax,
    nn.LogSoftmax: emit_softmax,
    nn.LayerNorm: emit_layer_norm,
    nn.Embedding: emit_embedding,
    nn.TransformerEncoderLayer: emit_encoder_layer,
    nn.TransformerEncoder: emit_encoder,
    nn.Flatten: emit_reshape,
    nn.Dropout: emit_nothing,
    nn.Identity: emit_nothing,
    nn.BatchNorm1d: emit_nothing,  # never reached: folded into the layer before by trace()
    nn.BatchNorm2d: emit_nothing,
}


DEFAULT_OPSET = 17  # opset_version=None: the first with LayerNormalization, which emitters use


class TrainingMode(enum.IntEnum):
    """``torch.onnx.TrainingMode``: the mode the model is exported in. scratchgrad exports eval
    mode only: ``EVAL`` (the default), or ``PRESERVE`` of a model already in eval mode."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """``torch.onnx.OperatorExportTypes``: only ``ONNX`` (standard operators) is written."""

    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


def export(
    model: nn.Module,
    args: Tensor | tuple[Tensor, ...] = (),
    f: str | os.PathLike | IO[bytes] | None = None,
    *,
    kwargs: dict[str, Any] | None = None,
    verbose: bool | None = None,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    opset_version: int | None = None,
    dynamo: bool = True,
    external_data: bool = True,
    dynamic_shapes: Any = None,
    custom_translation_table: dict | None = None,
    report: bool = False,
    optimize: bool = True,
    verify: bool = False,
    profile: bool = False,
    dump_exported_program: bool = False,
    artifacts_dir: str | os.PathLike = ".",
    export_params: bool = True,
    keep_initializers_as_inputs: bool | None = False,
    dynamic_axes: Mapping[str, Mapping[int, str] | Sequence[int]] | None = None,
    training: TrainingMode = TrainingMode.EVAL,
    operator_export_type: OperatorExportTypes = OperatorExportTypes.ONNX,
    do_constant_folding: bool = True,
    custom_opsets: Mapping[str, int] | None = None,
    export_modules_as_functions: bool | Collection[type] = False,
    autograd_inlining: bool = True,
) -> None:
    """Write ``model`` as an ONNX file at ``f`` (a path or a binary file), as
    ``torch.onnx.export(model, args, f, ...)`` does, with the same arguments.

    ``args`` is one example batch (a tensor, or a tuple of one tensor): the model runs on it once,
    in eval mode, to find its layers and shapes. As PyTorch's, the file has the example's shapes;
    ``dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}`` (or PyTorch's list form,
    ``{"input": [0]}``) makes the batch dim a symbol, so any batch size runs; it is the only dim
    that can be dynamic. ``input_names`` defaults to the name of ``forward``'s argument (as
    PyTorch's default exporter), ``output_names`` to ``["output"]``; ``opset_version=None`` is 17.
    The options that change nothing for a model in eval mode (``verbose``, ``dynamo``,
    ``external_data``, ``optimize``, ``artifacts_dir``, ``do_constant_folding``,
    ``autograd_inlining``) are accepted; the others raise ``NotImplementedError`` unless left
    at their defaults. Unlike ``dynamo=True``'s, it returns None: ``f`` is required.

    >>> import io
    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> f = io.BytesIO()
    >>> export(nn.Sequential(nn.Linear(2, 4), nn.ReLU()), (sg.zeros(1, 2),), f)
    >>> import onnx
    >>> [node.op_type for node in onnx.load_from_string(f.getvalue()).graph.node]
    ['MatMul', 'Add', 'Relu', 'Identity']
    """
    try:
        import onnx
        import onnx.numpy_helper  # noqa: F401  (a submodule the graph's constants need)
    except ImportError:
        raise ImportError(
            "onnx.export needs the onnx package: pip install 'scratchgrad[onnx]'"
        ) from None
    if f is None:
        raise TypeError(
            "onnx.export: scratchgrad writes the file and returns None (no ONNXProgram): give f, "
            "a path or a binary file"
        )
    _check_unsupported(
        kwargs=bool(kwargs),
        dynamic_shapes=dynamic_shapes is not None,
        custom_translation_table=bool(custom_translation_table),
        report=report,
        verify=verify,
        profile=profile,
        dump_exported_program=dump_exported_program,
        export_params=not export_params,
        keep_initializers_as_inputs=bool(keep_initializers_as_inputs),
        operator_export_type=operator_export_type != OperatorExportTypes.ONNX,
        custom_opsets=bool(custom_opsets),
        export_modules_as_functions=bool(export_modules_as_functions),
    )
    if training == TrainingMode.TRAINING or (
        training == TrainingMode.PRESERVE and any(m.training for m in model.modules())
    ):
        raise NotImplementedError(
            f"onnx.export: training={TrainingMode(training)!r} exports the model in training "
            "mode; scratchgrad exports eval mode only (leave training=TrainingMode.EVAL)"
        )
    example_input = _example_input(args)
    input_name, output_name = _names(model, input_names, output_names)
    in_batch, out_batch = _batch_dims(dynamic_axes, input_name, output_name, example_input)

    steps = trace(model, example_input, tuple(EMITTERS), "onnx.export")
    g = _Graph(onnx)
    value = input_name
    for i, step in enumerate(steps):
        value = EMITTERS[type(step.module)](g, step, value, step.name or f"layer{i}")
    g.nodes.append(onnx.helper.make_node("Identity", [value], [output_name]))

    out_shape = steps[-1].out_shape if steps else example_input.shape[1:]
    is_float = example_input.is_floating_point()
    elem = onnx.TensorProto.FLOAT if is_float else onnx.TensorProto.INT64
    make_value = onnx.helper.make_tensor_value_info
    graph = onnx.helper.make_graph(
        g.nodes,
        type(model).__name__,
        [make_value(input_name, elem, [in_batch, *example_input.shape[1:]])],
        [make_value(output_name, onnx.TensorProto.FLOAT, [out_batch, *out_shape])],
        g.initializers,
    )
    opset = DEFAULT_OPSET if opset_version is None else opset_version
    proto = onnx.helper.make_model(
        graph,
        opset_imports=[onnx.helper.make_opsetid("", opset)],
        producer_name="scratchgrad",
    )
    onnx.checker.check_model(proto, full_check=True)
    onnx.save(proto, f)


# why each of torch.onnx.export's other options cannot be honoured here
_UNSUPPORTED = {
    "kwargs": "the model takes one tensor, given in args",
    "dynamic_shapes": "give dynamic_axes={name: {0: 'batch'}} for a dynamic batch",
    "custom_translation_table": "it is an option of torch.export, which scratchgrad lacks",
    "report": "it is an option of torch.export, which scratchgrad lacks",
    "verify": "it is an option of torch.export, which scratchgrad lacks",
    "profile": "it is an option of torch.export, which scratchgrad lacks",
    "dump_exported_program": "it is an option of torch.export, which scratchgrad lacks",
    "export_params": "the weights are always written into the file",
    "keep_initializers_as_inputs": "the weights are never graph inputs",
    "operator_export_type": "only standard ONNX operators are written",
    "custom_opsets": "no custom operators are written",
    "export_modules_as_functions": "layers are written as plain nodes, not ONNX functions",
}


def _check_unsupported(**changed: bool) -> None:
    """Raise for the first option given a value other than its default (``changed``)."""
    for option, is_changed in changed.items():
        if is_changed:
            raise NotImplementedError(
                f"onnx.export: scratchgrad does not support {option} (leave it at its default): "
                f"{_UNSUPPORTED[option]}"
            )


def _example_input(args) -> Tensor:
    """The one example batch in ``args``: a tensor, or a tuple (or list) of one tensor."""
    inputs = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    if len(inputs) != 1:
        raise NotImplementedError(
            f"onnx.export: args holds {len(inputs)} inputs; scratchgrad exports models of one "
            "tensor input: give args as a tensor or a tuple of one tensor"
        )
    if not isinstance(inputs[0], Tensor):
        raise TypeError(f"onnx.export: args must be a Tensor, not {type(inputs[0]).__name__}")
    return inputs[0]


def _names(model: nn.Module, input_names, output_names) -> tuple[str, str]:
    """The graph's input and output names: the given ones, else forward's argument's name and
    "output"; more names than the one input and one output is PyTorch's RuntimeError."""
    for kind, names in (("input", input_names), ("output", output_names)):
        if names and len(names) > 1:
            raise RuntimeError(
                f"number of {kind} names provided ({len(names)}) exceeded number of {kind}s (1)"
            )
    first = next(iter(inspect.signature(model.forward).parameters.values()), None)
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    argument = first.name if first is not None and first.kind in positional else "input"
    return (input_names or [argument])[0], (output_names or ["output"])[0]


def _batch_dims(dynamic_axes, input_name: str, output_name: str, example: Tensor):
    """The first dims of the input and of the output: the example's batch size, or the symbol
    that ``dynamic_axes`` gives (the output's follows the input's unless named itself)."""
    symbols = {}
    for key, axes in (dynamic_axes or {}).items():
        if key not in (input_name, output_name):
            warnings.warn(
                f"Provided key {key} for dynamic axes is not a valid input/output name",
                stacklevel=3,
            )
            continue
        if not isinstance(axes, Mapping):  # PyTorch's list form: it names the axes itself
            axes = {axis: f"{key}_dynamic_axes_{i + 1}" for i, axis in enumerate(axes)}
        for axis, symbol in axes.items():
            if not isinstance(axis, int):
                raise ValueError("The type of axis index is expected to be an integer")
            if axis != 0:
                raise NotImplementedError(
                    f"onnx.export: dynamic_axes makes axis {axis} of '{key}' dynamic; scratchgrad "
                    "traces the model at the example's shapes and can leave only the batch "
                    "(axis 0) dynamic"
                )
            symbols[key] = symbol
    in_batch = symbols.get(input_name, example.shape[0])
    return in_batch, symbols.get(output_name, in_batch)
