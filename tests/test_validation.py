"""Bad input is refused before anything is computed or changed, with PyTorch's error (or a
clearer one naming the op and the offending value); each case here once gave a silent wrong
result, a raw NumPy message or a traceback from deep inside."""

import warnings

import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import functional as F
from scratchgrad.scalar import MLP, Layer, Neuron, Value
from scratchgrad.tensor import names_bad_arguments


def test_batchnorm_refuses_the_wrong_channel_count_before_touching_its_statistics():
    bn = nn.BatchNorm1d(4)
    bn(sg.randn(8, 4))
    before = {k: v.numpy().copy() for k, v in bn.state_dict().items()}
    with pytest.raises(RuntimeError, match=r"BatchNorm1d\(4\): expected input with 4 channels"):
        bn(sg.randn(8, 3))
    after = bn.state_dict()
    assert before.keys() == after.keys()
    for key, value in before.items():
        np.testing.assert_array_equal(after[key].numpy(), value, err_msg=key)
    with pytest.raises(RuntimeError):
        torch.nn.BatchNorm1d(4)(torch.randn(8, 3))


@pytest.mark.parametrize("value", [1.5, -0.1, float("nan")])
def test_binary_cross_entropy_wants_probabilities(value):
    x, target = [0.5, value], [1.0, 0.0]
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        torch.nn.functional.binary_cross_entropy(torch.tensor(x), torch.tensor(target))
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(sg.tensor(x), sg.tensor(target))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.nn.functional.conv2d(x, m.ones(1, 1, 3, 3), stride=0),
        lambda m, x: m.nn.functional.conv2d(x, m.ones(1, 1, 3, 3), dilation=0),
        lambda m, x: m.nn.functional.conv2d(x, m.ones(1, 1, 6, 6)),
        lambda m, x: m.nn.functional.max_pool2d(x, 0),
        lambda m, x: m.nn.functional.max_pool2d(x, 2, stride=0),
        lambda m, x: m.nn.functional.avg_pool2d(x, 6),
    ],
)
def test_conv_and_pool_check_kernel_stride_dilation_and_size(call):
    with pytest.raises(RuntimeError):
        call(torch, torch.ones(1, 1, 5, 5))
    with pytest.raises((RuntimeError, ValueError), match="kernel|stride|dilation"):
        call(sg, sg.ones(1, 1, 5, 5))


def test_conv2d_on_an_empty_batch_returns_an_empty_result():
    out = nn.Conv2d(1, 2, 3)(sg.zeros(0, 1, 5, 5))
    expected = torch.nn.Conv2d(1, 2, 3)(torch.zeros(0, 1, 5, 5))
    assert out.shape == tuple(expected.shape) == (0, 2, 3, 3)


@pytest.mark.parametrize("op", ["__floordiv__", "__mod__"])
@pytest.mark.parametrize("divisor", [0, [0, 1]])
def test_integer_division_by_zero_raises_as_torch(op, divisor):
    x = [7, 8]
    other = divisor if isinstance(divisor, int) else torch.tensor(divisor)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        getattr(torch.tensor(x), op)(other)
    other = divisor if isinstance(divisor, int) else sg.tensor(divisor)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        getattr(sg.tensor(x), op)(other)
    assert (sg.tensor(x) // 3).tolist() == [2, 2] and (sg.tensor(x) % 3).tolist() == [1, 2]


@pytest.mark.parametrize(
    "call, good, bad, message",
    [
        (lambda x, d: x // d, [1, 2], [1, 0], "floor_divide: ZeroDivisionError"),
        (lambda x, d: x % d, [1, 2], [0, 2], "remainder: ZeroDivisionError"),
        (lambda x, i: x.gather(0, i), [0, 1], [-1, 1], "gather: index -1 is out of bounds"),
        (lambda x, i: x.gather(0, i), [0, 1], [0, 2], "gather: index 2 is out of bounds"),
        (lambda x, i: F.embedding(i, x[:, None]), [0, 1], [-1, 0], "embedding: index -1"),
        (lambda x, p: F.binary_cross_entropy(p, p), [0.5, 1], [0.5, 2], "between 0 and 1, got 2"),
        (lambda x, i: F.one_hot(i, 2), [0, 1], [0, 2], "smaller than num_classes"),
        (lambda x, i: F.one_hot(i, 2), [0, 1], [-1, 1], "must be non-negative"),
    ],
)
def test_a_jitted_call_checks_each_calls_values(call, good, bad, message):
    """The checks of values run again at every replay (a replay divided by zero as NumPy does,
    to 0, a gather or an embedding let -1 pick the last entry, binary cross-entropy took the
    log of a negative number, one_hot gave rows of zeros)."""
    jitted, x = sg.jit(call), sg.tensor([7, 8])
    for _ in range(3):
        assert jitted(x, sg.tensor(good)).tolist() == call(x, sg.tensor(good)).tolist()
    with pytest.raises((RuntimeError, IndexError), match=message):
        jitted(x, sg.tensor(bad))


def test_a_jitted_one_hot_refuses_to_read_its_class_count_from_the_values():
    with pytest.raises(sg.jit.JitError, match=r"one_hot\(num_classes=-1\).* at .*test_valid"):
        jitted = sg.jit(lambda i: F.one_hot(i))
        for _ in range(3):  # the first call runs eagerly, the next records
            jitted(sg.tensor([0, 2]))


@pytest.mark.parametrize("loss", ["mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss"])
def test_regression_losses_warn_when_the_target_broadcasts(loss):
    with pytest.warns(UserWarning, match=r"target size .* different to the input size") as ours:
        getattr(F, loss)(sg.ones(3, 1), sg.ones(3))
    with pytest.warns(UserWarning) as theirs:
        getattr(torch.nn.functional, loss)(torch.ones(3, 1), torch.ones(3))
    assert "likely lead to incorrect results due to broadcasting" in str(ours[0].message)
    assert "likely lead to incorrect results due to broadcasting" in str(theirs[0].message)
    assert ours[0].filename == __file__  # the warning points at the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(F, loss)(sg.ones(3), sg.ones(3))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m: m.arange(0, 10, 0), "step must be nonzero"),
        (lambda m: m.ones(2, 3).repeat(2), "can not be smaller than number of dimensions"),
        (lambda m: m.ones(2, 3).split(0), "split"),
        (lambda m: m.ones(2, 3).chunk(0), "chunk expects `chunks` to be greater than 0"),
        (lambda m: m.zeros(0).argmax(), "Expected reduction dim to be specified"),
        (
            lambda m: m.nn.functional.cross_entropy(
                m.zeros(2, 3), m.tensor([0, 1]), weight=m.ones(4)
            ),
            "weight",
        ),
        (
            lambda m: m.nn.functional.smooth_l1_loss(m.zeros(2), m.ones(2), beta=-1.0),
            r"smooth_l1_loss does not support negative values for beta \(-1.0\)",
        ),
    ],
)
def test_degenerate_input_is_a_clear_error(call, message):
    with pytest.raises((RuntimeError, IndexError)):
        call(torch)
    with pytest.raises((RuntimeError, IndexError), match=message):
        call(sg)


def test_a_ragged_list_is_a_clear_value_error():
    with pytest.raises(ValueError):
        torch.tensor([[1.0, 2.0], [3.0]])
    with pytest.raises(ValueError, match="tensor: the nested sequences must all have the same"):
        sg.tensor([[1.0, 2.0], [3.0]])


# ---- the scalar engine ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "model, x",
    [
        (Neuron(3), [1.0, 2.0]),
        (Neuron(2), [1.0, 2.0, 3.0]),
        (Layer(2, 4), [1.0]),
        (MLP(2, [4, 1]), [1.0, 2.0, 3.0]),
    ],
)
def test_scalar_models_check_the_input_length(model, x):
    with pytest.raises(ValueError, match=r"Neuron\(\d.*takes \d inputs, got \d"):
        model(x)


def test_scalar_division_by_zero_names_the_division():
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        Value(1.0) / 0
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        1.0 / Value(0.0)
    with pytest.raises(ZeroDivisionError, match="pow"):
        Value(0.0) ** -1
    assert (Value(1.0) / 4).data == 0.25


# ---- hooks ------------------------------------------------------------------------------------


@pytest.mark.parametrize("leaf", [True, False])
def test_a_hook_returning_a_wrong_shape_names_the_hook_and_the_tensor(leaf):
    def halve_wrongly(grad):
        return grad.sum()

    x = sg.ones(2, 3, requires_grad=True)
    target = x if leaf else x * 2
    target.register_hook(halve_wrongly)
    where = "a leaf" if leaf else "the result of Mul"
    with pytest.raises(
        RuntimeError, match=rf"halve_wrongly.*{where} of shape \(2, 3\).*shape \(\)"
    ):
        (target * 3).sum().backward()


# ---- a non-Tensor where a Tensor is expected --------------------------------------------------


@pytest.mark.parametrize(
    "call, name, argument",
    [
        (lambda m: m.nn.functional.linear([1.0, 2.0], m.ones(2, 2)), "linear", "'input'"),
        (lambda m: m.nn.functional.relu([1.0]), "relu", "'input'"),
        (lambda m: m.nn.functional.mse_loss(m.ones(2), [1.0, 2.0]), "mse_loss", "'target'"),
        (lambda m: m.nn.functional.cross_entropy(m.ones(2, 3), [0, 1]), "cross_entropy", ""),
        (lambda m: m.nn.functional.conv2d([1.0], m.ones(1, 1, 1, 1)), "conv2d", "'input'"),
        (lambda m: m.cat([[1.0], [2.0]]), "cat", "'tensors'"),
    ],
)
def test_a_non_tensor_argument_is_a_type_error_naming_the_function(call, name, argument):
    with pytest.raises((TypeError, AttributeError)):  # PyTorch's mse_loss: AttributeError
        call(torch)
    with pytest.raises(TypeError, match=rf"{name}\(\): argument {argument}.*, not list"):
        call(sg)


def test_the_checking_wrapper_passes_every_kind_of_parameter_on_as_given():
    """names_bad_arguments writes its wrapper with the function's own parameters: positional
    only, defaults, *args, keyword-only and **kwargs arrive as a plain call gives them, and a
    call with too few arguments says the function's name, as the unwrapped one would."""

    def f(a, b=2, /, c=3, *rest, d, e=5, **options):
        return a, b, c, rest, d, e, options

    wrapped = names_bad_arguments(f)
    for args, kwargs in [((1,), {"d": 4}), ((1, 7, 8, 9, 10), {"d": 4, "e": 6, "z": 0})]:
        assert wrapped(*args, **kwargs) == f(*args, **kwargs)
    with pytest.raises(TypeError) as ours:
        wrapped(1)
    with pytest.raises(TypeError) as plain:
        f(1)
    assert str(ours.value) == str(plain.value)
    assert str(ours.value).endswith(".f() missing 1 required keyword-only argument: 'd'")


@pytest.mark.parametrize(
    "name", ["exp", "sum", "argmax", "mm", "softmax", "t", "clamp", "mode", "nanmedian"]
)
def test_module_functions_name_a_non_tensor_input_as_pytorch(name):
    with pytest.raises(TypeError) as ours:
        getattr(sg, name)([1.0, 2.0])
    with pytest.raises(TypeError) as theirs:
        getattr(torch, name)([1.0, 2.0])
    assert str(ours.value) == f"{name}(): argument 'input' (position 1) must be Tensor, not list"
    assert str(theirs.value).startswith(f"{name}()")  # PyTorch's TypeError names it too


@pytest.mark.parametrize("dtype", ["int64", "bool"])
@pytest.mark.parametrize(
    "op, call",
    [
        ("softmax", lambda m, x: x.softmax(-1)),
        ("softmax", lambda m, x: m.nn.functional.softmax(x, -1)),
        ("log_softmax", lambda m, x: x.log_softmax(-1)),
        ("gelu", lambda m, x: m.nn.functional.gelu(x)),
        ("gelu", lambda m, x: m.nn.functional.gelu(x, approximate="tanh")),
        ("layer_norm", lambda m, x: m.nn.functional.layer_norm(x, (2,))),
    ],
)
def test_ops_without_integer_kernels_refuse_integers_as_torch(op, call, dtype):
    def integers(m):
        return m.tensor([[1, 0], [3, 4]]).to(getattr(m, dtype))

    with pytest.raises(NotImplementedError):
        call(torch, integers(torch))
    with pytest.raises(NotImplementedError, match=f"{op}: not implemented for {dtype} tensors"):
        call(sg, integers(sg))


def test_softmax_of_integers_with_a_floating_dtype_given_is_torchs():
    for name in ("softmax", "log_softmax"):
        ours = getattr(sg.tensor([[1, 2], [3, 5]]), name)(-1, dtype=sg.float64)
        theirs = getattr(torch.tensor([[1, 2], [3, 5]]), name)(-1, dtype=torch.float64)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-15)


def test_layer_norm_over_an_empty_shape_gives_empty_results_without_warnings():
    x, weight = sg.zeros(2, 0, requires_grad=True), sg.ones(0, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 0 / 0 statistics warned
        out = F.layer_norm(x, (0,), weight, weight)
        (grad,) = sg.autograd.grad((out * out).sum(), [x], create_graph=True)
        grad.sum().backward()
    expected = torch.nn.functional.layer_norm(torch.zeros(2, 0), (0,))
    assert out.shape == tuple(expected.shape) == x.grad.shape == (2, 0)
