"""``torch.nn.modules.rnn``'s import path: its classes live in ``scratchgrad.nn.rnn``."""

from scratchgrad.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
