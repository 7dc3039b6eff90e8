"""``SessionPool``: warm sessions kept across turns, one per endpoint (and optional key)."""

from __future__ import annotations

import asyncio
from collections import defaultdict

from tts_client.config import SessionConfig
from tts_client.session import TTSSession
from tts_client.transports.base import Transport

PoolKey = tuple[str, str]


class SessionPool:
    """Sessions keyed by ``transport.endpoint`` and ``key`` (e.g. a conversation id; default
    ``""``: one per endpoint). A session that closed itself is replaced on next use.
    """

    def __init__(self, config: SessionConfig | None = None) -> None:
        self.config = config
        self._sessions: dict[PoolKey, TTSSession] = {}
        self._open_locks: defaultdict[PoolKey, asyncio.Lock] = defaultdict(asyncio.Lock)

    async def session(self, transport: Transport, key: str = "") -> TTSSession:
        """The open session for ``transport`` and ``key``, connecting one if there is none."""
        pool_key = (transport.endpoint, key)
        async with self._open_locks[pool_key]:
            session = self._sessions.get(pool_key)
            if session is None or session.closed:
                if session is not None:
                    await session.aclose(drain=False)
                session = await TTSSession.connect(transport, self.config)
                self._sessions[pool_key] = session
            return session

    async def discard(self, transport: Transport, key: str = "") -> None:
        """Close one session without draining and forget it."""
        pool_key = (transport.endpoint, key)
        async with self._open_locks[pool_key]:
            session = self._sessions.pop(pool_key, None)
            if session is not None:
                await session.aclose(drain=False)
        self._open_locks.pop(pool_key, None)

    async def aclose(self) -> None:
        """Close every session without draining."""
        sessions, self._sessions = list(self._sessions.values()), {}
        await asyncio.gather(*(s.aclose(drain=False) for s in sessions))
