"""nn.utils.parameters_to_vector and vector_to_parameters against torch.nn.utils: values,
gradients through the vector, memory shared with it, and torch's errors."""

import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad import nn

SHAPES = [(3, 4), (4,), (2, 2, 2), ()]


def parameters(dtype="float32", seed=0):
    """The same parameters (a 0-d one among them) in both libraries."""
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]
    ours = [nn.Parameter(sg.tensor(v)) for v in values]
    theirs = [torch.nn.Parameter(torch.tensor(v)) for v in values]
    return ours, theirs


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_parameters_to_vector_values_and_gradients_match_torch(dtype):
    ours, theirs = parameters(dtype)
    vec = nn.utils.parameters_to_vector(iter(ours))  # any iterable: a generator here
    tvec = torch.nn.utils.parameters_to_vector(iter(theirs))
    assert vec.shape == tuple(tvec.shape) == (25,) and str(vec.dtype).split(".")[-1] == dtype
    np.testing.assert_array_equal(vec.detach().numpy(), tvec.detach().numpy())
    assert vec.requires_grad and tvec.requires_grad
    weights = np.linspace(-1, 1, 25).astype(dtype)
    (vec * vec * sg.tensor(weights)).sum().backward()
    (tvec * tvec * torch.tensor(weights)).sum().backward()
    for p, q in zip(ours, theirs):
        assert p.grad.shape == tuple(q.grad.shape)
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)


def test_parameters_to_vector_of_a_model_matches_torch():
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    tmodel = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    tmodel.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    vec = nn.utils.parameters_to_vector(model.parameters())
    tvec = torch.nn.utils.parameters_to_vector(tmodel.parameters())
    np.testing.assert_array_equal(vec.detach().numpy(), tvec.detach().numpy())


def test_parameters_to_vector_needs_views():
    """A parameter whose strides allow no flat view (a transpose) raises, as in torch."""
    ours, theirs = parameters()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        torch.nn.utils.parameters_to_vector([theirs[0].t()])
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        nn.utils.parameters_to_vector([ours[0].t()])


def test_vector_to_parameters_matches_torch_and_shares_the_vector():
    ours, theirs = parameters()
    values = np.arange(25, dtype="float32") / 7
    vec, tvec = sg.tensor(values), torch.tensor(values)
    assert nn.utils.vector_to_parameters(vec, ours) is None
    torch.nn.utils.vector_to_parameters(tvec, theirs)
    for p, q, shape in zip(ours, theirs, SHAPES):
        assert p.shape == tuple(q.shape) == shape
        assert isinstance(p, nn.Parameter) and p.requires_grad and p.is_leaf
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    # The round trip gives the vector back; the parameters are views of its memory.
    np.testing.assert_array_equal(nn.utils.parameters_to_vector(ours).detach().numpy(), values)
    vec.add_(1.0)
    tvec.add_(1.0)
    for p, q in zip(ours, theirs):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert ours[1].tolist() == pytest.approx((values[12:16] + 1).tolist())


def test_vector_to_parameters_then_training_matches_torch():
    """Gradients reach the parameters loaded from a vector (not the vector), as in torch."""
    sg.manual_seed(0)
    model, tmodel = nn.Linear(3, 2), torch.nn.Linear(3, 2)
    values = np.linspace(-1, 1, 8).astype("float32")
    vec = sg.tensor(values, requires_grad=True)
    tvec = torch.tensor(values, requires_grad=True)
    nn.utils.vector_to_parameters(vec, model.parameters())
    torch.nn.utils.vector_to_parameters(tvec, tmodel.parameters())
    x = np.ones((4, 3), dtype="float32")
    model(sg.tensor(x)).pow(2).sum().backward()
    tmodel(torch.tensor(x)).pow(2).sum().backward()
    assert vec.grad is None and tvec.grad is None
    np.testing.assert_allclose(model.weight.grad.numpy(), tmodel.weight.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(model.bias.grad.numpy(), tmodel.bias.grad.numpy(), rtol=1e-6)


def test_vector_to_parameters_sizes_as_torch():
    """A longer vector fills the parameters and its rest is ignored; a shorter one raises."""
    ours, theirs = parameters()
    values = np.arange(31, dtype="float32")
    nn.utils.vector_to_parameters(sg.tensor(values), ours)
    torch.nn.utils.vector_to_parameters(torch.tensor(values), theirs)
    for p, q in zip(ours, theirs):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    with pytest.raises(RuntimeError, match="invalid for input of size"):
        torch.nn.utils.vector_to_parameters(torch.zeros(20), theirs)
    with pytest.raises(RuntimeError, match="cannot reshape array of size"):
        nn.utils.vector_to_parameters(sg.zeros(20), ours)


@pytest.mark.parametrize("vec", [[1.0, 2.0], np.zeros(3), 2.0])
def test_vector_to_parameters_needs_a_tensor(vec):
    ours, theirs = parameters()
    with pytest.raises(TypeError) as error:
        torch.nn.utils.vector_to_parameters(vec, theirs)
    expected = str(error.value).replace("torch.Tensor", "scratchgrad.Tensor")
    with pytest.raises(TypeError) as error:
        nn.utils.vector_to_parameters(vec, ours)
    assert str(error.value) == expected


def test_no_parameters_raise_torchs_error():
    """PyTorch's cat raises a ValueError for an empty list (its stack a RuntimeError)."""
    for lib in (torch, sg):
        with pytest.raises(ValueError, match="non-empty list"):
            lib.nn.utils.parameters_to_vector([])
        with pytest.raises(ValueError, match="non-empty list"):
            lib.cat([])
        with pytest.raises(RuntimeError, match="non-empty TensorList"):
            lib.stack([])
