"""A spatial transformer network, as PyTorch's tutorial builds one: a localization network
regresses an affine transform (initialized to the identity), ``affine_grid`` and
``grid_sample`` warp the input with it, and a small classifier reads the warped image (random
16 x 16 images instead of MNIST)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, kernel_size=3)
        self.fc = nn.Linear(4 * 7 * 7, 10)
        self.localization = nn.Sequential(
            nn.Conv2d(1, 4, kernel_size=3),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
        )
        self.fc_loc = nn.Sequential(nn.Linear(4 * 7 * 7, 16), nn.ReLU(True), nn.Linear(16, 6))
        self.fc_loc[2].weight.data.zero_()  # start from the identity transform
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    def stn(self, x):
        xs = self.localization(x).view(-1, 4 * 7 * 7)
        theta = self.fc_loc(xs).view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        return F.grid_sample(x, grid, align_corners=False)

    def forward(self, x):
        x = self.stn(x)
        x = F.relu(F.max_pool2d(self.conv(x), 2))
        return F.log_softmax(self.fc(x.view(-1, 4 * 7 * 7)), dim=1)


def build():
    return Net()


def train(model, epochs=2):
    rng = np.random.default_rng(0)
    images = torch.tensor(rng.standard_normal((3, 8, 1, 16, 16)).astype("float32"))
    labels = torch.tensor(rng.integers(0, 10, (3, 8)))
    optimizer = optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for epoch in range(1, epochs + 1):
        model.train()
        for batch_idx, (data, target) in enumerate(zip(images, labels)):
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}]\tLoss: {loss.item():.6f}")
    with torch.no_grad():
        warped = model.stn(images[0])
        losses.append(warped.abs().sum().item())
    return losses


if __name__ == "__main__":
    train(build())
