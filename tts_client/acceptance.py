"""``voice-agent acceptance``: the production acceptance test of a TTS endpoint.

    voice-agent acceptance ws://127.0.0.1:8080/invocations-bidirectional-stream
    voice-agent acceptance ws://GATEWAY/invocations-bidirectional-stream --ping-url http://HOST/ping
    voice-agent acceptance --endpoint kokoro-tts --region us-east-1     # Python >= 3.12

It speaks protocol v1 in raw frames, not through ``tts_client`` (which always sends text), so
that it chooses each frame's type: a WebSocket binary or text frame, or a SageMaker part with
``DataType`` BINARY or UTF8. Checks, one line each (PASS, FAIL or n/a), in this order on one
connection: /ping is healthy; the first frame is ``ready``; a speak in a binary frame and one in
a text frame both produce audio; garbage bytes, invalid UTF-8, a JSON array and an unknown voice
each get their typed error, and the connection still serves; 4 pipelined sentences all end, in
order; cancel (by id and for all) sends no audio after ``cancelled``; first audio and total
completion of the 4 sentences, reported separately. The exit status is 1 if any check failed.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

import httpx

from tts_client.errors import TransportUnavailable, TTSError
from tts_client.transports.base import Connection, Frame
from tts_client.transports.websocket import WebSocketTransport
from tts_protocol import (
    BYTES_PER_SAMPLE,
    PROTOCOL_VERSION,
    Cancel,
    Cancelled,
    End,
    Error,
    ErrorCode,
    ProtocolError,
    Ready,
    ServerMessage,
    Speak,
    Start,
    decode_server,
    encode,
)

PASS, FAIL, NA = "PASS", "FAIL", "n/a"
TIMEOUT_S = 30.0
MAX_FRAME_BYTES = 1 << 20
SPEAK_TEXT = "The acceptance test is speaking."
SENTENCES = (
    "Sure, I can help with that.",
    "Your order shipped this morning.",
    "It should arrive on Thursday.",
    "Is there anything else I can do for you?",
)
LONG_TEXT = (  # several model pieces, so that a cancel lands while it is being synthesized
    "This sentence is long on purpose, so that the server is still speaking it when the "
    "cancel arrives. It goes on for a while longer, and then longer still. Nobody should ever "
    "hear the end of it, because the acceptance test cancels it after the first audio."
)
UNKNOWN_VOICE = "xx_acceptance_nobody"


class Failed(Exception):
    """A check did not pass; the message says why."""


class Endpoint(Protocol):
    """What is tested: how to open a connection (frames typed as sent) and where its /ping is."""

    @property
    def name(self) -> str: ...

    @property
    def ping_url(self) -> str | None:
        """None: not ours to reach (SageMaker pings its container itself)."""
        ...

    async def open(self) -> Connection: ...

    async def aclose(self) -> None: ...


def ping_url_for(url: str) -> str:
    """``ws://host:port/...`` → ``http://host:port/ping`` (wss → https)."""
    parts = urlsplit(url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, "/ping", "", ""))


class WebSocketEndpoint:
    """A TTS WebSocket URL: the server itself, or a gateway in front of it."""

    def __init__(self, url: str, ping_url: str | None = None) -> None:
        self.name = url
        self.ping_url = ping_url or ping_url_for(url)

    async def open(self) -> Connection:
        transport = WebSocketTransport(self.name, max_frame_bytes=MAX_FRAME_BYTES)
        return await transport.connect()

    async def aclose(self) -> None:
        """Nothing is shared between connections."""


class SageMakerEndpoint:
    """A SageMaker endpoint's bidirectional stream; needs Python >= 3.12 and the SDK."""

    ping_url: str | None = None

    def __init__(self, endpoint_name: str, region: str | None = None) -> None:
        from tts_client.transports.sagemaker import SageMakerTransport

        self._transport = SageMakerTransport(endpoint_name, region)  # TransportUnavailable
        self.name = self._transport.endpoint

    async def open(self) -> Connection:
        return await self._transport.connect()

    async def aclose(self) -> None:
        await self._transport.aclose()


class Reader:
    """Reads server frames on one connection, checks their order, records them per id."""

    def __init__(self, conn: Connection, ready: Ready, timeout_s: float) -> None:
        self.conn = conn
        self.ready = ready
        self.timeout_s = timeout_s
        self.current: str | None = None  # the segment whose audio may arrive
        self.starts: list[str] = []
        self.terminals: dict[str, ServerMessage] = {}
        self.terminal_at: dict[str, float] = {}
        self.audio: dict[str, int] = defaultdict(int)
        self.audio_at: dict[str, float] = {}
        self.errors: list[Error] = []
        self.stray_audio = 0  # binary frames outside start..terminal

    async def until_ended(self, *ids: str) -> Error | None:
        """Read until each of ``ids`` has its terminal reply; an id-less error stops it early."""
        before = len(self.errors)

        def unexpected() -> Error | None:
            return next((e for e in self.errors[before:] if e.id is None), None)

        await self.until(lambda: all(i in self.terminals for i in ids) or bool(unexpected()))
        return unexpected()

    async def until(self, done: Callable[[], bool]) -> None:
        """Read frames until ``done()``; ``Failed`` after ``timeout_s`` without it."""
        try:
            async with asyncio.timeout(self.timeout_s):
                while not done():
                    self._take(await self.conn.recv())
        except TimeoutError:
            raise Failed(f"no reply within {self.timeout_s:g} s") from None

    def _take(self, frame: Frame) -> None:
        now = time.perf_counter()
        if isinstance(frame, bytes):
            if self.current is None:
                self.stray_audio += 1
            else:
                self.audio[self.current] += len(frame)
                self.audio_at.setdefault(self.current, now)
            return
        try:
            message = decode_server(frame)
        except ProtocolError as exc:
            raise Failed(f"invalid control frame {frame[:80]!r}: {exc.message}") from exc
        if isinstance(message, Start):
            if self.current is not None:
                raise Failed(f"'start' {message.id} before the end of {self.current}")
            self.current = message.id
            self.starts.append(message.id)
        elif isinstance(message, End | Cancelled | Error):
            if isinstance(message, Error):
                self.errors.append(message)
            if message.id is not None:
                self.terminals[message.id] = message
                self.terminal_at[message.id] = now
            if message.id == self.current:
                self.current = None
        else:
            raise Failed(f"unexpected {message.type!r} frame")


def _speak(id: str, text: str, voice: str | None = None) -> str:
    return encode(Speak(id=id, text=text, voice=voice))


def _describe(message: ServerMessage | None) -> str:
    if isinstance(message, Error):
        return f"error {message.code}: {message.message}"
    return "no reply" if message is None else f"'{message.type}'"


MALFORMED: tuple[tuple[str, Frame, ErrorCode, str | None], ...] = (
    ("garbage bytes → invalid_json", b"\x00\x01 garbage, not JSON {", ErrorCode.INVALID_JSON, None),
    (
        "invalid UTF-8 → invalid_json",
        b'{"type":"speak","id":"u","text":"\xff\xfe"}',
        ErrorCode.INVALID_JSON,
        None,
    ),
    ("JSON array → invalid_message", "[1, 2, 3]", ErrorCode.INVALID_MESSAGE, None),
    (
        "unknown voice → unknown_voice",
        _speak("acc-voice", SPEAK_TEXT, UNKNOWN_VOICE).encode(),
        ErrorCode.UNKNOWN_VOICE,
        "acc-voice",
    ),
)


def _spoken(reader: Reader, id: str, sent: float, unexpected: Error | None) -> str:
    """Check that ``id`` ended with all its audio; describe it."""
    end = reader.terminals.get(id) or unexpected
    if not isinstance(end, End):
        raise Failed(_describe(end))
    if not end.samples or reader.audio[id] != end.samples * BYTES_PER_SAMPLE:
        raise Failed(f"{reader.audio[id]} audio bytes for {end.samples} samples")
    first_ms = (reader.audio_at[id] - sent) * 1000
    audio_ms = end.samples * 1000 / reader.ready.sample_rate
    return f"start, {audio_ms:.0f} ms of audio, end; first audio after {first_ms:.0f} ms"


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the report."""

    name: str
    status: str
    detail: str

    def line(self) -> str:
        return f"{self.status:4}  {self.name:40} {self.detail}"


class Acceptance:
    """The checks against one endpoint, in order, on one connection (reopened if it drops)."""

    def __init__(
        self,
        endpoint: Endpoint,
        timeout_s: float = TIMEOUT_S,
        max_first_audio_ms: float | None = None,
        max_total_ms: float | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self.max_first_audio_ms = max_first_audio_ms
        self.max_total_ms = max_total_ms
        self.checks: list[Check] = []
        self._reader: Reader | None = None
        self._pipelined: tuple[float, float, float] | None = None  # first audio, total, audio ms

    async def run(self) -> list[Check]:
        """Every check; never raises for a failing endpoint."""
        try:
            self.checks.append(await self._ping())
            await self._check("ready frame", self._ready)
            await self._check("speak in a binary frame", lambda: self._speak_as(binary=True))
            await self._check("speak in a text frame", lambda: self._speak_as(binary=False))
            for name, frame, code, id in MALFORMED:
                await self._check(name, functools.partial(self._rejected, frame, code, id))
            await self._check("still serving after the errors", self._still_serving)
            await self._check("4 pipelined sentences end, in order", self._pipeline)
            self.checks += self._latency()
            await self._check("cancel: no audio after 'cancelled'", self._cancel)
        finally:
            if self._reader is not None:
                await self._reader.conn.aclose()
            await self.endpoint.aclose()
        return self.checks

    async def _check(self, name: str, body: Callable[[], Awaitable[str]]) -> None:
        try:
            self.checks.append(Check(name, PASS, await body()))
        except Failed as exc:
            self.checks.append(Check(name, FAIL, str(exc)))
        except TTSError as exc:  # the connection is gone: the next check opens a new one
            self.checks.append(Check(name, FAIL, f"{type(exc).__name__}: {exc}"))
            if self._reader is not None:
                await self._reader.conn.aclose()
                self._reader = None

    async def _ping(self) -> Check:
        name = "ping healthy"
        if self.endpoint.ping_url is None:
            return Check(name, NA, "SageMaker pings the container itself")
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s) as client:
                response = await client.get(self.endpoint.ping_url)
            body = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            return Check(name, FAIL, f"{self.endpoint.ping_url}: {type(exc).__name__}: {exc}")
        healthy = response.status_code == 200 and isinstance(body, dict)
        healthy = healthy and body.get("status") == "Healthy"
        return Check(name, PASS if healthy else FAIL, f"{response.status_code} {body}"[:100])

    async def _connection(self) -> Reader:
        if self._reader is None:
            conn = await self.endpoint.open()
            try:
                async with asyncio.timeout(self.timeout_s):
                    frame = await conn.recv()
                ready = None if isinstance(frame, bytes) else decode_server(frame)
            except (TimeoutError, ProtocolError, TTSError) as exc:
                await conn.aclose()
                raise Failed(f"no 'ready' frame: {type(exc).__name__}: {exc}") from exc
            if not isinstance(ready, Ready) or ready.protocol != PROTOCOL_VERSION:
                await conn.aclose()
                raise Failed(f"the first frame is {frame[:120]!r}, not a protocol 1 'ready'")
            self._reader = Reader(conn, ready, self.timeout_s)
        return self._reader

    async def _ready(self) -> str:
        ready = (await self._connection()).ready
        return f"protocol {ready.protocol}, {ready.sample_rate} Hz {ready.format}, " + (
            f"{len(ready.voices)} voices, default {ready.default_voice}"
        )

    async def _speak_as(self, *, binary: bool) -> str:
        reader = await self._connection()
        id = f"acc-{'binary' if binary else 'text'}"
        message = _speak(id, SPEAK_TEXT)
        sent = time.perf_counter()
        await reader.conn.send(message.encode() if binary else message)
        return _spoken(reader, id, sent, await reader.until_ended(id))

    async def _rejected(self, frame: Frame, code: ErrorCode, id: str | None) -> str:
        reader = await self._connection()
        before = len(reader.errors)
        await reader.conn.send(frame)
        await reader.until(lambda: len(reader.errors) > before or (id or "") in reader.terminals)
        error = reader.errors[before] if len(reader.errors) > before else None
        if error is None or error.code != code or error.id != id:
            got = _describe(error or reader.terminals.get(id or ""))
            raise Failed(f"expected error {code} (id {id}), got {got} (id {error and error.id})")
        return f"error {code}: {error.message[:60]}"

    async def _still_serving(self) -> str:
        reader = await self._connection()
        sent = time.perf_counter()
        await reader.conn.send(_speak("acc-after-errors", SPEAK_TEXT))
        return _spoken(
            reader, "acc-after-errors", sent, await reader.until_ended("acc-after-errors")
        )

    async def _pipeline(self) -> str:
        reader = await self._connection()
        ids = [f"acc-pipelined-{i}" for i in range(len(SENTENCES))]
        sent = time.perf_counter()
        for id, text in zip(ids, SENTENCES, strict=True):
            await reader.conn.send(_speak(id, text))
        unexpected = await reader.until_ended(*ids)
        for id in ids:
            _spoken(reader, id, sent, unexpected)
        order = [i for i in reader.starts if i in ids]
        if order != ids or reader.stray_audio:
            raise Failed(f"audio order {order}, {reader.stray_audio} audio frames outside segments")
        first_ms = (reader.audio_at[ids[0]] - sent) * 1000
        total_ms = (reader.terminal_at[ids[-1]] - sent) * 1000
        samples = sum(reader.audio[i] for i in ids) / BYTES_PER_SAMPLE
        self._pipelined = (first_ms, total_ms, samples * 1000 / reader.ready.sample_rate)
        return f"all {len(ids)} ended, audio in order, sent at once"

    def _latency(self) -> list[Check]:
        first_name, total_name = "first audio (4 pipelined sentences)", "total completion"
        if self._pipelined is None:
            return [
                Check(n, FAIL, "not measured: the pipelined check failed")
                for n in (first_name, total_name)
            ]
        first_ms, total_ms, audio_ms = self._pipelined
        return [
            _budget(first_name, first_ms, self.max_first_audio_ms, "from the first speak"),
            _budget(
                total_name,
                total_ms,
                self.max_total_ms,
                f"for {audio_ms / 1000:.1f} s of audio (RTF {total_ms / audio_ms:.2f})",
            ),
        ]

    async def _cancel(self) -> str:
        reader = await self._connection()
        ids = [f"acc-cancel-{i}" for i in range(4)]
        for id in ids:  # one in progress, three queued behind it
            await reader.conn.send(_speak(id, LONG_TEXT))
        await reader.until(lambda: ids[0] in reader.audio_at or ids[0] in reader.terminals)
        asked = time.perf_counter()
        await reader.conn.send(encode(Cancel(id=ids[0])))
        await reader.conn.send(encode(Cancel()).encode())  # everything else, in a binary frame
        await reader.until_ended(*ids)
        outcome = [type(reader.terminals.get(i)).__name__ for i in ids]
        if any(o not in ("Cancelled", "End") for o in outcome) or "Cancelled" not in outcome:
            raise Failed(f"replies {outcome}; expected 'cancelled' (or 'end' if already done)")
        confirm_ms = (max(reader.terminal_at[i] for i in ids) - asked) * 1000
        sent = time.perf_counter()
        await reader.conn.send(_speak("acc-after-cancel", SPEAK_TEXT))
        _spoken(reader, "acc-after-cancel", sent, await reader.until_ended("acc-after-cancel"))
        if reader.stray_audio:
            raise Failed(f"{reader.stray_audio} audio frames after 'cancelled' or outside segments")
        cancelled = outcome.count("Cancelled")
        return f"{cancelled} of {len(ids)} cancelled in {confirm_ms:.0f} ms, then a speak works"


def _budget(name: str, value_ms: float, limit_ms: float | None, detail: str) -> Check:
    within = limit_ms is None or value_ms <= limit_ms
    limit = "" if limit_ms is None else f" (limit {limit_ms:g} ms)"
    return Check(name, PASS if within else FAIL, f"{value_ms:.0f} ms {detail}{limit}")


def report(checks: list[Check], title: str) -> tuple[str, int]:
    """The printed report and the exit status (1 if any check failed)."""
    failed = [c for c in checks if c.status == FAIL]
    counts = f"{len(checks) - len(failed)} passed, skipped or n/a, {len(failed)} failed"
    lines = [c.line() for c in checks]
    lines.append(f"{title}: {'FAILED' if failed else 'passed'} ({counts})")
    return "\n".join(lines), 1 if failed else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``voice-agent acceptance`` flags."""
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("url", nargs="?", help="the TTS WebSocket (server or gateway)")
    target.add_argument("--endpoint", help="a SageMaker endpoint name (Python >= 3.12)")
    parser.add_argument("--region", help="for --endpoint (default: the AWS chain's)")
    parser.add_argument("--ping-url", help="the server's /ping (default: derived from the URL)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per reply")
    parser.add_argument("--max-first-audio-ms", type=float, help="fail above this first audio")
    parser.add_argument("--max-total-ms", type=float, help="fail above this total completion")


def run(args: argparse.Namespace) -> int:
    """Run every check; print one line each; 1 on any failure, 2 if it cannot run here."""
    try:
        endpoint: Endpoint = (
            SageMakerEndpoint(args.endpoint, args.region)
            if args.endpoint
            else WebSocketEndpoint(args.url, args.ping_url)
        )
    except (TransportUnavailable, ValueError) as exc:
        print(f"acceptance: cannot test {args.endpoint}: {exc}")
        return 2
    print(f"acceptance: {endpoint.name}")
    checks = asyncio.run(
        Acceptance(endpoint, args.timeout, args.max_first_audio_ms, args.max_total_ms).run()
    )
    text, status = report(checks, "acceptance")
    print(text)
    return status
