"""A small video classifier in the style of torchvision's R(2+1)D: each 3-D convolution is split
into a spatial (1 x 3 x 3) and a temporal (3 x 1 x 1) ``nn.Conv3d`` with ``nn.BatchNorm3d`` and
ReLU between them, residual blocks with a strided 1 x 1 x 1 shortcut, a stem with
``MaxPool3d``, and ``AdaptiveAvgPool3d(1)`` before the classifier. The clips (2 x 8 x 16 x 16)
show a bright square moving in one of four directions, made with NumPy; SGD with momentum and
Nesterov, a ``OneCycleLR`` schedule, and evaluation accuracy in ``eval`` mode (running stats)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Conv2Plus1D(nn.Sequential):
    def __init__(self, in_channels, out_channels, mid_channels, stride=1):
        super().__init__(
            nn.Conv3d(
                in_channels, mid_channels, (1, 3, 3), (1, stride, stride), (0, 1, 1), bias=False
            ),
            nn.BatchNorm3d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv3d(mid_channels, out_channels, (3, 1, 1), (stride, 1, 1), (1, 0, 0), bias=False),
        )


class BasicBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        mid = (in_channels * out_channels * 27) // (in_channels * 9 + 3 * out_channels)
        self.conv1 = nn.Sequential(
            Conv2Plus1D(in_channels, out_channels, mid, stride),
            nn.BatchNorm3d(out_channels),
            nn.ReLU(inplace=True),
        )
        self.conv2 = nn.Sequential(
            Conv2Plus1D(out_channels, out_channels, mid), nn.BatchNorm3d(out_channels)
        )
        self.shortcut = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv3d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm3d(out_channels),
            )

    def forward(self, x):
        return F.relu(self.conv2(self.conv1(x)) + self.shortcut(x))


class VideoNet(nn.Module):
    def __init__(self, classes=4):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv3d(2, 8, (3, 5, 5), stride=(1, 2, 2), padding=(1, 2, 2), bias=False),
            nn.BatchNorm3d(8),
            nn.ReLU(inplace=True),
            nn.MaxPool3d((1, 2, 2), ceil_mode=True),
        )
        self.layer1 = BasicBlock(8, 8)
        self.layer2 = BasicBlock(8, 16, stride=2)
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.fc = nn.Linear(16, classes)

    def forward(self, clips):
        x = self.layer2(self.layer1(self.stem(clips)))
        return self.fc(self.pool(x).flatten(1))


def moving_squares(rng, count=16, frames=8, size=16):
    """Class c: a 4 x 4 square moving right, left, down or up by one pixel a frame."""
    moves = [(0, 1), (0, -1), (1, 0), (-1, 0)]
    labels = rng.integers(0, 4, count)
    clips = rng.normal(0, 0.2, (count, 2, frames, size, size)).astype(np.float32)
    for clip, label in zip(clips, labels):
        y, x = rng.integers(4, size - 8, 2)
        dy, dx = moves[label]
        for t in range(frames):
            clip[
                :, t, y + dy * t // 2 : y + dy * t // 2 + 4, x + dx * t // 2 : x + dx * t // 2 + 4
            ] += 1.0
    return torch.tensor(clips), torch.tensor(labels)


def build():
    return VideoNet()


def train(model, epochs=3, batch_size=8):
    clips, labels = moving_squares(np.random.default_rng(0))
    optimizer = torch.optim.SGD(
        model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4
    )
    steps = epochs * (len(clips) // batch_size)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=steps)
    losses = []
    for epoch in range(epochs):
        model.train()
        for x, y in zip(clips.split(batch_size), labels.split(batch_size)):
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            logits = model(clips)
            accuracy = (logits.argmax(1) == labels).float().mean().item()
        losses += [F.cross_entropy(logits, labels).item()]
        print(f"epoch {epoch}: train loss {loss.item():.4f} eval accuracy {accuracy:.3f}")
    losses.append(model.stem[1].running_var.sum().item())
    return losses


if __name__ == "__main__":
    train(build())
