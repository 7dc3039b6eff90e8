"""uvicorn's server, stopped as every command stops (docs/operations.md, "Stopping").

uvicorn handles SIGINT and SIGTERM itself while it serves: the first signal starts its graceful
shutdown, and a second SIGINT forces it, which skips the waits and the app's own shutdown (its
lifespan end) too; ``asyncio.run`` then cancels the lifespan's task, which Starlette reports as
a failed shutdown with the ``CancelledError``'s traceback, logged before the command's line.
uvicorn then raises every signal it got again, the last first.

Its graceful shutdown waits for the requests still running with no limit (the dev server's: a
stuck request, or an SSE reply of a minute, held the first Ctrl+C), or up to its
``timeout_graceful_shutdown``, past which it logs "Cancel N running task(s)" and the traceback
of each request it cancels (the TTS server's 5 s). A request still running at a forced stop is
cancelled by ``asyncio.run`` as well, and uvicorn logs its ``CancelledError`` traceback.

``StoppingServer``: the first signal begins the process's stop
(``observability.stopping.begin``) and starts the graceful shutdown, which waits up to
``grace_s`` (``GRACE_S``, 5 s) for the requests still running; a second signal, SIGINT or
SIGTERM, forces it at once (no more waiting for open connections, nor for the TTS server's
drain) and hurries the rest of the stop (a child's drain). Past the limit, or forced, it cancels
the requests still running itself (while uvicorn still waits: on Python 3.12.1 and later its
wait for the listening server to close waits for every connection too, so a request left to
cancel after it held a forced stop until its client gave up), counts the HTTP ones (``cut``,
and ``cut_short`` for the stop line: which of the two cut them; a WebSocket's client got its
close, 1012, at the shutdown's start) and drops uvicorn's report of the cancellations it made
(``CutReport``); uvicorn's own limit stays unset. The app's own shutdown runs in every case.
Once it has shut down, ``serve`` raises ``Stopped`` by the first signal: one line, one status.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from types import FrameType

import uvicorn

from observability.stopping import Stopped, begin

GRACE_S = 5.0  # how long a stop waits for the requests still running before it cuts them
CUT_S = 1.0  # how long cancelled requests get to end (uvicorn's handler returns at once)
TICK_S = 0.1  # how often the wait looks for a second signal (uvicorn's own tick)
HTTP_REQUEST = "RequestResponseCycle.run_asgi"  # an HTTP request's task, in uvicorn's every
# HTTP protocol (a WebSocket's task runs its protocol's own run_asgi)
ERRORS = logging.getLogger("uvicorn.error")


class CutReport(logging.Filter):
    """Drops a record of a ``CancelledError`` (uvicorn's "Exception in ASGI application" for a
    request that the stop cancelled); installed only while it cancels them."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, asyncio.CancelledError)


class StoppingServer(uvicorn.Server):
    """uvicorn whose stop is the first signal's, bounded by ``grace_s``, forced by a second
    signal, the app's shutdown run."""

    def __init__(self, config: uvicorn.Config, grace_s: float = GRACE_S) -> None:
        if config.timeout_graceful_shutdown is not None:
            raise ValueError(
                "StoppingServer bounds the graceful shutdown itself (grace_s): leave uvicorn's "
                "timeout_graceful_shutdown unset, it cancels requests with a traceback each"
            )
        super().__init__(config)
        self.grace_s = grace_s
        self.stopped_by: int | None = None  # the signal that began the stop
        self.cut = 0  # HTTP requests still running that the stop cancelled
        self.overdue = False  # they were cancelled at grace_s (else by a second signal)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """The first signal: the graceful shutdown; a later one: forced."""
        if begin(sig):
            self.stopped_by = sig
            self.should_exit = True
        else:
            self.force_exit = True

    @property
    def cut_short(self) -> str:
        """What cut the requests still running short, and how many, for the stop's line:
        empty where the stop cut none."""
        if not self.cut:
            return ""
        by = f"the stop's {self.grace_s:g} s limit" if self.overdue else "the second signal"
        return f"{by} cut short {self.cut} request(s) still running"

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        """Serve until stopped; then ``Stopped`` by the signal that began the stop."""
        await super().serve(sockets)
        if self.stopped_by is not None:
            raise Stopped(self.stopped_by)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's shutdown, the requests still running cancelled at ``grace_s`` or at once
        when forced, and the app's own shutdown, which uvicorn leaves out of a forced one."""
        graceful = asyncio.ensure_future(super().shutdown(sockets))
        await self._wait_or_cut(graceful)
        await graceful
        ended = getattr(self.lifespan, "shutdown_event", None)  # none without a lifespan
        if ended is not None and not ended.is_set():
            await self.lifespan.shutdown()

    async def _wait_or_cut(self, graceful: asyncio.Future[None]) -> None:
        """Until ``graceful`` is done; forced (a second signal), or still waiting ``grace_s``
        later, the requests still running cut short (and uvicorn's wait forced to end)."""
        loop = asyncio.get_running_loop()
        due = loop.time() + self.grace_s
        while not (graceful.done() or self.force_exit or loop.time() >= due):
            await asyncio.wait([graceful], timeout=TICK_S)
        if graceful.done() and not self.force_exit:
            return
        self.overdue = not self.force_exit
        self.force_exit = True
        await self._cut_requests()

    async def _cut_requests(self) -> None:
        """Cancel the requests (HTTP, WebSocket) still running, count the HTTP ones, and wait
        (up to ``CUT_S``) until they have ended, uvicorn's report of each cancellation dropped."""
        running = [task for task in self.server_state.tasks if not task.done()]
        self.cut = sum(_qualname(task) == HTTP_REQUEST for task in running)
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


def _qualname(task: asyncio.Task[None]) -> str:
    """The qualified name of the coroutine ``task`` runs (empty where it has none)."""
    return getattr(task.get_coro(), "__qualname__", "")
