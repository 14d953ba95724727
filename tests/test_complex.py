"""Complex tensors against PyTorch: dtypes and promotion, polar / complex / view_as_complex /
view_as_real (values, shared memory, errors), repr, gradients through complex intermediates
(PyTorch's conjugate-Wirtinger convention), and the safety gate: ops whose gradient is not yet
right for complex numbers refuse them, and ops that order values refuse them always."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-10, atol=1e-12)}


def ours_and_theirs(array: np.ndarray, requires_grad: bool = False) -> tuple:
    return (
        sg.tensor(array, requires_grad=requires_grad),
        torch.tensor(array, requires_grad=requires_grad),
    )


def assert_same(ours: sg.Tensor, theirs: torch.Tensor, **tol) -> None:
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **tol)


# ---- dtypes ------------------------------------------------------------------------------------


def test_dtype_names_and_aliases():
    assert sg.cfloat is sg.complex64 and sg.cdouble is sg.complex128
    assert sg.tensor([1 + 2j]).dtype == sg.complex64  # as torch: the default float's complex
    assert sg.tensor([1.0], dtype=sg.cdouble).dtype == sg.complex128
    assert sg.ones(2, dtype=sg.cfloat).tolist() == [1 + 0j, 1 + 0j]
    assert sg.zeros(2, dtype=sg.complex128).dtype == sg.complex128


def test_is_complex():
    z = sg.tensor([1j])
    assert z.is_complex() and sg.is_complex(z) and not sg.is_complex(sg.ones(1))
    assert not z.is_floating_point() and not z.is_conj()


@pytest.mark.parametrize(
    "left, right",
    [
        ("float32", "complex64"),
        ("float64", "complex64"),
        ("int64", "complex64"),
        ("bool", "complex128"),
        ("complex64", "complex128"),
        ("bfloat16", "complex64"),
    ],
)
def test_promotion_as_torch(left, right):
    assert str(sg.promote_types(getattr(sg, left), getattr(sg, right))) == str(
        torch.promote_types(getattr(torch, left), getattr(torch, right))
    ).replace("torch.", "scratchgrad.")


def test_python_numbers_promote_as_torch():
    x, tx = ours_and_theirs(np.array([1.0, 2.0], np.float32))
    z, tz = ours_and_theirs(np.array([1 + 2j], np.complex128))
    assert_same(x * 1j, tx * 1j)
    assert_same(z * 2.5, tz * 2.5)
    assert_same(sg.tensor([1, 2]) + 1j, torch.tensor([1, 2]) + 1j)


def test_repr_as_torch():
    for values, dtype in [
        ([1 + 2j, 3.5 - 1j], "complex64"),
        ([[1e-5 + 2j, 300 - 1j]], "complex128"),
        ([-0.0 - 0.0j, float("nan") + 1j, float("inf") - 2.5j], "complex64"),
        ([1 + 2j] * 30, "complex64"),
        (2j, "complex64"),
    ]:
        ours = repr(sg.tensor(values, dtype=getattr(sg, dtype)))
        assert ours.replace("scratchgrad.", "torch.") == repr(
            torch.tensor(values, dtype=getattr(torch, dtype))
        )


# ---- making and taking apart -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_polar_and_complex_values(dtype):
    rng = np.random.default_rng(0)
    r, tr = ours_and_theirs(rng.random((3, 1)).astype(dtype))
    a, ta = ours_and_theirs(rng.normal(size=4).astype(dtype) * 3)
    assert_same(sg.polar(r, a), torch.polar(tr, ta), **TOL[dtype])
    assert_same(sg.complex(r, a), torch.complex(tr, ta), **TOL[dtype])
    z, tz = sg.polar(r, a), torch.polar(tr, ta)
    for ours, theirs in [(z.real, tz.real), (z.imag, tz.imag), (z.conj(), tz.conj())]:
        assert_same(ours, theirs.resolve_conj(), **TOL[dtype])
    assert_same(z.angle(), tz.angle(), **TOL[dtype])


def test_complex_keeps_infinite_parts():
    z = sg.complex(sg.tensor([float("inf")]), sg.tensor([1.0]))
    assert z.tolist() == torch.complex(torch.tensor([float("inf")]), torch.ones(1)).tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_view_as_complex_shares_memory(dtype):
    x, tx = ours_and_theirs(np.arange(12.0, dtype=dtype).reshape(3, 2, 2))
    z, tz = sg.view_as_complex(x), torch.view_as_complex(tx)
    assert_same(z, tz)
    x.add_(1)
    tx.add_(1)
    assert_same(z, tz)
    back = sg.view_as_real(z)
    back[0, 0, 1] = -5.0  # writing through the real view reaches x
    assert x[0, 0, 1].item() == -5.0 and z[0, 0].item() == 1 - 5j
    assert_same(sg.view_as_complex(x[:, 1]), torch.view_as_complex(tx[:, 1]))  # strides (4, 1)


def test_view_as_real_values_and_memory():
    z, tz = ours_and_theirs(np.array([[1 + 2j, -3j], [4, 5 - 6j]], np.complex64))
    assert_same(sg.view_as_real(z), torch.view_as_real(tz))
    assert_same(sg.view_as_real(z.t()), torch.view_as_real(tz.t()))
    assert_same(sg.view_as_real(z[0, 1]), torch.view_as_real(tz[0, 1]))  # 0-d gives (2,)
    sg.view_as_real(z)[1, 0, 1] = 7.0
    assert z[1, 0].item() == 4 + 7j


@pytest.mark.parametrize(
    "view",
    [
        lambda m, z: z.real,
        lambda m, z: z.imag,
        lambda m, z: m.view_as_real(z),
        lambda m, z: z.t().real,
        lambda m, z: z[:, 1:].imag,
        lambda m, z: z.imag[1],
        lambda m, z: m.view_as_real(z)[..., 1],
        lambda m, z: m.view_as_real(z).view(2, 6),
        lambda m, z: m.view_as_complex(m.view_as_real(z)),
        lambda m, z: m.view_as_complex(m.view_as_real(z)[:, 1:]),
    ],
)
def test_real_views_of_complex_count_strides_in_real_entries(view):
    # PyTorch's strides and offsets count the view's own entries: two floats a complex number
    ours, theirs = (
        view(sg, sg.zeros(2, 3, dtype=sg.complex64)),
        view(torch, torch.zeros(2, 3, dtype=torch.complex64)),
    )
    assert ours.stride() == theirs.stride()
    assert ours.storage_offset() == theirs.storage_offset()
    assert ours.is_contiguous() == theirs.is_contiguous()


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.ones(3, 2, dtype=m.int64),
        lambda m: m.ones(()),
        lambda m: m.ones(3, 3),
        lambda m: m.ones(2, 3).t(),
        lambda m: m.ones(3, 3)[:, :2],
        lambda m: m.ones(7)[1:].view(3, 2),
    ],
    ids=["int", "0-d", "last-not-2", "last-stride", "odd-stride", "odd-offset"],
)
def test_view_as_complex_errors_as_torch(make):
    with pytest.raises(RuntimeError) as theirs:
        torch.view_as_complex(make(torch))
    with pytest.raises(RuntimeError) as ours:
        sg.view_as_complex(make(sg))
    # (the same text, but that PyTorch also takes float16 tensors: scratchgrad has no complex32)
    assert str(ours.value).split(" for ")[0] == str(theirs.value).split(" for ")[0]


def test_errors_for_real_parts_as_torch():
    with pytest.raises(RuntimeError, match="only supported for complex tensors"):
        sg.view_as_real(sg.ones(3))
    with pytest.raises(RuntimeError, match="Expected object of scalar type"):
        sg.polar(sg.ones(2), sg.ones(2, dtype=sg.float64))
    with pytest.raises(RuntimeError, match="Half, Float or Double"):
        sg.complex(sg.ones(2, dtype=sg.int64), sg.ones(2, dtype=sg.int64))
    with pytest.raises(RuntimeError, match="not implemented for tensors with non-complex"):
        _ = sg.ones(2).imag


def test_float16_parts_are_refused_naming_the_missing_complex32():
    """PyTorch's complex of float16 parts is complex32 (its polar raises NotImplementedError);
    scratchgrad has none and said "Expected ... Half, Float or Double tensors but got float16",
    refusing a Half by its own words. A float16 part beside a float32 one is PyTorch's error."""
    half = np.ones(2, np.float16)
    assert torch.complex(torch.tensor(half), torch.tensor(half)).dtype == torch.complex32
    for name in ("complex", "polar"):
        with pytest.raises(TypeError, match=f"^{name}: float16 parts would make complex32"):
            getattr(sg, name)(sg.tensor(half), sg.tensor(half))
    with pytest.raises(RuntimeError) as theirs:
        torch.complex(torch.tensor(half), torch.ones(2))
    with pytest.raises(RuntimeError, match="Expected object of scalar type float16 but got "):
        sg.complex(sg.tensor(half), sg.ones(2))
    assert "Expected object of scalar type Half but got " in str(theirs.value)


# ---- gradients ---------------------------------------------------------------------------------


def _rope(m, x, r, angle, w):
    """Real in, real out through complex intermediates: Llama's rotary embedding and more."""
    z = m.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
    table = m.polar(r, angle)
    rotated = m.view_as_real(z * table / (table.conj() + 2.0)).flatten(-2)
    y = m.complex(rotated, w)
    return (
        (y * y.conj() * y.real - y.imag * 1j).real.sum() + (y - 1j).angle().mean() + y.abs().mean()
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("seed", range(4))
def test_gradients_through_complex_as_torch(dtype, seed):
    rng = np.random.default_rng(seed)
    lead = tuple(rng.integers(1, 4, size=rng.integers(0, 3)))
    half = int(rng.integers(1, 4))
    shapes = {  # the table broadcasts against the pairs; size-1 dims chosen at random
        "x": (*lead, 2 * half),
        "r": tuple(1 if rng.random() < 0.5 else n for n in (*lead, half)),
        "w": (*lead, 2 * half),
    }
    arrays = {k: rng.normal(size=s).astype(dtype) for k, s in shapes.items()}
    arrays["r"] = np.abs(arrays["r"]) + 0.5
    arrays["angle"] = rng.normal(size=shapes["r"][-1:]).astype(dtype) * 3
    pairs = {k: ours_and_theirs(v, requires_grad=True) for k, v in arrays.items()}
    names = ["x", "r", "angle", "w"]
    ours = _rope(sg, *(pairs[k][0] for k in names))
    theirs = _rope(torch, *(pairs[k][1] for k in names))
    assert_same(ours, theirs, **TOL[dtype])
    ours_grads = sg.autograd.grad(ours, [pairs[k][0] for k in names])
    theirs_grads = torch.autograd.grad(theirs, [pairs[k][1] for k in names])
    for g, tg in zip(ours_grads, theirs_grads):
        assert_same(g, tg, **TOL[dtype])


def test_gradcheck_through_complex():
    rng = np.random.default_rng(1)
    x = sg.tensor(rng.normal(size=(3, 4)), requires_grad=True)
    r = sg.tensor(rng.random((3, 2)) + 0.5, requires_grad=True)
    angle = sg.tensor(rng.normal(size=2), requires_grad=True)
    w = sg.tensor(rng.normal(size=(3, 4)), requires_grad=True)
    assert sg.autograd.gradcheck(lambda *a: _rope(sg, *a), (x, r, angle, w))


def test_gradient_of_complex_leaf_as_torch():
    """A complex leaf gets PyTorch's conjugate Wirtinger gradient, through * and / with a
    broadcast complex operand (the real formula, grad * b, would give its conjugate)."""
    rng = np.random.default_rng(2)
    a, ta = ours_and_theirs(rng.normal(size=3) + 1j * rng.normal(size=3), requires_grad=True)
    b, tb = ours_and_theirs(rng.normal(size=(2, 1)) + 1j * rng.normal(size=(2, 1)))
    for m, x, y in [(sg, a, b), (torch, ta, tb)]:
        out = x * y
        m.view_as_real(out / (y + 3)).pow(2).sum().backward()
    assert_same(a.grad, ta.grad, **TOL["float64"])


@pytest.mark.parametrize("call", [lambda z: z * 1j, lambda z: (2 - 1j) * z, lambda z: z / (1 + 2j)])
def test_gradient_through_a_complex_number_operand_as_torch(call):
    """A Python complex number operand is conjugated in the gradient as a tensor one is."""
    z, tz = ours_and_theirs(np.array([1 + 1j, -2 + 0.5j]), requires_grad=True)
    g = np.array([1 + 0j, 0.5 - 2j])
    (ours,) = sg.autograd.grad(call(z), z, sg.tensor(g))
    (theirs,) = torch.autograd.grad(call(tz), tz, torch.tensor(g))
    assert_same(ours, theirs, **TOL["float64"])


def test_polar_gradient_at_zero_abs_as_torch():
    r, tr = ours_and_theirs(np.array([0.0, -1.5, 2.0]), requires_grad=True)
    a, ta = ours_and_theirs(np.array([0.3, 1.0, -2.0]), requires_grad=True)
    for m, x, y in [(sg, r, a), (torch, tr, ta)]:
        m.view_as_real(m.polar(x, y)).sum().backward()
    assert_same(r.grad, tr.grad, **TOL["float64"])
    assert_same(a.grad, ta.grad, **TOL["float64"])


def test_complex_output_needs_a_gradient_given():
    z = sg.tensor(1 + 1j, requires_grad=True)
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        (z * 2).backward()


def test_users_function_may_take_complex():
    class Twice(sg.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            return z * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    z = sg.tensor([1 + 1j], requires_grad=True)
    sg.view_as_real(Twice.apply(z)).sum().backward()
    assert z.grad.tolist() == [2 + 2j]


PRODUCTS = {  # the complex twins of MatMul, Einsum, Linear: a factor's gradient is grad @ other^H
    "matmul": lambda m, a, b: a @ b,
    "bmm": lambda m, a, b: m.bmm(a.expand(2, 3, 4), b.expand(2, 4, 2)),
    "einsum": lambda m, a, b: m.einsum("ij,kj->ik", a, b.mT),
    "einsum_of_three": lambda m, a, b: m.einsum("ij,jk,k->i", a, b, b[0]),
    "linear": lambda m, a, b: m.nn.functional.linear(a, b.mT, b[0]),
    "linear_without_bias": lambda m, a, b: m.nn.functional.linear(a, b.mT),
    "einsum_spectral": lambda m, a, b: m.einsum(
        "bix,iox->box", a.reshape(3, 2, 2), b.reshape(2, 2, 2)
    ),
}


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize("name", PRODUCTS)
def test_gradients_of_complex_products_as_torch(name, dtype):
    rng = np.random.default_rng(5)
    a, ta = ours_and_theirs(_complex_normal(rng, (3, 4), dtype), requires_grad=True)
    b, tb = ours_and_theirs(_complex_normal(rng, (4, 2), dtype), requires_grad=True)
    ours, theirs = PRODUCTS[name](sg, a, b), PRODUCTS[name](torch, ta, tb)
    tol = TOL["float64" if dtype == "complex128" else "float32"]
    assert_same(ours, theirs, **tol)
    g = _complex_normal(rng, tuple(theirs.shape), dtype)
    for ours_grad, theirs_grad in zip(
        sg.autograd.grad(ours, [a, b], sg.tensor(g)),
        torch.autograd.grad(theirs, [ta, tb], torch.tensor(g)),
    ):
        assert_same(ours_grad, theirs_grad, **tol)


def test_slice_assignment_into_complex_as_torch():
    """A complex zeros tensor written by slices (a spectral layer's ``out_ft[..., :modes] =``),
    then changed in place through a view: the gradients of the written values, of the tensor
    written into and of the leaves, as PyTorch's."""
    rng = np.random.default_rng(6)
    z, tz = ours_and_theirs(_complex_normal(rng, (2, 3, 2), "complex128"), requires_grad=True)
    w, tw = ours_and_theirs(_complex_normal(rng, (3,), "complex128"), requires_grad=True)
    g = _complex_normal(rng, (2, 3, 5), "complex128")
    grads = []
    for m, x, y in [(sg, z, w), (torch, tz, tw)]:
        out = m.zeros(2, 3, 5, dtype=m.cdouble)
        out[:, :, :2] = x * y[:, None]
        out[1, :, 3:] = out[0, :, :2] * 1j
        out[:, 0] *= y[:2, None]
        grads.append(m.autograd.grad(out, [x, y], m.tensor(g)))
    for ours, theirs in zip(*grads):
        assert_same(ours, theirs, **TOL["float64"])


@pytest.mark.parametrize("name", ["rand", "randn"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_random_complex_as_torch(name, dtype):
    """Each part drawn as the parts' float: rand's in [0, 1), randn's with variance 1/2 (so
    that |z|**2 has mean 1), as PyTorch's."""
    z = getattr(sg, name)(20000, dtype=getattr(sg, dtype))
    assert z.dtype == getattr(sg, dtype)
    parts = sg.view_as_real(z)
    if name == "rand":
        assert parts.min().item() >= 0 and parts.max().item() < 1
        assert abs(parts.mean().item() - 0.5) < 0.02
    else:
        assert abs(parts.var().item() - 0.5) < 0.02 and abs(parts.mean().item()) < 0.02


def _complex_normal(rng, shape: tuple, dtype: str) -> np.ndarray:
    return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize(
    "name", ["exp", "expm1", "log", "sin", "cos", "sinh", "cosh", "sqrt", "sigmoid", "tanh"]
)
def test_holomorphic_functions_first_and_second_gradients_as_torch(name, dtype):
    """Their complex twins read the saved values' conjugates: grad * conj(f'(z)), PyTorch's
    convention, and differentiable again (create_graph)."""
    rng = np.random.default_rng(6)
    z, tz = ours_and_theirs(_complex_normal(rng, (5,), dtype), requires_grad=True)
    g = _complex_normal(rng, (5,), dtype)
    tol = TOL["float64" if dtype == "complex128" else "float32"]
    results = []
    for m, x in ((sg, z), (torch, tz)):
        out = getattr(x, name)()
        (grad,) = m.autograd.grad(out, x, m.tensor(g), create_graph=True)
        (second,) = m.autograd.grad(m.view_as_real(grad).square().sum(), x)
        results.append((out, grad, second, out.grad_fn.name()))
    (*ours, our_name), (*theirs, their_name) = results
    for o, t in zip(ours, theirs):
        assert_same(o, t.resolve_conj(), **tol)
    assert our_name == their_name


POWERS = {
    "z ** 2": lambda m, z, r: z**2,
    "z ** 0.5": lambda m, z, r: z**0.5,
    "z ** -1": lambda m, z, r: z**-1,
    "z ** (1+1j)": lambda m, z, r: z ** (1 + 1j),
    "z ** real tensor": lambda m, z, r: z**r,
    "2 ** z": lambda m, z, r: 2**z,
    "(z + 1) ** z": lambda m, z, r: (z + 1) ** z,
    "|r| ** z": lambda m, z, r: m.abs(r) ** z,
    "0 ** real tensor": lambda m, z, r: (z * 0) ** r,
}


@pytest.mark.parametrize("name", POWERS)
def test_complex_powers_and_their_gradients_as_torch(name):
    rng = np.random.default_rng(7)
    values = _complex_normal(rng, (4,), "complex128"), rng.normal(size=4)
    results = []
    for m in (sg, torch):
        z, r = (m.tensor(v, requires_grad=True) for v in values)
        out = POWERS[name](m, z, r)
        grads = m.autograd.grad(out, [z, r], m.tensor(values[0]), allow_unused=True)
        results.append((out, *grads))
    for ours, theirs in zip(*results):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            assert_same(ours, theirs.resolve_conj(), **TOL["float64"])


EXPONENTS = [2, 1j, -1, 0j, 0.5 + 1j, -0.5 + 1j, 2 - 0j, -1 - 1j]
BASES = {  # a zero tensor, and numbers: 0, and negative and complex ones (their log is complex)
    "zero tensor": lambda m, y: m.zeros_like(y) ** y,
    **{
        repr(x): lambda m, y, x=x: m.pow(x, y) if m is torch else x**y
        for x in (0.0, 0j, -2.0, 1 + 1j)
    },
}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("base", BASES)
def test_a_power_of_zero_has_pytorchs_gradient_in_a_complex_exponent(base, dtype):
    """0 ** y has gradient 0 in y only where y is a real number >= 0 (imaginary part 0): 0 ** 1j
    has NaN, as PyTorch's; a negative number base has a complex log, not NaN."""
    results = []
    for m in (sg, torch):
        y = m.tensor(EXPONENTS, dtype=getattr(m, dtype), requires_grad=True)
        out = BASES[base](m, y)
        out.backward(m.ones_like(out))
        results.append((out.detach().numpy(), y.grad.numpy()))
    tol = TOL["float32" if dtype == "complex64" else "float64"]
    for ours, theirs in zip(*results):
        assert ours.dtype == theirs.dtype
        for part in ("real", "imag"):  # (NaNs equal)
            np.testing.assert_allclose(getattr(ours, part), getattr(theirs, part), **tol)


LOGSUMEXPS = {
    "torch.logsumexp": lambda m, z: m.logsumexp(z, 1),
    "special.logsumexp": lambda m, z: m.special.logsumexp(z, 1),
    "method, kept": lambda m, z: z.logsumexp(-1, keepdim=True),
    "over both dims": lambda m, z: m.logsumexp(z, (0, 1)),
}
INF = float("inf")


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", LOGSUMEXPS)
def test_logsumexp_of_complex_numbers_takes_out_the_largest_real_part_as_torch(name, dtype):
    """PyTorch's logsumexp takes complex input (amax of the real parts taken out), and its
    gradient grad * conj(exp(z - out)); ours refused it (amax has no complex order)."""
    rows = [[1 + 2j, -1 + 0.5j, 1000 - 1j], [complex(-INF, 0), 1j, 100 + 3j]]
    results = []
    for m in (sg, torch):
        z = m.tensor(rows, dtype=getattr(m, dtype), requires_grad=True)
        out = LOGSUMEXPS[name](m, z)
        (out * (0.5 - 0.25j)).real.sum().backward()
        results.append((out, z.grad))
    tol = TOL["float32" if dtype == "complex64" else "float64"]
    for ours, theirs in zip(*results):
        assert_same(ours, theirs, **tol)


NAN = float("nan")


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_logaddexp_of_complex_numbers_and_its_gradient_as_torch(dtype):
    """PyTorch's logaddexp takes complex input (the larger real part taken out, the first at a
    tie; NaN, -inf and inf parts handled apart) and its gradient grad / conj(1 + exp(y - x));
    ours refused it. logaddexp2 has no complex kernel in either."""
    x = [1 + 2j, -3 + 0.5j, 0.1 - 1j, 100 + 3j, 3j, 1e-20j, complex(INF, 1), complex(-INF, 1)]
    y = [0.5 - 1j, 2 + 1j, -50 + 0j, 101 - 2j, -3j, -50, complex(INF, 2), complex(-INF, 2)]
    x += [0, complex(NAN, 0), complex(5, NAN), complex(INF, 0), 1 + 1j]
    y += [-40 + 1j, 1, 1, complex(-INF, 2), 1.0 + 1j]
    results = []
    for m in (sg, torch):
        a, b = (m.tensor(v, dtype=getattr(m, dtype), requires_grad=True) for v in (x, y))
        out = m.logaddexp(a, b)
        (out[:5] * (0.5 - 0.25j)).real.sum().backward()  # (the finite ones)
        results.append((out, a.grad, b.grad))
        with pytest.raises(NotImplementedError, match="logaddexp2"):
            m.logaddexp2(a, b)
    (ours, *ours_grads), (theirs, *their_grads) = results
    ours, theirs = ours.detach().numpy(), theirs.detach().numpy()
    if dtype == "complex64":  # PyTorch's complex64 kernel gives NaN at (1e-20j, -50)
        assert np.isnan(theirs[5]) and ours[5] == np.complex64(1.9287498479639178e-22 + 1e-20j)
        ours[5] = theirs[5]
    tol = TOL["float32" if dtype == "complex64" else "float64"]
    for mine, expected in zip([ours, *ours_grads], [theirs, *their_grads]):
        np.testing.assert_allclose(np.asarray(mine), np.asarray(expected), **tol)


# ---- the safety gate ---------------------------------------------------------------------------

NOT_YET = {  # ops whose backward is real-only: with a gradient recorded, refused
    "asin": lambda z: z.asin(),
    "atan": lambda z: z.atan(),
}


@pytest.mark.parametrize("name", NOT_YET)
def test_ops_not_yet_complex_refuse_when_recording(name):
    z = sg.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    with pytest.raises(RuntimeError, match=f"^{name}: complex tensors are not supported"):
        NOT_YET[name](z)


@pytest.mark.parametrize("name", ["asin", "atan"])
def test_ops_not_yet_complex_compute_without_grad_as_torch(name):
    z, tz = ours_and_theirs(np.array([1 + 2j, 3 - 1j], np.complex64))
    with sg.no_grad():
        ours = NOT_YET[name](z)
    assert_same(ours, NOT_YET[name](tz), **TOL["float32"])


ORDERED = {
    "lt": lambda m, z: z < 0,
    "ge": lambda m, z: z >= z,
    "max": lambda m, z: z.max(),
    "max_dim": lambda m, z: z.max(0),
    "min": lambda m, z: z.min(),
    "amax": lambda m, z: z.amax(),
    "maximum": lambda m, z: m.maximum(z, z),
    "minimum_of_real_and_complex": lambda m, z: m.minimum(m.ones(2), z),
    "gt_of_real_and_complex": lambda m, z: m.ones(2) > z,
    "lt_of_real_and_a_complex_number": lambda m, z: m.ones(2) < 1j,
    "le_of_a_complex_number_and_ints": lambda m, z: 2j <= m.ones(2, dtype=m.int64),  # noqa: SIM300
    "fmax": lambda m, z: m.fmax(m.ones(2), z),
    "fmin": lambda m, z: z.fmin(z),
    "heaviside": lambda m, z: z.heaviside(z),
    "clamp": lambda m, z: z.clamp(0, 1),
    "relu": lambda m, z: m.relu(z),
    "sort": lambda m, z: z.sort(),
    "topk": lambda m, z: z.topk(1),
    "argmax": lambda m, z: z.argmax(),
    "sign": lambda m, z: z.sign(),
    "argsort": lambda m, z: z.argsort(),
    "msort": lambda m, z: m.msort(z),
    "argmin_dim": lambda m, z: z.argmin(0),
    "kthvalue": lambda m, z: z.kthvalue(1),
    "cummax": lambda m, z: z.cummax(0),
    "median": lambda m, z: z.median(),
    "nanmedian": lambda m, z: z.nanmedian(),
    "mode": lambda m, z: z.mode(),
    "aminmax": lambda m, z: z.aminmax(),
    "unique": lambda m, z: z.unique(),
    "unique_dim": lambda m, z: z.unique(dim=0),
    "unique_consecutive": lambda m, z: z.unique_consecutive(),
    "searchsorted": lambda m, z: m.searchsorted(m.ones(2), z),
}


@pytest.mark.parametrize("name", ORDERED)
def test_ordering_ops_refuse_complex_as_torch(name):
    with pytest.raises(RuntimeError) as theirs:
        ORDERED[name](torch, torch.tensor([1 + 2j, 3 - 1j]))
    with pytest.raises(RuntimeError, match="complex") as ours:
        ORDERED[name](sg, sg.tensor([1 + 2j, 3 - 1j]))
    assert ours.type is theirs.type  # (NotImplementedError, or RuntimeError itself)


def test_equality_of_complex_as_torch():
    z, tz = ours_and_theirs(np.array([1 + 2j, 3 - 1j], np.complex64))
    assert (z == z.conj()).tolist() == (tz == tz.conj()).tolist()
    assert (z != 3 - 1j).tolist() == (tz != 3 - 1j).tolist()


def test_adafactor_refuses_complex_parameters():
    with pytest.raises(NotImplementedError, match="Adafactor: complex parameters are not supp"):
        sg.optim.Adafactor([sg.zeros(2, dtype=sg.cfloat, requires_grad=True)])


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "cumsum", "var", "std"])
def test_reductions_of_complex_as_torch(name):
    rng = np.random.default_rng(3)
    z, tz = ours_and_theirs(rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4)))
    call = (lambda t: getattr(t, name)(1)) if name != "cumsum" else (lambda t: t.cumsum(0))
    with sg.no_grad():
        assert_same(call(z), call(tz), **TOL["float64"])


@pytest.mark.parametrize("rows", [[[1 + 1j, 2 - 1j, 0.5j]], [[1 + 1j, 0j, 0.5j]]], ids=str)
@pytest.mark.parametrize("name", ["prod along rows", "prod of all", "cumprod"])
def test_complex_products_have_torchs_gradients(name, rows):
    """prod (and cumprod, composed of it) refused complex input with a gradient recorded;
    PyTorch's gradient is grad * conj(the others' product), second derivatives too."""
    call = {"prod along rows": lambda t: t.prod(1), "prod of all": lambda t: t.prod()}.get(
        name, lambda t: t.cumprod(1)
    )
    results = []
    for m in (sg, torch):
        z = m.tensor(rows, dtype=m.complex128, requires_grad=True)
        out = call(z)
        (grad,) = m.autograd.grad((out * (0.5 - 1j)).real.sum(), z, create_graph=True)
        (second,) = m.autograd.grad((grad * grad.conj()).real.sum(), z)
        results.append((out, grad, second))
    for ours, theirs in zip(*results):
        assert_same(ours, theirs.resolve_conj(), **TOL["float64"])


def test_variance_gradient_of_complex_as_torch():
    rng = np.random.default_rng(4)
    z, tz = ours_and_theirs(rng.normal(size=5) + 1j * rng.normal(size=5), requires_grad=True)
    z.var().backward()
    tz.var().backward()
    assert_same(z.grad, tz.grad, **TOL["float64"])


def test_abs_of_complex_and_its_gradient_at_zero_as_torch():
    z, tz = ours_and_theirs(np.array([3 + 4j, 0j, -1j]), requires_grad=True)
    assert_same(z.abs(), tz.abs())
    (z.abs() * sg.tensor([1.0, 2.0, 3.0], dtype=sg.float64)).sum().backward()
    (tz.abs() * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    assert_same(z.grad, tz.grad, **TOL["float64"])


@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "complex64", "complex128", "int64", "bool"]
)
def test_a_python_complex_number_promotes_as_torchs_and_stays_a_number(dtype):
    ours, theirs = sg.ones(2, dtype=getattr(sg, dtype)), torch.ones(2, dtype=getattr(torch, dtype))
    for op in (lambda t: t * (1 - 2j), lambda t: (1 - 2j) * t, lambda t: t + 2j, lambda t: t / 1j):
        assert str(op(ours).dtype).split(".")[-1] == str(op(theirs).dtype).split(".")[-1].replace(
            "torch.", ""
        )
        np.testing.assert_allclose(op(ours).numpy(), op(theirs).numpy(), rtol=1e-6)
    # a number on every device: not a CPU tensor (the strict device, tests/test_strict.py)
    assert sg.ones(2, device="meta").mul(1j).is_meta


def test_sgn_of_complex_tensors_matches_torch_with_its_gradient():
    """x / |x| (0 at 0, with a zero gradient there); it raised as sign does."""
    values, weights = [1 + 1j, 0j, -2j, 3 - 4j], [1 + 2j, 3, 1j, -1]
    grads = []
    for lib in (sg, torch):
        x = lib.tensor(values, requires_grad=True)
        out = x.sgn()
        (out * lib.tensor(weights)).real.sum().backward()
        grads.append((out.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], atol=1e-6)
    np.testing.assert_allclose(grads[0][1], grads[1][1], atol=1e-6)


SPECIAL = [0, 1, -1, 2.5, -2.5, 1j, -1j, 0.5 + 0.5j, -3 + 2j, 1e-3, complex("inf"), complex("nan")]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("exponent", ["complex", "int"])
@pytest.mark.parametrize("base", ["complex", "real"])
def test_power_with_a_tensor_exponent_is_torchs_at_special_values(dtype, exponent, base):
    """exp(y * log(x)), as PyTorch: 0 ** 0 is NaN there, 0 ** -1 inf + NaN j."""
    x, y = np.meshgrid(np.array(SPECIAL, dtype), np.array(SPECIAL, dtype))
    if base == "real":
        x = x.real.astype("float32" if dtype == "complex64" else "float64")
    if exponent == "int":
        y = np.round(y.real).astype(np.int64)
    with np.errstate(invalid="ignore"):
        ours, theirs = (sg.tensor(x) ** sg.tensor(y)).numpy(), (torch.tensor(x) ** torch.tensor(y))
    tol = TOL["float32" if dtype == "complex64" else "float64"]
    for part in ("real", "imag"):
        np.testing.assert_allclose(getattr(ours, part), getattr(theirs.numpy(), part), **tol)
    assert sg.tensor(0j) ** 0 == 1 and sg.tensor(0.0) ** 0j == 1  # numbers: PyTorch's too


@pytest.mark.parametrize("name", ["var_mean", "std_mean"])
def test_var_mean_and_std_mean_of_complex_numbers_as_pytorch(name):
    """A real spread and a complex mean, with their gradients (they were refused)."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    results = []
    for x in ours_and_theirs(z, requires_grad=True):
        spread, mean = getattr(sg if isinstance(x, sg.Tensor) else torch, name)(x, 1)
        (spread.sum() + mean.abs().sum()).backward()
        results.append((spread, mean, x.grad))
    for ours, theirs in zip(*results):
        assert_same(ours, theirs, **TOL["float64"])


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_running_sums_and_products_of_complex_numbers_differentiate_as_pytorch(name):
    """cumsum of complex numbers records (it was refused); cumprod's gradient is PyTorch's,
    differentiated again too (that runs a cumsum of complex numbers)."""
    rng = np.random.default_rng(1)
    z = rng.standard_normal((2, 4)) + 1j * rng.standard_normal((2, 4))
    z[0, 1] = 0
    results = []
    for x in ours_and_theirs(z, requires_grad=True):
        lib = sg if isinstance(x, sg.Tensor) else torch
        out = getattr(x, name)(1)
        (g,) = lib.autograd.grad(out.abs().sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.abs().sum(), x)
        results.append((out, g, gg))
    for ours, theirs in zip(*results):
        assert_same(ours, theirs, **TOL["float64"])


INF, NAN = float("inf"), float("nan")
NOT_FINITE = [complex(INF, 0), complex(INF, NAN), complex(NAN, INF), complex(0, INF), NAN + 0j]
RUNNING = {
    "var_mean": lambda m, x: m.var_mean(x, 1)[1],
    "std_mean": lambda m, x: m.std_mean(x, 1)[1],
    "cumprod": lambda m, x: x.cumprod(1),
}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", RUNNING)
@pytest.mark.parametrize("special", NOT_FINITE, ids=str)
def test_running_means_and_products_of_infinities_and_nans_as_pytorch(special, name, dtype):
    """PyTorch's var_mean takes the mean of the real and imaginary parts apart (a NaN real part
    left an imaginary mean NaN here), and its cumprod starts from 1, so that the first entry
    inf + 0j is multiplied into inf + NaNj (here it was taken as it is)."""
    z = np.array([[special, 1 + 2j, -0.5 + 0.25j], [1 + 2j, -0.5 + 0.25j, special]])
    results = []
    for lib in (sg, torch):
        out = RUNNING[name](lib, lib.tensor(z, dtype=getattr(lib, dtype)))
        results.append((out.real.numpy(), out.imag.numpy()))  # (NumPy's NaN: either part)
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, **TOL["float32"])


@pytest.mark.parametrize("left", ["float16", "bool", "complex64"])
def test_ops_that_order_or_truncate_refuse_a_complex_operand_as_torch(left):
    """Trunc division raised NumPy's TypeError for fmod, and maximum of a bool and a complex
    tensor compared them lexicographically (the bool was not promoted before the check)."""
    calls = {
        NotImplementedError: lambda m, x, y: m.div(x, y, rounding_mode="trunc"),
        RuntimeError: lambda m, x, y: m.maximum(x, y),
    }
    for error, call in calls.items():
        for m in (torch, sg):
            x = m.tensor([1.0]).to(getattr(m, left))
            with pytest.raises(error, match="complex|Complex"):
                call(m, x, m.tensor([1 - 0.5j]))


CONJUGATING = {
    "mH": lambda m, z: z.mH,
    "H": lambda m, z: z.H,
    "adjoint": lambda m, z: z.adjoint(),
    "H_0d": lambda m, z: z[0, 1].H,
    "mH_matmul": lambda m, z: z.mH @ z,
    "vdot": lambda m, z: m.vdot(z[0], z[1]),
    "vdot_method": lambda m, z: z[0].vdot(z[1]),
}


@pytest.mark.parametrize("name", CONJUGATING)
def test_conjugate_transposes_and_vdot_conjugate_as_torch(name):
    """``mH``, ``H`` and ``adjoint`` were the plain transpose and ``vdot`` was ``dot`` for complex
    entries (silently wrong: only their real-entry docs held); the gradients follow."""
    z = np.array([[1 + 2j, -0.5j, 2.0], [0.25 - 1j, 3 + 1j, -1j]])
    results = []
    for m in (sg, torch):
        leaf = m.tensor(z, requires_grad=True)
        out = CONJUGATING[name](m, leaf)
        m.view_as_real(out.resolve_conj()).sum().backward()
        results.append((out.resolve_conj().detach().numpy(), leaf.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, **TOL["float64"])


def test_linalg_of_a_complex_matrix_says_complex_is_not_supported():
    with pytest.raises(RuntimeError, match="linalg.inv: complex tensors are not supported"):
        sg.linalg.inv(sg.eye(2, dtype=sg.complex128))
