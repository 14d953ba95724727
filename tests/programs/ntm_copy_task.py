"""A Neural Turing Machine (Graves et al., 2014) on the copy task, as its PyTorch ports write
the memory heads: content addressing by ``F.cosine_similarity`` between a key and every memory
row (broadcast with ``unsqueeze``), a key strength through ``F.softplus``, interpolation with
the previous weighting by a ``sigmoid`` gate, a circular shift as a convolution over ``torch.cat``
of the wrapped ends (``F.conv1d`` per batch element via ``groups``), sharpening by ``pow`` and
renormalisation, erase/add writes as outer products (``unsqueeze`` and
``matmul``), an ``nn.LSTMCell`` controller, memory kept in a buffer ``clone``d per sequence,
``BCEWithLogitsLoss``, RMSprop with momentum and ``clip_grad_value_``."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Head(nn.Module):
    def __init__(self, controller_size, M, shift=1):
        super().__init__()
        self.M, self.shift = M, shift
        # key, strength, gate, shift weights, sharpening, erase, add
        self.sizes = [M, 1, 1, 2 * shift + 1, 1, M, M]
        self.fc = nn.Linear(controller_size, sum(self.sizes))

    def address(self, memory, k, beta, g, s, gamma, w_prev):
        content = F.cosine_similarity(memory + 1e-16, k.unsqueeze(1) + 1e-16, dim=-1)
        w_c = F.softmax(beta * content, dim=1)
        w_g = g * w_c + (1 - g) * w_prev
        wrapped = torch.cat([w_g[:, -self.shift :], w_g, w_g[:, : self.shift]], dim=1)
        batch = w_g.shape[0]
        w_s = F.conv1d(wrapped.unsqueeze(0), s.flip(1).unsqueeze(1), groups=batch).squeeze(0)
        w = w_s.pow(gamma)
        return w / (w.sum(dim=1, keepdim=True) + 1e-16)

    def forward(self, h, memory, w_prev):
        k, beta, g, s, gamma, erase, add = self.fc(h).split(self.sizes, dim=1)
        k, beta, g, s, gamma = (
            torch.tanh(k),
            F.softplus(beta),
            torch.sigmoid(g),
            F.softmax(s, 1),
            1 + F.softplus(gamma),
        )
        w = self.address(memory, k, beta, g, s, gamma, w_prev)
        read = torch.matmul(w.unsqueeze(1), memory).squeeze(1)
        erase_matrix = w.unsqueeze(-1) * torch.sigmoid(erase).unsqueeze(1)
        memory = memory * (1 - erase_matrix) + w.unsqueeze(-1) * torch.tanh(add).unsqueeze(1)
        return read, memory, w


class NTM(nn.Module):
    def __init__(self, bits=4, controller_size=32, N=12, M=8):
        super().__init__()
        self.controller = nn.LSTMCell(bits + 1 + M, controller_size)
        self.head = Head(controller_size, M)
        self.out = nn.Linear(controller_size + M, bits)
        self.register_buffer("memory_bias", torch.full((N, M), 1e-6))
        self.N, self.M = N, M

    def forward(self, inputs, out_len):
        batch = inputs.shape[1]
        memory = self.memory_bias.clone().repeat(batch, 1, 1)
        h = torch.zeros(batch, self.controller.hidden_size)
        c = torch.zeros_like(h)
        read = torch.zeros(batch, self.M)
        w = torch.zeros(batch, self.N)
        w[:, 0] = 1.0
        outputs = []
        blank = torch.zeros(out_len, batch, inputs.shape[2])
        for x in torch.cat([inputs, blank]):
            h, c = self.controller(torch.cat([x, read], dim=1), (h, c))
            read, memory, w = self.head(h, memory, w)
            outputs.append(self.out(torch.cat([h, read], dim=1)))
        return torch.stack(outputs[-out_len:])


def build():
    return NTM()


def copy_batch(rng, batch=8, length=4, bits=4):
    seq = rng.integers(0, 2, (length, batch, bits)).astype(np.float32)
    inputs = np.zeros((length + 1, batch, bits + 1), np.float32)
    inputs[:length, :, :bits] = seq
    inputs[length, :, bits] = 1.0  # the delimiter
    return torch.from_numpy(inputs), torch.from_numpy(seq)


def train(model, steps=10):
    rng = np.random.default_rng(0)
    criterion = nn.BCEWithLogitsLoss()
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3, momentum=0.9, alpha=0.95)
    losses = []
    for step in range(steps):
        inputs, target = copy_batch(rng)
        logits = model(inputs, target.shape[0])
        loss = criterion(logits, target)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_value_(model.parameters(), 10)
        optimizer.step()
        losses.append(loss.item())
        bit_errors = ((logits > 0).float() != target).float().sum(0).mean().item()
        print(f"step {step}: loss {loss.item():.4f}, bit errors per sequence {bit_errors:.2f}")
    return losses


if __name__ == "__main__":
    train(build())
