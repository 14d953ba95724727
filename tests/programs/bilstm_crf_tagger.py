"""A BiLSTM-CRF named-entity tagger after PyTorch's "Advanced: Making Dynamic Decisions and the
Bi-LSTM CRF" tutorial: a transition matrix with the START and STOP tags forbidden by filling
their rows and columns with -10000 in place on ``.data``, the forward algorithm over every tag
sequence as a Python loop of ``logsumexp`` over ``expand``-ed scores (batched over the next tag
instead of the tutorial's inner loop), the gold path's score gathered by indexing with tensors
built from ``torch.cat``, Viterbi decoding with ``max`` back-pointers and ``argmax``, one
sentence per ``SGD`` step with weight decay, and the decoded paths printed under ``no_grad``
(made-up sentences in a ``B I O`` scheme; the hidden state starts at zeros instead of
``torch.randn`` so both libraries start alike)."""

import torch
import torch.nn as nn
import torch.optim as optim

START_TAG, STOP_TAG = "<START>", "<STOP>"
tag_to_ix = {"B": 0, "I": 1, "O": 2, START_TAG: 3, STOP_TAG: 4}
tagged_sentences = [
    ("the wall street journal reported today that apple corporation made money",
     "B I I I O O O B I O O"),
    ("georgia tech is a university in georgia", "B I O O O O B"),
    ("apple made money in new york today", "B O O O B I O"),
]  # fmt: skip
training_data = [(words.split(), tags.split()) for words, tags in tagged_sentences]
word_to_ix = {}
for sentence, _ in training_data:
    for word in sentence:
        word_to_ix.setdefault(word, len(word_to_ix))


def prepare_sequence(seq, to_ix):
    return torch.tensor([to_ix[w] for w in seq], dtype=torch.long)


class BiLSTM_CRF(nn.Module):
    def __init__(self, vocab_size, tag_to_ix, embedding_dim=6, hidden_dim=8):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.tag_to_ix = tag_to_ix
        self.tagset_size = len(tag_to_ix)
        self.word_embeds = nn.Embedding(vocab_size, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, num_layers=1, bidirectional=True)
        self.hidden2tag = nn.Linear(hidden_dim, self.tagset_size)
        # transitions[i, j] is the score of going *to* tag i *from* tag j
        self.transitions = nn.Parameter(torch.randn(self.tagset_size, self.tagset_size))
        self.transitions.data[tag_to_ix[START_TAG], :] = -10000
        self.transitions.data[:, tag_to_ix[STOP_TAG]] = -10000

    def init_hidden(self):
        return (torch.zeros(2, 1, self.hidden_dim // 2), torch.zeros(2, 1, self.hidden_dim // 2))

    def _forward_alg(self, feats):
        init_alphas = torch.full((1, self.tagset_size), -10000.0)
        init_alphas[0][self.tag_to_ix[START_TAG]] = 0.0
        forward_var = init_alphas
        for feat in feats:
            # row i: the scores of reaching tag i from each previous tag
            scores = forward_var.expand(self.tagset_size, -1) + self.transitions
            forward_var = (torch.logsumexp(scores, dim=1) + feat).view(1, -1)
        terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
        return torch.logsumexp(terminal_var, dim=1)[0]

    def _get_lstm_features(self, sentence):
        hidden = self.init_hidden()
        embeds = self.word_embeds(sentence).view(len(sentence), 1, -1)
        lstm_out, _ = self.lstm(embeds, hidden)
        return self.hidden2tag(lstm_out.view(len(sentence), self.hidden_dim))

    def _score_sentence(self, feats, tags):
        start = torch.tensor([self.tag_to_ix[START_TAG]], dtype=torch.long)
        tags = torch.cat([start, tags])
        emissions = feats[torch.arange(len(feats)), tags[1:]].sum()
        moves = self.transitions[tags[1:], tags[:-1]].sum()
        return emissions + moves + self.transitions[self.tag_to_ix[STOP_TAG], tags[-1]]

    def _viterbi_decode(self, feats):
        backpointers = []
        forward_var = torch.full((1, self.tagset_size), -10000.0)
        forward_var[0][self.tag_to_ix[START_TAG]] = 0
        for feat in feats:
            next_tag_var = forward_var.expand(self.tagset_size, -1) + self.transitions
            viterbivars_t, bptrs_t = next_tag_var.max(dim=1)
            backpointers.append(bptrs_t.tolist())
            forward_var = (viterbivars_t + feat).view(1, -1)
        terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
        best_tag_id = torch.argmax(terminal_var).item()
        path_score = terminal_var[0][best_tag_id]
        best_path = [best_tag_id]
        for bptrs_t in reversed(backpointers):
            best_tag_id = bptrs_t[best_tag_id]
            best_path.append(best_tag_id)
        start = best_path.pop()
        assert start == self.tag_to_ix[START_TAG]
        best_path.reverse()
        return path_score, best_path

    def neg_log_likelihood(self, sentence, tags):
        feats = self._get_lstm_features(sentence)
        forward_score = self._forward_alg(feats)
        gold_score = self._score_sentence(feats, tags)
        return forward_score - gold_score

    def forward(self, sentence):
        lstm_feats = self._get_lstm_features(sentence)
        return self._viterbi_decode(lstm_feats)


def build():
    return BiLSTM_CRF(len(word_to_ix), tag_to_ix)


def train(model, epochs=4):
    optimizer = optim.SGD(model.parameters(), lr=0.05, weight_decay=1e-4)
    losses = []
    with torch.no_grad():
        score, path = model(prepare_sequence(training_data[0][0], word_to_ix))
        print(score.item(), path)
    losses.append(score.item())
    for epoch in range(epochs):
        for sentence, tags in training_data:
            model.zero_grad()
            sentence_in = prepare_sequence(sentence, word_to_ix)
            targets = torch.tensor([tag_to_ix[t] for t in tags], dtype=torch.long)
            loss = model.neg_log_likelihood(sentence_in, targets)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        print(f"epoch {epoch}: loss {loss.item():.4f}")
    with torch.no_grad():
        for sentence, _ in training_data:
            score, path = model(prepare_sequence(sentence, word_to_ix))
            print(f"{score.item():.4f}", path)
            losses.append(score.item())
    return losses


if __name__ == "__main__":
    train(build())
