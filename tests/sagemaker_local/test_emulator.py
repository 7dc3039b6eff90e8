"""The emulator with the real SDK over a real TLS socket (Python >= 3.12: scripts/test-py312.sh)."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

if sys.version_info < (3, 12):
    pytest.skip("the SageMaker SDK needs Python >= 3.12", allow_module_level=True)

from smithy_aws_event_stream.events import Event, EventMessage

from sagemaker_local.emulator import SageMakerEmulator, signature_problem
from sagemaker_local.events import RequestReader, StreamRejected, payload_parts
from tests.sagemaker_local.helpers import RecordingContainer, fake_aws, local_tls, transport_for
from tts_client.errors import TTSConnectionError
from tts_client.transports.sagemaker import SageMakerTransport


@contextlib.asynccontextmanager
async def emulated(
    tmp_path: Path, container: RecordingContainer, **kwargs: float
) -> AsyncIterator[SageMakerEmulator]:
    async for address in container.serve():
        async with SageMakerEmulator(address, local_tls(tmp_path), **kwargs) as emulator:
            yield emulator


async def test_sdk_frames_reach_the_container_as_binary_and_replies_keep_their_type(
    tmp_path: Path,
) -> None:
    container = RecordingContainer()
    async with emulated(tmp_path, container) as emulator:
        transport = transport_for(emulator, target_variant="blue")
        connection = await transport.connect()
        assert await connection.recv() == '{"type": "hello"}'  # UTF8 part → str
        await connection.send('{"type": "speak"}')  # sent with DataType=UTF8
        assert await connection.recv() == RecordingContainer.BIG  # 3 PARTIAL parts, joined
        assert json.loads(await connection.recv()) == {"echo": '{"type": "speak"}'}
        await connection.aclose()
        await transport.aclose()

    assert container.frames == [("binary", b'{"type": "speak"}')]  # as SageMaker delivers it
    assert container.paths == ["/invocations-bidirectional-stream"]
    (invocation,) = emulator.invocations
    assert invocation.headers["x-amzn-sagemaker-target-variant"] == "blue"
    assert invocation.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDTEST/")
    assert [(p.data_type, p.completion_state) for p in invocation.parts] == [("UTF8", "COMPLETE")]


async def test_the_emulator_is_untrusted_without_its_ca(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TTS_SAGEMAKER_CA_BUNDLE", raising=False)
    async with emulated(tmp_path, RecordingContainer()) as emulator:
        transport = SageMakerTransport(
            emulator.endpoint_name, boto3_session=fake_aws(), endpoint_url=emulator.url
        )
        with pytest.raises(TTSConnectionError, match=r"TLS|certificate|CERT"):
            connection = await transport.connect()
            await connection.recv()
        await transport.aclose()
    assert emulator.invocations == []


async def test_unknown_endpoint_is_a_modeled_validation_error(tmp_path: Path) -> None:
    async with emulated(tmp_path, RecordingContainer()) as emulator:
        transport = transport_for(emulator, endpoint_name="missing")
        with pytest.raises(TTSConnectionError, match="InputValidationError"):
            connection = await transport.connect()
            await connection.recv()
        await transport.aclose()
    assert emulator.invocations == []


async def test_container_breaking_the_stream_is_a_model_stream_error(tmp_path: Path) -> None:
    async with emulated(tmp_path, RecordingContainer(close_code=1011)) as emulator:
        transport = transport_for(emulator)
        connection = await transport.connect()
        await connection.recv()
        await connection.send('{"type": "speak"}')
        with pytest.raises(TTSConnectionError, match=r"ModelStreamError \[StreamBroken\]"):
            await connection.recv()
        await transport.aclose()
    assert emulator.invocations[0].outcome == "stream_broken"


async def test_stream_age_limit_ends_with_model_stream_error(tmp_path: Path) -> None:
    async with emulated(tmp_path, RecordingContainer(), max_stream_s=0.5) as emulator:
        transport = transport_for(emulator)
        connection = await transport.connect()
        await connection.recv()
        with pytest.raises(TTSConnectionError, match="ModelInvocationTimeExceeded"):
            await connection.recv()  # nothing more comes; the emulator's clock runs out
        await transport.aclose()
    assert emulator.invocations[0].outcome == "timed_out"


async def test_unreachable_container_is_a_model_error(tmp_path: Path) -> None:
    emulator = SageMakerEmulator("http://127.0.0.1:9", local_tls(tmp_path))  # discard port
    async with emulator:
        transport = transport_for(emulator)
        with pytest.raises(TTSConnectionError, match="ModelError"):
            connection = await transport.connect()
            await connection.recv()
        await transport.aclose()
    assert emulator.invocations[0].outcome == "rejected"


def test_signature_headers_are_required() -> None:
    signed = {
        "authorization": "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/sagemaker/"
        "aws4_request, SignedHeaders=host, Signature=abc",
        "x-amz-date": "20260101T000000Z",
        "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-EVENTS",
    }
    assert signature_problem(signed) is None
    assert "Authorization" in (signature_problem({}) or "")
    assert "X-Amz-Date" in (
        signature_problem({k: v for k, v in signed.items() if k != "x-amz-date"}) or ""
    )
    unsigned_body = {**signed, "x-amz-content-sha256": "UNSIGNED-PAYLOAD"}
    assert "STREAMING" in (signature_problem(unsigned_body) or "")


async def test_an_unsigned_event_is_rejected() -> None:
    (inner,) = payload_parts(b"{}", "UTF8", 100)
    unsigned = EventMessage(headers={":date": 0}, payload=inner).encode()

    async def body() -> AsyncIterator[bytes]:
        yield unsigned

    with pytest.raises(StreamRejected, match=":chunk-signature"):
        await RequestReader(body()).next_part()


def test_response_parts_decode_with_the_sdk_codec() -> None:
    events = payload_parts(b"x" * 10, "BINARY", 4)
    decoded = [Event.decode(io.BytesIO(e)) for e in events]
    assert [d.message.headers["CompletionState"] for d in decoded if d] == [
        "PARTIAL",
        "PARTIAL",
        "COMPLETE",
    ]
    assert b"".join(d.message.payload for d in decoded if d) == b"x" * 10
