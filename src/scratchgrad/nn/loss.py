"""Loss modules: thin wrappers over the functions of ``nn.functional``.

As in PyTorch, class weights (and BCEWithLogitsLoss's ``pos_weight``) are buffers, so they follow
``to(dtype)`` and appear in ``state_dict``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from scratchgrad.nn import functional as F
from scratchgrad.nn.distance import PairwiseDistance
from scratchgrad.nn.module import Module
from scratchgrad.tensor import Tensor


class _Loss(Module):
    def __init__(
        self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"
    ) -> None:
        super().__init__()
        if size_average is not None or reduce is not None:  # as PyTorch, chosen once, here
            # warned at the user's line: past this file's __init__s, however many there are
            frame, stacklevel = sys._getframe(1), 3
            while frame.f_code.co_filename == __file__:
                frame, stacklevel = frame.f_back, stacklevel + 1
            reduction = F._legacy_reduction(size_average, reduce, stacklevel)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error: ``reduction`` is "mean" (default), "sum" or "none"."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class HuberLoss(_Loss):
    """Squared error below ``delta``, linear beyond."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, self.reduction, self.delta)


class SmoothL1Loss(_Loss):
    """Squared error (over ``beta``) below ``beta``, linear beyond; see ``F.smooth_l1_loss``."""

    def __init__(
        self,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        beta: float = 1.0,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits against class indices or class probabilities.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> loss = nn.CrossEntropyLoss(label_smoothing=0.1)
    >>> round(loss(sg.tensor([[3.0, 0.0, 0.0]]), sg.tensor([0])).item(), 4)
    0.2949
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(
            input,
            target,
            self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of class indices, given log-probabilities."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(
            input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction
        )


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits (a sigmoid and BCELoss in one stable step)."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        pos_weight: Tensor | None = None,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )


class KLDivLoss(_Loss):
    """The Kullback-Leibler divergence of log-probabilities from a target; see
    ``F.kl_div``. ``reduction="batchmean"`` gives the divergence per sample.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> loss = nn.KLDivLoss(reduction="batchmean", log_target=True)
    >>> loss(sg.tensor([[0.25, 0.75]]).log(), sg.tensor([[0.5, 0.5]]).log()).item() > 0
    True
    """

    def __init__(
        self,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        log_target: bool = False,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineEmbeddingLoss(_Loss):
    """1 - cos(x1, x2) for pairs labelled 1, max(0, cos(x1, x2) - ``margin``) for pairs
    labelled -1; see ``F.cosine_embedding_loss``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> x1, x2 = sg.tensor([[1.0, 0.0]]), sg.tensor([[0.0, 1.0]])
    >>> nn.CosineEmbeddingLoss()(x1, x2, sg.tensor([1])).item()
    1.0
    """

    def __init__(
        self,
        margin: float = 0.0,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(
            input1, input2, target, self.margin, reduction=self.reduction
        )


class MarginRankingLoss(_Loss):
    """max(0, -target * (x1 - x2) + ``margin``): ranks x1 above x2 where ``target`` is 1.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.MarginRankingLoss(margin=0.5)(sg.tensor([1.0]), sg.tensor([0.75]), sg.tensor([1]))
    tensor(0.2500)
    """

    def __init__(
        self,
        margin: float = 0.0,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(input1, input2, target, self.margin, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """max(0, d(anchor, positive) - d(anchor, negative) + ``margin``), d the ``p``-norm
    distance; see ``F.triplet_margin_loss``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> a, pos, neg = sg.tensor([[0.0, 0.0]]), sg.tensor([[0.0, 1.0]]), sg.tensor([[0.0, 3.0]])
    >>> nn.TripletMarginLoss()(a, pos, neg).item()
    0.0
    """

    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead"
            )
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(
            anchor,
            positive,
            negative,
            self.margin,
            self.p,
            self.eps,
            self.swap,
            reduction=self.reduction,
        )


class PoissonNLLLoss(_Loss):
    """The negative log likelihood of counts under Poisson distributions whose (log, with
    ``log_input``) rates are the input; see ``F.poisson_nll_loss``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.PoissonNLLLoss()(sg.tensor([0.0, 1.0]), sg.tensor([1.0, 2.0]))
    tensor(0.8591)
    """

    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        size_average: bool | None = None,
        eps: float = 1e-8,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(
            log_input, target, self.log_input, self.full, eps=self.eps, reduction=self.reduction
        )


class GaussianNLLLoss(_Loss):
    """The negative log likelihood of a target under Gaussians of mean ``input`` and variance
    ``var``; see ``F.gaussian_nll_loss`` for the shapes ``var`` may have.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.GaussianNLLLoss()(sg.tensor([0.0, 1.0]), sg.tensor([1.0, 1.0]), sg.ones(2))
    tensor(0.2500)
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor | float) -> Tensor:
        return F.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Binary cross entropy of logits for each class (the last dim), averaged over the classes;
    ``weight`` (a buffer) weighs each class. See ``F.multilabel_soft_margin_loss``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> loss = nn.MultiLabelSoftMarginLoss(weight=sg.tensor([1.0, 0.0]))
    >>> round(loss(sg.tensor([[0.0, 2.0]]), sg.tensor([[0, 1]])).item(), 4)
    0.3466
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_soft_margin_loss(input, target, self.weight, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """The two-class logistic loss log(1 + exp(-target * input)) for targets 1 or -1; see
    ``F.soft_margin_loss``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> round(nn.SoftMarginLoss()(sg.tensor([2.0, -1.0]), sg.tensor([1.0, 1.0])).item(), 4)
    0.7201
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiMarginLoss(_Loss):
    """The multi-class hinge loss: for each sample, ``weight[y] * max(0, margin - x[y] +
    x[i]) ** p`` summed over the classes i other than the target y, over the number of
    classes. ``weight`` (a buffer) weighs each class. See ``F.multi_margin_loss``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> round(nn.MultiMarginLoss()(sg.tensor([[0.1, 0.2, 0.4, 0.8]]), sg.tensor([3])).item(), 4)
    0.325
    """

    def __init__(
        self,
        p: int = 1,
        margin: float = 1.0,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.ndim != 1:
            raise ValueError(
                f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.ndim}D "
                "instead"
            )
        self.p, self.margin = p, margin
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(
            input, target, self.p, self.margin, self.weight, reduction=self.reduction
        )


class HingeEmbeddingLoss(_Loss):
    """x where ``target`` is 1, max(0, ``margin`` - x) where it is -1: ``input`` holds
    distances of pairs, ``target`` says whether each pair is similar. See
    ``F.hinge_embedding_loss``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.HingeEmbeddingLoss()(sg.tensor([0.25, 0.25]), sg.tensor([1, -1]))
    tensor(0.5000)
    """

    def __init__(
        self,
        margin: float = 1.0,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """The multi-label hinge loss: ``target`` lists each sample's classes, ended by the first
    -1; each listed class j and each class i not listed add ``max(0, 1 - x[j] + x[i])``, over
    the number of classes. See ``F.multilabel_margin_loss``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> loss = nn.MultiLabelMarginLoss()
    >>> round(loss(sg.tensor([[0.1, 0.2, 0.4, 0.8]]), sg.tensor([[3, 0, -1, 1]])).item(), 4)
    0.85
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """``TripletMarginLoss`` with any ``distance_function`` of two tensors (by default a
    ``PairwiseDistance`` module, a child of this one, as PyTorch's). See
    ``F.triplet_margin_with_distance_loss``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> loss = nn.TripletMarginWithDistanceLoss(margin=0.5)
    >>> a, pos, neg = sg.tensor([[0.0, 0.0]]), sg.tensor([[0.0, 1.0]]), sg.tensor([[0.0, 1.0]])
    >>> round(loss(a, pos, neg).item(), 4)
    0.5
    >>> loss
    TripletMarginWithDistanceLoss(
      (distance_function): PairwiseDistance()
    )
    """

    def __init__(
        self,
        *,
        distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
        margin: float = 1.0,
        swap: bool = False,
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(
                "TripletMarginWithDistanceLoss: expected margin to be greater than 0, got "
                f"{margin} instead"
            )
        self.distance_function = (
            distance_function if distance_function is not None else PairwiseDistance()
        )
        self.margin, self.swap = margin, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(
            anchor,
            positive,
            negative,
            distance_function=self.distance_function,
            margin=self.margin,
            swap=self.swap,
            reduction=self.reduction,
        )


class CTCLoss(_Loss):
    """The Connectionist Temporal Classification loss of ``F.ctc_loss``: log-probabilities
    (T, N, C) against unaligned target sequences, ``blank`` the class between labels.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> log_probs = sg.randn(5, 2, 4).log_softmax(2)
    >>> loss = nn.CTCLoss(blank=3)(log_probs, sg.tensor([[0, 1], [2, 2]]), [5, 4], [2, 2])
    >>> loss.shape
    scratchgrad.Size([])
    """

    def __init__(
        self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False
    ) -> None:
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths, target_lengths) -> Tensor:
        return F.ctc_loss(
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            self.blank,
            self.reduction,
            self.zero_infinity,
        )
