"""``F.ctc_loss`` and ``nn.CTCLoss`` against PyTorch: losses and gradients with respect to
``log_probs`` (PyTorch's, which are right through a log_softmax) over random lengths, blanks,
padded and concatenated targets, reductions and impossible alignments; gradcheck and
gradgradcheck through log_softmax; PyTorch's errors."""

import numpy as np
import pytest
import torch
from oracle import DTYPES, assert_close, assert_raises_as_torch

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import functional as F


def _case(rng, steps, batch, classes, longest, blank, impossible=False):
    input_lengths = rng.integers(steps // 2, steps + 1, batch)
    target_lengths = rng.integers(0, longest + 1, batch)
    if impossible:  # more labels than steps: no alignment
        input_lengths[0], target_lengths[0] = 1, max(longest, 2)
    labels = [c for c in range(classes) if c != blank]
    targets = rng.choice(labels, (batch, max(longest, 2)))
    targets[:, 1::2] = targets[:, ::2][:, : targets[:, 1::2].shape[1]]  # repeated labels too
    return rng.standard_normal((steps, batch, classes)), targets, input_lengths, target_lengths


def _both(x, targets, input_lengths, target_lengths, dtype, softmax=True, concatenated=False,
          **kw):  # fmt: skip
    if concatenated:
        targets = np.concatenate([t[:n] for t, n in zip(targets, target_lengths)])
    results = []
    for lib in (sg, torch):
        leaf = lib.tensor(x).to(DTYPES[dtype][lib is torch]).requires_grad_()
        log_probs = leaf.log_softmax(-1) if softmax else leaf
        loss = lib.nn.functional.ctc_loss(
            log_probs, lib.tensor(targets), lib.tensor(input_lengths),
            lib.tensor(target_lengths), **kw)  # fmt: skip
        upstream = lib.tensor(np.linspace(0.5, 1.5, loss.numel()).reshape(loss.shape))
        (loss * upstream.to(loss.dtype)).sum().backward()
        results.append((loss.detach(), leaf.grad))
    return results


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("blank", [0, 3])
@pytest.mark.parametrize("concatenated", [False, True], ids=["padded", "concatenated"])
def test_ctc_loss_matches_torch(dtype, reduction, blank, concatenated):
    rng = np.random.default_rng(blank + 10 * concatenated)
    case = _case(rng, 9, 4, 6, 4, blank)
    (out, grad), (expected, expected_grad) = _both(
        *case, dtype, concatenated=concatenated, blank=blank, reduction=reduction
    )
    assert_close(out, expected, dtype)
    assert_close(grad, expected_grad, dtype)


@pytest.mark.parametrize("softmax", [True, False], ids=["log_softmax", "raw_log_probs"])
def test_gradient_wrt_log_probs_is_pytorchs(softmax):
    # on raw log_probs PyTorch's gradient adds exp(log_probs): ours too
    case = _case(np.random.default_rng(1), 7, 3, 5, 3, 1)
    (out, grad), (expected, expected_grad) = _both(*case, "float64", softmax, blank=1)
    assert_close(out, expected)
    assert_close(grad, expected_grad)


@pytest.mark.parametrize("zero_infinity", [True, False])
@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_impossible_alignments_as_torch(zero_infinity, reduction):
    # zero_infinity: a zero loss and gradient; otherwise an infinite loss and a NaN gradient
    case = _case(np.random.default_rng(2), 6, 3, 4, 3, 2, impossible=True)
    (out, grad), (expected, expected_grad) = _both(
        *case, "float64", blank=2, reduction=reduction, zero_infinity=zero_infinity
    )
    assert_close(out, expected)
    assert np.array_equal(np.isnan(grad.numpy()), np.isnan(expected_grad.numpy()))
    assert_close(grad.nan_to_num(), expected_grad.nan_to_num())


def test_unbatched_and_lengths_as_tuples_as_torch():
    x = np.random.default_rng(3).standard_normal((5, 4))
    for lib in (sg, torch):
        log_probs = lib.tensor(x).log_softmax(-1)
        one = lib.nn.functional.ctc_loss(log_probs, lib.tensor([1, 1, 2]), lib.tensor(5),
                                         lib.tensor(3), reduction="none")  # fmt: skip
        batched = lib.nn.functional.ctc_loss(log_probs[:, None], lib.tensor([[1, 1, 2]]), (5,),
                                             [3], reduction="none")  # fmt: skip
        if lib is sg:
            ours = one, batched
    assert_close(ours[0], one)
    assert_close(ours[1], batched)
    assert ours[0].shape == () and ours[1].shape == (1,)


def test_gradcheck_and_gradgradcheck_through_log_softmax():
    x, targets, input_lengths, target_lengths = _case(np.random.default_rng(4), 5, 2, 4, 2, 0)
    x = sg.tensor(x, requires_grad=True)

    def loss(x):
        return F.ctc_loss(x.log_softmax(-1), sg.tensor(targets), sg.tensor(input_lengths),
                          sg.tensor(target_lengths), reduction="sum")  # fmt: skip

    assert sg.autograd.gradcheck(loss, (x,))
    assert sg.autograd.gradgradcheck(loss, (x,))


def test_ctc_loss_module_and_autocast_as_torch():
    case = _case(np.random.default_rng(5), 6, 3, 5, 3, 4)
    log_probs = sg.tensor(case[0]).float().log_softmax(-1)
    module, theirs = nn.CTCLoss(blank=4, zero_infinity=True), torch.nn.CTCLoss(4, "mean", True)
    assert repr(module) == repr(theirs)
    lengths = [sg.tensor(a) for a in case[1:]]
    expected = theirs(torch.tensor(log_probs.numpy()), *map(torch.tensor, case[1:]))
    assert_close(module(log_probs, *lengths), expected, "float32")
    with sg.autocast("cpu"):
        out = module(log_probs.to(sg.bfloat16), *lengths)
    assert out.dtype == sg.float32


@pytest.mark.parametrize(
    ("change", "kind", "message"),
    [
        ({"input_lengths": [5, 7]}, RuntimeError, "input_lengths to have value at most 6"),
        ({"input_lengths": [5, -1]}, RuntimeError, "input_lengths to have value at least 0"),
        ({"target_lengths": [2, 4]}, RuntimeError, "size at least 4 at dimension 1"),
        ({"target_lengths": [2, 2, 2]}, RuntimeError, "target_lengths must be of size batch"),
        ({"input_lengths": [6]}, RuntimeError, "input_lengths must be of size batch_size"),
        ({"blank": 4}, RuntimeError, "blank must be in label range"),
        ({"targets": [[1, 2, 3]]}, RuntimeError, "size 2 at dimension 0"),
        ({"targets": [1, 2, 3]}, RuntimeError, "size 4 at dimension 0"),
        ({"reduction": "avg"}, ValueError, "avg is not a valid value for reduction"),
    ],
)
def test_errors_as_torch(change, kind, message):
    def call(lib):
        args = {"targets": [[1, 2, 3], [3, 3, 1]], "input_lengths": [6, 5],
                "target_lengths": [2, 2], **change}  # fmt: skip
        kw = {k: args.pop(k) for k in ("blank", "reduction") if k in args}
        log_probs = lib.zeros(6, 2, 4).log_softmax(-1)
        return lib.nn.functional.ctc_loss(log_probs, *(lib.tensor(args[k]) for k in args), **kw)

    assert_raises_as_torch(call, kind, message)


def test_labels_outside_the_classes_are_refused():
    # PyTorch reads such labels from outside log_probs' memory and returns a number
    with pytest.raises(RuntimeError, match="target label 5 is not in the range of the 4"):
        F.ctc_loss(sg.zeros(6, 1, 4), sg.tensor([[1, 5]]), [6], [2])


@pytest.mark.parametrize("target_dtype", ["int16", "uint8", "int32"])
def test_labels_of_any_integer_dtype_as_torch(target_dtype):
    case = _case(np.random.default_rng(7), 8, 3, 5, 3, 0)
    targets = case[1].astype(target_dtype)
    (out, grad), (expected, expected_grad) = _both(case[0], targets, *case[2:], "float64")
    assert_close(out, expected)
    assert_close(grad, expected_grad)


@pytest.mark.parametrize(
    ("shape", "dtype", "kind", "message"),
    [
        ((6, 0, 4), "float32", RuntimeError, "log_probs tensor must not be empty"),
        ((0, 4), "float32", RuntimeError, "log_probs tensor must not be empty"),
        ((6, 2, 4), "int64", NotImplementedError, "not implemented for Long"),
    ],
)
def test_empty_or_integer_log_probs_are_refused_as_torch(shape, dtype, kind, message):
    def call(lib):
        log_probs = lib.zeros(shape, dtype=getattr(lib, dtype))
        lengths = [shape[0]] * (shape[1] if len(shape) == 3 else 1)
        targets = lib.ones((len(lengths), 1), dtype=lib.int64) if len(shape) == 3 else lib.ones(1)
        return lib.nn.functional.ctc_loss(log_probs, targets.long(), lengths, [1] * len(lengths))

    assert_raises_as_torch(call, kind, message)
