"""The scalar engine against PyTorch (float64) and finite differences, plus its edge cases.

Every expression is written once as a function of its inputs using operators and methods that
`Value` and `torch.Tensor` share, then evaluated with both: values and gradients must agree.
"""

import doctest
import gc
import math
import random
import subprocess
import sys

import pytest

import scratchgrad.scalar as scalar
from scratchgrad.scalar import MLP, Layer, Neuron, Value

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-12, 1e-12


def check_against_torch(f, *inputs: float) -> list[Value]:
    """Evaluate f on Values and on float64 torch tensors; compare the result and every grad."""
    xs = [Value(x) for x in inputs]
    out = f(*xs)
    out.backward()
    ts = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in inputs]
    expected = f(*ts)
    expected.backward()
    assert out.data == pytest.approx(expected.item(), rel=RTOL, abs=ATOL)
    for x, t in zip(xs, ts):
        want = 0.0 if t.grad is None else t.grad.item()  # torch leaves unused inputs at None
        assert x.grad == pytest.approx(want, rel=1e-10, abs=1e-10, nan_ok=True)
    return xs


def check_finite_differences(f, *inputs: float, h: float = 1e-6) -> None:
    """Central differences of the forward pass agree with backward's gradients."""
    xs = [Value(x) for x in inputs]
    f(*xs).backward()
    for i in range(len(inputs)):
        up = list(inputs)
        down = list(inputs)
        up[i] += h
        down[i] -= h
        numeric = (f(*map(Value, up)).data - f(*map(Value, down)).data) / (2 * h)
        assert xs[i].grad == pytest.approx(numeric, rel=1e-6, abs=1e-6)


# Every operation, with numbers on either side where it takes two operands.
UNARY = {
    "neg": lambda x: -x,
    "relu": lambda x: x.relu(),
    "tanh": lambda x: x.tanh(),
    "exp": lambda x: x.exp(),
    "sigmoid": lambda x: x.sigmoid(),
    "square": lambda x: x**2,
    "cube": lambda x: x**3,
    "inverse": lambda x: x**-1,
    "x**-2": lambda x: x**-2,
}
POSITIVE_ONLY = {
    "log": lambda x: x.log(),
    "sqrt": lambda x: x**0.5,
    "x**1.7": lambda x: x**1.7,
    "x**-2.5": lambda x: x**-2.5,
}
BINARY = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / y,
    "pow": lambda x, y: x**y,  # Value exponent: gradients for base and exponent
    "add number": lambda x, y: x + 2.5,
    "radd number": lambda x, y: 2.5 + y,
    "sub number": lambda x, y: x - 2.5,
    "rsub number": lambda x, y: 2.5 - y,
    "mul number": lambda x, y: x * -1.5,
    "rmul number": lambda x, y: -1.5 * y,
    "div number": lambda x, y: x / 4.0,
    "rdiv number": lambda x, y: 3.0 / y,
    "rpow number": lambda x, y: 2.0**y,
}
POINTS = [-2.3, -0.7, 0.4, 1.9]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("x", POINTS)
def test_unary_ops_match_torch_and_finite_differences(name, x):
    check_against_torch(UNARY[name], x)
    check_finite_differences(UNARY[name], x)


@pytest.mark.parametrize("name", POSITIVE_ONLY)
@pytest.mark.parametrize("x", [0.3, 1.0, 2.7])
def test_positive_domain_ops_match_torch_and_finite_differences(name, x):
    check_against_torch(POSITIVE_ONLY[name], x)
    check_finite_differences(POSITIVE_ONLY[name], x)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize(("x", "y"), [(0.8, 1.3), (2.1, -0.6), (1.7, 2.0)])
def test_binary_ops_match_torch_and_finite_differences(name, x, y):
    check_against_torch(BINARY[name], x, y)
    check_finite_differences(BINARY[name], x, y)


def test_pow_with_a_value_exponent_at_special_bases():
    # At x == 0 the exponent's gradient x**k * log(x) is taken as 0, and for x < 0 with an
    # integer exponent it is nan, both as in PyTorch.
    check_against_torch(lambda x, k: x**k, 0.0, 2.0)
    check_against_torch(lambda x, k: x**k, -1.5, 3.0)


def micrograd_sanity_check(x):
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    return h + q + q * x


def micrograd_more_ops(a, b):
    c = a + b
    d = a * b + b**3
    c = c + c + 1
    c = c + 1 + c + (-a)
    d = d + d * 2 + (b + a).relu()
    d = d + 3 * d + (b - a).relu()
    e = c - d
    f = e**2
    g = f / 2.0
    return g + 10.0 / f


COMPOSITES = {
    "micrograd sanity": micrograd_sanity_check,
    "micrograd more ops": micrograd_more_ops,
    "tanh neuron": lambda x1, x2, w1, w2, b: (x1 * w1 + x2 * w2 + b).tanh(),
    "tanh from exp": lambda x: ((2 * x).exp() - 1) / ((2 * x).exp() + 1),
    "softplus": lambda x: (1 + x.exp()).log(),
    "logistic loss": lambda w, x, y: -(y * (w * x).sigmoid().log()),
    "gaussian": lambda x, m, s: (-((x - m) ** 2) / (2 * s**2)).exp() / s,
    "power tower": lambda x, y: (x**y) ** (1 / y) + y**x,
    "rational": lambda x, y: (x * y - 1) / (x**2 + y**2 + 1),
    "mse of two": lambda p, q: ((p - 1) ** 2 + (q + 1) ** 2) / 2,
    "sigmoid chain": lambda x: x.sigmoid().sigmoid().tanh().exp(),
    "relu mix": lambda x, y: (x - y).relu() * (y - x).relu() + (x * y).relu() ** 2,
    "log of product": lambda x, y: (x * y).log() - x.log() - y.log() + x / y,
}
COMPOSITE_INPUTS = {
    "micrograd sanity": (-4.0,),
    "micrograd more ops": (-4.0, 2.0),
    "tanh neuron": (2.0, 0.0, -3.0, 1.0, 6.8813735870195432),
    "tanh from exp": (0.37,),
    "softplus": (-1.2,),
    "logistic loss": (0.8, -1.3, 1.0),
    "gaussian": (0.4, -0.2, 0.7),
    "power tower": (1.3, 2.2),
    "rational": (0.6, -1.4),
    "mse of two": (0.3, 0.9),
    "sigmoid chain": (0.25,),
    "relu mix": (1.5, 0.5),
    "log of product": (1.7, 0.6),
}


@pytest.mark.parametrize("name", COMPOSITES)
def test_composite_expressions_match_torch_and_finite_differences(name):
    check_against_torch(COMPOSITES[name], *COMPOSITE_INPUTS[name])
    check_finite_differences(COMPOSITES[name], *COMPOSITE_INPUTS[name])


def test_reuse_of_a_node_sums_the_gradients_of_each_use():
    x = Value(3.0)
    (x * x).backward()
    assert x.grad == 6.0  # a set of parents would keep one edge and give 3.0
    assert (x * x)._prev == (x, x)
    check_against_torch(lambda x: x * x * x + x, 3.0)
    # One interior node feeding many others.
    check_against_torch(lambda x: (a := x + 1) * a * a + a.tanh() + a / (a + 2) + a, 0.3)


def test_a_million_operation_chain_backwards_without_recursion():
    n = 1_000_000
    x = Value(0.5)
    y = x
    for _ in range(n):
        y = y + x  # y = (n + 1) x, with x used a million times
    y.backward()
    assert x.grad == n + 1
    assert y.data == pytest.approx(0.5 * (n + 1))
    del y  # freeing the chain must not overflow the C stack either


def test_tanh_and_sigmoid_stay_finite_at_the_tails():
    for x in (1000.0, -1000.0):
        check_against_torch(lambda v: v.tanh(), x)
        check_against_torch(lambda v: v.sigmoid(), x)
    assert Value(1000.0).tanh().data == 1.0 and Value(-1000.0).tanh().data == -1.0
    assert Value(-1000.0).sigmoid().data == 0.0
    for x in (-745.0, -40.0, 40.0, 745.0):
        check_against_torch(lambda v: v.sigmoid(), x)


@pytest.mark.parametrize("x", [0.0, -1.0, -1e-300])
def test_log_of_a_non_positive_input_names_the_op_and_the_value(x):
    with pytest.raises(ValueError, match=rf"log: .*{x!r}"):
        Value(x).log()


def test_pow_without_a_real_result_is_a_clear_error():
    with pytest.raises(ValueError, match=r"pow: -8.0 \*\* 0.5"):
        Value(-8.0) ** 0.5


def test_gradients_accumulate_over_backward_calls_as_in_pytorch():
    x, w = Value(0.7), Value(-1.3)
    h = (x * w).tanh()
    out = h * h + x
    out.backward()
    out.backward()

    tx = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    tw = torch.tensor(-1.3, dtype=torch.float64, requires_grad=True)
    th = (tx * tw).tanh()
    th.retain_grad()
    tout = th * th + tx
    tout.backward(retain_graph=True)
    th_grad_once = th.grad.item()
    tout.backward()

    assert x.grad == pytest.approx(tx.grad.item(), rel=RTOL)  # twice the single gradient
    assert w.grad == pytest.approx(tw.grad.item(), rel=RTOL)
    assert h.grad == pytest.approx(th_grad_once, rel=RTOL)  # interior: the latest call's
    x.grad = w.grad = 0.0
    out.backward()
    assert x.grad == pytest.approx(tx.grad.item() / 2, rel=RTOL)


def test_backward_of_a_leaf_accumulates_one():
    x = Value(2.0)
    x.backward()
    x.backward()
    assert x.grad == 2.0


def test_a_graph_has_no_reference_cycles():
    def graph(value_class):
        x, w = value_class(0.5), value_class(-2.0)
        out = x * w + x
        for _ in range(10):
            out = out * w + x
        out.backward()

    gc.collect()
    gc.disable()
    try:
        graph(Value)
        assert gc.collect() == 0  # everything was freed by reference counting already
        micrograd = pytest.importorskip("micrograd.engine")
        graph(micrograd.Value)  # the classic closure captures `out`: the test can fail
        assert gc.collect() > 0
    finally:
        gc.enable()


def test_repr_and_slots():
    v = Value(4.0)
    v.grad = 1.0
    assert repr(v) == "Value(data=4.0000, grad=1.0000)"
    assert not hasattr(v, "__dict__")
    out = v * 2
    assert out._op == "*" and out._prev[0] is v and isinstance(out._prev, tuple)


def test_importing_the_scalar_engine_needs_no_numpy():
    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "from scratchgrad.scalar import MLP, Value\n"
        "out = MLP(2, [3, 1])([1.0, -1.0]); out.backward()\n"
        "assert 'numpy' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_doc_examples_run():
    assert doctest.testmod(scalar).failed == 0


# The network library.


def test_neuron_layer_and_mlp_compute_what_torch_computes():
    rng = random.Random(0)
    model = MLP(3, [4, 4, 1], rng=rng)
    x = [0.5, -1.2, 2.0]
    out = model(x)
    out.backward()

    params = [
        torch.tensor(p.data, dtype=torch.float64, requires_grad=True) for p in model.parameters()
    ]
    it = iter(params)
    h = [torch.tensor(v, dtype=torch.float64) for v in x]
    for layer in model.layers:
        neurons = []
        for neuron in layer.neurons:
            w = [next(it) for _ in neuron.w]
            b = next(it)
            neurons.append((sum(wi * hi for wi, hi in zip(w, h)) + b).tanh())
        h = neurons
    h[0].backward()
    assert out.data == pytest.approx(h[0].item(), rel=RTOL)
    for p, t in zip(model.parameters(), params):
        assert p.grad == pytest.approx(t.grad.item(), rel=1e-10, abs=1e-14)


def test_mlp_parameter_counts():
    assert len(MLP(2, [8, 8, 1]).parameters()) == 105  # 2*8+8 + 8*8+8 + 8+1
    assert len(MLP(3, [8, 8, 1]).parameters()) == 113
    assert len(MLP(2, [4, 1]).parameters()) == 17


def test_activation_options():
    rng = random.Random(1)
    relu_net = MLP(2, [3, 2], activation="relu", linear_output=True, rng=rng)
    assert [n.activation for layer in relu_net.layers for n in layer.neurons] == ["relu"] * 3 + [
        "linear"
    ] * 2
    assert isinstance(relu_net([1.0, 2.0]), list)  # two outputs
    n = Neuron(2, activation="sigmoid", rng=rng)
    expected = 1 / (1 + math.exp(-(n.w[0].data * 0.3 + n.w[1].data * -0.4)))
    assert n([0.3, -0.4]).data == pytest.approx(expected, rel=RTOL)
    with pytest.raises(ValueError, match="activation"):
        Layer(2, 2, activation="softmax")


def test_weights_are_uniform_and_seedable():
    scalar.manual_seed(3)
    a = [p.data for p in MLP(2, [8, 1]).parameters()]
    scalar.manual_seed(3)
    b = [p.data for p in MLP(2, [8, 1]).parameters()]
    c = [p.data for p in MLP(2, [8, 1], rng=random.Random(3)).parameters()]
    assert a == b == c
    weights = [p.data for n in MLP(2, [50]).layers[0].neurons for p in n.w]
    assert all(-1 <= w <= 1 for w in weights) and min(weights) < -0.8 and max(weights) > 0.8


def test_zero_grad():
    model = MLP(2, [2, 1], rng=random.Random(0))
    model([1.0, 1.0]).backward()
    assert any(p.grad != 0 for p in model.parameters())
    model.zero_grad()
    assert all(p.grad == 0 for p in model.parameters())
