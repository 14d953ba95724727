"""The Ray backend: same results as the local backend; a killed actor is retried or reported."""

import os
import signal
import threading

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


def test_actor_killed_mid_evaluation_is_restarted_and_its_slice_retried(local_ray):
    # one tanh unit that pushes the cart toward the falling pole: episodes last all 500 steps,
    # so each actor's slice takes long enough to be killed in the middle of it
    policy = evo.MLPPolicy((4, 1, 2))
    balancing = np.array([0.5, 1.0, 10.0, 3.0, 0.0, -3.0, 3.0, 0.0, 0.0])
    thetas = balancing + 0.02 * np.random.default_rng(0).standard_normal((1024, 9))
    seeds = [5, 6, 7, 8]
    expected = LocalBackend("CartPole-v1", policy).evaluate(thetas, seeds)
    assert expected.min() > 400
    backend = RayBackend("CartPole-v1", policy, num_actors=2)
    try:
        pid = ray.get(backend.actors[0].__ray_call__.remote(lambda self: os.getpid()))
        threading.Timer(0.05, os.kill, (pid, signal.SIGKILL)).start()
        np.testing.assert_array_equal(backend.evaluate(thetas, seeds), expected)
        restarted = ray.get(backend.actors[0].__ray_call__.remote(lambda self: os.getpid()))
        assert restarted != pid
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


def test_fewer_members_than_actors_leaves_the_extra_actors_idle(local_ray, population):
    """Each actor used to get its slice, empty ones too, whose evaluation raised: a population
    of 1 on 2 actors failed."""
    policy, thetas = population
    backend = RayBackend("CartPole-v1", policy, num_actors=2)
    try:
        expected = LocalBackend("CartPole-v1", policy).evaluate(thetas[:1], [5, 6])
        np.testing.assert_array_equal(backend.evaluate(thetas[:1], [5, 6]), expected)
    finally:
        backend.close()


def test_more_actors_than_cpus_fails_at_once(local_ray, population):
    """An actor Ray has no CPU for is queued until one frees up: a third actor on the two
    CPUs of this instance used to leave its slice waiting forever."""
    policy, _ = population
    with pytest.raises(
        ValueError, match=r"3 actors need 3 CPUs \(one each\), but the Ray cluster has 2"
    ):
        RayBackend("CartPole-v1", policy, num_actors=3)
    assert ray.is_initialized()  # the caller's instance is left running
