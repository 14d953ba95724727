"""Run by test_distributed_fuzz.py under ``mpiexec -n N`` with a seed: random collectives on
random dtypes, shapes and layouts, each result compared with NumPy on every rank's input (each
rank can make every rank's input: they come from the seed, the case and the rank). Arguments:
the first seed, the number of cases, and a folder where each rank writes rank<r>.json: how
many cases of each collective ran, and what failed."""

import json
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

import scratchgrad as sg
import scratchgrad.distributed as dist

Op = dist.ReduceOp
DTYPES = [np.dtype(d) for d in ("float16", "float32", "float64", "int8", "uint8", "int16")]
DTYPES += [np.dtype(d) for d in ("int32", "int64", "bool", "complex64", "complex128")]
DTYPES.append(np.dtype(ml_dtypes.bfloat16))
SHAPES = [(), (0,), (1,), (5,), (2, 3), (3, 0), (4, 2)]
COLLECTIVES = [
    "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
    "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "barrier", "two_async",
    "mismatch", "send_recv",
]  # fmt: skip


def values(seed: int, rank: int, dtype: np.dtype, shape: tuple) -> np.ndarray:
    """Small integers (sums and products of three stay exact in every dtype), per rank."""
    rng = np.random.default_rng([seed, rank])
    low = 0 if dtype.kind in "ub" else -3
    ints = rng.integers(low, 4, size=shape)
    if dtype.kind == "b":
        return ints % 2 == 1
    if dtype.kind == "c":
        return (ints + 1j * rng.integers(-3, 4, size=shape)).astype(dtype)
    return ints.astype(dtype)


def layout_of(array: np.ndarray, layout: str) -> tuple[sg.Tensor, sg.Tensor]:
    """A tensor holding ``array`` in the given memory layout, and the base tensor it views."""
    if layout == "transposed" and array.ndim == 2:
        base = sg.tensor(np.ascontiguousarray(array.T))
        return base.t(), base
    if layout == "strided":  # every other element of a larger tensor
        base = sg.tensor(np.stack([array, np.zeros_like(array)], axis=-1))
        return base[..., 0], base
    base = sg.tensor(array.copy())
    return base, base


def valid_ops(dtype: np.dtype) -> list:
    if dtype.kind == "c":
        return [Op.SUM, Op.AVG]
    ops = [Op.SUM, Op.PRODUCT, Op.MIN, Op.MAX]
    if dtype.kind in "fV" or dtype == ml_dtypes.bfloat16:
        return [*ops, Op.AVG]
    return [*ops, Op.BAND, Op.BOR, Op.BXOR]


def reduce_reference(stacked: np.ndarray, op, size: int) -> np.ndarray:
    """``op`` over the ranks' arrays (axis 0), computed in float64/complex128 or as booleans."""
    dtype = stacked.dtype
    if dtype.kind == "b":
        count = stacked.sum(axis=0)
        logical = {Op.SUM: count > 0, Op.MAX: count > 0, Op.BOR: count > 0, Op.BXOR: count % 2}
        logical |= {Op.PRODUCT: count == size, Op.MIN: count == size, Op.BAND: count == size}
        return np.asarray(logical[op], bool)
    if op in (Op.BAND, Op.BOR, Op.BXOR):
        ufunc = {Op.BAND: np.bitwise_and, Op.BOR: np.bitwise_or, Op.BXOR: np.bitwise_xor}[op]
        return ufunc.reduce(stacked, axis=0)
    wide = stacked.astype(np.complex128 if dtype.kind == "c" else np.float64)
    table = {Op.SUM: np.sum, Op.PRODUCT: np.prod, Op.MIN: np.min, Op.MAX: np.max}
    if op is Op.AVG:  # per component, as PyTorch's (complex tensors reduce as real pairs)
        total = wide.sum(axis=0).reshape(-1)
        average = (total.view(np.float64) / size).view(total.dtype)
        return average.reshape(stacked.shape[1:]).astype(dtype)
    return np.asarray(table[op](wide, axis=0)).astype(dtype)


class Case:
    """One random case; every rank draws the same one from the seed."""

    def __init__(self, seed: int, rank: int, size: int) -> None:
        self.seed, self.rank, self.size = seed, rank, size
        rng = np.random.default_rng(seed)
        self.collective = COLLECTIVES[rng.integers(len(COLLECTIVES))]
        self.dtype = DTYPES[rng.integers(len(DTYPES))]
        self.shape = SHAPES[rng.integers(len(SHAPES))]
        self.layout = ["contiguous", "transposed", "strided"][rng.integers(3)]
        ops = valid_ops(self.dtype)
        self.op = ops[rng.integers(len(ops))]
        self.root = int(rng.integers(size))
        self.async_op = bool(rng.integers(2))
        self.failures: list[str] = []

    def name(self) -> str:
        return (
            f"seed {self.seed}: {self.collective} {self.dtype.name} {self.shape} {self.layout} "
            f"{self.op.name} root {self.root} async {self.async_op}"
        )

    def everyone(self, shape=None) -> list[np.ndarray]:
        shape = self.shape if shape is None else shape
        return [values(self.seed, r, self.dtype, shape) for r in range(self.size)]

    def expect(self, got: sg.Tensor, want: np.ndarray, what: str) -> None:
        got_array = got.numpy()
        if got_array.dtype != want.dtype or got_array.shape != want.shape:
            self.failures.append(f"{self.name()}: {what}: {got_array.dtype}{got_array.shape}")
        elif not np.array_equal(got_array, want, equal_nan=True):
            self.failures.append(f"{self.name()}: {what}: got {got_array!r}, want {want!r}")

    def run_and_wait(self, call, *args, **kwargs) -> None:
        work = call(*args, **kwargs, async_op=self.async_op)
        if self.async_op:
            assert work.wait() is True and work.is_completed()
        else:
            assert work is None


def check_all_reduce(case: Case) -> None:
    everyone = case.everyone()
    x, base = layout_of(everyone[case.rank], case.layout)
    before = base.numpy().copy()
    version = x._version
    case.run_and_wait(dist.all_reduce, x, op=case.op)
    case.expect(x, reduce_reference(np.stack(everyone), case.op, case.size), "all_reduce")
    if case.layout == "strided":  # the elements between the view's are not written
        case.expect(base[..., 1], before[..., 1], "all_reduce: outside the view")
    if x._version == version:
        case.failures.append(f"{case.name()}: the version counter did not move")


def check_reduce(case: Case) -> None:
    everyone = case.everyone()
    x, _ = layout_of(everyone[case.rank], case.layout)
    case.run_and_wait(dist.reduce, x, dst=case.root, op=case.op)
    if case.rank == case.root:
        want = reduce_reference(np.stack(everyone), case.op, case.size)
    else:
        want = everyone[case.rank]
    case.expect(x, want, "reduce")


def check_broadcast(case: Case) -> None:
    everyone = case.everyone()
    x, _ = layout_of(everyone[case.rank], case.layout)
    case.run_and_wait(dist.broadcast, x, src=case.root)
    case.expect(x, everyone[case.root], "broadcast")


def check_all_gather(case: Case) -> None:
    everyone = case.everyone()
    sent, _ = layout_of(everyone[case.rank], case.layout)
    outputs = [layout_of(np.zeros_like(a), case.layout)[0] for a in everyone]
    case.run_and_wait(dist.all_gather, outputs, sent)
    for r in range(case.size):
        case.expect(outputs[r], everyone[r], f"all_gather[{r}]")


def check_all_gather_into_tensor(case: Case) -> None:
    everyone = case.everyone()
    stacked = np.stack(everyone)
    if case.shape and case.layout == "strided":  # concatenated along the first dimension
        stacked = np.concatenate(everyone)
    output, _ = layout_of(np.zeros_like(stacked), case.layout)
    case.run_and_wait(dist.all_gather_into_tensor, output, sg.tensor(everyone[case.rank]))
    case.expect(output, stacked, "all_gather_into_tensor")


def check_reduce_scatter(case: Case) -> None:
    block = case.shape if case.shape else (2,)
    parts = case.everyone((case.size, *block))  # rank r's input: size blocks
    want = reduce_reference(np.stack(parts), case.op, case.size)[case.rank]
    output, _ = layout_of(np.zeros(block, case.dtype), case.layout)
    if case.collective == "reduce_scatter":
        inputs = [layout_of(part, case.layout)[0] for part in parts[case.rank]]
        case.run_and_wait(dist.reduce_scatter, output, inputs, op=case.op)
    else:
        joined = parts[case.rank].reshape(case.size * block[0], *block[1:])
        whole, _ = layout_of(joined, case.layout)
        case.run_and_wait(dist.reduce_scatter_tensor, output, whole, op=case.op)
    case.expect(output, want, case.collective)


def check_gather(case: Case) -> None:
    everyone = case.everyone()
    gathered = None
    if case.rank == case.root:
        gathered = [layout_of(np.zeros_like(a), case.layout)[0] for a in everyone]
    x, _ = layout_of(everyone[case.rank], case.layout)
    case.run_and_wait(dist.gather, x, gathered, dst=case.root)
    if gathered is not None:
        for r in range(case.size):
            case.expect(gathered[r], everyone[r], f"gather[{r}]")


def check_scatter(case: Case) -> None:
    everyone = case.everyone()
    parts = [sg.tensor(a) for a in everyone] if case.rank == case.root else None
    x, _ = layout_of(np.zeros_like(everyone[0]), case.layout)
    case.run_and_wait(dist.scatter, x, parts, src=case.root)
    case.expect(x, everyone[case.rank], "scatter")


def check_barrier(case: Case) -> None:
    case.run_and_wait(dist.barrier)


def check_two_async(case: Case) -> None:
    """Two collectives in flight, waited for in an order that differs between the ranks."""
    first, second = case.everyone(), case.everyone((3,))
    x, y = sg.tensor(first[case.rank]), sg.tensor(second[case.rank])
    works = [dist.all_reduce(x, op=case.op, async_op=True)]
    works.append(dist.broadcast(y, src=case.root, async_op=True))
    for work in works[:: 1 if case.rank % 2 else -1]:
        work.wait()
    case.expect(x, reduce_reference(np.stack(first), case.op, case.size), "two_async: first")
    case.expect(y, second[case.root], "two_async: second")


def check_mismatch(case: Case) -> None:
    """Calls that differ between the ranks (or that one rank refuses) raise on every rank,
    leave the tensors as they were, and the next collective works."""
    everyone = case.everyone()
    odd = case.rank == case.root
    kind = ["numel", "dtype", "root", "op", "list"][int(case.seed % 5)]
    array = everyone[case.rank]
    if kind == "numel" and odd:
        array = np.concatenate([array.reshape(-1), array.reshape(-1)[:1], np.ones(1, array.dtype)])
    if kind == "dtype" and odd:
        array = np.zeros(array.shape, np.float64 if array.dtype != np.float64 else np.float32)
    x = sg.tensor(array)
    before = x.numpy().copy()
    try:
        if kind in ("numel", "dtype"):
            work = dist.all_reduce(x, op=Op.SUM, async_op=case.async_op)
            if work is not None:
                work.wait()  # where an async call's mismatch is raised
        elif kind == "root":
            dist.broadcast(x, src=case.root if odd else (case.root + 1) % case.size)
        elif kind == "op":
            op = Op.SUM if odd else Op.MAX
            if case.dtype.kind == "c":
                op = Op.SUM if odd else Op.AVG
            dist.all_reduce(x, op=op)
        else:  # the root's list is one too short
            gathered = [sg.zeros_like(x) for _ in range(case.size - 1)] if odd else None
            dist.gather(x, gathered, dst=case.root)
        if case.size > 1 or kind == "list":
            case.failures.append(f"{case.name()}: mismatch {kind}: no error")
    except (RuntimeError, ValueError) as error:
        if case.size > 1 and kind != "list" and "do not match" not in str(error):
            case.failures.append(f"{case.name()}: mismatch {kind}: {error}")
    case.expect(x, before, f"mismatch {kind}: the tensor changed")
    y = sg.tensor([float(case.rank)])
    dist.all_reduce(y)
    case.expect(y, np.array([sum(range(case.size))], np.float32), "after a mismatch")


def check_send_recv(case: Case) -> None:
    """The root sends to the next rank (send or isend; recv or irecv, from it or any source),
    then sends a second message; every fourth case the receiving tensor has one element more:
    an error there, nothing written, and the second message arrives intact."""
    sender, receiver = case.root, (case.root + 1) % case.size
    if sender == receiver:
        return
    sent = case.everyone()[sender]
    tag, mismatch = case.seed % 7, case.seed % 4 == 0
    if case.rank == sender:
        x, _ = layout_of(sent, case.layout)
        if case.async_op:
            dist.isend(x, receiver, tag=tag).wait()
        else:
            dist.send(x, receiver, tag=tag)
        dist.send(sg.tensor([float(case.seed)]), dst=receiver, tag=tag)
        case.expect(x, sent, "send: the tensor sent")
    elif case.rank == receiver:
        shape = (sent.size + 1,) if mismatch else sent.shape
        y, _ = layout_of(np.zeros(shape, case.dtype), case.layout)
        src = None if case.seed % 3 == 0 else sender
        try:
            if case.async_op:
                work = dist.irecv(y, src, tag=tag)
                work.wait()
                source = work.source_rank()
            else:
                source = dist.recv(y, src, tag=tag)
            if mismatch:
                case.failures.append(f"{case.name()}: recv of another size: no error")
            case.expect(y, sent, "recv")
            if source != sender:
                case.failures.append(f"{case.name()}: recv: source {source}, not {sender}")
        except ValueError as error:
            if not mismatch or "nothing was written" not in str(error):
                case.failures.append(f"{case.name()}: recv: {error}")
            case.expect(y, np.zeros(shape, case.dtype), "recv: written after an error")
        second = sg.zeros(1)
        dist.recv(second, sender, tag=tag)
        case.expect(second, np.array([case.seed], np.float32), "recv: the next message")


CHECKS = {name: globals().get(f"check_{name}", check_reduce_scatter) for name in COLLECTIVES}


def main() -> None:
    first_seed, count = int(sys.argv[1]), int(sys.argv[2])
    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    failures, ran = [], {}
    for seed in range(first_seed, first_seed + count):
        case = Case(seed, rank, size)
        try:
            CHECKS[case.collective](case)
        except Exception as error:  # reported, not raised: the other cases still run
            case.failures.append(f"{case.name()}: {type(error).__name__}: {error}")
        failures += case.failures
        ran[case.collective] = ran.get(case.collective, 0) + 1
    dist.barrier()
    dist.destroy_process_group()
    report = {"rank": rank, "size": size, "ran": ran, "failures": failures[:20]}
    Path(sys.argv[3], f"rank{rank}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main()
