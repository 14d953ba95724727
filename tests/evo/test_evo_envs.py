"""The batched environments against Gymnasium's own, step for step, bit for bit."""

import numpy as np
import pytest

from scratchgrad import evo

gym = pytest.importorskip("gymnasium")


def heuristic_actions(env_id, obs, rng):
    """Half the envs act at random, half follow a policy that lasts (to reach truncation)."""
    n = len(obs)
    if env_id == "CartPole-v1":
        good = (obs[:, 2] + obs[:, 3] > 0).astype(np.int64)
        return np.where(np.arange(n) % 2 == 0, good, rng.integers(0, 2, n))
    if env_id == "Acrobot-v1":  # pump energy: torque along the second joint's velocity
        good = np.where(obs[:, 5] > 0, 2, 0)
        return np.where(np.arange(n) % 2 == 0, good, rng.integers(0, 3, n))
    return rng.uniform(-2.5, 2.5, (n, 1)).astype(np.float32)  # Pendulum: clipped beyond 2


@pytest.mark.parametrize(
    "env_id, steps", [("CartPole-v1", 560), ("Pendulum-v1", 420), ("Acrobot-v1", 300)]
)
def test_equals_gymnasium_step_for_step(env_id, steps):
    n = 4
    ours = evo.make(env_id, num_envs=n)
    theirs = gym.vector.SyncVectorEnv([lambda: gym.make(env_id)] * n)
    obs, _ = ours.reset(seed=[7, 3, 100, 5])
    expected, _ = theirs.reset(seed=[7, 3, 100, 5])
    np.testing.assert_array_equal(obs, expected)
    rng = np.random.default_rng(0)
    terminations = truncations = 0
    for _ in range(steps):
        actions = heuristic_actions(env_id, obs, rng)
        got = ours.step(actions)
        want = theirs.step(actions)
        for name, a, b in zip(("obs", "reward", "terminated", "truncated"), got[:4], want[:4]):
            if env_id == "Pendulum-v1" and name == "reward":
                # NOTE: Gymnasium squares a float32 torque scalar, which NumPy does with C's
                # powf: off by one float32 ulp from the exact square for ~0.1% of values
                np.testing.assert_allclose(a, b, rtol=1e-10, err_msg=f"{env_id} {name}")
            else:
                np.testing.assert_array_equal(a, b, err_msg=f"{env_id} {name}")
        obs = got[0]
        terminations += got[2].sum()
        truncations += got[3].sum()
    # the autoreset paths were exercised (Pendulum never terminates, Acrobot rarely lasts 500)
    assert terminations > 0 or env_id == "Pendulum-v1"
    assert truncations > 0 or env_id == "Acrobot-v1"


def test_seeded_reset_starts_where_gymnasium_make_starts():
    for env_id in evo.ENVS:
        obs, info = evo.make(env_id, num_envs=3).reset(seed=10)  # envs seeded 10, 11, 12
        for i in range(3):
            expected, _ = gym.make(env_id).reset(seed=10 + i)
            np.testing.assert_array_equal(obs[i], expected)


def test_truncation_after_max_episode_steps_then_autoreset():
    env = evo.make("Pendulum-v1", num_envs=2)
    env.reset(seed=0)
    actions = np.zeros((2, 1), dtype=np.float32)
    for _ in range(199):
        assert not env.step(actions)[3].any()
    obs, reward, terminated, truncated, _ = env.step(actions)
    assert truncated.all() and not terminated.any()
    obs, reward, terminated, truncated, _ = env.step(actions)
    assert (reward == 0).all() and not truncated.any()
    rng = np.random.default_rng(1)  # the second episode of env 1: its generator's next draw
    rng.uniform(-np.array([np.pi, 1.0]), np.array([np.pi, 1.0]))
    th, thdot = rng.uniform(-np.array([np.pi, 1.0]), np.array([np.pi, 1.0]))
    np.testing.assert_allclose(obs[1], [np.cos(th), np.sin(th), thdot], rtol=1e-6)


def test_errors_name_the_env_and_the_problem():
    env = evo.make("CartPole-v1", num_envs=2)
    with pytest.raises(RuntimeError, match="CartPole-v1.step: call reset"):
        env.step(np.zeros(2, dtype=np.int64))
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions of shape \(3,\), expected \(2,\)"):
        env.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match=r"integers in \[0, 2\)"):
        env.step(np.array([0, 2]))
    with pytest.raises(ValueError, match="got 3 seeds for num_envs=2"):
        env.reset(seed=[1, 2, 3])
    with pytest.raises(ValueError, match="unknown environment 'MountainCar-v0'"):
        evo.make("MountainCar-v0")
