"""The `scratchgrad` command line (also `python -m scratchgrad`).

    scratchgrad demo xor        train MLP(2, [4, 1]) on XOR with the scalar engine
    scratchgrad demo circle     train MLP(2, [8, 8, 1]) to tell points inside a circle
    scratchgrad graph OUT.svg   draw the graph of one tanh neuron (.svg, .png or .pdf)
    scratchgrad train           train a CNN (--model mlp: an MLP) on the shipped digits;
                                --task charlm: a small GPT or LSTM on the shipped Shakespeare;
                                --amp bf16|fp16: mixed precision; --nproc N: data-parallel
    scratchgrad sample CKPT     continue a prompt with a charlm checkpoint
    scratchgrad export CKPT     a trained digit classifier as C (float or int8) or ONNX
    scratchgrad evolve TASK     evolve a policy for cartpole, acrobot or pendulum with OpenAI-ES
                                (--strategy cmaes or ga; --backend ray)

Each command is a subparser whose `func` default receives the parsed arguments, so a new command
is one `add_parser` call plus its function. A user's mistake (a bad value, an unwritable path, a
missing program) ends with one line `scratchgrad: error: ...` and exit status 1, or 2 for a usage
error; `scratchgrad --debug ...` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from scratchgrad import evolve, train
from scratchgrad.argtypes import nonnegative_int, positive_float, positive_int
from scratchgrad.export import command as export_command
from scratchgrad.scalar import MLP, Value


@dataclass
class DemoResult:
    """How a demo ended: the last step's loss, and how many training points it gets right."""

    loss: float
    correct: int
    total: int


def xor_data() -> tuple[list[list[float]], list[float]]:
    """The XOR truth table: inputs in {0, 1}^2, target 1 where exactly one input is 1."""
    xs = [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]
    return xs, [0.0, 1.0, 1.0, 0.0]


def circle_data(rng: random.Random, n: int = 60) -> tuple[list[list[float]], list[float]]:
    """`n` points uniform in [-1, 1]^2, labelled +1 inside the circle x0^2 + x1^2 < 0.5, else -1."""
    xs = [[rng.uniform(-1, 1), rng.uniform(-1, 1)] for _ in range(n)]
    return xs, [1.0 if x0 * x0 + x1 * x1 < 0.5 else -1.0 for x0, x1 in xs]


def fit(
    model: MLP,
    xs: list[list[float]],
    ys: list[float],
    lrs: Sequence[float],
    threshold: float,
    progress: bool = True,
) -> DemoResult:
    """Full-batch gradient descent on the mean squared error, one step per entry of `lrs`.

    A prediction counts as correct when it lies on the same side of `threshold` as its target.
    With `progress`, a tqdm bar shows the loss and accuracy of each step, and a line is printed
    at every tenth of the run.
    """
    params = model.parameters()
    report_every = max(1, len(lrs) // 10)
    bar = tqdm(lrs, desc="training", unit="step", disable=not progress)
    for step, lr in enumerate(bar, 1):
        preds = [model(x) for x in xs]
        loss = sum((p - y) ** 2 for p, y in zip(preds, ys)) / len(ys)
        model.zero_grad()
        loss.backward()
        for p in params:
            p.data -= lr * p.grad
        correct = sum((p.data > threshold) == (y > threshold) for p, y in zip(preds, ys))
        bar.set_postfix(loss=f"{loss.data:.4f}", acc=f"{correct}/{len(ys)}", refresh=False)
        if progress and step % report_every == 0:
            bar.write(f"step {step:4d}  loss {loss.data:.4f}  accuracy {correct}/{len(ys)}")
    preds = [model(x) for x in xs]  # the accuracy the final weights reach
    correct = sum((p.data > threshold) == (y > threshold) for p, y in zip(preds, ys))
    return DemoResult(loss.data, correct, len(ys))


def demo_xor(seed: int = 0, progress: bool = True) -> DemoResult:
    """MLP(2, [4, 1]) with tanh, MSE, SGD at lr 0.3 for 500 steps: learns XOR (4/4)."""
    xs, ys = xor_data()
    model = MLP(2, [4, 1], rng=random.Random(seed))
    return fit(model, xs, ys, [0.3] * 500, threshold=0.5, progress=progress)


def demo_circle(seed: int = 0, progress: bool = True) -> DemoResult:
    """MLP(2, [8, 8, 1]) with tanh on 60 random points, MSE, 100 SGD steps at lr 0.1 then 100
    at lr 0.03."""
    rng = random.Random(seed)
    xs, ys = circle_data(rng)
    model = MLP(2, [8, 8, 1], rng=rng)
    return fit(model, xs, ys, [0.1] * 100 + [0.03] * 100, threshold=0.0, progress=progress)


DEMOS = {"xor": demo_xor, "circle": demo_circle}


def neuron_graph() -> Value:
    """The classic example to draw: one tanh neuron, x1*w1 + x2*w2 + b, after backward()."""
    # b is chosen (as in Karpathy's micrograd lecture) so that the output is tanh(0.8814) = 0.7071
    x1, x2, w1, w2, b = Value(2.0), Value(0.0), Value(-3.0), Value(1.0), Value(6.8813735870195432)
    out = (x1 * w1 + x2 * w2 + b).tanh()
    out.backward()
    return out


def _run_demo(args: argparse.Namespace) -> int:
    result = DEMOS[args.name](seed=args.seed)
    print(
        f"{args.name}: final loss {result.loss:.4f}, "
        f"accuracy {result.correct}/{result.total} ({100 * result.correct / result.total:.1f}%)"
    )
    return 0


def _run_graph(args: argparse.Namespace) -> int:
    from scratchgrad import viz  # it needs graphviz (the viz extra): only this command does

    out = Path(args.out)
    fmt = out.suffix.lstrip(".") or "svg"
    try:
        path = viz.draw_dot(neuron_graph(), format=fmt).render(outfile=out, cleanup=True)
    except viz.graphviz.ExecutableNotFound:
        raise RuntimeError(
            "graph: Graphviz's `dot` program is not on PATH; install Graphviz "
            "(e.g. `apt install graphviz` or `brew install graphviz`)"
        ) from None
    print(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: one subparser per command, each setting `func`."""
    parser = argparse.ArgumentParser(prog="scratchgrad", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="train a small network with the scalar engine")
    demo.add_argument("name", choices=sorted(DEMOS))
    demo.add_argument("--seed", type=nonnegative_int, default=0, help="seed for data and weights")
    demo.set_defaults(func=_run_demo)

    graph = commands.add_parser("graph", help="draw a small example's computation graph")
    graph.add_argument("out", help="output file; its suffix picks the format (.svg, .png)")
    graph.set_defaults(func=_run_graph)

    training = commands.add_parser(
        "train", help="train a digit classifier or a character-level language model"
    )
    train.add_arguments(training)
    training.set_defaults(func=train.main)

    sample = commands.add_parser("sample", help="sample text from a charlm checkpoint")
    sample.add_argument("checkpoint", type=Path, help="a .safetensors file of train --task charlm")
    sample.add_argument("--prompt", default="\n", help="the text to continue (default: a newline)")
    sample.add_argument("--length", type=positive_int, default=500, help="characters to add")
    sample.add_argument("--temperature", type=positive_float, default=0.8)
    sample.add_argument("--top-k", type=positive_int, help="sample among the k likeliest only")
    sample.add_argument("--seed", type=nonnegative_int, default=0)
    sample.set_defaults(func=_run_sample)

    export = commands.add_parser(
        "export", help="export a trained digit classifier to C (float or int8) or ONNX"
    )
    export_command.add_arguments(export)
    export.set_defaults(func=export_command.main)

    evolve_parser = commands.add_parser(
        "evolve",
        help="evolve a control policy (cartpole, acrobot, pendulum) with an evolution strategy",
        description=evolve.DESCRIPTION,
    )
    evolve.add_arguments(evolve_parser)
    evolve_parser.set_defaults(func=evolve.main)
    return parser


def _run_sample(args: argparse.Namespace) -> int:
    from scratchgrad import charlm  # the tensor engine, needed only for this command

    return charlm.sample_main(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    >>> main(["graph", "neuron.svg"])  # doctest: +SKIP
    wrote neuron.svg
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except EXPECTED_FAILURES as error:
        if args.debug:
            raise
        print(f"{parser.prog}: error: {_one_line(error)}", file=sys.stderr)
        return 1


# What a user's mistake or environment raises: a file that is missing or unwritable (OSError), a
# bad value or file content (ValueError), a missing optional package (ImportError), a failed
# operation or a missing program such as Graphviz's dot (RuntimeError), a diverged run
# (ArithmeticError). Anything else is a bug and keeps its traceback.
EXPECTED_FAILURES = (OSError, ValueError, ImportError, RuntimeError, ArithmeticError)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__
