"""SegNet as its PyTorch re-implementations write it: an encoder of conv-BN-ReLU stages whose
``MaxPool2d(return_indices=True)`` hands the pooling indices (and, for odd sizes, the size
before pooling) to a mirrored decoder that upsamples with ``MaxUnpool2d(output_size=...)``;
a class-balanced ``CrossEntropyLoss(weight=..., ignore_index=255)`` on the per-pixel logits,
the class weights by median frequency from ``torch.bincount``, ``SGD`` with Nesterov momentum
and a ``PolynomialLR`` decay, and the validation mIoU from a confusion matrix built with
``bincount`` over ``n * target + prediction`` and ``torch.diag`` (made-up 11 x 11 images of
discs and bars, a border of pixels marked "void" with 255)."""

import numpy as np
import torch
import torch.nn as nn

NUM_CLASSES, IGNORE = 3, 255


def conv_bn_relu(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(True))


class SegNet(nn.Module):
    def __init__(self, in_channels=1, widths=(6, 8)):
        super().__init__()
        chans = (in_channels, *widths)
        self.encoders = nn.ModuleList(conv_bn_relu(a, b) for a, b in zip(chans, chans[1:]))
        self.decoders = nn.ModuleList(
            conv_bn_relu(b, a if a != in_channels else widths[0])
            for a, b in reversed(list(zip(chans, chans[1:])))
        )
        self.pool = nn.MaxPool2d(2, 2, return_indices=True)
        self.unpool = nn.MaxUnpool2d(2, 2)
        self.classifier = nn.Conv2d(widths[0], NUM_CLASSES, 1)

    def forward(self, x):
        stack = []
        for encoder in self.encoders:
            x = encoder(x)
            size = x.size()
            x, indices = self.pool(x)
            stack.append((indices, size))
        for decoder in self.decoders:
            indices, size = stack.pop()
            x = decoder(self.unpool(x, indices, output_size=size))
        return self.classifier(x)


def scenes(rng, n, size=11):
    """Class 1: a disc; class 2: a bar; 0: background; the outer ring of pixels is void."""
    ys, xs = np.mgrid[0:size, 0:size]
    images = 0.2 * rng.standard_normal((n, 1, size, size))
    masks = np.zeros((n, size, size), np.int64)
    for i in range(n):
        cy, cx = rng.uniform(3, size - 3, 2)
        disc = (ys - cy) ** 2 + (xs - cx) ** 2 < 5
        row = rng.integers(1, size - 1)
        bar = (np.abs(ys - row) < 1) & ~disc
        masks[i][disc], masks[i][bar] = 1, 2
        images[i, 0] += disc * 1.0 - bar * 1.0
    masks[:, 0, :] = masks[:, -1, :] = masks[:, :, 0] = masks[:, :, -1] = IGNORE
    return torch.from_numpy(images.astype(np.float32)), torch.from_numpy(masks)


def median_frequency_weights(masks):
    valid = masks[masks != IGNORE]
    counts = torch.bincount(valid, minlength=NUM_CLASSES).float()
    freq = counts / counts.sum()
    return freq.median() / freq


def fast_hist(pred, target, n=NUM_CLASSES):
    k = (target >= 0) & (target < n)
    return torch.bincount(n * target[k] + pred[k], minlength=n**2).reshape(n, n)


def build():
    return SegNet()


def train(model, steps=6):
    rng = np.random.default_rng(0)
    images, masks = scenes(rng, 12)
    weights = median_frequency_weights(masks)
    print("class weights", [round(w, 4) for w in weights.tolist()])
    criterion = nn.CrossEntropyLoss(weight=weights, ignore_index=IGNORE)
    optimizer = torch.optim.SGD(
        model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4
    )
    scheduler = torch.optim.lr_scheduler.PolynomialLR(optimizer, total_iters=steps, power=0.9)
    losses = weights.tolist()
    for step in range(steps):
        batch = slice(4 * (step % 3), 4 * (step % 3) + 4)
        output = model(images[batch])
        loss = criterion(output, masks[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        print(f"step {step} loss {loss.item():.4f} lr {scheduler.get_last_lr()[0]:.5f}")
        losses.append(loss.item())
    model.eval()
    val_images, val_masks = scenes(rng, 4)
    with torch.no_grad():
        logits = model(val_images)
        val_loss = criterion(logits, val_masks)
        hist = fast_hist(logits.argmax(dim=1).flatten(), val_masks.flatten())
    iou = torch.diag(hist).float() / (hist.sum(1) + hist.sum(0) - torch.diag(hist)).float()
    print(f"val loss {val_loss.item():.4f} mIoU {torch.nanmean(iou).item():.4f}")
    return losses + [val_loss.item(), hist.sum().item()]


if __name__ == "__main__":
    train(build())
