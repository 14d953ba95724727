"""The nn functions at the package root (torch.conv2d, torch.layer_norm, torch.kl_div with an
int reduction, ...): each called with PyTorch's root signature, against torch's."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

RNG = np.random.default_rng(0)
X4 = RNG.standard_normal((2, 4, 6, 6))
X3 = RNG.standard_normal((2, 4, 8))
W4 = RNG.standard_normal((3, 4, 3, 3))
VEC = RNG.standard_normal((5, 4))
VEC2 = RNG.standard_normal((5, 4))
SIGNS = np.array([1.0, -1.0, 1.0, 1.0, -1.0])
PROBS = RNG.random((5, 4))

CASES = {
    "conv2d": lambda m, t: m.conv2d(t(X4), t(W4), None, 1, 1),
    "conv_transpose1d": lambda m, t: m.conv_transpose1d(t(X3), t(X3[0, :, :3].reshape(4, 1, 3))),
    "pixel_shuffle": lambda m, t: m.pixel_shuffle(t(X4), 2),
    "pixel_unshuffle": lambda m, t: m.pixel_unshuffle(t(X4), 2),
    "channel_shuffle": lambda m, t: m.channel_shuffle(t(X4), 2),
    "cosine_similarity": lambda m, t: m.cosine_similarity(t(VEC), t(VEC2)),
    "pairwise_distance": lambda m, t: m.pairwise_distance(t(VEC), t(VEC2)),
    "pdist": lambda m, t: m.pdist(t(VEC)),
    "hardshrink": lambda m, t: m.hardshrink(t(VEC), 0.3),
    "selu": lambda m, t: m.selu(t(VEC)),
    "celu": lambda m, t: m.celu(t(VEC), 0.7),
    "threshold": lambda m, t: m.threshold(t(VEC), 0.1, -2.0),
    "prelu": lambda m, t: m.prelu(t(X4), t(np.array([0.25]))),
    "bilinear": lambda m, t: m.bilinear(t(VEC), t(VEC2), t(X4[0, :2, :4, :4]), None),
    "embedding": lambda m, t: m.embedding(t(VEC), m.tensor([[0, 2], [4, 4]]), 2),
    "layer_norm": lambda m, t: m.layer_norm(t(X3), [8], t(X3[0, 0]), None, 1e-3, True),
    "group_norm": lambda m, t: m.group_norm(t(X4), 2, None, None, 1e-5, True),
    "rms_norm": lambda m, t: m.rms_norm(t(X3), [8], None, 1e-6),
    "batch_norm": lambda m, t: m.batch_norm(
        t(X3), t(X3[0, :, 0]), None, None, None, True, 0.1, 1e-5, False
    ),
    "instance_norm": lambda m, t: m.instance_norm(
        t(X3), None, None, None, None, True, 0.1, 1e-5, False
    ),
    "kl_div": lambda m, t: m.kl_div(t(VEC).log_softmax(1), t(PROBS), 2),
    "kl_div_none": lambda m, t: m.kl_div(t(VEC), t(VEC2), 0, log_target=True),
    "margin_ranking_loss": lambda m, t: m.margin_ranking_loss(
        t(VEC[:, 0]), t(VEC2[:, 0]), t(SIGNS), 0.1, 1
    ),
    "poisson_nll_loss": lambda m, t: m.poisson_nll_loss(t(VEC), t(PROBS), True, False, 1e-8, 2),
    "triplet_margin_loss": lambda m, t: m.triplet_margin_loss(t(VEC), t(VEC2), t(PROBS)),
    "triplet_margin_loss_mean": lambda m, t: m.triplet_margin_loss(
        t(VEC), t(VEC2), t(PROBS), 1.0, 2, 1e-6, True, 1
    ),
    "hinge_embedding_loss": lambda m, t: m.hinge_embedding_loss(t(VEC[:, 0]), t(SIGNS), 0.5, 0),
    "cosine_embedding_loss": lambda m, t: m.cosine_embedding_loss(t(VEC), t(VEC2), t(SIGNS)),
    "binary_cross_entropy_with_logits": lambda m, t: m.binary_cross_entropy_with_logits(
        t(VEC), t(PROBS), None, t(PROBS[0] + 0.5), 1
    ),
    "max_pool1d": lambda m, t: m.max_pool1d(t(X3), 3),
    "max_pool2d": lambda m, t: m.max_pool2d(t(X4), 2, [], 1),
    "max_pool3d": lambda m, t: m.max_pool3d(t(X4), 2, 1),
    "max_pool1d_with_indices": lambda m, t: m.max_pool1d_with_indices(t(X3), 2)[1],
    "adaptive_max_pool1d": lambda m, t: m.adaptive_max_pool1d(t(X3), 3)[0],
    "avg_pool1d": lambda m, t: m.avg_pool1d(t(X3), 3, 2, 1),
    "adaptive_avg_pool1d": lambda m, t: m.adaptive_avg_pool1d(t(X3), 3),
    "grid_sampler": lambda m, t: m.grid_sampler(
        t(X4), t(X4[:, :2].transpose(0, 2, 3, 1) / 3), 0, 1, False
    ),
    "affine_grid_generator": lambda m, t: m.affine_grid_generator(
        t(VEC[:2, :3].reshape(1, 2, 3)), [1, 1, 4, 5], False
    ),
    "dropout_eval": lambda m, t: m.feature_dropout(t(X4), 0.5, False),
    "alpha_dropout_eval": lambda m, t: m.alpha_dropout(t(X4), 0.5, False),
}


@pytest.mark.parametrize("name", CASES)
def test_root_function_is_torchs(name):
    ours = CASES[name](sg, lambda a: sg.tensor(np.asarray(a), dtype=sg.float64))
    theirs = CASES[name](torch, lambda a: torch.tensor(np.asarray(a), dtype=torch.float64))
    np.testing.assert_allclose(
        ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12
    )


@pytest.mark.parametrize("name", ["selu_", "celu_", "relu_", "threshold_", "rrelu_"])
def test_in_place_root_forms_are_torchs(name):
    args = {"threshold_": (0.1, -2.0)}.get(name, ())
    ours, theirs = sg.tensor(VEC), torch.tensor(VEC)
    assert getattr(sg, name)(ours, *args) is ours
    getattr(torch, name)(theirs, *args)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_reduction_must_be_an_int_and_training_dropout_keeps_feature_maps_whole():
    with pytest.raises(TypeError, match="argument 'reduction' must be int, not str"):
        sg.kl_div(sg.tensor(VEC), sg.tensor(PROBS), reduction="mean")
    sg.manual_seed(0)
    out = sg.feature_dropout(sg.ones(8, 16, 3, 3), 0.5, True).numpy()
    per_map = out.reshape(8, 16, 9)
    assert ((per_map == 0).all(-1) | (per_map == 2).all(-1)).all()  # whole maps, scaled by 2
    with pytest.raises(RuntimeError, match="expected a 3-D, 4-D or 5-D input"):
        sg.feature_dropout(sg.ones(4), 0.5, True)


@pytest.mark.parametrize(
    "name, args",
    [
        ("relu", ()),
        ("leaky_relu", (0.2,)),
        ("elu", (0.5,)),
        ("selu", ()),
        ("mish", ()),
        ("hardtanh", (-0.5, 0.5)),
        ("relu6", ()),
        ("dropout", (0.5, False)),
        ("alpha_dropout", (0.5, False)),
    ],
)
def test_functional_inplace_writes_into_the_input_as_torchs(name, args):
    ours, theirs = sg.tensor(VEC * 4), torch.tensor(VEC * 4)
    out = getattr(sg.nn.functional, name)(ours, *args, inplace=True)
    getattr(torch.nn.functional, name)(theirs, *args, inplace=True)
    assert out is ours
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_inplace_dropout_in_training_zeroes_the_input_itself():
    x = sg.ones(1000)
    sg.manual_seed(0)
    sg.nn.functional.dropout(x, 0.5, True, inplace=True)
    assert set(x.tolist()) == {0.0, 2.0}
