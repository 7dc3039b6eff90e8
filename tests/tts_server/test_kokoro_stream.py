"""Kokoro's decoder in windows on the real weights: against the whole decode, batched, seams.

The model (imported from the embedded ONNX model) is the session's ``real_torch_engine``; each
sentence's text side and whole decode are computed once for the module.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from bench.speech.torch_engines import wer_of
from bench.speech.torch_stages import log_spectral_distance
from tts_server.engines import window_plan
from tts_server.engines.g2p import phonemize
from tts_server.engines.torch.engine import TorchEngine
from tts_server.engines.torch.kokoro_batch import Acoustics, BatchedKokoro
from tts_server.engines.torch.kokoro_masked import harmonic_source
from tts_server.engines.torch.kokoro_stream import (
    Sentence,
    crossfade,
    decode_windows,
    sentences,
    spectrum_frames_per_frame,
)
from tts_server.engines.windows import CROSSFADE_SAMPLES, SAMPLES_PER_FRAME, Window, WindowPlan
from tts_server.settings import Settings

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
TEXTS = (  # a short sentence and a long one
    "Please close the window.",
    "The train leaves from the old station at seven, so please be there on time.",
)
VOICE = (("jf_alpha", 1.0),)
SEED = 7
PLAN = window_plan(Settings(engine="torch", windows=True))  # the torch engine's defaults
assert PLAN is not None
# Per-window instance-norm statistics move the audio away from the whole decode's (the
# docs' "Decoding in windows" has the figures): bounded as the torch engine's int8 gap is.
MAX_SPECTRAL_DISTANCE_DB = 8.0
WER_MARGIN = 0.02
MIN_LEVEL, MAX_LEVEL = 0.5, 3.0  # a window's RMS against the whole decode's (measured 0.76-2.24)


@dataclass(frozen=True)
class Spoken:
    """One sentence: its text, its text side, its whole decode and its windowed form."""

    text: str
    acoustics: Acoustics
    whole: np.ndarray
    sentence: Sentence


def rng() -> list[torch.Generator]:
    return [torch.Generator().manual_seed(SEED)]


@pytest.fixture(scope="module")
def model(real_torch_engine: TorchEngine) -> BatchedKokoro:
    return real_torch_engine._batched


@pytest.fixture(scope="module")
def spoken(real_torch_engine: TorchEngine, model: BatchedKokoro) -> list[Spoken]:
    out = []
    for text in TEXTS:
        phonemes = phonemize(real_torch_engine._g2p, text).phonemes
        vocab = real_torch_engine._vocab
        ids = [0, *(vocab[p] for p in phonemes if p in vocab), 0]
        table = real_torch_engine.style_table(VOICE)
        acoustics = model.acoustics([ids], table[len(phonemes) - 1].reshape(1, -1), [1.0])
        whole = model.decode(acoustics, rng())[0].numpy()
        out.append(Spoken(text, acoustics, whole, sentences(model, acoustics, rng())[0]))
    return out


def chunked(model: BatchedKokoro, sentence: Sentence, plan: WindowPlan) -> np.ndarray:
    parts, tail = [], torch.zeros(0)
    for window in plan.windows(sentence.frames, sentence.lead):
        (decoded,) = decode_windows(model, [(sentence, window)])
        parts.append(crossfade(tail, decoded.audio).numpy())
        tail = decoded.tail
    return np.concatenate(parts)


def test_a_sentence_shorter_than_the_first_window_is_one_window_equal_to_the_whole_decode(
    model: BatchedKokoro, spoken: list[Spoken]
) -> None:
    short = spoken[0]
    plan = dataclasses.replace(PLAN, first=short.sentence.frames + 1)
    windows = plan.windows(short.sentence.frames)
    assert windows == [Window(0, short.sentence.frames, 0, 0)]
    (decoded,) = decode_windows(model, [(short.sentence, windows[0])])
    np.testing.assert_array_equal(decoded.audio.numpy(), short.whole)
    assert decoded.tail.numel() == 0  # nothing past the sentence's end


def test_a_window_with_the_whole_sentence_as_context_is_the_whole_decodes_samples(
    model: BatchedKokoro, spoken: list[Spoken]
) -> None:
    """The source's slices line up to the sample: only the norms' statistics ever differ."""
    sentence, whole = spoken[1].sentence, spoken[1].whole
    start, stop = 21, 47
    window = Window(start, stop, start, sentence.frames - stop)
    (decoded,) = decode_windows(model, [(sentence, window)])
    kept = slice(start * SAMPLES_PER_FRAME, stop * SAMPLES_PER_FRAME)
    np.testing.assert_allclose(decoded.audio.numpy(), whole[kept], atol=1e-5)
    after = slice(kept.stop, kept.stop + CROSSFADE_SAMPLES)
    np.testing.assert_allclose(decoded.tail.numpy(), whole[after], atol=1e-5)


def test_each_window_reads_the_whole_sentences_source_at_its_own_samples(
    model: BatchedKokoro, spoken: list[Spoken]
) -> None:
    """The harmonic source (phase and noise) runs on across windows: a window's spectrum is
    the STFT of the whole source's samples under that window (away from the STFT's edges)."""
    generator = model.model.decoder.generator
    sentence = spoken[1].sentence
    source = harmonic_source(generator, sentence.f0[None], rng()[0])[0]
    assert source.numel() == sentence.frames * SAMPLES_PER_FRAME
    per_frame = spectrum_frames_per_frame(generator)
    edge = generator.stft.filter_length // generator.stft.hop_length  # frames the pad reaches
    for window in PLAN.windows(sentence.frames, sentence.lead):
        samples = source[window.first * SAMPLES_PER_FRAME : window.last * SAMPLES_PER_FRAME]
        magnitude, phase = generator.stft.transform(samples[None])
        alone = torch.cat([magnitude, phase], dim=1)[0]
        read = sentence.har[:, window.first * per_frame : window.last * per_frame + 1]
        assert read.shape == alone.shape
        torch.testing.assert_close(read[:, edge:-edge], alone[:, edge:-edge])


def test_windows_of_sentences_of_different_lengths_decode_in_one_batch_as_when_alone(
    model: BatchedKokoro, spoken: list[Spoken]
) -> None:
    short, long = spoken[0].sentence, spoken[1].sentence
    batch = [
        (long, PLAN.windows(long.frames, long.lead)[1]),
        (short, PLAN.windows(short.frames, short.lead)[0]),
        (long, PLAN.windows(long.frames, long.lead)[-1]),
        (short, Window(3, short.frames - 2, 3, 2)),
    ]
    together = decode_windows(model, batch)
    for job, decoded in zip(batch, together, strict=True):
        assert decoded.audio.numel() == job[1].frames * SAMPLES_PER_FRAME
        (alone,) = decode_windows(model, [job])
        np.testing.assert_allclose(decoded.audio.numpy(), alone.audio.numpy(), atol=1e-4)
        np.testing.assert_allclose(decoded.tail.numpy(), alone.tail.numpy(), atol=1e-4)


def test_chunked_audio_is_close_to_the_whole_decode_and_heard_the_same(
    model: BatchedKokoro, spoken: list[Spoken]
) -> None:
    for one in spoken:
        audio = chunked(model, one.sentence, PLAN)
        assert audio.size == one.whole.size
        assert log_spectral_distance(audio, one.whole) < MAX_SPECTRAL_DISTANCE_DB
        for window in PLAN.windows(one.sentence.frames, one.sentence.lead):
            kept = slice(window.start * SAMPLES_PER_FRAME, window.stop * SAMPLES_PER_FRAME)
            level = np.sqrt(np.mean(audio[kept] ** 2) / np.mean(one.whole[kept] ** 2))
            assert MIN_LEVEL < level < MAX_LEVEL, (window, level)  # no window of silence lifted
    long = spoken[1]
    heard_whole = wer_of(long.whole, long.text)
    heard_chunked = wer_of(chunked(model, long.sentence, PLAN), long.text)
    assert heard_chunked[0] <= heard_whole[0] + WER_MARGIN, (heard_whole, heard_chunked)


def test_a_crossfade_starts_on_the_tail_and_ends_on_the_window() -> None:
    tail, audio = torch.full((4,), 1.0), torch.zeros(10)
    faded = crossfade(tail, audio)
    np.testing.assert_allclose(faded[:4].numpy(), [0.875, 0.625, 0.375, 0.125])
    assert faded[4:].eq(0).all() and audio.eq(0).all()  # the window itself is left as it was
    assert crossfade(torch.zeros(0), audio) is audio  # the first window: nothing to fade from


def test_no_seam_jumps_more_than_the_whole_audios_largest_step(
    model: BatchedKokoro, spoken: list[Spoken]
) -> None:
    for one in spoken:
        audio = chunked(model, one.sentence, PLAN)
        largest = np.abs(np.diff(one.whole)).max()
        seams = [
            w.start * SAMPLES_PER_FRAME
            for w in PLAN.windows(one.sentence.frames, one.sentence.lead)[1:]
        ]
        assert seams
        for seam in seams:  # the step into the seam and every step of its crossfade
            assert np.abs(np.diff(audio[seam - 1 : seam + CROSSFADE_SAMPLES + 1])).max() <= largest


def test_a_window_outside_its_sentence_is_refused(
    model: BatchedKokoro, spoken: list[Spoken]
) -> None:
    sentence = spoken[0].sentence
    with pytest.raises(ValueError, match="does not fit a sentence"):
        decode_windows(model, [(sentence, Window(0, sentence.frames, 0, 1))])
    assert decode_windows(model, []) == []
