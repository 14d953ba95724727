"""A tiny encoder-decoder Transformer as the "language translation with nn.Transformer"
tutorials write one, on a made-up task (the target is the source reversed, each token shifted
by one): ``nn.TransformerEncoder`` and ``nn.TransformerDecoder`` of pre-norm layers
(``norm_first=True``, ``batch_first=True``), ``generate_square_subsequent_mask``, key padding
masks for the source, the target and the memory, cross entropy ignoring the padding with label
smoothing, AdamW with no weight decay on biases, norms and embeddings (nanoGPT's
``configure_optimizers``), and a linear warmup then cosine decay (``SequentialLR`` of
``LinearLR`` and ``CosineAnnealingLR``). Greedy decoding gives the accuracy; a top-k sample
with a temperature is printed (the libraries' random streams differ, so only the losses and
the greedy accuracy are compared)."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, BOS, EOS, VOCAB, D_MODEL, MAX_LEN = 0, 1, 2, 12, 16, 10


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
    def __init__(self, layers=2, heads=4, ff=32):
        super().__init__()
        self.src_embed = nn.Embedding(VOCAB, D_MODEL, padding_idx=PAD)
        self.tgt_embed = nn.Embedding(VOCAB, D_MODEL, padding_idx=PAD)
        self.positions = PositionalEncoding(D_MODEL)
        enc_layer = nn.TransformerEncoderLayer(
            D_MODEL, heads, ff, dropout=0.0, batch_first=True, norm_first=True
        )
        dec_layer = nn.TransformerDecoderLayer(
            D_MODEL, heads, ff, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(
            enc_layer, layers, norm=nn.LayerNorm(D_MODEL), enable_nested_tensor=False
        )
        self.decoder = nn.TransformerDecoder(dec_layer, layers, norm=nn.LayerNorm(D_MODEL))
        self.generator = nn.Linear(D_MODEL, VOCAB)

    def encode(self, src):
        src_pad = src == PAD
        x = self.positions(self.src_embed(src) * math.sqrt(D_MODEL))
        return self.encoder(x, src_key_padding_mask=src_pad), src_pad

    def decode(self, tgt, memory, src_pad):
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        y = self.positions(self.tgt_embed(tgt) * math.sqrt(D_MODEL))
        out = self.decoder(
            y,
            memory,
            tgt_mask=causal,
            tgt_key_padding_mask=tgt == PAD,
            memory_key_padding_mask=src_pad,
            tgt_is_causal=True,
        )
        return self.generator(out)

    def forward(self, src, tgt):
        memory, src_pad = self.encode(src)
        return self.decode(tgt, memory, src_pad)


def make_batch(rng, n):
    """Sources of 3..7 tokens from 3..11, padded; targets BOS + reversed(src + 1 mod) + EOS."""
    src = np.full((n, MAX_LEN - 2), PAD, dtype=np.int64)
    tgt = np.full((n, MAX_LEN), PAD, dtype=np.int64)
    for row in range(n):
        length = rng.integers(3, 8)
        tokens = rng.integers(3, VOCAB, length)
        src[row, :length] = tokens
        shifted = (tokens[::-1] - 3 + 1) % (VOCAB - 3) + 3
        tgt[row, : length + 2] = np.concatenate([[BOS], shifted, [EOS]])
    return torch.from_numpy(src), torch.from_numpy(tgt)


def configure_optimizer(model, lr, weight_decay):
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embed" not in n]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2 or "embed" in n]
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.98), eps=1e-9)


@torch.no_grad()
def greedy_decode(model, src, steps=MAX_LEN - 1):
    memory, src_pad = model.encode(src)
    ys = torch.full((src.size(0), 1), BOS, dtype=torch.long)
    for _ in range(steps):
        logits = model.decode(ys, memory, src_pad)[:, -1]
        ys = torch.cat([ys, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return ys


@torch.no_grad()
def sample_top_k(model, src, k=3, temperature=0.8, steps=MAX_LEN - 1):
    memory, src_pad = model.encode(src)
    ys = torch.full((src.size(0), 1), BOS, dtype=torch.long)
    for _ in range(steps):
        logits = model.decode(ys, memory, src_pad)[:, -1] / temperature
        values, indices = torch.topk(logits, k, dim=-1)
        probs = F.softmax(values, dim=-1)
        choice = torch.multinomial(probs, num_samples=1)
        ys = torch.cat([ys, indices.gather(1, choice)], dim=1)
    return ys


def build():
    return Seq2SeqTransformer()


def train(model, steps=24, warmup=6):
    rng = np.random.default_rng(7)
    batches = [make_batch(rng, 16) for _ in range(4)]
    val_src, val_tgt = make_batch(rng, 16)
    optimizer = configure_optimizer(model, lr=3e-3, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.SequentialLR(
        optimizer,
        schedulers=[
            torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=warmup),
            torch.optim.lr_scheduler.CosineAnnealingLR(
                optimizer, T_max=steps - warmup, eta_min=1e-4
            ),
        ],
        milestones=[warmup],
    )
    losses = []
    for step in range(steps):
        model.train()
        src, tgt = batches[step % len(batches)]
        logits = model(src, tgt[:, :-1])
        loss = F.cross_entropy(
            logits.reshape(-1, VOCAB), tgt[:, 1:].reshape(-1), ignore_index=PAD, label_smoothing=0.1
        )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if step % 6 == 5:
            print(f"step {step}: loss {loss.item():.4f} lr {scheduler.get_last_lr()[0]:.5f}")
    model.eval()
    with torch.no_grad():
        val_loss = F.cross_entropy(
            model(val_src, val_tgt[:, :-1]).reshape(-1, VOCAB),
            val_tgt[:, 1:].reshape(-1),
            ignore_index=PAD,
        )
    decoded = greedy_decode(model, val_src)
    mask = val_tgt[:, 1:] != PAD
    accuracy = (decoded[:, 1:] == val_tgt[:, 1:])[mask].float().mean()
    losses += [val_loss.item(), accuracy.item()]
    print(f"validation loss {val_loss.item():.4f} token accuracy {accuracy.item():.3f}")
    print("sampled:", sample_top_k(model, val_src[:2]).tolist())
    return losses


if __name__ == "__main__":
    torch.manual_seed(0)
    train(build())
