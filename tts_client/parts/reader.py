"""``LinkReader``: reads a link's frames through ``ClientProtocol`` and carries out its events.

Audio and word timings go to their segment's stream, a terminal reply ends it, a segment refused
as busy goes to the ``DeferredRetry``, an error no segment owns is reported (``on_error``), and a
``ConnectionFailed`` ends the reading. While segments are outstanding, the server must answer
within ``reply_timeout`` (the link's watchdog) or the link is lost with ``TTSTimeout``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from tts_client.config import SessionConfig
from tts_client.errors import ServerError, TTSTimeout, raise_if_failed, report
from tts_client.parts.book import SegmentBook
from tts_client.parts.deferred import DeferredRetry
from tts_client.parts.link import SessionLink
from tts_client.transports.base import Frame
from tts_protocol import (
    Audio,
    ClientEvent,
    SegmentCancelled,
    SegmentDeferred,
    SegmentEnded,
    SegmentErrorReported,
    SegmentMarked,
    ServerErrorReported,
)

Progressed = Callable[[SessionLink], Awaitable[None]]  # a segment completed on the link


class LinkReader:
    """The read side of a session: one ``read`` per link, until the link ends."""

    def __init__(
        self, book: SegmentBook, retry: DeferredRetry, config: SessionConfig, endpoint: str
    ) -> None:
        self._book = book
        self._retry = retry
        self._config = config
        self._endpoint = endpoint

    async def read(self, link: SessionLink, progressed: Progressed) -> Exception:
        """Read ``link`` until it ends; returns what ended it. A retired link (``done``) is
        read, its frames unused, until the server closes it. ``progressed`` hears of each
        completed segment."""
        try:
            while True:
                frame = await self._receive(link)
                if not link.done:
                    await self._dispatch(link, self._book.protocol.receive(frame), progressed)
        except Exception as exc:
            return exc

    async def _receive(self, link: SessionLink) -> Frame:
        """The next frame; within ``reply_timeout`` while segments are outstanding."""
        loop = asyncio.get_running_loop()
        waiting = not link.done and self._book.protocol.in_flight
        deadline = loop.time() + self._config.reply_timeout if waiting else None
        try:
            async with asyncio.timeout_at(deadline) as link.watchdog:
                return await link.conn.recv()
        except TimeoutError as exc:
            raise TTSTimeout(
                f"{self._endpoint}: no reply in {self._config.reply_timeout} s "
                f"with {self._book.protocol.in_flight} segment(s) outstanding"
            ) from exc
        finally:
            link.watchdog = None

    async def _dispatch(
        self, link: SessionLink, events: list[ClientEvent], progressed: Progressed
    ) -> None:
        """Carry out one frame's events, one branch per type."""
        progress = False
        for event in events:
            if isinstance(event, Audio):
                self._book.stream(event.segment_id).feed(event.pcm)
            elif isinstance(event, SegmentMarked):
                self._book.stream(event.segment_id).feed_marks(event.words)
            elif isinstance(event, SegmentEnded | SegmentCancelled | SegmentErrorReported):
                self._book.pop(event.segment_id).finish_by(event)
                progress = True
            elif isinstance(event, SegmentDeferred):
                self._retry.defer(event)
            elif isinstance(event, ServerErrorReported):
                error = ServerError(event.code, event.message)
                report(error, self._endpoint, self._config.on_error)
            else:
                raise_if_failed(event)
        if progress:
            self._retry.progressed()
            await progressed(link)
