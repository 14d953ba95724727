"""PyTorch's "text classification with the torchtext library" tutorial: an ``nn.EmbeddingBag``
(mean of each text's word vectors) fed one flat tensor of tokens plus each text's offset, made
by a ``collate_fn`` with ``torch.cat`` and ``cumsum``; a linear layer; ``init_weights`` with
``uniform_``; cross entropy, SGD with a large learning rate, ``clip_grad_norm_`` and a
``StepLR`` stepped when the validation accuracy stops improving; accuracy from ``argmax`` (a
made-up corpus of word ids, whose class is the topic most of its words come from, instead of
AG_NEWS)."""

import time

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
vocab_size, num_class, emsize = 40, 4, 16


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


def make_dataset(rng, n):
    """(label, list of word ids) pairs: word w belongs to topic w % num_class."""
    data = []
    for _ in range(n):
        label = int(rng.integers(0, num_class))
        length = int(rng.integers(3, 12))
        on_topic = rng.integers(0, vocab_size // num_class, length) * num_class + label
        noise = rng.integers(0, vocab_size, length)
        words = np.where(rng.random(length) < 0.6, on_topic, noise)
        data.append((label, words.tolist()))
    return data


def collate_batch(batch):
    label_list, text_list, offsets = [], [], [0]
    for _label, _text in batch:
        label_list.append(_label)
        processed_text = torch.tensor(_text, dtype=torch.int64)
        text_list.append(processed_text)
        offsets.append(processed_text.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = torch.cat(text_list)
    return label_list.to(device), text_list.to(device), offsets.to(device)


def evaluate(model, dataloader, criterion):
    model.eval()
    total_acc, total_count, total_loss = 0, 0, 0.0
    with torch.no_grad():
        for label, text, offsets in dataloader:
            predicted_label = model(text, offsets)
            total_loss += criterion(predicted_label, label).item()
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
    return total_acc / total_count, total_loss


def build():
    return TextClassificationModel(vocab_size, emsize, num_class).to(device)


def train(model, epochs=4, batch_size=8, lr=5.0):
    rng = np.random.default_rng(0)
    train_dataloader = DataLoader(
        make_dataset(rng, 32), batch_size=batch_size, shuffle=False, collate_fn=collate_batch
    )
    valid_dataloader = DataLoader(
        make_dataset(rng, 16), batch_size=batch_size, shuffle=False, collate_fn=collate_batch
    )
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    total_accu = None
    losses = []
    for epoch in range(1, epochs + 1):
        epoch_start_time = time.time()
        model.train()
        for label, text, offsets in train_dataloader:
            optimizer.zero_grad()
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            losses.append(loss.item())
        accu_val, loss_val = evaluate(model, valid_dataloader, criterion)
        if total_accu is not None and total_accu > accu_val:
            scheduler.step()
        else:
            total_accu = accu_val
        print(
            f"| end of epoch {epoch:3d} | time: {time.time() - epoch_start_time:5.2f}s | "
            f"valid accuracy {accu_val:8.3f} | lr {scheduler.get_last_lr()[0]:.3f}"
        )
        losses += [accu_val, loss_val, scheduler.get_last_lr()[0]]
    return losses


if __name__ == "__main__":
    train(build())
