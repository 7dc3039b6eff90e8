"""``TTSSession``: one persistent, pipelined synthesis session over any ``Transport``.

``speak`` sends a segment at once and returns its ``SegmentStream``; many may be in flight.
The rules of the wire (one terminal reply per segment, byte-exact resume after a reconnect)
live in ``tts_protocol.ClientProtocol``. The session is the public face of the pieces that do
the I/O around it, each in its own module:

- ``SegmentBook``: the protocol's pending segments and the caller's stream of each;
- ``SegmentSender``: what goes out on the live link (segments in order, cancels);
- ``LinkReader``: what comes in (audio, replies), carried out on the streams;
- ``LinkKeeper``: the links themselves (connect, reconnect with backoff, rollover, close);
- ``DeferredRetry``: segments the server refused as busy, sent again after a backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable

from tts_client.config import SessionConfig
from tts_client.errors import SessionClosed, TTSError, report
from tts_client.parts.background import BackgroundTasks
from tts_client.parts.book import SegmentBook
from tts_client.parts.deferred import DeferredRetry
from tts_client.parts.keeper import LinkKeeper
from tts_client.parts.reader import LinkReader
from tts_client.parts.sender import SegmentSender
from tts_client.retry_notice import RetryNotice
from tts_client.segment import SegmentStream
from tts_client.transports.base import Transport
from tts_protocol import DEFAULT_SPEED, Ready, Speak, VoiceMix

log = logging.getLogger("tts_client")


class TTSSession:
    """A synthesis session; use ``await TTSSession.connect(transport)`` or ``async with``."""

    def __init__(self, transport: Transport, config: SessionConfig | None = None) -> None:
        self.transport = transport
        self.config = config or SessionConfig()
        self.error: TTSError | None = None  # why the session closed itself, if it did
        # told of an outage (busy, lost connection) that lasted ``retry_notice_s``, while retrying
        self.on_retry: Callable[[TTSError], None] | None = None
        # the reply the next segments belong to (``Speak.reply``): a pool names one per turn
        self.reply: str | None = None
        self._stopping = False  # no new segments
        config, endpoint = self.config, transport.endpoint
        self._book = SegmentBook(config.max_in_flight)
        self._tasks = BackgroundTasks()
        notice = RetryNotice(endpoint, config.retry_notice_s, self._notify)
        self._sender = SegmentSender(self._book, config, endpoint, self._tasks)
        retry = DeferredRetry(self._book, self._sender, notice, self._tasks, config)
        self._links = LinkKeeper(
            transport,
            config,
            book=self._book,
            sender=self._sender,
            reader=LinkReader(self._book, retry, config, endpoint),
            notice=notice,
            tasks=self._tasks,
            give_up=self._give_up,
        )

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
        await self._links.start()

    async def __aenter__(self) -> TTSSession:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:  # (type, value, traceback)
        await self.aclose(drain=exc_info[0] is None)

    @property
    def ready(self) -> Ready:
        """The server's ``ready`` (voices, default_voice, sample_rate) of the latest connection."""
        if self._book.protocol.ready is None:
            raise RuntimeError("the session has not connected yet")
        return self._book.protocol.ready

    @property
    def closed(self) -> bool:
        """True once ``aclose`` ran or the session gave up reconnecting."""
        return self._stopping

    @property
    def pending(self) -> int:
        """Segments without a terminal reply from the server."""
        return self._book.protocol.pending

    @property
    def connections(self) -> int:
        """Connections opened so far (reconnects and rollovers included)."""
        return self._links.connections

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
        speak = Speak(uuid.uuid4().hex, text, voice, speed, marks, reply=self.reply)
        segment = self._book.add(speak)
        self._links.retire_if_old()
        await self._sender.flush()
        return segment

    async def cancel(self, segment: SegmentStream) -> None:
        """Stop ``segment`` now: its stream ends at once, late audio for it is dropped."""
        if not segment.done:
            await self._sender.cancel(segment)

    async def cancel_all(self) -> None:
        """Cancel every segment without a terminal status (one ``cancel`` frame)."""
        await self._sender.cancel_all()

    async def aclose(self, *, drain: bool = True) -> None:
        """Close: with ``drain``, first let pending segments finish (up to ``drain_timeout``).

        The transport stays open: it belongs to whoever created it and may serve other sessions.
        """
        if self._links.closed:
            return
        self._stopping = True
        if drain:
            waits = [segment.wait() for segment in self._book.unfinished()]
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config.drain_timeout):
                    await asyncio.gather(*waits)
        await self.cancel_all()
        await self._links.close()
        await self._tasks.cancel()

    def _notify(self, error: TTSError) -> None:
        """An outage lasted ``retry_notice_s``: tell the borrower, unless the session closed."""
        if self.on_retry is not None and not self._stopping:
            self.on_retry(error)

    def _give_up(self, error: TTSError) -> None:
        """Reconnecting failed for ``reconnect_window``: fail everything and close."""
        log.error("%s: giving up: %s", self.transport.endpoint, error)
        self.error = error
        self._stopping = True
        self._book.fail_all(error)
        report(error, self.transport.endpoint, self.config.on_error)
