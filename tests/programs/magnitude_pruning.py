"""Magnitude pruning with ``torch.nn.utils.prune``: train a small MLP on a generated data set
(three spiral arms in the plane), prune half of its weights at once over all layers by their
absolute value (``global_unstructured`` with ``L1Unstructured``), fine-tune with the masks in
place (the pruned weights stay zero: their gradient is masked), make the pruning permanent
(``remove``) and report the sparsity and the accuracy at each stage."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune


def build():
    return nn.Sequential(
        nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 3)
    )


def make_data(n=300):
    """Points on three noisy spiral arms; the label is the arm."""
    rng = np.random.default_rng(0)
    label = rng.integers(0, 3, n)
    radius = rng.uniform(0.1, 1.0, n)
    angle = label * 2 * np.pi / 3 + 6 * radius + rng.normal(0, 0.2, n)
    points = np.stack([radius * np.cos(angle), radius * np.sin(angle)], 1)
    return torch.from_numpy(points.astype(np.float32)), torch.from_numpy(label)


def fit(model, x, y, steps, losses):
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())


def report(stage, model, x, y):
    weights = [m.weight for m in model if isinstance(m, nn.Linear)]
    zeros = sum(int((w == 0).sum()) for w in weights)
    total = sum(w.numel() for w in weights)
    with torch.no_grad():
        accuracy = (model(x).argmax(1) == y).float().mean().item()
    print(f"{stage}: sparsity {zeros / total:.3f} accuracy {accuracy:.3f}")


def train(model, steps=80):
    x, y = make_data()
    losses = []
    fit(model, x, y, steps, losses)
    report("dense", model, x, y)

    layers = [(m, "weight") for m in model if isinstance(m, nn.Linear)]
    prune.global_unstructured(layers, pruning_method=prune.L1Unstructured, amount=0.5)
    report("pruned", model, x, y)
    for i, (module, _) in enumerate(layers):
        kept = module.weight_mask.mean().item()
        print(f"layer {i}: {module.weight_mask.numel()} weights, {kept:.3f} kept")

    fit(model, x, y, steps // 2, losses)
    report("fine-tuned", model, x, y)
    for module, name in layers:
        prune.remove(module, name)
    report("removed", model, x, y)
    print("still pruned:", prune.is_pruned(model), "state:", list(model[0].state_dict()))
    return losses


if __name__ == "__main__":
    torch.manual_seed(0)
    train(build())
