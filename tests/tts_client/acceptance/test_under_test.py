"""``ConnectionUnderTest``: every server frame goes through ``ClientProtocol``."""

from __future__ import annotations

import asyncio

import pytest

from tts_client.acceptance.under_test import Broken, ConnectionUnderTest, Failed, describe
from tts_client.transports import Frame
from tts_protocol import (
    Cancelled,
    ClientProtocol,
    End,
    Error,
    ErrorCode,
    Ready,
    SegmentEnded,
    SegmentErrorReported,
    ServerErrorReported,
    Start,
    decode_client,
    encode,
)

READY = encode(Ready(voices=("af_heart",), default_voice="af_heart"))


class ScriptedConnection:
    """A ``Connection`` that replays server frames and records what was sent."""

    def __init__(self, *frames: Frame) -> None:
        self.inbox: asyncio.Queue[Frame] = asyncio.Queue()
        for frame in frames:
            self.inbox.put_nowait(frame)
        self.sent: list[Frame] = []

    async def send(self, frame: Frame) -> None:
        self.sent.append(frame)

    async def recv(self) -> Frame:
        return await self.inbox.get()

    async def aclose(self) -> None:
        pass


def open_tested(*frames: Frame) -> tuple[ConnectionUnderTest, ScriptedConnection]:
    conn = ScriptedConnection(*frames)
    protocol = ClientProtocol()
    protocol.connection_opened()
    protocol.receive(READY)
    return ConnectionUnderTest(conn, protocol, timeout_s=1.0), conn


async def test_a_speak_goes_out_in_the_frame_type_asked_for() -> None:
    tested, conn = open_tested()
    await tested.speak("b", "Hello.", binary=True)
    await tested.speak("t", "Hello.", voice=(("af_heart", 1.0),))
    assert isinstance(conn.sent[0], bytes) and isinstance(conn.sent[1], str)
    assert decode_client(conn.sent[0]).id == "b"  # type: ignore[union-attr]
    assert decode_client(conn.sent[1]).voice == (("af_heart", 1.0),)  # type: ignore[union-attr]


async def test_audio_and_terminals_are_recorded_per_segment() -> None:
    tested, _ = open_tested(
        encode(Start(id="a")), b"\x01\x00" * 3, encode(End(id="a", samples=3, synth_ms=1.0))
    )
    await tested.speak("a", "Hello.")
    assert await tested.until_ended("a") is None
    assert tested.starts == ["a"] and tested.audio["a"] == 6
    assert isinstance(tested.terminals["a"], SegmentEnded)


async def test_an_id_less_error_stops_the_wait_early() -> None:
    stray = Error(id=None, code=ErrorCode.INVALID_JSON, message="bad")
    tested, _ = open_tested(encode(stray))
    await tested.speak("a", "Hello.")
    error = await tested.until_ended("a")
    assert error == ServerErrorReported(ErrorCode.INVALID_JSON, "bad")
    assert describe(error) == "error invalid_json: bad"


async def test_audio_after_cancelled_breaks_the_connection() -> None:
    tested, _ = open_tested(
        encode(Start(id="a")), b"\x00\x00", encode(Cancelled(id="a")), b"\x00\x00"
    )
    await tested.speak("a", "Hello.")
    with pytest.raises(Broken, match="audio frame outside a segment"):
        await tested.until(lambda: False)


async def test_silence_is_a_failure_after_the_timeout() -> None:
    tested, _ = open_tested()
    await tested.speak("a", "Hello.")
    with pytest.raises(Failed, match="no reply within 1 s"):
        await tested.until_ended("a")


def test_a_connection_under_test_needs_an_open_protocol() -> None:
    with pytest.raises(ValueError, match="ready"):
        ConnectionUnderTest(ScriptedConnection(), ClientProtocol(), timeout_s=1.0)
    failed = SegmentErrorReported("a", ErrorCode.UNKNOWN_VOICE, "no such voice")
    assert describe(failed) == "error unknown_voice: no such voice"
    assert describe(None) == "no reply"
