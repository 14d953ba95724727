"""The strategies: fitness shaping, OpenAI-ES's step against PyTorch's Adam, determinism, and
each strategy finding the optimum of a quadratic."""

import numpy as np
import pytest
import torch

from scratchgrad import evo


def test_centered_ranks_against_a_python_loop():
    fitness = np.array([3.0, -1.0, 2.0, -1.0, 7.0, 2.0])
    # rank = how many members are worse, ties ordered by index (the earlier one ranks lower)
    ranks = [
        sum(g < f or (g == f and j < i) for j, g in enumerate(fitness))
        for i, f in enumerate(fitness)
    ]
    expected = np.array(ranks) / (len(fitness) - 1) - 0.5
    np.testing.assert_array_equal(evo.centered_ranks(fitness), expected)


def test_openai_es_samples_mirrored_pairs_and_steps_like_torch_adam():
    x0 = np.random.default_rng(1).normal(size=5)
    es = evo.OpenAIES(x0=x0, sigma=0.1, popsize=6, lr=0.05, seed=3, weight_decay=0.01)
    thetas = es.ask()
    eps = (thetas[:3] - x0) / 0.1
    np.testing.assert_allclose(thetas[3:], x0 - 0.1 * eps, atol=1e-12)  # mirrored
    fitness = np.array([1.0, 5.0, 2.0, 0.5, 3.0, 4.0])
    ranks = evo.centered_ranks(fitness)
    # Salimans et al.'s estimate: sum over pairs of (r+ - r-) eps, over the population size
    gradient = sum((ranks[j] - ranks[j + 3]) * eps[j] for j in range(3)) / 6
    theta = torch.tensor(x0, requires_grad=True)
    adam = torch.optim.Adam([theta], lr=0.05, weight_decay=0.01)
    theta.grad = torch.tensor(-gradient)
    adam.step()
    es.tell(fitness)
    np.testing.assert_allclose(es.solution, theta.detach().numpy(), rtol=1e-6, atol=1e-9)


def sphere(thetas):
    return -((thetas - 1.5) ** 2).sum(axis=1)


def make_strategy(name, seed=0):
    x0 = np.zeros(4)
    if name == "openai-es":
        return evo.OpenAIES(x0=x0, sigma=0.1, popsize=20, lr=0.1, seed=seed, weight_decay=0.0)
    if name == "cmaes":
        return evo.CMAES(x0=x0, sigma=0.5, popsize=12, seed=seed)
    return evo.SimpleGA(x0=x0, sigma=0.1, popsize=40, seed=seed)


@pytest.mark.parametrize("name", ["openai-es", "cmaes", "ga"])
def test_strategy_finds_the_optimum_of_a_quadratic(name):
    es = make_strategy(name)
    for _ in range(150):
        es.tell(sphere(es.ask()))
    np.testing.assert_allclose(es.solution, np.full(4, 1.5), atol=0.15)


@pytest.mark.parametrize("name", ["openai-es", "cmaes", "ga"])
def test_strategy_is_deterministic_for_a_seed(name):
    runs = []
    for _ in range(2):
        es = make_strategy(name, seed=7)
        populations = []
        for _ in range(3):
            np.random.seed(None)  # other code touching NumPy's global state changes nothing
            thetas = es.ask()
            populations.append(thetas)
            es.tell(np.round(sphere(thetas), 1))  # rounded: ties in the ranking
        runs.append(np.stack(populations))
    np.testing.assert_array_equal(runs[0], runs[1])
    other = make_strategy(name, seed=8).ask()
    assert not np.array_equal(other, runs[0][0])


def test_ga_keeps_its_elite_and_breeds_from_the_best():
    es = evo.SimpleGA(x0=np.zeros(3), sigma=0.01, popsize=10, seed=0, truncation=0.2, elite=1)
    thetas = es.ask()
    fitness = np.arange(10.0)  # members 9 and 8 are the parents, 9 the elite
    es.tell(fitness)
    children = es.ask()
    np.testing.assert_array_equal(children[0], thetas[9])
    np.testing.assert_array_equal(es.solution, thetas[9])
    distance = np.abs(children[1:, None] - thetas[None, [8, 9]]).max(-1).min(-1)
    assert (distance < 0.06).all()  # each child is a parent plus noise of scale 0.01


def test_errors():
    es = evo.OpenAIES(x0=np.zeros(3), popsize=4)
    with pytest.raises(RuntimeError, match="OpenAIES.tell: call ask"):
        es.tell(np.zeros(4))
    es.ask()
    with pytest.raises(ValueError, match=r"expected 4 finite fitness values, got shape \(3,\)"):
        es.tell(np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        es.tell(np.array([0.0, np.nan, 0.0, 0.0]))
    with pytest.raises(ValueError, match="popsize must be even"):
        evo.OpenAIES(x0=np.zeros(3), popsize=5)
    with pytest.raises(ValueError, match="sigma must be positive"):
        evo.SimpleGA(x0=np.zeros(3), sigma=0.0)


def test_non_finite_starts_and_truncations_outside_zero_to_one_are_refused():
    """A NaN in x0 or an infinite sigma made every member NaN; a GA truncation above 1 failed
    at tell with an IndexError, and one of 0 or below became one parent silently."""
    with pytest.raises(ValueError, match=r"OpenAIES: x0 must be finite, got NaN/inf at \[1\]"):
        evo.OpenAIES(x0=np.array([0.0, np.nan]), popsize=4)
    with pytest.raises(ValueError, match="SimpleGA: sigma must be positive and finite, got inf"):
        evo.SimpleGA(x0=np.zeros(3), sigma=np.inf)
    for truncation in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match=r"SimpleGA: truncation must be in \(0, 1\], got"):
            evo.SimpleGA(x0=np.zeros(3), popsize=10, truncation=truncation)
    pytest.importorskip("cma")
    with pytest.raises(ValueError, match="CMAES: popsize must be an int >= 2, got 1"):
        evo.CMAES(x0=np.zeros(3), popsize=1)  # (pycma's own error named no op)
