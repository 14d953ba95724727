"""A detector-style training loop with the model EMA of YOLOv5/Ultralytics: a ``deepcopy`` of the
model in eval mode with ``requires_grad_(False)``, a decay ramped by ``1 - exp(-updates / tau)``,
and the update over ``state_dict()`` entries that scales in place only those whose
``v.dtype.is_floating_point`` (BatchNorm's ``num_batches_tracked`` is an integer); SGD with
Nesterov momentum, BatchNorm, SiLU, the EMA model evaluated each epoch."""

import copy
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelEMA:
    def __init__(self, model, decay=0.9999, tau=2000, updates=0):
        self.ema = copy.deepcopy(model).eval()
        self.updates = updates
        self.decay = lambda x: decay * (1 - math.exp(-x / tau))
        for p in self.ema.parameters():
            p.requires_grad_(False)

    def update(self, model):
        self.updates += 1
        d = self.decay(self.updates)
        msd = model.state_dict()
        for k, v in self.ema.state_dict().items():
            if v.dtype.is_floating_point:
                v *= d
                v += (1 - d) * msd[k].detach()


def build():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1, bias=False),
        nn.BatchNorm2d(8),
        nn.SiLU(),
        nn.Conv2d(8, 8, 3, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(8),
        nn.SiLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 3),
    )


def train(model, epochs=3, batches=3):
    rng = np.random.default_rng(0)
    images = torch.from_numpy(rng.standard_normal((batches, 8, 3, 8, 8)).astype(np.float32))
    labels = torch.from_numpy(rng.integers(0, 3, (batches, 8)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.937, nesterov=True)
    ema = ModelEMA(model, decay=0.9, tau=5)
    losses = []
    for epoch in range(epochs):
        model.train()
        for x, y in zip(images, labels):
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            ema.update(model)
            losses.append(loss.item())
        with torch.no_grad():
            ema_loss = F.cross_entropy(ema.ema(images[0]), labels[0]).item()
        losses.append(ema_loss)
        print(f"epoch {epoch}: loss {losses[-2]:.4f}, EMA model loss {ema_loss:.4f}")
    return losses


if __name__ == "__main__":
    train(build())
