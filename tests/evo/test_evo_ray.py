"""The Ray backend: same results as the local backend; a killed actor is retried or reported."""

import numpy as np
import pytest

from scratchgrad import evo

ray = pytest.importorskip("ray")
from scratchgrad.evo.ray_backend import RayBackend  # noqa: E402
from scratchgrad.evo.run import LocalBackend  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def population():
    policy = evo.MLPPolicy((4, 8, 2))
    thetas = np.random.default_rng(0).normal(0, 0.5, (10, policy.num_params))
    return policy, thetas


def test_ray_run_is_bit_identical_to_local(local_ray):
    kwargs = dict(generations=3, popsize=12, seed=3, hidden=8, episodes=2)
    for strategy in ("openai-es", "ga"):
        local = evo.run("CartPole-v1", strategy, backend="local", **kwargs)
        remote = evo.run("CartPole-v1", strategy, backend="ray", num_actors=2, **kwargs)
        assert remote.best_fitness == local.best_fitness
        assert remote.mean_fitness == local.mean_fitness
        np.testing.assert_array_equal(remote.best_params, local.best_params)
    assert ray.is_initialized()  # run joined the caller's instance and left it running


def test_killed_actor_is_restarted_and_its_slice_retried(local_ray, population):
    policy, thetas = population
    expected = LocalBackend("CartPole-v1", policy).evaluate(thetas, [5])
    backend = RayBackend("CartPole-v1", policy, num_actors=2)
    try:
        ray.kill(backend.actors[0], no_restart=False)
        np.testing.assert_array_equal(backend.evaluate(thetas, [5]), expected)
    finally:
        backend.close()


def test_dead_actor_is_reported_with_its_slice(local_ray, population):
    policy, thetas = population
    backend = RayBackend("CartPole-v1", policy, num_actors=2)
    try:
        ray.kill(backend.actors[1], no_restart=True)
        with pytest.raises(RuntimeError, match=r"actor 1 failed on population members 5\.\.9"):
            backend.evaluate(thetas, [5])
    finally:
        backend.close()
