"""PyTorch's "channels last memory format" tutorial applied to a small CNN: the model and each
input batch converted with ``.to(memory_format=torch.channels_last)``, SGD (random images)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6)
        self.fc = nn.Linear(6, 4)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def build():
    return Net()


def train(model, steps=5):
    rng = np.random.default_rng(0)
    images = torch.from_numpy(rng.standard_normal((steps, 4, 3, 8, 8)).astype(np.float32))
    labels = torch.from_numpy(rng.integers(0, 4, (steps, 4)))
    model = model.to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(steps):
        data = images[step].to(memory_format=torch.channels_last)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), labels[step])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print(f"loss {losses[-1]:.4f}")
    return losses
