"""Train 1,000 XOR networks at once, each with its own learning rate, and count how many
solve XOR.

The population is one network over stacked parameters (``stack_module_state``): ``vmap`` runs
``functional_call`` for all 1,000 in one pass of batched matrix products, and
``vmap(grad_and_value(loss))`` gives every network its own gradient. Each network's learning
rate is one more batched input, so the update is one line for the whole population.

    python examples/xor_population.py [--networks 1000] [--steps 500] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.func import functional_call, grad_and_value, stack_module_state, vmap

X = sg.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
Y = sg.tensor([[-1.0], [1.0], [1.0], [-1.0]])


def network() -> nn.Module:
    return nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1))


def train(networks: int, steps: int, seed: int = 0) -> tuple[dict, sg.Tensor, nn.Module]:
    """Train ``networks`` XOR nets by full-batch SGD, learning rates spread log-uniformly over
    [0.01, 0.2]; return the stacked parameters, the learning rates and the base network."""
    sg.manual_seed(seed)
    models = [network() for _ in range(networks)]
    params, _ = stack_module_state(models)
    params = {name: p.detach() for name, p in params.items()}  # updated by hand below
    lrs = 10 ** sg.linspace(-2, -0.7, networks)
    base = models[0]

    def loss(member_params):
        return nn.functional.mse_loss(functional_call(base, member_params, (X,)), Y)

    gradients_and_losses = vmap(grad_and_value(loss))
    for _ in range(steps):
        grads, _ = gradients_and_losses(params)
        params = {
            name: p - lrs.reshape(-1, *(1,) * (p.ndim - 1)) * grads[name]
            for name, p in params.items()
        }
    return params, lrs, base


def solved(params: dict, base: nn.Module) -> sg.Tensor:
    """Which networks put all four points on the right side of 0."""
    outputs = vmap(lambda p: functional_call(base, p, (X,)))(params)  # (networks, 4, 1)
    return ((outputs > 0) == (Y > 0)).all(dim=1).squeeze(-1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--networks", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    start = time.perf_counter()
    params, lrs, base = train(args.networks, args.steps, args.seed)
    seconds = time.perf_counter() - start
    ok = solved(params, base)
    count = int(ok.sum())
    print(
        f"{count} of {args.networks} networks solved XOR after {args.steps} steps "
        f"({seconds:.2f} s: {seconds / args.steps * 1e3:.2f} ms per step for all of them)"
    )
    for lr, chunk in zip(lrs.chunk(4), ok.chunk(4)):
        print(
            f"  lr {lr[0].item():.3f} to {lr[-1].item():.3f}: {int(chunk.sum())} of "
            f"{len(chunk)} solved"
        )
    return count


if __name__ == "__main__":
    main()
