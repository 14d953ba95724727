"""Recurrent layers after ``torch.nn``: ``RNN``, ``LSTM`` (with ``proj_size``), ``GRU`` and their
cells, with PyTorch's parameter names, shapes, gate order (i, f, g, o for LSTM; r, z, n for GRU),
initialisation and options.

The time loop is Python, but each step is a few array operations on the whole batch, and the
input's share of every gate, for all time steps at once, is one matrix product before the loop.
"""

from __future__ import annotations

import math
import warnings

from scratchgrad.autograd import autocast
from scratchgrad.creation import tensor, zeros
from scratchgrad.nn import functional as F
from scratchgrad.nn import init
from scratchgrad.nn.module import Module, _empty_parameter
from scratchgrad.nn.utils import rnn as rnn_utils
from scratchgrad.nn.utils.rnn import PackedSequence
from scratchgrad.tensor import Tensor, cat, stack, where

# ---- one time step of each kind; ``x_part`` is the input's share of the gates, done already ---


def _tanh_step(x_part: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    return (x_part + F.linear(h, w_hh, b_hh)).tanh()


def _relu_step(x_part: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    return (x_part + F.linear(h, w_hh, b_hh)).relu()


def _lstm_step(x_part, state, w_hh, b_hh, w_hr=None) -> tuple[Tensor, Tensor]:
    """Gates i, f, g, o (PyTorch's order); ``w_hr`` projects the new h (``proj_size``)."""
    h, c = state
    i, f, g, o = (x_part + F.linear(h, w_hh, b_hh)).chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    return (h if w_hr is None else F.linear(h, w_hr)), c


def _gru_step(x_part: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    """Gates r, z, n (PyTorch's order); NOTE: r scales h's share of n including its bias."""
    x_r, x_z, x_n = x_part.chunk(3, -1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, -1)
    r, z = (x_r + h_r).sigmoid(), (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return n + z * (h - n)  # (1 - z) * n + z * h


_STEPS = {"RNN_TANH": _tanh_step, "RNN_RELU": _relu_step, "LSTM": _lstm_step, "GRU": _gru_step}
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _where(condition: Tensor, new, old):
    """``new`` where ``condition`` holds, else ``old``: a state, or LSTM's (h, c) pair, in
    ``new``'s dtype (under autocast a step's 16-bit state, not promoted by a float32 initial
    one: PyTorch's packed kernels step only the sequences still running)."""
    if isinstance(new, tuple):
        return tuple(where(condition, n, o.to(n.dtype)) for n, o in zip(new, old))
    return where(condition, new, old.to(new.dtype))


def _stacked(finals: list):
    """The final states of every layer and direction as one h (or LSTM's (h, c))."""
    if isinstance(finals[0], tuple):
        return tuple(stack(parts) for parts in zip(*finals))
    return stack(finals)


def _reordered(state, order: Tensor):
    """``state`` (h, or LSTM's (h, c)) with its batch (dim 1) taken in ``order``."""
    if isinstance(state, tuple):
        return tuple(t.index_select(1, order) for t in state)
    return state.index_select(1, order)


def _uniform_init(module: Module, hidden_size: int) -> None:
    """PyTorch's initialisation of every recurrent weight and bias: U(-1/sqrt(H), 1/sqrt(H))."""
    bound = 1 / math.sqrt(hidden_size) if hidden_size > 0 else 0
    for p in module.parameters():
        init.uniform_(p, -bound, bound)


# ---- multi-layer, possibly bidirectional layers ---------------------------------------------


class RNNBase(Module):
    """What RNN, LSTM and GRU share: the parameters of each layer and direction, and the loop
    over layers, directions and time."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        _check_sizes(mode, hidden_size, num_layers, dropout, proj_size)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        directions = 2 if bidirectional else 1
        out_size = proj_size or hidden_size
        gates = _GATES[mode] * hidden_size
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else out_size * directions
            for suffix in ("", "_reverse")[:directions]:
                shapes = {"weight_ih": (gates, layer_input), "weight_hh": (gates, out_size)}
                if bias:
                    shapes.update(bias_ih=(gates,), bias_hh=(gates,))
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                for name, shape in shapes.items():
                    setattr(
                        self, f"{name}_l{layer}{suffix}", _empty_parameter(shape, device, dtype)
                    )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_init(self, self.hidden_size)

    def flatten_parameters(self) -> None:
        """Accepted for scripts written for cuDNN; nothing to do here."""

    @property
    def all_weights(self) -> list[list[Tensor]]:
        """Each layer and direction's parameters, as PyTorch's: ``[weight_ih, weight_hh,
        bias_ih, bias_hh, weight_hr]`` (those it has), layer by layer, forward then reverse.

        >>> from scratchgrad import nn
        >>> [[tuple(w.shape) for w in ws] for ws in nn.GRU(2, 3, bias=False).all_weights]
        [[(9, 2), (9, 3)]]
        """
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")
        return [
            [
                getattr(self, f"{name}_l{layer}{suffix}")
                for name in names
                if hasattr(self, f"{name}_l{layer}{suffix}")
            ]
            for layer in range(self.num_layers)
            for suffix in ("", "_reverse")[: 2 if self.bidirectional else 1]
        ]

    def _weights(self, layer: int, direction: int) -> tuple:
        """(w_ih, b_ih, w_hh, b_hh, w_hr) of one layer and direction (None where absent)."""
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        return tuple(
            getattr(self, name + suffix, None)
            for name in ("weight_ih", "bias_ih", "weight_hh", "bias_hh", "weight_hr")
        )

    def forward(self, input: Tensor | PackedSequence, hx=None):
        """``(output, h_n)``, or ``(output, (h_n, c_n))`` for LSTM, as PyTorch's shapes. A
        ``PackedSequence`` input runs each sequence for its own length (h_n is each one's
        state after its last step; the reverse direction starts at that step) and gives a
        packed output."""
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        batched = input.ndim == 3
        if input.ndim not in (2, 3):
            raise ValueError(f"{self._get_name()}: expected 2-D or 3-D input, got {input.shape}")
        self._check_input(input)
        x = input if not batched else input.transpose(0, 1) if self.batch_first else input
        if not batched:
            x = x.unsqueeze(1)
        if x.shape[0] == 0:  # (PyTorch's words; no step to stack)
            raise RuntimeError(
                f"{self._get_name()}: Expected sequence length to be larger than 0 in RNN, got "
                f"input of shape {tuple(input.shape)}"
            )
        one_kernel = self.mode == "LSTM" and not self.proj_size  # (oneDNN has no projection)
        layers = mkldnn_rnn_layer if one_kernel else RNNBase._layers
        x, finals = layers(self, x, self._initial_states(hx, x, batched))
        return self._finish(x, finals, batched)

    def _forward_packed(self, packed: PackedSequence, hx):
        """``forward`` of a packed batch: run padded in its sorted order, each step's state
        kept where a sequence has no such step; ``hx`` and h_n in the batch's own order."""
        x, lengths = rnn_utils.sorted_padded(packed)
        self._check_input(x)
        if hx is not None and packed.sorted_indices is not None:
            hx = _reordered(hx, packed.sorted_indices)
        lengths = tensor(lengths, device=x.device).unsqueeze(1)
        within = [lengths > t for t in range(x.shape[0])]
        x, finals = self._layers(x, self._initial_states(hx, x, True), within)
        final = _stacked(finals)
        if packed.unsorted_indices is not None:
            final = _reordered(final, packed.unsorted_indices)
        return rnn_utils.repacked(x, packed), final

    def _check_input(self, input: Tensor) -> None:
        weight = self.weight_ih_l0
        if input.dtype != weight.dtype and autocast.state.dtype is None:  # autocast casts
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight.dtype}). "
                f"Convert input: input.to({weight.dtype}), or convert model: "
                f"model.to({input.dtype})"
            )
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"{self._get_name()}: input.size(-1) must be equal to input_size. "
                f"Expected {self.input_size}, got {input.shape[-1]}"
            )

    def _layers(self, x: Tensor, states: list, within: list | None = None) -> tuple:
        """Every layer and direction over ``(T, B, *)``: the last layer's outputs and each
        layer and direction's final state. ``within[t]``: which sequences have a step ``t``
        (``(B, 1)`` bools; None: all)."""
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(2 if self.bidirectional else 1):
                index = layer * (2 if self.bidirectional else 1) + direction
                weights = self._weights(layer, direction)
                out, final = self._run(x, states[index], weights, direction, within)
                outputs.append(out)
                finals.append(final)
            x = outputs[0] if len(outputs) == 1 else cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout)
        return x, finals

    def _run(self, x: Tensor, state, weights: tuple, reverse: int, within: list | None = None):
        """One layer in one direction over all time steps: (outputs, final state). Where
        ``within[t]`` is false the state passes step ``t`` unchanged."""
        w_ih, b_ih, w_hh, b_hh, w_hr = weights
        x_parts = F.linear(x, w_ih, b_ih)  # the input's share of the gates, every step at once
        step, extra = _STEPS[self.mode], (w_hr,) if self.proj_size else ()
        outputs = [None] * x.shape[0]
        for t in reversed(range(x.shape[0])) if reverse else range(x.shape[0]):
            new = step(x_parts[t], state, w_hh, b_hh, *extra)
            if within is not None:
                new = _where(within[t], new, state)
            state = new
            outputs[t] = state[0] if self.mode == "LSTM" else state
        return stack(outputs), state

    def _initial_states(self, hx, x: Tensor, batched: bool) -> list:
        """One initial state per layer and direction: zeros, or slices of ``hx``."""
        count = self.num_layers * (2 if self.bidirectional else 1)
        batch = x.shape[1]
        shape_h = (count, batch, self.proj_size or self.hidden_size)
        shape_c = (count, batch, self.hidden_size)
        if hx is None:
            h = zeros(shape_h, dtype=x.dtype, device=x.device)
            return (
                list(zip(h, zeros(shape_c, dtype=x.dtype, device=x.device)))
                if self.mode == "LSTM"
                else list(h)
            )
        given = hx if self.mode == "LSTM" else (hx,)
        if self.mode == "LSTM" and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError("LSTM: hx must be a tuple (h_0, c_0)")
        given = [t if batched else t.unsqueeze(1) for t in given]
        for t, shape in zip(given, (shape_h, shape_c)):
            if t.shape != shape:
                raise RuntimeError(
                    f"{self._get_name()}: expected hidden size {shape}, got {tuple(t.shape)}"
                )
        return list(zip(*given)) if self.mode == "LSTM" else list(given[0])

    def _finish(self, output: Tensor, finals: list, batched: bool):
        final = _stacked(finals)
        if not batched:
            output = output.squeeze(1)
            final = tuple(t.squeeze(1) for t in final) if self.mode == "LSTM" else final.squeeze(1)
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, final

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            text += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if not self.bias:
            text += ", bias=False"
        if self.batch_first:
            text += ", batch_first=True"
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.bidirectional:
            text += ", bidirectional=True"
        return text


def _check_no_projection(proj_size: object) -> None:
    if proj_size is not None:
        raise ValueError(
            f"proj_size argument is only supported for LSTM, not RNN or GRU (got {proj_size})"
        )


def _check_sizes(mode: str, hidden_size: int, num_layers: int, dropout: float, proj_size: int):
    if not 0 <= dropout <= 1:
        raise ValueError(f"dropout should be a number in range [0, 1], got {dropout}")
    if dropout > 0 and num_layers == 1:  # (PyTorch's warning: the dropout is never applied)
        warnings.warn(
            "dropout option adds dropout after all but last recurrent layer, so non-zero "
            f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
            f"num_layers={num_layers}",
            stacklevel=4,
        )
    if hidden_size <= 0 or num_layers <= 0:
        raise ValueError(
            f"hidden_size and num_layers must be greater than 0, got {hidden_size}, {num_layers}"
        )
    if proj_size < 0:
        raise ValueError(f"proj_size should be a positive integer or zero, got {proj_size}")
    if proj_size and mode != "LSTM":
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
    if proj_size >= hidden_size:
        raise ValueError(f"proj_size ({proj_size}) has to be smaller than hidden_size")


def _rnn_mode(nonlinearity: str) -> str:
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
    return f"RNN_{nonlinearity.upper()}"


@autocast.autocast_policy("lower")
def mkldnn_rnn_layer(module: RNNBase, x: Tensor, states: list) -> tuple:
    """An LSTM's layers, under autocast in the low dtype with its states: PyTorch's CPU LSTM
    is one oneDNN kernel (``mkldnn_rnn_layer``) on its lower-precision list, so its outputs and
    final states are 16-bit (not with a projection, nor a packed batch: other kernels)."""
    return module._layers(x, states)


class RNN(RNNBase):
    """An Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu).

    >>> import scratchgrad as sg
    >>> rnn = RNN(3, 5, num_layers=2, batch_first=True)
    >>> output, h_n = rnn(sg.randn(4, 7, 3))  # (batch, time, features)
    >>> output.shape, h_n.shape
    (scratchgrad.Size([4, 7, 5]), scratchgrad.Size([2, 4, 5]))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device=None,
        dtype=None,
        *,
        proj_size: int | None = None,  # (LSTM's only: given here, even 0, PyTorch's ValueError)
    ) -> None:
        _check_no_projection(proj_size)
        self.nonlinearity = nonlinearity
        super().__init__(
            _rnn_mode(nonlinearity),
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device=device,
            dtype=dtype,
        )


class LSTM(RNNBase):
    """Long short-term memory; with ``proj_size`` > 0, h is projected to that size each step.

    >>> import scratchgrad as sg
    >>> lstm = LSTM(3, 5, proj_size=2, bidirectional=True)
    >>> output, (h_n, c_n) = lstm(sg.randn(7, 4, 3))  # (time, batch, features)
    >>> output.shape, h_n.shape, c_n.shape
    (scratchgrad.Size([7, 4, 4]), scratchgrad.Size([2, 4, 2]), scratchgrad.Size([2, 4, 5]))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            "LSTM",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            proj_size,
            device,
            dtype,
        )


class GRU(RNNBase):
    """Gated recurrent unit (gates r, z, n as PyTorch's).

    >>> import scratchgrad as sg
    >>> output, h_n = GRU(3, 5)(sg.randn(7, 3))  # one unbatched sequence
    >>> output.shape, h_n.shape
    (scratchgrad.Size([7, 5]), scratchgrad.Size([1, 5]))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device=None,
        dtype=None,
        *,
        proj_size: int | None = None,  # (LSTM's only: given here, even 0, PyTorch's ValueError)
    ) -> None:
        _check_no_projection(proj_size)
        super().__init__(
            "GRU",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device=device,
            dtype=dtype,
        )


# ---- cells: one time step -------------------------------------------------------------------


class RNNCellBase(Module):
    """What the cells share, with PyTorch's signature: ``num_chunks`` blocks of ``hidden_size``
    gate rows in each weight; each cell names its step in ``mode`` (see ``_STEPS``)."""

    mode = ""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gates = num_chunks * hidden_size
        self.weight_ih = _empty_parameter((gates, input_size), device, dtype)
        self.weight_hh = _empty_parameter((gates, hidden_size), device, dtype)
        if bias:
            self.bias_ih = _empty_parameter((gates,), device, dtype)
            self.bias_hh = _empty_parameter((gates,), device, dtype)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_init(self, self.hidden_size)

    def forward(self, input: Tensor, hx=None):
        if input.ndim not in (1, 2):
            raise ValueError(f"{self._get_name()}: expected 1-D or 2-D input, got {input.shape}")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            h = zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            hx = (h, h) if self.mode == "LSTM" else h
        else:
            self._check_hidden(input, hx)
            if not batched:
                hx = tuple(t.unsqueeze(0) for t in hx) if self.mode == "LSTM" else hx.unsqueeze(0)
        x_part = F.linear(x, self.weight_ih, self.bias_ih)
        out = _STEPS[self.mode](x_part, hx, self.weight_hh, self.bias_hh)
        if batched:
            return out
        return tuple(t.squeeze(0) for t in out) if self.mode == "LSTM" else out.squeeze(0)

    def _check_hidden(self, input: Tensor, hx) -> None:
        """Each state of ``hx`` is ``(hidden_size,)`` for an unbatched input, ``(N,
        hidden_size)`` for a batch of N, as PyTorch checks (a state of another shape would
        broadcast against the input's gates)."""
        expected = (*input.shape[:-1], self.hidden_size)
        for state in hx if self.mode == "LSTM" else (hx,):
            if state.ndim not in (1, 2):
                raise ValueError(
                    f"{self._get_name()}: expected a 1-D or 2-D hidden state, got {state.shape}"
                )
            if state.shape != expected:
                raise RuntimeError(
                    f"{self._get_name()}: expected a hidden state of shape {expected} for an "
                    f"input of shape {input.shape}, got {state.shape}"
                )

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            text += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":  # (RNNCell's)
            text += f", nonlinearity={self.nonlinearity}"
        return text


class RNNCell(RNNCellBase):
    """One step of ``RNN``: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu).

    >>> import scratchgrad as sg
    >>> RNNCell(3, 5)(sg.randn(4, 3)).shape
    scratchgrad.Size([4, 5])
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device=None,
        dtype=None,
    ) -> None:
        self.nonlinearity, self.mode = nonlinearity, _rnn_mode(nonlinearity)
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)


class LSTMCell(RNNCellBase):
    """One step of ``LSTM``: returns ``(h', c')``."""

    mode = "LSTM"

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)


class GRUCell(RNNCellBase):
    """One step of ``GRU``."""

    mode = "GRU"

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)
