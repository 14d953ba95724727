"""F.interpolate's modes against PyTorch: bicubic, trilinear, area, nearest-exact, nearest on
5-D inputs and antialiased bilinear and bicubic, up and down, by size and by scale factor (odd
sizes, recomputed scales, a dim resized to its own size), with and without aligned corners; the
forward and the gradient (float64 tight, float32 loose), gradcheck and gradgradcheck, the
nn.Upsample layer, and PyTorch's errors word for word."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from oracle import assert_close, check_against_torch

import scratchgrad as sg
import scratchgrad.nn.functional as F
from scratchgrad import nn

RNG = np.random.default_rng(0)

# (mode, input rank, align_corners values to try)
MODES = [
    ("bicubic", 4, (False, True)),
    ("trilinear", 5, (False, True)),
    ("area", 3, (None,)),
    ("area", 4, (None,)),
    ("area", 5, (None,)),
    ("nearest", 4, (None,)),  # copies a dim of the same size, halves one of twice the size
    ("nearest", 5, (None,)),
    ("nearest-exact", 3, (None,)),
    ("nearest-exact", 4, (None,)),
    ("nearest-exact", 5, (None,)),
    ("linear", 3, (False, True)),  # the dim resized to its own size (below) is copied
    ("bilinear", 4, (False, True)),
]
# resizes of a spatial dim of 5 (the first) and 4 (the others): up, down, odd, mixed
RESIZES = [
    dict(scale_factor=2),
    dict(scale_factor=0.5),
    dict(scale_factor=1.7),
    dict(scale_factor=0.3, recompute_scale_factor=True),
    dict(scale_factor=2.5, recompute_scale_factor=True),
    dict(scale_factor=1.1),  # the dims keep their sizes, with a scale factor that is not 1
    dict(scale_factor=2.1),  # twice the sizes
    dict(size=7),
    dict(size=3),
    dict(size=1),
]


def _shape(rank):
    return (2, 3, 5, *(4,) * (rank - 3))


def _cases():
    for mode, rank, corners in MODES:
        for align_corners in corners:
            for resize in RESIZES:
                yield pytest.param(mode, rank, dict(resize, align_corners=align_corners))
        sizes = [(7, 2, 3)[: rank - 2], (2, 9, 1)[: rank - 2]]  # up in one dim, down in another
        for size in sizes:
            yield pytest.param(mode, rank, dict(size=size, align_corners=corners[-1]))


def _torch_gradient_is_off(mode, rank, options):
    """Whether PyTorch's backward is not its forward's derivative in a case of ``_cases`` (the
    doc string of ``interpolate`` says when): a scale factor moves the positions of dims that
    keep their size, or (nearest) that double it."""
    scale = options.get("scale_factor") if not options.get("recompute_scale_factor") else None
    nearest = mode == "nearest" and rank != 4 and scale in (1.1, 2.1)
    return nearest or (mode == "bicubic" and scale == 1.1 and not options["align_corners"])


@pytest.mark.parametrize("mode, rank, options", list(_cases()), ids=str)
def test_modes_match_torch_in_float64(mode, rank, options):
    """The forward and, but where PyTorch's gradient is off (see the next test), the gradient."""
    options = dict(options, mode=mode)
    off = _torch_gradient_is_off(mode, rank, options)
    out, _ = check_against_torch(
        lambda x: F.interpolate(x, **options),
        lambda x: TF.interpolate(x, **options),
        [RNG.standard_normal(_shape(rank))],
        grad=not off,
    )
    if off:
        x = sg.tensor(RNG.standard_normal((1, 1, *_shape(rank)[2:])), requires_grad=True)
        assert sg.autograd.gradcheck(lambda x: F.interpolate(x, **options), (x,))


@pytest.mark.parametrize(
    "shape, options",
    [
        ((1, 1, 5, 4), dict(scale_factor=(1.1, 1.0), mode="bicubic")),
        ((1, 1, 5), dict(scale_factor=2.1, mode="nearest")),
        ((1, 1, 5), dict(scale_factor=1.1, mode="nearest")),
        ((1, 1, 5, 4, 3), dict(scale_factor=(1.1, 1.5, 1.5), mode="nearest")),
    ],
    ids=str,
)
def test_gradient_is_the_derivative_where_torchs_is_not(shape, options):
    """The same forward as PyTorch, and a gradient that passes gradcheck, where PyTorch's
    backward copies (or halves) the gradient of a dim whose positions its forward moves."""
    x = RNG.standard_normal(shape)
    check_against_torch(
        lambda x: F.interpolate(x, **options),
        lambda x: TF.interpolate(x, **options),
        [x],
        grad=False,
    )
    ours = sg.tensor(x, requires_grad=True)
    assert sg.autograd.gradcheck(lambda x: F.interpolate(x, **options), (ours,))
    theirs = torch.tensor(x, requires_grad=True)
    resize = lambda x: TF.interpolate(x, **options)  # noqa: E731
    assert not torch.autograd.gradcheck(resize, (theirs,), raise_exception=False)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize(
    "mode, rank, align_corners",
    [("bicubic", 4, False), ("trilinear", 5, True), ("area", 4, None), ("nearest-exact", 4, None)],
)
def test_modes_match_torch_in_lower_precision(mode, rank, align_corners, dtype):
    options = dict(scale_factor=1.5, mode=mode, align_corners=align_corners)
    check_against_torch(
        lambda x: F.interpolate(x, **options),
        lambda x: TF.interpolate(x, **options),
        [RNG.standard_normal(_shape(rank))],
        dtype,
    )


def _positions_sweep():
    """1-d resizes of n entries to every size, and by many scales."""
    for n in (1, 2, 3, 5, 8, 13):
        for m in (1, 2, 3, 4, 7, 11, 20):
            yield n, dict(size=m)
        for scale in (0.3, 0.5, 2 / 3, 0.7, 1.1, 1.5, 2.0, 2.5, 3.3):
            if int(n * scale) > 0:
                yield n, dict(scale_factor=scale)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    "mode, align_corners",
    [
        ("bicubic", False),
        ("bicubic", True),
        ("nearest-exact", None),
        ("nearest", None),
        ("area", None),
    ],
)
def test_source_positions_match_torch_on_a_sweep(mode, align_corners, dtype):
    """Every size and scale of a sweep picks the entries and weights PyTorch picks: inputs of
    height 1, so that the columns carry the 1-d resize (nearest-exact rounds positions in
    float32 or float64 as PyTorch does: one off by a rounding would move a whole entry)."""
    for n, options in _positions_sweep():
        options = dict(options, mode=mode, align_corners=align_corners)
        if isinstance(options.get("size"), int):
            options["size"] = (1, options["size"])
        else:
            options["scale_factor"] = (1.0, options["scale_factor"])
        x = RNG.standard_normal((1, 2, 1, n))
        ours = F.interpolate(sg.tensor(x, dtype=getattr(sg, dtype)), **options)
        theirs = TF.interpolate(torch.tensor(x, dtype=getattr(torch, dtype)), **options)
        assert_close(ours, theirs, dtype, what=f"n={n}, {options}")


def test_torch_picks_other_nearest_entries_in_float32_than_in_float64():
    """What the next test relies on: PyTorch's positions depend on the dtype."""
    for mode, n, m in (("nearest", 14, 46), ("nearest-exact", 4, 41)):
        x = torch.arange(n, dtype=torch.float64).reshape(1, 1, n)
        resize = lambda x: TF.interpolate(x, size=m, mode=mode)  # noqa: E731, B023
        assert not torch.equal(resize(x).float(), resize(x.float()))


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_nearest_positions_round_as_torch_per_dtype(dtype):
    """Nearest takes floor(i * n / m) in float64 for float64 inputs and in float32 otherwise:
    12 of these resizes pick another entry in PyTorch's float32 arithmetic than in its float64
    (nearest 14 -> 46, nearest-exact 4 -> 41 among them)."""
    for n in range(1, 25):
        x = np.arange(n, dtype=np.float64).reshape(1, 1, n)
        for m in range(1, 50):
            for mode in ("nearest", "nearest-exact"):
                ours = F.interpolate(sg.tensor(x, dtype=getattr(sg, dtype)), size=m, mode=mode)
                theirs = TF.interpolate(
                    torch.tensor(x, dtype=getattr(torch, dtype)), size=m, mode=mode
                )
                np.testing.assert_array_equal(
                    ours.float().numpy(), theirs.float().numpy(), err_msg=f"{mode} {n} -> {m}"
                )


@pytest.mark.parametrize(
    "options",
    [
        dict(size=(2, 3)),
        dict(size=(9, 11)),
        dict(size=(3, 7), align_corners=True),
        dict(scale_factor=(0.4, 0.6)),
        dict(scale_factor=0.45, recompute_scale_factor=True),
        dict(scale_factor=(1.0, 0.5)),  # a dim that keeps its size is copied
        dict(size=(1, 3), align_corners=True),
    ],
    ids=str,
)
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_matches_torch(mode, options):
    options = dict(options, mode=mode, antialias=True)
    check_against_torch(
        lambda x: F.interpolate(x, **options),
        lambda x: TF.interpolate(x, **options),
        [RNG.standard_normal((2, 2, 7, 6))],
    )


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_to_width_1_resizes_each_dim_as_torch_on_the_transpose(mode):
    """PyTorch 2.13's CPU kernel repeats the first output row when the output width is 1 (our
    doc string says more); we give what it gives on the transposed image, where it is right."""
    x = RNG.standard_normal((1, 2, 5, 4))
    options = dict(mode=mode, antialias=True)
    ours = F.interpolate(sg.tensor(x), size=(3, 1), **options)
    theirs = TF.interpolate(torch.tensor(x).mT, size=(1, 3), **options).mT
    assert_close(ours, theirs)
    repeated = TF.interpolate(torch.tensor(x), size=(3, 1), **options)
    assert torch.equal(repeated[:, :, 0], repeated[:, :, 2])  # the PyTorch behaviour we avoid


@pytest.mark.parametrize(
    "mode, shape, options",
    [
        ("bicubic", (1, 2, 3, 4), dict(size=(5, 2))),
        ("bicubic", (1, 2, 3, 4), dict(size=(5, 2), align_corners=True)),
        ("trilinear", (1, 1, 2, 3, 2), dict(size=(3, 2, 4))),
        ("trilinear", (1, 1, 2, 3, 2), dict(scale_factor=1.5, align_corners=True)),
        ("area", (1, 2, 5, 4), dict(size=(3, 3))),
        ("area", (1, 1, 3, 4, 5), dict(size=(2, 3, 2))),
        ("nearest-exact", (1, 2, 3, 4), dict(size=(5, 3))),
        ("nearest", (1, 1, 2, 3, 2), dict(scale_factor=2)),
        ("bilinear", (1, 2, 5, 4), dict(size=(2, 3), antialias=True)),
        ("bicubic", (1, 2, 5, 4), dict(size=(3, 2), antialias=True)),
    ],
    ids=str,
)
def test_gradcheck_and_gradgradcheck(mode, shape, options):
    x = sg.tensor(RNG.standard_normal(shape), dtype=sg.float64, requires_grad=True)
    assert sg.autograd.gradcheck(lambda x: F.interpolate(x, mode=mode, **options), (x,))
    assert sg.autograd.gradgradcheck(lambda x: F.interpolate(x, mode=mode, **options), (x,))


INF = float("inf")


@pytest.mark.parametrize(
    ("x", "options"),
    [
        ([[[0.0, INF, 0.0, 1.0]]], dict(size=8, mode="linear")),
        ([[[0.0, INF, 0.0, 1.0]]], dict(size=4, mode="linear")),  # copied: read twice
        ([[[INF]]], dict(size=1, mode="linear")),
        ([[[[INF, 1.0]]]], dict(size=(1, 3), mode="bilinear")),
        ([[[[INF, 1.0]]]], dict(size=(1, 3), mode="bicubic")),
        ([[[[INF, 1.0, 2.0, 3.0]]]], dict(size=(1, 3), mode="bilinear", antialias=True)),
        ([[[[0.0, INF, -INF, 3.0]]]], dict(size=(1, 6), mode="bicubic", antialias=True)),
        ([[[[[INF, 1.0]]]]], dict(size=(1, 1, 3), mode="trilinear")),
    ],
    ids=str,
)
def test_infinities_stay_in_the_outputs_that_read_them_as_torch(x, options):
    """An infinity reaches the outputs whose taps read it, NaN where its weight is 0 (the
    product with the weight matrix made every output of its row NaN)."""
    check_against_torch(
        lambda x: F.interpolate(x, **options), lambda x: TF.interpolate(x, **options), [x]
    )


@pytest.mark.parametrize(
    ("shape", "options"),
    [
        ((1, 1, 4), dict(size=7, mode="linear")),
        ((1, 1, 1, 4), dict(size=(1, 4), mode="bilinear")),
        ((1, 1, 1, 4), dict(size=(1, 6), mode="bilinear")),
        ((1, 1, 2, 4), dict(size=(3, 7), mode="bicubic", align_corners=True)),
        ((1, 1, 4, 6), dict(size=(2, 3), mode="bicubic", antialias=True)),
    ],
    ids=str,
)
def test_an_infinite_gradient_reaches_the_entries_read_as_torch(shape, options):
    """The gradient is the transposed sum over the taps where the incoming one is not finite
    (the transposed product spread its infinities by count, whatever their weights' signs)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    upstream = rng.standard_normal(tuple(TF.interpolate(torch.tensor(x), **options).shape))
    upstream[..., 1], upstream[..., -1] = INF, -INF
    grads = []
    for m, functional in ((sg, F), (torch, TF)):
        leaf = m.tensor(x, requires_grad=True)
        functional.interpolate(leaf, **options).backward(m.tensor(upstream))
        grads.append(leaf.grad)
    assert_close(*grads)


def test_an_empty_batch_resizes_as_torch():
    for mode, rank in [("bicubic", 4), ("trilinear", 5), ("area", 5), ("nearest-exact", 3)]:
        shape = (0, 2, *(3,) * (rank - 2))
        ours = F.interpolate(sg.zeros(shape), scale_factor=2, mode=mode)
        assert ours.shape == tuple(
            TF.interpolate(torch.zeros(shape), scale_factor=2, mode=mode).shape
        )


def test_numpy_scale_factors_are_accepted_as_torch():
    x = RNG.standard_normal((1, 2, 3, 4))
    options = dict(scale_factor=(np.float32(1.5), np.float64(0.5)), mode="bicubic")
    check_against_torch(
        lambda x: F.interpolate(x, **options), lambda x: TF.interpolate(x, **options), [x]
    )


def test_uint8_images_resize_by_nearest_as_torch():
    x = RNG.integers(0, 256, (1, 3, 4, 5)).astype(np.uint8)
    for mode in ("nearest", "nearest-exact"):
        ours = F.interpolate(sg.tensor(x), size=(7, 3), mode=mode)
        theirs = TF.interpolate(torch.tensor(x), size=(7, 3), mode=mode)
        assert ours.dtype == sg.uint8
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize(
    "build, shape",
    [
        (lambda nn: nn.Upsample(scale_factor=2, mode="bicubic"), (2, 3, 4, 5)),
        (lambda nn: nn.Upsample(size=(3, 7), mode="bicubic", align_corners=True), (2, 3, 4, 5)),
        (lambda nn: nn.Upsample(scale_factor=(2, 1.5, 0.5), mode="trilinear"), (1, 2, 3, 4, 5)),
        (lambda nn: nn.Upsample(size=3, mode="area"), (2, 3, 5, 7)),
        (lambda nn: nn.Upsample(scale_factor=1.5, mode="nearest-exact"), (2, 3, 4)),
        (lambda nn: nn.Upsample(scale_factor=2), (1, 2, 2, 3, 2)),
        (
            lambda nn: nn.Upsample(scale_factor=0.5, mode="area", recompute_scale_factor=True),
            (1, 2, 6),
        ),
    ],
    ids=lambda v: v if isinstance(v, tuple) else "",
)
def test_upsample_layer_matches_torch(build, shape):
    ours, theirs = build(nn), build(torch.nn)
    assert repr(ours) == repr(theirs)
    check_against_torch(ours, theirs, [RNG.standard_normal(shape)])


ERRORS = [
    # (input shape, dtype, keywords): PyTorch raises; we raise the same type and message
    ((1, 1, 2, 2), "float32", dict(size=3, mode="area", align_corners=False)),
    ((1, 1, 2, 2), "float32", dict(size=3, mode="nearest-exact", align_corners=True)),
    ((1, 1, 2, 2), "float32", dict(size=3, mode="bicubic", recompute_scale_factor=True)),
    ((1, 1, 2, 2), "float32", dict(size=(3, 2.0), mode="bicubic")),
    ((1, 1, 2, 2), "float32", dict(size=(3, 3, 3), mode="bicubic")),
    ((1, 1, 2, 2), "float32", dict(scale_factor=(2, 2, 2), mode="bicubic")),
    ((1, 1, 2, 2), "float32", dict(mode="bicubic")),
    ((1, 1, 2, 2), "float32", dict(size=2, scale_factor=2, mode="area")),
    ((1, 1, 2, 2, 2), "float32", dict(size=3, mode="bicubic")),
    ((1, 1, 2), "float32", dict(size=3, mode="bicubic")),
    ((1, 1, 2), "float32", dict(size=3, mode="trilinear")),
    ((1, 1, 2, 2), "float32", dict(size=3, mode="trilinear")),
    ((1, 1, 2, 2, 2), "float32", dict(size=3, mode="bilinear")),
    ((1, 1, 2, 2, 2, 2), "float32", dict(size=3, mode="area")),
    ((1, 1, 2, 2), "float32", dict(size=3, mode="cubic")),
    ((1, 1, 2), "float32", dict(size=3, mode="linear", antialias=True)),
    ((1, 1, 2, 2), "float32", dict(size=3, mode="area", antialias=True)),
    ((1, 1, 2, 2, 2), "float32", dict(size=3, mode="trilinear", antialias=True)),
    ((1, 1, 2, 2), "float32", dict(size=3, mode="lanczos")),
    ((1, 1, 2, 2), "float32", dict(size=3, mode="lanczos", align_corners=True)),
    ((1, 1, 2), "float32", dict(scale_factor=0.3)),
    ((1, 1, 2), "float32", dict(scale_factor=-0.3, mode="linear")),
    ((1, 1, 2, 2), "float32", dict(scale_factor=0.3, mode="bicubic")),
    ((1, 1, 2, 2), "float32", dict(size=(0, 3), mode="nearest-exact")),
    ((1, 1, 2, 2, 2), "float32", dict(scale_factor=0.3, mode="trilinear")),
    ((1, 1, 0, 2), "float32", dict(scale_factor=2, mode="bicubic")),
    ((1, 0, 2, 2), "float32", dict(scale_factor=2, mode="bicubic")),
    ((1, 0, 3), "float32", dict(scale_factor=2, mode="nearest-exact")),
    ((0, 0, 2, 2, 2), "float32", dict(scale_factor=2, mode="trilinear")),
    ((1, 1, 2), "float32", dict(scale_factor=-1, mode="area")),
    ((1, 1, 2, 2), "float32", dict(size=(2, -1), mode="area")),
    ((1, 1, 2, 2, 2), "float32", dict(size=(1, -1, 2), mode="area")),
    ((1, 1, 0), "float32", dict(scale_factor=2, mode="area")),
    ((1, 1, 0, 2), "float32", dict(scale_factor=2, mode="area")),
    ((1, 1, 2, 0, 2), "float32", dict(scale_factor=2, mode="area")),
    ((1, 0, 2, 2, 2), "float32", dict(scale_factor=2, mode="area")),
    ((1, 1, 2, 2), "float32", dict(scale_factor=float("inf"), mode="bicubic")),
]


@pytest.mark.parametrize("shape, dtype, options", ERRORS, ids=str)
def test_errors_match_torch_word_for_word(shape, dtype, options):
    with pytest.raises(Exception) as theirs:
        TF.interpolate(torch.ones(shape, dtype=getattr(torch, dtype)), **options)
    with pytest.raises(type(theirs.value)) as ours:
        F.interpolate(sg.ones(shape, dtype=getattr(sg, dtype)), **options)
    if not isinstance(theirs.value, TypeError) or "expected size" in str(theirs.value):
        assert str(ours.value) == str(theirs.value)  # not PyTorch's argument parser's words


@pytest.mark.parametrize(
    "shape, dtype, options, message",
    [
        ((1, 1, 2, 2), "int64", dict(size=3, mode="bicubic"), "'bicubic'.*int64"),
        ((1, 1, 2), "int64", dict(size=3, mode="nearest"), "'nearest'.*int64"),
        ((1, 1, 2, 2, 2), "int64", dict(size=3, mode="area"), "'area'.*int64"),
        ((1, 1, 2, 2), "bool", dict(size=3, mode="nearest-exact"), "'nearest-exact'.*bool"),
        ((1, 1, 2, 2), "float16", dict(size=3, mode="bilinear", antialias=True), "float16"),
        ((1, 1, 2, 2), "bfloat16", dict(size=3, mode="bicubic", antialias=True), "bfloat16"),
    ],
    ids=str,
)
def test_dtypes_torch_refuses_are_refused(shape, dtype, options, message):
    with pytest.raises(NotImplementedError):
        TF.interpolate(torch.ones(shape, dtype=getattr(torch, dtype)), **options)
    with pytest.raises(NotImplementedError, match=f"interpolate.*{message}"):
        F.interpolate(sg.ones(shape, dtype=getattr(sg, dtype)), **options)


def test_what_is_not_built_says_so():
    """Lanczos (antialiased) and uint8 bilinear/bicubic, which PyTorch computes with rounded
    fixed-point weights, raise naming what is missing."""
    with pytest.raises(NotImplementedError, match="lanczos.*not supported"):
        F.interpolate(sg.ones(1, 1, 4, 4), size=2, mode="lanczos", antialias=True)
    image = sg.ones(1, 1, 4, 4, dtype=sg.uint8)
    with pytest.raises(NotImplementedError, match="'bilinear'.*uint8.*fixed-point"):
        F.interpolate(image, size=2, mode="bilinear")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize(
    "shape, options",
    [
        ((2, 3, 5, 6), {"scale_factor": 2, "mode": "bilinear"}),
        ((2, 3, 5, 6), {"scale_factor": 2, "mode": "bicubic"}),
        ((1, 2, 3, 4, 5), {"scale_factor": 2, "mode": "trilinear"}),
        ((2, 3, 5, 6), {"size": (7, 13), "mode": "nearest"}),  # the gradient sums the copies
        ((1, 2, 3, 4, 5), {"scale_factor": 2, "mode": "nearest-exact"}),
    ],
)
def test_sixteen_bit_images_resample_in_float32_and_round_once(dtype, shape, options):
    # as PyTorch's kernels: with its weights rounded to 16 bits and one rounding per dim, a
    # fifth to a third of the values (and of the gradients) were an ulp or more off
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    results = []
    for lib in (torch, sg):
        t = lib.tensor(x).to(getattr(lib, dtype)).requires_grad_()
        out = lib.nn.functional.interpolate(t, **options)
        grad = np.cos(np.arange(out.numel())).astype(np.float32).reshape(tuple(out.shape))
        out.backward(lib.tensor(grad).to(getattr(lib, dtype)))
        results.append([out.detach().float().numpy(), t.grad.float().numpy()])
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_array_equal(ours, theirs)
