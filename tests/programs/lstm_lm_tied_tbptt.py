"""A word-level LSTM language model trained with truncated backpropagation through time, in the
manner of AWD-LSTM's training loop: a ``Dictionary``/``Corpus`` built from text, batch-first
batches, a two-layer ``nn.LSTM`` whose projection (``proj_size``) lets the decoder share the
embedding's weight, sequence lengths drawn around ``bptt`` with the learning rate rescaled to
match, the hidden state carried between batches and detached by ``repackage_hidden``,
``clip_grad_norm_``, ``optim.SGD`` with weight decay, the learning rate divided by 4 through
``param_groups`` when the validation loss stops improving, perplexity with ``math.exp``, and
greedy generation (a made-up corpus drawn with NumPy; dropout 0: its masks differ between
libraries)."""

import math

import numpy as np
import torch
import torch.nn as nn

SUBJECTS = ["the cat", "a dog", "my friend", "the old man", "a small bird"]
VERBS = ["sees", "likes", "chases", "finds", "waits for"]
OBJECTS = ["the ball", "a tree", "the river", "some bread", "the red house"]


class Dictionary:
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus:
    def __init__(self, rng):
        self.dictionary = Dictionary()
        self.train = self.tokenize(self.make_lines(rng, 60))
        self.valid = self.tokenize(self.make_lines(rng, 16))

    @staticmethod
    def make_lines(rng, n):
        return [
            f"{SUBJECTS[s]} {VERBS[v]} {OBJECTS[o]}"
            for s, v, o in rng.integers(0, len(SUBJECTS), (n, 3))
        ]

    def tokenize(self, lines):
        ids = []
        for line in lines:
            ids += [self.dictionary.add_word(w) for w in line.split() + ["<eos>"]]
        return torch.tensor(ids, dtype=torch.int64)


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.5, dropouti=0.2):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.lockdrop = nn.Dropout(dropouti)
        # project the top hidden state back to ninp so that the decoder can be tied
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout, batch_first=True, proj_size=ninp)
        self.drop = nn.Dropout(dropout)
        self.decoder = nn.Linear(ninp, ntoken)
        self.decoder.weight = self.encoder.weight
        self.ninp, self.nhid, self.nlayers = ninp, nhid, nlayers
        self.init_weights()

    def init_weights(self):
        initrange = 0.1
        self.encoder.weight.data.uniform_(-initrange, initrange)
        self.decoder.bias.data.fill_(0)

    def forward(self, input, hidden):
        emb = self.lockdrop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        return self.decoder(self.drop(output)), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters()).data
        return (
            weight.new(self.nlayers, bsz, self.ninp).zero_(),
            weight.new(self.nlayers, bsz, self.nhid).zero_(),
        )


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data[: nbatch * bsz].view(bsz, -1).contiguous()  # (bsz, nbatch), batch first


def get_batch(source, i, seq_len):
    seq_len = min(seq_len, source.size(1) - 1 - i)
    return source[:, i : i + seq_len], source[:, i + 1 : i + 1 + seq_len].reshape(-1)


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def evaluate(model, criterion, data_source, ntokens, bptt, batch_size):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(1) - 1, bptt):
            data, targets = get_batch(data_source, i, bptt)
            output, hidden = model(data, hidden)
            total_loss += data.size(1) * criterion(output.view(-1, ntokens), targets).item()
            hidden = repackage_hidden(hidden)
    return total_loss / data_source.size(1)


def train_epoch(model, criterion, optimizer, train_data, ntokens, rng, args):
    model.train()
    lr, losses = optimizer.param_groups[0]["lr"], []
    hidden = model.init_hidden(args["batch_size"])
    i = 0
    while i < train_data.size(1) - 2:
        bptt = args["bptt"] if rng.random() < 0.95 else args["bptt"] / 2
        seq_len = max(3, int(rng.normal(bptt, 2)))
        # longer sequences get a larger step, so that every token weighs the same
        optimizer.param_groups[0]["lr"] = lr * seq_len / args["bptt"]
        data, targets = get_batch(train_data, i, seq_len)
        hidden = repackage_hidden(hidden)
        optimizer.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output.view(-1, ntokens), targets)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args["clip"])
        optimizer.step()
        optimizer.param_groups[0]["lr"] = lr
        losses += [loss.item(), grad_norm.item()]
        i += seq_len
    return losses


def build():
    corpus = Corpus(np.random.default_rng(3))
    return RNNModel(len(corpus.dictionary), 12, 20, 2, dropout=0.0, dropouti=0.0)


def train(model, epochs=4):
    rng = np.random.default_rng(3)
    corpus = Corpus(rng)
    ntokens = len(corpus.dictionary)
    args = {"batch_size": 4, "bptt": 6, "clip": 0.25}
    train_data = batchify(corpus.train, args["batch_size"])
    val_data = batchify(corpus.valid, 2)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=10.0, weight_decay=1.2e-6)
    best_val_loss, losses = None, []
    for epoch in range(1, epochs + 1):
        losses += train_epoch(model, criterion, optimizer, train_data, ntokens, rng, args)
        val_loss = evaluate(model, criterion, val_data, ntokens, args["bptt"], 2)
        lr = optimizer.param_groups[0]["lr"]
        print(
            f"| end of epoch {epoch:3d} | lr {lr:6.3f} | valid loss {val_loss:5.2f} | "
            f"valid ppl {math.exp(val_loss):8.2f}"
        )
        losses.append(val_loss)
        if best_val_loss is None or val_loss < best_val_loss:
            best_val_loss = val_loss
        else:
            for g in optimizer.param_groups:
                g["lr"] /= 4.0
    model.eval()
    words, hidden = [], model.init_hidden(1)
    word = torch.tensor([[corpus.dictionary.word2idx["<eos>"]]])
    with torch.no_grad():
        for _ in range(10):
            output, hidden = model(word, hidden)
            word = output[:, -1].argmax(-1, keepdim=True)
            words.append(corpus.dictionary.idx2word[word.item()])
    print(" ".join(words))
    losses.append(optimizer.param_groups[0]["lr"])
    return losses


if __name__ == "__main__":
    train(build())
