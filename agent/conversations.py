"""Conversations: per user, a strands ``Agent`` with its history, a warm TTS session, one turn.

A new prompt in a conversation supersedes the turn still running there (barge-in): its LLM
stream and every segment still in flight are cancelled before the new turn starts. Each
conversation keeps its own TTS connection, opened on first use (or pre-connected at
start-up) and kept across turns; separate conversations never queue behind each other.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Callable

from strands import Agent
from strands.telemetry.metrics import EventLoopMetrics

from agent.requests import TurnRequest
from agent.turn import TextModel, Turn
from tts_client import SessionPool, Transport, TTSSession

SUPERSEDE_WAIT_S = 2.0  # how long a new turn waits for the old one to let go


class Conversation:
    """One user's dialogue."""

    def __init__(self, key: str, agent: TextModel, pool: SessionPool, transport: Transport) -> None:
        self.key = key
        self.agent = agent
        self._pool = pool
        self._transport = transport
        self.current: Turn | None = None

    async def session(self) -> TTSSession:
        """This conversation's TTS session, (re)connected on demand."""
        return await self._pool.session(self._transport, key=self.key)

    async def start_turn(self, request: TurnRequest, received_at: float | None = None) -> Turn:
        """Supersede the running turn, if any, and set up a new one."""
        previous = self.current
        if previous is not None and not previous.finished.is_set():
            previous.supersede()
            # If its consumer stalled, its tasks are cancelled and its audio dropped anyway.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(previous.finished.wait(), SUPERSEDE_WAIT_S)
        if isinstance(self.agent, Agent):  # strands keeps every past turn's metrics: ~3 KB each
            self.agent.event_loop_metrics = EventLoopMetrics()  # (docs/reliability.md)
        self.current = Turn(
            request, self.agent, self.session, received_at=received_at, conversation=self.key
        )
        return self.current

    @property
    def busy(self) -> bool:
        return self.current is not None and not self.current.finished.is_set()


class Conversations:
    """Conversations by key, at most ``limit``; the least recently used is dropped first."""

    def __init__(
        self,
        make_agent: Callable[[], TextModel],
        transport: Transport,
        pool: SessionPool | None = None,
        limit: int = 64,
    ) -> None:
        self._make_agent = make_agent
        self.transport = transport
        self.pool = pool or SessionPool()
        self._limit = limit
        self._items: OrderedDict[str, Conversation] = OrderedDict()
        self._discarding: set[asyncio.Task[None]] = set()

    def get(self, key: str) -> Conversation:
        """The conversation called ``key``, created if new."""
        conversation = self._items.pop(key, None)
        if conversation is None:
            conversation = Conversation(key, self._make_agent(), self.pool, self.transport)
        self._items[key] = conversation
        while len(self._items) > self._limit:
            _, dropped = self._items.popitem(last=False)
            if dropped.current is not None:
                dropped.current.supersede()
            task = asyncio.get_running_loop().create_task(
                self.pool.discard(self.transport, dropped.key)
            )
            self._discarding.add(task)
            task.add_done_callback(self._discarding.discard)
        return conversation

    @property
    def busy(self) -> bool:
        """True while any turn is running (AgentCore's ``HealthyBusy``)."""
        return any(c.busy for c in self._items.values())

    async def preconnect(self, key: str) -> None:
        """Open ``key``'s TTS session now, so its first turn pays no handshake."""
        await self.get(key).session()

    async def aclose(self) -> None:
        for conversation in self._items.values():
            if conversation.current is not None:
                conversation.current.supersede()
        self._items.clear()
        await self.pool.aclose()
        await self.transport.aclose()  # e.g. the SageMaker SDK client shared by the sessions
