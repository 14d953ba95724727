"""``torch.backends.cuda``'s switches: kept, and without effect (the CuPy device ignores them)."""

from types import SimpleNamespace

from scratchgrad import backend

matmul = SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True)


def is_built() -> bool:
    return backend.is_available("cuda")
