"""DeepSurv: a self-normalizing network (SELU, LeCun-normal init through
``kaiming_normal_(nonlinearity="linear")``) scoring log-risks, trained with the negative Cox
partial log-likelihood written as the survival packages write it: the batch sorted by time
with ``torch.argsort(descending=True)``, the risk set's log-sum of hazards by
``torch.logcumsumexp``, the sum over the observed events only; Adam with ``weight_decay``, a
``StepLR``, and Harrell's concordance index computed by broadcasting under
``torch.no_grad()`` (censored synthetic patients drawn with NumPy)."""

import numpy as np
import torch
import torch.nn as nn

N_FEATURES = 5


class DeepSurv(nn.Module):
    def __init__(self, in_features=N_FEATURES, hidden=(16, 16)):
        super().__init__()
        layers, width = [], in_features
        for h in hidden:
            layers += [nn.Linear(width, h), nn.SELU()]
            width = h
        layers.append(nn.Linear(width, 1, bias=False))  # a bias cancels in the partial likelihood
        self.net = nn.Sequential(*layers)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.kaiming_normal_(m.weight, nonlinearity="linear")  # LeCun normal
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.net(x).squeeze(-1)


def build():
    return DeepSurv()


def cox_ph_loss(log_h, durations, events, eps=1e-7):
    """Negative partial log-likelihood of the Cox model (Breslow, no tie correction)."""
    idx = torch.argsort(durations, descending=True)
    events = events[idx]
    log_h = log_h[idx]
    gamma = log_h.max()
    log_cumsum_h = torch.logcumsumexp(log_h - gamma, dim=0) + gamma
    return -log_h.sub(log_cumsum_h).mul(events).sum().div(events.sum() + eps)


def concordance_index(risk, durations, events):
    """The share of comparable pairs (i died before j) ordered right by the risks."""
    comparable = (durations[:, None] < durations[None, :]) & events[:, None].bool()
    concordant = (risk[:, None] > risk[None, :]).float() + 0.5 * (risk[:, None] == risk[None, :])
    return (concordant * comparable).sum() / comparable.sum()


def make_patients(rng, n):
    x = rng.standard_normal((n, N_FEATURES))
    true_risk = 2 * x[:, 0] - 0.5 * x[:, 1] ** 2 + 0.3 * x[:, 2] * x[:, 3]
    times = rng.exponential(np.exp(-true_risk))
    censor = rng.exponential(1.5, n)
    durations, events = np.minimum(times, censor), (times <= censor)
    return (
        torch.tensor(x, dtype=torch.float32),
        torch.tensor(durations, dtype=torch.float32),
        torch.tensor(events, dtype=torch.float32),
    )


def train(model, epochs=5, batch_size=32):
    rng = np.random.default_rng(0)
    x, durations, events = make_patients(rng, 128)
    x_val, d_val, e_val = make_patients(rng, 64)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    losses = []
    for epoch in range(epochs):
        model.train()
        perm = torch.from_numpy(rng.permutation(len(x)))
        for i in range(0, len(x), batch_size):
            idx = perm[i : i + batch_size]
            optimizer.zero_grad()
            loss = cox_ph_loss(model(x[idx]), durations[idx], events[idx])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
        model.eval()
        with torch.no_grad():
            risk = model(x_val)
            val_loss = cox_ph_loss(risk, d_val, e_val).item()
            c_index = concordance_index(risk, d_val, e_val).item()
        print(f"epoch {epoch}: loss {np.mean(losses[-4:]):.4f} val {val_loss:.4f} C {c_index:.3f}")
        losses += [val_loss, c_index]
    return losses


if __name__ == "__main__":
    train(build())
