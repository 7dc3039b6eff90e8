"""Readiness and the warm-up, directly: what makes ``warm_up`` pass or fail, and ``/ping``.

Broken models are real ``Engine`` subclasses (real G2P, piece splitting, trimming and worker
thread) whose model is a small function, so only the audio they produce is fake.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
import numpy as np
import pytest

from tts_protocol import SAMPLE_RATE, Error, ErrorCode, Speak, decode_client
from tts_server import health
from tts_server.app import create_app
from tts_server.connection import SynthesisConnection, frame_payload
from tts_server.engines import Engine
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Timed
from tts_server.health import (
    MIN_RMS,
    MIN_SECONDS_PER_CHAR,
    WARMUP_TEXT,
    Readiness,
    State,
    WarmupFailed,
    warm_up,
)
from tts_server.testing.server_thread import ServerThread

Model = Callable[[str], np.ndarray]


class StubModelEngine(Engine):
    """A real engine around a fake model: ``model(phonemes)`` is each piece's audio."""

    name = "stub"

    def __init__(self, inner: Engine, model: Model) -> None:
        super().__init__(inner._g2p)
        self.preferred_voice = inner.default_voice
        self._voices = dict.fromkeys(inner.voices)
        self._model = model

    def _infer_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Timed]:
        return [Timed(self._model(piece.phonemes)) for piece in pieces]


def noise(std: float, seconds: float) -> Model:
    """Gaussian noise of ``std`` (of full scale): some samples pass the trim threshold."""
    rng = np.random.default_rng(7)
    return lambda _phonemes: rng.normal(0.0, std, int(seconds * SAMPLE_RATE)).astype(np.float32)


NEAR_SILENT = noise(std=0.004, seconds=1.0)  # rms 0.004 < MIN_RMS, peaks above 0.01: not trimmed


def test_readiness_starts_loading_and_fail_records_the_reason() -> None:
    readiness = Readiness()
    assert (readiness.state, readiness.reason, readiness.details) == (
        State.LOADING,
        "model is loading",
        {},
    )
    readiness.fail("EngineError: no weights")
    assert (readiness.state, readiness.reason) == (State.FAILED, "EngineError: no weights")
    assert Readiness().details is not readiness.details
    readiness.drain()
    assert (readiness.state, readiness.reason) == (State.DRAINING, "shutting down")
    assert [s.value for s in State] == ["Loading", "Healthy", "Failed", "Draining"]  # /ping's


async def test_warm_up_on_the_real_engine_measures_plausible_speech(engine: Engine) -> None:
    details = await warm_up(engine)
    assert set(details) == {"warmup_ms", "warmup_audio_ms", "warmup_rms"}
    assert details["warmup_audio_ms"] > 1000 * MIN_SECONDS_PER_CHAR * len(WARMUP_TEXT)
    assert details["warmup_rms"] > MIN_RMS and details["warmup_ms"] > 0


async def test_warm_up_reports_the_audio_it_heard(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    heard: list[bytes] = []

    class Listening(SynthesisConnection):
        def __init__(self, engine: Engine, send_text: Any, send_bytes: Any) -> None:
            async def listen(data: bytes) -> None:
                heard.append(data)
                await send_bytes(data)

            super().__init__(engine, send_text, listen)

    def square(_phonemes: str) -> np.ndarray:  # 24,001 samples: 1000.04 ms, not a round figure
        time.sleep(0.05)  # the warm-up takes at least this long
        return np.where(np.arange(SAMPLE_RATE + 1) % 2, 0.25, -0.25).astype(np.float32)

    monkeypatch.setattr(health, "SynthesisConnection", Listening)
    started = time.monotonic()
    details = await warm_up(StubModelEngine(engine, square))
    elapsed_ms = (time.monotonic() - started) * 1000
    pcm = np.frombuffer(b"".join(heard), dtype="<i2") / 32768.0
    audio_ms, rms = pcm.size / SAMPLE_RATE * 1000, float(np.sqrt(np.mean(pcm**2)))
    assert round(audio_ms, 2) != round(audio_ms, 1) and round(rms, 5) != round(rms, 4)
    assert details["warmup_audio_ms"] == round(audio_ms, 1)  # a tenth of a millisecond
    assert details["warmup_rms"] == round(rms, 4)
    assert 50 <= details["warmup_ms"] <= elapsed_ms
    assert details["warmup_ms"] == round(details["warmup_ms"], 1)


class BinaryOnlyConnection(SynthesisConnection):
    """A connection whose peer may only send binary frames: a text payload is an error."""

    async def feed(self, payload: str | bytes) -> None:
        if not isinstance(payload, bytes):
            message = f"text frame {payload!r}: this peer sends binary frames only"
            await self.send(Error(id=None, code=ErrorCode.INVALID_MESSAGE, message=message))
            return
        await super().feed(payload)


async def test_warm_up_sends_its_speak_as_a_binary_frame_through_frame_payload(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    frames: list[dict[str, Any]] = []

    def recording_frame_payload(message: Mapping[str, Any]) -> str | bytes:
        frames.append(dict(message))
        return frame_payload(message)

    monkeypatch.setattr(health, "frame_payload", recording_frame_payload)
    monkeypatch.setattr(health, "SynthesisConnection", BinaryOnlyConnection)
    details = await warm_up(engine)  # WarmupFailed if any payload reached feed() as text
    assert details["warmup_rms"] > MIN_RMS
    assert len(frames) == 1, "the warm-up speak must go through frame_payload"
    frame = frames[0]
    assert frame["type"] == "websocket.receive" and frame.get("text") is None
    assert isinstance(frame["bytes"], bytes)
    assert decode_client(frame["bytes"]) == Speak(id="warmup", text=WARMUP_TEXT)


async def test_near_silent_audio_of_plausible_length_fails_the_warm_up(engine: Engine) -> None:
    with pytest.raises(WarmupFailed, match=r"implausible: [1-9][\d.]* s, rms 0\.00"):
        await warm_up(StubModelEngine(engine, NEAR_SILENT))
    louder = await warm_up(StubModelEngine(engine, noise(std=0.1, seconds=1.0)))
    assert louder["warmup_rms"] > MIN_RMS  # same length, audible: it is the level that failed


async def test_loud_audio_too_short_for_the_text_fails_the_warm_up(engine: Engine) -> None:
    with pytest.raises(WarmupFailed, match=r"implausible: 0\.\d+ s, rms 0\.[1-9]"):
        await warm_up(StubModelEngine(engine, noise(std=0.2, seconds=0.05)))


async def test_a_model_error_fails_the_warm_up_with_its_message(engine: Engine) -> None:
    def broken(_phonemes: str) -> np.ndarray:
        raise RuntimeError("CUDA out of memory")

    with pytest.raises(WarmupFailed, match=r"synthesis_failed: .*CUDA out of memory"):
        await warm_up(StubModelEngine(engine, broken))


async def test_a_hung_model_fails_the_warm_up_within_its_limit(engine: Engine) -> None:
    release = threading.Event()

    def hung(_phonemes: str) -> np.ndarray:
        release.wait(30)
        return np.zeros(SAMPLE_RATE, dtype=np.float32)

    started = time.monotonic()
    try:
        with pytest.raises(TimeoutError):
            await warm_up(StubModelEngine(engine, hung), limit_s=0.5)
    finally:
        release.set()
    assert time.monotonic() - started < 10


async def test_ping_stays_503_when_the_warm_up_audio_is_near_silent(engine: Engine) -> None:
    stub = StubModelEngine(engine, NEAR_SILENT)
    server = ServerThread(create_app(loader=lambda _settings: stub)).start()
    try:
        async with httpx.AsyncClient(base_url=server.http_url) as client:
            async with asyncio.timeout(60):
                while (response := await client.get("/ping")).json()["status"] == "Loading":
                    await asyncio.sleep(0.05)
            assert response.status_code == 503 and response.json()["status"] == "Failed"
            assert "implausible" in response.json()["reason"]
            assert (await client.get("/ping")).status_code == 503  # and it stays there
    finally:
        server.stop()
