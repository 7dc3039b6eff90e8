"""The log-spectral distance the ONNX window tests hold their bounds in."""

from __future__ import annotations

import numpy as np


def spectral_distance(audio: np.ndarray, reference: np.ndarray) -> float:
    """Mean log-spectral distance in dB (1024-sample Hann frames, hop 256): each frame's RMS
    difference of the log power spectra, averaged over the frames (``bench.speech.torch_stages``'s
    ``log_spectral_distance`` takes one RMS over all frames and bins; the bounds here are in
    this one's dB)."""

    def spectrum(x: np.ndarray) -> np.ndarray:
        frames = np.lib.stride_tricks.sliding_window_view(x, 1024)[::256] * np.hanning(1024)
        return np.log10(np.abs(np.fft.rfft(frames)) ** 2 + 1e-8)

    difference = spectrum(audio) - spectrum(reference)
    return float(np.mean(np.sqrt(np.mean(difference**2, axis=1))) * 10)
