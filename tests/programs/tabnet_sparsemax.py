"""A TabNet-style tabular classifier (Arik & Pfister, 2021) as the pytorch-tabnet code writes it:
sparsemax attention masks computed by hand (``torch.sort`` descending, ``cumsum``, a support
found by comparing against ``torch.arange``, ``gather`` of the threshold, ``clamp``) inside a
custom ``torch.autograd.Function`` with its own backward, ghost batch normalization that splits
the batch with ``chunk`` and normalizes each virtual batch, GLU feature transformers, a prior
scale updated by ``relaxation - mask``, the mask-entropy sparsity loss, and Adam with
``StepLR``; the masks' row sums (one) and zero fractions are printed."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class SparsemaxFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, dim=-1):
        ctx.dim = dim
        max_val, _ = input.max(dim=dim, keepdim=True)
        input = input - max_val  # same numerics as softmax
        tau, supp_size = SparsemaxFunction._threshold_and_support(input, dim=dim)
        output = torch.clamp(input - tau, min=0)
        ctx.save_for_backward(supp_size, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        supp_size, output = ctx.saved_tensors
        dim = ctx.dim
        grad_input = grad_output.clone()
        grad_input[output == 0] = 0
        v_hat = grad_input.sum(dim=dim) / supp_size.to(output.dtype).squeeze(dim)
        v_hat = v_hat.unsqueeze(dim)
        grad_input = torch.where(output != 0, grad_input - v_hat, grad_input)
        return grad_input, None

    @staticmethod
    def _threshold_and_support(input, dim=-1):
        input_srt, _ = torch.sort(input, descending=True, dim=dim)
        input_cumsum = input_srt.cumsum(dim) - 1
        rhos = torch.arange(1, input.size(dim) + 1, device=input.device, dtype=input.dtype)
        support = rhos * input_srt > input_cumsum
        support_size = support.sum(dim=dim).unsqueeze(dim)
        tau = input_cumsum.gather(dim, support_size - 1)
        tau /= support_size.to(input.dtype)
        return tau, support_size


def sparsemax(x, dim=-1):
    return SparsemaxFunction.apply(x, dim)


class GBN(nn.Module):
    """Ghost batch normalization: batch norm over virtual batches of a fixed size."""

    def __init__(self, dim, virtual_batch_size=8, momentum=0.02):
        super().__init__()
        self.virtual_batch_size = virtual_batch_size
        self.bn = nn.BatchNorm1d(dim, momentum=momentum)

    def forward(self, x):
        chunks = x.chunk(int(np.ceil(x.shape[0] / self.virtual_batch_size)), 0)
        return torch.cat([self.bn(x_) for x_ in chunks], dim=0)


class GLUBlock(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.fc = nn.Linear(dim_in, 2 * dim_out, bias=False)
        self.bn = GBN(2 * dim_out)

    def forward(self, x):
        return F.glu(self.bn(self.fc(x)), dim=-1)


class AttentiveTransformer(nn.Module):
    def __init__(self, dim_in, n_features):
        super().__init__()
        self.fc = nn.Linear(dim_in, n_features, bias=False)
        self.bn = GBN(n_features)

    def forward(self, priors, processed):
        return sparsemax(self.bn(self.fc(processed)) * priors, dim=-1)


class TabNet(nn.Module):
    def __init__(self, n_features=10, n_d=8, n_a=8, n_steps=3, n_classes=3, gamma=1.3):
        super().__init__()
        self.n_d, self.n_steps, self.gamma = n_d, n_steps, gamma
        self.initial_bn = nn.BatchNorm1d(n_features, momentum=0.01)
        self.shared = GLUBlock(n_features, n_d + n_a)
        self.step_transformers = nn.ModuleList(
            GLUBlock(n_d + n_a, n_d + n_a) for _ in range(n_steps + 1)
        )
        self.attentions = nn.ModuleList(
            AttentiveTransformer(n_a, n_features) for _ in range(n_steps)
        )
        self.head = nn.Linear(n_d, n_classes)

    def features(self, x, step):
        h = self.shared(x)
        return (h + self.step_transformers[step](h)) * np.sqrt(0.5)

    def forward(self, x):
        x = self.initial_bn(x)
        prior = torch.ones(x.shape)
        entropy = 0
        att = self.features(x, 0)[:, self.n_d :]
        out = 0
        masks = []
        for step in range(self.n_steps):
            M = self.attentions[step](prior, att)
            entropy = entropy + torch.mean(torch.sum(torch.mul(M, torch.log(M + 1e-15)), dim=1))
            prior = torch.mul(self.gamma - M, prior)
            h = self.features(torch.mul(M, x), step + 1)
            out = out + F.relu(h[:, : self.n_d])
            att = h[:, self.n_d :]
            masks.append(M)
        return self.head(out), entropy / self.n_steps, masks


def build():
    return TabNet()


def train(model, epochs=3, batches=3, lambda_sparse=1e-3):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batches, 32, 10)).astype(np.float32)
    y = ((x[..., 0] > 0) + (x[..., 3] * x[..., 4] > 0)).astype(np.int64)
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.9)
    losses = []
    for epoch in range(epochs):
        model.train()
        for xb, yb in zip(x, y):
            logits, entropy, _ = model(xb)
            loss = F.cross_entropy(logits, yb) - lambda_sparse * entropy
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 2.0)
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
        model.eval()
        with torch.no_grad():
            logits, _, masks = model(x[0])
            row_sums = torch.stack([m.sum(1) for m in masks]).mean().item()
            zeros = torch.stack([(m == 0).float().mean() for m in masks]).mean().item()
            losses.append(F.cross_entropy(logits, y[0]).item())
        print(
            f"epoch {epoch}: loss {losses[-2]:.4f}, eval {losses[-1]:.4f}, "
            f"mask row sum {row_sums:.3f}, zeros {zeros:.2f}"
        )
    return losses


if __name__ == "__main__":
    train(build())
