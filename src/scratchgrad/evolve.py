"""``scratchgrad evolve TASK``: evolve a control policy with an evolution strategy.

The whole population (256 tanh MLPs by default) plays its episodes at once in a batched
environment; the strategy (OpenAI-ES by default) moves the population toward the better
returns. The run prints the best and mean return of every generation, then the final policy's
mean return over 100 fresh episodes, and writes the policy as safetensors (loadable into
``policy.module()``: an ``nn.Sequential``) and the fitness curve as a PNG.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import scratchgrad as sg
from scratchgrad import evo
from scratchgrad.argtypes import nonnegative_int, positive_float, positive_int
from scratchgrad.evo.run import DEFAULT_OPTIONS, STRATEGIES
from scratchgrad.train import prepare_out

# task -> (environment, the mean return over 100 fresh episodes that counts as solved)
TASKS = {
    "cartpole": ("CartPole-v1", 475.0),
    "acrobot": ("Acrobot-v1", -100.0),
    "pendulum": ("Pendulum-v1", -200.0),
}
FRESH_EPISODES = 100
DESCRIPTION = "Evolve a tanh MLP policy with an evolution strategy. Tasks: " + ", ".join(
    f"{task} ({env_id}, solved at mean return >= {target:g})"
    for task, (env_id, target) in TASKS.items()
)


def plot_curve(result: evo.RunResult, path: Path, target: float) -> bool:
    """Best and mean fitness per generation as a PNG; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    generations = range(1, len(result.best_fitness) + 1)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(generations, result.best_fitness, label="best member")
    ax.plot(generations, result.mean_fitness, label="population mean")
    ax.axhline(target, color="gray", linestyle="--", linewidth=1, label=f"solved ({target:g})")
    ax.set(
        title=f"{result.strategy} on {result.env_id} (population {result.popsize})",
        xlabel="generation",
        ylabel="return",
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "task", choices=sorted(TASKS), metavar="TASK", help=", ".join(sorted(TASKS))
    )
    parser.add_argument("--strategy", choices=sorted(STRATEGIES), default="openai-es")
    parser.add_argument("--population", type=positive_int, default=256)
    parser.add_argument("--generations", type=positive_int, default=50)
    parser.add_argument(
        "--sigma", type=positive_float, help="mutation scale (default: 0.1; 0.5 for cmaes)"
    )
    parser.add_argument("--episodes", type=positive_int, default=1, help="per member")
    parser.add_argument("--backend", choices=["local", "ray"], default="local")
    parser.add_argument("--num-actors", type=positive_int, help="Ray actors (default: CPUs)")
    parser.add_argument("--seed", type=nonnegative_int, default=0)
    parser.add_argument(
        "--out", type=Path, default=Path("runs/evolve"), help="folder for the policy and curve"
    )


def main(args: argparse.Namespace) -> int:
    env_id, target = TASKS[args.task]
    prepare_out(args.out, "evolve")
    options = {} if args.sigma is None else {"sigma": args.sigma}
    print(
        f"{args.task}: {args.strategy} ({DEFAULT_OPTIONS[args.strategy] | options}), population "
        f"{args.population}, {args.generations} generations, {args.backend} backend"
    )
    start = time.perf_counter()

    def report(generation: int, fitness: np.ndarray) -> None:
        tqdm.write(
            f"generation {generation + 1:>3}: best {fitness.max():8.1f}  mean {fitness.mean():8.1f}"
        )

    result = evo.run(
        env_id,
        args.strategy,
        args.generations,
        args.population,
        args.seed,
        args.backend,
        args.num_actors,
        episodes=args.episodes,
        progress=True,
        callback=report,
        **options,
    )
    fresh = evo.fresh_returns(result, FRESH_EPISODES)
    stem = f"{args.task}_{args.strategy}"
    checkpoint = args.out / f"{stem}.safetensors"
    sg.save(result.policy.state_dict(result.best_params), checkpoint)
    print(f"policy: {checkpoint} (for evo.MLPPolicy({result.policy.sizes}).module())")
    curve = args.out / f"{stem}_curve.png"
    if plot_curve(result, curve, target):
        print(f"curve: {curve}")
    else:
        print("curve: install matplotlib (pip install 'scratchgrad[plot]') to get the plot")
    verdict = "solved" if fresh.mean() >= target else "not solved"
    print(
        f"final policy: mean return {fresh.mean():.1f} over {FRESH_EPISODES} fresh episodes "
        f"({verdict}: target {target:g}) in {time.perf_counter() - start:.1f} s"
    )
    return 0
