"""One small network trained on a weighted sum of the losses a PyTorch user reaches for beyond
cross-entropy: ``GaussianNLLLoss`` (predicted variance through ``softplus``), ``PoissonNLLLoss``
(log input and ``full=True``), ``MarginRankingLoss``, ``CosineEmbeddingLoss``,
``MultiLabelSoftMarginLoss`` with class weights, ``TripletMarginWithDistanceLoss`` with a cosine
distance and ``swap=True``, ``HingeEmbeddingLoss``, ``SoftMarginLoss``, ``MultiMarginLoss``,
``KLDivLoss(log_target=True)``, ``HuberLoss`` and ``BCEWithLogitsLoss`` with ``pos_weight``, and
a focal loss written by hand from ``F.cross_entropy(reduction="none")`` and ``torch.exp``; each
term printed every few steps, Adagrad as the optimizer."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHead(nn.Module):
    def __init__(self, features=10, hidden=24, classes=4):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(features, hidden), nn.Tanh())
        self.mean_var = nn.Linear(hidden, 2)
        self.rate = nn.Linear(hidden, 1)
        self.score = nn.Linear(hidden, 1)
        self.embed = nn.Linear(hidden, 8)
        self.labels = nn.Linear(hidden, classes)

    def forward(self, x):
        h = self.trunk(x)
        mean, raw_var = self.mean_var(h).unbind(-1)
        return {
            "mean": mean,
            "var": F.softplus(raw_var) + 1e-3,
            "log_rate": self.rate(h).squeeze(-1),
            "score": self.score(h).squeeze(-1),
            "embedding": self.embed(h),
            "logits": self.labels(h),
        }


def focal_loss(logits, target, gamma=2.0, alpha=0.25):
    ce = F.cross_entropy(logits, target, reduction="none")
    p_t = torch.exp(-ce)
    return (alpha * (1 - p_t) ** gamma * ce).mean()


def cosine_distance(a, b):
    return 1.0 - F.cosine_similarity(a, b)


class LossZoo(nn.Module):
    def __init__(self, classes=4):
        super().__init__()
        self.gaussian_nll = nn.GaussianNLLLoss()
        self.poisson_nll = nn.PoissonNLLLoss(log_input=True, full=True)
        self.ranking = nn.MarginRankingLoss(margin=0.5)
        self.cosine = nn.CosineEmbeddingLoss(margin=0.2)
        self.multilabel = nn.MultiLabelSoftMarginLoss(weight=torch.linspace(0.5, 2.0, classes))
        self.triplet = nn.TripletMarginWithDistanceLoss(
            distance_function=cosine_distance, margin=0.3, swap=True
        )
        self.hinge = nn.HingeEmbeddingLoss(margin=1.5)
        self.soft_margin = nn.SoftMarginLoss()
        self.multi_margin = nn.MultiMarginLoss(p=2, margin=0.8)
        self.kl = nn.KLDivLoss(reduction="batchmean", log_target=True)
        self.huber = nn.HuberLoss(delta=0.5)
        self.bce = nn.BCEWithLogitsLoss(pos_weight=torch.full((classes,), 3.0))

    def forward(self, out, other, batch):
        pairs_sign = torch.sign(batch["y"] - batch["y"].roll(1))
        pairs_sign = torch.where(pairs_sign == 0, torch.ones_like(pairs_sign), pairs_sign)
        same_class = torch.where(batch["cls"] == batch["cls"].roll(1), 1.0, -1.0)
        anchor, positive = out["embedding"], other["embedding"]
        distances = (anchor - anchor.roll(1, dims=0)).norm(dim=1)
        log_p = F.log_softmax(out["logits"], dim=1)
        log_q = F.log_softmax(other["logits"].detach(), dim=1)
        return {
            "gaussian": self.gaussian_nll(out["mean"], batch["y"], out["var"]),
            "poisson": self.poisson_nll(out["log_rate"], batch["counts"]),
            "ranking": self.ranking(out["score"], out["score"].roll(1), pairs_sign),
            "cosine": self.cosine(anchor, anchor.roll(1, dims=0), same_class),
            "multilabel": self.multilabel(out["logits"], batch["tags"]),
            "triplet": self.triplet(anchor, positive, anchor.roll(2, dims=0)),
            "hinge": self.hinge(distances, same_class),
            "soft_margin": self.soft_margin(out["score"], pairs_sign),
            "multi_margin": self.multi_margin(out["logits"], batch["cls"]),
            "kl": self.kl(log_p, log_q),
            "huber": self.huber(out["mean"], batch["y"]),
            "bce": self.bce(out["logits"], batch["tags"]),
            "focal": focal_loss(out["logits"], batch["cls"]),
        }


def make_batch(rng, n=32, features=10, classes=4):
    x = rng.standard_normal((n, features)).astype(np.float32)
    y = x[:, :3].sum(1) + 0.3 * rng.standard_normal(n)
    return {
        "x": torch.from_numpy(x),
        "x_augmented": torch.from_numpy(x + 0.1 * rng.standard_normal(x.shape).astype(np.float32)),
        "y": torch.from_numpy(y.astype(np.float32)),
        "counts": torch.from_numpy(rng.poisson(np.exp(0.5 * x[:, 0])).astype(np.float32)),
        "cls": torch.from_numpy((x[:, 0] > 0) + 2 * (x[:, 1] > 0)).long(),
        "tags": torch.from_numpy((x[:, :4] > 0.3).astype(np.float32)),
    }


def build():
    return MultiHead()


def train(model, steps=12):
    rng = np.random.default_rng(0)
    criterion = LossZoo()
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.05)
    losses = []
    for step in range(steps):
        batch = make_batch(rng)
        terms = criterion(model(batch["x"]), model(batch["x_augmented"]), batch)
        loss = sum(terms.values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 4 == 0:
            print(f"step {step}: total {loss.item():.4f}")
            print("  " + ", ".join(f"{name} {value.item():.4f}" for name, value in terms.items()))
    with torch.no_grad():
        terms = criterion(model(batch["x"]), model(batch["x_augmented"]), batch)
    return losses + [value.item() for value in terms.values()]


if __name__ == "__main__":
    train(build())
