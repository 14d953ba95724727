"""``scratchgrad train``: train a digit classifier from scratch on the shipped 8x8 digits.

Everything here is ordinary PyTorch-style code over scratchgrad: a model, a DataLoader, an
optimizer and a loop. The same program in plain PyTorch style is ``examples/train_digits.py``.
Started by ``mpiexec -n N`` (or with ``--nproc N``, which starts it so), it trains data-parallel:
each process its ``DistributedSampler`` share of every epoch, ``DistributedDataParallel``
averaging the gradients, and only the first process printing and saving.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import scratchgrad as sg
from scratchgrad import distributed as dist
from scratchgrad import nn
from scratchgrad.argtypes import nonnegative_int, positive_float, positive_int
from scratchgrad.backend import keep_freed_memory
from scratchgrad.nn import functional as F
from scratchgrad.nn.parallel import DistributedDataParallel
from scratchgrad.utils.data import DataLoader, DistributedSampler, TensorDataset

OPTIMIZERS = {
    "adam": sg.optim.Adam,
    "adamw": sg.optim.AdamW,
    "sgd": sg.optim.SGD,
    "rmsprop": sg.optim.RMSprop,
}
DEFAULTS = {"cnn": {"epochs": 10, "lr": 3e-3}, "mlp": {"epochs": 20, "lr": 3e-3}}
AMP_DTYPES = {"bf16": sg.bfloat16, "fp16": sg.float16}


def build_model(name: str, hidden: int = 128) -> nn.Module:
    """The two models: a small CNN with batch norm (about 10k parameters) and a
    one-hidden-layer MLP with ``hidden`` units (the CNN ignores ``hidden``)."""
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(32 * 4 * 4, 10),
        )  # fmt: skip
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))
    raise ValueError(f"train: unknown model {name!r}; choose 'cnn' or 'mlp'")


def split_digits(seed: int, test_fraction: float = 0.2):
    """The shipped digits, shuffled with ``seed`` and split into train and held-out test."""
    images, labels = sg.datasets.load_digits()
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = int(len(labels) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return (images[train], labels[train]), (images[test], labels[test])


@sg.no_grad()
def evaluate(model: nn.Module, images: sg.Tensor, labels: sg.Tensor) -> tuple[float, np.ndarray]:
    """Accuracy on (images, labels) in eval mode, and the predicted classes."""
    model.eval()
    predicted = model(images).argmax(1)
    model.train()
    return (predicted == labels).float().mean().item(), predicted.cpu().numpy()


def confusion_matrix(predicted: np.ndarray, labels: np.ndarray, classes: int = 10) -> np.ndarray:
    """Counts of (true class, predicted class) pairs."""
    matrix = np.zeros((classes, classes), dtype=np.int64)
    np.add.at(matrix, (labels, predicted), 1)
    return matrix


def format_confusion(matrix: np.ndarray) -> str:
    header = "true\\pred " + " ".join(f"{c:>4}" for c in range(len(matrix)))
    rows = [f"{t:>9} " + " ".join(f"{n:>4}" for n in row) for t, row in enumerate(matrix)]
    return "\n".join([header, *rows])


def plot_curves(history: dict, path: Path) -> bool:
    """Loss and accuracy per epoch as a PNG; False when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    epochs = range(1, len(history["loss"]) + 1)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    left.plot(epochs, history["loss"], marker="o")
    left.set(title="training loss", xlabel="epoch", ylabel="cross-entropy")
    right.plot(epochs, history["train_acc"], marker="o", label="train")
    right.plot(epochs, history["test_acc"], marker="o", label="test (held out)")
    right.set(title="accuracy", xlabel="epoch", ylim=(0.8, 1.0))
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def train(
    model_name: str = "cnn",
    epochs: int | None = None,
    lr: float | None = None,
    batch_size: int = 32,
    optimizer: str = "adam",
    seed: int = 0,
    out: Path | None = Path("runs/digits"),
    progress: bool = True,
    hidden: int = 128,
    amp: str | None = None,
    device: str = "cpu",
    jit: bool = False,
) -> dict:
    """Train on the digits and return the history (loss, train/test accuracy per epoch).

    The checkpoint's ``"meta"`` entry records the model's name and configuration, so that
    ``rebuild_model`` (and ``scratchgrad export``) can make the model again from the file.
    ``out`` is created and checked writable first, so a run is never lost to a checkpoint that
    cannot be written; a loss that becomes NaN or infinite stops the run (FloatingPointError).
    ``amp`` ("bf16" or "fp16") runs the forward pass under autocast; fp16 scales the loss with a
    GradScaler, whose skipped steps are not errors. ``device`` ("cuda" with scratchgrad[cuda])
    is where the model and each batch live; the checkpoint is the same from any device.
    ``jit`` runs each training step (forward, backward, optimizer update) under
    ``scratchgrad.jit``: recorded per batch shape, then replayed (docs/jit.md); the results
    are those of the eager steps.
    In a process that ``mpiexec`` started (``WORLD_SIZE`` > 1), it trains data-parallel with
    the others: ``batch_size`` is then each process's, and the losses and accuracies printed
    and returned are over all of them.
    """
    epochs = DEFAULTS[model_name]["epochs"] if epochs is None else epochs
    lr = DEFAULTS[model_name]["lr"] if lr is None else lr
    if epochs < 1:
        raise ValueError(f"train: epochs must be at least 1, got {epochs}")
    check_replayable(jit, amp)
    if out is not None:
        prepare_out(Path(out))
    distributed = _launched_world_size() > 1
    if distributed:
        dist.init_process_group("mpi")
    first_process = not distributed or dist.get_rank() == 0
    say = print if first_process else _quiet
    sg.manual_seed(seed)
    (train_x, train_y), (test_x, test_y) = split_digits(seed)
    test_x, test_y = test_x.to(device), test_y.to(device)
    dataset = TensorDataset(train_x, train_y)
    sampler = DistributedSampler(dataset, seed=seed) if distributed else None
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=not distributed,
        sampler=sampler,
        generator=None if distributed else sg.Generator(seed),
    )
    config = {"hidden": hidden} if model_name == "mlp" else {}
    model = build_model(model_name, **config).to(device)
    net = DistributedDataParallel(model) if distributed else model  # what the steps run
    opt = OPTIMIZERS[optimizer](model.parameters(), lr=lr)
    schedule = sg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    history = {"loss": [], "train_acc": [], "test_acc": []}
    autocast = sg.autocast("cpu", dtype=AMP_DTYPES.get(amp), enabled=amp is not None)
    scaler = sg.amp.GradScaler(enabled=amp == "fp16")

    def train_step(images: sg.Tensor, labels: sg.Tensor) -> tuple[sg.Tensor, sg.Tensor]:
        """One update; the batch's loss and its number of correct predictions."""
        with autocast:
            logits = net(images)
            loss = F.cross_entropy(logits, labels)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss.detach(), (logits.argmax(1) == labels).sum()

    if jit:
        train_step = sg.jit(train_step)
    say(
        f"{model_name}: {sum(p.numel() for p in model.parameters()):,} parameters, "
        f"{len(train_y)} training and {len(test_y)} held-out images"
    )
    for epoch in range(1, epochs + 1):
        total_loss = correct = seen = 0
        if sampler is not None:
            sampler.set_epoch(epoch)  # a new shuffle each epoch, the same in every process
        bar = tqdm(
            loader,
            desc=f"epoch {epoch}/{epochs}",
            leave=False,
            disable=not (progress and first_process),
        )
        for step, (images, labels) in enumerate(bar, 1):
            images, labels = images.to(device), labels.to(device)
            loss, hits = train_step(images, labels)
            value = loss.item()
            if not math.isfinite(value):  # the run stops here: the step's update is never saved
                raise FloatingPointError(
                    f"train: the loss became {value} at epoch {epoch}, step {step}; "
                    f"try a smaller learning rate than {lr}"
                )
            total_loss += value * len(labels)
            correct += hits.item()
            seen += len(labels)
            bar.set_postfix(
                loss=f"{total_loss / seen:.4f}", acc=f"{correct / seen:.3f}", refresh=False
            )
        schedule.step()
        if distributed:
            total_loss, correct, seen = _summed_over_processes(total_loss, correct, seen)
        test_acc, predicted = evaluate(model, test_x, test_y)
        history["loss"].append(total_loss / seen)
        history["train_acc"].append(correct / seen)
        history["test_acc"].append(test_acc)
        say(
            f"epoch {epoch:>2}: loss {total_loss / seen:.4f}, train accuracy "
            f"{correct / seen:.4f}, test accuracy {test_acc:.4f}"
        )
    history["confusion"] = confusion_matrix(predicted, test_y.cpu().numpy())
    if out is not None and first_process:
        meta = {"task": "digits", "model": model_name, "config": config, "seed": seed}
        _write_outputs(model, opt, history, Path(out), meta)
    if distributed:
        dist.destroy_process_group()
    return history


def check_replayable(jit: bool, amp: str | None) -> None:
    """Refuse what a jitted step cannot replay yet: fp16's loss scaling (docs/jit.md)."""
    if jit and amp == "fp16":
        raise ValueError("train: --jit cannot replay fp16's loss scaling yet; use --amp bf16")


def _launched_world_size() -> int:
    """How many processes the launcher started (``WORLD_SIZE``, which ``scratchgrad.distributed``
    sets under mpiexec, as torchrun does); 1 without a launcher."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def _quiet(*args, **kwargs) -> None:
    """``print`` in every process but the first of a data-parallel run."""


def _summed_over_processes(*numbers: float) -> list[float]:
    """Each number summed over the processes (one all-reduce)."""
    totals = sg.tensor(numbers, dtype=sg.float64)
    dist.all_reduce(totals)
    return totals.tolist()


def prepare_out(out: Path, command: str = "train") -> None:
    """Create the output folder and check it can be written, before any training."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OSError(
            f"{command}: cannot create the output folder {out}: {error.strerror}"
        ) from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise PermissionError(f"{command}: the output folder {out} is not writable")


def rebuild_model(checkpoint: dict) -> nn.Module:
    """The trained model of a checkpoint that ``train`` wrote (loaded with ``sg.load``), in
    eval mode."""
    meta = checkpoint.get("meta")
    if not isinstance(meta, dict) or meta.get("task") != "digits":
        raise ValueError(
            "the checkpoint does not say which model it holds (no 'meta' entry from "
            "`scratchgrad train`; checkpoints written before it recorded one: train again)"
        )
    model = build_model(meta["model"], **meta["config"])
    model.load_state_dict(checkpoint["model"])
    return model.eval()


def _write_outputs(model, opt, history: dict, out: Path, meta: dict) -> None:
    checkpoint = out / f"digits_{meta['model']}.safetensors"
    state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "meta": meta}
    sg.save(state, checkpoint)
    print(f"checkpoint: {checkpoint}")
    curves = out / f"digits_{meta['model']}_curves.png"
    if plot_curves(history, curves):
        print(f"curves: {curves}")
    else:
        print("curves: install matplotlib (pip install 'scratchgrad[plot]') to get the plot")


TASKS = {"digits": sorted(DEFAULTS), "charlm": ["gpt", "lstm"]}  # the models of each task


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--task",
        choices=sorted(TASKS),
        default="digits",
        help="digits: a classifier on the shipped 8x8 digits; charlm: a character-level "
        "language model on the shipped Shakespeare",
    )
    parser.add_argument(
        "--model",
        choices=[m for models in TASKS.values() for m in models],
        help="digits: cnn (default) or mlp; charlm: gpt (default) or lstm",
    )
    parser.add_argument("--epochs", type=positive_int, help="digits: default 10 (cnn), 20 (mlp)")
    parser.add_argument("--steps", type=positive_int, help="charlm: default 2000")
    parser.add_argument("--eval-every", type=positive_int, help="charlm: default 250 steps")
    parser.add_argument(
        "--lr", type=positive_float, help="default: 3e-3 for digits, 1e-3 for charlm"
    )
    parser.add_argument(
        "--hidden", type=positive_int, default=128, help="digits: the MLP's hidden units"
    )
    parser.add_argument("--batch-size", type=positive_int, help="default: 32 digits, 12 charlm")
    parser.add_argument(
        "--optimizer", choices=sorted(OPTIMIZERS), default="adam", help="digits (charlm: AdamW)"
    )
    parser.add_argument("--seed", type=nonnegative_int, default=0)
    parser.add_argument(
        "--device",
        default="cpu",
        help="digits: where to train, e.g. cuda (needs scratchgrad[cuda] and a GPU)",
    )
    parser.add_argument(
        "--amp",
        choices=sorted(AMP_DTYPES),
        help="mixed precision: the forward pass under autocast (fp16 also scales the loss)",
    )
    parser.add_argument(
        "--jit",
        action="store_true",
        help="record the training step once and replay it (scratchgrad.jit): same result, faster",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="folder for the checkpoint and the curves (default: runs/TASK)",
    )
    parser.add_argument(
        "--nproc",
        type=positive_int,
        default=1,
        help="train data-parallel in N processes, started with mpiexec (scratchgrad[distributed])",
    )


def main(args: argparse.Namespace) -> int:
    model = args.model or TASKS[args.task][0]
    if model not in TASKS[args.task]:
        raise ValueError(
            f"train: --model {model} is not a model of --task {args.task}; "
            f"choose from {', '.join(TASKS[args.task])}"
        )
    if args.nproc > 1 and args.task != "digits":
        raise ValueError(f"train: --nproc is for --task digits; --task {args.task} runs alone")
    if args.nproc > 1 and _launched_world_size() == 1:
        return _launch(args)
    keep_freed_memory()  # a training process reuses its step's temporaries (opt-in, see backend)
    if args.task == "charlm":
        from scratchgrad import charlm

        return charlm.main(args)
    start = time.perf_counter()
    history = train(
        model,
        args.epochs,
        args.lr,
        args.batch_size or 32,
        args.optimizer,
        args.seed,
        args.out or Path("runs/digits"),
        hidden=args.hidden,
        amp=args.amp,
        device=args.device,
        jit=args.jit,
    )
    if int(os.environ.get("RANK", "0")) != 0:
        return 0  # the other processes of a data-parallel run print nothing
    print("confusion matrix on the held-out images (rows: true digit, columns: predicted):")
    print(format_confusion(history["confusion"]))
    print(
        f"final test accuracy: {history['test_acc'][-1]:.4f} ({time.perf_counter() - start:.1f} s)"
    )
    return 0


def _launch(args: argparse.Namespace) -> int:
    """Run this command in ``args.nproc`` processes under mpiexec, with the machine's cores
    shared out as BLAS threads; their exit status."""
    from scratchgrad.distributed.launch import mpiexec_command

    options = {
        "--task": args.task,
        "--model": args.model,
        "--epochs": args.epochs,
        "--lr": args.lr,
        "--hidden": args.hidden,
        "--batch-size": args.batch_size,
        "--optimizer": args.optimizer,
        "--seed": args.seed,
        "--out": args.out,
        "--amp": args.amp,
    }
    argv = [
        str(part) for flag, value in options.items() if value is not None for part in (flag, value)
    ]
    debug = ["--debug"] if getattr(args, "debug", False) else []
    command = mpiexec_command(
        args.nproc, [sys.executable, "-m", "scratchgrad", *debug, "train", *argv]
    )
    threads = str(max(1, (os.cpu_count() or 1) // args.nproc))
    env = {name: threads for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    return subprocess.run(command, env=env | dict(os.environ)).returncode
