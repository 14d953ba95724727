"""A two-layer graph attention network (Velickovic et al., 2018) written without PyTorch
Geometric, as the from-scratch GAT tutorials write it: the attention logit of edge j->i is
``a^T [W h_i || W h_j]`` on the concatenated features, then LeakyReLU(0.2); the softmax over each
node's incoming edges takes its max with ``scatter_reduce`` and its sum with
``torch.zeros(...).scatter_add_``, and messages are summed with ``index_add_``. The hidden layer
concatenates 4 heads, the output layer averages 2. A stochastic block graph of three communities,
trained with AdamW and weight decay, keeping the weights of the best validation epoch (a
``copy.deepcopy`` of the state dict); accuracy on held-out nodes. Attention dropout draws its masks
with NumPy (``torch.rand`` streams differ between libraries), so both runs drop the same edges."""

import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

num_nodes, num_features, num_classes = 60, 10, 3
mask_rng = np.random.default_rng(0)


def make_graph(seed=0):
    """Three communities with denser edges inside; features a noisy class centroid."""
    rng = np.random.default_rng(seed)
    y = np.arange(num_nodes) % num_classes
    prob = np.where(y[:, None] == y[None, :], 0.2, 0.02)
    adj = rng.random((num_nodes, num_nodes)) < prob
    np.fill_diagonal(adj, False)
    src, dst = np.nonzero(adj)  # directed: each edge is a message src -> dst
    centroids = rng.standard_normal((num_classes, num_features))
    x = 0.6 * centroids[y] + rng.standard_normal((num_nodes, num_features))
    edge_index = torch.from_numpy(np.stack([src, dst])).long()
    split = torch.from_numpy(np.arange(num_nodes) // 18)  # 18 training, 18 validation, 24 test
    x = torch.tensor(x, dtype=torch.float32)
    return x, edge_index, torch.from_numpy(y), split == 0, split == 1, split >= 2


def edge_softmax(logits, dst, num_nodes):
    """Softmax of per-edge logits (E, H) over the edges entering each node."""
    index = dst.view(-1, 1).expand_as(logits)
    node_max = torch.full((num_nodes, logits.size(1)), float("-inf"), device=logits.device)
    node_max = node_max.scatter_reduce(0, index, logits, reduce="amax", include_self=True)
    exp = torch.exp(logits - node_max.gather(0, index))
    denom = torch.zeros(num_nodes, logits.size(1), device=logits.device).scatter_add_(0, index, exp)
    return exp / denom.gather(0, index)


def attention_dropout(alpha, p, training):
    if not training or p == 0:
        return alpha
    keep = torch.from_numpy(mask_rng.random(tuple(alpha.shape)) >= p).to(alpha.device)
    return alpha * keep / (1 - p)


class GraphAttentionLayer(nn.Module):
    def __init__(self, in_features, out_features, heads, concat=True, dropout=0.2):
        super().__init__()
        self.heads, self.out_features = heads, out_features
        self.concat, self.dropout = concat, dropout
        self.W = nn.Linear(in_features, heads * out_features, bias=False)
        self.a = nn.Parameter(torch.empty(heads, 2 * out_features))
        nn.init.xavier_uniform_(self.W.weight, gain=1.414)
        nn.init.xavier_uniform_(self.a, gain=1.414)

    def forward(self, x, edge_index):
        n = x.size(0)
        src, dst = edge_index
        wh = self.W(x).view(n, self.heads, self.out_features)
        pair = torch.cat([wh[dst], wh[src]], dim=-1)  # (E, H, 2F): [W h_i || W h_j]
        logits = F.leaky_relu((pair * self.a).sum(dim=-1), negative_slope=0.2)
        alpha = edge_softmax(logits, dst, n)
        alpha = attention_dropout(alpha, self.dropout, self.training)
        messages = wh.index_select(0, src) * alpha.unsqueeze(-1)
        out = torch.zeros_like(wh).index_add_(0, dst, messages)
        return out.flatten(1) if self.concat else out.mean(dim=1)


class GAT(nn.Module):
    def __init__(self, hidden=8, heads=4, out_heads=2, dropout=0.2):
        super().__init__()
        self.layer1 = GraphAttentionLayer(num_features, hidden, heads, dropout=dropout)
        self.layer2 = GraphAttentionLayer(
            hidden * heads, num_classes, out_heads, concat=False, dropout=dropout
        )

    def forward(self, x, edge_index):
        x = F.elu(self.layer1(x, edge_index))
        return self.layer2(x, edge_index)


def add_self_loops(edge_index, n):
    loops = torch.arange(n, device=edge_index.device).unsqueeze(0).repeat(2, 1)
    return torch.cat([edge_index, loops], dim=1)


def build():
    return GAT()


@torch.no_grad()
def accuracy(model, x, edge_index, y, mask):
    model.eval()
    pred = model(x, edge_index).argmax(dim=-1)
    return (pred[mask] == y[mask]).float().mean().item()


def train(model, epochs=15):
    global mask_rng
    mask_rng = np.random.default_rng(0)  # the same dropout masks in every run
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x, edge_index, y, train_mask, val_mask, test_mask = make_graph()
    edge_index = add_self_loops(edge_index, num_nodes)
    x, edge_index, y = x.to(device), edge_index.to(device), y.to(device)
    train_mask, val_mask, test_mask = (
        train_mask.to(device),
        val_mask.to(device),
        test_mask.to(device),
    )
    model = model.to(device)
    print(f"{num_nodes} nodes, {edge_index.size(1)} edges with self loops")
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=5e-3)
    losses = []
    best_val, best_state = -1.0, None
    for epoch in range(1, epochs + 1):
        model.train()
        optimizer.zero_grad()
        out = model(x, edge_index)
        loss = F.cross_entropy(out[train_mask], y[train_mask])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        val_acc = accuracy(model, x, edge_index, y, val_mask)
        if val_acc > best_val:
            best_val, best_state = val_acc, copy.deepcopy(model.state_dict())
        if epoch % 5 == 0:
            print(f"epoch {epoch:02d} loss {loss.item():.4f} val {val_acc:.2f}")
    model.load_state_dict(best_state)
    test_acc = accuracy(model, x, edge_index, y, test_mask)
    print(f"best validation accuracy {best_val:.2f}, test accuracy {test_acc:.2f}")
    with torch.no_grad():
        losses.append(F.cross_entropy(model(x, edge_index)[test_mask], y[test_mask]).item())
    return losses


if __name__ == "__main__":
    train(build())
