"""Batched classic-control environments in NumPy: thousands of episodes stepped in lockstep.

Each class steps ``num_envs`` copies of one Gymnasium environment at once and answers like
Gymnasium's vector environments (``SyncVectorEnv`` over ``gymnasium.make(id)``), step for step:
the same observations, rewards and flags, the same autoreset (``NEXT_STEP``: the step after an
episode ends returns the first observation of the next one, with reward 0 and both flags False,
and ignores its action) and the same seeded resets (env ``i`` keeps its own generator, seeded as
``gymnasium.make(id).reset(seed=seed[i])`` seeds it). The physics is Gymnasium's, written once
over arrays with the same expressions in the same order, so the floats agree bit for bit (one
exception: Pendulum's reward, when Gymnasium squares a float32 torque as a NumPy scalar, which goes
through C's ``powf`` and can be one float32 ulp off the exact square; the reward then differs by
about 1e-12 relative).

Gymnasium itself is not needed here (it is a test dependency: the tests compare with it).

>>> from scratchgrad import evo
>>> env = evo.make("CartPole-v1", num_envs=3)
>>> obs, info = env.reset(seed=0)
>>> obs.shape
(3, 4)
>>> obs, reward, terminated, truncated, info = env.step(np.array([0, 1, 1]))
>>> reward
array([1., 1., 1.])
"""

from __future__ import annotations

from collections.abc import Sequence
from math import pi
from numbers import Integral
from typing import Any

import numpy as np


class VectorEnv:
    """``num_envs`` copies of one environment; subclasses give the physics.

    The state is kept as ``(state_size, num_envs)`` float64 so that each physical quantity is
    one row, written exactly as Gymnasium writes the scalar.
    """

    id: str
    observation_size: int
    max_episode_steps: int
    num_actions: int | None = None  # discrete actions 0 .. num_actions - 1
    action_size: int | None = None  # continuous actions of this size in [-max_action, max_action]
    max_action: float | None = None

    def __init__(self, num_envs: int = 1):
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"{self.id}: num_envs must be a positive int, got {num_envs!r}")
        self.num_envs = num_envs
        self.state: np.ndarray | None = None
        self._rngs: list[np.random.Generator] | None = None
        self._steps = np.zeros(num_envs, dtype=np.int64)
        self._autoreset = np.zeros(num_envs, dtype=bool)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id}, num_envs={self.num_envs})"

    # The physics: one reset draw for one env, and a step of all envs.
    def _initial_state(self, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def _dynamics(self, state: np.ndarray, actions: np.ndarray):
        """(next state, reward, terminated) for every env, from Gymnasium's step."""
        raise NotImplementedError

    def _observe(self, state: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def reset(
        self, *, seed: int | Sequence[int] | None = None, options: dict | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a new episode in every env; returns ``(obs, info)`` with obs ``(num_envs, ...)``.

        ``seed=s`` seeds env ``i`` with ``s + i``; a list gives each env its seed; ``None`` keeps
        the generators (fresh random ones on the first reset), as Gymnasium does.
        """
        if options is not None:
            raise ValueError(f"{self.id}.reset: options are not supported, got {options!r}")
        self._rngs = self._seeded_generators(seed)
        self.state = np.stack([self._initial_state(rng) for rng in self._rngs], axis=1)
        self._steps[:] = 0
        self._autoreset[:] = False
        return self._observe(self.state), {}

    def _seeded_generators(self, seed) -> list[np.random.Generator]:
        if seed is None:
            return self._rngs or [np.random.default_rng() for _ in range(self.num_envs)]
        seeds = (
            [seed + i for i in range(self.num_envs)] if isinstance(seed, Integral) else list(seed)
        )
        if len(seeds) != self.num_envs:
            raise ValueError(
                f"{self.id}.reset: got {len(seeds)} seeds for num_envs={self.num_envs}"
            )
        # Gymnasium's seeding.np_random(s) is Generator(PCG64(SeedSequence(s))): default_rng(s)
        return [np.random.default_rng(s) for s in seeds]

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Advance every env by one step: ``(obs, reward, terminated, truncated, info)``.

        Envs whose episode ended on the previous step are reset instead (their action is
        ignored), as Gymnasium's vector envs do by default.
        """
        if self.state is None:
            raise RuntimeError(f"{self.id}.step: call reset() before step()")
        actions = self._check_actions(actions)
        state, reward, terminated = self._dynamics(self.state, actions)
        self._steps += 1
        truncated = self._steps >= self.max_episode_steps
        obs = self._observe(state)
        restart = self._autoreset
        if restart.any():
            fresh = np.stack([self._initial_state(self._rngs[i]) for i in np.flatnonzero(restart)])
            state[:, restart] = fresh.T
            # observed in the reset state's own dtype (Acrobot's is float32), as Gymnasium does
            obs[restart] = self._observe(fresh.T)
            self._steps[restart] = 0
            reward[restart] = 0.0
            terminated[restart] = False
            truncated[restart] = False
        self.state = state
        self._autoreset = terminated | truncated
        return obs, reward, terminated, truncated, {}

    def _check_actions(self, actions) -> np.ndarray:
        actions = np.asarray(actions)
        shape = (self.num_envs,) if self.num_actions else (self.num_envs, self.action_size)
        if actions.shape != shape:
            raise ValueError(f"{self.id}.step: actions of shape {actions.shape}, expected {shape}")
        if self.num_actions and not (
            np.issubdtype(actions.dtype, np.integer)
            and ((actions >= 0) & (actions < self.num_actions)).all()
        ):
            raise ValueError(
                f"{self.id}.step: actions must be integers in [0, {self.num_actions}), "
                f"got {actions.dtype.name} values from {actions.min()} to {actions.max()}"
            )
        return actions


class CartPole(VectorEnv):
    """``CartPole-v1``: push the cart left (0) or right (1) to keep the pole up; reward 1 per
    step, at most 500 steps (gymnasium/envs/classic_control/cartpole.py)."""

    id = "CartPole-v1"
    observation_size, num_actions, max_episode_steps = 4, 2, 500
    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    total_mass = masspole + masscart
    polemass_length = masspole * length
    theta_threshold_radians = 12 * 2 * pi / 360
    x_threshold = 2.4

    def _initial_state(self, rng):
        return rng.uniform(low=-0.05, high=0.05, size=(4,))

    def _dynamics(self, state, actions):
        x, x_dot, theta, theta_dot = state
        force = np.where(actions == 1, self.force_mag, -self.force_mag)
        costheta, sintheta = np.cos(theta), np.sin(theta)
        temp = (force + self.polemass_length * np.square(theta_dot) * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * np.square(costheta) / self.total_mass)
        )
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        x = x + self.tau * x_dot  # Euler, as Gymnasium's default kinematics_integrator
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        terminated = (np.abs(x) > self.x_threshold) | (np.abs(theta) > self.theta_threshold_radians)
        # Gymnasium pays 1 even on the step that fails
        return np.stack([x, x_dot, theta, theta_dot]), np.ones(self.num_envs), terminated

    def _observe(self, state):
        return state.T.astype(np.float32)


def _angle_normalize(x):
    return ((x + np.pi) % (2 * np.pi)) - np.pi


class Pendulum(VectorEnv):
    """``Pendulum-v1``: swing the pendulum up with a torque in [-2, 2]; reward minus the cost
    of angle, speed and torque; 200 steps, never terminates (.../pendulum.py)."""

    id = "Pendulum-v1"
    observation_size, action_size, max_action, max_episode_steps = 3, 1, 2.0, 200
    max_speed, max_torque, dt, g, m, l = 8, 2.0, 0.05, 10.0, 1.0, 1.0

    def _initial_state(self, rng):
        high = np.array([np.pi, 1.0])
        return rng.uniform(low=-high, high=high)

    def _dynamics(self, state, actions):
        th, thdot = state
        g, m, l, dt = self.g, self.m, self.l, self.dt
        u = np.clip(actions, -self.max_torque, self.max_torque)[:, 0]
        costs = _angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * (u**2)
        newthdot = thdot + (3 * g / (2 * l) * np.sin(th) + 3.0 / (m * l**2) * u) * dt
        newthdot = np.clip(newthdot, -self.max_speed, self.max_speed)
        newth = th + newthdot * dt
        return np.stack([newth, newthdot]), -costs, np.zeros(self.num_envs, dtype=bool)

    def _observe(self, state):
        th, thdot = state
        return np.stack([np.cos(th), np.sin(th), thdot], axis=1).astype(np.float32)


def _wrap(x, low, high):
    """Gymnasium's ``wrap``: add or subtract the period until x lies in [low, high]."""
    while (x > high).any():
        x = np.where(x > high, x - (high - low), x)
    while (x < low).any():
        x = np.where(x < low, x + (high - low), x)
    return x


class Acrobot(VectorEnv):
    """``Acrobot-v1``: torque -1, 0 or +1 (actions 0, 1, 2) on the joint between two links to
    swing the tip above the bar; reward -1 per step until then, at most 500 steps, Runge-Kutta
    integration over dt = 0.2 (.../acrobot.py, the "book" dynamics)."""

    id = "Acrobot-v1"
    observation_size, num_actions, max_episode_steps = 6, 3, 500
    dt = 0.2
    m1 = m2 = l1 = 1.0  # link masses and the first link's length
    lc1 = lc2 = 0.5  # positions of the centres of mass
    I1 = I2 = 1.0  # moments of inertia
    max_vel_1, max_vel_2 = 4 * pi, 9 * pi
    torques = np.array([-1.0, 0.0, 1.0])

    def _initial_state(self, rng):
        return rng.uniform(low=-0.1, high=0.1, size=(4,)).astype(np.float32)

    def _derivatives(self, s):
        m1, m2, l1, lc1, lc2, I1, I2 = (
            self.m1,
            self.m2,
            self.l1,
            self.lc1,
            self.lc2,
            self.I1,
            self.I2,
        )
        g = 9.8
        theta1, theta2, dtheta1, dtheta2, a = s
        d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * np.cos(theta2)) + I1 + I2
        d2 = m2 * (lc2**2 + l1 * lc2 * np.cos(theta2)) + I2
        phi2 = m2 * lc2 * g * np.cos(theta1 + theta2 - pi / 2.0)
        phi1 = (
            -m2 * l1 * lc2 * dtheta2**2 * np.sin(theta2)
            - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * np.sin(theta2)
            + (m1 * lc1 + m2 * l1) * g * np.cos(theta1 - pi / 2)
            + phi2
        )
        ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1**2 * np.sin(theta2) - phi2) / (
            m2 * lc2**2 + I2 - d2**2 / d1
        )
        ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
        return np.stack([dtheta1, dtheta2, ddtheta1, ddtheta2, np.zeros_like(a)])

    def _dynamics(self, state, actions):
        y0 = np.concatenate([state, self.torques[actions][None]])
        # one Runge-Kutta step of length dt, as Gymnasium's rk4 over t = [0, dt]
        dt = self.dt
        dt2 = dt / 2.0
        k1 = self._derivatives(y0)
        k2 = self._derivatives(y0 + dt2 * k1)
        k3 = self._derivatives(y0 + dt2 * k2)
        k4 = self._derivatives(y0 + dt * k3)
        ns = (y0 + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4))[:4]
        ns[0] = _wrap(ns[0], -pi, pi)
        ns[1] = _wrap(ns[1], -pi, pi)
        ns[2] = np.minimum(np.maximum(ns[2], -self.max_vel_1), self.max_vel_1)
        ns[3] = np.minimum(np.maximum(ns[3], -self.max_vel_2), self.max_vel_2)
        terminated = -np.cos(ns[0]) - np.cos(ns[1] + ns[0]) > 1.0
        return ns, np.where(terminated, 0.0, -1.0), terminated

    def _observe(self, state):
        s0, s1, s2, s3 = state
        obs = [np.cos(s0), np.sin(s0), np.cos(s1), np.sin(s1), s2, s3]
        return np.stack(obs, axis=1).astype(np.float32)


ENVS = {cls.id: cls for cls in (CartPole, Pendulum, Acrobot)}


def make(id: str, num_envs: int = 1) -> VectorEnv:
    """A batch of ``num_envs`` environments, by Gymnasium id.

    >>> make("Pendulum-v1", num_envs=2)
    Pendulum(Pendulum-v1, num_envs=2)
    """
    if id not in ENVS:
        raise ValueError(f"evo.make: unknown environment {id!r}; choose one of {sorted(ENVS)}")
    return ENVS[id](num_envs)
