"""Random chains of shape and movement ops against PyTorch: hypothesis draws a float64 tensor
that requires grad (0-d, 0-size and size-1 dims included) and one to four ops (views, splits,
joins, flips, repeats, ``as_strided``...), each drawn for the shapes PyTorch's chain has made so
far, some of them invalid. Both libraries must raise alike (the same error class) and agree on
each result's shape and values, on the strides and contiguity of the views, and on the gradient
of ``(y * w).sum()``. Then the chain runs again on a clone of ``x`` (a non-leaf), one result is
written in place (``mul_``, ``add_``, ``zero_``), and the base, the results and the gradient
through the write must be PyTorch's. Set ``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples."""

import math

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import fuzz_settings, outcome

import scratchgrad as sg

FUZZ = fuzz_settings(100)
ROUND_OFF = (1e-12, 1e-12)  # (rtol, atol): only the order of additions may differ


# ---- drawing the arguments for a shape ------------------------------------------------------


def a_dim(draw, ndim: int, extra: int = 0) -> int:
    """A dim of ``ndim + extra`` dims, negative or not; now and then one out of range."""
    n = max(ndim + extra, 1)
    if draw(st.integers(0, 15)) == 0:
        return draw(st.sampled_from([n, -n - 1]))
    return draw(st.integers(-n, n - 1))


def some_dims(draw, ndim: int) -> tuple:
    """Distinct dims (0-d: 0 or -1), now and then a repeated one."""
    dims = draw(st.lists(st.integers(0, max(ndim - 1, 0)), max_size=max(ndim, 1), unique=True))
    dims = [d - ndim if draw(st.booleans()) and ndim else d for d in dims]
    if dims and draw(st.integers(0, 15)) == 0:
        dims.append(dims[0])
    return tuple(dims)


def a_permutation(draw, ndim: int) -> tuple:
    order = draw(st.permutations(range(ndim)))
    return tuple(d - ndim if draw(st.booleans()) else d for d in order)


def factors(draw, size: int) -> list:
    """Sizes whose product is ``size`` (one of them -1 now and then)."""
    if size <= 1:
        out = [size] * draw(st.integers(1, 2))
    else:
        first = draw(st.sampled_from([d for d in range(1, size + 1) if size % d == 0]))
        out = [first, size // first]
    if draw(st.integers(0, 3)) == 0:
        out[draw(st.integers(0, len(out) - 1))] = -1
    return out


def a_new_shape(draw, shape: tuple) -> tuple:
    """A shape of as many entries (adjacent dims merged or split, 1s added or removed, the
    sizes reordered, one size -1); now and then one of another count."""
    sizes = list(shape)
    how = draw(st.sampled_from(["flat", "merge", "split", "ones", "reorder"]))
    if how == "flat":
        sizes = [math.prod(shape)]
    elif how == "merge" and len(sizes) >= 2:
        at = draw(st.integers(0, len(sizes) - 2))
        sizes[at : at + 2] = [sizes[at] * sizes[at + 1]]
    elif how == "split" and sizes:
        at = draw(st.integers(0, len(sizes) - 1))
        sizes[at : at + 1] = [abs(f) for f in factors(draw, sizes[at])]
    elif how == "ones":
        sizes = [n for n in sizes if n != 1]
        sizes.insert(draw(st.integers(0, len(sizes))), 1)
    else:
        sizes = list(draw(st.permutations(sizes)))
    if sizes and draw(st.integers(0, 3)) == 0:
        sizes[draw(st.integers(0, len(sizes) - 1))] = -1
    if draw(st.integers(0, 15)) == 0:
        sizes.append(2)
    return tuple(sizes)


def a_broadcast_shape(draw, shape: tuple) -> tuple:
    """A shape ``shape`` expands to (new leading dims, size-1 dims grown, -1 kept sizes);
    now and then one it does not."""
    # (-1 in a new dim only for an input with dims: PyTorch's expand of a 0-d tensor to an
    # empty shape keeps it as a size, tensor(1.).expand(0, -1) has shape (0, -1))
    lead = draw(st.lists(st.integers(-1 if shape else 0, 3), max_size=2))
    kept = []
    for n in shape:
        if n == 1:
            kept.append(draw(st.sampled_from([1, 0, 2, 3, -1])))
        else:
            kept.append(draw(st.sampled_from([n, n, -1])))
    if kept and draw(st.integers(0, 15)) == 0:
        kept[0] = shape[0] + 1
    return (*lead, *kept)


def sections(draw, size: int) -> list:
    """Sorted places to cut a dim of ``size`` (``tensor_split``'s indices), now and then one
    past its end."""
    return sorted(draw(st.lists(st.integers(0, size + 1), max_size=3)))


# ---- the ops ---------------------------------------------------------------------------------
# Each takes the pieces the chain has made (it starts with [x]): ``one(draw, t)`` draws the
# arguments of an op on one piece (None where the op cannot be drawn for t) and returns the
# call ``(m, t) -> result`` (a tensor or a tuple of them), ``join(draw, pieces)`` of an op on
# all of them. VIEWS are the ops whose results PyTorch defines as views (their strides are
# compared); for the others PyTorch may keep an input's layout (an elementwise copy of a
# transpose stays transposed), so the chain stops comparing layouts after one of them whose
# result either library does not lay out row-major.


def view(draw, t):
    shape = a_new_shape(draw, tuple(t.shape))
    return lambda m, t: t.view(shape)


def reshape(draw, t):
    shape = a_new_shape(draw, tuple(t.shape))
    return lambda m, t: t.reshape(shape)


def permute(draw, t):
    order = a_permutation(draw, t.ndim)
    return lambda m, t: t.permute(order)


def transpose(draw, t):
    d0, d1 = a_dim(draw, t.ndim), a_dim(draw, t.ndim)
    name = draw(st.sampled_from(["transpose", "swapaxes", "swapdims"]))
    return lambda m, t: getattr(m, name)(t, d0, d1)


def t_(draw, t):
    return lambda m, t: t.t()


def m_t(draw, t):
    return lambda m, t: t.mT


def expand(draw, t):
    shape = a_broadcast_shape(draw, tuple(t.shape))
    how = draw(st.sampled_from(["expand", "expand_as", "broadcast_to"]))
    if how == "expand":
        return lambda m, t: t.expand(shape)
    if how == "expand_as":
        return lambda m, t: t.expand_as(m.zeros([abs(n) for n in shape]))
    return lambda m, t: m.broadcast_to(t, shape)


def squeeze(draw, t):
    how = draw(st.sampled_from(["all", "dim", "dims"]))
    if how == "all":
        return lambda m, t: t.squeeze()
    if how == "dim":
        dim = a_dim(draw, t.ndim)
        return lambda m, t: t.squeeze(dim)
    dims = some_dims(draw, t.ndim)
    return lambda m, t: m.squeeze(t, dims)


def unsqueeze(draw, t):
    dim = a_dim(draw, t.ndim, extra=1)
    return lambda m, t: t.unsqueeze(dim)


def flatten(draw, t):
    start, end = a_dim(draw, t.ndim), a_dim(draw, t.ndim)
    return lambda m, t: t.flatten(start, end)


def unflatten(draw, t):
    dim = a_dim(draw, t.ndim)
    size = t.shape[dim] if -t.ndim <= dim < t.ndim else 1
    sizes = tuple(factors(draw, size))
    return lambda m, t: t.unflatten(dim, sizes)


def movedim(draw, t):
    name = draw(st.sampled_from(["movedim", "moveaxis"]))
    if draw(st.booleans()):
        source, destination = a_dim(draw, t.ndim), a_dim(draw, t.ndim)
    else:
        source = some_dims(draw, t.ndim)
        destination = tuple(draw(st.permutations(some_dims(draw, t.ndim))))[: len(source)]
    return lambda m, t: getattr(m, name)(t, source, destination)


def narrow(draw, t):
    dim = a_dim(draw, t.ndim)
    size = t.shape[dim] if -t.ndim <= dim < t.ndim else 1
    start = draw(st.integers(-size, size))
    length = draw(st.integers(0, max(size - start % max(size, 1), 0) + 1))
    return lambda m, t: t.narrow(dim, start, length)


def select(draw, t):
    dim = a_dim(draw, t.ndim)
    size = t.shape[dim] if -t.ndim <= dim < t.ndim else 1
    index = draw(st.integers(-size - 1, size))
    return lambda m, t: t.select(dim, index)


def unbind(draw, t):
    dim = a_dim(draw, t.ndim)
    return lambda m, t: t.unbind(dim)


def split(draw, t):
    dim = a_dim(draw, t.ndim)
    size = t.shape[dim] if -t.ndim <= dim < t.ndim else 1
    how = draw(st.sampled_from(["split", "split sizes", "chunk", "tensor_split"]))
    if how == "split":
        length = draw(st.integers(0, size + 1))
        return lambda m, t: t.split(length, dim)
    if how == "split sizes":
        cuts = [0, *sections(draw, size), size]
        lengths = [b - a for a, b in zip(cuts, cuts[1:])]
        return lambda m, t: t.split(lengths, dim)
    if how == "chunk":
        chunks = draw(st.integers(0, 4))
        return lambda m, t: t.chunk(chunks, dim)
    parts = draw(st.one_of(st.integers(0, 4), st.just(sections(draw, size))))
    return lambda m, t: m.tensor_split(t, parts, dim)


def flip(draw, t):
    how = draw(st.sampled_from(["flip", "fliplr", "flipud", "roll", "rot90"]))
    if how == "flip":
        dims = some_dims(draw, t.ndim)
        return lambda m, t: t.flip(dims)
    if how in ("fliplr", "flipud"):
        return lambda m, t: getattr(m, how)(t)
    if how == "roll":
        dims = some_dims(draw, t.ndim)
        shifts = tuple(draw(st.integers(-4, 4)) for _ in dims) or draw(st.integers(-4, 4))
        return lambda m, t: m.roll(t, shifts, dims or None)
    k = draw(st.integers(-5, 5))
    dims = (a_dim(draw, t.ndim), a_dim(draw, t.ndim))
    return lambda m, t: m.rot90(t, k, dims)


def repeat(draw, t):
    how = draw(st.sampled_from(["repeat", "tile", "repeat_interleave", "repeat_interleave dim"]))
    if how in ("repeat", "tile"):
        low = t.ndim if how == "repeat" else 0
        sizes = tuple(draw(st.lists(st.integers(0, 3), min_size=low, max_size=t.ndim + 1)))
        if draw(st.integers(0, 15)) == 0:
            sizes = sizes[:-1]
        if how == "repeat":
            return lambda m, t: t.repeat(sizes)
        return lambda m, t: t.tile(sizes)
    if how == "repeat_interleave":
        repeats = draw(st.integers(0, 3))
        return lambda m, t: t.repeat_interleave(repeats)
    dim = a_dim(draw, t.ndim)
    size = t.shape[dim] if -t.ndim <= dim < t.ndim else 1
    if draw(st.booleans()):
        repeats = draw(st.integers(0, 3))
        return lambda m, t: t.repeat_interleave(repeats, dim)
    counts = draw(st.lists(st.integers(0, 3), min_size=size, max_size=size))
    return lambda m, t: t.repeat_interleave(m.tensor(counts, dtype=m.int64), dim)


def diagonal(draw, t):
    offset = draw(st.integers(-3, 3))
    d1, d2 = a_dim(draw, t.ndim), a_dim(draw, t.ndim)
    return lambda m, t: t.diagonal(offset, d1, d2)


def as_strided(draw, t):
    """A window over ``t``'s entries, on a contiguous ``t`` only (as_strided reads the
    storage, which may hold more than a view's entries)."""
    if not t.is_contiguous():
        return None
    ndim = draw(st.integers(0, 3))
    size = tuple(draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim)))
    stride = tuple(draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim)))
    reach = sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else 0
    if reach > t.numel():
        return None
    offset = t.storage_offset() + (draw(st.integers(0, t.numel() - reach)) if reach else 0)
    return lambda m, t: t.as_strided(size, stride, offset)


def contiguous(draw, t):
    return lambda m, t: t.contiguous()


def clone(draw, t):
    return lambda m, t: t.clone()


def join(draw, pieces):
    how = draw(st.sampled_from(["cat", "stack", "hstack", "vstack", "dstack"]))
    ndim = pieces[0].ndim
    dim = a_dim(draw, ndim, extra=1 if how == "stack" else 0)
    if how == "cat":
        return lambda m, ts: m.cat(ts, dim)
    if how == "stack":
        return lambda m, ts: m.stack(ts, dim)
    return lambda m, ts: getattr(m, how)(ts)


ONE = {
    "view": view,
    "reshape": reshape,
    "permute": permute,
    "transpose": transpose,
    "t": t_,
    "mT": m_t,
    "expand": expand,
    "squeeze": squeeze,
    "unsqueeze": unsqueeze,
    "flatten": flatten,
    "unflatten": unflatten,
    "movedim": movedim,
    "narrow": narrow,
    "select": select,
    "unbind": unbind,
    "split": split,
    "diagonal": diagonal,
    "as_strided": as_strided,
    "contiguous": contiguous,
    "flip": flip,
    "repeat": repeat,
    "clone": clone,
}
VIEWS = {*ONE} - {"flip", "repeat", "clone"}


# ---- running both libraries ------------------------------------------------------------------


def as_pieces(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def same_outcome(ours, theirs, what: str) -> bool:
    """Whether both raised (asserting the same error class) or neither did."""
    if isinstance(theirs, Exception):
        assert isinstance(ours, type(theirs)), f"{what}: {ours!r} where PyTorch raised {theirs!r}"
        return False
    assert not isinstance(ours, Exception), f"{what}: ours raised {ours!r}, PyTorch gave a result"
    return True


def assert_values(ours, theirs, what: str) -> None:
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: {ours.shape} != {theirs.shape}"
    rtol, atol = ROUND_OFF
    np.testing.assert_allclose(
        ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol, err_msg=what
    )


def assert_layout(ours, theirs, what: str, size_one_strides: bool) -> None:
    """The same contiguity and strides (those of dims of size 1 only if
    ``size_one_strides``)."""
    assert ours.is_contiguous() == theirs.is_contiguous(), f"{what}: is_contiguous"
    if not theirs.numel():
        # README, layout paragraph of "What is checked": an empty view's strides are
        # row-major here (NumPy's are 0): sg.zeros(0, 2).mT.stride() is (1, 1), PyTorch's (1, 2)
        return
    strides = [
        (mine, its)
        for mine, its, size in zip(ours.stride(), theirs.stride(), theirs.shape)
        if size_one_strides or size != 1
    ]
    assert all(mine == its for mine, its in strides), (
        f"{what}: strides {ours.stride()} != {theirs.stride()}"
    )


class Chain:
    """A drawn chain of ops, replayable in either library: ``steps`` are (name, piece index or
    None for a join, call, whether PyTorch raised). A step that raises is compared, then
    the chain goes on from the pieces before it."""

    def __init__(self):
        self.steps = []
        self.repeated = False  # whether a view of the last run repeated entries

    def draw(self, data, x_torch, length: int) -> None:
        """Draws ``length`` steps for PyTorch's chain from ``x_torch``."""
        pieces = [x_torch]
        for _ in range(length):
            if not pieces:  # (an unbind of no entries)
                return
            if len(pieces) > 1 and data.draw(st.integers(0, 2)) == 0:
                name, at, call = "join", None, join(data.draw, pieces)
            else:
                at = data.draw(st.integers(0, len(pieces) - 1))
                name = data.draw(st.sampled_from(sorted(ONE)))
                call = ONE[name](data.draw, pieces[at])
                if call is None:
                    continue
            result = outcome(self.step, torch, pieces, at, call)
            raised = isinstance(result, Exception)
            self.steps.append((name, at, call, raised))
            pieces = pieces if raised else result

    @staticmethod
    def step(m, pieces, at, call) -> list:
        if at is None:
            return as_pieces(call(m, pieces))
        return as_pieces(call(m, pieces[at]))

    def names(self, upto: int) -> str:
        """The steps up to ``upto``, each with the arguments drawn for it (its closure), those
        that raise marked with a !."""
        return " -> ".join(
            f"{name}({', '.join(arguments(call))}){'!' if raised else ''}"
            for name, _, call, raised in self.steps[: upto + 1]
        )

    def run_both(self, ours, theirs) -> tuple | None:
        """The pieces of both chains from ``ours`` and ``theirs``, compared after each step;
        None where a view's layout cannot be compared (see VIEWS)."""
        mine, its = [ours], [theirs]
        layouts_agree, self.repeated, squeezed = True, False, False
        for i, (name, at, call, _) in enumerate(self.steps):
            what = self.names(i)
            if not layouts_agree and name in ("view", "as_strided"):
                return None  # (they read strides that are not ours to compare: see VIEWS)
            new_its = outcome(self.step, torch, its, at, call)
            new_mine = outcome(self.step, sg, mine, at, call)
            if not same_outcome(new_mine, new_its, what):
                continue
            mine, its = new_mine, new_its
            # README, layout paragraph of "What is checked": squeeze is a reshape here, a dim
            # of size 1 it leaves has view's stride (PyTorch's keeps it); it reaches no memory
            squeezed |= name == "squeeze"
            assert len(mine) == len(its), f"{what}: {len(mine)} results, PyTorch's {len(its)}"
            for k, (a, b) in enumerate(zip(mine, its)):
                assert_values(a, b, f"{what} result {k}")
                if name in VIEWS and layouts_agree:
                    assert_layout(a, b, f"{what} result {k}", size_one_strides=not squeezed)
            if name in VIEWS:  # (a view whose entries share memory: see the writes' test)
                self.repeated |= any(map(shares_memory_within, its))
            else:
                layouts_agree = layouts_agree and all(map(row_major, mine, its))
        return mine, its


def shares_memory_within(t) -> bool:
    """Whether two entries of PyTorch's ``t`` lie at one place of its storage."""
    size = t.untyped_storage().nbytes() // t.element_size()
    places = torch.arange(size).as_strided(t.shape, t.stride(), t.storage_offset())
    return places.unique().numel() < places.numel()


def row_major(ours, theirs) -> bool:
    """Whether both results are laid out row-major. (Not so in both after a flip of a
    transpose, say: README's layout paragraph of "What is checked", elementwise results of
    transposed views; rot90(x.t()) is then contiguous in PyTorch only, and its view(-1)
    raises here only.)"""
    return ours.stride() == theirs.stride() == torch.empty(theirs.shape).stride()


def arguments(call) -> list:
    cells = zip(call.__code__.co_freevars, call.__closure__ or ())
    return [f"{name}={cell.cell_contents!r}" for name, cell in cells]


def weighted_sum(m, pieces, weights):
    return sum(((p * m.tensor(w)).sum() for p, w in zip(pieces, weights)), m.tensor(0.0))


def leaves(array):
    """``array`` in both libraries, laid out row-major (PyTorch keeps NumPy's strides of an
    empty array, zeros, where scratchgrad's tensor is row-major)."""
    return tuple(
        m.zeros(array.shape, dtype=m.float64).copy_(m.tensor(array)).requires_grad_()
        for m in (sg, torch)
    )


@st.composite
def shapes(draw):
    return tuple(draw(st.lists(st.sampled_from([0, 1, 1, 2, 2, 3]), max_size=4)))


@FUZZ
@given(st.data())
def test_chains_of_shape_ops_agree_with_pytorch(data):
    shape = data.draw(shapes(), "shape")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), "seed"))
    array = rng.uniform(-2, 2, shape)
    ours, theirs = leaves(array)
    chain = Chain()
    chain.draw(data, theirs, data.draw(st.integers(1, 4), "length"))
    both = chain.run_both(ours, theirs)
    if both is None or not both[1]:  # (see run_both, or an unbind of no entries)
        return
    weights = [rng.uniform(-2, 2, tuple(p.shape)) for p in both[1]]
    for m, pieces in zip((sg, torch), both):
        weighted_sum(m, pieces, weights).backward()
    assert_values(ours.grad, theirs.grad, f"{chain.names(len(chain.steps))}: x.grad")

    write = data.draw(st.sampled_from(["mul_", "add_", "zero_"]), "write")
    target = data.draw(st.integers(0, len(both[1]) - 1), "into")
    ours, theirs = leaves(array)
    bases = ours.clone(), theirs.clone()
    both = chain.run_both(*bases)
    args = () if write == "zero_" else (-3.0,)
    what = f"{chain.names(len(chain.steps))} -> {write}"
    if write == "zero_" and shares_memory_within(both[1][target]):
        return  # README, "In-place changes": zero_ of entries sharing memory raises here
    wrote = [outcome(getattr(ps[target], write), *args) for ps in both]
    if chain.repeated and isinstance(wrote[0], RuntimeError):
        # README, "In-place changes": a view of an expand that repeats entries raises (and
        # "as_strided": a window whose entries overlap is read-only)
        return
    if not same_outcome(*wrote, what):
        return
    for a, b in zip([bases[0], *both[0]], [bases[1], *both[1]]):
        assert_values(a, b, f"{what}: base and results after the write")
    base_weights = rng.uniform(-2, 2, shape)
    losses = [
        outcome(
            lambda m, pieces: weighted_sum(m, pieces, [base_weights, *weights]).backward(),
            m,
            [base, *ps],
        )
        for m, base, ps in zip((sg, torch), bases, both)
    ]
    if same_outcome(*losses, f"{what}: backward"):
        assert_values(ours.grad, theirs.grad, f"{what}: x.grad")
