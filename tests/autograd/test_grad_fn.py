"""Autograd introspection as PyTorch's: node names (``grad_fn.name()``, the tensor's repr),
``next_functions`` walking the graph, ``AccumulateGrad`` for leaves."""

import copy

import pytest
import torch

import scratchgrad as sg

F_OURS, F_TORCH = sg.nn.functional, torch.nn.functional

EXPRESSIONS = {
    "mul": lambda m, x, w: x * w.T,
    "mul_scalar": lambda m, x, w: x * 2,
    "add": lambda m, x, w: x + 1,
    "sub": lambda m, x, w: x - x,
    "div": lambda m, x, w: x / 3,
    "neg": lambda m, x, w: -x,
    "pow_scalar": lambda m, x, w: x**2,
    "exp": lambda m, x, w: x.exp(),
    "log": lambda m, x, w: x.abs().log(),
    "tanh": lambda m, x, w: x.tanh(),
    "sigmoid": lambda m, x, w: x.sigmoid(),
    "relu": lambda m, x, w: x.relu(),
    "sign": lambda m, x, w: x.sign(),
    "mm": lambda m, x, w: x @ w,
    "bmm": lambda m, x, w: m.bmm(m.stack([x, x]), m.stack([w, w])),
    "linear": lambda m, x, w: (F_OURS if m is sg else F_TORCH).linear(x, w.T, w[0]),
    # (a bias-less layer is mm; a batch or a vector goes through a view of the product)
    "linear_no_bias": lambda m, x, w: (F_OURS if m is sg else F_TORCH).linear(x, w.T),
    "linear_batch": lambda m, x, w: (F_OURS if m is sg else F_TORCH).linear(x[None], w.T, w[0]),
    "linear_batch_no_bias": lambda m, x, w: (F_OURS if m is sg else F_TORCH).linear(x[None], w.T),
    "linear_vector": lambda m, x, w: (F_OURS if m is sg else F_TORCH).linear(x[0], w.T, w[0]),
    "linear_vector_no_bias": lambda m, x, w: (F_OURS if m is sg else F_TORCH).linear(x[0], w.T),
    "sum": lambda m, x, w: x.sum(),
    "sum_dim": lambda m, x, w: x.sum(-1),
    "mean": lambda m, x, w: x.mean(),
    "mean_dim": lambda m, x, w: x.mean(1),
    "view": lambda m, x, w: x.reshape(-1),
    "flatten": lambda m, x, w: x.flatten(),
    "permute": lambda m, x, w: x.permute(1, 0),
    "unsqueeze": lambda m, x, w: x.unsqueeze(1),
    "expand": lambda m, x, w: x.expand(4, 2, 3),
    "select": lambda m, x, w: x[0],
    "select_column": lambda m, x, w: x[:, -1],
    "slice": lambda m, x, w: x[:, 1:],
    "index": lambda m, x, w: x[[0, 1]],
    "cat": lambda m, x, w: m.cat([x, x]),
    # views that share a primitive (Permute, Reshape, GetItem) carry the name of the op that
    # made them, as PyTorch's (they were PermuteBackward0, ViewBackward0, SelectBackward0...)
    "transpose": lambda m, x, w: x.transpose(0, 1),
    "transpose_0d": lambda m, x, w: x[0, 0].transpose(0, -1),
    "swapaxes": lambda m, x, w: x.swapaxes(0, 1),
    "T": lambda m, x, w: x.T,
    "mT": lambda m, x, w: x.mT,
    "mH": lambda m, x, w: x.mH,
    "H": lambda m, x, w: x.H,
    "t": lambda m, x, w: x.t(),
    "t_1d": lambda m, x, w: x[0].t(),
    "movedim": lambda m, x, w: x.movedim(0, 1),
    "squeeze": lambda m, x, w: x[:1].squeeze(),
    "squeeze_dim": lambda m, x, w: x[:1].squeeze(0),
    "squeeze_dims": lambda m, x, w: x[:1].squeeze((0, 1)),
    "unbind": lambda m, x, w: x.unbind(1)[2],
    "split": lambda m, x, w: x.split(2, 1)[1],
    "split_sizes": lambda m, x, w: x.split([1, 2], 1)[1],
    "chunk": lambda m, x, w: x.chunk(2)[0],
    "narrow": lambda m, x, w: x.narrow(1, 1, 1),
    "tensor_split": lambda m, x, w: x.tensor_split(2, 1)[0],
    "select_then_slice": lambda m, x, w: x[1, ::2],
    "slice_then_unsqueeze": lambda m, x, w: x[1:, None],
    "none_then_slice": lambda m, x, w: x[None, 1:],
    "whole_slices": lambda m, x, w: x[0:2, ...],
    "stack": lambda m, x, w: m.stack([x, x]),
    "atleast_3d": lambda m, x, w: m.atleast_3d(x),
    "repeat": lambda m, x, w: x.repeat(2, 1),
    "index_select": lambda m, x, w: x.index_select(1, m.tensor([0, 2])),
    "narrow_copy": lambda m, x, w: x.narrow_copy(1, 0, 2),
    "to_copy": lambda m, x, w: x.to(m.float64),
    "to_copy_same_dtype": lambda m, x, w: x.to(copy=True),
    "clone": lambda m, x, w: x.clone(),
    "contiguous": lambda m, x, w: x.T.contiguous(),
    "clone_complex": lambda m, x, w: (x * 1j).clone(),
    "log_softmax": lambda m, x, w: x.log_softmax(-1),
    "softmax": lambda m, x, w: x.softmax(-1),
    "cumprod": lambda m, x, w: x.cumprod(1),
    "gelu": lambda m, x, w: (F_OURS if m is sg else F_TORCH).gelu(x),
    "layer_norm": lambda m, x, w: (F_OURS if m is sg else F_TORCH).layer_norm(x, (3,), w[:, 0]),
    "softmax_backward": lambda m, x, w: m.autograd.grad(
        x.softmax(-1), x, x.detach(), create_graph=True
    )[0],
    "gelu_backward": lambda m, x, w: m.autograd.grad(
        (F_OURS if m is sg else F_TORCH).gelu(x).sum(), x, create_graph=True
    )[0],
    "amax": lambda m, x, w: x.amax(0),
    "max_of_all": lambda m, x, w: x.max(),
    "min_of_all": lambda m, x, w: x.min(),
    "median_of_all": lambda m, x, w: x.median(),
    "nanmedian_of_all": lambda m, x, w: x.nanmedian(),
    "where": lambda m, x, w: m.where(x > 0, x, 0.0),
    "mse_loss": lambda m, x, w: (F_OURS if m is sg else F_TORCH).mse_loss(x, x.detach() + 1),
    "cross_entropy": lambda m, x, w: (F_OURS if m is sg else F_TORCH).cross_entropy(
        x, m.tensor([0, 2])
    ),
}


def _inputs(m):
    x = m.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], requires_grad=True)
    w = m.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], requires_grad=True)
    return x, w


@pytest.mark.parametrize("name", EXPRESSIONS)
def test_node_names_match_torch(name):
    ours, theirs = EXPRESSIONS[name](sg, *_inputs(sg)), EXPRESSIONS[name](torch, *_inputs(torch))
    assert ours.grad_fn.name() == theirs.grad_fn.name()
    assert f"grad_fn=<{theirs.grad_fn.name()}>" in repr(ours)
    assert repr(ours.grad_fn).startswith(f"<{theirs.grad_fn.name()} object at 0x")


def _walk(node, depth=0):
    """The graph under ``node`` as nested (name, children) tuples, in next_functions order."""
    if node is None:
        return None
    name = "AccumulateGrad" if type(node).__name__ == "AccumulateGrad" else node.name()
    return name, tuple(_walk(n, depth + 1) for n, index in node.next_functions)


def test_next_functions_walks_the_graph_as_torch():
    """The blitz tutorial's walk: a linear layer, a ReLU and an MSE loss."""
    graphs = []
    for m in (sg, torch):
        x, w = _inputs(m)
        target = m.ones(2, 2)
        loss = (m.nn.functional.mse_loss((x @ w).relu(), target) * x.sum()).mean()
        graphs.append(_walk(loss.grad_fn))
    assert graphs[0] == graphs[1]


def test_accumulate_grad_holds_the_leaf_and_is_shared():
    x, w = _inputs(sg)
    y = x * w.T.detach().requires_grad_()
    (first, index), (second, _) = y.grad_fn.next_functions
    assert index == 0 and first.variable is x and second.variable.shape == (2, 3)
    assert y.grad_fn.next_functions[0][0] is first  # one node per leaf, as in PyTorch
    assert first.next_functions == () and repr(first).startswith("<AccumulateGrad object")
    assert (x * 2).grad_fn.next_functions[1] == (None, 0)  # no gradient flows to a number


def test_custom_function_is_named_as_torch():
    class Twice(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return 2 * x

        @staticmethod
        def backward(ctx, grad):
            return 2 * grad

    class TwiceTorch(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return 2 * x

        @staticmethod
        def backward(ctx, grad):
            return 2 * grad

    ours = Twice.apply(sg.ones(2, requires_grad=True)).grad_fn.name()
    assert ours == "TwiceBackward"
    assert (
        TwiceTorch.apply(torch.ones(2, requires_grad=True)).grad_fn.name() == "TwiceTorchBackward"
    )


def test_deepcopy_of_a_graph_result_is_refused_as_torch():
    # (scratchgrad copied the graph behind it; a backward from the copy then reached copied
    # leaves, and the original's gradients stayed None)
    for m in (torch, sg):
        x = m.ones(2, requires_grad=True)
        for result in (x * 2, x[0]):
            with pytest.raises(RuntimeError, match="graph leaves"):
                copy.deepcopy(result)
        with m.no_grad():
            assert not copy.deepcopy(x * 2).requires_grad
        assert copy.deepcopy(x).requires_grad


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("input_requires_grad", [True, False])
def test_linear_lists_its_inputs_in_torchs_order(bias, input_requires_grad):
    """addmm's (bias, input, weight), mm's (input, weight): the blitz tutorial's
    ``next_functions[0][0]`` after a Linear layer is its bias's AccumulateGrad."""
    orders = []
    for m in (sg, torch):
        m.manual_seed(0)
        layer = m.nn.Linear(3, 2, bias=bias)
        x = m.randn(4, 3, requires_grad=input_requires_grad)
        leaves = {id(layer.weight): "weight", id(x): "input"}
        if bias:
            leaves[id(layer.bias)] = "bias"
        order = []
        for node, _ in layer(x).grad_fn.next_functions:
            if node is not None and node.name() == "TBackward0":  # (torch's weight.t())
                node = node.next_functions[0][0]
            order.append(None if node is None else leaves[id(node.variable)])
        orders.append(order)
    assert orders[0] == orders[1]
