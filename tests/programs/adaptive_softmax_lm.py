"""A word-level GRU language model with an adaptive softmax (Grave et al., 2017), as fairseq-era
and PyTorch-example code uses ``nn.AdaptiveLogSoftmaxWithLoss``: frequent words in the head,
rare ones in two tail clusters with ``div_value``; the module's ``(output, loss)`` result in
training, ``log_prob`` for the full distribution and ``predict`` for the argmax in evaluation;
a Zipf-distributed synthetic corpus batched with ``unfold``, truncated BPTT with the hidden
state ``detach``ed, Adam with ``clip_grad_value_``."""

import math

import numpy as np
import torch
import torch.nn as nn

VOCAB = 60


class AdaptiveLM(nn.Module):
    def __init__(self, vocab=VOCAB, emb=16, hidden=32):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.rnn = nn.GRU(emb, hidden, num_layers=2, batch_first=True, dropout=0.0)
        self.asm = nn.AdaptiveLogSoftmaxWithLoss(hidden, vocab, cutoffs=[8, 24], div_value=2.0)

    def forward(self, tokens, targets, hidden=None):
        output, hidden = self.rnn(self.embedding(tokens), hidden)
        flat = output.reshape(-1, output.size(-1))
        result = self.asm(flat, targets.reshape(-1))
        return result.output, result.loss, hidden, flat


def zipf_corpus(rng, length):
    ranks = np.arange(1, VOCAB + 1)
    probs = 1.0 / ranks / np.sum(1.0 / ranks)
    words = rng.choice(VOCAB, size=length, p=probs)
    words[1::3] = (words[0::3][: len(words[1::3])] * 7 + 1) % VOCAB  # a learnable dependency
    return torch.from_numpy(words)


def build():
    return AdaptiveLM()


def train(model, epochs=2, bptt=8, batch=4):
    rng = np.random.default_rng(0)
    corpus = zipf_corpus(rng, batch * bptt * 4 + 1)
    inputs = corpus[:-1].view(batch, -1)
    targets = corpus[1:].view(batch, -1)
    windows = inputs.unfold(1, bptt, bptt), targets.unfold(1, bptt, bptt)  # (batch, n, bptt)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    losses = []
    for epoch in range(epochs):
        hidden = None
        for i in range(windows[0].shape[1]):
            x, y = windows[0][:, i], windows[1][:, i]
            _, loss, hidden, _ = model(x, y, hidden)
            hidden = hidden.detach()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_value_(model.parameters(), clip_value=0.5)
            optimizer.step()
            losses.append(loss.item())
        print(f"epoch {epoch}: loss {losses[-1]:.4f}, ppl {math.exp(losses[-1]):.2f}")
    model.eval()
    with torch.no_grad():
        x, y = windows[0][:, 0], windows[1][:, 0]
        target_log_probs, loss, _, flat = model(x, y)
        full = model.asm.log_prob(flat)
        gathered = full.gather(1, y.reshape(-1, 1)).squeeze(1)
        predictions = model.asm.predict(flat)
        accuracy = (predictions == y.reshape(-1)).float().mean().item()
    print(f"eval loss {loss.item():.4f}, accuracy {accuracy:.3f}")
    losses += [loss.item(), -gathered.mean().item(), full.exp().sum(1).mean().item(), accuracy]
    assert torch.allclose(gathered, target_log_probs, atol=1e-5)
    return losses


if __name__ == "__main__":
    train(build())
