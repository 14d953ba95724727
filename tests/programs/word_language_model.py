"""pytorch/examples' word-level language model: a two-layer LSTM whose decoder shares the
embedding's weight (tied), a corpus batchified into columns, truncated backpropagation through
time with the hidden state detached between chunks, ``clip_grad_norm_``, plain SGD written as
``p.data.add_`` and the learning rate divided by 4 when the validation loss stops improving (a
made-up Markov-chain corpus instead of Wikitext-2; dropout 0: its masks differ between
libraries)."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (
            weight.new_zeros(self.nlayers, bsz, self.nhid),
            weight.new_zeros(self.nlayers, bsz, self.nhid),
        )


def make_corpus(rng, length, ntoken):
    """Token ids from a random sparse Markov chain: each word has three likely successors."""
    successors = rng.integers(0, ntoken, (ntoken, 3))
    ids = [0]
    for _ in range(length - 1):
        ids.append(int(successors[ids[-1], rng.integers(0, 3)]))
    return torch.tensor(ids, dtype=torch.long)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].view(-1)
    return data, target


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def evaluate(model, data_source, criterion, bptt, eval_batch_size):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = get_batch(data_source, i, bptt)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def build():
    return RNNModel(30, 16, 16, 2, dropout=0.0, tie_weights=True)


def train(model, epochs=4, bptt=7, batch_size=4, clip=0.25):
    rng = np.random.default_rng(0)
    device = torch.device("cpu")
    train_data = batchify(make_corpus(rng, 200, model.ntoken), batch_size).to(device)
    val_data = batchify(make_corpus(rng, 60, model.ntoken), 2).to(device)
    criterion = nn.NLLLoss()
    lr = 20.0
    best_val_loss = None
    losses = []
    for epoch in range(1, epochs + 1):
        model.train()
        hidden = model.init_hidden(batch_size)
        for i in range(0, train_data.size(0) - 1, bptt):
            data, targets = get_batch(train_data, i, bptt)
            # Starting each batch, we detach the hidden state from how it was previously
            # produced; otherwise backprop would go all the way to the start of the dataset.
            model.zero_grad()
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            # `clip_grad_norm` helps prevent the exploding gradient problem in RNNs / LSTMs.
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            losses.append(loss.item())
        val_loss = evaluate(model, val_data, criterion, bptt, 2)
        print(
            f"| end of epoch {epoch:3d} | lr {lr:5.2f} | valid loss {val_loss:5.2f} | "
            f"valid ppl {math.exp(val_loss):8.2f}"
        )
        losses.append(val_loss)
        if best_val_loss is None or val_loss < best_val_loss:
            best_val_loss = val_loss
        else:
            # Anneal the learning rate if no improvement has been seen on the validation set.
            lr /= 4.0
    losses.append(lr)
    return losses


if __name__ == "__main__":
    train(build())
