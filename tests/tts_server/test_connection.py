"""``SynthesisConnection`` driven directly: ASGI frames in through ``frame_payload``, replies out.

No socket here: a ``Peer`` feeds text or binary ``websocket.receive`` messages the way the
WebSocket route does and records every control message and audio frame the connection sends.
The route's own wiring (real sockets, close codes, disconnects) is tested in test_app.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import numpy as np
import pytest

from tests.tts_protocol.test_server import MALFORMED
from tts_protocol import (
    MAX_AUDIO_FRAME_BYTES,
    Cancel,
    Cancelled,
    Close,
    End,
    Error,
    ErrorCode,
    ServerMessage,
    Speak,
    Start,
    VoiceMix,
    decode_server,
    encode,
    parse_voice,
    validation,
)
from tts_server.admission import Admission
from tts_server.connection import Ending, SynthesisConnection, frame_payload
from tts_server.engines import Engine
from tts_server.engines.base import Started, WindowJob
from tts_server.engines.prepared import Prepared
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Timed
from tts_server.metrics import TTSMetrics

Event = ServerMessage | bytes
Sendable = Speak | Cancel | Close | str | bytes
UNKNOWN = (("af_unknown", 1.0),)  # a voice no engine has, parsed
LONG_TEXT = " ".join(
    f"Paragraph {n} talks at length about rivers, mountains and the weather." for n in range(12)
)


def asgi_frame(message: Sendable, *, binary: bool) -> dict[str, Any]:
    """The ASGI ``websocket.receive`` message of a text or binary frame carrying ``message``."""
    raw = message if isinstance(message, str | bytes) else encode(message)
    if binary:
        return {"type": "websocket.receive", "bytes": raw.encode() if isinstance(raw, str) else raw}
    return {"type": "websocket.receive", "text": raw.decode() if isinstance(raw, bytes) else raw}


class Peer:
    """Feeds a ``SynthesisConnection`` as the WebSocket route does; records what it sends."""

    def __init__(self, engine: Engine, **options: Any) -> None:
        self.events: list[Event] = []
        self.times: list[float] = []  # when each event arrived (perf_counter)
        self.connection = SynthesisConnection(engine, self._on_text, self._on_bytes, **options)
        self.worker: asyncio.Task[None] | None = None

    async def _on_text(self, text: str) -> None:
        self._record(decode_server(text))

    async def _on_bytes(self, data: bytes) -> None:
        self._record(data)

    def _record(self, event: Event) -> None:
        self.events.append(event)
        self.times.append(time.perf_counter())

    def start(self) -> None:
        """Start the connection's synthesis worker."""
        self.worker = asyncio.create_task(self.connection.run())

    async def send(
        self, message: Speak | Cancel | Close | str | bytes, binary: bool = True
    ) -> None:
        """Deliver ``message`` in one text or binary frame."""
        await self.connection.feed(frame_payload(asgi_frame(message, binary=binary)))

    async def until(self, done: Callable[[list[Event]], bool], limit_s: float = 60.0) -> None:
        """Wait until ``done(events)`` holds."""
        async with asyncio.timeout(limit_s):
            while not done(self.events):
                await asyncio.sleep(0.005)

    async def until_terminal(self, *ids: str) -> list[Event]:
        """Wait until every segment in ``ids`` got an end, cancelled or error reply."""
        await self.until(lambda events: set(ids) <= terminal_ids(events))
        return self.events

    async def ended(self, limit_s: float = 60.0) -> None:
        """Wait for the worker to return by itself (the connection ended)."""
        assert self.worker is not None
        await asyncio.wait_for(asyncio.shield(self.worker), limit_s)

    async def stop(self) -> None:
        """Abort as the route does when the peer is gone, and wait for the worker."""
        await self.connection.abort()
        if self.worker is not None:
            await asyncio.wait_for(self.worker, 30)


def counting() -> TTSMetrics:
    """Metrics of their own, for a connection made outside an app."""
    return TTSMetrics(Admission.unlimited(), lambda: None)


def terminal_ids(events: list[Event]) -> set[str]:
    return {e.id for e in events if isinstance(e, End | Cancelled | Error) and e.id is not None}


def controls(events: list[Event]) -> list[ServerMessage]:
    return [e for e in events if not isinstance(e, bytes)]


def audio_of(events: list[Event]) -> bytes:
    return b"".join(e for e in events if isinstance(e, bytes))


def first_audio_after(segment: str) -> Callable[[list[Event]], bool]:
    """True once a segment started and one of its audio frames came out."""
    return lambda events: Start(id=segment) in events and isinstance(events[-1], bytes)


@pytest.fixture
async def peer(engine: Engine) -> AsyncIterator[Peer]:
    """A running connection on the real Kokoro engine."""
    peer = Peer(engine)
    peer.start()
    yield peer
    await peer.stop()


class RecordingEngine(Engine):
    """The real engine's model, recording voice checks and the voice each piece is spoken in."""

    name = "recording"
    streams = True  # as the engine it wraps, when that one decodes in windows

    def __init__(self, inner: Engine) -> None:
        super().__init__(inner._g2p, windows=inner.window_plan)  # whole or in windows, as it
        self.inner = inner
        self.preferred_voice = inner.default_voice
        self._voices = dict.fromkeys(inner.voices)
        self.checked: list[VoiceMix | None] = []
        self.spoken: list[VoiceMix] = []

    def prepare(self, text: str, voice: VoiceMix | None = None, *rest: Any) -> Prepared:
        self.checked.append(voice)
        return self.inner.prepare(text, voice, *rest)  # the inner engine mixes blends

    def _speak(self, pieces: Sequence[Piece]) -> None:
        self.spoken += [piece.voice for piece in pieces]

    def _infer_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Timed]:
        self._speak(pieces)
        return self.inner._infer_batch(lane, pieces)

    def _start_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Started]:
        self._speak(pieces)
        return self.inner._start_batch(lane, pieces)

    def _window_batch(self, lane: int, jobs: Sequence[WindowJob]) -> list[np.ndarray]:
        return self.inner._window_batch(lane, jobs)


class FlakyEngine(RecordingEngine):
    """Fails on any text that mentions 'explode'; speaks everything else."""

    def _speak(self, pieces: Sequence[Piece]) -> None:
        if any("ksplˈOd" in piece.phonemes for piece in pieces):
            raise RuntimeError("the model blew up")
        super()._speak(pieces)


@pytest.mark.parametrize(
    ("message", "payload"),
    [
        ({"type": "websocket.receive", "bytes": b'{"type":"close"}'}, b'{"type":"close"}'),
        ({"type": "websocket.receive", "text": '{"type":"close"}'}, '{"type":"close"}'),
        ({"type": "websocket.receive", "bytes": None, "text": "hi"}, "hi"),
        ({"type": "websocket.receive", "bytes": b"", "text": None}, b""),
        ({"type": "websocket.receive"}, b""),
    ],
)
def test_frame_payload_is_whichever_frame_type_carried_the_message(
    message: dict[str, Any], payload: str | bytes
) -> None:
    assert frame_payload(message) == payload


@pytest.mark.parametrize("binary", [True, False], ids=["binary-frame", "text-frame"])
async def test_a_speak_in_either_frame_type_yields_start_audio_end(
    peer: Peer, binary: bool
) -> None:
    await peer.send(Speak(id="s1", text="Either frame type carries a message."), binary=binary)
    events = await peer.until_terminal("s1")
    assert events[0] == Start(id="s1")
    end = events[-1]
    assert isinstance(end, End) and end.id == "s1" and end.synth_ms > 0
    frames = [f for f in events[1:-1] if isinstance(f, bytes)]
    assert frames and len(frames) == len(events) - 2
    assert all(len(f) <= MAX_AUDIO_FRAME_BYTES and len(f) % 2 == 0 for f in frames)
    assert len(audio_of(events)) == 2 * end.samples > 2 * 24_000


async def test_segments_play_in_arrival_order_each_with_one_terminal(peer: Peer) -> None:
    ids = [f"seg-{n}" for n in range(10)]
    for n, segment in enumerate(ids):  # all queued before any audio is out; frame types mixed
        await peer.send(Speak(id=segment, text=f"Sentence number {n} is short."), n % 2 == 0)
    events = await peer.until_terminal(*ids)
    replies = controls(events)
    assert [type(m) for m in replies] == [Start, End] * len(ids)
    assert [m.id for m in replies] == [s for s in ids for _ in range(2)]  # type: ignore[union-attr]
    current = None  # audio frames sit only between their segment's start and end
    for event in events:
        if isinstance(event, Start):
            current = event.id
        elif isinstance(event, End):
            assert event.id == current
            current = None
        else:
            assert current is not None


async def test_queue_full_counts_waiting_segments_not_the_one_in_progress(engine: Engine) -> None:
    peer = Peer(engine, max_queue=2)
    for segment in ("q1", "q2", "q3"):  # the worker is not running yet: all three wait
        await peer.send(Speak(id=segment, text=LONG_TEXT))
    full = Error(id="q3", code=ErrorCode.QUEUE_FULL, message="2 segments are already queued")
    assert peer.events == [full]
    peer.start()
    try:
        await peer.until(lambda events: Start(id="q1") in events)  # q1 left the queue
        await peer.send(Speak(id="q4", text="Room again."))
        assert [e for e in peer.events if isinstance(e, Error)] == [full]
        await peer.send(Cancel())
        events = await peer.until_terminal("q1", "q2", "q4")
        assert {e.id for e in events if isinstance(e, Cancelled)} == {"q1", "q2", "q4"}
    finally:
        await peer.stop()


async def test_ids_are_unique_among_queued_and_in_progress_segments(peer: Peer) -> None:
    duplicate = Error(id="dup", code=ErrorCode.INVALID_MESSAGE, message="duplicate segment id")
    await peer.send(Speak(id="dup", text=LONG_TEXT))
    await peer.send(Speak(id="dup", text="Again, while queued."))
    assert peer.events == [duplicate]
    await peer.until(lambda events: Start(id="dup") in events)
    await peer.send(Speak(id="dup", text="Again, while in progress."))
    assert peer.events[-1] == duplicate
    await peer.send(Cancel(id="dup"))
    await peer.until(lambda events: Cancelled(id="dup") in events)
    await peer.send(Speak(id="dup", text="Once it is over, the id is free."))
    await peer.until(lambda events: isinstance(events[-1], End))
    assert controls(peer.events).count(Start(id="dup")) == 2


async def test_cancel_by_id_drops_a_queued_segment_and_stops_the_current_one(
    peer: Peer,
) -> None:
    await peer.send(Speak(id="long", text=LONG_TEXT))
    await peer.send(Speak(id="mid", text="Never spoken."))
    await peer.send(Speak(id="next", text="And now something short."))
    await peer.until(first_audio_after("long"))
    await peer.send(Cancel(id="mid"), binary=False)
    assert peer.events[-1] == Cancelled(id="mid")  # answered at once, from the queue
    await peer.send(Cancel(id="nobody"))  # an id nobody knows is ignored
    await peer.send(Cancel(id="long"))
    cancelled_at = len(peer.events)
    events = await peer.until_terminal("long", "next")
    assert events[cancelled_at : cancelled_at + 2] == [Cancelled(id="long"), Start(id="next")]
    assert isinstance(events[-1], End) and events[-1].id == "next"
    assert [e.id for e in controls(events) if isinstance(e, Start)] == ["long", "next"]
    assert [e.id for e in controls(events) if isinstance(e, Cancelled)] == ["mid", "long"]


async def test_cancelling_a_queued_segment_leaves_the_one_in_progress_playing(
    peer: Peer,
) -> None:
    await peer.send(Speak(id="playing", text="First part here. Then a second part. And a third."))
    await peer.send(Speak(id="queued", text="Never spoken."))
    await peer.until(first_audio_after("playing"))
    await peer.send(Cancel(id="queued"))
    events = await peer.until_terminal("playing", "queued")
    start, cancelled, end = controls(events)
    assert (start, cancelled) == (Start(id="playing"), Cancelled(id="queued"))
    assert isinstance(end, End) and end.id == "playing"  # played to its end, not cancelled
    assert end.samples * 2 == len(audio_of(events))  # every piece's samples counted


async def test_cancel_all_cancels_queued_and_current_each_exactly_once(peer: Peer) -> None:
    ids = ["a", "b", "c"]
    await peer.send(Speak(id="a", text=LONG_TEXT))
    await peer.send(Speak(id="b", text="Queued."), binary=False)
    await peer.send(Speak(id="c", text="Queued too."))
    await peer.until(lambda events: Start(id="a") in events)
    await peer.send(Cancel())
    events = await peer.until_terminal(*ids)
    terminals = [e for e in events if isinstance(e, Cancelled)]
    assert sorted(t.id for t in terminals) == ids
    last_cancel = max(events.index(t) for t in terminals)
    assert not any(isinstance(e, bytes | Start) for e in events[last_cancel:])
    await peer.send(Speak(id="fresh", text="Still serving."))
    assert isinstance((await peer.until_terminal("fresh"))[-1], End)


async def test_close_drains_the_queue_refuses_new_segments_then_run_returns(
    peer: Peer,
) -> None:
    await peer.send(Speak(id="c1", text="First."))
    await peer.send(Speak(id="c2", text="Second."), binary=False)
    assert peer.connection.closing is False
    await peer.send(Close(), binary=False)
    assert peer.connection.closing is True
    await peer.send(Speak(id="late", text="Too late."))
    assert peer.events[-1] == Error(
        id="late", code=ErrorCode.INVALID_MESSAGE, message="connection is closing"
    )
    await peer.ended()
    assert [e.id for e in controls(peer.events) if isinstance(e, End)] == ["c1", "c2"]
    assert Start(id="late") not in peer.events
    assert peer.connection.ending == Ending(1000)  # a normal closure, with no reason


async def test_drain_finishes_the_queue_refuses_new_segments_then_ends_with_1012(
    peer: Peer,
) -> None:
    await peer.send(Speak(id="d1", text="First."))
    await peer.send(Speak(id="d2", text="Second."))
    peer.connection.drain()
    await peer.send(Speak(id="late", text="Too late."))
    refusal = "the server is shutting down; send it again on a new connection"
    assert Error(id="late", code=ErrorCode.SHUTTING_DOWN, message=refusal) in peer.events
    await peer.ended()
    assert [e.id for e in controls(peer.events) if isinstance(e, End)] == ["d1", "d2"]
    assert peer.connection.ending == Ending(1012, "shutting_down: the server is restarting")


async def test_a_segment_is_spoken_at_its_own_speed(peer: Peer) -> None:
    text = "The same words, at two speeds."
    await peer.send(Speak(id="normal", text=text))
    await peer.send(Speak(id="fast", text=text, speed=2.0))
    events = await peer.until_terminal("normal", "fast")
    samples = {e.id: e.samples for e in controls(events) if isinstance(e, End)}
    assert samples["fast"] < 0.75 * samples["normal"]


async def test_abort_drops_the_queue_and_stops_the_segment_in_progress(peer: Peer) -> None:
    await peer.send(Speak(id="a", text=LONG_TEXT))
    await peer.send(Speak(id="b", text="Never spoken."))
    await peer.until(first_audio_after("a"))
    await peer.stop()  # run() must return promptly, not after the long segment
    assert peer.connection.closing
    assert controls(peer.events) == [Start(id="a"), Cancelled(id="a")]


async def test_malformed_frames_do_not_stop_the_connection(engine: Engine) -> None:
    peer = Peer(engine, max_text_chars=50)
    peer.start()
    try:
        for frame, _code, _segment in MALFORMED:
            await peer.send(frame)
        await peer.send(Speak(id="after", text="Still here."), binary=False)
        events = await peer.until_terminal("after")
    finally:
        await peer.stop()
    assert len(events) > len(MALFORMED) + 2 and isinstance(events[-1], End)
    errors = [(e.code, e.id) for e in events[: len(MALFORMED)] if isinstance(e, Error)]
    assert errors == [(code, segment) for _frame, code, segment in MALFORMED]  # one each


async def test_an_unknown_voice_is_refused_when_queued_before_any_start(peer: Peer) -> None:
    await peer.send(Speak(id="a", text=LONG_TEXT))
    await peer.until(lambda events: Start(id="a") in events)
    await peer.send(Speak(id="v1", text="Hi.", voice=UNKNOWN), binary=False)
    error = peer.events[-1]  # answered at once, while "a" is still being spoken
    assert isinstance(error, Error) and (error.id, error.code) == ("v1", ErrorCode.UNKNOWN_VOICE)
    assert "af_unknown" in error.message and "jf_alpha" in error.message
    await peer.send(Cancel(id="a"))
    await peer.send(Speak(id="ok", text="Fine voice."))
    events = await peer.until_terminal("a", "ok")
    assert Start(id="v1") not in events and isinstance(events[-1], End)


async def test_refusals_come_in_order_the_connections_rules_the_voice_then_the_server_queue(
    engine: Engine,
) -> None:
    admission = Admission(max_sessions=2, max_queued=1, max_connections=2)
    first = Peer(engine, max_queue=1, admission=admission)  # no worker runs: segments wait
    await first.send(Speak(id="a", text="Queued."))
    await first.send(Speak(id="a", text="Hi.", voice=UNKNOWN))  # duplicate before the voice
    await first.send(Speak(id="b", text="Hi.", voice=UNKNOWN))  # queue_full before the voice
    second = Peer(engine, admission=admission)  # the server-wide queue is full now
    await second.send(Speak(id="c", text="Hi.", voice=UNKNOWN))  # the voice before busy
    await second.send(Speak(id="c", text="Hi."))  # the id was never taken: busy, not duplicate
    codes = [(e.id, e.code) for e in first.events + second.events if isinstance(e, Error)]
    assert codes == [
        ("a", ErrorCode.INVALID_MESSAGE),
        ("b", ErrorCode.QUEUE_FULL),
        ("c", ErrorCode.UNKNOWN_VOICE),
        ("c", ErrorCode.BUSY),
    ]
    assert admission.queued == 1


async def test_the_voice_is_parsed_and_checked_once_when_queued_and_spoken_as_prepared(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = RecordingEngine(engine)
    other = next(v for v in engine.voices if v != engine.default_voice)
    blend = f"{engine.default_voice}(0.7)+{other}(0.3)"
    parsed: list[str] = []

    def counted(value: str, id: str | None = None) -> VoiceMix:
        parsed.append(value)
        return parse_voice(value, id)

    monkeypatch.setattr(validation, "parse_voice", counted)  # the decoder's parse, the only one
    peer = Peer(recording)
    peer.start()
    try:
        await peer.send(Speak(id="default", text="Default voice."))
        await peer.send(Speak(id="named", text="Named voice.", voice=((other, 1.0),)))
        await peer.send(Speak(id="blend", text="Blended voice.", voice=parse_voice(blend)))
        await peer.until_terminal("default", "named", "blend")
    finally:
        await peer.stop()
    assert parsed == [other, blend]  # once per segment that names a voice: in the decoder
    mix = parse_voice(blend)
    assert recording.checked == [None, ((other, 1.0),), mix]  # once, by the connection
    assert recording.spoken[0] == ((engine.default_voice, 1.0),)
    assert ((other, 1.0),) in recording.spoken
    assert recording.spoken[-1] == mix  # kept typed: never named and parsed back
    assert [type(e) for e in controls(peer.events)] == [Start, End, Start, End, Start, End]


async def test_a_failing_synthesis_is_a_typed_error_and_the_next_segment_plays(
    engine: Engine,
) -> None:
    peer = Peer(FlakyEngine(engine))
    peer.start()
    try:
        await peer.send(Speak(id="bad", text="Please explode now."))
        await peer.send(Speak(id="good", text="This one is fine."))
        events = await peer.until_terminal("bad", "good")
    finally:
        await peer.stop()
    start, failed, *rest = controls(events)
    assert start == Start(id="bad") and isinstance(failed, Error)
    assert (failed.id, failed.code) == ("bad", ErrorCode.SYNTHESIS_FAILED)
    assert "blew up" in failed.message
    assert rest[0] == Start(id="good") and isinstance(rest[1], End) and rest[1].id == "good"
    assert audio_of(events[events.index(rest[0]) :])


async def test_each_segment_is_counted_by_how_it_ended(engine: Engine) -> None:
    metrics = counting()
    peer = Peer(FlakyEngine(engine), metrics=metrics)
    peer.start()
    try:
        await peer.send(Speak(id="bad", text="Please explode now."))
        await peer.send(Speak(id="good", text="This one is fine."))
        await peer.send(Speak(id="long", text=LONG_TEXT))
        await peer.until(first_audio_after("long"))
        await peer.send(Cancel(id="long"))
        await peer.until_terminal("bad", "good", "long")
    finally:
        await peer.stop()
    counted = {
        outcome: metrics.registry.get_sample_value(
            "tts_segments_total", {"engine": "recording", "outcome": outcome}
        )
        for outcome in ("done", "failed", "cancelled")
    }
    assert counted == {"done": 1, "failed": 1, "cancelled": 1}


async def test_the_reported_timings_lie_within_what_the_peer_saw(engine: Engine) -> None:
    """``synth_ms`` and the metrics' latencies, bounded by the times the frames arrived."""
    metrics = counting()
    peer = Peer(engine, metrics=metrics)
    peer.start()
    try:
        sent = time.perf_counter()
        await peer.send(Speak(id="t", text="Time this sentence, please."))
        await peer.until_terminal("t")
    finally:
        await peer.stop()
    start, end = peer.events[0], peer.events[-1]
    assert start == Start(id="t") and isinstance(end, End)
    audio_at = [t for e, t in zip(peer.events, peer.times, strict=True) if isinstance(e, bytes)]
    # timed from before 'start' went out to after the last audio went out (0.1 ms steps)
    assert (audio_at[-1] - peer.times[0]) * 1000 - 0.05 <= end.synth_ms
    assert end.synth_ms <= (peer.times[-1] - sent) * 1000 + 0.05

    def observed(name: str) -> float:
        value = metrics.registry.get_sample_value(name, {"engine": engine.name})
        assert value is not None, name
        return value

    assert observed("tts_synthesis_seconds_sum") == pytest.approx(end.synth_ms / 1000, rel=1e-6)
    assert 0 <= observed("tts_queue_wait_seconds_sum") <= peer.times[0] - sent
    assert 0 < observed("tts_first_audio_seconds_sum") <= audio_at[0] - sent


class StuckPeer(Peer):
    """A peer that takes no audio frame: each binary send blocks for good."""

    async def _on_bytes(self, data: bytes) -> None:
        await asyncio.Event().wait()


def errors_counted(metrics: TTSMetrics, code: str) -> float | None:
    return metrics.registry.get_sample_value("tts_errors_total", {"code": code})


async def test_a_client_that_takes_no_frame_is_cut_with_a_typed_reason(engine: Engine) -> None:
    metrics = counting()
    peer = StuckPeer(engine, send_timeout_s=0.2, metrics=metrics)
    peer.start()
    await peer.send(Speak(id="s", text="Nobody reads this."))
    await peer.ended()
    why = "send_timeout: the client took no frame for 0.2 s"
    assert peer.connection.ending == Ending(1008, why)
    assert errors_counted(metrics, "send_timeout") == 1
    await peer.send("{oops")  # a frame after the end is neither answered nor an exception
    assert peer.events == [Start(id="s")]
    await peer.stop()


async def test_a_connection_with_no_frame_and_nothing_to_do_ends_as_idle(engine: Engine) -> None:
    metrics = counting()
    peer = Peer(engine, idle_timeout_s=0.3, metrics=metrics)
    peer.start()
    await peer.send(Speak(id="s", text="One."))
    await peer.ended()
    assert [type(e) for e in controls(peer.events)] == [Start, End]
    assert peer.connection.ending == Ending(1000, "idle_timeout: no frame for 0.3 s")
    assert errors_counted(metrics, "idle_timeout") == 1
    await peer.stop()
