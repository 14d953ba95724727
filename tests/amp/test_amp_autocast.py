"""autocast against torch.autocast: the policy column of the op table, casts, caching, nesting."""

import contextlib
import threading
import warnings

import ml_dtypes
import numpy as np
import pytest
import torch
from op_table import OPS
from oracle import DTYPES, assert_close

import scratchgrad as sg
from scratchgrad.autograd.autocast import POLICY

LOW = ["bfloat16", "float16"]  # DTYPES and TOLERANCE (tests/oracle.py) have their pairs


def _inputs(op):
    rng = np.random.default_rng(0)
    count = op.call.__code__.co_argcount - 1
    domains = op.domain if isinstance(op.domain, tuple) else (op.domain,) * count
    return [d(rng, s) for d, s in zip(domains, op.check_shapes[:count])]


# The rows where we depart from PyTorch under autocast on purpose (docs/amp.md lists them)
REFUSED = {"linalg_matrix_exp"}  # a 16-bit matrix_exp raises: PyTorch's CPU result overflows
KEPT_FLOAT32 = {"linalg_pinv", "linalg_pinv_wide"}  # PyTorch's composite rounds its last product
# PyTorch's backward of a sparse mm raises under autocast ("expected m1 and m2 to have the same
# dtype"): the forward is compared, the gradients are not
NO_TORCH_BACKWARD = {"sparse_mm"}


@pytest.mark.parametrize("low", LOW)
@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_every_op_gives_torchs_dtype_and_values_under_autocast(op, low):
    arrays = _inputs(op)
    ours = [sg.tensor(a, dtype=sg.float32, requires_grad=op.grad) for a in arrays]
    theirs = [torch.tensor(a, dtype=torch.float32, requires_grad=op.grad) for a in arrays]
    with sg.autocast("cpu", dtype=DTYPES[low][0]):
        if op.name in REFUSED:
            with pytest.raises(RuntimeError, match="Low precision dtypes not supported"):
                op.call(sg, *ours)
            return
        out = op.call(sg, *ours)
    # a row kept in float32 is PyTorch's float32 result (its backward of the mixed composite
    # raises under autocast: "expected m1 and m2 to have the same dtype")
    kept = op.name in KEPT_FLOAT32
    with torch.autocast("cpu", dtype=DTYPES[low][1], enabled=not kept):
        expected = op.call(torch, *theirs)
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1], op.name
    assert_close(out, expected, low, f"{op.name} under autocast")
    if op.grad and expected.dtype.is_floating_point and op.name not in NO_TORCH_BACKWARD:
        out.float().sum().backward()
        expected.float().sum().backward()
        for x, t in zip(ours, theirs):
            if t.grad is None:  # an input read only for its shape (the loss targets' signs)
                assert x.grad is None, op.name
                continue
            assert x.grad.dtype == sg.float32  # parameters keep float32 gradients
            assert_close(x.grad, t.grad, low, f"{op.name} gradient under autocast")


def test_the_policy_covers_pytorchs_cpu_lists_for_the_ops_we_have():
    lower = {"matmul", "linear", "conv1d", "conv2d", "scaled_dot_product_attention"}
    to_float32 = {"mse_loss", "l1_loss", "huber_loss", "nll_loss", "cross_entropy", "prod", "eig"}
    to_float32 |= {"eigvals", "geqrf", "ormqr"}
    assert {name for name, p in POLICY.items() if p == "lower"} >= lower
    assert {name for name, p in POLICY.items() if p == "float32"} >= to_float32


@pytest.mark.parametrize("low", LOW)
def test_attention_runs_low_with_a_float_mask_as_torch(low):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 4)) for _ in range(3))
    mask = rng.standard_normal((3, 3))
    outs = []
    for lib, region in ((sg, sg.autocast), (torch, torch.autocast)):
        with region("cpu", dtype=getattr(lib, low)):
            args = [lib.tensor(a, dtype=lib.float32) for a in (q, k, v, mask)]
            outs.append(lib.nn.functional.scaled_dot_product_attention(*args[:3], args[3]))
    assert str(outs[0].dtype).split(".")[-1] == str(outs[1].dtype).split(".")[-1] == low
    assert_close(outs[0], outs[1], low, "attention under autocast")


def _layer_and_input():
    sg.manual_seed(0)
    return sg.nn.Linear(4, 3), sg.randn(2, 4)


@pytest.mark.parametrize("low", LOW)
def test_index_copy_promotes_mixed_inputs_and_its_in_place_form_does_not_as_torch(low):
    rng = np.random.default_rng(3)
    x, source = rng.standard_normal((2, 3)), rng.standard_normal((2, 2))
    results = []
    for lib in (sg, torch):
        ours = lib.tensor(x, dtype=lib.float32)
        theirs = lib.tensor(source, dtype=getattr(lib, low), requires_grad=True)
        index = lib.tensor([2, 0])
        with lib.autocast("cpu", dtype=getattr(lib, low)):
            out = ours.index_copy(1, index, theirs)
            with pytest.raises(RuntimeError, match="expected to have the same dtype"):
                ours.index_copy_(1, index, theirs)
            with pytest.raises(RuntimeError, match="expected to have the same dtype"):
                ours.index_copy(1, index, theirs.detach().double())
        (out * lib.arange(6.0).reshape(2, 3)).sum().backward()
        results.append((out, theirs.grad))
    (out, grad), (expected, expected_grad) = results
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1] == "float32"
    assert str(grad.dtype).split(".")[-1] == str(expected_grad.dtype).split(".")[-1] == low
    assert_close(out, expected, low, "index_copy under autocast")
    assert_close(grad, expected_grad, low, "its source's gradient")


def test_layers_run_low_losses_in_float32_and_parameters_stay_float32():
    layer, x = _layer_and_input()
    with sg.autocast("cpu", dtype=sg.bfloat16):
        out = layer(x)
        loss = sg.nn.functional.cross_entropy(out, sg.tensor([0, 2]))
    loss.backward()
    assert (out.dtype, loss.dtype) == (sg.bfloat16, sg.float32)
    assert layer.weight.dtype == layer.weight.grad.dtype == sg.float32


def test_float64_and_integer_tensors_are_never_cast():
    x = sg.randn(2, 3, dtype=sg.float64)
    with sg.autocast("cpu"):
        assert (x @ x.T).dtype == sg.float64
        assert (sg.ones(2, 2, dtype=sg.int64) @ sg.ones(2, 2, dtype=sg.int64)).dtype == sg.int64


def test_an_inner_disabled_region_runs_in_full_precision_and_the_outer_resumes():
    layer, x = _layer_and_input()
    with sg.autocast("cpu"):
        with sg.autocast("cpu", enabled=False):
            assert layer(x).dtype == sg.float32
        assert layer(x).dtype == sg.bfloat16
    assert layer(x).dtype == sg.float32


def _mm_dtype_in_regions(lib, *regions):
    """The dtype of a float32 matrix product inside the nested ``regions`` (device, kwargs),
    and the autocast dtype the innermost reports."""
    with contextlib.ExitStack() as stack:
        for device, kwargs in regions:
            stack.enter_context(lib.autocast(device, **kwargs))
        dtype = (lib.get_autocast_dtype if lib is torch else lib.amp.get_autocast_dtype)("cpu")
        return str(lib.ones(2, 2).mm(lib.ones(2, 2)).dtype).split(".")[-1], str(dtype)


NESTINGS = {
    "an inner region without a dtype takes the outer's": [
        ("cpu", {"dtype": "float16"}),
        ("cpu", {}),
    ],
    "a disabled region keeps its dtype": [("cpu", {"dtype": "float16", "enabled": False})],
    "through a disabled region": [
        ("cpu", {"dtype": "float16"}),
        ("cpu", {"enabled": False}),
        ("cpu", {}),
    ],
    "an unsupported dtype is kept, disabled": [("cpu", {"dtype": "float32"}), ("cpu", {})],
    "another device's region leaves the CPU's on": [
        ("cpu", {}),
        ("cuda", {"enabled": False}),
    ],
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", NESTINGS)
def test_nested_regions_take_their_dtype_and_state_as_torch(name):
    def regions(lib):
        return [
            (d, {k: getattr(lib, v) if k == "dtype" else v for k, v in kw.items()})
            for d, kw in NESTINGS[name]
        ]

    ours = _mm_dtype_in_regions(sg, *regions(sg))
    theirs = _mm_dtype_in_regions(torch, *regions(torch))
    assert ours == tuple(t.replace("torch.", "scratchgrad.") for t in theirs), name


def test_a_bad_device_type_or_a_decorated_non_callable_raise_as_torch():
    for device_type in ("cpu", "cuda", "mps", "xpu", "meta"):
        available = torch.amp.is_autocast_available(device_type)
        assert sg.amp.is_autocast_available(device_type) == available, device_type
    for lib in (sg, torch):
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            lib.autocast(lib.bfloat16)
        with pytest.raises(RuntimeError):  # (PyTorch's message is about the meta dtype)
            lib.autocast("meta")
        with pytest.raises(TypeError, match="requires a callable"):
            lib.autocast("cpu")(3)


def test_autocast_is_a_decorator_and_thread_local():
    layer, x = _layer_and_input()
    seen = []

    @sg.autocast("cpu", dtype=sg.float16)
    def forward():
        thread = threading.Thread(target=lambda: seen.append(layer(x).dtype))
        thread.start()
        thread.join()
        return layer(x).dtype

    assert forward() == sg.float16
    assert seen == [sg.float32]  # another thread is not in the region


def test_a_weight_is_cast_once_per_region_and_again_after_it_changes():
    layer, x = _layer_and_input()
    casts = []
    original = sg.Tensor.to

    def counting_to(self, *args, **kwargs):
        casts.append(self is layer.weight)
        return original(self, *args, **kwargs)

    sg.Tensor.to = counting_to
    try:
        with sg.autocast("cpu"):
            first = layer(x)
            layer(x)
            assert casts.count(True) == 1  # the second call reused the cast weight
            with sg.no_grad():
                layer.weight.mul_(2)  # an in-place change bumps the version: cast again
            second = layer(x)
            assert casts.count(True) == 2
    finally:
        sg.Tensor.to = original
    w, b = (torch.tensor(p.detach().numpy()) for p in (layer.weight, layer.bias))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = torch.nn.functional.linear(torch.tensor(x.numpy()), w, b)
    second, first = second.detach().float().numpy(), first.detach().float().numpy()
    np.testing.assert_allclose(second, expected.float().numpy(), rtol=3e-2, atol=3e-2)
    assert not np.allclose(first, second)


def test_a_cast_made_under_no_grad_is_not_reused_with_grad():
    layer, x = _layer_and_input()
    with sg.autocast("cpu"):
        with sg.no_grad():
            layer(x)
        layer(x).float().sum().backward()
    assert layer.weight.grad is not None and layer.weight.grad.numpy().any()


def test_unsupported_devices_and_dtypes_warn_and_disable_as_pytorch():
    layer, x = _layer_and_input()
    with pytest.warns(UserWarning, match="cuda"), sg.autocast("cuda"):
        assert layer(x).dtype == sg.float32
    with pytest.warns(UserWarning, match="float64"), sg.autocast("cpu", dtype=sg.float64):
        assert layer(x).dtype == sg.float32


def test_other_spellings_of_autocast():
    assert sg.amp.autocast is sg.autocast
    with pytest.warns(FutureWarning, match=r"`torch.cpu.amp.autocast\(args...\)` is deprecated"):
        region = sg.cpu.amp.autocast()
    with region:
        assert sg.amp.is_autocast_enabled("cpu")
        assert sg.amp.get_autocast_dtype("cpu") == sg.bfloat16
    assert not sg.amp.is_autocast_enabled("cpu")


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("enabled", [True, False])
def test_torch_cpu_amp_takes_its_old_positional_arguments_as_torch(enabled):
    dtypes, scales = [], []
    for lib in (sg, torch):
        with lib.cpu.amp.autocast(enabled, lib.float16):
            dtypes.append(str(lib.ones(2, 2).mm(lib.ones(2, 2)).dtype).split(".")[-1])
        scaler = lib.cpu.amp.GradScaler(2.0**10, 3.0, 0.25, 5, enabled)
        scales.append((scaler.get_scale(), scaler.is_enabled(), scaler.state_dict()))
    assert dtypes[0] == dtypes[1] == ("float16" if enabled else "float32")
    assert scales[0] == scales[1]


def test_custom_fwd_casts_inputs_and_custom_bwd_runs_in_the_forwards_state():
    states = []

    class Scale(sg.autograd.Function):
        @staticmethod
        @sg.amp.custom_fwd(device_type="cpu", cast_inputs=sg.float32)
        def forward(ctx, x):
            states.append((x.dtype, sg.amp.is_autocast_enabled()))
            return x * 2

        @staticmethod
        @sg.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            states.append(sg.amp.is_autocast_enabled())
            return grad * 2

    x = sg.ones(3, requires_grad=True)
    with sg.autocast("cpu"):
        y = Scale.apply(x.to(sg.bfloat16))
    y.sum().backward()
    assert states == [(np.dtype("float32"), False), True]
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


# ---- numerics -------------------------------------------------------------------------------


def test_bfloat16_rounds_to_nearest_even_as_pytorch_on_a_million_values():
    rng = np.random.default_rng(0)
    values = np.concatenate(
        [rng.standard_normal(500_000) * 10.0 ** rng.integers(-30, 30, 500_000), rng.random(500_000)]
    ).astype(np.float32)
    ours = sg.tensor(values).to(sg.bfloat16).numpy().view(np.uint16)
    theirs = torch.tensor(values).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(ours, theirs)
    assert np.array_equal(ours, values.astype(ml_dtypes.bfloat16).view(np.uint16))


@pytest.mark.parametrize("low", LOW)
def test_16_bit_sums_accumulate_in_float32(low):
    ones = sg.ones(10_000, dtype=DTYPES[low][0])
    rounded = float(np.array(10_000.0, np.float32).astype(ones.dtype))  # 9984 in bfloat16
    assert ones.sum().item() == torch.ones(10_000, dtype=DTYPES[low][1]).sum().item() == rounded
    assert ones.reshape(100, 100).mean(0).float().numpy().tolist() == [1.0] * 100


@pytest.mark.parametrize("low", LOW)
def test_16_bit_products_are_float32_gemms_rounded_once(low):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((64, 300)), rng.standard_normal((300, 32))
    a16, b16 = sg.tensor(a, dtype=DTYPES[low][0]), sg.tensor(b, dtype=DTYPES[low][0])
    ours = (a16 @ b16).double().numpy()
    exact = a16.double().numpy() @ b16.double().numpy()
    # within one rounding to 16 bits of the exact product (a 16-bit running sum is far off)
    half_ulp = 2.0 ** -(9 if low == "bfloat16" else 12)
    np.testing.assert_allclose(ours, exact, rtol=2 * half_ulp, atol=1e-6)


def _spd(lib, a):
    """A symmetric positive-definite matrix made of ``a`` (for the Cholesky family)."""
    return a @ a.mT + 3 * lib.eye(a.shape[-1], dtype=a.dtype)


# Ops on PyTorch's CPU autocast float32 list that raised on 16-bit inputs (the linear algebra),
# or kept the input's dtype (trace, the reflect and replicate pads, fractional max pooling,
# local_response_norm of 4 dims, through avg_pool3d): each on a 16-bit (3, 3) leaf
FLOAT32_LIST = {
    "trace": lambda lib, a: lib.trace(a),
    "polar": lambda lib, a: lib.view_as_real(lib.polar(a.abs(), a)),
    "view_as_complex": lambda lib, a: lib.view_as_real(lib.view_as_complex(a[:, :2])).sum(-1),
    "quantile": lambda lib, a: lib.quantile(a, 0.3, dim=0),
    "nanquantile": lambda lib, a: lib.nanquantile(a, 0.7),
    "inverse": lambda lib, a: lib.inverse(_spd(lib, a)),
    "linalg.inv_ex": lambda lib, a: lib.linalg.inv_ex(_spd(lib, a))[0],
    "matrix_power(-1)": lambda lib, a: lib.linalg.matrix_power(_spd(lib, a), -1),
    "matrix_power(-2)": lambda lib, a: lib.linalg.matrix_power(_spd(lib, a), -2),
    "linalg.solve": lambda lib, a: lib.linalg.solve(_spd(lib, a), a[:, :1]),
    "linalg.tensorsolve": lambda lib, a: lib.linalg.tensorsolve(_spd(lib, a), a[0]),
    "linalg.tensorinv": lambda lib, a: lib.linalg.tensorinv(_spd(lib, a), ind=1),
    "linalg.cholesky": lambda lib, a: lib.linalg.cholesky(_spd(lib, a)),
    "linalg.cholesky_ex": lambda lib, a: lib.linalg.cholesky_ex(_spd(lib, a))[0],
    "cholesky": lambda lib, a: lib.cholesky(_spd(lib, a)),
    "cholesky_solve": lambda lib, a: lib.cholesky_solve(a, lib.linalg.cholesky(_spd(lib, a))),
    "cholesky_inverse": lambda lib, a: lib.cholesky_inverse(lib.linalg.cholesky(_spd(lib, a))),
    "linalg.eigvalsh": lambda lib, a: lib.linalg.eigvalsh(_spd(lib, a)),
    "linalg.eigh": lambda lib, a: lib.linalg.eigh(_spd(lib, a))[0],
    "linalg.svdvals": lambda lib, a: lib.linalg.svdvals(a),
    "svd": lambda lib, a: lib.svd(_spd(lib, a))[1],
    "linalg.qr": lambda lib, a: lib.linalg.qr(_spd(lib, a))[1].abs(),
    "qr": lambda lib, a: lib.qr(_spd(lib, a))[1].abs(),
    "pinverse": lambda lib, a: lib.pinverse(_spd(lib, a)),
    "triangular_solve": lambda lib, a: lib.triangular_solve(a, _spd(lib, a).triu())[0],
    "lu": lambda lib, a: lib.lu(_spd(lib, a))[0],
    "householder_product": lambda lib, a: lib.linalg.householder_product(a, a[0, :2] / 4),
    "reflect pad 1-d": lambda lib, a: lib.nn.functional.pad(a[None], (2, 1), mode="reflect"),
    "reflect pad 2-d": lambda lib, a: lib.nn.functional.pad(a[None], (1, 1, 2, 0), "reflect"),
    "replicate pad 3-d": lambda lib, a: lib.nn.functional.pad(a[None, None], (1,) * 6, "replicate"),
    "fractional_max_pool2d": lambda lib, a: lib.nn.functional.fractional_max_pool2d(
        a[None], 2, output_size=2, _random_samples=lib.zeros(1, 1, 2, dtype=a.dtype)
    ),
    "local_response_norm 4-d": lambda lib, a: lib.nn.functional.local_response_norm(
        a.reshape(1, 3, 3, 1), 2
    ),
}


@pytest.mark.parametrize("low", LOW)
@pytest.mark.parametrize("name", FLOAT32_LIST)
def test_ops_on_pytorchs_float32_list_run_in_float32_as_torch(name, low):
    a = np.random.default_rng(1).standard_normal((3, 3))
    call, results = FLOAT32_LIST[name], []
    for lib in (sg, torch):
        leaf = lib.tensor(a, dtype=getattr(lib, low), requires_grad=True)
        with warnings.catch_warnings(), lib.autocast("cpu", dtype=getattr(lib, low)):
            warnings.simplefilter("ignore")  # (torch.lu, torch.cholesky, ... are deprecated)
            out = call(lib, leaf)
        (out * lib.arange(float(out.numel())).reshape(out.shape)).sum().backward()
        results.append((out, leaf.grad))
    (out, grad), (expected, expected_grad) = results
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1], name
    assert_close(out, expected, "float32", name, tolerance=(1e-4, 1e-4))
    assert str(grad.dtype).split(".")[-1] == low
    assert_close(grad, expected_grad, low, f"{name}: gradient")


@pytest.mark.parametrize("low", LOW)
@pytest.mark.parametrize(
    "dtypes",
    [
        ("bfloat16", "bfloat16"),
        ("float16", "float16"),
        ("float32", "bfloat16"),
        ("bfloat16", "float32"),
        ("float16", "float32"),
        ("float64", "float16"),
        ("bfloat16", "float64"),
        ("int64", "float16"),
        ("float16", "bfloat16"),
        ("float32", "float64"),
    ],
)
def test_cat_stack_and_index_copy_promote_or_refuse_as_torchs_prioritize(dtypes, low):
    """PyTorch's promote ops refuse a tensor of the other 16-bit dtype met before a float32 one
    (even cat of float16 tensors alone under bfloat16 autocast)."""
    calls = {
        "cat": lambda lib, x, y: lib.cat([x, y]),
        "stack": lambda lib, x, y: lib.stack([x, y]),
        "index_copy": lambda lib, x, y: x.index_copy(0, lib.tensor([1]), y[:1]),
    }
    for op, call in calls.items():
        results = []
        for lib in (sg, torch):
            x, y = (lib.ones(2, dtype=getattr(lib, d)) for d in dtypes)
            with lib.autocast("cpu", dtype=getattr(lib, low)):
                try:
                    results.append(str(call(lib, x, y).dtype).split(".")[-1])
                except RuntimeError:
                    results.append("raised")
        assert results[0] == results[1], (op, dtypes, low, results)


@pytest.mark.parametrize("low", LOW)
def test_instance_norm_of_a_sixteen_bit_input_with_float32_weights_keeps_its_dtype(low):
    """As PyTorch's (its batch_norm of N*C channels takes the repeated weights): the affine in
    float32, rounded once; it was float32, from the weights applied after."""
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((2, 3, 5)), rng.standard_normal(3), rng.standard_normal(3)
    results = []
    for lib in (sg, torch):
        leaves = (
            lib.tensor(x, dtype=getattr(lib, low), requires_grad=True),
            lib.tensor(w, dtype=lib.float32, requires_grad=True),
            lib.tensor(b, dtype=lib.float32, requires_grad=True),
        )
        out = lib.nn.functional.instance_norm(leaves[0], weight=leaves[1], bias=leaves[2])
        (out.float() * lib.arange(30.0).reshape(2, 3, 5)).sum().backward()
        results.append((out, *(t.grad for t in leaves)))
    for ours, theirs in zip(*results):
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        assert_close(ours, theirs, low)


def test_torch_level_is_autocast_enabled_asks_cuda_when_no_device_is_named():
    with sg.autocast("cpu", dtype=sg.float16), torch.autocast("cpu", dtype=torch.float16):
        assert sg.is_autocast_enabled() == torch.is_autocast_enabled() is False
        assert sg.is_autocast_enabled("cpu") == torch.is_autocast_enabled("cpu") is True
        assert str(sg.get_autocast_dtype("cpu")).split(".")[-1] == "float16"
        assert torch.get_autocast_dtype("cpu") == torch.float16


@pytest.mark.parametrize("op", ["cat", "stack"])
def test_cat_and_stack_with_out_are_not_autocast_as_torchs(op):
    """PyTorch's out= overloads of cat and stack are off its autocast lists: ordinary
    promotion, even of the tensors prioritize would refuse."""
    results = []
    for lib in (sg, torch):
        joined = [lib.ones(2, dtype=lib.bfloat16), lib.ones(2)]
        out = lib.empty(4) if op == "cat" else lib.empty(2, 2)
        with lib.autocast("cpu", dtype=lib.float16):
            results.append(getattr(lib, op)(joined, out=out))
    assert str(results[0].dtype).split(".")[-1] == str(results[1].dtype).split(".")[-1]
    assert_close(results[0], results[1], "float32")


OUT_CALLS = {
    "mm": lambda lib, a, out: lib.mm(a, a.mT, out=out),
    "matmul": lambda lib, a, out: lib.matmul(a, a.mT, out=out),
    "addmm": lambda lib, a, out: lib.addmm(a[:, :3], a, a.mT, out=out),
    "prod": lambda lib, a, out: lib.prod(a.bfloat16(), 0, out=out.bfloat16())[:3],
    "linalg.inv_ex": lambda lib, a, out: lib.linalg.inv(a[:, :3] + 3 * lib.eye(3), out=out),
}


@pytest.mark.parametrize("op", OUT_CALLS)
def test_calls_with_out_are_not_autocast_as_torchs(op):
    """PyTorch's out= overloads are off its autocast lists: mm(a, b, out=o) of float32
    tensors is float32's product (it was rounded to 16 bits, and matmul's raised)."""
    a = np.random.default_rng(0).standard_normal((3, 4))
    results = []
    for lib in (sg, torch):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            results.append(OUT_CALLS[op](lib, lib.tensor(a, dtype=lib.float32), lib.empty(3, 3)))
    assert str(results[0].dtype).split(".")[-1] == str(results[1].dtype).split(".")[-1]
    assert_close(results[0], results[1], "float32")
