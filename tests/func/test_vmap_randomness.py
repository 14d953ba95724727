"""Random draws under ``func.vmap`` follow ``randomness`` as ``torch.func.vmap``'s: "error"
refuses every draw, "same" makes one draw for all members, "different" one per member. That
holds for the factories (rand, randperm), the draws from tensors (bernoulli, poisson, binomial,
multinomial) and the in-place fills (normal_, uniform_, bernoulli_, ...); a fill of an
unbatched tensor under "different", and a draw from batched probabilities, rates or counts
under "same", raise as PyTorch's; under "different" each member draws from its own. Before, the
draws from tensors and the in-place fills ignored ``randomness`` (every member silently took the
same draws), and poisson, binomial and multinomial of batched parameters raised."""

import pytest
import torch
from oracle import outcome, raised_alike

import scratchgrad as sg

MEMBERS, SIZE = 3, 64  # a member's 64 draws: two members' are equal with negligible chance

FILLS = {
    "normal_": lambda t: t.normal_(),
    "uniform_": lambda t: t.uniform_(-1, 1),
    "bernoulli_": lambda t: t.bernoulli_(0.5),
    "bernoulli_tensor": lambda t: t.bernoulli_(t.new_full((SIZE,), 0.5)),
    "random_": lambda t: t.random_(0, 100),
    "exponential_": lambda t: t.exponential_(),
    "geometric_": lambda t: t.geometric_(0.3),
    "log_normal_": lambda t: t.log_normal_(),
    "cauchy_": lambda t: t.cauchy_(),
}

DRAWS = {  # draws that add an unbatched tensor of draws to the member
    "rand": lambda m, x: x + m.rand(SIZE, dtype=x.dtype),
    "randperm": lambda m, x: x + m.randperm(SIZE),
    "bernoulli": lambda m, x: x + m.bernoulli(m.full((SIZE,), 0.5, dtype=x.dtype)),
    "bernoulli_p": lambda m, x: x + m.bernoulli(m.zeros(SIZE, dtype=x.dtype), 0.5),
    "poisson": lambda m, x: x + m.poisson(m.full((SIZE,), 3.0, dtype=x.dtype)),
    "binomial": lambda m, x: (
        x + m.binomial(m.full((SIZE,), 9.0, dtype=x.dtype), m.full((SIZE,), 0.5, dtype=x.dtype))
    ),
    "multinomial": lambda m, x: x + m.ones(SIZE, dtype=x.dtype).multinomial(SIZE, True),
    "fill_unbatched": lambda m, x: x + m.zeros(SIZE, dtype=x.dtype).normal_(),
}
DRAWS |= {name: lambda m, x, fill=fill: fill(x.clone()) for name, fill in FILLS.items()}


def _init_fill(name, *args):
    """nn.init's ``name`` filling a member's (8, 8) weight."""
    return lambda m, x: getattr(m.nn.init, name)(x.clone().view(8, 8), *args).view(SIZE)


# orthogonal_ and sparse_ raised under vmap (they wrote through the arrays), as PyTorch's do not
INITS = {
    "kaiming_uniform_": (),
    "xavier_normal_": (),
    "normal_": (),
    "trunc_normal_": (),
    "orthogonal_": (2.0,),
    "sparse_": (0.5,),
}
DRAWS |= {f"init.{name}": _init_fill(name, *args) for name, args in INITS.items()}


def _run(m, make, randomness):
    x = m.zeros(MEMBERS, SIZE, dtype=m.float64)
    return outcome(lambda: m.func.vmap(lambda row: make(m, row), randomness=randomness)(x))


def _members_alike(out) -> bool:
    return all(bool((out[0] == out[i]).all()) for i in range(1, MEMBERS))


@pytest.mark.parametrize("randomness", ["error", "same", "different"])
@pytest.mark.parametrize("name", DRAWS)
def test_a_draw_follows_randomness_as_torch(name, randomness):
    ours, theirs = _run(sg, DRAWS[name], randomness), _run(torch, DRAWS[name], randomness)
    if raised_alike(ours, theirs, f"{name} under randomness={randomness!r}"):
        return
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype == sg.float64
    assert _members_alike(ours) == _members_alike(theirs) == (randomness == "same")


@pytest.mark.parametrize("randomness", ["error", "same", "different"])
def test_a_fill_of_an_unbatched_tensor_raises_under_different_as_torch(randomness):
    def fill(m):
        return lambda row: row + m.zeros(SIZE).uniform_()

    ours = outcome(lambda: sg.func.vmap(fill(sg), randomness=randomness)(sg.zeros(2, SIZE)))
    theirs = outcome(
        lambda: torch.func.vmap(fill(torch), randomness=randomness)(torch.zeros(2, SIZE))
    )
    if raised_alike(ours, theirs, randomness):
        assert "unbatched" in str(ours) or "randomness='error'" in str(ours)


@pytest.mark.parametrize("randomness", ["same", "different"])
def test_bernoulli_of_batched_probabilities_follows_them(randomness):
    """Each member's draws follow its own probabilities (0 and 1 give known draws); PyTorch
    refuses randomness 'same' with a batched input, and so do we."""
    probs = [[0.0, 1.0, 1.0], [1.0, 0.0, 0.5]]

    def draw(m):
        return m.func.vmap(lambda p: m.bernoulli(p), randomness=randomness)(m.tensor(probs))

    ours, theirs = outcome(lambda: draw(sg)), outcome(lambda: draw(torch))
    if raised_alike(ours, theirs, randomness):
        return
    assert ours[0].tolist() == [0.0, 1.0, 1.0] and ours[1, :2].tolist() == [1.0, 0.0]


def test_bernoulli_of_batched_probabilities_outside_zero_one_raises():
    with pytest.raises(RuntimeError, match=r"bernoulli: the probabilities must be in \[0, 1\]"):
        sg.func.vmap(sg.bernoulli, randomness="different")(sg.full((2, 3), 1.5))


# Draws from batched parameters: each member draws from its own rates, counts or
# probabilities under "different"; "same" (at a vmap that batches them) raises, as PyTorch's.
# They raised under every randomness before. Members 0 and 2 make known draws (rates,
# counts and probabilities q of 0; weights of one category), member 1 random ones.
PARAMETERS = [[1.0, 0.0, 0.0, 0.0], [3.0, 5.0, 2.0, 4.0], [0.0, 0.0, 1.0, 0.0]]
BATCHED_DRAWS = {
    "poisson": lambda m, q, p: m.poisson(q * 20),
    "binomial_count": lambda m, q, p: m.binomial(q * 3, m.full((4,), 0.5, dtype=q.dtype)),
    "binomial_prob": lambda m, q, p: m.binomial(m.full((4,), 9.0, dtype=q.dtype), q / 5),
    "bernoulli": lambda m, q, p: m.bernoulli(q / 5),
    "multinomial": lambda m, q, p: m.multinomial(p, 1),
    "multinomial_replacement": lambda m, q, p: m.multinomial(p, 5, replacement=True),
    "multinomial_rows": lambda m, q, p: m.multinomial(p.reshape(2, 2) + 1e-30, 2),
    "multinomial_grown": lambda m, q, p: m.multinomial(p.expand(3, 4), 3, replacement=True),
}


def _draw_batched(m, name, randomness, in_dims):
    params = m.tensor(PARAMETERS, dtype=m.float64)
    params = params if in_dims == 0 else params.mT.contiguous()
    return m.func.vmap(lambda p: BATCHED_DRAWS[name](m, p), in_dims, randomness=randomness)(params)


def _known_members(out) -> list:
    """Members 0 and 2's draws, made known by their parameters."""
    return [out[0].tolist(), out[2].tolist()]


@pytest.mark.parametrize("in_dims", [0, 1])
@pytest.mark.parametrize("randomness", ["error", "same", "different"])
@pytest.mark.parametrize("name", BATCHED_DRAWS)
def test_draws_from_batched_parameters_follow_each_members_as_torch(name, randomness, in_dims):
    ours = outcome(_draw_batched, sg, name, randomness, in_dims)
    theirs = outcome(_draw_batched, torch, name, randomness, in_dims)
    if raised_alike(ours, theirs, f"{name} under randomness={randomness!r}"):
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    if name != "multinomial_rows":  # (its zero weights' order is PyTorch's, not checked here)
        assert _known_members(ours) == _known_members(theirs)
    assert not bool((ours[1] == ours[1].flatten()[0]).all())  # member 1's draws vary


NESTINGS = {  # (outer randomness, inner randomness, which vmaps batch the rates)
    f"{outer}-{inner}-{batching}": (outer, inner, batching)
    for outer in ("error", "same", "different")
    for inner in ("error", "same", "different")
    for batching in ("outer", "inner", "both")
}


def _nested_poisson(m, outer, inner, batching):
    """Draws of rate 4 in a vmap of 3 members inside one of 2: the rates batched by both, or
    by one (the other batches a factor of 1 the draws are multiplied by)."""
    vmap = m.func.vmap
    if batching == "both":
        rates = m.full((2, 3, SIZE), 4.0, dtype=m.float64)
        return vmap(vmap(m.poisson, randomness=inner), randomness=outer)(rates)
    if batching == "outer":
        rates = m.full((2, SIZE), 4.0, dtype=m.float64)

        def member(r):
            return vmap(lambda one: m.poisson(r) * one, randomness=inner)(m.ones(3))

        return vmap(member, randomness=outer)(rates)
    rates = m.full((3, SIZE), 4.0, dtype=m.float64)

    def member(one):
        return vmap(lambda r: m.poisson(r) * one, randomness=inner)(rates)

    return vmap(member, randomness=outer)(m.ones(2, dtype=m.float64))


@pytest.mark.parametrize("nesting", NESTINGS)
def test_nested_draws_from_batched_rates_follow_each_vmaps_randomness_as_torch(nesting):
    """Each vmap asks its own randomness, the newest first (the error PyTorch raises first
    is ours too): "same" refuses only where that vmap batches the rates."""
    outer, inner, batching = NESTINGS[nesting]
    ours = outcome(_nested_poisson, sg, outer, inner, batching)
    theirs = outcome(_nested_poisson, torch, outer, inner, batching)
    if raised_alike(ours, theirs, nesting):
        assert str(ours).startswith("vmap: ")
        same = "same randomness" in str(theirs)
        assert ("randomness='same' is not supported" in str(ours)) == same, (ours, theirs)
        return
    assert tuple(ours.shape) == tuple(theirs.shape) == (2, 3, SIZE)
    members_alike = [bool((ours[0, 0] == ours[i, j]).all()) for i in range(2) for j in range(3)]
    assert all(members_alike) == (outer == inner == "same")


@pytest.mark.parametrize(
    "draw, params",
    [
        (lambda m, p: m.poisson(p), [[1.0, 2.0], [1.0, -1.0]]),
        (lambda m, p: m.multinomial(p, 1), [[1.0, 2.0], [0.0, 0.0]]),
        (lambda m, p: m.bernoulli(p), [[1.0, 0.5], [0.5, 1.5]]),
    ],
    ids=["poisson", "multinomial", "bernoulli"],
)
def test_a_draw_from_batched_parameters_checks_every_members_values_as_torch(draw, params):
    """A negative rate, weights that sum to 0, a probability past 1, in any member, raise."""

    def call(m):
        return m.func.vmap(lambda p: draw(m, p), randomness="different")(m.tensor(params))

    assert raised_alike(outcome(call, sg), outcome(call, torch), str(params))


def test_gradients_through_draws_from_batched_rates_as_torch():
    """poisson's rates get a zero gradient, member by member, as PyTorch's."""

    def f(m):
        return m.func.vmap(
            m.func.grad(lambda r: (m.poisson(r) * 0 + r * r).sum()), randomness="different"
        )(m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64))

    assert f(sg).tolist() == f(torch).tolist()


@pytest.mark.parametrize("name", ["normal_", "uniform_", "exponential_", "random_"])
def test_a_fill_under_same_draws_what_the_same_fill_outside_vmap_draws(name):
    """One draw for every member, from the library's seeded stream: the draws a fill of one
    member's shape makes outside vmap."""
    sg.manual_seed(7)
    inside = sg.func.vmap(lambda row: FILLS[name](row.clone()), randomness="same")(
        sg.zeros(MEMBERS, SIZE)
    )
    sg.manual_seed(7)
    outside = FILLS[name](sg.zeros(SIZE))
    assert inside.tolist() == [outside.tolist()] * MEMBERS


def test_writing_a_batch_into_an_unbatched_tensor_names_the_op():
    target = sg.zeros(3)
    with pytest.raises(RuntimeError, match="vmap: copy_ is not possible because the values"):
        sg.func.vmap(lambda row: target.copy_(row))(sg.ones(2, 3))
    assert target.tolist() == [0.0, 0.0, 0.0]


def test_each_member_of_a_batched_init_is_what_the_init_makes():
    """orthogonal_ under vmap fills each member with an orthogonal matrix (times its gain), in
    either layout (in_dims=1: rows of members), and sparse_ zeros as many entries of each
    member's columns, as PyTorch's."""
    w = sg.func.vmap(lambda w: sg.nn.init.orthogonal_(w, 2.0), randomness="different")(
        sg.zeros(MEMBERS, 4, 6, dtype=sg.float64)
    )
    assert sg.allclose(w @ w.mT, 4 * sg.eye(4, dtype=sg.float64).expand(MEMBERS, 4, 4))
    w = sg.func.vmap(sg.nn.init.orthogonal_, in_dims=1, randomness="different")(
        sg.zeros(6, MEMBERS, 2, dtype=sg.float64)
    )
    assert sg.allclose(w.mT @ w, sg.eye(2, dtype=sg.float64).expand(MEMBERS, 2, 2))
    w = sg.func.vmap(lambda w: sg.nn.init.sparse_(w, 0.5), randomness="different")(
        sg.ones(MEMBERS, 6, 4)
    )
    assert (w == 0).sum(1).tolist() == [[3] * 4] * MEMBERS
