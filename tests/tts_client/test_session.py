"""TTSSession against the real server: pipelining, cancellation, errors, close, rollover."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from tests.tts_client.conftest import FAST, reference_pcm
from tts_client import (
    SegmentFailed,
    SegmentStatus,
    SegmentStream,
    SessionClosed,
    TTSSession,
    WebSocketTransport,
)
from tts_client.testing.recording import RecordingTransport
from tts_protocol import SAMPLE_RATE, Cancel, Close, ErrorCode, decode_client
from tts_server.engines import Engine

WORDS = ["One.", "Two.", "Three.", "Four.", "Five.", "Six.", "Seven.", "Eight.", "Nine.", "Ten."]
LONG = "First part here. Then a second part. And the third part."


async def first_chunk(segment: SegmentStream) -> bytes:
    """Wait for the segment's first audio chunk."""
    return await anext(aiter(segment))


async def test_ready_info(ws_url: str) -> None:
    async with TTSSession(WebSocketTransport(ws_url), FAST) as session:
        assert session.ready.sample_rate == SAMPLE_RATE
        assert session.ready.default_voice in session.ready.voices


async def test_a_segment_keeps_what_was_asked_and_is_spoken_at_its_speed(
    ws_url: str, engine: Engine
) -> None:
    voice = ((next(v for v in engine.voices if v != engine.default_voice), 1.0),)
    # A voice's first use in the session's engine learns its statistics before its second
    # sentence (three sentences decoded whole: 3 to 6 s on a busy 2-core box), a wait FAST's
    # 5 s reply timeout is not about.
    patient = replace(FAST, reply_timeout=30.0)
    async with TTSSession(WebSocketTransport(ws_url), patient) as session:
        normal = await session.speak("The same words, at two speeds.", voice)
        fast = await session.speak("The same words, at two speeds.", voice, speed=2.0)
        normal_pcm, fast_pcm = await normal.read(), await fast.read()
    assert (fast.text, fast.voice, fast.speed) == ("The same words, at two speeds.", voice, 2.0)
    assert len(fast_pcm) < 0.75 * len(normal_pcm)


async def test_a_session_not_started_says_how_to_start_it() -> None:
    session = TTSSession(WebSocketTransport("ws://127.0.0.1:9/never-dialled"), FAST)
    how = r"^start the session first \(async with, or TTSSession\.connect\)$"
    with pytest.raises(RuntimeError, match=how):
        await session.speak("Too early.")


async def test_start_opens_one_connection_and_none_once_closed(ws_url: str) -> None:
    recorder = RecordingTransport(WebSocketTransport(ws_url))
    session = await TTSSession.connect(recorder, FAST)
    await session.start()  # already started: nothing more
    assert (session.connections, recorder.connects) == (1, 1)
    await session.aclose()
    closed_first = TTSSession(recorder, FAST)
    await closed_first.aclose()
    await closed_first.start()  # closed before it started: stays closed
    assert (closed_first.connections, recorder.connects) == (0, 1)
    with pytest.raises(SessionClosed):
        await closed_first.speak("Too late.")


async def test_pipelining_sends_all_before_audio_and_keeps_order(ws_url: str) -> None:
    recorder = RecordingTransport(WebSocketTransport(ws_url))
    async with TTSSession(recorder, FAST) as session:
        segments = [await session.speak(text) for text in WORDS]
        assert all(s.timings.sent is not None for s in segments)
        assert all(s.timings.first_audio is None for s in segments), "audio before all were sent"
        audio = [await s.read() for s in segments]
    assert len({s.id for s in segments}) == len(segments)
    for segment, pcm in zip(segments, audio, strict=True):
        assert segment.status is SegmentStatus.DONE
        assert segment.end is not None and len(pcm) == 2 * segment.end.samples > 0
    firsts = [s.timings.first_audio or 0.0 for s in segments]
    assert firsts == sorted(firsts)
    assert max(s.timings.sent or 0.0 for s in segments) < firsts[0]
    assert recorder.terminals() == {s.id: 1 for s in segments}
    assert recorder.connects == 1


async def test_cancel_one_mid_stream(ws_url: str) -> None:
    recorder = RecordingTransport(WebSocketTransport(ws_url))
    async with TTSSession(recorder, FAST) as session:
        long = await session.speak(LONG)
        queued = await session.speak("Never spoken.")
        after = await session.speak("After.")
        await first_chunk(long)
        await session.cancel(long)
        await session.cancel(queued)
        assert await long.read() == b""  # the rest of its audio is gone
        assert await queued.read() == b""
        pcm = await after.read()
    assert long.status is queued.status is SegmentStatus.CANCELLED
    assert after.status is SegmentStatus.DONE and after.end is not None
    assert len(pcm) == 2 * after.end.samples
    assert recorder.types(queued.id)[-1] == "cancelled"  # it may have started meanwhile
    assert recorder.terminals()[long.id] == 1


async def test_cancel_all_mid_stream_then_speak_again(ws_url: str, engine: Engine) -> None:
    recorder = RecordingTransport(WebSocketTransport(ws_url))
    async with TTSSession(recorder, FAST) as session:
        doomed = [await session.speak(text) for text in (LONG, "Two.", "Three.")]
        await first_chunk(doomed[0])
        delivered = doomed[0].delivered_bytes
        await session.cancel_all()
        assert decode_client(recorder.sent[0][-1]) == Cancel()  # one cancel, for all of them
        fresh = await session.speak("Fresh start.")
        pcm = await fresh.read()
        assert session.pending == 0
    for segment in doomed:
        assert segment.status is SegmentStatus.CANCELLED
        assert await segment.read() == b""
    assert doomed[0].delivered_bytes == delivered  # nothing delivered after the cancel
    assert pcm == await reference_pcm(engine, "Fresh start.")


async def test_segment_errors_surface_on_their_stream(ws_url: str) -> None:
    async with TTSSession(WebSocketTransport(ws_url), FAST) as session:
        bad_voice = await session.speak("Hello.", voice=(("no_such_voice", 1.0),))
        empty = await session.speak("   ")
        good = await session.speak("Still fine.")
        with pytest.raises(SegmentFailed) as failed:
            await bad_voice.read()
        assert failed.value.code is ErrorCode.UNKNOWN_VOICE
        assert failed.value.segment_id == bad_voice.id
        assert "no_such_voice" in failed.value.message  # the server's message, passed on
        with pytest.raises(SegmentFailed, match="empty_text"):
            await empty.read()
        assert await good.read()
    assert bad_voice.status is SegmentStatus.FAILED
    assert good.status is SegmentStatus.DONE


async def test_word_timings_come_with_the_audio_they_time(ws_url: str) -> None:
    async with TTSSession(WebSocketTransport(ws_url), FAST) as session:
        segment = await session.speak("Hello there, world.", marks=True)
        items = [item async for item in segment.with_marks()]
    assert isinstance(items[0], tuple)  # the first words come before the audio they time
    assert [w.text for w in segment.words if w.text.isalpha()] == ["Hello", "there", "world"]
    assert [w for item in items if isinstance(item, tuple) for w in item] == segment.words
    async with TTSSession(WebSocketTransport(ws_url), FAST) as session:
        plain = await session.speak("Hello there, world.")
        assert all(isinstance(item, bytes) for item in [i async for i in plain.with_marks()])
    assert plain.words == []  # marks only when asked for


async def test_aclose_drains_or_cancels(ws_url: str) -> None:
    session = await TTSSession.connect(WebSocketTransport(ws_url), FAST)
    drained = [await session.speak(text) for text in ("One.", "Two.")]
    await session.aclose()  # drains by default
    assert [s.status for s in drained] == [SegmentStatus.DONE] * 2
    with pytest.raises(SessionClosed, match=r"^the session is closed$"):
        await session.speak("Too late.")

    session = await TTSSession.connect(WebSocketTransport(ws_url), FAST)
    dropped = [await session.speak(text) for text in (LONG, "Two.")]
    await session.aclose(drain=False)
    assert [s.status for s in dropped] == [SegmentStatus.CANCELLED] * 2


async def test_leaving_the_block_drains_and_leaving_it_by_an_exception_cancels(
    ws_url: str,
) -> None:
    async with TTSSession(WebSocketTransport(ws_url), FAST) as session:
        drained = [await session.speak(text) for text in ("One.", "Two.")]
    assert [s.status for s in drained] == [SegmentStatus.DONE] * 2
    with pytest.raises(LookupError):
        async with TTSSession(WebSocketTransport(ws_url), FAST) as session:
            dropped = [await session.speak(text) for text in (LONG, "Two.")]
            raise LookupError("the caller failed")
    assert [s.status for s in dropped] == [SegmentStatus.CANCELLED] * 2


async def test_rollover_between_segments(ws_url: str) -> None:
    recorder = RecordingTransport(WebSocketTransport(ws_url, max_connection_age=0.3))
    async with TTSSession(recorder, FAST) as session:
        busy = await session.speak(LONG)
        await asyncio.sleep(0.4)  # the connection is now too old, with a segment in flight
        held = await session.speak("Held back.")
        assert held.timings.sent is None  # not sent on the retiring connection
        busy_pcm, held_pcm = await busy.read(), await held.read()
        await asyncio.sleep(0.4)
        idle = await session.speak("Idle rollover.")
        idle_pcm = await idle.read()
    for segment, pcm in ((busy, busy_pcm), (held, held_pcm), (idle, idle_pcm)):
        assert segment.status is SegmentStatus.DONE and segment.end is not None
        assert len(pcm) == 2 * segment.end.samples
    assert (held.timings.sent or 0.0) >= (busy.timings.end or 0.0)
    assert recorder.connects == session.connections == 3
    assert recorder.terminals() == {busy.id: 1, held.id: 1, idle.id: 1}
    # each retired connection was closed gracefully: 'close' was its last message
    assert [decode_client(sent[-1]) for sent in recorder.sent] == [Close()] * 3


async def test_max_in_flight_holds_segments_back_in_order(ws_url: str) -> None:
    config = replace(FAST, max_in_flight=2)
    async with TTSSession(WebSocketTransport(ws_url), config) as session:
        segments = [await session.speak(text) for text in WORDS[:4]]
        assert [s.timings.sent is not None for s in segments] == [True, True, False, False]
        audio = [await s.read() for s in segments]
    assert session.connections == 1  # the held ones went on as replies came, on the same one
    assert all(s.status is SegmentStatus.DONE for s in segments)
    assert all(
        s.end is not None and len(a) == 2 * s.end.samples
        for s, a in zip(segments, audio, strict=True)
    )
