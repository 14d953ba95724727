"""``scratchgrad.profiler`` against ``torch.profiler``: the same code profiled by both gives the
same call counts (PyTorch's ``aten::matmul`` is our ``matmul``), the same ranges, the same
backward node names, and the same schedule of recorded steps and finished cycles."""

import json
import warnings

import numpy as np
import pytest
import torch
import torch.profiler as torch_profiler

import scratchgrad as sg
import scratchgrad.profiler as sg_profiler
from scratchgrad.autograd import engine
from scratchgrad.autograd import function as function_module
from scratchgrad.autograd.function import Function


def _counts(prof, names) -> dict:
    """The call count of each of ``names`` (torch's ``aten::`` prefix dropped)."""
    counts = {e.key.removeprefix("aten::"): e.count for e in prof.key_averages()}
    return {name: counts.get(name, 0) for name in names}


def _headers(line: str) -> list:
    return [column.strip() for column in line.split("  ") if column.strip()]


def _ops(lib, profiler):
    """Three matmuls, one relu and a sum in a ``outer`` range holding two ``inner`` ones."""
    x, w = lib.ones(3, 4), lib.ones(4, 5)
    cpu = [profiler.ProfilerActivity.CPU]
    with profiler.profile(activities=cpu) as prof, profiler.record_function("outer"):
        for _ in range(2):
            with profiler.record_function("inner"):
                y = x @ w
        (x @ w).relu().sum()
    return prof, y


def test_table_counts_calls_as_torch():
    ours, _ = _ops(sg, sg_profiler)
    theirs, _ = _ops(torch, torch_profiler)
    names = ["matmul", "relu", "sum", "outer", "inner"]
    assert (
        _counts(ours, names)
        == _counts(theirs, names)
        == {
            "matmul": 3,
            "relu": 1,
            "sum": 1,
            "outer": 1,
            "inner": 2,
        }
    )
    table = ours.key_averages().table(sort_by="cpu_time_total", row_limit=10)
    lines = table.splitlines()
    assert _headers(lines[1]) == _headers(theirs.key_averages().table().splitlines()[1])
    first = lines[3].split()
    assert first[0] == "outer" and first[3] == "100.00%" and first[-1] == "1"
    assert [line.split()[-1] for line in lines if line.split()[:1] == ["matmul"]] == ["3"]
    assert lines[-1].startswith("Self CPU time total: ")
    assert len(ours.key_averages().table(row_limit=2).splitlines()) == 3 + 2 + 2


def test_record_function_ranges_nest():
    prof, _ = _ops(sg, sg_profiler)
    events = prof.events()
    outer = next(e for e in events if e.name == "outer")
    inner = [e for e in events if e.name == "inner"]
    matmuls = [e for e in events if e.name == "matmul"]
    for range_, op in zip(inner, matmuls):  # each inner range holds its matmul
        assert range_.time_range_start <= op.time_range_start <= op.time_range_end
        assert op.time_range_end <= range_.time_range_end
        assert range_.self_cpu_time_total == pytest.approx(
            range_.cpu_time_total - op.cpu_time_total
        )
    children = sum(e.cpu_time_total for e in inner) + sum(
        e.cpu_time_total for e in events if e.name in ("relu", "sum") or e is matmuls[2]
    )
    assert outer.self_cpu_time_total == pytest.approx(outer.cpu_time_total - children)
    assert outer.time_range_start <= min(e.time_range_start for e in events)


def test_ranges_closed_out_of_order_keep_the_rest_nested():
    a, b = sg_profiler.record_function("a"), sg_profiler.record_function("b")
    with sg_profiler.profile() as prof, sg_profiler.record_function("step"):
        a.__enter__()
        b.__enter__()
        a.__exit__(None, None, None)  # b left open inside a
        b.__exit__(None, None, None)
        sg.ones(1).neg()
    step, *children = sorted(prof.events(), key=lambda e: e.name != "step")
    assert sorted(e.name for e in children) == ["a", "b", "neg"]
    assert step.children_us == pytest.approx(sum(e.cpu_time_total for e in children))


def test_record_function_as_a_decorator():
    @sg_profiler.record_function("scaled")
    def scaled(x):
        return x * 2

    with sg_profiler.profile() as prof:
        scaled(sg.ones(2))
        scaled(sg.ones(2))
    assert _counts(prof, ["scaled", "mul"]) == {"scaled": 2, "mul": 2}
    assert scaled(sg.ones(1)).tolist() == [2.0]  # outside a profile: the function as it was


def test_backward_nodes_have_torchs_names():
    def run(lib, profiler):
        x = lib.ones(3, requires_grad=True)
        with profiler.profile() as prof:
            (x * x.exp()).sum().backward()
        return {e.key for e in prof.key_averages()}

    ours, theirs = run(sg, sg_profiler), run(torch, torch_profiler)
    backward = {name for name in ours if "Backward" in name}
    assert backward == {"SumBackward0", "MulBackward0", "ExpBackward0"}
    assert backward <= theirs


def test_input_shapes_group_as_torchs():
    def run(lib, profiler):
        with profiler.profile(record_shapes=True) as prof:
            for n in (2, 2, 3):
                lib.ones(4, n) @ lib.ones(n, 5)
        averages = prof.key_averages(group_by_input_shape=True)
        rows = [e for e in averages if e.key.removeprefix("aten::") == "matmul"]
        return averages, [(str(e.input_shapes), e.count) for e in rows]

    (ours, our_rows), (_, their_rows) = run(sg, sg_profiler), run(torch, torch_profiler)
    assert our_rows == their_rows == [("[[4, 2], [2, 5]]", 2), ("[[4, 3], [3, 5]]", 1)]
    header = ours.table(sort_by="self_cpu_time_total").splitlines()[1]
    assert _headers(header)[-2:] == ["# of Calls", "Input Shapes"]


SCHEDULES = [
    dict(wait=1, warmup=1, active=2),
    dict(wait=1, warmup=1, active=2, repeat=2),
    dict(wait=0, warmup=0, active=1),
    dict(wait=2, warmup=1, active=3, repeat=1, skip_first=3),
    dict(wait=5, warmup=1, active=1, repeat=2, skip_first=2, skip_first_wait=1),
]


@pytest.mark.parametrize("kwargs", SCHEDULES, ids=str)
def test_schedule_actions_are_torchs(kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (warmup=0's warning, in both)
        ours, theirs = sg_profiler.schedule(**kwargs), torch_profiler.schedule(**kwargs)
    assert [ours(s).name for s in range(30)] == [theirs(s).name for s in range(30)]


def test_schedule_refuses_what_torchs_refuses():
    for kwargs in (dict(wait=-1, warmup=1, active=1), dict(wait=0, warmup=1, active=0)):
        with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
            sg_profiler.schedule(**kwargs)
        with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
            torch_profiler.schedule(**kwargs)


def _scheduled(lib, profiler, kwargs, steps, folder):
    """Each finished cycle's step number and recorded step ranges, the same after the end, and
    the trace files the handler wrote."""
    cycles, write = [], profiler.tensorboard_trace_handler(str(folder))

    def ready(prof):
        write(prof)
        cycles.append((prof.step_num, _step_ranges(prof)))

    x = lib.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profiler.profile(schedule=profiler.schedule(**kwargs), on_trace_ready=ready) as p:
            for _ in range(steps):
                x = x + 1
                p.step()
    return cycles, _step_ranges(p), len(list(folder.glob("*.pt.trace.json")))


def _step_ranges(prof) -> tuple:
    """The step ranges recorded, by number, and their row of the table."""
    numbered = sorted(e.trace_name for e in prof.events() if e.name == "ProfilerStep*")
    return numbered, [(e.key, e.count) for e in prof.key_averages() if e.key == "ProfilerStep*"]


@pytest.mark.parametrize("kwargs", SCHEDULES, ids=str)
@pytest.mark.parametrize("steps", [5, 12])
def test_profile_records_the_steps_torch_records(kwargs, steps, tmp_path):
    ours = _scheduled(sg, sg_profiler, kwargs, steps, tmp_path / "ours")
    theirs = _scheduled(torch, torch_profiler, kwargs, steps, tmp_path / "theirs")
    assert ours == theirs


def test_chrome_trace_is_json_with_the_events(tmp_path):
    prof, _ = _ops(sg, sg_profiler)
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert sorted(e["name"] for e in events) == sorted(e.trace_name for e in prof.events())
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)


def _train(profiled: bool) -> list:
    sg.manual_seed(0)
    model = sg.nn.Sequential(sg.nn.Linear(3, 8), sg.nn.Tanh(), sg.nn.Linear(8, 1))
    optimizer = sg.optim.SGD(model.parameters(), lr=0.1)
    x, y = sg.randn(16, 3), sg.randn(16, 1)
    with sg_profiler.profile(record_shapes=True, profile_memory=True) if profiled else _nothing():
        for _ in range(3):
            optimizer.zero_grad()
            loss = sg.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
    return [p.detach().numpy().copy() for p in model.parameters()]


class _nothing:
    def __enter__(self):
        pass

    def __exit__(self, *exc):
        pass


def test_profiling_changes_no_numbers():
    for ours, plain in zip(_train(profiled=True), _train(profiled=False)):
        np.testing.assert_array_equal(ours, plain)


def test_nothing_is_recorded_after_the_block():
    plain_apply, plain_propagate = Function.__dict__["apply"].__func__, engine._propagate
    prof, _ = _ops(sg, sg_profiler)
    recorded = len(prof.events())
    x = sg.ones(2, requires_grad=True)
    with sg_profiler.record_function("after"):
        (x * 2).sum().backward()
    assert len(prof.events()) == recorded
    # the eager path is as it was: nothing left swapped in
    assert Function.__dict__["apply"].__func__ is plain_apply
    assert engine._propagate is plain_propagate
    with pytest.raises(ValueError), sg_profiler.profile():
        raise ValueError("a failing block stops the profile too")
    assert Function.__dict__["apply"].__func__ is plain_apply
    assert engine._propagate is plain_propagate


def test_cuda_activity_is_ignored_with_torchs_warning():
    assert not sg.cuda.is_available()
    with pytest.warns(UserWarning, match="CUDA is not available, disabling CUDA profiling"):
        prof = sg_profiler.profile(
            activities=[sg_profiler.ProfilerActivity.CPU, sg_profiler.ProfilerActivity.CUDA]
        )
    with prof:
        sg.ones(2).exp()
    assert _counts(prof, ["exp"]) == {"exp": 1}


def test_autograd_profiler_names():
    autograd_profiler = sg.autograd.profiler
    with autograd_profiler.profile() as prof, autograd_profiler.record_function("block"):
        sg.ones(2).neg()
    assert _counts(prof, ["block", "neg"]) == {"block": 1, "neg": 1}
    assert "# of Calls" in prof.key_averages().table()


def test_a_second_profile_while_one_records_is_refused():
    refused = pytest.raises(RuntimeError, match="already recording")
    with sg_profiler.profile(), refused, sg_profiler.profile():
        pass


def test_a_profile_and_inference_mode_nest_either_way():
    """Both swap ``Function.apply`` (its timing, its marking of inference tensors): inside each
    other, every op is still timed and its result still marked, as PyTorch's."""
    x = sg.ones(2, 3)
    with sg.autograd.profiler.profile() as outer:
        with sg.inference_mode():
            inside = x * 2
        after = x * 3
    with sg.inference_mode(), sg.autograd.profiler.profile() as inner:
        marked = x + 1
    assert [e.name for e in outer.events()] == ["mul", "mul"]
    assert [e.name for e in inner.events()] == ["add"]
    assert (inside.is_inference(), after.is_inference(), marked.is_inference()) == (
        True,
        False,
        True,
    )
    assert Function.__dict__["apply"].__func__ is function_module._apply  # the plain one again
