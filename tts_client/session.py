"""``TTSSession``: one persistent, pipelined synthesis session over any ``Transport``.

``speak`` sends a segment at once and returns its ``SegmentStream``; many segments may be in
flight. The server answers strictly in order, so audio frames (which carry no id) belong to the
segment of the last ``start``. If the connection drops, the session reconnects with backoff and
re-sends every segment without a terminal reply, skipping the audio the caller already has.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from tts_client.errors import (
    SegmentFailed,
    ServerError,
    SessionClosed,
    TTSConnectionError,
    TTSError,
    TTSProtocolError,
    TTSTimeout,
)
from tts_client.protocol import (
    PROTOCOL_VERSION,
    Cancel,
    Cancelled,
    ClientMessage,
    Close,
    End,
    Error,
    ProtocolError,
    Ready,
    Speak,
    Start,
    decode_server,
    encode,
)
from tts_client.segment import SegmentStatus, SegmentStream
from tts_client.transport import Connection, Frame, Transport

log = logging.getLogger("tts_client")


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """Timeouts, reconnect policy and flow control of a session."""

    connect_timeout: float = 15.0  # transport connect plus the server's `ready`
    reply_timeout: float = 15.0  # longest silence allowed while segments are outstanding
    reconnect_window: float = 30.0  # give up after this long without progress
    backoff_initial: float = 0.1
    backoff_max: float = 2.0
    max_in_flight: int = 16  # segments sent without a terminal reply; more wait client-side
    drain_timeout: float = 60.0  # aclose(drain=True) cancels what is left after this
    close_timeout: float = 2.0  # wait this long for the server to close after 'close'
    on_error: Callable[[TTSError], None] | None = None  # errors not tied to one segment


class _Link:
    """One live connection and what the session has outstanding on it."""

    def __init__(self, conn: Connection, ready: Ready, opened_at: float) -> None:
        self.conn = conn
        self.ready = ready
        self.opened_at = opened_at
        self.outstanding = 0  # segments sent here without a terminal reply yet
        self.current: SegmentStream | None = None  # the segment whose audio is arriving
        self.retiring = False  # too old: send nothing more, replace once idle
        self.done = False  # replaced or closed: its reader must not recover it
        self.closed = asyncio.Event()  # set when its reader saw the connection end
        self.watchdog: asyncio.Timeout | None = None


class TTSSession:
    """A synthesis session; use ``await TTSSession.connect(transport)`` or ``async with``."""

    def __init__(self, transport: Transport, config: SessionConfig | None = None) -> None:
        self.transport = transport
        self.config = config or SessionConfig()
        self.error: TTSError | None = None  # why the session closed itself, if it did
        self.connections = 0  # connections opened so far (reconnects and rollovers included)
        self._pending: dict[str, SegmentStream] = {}  # no terminal reply yet, in send order
        self._link: _Link | None = None
        self._ready: Ready | None = None
        self._send_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = False  # no new segments
        self._closed = False
        self._outage_since: float | None = None

    @classmethod
    async def connect(cls, transport: Transport, config: SessionConfig | None = None) -> TTSSession:
        """Open a session; raises ``TTSConnectionError``/``TTSTimeout`` if the first try fails."""
        session = cls(transport, config)
        await session.start()
        return session

    async def start(self) -> None:
        """Open the first connection (one attempt, bounded by ``connect_timeout``)."""
        if self.connections or self._stopping:
            return
        await self._install(await self._open())

    async def __aenter__(self) -> TTSSession:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose(drain=exc_type is None)

    @property
    def ready(self) -> Ready:
        """The server's ``ready`` (voices, default_voice, sample_rate) of the latest connection."""
        if self._ready is None:
            raise RuntimeError("the session has not connected yet")
        return self._ready

    @property
    def closed(self) -> bool:
        """True once ``aclose`` ran or the session gave up reconnecting."""
        return self._stopping

    @property
    def pending(self) -> int:
        """Segments without a terminal reply from the server."""
        return len(self._pending)

    # --- public API ----------------------------------------------------------------------

    async def speak(
        self, text: str, voice: str | None = None, speed: float | None = None
    ) -> SegmentStream:
        """Queue ``text`` and send it now (unless ``max_in_flight`` or a reconnect holds it)."""
        if self._stopping:
            raise SessionClosed("the session is closed") from self.error
        if not self.connections:
            raise RuntimeError("start the session first (async with, or TTSSession.connect)")
        segment = SegmentStream(uuid.uuid4().hex, text, voice, speed)
        self._pending[segment.id] = segment
        self._maybe_retire()
        await self._flush()
        return segment

    async def cancel(self, segment: SegmentStream) -> None:
        """Stop ``segment`` now: its stream ends at once, late audio for it is dropped."""
        if segment.done:
            return
        async with self._send_lock:
            segment._finish(SegmentStatus.CANCELLED)
            link = segment._link
            if link is not None and link is self._link and not link.done:
                await self._send(link, Cancel(id=segment.id))
            else:  # never sent on the live connection: it will not be
                self._pending.pop(segment.id, None)

    async def cancel_all(self) -> None:
        """Cancel every segment without a terminal status (one ``cancel`` frame)."""
        async with self._send_lock:
            doomed = [s for s in self._pending.values() if not s.done]
            for segment in doomed:
                segment._finish(SegmentStatus.CANCELLED)
            link = self._link if self._link is not None and not self._link.done else None
            if link is not None and any(s._link is link for s in doomed):
                await self._send(link, Cancel(id=None))
            for segment in doomed:
                if link is None or segment._link is not link:
                    self._pending.pop(segment.id, None)

    async def aclose(self, *, drain: bool = True) -> None:
        """Close: with ``drain``, first let pending segments finish (up to ``drain_timeout``).

        The transport stays open: it belongs to whoever created it and may serve other sessions.
        """
        if self._closed:
            return
        self._stopping = True
        if drain:
            waits = [s.wait() for s in self._pending.values() if not s.done]
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config.drain_timeout):
                    await asyncio.gather(*waits)
        await self.cancel_all()
        self._closed = True
        link, self._link = self._link, None
        if link is not None:
            link.done = True
            await self._retire(link, graceful=True)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # --- connections ---------------------------------------------------------------------

    async def _open(self) -> _Link:
        """Connect and read ``ready``, all within ``connect_timeout``."""
        timeout = self.config.connect_timeout
        try:
            async with asyncio.timeout(timeout):
                conn = await self.transport.connect()
                try:
                    ready = self._parse_ready(await conn.recv())
                except BaseException:
                    await conn.aclose()
                    raise
        except TimeoutError as exc:
            raise TTSTimeout(f"{self.transport.endpoint}: not ready within {timeout} s") from exc
        self.connections += 1
        return _Link(conn, ready, asyncio.get_running_loop().time())

    def _parse_ready(self, frame: Frame) -> Ready:
        if isinstance(frame, bytes):
            raise TTSProtocolError("expected 'ready', got a binary frame")
        message = self._decode(frame)
        if isinstance(message, Error):
            raise TTSConnectionError(f"server not ready: {message.code}: {message.message}")
        if not isinstance(message, Ready):
            raise TTSProtocolError(f"expected 'ready', got {message.type!r}")
        if message.protocol != PROTOCOL_VERSION:
            raise TTSProtocolError(f"server speaks protocol {message.protocol}, not 1")
        return message

    async def _install(self, link: _Link) -> None:
        self._link = link
        self._ready = link.ready
        self._spawn(self._read(link))
        await self._flush()

    def _maybe_retire(self) -> None:
        """Past ``max_connection_age``: stop sending here; replace the link once it is idle."""
        link, age = self._link, self.transport.max_connection_age
        if link is None or link.retiring or age is None:
            return
        if asyncio.get_running_loop().time() - link.opened_at >= age:
            link.retiring = True
            self._roll_over_if_idle(link)

    def _roll_over_if_idle(self, link: _Link) -> None:
        if link.retiring and not link.outstanding:
            self._spawn(self._replace(link, None))

    async def _replace(self, link: _Link, error: TTSError | None) -> None:
        """Retire ``link`` (rollover when ``error`` is None) and open its successor."""
        if link.done:
            return
        link.done = True
        if self._link is link:
            self._link = None
        self._abandon(link)
        self._spawn(self._retire(link, graceful=error is None))
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        attempt = 0
        while True:
            if error is not None:
                if self._outage_since is None:
                    self._outage_since = loop.time()
                if loop.time() - self._outage_since >= self.config.reconnect_window:
                    await self._fail(error)
                    return
                log.warning("%s: %s; reconnecting", self.transport.endpoint, error)
                await asyncio.sleep(self._backoff(attempt))
                attempt += 1
            try:
                new = await self._open()
            except Exception as exc:
                error = exc if isinstance(exc, TTSError) else TTSConnectionError(repr(exc))
                continue
            if self._closed:
                await new.conn.aclose()
                return
            await self._install(new)
            return

    def _backoff(self, attempt: int) -> float:
        delay = min(self.config.backoff_max, self.config.backoff_initial * 2.0**attempt)
        return delay * random.uniform(0.5, 1.0)

    def _abandon(self, link: _Link) -> None:
        """Forget ``link``: segments cancelled on it are over; the rest will be re-sent."""
        link.current = None
        for segment in list(self._pending.values()):
            if segment._link is link and segment.done:
                del self._pending[segment.id]

    async def _retire(self, link: _Link, *, graceful: bool) -> None:
        """Close ``link``; gracefully: send 'close' and let the server close it first."""
        if graceful:
            with contextlib.suppress(TTSError, TimeoutError):
                async with asyncio.timeout(self.config.close_timeout):
                    await link.conn.send(encode(Close()))
                    await link.closed.wait()
        await link.conn.aclose()

    async def _fail(self, error: TTSError) -> None:
        """Reconnecting failed for ``reconnect_window``: fail everything and close."""
        log.error("%s: giving up: %s", self.transport.endpoint, error)
        self.error = error
        self._stopping = True
        for segment in self._pending.values():
            segment._finish(SegmentStatus.FAILED, error)
        self._pending.clear()
        self._report(error)

    # --- sending -------------------------------------------------------------------------

    async def _flush(self) -> None:
        """Send waiting segments, in order, while the live link has room for them."""
        async with self._send_lock:
            link = self._link
            if link is None or link.retiring:
                return
            for segment in list(self._pending.values()):
                if link.done or link.outstanding >= self.config.max_in_flight:
                    return
                if segment._link is link:
                    continue
                if segment.done:  # cancelled before it was ever sent here
                    self._pending.pop(segment.id, None)
                    continue
                segment._sent(link)
                link.outstanding += 1
                self._arm(link)
                speak = Speak(segment.id, segment.text, segment.voice, segment.speed)
                await self._send(link, speak)

    async def _send(self, link: _Link, message: ClientMessage) -> None:
        """Send on ``link``; a failure closes it so that its reader reconnects."""
        try:
            async with asyncio.timeout(self.config.reply_timeout):
                await link.conn.send(encode(message))
        except (TTSError, TimeoutError) as exc:
            log.info("%s: send failed: %r", self.transport.endpoint, exc)
            self._spawn(link.conn.aclose())  # its reader sees the end and reconnects

    def _arm(self, link: _Link) -> None:
        """Start the reply timer if the reader is waiting without one."""
        if link.watchdog is not None and link.watchdog.when() is None:
            loop = asyncio.get_running_loop()
            link.watchdog.reschedule(loop.time() + self.config.reply_timeout)

    # --- receiving -----------------------------------------------------------------------

    async def _read(self, link: _Link) -> None:
        """Read ``link`` until it ends; an end the session did not ask for reconnects."""
        try:
            while True:
                await self._on_frame(link, await self._receive(link))
        except Exception as exc:
            if link.done or self._closed:
                return
            if isinstance(exc, TTSError):
                error = exc
            else:  # a transport bug must not leave callers hanging
                log.exception("%s: unexpected error", self.transport.endpoint)
                error = TTSConnectionError(f"unexpected {exc!r}")
            if isinstance(error, TTSProtocolError):
                self._report(error)
            await self._replace(link, error)
        finally:
            link.closed.set()

    async def _receive(self, link: _Link) -> Frame:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.reply_timeout if link.outstanding else None
        try:
            async with asyncio.timeout_at(deadline) as link.watchdog:
                return await link.conn.recv()
        except TimeoutError as exc:
            raise TTSTimeout(
                f"{self.transport.endpoint}: no reply in {self.config.reply_timeout} s "
                f"with {link.outstanding} segment(s) outstanding"
            ) from exc
        finally:
            link.watchdog = None

    async def _on_frame(self, link: _Link, frame: Frame) -> None:
        if isinstance(frame, bytes):
            if link.current is None:
                raise TTSProtocolError("audio frame outside a segment")
            link.current._audio(frame)
            return
        message = self._decode(frame)
        if isinstance(message, Start):
            segment = self._segment(link, message.id)
            if link.current is not None:
                raise TTSProtocolError(f"'start' {message.id} before 'end' {link.current.id}")
            link.current = segment
            return
        if isinstance(message, Error) and (message.id is None or message.id not in self._pending):
            self._report(ServerError(message.code, message.message))
            return
        if not isinstance(message, End | Cancelled | Error):
            raise TTSProtocolError(f"unexpected {message.type!r} frame")
        segment = self._segment(link, message.id)
        if isinstance(message, End):
            segment._finish(SegmentStatus.DONE, end=message)
        elif isinstance(message, Cancelled):
            segment._finish(SegmentStatus.CANCELLED)
        else:
            failure = SegmentFailed(message.code, message.message, segment.id)
            segment._finish(SegmentStatus.FAILED, failure)
        del self._pending[segment.id]
        if link.current is segment:
            link.current = None
        link.outstanding -= 1
        self._outage_since = None  # progress: the connection works
        self._roll_over_if_idle(link)
        await self._flush()

    def _segment(self, link: _Link, segment_id: str | None) -> SegmentStream:
        segment = self._pending.get(segment_id or "")
        if segment is None or segment._link is not link:
            raise TTSProtocolError(f"reply for unknown segment {segment_id!r}")
        return segment

    @staticmethod
    def _decode(frame: str) -> Ready | Start | End | Cancelled | Error:
        try:
            return decode_server(frame)
        except ProtocolError as exc:
            raise TTSProtocolError(f"invalid control frame: {exc.message}") from exc

    # --- plumbing ------------------------------------------------------------------------

    def _report(self, error: TTSError) -> None:
        log.warning("%s: %s", self.transport.endpoint, error)
        if self.config.on_error is not None:
            self.config.on_error(error)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
