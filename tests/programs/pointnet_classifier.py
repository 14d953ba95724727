"""A tiny PointNet after Qi et al. and the common PyTorch ports of it: a T-Net predicts a 2x2
transform applied with ``torch.bmm`` (identity added with ``torch.eye(...).repeat``), a shared
per-point MLP as ``Conv1d`` with kernel 1 and ``BatchNorm1d``, a local feature from each point's
nearest neighbours (``torch.cdist`` + ``topk``, gathered with flat batch offsets as DGCNN does),
a global max pool over points, and the orthogonality regularizer ``||I - A A^T||``. Points on a
circle versus a square, drawn with NumPy; SGD with momentum and a StepLR schedule."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR

num_points, k_neighbours = 32, 4


def make_clouds(rng, n):
    """Half circles, half squares, each randomly rotated, scaled, shifted and jittered."""
    labels = np.arange(n) % 2
    t = rng.uniform(0, 2 * np.pi, (n, num_points))
    circle = np.stack([np.cos(t), np.sin(t)], axis=-1)
    side, u = rng.integers(0, 4, (n, num_points)), rng.uniform(-1, 1, (n, num_points))
    square = np.stack([u, np.ones_like(u)], axis=-1)
    angle = side[..., None] * np.pi / 2  # put each point on one of the four sides
    square = np.stack(
        [
            square[..., 0] * np.cos(angle[..., 0]) - square[..., 1] * np.sin(angle[..., 0]),
            square[..., 0] * np.sin(angle[..., 0]) + square[..., 1] * np.cos(angle[..., 0]),
        ],
        axis=-1,
    )
    points = np.where(labels[:, None, None] == 0, circle, square)
    theta = rng.uniform(0, 2 * np.pi, n)
    rot = np.stack([np.cos(theta), -np.sin(theta), np.sin(theta), np.cos(theta)], -1)
    points = points @ rot.reshape(n, 2, 2) * rng.uniform(0.5, 1.5, (n, 1, 1))
    points = points + rng.normal(0, 0.2, (n, 1, 2)) + rng.normal(0, 0.03, points.shape)
    return torch.tensor(points, dtype=torch.float32), torch.tensor(labels)


class TNet(nn.Module):
    """Predicts a k x k transform from the whole cloud, starting near the identity."""

    def __init__(self, k=2):
        super().__init__()
        self.k = k
        self.conv1 = nn.Conv1d(k, 16, 1)
        self.conv2 = nn.Conv1d(16, 32, 1)
        self.fc1 = nn.Linear(32, 16)
        self.fc2 = nn.Linear(16, k * k)
        self.bn1 = nn.BatchNorm1d(16)
        self.bn2 = nn.BatchNorm1d(32)
        self.bn3 = nn.BatchNorm1d(16)

    def forward(self, x):
        batchsize = x.size()[0]
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = torch.max(x, 2, keepdim=True)[0]
        x = x.view(-1, 32)
        x = F.relu(self.bn3(self.fc1(x)))
        x = self.fc2(x)
        iden = torch.eye(self.k, dtype=x.dtype, device=x.device).view(1, self.k * self.k)
        x = x + iden.repeat(batchsize, 1)
        return x.view(-1, self.k, self.k)


def knn_offsets(points, k):
    """Mean offset from each point to its k nearest neighbours (itself excluded): (B, N, 2)."""
    batch_size, n, _ = points.shape
    dist = torch.cdist(points, points)
    idx = dist.topk(k=k + 1, dim=-1, largest=False)[1][:, :, 1:]
    idx_base = torch.arange(0, batch_size, device=points.device).view(-1, 1, 1) * n
    idx = (idx + idx_base).view(-1)
    neighbours = points.reshape(batch_size * n, -1)[idx, :].view(batch_size, n, k, -1)
    return (neighbours - points.unsqueeze(2)).mean(dim=2)


class PointNetCls(nn.Module):
    def __init__(self, num_classes=2):
        super().__init__()
        self.stn = TNet(k=2)
        self.conv1 = nn.Conv1d(4, 32, 1)
        self.conv2 = nn.Conv1d(32, 64, 1)
        self.bn1 = nn.BatchNorm1d(32)
        self.bn2 = nn.BatchNorm1d(64)
        self.fc1 = nn.Linear(64, 32)
        self.bn3 = nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, num_classes)

    def forward(self, points):  # (B, N, 2)
        trans = self.stn(points.transpose(2, 1))
        points = torch.bmm(points, trans)
        x = torch.cat([points, knn_offsets(points, k_neighbours)], dim=2).transpose(2, 1)
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.bn2(self.conv2(x))
        x = x.max(dim=2)[0]
        x = F.relu(self.bn3(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1), trans


def feature_transform_regularizer(trans):
    d = trans.size()[1]
    I = torch.eye(d, device=trans.device)[None, :, :]  # noqa: E741  (as the ports write it)
    return torch.mean(torch.norm(I - torch.bmm(trans, trans.transpose(2, 1)), dim=(1, 2)))


def build():
    return PointNetCls()


def train(classifier, epochs=3, batch_size=8, batches=3):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    rng = np.random.default_rng(0)
    points, target = make_clouds(rng, batch_size * batches)
    test_points, test_target = make_clouds(rng, 16)
    classifier = classifier.to(device)
    optimizer = torch.optim.SGD(classifier.parameters(), lr=0.05, momentum=0.9)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.5)
    losses = []
    for epoch in range(epochs):
        classifier.train()
        for i in range(batches):
            batch = slice(i * batch_size, (i + 1) * batch_size)
            pts, tgt = points[batch].to(device), target[batch].to(device)
            optimizer.zero_grad()
            pred, trans = classifier(pts)
            loss = F.nll_loss(pred, tgt) + 0.001 * feature_transform_regularizer(trans)
            loss.backward()
            optimizer.step()
            pred_choice = pred.data.max(1)[1]
            correct = pred_choice.eq(tgt.data).cpu().sum()
            losses.append(loss.item())
            print(f"[{epoch}: {i}] train loss: {loss.item():f} accuracy: {correct.item() / 8:f}")
        scheduler.step()
        classifier.eval()
        with torch.no_grad():
            pred, _ = classifier(test_points.to(device))
            correct = pred.argmax(dim=1).eq(test_target.to(device)).sum().item()
        print(f"epoch {epoch} lr {scheduler.get_last_lr()[0]:.4f} test accuracy: {correct / 16:f}")
    return losses


if __name__ == "__main__":
    train(build())
