"""Domain-adversarial training (DANN, Ganin & Lempitsky, 2015) with the gradient reversal layer
as its PyTorch ports write it: a custom ``autograd.Function`` whose forward is
``x.view_as(x)`` and whose backward is ``grad_output.neg() * ctx.alpha``, between a shared
feature extractor and a domain classifier; a label loss on the source domain plus a domain loss
on both (data drawn with NumPy, the second domain shifted and rotated)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Function


class ReverseLayerF(Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg() * ctx.alpha, None


class DANN(nn.Module):
    def __init__(self):
        super().__init__()
        self.feature = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU())
        self.label = nn.Linear(16, 2)
        self.domain = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2))

    def forward(self, x, alpha):
        features = self.feature(x)
        reversed_features = ReverseLayerF.apply(features, alpha)
        return self.label(features), self.domain(reversed_features)


def build():
    return DANN()


def train(model, steps=10):
    rng = np.random.default_rng(0)
    source = rng.normal(size=(64, 4)).astype(np.float32)
    labels = torch.from_numpy((source[:, 0] + source[:, 1] > 0).astype(np.int64))
    rotation = np.linalg.qr(rng.normal(size=(4, 4)))[0].astype(np.float32)
    target = torch.from_numpy(source @ rotation + 0.5)
    source = torch.from_numpy(source)
    domains = torch.cat([torch.zeros(64, dtype=torch.long), torch.ones(64, dtype=torch.long)])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step in range(steps):
        alpha = 2.0 / (1.0 + np.exp(-10 * step / steps)) - 1
        class_out, domain_src = model(source, alpha)
        _, domain_tgt = model(target, alpha)
        label_loss = F.cross_entropy(class_out, labels)
        domain_loss = F.cross_entropy(torch.cat([domain_src, domain_tgt]), domains)
        optimizer.zero_grad()
        (label_loss + domain_loss).backward()
        optimizer.step()
        losses += [label_loss.item(), domain_loss.item()]
        if step % 3 == 0:
            print(f"step {step} label {label_loss.item():.4f} domain {domain_loss.item():.4f}")
    return losses
