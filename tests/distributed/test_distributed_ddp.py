"""DistributedDataParallel: under mpiexec (2 and 3 processes) training equals one process on the
concatenated batches (ddp_program.py), also over groups from new_group (ddp_group_program.py);
in a group of one, its bookkeeping and errors."""

import doctest
import gc

import numpy as np
import pytest
from mpirun import run_mpi

import scratchgrad as sg
import scratchgrad.distributed as dist
from scratchgrad import nn
from scratchgrad.nn.parallel import DistributedDataParallel as DDP
from scratchgrad.nn.parallel import distributed as ddp_module


@pytest.mark.parametrize("nproc", [2, 3])
def test_training_equals_one_process_on_the_whole_batch(nproc):
    done = run_mpi(nproc, "ddp_program.py")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert all(f"ok {r} of {nproc}" in done.stdout for r in range(nproc)), done.stdout


def test_training_over_groups_from_new_group_averages_over_each_group_only():
    """Ranks 1 and 2 over the group [1, 2] train as one process on their batches (the group's
    rank 0, rank 1, gives the start), rank 0 alone over [0]; it refused the group before."""
    done = run_mpi(3, "ddp_group_program.py")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert all(f"ok {r} of 3" in done.stdout for r in range(3)), done.stdout


def test_a_jitted_or_compiled_step_trains_as_the_eager_one():
    done = run_mpi(2, "ddp_jit_program.py")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert all(f"ok {r} of 2" in done.stdout for r in range(2)), done.stdout
    assert "UserWarning" not in done.stderr, done.stderr  # (no attribute changed, no recording)


@pytest.fixture
def group_of_one():
    dist.init_process_group("mpi")
    yield
    dist.destroy_process_group()


def test_buckets_hold_the_parameters_last_layer_first(group_of_one):
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    ddp = DDP(model, bucket_cap_mb=0.001)  # 1,048 bytes: each layer closes a bucket
    names = {id(p): name for name, p in model.named_parameters()}
    buckets = [[names[id(p)] for p in bucket.params] for bucket in ddp._reducer.buckets]
    assert buckets == [["2.bias", "2.weight"], ["0.bias", "0.weight"]]
    assert [b.flat.numel() for b in ddp._reducer.buckets] == [10 + 320, 32 + 2048]
    assert len(DDP(model)._reducer.buckets) == 1


def test_gradients_state_dict_and_no_sync_in_a_group_of_one(group_of_one):
    model = nn.Linear(3, 2)
    ddp = DDP(model)
    assert ddp.module is model
    assert list(ddp.state_dict()) == ["module.weight", "module.bias"]  # as PyTorch's DDP
    x = sg.randn(4, 3)
    with ddp.no_sync():
        ddp(x).sum().backward()
    ddp(x).sum().backward()
    np.testing.assert_allclose(model.weight.grad.numpy(), 2 * np.tile(x.numpy().sum(0), (2, 1)))


def test_an_unused_parameter_needs_find_unused_parameters(group_of_one):
    class Unused(nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.spare = nn.Linear(2, 1), nn.Linear(2, 1)

        def forward(self, x):
            return self.used(x)

    ddp = DDP(Unused())
    ddp(sg.ones(1, 2)).sum().backward()
    with pytest.raises(RuntimeError, match=r"find_unused_parameters=True.*\['spare.bias"):
        ddp(sg.ones(1, 2))
    ddp = DDP(Unused(), find_unused_parameters=True)
    for _ in range(2):
        ddp(sg.ones(1, 2)).sum().backward()
    assert ddp.module.spare.weight.grad is None
    assert ddp.module.used.weight.grad.tolist() == [[2.0, 2.0]]


def test_construction_errors():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DDP(nn.Linear(2, 2))
    dist.init_process_group("mpi")
    try:
        with pytest.raises(ValueError, match="device_ids and output_device must be None"):
            DDP(nn.Linear(2, 2), device_ids=[0])
    finally:
        dist.destroy_process_group()


def test_doc_examples_run():
    assert doctest.testmod(ddp_module).failed == 0


def test_a_full_bucket_starts_its_all_reduce_during_the_backward(group_of_one, monkeypatch):
    """The last layer's bucket is all-reduced before the backward has reached the first layer."""
    events = []
    all_reduce = ddp_module.all_reduce_unchecked  # (the buckets' calls are alike everywhere)

    def recording_all_reduce(tensor, *args, **kwargs):
        events.append(f"all_reduce of {tensor.numel()}")
        return all_reduce(tensor, *args, **kwargs)

    class TwoLayers(nn.Module):
        def __init__(self):
            super().__init__()
            self.first, self.last = nn.Linear(64, 32), nn.Linear(32, 10)

        def forward(self, x):
            hidden = self.first(x)
            hidden.register_hook(lambda g: events.append("gradient of the first layer's output"))
            return self.last(hidden.relu())

    monkeypatch.setattr(ddp_module, "all_reduce_unchecked", recording_all_reduce)
    ddp = DDP(TwoLayers(), bucket_cap_mb=0.001)  # a bucket per layer
    ddp(sg.randn(4, 64)).sum().backward()
    assert events == [
        "all_reduce of 330",  # the last layer's bucket: 32 * 10 + 10
        "gradient of the first layer's output",
        "all_reduce of 2080",  # the first layer's: 64 * 32 + 32
    ]


def test_the_hooks_go_with_the_wrapper(group_of_one):
    from scratchgrad.autograd import engine

    model = nn.Linear(2, 2)
    ddp = DDP(model)
    assert id(model.weight) in engine._post_accumulate_hooks
    del ddp
    gc.collect()
    assert id(model.weight) not in engine._post_accumulate_hooks


class TwoLinears(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(2, 1), nn.Linear(2, 1)

    def forward(self, x, use_b):
        return self.a(x).sum() + (self.b(x).sum() if use_b else 0)


def test_an_unused_parameter_keeps_its_no_sync_or_earlier_gradient(group_of_one):
    """As PyTorch's reducer: a parameter that the synchronised forward did not use goes into
    its bucket with the gradient it has (no_sync()'s), and one that no process used since the
    last reduction keeps its .grad. Before, both were overwritten with zeros. (The values are
    torch 2.13's, gloo, one process.)"""
    ddp = DDP(TwoLinears(), find_unused_parameters=True)
    x = sg.ones(3, 2)
    with ddp.no_sync():
        ddp(x, True).backward()
    ddp(x, False).backward()
    assert ddp.module.b.weight.grad.tolist() == [[3.0, 3.0]]
    assert ddp.module.a.weight.grad.tolist() == [[6.0, 6.0]]
    ddp.zero_grad()
    ddp(x, True).backward()
    ddp(x, False).backward()  # b: not used since the last reduction, and not zeroed
    assert ddp.module.b.weight.grad.tolist() == [[3.0, 3.0]]
    out = ddp(x, False)
    ddp.zero_grad()  # after the forward: the backward sees no gradient of b
    out.backward()
    assert ddp.module.b.weight.grad is None
    assert ddp.module.a.weight.grad.tolist() == [[3.0, 3.0]]


def test_buffers_are_broadcast_only_after_a_synchronised_forward(group_of_one, monkeypatch):
    """As PyTorch's: a forward under no_sync() or no_grad() leaves the next forward's buffers
    as they are (the counts are torch 2.13's calls of _sync_buffers)."""
    calls = []
    broadcast = ddp_module._broadcast_coalesced
    monkeypatch.setattr(
        ddp_module, "_broadcast_coalesced", lambda *a: (calls.append(1), broadcast(*a))
    )
    ddp = DDP(nn.BatchNorm1d(2))
    calls.clear()  # the construction's broadcast
    x = sg.randn(4, 2)
    counts = []
    for context in ("train", "no_sync", "train", "no_grad", "train", "train"):
        if context == "no_sync":
            with ddp.no_sync():
                ddp(x)
        elif context == "no_grad":
            with sg.no_grad():
                ddp(x)
        else:
            ddp(x).sum().backward()
        counts.append(len(calls))
    assert counts == [1, 2, 2, 3, 3, 4]


def test_other_models_on_other_processes_are_refused_by_every_process():
    """The buckets' all-reduces skip the call-by-call comparison (all_reduce_unchecked), so the
    constructor compares the buckets' layout instead, also without its parameters' broadcast."""
    done = run_mpi(2, "different_models_program.py", timeout=60)
    assert done.returncode == 0, done.stderr
    for rank in (0, 1):
        assert f"rank {rank}: refused: DistributedDataParallel: the processes' models differ" in (
            done.stdout
        )


def test_a_jitted_step_refuses_no_sync_inside_and_unused_parameters(group_of_one):
    """no_sync() inside the step would be read once, at the recording (call the step inside
    it instead); find_unused_parameters walks each forward's graph, which a replay does not
    make. Both raise naming the line, on the recording call."""
    model = DDP(nn.Linear(3, 1))
    x = sg.randn(4, 3)

    @sg.jit
    def accumulate(x):
        with model.no_sync():
            model(x).sum().backward()

    accumulate(x)  # (eager)
    with pytest.raises(sg.JitError, match=r"no_sync\(\) at .*test_distributed_ddp.py:\d+"):
        accumulate(x)
    unused = DDP(nn.Linear(3, 1), find_unused_parameters=True)

    @sg.jit
    def step(x):
        unused(x).sum().backward()

    step(x)
    with pytest.raises(sg.JitError, match="find_unused_parameters=True"):
        step(x)


@pytest.mark.parametrize("call", ["all_reduce", "broadcast", "barrier"])
def test_a_collective_inside_a_jitted_step_raises_naming_the_line(group_of_one, call):
    """A replay would skip it: each process would go on with its own values (silently)."""
    weight = sg.ones(3, requires_grad=True)
    calls = {
        "all_reduce": lambda t: dist.all_reduce(t),
        "broadcast": lambda t: dist.broadcast(t, src=0),
        "barrier": lambda t: dist.barrier(),
    }

    @sg.jit
    def step(x):
        loss = (weight * x).sum()
        loss.backward()
        logged = loss.detach().clone()
        calls[call](logged)
        return logged

    step(sg.ones(3))  # (eager)
    with pytest.raises(sg.JitError, match=rf"distributed\.{call}\(\) at .*test_distributed_ddp"):
        step(sg.ones(3))
