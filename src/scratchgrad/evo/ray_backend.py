"""The Ray backend of ``evo.run``: population slices evaluated in Ray actors.

Per generation, the population matrix goes into Ray's object store once (``ray.put``; actors on
the same machine read it from shared memory without a copy), each actor evaluates its slice
with the same code as the local backend, and only the slice's fitness values come back. The
episode seeds travel with the call. A killed actor is restarted and its slice retried
(``max_restarts``, ``max_task_retries``); when the retries run out, the error names the slice.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scratchgrad.evo.policy import MLPPolicy
from scratchgrad.evo.run import evaluate

RETRIES = 2


def _import_ray():
    try:
        import ray
    except ImportError as err:
        raise ImportError(
            "the ray backend needs Ray: pip install 'scratchgrad[distributed]'"
        ) from err
    return ray


class _Evaluator:
    """The actor: evaluates slices of the population it is sent."""

    def __init__(self, env_id: str, policy_sizes: tuple[int, ...]):
        self.env_id, self.policy = env_id, MLPPolicy(policy_sizes)

    def evaluate(self, thetas: np.ndarray, start: int, stop: int, seeds: Sequence[int]):
        return evaluate(self.env_id, self.policy, thetas[start:stop], seeds)


class RayBackend:
    """``num_actors`` Ray actors (default: one per CPU of the cluster), each evaluating one
    contiguous slice of every generation's population.

    Joins the Ray instance this process already initialised; otherwise calls ``ray.init()``,
    which connects to the cluster ``RAY_ADDRESS`` names (or the one ``ray start`` last started
    on this machine) or starts a local one; ``close()`` then disconnects, which stops a local
    instance.
    """

    def __init__(self, env_id: str, policy: MLPPolicy, num_actors: int | None = None):
        ray = self._ray = _import_ray()
        self._started_ray = not ray.is_initialized()
        if self._started_ray:
            ray.init(include_dashboard=False, log_to_driver=False)
        if num_actors is None:
            num_actors = max(1, int(ray.cluster_resources().get("CPU", 1)))
        if not isinstance(num_actors, int) or num_actors < 1:
            raise ValueError(f"evo.run: num_actors must be a positive int, got {num_actors!r}")
        actor = ray.remote(num_cpus=1, max_restarts=RETRIES, max_task_retries=RETRIES)(_Evaluator)
        self.actors = [actor.remote(env_id, policy.sizes) for _ in range(num_actors)]

    def evaluate(self, thetas: np.ndarray, seeds: Sequence[int]) -> np.ndarray:
        ray = self._ray
        population = ray.put(thetas)
        bounds = np.linspace(0, len(thetas), len(self.actors) + 1).astype(int).tolist()
        # with fewer members than actors some slices are empty: those actors get no call
        slices = [(start, stop) for start, stop in zip(bounds[:-1], bounds[1:]) if stop > start]
        pending = [
            actor.evaluate.remote(population, start, stop, list(seeds))
            for actor, (start, stop) in zip(self.actors, slices)
        ]
        results = []
        for index, (ref, (start, stop)) in enumerate(zip(pending, slices)):
            try:
                results.append(ray.get(ref))
            except ray.exceptions.RayError as err:
                raise RuntimeError(
                    f"evo.run (ray backend): actor {index} failed on population members "
                    f"{start}..{stop - 1} after {RETRIES} retries; no fitness for that slice: "
                    f"{type(err).__name__}: {err}"
                ) from err
        return np.concatenate(results)

    def close(self) -> None:
        for actor in self.actors:
            self._ray.kill(actor)
        self.actors = []
        if self._started_ray:
            self._ray.shutdown()
