"""Kokoro's decoder over windows of a sentence's frames, windows of many sentences in one batch.

The text side (``BatchedKokoro.acoustics``) runs once per sentence; ``sentences`` then splits
its output per item and adds the one piece of state that must run across windows: the
harmonic source. It is drawn over the whole sentence (initial phases, cumulative phase and
noise, with the same generator draws as a whole decode) and turned into its STFT once; each
window reads its slice of that spectrum, so the source's phase and noise run on unbroken from
one window to the next. ``decode_windows`` runs the decoder over a ragged batch of windows
(``windows.Window``: the kept frames and their context), each window as if decoded alone, and
keeps each window's own samples; ``crossfade`` joins a window to the one before it over the
10 ms that the earlier one decoded past its end (``Window.seam``, in its right context). Where
the windows fall, their context and that overlap are the plan's (``windows``), not this
module's. The instance norms take
their statistics over the window and its context: that is what moves the audio away from the
whole decode's (with the whole sentence's statistics a window with 16 frames of context is
the whole decode's, sample for sample; ``docs/tts_server.md``, "Decoding in windows", has the
figures), and why the first window counts its frames after the leading pad's silence
(``Sentence.lead``).

Alignment: a frame is ``SAMPLES_PER_FRAME`` samples, ``2`` steps at the generator's input and
``SAMPLES_PER_FRAME / hop`` STFT frames; frame ``f`` of the sentence starts STFT frame
``f * SAMPLES_PER_FRAME / hop`` (centred STFT), so a window over frames ``[a, b)`` reads STFT
frames ``[a * k, b * k + 1)`` with ``k = SAMPLES_PER_FRAME / hop``, exactly what a sentence of
``b - a`` frames would have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from tts_server.engines.torch.kokoro_batch import Acoustics, BatchedKokoro
from tts_server.engines.torch.kokoro_masked import (
    Ragged,
    decoder_features,
    generate,
    pad_spectra,
    source_spectrum,
)
from tts_server.engines.windows import SAMPLES_PER_FRAME, Window

F0_STEPS_PER_FRAME = 2  # the F0 and energy curves run at twice the frame rate


@dataclass(frozen=True)
class Sentence:
    """One sentence's text side, ready to decode window by window (tensors on the device)."""

    asr: torch.Tensor  # (512, frames): the aligned text features
    f0: torch.Tensor  # (2 * frames,)
    energy: torch.Tensor  # (2 * frames,)
    style: torch.Tensor  # (256,): the style row
    har: torch.Tensor  # (n_fft + 2, frames * SAMPLES_PER_FRAME / hop + 1): the source's STFT
    lead: int  # the leading boundary pad's frames (``WindowPlan.windows``'s ``lead``)

    @property
    def frames(self) -> int:
        """The sentence's length in frames."""
        return int(self.asr.shape[-1])


def spectrum_frames_per_frame(generator: nn.Module) -> int:
    """STFT frames of the harmonic source per decoder frame."""
    hop = int(generator.stft.hop_length)
    if SAMPLES_PER_FRAME % hop:
        raise ValueError(f"the iSTFT hop {hop} does not divide a frame's {SAMPLES_PER_FRAME}")
    return SAMPLES_PER_FRAME // hop


@torch.inference_mode()
def sentences(
    model: BatchedKokoro,
    acoustics: Acoustics,
    rngs: Sequence[torch.Generator | None] | None = None,
) -> list[Sentence]:
    """Each item of ``acoustics`` as a ``Sentence``, its harmonic source drawn whole.

    ``rngs`` (one per item, default torch's own) draws the source's phases and noise as
    ``BatchedKokoro.decode`` would, so the windows' audio joins up to the whole decode's.
    """
    generator = model.model.decoder.generator
    draws = rngs or [None] * len(acoustics.frames.lengths)
    out = []
    for item, n in enumerate(acoustics.frames.lengths):
        f0 = acoustics.f0[item, : F0_STEPS_PER_FRAME * n]
        out.append(
            Sentence(
                asr=acoustics.asr[item, :, :n],
                f0=f0,
                energy=acoustics.energy[item, : F0_STEPS_PER_FRAME * n],
                style=acoustics.styles[item],
                har=source_spectrum(generator, f0[None], draws[item]),
                lead=acoustics.durations[item][0],
            )
        )
    return out


@dataclass(frozen=True)
class Decoded:
    """A window's kept audio, and what it decoded just past it for the next window's seam."""

    audio: torch.Tensor  # (window.frames * SAMPLES_PER_FRAME,)
    tail: torch.Tensor  # its ``Window.seam``: up to ``CROSSFADE_SAMPLES`` of right context


@torch.inference_mode()
def decode_windows(
    model: BatchedKokoro, windows: Sequence[tuple[Sentence, Window]]
) -> list[Decoded]:
    """Each ``(sentence, window)``'s audio, all windows in one decoder call.

    Windows may come from different sentences and differ in length; each equals its window
    decoded alone (up to float rounding).
    """
    if not windows:
        return []
    per_frame = spectrum_frames_per_frame(model.model.decoder.generator)
    for sentence, window in windows:
        if window.first < 0 or window.last > sentence.frames or window.frames < 1:
            raise ValueError(f"{window} does not fit a sentence of {sentence.frames} frames")
    lengths = tuple(window.last - window.first for _, window in windows)
    frames = Ragged(lengths, max(lengths), model.device)
    asr = _pad([s.asr[:, w.first : w.last] for s, w in windows])
    f0 = _pad([_curve(s.f0, w) for s, w in windows])
    energy = _pad([_curve(s.energy, w) for s, w in windows])
    har = pad_spectra([s.har[:, w.first * per_frame : w.last * per_frame + 1] for s, w in windows])
    style = model.decoder_style(torch.stack([s.style for s, _ in windows]))
    decoder = model.model.decoder
    x, steps = decoder_features(decoder, asr, f0, energy, style, frames)
    audio = generate(decoder.generator, x, style, steps, har)
    out = []
    for wave, (_, window) in zip(audio, windows, strict=True):
        out.append(Decoded(wave[window.kept_samples], wave[window.seam]))
    return out


def crossfade(tail: torch.Tensor, audio: torch.Tensor) -> torch.Tensor:
    """``audio`` (a window's) faded in over the ``tail`` its predecessor decoded past its end.

    Both are the same stretch of the sentence seen from the two windows: the seam then
    continues the earlier window's waveform, with no step between the two windows' decodes.
    """
    n = min(tail.numel(), audio.numel())
    if n == 0:
        return audio
    ramp = (torch.arange(n, device=audio.device, dtype=audio.dtype) + 0.5) / n
    faded = audio.clone()
    faded[:n] = torch.lerp(tail[:n].to(audio.dtype), audio[:n], ramp)
    return faded


def _curve(curve: torch.Tensor, window: Window) -> torch.Tensor:
    return curve[F0_STEPS_PER_FRAME * window.first : F0_STEPS_PER_FRAME * window.last]


def _pad(items: Sequence[torch.Tensor]) -> torch.Tensor:
    """``(..., T_i)`` tensors zero-padded along their last axis into one batch."""
    size = max(t.shape[-1] for t in items)
    return torch.stack([nn.functional.pad(t, (0, size - t.shape[-1])) for t in items])
