"""A Llama-style character model: RMSNorm written by hand, rotary position embeddings from
cos/sin caches kept as non-persistent buffers (pairs rotated with ``unflatten``/``stack``),
grouped-query attention whose key/value heads are repeated with ``repeat_interleave``,
``scaled_dot_product_attention``, a SwiGLU MLP, the output head tied to the embedding, AdamW
with no weight decay on 1-D parameters (and nanoGPT's look for ``fused`` in its signature), a
warmup-then-cosine ``LambdaLR``, ``clip_grad_norm_``, and top-k generation with a
preallocated KV cache (top_k=1, so ``multinomial`` has a single choice and both libraries pick
the same tokens)."""

import inspect
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 32
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    vocab_size: int = 32
    multiple_of: int = 16
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_seq_len: int = 32


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        return self._norm(x.float()).type_as(x) * self.weight


def precompute_rope(head_dim, max_seq_len, theta):
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
    t = torch.arange(max_seq_len, dtype=torch.float32)
    angles = torch.outer(t, freqs)  # (max_seq_len, head_dim // 2)
    return angles.cos(), angles.sin()


def apply_rotary_emb(x, cos, sin):
    # x: (B, n_heads, T, head_dim); neighbouring pairs (x[2i], x[2i+1]) rotate together
    x1, x2 = x.float().unflatten(-1, (-1, 2)).unbind(-1)
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return out.flatten(-2).type_as(x)


class Attention(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.n_heads = args.n_heads
        self.n_kv_heads = args.n_kv_heads
        self.n_rep = args.n_heads // args.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
        self.cache_k = self.cache_v = None

    def forward(self, x, cos, sin, start_pos=None):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary_emb(q, cos, sin), apply_rotary_emb(k, cos, sin)
        if start_pos is not None:  # decoding: write into the cache, attend to all of it
            self.cache_k[:B, :, start_pos : start_pos + T] = k
            self.cache_v[:B, :, start_pos : start_pos + T] = v
            k = self.cache_k[:B, :, : start_pos + T]
            v = self.cache_v[:B, :, : start_pos + T]
        k = k.repeat_interleave(self.n_rep, dim=1)
        v = v.repeat_interleave(self.n_rep, dim=1)
        # one new token sees every cached position; a prompt is masked causally
        out = F.scaled_dot_product_attention(q, k, v, is_causal=T > 1)
        return self.wo(out.transpose(1, 2).contiguous().view(B, T, -1))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim, multiple_of):
        super().__init__()
        hidden_dim = int(2 * hidden_dim / 3)
        hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.attention = Attention(args)
        self.feed_forward = FeedForward(args.dim, 4 * args.dim, args.multiple_of)
        self.attention_norm = RMSNorm(args.dim, eps=args.norm_eps)
        self.ffn_norm = RMSNorm(args.dim, eps=args.norm_eps)

    def forward(self, x, cos, sin, start_pos=None):
        h = x + self.attention(self.attention_norm(x), cos, sin, start_pos)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim)
        self.layers = nn.ModuleList(TransformerBlock(args) for _ in range(args.n_layers))
        self.norm = RMSNorm(args.dim, eps=args.norm_eps)
        self.output = nn.Linear(args.dim, args.vocab_size, bias=False)
        self.output.weight = self.tok_embeddings.weight  # weight tying
        cos, sin = precompute_rope(args.dim // args.n_heads, args.max_seq_len, args.rope_theta)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, tokens, targets=None, start_pos=None):
        B, T = tokens.shape
        h = self.tok_embeddings(tokens)
        offset = 0 if start_pos is None else start_pos
        cos = self.rope_cos[offset : offset + T]
        sin = self.rope_sin[offset : offset + T]
        for layer in self.layers:
            h = layer(h, cos, sin, start_pos)
        logits = self.output(self.norm(h))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        params = {n: p for n, p in self.named_parameters() if p.requires_grad}
        decay = [p for n, p in params.items() if p.dim() >= 2]
        no_decay = [p for n, p in params.items() if p.dim() < 2]
        print(f"decayed tensors: {len(decay)}, non-decayed tensors: {len(no_decay)}")
        groups = [
            {"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]
        fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
        use_fused = fused_available and self.output.weight.is_cuda
        extra_args = dict(fused=True) if use_fused else dict()
        print(f"using fused AdamW: {use_fused}")
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, **extra_args)

    @torch.inference_mode()
    def generate(self, prompt, max_new_tokens, temperature=1.0, top_k=None):
        B, T = prompt.shape
        head_dim = self.args.dim // self.args.n_heads
        shape = (B, self.args.n_kv_heads, T + max_new_tokens, head_dim)
        for layer in self.layers:
            layer.attention.cache_k = torch.zeros(shape, device=prompt.device)
            layer.attention.cache_v = torch.zeros(shape, device=prompt.device)
        tokens, pos, step_logits = prompt, 0, []
        for _ in range(max_new_tokens):
            logits, _ = self(tokens[:, pos:], start_pos=pos)
            pos = tokens.size(1)
            logits = logits[:, -1, :] / temperature
            step_logits.append(logits.clone())  # top-k below edits logits in place
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            next_token = torch.multinomial(probs, num_samples=1)
            tokens = torch.cat((tokens, next_token), dim=1)
        for layer in self.layers:
            layer.attention.cache_k = layer.attention.cache_v = None
        return tokens, torch.stack(step_logits, dim=1)


text = "to be or not to be, that is the question: whether tis nobler in the mind. " * 6
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
itos = {i: c for c, i in stoi.items()}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)


def get_batch(rng, batch_size, block_size):
    ix = rng.integers(0, len(data) - block_size - 1, batch_size)
    x = torch.stack([data[i : i + block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in ix])
    return x, y


def get_lr_lambda(warmup_iters, max_iters, min_lr_ratio=0.1):
    def lr_lambda(it):
        if it < warmup_iters:
            return (it + 1) / warmup_iters
        progress = (it - warmup_iters) / max(1, max_iters - warmup_iters)
        coeff = 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))
        return min_lr_ratio + coeff * (1.0 - min_lr_ratio)

    return lr_lambda


def build():
    return Transformer(ModelArgs(vocab_size=len(chars)))


def train(model, max_iters=16, batch_size=4, block_size=16):
    rng = np.random.default_rng(7)
    print(f"{sum(p.numel() for p in model.parameters())} parameters")
    optimizer = model.configure_optimizers(0.1, 3e-3, (0.9, 0.95))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, get_lr_lambda(2, max_iters))
    losses = []
    model.train()
    for it in range(max_iters):
        xb, yb = get_batch(rng, batch_size, block_size)
        _, loss = model(xb, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses += [loss.item(), norm.item()]
        lr = scheduler.get_last_lr()[0]
        print(f"iter {it}: loss {loss.item():.4f}, norm {norm:.4f}, lr {lr:.2e}")
    model.eval()
    prompt = torch.tensor([[stoi[c] for c in "to be or"]], dtype=torch.long)
    tokens, cached_logits = model.generate(prompt, max_new_tokens=12, top_k=1)
    with torch.no_grad():
        full_logits, _ = model(tokens[:, :-1])
    gap = (full_logits[:, prompt.size(1) - 1 :] - cached_logits).abs().max().item()
    greedy = full_logits[0, prompt.size(1) - 1 :].argmax(-1)
    print(f"kv cache vs full forward: max diff {gap:.1e}")
    print("".join(itos[i] for i in tokens[0].tolist()))
    losses += [
        cached_logits.logsumexp(-1).mean().item(),
        float(greedy.eq(tokens[0, prompt.size(1) :]).sum()),
    ]
    return losses


if __name__ == "__main__":
    train(build())
