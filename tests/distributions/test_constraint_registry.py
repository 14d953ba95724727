"""biject_to and transform_to against torch.distributions.constraint_registry: for each
constraint, the transform PyTorch picks (by type), mapping random unconstrained inputs into the
constraint (``check``), its values, inverse (round trip) and log-determinant PyTorch's with
their gradients; the new transforms (Softplus, LowerCholesky, PositiveDefinite, CorrCholesky,
Cat, Stack, Reshape, Independent, CumulativeDistribution) and constraints on their own."""

import numpy as np
import pytest
import torch
import torch.distributions as TD
import torch.distributions.constraints as TC
from oracle import assert_close, check_outputs_and_gradients, leaves

import scratchgrad as sg
import scratchgrad.distributions as D
import scratchgrad.distributions.constraints as C

RNG = np.random.default_rng(5)

# name -> (build(constraints module), the shape of the constrained value)
CONSTRAINTS = {
    "real": (lambda c: c.real, (2, 3)),
    "real_vector": (lambda c: c.real_vector, (2, 3)),
    "positive": (lambda c: c.positive, (2, 3)),
    "nonnegative": (lambda c: c.nonnegative, (2, 3)),
    "greater_than(2)": (lambda c: c.greater_than(2.0), (2, 3)),
    "greater_than_eq(-1)": (lambda c: c.greater_than_eq(-1.0), (2, 3)),
    "less_than(1)": (lambda c: c.less_than(1.0), (2, 3)),
    "interval(-2, 3)": (lambda c: c.interval(-2.0, 3.0), (2, 3)),
    "half_open_interval(0, 1)": (lambda c: c.half_open_interval(0.0, 1.0), (2, 3)),
    "unit_interval": (lambda c: c.unit_interval, (2, 3)),
    "simplex": (lambda c: c.simplex, (2, 4)),
    "independent(positive, 1)": (lambda c: c.independent(c.positive, 1), (2, 3)),
    "lower_cholesky": (lambda c: c.lower_cholesky, (2, 3, 3)),
    "positive_definite": (lambda c: c.positive_definite, (2, 3, 3)),
    "positive_semidefinite": (lambda c: c.positive_semidefinite, (2, 3, 3)),
    "corr_cholesky": (lambda c: c.corr_cholesky, (2, 4, 4)),
    "cat": (lambda c: c.cat([c.positive, c.interval(0.0, 2.0)], -1, [2, 1]), (2, 3)),
    "stack": (lambda c: c.stack([c.positive, c.real, c.unit_interval], -1), (2, 3)),
}


def _registered(registry, constraint):
    try:
        return registry(constraint)
    except NotImplementedError:
        return None


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name", CONSTRAINTS)
def test_the_transform_maps_into_the_constraint_as_pytorchs(registry, name):
    build, shape = CONSTRAINTS[name]
    theirs = _registered(getattr(TD, registry), build(TC))
    ours = _registered(getattr(D, registry), build(C))
    assert (ours is None) == (theirs is None), f"{registry}({name}) registered in one only"
    if ours is None:
        return
    assert type(ours).__name__ == type(theirs).__name__
    x_shape = tuple(theirs.inverse_shape(torch.Size(shape)))
    x, tx = leaves(RNG.standard_normal(x_shape))
    y, ty = ours(x), theirs(tx)
    assert build(C).check(y).all(), f"{name}: a value outside the constraint"
    check_outputs_and_gradients(y, ty, [(x, tx)], what=f"{registry}({name})")
    if theirs.bijective:
        x2, tx2 = leaves(RNG.standard_normal(x_shape))
        assert_close(ours.inv(ours(x2)), tx2.detach(), what="round trip")
    try:
        expected = theirs.log_abs_det_jacobian(tx, ty)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            ours.log_abs_det_jacobian(x, y)
        return
    x, tx = leaves(x.detach().numpy())
    out = ours.log_abs_det_jacobian(x, ours(x))
    check_outputs_and_gradients(out, theirs.log_abs_det_jacobian(tx, theirs(tx)), [(x, tx)])
    assert expected.shape == out.shape


def test_the_inverse_of_transform_to_round_trips_where_it_is_one_to_one_on_its_image():
    # not bijective, but the inverse recovers a point of the constraint from its image
    y = sg.tensor([[0.2, 0.3, 0.5]], dtype=sg.float64)
    t = D.transform_to(C.simplex)
    assert_close(t(t.inv(y)), y.numpy())
    a = sg.tensor(RNG.standard_normal((3, 3)))
    pd = a @ a.mT + sg.eye(3, dtype=a.dtype)
    t = D.transform_to(C.positive_definite)
    assert_close(t(t.inv(pd)), pd.numpy())


def test_registry_errors_and_register_are_pytorchs():
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        D.biject_to(C.boolean)
    with pytest.raises(TypeError, match="Expected constraint to be either"):
        D.constraint_registry.ConstraintRegistry().register(3, lambda c: None)
    registry = D.constraint_registry.ConstraintRegistry()

    @registry.register(C.positive)
    def _(constraint):
        return D.SoftplusTransform()

    assert isinstance(registry(C.greater_than(3.0)), D.SoftplusTransform)
    assert D.biject_to(C.real) is D.identity_transform


# name -> (build(transforms module, lib), the shape of x)
TRANSFORMS = {
    "Softplus": (lambda m, lib: m.SoftplusTransform(), (2, 3)),
    "LowerCholesky": (lambda m, lib: m.LowerCholeskyTransform(), (2, 3, 3)),
    "PositiveDefinite": (lambda m, lib: m.PositiveDefiniteTransform(), (2, 3, 3)),
    "CorrCholesky": (lambda m, lib: m.CorrCholeskyTransform(), (2, 6)),
    "Reshape": (lambda m, lib: m.ReshapeTransform((2, 3), (3, 2)), (4, 2, 3)),
    "Independent": (lambda m, lib: m.IndependentTransform(m.ExpTransform(), 2), (4, 2, 3)),
    "Cat(dim=-1)": (
        lambda m, lib: m.CatTransform([m.ExpTransform(), m.SigmoidTransform()], -1, [1, 2]),
        (2, 3),
    ),
    "Cat(dim=0)": (
        lambda m, lib: m.CatTransform([m.ExpTransform(), m.AffineTransform(1.0, 3.0)], 0, [2, 2]),
        (4, 3),
    ),
    "Cat(event_dim=1), summed": (
        lambda m, lib: m.CatTransform(
            [m.IndependentTransform(m.ExpTransform(), 1), m.SigmoidTransform()], -1, [1, 2]
        ),
        (2, 3),
    ),
    "Cat(event_dim=1), concatenated": (
        lambda m, lib: m.CatTransform(
            [m.IndependentTransform(m.ExpTransform(), 1), m.SigmoidTransform()], 0, [1, 1]
        ),
        (2, 3),
    ),
    "Stack": (
        lambda m, lib: m.StackTransform([m.ExpTransform(), m.TanhTransform()], dim=1),
        (3, 2, 2),
    ),
    "CumulativeDistribution(Normal)": (
        lambda m, lib: m.CumulativeDistributionTransform(
            (D if m is D.transforms else TD).Normal(
                lib.tensor([0.5, -1.0, 0.0], dtype=lib.float64),
                lib.tensor([1.0, 2.0, 0.5], dtype=lib.float64),
            )
        ),
        (2, 3),
    ),
}


@pytest.mark.parametrize("name", TRANSFORMS)
def test_new_transforms_are_pytorchs(name):
    build, shape = TRANSFORMS[name]
    ours, theirs = build(D.transforms, sg), build(TD.transforms, torch)
    x, tx = leaves(RNG.standard_normal(shape))
    check_outputs_and_gradients(ours(x), theirs(tx), [(x, tx)], what=f"{name}: forward")
    assert ours.forward_shape(shape) == theirs.forward_shape(torch.Size(shape))
    y_shape = tuple(theirs.forward_shape(torch.Size(shape)))
    assert ours.inverse_shape(y_shape) == theirs.inverse_shape(torch.Size(y_shape))
    y, ty = leaves(theirs(torch.tensor(RNG.standard_normal(shape))).numpy())
    check_outputs_and_gradients(ours.inv(y), theirs.inv(ty), [(y, ty)], what=f"{name}: inverse")
    assert ours.domain.event_dim == theirs.domain.event_dim
    assert ours.codomain.event_dim == theirs.codomain.event_dim
    assert ours.bijective == theirs.bijective
    try:
        expected = theirs.log_abs_det_jacobian(tx, theirs(tx))
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            ours.log_abs_det_jacobian(x, ours(x))
        return
    x, tx = leaves(RNG.standard_normal(shape))
    out = ours.log_abs_det_jacobian(x, ours(x))
    expected = theirs.log_abs_det_jacobian(tx, theirs(tx))
    check_outputs_and_gradients(out, expected, [(x, tx)], what=f"{name}: log-determinant")


def test_transform_errors_and_reprs_are_pytorchs():
    for m in (D.transforms, TD.transforms):
        with pytest.raises(ValueError, match="different numbers of elements"):
            m.ReshapeTransform((2, 3), (4,))
        with pytest.raises(ValueError, match="not a flattened lower-diagonal number"):
            m.CorrCholeskyTransform().forward_shape((4,))
    assert repr(D.IndependentTransform(D.ExpTransform(), 1)) == repr(
        TD.IndependentTransform(TD.ExpTransform(), 1)
    )
    t = D.CatTransform([D.ExpTransform()], dim=0, lengths=[2])
    with pytest.raises(AssertionError):
        t(sg.zeros(3))
    assert D.SoftplusTransform() == D.SoftplusTransform()
    assert D.SoftplusTransform().with_cache(1)._cache_size == 1


@pytest.mark.parametrize(
    "name, value",
    [
        ("square", RNG.standard_normal((2, 3, 3))),
        ("square", RNG.standard_normal((2, 3, 2))),
        ("symmetric", np.eye(3) + np.triu(np.ones((3, 3)))),
        ("symmetric", np.ones((2, 3, 3))),
        ("lower_triangular", np.tril(RNG.standard_normal((2, 3, 3)))),
        ("lower_triangular", RNG.standard_normal((2, 3, 3))),
        ("positive_semidefinite", np.ones((2, 2))),
        ("positive_semidefinite", -np.eye(2)),
        ("corr_cholesky", np.eye(3)),
        ("corr_cholesky", 2 * np.eye(3)),
    ],
)
def test_new_constraints_check_as_pytorchs(name, value):
    ours = getattr(C, name).check(sg.tensor(value))
    assert ours.tolist() == getattr(TC, name).check(torch.tensor(value)).tolist()
    assert repr(getattr(C, name)) == repr(getattr(TC, name))


def test_dependent_constraints_are_pytorchs():
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        C.dependent.check(sg.zeros(1))
    with pytest.raises(NotImplementedError, match="cannot be determined statically"):
        _ = C.dependent.event_dim
    assert C.dependent(event_dim=1).event_dim == 1
    assert C.is_dependent(D.GeneralizedPareto.support)
    assert D.GeneralizedPareto.support.event_dim == 0
    assert repr(C.half_open_interval(0.0, 1.0)) == repr(TC.half_open_interval(0.0, 1.0))
