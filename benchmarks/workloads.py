"""The benchmark workloads: their data, initial weights, hyperparameters and targets.

Every framework builds its problem from ``make_problem(workload_id)``, which draws everything from
NumPy generators with fixed seeds, so each worker process gets bit-identical data and weights
without any file passing between processes. Parameters are listed in the order PyTorch's
``model.parameters()`` yields them (weight then bias, layer by layer), in PyTorch's layouts
(``Linear.weight`` is ``(out, in)``, ``Conv2d.weight`` is ``(out, in, kh, kw)``).

>>> p = make_problem("W1")
>>> [w.shape for w in p.params]
[(4, 2), (4,), (1, 4), (1,)]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Workload:
    """What is measured, for whom, and what scratchgrad must reach.

    ``target`` is the largest acceptable ratio of scratchgrad's median to the reference's;
    ``memory_target`` asks for scratchgrad's peak RSS to stay below the reference's.
    ``flop`` (for GEMMs) turns a time per call into GFLOP/s. ``measured`` is the framework the
    target applies to. ``jit_target`` is ``(ratio, framework)``: the largest acceptable ratio of
    the ``scratchgrad-jit`` median to that framework's (issue 14's targets).
    """

    id: str
    title: str
    frameworks: tuple[str, ...]
    reference: str | None = "pytorch"
    target: float | None = None
    memory_target: bool = False
    unit: str = "ms"  # per step; "us" per call; "GFLOP/s" from ``flop``
    flop: float | None = None
    measured: str = "scratchgrad"
    jit_target: tuple[float, str] | None = None


TENSOR_PEERS = ("scratchgrad", "pytorch", "numpy", "jax")
# the training workloads also run with the step under scratchgrad.jit
TRAINING_PEERS = ("scratchgrad", "scratchgrad-jit", "pytorch", "numpy", "jax")

WORKLOADS: dict[str, Workload] = {
    w.id: w
    for w in [
        Workload(
            "S1",
            "scalar MLP(2, [8, 8, 1]) tanh, circle, MSE, SGD",
            ("scratchgrad", "micrograd"),
            reference="micrograd",
            target=0.2,
        ),
        Workload(
            "W1",
            "XOR 2-4-1 tanh, MSE, SGD",
            TRAINING_PEERS,
            target=0.6,
            jit_target=(1.2, "numpy"),
        ),
        Workload(
            "W2",
            "circle 2-8-8-1 tanh, MSE, SGD",
            TRAINING_PEERS,
            target=0.6,
            jit_target=(1.2, "numpy"),
        ),
        Workload(
            "W3",
            "digits 64-128-10 ReLU, CE, Adam, batch 64",
            TRAINING_PEERS,
            target=0.6,
            jit_target=(1.2, "numpy"),
        ),
        Workload(
            "W4",
            "wide MLP 784-512-512-10, CE, SGD momentum, batch 128",
            TRAINING_PEERS,
            target=1.0,
            memory_target=True,
            jit_target=(1.0, "numpy"),
        ),
        Workload(
            "W5",
            "small CNN 2 conv + 2 maxpool + linear, batch 64",
            TRAINING_PEERS,
            target=1.5,
            memory_target=True,
            jit_target=(0.6, "pytorch"),
        ),
        Workload(
            "W6",
            "charlm GPT (4 layers, 4 heads, 128 dims), batch 12, context 64, AdamW",
            ("scratchgrad", "scratchgrad-jit", "pytorch", "jax"),
            target=1.0,
            memory_target=True,
        ),
        Workload(
            "O1",
            "per-op overhead: (a * b).sum().backward(), 8x8",
            TENSOR_PEERS,
            target=0.7,
            unit="us",
        ),
        Workload(
            "P2",
            "one OpenAI-ES generation, 1,024 CartPole 4-32-2 policies, 500 steps",
            ("scratchgrad", "pytorch"),
            target=0.2,
        ),
        Workload(
            "P3",
            "P2 on Ray, 2 actors (local Ray instance)",
            ("ray", "scratchgrad"),
            reference="scratchgrad",
            target=1.3,
            measured="ray",
        ),
        Workload(
            "P1",
            "population: 1,000 XOR 2-4-1 MLPs, forward + backward + SGD, vmap",
            ("scratchgrad", "pytorch", "jax"),
            target=1.0,
        ),
        Workload(
            "P1-loop",
            "P1 without vmap: a Python loop over the 1,000 models",
            ("scratchgrad-loop", "scratchgrad"),
            reference="scratchgrad-loop",
            target=0.02,  # vmap at least 50x faster than the loop
        ),
        Workload(
            "L-gemm1024",
            "NumPy float32 GEMM 1024^3",
            ("numpy",),
            reference=None,
            unit="GFLOP/s",
            flop=2.0 * 1024**3,
        ),
        Workload(
            "L-gemm256",
            "NumPy float32 GEMM 256^3",
            ("numpy",),
            reference=None,
            unit="GFLOP/s",
            flop=2.0 * 256**3,
        ),
        Workload(
            "L-add8", "NumPy 8x8 float32 add, per call", ("numpy",), reference=None, unit="us"
        ),
    ]
}


def expand(ids: list[str]) -> list[str]:
    """Resolve user-given ids (``L`` stands for all three limit measurements)."""
    out = []
    for wid in ids:
        matches = [k for k in WORKLOADS if k == wid or k.startswith(wid + "-")]
        if not matches:
            raise ValueError(f"unknown workload {wid!r}; choose from {', '.join(WORKLOADS)}")
        out += [m for m in matches if m not in out]
    return out


@dataclass
class Problem:
    """Everything a framework needs to build one workload's training step.

    ``model`` is ``"mlp"`` (``sizes`` and ``activation`` say which), ``"cnn"`` (the W5 network),
    ``"scalar"`` (the S1 network, ``sizes`` as for ``"mlp"``), ``"op"`` (O1) or ``"limit"`` (L).
    ``batches`` is the list of ``(x, y)`` that successive steps cycle through.
    """

    model: str
    batches: list[tuple[np.ndarray, np.ndarray]]
    params: list[np.ndarray]
    loss: str = "mse"  # or "cross_entropy"
    optimizer: str = "sgd"  # or "adam"
    lr: float = 0.1
    momentum: float = 0.0
    sizes: tuple[int, ...] = ()
    activation: str = "tanh"
    test: tuple[np.ndarray, np.ndarray] | None = None  # held-out data (W3)
    train: tuple[np.ndarray, np.ndarray] | None = None  # the whole training split (W3)
    extra: dict = field(default_factory=dict)


def _uniform(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    # PyTorch's default Linear/Conv2d init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for W and b.
    bound = 1.0 / np.sqrt(fan_in)
    return rng.uniform(-bound, bound, size=shape).astype(np.float32)


def mlp_params(sizes: tuple[int, ...], seed: int) -> list[np.ndarray]:
    """Weights and biases of ``Linear(sizes[0], sizes[1]), Linear(sizes[1], sizes[2]), ...``."""
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(sizes, sizes[1:]):
        params += [_uniform(rng, (fan_out, fan_in), fan_in), _uniform(rng, (fan_out,), fan_in)]
    return params


def balancing_policy(seed: int) -> np.ndarray:
    """A flat 4-32-2 CartPole policy (float64, nn.Linear layouts) that keeps the pole up for
    500 steps: small random weights, except hidden unit 0, which sees mostly the pole's angle
    and angular velocity, and pushes the cart toward the side the pole falls to."""
    w1, b1, w2, b2 = (0.1 * p.astype(np.float64) for p in mlp_params((4, 32, 2), seed))
    w1[0] = [0.5, 1.0, 10.0, 3.0]
    w2[:, 0] = [-3.0, 3.0]
    return np.concatenate([w1.ravel(), b1, w2.ravel(), b2])


def circle(n: int = 60, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Points in [-1, 1]^2, labelled +1 inside the circle x0^2 + x1^2 < 0.5 and -1 outside."""
    x = np.random.default_rng(seed).uniform(-1, 1, size=(n, 2)).astype(np.float32)
    y = np.where((x**2).sum(1) < 0.5, 1.0, -1.0).astype(np.float32)
    return x, y[:, None]


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The 8x8 digits as ``(x, y)``: x float32 (1797, 64) scaled to [0, 1], y int64 labels."""
    from scratchgrad.datasets import load_digits as load

    images, labels = load()  # images (1797, 1, 8, 8), already scaled
    return images.numpy().reshape(len(images), 64), labels.numpy()


def split_batches(x: np.ndarray, y: np.ndarray, batch: int, order: np.ndarray, drop_last: bool):
    """Cut ``(x[order], y[order])`` into batches of ``batch`` rows."""
    stop = len(order) - len(order) % batch if drop_last else len(order)
    return [(x[order[i : i + batch]], y[order[i : i + batch]]) for i in range(0, stop, batch)]


def digits_epochs(problem: Problem, epochs: int, seed: int = 3):
    """The shuffled training batches of each epoch, the same for every framework."""
    x, y = problem.train
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        yield split_batches(x, y, 64, rng.permutation(len(x)), drop_last=False)


GPT = {"vocab": 65, "block": 64, "layers": 4, "heads": 4, "dims": 128, "batch": 12}


def gpt_params(seed: int) -> list[np.ndarray]:
    """The default charlm GPT's parameters in ``model.parameters()`` order (the output layer
    is tied to the token embedding): N(0, 0.02) matrices, zero biases, LayerNorms at 1 and 0."""
    rng = np.random.default_rng(seed)
    dims, block = GPT["dims"], GPT["block"]

    def normal(*shape):
        return (0.02 * rng.standard_normal(shape)).astype(np.float32)

    def norm():
        return [np.ones(dims, np.float32), np.zeros(dims, np.float32)]

    params = [normal(GPT["vocab"], dims), normal(block, dims)]
    for _ in range(GPT["layers"]):
        params += norm() + [normal(3 * dims, dims), np.zeros(3 * dims, np.float32)]
        params += [normal(dims, dims), np.zeros(dims, np.float32)]
        params += norm() + [normal(4 * dims, dims), np.zeros(4 * dims, np.float32)]
        params += [normal(dims, 4 * dims), np.zeros(dims, np.float32)]
    return params + norm()


def charlm_problem() -> Problem:
    """W6: windows of the shipped Shakespeare, as ``scratchgrad train --task charlm`` sees them."""
    from scratchgrad.datasets import load_shakespeare

    text = load_shakespeare()
    chars = sorted(set(text))
    ids = np.array([chars.index(c) for c in text[:100_000]], dtype=np.int64)
    rng = np.random.default_rng(21)
    batches = []
    for _ in range(4):
        window = rng.integers(len(ids) - GPT["block"], size=GPT["batch"])[:, None]
        window = window + np.arange(GPT["block"])
        batches.append((ids[window], ids[window + 1].ravel()))  # targets as the logits: flat
    return Problem(
        "gpt", batches, gpt_params(22), loss="cross_entropy", optimizer="adamw", lr=1e-3,
        extra=dict(GPT, clip=1.0),
    )  # fmt: skip


def make_problem(workload_id: str) -> Problem:
    """Build the data, initial weights and hyperparameters of one workload."""
    if workload_id == "S1":
        x, y = circle()
        return Problem("scalar", [(x, y)], mlp_params((2, 8, 8, 1), seed=10), sizes=(2, 8, 8, 1))
    if workload_id == "W1":
        x = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float32)
        y = np.array([[-1], [1], [1], [-1]], dtype=np.float32)
        return Problem("mlp", [(x, y)], mlp_params((2, 4, 1), seed=11), lr=0.05, sizes=(2, 4, 1))
    if workload_id == "W2":
        sizes = (2, 8, 8, 1)
        return Problem("mlp", [circle()], mlp_params(sizes, seed=12), lr=0.1, sizes=sizes)
    if workload_id == "W3":
        x, y = load_digits()
        order = np.random.default_rng(13).permutation(len(x))
        n_test = len(x) // 5
        test, train = order[:n_test], order[n_test:]
        sizes = (64, 128, 10)
        return Problem(
            "mlp",
            # Timed steps cycle through the full batches of one fixed pass over the training set.
            split_batches(x, y, 64, train, drop_last=True),
            mlp_params(sizes, seed=14),
            loss="cross_entropy",
            optimizer="adam",
            lr=1e-3,
            sizes=sizes,
            activation="relu",
            test=(x[test], y[test]),
            train=(x[train], y[train]),
        )
    if workload_id == "W4":
        rng = np.random.default_rng(15)
        x = rng.standard_normal((128, 784), dtype=np.float32)
        y = rng.integers(0, 10, size=128)
        sizes = (784, 512, 512, 10)
        return Problem(
            "mlp",
            [(x, y)],
            mlp_params(sizes, seed=16),
            loss="cross_entropy",
            lr=0.01,
            momentum=0.9,
            sizes=sizes,
            activation="relu",
        )
    if workload_id == "W5":
        rng = np.random.default_rng(17)
        x = rng.standard_normal((64, 1, 28, 28), dtype=np.float32)
        y = rng.integers(0, 10, size=64)
        params = [
            _uniform(rng, (8, 1, 3, 3), 9),
            _uniform(rng, (8,), 9),
            _uniform(rng, (16, 8, 3, 3), 72),
            _uniform(rng, (16,), 72),
            _uniform(rng, (10, 784), 784),
            _uniform(rng, (10,), 784),
        ]
        return Problem("cnn", [(x, y)], params, loss="cross_entropy", lr=0.01)
    if workload_id == "W6":
        return charlm_problem()
    if workload_id == "O1":
        rng = np.random.default_rng(18)
        a, b = (rng.standard_normal((8, 8), dtype=np.float32) for _ in range(2))
        return Problem("op", [], [a, b])
    if workload_id in ("P2", "P3"):
        extra = {"popsize": 1024, "sigma": 0.1, "episode_seed": 0}
        return Problem(
            "evo", [], [balancing_policy(seed=20)], lr=0.01, sizes=(4, 32, 2), extra=extra
        )
    if workload_id.startswith("P1"):
        x, y = make_problem("W1").batches[0]
        population = 1000
        params = [
            np.stack(p)
            for p in zip(*(mlp_params((2, 4, 1), seed=20 + i) for i in range(population)))
        ]
        return Problem(
            "population",
            [(x, y)],
            params,
            lr=0.05,
            sizes=(2, 4, 1),
            extra={"population": population},
        )
    if workload_id.startswith("L-"):
        n = {"L-gemm1024": 1024, "L-gemm256": 256, "L-add8": 8}[workload_id]
        rng = np.random.default_rng(19)
        a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
        return Problem("limit", [], [a, b], extra={"op": "add" if n == 8 else "matmul"})
    raise ValueError(f"unknown workload {workload_id!r}")
