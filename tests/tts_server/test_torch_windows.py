"""The torch engine decoding in windows (a small random Kokoro): chunks, words, batches, cancel."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.tts_server.tiny_kokoro import random_checkpoint, tiny_config, write_model_dir
from tts_server.engines.base import Trim, WindowJob
from tts_server.engines.g2p import EnglishG2P
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Chunk
from tts_server.engines.torch.engine import TorchEngine
from tts_server.engines.windows import SAMPLES_PER_FRAME, WindowPlan

HEART = (("af_heart", 1.0),)
KEEP_ALL = Trim(threshold=0.0)  # random weights: do not let trimming decide what is "silence"
PLAN = WindowPlan(first=2, size=6, context=4, min_last=2)  # many windows even for short text
TEXT = "The quick brown fox jumps over the lazy dog, and runs away."


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("tiny_kokoro_windows")
    yield write_model_dir(root / "model", tiny_config(), random_checkpoint(tiny_config()))
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def g2p() -> EnglishG2P:
    return EnglishG2P()


@pytest.fixture(scope="module")
def whole(g2p: EnglishG2P, model_dir: Path) -> TorchEngine:
    return TorchEngine(g2p, model_dir, device="cpu", trim=KEEP_ALL)


@pytest.fixture(scope="module")
def windowed(g2p: EnglishG2P, model_dir: Path) -> Iterator[TorchEngine]:
    engine = TorchEngine(g2p, model_dir, device="cpu", trim=KEEP_ALL, windows=PLAN)
    yield engine
    engine.close()


async def spoken(engine: TorchEngine, text: str) -> list[Chunk]:
    return [chunk async for chunk in engine.synthesize(engine.prepare(text, HEART))]


async def test_a_sentence_comes_window_by_window_with_each_word_before_its_first_sample(
    whole: TorchEngine, windowed: TorchEngine
) -> None:
    (one,) = await spoken(whole, TEXT)
    chunks = await spoken(windowed, TEXT)
    assert len(chunks) > 2
    assert sum(c.audio.size for c in chunks) == one.audio.size  # nothing trimmed: KEEP_ALL
    assert all(c.audio.size % SAMPLES_PER_FRAME == 0 for c in chunks[:-1])
    offsets = np.cumsum([0] + [c.audio.size for c in chunks])
    words = [
        (w.text, offset + w.start)
        for c, offset in zip(chunks, offsets, strict=False)
        for w in c.words
    ]
    assert words == [(w.text, w.start) for w in one.words]  # same words, same first samples
    for chunk in chunks:
        assert all(0 <= w.start < chunk.audio.size for w in chunk.words)


async def test_a_closed_stream_decodes_no_further_window(windowed: TorchEngine) -> None:
    before = windowed.stats.pieces
    stream = windowed.synthesize(windowed.prepare(TEXT, HEART))
    first = await anext(stream)
    assert first.audio.size > 0
    await stream.aclose()  # what a cancelled segment does between two windows
    assert windowed.stats.pieces - before == 2  # the text side and the first window only
    assert windowed.stats.queued == 0


def test_windows_of_different_pieces_decode_together_as_alone(windowed: TorchEngine) -> None:
    pieces = [Piece("hɛlˈO wˈɜɹld.", HEART, 1.0), Piece("ðə kwˈɪk bɹˈWn fˈɑks.", HEART, 1.3)]
    torch.manual_seed(0)  # the harmonic source's draws (torch's default generator)
    first = windowed._start_batch(0, pieces)
    torch.manual_seed(0)
    second = windowed._start_batch(0, pieces)
    jobs = [WindowJob(s.state, PLAN.windows(s.frames, s.lead)[0]) for s in first]
    together = windowed._window_batch(0, jobs)
    for started, audio in zip(second, together, strict=True):
        job = WindowJob(started.state, PLAN.windows(started.frames, started.lead)[0])
        (alone,) = windowed._window_batch(0, [job])
        np.testing.assert_allclose(audio, alone, atol=1e-4)


def test_a_piece_without_known_phonemes_has_no_windows(windowed: TorchEngine) -> None:
    (started,) = windowed._start_batch(0, [Piece("", HEART, 1.0)])
    assert started.frames == 0 and PLAN.windows(started.frames, started.lead) == []
