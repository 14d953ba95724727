"""A pointer network (Vinyals et al.) that learns to sort numbers, written as the pointer-net
repositories write it: a bidirectional ``nn.LSTM`` encoder, an ``nn.LSTMCell`` decoder fed
the embedding of the element it pointed at (teacher forcing from ``torch.sort``'s indices),
additive attention whose scores are the output distribution, visited positions masked with
``masked_fill(-inf)`` and recorded with ``scatter``, the next input picked by ``gather`` on
an expanded index, ``cross_entropy`` over the pointer logits, Adam with ``amsgrad=True``,
and greedy decoding under ``torch.no_grad()`` scored by exact-match accuracy."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SEQ_LEN, HIDDEN = 6, 24


class Attention(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.W_ref = nn.Linear(hidden, hidden, bias=False)
        self.W_q = nn.Linear(hidden, hidden, bias=False)
        self.v = nn.Parameter(torch.empty(hidden).uniform_(-0.1, 0.1))

    def forward(self, query, ref, mask):
        # u_i = v^T tanh(W_ref e_i + W_q d)
        u = torch.tanh(self.W_ref(ref) + self.W_q(query).unsqueeze(1)) @ self.v
        return u.masked_fill(mask, float("-inf"))


class PointerNet(nn.Module):
    def __init__(self, hidden=HIDDEN):
        super().__init__()
        self.embedding = nn.Linear(1, hidden)
        self.encoder = nn.LSTM(hidden, hidden // 2, batch_first=True, bidirectional=True)
        self.decoder = nn.LSTMCell(hidden, hidden)
        self.attention = Attention(hidden)
        self.decoder_start = nn.Parameter(torch.zeros(hidden))

    def forward(self, x, targets=None):
        batch_size, seq_len = x.shape
        embedded = self.embedding(x.unsqueeze(-1))
        encoder_outputs, (h, c) = self.encoder(embedded)
        # the two directions' last states, side by side, start the decoder
        hidden = (
            h.transpose(0, 1).reshape(batch_size, -1),
            c.transpose(0, 1).reshape(batch_size, -1),
        )
        decoder_input = self.decoder_start.expand(batch_size, -1)
        mask = torch.zeros(batch_size, seq_len, dtype=torch.bool)
        logits, pointers = [], []
        for step in range(seq_len):
            hidden = self.decoder(decoder_input, hidden)
            scores = self.attention(hidden[0], encoder_outputs, mask)
            logits.append(scores)
            pointer = targets[:, step] if targets is not None else scores.argmax(dim=1)
            pointers.append(pointer)
            mask = mask.scatter(1, pointer.unsqueeze(1), True)
            index = pointer.view(-1, 1, 1).expand(-1, 1, embedded.size(2))
            decoder_input = torch.gather(embedded, 1, index).squeeze(1)
        return torch.stack(logits, dim=1), torch.stack(pointers, dim=1)


def build():
    return PointerNet()


def make_batch(rng, n):
    x = torch.tensor(rng.uniform(0, 1, (n, SEQ_LEN)), dtype=torch.float32)
    _, order = torch.sort(x, dim=1)
    return x, order


def train(model, steps=15, batch_size=32):
    rng = np.random.default_rng(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, amsgrad=True)
    x_test, order_test = make_batch(rng, 64)
    losses = []
    for step in range(steps):
        model.train()
        x, order = make_batch(rng, batch_size)
        optimizer.zero_grad()
        logits, _ = model(x, targets=order)
        loss = F.cross_entropy(logits.reshape(-1, SEQ_LEN), order.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 2.0)
        optimizer.step()
        losses.append(loss.item())
        if step % 5 == 4:
            model.eval()
            with torch.no_grad():
                _, pointers = model(x_test)
                exact = (pointers == order_test).all(dim=1).float().mean().item()
                per_position = (pointers == order_test).float().mean().item()
            print(
                f"step {step + 1}: loss {loss.item():.4f} exact {exact:.3f} "
                f"positions {per_position:.3f}"
            )
            losses += [exact, per_position]
    return losses


if __name__ == "__main__":
    train(build())
