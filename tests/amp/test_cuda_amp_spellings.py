"""``torch.cuda.amp``'s old spellings and ``set_float32_matmul_precision``: the lines scripts
start with, which must run on a machine without a GPU as they do in PyTorch's CPU builds."""

import warnings

import pytest
import torch

import scratchgrad as sg


def test_cuda_amp_warns_as_deprecated_and_disables_itself_without_a_gpu():
    assert not sg.cuda.is_available()
    with pytest.warns(FutureWarning, match=r"torch.cuda.amp.GradScaler\(args...\)` is deprec"):
        scaler = sg.cuda.amp.GradScaler(init_scale=8.0)
    assert not scaler.is_enabled() and not torch.cuda.amp.GradScaler().is_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from scratchgrad.cuda.amp import autocast

        with autocast(dtype=sg.bfloat16):
            out = sg.nn.Linear(2, 2)(sg.ones(1, 2))
    assert out.dtype == sg.float32  # the "cuda" region is off on a CPU, as PyTorch's


def test_amp_grad_scaler_for_cuda_disables_itself_without_a_gpu():
    with pytest.warns(UserWarning, match="CUDA is not available. Disabling"):
        assert not sg.amp.GradScaler("cuda").is_enabled()
    assert sg.amp.GradScaler("cpu").is_enabled()


def test_float32_matmul_precision_is_kept_as_torch_keeps_it():
    try:
        for precision in ["high", "medium", "highest"]:
            sg.set_float32_matmul_precision(precision)
            torch.set_float32_matmul_precision(precision)
            assert sg.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
            assert sg.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
        with pytest.warns(UserWarning, match="low is not one of"):
            sg.set_float32_matmul_precision("low")
        assert sg.get_float32_matmul_precision() == "highest"
    finally:
        sg.set_float32_matmul_precision("highest")
        torch.set_float32_matmul_precision("highest")
