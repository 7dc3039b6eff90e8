"""The wire of ``InvokeEndpointWithBidirectionalStream``, both ways, with the SDK's own codec.

Requests arrive as signed envelopes (``:chunk-signature``, ``:date``) whose payload is one
``PayloadPart`` event; a signed envelope with an empty payload ends the input. Responses are
``PayloadPart`` events (``DataType``, ``CompletionState``), or the modeled exception events
``ModelStreamError``/``InternalStreamFailure``. Errors before the stream starts are HTTP
responses with ``x-amzn-errortype``, as restJson1 services send them. Encoding and decoding use
``smithy_aws_event_stream``, the library the Python SDK itself uses.
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterable
from dataclasses import dataclass

from smithy_aws_event_stream.events import Event, EventMessage
from smithy_core.aio.types import AsyncBytesReader

UTF8, BINARY = "UTF8", "BINARY"
PARTIAL, COMPLETE = "PARTIAL", "COMPLETE"
EVENT_STREAM = "application/vnd.amazon.eventstream"
SIGNED_PAYLOAD = "STREAMING-AWS4-HMAC-SHA256-EVENTS"
SIGNATURE_HEADERS = (":chunk-signature", ":date")


class StreamRejected(Exception):
    """The request stream broke the contract; ``error_type`` names the modeled error."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message


@dataclass(frozen=True, slots=True)
class RequestPart:
    """One ``RequestPayloadPart`` as the client sent it."""

    payload: bytes
    data_type: str | None
    completion_state: str | None


class RequestReader:
    """Decodes the client's signed event stream into ``RequestPart`` values."""

    def __init__(self, body: AsyncIterable[bytes]) -> None:
        self._source = AsyncBytesReader(body)
        self.envelopes = 0  # signed envelopes read, the final empty one included

    async def next_part(self) -> RequestPart | None:
        """The next part; None when the client ended its input (or the body ended)."""
        envelope = await Event.decode_async(self._source)
        if envelope is None:
            return None
        self.envelopes += 1
        missing = [h for h in SIGNATURE_HEADERS if h not in envelope.message.headers]
        if missing:
            raise StreamRejected("InputValidationError", f"unsigned event: no {missing}")
        if not envelope.message.payload:  # the signed empty frame: end of input
            return None
        inner = Event.decode(io.BytesIO(envelope.message.payload))
        if inner is None:
            raise StreamRejected("InputValidationError", "empty event in a signed envelope")
        headers = inner.message.headers
        if headers.get(":message-type") != "event" or headers.get(":event-type") != "PayloadPart":
            raise StreamRejected(
                "InputValidationError", f"unexpected event {headers.get(':event-type')!r}"
            )
        data_type, state = headers.get("DataType"), headers.get("CompletionState")
        if data_type not in (None, UTF8, BINARY) or state not in (None, PARTIAL, COMPLETE):
            raise StreamRejected("InputValidationError", f"bad part headers {dict(headers)}")
        return RequestPart(bytes(inner.message.payload), data_type, state)  # type: ignore[arg-type]


def payload_parts(data: bytes, data_type: str, part_bytes: int) -> list[bytes]:
    """``data`` as encoded ``PayloadPart`` events of at most ``part_bytes`` each."""
    chunks = [data[i : i + part_bytes] for i in range(0, len(data), part_bytes)] or [b""]
    last = len(chunks) - 1
    return [
        EventMessage(
            headers={
                ":message-type": "event",
                ":event-type": "PayloadPart",
                ":content-type": "application/octet-stream",
                "DataType": data_type,
                "CompletionState": COMPLETE if i == last else PARTIAL,
            },
            payload=chunk,
        ).encode()
        for i, chunk in enumerate(chunks)
    ]


def exception_event(error_type: str, message: str, error_code: str | None = None) -> bytes:
    """A modeled exception event: ``ModelStreamError`` or ``InternalStreamFailure``."""
    body: dict[str, str] = {"Message": message}
    if error_code is not None:
        body["ErrorCode"] = error_code
    headers = {
        ":message-type": "exception",
        ":exception-type": error_type,
        ":content-type": "application/json",
    }
    return EventMessage(headers=headers, payload=json.dumps(body).encode()).encode()


def error_body(message: str, error_code: str | None = None, **extra: object) -> bytes:
    """The JSON body of an HTTP error response (``Message``, ``ErrorCode``, members)."""
    body: dict[str, object] = {"Message": message, **extra}
    if error_code is not None:
        body["ErrorCode"] = error_code
    return json.dumps(body).encode()
