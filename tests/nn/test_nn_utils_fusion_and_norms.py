"""nn.utils' batch norm folding, total norms and the small helpers scripts call, against
torch.nn.utils."""

import warnings

import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad.nn import utils


def _copy_state(ours, theirs):
    ours.load_state_dict({k: sg.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})


def _trained_bn(lib, bn, features, rng):
    """A batch norm with running statistics and affine parameters away from their defaults."""
    bn.train()
    for _ in range(3):
        bn(lib.tensor(rng.standard_normal(features) * 3 + 1, dtype=lib.float32))
    with torch.no_grad() if lib is torch else sg.no_grad():
        bn.weight.mul_(1.5)
        bn.bias.add_(0.25)
    return bn.eval()


@pytest.mark.parametrize(
    "make, shape, transpose",
    [
        (lambda nn: (nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3)), (4, 2, 6, 6), False),
        (lambda nn: (nn.Conv1d(2, 3, 3, bias=False), nn.BatchNorm1d(3)), (4, 2, 7), False),
        (lambda nn: (nn.ConvTranspose2d(2, 3, 3), nn.BatchNorm2d(3)), (4, 2, 5, 5), True),
    ],
)
def test_fuse_conv_bn_eval_is_torchs_and_computes_bn_of_conv(make, shape, transpose):
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    t_conv, t_bn = make(torch.nn)
    conv, bn = make(sg.nn)
    stats_shape = (8, t_bn.num_features) + shape[2:]
    t_bn = _trained_bn(torch, t_bn, stats_shape, rng)
    _copy_state(conv, t_conv)
    _copy_state(bn, t_bn)
    t_conv.eval(), conv.eval(), bn.eval()
    fused = utils.fuse_conv_bn_eval(conv, bn, transpose)
    t_fused = torch.nn.utils.fuse_conv_bn_eval(t_conv, t_bn, transpose)
    assert fused is not conv and fused.weight is not conv.weight
    np.testing.assert_allclose(fused.weight.detach(), t_fused.weight.detach(), rtol=1e-6)
    np.testing.assert_allclose(fused.bias.detach(), t_fused.bias.detach(), rtol=1e-6, atol=1e-7)
    assert fused.weight.requires_grad and isinstance(fused.weight, sg.nn.Parameter)
    x = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(
        fused(sg.tensor(x)).detach(), bn(conv(sg.tensor(x))).detach(), rtol=1e-4, atol=1e-5
    )


def test_fuse_linear_bn_eval_is_torchs_and_refuses_training_mode():
    rng = np.random.default_rng(1)
    torch.manual_seed(0)
    t_lin, t_bn = torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)
    t_bn = _trained_bn(torch, t_bn, (8, 3), rng)
    lin, bn = sg.nn.Linear(4, 3), sg.nn.BatchNorm1d(3)
    _copy_state(lin, t_lin)
    _copy_state(bn, t_bn)
    lin.eval(), bn.eval(), t_lin.eval()
    fused = utils.fuse_linear_bn_eval(lin, bn)
    t_fused = torch.nn.utils.fuse_linear_bn_eval(t_lin, t_bn)
    np.testing.assert_allclose(fused.weight.detach(), t_fused.weight.detach(), rtol=1e-6)
    np.testing.assert_allclose(fused.bias.detach(), t_fused.bias.detach(), rtol=1e-6, atol=1e-7)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        utils.fuse_linear_bn_eval(lin.train(), bn)
    with pytest.raises(AssertionError, match="out_features must equal bn.num_features"):
        utils.fuse_linear_bn_eval(lin.eval(), sg.nn.BatchNorm1d(2).eval())


def test_get_total_norm_and_clip_grads_with_norm_are_clip_grad_norm_in_two_halves():
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s) for s in [(3,), (2, 2)]]
    for norm_type in [2.0, 1.0, float("inf")]:
        ours = [sg.tensor(a, requires_grad=True) for a in arrays]
        theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
        for xs in (ours, theirs):
            for x in xs:
                (x * x * 7).sum().backward()
        total = utils.get_total_norm([x.grad for x in ours], norm_type, foreach=True)
        t_total = torch.nn.utils.get_total_norm([t.grad for t in theirs], norm_type)
        np.testing.assert_allclose(total.numpy(), t_total.numpy(), rtol=1e-12)
        utils.clip_grads_with_norm_(ours, 1.0, total, foreach=False)
        torch.nn.utils.clip_grads_with_norm_(theirs, 1.0, t_total)
        for x, t in zip(ours, theirs):
            np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    assert utils.get_total_norm([]).item() == 0.0


@pytest.mark.parametrize("norm_type", [2.0, 3.0, 0.5])
def test_the_norm_of_one_entry_is_its_size_as_torchs(norm_type):
    """The norm of a gradient of one entry is its size, as PyTorch's: squaring 1e300 gave ours
    an infinite norm, and clip_grad_norm_ zeroed the gradient PyTorch scales to 1."""
    grads = []
    for m in (sg, torch):
        w = m.zeros(1, dtype=m.float64, requires_grad=True)
        w.grad = m.tensor([-1e300], dtype=m.float64)
        total = m.nn.utils.clip_grad_norm_([w], 1.0, norm_type, error_if_nonfinite=True)
        assert total.item() == 1e300
        grads.append(w.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-15)


def test_jitted_clipping_in_two_halves_reads_each_steps_gradients():
    model = sg.nn.Linear(3, 1)
    opt = sg.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        grads = [p.grad for p in model.parameters()]
        utils.clip_grads_with_norm_(model.parameters(), 0.5, utils.get_total_norm(grads))
        opt.step()

    twin = sg.nn.Linear(3, 1)
    twin.load_state_dict(model.state_dict())
    twin_opt = sg.optim.SGD(twin.parameters(), lr=0.1)
    jitted = sg.jit(step)
    for i in range(4):
        x = sg.tensor(np.full((2, 3), i + 1.0, np.float32))
        jitted(x)
        twin_opt.zero_grad()
        twin(x).pow(2).sum().backward()
        utils.clip_grad_norm_(twin.parameters(), 0.5)
        twin_opt.step()
    for a, b in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(a.detach(), b.detach(), rtol=1e-6)


def test_skip_init_stateless_and_memory_format_helpers():
    layer = utils.skip_init(sg.nn.Linear, 3, 2, bias=False)
    assert layer.weight.shape == (2, 3) and layer.bias is None
    with pytest.raises(RuntimeError, match="must support a 'device' arg"):
        utils.skip_init(sg.nn.ReLU)
    params = {"weight": sg.ones(2, 3)}
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        out = utils.stateless.functional_call(layer, params, (sg.ones(1, 3),))
    assert out.tolist() == [[3.0, 3.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert utils.convert_conv2d_weight_memory_format(layer, sg.channels_last) is layer
    with pytest.raises(TypeError, match="memory_format"):
        utils.convert_conv3d_weight_memory_format(layer, "channels_last_3d")


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_fusion_keeps_the_layers_dtypes_with_a_float64_batch_norm_as_torch(kind, bias):
    """The fused weight and bias took the batch norm's float64 (a bias-free conv's bias, and
    both of a linear layer's); PyTorch's keep the layer's float32."""
    fused = {}
    for lib in (sg, torch):
        if kind == "linear":
            layer, bn = lib.nn.Linear(2, 3, bias=bias), lib.nn.BatchNorm1d(3)
            fuse = lib.nn.utils.fusion.fuse_linear_bn_eval
        else:
            layer, bn = lib.nn.Conv1d(2, 3, 2, bias=bias), lib.nn.BatchNorm1d(3)
            fuse = lib.nn.utils.fusion.fuse_conv_bn_eval
        fused[lib] = fuse(layer.eval(), bn.double().eval())
    for name in ("weight", "bias"):
        ours, theirs = getattr(fused[sg], name), getattr(fused[torch], name)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1] == "float32"
        assert ours.requires_grad == theirs.requires_grad


def test_convert_conv_weight_memory_format_lays_out_the_weights_as_torch():
    seen = []
    for m in (sg, torch):
        net = m.nn.Sequential(
            m.nn.Conv2d(2, 3, 3),
            m.nn.Sequential(m.nn.ConvTranspose2d(3, 4, 2)),
            m.nn.Conv3d(2, 3, 3),
            m.nn.Linear(2, 2),
        )
        weight, values = net[0].weight, net[0].weight.tolist()
        assert m.nn.utils.convert_conv2d_weight_memory_format(net, m.channels_last) is net
        m.nn.utils.convert_conv3d_weight_memory_format(net, m.channels_last_3d)
        assert net[0].weight is weight and weight.tolist() == values
        with pytest.raises(RuntimeError) as error:
            m.nn.utils.convert_conv3d_weight_memory_format(net, m.channels_last)
        seen.append(([p.stride() for p in net.parameters()], str(error.value)))
    assert seen[0] == seen[1]
