"""``torch.nn.modules.channelshuffle``'s import path: its classes live in
``scratchgrad.nn.activation``."""

from scratchgrad.nn.activation import ChannelShuffle

__all__ = ["ChannelShuffle"]
