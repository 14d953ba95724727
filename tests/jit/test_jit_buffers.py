"""The buffers of a replayed program: results of the kernels (``jit/kernels.py``) that do not
leave the program are written with out= into arrays made once, at the first replay, and
reused by every replay after it.

The oracles: NumPy's own allocating calls (a product written into a buffer has the bits of the
new array NumPy would return), the eager step (a jitted step with its intermediates in buffers
ends with eager's state, bit for bit, and returns what eager returns), and tracemalloc, which
sees every NumPy array allocation (a replay allocates only what it hands out, and the memory a
jitted loop holds stays flat over hundreds of replays).
"""

import gc
import math
import os
import sys
import threading
import tracemalloc
import weakref

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.jit import gemm, kernels, program

# The products of an MLP step of W4's sizes (784-512-512-10, batch 128) and of small ones:
# (rows of x, inner size, columns), each as the kernels compute it.
PRODUCTS = [(128, 784, 512), (128, 512, 512), (128, 512, 10), (7, 3, 5), (1, 4, 1)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, inner, columns", PRODUCTS)
def test_products_into_a_buffer_have_the_bits_of_a_new_result(rows, inner, columns, dtype):
    rng = np.random.default_rng(rows + inner + columns)
    x = rng.standard_normal((rows, inner)).astype(dtype)
    w = rng.standard_normal((columns, inner)).astype(dtype)
    b = rng.standard_normal(columns).astype(dtype)
    grad = rng.standard_normal((rows, columns)).astype(dtype)
    ones = np.ones(rows, dtype)
    calls = {
        "linear": lambda out=None: kernels.linear(x, w, b, out=out),  # forward: x @ w.T + b
        "x.dot(w)": lambda out=None: np.dot(grad, w, out=out),  # the input's gradient
        "x.T.dot(y)": lambda out=None: np.dot(grad.T, x, out=out),  # the weight's gradient
        "ones.dot(x)": lambda out=None: np.dot(ones, grad, out=out),  # the bias's gradient
    }
    for name, call in calls.items():
        expected = call()
        for offset in (0, 1):  # the buffer aligned as NumPy allocates, or one element off
            memory = np.full(expected.size + 1, np.nan, dtype)
            out = memory[offset : offset + expected.size].reshape(expected.shape)
            assert call(out=out) is out
            assert out.tobytes() == expected.tobytes(), (name, offset)


def mlp(seed=0):
    sg.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3)
    )


def training_step(model, opt, returns):
    def step(x, y):
        opt.zero_grad()
        hidden = model[:4](x)
        logits = model[4](hidden)
        loss = nn.functional.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        return {"loss": loss, "hidden": hidden, "logits": logits}[returns]

    return step


def source_of(jitted):
    (recording,) = [r for recordings in jitted.recordings.values() for r in recordings]
    return recording.source


@pytest.mark.parametrize("returns", ["loss", "hidden", "logits"])
def test_a_step_with_its_intermediates_in_buffers_equals_eager(returns):
    """Each call's data differ; every returned tensor is kept and compared at the end, so a
    buffer handed out (and overwritten by the next replay) would show."""
    model_e, model_j = mlp(), mlp()
    opt_e = sg.optim.SGD(model_e.parameters(), lr=0.1, momentum=0.9)
    opt_j = sg.optim.SGD(model_j.parameters(), lr=0.1, momentum=0.9)
    eager, jitted = training_step(model_e, opt_e, returns), training_step(model_j, opt_j, returns)
    jitted = sg.jit(jitted)
    rng = np.random.default_rng(0)
    kept_e, kept_j = [], []
    for _ in range(8):
        x = sg.tensor(rng.standard_normal((5, 6)), dtype=sg.float32)
        y = sg.tensor(rng.integers(0, 3, 5))
        kept_e.append(eager(x, y))
        kept_j.append(jitted(x, y))
    for e, j in zip(kept_e, kept_j):
        np.testing.assert_array_equal(j.detach().numpy(), e.detach().numpy())
    for p_e, p_j in zip(model_e.parameters(), model_j.parameters()):
        np.testing.assert_array_equal(p_j.detach().numpy(), p_e.detach().numpy())
        np.testing.assert_array_equal(p_j.grad.numpy(), p_e.grad.numpy())
    assert "out=b" in source_of(jitted)  # the test exercises the buffers


def test_a_returned_view_of_an_intermediate_is_not_overwritten():
    model = mlp()

    def forward(x):
        hidden = model[:4](x)
        return hidden.t(), hidden[1], model[4](hidden)

    jitted = sg.jit(forward)
    xs = [sg.randn(5, 6) for _ in range(6)]
    kept = [jitted(x) for x in xs]
    with sg.no_grad():
        for x, found in zip(xs, kept):
            for e, f in zip(forward(x), found):
                np.testing.assert_array_equal(f.detach().numpy(), e.detach().numpy())


def traced_peak(call):
    """The most memory (NumPy arrays and Python objects) ``call()`` held at once beyond what
    was held before it."""
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    call()
    return tracemalloc.get_traced_memory()[1] - before


@pytest.fixture
def traced():
    tracemalloc.start()
    yield
    tracemalloc.stop()


@pytest.mark.parametrize("swap", [False, True])
def test_a_replay_allocates_no_array_but_what_it_returns(traced, swap, monkeypatch):
    """A forward of layers of 512 units (each result 256 KB) replays inside its buffers: its
    peak is the returned array, NumPy's scratch for the bias additions (its buffered iterator
    takes 8192 elements, 32 KB in float32, for a broadcast operand, as it does eagerly) and a
    few Python objects; eagerly, two layers' results are alive at once. So does it with the
    512 x 512 layer's product swapped (jit/gemm.py): its scratch is cut from the arena."""
    if swap:
        monkeypatch.setattr(gemm, "MARGIN", math.inf)  # the swap wins if it has eager's bits
    sg.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(16, 512), nn.Tanh(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 4)
    )
    x = sg.randn(128, 16)
    forward = sg.jit(lambda x: model(x) * 2)
    with sg.no_grad():
        for _ in range(4):  # eager, record, record again, first replay (makes the buffers)
            forward(x)
        replay_peak = traced_peak(lambda: forward(x))
        eager_peak = traced_peak(lambda: model(x) * 2)
    layer, returned = 128 * 512 * 4, 128 * 4 * 4
    assert eager_peak > 2 * layer
    assert replay_peak < returned + 8192 * 4 + 4096
    if swap and "the bits differ" in source_of(forward):  # refused, as it must be
        pytest.skip(
            "this BLAS gives the swapped product other bits: the swap's scratch is untested"
        )
    if swap:
        assert "k_swapped" in source_of(forward)


def test_memory_stays_flat_over_many_replays(traced):
    """A training step (SGD with momentum) replayed 300 times holds no more memory at the end
    than after its first 30 replays, and its peak stays at most eager's."""
    model_e, model_j = mlp(), mlp()
    opt_e = sg.optim.SGD(model_e.parameters(), lr=0.01, momentum=0.9)
    opt_j = sg.optim.SGD(model_j.parameters(), lr=0.01, momentum=0.9)
    eager = training_step(model_e, opt_e, "loss")
    jitted = sg.jit(training_step(model_j, opt_j, "loss"))
    x, y = sg.randn(64, 6), sg.randint(0, 3, (64,))
    for _ in range(30):
        eager(x, y)
        jitted(x, y)
    gc.collect()
    after_30 = ours(tracemalloc.take_snapshot())
    jitted_peak = traced_peak(lambda: replay(jitted, x, y, 270))
    gc.collect()
    grown = ours(tracemalloc.take_snapshot()).compare_to(after_30, "filename")
    assert sum(stat.size_diff for stat in grown) < 1024
    assert jitted_peak <= traced_peak(lambda: eager(x, y))


def ours(snapshot: tracemalloc.Snapshot) -> tracemalloc.Snapshot:
    """What the library's code and the code it generated hold: not what another thread of
    the process allocates meanwhile (pytest-xdist's worker talks to its controller in one)."""
    return snapshot.filter_traces(
        [
            tracemalloc.Filter(True, f"*{os.sep}scratchgrad{os.sep}*"),
            tracemalloc.Filter(True, "<string>"),
        ]
    )


def replay(jitted, x, y, times):
    for _ in range(times):
        jitted(x, y)


def test_the_optimizer_update_takes_the_memory_of_dead_intermediates():
    """The buffers and the generated SGD update's scratch share one arena: the layers'
    results (32 x 256 floats each, dead when the update runs) lie in the bytes that the
    update's temporaries (at least the 256 x 256 weight's) take, so the arena is no larger
    than those temporaries."""
    sg.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(16, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 4)
    )
    opt = sg.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    step = sg.jit(training_step(model, opt, "loss"))
    x, y = sg.randn(32, 16), sg.randint(0, 4, (32,))
    for _ in range(4):
        step(x, y)
    (recording,) = [r for recordings in step.recordings.values() for r in recordings]
    (update,) = [c for c in recording.replay.__globals__.values() if getattr(c, "scratch", None)]
    assert update.scratch.nbytes >= 256 * 256 * 4
    size = recording.replay.__globals__["place"].args[0]  # the bytes it cuts from the arena
    assert size == update.scratch.nbytes
    assert recording.source.count("out=b") >= 4  # the layers' results are in it


def eager_and_jitted_steps(seed, models=None):
    """The same MLP twice, with SGD: its eager training step and its jitted one (the models
    appended to ``models``)."""
    steps = []
    for jit in (False, True):
        model = mlp(seed)
        opt = sg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        step = training_step(model, opt, "hidden")
        steps.append(sg.jit(step) if jit else step)
        if models is not None:
            models.append(model)
    return steps


def batch(rng, rows):
    x = sg.tensor(rng.standard_normal((rows, 6)), dtype=sg.float32)
    return x, sg.tensor(rng.integers(0, 3, rows))


def test_the_programs_of_a_thread_share_its_arena():
    """Two jitted functions, the first with two batch sizes: three programs replayed in
    turn. Each cuts its buffers from the thread's one arena (as large as the largest program
    needs), and none sees another's intermediates: every call returns and leaves what eager
    calls do."""
    models = []
    eager_a, jitted_a = eager_and_jitted_steps(0, models)
    eager_b, jitted_b = eager_and_jitted_steps(1, models)
    rng = np.random.default_rng(1)
    for call in range(18):
        eager, jitted = [(eager_a, jitted_a), (eager_b, jitted_b)][call % 3 == 2]
        x, y = batch(rng, (5, 9, 7)[call % 3])
        np.testing.assert_array_equal(
            jitted(x, y).detach().numpy(), eager(x, y).detach().numpy(), err_msg=str(call)
        )
    for eager, jitted in (models[:2], models[2:]):
        for p_e, p_j in zip(eager.parameters(), jitted.parameters(), strict=True):
            np.testing.assert_array_equal(p_j.detach().numpy(), p_e.detach().numpy())
    programs = [r.replay for f in (jitted_a, jitted_b) for rs in f.recordings.values() for r in rs]
    assert len(programs) == 3
    assert all(p.__globals__["placed"] is program.ARENA.array() for p in programs)


def in_a_new_thread(work):
    """``work()``'s result, run in a thread of its own (a fresh arena)."""
    results = []
    thread = threading.Thread(target=lambda: results.append(work()))
    thread.start()
    thread.join()
    return results[0]


def test_the_arena_lives_while_a_program_cut_from_it_does():
    def work():
        _, jitted = eager_and_jitted_steps(0)
        rng = np.random.default_rng(0)
        for _ in range(4):
            jitted(*batch(rng, 5))
        memory = weakref.ref(program.ARENA.array())
        held = memory() is not None
        del jitted
        return held, memory() is None, program.ARENA.array() is None

    assert in_a_new_thread(work) == (True, True, True)


@pytest.mark.parametrize("recorded_first", [True, False])
def test_threads_training_their_own_jitted_steps_do_not_meet(recorded_first):
    """Two threads, each training its own model jitted, switching as often as Python lets
    them: each thread's programs cut their buffers from that thread's arena, one step records
    at a time, and a thread's work while the other records runs eagerly, outside that
    recording; so both trainings end where eager ones do. ``recorded_first``: the steps
    recorded in this thread before, so the threads only replay."""
    steps = [eager_and_jitted_steps(seed) for seed in (0, 1)]
    data = [[batch(np.random.default_rng(seed), 9) for _ in range(40)] for seed in (0, 1)]
    expected = [[eager(x, y).detach().numpy() for x, y in d] for (eager, _), d in zip(steps, data)]
    first = 4 if recorded_first else 0
    got = [
        [jitted(x, y).detach().numpy() for x, y in d[:first]] for (_, jitted), d in zip(steps, data)
    ]

    errors = []

    def train(i):
        jitted = steps[i][1]
        try:
            got[i] += [jitted(x, y).detach().numpy() for x, y in data[i][first:]]
        except Exception as error:  # (raised again below, in the test's thread)
            errors.append(error)

    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=train, args=(i,)) for i in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switching)
    if errors:
        raise errors[0]
    for i in (0, 1):
        for call, (g, e) in enumerate(zip(got[i], expected[i], strict=True)):
            np.testing.assert_array_equal(g, e, err_msg=f"thread {i}, call {call}")


def test_another_threads_work_while_a_step_records_runs_eagerly_outside_it():
    """While the main thread records a step, another thread keeps computing (operations, a
    backward, .item(), an optimizer's zero_grad and step, a seeding): its results are eager
    ones, and the recorded program holds none of its calls (it replays as the eager step)."""
    eager, jitted = eager_and_jitted_steps(0)
    rng = np.random.default_rng(2)
    calls = [batch(rng, 7) for _ in range(6)]
    stop = threading.Event()
    seen = []

    errors = []

    def other():  # what a replay would make again too: an optimizer's calls, a seeding
        w = sg.ones(3, requires_grad=True)
        opt = sg.optim.SGD([w], lr=0.0)
        try:
            while not stop.is_set():
                opt.zero_grad()
                loss = (w * sg.arange(3.0)).sum()
                loss.backward()
                opt.step()
                sg.manual_seed(0)
                seen.append((loss.item(), w.grad.tolist()))
        except Exception as error:  # (raised again below, in the test's thread)
            errors.append(error)

    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    thread = threading.Thread(target=other)
    thread.start()
    try:
        got = [jitted(x, y).detach().numpy() for x, y in calls]
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(switching)
    if errors:
        raise errors[0]
    for call, (x, y) in enumerate(calls):
        np.testing.assert_array_equal(got[call], eager(x, y).detach().numpy(), err_msg=str(call))
    assert seen and all(s == (3.0, [0.0, 1.0, 2.0]) for s in seen)


@pytest.mark.parametrize("inner", ["jitted", "compiled"])
def test_a_jitted_function_or_compiled_module_inside_a_replayed_call_raises(inner):
    """A scheduler's step runs again at each replay, inside the program: a jitted function
    or compiled module it calls would run its own program there, over the same buffers."""
    inner = sg.jit(lambda x: x + 1) if inner == "jitted" else sg.compile(nn.Linear(1, 1))
    model = mlp()
    opt = sg.optim.SGD(model.parameters(), lr=0.1)
    scheduler = sg.optim.lr_scheduler.LambdaLR(opt, lambda _: float(inner(sg.ones(1))[0]))
    train = training_step(model, opt, "loss")

    def step(x, y):
        loss = train(x, y)
        scheduler.step()
        return loss

    jitted = sg.jit(step)
    x, y = batch(np.random.default_rng(0), 5)
    jitted(x, y)
    with pytest.raises(sg.JitError, match=r"(nested jit|compiled Linear).* while recording"):
        jitted(x, y)


def test_a_program_made_from_a_living_programs_source_reuses_its_code():
    """A model built anew and jitted makes the same program and updates: they run the first
    ones' compiled code (Python's compiler is not run again)."""
    functions = []
    for _ in range(2):
        model = mlp()
        opt = sg.optim.Adam(model.parameters(), lr=0.01)
        jitted = sg.jit(training_step(model, opt, "loss"))
        x, y = batch(np.random.default_rng(0), 5)
        for _ in range(4):
            jitted(x, y)
        (recording,) = [r for rs in jitted.recordings.values() for r in rs]
        update = [c for c in recording.replay.__globals__.values() if getattr(c, "scratch", None)]
        functions.append([recording.replay] + [u.run for u in update])
    first, second = functions
    assert len(first) == 2
    assert all(a.__code__ is b.__code__ and a is not b for a, b in zip(first, second))


def test_a_0d_comparison_is_replayed_not_frozen():
    """NumPy returns a comparison of 0-d arrays as a scalar (here ReLU's mask, in its
    gradient): the recording makes it a value of the step, so each replay compares the new
    input (it was a constant, and the third call raised JitError)."""

    def gradient(x):
        return sg.autograd.grad(x.relu() * 3, [x])[0]

    jitted = sg.jit(gradient)
    for value in [1.0, 2.0, -1.0, 3.0, -2.0, 0.5]:
        x = sg.tensor(value, requires_grad=True)
        assert jitted(x).item() == gradient(x).item() == (3.0 if value > 0 else 0.0)


def test_an_elementwise_result_goes_over_a_dead_view_of_the_steps_own_array():
    """A ReLU of a transposed intermediate that nothing reads afterwards is written over it
    (W5's ReLU after the convolution's permute), with eager's bits."""
    model = mlp()

    def forward(x):
        return (model[0](x).t().relu() * 2).sum()

    jitted = sg.jit(forward)
    for x in [sg.randn(5, 6) for _ in range(4)]:
        assert jitted(x).item() == forward(x).item()
    relu = next(line for line in source_of(jitted).splitlines() if "maximum(" in line)
    target, call = relu.strip().split(" = ", 1)
    assert call.startswith("np_maximum(v") and ", out=v" in call  # over its input, a view


@pytest.mark.parametrize("of", ["parameter", "input"])
def test_a_view_of_a_parameter_or_an_input_is_never_written_over(of):
    """Their memory is not the step's: a ReLU of ``w.t()`` or ``x.t()`` makes a new array,
    and neither the parameter nor the caller's tensor changes."""
    model = mlp()
    weight = model[0].weight

    def forward(x):
        viewed = weight.t() if of == "parameter" else x.t()
        return viewed.relu().sum()

    jitted = sg.jit(forward)
    before = weight.detach().numpy().copy()
    for x in [sg.randn(6, 6) for _ in range(4)]:
        given = x.numpy().copy()
        assert jitted(x).item() == forward(x).item()
        np.testing.assert_array_equal(x.numpy(), given)
    np.testing.assert_array_equal(weight.detach().numpy(), before)
    relu = next(line for line in source_of(jitted).splitlines() if "maximum(" in line)
    assert "out=" not in relu


class OneByOneResidual(nn.Module):
    """``h + conv(h)`` with a 1x1 convolution, ``h`` made in the step laid out batch last (as
    a batch norm over the previous layer's permuted product leaves it): the convolution's
    unfold of ``h`` is then a view of ``h``'s memory, made by ``as_strided``."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 1, bias=False)

    def forward(self, x):
        h = x * 2  # (NumPy lays it out as x: batch last)
        return h + self.conv(h)


def residual_weight_grads(how):
    """The convolution's weight gradient of ``OneByOneResidual`` after each of five steps,
    run as ``how`` says (eager, jit of the step, or compile of the model)."""
    sg.manual_seed(0)
    model = OneByOneResidual()
    net = sg.compile(model) if how == "compile" else model

    def step(x):
        model.zero_grad()
        net(x).square().sum().backward()
        return model.conv.weight.grad.clone()

    step = sg.jit(step) if how == "jit" else step
    rng = np.random.default_rng(0)
    batch_last = [rng.standard_normal((4, 3, 3, 2)).astype("f4") for _ in range(5)]
    return [step(sg.tensor(a).permute(3, 0, 1, 2)).numpy() for a in batch_last]


@pytest.mark.parametrize("how", ["jit", "compile"])
def test_an_unfolds_view_of_an_intermediate_is_not_written_over_before_the_backward(how):
    """The residual add may not be written over ``h`` while the convolution's weight gradient
    still reads the unfold's view of it: the recorder follows ``as_strided``'s views (whose
    base is NumPy's DummyArray) to the memory they share. Before, the add overwrote it at
    every replay and the weight's gradient differed from eager's (MobileNet's inverted
    residual blocks under compile, silently)."""
    for mine, theirs in zip(residual_weight_grads(how), residual_weight_grads("eager")):
        np.testing.assert_array_equal(mine, theirs)
