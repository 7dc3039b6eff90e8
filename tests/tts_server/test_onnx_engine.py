"""The embedded Kokoro ONNX engine really speaks, chunk by chunk, with clean edges."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np
import pytest

from tts_protocol import check_voice
from tts_server.engines import Engine, EngineError, Trim, UnknownVoice, UnsupportedText
from tts_server.engines.g2p import NotInTable, PhonemeTable
from tts_server.engines.onnx.engine import OnnxEngine, split_cores

SAMPLE_RATE = 24000


async def _collect(
    engine: Engine, text: str, voice: str | None = None, speed: float = 1.0
) -> list[np.ndarray]:
    chunks = engine.synthesize(engine.prepare(text, check_voice(voice), speed))
    return [chunk.audio async for chunk in chunks]


def _rms(audio: np.ndarray) -> float:
    return float(np.sqrt(np.mean(audio**2)))


async def test_short_sentence_is_non_silent_speech_of_plausible_length(engine: Engine) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    audio = np.concatenate(await _collect(engine, text))
    seconds = audio.size / SAMPLE_RATE
    assert audio.dtype == np.float32
    assert 1.5 < seconds < 5.0, seconds  # ~9 words at a normal speaking rate
    assert _rms(audio) > 0.03
    assert np.abs(audio).max() <= 1.0


async def test_speed_changes_duration(engine: Engine) -> None:
    text = "Speaking rate is adjustable."
    slow = np.concatenate(await _collect(engine, text, speed=0.7)).size
    fast = np.concatenate(await _collect(engine, text, speed=1.5)).size
    assert slow > 1.6 * fast


async def test_every_voice_speaks(engine: Engine) -> None:
    assert set(engine.voices) == {
        "jf_alpha",
        "jf_gongitsune",
        "jf_nezumi",
        "jf_tebukuro",
        "jm_kumo",
    }
    assert engine.default_voice == "jf_alpha"
    for voice in engine.voices:
        assert _rms(np.concatenate(await _collect(engine, "Hi.", voice=voice))) > 0.02


async def test_long_text_streams_first_chunk_before_the_rest(engine: Engine) -> None:
    text = " ".join(f"This is sentence number {n}, which keeps the engine busy." for n in range(5))
    started = time.perf_counter()
    arrivals: list[float] = []
    async for _chunk in engine.synthesize(engine.prepare(text)):
        arrivals.append(time.perf_counter() - started)
    assert len(arrivals) >= 2
    assert arrivals[0] < 0.7 * arrivals[-1]


def test_text_the_g2p_cannot_speak_is_refused_before_any_audio(engine: Engine) -> None:
    with pytest.raises(UnsupportedText, match="CJK"):
        engine.prepare("東京 is big.")


def test_unknown_voice_is_typed(engine: Engine) -> None:
    with pytest.raises(UnknownVoice, match="jf_alpha"):
        engine.prepare("Hello.", check_voice("af_nope"))


def test_model_dir_without_files_says_what_it_needs(engine: Engine, tmp_path) -> None:
    with pytest.raises(EngineError, match=r"\*\.onnx"):
        OnnxEngine(engine._g2p, model_dir=tmp_path)


def test_trim_removes_silence_and_fades_edges() -> None:
    tone = 0.5 * np.sin(np.linspace(0, 200 * np.pi, SAMPLE_RATE // 2)).astype(np.float32)
    silence = np.zeros(SAMPLE_RATE, dtype=np.float32)
    trimmed = Trim(pad_ms=10, fade_ms=5)(np.concatenate([silence, tone, silence]))
    assert tone.size <= trimmed.size <= tone.size + 2 * 240 + 2
    assert abs(trimmed[0]) < 1e-6 and abs(trimmed[-1]) < 0.01
    assert Trim()(silence).size == 0


async def test_cancelling_a_synthesis_interrupts_the_running_inference(engine: Engine) -> None:
    long_sentence = ", ".join(["the quick brown fox jumps over the lazy dog"] * 8) + "."

    async def speak(text: str) -> None:
        async for _ in engine.synthesize(engine.prepare(text)):
            pass

    started = time.perf_counter()
    await speak(long_sentence)
    uninterrupted = time.perf_counter() - started
    doomed = asyncio.create_task(speak(long_sentence))
    await asyncio.sleep(0.3 + 0.1 * uninterrupted)  # past G2P, inside the model run
    doomed.cancel()
    started = time.perf_counter()
    await speak("Next.")  # waits for the engine thread: only briefly if the run was aborted
    assert time.perf_counter() - started < 0.5 * uninterrupted, uninterrupted


def test_cores_are_split_between_workers() -> None:
    assert split_cores(1, 2) == [2]
    assert split_cores(2, 2) == [1, 1]
    assert split_cores(2, 5) == [3, 2]
    assert split_cores(4, 2) == [1, 1, 1, 1]  # never zero threads


async def test_two_workers_speak_two_texts_side_by_side(engine: Engine) -> None:
    texts = ("Hello there.", "Good morning to you.")
    table = PhonemeTable({text: engine._g2p(text) for text in texts}, None)
    pair = OnnxEngine(table, workers=2)  # table only: G2P is not needed to synthesize
    try:
        assert pair.workers == 2 and pair.max_batch == 1  # the graph is batch-1
        results = await asyncio.gather(*(_collect(pair, text) for text in texts))
        assert pair.stats.batches == 2 and pair.stats.pieces == 2
        for text, chunks in zip(texts, results, strict=True):
            alone = np.concatenate(await _collect(pair, text))
            # The same model: the same audio, and speech, whichever lane ran it, side by side
            # or alone.
            assert np.array_equal(np.concatenate(chunks), alone)
            assert _rms(alone) > 0.03
        with pytest.raises(NotInTable):
            await _collect(pair, "Not in the table.")
    finally:
        pair.close()


def test_zero_workers_is_refused(engine: Engine) -> None:
    with pytest.raises(EngineError, match="at least 1"):
        OnnxEngine(engine._g2p, workers=0)
    with pytest.raises(EngineError, match="threads must be at least 1"):
        OnnxEngine(engine._g2p, workers=2, lane_threads=0)


def _threads(session: Any) -> int:
    return int(session.get_session_options().intra_op_num_threads)


def test_every_lane_may_have_every_core(engine: Engine) -> None:
    """``--onnx-threads``: each worker's session its own count of threads, not a share; a lane
    with more than one also holds a one-thread session (``--no-onnx-narrow``: not)."""
    shared = OnnxEngine(engine._g2p, workers=2)
    lanes = OnnxEngine(engine._g2p, workers=2, lane_threads=3)
    wide = OnnxEngine(engine._g2p, workers=2, lane_threads=3, narrow=False)
    try:
        assert [_threads(m.wide) for m in shared._lanes.models] == split_cores(2)
        assert [m.narrow for m in shared._lanes.models] == [None, None]  # one core each
        assert [_threads(m.wide) for m in lanes._lanes.models] == [3, 3]
        assert [_threads(m.narrow) for m in lanes._lanes.models] == [1, 1]
        assert [m.narrow for m in wide._lanes.models] == [None, None]
    finally:
        shared.close()
        lanes.close()
        wide.close()
