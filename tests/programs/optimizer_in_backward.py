"""Two memory-saving recipes from PyTorch's tutorials in one training loop: the optimizer step
fused into the backward pass (one optimizer per parameter, stepped and zeroed by a hook
registered with ``Tensor.register_post_accumulate_grad_hook``, so no gradient outlives its
use), and activations packed for backward through
``torch.autograd.graph.saved_tensors_hooks`` (stored as float16 by ``pack`` and cast back in
``unpack``, a count of the saved elements kept); a small transformer-style MLP-LayerNorm model,
Adam per parameter with a per-parameter ``StepLR`` each. A second model trained the ordinary
way with the same packing shows the two agree."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim=16, hidden=32):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class Regressor(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.inp = nn.Linear(6, dim)
        self.blocks = nn.Sequential(Block(dim), Block(dim))
        self.out = nn.Linear(dim, 1)

    def forward(self, x):
        return self.out(self.blocks(self.inp(x))).squeeze(-1)


saved_elements = 0


def pack_hook(tensor):
    global saved_elements
    saved_elements += tensor.numel()
    if tensor.dtype == torch.float32:
        return tensor.dtype, tensor.to(torch.float16)
    return tensor.dtype, tensor


def unpack_hook(packed):
    dtype, tensor = packed
    return tensor.to(dtype)


def attach_optimizer_hooks(model, lr):
    optimizer_dict = {p: torch.optim.Adam([p], lr=lr) for p in model.parameters()}
    schedulers = [torch.optim.lr_scheduler.StepLR(o, 4, 0.5) for o in optimizer_dict.values()]

    def optimizer_hook(parameter):
        optimizer_dict[parameter].step()
        optimizer_dict[parameter].zero_grad()

    handles = [p.register_post_accumulate_grad_hook(optimizer_hook) for p in model.parameters()]
    return schedulers, handles


def build():
    return Regressor()


def train(model, steps=10, lr=3e-3):
    global saved_elements
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((64, 6)).astype(np.float32))
    y = torch.sin(x[:, 0]) + x[:, 1] * x[:, 2]
    reference = Regressor()
    reference.load_state_dict(model.state_dict())
    ref_optimizer = torch.optim.Adam(reference.parameters(), lr=lr)
    ref_scheduler = torch.optim.lr_scheduler.StepLR(ref_optimizer, 4, 0.5)
    schedulers, handles = attach_optimizer_hooks(model, lr)
    losses = []
    for step in range(steps):
        saved_elements = 0
        with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
            loss = F.mse_loss(model(x), y)
            ref_loss = F.mse_loss(reference(x), y)
        loss.backward()  # the hooks step each parameter as its gradient is ready
        for scheduler in schedulers:
            scheduler.step()
        ref_optimizer.zero_grad()
        ref_loss.backward()
        ref_optimizer.step()
        ref_scheduler.step()
        losses += [loss.item(), ref_loss.item()]
        grads_left = sum(p.grad is not None for p in model.parameters())
        print(
            f"step {step}: loss {loss.item():.5f} (reference {ref_loss.item():.5f}), "
            f"{saved_elements} saved elements, {grads_left} gradients kept"
        )
    for handle in handles:
        handle.remove()
    return losses


if __name__ == "__main__":
    train(build())
