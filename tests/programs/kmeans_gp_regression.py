"""Two classic-ML notebooks on tensors, in float64 as scientific code runs them. Lloyd's k-means:
``torch.cdist`` distances, ``argmin`` assignments, centroids recomputed with ``index_add_`` and
``torch.bincount`` (and the inertia with ``scatter_add_``). Then Gaussian-process regression
with an RBF kernel whose length scale, signal and noise variances are learnt by Adam on the
negative log marginal likelihood, computed with ``torch.linalg.cholesky``,
``torch.cholesky_solve`` and ``torch.logdet`` (checked against ``slogdet``), predictions with
``torch.linalg.solve``. Data from NumPy."""

import math

import numpy as np
import torch
import torch.nn as nn


class RBFGaussianProcess(nn.Module):
    def __init__(self):
        super().__init__()
        self.log_lengthscale = nn.Parameter(torch.tensor(0.0, dtype=torch.float64))
        self.log_signal_var = nn.Parameter(torch.tensor(0.0, dtype=torch.float64))
        self.log_noise_var = nn.Parameter(torch.tensor(-2.0, dtype=torch.float64))

    def kernel(self, a, b):
        sqdist = torch.cdist(a, b).pow(2)
        return self.log_signal_var.exp() * torch.exp(
            -0.5 * sqdist / self.log_lengthscale.exp() ** 2
        )

    def neg_log_marginal_likelihood(self, x, y):
        n = x.shape[0]
        K = self.kernel(x, x) + self.log_noise_var.exp() * torch.eye(n, dtype=x.dtype)
        L = torch.linalg.cholesky(K)
        alpha = torch.cholesky_solve(y.unsqueeze(1), L)
        data_fit = 0.5 * (y.unsqueeze(1) * alpha).sum()
        return data_fit + 0.5 * torch.logdet(K) + 0.5 * n * math.log(2 * math.pi)

    def forward(self, x_train, y_train, x_test):
        K = self.kernel(x_train, x_train) + self.log_noise_var.exp() * torch.eye(len(x_train))
        return self.kernel(x_test, x_train) @ torch.linalg.solve(K, y_train)


def build():
    return RBFGaussianProcess()


def kmeans(points, k, iters, losses):
    centroids = points[:k].clone()
    for it in range(iters):
        assign = torch.cdist(points, centroids).argmin(dim=1)
        counts = torch.bincount(assign, minlength=k).to(points.dtype)
        sums = torch.zeros_like(centroids).index_add_(0, assign, points)
        centroids = sums / counts.clamp(min=1).unsqueeze(1)
        sq = ((points - centroids[assign]) ** 2).sum(1)
        inertia = torch.zeros(k, dtype=points.dtype).scatter_add_(0, assign, sq)
        losses.append(inertia.sum().item())
        print(f"k-means iter {it}: inertia {inertia.sum().item():.4f}, sizes {counts.tolist()}")
    return centroids


def train(model, steps=25):
    torch.set_default_dtype(torch.float64)
    try:
        rng = np.random.default_rng(0)
        centers = np.array([[0.0, 0.0], [3.0, 3.0], [-3.0, 2.5]])
        blobs = torch.from_numpy(centers[rng.integers(0, 3, 150)] + rng.normal(0, 0.7, (150, 2)))
        losses = []
        centroids = kmeans(blobs, 3, 5, losses)
        print("centroids", [[round(v, 2) for v in c] for c in centroids.tolist()])
        x = torch.from_numpy(np.sort(rng.uniform(-4, 4, 40))).unsqueeze(1)
        y = torch.sin(1.5 * x[:, 0]) + 0.1 * torch.from_numpy(rng.normal(size=40))
        optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
        for step in range(steps):
            optimizer.zero_grad()
            loss = model.neg_log_marginal_likelihood(x, y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if step % 8 == 0:
                print(f"GP step {step}: nll {loss.item():.5f}")
        with torch.no_grad():
            x_test = torch.linspace(-4, 4, 9).unsqueeze(1)
            mean = model(x, y, x_test)
            rmse = torch.sqrt(((mean - torch.sin(1.5 * x_test[:, 0])) ** 2).mean())
            K = model.kernel(x, x) + model.log_noise_var.exp() * torch.eye(40)
            sign, logabsdet = torch.linalg.slogdet(K)
        print(f"lengthscale {model.log_lengthscale.exp().item():.4f}, test rmse {rmse.item():.4f}")
        losses += [rmse.item(), (sign * logabsdet).item()]
        return losses
    finally:
        torch.set_default_dtype(torch.float32)


if __name__ == "__main__":
    train(build())
