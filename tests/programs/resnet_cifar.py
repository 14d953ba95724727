"""A small ResNet for CIFAR-10, as the popular training scripts write one: a ``BasicBlock`` of two
3x3 convolutions with batch norm whose residual is added in place (``out += shortcut(x)``),
an empty ``nn.Sequential`` as the identity shortcut, stages built as ``nn.Sequential(*layers)``,
Kaiming initialization over ``self.modules()``, ``AdaptiveAvgPool2d`` and ``torch.flatten``;
SGD with Nesterov momentum and weight decay, ``CosineAnnealingLR`` stepped per epoch, and test
accuracy with ``model.eval()`` under ``torch.no_grad()`` (random 3 x 12 x 12 images whose class
is their brightest colour channel instead of CIFAR-10)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(
            in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False
        )
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)

        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != self.expansion * planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(
                    in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False
                ),
                nn.BatchNorm2d(self.expansion * planes),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        out = F.relu(out)
        return out


class ResNet(nn.Module):
    def __init__(self, block, num_blocks, num_classes=3, width=8):
        super().__init__()
        self.in_planes = width

        self.conv1 = nn.Conv2d(3, width, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.layer1 = self._make_layer(block, width, num_blocks[0], stride=1)
        self.layer2 = self._make_layer(block, 2 * width, num_blocks[1], stride=2)
        self.layer3 = self._make_layer(block, 4 * width, num_blocks[2], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.linear = nn.Linear(4 * width * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, block, planes, num_blocks, stride):
        strides = [stride] + [1] * (num_blocks - 1)
        layers = []
        for stride in strides:
            layers.append(block(self.in_planes, planes, stride))
            self.in_planes = planes * block.expansion
        return nn.Sequential(*layers)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer1(out)
        out = self.layer2(out)
        out = self.layer3(out)
        out = self.avgpool(out)
        out = torch.flatten(out, 1)
        out = self.linear(out)
        return out


def make_images(rng, n):
    labels = rng.integers(0, 3, n)
    images = rng.standard_normal((n, 3, 12, 12)).astype(np.float32)
    images[np.arange(n), labels] += 0.5
    return torch.from_numpy(images), torch.from_numpy(labels)


def build():
    return ResNet(BasicBlock, [2, 1, 1])


def train(net, epochs=3):
    rng = np.random.default_rng(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    trainloader = DataLoader(TensorDataset(*make_images(rng, 24)), batch_size=8, shuffle=False)
    testloader = DataLoader(TensorDataset(*make_images(rng, 16)), batch_size=8, shuffle=False)
    net = net.to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4, nesterov=True)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    losses = []
    for epoch in range(epochs):
        net.train()
        train_loss, correct, total = 0, 0, 0
        for inputs, targets in trainloader:
            inputs, targets = inputs.to(device), targets.to(device)
            optimizer.zero_grad()
            outputs = net(inputs)
            loss = criterion(outputs, targets)
            loss.backward()
            optimizer.step()

            train_loss += loss.item()
            _, predicted = outputs.max(1)
            total += targets.size(0)
            correct += predicted.eq(targets).sum().item()
            losses.append(loss.item())
        scheduler.step()

        net.eval()
        test_loss, test_correct, test_total = 0, 0, 0
        with torch.no_grad():
            for inputs, targets in testloader:
                inputs, targets = inputs.to(device), targets.to(device)
                outputs = net(inputs)
                test_loss += criterion(outputs, targets).item()
                _, predicted = outputs.max(1)
                test_total += targets.size(0)
                test_correct += predicted.eq(targets).sum().item()
        acc = 100.0 * test_correct / test_total
        print(
            f"Epoch {epoch} | Loss: {train_loss / len(trainloader):.3f} | "
            f"Acc: {100.0 * correct / total:.3f}% | Test Loss: {test_loss / 2:.3f} | "
            f"Test Acc: {acc:.3f}% | lr {scheduler.get_last_lr()[0]:.4f}"
        )
        losses += [test_loss, acc, scheduler.get_last_lr()[0]]
    return losses


if __name__ == "__main__":
    train(build())
