"""Higher-order gradients and ``autograd.functional`` (jacobian, hessian, vjp, jvp) against
``torch.autograd`` and ``torch.autograd.functional``, in float64.
"""

import functools

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
