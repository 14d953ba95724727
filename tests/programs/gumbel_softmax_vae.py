"""A categorical VAE with the Gumbel-softmax trick (Jang et al., 2017) as its PyTorch notebooks
write it: Gumbel noise ``-log(-log(U))`` added to the logits, a tempered ``softmax``, the
straight-through hard sample made with ``max``, ``zeros_like().scatter_`` and ``detach``, a
temperature annealed each step with ``np.exp``, a BCE reconstruction plus the KL to a uniform
prior, Adam, and a decoder run on ``F.one_hot`` codes. The uniforms are drawn with NumPy
(``F.gumbel_softmax`` samples from the library's own stream, which differs)."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, optim

latent_dim, categorical_dim = 4, 6
uniforms = np.random.default_rng(0)


def sample_gumbel(shape, eps=1e-20):
    U = torch.from_numpy(uniforms.random(shape).astype(np.float32))
    return -torch.log(-torch.log(U + eps) + eps)


def gumbel_softmax_sample(logits, temperature):
    y = logits + sample_gumbel(logits.size())
    return F.softmax(y / temperature, dim=-1)


def gumbel_softmax(logits, temperature, hard=False):
    y = gumbel_softmax_sample(logits, temperature)
    if not hard:
        return y.view(-1, latent_dim * categorical_dim)
    shape = y.size()
    _, ind = y.max(dim=-1)
    y_hard = torch.zeros_like(y).view(-1, shape[-1])
    y_hard.scatter_(1, ind.view(-1, 1), 1)
    y_hard = y_hard.view(*shape)
    y_hard = (y_hard - y).detach() + y  # straight-through: forward hard, backward soft
    return y_hard.view(-1, latent_dim * categorical_dim)


class VAE_gumbel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 48)
        self.fc2 = nn.Linear(48, latent_dim * categorical_dim)
        self.fc3 = nn.Linear(latent_dim * categorical_dim, 48)
        self.fc4 = nn.Linear(48, 64)
        self.relu = nn.ReLU()
        self.sigmoid = nn.Sigmoid()

    def encode(self, x):
        return self.fc2(self.relu(self.fc1(x)))

    def decode(self, z):
        return self.sigmoid(self.fc4(self.relu(self.fc3(z))))

    def forward(self, x, temp, hard):
        q = self.encode(x.view(-1, 64))
        q_y = q.view(q.size(0), latent_dim, categorical_dim)
        z = gumbel_softmax(q_y, temp, hard)
        return self.decode(z), F.softmax(q_y, dim=-1).reshape(*q.size())


def loss_function(recon_x, x, qy):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum") / x.shape[0]
    log_ratio = torch.log(qy * categorical_dim + 1e-20)
    KLD = torch.sum(qy * log_ratio, dim=-1).mean()
    return BCE + KLD


def build():
    return VAE_gumbel()


def train(model, epochs=3, temp=1.0, temp_min=0.5, anneal_rate=0.05):
    global uniforms
    uniforms = np.random.default_rng(0)
    rng = np.random.default_rng(1)
    data = torch.from_numpy((rng.random((4, 16, 1, 8, 8)) < 0.3).astype(np.float32))
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    losses, step = [], 0
    for epoch in range(epochs):
        model.train()
        train_loss = 0
        for batch in data:
            optimizer.zero_grad()
            recon_batch, qy = model(batch, temp, hard=epoch > 0)
            loss = loss_function(recon_batch, batch, qy)
            loss.backward()
            train_loss += loss.item() * len(batch)
            optimizer.step()
            step += 1
            temp = np.maximum(temp * np.exp(-anneal_rate * step), temp_min)
            losses.append(loss.item())
        print(f"====> Epoch: {epoch} Average loss: {train_loss / 64:.4f}, temperature {temp:.3f}")
    model.eval()
    with torch.no_grad():
        codes = torch.from_numpy(rng.integers(0, categorical_dim, (8, latent_dim)))
        z = F.one_hot(codes, num_classes=categorical_dim).float().view(8, -1)
        losses.append(model.decode(z).sum().item())
    return losses


if __name__ == "__main__":
    train(build())
