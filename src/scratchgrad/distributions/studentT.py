"""``StudentT``, importable as ``torch.distributions.studentT`` (PyTorch's module
name); it lives in ``student_t.py``."""

from scratchgrad.distributions.student_t import StudentT

__all__ = ["StudentT"]
