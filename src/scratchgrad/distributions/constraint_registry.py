"""``biject_to`` and ``transform_to``, as ``torch.distributions.constraint_registry``: two
registries from constraints to transforms that map unconstrained reals into them, for
optimizing constrained parameters over unconstrained ones. ``biject_to(c)`` is bijective
(its ``inv`` and ``log_abs_det_jacobian`` exist, for HMC-style samplers); ``transform_to(c)``
need not be (SoftmaxTransform onto the simplex, PositiveDefiniteTransform), which suits
optimizers. Both are looked up by the constraint's class; ``register`` adds one.

>>> from scratchgrad.creation import zeros
>>> from scratchgrad.distributions import constraints
>>> transform_to(constraints.simplex)(zeros(2)).tolist()
[0.5, 0.5]
>>> biject_to(constraints.interval(-1.0, 1.0))(zeros(1)).tolist()
[0.0]
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

from scratchgrad.distributions import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]

Factory = Callable[[constraints.Constraint], transforms.Transform]


class ConstraintRegistry:
    """Constraint classes mapped to factories of transforms onto them.

    >>> registry = ConstraintRegistry()
    >>> @registry.register(constraints.positive)
    ... def _(constraint):
    ...     return transforms.SoftplusTransform()
    >>> registry(constraints.greater_than(0.0))
    SoftplusTransform()
    """

    def __init__(self) -> None:
        self._registry: dict[type, Factory] = {}

    def register(self, constraint: type | constraints.Constraint, factory: Factory | None = None):
        """Register ``factory`` for ``constraint``'s class (a Constraint subclass, or an
        instance standing for its class); used as a decorator when ``factory`` is not given."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError(
                "Expected constraint to be either a Constraint subclass or instance, "
                f"but got {constraint}"
            )
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: constraints.Constraint) -> transforms.Transform:
        """The transform from unconstrained reals onto ``constraint``."""
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__} constraints"
            ) from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


@biject_to.register(constraints.real)
@transform_to.register(constraints.real)
def _transform_to_real(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint: constraints.Constraint) -> transforms.Transform:
    base = biject_to(constraint.base_constraint)
    return transforms.IndependentTransform(base, constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint: constraints.Constraint) -> transforms.Transform:
    base = transform_to(constraint.base_constraint)
    return transforms.IndependentTransform(base, constraint.reinterpreted_batch_ndims)


# NOTE: positive and nonnegative are instances of the greater_than classes, whose factory
# (registered after) wins for them too, as in PyTorch: exp, then a shift by 0
@biject_to.register(constraints.greater_than)
@biject_to.register(constraints.greater_than_eq)
@transform_to.register(constraints.greater_than)
@transform_to.register(constraints.greater_than_eq)
def _transform_to_greater_than(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.ComposeTransform(
        [transforms.ExpTransform(), transforms.AffineTransform(constraint.lower_bound, 1)]
    )


@biject_to.register(constraints.less_than)
@transform_to.register(constraints.less_than)
def _transform_to_less_than(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.ComposeTransform(
        [transforms.ExpTransform(), transforms.AffineTransform(constraint.upper_bound, -1)]
    )


@biject_to.register(constraints.interval)
@biject_to.register(constraints.half_open_interval)
@transform_to.register(constraints.interval)
@transform_to.register(constraints.half_open_interval)
def _transform_to_interval(constraint: constraints.Constraint) -> transforms.Transform:
    lower, upper = constraint.lower_bound, constraint.upper_bound
    lower_is_0 = isinstance(lower, numbers.Number) and lower == 0
    upper_is_1 = isinstance(upper, numbers.Number) and upper == 1
    if lower_is_0 and upper_is_1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform(
        [transforms.SigmoidTransform(), transforms.AffineTransform(lower, upper - lower)]
    )


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.PositiveDefiniteTransform()


@biject_to.register(constraints.corr_cholesky)
@transform_to.register(constraints.corr_cholesky)
def _transform_to_corr_cholesky(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.CorrCholeskyTransform()


@biject_to.register(constraints.cat)
def _biject_to_cat(constraint: constraints.Constraint) -> transforms.Transform:
    parts = [biject_to(c) for c in constraint.cseq]
    return transforms.CatTransform(parts, constraint.dim, constraint.lengths)


@transform_to.register(constraints.cat)
def _transform_to_cat(constraint: constraints.Constraint) -> transforms.Transform:
    parts = [transform_to(c) for c in constraint.cseq]
    return transforms.CatTransform(parts, constraint.dim, constraint.lengths)


@biject_to.register(constraints.stack)
def _biject_to_stack(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


@transform_to.register(constraints.stack)
def _transform_to_stack(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.StackTransform([transform_to(c) for c in constraint.cseq], constraint.dim)
