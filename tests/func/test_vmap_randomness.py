"""Random draws under ``func.vmap`` follow ``randomness`` as ``torch.func.vmap``'s: "error"
refuses every draw, "same" makes one draw for all members, "different" one per member. That
holds for the factories (rand, randperm), the draws from tensors (bernoulli, poisson, binomial,
multinomial) and the in-place fills (normal_, uniform_, bernoulli_, ...); a fill of an
unbatched tensor under "different", and a draw from batched probabilities under "same", raise
as PyTorch's. Before, the draws from tensors and the in-place fills ignored ``randomness``:
every member silently took the same draws."""

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


@pytest.mark.parametrize(
    "draw",
    [
        lambda m, x: m.poisson(x),
        lambda m, x: m.binomial(x, m.full_like(x, 0.5)),
        lambda m, x: m.multinomial(x, 2),
    ],
    ids=["poisson", "binomial", "multinomial"],
)
def test_draws_with_no_batched_form_from_batched_inputs_raise(draw):
    """docs/func.md: these are drawn once per member from unbatched inputs only; PyTorch's vmap
    draws from each member's rates, counts or probabilities."""
    theirs = torch.func.vmap(lambda x: draw(torch, x), randomness="different")(torch.ones(3, 4))
    assert theirs.shape == (3, *draw(torch, torch.ones(4)).shape)
    with pytest.raises(RuntimeError, match="^vmap: "):
        sg.func.vmap(lambda x: draw(sg, x), randomness="different")(sg.ones(3, 4))


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
