"""scratchgrad.testing against torch.testing: each case is one ``call(m)`` run with ``m`` torch and
then scratchgrad; both must pass, or both raise the same exception type with the same message
(PyTorch's ``torch.`` read as ``scratchgrad.``). make_tensor's draws differ (another generator):
its ranges, shapes, dtypes, strides and errors are compared."""

import math

import numpy as np
import pytest
import torch

import scratchgrad as sg


def _outcome(call, m):
    """None if ``call(m)`` passes, else (exception type name, message in scratchgrad's words)."""
    try:
        call(m)
    except Exception as error:  # noqa: BLE001  (the type is what is compared)
        text = str(error).replace("torch.", "scratchgrad.")
        return type(error).__name__, text.replace("scratchgrad.tensor.Tensor", "scratchgrad.Tensor")
    return None


def _close(make, **kwargs):
    """``call(m)`` running m.testing.assert_close on the pair ``make(m)`` makes in m."""
    return lambda m: m.testing.assert_close(*make(m), **kwargs)


def _t(*values, dtype="float32"):
    """(actual, expected) tensors of ``dtype`` from the two value lists, in a library m."""
    return lambda m: tuple(m.tensor(v, dtype=getattr(m, dtype)) for v in values)


NAN, INF = math.nan, math.inf

PASSING = {
    "float32 within rtol": _close(_t([1.0, 100.0], [1.0, 100.0001])),
    "float32 within atol near 0": _close(_t([0.0, 1.0], [5e-6, 1.0])),
    "float64 within": _close(_t([1.0, 2.0], [1.0, 2.0 + 1e-7], dtype="float64")),
    "float16 within": _close(_t([1.0, 100.0], [1.0, 100.0625], dtype="float16")),
    "bfloat16 within": _close(_t([1.0, 100.0], [1.0, 101.0], dtype="bfloat16")),
    "int64 equal": _close(_t([1, 2, 3], [1, 2, 3], dtype="int64")),
    "bool equal": _close(_t([True, False], [True, False], dtype="bool")),
    "empty": _close(_t([], [])),
    "infinities equal": _close(_t([INF, -INF], [INF, -INF])),
    "nan with equal_nan": _close(_t([NAN, 1.0], [NAN, 1.0]), equal_nan=True),
    "0-dim": _close(lambda m: (m.tensor(2.0), m.tensor(2.0 + 1e-6))),
    "requires grad": _close(
        lambda m: (m.tensor([1.0], requires_grad=True), m.tensor([1.0], requires_grad=True) * 1)
    ),
    "parameter and tensor": _close(lambda m: (m.nn.Parameter(m.ones(2)), m.ones(2))),
    "float32 vs float64 unchecked": _close(_t([1.0], [1.0]), check_dtype=False),
    "given tolerances": _close(_t([1.0], [1.1]), rtol=0.0, atol=0.2),
    "python floats": _close(lambda m: (1.0, 1.0 + 1e-8)),
    "python ints": _close(lambda m: (3, 3)),
    "float and int unchecked": _close(lambda m: (1.0, 1), check_dtype=False),
    "python complex": _close(lambda m: (1 + 1j, 1 + 1j + 1e-9)),
    "numpy scalars": _close(lambda m: (np.float32(1.0), 1.0)),
    "numpy arrays": _close(lambda m: (np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-8]))),
    "bools": _close(lambda m: (True, np.bool_(True))),
    "nones": _close(lambda m: (None, None)),
    "nested": _close(
        lambda m: (
            [m.ones(2), (1, 2.0), {"a": m.zeros(1), "b": [None]}],
            (m.ones(2), [1, 2.0], {"b": [None], "a": m.zeros(1)}),
        )
    ),
    "sequence vs tuple": _close(lambda m: ([1.0, 2.0], (1.0, 2.0))),
}

FAILING = {
    "float32": _close(_t([1.0, 2.0, 3.0], [1.0, 2.5, 3.1])),
    "float32 2-d": _close(lambda m: (m.zeros(3, 4), m.zeros(3, 4).index_fill(1, m.tensor([2]), 1))),
    "float64": _close(_t([1.0, 2.0], [1.0, 2.0 + 1e-5], dtype="float64")),
    "float16": _close(_t([1.0, 100.0], [1.0, 100.25], dtype="float16")),
    "bfloat16": _close(_t([1.0, 100.0], [1.0, 104.0], dtype="bfloat16")),
    "int64": _close(_t([1, 2, 3], [1, 5, 4], dtype="int64")),
    "int32 huge": _close(_t([2**31 - 1], [-(2**31)], dtype="int32")),
    "uint8": _close(_t([0, 200], [255, 200], dtype="uint8")),
    "bool": _close(_t([True, False, True], [True, True, True], dtype="bool")),
    "expected zero": _close(_t([1.0, 0.5], [1.0, 0.0])),
    "nan": _close(_t([NAN, 1.0], [NAN, 1.0])),
    "nan vs number": _close(_t([NAN, 1.0], [1.0, 1.0]), equal_nan=True),
    "inf vs -inf": _close(_t([INF], [-INF])),
    "inf vs number": _close(_t([INF, 1.0], [1e30, 1.0])),
    "0-dim": _close(lambda m: (m.tensor(2.0), m.tensor(2.5))),
    "0-dim nan": _close(lambda m: (m.tensor(NAN), m.tensor(NAN))),
    "0-dim int": _close(lambda m: (m.tensor(3), m.tensor(4))),
    "given tolerances": _close(_t([1.0], [1.5]), rtol=0.1, atol=0.2),
    "zero tolerances": _close(_t([1.0, 2.0], [1.0, 2.0000002]), rtol=0, atol=0),
    "unchecked dtypes promoted": _close(
        lambda m: (m.tensor([1, 2]), m.tensor([1.0, 2.5], dtype=m.float64)), check_dtype=False
    ),
    "shape": _close(lambda m: (m.ones(2), m.ones(3))),
    "shape 2-d": _close(lambda m: (m.ones(2, 3), m.ones(3, 2))),
    "dtype": _close(lambda m: (m.ones(2), m.ones(2, dtype=m.float64))),
    "device": _close(lambda m: (m.ones(2), m.ones(2, device="meta"))),
    "stride": _close(lambda m: (m.ones(2, 3), m.ones(3, 2).t()), check_stride=True),
    "msg string": _close(_t([1.0], [2.0]), msg="Argh!"),
    "msg callable": _close(_t([1.0, 2.0], [1.0, 4.0]), msg=lambda text: f"Head\n\n{text}\n\nFoot"),
    "msg on a nested item": _close(lambda m: ([1.0, 2.0], [1.0, 3.0]), msg=lambda s: s.upper()),
    "rtol alone": _close(_t([1.0], [1.0]), rtol=1e-3),
    "atol alone": _close(_t([1.0], [1.0]), atol=1e-3),
    "atol alone on a number in a list": _close(lambda m: ([None, 1.0], [None, 1.0]), atol=1.0),
    "python floats": _close(lambda m: (1e-9, 1e-10), rtol=0, atol=0),
    "python float vs zero": _close(lambda m: (0.5, 0.0)),
    "python numbers nan": _close(lambda m: (NAN, NAN)),
    "python int vs float": _close(lambda m: (1, 1.0)),
    "python ints": _close(lambda m: (1, 2)),
    "booleans": _close(lambda m: (True, False)),
    "none": _close(lambda m: (None, 1)),
    "sequence length": _close(lambda m: ([1, 2], [1, 2, 3])),
    "sequence length nested": _close(lambda m: ({"a": [1]}, {"a": []}), msg="ignored"),
    "mapping keys": _close(lambda m: ({"a": 1, "b": 2}, {"a": 1, "c": 2})),
    "nested item": _close(
        lambda m: ([m.ones(1), {"x": [m.zeros(2)]}], [m.ones(1), {"x": [m.tensor([0.0, 1.0])]}])
    ),
    "first failure wins": _close(lambda m: ([1, m.ones(1)], [2, m.ones(2)])),
    "type error before a value": _close(lambda m: ([1, m.ones(1)], [2, np.ones(1)])),
    "numpy arrays": _close(lambda m: (np.array([1.0, 2.0]), np.array([1.0, 3.0]))),
    "numpy vs tensor": _close(lambda m: (np.ones(2), m.ones(2))),
    "tensor vs number": _close(lambda m: (m.tensor(1.0), 1.0)),
    "list vs tensor": _close(lambda m: ([1.0], m.ones(1))),
    "strings": _close(lambda m: ("a", "b")),
    "subclass not allowed": _close(
        lambda m: (m.nn.Parameter(m.ones(2)), m.ones(2)), allow_subclasses=False
    ),
}


@pytest.mark.parametrize("name", PASSING)
def test_passing_pairs_pass_in_both(name):
    assert _outcome(PASSING[name], torch) is None
    assert _outcome(PASSING[name], sg) is None


@pytest.mark.parametrize("name", FAILING)
def test_failing_pairs_fail_as_torch_fails(name):
    expected = _outcome(FAILING[name], torch)
    assert expected is not None
    assert _outcome(FAILING[name], sg) == expected


def test_a_meta_tensor_compares_only_attributes():
    sg.testing.assert_close(sg.ones(2), sg.zeros(2, device="meta"), check_device=False)
    torch.testing.assert_close(torch.ones(2), torch.zeros(2, device="meta"), check_device=False)


@pytest.mark.parametrize(
    ("dtype", "rtol", "atol"),
    [("float16", 1e-3, 1e-5), ("bfloat16", 1.6e-2, 1e-5), ("float32", 1.3e-6, 1e-5)]
    + [("float64", 1e-7, 1e-7), ("int64", 0, 0), ("uint8", 0, 0), ("bool", 0, 0)],
)
def test_default_tolerances_per_dtype(dtype, rtol, atol):
    """The tolerances named in each library's mismatch message are PyTorch's table."""
    pair = _close(
        lambda m: (m.zeros(3, dtype=getattr(m, dtype)), m.ones(3, dtype=getattr(m, dtype)))
    )
    for m in (torch, sg):
        _, text = _outcome(pair, m)
        if rtol:
            assert f"(up to {atol} allowed)" in text and f"(up to {rtol} allowed)" in text
        else:
            assert "are not equal!" in text and "allowed" not in text


# (dtype, default [low, high))
RANGES = [
    ("bool", 0, 2),
    ("uint8", 0, 10),
    ("int8", -9, 10),
    ("int16", -9, 10),
    ("int32", -9, 10),
    ("int64", -9, 10),
    ("float16", -9, 9),
    ("bfloat16", -9, 9),
    ("float32", -9, 9),
    ("float64", -9, 9),
]


def _draw(m, dtype, *shape, **kwargs):
    return m.testing.make_tensor(*shape, dtype=getattr(m, dtype), device="cpu", **kwargs)


def _values(x):
    return np.asarray(x.tolist(), dtype=float)


@pytest.mark.parametrize(("dtype", "low", "high"), RANGES)
def test_make_tensor_draws_in_torchs_default_range(dtype, low, high):
    for m in (torch, sg):
        x = _draw(m, dtype, 4000)
        assert str(x.dtype).split(".")[-1].endswith(dtype) and tuple(x.shape) == (4000,)
        values = _values(x)
        assert values.min() >= low and values.max() < high
        if not x.is_floating_point():  # every integer of the range comes up
            assert set(np.unique(values).astype(int)) == set(range(low, high))
        else:
            assert values.min() < low + 1 and values.max() > high - 1


@pytest.mark.parametrize(
    ("dtype", "low", "high"),
    [("int8", -1000, 1000), ("uint8", -5, 3), ("float16", -1e6, 1e6), ("float64", -1e308, 1e308)]
    + [("float32", -0.5, 0.25), ("int64", 2.5, 4.5), ("bool", 1, 5)],
)
def test_make_tensor_clamps_given_bounds_as_torch(dtype, low, high):
    bounds = []
    for m in (torch, sg):
        x = _draw(m, dtype, 3000, low=low, high=high)
        values = _values(x)
        assert np.isfinite(values).all()
        bounds.append((values.min(), values.max()))
    (tmin, tmax), (smin, smax) = bounds
    if dtype.startswith(("int", "uint", "bool")):
        assert (smin, smax) == (tmin, tmax)
    else:  # both fill the same range
        assert abs(smin - tmin) <= 0.02 * (tmax - tmin) and abs(smax - tmax) <= 0.02 * (tmax - tmin)


@pytest.mark.parametrize(
    "shape", [((2, 3),), ([2, 3],), (2, 3), (), (0, 4), ((5,),), (1, 1, 1)], ids=str
)
@pytest.mark.parametrize("noncontiguous", [False, True])
def test_make_tensor_shapes_and_strides_as_torch(shape, noncontiguous):
    got = [_draw(m, "float32", *shape, noncontiguous=noncontiguous) for m in (torch, sg)]
    assert tuple(got[0].shape) == tuple(got[1].shape)
    if got[0].numel():  # (scratchgrad gives an empty tensor NumPy's zero strides)
        assert got[0].stride() == got[1].stride()
    assert got[0].is_contiguous() == got[1].is_contiguous()


def test_make_tensor_options():
    x = _draw(sg, "int8", 50, low=0, high=1, exclude_zero=True)
    assert x.tolist() == _draw(torch, "int8", 50, low=0, high=1, exclude_zero=True).tolist()
    with pytest.warns(FutureWarning, match="low==high"):
        y = _draw(sg, "float32", 3, low=0.0, high=0.0, exclude_zero=True, requires_grad=True)
    with pytest.warns(FutureWarning, match="low==high"):
        z = _draw(torch, "float32", 3, low=0.0, high=0.0, exclude_zero=True, requires_grad=True)
    assert y.tolist() == z.tolist() and y.requires_grad and y.is_leaf
    assert _draw(sg, "bool", 20, low=0, high=1, exclude_zero=True).all()
    w = _draw(sg, "float32", 2, 3, 4, 5, memory_format=sg.channels_last)
    assert w.shape == (2, 3, 4, 5) and not w.requires_grad


MAKE_ERRORS = {
    "low > high": dict(low=2, high=1),
    "low == high int": dict(dtype="int32", low=2, high=2),
    "nan": dict(low=math.nan),
    "out of the dtype": dict(dtype="uint8", low=-10, high=-1),
    "above the dtype": dict(dtype="int8", low=200, high=300),
    "requires grad int": dict(dtype="int64", requires_grad=True),
    "requires grad bool": dict(dtype="bool", requires_grad=True),
    "noncontiguous and memory_format": dict(noncontiguous=True, memory_format="channels_last"),
    "memory_format rank": dict(memory_format="channels_last"),
}


@pytest.mark.parametrize("name", MAKE_ERRORS)
def test_make_tensor_errors_as_torch(name):
    def call(m):
        kwargs = dict(MAKE_ERRORS[name])
        if "memory_format" in kwargs:
            kwargs["memory_format"] = getattr(m, kwargs["memory_format"])
        return _draw(m, kwargs.pop("dtype", "float32"), 2, 3, 4, **kwargs)

    expected = _outcome(call, torch)
    assert expected is not None
    assert _outcome(call, sg) == expected


def test_make_tensor_refuses_a_dtype_it_cannot_draw():
    with pytest.raises(TypeError, match="'scratchgrad.complex64' is not supported"):
        sg.testing.make_tensor(2, dtype=np.complex64, device="cpu")
