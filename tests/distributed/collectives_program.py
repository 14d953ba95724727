"""Run by test_collectives.py under ``mpiexec -n N``: every collective, every dtype, checked
against NumPy on the inputs of all ranks (each rank can make every rank's input). Prints "ok"."""

import time
from datetime import timedelta

import numpy as np

import scratchgrad as sg
import scratchgrad.distributed as dist
from scratchgrad import backend

DTYPES = [sg.float16, sg.bfloat16, sg.float32, sg.float64, sg.int32, sg.int64, sg.bool]
SHAPES = [(), (0,), (2, 3)]
NUMPY_REDUCE = {
    dist.ReduceOp.SUM: np.sum,
    dist.ReduceOp.PRODUCT: np.prod,
    dist.ReduceOp.MAX: np.max,
    dist.ReduceOp.MIN: np.min,
    dist.ReduceOp.AVG: np.mean,
}
BOOL_REDUCE = {
    dist.ReduceOp.SUM: np.any,
    dist.ReduceOp.MAX: np.any,
    dist.ReduceOp.PRODUCT: np.all,
    dist.ReduceOp.MIN: np.all,
}


def data(rank: int, dtype, shape) -> np.ndarray:
    """Small integers (exact in every dtype), different on each rank."""
    values = (np.arange(int(np.prod(shape))) + 3 * rank) % 5 + 1
    if dtype == sg.bool:
        return (values % 2 == 0).reshape(shape)
    return values.reshape(shape).astype(dtype)


def expect_equal(got: sg.Tensor, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype or want.dtype == np.float64, (what, got.dtype, want.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    np.testing.assert_allclose(
        got.numpy().astype(np.float64), want.astype(np.float64), rtol=1e-2, err_msg=what
    )


def check_all_reduce(rank: int, size: int) -> None:
    for dtype in DTYPES:
        for shape in SHAPES:
            stacked = np.stack([data(r, dtype, shape) for r in range(size)])
            table = BOOL_REDUCE if dtype == sg.bool else NUMPY_REDUCE
            for op, numpy_reduce in table.items():
                if op is dist.ReduceOp.AVG and not backend.is_floating(dtype):
                    continue
                for async_op in (False, True):
                    x = sg.tensor(data(rank, dtype, shape))
                    work = dist.all_reduce(x, op=op, async_op=async_op)
                    if async_op:
                        assert work.wait() is True
                    else:
                        assert work is None
                    want = numpy_reduce(stacked.astype(np.float64), axis=0)
                    expect_equal(x, want.astype(dtype), f"all_reduce {op} {dtype} {shape}")
    # bitwise ops on integers, and a non-contiguous tensor (a transposed view) reduced in place
    x = sg.tensor(data(rank, sg.int64, (2, 3)))
    dist.all_reduce(x, op=dist.ReduceOp.BOR)
    want = np.bitwise_or.reduce(np.stack([data(r, np.int64, (2, 3)) for r in range(size)]))
    expect_equal(x, want, "all_reduce BOR")
    base = sg.tensor(data(rank, sg.float32, (3, 2)))
    view = base.t()
    dist.all_reduce(view)
    want = sum(data(r, np.float32, (3, 2)) for r in range(size))
    expect_equal(base, want, "all_reduce of a transposed view")


def check_moves(rank: int, size: int) -> None:
    for dtype in DTYPES:
        for shape in SHAPES:
            everyone = [data(r, dtype, shape) for r in range(size)]
            x = sg.tensor(everyone[rank])
            dist.broadcast(x, src=size - 1)
            expect_equal(x, everyone[-1], f"broadcast {dtype} {shape}")

            out = [sg.zeros(shape, dtype=dtype) for _ in range(size)]
            dist.all_gather(out, sg.tensor(everyone[rank]))
            for r in range(size):
                expect_equal(out[r], everyone[r], f"all_gather {dtype} {shape}")

            whole = sg.zeros((size, *shape), dtype=dtype)
            dist.all_gather_into_tensor(whole, sg.tensor(everyone[rank]))
            expect_equal(whole, np.stack(everyone), f"all_gather_into_tensor {dtype}")

            gathered = [sg.zeros(shape, dtype=dtype) for _ in range(size)] if rank == 0 else None
            dist.gather(sg.tensor(everyone[rank]), gathered, dst=0)
            if rank == 0:
                for r in range(size):
                    expect_equal(gathered[r], everyone[r], f"gather {dtype} {shape}")

            received = sg.zeros(shape, dtype=dtype)
            parts = [sg.tensor(a) for a in everyone] if rank == 1 % size else None
            dist.scatter(received, parts, src=1 % size)
            expect_equal(received, everyone[rank], f"scatter {dtype} {shape}")


def check_reduce_and_scatter(rank: int, size: int) -> None:
    everyone = [data(r, np.float64, (size, 4)) for r in range(size)]
    x = sg.tensor(everyone[rank])
    dist.reduce(x, dst=0)
    expect_equal(x, sum(everyone) if rank == 0 else everyone[rank], "reduce")

    out = sg.zeros(4, dtype=sg.float64)
    dist.reduce_scatter_tensor(out, sg.tensor(everyone[rank]))
    expect_equal(out, sum(everyone)[rank], "reduce_scatter_tensor")

    # the two shapes PyTorch documents (stacked, concatenated); another of as many entries is
    # refused on every process, which then go on together
    blocks = [data(r, np.float32, (2, 3)) for r in range(size)]
    whole = sg.zeros(2 * size, 3)
    dist.all_gather_into_tensor(whole, sg.tensor(blocks[rank]))
    expect_equal(whole, np.concatenate(blocks), "all_gather_into_tensor, concatenated")
    try:
        dist.all_gather_into_tensor(sg.zeros(3, 2 * size), sg.tensor(blocks[rank]))
        raise AssertionError("all_gather_into_tensor took a (3, 2 * size) output")
    except ValueError as error:
        assert "must be (" in str(error), error
    out = sg.zeros(2, 3)  # every process gives the same blocks: block i summed size times
    dist.reduce_scatter_tensor(out, sg.tensor(np.concatenate(blocks)))
    expect_equal(out, size * blocks[rank], "reduce_scatter_tensor, concatenated")

    out = sg.zeros(4, dtype=sg.float64)
    dist.reduce_scatter(out, [sg.tensor(row) for row in everyone[rank]], op=dist.ReduceOp.MAX)
    expect_equal(out, np.max(everyone, axis=0)[rank], "reduce_scatter MAX")

    # AVG of a complex tensor divides each component, as PyTorch's (it reduces complex tensors
    # as real pairs): NumPy's complex division by 3 gave -1.6666667 where float32's is -1.6666666
    x = sg.tensor([-5 - 5j if rank == 0 else 0j], dtype=sg.complex64)
    dist.all_reduce(x, op=dist.ReduceOp.AVG)
    component = np.float32(-5) / np.float32(size)
    assert x.tolist() == [complex(component, component)], (x.tolist(), component)

    works = [dist.all_reduce(sg.ones(3) * rank, async_op=True) for _ in range(3)]
    works.append(dist.barrier(async_op=True))
    assert all(w.wait() for w in works)
    assert all(w.is_completed() for w in works)

    # a wait with a timeout gives up while process 1 is late, and a plain wait then finishes
    x = sg.tensor([float(rank)])
    if rank == 1:
        time.sleep(0.3)
    work = dist.broadcast(x, src=1, async_op=True)
    if rank == 0:
        try:
            work.wait(timeout=timedelta(milliseconds=20))
            raise AssertionError("the wait should have timed out")
        except RuntimeError as error:
            assert "did not finish in" in str(error)
    work.wait()
    assert x.tolist() == [1.0]


def main() -> None:
    dist.init_process_group(backend="mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    check_all_reduce(rank, size)
    check_moves(rank, size)
    check_reduce_and_scatter(rank, size)
    dist.barrier()
    dist.destroy_process_group()
    print(f"ok {rank} of {size}")


if __name__ == "__main__":
    main()
