"""A two-stage Swin Transformer after microsoft/Swin-Transformer's ``swin_transformer.py``:
patch embedding by a strided ``Conv2d`` flattened to tokens, ``window_partition`` and
``window_reverse`` as ``view``/``permute``/``contiguous`` chains, window attention with a
learned relative-position bias table indexed by a buffer built from ``torch.meshgrid`` and
``torch.flatten``, shifted windows by ``torch.roll`` with the attention mask made from a
slice-labelled image and ``masked_fill`` of -100, ``PatchMerging`` gathering the four
``x[:, 0::2, 1::2]`` quarters with ``torch.cat``, ``DropPath`` as ``nn.Identity`` (its rate 0),
``trunc_normal_`` and ``constant_`` initialisation applied per module, an ``AdamW`` whose
parameter groups leave out the norms, biases and the bias table (the repository's
``no_weight_decay_keywords``), a linear warm-up and cosine schedule by ``LambdaLR``, and
gradient clipping (made-up 16 x 16 images of stripes, horizontal or vertical)."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def window_partition(x, window_size):
    B, H, W, C = x.shape
    x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)


def window_reverse(windows, window_size, H, W):
    B = int(windows.shape[0] / (H * W / window_size / window_size))
    x = windows.view(B, H // window_size, W // window_size, window_size, window_size, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)


class WindowAttention(nn.Module):
    def __init__(self, dim, window_size, num_heads):
        super().__init__()
        self.dim, self.window_size, self.num_heads = dim, window_size, num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.relative_position_bias_table = nn.Parameter(
            torch.zeros((2 * window_size - 1) * (2 * window_size - 1), num_heads)
        )
        coords = torch.stack(torch.meshgrid([torch.arange(window_size)] * 2, indexing="ij"))
        coords_flatten = torch.flatten(coords, 1)  # 2, Wh*Ww
        relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
        relative_coords = relative_coords.permute(1, 2, 0).contiguous()
        relative_coords[:, :, 0] += window_size - 1
        relative_coords[:, :, 1] += window_size - 1
        relative_coords[:, :, 0] *= 2 * window_size - 1
        self.register_buffer("relative_position_index", relative_coords.sum(-1))
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x, mask=None):
        B_, N, C = x.shape
        qkv = self.qkv(x).reshape(B_, N, 3, self.num_heads, C // self.num_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)]
        bias = bias.view(N, N, -1).permute(2, 0, 1).contiguous()
        attn = attn + bias.unsqueeze(0)
        if mask is not None:
            nW = mask.shape[0]
            attn = attn.view(B_ // nW, nW, self.num_heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.num_heads, N, N)
        attn = self.softmax(attn)
        x = (attn @ v).transpose(1, 2).reshape(B_, N, C)
        return self.proj(x)


class SwinTransformerBlock(nn.Module):
    def __init__(self, dim, input_resolution, num_heads, window_size=4, shift_size=0):
        super().__init__()
        self.dim, self.input_resolution = dim, input_resolution
        self.window_size, self.shift_size = window_size, shift_size
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, window_size, num_heads)
        self.drop_path = nn.Identity()
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        if self.shift_size > 0:
            H, W = input_resolution
            img_mask = torch.zeros((1, H, W, 1))
            cuts = (
                slice(0, -window_size),
                slice(-window_size, -shift_size),
                slice(-shift_size, None),
            )
            cnt = 0
            for h in cuts:
                for w in cuts:
                    img_mask[:, h, w, :] = cnt
                    cnt += 1
            mask_windows = window_partition(img_mask, window_size).view(-1, window_size**2)
            attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
            attn_mask = attn_mask.masked_fill(attn_mask != 0, -100.0)
            attn_mask = attn_mask.masked_fill(attn_mask == 0, 0.0)
        else:
            attn_mask = None
        self.register_buffer("attn_mask", attn_mask)

    def forward(self, x):
        H, W = self.input_resolution
        B, L, C = x.shape
        shortcut = x
        x = self.norm1(x).view(B, H, W, C)
        if self.shift_size > 0:
            x = torch.roll(x, shifts=(-self.shift_size, -self.shift_size), dims=(1, 2))
        x_windows = window_partition(x, self.window_size).view(-1, self.window_size**2, C)
        attn_windows = self.attn(x_windows, mask=self.attn_mask)
        attn_windows = attn_windows.view(-1, self.window_size, self.window_size, C)
        x = window_reverse(attn_windows, self.window_size, H, W)
        if self.shift_size > 0:
            x = torch.roll(x, shifts=(self.shift_size, self.shift_size), dims=(1, 2))
        x = shortcut + self.drop_path(x.view(B, H * W, C))
        return x + self.drop_path(self.mlp(self.norm2(x)))


class PatchMerging(nn.Module):
    def __init__(self, input_resolution, dim):
        super().__init__()
        self.input_resolution = input_resolution
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = nn.LayerNorm(4 * dim)

    def forward(self, x):
        H, W = self.input_resolution
        B, L, C = x.shape
        x = x.view(B, H, W, C)
        x0, x1 = x[:, 0::2, 0::2, :], x[:, 1::2, 0::2, :]
        x2, x3 = x[:, 0::2, 1::2, :], x[:, 1::2, 1::2, :]
        x = torch.cat([x0, x1, x2, x3], -1).view(B, -1, 4 * C)
        return self.reduction(self.norm(x))


class SwinTiny(nn.Module):
    def __init__(self, img_size=16, patch_size=2, embed_dim=8, num_classes=2):
        super().__init__()
        res = img_size // patch_size
        self.patch_embed = nn.Conv2d(1, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.patch_norm = nn.LayerNorm(embed_dim)
        self.stage1 = nn.Sequential(
            SwinTransformerBlock(embed_dim, (res, res), 2, shift_size=0),
            SwinTransformerBlock(embed_dim, (res, res), 2, shift_size=2),
        )
        self.merge = PatchMerging((res, res), embed_dim)
        self.stage2 = SwinTransformerBlock(2 * embed_dim, (res // 2, res // 2), 4, window_size=4)
        self.norm = nn.LayerNorm(2 * embed_dim)
        self.avgpool = nn.AdaptiveAvgPool1d(1)
        self.head = nn.Linear(2 * embed_dim, num_classes)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    def no_weight_decay_keywords(self):
        return {"relative_position_bias_table"}

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = self.stage2(self.merge(self.stage1(self.patch_norm(x))))
        x = self.avgpool(self.norm(x).transpose(1, 2))
        return self.head(torch.flatten(x, 1))


def stripes(rng, n):
    labels = rng.integers(0, 2, n)
    phase = rng.uniform(0, 2 * np.pi, (n, 1, 1))
    grid = np.arange(16)[None, :, None] * np.ones((1, 1, 16))
    along = np.where(labels[:, None, None] == 1, grid, grid.transpose(0, 2, 1))
    images = np.sin(along * 1.3 + phase) + 0.3 * rng.standard_normal((n, 16, 16))
    return images[:, None].astype(np.float32), labels


def build():
    return SwinTiny()


def train(model, steps=6, warmup=2):
    rng = np.random.default_rng(0)
    skip = model.no_weight_decay_keywords()
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if len(param.shape) == 1 or name.endswith(".bias") or any(k in name for k in skip):
            no_decay.append(param)
        else:
            decay.append(param)
    optimizer = torch.optim.AdamW(
        [{"params": decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=5e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.05,
    )

    def warmup_cosine(step):
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / (steps - warmup)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    losses = []
    for step in range(steps):
        images, labels = stripes(rng, 8)
        samples, targets = torch.from_numpy(images), torch.from_numpy(labels)
        outputs = model(samples)
        loss = criterion(outputs, targets)
        optimizer.zero_grad()
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        scheduler.step()
        lr = optimizer.param_groups[0]["lr"]
        print(f"step {step} loss {loss.item():.4f} grad_norm {grad_norm:.4f} lr {lr:.6f}")
        losses += [loss.item(), float(grad_norm)]
    model.eval()
    images, labels = stripes(rng, 16)
    with torch.no_grad():
        output = model(torch.from_numpy(images))
        acc = (output.argmax(1) == torch.from_numpy(labels)).float().mean()
        losses += [F.cross_entropy(output, torch.from_numpy(labels)).item(), acc.item()]
    return losses


if __name__ == "__main__":
    train(build())
