"""The SageMaker transport without the SDK: fake streams shaped like the SDK's objects."""

from __future__ import annotations

import asyncio
import itertools
import sys
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.tts_client.conftest import FAST
from tts_client import SegmentStatus, TransportUnavailable, TTSConnectionError, TTSSession
from tts_client.errors import TTSProtocolError
from tts_client.transports.sagemaker import (
    BINARY,
    COMPLETE,
    PARTIAL,
    UTF8,
    PartAssembler,
    SageMakerConnection,
    SageMakerTransport,
)
from tts_protocol import Close, End, Ready, Speak, Start, decode_client, encode

AUDIO = bytes(range(12))


@dataclass
class Part:
    """Shaped like the SDK's ``RequestPayloadPart`` / ``ResponsePayloadPart``."""

    bytes_: bytes | None = None
    data_type: str | None = None
    completion_state: str | None = None


@dataclass
class PartEvent:
    """Shaped like ``RequestStreamEventPayloadPart`` / ``ResponseStreamEventPayloadPart``."""

    value: Part


@dataclass
class UnknownEvent:
    """Shaped like ``ResponseStreamEventUnknown``."""

    tag: str


class ModelStreamError(Exception):
    """Shaped like the SDK's: ``receive()`` raises it, with an ``error_code``."""

    def __init__(self, message: str, error_code: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def payload_part(payload: bytes, data_type: str | None, completion_state: str) -> PartEvent:
    return PartEvent(Part(payload, data_type, completion_state))


def parts(data: bytes, data_type: str | None, *cuts: int) -> list[PartEvent]:
    """``data`` cut at ``cuts`` into PARTIAL parts and a final COMPLETE one."""
    bounds = [0, *cuts, len(data)]
    pieces = [data[a:b] for a, b in itertools.pairwise(bounds)]
    return [
        payload_part(p, data_type, COMPLETE if i == len(pieces) - 1 else PARTIAL)
        for i, p in enumerate(pieces)
    ]


class FakeStream:
    """Shaped like the SDK's ``DuplexEventStream``; plays a server that splits its frames.

    ``fail_after_audio``: raise ``ModelStreamError`` after the first audio frame.
    """

    def __init__(self, fail_after_audio: bool = False) -> None:
        self.input_stream = self
        self.sent: list[PartEvent] = []
        self.closed = False
        self._events: asyncio.Queue[object] = asyncio.Queue()
        self._fail = fail_after_audio
        ready = encode(Ready(voices=("v",), default_voice="v")).encode()
        self._push(*parts(ready, UTF8, 10, 50))
        self._push(UnknownEvent("SomethingNew"))

    def _push(self, *events: object) -> None:
        for event in events:
            self._events.put_nowait(event)

    async def send(self, event: PartEvent) -> None:  # input_stream.send
        self.sent.append(event)
        message = decode_client(event.value.bytes_ or b"")
        if isinstance(message, Close):  # the container closes; the response stream ends
            self._push(None)
        if not isinstance(message, Speak):
            return
        self._push(*parts(encode(Start(id=message.id)).encode(), UTF8))
        self._push(*parts(AUDIO[:6], BINARY, 1, 4))
        if self._fail:
            self._push(ModelStreamError("container went away", "ModelStreamFailed"))
            return
        self._push(*parts(AUDIO[6:], None, 3))  # no DataType: SageMaker's default, BINARY
        end = encode(End(id=message.id, samples=len(AUDIO) // 2, synth_ms=1.0)).encode()
        self._push(*parts(end, UTF8, 7))

    async def close(self) -> None:  # input_stream.close and receiver.close
        self.closed = True

    async def await_output(self) -> tuple[None, FakeStream]:
        return None, self

    async def receive(self) -> object:
        event = await self._events.get()
        if isinstance(event, BaseException):
            raise event
        return event


class FakeTransport:
    """Hands out ``SageMakerConnection``s over fake streams, like ``SageMakerTransport``."""

    endpoint = "sagemaker://fake/kokoro"
    max_connection_age = None

    def __init__(self, *streams: FakeStream) -> None:
        self.streams = list(streams)
        self.used: list[FakeStream] = []

    async def connect(self) -> SageMakerConnection:
        stream = self.streams.pop(0) if self.streams else FakeStream()
        self.used.append(stream)
        return SageMakerConnection(stream, payload_part)

    async def aclose(self) -> None:
        pass


async def test_session_over_a_partial_splitting_stream() -> None:
    transport = FakeTransport()
    async with TTSSession(transport, FAST) as session:
        assert session.ready.voices == ("v",)
        segments = [await session.speak(text) for text in ("One.", "Two.")]
        assert [await s.read() for s in segments] == [AUDIO, AUDIO]
    sent = transport.used[0].sent
    assert all(e.value.data_type == UTF8 and e.value.completion_state == COMPLETE for e in sent)
    speaks = [decode_client(e.value.bytes_ or b"") for e in sent[:2]]
    assert [s.text for s in speaks if isinstance(s, Speak)] == ["One.", "Two."]
    assert transport.used[0].closed


async def test_model_stream_error_reconnects_without_repeating_audio() -> None:
    transport = FakeTransport(FakeStream(fail_after_audio=True))
    async with TTSSession(transport, FAST) as session:
        segment = await session.speak("One.")
        assert await segment.read() == AUDIO
    assert segment.status is SegmentStatus.DONE
    assert len(transport.used) == session.connections == 2


async def test_stream_failures_are_connection_errors() -> None:
    stream = FakeStream()
    stream._push(ModelStreamError("boom", "ModelError"), None)
    connection = SageMakerConnection(stream, payload_part)
    assert isinstance(await connection.recv(), str)  # ready, from three parts
    with pytest.raises(TTSConnectionError, match=r"ModelStreamError \[ModelError\]: boom"):
        await connection.recv()
    with pytest.raises(TTSConnectionError, match="ended"):
        await connection.recv()


@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=6))
def test_assembler_joins_any_binary_split(data: bytes, cuts: list[int]) -> None:
    assembler = PartAssembler()
    events = parts(data, BINARY, *sorted(min(c, len(data)) for c in cuts))
    frames = [
        assembler.feed(e.value.bytes_ or b"", BINARY, e.value.completion_state) for e in events
    ]
    assert frames[:-1] == [None] * (len(frames) - 1) and frames[-1] == data


@given(st.text(max_size=100), st.lists(st.integers(0, 400), max_size=6))
def test_assembler_joins_utf8_split_mid_character(text: str, cuts: list[int]) -> None:
    data = text.encode()
    assembler = PartAssembler()
    events = parts(data, UTF8, *sorted(min(c, len(data)) for c in cuts))
    frames = [assembler.feed(e.value.bytes_ or b"", UTF8, e.value.completion_state) for e in events]
    assert frames[-1] == text


@pytest.mark.parametrize(
    ("feeds", "match"),
    [
        ([(b"x", "TEXT", COMPLETE)], "DataType"),
        ([(b"x", UTF8, "DONE")], "CompletionState"),
        ([(b"x", UTF8, PARTIAL), (b"y", BINARY, COMPLETE)], "changed"),
        ([(b"\xff", UTF8, COMPLETE)], "not UTF-8"),
        ([(b"12345", BINARY, PARTIAL), (b"6", BINARY, COMPLETE)], "exceeds"),
    ],
)
def test_assembler_rejects_malformed_parts(feeds: list[tuple[bytes, str, str]], match: str) -> None:
    assembler = PartAssembler(max_frame_bytes=5)
    with pytest.raises(TTSProtocolError, match=match):
        for payload, data_type, state in feeds:
            assembler.feed(payload, data_type, state)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the SDK may be installed on 3.12")
def test_transport_needs_python_312() -> None:
    with pytest.raises(TransportUnavailable, match=r"Python >= 3\.12"):
        SageMakerTransport("kokoro", region="us-east-1")
