"""Fit a small network to a curve with L-BFGS and a strong-Wolfe line search: the closure API
that re-evaluates the loss (as in pytorch/examples' time_sequence_prediction)."""

import torch
import torch.nn as nn


class Curve(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x)


def build():
    return Curve().double()


def train(model, steps=4):
    x = torch.linspace(-2, 2, 50, dtype=torch.double).unsqueeze(1)
    y = torch.sin(2 * x) + 0.1 * x**2
    criterion = nn.MSELoss()
    optimizer = torch.optim.LBFGS(
        model.parameters(), lr=0.8, history_size=10, line_search_fn="strong_wolfe"
    )
    losses = []
    for i in range(steps):

        def closure():
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            return loss

        loss = optimizer.step(closure)
        losses.append(loss.item())
        print(f"STEP: {i} loss: {loss.item():.6f}")
    return losses


if __name__ == "__main__":
    train(build())
