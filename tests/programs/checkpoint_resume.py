"""A regression trained in two sittings: the "Saving and Loading a General Checkpoint" recipe
(epoch, model and optimizer state dicts and the loss in one file), resumed into a fresh model
and optimizer, with a learning-rate schedule and gradient clipping."""

import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

rng = np.random.default_rng(0)
X = torch.from_numpy(rng.standard_normal((64, 5)).astype(np.float32))
Y = torch.from_numpy((X.numpy() @ rng.standard_normal((5, 1))).astype(np.float32))


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(5, 16), nn.SiLU(), nn.Linear(16, 1))

    def forward(self, x):
        return self.body(x)


def build():
    return Regressor()


def run_epochs(model, optimizer, scheduler, epochs, losses):
    for epoch in range(epochs):
        for i in range(0, len(X), 16):
            optimizer.zero_grad()
            loss = nn.functional.smooth_l1_loss(model(X[i : i + 16]), Y[i : i + 16])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
        print(f"epoch {epoch}: loss {loss.item():.5f}, lr {scheduler.get_last_lr()[0]:.4f}")
    return loss


def train(model, epochs=2):
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    scheduler = optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    losses = []
    loss = run_epochs(model, optimizer, scheduler, epochs, losses)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "checkpoint.pt")
        torch.save(
            {
                "epoch": epochs,
                "model_state_dict": model.state_dict(),
                "optimizer_state_dict": optimizer.state_dict(),
                "scheduler_state_dict": scheduler.state_dict(),
                "loss": loss,
            },
            path,
        )
        model = Regressor()
        optimizer = optim.Adam(model.parameters(), lr=0.01)
        scheduler = optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
        checkpoint = torch.load(path, weights_only=True)
    model.load_state_dict(checkpoint["model_state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    scheduler.load_state_dict(checkpoint["scheduler_state_dict"])
    print(f"resumed after epoch {checkpoint['epoch']} at loss {checkpoint['loss']:.5f}")
    model.train()
    run_epochs(model, optimizer, scheduler, epochs, losses)
    return losses


if __name__ == "__main__":
    train(build())
