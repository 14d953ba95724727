"""Linear and logistic regression "from scratch", as the introductory tutorials teach them
before ``nn.Module``: weights as tensors made with ``requires_grad=True`` (from NumPy draws
instead of ``torch.randn``), predictions with ``torch.mm`` and ``torch.sigmoid``, losses
written out with ``torch.pow`` and logs, gradient steps inside ``torch.no_grad()`` followed by
``w.grad.zero_()`` (and the older ``w.grad.data.zero_()``), then the same fit with
``torch.autograd.grad``. The logistic model's weights live in a small ``nn.Module`` so that the
test can load them; accuracy is computed on ``.numpy()`` arrays."""

import numpy as np
import torch
import torch.nn as nn


class LogisticRegression(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(n_features, 1))
        self.b = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return torch.sigmoid(torch.mm(x, self.w) + self.b)


def build():
    return LogisticRegression(2)


def fit_line(rng, epochs=40, lr=0.05):
    """y = 2x - 1 plus noise, fitted with w.grad.data.zero_() and the update on .data."""
    x = torch.linspace(-1, 1, 50).unsqueeze(1)
    y = 2 * x - 1 + torch.tensor(rng.normal(0, 0.1, (50, 1)), dtype=torch.float32)
    w = torch.tensor(rng.normal(size=(1, 1)), dtype=torch.float32, requires_grad=True)
    b = torch.tensor([0.0], requires_grad=True)
    losses = []
    for _ in range(epochs):
        y_pred = x.mm(w) + b
        loss = torch.pow(y_pred - y, 2).mean()
        loss.backward()
        w.data -= lr * w.grad.data
        b.data -= lr * b.grad.data
        w.grad.data.zero_()
        b.grad.data.zero_()
        losses.append(loss.item())
    print(f"line: w {w.item():.3f}, b {b.item():.3f}, loss {losses[-1]:.5f}")
    return losses[::10]


def train(model, epochs=30, lr=0.5):
    rng = np.random.default_rng(0)
    losses = fit_line(rng)
    X_np = np.concatenate([rng.normal(-1, 1, (60, 2)), rng.normal(1.5, 1, (60, 2))])
    y_np = np.concatenate([np.zeros(60), np.ones(60)])
    X = torch.from_numpy(X_np).float()
    y = torch.from_numpy(y_np).float().unsqueeze(1)
    w, b = model.w, model.b
    for epoch in range(epochs):
        y_hat = model(X)
        loss = -(y * torch.log(y_hat) + (1 - y) * torch.log(1 - y_hat)).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
            w.grad.zero_()
            b.grad.zero_()
        losses.append(loss.item())
        if epoch % 10 == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")
    preds = (model(X) > 0.5).float()
    accuracy = (preds.numpy() == y.numpy()).mean()
    print(f"accuracy {accuracy:.3f}, w {w.detach().view(-1).tolist()}")
    # the same model once more, fitted with torch.autograd.grad instead of .backward()
    w2 = torch.tensor(rng.normal(0, 0.01, (2, 1)), dtype=torch.float32, requires_grad=True)
    b2 = torch.zeros(1, requires_grad=True)
    for _ in range(10):
        y_hat = torch.sigmoid(X @ w2 + b2)
        loss = nn.functional.binary_cross_entropy(y_hat, y)
        grad_w, grad_b = torch.autograd.grad(loss, [w2, b2])
        with torch.no_grad():
            w2.sub_(lr * grad_w)
            b2.sub_(lr * grad_b)
        losses.append(loss.item())
    print(f"autograd.grad fit: loss {losses[-1]:.4f}, grads were None: {w2.grad is None}")
    return losses


if __name__ == "__main__":
    train(build())
