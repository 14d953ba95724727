"""Populations of tiny networks fuzzed against a loop over the members and against PyTorch.

Ensembles: random small architectures (Linear, Conv1d, LayerNorm, BatchNorm in eval and train,
activations, Dropout in eval), one to nine members, inputs batched per member or shared, run
through ``stack_module_state`` + ``functional_call`` + ``vmap`` (and ``grad``/``vjp`` of the
ensemble's loss), compared in float64 with a Python loop over the member models and with
``torch.func``'s same program, buffers (BatchNorm's running statistics) included; dropout in
training under each ``randomness``. Evolution: the stacked MLP policy against each member's
own network (ours and PyTorch's), one generation of each strategy against a reference written
here from its documented formula on the same noise, the batched environments against a loop of
single ones and against Gymnasium. Misuse raises an error naming the op and the sizes. Set
``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples.
"""

import re

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import assert_close, fuzz_settings, module_pair, outcome, raised_alike

import scratchgrad as sg
from scratchgrad import evo

FUZZ = fuzz_settings(25)
TIGHT = (1e-10, 1e-12)  # float64, the same arithmetic in another grouping


def tight_for(*expected):
    """TIGHT, its atol scaled to the largest entry of ``expected`` (torch tensors): an entry
    that cancels to about zero (a gradient through a BatchNorm over two values) keeps the
    round-off of the terms it was made of."""
    scale = max((float(t.detach().abs().max()) for t in expected if t.numel()), default=0.0)
    return TIGHT[0], max(TIGHT[1], TIGHT[0] * scale)


ACTIVATIONS = ["ReLU", "Tanh", "GELU", "Sigmoid", "ELU"]

# ---- ensembles: stack_module_state + functional_call + vmap --------------------------------


@st.composite
def architectures(draw):
    """(layers, member input shape): layers as (name, args, kwargs) for ``getattr(nn, name)``."""
    batch = draw(st.integers(2, 4))  # BatchNorm in training needs two values per channel
    layers = []
    if draw(st.booleans()):  # a Conv1d front: (batch, channels, length)
        channels, length = draw(st.integers(1, 3)), draw(st.integers(3, 6))
        out_channels, kernel = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        padding, stride = draw(st.integers(0, 1)), draw(st.integers(1, 2))
        bias = draw(st.booleans())
        layers.append(
            (
                "Conv1d",
                (channels, out_channels, kernel),
                dict(stride=stride, padding=padding, bias=bias),
            )
        )
        if draw(st.booleans()):
            layers.append(("BatchNorm1d", (out_channels,), _batch_norm_options(draw)))
        layers.append((draw(st.sampled_from(ACTIVATIONS)), (), {}))
        layers.append(("Flatten", (), {}))
        features = out_channels * ((length + 2 * padding - kernel) // stride + 1)
        shape = (batch, channels, length)
    else:
        features = draw(st.integers(1, 4))
        shape = (batch, features)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["Linear", "LayerNorm", "BatchNorm1d", "act", "Dropout"]))
        if kind == "Linear":
            out = draw(st.integers(1, 4))
            layers.append(("Linear", (features, out), dict(bias=draw(st.booleans()))))
            features = out
        elif kind == "LayerNorm":
            affine = draw(st.booleans())
            options = dict(elementwise_affine=affine, bias=affine and draw(st.booleans()))
            layers.append(("LayerNorm", (features,), options))
        elif kind == "BatchNorm1d":
            layers.append(("BatchNorm1d", (features,), _batch_norm_options(draw)))
        elif kind == "act":
            layers.append((draw(st.sampled_from(ACTIVATIONS)), (), {}))
        else:
            layers.append(("Dropout", (draw(st.sampled_from([0.0, 0.3])),), {}))
    layers.append(("Linear", (features, draw(st.integers(1, 3))), {}))
    return layers, shape


def _batch_norm_options(draw):
    return dict(
        momentum=draw(st.sampled_from([0.1, 0.5, None])),
        affine=draw(st.booleans()),
        track_running_stats=draw(st.booleans()),
    )


def build(nn, layers):
    return nn.Sequential(*(getattr(nn, name)(*args, **kw) for name, args, kw in layers))


def _perturbed(t):
    """Away from the initial values (BatchNorm's weight 1 and bias 0, its mean 0 and variance 1),
    so that every term of the formulas counts; running variances stay positive."""
    t.add_(0.3 * torch.randn_like(t))
    if t.ndim == 1 and not t.requires_grad:
        t.abs_()


def population(layers, size, training):
    """``size`` members of the architecture, each as (ours, PyTorch's) with the same state."""
    members = []
    for seed in range(size):
        ours, theirs = module_pair(lambda nn: build(nn, layers), init=_perturbed, seed=seed)
        with torch.no_grad():
            for name, buffer in theirs.named_buffers():
                if buffer.dtype.is_floating_point:
                    _perturbed(buffer)
                    ours.get_buffer(name).copy_(sg.tensor(buffer.numpy()))
        members.append((ours.train(training), theirs.train(training)))
    return members


def ensemble(lib, members, x, in_dim, randomness="error", chunk_size=None):
    """The population's outputs through vmap(functional_call) over the stacked state (in chunks
    of ``chunk_size`` members), and the stacked buffers after the call (BatchNorm in training
    updates them)."""
    params, buffers = lib.func.stack_module_state(members)
    base = members[0]

    def member(p, b, xi):
        return lib.func.functional_call(base, (p, b), (xi,))

    vmapped = lib.func.vmap(
        member, in_dims=(0, 0, in_dim), randomness=randomness, chunk_size=chunk_size
    )
    out = vmapped(params, buffers, x)
    return out, buffers


def ensemble_gradients(lib, members, x, in_dim, cotangent):
    """d sum(out * cotangent) / d params, by grad of the whole ensemble and by vjp."""
    params, buffers = lib.func.stack_module_state(members)
    base = members[0]

    def outputs(p):
        return lib.func.vmap(
            lambda pi, bi, xi: lib.func.functional_call(base, (pi, bi), (xi,)),
            in_dims=(0, 0, in_dim),
        )(p, {name: b.clone() for name, b in buffers.items()}, x)

    by_grad = lib.func.grad(lambda p: (outputs(p) * cotangent).sum())(params)
    _, vjp_fn = lib.func.vjp(outputs, params)
    (by_vjp,) = vjp_fn(cotangent)
    return by_grad, by_vjp


@FUZZ
@given(architectures(), st.integers(1, 9), st.booleans(), st.sampled_from([0, None]), st.data())
def test_an_ensemble_equals_a_loop_over_its_members_and_torch_func(
    architecture, size, training, in_dim, data
):
    layers, shape = architecture
    if training:  # dropout in training is random: test_dropout_in_training_under_each_randomness
        layers = [layer for layer in layers if layer[0] != "Dropout"]
    members = population(layers, size, training)
    ours_models, their_models = zip(*members)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), "seed"))
    x = rng.standard_normal(shape if in_dim is None else (size, *shape))
    chunk = data.draw(st.sampled_from([None, 1, 2, 3]), "chunk_size")
    outs = outcome(lambda: ensemble(sg, list(ours_models), sg.tensor(x), in_dim, chunk_size=chunk))
    expected = outcome(
        lambda: ensemble(torch, list(their_models), torch.tensor(x), in_dim, chunk_size=chunk)
    )
    cumulative = [kw for _, _, kw in layers if kw.get("momentum", 0) is None]
    if training and isinstance(expected, RuntimeError) and cumulative:
        # NOTE: PyTorch's BatchNorm with momentum=None computes its cumulative average's factor
        # 1 / num_batches_tracked with .item(), which its vmap refuses; ours computes it per
        # member (README's What is different): compared with the loop only
        expected = None
    elif raised_alike(outs, expected, f"{layers} x{size}"):
        return
    assert not isinstance(outs, Exception), f"{layers} x{size}: {outs!r}"
    out, buffers = outs
    tight = tight_for(torch.tensor(out.detach().numpy()))
    if expected is not None:
        assert_close(out, expected[0], what="ensemble vs torch.func", tolerance=tight)
        assert buffers.keys() == expected[1].keys()
        for name, buffer in buffers.items():
            assert_close(buffer, expected[1][name], what=name, tolerance=TIGHT)
    cotangent = rng.standard_normal(tuple(out.shape))
    looped = {name: [] for name, _ in ours_models[0].named_parameters()}
    for i, model in enumerate(ours_models):  # each member on its own: the same, and its buffers
        alone = model(sg.tensor(x if in_dim is None else x[i]))
        assert_close(out[i], alone.detach().numpy(), what=f"member {i}", tolerance=tight)
        for name, buffer in model.named_buffers():
            assert_close(buffers[name][i], buffer.numpy(), what=f"{name} {i}", tolerance=TIGHT)
        (alone * sg.tensor(cotangent[i])).sum().backward()
        for name, param in model.named_parameters():
            looped[name].append(
                param.grad.numpy() if param.grad is not None else 0 * param.detach().numpy()
            )

    ours = ensemble_gradients(sg, list(ours_models), sg.tensor(x), in_dim, sg.tensor(cotangent))
    expected_grads = {name: torch.tensor(np.stack(g)) for name, g in looped.items()}
    references = [("loop", expected_grads)]
    if expected is not None:
        theirs = ensemble_gradients(
            torch, list(their_models), torch.tensor(x), in_dim, torch.tensor(cotangent)
        )
        references += [("torch.func grad", theirs[0]), ("torch.func vjp", theirs[1])]
    tight = tight_for(*expected_grads.values())
    for how, grads in zip(("grad", "vjp"), ours):
        for reference, reference_grads in references:
            assert grads.keys() == reference_grads.keys()
            for name, g in grads.items():
                what = f"{how} {name} vs {reference}"
                assert_close(g, reference_grads[name], what=what, tolerance=tight)


@FUZZ
@given(
    st.integers(1, 6),
    st.sampled_from([0, None]),
    st.sampled_from(["error", "same", "different"]),
    st.sampled_from([0.0, 0.5]),
)
def test_dropout_in_training_under_each_randomness(size, in_dim, randomness, p):
    layers = [("Linear", (3, 64), {}), ("Dropout", (p,), {})]
    members = population(layers, size, training=True)
    ours_models, their_models = zip(*members)
    x = np.random.default_rng(size).standard_normal((4, 3) if in_dim is None else (size, 4, 3))
    outs = outcome(lambda: ensemble(sg, list(ours_models), sg.tensor(x), in_dim, randomness))
    expected = outcome(
        lambda: ensemble(torch, list(their_models), torch.tensor(x), in_dim, randomness)
    )
    if raised_alike(outs, expected, f"dropout({p}) randomness={randomness}"):
        return
    out, _ = outs
    assert tuple(out.shape) == tuple(expected[0].shape)
    # each member's output is its own network's, with some units dropped and the rest scaled
    linear_outputs = [
        model[0](sg.tensor(x if in_dim is None else x[i])).detach().numpy()
        for i, model in enumerate(ours_models)
    ]
    kept = np.stack(linear_outputs) / (1 - p)
    got = out.detach().numpy()
    dropped = got == 0
    np.testing.assert_allclose(got[~dropped], kept[~dropped], rtol=1e-12)
    if p == 0:
        assert not dropped.any()
    elif randomness == "same":  # one mask for every member
        assert (dropped == dropped[:1]).all()
    elif size > 1:  # a mask per member (256 draws each: equal masks are out of the question)
        assert not (dropped == dropped[:1]).all()


@pytest.mark.parametrize(
    "sizes",
    [((3, 4), (3, 5)), ((3, 4, 4), (3, 4)), ((3, 4), (3, 4, 4)), ((3, 4), (2, 4))],
    ids=["wider", "fewer-layers", "more-layers", "narrower-input"],
)
def test_stacking_models_of_different_architectures_raises_as_torch(sizes):
    def stack(m):
        models = [
            m.nn.Sequential(*(m.nn.Linear(a, b) for a, b in zip(s[:-1], s[1:]))) for s in sizes
        ]
        return m.func.stack_module_state(models)

    ours, theirs = outcome(stack, sg), outcome(stack, torch)
    if not raised_alike(ours, theirs, f"stack_module_state {sizes}"):
        # the second model has more layers: PyTorch stacks model 0's entries only, and so do we
        assert ours[0].keys() == theirs[0].keys()


@FUZZ
@given(st.integers(1, 5), st.integers(1, 5), st.sampled_from([0, 1, 2, -1, 3]))
def test_mismatched_population_sizes_and_in_dims_raise_as_torch(size, x_size, in_dim):
    def call(m):
        models = [m.nn.Linear(3, 2).double() for _ in range(size)]
        params, _ = m.func.stack_module_state(models)
        x = m.ones(x_size, 4, 3, dtype=m.float64)
        return m.func.vmap(
            lambda p, xi: m.func.functional_call(models[0], p, (xi,)), in_dims=(0, in_dim)
        )(params, x)

    ours, theirs = outcome(call, sg), outcome(call, torch)
    if not raised_alike(ours, theirs, f"{size} members, x {x_size} in_dim {in_dim}"):
        assert tuple(ours.shape) == tuple(theirs.shape)
    elif isinstance(theirs, ValueError) and "size" in str(theirs):
        assert "vmap" in str(ours) and str(size) in str(ours)


# ---- stacked policies -------------------------------------------------------------------------


def torch_policy(sizes, theta):
    """Member ``theta`` as PyTorch's tanh MLP, filled by PyTorch's own flattening order."""
    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(n_in, n_out), torch.nn.Tanh()]
    module = torch.nn.Sequential(*layers[:-1]).double()
    torch.nn.utils.vector_to_parameters(torch.tensor(theta), module.parameters())
    return module


@FUZZ
@given(
    st.lists(st.integers(1, 6), min_size=2, max_size=4),
    st.integers(1, 5),
    st.integers(1, 4),
    st.integers(0, 2**16),
)
def test_the_stacked_policy_equals_each_members_own_network(sizes, size, n, seed):
    policy = evo.MLPPolicy(sizes)
    rng = np.random.default_rng(seed)
    # exact in float32, so that the member's float32 module holds the same numbers
    thetas = rng.normal(0, 0.7, (size, policy.num_params)).astype(np.float32).astype(np.float64)
    obs = rng.standard_normal((size, n, sizes[0]))
    out = policy(thetas, obs)
    assert out.shape == (size, n, sizes[-1])
    for p in range(size):
        expected = torch_policy(sizes, thetas[p])(torch.tensor(obs[p]))
        assert_close(out[p], expected, what=f"member {p} vs PyTorch", tolerance=TIGHT)
        ours = policy.module(thetas[p]).double()(sg.tensor(obs[p]))
        assert_close(out[p], ours.detach().numpy(), what=f"member {p}", tolerance=TIGHT)


# ---- strategies: one generation against the documented formula -------------------------------


def centered_ranks_by_counting(fitness):
    """Salimans et al.'s centred ranks: how many members are worse (ties: the lower index is
    worse), scaled to [-0.5, 0.5]."""
    n = len(fitness)
    ranks = [
        sum(g < f or (g == f and j < i) for j, g in enumerate(fitness))
        for i, f in enumerate(fitness)
    ]
    return np.array(ranks) / (n - 1) - 0.5


fitnesses = st.sampled_from(["ties", "normal"])


def draw_fitness(rng, kind, size):
    return rng.integers(0, 3, size).astype(float) if kind == "ties" else rng.normal(size=size)


@FUZZ
@given(
    st.integers(1, 6),
    st.integers(1, 6),
    st.floats(0.01, 1.0),
    st.floats(1e-3, 0.1),
    st.sampled_from([0.0, 0.005, 0.1]),
    st.sampled_from(["adam", "sgd"]),
    st.integers(0, 2**16),
    fitnesses,
)
def test_an_openai_es_generation_is_the_documented_update(
    dim, half, sigma, lr, weight_decay, optimizer, seed, kind
):
    rng = np.random.default_rng(seed)
    x0 = rng.standard_normal(dim)
    popsize = 2 * half
    options = dict(sigma=sigma, popsize=popsize, lr=lr, seed=seed, weight_decay=weight_decay)
    es = evo.OpenAIES(x0, optimizer=optimizer, **options)
    theta = torch.tensor(x0, requires_grad=True)
    reference = (
        torch.optim.Adam([theta], lr=lr, weight_decay=weight_decay)
        if optimizer == "adam"
        else torch.optim.SGD([theta], lr=lr, momentum=0.9, weight_decay=weight_decay)
    )
    for generation in range(2):
        thetas = es.ask()
        np.testing.assert_array_equal(es.ask(), thetas)  # asking again: the same population
        centre = theta.detach().numpy()
        eps = (thetas[:half] - centre) / sigma
        np.testing.assert_allclose(thetas[half:], centre - sigma * eps, rtol=1e-12, atol=1e-12)
        fitness = draw_fitness(rng, kind, popsize)
        ranks = centered_ranks_by_counting(fitness)
        # sum over the mirrored pairs of (r+ - r-) eps, over the population size; ascent
        gradient = sum((ranks[j] - ranks[j + half]) * eps[j] for j in range(half)) / popsize
        theta.grad = torch.tensor(-gradient)
        reference.step()
        es.tell(fitness)
        assert es.generation == generation + 1
        assert_close(es.solution, theta, what=f"generation {generation}", tolerance=(1e-9, 1e-11))
    twin = evo.OpenAIES(x0, optimizer=optimizer, **options)  # deterministic for a seed
    np.testing.assert_array_equal(
        twin.ask(), evo.OpenAIES(x0, optimizer=optimizer, **options).ask()
    )


@FUZZ
@given(
    st.integers(1, 4),
    st.integers(2, 12),
    st.floats(0.01, 1.0),
    st.floats(0.05, 1.0),
    st.integers(0, 3),
    st.integers(0, 2**16),
    fitnesses,
)
def test_a_simple_ga_generation_is_truncation_elitism_and_mutation(
    dim, popsize, sigma, truncation, elite, seed, kind
):
    num_parents = max(1, int(truncation * popsize))
    x0 = np.random.default_rng(seed + 1).standard_normal(dim)
    make = lambda: evo.SimpleGA(  # noqa: E731
        x0, sigma, popsize, seed, truncation=truncation, elite=elite
    )
    if elite > num_parents:
        with pytest.raises(ValueError, match=rf"SimpleGA: elite must be in \[0, {num_parents}\]"):
            make()
        return
    ga = make()
    # the same noise: the strategy's generator, seeded by the seed, drawn in its order
    rng = np.random.default_rng(seed)
    expected = x0 + sigma * rng.standard_normal((popsize, dim))
    expected[0] = x0  # the first member is x0 itself
    population = ga.ask()
    np.testing.assert_array_equal(population, expected)
    fitness = draw_fitness(np.random.default_rng(seed + 2), kind, popsize)
    ga.tell(fitness)
    best_first = sorted(range(popsize), key=lambda i: (-fitness[i], i))
    parents = population[best_first[:num_parents]]
    picks = rng.integers(num_parents, size=popsize - elite)
    children = parents[picks] + sigma * rng.standard_normal((popsize - elite, dim))
    np.testing.assert_array_equal(ga.ask(), np.concatenate([parents[:elite], children]))
    np.testing.assert_array_equal(ga.solution, population[best_first[0]])


@FUZZ
@given(st.integers(2, 5), st.integers(2, 10), st.floats(0.05, 1.0), st.integers(0, 2**16))
def test_cmaes_is_pycma_on_the_negated_fitness(dim, popsize, sigma, seed):
    cma = pytest.importorskip("cma")
    x0 = np.random.default_rng(seed + 1).standard_normal(dim)
    es = evo.CMAES(x0, sigma, popsize, seed)
    rng = np.random.default_rng(seed)
    options = dict(seed=np.nan, verbose=-9, popsize=popsize)
    reference = cma.CMAEvolutionStrategy(
        x0, sigma, {**options, "randn": lambda *s: rng.standard_normal(s)}
    )
    fitness_rng = np.random.default_rng(seed + 2)
    for _ in range(2):
        population = es.ask()
        expected = np.array(reference.ask())
        np.testing.assert_array_equal(population, expected)
        fitness = fitness_rng.normal(size=popsize)
        es.tell(fitness)
        reference.tell(list(expected), list(-fitness))  # pycma minimises
        np.testing.assert_array_equal(es.solution, reference.mean)


# ---- batched environments -----------------------------------------------------------------


def random_actions(env, rng):
    if env.num_actions:
        return rng.integers(0, env.num_actions, env.num_envs)
    return rng.uniform(-2.5, 2.5, (env.num_envs, env.action_size)).astype(np.float32)


@FUZZ
@given(
    st.sampled_from(sorted(evo.ENVS)),
    st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=5),
    st.integers(1, 80),
    st.integers(0, 2**16),
)
def test_a_batched_env_equals_a_loop_over_single_envs_and_gymnasium(env_id, seeds, steps, seed):
    batched = evo.make(env_id, num_envs=len(seeds))
    singles = [evo.make(env_id) for _ in seeds]
    results = [batched.reset(seed=seeds)[0]]
    expected = [np.concatenate([env.reset(seed=[s])[0] for env, s in zip(singles, seeds)])]
    gym = pytest.importorskip("gymnasium")
    theirs = gym.vector.SyncVectorEnv([lambda: gym.make(env_id)] * len(seeds))
    gymnasium_results = [theirs.reset(seed=seeds)[0]]
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        actions = random_actions(batched, rng)
        results.append(batched.step(actions)[:4])
        alone = [env.step(a[None]) for env, a in zip(singles, actions)]
        expected.append([np.concatenate(values) for values in zip(*(r[:4] for r in alone))])
        gymnasium_results.append(theirs.step(actions)[:4])
    for step, (got, want, gymnasium_want) in enumerate(zip(results, expected, gymnasium_results)):
        for name, a, b, c in zip(
            ("obs", "reward", "terminated", "truncated"),
            *((x,) if step == 0 else x for x in (got, want, gymnasium_want)),
        ):
            np.testing.assert_array_equal(a, b, err_msg=f"step {step}: {name} of single envs")
            if env_id == "Pendulum-v1" and name == "reward":
                # NOTE: Gymnasium squares a float32 torque scalar with C's powf (docs/evo.md)
                np.testing.assert_allclose(a, c, rtol=1e-10, err_msg=f"step {step}: reward")
            else:
                np.testing.assert_array_equal(a, c, err_msg=f"step {step}: {name} of Gymnasium")


@FUZZ
@given(
    st.integers(1, 3),
    st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=2),
    st.integers(0, 2**16),
)
def test_evaluated_returns_equal_each_member_playing_alone(size, seeds, seed):
    policy = evo.MLPPolicy((4, 3, 2))
    thetas = np.random.default_rng(seed).normal(0, 1.0, (size, policy.num_params))
    returns = evo.episode_returns("CartPole-v1", policy, thetas, seeds)
    for p in range(size):
        for e, episode_seed in enumerate(seeds):
            env = evo.make("CartPole-v1")
            obs, _ = env.reset(seed=episode_seed)
            total, done = 0.0, False
            while not done:
                action = policy(thetas[p : p + 1], obs[None]).argmax(-1)[0]
                obs, reward, terminated, truncated, _ = env.step(action)
                total += reward[0]
                done = terminated[0] or truncated[0]
            assert returns[p, e] == total
    np.testing.assert_array_equal(
        evo.evaluate("CartPole-v1", policy, thetas, seeds), returns.mean(1)
    )


# ---- misuse: an error naming the op and the sizes, never a silent wrong result ----------------


@FUZZ
@given(st.integers(1, 3), st.lists(st.integers(1, 4), min_size=1, max_size=4))
def test_the_policy_refuses_observations_of_another_shape(size, obs_shape):
    policy = evo.MLPPolicy((3, 2, 2))
    thetas = np.zeros((size, policy.num_params))
    obs = np.ones(obs_shape)
    if len(obs_shape) == 3 and obs_shape[0] == size and obs_shape[2] == 3:
        assert policy(thetas, obs).shape == (size, obs_shape[1], 2)
    else:  # a 2-D or 4-D obs used to broadcast: every member on every member's observations
        with pytest.raises(
            ValueError, match=r"MLPPolicy\(3, 2, 2\).*" + re.escape(f"shape {tuple(obs_shape)};")
        ):
            policy(thetas, obs)


@FUZZ
@given(st.integers(0, 7), st.integers(0, 7), st.integers(0, 2**16))
def test_openai_es_refuses_odd_or_tiny_populations_and_non_finite_fitness(popsize, bad, seed):
    if popsize < 2 or popsize % 2:
        with pytest.raises(ValueError, match=rf"OpenAIES: popsize .*got {popsize}"):
            evo.OpenAIES(np.zeros(3), popsize=popsize, seed=seed)
        return
    es = evo.OpenAIES(np.zeros(3), popsize=popsize, seed=seed)
    thetas = es.ask()
    fitness = np.random.default_rng(seed).normal(size=popsize)
    fitness[bad % popsize] = [np.nan, np.inf, -np.inf][bad % 3]
    with pytest.raises(ValueError, match=rf"OpenAIES.tell: expected {popsize} finite"):
        es.tell(fitness)
    with pytest.raises(
        ValueError,
        match=re.escape(f"expected {popsize} finite fitness values, got shape ({popsize + 1},)"),
    ):
        es.tell(np.zeros(popsize + 1))
    # the refused calls changed nothing
    assert es.generation == 0
    np.testing.assert_array_equal(es.ask(), thetas)
    np.testing.assert_array_equal(es.solution, np.zeros(3))
