"""Evolution strategies in ask/tell style over flat parameter vectors; higher fitness is better.

Each strategy takes ``x0`` (the starting parameters), ``sigma`` (the mutation scale), ``popsize``
and ``seed``, and is deterministic for that seed: ``ask()`` returns the population
``(popsize, dim)``, ``tell(fitness)`` takes one fitness per member and updates the search, and
``solution`` is its current estimate of the best parameters.

>>> es = OpenAIES(x0=np.zeros(3), sigma=0.1, popsize=8, lr=0.05, seed=0, weight_decay=0.0)
>>> for _ in range(200):  # maximise -|x - 1|^2
...     thetas = es.ask()
...     es.tell(-((thetas - 1.0) ** 2).sum(1))
>>> np.round(es.solution, 1)
array([1., 1., 1.])
"""

from __future__ import annotations

import numpy as np

from scratchgrad import nn, optim
from scratchgrad.creation import tensor


def centered_ranks(fitness: np.ndarray) -> np.ndarray:
    """Ranks scaled to [-0.5, 0.5] (Salimans et al.'s fitness shaping); equal fitnesses are
    ranked by their index, so the result does not depend on the sort's whims.

    >>> centered_ranks(np.array([3.0, 1.0, 2.0, 1.0]))
    array([ 0.5       , -0.5       ,  0.16666667, -0.16666667])
    """
    ranks = np.empty(len(fitness))
    ranks[np.argsort(fitness, kind="stable")] = np.arange(len(fitness))
    return ranks / (len(fitness) - 1) - 0.5


def _checked_x0(name: str, x0, sigma: float, popsize: int | None) -> np.ndarray:
    """``x0`` as a float64 vector, after checking the arguments every strategy takes
    (``popsize=None``: pycma's default, checked by pycma)."""
    x0 = np.asarray(x0, dtype=np.float64)
    if x0.ndim != 1 or x0.size == 0:
        raise ValueError(f"{name}: x0 must be a non-empty 1-D vector, got shape {x0.shape}")
    if not np.isfinite(x0).all():
        raise ValueError(
            f"{name}: x0 must be finite, got NaN/inf at {np.flatnonzero(~np.isfinite(x0))}"
        )
    if not 0 < sigma < np.inf:
        raise ValueError(f"{name}: sigma must be positive and finite, got {sigma}")
    if popsize is not None and (not isinstance(popsize, int) or popsize < 2):
        raise ValueError(f"{name}: popsize must be an int >= 2, got {popsize!r}")
    return x0


class _Strategy:
    """What the three share: argument checks and the ask-then-tell bookkeeping."""

    def __init__(self, x0, sigma: float, popsize: int, seed: int):
        self.x0 = _checked_x0(type(self).__name__, x0, sigma, popsize)
        self.sigma, self.popsize, self.seed = sigma, popsize, seed
        self.generation = 0
        self._asked: np.ndarray | None = None

    def ask(self) -> np.ndarray:
        """The population to evaluate, ``(popsize, dim)``; asking again before ``tell`` returns
        the same population."""
        if self._asked is None:
            self._asked = self._sample()
        return self._asked.copy()

    def tell(self, fitness) -> None:
        """Update the search from one fitness per member of the last ``ask()`` (higher is
        better)."""
        fitness = np.asarray(fitness, dtype=np.float64)
        name = type(self).__name__
        if self._asked is None:
            raise RuntimeError(f"{name}.tell: call ask() first")
        if fitness.shape != (self.popsize,) or not np.isfinite(fitness).all():
            raise ValueError(
                f"{name}.tell: expected {self.popsize} finite fitness values, got shape "
                f"{fitness.shape}" + ("" if fitness.shape != (self.popsize,) else " with NaN/inf")
            )
        self._update(self._asked, fitness)
        self._asked = None
        self.generation += 1

    def _sample(self) -> np.ndarray:
        raise NotImplementedError

    def _update(self, population: np.ndarray, fitness: np.ndarray) -> None:
        raise NotImplementedError


class OpenAIES(_Strategy):
    """OpenAI's evolution strategy (Salimans et al. 2017, https://arxiv.org/abs/1703.03864).

    Mirrored sampling (members ``theta + sigma * eps`` and ``theta - sigma * eps``), centred-rank
    fitness shaping, the gradient estimate ``sum_j (r+_j - r-_j) eps_j / popsize`` as in OpenAI's
    code, and a scratchgrad optimizer (``"adam"`` or ``"sgd"`` with momentum 0.9) stepping
    ``theta`` along it, with L2 ``weight_decay``. The noise of generation ``g`` is regenerated
    from the seed ``(seed, g)``: nothing else is needed to rebuild any member.
    """

    def __init__(
        self,
        x0,
        sigma: float = 0.02,
        popsize: int = 256,
        lr: float = 0.01,
        seed: int = 0,
        *,
        weight_decay: float = 0.005,
        optimizer: str = "adam",
    ):
        super().__init__(x0, sigma, popsize, seed)
        if popsize % 2:
            raise ValueError(f"OpenAIES: popsize must be even (mirrored pairs), got {popsize}")
        if optimizer not in ("adam", "sgd"):
            raise ValueError(f"OpenAIES: optimizer must be 'adam' or 'sgd', got {optimizer!r}")
        self._theta = nn.Parameter(tensor(self.x0.copy()))
        if optimizer == "adam":
            self._optimizer = optim.Adam([self._theta], lr=lr, weight_decay=weight_decay)
        else:
            self._optimizer = optim.SGD(
                [self._theta], lr=lr, momentum=0.9, weight_decay=weight_decay
            )

    @property
    def solution(self) -> np.ndarray:
        """The centre of the search distribution, ``theta``."""
        return self._theta.detach().numpy().copy()

    def noise(self, generation: int) -> np.ndarray:
        """The standard normal directions of a generation: ``eps`` then ``-eps``."""
        half = np.random.default_rng([self.seed, generation]).standard_normal(
            (self.popsize // 2, len(self.x0))
        )
        return np.concatenate([half, -half])

    def _sample(self):
        return self.solution + self.sigma * self.noise(self.generation)

    def _update(self, population, fitness):
        # the noise is regenerated from the seed, not recovered from the population
        gradient = centered_ranks(fitness) @ self.noise(self.generation) / self.popsize
        self._theta.grad = tensor(-gradient)  # the optimizer minimises
        self._optimizer.step()


class CMAES(_Strategy):
    """CMA-ES through the ``cma`` package (pycma): an adapter, not a re-implementation.

    ``options`` go to ``cma.CMAEvolutionStrategy`` (e.g. ``CMA_diagonal=True``); ``popsize=None``
    takes pycma's default ``4 + 3 ln(dim)``. pycma minimises, so fitness is negated. Its samples
    come from this object's own generator (pycma's ``randn`` option), so a seed reproduces a run
    whatever else uses NumPy's global random state.
    """

    def __init__(
        self, x0, sigma: float = 0.1, popsize: int | None = None, seed: int = 0, **options
    ):
        try:
            import cma
        except ImportError as err:
            raise ImportError(
                "CMAES needs the cma package: pip install 'scratchgrad[evo]'"
            ) from err
        x0 = _checked_x0("CMAES", x0, sigma, popsize)  # before pycma, whose errors name no op
        rng = np.random.default_rng(seed)

        def randn(*shape):  # NumPy's legacy randn signature, which pycma calls
            return rng.standard_normal(shape)

        options = {"seed": np.nan, "randn": randn, "verbose": -9, **options}
        if popsize is not None:
            options["popsize"] = popsize
        self._es = cma.CMAEvolutionStrategy(x0, sigma, options)
        super().__init__(x0, sigma, self._es.popsize, seed)

    @property
    def solution(self) -> np.ndarray:
        """The mean of the search distribution (pycma's ``mean``)."""
        return np.array(self._es.mean)

    def _sample(self):
        return np.array(self._es.ask())

    def _update(self, population, fitness):
        self._es.tell(list(population), list(-fitness))


class SimpleGA(_Strategy):
    """A genetic algorithm, the baseline: the best ``truncation`` fraction become parents; the
    ``elite`` best members pass unchanged; every other child is a random parent plus Gaussian
    noise of scale ``sigma`` (as in Such et al. 2017, https://arxiv.org/abs/1712.06567)."""

    def __init__(
        self,
        x0,
        sigma: float = 0.02,
        popsize: int = 256,
        seed: int = 0,
        *,
        truncation: float = 0.2,
        elite: int = 1,
    ):
        super().__init__(x0, sigma, popsize, seed)
        if not 0 < truncation <= 1:
            raise ValueError(f"SimpleGA: truncation must be in (0, 1], got {truncation}")
        self.num_parents = max(1, int(truncation * popsize))
        if not 0 <= elite <= self.num_parents:
            raise ValueError(f"SimpleGA: elite must be in [0, {self.num_parents}], got {elite}")
        self.elite = elite
        self._rng = np.random.default_rng(seed)
        self._population = self._mutate(np.repeat(self.x0[None], popsize, axis=0))
        self._population[0] = self.x0
        self._best = self.x0.copy()

    @property
    def solution(self) -> np.ndarray:
        """The best member of the last generation told (``x0`` before any)."""
        return self._best.copy()

    def _mutate(self, parents: np.ndarray) -> np.ndarray:
        return parents + self.sigma * self._rng.standard_normal(parents.shape)

    def _sample(self):
        return self._population.copy()

    def _update(self, population, fitness):
        order = np.argsort(-fitness, kind="stable")  # best first; ties by index
        parents = population[order[: self.num_parents]]
        picks = self._rng.integers(self.num_parents, size=self.popsize - self.elite)
        self._population = np.concatenate([parents[: self.elite], self._mutate(parents[picks])])
        self._best = parents[0].copy()
