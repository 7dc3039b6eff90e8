"""The embedded ONNX engine decoding in windows: a voice's first sentence whole, then windows."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from tts_server.engines.base import Engine, Trim
from tts_server.engines.onnx.engine import OnnxEngine
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Chunk
from tts_server.engines.windows import WindowPlan

pytestmark = pytest.mark.slow
KEEP_ALL = Trim(threshold=0.0)  # keep every sample, so the chunks add up to the sentence
PLAN = WindowPlan(first=8, size=40, context=8, min_last=8, growth=2)
TEXT = "The quick brown fox jumps over the lazy dog near the river bank today."


@pytest.fixture(scope="module")
def windowed(engine: Engine) -> Iterator[OnnxEngine]:
    windowed = OnnxEngine(engine._g2p, trim=KEEP_ALL, windows=PLAN)  # type: ignore[attr-defined]
    yield windowed
    windowed.close()


async def spoken(engine: Engine, text: str, voice: str) -> list[Chunk]:
    prepared = engine.prepare(text, ((voice, 1.0),))
    return [chunk async for chunk in engine.synthesize(prepared)]


async def test_a_voices_first_sentence_is_whole_then_its_sentences_come_in_windows(
    windowed: OnnxEngine,
) -> None:
    first = await spoken(windowed, TEXT, "jf_alpha")
    later = await spoken(windowed, TEXT, "jf_alpha")
    assert len(first) == 1  # decoded whole, to learn the voice's statistics
    assert len(later) > 2
    whole, parts = first[0].audio, np.concatenate([c.audio for c in later])
    assert parts.size == whole.size
    assert np.abs(parts).max() < 2 * np.abs(whole).max()  # no window lifted out of scale
    assert [w.text for c in later for w in c.words] == [w.text for w in first[0].words]
    for chunk in later:  # each word goes with the chunk its first sample is in
        assert all(0 <= w.start < chunk.audio.size for w in chunk.words)


async def test_a_closed_stream_decodes_no_further_window(windowed: OnnxEngine) -> None:
    await spoken(windowed, "Calibrate this voice first.", "jm_kumo")
    before = windowed.stats.pieces
    stream = windowed.synthesize(windowed.prepare(TEXT, (("jm_kumo", 1.0),)))
    assert (await anext(stream)).audio.size > 0
    await stream.aclose()  # what a cancelled segment does between two windows
    assert windowed.stats.pieces - before == 2  # the text side and the first window only


def test_a_piece_without_known_phonemes_has_no_windows(windowed: OnnxEngine) -> None:
    (started,) = windowed._start_batch(0, [Piece("", (("jf_alpha", 1.0),), 1.0)])
    assert started.frames == 0 and PLAN.windows(started.frames, started.lead) == []


def test_the_settings_decode_in_windows_by_default_on_the_onnx_engine_only() -> None:
    from tts_server.engines import _window_plan
    from tts_server.settings import Settings, parse_settings

    assert _window_plan(Settings()) == WindowPlan(8, 240, 4, growth=3.0)
    assert _window_plan(Settings(engine="torch")) is None
    assert _window_plan(parse_settings(["--no-windows"], env={})) is None
    assert _window_plan(parse_settings([], env={"TTS_WINDOWS": "0"})) is None
    torch_on = parse_settings(["--engine", "torch", "--windows", "--window-growth", "3"], env={})
    assert _window_plan(torch_on) == WindowPlan(8, 40, 16, growth=3.0)
