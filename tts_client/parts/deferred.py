"""``DeferredRetry``: segments the server refused as ``busy`` are sent again after a backoff.

``ClientProtocol`` holds a refused segment (``SegmentDeferred``); one backoff step later (growing
with each refusal until a segment completes) every held segment goes out again, in order, with
its id. If no segment has completed for ``busy_window``, the refused one fails with
``SegmentFailed(code="busy")`` and the session goes on.
"""

from __future__ import annotations

import asyncio

from tts_client.config import Outage, SessionConfig
from tts_client.errors import SegmentFailed
from tts_client.parts.background import BackgroundTasks
from tts_client.parts.book import SegmentBook
from tts_client.parts.sender import SegmentSender
from tts_client.retry_notice import RetryNotice
from tts_protocol import ErrorCode, SegmentDeferred


class DeferredRetry:
    """The busy outage of one session's segments and the one retry scheduled for them."""

    def __init__(
        self,
        book: SegmentBook,
        sender: SegmentSender,
        notice: RetryNotice,
        tasks: BackgroundTasks,
        config: SessionConfig,
    ) -> None:
        self._book = book
        self._sender = sender
        self._notice = notice
        self._tasks = tasks
        self._outage = Outage(config, config.busy_window)
        self._scheduled = False  # a retry of the held segments is on its way

    def defer(self, event: SegmentDeferred) -> None:
        """The server was busy: send the segment again after a backoff, for ``busy_window``."""
        now = asyncio.get_running_loop().time()
        failure = SegmentFailed(ErrorCode.BUSY, event.message, event.segment_id)
        if self._outage.record_failure(now):
            self._notice.started(failure)
        if self._outage.expired(now):
            self._book.fail(event.segment_id, failure)
        elif not self._scheduled:
            self._scheduled = True
            self._tasks.spawn(self._retry(self._outage.next_delay()))

    def progressed(self) -> None:
        """A segment completed: the next refusal starts a new outage."""
        self._outage.progressed()

    async def _retry(self, delay: float) -> None:
        """After ``delay``, send the segments the server refused as busy, in order."""
        await asyncio.sleep(delay)
        self._scheduled = False
        self._book.protocol.retry_deferred()
        await self._sender.flush()
