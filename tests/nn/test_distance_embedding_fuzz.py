"""Random distance, similarity, embedding-bag and rearrangement functions against PyTorch, with
their gradients: ``cdist`` (p of 0, 1, 2, 3, inf; batched and broadcast; both compute modes),
``pdist``, ``cosine_similarity`` and ``pairwise_distance`` (dims, eps, broadcasting, keepdim,
zero vectors), ``bilinear``, ``embedding_bag`` (modes, offsets, per-sample weights,
``padding_idx``, ``include_last_offset``), ``pixel_shuffle``/``pixel_unshuffle`` and
``channel_shuffle``. float64 inputs that require grad, then ``(y * w).sum()`` backward. Both
libraries must raise alike (the same error class) and agree on shapes, dtypes, values and the
gradients of every input. Set ``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples."""

import math

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import assert_close, fuzz_settings, outcome, raised_alike

import scratchgrad as sg

FUZZ = fuzz_settings(250)
TOLERANCE = (1e-8, 1e-10)


def _values(draw, shape, ties=False):
    size = math.prod(shape)
    values = st.integers(-2, 2).map(float) if ties else st.floats(-2, 2, allow_nan=False)
    return np.array(draw(st.lists(values, min_size=size, max_size=size))).reshape(shape)


@st.composite
def cdist_case(draw):
    batch = draw(st.sampled_from([(), (2,), (1,), (2, 1)]))
    other_batch = draw(st.sampled_from([batch, (), (1,)])) if batch else ()
    m_rows, n_rows, cols = draw(st.integers(0, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 3))
    x1 = _values(draw, (*batch, m_rows, cols), ties=draw(st.booleans()))
    x2 = _values(draw, (*other_batch, n_rows, cols), ties=draw(st.booleans()))
    p = draw(st.sampled_from([0.0, 1.0, 2.0, 3.0, 0.5, math.inf]))
    mode = draw(
        st.sampled_from(
            [
                "use_mm_for_euclid_dist_if_necessary",
                "use_mm_for_euclid_dist",
                "donot_use_mm_for_euclid_dist",
            ]
        )
    )
    return "cdist", (x1, x2), {"p": p, "compute_mode": mode}


@st.composite
def pdist_case(draw):
    rows, cols = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    p = draw(st.sampled_from([0.0, 1.0, 2.0, 3.0, math.inf]))
    return "pdist", (_values(draw, (rows, cols), ties=draw(st.booleans())),), {"p": p}


@st.composite
def similarity_case(draw):
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    other = list(shape)
    if draw(st.booleans()):
        other[draw(st.integers(0, len(shape) - 1))] = 1  # broadcast
    x1 = _values(draw, shape, ties=True)
    x2 = _values(draw, tuple(other), ties=True)
    if draw(st.integers(0, 4)) == 0:
        x1 = np.zeros_like(x1)  # a zero vector: eps decides
    name = draw(st.sampled_from(["cosine_similarity", "pairwise_distance"]))
    if name == "cosine_similarity":
        options = {"dim": draw(st.integers(-len(shape), len(shape) - 1))}
        options["eps"] = draw(st.sampled_from([1e-8, 0.5]))
    else:
        options = {"p": draw(st.sampled_from([1.0, 2.0, 3.0, math.inf, 0.0]))}
        options["eps"] = draw(st.sampled_from([1e-6, 0.0, 0.5]))
        options["keepdim"] = draw(st.booleans())
    return name, (x1, x2), options


@st.composite
def bilinear_case(draw):
    n, a, b, out = (draw(st.integers(1, 3)) for _ in range(4))
    bias = _values(draw, (out,)) if draw(st.booleans()) else None
    arrays = (_values(draw, (n, a)), _values(draw, (n, b)), _values(draw, (out, a, b)))
    return "bilinear", (*arrays, bias), {}


@st.composite
def embedding_bag_case(draw):
    rows, dim = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    weight = _values(draw, (rows, dim), ties=True)
    count = draw(st.integers(0, 7))
    indices = st.lists(st.integers(0, rows - 1), min_size=count, max_size=count)
    indices = np.array(draw(indices), dtype=np.int64)
    mode = draw(st.sampled_from(["sum", "mean", "max"]))
    options = {"mode": mode}
    if draw(st.booleans()) and count:  # 1-d indices split into bags by offsets
        cuts = sorted(draw(st.lists(st.integers(0, count), max_size=3)))
        offsets = np.array([0, *cuts])
        options["include_last_offset"] = draw(st.booleans())
        if options["include_last_offset"]:
            offsets = np.array([*offsets, count])
        options["offsets"] = offsets
    elif count and count % 2 == 0:  # 2-d: bags of one length
        indices = indices.reshape(2, count // 2)
    else:
        options["offsets"] = np.array([0])
    if mode == "sum" and draw(st.booleans()):
        options["per_sample_weights"] = _values(draw, indices.shape)
    if draw(st.booleans()):
        options["padding_idx"] = draw(st.integers(-rows, rows - 1))
    return "embedding_bag", (indices, weight), options


@st.composite
def shuffle_case(draw):
    name = draw(st.sampled_from(["pixel_shuffle", "pixel_unshuffle", "channel_shuffle"]))
    factor = draw(st.integers(1, 3))
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    if name == "pixel_shuffle":
        shape = (*batch, factor * factor * draw(st.integers(1, 2)), 2, draw(st.integers(1, 2)))
    elif name == "pixel_unshuffle":
        shape = (*batch, draw(st.integers(1, 2)), factor * 2, factor * draw(st.integers(1, 2)))
    else:
        shape = (draw(st.integers(1, 2)), factor * draw(st.integers(1, 2)), 2)
    if draw(st.integers(0, 5)) == 0:
        shape = (*shape[:-3], shape[-3] + 1, *shape[-2:])  # not divisible: both raise
    return name, (_values(draw, shape),), {"factor": factor}


CASES = st.one_of(
    cdist_case(),
    pdist_case(),
    similarity_case(),
    bilinear_case(),
    embedding_bag_case(),
    shuffle_case(),
)


def _call(m, name, arrays, options):
    F = m.nn.functional
    tensors = [
        None
        if a is None
        else m.tensor(a)
        if a.dtype.kind in "iu"
        else m.tensor(a, dtype=m.float64, requires_grad=True)
        for a in arrays
    ]
    options = dict(options)
    for key in ("offsets",):
        if key in options:
            options[key] = m.tensor(options[key], dtype=m.int64)
    if "per_sample_weights" in options:
        options["per_sample_weights"] = m.tensor(
            options["per_sample_weights"], dtype=m.float64, requires_grad=True
        )
        tensors.append(options["per_sample_weights"])
    if name == "cdist":
        out = m.cdist(*tensors, **options)
    elif name == "pdist":
        out = F.pdist(*tensors, **options)
    elif name == "embedding_bag":
        out = F.embedding_bag(tensors[0], tensors[1], **options)
    elif name == "channel_shuffle":
        out = F.channel_shuffle(tensors[0], options["factor"])
    elif name in ("pixel_shuffle", "pixel_unshuffle"):
        out = getattr(F, name)(tensors[0], options["factor"])
    else:
        out = getattr(F, name)(*tensors, **options)
    weights = m.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)))
    (out * weights).sum().backward()
    grads = [t.grad for t in tensors if t is not None and t.requires_grad]
    return out, grads


@given(CASES)
@FUZZ
def test_a_distance_embedding_or_shuffle_matches_torch(case):
    name, arrays, options = case
    ours, theirs = outcome(_call, sg, *case), outcome(_call, torch, *case)
    what = f"{name} {[None if a is None else a.shape for a in arrays]} {options}"
    if raised_alike(ours, theirs, what):
        return
    (out, grads), (expected, expected_grads) = ours, theirs
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1], what
    assert_close(out, expected, what=f"{what}: values", tolerance=TOLERANCE)
    for n, (grad, expected_grad) in enumerate(zip(grads, expected_grads)):
        if expected_grad is None:
            assert grad is None or not grad.abs().sum().item(), f"{what}: gradient {n}"
            continue
        assert grad is not None, f"{what}: gradient {n} missing"
        assert_close(grad, expected_grad, what=f"{what}: gradient {n}", tolerance=TOLERANCE)
