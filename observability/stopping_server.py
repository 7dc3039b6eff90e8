"""uvicorn's server, stopped as every command stops (docs/operations.md, "Stopping").

uvicorn handles SIGINT and SIGTERM itself while it serves: the first signal starts its graceful
shutdown, and a second SIGINT forces it, which skips the waits and the app's own shutdown (its
lifespan end) too; ``asyncio.run`` then cancels the lifespan's task, which Starlette reports as
a failed shutdown with the ``CancelledError``'s traceback, logged before the command's line.
uvicorn then raises every signal it got again, the last first.

A request still running at a forced stop (the dev server waits for every one) is cancelled by
``asyncio.run`` as well, and uvicorn logs its ``CancelledError`` traceback.

``StoppingServer``: the first signal begins the process's stop
(``observability.stopping.begin``) and starts the graceful shutdown; a second one, SIGINT or
SIGTERM, forces it (no more waiting for open connections, nor for the TTS server's drain) and
hurries the rest of the stop (a child's drain). A forced stop cancels the requests still running
itself, counts them (``cut``, for the stop line) and drops uvicorn's report of the cancellations
it made (``CutReport``); the app's own shutdown runs in either case. Once it has shut down,
``serve`` raises ``Stopped`` by the first signal: one line, one status.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from types import FrameType

import uvicorn

from observability.stopping import Stopped, begin

CUT_S = 1.0  # how long cancelled requests get to end (uvicorn's handler returns at once)
ERRORS = logging.getLogger("uvicorn.error")


class CutReport(logging.Filter):
    """Drops a record of a ``CancelledError`` (uvicorn's "Exception in ASGI application" for a
    request that the forced stop cancelled); installed only while it cancels them."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, asyncio.CancelledError)


class StoppingServer(uvicorn.Server):
    """uvicorn whose stop is the first signal's, forced by a second, the app's shutdown run."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.stopped_by: int | None = None  # the signal that began the stop
        self.cut = 0  # requests still running that a forced stop cancelled

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """The first signal: the graceful shutdown; a later one: forced."""
        if begin(sig):
            self.stopped_by = sig
            self.should_exit = True
        else:
            self.force_exit = True

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        """Serve until stopped; then ``Stopped`` by the signal that began the stop."""
        await super().serve(sockets)
        if self.stopped_by is not None:
            raise Stopped(self.stopped_by)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's shutdown; forced, the requests still running cancelled, and the app's own
        shutdown that uvicorn then leaves out."""
        await super().shutdown(sockets)
        if self.force_exit:
            await self._cut_requests()
        ended = getattr(self.lifespan, "shutdown_event", None)  # none without a lifespan
        if ended is not None and not ended.is_set():
            await self.lifespan.shutdown()

    async def _cut_requests(self) -> None:
        """Cancel the requests still running and wait (up to ``CUT_S``) until they have ended,
        uvicorn's report of each cancellation dropped."""
        running = [task for task in self.server_state.tasks if not task.done()]
        self.cut = len(running)
        if not running:
            return
        quiet = CutReport()
        ERRORS.addFilter(quiet)
        try:
            for task in running:
                task.cancel()
            await asyncio.wait(running, timeout=CUT_S)
        finally:
            ERRORS.removeFilter(quiet)
