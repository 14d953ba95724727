"""``torch.backends.cudnn``'s switches: kept, and without effect (there is no cuDNN)."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False


def version() -> None:
    return None
