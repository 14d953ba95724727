"""pytorch/examples' language_translation: ``nn.Transformer`` called positionally with a bool
source mask of zeros, a float target mask built with ``masked_fill(..., float('-inf'))``, and
bool key-padding masks for source, target and memory (``(src == pad).transpose(0, 1)``),
``CrossEntropyLoss(ignore_index=pad)``, Adam with ``betas=(0.9, 0.98), eps=1e-9``, weights set
with ``xavier_uniform_`` on every matrix, and greedy decoding through ``transformer.encoder``
and ``transformer.decoder`` that grows the output with
``torch.ones(1, 1).type_as(src.data).fill_(next_word)`` (made-up "sentences": the target is
the source reversed, padded to the batch's longest; dropout 0)."""

import math

import numpy as np
import torch
import torch.nn as nn

PAD, BOS, EOS, VOCAB = 0, 1, 2, 10


class PositionalEncoding(nn.Module):
    def __init__(self, emb_size, dropout, maxlen=32):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", pos_embedding.unsqueeze(-2))

    def forward(self, token_embedding):
        return self.dropout(token_embedding + self.pos_embedding[: token_embedding.size(0), :])


class Translator(nn.Module):
    def __init__(self, embed_size=16, num_heads=2, layers=1, dim_feedforward=24, dropout=0.0):
        super().__init__()
        self.src_embedding = nn.Embedding(VOCAB, embed_size)
        self.tgt_embedding = nn.Embedding(VOCAB, embed_size)
        self.pos_enc = PositionalEncoding(embed_size, dropout)
        self.transformer = nn.Transformer(
            d_model=embed_size,
            nhead=num_heads,
            num_encoder_layers=layers,
            num_decoder_layers=layers,
            dim_feedforward=dim_feedforward,
            dropout=dropout,
        )
        self.ff = nn.Linear(embed_size, VOCAB)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, mem_mask):
        src_emb = self.pos_enc(self.src_embedding(src))
        tgt_emb = self.pos_enc(self.tgt_embedding(trg))
        outs = self.transformer(
            src_emb, tgt_emb, src_mask, tgt_mask, None, src_padding_mask, tgt_padding_mask, mem_mask
        )
        return self.ff(outs)

    def encode(self, src, src_mask):
        return self.transformer.encoder(self.pos_enc(self.src_embedding(src)), src_mask)

    def decode(self, tgt, memory, tgt_mask):
        return self.transformer.decoder(self.pos_enc(self.tgt_embedding(tgt)), memory, tgt_mask)


def generate_square_subsequent_mask(size):
    mask = (torch.triu(torch.ones((size, size))) == 1).transpose(0, 1)
    return mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, 0.0)


def create_mask(src, tgt):
    tgt_mask = generate_square_subsequent_mask(tgt.shape[0])
    src_mask = torch.zeros((src.shape[0], src.shape[0])).type(torch.bool)
    src_padding_mask = (src == PAD).transpose(0, 1)
    tgt_padding_mask = (tgt == PAD).transpose(0, 1)
    return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask


def batch(rng, size=6):
    """(source, target) columns: random words 3..9, the target reversed between BOS and EOS."""
    lengths = rng.integers(2, 6, size)
    src = np.full((7, size), PAD)
    tgt = np.full((8, size), PAD)
    for j, n in enumerate(lengths):
        words = rng.integers(3, VOCAB, n)
        src[:n, j] = words
        tgt[: n + 2, j] = [BOS, *words[::-1], EOS]
    return torch.from_numpy(src), torch.from_numpy(tgt)


def greedy_decode(model, src, src_mask, max_len):
    memory = model.encode(src, src_mask)
    ys = torch.ones(1, 1).fill_(BOS).type(torch.long)
    for _ in range(max_len - 1):
        tgt_mask = generate_square_subsequent_mask(ys.size(0)).type(torch.bool)
        out = model.decode(ys, memory, tgt_mask).transpose(0, 1)
        prob = model.ff(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word.item())], dim=0)
        if next_word.item() == EOS:
            break
    return ys


def build():
    return Translator()


def train(model, steps=12):
    rng = np.random.default_rng(9)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD)
    optim = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98), eps=1e-9)
    losses = []
    model.train()
    for _ in range(steps):
        src, tgt = batch(rng)
        tgt_input = tgt[:-1, :]
        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)
        logits = model(
            src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, src_padding_mask
        )
        optim.zero_grad()
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt[1:, :].reshape(-1))
        loss.backward()
        optim.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        src = torch.tensor([[3], [4], [5]])
        src_mask = torch.zeros(3, 3).type(torch.bool)
        ys = greedy_decode(model, src, src_mask, max_len=src.shape[0] + 3)
    print("translation:", ys.flatten().tolist())
    return losses + ys.flatten().tolist()


if __name__ == "__main__":
    train(build())
