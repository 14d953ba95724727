"""Shared by the export tests: a table of small models covering every supported layer, and
compiling generated C and calling it through ctypes."""

import ctypes
from pathlib import Path

import pytest

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.export import build
from scratchgrad.export.build import run_compiled as run_c  # noqa: F401  (for the tests)


def gcc(*args: str) -> None:
    """gcc with the strict flags; skips without gcc, fails with gcc's messages on a warning."""
    try:
        build.gcc(*args)
    except FileNotFoundError:
        pytest.skip("gcc is not installed")


def compile_library(sources: list[Path], out: Path) -> ctypes.CDLL:
    """All the generated files in one shared library (several models link into one program)."""
    try:
        return build.compile_shared(sources, out)
    except FileNotFoundError:
        pytest.skip("gcc is not installed")


class TwoStep(nn.Module):
    """A model of its own whose forward is a straight line of layers."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 5), nn.SiLU())
        self.head = nn.Linear(5, 2)

    def forward(self, x):
        return self.head(self.body(x))


# name -> (model, the shape of one sample)
MODELS = {
    "linear": (lambda: nn.Sequential(nn.Linear(5, 7), nn.Linear(7, 3, bias=False)), (5,)),
    "linear_rows": (lambda: nn.Sequential(nn.Linear(4, 3), nn.LogSoftmax(dim=1)), (2, 4)),
    "linear_bn": (lambda: nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU()), (6,)),
    "conv1d_bn": (
        lambda: nn.Sequential(
            nn.Conv1d(3, 4, 3, stride=2, padding=2, dilation=2), nn.BatchNorm1d(4), nn.Tanh()
        ),
        (3, 11),
    ),
    "conv2d_groups": (
        lambda: nn.Sequential(nn.Conv2d(4, 6, (3, 2), padding="same", dilation=2, groups=2)),
        (4, 7, 6),
    ),
    "conv2d_bn": (
        lambda: nn.Sequential(
            nn.Conv2d(2, 3, 3, stride=(2, 1), padding=(1, 0), bias=False),
            nn.BatchNorm2d(3),
            nn.LeakyReLU(0.2),
        ),
        (2, 7, 6),
    ),
    "max_pool": (lambda: nn.Sequential(nn.MaxPool2d(3, 2, padding=1, ceil_mode=True)), (2, 7, 6)),
    "max_pool_dilated": (lambda: nn.Sequential(nn.MaxPool2d(2, 1, dilation=2)), (2, 5, 5)),
    "avg_pool": (
        lambda: nn.Sequential(
            nn.AvgPool2d(3, 2, padding=1, ceil_mode=True, count_include_pad=False)
        ),
        (2, 6, 7),
    ),
    "avg_pool_padded": (lambda: nn.Sequential(nn.AvgPool2d(3, 2, padding=1)), (1, 5, 6)),
    "avg_pool_divisor": (lambda: nn.Sequential(nn.AvgPool2d(2, divisor_override=3)), (2, 4, 4)),
    "adaptive": (lambda: nn.Sequential(nn.AdaptiveAvgPool2d((3, 2)), nn.Flatten()), (2, 7, 5)),
    "activations": (
        lambda: nn.Sequential(
            nn.Sigmoid(), nn.GELU(), nn.GELU("tanh"), nn.Dropout(0.5), nn.Identity(), nn.Tanh()
        ),
        (9,),
    ),
    "softmax_channels": (
        lambda: nn.Sequential(nn.Conv2d(2, 3, 1), nn.Softmax(dim=1), nn.Flatten()),
        (2, 3, 4),
    ),
    "own_module": (TwoStep, (6,)),
}


def randomize_batch_norms(model: nn.Module) -> None:
    """Give BatchNorms running statistics and affine parameters far from 0 and 1."""
    for module in model.modules():
        if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
            n = module.num_features
            module.load_state_dict(
                {
                    "weight": sg.rand(n) + 0.5,
                    "bias": sg.randn(n),
                    "running_mean": sg.randn(n),
                    "running_var": sg.rand(n) + 0.5,
                    "num_batches_tracked": sg.tensor(10),
                }
            )
