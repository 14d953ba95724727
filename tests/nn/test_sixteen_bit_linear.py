"""16-bit ``linear`` against PyTorch's CPU kernels, bit for bit: addmm rounds the product and
the bias once, but an input of 3 or more dims that is not contiguous goes through matmul, whose
product is rounded before the bias is added. A batch-first GRU or float16 LSTM is such an input
(its time-major view): a quarter of their outputs were an ulp or more off."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

INPUTS = {  # shape, then the permutation that makes the input strided (None: as it is)
    "matrix": ((5, 16), None),
    "vector": ((16,), None),
    "contiguous batch": ((2, 3, 4, 16), None),
    "transposed batch": ((3, 6, 16), (1, 0, 2)),
    "permuted 4-d batch": ((2, 3, 4, 16), (1, 0, 2, 3)),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", INPUTS)
def test_sixteen_bit_linear_rounds_as_pytorch(name, dtype):
    shape, permutation = INPUTS[name]
    rng = np.random.default_rng(0)
    arrays = rng.standard_normal(shape), rng.standard_normal((12, 16)), rng.standard_normal(12)
    results = []
    for lib in (sg, torch):
        x, weight, bias = (lib.tensor(a).to(getattr(lib, dtype)) for a in arrays)
        x = x if permutation is None else x.permute(*permutation)
        results.append(lib.nn.functional.linear(x, weight, bias).float().numpy())
    np.testing.assert_array_equal(*results)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sixteen_bit_batch_first_gru_as_pytorch(dtype):
    x = np.random.default_rng(1).standard_normal((3, 6, 4))
    torch.manual_seed(0)
    grus = torch.nn.GRU(4, 3, num_layers=2, batch_first=True), sg.nn.GRU(4, 3, 2, batch_first=True)
    grus[1].load_state_dict({k: sg.tensor(v.numpy()) for k, v in grus[0].state_dict().items()})
    results = []
    for lib, gru in zip((torch, sg), grus):
        gru.to(getattr(lib, dtype))
        xi = lib.tensor(x).to(getattr(lib, dtype)).requires_grad_()
        out = gru(xi)[0]
        out.backward(lib.tensor(np.cos(np.arange(out.numel()))).reshape(out.shape).to(out.dtype))
        results.append([out.detach().float().numpy(), xi.grad.float().numpy()])
    for expected, ours in zip(*results):
        np.testing.assert_array_equal(ours, expected)


NORMALIZERS = {
    "layer_norm": lambda lib, x: lib.nn.functional.layer_norm(
        x, (16,), lib.full((16,), 1.5, dtype=x.dtype), lib.full((16,), 0.1, dtype=x.dtype)
    ),
    "softmax": lambda lib, x: lib.softmax(x, -1),
    "log_softmax": lambda lib, x: lib.log_softmax(x, -1),
}


@pytest.mark.parametrize("name", NORMALIZERS)
def test_sixteen_bit_linear_after_a_normalizer_of_a_strided_input_as_pytorch(name):
    # PyTorch's layer_norm, softmax and log_softmax return contiguous results whatever their
    # input's layout, so the linear after them rounds once (addmm); scratchgrad kept the input's
    # memory order, and its linear rounded as for a strided input (28% of the bits were off)
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(shape) for shape in ((4, 16, 12), (24, 16), (24,))]
    results = []
    for lib in (sg, torch):
        x, weight, bias = (lib.tensor(a).to(lib.bfloat16) for a in arrays)
        y = NORMALIZERS[name](lib, x.transpose(1, 2))
        assert y.is_contiguous()
        results.append(lib.nn.functional.linear(y, weight, bias).float().numpy())
    np.testing.assert_array_equal(*results)
