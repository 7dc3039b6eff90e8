"""The acceptance test's ``Link``: every server frame goes through ``ClientProtocol``."""

from __future__ import annotations

import asyncio

import pytest

from tts_client.acceptance.link import Broken, Failed, Link, describe
from tts_client.transports import Frame
from tts_protocol import (
    Cancelled,
    ClientProtocol,
    End,
    Error,
    ErrorCode,
    Ready,
    SegmentEnded,
    SegmentFailed,
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


def open_link(*frames: Frame) -> tuple[Link, ScriptedConnection]:
    conn = ScriptedConnection(*frames)
    protocol = ClientProtocol()
    protocol.connection_opened()
    protocol.receive(READY)
    return Link(conn, protocol, timeout_s=1.0), conn


async def test_a_speak_goes_out_in_the_frame_type_asked_for() -> None:
    link, conn = open_link()
    await link.speak("b", "Hello.", binary=True)
    await link.speak("t", "Hello.", voice="af_heart")
    assert isinstance(conn.sent[0], bytes) and isinstance(conn.sent[1], str)
    assert decode_client(conn.sent[0]).id == "b"  # type: ignore[union-attr]
    assert decode_client(conn.sent[1]).voice == "af_heart"  # type: ignore[union-attr]


async def test_audio_and_terminals_are_recorded_per_segment() -> None:
    link, _ = open_link(
        encode(Start(id="a")), b"\x01\x00" * 3, encode(End(id="a", samples=3, synth_ms=1.0))
    )
    await link.speak("a", "Hello.")
    assert await link.until_ended("a") is None
    assert link.starts == ["a"] and link.audio["a"] == 6
    assert isinstance(link.terminals["a"], SegmentEnded)


async def test_an_id_less_error_stops_the_wait_early() -> None:
    stray = Error(id=None, code=ErrorCode.INVALID_JSON, message="bad")
    link, _ = open_link(encode(stray))
    await link.speak("a", "Hello.")
    error = await link.until_ended("a")
    assert error == ServerErrorReported(ErrorCode.INVALID_JSON, "bad")
    assert describe(error) == "error invalid_json: bad"


async def test_audio_after_cancelled_breaks_the_link() -> None:
    link, _ = open_link(encode(Start(id="a")), b"\x00\x00", encode(Cancelled(id="a")), b"\x00\x00")
    await link.speak("a", "Hello.")
    with pytest.raises(Broken, match="audio frame outside a segment"):
        await link.until(lambda: False)


async def test_silence_is_a_failure_after_the_timeout() -> None:
    link, _ = open_link()
    await link.speak("a", "Hello.")
    with pytest.raises(Failed, match="no reply within 1 s"):
        await link.until_ended("a")


def test_a_link_needs_an_open_protocol() -> None:
    with pytest.raises(ValueError, match="ready"):
        Link(ScriptedConnection(), ClientProtocol(), timeout_s=1.0)
    failed = SegmentFailed("a", ErrorCode.UNKNOWN_VOICE, "no such voice")
    assert describe(failed) == "error unknown_voice: no such voice"
    assert describe(None) == "no reply"
