"""pytorch/examples' siamese_network: a backbone whose first convolution is replaced to take one
channel and whose classifier head is cut off with ``nn.Sequential(*list(m.children())[:-1])``
(its width read from ``fc.in_features``), the two images' features concatenated and scored by
a head with ``nn.ReLU(inplace=True)`` and a ``Sigmoid``, weights set by ``apply`` with
``xavier_uniform_`` and ``bias.data.fill_(0.01)``, pairs made by a ``Dataset`` subclass,
``BCELoss``, ``Adadelta`` with ``StepLR``, and test accuracy counted with
``torch.where(outputs > 0.5, 1, 0)`` and ``pred.eq(targets.view_as(pred)).sum().item()``
(a tiny convolutional backbone instead of ResNet-18, and 8 x 8 images of four blob shapes)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, Dataset


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(6)
        self.relu = nn.ReLU(inplace=True)
        self.avgpool = nn.AdaptiveAvgPool2d((2, 2))
        self.fc = nn.Linear(24, 10)

    def forward(self, x):
        x = self.avgpool(self.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(x, 1))


class SiameseNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.fc_in_features = self.backbone.fc.in_features
        self.backbone.conv1 = nn.Conv2d(1, 6, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
        self.backbone = nn.Sequential(*(list(self.backbone.children())[:-1]))
        self.fc = nn.Sequential(
            nn.Linear(self.fc_in_features * 2, 16),
            nn.ReLU(inplace=True),
            nn.Linear(16, 1),
        )
        self.sigmoid = nn.Sigmoid()
        self.backbone.apply(self.init_weights)
        self.fc.apply(self.init_weights)

    def init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            m.bias.data.fill_(0.01)

    def forward_once(self, x):
        output = self.backbone(x)
        return output.view(output.size()[0], -1)

    def forward(self, input1, input2):
        output = torch.cat((self.forward_once(input1), self.forward_once(input2)), 1)
        return self.sigmoid(self.fc(output))


class PairDataset(Dataset):
    def __init__(self, images, labels, seed):
        rng = np.random.default_rng(seed)
        self.images, self.pairs = images, []
        for i in range(len(labels)):
            same = rng.random() < 0.5
            choices = np.where((labels == labels[i]) == same)[0]
            self.pairs.append((i, int(rng.choice(choices)), float(same)))

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, index):
        i, j, target = self.pairs[index]
        return self.images[i], self.images[j], torch.tensor(target, dtype=torch.float)


def build():
    return SiameseNetwork()


def train(model, epochs=3):
    rng = np.random.default_rng(6)
    shapes = rng.uniform(0, 1, (4, 1, 8, 8))
    labels = rng.integers(0, 4, 40)
    images = (shapes[labels] + 0.3 * rng.standard_normal((40, 1, 8, 8))).astype("float32")
    images = torch.from_numpy(images)
    train_loader = DataLoader(PairDataset(images[:32], labels[:32], 7), batch_size=8)
    test_loader = DataLoader(PairDataset(images[32:], labels[32:], 8), batch_size=4)
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    criterion = nn.BCELoss()
    losses = []
    for epoch in range(1, epochs + 1):
        model.train()
        for images_1, images_2, targets in train_loader:
            optimizer.zero_grad()
            outputs = model(images_1, images_2).squeeze()
            loss = criterion(outputs, targets)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        model.eval()
        test_loss, correct = 0, 0
        with torch.no_grad():
            for images_1, images_2, targets in test_loader:
                outputs = model(images_1, images_2).squeeze()
                test_loss += F.binary_cross_entropy(outputs, targets, reduction="sum").item()
                pred = torch.where(outputs > 0.5, 1, 0)
                correct += pred.eq(targets.view_as(pred)).sum().item()
        test_loss /= len(test_loader.dataset)
        print(f"Epoch {epoch}: test set: average loss: {test_loss:.4f}, accuracy: {correct}/8")
        losses += [test_loss, correct]
        scheduler.step()
    return losses


if __name__ == "__main__":
    train(build())
