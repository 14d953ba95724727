"""pytorch/examples' time_sequence_prediction: two stacked ``nn.LSTMCell`` unrolled over sine
waves in float64 (the input split with ``chunk`` along time), the outputs joined with
``torch.stack(...).squeeze(2)``, a few extra steps fed back on themselves to predict the future,
and ``optim.LBFGS(lr=0.8)`` with a closure that prints the loss (8 short waves instead of 100
long ones; the test set predicted under ``no_grad``)."""

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class Sequence(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        for input_t in input.chunk(input.size(1), dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _ in range(future):  # the last output is the next input
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.stack(outputs, 1).squeeze(2)


def build():
    return Sequence().double()


def train(seq, steps=2):
    rng = np.random.default_rng(2)
    x = np.arange(14)[None, :] + rng.integers(-4, 4, (8, 1))
    data = np.sin(x / 4.0).astype("float64")
    input = torch.from_numpy(data[2:, :-1])
    target = torch.from_numpy(data[2:, 1:])
    test_input = torch.from_numpy(data[:2, :-1])
    test_target = torch.from_numpy(data[:2, 1:])
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8)
    losses = []
    for i in range(steps):
        print("STEP: ", i)

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            print("loss:", loss.item())
            losses.append(loss.item())
            loss.backward()
            return loss

        optimizer.step(closure)
        with torch.no_grad():
            future = 3
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            print("test loss:", loss.item())
            y = pred.detach().numpy()
        losses.extend([loss.item(), float(y[:, -future:].sum())])
    return losses


if __name__ == "__main__":
    train(build())
