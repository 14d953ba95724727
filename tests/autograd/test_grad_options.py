"""``autograd.grad``'s options beyond the core walk, against PyTorch: a dict of inputs (a dict of
gradients back), ``materialize_grads`` (zeros for unused inputs) and ``is_grads_batched`` (a
batch of vectors, one gradient each)."""

import functools

import numpy as np
import oracle
import pytest
from oracle import leaves

import scratchgrad as sg

torch = pytest.importorskip("torch")

assert_close = functools.partial(oracle.assert_close, tolerance=oracle.ROUND_OFF)


def test_a_dict_of_inputs_gives_a_dict_of_gradients_under_the_same_keys():
    w, wt = leaves([[0.5, -1.0], [2.0, 0.25]])
    b, bt = leaves([0.1, -0.3])
    loss, loss_t = (w.sin() @ b).exp().sum(), (wt.sin() @ bt).exp().sum()
    grads = sg.autograd.grad(loss, {"weight": w, "bias": b})
    expected = torch.autograd.grad(loss_t, {"weight": wt, "bias": bt})
    assert isinstance(grads, dict) and list(grads) == list(expected) == ["weight", "bias"]
    for key in expected:
        assert_close(grads[key], expected[key])


@pytest.mark.parametrize("create_graph", [False, True])
def test_materialize_grads_gives_zeros_for_unused_inputs(create_graph):
    x, xt = leaves([1.0, 2.0])
    u, ut = leaves([[3.0, 4.0, 5.0]], dtype="float32")
    gx, gu = sg.autograd.grad(
        (x**3).sum(), [x, u], create_graph=create_graph, materialize_grads=True
    )
    gxt, gut = torch.autograd.grad(
        (xt**3).sum(), [xt, ut], create_graph=create_graph, materialize_grads=True
    )
    assert_close(gx, gxt)
    assert_close(gu, gut)
    assert gu.dtype == sg.float32 and gu.shape == tuple(gut.shape)
    assert gu.requires_grad == gut.requires_grad == create_graph
    assert gx.requires_grad == gxt.requires_grad == create_graph


def test_materialize_grads_with_a_dict_and_second_derivatives():
    x, xt = leaves([0.5, -1.5])
    u, ut = leaves(2.0)
    (dx,) = sg.autograd.grad((x**3).sum(), x, create_graph=True)
    (dxt,) = torch.autograd.grad((xt**3).sum(), xt, create_graph=True)
    second = sg.autograd.grad(dx.sum(), {"x": x, "u": u}, materialize_grads=True)
    second_t = torch.autograd.grad(dxt.sum(), {"x": xt, "u": ut}, materialize_grads=True)
    for key in ("x", "u"):
        assert_close(second[key], second_t[key])
    np.testing.assert_array_equal(second["u"].array, 0.0)


def test_materialize_grads_refuses_allow_unused_false_as_torch():
    x, xt = leaves([1.0])
    with pytest.raises(ValueError, match="allow_unused") as ours:
        sg.autograd.grad(x.sum(), x, allow_unused=False, materialize_grads=True)
    with pytest.raises(ValueError, match="allow_unused"):
        torch.autograd.grad(xt.sum(), xt, allow_unused=False, materialize_grads=True)
    assert "grad" in str(ours.value)


def test_an_unused_input_still_raises_without_allow_unused():
    x, _ = leaves([1.0])
    u, _ = leaves([2.0])
    with pytest.raises(RuntimeError, match="input 1 .* was not used"):
        sg.autograd.grad(x.sum(), {"x": x, "u": u})


@pytest.mark.parametrize("create_graph", [False, True])
def test_batched_grad_outputs_give_the_rows_of_the_jacobian(create_graph):
    x, xt = leaves([0.5, -1.0, 2.0])
    u, ut = leaves([1.0, 1.0])
    y, yt = x.sin() * x.sum(), xt.sin() * xt.sum()
    rows = sg.autograd.grad(
        [y, y.sum()],
        [x, u],
        [sg.eye(3, dtype=sg.float64), sg.ones(3, dtype=sg.float64)],
        create_graph=create_graph,
        is_grads_batched=True,
        materialize_grads=True,
    )
    rows_t = torch.autograd.grad(
        [yt, yt.sum()],
        [xt, ut],
        [torch.eye(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)],
        create_graph=create_graph,
        is_grads_batched=True,
        materialize_grads=True,
    )
    for g, gt in zip(rows, rows_t):  # the unused input's zeros are unbatched, as PyTorch's
        assert_close(g, gt)
        assert g.requires_grad == gt.requires_grad
    if create_graph:  # the stacked rows are differentiable: a Hessian-vector product
        assert_close(
            sg.autograd.grad(rows[0].sum(), x)[0], torch.autograd.grad(rows_t[0].sum(), xt)[0]
        )


def test_batched_grads_free_the_graph_after_the_last_walk_only():
    x, _ = leaves([0.5, -1.0])
    y = x.exp()
    sg.autograd.grad(y, x, sg.eye(2, dtype=sg.float64), is_grads_batched=True)
    with pytest.raises(RuntimeError, match="second time"):
        sg.autograd.grad(y, x, sg.ones(2, dtype=sg.float64))


@pytest.mark.parametrize(
    "grad_outputs, error",
    [
        (None, RuntimeError),  # a non-scalar output needs its vectors
        ([np.ones(2)], RuntimeError),  # no batch dimension: the shape is the output's
        ([np.ones((3, 2)), np.ones(2)], ValueError),  # batch sizes differ
        ([np.ones((0, 2)), np.ones(0)], IndexError),  # an empty batch
    ],
)
def test_batched_grad_outputs_of_the_wrong_shape_raise_torchs_errors(grad_outputs, error):
    x, xt = leaves([0.5, -1.0])
    outputs, outputs_t = [x.exp(), x.sum()], [xt.exp(), xt.sum()]
    ours = theirs = None
    if grad_outputs is not None:
        ours = [sg.tensor(g, dtype=sg.float64) for g in grad_outputs]
        theirs = [torch.tensor(g, dtype=torch.float64) for g in grad_outputs]
        if len(grad_outputs) == 1:
            outputs, outputs_t = outputs[:1], outputs_t[:1]
    with pytest.raises(error, match="grad"):
        sg.autograd.grad(outputs, x, ours, is_grads_batched=True)
    with pytest.raises(error):
        torch.autograd.grad(outputs_t, xt, theirs, is_grads_batched=True)


@pytest.mark.parametrize("inputs", [[], (), {}])
def test_no_inputs_raise_torchs_error(inputs):
    x, xt = leaves([0.5, -1.0])
    with pytest.raises(RuntimeError, match="`inputs` argument to `grad\\(\\)` cannot be empty"):
        torch.autograd.grad(xt.sum(), inputs)
    with pytest.raises(RuntimeError, match="`inputs` argument to `grad\\(\\)` cannot be empty"):
        sg.autograd.grad(x.sum(), inputs)


def test_the_sixth_positional_argument_is_only_inputs_as_pytorchs():
    """PyTorch's grad takes only_inputs between create_graph and allow_unused: a True there
    must not read as allow_unused, and an unused input still raises."""
    for lib in (sg, torch):
        x, z = (lib.tensor([1.0, 2.0], requires_grad=True) for _ in range(2))
        with pytest.raises(RuntimeError):
            lib.autograd.grad((x * x).sum(), [x, z], None, None, False, True)


def test_only_inputs_false_warns_and_is_ignored():
    x, xt = leaves([1.0, 2.0])
    with pytest.warns(FutureWarning, match="only_inputs"):
        (g,) = sg.autograd.grad((x * x).sum(), x, only_inputs=False)
    with pytest.warns(FutureWarning, match="only_inputs"):
        (gt,) = torch.autograd.grad((xt * xt).sum(), xt, only_inputs=False)
    assert_close(g, gt)
