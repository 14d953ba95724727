"""A GRU sequence classifier whose weights are constrained through ``torch.nn.utils.parametrize``,
as in orthogonal-RNN experiments: the recurrent weight ``weight_hh_l0`` under
``parametrizations.orthogonal`` (its three gate blocks stacked, so its columns are
orthonormal), the classifier head under ``parametrizations.weight_norm``, and a square mixing
layer made symmetric by a custom parametrization module added with
``register_parametrization``. Evaluation runs under ``parametrize.cached()`` (each constrained
weight computed once for all the batches); after training, the constraints are baked into
plain parameters with ``remove_parametrizations`` and the predictions must not change, and the
recurrent weight's distance from orthogonality is printed (sequences drawn with NumPy, whose
class is the sign pattern of their running sums)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize
from torch.nn.utils.parametrizations import orthogonal, weight_norm


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


class GRUClassifier(nn.Module):
    def __init__(self, input_size=3, hidden_size=16, num_classes=4):
        super().__init__()
        self.rnn = nn.GRU(input_size, hidden_size, batch_first=True)
        self.mix = nn.Linear(hidden_size, hidden_size)
        self.head = nn.Linear(hidden_size, num_classes)
        orthogonal(self.rnn, "weight_hh_l0")
        parametrize.register_parametrization(self.mix, "weight", Symmetric())
        weight_norm(self.head)

    def forward(self, x):
        _, h = self.rnn(x)
        h = h[-1]
        h = h + torch.tanh(self.mix(h))
        return self.head(h)


def make_sequences(rng, n, length=10):
    x = rng.normal(0, 1, (n, length, 3)).astype(np.float32)
    sums = x[:, :, :2].sum(1)
    labels = 2 * (sums[:, 0] > 0) + (sums[:, 1] > 0)
    return torch.from_numpy(x), torch.from_numpy(labels.astype(np.int64))


def evaluate(model, batches):
    model.eval()
    correct, total, loss = 0, 0, 0.0
    with torch.no_grad(), parametrize.cached():
        for x, y in batches:
            logits = model(x)
            loss += F.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(1) == y).sum().item()
            total += len(y)
    return loss / total, correct / total


def orthogonality_error(weight):
    eye = torch.eye(weight.shape[1])
    return torch.linalg.matrix_norm(weight.T @ weight - eye).item()


def build():
    return GRUClassifier()


def train(model, epochs=4, batch_size=16):
    rng = np.random.default_rng(0)
    x, y = make_sequences(rng, 64)
    test = [make_sequences(rng, 16) for _ in range(2)]
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for epoch in range(epochs):
        model.train()
        for i in range(0, len(x), batch_size):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x[i : i + batch_size]), y[i : i + batch_size])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        test_loss, accuracy = evaluate(model, test)
        print(
            f"epoch {epoch}: train loss {loss.item():.4f} test loss {test_loss:.4f} acc {accuracy}"
        )
        losses += [test_loss, accuracy]

    error = orthogonality_error(model.rnn.weight_hh_l0)
    W = model.mix.weight
    print(f"|W^T W - I| = {error:.2e}, mix symmetric: {torch.equal(W, W.T)}")
    with torch.no_grad():
        before = model(test[0][0])
    parametrize.remove_parametrizations(model.rnn, "weight_hh_l0")
    parametrize.remove_parametrizations(model.mix, "weight")
    parametrize.remove_parametrizations(model.head, "weight")
    assert not parametrize.is_parametrized(model)
    print(sorted(name for name, _ in model.named_parameters()))
    with torch.no_grad():
        after = model(test[0][0])
    drift = (after - before).abs().max().item()
    print(f"largest change of the logits after removing the parametrizations: {drift:.1e}")
    return losses + [error, drift, orthogonality_error(model.rnn.weight_hh_l0)]


if __name__ == "__main__":
    train(build())
