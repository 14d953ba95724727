"""nn.functional beyond what the layer and loss tables cover: the functions with no module
(softplus, one_hot, pad), the functional forms with options the modules do not expose, gradcheck
in float64 on the composed layers, and the errors. The activations' gradcheck and gradgradcheck
come from the op table's rows (tests/op_table.py)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from oracle import assert_close, assert_raises_as_torch, check_against_torch

import scratchgrad as sg
import scratchgrad.nn.functional as F

# (id, ours, theirs, input); the input mixes signs, zeros and large values
X = np.array([[-30.0, -2.5, -1.0, -1e-3, 0.0], [1e-3, 0.5, 1.0, 3.0, 30.0]])
ELEMENTWISE = [
    ("gelu", F.gelu, TF.gelu),
    (
        "gelu_tanh",
        lambda x: F.gelu(x, approximate="tanh"),
        lambda x: TF.gelu(x, approximate="tanh"),
    ),
    ("softplus", F.softplus, TF.softplus),
    ("softplus_beta", lambda x: F.softplus(x, beta=2.0), lambda x: TF.softplus(x, beta=2.0)),
    (
        "softplus_threshold",
        lambda x: F.softplus(x, beta=0.5, threshold=1.0),
        lambda x: TF.softplus(x, beta=0.5, threshold=1.0),
    ),
    ("silu", F.silu, TF.silu),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.3), lambda x: TF.leaky_relu(x, 0.3)),
    ("relu", F.relu, TF.relu),
    ("tanh", F.tanh, torch.tanh),
    ("sigmoid", F.sigmoid, torch.sigmoid),
    ("softmax", lambda x: F.softmax(x, 0), lambda x: TF.softmax(x, 0)),
    ("log_softmax", lambda x: F.log_softmax(x, -1), lambda x: TF.log_softmax(x, -1)),
    (
        "softmax_dtype",
        lambda x: F.softmax(x.float(), 1, dtype=sg.float64),
        lambda x: TF.softmax(x.float(), 1, dtype=torch.float64),
    ),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    ("ours", "theirs"), [e[1:] for e in ELEMENTWISE], ids=[e[0] for e in ELEMENTWISE]
)
def test_activation_functions(ours, theirs, dtype):
    check_against_torch(ours, theirs, [X], dtype)


def test_linear_function():
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)), rng.standard_normal(5)
    check_against_torch(F.linear, TF.linear, [x, w, b])
    check_against_torch(F.linear, TF.linear, [x, w])


def test_embedding_function():
    weight = np.random.default_rng(0).standard_normal((6, 3))
    index = np.array([[0, 5, 5], [2, 0, 1]])
    check_against_torch(
        lambda i, w: F.embedding(i, w, padding_idx=5),
        lambda i, w: TF.embedding(i, w, padding_idx=5),
        [index, weight],
    )


def test_jitted_embedding_keeps_the_padding_row_out_of_each_batchs_gradient():
    """The padding index first shows up after the step was recorded: its row still gets no
    gradient (a replay of a batch without padding let it through), bit for bit eager's."""
    weight = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)

    def step(index):
        w = sg.tensor(weight, requires_grad=True)
        F.embedding(index, w, padding_idx=5).sum().backward()
        return w.grad

    jitted = sg.jit(step)
    for index in ([[0, 1], [2, 0]], [[0, 1], [2, 0]], [[0, 5], [5, 1]], [[0, 1], [2, 3]]):
        expected, got = step(sg.tensor(index)), jitted(sg.tensor(index))
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
        assert not got.numpy()[5].any()


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_function(training):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3, 4))
    mean, var = rng.standard_normal(3), rng.uniform(0.5, 2, 3)
    ours_stats = [sg.tensor(mean), sg.tensor(var)]
    theirs_stats = [torch.tensor(mean), torch.tensor(var)]
    options = dict(training=training, momentum=0.3, eps=1e-3)
    check_against_torch(
        lambda x, w, b: F.batch_norm(x, *ours_stats, w, b, **options),
        lambda x, w, b: TF.batch_norm(x, *theirs_stats, w, b, **options),
        [x, rng.standard_normal(3), np.ones(3)],
    )
    for ours, theirs in zip(ours_stats, theirs_stats):
        assert_close(ours.array, theirs)


def test_batch_norm_function_without_running_statistics():
    x = np.random.default_rng(0).standard_normal((4, 2))
    expected = TF.batch_norm(torch.tensor(x), None, None, training=True)
    assert_close(F.batch_norm(sg.tensor(x), None, None, training=True).array, expected)
    with pytest.raises(ValueError, match="running_mean and running_var"):
        F.batch_norm(sg.tensor(x), None, None, training=False)


def test_dropout_function():
    x = sg.ones(1000)
    assert F.dropout(x, 0.5, training=False) is x
    out = F.dropout(x, 0.25)
    assert set(np.unique(out.array)) <= {0.0, np.float32(1 / 0.75)}
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, -0.1)


# ---- one_hot and pad ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "num_classes"), [([0, 2, 1], -1), ([[1, 0], [3, 3]], 5), (3, 4), ([], 3)]
)
def test_one_hot(labels, num_classes):
    out = F.one_hot(sg.tensor(labels, dtype=sg.int64), num_classes)
    expected = TF.one_hot(torch.tensor(labels, dtype=torch.int64), num_classes)
    assert out.dtype == sg.int64 and out.shape == tuple(expected.shape)
    np.testing.assert_array_equal(out.array, expected.numpy())


def test_one_hot_errors():
    with pytest.raises(RuntimeError, match="non-negative"):
        F.one_hot(sg.tensor([1, -2]))
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        F.one_hot(sg.tensor([1, 5]), 3)
    with pytest.raises(RuntimeError, match="integer"):
        F.one_hot(sg.tensor([1.0]))


@pytest.mark.parametrize("num_classes", [-1, 0, -2])
def test_one_hot_of_no_labels_and_no_classes_raises_as_pytorch(num_classes):
    # a count below 1 has no classes to infer from no labels (a (0, 0) result before)
    assert_raises_as_torch(
        lambda lib: lib.nn.functional.one_hot(lib.tensor([], dtype=lib.int64), num_classes),
        RuntimeError,
        "Can not infer total number of classes from empty tensor",
    )


@pytest.mark.parametrize(
    ("shape", "widths", "value"),
    [
        ((2, 3), (1, 2), None),
        ((2, 3), (1, 0, 0, 2), 1.5),
        ((2, 3, 4), (0, 1, 2, 0, 1, 1), -1.0),
        ((2, 3, 4), (-1, 2), None),
        ((3, 5), (2, -2, -1, 0), 0.5),
        ((4,), (0, 0), None),
    ],
)
def test_pad_matches_torch(shape, widths, value):
    data = np.random.default_rng(0).standard_normal(shape)
    kwargs = {} if value is None else {"value": value}
    check_against_torch(
        lambda x: F.pad(x, widths, **kwargs), lambda x: TF.pad(x, widths, **kwargs), [data]
    )


def test_pad_errors():
    with pytest.raises(RuntimeError, match="even"):
        F.pad(sg.ones(2, 2), (1,))
    with pytest.raises(RuntimeError, match="even"):
        F.pad(sg.ones(2), (1, 1, 1, 1))
    with pytest.raises(NotImplementedError, match="reflect padding of the last 1 dims"):
        F.pad(sg.ones(1, 1, 2, 2), (1, 1), mode="reflect")


@pytest.mark.parametrize(
    ("mode", "widths"),
    [
        ("constant", (2, -6)),  # Python's slice would wrap -1 around instead
        ("constant", (-6, 2)),
        ("constant", (-3, -3)),
        ("circular", (0, -6)),
        ("reflect", (-2, -3)),  # reflect and replicate refuse an empty result too
        ("replicate", (-5, 0)),
    ],
)
def test_pad_refuses_to_crop_more_than_the_dim_as_torch(mode, widths):
    with pytest.raises(RuntimeError):
        TF.pad(torch.ones(1, 2, 5), widths, mode=mode)
    with pytest.raises(RuntimeError, match="pad: .*5"):
        F.pad(sg.ones(1, 2, 5), widths, mode=mode)


@pytest.mark.parametrize(
    ("mode", "widths"),
    [
        ("constant", (-2, -3)),  # empty
        ("constant", (-5, 2)),
        ("circular", (-4, -1)),
        ("reflect", (3, -7)),  # reflect/replicate pad about the uncropped edge
        ("reflect", (-6, 2)),
        ("replicate", (2, -6)),
    ],
)
def test_pad_crops_to_what_torch_allows(mode, widths):
    """The edge cases of cropping that PyTorch accepts."""
    expected = TF.pad(torch.ones(1, 2, 5), widths, mode=mode)
    data = np.random.default_rng(1).standard_normal((1, 2, 5))
    check_against_torch(
        lambda x: F.pad(x, widths, mode=mode), lambda x: TF.pad(x, widths, mode=mode), [data]
    )
    assert tuple(expected.shape) == tuple(F.pad(sg.ones(1, 2, 5), widths, mode=mode).shape)


@pytest.mark.parametrize(
    ("mode", "shape", "widths"),
    [
        ("reflect", (1, 2, 2), (0, 0, -1, -1)),
        ("replicate", (1, 1, 2), (-1, -1, 1, 0)),
        ("reflect", (1, 1, 1, 1), (0, 0, 0, -1, 0, 0)),
    ],
)
def test_reflect_and_replicate_crop_one_of_several_dims_to_nothing_as_torch(mode, shape, widths):
    """PyTorch's kernels refuse an output that is empty in every padded dim, not in one. The
    gradient of the empty result is zeros (PyTorch's backward leaves it unwritten: README)."""
    data = np.random.default_rng(2).standard_normal(shape)
    x = sg.tensor(data, requires_grad=True)
    out = F.pad(x, widths, mode=mode)
    assert tuple(out.shape) == tuple(TF.pad(torch.tensor(data), widths, mode=mode).shape)
    out.sum().backward()
    assert out.numel() == 0 and not x.grad.numpy().any()


def test_circular_pad_of_too_few_dims_raises_before_cropping_as_torch():
    """The padding's length is checked against the input's rank first, as PyTorch's: it was a
    RuntimeError from the crop."""
    assert_raises_as_torch(
        lambda m: m.nn.functional.pad(m.ones(1, 1, 1, 1), (0, -2), "circular"),
        NotImplementedError,
        "circular padding of the last 1 dims needs a 2-D or 3-D input",
    )


# ---- finite differences on the composed layers --------------------------------------------------


def _double(*shape, seed=0):
    data = np.random.default_rng(seed).standard_normal(shape)
    return sg.tensor(data, dtype=sg.float64, requires_grad=True)


GRADCHECKS = {
    "layer_norm": (
        lambda x, w, b: F.layer_norm(x, (3,), w, b),
        lambda: [_double(2, 3), _double(3, seed=1), _double(3, seed=2)],
    ),
    "layer_norm_2d": (lambda x: F.layer_norm(x, (2, 2)), lambda: [_double(2, 2, 2)]),
    "batch_norm_training": (
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        lambda: [_double(3, 2, 2), _double(2, seed=1), _double(2, seed=2)],
    ),
    "linear": (F.linear, lambda: [_double(2, 3), _double(4, 3, seed=1), _double(4, seed=2)]),
    "embedding": (
        lambda w: F.embedding(sg.tensor([[0, 2], [2, 2]]), w),  # padding_idx: by design no grad
        lambda: [_double(3, 2)],
    ),
}


@pytest.mark.parametrize("name", list(GRADCHECKS))
def test_gradcheck(name):
    func, make_inputs = GRADCHECKS[name]
    assert sg.autograd.gradcheck(func, make_inputs())


def test_dropout_of_an_integer_tensor_is_pytorchs():
    """p 0 and 1 pass an integer input through and zero it (in its dtype, drawing nothing);
    another p raises, as PyTorch's (it returned floats)."""
    ints = [1, 2]
    for p in (0.0, 1.0):
        found, expected = F.dropout(sg.tensor(ints), p), TF.dropout(torch.tensor(ints), p)
        assert (found.tolist(), str(found.dtype).split(".")[-1]) == (expected.tolist(), "int64")
    with pytest.raises(RuntimeError):
        TF.dropout(torch.tensor(ints), 0.5)
    with pytest.raises(RuntimeError, match="dropout: an int64 input can only be dropped"):
        F.dropout(sg.tensor(ints), 0.5)
    state = sg.get_rng_state()
    F.dropout(sg.ones(3), 1.0)
    assert (sg.get_rng_state() == state).all()


def test_embedding_bag_max_gives_the_gradient_to_the_first_of_equal_maxima_as_torch():
    """It was shared among the tied rows (a third each here), where PyTorch's goes to one."""
    grads = []
    for m in (sg, torch):
        weight = m.zeros(2, 1, dtype=m.float64, requires_grad=True)
        bags = m.nn.functional.embedding_bag(m.tensor([0, 0, 1]), weight, m.tensor([0]), mode="max")
        bags.sum().backward()
        grads.append(weight.grad.tolist())
    assert grads[0] == grads[1] == [[1.0], [0.0]]


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("statistic", ["running_mean", "running_var"])
def test_batch_norm_refuses_running_statistics_that_require_grad_as_torch(training, statistic):
    """They were differentiated through (eval) where PyTorch's native_batch_norm raises; under
    no_grad both compute."""
    for lib in (torch, sg):
        stats = {
            "running_mean": lib.zeros(3, requires_grad=statistic == "running_mean"),
            "running_var": lib.ones(3, requires_grad=statistic == "running_var"),
        }
        x = lib.ones(4, 3) * lib.arange(4.0).reshape(4, 1)
        with pytest.raises(RuntimeError, match=f"respect to argument '{statistic}'"):
            lib.nn.functional.batch_norm(x, **stats, training=training)
        with lib.no_grad():
            lib.nn.functional.batch_norm(x, **stats, training=training)
