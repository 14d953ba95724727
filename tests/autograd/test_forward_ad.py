"""``autograd.forward_ad`` (dual levels, make_dual, unpack_dual) against
``torch.autograd.forward_ad``: the tangents of the same functions in float64, the errors, what
leaving a level does, and dual tensors mixed with ordinary backward."""

import functools

import numpy as np
import oracle
import pytest
import torch
import torch.autograd.forward_ad as tfwAD

import scratchgrad as sg
import scratchgrad.autograd.forward_ad as fwAD

# tangents are found by two backward passes here and carried forward by PyTorch: the same
# derivatives summed in another order, so a little more than round-off may differ
assert_close = functools.partial(oracle.assert_close, tolerance=(1e-10, 1e-12))


def _mlp(m, x, w1, b1, w2):
    F = m.nn.functional
    return F.linear(F.gelu(F.linear(x, w1, b1)), w2).log_softmax(-1)


# name -> (f(library, *inputs), the inputs' shapes, which of them are duals)
FUNCTIONS = {
    "elementwise": (lambda m, x: x.sin() * x.exp() / (1 + x**2), [(3, 4)], [0]),
    "broadcasting": (lambda m, x, y: x * y + (x - y).tanh(), [(3, 4), (4,)], [0, 1]),
    "one_dual_of_two": (lambda m, x, y: x * y.sigmoid(), [(3, 4), (2, 1, 4)], [1]),
    "matmul": (lambda m, x, y: x @ y, [(3, 4), (4, 5)], [0, 1]),
    "reductions": (lambda m, x: x.sum(0) * x.mean() + x.logsumexp(1)[:, None].var(), [(3, 4)], [0]),
    "amax": (lambda m, x: x.amax(1) + x.norm(), [(3, 4)], [0]),
    "softmax": (lambda m, x: m.nn.functional.softmax(x, dim=-1), [(2, 5)], [0]),
    "indexing": (lambda m, x: x[:, [2, 0]].cumsum(0) * x.chunk(2, dim=1)[1], [(3, 4)], [0]),
    "conv2d": (
        lambda m, x, w, b: m.nn.functional.conv2d(x, w, b, padding=1).relu(),
        [(2, 3, 5, 5), (4, 3, 3, 3), (4,)],
        [0, 1, 2],
    ),
    "mlp": (_mlp, [(6, 3), (8, 3), (8,), (2, 8)], [1, 2, 3]),
}


def _tangent(lib, fwad, f, arrays, tangents, duals):
    with fwad.dual_level():
        xs = [
            fwad.make_dual(lib.tensor(a), lib.tensor(t)) if i in duals else lib.tensor(a)
            for i, (a, t) in enumerate(zip(arrays, tangents))
        ]
        primal, tangent = fwad.unpack_dual(f(lib, *xs))
    return primal, tangent


@pytest.mark.parametrize("name", FUNCTIONS)
def test_tangent_is_torchs(name):
    f, shapes, duals = FUNCTIONS[name]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    tangents = [rng.standard_normal(s) for s in shapes]
    primal, tangent = _tangent(sg, fwAD, f, arrays, tangents, duals)
    t_primal, t_tangent = _tangent(torch, tfwAD, f, arrays, tangents, duals)
    assert_close(primal, t_primal, what="primal")
    assert_close(tangent, t_tangent, what="tangent")
    assert not primal.requires_grad and not t_primal.requires_grad


def _raised(call, *args) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        call(*args)
    return type(info.value), str(info.value)


def _with_level(lib, fwad, call):
    with fwad.dual_level():
        return _raised(call, lib, fwad)


# calls inside a level that must fail as PyTorch's do, with its message
BAD_CALLS = {
    "nested": lambda m, fwad: fwad.enter_dual_level(),
    "tangent_shape": lambda m, fwad: fwad.make_dual(m.ones(3, dtype=m.float64), m.ones(4)),
    "level_not_entered": lambda m, fwad: fwad.make_dual(m.ones(2), m.ones(2), level=1),
    "dual_of_a_dual": lambda m, fwad: fwad.make_dual(
        fwad.make_dual(m.ones(2), m.ones(2)), m.ones(2)
    ),
    "dual_of_a_result": lambda m, fwad: fwad.make_dual(
        fwad.make_dual(m.ones(2), m.ones(2)).exp(), m.ones(2)
    ),
    "exit_another_level": lambda m, fwad: fwad.exit_dual_level(level=3),
    "unpack_another_level": lambda m, fwad: fwad.unpack_dual(
        fwad.make_dual(m.ones(2), m.ones(2)) * 2, level=2
    ),
    "unpack_a_number": lambda m, fwad: fwad.unpack_dual(3),
}


@pytest.mark.parametrize("name", BAD_CALLS)
def test_errors_are_torchs(name):
    assert _with_level(sg, fwAD, BAD_CALLS[name]) == _with_level(torch, tfwAD, BAD_CALLS[name])


OUTSIDE = {
    "make_dual": lambda m, fwad: fwad.make_dual(m.ones(2), m.ones(2)),
    "exit_dual_level": lambda m, fwad: fwad.exit_dual_level(),
}


@pytest.mark.parametrize("name", OUTSIDE)
def test_errors_outside_a_level_are_torchs(name):
    assert _raised(OUTSIDE[name], sg, fwAD) == _raised(OUTSIDE[name], torch, tfwAD)


def test_integer_primal_or_tangent_is_a_value_error_as_torchs():
    with fwAD.dual_level(), tfwAD.dual_level():
        for ours, theirs in [
            (
                (sg.ones(2, dtype=sg.int64), sg.ones(2)),
                (torch.ones(2, dtype=torch.int64), torch.ones(2)),
            ),
            (
                (sg.ones(2), sg.ones(2, dtype=sg.int64)),
                (torch.ones(2), torch.ones(2, dtype=torch.int64)),
            ),
        ]:
            kind, message = _raised(fwAD.make_dual, *ours)
            t_kind, t_message = _raised(tfwAD.make_dual, *theirs)
            assert kind is t_kind is ValueError
            assert message == t_message.replace("torch.", "")


def test_levels_are_numbered_and_exited_as_torchs():
    assert fwAD.enter_dual_level() == tfwAD.enter_dual_level() == 0
    fwAD.exit_dual_level(level=0)
    tfwAD.exit_dual_level(level=0)
    with fwAD.dual_level() as level, tfwAD.dual_level() as t_level:
        assert level == t_level == 0


def _through_levels(lib, fwad):
    """Tangents inside a level, after leaving it, and of its output inside the next one."""
    with fwad.dual_level():
        x = fwad.make_dual(lib.tensor([1.0, 2.0]).double(), lib.tensor([3.0, -1.0]).double())
        out = x.exp()
        inside = fwad.unpack_dual(out).tangent
        unrelated = fwad.unpack_dual(lib.tensor([1.0]) * 2).tangent
        other_level = fwad.unpack_dual(lib.ones(2), level=1).tangent
    after = fwad.unpack_dual(out)
    with fwad.dual_level():
        next_level = fwad.unpack_dual(out).tangent
    return inside, unrelated, other_level, after.tangent, after.primal is out, next_level


def test_leaving_a_level_drops_the_tangents_as_torch():
    inside, *rest = _through_levels(sg, fwAD)
    t_inside, *t_rest = _through_levels(torch, tfwAD)
    assert_close(inside, t_inside)
    assert rest == t_rest == [None, None, None, True, None]


def test_dual_level_is_a_decorator():
    @fwAD.dual_level()
    def tangent(x):
        return fwAD.unpack_dual(fwAD.make_dual(x, sg.ones(2)) ** 2).tangent

    assert_close(tangent(sg.tensor([1.0, 4.0])), np.array([2.0, 8.0]))
    assert fwAD.unpack_dual(sg.ones(1)).tangent is None  # the level was left


def _mixed(lib, fwad, x, t, v):
    """A dual of a tensor requiring grad, a dual whose tangent requires grad, then backward
    through the value and through the tangent."""
    with fwad.dual_level():
        d = fwad.make_dual(x, t)
        e = fwad.make_dual(lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64), v)
        out = (d.sin() * e).sum() + (d * d).sum()
        primal, tangent = fwad.unpack_dual(out)
        out.backward(retain_graph=True)
        value_grad = x.grad.clone()
        x.grad = None
        tangent.backward()
    return primal, tangent, value_grad, x.grad, t.grad, v.grad


def test_duals_of_tensors_requiring_grad_mix_with_backward_as_torch():
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(3) for _ in range(3)]
    ours = _mixed(sg, fwAD, *(sg.tensor(a, requires_grad=True) for a in arrays))
    theirs = _mixed(torch, tfwAD, *(torch.tensor(a, requires_grad=True) for a in arrays))
    assert ours[0].requires_grad and ours[1].requires_grad
    for name, a, b in zip(["primal", "tangent", "dx", "dtangent/dx", "dt", "dv"], ours, theirs):
        assert_close(a, b, what=name)


def _hvp(lib, fwad, x, v):
    """Forward over reverse: the tangent of a gradient is a Hessian-vector product."""
    with fwad.dual_level():
        d = fwad.make_dual(x, v)
        (g,) = lib.autograd.grad((d.exp() * d.roll(1, 0)).sum(), d, create_graph=True)
        return fwad.unpack_dual(g).tangent


def test_tangent_of_a_gradient_is_a_hessian_vector_product_as_torchs():
    rng = np.random.default_rng(2)
    x, v = rng.standard_normal(4), rng.standard_normal(4)
    ours = _hvp(sg, fwAD, sg.tensor(x, requires_grad=True), sg.tensor(v))
    theirs = _hvp(torch, tfwAD, torch.tensor(x, requires_grad=True), torch.tensor(v))
    assert_close(ours, theirs)


def test_unpacking_again_is_kept_until_an_in_place_change():
    t = sg.tensor([1.0, -2.0])
    with fwAD.dual_level():
        out = fwAD.make_dual(sg.tensor([3.0, 4.0]), t) * 2
        first = fwAD.unpack_dual(out)
        assert fwAD.unpack_dual(out).tangent is first.tangent  # not found again
        out.mul_(3)
        assert_close(fwAD.unpack_dual(out).tangent, np.array([6.0, -12.0]))
        assert_close(first.tangent, np.array([2.0, -4.0]))
        assert fwAD.unpack_dual(fwAD.make_dual(sg.ones(2), t)).tangent is t  # as given


def test_integer_results_have_no_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(sg.tensor([1.0, 3.0]), sg.ones(2))
        assert fwAD.unpack_dual(d.argmax()).tangent is None
        assert fwAD.unpack_dual(d > 2).tangent is None
        assert_close(fwAD.unpack_dual(d.round()).tangent, np.zeros(2))


class _Cube(sg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x**2


class _JvpOnly(sg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def jvp(ctx, tangent):
        return tangent * 2


def test_custom_functions_pass_tangents_through_backward_and_need_one():
    with fwAD.dual_level():
        d = fwAD.make_dual(sg.tensor([1.0, 2.0]), sg.tensor([1.0, 0.5]))
        assert_close(fwAD.unpack_dual(_Cube.apply(d)).tangent, np.array([3.0, 6.0]))
        with pytest.raises(RuntimeError, match="_JvpOnly has no backward.*jvp is not used"):
            fwAD.unpack_dual(_JvpOnly.apply(d))


def _sine(lib):
    """A Function written for both modes, as PyTorch's docs write one: ``save_for_forward``
    in ``forward``, a ``backward`` and a ``jvp``."""

    class Sine(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x.cos()

        @staticmethod
        def jvp(ctx, tangent):
            (x,) = ctx.saved_tensors
            return tangent * x.cos()

    return Sine


@pytest.mark.parametrize("mode", ["forward", "backward"])
def test_a_function_saving_for_forward_runs_as_torchs(mode):
    """scratchgrad's tangent goes through ``backward`` (the ``jvp`` is not called), so both
    modes give torch's numbers."""
    values, direction = np.array([0.5, 1.0, 2.0]), np.array([1.0, -2.0, 0.5])
    found = []
    for lib, ad in ((torch, tfwAD), (sg, fwAD)):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=mode == "backward")
        if mode == "backward":
            _sine(lib).apply(x).sum().backward()
            found.append(x.grad.detach().numpy())
            continue
        with ad.dual_level():
            dual = ad.make_dual(x, lib.tensor(direction, dtype=lib.float64))
            found.append(ad.unpack_dual(_sine(lib).apply(dual)).tangent.detach().numpy())
    np.testing.assert_allclose(found[1], found[0], rtol=1e-12)


def test_a_dual_and_its_views_change_in_place_as_torchs():
    """A dual of a tensor that requires no grad may be changed in place, itself or through a
    view, as PyTorch's: the writes reach the tensor, and the tangents follow them (the dual
    was a leaf requiring grad, which refused every in-place change)."""
    results = []
    for m in (sg, torch):
        x = m.tensor([1.0, 2.0, 3.0], dtype=m.float64)
        t = m.tensor([1.0, 0.5, -1.0], dtype=m.float64)
        with m.autograd.forward_ad.dual_level():
            dual = m.autograd.forward_ad.make_dual(x, t)
            dual.mul_(2)
            dual[1:].mul_(dual[:2].clone())
            out = dual.exp()
            unpack = m.autograd.forward_ad.unpack_dual
            results.append([x.clone(), *unpack(dual), *unpack(out)])
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)


def test_a_dual_of_a_tensor_requiring_grad_changed_in_place_is_refused():
    """The dual of a tensor in a graph is a view of it, differentiated through its own node,
    which an in-place change replaces: its tangent was then left out (PyTorch's follows the
    change: unpack_dual((d * d).sum()) after d.mul_(3) is 54 here, ours gave 18)."""
    x = sg.tensor([1.0, 2.0], requires_grad=True) * 1
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, sg.ones(2))
        dual.mul_(3)
        with pytest.raises(RuntimeError, match="requires grad .* was changed in place"):
            fwAD.unpack_dual((dual * dual).sum())


def test_backward_fills_the_grad_of_a_dual_as_torchs():
    """A dual of a tensor that requires no grad is no leaf here (so that it may change in
    place), but backward fills its ``.grad`` as it does PyTorch's, a leaf once
    ``requires_grad_()`` is called."""
    grads = []
    for m in (sg, torch):
        with m.autograd.forward_ad.dual_level():
            x = m.tensor([1.0, 2.0], dtype=m.float64)
            dual = m.autograd.forward_ad.make_dual(x, m.ones(2, dtype=m.float64))
            dual.requires_grad_()
            (dual * dual).sum().backward()
            grads.append(dual.grad)
    assert_close(*grads)


def _flags_of_a_dual(m):
    """What users see of a dual of a tensor not requiring grad and of a result of it."""
    with m.autograd.forward_ad.dual_level():
        x = m.tensor([1.0, 2.0], dtype=m.float64)
        dual = m.autograd.forward_ad.make_dual(x, m.tensor([1.0, 0.0], dtype=m.float64))
        y = (dual * dual).sum()
        primal, tangent = m.autograd.forward_ad.unpack_dual(y)
        flags = {
            "dual": (dual.requires_grad, dual.is_leaf, dual.grad_fn is None),
            "result": (y.requires_grad, y.is_leaf, y.grad_fn is None),
        }
        return flags, primal.requires_grad, tangent.item(), x.requires_grad, x.grad


def test_what_users_see_of_a_dual_of_a_tensor_not_requiring_grad():
    """Primal, tangent and the given tensor are PyTorch's; the dual and its results require
    grad here (forward AD is built on the backward graph), as docs/func.md's table says."""
    ours, theirs = _flags_of_a_dual(sg), _flags_of_a_dual(torch)
    assert ours[1:] == theirs[1:] == (False, 2.0, False, None)
    assert theirs[0] == {"dual": (False, True, True), "result": (False, True, True)}
    assert ours[0] == {"dual": (True, False, False), "result": (True, False, False)}
