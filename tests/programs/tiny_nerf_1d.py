"""A toy NeRF (Mildenhall et al., 2020) in a flat 2-D world, each pixel a 1-D integral along its
ray: rays from cameras on a circle look at two coloured discs; the radiance field is an MLP on
sin/cos positional encodings of the point (frequencies 2^k) giving a density, and a colour that
also depends on the viewing direction; each ray is rendered by alpha compositing with the
exclusive transmittance ``torch.cumprod`` of ``cat([ones, 1 - alpha])``. As in the paper, a
coarse network samples each ray at stratified ``torch.linspace`` depths, and a fine network adds
samples drawn from the coarse weights' CDF with ``torch.searchsorted`` and ``gather`` under
``no_grad`` (at evenly spaced quantiles). Target pixels are rendered analytically with NumPy;
Adam on the sum of both networks' photometric losses, PSNR printed. The stratification jitter is
drawn with NumPy, so both libraries sample the same depths."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

near, far = 0.5, 3.5
jitter = np.random.default_rng(0)
discs = [((0.4, 0.2), 0.45, (0.9, 0.2, 0.1)), ((-0.5, -0.3), 0.35, (0.1, 0.4, 0.9))]


def make_rays(num_cameras=8, rays_per_camera=16):
    """Cameras on a circle of radius 2 look at the origin over a 60 degree field of view."""
    angles = np.linspace(0, 2 * np.pi, num_cameras, endpoint=False)
    spread = np.linspace(-np.pi / 6, np.pi / 6, rays_per_camera)
    origins = np.repeat(2.0 * np.stack([np.cos(angles), np.sin(angles)], -1), rays_per_camera, 0)
    heading = (angles[:, None] + np.pi + spread[None, :]).reshape(-1)
    dirs = np.stack([np.cos(heading), np.sin(heading)], -1)
    return origins.astype(np.float32), dirs.astype(np.float32)


def true_colours(origins, dirs, background=1.0):
    """The colour of the first disc each ray hits (discs are opaque), white where none."""
    colours = np.full((len(origins), 3), background)
    depth = np.full(len(origins), np.inf)
    for centre, radius, colour in discs:
        oc = origins - np.array(centre)
        b = (oc * dirs).sum(-1)
        disc = b**2 - ((oc**2).sum(-1) - radius**2)
        t = -b - np.sqrt(np.maximum(disc, 0))
        hit = (disc > 0) & (t > 0) & (t < depth)
        depth[hit] = t[hit]
        colours[hit] = colour
    return colours.astype(np.float32)


def positional_encoding(x, num_freqs):
    """[x, sin(2^k pi x), cos(2^k pi x) for k < num_freqs] along the last dim."""
    freqs = 2.0 ** torch.arange(num_freqs, dtype=x.dtype, device=x.device) * math.pi
    scaled = (x.unsqueeze(-1) * freqs).flatten(-2)
    return torch.cat([x, torch.sin(scaled), torch.cos(scaled)], dim=-1)


class RadianceField(nn.Module):
    """Density from the point alone; colour also from the viewing direction, as in NeRF."""

    def __init__(self, num_freqs=4, dir_freqs=2, hidden=32):
        super().__init__()
        self.num_freqs, self.dir_freqs = num_freqs, dir_freqs
        self.trunk = nn.Sequential(
            nn.Linear(2 + 4 * num_freqs, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
        )
        self.density = nn.Linear(hidden, 1)
        self.feature = nn.Linear(hidden, hidden)
        self.colour = nn.Sequential(
            nn.Linear(hidden + 2 + 4 * dir_freqs, hidden // 2), nn.ReLU(), nn.Linear(hidden // 2, 3)
        )

    def forward(self, points, viewdirs):
        h = self.trunk(positional_encoding(points, self.num_freqs))
        sigma = F.softplus(self.density(h)).squeeze(-1)
        h = torch.cat([self.feature(h), positional_encoding(viewdirs, self.dir_freqs)], dim=-1)
        return sigma, torch.sigmoid(self.colour(h))


def render(field, origins, dirs, t, background=1.0):
    """Alpha-composite the field along rays at depths t (R, S); returns colours and weights."""
    points = origins[:, None, :] + t[..., None] * dirs[:, None, :]
    viewdirs = dirs / torch.norm(dirs, dim=-1, keepdim=True)
    sigma, rgb = field(points, viewdirs[:, None, :].expand(points.shape))
    delta = t[:, 1:] - t[:, :-1]
    delta = torch.cat([delta, torch.full_like(delta[:, :1], 1e10)], dim=-1)
    alpha = 1.0 - torch.exp(-sigma * delta)
    ones = torch.ones_like(alpha[:, :1])
    transmittance = torch.cumprod(torch.cat([ones, 1.0 - alpha + 1e-10], dim=-1), dim=-1)[:, :-1]
    weights = alpha * transmittance
    colour = (weights.unsqueeze(-1) * rgb).sum(dim=1)
    colour = colour + (1.0 - weights.sum(dim=-1, keepdim=True)) * background
    return colour, weights


@torch.no_grad()
def sample_pdf(bins, weights, num_samples):
    """Inverse-transform samples of the piecewise-constant pdf given by weights on bins."""
    weights = weights + 1e-5  # no zero-probability bins, so the CDF is strictly increasing
    pdf = weights / weights.sum(dim=-1, keepdim=True)
    cdf = torch.cumsum(pdf, dim=-1)
    cdf = torch.cat([torch.zeros_like(cdf[:, :1]), cdf], dim=-1)
    u = torch.linspace(0.0, 1.0, num_samples, device=bins.device)
    u = u.expand(cdf.shape[0], num_samples).contiguous()
    above = torch.searchsorted(cdf, u, right=True).clamp(max=cdf.shape[-1] - 1)
    below = (above - 1).clamp(min=0)
    index = torch.stack([below, above], dim=-1).view(cdf.shape[0], -1)
    cdf_g = torch.gather(cdf, 1, index).view(cdf.shape[0], num_samples, 2)
    bins_g = torch.gather(bins, 1, index).view(cdf.shape[0], num_samples, 2)
    denom = cdf_g[..., 1] - cdf_g[..., 0]
    denom = torch.where(denom < 1e-5, torch.ones_like(denom), denom)
    frac = (u - cdf_g[..., 0]) / denom
    return bins_g[..., 0] + frac * (bins_g[..., 1] - bins_g[..., 0])


def render_rays(models, origins, dirs, num_coarse=16, num_fine=16, perturb=True):
    t = torch.linspace(near, far, num_coarse, device=origins.device)
    t = t.expand(origins.shape[0], num_coarse)
    mids = 0.5 * (t[:, 1:] + t[:, :-1])
    if perturb:  # one uniform depth in each stratum instead of its left end
        upper = torch.cat([mids, t[:, -1:]], dim=-1)
        lower = torch.cat([t[:, :1], mids], dim=-1)
        u = torch.from_numpy(jitter.random(tuple(t.shape)).astype(np.float32)).to(t.device)
        t = lower + (upper - lower) * u
        mids = 0.5 * (t[:, 1:] + t[:, :-1])
    coarse, weights = render(models["coarse"], origins, dirs, t)
    t_fine = sample_pdf(mids, weights[:, 1:-1], num_fine)
    t_all, _ = torch.sort(torch.cat([t, t_fine], dim=-1), dim=-1)
    fine, _ = render(models["fine"], origins, dirs, t_all)
    return coarse, fine


def build():
    return nn.ModuleDict({"coarse": RadianceField(), "fine": RadianceField()})


img2mse = lambda x, y: torch.mean((x - y) ** 2)  # noqa: E731
mse2psnr = lambda x: -10.0 * torch.log(x) / torch.log(torch.Tensor([10.0]).to(x.device))  # noqa: E731


def train(models, steps=30, batch_size=64, lrate=5e-3, lrate_decay=250):
    global jitter
    jitter = np.random.default_rng(0)  # the same depths in every run
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    origins, dirs = make_rays()
    target = torch.from_numpy(true_colours(origins, dirs)).to(device)
    origins, dirs = torch.from_numpy(origins).to(device), torch.from_numpy(dirs).to(device)
    models = models.to(device)
    optimizer = torch.optim.Adam(models.parameters(), lr=lrate, betas=(0.9, 0.999))
    order = np.random.default_rng(0).permutation(len(origins))
    losses = []
    for step in range(steps):
        batch = torch.from_numpy(order[(step * batch_size + np.arange(batch_size)) % len(order)])
        coarse, fine = render_rays(models, origins[batch], dirs[batch])
        loss_fine = img2mse(fine, target[batch])
        loss = img2mse(coarse, target[batch]) + loss_fine
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        # NeRF's exponential learning-rate decay, written into the param groups by hand
        for param_group in optimizer.param_groups:
            param_group["lr"] = lrate * 0.1 ** ((step + 1) / lrate_decay)
        losses.append(loss.item())
        if step % 10 == 9:
            psnr = mse2psnr(loss_fine.detach()).item()
            print(f"step {step + 1}: loss {loss.item():.4f}  fine PSNR {psnr:.2f}")
    with torch.no_grad():
        _, fine = render_rays(models, origins, dirs, perturb=False)
        losses.append(img2mse(fine, target).item())
    print(f"all rays: fine PSNR {mse2psnr(torch.tensor(losses[-1])).item():.2f} dB")
    return losses


if __name__ == "__main__":
    train(build())
