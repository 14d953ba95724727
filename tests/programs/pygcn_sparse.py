"""A two-layer graph convolutional network in the style of Kipf's original PyTorch code: the
adjacency matrix is normalized once in NumPy (self loops, rows divided by their degree), handed
to PyTorch as a sparse COO tensor built from its nonzero (row, col, value) triples (the legacy
``torch.sparse.FloatTensor`` constructor), and each
layer computes ``spmm(adj, input @ W) + b``. A planted partition of 60 nodes in three groups
stands in for Cora; the feature matrix is row-normalized the same way. The adjacency is also
built a second way (``dense.to_sparse()``), coalesced and checked against the first, and the
last layer uses ``torch.sparse.mm`` and ``adj @ x`` where the first uses ``torch.spmm``."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parameter import Parameter

num_nodes, num_features, num_classes = 60, 12, 3


def row_normalize(mx):
    """Divide each row by its sum (rows that sum to 0 stay 0)."""
    rowsum = mx.sum(axis=1)
    inv = np.where(rowsum > 0, 1.0 / np.where(rowsum > 0, rowsum, 1.0), 0.0)
    return mx * inv[:, None]


def dense_to_torch_sparse(mx):
    """The nonzero entries of a NumPy matrix as a torch sparse COO float tensor."""
    row, col = np.nonzero(mx)
    indices = torch.from_numpy(np.vstack((row, col)).astype(np.int64))
    values = torch.from_numpy(mx[row, col].astype(np.float32))
    return torch.sparse.FloatTensor(indices, values, torch.Size(mx.shape))


def load_data(seed=3):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(num_classes), num_nodes // num_classes)
    prob = np.where(labels[:, None] == labels[None, :], 0.2, 0.02)
    upper = np.triu(rng.random((num_nodes, num_nodes)) < prob, k=1)
    adj = (upper | upper.T).astype(np.float64)
    centers = rng.standard_normal((num_classes, num_features))
    features = np.abs(centers[labels] + 1.5 * rng.standard_normal((num_nodes, num_features)))
    features = row_normalize(features)
    adj = row_normalize(adj + np.eye(num_nodes))
    idx_train = torch.tensor(
        [i + c * (num_nodes // num_classes) for c in range(num_classes) for i in range(5)]
    )
    idx_val = torch.arange(5, num_nodes, 4)
    return (
        dense_to_torch_sparse(adj),
        torch.tensor(adj, dtype=torch.float32),
        torch.FloatTensor(features),
        torch.LongTensor(labels),
        idx_train,
        idx_val,
    )


class GraphConvolution(nn.Module):
    """out = adj @ (input @ W) + b, with W and b uniform in +-1/sqrt(out_features)."""

    def __init__(self, in_features, out_features, product="spmm"):
        super().__init__()
        self.weight = Parameter(torch.FloatTensor(in_features, out_features))
        self.bias = Parameter(torch.FloatTensor(out_features))
        self.product = product
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        if self.product == "spmm":
            output = torch.spmm(adj, support)
        elif self.product == "sparse.mm":
            output = torch.sparse.mm(adj, support)
        else:
            output = adj @ support
        return output + self.bias


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout=0.0):
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass, product="sparse.mm")
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    return preds.eq(labels).double().sum() / len(labels)


def build():
    return GCN(num_features, 16, num_classes)


def check_adjacency(adj, dense_adj):
    """The same matrix built from the dense array, coalesced; its rows sum to 1."""
    other = dense_adj.to_sparse().coalesce()
    same_pattern = torch.equal(adj.coalesce().indices(), other.indices())
    same_values = torch.allclose(adj.coalesce().values(), other.values())
    degrees = torch.sparse.sum(adj, dim=1).to_dense()
    return same_pattern and same_values and torch.allclose(degrees, torch.ones(num_nodes))


def train(model, epochs=15):
    adj, dense_adj, features, labels, idx_train, idx_val = load_data()
    print(f"adjacency: {adj.size()}, {adj._nnz()} nonzeros, layout {adj.layout}")
    print("to_sparse and coalesce agree:", check_adjacency(adj, dense_adj))
    print("adj @ x agrees:", torch.allclose(adj @ features, dense_adj @ features, atol=1e-6))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    losses = []
    for epoch in range(epochs):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()
        losses.append(loss_train.item())
        if epoch % 5 == 4:
            model.eval()
            output = model(features, adj)
            acc_val = accuracy(output[idx_val], labels[idx_val])
            print(f"epoch {epoch + 1:04d} loss_train {loss_train.item():.4f} acc_val {acc_val:.4f}")
    # a third product: the whole adjacency times a dense matrix, its gradient flowing back
    model.gc2.product = "@"
    loss = F.nll_loss(model(features, adj * 1.0)[idx_train], labels[idx_train])
    loss.backward()
    losses.append(loss.item())
    return losses


if __name__ == "__main__":
    train(build())
