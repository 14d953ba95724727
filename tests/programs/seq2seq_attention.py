"""PyTorch's "translation with a sequence to sequence network and attention" tutorial: a GRU
encoder, a GRU decoder with Bahdanau attention (scores from ``tanh`` of two projections,
``softmax``, the context by ``torch.bmm``), decoding one step at a time from SOS, teacher
forcing chosen at random per batch, otherwise the decoder's own ``topk(1)`` guess detached,
``torch.cat`` of the steps, ``log_softmax`` and ``NLLLoss``, one Adam per network, and greedy
decoding under ``no_grad`` to evaluate (a made-up task, reversing a sequence of words, instead
of French to English; the coin is tossed with NumPy so both libraries see the same; dropout 0:
its masks differ between libraries)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
SOS_token, EOS_token = 0, 1
MAX_LENGTH = 6
n_words = 14


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size, dropout_p=0.1):
        super().__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input):
        embedded = self.dropout(self.embedding(input))
        output, hidden = self.gru(embedded)
        return output, hidden


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)
        return context, weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long, device=device)
        decoder_input = decoder_input.fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []
        attentions = []

        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden, attn_weights = self.forward_step(
                decoder_input, decoder_hidden, encoder_outputs
            )
            decoder_outputs.append(decoder_output)
            attentions.append(attn_weights)

            if target_tensor is not None:
                # Teacher forcing: Feed the target as the next input
                decoder_input = target_tensor[:, i].unsqueeze(1)  # Teacher forcing
            else:
                # Without teacher forcing: use its own predictions as the next input
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()  # detach from history as input

        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        attentions = torch.cat(attentions, dim=1)
        return decoder_outputs, decoder_hidden, attentions

    def forward_step(self, input, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(input))
        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = torch.cat((embedded, context), dim=2)
        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)
        return output, hidden, attn_weights


class Seq2Seq(nn.Module):
    """Both networks in one module, so that one state dict holds the starting weights."""

    def __init__(self, hidden_size=16):
        super().__init__()
        self.encoder = EncoderRNN(n_words, hidden_size, dropout_p=0.0)
        self.decoder = AttnDecoderRNN(hidden_size, n_words, dropout_p=0.0)


def make_pairs(rng, n):
    """Sentences of 2 to 5 words (ids 2..13) ended by EOS and padded with zeros; the target is
    the words reversed."""
    inputs = np.zeros((n, MAX_LENGTH), dtype=np.int64)
    targets = np.zeros((n, MAX_LENGTH), dtype=np.int64)
    for row in range(n):
        words = rng.integers(2, n_words, rng.integers(2, MAX_LENGTH))
        inputs[row, : len(words) + 1] = [*words, EOS_token]
        targets[row, : len(words) + 1] = [*words[::-1], EOS_token]
    return torch.from_numpy(inputs), torch.from_numpy(targets)


def train_epoch(batches, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion, coin):
    total_loss = 0
    for input_tensor, target_tensor in batches:
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()

        encoder_outputs, encoder_hidden = encoder(input_tensor)
        use_teacher_forcing = coin.random() < 0.5
        decoder_outputs, _, _ = decoder(
            encoder_outputs, encoder_hidden, target_tensor if use_teacher_forcing else None
        )

        loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1))
        loss.backward()

        encoder_optimizer.step()
        decoder_optimizer.step()

        total_loss += loss.item()
    return total_loss / len(batches)


def evaluate(encoder, decoder, input_tensor):
    with torch.no_grad():
        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, decoder_hidden, decoder_attn = decoder(encoder_outputs, encoder_hidden)
        _, topi = decoder_outputs.topk(1)
        decoded_ids = topi.squeeze()
    return decoded_ids, decoder_attn


def build():
    return Seq2Seq()


def train(model, n_epochs=5, learning_rate=0.01):
    rng = np.random.default_rng(0)
    coin = np.random.default_rng(1)
    encoder, decoder = model.encoder.to(device), model.decoder.to(device)
    batches = [make_pairs(rng, 8) for _ in range(3)]
    test_input, test_target = make_pairs(rng, 8)
    encoder_optimizer = optim.Adam(encoder.parameters(), lr=learning_rate)
    decoder_optimizer = optim.Adam(decoder.parameters(), lr=learning_rate)
    criterion = nn.NLLLoss()
    losses = []
    for epoch in range(1, n_epochs + 1):
        loss = train_epoch(
            batches, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion, coin
        )
        decoded_ids, attentions = evaluate(encoder, decoder, test_input)
        accuracy = (decoded_ids == test_target).float().mean().item()
        print(f"epoch {epoch} loss {loss:.4f} token accuracy {accuracy:.3f}")
        losses += [loss, accuracy, attentions[:, 0].max().item()]
    return losses


if __name__ == "__main__":
    train(build())
