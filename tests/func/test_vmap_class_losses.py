"""``cross_entropy`` with class weights, label smoothing or another ``ignore_index``, and
``nll_loss``, under ``func.vmap`` with batched targets (or class weights) batch as
``torch.func.vmap``'s: each member's targets pick its own log-probabilities and weights, at
any in_dim and in nested vmaps, gradients included. Before, they raised that the targets'
values were read directly."""

import numpy as np
import pytest
import torch
from oracle import assert_close, outcome, raised_alike

import scratchgrad as sg

_rng = np.random.default_rng(0)
LOGITS = _rng.standard_normal((2, 4, 3))
TARGETS = np.array([[0, 2, 1, 1], [2, -100, 0, 1]])  # member 1 ignores its second target
WEIGHTS = np.array([[1.0, 2.0, 0.5], [0.25, 1.0, 3.0]])
IMAGE_LOGITS = _rng.standard_normal((2, 2, 3, 5))  # (N, C, d) members
IMAGE_TARGETS = np.array(
    [[[0, 1, 2, 0, 1], [2, 2, 1, 0, 0]], [[1, 1, 1, 2, -100], [0, 2, 0, 2, 1]]]
)

# name -> a member's loss of (logits, targets, class weights)
LOSSES = {
    "weight": lambda F, x, t, w: F.cross_entropy(x, t.clamp(min=0), weight=w),
    "weight_sum": lambda F, x, t, w: F.cross_entropy(x, t.clamp(min=0), weight=w, reduction="sum"),
    "ignore_index": lambda F, x, t, w: F.cross_entropy(x, t.clamp(min=0), ignore_index=1),
    "ignore_and_weight": lambda F, x, t, w: F.cross_entropy(x, t, weight=w, ignore_index=-100),
    "label_smoothing": lambda F, x, t, w: F.cross_entropy(x, t, label_smoothing=0.2),
    "smoothing_and_weight": lambda F, x, t, w: F.cross_entropy(
        x, t, weight=w, label_smoothing=0.1, reduction="none"
    ),
    "nll_loss": lambda F, x, t, w: F.nll_loss(x.log_softmax(-1), t),
    "nll_loss_weight": lambda F, x, t, w: F.nll_loss(x.log_softmax(-1), t.clamp(min=0), weight=w),
    "one_sample": lambda F, x, t, w: F.cross_entropy(x[0], t[0].clamp(min=0), weight=w),
}

IN_DIMS = {  # which of (logits, targets, weights) are batched, and where
    "targets": (None, 0, None),
    "targets_last": (None, -1, None),
    "targets_and_logits": (0, 0, None),
    "logits_last_and_targets": (-1, 0, None),
    "weights": (None, None, 0),
    "all": (0, 0, 0),
}


def _inputs(m, in_dims, logits=LOGITS, targets=TARGETS):
    arrays = [logits, targets, WEIGHTS]
    out = []
    for a, d in zip(arrays, in_dims):
        t = m.tensor(a if d is not None else a[0])
        out.append(t.movedim(0, -1) if d == -1 else t)
    return out


@pytest.mark.parametrize("in_dims", IN_DIMS)
@pytest.mark.parametrize("name", LOSSES)
def test_class_losses_with_batched_targets_as_torch(name, in_dims):
    def call(m):
        loss = LOSSES[name]
        inputs = _inputs(m, IN_DIMS[in_dims])
        return m.func.vmap(lambda *a: loss(m.nn.functional, *a), in_dims=IN_DIMS[in_dims])(*inputs)

    ours, theirs = outcome(call, sg), outcome(call, torch)
    if isinstance(theirs, Exception) and "smoothing" in name:
        # PyTorch's label smoothing adds in place into a tensor its vmap does not batch
        # (logits unbatched): compared with a loop of PyTorch's losses
        args = [
            (a if d is None else a.movedim(d, 0))
            for a, d in zip(_inputs(torch, IN_DIMS[in_dims]), IN_DIMS[in_dims])
        ]
        members = [
            LOSSES[name](
                torch.nn.functional,
                *(a if d is None else a[k] for a, d in zip(args, IN_DIMS[in_dims])),
            )
            for k in range(2)
        ]
        theirs = torch.stack(members)
    if not raised_alike(ours, theirs, name):
        assert_close(ours, theirs)


def test_image_targets_with_weights_as_torch():
    """(N, C, d) logits: the class dim is 1 of each member."""

    def call(m):
        def loss(x, t):
            return m.nn.functional.cross_entropy(
                x, t, weight=m.tensor(WEIGHTS[0]), reduction="none"
            )

        return m.func.vmap(loss)(m.tensor(IMAGE_LOGITS), m.tensor(IMAGE_TARGETS))

    assert_close(call(sg), call(torch))


def test_nested_vmaps_of_weighted_cross_entropy_as_torch():
    """The outer vmap batches the class weights, the inner one the logits and targets."""

    def call(m):
        x, t = m.tensor(LOGITS), m.tensor(TARGETS)

        def outer(w):
            loss = lambda xi, ti: m.nn.functional.cross_entropy(xi, ti, weight=w)  # noqa: E731
            return m.func.vmap(loss)(x, t)

        return m.func.vmap(outer)(m.tensor(WEIGHTS))

    assert_close(call(sg), call(torch))


@pytest.mark.parametrize(
    "name", ["weight", "ignore_and_weight", "smoothing_and_weight", "nll_loss"]
)
def test_per_member_gradients_of_class_losses_as_torch(name):
    def call(m):
        loss = LOSSES[name]
        inputs = _inputs(m, (0, 0, None))

        def f(x, t):
            return loss(m.nn.functional, x, t, inputs[2]).sum()

        return m.func.vmap(m.func.grad(f))(*inputs[:2])

    assert_close(call(sg), call(torch))


@pytest.mark.parametrize(
    "name, targets",
    [
        ("a member's target out of range", [[0, 2, 1, 1], [2, 3, 0, 1]]),
        ("a member's negative target", [[0, 2, 1, 1], [2, -1, 0, 1]]),
        ("every target of a member ignored", [[0, 2, 1, 1], [-100, -100, -100, -100]]),
    ],
)
def test_class_losses_of_unusual_batched_targets_as_torch(name, targets):
    """A target out of range raises (PyTorch's IndexError outside vmap, where its vmap
    raises a RuntimeError); a member whose targets are all ignored has a NaN mean, as
    PyTorch's."""

    def call(m):
        def loss(t):
            return m.nn.functional.cross_entropy(
                m.tensor(LOGITS[0]), t, weight=m.tensor(WEIGHTS[0])
            )

        return m.func.vmap(loss)(m.tensor(targets))

    ours, theirs = outcome(call, sg), outcome(call, torch)
    if isinstance(theirs, Exception):
        assert (type(ours), str(ours)) == (type(theirs), str(theirs))
    else:
        assert_close(ours, theirs)


PLAIN_LOSSES = {
    "cross_entropy": lambda F, x, t: F.cross_entropy(x, t),
    "nll_loss": lambda F, x, t: F.nll_loss(x, t, reduction="none"),
    "ignore_index": lambda F, x, t: F.cross_entropy(x, t, ignore_index=1, reduction="sum"),
    "smoothing": lambda F, x, t: F.cross_entropy(x, t, label_smoothing=0.1),
}


@pytest.mark.parametrize("in_dims", [(0, 0), (None, 0), (0, None), (1, 0)])
@pytest.mark.parametrize("name", PLAIN_LOSSES)
@pytest.mark.parametrize("bad", [3, -2])
def test_a_target_out_of_range_raises_torchs_vmap_error(name, in_dims, bad):
    """PyTorch's vmap gathers the classes from the batch: its RuntimeError names the class
    dim of the batch ("index 3 is out of bounds for dimension 2 with size 3"), where it
    raises IndexError ("Target 3 is out of bounds.") outside vmap; ours raised that."""

    def call(m):
        targets = TARGETS.clip(0) if in_dims[1] is not None else TARGETS[1].clip(0)
        targets[..., 2] = bad
        x = LOGITS.swapaxes(0, 1) if in_dims[0] == 1 else LOGITS if in_dims[0] == 0 else LOGITS[0]
        loss = PLAIN_LOSSES[name]
        return m.func.vmap(lambda x, t: loss(m.nn.functional, x, t), in_dims=in_dims)(
            m.tensor(x), m.tensor(targets)
        )

    ours, theirs = outcome(call, sg), outcome(call, torch)
    assert isinstance(theirs, RuntimeError)
    assert (type(ours), str(ours)) == (type(theirs), str(theirs))


def test_a_target_out_of_range_of_one_dim_members_names_their_class_dim():
    def call(m):
        loss = m.nn.functional.cross_entropy
        return m.func.vmap(loss)(m.tensor(LOGITS[0]), m.tensor([0, 1, 2, 7]))

    ours, theirs = outcome(call, sg), outcome(call, torch)
    assert "dimension 1 with size 3" in str(theirs)
    assert (type(ours), str(ours)) == (type(theirs), str(theirs))


@pytest.mark.parametrize("in_dims", [(0, 0), (None, 0)])
@pytest.mark.parametrize("bad", [False, True])
def test_nested_vmaps_of_plain_cross_entropy_as_torch(in_dims, bad):
    """Both levels batching the targets (it raised: the rule read the outer batch's array
    directly); a class index out of range names the class dim behind both levels."""
    logits = np.stack([LOGITS, LOGITS[::-1]])  # (2, 2, 4, 3)
    targets = np.stack([TARGETS.clip(0), TARGETS[::-1].clip(0)])
    if bad:
        targets[1, 0, 2] = 9

    def call(m):
        loss = m.func.vmap(m.nn.functional.cross_entropy)
        x = m.tensor(logits if in_dims[0] == 0 else logits[0])
        return m.func.vmap(loss, in_dims=in_dims)(x, m.tensor(targets))

    ours, theirs = outcome(call, sg), outcome(call, torch)
    if bad:
        assert (type(ours), str(ours)) == (type(theirs), str(theirs))
    else:
        assert_close(ours, theirs)
