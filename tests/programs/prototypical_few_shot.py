"""Prototypical networks (Snell et al., 2017) for few-shot classification, as their PyTorch
re-implementations write an episode: a conv encoder on support and query images concatenated
with ``torch.cat``, class prototypes as the mean of each class's support embeddings (a
``view(n_way, n_shot, -1).mean(1)``), squared Euclidean distances by ``torch.cdist(...).pow(2)``,
``F.log_softmax(-dists)`` gathered at the query labels with ``gather``, accuracy via ``eq`` and
``argmax``; episodes sampled with NumPy (classes are random prototypes plus noise), Adam with
``StepLR``, and a no-grad test episode of unseen classes."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_block(in_channels, out_channels):
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(),
        nn.MaxPool2d(2),
    )


class ProtoNet(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.encoder = nn.Sequential(conv_block(1, hidden), conv_block(hidden, hidden))

    def forward(self, x):
        return self.encoder(x).view(x.size(0), -1)


def prototypical_loss(model, support, query, n_way, n_shot, n_query):
    embeddings = model(torch.cat([support, query], dim=0))
    z_support, z_query = embeddings[: n_way * n_shot], embeddings[n_way * n_shot :]
    prototypes = z_support.view(n_way, n_shot, -1).mean(1)
    dists = torch.cdist(z_query, prototypes).pow(2)
    log_p_y = F.log_softmax(-dists, dim=1).view(n_way, n_query, -1)
    target = torch.arange(n_way).view(n_way, 1, 1).expand(n_way, n_query, 1)
    loss = -log_p_y.gather(2, target).squeeze(-1).mean()
    accuracy = log_p_y.argmax(2).eq(target.squeeze(-1)).float().mean()
    return loss, accuracy


def episode(rng, class_images, n_way, n_shot, n_query):
    classes = rng.choice(len(class_images), n_way, replace=False)

    def draw(n):
        noise = 1.0 * rng.standard_normal((n_way, n, 1, 8, 8))
        return (class_images[classes][:, None] + noise).reshape(n_way * n, 1, 8, 8)

    support, query = draw(n_shot), draw(n_query)
    return torch.from_numpy(support.astype(np.float32)), torch.from_numpy(query.astype(np.float32))


def build():
    return ProtoNet()


def train(model, episodes=10, n_way=4, n_shot=3, n_query=4):
    rng = np.random.default_rng(0)
    train_classes = rng.standard_normal((12, 1, 8, 8))
    test_classes = rng.standard_normal((6, 1, 8, 8))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    losses = []
    for i in range(episodes):
        model.train()
        support, query = episode(rng, train_classes, n_way, n_shot, n_query)
        loss, accuracy = prototypical_loss(model, support, query, n_way, n_shot, n_query)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        print(f"episode {i}: loss {loss.item():.4f}, accuracy {accuracy.item():.3f}")
    model.eval()
    with torch.no_grad():
        support, query = episode(rng, test_classes, n_way, n_shot, n_query)
        loss, accuracy = prototypical_loss(model, support, query, n_way, n_shot, n_query)
    print(f"test episode: loss {loss.item():.4f}, accuracy {accuracy.item():.3f}")
    return losses + [loss.item(), accuracy.item()]


if __name__ == "__main__":
    train(build())
