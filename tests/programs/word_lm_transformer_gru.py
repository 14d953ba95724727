"""pytorch/examples' word_language_model beyond the LSTM: the recurrent net picked by name with
``getattr(nn, rnn_type)`` (a GRU) or built as ``nn.RNN(nonlinearity="relu")``, the hidden state
made with ``weight.new_zeros`` and repackaged between chunks, and the Transformer model that
subclasses ``nn.Transformer``, replaces its decoder with a ``Linear``, masks with
``torch.log(torch.tril(torch.ones(sz, sz)))`` and adds a sinusoidal position table kept with
``register_buffer``. The corpus is batchified with ``narrow`` and ``t().contiguous()``, the
best model is saved as a state dict to a ``BytesIO`` and loaded back, and text is generated under
``eval()`` and ``no_grad()`` by feeding the choice back with ``fill_`` / ``torch.cat`` (greedy
instead of ``torch.multinomial``: the two libraries' random streams differ). Dropout 0."""

import io
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

NTOKENS = 12


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.0):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ["LSTM", "GRU"]:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.decoder.out_features)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.0, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(0), :])


class TransformerModel(nn.Transformer):
    def __init__(self, ntoken, ninp, nhead, nhid, nlayers):
        super().__init__(
            d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers,
            num_decoder_layers=1, dropout=0.0,
        )  # fmt: skip
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp)
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)
        nn.init.uniform_(self.input_emb.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def _generate_square_subsequent_mask(self, sz):
        return torch.log(torch.tril(torch.ones(sz, sz)))

    def forward(self, src, has_mask=True):
        if has_mask:
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                self.src_mask = self._generate_square_subsequent_mask(len(src)).to(src.device)
        else:
            self.src_mask = None
        src = self.pos_encoder(self.input_emb(src) * math.sqrt(self.ninp))
        output = self.encoder(src, mask=self.src_mask)
        return F.log_softmax(self.decoder(output), dim=-1)


class Models(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = RNNModel("GRU", NTOKENS, 8, 10, 2)
        self.relu_rnn = RNNModel("RNN_RELU", NTOKENS, 8, 10, 1)
        self.transformer = TransformerModel(NTOKENS, 8, 2, 16, 2)


def build():
    return Models()


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt=5):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].view(-1)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def run(model, train_data, val_data, losses, lr=8.0):
    criterion = nn.NLLLoss()
    is_transformer = isinstance(model, nn.Transformer)
    best_val_loss, best = None, io.BytesIO()
    for epoch in range(3):
        model.train()
        if not is_transformer:
            hidden = model.init_hidden(4)
        for i in range(0, train_data.size(0) - 1, 5):
            data, targets = get_batch(train_data, i)
            model.zero_grad()
            if is_transformer:
                output = model(data).view(-1, NTOKENS)
            else:
                hidden = repackage_hidden(hidden)
                output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            losses.append(loss.item())
        model.eval()
        total_loss = 0.0
        with torch.no_grad():
            hidden = None if is_transformer else model.init_hidden(4)
            for i in range(0, val_data.size(0) - 1, 5):
                data, targets = get_batch(val_data, i)
                if is_transformer:
                    output = model(data).view(-1, NTOKENS)
                else:
                    output, hidden = model(data, hidden)
                    hidden = repackage_hidden(hidden)
                total_loss += len(data) * criterion(output, targets).item()
        val_loss = total_loss / (len(val_data) - 1)
        print(
            f"| end of epoch {epoch} | valid loss {val_loss:5.2f} | ppl {math.exp(val_loss):8.2f}"
        )
        losses.append(val_loss)
        if not best_val_loss or val_loss < best_val_loss:
            best.seek(0)
            best.truncate()
            torch.save(model.state_dict(), best)
            best_val_loss = val_loss
        else:
            lr /= 4.0
    best.seek(0)
    model.load_state_dict(torch.load(best))


def generate(model, words=6):
    model.eval()
    is_transformer = isinstance(model, nn.Transformer)
    if not is_transformer:
        hidden = model.init_hidden(1)
    input = torch.tensor([[3]], dtype=torch.long)
    chosen = []
    with torch.no_grad():
        for _ in range(words):
            if is_transformer:
                output = model(input, False)
                word_weights = output[-1].squeeze().div(0.8).exp().cpu()
                word_idx = torch.argmax(word_weights)
                word_tensor = torch.Tensor([[word_idx]]).long()
                input = torch.cat([input, word_tensor], 0)
            else:
                output, hidden = model(input, hidden)
                word_weights = output.squeeze().div(0.8).exp().cpu()
                word_idx = torch.argmax(word_weights)
                input.fill_(word_idx)
            chosen.append(word_idx.item())
    print("generated:", chosen)
    return float(np.dot(chosen, np.arange(1, words + 1)))


def train(models):
    rng = np.random.default_rng(3)
    corpus = [0]
    for _ in range(95):  # a Markov chain: each word mostly follows from the previous one
        corpus.append((corpus[-1] * 5 + 1 + int(rng.integers(0, 2))) % NTOKENS)
    corpus = torch.tensor(corpus, dtype=torch.long)
    train_data, val_data = batchify(corpus[:64], 4), batchify(corpus[64:], 4)
    losses = []
    for model in (models.gru, models.relu_rnn, models.transformer):
        run(model, train_data, val_data, losses)
        losses.append(generate(model))
    return losses


if __name__ == "__main__":
    train(build())
