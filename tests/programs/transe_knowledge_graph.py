"""TransE knowledge-graph embeddings, as the tutorials write them: entities and relations in
``nn.Embedding`` tables (entities with ``max_norm=1``, renormalized in place at each lookup),
relation vectors normalized once with ``F.normalize``, the L1 distance ``||h + r - t||_1``
with ``torch.norm(p=1)``, corrupted triples (head or tail replaced, drawn with NumPy),
``nn.MarginRankingLoss`` with target -1, SGD, and link prediction scored under
``torch.no_grad()`` with ``torch.cdist(p=1)`` against every entity, ``argsort`` ranks, mean
reciprocal rank and hits@3."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

N_ENTITIES, N_RELATIONS, DIM = 12, 3, 8


class TransE(nn.Module):
    def __init__(self, entity_count, relation_count, dim, margin=1.0):
        super().__init__()
        self.entities_emb = nn.Embedding(entity_count, dim, max_norm=1.0)
        self.relations_emb = nn.Embedding(relation_count, dim)
        uniform_range = 6 / np.sqrt(dim)
        self.entities_emb.weight.data.uniform_(-uniform_range, uniform_range)
        self.relations_emb.weight.data.uniform_(-uniform_range, uniform_range)
        self.relations_emb.weight.data = F.normalize(self.relations_emb.weight.data, p=2, dim=1)
        self.criterion = nn.MarginRankingLoss(margin=margin, reduction="none")

    def forward(self, positive_triplets, negative_triplets):
        positive_distances = self._distance(positive_triplets)
        negative_distances = self._distance(negative_triplets)
        target = torch.tensor([-1], dtype=torch.long)
        loss = self.criterion(positive_distances, negative_distances, target)
        return loss, positive_distances, negative_distances

    def _distance(self, triplets):
        heads, relations, tails = triplets[:, 0], triplets[:, 1], triplets[:, 2]
        return (
            self.entities_emb(heads) + self.relations_emb(relations) - self.entities_emb(tails)
        ).norm(p=1, dim=1)

    def predict_tails(self, heads, relations):
        """Distances from h + r to every entity: (batch, entity_count)."""
        query = self.entities_emb(heads) + self.relations_emb(relations)
        return torch.cdist(query, self.entities_emb.weight, p=1)


def build():
    return TransE(N_ENTITIES, N_RELATIONS, DIM)


def make_triples():
    """Relation r maps entity e to (e + r + 1) mod N: a translation TransE can learn."""
    heads = np.repeat(np.arange(N_ENTITIES), N_RELATIONS)
    relations = np.tile(np.arange(N_RELATIONS), N_ENTITIES)
    tails = (heads + relations + 1) % N_ENTITIES
    return np.stack([heads, relations, tails], 1)


def corrupt(rng, triples):
    corrupted = triples.copy()
    head_or_tail = rng.integers(0, 2, len(triples))
    random_entities = rng.integers(0, N_ENTITIES, len(triples))
    corrupted[:, 0] = np.where(head_or_tail == 1, random_entities, triples[:, 0])
    corrupted[:, 2] = np.where(head_or_tail == 0, random_entities, triples[:, 2])
    return corrupted


def evaluate(model, triples):
    with torch.no_grad():
        distances = model.predict_tails(triples[:, 0], triples[:, 1])
        ranking = distances.argsort(dim=1)
        ranks = (ranking == triples[:, 2:3]).nonzero()[:, 1] + 1
        mrr = (1.0 / ranks.float()).mean().item()
        hits_at_3 = (ranks <= 3).float().mean().item()
    return mrr, hits_at_3


def train(model, epochs=8, batch_size=12):
    rng = np.random.default_rng(0)
    triples = make_triples()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for epoch in range(epochs):
        model.train()
        order = rng.permutation(len(triples))
        for start in range(0, len(triples), batch_size):
            batch = triples[order[start : start + batch_size]]
            positive = torch.from_numpy(batch)
            negative = torch.from_numpy(corrupt(rng, batch))
            optimizer.zero_grad()
            loss, pd, nd = model(positive, negative)
            loss.mean().backward()
            optimizer.step()
            losses.append(loss.mean().item())
        mrr, hits = evaluate(model, torch.from_numpy(triples))
        norms = model.entities_emb.weight.norm(dim=1)
        print(f"epoch {epoch}: loss {np.mean(losses[-3:]):.4f} MRR {mrr:.3f} hits@3 {hits:.3f}")
        losses += [mrr, hits, norms.max().item()]
    return losses


if __name__ == "__main__":
    train(build())
