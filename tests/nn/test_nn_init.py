"""nn.init and every layer's default initialisation: PyTorch's formulas (gains and fans checked
against torch.nn.init), the distributions checked by their bounds and moments on large tensors,
and reproducibility through sg.manual_seed."""

import math
import warnings

import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import init


@pytest.mark.parametrize(
    ("nonlinearity", "param"),
    [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
     ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", math.sqrt(5)), ("selu", None)],
)  # fmt: skip
def test_calculate_gain_matches_torch(nonlinearity, param):
    expected = torch.nn.init.calculate_gain(nonlinearity, param)
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(expected, rel=1e-12)


def test_calculate_gain_rejects_unknown():
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")


@pytest.mark.parametrize("shape", [(3, 4), (5, 3, 2, 2), (2, 7, 3)])
def test_fans_match_torch(shape):
    expected = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    assert init._calculate_fan_in_and_fan_out(sg.empty(*shape)) == expected


def test_fans_need_two_dims():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(sg.empty(5))


def _moments(t):
    values = t.array.astype(np.float64)
    return values.min(), values.max(), values.mean(), values.std()


SHAPE = (300, 400)  # 120k samples: sample mean and std within ~1% of the truth


def _uniform_ok(t, bound):
    low, high, mean, std = _moments(t)
    assert -bound <= low and high <= bound
    assert abs(mean) < 0.02 * bound and std == pytest.approx(bound / math.sqrt(3), rel=0.02)


def _normal_ok(t, std, mean=0.0):
    _, _, m, s = _moments(t)
    assert abs(m - mean) < 0.02 * std and s == pytest.approx(std, rel=0.02)


def test_uniform_and_normal():
    t = init.uniform_(sg.empty(*SHAPE), -3.0, 1.0)
    low, high, mean, _ = _moments(t)
    assert low >= -3 and high <= 1 and mean == pytest.approx(-1, abs=0.03)
    _normal_ok(init.normal_(sg.empty(*SHAPE), 2.0, 0.5), 0.5, mean=2.0)


def test_constant_zeros_ones():
    t = sg.empty(3, 2)
    assert init.zeros_(t) is t and not t.array.any()
    assert (init.ones_(t).array == 1).all()
    assert (init.constant_(t, 2.5).array == 2.5).all()


def test_xavier():
    fan_in, fan_out = SHAPE[1], SHAPE[0]
    _uniform_ok(
        init.xavier_uniform_(sg.empty(*SHAPE), gain=2.0), 2.0 * math.sqrt(6 / (fan_in + fan_out))
    )
    _normal_ok(init.xavier_normal_(sg.empty(*SHAPE)), math.sqrt(2 / (fan_in + fan_out)))


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
def test_kaiming(mode):
    fan = SHAPE[1] if mode == "fan_in" else SHAPE[0]
    _uniform_ok(init.kaiming_uniform_(sg.empty(*SHAPE), mode=mode), math.sqrt(6 / fan))
    std = math.sqrt(2 / (1 + 0.2**2)) / math.sqrt(fan)
    _normal_ok(init.kaiming_normal_(sg.empty(*SHAPE), a=0.2, mode=mode), std)
    _normal_ok(
        init.kaiming_normal_(sg.empty(*SHAPE), mode=mode, nonlinearity="relu"), math.sqrt(2 / fan)
    )
    with pytest.raises(ValueError, match="Mode"):
        init.kaiming_uniform_(sg.empty(2, 2), mode="fan_avg")


def test_init_works_in_place_outside_the_graph():
    p = nn.Parameter(sg.zeros(4, 3))
    array = p.array
    assert init.kaiming_uniform_(p) is p and p.array is array
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    init.zeros_(sg.empty(0, 3))  # empty: nothing to do, no error
    with pytest.warns(UserWarning, match="zero-element"):  # PyTorch's warning
        init.kaiming_uniform_(sg.empty(0, 3))


def test_init_is_seeded():
    sg.manual_seed(3)
    first = nn.Linear(5, 4).weight.array.copy()
    sg.manual_seed(3)
    np.testing.assert_array_equal(nn.Linear(5, 4).weight.array, first)
    assert not np.array_equal(nn.Linear(5, 4).weight.array, first)
    generator = sg.Generator().manual_seed(1)
    a = init.normal_(sg.empty(3), generator=generator).array.copy()
    np.testing.assert_array_equal(init.normal_(sg.empty(3), generator=sg.Generator(1)).array, a)


# ---- each layer's default, as PyTorch's reset_parameters ----------------------------------------


def test_linear_default_init():
    fc = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    _uniform_ok(fc.weight, bound)
    assert np.abs(fc.bias.array).max() <= bound and fc.bias.array.std() > bound / 3
    assert fc.weight.dtype == sg.float32


def test_embedding_default_init():
    emb = nn.Embedding(400, 300, padding_idx=7)
    assert not emb.weight.array[7].any()
    _normal_ok(emb.weight, 1.0)


@pytest.mark.parametrize(
    "layer", [nn.BatchNorm1d(5), nn.BatchNorm2d(5), nn.LayerNorm(5)], ids=["bn1d", "bn2d", "ln"]
)
def test_normalisation_default_init(layer):
    assert (layer.weight.array == 1).all() and (layer.bias.array == 0).all()
    for name, expected in [("running_mean", 0), ("running_var", 1), ("num_batches_tracked", 0)]:
        if hasattr(layer, name):
            assert (getattr(layer, name).array == expected).all()


@pytest.mark.parametrize(
    "old, args",
    [
        ("uniform", (-0.5, 0.5)),
        ("normal", (0.0, 0.1)),
        ("constant", (0.3,)),
        ("xavier_uniform", ()),
        ("xavier_normal", ()),
        ("kaiming_uniform", ()),
        ("kaiming_normal", ()),
        ("orthogonal", ()),
        ("sparse", (0.5,)),
        ("dirac", ()),
        ("eye", ()),
    ],
)
def test_deprecated_names_warn_as_torchs_and_fill_as_the_underscored_ones(old, args):
    shape = (4, 4, 3) if old == "dirac" else (4, 4)
    with pytest.warns(FutureWarning) as ours:
        sg.manual_seed(0)
        filled = getattr(sg.nn.init, old)(sg.empty(*shape), *args)
    with pytest.warns(FutureWarning) as theirs:
        getattr(torch.nn.init, old)(torch.empty(*shape), *args)
    assert str(ours[0].message) == str(theirs[0].message)
    sg.manual_seed(0)
    expected = getattr(sg.nn.init, old + "_")(sg.empty(*shape), *args)
    np.testing.assert_array_equal(filled.numpy(), expected.numpy())


@pytest.mark.parametrize("nonlinearity", ["linear", "conv1d", "conv_transpose3d", "sigmoid"])
def test_calculate_gain_of_the_linear_ones_is_torchs_int(nonlinearity):
    gain = init.calculate_gain(nonlinearity)
    assert type(gain) is type(torch.nn.init.calculate_gain(nonlinearity)) and gain == 1


@pytest.mark.parametrize("method", ["kaiming_uniform_", "kaiming_normal_"])
def test_kaiming_takes_the_mode_in_any_case_as_torch(method):
    sg.manual_seed(0)
    upper = getattr(init, method)(sg.empty(30, 40), mode="FAN_OUT").numpy()
    sg.manual_seed(0)
    lower = getattr(init, method)(sg.empty(30, 40), mode="fan_out").numpy()
    np.testing.assert_array_equal(upper, lower)
    getattr(torch.nn.init, method)(torch.empty(30, 40), mode="FAN_OUT")


@pytest.mark.parametrize("method", ["kaiming_uniform_", "kaiming_normal_"])
@pytest.mark.parametrize("shape", [(0, 4), (3, 0, 2)])
def test_kaiming_warns_on_a_zero_element_tensor_as_torch(method, shape):
    for lib in (torch, sg):
        with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
            assert getattr(lib.nn.init, method)(lib.empty(shape)).shape == shape


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_orthogonal_refuses_16_bit_floats_as_torch(dtype):
    with pytest.raises(NotImplementedError):
        torch.nn.init.orthogonal_(torch.empty(3, 4, dtype=getattr(torch, dtype)))
    with pytest.raises(NotImplementedError, match="orthogonal_"):
        init.orthogonal_(sg.empty(3, 4, dtype=getattr(sg, dtype)))


@pytest.mark.parametrize("a, b", [(6.0, 8.0), (-8.0, -5.0), (4.0, 6.0)])
@pytest.mark.filterwarnings("ignore:mean is more than 2 std")
def test_trunc_normal_far_in_a_tail_matches_torch_in_float32(a, b):
    """The inverse CDF in float32 sent every sample to a bound (all 8s for [6, 8])."""
    sg.manual_seed(0)
    torch.manual_seed(0)
    ours = init.trunc_normal_(sg.empty(100_000), 0.0, 1.0, a, b).numpy().astype(np.float64)
    theirs = torch.nn.init.trunc_normal_(torch.empty(100_000), 0.0, 1.0, a, b).double().numpy()
    assert ours.min() >= a and ours.max() <= b
    assert abs(ours.mean() - theirs.mean()) < 0.01 and abs(ours.std() - theirs.std()) < 0.01
    assert ((ours == a) | (ours == b)).sum() == 0


def test_trunc_normal_refuses_integers_as_torch():
    with pytest.raises(NotImplementedError):
        torch.nn.init.trunc_normal_(torch.empty(3, dtype=torch.int64))
    with pytest.raises(NotImplementedError, match="normal_"):
        init.trunc_normal_(sg.empty(3, dtype=sg.int64))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_orthogonal_refuses_complex_tensors_as_torch(dtype):
    with pytest.raises(NotImplementedError):
        torch.nn.init.orthogonal_(torch.empty(3, 3, dtype=getattr(torch, dtype)))
    with pytest.raises(NotImplementedError, match="orthogonal_"):
        init.orthogonal_(sg.empty(3, 3, dtype=getattr(sg, dtype)))


@pytest.mark.filterwarnings("ignore:mean is more than 2 std")
def test_trunc_normal_beyond_eight_stds_is_drawn_as_torchs():
    """The inverse CDF in float64 drew std 0.18 here (the CDF's values at the bounds round to
    0 and 1e-15); PyTorch's rejection sampling draws the tail: std 0.016, near b."""
    ours = init.trunc_normal_(sg.empty(20_000, dtype=sg.float64), 2.0, 0.125, 0.0, 1.0)
    theirs = torch.nn.init.trunc_normal_(torch.empty(20_000, dtype=torch.float64), 2.0, 0.125, 0, 1)
    assert ours.min().item() >= 0.0 and ours.max().item() <= 1.0
    assert abs(ours.std().item() - theirs.std().item()) < 0.002
    assert abs(ours.mean().item() - theirs.mean().item()) < 0.002


def test_trunc_normal_of_a_negative_std_as_torch():
    """PyTorch's normal draws refuse a negative std; its uniform proposals (where [a, b] holds
    little mass) square it away."""
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        torch.nn.init.trunc_normal_(torch.empty(5), 0.0, -1.0, 0.0, -1.0)
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        init.trunc_normal_(sg.empty(5), 0.0, -1.0, 0.0, -1.0)
    expected = torch.nn.init.trunc_normal_(torch.empty(10_000), 0.0, -1.0, 0.0, 1.0)
    ours = init.trunc_normal_(sg.empty(10_000), 0.0, -1.0, 0.0, 1.0)
    assert ours.min().item() >= 0.0 and ours.max().item() <= 1.0
    assert abs(ours.mean().item() - expected.mean().item()) < 0.02


@pytest.mark.parametrize(("shape", "groups"), [((0, 0, 0), 1), ((2, 0, 0), 1), ((4, 2, 3), -2)])
def test_dirac_with_no_channel_to_keep_is_zeros_as_torch(shape, groups):
    """An empty kernel's centre was indexed (IndexError) where no channel is kept."""
    expected = torch.nn.init.dirac_(torch.empty(shape), groups)
    np.testing.assert_array_equal(init.dirac_(sg.empty(*shape), groups).numpy(), expected.numpy())


def test_dirac_of_an_empty_kernel_raises_as_torch():
    with pytest.raises(IndexError):
        torch.nn.init.dirac_(torch.empty(2, 2, 0))
    with pytest.raises(IndexError):
        init.dirac_(sg.empty(2, 2, 0))


def test_normal_of_infinite_mean_and_std_is_silent_as_torch():
    """NumPy warned "invalid value encountered" where inf - inf made a NaN entry."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.nn.init.normal_(torch.empty(100), math.inf, math.inf)
        out = init.normal_(sg.empty(100), math.inf, math.inf)
    assert not np.isfinite(out.numpy()).any()


def test_normal_past_float16s_range_is_silent_as_torch():
    """NumPy warned "overflow encountered in cast" where a float64 draw became float16's inf."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected = torch.nn.init.normal_(torch.empty(60, 50, dtype=torch.float16), 0.0, 1e30)
        out = init.normal_(sg.empty(60, 50, dtype=sg.float16), 0.0, 1e30)
    assert np.isinf(out.float().numpy()).all() and torch.isinf(expected).all()
