"""A DGCNN point-cloud classifier (Wang et al., 2019) as its reference PyTorch code writes it:
k nearest neighbours from the pairwise distances ``-2 x^T x + |x|^2`` and ``topk``, an index
offset per batch built with ``torch.arange(...).view(-1, 1, 1)`` and flattened with
``view(-1)`` to gather the neighbour features, edge features ``cat((feature - x, x), dim=3)``
permuted to channels-first, ``Conv2d`` + ``BatchNorm2d`` + ``LeakyReLU(0.2)`` EdgeConvs with
the graph recomputed in feature space, ``max(dim=-1, keepdim=False)[0]`` aggregation, a
``Conv1d`` embedding pooled by ``F.adaptive_max_pool1d`` and ``adaptive_avg_pool1d``; SGD with
``CosineAnnealingLR`` and label smoothing written by hand."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def knn(x, k):
    inner = -2 * torch.matmul(x.transpose(2, 1), x)
    xx = torch.sum(x**2, dim=1, keepdim=True)
    pairwise_distance = -xx - inner - xx.transpose(2, 1)
    return pairwise_distance.topk(k=k, dim=-1)[1]  # (batch_size, num_points, k)


def get_graph_feature(x, k=4):
    batch_size, num_dims, num_points = x.size()
    idx = knn(x, k=k)
    idx_base = torch.arange(0, batch_size).view(-1, 1, 1) * num_points
    idx = (idx + idx_base).view(-1)
    x = x.transpose(2, 1).contiguous()
    feature = x.view(batch_size * num_points, -1)[idx, :]
    feature = feature.view(batch_size, num_points, k, num_dims)
    x = x.view(batch_size, num_points, 1, num_dims).repeat(1, 1, k, 1)
    return torch.cat((feature - x, x), dim=3).permute(0, 3, 1, 2).contiguous()


def edge_conv(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin * 2, cout, kernel_size=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.LeakyReLU(negative_slope=0.2),
    )


class DGCNN(nn.Module):
    def __init__(self, k=4, emb_dims=32, output_channels=3):
        super().__init__()
        self.k = k
        self.conv1 = edge_conv(3, 16)
        self.conv2 = edge_conv(16, 16)
        self.conv3 = nn.Sequential(
            nn.Conv1d(32, emb_dims, kernel_size=1, bias=False),
            nn.BatchNorm1d(emb_dims),
            nn.LeakyReLU(negative_slope=0.2),
        )
        self.linear1 = nn.Linear(emb_dims * 2, 16, bias=False)
        self.bn = nn.BatchNorm1d(16)
        self.linear2 = nn.Linear(16, output_channels)

    def forward(self, x):
        batch_size = x.size(0)
        x1 = self.conv1(get_graph_feature(x, k=self.k)).max(dim=-1, keepdim=False)[0]
        x2 = self.conv2(get_graph_feature(x1, k=self.k)).max(dim=-1, keepdim=False)[0]
        x = self.conv3(torch.cat((x1, x2), dim=1))
        x1 = F.adaptive_max_pool1d(x, 1).view(batch_size, -1)
        x2 = F.adaptive_avg_pool1d(x, 1).view(batch_size, -1)
        x = F.leaky_relu(self.bn(self.linear1(torch.cat((x1, x2), 1))), negative_slope=0.2)
        return self.linear2(x)


def cal_loss(pred, gold, smoothing=0.2):
    n_class = pred.size(1)
    one_hot = torch.zeros_like(pred).scatter(1, gold.view(-1, 1), 1)
    one_hot = one_hot * (1 - smoothing) + (1 - one_hot) * smoothing / (n_class - 1)
    log_prb = F.log_softmax(pred, dim=1)
    return -(one_hot * log_prb).sum(dim=1).mean()


def point_clouds(rng, n, points=24):
    labels = rng.integers(0, 3, n)
    u = rng.standard_normal((n, points, 3))
    sphere = u / np.linalg.norm(u, axis=2, keepdims=True)
    cube = rng.uniform(-1, 1, (n, points, 3))
    disc = np.concatenate([rng.uniform(-1, 1, (n, points, 2)), np.zeros((n, points, 1))], 2)
    clouds = np.where(
        labels[:, None, None] == 0, sphere, np.where(labels[:, None, None] == 1, cube, disc)
    )
    clouds = clouds + 0.02 * rng.standard_normal(clouds.shape)
    return torch.from_numpy(clouds.transpose(0, 2, 1).astype(np.float32)), torch.from_numpy(labels)


def build():
    return DGCNN()


def train(model, epochs=3, batches=2):
    rng = np.random.default_rng(0)
    data = [point_clouds(rng, 12) for _ in range(batches)]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, epochs, eta_min=1e-3)
    losses = []
    for epoch in range(epochs):
        model.train()
        for x, y in data:
            loss = cal_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
        model.eval()
        with torch.no_grad():
            logits = model(data[0][0])
            accuracy = (logits.max(dim=1)[1] == data[0][1]).float().mean().item()
            losses.append(F.cross_entropy(logits, data[0][1]).item())
        print(f"epoch {epoch}: train {losses[-2]:.4f}, eval {losses[-1]:.4f}, acc {accuracy:.3f}")
    return losses


if __name__ == "__main__":
    train(build())
