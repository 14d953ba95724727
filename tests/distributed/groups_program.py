"""Run by test_distributed_collectives.py under ``mpiexec -n 3``: groups from ``new_group``
(members, ranks, collectives among them with default-group ``src``/``dst``, what a process
outside gets) and the futures of async collectives. Prints "ok" per rank."""

import warnings

import scratchgrad as sg
import scratchgrad.distributed as dist

dist.init_process_group("mpi")
rank = dist.get_rank()
assert dist.get_world_size() == 3

# 2 and 0 (sorted: 0 is rank 0 of the group, 2 rank 1); 2 then 1, in the order given
pair = dist.new_group([2, 0])
reversed_pair = dist.new_group([2, 1], sort_ranks=False)
everyone = dist.new_group()

if rank == 1:
    assert pair == dist.GroupMember.NON_GROUP_MEMBER
    assert (dist.get_rank(pair), dist.get_world_size(pair)) == (-1, -1)
    x = sg.tensor([5.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert dist.all_reduce(x, group=pair) is None
        assert dist.broadcast(x, src=0, group=pair) is None
        assert dist.barrier(group=pair) is None
        assert dist.isend(x, dst=0, group=pair) is None
        assert dist.recv(x, src=0, group=pair) == -1
    assert [str(w.message) for w in caught] == [
        f"Running {name} on global rank 1 which does not belong to the given group."
        for name in ("all_reduce", "broadcast", "barrier", "isend", "irecv")
    ]
    assert x.tolist() == [5.0]  # skipped
    try:
        dist.send(x, dst=0, group=pair)
        raise AssertionError("send outside the group did not raise")
    except ValueError as error:
        assert "Invalid process group specified" in str(error)
else:
    assert dist.get_process_group_ranks(pair) == [0, 2]
    assert (dist.get_rank(pair), dist.get_world_size(pair)) == ([0, 2].index(rank), 2)
    x = sg.tensor([float(rank + 1)])
    dist.all_reduce(x, group=pair)
    assert x.tolist() == [4.0], x  # 1 + 3: rank 1's 2 left out
    y = sg.tensor([float(rank)])
    dist.broadcast(y, src=2, group=pair)  # src: the default group's rank 2
    assert y.tolist() == [2.0], y
    dist.reduce(y, group_dst=0, group=pair)  # group_dst: the group's rank 0, rank 0 here
    assert y.tolist() == ([4.0] if rank == 0 else [2.0]), y
    gathered = [sg.zeros(1), sg.zeros(1)] if rank == 2 else None
    dist.gather(sg.tensor([float(rank)]), gathered, dst=2, group=pair)
    if rank == 2:
        assert [t.item() for t in gathered] == [0.0, 2.0]
    # a future not done refuses its value: rank 2 joins the all-reduce only after rank 0's look
    if rank == 0:
        future = dist.all_reduce(sg.tensor([1.0]), group=pair, async_op=True).get_future()
        assert not future.done()
        try:
            future.value()
            raise AssertionError("a future not done gave a value")
        except RuntimeError as error:
            assert "not done yet" in str(error)
        dist.send(sg.zeros(1), dst=2)
        assert future.wait()[0].tolist() == [2.0]
    else:
        dist.recv(sg.zeros(1), src=0)
        dist.all_reduce(sg.tensor([1.0]), group=pair)
    try:
        dist.broadcast(y, src=1, group=pair)
        raise AssertionError("a src outside the group did not raise")
    except ValueError as error:  # (refused on both members: neither waits for the other)
        assert "src=1 is not a rank of a group of 2 processes (default-group ranks [0, 2])" in str(
            error
        ), error

if rank != 0:
    assert dist.get_process_group_ranks(reversed_pair) == [2, 1]
    assert dist.get_rank(reversed_pair) == [2, 1].index(rank)
    out = [sg.zeros(1), sg.zeros(1)]
    dist.all_gather(out, sg.tensor([float(rank)]), group=reversed_pair)
    assert [t.item() for t in out] == [2.0, 1.0]  # in the group's order
    z = sg.tensor([float(rank)])
    if rank == 2:
        sending = dist.isend(z * 10, dst=1, group=reversed_pair)
        try:  # as PyTorch's gloo: no future for a message
            sending.get_future()
            raise AssertionError("isend gave a future")
        except RuntimeError as error:
            assert "getFuture not implemented" in str(error)
        sending.wait()
    else:
        assert dist.recv(z, group=reversed_pair) == 2  # the default group's rank of the sender
        assert z.tolist() == [20.0]

# futures: the value is the tensors written; then() runs once the collective finishes
t = sg.tensor([float(rank)])
work = dist.all_reduce(t, group=everyone, async_op=True)
seen = []
future = work.get_future()
chained = future.then(lambda f: seen.append(f.value()[0].item()) or f.value()[0] * 2)
assert work.wait()
assert seen == [3.0] and future.done() and chained.done()
assert future.wait()[0] is t and chained.value().tolist() == [6.0]
assert future.then(lambda f: "late").wait() == "late"  # on a done future: at once
failing = dist.broadcast(sg.zeros(2), src=0, async_op=True).get_future().then(lambda f: 1 / 0)
try:
    failing.wait()
    raise AssertionError("the callback's error was lost")
except RuntimeError as error:  # PyTorch's words
    assert str(error) == (
        "Got the following error when running the callback: ZeroDivisionError: division by zero"
    )
listed = [sg.zeros(1) for _ in range(3)]
value = dist.all_gather(listed, t, async_op=True).get_future().wait()
assert value is not listed and all(a is b for a, b in zip(value, listed, strict=True))
assert dist.barrier(async_op=True).get_future().wait() == []

try:  # MPI would split the processes by what each passed
    dist.new_group([0, 1] if rank == 0 else [0, 2])
    raise AssertionError("different ranks were taken")
except RuntimeError as error:
    assert "new_group: the processes passed different ranks (rank 0: [0, 1]; rank 1: [0, 2]" in str(
        error
    ), error

try:  # one process's bad ranks: its error, and the others do not wait for it
    dist.new_group([0, 7] if rank == 1 else [0, 1])
    raise AssertionError("bad ranks were taken")
except (ValueError, RuntimeError) as error:
    expected = "Rank 7 is out of range" if rank == 1 else "new_group: refused by rank(s) [1]"
    assert expected in str(error), error

if rank != 1:  # a group can go alone (its members call it); it is then refused
    dist.destroy_process_group(pair)
    try:
        dist.all_reduce(t, group=pair)
        raise AssertionError("a destroyed group was taken")
    except ValueError as error:
        assert "not a process group of this job" in str(error)
dist.destroy_process_group()
assert not dist.is_initialized()
print(f"ok {rank} of 3")
