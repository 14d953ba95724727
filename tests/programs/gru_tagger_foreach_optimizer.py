"""A part-of-speech style tagger with a sentence-level head, trained by a hand-written optimizer
as research code writes one: AdamW's update in ``torch._foreach_*`` calls (``lerp_``,
``addcmul_``, ``sqrt``, ``addcdiv_``) inside a subclass of ``torch.optim.Optimizer``, an EMA of
the weights kept by ``register_step_post_hook``. The model: ``nn.Embedding(padding_idx=0)``, a
two-layer bidirectional GRU over ``pack_padded_sequence(enforce_sorted=False)``, per-token tags
with ``ignore_index`` and ``label_smoothing``, and a masked mean over the tokens for the
sentence's label; the embedding is frozen with ``requires_grad_(False)`` halfway."""

import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

VOCAB, TAGS, IGNORE = 30, 4, -100  # tokens 1..29: tag = token % 4; sentence label = tag 0 > tag 1


class ForeachAdamW(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            grads = [p.grad for p in params]
            for p in params:
                if not self.state[p]:
                    self.state[p] = {
                        "step": 0,
                        "exp_avg": torch.zeros_like(p),
                        "exp_avg_sq": torch.zeros_like(p),
                    }
                self.state[p]["step"] += 1
            exp_avgs = [self.state[p]["exp_avg"] for p in params]
            exp_avg_sqs = [self.state[p]["exp_avg_sq"] for p in params]
            beta1, beta2 = group["betas"]
            torch._foreach_mul_(params, 1 - group["lr"] * group["weight_decay"])
            torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)
            torch._foreach_mul_(exp_avg_sqs, beta2)
            torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
            steps = [self.state[p]["step"] for p in params]
            step_sizes = [-group["lr"] / (1 - beta1**s) for s in steps]
            corrections = [(1 - beta2**s) ** 0.5 for s in steps]
            denoms = torch._foreach_div(torch._foreach_sqrt(exp_avg_sqs), corrections)
            torch._foreach_add_(denoms, group["eps"])
            torch._foreach_addcdiv_(params, exp_avgs, denoms, step_sizes)


class Tagger(nn.Module):
    def __init__(self, dims=12, hidden=16):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, dims, padding_idx=0)
        self.gru = nn.GRU(dims, hidden, num_layers=2, batch_first=True, bidirectional=True)
        self.tag_head = nn.Linear(2 * hidden, TAGS)
        self.sentence_head = nn.Sequential(nn.LayerNorm(2 * hidden), nn.Linear(2 * hidden, 2))

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(
            self.embedding(tokens), lengths, batch_first=True, enforce_sorted=False
        )
        out, _ = self.gru(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=tokens.size(1))
        mask = (tokens != 0).unsqueeze(-1).float()
        pooled = (out * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        return self.tag_head(out), self.sentence_head(pooled)


def make_batch(rng, n):
    sentences = [torch.from_numpy(rng.integers(1, VOCAB, rng.integers(2, 9))) for _ in range(n)]
    lengths = torch.tensor([len(s) for s in sentences])
    tokens = pad_sequence(sentences, batch_first=True)
    tags = pad_sequence([s % TAGS for s in sentences], batch_first=True, padding_value=IGNORE)
    labels = torch.stack(
        [((s % TAGS == 0).sum() > (s % TAGS == 1).sum()).long() for s in sentences]
    )
    return tokens, lengths, tags, labels


def build():
    return Tagger()


def train(model, epochs=4):
    rng = np.random.default_rng(5)
    batches = [make_batch(rng, 8) for _ in range(3)]
    val = make_batch(rng, 16)
    optimizer = ForeachAdamW(model.parameters(), lr=0.01, weight_decay=0.01)
    ema = copy.deepcopy(model).requires_grad_(False)

    def update_ema(opt, args, kwargs):
        with torch.no_grad():
            torch._foreach_lerp_(list(ema.parameters()), list(model.parameters()), 0.3)

    optimizer.register_step_post_hook(update_ema)
    losses = []
    for epoch in range(epochs):
        if epoch == epochs // 2:
            model.embedding.requires_grad_(False)
            model.embedding.weight.grad = None
        for tokens, lengths, tags, labels in batches:
            tag_logits, sentence_logits = model(tokens, lengths)
            tag_loss = F.cross_entropy(
                tag_logits.reshape(-1, TAGS),
                tags.reshape(-1),
                ignore_index=IGNORE,
                label_smoothing=0.1,
            )
            loss = tag_loss + 0.5 * F.cross_entropy(sentence_logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        with torch.no_grad():
            tag_logits, sentence_logits = ema(val[0], val[1])
            keep = val[2] != IGNORE
            tag_acc = (tag_logits.argmax(-1)[keep] == val[2][keep]).float().mean()
            sentence_acc = (sentence_logits.argmax(-1) == val[3]).float().mean()
        losses += [tag_acc.item(), sentence_acc.item()]
        print(
            f"epoch {epoch}: loss {losses[-3]:.4f} EMA tag acc {tag_acc.item():.3f} "
            f"sentence acc {sentence_acc.item():.3f}"
        )
    return losses


if __name__ == "__main__":
    torch.manual_seed(0)
    train(build())
