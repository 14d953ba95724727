"""``Gamma``, ``Chi2``, ``Dirichlet`` and ``Beta``, as ``torch.distributions``', with
reparameterized samples: a standard gamma sample x of concentration alpha (drawn by NumPy's
generator) gets the gradient dx/dalpha = -(dF/dalpha) / f(x) (F the CDF, f the density, at x:
the implicit reparameterization), by PyTorch's approximation of it (``standard_gamma_grad``,
ported term for term); Dirichlet and Beta samples are normalized gammas, differentiated
through that normalization."""

from __future__ import annotations

from scratchgrad import backend
from scratchgrad.autograd.function import Function, once_differentiable
from scratchgrad.creation import as_tensor
from scratchgrad.distributions import constraints
from scratchgrad.distributions.exp_family import ExponentialFamily
from scratchgrad.distributions.utils import broadcast_all, numpy_draw
from scratchgrad.dtypes import finfo
from scratchgrad.nn.functional import one_hot
from scratchgrad.special import digamma, gammainc, gammaln, xlogy
from scratchgrad.tensor import Size, Tensor, stack, where

# PyTorch's single-precision constants (0.8f, 0.9f, 1.1f), widened as its C++ widens them
_SMALL_X, _BAND_LOW, _BAND_HIGH = 0.800000011920929, 0.8999999761581421, 1.100000023841858
# the bivariate rational approximation's coefficients, PyTorch's
_COEF_UV = (
    (0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084),
    (0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915,
     -0.00058392623),
    (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326,
     0.00085092367, -1.5247877e-07),
)  # fmt: skip


def _grad_small_x(alpha: Tensor, x: Tensor) -> Tensor:
    """Taylor series of the CDF in x (for x < 0.8): six terms, as PyTorch's."""
    numer, denom = 1.0, alpha
    series1, series2 = 1 / denom, 1 / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-x / i)
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    pow_x_alpha = x.pow(alpha)
    pdf = x.pow(alpha - 1) * (-x).exp()
    cdf_alpha = (x.log() - digamma(alpha)) * pow_x_alpha * series1 - pow_x_alpha * series2
    result = -cdf_alpha / pdf
    return where(result.isnan(), 0.0, result)


def _grad_large_alpha(alpha: Tensor, x: Tensor) -> Tensor:
    """Rice's saddle point expansion (for alpha > 8); a polynomial near x = alpha."""
    near = (
        (1 + 24 * alpha * (1 + 12 * alpha))
        * (
            1440 * alpha * alpha
            + 6 * x * (53 - 120 * x)
            - 65 * x * x / alpha
            + alpha * (107 + 3600 * x)
        )
        / (1244160 * alpha.pow(4))
    )
    denom = (8 * alpha).sqrt()
    term2 = denom / (alpha - x)
    term3 = (x - alpha - alpha * (x / alpha).log()).pow(-1.5)
    term23 = where(x < alpha, term2 - term3, term2 + term3)
    term1 = (x / alpha).log() * term23 - (2 / alpha).sqrt() * (alpha + x) / (alpha - x).pow(2)
    stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
    far = -stirling * x * term1 / denom
    return where((_BAND_LOW * alpha <= x) & (x <= _BAND_HIGH * alpha), near, far)


def _grad_rational(alpha: Tensor, x: Tensor) -> Tensor:
    """A bivariate rational approximation in log(x / alpha) and log(alpha)."""
    u, v = (x / alpha).log(), alpha.log()
    c = [a + u * (b + u * d) for a, b, d in zip(*_COEF_UV)]
    p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
    q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
    return (p / q).exp()


def standard_gamma_grad(alpha: Tensor, x: Tensor) -> Tensor:
    """dx/dalpha for a standard gamma sample ``x`` of concentration ``alpha`` with its
    quantile held fixed, as ``torch._standard_gamma_grad`` (an approximation, relative error
    about 1e-3 at worst where the series and expansions meet).

    >>> from scratchgrad.creation import tensor
    >>> round(standard_gamma_grad(tensor([1.0]), tensor([1.0])).item(), 4)
    1.1736
    """
    # every branch is computed everywhere and the right one kept: the others' overflows and
    # divisions by zero are not results
    with backend.errstate(all="ignore"):
        small, large, mid = (
            f(alpha, x) for f in (_grad_small_x, _grad_large_alpha, _grad_rational)
        )
        return where(x < _SMALL_X, small, where(alpha > 8, large, mid))


class StandardGamma(Function):
    """The drawn sample ``x`` (an input: the draw happens outside, so forward is pure), with
    the implicit reparameterization's gradient to ``alpha``; not differentiable twice (as
    PyTorch's ``_standard_gamma_grad``)."""

    @staticmethod
    def forward(ctx, alpha, x):
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * standard_gamma_grad(alpha, x), None


def standard_gamma(alpha: Tensor) -> Tensor:
    """Standard gamma samples of concentration ``alpha`` (one per entry), reparameterized,
    clamped to the dtype's smallest normal number (as PyTorch's)."""
    x = numpy_draw("standard_gamma", alpha.shape, alpha).clamp(min=finfo(alpha.dtype).tiny)
    return StandardGamma.apply(alpha, x)


class Gamma(ExponentialFamily):
    """The gamma distribution of shape ``concentration`` and inverse scale ``rate``.

    >>> from scratchgrad.creation import tensor
    >>> d = Gamma(tensor([2.0]), tensor([1.0]))
    >>> d.mean.tolist(), [round(x, 4) for x in d.log_prob(tensor([1.0])).tolist()]
    ([2.0], [-1.0])
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(
        self,
        concentration: Tensor | float,
        rate: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        self._init_params(validate_args, concentration=concentration, rate=rate)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value.clamp(min=finfo(value.dtype).tiny)

    def log_prob(self, value: Tensor | float) -> Tensor:
        # PyTorch's Gamma alone casts the value to its own dtype (and takes plain numbers)
        value = as_tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        c, rate = self.concentration, self.rate
        return xlogy(c, rate) + xlogy(c - 1, value) - rate * value - gammaln(c)

    def cdf(self, value: Tensor) -> Tensor:
        """The regularized lower incomplete gamma function at ``rate * value``, as PyTorch's
        (differentiable in ``value`` and ``rate``; not in ``concentration``, as PyTorch's)."""
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - self.rate.log() + gammaln(c) + (1.0 - c) * digamma(c)

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        # t(x) = (log x, x)
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return gammaln(x + 1) - (x + 1) * (-y).log()


class Chi2(Gamma):
    """The chi-squared distribution of ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``.

    >>> from scratchgrad.creation import tensor
    >>> Chi2(tensor([3.0])).variance.tolist()
    [6.0]
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Tensor | float, validate_args: bool | None = None) -> None:
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    @property
    def df(self) -> Tensor:
        return self.concentration * 2

    def expand(self, batch_shape: tuple, _instance: Chi2 | None = None) -> Chi2:
        # the parameters held are Gamma's (df is made of them), not those named by arg_constraints
        new = super().expand(batch_shape, _instance)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        return new


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over the simplex of the last dimension of ``concentration``.

    >>> from scratchgrad.creation import tensor
    >>> d = Dirichlet(tensor([1.0, 3.0]))
    >>> d.mean.tolist(), d.event_shape
    ([0.25, 0.75], scratchgrad.Size([2]))
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = concentration.shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        # the interior maximum; where every concentration is below 1 the density peaks at
        # a vertex, the largest one's (PyTorch's choice)
        less_one = (self.concentration - 1).clamp(min=0)
        mode = less_one / less_one.sum(-1, keepdim=True)
        vertex = one_hot(mode.argmax(-1), less_one.shape[-1]).to(mode.dtype)
        return where((self.concentration < 1).all(-1, keepdim=True), vertex, mode)

    @property
    def variance(self) -> Tensor:
        c, total = self.concentration, self.concentration.sum(-1, keepdim=True)
        return c * (total - c) / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        gammas = standard_gamma(self.concentration.expand(self._extended_shape(sample_shape)))
        return gammas / gammas.sum(-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return xlogy(c - 1.0, value).sum(-1) + gammaln(c.sum(-1)) - gammaln(c).sum(-1)

    def entropy(self) -> Tensor:
        c, k = self.concentration, self.concentration.shape[-1]
        total = c.sum(-1)
        return (
            gammaln(c).sum(-1)
            - gammaln(total)
            - (k - total) * digamma(total)
            - ((c - 1.0) * digamma(c)).sum(-1)
        )

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        # t(x) = log x (theta shifted by 1: h(x) = 1 / prod(x))
        return (self.concentration,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return gammaln(x).sum(-1) - gammaln(x.sum(-1))


class Beta(ExponentialFamily):
    """The beta distribution on [0, 1] of concentrations ``concentration1`` (alpha) and
    ``concentration0`` (beta): the first entry of a two-entry Dirichlet.

    >>> from scratchgrad.creation import tensor
    >>> d = Beta(tensor([2.0]), tensor([2.0]))
    >>> d.mean.tolist(), [round(x, 4) for x in d.log_prob(tensor([0.5])).tolist()]
    ([0.5], [0.4055])
    """

    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self,
        concentration1: Tensor | float,
        concentration0: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        c1, c0 = broadcast_all(concentration1, concentration0)
        self._dirichlet = Dirichlet(stack([c1, c0], -1), validate_args=validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    @property
    def concentration1(self) -> Tensor:
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        c1, c0 = self.concentration1, self.concentration0
        total = c1 + c0
        return c1 * c0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        # t(x) = (log x, log(1 - x)), shifted by 1 as Dirichlet's
        return self.concentration1, self.concentration0

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return gammaln(x) + gammaln(y) - gammaln(x + y)
