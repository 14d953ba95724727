"""Gradual unfreezing with a resumable checkpoint, as fine-tuning scripts write it: an AdamW
built with PyTorch's implementation switches spelled out (``foreach=False, fused=None,
capturable=False, differentiable=False``), each unfrozen layer added later with
``add_param_group`` as a copy of the head's group settings (``{k: v ... if k != "params"}``, the
switches included) at a lower learning rate, an optimizer state-dict post hook stamping the
step count into the checkpoint, a load pre hook reading it back and a load post hook logging
the groups, and a checkpoint round trip through ``torch.save``/``torch.load`` in memory."""

import io

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def build():
    return nn.Sequential(
        nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3)
    )


def make_optimizer(model):
    """AdamW over the head alone; the body starts frozen."""
    for p in model[:4].parameters():
        p.requires_grad_(False)
    return torch.optim.AdamW(
        model[4].parameters(),
        lr=3e-2,
        weight_decay=0.05,
        foreach=False,
        fused=None,
        capturable=False,
        differentiable=False,
    )


def unfreeze(model, optimizer, index):
    """Give layer ``index`` its own group: the head's settings at a tenth of the rate."""
    settings = {k: v for k, v in optimizer.param_groups[0].items() if k != "params"}
    for p in model[index].parameters():
        p.requires_grad_(True)
    optimizer.add_param_group(
        {**settings, "params": list(model[index].parameters()), "lr": settings["lr"] / 10}
    )


def add_hooks(optimizer, counter):
    def stamp(opt, state_dict):
        return {**state_dict, "steps_done": counter["steps"]}

    def read_stamp(opt, state_dict):
        counter["steps"] = state_dict.pop("steps_done")

    def log_groups(opt):
        rates = [group["lr"] for group in opt.param_groups]
        print(f"loaded {len(opt.param_groups)} groups, rates {rates}")

    optimizer.register_state_dict_post_hook(stamp)
    optimizer.register_load_state_dict_pre_hook(read_stamp)
    optimizer.register_load_state_dict_post_hook(log_groups, prepend=True)


def run(model, optimizer, data, counter, steps, losses):
    x, y = data
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        counter["steps"] += 1
        losses.append(loss.item())
        print(
            f"step {counter['steps']} loss {loss.item():.4f} groups {len(optimizer.param_groups)}"
        )


def train(model):
    rng = np.random.default_rng(11)
    x = torch.from_numpy(rng.standard_normal((32, 6)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 3, 32))
    counter, losses = {"steps": 0}, []
    optimizer = make_optimizer(model)
    add_hooks(optimizer, counter)
    run(model, optimizer, (x, y), counter, 3, losses)
    unfreeze(model, optimizer, 2)
    run(model, optimizer, (x, y), counter, 3, losses)

    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
    buffer.seek(0)
    checkpoint = torch.load(buffer, weights_only=True)
    resumed = build()
    resumed.load_state_dict(checkpoint["model"])
    optimizer, counter = make_optimizer(resumed), {"steps": 0}
    add_hooks(optimizer, counter)
    unfreeze(resumed, optimizer, 2)
    optimizer.load_state_dict(checkpoint["optimizer"])
    unfreeze(resumed, optimizer, 0)
    run(resumed, optimizer, (x, y), counter, 4, losses)
    return losses


if __name__ == "__main__":
    train(build())
