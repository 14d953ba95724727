"""Word2vec's skip-gram with negative sampling, as the small PyTorch reimplementations write
it: (center, context) pairs from a sliding window over a made-up corpus, negatives drawn from
the unigram distribution raised to the 3/4 power, two ``nn.Embedding`` tables (input and
output vectors), the scores by ``torch.bmm``, the loss from ``F.logsigmoid`` of the positive
and negated negative scores, ``optim.Adagrad``, and nearest neighbours by cosine similarity
with ``topk``. The libraries' random streams differ, so the negatives are drawn once with NumPy
(``torch.multinomial`` with a seeded ``torch.Generator`` draws the printed extra samples)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, DIM, WINDOW, NEGATIVES = 24, 10, 2, 5


def make_corpus(rng, length=600):
    """Tokens in four topics of six words: each sentence stays in one topic."""
    tokens = []
    while len(tokens) < length:
        topic = rng.integers(0, 4)
        tokens.extend(6 * topic + rng.integers(0, 6, rng.integers(4, 9)))
    return np.array(tokens[:length])


def skipgram_pairs(tokens, window):
    centers, contexts = [], []
    for i, center in enumerate(tokens):
        for j in range(max(0, i - window), min(len(tokens), i + window + 1)):
            if j != i:
                centers.append(center)
                contexts.append(tokens[j])
    return np.array(centers), np.array(contexts)


class SkipGramNS(nn.Module):
    def __init__(self):
        super().__init__()
        self.in_embed = nn.Embedding(VOCAB, DIM)
        self.out_embed = nn.Embedding(VOCAB, DIM)
        bound = 0.5 / DIM
        nn.init.uniform_(self.in_embed.weight, -bound, bound)
        nn.init.uniform_(self.out_embed.weight, -bound, bound)

    def forward(self, center, context, negatives):
        v = self.in_embed(center).unsqueeze(2)  # (B, D, 1)
        u_pos = self.out_embed(context).unsqueeze(1)  # (B, 1, D)
        u_neg = self.out_embed(negatives)  # (B, K, D)
        pos = F.logsigmoid(torch.bmm(u_pos, v).squeeze(2)).squeeze(1)
        neg = F.logsigmoid(-torch.bmm(u_neg, v).squeeze(2)).sum(dim=1)
        return -(pos + neg).mean()


def build():
    return SkipGramNS()


def train(model, epochs=4, batch_size=256):
    rng = np.random.default_rng(11)
    tokens = make_corpus(rng)
    centers, contexts = skipgram_pairs(tokens, WINDOW)
    counts = np.bincount(tokens, minlength=VOCAB).astype(np.float64)
    noise = counts**0.75 / (counts**0.75).sum()
    negatives = rng.choice(VOCAB, size=(len(centers), NEGATIVES), p=noise)
    order = rng.permutation(len(centers))
    centers, contexts = torch.from_numpy(centers[order]), torch.from_numpy(contexts[order])
    negatives = torch.from_numpy(negatives[order])
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.5, lr_decay=1e-3)
    losses = []
    for epoch in range(epochs):
        total = 0.0
        for start in range(0, len(centers), batch_size):
            batch = slice(start, start + batch_size)
            loss = model(centers[batch], contexts[batch], negatives[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            total += loss.item()
        print(f"epoch {epoch}: mean loss {total / -(-len(centers) // batch_size):.4f}")
    with torch.no_grad():
        vectors = F.normalize(model.in_embed.weight, dim=1)
        similarity = vectors @ vectors.T
        similarity.fill_diagonal_(-1.0)
        scores, neighbours = similarity.topk(3, dim=1)
        same_topic = (neighbours // 6 == torch.arange(VOCAB).unsqueeze(1) // 6).float().mean()
    losses.append(same_topic.item())
    print(f"neighbours in the same topic: {same_topic.item():.3f}")
    generator = torch.Generator().manual_seed(5)
    draws = torch.multinomial(torch.from_numpy(noise), 8, replacement=True, generator=generator)
    print("noise samples:", draws.tolist())
    return losses


if __name__ == "__main__":
    torch.manual_seed(0)
    train(build())
