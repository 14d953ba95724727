"""A tiny BERT-style masked language model: made-up sentences of digits that count up by a fixed
step modulo 10 (``3 5 7 9 1 ...``), of 5 to 12 tokens, padded. Token and learned positional
embeddings feed a ``batch_first`` ``TransformerEncoder`` given a ``src_key_padding_mask``; a
quarter of the real tokens is chosen for prediction and, as in BERT, 80% of those become
``[MASK]``, 10% a random digit and 10% stay (all by ``torch.where``); the labels are -100
elsewhere, so ``F.cross_entropy(..., ignore_index=-100)`` scores the chosen tokens only; the
accuracy on them is reported.

The masks are drawn with NumPy rather than ``torch.rand(..., generator=g)``: scratchgrad's
generators give another stream than PyTorch's, and both libraries must see the same masks.
Dropout is 0 for the same reason."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, MASK, FIRST_DIGIT, DIGITS = 0, 1, 2, 10
VOCAB, MAX_LEN, MASK_PROB = FIRST_DIGIT + DIGITS, 12, 0.25


def make_sentences(rng, count):
    """Token ids of shape (count, MAX_LEN) and the padding mask (True where PAD)."""
    tokens = np.full((count, MAX_LEN), PAD, dtype=np.int64)
    for row in range(count):
        length, start, step = rng.integers(5, MAX_LEN + 1), rng.integers(DIGITS), rng.integers(1, 4)
        tokens[row, :length] = FIRST_DIGIT + (start + step * np.arange(length)) % DIGITS
    tokens = torch.from_numpy(tokens)
    return tokens, tokens == PAD


def mask_tokens(rng, tokens, padding_mask):
    """BERT's corruption: returns the model's input and the labels (-100 where not chosen)."""
    draws = torch.from_numpy(rng.random((3, *tokens.shape)).astype(np.float32))
    chosen = (draws[0] < MASK_PROB) & ~padding_mask
    labels = torch.where(chosen, tokens, torch.full_like(tokens, -100))
    inputs = torch.where(chosen & (draws[1] < 0.8), torch.full_like(tokens, MASK), tokens)
    random_digits = torch.from_numpy(rng.integers(FIRST_DIGIT, VOCAB, tokens.shape))
    swap = chosen & (draws[1] >= 0.8) & (draws[2] < 0.5)
    return torch.where(swap, random_digits, inputs), labels


class MaskedLM(nn.Module):
    def __init__(self, d_model=32, nhead=4, d_hid=64, nlayers=2):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, d_model, padding_idx=PAD)
        self.positions = nn.Embedding(MAX_LEN, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, nlayers)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, VOCAB)

    def forward(self, src, src_key_padding_mask):
        positions = torch.arange(src.size(1)).unsqueeze(0)
        x = self.tokens(src) + self.positions(positions)
        x = self.encoder(x, src_key_padding_mask=src_key_padding_mask)
        return self.head(self.norm(x))


def build():
    return MaskedLM()


def masked_accuracy(logits, labels):
    scored = labels != -100
    return (logits.argmax(-1)[scored] == labels[scored]).float().mean().item()


def train(model, steps=90, batch_size=64):
    rng = np.random.default_rng(0)
    test_tokens, test_padding = make_sentences(rng, 128)
    test_inputs, test_labels = mask_tokens(rng, test_tokens, test_padding)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    losses = []
    for step in range(1, steps + 1):
        model.train()
        tokens, padding_mask = make_sentences(rng, batch_size)
        inputs, labels = mask_tokens(rng, tokens, padding_mask)
        logits = model(inputs, padding_mask)
        loss = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1), ignore_index=-100)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        if step % 30 == 0:
            model.eval()
            with torch.no_grad():
                logits = model(test_inputs, test_padding)
                test_loss = F.cross_entropy(logits.transpose(1, 2), test_labels).item()
                accuracy = masked_accuracy(logits, test_labels)
            print(
                f"step {step} loss {loss.item():.4f} test loss {test_loss:.4f} acc {accuracy:.3f}"
            )
            losses += [test_loss, accuracy]
    assert accuracy >= 0.6, accuracy
    return losses


if __name__ == "__main__":
    torch.manual_seed(0)
    train(build())
