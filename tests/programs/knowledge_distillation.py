"""Knowledge distillation (Hinton, Vinyals & Dean, 2015, https://arxiv.org/abs/1503.02531): a
teacher MLP is trained on a synthetic five-class problem (NumPy data, labels from the nearest of
five random centres after a nonlinear warp, a few labels flipped), then frozen with
``requires_grad_(False)`` and put in ``eval()``; a smaller student learns from the teacher's
softened outputs (KL divergence at temperature T, scaled by T * T) plus the hard labels with
label smoothing, under a one-cycle schedule. The student's agreement with the teacher is measured
with ``kl_div(..., log_target=True)``."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import CosineAnnealingLR, OneCycleLR

CLASSES, FEATURES, TEMPERATURE, ALPHA = 5, 4, 4.0, 0.7


def make_data(rng, count, centres):
    x = rng.normal(size=(count, FEATURES)).astype(np.float32)
    warped = np.tanh(x) + 0.3 * x**2
    labels = ((warped[:, None, :] - centres) ** 2).sum(-1).argmin(1)
    flip = rng.random(count) < 0.05
    labels[flip] = rng.integers(0, CLASSES, int(flip.sum()))
    return torch.from_numpy(x), torch.from_numpy(labels)


class Distillation(nn.Module):
    def __init__(self):
        super().__init__()
        self.teacher = nn.Sequential(
            nn.Linear(FEATURES, 128),
            nn.ReLU(),
            nn.Linear(128, 128),
            nn.ReLU(),
            nn.Linear(128, CLASSES),
        )
        self.student = nn.Sequential(nn.Linear(FEATURES, 16), nn.ReLU(), nn.Linear(16, CLASSES))


def build():
    return Distillation()


def batches(rng, x, y, size=64):
    order = torch.from_numpy(rng.permutation(len(x)))
    for start in range(0, len(x), size):
        index = order[start : start + size]
        yield x[index], y[index]


def distillation_loss(student_logits, teacher_logits, labels):
    soft = F.kl_div(
        F.log_softmax(student_logits / TEMPERATURE, 1),
        F.softmax(teacher_logits / TEMPERATURE, 1),
        reduction="batchmean",
    ) * (TEMPERATURE * TEMPERATURE)
    hard = F.cross_entropy(student_logits, labels, label_smoothing=0.1)
    return ALPHA * soft + (1 - ALPHA) * hard


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def train_teacher(teacher, rng, x, y, epochs, losses):
    optimizer = torch.optim.AdamW(teacher.parameters(), lr=3e-3, weight_decay=1e-4)
    scheduler = CosineAnnealingLR(optimizer, T_max=epochs)
    for epoch in range(epochs):
        teacher.train()
        for xb, yb in batches(rng, x, y):
            loss = F.cross_entropy(teacher(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if epoch % 4 == 3:
            print(f"teacher epoch {epoch + 1} loss {loss.item():.4f}")
    teacher.eval()
    teacher.requires_grad_(False)


def train_student(student, teacher, rng, x, y, epochs, losses):
    optimizer = torch.optim.SGD(student.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    steps = epochs * ((len(x) + 63) // 64)
    scheduler = OneCycleLR(optimizer, max_lr=0.2, total_steps=steps)
    for epoch in range(epochs):
        student.train()
        for xb, yb in batches(rng, x, y):
            with torch.inference_mode():
                teacher_logits = teacher(xb)
            loss = distillation_loss(student(xb), teacher_logits, yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
        losses += [loss.item(), scheduler.get_last_lr()[0]]
        if epoch % 4 == 3:
            print(f"student epoch {epoch + 1} loss {loss.item():.4f}")


def agreement(student, teacher, x):
    """KL(teacher || student) at temperature 1, both given as log-probabilities."""
    with torch.no_grad():
        log_student = F.log_softmax(student(x), 1)
        log_teacher = F.log_softmax(teacher(x), 1)
        return F.kl_div(log_student, log_teacher, reduction="batchmean", log_target=True).item()


def train(model, teacher_epochs=12, student_epochs=12):
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(CLASSES, FEATURES)).astype(np.float32)
    x, y = make_data(rng, 1024, centres)
    x_test, y_test = make_data(rng, 512, centres)
    losses = []
    train_teacher(model.teacher, rng, x, y, teacher_epochs, losses)
    assert not any(p.requires_grad for p in model.teacher.parameters())
    teacher_accuracy = accuracy(model.teacher, x_test, y_test)
    print(f"teacher accuracy {teacher_accuracy:.3f}")
    train_student(model.student, model.teacher, rng, x, y, student_epochs, losses)
    student_accuracy = accuracy(model.student, x_test, y_test)
    kl = agreement(model.student, model.teacher, x_test)
    print(f"student accuracy {student_accuracy:.3f} KL(teacher || student) {kl:.4f}")
    assert student_accuracy > 0.8, student_accuracy
    return losses + [teacher_accuracy, student_accuracy, kl]


if __name__ == "__main__":
    torch.manual_seed(0)
    train(build())
