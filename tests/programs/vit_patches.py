"""A tiny Vision Transformer on the 8x8 handwritten digits: 4x4 patches embedded by a strided
``Conv2d``, a learnable class token (``nn.Parameter`` of zeros, ``expand``-ed over the batch)
and learnable positional embeddings, a pre-norm ``TransformerEncoder`` with GELU, cross entropy
with label smoothing, AdamW whose biases, norms and embeddings sit in a group without weight
decay, a ``OneCycleLR`` schedule stepped per batch, gradient clipping, and accuracy in eval mode
under ``inference_mode``. The digits are the UCI optdigits file scratchgrad ships, read with
NumPy; dropout 0: its masks differ between libraries."""

from importlib import resources

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import OneCycleLR


def load_digits():
    with resources.files("scratchgrad.datasets").joinpath("digits.npz").open("rb") as file:
        data = np.load(file)
        images, labels = data["images"], data["labels"]
    images = torch.from_numpy(images[:, None].astype(np.float32) / 16.0)
    return images, torch.from_numpy(labels.astype(np.int64))


class PatchEmbedding(nn.Module):
    def __init__(self, image_size=8, patch_size=4, in_chans=1, embed_dim=32):
        super().__init__()
        self.num_patches = (image_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = self.proj(x)  # (B, D, H/P, W/P)
        return x.flatten(2).transpose(1, 2)  # (B, N, D)


class ViT(nn.Module):
    def __init__(self, num_classes=10, embed_dim=32, depth=2, num_heads=4, mlp_ratio=2):
        super().__init__()
        self.patch_embed = PatchEmbedding(embed_dim=embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim))
        layer = nn.TransformerEncoderLayer(
            embed_dim,
            num_heads,
            dim_feedforward=mlp_ratio * embed_dim,
            dropout=0.0,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)

    def forward(self, x):
        x = self.patch_embed(x)
        cls_tokens = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls_tokens, x), dim=1) + self.pos_embed
        x = self.encoder(x)
        return self.head(self.norm(x[:, 0]))


def param_groups(model, weight_decay):
    """Weight decay only on the weight matrices and conv kernels."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if param.ndim <= 1 or name in ("cls_token", "pos_embed"):
            no_decay.append(param)
        else:
            decay.append(param)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def build():
    return ViT()


def train(model, epochs=4, batch_size=32, max_lr=1e-2):
    images, labels = load_digits()
    train_x, train_y = images[:320], labels[:320]
    test_x, test_y = images[1000:1200], labels[1000:1200]
    steps_per_epoch = len(train_x) // batch_size
    optimizer = torch.optim.AdamW(param_groups(model, 0.05), lr=max_lr)
    scheduler = OneCycleLR(optimizer, max_lr=max_lr, epochs=epochs, steps_per_epoch=steps_per_epoch)
    order = np.random.default_rng(0)
    losses = []
    for epoch in range(epochs):
        model.train()
        perm = torch.from_numpy(order.permutation(len(train_x)))
        running = 0.0
        for i in range(steps_per_epoch):
            idx = perm[i * batch_size : (i + 1) * batch_size]
            logits = model(train_x[idx])
            loss = F.cross_entropy(logits, train_y[idx], label_smoothing=0.1)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            scheduler.step()
            running += loss.item()
            losses.append(loss.item())
        model.eval()
        with torch.inference_mode():
            logits = model(test_x)
            test_loss = F.cross_entropy(logits, test_y).item()
            accuracy = (logits.argmax(dim=-1) == test_y).float().mean().item()
        print(
            f"epoch {epoch + 1}: train loss {running / steps_per_epoch:.4f}, "
            f"grad norm {grad_norm.item():.3f}, lr {scheduler.get_last_lr()[0]:.2e}, "
            f"test loss {test_loss:.4f}, test acc {accuracy:.3f}"
        )
        losses += [grad_norm.item(), test_loss, accuracy]
    return losses


if __name__ == "__main__":
    train(build())
