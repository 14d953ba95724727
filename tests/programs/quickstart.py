"""PyTorch's quickstart tutorial: an MLP classifier with a train and a test loop, DataLoaders
with worker processes, the accelerator boilerplate, and a saved state dict (random images
instead of FashionMNIST)."""

import os
import tempfile

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
print(f"Using {device} device")


def make_data(n, seed):
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((n, 1, 8, 8)).astype(np.float32)
    labels = (images.mean(axis=(1, 2, 3)) > 0).astype(np.int64) + 2 * (images[:, 0, 0, 0] > 0)
    return TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(8 * 8, 32),
            nn.ReLU(),
            nn.Linear(32, 32),
            nn.ReLU(),
            nn.Linear(32, 4),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


def build():
    return NeuralNetwork()


def train_loop(dataloader, model, loss_fn, optimizer, losses):
    size = len(dataloader.dataset)
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        if batch % 4 == 0:
            loss, current = loss.item(), batch * 16 + len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")


def test_loop(dataloader, model, loss_fn):
    model.eval()
    size = len(dataloader.dataset)
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= len(dataloader)
    correct /= size
    print(f"Test Error: \n Accuracy: {(100 * correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
    return test_loss


def train(model, epochs=2):
    model = model.to(device)
    train_dataloader = DataLoader(make_data(96, 0), batch_size=16, num_workers=2)
    test_dataloader = DataLoader(make_data(32, 1), batch_size=16)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for t in range(epochs):
        print(f"Epoch {t + 1}\n-------------------------------")
        train_loop(train_dataloader, model, loss_fn, optimizer, losses)
        losses.append(test_loop(test_dataloader, model, loss_fn))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.pth")
        torch.save(model.state_dict(), path)
        model = NeuralNetwork().to(device)
        model.load_state_dict(torch.load(path, weights_only=True))
    losses.append(test_loop(test_dataloader, model, loss_fn))
    return losses


if __name__ == "__main__":
    train(build())
