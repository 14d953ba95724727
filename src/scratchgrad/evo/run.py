"""``evo.run``: evolve MLP policies for a batched environment, on this process or on Ray actors.

A generation is: the strategy asks for a population, every member plays ``episodes`` episodes
(all members in one batched environment, starting from the same seeded states, so that the
comparison between members is fair), the mean returns are told back. The evaluation is a pure
function of the parameters and the episode seeds, so it can be cut into slices anywhere: the Ray
backend gives each actor a slice and the fitness values come back bit-identical to the local run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from scratchgrad import nn
from scratchgrad.evo.envs import ENVS, make
from scratchgrad.evo.policy import MLPPolicy, actions_from_outputs
from scratchgrad.evo.strategies import CMAES, OpenAIES, SimpleGA

STRATEGIES = {"openai-es": OpenAIES, "cmaes": CMAES, "ga": SimpleGA}
# Options each strategy gets unless given, tuned on CartPole-v1 with the default MLP: the
# classes' own defaults (OpenAI's sigma 0.02, lr 0.01) are for much larger networks.
DEFAULT_OPTIONS = {
    "openai-es": {"sigma": 0.1, "lr": 0.03},
    "cmaes": {"sigma": 0.5},
    "ga": {"sigma": 0.1},
}
DEFAULT_HIDDEN = 32
FRESH_SEEDS = 2**31  # training episodes use seeds below this; fresh (test) episodes from it on


def episode_returns(
    env_id: str, policy: MLPPolicy, thetas: np.ndarray, seeds: Sequence[int]
) -> np.ndarray:
    """The return of each member ``thetas[p]`` in one episode per seed: ``(P, len(seeds))``.

    All ``P * len(seeds)`` episodes step together in one batched environment; member ``p``'s
    episode ``e`` starts from seed ``seeds[e]``. Each episode counts until its first end.

    >>> policy = MLPPolicy((4, 32, 2))
    >>> episode_returns("CartPole-v1", policy, np.zeros((3, 226)), seeds=[0, 1]).shape
    (3, 2)
    """
    members, episodes = len(thetas), len(seeds)
    env_class = ENVS.get(env_id) or make(env_id)  # (make raises naming the known ids)
    expected = (env_class.observation_size, env_class.num_actions or env_class.action_size)
    if (policy.sizes[0], policy.sizes[-1]) != expected or not members or not episodes:
        raise ValueError(
            f"evo.episode_returns: {members} members of MLPPolicy{policy.sizes} and "
            f"{episodes} seeds for {env_id}; expected at least one of each, and a policy of "
            f"{expected[0]} inputs and {expected[1]} outputs"
        )
    env = make(env_id, num_envs=members * episodes)
    obs, _ = env.reset(seed=np.tile(np.asarray(seeds), members).tolist())
    returns = np.zeros(env.num_envs)
    running = np.ones(env.num_envs, dtype=bool)
    for _ in range(env.max_episode_steps):
        outputs = policy(thetas, obs.reshape(members, episodes, -1))
        actions = actions_from_outputs(env, outputs.reshape(env.num_envs, -1))
        obs, reward, terminated, truncated, _ = env.step(actions)
        returns += np.where(running, reward, 0.0)
        running &= ~(terminated | truncated)
        if not running.any():
            break
    return returns.reshape(members, episodes)


def evaluate(
    env_id: str, policy: MLPPolicy, thetas: np.ndarray, seeds: Sequence[int]
) -> np.ndarray:
    """The fitness of each member: its mean return over one episode per seed, ``(P,)``."""
    return episode_returns(env_id, policy, thetas, seeds).mean(axis=1)


def episode_seeds(seed: int, generation: int, episodes: int) -> list[int]:
    """The training episodes' seeds of one generation, all below ``FRESH_SEEDS``."""
    # the third word keeps this stream apart from the strategies' own (seed, generation) noise
    rng = np.random.default_rng([seed, generation, 1])
    return rng.integers(0, FRESH_SEEDS, size=episodes).tolist()


class LocalBackend:
    """Evaluates the whole population in this process."""

    def __init__(self, env_id: str, policy: MLPPolicy):
        self.env_id, self.policy = env_id, policy

    def evaluate(self, thetas: np.ndarray, seeds: Sequence[int]) -> np.ndarray:
        return evaluate(self.env_id, self.policy, thetas, seeds)

    def close(self) -> None:
        pass


@dataclass
class RunResult:
    """What ``evo.run`` returns: the fitness curves and the final parameters.

    ``best_params`` is the strategy's final solution (the search distribution's mean for
    OpenAI-ES and CMA-ES, the best member of the last generation for the GA), a flat vector
    that ``policy.module(best_params)`` turns into an ``nn.Sequential``.
    """

    env_id: str
    strategy: str
    best_fitness: list[float]
    mean_fitness: list[float]
    best_params: np.ndarray
    policy: MLPPolicy
    popsize: int
    seed: int
    seconds: float

    def module(self) -> nn.Sequential:
        """The final policy as a module (float32), e.g. to save with ``scratchgrad.save``."""
        return self.policy.module(self.best_params)


def run(
    env_id: str,
    strategy: str = "openai-es",
    generations: int = 50,
    popsize: int = 256,
    seed: int = 0,
    backend: str = "local",
    num_actors: int | None = None,
    *,
    episodes: int = 1,
    hidden: int = DEFAULT_HIDDEN,
    progress: bool = False,
    callback: Callable[[int, np.ndarray], None] | None = None,
    **strategy_options,
) -> RunResult:
    """Evolve a tanh MLP policy (observation -> ``hidden`` -> actions) for ``env_id``.

    ``strategy`` is ``"openai-es"``, ``"cmaes"`` or ``"ga"``; ``strategy_options`` go to its
    class (``sigma=``, and e.g. ``lr=`` for OpenAI-ES) over ``DEFAULT_OPTIONS``.
    ``backend="ray"`` spreads each generation over ``num_actors`` Ray actors (default: one per
    CPU of the cluster), joining the Ray instance already initialised (or the one
    ``RAY_ADDRESS`` names) or starting a local one. The results are the same for the same seed
    whatever the backend. ``callback(generation, fitness)`` is
    called after each generation.

    >>> result = run("CartPole-v1", generations=2, popsize=8, seed=0)
    >>> len(result.best_fitness), result.best_params.shape
    (2, (226,))
    """
    if env_id not in ENVS:
        raise ValueError(f"evo.run: unknown environment {env_id!r}; choose one of {sorted(ENVS)}")
    if strategy not in STRATEGIES:
        raise ValueError(
            f"evo.run: unknown strategy {strategy!r}; choose one of {sorted(STRATEGIES)}"
        )
    policy = MLPPolicy.for_env(ENVS[env_id], hidden)
    options = {**DEFAULT_OPTIONS[strategy], **strategy_options}
    es = STRATEGIES[strategy](x0=policy.initial_params(seed), popsize=popsize, seed=seed, **options)
    evaluator = _make_backend(backend, env_id, policy, num_actors)
    best, mean = [], []
    start = time.perf_counter()
    bar = tqdm(range(generations), desc=f"{strategy} {env_id}", disable=not progress)
    try:
        for generation in bar:
            thetas = es.ask()
            fitness = evaluator.evaluate(thetas, episode_seeds(seed, generation, episodes))
            es.tell(fitness)
            best.append(float(fitness.max()))
            mean.append(float(fitness.mean()))
            bar.set_postfix(best=f"{best[-1]:.1f}", mean=f"{mean[-1]:.1f}", refresh=False)
            if callback is not None:
                callback(generation, fitness)
    finally:
        evaluator.close()
    seconds = time.perf_counter() - start
    return RunResult(env_id, strategy, best, mean, es.solution, policy, es.popsize, seed, seconds)


def _make_backend(backend: str, env_id: str, policy: MLPPolicy, num_actors: int | None):
    if backend == "local":
        return LocalBackend(env_id, policy)
    if backend == "ray":
        from scratchgrad.evo.ray_backend import RayBackend

        return RayBackend(env_id, policy, num_actors)
    raise ValueError(f"evo.run: unknown backend {backend!r}; choose 'local' or 'ray'")


def fresh_returns(result: RunResult, episodes: int = 100) -> np.ndarray:
    """The returns of the final policy in ``episodes`` episodes whose seeds training never
    used (training seeds lie below ``FRESH_SEEDS``)."""
    seeds = range(FRESH_SEEDS, FRESH_SEEDS + episodes)
    return episode_returns(result.env_id, result.policy, result.best_params[None], seeds)[0]
