"""The checks of the acceptance test, in order, on one connection (reopened if it drops)."""

from __future__ import annotations

import asyncio
import functools
import textwrap
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

from tts_client.acceptance.targets import AcceptanceTarget
from tts_client.acceptance.under_test import Broken, ConnectionUnderTest, Failed, describe
from tts_client.errors import TTSError
from tts_client.transports import Frame
from tts_protocol import (
    BYTES_PER_SAMPLE,
    Cancel,
    ClientProtocol,
    ConnectionFailed,
    ErrorCode,
    SegmentCancelled,
    SegmentEnded,
    SegmentErrorReported,
    ServerErrorReported,
    encode,
    parse_voice,
    samples_ms,
)

PASS, FAIL, NA = "PASS", "FAIL", "n/a"
LINE_WIDTH = 100  # a report line; a longer detail wraps under itself, never cut
MAX_FRAME_CHARS = 200  # an unexpected frame is quoted up to here, cut between words
TIMEOUT_S = 30.0
MAX_RTF = 1.0  # the CLI's default: an endpoint slower than real time cannot stream speech
MAX_IN_FLIGHT = 64  # the endpoint's flow control is under test, not the client's
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


MALFORMED: tuple[tuple[str, Frame, ErrorCode], ...] = (
    ("garbage bytes → invalid_json", b"\x00\x01 garbage, not JSON {", ErrorCode.INVALID_JSON),
    (
        "invalid UTF-8 → invalid_json",
        b'{"type":"speak","id":"u","text":"\xff\xfe"}',
        ErrorCode.INVALID_JSON,
    ),
    ("JSON array → invalid_message", "[1, 2, 3]", ErrorCode.INVALID_MESSAGE),
)


def _spoken(
    tested: ConnectionUnderTest, id: str, sent: float, unexpected: ServerErrorReported | None
) -> str:
    """Check that ``id`` ended with all its audio; describe it."""
    end = tested.terminals.get(id) or unexpected
    if not isinstance(end, SegmentEnded):
        raise Failed(describe(end))
    samples = end.end.samples
    if not samples or tested.audio[id] != samples * BYTES_PER_SAMPLE:
        raise Failed(f"{tested.audio[id]} audio bytes for {samples} samples")
    first_ms = (tested.audio_at[id] - sent) * 1000
    audio_ms = samples_ms(samples, tested.ready.sample_rate)
    return f"start, {audio_ms:.0f} ms of audio, end; first audio after {first_ms:.0f} ms"


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the report."""

    name: str
    status: str
    detail: str

    def line(self) -> str:
        """``STATUS  name  detail``, the detail wrapped between words under itself."""
        head = f"{self.status:4}  {self.name:40} "
        width = max(LINE_WIDTH - len(head), 40)
        parts = textwrap.wrap(
            self.detail, width, break_long_words=False, break_on_hyphens=False
        ) or [""]
        return (head + f"\n{' ' * len(head)}".join(parts)).rstrip()


class Acceptance:
    """The checks against one endpoint, in order, on one connection (reopened if it drops)."""

    def __init__(
        self,
        target: AcceptanceTarget,
        timeout_s: float = TIMEOUT_S,
        max_first_audio_ms: float | None = None,
        max_total_ms: float | None = None,
        max_rtf: float | None = None,
    ) -> None:
        self.target = target
        self.timeout_s = timeout_s
        self.max_first_audio_ms = max_first_audio_ms
        self.max_total_ms = max_total_ms
        self.max_rtf = max_rtf
        self.checks: list[Check] = []
        self._tested: ConnectionUnderTest | None = None
        self._pipelined: tuple[float, float, float] | None = None  # first audio, total, audio ms

    async def run(self) -> list[Check]:
        """Every check; never raises for a failing endpoint."""
        try:
            self.checks.append(await self._ping())
            await self._check("ready frame", self._ready)
            await self._check("speak in a binary frame", lambda: self._speak_as(binary=True))
            await self._check("speak in a text frame", lambda: self._speak_as(binary=False))
            for name, frame, code in MALFORMED:
                await self._check(name, functools.partial(self._rejected, frame, code))
            await self._check("unknown voice → unknown_voice", self._unknown_voice)
            await self._check("still serving after the errors", self._still_serving)
            await self._check("4 pipelined sentences end, in order", self._pipeline)
            self.checks += self._latency()
            await self._check("cancel: no audio after 'cancelled'", self._cancel)
        finally:
            await self._drop()
            await self.target.aclose()
        return self.checks

    async def _check(self, name: str, body: Callable[[], Awaitable[str]]) -> None:
        try:
            self.checks.append(Check(name, PASS, await body()))
        except (Broken, TTSError) as exc:  # the connection is unusable: the next check reopens
            self.checks.append(Check(name, FAIL, f"{type(exc).__name__}: {exc}"))
            await self._drop()
        except Failed as exc:
            self.checks.append(Check(name, FAIL, str(exc)))

    async def _drop(self) -> None:
        if self._tested is not None:
            await self._tested.conn.aclose()
            self._tested = None

    async def _ping(self) -> Check:
        name = "ping healthy"
        if self.target.ping_url is None:
            return Check(name, NA, "SageMaker pings the container itself")
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s) as client:
                response = await client.get(self.target.ping_url)
            body = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            return Check(name, FAIL, f"{self.target.ping_url}: {type(exc).__name__}: {exc}")
        healthy = response.status_code == 200 and isinstance(body, dict)
        healthy = healthy and body.get("status") == "Healthy"
        return Check(name, PASS if healthy else FAIL, f"{response.status_code} {body}")

    async def _connection(self) -> ConnectionUnderTest:
        if self._tested is None:
            conn = await self.target.open()
            protocol = ClientProtocol(max_in_flight=MAX_IN_FLIGHT)
            protocol.connection_opened()
            try:
                async with asyncio.timeout(self.timeout_s):
                    frame = await conn.recv()
            except (TimeoutError, TTSError) as exc:
                await conn.aclose()
                raise Failed(f"no 'ready' frame: {type(exc).__name__}: {exc}") from exc
            [event] = protocol.receive(frame)
            if isinstance(event, ConnectionFailed):
                await conn.aclose()
                quoted = textwrap.shorten(repr(frame), MAX_FRAME_CHARS, placeholder=" …")
                raise Failed(f"the first frame is {quoted}: {event.reason}")
            self._tested = ConnectionUnderTest(conn, protocol, self.timeout_s)
        return self._tested

    async def _ready(self) -> str:
        ready = (await self._connection()).ready
        return f"protocol {ready.protocol}, {ready.sample_rate} Hz {ready.format}, " + (
            f"{len(ready.voices)} voices, default {ready.default_voice}"
        )

    async def _speak_as(self, *, binary: bool) -> str:
        tested = await self._connection()
        id = f"acc-{'binary' if binary else 'text'}"
        sent = await tested.speak(id, SPEAK_TEXT, binary=binary)
        return _spoken(tested, id, sent, await tested.until_ended(id))

    async def _rejected(self, frame: Frame, code: ErrorCode) -> str:
        tested = await self._connection()
        before = len(tested.errors)
        await tested.conn.send(frame)
        await tested.until(lambda: len(tested.errors) > before)
        error = tested.errors[before]
        if error.code != code:
            raise Failed(f"expected error {code}, got {describe(error)}")
        return f"error {code}: {error.message}"

    async def _unknown_voice(self) -> str:
        tested = await self._connection()
        id = "acc-voice"
        await tested.speak(id, SPEAK_TEXT, voice=parse_voice(UNKNOWN_VOICE), binary=True)
        unexpected = await tested.until_ended(id)
        reply = tested.terminals.get(id) or unexpected
        if not isinstance(reply, SegmentErrorReported) or reply.code != ErrorCode.UNKNOWN_VOICE:
            raise Failed(
                f"expected error {ErrorCode.UNKNOWN_VOICE} (id {id}), got {describe(reply)}"
            )
        return f"error {reply.code}: {reply.message}"

    async def _still_serving(self) -> str:
        tested = await self._connection()
        sent = await tested.speak("acc-after-errors", SPEAK_TEXT)
        return _spoken(
            tested, "acc-after-errors", sent, await tested.until_ended("acc-after-errors")
        )

    async def _pipeline(self) -> str:
        tested = await self._connection()
        ids = [f"acc-pipelined-{i}" for i in range(len(SENTENCES))]
        sent = time.perf_counter()
        for id, text in zip(ids, SENTENCES, strict=True):
            await tested.speak(id, text)
        unexpected = await tested.until_ended(*ids)
        for id in ids:
            _spoken(tested, id, sent, unexpected)
        order = [i for i in tested.starts if i in ids]
        if order != ids:
            raise Failed(f"audio order {order}")
        first_ms = (tested.audio_at[ids[0]] - sent) * 1000
        total_ms = (tested.terminal_at[ids[-1]] - sent) * 1000
        samples = sum(tested.audio[i] for i in ids) // BYTES_PER_SAMPLE
        self._pipelined = (first_ms, total_ms, samples_ms(samples, tested.ready.sample_rate))
        return f"all {len(ids)} ended, audio in order, sent at once"

    def _latency(self) -> list[Check]:
        first_name, total_name = "first audio (4 pipelined sentences)", "total completion"
        if self._pipelined is None:
            return [
                Check(n, FAIL, "not measured: the pipelined check failed")
                for n in (first_name, total_name)
            ]
        first_ms, total_ms, audio_ms = self._pipelined
        rtf = total_ms / audio_ms
        total = _budget(
            total_name,
            total_ms,
            self.max_total_ms,
            f"for {audio_ms / 1000:.1f} s of audio (RTF {rtf:.2f})",
        )
        if self.max_rtf is not None and rtf > self.max_rtf:  # slower than it may be
            total = Check(total_name, FAIL, f"{total.detail} (limit RTF {self.max_rtf:g})")
        return [
            _budget(first_name, first_ms, self.max_first_audio_ms, "from the first speak"),
            total,
        ]

    async def _cancel(self) -> str:
        """Cancel frames go out raw: the protocol keeps reporting audio, so late audio fails."""
        tested = await self._connection()
        ids = [f"acc-cancel-{i}" for i in range(4)]
        for id in ids:  # one in progress, three queued behind it
            await tested.speak(id, LONG_TEXT)
        await tested.until(lambda: ids[0] in tested.audio_at or ids[0] in tested.terminals)
        asked = time.perf_counter()
        await tested.conn.send(encode(Cancel(id=ids[0])))
        await tested.conn.send(encode(Cancel()).encode())  # everything else, in a binary frame
        await tested.until_ended(*ids)
        outcome = [type(tested.terminals.get(i)).__name__ for i in ids]
        cancelled = outcome.count(SegmentCancelled.__name__)
        if not cancelled or cancelled + outcome.count(SegmentEnded.__name__) < len(ids):
            raise Failed(f"replies {outcome}; expected 'cancelled' (or 'end' if already done)")
        confirm_ms = (max(tested.terminal_at[i] for i in ids) - asked) * 1000
        sent = await tested.speak("acc-after-cancel", SPEAK_TEXT)
        _spoken(tested, "acc-after-cancel", sent, await tested.until_ended("acc-after-cancel"))
        return f"{cancelled} of {len(ids)} cancelled in {confirm_ms:.0f} ms, then a speak works"


def _budget(name: str, value_ms: float, limit_ms: float | None, detail: str) -> Check:
    within = limit_ms is None or value_ms <= limit_ms
    limit = "" if limit_ms is None else f" (limit {limit_ms:g} ms)"
    return Check(name, PASS if within else FAIL, f"{value_ms:.0f} ms {detail}{limit}")


def report(checks: list[Check], title: str) -> tuple[str, int]:
    """The printed report and the exit status (1 if any check failed)."""
    failed = [c for c in checks if c.status == FAIL]
    tally = {status: sum(c.status == status for c in checks) for status in (PASS, NA, FAIL)}
    counts = f"{tally[PASS]} passed, {tally[NA]} n/a, {tally[FAIL]} failed"
    lines = [c.line() for c in checks]
    lines.append(f"{title}: {'FAILED' if failed else 'passed'} ({counts})")
    return "\n".join(lines), 1 if failed else 0
