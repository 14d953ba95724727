"""A tabular binary classifier as the fast.ai-style "entity embeddings" notebooks write it: one
``nn.Embedding`` per categorical column (index 0 kept for missing values with ``padding_idx``),
concatenated with batch-normed continuous features and a ``F.one_hot`` column, then Linear ->
PReLU -> BatchNorm1d -> Dropout blocks and a sigmoid output trained with ``BCELoss`` whose
per-row weights come from ``torch.where`` on the label and NumPy's "balanced" class weights
(NumPy float64 scalars, which must not widen the float32 loss), with
``RMSprop(centered=True)``. Dropout is switched off during training (``.eval()`` on the Dropout
modules only) so that both libraries draw no random masks; the columns are made with NumPy."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

cat_cardinalities = [7, 12, 4]  # day of week, month, region; + 1 each for "missing" (index 0)
emb_szs = [(c + 1, min(50, (c + 2) // 2)) for c in cat_cardinalities]
n_cont, n_levels = 3, 5


class TabularModel(nn.Module):
    def __init__(self, emb_szs, n_cont, layers, p=0.3):
        super().__init__()
        self.embeds = nn.ModuleList([nn.Embedding(ni, nf, padding_idx=0) for ni, nf in emb_szs])
        self.emb_drop = nn.Dropout(p)
        self.bn_cont = nn.BatchNorm1d(n_cont)
        n_in = sum(nf for _, nf in emb_szs) + n_cont + n_levels
        layerlist = []
        for i in layers:
            layerlist += [nn.Linear(n_in, i), nn.PReLU(), nn.BatchNorm1d(i), nn.Dropout(p)]
            n_in = i
        layerlist.append(nn.Linear(layers[-1], 1))
        self.layers = nn.Sequential(*layerlist)

    def forward(self, x_cat, x_cont, level):
        embeddings = [e(x_cat[:, i]) for i, e in enumerate(self.embeds)]
        x = self.emb_drop(torch.cat(embeddings, 1))
        x = torch.cat([x, self.bn_cont(x_cont), F.one_hot(level, n_levels).float()], 1)
        return torch.sigmoid(self.layers(x)).squeeze(1)


def build():
    return TabularModel(emb_szs, n_cont, [32, 16])


def make_table(rng, n):
    cats = np.stack([rng.integers(1, c + 1, n) for c in cat_cardinalities], 1)
    cats[rng.random((n, 3)) < 0.1] = 0  # missing values
    cont = rng.normal(0, 1, (n, n_cont)) * [1.0, 10.0, 0.1] + [0.0, 50.0, 1.0]
    level = rng.integers(0, n_levels, n)
    score = (cats[:, 0] >= 6) + 0.8 * (cats[:, 2] == 2) + 0.1 * (cont[:, 1] - 50) + 0.3 * level
    y = (score + rng.normal(0, 0.5, n) > 2.0).astype(np.float32)
    return (
        torch.tensor(cats, dtype=torch.long),
        torch.tensor(cont, dtype=torch.float32),
        torch.from_numpy(level),
        torch.from_numpy(y),
    )


def train(model, epochs=5, bs=64):
    rng = np.random.default_rng(0)
    cat_train, cont_train, level_train, y_train = make_table(rng, 256)
    cat_test, cont_test, level_test, y_test = make_table(rng, 128)
    labels = y_train.numpy().astype(int)
    class_weights = len(labels) / (2 * np.bincount(labels))  # sklearn's "balanced" weights
    criterion = nn.BCELoss(reduction="none")
    optimizer = torch.optim.RMSprop(model.parameters(), lr=0.01, alpha=0.9, centered=True)
    losses = []
    for epoch in range(epochs):
        model.train()
        for m in model.modules():
            if isinstance(m, nn.Dropout):
                m.eval()
        for i in range(0, len(y_train), bs):
            y = y_train[i : i + bs]
            y_pred = model(cat_train[i : i + bs], cont_train[i : i + bs], level_train[i : i + bs])
            weights = torch.where(y == 1, class_weights[1], class_weights[0])
            loss = (criterion(y_pred, y) * weights).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            probs = model(cat_test, cont_test, level_test)
            test_loss = F.binary_cross_entropy(probs, y_test).item()
            acc = ((probs > 0.5).float() == y_test).float().mean().item()
        print(f"epoch {epoch:2d}  loss: {loss.item():10.6f}  test {test_loss:.4f} acc {acc:.3f}")
        losses.append(test_loss)
    print("padding rows stay zero:", model.embeds[0].weight[0].abs().sum().item() == 0)
    return losses


if __name__ == "__main__":
    train(build())
