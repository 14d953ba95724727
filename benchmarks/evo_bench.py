"""P2 and P3: one OpenAI-ES generation of 1,024 CartPole-v1 policies (4-32-2 tanh MLPs).

A step is one generation: sample the mirrored population around ``x0``, play one episode per
member (all from the same seed, up to 500 steps), rank the returns and take an Adam step.
``x0`` balances the pole (see ``workloads.balancing_policy``), so nearly every episode runs all
500 steps and the work per generation stays the same as the search moves.

- ``scratchgrad``: ``evo.OpenAIES`` with the batched NumPy environment and the whole population
  as stacked arrays (``evo.evaluate``), in this process.
- ``ray``: the same through ``evo``'s Ray backend, two actors on a local Ray instance.
- ``pytorch``: Gymnasium's ``SyncVectorEnv`` of 1,024 ``CartPole-v1`` environments, the policies
  as one batched PyTorch computation (``torch.baddbmm``), the same ranking and a PyTorch Adam.

The first "loss" is the mean return of the first generation: equal across the three, since the
environments agree step for step and the policies compute the same actions.
"""

from __future__ import annotations

import numpy as np

ENV_ID = "CartPole-v1"


def make_step(framework: str, problem):
    """``(step, first mean return)`` for one framework."""
    if framework == "pytorch":
        return _gymnasium_pytorch_step(problem)
    return _scratchgrad_step(problem, backend="ray" if framework == "ray" else "local")


def _scratchgrad_step(problem, backend: str):
    from scratchgrad import evo
    from scratchgrad.evo.run import LocalBackend

    x0, extra = problem.params[0], problem.extra
    policy = evo.MLPPolicy(problem.sizes)
    es = evo.OpenAIES(x0, sigma=extra["sigma"], popsize=extra["popsize"], lr=problem.lr, seed=0)
    if backend == "ray":
        import ray

        from scratchgrad.evo.ray_backend import RayBackend

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        evaluator = RayBackend(ENV_ID, policy, num_actors=2)
    else:
        evaluator = LocalBackend(ENV_ID, policy)

    def step():
        fitness = evaluator.evaluate(es.ask(), [extra["episode_seed"]])
        es.tell(fitness)
        return fitness.mean()

    return step, step()


def _gymnasium_pytorch_step(problem):
    import gymnasium as gym
    import torch

    from scratchgrad.evo import centered_ranks  # the same shaping; a few microseconds

    x0, extra = problem.params[0], problem.extra
    popsize, sigma = extra["popsize"], extra["sigma"]
    envs = gym.make_vec(ENV_ID, num_envs=popsize, vectorization_mode="sync")
    theta = torch.tensor(x0, requires_grad=True)
    adam = torch.optim.Adam([theta], lr=problem.lr, weight_decay=0.005)
    n_in, n_hidden, n_out = problem.sizes
    generation = 0

    @torch.no_grad()
    def episode_returns(thetas: torch.Tensor) -> np.ndarray:
        w1, b1, w2, b2 = torch.split(
            thetas, [n_hidden * n_in, n_hidden, n_out * n_hidden, n_out], dim=1
        )
        w1t = w1.reshape(popsize, n_hidden, n_in).transpose(1, 2)
        w2t = w2.reshape(popsize, n_out, n_hidden).transpose(1, 2)
        obs, _ = envs.reset(seed=[extra["episode_seed"]] * popsize)
        returns = np.zeros(popsize)
        running = np.ones(popsize, dtype=bool)
        for _ in range(500):
            x = torch.from_numpy(obs).double().unsqueeze(1)
            hidden = torch.tanh(torch.baddbmm(b1.unsqueeze(1), x, w1t))
            logits = torch.baddbmm(b2.unsqueeze(1), hidden, w2t).squeeze(1)
            obs, reward, terminated, truncated, _ = envs.step(logits.argmax(1).numpy())
            returns += np.where(running, reward, 0.0)
            running &= ~(terminated | truncated)
            if not running.any():
                break
        return returns

    def step():
        nonlocal generation
        # the same stream as evo.OpenAIES(seed=0).noise(generation)
        half = np.random.default_rng([0, generation]).standard_normal((popsize // 2, len(x0)))
        noise = torch.from_numpy(np.concatenate([half, -half]))
        fitness = episode_returns(theta.detach() + sigma * noise)
        gradient = torch.from_numpy(centered_ranks(fitness)) @ noise / popsize
        theta.grad = -gradient
        adam.step()
        generation += 1
        return fitness.mean()

    return step, step()
