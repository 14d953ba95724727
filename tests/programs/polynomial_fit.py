"""Fit sin(x) with a third-order polynomial, as PyTorch's "Learning PyTorch with Examples"
tutorial (the nn.Sequential version)."""

import math

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"


def build():
    return torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))


def train(model, steps=20):
    x = torch.linspace(-math.pi, math.pi, 2000, device=device)
    y = torch.sin(x)
    p = torch.tensor([1, 2, 3], device=device)
    xx = x.unsqueeze(-1).pow(p)
    model = model.to(device)
    loss_fn = torch.nn.MSELoss(reduction="sum")
    learning_rate = 1e-6
    losses = []
    for t in range(steps):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        if t % 5 == 4:
            print(f"step {t}: loss {loss.item():.4f}")
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for param in model.parameters():
                param -= learning_rate * param.grad
        losses.append(loss.item())
    linear_layer = model[0]
    a, (b, c, d) = linear_layer.bias.item(), linear_layer.weight[0].tolist()
    print(f"Result: y = {a:.4f} + {b:.4f} x + {c:.4f} x^2 + {d:.4f} x^3")
    return losses


if __name__ == "__main__":
    train(build())
