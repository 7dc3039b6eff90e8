"""Graceful shutdown: before uvicorn closes anything, the server drains its open sessions.

``Drain.run`` (called by the CLI's server on SIGTERM or SIGINT, before uvicorn's own shutdown)
marks the server Draining: ``/ping`` answers 503 and a new WebSocket is refused with
``shutting_down`` and close 1012. Every open connection refuses new ``speak``s with
``shutting_down``, finishes the segments it already queued, then closes with 1012. It waits
until no connection is open and no HTTP synthesis runs, or ``limit_s`` has passed; uvicorn's own
shutdown then closes whatever is left with 1012, and the process exits. The listening socket
stays open meanwhile, so that load balancers get the 503 and clients a typed refusal.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from tts_server.admission import Admission
from tts_server.connection import SynthesisConnection
from tts_server.health import Readiness

POLL_S = 0.05

log = logging.getLogger("tts_server")


class Drain:
    """The open connections, and the drain that ends them when the server shuts down."""

    def __init__(self, readiness: Readiness, admission: Admission) -> None:
        self._readiness = readiness
        self._admission = admission
        self._connections: set[SynthesisConnection] = set()
        self.started = False

    def add(self, connection: SynthesisConnection) -> None:
        """Track an open connection (drained at once if the drain has started)."""
        self._connections.add(connection)
        if self.started:
            connection.drain()

    def discard(self, connection: SynthesisConnection) -> None:
        """The connection ended."""
        self._connections.discard(connection)

    async def run(self, limit_s: float, abandon: Callable[[], bool] = lambda: False) -> bool:
        """Drain; True if every session ended within ``limit_s`` (False: cut short, or
        ``abandon()`` turned true, e.g. a second Ctrl+C)."""
        if not self.started:
            self.started = True
            self._readiness.drain()
            log.info("draining %s, up to %g s", self._open(), limit_s)
            for connection in list(self._connections):
                connection.drain()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit_s
        while self._admission.connections or self._admission.sessions:
            if abandon() or loop.time() >= deadline:
                log.warning("drain cut short: %s", self._open())
                return False
            await asyncio.sleep(POLL_S)
        log.info("drained")
        return True

    def _open(self) -> str:
        a = self._admission
        return f"{a.connections} connection(s) open, {a.sessions} session(s) with work"
