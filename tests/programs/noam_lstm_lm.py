"""A word-level LSTM language model trained with the idioms of older and of newer scripts side by
side: the recurrent weights initialised layer by layer through ``rnn.all_weights`` (orthogonal
recurrent, Xavier input, zero biases, the forget gate's bias at one), the "Noam" warmup of The
Annotated Transformer written as a subclass of the old ``_LRScheduler`` base, the learning rate
held in a tensor (``lr=torch.tensor(...)``, as PyTorch's recipe for compiled optimizers with a
scheduler writes it), and a second phase stepped the old way, ``scheduler.step(epoch)``."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR, _LRScheduler

VOCAB, EMBED, HIDDEN, BPTT = 16, 12, 20, 8


class NoamLR(_LRScheduler):
    """lr = factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5), step counted from 1."""

    def __init__(self, optimizer, d_model, warmup, factor=1.0, last_epoch=-1):
        self.d_model, self.warmup, self.factor = d_model, warmup, factor
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        step = max(self.last_epoch, 1)
        scale = self.factor * self.d_model**-0.5 * min(step**-0.5, step * self.warmup**-1.5)
        return [scale for _ in self.base_lrs]


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.rnn = nn.LSTM(EMBED, HIDDEN, num_layers=2, dropout=0.0)
        self.decoder = nn.Linear(HIDDEN, VOCAB)
        self.init_rnn()

    def init_rnn(self):
        for weights in self.rnn.all_weights:
            weight_ih, weight_hh, bias_ih, bias_hh = weights
            nn.init.xavier_uniform_(weight_ih)
            nn.init.orthogonal_(weight_hh)
            nn.init.zeros_(bias_ih)
            nn.init.zeros_(bias_hh)
            with torch.no_grad():
                bias_ih[HIDDEN : 2 * HIDDEN].fill_(1.0)  # the forget gate

    def forward(self, tokens, hidden):  # tokens: (T, B)
        out, hidden = self.rnn(self.embed(tokens), hidden)
        return self.decoder(out), hidden


def repackage(hidden):
    return tuple(h.detach() for h in hidden)


def make_corpus(rng, length=400):
    """A Markov chain over the vocabulary, each word favouring three successors."""
    favourites = rng.integers(0, VOCAB, (VOCAB, 3))
    words = [0]
    for _ in range(length - 1):
        previous = words[-1]
        words.append(
            favourites[previous, rng.integers(0, 3)]
            if rng.random() < 0.8
            else rng.integers(0, VOCAB)
        )
    return torch.tensor(words)


def batchify(data, batch_size):
    steps = data.size(0) // batch_size
    return data[: steps * batch_size].view(batch_size, -1).t().contiguous()


def build():
    return LanguageModel()


def run_epoch(model, data, optimizer, scheduler=None):
    model.train()
    hidden = (torch.zeros(2, data.size(1), HIDDEN), torch.zeros(2, data.size(1), HIDDEN))
    losses = []
    for i in range(0, data.size(0) - 1, BPTT):
        length = min(BPTT, data.size(0) - 1 - i)
        inputs, targets = data[i : i + length], data[i + 1 : i + 1 + length]
        hidden = repackage(hidden)
        output, hidden = model(inputs, hidden)
        loss = F.cross_entropy(output.view(-1, VOCAB), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
    return losses


def train(model, warmup_epochs=2, decay_epochs=3):
    data = batchify(make_corpus(np.random.default_rng(9)), batch_size=8)
    optimizer = torch.optim.Adam(model.parameters(), lr=torch.tensor(1.0), betas=(0.9, 0.98))
    noam = NoamLR(optimizer, d_model=HIDDEN, warmup=6, factor=0.5)
    losses = []
    for epoch in range(warmup_epochs):
        losses += run_epoch(model, data, optimizer, noam)
        lr = float(optimizer.param_groups[0]["lr"])
        ppl = math.exp(losses[-1])
        print(f"warmup epoch {epoch}: loss {losses[-1]:.4f} ppl {ppl:.2f} lr {lr:.5f}")
    for group in optimizer.param_groups:  # the decay starts from the rate the warmup reached
        group["lr"] = float(group["lr"])
        group.pop("initial_lr")
    decay = StepLR(optimizer, step_size=1, gamma=0.5)
    for epoch in range(decay_epochs):
        decay.step(epoch)  # the epoch-numbered form of older scripts
        losses += run_epoch(model, data, optimizer)
        print(f"decay epoch {epoch}: loss {losses[-1]:.4f} lr {decay.get_last_lr()[0]:.5f}")
    return losses


if __name__ == "__main__":
    torch.manual_seed(0)
    train(build())
