"""The random generators' state: ``seed``, ``initial_seed``, ``get_rng_state``,
``set_rng_state`` and ``Generator.get_state``, ``set_state``, ``seed``, ``initial_seed``, and
the seeds ``manual_seed`` takes, against PyTorch. A saved state brings back every random op's
draws exactly; a tensor that ``get_state`` did not make is refused. Under ``scratchgrad.jit``
the state calls inside a step are made again at every replay."""

import numpy as np
import pytest
import strict  # noqa: F401  (registers the "strict" device)
import torch
from oracle import assert_doc_examples_run, assert_raises_as_torch, same_dtype

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.utils.data import DataLoader

RANDOM_OPS = {  # each draws from the library's CPU generator
    "rand": lambda: sg.rand(3),
    "rand float16": lambda: sg.rand(5, dtype=sg.float16),
    "randn": lambda: sg.randn(2, 2),
    "randn float64": lambda: sg.randn(3, dtype=sg.float64),
    "randint": lambda: sg.randint(0, 100, (5,)),
    "randint float32": lambda: sg.randint(0, 100, (5,), dtype=sg.float32),
    "randint_like": lambda: sg.randint_like(sg.zeros(4), 3, 9),
    "rand_like": lambda: sg.rand_like(sg.zeros(3)),
    "randn_like": lambda: sg.randn_like(sg.zeros(3)),
    "randperm": lambda: sg.randperm(8),
    "normal of tensors": lambda: sg.normal(sg.zeros(3), sg.ones(3)),
    "normal of numbers": lambda: sg.normal(1.0, 2.0, (3,)),
    "dropout": lambda: sg.dropout(sg.ones(8), 0.5, True),
    "nn.Dropout": lambda: nn.Dropout(0.3)(sg.ones(8)),
    "normal_": lambda: sg.empty(4).normal_(),
    "uniform_": lambda: sg.empty(4).uniform_(-1, 1),
    "exponential_": lambda: sg.empty(4).exponential_(),
    "bernoulli": lambda: sg.bernoulli(sg.full((8,), 0.5)),
    "bernoulli_": lambda: sg.empty(8).bernoulli_(0.5),
    "multinomial": lambda: sg.tensor([0.2, 0.3, 0.5]).multinomial(6, replacement=True),
    "multinomial without replacement": lambda: sg.tensor([0.2, 0.3, 0.5]).multinomial(3),
    "nn.init.kaiming_uniform_": lambda: nn.init.kaiming_uniform_(sg.empty(3, 4)),
    "a DataLoader's shuffle": lambda: sg.cat(
        [x for (x,) in DataLoader(sg.utils.data.TensorDataset(sg.arange(10)), 4, shuffle=True)]
    ),
}


@pytest.mark.parametrize("op", RANDOM_OPS)
def test_a_saved_state_draws_the_same_numbers_again(op):
    sg.manual_seed(0)
    RANDOM_OPS[op]()  # the stream has moved on from the seed
    sg.rand(3, dtype=sg.float32)  # an odd number of 32-bit draws: a spare 32-bit half is kept
    state = sg.get_rng_state()
    first = RANDOM_OPS[op]()
    after_first = sg.rand(4)
    sg.set_rng_state(state)
    assert RANDOM_OPS[op]().tolist() == first.tolist()
    assert sg.rand(4).tolist() == after_first.tolist()  # and the stream goes on the same way


def test_a_generators_state_goes_back_and_across_generators():
    a, b = sg.Generator().manual_seed(1), sg.Generator().manual_seed(2)
    state = a.get_state()
    first = sg.randn(5, generator=a).tolist()
    assert b.set_state(state) is b and b.initial_seed() == 1
    assert sg.randn(5, generator=b).tolist() == first
    assert a.set_state(state) is a and sg.randn(5, generator=a).tolist() == first
    sg.manual_seed(0)
    library = sg.get_rng_state()
    sg.set_rng_state(state)  # the library's generator from a Generator's state
    assert sg.randn(5).tolist() == first
    sg.set_rng_state(library)
    sg.manual_seed(0)
    assert sg.randn(5).tolist() == sg.randn(5, generator=sg.Generator().manual_seed(0)).tolist()


def test_a_state_is_a_uint8_tensor_copied_out_as_torchs():
    for m in (sg, torch):
        m.manual_seed(5)
        state = m.get_rng_state()
        assert state.ndim == 1 and not state.requires_grad
        assert m.set_rng_state(state) is None
        m.rand(3)
        assert not m.equal(m.get_rng_state(), state)  # a copy: a draw changes the next one
        state[0] = 7  # and changing the copy changes nothing
        assert m.get_rng_state()[0].item() != 7
    assert same_dtype(sg.get_rng_state(), torch.get_rng_state())  # uint8


def test_set_rng_state_brings_back_the_seed_it_saved_as_torch():
    for m in (sg, torch):
        g = m.Generator().manual_seed(5)
        state = g.get_state()
        g.manual_seed(7)
        assert g.set_state(state).initial_seed() == 5


def test_seeds_as_torch_takes_them():
    """A new generator's seed is PyTorch's default; a negative seed counts modulo 2**64;
    ``manual_seed`` takes ``int(seed)`` (a float too), a Generator's an int only."""
    assert sg.Generator().initial_seed() == torch.Generator().initial_seed() == 67280421310721
    for seed in (-1, -(2**63), 2**64 - 1, 0, 12345, 2.7, "3"):
        torch.manual_seed(seed)
        sg.manual_seed(seed)
        assert sg.initial_seed() == torch.initial_seed()
        if not isinstance(seed, (float, str)):
            assert sg.Generator().manual_seed(seed).initial_seed() == (
                torch.Generator().manual_seed(seed).initial_seed()
            )
    sg.manual_seed(-1)
    first = sg.rand(3).tolist()
    sg.manual_seed(2**64 - 1)
    assert sg.rand(3).tolist() == first


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda m: m.manual_seed(2**64), ValueError, "outside"),
        (lambda m: m.manual_seed(-(2**63) - 1), ValueError, "outside"),
        (lambda m: m.manual_seed(None), TypeError, "NoneType"),
        (lambda m: m.Generator().manual_seed(1.5), RuntimeError, "expected a long, but got float"),
        (lambda m: m.Generator().manual_seed(True), RuntimeError, "expected a long, but got bool"),
        (lambda m: m.Generator().manual_seed("3"), RuntimeError, "expected a long, but got str"),
    ],
)
def test_seeds_torch_refuses_are_refused(call, error, message):
    assert_raises_as_torch(call, error, message)


def test_seed_picks_a_fresh_seed_for_every_device_and_returns_it():
    for m in (sg, torch):
        new = m.seed()
        assert type(new) is int and 0 <= new < 2**64 and m.initial_seed() == new
    seeds = {sg.seed() for _ in range(5)}
    assert len(seeds) == 5  # from the operating system: 5 draws of 64 bits do not collide
    new = sg.seed()
    cpu_draw = sg.rand(3).tolist()
    assert cpu_draw == sg.rand(3, generator=sg.Generator().manual_seed(new)).tolist()
    strict_draw = sg.rand(3, device="strict").tolist()
    assert (
        strict_draw == sg.rand(3, device="strict", generator=sg.Generator(new, "strict")).tolist()
    )
    g = sg.Generator()
    assert g.seed() == g.initial_seed() != 67280421310721


STATE_ERRORS = {
    "too short": (lambda m: m.set_rng_state(m.zeros(10, dtype=m.uint8)), RuntimeError, "10 bytes"),
    "two states": (
        lambda m: m.set_rng_state(m.get_rng_state().repeat(2)),
        RuntimeError,
        "not a state made by get_state",
    ),
    "zeros of a state's size": (
        lambda m: m.set_rng_state(m.zeros_like(m.get_rng_state())),
        RuntimeError,
        "not a state made by get_state",
    ),
    "float": (
        lambda m: m.set_rng_state(m.get_rng_state().float()),
        TypeError,
        "must be a uint8 tensor made by get_state, got a float32 tensor",
    ),
    "a list": (lambda m: m.set_rng_state([1, 2]), TypeError, "got list"),
    "a Generator's set_state, a list": (
        lambda m: m.Generator().set_state([1]),
        TypeError,
        "set_state: the state must be a uint8 tensor",
    ),
}


@pytest.mark.parametrize("case", STATE_ERRORS)
def test_a_state_get_rng_state_did_not_make_is_refused_and_changes_nothing(case):
    call, error, message = STATE_ERRORS[case]
    assert_raises_as_torch(call, error, message)
    sg.manual_seed(2)
    before = sg.get_rng_state()
    with pytest.raises(error):
        call(sg)
    assert sg.get_rng_state().tolist() == before.tolist() and sg.initial_seed() == 2


def test_torchs_state_is_refused():
    with pytest.raises(RuntimeError, match="PyTorch's states are not read"):
        sg.set_rng_state(sg.tensor(torch.get_rng_state().numpy()))


def test_a_device_generator_without_a_readable_state_refuses_get_and_set():
    g = sg.Generator(device="strict")
    with pytest.raises(RuntimeError, match="get_state: the state of a strict generator"):
        g.get_state()
    with pytest.raises(RuntimeError, match="set_state: the state of a strict generator"):
        g.set_state(sg.get_rng_state())


# ---- under scratchgrad.jit ----------------------------------------------------------------------

OWN = sg.Generator()


def _save_draw_restore_draw(x):
    """Draw, go back, draw again (the same numbers), with the library's generator and one of
    the step's own; the state read in the step is returned too."""
    state, own = sg.get_rng_state(), OWN.get_state()
    a = x + sg.rand(3) + sg.randn(3, generator=OWN)
    sg.set_rng_state(state)
    OWN.set_state(own)
    b = x + sg.rand(3) + sg.randn(3, generator=OWN)
    return a, b, state


SAVED_OUTSIDE = sg.Generator().manual_seed(8).get_state()


def _restore_a_state_saved_outside(x):
    sg.set_rng_state(SAVED_OUTSIDE)
    return x + sg.normal(0.0, 1.0, (3,))


def _reseed(x):
    sg.seed()
    return x + sg.rand(3)


@pytest.mark.parametrize("step", [_save_draw_restore_draw, _restore_a_state_saved_outside, _reseed])
def test_state_calls_in_a_jitted_step_are_made_again_at_every_replay(step):
    """A jitted step that saves and sets states (and reseeds) replays those calls at each
    call: seeded alike, it returns what the eager step returns, call after call; ``seed()``
    makes a new seed at every replay, as in the eager step."""

    def run(fn):
        sg.manual_seed(3)
        OWN.manual_seed(4)
        outs = [fn(sg.full((3,), float(i))) for i in range(4)]
        return [[t.numpy() for t in (out if isinstance(out, tuple) else (out,))] for out in outs]

    jitted = sg.jit(step)
    eager, replayed = run(step), run(jitted)
    assert all(r.checked for rs in jitted.recordings.values() for r in rs)  # replayed
    if step is _reseed:
        draws = [out[0] - i for i, out in enumerate(eager + replayed)]
        assert len({tuple(d) for d in draws}) == len(draws)  # a new seed each call
        return
    for e, j in zip(eager, replayed):
        for a, b in zip(e, j):
            np.testing.assert_array_equal(b, a)
    if step is _save_draw_restore_draw:
        assert all(np.array_equal(a, b) for a, b, _ in replayed)
    else:
        assert all(np.array_equal(out[0], replayed[0][0] + i) for i, out in enumerate(replayed))


@pytest.mark.parametrize(
    "function",
    [
        sg.Generator,
        sg.Generator.get_state,
        sg.Generator.set_state,
        sg.Generator.seed,
        sg.seed,
        sg.get_rng_state,
    ],
)
def test_doc_examples_run(function):
    assert_doc_examples_run(function, vars(sg.backend))
