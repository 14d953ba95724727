"""One small regression network trained from the same start under the optimizers and learning
rate schedules that training scripts pick from a config file: NAdam with ``MultiStepLR``, RAdam
(decoupled weight decay) with ``PolynomialLR``, Adamax with ``ExponentialLR`` chained to a
``ConstantLR`` warmup (``ChainedScheduler``), SGD with Nesterov momentum and ``CyclicLR``, and
RMSprop (centered, with momentum) under ``OneCycleLR``. Each run clips the gradients'
values (``clip_grad_value_``), keeps biases and norm weights out of the weight decay by param
groups, and halfway through saves the model's, the optimizer's and the scheduler's
``state_dict``, builds them anew and loads them back, as a resumed job does."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import lr_scheduler


def build():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(3, 24),
        nn.LayerNorm(24),
        nn.SiLU(),
        nn.Linear(24, 24),
        nn.Tanh(),
        nn.Linear(24, 1),
    )


def data():
    x = torch.linspace(-2, 2, 64).unsqueeze(1)
    features = torch.cat([x, x**2, torch.sin(3 * x)], dim=1)
    target = torch.sin(2 * x) + 0.3 * x**2
    return features, target


def param_groups(model, weight_decay):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay}]


RECIPES = {
    "nadam": (
        lambda g: torch.optim.NAdam(g, lr=0.01, momentum_decay=0.004),
        lambda o, n: lr_scheduler.MultiStepLR(o, milestones=[n // 3, 2 * n // 3], gamma=0.5),
    ),
    "radam": (
        lambda g: torch.optim.RAdam(g, lr=0.02, decoupled_weight_decay=True),
        lambda o, n: lr_scheduler.PolynomialLR(o, total_iters=n, power=2.0),
    ),
    "adamax": (
        lambda g: torch.optim.Adamax(g, lr=0.02),
        lambda o, n: lr_scheduler.ChainedScheduler(
            [
                lr_scheduler.ConstantLR(o, factor=0.25, total_iters=4),
                lr_scheduler.ExponentialLR(o, gamma=0.95),
            ]
        ),
    ),
    "sgd_nesterov": (
        lambda g: torch.optim.SGD(g, lr=0.05, momentum=0.9, nesterov=True),
        lambda o, n: lr_scheduler.CyclicLR(
            o, base_lr=0.005, max_lr=0.05, step_size_up=5, mode="triangular2"
        ),
    ),
    "rmsprop": (
        lambda g: torch.optim.RMSprop(g, lr=0.005, alpha=0.9, momentum=0.5, centered=True),
        lambda o, n: lr_scheduler.OneCycleLR(
            o, max_lr=0.01, total_steps=n + 1, pct_start=0.3, anneal_strategy="linear"
        ),
    ),
}


def run(model, name, steps, features, target):
    make_optimizer, make_scheduler = RECIPES[name]
    optimizer = make_optimizer(param_groups(model, 1e-3))
    scheduler = make_scheduler(optimizer, steps)
    losses = []
    for step in range(steps):
        if step == steps // 2:  # resume from a checkpoint, as a restarted job
            checkpoint = {
                "model": copy.deepcopy(model.state_dict()),
                "optimizer": copy.deepcopy(optimizer.state_dict()),
                "scheduler": scheduler.state_dict(),
            }
            model = build()
            model.load_state_dict(checkpoint["model"])
            optimizer = make_optimizer(param_groups(model, 1e-3))
            optimizer.load_state_dict(checkpoint["optimizer"])
            scheduler = make_scheduler(optimizer, steps)
            scheduler.load_state_dict(checkpoint["scheduler"])
        loss = F.mse_loss(model(features), target)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_value_(model.parameters(), clip_value=0.5)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    print(f"{name}: loss {losses[0]:.4f} -> {losses[-1]:.4f}, lr {scheduler.get_last_lr()[0]:.5f}")
    return losses + [optimizer.param_groups[0]["lr"]]


def train(model, steps=20):
    features, target = data()
    losses = []
    for name in RECIPES:
        losses += run(copy.deepcopy(model), name, steps, features, target)
    return losses


if __name__ == "__main__":
    train(build())
