"""An LSTM autoencoder for variable-length time series, used for anomaly detection as the
blog posts write it: the padded batch goes through ``pack_padded_sequence`` (unsorted, so
``enforce_sorted=False``), the encoder's last hidden state is the code, the decoder LSTM gets
the code repeated at every step and its output is unpacked with ``pad_packed_sequence``
(``total_length`` keeps the padded width), the loss is an MSE masked to the real steps,
``ReduceLROnPlateau`` watches the validation loss, and the anomaly threshold is a
``torch.quantile`` of the normal series' errors, applied under ``torch.no_grad()``."""

import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

N_FEATURES, EMBEDDING_DIM = 2, 8


class Encoder(nn.Module):
    def __init__(self, n_features, embedding_dim):
        super().__init__()
        self.rnn = nn.LSTM(n_features, embedding_dim, num_layers=1, batch_first=True)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, (hidden_n, _) = self.rnn(packed)
        return hidden_n[-1]  # (batch, embedding_dim), in the batch's own order


class Decoder(nn.Module):
    def __init__(self, embedding_dim, n_features):
        super().__init__()
        self.rnn = nn.LSTM(embedding_dim, 2 * embedding_dim, batch_first=True)
        self.output_layer = nn.Linear(2 * embedding_dim, n_features)

    def forward(self, code, lengths, total_length):
        x = code.unsqueeze(1).repeat(1, total_length, 1)
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=total_length)
        return self.output_layer(out)


class RecurrentAutoencoder(nn.Module):
    def __init__(self, n_features=N_FEATURES, embedding_dim=EMBEDDING_DIM):
        super().__init__()
        self.encoder = Encoder(n_features, embedding_dim)
        self.decoder = Decoder(embedding_dim, n_features)

    def forward(self, x, lengths):
        return self.decoder(self.encoder(x, lengths), lengths, x.size(1))


def build():
    return RecurrentAutoencoder()


def make_series(rng, n, anomalous=False):
    series = []
    for _ in range(n):
        length = int(rng.integers(6, 13))
        t = np.arange(length) / 3 + rng.uniform(0, 6)
        s = np.stack([np.sin(t), np.cos(2 * t)], 1) + 0.05 * rng.standard_normal((length, 2))
        if anomalous:
            s[length // 2 :] += 1.5
        series.append(torch.tensor(s, dtype=torch.float32))
    return series


def batches(series, batch_size):
    for i in range(0, len(series), batch_size):
        chunk = series[i : i + batch_size]
        lengths = torch.tensor([len(s) for s in chunk])
        yield pad_sequence(chunk, batch_first=True), lengths


def masked_errors(model, x, lengths):
    """Mean squared error of each series over its real steps."""
    mask = (torch.arange(x.size(1))[None, :] < lengths[:, None]).unsqueeze(-1)
    sq = (model(x, lengths) - x).pow(2) * mask
    return sq.sum(dim=(1, 2)) / (lengths * x.size(2))


def train(model, n_epochs=4):
    rng = np.random.default_rng(0)
    train_set, val_set = make_series(rng, 24), make_series(rng, 8)
    anomalies = make_series(rng, 8, anomalous=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
        optimizer, mode="min", patience=0, threshold=0.05
    )
    losses = []
    for epoch in range(1, n_epochs + 1):
        model.train()
        train_losses = []
        for seq, lengths in batches(train_set, 8):
            optimizer.zero_grad()
            loss = masked_errors(model, seq, lengths).mean()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            train_losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            val_loss = masked_errors(model, *next(batches(val_set, 8))).mean().item()
        scheduler.step(val_loss)
        print(
            f"Epoch {epoch}: train loss {np.mean(train_losses):.4f} val loss {val_loss:.4f}"
            f" lr {scheduler.get_last_lr()[0]:.4g}"
        )
        losses += train_losses + [val_loss, scheduler.get_last_lr()[0]]
    with torch.no_grad():
        normal_errors = masked_errors(model, *next(batches(val_set, 8)))
        threshold = torch.quantile(normal_errors, 0.9)
        anomaly_errors = masked_errors(model, *next(batches(anomalies, 8)))
        detected = (anomaly_errors > threshold).sum().item()
    print(f"threshold {threshold.item():.4f}: {detected}/{len(anomalies)} anomalies detected")
    return losses + [threshold.item(), anomaly_errors.mean().item(), detected]


if __name__ == "__main__":
    train(build())
