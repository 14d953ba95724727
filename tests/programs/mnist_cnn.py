"""pytorch/examples' MNIST CNN: two convolutions, max pooling, log_softmax with nll_loss,
Adadelta with a StepLR schedule, the CUDA/MPS device boilerplate (small random images
instead of MNIST, and no dropout: its random masks differ between libraries)."""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.fc1 = nn.Linear(16 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def build():
    return Net()


def train(model, steps=6):
    parser = argparse.ArgumentParser(description="PyTorch MNIST Example")
    parser.add_argument("--lr", type=float, default=1.0, metavar="LR")
    parser.add_argument("--gamma", type=float, default=0.7, metavar="M")
    parser.add_argument("--no-cuda", action="store_true", default=False)
    parser.add_argument("--seed", type=int, default=1, metavar="S")
    args = parser.parse_args([])
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    use_mps = torch.backends.mps.is_available()
    torch.backends.cudnn.benchmark = True
    if use_cuda:
        device = torch.device("cuda")
    elif use_mps:
        device = torch.device("mps")
    else:
        device = torch.device("cpu")

    rng = np.random.default_rng(args.seed)
    images = torch.tensor(rng.standard_normal((steps, 16, 1, 12, 12)), dtype=torch.float32)
    labels = torch.tensor(rng.integers(0, 10, (steps, 16)))
    model = model.to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=2, gamma=args.gamma)
    model.train()
    losses = []
    for batch_idx in range(steps):
        data, target = images[batch_idx].to(device), labels[batch_idx].to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        print(f"Train step {batch_idx}\tLoss: {loss.item():.6f}")
    return losses


if __name__ == "__main__":
    train(build())
