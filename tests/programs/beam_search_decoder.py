"""A GRU encoder-decoder trained with teacher forcing to reverse digit strings, then decoded
greedily and by beam search as the tutorials write it: ``log_softmax`` scores added to each
beam's running score, ``topk`` over the flattened beam x vocabulary scores, the beam and the
token recovered by ``torch.div(..., rounding_mode="floor")`` and ``%``, hidden states reordered
by ``index_select``, greedy scores picked by ``gather``, finished beams kept by ``masked_fill``
(only EOS may follow EOS, at no cost), length normalisation and a final ``sort``."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, SOS, EOS = 0, 1, 2
VOCAB = 13  # PAD, SOS, EOS and the digits 0..9 as 3..12
MAX_LEN = 6


class Seq2Seq(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, 16, padding_idx=PAD)
        self.encoder = nn.GRU(16, hidden, batch_first=True)
        self.decoder = nn.GRU(16, hidden, batch_first=True)
        self.out = nn.Linear(hidden, VOCAB)

    def encode(self, src):
        _, hidden = self.encoder(self.embedding(src))
        return hidden

    def step(self, tokens, hidden):
        """One decoder step: tokens (batch,) -> log-probabilities (batch, VOCAB), new hidden."""
        output, hidden = self.decoder(self.embedding(tokens.unsqueeze(1)), hidden)
        return F.log_softmax(self.out(output.squeeze(1)), dim=-1), hidden

    def forward(self, src, tgt_in):
        output, _ = self.decoder(self.embedding(tgt_in), self.encode(src))
        return self.out(output)


def make_batch(rng, n):
    """Strings of 2..4 digits (padded); targets are the strings reversed, then EOS."""
    src = np.full((n, MAX_LEN - 1), PAD, dtype=np.int64)
    tgt = np.full((n, MAX_LEN), PAD, dtype=np.int64)
    for row in range(n):
        digits = rng.integers(3, VOCAB, rng.integers(2, MAX_LEN - 1))
        src[row, : len(digits)] = digits
        tgt[row, : len(digits) + 1] = [*digits[::-1], EOS]
    return torch.from_numpy(src), torch.from_numpy(tgt)


@torch.no_grad()
def greedy_decode(model, src):
    hidden = model.encode(src)
    tokens = torch.full((src.size(0),), SOS, dtype=torch.long)
    outputs, score = [], torch.zeros(src.size(0))
    for _ in range(MAX_LEN):
        finished = tokens == EOS
        log_probs, hidden = model.step(tokens, hidden)
        tokens = log_probs.argmax(dim=-1)
        chosen = log_probs.gather(1, tokens.unsqueeze(1)).squeeze(1)
        score = score + chosen.masked_fill(finished, 0.0)
        tokens = tokens.masked_fill(finished, EOS)
        outputs.append(tokens)
    return torch.stack(outputs, dim=1), score


@torch.no_grad()
def beam_search(model, src, beam_size=3, alpha=0.7):
    """One source sequence (1, length) -> the beams' token sequences and normalised scores,
    best first."""
    hidden = model.encode(src).repeat(1, beam_size, 1)
    tokens = torch.full((beam_size, 1), SOS, dtype=torch.long)
    scores = torch.zeros(beam_size)
    scores[1:] = float("-inf")  # all beams start equal: keep one of them at first
    lengths = torch.zeros(beam_size)
    for _ in range(MAX_LEN):
        finished = tokens[:, -1] == EOS
        log_probs, hidden = model.step(tokens[:, -1], hidden)
        # a finished beam can only be followed by EOS, at no cost
        log_probs = log_probs.masked_fill(finished.unsqueeze(1), float("-inf"))
        log_probs[:, EOS] = log_probs[:, EOS].masked_fill(finished, 0.0)
        candidates = (scores.unsqueeze(1) + log_probs).view(-1)
        scores, flat = candidates.topk(beam_size)
        beam = torch.div(flat, VOCAB, rounding_mode="floor")
        token = flat % VOCAB
        lengths = lengths.index_select(0, beam) + (~finished).index_select(0, beam).float()
        tokens = torch.cat([tokens.index_select(0, beam), token.unsqueeze(1)], dim=1)
        hidden = hidden.index_select(1, beam)
        if (token == EOS).all():
            break
    normalised = scores / lengths.pow(alpha)
    normalised, order = normalised.sort(descending=True)
    return tokens[order, 1:], normalised


def sequence_accuracy(predicted, tgt):
    """Whole sequences right, up to and including EOS (what comes after does not count)."""
    width = min(predicted.size(1), tgt.size(1))
    predicted = predicted[:, :width].masked_fill(tgt[:, :width] == PAD, PAD)
    return (predicted == tgt[:, :width]).all(dim=1).float().mean().item()


def to_text(tokens):
    digits = []
    for token in tokens.tolist():
        if token == EOS:
            break
        digits.append(str(token - 3))
    return "".join(digits)


def build():
    return Seq2Seq()


def train(model, epochs=10):
    rng = np.random.default_rng(0)
    batches = [make_batch(rng, 32) for _ in range(8)]
    test_src, test_tgt = make_batch(rng, 6)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    criterion = nn.CrossEntropyLoss(ignore_index=PAD)
    losses = []
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for src, tgt in batches:
            # teacher forcing: the decoder reads SOS and the target shifted right
            tgt_in = torch.cat([torch.full((tgt.size(0), 1), SOS), tgt[:, :-1]], dim=1)
            logits = model(src, tgt_in)
            loss = criterion(logits.reshape(-1, VOCAB), tgt.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            total += loss.item()
        model.eval()
        decoded, score = greedy_decode(model, test_src)
        greedy = sequence_accuracy(decoded, test_tgt)
        print(
            f"epoch {epoch}: loss {total / len(batches):.4f} greedy accuracy {greedy:.3f} "
            f"log-probability {score.mean().item():.4f}"
        )
        losses += [total / len(batches), greedy, score.mean().item()]

    best = []
    for i in range(test_src.size(0)):
        beams, normalised = beam_search(model, test_src[i : i + 1])
        best.append(beams[0])
        print(
            f"{to_text(test_src[i][test_src[i] != PAD])} -> "
            + ", ".join(f"{to_text(b)} ({s:.3f})" for b, s in zip(beams, normalised.tolist()))
        )
        losses += normalised.tolist()
    width = max(len(b) for b in best)
    padded = torch.stack([F.pad(b, (0, width - len(b)), value=EOS) for b in best])
    beam = sequence_accuracy(padded, test_tgt)
    print(f"beam search accuracy {beam:.3f}")
    losses.append(beam)
    return losses


if __name__ == "__main__":
    train(build())
