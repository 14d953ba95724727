"""A multi-task tabular model with the numerical feature encodings of "On Embeddings for
Numerical Features in Tabular Deep Learning", written as users write it: missing values
(NaN) filled from ``torch.nanmedian`` statistics with a missingness flag from ``isnan``,
quantile bin edges from ``torch.nanquantile``, bins found by ``torch.bucketize`` and the
piecewise-linear encoding built with ``clamp`` and ``scatter``, the encodings projected by a
per-feature ``nn.ParameterDict``, a ``CELU`` trunk with a classification head
(``binary_cross_entropy_with_logits`` with ``pos_weight``) and a regression head
(``huber_loss``), the two losses weighted by learned homoscedastic uncertainties (Kendall et
al.), ``NAdam``, and ``torch.histc`` of the predictions printed at the end."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

N_FEATURES, N_BINS, D_EMBED = 4, 6, 4


class PiecewiseLinearEncoding(nn.Module):
    def __init__(self, bin_edges):
        super().__init__()
        self.register_buffer("bin_edges", bin_edges)  # (n_features, n_bins + 1)

    def forward(self, x):
        left, right = self.bin_edges[:, :-1], self.bin_edges[:, 1:]
        ratio = (x.unsqueeze(-1) - left) / (right - left)
        # the bin holding x gets its ratio, bins to its left 1, bins to its right 0; the
        # outermost bins stay unclamped on their outer side
        bins = torch.stack(
            [
                torch.bucketize(x[:, i].contiguous(), self.bin_edges[i, 1:-1])
                for i in range(x.size(1))
            ],
            dim=1,
        )
        positions = torch.arange(N_BINS)
        encoding = torch.where(positions < bins.unsqueeze(-1), 1.0, 0.0)
        encoding = encoding.scatter(-1, bins.unsqueeze(-1), ratio.gather(-1, bins.unsqueeze(-1)))
        inner = encoding[..., 1:-1].clamp(0.0, 1.0)
        first = encoding[..., :1].clamp(max=1.0)
        last = encoding[..., -1:].clamp(min=0.0)
        return torch.cat([first, inner, last], dim=-1)


class MultiTaskTabular(nn.Module):
    def __init__(self, bin_edges):
        super().__init__()
        self.encoding = PiecewiseLinearEncoding(bin_edges)
        self.projections = nn.ParameterDict(
            {f"f{i}": nn.Parameter(torch.randn(N_BINS, D_EMBED) * 0.3) for i in range(N_FEATURES)}
        )
        width = N_FEATURES * (D_EMBED + 1)
        self.trunk = nn.Sequential(
            nn.Linear(width, 32), nn.CELU(alpha=0.5), nn.Linear(32, 32), nn.CELU(alpha=0.5)
        )
        self.classifier = nn.Linear(32, 1)
        self.regressor = nn.Linear(32, 1)
        self.log_vars = nn.Parameter(torch.zeros(2))

    def forward(self, x, missing):
        encoded = self.encoding(x)  # (batch, n_features, n_bins)
        embedded = [encoded[:, i] @ self.projections[f"f{i}"] for i in range(N_FEATURES)]
        h = self.trunk(torch.cat(embedded + [missing.float()], dim=1))
        return self.classifier(h).squeeze(-1), self.regressor(h).squeeze(-1)


def make_table(rng, n):
    x = rng.standard_normal((n, N_FEATURES)) * [1.0, 2.0, 0.5, 3.0] + [0, 1, -1, 2]
    x[:, 3] = np.exp(x[:, 3] / 3)  # a skewed feature
    label = (np.sin(x[:, 0]) + 0.3 * x[:, 1] > 0.5).astype(np.float32)
    target = np.abs(x[:, 2]) + 0.1 * x[:, 3] + 0.1 * rng.standard_normal(n)
    x[rng.uniform(size=x.shape) < 0.1] = np.nan
    return (
        torch.tensor(x, dtype=torch.float32),
        torch.tensor(label),
        torch.tensor(target, dtype=torch.float32),
    )


def impute(x, medians):
    missing = torch.isnan(x)
    return torch.where(missing, medians, x), missing


def build():
    rng = np.random.default_rng(0)
    x, _, _ = make_table(rng, 256)
    quantiles = torch.linspace(0, 1, N_BINS + 1)
    edges = torch.stack([torch.nanquantile(x[:, i], quantiles) for i in range(N_FEATURES)])
    return MultiTaskTabular(edges)


def train(model, epochs=4, batch_size=64):
    rng = np.random.default_rng(0)
    x, label, target = make_table(rng, 256)
    medians = torch.nanmedian(x, dim=0).values
    x, missing = impute(x, medians)
    x_val, label_val, target_val = make_table(rng, 64)
    x_val, missing_val = impute(x_val, medians)
    pos_weight = (label == 0).sum() / (label == 1).sum()
    optimizer = torch.optim.NAdam(model.parameters(), lr=5e-3)
    losses = []
    for epoch in range(epochs):
        model.train()
        for i in range(0, len(x), batch_size):
            sl = slice(i, i + batch_size)
            optimizer.zero_grad()
            logit, prediction = model(x[sl], missing[sl])
            cls_loss = F.binary_cross_entropy_with_logits(logit, label[sl], pos_weight=pos_weight)
            reg_loss = F.huber_loss(prediction, target[sl], delta=0.5)
            precision = torch.exp(-model.log_vars)
            loss = (precision * torch.stack([cls_loss, reg_loss]) + model.log_vars).sum()
            loss.backward()
            optimizer.step()
            losses += [cls_loss.item(), reg_loss.item()]
        model.eval()
        with torch.no_grad():
            logit, prediction = model(x_val, missing_val)
            accuracy = ((logit > 0).float() == label_val).float().mean().item()
            mae = (prediction - target_val).abs().mean().item()
        print(
            f"epoch {epoch}: accuracy {accuracy:.3f} MAE {mae:.4f} "
            f"log_vars {model.log_vars.detach().numpy().round(4).tolist()}"
        )
        losses += [accuracy, mae] + model.log_vars.tolist()
    histogram = torch.histc(prediction, bins=5, min=0.0, max=2.5)
    print("prediction histogram:", histogram.tolist())
    return losses + histogram.tolist()


if __name__ == "__main__":
    train(build())
