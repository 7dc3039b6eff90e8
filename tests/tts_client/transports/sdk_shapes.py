"""Objects shaped like the SageMaker SDK's event stream, for tests that run without the SDK."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass

from tts_client.transports.sagemaker import BINARY, COMPLETE, PARTIAL, UTF8, SageMakerConnection
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
