"""A character-level text generator in the style of the char-rnn tutorials: an
``nn.Embedding`` whose weight is tied to the output layer (the tied head has its own bias),
a two-layer ``nn.GRU`` with dropout 0 carried across chunks (``hidden.detach()``), a
non-persistent ``register_buffer`` of the vocabulary's unigram log-frequencies added to the
logits, ``CrossEntropyLoss`` on ``view(-1, vocab)``, ``clip_grad_norm_``, the state dict saved
with ``torch.save`` to a ``BytesIO`` and read back by ``torch.load`` into a fresh model with
``load_state_dict(strict=False)`` (reporting the missing and unexpected keys), and text
generated at two temperatures: the next character drawn by the Gumbel-max trick on NumPy noise
(so both libraries draw the same) and once by ``torch.multinomial`` with a seeded generator."""

import io

import numpy as np
import torch
import torch.nn as nn

TEXT = (
    "the quick brown fox jumps over the lazy dog. a stitch in time saves nine. "
    "all that glitters is not gold. the early bird catches the worm. "
) * 3
CHARS = sorted(set(TEXT))
VOCAB = len(CHARS)
STOI = {c: i for i, c in enumerate(CHARS)}


class CharRNN(nn.Module):
    def __init__(self, vocab_size=VOCAB, hidden_size=32, n_layers=2):
        super().__init__()
        self.encoder = nn.Embedding(vocab_size, hidden_size)
        self.rnn = nn.GRU(hidden_size, hidden_size, n_layers, batch_first=True)
        self.decoder = nn.Linear(hidden_size, vocab_size)
        self.decoder.weight = self.encoder.weight  # weight tying
        counts = torch.bincount(torch.tensor([STOI[c] for c in TEXT]), minlength=vocab_size)
        self.register_buffer(
            "log_prior", torch.log(counts.float() / counts.sum()), persistent=False
        )

    def forward(self, x, hidden=None):
        output, hidden = self.rnn(self.encoder(x), hidden)
        return self.decoder(output) + self.log_prior, hidden


def build():
    return CharRNN()


def sample(model, rng, prime="the ", length=30, temperature=1.0):
    model.eval()
    with torch.no_grad():
        x = torch.tensor([[STOI[c] for c in prime]])
        logits, hidden = model(x)
        chars = []
        for _ in range(length):
            scaled = logits[0, -1] / temperature
            gumbel = torch.from_numpy(-np.log(-np.log(rng.uniform(size=VOCAB)))).float()
            next_id = int(torch.argmax(scaled + gumbel))
            chars.append(CHARS[next_id])
            logits, hidden = model(torch.tensor([[next_id]]), hidden)
    return prime + "".join(chars), torch.softmax(scaled, dim=0)


def train(model, epochs=3, chunk=20, batch_size=4):
    rng = np.random.default_rng(0)
    data = torch.tensor([STOI[c] for c in TEXT])
    n = (len(data) - 1) // (batch_size * chunk) * batch_size * chunk
    inputs = data[:n].view(batch_size, -1)
    targets = data[1 : n + 1].view(batch_size, -1)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for epoch in range(epochs):
        model.train()
        hidden = None
        for i in range(0, inputs.size(1), chunk):
            if hidden is not None:
                hidden = hidden.detach()
            optimizer.zero_grad()
            output, hidden = model(inputs[:, i : i + chunk], hidden)
            loss = criterion(output.reshape(-1, VOCAB), targets[:, i : i + chunk].reshape(-1))
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            losses.append(loss.item())
        print(f"epoch {epoch}: loss {np.mean(losses[-5:]):.4f}")

    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    restored = CharRNN()
    result = restored.load_state_dict(torch.load(buffer), strict=False)
    print("missing:", result.missing_keys, "unexpected:", result.unexpected_keys)
    same = all(torch.equal(a, b) for a, b in zip(model.parameters(), restored.parameters()))
    losses.append(float(same))
    for temperature in (0.5, 1.0):
        text, probs = sample(restored, rng, temperature=temperature)
        print(f"T={temperature}: {text!r}")
        losses += [probs.max().item(), len(set(text))]
    generator = torch.Generator().manual_seed(0)
    draws = torch.multinomial(probs, 5, replacement=True, generator=generator)
    print("multinomial draws:", draws.tolist())
    return losses


if __name__ == "__main__":
    train(build())
