"""``SegmentSender``: what a session writes on its live link, one message at a time.

Segments go out in order as ``ClientProtocol`` lets them (within ``max_in_flight``), each one
arming the reader's reply timer; cancels go out at once. A send that fails, or takes longer than
``reply_timeout``, closes the link: its reader sees the end and the ``LinkKeeper`` reconnects.
"""

from __future__ import annotations

import asyncio
import logging

from tts_client.config import SessionConfig
from tts_client.errors import TTSError
from tts_client.parts.background import BackgroundTasks
from tts_client.parts.book import SegmentBook
from tts_client.parts.link import SessionLink
from tts_client.segment import SegmentStream
from tts_protocol import ClientMessage, encode

log = logging.getLogger("tts_client")


class SegmentSender:
    """Sends on ``link``, the live link (installed and removed by the ``LinkKeeper``)."""

    def __init__(
        self, book: SegmentBook, config: SessionConfig, endpoint: str, tasks: BackgroundTasks
    ) -> None:
        self.link: SessionLink | None = None  # None between links
        self._book = book
        self._config = config
        self._endpoint = endpoint
        self._tasks = tasks
        self._lock = asyncio.Lock()

    async def flush(self) -> None:
        """Send waiting segments, in order, while the live link has room for them."""
        async with self._lock:
            link = self.link
            if link is None or link.retiring:
                return
            for speak in self._book.take_speaks():
                self._book.stream(speak.id).mark_sent()
                self._arm(link)
                await self._send(link, speak)

    async def cancel(self, segment: SegmentStream) -> None:
        """End ``segment`` as cancelled and tell the server, if it has the segment."""
        async with self._lock:
            await self._send_live(self._book.cancel(segment))
            self._book.prune()

    async def cancel_all(self) -> None:
        """End every unfinished segment as cancelled, with one ``cancel`` frame."""
        async with self._lock:
            await self._send_live(self._book.cancel_all())
            self._book.prune()

    async def _send_live(self, message: ClientMessage | None) -> None:
        """Send ``message`` (if any) on the live link; the protocol only asks when there is one."""
        if message is not None and self.link is not None:
            await self._send(self.link, message)

    async def _send(self, link: SessionLink, message: ClientMessage) -> None:
        """Send on ``link``; a failure closes it so that its reader reconnects."""
        try:
            async with asyncio.timeout(self._config.reply_timeout):
                await link.conn.send(encode(message))
        except (TTSError, TimeoutError) as exc:
            log.info("%s: send failed: %r", self._endpoint, exc)
            self._tasks.spawn(link.conn.aclose())  # its reader sees the end and reconnects

    def _arm(self, link: SessionLink) -> None:
        """Start the reply timer if the reader is waiting without one."""
        if link.watchdog is not None and link.watchdog.when() is None:
            loop = asyncio.get_running_loop()
            link.watchdog.reschedule(loop.time() + self._config.reply_timeout)
