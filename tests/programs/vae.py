"""pytorch/examples' variational autoencoder: the reparameterization trick, a BCE plus KL loss
summed over the batch, Adam (random images instead of MNIST; the noise is drawn with NumPy so
both libraries see the same)."""

import numpy as np
import torch
from torch import nn, optim
from torch.nn import functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
noise = np.random.default_rng(0)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc21 = nn.Linear(32, 4)
        self.fc22 = nn.Linear(32, 4)
        self.fc3 = nn.Linear(4, 32)
        self.fc4 = nn.Linear(32, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.from_numpy(noise.standard_normal(std.shape).astype(np.float32)).to(std.device)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def build():
    return VAE()


def train(model, epochs=2):
    global noise
    noise = np.random.default_rng(0)  # the same noise for every run
    data = torch.tensor(np.random.default_rng(1).uniform(0, 1, (4, 8, 1, 8, 8)).astype("float32"))
    model = model.to(device)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for epoch in range(1, epochs + 1):
        model.train()
        train_loss = 0
        for batch in data:
            batch = batch.to(device)
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(batch)
            loss = loss_function(recon_batch, batch, mu, logvar)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
            losses.append(loss.item())
        print(f"====> Epoch: {epoch} Average loss: {train_loss / 32:.4f}")
    with torch.no_grad():
        sample = torch.from_numpy(noise.standard_normal((4, 4)).astype(np.float32)).to(device)
        sample = model.decode(sample).cpu()
        losses.append(sample.sum().item())
    return losses


if __name__ == "__main__":
    train(build())
