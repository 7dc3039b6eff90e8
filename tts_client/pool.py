"""``SessionPool``: warm sessions to one endpoint, each lent to one turn at a time.

A turn borrows a session for as long as it speaks and gives it back at its end; an idle
conversation holds none. Up to ``max_idle`` sessions wait warm between turns (the most recently
used is lent first), and one idle for ``idle_timeout_s`` is closed, so that an endpoint that
counts open streams (SageMaker's concurrency metric) sees the work, not the users who are
reading. A busy server or an outage is logged once at WARNING when it starts, and quietly
(INFO) while it lasts.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

from tts_client.config import SessionConfig
from tts_client.errors import TTSError
from tts_client.session import TTSSession
from tts_client.transports.base import Transport
from tts_protocol import Ready

DEFAULT_MAX_IDLE = 2  # warm sessions kept between turns
DEFAULT_IDLE_TIMEOUT_S = 60.0  # an idle session is closed after this long

log = logging.getLogger("tts_client")


class SessionPool:
    """Sessions to ``transport``, lent by ``borrow`` and returned by ``give_back``."""

    def __init__(
        self,
        transport: Transport,
        config: SessionConfig | None = None,
        *,
        max_idle: int = DEFAULT_MAX_IDLE,
        idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
    ) -> None:
        self.transport = transport
        self.config = config
        self.max_idle = max_idle
        self.idle_timeout_s = idle_timeout_s
        self.lent: set[TTSSession] = set()
        self._idle: list[tuple[TTSSession, float]] = []  # with the loop time it came back
        self._ready: Ready | None = None  # the latest ``ready`` seen
        self._failing = False  # the last connect failed (logged once at WARNING)
        self._reaper: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def idle(self) -> int:
        """Sessions waiting warm for the next turn."""
        return len(self._idle)

    async def borrow(self, on_retry: Callable[[TTSError], None] | None = None) -> TTSSession:
        """A session of the caller's own: a warm one, else a new connection.

        ``on_retry`` hears the first failure of each outage while the session retries (a busy
        server, a lost connection), until the session is given back. Raises the ``TTSError`` of
        a connection that could not be opened.
        """
        if self._closed:
            raise RuntimeError("the pool is closed")
        while self._idle:
            session, _ = self._idle.pop()
            if not session.closed:
                return self._lend(session, on_retry)
        session = TTSSession(self.transport, self.config)
        session.on_retry = on_retry
        try:
            await session.start()
        except TTSError as exc:
            self._connect_failed(exc)
            raise
        if self._failing:
            log.info("%s: connected again", self.transport.endpoint)
            self._failing = False
        return self._lend(session, on_retry)

    def give_back(self, session: TTSSession) -> None:
        """The turn is over: keep ``session`` warm for the next one, or close it."""
        self.lent.discard(session)
        session.on_retry = None
        if session.connections:
            self._ready = session.ready
        if self._closed or session.closed or len(self._idle) >= self.max_idle:
            self._spawn(session.aclose(drain=False))
            return
        self._idle.append((session, asyncio.get_running_loop().time()))
        self._schedule_reap()

    async def prewarm(self) -> None:
        """Open one idle session now, so that the next turn pays no handshake."""
        self.give_back(await self.borrow())

    async def ready(self) -> Ready:
        """The server's ``ready`` (voices, default voice): the latest seen, else by connecting."""
        if self._ready is not None:
            return self._ready
        session = await self.borrow()
        self.give_back(session)
        return session.ready

    async def aclose(self) -> None:
        """Close every session, lent or idle, without draining."""
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
        sessions = [s for s, _ in self._idle] + list(self.lent)
        self._idle, self.lent = [], set()
        await asyncio.gather(*(s.aclose(drain=False) for s in sessions))
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _lend(self, session: TTSSession, on_retry: Callable[[TTSError], None] | None) -> TTSSession:
        """``session``, lent to one turn: its segments are one reply (``Speak.reply``), whose
        playback the server paces from nothing buffered, whoever the session served before."""
        session.on_retry = on_retry
        session.reply = uuid.uuid4().hex
        self.lent.add(session)
        return session

    def _connect_failed(self, exc: TTSError) -> None:
        if not self._failing:
            log.warning("%s: cannot open a session: %s", self.transport.endpoint, exc)
            self._failing = True
        else:
            log.info("%s: still cannot open a session: %s", self.transport.endpoint, exc)

    def _schedule_reap(self) -> None:
        if self._reaper is None and self._idle:
            oldest = min(at for _, at in self._idle)
            loop = asyncio.get_running_loop()
            self._reaper = loop.call_at(oldest + self.idle_timeout_s, self._reap)

    def _reap(self) -> None:
        """Close the sessions idle for ``idle_timeout_s``."""
        self._reaper = None
        cutoff = asyncio.get_running_loop().time() - self.idle_timeout_s
        expired = [s for s, at in self._idle if at <= cutoff]
        self._idle = [(s, at) for s, at in self._idle if at > cutoff]
        for session in expired:
            self._spawn(session.aclose(drain=False))
        self._schedule_reap()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
