"""A multi-task autoencoder whose forward returns a dict (``{"logits": ..., "recon": ...}``),
trained through ``torch.compile(model)``, with a loss module, compiled too, returning a tuple
(the total and its parts). Half-way, the compiled model is checkpointed as nanoGPT does: its
``state_dict()`` keys carry the ``_orig_mod.`` prefix, which is stripped before loading the
weights into a fresh, uncompiled model; that model is then compiled in place with
``Module.compile()`` (its own keys keep no prefix) and trained on from the saved optimizer
state. The compile uses the ``aot_eager`` backend: no C++ compiler, a second on a CPU."""

import io

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiTask(nn.Module):
    def __init__(self, features=10, code=4, classes=3):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(features, 16), nn.ReLU(), nn.Linear(16, code))
        self.decoder = nn.Sequential(nn.Linear(code, 16), nn.ReLU(), nn.Linear(16, features))
        self.classifier = nn.Linear(code, classes)

    def forward(self, x):
        code = self.encoder(x)
        return {"logits": self.classifier(code), "recon": self.decoder(code), "code": code}


class MultiTaskLoss(nn.Module):
    def __init__(self, recon_weight=0.5):
        super().__init__()
        self.recon_weight = recon_weight

    def forward(self, outputs, x, y):
        classification = F.cross_entropy(outputs["logits"], y, label_smoothing=0.05)
        reconstruction = F.mse_loss(outputs["recon"], x)
        total = classification + self.recon_weight * reconstruction
        return total, classification.detach(), reconstruction.detach()


def build():
    return MultiTask()


def make_data(rng, n=48):
    x = rng.standard_normal((n, 10)).astype(np.float32)
    y = (x[:, :3].argmax(1) + (x[:, 9] > 1.2)) % 3
    return torch.from_numpy(x), torch.from_numpy(y)


def run(model, criterion, optimizer, data, losses):
    x, y = data
    for start in range(0, len(x), 16):
        xb, yb = x[start : start + 16], y[start : start + 16]
        outputs = model(xb)
        total, classification, reconstruction = criterion(outputs, xb, yb)
        optimizer.zero_grad()
        total.backward()
        optimizer.step()
        losses += [total.item(), classification.item(), reconstruction.item()]
    print(f"loss {losses[-3]:.4f} = ce {losses[-2]:.4f} + 0.5 * mse {losses[-1]:.4f}")


def train(model, epochs=3):
    data = make_data(np.random.default_rng(7))
    compiled = torch.compile(model, backend="aot_eager")
    criterion = torch.compile(MultiTaskLoss(), backend="aot_eager")
    optimizer = torch.optim.Adam(compiled.parameters(), lr=1e-2)
    losses = []
    for _ in range(epochs):
        run(compiled, criterion, optimizer, data, losses)

    buffer = io.BytesIO()
    torch.save({"model": compiled.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
    buffer.seek(0)
    checkpoint = torch.load(buffer, weights_only=True)
    state = checkpoint["model"]
    print(f"saved keys start with _orig_mod.: {all(k.startswith('_orig_mod.') for k in state)}")
    unwanted_prefix = "_orig_mod."
    for k in list(state):
        if k.startswith(unwanted_prefix):
            state[k[len(unwanted_prefix) :]] = state.pop(k)
    resumed = MultiTask()
    resumed.load_state_dict(state)
    resumed.compile(backend="aot_eager")
    print(f"in-place compiled keys: {list(resumed.state_dict())[:2]}")
    optimizer = torch.optim.Adam(resumed.parameters(), lr=1e-2)
    optimizer.load_state_dict(checkpoint["optimizer"])
    for _ in range(epochs):
        run(resumed, criterion, optimizer, data, losses)
    with torch.no_grad():
        code = resumed(data[0])["code"]
    losses.append(code.pow(2).mean().item())
    return losses


if __name__ == "__main__":
    train(build())
