"""Semi-supervised node classification after Kipf & Welling's GCN and the graph attention
network that followed it, written as message passing on an edge list the way PyTorch
Geometric's layers do: self loops, the symmetric degree normalization with ``scatter_add_``,
messages gathered with ``index_select`` and summed with ``index_add_``; for attention,
LeakyReLU scores per edge and a softmax over each node's incoming edges (the max taken with
``scatter_reduce``). Two communities of 20 nodes each stand in for Cora; Adam with weight decay on
the first layer only, as the paper does. Dropout is 0 while training: its random masks differ
between libraries."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

num_nodes, num_features, num_classes = 40, 8, 2


def make_graph(seed=0):
    """Two communities: dense inside, a few edges across; features carry a weak class signal."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(num_classes), num_nodes // num_classes)
    same = y[:, None] == y[None, :]
    prob = np.where(same, 0.25, 0.03)
    upper = np.triu(rng.random((num_nodes, num_nodes)) < prob, k=1)
    src, dst = np.nonzero(upper | upper.T)  # undirected: both directions
    x = rng.standard_normal((num_nodes, num_features)) + 0.3 * (2 * y[:, None] - 1)
    edge_index = torch.tensor(np.stack([src, dst]), dtype=torch.long)
    train_mask = torch.zeros(num_nodes, dtype=torch.bool)
    train_mask[torch.tensor([0, 1, 2, 3, 20, 21, 22, 23])] = True
    test_mask = ~train_mask
    return torch.tensor(x, dtype=torch.float32), edge_index, torch.tensor(y), train_mask, test_mask


def add_self_loops(edge_index, num_nodes):
    loops = torch.arange(num_nodes, device=edge_index.device)
    return torch.cat([edge_index, torch.stack([loops, loops])], dim=1)


class GCNConv(nn.Module):
    """out_i = sum over edges j->i of x_j W / sqrt(deg_i deg_j), self loops included."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_channels))

    def forward(self, x, edge_index):
        row, col = add_self_loops(edge_index, x.size(0))
        deg = torch.zeros(x.size(0), dtype=x.dtype, device=x.device)
        deg.scatter_add_(0, col, torch.ones(col.size(0), dtype=x.dtype, device=x.device))
        deg_inv_sqrt = deg.pow(-0.5)
        deg_inv_sqrt[deg_inv_sqrt == float("inf")] = 0
        norm = deg_inv_sqrt[row] * deg_inv_sqrt[col]
        x = self.lin(x)
        messages = x.index_select(0, row) * norm.view(-1, 1)
        out = torch.zeros_like(x).index_add_(0, col, messages)
        return out + self.bias


class GCN(nn.Module):
    def __init__(self, hidden=16, dropout=0.0):
        super().__init__()
        self.conv1 = GCNConv(num_features, hidden)
        self.conv2 = GCNConv(hidden, num_classes)
        self.dropout = dropout

    def forward(self, x, edge_index):
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = F.relu(self.conv1(x, edge_index))
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.conv2(x, edge_index)
        return F.log_softmax(x, dim=1)


class GATConv(nn.Module):
    """Attention over incoming edges: alpha_ij = softmax_j(LeakyReLU(a^T [W x_i, W x_j]))."""

    def __init__(self, in_channels, out_channels, heads=1, concat=True, dropout=0.0):
        super().__init__()
        self.heads, self.out_channels, self.concat, self.dropout = (
            heads,
            out_channels,
            concat,
            dropout,
        )
        self.lin = nn.Linear(in_channels, heads * out_channels, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_channels))
        self.bias = nn.Parameter(torch.zeros(heads * out_channels if concat else out_channels))
        nn.init.xavier_uniform_(self.att_src)
        nn.init.xavier_uniform_(self.att_dst)

    def forward(self, x, edge_index):
        N, H, C = x.size(0), self.heads, self.out_channels
        src, dst = add_self_loops(edge_index, N)
        h = self.lin(x).view(N, H, C)
        alpha_src = (h * self.att_src).sum(dim=-1)
        alpha_dst = (h * self.att_dst).sum(dim=-1)
        scores = F.leaky_relu(alpha_src[src] + alpha_dst[dst], negative_slope=0.2)
        # softmax over each node's incoming edges, shifted by the per-node max for stability
        index = dst.unsqueeze(-1).expand_as(scores)
        score_max = torch.zeros(N, H, device=x.device).scatter_reduce(
            0, index, scores, reduce="amax", include_self=False
        )
        scores = (scores - score_max[dst]).exp()
        denom = torch.zeros(N, H, device=x.device).index_add_(0, dst, scores)
        alpha = scores / (denom[dst] + 1e-16)
        alpha = F.dropout(alpha, p=self.dropout, training=self.training)
        out = torch.zeros(N, H, C, device=x.device)
        out.index_add_(0, dst, h[src] * alpha.unsqueeze(-1))
        out = out.reshape(N, H * C) if self.concat else out.mean(dim=1)
        return out + self.bias


class GAT(nn.Module):
    def __init__(self, hidden=8, heads=4, dropout=0.0):
        super().__init__()
        self.conv1 = GATConv(num_features, hidden, heads=heads, dropout=dropout)
        self.conv2 = GATConv(hidden * heads, num_classes, heads=1, concat=False, dropout=dropout)
        self.dropout = dropout

    def forward(self, x, edge_index):
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = F.elu(self.conv1(x, edge_index))
        x = F.dropout(x, p=self.dropout, training=self.training)
        return F.log_softmax(self.conv2(x, edge_index), dim=1)


def dense_gcn_check(conv, x, edge_index):
    """The same layer as D^-1/2 (A + I) D^-1/2 X W with a dense adjacency matrix."""
    adj = torch.zeros(x.size(0), x.size(0), device=x.device)
    adj.index_put_(tuple(edge_index), torch.ones(edge_index.size(1), device=x.device))
    adj = adj + torch.eye(x.size(0), device=x.device)
    d = torch.diag(adj.sum(dim=1).rsqrt())
    dense = d @ adj @ d @ conv.lin(x) + conv.bias
    return torch.allclose(conv(x, edge_index), dense, atol=1e-5)


def build():
    return nn.ModuleDict({"gcn": GCN(), "gat": GAT()})


@torch.no_grad()
def test(model, x, edge_index, y, mask):
    model.eval()
    pred = model(x, edge_index).argmax(dim=1)
    correct = (pred[mask] == y[mask]).sum()
    return int(correct) / int(mask.sum())


def train(models, epochs=12):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x, edge_index, y, train_mask, test_mask = make_graph()
    x, edge_index, y = x.to(device), edge_index.to(device), y.to(device)
    train_mask, test_mask = train_mask.to(device), test_mask.to(device)
    print(f"{edge_index.size(1)} edges, {int(train_mask.sum())} training nodes")
    with torch.no_grad():
        print(
            "dense propagation agrees:",
            dense_gcn_check(models["gcn"].conv1.to(device), x, edge_index),
        )
    losses = []
    for name, model in models.items():
        model = model.to(device)
        optimizer = torch.optim.Adam(
            [
                dict(params=model.conv1.parameters(), weight_decay=5e-4),
                dict(params=model.conv2.parameters(), weight_decay=0),
            ],
            lr=0.01,
        )
        for epoch in range(1, epochs + 1):
            model.train()
            optimizer.zero_grad()
            out = model(x, edge_index)
            loss = F.nll_loss(out[train_mask], y[train_mask])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if epoch % 4 == 0:
                acc = test(model, x, edge_index, y, test_mask)
                print(f"{name} epoch {epoch:03d}, loss: {loss:.4f}, test acc: {acc:.4f}")
    return losses


if __name__ == "__main__":
    train(build())
