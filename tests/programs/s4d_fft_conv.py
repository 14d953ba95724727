"""An S4D layer (Gu et al., 2022, "On the Parameterization and Initialization of Diagonal State
Space Models") as its minimal PyTorch reference writes it: a diagonal complex state matrix kept
as real parameters (``log_A_real`` and ``A_imag``) and a complex ``C`` viewed through
``torch.view_as_complex``, a ZOH-discretized kernel from ``torch.exp`` of complex numbers and a
Vandermonde product, a long convolution by ``torch.fft.rfft``/``irfft``, a skip ``D``, GLU
output mixing and dropout-free residual blocks; a sequence classification task (the sign of a
sum far back in the sequence) trained with Adam whose state-space parameters get their own
learning rate and no weight decay through parameter groups."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class S4DKernel(nn.Module):
    def __init__(self, d_model, N=8, dt_min=0.01, dt_max=0.1):
        super().__init__()
        H = d_model
        log_dt = torch.rand(H) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)
        C = torch.randn(H, N // 2, dtype=torch.cfloat)
        self.C = nn.Parameter(torch.view_as_real(C))
        self.log_dt = nn.Parameter(log_dt)
        self.log_A_real = nn.Parameter(torch.log(0.5 * torch.ones(H, N // 2)))
        self.A_imag = nn.Parameter(math.pi * torch.arange(N // 2).float().repeat(H, 1))

    def forward(self, L):
        """The (H, L) convolution kernel."""
        dt = torch.exp(self.log_dt)  # (H)
        C = torch.view_as_complex(self.C)  # (H N)
        A = -torch.exp(self.log_A_real) + 1j * self.A_imag  # (H N)
        dtA = A * dt.unsqueeze(-1)  # (H N)
        K = dtA.unsqueeze(-1) * torch.arange(L, device=A.device)  # (H N L)
        C = C * (torch.exp(dtA) - 1.0) / A
        return 2 * torch.einsum("hn, hnl -> hl", C, torch.exp(K)).real


class S4D(nn.Module):
    def __init__(self, d_model, d_state=8):
        super().__init__()
        self.D = nn.Parameter(torch.randn(d_model))
        self.kernel = S4DKernel(d_model, N=d_state)
        self.activation = nn.GELU()
        self.output_linear = nn.Sequential(
            nn.Conv1d(d_model, 2 * d_model, kernel_size=1), nn.GLU(dim=-2)
        )

    def forward(self, u):  # (B, H, L)
        L = u.size(-1)
        k = self.kernel(L=L)
        k_f = torch.fft.rfft(k, n=2 * L)
        u_f = torch.fft.rfft(u, n=2 * L)
        y = torch.fft.irfft(u_f * k_f, n=2 * L)[..., :L]  # causal convolution of length L
        y = y + u * self.D.unsqueeze(-1)
        return self.output_linear(self.activation(y))


class S4Model(nn.Module):
    def __init__(self, d_input=1, d_output=2, d_model=8, n_layers=2):
        super().__init__()
        self.encoder = nn.Linear(d_input, d_model)
        self.s4_layers = nn.ModuleList(S4D(d_model) for _ in range(n_layers))
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(n_layers))
        self.decoder = nn.Linear(d_model, d_output)

    def forward(self, x):  # (B, L, d_input)
        x = self.encoder(x).transpose(-1, -2)  # (B, H, L)
        for layer, norm in zip(self.s4_layers, self.norms):
            z = norm(x.transpose(-1, -2)).transpose(-1, -2)  # pre-norm over the channels
            x = x + layer(z)
        return self.decoder(x.transpose(-1, -2).mean(dim=1))


def build():
    return S4Model()


def setup_optimizer(model, lr=1e-2, weight_decay=0.01, ssm_lr=1e-3):
    ssm_names = ("log_dt", "log_A_real", "A_imag", "C")
    ssm = [p for n, p in model.named_parameters() if n.split(".")[-1] in ssm_names]
    others = [p for n, p in model.named_parameters() if n.split(".")[-1] not in ssm_names]
    return torch.optim.AdamW(
        [
            {"params": others},
            {"params": ssm, "lr": ssm_lr, "weight_decay": 0.0},
        ],
        lr=lr,
        weight_decay=weight_decay,
    )


def train(model, steps=10, seq_len=32):
    rng = np.random.default_rng(0)
    optimizer = setup_optimizer(model)
    losses = []
    for step in range(steps):
        x = rng.standard_normal((16, seq_len, 1)).astype(np.float32)
        y = (x[:, :8, 0].sum(axis=1) > 0).astype(np.int64)  # decided by the first 8 steps
        logits = model(torch.from_numpy(x))
        loss = F.cross_entropy(logits, torch.from_numpy(y))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        accuracy = (logits.argmax(-1) == torch.from_numpy(y)).float().mean().item()
        print(f"step {step}: loss {loss.item():.4f} acc {accuracy:.3f}")
    return losses


if __name__ == "__main__":
    train(build())
