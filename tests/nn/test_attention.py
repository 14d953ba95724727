"""Attention against PyTorch: F.scaled_dot_product_attention over a grid of masks and options
(forward, every gradient, gradcheck), and MultiheadAttention and the Transformer layers with
the same weights (PyTorch's state_dict copied into ours), dropout off, over grids of options:
outputs, the gradient of every input and of every parameter, float64 tight and float32 loose."""

import doctest
import warnings

import numpy as np
import pytest
import torch
from oracle import (
    DTYPES,
    assert_close,
    assert_raises_as_torch,
    check_outputs_and_gradients,
    leaves,
    module_pair,
    parameter_pairs,
)

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import functional as F

# ---- scaled_dot_product_attention -----------------------------------------------------------


def _mask(kind, rng, length, source):
    if kind == "bool":
        allowed = rng.random((length, source)) > 0.4
        allowed[:, 0] = True  # every query sees a key
        return allowed
    if kind == "bool_empty_row":
        allowed = rng.random((length, source)) > 0.4
        allowed[1] = False  # a query that sees nothing: zeros, as PyTorch
        return allowed
    if kind == "float":
        return rng.standard_normal((1, length, source))
    if kind == "float_neg_inf":
        bias = np.where(rng.random((length, source)) > 0.5, 0.0, -np.inf)
        bias[:, -1] = 0.0
        return bias
    return None


SDPA_CASES = [
    ("plain", {}, None, (2, 3, 4, 5), 6),
    ("causal", {"is_causal": True}, None, (2, 3, 5, 4), 5),
    ("causal_rectangular", {"is_causal": True}, None, (1, 2, 3, 4), 6),
    ("bool_mask", {}, "bool", (2, 2, 4, 3), 5),
    ("bool_mask_empty_row", {}, "bool_empty_row", (2, 2, 4, 3), 5),
    ("float_mask", {}, "float", (2, 2, 4, 3), 5),
    ("float_mask_neg_inf", {}, "float_neg_inf", (3, 4, 3), 5),
    ("scale", {"scale": 0.3}, None, (2, 4, 3), 3),
    ("unbatched", {}, None, (4, 3), 5),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("kwargs", "mask", "shape", "source"), [c[1:] for c in SDPA_CASES],
                         ids=[c[0] for c in SDPA_CASES])  # fmt: skip
def test_scaled_dot_product_attention_matches_torch(kwargs, mask, shape, source, dtype):
    rng = np.random.default_rng(0)
    *lead, length, dim = shape
    arrays = [
        rng.standard_normal(shape),
        rng.standard_normal((*lead, source, dim)),
        rng.standard_normal((*lead, source, dim + 1)),  # the value dim may differ
    ]
    inputs = [leaves(a, dtype) for a in arrays]
    ours_kw, torch_kw = dict(kwargs), dict(kwargs)
    if mask is not None:
        m = _mask(mask, rng, length, source)
        sm, tm = leaves(m, dtype, False)
        ours_kw["attn_mask"], torch_kw["attn_mask"] = sm, tm
    out = F.scaled_dot_product_attention(*(x for x, _ in inputs), **ours_kw)
    expected = torch.nn.functional.scaled_dot_product_attention(*(t for _, t in inputs), **torch_kw)
    check_outputs_and_gradients(out, expected, inputs, dtype, "sdpa")


def test_scaled_dot_product_attention_grouped_heads_match_torch():
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((2, 4, 3, 5)), *rng.standard_normal((2, 2, 2, 6, 5))]
    inputs = [leaves(a) for a in arrays]
    out = F.scaled_dot_product_attention(*(x for x, _ in inputs), is_causal=True, enable_gqa=True)
    expected = torch.nn.functional.scaled_dot_product_attention(
        *(t for _, t in inputs), is_causal=True, enable_gqa=True
    )
    check_outputs_and_gradients(out, expected, inputs, "float64", "gqa")


@pytest.mark.parametrize("mask", [None, "bool_empty_row", "float"])
def test_scaled_dot_product_attention_gradcheck(mask):
    rng = np.random.default_rng(2)
    q, k, v = (sg.tensor(rng.standard_normal(s), dtype=sg.float64, requires_grad=True)
               for s in [(2, 3, 2), (2, 4, 2), (2, 4, 3)])  # fmt: skip
    attn_mask = None if mask is None else sg.tensor(_mask(mask, rng, 3, 4))
    attn_mask = attn_mask if mask != "float" else attn_mask.double()

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask)

    assert sg.autograd.gradcheck(attend, (q, k, v))
    assert sg.autograd.gradgradcheck(attend, (q, k, v))


def test_jitted_attention_reads_each_calls_bool_mask():
    """A bool mask is made into its bias by a Tensor op, and the rows it empties are found at
    every call: a jitted step given another mask (one that empties a row) equals eager, bit
    for bit, output and gradients."""
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((2, 4, 3)).astype(np.float32) for _ in range(3)]

    def step(mask):
        q, k, v = (sg.tensor(a, requires_grad=True) for a in arrays)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        out.square().sum().backward()
        return out, q.grad, k.grad, v.grad

    jitted = sg.jit(step)
    tril = np.tril(np.ones((4, 4), bool))
    for allowed in (tril, tril, _mask("bool_empty_row", rng, 4, 4), ~tril | np.eye(4, dtype=bool)):
        expected, got = step(sg.tensor(allowed)), jitted(sg.tensor(allowed))
        for e, g in zip(expected, got):
            np.testing.assert_array_equal(g.detach().numpy(), e.detach().numpy())


def test_scaled_dot_product_attention_dropout_and_errors():
    q = sg.randn(2, 8, 4)
    sg.manual_seed(0)
    dropped = F.scaled_dot_product_attention(q, q, sg.ones(2, 8, 4), dropout_p=0.5)
    kept = {round(v, 4) for v in dropped.flatten().tolist()}
    assert kept != {1.0} and len(kept) > 1  # rows of the weights lost entries (and rescaled)
    with pytest.raises(RuntimeError, match="attn_mask should not be set when is_causal"):
        F.scaled_dot_product_attention(q, q, q, sg.ones(8, 8).bool(), is_causal=True)
    with pytest.raises(RuntimeError, match="attn_mask dtype to be bool or float .* int64"):
        F.scaled_dot_product_attention(q, q, q, sg.zeros(8, 8, dtype=sg.int64))


# A mask with is_causal: PyTorch's CPU flash kernel applies both (4-d inputs of one batch, head
# count and head dim, a 2-d or 4-d mask, no dropout); its math kernel, for the rest, refuses them
# (query, key, value shapes; mask shape; other options)
MASK_AND_CAUSAL = {
    "float_mask": ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5), (4, 6), {}),
    "bool_mask_4d": ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5), (2, 1, 4, 6), {"bool": True}),
    "empty_rows": ((1, 2, 4, 3), (1, 2, 4, 3), (1, 2, 4, 3), (4, 4), {"bool": True}),
    "grouped_heads": ((2, 4, 4, 5), (2, 2, 6, 5), (2, 2, 6, 5), (4, 6), {"enable_gqa": True}),
    "3d": ((3, 4, 5), (3, 6, 5), (3, 6, 5), (4, 6), {}),
    "3d_mask": ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5), (3, 4, 6), {}),
    "value_dim": ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7), (4, 6), {}),
    "broadcast_batch": ((2, 3, 4, 5), (1, 3, 6, 5), (1, 3, 6, 5), (4, 6), {}),
    "dropout": ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5), (4, 6), {"dropout_p": 0.5}),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", MASK_AND_CAUSAL)
def test_a_mask_with_is_causal_is_computed_or_refused_as_pytorch(case, dtype):
    *shapes, mask_shape, options = MASK_AND_CAUSAL[case]
    rng = np.random.default_rng(0)
    inputs = [leaves(rng.standard_normal(shape), dtype) for shape in shapes]
    options = dict(options)
    mask = (
        rng.random(mask_shape) > 0.4 if options.pop("bool", False) else rng.normal(size=mask_shape)
    )
    masks = leaves(mask, dtype, False)

    def call(lib):
        which = 0 if lib is sg else 1
        return lib.nn.functional.scaled_dot_product_attention(
            *(pair[which] for pair in inputs), masks[which], is_causal=True, **options
        )

    try:
        expected = call(torch)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="attn_mask should not be set when is_causal"):
            call(sg)
        return
    check_outputs_and_gradients(call(sg), expected, inputs, dtype, "sdpa")


EMPTY_ATTENTION = {  # query, key, value shapes, and options PyTorch's early return leaves unread
    "no_keys_bad_mask": ((1, 2, 3), (1, 0, 3), (1, 0, 3), {"attn_mask": (3, 5)}),
    "no_queries_causal_mask": ((1, 0, 3), (1, 2, 3), (1, 2, 3), {"attn_mask": (0, 2)}),
    "no_value_dims_causal_mask": ((1, 2, 3), (1, 2, 3), (1, 2, 0), {"attn_mask": (2, 2)}),
    "no_batch_1d_mask": ((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3), {"attn_mask": (2,)}),
    "gqa_2d_no_queries": ((0, 1), (0, 1), (0, 0), {"enable_gqa": True}),
    "broadcast_batch": ((2, 1, 2, 3), (1, 1, 0, 3), (1, 1, 0, 4), {}),
}


@pytest.mark.parametrize("case", EMPTY_ATTENTION)
def test_attention_with_no_keys_or_an_empty_result_gives_zeros_as_pytorch(case):
    """PyTorch returns zeros (and zero gradients) without reading the mask or is_causal where
    there is no key or the result is empty (ours refused masks of any other shape, and
    is_causal with a mask)."""
    *shapes, options = EMPTY_ATTENTION[case]
    rng = np.random.default_rng(0)
    inputs = [leaves(rng.standard_normal(shape)) for shape in shapes]
    mask = options.pop("attn_mask", None)
    masks = leaves(None if mask is None else np.ones(mask, bool))
    options["is_causal"] = mask is not None and case != "no_batch_1d_mask"
    out, expected = (
        lib.nn.functional.scaled_dot_product_attention(*(p[i] for p in inputs), masks[i], **options)
        for i, lib in enumerate((sg, torch))
    )
    check_outputs_and_gradients(out, expected, inputs)


def test_attention_over_query_vectors_of_no_dims_averages_the_values_as_pytorch():
    # (a scale of 1 / sqrt(0): ours raised ZeroDivisionError)
    rng = np.random.default_rng(0)
    inputs = [leaves(rng.standard_normal(shape)) for shape in ((2, 0), (3, 0), (3, 4))]
    out, expected = (
        lib.nn.functional.scaled_dot_product_attention(*(p[i] for p in inputs))
        for i, lib in enumerate((sg, torch))
    )
    check_outputs_and_gradients(out, expected, inputs)


def test_grouped_heads_of_2d_inputs_raise_index_error_as_pytorch():
    assert_raises_as_torch(
        lambda lib: lib.nn.functional.scaled_dot_product_attention(
            *[lib.ones(2, 3)] * 3, enable_gqa=True
        ),
        IndexError,
        "enable_gqa needs a head dim",
    )


@pytest.mark.parametrize(("shape", "mask_shape"), [((1, 1, 2, 3), (2,)), ((2, 2, 2, 3), ())])
def test_a_mask_below_2_dims_on_4d_inputs_raises_index_error_as_pytorch(shape, mask_shape):
    # PyTorch's choice of kernel reads the mask's dim -2 (ours broadcast the mask)
    def call(lib):
        q = lib.ones(shape, dtype=lib.float64)
        mask = lib.ones(mask_shape, dtype=lib.bool)
        return lib.nn.functional.scaled_dot_product_attention(q, q, q, mask, is_causal=True)

    assert_raises_as_torch(call, IndexError, "attn_mask of shape .* has no dim -2")


def test_a_mask_below_2_dims_on_other_inputs_broadcasts_as_pytorch():
    rng = np.random.default_rng(0)
    inputs = [leaves(rng.standard_normal((1, 2, 3))) for _ in range(3)]
    masks = leaves(rng.standard_normal(2), requires_grad=False)
    out, expected = (
        lib.nn.functional.scaled_dot_product_attention(*(p[i] for p in inputs), masks[i])
        for i, lib in enumerate((sg, torch))
    )
    check_outputs_and_gradients(out, expected, inputs)


@pytest.mark.parametrize("shape", [(2, 4, 3), (1, 2, 4, 3)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_float32_mask_on_16_bit_inputs_gives_16_bit_attention_as_pytorch(dtype, shape):
    rng = np.random.default_rng(0)
    q, mask = rng.standard_normal(shape), rng.standard_normal((4, 4))
    outs = []
    for lib in (sg, torch):
        x = lib.tensor(q, dtype=getattr(lib, dtype))
        out = lib.nn.functional.scaled_dot_product_attention(x, x, x, lib.tensor(mask).float())
        outs.append((str(out.dtype).split(".")[-1], out.float().numpy()))
    (ours, ours_values), (theirs, their_values) = outs
    assert ours == theirs == dtype
    np.testing.assert_allclose(ours_values, their_values, atol=3e-2)


# ---- modules: the same weights in both libraries --------------------------------------------


def _pair(build, dtype):
    """The module in both libraries, every parameter random, biases included (torch starts them
    at 0)."""
    return module_pair(build, dtype, init=lambda p: p.normal_(0, 0.3))


def _padding(rng, batch, source, kind):
    if kind is None:
        return None
    padded = rng.random((batch, source)) > 0.6
    padded[:, 0] = False  # every sequence has a key left
    return padded if kind == "bool" else np.where(padded, -1e9, 0.0)


MHA_CASES = [
    ("self", {}, {}),
    ("batch_first", {"batch_first": True}, {}),
    ("no_bias", {"bias": False}, {}),
    ("kdim_vdim", {"kdim": 3, "vdim": 5}, {}),
    ("bool_masks", {}, {"attn_mask": "bool", "key_padding_mask": "bool"}),
    ("float_masks_per_head", {}, {"attn_mask": "float3d", "key_padding_mask": "float"}),
    ("per_head_weights", {"batch_first": True}, {"average_attn_weights": False}),
    ("no_weights_masks", {}, {"need_weights": False, "attn_mask": "bool"}),
    ("causal_hint", {}, {"attn_mask": "causal", "is_causal": True, "need_weights": False}),
    ("unbatched", {}, {"unbatched": True, "key_padding_mask": "bool"}),
    ("bias_kv", {"add_bias_kv": True}, {"attn_mask": "bool", "key_padding_mask": "bool"}),
    ("zero_attn", {"add_zero_attn": True, "batch_first": True}, {"key_padding_mask": "float"}),
    (
        "bias_kv_zero_attn_per_head",
        {"add_bias_kv": True, "add_zero_attn": True},
        {"attn_mask": "float3d", "need_weights": False},
    ),
    (
        "bias_kv_zero_attn_unbatched",
        {"add_bias_kv": True, "add_zero_attn": True},
        {"unbatched": True, "key_padding_mask": "bool", "average_attn_weights": False},
    ),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("options", "call"), [c[1:] for c in MHA_CASES],
                         ids=[c[0] for c in MHA_CASES])  # fmt: skip
def test_multihead_attention_matches_torch(options, call, dtype):
    embed, heads, batch, length, source = 4, 2, 3, 4, 5
    ours, theirs = _pair(lambda nn: nn.MultiheadAttention(embed, heads, **options), dtype)
    rng = np.random.default_rng(3)
    call = dict(call)
    unbatched = call.pop("unbatched", False)

    def shaped(n, features):
        if unbatched:
            return (n, features)
        return (batch, n, features) if options.get("batch_first") else (n, batch, features)

    kdim, vdim = options.get("kdim", embed), options.get("vdim", embed)
    arrays = [rng.standard_normal(shaped(length, embed)), rng.standard_normal(shaped(source, kdim))]
    arrays.append(rng.standard_normal(shaped(source, vdim)))
    inputs = [leaves(a, dtype) for a in arrays]
    ours_kw, torch_kw = {}, {}
    masks = {
        "bool": lambda: rng.random((length, source)) > 0.7,
        "float3d": lambda: rng.standard_normal((batch * heads, length, source)),
        "causal": lambda: np.triu(np.ones((length, source), bool), 1),
    }
    for name, value in call.items():
        if name == "attn_mask":
            value = masks[value]()
        elif name == "key_padding_mask":
            value = _padding(rng, 1 if unbatched else batch, source, value)
            value = value[0] if unbatched else value
        if isinstance(value, np.ndarray):
            ours_kw[name], torch_kw[name] = leaves(value, dtype, False)
        else:
            ours_kw[name] = torch_kw[name] = value
    out = ours(*(x for x, _ in inputs), **ours_kw)
    expected = theirs(*(t for _, t in inputs), **torch_kw)
    check_outputs_and_gradients(out, expected, inputs, dtype, "mha", parameter_pairs(ours, theirs))


def test_multihead_attention_init_and_errors():
    mha = nn.MultiheadAttention(6, 3)
    assert [name for name, _ in mha.named_parameters()] == [
        "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"
    ]  # fmt: skip
    assert not mha.in_proj_bias.detach().numpy().any()
    assert not mha.out_proj.bias.detach().numpy().any()
    bound = np.sqrt(6 / (6 + 18))  # xavier_uniform_ on the (18, 6) in_proj_weight
    assert np.abs(mha.in_proj_weight.detach().numpy()).max() <= bound
    with pytest.raises(ValueError, match="divisible by num_heads"):
        nn.MultiheadAttention(5, 2)
    x = sg.randn(2, 1, 6)
    with pytest.raises(RuntimeError, match="need attn_mask if specifying the is_causal hint"):
        mha(x, x, x, is_causal=True)
    with pytest.raises(AssertionError, match="key_padding_mask of shape"):  # (PyTorch's type)
        mha(x, x, x, key_padding_mask=sg.zeros(2, 2).bool())
    # PyTorch's AssertionError for an integer mask (read as a float bias it would add 0 or 1),
    # the padding mask checked first
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask"):
        mha(x, x, x, attn_mask=sg.zeros(2, 2, dtype=sg.int64))
    for need_weights in (True, False):
        with pytest.raises(AssertionError, match="types of key_padding_mask .* got int32"):
            mha(x, x, x, sg.zeros(1, 2, dtype=sg.int32), need_weights, sg.zeros(2, 2).long())


def test_multihead_attention_bias_kv_parameters_as_torch():
    """The learned key and value are parameters named and shaped as PyTorch's, Xavier-normal
    (std sqrt(2 / (E + E)) for the (1, 1, E) shape); without ``add_bias_kv`` they are None."""
    ours, theirs = (
        nn.MultiheadAttention(64, 4, add_bias_kv=True),
        torch.nn.MultiheadAttention(64, 4, add_bias_kv=True),
    )
    shapes = [(name, tuple(p.shape)) for name, p in ours.named_parameters()]
    assert shapes == [(name, tuple(p.shape)) for name, p in theirs.named_parameters()]
    spread = np.concatenate([ours.bias_k.detach().numpy(), ours.bias_v.detach().numpy()]).std()
    assert 0.08 < spread < 0.17  # 0.125 expected
    assert nn.MultiheadAttention(4, 2).bias_k is None


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("padding", [False, True])
def test_the_is_causal_hint_replaces_the_mask_where_pytorch_s_does(need_weights, padding):
    """Without weights to return or a padding mask to merge, PyTorch's ``is_causal`` replaces
    ``attn_mask`` (unread: a wrong one is not refused) by scaled_dot_product_attention's causal
    mask over every key, the zero one included; otherwise the mask counts (ours always read
    the mask, so a wrong one raised and the zero key was attended to)."""
    build = lambda nn: nn.MultiheadAttention(4, 2, add_zero_attn=True)  # noqa: E731
    ours, theirs = _pair(build, "float64")
    rng = np.random.default_rng(0)
    inputs = [leaves(rng.standard_normal((3, 2, 4)))]
    mask = np.triu(np.ones((3, 3), bool), 1)
    mask[0, 0] = padding  # not causal; when read with the padding, a row is left a key
    masks = leaves(mask if need_weights or padding else mask[:2])
    pads = leaves(np.array([[False, False, True], [False, True, False]]) if padding else None)
    out, expected = (
        module(*[p[i] for p in inputs] * 3, pads[i], need_weights, masks[i], is_causal=True)
        for i, module in enumerate((ours, theirs))
    )
    check_outputs_and_gradients(out, expected, inputs, params=parameter_pairs(ours, theirs))


def test_multihead_attention_all_padded_gives_nan_weights_and_zero_sdpa_output_as_torch():
    ours, theirs = _pair(lambda nn: nn.MultiheadAttention(4, 2, batch_first=True), "float64")
    x = np.random.default_rng(4).standard_normal((2, 3, 4))
    padded = np.array([[False, False, True], [True, True, True]])
    for need_weights in (True, False):
        out, _ = ours(*[sg.tensor(x)] * 3, sg.tensor(padded), need_weights=need_weights)
        expected, _ = theirs(*[torch.tensor(x)] * 3, torch.tensor(padded), need_weights)
        assert_close(out, expected, "float64", f"need_weights={need_weights}")
        assert np.isnan(out.detach().numpy()[1]).all() == need_weights


@pytest.mark.parametrize("floats", [False, True], ids=["bool_masks", "float_masks"])
@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("layer", [False, True], ids=["attention", "encoder_layer"])
def test_pytorch_s_fast_path_gives_nan_where_every_key_is_masked(layer, grad, floats):
    """In eval mode with no gradient to record, PyTorch's self-attention (with bool masks)
    and its encoder layer (with any) run fused kernels that give NaN for a query whose every
    key is masked, even without ``need_weights``, and read the mask whatever ``is_causal``
    says; elsewhere, zeros (ours gave zeros always)."""

    def build(nn):
        if layer:
            return nn.TransformerEncoderLayer(4, 2, 6, 0.0, batch_first=True, norm_first=True)
        return nn.MultiheadAttention(4, 2, batch_first=True)

    ours, theirs = (m.eval() for m in _pair(build, "float64"))
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    padded = np.array([[False, False, True], [True, True, True]])
    mask = np.array([[False, True, True], [True, True, True], [False, False, False]])
    if floats:
        padded, mask = (np.where(m, -np.inf, 0.0) for m in (padded, mask))
    results = []
    for lib, module in ((sg, ours), (torch, theirs)):
        src = lib.tensor(x, requires_grad=grad)
        with lib.set_grad_enabled(grad):
            if layer:
                results.append(module(src, lib.tensor(mask), lib.tensor(padded), is_causal=True))
            else:
                masks = {"key_padding_mask": lib.tensor(padded), "attn_mask": lib.tensor(mask)}
                results.append(module(src, src, src, need_weights=False, **masks)[0])
    assert_close(*results)
    assert np.isnan(results[0].detach().numpy()[1]).all() == (not grad and (layer or not floats))


def test_the_encoder_layer_fast_path_adds_a_float_mask_as_a_bias():
    """README, "What is different": PyTorch's fused layer masks out a float mask's nonzero
    entries; ours adds them, with or without a gradient to record, as PyTorch's other path."""
    build = lambda nn: nn.TransformerEncoderLayer(4, 2, 6, 0.0, batch_first=True)  # noqa: E731
    ours, theirs = (m.eval() for m in _pair(build, "float64"))
    x = np.random.default_rng(0).standard_normal((1, 3, 4))
    bias = np.array([[0.0, 0.5, -1.0], [0.0, 0.0, 0.0], [2.0, 0.0, 0.0]])
    with sg.no_grad():
        fast = ours(sg.tensor(x), sg.tensor(bias))
    expected = theirs(torch.tensor(x, requires_grad=True), torch.tensor(bias))
    assert_close(fast, expected)


# The functional's options: (name, its keyword arguments and switches).
MHA_FORWARD_CASES = [
    ("packed", {}),
    ("unbatched", {"unbatched": True}),
    ("separate_weights", {"separate": True}),
    ("no_bias", {"no_bias": True}),
    ("bias_kv_zero_attn", {"bias_kv": True, "add_zero_attn": True}),
    ("masks", {"attn_mask": "bool", "key_padding_mask": True}),
    ("float_mask_3d", {"attn_mask": "float3d", "average_attn_weights": False}),
    ("no_weights_masks", {"need_weights": False, "attn_mask": "bool", "key_padding_mask": True}),
    ("static_kv_zero_attn", {"static": True, "add_zero_attn": True}),
    ("eval_dropout", {"dropout_p": 0.5, "training": False}),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("options", [c[1] for c in MHA_FORWARD_CASES],
                         ids=[c[0] for c in MHA_FORWARD_CASES])  # fmt: skip
def test_multi_head_attention_forward_matches_torch(options, dtype):
    """The functional with the same weights and inputs in both libraries: outputs (the
    attention and its weights) and the gradients of every input and weight."""
    options = dict(options)
    rng = np.random.default_rng(3)
    length, source, batch, embed, heads = 4, 5, 2, 6, 3
    shape = (length, embed) if options.pop("unbatched", False) else (length, batch, embed)
    kv_shape = (source, *shape[1:])
    arrays = {
        "query": rng.standard_normal(shape),
        "key": rng.standard_normal(kv_shape),
        "value": rng.standard_normal(kv_shape),
        "out_proj_weight": rng.standard_normal((embed, embed)) / 3,
        "out_proj_bias": rng.standard_normal(embed),
    }
    if options.pop("separate", False):
        for name in ("q", "k", "v"):
            arrays[f"{name}_proj_weight"] = rng.standard_normal((embed, embed)) / 3
        options["use_separate_proj_weight"] = True
    else:
        arrays["in_proj_weight"] = rng.standard_normal((3 * embed, embed)) / 3
    if not options.pop("no_bias", False):
        arrays["in_proj_bias"] = rng.standard_normal(3 * embed)
    if options.pop("bias_kv", False):
        arrays["bias_k"], arrays["bias_v"] = rng.standard_normal((2, 1, 1, embed))
    if options.pop("static", False):
        arrays["static_k"], arrays["static_v"] = rng.standard_normal((2, batch * heads, source, 2))
    masks = {}
    kind = options.pop("attn_mask", None)
    if kind == "bool":
        masks["attn_mask"] = ~_mask("bool", rng, length, source)
    elif kind == "float3d":
        masks["attn_mask"] = rng.standard_normal((batch * heads, length, source))
    if options.pop("key_padding_mask", False):
        masks["key_padding_mask"] = np.zeros((batch, source), bool)
        masks["key_padding_mask"][0, 1:3] = True
    results, pairs = [], []
    for m in (sg, torch):
        tensors = {k: m.tensor(a.astype(dtype), requires_grad=True) for k, a in arrays.items()}
        given = {k: m.tensor(a.astype(dtype) if a.dtype != bool else a) for k, a in masks.items()}
        fixed = {k: tensors.get(k) for k in ("in_proj_weight", "in_proj_bias", "bias_k", "bias_v")}
        results.append(
            m.nn.functional.multi_head_attention_forward(
                tensors["query"], tensors["key"], tensors["value"], embed, heads,
                fixed["in_proj_weight"], fixed["in_proj_bias"], fixed["bias_k"], fixed["bias_v"],
                options.get("add_zero_attn", False), options.get("dropout_p", 0.0),
                tensors["out_proj_weight"], tensors["out_proj_bias"],
                **{k: v for k, v in options.items() if k not in ("add_zero_attn", "dropout_p")},
                **{k: tensors[k] for k in tensors if k.endswith("proj_weight") and k[0] in "qkv"},
                **{k: tensors[k] for k in ("static_k", "static_v") if k in tensors},
                **given,
            )
        )  # fmt: skip
        pairs.append(tensors)
    params = [(name, pairs[0][name], pairs[1][name]) for name in arrays]
    check_outputs_and_gradients(results[0], results[1], [], dtype, str(options), params)


def test_multi_head_attention_forward_errors():
    x, w = sg.randn(4, 2, 6), sg.randn(18, 6)
    args = (None, None, False, 0.0, sg.eye(6), None)
    with pytest.raises(AssertionError, match="expecting embedding dimension of 8, but got 6"):
        F.multi_head_attention_forward(x, x, x, 8, 3, w, None, *args)
    with pytest.raises(AssertionError, match="embed_dim 6 not divisible by num_heads 4"):
        F.multi_head_attention_forward(x, x, x, 6, 4, w, None, *args)
    with pytest.raises(RuntimeError, match=r"attn_mask of shape \(3, 3\) should be \(4, 4\)"):
        F.multi_head_attention_forward(x, x, x, 6, 3, w, None, *args, attn_mask=sg.ones(3, 3))
    with pytest.raises(RuntimeError, match="need attn_mask if specifying the is_causal hint"):
        F.multi_head_attention_forward(x, x, x, 6, 3, w, None, *args, is_causal=True)


@pytest.mark.parametrize("need_weights", [False, True])
def test_jitted_multihead_attention_reads_each_calls_masks(need_weights):
    """Bool masks become their biases by Tensor ops: a jitted call given other masks equals
    eager, bit for bit (replays kept the first call's masks)."""
    mha = nn.MultiheadAttention(4, 2, batch_first=True)
    x = sg.tensor(np.random.default_rng(7).standard_normal((2, 3, 4)).astype(np.float32))

    def attend(padding, mask):
        return mha(x, x, x, key_padding_mask=padding, attn_mask=mask, need_weights=need_weights)

    jitted = sg.jit(attend)
    first = np.array([[False, False, True], [False, False, False]])
    tril = np.tril(np.ones((3, 3), bool))
    for padding, allowed in ((first, tril), (first, tril), (~first, tril), (first, tril.T)):
        masks = sg.tensor(padding), sg.tensor(~allowed)
        for e, g in zip(attend(*masks), jitted(*masks)):
            if e is not None:
                np.testing.assert_array_equal(g.detach().numpy(), e.detach().numpy())


LAYER_OPTIONS = [
    ("post_norm_relu", {}),
    ("pre_norm_gelu", {"norm_first": True, "activation": "gelu"}),
    ("batch_first_no_bias", {"batch_first": True, "bias": False}),
]


def _sequences(rng, options, batch, *lengths, d_model=4):
    shape = (lambda n: (batch, n, d_model)) if options.get("batch_first") else (
        lambda n: (n, batch, d_model))  # fmt: skip
    return [rng.standard_normal(shape(n)) for n in lengths]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("masks", [False, True], ids=["no_masks", "masks"])
@pytest.mark.parametrize(
    "options", [c[1] for c in LAYER_OPTIONS], ids=[c[0] for c in LAYER_OPTIONS]
)
def test_transformer_encoder_matches_torch(options, masks, dtype):
    def build(nn):
        layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, **options)
        return nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(4))

    ours, theirs = _pair(build, dtype)
    rng = np.random.default_rng(6)
    (src,) = _sequences(rng, options, 2, 5)
    inputs = [leaves(src, dtype)]
    ours_kw, torch_kw = {}, {}
    if masks:
        mask = nn.Transformer.generate_square_subsequent_mask(5).to(DTYPES[dtype][0])
        ours_kw = {"mask": mask, "src_key_padding_mask": sg.tensor(_padding(rng, 2, 5, "bool"))}
        torch_kw = {k: torch.tensor(v.numpy()) for k, v in ours_kw.items()}
    out, expected = ours(inputs[0][0], **ours_kw), theirs(inputs[0][1], **torch_kw)
    check_outputs_and_gradients(
        out, expected, inputs, dtype, "encoder", parameter_pairs(ours, theirs)
    )


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("masks", [False, True], ids=["no_masks", "masks"])
@pytest.mark.parametrize(
    "options", [c[1] for c in LAYER_OPTIONS], ids=[c[0] for c in LAYER_OPTIONS]
)
def test_transformer_matches_torch(options, masks, dtype):
    def build(nn):
        return nn.Transformer(4, 2, 1, 2, dim_feedforward=6, dropout=0.0, **options)

    ours, theirs = _pair(build, dtype)
    rng = np.random.default_rng(7)
    inputs = [leaves(a, dtype) for a in _sequences(rng, options, 2, 5, 3)]
    ours_kw = {}
    if masks:
        ours_kw = {
            "tgt_mask": nn.Transformer.generate_square_subsequent_mask(3).to(DTYPES[dtype][0]),
            "memory_mask": sg.tensor(rng.random((3, 5)) > 0.8),
            "src_key_padding_mask": sg.tensor(_padding(rng, 2, 5, "bool")),
            "tgt_key_padding_mask": sg.tensor(_padding(rng, 2, 3, "bool")),
            "memory_key_padding_mask": sg.tensor(_padding(rng, 2, 5, "bool")),
        }
    torch_kw = {k: torch.tensor(v.numpy()) for k, v in ours_kw.items()}
    out = ours(*(x for x, _ in inputs), **ours_kw)
    expected = theirs(*(t for _, t in inputs), **torch_kw)
    check_outputs_and_gradients(
        out, expected, inputs, dtype, "transformer", parameter_pairs(ours, theirs)
    )


def test_transformer_layers_gradcheck():
    sg.manual_seed(0)
    layer = nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0, norm_first=True).double()
    tgt, memory = sg.randn(3, 1, 4, dtype=sg.float64), sg.randn(2, 1, 4, dtype=sg.float64)
    tgt.requires_grad_(), memory.requires_grad_()
    mask = nn.Transformer.generate_square_subsequent_mask(3).double()
    assert sg.autograd.gradcheck(lambda t, m: layer(t, m, tgt_mask=mask), (tgt, memory))


def test_generate_square_subsequent_mask_and_transformer_errors():
    expected = torch.nn.Transformer.generate_square_subsequent_mask(4)
    assert_close(nn.Transformer.generate_square_subsequent_mask(4), expected, "float32")
    model = nn.Transformer(4, 2, 1, 1, dim_feedforward=6)
    assert all(
        np.abs(p.detach().numpy()).max() <= np.sqrt(6 / sum(p.shape))
        for p in model.parameters() if p.ndim > 1
    )  # fmt: skip
    with pytest.raises(RuntimeError, match="batch number of src and tgt must be equal"):
        model(sg.randn(5, 2, 4), sg.randn(3, 1, 4))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu"):
        nn.TransformerEncoderLayer(4, 2, activation="tanh")


def test_doctests():
    from scratchgrad.nn import attention, transformer

    assert doctest.testmod(attention).failed == 0
    assert doctest.testmod(transformer).failed == 0
    assert doctest.testmod(F, extraglobs={"sg": sg}).failed == 0


# ---- the choice of kernels (torch.nn.attention.sdpa_kernel, torch.backends.cuda) ----------


def test_sdp_backends_are_pytorchs():
    from torch.nn.attention import SDPBackend as TorchBackend

    from scratchgrad.nn.attention import SDPBackend

    names = [n for n in dir(TorchBackend) if n.isupper()]
    assert sorted(b.name for b in SDPBackend) == sorted(names)
    assert all(int(SDPBackend[n]) == int(getattr(TorchBackend, n)) for n in names)
    assert str(SDPBackend.MATH) == str(TorchBackend.MATH) and repr(SDPBackend.MATH) == repr(
        TorchBackend.MATH
    )


SWITCHES = ("flash", "mem_efficient", "math", "cudnn")


def _switches(lib):
    return [getattr(lib.backends.cuda, f"{name}_sdp_enabled")() for name in SWITCHES]


@pytest.mark.parametrize(
    "names",
    [
        ["MATH"],
        ["FLASH_ATTENTION"],
        ["EFFICIENT_ATTENTION"],
        ["CUDNN_ATTENTION"],
        [],
        ["EFFICIENT_ATTENTION", "MATH"],
        "MATH",
    ],  # fmt: skip
)
def test_sdpa_kernel_allows_and_refuses_as_pytorch_on_the_cpu(names):
    """Inside the block: the same switches, the same result or the same error; after it, all on."""
    from torch.nn import attention as torch_attention

    from scratchgrad.nn import attention

    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 4, 8)) for _ in range(3))
    outcomes = []
    for lib, module in ((sg, attention), (torch, torch_attention)):
        chosen = (
            getattr(module.SDPBackend, names)
            if isinstance(names, str)
            else [getattr(module.SDPBackend, n) for n in names]
        )
        with module.sdpa_kernel(chosen):
            switches = _switches(lib)
            try:
                out = lib.nn.functional.scaled_dot_product_attention(
                    *(lib.tensor(a) for a in (q, k, v)), is_causal=True
                )
                outcomes.append((switches, out.numpy()))
            except RuntimeError as error:
                outcomes.append((switches, str(error)))
        assert _switches(lib) == [True] * 4
    (ours, our_result), (theirs, their_result) = outcomes
    assert ours == theirs
    if isinstance(their_result, str):
        assert our_result == their_result
    else:
        np.testing.assert_allclose(our_result, their_result, rtol=1e-12)


def test_the_deprecated_sdp_kernel_and_the_switches():
    for lib in (sg, torch):
        with (
            pytest.warns(FutureWarning, match="sdp_kernel\\(\\)` is deprecated"),
            lib.backends.cuda.sdp_kernel(enable_flash=False, enable_math=False),
        ):
            assert _switches(lib) == [False, True, False, True]
        lib.backends.cuda.enable_math_sdp(False)
        assert _switches(lib) == [True, True, False, True]
        lib.backends.cuda.enable_math_sdp(True)
        assert _switches(lib) == [True] * 4


MASK_CASES = {  # (the language_translation example's decoder: a float causal mask, bool padding)
    "mha": lambda m, x, f, b, p: m.nn.MultiheadAttention(8, 2)(
        x, x, x, key_padding_mask=p, attn_mask=f
    ),
    "mha_same": lambda m, x, f, b, p: m.nn.MultiheadAttention(8, 2)(
        x, x, x, key_padding_mask=p, attn_mask=b
    ),
    "encoder_layer": lambda m, x, f, b, p: m.nn.TransformerEncoderLayer(8, 2, 16)(x, f, p),
    "encoder": lambda m, x, f, b, p: m.nn.TransformerEncoder(
        m.nn.TransformerEncoderLayer(8, 2, 16), 2, enable_nested_tensor=False
    )(x, b, f[:2].contiguous()),
    "decoder_layer": lambda m, x, f, b, p: m.nn.TransformerDecoderLayer(8, 2, 16)(x, x, f, None, p),
    "transformer": lambda m, x, f, b, p: m.nn.Transformer(8, 2, 1, 1, 16)(
        x, x, b, f, None, p, p, p
    ),
}


@pytest.mark.parametrize("case", MASK_CASES)
def test_masks_of_mismatched_dtypes_warn_as_torch(case):
    """PyTorch warns once, from the outermost module that sees both masks (it was silent)."""
    said = []
    for m in (torch, sg):
        x = m.zeros(4, 2, 8)
        float_mask = m.nn.Transformer.generate_square_subsequent_mask(4)
        bool_mask = m.zeros(4, 4, dtype=m.bool)
        padding = m.tensor([[False, False, False, True], [False, False, True, True]])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            MASK_CASES[case](m, x, float_mask, bool_mask, padding)
        said.append([str(w.message) for w in caught if "mismatched" in str(w.message)])
    assert said[1] == said[0]
