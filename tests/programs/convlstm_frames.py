"""A ConvLSTM (Shi et al., 2015) predicting the next frame of moving squares, as the popular
PyTorch ConvLSTM module writes it: a cell whose one convolution over ``torch.cat([x, h], dim=1)``
gives the four gates, split by ``torch.split``, ``sigmoid`` and ``tanh`` updates, hidden states
made by ``init_hidden`` with ``torch.zeros(..., device=self.conv.weight.device)``, two stacked
layers unrolled over the frames with ``torch.stack``, a 1x1 readout trained with ``MSELoss`` and
RMSprop, and a closed-loop rollout feeding the predictions back in under ``torch.no_grad``."""

import numpy as np
import torch
import torch.nn as nn


class ConvLSTMCell(nn.Module):
    def __init__(self, input_dim, hidden_dim, kernel_size, bias=True):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.conv = nn.Conv2d(
            in_channels=input_dim + hidden_dim,
            out_channels=4 * hidden_dim,
            kernel_size=kernel_size,
            padding=kernel_size // 2,
            bias=bias,
        )

    def forward(self, input_tensor, cur_state):
        h_cur, c_cur = cur_state
        combined = torch.cat([input_tensor, h_cur], dim=1)
        combined_conv = self.conv(combined)
        cc_i, cc_f, cc_o, cc_g = torch.split(combined_conv, self.hidden_dim, dim=1)
        i = torch.sigmoid(cc_i)
        f = torch.sigmoid(cc_f)
        o = torch.sigmoid(cc_o)
        g = torch.tanh(cc_g)
        c_next = f * c_cur + i * g
        h_next = o * torch.tanh(c_next)
        return h_next, c_next

    def init_hidden(self, batch_size, image_size):
        height, width = image_size
        device = self.conv.weight.device
        return (
            torch.zeros(batch_size, self.hidden_dim, height, width, device=device),
            torch.zeros(batch_size, self.hidden_dim, height, width, device=device),
        )


class ConvLSTM(nn.Module):
    def __init__(self, input_dim=1, hidden_dims=(8, 8), kernel_size=3):
        super().__init__()
        dims = [input_dim, *hidden_dims]
        self.cells = nn.ModuleList(
            ConvLSTMCell(dims[i], dims[i + 1], kernel_size) for i in range(len(hidden_dims))
        )
        self.readout = nn.Conv2d(hidden_dims[-1], 1, kernel_size=1)

    def forward(self, frames, states=None):
        """frames: (batch, time, channels, height, width) -> next frames, last states."""
        b, t, _, h, w = frames.size()
        if states is None:
            states = [cell.init_hidden(b, (h, w)) for cell in self.cells]
        layer_input = frames
        new_states = []
        for cell, (h_t, c_t) in zip(self.cells, states):
            outputs = []
            for step in range(t):
                h_t, c_t = cell(layer_input[:, step], (h_t, c_t))
                outputs.append(h_t)
            layer_input = torch.stack(outputs, dim=1)
            new_states.append((h_t, c_t))
        predictions = self.readout(layer_input.flatten(0, 1)).view(b, t, 1, h, w)
        return torch.sigmoid(predictions), new_states


def moving_squares(rng, batch, frames, size=10, side=3):
    video = np.zeros((batch, frames, 1, size, size), np.float32)
    start = rng.integers(0, size - side, size=(batch, 2))
    velocity = rng.choice([-1, 1], size=(batch, 2))
    for b in range(batch):
        pos = start[b].copy()
        for t in range(frames):
            video[b, t, 0, pos[0] : pos[0] + side, pos[1] : pos[1] + side] = 1
            velocity[b] = np.where(
                (pos + velocity[b] < 0) | (pos + velocity[b] > size - side),
                -velocity[b],
                velocity[b],
            )
            pos += velocity[b]
    return video


def build():
    return ConvLSTM()


def train(model, steps=6, frames=4):
    rng = np.random.default_rng(0)
    criterion = nn.MSELoss()
    optimizer = torch.optim.RMSprop(model.parameters(), lr=3e-3)
    losses = []
    for step in range(steps):
        video = torch.from_numpy(moving_squares(rng, 4, frames + 1))
        predictions, _ = model(video[:, :-1])
        loss = criterion(predictions, video[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"step {step}: mse {loss.item():.5f}")
    with torch.no_grad():  # warm up on 3 frames, then feed the predictions back in
        video = torch.from_numpy(moving_squares(rng, 4, 6))
        predictions, states = model(video[:, :3])
        frame = predictions[:, -1:]
        rollout = []
        for _ in range(3):
            rollout.append(frame)
            frame, states = model(frame, states)
        losses.append(criterion(torch.cat(rollout, dim=1), video[:, 3:]).item())
    return losses


if __name__ == "__main__":
    train(build())
