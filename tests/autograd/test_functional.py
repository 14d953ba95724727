"""Higher-order gradients and ``autograd.functional`` (jacobian, hessian, vjp, jvp) against
``torch.autograd`` and ``torch.autograd.functional``, in float64.
"""

import functools
import re

import numpy as np
import oracle
import pytest
from oracle import leaves

import scratchgrad as sg

torch = pytest.importorskip("torch")
F = sg.autograd.functional
TF = torch.autograd.functional

POINTS = [-2.0, -0.7, 0.0, 0.3, 1.1, 2.5]


# the engine's results are NumPy's own float64 arithmetic: only round-off may differ
assert_close = functools.partial(oracle.assert_close, tolerance=oracle.ROUND_OFF)


# ---- derivatives of derivatives -------------------------------------------------------------

FUNCTIONS = {
    "tanh": lambda x: x.tanh(),
    "sin": lambda x: x.sin(),
    "cube": lambda x: x**3,
    "exp_times_x": lambda x: x.exp() * x,
    "sigmoid": lambda x: x.sigmoid(),
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_second_and_third_derivatives_match_torch(name):
    f = FUNCTIONS[name]
    x, xt = leaves(POINTS)
    g, gt = f(x), f(xt)
    for order in (1, 2, 3):
        (g,) = sg.autograd.grad(g.sum(), x, create_graph=True)
        (gt,) = torch.autograd.grad(gt.sum(), xt, create_graph=True)
        assert g.requires_grad, f"order {order} lost its graph"
        assert_close(g, gt, tolerance=(1e-9, 1e-12))


def test_second_derivative_of_cube_is_six_x():
    x = sg.tensor(POINTS, dtype=sg.float64, requires_grad=True)
    (g,) = sg.autograd.grad((x**3).sum(), x, create_graph=True)
    (g2,) = sg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g2.array, 6 * np.array(POINTS))


def test_a_gradient_without_create_graph_is_a_constant():
    x = sg.tensor(POINTS, dtype=sg.float64, requires_grad=True)
    (g,) = sg.autograd.grad((x**3).sum(), x)
    assert not g.requires_grad and g.grad_fn is None


def _mlp(params, inputs, lib):
    w1, b1, w2, b2 = params
    hidden = lib.tanh(inputs @ w1 + b1)
    return ((hidden @ w2 + b2) ** 2).mean()


def test_mlp_hessian_vector_product_matches_torch():
    rng = np.random.default_rng(0)
    shapes = [(3, 5), (5,), (5, 2), (2,)]
    values = [rng.normal(size=s) for s in shapes]
    vectors = [rng.normal(size=s) for s in shapes]
    inputs = rng.normal(size=(4, 3))

    params = [sg.tensor(v, requires_grad=True) for v in values]
    loss = _mlp(params, sg.tensor(inputs), sg)
    grads = sg.autograd.grad(loss, params, create_graph=True)
    dot = sum((g * sg.tensor(v)).sum() for g, v in zip(grads, vectors))
    hvp = sg.autograd.grad(dot, params)

    params_t = [torch.tensor(v, requires_grad=True) for v in values]
    loss_t = _mlp(params_t, torch.tensor(inputs), torch)
    grads_t = torch.autograd.grad(loss_t, params_t, create_graph=True)
    dot_t = sum((g * torch.tensor(v)).sum() for g, v in zip(grads_t, vectors))
    hvp_t = torch.autograd.grad(dot_t, params_t)

    for h, ht in zip(hvp, hvp_t):
        assert_close(h, ht, tolerance=(1e-9, 1e-12))
    _, hvp_f = TF.hvp(
        lambda *ps: _mlp(ps, torch.tensor(inputs), torch),
        tuple(torch.tensor(v) for v in values),
        tuple(torch.tensor(v) for v in vectors),
    )
    for h, ht in zip(hvp, hvp_f):
        assert_close(h, ht, tolerance=(1e-9, 1e-12))


# ---- autograd.functional --------------------------------------------------------------------


def vector_function(x):
    return x.sin() * x[0] + x.exp()


def two_input_function(a, b):
    return (a * b).exp() + a.tanh()


def test_jacobian_of_one_input_matches_torch():
    x, xt = leaves(POINTS[:4], requires_grad=False)
    assert_close(F.jacobian(vector_function, x), TF.jacobian(vector_function, xt))


def test_jacobian_of_two_inputs_matches_torch():
    a, at = leaves([0.1, -0.4, 0.8], requires_grad=False)
    b, bt = leaves([1.5, 0.2, -0.3], requires_grad=False)
    jac = F.jacobian(two_input_function, (a, b))
    jac_t = TF.jacobian(two_input_function, (at, bt))
    assert len(jac) == 2
    for j, jt in zip(jac, jac_t):
        assert_close(j, jt)


def test_jacobian_of_a_matrix_function_has_out_shape_then_in_shape():
    x, xt = leaves([[1.0, 2.0, 3.0], [0.5, -1.0, 0.0]], requires_grad=False)
    f = lambda m: (m @ m.T).tanh()  # noqa: E731
    jac = F.jacobian(f, x)
    assert jac.shape == (2, 2, 2, 3)
    assert_close(jac, TF.jacobian(f, xt))


def test_jacobian_with_create_graph_is_differentiable():
    x, xt = leaves(POINTS[:3], requires_grad=False)
    jac = F.jacobian(vector_function, x, create_graph=True)
    jac_t = TF.jacobian(vector_function, xt, create_graph=True)
    assert jac.requires_grad and jac_t.requires_grad
    assert_close(jac, jac_t)


@pytest.mark.parametrize(
    "f", [lambda v: 3 * v.mean(), lambda v: v.max(), lambda v: v[0] * 2], ids=["mean", "max", "one"]
)
def test_a_hessian_of_a_function_whose_gradient_is_constant_is_zeros(f):
    """Its gradient needs no gradient of its own: rows of zeros, as PyTorch (not an error)."""
    x, xt = leaves(POINTS[:4], requires_grad=False)
    assert_close(F.hessian(f, x), TF.hessian(f, xt))
    assert_close(F.jacobian(lambda v: v.detach() * 2, x), TF.jacobian(lambda v: v.detach() * 2, xt))


def test_hessian_matches_torch():
    x, xt = leaves(POINTS[:4], requires_grad=False)
    f = lambda v: (v.tanh() * v).sum() + (v[0] * v[1] * v[2] ** 2)  # noqa: E731
    assert_close(F.hessian(f, x), TF.hessian(f, xt))


def test_hessian_of_a_matrix_input():
    x, xt = leaves([[0.2, -0.5], [1.0, 0.3]], requires_grad=False)
    f = lambda m: (m.exp() @ m).sum()  # noqa: E731
    hess = F.hessian(f, x)
    assert hess.shape == (2, 2, 2, 2)
    assert_close(hess, TF.hessian(f, xt))


def test_vjp_matches_torch():
    x, xt = leaves(POINTS[:4], requires_grad=False)
    v, vt = leaves([1.0, -2.0, 0.5, 3.0], requires_grad=False)
    out, g = F.vjp(vector_function, x, v)
    out_t, gt = TF.vjp(vector_function, xt, vt)
    assert_close(out, out_t)
    assert_close(g, gt)


def test_vjp_of_a_scalar_function_needs_no_vector():
    x, xt = leaves(POINTS[:3], requires_grad=False)
    f = lambda v: (v * v.sin()).sum()  # noqa: E731
    _, g = F.vjp(f, x)
    _, gt = TF.vjp(f, xt)
    assert_close(g, gt)


def test_vjp_and_jvp_of_two_inputs_match_torch():
    a, at = leaves([0.1, -0.4, 0.8], requires_grad=False)
    b, bt = leaves([1.5, 0.2, -0.3], requires_grad=False)
    v, vt = leaves([1.0, 2.0, -1.0], requires_grad=False)
    _, (ga, gb) = F.vjp(two_input_function, (a, b), v)
    _, (gat, gbt) = TF.vjp(two_input_function, (at, bt), vt)
    assert_close(ga, gat)
    assert_close(gb, gbt)
    _, jv = F.jvp(two_input_function, (a, b), (v, v * 2))
    _, jvt = TF.jvp(two_input_function, (at, bt), (vt, vt * 2))
    assert_close(jv, jvt)


def test_jvp_matches_torch():
    x, xt = leaves(POINTS[:4], requires_grad=False)
    v, vt = leaves([0.5, 0.0, -1.0, 2.0], requires_grad=False)
    out, jv = F.jvp(vector_function, x, v)
    out_t, jvt = TF.jvp(vector_function, xt, vt)
    assert_close(out, out_t)
    assert_close(jv, jvt)


def test_functional_transforms_leave_the_callers_tensors_alone():
    x = sg.tensor([1.0, 2.0], dtype=sg.float64, requires_grad=True)
    F.jacobian(lambda t: t * t, x)
    F.hessian(lambda t: (t**3).sum(), x)
    F.vjp(lambda t: t.exp(), x, sg.ones(2, dtype=sg.float64))
    assert x.grad is None and x.is_leaf


def test_vjp_and_jvp_outputs_are_detached_without_create_graph():
    x, xt = leaves([1.0, 2.0], requires_grad=False)
    out_t, _ = TF.vjp(lambda t: t.exp(), xt, torch.ones(2, dtype=torch.float64))
    assert not out_t.requires_grad
    out, _ = F.vjp(lambda t: t.exp(), x, sg.ones(2, dtype=sg.float64))
    assert not out.requires_grad
    out, _ = F.jvp(lambda t: t.exp(), x, sg.ones(2, dtype=sg.float64))
    assert not out.requires_grad


def _hessian_case(lib):
    return lambda x, y: ((x**3).sin() * y).sum() + (x * x).sum() * y.sum()


@pytest.mark.parametrize("name", ["hvp", "vhp"])
def test_hessian_vector_products_are_torchs(name):
    rng = np.random.default_rng(0)
    x, y, u, w = (rng.standard_normal(3) for _ in range(4))
    ours = getattr(sg.autograd.functional, name)(
        _hessian_case(sg), (sg.tensor(x), sg.tensor(y)), (sg.tensor(u), sg.tensor(w))
    )
    theirs = getattr(torch.autograd.functional, name)(
        _hessian_case(torch),
        (torch.tensor(x), torch.tensor(y)),
        (torch.tensor(u), torch.tensor(w)),
    )
    np.testing.assert_allclose(ours[0].numpy(), theirs[0].numpy(), rtol=1e-12)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)


def test_hessian_vector_products_errors_as_torchs():
    F = sg.autograd.functional
    with pytest.raises(RuntimeError, match="given to hvp should contain a single element"):
        F.hvp(lambda x: x**2, sg.ones(2), sg.ones(2))
    with pytest.raises(RuntimeError, match="independent of the input"):
        F.vhp(lambda x: x.sum(), sg.ones(2), sg.ones(2), strict=True)
    out, hv = F.hvp(lambda x: x.sum(), sg.ones(2), sg.ones(2))  # linear: a zero Hessian
    assert hv.tolist() == [0.0, 0.0] and out.item() == 2.0
    with pytest.raises(RuntimeError, match="v can only be None"):
        F.vhp(lambda x: x.sum(), sg.ones(2))
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        F.jacobian(lambda x: x, sg.ones(2), strategy="forward-mode")
    np.testing.assert_array_equal(
        F.jacobian(lambda x: x * 2, sg.ones(2), vectorize=True, strategy="forward-mode").numpy(),
        2 * np.eye(2),
    )
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independ"):
        F.jacobian(lambda x, y: x * 2, (sg.ones(2), sg.ones(2)), strict=True)


# ---- tuples of outputs and inputs, create_graph through the caller's tensors ---------------

FUNCTIONAL_CASES = {
    # name: (call(autograd.functional, inputs, create_graph), input shapes)
    "jacobian_two_outputs": (
        lambda f, x, cg: f.jacobian(lambda a: (a.sin(), a.prod()), x[0], create_graph=cg),
        [3],
    ),
    "jacobian_tuples": (
        lambda f, x, cg: f.jacobian(
            lambda a, b: (a.outer(b).tanh(), a.sum() * b), (x[0], x[1]), create_graph=cg
        ),
        [3, 2],
    ),
    "jacobian_one_of_a_tuple": (
        lambda f, x, cg: f.jacobian(lambda a: a.exp(), (x[0],), create_graph=cg),
        [2],
    ),
    "hessian_tuple": (
        lambda f, x, cg: f.hessian(
            lambda a, b: a.sin().sum() * b.exp().sum(), (x[0], x[1]), create_graph=cg
        ),
        [3, 2],
    ),
    "hessian_one_of_a_tuple": (
        lambda f, x, cg: f.hessian(lambda a: a.sin().prod(), (x[0],), create_graph=cg),
        [3],
    ),
    "vjp_two_outputs": (
        lambda f, x, cg: f.vjp(
            lambda a: (a.exp(), a.sum()), x[0], (x[1], x[2].sum()), create_graph=cg
        ),
        [3, 3, 1],
    ),
    "jvp_two_outputs": (
        lambda f, x, cg: f.jvp(lambda a: (a.exp(), a.sum()), x[0], x[1], create_graph=cg),
        [3, 3],
    ),
    "jvp_without_v": (lambda f, x, cg: f.jvp(lambda a: a.exp() * 2, x[0], create_graph=cg), [1]),
    "jvp_of_a_constant": (
        lambda f, x, cg: f.jvp(lambda a: a.detach().exp(), x[0], x[1], create_graph=cg),
        [2, 2],
    ),
    "hvp_partly_linear": (
        lambda f, x, cg: f.hvp(
            lambda a, b: (a * 2).sum() + (b**3).sum(), (x[0], x[1]), (x[2], x[3]), create_graph=cg
        ),
        [3, 2, 3, 2],
    ),
    "vhp_tuple": (
        lambda f, x, cg: f.vhp(
            lambda a, b: (a.exp() * b).sum(), (x[0], x[1]), (x[2], x[3]), create_graph=cg
        ),
        [3, 3, 3, 3],
    ),
}


def _flat(results):
    """The tensors of nested tuples, with the nesting written as a string."""
    if isinstance(results, tuple):
        inner = [_flat(r) for r in results]
        return [t for ts, _ in inner for t in ts], "(" + ",".join(n for _, n in inner) + ")"
    return [results], "T"


@pytest.mark.parametrize("name", FUNCTIONAL_CASES)
@pytest.mark.parametrize("create_graph", [False, True])
def test_tuples_of_outputs_and_inputs_match_torch(name, create_graph):
    """The results' nesting and values, and with ``create_graph`` the gradients that reach the
    caller's tensors through them (PyTorch differentiates through views of those)."""
    call, shapes = FUNCTIONAL_CASES[name]
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(shape) for shape in shapes]
    results, grads = [], []
    for m in (sg, torch):
        xs = [m.tensor(a, requires_grad=create_graph) for a in arrays]
        tensors, nesting = _flat(call(m.autograd.functional, xs, create_graph))
        results.append((tensors, nesting))
        differentiable = [t for t in tensors if t.requires_grad]
        if differentiable:
            total = sum((t**2).sum() for t in differentiable)
            grads.append(m.autograd.grad(total, xs, allow_unused=True))
    (ours, nesting), (theirs, nesting_t) = results
    assert nesting == nesting_t
    for a, b in zip(ours, theirs):
        assert_close(a, b)
        assert a.requires_grad == b.requires_grad
    for a, b in zip(*grads):
        assert (a is None) == (b is None)
        if a is not None:
            assert_close(a, b)


STRICT_ERRORS = {
    "vjp_output_needs_no_grad": (
        lambda f, x: f.vjp(lambda a: a.detach() * 2, x, x, strict=True),
        "Output 0 of the user-provided function does not require gradients",
    ),
    "jvp_independent_input": (
        lambda f, x: f.jvp(lambda a, b: a * 2, (x, x), (x, x), strict=True),
        "independent of input 1",
    ),
    "hessian_independent_jacobian": (
        lambda f, x: f.hessian(lambda a, b: (a**3).sum() + b.sum(), (x, x), strict=True),
        "jacobian of the user-provided function with respect to input 1 is independent",
    ),
    "jacobian_strict_and_vectorize": (
        lambda f, x: f.jacobian(lambda a: a * 2, x, strict=True, vectorize=True),
        "`strict=True` and `vectorized=True` are not supported together",
    ),
    "jvp_v_count": (
        lambda f, x: f.jvp(lambda a, b: a * b, (x, x), x),
        "v is a tuple of invalid length: should be 2 but got 1",
    ),
    "jvp_v_none_for_several_entries": (
        lambda f, x: f.jvp(lambda a: a * 2, x),
        "v can only be None if the input to the user-provided function is a single Tensor",
    ),
    "hessian_of_a_tuple": (
        lambda f, x: f.hessian(lambda a: (a.sum(),), x),
        "The function given to hessian should return a single Tensor",
    ),
}


@pytest.mark.parametrize("name", STRICT_ERRORS)
def test_strict_and_misuse_raise_torchs_errors(name):
    call, message = STRICT_ERRORS[name]
    for m in (torch, sg):
        with pytest.raises(RuntimeError, match=re.escape(message)):
            call(m.autograd.functional, m.tensor([0.5, -1.0, 2.0], dtype=m.float64))


def test_inputs_must_be_a_tensor_or_a_tuple_as_torch():
    for m in (torch, sg):
        with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
            m.autograd.functional.jacobian(lambda a, b: a * b, [m.ones(2), m.ones(2)])


@pytest.mark.parametrize(
    "options",
    [
        {"strategy": "sideways"},  # AssertionError, as PyTorch's (was ValueError)
        {"strategy": "forward-mode", "vectorize": True, "create_graph": True},  # (was allowed)
        {"strategy": "forward-mode", "strict": True},  # RuntimeError before vectorize's error
        {"strategy": "forward-mode", "vectorize": True, "strict": True},
        {"outer_jacobian_strategy": "forward-mode", "vectorize": True, "create_graph": True},
        {"outer_jacobian_strategy": "sideways"},
        {"vectorize": True, "strict": True, "index": True},  # func's error first (IndexError)
    ],
)
def test_strategy_refusals_are_torchs(options):
    kind = "hessian" if "outer_jacobian_strategy" in options else "jacobian"
    options = dict(options)
    function = (lambda x: x[..., 1:]) if options.pop("index", False) else lambda x: (x**3).sum()

    def call(m):
        return getattr(m.autograd.functional, kind)(function, m.tensor(1.0), **options)

    ours, theirs = oracle.outcome(call, sg), oracle.outcome(call, torch)
    assert oracle.raised_alike(ours, theirs, str(options))
