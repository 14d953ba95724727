"""pytorch/examples' mnist_forward_forward: layers trained one at a time, without backprop
between them, each a ``nn.Linear`` subclass holding its own Adam; an input's goodness is the
mean square of its activations, the label is written into the first pixels
(``x_[range(n), y] = x.max()``), inputs are normalized with ``x.norm(2, 1, keepdim=True)``, the
loss is ``torch.log(1 + torch.exp(torch.cat([...])))`` over positive and negative samples, and
prediction takes the ``argmax`` of the goodness summed over layers under ``no_grad`` (random
images of three blob shapes instead of MNIST; the negative labels drawn with NumPy)."""

import numpy as np
import torch
import torch.nn as nn
from torch.optim import Adam

NCLASS = 3


def overlay_y_on_x(x, y):
    x_ = x.clone()
    x_[:, :NCLASS] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.relu = torch.nn.ReLU()
        self.opt = Adam(self.parameters(), lr=0.03)
        self.threshold = 2.0
        self.num_epochs = 4

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train(self, x_pos, x_neg, losses):
        for _ in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            loss = torch.log(
                1 + torch.exp(torch.cat([-g_pos + self.threshold, g_neg - self.threshold]))
            ).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            losses.append(loss.item())
        return self.forward(x_pos).detach(), self.forward(x_neg).detach()


class Net(torch.nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.layers = []
        for d in range(len(dims) - 1):
            self.layers += [Layer(dims[d], dims[d + 1])]
        for i, layer in enumerate(self.layers):  # (the example keeps a plain list)
            self.add_module(f"layer{i}", layer)

    def predict(self, x):
        goodness_per_label = []
        for label in range(NCLASS):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness += [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        goodness_per_label = torch.cat(goodness_per_label, 1)
        return goodness_per_label.argmax(1)

    def train(self, x_pos, x_neg, losses):
        h_pos, h_neg = x_pos, x_neg
        for i, layer in enumerate(self.layers):
            print("training layer", i, "...")
            h_pos, h_neg = layer.train(h_pos, h_neg, losses)


def build():
    return Net([36, 20, 20])


def train(net):
    rng = np.random.default_rng(4)
    y = rng.integers(0, NCLASS, 48)
    shapes = rng.uniform(0, 1, (NCLASS, 36))
    x = torch.from_numpy((shapes[y] + 0.3 * rng.standard_normal((48, 36))).astype("float32"))
    y = torch.from_numpy(y)
    x_pos = overlay_y_on_x(x, y)
    y_neg = (y + torch.from_numpy(rng.integers(1, NCLASS, 48))) % NCLASS
    x_neg = overlay_y_on_x(x, y_neg)
    losses = []
    net.train(x_pos, x_neg, losses)
    with torch.no_grad():
        error = 1.0 - net.predict(x).eq(y).float().mean().item()
    print("train error:", error)
    return losses + [error]


if __name__ == "__main__":
    train(build())
