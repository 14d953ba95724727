"""Profiling a training loop, as the "PyTorch Profiler With TensorBoard" recipe does: a
``torch.profiler.profile`` with a schedule (skip a step, wait, warm up, record two steps, twice),
``prof.step()`` at the end of each step, a ``record_function`` range around the forward pass,
and an ``on_trace_ready`` that writes the cycle's trace with ``tensorboard_trace_handler`` and
reads its table. The timings differ from run to run, so only what does not is printed: the
losses, the table's columns, how many steps each cycle recorded and how many traces were
written."""

import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
from torch.profiler import (
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)

rng = np.random.default_rng(0)
X = torch.from_numpy(rng.standard_normal((8, 16, 6)).astype(np.float32))
Y = torch.from_numpy(rng.integers(0, 3, (8, 16)))


def build():
    return nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 3))


def train(model, steps=8):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    with tempfile.TemporaryDirectory() as logdir:
        write_trace = tensorboard_trace_handler(logdir)

        def on_trace_ready(prof):
            write_trace(prof)
            table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=8)
            columns = [c.strip() for c in table.splitlines()[1].split("  ") if c.strip()]
            steps_seen = [e.count for e in prof.key_averages() if e.key == "ProfilerStep*"]
            print(f"cycle ending at step {prof.step_num}: {steps_seen} steps, columns {columns}")

        with profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1),
            on_trace_ready=on_trace_ready,
            record_shapes=True,
        ) as prof:
            for step in range(steps):
                optimizer.zero_grad()
                with record_function("forward"):
                    loss = nn.functional.cross_entropy(model(X[step]), Y[step])
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
                print(f"step {step}: loss {loss.item():.4f}")
                prof.step()
        forward = [e.count for e in prof.key_averages() if e.key == "forward"]
        print(f"traces written: {len(os.listdir(logdir))}, forward ranges in the last: {forward}")
    return losses


if __name__ == "__main__":
    train(build())
