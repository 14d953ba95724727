"""A small capsule network (Sabour et al., 2017, https://arxiv.org/abs/1710.09829) on 8 x 8
images of four shapes: a convolution, primary capsules cut from a strided convolution's
channels by ``view`` and ``permute``, the squash nonlinearity, predictions of every primary
capsule for every class capsule by ``torch.einsum``, three iterations of dynamic routing by
agreement (``F.softmax`` over the routing logits, agreements by batched ``torch.matmul``,
predictions detached but in the last iteration), the margin loss on the capsules' lengths, and
a reconstruction decoder fed the capsules masked by ``F.one_hot``: of the label while training,
of the longest capsule (``argmax``) when testing; Adam (shapes and noise drawn with NumPy)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def squash(s, dim=-1, eps=1e-8):
    squared_norm = (s**2).sum(dim=dim, keepdim=True)
    return squared_norm / (1 + squared_norm) * s / torch.sqrt(squared_norm + eps)


class CapsuleNet(nn.Module):
    def __init__(self, num_classes=4, primary_types=4, primary_dim=4, class_dim=8, iterations=3):
        super().__init__()
        self.num_classes, self.primary_dim, self.iterations = num_classes, primary_dim, iterations
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3)
        self.primary = nn.Conv2d(16, primary_types * primary_dim, kernel_size=3, stride=2)
        num_primary = primary_types * 2 * 2  # a 2 x 2 grid of each type
        self.W = nn.Parameter(0.1 * torch.randn(num_primary, num_classes, class_dim, primary_dim))
        self.decoder = nn.Sequential(
            nn.Linear(num_classes * class_dim, 32),
            nn.ReLU(inplace=True),
            nn.Linear(32, 64),
            nn.Sigmoid(),
        )

    def primary_capsules(self, x):
        out = self.primary(F.relu(self.conv1(x)))
        b, _, h, w = out.shape
        out = out.view(b, -1, self.primary_dim, h, w).permute(0, 1, 3, 4, 2)
        return squash(out.reshape(b, -1, self.primary_dim))

    def routing(self, u_hat):
        b = torch.zeros(u_hat.shape[:3], device=u_hat.device)
        u_hat_detached = u_hat.detach()
        for i in range(self.iterations):
            c = F.softmax(b, dim=2)
            last = i == self.iterations - 1
            s = torch.einsum("bij,bijd->bjd", c, u_hat if last else u_hat_detached)
            v = squash(s)
            if not last:
                agreement = torch.matmul(u_hat_detached.unsqueeze(-2), v[:, None, :, :, None])
                b = b + agreement.squeeze(-1).squeeze(-1)
        return v

    def forward(self, x, y=None):
        u = self.primary_capsules(x)
        u_hat = torch.einsum("ijdk,bik->bijd", self.W, u)
        v = self.routing(u_hat)
        lengths = v.norm(dim=-1)
        index = lengths.argmax(dim=1) if y is None else y
        mask = F.one_hot(index, num_classes=self.num_classes).float()
        reconstruction = self.decoder((v * mask.unsqueeze(-1)).flatten(1))
        return lengths, reconstruction.view(-1, 1, 8, 8)


def margin_loss(lengths, labels, m_plus=0.9, m_minus=0.1, lam=0.5):
    T = F.one_hot(labels, lengths.shape[1]).float()
    present = T * F.relu(m_plus - lengths) ** 2
    absent = lam * (1 - T) * F.relu(lengths - m_minus) ** 2
    return (present + absent).sum(dim=1).mean()


def capsule_loss(lengths, reconstruction, images, labels):
    recon = F.mse_loss(reconstruction, images, reduction="sum") / images.shape[0]
    return margin_loss(lengths, labels) + 0.005 * recon


def make_shapes(rng, n):
    templates = np.zeros((4, 8, 8), np.float32)
    templates[0, 3:5, 1:7] = 1  # a horizontal bar
    templates[1, 1:7, 3:5] = 1  # a vertical bar
    templates[2][np.eye(8, dtype=bool)] = 1  # a diagonal
    templates[3, 1:7, 1:7] = 1
    templates[3, 2:6, 2:6] = 0  # a square's outline
    labels = rng.integers(0, 4, n)
    noise = rng.uniform(0, 0.3, (n, 8, 8)).astype(np.float32)
    images = np.clip(templates[labels] + noise, 0, 1)[:, None]
    return torch.from_numpy(images), torch.from_numpy(labels)


def build():
    return CapsuleNet()


def train(model, epochs=6, batch_size=16):
    rng = np.random.default_rng(0)
    images, labels = make_shapes(rng, 64)
    test_images, test_labels = make_shapes(rng, 32)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    losses = []
    for epoch in range(epochs):
        model.train()
        for i in range(0, len(images), batch_size):
            x, y = images[i : i + batch_size], labels[i : i + batch_size]
            optimizer.zero_grad()
            lengths, reconstruction = model(x, y)
            loss = capsule_loss(lengths, reconstruction, x, y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            lengths, reconstruction = model(test_images)
            test_loss = capsule_loss(lengths, reconstruction, test_images, test_labels).item()
            accuracy = (lengths.argmax(dim=1) == test_labels).float().mean().item()
        print(
            f"epoch {epoch}: train loss {loss.item():.4f} test loss {test_loss:.4f} acc {accuracy}"
        )
        losses += [test_loss, accuracy]
    return losses


if __name__ == "__main__":
    train(build())
