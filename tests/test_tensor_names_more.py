"""More of PyTorch's Tensor names: the real-number answers to its complex-number methods, sizes
and predicates, directional splits, nan-reductions; values and errors against torch."""

import math

import numpy as np
import pytest
import torch

import scratchgrad as sg

A = np.array([[1.0, -2.0, 0.0], [float("nan"), 3.0, float("inf")]])


def test_real_tensors_answer_the_complex_methods_as_torch():
    ours, theirs = sg.tensor(A), torch.tensor(A)
    for name in ["conj", "conj_physical", "resolve_conj", "resolve_neg"]:
        assert getattr(ours, name)() is ours and getattr(theirs, name)() is theirs
    assert ours.real is ours and sg.real(ours) is ours
    for name in ["is_complex", "is_conj", "is_neg"]:
        assert getattr(ours, name)() is getattr(theirs, name)() is False
    np.testing.assert_array_equal(ours.angle().numpy(), theirs.angle().numpy())
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-comp"):
        _ = ours.imag
    assert ours.H.shape == tuple(theirs.H.shape) and ours.mH.shape == tuple(theirs.mH.shape)
    assert sg.zeros(2, 3, 4).adjoint().shape == (2, 4, 3)
    for bad, what in [(sg.zeros(2, 2, 2), "H"), (sg.zeros(3), "mH")]:
        with pytest.raises(RuntimeError) as ours_error:
            getattr(bad, what)
        with pytest.raises(RuntimeError) as theirs_error:
            getattr(torch.zeros(bad.shape), what)
        assert str(ours_error.value) == str(theirs_error.value)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bool", "bfloat16"])
def test_sizes_and_predicates_are_torchs(dtype):
    ours, theirs = sg.zeros(2, 3, dtype=getattr(sg, dtype)), torch.zeros(2, 3)
    theirs = theirs.to(getattr(torch, dtype))
    assert (ours.nbytes, ours.itemsize, ours.ndimension()) == (
        theirs.nbytes,
        theirs.itemsize,
        theirs.ndimension(),
    )
    assert ours.is_signed() == theirs.is_signed()
    assert ours.is_same_size(sg.ones(2, 3)) and not ours.is_same_size(sg.ones(3, 2))


def test_is_nonzero_and_retains_grad_are_torchs():
    assert sg.tensor([2]).is_nonzero() and not sg.tensor([0.0]).is_nonzero()
    for values in ([1, 2], []):
        with pytest.raises(RuntimeError) as theirs:
            torch.tensor(values).is_nonzero()
        with pytest.raises(RuntimeError) as ours:
            sg.tensor(values).is_nonzero()
        assert str(ours.value) == str(theirs.value)
    w = sg.ones(3, requires_grad=True)
    z = w * 2
    assert not z.retains_grad and not w.retains_grad
    z.retain_grad()
    z.retain_grad()  # once is enough: the gradient is not added twice
    assert z.retains_grad
    (z * 3).sum().backward()
    assert z.grad.tolist() == [3.0, 3.0, 3.0]


@pytest.mark.parametrize(
    "name, shape, sections",
    [
        ("hsplit", (6,), 3),
        ("hsplit", (2, 6), [1, 4]),
        ("vsplit", (4, 3), [1, 3]),
        ("dsplit", (2, 2, 4), 2),
        ("hsplit", (6,), 4),
        ("vsplit", (6,), 2),
        ("dsplit", (2, 3), 1),
    ],
)
def test_directional_splits_are_torchs(name, shape, sections):
    a = np.arange(math.prod(shape)).reshape(shape)
    try:
        theirs = getattr(torch, name)(torch.tensor(a), sections)
    except RuntimeError as error:
        with pytest.raises(RuntimeError) as ours:
            getattr(sg, name)(sg.tensor(a), sections)
        assert str(ours.value) == str(error)
        return
    ours = getattr(sg, name)(sg.tensor(a), sections)
    assert [t.tolist() for t in ours] == [t.tolist() for t in theirs]


@pytest.mark.parametrize(
    "name, arguments",
    [("split", (1, 0)), ("split", (0, 0)), ("chunk", (3, 0)), ("unsafe_chunk", (2, 0))]
    + [("unsafe_split", (2, 0)), ("split", (1, 1)), ("chunk", (3, 1))],
)
def test_splitting_an_empty_dimension_gives_torchs_pieces(name, arguments):
    # PyTorch cuts an empty dim into one empty piece (split) or `chunks` of them (chunk)
    ours = getattr(sg.zeros(0, 4), name)(*arguments)
    theirs = getattr(torch.zeros(0, 4), name)(*arguments)
    assert [piece.shape for piece in ours] == [tuple(piece.shape) for piece in theirs]


def test_nan_reductions_and_small_helpers_are_torchs():
    ours, theirs = sg.tensor(A), torch.tensor(A)
    for dim in (None, 0, 1):
        np.testing.assert_array_equal(ours.nansum(dim).numpy(), theirs.nansum(dim).numpy())
        np.testing.assert_array_equal(ours.nanmean(dim).numpy(), theirs.nanmean(dim).numpy())
    assert sg.tensor([1, 2]).nansum().item() == 3
    with pytest.raises(RuntimeError, match="expected input to have floating point or complex"):
        sg.tensor([1, 2]).nanmean()
    ints = [[3, 1], [2, 5]]
    ours_mm, theirs_mm = sg.tensor(ints).aminmax(dim=0), torch.tensor(ints).aminmax(dim=0)
    assert ours_mm.min.tolist() == theirs_mm.min.tolist() and ours_mm.max.tolist() == [3, 5]
    assert sg.tensor(ints).msort().tolist() == torch.tensor(ints).msort().tolist()
    assert (
        sg.diagflat(sg.tensor(ints), -1).tolist() == torch.diagflat(torch.tensor(ints), -1).tolist()
    )
    assert sg.split_with_sizes(sg.arange(5), [2, 3])[1].tolist() == [2, 3, 4]
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 2D tensors"):
        sg.vdot(sg.ones(1, 1), sg.ones(1, 1))
    assert (sg.pi, sg.e, sg.inf, sg.newaxis) == (torch.pi, torch.e, torch.inf, torch.newaxis)


@pytest.mark.parametrize(
    "name, args",
    [(n, ()) for n in ["abs_", "exp_", "sigmoid_", "tanh_", "sqrt_", "floor_", "neg_", "zero_"]]
    + [("clamp_", (0.2, 0.6)), ("clamp_min_", (0.3,)), ("fill_", (2.0,)), ("xlogy_", (2.0,))],
)
def test_in_place_forms_at_the_root_are_torchs(name, args):
    values = np.array([0.25, 0.5, 0.9])
    ours, theirs = sg.tensor(values), torch.tensor(values)
    assert getattr(sg, name)(ours, *args) is ours
    getattr(torch, name)(theirs, *args)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "shape, wrap",
    [((3, 3), False), ((7, 3), True), ((7, 3), False), ((3, 5), True), ((2, 2, 2), False)],
)
def test_fill_diagonal_is_torchs(shape, wrap):
    ours, theirs = sg.zeros(*shape), torch.zeros(*shape)
    assert ours.fill_diagonal_(5.0, wrap=wrap) is ours
    theirs.fill_diagonal_(5.0, wrap=wrap)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    for bad in [(3,), (2, 3, 3)]:
        with pytest.raises(RuntimeError) as t_error:
            torch.zeros(*bad).fill_diagonal_(1.0)
        with pytest.raises(RuntimeError) as error:
            sg.zeros(*bad).fill_diagonal_(1.0)
        assert str(error.value) == str(t_error.value)


@pytest.mark.parametrize(
    "name, args, kwargs",
    [
        ("addmm_", ((3, 4), (4, 3)), {"beta": 0.5}),
        ("addmv_", ((3, 4), (4,)), {"alpha": 2.0}),
        ("addr_", ((3,), (3,)), {}),
        ("addbmm_", ((2, 3, 4), (2, 4, 3)), {}),
        ("baddbmm_", ((1, 3, 4), (1, 4, 3)), {}),
        ("tril_", (), {}),
        ("triu_", (), {"diagonal": 1}),
        ("cumsum_", (), {"dim": 1}),
        ("cumprod_", (), {"dim": 0}),
        ("renorm_", (), {"p": 2, "dim": 0, "maxnorm": 1.0}),
    ],
)
def test_in_place_products_and_triangles_are_torchs(name, args, kwargs):
    rng = np.random.default_rng(0)
    shape = (1, 3, 3) if name == "baddbmm_" else (3,) if name == "addmv_" else (3, 3)
    base = rng.standard_normal(shape)
    arrays = [rng.standard_normal(s) for s in args]
    ours, theirs = sg.tensor(base), torch.tensor(base)
    assert getattr(ours, name)(*map(sg.tensor, arrays), **kwargs) is ours
    getattr(theirs, name)(*map(torch.tensor, arrays), **kwargs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("p, dim, maxnorm", [(2, 0, 1.0), (1, 1, 2.0), (2, 1, 0.5)])
def test_renorm_leaves_a_slice_of_nan_norm_as_it_is_and_its_gradient_too(p, dim, maxnorm):
    values = np.array([[1.0, 2.0], [float("nan"), 1.0], [3.0, 4.0], [0.1, 0.1]])
    results = []
    for lib in (sg, torch):
        x = lib.tensor(values, requires_grad=True)
        y = x.renorm(p, dim, maxnorm)
        y.backward(lib.ones_like(y))
        results.append((y.detach().numpy(), x.grad.numpy()))
    for ours, theirs in zip(*results):  # (the gradient was NaN over the slice of NaN norm)
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda m: m.ones(2, 3).renorm(0, 0, 1.0), "renorm: non-positive-norm not supported"),
        (lambda m: m.ones(2, 3).renorm(2, 0, -1.0), "renorm: expected maxnorm to be >= 0"),
        (lambda m: m.ones(2, 3).renorm(2, 5, 1.0), "Dimension out of range"),
        (lambda m: m.ones(3).renorm(2, 0, 1.0), "renorm: input needs at least 2 dimensions"),
        (lambda m: m.addmv(m.ones(2), m.ones(2, 3), m.ones(4)), ""),
        (lambda m: m.addr(m.ones(2, 2), m.ones(2, 2), m.ones(2)), ""),
    ],
)
def test_bad_arguments_raise_torchs_exception_types(call, match):
    with pytest.raises((RuntimeError, IndexError)) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value), match=match):
        call(sg)
