"""The common ``torch.nn`` layers that were missing, against PyTorch's: activations (values and
gradients at the kinks too, ``inplace``), ``BatchNorm3d`` and ``InstanceNorm1d/3d``, the padding
layers, ``Fold``/``Unfold``, the margin losses, and ``init.eye_``/``dirac_``/``sparse_``; the
random ones (dropouts, ``RReLU`` in training) by their statistics. Reprs and state_dict keys
equal PyTorch's, and bad input raises PyTorch's errors."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from oracle import (
    assert_close,
    assert_doc_examples_run,
    assert_raises_as_torch,
    check_against_torch,
    check_second_derivative,
    module_pair,
)

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import functional as F
from scratchgrad.nn import init

DTYPES = ["float64", "float32"]
SHAPES = [(), (7,), (3, 4), (2, 3, 5)]


def _normal(*shape, seed=0, scale=3.0):
    return np.random.default_rng(seed).standard_normal(shape) * scale


def _with_kinks(shape, kinks, seed=0):
    """Normal entries, the first few set to the activation's kinks (where PyTorch's gradient
    picks a side)."""
    x = _normal(*shape, seed=seed).reshape(-1)
    x[: min(len(kinks), x.size)] = kinks[: x.size]
    return x.reshape(shape)


# ---- activations ----------------------------------------------------------------------------

# name, call(F, x) for either library, kinks
ACTIVATIONS = [
    ("softsign", lambda F, x: F.softsign(x), [0.0]),
    ("hardsigmoid", lambda F, x: F.hardsigmoid(x), [-3.0, 3.0, 0.0]),
    ("celu", lambda F, x: F.celu(x), [0.0]),
    ("celu_alpha", lambda F, x: F.celu(x, 2.5), [0.0]),
    ("threshold", lambda F, x: F.threshold(x, 0.5, -2.0), [0.5]),
    ("hardshrink", lambda F, x: F.hardshrink(x), [0.5, -0.5, 0.0]),
    ("hardshrink_lambd", lambda F, x: F.hardshrink(x, 1.5), [1.5, -1.5]),
    ("softshrink", lambda F, x: F.softshrink(x), [0.5, -0.5, 0.0]),
    ("softshrink_lambd", lambda F, x: F.softshrink(x, 1.5), [1.5, -1.5]),
    ("tanhshrink", lambda F, x: F.tanhshrink(x), [0.0]),
    ("rrelu_eval", lambda F, x: F.rrelu(x), [0.0]),
    ("rrelu_bounds", lambda F, x: F.rrelu(x, 0.1, 0.6, training=False), [0.0]),
    ("logsigmoid", lambda F, x: F.logsigmoid(x), [0.0]),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name, call, kinks", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_functions_match_torch(name, call, kinks, shape, dtype):
    x = _with_kinks(shape, kinks, seed=len(shape))
    check_against_torch(lambda x: call(F, x), lambda x: call(TF, x), [x], dtype, what=name)


@pytest.mark.parametrize("name, call, kinks", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activations_of_an_empty_tensor(name, call, kinks):
    check_against_torch(lambda x: call(F, x), lambda x: call(TF, x), [np.ones((0, 3))])


SMOOTH = [a for a in ACTIVATIONS if a[0] not in ("hardshrink", "hardshrink_lambd", "threshold")]


@pytest.mark.parametrize("name, call, kinks", SMOOTH, ids=[a[0] for a in SMOOTH])
def test_gradcheck_gradgradcheck_and_second_derivatives(name, call, kinks):
    # away from the kinks, where finite differences see one side only
    x = np.random.default_rng(1).uniform(0.7, 2.5, (3, 4)) * np.where(np.arange(4) % 2, 1, -1)
    t = sg.tensor(x, requires_grad=True)
    assert sg.autograd.gradcheck(lambda t: call(F, t), (t,))
    assert sg.autograd.gradgradcheck(lambda t: call(F, t), (t,))
    if name != "hardsigmoid":  # PyTorch has no second derivative of it (ours is 0)
        check_second_derivative(lambda F, x: call(F, x), [x])


def test_piecewise_constant_gradients_are_checked_numerically_away_from_the_steps():
    x = sg.tensor(np.array([-2.0, -0.75, 0.25, 0.75, 2.0]), requires_grad=True)
    for call in (lambda t: F.hardshrink(t), lambda t: F.threshold(t, 0.5, -2.0)):
        assert sg.autograd.gradcheck(call, (x,))
        assert sg.autograd.gradgradcheck(call, (x,))


def test_threshold_keeps_an_integer_input_integer_as_torch():
    x = np.array([-1, 0, 1, 2, 3])
    for t, v in ((1.5, 5.5), (-0.5, 7.0), (2.0, -3.9)):
        ours, theirs = F.threshold(sg.tensor(x), t, v), TF.threshold(torch.tensor(x), t, v)
        assert ours.dtype == sg.int64 and ours.tolist() == theirs.tolist()


# name, call(lib, x) of the in-place form
IN_PLACE = [
    ("hardsigmoid", lambda F, x: F.hardsigmoid(x, inplace=True)),
    ("celu", lambda F, x: F.celu(x, 1.5, inplace=True)),
    ("threshold", lambda F, x: F.threshold(x, 0.1, 3.0, inplace=True)),
    ("rrelu", lambda F, x: F.rrelu(x, inplace=True)),
]


@pytest.mark.parametrize("name, call", IN_PLACE, ids=[i[0] for i in IN_PLACE])
def test_inplace_writes_into_the_input_as_torch(name, call):
    x = _normal(3, 4)
    ours, theirs = sg.tensor(x), torch.tensor(x)
    out, expected = call(F, ours), call(TF, theirs)
    assert_close(ours, theirs, what=name)
    assert_close(out, expected, what=name)
    # in a graph: the gradient flows through the overwritten tensor, as PyTorch's
    check_against_torch(lambda a: call(F, a * 1.0), lambda a: call(TF, a * 1.0), [x], what=name)
    # a leaf that requires grad cannot be overwritten
    assert_raises_as_torch(
        lambda lib: call(lib.nn.functional, lib.ones(2, requires_grad=True)), RuntimeError, name
    )


@pytest.mark.parametrize(
    "call, kind, message",
    [
        (lambda F, lib: F.softshrink(lib.ones(2), -1.0), RuntimeError, "lambda must be in range"),
        (lambda F, lib: F.celu(lib.ones(2), 0.0), RuntimeError, "alpha cannot be 0 for CELU"),
        (lambda F, lib: F.rrelu(lib.ones(2), 0.5, 0.1), RuntimeError, "Lower bound should be"),
        (
            lambda F, lib: F.rrelu(lib.ones(2), 0.5, 0.1, training=True),
            RuntimeError,
            "Lower bound should be",
        ),
        (lambda F, lib: F.hardsigmoid(lib.ones(2, dtype=lib.int64)), NotImplementedError, "hard"),
        (lambda F, lib: F.hardshrink(lib.ones(2, dtype=lib.int64)), NotImplementedError, "hard"),
        (lambda F, lib: F.celu(lib.ones(2, dtype=lib.int64)), NotImplementedError, "celu"),
        (lambda F, lib: F.rrelu(lib.ones(2, dtype=lib.int64)), NotImplementedError, "rrelu"),
    ],
)
def test_activation_errors_match_torch(call, kind, message):
    assert_raises_as_torch(lambda lib: call(lib.nn.functional, lib), kind, message)


def test_rrelu_in_training_draws_a_slope_per_entry_like_torch():
    """The slopes are in [lower, upper], uniform (mean and spread as PyTorch's), one per
    entry, and each is the entry's gradient; positive entries pass as they are."""
    x = -np.ones(20000)
    slopes = []
    for lib in (sg, torch):
        lib.manual_seed(0)
        t = lib.tensor(x, requires_grad=True)
        out = lib.nn.functional.rrelu(t, 0.1, 0.5, training=True)
        out.sum().backward()
        np.testing.assert_allclose(t.grad.numpy(), -out.detach().numpy())
        slopes.append(-out.detach().numpy())
    for s in slopes:
        assert s.min() >= 0.1 and s.max() <= 0.5 and len(np.unique(s)) > 19000
        assert abs(s.mean() - 0.3) < 0.005 and abs(s.std() - 0.4 / 12**0.5) < 0.005
    assert F.rrelu(sg.tensor([2.0, 3.0]), training=True).tolist() == [2.0, 3.0]
    sg.manual_seed(3)
    first = F.rrelu(sg.tensor(x), training=True)
    sg.manual_seed(3)
    np.testing.assert_array_equal(F.rrelu(sg.tensor(x), training=True).numpy(), first.numpy())


def test_rrelu_module_is_random_in_training_and_fixed_in_eval():
    x = -np.ones((4, 50))
    layer, theirs = nn.RReLU(0.2, 0.4), torch.nn.RReLU(0.2, 0.4)
    assert len(np.unique(layer(sg.tensor(x)).numpy())) > 100
    layer.eval(), theirs.eval()
    assert_close(layer(sg.tensor(x)), theirs(torch.tensor(x)))
    assert layer(sg.tensor([-1.0])).item() == pytest.approx(-0.3)


# name, build(nn), input shape
ACTIVATION_MODULES = [
    ("LogSigmoid", lambda nn: nn.LogSigmoid(), (2, 3)),
    ("Softsign", lambda nn: nn.Softsign(), (2, 3)),
    ("Hardsigmoid", lambda nn: nn.Hardsigmoid(), (2, 3)),
    ("Hardsigmoid_inplace", lambda nn: nn.Hardsigmoid(inplace=True), (2, 3)),
    ("CELU", lambda nn: nn.CELU(), (2, 3)),
    ("CELU_alpha", lambda nn: nn.CELU(2.0, inplace=True), (2, 3)),
    ("Threshold", lambda nn: nn.Threshold(0.1, 20.0), (2, 3)),
    ("Threshold_inplace", lambda nn: nn.Threshold(0.1, 20, inplace=True), (2, 3)),
    ("Hardshrink", lambda nn: nn.Hardshrink(), (2, 3)),
    ("Softshrink", lambda nn: nn.Softshrink(0.3), (2, 3)),
    ("Tanhshrink", lambda nn: nn.Tanhshrink(), (2, 3)),
    ("RReLU", lambda nn: nn.RReLU().eval(), (2, 3)),
    ("RReLU_args", lambda nn: nn.RReLU(0.1, 0.3, True).eval(), (2, 3)),
    ("Softmax2d", lambda nn: nn.Softmax2d(), (2, 3, 4, 5)),
    ("Softmax2d_unbatched", lambda nn: nn.Softmax2d(), (3, 4, 5)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "build, shape", [a[1:] for a in ACTIVATION_MODULES], ids=[a[0] for a in ACTIVATION_MODULES]
)
def test_activation_modules_match_torch(build, shape, dtype):
    ours, theirs = module_pair(build, dtype)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == []
    # through a product, so that an in-place layer overwrites an intermediate, not the leaf
    check_against_torch(
        lambda x: ours(x * 1.0), lambda x: theirs(x * 1.0), [_normal(*shape)], dtype
    )


def test_softmax2d_needs_3d_or_4d_input():
    assert_raises_as_torch(
        lambda lib: lib.nn.Softmax2d()(lib.ones(2, 2)), ValueError, "expected input to be 3D or 4D"
    )


# ---- batch and instance norms ---------------------------------------------------------------

NORMS = [
    ("bn3d", lambda nn: nn.BatchNorm3d(3), (2, 3, 3, 4, 2)),
    ("bn3d_cumulative", lambda nn: nn.BatchNorm3d(3, momentum=None), (2, 3, 2, 3, 2)),
    ("bn3d_no_stats", lambda nn: nn.BatchNorm3d(3, affine=False, track_running_stats=False),
     (2, 3, 2, 2, 2)),
    ("bn3d_no_bias", lambda nn: nn.BatchNorm3d(3, bias=False), (2, 3, 2, 2, 2)),
    ("in1d", lambda nn: nn.InstanceNorm1d(3), (2, 3, 5)),
    ("in1d_unbatched", lambda nn: nn.InstanceNorm1d(3, affine=True), (3, 5)),
    ("in1d_running", lambda nn: nn.InstanceNorm1d(3, momentum=0.3, track_running_stats=True),
     (4, 3, 6)),
    ("in1d_cumulative", lambda nn: nn.InstanceNorm1d(3, momentum=None, track_running_stats=True),
     (2, 3, 5)),
    ("in3d", lambda nn: nn.InstanceNorm3d(2), (2, 2, 3, 2, 4)),
    ("in3d_both", lambda nn: nn.InstanceNorm3d(2, affine=True, track_running_stats=True),
     (2, 2, 3, 2, 2)),
    ("in3d_unbatched", lambda nn: nn.InstanceNorm3d(2, affine=True, bias=False), (2, 3, 2, 2)),
]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("build, shape", [n[1:] for n in NORMS], ids=[n[0] for n in NORMS])
def test_norm_layers_match_torch(build, shape, dtype):
    ours, theirs = module_pair(build, dtype, init=lambda p: p.normal_())
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    for step in range(3):  # training moves the running statistics; then eval uses them
        check_against_torch(ours, theirs, [_normal(*shape, seed=step)], dtype)
        for key, value in theirs.state_dict().items():
            assert_close(ours.state_dict()[key].numpy(), value, dtype, key)
    ours.eval(), theirs.eval()
    check_against_torch(ours, theirs, [_normal(*shape, seed=5)], dtype)


def test_instance_norms_are_not_batch_norms_as_in_torch():
    from scratchgrad.nn.batchnorm import _BatchNorm

    assert isinstance(nn.BatchNorm3d(2), _BatchNorm)
    assert not any(isinstance(m(2), _BatchNorm) for m in (nn.InstanceNorm1d, nn.InstanceNorm3d))


@pytest.mark.parametrize(
    "call, kind, message",
    [
        (lambda lib: lib.nn.BatchNorm3d(3)(lib.ones(2, 3, 4, 4)), ValueError, "expected 5D input"),
        (lambda lib: lib.nn.InstanceNorm1d(3)(lib.ones(2, 3, 4, 4)), ValueError, "2D or 3D"),
        (lambda lib: lib.nn.InstanceNorm3d(3)(lib.ones(3, 4, 4)), ValueError, "4D or 5D"),
        (
            lambda lib: lib.nn.InstanceNorm1d(3, affine=True)(lib.ones(2, 4, 5)),
            ValueError,
            r"size at dim=1 to match num_features \(3\), but got: 4",
        ),
        (
            lambda lib: lib.nn.InstanceNorm3d(3, affine=True)(lib.ones(4, 2, 2, 2)),
            ValueError,
            r"size at dim=0 to match num_features \(3\), but got: 4",
        ),
        (lambda lib: lib.nn.InstanceNorm1d(3)(lib.ones(2, 3, 1)), ValueError, "more than 1"),
        (lambda lib: lib.nn.BatchNorm3d(3)(lib.ones(1, 3, 1, 1, 1)), ValueError, "more than 1"),
    ],
)
def test_norm_errors_match_torch(call, kind, message):
    assert_raises_as_torch(call, kind, message)


# ---- dropout --------------------------------------------------------------------------------


def _rates(out, x):
    return (out == 0).mean(), np.unique(out[out != 0] / x[out != 0])


# name, call(F, x, p) in training, input shape, the dims one channel spans
CHANNEL_DROPOUTS = [
    ("dropout1d", lambda F, x, p: F.dropout1d(x, p), (100, 40, 3), (2,)),
    ("dropout1d_unbatched", lambda F, x, p: F.dropout1d(x, p), (4000, 5), (1,)),
    ("dropout3d", lambda F, x, p: F.dropout3d(x, p), (50, 40, 2, 2, 2), (2, 3, 4)),
    ("dropout3d_unbatched", lambda F, x, p: F.dropout3d(x, p), (4000, 2, 1, 3), (1, 2, 3)),
]


@pytest.mark.parametrize(
    "call, shape, spans", [c[1:] for c in CHANNEL_DROPOUTS], ids=[c[0] for c in CHANNEL_DROPOUTS]
)
def test_channel_dropouts_drop_whole_channels_at_torchs_rate(call, shape, spans):
    x = np.random.default_rng(0).uniform(1, 2, shape)
    sg.manual_seed(0), torch.manual_seed(0)
    for out in (call(F, sg.tensor(x), 0.3).numpy(), call(TF, torch.tensor(x), 0.3).numpy()):
        zero_rate, scales = _rates(out, x)
        assert abs(zero_rate - 0.3) < 0.03
        np.testing.assert_allclose(scales, 1 / 0.7)
        dropped = out == 0
        assert (dropped.all(spans) == dropped.any(spans)).all()  # whole channels


def test_channel_dropout_gradient_is_the_mask_and_eval_passes_through():
    x = sg.tensor(_normal(4, 6, 3), requires_grad=True)
    sg.manual_seed(7)
    out = F.dropout1d(x, 0.5)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), out.detach().numpy() / x.detach().numpy())
    for layer in (nn.Dropout1d(0.4), nn.Dropout3d(0.4), nn.AlphaDropout(0.4)):
        y = (
            _normal(2, 3, 2, 2, 2)[..., 0, 0]
            if isinstance(layer, nn.Dropout1d)
            else _normal(2, 3, 2, 2, 2)
        )
        np.testing.assert_array_equal(layer.eval()(sg.tensor(y)).numpy(), y)
    np.testing.assert_array_equal(F.alpha_dropout(sg.tensor(y), 0.4).numpy(), y)  # training=False


@pytest.mark.parametrize("feature", [False, True], ids=["alpha", "feature_alpha"])
def test_alpha_dropouts_keep_selu_statistics_like_torch(feature):
    """Each entry is kept (scaled and shifted) or set to the one dropped value, at PyTorch's
    values and rate; a standard normal input keeps mean 0 and variance 1."""
    x = np.random.default_rng(0).standard_normal((400, 100, 4))
    name = "feature_alpha_dropout" if feature else "alpha_dropout"
    sg.manual_seed(0), torch.manual_seed(0)
    outs = [getattr(lib.nn.functional, name)(lib.tensor(x), 0.2, True) for lib in (sg, torch)]
    ours, theirs = (o.numpy() for o in outs)
    alpha = 1.7580993408473766  # -alpha: SELU's value for very negative inputs
    a = 1 / np.sqrt((alpha**2 * 0.2 + 1) * 0.8)
    dropped = -alpha * a * 0.8  # -alpha, scaled and shifted as the kept entries
    for out in (ours, theirs):
        gone = np.isclose(out, dropped)
        assert abs(gone.mean() - 0.2) < 0.01
        np.testing.assert_allclose(out[~gone], a * x[~gone] + a * alpha * 0.2)
        assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02
        if feature:
            assert (gone.all(2) == gone.any(2)).all()


def test_dropout_modules_repr_and_state_dict_as_torch():
    for name in ("Dropout1d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"):
        for args in ((), (0.2, True)):
            ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
            assert repr(ours) == repr(theirs) and list(ours.state_dict()) == []


def test_dropout_edge_probabilities_and_empty_input():
    x = sg.tensor(_normal(3, 4, 2))
    assert F.dropout1d(x, 1.0).abs().sum().item() == 0
    assert F.alpha_dropout(x, 1.0, True).abs().sum().item() == 0
    assert F.feature_alpha_dropout(x, 0.0, True) is x
    assert F.alpha_dropout(sg.ones(0, 3), 0.5, True).shape == (0, 3)


@pytest.mark.parametrize(
    "call, kind, message",
    [
        (lambda lib: lib.nn.functional.dropout1d(lib.ones(2, 2, 2, 2)), RuntimeError, "2D or 3D"),
        (lambda lib: lib.nn.functional.dropout1d(lib.ones(2, 2), 1.5), ValueError, "between 0"),
        (lambda lib: lib.nn.functional.dropout3d(lib.ones(2, 2), -0.1), ValueError, "between 0"),
        (lambda lib: lib.nn.functional.alpha_dropout(lib.ones(2), 2.0), ValueError, "between 0"),
        (lambda lib: lib.nn.AlphaDropout(1.5), ValueError, "between 0 and 1"),
        (
            lambda lib: lib.nn.functional.feature_alpha_dropout(lib.ones(3), 0.5, True),
            RuntimeError,
            "Feature dropout requires at least 2 dimensions",
        ),
    ],
)
def test_dropout_errors_match_torch(call, kind, message):
    assert_raises_as_torch(call, kind, message)


def test_dropout3d_warns_as_torch_about_other_ranks():
    for lib in (torch, sg):
        with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d") as record:
            lib.nn.functional.dropout3d(lib.ones(2, 3, 4), 0.5)
        assert record[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.dropout3d(sg.ones(2, 3, 4, 5), 0.5)


# ---- padding --------------------------------------------------------------------------------

# name, build(nn), input shape
PADDINGS = [
    ("reflect1d", lambda nn: nn.ReflectionPad1d(2), (2, 3, 5)),
    ("reflect1d_unbatched", lambda nn: nn.ReflectionPad1d((3, 1)), (3, 5)),
    ("reflect2d", lambda nn: nn.ReflectionPad2d((1, 2, 3, 0)), (2, 3, 4, 5)),
    ("reflect2d_unbatched", lambda nn: nn.ReflectionPad2d(2), (3, 4, 5)),
    ("reflect3d", lambda nn: nn.ReflectionPad3d((1, 0, 2, 1, 0, 2)), (1, 2, 3, 4, 3)),
    ("reflect3d_crop", lambda nn: nn.ReflectionPad3d((1, -1, 1, 1, 0, 0)), (2, 3, 4, 3)),
    ("replicate1d", lambda nn: nn.ReplicationPad1d((4, 1)), (2, 3, 2)),
    ("replicate2d", lambda nn: nn.ReplicationPad2d(3), (3, 2, 2)),
    ("replicate3d", lambda nn: nn.ReplicationPad3d((1, 2, 0, 1, 2, 0)), (1, 2, 2, 3, 2)),
    ("circular1d", lambda nn: nn.CircularPad1d((2, 3)), (2, 3, 4)),
    ("circular2d", lambda nn: nn.CircularPad2d((1, 2, 2, 0)), (3, 3, 4)),
    ("circular3d", lambda nn: nn.CircularPad3d(1), (1, 2, 3, 2, 2)),
    ("circular2d_crop", lambda nn: nn.CircularPad2d((-1, 2, 1, 1)), (1, 2, 3, 4)),
    ("zero1d", lambda nn: nn.ZeroPad1d((1, 3)), (2, 3, 4)),
    ("zero1d_any_rank", lambda nn: nn.ZeroPad1d(2), (4,)),
    ("zero3d", lambda nn: nn.ZeroPad3d((1, 0, 0, 2, 1, 1)), (2, 2, 3, 2)),
    ("constant1d", lambda nn: nn.ConstantPad1d(2, 3.5), (2, 3)),
    ("constant3d", lambda nn: nn.ConstantPad3d((1, 2, -1, 0, 1, 1), -1.0), (1, 2, 3, 2, 2)),
    ("constant3d_int_value", lambda nn: nn.ConstantPad3d(1, 2), (2, 2, 2)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("build, shape", [p[1:] for p in PADDINGS], ids=[p[0] for p in PADDINGS])
def test_padding_layers_match_torch(build, shape, dtype):
    ours, theirs = module_pair(build, dtype)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == []
    check_against_torch(ours, theirs, [_normal(*shape)], dtype)


def test_zero_pads_are_constant_pads_as_in_torch():
    for dims in (1, 2, 3):
        pad = getattr(nn, f"ZeroPad{dims}d")(1)
        assert isinstance(pad, getattr(nn, f"ConstantPad{dims}d")) and pad.value == 0.0


@pytest.mark.parametrize(
    "call, kind, message",
    [
        (lambda lib: lib.nn.CircularPad1d(1)(lib.ones(1, 2, 3, 4)), ValueError, "2D or 3D input"),
        (lambda lib: lib.nn.CircularPad2d(1)(lib.ones(3, 4)), ValueError, "3D or 4D input"),
        (lambda lib: lib.nn.CircularPad3d(1)(lib.ones(3, 4, 2)), ValueError, "4D or 5D input"),
        (lambda lib: lib.nn.ReflectionPad2d(1)(lib.ones(2, 2)), NotImplementedError, "3-D or 4-D"),
        (
            lambda lib: lib.nn.ReplicationPad3d(1)(lib.ones(2, 2, 2)),
            NotImplementedError,
            "4-D or 5-D",
        ),
    ],
)
def test_padding_errors_match_torch(call, kind, message):
    assert_raises_as_torch(call, kind, message)


# ---- fold and unfold ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "args", [((2, 3),), (2, 2, 1, 2), ((3, 2), (1, 2), (1, 0), (2, 1))], ids=str
)
def test_unfold_and_fold_modules_match_torch(args, dtype):
    ours, theirs = module_pair(lambda nn: nn.Unfold(*args), dtype)
    assert repr(ours) == repr(theirs)
    cols, _ = check_against_torch(ours, theirs, [_normal(2, 3, 6, 7)], dtype)
    ours, theirs = module_pair(lambda nn: nn.Fold((6, 7), *args), dtype)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == []
    check_against_torch(ours, theirs, [_normal(*cols.shape, seed=1)], dtype)


def test_fold_is_not_an_unfold_as_in_torch():
    assert not isinstance(nn.Fold(3, 2), nn.Unfold)


# ---- losses ---------------------------------------------------------------------------------

REDUCTIONS = ["mean", "sum", "none"]


def _signs(*shape, seed=0):
    return np.where(np.random.default_rng(seed).random(shape) < 0.5, -1.0, 1.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "shapes", [((5,), (5,)), ((3, 4), (3, 4)), ((3, 4), (4,)), ((), ())], ids=str
)
def test_soft_margin_loss_matches_torch(shapes, reduction, dtype):
    x, y = _normal(*shapes[0]), _signs(*shapes[1])
    check_against_torch(
        # PyTorch's has no gradient for the target (ours has)
        lambda x, y: F.soft_margin_loss(x, y.detach(), reduction=reduction),
        lambda x, y: TF.soft_margin_loss(x, y.detach(), reduction=reduction),
        [x, y],
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "shapes", [((6,), (6,)), ((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (2, 4))], ids=str
)
def test_hinge_embedding_loss_matches_torch(shapes, reduction, dtype):
    x = np.abs(_normal(*shapes[0]))
    x.reshape(-1)[:2] = 1.0  # at the margin, where the clamp's gradient picks a side
    y = _signs(*shapes[1], seed=1)
    y.reshape(-1)[0] = 0.5  # neither 1 nor -1: both terms, as PyTorch's
    check_against_torch(
        lambda x, y: F.hinge_embedding_loss(x, y, 1.0, reduction=reduction),
        lambda x, y: TF.hinge_embedding_loss(x, y, 1.0, reduction=reduction),
        [x, y],
        dtype,
    )


MULTI_MARGIN = [
    ("plain", (5, 4), (5,), {}),
    ("p2_margin", (5, 4), (5,), {"p": 2, "margin": 0.5}),
    ("weight", (6, 3), (6,), {"weight": True}),
    ("p2_weight", (6, 3), (6,), {"p": 2, "weight": True, "margin": 2.0}),
    ("vector", (4,), (), {}),
    ("vector_1d_target", (4,), (1,), {"p": 2}),
]


def _detached(w):
    return None if w is None else w.detach()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "shape, target_shape, kwargs", [m[1:] for m in MULTI_MARGIN], ids=[m[0] for m in MULTI_MARGIN]
)
def test_multi_margin_loss_matches_torch(shape, target_shape, kwargs, reduction, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    classes = shape[-1]
    y = rng.integers(0, classes, target_shape)
    if x.ndim == 2 and len(x):  # a margin exactly met, where the hinge's gradient picks a side
        x[0, (y[0] + 1) % classes] = x[0, y[0]] - kwargs.get("margin", 1.0)
    w = rng.uniform(0.5, 2, classes) if kwargs.get("weight") else None
    options = {k: v for k, v in kwargs.items() if k != "weight"} | {"reduction": reduction}
    check_against_torch(
        # PyTorch's has no gradient for the weight (ours has)
        lambda x, y, w: F.multi_margin_loss(x, y, weight=_detached(w), **options),
        lambda x, y, w: TF.multi_margin_loss(x, y, weight=_detached(w), **options),
        [x, y, w],
        dtype,
    )


def test_multi_margin_loss_of_an_empty_batch():
    """PyTorch's result is uninitialised memory here; ours is what other losses give."""
    x, y = sg.ones(0, 4), sg.tensor([], dtype=sg.int64)
    assert F.multi_margin_loss(x, y).isnan().item()
    assert F.multi_margin_loss(x, y, reduction="sum").item() == 0
    assert F.multi_margin_loss(x, y, reduction="none").shape == (0,)


@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss_gradcheck_and_gradgradcheck(p):
    x = sg.tensor(_normal(4, 3, seed=2), requires_grad=True)
    w = sg.tensor(np.array([0.5, 1.0, 2.0]), requires_grad=True)
    y = sg.tensor([0, 2, 1, 1])
    assert sg.autograd.gradcheck(lambda x, w: F.multi_margin_loss(x, y, p, 1.0, w), (x, w))
    assert sg.autograd.gradgradcheck(lambda x, w: F.multi_margin_loss(x, y, p, 1.0, w), (x, w))


@pytest.mark.parametrize(
    "loss",
    [F.soft_margin_loss, lambda x, y: F.hinge_embedding_loss(x.abs(), y, 2.5)],
    ids=["soft_margin", "hinge_embedding"],
)
def test_soft_margin_and_hinge_gradcheck_and_gradgradcheck(loss):
    x = sg.tensor(_normal(3, 4, seed=3), requires_grad=True)
    y = sg.tensor(_signs(3, 4))
    assert sg.autograd.gradcheck(lambda x: loss(x, y), (x,))
    assert sg.autograd.gradgradcheck(lambda x: loss(x, y), (x,))


LOSS_MODULES = [
    ("SoftMarginLoss", lambda nn: nn.SoftMarginLoss(reduction="sum"), "signs"),
    ("HingeEmbeddingLoss", lambda nn: nn.HingeEmbeddingLoss(margin=0.5), "signs"),
    ("MultiMarginLoss", lambda nn: nn.MultiMarginLoss(p=2, margin=0.7), "classes"),
    (
        "MultiMarginLoss_weight",
        # ours gets PyTorch's weight (module_pair copies the state): any 4 values to start
        lambda nn: nn.MultiMarginLoss(weight=nn.Linear(1, 4).weight.detach().reshape(4).abs()),
        "classes",
    ),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, build, targets", LOSS_MODULES, ids=[m[0] for m in LOSS_MODULES])
def test_loss_modules_match_torch(name, build, targets, dtype):
    ours, theirs = module_pair(build, dtype)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    y = _signs(3, 4) if targets == "signs" else np.array([0, 3, 1])
    # the targets need no gradient (PyTorch's soft margin loss has none for them)
    check_against_torch(
        lambda x, y: ours(x, y.detach()),
        lambda x, y: theirs(x, y.detach()),
        [_normal(3, 4), y],
        dtype,
    )


def test_multi_margin_loss_weight_is_a_buffer_that_follows_the_dtype():
    loss = nn.MultiMarginLoss(weight=sg.ones(3)).double()
    assert loss.weight.dtype == sg.float64 and list(loss.state_dict()) == ["weight"]
    assert list(nn.MultiMarginLoss().state_dict()) == []


def test_the_legacy_reduction_arguments_warn_and_choose_as_torch():
    x, y = _normal(3, 4), _signs(3, 4)
    for name in ("SoftMarginLoss", "HingeEmbeddingLoss"):
        with pytest.warns(UserWarning, match="reduction='sum'"):
            ours = getattr(nn, name)(size_average=False)
        with pytest.warns(UserWarning, match="reduction='sum'"):
            theirs = getattr(torch.nn, name)(size_average=False)
        assert_close(ours(sg.tensor(x), sg.tensor(y)), theirs(torch.tensor(x), torch.tensor(y)))
    for lib in (sg, torch):
        with pytest.warns(UserWarning, match="reduction='none'"):
            out = lib.nn.functional.multi_margin_loss(
                lib.tensor(x), lib.tensor([0, 1, 2]), reduce=False
            )
        assert tuple(out.shape) == (3,)


@pytest.mark.parametrize(
    "call, kind, message",
    [
        (lambda F, lib: F.multi_margin_loss(lib.ones(3, 4), lib.tensor([0, 1, 4])), RuntimeError,
         "target out of range"),
        (lambda F, lib: F.multi_margin_loss(lib.ones(3, 4), lib.tensor([0, -1, 2])), RuntimeError,
         "target out of range"),
        (lambda F, lib: F.multi_margin_loss(lib.ones(3, 4), lib.tensor([0, 1])), RuntimeError,
         r"Expected target size \[3\], but got \[2\]"),
        (lambda F, lib: F.multi_margin_loss(lib.ones(3, 4), lib.tensor([[0], [1], [1]])),
         RuntimeError, "target tensor should be 1-D"),
        (lambda F, lib: F.multi_margin_loss(lib.ones(3, 4, 2), lib.tensor([0, 1, 1])),
         RuntimeError, "Expected non-empty vector or matrix"),
        (lambda F, lib: F.multi_margin_loss(lib.ones(3, 0), lib.tensor([0, 0, 0])),
         RuntimeError, "Expected non-empty vector or matrix"),
        (lambda F, lib: F.multi_margin_loss(lib.ones(3, 4), lib.tensor([0, 1, 1]), p=3),
         ValueError, "only p == 1 and p == 2 supported"),
        (lambda F, lib: F.multi_margin_loss(lib.ones(3, 4), lib.tensor([0, 1, 1]),
                                            weight=lib.ones(2, 2)),
         ValueError, "weight must be one-dimensional"),
        (lambda F, lib: F.multi_margin_loss(lib.ones(3, 4), lib.tensor([0, 1, 1]),
                                            weight=lib.ones(3)),
         RuntimeError, r"inconsistent weight size, expected 4 but got \[3\]"),
        (lambda F, lib: F.multi_margin_loss(lib.ones(3, 4), lib.tensor([0.0, 1, 1])),
         RuntimeError, "expected scalar type Long"),
        (lambda F, lib: F.multi_margin_loss(lib.ones(3, 4), lib.tensor([0, 1, 1]),
                                            reduction="avg"),
         ValueError, "avg is not a valid value for reduction"),
        (lambda F, lib: lib.nn.MultiMarginLoss(p=3), ValueError, "only p == 1 and p == 2"),
        (lambda F, lib: lib.nn.MultiMarginLoss(weight=lib.ones(2, 2)), ValueError,
         "expected weight to be None or 1D tensor, got 2D"),
        (lambda F, lib: F.soft_margin_loss(lib.ones(3, 4), lib.ones(2, 1, 4)), RuntimeError,
         "doesn't match the broadcast shape"),
        (lambda F, lib: F.soft_margin_loss(lib.ones(3), lib.ones(3), reduction="avg"),
         ValueError, "avg is not a valid value for reduction"),
        (lambda F, lib: F.hinge_embedding_loss(lib.ones(3), lib.ones(3), reduction="avg"),
         ValueError, "avg is not a valid value for reduction"),
    ],
)  # fmt: skip
def test_loss_errors_match_torch(call, kind, message):
    assert_raises_as_torch(lambda lib: call(lib.nn.functional, lib), kind, message)


# ---- init -----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (4, 1)], ids=str)
def test_eye_matches_torch(shape):
    ours = init.eye_(sg.empty(*shape))
    assert_close(ours, torch.nn.init.eye_(torch.empty(*shape)))
    w = nn.Linear(shape[1], shape[0]).weight
    assert init.eye_(w) is w and w.requires_grad and w.grad is None


@pytest.mark.parametrize(
    "shape, groups",
    [((4, 4, 3), 1), ((6, 2, 3, 3), 2), ((3, 5, 2, 4), 1), ((4, 2, 3, 3, 3), 4), ((2, 6, 1), 2)],
    ids=str,
)
def test_dirac_matches_torch(shape, groups):
    ours = init.dirac_(sg.ones(*shape), groups)
    assert_close(ours, torch.nn.init.dirac_(torch.ones(*shape), groups))


def test_dirac_weight_makes_a_convolution_the_identity():
    conv = nn.Conv2d(3, 3, 3, padding=1, bias=False)
    init.dirac_(conv.weight)
    x = sg.randn(2, 3, 5, 5)
    np.testing.assert_allclose(conv(x).detach().numpy(), x.numpy(), atol=1e-6)


@pytest.mark.parametrize("sparsity", [0.0, 0.1, 0.5, 1.0])
def test_sparse_zeros_as_many_per_column_as_torch(sparsity):
    sg.manual_seed(0), torch.manual_seed(0)
    ours = init.sparse_(sg.empty(20, 30), sparsity, std=0.5).numpy()
    theirs = torch.nn.init.sparse_(torch.empty(20, 30), sparsity, std=0.5).numpy()
    np.testing.assert_array_equal((ours == 0).sum(0), (theirs == 0).sum(0))
    nonzero = ours[ours != 0]
    if nonzero.size > 400:
        assert abs(nonzero.std() - 0.5) < 0.05
    # the zeros fall in different rows from column to column
    if 0 < sparsity < 1:
        assert len({tuple(np.flatnonzero(c == 0)) for c in ours.T}) > 20


def test_sparse_is_seeded_and_takes_a_generator():
    first = init.sparse_(sg.empty(8, 5), 0.5, generator=sg.Generator().manual_seed(3))
    again = init.sparse_(sg.empty(8, 5), 0.5, generator=sg.Generator().manual_seed(3))
    np.testing.assert_array_equal(first.numpy(), again.numpy())


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda init, lib: init.eye_(lib.ones(2, 2, 2)), "Only tensors with 2 dimensions"),
        (lambda init, lib: init.sparse_(lib.ones(4), 0.5), "Only tensors with 2 dimensions"),
        (lambda init, lib: init.dirac_(lib.ones(2, 2)), "Only tensors with 3, 4, or 5 dim"),
        (lambda init, lib: init.dirac_(lib.ones(3, 2, 3), 2), "dim 0 must be divisible by"),
    ],
)
def test_init_errors_match_torch(call, message):
    assert_raises_as_torch(lambda lib: call(lib.nn.init, lib), ValueError, message)


# ---- doc examples ---------------------------------------------------------------------------

NEW_FUNCTIONS = [
    "hardsigmoid", "celu", "threshold", "hardshrink", "softshrink", "tanhshrink", "softsign",
    "rrelu", "dropout1d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
    "soft_margin_loss", "multi_margin_loss", "hinge_embedding_loss",
]  # fmt: skip
NEW_LAYERS = [
    "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "Dropout1d",
    "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "ReflectionPad1d", "ReflectionPad2d",
    "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
    "CircularPad1d", "CircularPad2d", "CircularPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
    "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "LogSigmoid", "Softsign", "Hardsigmoid",
    "CELU", "Threshold", "Hardshrink", "Softshrink", "Tanhshrink", "RReLU", "Softmax2d", "Fold",
    "Unfold", "SoftMarginLoss", "MultiMarginLoss", "HingeEmbeddingLoss",
]  # fmt: skip


def test_doc_examples_run():
    for name in NEW_FUNCTIONS:
        assert_doc_examples_run(getattr(F, name), vars(F))
    for name in NEW_LAYERS:
        assert_doc_examples_run(getattr(nn, name))
    for function in (init.eye_, init.dirac_, init.sparse_):
        assert_doc_examples_run(function, vars(init))


def test_every_new_name_is_exported_as_in_torch():
    for name in NEW_LAYERS:
        assert name in nn.__all__ and hasattr(torch.nn, name)
    for name in NEW_FUNCTIONS:
        assert hasattr(TF, name)
