"""Knowledge distillation with the loss in a function decorated with ``@torch.compile``, as
PyTorch 2 training scripts write a fused loss: it takes the student's and the teacher's logits,
the labels, a per-sample weight, and two Python floats that change at every step (the
temperature, annealed from 4 to 1, and the mixing weight ``alpha``). The student model is
compiled too (``dynamic=False``), the teacher runs under ``torch.no_grad()``, and a ``LambdaLR``
warms the learning rate up. ``aot_eager`` keeps PyTorch's compile fast on a CPU. PyTorch
makes the temperature a dynamic input after its second value; scratchgrad records the loss per
value, and past its 8 programs warns once and runs it eagerly (see docs/jit.md)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


@torch.compile(backend="aot_eager")
def distillation_loss(student, teacher, labels, weights, temperature, alpha):
    soft = F.kl_div(
        F.log_softmax(student / temperature, dim=-1),
        F.softmax(teacher / temperature, dim=-1),
        reduction="none",
    ).sum(-1)
    hard = F.cross_entropy(student, labels, reduction="none")
    per_sample = alpha * temperature**2 * soft + (1 - alpha) * hard
    return (per_sample * weights).sum() / weights.sum()


class Student(nn.Module):
    def __init__(self, features=8, classes=5):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, 16), nn.GELU(), nn.Linear(16, classes))

    def forward(self, x):
        return self.net(x)


def build():
    return Student()


def make_teacher():
    """A fixed random teacher: a wider network with weights drawn from NumPy."""
    rng = np.random.default_rng(3)
    teacher = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 5))
    with torch.no_grad():
        for p in teacher.parameters():
            p.copy_(torch.from_numpy(rng.standard_normal(p.shape).astype(np.float32) * 0.7))
    return teacher


def train(model, steps=24):
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((steps, 16, 8)).astype(np.float32))
    labels = torch.from_numpy(rng.integers(0, 5, (steps, 16)))
    weights = torch.from_numpy(rng.uniform(0.5, 1.5, (steps, 16)).astype(np.float32))
    teacher = make_teacher()
    student = torch.compile(model, backend="aot_eager", dynamic=False)
    optimizer = torch.optim.Adam(student.parameters(), lr=2e-2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 6))
    losses = []
    for step in range(steps):
        temperature = 4.0 - 3.0 * step / (steps - 1)
        alpha = 0.9 if step < steps // 2 else 0.5
        with torch.no_grad():
            teacher_logits = teacher(x[step])
        loss = distillation_loss(
            student(x[step]), teacher_logits, labels[step], weights[step], temperature, alpha
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if step % 6 == 0:
            print(f"step {step}: T {temperature:.3f} alpha {alpha} loss {loss.item():.4f}")
    return losses


if __name__ == "__main__":
    train(build())
