"""Fine-tuning through ``torch.compile(model, fullgraph=True, dynamic=False)`` with the optimizer's
step compiled too, as PyTorch's "Compiling the optimizer" recipe does (``@torch.compile`` on a
function calling ``optimizer.step()``): gradients accumulated over micro-batches of unequal size
(the loss scaled by each one's share of the batch), ``clip_grad_norm_`` before each step, and the
encoder frozen with ``requires_grad_(False)`` half-way through (its weight decay and momentum then
stop, as SGD skips parameters without a gradient), with a ``StepLR`` schedule. The compile uses the
``aot_eager`` backend: no C++ compiler, a second on a CPU."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(5, 24), nn.SiLU(), nn.LayerNorm(24))
        self.head = nn.Sequential(nn.Linear(24, 12), nn.Tanh(), nn.Linear(12, 2))

    def forward(self, x):
        return self.head(self.encoder(x))


def build():
    return Regressor()


def make_batches(steps, rng):
    """Per step, three micro-batches of 12, 12 and 7 rows."""
    batches = []
    for _ in range(steps):
        x = rng.standard_normal((31, 5)).astype(np.float32)
        y = np.stack([np.sin(x[:, 0] + x[:, 1]), x[:, 2] * x[:, 3] - x[:, 4]], 1)
        parts = np.split(np.arange(31), [12, 24])
        batches.append(
            [(torch.from_numpy(x[p]), torch.from_numpy(y[p].astype(np.float32))) for p in parts]
        )
    return batches


def train(model, steps=12):
    batches = make_batches(steps, np.random.default_rng(4))
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True, dynamic=False)
    optimizer = torch.optim.SGD(compiled.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)

    @torch.compile(backend="aot_eager", fullgraph=False)
    def optimizer_step():
        optimizer.step()

    losses = []
    for step, micro_batches in enumerate(batches):
        if step == steps // 2:
            model.encoder.requires_grad_(False)
            print("encoder frozen")
        optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for x, y in micro_batches:
            loss = F.smooth_l1_loss(compiled(x), y) * (len(x) / 31)
            loss.backward()
            total += loss.item()
        norm = torch.nn.utils.clip_grad_norm_(compiled.parameters(), max_norm=0.5)
        optimizer_step()
        scheduler.step()
        losses += [total, norm.item()]
        if step % 3 == 0:
            print(f"step {step}: loss {total:.5f} grad norm {norm.item():.4f}")
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"trainable at the end: {trainable}")
    return losses


if __name__ == "__main__":
    train(build())
