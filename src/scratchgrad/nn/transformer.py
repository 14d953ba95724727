"""Transformer layers after ``torch.nn``: ``TransformerEncoderLayer``, ``TransformerEncoder``,
``TransformerDecoderLayer``, ``TransformerDecoder`` and ``Transformer``, with PyTorch's
submodule names (so state dicts load either way), options and masks."""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable

from scratchgrad import backend
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.grad_mode import is_grad_enabled
from scratchgrad.creation import arange
from scratchgrad.nn import functional as F
from scratchgrad.nn import init
from scratchgrad.nn.activation import GELU, ReLU
from scratchgrad.nn.attention import MultiheadAttention
from scratchgrad.nn.containers import ModuleList
from scratchgrad.nn.dropout import Dropout
from scratchgrad.nn.linear import Linear
from scratchgrad.nn.module import Module
from scratchgrad.nn.normalization import LayerNorm
from scratchgrad.tensor import Tensor, where

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation: str | Callable) -> Callable:
    if callable(activation):
        return activation
    if activation not in _ACTIVATIONS:
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return _ACTIVATIONS[activation]


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward network, each in a residual branch with LayerNorm
    after it (or before it, with ``norm_first``), as PyTorch's.

    >>> import scratchgrad as sg
    >>> layer = TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    >>> layer(sg.randn(3, 5, 8)).shape
    scratchgrad.Size([3, 5, 8])
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout, bias, batch_first=batch_first, device=device, dtype=dtype
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias, device, dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias, device, dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)
        self.activation = _activation(activation)
        # PyTorch's flag (1 relu, 2 gelu, 0 other), which its encoder's fast path requires
        self.activation_relu_or_gelu = _relu_or_gelu(self.activation)

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        """As PyTorch's: its attention gets the masks as floats (a bool one as 0 and -inf).
        Where PyTorch takes its fast path (``_takes_pytorch_fast_path``), its fused kernel
        gives NaN for a query whose every key is masked (not 0) and reads the mask whatever
        ``is_causal`` says; so does this (but a float mask stays a bias added to the scores,
        where PyTorch's kernel masks out every nonzero entry: README, "What is different")."""
        F._warn_mismatched(src_key_padding_mask, "src_key_padding_mask", src_mask, "src_mask")
        src_mask, padding_mask = _as_biases((src_mask, src_key_padding_mask), src.dtype)
        fast = self._takes_pytorch_fast_path(src)
        attention = (src_mask, padding_mask, is_causal and not fast, fast)  # _sa_block's
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), *attention)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, *attention))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal, fast=False) -> Tensor:
        # (the weights' softmax gives the fast path's NaN where every key is masked; the
        # weights themselves are dropped, so not averaged)
        x = self.self_attn(
            x, x, x, key_padding_mask, fast, attn_mask, average_attn_weights=False,
            is_causal=is_causal,
        )[0]  # fmt: skip
        return self.dropout1(x)

    def _takes_pytorch_fast_path(self, src: Tensor) -> bool:
        """Whether PyTorch's layer runs its fused kernel: in eval mode, on a 3-D ``src``, with
        ``_why_not_nested``'s conditions on the layer (``norm_first`` allowed), no forward
        hook, and no gradient to record."""
        if self.training or src.ndim != 3 or _why_not_nested(self, fast_path=True):
            return False
        if any(m._forward_hooks or m._forward_pre_hooks for m in self.modules()):
            return False
        tensors = _fast_path_tensors(src, self)
        return not (is_grad_enabled() and any(t.requires_grad for t in tensors))

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _relu_or_gelu(activation: Callable) -> int:
    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    return 2 if activation is F.gelu or isinstance(activation, GELU) else 0


class TransformerDecoderLayer(Module):
    """Self-attention over the target, attention to the encoder's output (``memory``), and a
    feed-forward network, each in a residual branch with LayerNorm, as PyTorch's.

    >>> import scratchgrad as sg
    >>> layer = TransformerDecoderLayer(8, 2, dim_feedforward=16)
    >>> layer(sg.randn(4, 3, 8), sg.randn(6, 3, 8)).shape  # (target length, batch, d_model)
    scratchgrad.Size([4, 3, 8])
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        factory = {"batch_first": batch_first, "device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias, **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout, bias, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias, device, dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias, device, dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.norm3 = LayerNorm(d_model, layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        x = tgt
        self_masks = (tgt_mask, tgt_key_padding_mask, tgt_is_causal)
        memory_masks = (memory_mask, memory_key_padding_mask, memory_is_causal)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), *self_masks)
            x = x + self._mha_block(self.norm2(x), memory, *memory_masks)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, *self_masks))
        x = self.norm2(x + self._mha_block(x, memory, *memory_masks))
        return self.norm3(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal) -> Tensor:
        x = self.self_attn(
            x, x, x, key_padding_mask, need_weights=False, attn_mask=attn_mask, is_causal=is_causal
        )[0]
        return self.dropout1(x)

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, is_causal) -> Tensor:
        x = self.multihead_attn(
            x,
            memory,
            memory,
            key_padding_mask,
            need_weights=False,
            attn_mask=attn_mask,
            is_causal=is_causal,
        )[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (each with its own weights), then ``norm``.

    PyTorch's fast path is reproduced where it changes the result: with
    ``enable_nested_tensor`` (and a ``TransformerEncoderLayer`` that is ``batch_first``, not
    ``norm_first``, with even ``nhead``, biases, relu or gelu and equal LayerNorm eps's; else a
    warning at construction, as PyTorch's), a forward in eval mode on a 3-D ``src`` with a
    ``src_key_padding_mask``, no ``mask`` and no gradient to record (grad mode off, or neither
    ``src`` nor the first layer's weights requiring grad) runs each sequence as a nested tensor
    of its unpadded tokens: the output is zero at the padded positions (before ``norm``), and a
    batch with every token padded raises PyTorch's RuntimeError. PyTorch takes only a mask
    whose kept tokens come first (a left-aligned one) unless ``mask_check`` is False; it then
    keeps as many leading tokens as the mask keeps, wherever they are, and so does this.
    (PyTorch's check for autocast looks at CUDA's only, so CPU autocast keeps the fast path here
    too; PyTorch's fused layer then fails on the bfloat16 activations.)

    >>> import scratchgrad as sg
    >>> layer = TransformerEncoderLayer(8, 2, 16, batch_first=True)
    >>> encoder = TransformerEncoder(layer, num_layers=2).eval()
    >>> padding = sg.tensor([[False, False, True]])
    >>> with sg.no_grad():
    ...     out = encoder(sg.randn(1, 3, 8), src_key_padding_mask=padding)
    >>> out[0, 2].abs().sum().item()
    0.0
    """

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check
        why_not = _why_not_nested(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(
                "enable_nested_tensor is True, but self.use_nested_tensor is False because "
                f"{why_not}",
                stacklevel=2,
            )
        self.use_nested_tensor = enable_nested_tensor and not why_not

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        F._warn_mismatched(src_key_padding_mask, "src_key_padding_mask", mask, "mask")
        both = mask is not None and src_key_padding_mask is not None
        if both and mask.dtype != src_key_padding_mask.dtype:  # as PyTorch's: a bool one as floats
            mask, src_key_padding_mask = _as_biases((mask, src_key_padding_mask), src.dtype)
        nested = self._nested_tokens(src, mask, src_key_padding_mask)
        if nested is not None:  # every layer sees each sequence's kept tokens only
            src_key_padding_mask, keep = nested
        for layer in self.layers:
            src = layer(src, mask, src_key_padding_mask, bool(is_causal))
        if nested is not None:  # the nested tensor padded back with zeros
            src = where(keep.unsqueeze(-1), src, src.new_zeros(()))
        return src if self.norm is None else self.norm(src)

    def _nested_tokens(self, src, mask, padding) -> tuple[Tensor, Tensor] | None:
        """Where PyTorch makes a nested tensor: the padding mask its layers then see, and the
        (N, S) tokens the output keeps (the others zero). Its check that the kept tokens come
        first is a tensor here, not a Python branch, so that a jitted step replays it."""
        first = self.layers[0] if len(self.layers) else None
        if (
            not getattr(self, "use_nested_tensor", False)
            or first is None
            or first.training
            or src.ndim != 3
            or padding is None
            or tuple(padding.shape) != tuple(src.shape[:2])
            or mask is not None
            or (is_grad_enabled() and any(t.requires_grad for t in _fast_path_tensors(src, first)))
        ):
            return None
        kept = padding.logical_not()  # a float mask keeps its zeros
        length = kept.sum(1, keepdim=True)
        leading = arange(src.shape[1], device=src.device) < length
        dropped = leading.logical_not()
        if backend.is_floating(padding.dtype):
            dropped = where(dropped, -math.inf, 0.0).to(padding.dtype)
        if not self.mask_check:
            return dropped, _some_token_kept(leading)
        # PyTorch's "src and src_key_padding_mask was not left aligned": no nested tensor
        aligned = (leading == kept).all()
        return where(aligned, dropped, padding), _some_token_kept(leading | aligned.logical_not())


def _some_token_kept(keep: Tensor) -> Tensor:
    """``keep``, the (N, S) tokens of the nested tensor, after PyTorch's error where it would
    hold none (a batch with every token padded)."""
    return Tensor._make(capture_hook.call(_check_some_token_kept, keep.array))


def _check_some_token_kept(keep):
    if not keep.any():
        raise RuntimeError(
            "TransformerEncoder: to_padded_tensor: at least one constituent tensor should have "
            "non-zero numel (src_key_padding_mask pads every token of the batch, which PyTorch's "
            "nested tensor cannot hold)"
        )
    return keep


def _why_not_nested(layer: Module, fast_path: bool = False) -> str:
    """Why PyTorch's encoder will not make nested tensors for copies of ``layer`` ('' if it
    will), in PyTorch's words; ``fast_path``: why the layer's own fast path is not taken
    (which allows ``norm_first``)."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    attention = layer.self_attn
    reasons = [
        (layer.norm_first and not fast_path, f"{name}.norm_first was True"),
        (
            not attention.batch_first,
            f"{name}.self_attn.batch_first was not True"
            "(use batch_first for better inference performance)",
        ),
        (not attention._qkv_same_embed_dim, f"{name}.self_attn._qkv_same_embed_dim was not True"),
        (attention.in_proj_bias is None, f"{name}.self_attn was passed bias=False"),
        (not layer.activation_relu_or_gelu, f"{name}.activation_relu_or_gelu was not True"),
        (layer.norm1.eps != layer.norm2.eps, f"{name}.norm1.eps was not equal to {name}.norm2.eps"),
        (attention.num_heads % 2 == 1, f"{name}.self_attn.num_heads is odd"),
    ]
    return next((reason for failed, reason in reasons if failed), "")


def _fast_path_tensors(src: Tensor, layer: TransformerEncoderLayer) -> list[Tensor]:
    """The tensors whose requires_grad PyTorch checks before it takes its fast path."""
    attention = layer.self_attn
    tensors = [src, attention.in_proj_weight, attention.in_proj_bias]
    for module in (attention.out_proj, layer.norm1, layer.norm2, layer.linear1, layer.linear2):
        tensors += [module.weight, module.bias]
    return [t for t in tensors if t is not None]


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer``, then ``norm``."""

    def __init__(
        self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None
    ) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        for layer in self.layers:
            tgt = layer(
                tgt,
                memory,
                tgt_mask,
                memory_mask,
                tgt_key_padding_mask,
                memory_key_padding_mask,
                bool(tgt_is_causal),
                memory_is_causal,
            )
        return tgt if self.norm is None else self.norm(tgt)


class Transformer(Module):
    """The encoder-decoder Transformer of "Attention Is All You Need", as ``torch.nn.Transformer``
    (final LayerNorms on both stacks; Xavier-uniform initialisation of every matrix).

    >>> import scratchgrad as sg
    >>> model = Transformer(8, 2, 1, 1, dim_feedforward=16, batch_first=True)
    >>> mask = Transformer.generate_square_subsequent_mask(4)
    >>> model(sg.randn(2, 6, 8), sg.randn(2, 4, 8), tgt_mask=mask).shape
    scratchgrad.Size([2, 4, 8])
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = F.relu,
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        options = {
            "dim_feedforward": dim_feedforward,
            "dropout": dropout,
            "activation": activation,
            "layer_norm_eps": layer_norm_eps,
            "batch_first": batch_first,
            "norm_first": norm_first,
            "bias": bias,
            "device": device,
            "dtype": dtype,
        }
        norm = {"eps": layer_norm_eps, "bias": bias, "device": device, "dtype": dtype}
        self.encoder = custom_encoder or TransformerEncoder(
            TransformerEncoderLayer(d_model, nhead, **options),
            num_encoder_layers,
            LayerNorm(d_model, **norm),
        )
        self.decoder = custom_decoder or TransformerDecoder(
            TransformerDecoderLayer(d_model, nhead, **options),
            num_decoder_layers,
            LayerNorm(d_model, **norm),
        )
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError("Transformer: the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(
                "Transformer: the feature number of src and tgt must be equal to d_model"
            )
        memory = self.encoder(src, src_mask, src_key_padding_mask, src_is_causal)
        return self.decoder(
            tgt,
            memory,
            tgt_mask,
            memory_mask,
            tgt_key_padding_mask,
            memory_key_padding_mask,
            tgt_is_causal,
            memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """A float (sz, sz) mask: 0 on and below the diagonal, -inf above (future positions).

        >>> Transformer.generate_square_subsequent_mask(2).tolist()
        [[0.0, -inf], [0.0, 0.0]]
        """
        xp = backend.array_module(device)
        mask = xp.where(xp.tri(sz, dtype=bool), 0.0, -math.inf)
        return Tensor._make(mask.astype(backend.default_float if dtype is None else dtype))


def _as_biases(masks: tuple, dtype) -> tuple:
    """The masks, bool ones as float biases of 0 and -inf in ``dtype`` (a float one or None as
    it is)."""
    return tuple(
        F._as_bias(m, dtype) if m is not None and m.dtype == backend.bool_ else m for m in masks
    )
