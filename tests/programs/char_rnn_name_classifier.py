"""PyTorch's "classifying names with a character-level RNN" tutorial: each name a tensor of
one-hot letters (``torch.zeros`` and an index write per letter), a GRU over the letters from a
``torch.zeros`` hidden state, ``log_softmax`` of the last step into ``NLLLoss``, one name per
step with the tutorial's hand-written SGD (``p.data.add_(p.grad.data, alpha=-lr)``), the
running loss printed every few steps and the guess read with ``topk`` (made-up "languages",
each its own set of favourite letters; the names are drawn with NumPy)."""

import string

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

all_letters = string.ascii_lowercase + " .,;'"
n_letters = len(all_letters)
all_categories = ["Aish", "Borvic", "Kelmish", "Tuano"]
n_categories = len(all_categories)


def letterToIndex(letter):
    return all_letters.find(letter)


def lineToTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][letterToIndex(letter)] = 1
    return tensor


class CharRNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.rnn = nn.GRU(input_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)

    def forward(self, line_tensor):
        hidden = torch.zeros(1, 1, self.hidden_size)
        rnn_out, hidden = self.rnn(line_tensor, hidden)
        return F.log_softmax(self.h2o(hidden[0]), dim=1)


def categoryFromOutput(output):
    top_n, top_i = output.topk(1)
    category_i = top_i[0].item()
    return all_categories[category_i], category_i


def make_names(rng, per_category=6):
    favourites = [rng.choice(26, 6, replace=False) for _ in all_categories]
    names = []
    for category, letters in enumerate(favourites):
        for _ in range(per_category):
            name = "".join(all_letters[i] for i in rng.choice(letters, rng.integers(3, 8)))
            names.append((name, category))
    return names


def build():
    return CharRNN(n_letters, 24, n_categories)


def train(rnn, n_iters=150, print_every=30, learning_rate=0.1):
    rng = np.random.default_rng(0)
    names = make_names(rng)
    criterion = nn.NLLLoss()
    losses, current_loss = [], 0.0
    for iter in range(1, n_iters + 1):
        line, category_i = names[rng.integers(len(names))]
        category_tensor = torch.tensor([category_i], dtype=torch.long)
        rnn.zero_grad()
        output = rnn(lineToTensor(line))
        loss = criterion(output, category_tensor)
        loss.backward()
        for p in rnn.parameters():
            p.data.add_(p.grad.data, alpha=-learning_rate)
        current_loss += loss.item()
        if iter % print_every == 0:
            guess, guess_i = categoryFromOutput(output)
            correct = "✓" if guess_i == category_i else f"✗ ({all_categories[category_i]})"
            print(f"{iter} {current_loss / print_every:.4f} {line} / {guess} {correct}")
            losses.append(current_loss / print_every)
            current_loss = 0.0
    return losses


if __name__ == "__main__":
    train(build())
