"""``save`` then ``load`` gives back what was saved, for random checkpoints: nestings of dicts
(string and int keys), lists and tuples holding tensors of every dtype (0-d, empty, transposed,
strided, requiring grad, Parameters), NumPy arrays, ints (past 2**63 too), floats (NaN, the
infinities, -0.0), strings, bools and None. Each value must come back with its type, shape,
dtype and bits (NaN payloads aside), its ``requires_grad``, and in its container's type. Set
``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples."""

import io
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from oracle import fuzz_settings

import scratchgrad as sg

FUZZ = fuzz_settings(150)
DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64"]
DTYPES += ["uint8", "bool", "complex64", "complex128"]
SPECIAL = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e-300, 65504.0]


@st.composite
def tensors(draw):
    dtype = getattr(sg, draw(st.sampled_from(DTYPES)))
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    values = st.one_of(st.integers(-100, 100).map(float), st.sampled_from(SPECIAL))
    count = math.prod(shape)
    data = np.array(draw(st.lists(values, min_size=count, max_size=count))).reshape(shape)
    with np.errstate(all="ignore"):
        t = sg.tensor(data).to(dtype) if dtype.is_floating_point else sg.tensor(data.real)
    if not dtype.is_floating_point and not dtype.is_complex:
        t = sg.tensor(np.nan_to_num(data, nan=0, posinf=7, neginf=-7)).to(dtype)
    layout = draw(st.sampled_from(["as is", "transposed", "stepped", "grad", "parameter"]))
    if layout == "transposed" and t.ndim >= 2:
        t = t.transpose(0, 1)
    elif layout == "stepped" and t.ndim >= 1:
        t = t[::2]
    elif layout in ("grad", "parameter") and (dtype.is_floating_point or dtype.is_complex):
        t = sg.nn.Parameter(t) if layout == "parameter" else t.requires_grad_()
    return t


LEAVES = st.one_of(
    tensors(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.booleans(),
    st.none(),
    st.builds(lambda n: np.arange(n, dtype=np.float32).reshape(-1, 1), st.integers(0, 3)),
)
CHECKPOINTS = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(st.one_of(st.text(max_size=4), st.integers(0, 9)), children, max_size=3),
    ),
    max_leaves=8,
)


def _assert_same(loaded, saved, where="checkpoint"):
    if isinstance(saved, sg.Tensor):
        assert type(loaded) is type(saved), f"{where}: {type(loaded)} for {type(saved)}"
        assert loaded.dtype == saved.dtype and loaded.shape == saved.shape, where
        assert loaded.requires_grad == saved.requires_grad, f"{where}: requires_grad"
        ours, theirs = loaded.detach(), saved.detach()
        if saved.dtype == sg.bfloat16:
            ours, theirs = ours.float(), theirs.float()
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=where)
        return
    assert type(loaded) is type(saved), f"{where}: {type(loaded)} for {type(saved)}"
    if isinstance(saved, dict):
        assert list(loaded) == list(saved), where
        for key in saved:
            _assert_same(loaded[key], saved[key], f"{where}[{key!r}]")
    elif isinstance(saved, list | tuple):
        assert len(loaded) == len(saved), where
        for n, (a, b) in enumerate(zip(loaded, saved)):
            _assert_same(a, b, f"{where}[{n}]")
    elif isinstance(saved, np.ndarray):
        assert loaded.dtype == saved.dtype, where
        np.testing.assert_array_equal(loaded, saved, err_msg=where)
    elif isinstance(saved, float) and math.isnan(saved):  # (its sign and payload aside)
        assert math.isnan(loaded), where
    elif isinstance(saved, float):  # -0.0 as -0.0
        assert loaded == saved and math.copysign(1, loaded) == math.copysign(1, saved), where
    else:
        assert loaded == saved, f"{where}: {loaded!r} for {saved!r}"


@given(CHECKPOINTS)
@FUZZ
def test_a_checkpoint_loads_as_it_was_saved(checkpoint):
    buffer = io.BytesIO()
    sg.save(checkpoint, buffer)
    _assert_same(sg.load(io.BytesIO(buffer.getvalue())), checkpoint)
