"""A text classifier on PyTorch's Transformer tutorial's pieces: token embeddings scaled by
sqrt(d_model), a sinusoidal positional encoding kept as a registered buffer, a
``TransformerEncoder`` of ``batch_first`` layers given a ``src_key_padding_mask``, the mean
over the tokens that are not padding, cross entropy with label smoothing, AdamW with a linear
warmup written as a ``LambdaLR``, gradient clipping, and accuracy in eval mode (made-up
variable-length sentences whose class is their most frequent token group; dropout 0: its masks
differ between libraries)."""

import math

import numpy as np
import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

PAD = 0


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(1, max_len, d_model)
        pe[0, :, 0::2] = torch.sin(position * div_term)
        pe[0, :, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        """x: Tensor, shape ``[batch_size, seq_len, embedding_dim]``"""
        x = x + self.pe[:, : x.size(1)]
        return self.dropout(x)


class TransformerClassifier(nn.Module):
    def __init__(self, ntoken, nclass, d_model=16, nhead=2, d_hid=32, nlayers=2, dropout=0.0):
        super().__init__()
        self.model_type = "Transformer"
        self.embedding = nn.Embedding(ntoken, d_model, padding_idx=PAD)
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = nn.TransformerEncoderLayer(
            d_model, nhead, d_hid, dropout, batch_first=True
        )
        self.transformer_encoder = nn.TransformerEncoder(encoder_layers, nlayers)
        self.d_model = d_model
        self.classifier = nn.Linear(d_model, nclass)

    def forward(self, src, src_key_padding_mask):
        x = self.embedding(src) * math.sqrt(self.d_model)
        x = self.pos_encoder(x)
        x = self.transformer_encoder(x, src_key_padding_mask=src_key_padding_mask)
        keep = (~src_key_padding_mask).unsqueeze(-1).type_as(x)
        pooled = (x * keep).sum(dim=1) / keep.sum(dim=1)
        return self.classifier(pooled)


def make_batch(rng, batch_size, ntoken=24, nclass=4, max_len=10):
    """Sentences of 3 to max_len tokens, padded with PAD; the class is the group (token % nclass)
    most of the sentence's tokens belong to."""
    tokens = np.full((batch_size, max_len), PAD, dtype=np.int64)
    labels = np.zeros(batch_size, dtype=np.int64)
    for row in range(batch_size):
        n = rng.integers(3, max_len + 1)
        tokens[row, :n] = rng.integers(1, ntoken, n)
        labels[row] = np.bincount(tokens[row, :n] % nclass, minlength=nclass).argmax()
    src = torch.from_numpy(tokens)
    return src, src == PAD, torch.from_numpy(labels)


def build():
    return TransformerClassifier(ntoken=24, nclass=4)


def train(model, epochs=3, warmup=4):
    rng = np.random.default_rng(0)
    train_batches = [make_batch(rng, 8) for _ in range(4)]
    test_batch = make_batch(rng, 16)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    scheduler = LambdaLR(optimizer, lr_lambda=lambda step: min(1.0, (step + 1) / warmup))
    losses = []
    for epoch in range(1, epochs + 1):
        model.train()
        total_loss = 0.0
        for src, padding_mask, labels in train_batches:
            optimizer.zero_grad()
            output = model(src, padding_mask)
            loss = criterion(output, labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            scheduler.step()
            total_loss += loss.item()
            losses.append(loss.item())
        model.eval()
        src, padding_mask, labels = test_batch
        with torch.no_grad():
            output = model(src, padding_mask)
            accuracy = (output.argmax(1) == labels).float().mean().item()
            test_loss = criterion(output, labels).item()
        lr = scheduler.get_last_lr()[0]
        print(
            f"| epoch {epoch:3d} | lr {lr:02.4f} | loss {total_loss / len(train_batches):5.3f} | "
            f"test loss {test_loss:5.3f} | accuracy {accuracy:5.3f}"
        )
        losses += [test_loss, accuracy]
    return losses


if __name__ == "__main__":
    train(build())
