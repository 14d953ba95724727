"""A tiny denoising diffusion model (DDPM, Ho et al. 2020) on 2-D points of a noisy ring: a
linear beta schedule kept as float64 buffers, a residual MLP that reads sinusoidal timestep
embeddings, the simple noise-prediction loss, AdamW with gradient clipping and warmup, an EMA
copy of the weights, and reverse sampling with the EMA model through the posterior mean and
clipped variance (data, timesteps and noise drawn with NumPy so both libraries see the same)."""

import copy
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def ring(rng, n):
    theta = rng.uniform(0, 2 * math.pi, n)
    r = 1.0 + 0.05 * rng.standard_normal(n)
    return np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1).astype(np.float32)


def extract(a, t, x_shape):
    b, *_ = t.shape
    out = a.gather(-1, t)
    return out.reshape(b, *((1,) * (len(x_shape) - 1)))


class SinusoidalPosEmb(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, t):
        half = self.dim // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, device=t.device) / half)
        args = t[:, None].float() * freqs[None]
        return torch.cat([torch.sin(args), torch.cos(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, dim, time_dim):
        super().__init__()
        self.norm = nn.GroupNorm(4, dim)
        self.fc = nn.Linear(dim, dim)
        self.time = nn.Linear(time_dim, dim * 2)
        self.act = nn.SiLU()

    def forward(self, x, t_emb):
        scale, shift = self.time(t_emb).chunk(2, dim=-1)
        h = self.norm(x) * (scale + 1) + shift
        return x + self.fc(self.act(h))


class Denoiser(nn.Module):
    def __init__(self, hidden=32, emb_dim=16):
        super().__init__()
        self.time_mlp = nn.Sequential(
            SinusoidalPosEmb(emb_dim), nn.Linear(emb_dim, hidden), nn.SiLU()
        )
        self.inp = nn.Linear(2, hidden)
        self.blocks = nn.ModuleList([ResBlock(hidden, hidden) for _ in range(2)])
        self.out = nn.Sequential(nn.LayerNorm(hidden), nn.SiLU(), nn.Linear(hidden, 2))

    def forward(self, x, t):
        t_emb = self.time_mlp(t)
        h = self.inp(x)
        for block in self.blocks:
            h = block(h, t_emb)
        return self.out(h)


class GaussianDiffusion(nn.Module):
    def __init__(self, model, timesteps=50):
        super().__init__()
        self.model = model
        self.num_timesteps = timesteps
        betas = torch.linspace(1e-4, 0.02, timesteps, dtype=torch.float64)
        alphas = 1.0 - betas
        alphas_cumprod = torch.cumprod(alphas, dim=0)
        alphas_cumprod_prev = F.pad(alphas_cumprod[:-1], (1, 0), value=1.0)
        posterior_variance = betas * (1.0 - alphas_cumprod_prev) / (1.0 - alphas_cumprod)

        def register(name, val):
            self.register_buffer(name, val.to(torch.float32))

        register("betas", betas)
        register("alphas_cumprod", alphas_cumprod)
        register("sqrt_alphas_cumprod", torch.sqrt(alphas_cumprod))
        register("sqrt_one_minus_alphas_cumprod", torch.sqrt(1.0 - alphas_cumprod))
        register("sqrt_recip_alphas_cumprod", torch.sqrt(1.0 / alphas_cumprod))
        register("sqrt_recipm1_alphas_cumprod", torch.sqrt(1.0 / alphas_cumprod - 1))
        register("posterior_log_variance_clipped", torch.log(posterior_variance.clamp(min=1e-20)))
        register(
            "posterior_mean_coef1", betas * torch.sqrt(alphas_cumprod_prev) / (1.0 - alphas_cumprod)
        )
        register(
            "posterior_mean_coef2",
            (1.0 - alphas_cumprod_prev) * torch.sqrt(alphas) / (1.0 - alphas_cumprod),
        )

    def q_sample(self, x_start, t, noise):
        return (
            extract(self.sqrt_alphas_cumprod, t, x_start.shape) * x_start
            + extract(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape) * noise
        )

    def forward(self, x_start, t, noise):
        return F.mse_loss(self.model(self.q_sample(x_start, t, noise), t), noise)

    @torch.inference_mode()
    def p_sample(self, x, t, noise):
        batched_t = torch.full((x.shape[0],), t, device=x.device, dtype=torch.long)
        pred_noise = self.model(x, batched_t)
        x_start = (
            extract(self.sqrt_recip_alphas_cumprod, batched_t, x.shape) * x
            - extract(self.sqrt_recipm1_alphas_cumprod, batched_t, x.shape) * pred_noise
        )
        x_start.clamp_(-1.5, 1.5)
        mean = (
            extract(self.posterior_mean_coef1, batched_t, x.shape) * x_start
            + extract(self.posterior_mean_coef2, batched_t, x.shape) * x
        )
        log_var = extract(self.posterior_log_variance_clipped, batched_t, x.shape)
        return mean + (0.5 * log_var).exp() * noise if t > 0 else mean

    @torch.no_grad()
    def sample(self, rng, n=64):
        x = torch.from_numpy(rng.standard_normal((n, 2)).astype(np.float32))
        for t in reversed(range(0, self.num_timesteps)):
            noise = torch.from_numpy(rng.standard_normal((n, 2)).astype(np.float32))
            x = self.p_sample(x, t, noise)
        return x


def build():
    return GaussianDiffusion(Denoiser())


@torch.no_grad()
def update_ema(ema, model, decay=0.9):
    for p_ema, p in zip(ema.parameters(), model.parameters()):
        p_ema.mul_(decay).add_(p.detach(), alpha=1 - decay)
    for b_ema, b in zip(ema.buffers(), model.buffers()):
        b_ema.copy_(b)


def train(diffusion, steps=8, batch_size=64):
    rng = np.random.default_rng(0)
    data = torch.from_numpy(ring(rng, 512))
    ema = copy.deepcopy(diffusion)
    ema.requires_grad_(False)
    optimizer = torch.optim.AdamW(diffusion.parameters(), lr=2e-3, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 4))
    losses = []
    diffusion.train()
    for step in range(steps):
        idx = torch.from_numpy(rng.integers(0, len(data), batch_size))
        x0 = data[idx]
        t = torch.from_numpy(rng.integers(0, diffusion.num_timesteps, batch_size)).long()
        noise = torch.from_numpy(rng.standard_normal((batch_size, 2)).astype(np.float32))
        loss = diffusion(x0, t, noise)
        optimizer.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(diffusion.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        update_ema(ema, diffusion)
        losses.append(loss.item())
        print(f"step {step}: loss {loss.item():.4f} grad norm {grad_norm.item():.4f}")
    with torch.no_grad():  # a last, heavier blend towards the trained weights (as timm's EMA)
        torch._foreach_lerp_(list(ema.parameters()), list(diffusion.parameters()), 0.5)
    ema.eval()
    x = ema.sample(rng)
    print(f"samples: mean {x.mean().item():.4f} std {x.std().item():.4f}")
    losses += [x.mean().item(), x.std().item(), x.norm(dim=1).mean().item()]
    return losses


if __name__ == "__main__":
    train(build())
