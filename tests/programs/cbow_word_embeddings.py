"""Continuous bag of words, the exercise of PyTorch's "Word Embeddings: Encoding Lexical
Semantics" tutorial: each word predicted from the mean of the embeddings of the two words on
either side, a full softmax over the vocabulary by ``log_softmax`` and ``NLLLoss``, the
embedding's gradient divided by each word's frequency in the batch
(``scale_grad_by_freq=True``, as older NLP code uses it against frequent words), plain SGD
with word2vec's linear decay of the learning rate (``LinearLR`` to 1e-3 of it), and the most
similar words by ``F.cosine_similarity`` with ``topk``."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

CONTEXT = 2
TEXT = (
    "the cat sat on the mat while the dog lay on the rug and the bird sang in the tree "
    "a cat and a dog play in the garden while a bird sat on the tree near the mat"
)
WORDS = TEXT.split()


class CBOW(nn.Module):
    def __init__(self, vocab_size, dims=16):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, dims, scale_grad_by_freq=True)
        self.linear1 = nn.Linear(dims, 32)
        self.linear2 = nn.Linear(32, vocab_size)

    def forward(self, context):  # context: (batch, 2 * CONTEXT)
        mean = self.embeddings(context).mean(dim=1)
        return F.log_softmax(self.linear2(F.relu(self.linear1(mean))), dim=-1)


def vocabulary():
    return {word: i for i, word in enumerate(sorted(set(WORDS)))}


def build():
    return CBOW(len(vocabulary()))


def make_data(rng, sentences=30):
    """The text, then sentences sampled from its windows (NumPy's draws)."""
    index = vocabulary()
    ids = np.array([index[w] for w in WORDS])
    windows = [
        (np.concatenate([ids[i - CONTEXT : i], ids[i + 1 : i + CONTEXT + 1]]), ids[i])
        for i in range(CONTEXT, len(ids) - CONTEXT)
    ]
    picks = rng.integers(0, len(windows), sentences * 4)
    context = torch.from_numpy(np.stack([windows[p][0] for p in picks]))
    target = torch.from_numpy(np.array([windows[p][1] for p in picks]))
    return context, target


def train(model, epochs=5, batch_size=24):
    context, target = make_data(np.random.default_rng(2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    steps = epochs * (len(target) // batch_size)
    scheduler = torch.optim.lr_scheduler.LinearLR(
        optimizer, start_factor=1.0, end_factor=1e-3, total_iters=steps
    )
    loss_function = nn.NLLLoss()
    losses = []
    for epoch in range(epochs):
        total = 0.0
        for start in range(0, len(target) - batch_size + 1, batch_size):
            batch = slice(start, start + batch_size)
            model.zero_grad()
            loss = loss_function(model(context[batch]), target[batch])
            loss.backward()
            optimizer.step()
            scheduler.step()
            total += loss.item()
            losses.append(loss.item())
        print(f"epoch {epoch}: total loss {total:.4f} lr {scheduler.get_last_lr()[0]:.4f}")
    index = vocabulary()
    words = sorted(index, key=index.get)
    with torch.no_grad():
        vectors = model.embeddings.weight
        similarity = F.cosine_similarity(vectors[index["cat"]].unsqueeze(0), vectors, dim=1)
        scores, nearest = similarity.topk(4)
    losses += scores.tolist()
    print("closest to 'cat':", [words[i] for i in nearest.tolist()])
    return losses


if __name__ == "__main__":
    torch.manual_seed(0)
    train(build())
