"""A tiny U-Net for binary segmentation, as the Carvana / nuclei-segmentation tutorials write
it: double convolutions with BatchNorm, max-pool down, ConvTranspose2d up, skip connections
joined with torch.cat, BCEWithLogitsLoss with a pos_weight for the rare foreground, Adam, and
the Dice score printed (random blobs on noise instead of photographs)."""

import numpy as np
import torch
import torch.nn as nn


def double_conv(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class UNet(nn.Module):
    def __init__(self, in_channels=1, base=8):
        super().__init__()
        self.down1 = double_conv(in_channels, base)
        self.down2 = double_conv(base, base * 2)
        self.bottleneck = double_conv(base * 2, base * 4)
        self.pool = nn.MaxPool2d(2)
        self.up2 = nn.ConvTranspose2d(base * 4, base * 2, kernel_size=2, stride=2)
        self.conv2 = double_conv(base * 4, base * 2)
        self.up1 = nn.ConvTranspose2d(base * 2, base, kernel_size=2, stride=2)
        self.conv1 = double_conv(base * 2, base)
        self.head = nn.Conv2d(base, 1, kernel_size=1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(self.pool(d1))
        b = self.bottleneck(self.pool(d2))
        u2 = self.conv2(torch.cat([self.up2(b), d2], dim=1))
        u1 = self.conv1(torch.cat([self.up1(u2), d1], dim=1))
        return self.head(u1)


def make_batch(rng, n=8, size=16):
    yy, xx = np.mgrid[:size, :size]
    cy, cx = rng.uniform(4, size - 4, (2, n, 1, 1))
    radius = rng.uniform(2, 4, (n, 1, 1))
    masks = ((yy - cy) ** 2 + (xx - cx) ** 2 < radius**2).astype(np.float32)
    images = masks + 0.5 * rng.standard_normal(masks.shape).astype(np.float32)
    return torch.from_numpy(images[:, None]), torch.from_numpy(masks[:, None])


def dice_score(logits, target, eps=1e-6):
    pred = (torch.sigmoid(logits) > 0.5).float()
    intersection = (pred * target).sum(dim=(1, 2, 3))
    union = pred.sum(dim=(1, 2, 3)) + target.sum(dim=(1, 2, 3))
    return ((2 * intersection + eps) / (union + eps)).mean()


def build():
    return UNet()


def train(model, steps=5):
    rng = np.random.default_rng(0)
    criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([3.0]))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for step in range(steps):
        images, masks = make_batch(rng)
        model.train()
        optimizer.zero_grad()
        logits = model(images)
        loss = criterion(logits, masks)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            val_images, val_masks = make_batch(rng)
            dice = dice_score(model(val_images), val_masks)
        print(f"step {step}: bce {loss.item():.4f}  val dice {dice.item():.3f}")
    return losses


if __name__ == "__main__":
    train(build())
