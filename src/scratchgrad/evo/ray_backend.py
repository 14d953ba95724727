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


def actors_for(num_actors: int | None, cluster_cpus: float) -> int:
    """How many actors to start: ``num_actors``, or one per CPU of the cluster if None. Each
    actor holds one CPU, and Ray queues an actor it has no CPU for until one frees up, so more
    actors than the cluster's CPUs would leave slices waiting forever: that is refused at once.

    >>> actors_for(None, 8.0), actors_for(3, 8.0)
    (8, 3)
    """
    if num_actors is None:
        num_actors = max(1, int(cluster_cpus))
    if num_actors > cluster_cpus:
        raise ValueError(
            f"evo.run (ray backend): {num_actors} actors need {num_actors} CPUs (one each), but "
            f"the Ray cluster has {cluster_cpus:g}; the extra actors would wait forever. Pass "
            f"num_actors <= {int(cluster_cpus)} (or leave it out: one per CPU), or add CPUs "
            "to the cluster (ray start on more machines) first"
        )
    return num_actors


class RayBackend:
    """``num_actors`` Ray actors (default: one per CPU of the cluster; more than its CPUs is a
    ValueError, see ``actors_for``), each evaluating one contiguous slice of every generation's
    population.

    Joins the Ray instance this process already initialised; otherwise calls ``ray.init()``,
    which connects to the cluster ``RAY_ADDRESS`` names (or the one ``ray start`` last started
    on this machine) or starts a local one; ``close()`` then disconnects, which stops a local
    instance.
    """

    def __init__(self, env_id: str, policy: MLPPolicy, num_actors: int | None = None):
        if num_actors is not None and (not isinstance(num_actors, int) or num_actors < 1):
            raise ValueError(f"evo.run: num_actors must be a positive int, got {num_actors!r}")
        ray = self._ray = _import_ray()
        self._started_ray = not ray.is_initialized()
        if self._started_ray:
            ray.init(include_dashboard=False, log_to_driver=False)
        try:
            num_actors = actors_for(num_actors, ray.cluster_resources().get("CPU", 0))
        except ValueError:
            self.actors = []
            self.close()  # (a Ray instance started here is stopped again)
            raise
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
