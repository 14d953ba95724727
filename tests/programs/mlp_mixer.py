"""MLP-Mixer (Tolstikhin et al., 2021) as its PyTorch re-implementations write it without einops:
patches cut by a strided Conv2d and flattened with ``flatten(2).transpose(1, 2)``, token mixing
by an MLP applied to ``transpose(1, 2)`` of the normed tokens, channel mixing over the last dim,
pre-norm residuals, a head on the mean token; SGD with momentum, ``clip_grad_norm_`` and a
linear warmup via ``LambdaLR``, accuracy with ``argmax`` on a held-out batch."""

import numpy as np
import torch
from torch import nn


class MlpBlock(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, dim)

    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.fc1(x)))


class MixerBlock(nn.Module):
    def __init__(self, num_tokens, dim, tokens_hidden, channels_hidden):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.token_mixing = MlpBlock(num_tokens, tokens_hidden)
        self.norm2 = nn.LayerNorm(dim)
        self.channel_mixing = MlpBlock(dim, channels_hidden)

    def forward(self, x):  # x: (batch, tokens, channels)
        y = self.norm1(x).transpose(1, 2)  # mix along the tokens
        x = x + self.token_mixing(y).transpose(1, 2)
        return x + self.channel_mixing(self.norm2(x))


class MlpMixer(nn.Module):
    def __init__(self, num_classes=5, image_size=16, patch_size=4, dim=24, depth=2):
        super().__init__()
        num_tokens = (image_size // patch_size) ** 2
        self.stem = nn.Conv2d(3, dim, kernel_size=patch_size, stride=patch_size)
        self.blocks = nn.ModuleList(
            MixerBlock(num_tokens, dim, tokens_hidden=12, channels_hidden=48) for _ in range(depth)
        )
        self.pre_head_norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, images):
        x = self.stem(images).flatten(2).transpose(1, 2)  # (batch, tokens, dim)
        for block in self.blocks:
            x = block(x)
        x = self.pre_head_norm(x)
        return self.head(x.mean(dim=1))


def build():
    return MlpMixer()


def train(model, epochs=3, warmup=4):
    rng = np.random.default_rng(3)
    images = torch.tensor(rng.standard_normal((4, 16, 3, 16, 16)), dtype=torch.float32)
    labels = torch.tensor(rng.integers(0, 5, (4, 16)), dtype=torch.long)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    losses = []
    for epoch in range(epochs):
        model.train()
        for x, y in zip(images[:3], labels[:3]):
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            logits = model(images[3])
            accuracy = (logits.argmax(dim=-1) == labels[3]).float().mean()
            losses.append(criterion(logits, labels[3]).item())
        print(f"epoch {epoch}: loss {losses[-2]:.4f}, val {losses[-1]:.4f}, acc {accuracy:.2f}")
    return losses


if __name__ == "__main__":
    train(build())
