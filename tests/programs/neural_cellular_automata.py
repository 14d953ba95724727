"""Growing neural cellular automata (Mordvintsev et al., 2020): every cell of a 16 x 16 grid holds
8 channels (RGBA and 4 hidden), perceives its neighbourhood through fixed identity and Sobel
filters applied to each channel separately (a depthwise ``F.conv2d`` with ``groups``, on a
circularly padded grid), and updates itself with a small per-cell MLP written as 1 x 1
convolutions whose last layer starts at zero. Updates fire stochastically per cell (masks drawn
with NumPy, so both libraries fire the same cells), and cells with no mature neighbour
(``F.max_pool2d`` of the alpha channel below 0.1) are cleared. Training grows a seed into a
target ring, clipping gradient norms per parameter as the paper does."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

CHANNELS, SIZE = 8, 16


class CellularAutomaton(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        sobel_x = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]) / 8
        identity = torch.zeros(3, 3)
        identity[1, 1] = 1.0
        filters = torch.stack([identity, sobel_x, sobel_x.T])  # (3, 3, 3)
        self.register_buffer("filters", filters.repeat(CHANNELS, 1, 1).unsqueeze(1))
        self.update = nn.Sequential(
            nn.Conv2d(3 * CHANNELS, hidden, 1),
            nn.ReLU(),
            nn.Conv2d(hidden, CHANNELS, 1, bias=False),
        )
        with torch.no_grad():
            self.update[2].weight.zero_()

    def perceive(self, state):
        padded = F.pad(state, (1, 1, 1, 1), mode="circular")
        return F.conv2d(padded, self.filters, groups=CHANNELS)

    @staticmethod
    def alive(state):
        return F.max_pool2d(state[:, 3:4], kernel_size=3, stride=1, padding=1) > 0.1

    def forward(self, state, fire):
        pre_alive = self.alive(state)
        state = state + self.update(self.perceive(state)) * fire
        life = (pre_alive & self.alive(state)).float()
        return state * life


def seed_state(batch):
    state = torch.zeros(batch, CHANNELS, SIZE, SIZE)
    state[:, 3:, SIZE // 2, SIZE // 2] = 1.0
    return state


def ring_target():
    ys, xs = np.mgrid[:SIZE, :SIZE] - (SIZE - 1) / 2
    radius = np.hypot(ys, xs)
    alpha = np.clip(1.5 - np.abs(radius - 4.5), 0, 1)
    rgba = np.stack([alpha * 0.9, alpha * 0.3, alpha * (radius / 8), alpha])
    return torch.tensor(rgba[None].astype(np.float32))


def build():
    return CellularAutomaton()


def train(model, iterations=6, batch=4, steps=12):
    rng = np.random.default_rng(0)
    target = ring_target()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    losses = []
    for it in range(iterations):
        fire = rng.random((steps, batch, 1, SIZE, SIZE)) < 0.5
        state = seed_state(batch)
        for step in range(steps):
            state = model(state, torch.tensor(fire[step].astype(np.float32)))
        loss = F.mse_loss(state[:, :4], target.expand(batch, -1, -1, -1))
        optimizer.zero_grad()
        loss.backward()
        for p in model.parameters():
            p.grad /= p.grad.norm() + 1e-8
        optimizer.step()
        alive = model.alive(state).float().mean()
        losses += [loss.item(), alive.item()]
        print(f"iteration {it}: loss {loss.item():.5f} alive {alive.item():.3f}")
    return losses


if __name__ == "__main__":
    train(build())
