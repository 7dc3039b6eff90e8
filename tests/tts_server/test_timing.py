"""``Timing``: one synthesis's timing, the same for the WebSocket and HTTP routes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import numpy as np
import pytest

from tts_server.engines.timings import Chunk
from tts_server.timing import Timing


async def chunks(*sizes: int) -> AsyncIterator[Chunk]:
    for size in sizes:
        yield Chunk(np.zeros(size, np.float32), ())


def read(timing: Timing, *sizes: int) -> list[int]:
    async def run() -> list[int]:
        return [chunk.audio.size async for chunk in timing.measured(chunks(*sizes))]

    return asyncio.run(run())


def test_measured_counts_each_chunk_before_passing_it_on_and_ends_with_the_stream() -> None:
    timing = Timing()
    seen: list[int] = []

    async def run() -> None:
        async for chunk in timing.measured(chunks(100, 50)):
            seen.append(timing.samples)
            assert timing.ended is None and chunk.audio.size > 0

    asyncio.run(run())
    assert seen == [100, 150] and timing.samples == 150
    assert timing.ended is not None and timing.first_audio is not None
    assert timing.started <= timing.first_audio <= timing.ended
    assert timing.synthesis_s == timing.ended - timing.started


def test_without_a_queue_there_is_no_wait_and_first_audio_counts_from_the_start() -> None:
    timing = Timing(started=10.0)
    assert timing.waited_s is None and timing.first_audio_s is None
    timing.first_audio, timing.ended = 10.25, 11.0
    assert timing.first_audio_s == pytest.approx(0.25)
    assert timing.synthesis_s == pytest.approx(1.0)


def test_a_queued_synthesis_counts_its_wait_and_first_audio_from_the_queue() -> None:
    timing = Timing(queued=9.5, started=10.0, first_audio=10.25, ended=11.0)
    assert timing.waited_s == pytest.approx(0.5)
    assert timing.first_audio_s == pytest.approx(0.75)
    assert timing.synthesis_s == pytest.approx(1.0)


def test_synthesis_ms_is_reported_to_a_tenth_of_a_millisecond() -> None:
    assert Timing(started=10.0, ended=10.12341).synthesis_ms == 123.4
    assert Timing(started=10.0, ended=10.12361).synthesis_ms == 123.6


def test_an_empty_stream_has_no_first_audio() -> None:
    timing = Timing()
    assert read(timing) == []
    assert timing.first_audio_s is None and timing.samples == 0 and timing.ended is not None
