"""A transformer block whose MLP is a top-2 mixture of experts, as in Switch Transformer and
Mixtral: a linear router scores each token, ``softmax`` + ``topk`` pick two experts per token and
renormalize their weights, and a Python loop over experts gathers each expert's tokens with
``torch.where`` on a one-hot expert mask, runs the expert on them, and adds the weighted outputs
back with ``index_add_``. A load-balancing loss (the fraction of tokens routed to each expert
times its mean router probability) keeps the experts in use. Attention is
``nn.MultiheadAttention(batch_first=True)`` with a ``key_padding_mask`` over padded sequences.

The task: variable-length sequences of digits, padded on the right; the model predicts at each
position the running maximum of the digits so far, trained with AdamW on batches made with NumPy.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, PAD, MAX_LEN, D_MODEL, HEADS, EXPERTS, TOP_K = 10, 10, 12, 32, 4, 4, 2
BATCH, AUX_COEF = 16, 0.01


class Expert(nn.Module):
    def __init__(self, d_model, hidden):
        super().__init__()
        self.up = nn.Linear(d_model, hidden)
        self.down = nn.Linear(hidden, d_model)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class MoE(nn.Module):
    def __init__(self, d_model, num_experts, top_k, hidden=48):
        super().__init__()
        self.top_k, self.num_experts = top_k, num_experts
        self.router = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d_model, hidden) for _ in range(num_experts))

    def forward(self, x, valid):
        """``x`` is (tokens, d_model) and ``valid`` (tokens,) marks the non-padding tokens.
        Returns the output and the load-balancing loss over the valid tokens."""
        router_probs = F.softmax(self.router(x), dim=-1)
        weights, chosen = torch.topk(router_probs, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        expert_mask = F.one_hot(chosen, num_classes=self.num_experts).permute(2, 1, 0)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            slot, token = torch.where(expert_mask[e])
            if token.numel() == 0:
                continue
            expert_out = expert(x[token]) * weights[token, slot].unsqueeze(-1)
            out.index_add_(0, token, expert_out.to(x.dtype))
        counts = torch.bincount(chosen[valid].flatten(), minlength=self.num_experts)
        fraction = counts.float() / counts.sum()
        mean_prob = router_probs[valid].mean(dim=0)
        aux_loss = self.num_experts * torch.sum(fraction * mean_prob)
        return out, aux_loss, counts


class MoEBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(D_MODEL)
        self.attn = nn.MultiheadAttention(D_MODEL, HEADS, dropout=0.0, batch_first=True)
        self.norm2 = nn.LayerNorm(D_MODEL)
        self.moe = MoE(D_MODEL, EXPERTS, TOP_K)

    def forward(self, x, padding_mask):
        h = self.norm1(x)
        attended, _ = self.attn(h, h, h, key_padding_mask=padding_mask, need_weights=False)
        x = x + attended
        batch, length, width = x.shape
        moe_out, aux_loss, counts = self.moe(
            self.norm2(x).reshape(-1, width), ~padding_mask.reshape(-1)
        )
        return x + moe_out.view(batch, length, width), aux_loss, counts


class MoETagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB + 1, D_MODEL, padding_idx=PAD)
        self.pos = nn.Parameter(torch.zeros(1, MAX_LEN, D_MODEL))
        self.block = MoEBlock()
        self.norm = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB)

    def forward(self, tokens):
        padding_mask = tokens == PAD
        x = self.embed(tokens) + self.pos[:, : tokens.shape[1]]
        x, aux_loss, counts = self.block(x, padding_mask)
        return self.head(self.norm(x)), aux_loss, counts


def build():
    return MoETagger()


def make_batch(rng):
    """Digits padded with PAD to MAX_LEN; targets are the running maximum, -100 on padding.
    The running maximum needs attention only to earlier tokens, so the model attends both ways
    but must learn to look back."""
    lengths = rng.integers(4, MAX_LEN + 1, BATCH)
    digits = rng.integers(0, VOCAB, (BATCH, MAX_LEN))
    padded = np.arange(MAX_LEN) >= lengths[:, None]
    tokens = np.where(padded, PAD, digits)
    targets = np.where(padded, -100, np.maximum.accumulate(digits, axis=1))
    return torch.from_numpy(tokens), torch.from_numpy(targets)


def train(model, steps=40):
    rng = np.random.default_rng(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    losses = []
    for step in range(steps):
        tokens, targets = make_batch(rng)
        logits, aux_loss, counts = model(tokens)
        task_loss = F.cross_entropy(
            logits.reshape(-1, VOCAB), targets.reshape(-1), ignore_index=-100
        )
        loss = task_loss + AUX_COEF * aux_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [task_loss.item(), aux_loss.item()]
        if step % 10 == 0:
            print(
                f"step {step} loss {task_loss.item():.4f} aux {aux_loss.item():.4f} "
                f"tokens per expert {counts.tolist()}"
            )
    model.eval()
    with torch.no_grad():
        tokens, targets = make_batch(rng)
        logits, _, _ = model(tokens)
        valid = targets != -100
        accuracy = (logits.argmax(-1)[valid] == targets[valid]).float().mean().item()
    print(f"accuracy {accuracy:.3f}")
    return losses + [accuracy]


if __name__ == "__main__":
    torch.manual_seed(0)
    train(build())
