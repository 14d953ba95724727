"""Random recurrent, attention, transformer and embedding layers against PyTorch, with gradients:
a layer drawn with a random combination of its options, shapes, initial states, masks and
packed sequences, both libraries holding the same weights (PyTorch's ``state_dict`` copied into
ours) and given the same float64 inputs, then ``(y * w).sum()`` backward over every output.
Both libraries must raise or not (the same error class) and agree on each output's shape, dtype
and values (NaN where PyTorch's are), on the gradients of the inputs and of every parameter (by
name), and on an embedding's weight after a ``max_norm`` call renormalised it. Set
``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples."""

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import fuzz_settings, outcome, parameter_pairs, raised_alike, same_dtype

import scratchgrad as sg

FUZZ = fuzz_settings(40)
RTOL, ATOL = 1e-7, 1e-9


@dataclass
class Case:
    """A layer (``build(lib)``, or ``None`` for a function) called on named arrays: floating
    ones become float64 leaves that require grad (unless listed in ``no_grad``), integer and
    boolean ones keep their dtype. ``call(lib, module, t)`` runs it in ``lib`` on the dict ``t``
    of tensors and returns its outputs (a tensor, or a tuple of tensors, tuples and ``None``s).
    ``train``: the module's mode; ``grad=False``: run under ``no_grad`` on leaves that need no
    gradient (where PyTorch's attention and encoder take their fast paths)."""

    what: str
    arrays: dict
    call: Callable
    build: Callable | None = None
    train: bool = True
    no_grad: tuple = ()
    grad: bool = True


# (train, grad): training (dropout 0), evaluating, evaluating under no_grad (the fast paths)
MODES = st.sampled_from([(True, True), (False, True), (False, False)])


def values(draw, shape: tuple, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    size = math.prod(shape)
    floats = st.floats(low, high, allow_nan=False, allow_infinity=False)
    return np.array(draw(st.lists(floats, min_size=size, max_size=size)), float).reshape(shape)


def booleans(draw, shape: tuple) -> np.ndarray:
    size = math.prod(shape)
    return np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size))).reshape(shape)


def float_mask(draw, shape: tuple, biases: bool = True) -> np.ndarray:
    """An additive mask: 0 or -inf (masked), with a few finite biases between."""
    entries = st.sampled_from([0.0, 0.0, -math.inf, -math.inf, *([0.5, -1.5] if biases else [])])
    size = math.prod(shape)
    return np.array(draw(st.lists(entries, min_size=size, max_size=size)), float).reshape(shape)


def mask(draw, shape: tuple, biases: bool = True) -> np.ndarray:
    """A boolean (True: masked) or float (additive) mask of ``shape``, rows fully masked now
    and then."""
    return booleans(draw, shape) if draw(st.booleans()) else float_mask(draw, shape, biases)


# ---- recurrent layers -------------------------------------------------------------------------

RECURRENT = {"RNN_TANH": "RNN", "RNN_RELU": "RNN", "LSTM": "LSTM", "GRU": "GRU"}


@st.composite
def recurrent(draw):
    """RNN (tanh, relu), LSTM (proj_size) or GRU: layers, directions, batch_first, bias, an
    unbatched or packed input, h0 (and c0) given or not."""
    mode = draw(st.sampled_from(list(RECURRENT)))
    input_size, hidden = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kwargs = {
        "num_layers": draw(st.integers(1, 3)),
        "bidirectional": draw(st.booleans()),
        "batch_first": draw(st.booleans()),
        "bias": draw(st.booleans()),
    }
    if mode.startswith("RNN"):
        kwargs["nonlinearity"] = mode[4:].lower()
    proj = draw(st.integers(0, hidden)) if mode == "LSTM" else 0  # hidden: refused
    if proj:
        kwargs["proj_size"] = proj
    length, batch = draw(st.integers(1, 4)), draw(st.integers(0, 3))
    form = draw(st.sampled_from(["batched", "unbatched", "packed"]))
    arrays = {}
    if form == "unbatched":
        arrays["x"] = values(draw, (length, input_size))
    else:
        shape = (batch, length) if kwargs["batch_first"] else (length, batch)
        arrays["x"] = values(draw, (*shape, input_size))
    states = kwargs["num_layers"] * (2 if kwargs["bidirectional"] else 1)
    state_batch = () if form == "unbatched" else (batch + draw(st.sampled_from([0] * 5 + [1])),)
    if draw(st.booleans()):
        arrays["h0"] = values(draw, (states, *state_batch, proj or hidden))
        if mode == "LSTM":
            arrays["c0"] = values(draw, (states, *state_batch, hidden))
    lengths = sorted_ = total = None
    if form == "packed":
        lengths = draw(st.lists(st.integers(1, length), min_size=batch, max_size=batch))
        sorted_ = draw(st.booleans())
        total = draw(st.sampled_from([None, length, length + 1]))
        arrays["lengths"] = np.array(lengths, np.int64)
    name = RECURRENT[mode]

    def build(lib):
        return getattr(lib.nn, name)(input_size, hidden, **kwargs)

    def call(lib, module, t):
        hx = t.get("h0")
        if "c0" in t:
            hx = (hx, t["c0"])
        if form != "packed":
            return module(t["x"], hx)
        rnn_utils = lib.nn.utils.rnn
        packed = rnn_utils.pack_padded_sequence(
            t["x"], t["lengths"], kwargs["batch_first"], enforce_sorted=sorted_
        )
        out, state = module(packed, hx)
        padded = rnn_utils.pad_packed_sequence(out, kwargs["batch_first"], total_length=total)
        indices = (out.batch_sizes, out.sorted_indices, out.unsorted_indices)
        return padded, state, out.data, indices

    shown = f"{name}({input_size}, {hidden}, {kwargs}) {form} {lengths} {sorted_} {total}"
    return Case(shown, arrays, call, build)


@st.composite
def cells(draw):
    """RNNCell (tanh, relu), LSTMCell or GRUCell, batched or not, hx given or not."""
    name = draw(st.sampled_from(["RNNCell", "LSTMCell", "GRUCell"]))
    input_size, hidden = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kwargs = {"bias": draw(st.booleans())}
    if name == "RNNCell":
        kwargs["nonlinearity"] = draw(st.sampled_from(["tanh", "relu"]))
    batch = draw(st.sampled_from([(), (1,), (3,)]))
    arrays = {"x": values(draw, (*batch, input_size))}
    if draw(st.booleans()):
        arrays["h"] = values(draw, (*batch, hidden))
        if name == "LSTMCell":
            arrays["c"] = values(draw, (*batch, hidden))

    def call(lib, module, t):
        hx = (t["h"], t["c"]) if "c" in t else t.get("h")
        return module(t["x"], hx)

    def build(lib):
        return getattr(lib.nn, name)(input_size, hidden, **kwargs)

    return Case(f"{name}({input_size}, {hidden}, {kwargs}) batch {batch}", arrays, call, build)


# ---- attention --------------------------------------------------------------------------------


@st.composite
def multihead_attention(draw):
    """nn.MultiheadAttention: kdim/vdim, batch_first, bias, bias_kv, zero_attn, masks of every
    kind, need_weights, averaged or not, is_causal, unbatched, self-attention."""
    heads = draw(st.integers(1, 3))
    embed = heads * draw(st.integers(1, 2)) + draw(st.sampled_from([0] * 9 + [1]))
    same = draw(st.sampled_from(["qkv", "kv", "none"]))
    kdim = embed if same != "none" else draw(st.sampled_from([embed, 1, 3]))
    vdim = embed if same != "none" else draw(st.sampled_from([embed, 2]))
    kwargs = {
        "bias": draw(st.booleans()),
        "add_bias_kv": draw(st.booleans()),
        "add_zero_attn": draw(st.booleans()),
        "kdim": kdim,
        "vdim": vdim,
        "batch_first": draw(st.booleans()),
    }
    batched = draw(st.booleans())
    n, length = draw(st.integers(0, 2)), draw(st.integers(0, 3))
    source = length if same == "qkv" else draw(st.integers(0, 3))

    def shape(rows, width):
        if not batched:
            return (rows, width)
        return (n, rows, width) if kwargs["batch_first"] else (rows, n, width)

    arrays = {"query": values(draw, shape(length, embed))}
    if same == "none":
        arrays["key"] = values(draw, shape(source, kdim))
        arrays["value"] = values(draw, shape(source, vdim))
    elif same == "kv":
        arrays["key"] = values(draw, shape(source, embed))
    options = {
        "need_weights": draw(st.booleans()),
        "average_attn_weights": draw(st.booleans()),
    }
    if draw(st.booleans()):
        arrays["key_padding_mask"] = mask(draw, (n, source) if batched else (source,))
    mask_kind = draw(st.sampled_from(["none", "2d", "3d", "causal", "causal without a mask"]))
    if mask_kind == "3d":
        arrays["attn_mask"] = mask(draw, (n * heads if batched else heads, length, source))
    elif mask_kind == "2d":
        arrays["attn_mask"] = mask(draw, (length, source))
    elif mask_kind.startswith("causal"):
        if mask_kind == "causal":
            arrays["attn_mask"] = np.triu(np.ones((length, source), bool), 1)
        options["is_causal"] = True
    train, grad = draw(MODES)

    def call(lib, module, t):
        key = t.get("key", t["query"])
        value = t.get("value", key)
        masks = {k: t[k] for k in ("key_padding_mask", "attn_mask") if k in t}
        return module(t["query"], key, value, **masks, **options)

    def build(lib):
        return lib.nn.MultiheadAttention(embed, heads, **kwargs)

    what = f"MultiheadAttention({embed}, {heads}, {kwargs}) {same} batched={batched} {options}"
    what += f" train={train} grad={grad}"
    return Case(what, arrays, call, build, train, grad=grad)


@st.composite
def scaled_dot_product(draw):
    """F.scaled_dot_product_attention: masks broadcast, is_causal with L != S, scale, GQA."""
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    heads_k = draw(st.integers(1, 2))
    gqa = draw(st.booleans())
    heads = heads_k * draw(st.integers(1, 2)) if gqa else heads_k
    length, source = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    e, ev = draw(st.integers(1, 3)), draw(st.integers(0, 3))
    lead = (*batch, heads) if batch or draw(st.booleans()) else ()
    lead_k = (*batch, heads_k) if lead else ()
    arrays = {
        "q": values(draw, (*lead, length, e)),
        "k": values(draw, (*lead_k, source, e)),
        "v": values(draw, (*lead_k, source, ev)),
    }
    kwargs = {"scale": draw(st.sampled_from([None, 0.5, 2.0]))}
    if gqa:
        kwargs["enable_gqa"] = True
    if draw(st.booleans()):
        kwargs["is_causal"] = True
    if draw(st.booleans()):
        full = (*lead, length, source)
        mask_shape = tuple(d if draw(st.booleans()) else 1 for d in full)
        arrays["attn_mask"] = mask(draw, mask_shape[draw(st.integers(0, len(full) - 1)) :])

    def call(lib, module, t):
        f = lib.nn.functional.scaled_dot_product_attention
        return f(t["q"], t["k"], t["v"], t.get("attn_mask"), 0.0, **kwargs)

    return Case(f"scaled_dot_product_attention({kwargs})", arrays, call)


# ---- transformers -----------------------------------------------------------------------------


@st.composite
def transformers(draw):
    """Encoder and decoder layers, stacks and the whole Transformer, in train (dropout 0) or
    eval: norm_first, activations, batch_first, bias, padding masks, causal masks, eps."""
    kind = draw(
        st.sampled_from(
            [
                "TransformerEncoderLayer",
                "TransformerDecoderLayer",
                "TransformerEncoder",
                "TransformerDecoder",
                "Transformer",
            ]
        )
    )
    heads = draw(st.integers(1, 2))
    d_model = heads * draw(st.integers(1, 2))
    activation = draw(st.sampled_from(["relu", "gelu", "callable"]))
    layer_kwargs = {
        "dim_feedforward": draw(st.integers(1, 4)),
        "dropout": 0.0,
        "norm_first": draw(st.booleans()),
        "batch_first": draw(st.booleans()),
        "bias": draw(st.booleans()),
        "layer_norm_eps": draw(st.sampled_from([1e-5, 0.1])),
    }
    batch_first = layer_kwargs["batch_first"]
    batched = draw(st.booleans())
    n = draw(st.integers(0, 2))
    # (no source of 0 tokens: PyTorch's TransformerEncoder in eval mode with a padding mask
    # fails on one, an IndexError from its check of the mask's last column; ours computes)
    src_len, tgt_len = draw(st.integers(1, 3)), draw(st.integers(0, 3))
    layers = draw(st.integers(1, 2))
    final_norm = draw(st.booleans())

    def sequence(length):
        if not batched:
            return values(draw, (length, d_model))
        return values(draw, (n, length, d_model) if batch_first else (length, n, d_model))

    # float masks of 0 and -inf only: PyTorch's fused encoder layer (eval, no gradient)
    # masks out a finite bias, ours adds it (README, "What is different")
    def padding(length):
        return mask(draw, (n, length) if batched else (length,), biases=False)

    # the sequences each kind reads (src: the encoder's, tgt: the decoder's), the names of
    # their arguments, and their lengths; a causal mask is PyTorch's square one
    encoder = kind in ("TransformerEncoderLayer", "TransformerEncoder")
    lengths = {"src": src_len} if encoder else {"tgt": tgt_len, "memory": src_len}
    if kind == "Transformer":
        lengths = {"src": src_len, "tgt": tgt_len}
    arrays = {name: sequence(length) for name, length in lengths.items()}
    for name, length in lengths.items():
        if draw(st.booleans()):
            arrays[f"{name}_key_padding_mask"] = padding(length)
    if kind == "Transformer" and draw(st.booleans()):
        arrays["memory_key_padding_mask"] = padding(src_len)
    if not encoder and draw(st.booleans()):
        arrays["memory_mask"] = mask(draw, (tgt_len, src_len), biases=False)
    causal = draw(st.sampled_from([None, *lengths]))
    options = {}
    if causal is not None:
        options["is_causal" if encoder else f"{causal}_is_causal"] = draw(st.booleans())
    mask_name = {"TransformerEncoderLayer": "src_mask", "TransformerEncoder": "mask"}
    train, grad = draw(MODES)

    def layer_args(lib):
        act = lib.nn.functional.gelu if activation == "callable" else activation
        return {**layer_kwargs, "activation": act}

    def build(lib):
        nn = lib.nn
        if kind.endswith("Layer"):
            return getattr(nn, kind)(d_model, heads, **layer_args(lib))
        if kind == "Transformer":
            return nn.Transformer(d_model, heads, layers, layers, **layer_args(lib))
        layer = getattr(nn, kind + "Layer")(d_model, heads, **layer_args(lib))
        norm = nn.LayerNorm(d_model) if final_norm else None
        return getattr(nn, kind)(layer, layers, norm=norm)

    def call(lib, module, t):
        kw = {k: v for k, v in t.items() if k.endswith("mask")}
        if causal is not None:
            square = lib.nn.Transformer.generate_square_subsequent_mask(lengths[causal])
            kw[mask_name.get(kind, f"{causal}_mask")] = square.to(lib.float64)
        sequences = [t[name] for name in lengths]
        return module(*sequences, **kw, **options)

    what = (
        f"{kind}({d_model}, {heads}, {activation}, {layer_kwargs}) layers={layers} "
        f"norm={final_norm} batched={batched} causal={causal} {options} train={train} grad={grad}"
    )
    return Case(what, arrays, call, build, train, grad=grad)


# ---- embeddings -------------------------------------------------------------------------------


@st.composite
def embeddings(draw):
    """nn.Embedding or F.embedding: padding_idx (negative too), max_norm, norm_type,
    scale_grad_by_freq; or F.one_hot."""
    rows = draw(st.integers(1, 5))
    index_shape = draw(st.sampled_from([(), (4,), (2, 3), (0,)]))
    size = math.prod(index_shape)
    index = st.integers(0, rows - 1)
    if draw(st.integers(0, 9)) == 0:
        index = st.integers(-1, rows)  # past the table: refused
    indices = draw(st.lists(index, min_size=size, max_size=size))
    arrays = {"indices": np.array(indices, np.int64).reshape(index_shape)}
    if draw(st.integers(0, 4)) == 0:
        classes = draw(st.sampled_from([-1, rows, rows + 2, max(rows - 2, 0)]))
        return Case(
            f"one_hot({classes})",
            arrays,
            lambda lib, module, t: lib.nn.functional.one_hot(t["indices"], classes),
        )
    dim = draw(st.integers(1, 3))
    kwargs = {
        "padding_idx": draw(st.sampled_from([None, *range(-rows, rows)])),
        "max_norm": draw(st.sampled_from([None, None, 0.5, 1.5])),
        "norm_type": draw(st.sampled_from([2.0, 1.0, 3.0])),
        "scale_grad_by_freq": draw(st.booleans()),
    }
    if draw(st.booleans()):
        arrays["weight"] = values(draw, (rows, dim))

        def functional(lib, module, t):
            return lib.nn.functional.embedding(t["indices"], t["weight"], **kwargs)

        return Case(f"embedding({kwargs})", arrays, functional)

    def build(lib):
        return lib.nn.Embedding(rows, dim, **kwargs)

    def call(lib, module, t):
        return module(t["indices"])

    return Case(f"Embedding({rows}, {dim}, {kwargs})", arrays, call, build)


# ---- running both libraries -------------------------------------------------------------------


def flat(outputs) -> list:
    """The tensors and ``None``s of nested tuples of outputs, in order."""
    if isinstance(outputs, (tuple, list)):
        return [leaf for item in outputs for leaf in flat(item)]
    return [outputs]


def leaves(case: Case, lib) -> dict:
    t = {}
    for name, a in case.arrays.items():
        floating = a.dtype.kind == "f"
        dtype = {"f": lib.float64, "b": lib.bool}.get(a.dtype.kind, lib.int64)
        grad = case.grad and floating and name not in case.no_grad
        t[name] = lib.tensor(a, dtype=dtype, requires_grad=grad)
    return t


def modules(case: Case, seed: int):
    """The case's layer in both libraries in float64, ours with a copy of PyTorch's state, or
    the errors their construction raised (or ``None``s for a function)."""
    if case.build is None:
        return None, None
    torch.manual_seed(seed)
    theirs = outcome(case.build, torch)
    ours = outcome(case.build, sg)
    if isinstance(theirs, Exception) or isinstance(ours, Exception):
        return ours, theirs
    theirs.to(torch.float64).train(case.train)
    ours.to(sg.float64).train(case.train)
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def run(case: Case, lib, module, seed: int):
    """(tensors, outputs, error): the case on fresh leaves in ``lib``, then (y * w).sum()
    backward through every output that requires grad."""
    t = leaves(case, lib)
    with lib.set_grad_enabled(case.grad):
        ys = outcome(case.call, lib, module, t)
    if isinstance(ys, Exception):
        return t, None, ys
    ys = flat(ys)
    rng = np.random.default_rng(seed)
    terms = [
        (y * lib.tensor(rng.uniform(-2, 2, tuple(y.shape)), dtype=y.dtype)).sum()
        for y in ys
        if y is not None and y.requires_grad
    ]
    error = outcome(lambda: sum(terms).backward()) if terms else None
    return t, ys, error


def assert_tensor(ours, theirs, what: str) -> None:
    assert (ours is None) == (theirs is None), f"{what}: {ours} where PyTorch has {theirs}"
    if theirs is None:
        return
    assert same_dtype(ours, theirs), f"{what}: dtype {ours.dtype} != {theirs.dtype}"
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: {ours.shape} != {theirs.shape}"
    np.testing.assert_allclose(
        ours.detach().numpy(),
        theirs.detach().numpy(),
        rtol=RTOL,
        atol=ATOL,
        equal_nan=True,
        err_msg=what,
    )


def assert_grad(ours, theirs, what: str) -> None:
    """Where PyTorch gives no gradient (or an empty one it leaves unwritten), ours must be
    missing or zero."""
    if theirs is None or theirs.numel() == 0:
        assert ours is None or not ours.numpy().any(), f"{what}: {ours} where PyTorch has none"
        return
    assert_tensor(ours, theirs, what)


def raised_as_pytorch(ours, theirs, what: str) -> bool:
    """``raised_alike``, where an AssertionError of PyTorch's may be our ValueError
    (tests/nn/test_layer_constructor_errors.py)."""
    if isinstance(theirs, AssertionError) and isinstance(ours, ValueError):
        return True
    return raised_alike(ours, theirs, what)


def check(case: Case, seed: int) -> None:
    what = f"{case.what} on {case.arrays}"
    module, their_module = modules(case, seed)
    if raised_as_pytorch(module, their_module, f"{what} (construction)"):
        return
    t_ours, ours, our_error = run(case, sg, module, seed)
    t_theirs, theirs, their_error = run(case, torch, their_module, seed)
    if "cannot reshape tensor of 0 elements" in str(their_error) and our_error is None:
        return  # PyTorch's attention fails on an empty batch where ours computes (README)
    if theirs is None or ours is None:
        raised_as_pytorch(
            our_error if ours is None else ours, their_error if theirs is None else theirs, what
        )
        return
    assert len(ours) == len(theirs), f"{what}: {len(ours)} outputs, not {len(theirs)}"
    for number, (mine, its) in enumerate(zip(ours, theirs)):
        if its is not None:
            assert mine.requires_grad == its.requires_grad, f"{what}: output {number} grad"
        assert_tensor(mine, its, f"{what}: output {number}")
    if raised_alike(our_error, their_error, f"{what} (backward)"):
        return
    for name in case.arrays:
        assert_grad(t_ours[name].grad, t_theirs[name].grad, f"{what}: gradient of {name}")
    if their_module is not None:
        for name, p, q in parameter_pairs(module, their_module):
            assert_grad(p.grad, q.grad, f"{what}: gradient of {name}")
            assert_tensor(p, q, f"{what}: {name} after the call")
    if "weight" in case.arrays:  # F.embedding's max_norm renormalises it in place
        assert_tensor(t_ours["weight"], t_theirs["weight"], f"{what}: weight after the call")


@given(case=st.one_of(recurrent(), cells()), seed=st.integers(0, 2**16))
@FUZZ
def test_recurrent_layers_match_pytorch(case, seed):
    check(case, seed)


@given(case=st.one_of(multihead_attention(), scaled_dot_product()), seed=st.integers(0, 2**16))
@FUZZ
def test_attention_matches_pytorch(case, seed):
    check(case, seed)


@given(case=transformers(), seed=st.integers(0, 2**16))
@FUZZ
def test_transformers_match_pytorch(case, seed):
    check(case, seed)


@given(case=embeddings(), seed=st.integers(0, 2**16))
@FUZZ
def test_embeddings_match_pytorch(case, seed):
    check(case, seed)
