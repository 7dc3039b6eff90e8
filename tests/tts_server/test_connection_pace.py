"""A connection paces its windows: one listener's clock, told of every chunk sent, across
segments, dropped on a cancel; the engine's windows grow with what that clock holds."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.tts_server.test_connection import Peer
from tests.tts_server.test_window_trace import records
from tts_protocol import SAMPLE_RATE, Cancel, Speak
from tts_server.engines import Engine
from tts_server.engines.prepared import Prepared
from tts_server.engines.timings import Chunk
from tts_server.engines.windows import LISTENER_LEAD_S, PlaybackClock, WindowPlan
from tts_server.testing.fake_engine import FakeEngine

TEXT = "The old lighthouse keeper climbed the stairs each night to light the lamp."


class ClockedEngine(FakeEngine):
    """The fake engine, keeping the clock each synthesis is paced by and its ends after each
    chunk."""

    def __init__(self, delay_s: float = 0.0) -> None:
        super().__init__(delay_s=delay_s)
        self.window_plan = WindowPlan(8, 240, 4, pace_to_listener=True)  # --window-pace
        self.clocks: list[PlaybackClock | None] = []
        self.streams: dict[str, int] = {}  # the streams counted as each text's synthesis starts
        self.sent_s = 0.0  # audio yielded

    async def synthesize(
        self, prepared: Prepared, clock: PlaybackClock | None = None
    ) -> AsyncIterator[Chunk]:
        self.clocks.append(clock)
        self.streams[prepared.text] = self.decode_rate.streams
        plan, self.window_plan = self.window_plan, None  # the fake speaks whole: no windows
        try:
            async for chunk in super().synthesize(prepared, clock):
                self.sent_s += chunk.audio.size / SAMPLE_RATE
                yield chunk
        finally:
            self.window_plan = plan


async def test_one_clock_hears_every_chunk_of_every_segment() -> None:
    engine = ClockedEngine()
    peer = Peer(engine)
    peer.start()
    try:
        await peer.send(Speak(id="a", text="Hello there, how are you?"))
        await peer.send(Speak(id="b", text="Fine, thanks."))
        await peer.until_terminal("a", "b")
    finally:
        await peer.stop()
    clock = engine.clocks[0]
    assert clock is not None and engine.clocks == [clock, clock]
    assert clock.lead_s == LISTENER_LEAD_S and clock.ends_at is not None
    started = peer.times[next(i for i, e in enumerate(peer.events) if isinstance(e, bytes))]
    # sent faster than played: back to back from the first chunk, after the lead
    assert clock.ends_at == pytest.approx(started + LISTENER_LEAD_S + engine.sent_s, abs=0.05)


async def test_a_listener_is_one_stream_from_its_first_segment_to_its_queue_empty() -> None:
    engine = ClockedEngine(delay_s=0.2)
    first, second = Peer(engine), Peer(engine)
    first.start()
    second.start()
    try:
        await first.send(Speak(id="a", text="Hello there, how are you?"))
        await first.send(Speak(id="b", text="Fine, thanks."))
        await first.until(lambda events: any(isinstance(e, bytes) for e in events))
        assert engine.decode_rate.streams == 1  # between its segments too
        await second.send(Speak(id="c", text="And you?"))
        await first.until_terminal("a", "b")
        await second.until_terminal("c")
        assert engine.decode_rate.streams == 0  # both queues empty
    finally:
        await first.stop()
        await second.stop()
    assert engine.streams["Hello there, how are you?"] == 1  # the first alone
    assert engine.streams["And you?"] == 2  # beside the first listener's reply, a or b


async def test_without_the_pace_a_connection_has_no_clock() -> None:
    engine = ClockedEngine()
    engine.window_plan = WindowPlan(8, 240, 4)  # the default: the static plan
    peer = Peer(engine)
    peer.start()
    try:
        await peer.send(Speak(id="a", text="Hello there, how are you?"))
        await peer.until_terminal("a")
    finally:
        await peer.stop()
    assert engine.clocks == [None]


async def test_a_cancel_drops_what_the_listener_had() -> None:
    engine = ClockedEngine(delay_s=0.3)
    peer = Peer(engine)
    peer.start()
    try:
        await peer.send(Speak(id="a", text="One. Two. Three. Four. Five. Six."))
        await peer.until(lambda events: any(isinstance(e, bytes) for e in events))
        clock = engine.clocks[0]
        assert clock is not None and clock.ahead() > 0
        await peer.send(Cancel(id="a"))
        await peer.until_terminal("a")
        assert clock.ends_at is None and clock.ahead() == 0.0
    finally:
        await peer.stop()


async def test_the_engines_windows_grow_with_the_audio_the_listener_holds(engine: Engine) -> None:
    async def chunks(clock: PlaybackClock | None) -> list[Chunk]:
        return [chunk async for chunk in engine.synthesize(engine.prepare(TEXT), clock)]

    await chunks(None)  # the voice's prior is ready; the rate measured
    alone = await chunks(PlaybackClock())  # nothing buffered: a short first window
    held = PlaybackClock()
    held.sent(60.0)  # a minute of audio still to play
    buffered = await chunks(held)
    assert len(alone) > 1 and len(buffered) == 1  # the whole sentence in one window
    assert engine.decode_rate.seconds_per_frame > 0


async def test_a_segment_of_another_reply_starts_a_new_playback() -> None:
    engine = ClockedEngine()
    peer = Peer(engine)
    peer.start()
    try:
        await peer.send(Speak(id="a", text="One. Two. Three. Four. Five. Six.", reply="first"))
        await peer.until_terminal("a")
        clock = engine.clocks[0]
        assert clock is not None and clock.ahead() > 1.0  # the first reply is still playing
        said = engine.sent_s
        await peer.send(Speak(id="b", text="Hello there, how are you?", reply="second"))
        await peer.until_terminal("b")
        started = peer.times[len(peer.events) - 1]  # about when b's audio went out
        fresh = clock.ends_at
        # b plays from its own first chunk, after the lead: not after the first reply's audio
        assert fresh == pytest.approx(started + LISTENER_LEAD_S + engine.sent_s - said, abs=0.05)
        more = engine.sent_s
        await peer.send(Speak(id="c", text="Fine, thanks.", reply="second"))
        await peer.until_terminal("c")
        assert clock.ends_at == pytest.approx(fresh + engine.sent_s - more, abs=0.01)  # queued
    finally:
        await peer.stop()


async def test_each_sentence_decoding_is_a_stream_until_its_end_or_its_close(
    engine: Engine,
) -> None:
    assert [chunk async for chunk in engine.synthesize(engine.prepare(TEXT))]  # prior ready
    rate = engine.decode_rate
    assert rate.streams == 0
    first = engine.synthesize(engine.prepare(TEXT), PlaybackClock())
    second = engine.synthesize(engine.prepare(TEXT), PlaybackClock())
    async with contextlib.aclosing(first), contextlib.aclosing(second):
        await anext(first)
        assert rate.streams == 1  # one sentence between its first window and its last
        await anext(second)
        assert rate.streams == 2  # a second listener's: each window's pace counts both
        rest = [chunk async for chunk in first]
        assert rest and rate.streams == 1  # the first sentence ended
    assert rate.streams == 0  # the second was closed half-way (a cancel): counted out


async def test_a_wait_of_the_listener_the_pace_models_is_traced(trace: Path) -> None:
    """The second segment of a reply comes after the first has played out (the model's lead
    and audio): the listener waited, and the trace says for how long."""
    engine = ClockedEngine()
    peer = Peer(engine)
    peer.start()
    try:
        await peer.send(Speak(id="a", text="Hi."))
        await peer.until_terminal("a")
        first_s = engine.sent_s
        await asyncio.sleep(first_s + LISTENER_LEAD_S + 0.3)
        await peer.send(Speak(id="b", text="Hello."))
        await peer.until_terminal("b")
    finally:
        await peer.stop()
    dry = records(trace)
    assert [record["event"] for record in dry] == ["dry"]  # the fake's windows are not paced
    (record,) = dry
    assert record["listener"] == id(engine.clocks[0])
    assert 0.3 <= record["waited_s"] < 0.3 + 0.25
    assert record["chunk_s"] == pytest.approx(engine.sent_s - first_s)
