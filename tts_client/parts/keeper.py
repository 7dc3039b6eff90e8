"""``LinkKeeper``: the life of a session's connections: open, reconnect, roll over, retire.

A session has at most one live link, the one its ``SegmentSender`` writes to. The keeper opens
it, has a ``LinkReader`` read it, and replaces it when it is lost: it reconnects with backoff
until a segment completes again, and gives up (the session's ``give_up``) after
``reconnect_window``. Past the transport's ``max_connection_age`` it rolls over between
segments: nothing more is sent on the old link, and once that is idle a new one takes its place
and the old one is closed politely (``close``, then the server closes).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from tts_client.config import Outage, SessionConfig
from tts_client.errors import TTSBusy, TTSConnectionError, TTSError, TTSProtocolError, report
from tts_client.parts.background import BackgroundTasks
from tts_client.parts.book import SegmentBook
from tts_client.parts.link import SessionLink, open_link
from tts_client.parts.reader import LinkReader
from tts_client.parts.sender import SegmentSender
from tts_client.retry_notice import RetryNotice
from tts_client.transports.base import Transport

log = logging.getLogger("tts_client")


class LinkKeeper:
    """Opens, reads, replaces and retires the links of one session."""

    def __init__(
        self,
        transport: Transport,
        config: SessionConfig,
        *,
        book: SegmentBook,
        sender: SegmentSender,
        reader: LinkReader,
        notice: RetryNotice,
        tasks: BackgroundTasks,
        give_up: Callable[[TTSError], None],
    ) -> None:
        self.connections = 0  # links opened so far (reconnects and rollovers included)
        self.closed = False  # the session closed: no link is opened or replaced any more
        self._transport = transport
        self._config = config
        self._book = book
        self._sender = sender
        self._reader = reader
        self._notice = notice
        self._tasks = tasks
        self._give_up = give_up  # reconnecting failed for reconnect_window
        self._outage = Outage(config, config.reconnect_window)

    async def start(self) -> None:
        """Open the first link: one attempt, unless the server is busy (then retried with a
        growing, jittered backoff for ``busy_window``)."""
        outage = Outage(self._config, self._config.busy_window)
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

    async def close(self) -> None:
        """Open nothing more; close the live link politely."""
        self.closed = True
        link = self._sender.link
        if link is not None:
            self._abandon(link)
            await link.retire(graceful=True, close_timeout=self._config.close_timeout)

    def retire_if_old(self) -> None:
        """Past ``max_connection_age``: stop sending on the live link; replace it once idle."""
        link, age = self._sender.link, self._transport.max_connection_age
        if link is None or link.retiring or age is None:
            return
        if asyncio.get_running_loop().time() - link.opened_at >= age:
            link.retiring = True
            self._roll_over_if_idle(link)

    def _roll_over_if_idle(self, link: SessionLink) -> None:
        """Replace ``link`` now if it is the live one, retiring, and has nothing outstanding."""
        if link.retiring and link is self._sender.link and not self._book.protocol.in_flight:
            self._tasks.spawn(self._replace(link, None))

    async def _progressed(self, link: SessionLink) -> None:
        """A segment completed on ``link``: the connection works; send what waits."""
        self._outage.progressed()
        self._notice.progressed()
        self._roll_over_if_idle(link)
        await self._sender.flush()

    async def _open(self) -> SessionLink:
        """One connection attempt, ``ready`` included, within ``connect_timeout``."""
        within = self._config.connect_timeout
        link = await open_link(self._transport, self._book.protocol, within)
        self.connections += 1
        return link

    async def _install(self, link: SessionLink) -> None:
        """Make ``link`` the live one: read it, and send what waits."""
        self._notice.cancel()
        self._sender.link = link
        self._tasks.spawn(self._serve(link))
        await self._sender.flush()

    async def _serve(self, link: SessionLink) -> None:
        """Read ``link`` until it ends; an end the session did not ask for reconnects."""
        try:
            ended = await self._reader.read(link, self._progressed)
            if not (link.done or self.closed):
                await self._replace(link, self._as_lost(ended))
        finally:
            link.closed.set()

    def _as_lost(self, ended: Exception) -> TTSError:
        """The error that lost a link (a protocol violation is reported too)."""
        endpoint = self._transport.endpoint
        if isinstance(ended, TTSError):
            error = ended
        else:  # a transport bug must not leave callers hanging
            log.error("%s: unexpected error", endpoint, exc_info=ended)
            error = TTSConnectionError(f"unexpected {ended!r}")
        if isinstance(error, TTSProtocolError):
            report(error, endpoint, self._config.on_error)
        return error

    async def _replace(self, link: SessionLink, error: TTSError | None) -> None:
        """Retire ``link`` (rollover when ``error`` is None) and open its successor."""
        if link.done:
            return
        self._abandon(link)
        self._tasks.spawn(
            link.retire(graceful=error is None, close_timeout=self._config.close_timeout)
        )
        if self.closed:
            return
        while True:
            if error is not None:
                now = asyncio.get_running_loop().time()
                self._outage.record_failure(now)
                self._notice.reconnecting(error, audio_owed=self._book.protocol.pending > 0)
                if self._outage.expired(now):
                    return self._give_up(error)
                await asyncio.sleep(self._outage.next_delay())
            try:
                new = await self._open()
            except Exception as exc:
                error = exc if isinstance(exc, TTSError) else TTSConnectionError(repr(exc))
                continue
            if self.closed:
                await new.conn.aclose()
                return
            return await self._install(new)

    def _abandon(self, link: SessionLink) -> None:
        """Stop using ``link``: segments cancelled on it are over; the rest will be re-sent."""
        link.done = True
        if self._sender.link is link:
            self._sender.link = None
            self._book.connection_lost()
