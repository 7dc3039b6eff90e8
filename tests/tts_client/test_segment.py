"""``SegmentStream``: what the caller of ``speak`` iterates, driven here by hand."""

from __future__ import annotations

import asyncio

import pytest

from tts_client import SegmentFailed, SegmentStatus, SegmentStream
from tts_protocol import End, ErrorCode, Word


def stream() -> SegmentStream:
    return SegmentStream("id-1", "Hello there.", None, None)


def test_a_new_stream_holds_its_request_and_nothing_yet() -> None:
    segment = SegmentStream("0123456789ab", "A sentence long enough to be cut short.", "v", 1.5)
    assert (segment.id, segment.voice, segment.speed) == ("0123456789ab", "v", 1.5)
    assert segment.text == "A sentence long enough to be cut short."
    assert segment.status is SegmentStatus.PENDING and not segment.done
    assert (segment.error, segment.end, segment.delivered_bytes, segment.words) == (
        None,
        None,
        0,
        [],
    )
    assert repr(segment) == "<SegmentStream 01234567 pending 'A sentence long enough t'>"


async def test_chunks_arrive_in_order_and_iteration_ends_when_done() -> None:
    segment = stream()
    segment.feed(b"\x01\x00")
    segment.feed(b"\x02\x00\x03\x00")
    segment.finish(SegmentStatus.DONE, end=End(id="id-1", samples=3, synth_ms=1.0))
    assert [chunk async for chunk in segment] == [b"\x01\x00", b"\x02\x00\x03\x00"]
    assert segment.samples == 3 and segment.end is not None and segment.end.samples == 3


async def test_a_reader_waits_for_audio_that_comes_later() -> None:
    segment = stream()
    reading = asyncio.create_task(segment.read())
    await asyncio.sleep(0)
    segment.feed(b"ab")
    await asyncio.sleep(0)
    segment.feed(b"cd")
    segment.finish(SegmentStatus.DONE)
    assert await reading == b"abcd"


async def test_a_failed_segment_raises_its_error_after_the_audio_it_had() -> None:
    segment = stream()
    segment.feed(b"ab")
    segment.finish(SegmentStatus.FAILED, SegmentFailed(ErrorCode.SYNTHESIS_FAILED, "x", "id-1"))
    chunks = []
    with pytest.raises(SegmentFailed):
        async for chunk in segment:
            chunks.append(chunk)
    assert chunks == [b"ab"]


async def test_cancel_drops_buffered_audio_and_later_audio() -> None:
    segment = stream()
    segment.feed(b"ab")
    segment.finish(SegmentStatus.CANCELLED)
    segment.feed(b"cd")
    assert await segment.read() == b""
    assert await segment.wait() is SegmentStatus.CANCELLED


async def test_the_first_terminal_status_wins() -> None:
    segment = stream()
    segment.finish(SegmentStatus.DONE)
    segment.finish(SegmentStatus.FAILED)
    assert segment.status is SegmentStatus.DONE and segment.error is None


def test_timings_count_from_the_first_send() -> None:
    segment = stream()
    assert segment.timings.first_audio_s is None and segment.timings.total_s is None
    segment.mark_sent()
    sent = segment.timings.sent
    segment.mark_sent()  # a re-send after a reconnect does not move it
    assert segment.timings.sent == sent
    segment.feed(b"")  # nothing: no first audio yet
    assert segment.timings.first_audio is None
    segment.feed(b"ab")
    segment.finish(SegmentStatus.DONE)
    first, total = segment.timings.first_audio_s, segment.timings.total_s
    assert first is not None and total is not None and 0 <= first <= total


# --- word timings ------------------------------------------------------------------------

HI = (Word("Hi", 0.0, 200.0),)
THERE = (Word("there", 250.0, 600.0),)


def marked() -> SegmentStream:
    segment = stream()
    segment.feed_marks(HI)
    segment.feed(b"ab")
    segment.feed_marks(THERE)
    segment.feed(b"cd")
    segment.finish(SegmentStatus.DONE)
    return segment


async def test_plain_iteration_yields_audio_only_and_words_collects_the_marks() -> None:
    segment = marked()
    assert [chunk async for chunk in segment] == [b"ab", b"cd"]
    assert segment.words == [*HI, *THERE]


async def test_with_marks_yields_words_before_the_audio_they_time() -> None:
    assert [item async for item in marked().with_marks()] == [HI, b"ab", THERE, b"cd"]


async def test_with_marks_raises_the_error_of_a_failed_segment() -> None:
    segment = stream()
    segment.feed_marks(HI)
    segment.finish(SegmentStatus.FAILED, SegmentFailed(ErrorCode.SYNTHESIS_FAILED, "x", "id-1"))
    items = segment.with_marks()
    assert await anext(items) == HI
    with pytest.raises(SegmentFailed):
        await anext(items)


async def test_marks_after_the_end_or_empty_are_ignored() -> None:
    segment = stream()
    segment.feed_marks(())
    segment.finish(SegmentStatus.CANCELLED)
    segment.feed_marks(HI)
    assert segment.words == [] and [item async for item in segment.with_marks()] == []
