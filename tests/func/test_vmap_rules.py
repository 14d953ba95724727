"""Every row of the op table through ``func.vmap``: the batched result equals
``torch.func.vmap`` on the same function and a Python loop over the members, with the batch in
each input position and nested; gradients through vmap and per-member gradients
(``vmap(grad(f))``) equal PyTorch's. Plus the rule table itself: every primitive has a rule or a
clear error naming it."""

import functools
import importlib
import inspect
import pkgutil
import re

import numpy as np
import pytest
import torch
from op_table import OPS
from oracle import assert_close, check_against_torch

import scratchgrad as sg
from scratchgrad import ops
from scratchgrad.autograd.function import Function
from scratchgrad.func import grad, vjp, vmap
from scratchgrad.func.rules import RULES

BATCH = 3
VMAPPED = [op for op in OPS if op.vmap]


def _arity(op):
    """The inputs ``call`` takes after ``m``: not its parameters with defaults (a row made in a
    loop binds its options so, as scatter_reduce's rows bind ``reduce``)."""
    return op.call.__code__.co_argcount - 1 - len(op.call.__defaults__ or ())


def _inputs(op, batched_shape):
    """One array per input: batched ones get a leading dim of BATCH, the others none."""
    rng = np.random.default_rng(0)
    n = _arity(op)
    domains = op.domain if isinstance(op.domain, tuple) else (op.domain,) * n
    return [
        domain(rng, (BATCH, *shape) if batched else shape)
        for domain, shape, batched in zip(domains, op.check_shapes[:n], batched_shape)
    ]


def _in_dims_cases(op):
    """All batched, and for two inputs each one alone."""
    n = _arity(op)
    return [(0,) * n] + ([(0, None), (None, 0)] if n == 2 else [])


def _loop(op, arrays, in_dims):
    outs = []
    for i in range(BATCH):
        xs = [sg.tensor(a if d is None else a[i]) for a, d in zip(arrays, in_dims)]
        outs.append(op.call(sg, *xs))
    return sg.stack(outs)


def _skipped_where_a_rule_is_missing(test):
    """A row that reaches a primitive listed in WITHOUT_RULES is skipped, once vmap's error
    has named that primitive (the error every op without a rule must raise)."""

    @functools.wraps(test)
    def run(*args, **kwargs):
        try:
            return test(*args, **kwargs)
        except RuntimeError as error:
            named = re.match(r"vmap: (\w+) has no batching rule", str(error))
            if named and named.group(1) in WITHOUT_RULES:
                pytest.skip(f"{named.group(1)} has no batching rule yet (WITHOUT_RULES)")
            raise

    return run


@pytest.mark.parametrize("op", VMAPPED, ids=lambda op: op.name)
@_skipped_where_a_rule_is_missing
def test_vmap_matches_torch_and_a_loop(op):
    for in_dims in _in_dims_cases(op):
        arrays = _inputs(op, [d is not None for d in in_dims])
        ours = vmap(lambda *xs: op.call(sg, *xs), in_dims=in_dims)(*map(sg.tensor, arrays))
        theirs = torch.func.vmap(lambda *xs: op.call(torch, *xs), in_dims=in_dims)(
            *map(torch.tensor, arrays)
        )
        assert_close(ours, theirs, "float64", f"{op.name} in_dims={in_dims} vs torch.func.vmap")
        assert_close(ours, _loop(op, arrays, in_dims), "float64", f"{op.name} vs a loop")


# rows whose nested vmap torch.func gets wrong: grid_sample of a grid computed from the batched
# input, its batch dim not in front, comes back with the batch dims in the wrong order (PyTorch
# 2.13: vmap over in_dims=-1 of x -> grid_sample(x, f(x)) gives (2, 5, ...) for (5, 2, ...)).
# Their reference is PyTorch's function in a loop over both batch dims.
TORCH_NESTED_WRONG = {
    "grid_sample", "grid_sample_nearest_border", "grid_sample_bicubic_reflection",
    "grid_sample_3d", "affine_grid_sample",
}  # fmt: skip


def _torch_loop_over_the_last_dim(op, arrays):
    """PyTorch's call on each member along the arrays' last dim, stacked in front."""
    return torch.stack(
        [op.call(torch, *(torch.tensor(a[..., j]) for a in arrays)) for j in range(BATCH)]
    )


def test_grid_sample_over_a_batch_dim_not_in_front_is_a_loops_where_torchs_is_not():
    """docs/func.md's account of TORCH_NESTED_WRONG: one vmap over in_dims=-1 is enough for
    PyTorch 2.13 to put that batch dim after the image batch; ours is a loop's."""
    op = next(op for op in OPS if op.name == "grid_sample")
    x = np.random.default_rng(2).standard_normal((2, 2, 3, 4, BATCH))
    loop = _torch_loop_over_the_last_dim(op, [x])
    theirs = torch.func.vmap(lambda t: op.call(torch, t), in_dims=-1)(torch.tensor(x))
    assert theirs.shape == (2, BATCH, 2, 3, 4) != loop.shape
    ours = sg.func.vmap(lambda t: op.call(sg, t), in_dims=-1)(sg.tensor(x))
    assert_close(ours, loop, "float64")


@pytest.mark.parametrize("op", VMAPPED, ids=lambda op: op.name)
@_skipped_where_a_rule_is_missing
def test_nested_vmap_over_a_moved_batch_dim(op):
    """vmap(vmap(f)) over inputs (2, *shape, BATCH): the inner batch dim is the last one."""
    rng = np.random.default_rng(1)
    n = _arity(op)
    domains = op.domain if isinstance(op.domain, tuple) else (op.domain,) * n
    arrays = [d(rng, (2, *s, BATCH)) for d, s in zip(domains, op.check_shapes[:n])]
    in_dims = tuple(len(s) for s in op.check_shapes[:n])  # BATCH's dim once 2 is peeled off
    ours = vmap(vmap(lambda *xs: op.call(sg, *xs), in_dims=in_dims))(*map(sg.tensor, arrays))
    if op.name in TORCH_NESTED_WRONG:
        theirs = torch.stack(
            [_torch_loop_over_the_last_dim(op, [a[i] for a in arrays]) for i in range(2)]
        )
    else:
        theirs = torch.func.vmap(torch.func.vmap(lambda *xs: op.call(torch, *xs), in_dims=in_dims))(
            *map(torch.tensor, arrays)
        )
    assert_close(ours, theirs, "float64", f"{op.name} nested")


@pytest.mark.parametrize("op", [op for op in VMAPPED if op.grad], ids=lambda op: op.name)
@_skipped_where_a_rule_is_missing
def test_gradients_through_vmap_and_per_member_gradients(op):
    arrays = _inputs(op, [True] * _arity(op))
    check_against_torch(
        vmap(lambda *xs: op.call(sg, *xs)),
        torch.func.vmap(lambda *xs: op.call(torch, *xs)),
        arrays,
        what=f"{op.name} through vmap",
        seed=2,
    )

    per_member = vmap(grad(lambda x, *rest: op.call(sg, x, *rest).sum()))(*map(sg.tensor, arrays))
    expected = torch.func.vmap(torch.func.grad(lambda x, *rest: op.call(torch, x, *rest).sum()))(
        *map(torch.tensor, arrays)
    )
    assert_close(per_member, expected, "float64", f"{op.name}: vmap(grad)")


@pytest.mark.parametrize("op", [op for op in VMAPPED if op.grad], ids=lambda op: op.name)
@_skipped_where_a_rule_is_missing
def test_vmapped_vjp_runs_the_backward_formulas_batched(op):
    """vmap over vjp_fn's cotangents: the op's backward formula itself runs batched, equal to
    PyTorch's vjp_fn run on each cotangent (not to torch.func.vmap of it, which for cdist's
    backward gives other numbers than its own loop)."""
    arrays = _inputs(op, [False] * _arity(op))
    out, vjp_fn = vjp(lambda *xs: op.call(sg, *xs), *map(sg.tensor, arrays))
    t_out, t_vjp_fn = torch.func.vjp(lambda *xs: op.call(torch, *xs), *map(torch.tensor, arrays))
    cotangents = np.random.default_rng(3).standard_normal((BATCH, *out.shape))
    ours = vmap(vjp_fn)(sg.tensor(cotangents))
    each = [t_vjp_fn(torch.tensor(c)) for c in cotangents]
    theirs = [torch.stack(gradients) for gradients in zip(*each)]
    for i, (g, t) in enumerate(zip(ours, theirs)):
        assert_close(g, t, "float64", f"{op.name}: vmap(vjp_fn) gradient {i}")


def _primitives():
    """Every Function defined in a module of scratchgrad.ops."""
    found = set()
    for info in pkgutil.iter_modules(ops.__path__):
        module = importlib.import_module(f"scratchgrad.ops.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Function) and cls.__module__ == module.__name__:
                found.add(cls)
    return found


# primitives without a rule (vmap raises naming them). scatter_reduce's and the legacy
# scatter(reduce=)'s need none: their positions are read from the index's values, so
# Tensor._scatter_reduced hands a batched call to BatchedTensor._scatter_reduce (or _scatter),
# which runs them on whole batches, and their backward formulas call them on saved unbatched
# tensors only (tests/func/test_vmap_scatter_reduce.py)
# AsStrided needs none either: Tensor.as_strided hands a batched tensor to
# BatchedTensor._as_strided, which calls it on the batch with the batch dims' strides in front
# (tests/func/test_vmap_strides.py)
WITHOUT_RULES = {"ScatterReduce", "ScatterLegacyReduce", "AsStrided"}


def test_every_primitive_has_a_rule_or_is_listed_without_one():
    missing = {
        cls.__name__ for cls in _primitives() if not any(k in RULES for k in cls.__mro__)
    } - WITHOUT_RULES
    assert not missing, (
        f"primitives without a batching rule: {sorted(missing)}; add a row to RULES in "
        "src/scratchgrad/func/rules.py (docs/func.md says how), or list them in WITHOUT_RULES "
        "here: vmap then raises an error naming them, and the op-table rows that reach them "
        "are skipped by the vmap tests (a row that cannot batch at all, as a boolean mask's "
        "data-dependent shape, says vmap=False)"
    )


def test_a_users_function_without_its_switch_raises_an_error_naming_it():
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            return x**3

        @staticmethod
        def backward(ctx, grad):
            raise NotImplementedError

    with pytest.raises(RuntimeError, match=r"vmap over Cube.*generate_vmap_rule = True"):
        vmap(Cube.apply)(sg.ones(2, 3))


@pytest.mark.parametrize(
    ("write", "what"),
    [
        (lambda y: y.as_strided_((2,), (1,)), "as_strided_"),
        (lambda y: sg.as_strided_(y, (2,), (1,)), "as_strided_"),
        (lambda y: y.apply_(abs), "apply_"),
    ],
    ids=["as_strided_", "the function as_strided_", "apply_"],
)
def test_an_in_place_write_vmap_does_not_batch_raises_naming_it(write, what):
    """as_strided_ and apply_ of a batch raise, naming the op and what to write instead (the
    arithmetic, fills, copies, index writes, setitem and the other in-place view changes are
    batched:
    tests/func/test_vmap_in_place.py; random fills: tests/func/test_vmap_randomness.py)."""

    def f(row):
        y = row * 2
        write(y)
        return y

    with pytest.raises(RuntimeError, match=f"vmap: {what} writes into a batched tensor"):
        vmap(f, randomness="different")(sg.ones(3, 2))


def test_reading_values_directly_raises_a_clear_error():
    with pytest.raises(RuntimeError, match="vmap: .*batched tensor was used directly"):
        vmap(lambda x: x.item())(sg.ones(3))
    with pytest.raises(RuntimeError, match="vmap: .*batched tensor was used directly"):
        vmap(lambda x: sg.tensor(x.numpy() * 2))(sg.ones(3))


CONV_CASES = [
    (
        "conv2d",
        lambda F, x, w: F.conv2d(x, w, w[:, 0, 0, 0], padding=1),
        (2, 3, 5, 5),
        (4, 3, 3, 3),
    ),
    (
        "conv2d_strided_grouped",
        lambda F, x, w: F.conv2d(x, w, stride=2, groups=3),
        (2, 3, 6, 5),
        (6, 1, 2, 2),
    ),
    ("conv1d", lambda F, x, w: F.conv1d(x, w, padding=2, dilation=2), (2, 2, 7), (3, 2, 3)),
    ("max_pool2d_tiles", lambda F, x, w: F.max_pool2d(x * w.sum(), 2), (2, 3, 4, 6), (1,)),
    ("max_pool2d_windows", lambda F, x, w: F.max_pool2d(x * w.sum(), 3, 2, 1), (2, 3, 5, 5), (1,)),
    ("avg_pool2d", lambda F, x, w: F.avg_pool2d(x * w.sum(), 2, 1), (2, 3, 4, 4), (1,)),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda case: case[0])
def test_vmap_over_convolution_and_pooling(case):
    """Batched images, batched filters (a population of CNNs), and both, against
    torch.func.vmap; and per-member gradients."""
    _, call, x_shape, w_shape = case
    rng = np.random.default_rng(4)
    for in_dims in [(0, None), (None, 0), (0, 0)]:
        x, w = (
            rng.standard_normal((BATCH, *shape) if d == 0 else shape)
            for shape, d in zip((x_shape, w_shape), in_dims)
        )
        ours = vmap(lambda x, w: call(sg.nn.functional, x, w), in_dims=in_dims)(
            sg.tensor(x), sg.tensor(w)
        )
        theirs = torch.func.vmap(lambda x, w: call(torch.nn.functional, x, w), in_dims=in_dims)(
            torch.tensor(x), torch.tensor(w)
        )
        assert_close(ours, theirs, "float64", f"{case[0]} in_dims={in_dims}")
        g = vmap(
            grad(lambda x, w: call(sg.nn.functional, x, w).square().sum(), argnums=(0, 1)),
            in_dims=in_dims,
        )(sg.tensor(x), sg.tensor(w))
        tg = torch.func.vmap(
            torch.func.grad(
                lambda x, w: call(torch.nn.functional, x, w).square().sum(), argnums=(0, 1)
            ),
            in_dims=in_dims,
        )(torch.tensor(x), torch.tensor(w))
        for i in range(2):
            assert_close(
                g[i], tg[i], "float64", f"{case[0]} in_dims={in_dims}: per-member gradient {i}"
            )


def _softmax_derivatives(m, function):
    """vmap of jacfwd, and of hessian, of ``function(m, member)`` over 0-d members."""
    x = m.tensor([0.3, -1.2, 2.0], dtype=m.float64)
    of_member = functools.partial(function, m)
    hessian = m.func.hessian(lambda t: of_member(t).sin())
    return m.func.vmap(m.func.jacfwd(of_member))(x), m.func.vmap(hessian)(x)


@pytest.mark.parametrize(
    "function",
    [
        lambda m, t: m.log_softmax(t, 0),
        lambda m, t: m.softmax(t, -1) * t,  # its gradient's own backward (SoftmaxGrad's)
        lambda m, t: t.var(0, correction=0) + t,
        lambda m, t: m.var_mean(t, 0, correction=0)[0] + t,
        lambda m, t: m.linalg.vector_norm(t, ord=float("inf"), dim=0),
    ],
)
def test_gradients_of_reductions_over_0d_members_stay_per_member(function):
    """log_softmax, softmax, var and the inf-norm over the one dim a 0-d member names (none):
    their backward summed (or averaged) over no dims as ``sum(())``, all dims, so under vmap
    the members were mixed (vmap of jacfwd of log_softmax gave -1 each, not 0; vmap of grad
    of var with correction=0 gave the member minus the batch's mean, not 0)."""
    ours, theirs = _softmax_derivatives(sg, function), _softmax_derivatives(torch, function)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)
