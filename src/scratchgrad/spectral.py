"""Short-time Fourier transforms, as ``torch.stft`` and ``torch.istft`` (also the methods
``Tensor.stft`` and ``Tensor.istft``): frames of ``n_fft`` samples every ``hop_length``, each
multiplied by the window (``win_length`` samples, centred in the frame) and transformed along
the frequency dim of the result, (batch,) frequency, frame. ``istft`` inverts it: the frames'
inverse transforms times the window, added where they overlap and divided by the window's
squares added the same way. Both are composed from ``Tensor.unfold``, the transforms of
``fft.py`` and indexing, so their gradients are PyTorch's without a rule of their own.

>>> import scratchgrad as sg
>>> x = sg.arange(8.0)
>>> spectrum = sg.stft(x, 4, window=sg.hann_window(4), return_complex=True)
>>> spectrum.shape
scratchgrad.Size([3, 9])
>>> sg.istft(spectrum, 4, window=sg.hann_window(4), length=8)
tensor([0., 1., 2., 3., 4., 5., 6., 7.])
"""

from __future__ import annotations

import warnings

from scratchgrad import fft
from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.complex_numbers import view_as_real
from scratchgrad.creation import arange, ones
from scratchgrad.nn import functional as F
from scratchgrad.tensor import Tensor


@autocast_policy("float32")  # as on PyTorch's CPU autocast list
def stft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
    align_to_window: bool | None = None,
) -> Tensor:
    """The short-time Fourier transform of a signal (L,) or a batch of them (B, L): (B,)
    n_fft // 2 + 1 (``onesided``, the default for real signals and windows) or n_fft
    frequencies by 1 + (L - n_fft) // hop_length frames, as ``torch.stft``. ``center`` pads
    n_fft // 2 samples at each end first (``pad_mode``, as ``F.pad``'s), so that frame t is
    centred on sample t * hop_length; ``normalized`` scales by 1/sqrt(n_fft);
    ``align_to_window`` (only without ``center``) starts frame t at the window's first sample,
    not the frame's. ``return_complex=False`` (deprecated, as in PyTorch) gives the real and
    imaginary parts in a last dim of 2.

    >>> import scratchgrad as sg
    >>> sg.stft(sg.ones(8), 4, 4, window=sg.ones(4), center=False, return_complex=True)
    tensor([[4.+0.j, 4.+0.j],
            [0.+0.j, 0.+0.j],
            [0.+0.j, 0.+0.j]])
    """
    is_complex = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None and not is_complex:
        raise RuntimeError(
            "stft requires the return_complex parameter be given for real inputs, and will "
            "further require that return_complex=True in a future PyTorch release."
        )
    return_complex = is_complex if return_complex is None else return_complex
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, got shape {tuple(input.shape)}")
    if not (input.is_floating_point() or input.is_complex()):
        raise RuntimeError(
            f"stft: expected a tensor of floating point or complex values, got {input.dtype.name}"
        )
    if center:
        pad = n_fft // 2
        batched = input.reshape(1, -1, input.shape[-1])  # F.pad's (N, C, L)
        input = F.pad(batched, (pad, pad), pad_mode).reshape(*input.shape[:-1], -1)
    hop_length, win_length = _defaults(n_fft, hop_length, win_length)
    length = input.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {length}, but got n_fft={n_fft}")
    _check_sizes("stft", n_fft, hop_length, win_length, window)
    if window is None:
        _warn_rectangular("stft")
    onesided = not is_complex if onesided is None else onesided
    if onesided and is_complex:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    # frames of the window's win_length samples (the zeros around a window padded to n_fft
    # would multiply the rest), zero-padded to n_fft around it afterwards
    left = (n_fft - win_length) // 2
    if align_to_window:  # frame t's window starts at sample t * hop_length
        frames = input.unfold(-1, win_length, hop_length)
    else:  # frame t starts there, its window ``left`` samples further
        count = (length - n_fft) // hop_length + 1
        frames = input.narrow(-1, left, length - left).unfold(-1, win_length, hop_length)
        frames = frames.narrow(-2, 0, count)
    if window is not None:
        frames = frames * window
    if win_length < n_fft:
        frames = F.pad(frames, (left, n_fft - win_length - left))
    norm = "ortho" if normalized else "backward"
    out = (fft.rfft if onesided else fft.fft)(frames, norm=norm).transpose(-1, -2)
    if return_complex:
        return out
    warnings.warn(
        "stft with return_complex=False is deprecated (as in PyTorch): call view_as_real on "
        "the complex output",
        UserWarning,
        stacklevel=2,
    )
    return view_as_real(out)


def istft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    normalized: bool = False,
    onesided: bool | None = None,
    length: int | None = None,
    return_complex: bool = False,
) -> Tensor:
    """The signal (L,) or (B, L) whose ``stft`` (with the same arguments) is ``input``, (B,)
    frequency by frame, as ``torch.istft``: the frames' inverse transforms times the window,
    added where they overlap and divided by the window's squares added the same way (which
    must not vanish: PyTorch's "window overlap add min" error). ``length`` trims or
    zero-pads the result; ``onesided`` defaults to whether there are fewer than n_fft
    frequencies; ``return_complex`` keeps the frames' full complex inverse transforms.

    >>> import scratchgrad as sg
    >>> x = sg.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    >>> window = sg.hann_window(4)
    >>> spectrum = sg.stft(x, 4, hop_length=1, window=window, return_complex=True)
    >>> sg.istft(spectrum, 4, hop_length=1, window=window, length=6)
    tensor([1., 2., 3., 4., 5., 6.])
    """
    if not input.is_complex():
        raise RuntimeError(
            "istft requires a complex-valued input tensor matching the output from stft with "
            "return_complex=True."
        )
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"istft: expected a tensor of 2 or 3 dims ((batch,) frequency, frame), got shape "
            f"{tuple(input.shape)}"
        )
    hop_length, win_length = _defaults(n_fft, hop_length, win_length)
    frequencies, count = input.shape[-2:]
    onesided = frequencies != n_fft if onesided is None else onesided
    expected = n_fft // 2 + 1 if onesided else n_fft
    if frequencies != expected:
        raise RuntimeError(
            f"istft: expected the frequency dimension (3rd to the last) of the input tensor to "
            f"match {'n_fft / 2 + 1' if onesided else 'n_fft'} when onesided={onesided}, but "
            f"got {frequencies}"
        )
    _check_sizes("istft", n_fft, hop_length, win_length, window)
    if window is None:
        _warn_rectangular("istft")
        window = ones(win_length, dtype=input.real.dtype, device=input.device)
    left = (n_fft - win_length) // 2
    window = F.pad(window, (left, n_fft - win_length - left))
    norm = "ortho" if normalized else "backward"
    frames = input.transpose(-1, -2)
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = fft.ifft(frames, n=n_fft, norm=norm)
    else:
        if window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        frames = fft.irfft(frames.narrow(-1, 0, n_fft // 2 + 1), n=n_fft, norm=norm)
    total = n_fft + hop_length * (count - 1)
    signal = _overlap_added(frames * window, total, hop_length)
    envelope = _overlap_added((window * window).expand(count, n_fft), total, hop_length)
    start = n_fft // 2 if center else 0
    # NOTE: PyTorch's end without a length, -(n_fft // 2), leaves nothing for n_fft = 1
    end = -(n_fft // 2) if center else total
    if length is not None:
        end = start + length
    signal, envelope = signal[..., start:end], envelope[start:end]
    if envelope.numel() and envelope.abs().min() < 1e-11:
        raise RuntimeError(
            f"istft: window overlap add min: {envelope.abs().min().item():.3g} (the window's "
            f"squares added every hop_length={hop_length} vanish somewhere)"
        )
    signal = signal / envelope
    if end > total:  # a length beyond the frames' end: zeros, as PyTorch's (which warns)
        signal = F.pad(signal, (0, end - total))
    return signal


def _defaults(n_fft: int, hop_length: int | None, win_length: int | None) -> tuple[int, int]:
    """PyTorch's hop_length (a quarter of n_fft) and win_length (n_fft)."""
    return (
        n_fft // 4 if hop_length is None else hop_length,
        n_fft if win_length is None else win_length,
    )


def _check_sizes(name: str, n_fft: int, hop_length: int, win_length: int, window) -> None:
    if hop_length <= 0:
        raise RuntimeError(f"{name}: expected hop_length > 0, but got hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(
            f"{name}: expected 0 < win_length <= n_fft={n_fft}, but got win_length={win_length}"
        )
    if window is not None and tuple(window.shape) != (win_length,):
        raise RuntimeError(
            f"{name}: expected a 1D window tensor of size equal to win_length={win_length}, "
            f"but got window with size {list(window.shape)}"
        )


def _warn_rectangular(name: str) -> None:
    warnings.warn(
        f"{name}: a window was not provided, a rectangular window will be applied (PyTorch "
        "warns too): pass window=torch.ones(win_length) to say so",
        UserWarning,
        stacklevel=3,
    )


def _overlap_added(frames: Tensor, total: int, hop_length: int) -> Tensor:
    """The frames (..., count, n_fft) added into a signal (..., total), frame t from sample
    t * hop_length on: the adjoint of ``unfold``."""
    positions = arange(total, device=frames.device).unfold(0, frames.shape[-1], hop_length)
    out = frames.new_zeros(*frames.shape[:-2], total)
    return out.index_add(-1, positions.reshape(-1), frames.flatten(-2))


# The methods of the same names (x.stft(...) is stft(x, ...)), attached here so that tensor.py
# need not import this module.
Tensor.stft, Tensor.istft = stft, istft
