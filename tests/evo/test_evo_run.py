"""Populations of policies in one batched computation, against one module and one Gymnasium
environment at a time; evo.run's determinism and learning."""

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad import evo

gym = pytest.importorskip("gymnasium")


@pytest.fixture
def population():
    policy = evo.MLPPolicy((4, 8, 2))
    thetas = np.random.default_rng(0).normal(0, 0.7, (6, policy.num_params))
    return policy, thetas.astype(np.float32).astype(np.float64)  # exact in a float32 module


def test_batched_policy_equals_each_member_as_a_module(population):
    policy, thetas = population
    obs = np.random.default_rng(1).normal(size=(6, 3, 4))
    out = policy(thetas, obs)
    for p in range(6):
        module = policy.module(thetas[p]).double()
        expected = module(sg.tensor(obs[p])).detach().numpy()
        np.testing.assert_allclose(out[p], expected, rtol=1e-12, atol=1e-12)


def test_initial_params_load_back_into_the_module_and_leave_the_generator_alone():
    policy = evo.MLPPolicy((4, 32, 2))
    sg.manual_seed(1)
    expected_draw = sg.rand(3).numpy()
    sg.manual_seed(1)
    theta = policy.initial_params(seed=5)
    np.testing.assert_array_equal(sg.rand(3).numpy(), expected_draw)
    assert sg.initial_seed() == 1  # (was 5: only the NumPy generator was put back)
    sg.manual_seed(5)
    state = policy.module().state_dict()
    np.testing.assert_array_equal(
        np.concatenate([state[k].numpy().ravel() for k in state]), theta.astype(np.float32)
    )


def test_episode_returns_equal_one_gymnasium_episode_at_a_time(population):
    policy, thetas = population
    seeds = [11, 12]
    returns = evo.episode_returns("CartPole-v1", policy, thetas, seeds)
    for p in range(len(thetas)):
        module = policy.module(thetas[p]).double()
        for e, seed in enumerate(seeds):
            env = gym.make("CartPole-v1")
            obs, _ = env.reset(seed=seed)
            total, done = 0.0, False
            while not done:
                logits = module(sg.tensor(obs.astype(np.float64))).detach().numpy()
                obs, reward, terminated, truncated, _ = env.step(int(logits.argmax()))
                total += reward
                done = terminated or truncated
            assert returns[p, e] == total
    assert len(set(returns.ravel())) > 2  # the members differ: not a trivial agreement


def test_a_slice_evaluates_as_in_the_whole_population(population):
    policy, thetas = population
    whole = evo.evaluate("CartPole-v1", policy, thetas, [3, 4])
    np.testing.assert_array_equal(
        evo.evaluate("CartPole-v1", policy, thetas[2:5], [3, 4]), whole[2:5]
    )


def test_run_is_deterministic_and_learns():
    kwargs = dict(generations=8, popsize=32, seed=1, hidden=8)
    first = evo.run("CartPole-v1", **kwargs)
    second = evo.run("CartPole-v1", **kwargs)
    assert first.best_fitness == second.best_fitness
    np.testing.assert_array_equal(first.best_params, second.best_params)
    assert np.mean(first.mean_fitness[-2:]) > 2 * np.mean(first.mean_fitness[:2])
    fresh = evo.fresh_returns(first, episodes=5)
    assert fresh.shape == (5,) and (fresh >= 8).all()


def test_pendulum_policy_acts_continuously():
    result = evo.run("Pendulum-v1", generations=1, popsize=4, hidden=4)
    assert result.policy.sizes == (3, 4, 1)
    assert -2000 < result.best_fitness[0] < 0


def test_the_policy_refuses_observations_that_would_broadcast_across_members():
    """Observations (P, in) or (P, M, N, in) used to broadcast against the stacked weights:
    (P, P, out) outputs, every member applied to every member's observations."""
    policy = evo.MLPPolicy((4, 3, 2))
    thetas = np.zeros((3, policy.num_params))
    for shape in [(3, 4), (3, 1, 2, 4), (3, 2, 5)]:
        with pytest.raises(ValueError, match=rf"observations of shape \({shape[0]}, "):
            policy(thetas, np.ones(shape))
    for sizes in [(4,), (4, 0, 2), (4, -1, 2)]:
        with pytest.raises(ValueError, match="MLPPolicy: sizes must be two or more positive"):
            evo.MLPPolicy(sizes)


def test_episode_returns_refuse_a_policy_of_another_env_and_empty_populations():
    """A CartPole policy with three outputs played action argmax of three silently while
    action 2 never won; an empty population or no seeds named neither the op nor the sizes."""
    thetas = np.zeros((2, 27))
    with pytest.raises(ValueError, match=r"MLPPolicy\(4, 3, 3\).*4 inputs and 2 outputs"):
        evo.evaluate("CartPole-v1", evo.MLPPolicy((4, 3, 3)), thetas, [0])
    with pytest.raises(ValueError, match="evo.episode_returns: 0 members"):
        evo.evaluate("CartPole-v1", evo.MLPPolicy((4, 3, 2)), np.zeros((0, 23)), [0])
    with pytest.raises(ValueError, match="2 members of MLPPolicy.* and 0 seeds"):
        evo.evaluate("CartPole-v1", evo.MLPPolicy((4, 3, 2)), np.zeros((2, 23)), [])


@pytest.mark.parametrize(("num_actors", "cpus"), [(3, 2.0), (1, 0.0), (None, 0.0), (2, 1.5)])
def test_more_ray_actors_than_cluster_cpus_is_refused_naming_the_counts(num_actors, cpus):
    """The Ray backend's check, on a stub of the cluster's CPU count (no Ray needed): an actor
    holds one CPU, and one the cluster has no CPU for used to wait forever."""
    from scratchgrad.evo.ray_backend import actors_for

    wanted = 1 if num_actors is None else num_actors
    with pytest.raises(ValueError, match=rf"{wanted} actors need {wanted} CPUs .* has {cpus:g};"):
        actors_for(num_actors, cpus)


def test_ray_actors_default_to_one_per_cluster_cpu():
    from scratchgrad.evo.ray_backend import actors_for

    assert (actors_for(None, 4.0), actors_for(4, 4.0), actors_for(1, 1.5)) == (4, 4, 1)
