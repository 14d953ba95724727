"""vmap with per-member (batched) indices, against ``torch.func.vmap`` and a Python loop:
indexing (``x[i]``, ``x[:, i, j]``...), ``index_select``, ``one_hot``, ``embedding_bag``, and
``F.embedding`` with one weight shared by every member or a weight per member, padding_idx and
scale_grad_by_freq, gradients through vmap and per member (vmap of grad), an ensemble of
``nn.Embedding`` through ``functional_call``, nested vmaps, and the refused calls."""

import numpy as np
import pytest
import torch
from oracle import assert_close, check_against_torch

import scratchgrad as sg
import scratchgrad.nn.functional as F
from scratchgrad.func import functional_call, grad, stack_module_state, vmap

BATCH, ROWS, DIM = 3, 10, 4
RNG = np.random.default_rng(0)
WEIGHT = RNG.standard_normal((BATCH, ROWS, DIM))
INDEX = RNG.integers(0, ROWS, (BATCH, 5, 2))
INDEX[:, 0, 0] = 7  # padding in every member, repeated in member 0
INDEX[0, 1, 1] = 7

OPTIONS = {
    "plain": {},
    "padding_idx": {"padding_idx": 7},
    "negative padding_idx": {"padding_idx": -3},
    "scale_grad_by_freq": {"scale_grad_by_freq": True, "padding_idx": 7},
}


def _call(options):
    """A member's embedding, the same for both libraries (the index first, then the weight)."""
    return lambda index, weight, functional: functional.embedding(index, weight, **options)


def _torch_loop(call):
    """``call`` on each member in PyTorch, stacked: the oracle where torch.func's rule is wrong
    (a weight per member with padding_idx: the gradient through its vmap skips the padding row
    of the first member only, as if the members' rows were one table)."""
    return lambda i, w: torch.stack([call(i[m], w[m], torch.nn.functional) for m in range(BATCH)])


@pytest.mark.parametrize("in_dims", [(0, None), (0, 0), (None, 0)], ids=str)
@pytest.mark.parametrize("name", OPTIONS)
def test_batched_indices_match_torch_with_gradients(name, in_dims):
    """Values, and the weight's gradient backpropagated through vmap."""
    call = _call(OPTIONS[name])
    index = [INDEX, INDEX[0]][in_dims[0] is None]
    weight = [WEIGHT, WEIGHT[0]][in_dims[1] is None]
    theirs = torch.func.vmap(lambda i, w: call(i, w, torch.nn.functional), in_dims=in_dims)
    if in_dims == (0, 0):
        theirs = _torch_loop(call)
    check_against_torch(
        lambda w: vmap(lambda i, w: call(i, w, F), in_dims=in_dims)(sg.tensor(index), w),
        lambda w: theirs(torch.tensor(index), w),
        [weight],
        what=f"embedding {name} in_dims={in_dims}",
    )


@pytest.mark.parametrize("name", OPTIONS)
def test_per_member_gradients_match_torch_and_a_loop(name):
    """vmap(grad) of each member's loss over its own weight: PyTorch's, and one member at a
    time (the gradient of a batched weight counts scale_grad_by_freq's repeats per member)."""
    call = _call(OPTIONS[name])

    def loss(functional):
        return lambda w, i: (call(i, w, functional) ** 2).sum()

    ours = vmap(grad(loss(F)))(sg.tensor(WEIGHT), sg.tensor(INDEX))
    theirs = torch.func.vmap(torch.func.grad(loss(torch.nn.functional)))(
        torch.tensor(WEIGHT), torch.tensor(INDEX)
    )
    assert_close(ours, theirs, what=name)
    for member in range(BATCH):
        alone = grad(loss(F))(sg.tensor(WEIGHT[member]), sg.tensor(INDEX[member]))
        assert_close(ours[member], alone.numpy(), what=f"{name} member {member}")


def test_nn_embedding_ensemble_through_functional_call_matches_a_loop():
    """An ensemble of nn.Embedding: each member's output and gradient is its own model's."""
    models = [sg.nn.Embedding(ROWS, DIM) for _ in range(BATCH)]
    params, buffers = stack_module_state(models)
    index = sg.tensor(INDEX)

    def loss(p, b, i):
        return (functional_call(models[0], (p, b), (i,)) ** 2).sum()

    out = vmap(lambda p, b, i: functional_call(models[0], (p, b), (i,)))(params, buffers, index)
    grads = vmap(grad(loss))(params, buffers, index)
    for member, model in enumerate(models):
        assert_close(out[member], model(index[member]).detach().numpy())
        model(index[member]).pow(2).sum().backward()
        assert_close(grads["weight"][member], model.weight.grad.numpy())


def test_nested_vmaps_index_outer_weight_inner_match_torch():
    ours = vmap(lambda i: vmap(lambda w: F.embedding(i, w))(sg.tensor(WEIGHT)))(sg.tensor(INDEX))
    theirs = torch.func.vmap(
        lambda i: torch.func.vmap(lambda w: torch.nn.functional.embedding(i, w))(
            torch.tensor(WEIGHT)
        )
    )(torch.tensor(INDEX))
    assert_close(ours, theirs)


@pytest.mark.parametrize("in_dims", [(0, None), (0, 0)], ids=str)
def test_out_of_range_and_float_indices_are_refused_as_eagerly(in_dims):
    """A member's index past the last row is refused (with a weight per member, it must not
    read the next member's rows), as is an index of a floating dtype."""
    weight = sg.tensor(WEIGHT if in_dims[1] == 0 else WEIGHT[0])
    with pytest.raises(IndexError, match="index 10 is out of range in self"):
        vmap(F.embedding, in_dims=in_dims)(sg.tensor(np.minimum(INDEX + 3, 10)), weight)
    with pytest.raises(RuntimeError, match="expected indices of an integer dtype"):
        vmap(F.embedding, in_dims=in_dims)(sg.tensor(INDEX * 1.0), weight)


def test_max_norm_with_batched_indices_and_a_shared_weight_is_refused_and_changes_nothing():
    """max_norm rewrites the looked-up rows in place: every member would rewrite the weight
    they share, which PyTorch's vmap refuses too."""
    weight = sg.tensor(WEIGHT[0])
    with pytest.raises(RuntimeError, match="vmap: embedding with max_norm, batched indices and"):
        vmap(lambda i: F.embedding(i, weight, max_norm=1.0))(sg.tensor(INDEX))
    np.testing.assert_array_equal(weight.numpy(), WEIGHT[0])
    shared = torch.tensor(WEIGHT[0])
    with pytest.raises(RuntimeError, match="vmap: aten::embedding_renorm_"):
        torch.func.vmap(lambda i: torch.nn.functional.embedding(i, shared, max_norm=1.0))(
            torch.tensor(INDEX)
        )


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
@pytest.mark.parametrize("options", [{}, {"padding_idx": 7}], ids=str)
@pytest.mark.parametrize("weight_dim", [0, 1])
def test_max_norm_with_batched_indices_and_weights_matches_torch(weight_dim, options, norm_type):
    """Each member's weight rescaled at its own indices, in place, as PyTorch's vmap does; ours
    refused any max_norm with batched indices. The outputs, the rescaled weights and their
    gradients (a leaf rescaled outside autograd) match a loop of PyTorch calls (its vmap's
    gradient is wrong with padding_idx, see _torch_loop)."""

    def call(lib, i, w):
        return lib.nn.functional.embedding(i, w, max_norm=1.0, norm_type=norm_type, **options)

    weight = sg.tensor(np.moveaxis(WEIGHT, 0, weight_dim).copy(), requires_grad=True)
    out = vmap(lambda i, w: call(sg, i, w), in_dims=(0, weight_dim))(sg.tensor(INDEX), weight)
    theirs = torch.tensor(WEIGHT, requires_grad=True)
    expected = torch.stack([call(torch, torch.tensor(INDEX[m]), theirs[m]) for m in range(BATCH)])
    for lib, result in [(sg, out), (torch, expected)]:
        scale = lib.arange(result.numel(), dtype=result.dtype).reshape(result.shape)
        (result * scale).sum().backward()
    assert not np.allclose(theirs.detach().numpy(), WEIGHT)  # (rows were rescaled)
    for ours, their in [(out, expected), (weight, theirs), (weight.grad, theirs.grad)]:
        ours = ours.detach().numpy()
        ours = ours if ours.shape == tuple(their.shape) else np.moveaxis(ours, weight_dim, 0)
        np.testing.assert_allclose(ours, their.detach().numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("in_dims", [(None, 0), (0, 0)], ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select_with_batched_indices_matches_torch_with_gradients(dim, in_dims):
    x = WEIGHT if in_dims[0] == 0 else WEIGHT[0]
    index = INDEX[:, :, 0] % (DIM if dim else ROWS)  # a vector per member, with repeats
    check_against_torch(
        lambda x: vmap(lambda x, i: x.index_select(dim, i), in_dims=in_dims)(x, sg.tensor(index)),
        lambda x: torch.func.vmap(lambda x, i: x.index_select(dim, i), in_dims=in_dims)(
            x, torch.tensor(index)
        ),
        [x],
        what=f"index_select dim={dim} in_dims={in_dims}",
    )


def test_index_select_of_a_0d_tensor_with_batched_indices_matches_a_loop():
    x = sg.tensor(5.0, requires_grad=True)
    out = vmap(lambda i: x.index_select(0, i))(sg.tensor([[0], [0]]))
    out.sum().backward()
    assert out.tolist() == [5.0, 5.0] and x.grad.item() == 2.0


def test_one_hot_of_batched_labels_matches_torch_and_checks_every_member():
    """PyTorch's vmap writes a row of zeros for a label past num_classes; ours raises as a
    call outside vmap does (no silent wrong result)."""
    labels = INDEX[:, :, 0]
    ours = vmap(lambda i: F.one_hot(i, ROWS))(sg.tensor(labels))
    theirs = torch.func.vmap(lambda i: torch.nn.functional.one_hot(i, ROWS))(torch.tensor(labels))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(RuntimeError, match="explicit positive num_classes"):
        vmap(F.one_hot)(sg.tensor(labels))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        vmap(lambda i: F.one_hot(i, 3))(sg.tensor(labels))


BAG_CASES = {  # a member's call (index, weight, per-sample weights), the same for both libraries
    "2-D input, mean": lambda i, w, s, m: m.nn.functional.embedding_bag(i, w),
    "2-D input, max, padding_idx": lambda i, w, s, m: m.nn.functional.embedding_bag(
        i, w, mode="max", padding_idx=7
    ),
    "1-D input, offsets, sum": lambda i, w, s, m: m.nn.functional.embedding_bag(
        i.flatten(), w, m.tensor([0, 3, 3]), mode="sum"
    ),
    "per_sample_weights": lambda i, w, s, m: m.nn.functional.embedding_bag(
        i, w, mode="sum", per_sample_weights=s
    ),
}


@pytest.mark.parametrize("in_dims", [(0, None, 0), (0, 0, 0), (None, 0, 0)], ids=str)
@pytest.mark.parametrize("name", BAG_CASES)
def test_embedding_bag_with_batched_indices_matches_torch_with_gradients(name, in_dims):
    """Each member's bags of its own indices (a loop over the members, as PyTorch's
    fallback), into a shared weight or a weight per member; per-sample weights batched."""
    call = BAG_CASES[name]
    index = INDEX if in_dims[0] == 0 else INDEX[0]
    weight = WEIGHT if in_dims[1] == 0 else WEIGHT[0]
    samples = RNG.standard_normal(INDEX.shape)
    check_against_torch(
        lambda w, s: vmap(lambda i, w, s: call(i, w, s, sg), in_dims=in_dims)(
            sg.tensor(index), w, s
        ),
        lambda w, s: torch.func.vmap(lambda i, w, s: call(i, w, s, torch), in_dims=in_dims)(
            torch.tensor(index), w, s
        ),
        [weight, samples],
        what=f"embedding_bag {name} in_dims={in_dims}",
    )


INDEXINGS = {  # a member's x[index] (x of a member's shape (5, 6, 7)), the same for both
    "x[i]": lambda x, i, j: x[i],
    "x[:, i]": lambda x, i, j: x[:, i],
    "x[..., i]": lambda x, i, j: x[..., i],
    "x[None, 1:, i, 2]": lambda x, i, j: x[None, 1:, i, 2],
    "x[i, j]": lambda x, i, j: x[i, j],
    "x[2, i]": lambda x, i, j: x[2, i],
    "x[i, :, j] (apart)": lambda x, i, j: x[i, :, j],
    "x[list, i]": lambda x, i, j: x[:, [0, 2, 4], i],
    "x[i[0]] (0-d)": lambda x, i, j: x[i[0]],
    "x[-i]": lambda x, i, j: x[-1 - i],
}
X = RNG.standard_normal((BATCH, 5, 6, 7))
I = RNG.integers(0, 5, (BATCH, 2, 3))


@pytest.mark.parametrize("in_dims", [(None, 0, None), (0, 0, None), (None, 0, 0)], ids=str)
@pytest.mark.parametrize("name", INDEXINGS)
def test_indexing_with_batched_index_tensors_matches_torch_with_gradients(name, in_dims):
    op = INDEXINGS[name]
    x = X if in_dims[0] == 0 else X[0]
    j = I[:, :1] if in_dims[2] == 0 else I[0, :1]  # a second index tensor, batched or not
    check_against_torch(
        lambda x: vmap(op, in_dims=in_dims)(x, sg.tensor(I), sg.tensor(j)),
        lambda x: torch.func.vmap(op, in_dims=in_dims)(x, torch.tensor(I), torch.tensor(j)),
        [x],
        what=f"{name} in_dims={in_dims}",
    )


def test_indexing_by_a_batched_mask_is_refused_as_torch():
    with pytest.raises(RuntimeError, match=r"vmap: x\[mask\] with a batched index"):
        vmap(lambda i: sg.tensor(X[0])[0, 0][i > 1])(sg.tensor(I[:, 0]))


@pytest.mark.parametrize("outer", ["index", "tensor"])
def test_indexing_in_nested_vmaps_matches_torch(outer):
    """The index batched by one vmap and the tensor by the other, either way round."""

    def nested(lib, vmap_of):
        x, index = lib.tensor(X[:, 0]), lib.tensor(I[:, 0])

        def member(x, i):
            return x[:, i] * 2

        if outer == "index":
            return vmap_of(lambda i: vmap_of(lambda x: member(x, i))(x))(index)
        return vmap_of(lambda x: vmap_of(lambda i: member(x, i))(index))(x)

    assert_close(nested(sg, vmap), nested(torch, torch.func.vmap))
