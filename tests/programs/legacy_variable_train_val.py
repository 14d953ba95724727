"""An MLP classifier written the way 2017-2019 repos and course notebooks wrote them:
``Variable`` wrappers, ``torch.Tensor``/``torch.FloatTensor``/``torch.LongTensor`` built from
lists and from sizes, ``.type(torch.FloatTensor)``, ``.cuda()`` behind
``torch.cuda.is_available()``, ``model.apply(init_weights)`` with ``xavier_uniform_``,
``log_softmax`` + ``nll_loss``, and the transfer-learning tutorial's train/val phase loop with
``torch.set_grad_enabled``, ``torch.max(outputs, 1)``, a ``StepLR``, the best weights kept with
``copy.deepcopy`` and a last test loss with ``volatile=True`` and ``size_average=False`` (three
Gaussian blobs drawn with NumPy)."""

import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.autograd import Variable
from torch.utils.data import DataLoader, TensorDataset

use_cuda = torch.cuda.is_available()
device = torch.device("cuda" if use_cuda else "cpu")


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()  # noqa: UP008  (the 2017 spelling)
        self.fc1 = nn.Linear(6, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, 3)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return F.log_softmax(self.fc3(x), dim=1)


def init_weights(m):
    if type(m) == nn.Linear:  # noqa: E721  (as the old init snippets compare)
        nn.init.xavier_uniform_(m.weight)
        m.bias.data.fill_(0.01)


def build():
    model = Net()
    model.apply(init_weights)
    if use_cuda:
        model = model.cuda()
    return model


def make_split(rng, n):
    labels = rng.integers(0, 3, n)
    centers = np.array([[1.5] * 6, [-1.5] * 6, [1.5, -1.5] * 3])
    points = centers[labels] + rng.normal(0, 1.2, (n, 6))
    inputs = torch.from_numpy(points).type(torch.FloatTensor)  # float64 -> float32
    return TensorDataset(inputs, torch.LongTensor(labels.tolist()))


def train(model, num_epochs=3):
    rng = np.random.default_rng(0)
    datasets = {"train": make_split(rng, 96), "val": make_split(rng, 48)}
    dataloaders = {p: DataLoader(datasets[p], batch_size=16, shuffle=False) for p in datasets}
    dataset_sizes = {p: len(datasets[p]) for p in datasets}
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    exp_lr_scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)
    class_weight = torch.Tensor([1, 1, 2]).to(device)  # the legacy constructor: floats
    best_model_wts, best_acc, losses = copy.deepcopy(model.state_dict()), 0.0, []
    for epoch in range(num_epochs):
        print(f"Epoch {epoch}/{num_epochs - 1}")
        for phase in ["train", "val"]:
            model.train() if phase == "train" else model.eval()
            running_loss, running_corrects = 0.0, 0
            confusion = torch.LongTensor(3, 3).zero_()
            for inputs, labels in dataloaders[phase]:
                inputs = Variable(inputs.to(device))
                labels = Variable(labels.to(device), requires_grad=False)
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = F.nll_loss(outputs, labels, weight=class_weight)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                        losses.append(loss.data.item())
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
                for t, p in zip(labels.view(-1), preds.view(-1)):
                    confusion[t.long(), p.long()] += 1
            if phase == "train":
                exp_lr_scheduler.step()
            epoch_loss = running_loss / dataset_sizes[phase]
            epoch_acc = running_corrects.double() / dataset_sizes[phase]
            print(f"{phase} Loss: {epoch_loss:.4f} Acc: {epoch_acc:.4f}")
            losses.append(epoch_loss)
            if phase == "val" and epoch_acc > best_acc:
                best_acc, best_model_wts = epoch_acc.item(), copy.deepcopy(model.state_dict())
        print("per-class recall", (confusion.diag().float() / confusion.sum(1).float()).tolist())
    model.load_state_dict(best_model_wts)
    x, y = datasets["val"].tensors
    print(f"Best val Acc: {best_acc:4f}")
    test_loss = F.nll_loss(model(Variable(x, volatile=True)), Variable(y), size_average=False)
    losses.append(test_loss.data.item() / len(y))  # summed as pytorch/examples' MNIST test()
    return losses


if __name__ == "__main__":
    train(build())
