"""Constraints: the sets a distribution's parameters and samples live in, as
``torch.distributions.constraints``. ``check(value)`` gives a boolean tensor, one entry per
event (``event_dim`` rightmost dimensions make one event); the names and reprs are PyTorch's,
since validation errors print them.

>>> from scratchgrad.creation import tensor
>>> positive.check(tensor([1.0, -1.0])).tolist(), repr(positive)
([True, False], 'GreaterThan(lower_bound=0.0)')
"""

from __future__ import annotations

from typing import Any

from scratchgrad import linalg
from scratchgrad.tensor import Tensor

__all__ = [
    "Constraint",
    "boolean",
    "greater_than",
    "greater_than_eq",
    "independent",
    "integer_interval",
    "interval",
    "less_than",
    "lower_cholesky",
    "multinomial",
    "nonnegative_integer",
    "nonnegative",
    "one_hot",
    "positive",
    "positive_definite",
    "positive_integer",
    "real",
    "real_vector",
    "simplex",
    "unit_interval",
]


class Constraint:
    """A set of values; ``check`` says which entries (events) of a tensor lie in it."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__[1:] + "()"


class _Bounded(Constraint):
    """A constraint with bounds, printed as PyTorch prints them: ``Name(lower_bound=...)``."""

    def __init__(self, **bounds: Any) -> None:
        self.__dict__.update(bounds)
        self._bounds = bounds

    def __repr__(self) -> str:
        bounds = ", ".join(f"{name}={value}" for name, value in self._bounds.items())
        return f"{type(self).__name__[1:]}({bounds})"


class _Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        return value == value  # False for NaN


class _GreaterThan(_Bounded):
    def __init__(self, lower_bound: Any) -> None:
        super().__init__(lower_bound=lower_bound)

    def check(self, value: Tensor) -> Tensor:
        return value > self.lower_bound


class _GreaterThanEq(_GreaterThan):
    def check(self, value: Tensor) -> Tensor:
        return value >= self.lower_bound


class _LessThan(_Bounded):
    def __init__(self, upper_bound: Any) -> None:
        super().__init__(upper_bound=upper_bound)

    def check(self, value: Tensor) -> Tensor:
        return value < self.upper_bound


class _Interval(_Bounded):
    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        super().__init__(lower_bound=lower_bound, upper_bound=upper_bound)

    def check(self, value: Tensor) -> Tensor:
        return (value >= self.lower_bound) & (value <= self.upper_bound)


class _IntegerInterval(_Interval):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & super().check(value)


class _IntegerGreaterThan(_GreaterThan):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound)


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete, event_dim = True, 1

    def check(self, value: Tensor) -> Tensor:
        return boolean.check(value).all(-1) & (value.sum(-1) == 1)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Vectors of non-negative integer counts summing to at most ``upper_bound``."""

    is_discrete, event_dim = True, 1

    def __init__(self, upper_bound: int) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & (value.sum(-1) <= self.upper_bound)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        lower = (value.tril() == value).flatten(-2).all(-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _PositiveDefinite(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        # symmetric first (as PyTorch: a non-symmetric matrix is not factored); then all
        # eigenvalues positive, where PyTorch asks whether a Cholesky factorization succeeds
        # (the same set, up to rounding at its edge)
        symmetric = value.isclose(value.mT, atol=1e-6).flatten(-2).all(-1)
        if not symmetric.all():
            return symmetric
        return (linalg.eigvalsh(value) > 0).all(-1)


class _IndependentConstraint(Constraint):
    """``base_constraint`` over events of ``reinterpreted_batch_ndims`` more dimensions: an
    event is in the set when all its entries are."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        result, n = self.base_constraint.check(value), self.reinterpreted_batch_ndims
        if result.dim() < n:
            expected = n + self.base_constraint.event_dim
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        return result if n == 0 else result.reshape(*result.shape[: result.dim() - n], -1).all(-1)

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


# PyTorch's public names: instances for the fixed sets, classes for the parameterized ones
greater_than, greater_than_eq, less_than = _GreaterThan, _GreaterThanEq, _LessThan
interval, integer_interval, independent = _Interval, _IntegerInterval, _IndependentConstraint
multinomial = _Multinomial
real, boolean, one_hot, simplex = _Real(), _Boolean(), _OneHot(), _Simplex()
real_vector = independent(real, 1)
positive, nonnegative = greater_than(0.0), greater_than_eq(0.0)
nonnegative_integer, positive_integer = _IntegerGreaterThan(0), _IntegerGreaterThan(1)
unit_interval = interval(0.0, 1.0)
lower_cholesky, positive_definite = _LowerCholesky(), _PositiveDefinite()
