"""Train a small CNN on the shipped 8x8 digits, written exactly as a PyTorch script.

Change the two imports below to ``import torch`` / ``from torch import nn`` (and load the data
with scratchgrad or scikit-learn) and it runs on PyTorch unchanged: that is the point of
scratchgrad following PyTorch's names.

    python examples/train_digits.py
"""

import numpy as np

import scratchgrad as torch
from scratchgrad import nn
from scratchgrad.nn import functional as F
from scratchgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
images, labels = torch.datasets.load_digits()  # (1797, 1, 8, 8) in [0, 1], int64 labels
order = np.random.default_rng(0).permutation(len(labels))
test, train = order[:359], order[359:]
loader = DataLoader(TensorDataset(images[train], labels[train]), batch_size=32, shuffle=True)

model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
    nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
    nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 4 * 4, 10),
)  # fmt: skip
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=10)

for epoch in range(10):
    model.train()
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    scheduler.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(images[test]).argmax(1) == labels[test]).float().mean().item()
    print(f"epoch {epoch + 1}: loss {loss.item():.4f}, test accuracy {accuracy:.4f}")
