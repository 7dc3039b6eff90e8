"""``ServerProtocol``: the server's rules of the wire on one connection, fed frames by hand."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tts_protocol import (
    DEFAULT_MAX_QUEUE,
    DEFAULT_MAX_TEXT_CHARS,
    Action,
    Cancel,
    CancelCurrent,
    CancelQueued,
    Close,
    Error,
    ErrorCode,
    Finish,
    ProtocolError,
    QueueSegment,
    Refuse,
    ServerProtocol,
    Speak,
    encode,
)

CLOSE = encode(Close())
VOICE = (("af_heart", 1.0),)  # a parsed voice, as the decoder hands it on
SHUTTING_DOWN = "the server is shutting down; send it again on a new connection"


def speak(id: str, text: str = "Hi.") -> Speak:
    return Speak(id=id, text=text)


def frame(message: Speak | Cancel | Close, *, binary: bool = False) -> str | bytes:
    """``message`` as a text frame's ``str`` or a binary frame's ``bytes``."""
    text = encode(message)
    return text.encode() if binary else text


def queued(protocol: ServerProtocol, *ids: str) -> None:
    """Send a ``speak`` for each id and accept it, as a server with room and the voice does."""
    for id in ids:
        [action] = protocol.receive(frame(speak(id)))
        assert action == QueueSegment(speak(id))
        protocol.accept(speak(id))


def started(protocol: ServerProtocol) -> str:
    """Take the next segment to synthesis; its id."""
    step = protocol.next_step()
    assert isinstance(step, Speak)
    return step.id


def refusal(id: str | None, code: ErrorCode, message: str) -> list[Action]:
    return [Refuse(Error(id=id, code=code, message=message))]


def duplicate(id: str) -> list[Action]:
    return refusal(id, ErrorCode.INVALID_MESSAGE, "duplicate segment id")


# --- decoding ----------------------------------------------------------------------------


@pytest.mark.parametrize("binary", [True, False], ids=["binary-frame", "text-frame"])
def test_a_speak_in_either_frame_type_is_handed_out_whole_and_queued_only_on_accept(
    binary: bool,
) -> None:
    protocol = ServerProtocol()
    message = Speak(id="s1", text="Either frame type.", voice=VOICE, speed=1.5, marks=True)
    assert protocol.receive(frame(message, binary=binary)) == [QueueSegment(message)]
    assert protocol.queued == ()  # the server has not admitted it yet
    protocol.accept(message)
    assert protocol.queued == ("s1",) and protocol.in_progress is None
    assert protocol.next_step() == message


def test_a_fresh_protocol_is_open_with_nothing_queued() -> None:
    protocol = ServerProtocol()
    assert (protocol.max_queue, protocol.max_text_chars) == (64, 2_000)
    assert (DEFAULT_MAX_QUEUE, DEFAULT_MAX_TEXT_CHARS) == (64, 2_000)
    assert (protocol.closing, protocol.draining) == (False, False)
    assert (protocol.queued, protocol.in_progress) == ((), None)
    assert protocol.next_step() is None  # nothing to do: the worker waits


MALFORMED: list[tuple[str | bytes, ErrorCode, str | None]] = [
    (b"\x00\xffgarbage\x80", ErrorCode.INVALID_JSON, None),
    (b'\xc3\x28{"type":"speak"}', ErrorCode.INVALID_JSON, None),
    ("", ErrorCode.INVALID_JSON, None),
    ("{oops", ErrorCode.INVALID_JSON, None),
    ("[1, 2, 3]", ErrorCode.INVALID_MESSAGE, None),
    ('{"type": "speak", "text": "no id"}', ErrorCode.INVALID_MESSAGE, None),
    ('{"type": "dance", "id": "d1"}', ErrorCode.INVALID_MESSAGE, "d1"),
    ('{"type": "cancel", "id": 7}', ErrorCode.INVALID_MESSAGE, None),
    (encode(Speak(id="e1", text="   ")), ErrorCode.EMPTY_TEXT, "e1"),
    (encode(Speak(id="l1", text="x" * 51)), ErrorCode.TEXT_TOO_LONG, "l1"),
    (encode(Speak(id="p1", text="Hi.", speed=4)), ErrorCode.INVALID_MESSAGE, "p1"),
    ('{"type":"speak","id":"v1","text":"Hi.","voice":""}', ErrorCode.INVALID_MESSAGE, "v1"),
]


@pytest.mark.parametrize(
    ("data", "code", "segment", "binary"),
    [
        pytest.param(data, code, segment, binary, id=f"{code}-{n}-{kind}")
        for n, (data, code, segment) in enumerate(MALFORMED)
        for binary, kind in ((True, "binary"), (False, "text"))
        if binary or isinstance(data, str)  # bytes that are not UTF-8 need a binary frame
    ],
)
def test_a_malformed_frame_gets_one_typed_error(
    data: str | bytes, code: ErrorCode, segment: str | None, binary: bool
) -> None:
    protocol = ServerProtocol(max_text_chars=50)
    payload = data.encode() if binary and isinstance(data, str) else data
    [action] = protocol.receive(payload)
    assert isinstance(action, Refuse)
    assert (action.error.code, action.error.id) == (code, segment)
    assert not protocol.closing and protocol.queued == ()


def test_the_text_limit_is_the_protocols_own() -> None:
    protocol = ServerProtocol(max_text_chars=5)
    assert protocol.receive(frame(speak("ok", "Hello"))) == [QueueSegment(speak("ok", "Hello"))]
    message = "'text' has 6 chars; the limit is 5"
    assert protocol.receive(frame(speak("no", "Hello!"))) == refusal(
        "no", ErrorCode.TEXT_TOO_LONG, message
    )


# --- the queue ---------------------------------------------------------------------------


def test_ids_are_unique_among_queued_and_in_progress_segments() -> None:
    protocol = ServerProtocol()
    queued(protocol, "a", "b")
    assert protocol.receive(frame(speak("b"), binary=True)) == duplicate("b")  # queued
    assert started(protocol) == "a"
    assert protocol.receive(frame(speak("a"))) == duplicate("a")  # in progress
    protocol.segment_ended()
    queued(protocol, "a")  # once it is over, the id is free
    assert protocol.queued == ("b", "a")


def test_the_queue_bound_counts_waiting_segments_not_the_one_in_progress() -> None:
    protocol = ServerProtocol(max_queue=2)
    queued(protocol, "q1", "q2")
    full = refusal("q3", ErrorCode.QUEUE_FULL, "2 segments are already queued")
    assert protocol.receive(frame(speak("q3"))) == full
    assert started(protocol) == "q1"  # q1 left the queue
    queued(protocol, "q3")
    assert protocol.queued == ("q2", "q3")


def test_a_speak_the_server_refuses_after_the_protocols_checks_leaves_no_trace() -> None:
    protocol = ServerProtocol(max_queue=1)
    [action] = protocol.receive(frame(speak("v")))  # the server finds no such voice, say
    assert action == QueueSegment(speak("v"))
    assert protocol.queued == ()
    queued(protocol, "v")  # the id is free and the bound not spent
    assert protocol.queued == ("v",)


def test_accept_applies_the_connections_rules_again() -> None:
    protocol = ServerProtocol(max_queue=1)
    queued(protocol, "a")
    with pytest.raises(ProtocolError, match="duplicate segment id"):
        protocol.accept(speak("a"))
    with pytest.raises(ProtocolError, match="1 segments are already queued") as refused:
        protocol.accept(speak("b"))
    assert (refused.value.code, refused.value.id) == (ErrorCode.QUEUE_FULL, "b")
    assert protocol.queued == ("a",)


def test_refusals_come_in_order_draining_closing_duplicate_then_queue_full() -> None:
    def crowded(*, close: bool, drain: bool) -> ServerProtocol:
        protocol = ServerProtocol(max_queue=1)
        queued(protocol, "a")  # "a" again is a duplicate, and the queue is full
        if close:
            assert protocol.receive(CLOSE) == []
        if drain:
            protocol.drain()
        return protocol

    closing = refusal("a", ErrorCode.INVALID_MESSAGE, "connection is closing")
    draining = refusal("a", ErrorCode.SHUTTING_DOWN, SHUTTING_DOWN)
    assert crowded(close=False, drain=False).receive(frame(speak("a"))) == duplicate("a")
    assert crowded(close=True, drain=False).receive(frame(speak("a"))) == closing
    assert crowded(close=True, drain=True).receive(frame(speak("a"))) == draining
    assert crowded(close=False, drain=True).receive(frame(speak("a"))) == draining
    empty = crowded(close=True, drain=True).receive(frame(speak("a", "  ")))  # decoding first
    assert empty == refusal("a", ErrorCode.EMPTY_TEXT, "'text' is empty")


def test_segments_go_to_synthesis_one_at_a_time_in_the_order_accepted() -> None:
    protocol = ServerProtocol()
    queued(protocol, "x", "a", "m")
    assert started(protocol) == "x" and protocol.in_progress == "x"
    with pytest.raises(RuntimeError, match="segment 'x' is still in progress"):
        protocol.next_step()
    order = []
    for _ in range(10):  # three segments: a stuck protocol fails below instead of hanging
        if protocol.in_progress is None:
            break
        protocol.segment_ended()
        order.append(protocol.next_step())
    assert order == [speak("a"), speak("m"), None]


# --- cancel ------------------------------------------------------------------------------


def test_cancel_by_id_drops_a_queued_segment() -> None:
    protocol = ServerProtocol()
    queued(protocol, "a", "b", "c")
    assert started(protocol) == "a"
    assert protocol.receive(frame(Cancel(id="b"), binary=True)) == [CancelQueued(("b",))]
    assert protocol.queued == ("c",) and protocol.in_progress == "a"  # "a" plays on
    assert protocol.receive(frame(Cancel(id="b"))) == []  # it already had its reply
    queued(protocol, "b")  # and its id is free


def test_cancel_by_id_stops_the_segment_in_progress_which_ends_when_the_server_says() -> None:
    protocol = ServerProtocol()
    queued(protocol, "a", "b")
    assert started(protocol) == "a"
    assert protocol.receive(frame(Cancel(id="a"))) == [CancelCurrent("a")]
    assert protocol.in_progress == "a"  # until its `cancelled` went out
    assert protocol.receive(frame(speak("a"))) == duplicate("a")
    protocol.segment_ended()
    assert started(protocol) == "b"


def test_cancel_of_an_id_nobody_has_is_ignored() -> None:
    protocol = ServerProtocol()
    assert protocol.receive(frame(Cancel(id="nobody"))) == []
    queued(protocol, "a")
    assert protocol.receive(frame(Cancel(id="nobody"))) == []
    assert protocol.queued == ("a",)


def test_cancel_all_cancels_everything_queued_in_order_then_the_one_in_progress() -> None:
    protocol = ServerProtocol()
    assert protocol.receive(frame(Cancel())) == []  # nothing to cancel
    queued(protocol, "a", "c", "b")
    assert started(protocol) == "a"
    assert protocol.receive(frame(Cancel())) == [CancelQueued(("c", "b")), CancelCurrent("a")]
    assert protocol.queued == ()
    protocol.segment_ended()
    assert protocol.next_step() is None
    queued(protocol, "d")
    assert protocol.receive(frame(Cancel())) == [CancelQueued(("d",))]  # only queued
    queued(protocol, "e")
    assert started(protocol) == "e"
    assert protocol.receive(frame(Cancel(), binary=True)) == [CancelCurrent("e")]  # only current


# --- close, drain, abort -----------------------------------------------------------------


@pytest.mark.parametrize("binary", [True, False], ids=["binary-frame", "text-frame"])
def test_close_finishes_the_queue_refuses_new_segments_then_closes_normally(
    binary: bool,
) -> None:
    protocol = ServerProtocol()
    queued(protocol, "c1", "c2")
    assert protocol.receive(frame(Close(), binary=binary)) == []
    assert protocol.closing and not protocol.draining
    closing = refusal("late", ErrorCode.INVALID_MESSAGE, "connection is closing")
    assert protocol.receive(frame(speak("late"))) == closing
    assert started(protocol) == "c1"
    assert protocol.receive(frame(Cancel(id="c2"))) == [CancelQueued(("c2",))]  # still read
    protocol.segment_ended()
    assert protocol.next_step() == Finish(draining=False)


def test_drain_finishes_the_queue_refuses_new_segments_then_finishes_as_restarting() -> None:
    protocol = ServerProtocol()
    queued(protocol, "d1", "d2")
    assert started(protocol) == "d1"
    protocol.drain()
    assert protocol.draining and not protocol.closing
    draining = refusal("late", ErrorCode.SHUTTING_DOWN, SHUTTING_DOWN)
    assert protocol.receive(frame(speak("late"), binary=True)) == draining
    protocol.segment_ended()
    assert started(protocol) == "d2"
    protocol.segment_ended()
    assert protocol.next_step() == Finish(draining=True)
    assert protocol.next_step() == Finish(draining=True)  # and stays finished


def test_a_close_while_draining_finishes_as_the_clients_close() -> None:
    protocol = ServerProtocol()
    protocol.drain()
    protocol.receive(CLOSE)
    assert protocol.next_step() == Finish(draining=False)


def test_abort_drops_the_queue_without_replies_and_closes() -> None:
    protocol = ServerProtocol()
    queued(protocol, "a", "b", "c")
    assert started(protocol) == "a"
    assert protocol.abort() == ("b", "c")
    assert protocol.closing and protocol.queued == () and protocol.in_progress == "a"
    protocol.segment_ended()
    assert protocol.next_step() == Finish(draining=False)
    assert protocol.abort() == ()


# --- every sequence ----------------------------------------------------------------------

IDS = ("a", "b", "c")
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("speak"), st.sampled_from(IDS), st.booleans()),  # bool: admitted
        st.tuples(st.just("cancel"), st.sampled_from((*IDS, None))),
        st.tuples(st.sampled_from(("next", "ended", "close", "drain", "abort"))),
    ),
    max_size=40,
)


@given(steps=STEPS, max_queue=st.integers(min_value=1, max_value=3))
def test_the_protocol_keeps_a_bounded_fifo_of_unique_ids_whatever_the_client_sends(
    steps: list[tuple[Any, ...]], max_queue: int
) -> None:
    """Against a plain list: refusals, cancels, the order of synthesis and the finish."""
    protocol = ServerProtocol(max_queue=max_queue)
    queue: list[str] = []
    current: str | None = None
    closing = draining = False
    for step in steps:
        kind = step[0]
        if kind == "speak":
            id, admitted = step[1], step[2]
            actions = protocol.receive(frame(speak(id), binary=admitted))
            if draining or closing or id == current or id in queue or len(queue) >= max_queue:
                [refused] = actions
                assert isinstance(refused, Refuse) and refused.error.id == id
            else:
                assert actions == [QueueSegment(speak(id))]
                if admitted:
                    protocol.accept(speak(id))
                    queue.append(id)
        elif kind == "cancel":
            id = step[1]
            doomed = tuple(s for s in queue if id in (None, s))
            expected: list[Action] = [CancelQueued(doomed)] if doomed else []
            if current is not None and id in (None, current):
                expected.append(CancelCurrent(current))
            assert protocol.receive(frame(Cancel(id=id))) == expected
            queue = [s for s in queue if s not in doomed]
        elif kind == "next" and current is None:
            if queue:
                current = queue.pop(0)
                assert started(protocol) == current
            elif closing or draining:
                assert protocol.next_step() == Finish(draining=not closing)
            else:
                assert protocol.next_step() is None
        elif kind == "ended" and current is not None:
            protocol.segment_ended()
            current = None
        elif kind == "close":
            protocol.receive(CLOSE)
            closing = True
        elif kind == "drain":
            protocol.drain()
            draining = True
        elif kind == "abort":
            assert protocol.abort() == tuple(queue)
            queue, closing = [], True
        assert protocol.queued == tuple(queue) and protocol.in_progress == current
        assert len(queue) <= max_queue and len({*queue, current}) == len(queue) + 1
