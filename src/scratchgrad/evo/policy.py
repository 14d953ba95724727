"""A population of small MLP policies evaluated as one batched computation.

Member ``p`` of a population is one flat parameter vector ``thetas[p]``, laid out as the
``state_dict`` of ``nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 2))`` (each
weight ``(out, in)`` then its bias), so a single member loads into that module unchanged. The
whole population runs as stacked arrays ``(P, ...)``: one batched matmul per layer for all
members and all their environments at once, never a loop over members.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral

import numpy as np

from scratchgrad import nn
from scratchgrad.backend import default_generator, float32
from scratchgrad.creation import tensor
from scratchgrad.evo.envs import VectorEnv
from scratchgrad.tensor import Tensor


class MLPPolicy:
    """Tanh MLPs of the layer ``sizes`` (e.g. ``(4, 32, 2)``), for a whole population at once.

    >>> policy = MLPPolicy((4, 32, 2))
    >>> policy.num_params
    226
    >>> thetas = np.zeros((5, 226))
    >>> policy(thetas, np.ones((5, 3, 4))).shape  # 5 members, 3 observations each
    (5, 3, 2)
    """

    def __init__(self, sizes: Sequence[int]):
        self.sizes = tuple(sizes)
        if len(self.sizes) < 2 or not all(
            isinstance(size, Integral) and size > 0 for size in self.sizes
        ):
            raise ValueError(
                f"MLPPolicy: sizes must be two or more positive ints (input, hidden..., output), "
                f"got {sizes!r}"
            )
        # (name, shape) in the state_dict's order; layer i of nn.Sequential sits at index 2i
        self.shapes = []
        for i, (n_in, n_out) in enumerate(zip(self.sizes[:-1], self.sizes[1:])):
            self.shapes += [(f"{2 * i}.weight", (n_out, n_in)), (f"{2 * i}.bias", (n_out,))]
        self.num_params = sum(int(np.prod(shape)) for _, shape in self.shapes)

    @classmethod
    def for_env(cls, env: VectorEnv | type[VectorEnv], hidden: int = 32) -> MLPPolicy:
        """observation -> ``hidden`` tanh units -> one output per action (or action size)."""
        return cls((env.observation_size, hidden, env.num_actions or env.action_size))

    def unflatten(self, thetas: np.ndarray) -> list[np.ndarray]:
        """The (P, ...) parameter arrays of each tensor of the state_dict, as views."""
        arrays, start = [], 0
        for _, shape in self.shapes:
            size = int(np.prod(shape))
            arrays.append(thetas[:, start : start + size].reshape(len(thetas), *shape))
            start += size
        return arrays

    def __call__(self, thetas: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """Outputs ``(P, N, out)`` of the P members on their observations ``(P, N, in)``."""
        # (a 2-D or 4-D obs would broadcast against the stacked weights: every member applied
        # to every member's observations)
        if (
            thetas.ndim != 2
            or thetas.shape[1] != self.num_params
            or obs.shape[:1] + obs.shape[2:] != (len(thetas), self.sizes[0])
        ):
            raise ValueError(
                f"MLPPolicy{self.sizes}: parameters of shape {thetas.shape} and observations of "
                f"shape {obs.shape}; expected (P, {self.num_params}) and (P, N, {self.sizes[0]})"
            )
        arrays = self.unflatten(thetas)
        x = obs
        for layer in range(len(arrays) // 2):
            weight, bias = arrays[2 * layer], arrays[2 * layer + 1]
            # a contiguous (P, in, out) copy: batched matmul runs faster on it than on the view
            x = x @ np.ascontiguousarray(weight.transpose(0, 2, 1)) + bias[:, None, :]
            if layer < len(arrays) // 2 - 1:
                x = np.tanh(x)
        return x

    def module(self, theta: np.ndarray | None = None) -> nn.Sequential:
        """One member as an ``nn.Sequential`` (default initialisation when ``theta`` is None)."""
        layers: list[nn.Module] = []
        for n_in, n_out in zip(self.sizes[:-1], self.sizes[1:]):
            layers += [nn.Linear(n_in, n_out), nn.Tanh()]
        model = nn.Sequential(*layers[:-1])
        if theta is not None:
            model.load_state_dict(self.state_dict(theta))
        return model

    def state_dict(self, theta: np.ndarray) -> dict[str, Tensor]:
        """One member's parameters as float32 tensors under the module's names."""
        arrays = self.unflatten(np.asarray(theta)[None])
        return {
            name: tensor(array[0], dtype=float32) for (name, _), array in zip(self.shapes, arrays)
        }

    def initial_params(self, seed: int = 0) -> np.ndarray:
        """A flat float64 vector: the parameters of a freshly initialised module (PyTorch's
        default init of nn.Linear) drawn with the generator seeded by ``seed``; the library's
        generator is left as it was, so ``evo.run`` does not reseed the caller's."""
        # its whole state: restoring only its NumPy generator left initial_seed() at ``seed``,
        # and a global manual_seed would also reseed the other devices' generators
        saved = default_generator.get_state()
        try:
            default_generator.manual_seed(seed)
            state = self.module().state_dict()
        finally:
            default_generator.set_state(saved)
        return np.concatenate([state[name].numpy().ravel() for name, _ in self.shapes]).astype(
            np.float64
        )


def actions_from_outputs(env: VectorEnv, outputs: np.ndarray) -> np.ndarray:
    """Discrete envs take the argmax output; continuous ones ``max_action * tanh(outputs)``."""
    if env.num_actions:
        return outputs.argmax(-1)
    return env.max_action * np.tanh(outputs)
