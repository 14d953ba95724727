"""16-bit mean, var, std and prod against PyTorch's CPU kernels, which sum a float16 or bfloat16
input in float32 and round the result once (std: after the square root), and whose var and
std gradients are 16-bit tensor steps, each rounded. Rounded twice (the sum, then the
quotient), a quarter of the means were an ulp off; computed in float32, half of var's
gradients were."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

X = (np.random.default_rng(5).standard_normal((40, 30)) * 3).astype(np.float32)
REDUCTIONS = {
    "mean over rows": lambda m, x: x.mean(1),
    "mean of all": lambda m, x: x.mean(),
    "var over columns": lambda m, x: x.var(0),
    "var of all": lambda m, x: x.var(),
    "std over rows": lambda m, x: x.std(1, correction=0),
    "var_mean": lambda m, x: m.stack(m.var_mean(x, 1)),
    "std_mean": lambda m, x: m.stack(m.std_mean(x, 0)),
}


def _value_and_grad(lib, name, dtype):
    x = lib.tensor(X).to(getattr(lib, dtype)).requires_grad_()
    out = REDUCTIONS[name](lib, x)
    out.backward(lib.ones_like(out))
    return out.detach().float().numpy(), x.grad.float().numpy()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", REDUCTIONS)
def test_sixteen_bit_mean_var_and_std_are_pytorchs_bit_for_bit(name, dtype):
    for ours, theirs in zip(_value_and_grad(sg, name, dtype), _value_and_grad(torch, name, dtype)):
        np.testing.assert_array_equal(ours, theirs)


NEAR_ONE = (1 + 0.01 * np.random.default_rng(6).standard_normal((3, 200))).astype(np.float32)
PRODUCTS = {
    "prod over rows": lambda x: x.prod(1),
    "prod over rows, kept": lambda x: x.prod(-1, keepdim=True),
    "prod of all": lambda x: x.prod(),
    "prod of all, transposed": lambda x: x.T.prod(),  # (read in memory order, as PyTorch's)
    "prod over strided rows": lambda x: x.T.contiguous().T.prod(1),
    "prod over columns": lambda x: x.T.contiguous().prod(0),
    "prod of all, every other row": lambda x: x[::2].prod(),
    "prod of all, every other column": lambda x: x[:, ::2].prod(),
    "prod of all, broadcast rows": lambda x: x[:1].expand(4, -1).prod(),
    "prod of all, broadcast in": lambda x: x[0][None, None].expand(2, 1, -1).movedim(2, 0).prod(),
}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("length", [63, 64, 130, 200])
@pytest.mark.parametrize("name", PRODUCTS)
def test_sixteen_bit_prod_multiplies_in_pytorchs_order(name, length, dtype):
    """PyTorch multiplies 16-bit floats in 16 bits, each product rounded; along a dim of
    stride 1 its vectorized loop keeps 64 running products from 64 entries on, so that a
    product taken in order was off by up to 5% (float16) or 20% (bfloat16) of it. A product
    of all entries reads them in the order of the strides (x.T: as x), each run at stride 1
    through the vectorized loop into the product so far (flattened first, x[::2] was one run
    and x[:, ::2] went through it; 190 of 1000 random strided inputs were off)."""
    results = [
        PRODUCTS[name](lib.tensor(NEAR_ONE[:, :length]).to(getattr(lib, dtype))).float().numpy()
        for lib in (sg, torch)
    ]
    np.testing.assert_array_equal(*results)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_sixteen_bit_prod_of_all_under_vmap_is_pytorchs(dtype):
    """Each member's product of all entries, in PyTorch's order (the batch dim is not one
    of the runs: it raised ZeroDivisionError while the runs were read across it)."""
    results = [
        lib.func.vmap(lambda t: t[::2].prod())(lib.tensor(NEAR_ONE).to(getattr(lib, dtype)))
        .float()
        .numpy()
        for lib in (sg, torch)
    ]
    np.testing.assert_array_equal(*results)
