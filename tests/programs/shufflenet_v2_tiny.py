"""A ShuffleNetV2-style classifier as torchvision's and the paper's code write it: a
``nn.PixelUnshuffle`` space-to-depth stem, units that split the channels with ``chunk``, a
depthwise branch, a hand-written ``channel_shuffle`` (``view``, ``transpose``, ``contiguous``)
beside ``nn.ChannelShuffle`` in the downsampling units, squeeze-and-excitation with
``nn.Hardsigmoid`` and ``adaptive_avg_pool2d``, Kaiming init, and SGD with Nesterov momentum
and per-parameter-group weight decay (none on norms and biases), ``MultiStepLR``."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def channel_shuffle(x, groups):
    batchsize, num_channels, height, width = x.size()
    channels_per_group = num_channels // groups
    x = x.view(batchsize, groups, channels_per_group, height, width)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(batchsize, -1, height, width)


class SqueezeExcite(nn.Module):
    def __init__(self, channels, reduction=4):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, channels // reduction, 1)
        self.fc2 = nn.Conv2d(channels // reduction, channels, 1)
        self.gate = nn.Hardsigmoid()

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.fc2(F.relu(self.fc1(s))))


def depthwise(channels, stride):
    return nn.Sequential(
        nn.Conv2d(channels, channels, 3, stride, 1, groups=channels, bias=False),
        nn.BatchNorm2d(channels),
    )


def pointwise(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride):
        super().__init__()
        self.stride = stride
        branch_features = oup // 2
        if stride > 1:
            self.branch1 = nn.Sequential(depthwise(inp, stride), pointwise(inp, branch_features))
            self.shuffle = nn.ChannelShuffle(2)
        in2 = inp if stride > 1 else branch_features
        self.branch2 = nn.Sequential(
            pointwise(in2, branch_features),
            depthwise(branch_features, stride),
            pointwise(branch_features, branch_features),
            SqueezeExcite(branch_features),
        )

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            return channel_shuffle(torch.cat((x1, self.branch2(x2)), dim=1), 2)
        return self.shuffle(torch.cat((self.branch1(x), self.branch2(x)), dim=1))


class ShuffleNetTiny(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.stem = nn.Sequential(nn.PixelUnshuffle(2), pointwise(12, 16))  # 3x16x16 -> 16x8x8
        self.stages = nn.Sequential(
            InvertedResidual(16, 32, 2), InvertedResidual(32, 32, 1), InvertedResidual(32, 32, 1)
        )
        self.fc = nn.Linear(32, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.fc(x.mean([2, 3]))


def parameter_groups(model, weight_decay):
    decay, no_decay = [], []
    for param in model.parameters():
        (no_decay if param.ndim <= 1 else decay).append(param)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def build():
    return ShuffleNetTiny()


def train(model, epochs=3):
    rng = np.random.default_rng(0)
    images = torch.from_numpy(rng.standard_normal((3, 16, 3, 16, 16)).astype(np.float32))
    labels = torch.from_numpy(rng.integers(0, 5, (3, 16)))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(parameter_groups(model, 4e-5), lr=0.05, momentum=0.9, nesterov=True)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[4, 7], gamma=0.3)
    losses = []
    for epoch in range(epochs):
        model.train()
        for x, y in zip(images, labels):
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            eval_loss = criterion(model(images[0]), labels[0]).item()
        losses.append(eval_loss)
        print(f"epoch {epoch}: train {losses[-2]:.4f} eval {eval_loss:.4f}")
    return losses


if __name__ == "__main__":
    train(build())
