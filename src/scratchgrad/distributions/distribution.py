"""``Distribution``: the base class of ``scratchgrad.distributions``, as PyTorch's."""

from __future__ import annotations

import warnings
from typing import Any

from scratchgrad import backend
from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.distributions import constraints
from scratchgrad.distributions.utils import broadcast_all, lazy_property
from scratchgrad.tensor import Size, Tensor


class Distribution:
    """A probability distribution over tensors of ``batch_shape + event_shape``: a batch of
    independent distributions, each over events of ``event_shape``. As PyTorch's, parameters
    are checked against ``arg_constraints`` when ``validate_args`` (default: on, off under
    ``python -O``; see ``set_default_validate_args``), and so is every value given to
    ``log_prob`` and ``cdf`` against ``support``; a bad one raises ValueError.

    >>> from scratchgrad.creation import tensor
    >>> from scratchgrad.distributions import Normal
    >>> d = Normal(tensor([0.0, 1.0]), 2.0)
    >>> d.batch_shape, d.event_shape, tuple(d.sample((5,)).shape)
    (scratchgrad.Size([2]), scratchgrad.Size([]), (5, 2))
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn the validation of new distributions' parameters and values on or off.

        >>> Distribution.set_default_validate_args(True)
        """
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(
        self,
        batch_shape: tuple = Size(),
        event_shape: tuple = Size(),
        validate_args: bool | None = None,
    ) -> None:
        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._validate_parameters()

    def _init_params(self, validate_args: bool | None, **params: Tensor | float) -> None:
        """Set the parameters of a distribution of scalars, broadcast together once (numbers
        made tensors, see ``broadcast_all``), and its batch shape: theirs (() when all are
        numbers, as PyTorch's); then validate them."""
        values = broadcast_all(*params.values())
        self.__dict__.update(zip(params, values))
        Distribution.__init__(self, values[0].shape, validate_args=validate_args)

    def _validate_parameters(self) -> None:
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(
                f"{self.__class__} does not define `arg_constraints`. Please set "
                "`arg_constraints = {}` or initialize the distribution with "
                "`validate_args=False` to turn off validation.",
                stacklevel=4,
            )
        for name, constraint in arg_constraints.items():
            lazy = isinstance(getattr(type(self), name, None), lazy_property)
            if lazy and name not in self.__dict__:
                continue  # only the parameter given is checked (logits, not probs made of it)
            value = getattr(self, name)
            if not constraint.check(value)._checked_values().all():
                raise ValueError(
                    f"Expected parameter {name} ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                    f"{constraint!r}, but found invalid values:\n{_shown(value)}"
                )

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Distribution:
        """A view of this distribution with its batch dimensions expanded to ``batch_shape``,
        as ``Tensor.expand`` (no copy, no new check of the parameters).

        >>> from scratchgrad.distributions import Normal
        >>> Normal(0.0, 1.0).expand((3,)).batch_shape
        scratchgrad.Size([3])
        """
        batch_shape = Size(batch_shape)
        new = type(self).__new__(type(self)) if _instance is None else _instance
        new.__dict__.update(self.__dict__)
        kept = len(self._batch_shape)
        for name, value in self.__dict__.items():
            # parameters keep their event dimensions; inner distributions (Independent's,
            # OneHotCategorical's) expand their own batch dimensions beyond ours
            if isinstance(value, Distribution):
                new.__dict__[name] = value.expand(batch_shape + value.batch_shape[kept:])
            elif name in self.arg_constraints:
                new.__dict__[name] = value.expand(batch_shape + value.shape[kept:])
        new._batch_shape = batch_shape
        return new

    @property
    def batch_shape(self) -> Size:
        """The shape over which the parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of one sample, without batching."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        """Each parameter's constraint."""
        raise NotImplementedError

    @property
    def support(self) -> constraints.Constraint:
        """The set the samples lie in."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        """Samples of shape ``sample_shape + batch_shape + event_shape``, drawn from the
        library's seeded generator (``scratchgrad.manual_seed``); no gradient flows."""
        with no_grad():
            return self.rsample(sample_shape)

    def sample_n(self, n: int) -> Tensor:
        """``sample((n,))`` under PyTorch's deprecated name, with its FutureWarning.

        >>> import warnings
        >>> from scratchgrad.distributions import Normal
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     Normal(0.0, 1.0).sample_n(3).shape
        scratchgrad.Size([3])
        """
        warnings.warn(
            "`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
            FutureWarning,
            stacklevel=2,
        )
        return self.sample((n,))

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        """Reparameterized samples, as ``sample``'s: gradients flow back to the parameters."""
        raise NotImplementedError

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse of ``cdf``."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete distribution, along dimension 0."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, one per batch entry."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """``exp(entropy())``."""
        return self.entropy().exp()

    def _extended_shape(self, sample_shape: tuple = Size()) -> Size:
        return Size(sample_shape) + self._batch_shape + self._event_shape

    def _validate_sample(self, value: Tensor) -> None:
        """Check that ``value`` has the event shape, broadcasts with the batch shape and lies
        in the support; with PyTorch's messages."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        shape, event = value.size(), self._event_shape
        if shape[len(shape) - len(event) :] != event:
            raise ValueError(
                f"The right-most size of value must match event_shape: {shape} vs {event}."
            )
        expected = self._batch_shape + event
        if any(i != j and 1 not in (i, j) for i, j in zip(reversed(shape), reversed(expected))):
            raise ValueError(
                f"Value is not broadcastable with batch_shape+event_shape: {shape} vs {expected}."
            )
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(
                f"{self.__class__} does not define `support` to enable sample validation. "
                "Please initialize the distribution with `validate_args=False` to turn off "
                "validation.",
                stacklevel=3,
            )
            return
        if not support.check(value)._checked_values().all():
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(shape)}) to "
                f"be within the support ({support!r}) of the distribution {self!r}, but found "
                f"invalid values:\n{_shown(value)}"
            )

    def __repr__(self) -> str:
        given = [name for name in self.arg_constraints if name in self.__dict__]
        args = ", ".join(
            f"{name}: {_shown(v) if (v := self.__dict__[name]).numel() == 1 else v.size()}"
            for name in given
        )
        return f"{type(self).__name__}({args})"


def _shown(value: Tensor) -> Any:
    """A tensor as PyTorch's messages show it (a 0-d one as its number), or, inside vmap,
    where no single member's values exist, as the batch's repr."""
    return value if backend.is_array(value.array) else repr(value)


class LocationScale(Distribution):
    """A distribution of a real value given by a location (its mean and mode) and a positive
    scale, broadcast together: what ``Normal`` and ``Laplace`` share."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(
        self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self._init_params(validate_args, loc=loc, scale=scale)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc
