"""``nn.AdaptiveLogSoftmaxWithLoss`` against PyTorch's: the same parameters, outputs, loss,
gradients, full log-probabilities, predictions and errors."""

import numpy as np
import pytest
import torch

import scratchgrad as sg


def _pair(in_features=8, n_classes=20, cutoffs=(4, 10, 15), **kw):
    torch.manual_seed(0)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, **kw).double()
    ours = sg.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, **kw).double()
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def test_the_parameters_are_pytorchs():
    ours, theirs = _pair(div_value=2.0, head_bias=True)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {
        k: tuple(v.shape) for k, v in theirs.state_dict().items()
    }


@pytest.mark.parametrize("head_bias", [False, True])
def test_output_loss_and_gradients_match(head_bias):
    ours, theirs = _pair(div_value=2.0, head_bias=head_bias)
    x = np.random.default_rng(0).standard_normal((7, 8))
    target = np.array([0, 3, 4, 9, 17, 19, 2])  # none in the cluster [10, 15): skipped
    x_ours, x_theirs = sg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, loss = ours(x_ours, sg.tensor(target))
    expected_out, expected_loss = theirs(x_theirs, torch.tensor(target))
    (loss * 3 + out[1]).backward()
    (expected_loss * 3 + expected_out[1]).backward()
    np.testing.assert_allclose(out.detach().numpy(), expected_out.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(loss.item(), expected_loss.item(), rtol=1e-12)
    np.testing.assert_allclose(x_ours.grad.numpy(), x_theirs.grad.numpy(), rtol=1e-10)
    grads = {n: p.grad for n, p in theirs.named_parameters()}
    for name, p in ours.named_parameters():
        expected = np.zeros(p.shape) if grads[name] is None else grads[name].numpy()
        got = np.zeros(p.shape) if p.grad is None else p.grad.numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-15, err_msg=name)


def test_log_prob_and_predict_match():
    ours, theirs = _pair(cutoffs=(5,), head_bias=True)
    x = np.random.default_rng(1).standard_normal((6, 8)) * 3
    np.testing.assert_allclose(
        ours.log_prob(sg.tensor(x)).detach().numpy(),
        theirs.log_prob(torch.tensor(x)).detach().numpy(),
        rtol=1e-12,
    )
    np.testing.assert_array_equal(
        ours.predict(sg.tensor(x)).numpy(), theirs.predict(torch.tensor(x)).numpy()
    )


def test_an_unbatched_row_gives_a_scalar_output():
    ours, theirs = _pair()
    x = np.random.default_rng(2).standard_normal(8)
    out, loss = ours(sg.tensor(x), sg.tensor(12))
    expected_out, expected_loss = theirs(torch.tensor(x), torch.tensor(12))
    assert out.shape == ()
    np.testing.assert_allclose(out.item(), expected_out.item(), rtol=1e-12)
    np.testing.assert_allclose(loss.item(), expected_loss.item(), rtol=1e-12)


@pytest.mark.parametrize("cutoffs", [[], [4, 4], [10, 4], [0, 4], [4, 20], [4.5]])
def test_bad_cutoffs_are_pytorchs_value_error(cutoffs):
    with pytest.raises(ValueError) as theirs:
        torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs)
    with pytest.raises(ValueError) as ours:
        sg.nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs)
    assert str(ours.value) == str(theirs.value)


def test_a_target_out_of_range_is_pytorchs_runtime_error():
    ours, theirs = _pair()
    with pytest.raises(RuntimeError) as expected:
        theirs(torch.zeros(2, 8, dtype=torch.float64), torch.tensor([3, 20]))
    with pytest.raises(RuntimeError) as got:
        ours(sg.zeros(2, 8, dtype=sg.float64), sg.tensor([3, 20]))
    assert str(got.value) == str(expected.value)
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        ours(sg.zeros(2, 8), sg.zeros(2, 1, dtype=sg.int64))


@pytest.mark.parametrize(
    "x_shape, target, words",
    [((3, 8), [0, 1], "same size in the batch"), ((2, 4, 8), [1, 2], "expects 2D input tensors"),
     ((2, 8), 3, "expects 1D input tensors")],
)  # fmt: skip
def test_mismatched_input_and_target_raise_as_pytorch(x_shape, target, words):
    ours, theirs = _pair()
    with pytest.raises(RuntimeError, match=words):
        theirs(torch.zeros(x_shape, dtype=torch.float64), torch.tensor(target))
    with pytest.raises(RuntimeError, match=words):
        ours(sg.zeros(x_shape, dtype=sg.float64), sg.tensor(target))
