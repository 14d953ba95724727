"""The way the matrix products in a replayed step run (``jit/gemm.py``): a product computed
as ``(b.T @ a.T).T``, or split into pieces along its longest size, is kept only where it has
the forward's own call's bits (the step's own arrays replaced by random ones of their
layouts) and wins two timings, and the generated source says how each big product runs and why.

The oracles: the eager step (a program with every product swapped that may be ends with
eager's losses and states, bit for bit) and a product made to differ by one unit in the last
place, which must be refused. Besides W4 and W5 at full size once (the choice as it is made
there), sizes are tiny: ``gemm.BIG`` is lowered so that their products are tried (and
``gemm.PIECE`` so that they split), and ``gemm.MARGIN`` decides the timing's verdict (inf: the
other way always wins; 0: it never does).
"""

import math
import re

import numpy as np
import pytest
from test_jit_training import assert_same_state, state, tensor_api, tiny, workloads

import scratchgrad as sg
from scratchgrad.jit import gemm, program
from scratchgrad.nn import functional as F
from scratchgrad.ops import matmul
from scratchgrad.ops.matmul import MatMul


@pytest.fixture
def sources(monkeypatch):
    """The source of every program compiled in the test, in order."""
    compiled = []
    generate = program.generate

    def generate_and_keep(*args, **kwargs):
        source, namespace = generate(*args, **kwargs)
        compiled.append(source)
        return source, namespace

    monkeypatch.setattr(program, "generate", generate_and_keep)
    return compiled


def try_every_product(monkeypatch, margin: float) -> None:
    """Every product offered to the choice: eager code computes them as they come (too small
    to sum in pieces, and not swapped, as where BLAS has kernels for small matrices)."""
    monkeypatch.setattr(matmul, "SMALL_MATRIX_KERNELS", True)
    monkeypatch.setattr(matmul, "HASWELL_KERNELS", False)
    monkeypatch.setattr(gemm, "BIG", 0)
    monkeypatch.setattr(gemm, "MARGIN", margin)


def split_every_product(monkeypatch) -> None:
    """Products whose longest size is M or N split into pieces wherever their bits allow."""
    try_every_product(monkeypatch, margin=math.inf)
    monkeypatch.setattr(gemm, "PIECE", 1 << 12)
    monkeypatch.setattr(gemm, "SHORTEST_PIECE", 1)


def train(problem, mode: str, steps: int = 6):
    """The losses and the final state after ``steps`` steps: ``mode`` eager, jit (the whole
    step) or compile (the model)."""
    model = tensor_api.build_model(sg, problem)
    opt = tensor_api.make_optimizer(sg, problem, model.parameters())
    net = sg.compile(model) if mode == "compile" else model
    loss_fn = F.mse_loss if problem.loss == "mse" else F.cross_entropy

    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss

    step = sg.jit(step) if mode == "jit" else step
    batches = [(sg.from_numpy(x), sg.from_numpy(y)) for x, y in problem.batches]
    losses = [step(*batches[i % len(batches)]).item() for i in range(steps)]
    return losses, state(model, opt)


def choices(source: str) -> list[str]:
    """The comments of the products whose orientation was chosen."""
    return re.findall(r"# ((?:swapped|split|direct): .*)", source)


@pytest.mark.parametrize("mode", ["jit", "compile"])
@pytest.mark.parametrize("workload_id", ["W4", "W5"])
def test_programs_with_swapped_products_equal_eager(workload_id, mode, sources, monkeypatch):
    """W4's MLP (784-32-32-10, batch 8: its forward products and an input gradient may be
    swapped) and W5's CNN (batch 4: its convolutions' weight gradients, stacks of one
    matrix, and the linear layer), every product swapped wherever its bits allow."""
    try_every_product(monkeypatch, margin=math.inf)
    problem = tiny(workload_id)
    eager_losses, eager_state = train(problem, "eager")
    losses, jitted_state = train(problem, mode)
    assert losses == eager_losses
    assert_same_state(jitted_state, eager_state)
    said = [c for source in sources[-2:] for c in choices(source)]  # the kept recording's
    assert len(said) >= (3 if workload_id == "W5" else 4)
    # swapped, or refused for its bits: nothing else may keep the direct product here
    assert all(c.startswith("swapped:") or c.endswith("the bits differ") for c in said), said
    assert any(c.startswith("swapped:") for c in said), said  # and swapped programs ran
    if workload_id == "W5":  # the stacks' own call, matmul
        assert "np_matmul(" in "".join(sources[-2:])


@pytest.mark.parametrize(
    "workload_id, small_matrix_kernels", [("W4", None), ("W5", True), ("W5", False)]
)
def test_workloads_at_full_size_with_the_products_as_chosen_equal_eager(
    workload_id, small_matrix_kernels, sources, monkeypatch
):
    """W4 (784-512-512-10, batch 128, whose big products take about 1 ms each) and W5
    (batch 64), with the real threshold and timings: whichever way each big product was
    chosen, jitted training is eager's bit for bit. W5's weight gradients are summed in
    pieces where BLAS has kernels for small matrices (ops/matmul.py), and swapped with
    OpenBLAS's Haswell kernels (eagerly too, so the program calls what eager code called):
    both are checked on any machine."""
    if small_matrix_kernels is not None:  # (without them: the Haswell kernels)
        monkeypatch.setattr(matmul, "SMALL_MATRIX_KERNELS", small_matrix_kernels)
        monkeypatch.setattr(matmul, "HASWELL_KERNELS", not small_matrix_kernels)
    problem = workloads.make_problem(workload_id)
    steps = 4 if workload_id == "W4" else 5  # eager, two recordings, replays
    eager_losses, eager_state = train(problem, "eager", steps)
    losses, jitted_state = train(problem, "jit", steps)
    assert losses == eager_losses
    assert_same_state(jitted_state, eager_state)
    said = choices(sources[-1])
    # W5's weight gradients, summed in pieces or swapped as eagerly, are not for the choice
    eager_ways = {"k_pieces(": 2 * (small_matrix_kernels is True)}
    eager_ways["k_swapped_product("] = 2 * (small_matrix_kernels is False)
    for call, count in eager_ways.items():
        assert sources[-1].count(call) == count, call
    expected = {"W4": 3, "W5": 1}[workload_id]  # docs/jit.md's table
    assert len(said) == expected, said


@pytest.mark.parametrize("workload_id", ["W4", "W5"])
def test_programs_with_split_products_equal_eager(workload_id, sources, monkeypatch):
    """W4's and W5's steps (tiny sizes) with every product whose longest size is M or N
    split into pieces of at most 4096 multiply-adds wherever its bits allow (the others
    swapped): jitted training is eager's bit for bit."""
    split_every_product(monkeypatch)
    problem = tiny(workload_id)
    eager_losses, eager_state = train(problem, "eager")
    losses, jitted_state = train(problem, "jit")
    assert losses == eager_losses
    assert_same_state(jitted_state, eager_state)
    said = choices(sources[-1])
    if not any(c.startswith("split:") for c in said):  # refused, as it must be where the
        # BLAS sums the pieces another way (OpenBLAS's Haswell kernels on an AMD EPYC)
        assert "direct: split, the bits differ" in said, said
        assert "k_split(" not in sources[-1]
        pytest.skip("this BLAS gives these products split other bits: their replay is untested")
    assert "k_split(" in sources[-1]


def test_a_linear_layer_split_by_rows_equals_eager(sources, monkeypatch):
    """A linear layer over a long batch (512 x 6 @ 6 x 8, plus its bias) split into blocks
    of rows, trained jitted: eager's bits."""
    split_every_product(monkeypatch)
    rng = np.random.default_rng(3)
    x0, target = (rng.standard_normal((512, n)).astype(np.float32) for n in (6, 8))
    runs = []
    for jitted in (False, True):
        sg.manual_seed(0)
        layer = sg.nn.Linear(6, 8)
        opt = sg.optim.SGD(layer.parameters(), lr=0.1)

        def step(x, y, layer=layer, opt=opt):
            opt.zero_grad()
            loss = F.mse_loss(layer(x), y)
            loss.backward()
            opt.step()
            return loss

        run = sg.jit(step) if jitted else step
        losses = [run(sg.from_numpy(x0), sg.from_numpy(target)).item() for _ in range(4)]
        runs.append((losses, *(p.detach().numpy().copy() for p in layer.parameters())))
    for eager, jitted in zip(*runs):
        np.testing.assert_array_equal(np.asarray(jitted), np.asarray(eager))
    assert re.search(r"k_split\(v\d+, c\d+\.T, c\d+, \(512, 8\), True, ", sources[-1]), sources[-1]


@pytest.mark.parametrize("rows", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_split_computes_the_product(rows, with_bias):
    """Integers in floats sum exactly in any order: the pieces must give the whole product,
    into ``out`` when given."""
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, (37, 5)).astype(np.float64)
    b = rng.integers(-4, 5, (5, 23)).astype(np.float64)
    bias = rng.integers(-4, 5, 23).astype(np.float64) if with_bias else None
    expected = a @ b + (0 if bias is None else bias)
    np.testing.assert_array_equal(gemm.split(a, b, bias, (37, 23), rows, 4), expected)
    out = np.empty((1, 37, 23))
    assert gemm.split(a, b, bias, (1, 37, 23), rows, 6, out=out) is out
    np.testing.assert_array_equal(out[0], expected)


@pytest.mark.parametrize("way", ["swapped", "split"])
def test_another_way_with_other_bits_is_refused(way, sources, monkeypatch):
    """A product computed another way one unit in the last place away from eager's is
    never replayed."""
    split_every_product(monkeypatch)
    other_way = getattr(gemm, way)

    def one_ulp_off(*args, **kwargs):
        result = other_way(*args, **kwargs)
        first = result.reshape(-1)[:1]
        first[...] = np.nextafter(first, np.inf)
        return result

    monkeypatch.setattr(gemm, way, one_ulp_off)
    problem = tiny("W4")
    eager_losses, eager_state = train(problem, "eager")
    losses, jitted_state = train(problem, "jit")
    assert losses == eager_losses
    assert_same_state(jitted_state, eager_state)
    refused = [c for c in choices(sources[-1]) if c == f"direct: {way}, the bits differ"]
    assert refused, choices(sources[-1])
    assert f"k_{way}(" not in sources[-1]


@pytest.mark.parametrize("margin, way", [(math.inf, "swapped|split"), (0.0, "direct")])
def test_the_source_names_the_choice_and_its_timings(margin, way, sources, monkeypatch):
    split_every_product(monkeypatch)
    monkeypatch.setattr(gemm, "MARGIN", margin)
    train(tiny("W4"), "jit", steps=3)
    said = choices(sources[-1])
    timed = [c for c in said if not c.endswith("the bits differ")]
    refused = {m for c in said for m in re.findall(r"direct: (\w+), the bits differ", c)}
    # every way was timed, or refused for its bits (split, on some BLAS: see above)
    assert timed and {c.split()[-1] for c in timed} | refused == {"swapped", "split"}, said
    for comment in timed:
        other = comment.split()[-1]
        assert re.fullmatch(rf"({way}): \d+ us direct, \d+ us {other}", comment), comment
        assert way == "direct" or comment.startswith(other)


def test_small_products_and_short_inner_sizes_are_not_tried(sources):
    """With the real threshold, a tiny step's products run as recorded, without a comment;
    a weight gradient (inner size the batch, shorter than the result) is never tried."""
    train(tiny("W4"), "jit", steps=3)
    assert choices(sources[-1]) == []


@pytest.mark.parametrize("transpose_x", [False, True])
def test_stacks_of_one_matrix_replay_as_eager(transpose_x, sources, monkeypatch):
    """A product of two stacks of one matrix (``x.mT @ y`` in one node too) replayed swapped,
    and its gradients (stacks again, direct), jitted, equal eager's bit for bit."""
    try_every_product(monkeypatch, margin=math.inf)
    rng = np.random.default_rng(7)
    x0 = rng.standard_normal((1, 256, 32) if transpose_x else (1, 32, 256)).astype(np.float32)
    y0 = rng.standard_normal((1, 256, 32)).astype(np.float32)

    def step(x, y):
        out = MatMul.apply(x, y, transpose_x=transpose_x)
        (out * out).sum().backward()
        return out

    results = []
    for run in (step, sg.jit(step)):
        x, y = sg.tensor(x0, requires_grad=True), sg.tensor(y0, requires_grad=True)
        outs = [
            run(x, y).detach().numpy() for _ in range(4)
        ]  # eager or eager, records twice, replays
        results.append((outs, x.grad.numpy(), y.grad.numpy()))
    for eager, jitted in zip(*results):
        np.testing.assert_array_equal(np.asarray(jitted), np.asarray(eager))
    assert "np_matmul(" in sources[-1]
    assert (".swapaxes(-1, -2)" in sources[-1]) == transpose_x
    # the forward's (the gradients' inner size is short), swapped: with 6 x 256 @ 256 x 5
    # OpenBLAS's swapped way had other bits when x was not transposed
    (said,) = choices(sources[-1])
    if said.endswith("the bits differ"):  # refused, as it must be (OpenBLAS's Haswell kernels)
        pytest.skip(
            "this BLAS gives the swapped product other bits: the swapped replay is untested"
        )
    assert said.startswith("swapped:"), said


def linear_forward(x0, after_each=lambda: None):
    """A jitted forward of one linear layer (300 -> 8, bias) on ``x0``, called four times
    without grad (eagerly, two recordings, a replay), each result equal to eager's: what
    ``after_each()`` returned after each call."""
    sg.manual_seed(0)
    layer = sg.nn.Linear(300, 8)
    forward = sg.jit(lambda x: layer(x) * 2)
    results, counts = [], []
    with sg.no_grad():
        for _ in range(4):
            results.append(forward(sg.from_numpy(x0)).numpy())
            counts.append(after_each())
        eager = (layer(sg.from_numpy(x0)) * 2).numpy()
    for result in results:
        np.testing.assert_array_equal(result, eager)
    return counts


@pytest.fixture
def counted(monkeypatch):
    """``gemm.swapped`` counting its calls (in ``gemm.swapped.calls``)."""
    swapped = gemm.swapped

    def counting(*args, **kwargs):
        counting.calls += 1
        return swapped(*args, **kwargs)

    counting.calls = 0
    monkeypatch.setattr(gemm, "swapped", counting)


def test_only_the_compiled_recording_tries_the_swap(counted, sources, monkeypatch):
    """The first recording, only compared with the second, computes no product either way;
    the second's, compiled, is checked and timed once, then replayed swapped."""
    try_every_product(monkeypatch, margin=math.inf)
    x0 = np.random.default_rng(0).standard_normal((8, 300)).astype(np.float32)
    counts = linear_forward(x0, lambda: gemm.swapped.calls)
    assert counts[:2] == [0, 0]
    assert counts[2] == 1 + 2 * gemm.ROUNDS  # the bits, then two timings
    assert counts[3] == counts[2]  # (the replay calls kernels.NAMES's, not counted)
    assert len(sources) == 1 and "k_swapped" in sources[0]


@pytest.mark.parametrize(
    "timings, kept",
    [([(1.0, 0.1), (1.0, 0.1)], True), ([(1.0, 0.1), (1.0, 1.0)], False), ([(1.0, 1.0)], False)],
)
def test_a_swap_must_win_two_timings(timings, kept, sources, monkeypatch):
    """One timing for the swap (a busy moment slowing the direct product) does not keep it."""
    monkeypatch.setattr(gemm, "BIG", 0)
    given = list(timings)
    monkeypatch.setattr(gemm, "median_timings", lambda *calls: given.pop(0))
    linear_forward(np.random.default_rng(0).standard_normal((8, 300)).astype(np.float32))
    (said,) = choices(sources[-1])
    expected = "swapped" if kept else "direct"
    assert said == f"{expected}: 1000000 us direct, {1e6 * timings[-1][1]:.0f} us swapped"
    assert not given  # every timing given was taken


@pytest.mark.parametrize("recorded", ["zeros", "small integers"])
def test_bits_are_checked_on_random_operands(recorded, sources, monkeypatch):
    """A swapped way that sums in float64 (rounded once) has a float32 product's bits on
    recorded numbers that every order sums exactly (zeros, small integers), but not on
    others: it is refused, whatever the step recorded."""
    try_every_product(monkeypatch, margin=math.inf)

    def in_float64(a, b, scratch, bias, shape, out=None):
        product = a.astype(np.float64) @ b.astype(np.float64) + (0 if bias is None else bias)
        out = np.empty(shape, a.dtype) if out is None else out
        out[...] = product.reshape(shape)
        return out

    monkeypatch.setattr(gemm, "swapped", in_float64)
    rng = np.random.default_rng(0)
    x0 = rng.integers(-3, 4, (8, 300)).astype(np.float32)
    linear_forward(x0 * (recorded != "zeros"))
    (said,) = choices(sources[-1])
    assert said == "direct: swapped, the bits differ"


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a,
        lambda a: a.T,
        lambda a: a[::-2, 1::3],
        lambda a: a[2:, ::-1].T[None],
    ],
    ids=["C-ordered", "transposed", "strided", "stacked reversed"],
)
def test_random_operands_have_the_recorded_layout(view):
    recorded = view(np.zeros((10, 12), np.float32))
    layout = (recorded.shape, recorded.strides, recorded.dtype)
    memory = np.empty(gemm.extent(layout), np.float32)
    drawn = gemm.random_like(layout, np.random.default_rng(0), memory)
    assert np.shares_memory(drawn, memory) and drawn.size <= memory.size
    assert (drawn.shape, drawn.strides, drawn.dtype) == layout
    assert len(np.unique(drawn)) == drawn.size and np.all(abs(drawn) <= 0.5)
