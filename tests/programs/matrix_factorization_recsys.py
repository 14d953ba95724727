"""A MovieLens-style matrix-factorization recommender as the blog posts write it: user and item
``nn.Embedding`` factors (``sparse=False``) whose row-wise dot product ``(u * v).sum(1)`` plus
user, item and global biases predicts a rating; a ``Dataset`` subclass whose ``__getitem__``
returns a dict, batched by the ``DataLoader``'s default collate into a dict of tensors;
``MSELoss``, weight decay on the factors only through Adam's parameter groups; RMSE on held-out
ratings and top-k recommendations with the seen items masked out (ratings made with NumPy
from hidden factors)."""

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

n_users, n_items, n_factors = 30, 40, 8


class RatingsDataset(Dataset):
    def __init__(self, users, items, ratings):
        self.users, self.items, self.ratings = users, items, ratings

    def __len__(self):
        return len(self.ratings)

    def __getitem__(self, idx):
        return {
            "user": torch.tensor(self.users[idx], dtype=torch.long),
            "item": torch.tensor(self.items[idx], dtype=torch.long),
            "rating": torch.tensor(self.ratings[idx], dtype=torch.float),
        }


class MatrixFactorization(nn.Module):
    def __init__(self, n_users, n_items, n_factors=20):
        super().__init__()
        self.user_factors = nn.Embedding(n_users, n_factors, sparse=False)
        self.item_factors = nn.Embedding(n_items, n_factors, sparse=False)
        self.user_bias = nn.Embedding(n_users, 1)
        self.item_bias = nn.Embedding(n_items, 1)
        self.global_bias = nn.Parameter(torch.tensor(3.5))
        nn.init.normal_(self.user_factors.weight, std=0.1)
        nn.init.normal_(self.item_factors.weight, std=0.1)
        nn.init.zeros_(self.user_bias.weight)
        nn.init.zeros_(self.item_bias.weight)

    def forward(self, user, item):
        dot = (self.user_factors(user) * self.item_factors(item)).sum(1)
        bias = self.user_bias(user).squeeze(1) + self.item_bias(item).squeeze(1)
        return dot + bias + self.global_bias


def build():
    return MatrixFactorization(n_users, n_items, n_factors)


def make_ratings(rng):
    u_true, v_true = rng.normal(0, 0.8, (n_users, 3)), rng.normal(0, 0.8, (n_items, 3))
    users, items = np.divmod(rng.choice(n_users * n_items, 600, replace=False), n_items)
    ratings = np.clip((u_true[users] * v_true[items]).sum(1) + 3.5 + rng.normal(0, 0.3, 600), 1, 5)
    return users, items, ratings


def train(model, epochs=6):
    users, items, ratings = make_ratings(np.random.default_rng(0))
    train_ds = RatingsDataset(users[:500], items[:500], ratings[:500])
    test_ds = RatingsDataset(users[500:], items[500:], ratings[500:])
    train_loader = DataLoader(train_ds, batch_size=64, shuffle=False)
    test_batch = next(iter(DataLoader(test_ds, batch_size=len(test_ds))))
    embeddings = [model.user_factors.weight, model.item_factors.weight]
    biases = [model.user_bias.weight, model.item_bias.weight, model.global_bias]
    optimizer = torch.optim.Adam(
        [{"params": embeddings, "weight_decay": 1e-3}, {"params": biases, "weight_decay": 0.0}],
        lr=0.05,
    )
    loss_fn = nn.MSELoss()
    losses = []
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for batch in train_loader:
            optimizer.zero_grad()
            prediction = model(batch["user"], batch["item"])
            loss = loss_fn(prediction, batch["rating"])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch["rating"])
        model.eval()
        with torch.no_grad():
            pred = model(test_batch["user"], test_batch["item"]).clamp(1, 5)
            rmse = torch.sqrt(loss_fn(pred, test_batch["rating"])).item()
        losses += [total / len(train_ds), rmse]
        print(f"epoch {epoch}: train mse {total / len(train_ds):.4f}, test rmse {rmse:.4f}")
    with torch.no_grad():
        scores = model.user_factors.weight @ model.item_factors.weight.t()
        scores = scores + model.item_bias.weight.t()
        seen = torch.zeros(n_users, n_items, dtype=torch.bool)
        seen[torch.from_numpy(users[:500]), torch.from_numpy(items[:500])] = True
        top_scores, top_items = scores.masked_fill(seen, float("-inf")).topk(3, dim=1)
    print("user 0 should try items", top_items[0].tolist())
    losses.append(top_scores.mean().item())
    return losses


if __name__ == "__main__":
    train(build())
