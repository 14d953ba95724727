"""Comparing scratchgrad with PyTorch, the oracle: the one harness the tests use to run both
libraries on the same inputs and compare the output and every gradient, with one dtype table and
one tolerance table.

The usual test is one call::

    check_against_torch(lambda x: F.gelu(x), lambda x: TF.gelu(x), [array], "float32")

Tests that build their inputs or modules themselves (masks as keywords, layers with copied
weights) make the leaves with ``leaves``, run both libraries, and hand the results to
``check_outputs_and_gradients``.
"""

import doctest
import os
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, settings

import scratchgrad as sg

# the floating dtypes comparisons run in: name -> (scratchgrad's dtype, PyTorch's)
DTYPES = {
    "float64": (sg.float64, torch.float64),
    "float32": (sg.float32, torch.float32),
    "bfloat16": (sg.bfloat16, torch.bfloat16),
    "float16": (sg.float16, torch.float16),
}
_16_BIT = (torch.bfloat16, torch.float16)

# (rtol, atol) by dtype: float64 tight, float32 loose; a 16-bit result is rounded to 2**-8
# (bfloat16) or 2**-11 (float16) relative, and a few roundings in another order than PyTorch's
# stay within these
TOLERANCE = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-4, 1e-5),
    "bfloat16": (3e-2, 3e-2),
    "float16": (4e-3, 4e-3),
}
# (rtol, atol) where both sides run the same float64 arithmetic in the same order (the engine's
# bookkeeping around one op, not two algorithms), so only round-off may differ
ROUND_OFF = (1e-10, 1e-12)


def assert_close(actual, expected, dtype="float64", what="", tolerance=None):
    """``actual`` (a scratchgrad tensor or an array) equals ``expected`` (a torch tensor or an
    array) in shape, and in value within ``dtype``'s tolerance, or within ``tolerance``
    (rtol, atol) where a test holds another bound (or a function of ``expected`` giving them,
    such as ``normwise``'s). 16-bit values are compared as float32."""
    if isinstance(expected, torch.Tensor):
        expected = expected.detach()
        expected = (expected.float() if expected.dtype in _16_BIT else expected).numpy()
    if isinstance(actual, sg.Tensor):  # (NumPy may not read a tensor that requires grad)
        actual = actual.detach()
    actual, expected = np.asarray(actual), np.asarray(expected)
    if callable(tolerance):
        tolerance = tolerance(expected)
    rtol, atol = tolerance or TOLERANCE[dtype]
    if actual.dtype in (sg.bfloat16, sg.float16):
        actual = actual.astype(np.float32)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if np.ndim(atol):  # an atol per entry, which assert_allclose cannot print
        close = np.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
        far = ~close
        assert close.all(), (
            f"{what}: not within rtol={rtol} and the atol per entry at {np.argwhere(far)[:5]}: "
            f"{actual[far][:5]} (actual), {expected[far][:5]} (desired), atol "
            f"{np.broadcast_to(atol, far.shape)[far][:5]}"
        )
        return
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)


def normwise(dtype="float64", dims=(-2, -1)):
    """A ``tolerance`` for results made by cancellation within each matrix (a determinant's
    gradient, the adjugate: its small entries are differences of large products), whose error
    is bounded relative to the matrix's largest entry, not to each entry's own size: each
    entry is held within ``dtype``'s rtol of the largest magnitude among ``dims``, the last two
    (per entry below two dims). ``dims=None``: of the whole result, for Fourier transforms,
    each of whose entries sums all the signal's, so that the round-off of a small entry is
    that of the largest."""
    rtol, atol = TOLERANCE[dtype]

    def tolerance(expected):
        if not expected.size or (dims is not None and expected.ndim < len(dims)):
            return rtol, atol
        scale = np.abs(expected).max(axis=dims, keepdims=True)
        return rtol, np.maximum(atol, rtol * scale)

    return tolerance


def same_dtype(ours, theirs) -> bool:
    """A scratchgrad tensor and a PyTorch tensor have the same dtype (by name)."""
    return str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


def assert_same(ours, theirs) -> None:
    """The same dtype and entries, bit for bit, of a result (or a tuple of them, as
    ``values, indices``) and PyTorch's; ours must not require grad (``numpy()`` refuses it)."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            assert_same(o, t)
        return
    assert same_dtype(ours, theirs), (ours.dtype, theirs.dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def leaves(array, dtype="float64", requires_grad=None):
    """The same leaf as a scratchgrad and a PyTorch tensor. A floating array is cast to ``dtype``
    and requires grad (unless ``requires_grad`` says otherwise); an integer or boolean array
    (class indices, masks) keeps its dtype and needs no grad; ``None`` stays ``None``."""
    if array is None:
        return None, None
    array = np.asarray(array)
    floating = array.dtype.kind == "f"
    ours, theirs = DTYPES[dtype] if floating else (None, None)
    grad = floating if requires_grad is None else requires_grad
    return (
        sg.tensor(array, dtype=ours, requires_grad=grad),
        torch.tensor(array, dtype=theirs, requires_grad=grad),
    )


def module_pair(build, dtype="float64", init=None, seed=0):
    """The module ``build(nn)`` in both libraries (``nn`` is ``scratchgrad.nn`` or
    ``torch.nn``) in ``dtype``, ours holding a copy of PyTorch's state: its initialisation under
    ``torch.manual_seed(seed)``, then ``init(p)`` on each parameter if given."""
    torch.manual_seed(seed)
    theirs = build(torch.nn).to(DTYPES[dtype][1])
    if init is not None:
        with torch.no_grad():
            for p in theirs.parameters():
                init(p)
    ours = build(sg.nn).to(DTYPES[dtype][0])
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def parameter_pairs(ours, theirs):
    """[(name, our parameter, PyTorch's)] of two modules whose parameter names must match."""
    their_params = dict(theirs.named_parameters())
    names = [name for name, _ in ours.named_parameters()]
    assert names == list(their_params), f"parameters {names} != {list(their_params)}"
    return [(name, p, their_params[name]) for name, p in ours.named_parameters()]


def check_against_torch(
    ours,
    theirs,
    arrays,
    dtype="float64",
    *,
    what="",
    seed=1,
    grad=True,
    tolerance=None,
    grad_tolerance=None,
):
    """Run ``ours`` on scratchgrad leaves and ``theirs`` on PyTorch leaves made from the same
    ``arrays`` (see ``leaves``); compare the outputs, then backpropagate the same random gradient
    through both and compare the gradient of every input that requires one, and of every
    parameter when ``ours`` and ``theirs`` are modules. ``grad=False``: the outputs only.
    ``tolerance``: see ``assert_close``; ``grad_tolerance``: the gradients', if another.
    Returns both outputs."""
    inputs = [leaves(a, dtype, None if grad else False) for a in arrays]
    out = ours(*(x for x, _ in inputs))
    expected = theirs(*(t for _, t in inputs))
    params = parameter_pairs(ours, theirs) if isinstance(ours, sg.nn.Module) else ()
    check_outputs_and_gradients(
        out, expected, inputs, dtype, what, params, seed, grad, tolerance, grad_tolerance
    )
    return out, expected


def check_second_derivative(call, arrays) -> None:
    """Second derivatives through an op's double backward: ``call(functional, x, *rest)`` (the
    op of ``torch.nn.functional`` or ours) run on float64 leaves made from ``arrays``, and
    every leaf's gradient of ``|d loss/dx|^2`` (loss: ``(out * out).sum()``) compared."""
    results = []
    for lib in (sg, torch):
        x, *rest = (lib.tensor(a, requires_grad=True) for a in arrays)
        out = call(lib.nn.functional, x, *rest)
        (gx,) = lib.autograd.grad((out * out).sum(), x, create_graph=True)
        (gx * gx).sum().backward()
        results.append([t.grad for t in (x, *rest)])
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)


def check_outputs_and_gradients(
    out,
    expected,
    inputs,
    dtype="float64",
    what="",
    params=(),
    seed=1,
    grad=True,
    tolerance=None,
    grad_tolerance=None,
):
    """Compare the outputs (a tensor, or a tuple or list of tensors and ``None``s) in dtype,
    requires_grad and value; then (``grad``) backpropagate the same random gradient of every
    output that requires one through both libraries and compare the gradients of the ``inputs``
    [(ours, theirs)] and the ``params`` [(name, ours, theirs)]. Where PyTorch has no gradient
    (the outputs do not depend on that input), ours must be missing or zero. The gradients
    are compared within ``grad_tolerance`` where given, else ``tolerance``."""
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    expected_outs = tuple(expected) if isinstance(expected, (tuple, list)) else (expected,)
    assert len(outs) == len(expected_outs), f"{what}: {len(outs)} outputs, not {len(expected_outs)}"
    for i, (o, e) in enumerate(zip(outs, expected_outs)):
        assert (o is None) == (e is None), f"{what}: output {i} is {o}, PyTorch's {e}"
        if o is not None:
            assert same_dtype(o, e), f"{what}: output {i} is {o.dtype}, PyTorch's {e.dtype}"
            assert o.requires_grad == e.requires_grad, f"{what}: output {i} requires_grad"
            assert_close(o, e, dtype, f"{what}: output {i}", tolerance)
    if grad:
        _backward_both(outs, expected_outs, np.random.default_rng(seed))
        named = [(f"input {i}", x, t) for i, (x, t) in enumerate(inputs) if x is not None]
        for name, x, t in [*named, *params]:
            if t.grad is None:
                assert x.grad is None or not x.grad.numpy().any(), f"{what}: {name} gets none"
            else:
                assert same_dtype(x.grad, t.grad), f"{what}: gradient of {name}: {x.grad.dtype}"
                where = f"{what}: gradient of {name}"
                assert_close(x.grad, t.grad, dtype, where, grad_tolerance or tolerance)


def _backward_both(outs, expected_outs, rng):
    """Backpropagate the same random gradient of each output through both libraries: the
    gradient of sum(output * upstream) over the outputs that require grad."""
    terms = [
        (o, e, rng.standard_normal(tuple(e.shape)))
        for o, e in zip(outs, expected_outs)
        if e is not None and e.requires_grad
    ]
    if terms:
        sum((o * sg.tensor(u, dtype=o.dtype)).sum() for o, _, u in terms).backward()
        sum((e * torch.tensor(u, dtype=e.dtype)).sum() for _, e, u in terms).backward()


def assert_raises_as_torch(call, kind: type, message: str) -> None:
    """``call(torch)`` raises ``kind``, and so does ``call(scratchgrad)``, its message matching
    ``message`` (the error PyTorch raises, in our words)."""
    with pytest.raises(kind):
        call(torch)
    with pytest.raises(kind, match=message):
        call(sg)


def assert_doc_examples_run(function, globs: dict | None = None) -> None:
    """The examples in ``function``'s doc string run and print what they say."""
    runner = doctest.DocTestRunner()
    for test in doctest.DocTestFinder().find(function, function.__name__, globs=globs or {}):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0


# ---- differential fuzzing ----------------------------------------------------------------------


def fuzz_settings(examples: int) -> settings:
    """The hypothesis settings of a fuzzer comparing both libraries: derandomized (CI runs the
    same examples each time), ``examples`` of them unless ``SCRATCHGRAD_FUZZ_EXAMPLES`` asks
    for another count (thousands while hunting), no deadline and no health checks."""
    return settings(
        max_examples=int(os.environ.get("SCRATCHGRAD_FUZZ_EXAMPLES", examples)),
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )


def outcome(call, *args):
    """``call(*args)``'s result, or the exception it raised (warnings silenced): what a fuzzer
    compares between the libraries."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return call(*args)
        except Exception as error:  # noqa: BLE001 (the error is the result compared)
            return error


def raised_alike(ours, theirs, what: str) -> bool:
    """Whether both outcomes are errors, asserting that ours raised where PyTorch did (an
    instance of its error class) and only there."""
    if isinstance(theirs, Exception):
        assert isinstance(ours, Exception), f"{what}: PyTorch raised {theirs!r}, ours gave {ours}"
        assert isinstance(ours, type(theirs)), f"{what}: {ours!r} where PyTorch raised {theirs!r}"
        return True
    assert not isinstance(ours, Exception), f"{what}: ours raised {ours!r}, PyTorch gave {theirs}"
    return False
