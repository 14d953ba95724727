"""Bayes by Backprop (Blundell et al., 2015) on 1-D regression whose noise grows with |x|: every
weight of a ``BayesLinear`` layer has a mean ``mu`` and ``rho``, its standard deviation
``softplus(rho)``, and is drawn by the reparameterization trick with the standard normal noise
made by NumPy. The KL term is the Monte Carlo ``log q(w) - log p(w)`` against a scale-mixture
prior (``Normal.log_prob`` under ``torch.logsumexp``), weighted per minibatch as the paper does;
the closed-form ``kl_divergence(Normal, Normal)`` against a unit prior is printed beside it. The
network's second output is a log-variance, so the likelihood is ``Normal(mean, std).log_prob``,
checked against ``F.gaussian_nll_loss``. Adam, then the predictive mean and standard deviation
given by several noised passes under ``torch.no_grad()``."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal, kl_divergence


class BayesLinear(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight_mu = nn.Parameter(torch.empty(n_out, n_in).uniform_(-0.5, 0.5))
        self.weight_rho = nn.Parameter(torch.full((n_out, n_in), -4.0))
        self.bias_mu = nn.Parameter(torch.zeros(n_out))
        self.bias_rho = nn.Parameter(torch.full((n_out,), -4.0))

    def posteriors(self):
        return (
            Normal(self.weight_mu, F.softplus(self.weight_rho)),
            Normal(self.bias_mu, torch.log1p(torch.exp(self.bias_rho))),  # softplus by hand
        )

    def forward(self, x, eps_w, eps_b):
        q_w, q_b = self.posteriors()
        weight = q_w.loc + q_w.scale * eps_w  # reparameterized: gradients reach mu and rho
        bias = q_b.loc + q_b.scale * eps_b
        self.log_q = q_w.log_prob(weight).sum() + q_b.log_prob(bias).sum()
        self.log_prior = scale_mixture_log_prob(weight) + scale_mixture_log_prob(bias)
        return F.linear(x, weight, bias)


SIGMA2 = math.exp(-3)  # the narrow component of the prior


def scale_mixture_log_prob(w, pi=0.5, sigma1=1.0, sigma2=SIGMA2):
    """log(pi N(w | 0, sigma1) + (1 - pi) N(w | 0, sigma2)), summed over the weights."""
    log_n1 = Normal(0.0, sigma1).log_prob(w) + math.log(pi)
    log_n2 = Normal(0.0, sigma2).log_prob(w) + math.log(1 - pi)
    return torch.logsumexp(torch.stack([log_n1, log_n2]), dim=0).sum()


class BayesNet(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.layers = nn.ModuleList([BayesLinear(1, hidden), BayesLinear(hidden, 2)])

    def forward(self, x, noise):
        h = torch.relu(self.layers[0](x, *noise[0]))
        out = self.layers[1](h, *noise[1])
        return out[:, 0], out[:, 1].clamp(-8.0, 4.0)  # mean, log-variance

    def kl(self):
        return sum(layer.log_q - layer.log_prior for layer in self.layers)

    def closed_form_kl(self):  # against a unit Normal prior, for comparison
        unit = Normal(torch.tensor(0.0), torch.tensor(1.0))
        return sum(kl_divergence(q, unit).sum() for l in self.layers for q in l.posteriors())


def draw_noise(model, rng):
    def eps(p):
        return torch.from_numpy(rng.standard_normal(p.shape).astype(np.float32))

    return [(eps(layer.weight_mu), eps(layer.bias_mu)) for layer in model.layers]


def make_data(rng, n):
    x = rng.uniform(-1.0, 1.0, n)
    y = np.sin(3 * x) + (0.05 + 0.25 * np.abs(x)) * rng.standard_normal(n)
    return torch.from_numpy(x[:, None].astype(np.float32)), torch.from_numpy(y.astype(np.float32))


def build():
    return BayesNet()


def train(model, epochs=20, batch_size=32):
    rng = np.random.default_rng(0)
    x, y = make_data(rng, 256)
    n_batches = len(x) // batch_size
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for epoch in range(epochs):
        perm = torch.from_numpy(rng.permutation(len(x)))
        for i in range(n_batches):
            idx = perm[i * batch_size : (i + 1) * batch_size]
            mean, log_var = model(x[idx], draw_noise(model, rng))
            nll = -Normal(mean, torch.exp(0.5 * log_var)).log_prob(y[idx]).sum()
            kl_weight = 2.0 ** (n_batches - i - 1) / (2.0**n_batches - 1)  # Blundell's pi_i
            loss = nll + kl_weight * model.kl()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            builtin = F.gaussian_nll_loss(mean, y[idx], log_var.exp(), full=True, reduction="sum")
            closed = model.closed_form_kl()
        print(
            f"epoch {epoch}: elbo loss {loss.item():.3f}, nll {nll.item():.3f} "
            f"(gaussian_nll_loss {builtin.item():.3f}), KL(q||N(0,1)) {closed.item():.2f}"
        )
        losses += [loss.item(), nll.item(), builtin.item(), closed.item()]

    # the predictive variance: the spread of the mean over weight draws (epistemic) plus the
    # learned noise variance (aleatoric, which the data make grow toward the ends of [-1, 1])
    query = torch.tensor([[-0.9], [0.0], [0.9]])
    with torch.no_grad():
        draws = [model(query, draw_noise(model, rng)) for _ in range(8)]
        means = torch.stack([m for m, _ in draws])
        noise_var = torch.stack([lv.exp() for _, lv in draws]).mean(dim=0)
        pred_mean = means.mean(dim=0)
        pred_std = (means.var(dim=0, unbiased=False) + noise_var).sqrt()
    for x0, m, s in zip(query.squeeze(1).tolist(), pred_mean.tolist(), pred_std.tolist()):
        print(f"x={x0:+.1f}: predictive mean {m:.3f} (true {math.sin(3 * x0):.3f}), std {s:.3f}")
    return losses + pred_mean.tolist() + pred_std.tolist()


if __name__ == "__main__":
    train(build())
