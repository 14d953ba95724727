"""A graph isomorphism network for graph classification, written as PyTorch Geometric's
examples are but without it: a mini-batch is one big disconnected graph with an
``edge_index`` and a ``batch`` vector (made by ``repeat_interleave`` of the node counts), a
GIN layer sums neighbours with ``index_add_`` (``(1 + eps) * x`` with a learnable ``eps``),
``global_add_pool`` and ``global_mean_pool`` are ``scatter_add_`` and ``bincount``, the
readout concatenates every layer's pooled features (jumping knowledge), ``BatchNorm1d`` inside
the MLPs, ``NLLLoss`` on ``log_softmax``, a ``StepLR``, and accuracy under ``torch.no_grad()``
(random cycles versus random trees, built with NumPy)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

IN_FEATURES, HIDDEN, N_LAYERS = 3, 16, 3


def global_add_pool(x, batch, size):
    index = batch.unsqueeze(1).expand(-1, x.size(1))
    return torch.zeros(size, x.size(1)).scatter_add_(0, index, x)


def global_mean_pool(x, batch, size):
    counts = torch.bincount(batch, minlength=size).clamp(min=1)
    return global_add_pool(x, batch, size) / counts.unsqueeze(1).to(x.dtype)


class GINConv(nn.Module):
    def __init__(self, nn_module, train_eps=True):
        super().__init__()
        self.nn = nn_module
        self.eps = nn.Parameter(torch.zeros(1)) if train_eps else 0.0

    def forward(self, x, edge_index):
        source, target = edge_index
        aggregated = torch.zeros_like(x).index_add_(0, target, x[source])
        return self.nn((1 + self.eps) * x + aggregated)


class GIN(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList()
        for i in range(N_LAYERS):
            mlp = nn.Sequential(
                # no bias before batch norm: its gradient is zero but for rounding, which Adam
                # would blow up to full steps (and the running mean would follow them)
                nn.Linear(IN_FEATURES if i == 0 else HIDDEN, HIDDEN, bias=False),
                nn.BatchNorm1d(HIDDEN),
                nn.ReLU(),
                nn.Linear(HIDDEN, HIDDEN),
                nn.ReLU(),
            )
            self.convs.append(GINConv(mlp))
        self.lin1 = nn.Linear(N_LAYERS * HIDDEN + IN_FEATURES, HIDDEN)
        self.lin2 = nn.Linear(HIDDEN, 2)

    def forward(self, x, edge_index, batch, num_graphs):
        pooled = [global_mean_pool(x, batch, num_graphs)]
        for conv in self.convs:
            x = conv(x, edge_index)
            pooled.append(global_add_pool(x, batch, num_graphs))
        h = F.relu(self.lin1(torch.cat(pooled, dim=1)))
        return F.log_softmax(self.lin2(h), dim=-1)


def build():
    return GIN()


def random_graph(rng):
    """A cycle (label 1) or a random tree (label 0) of 5 to 9 nodes, edges both ways."""
    n = int(rng.integers(5, 10))
    label = int(rng.integers(0, 2))
    if label:
        src = np.arange(n)
        dst = (src + 1) % n
    else:
        src = np.arange(1, n)
        dst = np.array([rng.integers(0, i) for i in range(1, n)])
    edges = np.concatenate([np.stack([src, dst]), np.stack([dst, src])], axis=1)
    features = rng.standard_normal((n, IN_FEATURES)) * 0.1 + 1.0
    return features, edges, label


def collate(graphs):
    """One disconnected graph: node features stacked, edge indices shifted, a batch vector."""
    sizes = torch.tensor([len(g[0]) for g in graphs])
    offsets = torch.cumsum(sizes, 0) - sizes
    x = torch.cat([torch.tensor(g[0], dtype=torch.float32) for g in graphs])
    edge_index = torch.cat(
        [torch.from_numpy(g[1]) + offset for g, offset in zip(graphs, offsets.tolist())], dim=1
    )
    batch = torch.arange(len(graphs)).repeat_interleave(sizes)
    y = torch.tensor([g[2] for g in graphs])
    return x, edge_index, batch, y


def train(model, epochs=4, batch_size=8):
    rng = np.random.default_rng(0)
    dataset = [random_graph(rng) for _ in range(32)]
    test_batch = collate([random_graph(rng) for _ in range(16)])
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    losses = []
    for epoch in range(1, epochs + 1):
        model.train()
        total_loss = 0.0
        for i in range(0, len(dataset), batch_size):
            x, edge_index, batch, y = collate(dataset[i : i + batch_size])
            optimizer.zero_grad()
            out = model(x, edge_index, batch, len(y))
            loss = F.nll_loss(out, y)
            loss.backward()
            optimizer.step()
            total_loss += loss.item() * len(y)
            losses.append(loss.item())
        scheduler.step()
        model.eval()
        with torch.no_grad():
            x, edge_index, batch, y = test_batch
            pred = model(x, edge_index, batch, len(y)).argmax(dim=-1)
            test_acc = int((pred == y).sum()) / len(y)
        eps = [conv.eps.item() for conv in model.convs]
        print(f"Epoch: {epoch:03d}, Loss: {total_loss / len(dataset):.4f}, Test: {test_acc:.4f}")
        losses += [test_acc] + eps
    return losses


if __name__ == "__main__":
    train(build())
