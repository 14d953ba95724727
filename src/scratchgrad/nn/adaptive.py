"""``AdaptiveLogSoftmaxWithLoss``: the efficient softmax of Grave et al. for large vocabularies,
https://arxiv.org/abs/1609.04309."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence

from scratchgrad.nn import functional as F
from scratchgrad.nn.containers import ModuleList, Sequential
from scratchgrad.nn.linear import Linear
from scratchgrad.nn.module import Module
from scratchgrad.tensor import Tensor, cat

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-probabilities over ``n_classes`` split at ``cutoffs`` into a frequent shortlist and
    rarer clusters, as ``torch.nn.AdaptiveLogSoftmaxWithLoss``: the head scores the shortlist
    and one entry per cluster; cluster ``i`` has its own two-layer tail of width
    ``in_features // div_value ** (i + 1)``, run only on the rows whose target falls in it.

    ``forward(input, target)`` returns ``(output, loss)``: each row's log-probability of its
    target and their negated mean. ``log_prob(input)`` gives the full distribution and
    ``predict(input)`` its most likely class.

    >>> import scratchgrad as sg
    >>> asm = sg.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4])
    >>> out, loss = asm(sg.randn(3, 8), sg.tensor([0, 5, 9]))
    >>> out.shape, loss.shape, asm.log_prob(sg.randn(3, 8)).exp().sum(1).round().tolist()
    (scratchgrad.Size([3]), scratchgrad.Size([]), [1.0, 1.0, 1.0])
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs: Sequence[int],
        div_value: float = 4.0,
        head_bias: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise ValueError(
                "cutoffs should be a sequence of unique, positive integers sorted in an "
                "increasing order, where each value is between 1 and n_classes-1"
            )
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            width = int(in_features // div_value ** (i + 1))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(
                    Linear(in_features, width, bias=False, **kw),
                    Linear(width, size, bias=False, **kw),
                )
            )

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for projection, out in self.tail:
            projection.reset_parameters()
            out.reset_parameters()

    def forward(self, input: Tensor, target: Tensor) -> _ASMoutput:
        _check_shapes(input, target)
        batched = target.dim() == 1
        input, target = (input, target) if batched else (input[None], target[None])
        if target.numel() and (target.min().item() < 0 or target.max().item() >= self.n_classes):
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                f"[{target.min().item()}, {target.max().item()}] were found. "
            )
        # a row whose target is in cluster i scores the head's entry for the cluster, plus
        # the target's log-probability within the cluster (from the tail, on those rows only)
        head_class = target.clone()
        cluster_terms = []
        for i, (low, high) in enumerate(zip(self.cutoffs, self.cutoffs[1:])):
            rows = ((target >= low) & (target < high)).nonzero().flatten()
            if rows.numel() == 0:
                continue
            head_class[rows] = self.shortlist_size + i
            logprob = F.log_softmax(self.tail[i](input.index_select(0, rows)), dim=1)
            cluster_terms.append((rows, logprob.gather(1, (target[rows] - low)[:, None])[:, 0]))
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = head_logprob.gather(1, head_class[:, None])[:, 0]
        for rows, term in cluster_terms:
            output = output.index_add(0, rows, term)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output[0], loss)

    def log_prob(self, input: Tensor) -> Tensor:
        """The log-probability of every class, shape ``(batch, n_classes)``."""
        head_logprob = F.log_softmax(self.head(input), dim=1)
        parts = [head_logprob[:, : self.shortlist_size]]
        for i, tail in enumerate(self.tail):
            cluster = head_logprob[:, self.shortlist_size + i, None]
            parts.append(F.log_softmax(tail(input), dim=1) + cluster)
        return cat(parts, 1)

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row: ``log_prob(input).argmax(-1)``."""
        return self.log_prob(input).argmax(-1)


def _check_shapes(input: Tensor, target: Tensor) -> None:
    """PyTorch's errors for an input and target that do not go together."""
    if target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.dim() == 1 and input.size(0) != target.size(0):
        raise RuntimeError("Input and target should have the same size in the batch dimension.")
    if input.dim() != target.dim() + 1:
        raise RuntimeError(
            f"{target.dim()}D target tensor expects {target.dim() + 1}D input tensors, but found "
            f"inputs with size {tuple(input.shape)}"
        )
