"""Every layer against PyTorch: the same weights (copied through NumPy via state_dict, which
also checks that the key names match), the same input, then the output, the gradient of the
input and of every parameter, and the buffers, in float64 (tight) and float32 (loose).
BatchNorm over several steps in train and eval mode; Dropout by its statistics."""

import numpy as np
import pytest
import torch
from oracle import DTYPES, assert_close, check_against_torch

import scratchgrad as sg
from scratchgrad import nn


def _normal(*shape):
    return lambda rng: rng.standard_normal(shape)


def _indices(high, *shape, pad=None):
    def make(rng):
        idx = rng.integers(0, high, shape)
        if pad is not None:
            idx.flat[:2] = pad % high  # make sure the padding row is looked up (twice)
        return idx

    return make


# (id, builder given the nn namespace (scratchgrad.nn or torch.nn), input maker, mode)
LAYERS = [
    ("linear", lambda nn: nn.Linear(3, 5), _normal(4, 3), "train"),
    ("linear_nobias_3d", lambda nn: nn.Linear(3, 5, bias=False), _normal(2, 4, 3), "train"),
    ("linear_1x1", lambda nn: nn.Linear(1, 1), _normal(7, 1), "train"),
    ("linear_vector_input", lambda nn: nn.Linear(4, 2), _normal(4), "train"),
    ("identity", lambda nn: nn.Identity(), _normal(2, 3), "train"),
    ("flatten", lambda nn: nn.Flatten(), _normal(2, 3, 4), "train"),
    ("flatten_0_1", lambda nn: nn.Flatten(0, 1), _normal(2, 3, 4), "train"),
    ("flatten_1_2", lambda nn: nn.Flatten(1, 2), _normal(2, 3, 4, 5), "train"),
    ("batchnorm1d", lambda nn: nn.BatchNorm1d(4), _normal(8, 4), "train"),
    ("batchnorm1d_3d", lambda nn: nn.BatchNorm1d(3), _normal(5, 3, 6), "train"),
    ("batchnorm1d_noaffine", lambda nn: nn.BatchNorm1d(4, affine=False), _normal(6, 4), "train"),
    ("batchnorm1d_nobias", lambda nn: nn.BatchNorm1d(4, bias=False), _normal(6, 4), "train"),
    ("batchnorm1d_cumulative", lambda nn: nn.BatchNorm1d(4, momentum=None), _normal(6, 4), "train"),
    (
        "batchnorm1d_untracked",
        lambda nn: nn.BatchNorm1d(4, track_running_stats=False),
        _normal(6, 4),
        "train",
    ),
    (
        "batchnorm1d_eps",
        lambda nn: nn.BatchNorm1d(2, eps=0.1, momentum=0.5),
        _normal(3, 2),
        "train",
    ),
    ("batchnorm1d_eval", lambda nn: nn.BatchNorm1d(4), _normal(8, 4), "eval"),
    ("batchnorm1d_3d_eval", lambda nn: nn.BatchNorm1d(3), _normal(5, 3, 6), "eval"),
    (
        "batchnorm1d_untracked_eval",
        lambda nn: nn.BatchNorm1d(4, track_running_stats=False),
        _normal(6, 4),
        "eval",
    ),
    ("batchnorm2d", lambda nn: nn.BatchNorm2d(3), _normal(4, 3, 5, 5), "train"),
    ("batchnorm2d_eval", lambda nn: nn.BatchNorm2d(3), _normal(4, 3, 5, 5), "eval"),
    (
        "batchnorm2d_noaffine",
        lambda nn: nn.BatchNorm2d(2, affine=False),
        _normal(2, 2, 3, 3),
        "train",
    ),
    ("layernorm", lambda nn: nn.LayerNorm(6), _normal(4, 6), "train"),
    ("layernorm_2d_shape", lambda nn: nn.LayerNorm((3, 4)), _normal(2, 3, 4), "train"),
    ("layernorm_3d_input", lambda nn: nn.LayerNorm(4), _normal(2, 3, 4), "train"),
    (
        "layernorm_noaffine",
        lambda nn: nn.LayerNorm(5, elementwise_affine=False),
        _normal(3, 5),
        "train",
    ),
    ("layernorm_nobias", lambda nn: nn.LayerNorm(5, bias=False), _normal(3, 5), "train"),
    ("layernorm_eps", lambda nn: nn.LayerNorm(5, eps=1e-2), _normal(3, 5), "train"),
    ("embedding", lambda nn: nn.Embedding(10, 4), _indices(10, 3, 5), "train"),
    (
        "embedding_padding",
        lambda nn: nn.Embedding(10, 4, padding_idx=0),
        _indices(10, 3, 5, pad=0),
        "train",
    ),
    (
        "embedding_padding_negative",
        lambda nn: nn.Embedding(6, 3, padding_idx=-1),
        _indices(6, 7, pad=-1),
        "train",
    ),
    ("dropout_eval", lambda nn: nn.Dropout(0.5), _normal(4, 5), "eval"),
    ("dropout_p0", lambda nn: nn.Dropout(0.0), _normal(4, 5), "train"),
    ("relu", lambda nn: nn.ReLU(), _normal(3, 4), "train"),
    ("leaky_relu", lambda nn: nn.LeakyReLU(), _normal(3, 4), "train"),
    ("leaky_relu_0.2", lambda nn: nn.LeakyReLU(0.2), _normal(3, 4), "train"),
    ("gelu", lambda nn: nn.GELU(), _normal(3, 4), "train"),
    ("gelu_tanh", lambda nn: nn.GELU(approximate="tanh"), _normal(3, 4), "train"),
    ("silu", lambda nn: nn.SiLU(), _normal(3, 4), "train"),
    ("tanh", lambda nn: nn.Tanh(), _normal(3, 4), "train"),
    ("sigmoid", lambda nn: nn.Sigmoid(), _normal(3, 4), "train"),
    ("softmax", lambda nn: nn.Softmax(dim=1), _normal(3, 4), "train"),
    ("softmax_last_3d", lambda nn: nn.Softmax(dim=-1), _normal(2, 3, 4), "train"),
    ("log_softmax_0", lambda nn: nn.LogSoftmax(dim=0), _normal(3, 4), "train"),
    ("log_softmax_1", lambda nn: nn.LogSoftmax(dim=1), _normal(2, 5, 3), "train"),
    (
        "sequential_mlp",
        lambda nn: nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.LayerNorm(8), nn.Linear(8, 2)),
        _normal(5, 3),
        "train",
    ),
    (
        "sequential_bn",
        lambda nn: nn.Sequential(nn.Linear(3, 6), nn.BatchNorm1d(6), nn.GELU(), nn.Linear(6, 1)),
        _normal(5, 3),
        "eval",
    ),
]


def _randomize(model, rng):
    """Random parameters and running statistics (default ones and zeros would hide bugs)."""
    with sg.no_grad():
        for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
            if not tensor.is_floating_point():
                tensor.fill_(3)  # num_batches_tracked
            elif name.endswith("running_var"):
                tensor.copy_(rng.uniform(0.5, 2.0, tensor.shape))
            else:
                tensor.copy_(rng.standard_normal(tensor.shape))


def _to_torch_state(model):
    return {k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()}


def _pair(builder, dtype, mode, seed=0):
    """The same layer in both frameworks, with the same random weights and buffers."""
    sg_dtype, torch_dtype = DTYPES[dtype]
    ours = builder(nn).to(sg_dtype)
    theirs = builder(torch.nn).to(torch_dtype)
    _randomize(ours, np.random.default_rng(seed))
    theirs.load_state_dict(_to_torch_state(ours), strict=True)
    if mode == "eval":
        ours.eval(), theirs.eval()
    return ours, theirs


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    ("builder", "make_input", "mode"), [e[1:] for e in LAYERS], ids=[e[0] for e in LAYERS]
)
def test_layer_matches_torch(builder, make_input, mode, dtype):
    ours, theirs = _pair(builder, dtype, mode)
    x = make_input(np.random.default_rng(1))
    check_against_torch(ours, theirs, [x], dtype)
    torch_buffers = dict(theirs.named_buffers())
    for name, buffer in ours.named_buffers():
        assert_close(buffer.array, torch_buffers[name], dtype, f"buffer {name}")


@pytest.mark.parametrize("momentum", [0.1, 0.7, None])
@pytest.mark.parametrize("cls", ["BatchNorm1d", "BatchNorm2d"])
def test_batchnorm_running_statistics_over_steps(cls, momentum):
    shape = (6, 3) if cls == "BatchNorm1d" else (4, 3, 2, 2)
    ours = getattr(nn, cls)(3, momentum=momentum).double()
    theirs = getattr(torch.nn, cls)(3, momentum=momentum).double()
    rng = np.random.default_rng(0)
    for step in range(4):
        x = rng.standard_normal(shape) * (step + 1) + step
        assert_close(ours(sg.tensor(x)).array, theirs(torch.tensor(x)), "float64", f"step {step}")
        for name, expected in theirs.named_buffers():
            assert_close(getattr(ours, name).array, expected, "float64", f"{name} at step {step}")
    assert ours.num_batches_tracked.dtype == sg.int64 and ours.num_batches_tracked.item() == 4
    ours.eval(), theirs.eval()
    x = rng.standard_normal(shape)
    assert_close(ours(sg.tensor(x)).array, theirs(torch.tensor(x)), "float64", "eval output")
    assert ours.num_batches_tracked.item() == 4  # eval leaves the statistics alone


def test_batchnorm_train_and_eval_differ():
    bn = nn.BatchNorm1d(2)
    x = sg.tensor([[1.0, 10.0], [3.0, 30.0]])
    train_out = bn(x)
    np.testing.assert_allclose(train_out.array, [[-1, -1], [1, 1]], atol=1e-4)
    bn.eval()
    eval_out = bn(x)  # running mean 0.1 * batch mean, running var 0.9 + 0.1 * unbiased var
    mean, var = np.array([0.2, 2.0]), np.array([0.9 + 0.2, 0.9 + 0.1 * 200])
    np.testing.assert_allclose(eval_out.array, (x.array - mean) / np.sqrt(var + 1e-5), rtol=1e-5)


def test_batchnorm_errors():
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3)(sg.randn(1, 3))
    nn.BatchNorm1d(3).eval()(sg.randn(1, 3))  # fine in eval mode
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.BatchNorm1d(3)(sg.randn(2, 3, 4, 5))
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(sg.randn(2, 3))


def test_batchnorm_statistics_are_not_in_the_graph():
    bn = nn.BatchNorm1d(3)
    bn(sg.randn(4, 3, requires_grad=True)).sum().backward()
    assert not bn.running_mean.requires_grad and bn.running_mean.grad_fn is None


def test_dropout_train_statistics_and_scaling():
    sg.manual_seed(0)
    p = 0.3
    x = sg.ones(200, 100, requires_grad=True)
    out = nn.Dropout(p)(x)
    dropped = (out.array == 0).mean()
    assert abs(dropped - p) < 4 * np.sqrt(p * (1 - p) / x.numel())  # binomial, 4 sigma
    np.testing.assert_allclose(out.array[out.array != 0], 1 / (1 - p), rtol=1e-6)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.array, out.array)  # gradient: the same scaled mask


def test_dropout_eval_and_edge_probabilities():
    x = sg.randn(5, 4)
    drop = nn.Dropout(0.5)
    assert drop.eval()(x) is x
    assert nn.Dropout(0.0)(x) is x
    y = sg.randn(3, 4, requires_grad=True)
    out = nn.Dropout(1.0)(y)
    np.testing.assert_array_equal(out.array, 0)
    out.sum().backward()
    np.testing.assert_array_equal(y.grad.array, 0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_dropout_is_seeded_by_manual_seed():
    x = sg.ones(50)
    sg.manual_seed(7)
    first = nn.Dropout()(x).array
    sg.manual_seed(7)
    np.testing.assert_array_equal(nn.Dropout()(x).array, first)
    assert not np.array_equal(nn.Dropout()(x).array, first)


def test_embedding_padding_row_gets_no_gradient():
    emb = nn.Embedding(5, 2, padding_idx=1)
    np.testing.assert_array_equal(emb.weight.array[1], 0)
    emb(sg.tensor([1, 1, 3, 3])).sum().backward()
    np.testing.assert_array_equal(emb.weight.grad.array[1], 0)
    np.testing.assert_array_equal(emb.weight.grad.array[3], 2)


def test_embedding_errors():
    emb = nn.Embedding(5, 2)
    with pytest.raises(IndexError, match="out of range"):
        emb(sg.tensor([5]))
    with pytest.raises(IndexError, match="out of range"):
        emb(sg.tensor([-1]))
    with pytest.raises(RuntimeError, match="integer"):
        emb(sg.tensor([1.0]))


def test_layer_norm_shape_error_names_the_shapes():
    with pytest.raises(RuntimeError, match=r"normalized_shape=\[5\].*\[3, 4\]"):
        nn.LayerNorm(5)(sg.randn(3, 4))


def test_softmax_without_dim_warns_and_picks_torchs_dim():
    rng = np.random.default_rng(0)
    for shape in [(4,), (3, 4), (2, 3, 4), (2, 2, 3, 4)]:
        data = rng.standard_normal(shape)
        with pytest.warns(UserWarning, match="Implicit dimension"):
            out = nn.Softmax()(sg.tensor(data))
        with pytest.warns(UserWarning):
            expected = torch.nn.Softmax()(torch.tensor(data))
        assert_close(out.array, expected, "float64", str(shape))


def test_layers_accept_dtype_and_cpu_device():
    fc = nn.Linear(2, 3, device="cpu", dtype=sg.float64)
    assert fc.weight.dtype == sg.float64 and fc.bias.dtype == sg.float64
    bn = nn.BatchNorm1d(3, dtype=sg.float64)
    assert bn.running_mean.dtype == sg.float64 and bn.num_batches_tracked.dtype == sg.int64
    if not sg.cuda.is_available():  # on a GPU machine, the layer is made there
        with pytest.raises(RuntimeError, match="'cuda' is not available"):
            nn.Linear(2, 3, device="cuda")
