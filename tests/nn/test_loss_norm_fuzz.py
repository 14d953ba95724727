"""Random losses, activations and normalization layers against PyTorch, with gradients: an op
drawn with a random combination of its options (functional or module form, reduction, weights,
ignored classes, label smoothing, betas, thresholds, dims, training or eval, running
statistics...), float64 inputs that require grad with values at the op's kinks, infinities and
NaN now and then, then ``(y * w).sum()`` backward. Both libraries must raise or not (the same
error class) and agree on each output's shape, dtype and values, on the gradients of the
inputs, weights and targets (where PyTorch gives one), and on a module's parameter gradients
and buffers (running statistics) after the call. Set ``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more
examples."""

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import fuzz_settings, outcome, raised_alike

import scratchgrad as sg

FUZZ = fuzz_settings(60)
RTOL, ATOL = 1e-7, 1e-9


@dataclass
class Case:
    """An op on named arrays: floating ones become float64 leaves that require grad (unless
    listed in ``no_grad``), integer ones stay as they are. ``call(lib, t, keep)`` runs it in
    ``lib`` (scratchgrad or torch) on the dict ``t`` of tensors, storing a module it builds in
    ``keep["module"]`` so that its parameters and buffers are compared too."""

    what: str
    arrays: dict
    call: Callable
    no_grad: tuple = ()
    tolerance: tuple = (RTOL, ATOL)  # of the float64 results
    # whether the input's gradient is compared at its NaN entries: PyTorch's activations give
    # one there by where the entry falls in their kernel (NaN or 0 in a vectorized row of 8,
    # the other formula's value in the rest)
    grad_at_nan: bool = True


# ---- values -----------------------------------------------------------------------------------


@st.composite
def entries(draw, shape: tuple, special=(), low=-4.0, high=4.0, tiny=True) -> np.ndarray:
    """float64 entries of ``shape``: continuous in [low, high], or mixed with ``special``.
    ``tiny=False``: none below 1e-3 in magnitude but 0 (where a norm's variance of such
    entries is rounding, the two libraries' different roundings differ by a factor)."""
    size = math.prod(shape)
    values = st.floats(low, high, allow_nan=False)
    if not tiny:
        values = values.map(lambda v: v if abs(v) > 1e-3 else 0.0)
    if special and draw(st.booleans()):
        values = st.one_of(values, st.sampled_from(list(special)))
    return np.array(draw(st.lists(values, min_size=size, max_size=size)), float).reshape(shape)


def positive(shape):
    return entries(shape, (), 0.1, 3.0)


UNIT = (0.0, 1.0, 0.5)
REDUCTION = st.sampled_from(["none", "mean", "sum"])
INFINITE = (math.inf, -math.inf, math.nan)


def functional_or_module(draw, f_name: str, m_name: str, kwargs: dict):
    """``call(lib, *tensors)`` of the functional form or of a module built with ``kwargs`` (whose
    tensors are given by name from ``t``), and its name."""
    form = draw(st.sampled_from(["functional", "module"]))
    shown = ", ".join(f"{k}={v}" for k, v in kwargs.items())

    def call(lib, t, keep, *names):
        kw = {
            k: t[v[1:]] if isinstance(v, str) and v.startswith("@") else v
            for k, v in kwargs.items()
        }
        args = [t[name] for name in names]
        if form == "functional":
            return getattr(lib.nn.functional, f_name)(*args, **kw)
        keep["module"] = getattr(lib.nn, m_name)(**kw)
        return keep["module"](*args)

    name = f_name if form == "functional" else m_name
    return call, f"{name}({shown})"


# ---- losses -----------------------------------------------------------------------------------


@st.composite
def class_targets(draw, n_classes: int, shape: tuple, ignore_index: int) -> np.ndarray:
    size = math.prod(shape)
    values = st.integers(0, n_classes - 1)
    if draw(st.booleans()):
        values = st.one_of(values, st.just(ignore_index))
    if draw(st.integers(0, 6)) == 0:  # every target ignored
        values = st.just(ignore_index)
    return np.array(draw(st.lists(values, min_size=size, max_size=size)), np.int64).reshape(shape)


@st.composite
def classification(draw, name: str):
    """cross_entropy or nll_loss: input (C,), (N, C) or (N, C, d1[, d2]), class indices or
    (cross_entropy) probabilities, weight, ignore_index, label_smoothing, reduction."""
    n_classes = draw(st.integers(1, 4))
    batch = draw(st.sampled_from([(), (2,), (3,), (2, 2), (1, 3, 2), (0,)]))
    shape = (n_classes,) if batch == () else (batch[0], n_classes, *batch[1:])
    target_shape = batch[:1] + batch[1:]
    kwargs = {"reduction": draw(REDUCTION)}
    arrays = {"x": draw(entries(shape, (0.0, 30.0, -30.0) + INFINITE[:1]))}
    ignore_index = draw(st.sampled_from([-100, 0, 1]))
    probabilities = name == "cross_entropy" and draw(st.integers(0, 3)) == 0
    if probabilities:
        p = draw(entries(shape, (0.0, 1.0), 0.0, 1.0))
        arrays["target"] = p
    else:
        arrays["target"] = draw(class_targets(n_classes, target_shape, ignore_index))
        if ignore_index != -100 or draw(st.booleans()):
            kwargs["ignore_index"] = ignore_index
    if draw(st.booleans()):
        arrays["weight"] = draw(positive((n_classes,)))
        kwargs["weight"] = "@weight"
    if name == "cross_entropy" and draw(st.booleans()):
        kwargs["label_smoothing"] = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    m_name = "CrossEntropyLoss" if name == "cross_entropy" else "NLLLoss"
    call, what = functional_or_module(draw, name, m_name, kwargs)
    return Case(
        what, arrays, lambda lib, t, keep: call(lib, t, keep, "x", "target"), no_grad=("weight",)
    )


@st.composite
def pair_shapes(draw):
    """An input shape and a target shape that broadcasts to it (or, now and then, not)."""
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    target = shape
    if shape and draw(st.integers(0, 4)) == 0:
        target = tuple(1 if draw(st.booleans()) else s for s in shape)
    return shape, target


@st.composite
def binary_cross_entropy(draw):
    shape, _ = draw(pair_shapes())
    kwargs = {"reduction": draw(REDUCTION)}
    arrays = {
        "x": draw(entries(shape, UNIT, 0.0, 1.0)),
        "target": draw(entries(shape, UNIT, 0.0, 1.0)),
    }
    if draw(st.booleans()):
        arrays["weight"] = draw(positive(shape[draw(st.integers(0, len(shape))) :]))
        kwargs["weight"] = "@weight"
    call, what = functional_or_module(draw, "binary_cross_entropy", "BCELoss", kwargs)
    return Case(
        what, arrays, lambda lib, t, keep: call(lib, t, keep, "x", "target"), no_grad=("weight",)
    )


@st.composite
def bce_with_logits(draw):
    shape, _ = draw(pair_shapes())
    kwargs = {"reduction": draw(REDUCTION)}
    arrays = {
        "x": draw(entries(shape, (0.0, 50.0, -50.0, 800.0, -800.0) + INFINITE)),
        "target": draw(entries(shape, UNIT, 0.0, 1.0)),
    }
    if draw(st.booleans()):
        arrays["weight"] = draw(positive(shape[draw(st.integers(0, len(shape))) :]))
        kwargs["weight"] = "@weight"
    if draw(st.booleans()):
        arrays["pos_weight"] = draw(positive(shape[draw(st.integers(0, len(shape))) :]))
        kwargs["pos_weight"] = "@pos_weight"
    call, what = functional_or_module(
        draw, "binary_cross_entropy_with_logits", "BCEWithLogitsLoss", kwargs
    )
    return Case(what, arrays, lambda lib, t, keep: call(lib, t, keep, "x", "target"))


@st.composite
def regression(draw):
    """mse, l1, smooth_l1 (beta), huber (delta), soft_margin on broadcastable pairs."""
    f_name, m_name, extra = draw(
        st.sampled_from(
            [
                ("mse_loss", "MSELoss", None),
                ("l1_loss", "L1Loss", None),
                ("smooth_l1_loss", "SmoothL1Loss", "beta"),
                ("huber_loss", "HuberLoss", "delta"),
                ("soft_margin_loss", "SoftMarginLoss", None),
            ]
        )
    )
    shape, target_shape = draw(pair_shapes())
    kwargs = {"reduction": draw(REDUCTION)}
    if extra:
        kwargs[extra] = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0]))
    if f_name == "soft_margin_loss":
        target_shape = shape
    special = (0.0, 0.5, 1.0, -1.0, 2.0) + INFINITE
    arrays = {"x": draw(entries(shape, special)), "target": draw(entries(target_shape, special))}
    call, what = functional_or_module(draw, f_name, m_name, kwargs)
    return Case(what, arrays, lambda lib, t, keep: call(lib, t, keep, "x", "target"))


@st.composite
def kl_div(draw):
    shape, target_shape = draw(pair_shapes())
    log_target = draw(st.booleans())
    kwargs = {
        "reduction": draw(st.sampled_from(["none", "mean", "sum", "batchmean"])),
        "log_target": log_target,
    }
    x = draw(entries(shape, (0.0, -math.inf), -4.0, 0.0))
    # a target entry of 0 is left out: README, "What is different" (its gradient is -input,
    # PyTorch's NaN)
    target = draw(
        entries(target_shape, (-math.inf,), -4.0, 0.0)
        if log_target
        else entries(target_shape, (1.0,), 0.05, 1.0)
    )
    call, what = functional_or_module(draw, "kl_div", "KLDivLoss", kwargs)
    return Case(
        what, {"x": x, "target": target}, lambda lib, t, keep: call(lib, t, keep, "x", "target")
    )


@st.composite
def poisson_nll(draw):
    shape, target_shape = draw(pair_shapes())
    log_input = draw(st.booleans())
    kwargs = {"log_input": log_input, "full": draw(st.booleans()), "reduction": draw(REDUCTION)}
    if draw(st.booleans()):
        kwargs["eps"] = draw(st.sampled_from([1e-8, 0.5]))
    x = draw(entries(shape, (0.0,), -3.0, 3.0) if log_input else entries(shape, (0.0,), 0.0, 4))
    # a target of 0 is left out with full=True: README, "What is different" (its gradient is
    # finite, PyTorch's NaN)
    low = 1e-3 if kwargs["full"] else 0.0
    target = draw(entries(target_shape, (1.0, 2.0) if kwargs["full"] else (0.0, 1.0), low, 5.0))
    call, what = functional_or_module(draw, "poisson_nll_loss", "PoissonNLLLoss", kwargs)
    return Case(
        what, {"x": x, "target": target}, lambda lib, t, keep: call(lib, t, keep, "x", "target")
    )


@st.composite
def gaussian_nll(draw):
    batch = draw(st.sampled_from([(), (2,), (3,), (0,)]))
    d = draw(st.integers(1, 3))
    shape = (*batch, d)
    var_shape = draw(st.sampled_from([shape, (*batch, 1), batch, (d,), (*batch, 2)]))
    kwargs = {"full": draw(st.booleans()), "reduction": draw(REDUCTION)}
    if draw(st.booleans()):
        kwargs["eps"] = draw(st.sampled_from([1e-6, 0.5]))
    arrays = {
        "x": draw(entries(shape)),
        "target": draw(entries(shape)),
        "var": draw(entries(var_shape, (0.0, 1e-8), 0.0, 3.0)),
    }
    call, what = functional_or_module(draw, "gaussian_nll_loss", "GaussianNLLLoss", kwargs)
    return Case(
        what + f" var{var_shape}",
        arrays,
        lambda lib, t, keep: call(lib, t, keep, "x", "target", "var"),
    )


def signs(shape):
    return st.lists(
        st.sampled_from([-1.0, 1.0]), min_size=math.prod(shape), max_size=math.prod(shape)
    ).map(lambda v: np.array(v).reshape(shape))


@st.composite
def margins(draw):
    """hinge_embedding, margin_ranking, cosine_embedding, multilabel_soft_margin, multi_margin,
    triplet_margin."""
    name = draw(st.sampled_from(["hinge", "ranking", "cosine", "multilabel", "multi", "triplet"]))
    reduction = draw(REDUCTION)
    kinks = (0.0, 1.0, -1.0, 0.5)
    if name == "hinge":
        shape, _ = draw(pair_shapes())
        kwargs = {"margin": draw(st.sampled_from([0.0, 1.0, 2.0])), "reduction": reduction}
        arrays = {"x": draw(entries(shape, kinks)), "target": draw(signs(shape))}
        names, f, m = ("x", "target"), "hinge_embedding_loss", "HingeEmbeddingLoss"
    elif name == "ranking":
        shape = (draw(st.integers(0, 4)),)
        kwargs = {"margin": draw(st.sampled_from([0.0, 0.5])), "reduction": reduction}
        arrays = {
            "x1": draw(entries(shape, kinks)),
            "x2": draw(entries(shape, kinks)),
            "target": draw(signs(shape)),
        }
        names, f, m = ("x1", "x2", "target"), "margin_ranking_loss", "MarginRankingLoss"
    elif name == "cosine":
        batch = draw(st.sampled_from([(), (1,), (3,)]))
        d = draw(st.integers(1, 3))
        kwargs = {"margin": draw(st.sampled_from([0.0, 0.5, -0.5])), "reduction": reduction}
        arrays = {
            "x1": draw(entries((*batch, d), (0.0, 1.0))),
            "x2": draw(entries((*batch, d), (0.0, 1.0))),
            "target": draw(signs(batch)),
        }
        names, f, m = ("x1", "x2", "target"), "cosine_embedding_loss", "CosineEmbeddingLoss"
    elif name == "multilabel":
        shape = (draw(st.integers(0, 3)), draw(st.integers(1, 4)))
        kwargs = {"reduction": reduction}
        arrays = {"x": draw(entries(shape, kinks)), "target": draw(entries(shape, UNIT, 0, 1))}
        if draw(st.booleans()):
            arrays["weight"] = draw(positive(shape[1:]))
            kwargs["weight"] = "@weight"
        names, f, m = ("x", "target"), "multilabel_soft_margin_loss", "MultiLabelSoftMarginLoss"
    elif name == "multi":
        c = draw(st.integers(1, 4))
        batch = draw(st.sampled_from([(), (1,), (3,)]))
        kwargs = {
            "p": draw(st.sampled_from([1, 2])),
            "margin": draw(st.sampled_from([0.0, 1.0, 1.5])),
            "reduction": reduction,
        }
        arrays = {
            "x": draw(entries((*batch, c), kinks)),
            "target": np.array(
                draw(
                    st.lists(
                        st.integers(0, c - 1), min_size=math.prod(batch), max_size=math.prod(batch)
                    )
                ),
                np.int64,
            ).reshape(batch),
        }
        if draw(st.booleans()):
            arrays["weight"] = draw(positive((c,)))
            kwargs["weight"] = "@weight"
        names, f, m = ("x", "target"), "multi_margin_loss", "MultiMarginLoss"
    else:
        batch = draw(st.sampled_from([(), (1,), (3,)]))
        d = draw(st.integers(1, 3))
        kwargs = {
            "margin": draw(st.sampled_from([0.0, 1.0])),
            "p": draw(st.sampled_from([1.0, 2.0, 3.0])),
            "swap": draw(st.booleans()),
            "reduction": reduction,
        }
        if draw(st.booleans()):
            kwargs["eps"] = draw(st.sampled_from([0.0, 1e-6, 0.5]))
        arrays = {k: draw(entries((*batch, d), (0.0, 1.0))) for k in ("a", "p", "n")}
        names, f, m = ("a", "p", "n"), "triplet_margin_loss", "TripletMarginLoss"
    call, what = functional_or_module(draw, f, m, kwargs)
    return Case(what, arrays, lambda lib, t, keep: call(lib, t, keep, *names), no_grad=("weight",))


LOSSES = st.one_of(
    classification("cross_entropy"),
    classification("nll_loss"),
    binary_cross_entropy(),
    bce_with_logits(),
    regression(),
    kl_div(),
    poisson_nll(),
    gaussian_nll(),
    margins(),
)


# ---- activations ------------------------------------------------------------------------------

KINKS = (0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 0.5, -0.5, 20.0, 40.0, *INFINITE)


@st.composite
def activation_input(draw, special=()):
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    return draw(entries(shape, KINKS + tuple(special)))


@st.composite
def activations(draw):
    """An activation drawn with its arguments, functional or module form."""
    number = st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0, 3.0])
    table = {
        "elu": ("ELU", {"alpha": number}),
        "celu": ("CELU", {"alpha": st.sampled_from([0.5, 1.0, 2.0])}),
        "selu": ("SELU", {}),
        "softplus": (
            "Softplus",
            {
                "beta": st.sampled_from([1.0, 0.5, 2.0, -1.0]),
                "threshold": st.sampled_from([20.0, 1.0, 0.0]),
            },
        ),
        "gelu": ("GELU", {"approximate": st.sampled_from(["none", "tanh"])}),
        "silu": ("SiLU", {}),
        "mish": ("Mish", {}),
        "hardtanh": (
            "Hardtanh",
            {
                "min_val": st.sampled_from([-1.0, -2.0, 0.0, 1.0]),
                "max_val": st.sampled_from([1.0, 0.5, 3.0]),
            },
        ),
        "relu6": ("ReLU6", {}),
        "leaky_relu": ("LeakyReLU", {"negative_slope": st.sampled_from([0.01, 0.0, -0.5, 2.0])}),
        "rrelu": (
            "RReLU",
            {"lower": st.sampled_from([0.1, 0.3]), "upper": st.sampled_from([0.3, 0.5])},
        ),
        "hardswish": ("Hardswish", {}),
        "hardsigmoid": ("Hardsigmoid", {}),
        "softsign": ("Softsign", {}),
        "tanhshrink": ("Tanhshrink", {}),
        "softshrink": ("Softshrink", {"lambd": st.sampled_from([0.5, 0.0, 1.0])}),
        "hardshrink": ("Hardshrink", {"lambd": st.sampled_from([0.5, 0.0, 1.0])}),
        "threshold": (
            "Threshold",
            {
                "threshold": st.sampled_from([0.0, 1.0, -1.0]),
                "value": st.sampled_from([0.0, 2.0, -3.0]),
            },
        ),
        "logsigmoid": ("LogSigmoid", {}),
        "relu": ("ReLU", {}),
        "sigmoid": ("Sigmoid", {}),
        "tanh": ("Tanh", {}),
    }
    name = draw(st.sampled_from(sorted(table)))
    m_name, options = table[name]
    kwargs = {k: draw(v) for k, v in options.items() if draw(st.booleans())}
    if name == "threshold":  # both are required
        kwargs = {k: draw(v) for k, v in options.items()}
    x = draw(activation_input(tuple(kwargs.values()) if name != "gelu" else ()))
    form = draw(st.sampled_from(["functional", "module"]))

    def call(lib, t, keep):
        if form == "functional":
            f = getattr(lib.nn.functional, name)
            return f(t["x"], training=False, **kwargs) if name == "rrelu" else f(t["x"], **kwargs)
        keep["module"] = getattr(lib.nn, m_name)(**kwargs).eval()
        return keep["module"](t["x"])

    return Case(
        f"{name if form == 'functional' else m_name}({kwargs})", {"x": x}, call, grad_at_nan=False
    )


@st.composite
def softmaxes(draw):
    """softmax, log_softmax, softmin (dim incl. negative, dtype=) and glu (dim)."""
    name = draw(st.sampled_from(["softmax", "log_softmax", "softmin", "glu"]))
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    x = draw(entries(shape, (0.0, 800.0, -800.0, *INFINITE)))
    rank = max(len(shape), 1)
    dim = draw(st.integers(-rank, rank - 1))
    kwargs = {"dim": dim}
    if name != "glu" and draw(st.booleans()):
        kwargs["dtype"] = draw(st.sampled_from(["float32", "float64"]))
    m_name = {
        "softmax": "Softmax",
        "log_softmax": "LogSoftmax",
        "softmin": "Softmin",
        "glu": "GLU",
    }[name]
    form = draw(st.sampled_from(["functional", "module"]))

    def call(lib, t, keep):
        kw = dict(kwargs)
        if "dtype" in kw:
            kw["dtype"] = getattr(lib, kw["dtype"])
        if form == "functional":
            return getattr(lib.nn.functional, name)(t["x"], **kw)
        kw.pop("dtype", None)
        keep["module"] = getattr(lib.nn, m_name)(**kw)
        return keep["module"](t["x"])

    loose = (1e-5, 1e-6) if kwargs.get("dtype") == "float32" else (RTOL, ATOL)  # in float32
    return Case(
        f"{name if form == 'functional' else m_name}({kwargs})", {"x": x}, call, tolerance=loose
    )


@st.composite
def prelus(draw):
    channels = draw(st.integers(1, 3))
    shape = draw(st.sampled_from([(), (channels,), (2, channels), (2, channels, 2), (1, 1)]))
    num_parameters = draw(st.sampled_from([1, channels]))
    x = draw(entries(shape, KINKS))
    weight = draw(entries((num_parameters,), (0.0, -1.0, 0.25)))
    form = draw(st.sampled_from(["functional", "module"]))

    def call(lib, t, keep):
        if form == "functional":
            return lib.nn.functional.prelu(t["x"], t["weight"])
        keep["module"] = lib.nn.PReLU(num_parameters).double()
        with lib.no_grad():
            keep["module"].weight.copy_(t["weight"])
        return keep["module"](t["x"])

    return Case(f"prelu {form} ({num_parameters} parameters)", {"x": x, "weight": weight}, call)


ACTIVATIONS = st.one_of(activations(), softmaxes(), prelus())


# ---- normalization ----------------------------------------------------------------------------


def _draw_statistics_and_affine(draw, arrays: dict, c: int, running: bool) -> None:
    """Running statistics of ``c`` channels (if ``running``), then maybe a weight and a bias,
    drawn into ``arrays``."""
    if running:
        arrays["running_mean"] = draw(entries((c,)))
        arrays["running_var"] = draw(positive((c,)))
    if draw(st.booleans()):
        arrays["weight"] = draw(entries((c,)))
    if draw(st.booleans()):
        arrays["bias"] = draw(entries((c,)))


@st.composite
def batch_norms(draw):
    """F.batch_norm or nn.BatchNorm1d/2d/3d: train or eval, momentum (None: a running
    average), track_running_stats, affine, batches of 1."""
    spatial = draw(st.integers(0, 3))
    c = draw(st.integers(1, 3))
    n = draw(st.sampled_from([1, 2, 3]))
    sizes = tuple(draw(st.lists(st.integers(1, 2), min_size=spatial, max_size=spatial)))
    shape = (n, c, *sizes)
    if spatial == 0 and draw(st.booleans()):
        shape = (n, c)
    elif spatial == 1 and draw(st.integers(0, 3)) == 0:
        shape = (c, sizes[0])  # (C, L): BatchNorm1d reads it as (N, C) with C = L: raises
    x = draw(entries(shape, (0.0, 1.0), tiny=False))
    training = draw(st.booleans())
    momentum = draw(st.sampled_from([0.1, None, 0.5]))
    eps = draw(st.sampled_from([1e-5, 0.0, 0.1]))
    form = draw(st.sampled_from(["functional", "module"]))
    arrays = {"x": x}
    if form == "functional":
        use_running = draw(st.booleans()) or not training
        _draw_statistics_and_affine(draw, arrays, c, use_running)

        def call(lib, t, keep):
            return lib.nn.functional.batch_norm(
                t["x"],
                t.get("running_mean"),
                t.get("running_var"),
                t.get("weight"),
                t.get("bias"),
                training,
                0.1 if momentum is None else momentum,
                eps,
            )

        what = f"batch_norm(training={training}, momentum={momentum}, eps={eps}, {sorted(arrays)})"
        return Case(what, arrays, call, no_grad=("running_mean", "running_var"))
    module = draw(st.sampled_from(["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]))
    affine, track = draw(st.booleans()), draw(st.booleans())

    def call(lib, t, keep):
        keep["module"] = getattr(lib.nn, module)(
            c, eps=eps, momentum=momentum, affine=affine, track_running_stats=track
        ).double()
        keep["module"].train(training)
        out = keep["module"](t["x"])
        return out if training else keep["module"](t["x"] * 2)  # a second call, no update

    what = (
        f"{module}(training={training}, momentum={momentum}, eps={eps}, affine={affine}, "
        f"track_running_stats={track})"
    )
    return Case(what, arrays, call)


@st.composite
def layer_norms(draw):
    shape = tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=4)))
    k = draw(st.integers(1, min(3, len(shape))))
    normalized = shape[-k:]
    if draw(st.integers(0, 6)) == 0:
        normalized = (*normalized[:-1], normalized[-1] + 1)  # does not match: raises
    eps = draw(st.sampled_from([1e-5, 0.0, 0.1]))
    # (not 1e150: PyTorch's layer norm backward cancels there, giving 0 for a constant row)
    x = draw(entries(shape, (0.0, 1.0, 1e8), tiny=False))
    arrays = {"x": x}
    name = draw(st.sampled_from(["layer_norm", "LayerNorm", "rms_norm", "RMSNorm"]))
    if name == "rms_norm":
        eps = draw(st.sampled_from([None, 1e-5, 0.0, 0.1]))
    if name in ("layer_norm", "rms_norm"):
        if draw(st.booleans()):
            arrays["weight"] = draw(entries(normalized))
        if name == "layer_norm" and draw(st.booleans()):
            arrays["bias"] = draw(entries(normalized))

        def call(lib, t, keep):
            f = getattr(lib.nn.functional, name)
            if name == "layer_norm":
                return f(t["x"], normalized, t.get("weight"), t.get("bias"), eps)
            return f(t["x"], normalized, t.get("weight"), eps)

        return Case(f"{name}({normalized}, eps={eps}, {sorted(arrays)})", arrays, call)
    affine = draw(st.booleans())
    bias = draw(st.booleans())
    if name == "RMSNorm":
        eps = draw(st.sampled_from([None, 1e-5, 0.1]))

    def call(lib, t, keep):
        if name == "LayerNorm":
            keep["module"] = lib.nn.LayerNorm(
                normalized, eps, elementwise_affine=affine, bias=bias
            ).double()
        else:
            keep["module"] = lib.nn.RMSNorm(normalized, eps, elementwise_affine=affine).double()
        if affine:  # weights other than 1 so that their part shows
            with lib.no_grad():
                for p in keep["module"].parameters():
                    p.copy_(lib.linspace(-1.0, 2.0, p.numel(), dtype=p.dtype).reshape(p.shape))
        return keep["module"](t["x"])

    return Case(f"{name}({normalized}, eps={eps}, affine={affine}, bias={bias})", arrays, call)


@st.composite
def group_norms(draw):
    groups = draw(st.integers(1, 3))
    c = groups * draw(st.integers(1, 2))
    if draw(st.integers(0, 6)) == 0:
        c += 1  # not divisible: raises
    shape = (draw(st.integers(1, 2)), c, *draw(st.lists(st.integers(1, 3), max_size=2)))
    x = draw(entries(shape, (0.0, 1.0), tiny=False))
    eps = draw(st.sampled_from([1e-5, 0.0, 0.1]))
    arrays = {"x": x}
    if draw(st.booleans()):
        arrays["weight"] = draw(entries((c,)))
    if draw(st.booleans()):
        arrays["bias"] = draw(entries((c,)))
    form = draw(st.sampled_from(["functional", "module"]))
    affine = draw(st.booleans())

    def call(lib, t, keep):
        if form == "functional":
            return lib.nn.functional.group_norm(t["x"], groups, t.get("weight"), t.get("bias"), eps)
        keep["module"] = lib.nn.GroupNorm(groups, c, eps, affine=affine).double()
        return keep["module"](t["x"])

    return Case(
        f"group_norm {form} ({groups} groups, eps={eps}, affine={affine}, {sorted(arrays)})",
        arrays,
        call,
    )


@st.composite
def instance_norms(draw):
    spatial = draw(st.integers(1, 3))
    c = draw(st.integers(1, 3))
    shape = (
        draw(st.integers(1, 2)),
        c,
        *draw(st.lists(st.integers(1, 3), min_size=spatial, max_size=spatial)),
    )
    x = draw(entries(shape, (0.0, 1.0), tiny=False))
    form = draw(st.sampled_from(["functional", "module"]))
    momentum = draw(st.sampled_from([0.1, 0.5]))
    eps = draw(st.sampled_from([1e-5, 0.1]))
    arrays = {"x": x}
    if form == "functional":
        use_input_stats = draw(st.booleans())
        _draw_statistics_and_affine(draw, arrays, c, draw(st.booleans()) or not use_input_stats)

        def call(lib, t, keep):
            out = lib.nn.functional.instance_norm(
                t["x"],
                t.get("running_mean"),
                t.get("running_var"),
                t.get("weight"),
                t.get("bias"),
                use_input_stats,
                momentum,
                eps,
            )
            stats = [t[k].detach().clone() for k in ("running_mean", "running_var") if k in t]
            return (out, *stats)

        return Case(
            f"instance_norm(use_input_stats={use_input_stats}, momentum={momentum}, "
            f"eps={eps}, {sorted(arrays)})",
            arrays,
            call,
            no_grad=("running_mean", "running_var"),
        )
    module = f"InstanceNorm{spatial}d"
    affine, track, training = draw(st.booleans()), draw(st.booleans()), draw(st.booleans())

    def call(lib, t, keep):
        keep["module"] = getattr(lib.nn, module)(c, eps, momentum, affine, track).double()
        keep["module"].train(training)
        return keep["module"](t["x"])

    return Case(
        f"{module}(eps={eps}, momentum={momentum}, affine={affine}, "
        f"track_running_stats={track}, training={training})",
        arrays,
        call,
    )


@st.composite
def other_norms(draw):
    """local_response_norm and F.normalize."""
    if draw(st.booleans()):
        shape = (
            draw(st.integers(1, 2)),
            draw(st.integers(1, 4)),
            *draw(st.lists(st.integers(1, 3), max_size=2)),
        )
        size = draw(st.integers(1, 4))
        kwargs = {
            "alpha": draw(st.sampled_from([1e-4, 0.5])),
            "beta": draw(st.sampled_from([0.75, 1.0])),
            "k": draw(st.sampled_from([1.0, 2.0])),
        }
        form = draw(st.sampled_from(["functional", "module"]))

        def call(lib, t, keep):
            if form == "functional":
                return lib.nn.functional.local_response_norm(t["x"], size, **kwargs)
            keep["module"] = lib.nn.LocalResponseNorm(size, **kwargs)
            return keep["module"](t["x"])

        return Case(
            f"local_response_norm {form} ({size}, {kwargs})",
            {"x": draw(entries(shape, (0.0,)))},
            call,
        )
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    rank = max(len(shape), 1)
    kwargs = {
        "p": draw(st.sampled_from([2.0, 1.0, 3.0, math.inf, 0.5])),
        "dim": draw(st.integers(-rank, rank - 1)),
        "eps": draw(st.sampled_from([1e-12, 0.0, 0.5])),
    }
    return Case(
        f"normalize({kwargs})",
        {"x": draw(entries(shape, (0.0,), tiny=False))},
        lambda lib, t, keep: lib.nn.functional.normalize(t["x"], **kwargs),
    )


NORMS = st.one_of(batch_norms(), layer_norms(), group_norms(), instance_norms(), other_norms())


# ---- running both libraries -------------------------------------------------------------------


def run(case: Case, lib, seed: int):
    """(tensors, outputs, module, error): the case on fresh leaves in ``lib``, then
    (y * w).sum() backward through every output that requires grad."""
    t = {}
    for name, a in case.arrays.items():
        grad = a.dtype.kind == "f" and name not in case.no_grad
        dtype = lib.float64 if a.dtype.kind == "f" else lib.int64
        t[name] = lib.tensor(a, dtype=dtype, requires_grad=grad)
    keep = {}
    ys = outcome(case.call, lib, t, keep)
    if isinstance(ys, Exception):
        return t, None, keep.get("module"), ys
    ys = list(ys) if isinstance(ys, tuple) else [ys]
    rng = np.random.default_rng(seed)
    terms = [
        (y * lib.tensor(rng.uniform(-2, 2, tuple(y.shape)), dtype=y.dtype)).sum()
        for y in ys
        if y.requires_grad
    ]
    error = outcome(lambda: sum(terms).backward()) if terms else None
    return t, ys, keep.get("module"), error


def assert_tensor(ours, theirs, what: str, tolerance=(RTOL, ATOL)) -> None:
    assert (ours is None) == (theirs is None), f"{what}: {ours} where PyTorch has {theirs}"
    if theirs is None:
        return
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], (
        f"{what}: dtype {ours.dtype} != {theirs.dtype}"
    )
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: {ours.shape} != {theirs.shape}"
    rtol, atol = tolerance if theirs.dtype == torch.float64 else (1e-5, 1e-6)
    np.testing.assert_allclose(
        ours.detach().numpy(),
        theirs.detach().numpy(),
        rtol=rtol,
        atol=atol,
        equal_nan=True,
        err_msg=what,
    )


def check(case: Case, seed: int) -> None:
    t_ours, ours, module, our_error = run(case, sg, seed)
    t_theirs, theirs, their_module, their_error = run(case, torch, seed)
    what = f"{case.what} on {case.arrays}"
    if isinstance(their_error, AssertionError) and isinstance(our_error, ValueError):
        return  # PyTorch's asserts are ValueErrors here (tests/nn/test_layer_constructor_errors)
    if "does not have a device" in str(their_error):
        return  # PyTorch's group_norm backward with a bias and no weight fails so
    if theirs is None or ours is None:
        raised_alike(our_error, their_error, what)
        return
    assert len(ours) == len(theirs), f"{what}: {len(ours)} outputs, not {len(theirs)}"
    for number, (mine, its) in enumerate(zip(ours, theirs)):
        assert mine.requires_grad == its.requires_grad, f"{what}: output {number} requires_grad"
        assert_tensor(mine, its, f"{what}: output {number}")
    if raised_alike(our_error, their_error, f"{what} (backward)"):
        return
    for name in case.arrays:
        ours_grad, their_grad = t_ours[name].grad, t_theirs[name].grad
        if their_grad is None:
            assert ours_grad is None or not ours_grad.numpy().any(), f"{what}: grad of {name}"
        elif not case.grad_at_nan:
            assert ours_grad is not None, f"{what}: no gradient of {name}"
            finite = ~np.isnan(case.arrays[name])
            ours_grad, their_grad = ours_grad[sg.tensor(finite)], their_grad[torch.tensor(finite)]
            assert_tensor(ours_grad, their_grad, f"{what}: gradient of {name}")
        else:
            assert_tensor(ours_grad, their_grad, f"{what}: gradient of {name}", case.tolerance)
        if name.startswith("running"):  # updated in place
            assert_tensor(t_ours[name], t_theirs[name], f"{what}: {name} after the call")
    if their_module is not None:
        for (name, p), (_, q) in zip(module.named_parameters(), their_module.named_parameters()):
            assert_tensor(p.grad, q.grad, f"{what}: gradient of {name}")
        ours_buffers = dict(module.named_buffers())
        for name, b in their_module.named_buffers():
            assert_tensor(ours_buffers.get(name), b, f"{what}: buffer {name}")


@given(case=LOSSES, seed=st.integers(0, 2**16))
@FUZZ
def test_losses_match_pytorch(case, seed):
    check(case, seed)


@given(case=ACTIVATIONS, seed=st.integers(0, 2**16))
@FUZZ
def test_activations_match_pytorch(case, seed):
    check(case, seed)


@given(case=NORMS, seed=st.integers(0, 2**16))
@FUZZ
def test_normalization_matches_pytorch(case, seed):
    check(case, seed)
