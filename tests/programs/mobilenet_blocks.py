"""A MobileNetV3-style classifier built from inverted residual blocks: 1x1 expansion,
depthwise 3x3 convolution (groups equal to the channels), 1x1 projection, BatchNorm and
GroupNorm, Hardswish and ReLU6, global average pooling and a Dropout head; label-smoothed
cross-entropy, SGD with Nesterov momentum and weight decay, and OneCycleLR stepped every batch.
Dropout is switched off while training (``m.eval()`` on each Dropout, as RL fine-tuning
scripts do) since its masks would differ between libraries; the printed loss is the
eval-mode one."""

import numpy as np
import torch
import torch.nn as nn


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, expand, stride, act):
        super().__init__()
        hidden = cin * expand
        self.use_residual = stride == 1 and cin == cout
        self.block = nn.Sequential(
            nn.Conv2d(cin, hidden, 1, bias=False),
            nn.BatchNorm2d(hidden),
            act(),
            nn.Conv2d(hidden, hidden, 3, stride, padding=1, groups=hidden, bias=False),
            nn.GroupNorm(4, hidden),
            act(),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )

    def forward(self, x):
        out = self.block(x)
        return x + out if self.use_residual else out


class MobileNetTiny(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8), nn.Hardswish()
        )
        self.blocks = nn.Sequential(
            InvertedResidual(8, 8, 2, 1, nn.ReLU6),
            InvertedResidual(8, 16, 4, 2, nn.Hardswish),
            InvertedResidual(16, 16, 2, 1, nn.Hardswish),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(16, 32), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(32, num_classes)
        )

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))


def build():
    return MobileNetTiny()


def train(model, epochs=2, batches=3):
    rng = np.random.default_rng(1)
    images = torch.from_numpy(rng.standard_normal((batches, 8, 3, 16, 16)).astype(np.float32))
    labels = torch.from_numpy(rng.integers(0, 5, (batches, 8)))
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.SGD(
        model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=4e-5
    )
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=0.2, epochs=epochs, steps_per_epoch=batches
    )
    losses = []
    for epoch in range(epochs):
        for i in range(batches):
            model.train()
            for m in model.modules():
                if isinstance(m, nn.Dropout):
                    m.eval()
            loss = criterion(model(images[i]), labels[i])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
            model.eval()
            with torch.no_grad():
                eval_loss = criterion(model(images[i]), labels[i])
            losses += [loss.item(), eval_loss.item()]
            lr = scheduler.get_last_lr()[0]
            print(f"epoch {epoch} batch {i}: loss {eval_loss.item():.4f} (eval), lr {lr:.4f}")
    return losses


if __name__ == "__main__":
    train(build())
