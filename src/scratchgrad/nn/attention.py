"""``MultiheadAttention``, after ``torch.nn.MultiheadAttention``: the same parameters, masks,
shapes and numbers; and ``torch.nn.attention``'s choice of kernels (``sdpa_kernel``)."""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable
from contextlib import AbstractContextManager

from scratchgrad import backend
from scratchgrad.backends import cuda as _switches
from scratchgrad.nn import functional as F
from scratchgrad.nn import init
from scratchgrad.nn.linear import Linear
from scratchgrad.nn.module import Module, _empty_parameter
from scratchgrad.tensor import Tensor, cat, where


class SDPBackend(enum.IntEnum):
    """The kernels ``scaled_dot_product_attention`` may run on, as PyTorch's (its numbers)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __str__(self) -> str:
        return f"SDPBackend.{self.name}"


def sdpa_kernel(
    backends: SDPBackend | Iterable[SDPBackend], set_priority: bool = False
) -> AbstractContextManager:
    """Let attention use only ``backends`` inside the block, as ``torch.nn.attention.sdpa_kernel``.
    scratchgrad computes attention one way, what PyTorch's math and CPU flash kernels compute,
    so the choice changes no number; a block that allows neither raises as PyTorch's does on
    the CPU.

    >>> import scratchgrad as sg
    >>> q = sg.randn(1, 2, 4, 8)
    >>> with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
    ...     sg.nn.functional.scaled_dot_product_attention(q, q, q).shape
    (1, 2, 4, 8)
    """
    chosen = {backends} if isinstance(backends, SDPBackend) else set(backends)
    return _switches.allowed_sdp_kernels(
        flash=SDPBackend.FLASH_ATTENTION in chosen,
        math=SDPBackend.MATH in chosen,
        mem_efficient=SDPBackend.EFFICIENT_ATTENTION in chosen,
        cudnn=SDPBackend.CUDNN_ATTENTION in chosen,
    )


class MultiheadAttention(Module):
    """Attention of ``num_heads`` heads over ``embed_dim // num_heads`` dims each, with the
    projections in, out and (for ``kdim``/``vdim`` other than ``embed_dim``) per input.

    Masks as PyTorch's: in ``attn_mask`` (L, S) or (N * num_heads, L, S) and in
    ``key_padding_mask`` (N, S), True means "may not attend" (the opposite of
    ``scaled_dot_product_attention``'s bool mask), and a float mask is added to the scores.

    >>> import scratchgrad as sg
    >>> mha = MultiheadAttention(8, 2, batch_first=True)
    >>> x = sg.randn(3, 5, 8)
    >>> out, weights = mha(x, x, x)
    >>> out.shape, weights.shape
    ((3, 5, 8), (3, 5, 5))
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(
                f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads "
                f"({num_heads}), both > 0"
            )
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self.head_dim, self.batch_first = embed_dim // num_heads, batch_first
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = _empty_parameter((3 * embed_dim, embed_dim), device, dtype)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.register_parameter("in_proj_weight", None)
            self.q_proj_weight = _empty_parameter((embed_dim, embed_dim), device, dtype)
            self.k_proj_weight = _empty_parameter((embed_dim, self.kdim), device, dtype)
            self.v_proj_weight = _empty_parameter((embed_dim, self.vdim), device, dtype)
        if bias:
            self.in_proj_bias = _empty_parameter((3 * embed_dim,), device, dtype)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias, device, dtype)
        if add_bias_kv:  # one learned key and value appended to every sequence's
            self.bias_k = _empty_parameter((1, 1, embed_dim), device, dtype)
            self.bias_v = _empty_parameter((1, 1, embed_dim), device, dtype)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """As PyTorch: Xavier-uniform projections in, zero biases; out_proj's weight keeps
        Linear's initialisation; Xavier-normal ``bias_k`` and ``bias_v``."""
        for weight in (self.in_proj_weight, self.q_proj_weight, self.k_proj_weight):
            if weight is not None:
                init.xavier_uniform_(weight)
        if self.v_proj_weight is not None:
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """``(output, weights)``: output as ``query``; weights (N, L, S) averaged over the
        heads (or (N, heads, L, S)), None unless ``need_weights``. ``is_causal`` is only a
        hint that ``attn_mask`` is causal, as in PyTorch; the mask is what counts."""
        if is_causal and attn_mask is None:
            raise RuntimeError(
                "MultiheadAttention: need attn_mask if specifying the is_causal hint"
            )
        for name, mask in (("key_padding_mask", key_padding_mask), ("attn_mask", attn_mask)):
            if mask is not None and mask.dtype != backend.bool_ and not mask.is_floating_point():
                raise AssertionError(  # PyTorch's type: an integer mask is neither kind
                    f"MultiheadAttention: only bool and floating types of {name} are "
                    f"supported, got {mask.dtype}"
                )
        batched = query.ndim == 3
        if not batched:  # one sequence: a batch of one
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        out, weights = self._attend(query, key, value, key_padding_mask, need_weights, attn_mask)
        if weights is not None and average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            return out.squeeze(1), None if weights is None else weights.squeeze(0)
        return (out.transpose(0, 1) if self.batch_first else out), weights

    def _attend(self, query, key, value, key_padding_mask, need_weights, attn_mask):
        """The attention on (L, N, E) inputs: (L, N, E) output and (N, heads, L, S) weights."""
        length, batch, _ = query.shape
        q, k, v = self._project(query, key, value)
        mask = self._merged_mask(attn_mask, key_padding_mask, batch, length, k.shape[0], q.dtype)
        k, v, mask = self._extra_keys(k, v, mask)
        heads = [t.reshape(t.shape[0], batch, self.num_heads, self.head_dim) for t in (q, k, v)]
        q, k, v = (t.permute(1, 2, 0, 3) for t in heads)  # (N, heads, L or S, head_dim)
        dropout = self.dropout if self.training else 0.0
        if need_weights:
            scores = (q * (1 / math.sqrt(self.head_dim))) @ k.mT
            weights = (scores if mask is None else scores + mask).softmax(-1)
            out = F.dropout(weights, dropout) @ v
        else:
            weights = None
            out = F.scaled_dot_product_attention(q, k, v, mask, dropout)
        out = out.permute(2, 0, 1, 3).reshape(length, batch, self.embed_dim)
        return self.out_proj(out), weights

    def _project(self, query, key, value):
        if self._qkv_same_embed_dim:
            w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        else:
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        b_q = b_k = b_v = None
        if self.in_proj_bias is not None:
            b_q, b_k, b_v = self.in_proj_bias.chunk(3)
        return F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)

    def _extra_keys(self, k, v, mask):
        """(S, N, E) keys and values with ``bias_k``/``bias_v`` and then a zero key and value
        appended (for ``add_bias_kv``/``add_zero_attn``), every query free to attend to them:
        the mask gains a zero column for each."""
        extra = []
        if self.bias_k is not None:
            extra.append((self.bias_k, self.bias_v))
        if self.add_zero_attn:
            extra.append((k.new_zeros((1, 1, k.shape[2])),) * 2)
        for bias_k, bias_v in extra:
            k = cat([k, bias_k.expand(1, k.shape[1], -1)])
            v = cat([v, bias_v.expand(1, v.shape[1], -1)])
        if mask is not None and extra:
            mask = F.pad(mask, (0, len(extra)))
        return k, v, mask

    def _merged_mask(self, attn_mask, key_padding_mask, batch, length, source, dtype):
        """Both masks as one float bias of shape (N or 1, heads or 1, L or 1, S), or None."""
        mask = None
        if attn_mask is not None:
            mask = _as_bias(attn_mask, dtype)
            if mask.ndim == 3:
                mask = mask.reshape(batch, self.num_heads, length, source)
            elif mask.shape != (length, source):
                raise RuntimeError(
                    f"MultiheadAttention: attn_mask of shape {attn_mask.shape} should be "
                    f"{(length, source)} or {(batch * self.num_heads, length, source)}"
                )
        if key_padding_mask is not None:
            if key_padding_mask.shape != (batch, source):
                raise RuntimeError(
                    f"MultiheadAttention: key_padding_mask of shape {key_padding_mask.shape} "
                    f"should be {(batch, source)}"
                )
            padding = _as_bias(key_padding_mask, dtype).reshape(batch, 1, 1, source)
            mask = padding if mask is None else mask + padding
        return mask


def _as_bias(mask: Tensor, dtype) -> Tensor:
    """A bool mask (True: masked out) as a float bias of 0 and -inf, by a Tensor op so that a
    jitted step reads each call's mask; a float mask as it is."""
    if mask.dtype == backend.bool_:
        return where(mask, -math.inf, mask.new_zeros((), dtype=dtype))
    return mask.to(dtype)
