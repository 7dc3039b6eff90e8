"""The SageMaker transport without the SDK: fake streams shaped like the SDK's objects."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.tts_client.conftest import FAST
from tests.tts_client.transports.sdk_shapes import (
    AUDIO,
    FakeStream,
    FakeTransport,
    ModelStreamError,
    parts,
    payload_part,
)
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
from tts_protocol import Speak, decode_client


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
