"""Gradients where the derivative is a convention, not a limit: ties, NaNs and the points where
a formula divides zero by zero. PyTorch picks a value at each; a library that picks another
gives a silently different training run, so each is compared with PyTorch's."""

import warnings

import numpy as np
import pytest
import torch
from oracle import check_against_torch

import scratchgrad as sg

NAN = float("nan")

# max(), min(), median() and nanmedian() of all entries share the gradient evenly among the
# entries equal to the result, or among the NaNs where it is NaN; along a dim, one entry takes
# it (the index returned). amax leaves a NaN maximum's gradient NaN, as PyTorch's.
TIES = [[1.0, 2.0, 2.0, 3.0], [2.0, 2.0, 1.0], [3.0, 3.0, 3.0]]
NANS = [[1.0, NAN, 2.0, NAN], [1.0, 2.0, 2.0, NAN], [NAN, NAN, 1.0], [NAN]]
OF_ALL = {
    "max": lambda x: x.max(),
    "min": lambda x: x.min(),
    "median": lambda x: x.median(),
    "nanmedian": lambda x: x.nanmedian(),
    "amax": lambda x: x.amax(),
    "median_dim": lambda x: x.median(0).values,
    "nanmedian_dim": lambda x: x.nanmedian(0).values,
}


@pytest.mark.parametrize("name", OF_ALL)
@pytest.mark.parametrize("values", TIES + NANS, ids=str)
def test_a_statistic_of_all_entries_shares_its_gradient_as_pytorch(name, values):
    check_against_torch(OF_ALL[name], OF_ALL[name], [np.array(values)])


@pytest.mark.parametrize("name", ["max", "min", "median", "nanmedian"])
def test_statistics_of_all_entries_of_a_matrix_and_under_vmap(name):
    """Entries equal across rows share the gradient wherever they are. Under vmap each
    member's gradient is what the statistic of that member alone gives (torch.vmap gives
    one entry all of it, unlike PyTorch's own statistic of the member: not followed)."""
    rows = np.array([[1.0, 4.0, 4.0], [4.0, 0.0, NAN], [2.0, 2.0, 2.0]])
    check_against_torch(OF_ALL[name], OF_ALL[name], [rows])
    x = sg.tensor(rows, requires_grad=True)
    sg.vmap(OF_ALL[name])(x).sum().backward()
    for row, grad in zip(rows, x.grad.numpy()):
        alone = sg.tensor(row, requires_grad=True)
        OF_ALL[name](alone).backward()
        np.testing.assert_array_equal(grad, alone.grad.numpy())


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_of_no_entries_raises_as_pytorch(name):
    for lib in (sg, torch):
        with pytest.raises(RuntimeError, match=rf"^{name}\(\): Expected reduction dim to be"):
            getattr(lib.zeros(0, 3), name)()


def test_pow_with_a_zero_exponent_tensor_has_gradient_zero_at_zero():
    """d/dx x**0 is 0, also at x = 0 where x**-1 is infinite (a number exponent was already
    right); the exponent's gradient at 0**y, y >= 0, is 0."""
    base, exponent = np.array([0.0, 0.0, 2.0, -1.5]), np.array([0.0, -1.0, 0.0, 0.0])
    check_against_torch(lambda b, e: b**e, lambda b, e: b**e, [base, exponent])
    check_against_torch(lambda b, e: b**e, lambda b, e: b**e, [base, np.zeros(())])


def test_atan2_at_the_origin_and_where_the_squares_underflow_has_gradient_zero():
    """Both partials share 1 / (x**2 + y**2), which PyTorch takes as 0 where that sum is 0:
    at the origin (either zero's sign) and where the squares underflow; a sum that is
    subnormal but not 0 still gives NaN and infinity, as PyTorch's."""
    y = np.array([0.0, -0.0, 0.0, 1e-200, 1e-160, np.inf])
    x = np.array([0.0, 0.0, -0.0, 0.0, 0.0, 1.0])
    check_against_torch(sg.atan2, torch.atan2, [y, x])


def test_atan2_second_derivative_at_the_origin_is_pytorchs():
    """The mask is a differentiable op, so a double backward sees the same convention."""
    grads = []
    for lib in (sg, torch):
        y = lib.tensor([0.0, 1.0], dtype=lib.float64, requires_grad=True)
        x = lib.tensor([0.0, 2.0], dtype=lib.float64, requires_grad=True)
        (gy,) = lib.autograd.grad(lib.atan2(y, x).sum(), y, create_graph=True)
        (gyx,) = lib.autograd.grad(gy.sum(), x)
        grads.append(gyx.detach().numpy())
    np.testing.assert_allclose(*grads, rtol=1e-12)  # NaN where NaN


SPREADS = {
    "std": lambda x: x.std(),
    "std_dim": lambda x: x.std(1, correction=0),
    "std_mean": lambda x: sum(sg_or_torch(x).std_mean(x, 1)),
    "var": lambda x: x.var(1),
}


def sg_or_torch(x):
    return sg if isinstance(x, sg.Tensor) else torch


@pytest.mark.parametrize("name", SPREADS)
@pytest.mark.parametrize("rows", [[[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]], [[2.0, 2.0, 2.0]]], ids=str)
def test_the_deviation_of_equal_entries_has_gradient_zero(name, rows):
    """std is sqrt of the variance, whose gradient PyTorch takes as 0 where the deviation is
    0 (a row of equal entries), not sqrt's infinity times the variance's zero gradient."""
    check_against_torch(SPREADS[name], SPREADS[name], [np.array(rows)])


def _overwritten(m, x, i):
    y = x * 1
    y[i] = 5.0
    return y


INDEXED = {
    "getitem": lambda m, x, i: x[i],
    "getitem_apart": lambda m, x, i: x.reshape(2, 1, 2)[0, :, i[:2]],
    "setitem": _overwritten,
    "gather": lambda m, x, i: x.gather(0, i),
    "index_select": lambda m, x, i: x.index_select(0, i),
    "index_add": lambda m, x, i: m.zeros(4, dtype=m.float64).index_add(0, i, x[:3]),
    "take": lambda m, x, i: x.take(i),
    "embedding": lambda m, x, i: m.nn.functional.embedding(i, x.reshape(4, 1)),
    "embedding_bag": lambda m, x, i: m.nn.functional.embedding_bag(i[None], x.reshape(4, 1)),
}


@pytest.mark.parametrize("name", INDEXED)
def test_an_index_written_after_the_forward_leaves_the_gradient_as_computed(name):
    """An index tensor changed in place after the forward: PyTorch raises at backward (it saved
    the tensor); scratchgrad's graph keeps a copy, so the gradient is still the one of what was
    computed, PyTorch's with the index left alone. (It used the new index silently.)"""
    grads = []
    for m in (torch, sg):
        x = m.tensor([0.5, -1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
        i = m.tensor([0, 0, 2])
        y = INDEXED[name](m, x, i)
        if m is sg:
            i[0] = 1
        y.backward(m.arange(1.0, y.numel() + 1, dtype=m.float64).reshape(y.shape))
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


ELEMENTWISE_EXTREMES = {
    "maximum": lambda m, x, y: m.maximum(x, y),
    "minimum": lambda m, x, y: m.minimum(x, y),
    "max of two": lambda m, x, y: m.max(x, y),
    "min of two": lambda m, x, y: x.min(y),
}


@pytest.mark.parametrize("name", ELEMENTWISE_EXTREMES)
def test_maximum_and_minimum_give_both_operands_the_gradient_where_either_is_nan(name):
    """No winner and no tie where an operand is NaN: PyTorch sends all of the gradient to
    each (scratchgrad sent it to the second operand alone); ties still split it in half."""
    call = ELEMENTWISE_EXTREMES[name]
    x = np.array([NAN, 1.0, 1.0, NAN, 3.0, -1.0])
    y = np.array([2.0, NAN, 1.0, NAN, 0.0, 0.0])
    check_against_torch(lambda a, b: call(sg, a, b), lambda a, b: call(torch, a, b), [x, y])


@pytest.mark.parametrize("base", [0.0, -2.0, 2.0])
def test_a_number_to_a_tensor_power_has_pytorchs_gradient_in_the_exponent(base):
    """``0.0 ** y`` and ``(-2.0) ** y`` raised at backward (math.log of the base); PyTorch's
    gradient is 0 for 0**y at y >= 0, -inf times the gradient below, and NaN for a negative
    base."""
    y = np.array([0.0, 2.0, -1.0, 0.5])
    check_against_torch(lambda t: base**t, lambda t: base**t, [y])


NANMEANS = {
    "of all": lambda x: x.nanmean(),
    "along rows": lambda x: x.nanmean(1),
    "along columns, kept": lambda x: x.nanmean(0, keepdim=True),
    "of both dims in float64": lambda x: x.nanmean((0, 1), dtype=x.double().dtype),
}


@pytest.mark.parametrize("name", NANMEANS)
@pytest.mark.parametrize(
    "rows",
    [[[NAN, NAN], [1.0, NAN]], [[NAN, NAN], [NAN, NAN]], [[-0.0, NAN], [2.0, 3.0]]],
    ids=str,
)
def test_nanmean_of_an_all_nan_slice_has_gradient_nan_as_pytorch(name, rows):
    """PyTorch's nansum multiplies the gradient by the mask of numbers, so the 1 / 0 of an
    all-NaN slice's mean meets 0 there and gives NaN; elsewhere a NaN entry's gradient is 0."""
    results = []
    for lib in (sg, torch):
        x = lib.tensor(rows, dtype=lib.float32, requires_grad=True)
        out = NANMEANS[name](x)
        out.sum().backward()
        results.append((out.detach().numpy(), x.grad.numpy()))
    for ours, theirs in zip(*results):
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)  # (NaNs equal)
        numbers = ~np.isnan(theirs)  # and -0.0 is not 0.0 here (a NaN's sign says nothing)
        np.testing.assert_array_equal(np.signbit(ours[numbers]), np.signbit(theirs[numbers]))


NANSUMS = {
    "of all": lambda x: x.nansum(),
    "along rows": lambda x: x.nansum(1),
    "along columns, kept": lambda x: x.nansum(0, keepdim=True),
    "in float64": lambda x: x.nansum(1, dtype=x.double().dtype),
    "nanmean along rows": lambda x: x.nanmean(1),
}


@pytest.mark.parametrize("name", NANSUMS)
@pytest.mark.parametrize("upstream", [float("inf"), -float("inf"), NAN, 2.0])
def test_nansum_multiplies_the_gradient_by_the_mask_of_numbers_as_pytorch(name, upstream):
    """PyTorch's nansum gives its NaNs ``grad * 0``: NaN where the incoming gradient is
    infinite or NaN, where masking the gradient out would give 0."""
    rows = [[1.0, NAN, -2.0], [NAN, NAN, 3.0]]
    results = []
    for lib in (sg, torch):
        x = lib.tensor(rows, dtype=lib.float32, requires_grad=True)
        out = NANSUMS[name](x)
        out.backward(lib.full_like(out, upstream))
        results.append((out.detach().numpy(), x.grad.numpy(), out.grad_fn.name()))
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)  # (NaNs equal)


def test_nansum_refuses_complex_input_as_pytorch():
    for lib in (sg, torch):
        with pytest.raises(RuntimeError, match="nansum on CPU does not support complex"):
            lib.nansum(lib.tensor([1j, 2.0]))


OF_ALL_CHOSEN = {
    "max": lambda x: x.max(),
    "min": lambda x: x.min(),
    "median": lambda x: x.median(),
    "nanmedian": lambda x: x.nanmedian(),
}


@pytest.mark.parametrize("name", OF_ALL_CHOSEN)
@pytest.mark.parametrize("upstream", [float("inf"), NAN])
def test_a_statistic_of_all_entries_leaves_the_others_gradient_0_as_pytorch(name, upstream):
    """PyTorch writes grad / count into zeros at the entries equal to max() (min(), median()),
    so an infinite or NaN grad leaves the others 0, not inf * 0 = NaN (amax's gives NaN)."""
    results = []
    for lib in (sg, torch):
        third = NAN if name == "nanmedian" else 0.5
        x = lib.tensor([[1.0, 3.0, third], [3.0, -1.0, 2.0]], requires_grad=True)
        out = OF_ALL_CHOSEN[name](x)
        out.backward(lib.tensor(upstream))
        results.append(x.grad.numpy())
    np.testing.assert_array_equal(*results)


NORMS = {
    "inf, along rows": lambda x: x.norm(float("inf"), dim=1),
    "-inf, of all": lambda x: x.norm(-float("inf")),
    "2, along columns": lambda x: x.norm(2, dim=0),
    "3, kept": lambda x: x.norm(3, dim=1, keepdim=True),
    "fro": lambda x: x.norm("fro", dim=1),
}


@pytest.mark.parametrize("name", NORMS)
@pytest.mark.parametrize("upstream", [1.0, float("inf")])
def test_tensor_norm_has_vector_norms_gradients_as_pytorch(name, upstream):
    """PyTorch's Tensor.norm is linalg.vector_norm: the inf norm's gradient skips NaN entries
    (amax of |x| made every entry's NaN), the zero vector's is grad * 0 (NaN for an infinite
    grad)."""
    results = []
    for lib in (sg, torch):
        x = lib.tensor([[1.0, NAN, -3.0], [0.0, -0.0, 0.0], [2.0, -2.0, 1.0]], requires_grad=True)
        out = NORMS[name](x)
        out.backward(lib.full_like(out, upstream))
        results.append((out.detach().numpy(), x.grad.numpy(), out.grad_fn.name()))
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("upstream", [1.0, float("inf")])
def test_logaddexp_has_pytorchs_gradient_at_infinities_and_ties(upstream):
    """PyTorch's partials grad / (1 + exp(y - x)): NaN at equal infinities (inf - inf), a half
    each at a tie (second derivative 1/4 there), grad itself beside -inf."""
    x = [float("inf"), -float("inf"), 1.0, 2.0, -float("inf"), 0.0]
    y = [float("inf"), -float("inf"), 1.0, -float("inf"), 3.0, NAN]
    results = []
    for lib in (sg, torch):
        a, b = lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)
        out = lib.logaddexp(a, b)
        ga, gb = lib.autograd.grad(out, [a, b], lib.full_like(out, upstream), create_graph=True)
        (gga,) = lib.autograd.grad(ga.sum(), [a]) if upstream == 1.0 else (ga,)
        results.append([t.detach().numpy() for t in (out, ga, gb, gga)] + [out.grad_fn.name()])
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize(
    "count", [lambda m, x: m.linalg.vector_norm(x, 0), lambda m, x: x.norm(0, dim=0)]
)
def test_the_zero_norm_has_no_gradient_as_pytorch(count):
    """A count of nonzero entries: PyTorch's backward gives no gradient (x.grad stays None, and
    autograd.grad needs allow_unused), not zeros."""
    for lib in (sg, torch):
        x = lib.tensor([1.0, 0.0, 2.0], requires_grad=True)
        count(lib, x).backward()
        assert x.grad is None
        assert lib.autograd.grad(count(lib, x), x, allow_unused=True) == (None,)


PRODUCTS = {
    "prod along rows": lambda x: x.prod(1),
    "prod of all": lambda x: x.prod(),
    "prod along columns, kept": lambda x: x.prod(0, keepdim=True),
    "cumprod": lambda x: x.cumprod(1),
}
NAN_ROWS = [[1.0, NAN, 3.0], [2.0, -1.0, 0.5]]
INF_ROWS = [[float("inf"), 2.0, -1.0], [float("inf"), -float("inf"), 3.0]]
NAN_AND_ZERO_ROWS = [[1.0, NAN, 3.0], [2.0, 0.0, 0.5]]  # a zero anywhere: the others' product
# cumprod as PyTorch's: before a slice's first zero out / x, at it the products around it
ZEROS_AND_NAN_IN_ONE_ROW = [[0.0, NAN, 2.0], [1.0, 0.0, NAN, 0.0], [2.0, 0.0, 3.0, 0.0]]
CASES = [(name, rows) for name in PRODUCTS for rows in (NAN_ROWS, INF_ROWS, NAN_AND_ZERO_ROWS)]


@pytest.mark.parametrize("name, rows", CASES, ids=str)
def test_prod_divides_out_by_x_where_no_entry_is_0_as_pytorch(name, rows):
    """PyTorch's prod gradient is out / x unless some entry is 0: a NaN makes its whole slice's
    gradient NaN, an infinity its own (inf / inf); ours was the product of the others."""
    results = []
    for lib in (sg, torch):
        x = lib.tensor(rows, dtype=lib.float64, requires_grad=True)
        out = PRODUCTS[name](x)
        out.backward(lib.full_like(out, 2.0))
        results.append((out.detach().numpy(), x.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)  # (NaNs equal)


def test_cumprod_along_a_dim_of_one_entry_passes_the_gradient_on_as_pytorch():
    """PyTorch's cumprod backward returns grad itself along a dim of size 1: 1 at a NaN or an
    infinity, where out / x would be NaN."""
    results = []
    for lib in (sg, torch):
        x = lib.tensor([[NAN], [float("inf")], [2.0]], requires_grad=True)
        x.cumprod(1).sum().backward()
        results.append(x.grad.numpy())
    np.testing.assert_array_equal(*results)


INF = float("inf")
VARIANCES = {
    "var": lambda m, x: x.var(),
    "std along rows": lambda m, x: x.std(1),
    "var, no freedom left": lambda m, x: x.var(correction=6),
    "var along rows, no freedom left": lambda m, x: x.var(1, correction=3, keepdim=True),
    "var_mean": lambda m, x: m.stack(m.var_mean(x, 1)),
    "std_mean": lambda m, x: m.stack(m.std_mean(x, correction=0)),
}
INFINITE_ROWS = [
    [[1.0, INF, 2.0], [-INF, 2.0, 3.0]],  # var's gradient -inf beside +inf (composed: NaN)
    [[1.0, 2.0, INF], [3.0, 4.0, 5.0]],  # var_mean's running mean: inf where inf comes last
    [[INF, INF, 1.0], [INF, -INF, 2.0]],
    [[2.0, 2.0, 2.0], [NAN, 1.0, 2.0]],
]


@pytest.mark.parametrize("name", VARIANCES)
@pytest.mark.parametrize("rows", INFINITE_ROWS, ids=str)
def test_var_and_std_at_infinities_and_without_freedom_as_pytorch(name, rows):
    """var's gradient is PyTorch's var_backward, 2 / (n - correction) * grad * (x - mean), and
    var_mean's mean PyTorch's running mean (NaN once an infinity is followed by an entry)."""
    results = []
    for lib in (sg, torch):
        x = lib.tensor(rows, dtype=lib.float64, requires_grad=True)
        with warnings.catch_warnings():  # (no degree of freedom left: PyTorch warns)
            warnings.simplefilter("ignore")
            out = VARIANCES[name](lib, x)
        out.backward(lib.full_like(out, 2.0))
        results.append((out.detach().numpy(), x.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)  # (NaNs equal)


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("grad", [INF, NAN, 2.0])
@pytest.mark.parametrize("values", [[0.0, 3.0, 0.0, 4.0], [[0.0, 0.0], [0.0, 2.0]], [0.0, 2.0]])
def test_prod_of_all_with_zeros_under_any_gradient_as_pytorch(values, grad, create_graph):
    """With two or more zeros PyTorch's prod() gives the gradient 0 unless it is differentiated
    again (then the others' product times grad: NaN under inf); along a dim, always the latter."""
    results = []
    for lib in (sg, torch):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        for out in (x.prod(), x.reshape(-1).prod(0)):
            (g,) = lib.autograd.grad(out, x, lib.tensor(grad).double(), create_graph=create_graph)
            results.append(g.detach().numpy())
    half = len(results) // 2
    for ours, theirs in zip(results[:half], results[half:]):
        np.testing.assert_array_equal(ours, theirs)
    assert sg.ones(2, requires_grad=True).prod(0).grad_fn.name() == "ProdBackward1"


@pytest.mark.parametrize("grad", [2.0, INF, NAN])
@pytest.mark.parametrize("row", ZEROS_AND_NAN_IN_ONE_ROW, ids=str)
def test_cumprod_with_zeros_and_nans_in_one_slice_as_pytorch(row, grad):
    """PyTorch's cumprod gradient: the reversed running sum of grad * out over x before the
    first zero, the products of the entries around that zero at it, 0 after it."""
    results = []
    for lib in (sg, torch):
        x = lib.tensor([row, [1.0] * len(row)], dtype=lib.float64, requires_grad=True)
        out = x.cumprod(1)
        out.backward(lib.full_like(out, grad))
        results.append((out.detach().numpy(), x.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


INFINITE_ROWS = [
    [-0.5, 2.0, INF, -0.5],  # no zero: PyTorch's first formula
    [-0.5, -0.5, -INF, 0.0],  # a zero and an infinity: its products of the others
    [-0.5, 0.0, 2.0, INF],
    [-0.5, -0.5, 0.0, NAN],
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("row", INFINITE_ROWS, ids=str)
def test_cumprod_differentiated_twice_with_infinities_as_pytorch(row, dtype):
    """PyTorch picks one of its two gradient formulas by the values (is any entry 0?); both
    computed and masked, the one left out had a zero gradient times inf, which made the
    second gradient NaN everywhere."""
    results = []
    for lib in (sg, torch):
        x = lib.tensor([row, [2.0, -1.0, 0.5, 3.0]], dtype=getattr(lib, dtype), requires_grad=True)
        weights = lib.tensor([1.0, 0.5, 2.0, 1.5], dtype=x.dtype)
        (g,) = lib.autograd.grad((x.cumprod(1) * weights).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * weights).sum(), x)
        results.append((g.detach().numpy(), gg.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("name", PRODUCTS)
@pytest.mark.parametrize("rows", [[[300.0, 300.0, 0.5]], [[1e3, 1e3, 0.0]], [[1.1, 1.3, 1.7]]])
def test_float16_products_round_each_step_as_pytorch(name, rows):
    """PyTorch multiplies float16 in float16, so 300 * 300 * 0.5 overflows (NumPy's product
    runs in float32: 44992), and its gradient out / x is then infinite."""
    results = []
    for lib in (sg, torch):
        x = lib.tensor(rows, dtype=lib.float16, requires_grad=True)
        out = PRODUCTS[name](x)
        out.backward(lib.ones_like(out))
        results.append((out.detach().float().numpy(), x.grad.float().numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_var_of_one_entry_keeps_the_dtype_of_its_gradient_as_pytorch(dtype):
    """No degree of freedom left: the gradient is NaN or inf (PyTorch's where), of x's dtype."""
    results = []
    for lib in (sg, torch):
        x = lib.tensor(2.0, dtype=getattr(lib, dtype), requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x.var().backward()
        results.append((str(x.grad.dtype).split(".")[-1], x.grad.isnan().item()))
        with pytest.raises(RuntimeError, match="floating point and complex"):
            lib.tensor([1, 2]).var()
    assert results[0] == results[1]


SPREADS_OF_ALL = {
    "var": lambda m, x: x.var(),
    "std": lambda m, x: x.std(),
    "var_mean": lambda m, x: m.var_mean(x)[0],
    "std_mean": lambda m, x: m.std_mean(x)[0],
    "var c2": lambda m, x: x.var(correction=2),
}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", SPREADS_OF_ALL)
@pytest.mark.parametrize("values", [[1 + 2j], [[1 + 2j]], 1 + 2j, [1 + 2j, 3 + 4j]], ids=str)
def test_complex_var_without_freedom_has_pytorchs_real_gradient(values, name, dtype):
    """No degree of freedom left over all entries: PyTorch's gradient is the real NaN (or inf)
    made complex, NaN + 0j; multiplied as complex numbers it was NaN + NaNj."""
    results = []
    for lib in (sg, torch):
        x = lib.tensor(values, dtype=getattr(lib, dtype), requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            SPREADS_OF_ALL[name](lib, x).backward()
        results.append((x.grad.real.numpy(), x.grad.imag.numpy()))  # (NumPy's NaN: either)
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("name", ["prod of all", "prod along rows"])
def test_prod_with_a_zero_multiplies_the_others_in_pytorchs_order(name):
    """The product of the others is the product of those before times that of those after,
    as PyTorch's: in another order the product of all but the first and the zero overflowed
    (inf * 0: NaN)."""
    results = []
    for lib in (sg, torch):
        row = [0.0915167, 0.6701044, -2.8281623, 1e308, -0.9596448, 0.0]
        x = lib.tensor([row, row], dtype=lib.float64, requires_grad=True)
        PRODUCTS[name](x).sum().backward()
        results.append(x.grad.numpy())
    np.testing.assert_array_equal(*results)


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_the_median_of_nothing_is_nan_on_the_graph_as_pytorch(name):
    """PyTorch's median() of no entries is NaN with a node: backward gives an empty grad."""
    for lib in (sg, torch):
        x = lib.empty(0, 3, requires_grad=True)
        out = getattr(x, name)()
        out.backward()
        assert out.isnan().item() and x.grad.shape == (0, 3)


@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean", "logsumexp"])
def test_reductions_over_no_dims_are_over_all_dims(name):
    """README, "What is different": over ``dim=()`` these reduce all dims, as PyTorch's sum,
    with the gradient of the whole tensor, where PyTorch's gradient of var and std is that of
    one entry and its logsumexp raises."""
    array = np.array([[1.0, 2.0], [3.0, 5.0]])
    x, every = sg.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)
    ours, theirs = getattr(sg, name)(x, ()), getattr(torch, name)(every, (0, 1))
    ours, theirs = (out if isinstance(out, tuple) else (out,) for out in (ours, theirs))
    sum(out.sum() for out in ours).backward()
    sum(out.sum() for out in theirs).backward()
    for mine, its in zip(ours, theirs):
        np.testing.assert_allclose(mine.detach().numpy(), its.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), every.grad.numpy(), rtol=1e-12)


def test_cumprod_in_a_narrower_dtype_differentiates_the_rounded_entries():
    """README, "What is different": 1e-200 rounds to 0 in float32; the gradient is that of the
    float32 products (PyTorch's divides by the float64 entry: 0 there)."""
    x = sg.tensor([2.0, 1e-200, -3.0], dtype=sg.float64, requires_grad=True)
    sg.cumprod(x, 0, dtype=sg.float32).sum().backward()
    rounded = torch.tensor([2.0, 0.0, -3.0], requires_grad=True)
    torch.cumprod(rounded, 0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), rounded.grad.numpy().astype(np.float64))


@pytest.mark.parametrize("value", [float("inf"), -float("inf"), NAN, 2.0])
def test_logcumsumexp_of_a_0d_tensor_passes_the_gradient_through_as_pytorch(value):
    """A 0-d tensor's logcumsumexp is the entry, its gradient grad (ours was NaN at inf)."""
    check_against_torch(
        lambda x: sg.logcumsumexp(x, 0), lambda x: torch.logcumsumexp(x, 0), [np.array(value)]
    )


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
@pytest.mark.parametrize("incoming", [NAN, float("inf"), 3.0])
def test_the_losing_operand_of_an_elementwise_maximum_gets_zero_as_pytorchs(name, incoming):
    """Not ``grad * 0``: a NaN or infinite incoming gradient stays where it goes (a NaN loss
    after a ``std`` of one entry did reach the operand that lost)."""
    x, y = [0.2, 0.5, 0.5, NAN, 1.0], [0.5, 0.2, 0.5, 1.0, NAN]

    def grads(m):
        a, b = m.tensor(x, requires_grad=True), m.tensor(y, requires_grad=True)
        (getattr(m, name)(a, b) * incoming).sum().backward()
        return a.grad, b.grad

    for ours, theirs in zip(grads(sg), grads(torch)):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


INF = float("inf")
QUOTIENTS = {
    "fmod": lambda m, x, y: m.fmod(x, y),
    "remainder": lambda m, x, y: m.remainder(x, y),
    "div_trunc": lambda m, x, y: m.div(x, y, rounding_mode="trunc"),
    "div_floor": lambda m, x, y: m.div(x, y, rounding_mode="floor"),
    "ldexp": lambda m, x, y: m.ldexp(x, y),
}
QUOTIENT_POINTS = {  # (x, y): y = 0 for the divisions, subnormal x at y = +-inf for ldexp
    "division": ([5.0, -5.0, 0.0, 3.0, -7.5], [0.0, 0.0, 0.0, 2.0, -2.0]),
    "ldexp": ([5e-324, -1e-310, 1.0, 0.0, 5e-324, 3.0], [INF, INF, INF, INF, -INF, -2.0]),
}


@pytest.mark.filterwarnings("ignore:.*(divide|invalid value|overflow):RuntimeWarning")
@pytest.mark.parametrize("name", QUOTIENTS)
def test_first_and_second_derivatives_at_a_zero_divisor_and_at_inf_as_pytorch(name):
    """fmod's and remainder's second derivative at y = 0 was NaN (trunc(x / y)'s gradient 0
    times 1 / y's inf; div(rounding_mode="trunc")'s first one too), where PyTorch's quotient
    has gradient 0; ldexp's y-gradient at a subnormal x and y = inf was NaN (grad * x
    underflows before meeting 2**inf), where PyTorch's is grad * out * log 2: inf."""
    xs, ys = QUOTIENT_POINTS["ldexp" if name == "ldexp" else "division"]
    results = []
    for m in (sg, torch):
        x, y = (m.tensor(v, dtype=m.float64, requires_grad=True) for v in (xs, ys))
        out = QUOTIENTS[name](m, x, y)
        firsts = m.autograd.grad((out * 0.3).sum(), (x, y), create_graph=True)
        seconds = [
            m.autograd.grad(first.sum(), (x, y), allow_unused=True)
            if first.requires_grad
            else (None, None)
            for first in firsts
        ]
        results.append([out, *firsts, *(t for pair in seconds for t in pair)])
    for ours, theirs in zip(*results):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
