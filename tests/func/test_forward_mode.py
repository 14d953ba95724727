"""torch.func's forward mode (jvp, linearize, jacfwd), computed by the double-vjp trick, against
torch.func's own forward-mode AD: the same numbers in float64, nested and vmapped."""

import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad.func import jacfwd, jacrev, jvp, linearize, vmap


def _f(m, x, y):
    return (x**3).sin() * y.exp().sum() + x.tanh()


def _pair(rng, *shapes):
    arrays = [rng.standard_normal(s) for s in shapes]
    return [sg.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]


@pytest.mark.parametrize("seed", range(3))
def test_jvp_is_torchs(seed):
    rng = np.random.default_rng(seed)
    (x, y), (tx, ty) = _pair(rng, (4,), (2, 3))
    (u, v), (tu, tv) = _pair(rng, (4,), (2, 3))
    out, pushed = jvp(lambda a, b: _f(sg, a, b), (x, y), (u, v))
    t_out, t_pushed = torch.func.jvp(lambda a, b: _f(torch, a, b), (tx, ty), (tu, tv))
    np.testing.assert_allclose(out.numpy(), t_out.numpy(), rtol=1e-12)
    np.testing.assert_allclose(pushed.numpy(), t_pushed.numpy(), rtol=1e-12, atol=1e-14)


def test_linearize_runs_once_and_pushes_many_tangents():
    calls = []

    def f(x):
        calls.append(1)
        return x.sin() * x

    x = sg.tensor([0.3, -1.2, 2.0], dtype=sg.float64)
    out, jvp_fn = linearize(f, x)
    t_out, t_jvp_fn = torch.func.linearize(lambda a: a.sin() * a, torch.tensor(x.numpy()))
    for tangent in np.eye(3):
        np.testing.assert_allclose(
            jvp_fn(sg.tensor(tangent)).numpy(), t_jvp_fn(torch.tensor(tangent)).numpy(), rtol=1e-12
        )
    assert len(calls) == 1
    np.testing.assert_allclose(out.numpy(), t_out.numpy())


def test_jacfwd_is_torchs_for_several_arguments_and_with_aux():
    rng = np.random.default_rng(0)
    (x, y), (tx, ty) = _pair(rng, (3,), (1, 2))
    ours = jacfwd(lambda a, b: _f(sg, a, b), argnums=(0, 1))(x, y)
    theirs = torch.func.jacfwd(lambda a, b: _f(torch, a, b), argnums=(0, 1))(tx, ty)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)
    jac, aux = jacfwd(lambda a: (a**2, a.sum()), has_aux=True)(x)
    np.testing.assert_allclose(jac.numpy(), np.diag(2 * x.numpy()))
    assert aux.item() == pytest.approx(x.sum().item())


def test_forward_over_reverse_hessian_and_vmapped_jvp():
    x = sg.tensor([0.5, 1.0, 2.0], dtype=sg.float64)
    h = jacfwd(jacrev(lambda a: (a**3).sin().sum()))(x)
    t_h = torch.func.hessian(lambda a: (a**3).sin().sum())(torch.tensor(x.numpy()))
    np.testing.assert_allclose(h.numpy(), t_h.numpy(), rtol=1e-12, atol=1e-14)
    columns = vmap(lambda t: jvp(lambda a: a.sin() * a, (x,), (t,))[1])(sg.eye(3, dtype=x.dtype))
    expected = torch.func.jacfwd(lambda a: a.sin() * a)(torch.tensor(x.numpy()))
    np.testing.assert_allclose(columns.numpy(), expected.numpy().T, rtol=1e-12)


def test_bad_primals_and_tangents_raise():
    x = sg.ones(2)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        jvp(lambda a: a, x, (x,))
    with pytest.raises(RuntimeError, match="the tangents must have the structure and shapes"):
        jvp(lambda a: a, (x,), (sg.ones(3),))
    for m in (torch, sg):
        with pytest.raises(RuntimeError, match="Expected primals to only contain Tensors"):
            m.func.jvp(lambda a: a * 2, (3.0,), (1.0,))


INTEGER_OUTPUTS = {
    "jvp": lambda f, x: f.jvp(lambda a: (a.exp(), a.argmax(0)), (x,), (x.cos(),)),
    "jacfwd_max": lambda f, x: tuple(f.jacfwd(lambda a: a.max(0))(x)),
    "vmap_jvp": lambda f, x: f.vmap(lambda a: f.jvp(lambda z: (z.sin(), z.argsort()), (a,), (a,)))(
        x
    ),
}


@pytest.mark.parametrize("name", INTEGER_OUTPUTS)
def test_an_integer_output_has_zero_tangents_of_its_dtype_as_torch(name):
    array = np.random.default_rng(5).standard_normal((3, 2))
    theirs = INTEGER_OUTPUTS[name](torch.func, torch.tensor(array))
    ours = INTEGER_OUTPUTS[name](sg.func, sg.tensor(array))
    theirs, _ = torch.utils._pytree.tree_flatten(theirs)
    ours, _ = torch.utils._pytree.tree_flatten(ours)
    assert [str(t.dtype).split(".")[-1] for t in ours] == [
        str(t.dtype).split(".")[-1] for t in theirs
    ]
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)
