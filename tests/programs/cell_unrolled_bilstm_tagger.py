"""A sequence tagger and classifier from the pieces NLP course notebooks assemble by hand: an
``LSTMCell`` unrolled over the embedded tokens in a Python loop (its steps joined with
``torch.stack``), a two-layer bidirectional ``nn.LSTM`` over them packed with
``pack_padded_sequence(enforce_sorted=False)`` after ``pad_sequence``, a ``GRUCell`` decoder
unrolled over the LSTM's outputs for one tag per token (cross entropy ignoring the padding),
and the sequence's class from the last valid step picked with ``gather`` (variable-length
made-up sentences drawn with NumPy; the LSTM's inter-layer dropout set to 0 as its masks
differ between libraries, and evaluation in ``eval()`` mode)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

VOCAB, TAGS, CLASSES = 15, 3, 2


class Tagger(nn.Module):
    def __init__(self, dims=8, hidden=10):
        super().__init__()
        self.hidden = hidden
        self.embedding = nn.Embedding(VOCAB, dims, padding_idx=0)
        self.cell = nn.LSTMCell(dims, hidden)
        self.lstm = nn.LSTM(hidden, hidden, num_layers=2, bidirectional=True,
                            batch_first=True, dropout=0.0)  # fmt: skip
        self.decoder = nn.GRUCell(2 * hidden + TAGS, hidden)
        self.tag_out = nn.Linear(hidden, TAGS)
        self.class_out = nn.Linear(2 * hidden, CLASSES)

    def forward(self, tokens, lengths):
        embedded = self.embedding(tokens)
        h = c = torch.zeros(tokens.size(0), self.hidden)
        steps = []
        for t in range(tokens.size(1)):
            h, c = self.cell(embedded[:, t], (h, c))
            steps.append(h)
        packed = pack_padded_sequence(
            torch.stack(steps, dim=1), lengths, batch_first=True, enforce_sorted=False
        )
        outputs, _ = pad_packed_sequence(self.lstm(packed)[0], batch_first=True)
        # the decoder reads each step's features and its own previous tag probabilities
        state = torch.zeros(tokens.size(0), self.hidden)
        previous = torch.zeros(tokens.size(0), TAGS)
        tag_logits = []
        for t in range(outputs.size(1)):
            state = self.decoder(torch.cat([outputs[:, t], previous], dim=1), state)
            tag_logits.append(self.tag_out(state))
            previous = tag_logits[-1].softmax(dim=1)
        last = (lengths - 1).view(-1, 1, 1).expand(-1, 1, outputs.size(2))
        final = outputs.gather(1, last).squeeze(1)
        return torch.stack(tag_logits, dim=1), self.class_out(final)


def make_batch(rng, n):
    """Tokens 1..14; a token's tag is its residue mod 3; the class: is the first token > 7?"""
    sentences = [torch.from_numpy(rng.integers(1, VOCAB, rng.integers(2, 8))) for _ in range(n)]
    lengths = torch.tensor([len(s) for s in sentences])
    tokens = pad_sequence(sentences, batch_first=True)
    tags = pad_sequence([s % TAGS for s in sentences], batch_first=True, padding_value=-100)
    return tokens, lengths, tags, (tokens[:, 0] > 7).long()


def build():
    return Tagger()


def train(model, epochs=6):
    rng = np.random.default_rng(0)
    batches = [make_batch(rng, 6) for _ in range(3)]
    test = make_batch(rng, 8)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for epoch in range(epochs):
        model.train()
        for tokens, lengths, tags, labels in batches:
            tag_logits, class_logits = model(tokens, lengths)
            loss = F.cross_entropy(tag_logits.transpose(1, 2), tags, ignore_index=-100)
            loss = loss + F.cross_entropy(class_logits, labels)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            tag_logits, class_logits = model(test[0], test[1])
            tagged = (tag_logits.argmax(dim=2) == test[2]).sum().item() / test[1].sum().item()
        print(f"epoch {epoch}: loss {losses[-1]:.4f} tag accuracy {tagged:.3f}")
        losses.append(tagged)
    return losses


if __name__ == "__main__":
    train(build())
