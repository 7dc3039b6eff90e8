"""A ``/ws`` socket fed as a microphone: paced MIC frames out, every frame in stamped."""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from agent.browser_leg import MIC_SAMPLE_RATE, SESSION_HEADER, mic_frame
from bench.latency.endpointing import FRAME_MS
from tts_protocol import pcm16_to_float

LEAD_MS, TRAIL_MS = 400, 1500  # silence around each utterance


def speech_span_ms(pcm: bytes) -> tuple[float, float]:
    """Where the speech in ``pcm`` starts and ends (first and last sample over -34 dBFS)."""
    samples = np.abs(pcm16_to_float(pcm))
    loud = np.flatnonzero(samples > 0.02)
    return loud[0] * 1000 / MIC_SAMPLE_RATE, (loud[-1] + 1) * 1000 / MIC_SAMPLE_RATE


def last_loud_frame(pcm: bytes) -> int:
    """The frame of ``LEAD_MS`` + ``pcm`` that holds the last sample of speech."""
    return math.ceil((LEAD_MS + speech_span_ms(pcm)[1]) / FRAME_MS) - 1


def stream_of(pcm: bytes) -> bytes:
    """``pcm`` between the lead and trail silences, as each trial says it."""
    return bytes(LEAD_MS * 32) + pcm + bytes(TRAIL_MS * 32)


class Session:
    """One /ws socket: sends paced MIC frames, stamps every frame received."""

    def __init__(self, url: str, conversation: str) -> None:
        self._url = f"{url}?{SESSION_HEADER}={conversation}"
        self.received: list[tuple[float, dict[str, Any] | None]] = []  # None: an audio frame
        self._arrived = asyncio.Event()

    async def __aenter__(self) -> Session:
        from websockets.asyncio.client import connect

        self._socket = await connect(self._url, max_size=None)
        self._reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *_: object) -> None:
        self._reader.cancel()
        await self._socket.close()

    async def _read(self) -> None:
        async for data in self._socket:
            event = None if isinstance(data, bytes) else json.loads(data)
            self.received.append((time.perf_counter(), event))
            self._arrived.set()

    async def send(self, message: dict[str, Any]) -> None:
        await self._socket.send(json.dumps(message))

    async def play(self, pcm: bytes, stop: Callable[[int], bool] | None = None) -> list[float]:
        """Send ``pcm`` as a microphone would, until ``stop(frame index)``; returns when each
        frame was sent."""
        size = MIC_SAMPLE_RATE * FRAME_MS // 1000 * 2
        sent, start = [], time.perf_counter()
        for index, offset in enumerate(range(0, len(pcm), size)):
            if stop is not None and stop(index):
                break
            await asyncio.sleep(max(0.0, start + index * FRAME_MS / 1000 - time.perf_counter()))
            await self._socket.send(mic_frame(pcm[offset : offset + size]))
            sent.append(time.perf_counter())
        return sent

    async def wait_for(self, kind: str, limit_s: float = 60.0) -> float:
        """When the first frame of ``kind`` (``"audio"``: a binary frame) arrived."""
        try:
            async with asyncio.timeout(limit_s):
                while (at := self.first(kind)) is None:
                    self._arrived.clear()
                    await self._arrived.wait()
        except TimeoutError:
            got = [e["type"] if e else "audio" for _, e in self.received][-12:]
            raise TimeoutError(f"no {kind} within {limit_s} s; the last frames: {got}") from None
        return at

    def first(self, kind: str, after: float = 0.0) -> float | None:
        for at, event in self.received:
            if at >= after and (event["type"] if event else "audio") == kind:
                return at
        return None

    def event(self, kind: str) -> dict[str, Any]:
        return next(e for _, e in self.received if e and e["type"] == kind)
