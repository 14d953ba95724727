"""The op table: every differentiable primitive (and the composites users call most), listed
once with how to call it, its input domain and the shapes to try. ``test_ops.py`` generates the
forward, gradient, gradcheck and gradgradcheck tests from it.

``call(m, *xs)`` is written once for both libraries: ``m`` is ``scratchgrad`` or ``torch``, and
the tensor API is the same, which is the point of following PyTorch's names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


def real(rng, shape):
    return rng.standard_normal(shape)


def positive(rng, shape):
    return rng.uniform(0.5, 2.0, shape)


def away_from_zero(rng, shape):
    """Nonzero with a margin, for ops with a kink or a pole at 0 (abs, relu, 1/x)."""
    return rng.uniform(0.3, 1.5, shape) * rng.choice([-1.0, 1.0], shape)


def inside_unit(rng, shape):
    """In (-0.9, 0.9): asin, acos, atanh are defined (and smooth) only inside [-1, 1]."""
    return rng.uniform(-0.9, 0.9, shape)


def fmod_dividend(rng, shape):
    """|x| in (2.1, 2.9), for divisors of ``fmod_divisor``: |x / y| in (1.1, 1.95), so the
    quotient truncates to 1 and no finite difference steps over a jump of fmod."""
    return rng.uniform(2.1, 2.9, shape) * rng.choice([-1.0, 1.0], shape)


def fmod_divisor(rng, shape):
    return rng.uniform(1.5, 1.9, shape) * rng.choice([-1.0, 1.0], shape)


def above_one(rng, shape):
    return rng.uniform(1.2, 3.0, shape)


def unit(rng, shape):
    """In [0, 1]: probabilities, such as binary cross-entropy's targets."""
    return rng.uniform(0.0, 1.0, shape)


def probability(rng, shape):
    """In (0.1, 0.9): binary cross-entropy's inputs, its logs finite and smooth around them."""
    return rng.uniform(0.1, 0.9, shape)


def distinct(rng, shape):
    """Values at least 0.1 apart: max/min/sort-like ops have no ties to split."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.1 + rng.uniform(0, 0.01, n) - n * 0.05).reshape(shape)


def spread(rng, shape):
    """Each row along the last dim a shuffled ramp over [-1.5, 1.5] plus noise of +-0.3: rows
    spread well apart, for layer norm's second derivative, whose 1/std**3 terms cancel (rows of
    nearly equal values there leave float32 little but round-off: 0.026 absolute seen)."""
    ramp = np.broadcast_to(np.linspace(-1.5, 1.5, shape[-1]), shape)
    return rng.permuted(ramp, axis=-1) + rng.uniform(-0.3, 0.3, shape)


@dataclass
class Op:
    name: str
    call: Callable
    shapes: str = "unary"  # which shape family; see test_ops.SHAPES
    domain: Callable | tuple = real
    grad: bool = True  # differentiable: gradient and gradcheck tests too
    gradgrad: bool = True
    check_shapes: tuple = field(default_factory=lambda: ((2, 3),))  # for gradcheck
    # ops that take a dim or an index: the same call with the dim ``d`` (or index ``i``) given,
    # for test_dims.py, which tries every dim (index) around the bounds against PyTorch
    dim: Callable | None = None  # (m, *xs, d)
    index: Callable | None = None  # (m, x, i), i indexing dim 0
    integer: bool = False  # the dim/index checks also run on int64 inputs
    vmap: bool = True  # func.vmap batches it (False: a data-dependent shape, as in torch.func)
    # a row that reaches a fused node of ops/fused.py: the name of the row that composes the
    # same function from the primitives (its twin); test_ops checks that they agree
    twin: str | None = None
    # gradients made by cancellation within each matrix (a determinant's): compared per
    # matrix, within rtol of its largest entry (oracle.normwise), not entry by entry
    normwise: bool = False
    # outputs and gradients that are products of matrices (a matrix power or exponential):
    # compared per matrix as ``normwise``, since float32's round-off in a sum of products is
    # that of its largest terms, and a small entry's can exceed its own rtol
    products: bool = False
    # outputs and gradients made by Fourier transforms, each entry a sum over the whole signal:
    # compared within rtol of the largest magnitude of the whole result (oracle.normwise with
    # dims=None), since float32's round-off there is that of the largest entry, not its own
    spectral: bool = False


def binary(name, call, domain=real, **kw):
    return Op(name, call, "binary", domain, check_shapes=((2, 3), (3,)), **kw)


def same_pair(name, call, domain=real, **kw):
    """A row of two operands of one shape (a loss and its target, an op and its gradient)."""
    return Op(name, call, "same_pair", domain, check_shapes=((2, 3), (2, 3)), **kw)


def _standardized(x, dims, eps=1e-5):
    """(x - mean) / sqrt(var + eps) over the last ``dims`` dims, the biased variance."""
    axes = tuple(range(x.ndim - dims, x.ndim))
    centered = x - x.mean(axes, keepdim=True)
    return centered / ((centered * centered).mean(axes, keepdim=True) + eps).sqrt()


def _stft_round_trip(m, x):
    """Frames of 4 with a window of 3 inside them (stft), scaled, and back with another
    window (istft)."""
    sizes = {"n_fft": 4, "hop_length": 1, "win_length": 3}
    window = m.hann_window(3, dtype=x.dtype, device=x.device)
    spectrum = m.stft(x, window=window, return_complex=True, **sizes)
    window = m.hamming_window(3, dtype=x.dtype, device=x.device)
    return m.istft(spectrum * 2, window=window, length=x.shape[-1], **sizes)


def _gelu_derivative(x):
    """cdf(x) + x * pdf(x), the standard normal's CDF and density composed from erf and exp."""
    cdf = 0.5 * (1 + (x * 0.5**0.5).erf())
    return cdf + x * (x * x * -0.5).exp() / (2 * np.pi) ** 0.5


def _nan_padded(m, x):
    """``x`` with a NaN before and after its entries along the last dim."""
    nan = m.full_like(x[..., :1], m.nan)
    return m.cat([nan, x, nan], -1)


OPS = [
    # ---- unary elementwise --------------------------------------------------------------------
    Op("neg", lambda m, x: -x),
    Op("exp", lambda m, x: x.exp()),
    Op("log", lambda m, x: x.log(), domain=positive),
    Op("sin", lambda m, x: x.sin()),
    Op("cos", lambda m, x: x.cos()),
    Op("tanh", lambda m, x: x.tanh()),
    same_pair(  # tanh's backward as a function of the gradient and x: the fused TanhGrad node
        "tanh_backward",
        lambda m, g, x: m.autograd.grad(x.tanh(), x, g, create_graph=True)[0],
        vmap=False,  # torch.func.vmap cannot batch autograd.grad
        twin="tanh_backward_composed",
    ),
    same_pair(
        "tanh_backward_composed",
        lambda m, g, x: g * (1 - x.tanh() * x.tanh()),
    ),
    Op("sigmoid", lambda m, x: x.sigmoid()),
    Op("relu", lambda m, x: x.relu(), domain=away_from_zero),
    Op("sqrt", lambda m, x: x.sqrt(), domain=positive),
    Op("abs", lambda m, x: x.abs(), domain=away_from_zero),
    Op("sign", lambda m, x: x.sign(), domain=away_from_zero, gradgrad=False),
    Op("square", lambda m, x: x.square()),
    Op("rsqrt", lambda m, x: x.rsqrt(), domain=positive),
    Op("log1p", lambda m, x: x.log1p(), domain=positive),
    Op("pow_scalar", lambda m, x: x**3),
    Op("pow_half", lambda m, x: x**0.5, domain=positive),
    Op("pow_negative", lambda m, x: x**-2, domain=away_from_zero),
    Op("pow_zero", lambda m, x: x**0),
    Op("rpow", lambda m, x: 2.0**x),
    Op("scalar_sub", lambda m, x: 1.5 - x),
    Op("scalar_div", lambda m, x: 3.0 / x, domain=away_from_zero),
    Op("clamp", lambda m, x: x.clamp(-0.5, 0.7), domain=away_from_zero),
    Op("clamp_min", lambda m, x: m.clamp_min(x, 0.1), domain=away_from_zero),
    Op("masked_fill", lambda m, x: x.masked_fill(x > 0.2, 3.0), domain=away_from_zero),
    Op("clamp_max", lambda m, x: m.clamp_max(x, -0.1), domain=away_from_zero),
    # vmap=False below: scratchgrad's vmap does not batch writes in place, where torch.func's does
    Op("clamp_inplace", lambda m, x: (x * 1).clamp_(-0.5, 0.7), domain=away_from_zero, vmap=False),
    Op(
        "masked_fill_inplace",
        lambda m, x: (x * 1).masked_fill_(x > 0.2, 3.0),
        domain=away_from_zero,
        vmap=False,
    ),
    Op("tanh_inplace", lambda m, x: (x * 2).tanh_(), vmap=False),
    # log's NaNs (negative x) to 0, its -inf to -5: the gradient passes where it was finite
    Op(
        "nan_to_num",
        lambda m, x: m.nan_to_num(m.log(x), neginf=-5.0),
        domain=away_from_zero,
    ),
    Op("remainder", lambda m, x: m.remainder(x, 0.7), domain=away_from_zero),
    # ---- binary elementwise, broadcasting -------------------------------------------------------
    binary("add", lambda m, x, y: x + y),
    binary("sub", lambda m, x, y: x - y),
    binary("mul", lambda m, x, y: x * y),
    binary("div", lambda m, x, y: x / y, domain=(real, away_from_zero)),
    binary("pow", lambda m, x, y: x**y, domain=(positive, real)),
    binary("maximum", lambda m, x, y: m.maximum(x, y)),
    binary("minimum", lambda m, x, y: m.minimum(x, y)),
    binary("where", lambda m, x, y: m.where(x > y, x, y * 2)),
    binary("add_method_alpha", lambda m, x, y: x.add(y, alpha=2.0)),
    # ---- reductions ---------------------------------------------------------------------------
    Op("sum", lambda m, x: x.sum()),
    Op(
        "sum_dim",
        lambda m, x: x.sum(-1),
        shapes="rank1+",
        dim=lambda m, x, d: x.sum(d),
        integer=True,
    ),
    Op(
        "sum_dims_keepdim",
        lambda m, x: x.sum((0, -1), keepdim=True),
        shapes="rank2+",
        dim=lambda m, x, d: x.sum((0, d), keepdim=True),
        integer=True,
    ),
    Op("mean", lambda m, x: x.mean(), shapes="nonempty"),
    Op("mean_dim", lambda m, x: x.mean(0), shapes="nonempty1+", dim=lambda m, x, d: x.mean(d)),
    Op("var", lambda m, x: x.var(), shapes="two+"),
    Op(
        "var_dim_biased",
        lambda m, x: x.var(-1, unbiased=False),
        shapes="nonempty1+",
        dim=lambda m, x, d: x.var(d, unbiased=False),
    ),
    Op(
        "std_dim",
        lambda m, x: x.std(0, keepdim=True),
        shapes="two_rows",
        # values apart: the gradient divides by the std, which two near values make tiny
        # (float32 then left 2e-4 relative, hypothesis found)
        domain=distinct,
        dim=lambda m, x, d: x.std(d, keepdim=True),
    ),
    Op("amax", lambda m, x: x.amax(), shapes="nonempty", domain=distinct),
    Op(
        "amax_dims",
        lambda m, x: x.amax((0, -1)),
        shapes="nonempty2+",
        domain=distinct,
        dim=lambda m, x, d: x.amax((0, d)),
        integer=True,
    ),
    Op(
        "amin_dim",
        lambda m, x: x.amin(-1, keepdim=True),
        shapes="nonempty1+",
        domain=distinct,
        dim=lambda m, x, d: x.amin(d, keepdim=True),
        integer=True,
    ),
    Op("max_all", lambda m, x: x.max(), shapes="nonempty", domain=distinct),
    Op(
        "max_dim_values",
        lambda m, x: x.max(-1)[0],
        shapes="nonempty1+",
        domain=distinct,
        dim=lambda m, x, d: x.max(d),
        integer=True,
    ),
    Op(
        "min_dim_values",
        lambda m, x: x.min(0, keepdim=True)[0],
        shapes="nonempty1+",
        domain=distinct,
        dim=lambda m, x, d: x.min(d, keepdim=True),
        integer=True,
    ),
    Op("prod", lambda m, x: x.prod(), shapes="small"),
    Op("prod_dim", lambda m, x: x.prod(-1), shapes="nonempty1+", dim=lambda m, x, d: x.prod(d)),
    Op(
        "logsumexp",
        lambda m, x: x.logsumexp(-1),
        shapes="nonempty1+",
        dim=lambda m, x, d: x.logsumexp(d),
    ),
    Op("norm", lambda m, x: x.norm(), shapes="nonempty", domain=away_from_zero),
    Op(
        "norm_dim",
        lambda m, x: x.norm(dim=-1),
        shapes="nonempty1+",
        domain=away_from_zero,
        dim=lambda m, x, d: x.norm(dim=d),
    ),
    Op(
        "topk",
        lambda m, x: x.topk(min(2, x.shape[-1]))[0],
        shapes="rank1+",
        domain=distinct,
        dim=lambda m, x, d: x.topk(1, d),
        integer=True,
    ),
    Op(
        "topk_smallest_dim0",
        lambda m, x: m.topk(x, 1, dim=0, largest=False).values,
        shapes="nonempty1+",
        domain=distinct,
    ),
    Op("softmax", lambda m, x: x.softmax(-1), shapes="rank1+", dim=lambda m, x, d: x.softmax(d)),
    Op(  # softmax's backward as a function of the gradient and x: the SoftmaxGrad node
        "softmax_backward",
        lambda m, g, x: m.autograd.grad(x.softmax(-1), x, g, create_graph=True)[0],
        shapes="same_pair_rank1+",
        check_shapes=((2, 3), (2, 3)),
        vmap=False,  # torch.func.vmap cannot batch autograd.grad
    ),
    Op(
        "log_softmax",
        lambda m, x: x.log_softmax(-1),
        shapes="rank1+",
        dim=lambda m, x, d: m.nn.functional.log_softmax(x, d),
    ),
    Op("log_softmax_dim0", lambda m, x: x.log_softmax(0), shapes="rank1+"),
    # ---- movement -----------------------------------------------------------------------------
    Op("reshape", lambda m, x: x.reshape(-1)),
    Op("view_split_dims", lambda m, x: x.reshape(*x.shape[:-1], 1, x.shape[-1]), shapes="rank1+"),
    Op("permute", lambda m, x: x.permute(*reversed(range(x.ndim))), shapes="rank1+"),
    Op(
        "transpose",
        lambda m, x: x.transpose(0, -1),
        shapes="rank1+",
        dim=lambda m, x, d: x.transpose(d, -1),
        integer=True,
    ),
    Op("T_2d", lambda m, x: x.T, shapes="matrix"),
    Op("mT", lambda m, x: x.mT, shapes="rank2+"),
    Op("unsqueeze", lambda m, x: x.unsqueeze(0), dim=lambda m, x, d: x.unsqueeze(d), integer=True),
    Op("squeeze", lambda m, x: x.squeeze(), dim=lambda m, x, d: x.squeeze(d), integer=True),
    Op(
        "flatten",
        lambda m, x: x.flatten(1),
        shapes="rank2+",
        dim=lambda m, x, d: x.flatten(d),
        integer=True,
    ),
    Op("expand", lambda m, x: x.expand(2, *x.shape)),
    Op("repeat", lambda m, x: x.repeat(2, *([1] * x.ndim))),
    Op("repeat_tile", lambda m, x: x.repeat(*([2] * x.ndim)), shapes="rank1+"),
    Op(
        "flip", lambda m, x: x.flip(0), shapes="rank1+", dim=lambda m, x, d: x.flip(d), integer=True
    ),
    Op(
        "getitem_int",
        lambda m, x: x[0],
        shapes="nonempty1+",
        index=lambda m, x, i: x[i],
        integer=True,
    ),
    Op("getitem_slice", lambda m, x: x[1:, ..., ::2], shapes="rank2+"),
    Op("getitem_none_ellipsis", lambda m, x: x[None, ..., 0], shapes="nonempty1+"),
    Op(
        "getitem_int_array",
        lambda m, x: x[[0, 0, -1]],
        shapes="nonempty1+",
        index=lambda m, x, i: x[m.tensor([0, i])],
        integer=True,
    ),
    # PyTorch picks with the int first: the index's dims stay in place, not in front (NumPy's)
    Op("getitem_int_apart", lambda m, x: x[0, ..., m.tensor([0, 0, -1])], shapes="nonempty2+"),
    Op("getitem_mask", lambda m, x: x[x > 0], vmap=False),
    Op("getitem_tensor_index", lambda m, x: x[m.tensor([1, 0, 1])], shapes="two_rows"),
    Op(
        "narrow",
        lambda m, x: x.narrow(-1, 0, 1),
        shapes="nonempty1+",
        dim=lambda m, x, d: x.narrow(d, -1, 1),
        index=lambda m, x, i: x.narrow(0, i, 1),
        integer=True,
    ),
    Op(
        "select",
        lambda m, x: x.select(-1, 0),
        shapes="nonempty1+",
        dim=lambda m, x, d: x.select(d, -1),
        index=lambda m, x, i: x.select(0, i),
        integer=True,
    ),
    Op(
        "unbind_last",
        lambda m, x: x.unbind(-1)[-1],
        shapes="nonempty1+",
        dim=lambda m, x, d: m.stack(x.unbind(d)),
        integer=True,
    ),
    Op(
        "movedim",
        lambda m, x: x.movedim(0, -1),
        shapes="rank1+",
        dim=lambda m, x, d: x.movedim(d, 0),
        integer=True,
    ),
    Op(
        "unflatten",
        lambda m, x: x.unflatten(-1, (1, x.shape[-1])),
        shapes="rank1+",
        dim=lambda m, x, d: x.unflatten(d, (1, -1)),
        integer=True,
    ),
    Op(
        "diagonal",
        lambda m, x: x.diagonal(1, 0, -1),
        shapes="rank2+",
        dim=lambda m, x, d: x.diagonal(0, 0, d),
        integer=True,
    ),
    Op(
        "argmax_dim",
        lambda m, x: x.argmax(-1),
        shapes="nonempty1+",
        domain=distinct,
        grad=False,
        dim=lambda m, x, d: x.argmax(d, keepdim=True),
        integer=True,
    ),
    Op(
        "argmin_dim",
        lambda m, x: x.argmin(0),
        shapes="nonempty1+",
        domain=distinct,
        grad=False,
        dim=lambda m, x, d: x.argmin(d),
        integer=True,
    ),
    Op(
        "split_first",
        lambda m, x: x.split(1, -1)[-1],
        shapes="nonempty1+",
        dim=lambda m, x, d: x.split(1, d)[-1],
        integer=True,
    ),
    Op(
        "chunk_first",
        lambda m, x: x.chunk(2, 0)[0],
        shapes="nonempty1+",
        dim=lambda m, x, d: x.chunk(2, d)[0],
        integer=True,
    ),
    Op(
        "gather",
        lambda m, x: x.gather(-1, m.zeros(*x.shape[:-1], 2, dtype=m.int64)),
        shapes="nonempty1+",
        dim=lambda m, x, d: x.gather(d, m.zeros(*x.shape[:-1], 1, dtype=m.int64)),
        index=lambda m, x, i: x.gather(0, m.full((1, *x.shape[1:]), i, dtype=m.int64)),
        integer=True,
    ),
    Op("trace", lambda m, x: m.trace(x), shapes="matrix"),
    Op("diag_of_a_vector", lambda m, x: m.diag(x.reshape(-1), 1)),
    Op("diag_of_a_matrix", lambda m, x: x.diag(-1), shapes="matrix"),
    Op(
        "repeat_interleave",
        lambda m, x: x.repeat_interleave(2, dim=-1),
        shapes="rank1+",
        dim=lambda m, x, d: x.repeat_interleave(2, dim=d),
    ),
    Op("repeat_interleave_flat", lambda m, x: m.repeat_interleave(x, 3)),
    Op(  # counts of a tensor: eagerly only (a jitted step refuses a shape made by the values)
        "repeat_interleave_counts",
        lambda m, x: x.repeat_interleave(m.tensor(([2, 0, 1] * x.shape[0])[: x.shape[0]]), dim=0),
        shapes="nonempty1+",
        vmap=False,
    ),
    Op(
        "scatter",
        lambda m, x: x.scatter(0, m.zeros(1, *x.shape[1:], dtype=m.int64), x[-1:] * 2),
        shapes="nonempty1+",
        index=lambda m, x, i: x.scatter(0, m.full((1, *x.shape[1:]), i, dtype=m.int64), 0.5),
        integer=True,
    ),
    Op(  # the index repeats row 0: both sources add up there
        "scatter_add",
        lambda m, x: x.scatter_add(
            0, m.zeros(2, *x.shape[1:], dtype=m.int64), m.cat([x[:1], 2 * x[:1]])
        ),
        shapes="nonempty1+",
        index=lambda m, x, i: x.scatter_add(0, m.full((1, *x.shape[1:]), i, dtype=m.int64), x[:1]),
        integer=True,
    ),
    *(
        Op(  # rows 0 and 1 reduced into row 0 (with or without it), row 1 into the last row
            f"scatter_reduce_{reduce}" + ("" if include_self else "_without_self"),
            lambda m, x, reduce=reduce, include_self=include_self: x.scatter_reduce(
                0,
                m.tensor([0, 0, x.shape[0] - 1])
                .reshape(3, *(1,) * (x.ndim - 1))
                .expand(3, *x.shape[1:]),
                m.cat([x[:1] * 2, x[-1:], x[-1:] - 1]),
                reduce,
                include_self=include_self,
            ),
            shapes="nonempty1+",
            domain=distinct,
            # torch.func.vmap(grad) fails on prod's backward (it reads values):
            # tests/func/test_vmap_scatter_reduce.py checks prod against a loop
            vmap=reduce != "prod",
        )
        for reduce in ("sum", "prod", "mean", "amax", "amin")
        for include_self in (True, False)
    ),
    Op(
        "take_along_dim",
        lambda m, x: m.take_along_dim(x, x.argsort(-1).flip(-1)[..., :2], -1),
        shapes="nonempty1+",
        domain=distinct,
        dim=lambda m, x, d: x.take_along_dim(m.zeros_like(x, dtype=m.int64), d),
    ),
    Op(
        "take_along_dim_flat",
        lambda m, x: x.take_along_dim(m.tensor([0, 0, -1]) % x.numel()),
        shapes="nonempty",
    ),
    Op(  # a repeated index: the value's gradient counts the position once
        "index_fill",
        lambda m, x, v: m.index_fill(x, -1, m.tensor([0, x.shape[-1] - 1, 0]), v.sum()),
        shapes="index_add_last",
        check_shapes=((2, 3), (2, 3)),
        dim=lambda m, x, d: x.index_fill(d, m.tensor([0]), 1.5),
        index=lambda m, x, i: x.index_fill(0, m.tensor([i]), 1.5),
        integer=True,
        # torch.func.vmap fills every member with the last member's batched value:
        # tests/func/test_vmap_scatter_reduce.py checks index_fill against a loop
        vmap=False,
    ),
    Op(  # distinct positions: a repeated one gets PyTorch's gradient, which is no derivative
        "index_copy",
        lambda m, x: m.index_copy(x * 1, -1, m.tensor([x.shape[-1] - 1, 0]), x[..., :2] ** 2),
        shapes="wide_last1+",
        vmap=False,  # it writes into a clone, which vmap refuses on a batch (func.md, Limits)
    ),
    Op("tril", lambda m, x: x.tril(), shapes="rank2+"),
    Op("tril_offset", lambda m, x: m.tril(x, -1), shapes="rank2+"),
    Op("triu", lambda m, x: x.triu(), shapes="rank2+"),
    Op("triu_offset", lambda m, x: m.triu(x, diagonal=2), shapes="rank2+"),
    Op("pad", lambda m, x: _pad(m, x), shapes="rank1+"),
    Op("pad_reflect", lambda m, x: m.nn.functional.pad(x, (2, 1), "reflect"), shapes="signal"),
    Op(
        "pad_replicate",
        lambda m, x: m.nn.functional.pad(x, (3, 0), mode="replicate"),
        shapes="signal",
    ),
    Op("pad_circular", lambda m, x: m.nn.functional.pad(x, (1, 3), "circular"), shapes="signal"),
    Op(
        "cat",
        lambda m, x, y: m.cat([x, x * y], dim=0),
        shapes="same_pair_rank1+",
        check_shapes=((2, 3), (2, 3)),
        dim=lambda m, x, y, d: m.cat([x, y], dim=d),
        integer=True,
    ),
    same_pair(
        "stack",
        lambda m, x, y: m.stack([x * y, y], dim=-1),
        dim=lambda m, x, y, d: m.stack([x, y], dim=d),
        integer=True,
    ),
    # ---- matmul -------------------------------------------------------------------------------
    Op("matmul", lambda m, x, y: x @ y, shapes="matmul", check_shapes=((2, 3), (3, 4))),
    Op(
        "matmul_batched",
        lambda m, x, y: x @ y,
        shapes="matmul_batched",
        check_shapes=((2, 1, 3), (3, 2)),
    ),
    Op("matmul_vec", lambda m, x, y: x @ y, shapes="matvec", check_shapes=((2, 3), (3,))),
    Op("matmul_vecmat", lambda m, x, y: y @ x, shapes="vecmat", check_shapes=((3, 2), (3,))),
    Op(
        "linear",
        lambda m, x, w: m.nn.functional.linear(x, w),
        shapes="linear",
        check_shapes=((4, 3), (2, 3)),
        twin="linear_composed",
    ),
    Op(
        "linear_composed",
        lambda m, x, w: x @ w.mT,
        shapes="linear",
        check_shapes=((4, 3), (2, 3)),
    ),
    Op(
        "linear_batched",
        lambda m, x, w: m.nn.functional.linear(x, w, w[:, 0]),
        shapes="linear_batched",
        check_shapes=((2, 4, 3), (2, 3)),
        twin="linear_bias_composed",
    ),
    Op(
        "linear_bias_composed",
        lambda m, x, w: x @ w.mT + w[:, 0],
        shapes="linear_batched",
        check_shapes=((2, 4, 3), (2, 3)),
    ),
    Op(
        "linear_vector",
        lambda m, x, w: m.nn.functional.linear(x, w, w[:, 0]),
        shapes="linear_vector",
        check_shapes=((3,), (2, 3)),
        twin="linear_bias_composed",
    ),
    Op("dot", lambda m, x, y: x @ y, shapes="dot", check_shapes=((3,), (3,))),
    # ---- fused losses and their composed twins ------------------------------------------------
    same_pair(
        "mse_loss",
        lambda m, x, y: m.nn.functional.mse_loss(x, y),
        twin="mse_loss_composed",
    ),
    same_pair(
        "mse_loss_composed",
        lambda m, x, y: m.nn.functional.mse_loss(x, y, reduction="none").mean(),
    ),
    same_pair(
        "mse_loss_sum",
        lambda m, x, y: m.nn.functional.mse_loss(x, y, reduction="sum"),
        twin="mse_loss_sum_composed",
    ),
    same_pair(
        "mse_loss_sum_composed",
        lambda m, x, y: m.nn.functional.mse_loss(x, y, reduction="none").sum(),
    ),
    Op(
        "cross_entropy",
        lambda m, x: m.nn.functional.cross_entropy(x, _labels(m, x)),
        shapes="nonempty_matrix",
        twin="cross_entropy_composed",
    ),
    Op(
        "cross_entropy_composed",
        lambda m, x: m.nn.functional.nll_loss(x.log_softmax(1), _labels(m, x)),
        shapes="nonempty_matrix",
    ),
    Op(
        "cross_entropy_sum",
        lambda m, x: m.nn.functional.cross_entropy(x, _labels(m, x), reduction="sum"),
        shapes="nonempty_matrix",
        twin="cross_entropy_sum_composed",
    ),
    Op(
        "cross_entropy_sum_composed",
        lambda m, x: m.nn.functional.nll_loss(x.log_softmax(1), _labels(m, x), reduction="sum"),
        shapes="nonempty_matrix",
    ),
    # ---- dtype --------------------------------------------------------------------------------
    Op("to_float64_and_back", lambda m, x: x.double().exp().to(x.dtype)),
    Op("clone", lambda m, x: x.clone() * 2),
    # ---- ops PyTorch programs use (issue 12) ----------------------------------------------------
    Op("expm1", lambda m, x: m.expm1(x)),
    Op("log1p_function", lambda m, x: m.log1p(x), domain=positive),
    Op("log2", lambda m, x: m.log2(x), domain=positive),
    Op("log10", lambda m, x: x.log10(), domain=positive),
    Op("exp2", lambda m, x: m.exp2(x)),
    Op("tan", lambda m, x: m.tan(x), domain=inside_unit),
    Op("asin", lambda m, x: m.asin(x), domain=inside_unit),
    Op("acos", lambda m, x: x.acos(), domain=inside_unit),
    Op("atan", lambda m, x: m.atan(x)),
    Op("sinh", lambda m, x: m.sinh(x)),
    Op("cosh", lambda m, x: x.cosh()),
    Op("asinh", lambda m, x: m.asinh(x)),
    Op("acosh", lambda m, x: m.acosh(x), domain=above_one),
    Op("atanh", lambda m, x: x.atanh(), domain=inside_unit),
    Op("reciprocal", lambda m, x: m.reciprocal(x), domain=away_from_zero),
    Op("erf", lambda m, x: m.erf(x)),
    Op("erfc", lambda m, x: x.erfc()),
    Op("erfinv", lambda m, x: m.erfinv(x), domain=inside_unit),
    Op("trunc", lambda m, x: m.trunc(x), domain=away_from_zero, gradgrad=False),
    Op("frac", lambda m, x: m.frac(x), domain=away_from_zero),
    binary("atan2", lambda m, x, y: m.atan2(x, y), domain=(away_from_zero, away_from_zero)),
    binary("fmod", lambda m, x, y: m.fmod(x, y), domain=(fmod_dividend, fmod_divisor)),
    Op("sort", lambda m, x: m.sort(x)[0], shapes="rank1+", domain=distinct),
    Op(
        "sort_descending_dim0",
        lambda m, x: x.sort(0, descending=True).values,
        shapes="rank1+",
        domain=distinct,
        dim=lambda m, x, d: x.sort(d, descending=True).values,
    ),
    Op(
        "argsort",
        lambda m, x: m.argsort(x, -1),
        shapes="rank1+",
        domain=distinct,
        grad=False,
    ),
    Op("cumsum", lambda m, x: m.cumsum(x, 0), shapes="rank1+", dim=lambda m, x, d: x.cumsum(d)),
    Op("cumsum_dtype", lambda m, x: x.cumsum(-1, dtype=m.float64), shapes="rank1+"),
    Op("cumprod", lambda m, x: m.cumprod(x, -1), shapes="rank1+"),
    Op("roll", lambda m, x: m.roll(x, 1, 0), shapes="rank1+", dim=lambda m, x, d: x.roll(1, d)),
    Op("roll_dims", lambda m, x: x.roll((1, -2), (0, -1)), shapes="rank2+"),
    Op("roll_flat", lambda m, x: x.roll(2), shapes="rank1+"),
    Op(
        "index_select",
        lambda m, x: m.index_select(x, 0, m.tensor([x.shape[0] - 1, 0, 0])),
        shapes="nonempty1+",
    ),
    Op(  # a repeated index: its two sources add up
        "index_add",
        lambda m, x, y: m.index_add(x, 0, m.tensor([x.shape[0] - 1, 0, 0]), y, alpha=1.5),
        shapes="index_add",
        check_shapes=((2, 3), (3, 3)),
        dim=lambda m, x, d: _index_add_all(m, x, d),
        index=lambda m, x, i: x.index_add(0, m.tensor([i]), x[:1]),
        integer=True,
    ),
    Op(
        "index_add_inplace_last_dim",
        lambda m, x, y: (x * 1).index_add_(-1, m.tensor([0, x.shape[-1] - 1, 0]), y, alpha=-0.5),
        shapes="index_add_last",
        check_shapes=((2, 3), (2, 3)),
        vmap=False,  # torch.func.vmap cannot write a batch into an unbatched tensor
    ),
    Op("mm", lambda m, x, y: m.mm(x, y), shapes="matmul", check_shapes=((2, 3), (3, 4))),
    Op(  # a sparse COO matrix (the nonzeros of x, a gather) times a dense one
        "sparse_mm",
        lambda m, x, y: m.sparse.mm(x.to_sparse(), y),
        shapes="matmul",
        check_shapes=((2, 3), (3, 4)),
        vmap=False,  # torch.func.vmap has no batching rule for sparse tensors
    ),
    Op(
        "bmm",
        lambda m, x, y: m.bmm(m.stack([x, 2 * x]), m.stack([y, y])),
        shapes="matmul",
        check_shapes=((2, 3), (3, 4)),
    ),
    Op(
        "addmm",
        lambda m, x, y: m.addmm(y.sum(0), x, y, beta=0.5, alpha=2.0),
        shapes="matmul",
        check_shapes=((2, 3), (3, 4)),
    ),
    Op(
        "baddbmm",
        lambda m, x, y: (x @ y).baddbmm(m.stack([x, x]), m.stack([y, -y]), alpha=0.5),
        shapes="matmul",
        check_shapes=((2, 3), (3, 4)),
    ),
    Op(
        "einsum_matmul",
        lambda m, x, y: m.einsum("ij,jk->ik", x, y),
        shapes="matmul",
        check_shapes=((2, 3), (3, 4)),
    ),
    Op(
        "einsum_implicit_list",
        lambda m, x, y: m.einsum("ij,jk", [x, y]),
        shapes="matmul",
        check_shapes=((2, 3), (3, 4)),
    ),
    Op(
        "einsum_outer_trace",
        lambda m, x, y: m.einsum("i,j->j", x, y),
        shapes="dot",
        check_shapes=((3,), (3,)),
    ),
    Op("einsum_ellipsis", lambda m, x: m.einsum("...i->...", x), shapes="rank1+"),
    # a letter repeated within an operand: its diagonal (square matrices made from two vectors)
    Op(
        "einsum_diagonal",
        lambda m, x, y: m.einsum("ii->i", m.outer(x, y).sin()),
        shapes="dot",
        check_shapes=((3,), (3,)),
    ),
    Op(
        "einsum_diagonal_and_product",
        lambda m, x, y: m.einsum("ij,jj->i", m.outer(x, y), m.outer(y, x.exp())),
        shapes="dot",
        check_shapes=((3,), (3,)),
    ),
    Op(
        "einsum_batched",
        lambda m, x, y: m.einsum("bij,bjk->bik", m.stack([x, x]), m.stack([y, 3 * y])),
        shapes="matmul",
        check_shapes=((2, 3), (3, 4)),
    ),
    same_pair(
        "smooth_l1_loss",
        lambda m, x, y: m.nn.functional.smooth_l1_loss(x, y, beta=0.5),
    ),
    same_pair(
        "smooth_l1_loss_none",
        lambda m, x, y: m.nn.functional.smooth_l1_loss(x, y, reduction="none"),
    ),
    binary("lerp", lambda m, x, y: m.lerp(x, y, 0.3)),
    binary("lerp_large_weight", lambda m, x, y: x.lerp(y, 0.8)),  # the second formula
    binary("lerp_negative_weight", lambda m, x, y: m.lerp(x, y, -0.7)),  # |-0.7| >= 0.5: second
    binary(  # a tensor weight on both sides of 0.5 (and below -0.5), differentiated too
        "lerp_tensor_weight", lambda m, x, y: m.lerp(x, y, (x * y * 2).tanh())
    ),
    same_pair(
        "lerp_inplace",
        lambda m, x, y: (x * 1).lerp_(y, y.sigmoid()),
        vmap=False,  # torch.func.vmap cannot write a batch into an unbatched tensor
    ),
    binary("hypot", lambda m, x, y: m.hypot(x, y), domain=(away_from_zero, away_from_zero)),
    same_pair(
        "addcmul_addcdiv",
        lambda m, x, y: x.addcmul(x, y, value=0.5).addcdiv(y, x * x + 1, value=-2.0),
    ),
    Op("dot_function", lambda m, x, y: m.dot(x, y), shapes="dot", check_shapes=((3,), (3,))),
    Op("mv", lambda m, x, y: m.mv(x, y), shapes="matvec", check_shapes=((2, 3), (3,))),
    Op("outer", lambda m, x, y: m.outer(x, y), shapes="dot", check_shapes=((3,), (3,))),
    Op("swapaxes", lambda m, x: m.swapaxes(x, 0, -1), shapes="rank1+"),
    Op("tile", lambda m, x: m.tile(x, (2, 1)), shapes="rank1+"),
    Op("fliplr", lambda m, x: m.fliplr(x), shapes="rank2+"),
    Op("masked_select", lambda m, x: m.masked_select(x, x > 0), vmap=False),
    Op(  # the tensor grows to the mask's shape, as the mask to the tensor's
        "masked_select_broadcast",
        lambda m, x: m.masked_select(x, m.stack([x > 0, x < 0.5])),
        vmap=False,
    ),
    Op("broadcast_to", lambda m, x: m.broadcast_to(x, (2, *x.shape))),
    Op("sum_dtype", lambda m, x: x.sum(0, dtype=m.float64), shapes="rank1+"),
    Op("mean_dtype", lambda m, x: m.mean(x, dtype=m.float64), shapes="nonempty"),
    Op("prod_dtype", lambda m, x: x.prod(dtype=m.float64), shapes="small"),
    Op("softmax_dtype", lambda m, x: x.softmax(-1, dtype=m.float64), shapes="rank1+"),
    Op("log_softmax_dtype", lambda m, x: m.log_softmax(x, 0, dtype=m.float64), shapes="rank1+"),
    # ---- composites of the primitives (tests/test_composites.py has their errors) --------------
    same_pair("hstack", lambda m, x, y: m.hstack([x, x * y])),
    same_pair("vstack", lambda m, x, y: m.vstack((x * y, y))),
    same_pair("dstack", lambda m, x, y: m.dstack([x, y, x])),
    # vmap=False: torch.func.vmap has no batching rule for column_stack (ours goes through cat)
    same_pair("column_stack", lambda m, x, y: m.column_stack([x, x * y]), vmap=False),
    same_pair("atleast_3d", lambda m, x, y: m.stack(m.atleast_3d(x, x * y))),
    same_pair("rsub", lambda m, x, y: m.rsub(x, y, alpha=0.5)),
    binary(  # two vectors of unrelated lengths, swapped by "xy"
        "meshgrid_xy",
        lambda m, x, y: m.stack(m.meshgrid(x.reshape(-1), y.reshape(-1), indexing="xy")),
    ),
    Op(
        "meshgrid_ij",
        lambda m, x: m.stack(m.meshgrid(x.reshape(-1), x[..., :1].reshape(-1), indexing="ij")),
        shapes="rank1+",
    ),
    binary("broadcast_tensors", lambda m, x, y: m.stack(m.broadcast_tensors(x * 2, y))),
    Op(
        "unflatten_inferred",
        lambda m, x: m.unflatten(x, 0, (-1, 1)),
        shapes="rank1+",
        dim=lambda m, x, d: m.unflatten(x, d, (1, -1, 1)),
        integer=True,
    ),
    Op(
        "diff",
        lambda m, x: x.diff(),
        shapes="rank1+",
        dim=lambda m, x, d: m.diff(x, dim=d),
        integer=True,
    ),
    Op(  # past the dim's length the dim stays empty
        "diff_prepend_append",
        lambda m, x, y: m.diff(x, n=3, dim=0, prepend=y, append=x * y),
        shapes="same_pair_rank1+",
        check_shapes=((2, 3), (2, 3)),
    ),
    Op(
        "var_mean",
        lambda m, x: m.stack(m.var_mean(x, 0, keepdim=True)),
        shapes="two_rows",
        dim=lambda m, x, d: m.var_mean(x, d),
    ),
    Op(
        "std_mean",
        lambda m, x: m.stack(m.std_mean(x, 0, correction=0)),
        shapes="two_rows",  # two entries at least: the gradient of a std of 0 is NaN
        domain=distinct,  # the std's gradient divides by it
        dim=lambda m, x, d: m.std_mean(x, (0, d), unbiased=False),
    ),
    binary("logaddexp", lambda m, x, y: m.logaddexp(x, y * 3)),
    binary("true_divide", lambda m, x, y: m.true_divide(x, y), domain=(real, away_from_zero)),
    Op(
        "tensor_split",
        lambda m, x: x.tensor_split(2, -1)[0] * 2 + x.tensor_split([1, -1], -1)[1].sum(),
        shapes="rank1+",
        dim=lambda m, x, d: m.tensor_split(x, 2, d),
        integer=True,
    ),
    Op(
        "cross",
        lambda m, x: m.cross(x, x.flip(-1) + 1, dim=-1),
        shapes="cross",
        check_shapes=((2, 3),),
        dim=lambda m, x, d: m.cross(x, x * 2 + 1, dim=d),
        integer=True,
    ),
    # ---- selections and products of b028b9c (tests/test_torch_more.py has their errors) --------
    Op("median_all", lambda m, x: x.median(), shapes="nonempty", domain=distinct),
    Op(
        "median_dim",
        lambda m, x: m.median(x, 0).values,
        shapes="nonempty1+",
        domain=distinct,
        dim=lambda m, x, d: m.median(x, d, keepdim=True).values,
    ),
    Op(
        "kthvalue",
        lambda m, x: m.kthvalue(x, 1, 0).values,
        shapes="nonempty1+",
        domain=distinct,
        dim=lambda m, x, d: x.kthvalue(1, d).values,
    ),
    Op(
        "cummax",
        lambda m, x: m.cummax(x, 0).values,
        shapes="rank1+",
        domain=distinct,
        dim=lambda m, x, d: x.cummax(d).values,
    ),
    Op(
        "cummin",
        lambda m, x: m.cummin(x, -1).values,
        shapes="rank1+",
        domain=distinct,
        dim=lambda m, x, d: x.cummin(d).values,
    ),
    Op(
        "diag_embed",
        lambda m, x: m.diag_embed(x, 1),
        shapes="rank1+",
        dim=lambda m, x, d: m.diag_embed(x, 0, d, -1 if d not in (-1, x.ndim) else 0),
    ),
    Op(
        "rot90",
        lambda m, x: m.rot90(x, 1, (0, 1)) * 2,
        shapes="rank2+",
        dim=lambda m, x, d: x.rot90(3, (d, 0 if d not in (0, -x.ndim) else 1)),
        integer=True,
    ),
    Op("take", lambda m, x: m.take(x, m.tensor([0, -1, 0])), shapes="nonempty"),
    binary("kron", lambda m, x, y: m.kron(x, y)),
    binary("cartesian_prod", lambda m, x, y: m.cartesian_prod(x.reshape(-1), y.reshape(-1))),
    Op(
        "tensordot",
        lambda m, x, y: m.tensordot(x, y, dims=1),
        shapes="matmul",
        check_shapes=((2, 3), (3, 4)),
    ),  # fmt: skip
    binary("dist", lambda m, x, y: m.dist(x, y * 2 + 1), domain=(real, away_from_zero)),
    binary("dist_p3", lambda m, x, y: m.dist(x, y * 2 + 1, p=3), domain=(real, away_from_zero)),
    Op(
        "cdist",
        lambda m, x, y: m.cdist(x, y * 2 + 3),
        shapes="same_matrices",
        check_shapes=((2, 3), (2, 3)),
    ),
    # ---- convolution and pooling (nn/conv_functional.py: composed of Unfold, Fold, MaxOver) ----
    Op(
        "conv1d",
        lambda m, x, w: m.nn.functional.conv1d(x, w, w[:, 0, 0], padding=2, stride=2),
        shapes="conv1d",
        check_shapes=((2, 2, 7), (3, 2, 3)),
    ),
    Op(
        "conv2d",
        lambda m, x, w: m.nn.functional.conv2d(
            x, w, w[:, 0, 0, 0], stride=2, padding=1, dilation=(1, 2)
        ),
        shapes="conv2d",
        check_shapes=((1, 2, 5, 6), (3, 2, 2, 2)),
    ),
    Op(
        "conv2d_groups_same",
        lambda m, x, w: m.nn.functional.conv2d(x, w, w[:, 0, 0, 0], padding="same", groups=2),
        shapes="conv2d_groups",
        check_shapes=((2, 4, 4, 3), (4, 2, 2, 3)),
    ),
    Op(
        "max_pool2d",
        lambda m, x: m.nn.functional.max_pool2d(x, 2),
        shapes="image",
        domain=distinct,
        check_shapes=((1, 2, 5, 5),),
    ),
    Op(
        "max_pool2d_windows",
        lambda m, x: m.nn.functional.max_pool2d(x, 3, stride=2, padding=1, dilation=(1, 2)),
        shapes="image",
        domain=distinct,
        check_shapes=((1, 2, 5, 5),),
    ),
    Op(
        "max_pool2d_ceil",
        lambda m, x: m.nn.functional.max_pool2d(x, 2, ceil_mode=True),
        shapes="image",
        domain=distinct,
        check_shapes=((1, 2, 5, 5),),
    ),
    Op(
        "fractional_max_pool2d",  # the same samples for both: PyTorch's windows, no draw
        lambda m, x: m.nn.functional.fractional_max_pool2d(
            x, 2, output_size=2, _random_samples=m.full((*x.shape[:2], 2), 0.37, dtype=x.dtype)
        ),
        shapes="image",
        domain=distinct,
        check_shapes=((1, 2, 5, 5),),
    ),
    Op(
        "avg_pool2d",
        lambda m, x: m.nn.functional.avg_pool2d(x, 2),
        shapes="image",
        check_shapes=((1, 2, 5, 5),),
    ),
    Op(
        "avg_pool2d_windows",
        lambda m, x: m.nn.functional.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
        shapes="image",
        check_shapes=((1, 2, 5, 5),),
    ),
    Op(
        "avg_pool2d_ceil",
        lambda m, x: m.nn.functional.avg_pool2d(x, 2, stride=2, ceil_mode=True),
        shapes="image",
        check_shapes=((1, 2, 5, 5),),
    ),
    Op(
        "adaptive_avg_pool2d",
        lambda m, x: m.nn.functional.adaptive_avg_pool2d(x, (3, 2)),
        shapes="image",
        check_shapes=((1, 2, 5, 5),),
    ),
    Op(
        "conv3d",
        lambda m, x, w: m.nn.functional.conv3d(
            x, w, w[:, 0, 0, 0, 0], stride=(1, 2, 1), padding=1, dilation=(1, 1, 2)
        ),
        shapes="conv3d",
        check_shapes=((1, 2, 3, 4, 3), (2, 2, 2, 2, 2)),
    ),
    Op(
        "conv3d_groups_same",
        lambda m, x, w: m.nn.functional.conv3d(x, w, w[:, 0, 0, 0, 0], padding="same", groups=2),
        shapes="conv3d_groups",
        check_shapes=((1, 4, 3, 3, 2), (2, 2, 2, 2, 1)),
    ),
    Op(
        "max_pool3d",
        lambda m, x: m.nn.functional.max_pool3d(x, 2),
        shapes="volume",
        domain=distinct,
        check_shapes=((1, 2, 4, 3, 4),),
    ),
    Op(
        "max_pool3d_windows",
        lambda m, x: m.nn.functional.max_pool3d(
            x, (2, 3, 2), stride=(1, 2, 1), padding=1, dilation=(1, 1, 2), ceil_mode=True
        ),
        shapes="volume",
        domain=distinct,
        check_shapes=((1, 2, 3, 3, 4),),
    ),
    Op(
        "avg_pool3d",
        lambda m, x: m.nn.functional.avg_pool3d(
            x, 2, stride=(1, 2, 1), padding=1, ceil_mode=True, count_include_pad=False
        ),
        shapes="volume",
        check_shapes=((1, 2, 3, 3, 4),),
    ),
    # transposed convolutions (one N-d function): the conv rows' weights (O, C, *K) transposed
    # to (C, O, *K), or regrouped to (C, O // 2, *K) for two groups; output padding only along
    # a strided (or dilated) dim, as PyTorch requires
    Op(
        "conv_transpose1d",
        lambda m, x, w: m.nn.functional.conv_transpose1d(
            x, w.transpose(0, 1), w[:, 0, 0], stride=2, padding=1, output_padding=1
        ),
        shapes="conv1d",
        check_shapes=((2, 2, 4), (3, 2, 3)),
    ),
    Op(
        "conv_transpose2d",
        lambda m, x, w: m.nn.functional.conv_transpose2d(
            x, w.transpose(0, 1), w[:, 0, 0, 0], stride=(2, 1), padding=(1, 0), dilation=(1, 2)
        ),
        shapes="conv2d",
        check_shapes=((1, 2, 3, 4), (3, 2, 2, 2)),
    ),
    Op(
        "conv_transpose3d",
        lambda m, x, w: m.nn.functional.conv_transpose3d(
            x,
            w.transpose(0, 1),
            w[:, 0, 0, 0, 0],
            stride=(1, 2, 1),
            padding=(0, 1, 0),
            output_padding=(0, 1, 1),
            dilation=(1, 1, 2),
        ),
        shapes="conv3d",
        check_shapes=((1, 2, 3, 2, 3), (2, 2, 2, 2, 2)),
    ),
    Op(
        "conv_transpose3d_groups",
        lambda m, x, w: m.nn.functional.conv_transpose3d(
            x, w.reshape(x.shape[1], -1, *w.shape[2:]), stride=2, padding=1, groups=2
        ),
        shapes="conv3d_groups",
        check_shapes=((1, 4, 2, 3, 2), (2, 2, 2, 2, 1)),
    ),
    # adaptive pooling (one N-d function per kind): windows that overlap, repeat entries (an
    # output larger than the input) or are the input's (None)
    Op(
        "adaptive_avg_pool1d",
        lambda m, x: m.nn.functional.adaptive_avg_pool1d(x, 5),
        shapes="signal",
        check_shapes=((2, 2, 4),),
    ),
    Op(
        "adaptive_avg_pool3d",
        lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, (3, None, 2)),
        shapes="volume",
        check_shapes=((1, 2, 4, 3, 3),),
    ),
    Op(
        "adaptive_max_pool1d",
        lambda m, x: m.nn.functional.adaptive_max_pool1d(x, 3),
        shapes="signal",
        domain=distinct,
        check_shapes=((2, 2, 4),),
    ),
    Op(
        "adaptive_max_pool3d",
        lambda m, x: m.nn.functional.adaptive_max_pool3d(x, (2, 3, None)),
        shapes="volume",
        domain=distinct,
        check_shapes=((1, 2, 3, 2, 4),),
    ),
    # max pooling's indices into max unpooling: the entries back where they were, zeros
    # elsewhere. Windows that do not overlap: where two windows pick the same entry, PyTorch's
    # gradient counts it twice though it is written once (not the derivative, gradcheck fails).
    # vmap=False: the indices are computed from the input's array outside a Function, which our
    # vmap refuses with a clear error (torch.func's vmap batches max_pool2d_with_indices)
    Op(
        "max_unpool2d",
        lambda m, x: m.nn.functional.max_unpool2d(
            *m.nn.functional.max_pool2d(x, (2, 3), padding=1, return_indices=True),
            (2, 3),
            padding=1,
            output_size=x.shape[-2:],
        ),
        shapes="image",
        domain=distinct,
        check_shapes=((1, 2, 5, 4),),
        vmap=False,
    ),
    Op(
        "unfold",
        lambda m, x: m.nn.functional.unfold(x, 2, padding=1, stride=(1, 2)),
        shapes="image",
        check_shapes=((1, 2, 3, 4),),
    ),
    Op(
        "fold",
        lambda m, x: m.nn.functional.fold(  # the output width that gives x's column count
            x, (3, x.shape[-1] // 2 - 2), 2, padding=1, stride=(1, 2)
        ),
        shapes="fold",
        check_shapes=((1, 8, 12),),
    ),
    # ---- resizing (nn/upsampling.py: a weight matrix per dim, or indexing for nearest) -------
    Op(
        "interpolate_bicubic",
        lambda m, x: m.nn.functional.interpolate(x, size=(4, 7), mode="bicubic"),
        shapes="image",
        check_shapes=((1, 2, 3, 5),),
    ),
    Op(
        "interpolate_bicubic_corners",
        lambda m, x: m.nn.functional.interpolate(
            x, scale_factor=(0.5, 1.5), mode="bicubic", align_corners=True
        ),
        shapes="image",
        check_shapes=((1, 2, 4, 3),),
    ),
    Op(  # (N, C, 1, H, W): depth 1 -> 2, height up or down, width down
        "interpolate_trilinear",
        lambda m, x: m.nn.functional.interpolate(x.unsqueeze(2), size=(2, 4, 2), mode="trilinear"),
        shapes="image",
        check_shapes=((1, 2, 3, 3),),
    ),
    Op(
        "interpolate_area",
        lambda m, x: m.nn.functional.interpolate(x, size=(2, 4), mode="area"),
        shapes="image",
        check_shapes=((1, 2, 5, 3),),
    ),
    Op(
        "interpolate_nearest_exact",
        lambda m, x: m.nn.functional.interpolate(x, size=(5, 2), mode="nearest-exact"),
        shapes="image",
        check_shapes=((1, 2, 3, 4),),
    ),
    Op(
        "interpolate_nearest_3d",
        lambda m, x: m.nn.functional.interpolate(x.unsqueeze(2), size=(2, 5, 2), mode="nearest"),
        shapes="image",
        check_shapes=((1, 2, 3, 4),),
    ),
    Op(
        "interpolate_bilinear_antialias",
        lambda m, x: m.nn.functional.interpolate(x, size=(2, 2), mode="bilinear", antialias=True),
        shapes="image",
        check_shapes=((1, 2, 5, 4),),
    ),
    Op(
        "interpolate_bicubic_antialias",
        lambda m, x: m.nn.functional.interpolate(x, size=(2, 3), mode="bicubic", antialias=True),
        shapes="image",
        check_shapes=((1, 2, 5, 4),),
    ),
    # ---- activations and losses composed in nn/functional.py ---------------------------------
    Op("gelu", lambda m, x: m.nn.functional.gelu(x), twin="gelu_composed"),
    Op("gelu_composed", lambda m, x: x * 0.5 * (1 + (x * 0.5**0.5).erf())),
    same_pair(  # gelu's backward as a function of the gradient and x: the fused GeluGrad node
        "gelu_backward",
        lambda m, g, x: m.autograd.grad(m.nn.functional.gelu(x), x, g, create_graph=True)[0],
        vmap=False,  # torch.func.vmap cannot batch autograd.grad
        twin="gelu_backward_composed",
    ),
    same_pair("gelu_backward_composed", lambda m, g, x: g * _gelu_derivative(x)),
    Op(
        "layer_norm",
        lambda m, x, w: m.nn.functional.layer_norm(x, x.shape[-1:], w[0], w[1]),
        shapes="layer_norm",
        check_shapes=((2, 3), (2, 3)),
        twin="layer_norm_composed",
    ),
    Op(
        "layer_norm_composed",
        lambda m, x, w: _standardized(x, 1) * w[0] + w[1],
        shapes="layer_norm",
        check_shapes=((2, 3), (2, 3)),
    ),
    Op(
        "layer_norm_2d",
        lambda m, x: m.nn.functional.layer_norm(x, x.shape[-2:], eps=0.1),
        shapes="nonempty2+",
        check_shapes=((2, 3, 2),),
        twin="layer_norm_2d_composed",
    ),
    Op(
        "layer_norm_2d_composed",
        lambda m, x: _standardized(x, 2, eps=0.1),
        shapes="nonempty2+",
        check_shapes=((2, 3, 2),),
    ),
    Op(  # layer norm's backward as a function of the gradient and x: StandardizeGrad
        "layer_norm_backward",
        lambda m, g, x: m.autograd.grad(
            m.nn.functional.layer_norm(x, x.shape[-1:]), x, g, create_graph=True
        )[0],
        shapes="layer_norm_pair",
        domain=(real, spread),
        check_shapes=((2, 3), (2, 3)),
        vmap=False,  # torch.func.vmap cannot batch autograd.grad
    ),
    Op("gelu_tanh", lambda m, x: m.nn.functional.gelu(x, approximate="tanh")),
    Op("softplus", lambda m, x: m.nn.functional.softplus(x)),
    Op("softplus_beta", lambda m, x: m.nn.functional.softplus(x, beta=2.0, threshold=3.0)),
    Op("silu", lambda m, x: m.nn.functional.silu(x)),
    same_pair(
        "bce",
        lambda m, x, y: m.nn.functional.binary_cross_entropy(x, y),
        domain=(probability, unit),
    ),
    same_pair(
        "bce_weighted_none",
        lambda m, x, y: m.nn.functional.binary_cross_entropy(
            x, y, weight=_ramp(m, x), reduction="none"
        ),
        domain=(probability, unit),
    ),
    same_pair(
        "bce_with_logits",
        lambda m, x, y: m.nn.functional.binary_cross_entropy_with_logits(x, y),
        domain=(real, unit),
    ),
    same_pair(
        "bce_with_logits_weights",
        lambda m, x, y: m.nn.functional.binary_cross_entropy_with_logits(
            x, y, weight=_ramp(m, x), pos_weight=2.5 - _ramp(m, x)
        ),
        domain=(real, unit),
    ),
    same_pair(  # the divergence per sample: a sum over all but dim 0, a mean over dim 0
        "kl_div_batchmean",
        lambda m, x, y: m.nn.functional.kl_div(x, y, reduction="batchmean"),
        domain=(real, positive),
    ),
    same_pair(
        "kl_div_none",
        lambda m, x, y: m.nn.functional.kl_div(x, y, reduction="none"),
        domain=(real, unit),
    ),
    same_pair(
        "kl_div_log_target_sum",
        lambda m, x, y: m.nn.functional.kl_div(x, y, reduction="sum", log_target=True),
    ),
    same_pair(
        "huber_loss",
        lambda m, x, y: m.nn.functional.huber_loss(x, y, delta=0.7),
    ),
    same_pair(
        "huber_loss_sum",
        lambda m, x, y: m.nn.functional.huber_loss(x, y, reduction="sum", delta=2.0),
    ),
    # ---- more activations, distances, norms and losses (nn/functional.py) ----------------------
    Op("elu", lambda m, x: m.nn.functional.elu(x), domain=away_from_zero),
    Op("elu_alpha", lambda m, x: m.nn.functional.elu(x * 3, alpha=0.5), domain=away_from_zero),
    Op("selu", lambda m, x: m.nn.functional.selu(x), domain=away_from_zero),
    Op("celu", lambda m, x: m.nn.functional.celu(x, alpha=2.0), domain=away_from_zero),
    Op("mish", lambda m, x: m.nn.functional.mish(x)),
    Op("hardtanh", lambda m, x: m.nn.functional.hardtanh(x, -0.5, 0.7), domain=away_from_zero),
    Op("relu6", lambda m, x: m.nn.functional.relu6(x * 4), domain=away_from_zero),
    Op("logsigmoid", lambda m, x: m.nn.functional.logsigmoid(x * 10)),
    Op(
        "softmin",
        lambda m, x: m.nn.functional.softmin(x, -1),
        shapes="rank1+",
        dim=lambda m, x, d: m.nn.functional.softmin(x, d),
    ),
    Op(
        "glu",
        lambda m, x: m.nn.functional.glu(x),
        shapes="even_last",
        check_shapes=((2, 4),),
        dim=lambda m, x, d: m.nn.functional.glu(x, d),
    ),
    Op(
        "prelu",
        lambda m, x, w: m.nn.functional.prelu(x, w),
        shapes="prelu",
        domain=(away_from_zero, real),
        check_shapes=((2, 3, 2), (3,)),
    ),
    Op(
        "normalize",
        lambda m, x: m.nn.functional.normalize(x, dim=-1),
        shapes="wide_last1+",
        dim=lambda m, x, d: m.nn.functional.normalize(x, dim=d),
    ),
    Op("normalize_p1", lambda m, x: m.nn.functional.normalize(x, p=1.0), shapes="rank2+"),
    Op(
        "cosine_similarity",
        lambda m, x, y: m.nn.functional.cosine_similarity(x, y, dim=-1),
        shapes="binary_vectors",
        check_shapes=((2, 3), (3,)),
        dim=lambda m, x, y, d: m.nn.functional.cosine_similarity(x, y, dim=d),
    ),
    binary("pairwise_distance", lambda m, x, y: m.nn.functional.pairwise_distance(x, y)),
    binary(
        "pairwise_distance_p3",
        lambda m, x, y: m.nn.functional.pairwise_distance(x, y, p=3.0, keepdim=True),
    ),
    Op(
        "cosine_embedding_loss",
        lambda m, x, y: m.nn.functional.cosine_embedding_loss(x, y, _signs(m, x.sum(1)), 0.2),
        shapes="same_matrices",
        check_shapes=((2, 3), (2, 3)),
    ),
    same_pair(
        "margin_ranking_loss",
        lambda m, x, y: m.nn.functional.margin_ranking_loss(x, y, _signs(m, x), margin=0.3),
    ),
    Op(
        "triplet_margin_loss",
        lambda m, a, p, n: m.nn.functional.triplet_margin_loss(a, p, n, margin=2.0),
        shapes="same_triple",
        check_shapes=((2, 3),) * 3,
    ),
    Op(
        "triplet_margin_loss_swap",
        lambda m, a, p, n: m.nn.functional.triplet_margin_loss(
            a, p, n, margin=3.0, p=1.0, swap=True, reduction="none"
        ),
        shapes="same_triple",
        check_shapes=((2, 3),) * 3,
    ),
    Op(
        "group_norm",
        lambda m, x, w: m.nn.functional.group_norm(x, 2, w[0], w[1]),
        shapes="group_norm",
        domain=(spread, real),
        check_shapes=((2, 4, 3), (2, 4)),
    ),
    Op(
        "rms_norm",
        lambda m, x, w: m.nn.functional.rms_norm(x, x.shape[-1:], w),
        shapes="rms_norm",
        check_shapes=((2, 3), (3,)),
    ),
    Op(
        "rms_norm_2d",
        lambda m, x: m.nn.functional.rms_norm(x, x.shape[-2:], eps=0.1),
        shapes="wide_last2+",
        check_shapes=((2, 3, 2),),
    ),
    # ---- rounding: piecewise constant, so gradient-free rows (the forward against PyTorch) -------
    Op("floor", lambda m, x: x.floor(), grad=False),
    Op("ceil", lambda m, x: m.ceil(x), grad=False),
    Op("round", lambda m, x: x.round(), grad=False),
    Op("round_decimals", lambda m, x: m.round(x, decimals=2), grad=False),
    Op("round_negative_decimals", lambda m, x: (x * 1000).round(decimals=-2), grad=False),
    # ---- rows: elementwise math and special functions ----
    # PyTorch's other elementwise names (tensor.py), in domains away from poles and jumps
    Op("lgamma", lambda m, x: m.lgamma(x * 4)),
    Op("digamma", lambda m, x: x.digamma(), domain=positive),
    Op("polygamma", lambda m, x: m.polygamma(2, x), domain=positive),
    Op("polygamma_method", lambda m, x: x.polygamma(1), domain=positive),
    Op("mvlgamma", lambda m, x: m.mvlgamma(x + 1, 3), domain=positive),
    Op("i0", lambda m, x: m.i0(x * 3)),
    # away from 0, where both libraries' float32 gradients cancel to ~eps / x (PyTorch's too)
    Op("sinc", lambda m, x: m.sinc(x * 2), domain=away_from_zero),
    Op("logit", lambda m, x: x.logit(), domain=lambda rng, s: rng.uniform(0.05, 0.95, s)),
    Op("logit_eps", lambda m, x: m.logit(x, eps=0.2), domain=unit),
    binary("xlogy", lambda m, x, y: m.xlogy(x, y), domain=(real, positive)),
    binary("copysign", lambda m, x, y: m.copysign(x, y), domain=(away_from_zero, real)),
    binary("fmax", lambda m, x, y: m.fmax(x, y)),
    binary("fmin", lambda m, x, y: x.fmin(y)),
    binary("float_power", lambda m, x, y: m.float_power(x, y), domain=(positive, real)),
    Op("float_power_scalar", lambda m, x: x.float_power(3)),
    binary("ldexp", lambda m, x, y: m.ldexp(x, y)),
    binary("logaddexp2", lambda m, x, y: m.logaddexp2(x, y * 3)),
    Op(
        "logcumsumexp",
        lambda m, x: m.logcumsumexp(x * 3, -1),
        shapes="rank1+",
        dim=lambda m, x, d: x.logcumsumexp(d),
    ),
    Op("igamma", lambda m, x: m.igamma(m.ones_like(x) * 2.5, x * 2), domain=positive),
    Op("igammac", lambda m, x: m.igammac(m.ones_like(x) * 0.7, x), domain=positive),
    Op("deg2rad", lambda m, x: m.deg2rad(x * 90)),
    Op("rad2deg", lambda m, x: x.rad2deg()),
    Op("frexp_mantissa", lambda m, x: m.frexp(x * 3).mantissa, domain=away_from_zero),
    Op("nextafter", lambda m, x: m.nextafter(x, m.zeros_like(x))),
    Op("sgn", lambda m, x: m.sgn(x), grad=False),  # (PyTorch's gradient: a ZeroTensor)
    Op("absolute", lambda m, x: m.absolute(x), domain=away_from_zero),
    binary("multiply", lambda m, x, y: m.multiply(x, y)),
    binary("divide", lambda m, x, y: x.divide(y), domain=(real, away_from_zero)),
    # ---- rows: tensor API additions ----
    # statistics.py: quantiles read one or two sorted entries (distinct: no ties), NaNs padded
    # around the entries (full_like: no gradient) for the nan- forms; cov and corrcoef over
    # observations made from x (three for corrcoef: two would correlate exactly +-1, clipped)
    Op("quantile", lambda m, x: m.quantile(x, 0.3), shapes="nonempty", domain=distinct),
    Op(
        "quantile_dim_q_tensor",
        lambda m, x: x.quantile(m.tensor([0.25, 0.9], dtype=x.dtype), dim=-1, keepdim=True),
        shapes="nonempty1+",
        domain=distinct,
    ),
    Op(
        "quantile_midpoint",
        lambda m, x: x.quantile(0.6, 0, interpolation="midpoint"),
        shapes="nonempty1+",
        domain=distinct,
    ),
    Op(
        "nanquantile",
        lambda m, x: m.nanquantile(_nan_padded(m, x), 0.7, dim=-1, interpolation="nearest"),
        shapes="nonempty1+",
        domain=distinct,
    ),
    Op("nanmedian", lambda m, x: m.nanmedian(x), shapes="nonempty", domain=distinct),
    Op(
        "nanmedian_dim",
        lambda m, x: _nan_padded(m, x).nanmedian(-1).values,
        shapes="nonempty1+",
        domain=distinct,
    ),
    Op("cov", lambda m, x: m.cov(x, correction=0), shapes="nonempty_matrix"),
    Op(  # the weights read their values for PyTorch's checks: no vmap, as torch.func's
        "cov_weighted",
        lambda m, x: m.cov(
            m.cat([x, x.sin()], -1),
            fweights=m.arange(2 * x.shape[1]) % 3 + 1,
            aweights=m.cat([x[0], x[0].cos()]).sigmoid(),
        ),
        shapes="nonempty_matrix",
        vmap=False,
    ),
    Op(  # each row also 3 at its own place among n more observations: rows that were nearly
        # alike (x of 3 x 1 differing by 5e-3) correlate to 1 - 1e-5, where the gradient is a
        # cancellation (PyTorch's float32 1.4% of its largest entry off float64's, ours 0.016%;
        # 4 failures in 8000 examples of 3 x 1); now none in 20000 at a tenth of the tolerance
        "corrcoef",
        lambda m, x: m.corrcoef(
            m.cat([x, x.sin(), x.cos(), 3 * m.eye(x.shape[0], dtype=x.dtype)], -1)
        ),
        shapes="nonempty_matrix",
    ),
    # indexed writes (src/scratchgrad/indexed_writes.py; tests/test_indexed_writes.py): the
    # ones writing into a clone are vmap=False, as index_copy (func.md, Limits)
    Op(  # distinct rows written: a repeated one's value is unspecified in PyTorch
        "index_put",
        lambda m, x: x.index_put((m.tensor([x.shape[0] - 1, 0]),), x[:2].sin()),
        shapes="two_rows",
        index=lambda m, x, i: x.index_put((m.tensor([i]),), x[:1] * 2),
        integer=True,
        vmap=False,
    ),
    Op(  # a repeated row adds up, and each repeat's values get the gradient there
        "index_put_accumulate",
        lambda m, x, y: x.index_put((m.tensor([x.shape[0] - 1, 0, 0]),), y, accumulate=True),
        shapes="index_add",
        check_shapes=((2, 3), (3, 3)),
        index=lambda m, x, i: x.index_put((m.tensor([i]),), x[:1], accumulate=True),
        integer=True,
        vmap=False,
    ),
    Op(  # two index tensors and a value broadcast to the entries they pick
        "index_put_accumulate_pairs",
        lambda m, x: x.index_put(
            (m.tensor([0, -1, 0]), m.tensor([-1, 0, -1])), x[0, :1].exp(), accumulate=True
        ),
        shapes="nonempty2+",
        vmap=False,
    ),
    Op(  # a mask: the value's gradient sums over the entries it reaches
        "index_put_mask",
        lambda m, x: x.index_put((x > 0,), (x * x).sum().reshape(1)),
        shapes="rank1+",
        domain=away_from_zero,
        vmap=False,  # (a data-dependent shape)
    ),
    Op(  # source's entries, in order, where the mask holds; the leftover ones get 0
        "masked_scatter",
        lambda m, x: x.masked_scatter(x > 0, x.reshape(-1).flip(0).cos() * 3),
        domain=away_from_zero,
        vmap=False,
    ),
    Op(
        "put",
        lambda m, x: x.put(m.tensor([-1, 0]), x.reshape(-1)[:2].sin()),
        shapes="two+",
        vmap=False,
    ),
    Op(
        "put_accumulate",
        lambda m, x: x.put(
            m.tensor([[0, -1], [0, 0]]), x.reshape(-1)[m.tensor([[0, -1], [-1, 0]])].exp(), True
        ),
        shapes="nonempty",
        vmap=False,
    ),
    *(
        Op(  # slices 0 and 1 of the source reduced into row 0, slice 2 into the last row
            f"index_reduce_{reduce}" + ("" if include_self else "_without_self"),
            lambda m, x, y, reduce=reduce, include_self=include_self: x.index_reduce(
                0, m.tensor([0, 0, x.shape[0] - 1]), y, reduce, include_self=include_self
            ),
            shapes="index_add",
            check_shapes=((2, 3), (3, 3)),
            domain=distinct,
            vmap=False,
        )
        for reduce in ("prod", "mean", "amax", "amin")
        for include_self in (True, False)
    ),
    Op(
        "select_scatter",
        lambda m, x: m.select_scatter(x, x.select(0, -1).sin(), 0, 0),
        shapes="nonempty1+",
        dim=lambda m, x, d: m.select_scatter(x, x.select(d, 0) * 2, d, 0),
        index=lambda m, x, i: m.select_scatter(x, x[0] * 2, 0, i),
        integer=True,
        vmap=False,
    ),
    Op(
        "slice_scatter",
        lambda m, x: m.slice_scatter(x, x[1::2].cos(), 0, 1, None, 2),
        shapes="rank1+",
        dim=lambda m, x, d: m.slice_scatter(x, x * 2, d),
        integer=True,
        vmap=False,
    ),
    Op(
        "diagonal_scatter",
        lambda m, x: m.diagonal_scatter(x, x.diagonal(1, 0, -1).exp(), 1, 0, -1),
        shapes="rank2+",
        dim=lambda m, x, d: m.diagonal_scatter(x, x.diagonal(0, d, -1) * 2, 0, d, -1),
        integer=True,
        vmap=False,
    ),
    Op(
        "narrow_copy",
        lambda m, x: x.narrow_copy(-1, 1, x.shape[-1] - 1) * 2,
        shapes="nonempty1+",
        dim=lambda m, x, d: x.narrow_copy(d, 0, 1),
        integer=True,
    ),
    Op("nansum", lambda m, x: m.where(x > 1, m.nan, x).nansum(-1)),
    Op("nanmean", lambda m, x: m.nanmean(m.where(x > 1, m.nan, x)), domain=inside_unit),
    Op("aminmax_max", lambda m, x: m.aminmax(x * 1, dim=0).max, shapes="nonempty"),
    Op("msort", lambda m, x: x.msort(), shapes="nonempty"),
    Op("inner", lambda m, x: m.inner(x, x.sin()), shapes="nonempty"),
    Op("vdot", lambda m, x: m.vdot(x.reshape(-1), x.reshape(-1).cos())),
    Op("diagflat", lambda m, x: m.diagflat(x, 1)),
    Op("hsplit", lambda m, x: m.hsplit(x, [1])[-1] * 2, shapes="nonempty2+"),
    Op(  # vmap=False: torch.func.vmap has no batching rule for moveaxis
        "ravel_moveaxis",
        lambda m, x: m.moveaxis(x, 0, -1).ravel(),
        shapes="nonempty",
        vmap=False,
    ),
    Op(
        "addmv",
        lambda m, x: m.addmv(x[0], x.mT, x[:, 0].sin(), beta=0.5, alpha=2.0),
        shapes="nonempty_matrix",
    ),
    Op("addr", lambda m, x: m.addr(x, x[:, 0], x[0].cos(), alpha=0.5), shapes="nonempty_matrix"),
    Op(
        "addbmm",
        lambda m, x: m.addbmm(x[0, 0, :, :1], x[0], x[0].mT.sin(), beta=0.3),
        shapes="image",
        check_shapes=((2, 3, 2, 4),),
    ),
    Op("renorm", lambda m, x: m.renorm(x * 3, 2, 0, 1.0), shapes="nonempty2+"),
    Op("unfold", lambda m, x: x.unfold(-1, min(2, x.shape[-1]), 1) * 2, shapes="nonempty2+"),
    Op(  # overlapping windows of a middle dim, every other entry: the gradient sums shares
        "unfold_step",
        lambda m, x: x.unfold(1, min(2, x.shape[1]), 2).sin(),
        shapes="image",
        check_shapes=((2, 5, 3, 4),),
    ),
    # as_strided (tensor.py): overlapping windows of the flat storage, whose gradient adds the
    # windows' shares; a view's storage, at an offset of its own; an input that overlaps itself
    # (expanded), whose gradient each place shares among the input's entries there
    Op(
        "as_strided_windows",
        lambda m, x: x.reshape(-1).as_strided((max(x.numel() - 1, 0), min(x.numel(), 2)), (1, 1)),
    ),
    Op(
        "as_strided_view_offset",
        lambda m, x: x.flatten()[2:].as_strided((3, 2), (1, 3), 3).sin(),
        shapes="image",
        check_shapes=((1, 1, 3, 3),),
        # (torch.func.vmap refuses it where the batch dim is not in front in memory: the
        # offset then lies before a member's first entry; tests/func/test_vmap_strides.py)
        vmap=False,
    ),
    Op(
        "as_strided_expanded",
        lambda m, x: x.expand(2, *x.shape).as_strided((2, *x.shape), (0, *x.stride())) * 2,
    ),
    # as_strided_scatter (indexed_writes.py) of x into every other place of zeros of twice its
    # size (PyTorch 2.13's gradient for the input fails its own gradcheck: that one is checked
    # by gradcheck in tests/test_as_strided.py)
    Op(
        "as_strided_scatter_src",
        lambda m, x: m.as_strided_scatter(
            m.zeros(2 * x.numel() + 1, dtype=x.dtype),
            x.sin(),
            x.shape,
            [2 * n for n in m.zeros(x.shape).stride()],
            1,
        ),
        vmap=False,
    ),
    # clamp with tensor bounds: the gradient to x inside, to a bound where it clips; crossed
    # bounds (min > max) give max everywhere, its gradient all to max
    binary("clamp_tensor_min", lambda m, x, y: x.clamp(min=y)),
    binary("clamp_tensor_both", lambda m, x, y: m.clamp(x, y - 0.5, y + 0.5)),
    binary("clamp_tensor_crossed", lambda m, x, y: x.clamp(y + 0.5, y - 0.5)),
    binary("clamp_tensor_and_0d", lambda m, x, y: x.clamp(min=y, max=m.tensor(0.7, dtype=x.dtype))),
    # trapezoid and cumulative_trapezoid (tensor.py): spaced dx apart, over 1-D sample points
    # along the dim, and over sample points of y's shape (the gradient reaches x too)
    Op(
        "trapezoid_dx",
        lambda m, x: m.trapezoid(x, dx=0.5),
        shapes="rank1+",
        dim=lambda m, x, d: m.trapezoid(x, dim=d),
        integer=True,
    ),
    Op(
        "trapezoid_1d_x",
        lambda m, x: m.trapz(x, m.linspace(0, 1, x.shape[0], dtype=x.dtype) ** 2, dim=0),
        shapes="rank1+",
    ),
    Op(
        "trapezoid_x",
        lambda m, x, y: m.trapezoid(x, y.cumsum(0), dim=0),
        shapes="same_pair_rank1+",
        check_shapes=((3, 2), (3, 2)),
    ),
    Op(
        "cumulative_trapezoid",
        lambda m, x: m.cumulative_trapezoid(x),
        shapes="rank1+",
        dim=lambda m, x, d: m.cumulative_trapezoid(x, dx=2, dim=d),
        integer=True,
    ),
    Op(
        "cumulative_trapezoid_x",
        lambda m, x, y: m.cumulative_trapezoid(x, y.exp(), dim=0),
        shapes="same_pair_rank1+",
        check_shapes=((3, 2), (3, 2)),
    ),
    # gradient (tensor.py), a tensor per dim (stacked into one): samples spaced 1, or a number
    # per dim, apart; at coordinates (a second input, which gets gradients too); second-order
    # ends over a dim list
    Op(
        "gradient",
        lambda m, x: m.stack(m.gradient(x)),
        shapes="signal",
        dim=lambda m, x, d: m.gradient(x, dim=d)[0],
        integer=True,
        check_shapes=((3, 4),),
    ),
    Op(
        "gradient_spacing_per_dim",
        lambda m, x: m.stack(m.gradient(x, spacing=[0.5 * (d + 1) for d in range(x.ndim)])),
        shapes="signal",
        check_shapes=((3, 4),),
    ),
    Op(
        "gradient_dims_edge_order_2",
        lambda m, x: m.stack(m.gradient(x, spacing=0.5, dim=[-1, 2], edge_order=2)),
        shapes="image",
        check_shapes=((1, 2, 3, 4),),
    ),
    Op(
        "gradient_coordinates",
        lambda m, x, y: m.gradient(x, spacing=[y.cumsum(0)], dim=-1)[0],
        shapes="rms_norm",
        domain=(real, positive),
        check_shapes=((2, 4), (4,)),
    ),
    Op(
        "gradient_coordinates_edge_order_2",
        lambda m, x, y: m.gradient(x, spacing=(y.cumsum(0),), dim=[-1], edge_order=2)[0],
        shapes="rms_norm",
        domain=(real, positive),
        check_shapes=((2, 4), (4,)),
    ),
    # ---- rows: grid sampling, linalg, pooling, nn composites ----
    # grid sampling (nn/sampling.py): the grid made from the input, so that one tensor drives
    # both gradients; its points reach a little past [-1, 1], into the padding
    Op(
        "grid_sample",
        lambda m, x: m.nn.functional.grid_sample(x, _grid(m, x), align_corners=False),
        shapes="image",
        check_shapes=((2, 2, 3, 4),),
    ),
    Op(
        "grid_sample_nearest_border",
        lambda m, x: m.nn.functional.grid_sample(
            x, _grid(m, x), "nearest", "border", align_corners=True
        ),
        shapes="image",
        check_shapes=((2, 2, 3, 4),),
    ),
    Op(
        "grid_sample_bicubic_reflection",
        lambda m, x: m.nn.functional.grid_sample(
            x, _grid(m, x), "bicubic", "reflection", align_corners=False
        ),
        shapes="image",
        check_shapes=((2, 2, 3, 4),),
        # through the grid, the input's gradient sums the cubic weights' slopes times pixels:
        # a small entry can be the difference of large ones (float32: 1.4e-5 off at 0.032,
        # next to 8.6, in a drawn example)
        normwise=True,
    ),
    Op(
        "grid_sample_3d",
        lambda m, x: m.nn.functional.grid_sample(x, _grid(m, x), align_corners=True),
        shapes="volume",
        check_shapes=((2, 2, 2, 3, 2),),
    ),
    Op(
        "affine_grid",
        lambda m, x: m.nn.functional.affine_grid(
            x[:, 0, :2, :3], [x.shape[0], 1, 3, 4], align_corners=False
        ),
        shapes="image",
        check_shapes=((2, 1, 3, 3),),
    ),
    Op(
        "affine_grid_3d",
        lambda m, x: m.nn.functional.affine_grid(
            m.cat([x[:, 0, :3, :3], x[:, -1, :3, :1]], -1),
            [x.shape[0], 1, 2, 3, 2],
            align_corners=True,
        ),
        shapes="image",
        check_shapes=((2, 2, 3, 3),),
    ),
    Op(  # the spatial transformer: an affine grid from the image, the image read there
        "affine_grid_sample",
        lambda m, x: m.nn.functional.grid_sample(
            x,
            m.nn.functional.affine_grid(x[:, 0, :2, :3], list(x.shape), align_corners=False),
            padding_mode="border",
            align_corners=False,
        ),
        shapes="image",
        check_shapes=((2, 2, 3, 4),),
    ),
    # linalg: matrices made well-conditioned from a random x (see _square and _spd below)
    Op("linalg_inv", lambda m, x: m.linalg.inv(_square(m, x)), shapes="nonempty2+"),
    Op(
        "linalg_solve",
        lambda m, x, y: m.linalg.solve(_square(m, x), y),
        shapes="same_matrices",
        check_shapes=((2, 3), (2, 3)),
    ),
    Op(
        "linalg_solve_left_false",
        lambda m, x: m.linalg.solve(_square(m, x), x.mT.sin(), left=False),
        shapes="nonempty2+",
    ),
    Op(
        "linalg_solve_triangular",
        lambda m, x, y: m.linalg.solve_triangular(_square(m, x).triu(), y, upper=True),
        shapes="same_matrices",
        check_shapes=((2, 3), (2, 3)),
    ),
    Op(
        "linalg_solve_triangular_right_unit",
        lambda m, x: m.linalg.solve_triangular(
            _square(m, x).tril(), x.mT, upper=False, left=False, unitriangular=True
        ),
        shapes="nonempty2+",
    ),
    Op("linalg_cholesky", lambda m, x: m.linalg.cholesky(_spd(m, x)), shapes="nonempty2+"),
    Op(
        "linalg_cholesky_upper",
        lambda m, x: m.linalg.cholesky(_spd(m, x), upper=True),
        shapes="nonempty2+",
    ),
    Op(
        "cholesky_solve",
        lambda m, x, y: m.cholesky_solve(y, _square(m, x).tril()),
        shapes="same_matrices",
        check_shapes=((2, 3), (2, 3)),
    ),
    Op(
        "cholesky_solve_upper",
        lambda m, x: m.cholesky_solve(x.cos(), _square(m, x).triu(), upper=True),
        shapes="nonempty2+",
    ),
    Op(
        "cholesky_inverse",
        lambda m, x: m.cholesky_inverse(_square(m, x).tril()),
        shapes="nonempty2+",
    ),
    Op(  # Q and R of a tall matrix side by side
        "linalg_qr",
        lambda m, x: m.cat([t.flatten(-2) for t in m.linalg.qr(_tall(m, x))], -1),
        shapes="nonempty2+",
    ),
    Op(  # reflectors below the diagonal of a tall matrix, their scales from the rows of x
        "linalg_householder_product",
        lambda m, x: (lambda a: m.linalg.householder_product(a, _reflector_scales(a, x)))(
            _tall(m, x)
        ),
        shapes="nonempty2+",
        normwise=True,  # the gradient's small entries are differences of large ones
    ),
    Op(  # eigenvectors up to sign: their absolute values (and theirs gradients)
        "linalg_eigh",
        lambda m, x: (lambda w, v: m.cat([w.unsqueeze(-2), v.abs()], -2))(
            *m.linalg.eigh(_spd(m, x))
        ),
        shapes="nonempty2+",
    ),
    Op(
        "linalg_eigvalsh_upper",
        lambda m, x: m.linalg.eigvalsh(_spd(m, x), UPLO="U"),
        shapes="nonempty2+",
    ),
    Op(  # eigenvalues (real: _square's stay apart on the real line) and |eigenvectors|
        "linalg_eig",
        lambda m, x: (lambda w, v: m.cat([w.real.unsqueeze(-2), v.abs()], -2))(
            *m.linalg.eig(_square(m, x))
        ),
        shapes="nonempty2+",
    ),
    Op(
        "linalg_eigvals",
        lambda m, x: m.linalg.eigvals(_square(m, x).mT).real,
        shapes="nonempty2+",
    ),
    Op(  # LAPACK's compact QR, without a derivative
        "geqrf",
        lambda m, x: (lambda a, tau: m.cat([a.flatten(-2), tau], -1))(*m.geqrf(_tall(m, x))),
        shapes="nonempty2+",
        grad=False,
    ),
    Op(  # a matrix times Q of reflectors below the diagonal of a tall one (see above)
        "ormqr",
        lambda m, x: (lambda a: m.ormqr(a, _reflector_scales(a, x), a.flip(-1)))(_tall(m, x)),
        shapes="nonempty2+",
        normwise=True,
    ),
    Op(  # Bunch-Kaufman's pivots of a symmetric indefinite matrix (no derivative)
        "linalg_ldl_factor",
        lambda m, x: m.linalg.ldl_factor(_indefinite(m, x)).LD,
        shapes="nonempty2+",
        grad=False,
    ),
    Op(
        "linalg_ldl_solve",
        lambda m, x: m.linalg.ldl_solve(*m.linalg.ldl_factor(_indefinite(m, x)), x),
        shapes="nonempty2+",
        grad=False,
    ),
    Op(  # singular vectors up to sign, as eigh's
        "linalg_svd",
        lambda m, x: _svd_parts(m, _tall(m, x)),
        shapes="nonempty2+",
    ),
    Op(
        "linalg_svdvals",
        lambda m, x: m.linalg.svdvals(_tall(m, x).mT),
        shapes="nonempty2+",
        # the gradient U diag(g) V^T: a small entry sums products of singular vectors' entries
        # that cancel, its float32 round-off that of the largest (PyTorch's 8.512e-3 against
        # float64's 8.498e-3, 3e-6 of its matrix's largest entry, 4.2)
        normwise=True,
    ),
    Op(
        "linalg_det",
        lambda m, x: m.linalg.det(_square(m, x).flip(-1)),
        shapes="nonempty2+",
        normwise=True,
    ),
    Op(  # rows reversed: the sign changes with the parity of the reversal
        "linalg_slogdet",
        lambda m, x: (lambda s: s.sign * s.logabsdet)(m.linalg.slogdet(_square(m, x).flip(-2))),
        shapes="nonempty2+",
    ),
    Op("logdet", lambda m, x: m.logdet(_spd(m, x)), shapes="nonempty2+"),
    Op("linalg_pinv", lambda m, x: m.linalg.pinv(_tall(m, x)), shapes="nonempty2+"),
    Op("linalg_pinv_wide", lambda m, x: m.linalg.pinv(_tall(m, x).mT), shapes="nonempty2+"),
    Op(
        "linalg_lstsq",
        lambda m, x, y: m.linalg.lstsq(_tall(m, x), _tall(m, y)).solution,
        shapes="same_matrices",
        check_shapes=((2, 3), (2, 3)),
    ),
    Op(  # x x^T of rank min(n, k)
        "linalg_matrix_rank",
        lambda m, x: m.linalg.matrix_rank(x @ x.mT),
        shapes="nonempty2+",
        grad=False,
    ),
    Op(
        "linalg_matrix_rank_hermitian_atol",
        lambda m, x: m.linalg.matrix_rank(x @ x.mT, atol=0.5, hermitian=True),
        shapes="nonempty2+",
        grad=False,
    ),
    Op(
        "linalg_matrix_exp",
        lambda m, x: m.linalg.matrix_exp(x @ x.flip(-2).mT),
        shapes="nonempty2+",
        products=True,
    ),
    Op(
        "linalg_matrix_power",
        lambda m, x: m.linalg.matrix_power(x @ x.flip(-2).mT, 3),
        shapes="nonempty2+",
        products=True,
    ),
    Op(
        "linalg_matrix_power_negative",
        lambda m, x: m.linalg.matrix_power(_square(m, x), -2),
        shapes="nonempty2+",
    ),
    Op("linalg_matrix_norm", lambda m, x: m.linalg.matrix_norm(x), shapes="nonempty2+"),
    Op(
        "linalg_matrix_norm_nuc",
        lambda m, x: m.linalg.matrix_norm(_tall(m, x), "nuc"),
        shapes="nonempty2+",
    ),
    Op(
        "linalg_matrix_norm_2",
        lambda m, x: m.linalg.matrix_norm(_tall(m, x), 2, keepdim=True),
        shapes="nonempty2+",
    ),
    Op(
        "linalg_vector_norm",
        lambda m, x: m.linalg.vector_norm(x, 3, dim=-1),
        shapes="nonempty1+",
        domain=away_from_zero,
        dim=lambda m, x, d: m.linalg.vector_norm(x, 3, dim=d),
    ),
    Op(  # on PyTorch's CPU autocast lower-precision list, as matmul. Operands of one shape:
        # PyTorch's 1-d vecdot is dot, which does not broadcast
        "linalg_vecdot",
        lambda m, x, y: m.linalg.vecdot(x, y.sin()),
        "same_pair_rank1+",
        check_shapes=((2, 3), (2, 3)),
    ),
    Op(
        "linalg_multi_dot",
        lambda m, x: m.linalg.multi_dot([x, x.mT.exp(), x.sin()]),
        shapes="nonempty_matrix",
    ),
    Op("linalg_inv_ex", lambda m, x: m.linalg.inv_ex(_square(m, x)).inverse, shapes="nonempty2+"),
    Op("linalg_lu_factor", lambda m, x: m.linalg.lu_factor(_square(m, x)).LU, shapes="nonempty2+"),
    Op(  # wide: the extra columns of U solved through the square part
        "linalg_lu_factor_wide",
        lambda m, x: m.linalg.lu_factor_ex(_tall(m, x).mT).LU,
        shapes="nonempty2+",
    ),
    Op("linalg_lu_tall_L", lambda m, x: m.linalg.lu(_tall(m, x)).L, shapes="nonempty2+"),
    Op("linalg_lu_U", lambda m, x: m.linalg.lu(_square(m, x)).U, shapes="nonempty2+"),
    Op(
        "linalg_lu_solve",
        lambda m, x, y: m.linalg.lu_solve(*m.linalg.lu_factor(_square(m, x)), y),
        shapes="same_matrices",
        check_shapes=((2, 3), (2, 3)),
    ),
    Op(
        "linalg_lu_solve_adjoint_right",
        lambda m, x: m.linalg.lu_solve(
            *m.linalg.lu_factor(_square(m, x)), x.mT, left=False, adjoint=True
        ),
        shapes="nonempty2+",
    ),
    Op(
        "linalg_solve_ex",
        lambda m, x, y: m.linalg.solve_ex(_square(m, x), y).result,
        shapes="same_matrices",
        check_shapes=((2, 3), (2, 3)),
    ),
    Op("linalg_cond", lambda m, x: m.linalg.cond(_tall(m, x)), shapes="nonempty2+"),
    Op(  # no gradient in PyTorch: its masked_fill_ of inv_ex's output makes backward raise
        "linalg_cond_fro",
        lambda m, x: m.linalg.cond(_square(m, x), "fro"),
        shapes="nonempty2+",
        grad=False,
    ),
    Op(
        "linalg_cholesky_ex",
        lambda m, x: m.linalg.cholesky_ex(_spd(m, x)).L,
        shapes="nonempty2+",
    ),
    Op(
        "triangular_solve",
        lambda m, x: m.triangular_solve(x.sin(), _square(m, x).triu()).solution,
        shapes="nonempty2+",
    ),
    # torch.fft (fft.py, ops/fft.py) between real tensors: the complex spectra in between
    Op(
        "fft_rfft_irfft",
        lambda m, x: m.fft.irfft(m.fft.rfft(x) * m.fft.rfft(x.cos(), norm="ortho"), n=x.shape[-1]),
        shapes="nonempty1+",
        spectral=True,
    ),
    Op(
        "fft_fft_ifft",
        lambda m, x: m.fft.ifft(m.fft.fft(x, n=x.shape[-1] + 1) * x.sum(), norm="forward").imag,
        shapes="nonempty1+",
        spectral=True,
    ),
    Op(  # hfft of a Hermitian half made by ihfft, scaled: the conjugates in both directions
        "fft_hfft_ihfft",
        lambda m, x: m.fft.hfft(m.fft.ihfft(x.sin(), norm="ortho") * 3, n=x.shape[-1] + 1),
        shapes="nonempty1+",
        spectral=True,
    ),
    Op(
        "stft_istft", _stft_round_trip, shapes="signal_batch", spectral=True, check_shapes=((2, 6),)
    ),
    Op(
        "fft_rfftn_irfftn",
        lambda m, x: m.fft.irfftn(m.fft.rfftn(x.sin()) * 2, s=x.shape, norm="forward"),
        shapes="nonempty1+",
        spectral=True,
    ),
    # special functions (special.py, ops/special.py), in domains away from their poles
    Op("special_gammaln", lambda m, x: m.special.gammaln(x * 4)),
    Op("special_digamma", lambda m, x: m.special.digamma(x * 3), domain=positive),
    Op("special_polygamma_1", lambda m, x: m.special.polygamma(1, x * 3), domain=positive),
    Op("special_polygamma_3", lambda m, x: m.special.polygamma(3, x), domain=positive),
    # PyTorch has no gradient for zeta's x: a number there, the row differentiates q
    Op("special_zeta", lambda m, q: m.special.zeta(3.5, q), domain=positive),
    Op("special_erfcx", lambda m, x: m.special.erfcx(x * 3)),
    Op(
        "special_ndtri",
        lambda m, p: m.special.ndtri(p),
        domain=lambda rng, s: rng.uniform(0.02, 0.98, s),
    ),
    Op("special_log_ndtr", lambda m, x: m.special.log_ndtr(x * 4)),
    Op("special_i0", lambda m, x: m.special.i0(x * 3)),
    Op("special_i0e", lambda m, x: m.special.i0e(x * 3)),
    Op("special_i1", lambda m, x: m.special.i1(x * 3)),
    Op("special_i1e", lambda m, x: m.special.i1e(x * 3)),
    Op("special_entr", lambda m, x: m.special.entr(x), domain=positive),
    Op(
        "special_logit",
        lambda m, x: m.special.logit(x),
        domain=lambda rng, s: rng.uniform(0.05, 0.95, s),
    ),
    Op("special_logit_eps", lambda m, x: m.special.logit(x, eps=0.2), domain=unit),
    binary("special_xlogy", lambda m, x, y: m.special.xlogy(x, y), domain=(real, positive)),
    binary("special_xlog1py", lambda m, x, y: m.special.xlog1py(x, y), domain=(real, positive)),
    # power-average pooling (nn/conv_functional.py)
    Op("lp_pool1d", lambda m, x: m.nn.functional.lp_pool1d(x, 2, 2), shapes="signal"),
    Op(
        "lp_pool2d",
        lambda m, x: m.nn.functional.lp_pool2d(x, 3, (2, 3), stride=1),
        shapes="image",
        domain=positive,
        check_shapes=((2, 2, 3, 4),),
    ),
    Op(
        "lp_pool3d",
        lambda m, x: m.nn.functional.lp_pool3d(x, 1.5, 2, ceil_mode=True),
        shapes="volume",
        domain=positive,
        check_shapes=((1, 2, 3, 2, 3),),
    ),
    # nn composites (nn/functional.py, nn/upsampling.py)
    Op("hardswish", lambda m, x: m.nn.functional.hardswish(x * 4), domain=away_from_zero),
    Op("hardsigmoid", lambda m, x: m.nn.functional.hardsigmoid(x * 4), domain=away_from_zero),
    Op("celu", lambda m, x: m.nn.functional.celu(x, alpha=0.5), domain=away_from_zero),
    Op("softsign", lambda m, x: m.nn.functional.softsign(x)),
    Op("tanhshrink", lambda m, x: m.nn.functional.tanhshrink(x)),
    Op("leaky_relu", lambda m, x: m.nn.functional.leaky_relu(x, 0.1), domain=away_from_zero),
    # |x| in (0.03, 0.15) or (0.3, 1.5): none near the thresholds of 0.2
    Op(
        "hardshrink",
        lambda m, x: m.nn.functional.hardshrink(x, 0.2),
        domain=lambda rng, s: _two_scales(rng, s),
    ),
    Op(
        "softshrink",
        lambda m, x: m.nn.functional.softshrink(x, 0.2),
        domain=lambda rng, s: _two_scales(rng, s),
    ),
    Op(
        "threshold",
        lambda m, x: m.nn.functional.threshold(x, 0.2, -1.0),
        domain=lambda rng, s: _two_scales(rng, s),
    ),
    Op(
        "local_response_norm",
        lambda m, x: m.nn.functional.local_response_norm(x, 3, alpha=0.5, k=2.0),
        shapes="volume",
        check_shapes=((2, 3, 2, 2, 3),),
    ),
    Op(
        "local_response_norm_2d",
        lambda m, x: m.nn.functional.local_response_norm(x, 2),
        shapes="image",
        check_shapes=((2, 3, 3, 3),),
    ),
    Op(
        "channel_shuffle",
        lambda m, x: m.nn.functional.channel_shuffle(m.cat([x, x * 2, x * 3], 1), 3),
        shapes="image",
        check_shapes=((2, 2, 3, 3),),
    ),
    Op(
        "pixel_shuffle",
        lambda m, x: m.nn.functional.pixel_shuffle(m.cat([x, x * 2, -x, x.exp()], -3), 2),
        shapes="image",
        check_shapes=((2, 2, 3, 3),),
    ),
    Op(
        "pixel_unshuffle",
        lambda m, x: m.nn.functional.pixel_unshuffle(x[..., :2, :2], 2),
        shapes="image",
        check_shapes=((2, 2, 3, 3),),
    ),
    Op("pdist", lambda m, x: m.nn.functional.pdist(x), shapes="nonempty_matrix"),
    Op("pdist_p1", lambda m, x: m.nn.functional.pdist(x, p=1.0), shapes="nonempty_matrix"),
    Op(
        "instance_norm",
        lambda m, x: m.nn.functional.instance_norm(x),
        shapes="image",
        domain=spread,
        check_shapes=((2, 2, 3, 4),),
    ),
    Op(
        "pad_reflect_2d",
        lambda m, x: m.nn.functional.pad(x, (1, 2, 2, 0), "reflect"),
        shapes="image",
        check_shapes=((2, 1, 3, 4),),
    ),
    Op(
        "pad_replicate_3d",
        lambda m, x: m.nn.functional.pad(x, (1, 0, 2, 1, 0, 1), "replicate"),
        shapes="volume",
        check_shapes=((1, 2, 2, 3, 2),),
    ),
    Op(
        "pad_circular_2d",
        lambda m, x: m.nn.functional.pad(x, (2, 1, 0, 3), "circular"),
        shapes="image",
        check_shapes=((2, 1, 3, 4),),
    ),
    Op(  # negative widths crop
        "pad_constant_crop",
        lambda m, x: m.nn.functional.pad(x, (-1, 2, 1, -2), value=0.5),
        shapes="image",
        check_shapes=((2, 1, 3, 4),),
    ),
    same_pair("l1_loss", lambda m, x, y: m.nn.functional.l1_loss(x, y * 3)),
    same_pair(
        "soft_margin_loss",
        lambda m, x, y: m.nn.functional.soft_margin_loss(x, _signs(m, y)),
    ),
    same_pair(
        "poisson_nll_loss",
        lambda m, x, y: m.nn.functional.poisson_nll_loss(x, y, reduction="sum"),
        domain=(real, positive),
    ),
    same_pair(
        "poisson_nll_loss_full",
        lambda m, x, y: m.nn.functional.poisson_nll_loss(x, y * 2, log_input=False, full=True),
        domain=(positive, positive),
    ),
    # var a number: vmap cannot batch a tensor var yet (nn/functional.py's check reads its array)
    same_pair(
        "gaussian_nll_loss",
        lambda m, x, y: m.nn.functional.gaussian_nll_loss(x, y, 0.7, full=True),
    ),
    same_pair(
        "hinge_embedding_loss",
        lambda m, x, y: m.nn.functional.hinge_embedding_loss(x, _signs(m, y), margin=0.2),
        domain=(lambda rng, s: _two_scales(rng, s), real),
    ),
    Op(
        "multilabel_soft_margin_loss",
        lambda m, x, y: m.nn.functional.multilabel_soft_margin_loss(x, y),
        shapes="same_matrices",
        domain=(real, unit),
        check_shapes=((2, 3), (2, 3)),
    ),
    Op(
        "multi_margin_loss",
        lambda m, x: m.nn.functional.multi_margin_loss(x * 3, _labels(m, x), margin=0.5),
        shapes="nonempty_matrix",
    ),
    # ---- rows: nn additions ----
    # log_softmax first: PyTorch's CTC gradient is right only through it (see nn/ctc.py)
    Op(  # vmap=False: torch.func.vmap of PyTorch's ctc_loss fails ("doesn't have storage")
        "ctc_loss",
        lambda m, x: _ctc(m, x),
        shapes="signal",
        check_shapes=((4, 2, 3),),
        vmap=False,
    ),
    Op(
        "ctc_loss_sum_blank_last",
        lambda m, x: _ctc(m, x, reduction="sum", blank=-1),
        shapes="signal",
        check_shapes=((4, 3),),
    ),
    Op(
        "ctc_loss_none_zero_infinity",
        lambda m, x: _ctc(m, x, reduction="none", zero_infinity=True, too_long=True),
        shapes="signal",
        check_shapes=((3, 2, 4),),
    ),
    Op(
        "multilabel_margin_loss",
        lambda m, x: m.nn.functional.multilabel_margin_loss(x * 2, _multilabels(m, x)),
        shapes="nonempty_matrix",
        check_shapes=((3, 4),),
    ),
    Op(
        "multilabel_margin_loss_none",
        lambda m, x: m.nn.functional.multilabel_margin_loss(
            x * 2, _multilabels(m, x), reduction="none"
        ),
        shapes="nonempty_matrix",
        check_shapes=((4, 3),),
    ),
    Op(
        "triplet_margin_with_distance_loss",
        lambda m, a, p, n: m.nn.functional.triplet_margin_with_distance_loss(a, p, n, margin=2.0),
        shapes="same_triple",
        check_shapes=((2, 3),) * 3,
    ),
    Op(  # a distance of the caller's: the squared Euclidean one
        "triplet_margin_with_distance_loss_swap",
        lambda m, a, p, n: m.nn.functional.triplet_margin_with_distance_loss(
            a,
            p,
            n,
            distance_function=lambda x, y: ((x - y) * (x - y)).sum(-1),
            margin=3.0,
            swap=True,
            reduction="sum",
        ),
        shapes="same_triple",
        check_shapes=((2, 3),) * 3,
    ),
    # ---- complex numbers: real in and out, complex between (tests/test_complex.py for more) ----
    binary("polar", lambda m, x, y: m.view_as_real(m.polar(x, y)), (away_from_zero, real)),
    binary("complex", lambda m, x, y: m.view_as_real(m.complex(x, y))),
    binary(
        "complex_mul_div",
        lambda m, x, y: m.view_as_real(m.complex(x, y) * m.complex(y, x * x) / m.complex(x, -y)),
        (away_from_zero, away_from_zero),
    ),
    binary("complex_angle", lambda m, x, y: m.complex(x, y).angle(), (positive, real)),
    binary("complex_abs", lambda m, x, y: m.complex(x, y).abs(), (away_from_zero, real)),
    Op(
        "view_as_complex",
        lambda m, x: (m.view_as_complex(m.stack([x, x.sin()], -1)) * (1 - 2j)).imag,
        vmap=False,  # its checks read the strides, which a batched tensor has not
    ),
]


def _ctc(m, x, blank=0, too_long=False, **kw):
    """``ctc_loss`` of log_softmax(x), x (T, N, C) or (T, C), T and C at least 3: targets of
    up to 2 labels (other than ``blank``), lengths varying over the batch; ``too_long``: a
    first sequence of T + 1 labels, which no alignment fits (an infinite loss)."""
    steps, classes = x.shape[0], x.shape[-1]
    batch = x.shape[1] if x.ndim == 3 else 1
    blank %= classes
    width = steps + 1 if too_long else 2
    labels = (m.arange(batch * width) % (classes - 1) + (blank + 1)) % classes
    target_lengths = [width if too_long and n == 0 else 2 - n % 3 for n in range(batch)]
    input_lengths = [steps - n % 2 for n in range(batch)]
    if x.ndim == 2:
        labels, input_lengths, target_lengths = labels, m.tensor(steps), m.tensor(width)
    else:
        labels = labels.reshape(batch, width)
    log_probs = m.nn.functional.log_softmax(x, -1)
    return m.nn.functional.ctc_loss(log_probs, labels, input_lengths, target_lengths, blank, **kw)


def _multilabels(m, x):
    """Targets for (N, C) scores: sample n lists 1 + n % 2 classes ((n + 2k) % C, a class twice
    where C is 2), then -1, then more classes, which are not read."""
    k = m.arange(x.shape[1])
    n = m.arange(x.shape[0]).reshape(-1, 1)
    return m.where(k == 1 + n % 2, -1, (n + 2 * k) % x.shape[1])


def _labels(m, x):
    """Class indices for (N, C) logits: every class in turn."""
    return m.arange(x.shape[0]) % x.shape[1]


def _signs(m, x):
    """Targets 1, -1, 1, ... over the entries of x, in its shape and dtype."""
    return (1 - m.arange(x.numel()) % 2 * 2).reshape(x.shape).to(x.dtype)


def _ramp(m, x):
    """Weights 0.5, 0.75, 1.0, ... over the entries of x (in its dtype), wrapping after 2.0."""
    return (m.arange(x.numel(), dtype=x.dtype) % 7 * 0.25 + 0.5).reshape(x.shape)


def _pad(m, x):
    """The same padding in both libraries: scratchgrad's Tensor.pad takes NumPy widths."""
    if m.__name__ == "torch":
        return m.nn.functional.pad(x, (1, 2), value=0.5)
    return x.pad([(0, 0)] * (x.ndim - 1) + [(1, 2)], value=0.5)


def _index_add_all(m, x, d):
    """``x`` added onto its own first entry along the dim ``d``: the index's length is that
    dim's size, found by a dim that is always valid, so that ``index_add`` checks ``d``."""
    size = x.shape[d % x.ndim] if x.ndim else 1
    return x.index_add(d, m.zeros(size, dtype=m.int64), x)


# ---- helpers of the rows: grid sampling, linalg, pooling, nn composites ----


def _grid(m, x):
    """A sampling grid for the image (or volume) x: (N, *spatial, 2 or 3) points made from x's
    first and last channels, reaching a little past [-1, 1] (into the padding)."""
    planes = [x[:, 0].tanh(), x[:, -1].sin(), (x[:, 0] * x[:, -1]).tanh()]
    return m.stack(planes[: x.ndim - 2], -1) * 1.1


def _ramp_diagonal(m, x):
    """3c * diag(1, 2, ..., n) for x (*, n, k), where c = 1 + |x|^2 bounds |x y^T| for the
    x-like y below: added to such a product, it keeps the eigen- and singular values in
    [3ic - c, 3ic + c], well apart (the gradients of eigh and svd divide by their gaps) and
    at least 2c (inverses and solves are well-conditioned)."""
    c = 1 + (x * x).sum((-2, -1), keepdim=True)
    return 3 * c * m.arange(1, x.shape[-2] + 1, dtype=x.dtype).diag_embed()


def _square(m, x):
    """A non-symmetric, well-conditioned n x n matrix from x (*, n, k) (see _ramp_diagonal)."""
    return x @ x.flip(-2).mT + _ramp_diagonal(m, x)


def _spd(m, x):
    """A symmetric positive-definite n x n matrix from x (*, n, k) (see _ramp_diagonal)."""
    return x @ x.mT + _ramp_diagonal(m, x)


def _indefinite(m, x):
    """A symmetric n x n matrix from x (*, n, k) with eigenvalues of both signs, each at least
    c / 2 from 0: _spd's, in [3ic - c, 3ic + c], less 3c (n // 2 + 1 / 2)."""
    c = 1 + (x * x).sum((-2, -1), keepdim=True)
    n = x.shape[-2]
    return _spd(m, x) - 3 * (n // 2 + 0.5) * c * m.eye(n, dtype=x.dtype)


def _tall(m, x):
    """A well-conditioned (n + k) x n matrix: rows added to _square only raise its singular
    values."""
    return m.cat([_square(m, x), x.mT], -2)


def _reflector_scales(a, x):
    """Scales tau for the reflectors I - tau v v^T below the diagonal of ``a`` (v: 1, then the
    column under it), from the rows of x, each making a reflector's one eigenvalue other than 1,
    1 - tau |v|^2, lie in [-1.5, -0.5] (-1: orthogonal, as from a QR), so that each reflector
    and their product are well-conditioned. PyTorch's float32 gradient loses the digits that
    its backward's inverse of each reflector amplifies: with tau = tanh(row sums), eigenvalues
    of 1e-4 (or 142, |v| = 12) left it up to 4.5e-4 (1.9e-4) of the gradient's largest entry
    off float64's, ours within 1.1e-7, in 29 of 10^4 examples."""
    below = a.tril(-1)
    return (2 + 0.5 * x.sum(-1).tanh()) / (1 + (below * below).sum(-2))


def _svd_parts(m, a):
    """The reduced SVD of ``a`` as one tensor: |U|, S and |Vh| (the singular vectors are
    defined up to sign) flattened side by side."""
    u, s, vh = m.linalg.svd(a, full_matrices=False)
    return m.cat([u.abs().flatten(-2), s, vh.abs().flatten(-2)], -1)


def _two_scales(rng, shape):
    """|x| in (0.03, 0.15) or (0.3, 1.5), either sign: none near thresholds of 0.2."""
    return away_from_zero(rng, shape) * rng.choice([0.1, 1.0], shape)
