"""The "60 Minute Blitz" tutorial's autograd and neural-network parts: gradients of
Q = 3a^3 - b^2 with an external gradient, walking loss.grad_fn.next_functions, and LeNet-style
training with SGD (one random image instead of CIFAR)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, input):
        c1 = F.relu(self.conv1(input))
        s2 = F.max_pool2d(c1, (2, 2))
        c3 = F.relu(self.conv2(s2))
        s4 = F.max_pool2d(c3, 2)
        s4 = torch.flatten(s4, 1)
        f5 = F.relu(self.fc1(s4))
        f6 = F.relu(self.fc2(f5))
        return self.fc3(f6)


def build():
    return Net()


def train(net, steps=2):
    a = torch.tensor([2.0, 3.0], requires_grad=True)
    b = torch.tensor([6.0, 4.0], requires_grad=True)
    Q = 3 * a**3 - b**2
    external_grad = torch.tensor([1.0, 1.0])
    Q.backward(gradient=external_grad)
    print(9 * a**2 == a.grad, -2 * b == b.grad)
    losses = a.grad.tolist() + b.grad.tolist()

    input = torch.linspace(-1, 1, 32 * 32).reshape(1, 1, 32, 32)
    target = torch.linspace(0, 1, 10).view(1, -1)
    criterion = nn.MSELoss()
    optimizer = optim.SGD(net.parameters(), lr=0.01)
    for step in range(steps):
        optimizer.zero_grad()
        output = net(input)
        loss = criterion(output, target)
        if step == 0:
            print(loss.grad_fn)  # MSELoss
            print(loss.grad_fn.next_functions[0][0])  # Linear
            print(loss.grad_fn.next_functions[0][0].next_functions[0][0])  # ReLU
        loss.backward()
        if step == 0:
            print("conv1.bias.grad after backward")
            print(net.conv1.bias.grad)
            losses.extend(net.conv1.bias.grad.tolist())
        optimizer.step()
        losses.append(loss.item())
    return losses


if __name__ == "__main__":
    train(build())
