"""Random combinations of mixed precision against PyTorch: short chains of ops from PyTorch's CPU
autocast lists and ordinary ops inside ``autocast`` (its spellings, as a decorator, nested
regions), on leaves of mixed dtypes, 0-d tensors and Python numbers; 16-bit tensors outside
autocast (elementwise ops, reductions, products, comparisons, promotion, casts of awkward
values); and GradScaler over random steps with infs and NaNs. Both libraries must raise alike
and agree on every output's dtype and values, the gradients' dtypes and values, and the scaler's
scale and parameters.
Set ``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples."""

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import fuzz_settings, outcome, raised_alike

import scratchgrad as sg

LOW = ["bfloat16", "float16"]
FLOATS = ["float32", "float64", *LOW]
EPS = {"bfloat16": 2.0**-8, "float16": 2.0**-11, "float32": 2.0**-24, "float64": 2.0**-53}


def name(dtype) -> str:
    """A dtype's name in either library (``bfloat16``, ``int64``...)."""
    return str(dtype).split(".")[-1]


def to_numpy(value) -> np.ndarray:
    """A tensor of either library as an array, floating ones as float64."""
    value = value.detach()
    if isinstance(value, torch.Tensor):
        return (value.double() if value.is_floating_point() else value).numpy()
    array = value.numpy()  # (ml_dtypes' bfloat16 is not of NumPy's kind "f")
    return array.astype(np.float64) if name(value.dtype) in FLOATS else array


def assert_near(ours, theirs, rtol: float, what: str) -> None:
    """The same dtype and shape, infs and NaNs in the same places, and the finite entries within
    ``rtol`` of the largest finite magnitude of PyTorch's (roundings in a chain of ops carry the
    large entries' errors into the small ones by cancellation)."""
    assert name(ours.dtype) == name(theirs.dtype), f"{what}: {ours.dtype} != {theirs.dtype}"
    actual, expected = to_numpy(ours), to_numpy(theirs)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if actual.dtype.kind != "f":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(actual[~finite], expected[~finite], err_msg=what)
    scale = max(np.abs(expected[finite]).max(initial=0.0), 1e-2)
    np.testing.assert_allclose(
        actual[finite], expected[finite], rtol=rtol, atol=rtol * scale, err_msg=what
    )


# ---- autocast: chains of ops on leaves of mixed dtypes ----------------------------------------


def fn(lib):
    """``lib.nn.functional``."""
    return lib.nn.functional


# Each op maps the chain's (3, 4) value x to a (3, 4) value, reading the leaves in p: W (4, 4),
# b (4,), K (3, 3, 3) (a convolution's weight), y (3, 4) and s (a 0-d tensor, an int tensor or
# a Python number), each in a drawn dtype.
LOWER = {
    "matmul": lambda L, x, p: x @ p["W"],
    "mm": lambda L, x, p: L.mm(x, p["W"]),
    "linear": lambda L, x, p: fn(L).linear(x, p["W"], p["b"]),
    "linear no bias": lambda L, x, p: fn(L).linear(x, p["W"]),
    "addmm": lambda L, x, p: L.addmm(p["b"], x, p["W"]),
    "bmm": lambda L, x, p: L.bmm(x[None], p["W"][None])[0],
    "baddbmm": lambda L, x, p: L.baddbmm(x[None], x[None], p["W"][None], beta=0.5)[0],
    "addbmm": lambda L, x, p: L.addbmm(p["b"], x[None], p["W"][None]),
    "einsum": lambda L, x, p: L.einsum("ij,jk->ik", x, p["W"]),
    "conv1d": lambda L, x, p: fn(L).conv1d(x[None], p["K"], padding=1)[0],
    "conv_transpose1d": lambda L, x, p: fn(L).conv_transpose1d(x[None], p["K"], padding=1)[0],
    "prelu": lambda L, x, p: fn(L).prelu(x, p["b"]),
}
FLOAT32 = {
    "mse_loss": lambda L, x, p: fn(L).mse_loss(x, p["y"], reduction="none"),
    "l1_loss": lambda L, x, p: fn(L).l1_loss(x, p["y"], reduction="none"),
    "smooth_l1_loss": lambda L, x, p: fn(L).smooth_l1_loss(x, p["y"], reduction="none", beta=0.5),
    "huber_loss": lambda L, x, p: fn(L).huber_loss(x, p["y"], reduction="none"),
    "bce_with_logits": lambda L, x, p: fn(L).binary_cross_entropy_with_logits(
        x, p["y"].sigmoid(), reduction="none"
    ),
    "binary_cross_entropy": lambda L, x, p: fn(L).binary_cross_entropy(
        x.sigmoid(), p["y"].sigmoid(), reduction="none"
    ),
    "soft_margin_loss": lambda L, x, p: fn(L).soft_margin_loss(x, p["y"].sign(), reduction="none"),
    # (a target entry of 0 is kept away: its gradient is -input here, NaN in PyTorch's: README,
    # "What is different")
    "kl_div": lambda L, x, p: fn(L).kl_div(x, p["y"].abs() + 0.25, reduction="none"),
    "mse_loss mean": lambda L, x, p: x * fn(L).mse_loss(x, p["y"]),
    "cross_entropy": lambda L, x, p: x + fn(L).cross_entropy(x, L.tensor([0, 3, 1])),
    "prod": lambda L, x, p: x * x.prod(0, keepdim=True),
    "cdist": lambda L, x, p: x + L.cdist(x, p["y"]).sum(1, keepdim=True),
    "trace": lambda L, x, p: x * L.trace(x[:, :3]),
    "quantile": lambda L, x, p: x - L.quantile(x, 0.25, dim=0, keepdim=True),
    "reflect pad": lambda L, x, p: fn(L).pad(x[None], (1, 1), mode="reflect")[0, :, 1:5],
    "replicate pad": lambda L, x, p: fn(L).pad(x[None], (2, 0), mode="replicate")[0, :, :4],
    "inverse": lambda L, x, p: x @ L.linalg.inv(p["W"] / 8 + L.eye(4, dtype=p["W"].dtype)),
    "svdvals": lambda L, x, p: x * L.linalg.svdvals(x)[0],
}
PROMOTE = {
    "cat": lambda L, x, p: L.cat([x, p["y"]])[1:4],
    "stack": lambda L, x, p: L.stack([x, p["y"]]).sum(0),
    "index_copy": lambda L, x, p: x.index_copy(0, L.tensor([2, 0]), p["y"][:2]),
}
# (softmax, exp, pow, addcmul, ... are on CUDA's lists, not on the CPU's.) Not group_norm: the
# gradient of a 16-bit group of nearly equal entries cancels, and PyTorch's kernel rounds it
# further from the exact one than ours (0.0354 for 0.0460; ours 0.0459)
ORDINARY = {
    "softmax": lambda L, x, p: x.softmax(-1),
    "log_softmax": lambda L, x, p: x.log_softmax(0),
    "exp": lambda L, x, p: x.exp(),
    "log": lambda L, x, p: (x.abs() + 1).log(),
    "pow": lambda L, x, p: x.pow(2),
    "pow tensor": lambda L, x, p: x.abs().pow(p["y"]),
    "layer_norm": lambda L, x, p: fn(L).layer_norm(x, (4,), p["b"]),
    "instance_norm": lambda L, x, p: fn(L).instance_norm(x[None], weight=p["b"][:3])[0],
    "batch_norm": lambda L, x, p: fn(L).batch_norm(x, None, None, p["b"], training=True),
    "vector_norm": lambda L, x, p: x / (1 + L.linalg.vector_norm(x)),
    "addcmul": lambda L, x, p: L.addcmul(x, p["y"], p["s"], value=0.5),
    "atan2": lambda L, x, p: L.atan2(x, p["y"]),
    "add": lambda L, x, p: x + p["s"],
    "mul": lambda L, x, p: x * p["s"],
    "sub y": lambda L, x, p: x - p["y"],
    "div": lambda L, x, p: x / (p["y"].abs() + 1),
    "where": lambda L, x, p: L.where(x > 0, x, p["y"]),
    "clamp": lambda L, x, p: x.clamp(-0.5, 0.75),
    "relu": lambda L, x, p: x.relu(),
    "sigmoid": lambda L, x, p: x.sigmoid(),
    "tanh": lambda L, x, p: x.tanh(),
    "gelu": lambda L, x, p: fn(L).gelu(x),
    "mean": lambda L, x, p: x - x.mean(0, keepdim=True),
    "sum": lambda L, x, p: x.sum(1, keepdim=True) * x,
    "var": lambda L, x, p: x * x.var(0, keepdim=True),
    "cumsum": lambda L, x, p: x.cumsum(1),
    "float": lambda L, x, p: x.float(),
    "half": lambda L, x, p: x.half(),
    "bfloat16": lambda L, x, p: x.to(L.bfloat16),
    "double": lambda L, x, p: x.double(),
    "index_put": lambda L, x, p: x.index_put((L.tensor([1]),), p["y"][0]),
    "masked_fill": lambda L, x, p: x.masked_fill(x > 0, 0.5),
    "add_ in place": lambda L, x, p: x.clone().add_(p["s"]),
}
CHAIN_OPS = {**LOWER, **FLOAT32, **PROMOTE, **ORDINARY}


@st.composite
def leaf_arrays(draw, shape: tuple):
    """Entries k / 16 for k in [-24, 24]: every floating dtype holds them, so the leaves of
    both libraries start equal."""
    size = int(np.prod(shape))
    ints = draw(st.lists(st.integers(-24, 24), min_size=size, max_size=size))
    return np.array(ints, dtype=np.float64).reshape(shape) / 16


@st.composite
def leaves(draw):
    """The chain's leaves: dtype and entries of x, W, b, K, y, and s (a 0-d tensor of any
    dtype, an int64 tensor or a Python number)."""
    spec = {}
    for key, shape in (("x", (3, 4)), ("W", (4, 4)), ("b", (4,)), ("K", (3, 3, 3)), ("y", (3, 4))):
        spec[key] = (draw(st.sampled_from(FLOATS)), draw(leaf_arrays(shape)))
    kind = draw(st.sampled_from(["0-d", "int", "float", "int tensor", "same"]))
    if kind == "0-d":
        spec["s"] = (draw(st.sampled_from(FLOATS)), draw(leaf_arrays(())))
    elif kind == "int tensor":
        spec["s"] = ("int64", np.array(draw(st.integers(-3, 3))))
    elif kind == "same":
        spec["s"] = spec["y"]
    else:
        spec["s"] = draw(st.sampled_from([2, -1, 0.5, 3.25]) if kind == "float" else st.just(3))
    return spec


def make_leaves(lib, spec: dict) -> dict:
    """The leaves in ``lib``: floating tensors require grad."""
    made = {}
    for key, value in spec.items():
        if not isinstance(value, tuple):
            made[key] = value
            continue
        dtype, array = value
        floating = dtype in FLOATS
        made[key] = lib.tensor(array, dtype=getattr(lib, dtype), requires_grad=floating)
    return made


def region(lib, spelling: str, low: str, cache: bool):
    """An autocast region in one of the spellings PyTorch users write."""
    dtype = getattr(lib, low)
    if spelling == "autocast":
        return lib.autocast("cpu", dtype=dtype)
    if spelling == "amp.autocast":
        return lib.amp.autocast(device_type="cpu", dtype=dtype, cache_enabled=cache)
    if spelling == "keywords":
        return lib.autocast(device_type="cpu", dtype=dtype, enabled=True, cache_enabled=cache)
    return lib.cpu.amp.autocast(dtype=dtype, cache_enabled=cache)  # (deprecated: warns)


def run_chain(lib, spec: dict, chain: list, low: str, spelling: str, cache: bool):
    """The leaves and the chain's outputs under autocast (each op in a nested region if drawn
    so), the region entered by ``with`` or as a decorator of the chain."""
    p = make_leaves(lib, spec)

    def run() -> list:
        outputs, x = [], p["x"]
        for op, nested in chain:
            if nested == "disabled":
                with lib.autocast("cpu", enabled=False):
                    x = CHAIN_OPS[op](lib, x, p)
            elif nested == "re-enabled":  # a region given no dtype takes the enclosing one's
                with lib.autocast("cpu", enabled=False), lib.autocast("cpu"):
                    x = CHAIN_OPS[op](lib, x, p)
            else:
                x = CHAIN_OPS[op](lib, x, p)
            outputs.append(x)
        return outputs

    if spelling == "decorator":
        return p, lib.autocast("cpu", dtype=getattr(lib, low), cache_enabled=cache)(run)()
    with region(lib, spelling, low, cache):
        return p, run()


def missing_kernel(theirs) -> bool:
    """Whether PyTorch raised for want of a 16-bit CPU kernel (cdist, pdist, avg_pool3d...):
    scratchgrad computes those, and raises other errors first (its dtype checks)."""
    return isinstance(theirs, NotImplementedError) and "not implemented for" in str(theirs)


def gradients(lib, p: dict, out) -> dict:
    """The leaves' gradients of a weighted sum of ``out``, computed outside the region."""
    weights = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(out.shape), dtype=out.dtype)
    (out * weights).sum().backward()
    return {k: v.grad for k, v in p.items() if getattr(v, "grad", None) is not None}


@fuzz_settings(150)
@given(
    spec=leaves(),
    chain=st.lists(
        st.tuples(
            st.sampled_from(sorted(CHAIN_OPS)),
            st.sampled_from(["none", "none", "none", "disabled", "re-enabled"]),
        ),
        min_size=1,
        max_size=4,
    ),
    low=st.sampled_from(LOW),
    spelling=st.sampled_from(["autocast", "amp.autocast", "keywords", "cpu.amp", "decorator"]),
    cache=st.booleans(),
)
def test_chains_under_autocast_agree_with_torch(spec, chain, low, spelling, cache):
    args = (spec, chain, low, spelling, cache)
    ours, theirs = outcome(run_chain, sg, *args), outcome(run_chain, torch, *args)
    dtypes = {k: v[0] if isinstance(v, tuple) else v for k, v in spec.items()}
    what = f"{chain} in {low} ({spelling}) on {dtypes}"
    if missing_kernel(theirs):
        return
    if raised_alike(ours, theirs, what):
        return
    (p, outs), (expected_p, expected_outs) = ours, theirs
    rtol = 6 * EPS[low] * (len(chain) + 1)  # a few 16-bit roundings per op, in other orders
    for i, (out, expected) in enumerate(zip(outs, expected_outs)):
        assert out.requires_grad == expected.requires_grad, f"{what}: output {i}"
        assert_near(out, expected, rtol, f"{what}: output {i}")
    if not outs[-1].requires_grad:
        return
    grads = outcome(gradients, sg, p, outs[-1])
    expected_grads = outcome(gradients, torch, expected_p, expected_outs[-1])
    if isinstance(expected_grads, Exception):
        # PyTorch's backward of a loss of mixed dtypes can fail where its forward ran
        # (huber_loss of float32 and float64: "Found dtype Double but expected Float"); ours
        # computes, as README says of PyTorch's failing backwards
        return
    assert not isinstance(grads, Exception), f"{what}: backward raised {grads!r}"
    assert sorted(grads) == sorted(expected_grads), f"{what}: gradients of {sorted(grads)}"
    for key, grad in grads.items():
        assert_near(grad, expected_grads[key], 2 * rtol, f"{what}: gradient of {key}")


# ---- 16-bit tensors outside autocast ----------------------------------------------------------

# Values a cast can get wrong: ties between two 16-bit neighbours (to even), the largest finite
# values and the first that round to inf, subnormals and the ties below them, -0, inf, NaN
AWKWARD = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    1 + 2**-8,
    1 + 3 * 2**-8,
    1 + 2**-11,
    1 + 3 * 2**-11,
    1 + 2**-12,
    1 + 2**-9 + 2**-30,
    65504.0,
    65519.0,
    65520.0,
    -65520.0,
    65536.0,
    3.3895313892515355e38,
    3.4e38,
    2**-14,
    2**-24,
    2**-25,
    3 * 2**-25,
    2**-26,
    2**-126,
    2**-133,
    2**-134,
    3 * 2**-134,
    1e-45,
    2**-150,
    0.1,
    1 / 3,
    float("inf"),
    float("-inf"),
    float("nan"),
    1e300,
    2.0**24 + 1,
]


@st.composite
def awkward_values(draw, size: int):
    """Floats that are awkward to round, and random ones of any magnitude."""
    return draw(
        st.lists(
            st.one_of(
                st.sampled_from(AWKWARD).map(lambda v: draw(st.sampled_from([1, -1])) * v),
                st.floats(allow_nan=True, allow_infinity=True, width=64),
                st.floats(-1e5, 1e5, width=32),
            ),
            min_size=size,
            max_size=size,
        )
    )


def bits(tensor) -> np.ndarray:
    """A 16-bit tensor's bits, NaNs made one pattern (their payloads are not compared)."""
    array = to_numpy(tensor.float())
    raw = tensor.view(sg.int16 if isinstance(tensor, sg.Tensor) else torch.int16)
    return np.where(np.isnan(array), -1, to_numpy(raw))


@fuzz_settings(100)
@given(
    values=awkward_values(12),
    source=st.sampled_from(["float32", "float64"]),
    target=st.sampled_from(LOW),
    how=st.sampled_from(["to", "tensor(dtype=)", "copy_", "then to the other 16-bit"]),
)
def test_casts_to_sixteen_bits_round_as_torch(values, source, target, how):
    results = []
    for lib in (sg, torch):
        x = lib.tensor(values, dtype=getattr(lib, source))
        dtype = getattr(lib, target)
        if how == "to":
            out = x.to(dtype)
        elif how == "tensor(dtype=)":
            out = lib.tensor(x.tolist(), dtype=dtype)
        elif how == "copy_":
            out = lib.zeros(len(values), dtype=dtype).copy_(x)
        else:
            other = lib.float16 if target == "bfloat16" else lib.bfloat16
            out = x.to(other).to(dtype)
        results.append(out)
    ours, theirs = results
    assert name(ours.dtype) == name(theirs.dtype)
    np.testing.assert_array_equal(bits(ours), bits(theirs), err_msg=f"{source} {values} {how}")


@fuzz_settings(50)
@given(
    values=st.lists(st.integers(-(2**40), 2**40), min_size=6, max_size=6),
    target=st.sampled_from(LOW),
)
def test_casts_of_integers_to_sixteen_bits_round_as_torch(values, target):
    ours = sg.tensor(values).to(getattr(sg, target))
    theirs = torch.tensor(values).to(getattr(torch, target))
    np.testing.assert_array_equal(bits(ours), bits(theirs), err_msg=f"{values} to {target}")


# Ops on a 16-bit x (3, 4) and an operand y: a 16-bit tensor of either dtype, a float32 or
# float64 tensor, a 0-d tensor of any dtype, an int tensor or a Python number. Selections and
# comparisons must give PyTorch's bits; arithmetic, within a 16-bit rounding of the result.
EXACT = {
    "neg": lambda L, x, y: -x,
    "abs": lambda L, x, y: x.abs(),
    "relu": lambda L, x, y: x.relu(),
    "max": lambda L, x, y: x.max(1),
    "amax": lambda L, x, y: x.amax(0),
    "argmin": lambda L, x, y: x.argmin(),
    "sort": lambda L, x, y: x.sort(1)[0],
    "maximum": lambda L, x, y: L.maximum(x, y),
    "where": lambda L, x, y: L.where(x > 0, x, y),
    "clamp": lambda L, x, y: x.clamp(-1.5, 2.25),
    "<": lambda L, x, y: x < y,
    "==": lambda L, x, y: x == y,
    ">=": lambda L, x, y: x >= y,
    "floor": lambda L, x, y: x.floor(),
    "round": lambda L, x, y: x.round(),
    "sign": lambda L, x, y: x.sign(),
    "float": lambda L, x, y: x.float(),
    "double": lambda L, x, y: x.double(),
    "to int": lambda L, x, y: x.clamp(-1000, 1000).to(L.int32),
}
ROUNDED = {
    "+": lambda L, x, y: x + y,
    "-": lambda L, x, y: y - x,
    "*": lambda L, x, y: x * y,
    "/": lambda L, x, y: x / y,
    "**2": lambda L, x, y: x**2,
    "exp": lambda L, x, y: x.exp(),
    "log": lambda L, x, y: x.abs().log(),
    "sqrt": lambda L, x, y: x.abs().sqrt(),
    "sin": lambda L, x, y: x.sin(),
    "tanh": lambda L, x, y: x.tanh(),
    "sigmoid": lambda L, x, y: x.sigmoid(),
    "reciprocal": lambda L, x, y: x.reciprocal(),
    "lerp": lambda L, x, y: x.lerp(x.flip(0), 0.25),
    "addcmul": lambda L, x, y: x.addcmul(x, x.flip(1), value=0.5),
    "add alpha": lambda L, x, y: L.add(x, y, alpha=2),
    "softmax": lambda L, x, y: x.softmax(1),
    "log_softmax": lambda L, x, y: x.log_softmax(0),
}
# reductions, within a 16-bit rounding of the result plus float32's of the sum of magnitudes
REDUCED = {
    "sum": lambda L, x, y: x.sum(),
    "sum dim": lambda L, x, y: x.sum(0),
    "mean": lambda L, x, y: x.mean(1),
    "var": lambda L, x, y: x.var(),
    "std": lambda L, x, y: x.std(1),
    "cumsum": lambda L, x, y: x.cumsum(1),
    "prod": lambda L, x, y: x.prod(1),
    "norm": lambda L, x, y: x.norm(),
    "logsumexp": lambda L, x, y: x.logsumexp(1),
    "matmul": lambda L, x, y: x @ x.mT,
    "mv": lambda L, x, y: x.mv(x[0]),
    "sum float32": lambda L, x, y: x.sum(dtype=L.float32),
}
SIXTEEN_BIT_OPS = {**EXACT, **ROUNDED, **REDUCED}


@st.composite
def sixteen_bit_operands(draw, low: str):
    """x: a 16-bit (3, 4) tensor of entries of one magnitude (so sums do not cancel below a
    rounding); y: an operand of a drawn kind."""
    scale = draw(st.sampled_from([2.0**-12, 2.0**-3, 1.0, 2.0**7, 2.0**12]))
    x = ("x", low, np.array(draw(leaf_arrays((3, 4)))) * scale)
    kind = draw(
        st.sampled_from(["16-bit", "other 16-bit", "float32", "float64", "0-d", "int", "number"])
    )
    other = {"16-bit": low, "other 16-bit": LOW[1 - LOW.index(low)]}.get(kind, kind)
    if kind == "number":
        return x, draw(st.sampled_from([2, -0.5, 1.1, 3.0, 1e-3, 300]))
    if kind == "int":
        return x, (
            "y",
            "int64",
            np.array(draw(st.lists(st.integers(-5, 5), min_size=4, max_size=4))),
        )
    if kind == "0-d":
        return x, (
            "y",
            draw(st.sampled_from(FLOATS)),
            np.array(draw(st.sampled_from([0.5, -1.75, 3.0]))),
        )
    return x, ("y", other, np.array(draw(leaf_arrays((4,)))) * 1.5)


def as_tensor(lib, operand):
    if not isinstance(operand, tuple):
        return operand
    _, dtype, array = operand
    return lib.tensor(array, dtype=getattr(lib, dtype))


@fuzz_settings(200)
@given(data=st.data(), op=st.sampled_from(sorted(SIXTEEN_BIT_OPS)), low=st.sampled_from(LOW))
def test_sixteen_bit_ops_agree_with_torch(data, op, low):
    x, y = data.draw(sixteen_bit_operands(low))
    call = SIXTEEN_BIT_OPS[op]
    ours = outcome(call, sg, as_tensor(sg, x), as_tensor(sg, y))
    theirs = outcome(call, torch, as_tensor(torch, x), as_tensor(torch, y))
    what = f"{op} of {low} x {x[2].tolist()} with {y}"
    if raised_alike(ours, theirs, what):
        return
    if isinstance(theirs, tuple):  # (max(dim): values, indices)
        ours, theirs = ours[0], theirs[0]
    assert name(ours.dtype) == name(theirs.dtype), f"{what}: {ours.dtype} != {theirs.dtype}"
    if op in EXACT:
        actual, expected = to_numpy(ours), to_numpy(theirs)
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    eps = EPS.get(name(theirs.dtype), 0.0)
    if op in ROUNDED:
        assert_near(ours, theirs, 2 * eps, what)
        return
    magnitude = np.abs(x[2]).sum() * max(np.abs(x[2]).max(), 1.0)  # (products too)
    actual, expected = to_numpy(ours), to_numpy(theirs)
    np.testing.assert_allclose(
        actual, expected, rtol=2 * eps, atol=2**-20 * magnitude, err_msg=what
    )


# ---- GradScaler over random steps -------------------------------------------------------------

OPTIMIZERS = {
    "sgd": lambda lib, groups: lib.optim.SGD(groups, lr=0.125),
    "sgd momentum": lambda lib, groups: lib.optim.SGD(groups, lr=0.25, momentum=0.5),
    "sgd nesterov": lambda lib, groups: lib.optim.SGD(
        groups, lr=0.125, momentum=0.5, nesterov=True
    ),
    "adam": lambda lib, groups: lib.optim.Adam(groups, lr=2.0**-6),
    "adamw": lambda lib, groups: lib.optim.AdamW(groups, lr=0.01),
    "rmsprop": lambda lib, groups: lib.optim.RMSprop(groups, lr=2.0**-7),
}
GRADIENTS = [0.0, 0.5, -1.25, 3.0, 1e-3, 2.0**20, float("inf"), float("-inf"), float("nan")]


@st.composite
def scaler_steps(draw):
    """A step: each of three parameters' gradients (before scaling), whether to unscale and
    clip, to round-trip the scaler through state_dict first, or to pass update a new scale."""
    grads = [draw(st.lists(st.sampled_from(GRADIENTS), min_size=n, max_size=n)) for n in (3, 2, 1)]
    clip = draw(st.sampled_from([None, None, 0.5, 10.0]))
    reload = draw(st.integers(0, 5)) == 0
    new_scale = draw(st.sampled_from([None] * 6 + [4.0, 2.0**20]))
    return grads, clip, reload, new_scale


def run_scaler(lib, settings: dict, optimizer: str, two: bool, dtype: str, steps: list):
    """The scale, the parameters and the unscaled gradients after each step: three parameters
    of ``dtype`` in two param groups of one optimizer (lr halved in the second), or one
    optimizer each."""
    values = ([1.0, -2.0, 0.5], [0.25, 4.0], [-1.0])
    params = [lib.nn.Parameter(lib.tensor(v, dtype=getattr(lib, dtype))) for v in values]
    make = OPTIMIZERS[optimizer]
    if two:
        optimizers = [make(lib, params[:2]), make(lib, params[2:])]
    else:
        optimizers = [make(lib, [{"params": params[:2]}, {"params": params[2:]}])]
        optimizers[0].param_groups[1]["lr"] /= 2
    scaler = lib.amp.GradScaler("cpu", **settings)
    trajectory = [scaler.get_scale()]
    for grads, clip, reload, new_scale in steps:
        if reload:
            state = scaler.state_dict()
            scaler = lib.amp.GradScaler("cpu", **settings)
            scaler.load_state_dict(state)
        for opt in optimizers:
            opt.zero_grad()
        loss = sum((p * lib.tensor(g, dtype=p.dtype)).sum() for p, g in zip(params, grads))
        scaler.scale(loss).backward()
        if clip is not None:
            for opt in optimizers:
                scaler.unscale_(opt)
            lib.nn.utils.clip_grad_norm_(params, clip)
        for opt in optimizers:
            scaler.step(opt)
        scaler.update(new_scale)
        state = {k: float(v) for k, v in scaler.state_dict().items()}
        values = [to_numpy(p) for p in params]
        unscaled = [to_numpy(p.grad) for p in params]
        trajectory.append((scaler.get_scale(), state, values, unscaled))
    return trajectory


@fuzz_settings(60)
@given(
    init_scale=st.sampled_from([1.0, 2.0**10, 2.0**16, 2.0**30, 3.0e38]),
    growth_factor=st.sampled_from([2.0, 1.5, 4.0, 1.0001]),
    backoff_factor=st.sampled_from([0.5, 0.25, 0.9, 0.3]),
    growth_interval=st.integers(1, 3),
    enabled=st.sampled_from([True, True, True, False]),
    optimizer=st.sampled_from(sorted(OPTIMIZERS)),
    two=st.booleans(),
    dtype=st.sampled_from(["float32", "float32", "bfloat16", "float16"]),
    steps=st.lists(scaler_steps(), min_size=1, max_size=6),
)
def test_grad_scaler_steps_agree_with_torch(
    init_scale,
    growth_factor,
    backoff_factor,
    growth_interval,
    enabled,
    optimizer,
    two,
    dtype,
    steps,
):
    settings = {
        "init_scale": init_scale,
        "growth_factor": growth_factor,
        "backoff_factor": backoff_factor,
        "growth_interval": growth_interval,
        "enabled": enabled,
    }
    ours = outcome(run_scaler, sg, settings, optimizer, two, dtype, steps)
    theirs = outcome(run_scaler, torch, settings, optimizer, two, dtype, steps)
    what = f"{settings} {optimizer} {'two optimizers' if two else 'two groups'} {dtype} {steps}"
    # (float16 gradients: both raise "Attempting to unscale FP16 gradients.")
    if raised_alike(ours, theirs, what):
        return
    assert ours[0] == theirs[0], f"{what}: initial scale"
    for i, (mine, its) in enumerate(zip(ours[1:], theirs[1:])):
        (scale, state, values, grads), (scale_t, state_t, values_t, grads_t) = mine, its
        where = f"{what}: step {i}"
        assert scale == scale_t, f"{where}: scale {scale} != {scale_t}"
        assert state == state_t, f"{where}: state_dict {state} != {state_t}"
        # the gradients (unscaled or still scaled) and the parameters, an ulp or so apart per
        # step where PyTorch's update fuses a multiply-add (docs/amp.md, GradScaler)
        rtol = max(1e-5, 2 * EPS[dtype]) * (i + 1)
        for v, v_t in zip(grads + values, grads_t + values_t):
            np.testing.assert_allclose(v, v_t, rtol=rtol, atol=rtol / 10, err_msg=where)
