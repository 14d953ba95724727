"""A ConvNeXt classifier as timm and the ConvNeXt repository write it: a patchify stem, blocks of
a 7x7 depthwise convolution, a channels-last LayerNorm reached through ``permute``, an inverted
bottleneck of Linear layers with GELU, a learned layer scale, and stochastic depth (drop path)
made from a uniform tensor, ``floor_`` and ``div``; a channels-first LayerNorm written by hand
for the downsampling layer, AdamW with a cosine schedule, and an eval pass where drop path is
the identity. The uniform numbers are drawn with NumPy (``torch.rand`` streams differ)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

uniform = np.random.default_rng(0)


def drop_path(x, drop_prob: float = 0.0, training: bool = False):
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)  # one draw per sample
    random_tensor = keep_prob + torch.from_numpy(uniform.random(shape).astype(np.float32))
    random_tensor = random_tensor.to(dtype=x.dtype, device=x.device)
    random_tensor.floor_()  # 1 with probability keep_prob, else 0
    return x.div(keep_prob) * random_tensor


class DropPath(nn.Module):
    def __init__(self, drop_prob=None):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training)


class LayerNorm(nn.Module):
    """LayerNorm over the channels of a channels_first (N, C, H, W) tensor."""

    def __init__(self, normalized_shape, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))
        self.eps = eps

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class Block(nn.Module):
    def __init__(self, dim, drop_path=0.0, layer_scale_init_value=1e-6):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(layer_scale_init_value * torch.ones(dim), requires_grad=True)
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.dwconv(x)
        x = x.permute(0, 2, 3, 1)  # (N, C, H, W) -> (N, H, W, C)
        x = self.norm(x)
        x = self.pwconv1(x)
        x = self.act(x)
        x = self.pwconv2(x)
        x = self.gamma * x
        x = x.permute(0, 3, 1, 2)
        return shortcut + self.drop_path(x)


class ConvNeXtTiny(nn.Module):
    def __init__(self, num_classes=4, dims=(8, 16), drop_path_rate=0.3):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, dims[0], 2, stride=2), LayerNorm(dims[0]))
        self.down = nn.Sequential(LayerNorm(dims[0]), nn.Conv2d(dims[0], dims[1], 2, stride=2))
        rates = [r.item() for r in torch.linspace(0, drop_path_rate, 4)]
        # a layer scale of 0.1 rather than 1e-6, so the blocks matter within a few steps
        self.stage1 = nn.Sequential(*[Block(dims[0], rates[i], 0.1) for i in range(2)])
        self.stage2 = nn.Sequential(*[Block(dims[1], rates[2 + i], 0.1) for i in range(2)])
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], num_classes)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.trunc_normal_(m.weight, std=0.02)
            nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.stage2(self.down(self.stage1(self.stem(x))))
        return self.head(self.norm(x.mean([-2, -1])))  # global average pooling, (N, C)


def build():
    return ConvNeXtTiny()


def train(model, epochs=3, batches=3):
    global uniform
    uniform = np.random.default_rng(0)
    rng = np.random.default_rng(1)
    images = torch.from_numpy(rng.standard_normal((batches, 8, 3, 16, 16)).astype(np.float32))
    labels = torch.from_numpy(rng.integers(0, 4, (batches, 8)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=4e-3, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * batches)
    losses = []
    for epoch in range(epochs):
        model.train()
        for x, y in zip(images, labels):
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            eval_loss = F.cross_entropy(model(images[0]), labels[0]).item()
        losses.append(eval_loss)
        print(f"epoch {epoch}: train loss {losses[-2]:.4f}, eval loss {eval_loss:.4f}")
    return losses


if __name__ == "__main__":
    train(build())
