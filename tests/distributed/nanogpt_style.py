"""A nanoGPT-style training script, written for PyTorch; only the import block differs.

Alone it trains in one process; under ``mpiexec -n N`` (or, with PyTorch, ``torchrun``) it
trains data-parallel: RANK set means DDP, as nanoGPT's train.py decides. Settings are
overridden as nanoGPT's are: ``--max_iters=20``.
"""

import math
import os
import sys

import numpy as np

# -- the only lines that differ from the PyTorch version (test_distributed_programs.py swaps them)
import scratchgrad as torch
from scratchgrad import nn
from scratchgrad.distributed import destroy_process_group, init_process_group
from scratchgrad.nn import functional as F
from scratchgrad.nn.parallel import DistributedDataParallel as DDP

# -- settings
backend = "mpi"
batch_size = 8
block_size = 16
n_embd = 32
max_iters = 30
learning_rate = 1e-2
gradient_accumulation_steps = 2
grad_clip = 1.0
eval_interval = 10
for arg in sys.argv[1:]:  # nanoGPT's configurator, in two lines
    key, value = arg.removeprefix("--").split("=")
    globals()[key] = type(globals()[key])(value)

text = "first citizen: before we proceed any further, hear me speak. all: speak, speak. " * 20
chars = sorted(set(text))
data = np.array([chars.index(c) for c in text], dtype=np.uint16)
train_data, val_data = data[: int(0.9 * len(data))], data[int(0.9 * len(data)) :]

ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    init_process_group(backend=backend)
    ddp_rank = int(os.environ["RANK"])
    ddp_world_size = int(os.environ["WORLD_SIZE"])
    master_process = ddp_rank == 0
    seed_offset = ddp_rank
else:
    master_process, seed_offset, ddp_world_size = True, 0, 1
torch.manual_seed(1337 + seed_offset)


def get_batch(split):
    source = train_data if split == "train" else val_data
    ix = torch.randint(len(source) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(source[i : i + block_size].astype(np.int64)) for i in ix])
    y = torch.stack(
        [torch.from_numpy(source[i + 1 : i + 1 + block_size].astype(np.int64)) for i in ix]
    )
    return x, y


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("bias", torch.ones(block_size, block_size).tril() == 0)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(n_embd, dim=2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C))
        att = att.masked_fill(self.bias[:T, :T], float("-inf")).softmax(dim=-1)
        return self.c_proj(att @ v)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(n_embd), CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd)
        )

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.block, self.ln_f = Block(), nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.shape[1])
        x = self.ln_f(self.block(self.wte(idx) + self.wpe(pos)))
        logits = self.lm_head(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        params = [p for p in self.parameters() if p.requires_grad]
        groups = [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas)


model = GPT(len(chars))
optimizer = model.configure_optimizers(0.1, learning_rate, (0.9, 0.95))
if ddp:
    model = DDP(model)
raw_model = model.module if ddp else model


@torch.no_grad()
def estimate_loss():
    model.eval()
    losses = [raw_model(*get_batch("val"))[1].item() for _ in range(4)]
    model.train()
    return sum(losses) / len(losses)


X, Y = get_batch("train")
first_loss = None
for iter_num in range(max_iters + 1):
    lr = learning_rate * 0.5 * (1 + math.cos(math.pi * iter_num / max_iters))
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr
    if iter_num % eval_interval == 0 and master_process:
        print(f"step {iter_num}: val loss {estimate_loss():.4f}")
    for micro_step in range(gradient_accumulation_steps):
        if ddp:
            model.require_backward_grad_sync = micro_step == gradient_accumulation_steps - 1
        logits, loss = model(X, Y)
        loss = loss / gradient_accumulation_steps
        X, Y = get_batch("train")
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    first_loss = first_loss or loss.item() * gradient_accumulation_steps
if master_process:
    print(f"train loss {first_loss:.4f} -> {loss.item() * gradient_accumulation_steps:.4f}")
if ddp:
    destroy_process_group()
