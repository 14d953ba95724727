"""A SchNet-style machine-learned interatomic potential (Schuett et al., 2017) trained on energies
and forces: atoms carry ``nn.Embedding`` features by species; distances come from the edge
vectors of a neighbour list found with ``torch.cdist`` (self-pairs masked), expanded in Gaussian
radial basis functions under a smooth cosine cutoff; continuous-filter convolutions build each
neighbour's message from those and sum them with ``index_add`` over the edges; the energy is a
sum of per-atom outputs. Forces are ``-dE/dpositions`` from
``torch.autograd.grad(create_graph=True)``, so the force loss trains the weights through a
second derivative. The training data is a Lennard-Jones toy system computed with NumPy: 10
random clusters of 6 atoms of two species, in float64."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

CUTOFF = 3.0


def shifted_softplus(x):
    return F.softplus(x) - math.log(2.0)


class Interaction(nn.Module):
    def __init__(self, features, basis):
        super().__init__()
        self.filter = nn.Sequential(
            nn.Linear(basis, features), nn.Tanh(), nn.Linear(features, features)
        )
        self.into, self.out = (
            nn.Linear(features, features, bias=False),
            nn.Linear(features, features),
        )

    def forward(self, h, rbf, envelope, senders, receivers):
        messages = self.into(h)[senders] * self.filter(rbf) * envelope.unsqueeze(-1)
        aggregated = torch.zeros_like(h).index_add(0, receivers, messages)
        return h + self.out(shifted_softplus(aggregated))


class SchNet(nn.Module):
    def __init__(self, species=2, features=16, basis=12, interactions=2):
        super().__init__()
        self.embedding = nn.Embedding(species, features)
        self.register_buffer("centres", torch.linspace(0.0, CUTOFF, basis))
        self.interactions = nn.ModuleList(Interaction(features, basis) for _ in range(interactions))
        self.readout = nn.Sequential(
            nn.Linear(features, features // 2), nn.Tanh(), nn.Linear(features // 2, 1)
        )

    def forward(self, species, positions):
        n = len(species)
        with torch.no_grad():  # the neighbour list; cdist has no second derivative in PyTorch
            mask = ~torch.eye(n, dtype=torch.bool) & (torch.cdist(positions, positions) < CUTOFF)
        receivers, senders = mask.nonzero(as_tuple=True)
        r = (positions[receivers] - positions[senders]).norm(dim=-1)
        rbf = torch.exp(-4.0 * (r.unsqueeze(-1) - self.centres) ** 2)
        envelope = 0.5 * (torch.cos(math.pi * r / CUTOFF) + 1.0)
        h = self.embedding(species)
        for interaction in self.interactions:
            h = interaction(h, rbf, envelope, senders, receivers)
        return self.readout(h).sum()


def lennard_jones(positions, species):
    """Energy and forces, with sigma and epsilon by species pair (Lorentz-Berthelot rules)."""
    sigma = np.array([1.0, 1.2])[species]
    eps = np.array([1.0, 0.6])[species]
    s = (sigma[:, None] + sigma[None, :]) / 2
    e = np.sqrt(eps[:, None] * eps[None, :])
    diff = positions[:, None] - positions[None, :]
    r = np.linalg.norm(diff, axis=-1) + np.eye(len(positions))
    sr6 = (s / r) ** 6
    pair = 4 * e * (sr6**2 - sr6) * (1 - np.eye(len(positions)))
    dE_dr = 4 * e * (-12 * sr6**2 + 6 * sr6) / r * (1 - np.eye(len(positions)))
    forces = -(dE_dr[..., None] * diff / r[..., None]).sum(1)
    return pair.sum() / 2, forces


def make_clusters(rng, count=10, atoms=6):
    data = []
    for _ in range(count):
        positions = rng.uniform(0, 3.2, (atoms, 3))
        while True:  # redraw clusters with atoms closer than 1.1, so the energies stay moderate
            r = np.linalg.norm(positions[:, None] - positions[None], axis=-1) + 10 * np.eye(atoms)
            if r.min() > 1.1:
                break
            positions = rng.uniform(0, 3.2, (atoms, 3))
        species = rng.integers(0, 2, atoms)
        energy, forces = lennard_jones(positions, species)
        data.append(
            (
                torch.tensor(species),
                torch.tensor(positions),
                torch.tensor(energy),
                torch.tensor(forces),
            )
        )
    return data


def build():
    return SchNet().double()


def train(model, epochs=3, force_weight=1.0):
    data = make_clusters(np.random.default_rng(0))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for epoch in range(epochs):
        total_e, total_f = 0.0, 0.0
        for species, positions, energy, forces in data:
            positions = positions.clone().requires_grad_(True)
            predicted = model(species, positions)
            predicted_forces = -torch.autograd.grad(predicted, positions, create_graph=True)[0]
            energy_loss = (predicted - energy) ** 2
            force_loss = F.mse_loss(predicted_forces, forces)
            loss = energy_loss + force_weight * force_loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total_e += energy_loss.item()
            total_f += force_loss.item()
        losses += [total_e / len(data), total_f / len(data)]
        print(f"epoch {epoch}: energy MSE {losses[-2]:.4f} force MSE {losses[-1]:.4f}")
    return losses


if __name__ == "__main__":
    train(build())
