"""What recording and replaying a step holds in memory beyond the eager step's.

The oracles: the cycle collector (``gc.collect()`` says how many unreachable objects it
found: a recording dropped by reference counting leaves it none) and eager calls.
"""

import gc
import sys
import weakref

import numpy as np
import pytest
from test_jit import train_step

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.autograd import capture_hook
from scratchgrad.jit import jitted, program, updates
from scratchgrad.jit.recorder import Recorder


@pytest.fixture
def without_cycle_collector():
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def _model_and_optimizer():
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    return model, sg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def _jitted_step():
    model, opt = _model_and_optimizer()

    @sg.jit
    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return {"loss": [loss]}  # a structure: rebuilt from the program's outputs

    return step


def _compiled_step():
    model, opt = _model_and_optimizer()
    return train_step(sg.compile(model), opt)


def _trained(model, opt, jitted, features):
    """Six steps of ``model`` with ``opt`` (under ``jit`` or not) on seeded batches of four
    rows; the step and the parameters' arrays after."""
    step = train_step(model, opt)
    step = sg.jit(step) if jitted else step
    rng = np.random.default_rng(0)
    for _ in range(6):
        x = sg.tensor(rng.standard_normal((4, features)), dtype=sg.float32)
        step(x, sg.tensor(rng.integers(0, 3, 4)))
    return step, [p.detach().numpy() for p in model.parameters()]


@pytest.mark.parametrize("make_step", [_jitted_step, _compiled_step])
def test_recordings_leave_nothing_to_the_cycle_collector(make_step, without_cycle_collector):
    """The first recording (dropped when the second agrees with it), each recorder and the
    generated optimizer updates are freed as soon as they are dropped: no reference cycle
    (weak references' callbacks holding their recorder, a closure calling itself, a
    generated function in its own globals) keeps them until the cycle collector runs,
    which a replay loop allocating almost nothing may not start for a long time. Nor does
    one keep the step itself, once let go: its recordings' fast paths (guards.py) hold what
    they check, not their recordings."""
    step = make_step()
    x, y = sg.randn(5, 6), sg.randint(0, 3, (5,))
    for _ in range(5):  # eager, record, record again and compare, replay twice
        step(x, y)
    assert gc.collect() == 0
    del step
    assert gc.collect() == 0


def test_the_recorder_forgets_the_arrays_that_die():
    """The recorder does not keep a step's arrays alive: when one dies, its value number and
    the memory it owns are forgotten (its id may come back on another array, which must not
    be taken for it), by one weak reference per array (an array owning its memory needs no
    second one), and a view's base is forgotten when the base dies."""
    recorder = Recorder("step")
    owner = np.ones(4)
    view = owner[1:]
    numbers = recorder.value(owner), recorder.value(view)
    assert recorder.number == dict(zip((id(owner), id(view)), numbers))
    assert list(recorder._owners) == [id(owner)] and len(recorder._watch) == 2
    del view
    assert list(recorder.number) == [id(owner)]
    del owner
    assert recorder.number == {} and recorder._owners == {}

    base = np.ones(4)
    part = base[:2]  # numbered, its base not: watched for its memory
    recorder.value(part)
    assert list(recorder._owners) == [id(base)]
    del base  # alive as part.base
    assert list(recorder._owners) != []
    del part
    assert recorder.number == {} and recorder._owners == {}


def test_constants_of_two_recordings_are_compared_bit_for_bit():
    """A constant computed outside scratchgrad's ops from tensor data is 0.0 on one
    recording and -0.0 on the other: equal numbers, but a replay freezing either would not
    give eager's bits (here the sign of the product), so the third call raises."""

    @sg.jit
    def scaled(x):
        zero = sg.from_numpy(np.asarray(x.detach()) * 0.0)  # NumPy: a constant to the recorder
        return x * zero

    scaled(sg.tensor([1.0]))
    scaled(sg.tensor([1.0]))
    with pytest.raises(sg.JitError, match="different constant"):
        scaled(sg.tensor([-1.0]))


def test_only_the_checked_recording_is_compiled_once_the_step_has_run(monkeypatch):
    """Python's compiler takes 50-170 KB while it runs (more than a small step's arrays):
    the first recording, only compared with the second, is never compiled, and the second is
    compiled (its program and its optimizer updates) after its step has run, the first
    recording is freed, and the recorder that the program's source was made from is freed
    too, not while the step's arrays and the recorder's tables are alive."""
    compiled = []
    first = []
    recorders = []
    generate, define = program.generate, updates.define

    def generate_spied(recorder, *args, **kwargs):
        recorders.append(weakref.ref(recorder))
        return generate(recorder, *args, **kwargs)

    def define_spied(source, namespace, name):
        alive = [None if not refs else refs[-1]() is not None for refs in (first, recorders)]
        compiled.append((name, capture_hook.recorder is None, *alive))
        return define(source, namespace, name)

    monkeypatch.setattr(program, "generate", generate_spied)
    monkeypatch.setattr(updates, "define", define_spied)
    step = _jitted_step()
    x, y = sg.randn(5, 6), sg.randint(0, 3, (5,))
    step(x, y)
    step(x, y)  # the first recording
    assert compiled == []
    first.append(weakref.ref(next(iter(step.recordings.values()))[0]))
    for _ in range(3):  # the second recording, compiled; two replays
        step(x, y)
    # the program, then the two updates it calls (zero_grad, step): outside the step, with
    # the first recording and the recorder freed
    assert compiled == [("replay", True, False, False)] + [("run", True, False, False)] * 2


@pytest.mark.parametrize("compiled", [False, True])
def test_a_checked_recording_lets_go_of_what_only_its_check_read(compiled):
    """Once a recording agrees with the first one (and replaces it), it is never compared
    again: it keeps neither its recorded calls, nor where they and its constants came from,
    nor its constants (its program's globals hold them), nor where it stored tensors."""
    model, opt = _model_and_optimizer()
    module = sg.compile(model) if compiled else model
    step = train_step(module, opt)
    step = step if compiled else sg.jit(step)
    x, y = sg.randn(5, 6), sg.randint(0, 3, (5,))
    for _ in range(5):  # eager, record, record again and compare, replay twice
        step(x, y)
    owner = module._compiled if compiled else step
    (recording,) = [r for rs in owner.recordings.values() for r in rs]
    assert recording.checked
    kept = (recording.calls, recording.call_places, recording.places, recording.constants)
    assert [len(k) for k in (*kept, recording.stored)] == [0] * 5
    assert "c0" in (recording.forward if compiled else recording.replay).__globals__


def test_free_memory_is_handed_back_before_each_recording_and_before_compiling(monkeypatch):
    """The recordings run the step eagerly and leave its arrays' memory free in the heap:
    it is handed back to the system before each recording and before the program is made,
    not while a recorder is active, and not on replays."""
    events = []
    generate = program.generate

    def generate_spied(*args, **kwargs):
        events.append("generate")
        return generate(*args, **kwargs)

    def trim_spied():
        events.append(("trim", capture_hook.recorder is None))

    monkeypatch.setattr(program, "generate", generate_spied)
    monkeypatch.setattr(jitted, "hand_back_free_memory", trim_spied)
    step = _jitted_step()
    x, y = sg.randn(5, 6), sg.randint(0, 3, (5,))
    for _ in range(5):  # eager, two recordings, two replays
        step(x, y)
    # the first recording's generate is never called: only the checked one is compiled
    assert events == [("trim", True), ("trim", True), ("trim", True), "generate"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_handing_back_free_memory_lowers_the_resident_memory():
    """Freed blocks below glibc's mmap threshold stay resident in the heap until
    ``malloc_trim`` hands them back (where there is no glibc, the call does nothing)."""
    if jitted._malloc_trim() is None:
        pytest.skip("no glibc malloc_trim")

    def resident_kb():
        with open("/proc/self/status") as status:
            line = next(line for line in status if line.startswith("RssAnon:"))
        return int(line.split()[1])

    blocks = [np.ones(8192) for _ in range(2000)]  # 64 KB each, 128 MB
    del blocks[:-1]  # the last one keeps the heap's top in use (so no trim of the top alone)
    held = resident_kb()
    jitted.hand_back_free_memory()
    assert held - resident_kb() > 64 * 1024  # of 128 MB freed, more than 64 MB handed back


@pytest.mark.parametrize(
    "make_optimizer, arrays",
    [
        (lambda params: sg.optim.Adam(params, lr=0.01), 2),  # the update, the denominator
        (lambda params: sg.optim.SGD(params, lr=0.1, momentum=0.9), 1),  # the update
    ],
    ids=["adam", "sgd_momentum"],
)
def test_the_update_is_written_over_the_gathered_gradients(make_optimizer, arrays):
    """The generated update gathers a bucket of small parameters' gradients into one scratch
    array; nothing reads it once the update (the step each parameter takes) is written, so
    the update is written over it: the scratch memory the update takes from the arena
    holds one array of the bucket's size less (Adam's three become two, SGD's two one), with
    eager's bits."""

    def run(jitted):
        sg.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
        return _trained(model, make_optimizer(model.parameters()), jitted, features=6)

    jitted, found = run(True)
    for f, e in zip(found, run(False)[1]):
        assert f.tobytes() == e.tobytes()
    (recording,) = [r for recordings in jitted.recordings.values() for r in recordings]
    (update,) = [c for c in recording.replay.__globals__.values() if getattr(c, "scratch", None)]
    bucket = (6 * 16 + 16 + 16 * 3 + 3) * 4  # bytes of float32, one bucket
    assert update.scratch.nbytes == arrays * (-(-bucket // 64) * 64)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 2**16 numbers (a 512 x 300 weight: 3 blocks), so that the blocked update is
    tested on a small model."""
    monkeypatch.setattr(updates, "_BLOCK_SIZE", 1 << 16)


def _wide_step(jitted, momentum):
    """Six steps of a 300-512-3 MLP (its first weight: more than 2**16 numbers), SGD; the
    step and the parameters' arrays after."""
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(300, 512), nn.ReLU(), nn.Linear(512, 3))
    opt = sg.optim.SGD(model.parameters(), lr=0.1, momentum=momentum)
    return _trained(model, opt, jitted, features=300)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_a_large_parameter_is_updated_a_block_of_rows_at_a_time(momentum, small_blocks):
    """SGD's update of a parameter of more than 2**16 numbers (a 512 x 300 weight) is made a
    block of rows at a time: the scratch memory it borrows from the arena is one block (and
    the small parameters' bucket), not a temporary of the weight's size as eagerly, with
    eager's bits (each number is computed as eagerly)."""
    jitted, found = _wide_step(True, momentum)
    for f, e in zip(found, _wide_step(False, momentum)[1]):
        assert f.tobytes() == e.tobytes()
    (recording,) = [r for recordings in jitted.recordings.values() for r in recordings]
    (update,) = [c for c in recording.replay.__globals__.values() if getattr(c, "scratch", None)]
    assert "subtract_scaled(param0_0" in update.source
    weight = 512 * 300 * 4
    assert update.scratch.nbytes < weight / 2


def test_the_recordings_run_the_blocked_update_in_place_of_the_eager_one(monkeypatch, small_blocks):
    """The eager update of a large parameter makes a temporary its size, which the blocked
    update does without: the recordings (calls 2 and 3) run the generated update in place of
    the eager one, with its bits, so that recording the step takes no more memory than
    replaying it. The eager ``SGD._update`` runs in the first call only."""
    expected = _wide_step(False, 0.9)[1]
    calls = []
    eager_update = sg.optim.SGD._update

    def counted(self, group, params):
        calls.append(len(calls))
        return eager_update(self, group, params)

    monkeypatch.setattr(sg.optim.SGD, "_update", counted)
    found = _wide_step(True, 0.9)[1]
    assert len(calls) == 1
    for f, e in zip(found, expected):
        assert f.tobytes() == e.tobytes()


def test_a_recording_lends_its_update_scratch_memory_for_its_own_call_only(small_blocks):
    """The blocked update that a recording runs borrows scratch memory for that call only: the
    first recording, kept (unreplayed) while the second records, held it then beside the
    second's own, and W4's second recording took the process's peak 544 KB above eager's.
    The program lends the memory again at its first replay."""
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(300, 512), nn.ReLU(), nn.Linear(512, 3))
    opt = sg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = sg.jit(train_step(model, opt))
    rng = np.random.default_rng(0)

    def scratch_arrays():
        (recording,) = [r for recordings in step.recordings.values() for r in recordings]
        constants = recording.constants or recording.replay.__globals__  # (once compiled)
        (update,) = [c for c in constants.values() if getattr(c, "scratch", None)]
        names = [name for name, *_ in update.scratch.requests]
        return [update.namespace[name] for name in names]

    held = []
    for _ in range(4):  # eager, record, record again and compile, replay
        step(sg.tensor(rng.standard_normal((4, 300)), dtype=sg.float32), sg.tensor([0, 1, 2, 0]))
        if step.recordings:
            held.append([type(array).__name__ for array in scratch_arrays()])
    assert held[0] and all(name == "NoneType" for name in held[0] + held[1])
    assert all(name == "ndarray" for name in held[2])
