"""Random chains of ops under ``func.vmap`` against ``torch.func.vmap``: a float64 batch with its
batch dim anywhere (``in_dims`` 0, 1, -1), per-member shapes of one to three dims (size 1
dims too), a chain of one to three ops drawn from views, elementwise math, reductions, matrix
products, joins and in-place updates (of the member, of a view of it, by operators, methods and
setitem), a second operand batched or not, the result's batch dim put anywhere (``out_dims``);
per-member gradients,
``vmap(grad(f))``; and ``jacrev``, ``jacfwd``, ``jvp``, ``vjp`` and ``hessian`` of a chain.
Both libraries must raise or not (the same error class) and agree on the result's shape and
values. Set ``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import fuzz_settings, outcome, raised_alike

import scratchgrad as sg

FUZZ = fuzz_settings(300)

# Each op takes the library and a member ``x`` (and ``y``, the second operand's member, of the
# same shape) and gives one tensor.
OPS = {
    "sin": lambda m, x, y: x.sin(),
    "exp": lambda m, x, y: m.exp(x),
    "relu": lambda m, x, y: m.nn.functional.relu(x),
    "scale": lambda m, x, y: x * 2 + 1,
    "square": lambda m, x, y: x.pow(2),
    "clamp": lambda m, x, y: x.clamp(-0.5, 0.5),
    "add": lambda m, x, y: x + y,
    "mul": lambda m, x, y: m.mul(x, y),
    "maximum": lambda m, x, y: m.maximum(x, y),
    "where": lambda m, x, y: m.where(x > 0, x, y),
    "softmax": lambda m, x, y: x.softmax(-1),
    "log_softmax0": lambda m, x, y: m.log_softmax(x, 0),
    "cumsum": lambda m, x, y: x.cumsum(0),
    "sum": lambda m, x, y: x.sum(),
    "sum_last": lambda m, x, y: x.sum(-1),
    "mean_keep": lambda m, x, y: x.mean(0, keepdim=True),
    "amax": lambda m, x, y: x.amax(-1),
    "max_dim": lambda m, x, y: x.max(0).values,
    "sort": lambda m, x, y: x.sort(-1).values,
    "norm": lambda m, x, y: x.norm(),
    "std": lambda m, x, y: x.std(0),
    "transpose": lambda m, x, y: x.transpose(0, -1),
    "flatten": lambda m, x, y: x.flatten(),
    "reshape": lambda m, x, y: x.reshape(-1, 1),
    "unsqueeze": lambda m, x, y: x.unsqueeze(0),
    "squeeze": lambda m, x, y: x.squeeze(),
    "flip": lambda m, x, y: x.flip(0),
    "roll": lambda m, x, y: x.roll(1, 0),
    "first": lambda m, x, y: x[0],
    "slice": lambda m, x, y: x[..., :1],
    "step": lambda m, x, y: x[::2],
    "expand": lambda m, x, y: x.expand(2, *x.shape),
    "repeat": lambda m, x, y: x.repeat(2, *[1] * (x.dim() - 1)) if x.dim() else x.repeat(2),
    "cat": lambda m, x, y: m.cat([x, y], 0),
    "stack": lambda m, x, y: m.stack([x, y], -1),
    "outer": lambda m, x, y: x.reshape(-1, 1) @ y.reshape(1, -1),
    "matmul": lambda m, x, y: x.transpose(0, -1) @ y,
    "gather": lambda m, x, y: x.gather(0, m.zeros_like(x, dtype=m.int64)),
    "index": lambda m, x, y: x[m.tensor([0, 0])],
    "mask": lambda m, x, y: x.masked_fill(x > 0, 0.5),
    "add_": lambda m, x, y: x.clone().add_(y),
    "iadd": lambda m, x, y: _iadd(x.clone(), y),
    "mul_view_": lambda m, x, y: _through(x, lambda o: o[0].mul_(2)),
    "setitem": lambda m, x, y: _through(x, lambda o: o.__setitem__((..., 0), y[..., -1])),
    "setitem_number": lambda m, x, y: _through(x, lambda o: o.__setitem__(0, 0.5)),
    "flat_view_": lambda m, x, y: _through(x, lambda o: o.view(-1)[1:].fill_(2)),
    "transposed_": lambda m, x, y: _through(x, lambda o: o.transpose(0, -1).clamp_(-0.1, 0.1)),
    "copy_": lambda m, x, y: x.clone().copy_(y),
    "zero_": lambda m, x, y: _through(x, lambda o: o[..., :1].zero_()),
    "masked_fill_": lambda m, x, y: x.clone().masked_fill_(y > 0, 3),
    "input_": lambda m, x, y: x.mul_(3),  # the input itself
}


def _iadd(x, y):
    x += y
    return x


def _through(x, write):
    """A copy of ``x`` changed by ``write`` (which changes it, or a view of it, in place)."""
    out = x.clone()
    write(out)
    return out


@st.composite
def cases(draw):
    """The member shape, batch size, dims of the batch in x and y (None: y not batched), the
    chain of ops, out_dims, and the arrays as vmap gets them."""
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    batch = draw(st.integers(1, 3))
    chain = draw(st.lists(st.sampled_from(sorted(OPS)), min_size=1, max_size=3))
    x_dim = draw(st.sampled_from([0, 1, -1]))
    y_dim = draw(st.sampled_from([None, 0, -1]))
    out_dim = draw(st.sampled_from([0, -1]))
    seed = draw(st.integers(0, 2**16))
    return shape, batch, chain, x_dim, y_dim, out_dim, np.random.default_rng(seed)


def _batched(rng, shape, batch, dim):
    """Members of ``shape`` stacked along ``dim`` (None: one unbatched member)."""
    if dim is None:
        return rng.standard_normal(shape)
    stacked = rng.standard_normal((batch, *shape))
    return np.moveaxis(stacked, 0, dim if dim >= 0 else len(shape))


def _member(array, dim, i):
    """Member ``i`` of a batch made by ``_batched``, as a PyTorch tensor."""
    return torch.tensor(array if dim is None else np.take(array, i, dim))


def _chain(m, names, copies=False):
    """The ops one after another; with ``copies``, an op that changes its argument in place
    changes a copy instead (the same values, no version error: see ``_agree``)."""

    def run(x, y):
        for name in names:
            if copies and name == "input_":
                x = x.clone()
            x = OPS[name](m, x, y if y.shape == x.shape else x)
        return x

    return run


def _close(ours, theirs, what):
    assert tuple(ours.shape) == tuple(theirs.shape), what
    np.testing.assert_allclose(
        ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=what
    )


def _agree(call, loop, what):
    """``call(sg)`` against ``call(torch)``; where PyTorch's vmap raises, against ``loop(False)``,
    PyTorch on the members one by one (its vmap raises IndexError on some 0-d members:
    ``flip(0)`` of ``x[0]``, ``cat`` of them). Where PyTorch's backward finds a value it saved
    changed in place (``amax``'s result), ``loop(True)`` changes a copy: scratchgrad's ops
    save less, so its answer stands where the change did not touch what they need."""
    ours, theirs = outcome(call, sg), outcome(call, torch)
    if isinstance(theirs, Exception):
        changed = "modified by an inplace operation" in str(theirs)
        theirs = outcome(loop, changed and not isinstance(ours, Exception))
    if not raised_alike(ours, theirs, what):
        _close(ours, theirs, what)


def _members(x, x_dim, y, y_dim, batch):
    """The members of both operands, as PyTorch tensors, pair by pair."""
    return [(_member(x, x_dim, i), _member(y, y_dim, i)) for i in range(batch)]


@FUZZ
@given(cases())
def test_vmapped_chains_agree_with_pytorch(case):
    shape, batch, chain, x_dim, y_dim, out_dim, rng = case
    x, y = _batched(rng, shape, batch, x_dim), _batched(rng, shape, batch, y_dim)

    def call(m):
        vmap = m.func.vmap(_chain(m, chain), in_dims=(x_dim, y_dim), out_dims=out_dim)
        return vmap(m.tensor(x), m.tensor(y))

    def loop(copies):
        members = _members(x, x_dim, y, y_dim, batch)
        return torch.stack([_chain(torch, chain, copies)(*pair) for pair in members], out_dim)

    what = f"{chain} of {shape} batched {batch} at {x_dim}, y at {y_dim}, out at {out_dim}"
    _agree(call, loop, what)


@FUZZ
@given(cases())
def test_per_member_gradients_of_chains_agree_with_pytorch(case):
    shape, batch, chain, x_dim, y_dim, _, rng = case
    x, y = _batched(rng, shape, batch, x_dim), _batched(rng, shape, batch, y_dim)

    def loss(m, copies=False):
        return lambda x, y: (_chain(m, chain, copies)(x, y) ** 2).sum()

    def call(m):
        return m.func.vmap(m.func.grad(loss(m)), in_dims=(x_dim, y_dim))(m.tensor(x), m.tensor(y))

    def loop(copies):
        members = _members(x, x_dim, y, y_dim, batch)
        return torch.stack([torch.func.grad(loss(torch, copies))(*pair) for pair in members])

    _agree(call, loop, f"grad of {chain} of {shape} batched {batch} at {x_dim}, y at {y_dim}")


@pytest.mark.parametrize(
    "function",
    [
        lambda t: t.argmax(2),  # out of range for a 2-d member (was read as dim 0)
        lambda t: t.any(-3),
        lambda t: t.sum().argmax(0),  # a 0-d member takes dim 0 or -1
        lambda t: t.sum().max(-1).values,
        lambda t: t.sum().amin(0, keepdim=True),
        lambda t: t.sum().argmin(1),
    ],
)
def test_reductions_check_a_members_dim_as_pytorch(function):
    call = lambda m: m.func.vmap(function)(m.arange(12.0).reshape(2, 2, 3))  # noqa: E731
    ours, theirs = outcome(call, sg), outcome(call, torch)
    if not raised_alike(ours, theirs, "reduction"):
        _close(ours, theirs, "reduction")


TRANSFORMS = {
    "jacrev": lambda m, f, x, v: m.func.jacrev(f)(x),
    "jacfwd": lambda m, f, x, v: m.func.jacfwd(f)(x),
    "jvp": lambda m, f, x, v: m.func.jvp(f, (x,), (v,))[1],
    "vjp": lambda m, f, x, v: m.func.vjp(f, x)[1](f(x.detach()) * 0 + 1)[0],
    "hessian": lambda m, f, x, v: m.func.hessian(lambda t: (f(t) ** 2).sum())(x),
}


def _without_vmap(transform, f, x, v):
    """PyTorch's answer by ``torch.autograd.functional``, which loops where ``torch.func``
    vmaps (its vmap raises IndexError on some 0-d members); None for vjp, which needs none."""
    functional = torch.autograd.functional
    if transform == "hessian":
        return functional.hessian(lambda t: (f(t) ** 2).sum(), x)
    if transform == "vjp":
        return None
    jacobian = functional.jacobian(f, x)
    return torch.tensordot(jacobian, v, dims=x.dim()) if transform == "jvp" else jacobian


@FUZZ
@given(cases(), st.sampled_from(sorted(TRANSFORMS)))
def test_derivatives_of_chains_agree_with_pytorch(case, transform):
    """jacrev, jacfwd, jvp, vjp and hessian of a chain at one member; where PyTorch's
    transform raises, against ``torch.autograd.functional``'s answer."""
    shape, _, chain, *_, rng = case
    if transform in ("jacfwd", "jvp") and "input_" in chain:
        return  # forward mode is reverse mode here: docs/func.md, Limits (the primal changed)
    x, v = rng.standard_normal(shape), rng.standard_normal(shape)
    function = lambda m, copies=False: lambda t: _chain(m, chain, copies)(t, t)  # noqa: E731

    def call(m):
        return TRANSFORMS[transform](m, function(m), m.tensor(x), m.tensor(v))

    ours, theirs = outcome(call, sg), outcome(call, torch)
    if isinstance(theirs, Exception) and transform != "vjp":  # (copies: see _agree)
        copies = "modified by an inplace operation" in str(theirs)
        f = function(torch, copies and not isinstance(ours, Exception))
        theirs = outcome(_without_vmap, transform, f, torch.tensor(x), torch.tensor(v))
    what = f"{transform} of {chain} at {shape}"
    if not raised_alike(ours, theirs, what):
        _close(ours, theirs, what)
