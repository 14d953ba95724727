"""Small pieces of PyTorch's surface, against PyTorch: ``dtype``, ``finfo`` and ``iinfo`` (every
field, the repr, the errors), ``Size``, ``set_printoptions`` (the repr of many tensors under
each option), the tensor methods ``detach_``, ``storage_offset``, ``data_ptr``,
``pin_memory`` and ``apply_``, and ``autograd.set_detect_anomaly``."""

import doctest
import pickle
import re
import sys
import warnings

import numpy as np
import pytest
import torch
from oracle import assert_raises_as_torch

import scratchgrad as sg

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]
FINFO_FIELDS = ["bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"]


def test_dtype_is_the_class_of_every_dtype():
    for dtype in [*FLOATS, *INTS, "bool"]:
        assert isinstance(getattr(sg, dtype), sg.dtype)
    assert sg.ones(2).dtype == sg.float32 and not isinstance("float32", sg.dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_finfo_has_pytorchs_fields_and_repr(dtype):
    ours, theirs = sg.finfo(getattr(sg, dtype)), torch.finfo(getattr(torch, dtype))
    for field in FINFO_FIELDS:
        mine, expected = getattr(ours, field), getattr(theirs, field)
        assert mine == expected and type(mine) is type(expected), f"{dtype}.{field}: {mine}"
    assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
    other = sg.float32 if dtype == "float64" else sg.float64
    assert ours == sg.finfo(getattr(sg, dtype)) and ours != sg.finfo(other)
    with pytest.raises(AttributeError):
        ours.eps = 1.0


@pytest.mark.parametrize("dtype", INTS)
def test_iinfo_has_pytorchs_fields_and_repr(dtype):
    ours, theirs = sg.iinfo(getattr(sg, dtype)), torch.iinfo(getattr(torch, dtype))
    for field in ["bits", "max", "min", "dtype"]:
        mine, expected = getattr(ours, field), getattr(theirs, field)
        assert mine == expected and type(mine) is type(expected), f"{dtype}.{field}: {mine}"
    assert repr(ours) == repr(theirs)


def test_finfo_without_a_dtype_is_the_defaults_and_takes_python_float():
    assert sg.finfo().eps == torch.finfo().eps
    assert sg.finfo(float).dtype == torch.finfo(float).dtype == "float64"
    for lib in (sg, torch):
        lib.set_default_dtype(lib.float64)
    try:
        assert sg.finfo().dtype == torch.finfo().dtype == "float64"
    finally:
        for lib in (sg, torch):
            lib.set_default_dtype(lib.float32)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m: m.finfo(m.int32), "finfo\\(\\) requires a floating point input type"),
        (lambda m: m.finfo(m.bool), "finfo\\(\\) requires a floating point input type"),
        (lambda m: m.iinfo(m.float32), "iinfo\\(\\) requires an integer input type"),
        (lambda m: m.iinfo(m.bool), "bool is not supported by .*iinfo"),
        (lambda m: m.finfo("float32"), "must be .*dtype, not str"),
        (lambda m: m.iinfo(), "missing 1 required positional argument"),
    ],
)
def test_finfo_and_iinfo_refuse_what_pytorch_refuses(call, message):
    assert_raises_as_torch(call, TypeError, message)


# ---- Size -----------------------------------------------------------------------------------


def test_size_is_a_tuple_that_prints_and_combines_as_pytorchs():
    for lib in (sg, torch):
        s = lib.zeros(2, 3).size()
        prefix = lib.__name__
        assert repr(s) == str(s) == f"{prefix}.Size([2, 3])"
        assert isinstance(s, tuple) and isinstance(s, lib.Size) and s == (2, 3)
        assert s.numel() == 6 and lib.Size().numel() == 1 and repr(lib.Size()).endswith("([])")
        for made in (s[1:], s + (4,), (4,) + s, s * 2, 2 * s):
            assert type(made) is lib.Size
        assert type(s[0]) is int and s.count(2) == 1 and s.index(3) == 1
        assert hash(s) == hash((2, 3))
        back = pickle.loads(pickle.dumps(s))
        assert back == s and type(back) is lib.Size
        assert lib.Size([lib.tensor(3), True]) == (3, 1)
        assert lib.zeros(s).shape == (2, 3) and lib.ones(2, 3).reshape(s).shape == (2, 3)


def test_size_refuses_what_pytorch_refuses():
    assert_raises_as_torch(lambda m: m.Size([2.0]), TypeError, r"item 0 is 'float'")
    assert_raises_as_torch(lambda m: m.Size(3), TypeError, "not iterable")


def test_shape_is_a_size_as_torchs_and_size_with_a_dim_an_int():
    """``.shape`` is ``size()``, a Size that prints and counts as ``torch.Size`` does."""
    x, t = sg.zeros(2, 3), torch.zeros(2, 3)
    assert type(x.shape) is sg.Size and x.shape == x.size() == (2, 3) and x.size(1) == 3
    assert repr(x.shape) == repr(t.shape).replace("torch.", "scratchgrad.")
    assert x.shape.numel() == t.shape.numel() and type(x.shape[1:]) is sg.Size


# ---- set_printoptions -----------------------------------------------------------------------


@pytest.fixture
def printoptions():
    """Both libraries' print options set back to the defaults after the test."""
    yield
    for lib in (sg, torch):
        lib.set_printoptions(profile="default")


def _arrays():
    """Tensors that exercise each rule: fixed and scientific notation, whole floats, inf and
    NaN, zeros, summaries in several dims, long lines, 0-d and empty."""
    rng = np.random.default_rng(0)
    wild = rng.standard_normal(40) * 10.0 ** rng.integers(-3, 6, 40)
    special = rng.standard_normal(12)
    special[::3], special[1::5], special[2::7] = np.inf, np.nan, -0.0
    return {
        "0-d": np.array(1.5),
        "0-d whole": np.array(-3.0),
        "vector": rng.standard_normal(7),
        "long vector": rng.standard_normal(2000),
        "whole": rng.integers(-5000, 5000, (4, 6)).astype(float),
        "big": rng.standard_normal((3, 4)) * 1e9,
        "tiny": rng.standard_normal(6) * 1e-6,
        "wide range": wild.reshape(4, 10),
        "inf, nan, -0": special,
        "zeros": np.zeros((2, 3)),
        "3 dims, summarised": rng.standard_normal((12, 12, 12)),
        "matrix, summarised": rng.standard_normal((40, 40)),
        "empty 2-d": np.zeros((3, 0)),
        "empty": np.zeros(0),
        "ints": rng.integers(-300, 300, (5, 30)),
        "long ints": rng.integers(0, 10, 1500),
        "bools": rng.random((3, 9)) < 0.5,
    }


OPTIONS = {
    "default": {},
    "precision 2": {"precision": 2},
    "precision 7, wide": {"precision": 7, "linewidth": 200},
    "threshold 5": {"threshold": 5},
    "edgeitems 1": {"edgeitems": 1},
    "edgeitems 0": {"edgeitems": 0},
    "linewidth 40": {"linewidth": 40},
    "short": {"profile": "short"},
    "full": {"profile": "full"},
    "short, precision 5": {"profile": "short", "precision": 5},
    "sci_mode on": {"sci_mode": True},
    "sci_mode off": {"sci_mode": False},
}
SUFFIX_BREAK = re.compile(r",\n\s+(?=(dtype|requires_grad|grad_fn|size)=)")


def _same_layout(ours: str, theirs: str) -> tuple[str, str]:
    """Both reprs with the library's name alike. A dtype's name is longer in scratchgrad, which
    can move the suffixes to another line: their line breaks are not compared."""
    theirs = theirs.replace("torch.", "scratchgrad.")
    return SUFFIX_BREAK.sub(", ", ours), SUFFIX_BREAK.sub(", ", theirs)


@pytest.mark.parametrize("option", OPTIONS)
def test_tensors_print_as_pytorchs_under_each_option(option, printoptions):
    for lib in (sg, torch):
        lib.set_printoptions(**OPTIONS[option])
    for what, array in _arrays().items():
        dtypes = FLOATS if array.dtype.kind == "f" else [str(array.dtype).split(".")[-1]]
        for dtype in dtypes:
            # float32 data first: PyTorch rounds float64 to 16 bits through float32
            data = array.astype(np.float32) if array.dtype.kind == "f" else array
            with np.errstate(over="ignore"):  # (NumPy warns where 1e9 becomes inf in 16 bits)
                ours = sg.tensor(data).to(getattr(sg, dtype))
            theirs = torch.tensor(data).to(getattr(torch, dtype))
            a, b = _same_layout(repr(ours), repr(theirs))
            assert a == b, f"{what} in {dtype} under {option}:\n{a}\n!=\n{b}"


def test_suffixes_break_at_the_line_width_as_pytorchs(printoptions):
    """The default dtype's suffix is as long in both libraries: the line break is compared."""
    for width in (40, 60, 80):
        for lib in (sg, torch):
            lib.set_printoptions(linewidth=width)
        for n in (3, 5, 6, 7, 9):
            ours = sg.arange(float(n)).requires_grad_() * 1.5
            theirs = torch.arange(float(n)).requires_grad_() * 1.5
            assert repr(ours) == repr(theirs).replace("torch.", "scratchgrad.")


def test_set_printoptions_sets_sci_mode_at_every_call_and_ignores_unknown_profiles(
    printoptions,
):
    printing = sys.modules["scratchgrad.printing"]
    for lib, read in ((sg, printing.get_printoptions), (torch, torch._tensor_str.get_printoptions)):
        lib.set_printoptions(sci_mode=True)
        lib.set_printoptions(precision=2)
        lib.set_printoptions(profile="no such profile")
        assert read() == {
            "precision": 2,
            "threshold": 1000,
            "edgeitems": 3,
            "linewidth": 80,
            "sci_mode": None,
        }


def test_printing_doc_examples_run(printoptions):
    assert doctest.testmod(sys.modules["scratchgrad.printing"]).failed == 0


# ---- tensor methods -------------------------------------------------------------------------


def test_detach_in_place_makes_a_leaf_that_needs_no_grad_as_pytorchs():
    for lib in (sg, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        assert y.detach_() is y and not y.requires_grad and y.grad_fn is None and y.is_leaf
        assert x.detach_() is x and not x.requires_grad
        z = x * 3  # after detach_, the tensor builds no graph
        assert not z.requires_grad


@pytest.mark.parametrize(
    "view",
    [
        lambda m: m.tensor([1.0, 2.0, 3.0], requires_grad=True)[1:],
        lambda m: (m.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1)[1:],
        lambda m: m.tensor([1.0, 2.0, 3.0], requires_grad=True).detach()[1:],
        lambda m: m.ones(2, 3).t(),
    ],
)
def test_a_view_cannot_be_detached_in_place_as_in_pytorch(view):
    assert_raises_as_torch(lambda m: view(m).detach_(), RuntimeError, "can't detach views in-place")


VIEWS = {
    "itself": lambda x: x,
    "slice": lambda x: x[3:],
    "row": lambda x: x.view(2, 5)[1],
    "column": lambda x: x.view(2, 5)[:, 2],
    "transposed row": lambda x: x.view(2, 5).t()[2],
    "strided slice": lambda x: x[1::3],
    "narrow": lambda x: x.view(2, 5).narrow(1, 1, 3),
    "a copy": lambda x: x[3:].clone(),
    "a result": lambda x: x * 2,
    # detach and .data keep a view's place in its base's memory
    "detached slice": lambda x: x[3:].detach(),
    "data of a slice": lambda x: x[3:].data,
    "detached transposed row": lambda x: x.view(2, 5).t()[2].detach(),
    "detached narrow": lambda x: x.view(2, 5).narrow(1, 1, 3).detach(),
    "slice of a detached slice": lambda x: x[2:].detach()[1:],
    "data of a detached row": lambda x: x.view(2, 5)[1].detach().data,
    "detached copy": lambda x: x[3:].clone().detach(),
}


@pytest.mark.parametrize("view", VIEWS)
def test_storage_offset_and_data_ptr_are_pytorchs(view):
    ours, theirs = VIEWS[view](sg.arange(10.0)), VIEWS[view](torch.arange(10.0))
    assert ours.storage_offset() == theirs.storage_offset()
    base = sg.arange(10.0)
    made = VIEWS[view](base)
    if view not in ("a copy", "a result", "detached copy"):  # where PyTorch's first entry is
        assert made.data_ptr() - base.data_ptr() == made.storage_offset() * 4
    assert type(made.data_ptr()) is int and made.data_ptr() == made.numpy().ctypes.data


def test_an_empty_tensors_data_ptr_is_zero_as_pytorchs():
    assert sg.zeros(0).data_ptr() == torch.zeros(0).data_ptr() == 0


def test_pin_memory_gives_the_same_tensor_on_the_cpu():
    x = sg.tensor([1.0, 2.0])
    pinned = x.pin_memory()
    assert pinned is x and pinned.tolist() == [1.0, 2.0]


APPLIED = {
    "float": ([1.0, 2.5, -3.0], "float32", lambda v: v * 10),
    "float64 0-d": (2.0, "float64", lambda v: v + 1),
    "int, float out": ([1, 2, 3], "int64", lambda v: v + 0.7),
    "uint8": ([1, 2, 250], "uint8", lambda v: v + 5 if v < 200 else 255),
    "bool": ([True, False], "bool", lambda v: not v),
    "float16": ([0.1, 0.2], "float16", lambda v: v * 3),
}


@pytest.mark.parametrize("case", APPLIED)
def test_apply_replaces_each_entry_in_place_as_pytorchs(case):
    data, dtype, f = APPLIED[case]
    seen = {}
    for lib in (sg, torch):
        x = lib.tensor(data, dtype=getattr(lib, dtype))
        arguments = []
        out = x.apply_(lambda v, seen=arguments: seen.append(type(v)) or f(v))
        assert out is x
        seen[lib] = (x.tolist(), arguments)
    assert seen[sg] == seen[torch]


def test_apply_writes_through_a_view_into_its_base():
    for lib in (sg, torch):
        x = lib.arange(6.0).view(2, 3)
        x.t()[0].apply_(lambda v: -v - 1)
        assert x.tolist() == [[-1.0, 1.0, 2.0], [-4.0, 4.0, 5.0]]


@pytest.mark.parametrize(
    "call, kind, message",
    [
        (
            lambda m: m.ones(2, requires_grad=True).apply_(lambda v: v),
            RuntimeError,
            "apply_\\(\\) on Variable that requires grad",
        ),
        (
            lambda m: (m.ones(2, requires_grad=True) * 2).apply_(lambda v: v),
            RuntimeError,
            "requires grad",
        ),
        (lambda m: m.ones(1).apply_(lambda v: None), TypeError, "must be real number"),
        (lambda m: m.ones(1).apply_(lambda v: "a"), TypeError, "must be real number, not str"),
        (lambda m: m.ones(1).apply_(3), TypeError, "not callable"),
        (
            lambda m: m.tensor([1], dtype=m.uint8).apply_(lambda v: 300),
            RuntimeError,
            "value cannot be converted to type uint8 without overflow",
        ),
    ],
)
def test_apply_refuses_what_pytorch_refuses(call, kind, message):
    assert_raises_as_torch(call, kind, message)


# ---- anomaly mode ---------------------------------------------------------------------------


def _anomaly_state(lib):
    return lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()


@pytest.fixture
def anomaly_off():
    """Both libraries' anomaly mode off again after the test, whatever it left."""
    yield
    for lib in (sg, torch):
        lib.set_anomaly_enabled(False)


def test_set_detect_anomaly_works_as_a_function_and_as_a_context_manager(anomaly_off):
    for lib in (sg, torch):
        assert _anomaly_state(lib) == (False, True)
        lib.autograd.set_detect_anomaly(True)
        assert _anomaly_state(lib) == (True, True)
        lib.autograd.set_detect_anomaly(False)
        assert _anomaly_state(lib) == (False, True)
        with lib.autograd.set_detect_anomaly(True, check_nan=False):
            assert _anomaly_state(lib) == (True, False)
        assert _anomaly_state(lib) == (False, True)


def test_anomaly_mode_set_at_once_names_the_op_that_made_nan(anomaly_off):
    x = sg.tensor([-1.0], requires_grad=True)
    sg.autograd.set_detect_anomaly(True)
    with (
        np.errstate(invalid="ignore"),
        pytest.raises(
            RuntimeError, match="Function .SqrtBackward0. returned nan values in its 0th output"
        ),
    ):
        x.sqrt().sum().backward()
    assert x.grad is None


def test_check_nan_off_lets_nan_through_as_pytorch(anomaly_off):
    x, xt = sg.tensor([-1.0], requires_grad=True), torch.tensor([-1.0], requires_grad=True)
    with np.errstate(invalid="ignore"), sg.autograd.set_detect_anomaly(True, check_nan=False):
        x.sqrt().sum().backward()
    with torch.autograd.set_detect_anomaly(True, check_nan=False):
        xt.sqrt().sum().backward()
    assert np.isnan(x.grad.numpy()).all() and torch.isnan(xt.grad).all()


def test_detect_anomaly_takes_check_nan_and_warns_as_pytorchs(anomaly_off):
    for lib in (sg, torch):
        with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
            mode = lib.autograd.detect_anomaly(check_nan=False)
        with mode:
            assert _anomaly_state(lib) == (True, False)
        assert _anomaly_state(lib) == (False, True)


def test_anomaly_doc_examples_run():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert doctest.testmod(sys.modules["scratchgrad.autograd.anomaly"]).failed == 0


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_finfo_of_a_complex_dtype_is_its_parts_as_torch(dtype):
    ours, theirs = sg.finfo(getattr(sg, dtype)), torch.finfo(getattr(torch, dtype))
    assert (ours.eps, ours.max, ours.bits) == (theirs.eps, theirs.max, theirs.bits)
    assert str(ours.dtype).split(".")[-1] == theirs.dtype
