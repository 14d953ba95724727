"""A Kolmogorov-Arnold network (Liu et al., 2024) in the style of the efficient-KAN ports: each
layer a SiLU base path through ``F.linear`` plus learnable B-spline activations, the bases built
by the Cox-de Boor recursion on a grid buffer (``torch.where`` for the order-0 indicators,
broadcasting against ``grid[:, :-k-1]`` slices), summed with ``torch.einsum``, a standalone
spline scaler; the KAN regularization (L1 of the mean activations plus their entropy), a
regression target of two variables, Adam, and a final ``torch.no_grad`` evaluation."""

import math

import numpy as np
import torch
import torch.nn.functional as F


class KANLinear(torch.nn.Module):
    def __init__(self, in_features, out_features, grid_size=5, spline_order=3, grid_range=(-1, 1)):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.grid_size, self.spline_order = grid_size, spline_order
        h = (grid_range[1] - grid_range[0]) / grid_size
        grid = torch.arange(-spline_order, grid_size + spline_order + 1) * h + grid_range[0]
        self.register_buffer("grid", grid.expand(in_features, -1).contiguous())
        self.base_weight = torch.nn.Parameter(torch.empty(out_features, in_features))
        self.spline_weight = torch.nn.Parameter(
            torch.empty(out_features, in_features, grid_size + spline_order)
        )
        self.spline_scaler = torch.nn.Parameter(torch.empty(out_features, in_features))
        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.kaiming_uniform_(self.base_weight, a=math.sqrt(5))
        torch.nn.init.normal_(self.spline_weight, std=0.1)
        torch.nn.init.kaiming_uniform_(self.spline_scaler, a=math.sqrt(5))

    def b_splines(self, x):
        """The B-spline bases of x: (batch, in_features) -> (batch, in_features, coefficients)."""
        grid = self.grid
        x = x.unsqueeze(-1)
        inside = (x >= grid[:, :-1]) & (x < grid[:, 1:])
        bases = torch.where(inside, 1.0, 0.0).to(x.dtype)
        for k in range(1, self.spline_order + 1):
            left = (x - grid[:, : -(k + 1)]) / (grid[:, k:-1] - grid[:, : -(k + 1)])
            right = (grid[:, k + 1 :] - x) / (grid[:, k + 1 :] - grid[:, 1:(-k)])
            bases = left * bases[:, :, :-1] + right * bases[:, :, 1:]
        return bases.contiguous()

    @property
    def scaled_spline_weight(self):
        return self.spline_weight * self.spline_scaler.unsqueeze(-1)

    def forward(self, x):
        base_output = F.linear(F.silu(x), self.base_weight)
        spline_output = torch.einsum("bic,oic->bo", self.b_splines(x), self.scaled_spline_weight)
        return base_output + spline_output

    def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
        l1_fake = self.spline_weight.abs().mean(-1)
        regularization_loss_activation = l1_fake.sum()
        p = l1_fake / regularization_loss_activation
        regularization_loss_entropy = -torch.sum(p * p.log())
        return (
            regularize_activation * regularization_loss_activation
            + regularize_entropy * regularization_loss_entropy
        )


class KAN(torch.nn.Module):
    def __init__(self, layers_hidden, grid_size=5, spline_order=3):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            KANLinear(i, o, grid_size, spline_order)
            for i, o in zip(layers_hidden, layers_hidden[1:])
        )

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
        return sum(
            layer.regularization_loss(regularize_activation, regularize_entropy)
            for layer in self.layers
        )


def build():
    return KAN([2, 5, 1])


def target(x):  # f(x, y) = exp(sin(pi x) + y^2)
    return torch.exp(torch.sin(math.pi * x[:, [0]]) + x[:, [1]] ** 2)


def train(model, steps=20):
    rng = np.random.default_rng(0)
    x_train = torch.from_numpy(rng.uniform(-1, 1, (128, 2)).astype(np.float32))
    x_test = torch.from_numpy(rng.uniform(-1, 1, (64, 2)).astype(np.float32))
    y_train, y_test = target(x_train), target(x_test)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        mse = F.mse_loss(model(x_train), y_train)
        loss = mse + 1e-3 * model.regularization_loss()
        loss.backward()
        optimizer.step()
        losses.append(mse.item())
        if step % 5 == 0:
            print(f"step {step}: train mse {mse.item():.5f}")
    with torch.no_grad():
        test_rmse = torch.sqrt(F.mse_loss(model(x_test), y_test)).item()
    print(f"test rmse {test_rmse:.5f}")
    return losses + [test_rmse]


if __name__ == "__main__":
    train(build())
