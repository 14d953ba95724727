"""The layers added after the first CNN ones, against PyTorch: ParameterList and
ParameterDict (registration, state_dict keys, order, iteration, reprs); 1-d and adaptive max
pooling; interpolate / Upsample and pixel (un)shuffle; InstanceNorm2d, Dropout2d (statistics and
structure, not masks), Bilinear, EmbeddingBag; transposed convolutions; init.orthogonal_ and
init.trunc_normal_ (properties, not values). Each function and module: output and every
gradient (inputs and parameters, same weights) in float64 (tight) and float32 (loose), reprs,
errors where PyTorch raises, gradcheck in float64, and one layer of each kind inside a jitted
training step (equal to eager, bit for bit)."""

import doctest
from collections import OrderedDict

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from oracle import assert_close, check_against_torch, module_pair

import scratchgrad as sg
import scratchgrad.nn.functional as F
from scratchgrad import nn
from scratchgrad.nn import (
    batchnorm,
    containers,
    conv_functional,
    dropout,
    embedding,
    linear,
    pooling,
    upsampling,
)

DTYPES = ["float64", "float32"]


def _normal(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# ---- ParameterList and ParameterDict --------------------------------------------------------


def _parameter_list(lib):
    params = lib.nn.ParameterList([lib.ones(2, 3), lib.nn.Parameter(lib.zeros(3))])
    params.append(lib.ones(4))
    params.extend([lib.zeros(1)])
    params += [lib.ones(2, 2)]
    return params


def test_parameter_list_registers_like_torch():
    ours, theirs = _parameter_list(sg), _parameter_list(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["0", "1", "2", "3", "4"]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert all(isinstance(p, nn.Parameter) for p in ours)
    assert len(ours) == 5 and ours[-1].shape == (2, 2) and ours[1] is list(ours)[1]
    assert [p.shape for p in ours[1:4]] == [(3,), (4,), (1,)]
    assert repr(ours) == repr(theirs).replace("torch.", "scratchgrad.")
    ours[0] = sg.zeros(5)
    assert ours[0].shape == (5,) and isinstance(ours[0], nn.Parameter)


def test_parameter_list_inside_a_module_trains():
    model = nn.Module()
    model.scales = nn.ParameterList([sg.ones(3), sg.ones(3)])
    assert [n for n, _ in model.named_parameters()] == ["scales.0", "scales.1"]
    (model.scales[0] * model.scales[1] * 2).sum().backward()
    np.testing.assert_array_equal(model.scales[0].grad.numpy(), [2.0, 2.0, 2.0])
    model.load_state_dict({"scales.0": sg.zeros(3), "scales.1": sg.full((3,), 4.0)})
    np.testing.assert_array_equal(model.scales[1].detach().numpy(), [4.0, 4.0, 4.0])


def test_parameter_dict_registers_like_torch():
    built = []
    for lib in (sg, torch):
        params = lib.nn.ParameterDict({"scale": lib.ones(3), "bias": lib.zeros(3)})
        params.update(OrderedDict([("z", lib.ones(1)), ("a", lib.ones(2))]))
        params.update([("m", lib.nn.Parameter(lib.ones(2, 2)))])
        params["scale"] = lib.zeros(4)
        built.append(params)
    ours, theirs = built
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["bias", "scale", "z", "a", "m"]
    assert list(ours) == list(ours.keys()) == list(theirs)
    assert ours["scale"].shape == (4,) and isinstance(ours["scale"], nn.Parameter)
    assert "z" in ours and "q" not in ours and ours.get("q") is None and len(ours) == 5
    assert ours.pop("z").shape == (1,) and ours.popitem()[0] == "m"
    assert list(ours) == ["bias", "scale", "a"] == [n for n, _ in ours.named_parameters()]
    assert list(ours.copy()) == list(ours)
    expected = torch.nn.ParameterDict(OrderedDict((k, theirs[k]) for k in ["bias", "scale", "a"]))
    assert repr(ours).replace("scratchgrad.float32", "torch.FloatTensor") == repr(expected)
    ours.clear()
    assert len(ours) == 0 and list(ours.parameters()) == []


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: nn.ParameterList(sg.ones(3)), TypeError, "iterable, but got Tensor"),
        (lambda: nn.ParameterList([sg.ones(1)])[1], IndexError, "index 1 is out of range"),
        (lambda: nn.ParameterList()(sg.ones(1)), RuntimeError, "should not be called"),
        (lambda: nn.ParameterDict({1: sg.ones(1)}), TypeError, "not a string"),
        (lambda: nn.ParameterDict([("a", sg.ones(1), 3)]), ValueError, "element #0"),
        (lambda: nn.ParameterDict(3), TypeError, "iterable of key/value pairs"),
    ],
)
def test_parameter_container_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


# ---- pooling --------------------------------------------------------------------------------

POOL_FUNCTIONS = [
    ("max1d", lambda F_, x: F_.max_pool1d(x, 2), (2, 3, 9)),
    ("max1d_options", lambda F_, x: F_.max_pool1d(x, 3, 2, 1, 2, ceil_mode=True), (2, 3, 10)),
    ("max1d_unbatched", lambda F_, x: F_.max_pool1d(x, 3, 1), (3, 7)),
    ("avg1d", lambda F_, x: F_.avg_pool1d(x, 2), (2, 3, 9)),
    ("avg1d_options", lambda F_, x: F_.avg_pool1d(x, 3, 2, 1, True, False), (2, 3, 10)),
    ("adaptive_avg1d", lambda F_, x: F_.adaptive_avg_pool1d(x, 4), (2, 3, 7)),
    ("adaptive_avg1d_tiles", lambda F_, x: F_.adaptive_avg_pool1d(x, 3), (3, 9)),
    ("adaptive_max2d", lambda F_, x: F_.adaptive_max_pool2d(x, (3, 4)), (2, 3, 7, 6)),
    ("adaptive_max2d_none", lambda F_, x: F_.adaptive_max_pool2d(x, (None, 2)), (2, 3, 5, 5)),
    ("adaptive_max2d_grow", lambda F_, x: F_.adaptive_max_pool2d(x, 6), (3, 4, 5)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "call, shape", [c[1:] for c in POOL_FUNCTIONS], ids=[c[0] for c in POOL_FUNCTIONS]
)
def test_pool_functions_match_torch(call, shape, dtype):
    check_against_torch(lambda x: call(F, x), lambda x: call(TF, x), [_normal(*shape)], dtype)


def test_adaptive_max_pool2d_ties_go_to_the_first_maximum():
    x = np.zeros((1, 2, 5, 7))  # every window a tie, overlapping windows share entries
    check_against_torch(
        lambda x: F.adaptive_max_pool2d(x, (3, 4)), lambda x: TF.adaptive_max_pool2d(x, (3, 4)), [x]
    )


@pytest.mark.parametrize(
    "call, shape", [c[1:] for c in POOL_FUNCTIONS[::3]], ids=[c[0] for c in POOL_FUNCTIONS[::3]]
)
def test_pool_functions_gradcheck(call, shape):
    x = sg.tensor(_normal(*shape), dtype=sg.float64, requires_grad=True)
    assert sg.autograd.gradcheck(lambda x: call(F, x), (x,))


POOL_LAYERS = [
    ("maxpool1d", lambda nn: nn.MaxPool1d(3, stride=2, padding=1), (2, 3, 9)),
    ("avgpool1d", lambda nn: nn.AvgPool1d(2), (2, 3, 9)),
    ("avgpool1d_options", lambda nn: nn.AvgPool1d(3, 2, 1, count_include_pad=False), (2, 3, 9)),
    ("adaptiveavg1d", lambda nn: nn.AdaptiveAvgPool1d(4), (2, 3, 9)),
    ("adaptivemax2d", lambda nn: nn.AdaptiveMaxPool2d((2, None)), (2, 3, 5, 7)),
    ("adaptivemax2d_int", lambda nn: nn.AdaptiveMaxPool2d(3), (2, 3, 5, 7)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "build, shape", [c[1:] for c in POOL_LAYERS], ids=[c[0] for c in POOL_LAYERS]
)
def test_pool_layers_match_torch(build, shape, dtype):
    ours = build(nn)
    assert repr(ours) == repr(build(torch.nn))
    assert list(ours.parameters()) == [] and list(ours.state_dict()) == []
    check_against_torch(ours, build(torch.nn), [_normal(*shape)], dtype)


@pytest.mark.parametrize(
    "call, shape, args",
    [
        ("max_pool1d", (1, 1, 4), dict(kernel_size=2, padding=2)),
        ("avg_pool1d", (1, 1, 2), dict(kernel_size=3)),
        ("max_pool1d", (4,), dict(kernel_size=2)),
        ("adaptive_max_pool2d", (4, 4), dict(output_size=2)),
        ("adaptive_avg_pool1d", (4,), dict(output_size=2)),
    ],
)
def test_pool_errors_where_torch_raises(call, shape, args):
    with pytest.raises(RuntimeError):
        getattr(TF, call)(torch.ones(shape), **args)
    with pytest.raises(RuntimeError, match=r"pool|size"):
        getattr(F, call)(sg.ones(shape), **args)


# ---- interpolate, Upsample, pixel shuffle ---------------------------------------------------

INTERPOLATE = [
    dict(scale_factor=2),
    dict(size=(7, 4)),
    dict(size=(3, 11)),
    dict(scale_factor=(1.7, 0.6)),
    dict(scale_factor=2.5, recompute_scale_factor=True),
]
MODES = [("nearest", None), ("bilinear", False), ("bilinear", True)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode, align_corners", MODES, ids=str)
@pytest.mark.parametrize("options", INTERPOLATE, ids=str)
def test_interpolate_matches_torch(options, mode, align_corners, dtype):
    options = dict(options, mode=mode, align_corners=align_corners)
    check_against_torch(
        lambda x: F.interpolate(x, **options),
        lambda x: TF.interpolate(x, **options),
        [_normal(2, 3, 5, 6)],
        dtype,
    )


@pytest.mark.parametrize(
    "mode, align_corners", [("linear", False), ("linear", True), ("nearest", None)]
)
@pytest.mark.parametrize("options", [dict(scale_factor=2), dict(size=9), dict(size=2)], ids=str)
def test_interpolate_3d_matches_torch(options, mode, align_corners):
    options = dict(options, mode=mode, align_corners=align_corners)
    check_against_torch(
        lambda x: F.interpolate(x, **options),
        lambda x: TF.interpolate(x, **options),
        [_normal(2, 3, 5)],
    )


@pytest.mark.parametrize("mode, align_corners", MODES, ids=str)
def test_interpolate_gradcheck(mode, align_corners):
    x = sg.tensor(_normal(1, 2, 3, 4), dtype=sg.float64, requires_grad=True)
    assert sg.autograd.gradcheck(
        lambda x: F.interpolate(x, size=(5, 3), mode=mode, align_corners=align_corners), (x,)
    )


@pytest.mark.parametrize(
    "build, shape",
    [
        (lambda nn: nn.Upsample(scale_factor=2), (2, 3, 4, 5)),
        (lambda nn: nn.Upsample(size=(3, 7), mode="bilinear", align_corners=True), (2, 3, 4, 5)),
        (lambda nn: nn.Upsample(scale_factor=(2, 1.5), mode="bilinear"), (2, 3, 4, 5)),
        (lambda nn: nn.Upsample(scale_factor=3, mode="linear"), (2, 3, 4)),
        (lambda nn: nn.PixelShuffle(2), (2, 8, 3, 4)),
        (lambda nn: nn.PixelShuffle(3), (9, 2, 2)),
        (lambda nn: nn.PixelUnshuffle(2), (2, 3, 4, 6)),
        (lambda nn: nn.PixelUnshuffle(2), (2, 2, 1, 4, 2)),
    ],
    ids=lambda v: v if isinstance(v, tuple) else "",
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_resizing_layers_match_torch(build, shape, dtype):
    ours = build(nn)
    assert repr(ours) == repr(build(torch.nn))
    assert list(ours.state_dict()) == []
    check_against_torch(ours, build(torch.nn), [_normal(*shape)], dtype)


def test_pixel_shuffle_gradcheck_and_inverse():
    x = sg.tensor(_normal(2, 8, 2, 3), dtype=sg.float64, requires_grad=True)
    assert sg.autograd.gradcheck(lambda x: F.pixel_shuffle(x, 2), (x,))
    assert sg.autograd.gradcheck(lambda x: F.pixel_unshuffle(x, 2), (x.reshape(2, 2, 4, 6),))
    np.testing.assert_array_equal(
        F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2).detach().numpy(), x.detach().numpy()
    )


@pytest.mark.parametrize(
    "call, args",
    [
        ("interpolate", ((1, 1, 2), dict(size=3, mode="bilinear"))),
        ("interpolate", ((1, 1, 2), dict(size=3, scale_factor=2))),
        ("interpolate", ((1, 1, 2), dict())),
        ("interpolate", ((1, 1, 2), dict(size=3, align_corners=True))),
        ("interpolate", ((2, 2), dict(size=3))),
        ("interpolate", ((1, 1, 2, 2), dict(size=(3, 3, 3)))),
        ("interpolate", ((1, 1, 2, 2), dict(scale_factor=(3, 3, 3)))),
        ("pixel_shuffle", ((1, 7, 2, 2), dict(upscale_factor=2))),
        ("pixel_shuffle", ((7, 2), dict(upscale_factor=2))),
        ("pixel_unshuffle", ((1, 1, 5, 4), dict(downscale_factor=2))),
        ("pixel_unshuffle", ((1, 1, 4, 5), dict(downscale_factor=2))),
    ],
)
def test_resizing_errors_match_torch(call, args):
    shape, kwargs = args
    with pytest.raises(Exception) as theirs:
        getattr(TF, call)(torch.ones(shape), **kwargs)
    with pytest.raises(type(theirs.value)) as ours:
        getattr(F, call)(sg.ones(shape), **kwargs)
    # the same message, but for the list of modes (ours has fewer)
    assert (
        str(ours.value).split(" for the modes")[0] == str(theirs.value).split(" for the modes")[0]
    )


# ---- instance norm, dropout2d, bilinear, embedding bag ---------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("use_input_stats", [True, False])
def test_instance_norm_function_matches_torch(use_input_stats, dtype):
    rng = np.random.default_rng(0)
    mean, var = rng.standard_normal(3), rng.uniform(0.5, 2, 3)
    ours_stats = [
        sg.tensor(mean, dtype=getattr(sg, dtype)),
        sg.tensor(var, dtype=getattr(sg, dtype)),
    ]
    theirs_stats = [
        torch.tensor(mean, dtype=getattr(torch, dtype)),
        torch.tensor(var, dtype=getattr(torch, dtype)),
    ]
    options = dict(use_input_stats=use_input_stats, momentum=0.3, eps=1e-3)
    check_against_torch(
        lambda x, w, b: F.instance_norm(x, *ours_stats, w, b, **options),
        lambda x, w, b: TF.instance_norm(x, *theirs_stats, w, b, **options),
        [_normal(2, 3, 4, 5), rng.standard_normal(3), rng.standard_normal(3)],
        dtype,
    )
    for ours, theirs in zip(ours_stats, theirs_stats):
        assert_close(ours.numpy(), theirs, dtype)


def test_instance_norm_gradcheck():
    x = sg.tensor(_normal(2, 3, 3, 2), dtype=sg.float64, requires_grad=True)
    w = sg.tensor(_normal(3, seed=1), dtype=sg.float64, requires_grad=True)
    assert sg.autograd.gradcheck(lambda x, w: F.instance_norm(x, weight=w), (x, w))


INSTANCE_NORMS = [
    ("default", lambda nn: nn.InstanceNorm2d(3)),
    ("affine", lambda nn: nn.InstanceNorm2d(3, affine=True)),
    ("running", lambda nn: nn.InstanceNorm2d(3, momentum=0.2, track_running_stats=True)),
    ("both", lambda nn: nn.InstanceNorm2d(3, affine=True, track_running_stats=True)),
    ("cumulative", lambda nn: nn.InstanceNorm2d(3, momentum=None, track_running_stats=True)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (3, 4, 5)], ids=["batched", "unbatched"])
@pytest.mark.parametrize(
    "build", [b for _, b in INSTANCE_NORMS], ids=[i for i, _ in INSTANCE_NORMS]
)
def test_instance_norm_layer_matches_torch(build, shape, dtype):
    ours, theirs = module_pair(build, dtype, init=lambda p: p.normal_())
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    for step in range(2):  # training moves the running statistics; then eval uses them
        check_against_torch(ours, theirs, [_normal(*shape, seed=step)], dtype)
        for key, value in theirs.state_dict().items():
            assert_close(ours.state_dict()[key].numpy(), value, dtype, key)
    ours.eval(), theirs.eval()
    check_against_torch(ours, theirs, [_normal(*shape, seed=5)], dtype)


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda lib: lib.nn.InstanceNorm2d(3)(lib.ones(2, 3)), ValueError),
        (lambda lib: lib.nn.InstanceNorm2d(3, affine=True)(lib.ones(2, 4, 3, 3)), ValueError),
        (lambda lib: lib.nn.InstanceNorm2d(3)(lib.ones(2, 3, 1, 1)), ValueError),
    ],
)
def test_instance_norm_errors_match_torch(call, error):
    with pytest.raises(error) as theirs:
        call(torch)
    with pytest.raises(error) as ours:
        call(sg)
    assert str(ours.value) == str(theirs.value).replace("torch.Size", "scratchgrad.Size")


def test_instance_norm_warns_like_torch_when_channels_differ_without_affine():
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm2d(3)(sg.ones(2, 4, 3, 3))


def test_dropout2d_drops_whole_channels_like_torch():
    """Channels are kept whole, at PyTorch's rate and scale; eval mode and p=0 pass through."""
    torch.manual_seed(0)
    sg.manual_seed(0)
    x = np.ones((200, 50, 2, 3))
    ours, theirs = (
        F.dropout2d(sg.tensor(x), 0.3).numpy(),
        TF.dropout2d(torch.tensor(x), 0.3).numpy(),
    )
    for out in (ours, theirs):
        assert set(np.unique(out)) <= {0.0, 1 / 0.7}
        assert (out.max((2, 3)) == out.min((2, 3))).all()  # whole channels
        assert abs((out[:, :, 0, 0] == 0).mean() - 0.3) < 0.02
    assert nn.Dropout2d(0.3).eval()(sg.tensor(x)).numpy().tolist() == x.tolist()
    np.testing.assert_array_equal(F.dropout2d(sg.tensor(x), 0.0).numpy(), x)
    assert repr(nn.Dropout2d(0.3)) == repr(torch.nn.Dropout2d(0.3))


def test_dropout2d_is_seeded_and_its_gradient_is_the_mask():
    x = sg.tensor(_normal(4, 6, 2, 2), requires_grad=True)
    sg.manual_seed(7)
    out = F.dropout2d(x, 0.5)
    out.sum().backward()
    sg.manual_seed(7)
    again = F.dropout2d(x, 0.5)
    np.testing.assert_array_equal(again.detach().numpy(), out.detach().numpy())
    mask = out.detach().numpy() / x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), mask)


def test_dropout2d_3d_input_warns_as_torch_and_bad_p_raises():
    with pytest.warns(UserWarning, match="channel-wise 1D dropout"):
        out = F.dropout2d(sg.ones(8, 16, 5), 0.5).numpy()
    assert (out.max(2) == out.min(2)).all()
    with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
        nn.Dropout2d(1.5)
    with pytest.raises(ValueError):
        torch.nn.Dropout2d(1.5)


BILINEARS = [
    ("bias", lambda nn: nn.Bilinear(3, 4, 2), [(5, 3), (5, 4)]),
    ("no_bias", lambda nn: nn.Bilinear(3, 4, 2, bias=False), [(2, 5, 3), (2, 5, 4)]),
    ("unbatched", lambda nn: nn.Bilinear(3, 4, 2), [(3,), (4,)]),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("build, shapes", [b[1:] for b in BILINEARS], ids=[b[0] for b in BILINEARS])
def test_bilinear_matches_torch(build, shapes, dtype):
    ours, theirs = module_pair(build, dtype)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    check_against_torch(
        ours, theirs, [_normal(*shape, seed=i) for i, shape in enumerate(shapes)], dtype
    )


def test_bilinear_init_bounds_and_gradcheck():
    layer = nn.Bilinear(16, 3, 50)
    bound = 1 / 4  # 1 / sqrt(in1_features)
    for p in (layer.weight, layer.bias):
        values = p.detach().numpy()
        assert values.min() >= -bound and values.max() <= bound and values.std() > bound / 2
    x1, x2, w, b = (
        sg.tensor(_normal(*s, seed=i), dtype=sg.float64, requires_grad=True)
        for i, s in enumerate([(2, 3), (2, 4), (5, 3, 4), (5,)])
    )
    assert sg.autograd.gradcheck(F.bilinear, (x1, x2, w, b))


def test_bilinear_shape_errors_where_torch_raises():
    with pytest.raises(RuntimeError):
        torch.nn.Bilinear(3, 4, 2)(torch.ones(5, 3), torch.ones(5, 3))
    with pytest.raises(RuntimeError, match=r"bilinear: inputs of shapes \(5, 3\) and \(5, 3\)"):
        nn.Bilinear(3, 4, 2)(sg.ones(5, 3), sg.ones(5, 3))


INDEX = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0])
BAGS = [
    ("mean", dict(), [INDEX, np.array([0, 2, 2, 5])]),
    ("sum_padding", dict(mode="sum", padding_idx=4), [INDEX, np.array([0, 2, 2, 5])]),
    ("max", dict(mode="max"), [INDEX, np.array([0, 2, 2, 5])]),
    (
        "max_last_offset",
        dict(mode="max", include_last_offset=True),
        [INDEX, np.array([0, 3, 3, 9])],
    ),
    ("mean_2d", dict(), [INDEX[:8].reshape(2, 4)]),
    ("sum_2d_padding", dict(mode="sum", padding_idx=2), [INDEX[:8].reshape(4, 2)]),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("options, inputs", [b[1:] for b in BAGS], ids=[b[0] for b in BAGS])
def test_embedding_bag_matches_torch(options, inputs, dtype):
    ours, theirs = module_pair(lambda nn: nn.EmbeddingBag(10, 3, **options), dtype)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    check_against_torch(ours, theirs, inputs, dtype)


def test_embedding_bag_per_sample_weights_match_torch():
    weight, psw = _normal(10, 3), _normal(9, seed=1)
    offsets = np.array([0, 4, 4])
    check_against_torch(
        lambda w, p: F.embedding_bag(
            sg.tensor(INDEX), w, sg.tensor(offsets), mode="sum", per_sample_weights=p
        ),
        lambda w, p: TF.embedding_bag(
            torch.tensor(INDEX), w, torch.tensor(offsets), mode="sum", per_sample_weights=p
        ),
        [weight, psw],
    )


def test_embedding_bag_init_and_gradcheck():
    bag = nn.EmbeddingBag(1000, 4, padding_idx=3)
    values = bag.weight.detach().numpy()
    assert not values[3].any() and abs(values.std() - 1) < 0.05
    w = sg.tensor(_normal(10, 3), dtype=sg.float64, requires_grad=True)
    index, offsets = sg.tensor(INDEX), sg.tensor([0, 2, 2, 5])
    for mode in ("sum", "mean", "max"):
        assert sg.autograd.gradcheck(
            lambda w, mode=mode: F.embedding_bag(index, w, offsets, mode=mode), (w,)
        )


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((INDEX[:8].reshape(2, 4), np.array([0, 2])), dict()),
        ((INDEX,), dict()),
        ((np.array([0, 11]), np.array([0])), dict()),
        ((INDEX, np.array([0, 2])), dict(mode="mean", per_sample_weights=np.ones(9))),
    ],
)
def test_embedding_bag_errors_where_torch_raises(args, kwargs):
    weight = _normal(10, 3)
    torch_kwargs = {
        k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()
    }
    with pytest.raises((ValueError, RuntimeError, IndexError, NotImplementedError)) as theirs:
        TF.embedding_bag(
            *map(torch.tensor, args[:1]),
            torch.tensor(weight),
            *map(torch.tensor, args[1:]),
            **torch_kwargs,
        )
    sg_kwargs = {k: sg.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    with pytest.raises(type(theirs.value)):
        F.embedding_bag(
            *map(sg.tensor, args[:1]), sg.tensor(weight), *map(sg.tensor, args[1:]), **sg_kwargs
        )


def test_jitted_embedding_bag_follows_each_batchs_offsets():
    weight = _normal(10, 3).astype(np.float32)

    def step(index, offsets):
        w = sg.tensor(weight, requires_grad=True)
        out = F.embedding_bag(index, w, offsets, mode="mean")
        (out * out).sum().backward()
        return out, w.grad

    jitted = sg.jit(step)
    for offsets in ([0, 2, 5], [0, 2, 5], [0, 0, 9], [0, 6, 7], [0, 1, 2]):
        batch = sg.tensor(INDEX), sg.tensor(offsets)
        for e, g in zip(step(*batch), jitted(*batch)):
            np.testing.assert_array_equal(g.detach().numpy(), e.detach().numpy())


# ---- transposed convolutions ----------------------------------------------------------------

# (stride, padding, output_padding, groups, dilation)
TRANSPOSED = [
    (1, 0, 0, 1, 1),
    (2, 1, 1, 1, 1),
    (2, 0, 1, 2, 1),
    (3, 1, 2, 1, 2),
    (1, 0, 1, 1, 2),  # output_padding past the cropping: zeros at the end
    (2, 2, 0, 2, 1),
    ((2, 3), (0, 1), (1, 2), 1, (1, 2)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("geometry", TRANSPOSED, ids=str)
def test_conv_transpose2d_matches_torch(geometry, dtype):
    rng = np.random.default_rng(0)
    groups = geometry[3]
    check_against_torch(
        lambda x, w, b: F.conv_transpose2d(x, w, b, *geometry),
        lambda x, w, b: TF.conv_transpose2d(x, w, b, *geometry),
        [
            rng.standard_normal((2, 4, 5, 6)),
            rng.standard_normal((4, 3, 3, 2)),
            rng.standard_normal(3 * groups),
        ],
        dtype,
    )


@pytest.mark.parametrize("geometry", [g for g in TRANSPOSED if isinstance(g[0], int)], ids=str)
def test_conv_transpose1d_matches_torch(geometry):
    rng = np.random.default_rng(1)
    groups = geometry[3]
    check_against_torch(
        lambda x, w, b: F.conv_transpose1d(x, w, b, *geometry),
        lambda x, w, b: TF.conv_transpose1d(x, w, b, *geometry),
        [
            rng.standard_normal((2, 4, 7)),
            rng.standard_normal((4, 3, 3)),
            rng.standard_normal(3 * groups),
        ],
    )


@pytest.mark.parametrize("batch", [2, 0], ids=["inputs_smaller_than_kernel", "empty_batch"])
def test_conv_transpose2d_small_and_empty_inputs_match_torch(batch):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal((batch, 4, 1, 2)), rng.standard_normal((4, 3, 3, 3))]
    check_against_torch(
        lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=1),
        lambda x, w: TF.conv_transpose2d(x, w, stride=2, output_padding=1),
        arrays,
    )


def test_conv_transpose_gradcheck():
    x, w, b = (
        sg.tensor(_normal(*s, seed=i), dtype=sg.float64, requires_grad=True)
        for i, s in enumerate([(1, 2, 3, 3), (2, 2, 2, 3), (2,)])
    )
    assert sg.autograd.gradcheck(lambda x, w, b: F.conv_transpose2d(x, w, b, 2, 1, 1), (x, w, b))
    x1, w1 = (sg.tensor(t.detach().numpy()[:, :, 0], requires_grad=True) for t in (x, w))
    assert sg.autograd.gradcheck(lambda x, w: F.conv_transpose1d(x, w, None, 2), (x1, w1))


CONV_TRANSPOSE_LAYERS = [
    (
        "2d",
        lambda nn: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1),
        (2, 4, 5, 5),
    ),
    (
        "2d_groups",
        lambda nn: nn.ConvTranspose2d(4, 6, (2, 3), groups=2, bias=False, dilation=2),
        (4, 3, 5),
    ),
    ("1d", lambda nn: nn.ConvTranspose1d(4, 6, 3, stride=2), (2, 4, 7)),
    ("1d_options", lambda nn: nn.ConvTranspose1d(4, 2, 4, 3, 1, 2, groups=2), (2, 4, 6)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "build, shape",
    [c[1:] for c in CONV_TRANSPOSE_LAYERS],
    ids=[c[0] for c in CONV_TRANSPOSE_LAYERS],
)
def test_conv_transpose_layers_match_torch(build, shape, dtype):
    ours, theirs = module_pair(build, dtype)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.weight.shape == tuple(theirs.weight.shape)
    check_against_torch(ours, theirs, [_normal(*shape)], dtype)


def test_conv_transpose_output_size_and_init_bounds():
    x = _normal(1, 4, 5, 5)
    ours, theirs = module_pair(lambda nn: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1))
    check_against_torch(
        lambda x: ours(x, output_size=(10, 9)), lambda x: theirs(x, output_size=(10, 9)), [x]
    )
    with pytest.raises(ValueError, match="valid sizes range from 9 to 10"):
        ours(sg.tensor(x), output_size=(12, 10))
    layer = nn.ConvTranspose2d(8, 32, 3, groups=2)  # fan_in = 32 // 2 * 9 = 144: bounds 1/12
    for p in (layer.weight, layer.bias):
        values = p.detach().numpy()
        assert values.min() >= -1 / 12 and values.max() <= 1 / 12 and values.std() > 1 / 48


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.nn.functional.conv_transpose2d(lib.ones(1, 3, 4, 4), lib.ones(4, 2, 3, 3)),
        lambda lib: lib.nn.functional.conv_transpose2d(
            lib.ones(1, 4, 4, 4), lib.ones(4, 2, 3, 3), stride=2, output_padding=2
        ),
        lambda lib: lib.nn.ConvTranspose2d(4, 2, 3, padding_mode="reflect"),
        lambda lib: lib.nn.functional.conv_transpose1d(lib.ones(1, 4, 4), lib.ones(4, 2, 3, 3)),
    ],
)
def test_conv_transpose_errors_where_torch_raises(call):
    with pytest.raises((RuntimeError, ValueError)) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value), match="conv_transpose|ConvTranspose"):
        call(sg)


@pytest.mark.parametrize(
    "dtype, bias_dtype, batch",
    [
        ("float32", "float64", (1,)),
        ("float32", "float64", ()),
        ("float32", "float16", (1,)),
        ("float32", "int64", (1,)),
        ("float64", "float32", (3,)),
    ],
)
@pytest.mark.parametrize("dims", [1, 2])
def test_conv_transpose_takes_a_bias_of_another_dtype_as_torch(dims, dtype, bias_dtype, batch):
    """PyTorch's conv_transpose1d/2d add such a bias in the wider dtype and round the sum to
    the input's (1 + (2**-24 + 2**-50) rounds up in float32; with the bias rounded first it
    would tie to 1); the bias's gradient keeps its own dtype. (Its oneDNN path, which it takes
    for most float32 batches of two or more, refuses such a bias; scratchgrad takes it.)"""
    results = []
    for m, functional in ((sg, F), (torch, TF)):
        conv = getattr(functional, f"conv_transpose{dims}d")
        x = m.ones(batch + (1,) + (2,) * dims, dtype=getattr(m, dtype), requires_grad=True)
        w = m.ones((1, 2) + (1,) * dims, dtype=getattr(m, dtype), requires_grad=True)
        value = 2**-24 + 2**-50 if bias_dtype == "float64" else 3
        b = m.full((2,), value, dtype=getattr(m, bias_dtype))
        b.requires_grad_(bias_dtype != "int64")
        out = conv(x, w, b)
        (out * m.arange(out.numel()).reshape(out.shape)).sum().backward()
        results.append((out, x.grad, w.grad, b.grad))
    for ours, theirs in zip(*results):
        if theirs is None:
            assert ours is None
            continue
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        assert ours.tolist() == theirs.tolist()


def test_conv_transpose_layer_with_a_bias_of_another_dtype_matches_torch():
    ours, theirs = module_pair(lambda nn: nn.ConvTranspose2d(2, 3, 3, stride=2), "float64")
    ours.bias.data, theirs.bias.data = ours.bias.data.float(), theirs.bias.data.float()
    check_against_torch(ours, theirs, [_normal(2, 2, 4, 4)], "float64")
    assert ours.bias.grad.dtype == sg.float32


@pytest.mark.parametrize(
    "call",
    [  # PyTorch's conv_transpose3d refuses a bias of another dtype, and all a weight of one
        lambda m: m.nn.functional.conv_transpose3d(
            m.ones(1, 2, 2, 2, 2), m.ones(2, 3, 1, 1, 1), m.ones(3, dtype=m.float64)
        ),
        lambda m: m.nn.functional.conv_transpose2d(
            m.ones(1, 2, 2, 2), m.ones(2, 3, 1, 1, dtype=m.float64), m.ones(3)
        ),
    ],
)
def test_conv_transpose_dtype_errors_as_torch(call):
    with pytest.raises(RuntimeError, match="Float but found Double"):
        call(torch)
    with pytest.raises(RuntimeError, match="must have the same dtype"):
        call(sg)


# ---- init.orthogonal_ and init.trunc_normal_ ------------------------------------------------


@pytest.mark.parametrize("shape", [(6, 6), (3, 8), (8, 3), (4, 2, 3, 3)], ids=str)
def test_orthogonal_is_orthogonal_as_torch(shape):
    sg.manual_seed(0)
    w = nn.init.orthogonal_(sg.empty(*shape, dtype=sg.float64), gain=2.0).numpy()
    theirs = torch.nn.init.orthogonal_(torch.empty(*shape, dtype=torch.float64), gain=2.0).numpy()
    for flat in (w.reshape(shape[0], -1), theirs.reshape(shape[0], -1)):
        small = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
        np.testing.assert_allclose(small, 4 * np.eye(len(small)), atol=1e-12)
    sg.manual_seed(0)
    again = nn.init.orthogonal_(sg.empty(*shape, dtype=sg.float64), gain=2.0).numpy()
    np.testing.assert_array_equal(again, w)  # drawn from the library's seeded generator


def test_orthogonal_is_uniformly_distributed_and_refuses_vectors():
    """Q's signs are fixed by R's diagonal, as PyTorch: each entry's mean is about 0."""
    sg.manual_seed(1)
    samples = np.stack(
        [nn.init.orthogonal_(sg.empty(3, 3, dtype=sg.float64)).numpy() for _ in range(2000)]
    )
    assert np.abs(samples.mean(0)).max() < 0.05
    for lib in (sg, torch):
        with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
            lib.nn.init.orthogonal_(lib.empty(3))


@pytest.mark.parametrize(
    "mean, std, a, b",
    [(0.0, 1.0, -2.0, 2.0), (1.0, 2.0, -1.0, 3.0), (0.0, 0.02, -0.04, 0.04), (0.5, 1.0, 0.0, 10.0)],
)
def test_trunc_normal_moments_match_torch(mean, std, a, b):
    sg.manual_seed(0)
    torch.manual_seed(0)
    ours = nn.init.trunc_normal_(sg.empty(200_000, dtype=sg.float64), mean, std, a, b).numpy()
    theirs = torch.nn.init.trunc_normal_(
        torch.empty(200_000, dtype=torch.float64), mean, std, a, b
    ).numpy()
    assert ours.min() >= a and ours.max() <= b
    assert abs(ours.mean() - theirs.mean()) < 0.02 * std
    assert abs(ours.std() - theirs.std()) < 0.02 * std
    assert abs(np.median(ours) - np.median(theirs)) < 0.03 * std


def test_trunc_normal_warns_as_torch_and_uses_the_seeded_generator():
    with pytest.warns(UserWarning, match="mean is more than 2 std"):
        nn.init.trunc_normal_(sg.empty(10), mean=10.0)
    generator = sg.Generator().manual_seed(3)
    first = nn.init.trunc_normal_(sg.empty(5), generator=generator).numpy().copy()
    generator.manual_seed(3)
    np.testing.assert_array_equal(
        nn.init.trunc_normal_(sg.empty(5), generator=generator).numpy(), first
    )


# ---- inside a jitted training step ----------------------------------------------------------


class _Scaled(nn.Module):
    """A ParameterList and a ParameterDict used in a forward."""

    def __init__(self):
        super().__init__()
        self.scales = nn.ParameterList([sg.ones(3), sg.full((3,), 0.5)])
        self.shifts = nn.ParameterDict({"a": sg.zeros(3)})

    def forward(self, x):
        return x * self.scales[0] * self.scales[1] + self.shifts["a"]


class _BilinearOfSquares(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Bilinear(3, 3, 2)

    def forward(self, x):
        return self.layer(x, x.square())


def _floats(*shape):
    """A maker of float32 batches of ``shape``."""
    return lambda rng: sg.tensor(rng.standard_normal(shape), dtype=sg.float32)


JITTED = [
    (
        "conv_transpose2d",
        lambda: nn.Sequential(nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1)),
        _floats(2, 3, 4, 4),
    ),
    ("conv_transpose1d", lambda: nn.ConvTranspose1d(3, 2, 3, stride=2, groups=1), _floats(2, 3, 5)),
    ("parameter_containers", lambda: _Scaled(), _floats(4, 3)),
    ("maxpool1d", lambda: nn.Sequential(nn.Conv1d(3, 4, 3), nn.MaxPool1d(2)), _floats(2, 3, 9)),
    (
        "avgpool1d",
        lambda: nn.Sequential(nn.Conv1d(3, 4, 3), nn.AvgPool1d(3, 2, 1)),
        _floats(2, 3, 9),
    ),
    (
        "adaptiveavg1d",
        lambda: nn.Sequential(nn.Conv1d(3, 4, 3), nn.AdaptiveAvgPool1d(4)),
        _floats(2, 3, 9),
    ),
    (
        "adaptivemax2d",
        lambda: nn.Sequential(nn.Conv2d(3, 4, 1), nn.AdaptiveMaxPool2d(3)),
        _floats(2, 3, 5, 7),
    ),
    (
        "upsample",
        lambda: nn.Sequential(nn.Conv2d(3, 4, 1), nn.Upsample(scale_factor=2, mode="bilinear")),
        _floats(2, 3, 3, 4),
    ),
    (
        "upsample_nearest",
        lambda: nn.Sequential(nn.Conv2d(3, 4, 1), nn.Upsample(size=(5, 5))),
        _floats(2, 3, 3, 4),
    ),
    (
        "pixel_shuffle",
        lambda: nn.Sequential(nn.Conv2d(3, 8, 1), nn.PixelShuffle(2)),
        _floats(2, 3, 3, 4),
    ),
    (
        "instancenorm2d",
        lambda: nn.Sequential(nn.Conv2d(3, 4, 1), nn.InstanceNorm2d(4, affine=True)),
        _floats(2, 3, 4, 4),
    ),
    (
        "instancenorm2d_running",
        lambda: nn.Sequential(nn.Conv2d(3, 4, 1), nn.InstanceNorm2d(4, track_running_stats=True)),
        _floats(2, 3, 4, 4),
    ),
    (
        "dropout2d",
        lambda: nn.Sequential(nn.Conv2d(3, 4, 1), nn.Dropout2d(0.4)),
        _floats(4, 3, 2, 2),
    ),
    ("bilinear", lambda: _BilinearOfSquares(), _floats(5, 3)),
    (
        "embedding_bag",
        lambda: nn.EmbeddingBag(10, 3, mode="max"),
        lambda rng: sg.tensor(rng.integers(0, 10, (4, 3))),
    ),
    (
        "embedding_bag_mean",
        lambda: nn.EmbeddingBag(10, 3),
        lambda rng: sg.tensor(rng.integers(0, 10, (4, 3))),
    ),
]


@pytest.mark.filterwarnings("ignore:scratchgrad.jit")
@pytest.mark.parametrize("build, make", [c[1:] for c in JITTED], ids=[c[0] for c in JITTED])
def test_layer_in_a_jitted_training_step_equals_eager(build, make):
    """Five SGD steps of ``build()`` with a squared loss, eager and jitted, from the same start:
    the same losses and parameters, bit for bit."""
    rng = np.random.default_rng(3)
    batches = [make(rng) for _ in range(5)]
    eager, eager_state = _train(build, batches, jit=False)
    jitted, jitted_state = _train(build, batches, jit=True)
    assert jitted == eager
    assert jitted_state.keys() == eager_state.keys()
    for key in eager_state:
        np.testing.assert_array_equal(jitted_state[key], eager_state[key], err_msg=key)


def _train(build, batches, jit: bool):
    """SGD steps of ``build()`` (seeded) on ``batches``: the losses and the final state."""
    sg.manual_seed(0)
    model = build()
    opt = sg.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        return loss

    run = sg.jit(step) if jit else step
    losses = [run(x).item() for x in batches]
    return losses, {k: v.numpy() for k, v in model.state_dict().items()}


def test_doc_examples():
    for module in (
        batchnorm,
        containers,
        conv_functional,
        dropout,
        embedding,
        linear,
        pooling,
        upsampling,
        F,
    ):
        assert doctest.testmod(module).failed == 0, module.__name__
