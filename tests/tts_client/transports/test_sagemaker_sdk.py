"""The SageMaker transport with the real SDK (Python >= 3.12; run by scripts/test-py312.sh).

No network: a stand-in HTTP/2 client plays SageMaker and the container. It receives the SDK's
real signed event stream, decodes it with the SDK's own codec, and answers with real encoded
``PayloadPart`` events split into PARTIAL parts, or a ``ModelStreamError``. Nothing here uses
the repository's conftest fixtures, so it runs with ``--noconftest`` in a venv without torch.
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

if sys.version_info < (3, 12):
    pytest.skip(
        "the SageMaker SDK needs Python >= 3.12: scripts/test-py312.sh runs this file",
        allow_module_level=True,
    )

import boto3
from smithy_aws_event_stream.events import Event, EventMessage
from smithy_core.aio.types import AsyncBytesReader
from smithy_http import Fields
from smithy_http.aio import HTTPResponse

from tts_client import SegmentStatus, SessionConfig, TTSSession
from tts_client.transports.sagemaker import (
    Boto3Credentials,
    SageMakerTransport,
    http2_client,
    load_sdk,
)
from tts_protocol import (
    Close,
    End,
    Ready,
    Speak,
    Start,
    decode_client,
    encode,
)

AUDIO = bytes(range(200)) * 10
CONFIG = SessionConfig(connect_timeout=5, reply_timeout=5, backoff_initial=0.01, close_timeout=1)


def fake_aws() -> Any:
    """A boto3 session with static fake credentials: the standard chain, no network."""
    return boto3.Session(
        aws_access_key_id="AKIDTEST", aws_secret_access_key="secret", region_name="us-east-1"
    )


def payload_parts(data: bytes, data_type: str | None, size: int) -> list[bytes]:
    """``data`` as encoded ``PayloadPart`` events of at most ``size`` bytes each."""
    chunks = [data[i : i + size] for i in range(0, len(data), size)] or [b""]
    events = []
    for i, chunk in enumerate(chunks):
        headers: dict[str, Any] = {
            ":message-type": "event",
            ":event-type": "PayloadPart",
            ":content-type": "application/octet-stream",
            "CompletionState": "COMPLETE" if i == len(chunks) - 1 else "PARTIAL",
        }
        if data_type is not None:
            headers["DataType"] = data_type
        events.append(EventMessage(headers=headers, payload=chunk).encode())
    return events


def model_stream_error() -> bytes:
    headers = {
        ":message-type": "exception",
        ":exception-type": "ModelStreamError",
        ":content-type": "application/json",
    }
    body = json.dumps({"Message": "container went away", "ErrorCode": "ModelStreamFailed"})
    return EventMessage(headers=headers, payload=body.encode()).encode()


class FakeSageMaker:
    """A duplex HTTP client stand-in; its first stream can fail after some audio."""

    SUPPORTS_DUPLEX_STREAMING = True

    def __init__(self, fail_first: bool = False) -> None:
        self.requests: list[Any] = []
        self.signed: list[EventMessage] = []  # the envelopes, as sent
        self.events: list[EventMessage] = []  # the PayloadPart events inside them
        self._fail = fail_first
        self._tasks: set[asyncio.Task[None]] = set()

    async def send(self, request: Any, *, request_config: Any = None) -> HTTPResponse:
        self.requests.append(request)
        out: asyncio.Queue[bytes | None] = asyncio.Queue()
        fail, self._fail = self._fail, False
        task = asyncio.create_task(self._serve(request.body, out, fail))
        self._tasks.add(task)

        async def body() -> AsyncIterator[bytes]:
            while (chunk := await out.get()) is not None:
                yield chunk

        return HTTPResponse(status=200, fields=Fields(), body=body())

    async def _serve(self, body: Any, out: asyncio.Queue[bytes | None], fail: bool) -> None:
        ready = encode(Ready(voices=("af_heart",), default_voice="af_heart")).encode()
        for event in payload_parts(ready, "UTF8", 40):
            out.put_nowait(event)
        source = AsyncBytesReader(body)
        while (envelope := await Event.decode_async(source)) is not None:
            self.signed.append(envelope.message)
            if not envelope.message.payload:  # the signed empty frame ending the input
                break
            inner = Event.decode(io.BytesIO(envelope.message.payload))
            assert inner is not None
            self.events.append(inner.message)
            message = decode_client(inner.message.payload)
            if isinstance(message, Close):  # the container closes: the response ends
                out.put_nowait(None)
            elif isinstance(message, Speak):
                for event in self._answer(message, fail):
                    out.put_nowait(event)
        out.put_nowait(None)

    def _answer(self, speak: Speak, fail: bool) -> list[bytes | None]:
        events: list[bytes | None] = []
        events += payload_parts(encode(Start(id=speak.id)).encode(), "UTF8", 1000)
        events += payload_parts(AUDIO[:1000], "BINARY", 300)
        if fail:
            return [*events, model_stream_error(), None]
        events += payload_parts(AUDIO[1000:], None, 300)  # DataType omitted: BINARY
        end = End(id=speak.id, samples=len(AUDIO) // 2, synth_ms=1.0)
        return events + payload_parts(encode(end).encode(), "UTF8", 16)


async def test_session_over_the_real_sdk() -> None:
    fake = FakeSageMaker()
    transport = SageMakerTransport(
        "kokoro-tts", boto3_session=fake_aws(), target_variant="blue", http_client=fake
    )
    async with TTSSession(transport, CONFIG) as session:
        assert session.ready.voices == ("af_heart",)
        segments = [await session.speak(text) for text in ("One.", "Two.")]
        assert [await s.read() for s in segments] == [AUDIO, AUDIO]

    (request,) = fake.requests
    assert request.method == "POST"
    assert request.destination.host == "runtime.sagemaker.us-east-1.amazonaws.com"
    assert request.destination.port == 8443
    assert request.destination.path == "/endpoints/kokoro-tts/invocations-bidirectional-stream"
    headers = {field.name.lower(): field.as_string() for field in request.fields}
    assert headers["content-type"] == "application/vnd.amazon.eventstream"
    assert headers["x-amzn-sagemaker-target-variant"] == "blue"
    assert headers["x-amz-content-sha256"] == "STREAMING-AWS4-HMAC-SHA256-EVENTS"
    assert (
        headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDTEST/")
        and "/us-east-1/sagemaker/aws4_request" in headers["authorization"]
    )

    assert all(":chunk-signature" in m.headers for m in fake.signed)  # every event is signed
    for message in fake.events:
        assert message.headers[":event-type"] == "PayloadPart"
        assert message.headers["DataType"] == "UTF8"
        assert message.headers["CompletionState"] == "COMPLETE"
    sent = [decode_client(m.payload) for m in fake.events]
    assert [type(m).__name__ for m in sent] == ["Speak", "Speak", "Close"]


async def test_model_stream_error_reconnects_over_the_real_sdk() -> None:
    fake = FakeSageMaker(fail_first=True)
    transport = SageMakerTransport("kokoro-tts", boto3_session=fake_aws(), http_client=fake)
    async with TTSSession(transport, CONFIG) as session:
        segment = await session.speak("One.")
        assert await segment.read() == AUDIO  # the first 1000 bytes are not repeated
    assert segment.status is SegmentStatus.DONE
    assert len(fake.requests) == session.connections == 2


async def test_credentials_come_from_the_boto3_chain() -> None:
    resolver = Boto3Credentials(fake_aws(), load_sdk().identity)
    identity = await resolver.get_identity(properties={})
    assert identity.access_key_id == "AKIDTEST" and identity.secret_access_key == "secret"


def test_region_and_endpoint_come_from_config() -> None:
    transport = SageMakerTransport("kokoro-tts", boto3_session=fake_aws())
    assert transport.region == "us-east-1"
    assert transport.endpoint == "sagemaker://us-east-1/kokoro-tts"
    assert transport.endpoint_url == "https://runtime.sagemaker.us-east-1.amazonaws.com:8443"
    assert transport.max_connection_age is not None and transport.max_connection_age < 30 * 60


async def test_default_http_client_is_crt_forced_to_http2() -> None:
    client = http2_client()
    assert client.SUPPORTS_DUPLEX_STREAMING and client._config.force_http_2
    await client.close()


def test_endpoint_url_and_trust_store_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """What ``voice-agent dev --tts sagemaker-local`` sets to reach the local emulator."""
    from sagemaker_local.certs import make_local_tls

    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2", "https://localhost:8443")
    transport = SageMakerTransport("kokoro-tts", boto3_session=fake_aws())
    assert transport.endpoint_url == "https://localhost:8443"
    monkeypatch.setenv("TTS_SAGEMAKER_CA_BUNDLE", str(tmp_path / "missing.pem"))
    with pytest.raises(Exception, match=r"AWS_IO_FILE_VALIDATION_FAILURE|file"):
        http2_client()  # the variable is honoured: a missing trust store fails loudly
    monkeypatch.setenv("TTS_SAGEMAKER_CA_BUNDLE", str(make_local_tls(tmp_path).ca_file))
    http2_client()  # a real PEM loads (tests/sagemaker_local: the SDK then trusts the emulator)
