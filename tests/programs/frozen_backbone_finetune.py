"""Transfer learning as the "Finetuning Torchvision Models" tutorial and feature-extraction
recipes do it: a small convolutional backbone with its first stage frozen
(``requires_grad_(False)``, BatchNorm kept in eval mode), a forward hook capturing the
intermediate activation, an optimizer over ``filter(lambda p: p.requires_grad, ...)`` with a
lower learning rate for the backbone than for the new head, ReduceLROnPlateau on the validation
loss, and a checkpoint round trip through an in-memory ``io.BytesIO`` to resume training."""

import io

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()),
            nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU()),
        )
        self.head = nn.Linear(16, num_classes)

    def forward(self, x):
        features = F.adaptive_avg_pool2d(self.backbone(x), 1).flatten(1)
        return self.head(features)


def build():
    return Classifier()


def prepare(model, features):
    """Freezes the first stage and hooks it; returns the optimizer and the scheduler."""
    model.backbone[0].requires_grad_(False)
    model.backbone[0].eval()
    model.backbone[0].register_forward_hook(lambda m, inp, out: features.update(stage1=out))
    optimizer = torch.optim.Adam(
        [
            {"params": filter(lambda p: p.requires_grad, model.backbone.parameters()), "lr": 5e-3},
            {"params": model.head.parameters()},
        ],
        lr=5e-2,
    )
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0)
    return optimizer, scheduler


def run(model, optimizer, scheduler, features, data, epochs, losses):
    (x, y), (val_x, val_y) = data
    for _ in range(epochs):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            val_loss = F.cross_entropy(model(val_x), val_y)
        scheduler.step(val_loss.item())
        losses += [loss.item(), val_loss.item()]
        lrs = [group["lr"] for group in optimizer.param_groups]
        stage1 = features["stage1"].mean().item()
        print(f"loss {loss.item():.4f} val {val_loss.item():.4f} lrs {lrs} stage1 {stage1:.4f}")


def train(model, epochs=4):
    rng = np.random.default_rng(5)
    images = torch.from_numpy(rng.standard_normal((2, 16, 3, 8, 8)).astype(np.float32))
    labels = torch.from_numpy(rng.integers(0, 4, (2, 16)))
    data = list(zip(images, labels))
    features = {}
    optimizer, scheduler = prepare(model, features)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"trainable parameters: {trainable}")
    losses = []
    run(model, optimizer, scheduler, features, data, epochs, losses)
    buffer = io.BytesIO()
    state = {"model": model, "optimizer": optimizer, "scheduler": scheduler}
    torch.save({name: obj.state_dict() for name, obj in state.items()}, buffer)
    buffer.seek(0)
    checkpoint = torch.load(buffer, weights_only=True)
    resumed = Classifier()
    resumed.load_state_dict(checkpoint["model"])
    optimizer, scheduler = prepare(resumed, features)
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    print("resumed from the checkpoint")
    run(resumed, optimizer, scheduler, features, data, epochs, losses)
    return losses


if __name__ == "__main__":
    train(build())
