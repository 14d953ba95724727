"""``MultiheadAttention``, after ``torch.nn.MultiheadAttention``: the same parameters, masks,
shapes and numbers; and ``torch.nn.attention``'s choice of kernels (``sdpa_kernel``)."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from contextlib import AbstractContextManager

from scratchgrad.autograd.grad_mode import is_grad_enabled
from scratchgrad.backends import cuda as _switches
from scratchgrad.nn import functional as F
from scratchgrad.nn import init
from scratchgrad.nn.linear import NonDynamicallyQuantizableLinear
from scratchgrad.nn.module import Module, _empty_parameter
from scratchgrad.tensor import Tensor


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
    scratchgrad.Size([1, 2, 4, 8])
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
    (scratchgrad.Size([3, 5, 8]), scratchgrad.Size([3, 5, 5]))
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
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                "embed_dim and num_heads must be greater than 0, got "
                f"embed_dim={embed_dim} and num_heads={num_heads} instead"
            )
        if embed_dim % num_heads:  # (PyTorch's is an assert, gone under python -O)
            raise ValueError(
                f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads "
                f"({num_heads})"
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
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias, device, dtype)
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
        heads (or (N, heads, L, S)), None unless ``need_weights``. ``is_causal`` is a hint
        that ``attn_mask`` is causal, as in PyTorch: without ``need_weights`` or a
        ``key_padding_mask`` the attention is then causal and the mask is not read. The work is
        ``F.multi_head_attention_forward``'s, on this module's weights.

        Where PyTorch takes its fast path (``_takes_pytorch_fast_path``), its fused kernel
        gives NaN for a query whose every key is masked (not 0, as without ``need_weights``
        elsewhere) and reads ``attn_mask`` whatever ``is_causal`` says; so does this."""
        fast = self._takes_pytorch_fast_path(query, key, value, key_padding_mask, attn_mask)
        if self.batch_first and query.ndim == 3:  # the functional takes the sequence first
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        out, weights = F.multi_head_attention_forward(
            query,
            key,
            value,
            self.embed_dim,
            self.num_heads,
            self.in_proj_weight,
            self.in_proj_bias,
            self.bias_k,
            self.bias_v,
            self.add_zero_attn,
            self.dropout,
            self.out_proj.weight,
            self.out_proj.bias,
            training=self.training,
            key_padding_mask=key_padding_mask,
            need_weights=need_weights or fast,  # (the weights' softmax: NaN where all masked)
            attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights and need_weights,  # (none to average)
            is_causal=is_causal and not fast,
        )
        if self.batch_first and query.ndim == 3:
            out = out.transpose(0, 1)
        return out, weights if need_weights else None

    def _takes_pytorch_fast_path(self, query, key, value, *masks) -> bool:
        """Whether PyTorch's module runs its fused kernel: in eval mode, on self-attention (one
        3-D tensor as query, key and value) with ``batch_first``, an even head count, the
        packed in-projection with biases (no ``kdim``/``vdim``, ``add_bias_kv`` or
        ``add_zero_attn``) in the query's dtype, no float mask, and no gradient to record."""
        if self.training or not self.batch_first or self.num_heads % 2 or query.ndim != 3:
            return False
        if any(mask is not None and mask.is_floating_point() for mask in masks):
            return False
        if not (query is key is value) or self.bias_k is not None or self.add_zero_attn:
            return False
        if self.in_proj_weight is None or self.in_proj_bias is None:
            return False
        tensors = (query, self.in_proj_weight, self.in_proj_bias, *self.out_proj.parameters())
        if any(t.dtype != query.dtype for t in tensors[1:3]):
            return False
        return not (is_grad_enabled() and any(t.requires_grad for t in tensors))
