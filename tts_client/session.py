"""``TTSSession``: one persistent, pipelined synthesis session over any ``Transport``.

``speak`` sends a segment at once and returns its ``SegmentStream``; many may be in flight.
The rules of the wire (one terminal reply per segment, byte-exact resume after a reconnect)
live in ``tts_protocol.ClientProtocol``; this module does the I/O around it: connecting,
reading, timeouts, reconnect with backoff and rollover.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

from tts_client.config import Outage, SessionConfig
from tts_client.errors import (
    SegmentFailed,
    ServerError,
    SessionClosed,
    TTSBusy,
    TTSConnectionError,
    TTSError,
    TTSProtocolError,
    TTSTimeout,
    raise_if_failed,
)
from tts_client.retry_notice import RetryNotice
from tts_client.segment import SegmentStatus, SegmentStream
from tts_client.session_link import SessionLink, open_link
from tts_client.transports.base import Frame, Transport
from tts_protocol import (
    DEFAULT_SPEED,
    Audio,
    ClientEvent,
    ClientMessage,
    ClientProtocol,
    ErrorCode,
    Ready,
    SegmentCancelled,
    SegmentDeferred,
    SegmentEnded,
    SegmentErrorReported,
    SegmentMarked,
    ServerErrorReported,
    Speak,
    VoiceMix,
    encode,
)

log = logging.getLogger("tts_client")


class TTSSession:
    """A synthesis session; use ``await TTSSession.connect(transport)`` or ``async with``."""

    def __init__(self, transport: Transport, config: SessionConfig | None = None) -> None:
        self.transport = transport
        self.config = config or SessionConfig()
        self.error: TTSError | None = None  # why the session closed itself, if it did
        self.connections = 0  # connections opened so far (reconnects and rollovers included)
        self._protocol = ClientProtocol(self.config.max_in_flight)
        self._streams: dict[str, SegmentStream] = {}  # the protocol's pending segments
        self._link: SessionLink | None = None
        self._send_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = False  # no new segments
        self._closed = False
        self._outage = Outage(self.config, self.config.reconnect_window)  # reconnects
        self._busy = Outage(self.config, self.config.busy_window)  # segments refused as busy
        # told of an outage (busy, lost connection) that lasted ``retry_notice_s``, while retrying
        self.on_retry: Callable[[TTSError], None] | None = None
        self._notice = RetryNotice(transport.endpoint, self.config.retry_notice_s, self._notify)
        self._retry_pending = False  # a retry of deferred segments is scheduled

    @classmethod
    async def connect(cls, transport: Transport, config: SessionConfig | None = None) -> TTSSession:
        """Open a session; raises ``TTSConnectionError``/``TTSTimeout`` if the first try fails."""
        session = cls(transport, config)
        await session.start()
        return session

    async def start(self) -> None:
        """Open the first connection: one attempt, unless the server is busy (then retried
        with a growing, jittered backoff for ``busy_window``)."""
        if self.connections or self._stopping:
            return
        outage = Outage(self.config, self.config.busy_window)
        while True:
            try:
                return await self._install(await self._open())
            except TTSBusy as busy:
                now = asyncio.get_running_loop().time()
                if outage.record_failure(now):
                    self._notice.started(busy)
                if outage.expired(now):
                    self._notice.cancel()  # it raises: no notice after that
                    raise
                await asyncio.sleep(outage.next_delay())

    async def __aenter__(self) -> TTSSession:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:  # (type, value, traceback)
        await self.aclose(drain=exc_info[0] is None)

    @property
    def ready(self) -> Ready:
        """The server's ``ready`` (voices, default_voice, sample_rate) of the latest connection."""
        if self._protocol.ready is None:
            raise RuntimeError("the session has not connected yet")
        return self._protocol.ready

    @property
    def closed(self) -> bool:
        """True once ``aclose`` ran or the session gave up reconnecting."""
        return self._stopping

    @property
    def pending(self) -> int:
        """Segments without a terminal reply from the server."""
        return self._protocol.pending

    # --- public API ----------------------------------------------------------------------

    async def speak(
        self,
        text: str,
        voice: VoiceMix | None = None,
        speed: float = DEFAULT_SPEED,
        marks: bool = False,
    ) -> SegmentStream:
        """Queue ``text`` and send it now (unless ``max_in_flight`` or a reconnect holds it)."""
        if self._stopping:
            raise SessionClosed("the session is closed") from self.error
        if not self.connections:
            raise RuntimeError("start the session first (async with, or TTSSession.connect)")
        segment = SegmentStream(uuid.uuid4().hex, text, voice, speed)
        self._protocol.speak(Speak(segment.id, text, voice, speed, marks))
        self._streams[segment.id] = segment
        self._maybe_retire()
        await self._flush()
        return segment

    async def cancel(self, segment: SegmentStream) -> None:
        """Stop ``segment`` now: its stream ends at once, late audio for it is dropped."""
        if segment.done:
            return
        async with self._send_lock:
            segment.finish(SegmentStatus.CANCELLED)
            await self._send_live(self._protocol.cancel(segment.id))
            self._prune()

    async def cancel_all(self) -> None:
        """Cancel every segment without a terminal status (one ``cancel`` frame)."""
        async with self._send_lock:
            ids, message = self._protocol.cancel_all()
            for id in ids:
                self._streams[id].finish(SegmentStatus.CANCELLED)
            await self._send_live(message)
            self._prune()

    async def aclose(self, *, drain: bool = True) -> None:
        """Close: with ``drain``, first let pending segments finish (up to ``drain_timeout``).

        The transport stays open: it belongs to whoever created it and may serve other sessions.
        """
        if self._closed:
            return
        self._stopping = True
        if drain:
            waits = [s.wait() for s in self._streams.values() if not s.done]
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config.drain_timeout):
                    await asyncio.gather(*waits)
        await self.cancel_all()
        self._closed = True
        link = self._link
        if link is not None:
            self._abandon(link)
            await link.retire(graceful=True, close_timeout=self.config.close_timeout)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # --- connections ---------------------------------------------------------------------

    async def _open(self) -> SessionLink:
        link = await open_link(self.transport, self._protocol, self.config.connect_timeout)
        self.connections += 1
        return link

    async def _install(self, link: SessionLink) -> None:
        self._notice.cancel()
        self._link = link
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

    def _roll_over_if_idle(self, link: SessionLink) -> None:
        if link.retiring and link is self._link and not self._protocol.in_flight:
            self._spawn(self._replace(link, None))

    async def _replace(self, link: SessionLink, error: TTSError | None) -> None:
        """Retire ``link`` (rollover when ``error`` is None) and open its successor."""
        if link.done:
            return
        self._abandon(link)
        self._spawn(link.retire(graceful=error is None, close_timeout=self.config.close_timeout))
        if self._closed:
            return
        while True:
            if error is not None:
                now = asyncio.get_running_loop().time()
                self._outage.record_failure(now)
                self._notice.reconnecting(error, audio_owed=self._protocol.pending > 0)
                if self._outage.expired(now):
                    return await self._fail(error)
                await asyncio.sleep(self._outage.next_delay())
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

    def _abandon(self, link: SessionLink) -> None:
        """Stop using ``link``: segments cancelled on it are over; the rest will be re-sent."""
        link.done = True
        if self._link is link:
            self._link = None
            self._protocol.connection_lost()
            self._prune()

    async def _fail(self, error: TTSError) -> None:
        """Reconnecting failed for ``reconnect_window``: fail everything and close."""
        log.error("%s: giving up: %s", self.transport.endpoint, error)
        self.error = error
        self._stopping = True
        for id in self._protocol.fail_all():
            self._streams[id].finish(SegmentStatus.FAILED, error)
        self._streams.clear()
        self._report(error)

    def _prune(self) -> None:
        """Forget the streams of segments that the protocol dropped without a reply."""
        for id in [id for id in self._streams if not self._protocol.is_pending(id)]:
            del self._streams[id]

    # --- sending -------------------------------------------------------------------------

    async def _flush(self) -> None:
        """Send waiting segments, in order, while the live link has room for them."""
        async with self._send_lock:
            link = self._link
            if link is None or link.retiring:
                return
            speaks = self._protocol.take_speaks()
            self._prune()
            for speak in speaks:
                self._streams[speak.id].mark_sent()
                self._arm(link)
                await self._send(link, speak)

    async def _send_live(self, message: ClientMessage | None) -> None:
        """Send ``message`` (if any) on the live link; the protocol only asks when there is one."""
        if message is not None and self._link is not None:
            await self._send(self._link, message)

    async def _send(self, link: SessionLink, message: ClientMessage) -> None:
        """Send on ``link``; a failure closes it so that its reader reconnects."""
        try:
            async with asyncio.timeout(self.config.reply_timeout):
                await link.conn.send(encode(message))
        except (TTSError, TimeoutError) as exc:
            log.info("%s: send failed: %r", self.transport.endpoint, exc)
            self._spawn(link.conn.aclose())  # its reader sees the end and reconnects

    def _arm(self, link: SessionLink) -> None:
        """Start the reply timer if the reader is waiting without one."""
        if link.watchdog is not None and link.watchdog.when() is None:
            loop = asyncio.get_running_loop()
            link.watchdog.reschedule(loop.time() + self.config.reply_timeout)

    # --- receiving -----------------------------------------------------------------------

    async def _read(self, link: SessionLink) -> None:
        """Read ``link`` until it ends; an end the session did not ask for reconnects."""
        try:
            while True:
                frame = await self._receive(link)
                if not link.done:  # a retired link is read only until the server closes it
                    await self._on_events(link, self._protocol.receive(frame))
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

    async def _receive(self, link: SessionLink) -> Frame:
        loop = asyncio.get_running_loop()
        waiting = not link.done and self._protocol.in_flight
        deadline = loop.time() + self.config.reply_timeout if waiting else None
        try:
            async with asyncio.timeout_at(deadline) as link.watchdog:
                return await link.conn.recv()
        except TimeoutError as exc:
            raise TTSTimeout(
                f"{self.transport.endpoint}: no reply in {self.config.reply_timeout} s "
                f"with {self._protocol.in_flight} segment(s) outstanding"
            ) from exc
        finally:
            link.watchdog = None

    async def _on_events(self, link: SessionLink, events: list[ClientEvent]) -> None:
        progress = False
        for event in events:
            if isinstance(event, Audio):
                self._streams[event.segment_id].feed(event.pcm)
            elif isinstance(event, SegmentMarked):
                self._streams[event.segment_id].feed_marks(event.words)
            elif isinstance(event, SegmentEnded | SegmentCancelled | SegmentErrorReported):
                self._streams.pop(event.segment_id).finish_by(event)
                progress = True
            elif isinstance(event, SegmentDeferred):
                self._defer(event)
            elif isinstance(event, ServerErrorReported):
                self._report(ServerError(event.code, event.message))
            else:
                raise_if_failed(event)
        if progress:
            self._outage.progressed()  # the connection works
            self._busy.progressed()
            self._notice.progressed()
            self._roll_over_if_idle(link)
            await self._flush()

    def _defer(self, event: SegmentDeferred) -> None:
        """The server was busy: send the segment again after a backoff, for ``busy_window``."""
        now = asyncio.get_running_loop().time()
        failure = SegmentFailed(ErrorCode.BUSY, event.message, event.segment_id)
        if self._busy.record_failure(now):
            self._notice.started(failure)
        if self._busy.expired(now):
            self._protocol.cancel(event.segment_id)  # held, so dropped without a frame
            self._streams.pop(event.segment_id).finish(SegmentStatus.FAILED, failure)
        elif not self._retry_pending:
            self._retry_pending = True
            self._spawn(self._retry_deferred(self._busy.next_delay()))

    async def _retry_deferred(self, delay: float) -> None:
        """After ``delay``, send the segments the server refused as busy, in order."""
        await asyncio.sleep(delay)
        self._retry_pending = False
        self._protocol.retry_deferred()
        await self._flush()

    def _notify(self, error: TTSError) -> None:
        if self.on_retry is not None and not self._stopping:
            self.on_retry(error)

    def _report(self, error: TTSError) -> None:
        log.warning("%s: %s", self.transport.endpoint, error)
        if self.config.on_error is not None:
            self.config.on_error(error)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
