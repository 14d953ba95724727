"""A full ``nn.Transformer`` (encoder and decoder, ``batch_first``) taught to reverse sequences,
as PyTorch's translation tutorial builds one: token embeddings scaled by sqrt(d_model) plus a
sinusoidal positional encoding kept with ``register_buffer``, the causal target mask from
``generate_square_subsequent_mask``, source and target key padding masks (the source's also
as the memory's), teacher forcing on the shifted target, ``CrossEntropyLoss(ignore_index=PAD)``,
Adam, and greedy decoding under ``no_grad`` printing the tokens (variable-length made-up
sequences drawn with NumPy; dropout 0: its masks differ between libraries)."""

import math

import numpy as np
import torch
import torch.nn as nn

PAD, BOS, EOS, VOCAB, MAX_LEN = 0, 1, 2, 12, 7


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=16):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]


class Seq2SeqTransformer(nn.Module):
    def __init__(self, d_model=16, nhead=2, dim_feedforward=32):
        super().__init__()
        self.d_model = d_model
        self.src_tok_emb = nn.Embedding(VOCAB, d_model)
        self.tgt_tok_emb = nn.Embedding(VOCAB, d_model)
        self.positional_encoding = PositionalEncoding(d_model)
        self.transformer = nn.Transformer(
            d_model, nhead, num_encoder_layers=2, num_decoder_layers=1,
            dim_feedforward=dim_feedforward, dropout=0.0, batch_first=True,
        )  # fmt: skip
        self.generator = nn.Linear(d_model, VOCAB)

    def embed(self, embedding, tokens):
        return self.positional_encoding(embedding(tokens) * math.sqrt(self.d_model))

    def forward(self, src, tgt):
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        src_padding_mask, tgt_padding_mask = src == PAD, tgt == PAD
        out = self.transformer(
            self.embed(self.src_tok_emb, src), self.embed(self.tgt_tok_emb, tgt),
            tgt_mask=tgt_mask, src_key_padding_mask=src_padding_mask,
            tgt_key_padding_mask=tgt_padding_mask, memory_key_padding_mask=src_padding_mask,
        )  # fmt: skip
        return self.generator(out)


def make_batch(rng, n):
    """Sources of 2 to 5 tokens (3..11) then EOS, padded; targets BOS, the tokens reversed, EOS."""
    src = np.full((n, MAX_LEN - 1), PAD, dtype=np.int64)
    tgt = np.full((n, MAX_LEN), PAD, dtype=np.int64)
    for row in range(n):
        words = rng.integers(3, VOCAB, rng.integers(2, 6))
        src[row, : len(words) + 1] = [*words, EOS]
        tgt[row, : len(words) + 2] = [BOS, *words[::-1], EOS]
    return torch.from_numpy(src), torch.from_numpy(tgt)


def greedy_decode(model, src):
    with torch.no_grad():
        ys = torch.full((src.size(0), 1), BOS, dtype=torch.long)
        for _ in range(MAX_LEN - 1):
            next_word = model(src, ys)[:, -1].argmax(dim=-1)
            ys = torch.cat([ys, next_word.unsqueeze(1)], dim=1)
    return ys


def build():
    return Seq2SeqTransformer()


def train(model, epochs=10):
    rng = np.random.default_rng(0)
    batches = [make_batch(rng, 8) for _ in range(3)]
    test_src, test_tgt = make_batch(rng, 4)
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.003, betas=(0.9, 0.98))
    losses = []
    for epoch in range(epochs):
        model.train()
        for src, tgt in batches:
            tgt_input, tgt_out = tgt[:, :-1], tgt[:, 1:]  # teacher forcing
            logits = model(src, tgt_input)
            optimizer.zero_grad()
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        model.eval()
        decoded = greedy_decode(model, test_src)
        print(f"epoch {epoch}: loss {losses[-1]:.4f} decoded {decoded[0].tolist()}")
    print("target", test_tgt[0].tolist())
    return losses


if __name__ == "__main__":
    train(build())
