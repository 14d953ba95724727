"""Camera geometry with autograd: a pinhole camera with radial distortion looks at a cloud of 3-D
points (made with NumPy, observed with pixel noise). Three classic steps:
1. Kabsch/Procrustes: the rotation between two copies of the cloud from ``torch.linalg.svd``
   (in float64), with the determinant's sign fixed so that it is a rotation, and its angular
   error (``acos``).
2. Pose refinement: an axis-angle rotation (Rodrigues' formula with ``torch.linalg.cross``),
   a translation and a log focal length, trained with Adam on the reprojection error under a
   Huber loss, starting near the truth.
3. Distortion fit: with the pose fixed, the radial coefficients k1, k2 are linear in the
   residuals, solved with ``torch.vander`` (powers of r^2) and ``torch.linalg.lstsq``.
"""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate(axis_angle, points):
    """Rodrigues: v cos t + (k x v) sin t + k (k . v)(1 - cos t), k the unit axis, t the angle."""
    angle = torch.linalg.vector_norm(axis_angle)
    k = (axis_angle / angle).expand_as(points)
    cos, sin = torch.cos(angle), torch.sin(angle)
    along = (k * points).sum(-1, keepdim=True)
    return points * cos + torch.linalg.cross(k, points, dim=-1) * sin + k * along * (1 - cos)


def project(points, focal, centre, k1=0.0, k2=0.0):
    normalized = points[:, :2] / points[:, 2:]
    r2 = normalized.square().sum(-1, keepdim=True)
    return focal * normalized * (1 + k1 * r2 + k2 * r2**2) + centre


def kabsch(source, target):
    """The rotation R minimising |R source_i - target_i| over the centred clouds."""
    src, tgt = source - source.mean(0), target - target.mean(0)
    u, _, vh = torch.linalg.svd(tgt.T @ src)
    sign = torch.sign(torch.linalg.det(u @ vh))
    return u @ torch.diag(torch.stack([torch.ones(()), torch.ones(()), sign]).to(u.dtype)) @ vh


def rotation_angle(r):
    return torch.acos(((torch.trace(r) - 1) / 2).clamp(-1, 1))


class Camera(nn.Module):
    def __init__(self):
        super().__init__()
        self.axis_angle = nn.Parameter(torch.tensor([0.12, -0.28, 0.05]))
        self.translation = nn.Parameter(torch.tensor([0.05, -0.1, 2.7]))
        self.log_focal = nn.Parameter(torch.tensor(math.log(280.0)))

    def forward(self, points, centre):
        camera_points = rotate(self.axis_angle, points) + self.translation
        return project(camera_points, self.log_focal.exp(), centre)


def scene(rng, count=60):
    points = rng.uniform(-1, 1, (count, 3)).astype(np.float32)
    axis_angle, translation = np.array([0.1, -0.3, 0.08]), np.array([0.0, -0.1, 2.5])
    return (
        torch.tensor(points),
        torch.tensor(axis_angle, dtype=torch.float32),
        torch.tensor(translation, dtype=torch.float32),
    )


def build():
    return Camera()


def train(model, steps=10):
    rng = np.random.default_rng(0)
    points, true_rotation, true_translation = scene(rng)
    centre, focal, k1, k2 = torch.tensor([160.0, 120.0]), 300.0, -0.15, 0.04
    noise = torch.tensor(rng.normal(0, 0.2, (len(points), 2)).astype(np.float32))
    camera_points = rotate(true_rotation, points) + true_translation
    observed = project(camera_points, focal, centre, k1, k2) + noise
    undistorted = project(camera_points, focal, centre) + noise

    # in float64: the angle's acos near 1 would amplify float32's rounding of the trace
    cloud, rotation = points.double(), true_rotation.double()
    moved = rotate(rotation, cloud) + 0.01 * noise.double().sum(-1, keepdim=True)
    estimate = kabsch(cloud, moved)
    truth = rotate(rotation, torch.eye(3, dtype=torch.float64)).T
    error = rotation_angle(estimate.T @ truth)
    print(f"Kabsch rotation error {math.degrees(error.item()):.4f} deg")
    losses = [error.item(), torch.linalg.det(estimate).item()]

    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for step in range(steps):
        loss = F.huber_loss(model(points, centre), undistorted, delta=2.0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"step {step}: reprojection loss {loss.item():.4f}")

    with torch.no_grad():
        ideal = rotate(true_rotation, points) + true_translation
        normalized = ideal[:, :2] / ideal[:, 2:]
        r2 = normalized.square().sum(-1)
        powers = torch.vander(r2, N=3, increasing=True)[:, 1:]  # r^2, r^4
        design = (focal * normalized.unsqueeze(-1) * powers.unsqueeze(1)).reshape(-1, 2)
        residual = (observed - project(ideal, focal, centre)).reshape(-1, 1)
        k = torch.linalg.lstsq(design, residual).solution.squeeze(1)
        print(f"distortion k1 {k[0].item():.4f} (true {k1}), k2 {k[1].item():.4f} (true {k2})")
        angle = torch.atan2(normalized[:, 1], normalized[:, 0])
        losses += [*k.tolist(), angle.abs().mean().item(), model.log_focal.exp().item()]
    return losses


if __name__ == "__main__":
    train(build())
