"""``ClientProtocol``: the client's rules of the wire, fed frames by hand (no I/O)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tts_protocol import (
    Audio,
    Cancel,
    Cancelled,
    ClientEvent,
    ClientProtocol,
    Connected,
    ConnectionFailed,
    ConnectionState,
    End,
    Error,
    ErrorCode,
    Marks,
    Ready,
    SegmentCancelled,
    SegmentDeferred,
    SegmentEnded,
    SegmentErrorReported,
    SegmentMarked,
    SegmentStarted,
    ServerErrorReported,
    Speak,
    Start,
    Word,
    encode,
)

READY = encode(Ready(voices=("af_heart",), default_voice="af_heart"))


def start(id: str) -> str:
    return encode(Start(id=id))


def end(id: str, samples: int = 2) -> str:
    return encode(End(id=id, samples=samples, synth_ms=1.0))


def opened(max_in_flight: int = 16) -> ClientProtocol:
    protocol = ClientProtocol(max_in_flight)
    protocol.connection_opened()
    assert protocol.receive(READY) == [Connected(protocol.ready)]  # type: ignore[arg-type]
    return protocol


def spoken(protocol: ClientProtocol, *ids: str) -> list[Speak]:
    for id in ids:
        protocol.speak(Speak(id=id, text=f"text of {id}"))
    return protocol.take_speaks()


def reconnected(protocol: ClientProtocol) -> list[Speak]:
    """Lose the connection, open the next one; the ``speak`` messages it sends."""
    protocol.connection_lost()
    protocol.connection_opened()
    protocol.receive(READY)
    return protocol.take_speaks()


def feed(protocol: ClientProtocol, *frames: str | bytes) -> list[ClientEvent]:
    return [event for frame in frames for event in protocol.receive(frame)]


def audio_of(events: list[ClientEvent], id: str) -> bytes:
    return b"".join(e.pcm for e in events if isinstance(e, Audio) and e.segment_id == id)


# --- the handshake -----------------------------------------------------------------------


def test_ready_opens_the_connection() -> None:
    protocol = ClientProtocol()
    protocol.connection_opened()
    assert protocol.state is ConnectionState.CONNECTING
    [event] = protocol.receive(READY)
    assert isinstance(event, Connected) and event.ready.voices == ("af_heart",)
    assert protocol.state is ConnectionState.OPEN and protocol.ready == event.ready


@pytest.mark.parametrize(
    ("frame", "violation", "reason"),
    [
        (encode(Error(id=None, code=ErrorCode.INTERNAL, message="loading")), False, "internal"),
        (b"\x00\x01", True, "binary frame"),
        (start("a"), True, "expected 'ready'"),
        (READY.replace('"protocol":1', '"protocol":2'), True, "protocol 2"),
        ("{not json", True, "invalid control frame"),
    ],
)
def test_anything_but_a_protocol_1_ready_fails_the_connection(
    frame: str | bytes, violation: bool, reason: str
) -> None:
    protocol = ClientProtocol()
    protocol.connection_opened()
    [event] = protocol.receive(frame)
    assert isinstance(event, ConnectionFailed) and event.violation is violation
    assert reason in event.reason
    assert protocol.state is ConnectionState.FAILED
    assert protocol.receive(READY) == []  # a failed connection is not revived


def test_a_fresh_protocol_is_closed_with_nothing_in_flight() -> None:
    protocol = ClientProtocol()
    assert protocol.state is ConnectionState.CLOSED and protocol.ready is None
    assert (protocol.pending, protocol.in_flight) == (0, 0)
    with pytest.raises(ValueError, match=r"^max_in_flight must be at least 1$"):
        ClientProtocol(max_in_flight=0)


def test_violations_say_exactly_what_the_server_did() -> None:
    protocol = ClientProtocol()
    protocol.connection_opened()
    [event] = protocol.receive(b"\x00\x00")
    assert event == ConnectionFailed("expected 'ready', got a binary frame", violation=True)
    [event] = opened().receive(b"\x00\x00")
    assert event == ConnectionFailed("audio frame outside a segment", violation=True)


def test_a_busy_refusal_instead_of_ready_says_try_again_later() -> None:
    protocol = ClientProtocol()
    protocol.connection_opened()
    [event] = protocol.receive(encode(Error(id=None, code=ErrorCode.BUSY, message="64 open")))
    assert event == ConnectionFailed("server refused: busy: 64 open", violation=False, busy=True)
    protocol.connection_opened()
    [event] = protocol.receive(encode(Error(id=None, code=ErrorCode.INTERNAL, message="x")))
    assert isinstance(event, ConnectionFailed) and not event.busy


def test_a_busy_segment_is_held_then_sent_again_in_order() -> None:
    protocol = opened()
    assert [s.id for s in spoken(protocol, "a", "b", "c")] == ["a", "b", "c"]
    busy = encode(Error(id="b", code=ErrorCode.BUSY, message="queues full"))
    assert feed(protocol, busy) == [SegmentDeferred("b", "queues full")]
    assert (protocol.in_flight, protocol.pending, protocol.is_pending("b")) == (2, 3, True)
    assert protocol.take_speaks() == []  # held until the caller's backoff is over
    assert feed(protocol, start("a"), b"\x01\x00", end("a", 1))[-1].segment_id == "a"  # type: ignore[union-attr]
    assert protocol.retry_deferred() == 1
    assert [s.id for s in protocol.take_speaks()] == ["b"]
    assert protocol.retry_deferred() == 0
    assert isinstance(feed(protocol, start("c"), end("c", 0))[-1], SegmentEnded)
    assert isinstance(feed(protocol, start("b"), end("b", 0))[-1], SegmentEnded)
    assert protocol.pending == 0


def test_a_held_segment_is_cancelled_without_a_frame_and_resent_after_a_reconnect() -> None:
    protocol = opened()
    spoken(protocol, "a", "b")
    feed(protocol, encode(Error(id="a", code=ErrorCode.BUSY, message="full")))
    feed(protocol, encode(Error(id="b", code=ErrorCode.BUSY, message="full")))
    assert protocol.cancel("a") is None and not protocol.is_pending("a")  # the server never had it
    protocol.connection_lost()
    protocol.connection_opened()
    feed(protocol, READY)
    assert protocol.take_speaks() == []  # still held: a reconnect is no reason to hurry
    protocol.retry_deferred()
    assert [s.id for s in protocol.take_speaks()] == ["b"]


def test_a_segment_cancelled_before_its_busy_refusal_arrived_is_never_sent_again() -> None:
    protocol = opened()
    spoken(protocol, "a", "b")
    assert protocol.cancel("a") == Cancel(id="a")  # crosses the server's refusal on the wire
    feed(protocol, encode(Error(id="a", code=ErrorCode.BUSY, message="full")))
    protocol.retry_deferred()
    protocol.speak(Speak(id="c", text="c"))
    assert [s.id for s in protocol.take_speaks()] == ["c"]  # and the rest is not held up
    assert not protocol.is_pending("a")


def test_nothing_is_sent_before_ready() -> None:
    protocol = ClientProtocol()
    protocol.speak(Speak(id="a", text="Hi."))
    assert protocol.take_speaks() == []
    protocol.connection_opened()
    assert protocol.take_speaks() == []
    protocol.receive(READY)
    assert [s.id for s in protocol.take_speaks()] == ["a"]


# --- order and attribution ---------------------------------------------------------------


def test_audio_belongs_to_the_segment_of_the_last_start() -> None:
    protocol = opened()
    spoken(protocol, "a", "b")
    events = feed(protocol, start("a"), b"\x01\x00", b"\x02\x00", end("a"), start("b"), b"\x03")
    assert audio_of(events, "a") == b"\x01\x00\x02\x00"
    assert audio_of(events, "b") == b"\x03"
    assert [type(e) for e in events if not isinstance(e, Audio)] == [
        SegmentStarted,
        SegmentEnded,
        SegmentStarted,
    ]


def test_end_carries_the_servers_figures_and_frees_a_slot() -> None:
    protocol = opened(max_in_flight=1)
    assert [s.id for s in spoken(protocol, "a", "b")] == ["a"]
    assert protocol.take_speaks() == []  # b waits for a slot
    [started, ended] = feed(protocol, start("a"), end("a", samples=480))
    assert started == SegmentStarted("a")
    assert isinstance(ended, SegmentEnded) and ended.end.samples == 480
    assert protocol.in_flight == 0 and protocol.pending == 1
    assert [s.id for s in protocol.take_speaks()] == ["b"]


@pytest.mark.parametrize(
    ("frames", "reason"),
    [
        ((b"\x00\x00",), "audio frame outside a segment"),
        ((start("a"), start("b")), "'start' b before 'end' a"),
        ((start("zzz"),), "unknown segment 'zzz'"),
        ((end("zzz"),), "unknown segment 'zzz'"),
        ((READY,), "unexpected 'ready'"),
        (('{"type":"end","id":"a"}',), "invalid control frame"),
    ],
)
def test_protocol_violations_fail_the_connection(
    frames: tuple[str | bytes, ...], reason: str
) -> None:
    protocol = opened()
    spoken(protocol, "a", "b")
    events = feed(protocol, *frames)
    assert isinstance(events[-1], ConnectionFailed) and events[-1].violation
    assert reason in events[-1].reason
    assert feed(protocol, start("a"), b"\x00\x00") == []  # later frames are ignored


def test_a_reply_for_a_segment_not_sent_on_this_connection_is_a_violation() -> None:
    protocol = opened(max_in_flight=1)
    spoken(protocol, "a", "b")  # b is pending but not sent
    [event] = protocol.receive(start("b"))
    assert isinstance(event, ConnectionFailed) and "unknown segment 'b'" in event.reason


def test_errors_for_segments_fail_them_and_others_are_reported() -> None:
    protocol = opened()
    spoken(protocol, "a")
    failed = encode(Error(id="a", code=ErrorCode.UNKNOWN_VOICE, message="no such voice"))
    stray = encode(Error(id=None, code=ErrorCode.INVALID_JSON, message="bad frame"))
    unknown = encode(Error(id="zzz", code=ErrorCode.QUEUE_FULL, message="full"))
    assert feed(protocol, stray, unknown, failed) == [
        ServerErrorReported(ErrorCode.INVALID_JSON, "bad frame"),
        ServerErrorReported(ErrorCode.QUEUE_FULL, "full"),
        SegmentErrorReported("a", ErrorCode.UNKNOWN_VOICE, "no such voice"),
    ]
    assert protocol.pending == 0 and protocol.state is ConnectionState.OPEN


def test_duplicate_ids_are_refused() -> None:
    protocol = opened()
    spoken(protocol, "a")
    with pytest.raises(ValueError, match="already pending"):
        protocol.speak(Speak(id="a", text="again"))
    with pytest.raises(ValueError):
        ClientProtocol(max_in_flight=0)


def test_a_segment_spoken_later_is_sent_beside_those_in_flight() -> None:
    protocol = opened()
    assert [s.id for s in spoken(protocol, "a")] == ["a"]
    assert [s.id for s in spoken(protocol, "b", "c")] == ["b", "c"]  # a is still in flight
    assert protocol.in_flight == 3


def test_a_segment_refused_as_shutting_down_goes_on_the_next_connection_only() -> None:
    protocol = opened()
    spoken(protocol, "a", "b")
    refusal = encode(Error(id="a", code=ErrorCode.SHUTTING_DOWN, message="draining"))
    assert feed(protocol, refusal) == []  # not a failure: the next server will take it
    assert protocol.in_flight == 1 and protocol.is_pending("a")
    assert protocol.take_speaks() == []  # not again to the server that is going away
    assert [s.id for s in reconnected(protocol)] == ["a", "b"]


def test_a_segment_refused_as_shutting_down_is_no_longer_the_servers_to_cancel() -> None:
    protocol = opened()
    spoken(protocol, "a")
    feed(protocol, encode(Error(id="a", code=ErrorCode.SHUTTING_DOWN, message="draining")))
    assert protocol.cancel("a") is None  # the server dropped it: nothing to ask
    assert not protocol.is_pending("a")


# --- cancel ------------------------------------------------------------------------------


def test_cancel_of_a_sent_segment_asks_the_server_and_drops_its_audio() -> None:
    protocol = opened()
    spoken(protocol, "a", "b")
    assert protocol.cancel("a") == Cancel(id="a")
    assert protocol.cancel("a") is None  # once is enough
    events = feed(protocol, start("a"), b"\x01\x00", encode(Cancelled(id="a")), start("b"), b"\x02")
    assert audio_of(events, "a") == b""
    assert SegmentCancelled("a") in events and audio_of(events, "b") == b"\x02"
    assert protocol.in_flight == 1


def test_cancel_of_an_unsent_segment_drops_it_silently() -> None:
    protocol = opened(max_in_flight=1)
    spoken(protocol, "a", "b")
    assert protocol.cancel("b") is None
    assert not protocol.is_pending("b")
    feed(protocol, start("a"), end("a"))
    assert protocol.take_speaks() == []


def test_cancel_all_sends_one_cancel_only_for_what_the_server_has() -> None:
    protocol = opened(max_in_flight=1)
    spoken(protocol, "a", "b", "c")
    ids, message = protocol.cancel_all()
    assert ids == ["a", "b", "c"] and message == Cancel(id=None)
    assert protocol.pending == 1  # a awaits the server's reply; b and c never left
    assert protocol.cancel_all() == ([], None)
    closed = ClientProtocol()
    closed.speak(Speak(id="x", text="Hi."))
    assert closed.cancel_all() == (["x"], None) and closed.pending == 0


def test_cancel_all_after_a_single_cancel_cancels_the_rest() -> None:
    protocol = opened()
    spoken(protocol, "a", "b", "c")
    assert protocol.cancel("a") == Cancel(id="a")
    assert protocol.cancel_all() == (["b", "c"], Cancel(id=None))


# --- reconnect and resume ----------------------------------------------------------------


def test_a_lost_connection_resends_unfinished_segments_and_skips_delivered_audio() -> None:
    protocol = opened()
    spoken(protocol, "done", "half", "queued")
    first = feed(protocol, start("done"), b"AA", end("done"), start("half"), b"BBBB")
    assert audio_of(first, "half") == b"BBBB"
    protocol.connection_lost()
    assert protocol.state is ConnectionState.CLOSED and protocol.take_speaks() == []
    assert feed(protocol, b"late") == []  # nothing is read without a connection
    protocol.connection_opened()
    protocol.receive(READY)
    assert [s.id for s in protocol.take_speaks()] == ["half", "queued"]
    again = feed(protocol, start("half"), b"BBB", b"BCC", end("half"), start("queued"), b"DD")
    assert audio_of(again, "half") == b"CC"  # byte-exact: the caller sees each byte once
    assert audio_of(again, "queued") == b"DD"


def test_segments_cancelled_on_a_lost_connection_are_over() -> None:
    protocol = opened()
    spoken(protocol, "a", "b")
    protocol.cancel("a")
    protocol.connection_lost()
    assert not protocol.is_pending("a") and protocol.is_pending("b")
    protocol.connection_opened()
    protocol.receive(READY)
    assert [s.id for s in protocol.take_speaks()] == ["b"]


def test_fail_all_forgets_everything() -> None:
    protocol = opened()
    spoken(protocol, "a", "b")
    assert protocol.fail_all() == ["a", "b"]
    assert protocol.pending == 0 and protocol.in_flight == 0


@given(
    audio=st.binary(min_size=1, max_size=64),
    cuts=st.lists(st.integers(min_value=0, max_value=64), max_size=4),
    frame=st.integers(min_value=1, max_value=9),
)
def test_resume_delivers_every_byte_exactly_once(audio: bytes, cuts: list[int], frame: int) -> None:
    """Drop the connection after each cut (in bytes received); the server re-sends from 0."""
    protocol = opened()
    spoken(protocol, "s")
    delivered = b""
    for cut in [*cuts, None]:
        events: list[ClientEvent] = protocol.receive(start("s"))
        frames = [audio[i : i + frame] for i in range(0, len(audio), frame)]
        received = 0
        for chunk in frames:
            if cut is not None and received >= cut:
                break
            events += protocol.receive(chunk)
            received += len(chunk)
        else:
            if cut is None:
                events += protocol.receive(end("s"))
        delivered += audio_of(events, "s")
        if cut is None:
            break
        assert [s.id for s in reconnected(protocol)] == ["s"]
    assert delivered == audio
    assert protocol.pending == 0


# --- word timings ------------------------------------------------------------------------


def marks(id: str, *words: tuple[str, float, float]) -> str:
    return encode(Marks(id=id, words=tuple(Word(*w) for w in words)))


def words_of(events: list[ClientEvent], id: str) -> list[str]:
    marked = [e for e in events if isinstance(e, SegmentMarked) and e.segment_id == id]
    return [w.text for e in marked for w in e.words]


def test_marks_belong_to_the_segment_of_the_last_start() -> None:
    protocol = opened()
    spoken(protocol, "a")
    events = feed(protocol, start("a"), marks("a", ("Hi", 0, 100)), b"\x01\x00", end("a"))
    assert events[1] == SegmentMarked("a", (Word("Hi", 0, 100),))
    assert isinstance(events[2], Audio)


def test_marks_outside_their_segment_break_the_protocol() -> None:
    protocol = opened()
    spoken(protocol, "a")
    (failed,) = feed(protocol, marks("a", ("Hi", 0, 100)))
    assert isinstance(failed, ConnectionFailed) and failed.violation
    assert failed.reason == "'marks' for a outside its segment"


def test_a_resumed_segment_skips_the_words_already_delivered() -> None:
    protocol = opened()
    spoken(protocol, "a")
    first = feed(protocol, start("a"), marks("a", ("one", 0, 1), ("two", 2, 3)), b"\x01\x00")
    assert [s.id for s in reconnected(protocol)] == ["a"]
    again = feed(
        protocol,
        start("a"),
        marks("a", ("one", 0, 1), ("two", 2, 3)),
        b"\x01\x00",
        marks("a", ("three", 4, 5)),
        end("a"),
    )
    assert words_of(first, "a") + words_of(again, "a") == ["one", "two", "three"]


def test_words_delivered_in_several_marks_are_all_skipped_on_resume() -> None:
    protocol = opened()
    spoken(protocol, "a")
    first = feed(protocol, start("a"), marks("a", ("one", 0, 1), ("two", 2, 3)))
    first += feed(protocol, b"\x01\x00", marks("a", ("three", 4, 5)))
    assert [s.id for s in reconnected(protocol)] == ["a"]
    again = feed(
        protocol,
        start("a"),
        marks("a", ("one", 0, 1), ("two", 2, 3)),
        b"\x01\x00",
        marks("a", ("three", 4, 5), ("four", 6, 7)),
        end("a"),
    )
    assert words_of(first, "a") + words_of(again, "a") == ["one", "two", "three", "four"]


def test_marks_of_a_cancelled_segment_are_dropped() -> None:
    protocol = opened()
    spoken(protocol, "a")
    feed(protocol, start("a"))
    protocol.cancel("a")
    assert feed(protocol, marks("a", ("Hi", 0, 1))) == []
