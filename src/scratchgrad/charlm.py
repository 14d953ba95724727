"""``scratchgrad train --task charlm``: a character-level language model trained from scratch.

This file is meant to be read. It is an ordinary PyTorch-style program written only with
scratchgrad's public API (after nanoGPT's Shakespeare-char recipe): the data, a small GPT
(token and position embeddings, pre-norm blocks of causal self-attention and a GELU MLP, a final
LayerNorm, the output layer tied to the token embedding), an LSTM alternative, the training
loop (AdamW, warm-up then cosine decay, gradient clipping), held-out evaluation, a checkpoint
and sampling with temperature and top-k. ``scratchgrad sample CHECKPOINT`` reads the checkpoint.

>>> model = GPT(GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_head=2, n_embd=8))
>>> model(sg.zeros(3, 8, dtype=sg.int64)).shape  # (batch, time, vocab) logits
scratchgrad.Size([3, 8, 10])
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import functional as F
from scratchgrad.train import AMP_DTYPES, check_replayable, prepare_out

# ---- the data: characters as integers ------------------------------------------------------


class CharData:
    """A text as integer ids (one per distinct character), split into training and held-out
    parts (the last ``held_out`` fraction), with random batches of ``block_size`` windows."""

    def __init__(self, text: str, held_out: float = 0.1) -> None:
        self.chars = "".join(sorted(set(text)))
        self.index = {c: i for i, c in enumerate(self.chars)}
        ids = np.array([self.index[c] for c in text], dtype=np.int64)
        split = int(len(ids) * (1 - held_out))
        self.train, self.val = ids[:split], ids[split:]

    def encode(self, text: str) -> list[int]:
        return [self.index[c] for c in text]

    def decode(self, ids) -> str:
        return "".join(self.chars[i] for i in ids)

    def batch(self, split: str, batch_size: int, block_size: int, rng: np.random.Generator):
        """Inputs and targets (the inputs shifted by one character), both (batch, block)."""
        ids = self.train if split == "train" else self.val
        starts = rng.integers(len(ids) - block_size, size=batch_size)
        window = starts[:, None] + np.arange(block_size)
        return sg.from_numpy(ids[window]), sg.from_numpy(ids[window + 1])


# ---- the GPT --------------------------------------------------------------------------------


@dataclass
class GPTConfig:
    vocab_size: int = 65
    block_size: int = 64  # the longest context the model sees
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention in which each position sees only itself and the past."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.n_head = config.n_head
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)  # the three projections in one
        self.proj = nn.Linear(config.n_embd, config.n_embd)
        self.dropout = config.dropout
        self.resid_dropout = nn.Dropout(config.dropout)

    def forward(self, x: sg.Tensor) -> sg.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        # (B, T, C) -> (B, heads, T, head size): the heads attend independently
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        dropout = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout)
        y = y.transpose(1, 2).reshape(B, T, C)  # the heads side by side again
        return self.resid_dropout(self.proj(y))


class MLP(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.gelu = nn.GELU()
        self.proj = nn.Linear(4 * config.n_embd, config.n_embd)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: sg.Tensor) -> sg.Tensor:
        return self.dropout(self.proj(self.gelu(self.fc(x))))


class Block(nn.Module):
    """A pre-norm Transformer block: x + attention(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x: sg.Tensor) -> sg.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)  # token embeddings
        self.wpe = nn.Embedding(config.block_size, config.n_embd)  # position embeddings
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying: one matrix reads and writes tokens
        self.apply(_init_weights)
        for name, p in self.named_parameters():  # GPT-2's scaled init of the residual outputs
            if name.endswith("proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def forward(self, idx: sg.Tensor) -> sg.Tensor:
        """Logits of the next character at every position: (batch, time, vocab)."""
        length = idx.shape[1]
        if length > self.config.block_size:
            raise ValueError(
                f"GPT: a sequence of {length} is longer than block_size {self.config.block_size}"
            )
        x = self.drop(self.wte(idx) + self.wpe(sg.arange(length, device=idx.device)))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# ---- the LSTM alternative -------------------------------------------------------------------


@dataclass
class LSTMConfig:
    vocab_size: int = 65
    block_size: int = 64  # the training windows' length (the state starts at zero in each)
    n_layer: int = 2
    n_embd: int = 64
    hidden_size: int = 256
    dropout: float = 0.0


class CharLSTM(nn.Module):
    """Embedding, a stacked LSTM over the window, and a linear read-out at every position."""

    def __init__(self, config: LSTMConfig) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.lstm = nn.LSTM(
            config.n_embd, config.hidden_size, config.n_layer, batch_first=True,
            dropout=config.dropout,
        )  # fmt: skip
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size)

    def forward(self, idx: sg.Tensor) -> sg.Tensor:
        output, _ = self.lstm(self.wte(idx))
        return self.lm_head(output)


MODELS = {"gpt": (GPT, GPTConfig), "lstm": (CharLSTM, LSTMConfig)}


def _init_weights(module: nn.Module) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


# ---- training -------------------------------------------------------------------------------


@dataclass
class TrainConfig:
    steps: int = 2000
    batch_size: int = 12
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup: int = 100
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    eval_every: int = 250
    eval_batches: int = 20
    seed: int = 0
    amp: str | None = None  # "bf16" or "fp16" (with a GradScaler): the forward under autocast
    jit: bool = False  # each step recorded once, then replayed (scratchgrad.jit)


def build_model(name: str, vocab_size: int, config: dict | None = None) -> nn.Module:
    """The GPT or the LSTM of their configs' defaults (``config`` overrides them)."""
    if name not in MODELS:
        raise ValueError(f"charlm: unknown model {name!r}; choose from {', '.join(MODELS)}")
    model, model_config = MODELS[name]
    return model(model_config(vocab_size=vocab_size, **(config or {})))


def model_config(model: nn.Module) -> dict:
    return asdict(model.config)


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up to ``lr``, then cosine decay to ``min_lr`` at the last step."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * min(progress, 1.0)))


def make_optimizer(model: nn.Module, cfg: TrainConfig) -> sg.optim.AdamW:
    """AdamW; matrices decay, biases and LayerNorm weights do not (as nanoGPT)."""
    params = list(model.parameters())
    groups = [
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": cfg.weight_decay},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
    ]
    return sg.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.99))


@sg.no_grad()
def evaluate(model: nn.Module, data: CharData, cfg: TrainConfig, block_size: int) -> dict:
    """Mean cross-entropy (nats per character) on the same fixed batches every time."""
    model.eval()
    losses = {}
    for split in ("train", "val"):
        rng = np.random.default_rng(1234)
        total = 0.0
        for _ in range(cfg.eval_batches):
            x, y = data.batch(split, cfg.batch_size, block_size, rng)
            total += F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item()
        losses[split] = total / cfg.eval_batches
    model.train()
    return losses


def train(
    model_name: str = "gpt",
    cfg: TrainConfig | None = None,
    model_overrides: dict | None = None,
    text: str | None = None,
    out: Path | None = Path("runs/charlm"),
    progress: bool = True,
) -> dict:
    """Train on ``text`` (the shipped Shakespeare by default); returns the history."""
    cfg = cfg or TrainConfig()
    check_replayable(cfg.jit, cfg.amp)
    if out is not None:
        prepare_out(Path(out))
    sg.manual_seed(cfg.seed)
    data = CharData(sg.datasets.load_shakespeare() if text is None else text)
    model = build_model(model_name, len(data.chars), model_overrides)
    block_size = model.config.block_size
    opt = make_optimizer(model, cfg)
    rng = np.random.default_rng(cfg.seed)
    print(
        f"charlm {model_name}: {sum(p.numel() for p in model.parameters()):,} parameters, "
        f"{len(data.train):,} training and {len(data.val):,} held-out characters, "
        f"vocabulary {len(data.chars)}"
    )
    history = {"step": [], "train": [], "val": [], "seconds": [], "loss": []}
    autocast = sg.autocast("cpu", dtype=AMP_DTYPES.get(cfg.amp), enabled=cfg.amp is not None)
    scaler = sg.amp.GradScaler(enabled=cfg.amp == "fp16")

    def train_step(x: sg.Tensor, y: sg.Tensor) -> sg.Tensor:
        """One update at the learning rate the param groups hold; the batch's loss."""
        with autocast:
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)  # clip the true gradients (a no-op without fp16)
        nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        scaler.step(opt)
        scaler.update()
        return loss.detach()

    if cfg.jit:
        train_step = sg.jit(train_step)
    start = time.perf_counter()
    bar = tqdm(range(cfg.steps + 1), desc="charlm", unit="step", disable=not progress)
    for step in bar:
        if step % cfg.eval_every == 0 or step == cfg.steps:
            losses = evaluate(model, data, cfg, block_size)
            elapsed = time.perf_counter() - start
            for key, value in (("step", step), ("seconds", elapsed), *losses.items()):
                history[key].append(value)
            bar.write(
                f"step {step:>5}: train {losses['train']:.4f}, held-out {losses['val']:.4f} "
                f"nats/char ({elapsed:.0f} s)"
            )
        if step == cfg.steps:
            break
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        x, y = data.batch("train", cfg.batch_size, block_size, rng)
        value = train_step(x, y).item()
        if not math.isfinite(value):  # the run stops here: the step's update is never saved
            raise FloatingPointError(
                f"train: the loss became {value} at step {step}; "
                f"try a smaller learning rate than {cfg.lr}"
            )
        history["loss"].append(value)
        bar.set_postfix(loss=f"{value:.4f}", refresh=False)
    history["model"], history["data"] = model, data
    if out is not None:
        _write_outputs(model, model_name, data, history, Path(out))
    return history


def _write_outputs(model, model_name: str, data: CharData, history: dict, out: Path) -> None:
    checkpoint = out / f"charlm_{model_name}.safetensors"
    save_checkpoint(model, model_name, data.chars, checkpoint)
    print(f"checkpoint: {checkpoint}")
    curves = out / f"charlm_{model_name}_curves.png"
    if plot_curves(history, curves):
        print(f"curves: {curves}")
    else:
        print("curves: install matplotlib (pip install 'scratchgrad[plot]') to get the plot")


def save_checkpoint(model: nn.Module, model_name: str, chars: str, path: Path) -> None:
    """The weights, and in the file's metadata the model's name, its config and vocabulary."""
    sg.save(
        {"model_name": model_name, "config": model_config(model), "chars": chars,
         "model": model.state_dict()},
        path,
    )  # fmt: skip


def load_checkpoint(path: Path) -> tuple[nn.Module, str]:
    """The model (in eval mode) and its vocabulary, from a file ``save_checkpoint`` wrote."""
    checkpoint = sg.load(path)
    config = dict(checkpoint["config"])
    vocab_size = config.pop("vocab_size")
    model = build_model(checkpoint["model_name"], vocab_size, config)
    model.load_state_dict(checkpoint["model"])
    return model.eval(), checkpoint["chars"]


def plot_curves(history: dict, path: Path) -> bool:
    """Training loss per step and held-out loss per evaluation; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(range(len(history["loss"])), history["loss"], alpha=0.3, label="training batch")
    ax.plot(history["step"], history["train"], marker="o", label="training (eval batches)")
    ax.plot(history["step"], history["val"], marker="o", label="held out")
    ax.axhline(1.9, color="gray", linestyle="--", linewidth=1, label="1.9 nats/char")
    ax.set(xlabel="step", ylabel="cross-entropy (nats/char)", ylim=(1.0, 4.5))
    ax.set_title("charlm: Shakespeare, character level")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


# ---- sampling -------------------------------------------------------------------------------


@sg.no_grad()
def generate(
    model: nn.Module,
    ids: list[int],
    length: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    generator: sg.Generator | None = None,
) -> list[int]:
    """Extend ``ids`` by ``length`` characters, each drawn from the model's distribution
    (divided by ``temperature``; only the ``top_k`` likeliest when given)."""
    if temperature <= 0:
        raise ValueError(f"sample: temperature must be > 0, got {temperature}")
    idx = sg.tensor([ids], dtype=sg.int64)
    for _ in range(length):
        context = idx[:, -model.config.block_size :]
        logits = model(context)[:, -1, :] / temperature
        if top_k is not None:
            kth = logits.topk(min(top_k, logits.shape[-1])).values[:, -1:]
            logits = logits.masked_fill(logits < kth, -math.inf)
        probs = F.softmax(logits, dim=-1)
        idx = sg.cat([idx, probs.multinomial(1, generator=generator)], dim=1)
    return idx[0].tolist()


def sample_text(
    model: nn.Module,
    chars: str,
    prompt: str = "\n",
    length: int = 500,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int = 0,
) -> str:
    """The prompt followed by ``length`` sampled characters."""
    unknown = sorted(set(prompt) - set(chars))
    if unknown:
        raise ValueError(f"sample: the prompt has characters the model never saw: {unknown}")
    index = {c: i for i, c in enumerate(chars)}
    ids = generate(
        model, [index[c] for c in prompt], length, temperature, top_k, sg.Generator(seed)
    )
    return "".join(chars[i] for i in ids)


# ---- the command line -----------------------------------------------------------------------


def main(args: argparse.Namespace) -> int:
    """``scratchgrad train --task charlm``."""
    defaults = TrainConfig()
    cfg = TrainConfig(
        steps=args.steps or defaults.steps,
        batch_size=args.batch_size or defaults.batch_size,
        lr=args.lr or defaults.lr,
        eval_every=args.eval_every or defaults.eval_every,
        seed=args.seed,
        amp=args.amp,
        jit=args.jit,
    )
    model_name = args.model or "gpt"
    history = train(model_name, cfg, out=args.out or Path("runs/charlm"))
    print("sample (temperature 0.8, top-k 20):")
    print(sample_text(history["model"], history["data"].chars, "\n", 400, 0.8, 20, args.seed))
    print(
        f"final held-out loss: {history['val'][-1]:.4f} nats/char after {cfg.steps} steps "
        f"({history['seconds'][-1]:.0f} s)"
    )
    return 0


def sample_main(args: argparse.Namespace) -> int:
    """``scratchgrad sample CHECKPOINT``."""
    model, chars = load_checkpoint(args.checkpoint)
    print(
        sample_text(model, chars, args.prompt, args.length, args.temperature, args.top_k, args.seed)
    )
    return 0
