"""Conversations: per user, a strands ``Agent`` with its history and at most one running turn.

A new prompt in a conversation supersedes the turn still running there (barge-in): its LLM
stream and every segment still in flight are cancelled before the new turn starts. TTS
sessions come from one ``SessionPool``: each turn borrows one for as long as it runs (a warm
one when there is one) and gives it back at its end, so a conversation that is idle (its user
reading or thinking) holds no speech capacity, and separate conversations never queue behind
each other.

The history keeps only what the user heard of a turn cut off (``agent/core/memory.py``): when a
turn ends cut, its messages are rewritten to the text its audio carried, and a playback report
(``heard``, in the next prompt) trims them to where the client stopped playing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

from strands import Agent
from strands.telemetry.metrics import EventLoopMetrics
from strands.types.content import Message, Messages

from agent.core.factory import call_factory
from agent.core.memory import remember, turn_start
from agent.core.tool_calls import Filler
from agent.core.turn import TextModel, Turn
from agent.requests import PlaybackReport, TurnRequest
from tts_client import SessionPool, Transport

SUPERSEDE_WAIT_S = 2.0  # how long a new turn waits for the old one to let go

log = logging.getLogger("agent.conversations")


class ConversationModel(TextModel, Protocol):
    """What a conversation needs of its model: a turn's text stream, and the history that
    memory trims to what the user heard. A strands ``Agent`` has both; any model that keeps
    its history as Bedrock-style messages can stand in."""

    messages: Messages


class Conversation:
    """One user's dialogue."""

    def __init__(
        self, key: str, agent: ConversationModel, pool: SessionPool, filler: Filler | None = None
    ) -> None:
        self.key = key
        self.agent = agent
        self._pool = pool
        self._filler = filler
        self.current: Turn | None = None
        self._anchor: Message | None = None  # the last message before the current turn's
        self._before: tuple[Turn | None, Message | None] = (None, None)  # ... before that turn

    async def start_turn(self, request: TurnRequest, received_at: float | None = None) -> Turn:
        """Supersede the running turn, if any, and set up a new one."""
        previous = self.current
        if request.heard is not None:
            self.report(request.heard)
        if previous is not None and not previous.finished.is_set():
            previous.supersede()
            # If its consumer stalled, its tasks are cancelled and its audio dropped anyway.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(previous.finished.wait(), SUPERSEDE_WAIT_S)
        if isinstance(self.agent, Agent):  # strands keeps every past turn's metrics: ~3 KB each
            self.agent.event_loop_metrics = EventLoopMetrics()  # (docs/reliability.md)
        self._before = (self.current, self._anchor)
        self._anchor = self.agent.messages[-1] if self.agent.messages else None
        self.current = Turn(
            request,
            self.agent,
            self._pool,
            received_at=received_at,
            conversation=self.key,
            on_end=self._remember,
            filler=self._filler,
        )
        return self.current

    async def withdraw(self, turn_id: str) -> None:
        """Forget turn ``turn_id``, started on a guess the user proved wrong (they spoke on
        before its end of turn was confirmed, and heard none of it): it stops, its messages go,
        and the turn before it is the latest again. Only the latest turn can be withdrawn."""
        turn = self.current
        if turn is None or turn.id != turn_id:
            log.info("withdraw turn %s, not the latest: ignored", turn_id)
            return
        turn.supersede()
        if turn.began:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(turn.finished.wait(), SUPERSEDE_WAIT_S)
        base = turn_start(self.agent.messages, self._anchor)
        if base is None:
            log.warning("turn %s: its messages were trimmed away; history kept as is", turn.id)
        else:
            del self.agent.messages[base:]
        self.current, self._anchor = self._before
        self._before = (None, None)

    async def withdraw_unheard(self, turn_id: str, heard: PlaybackReport | None) -> str | None:
        """Forget turn ``turn_id`` if the user heard none of it and it called no tool: they spoke
        on before its first word played (docs/listening.md, "Turn continuation"). ``heard`` is
        where the client stopped playing it (None: no report, so as far as its audio was sent).
        Returns its prompt, for the user's next words to continue; None where it stays (heard in
        part, a tool ran, or not the latest turn)."""
        turn = self.current
        if turn is None or turn.id != turn_id:
            return None
        if turn.began and not turn.finished.is_set():
            turn.supersede()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(turn.finished.wait(), SUPERSEDE_WAIT_S)
        reported = heard is not None and heard.turn_id == turn_id
        said = turn.spoken.heard(heard.seq, heard.ms) if reported else turn.spoken.heard()
        if said or self._called_tools():
            return None
        await self.withdraw(turn_id)
        return turn.request.prompt

    def _called_tools(self) -> bool:
        """Did the latest turn call a tool? Its call and result stay: the tool may have acted."""
        base = turn_start(self.agent.messages, self._anchor)
        return base is not None and any(
            "toolUse" in block
            for message in self.agent.messages[base:]
            for block in message["content"]
        )

    def report(self, heard: PlaybackReport) -> None:
        """The client stopped playing turn ``heard.turn_id`` there: keep only what it heard.

        Only the latest turn can be trimmed (an older one's report comes too late: a newer turn
        has built on it), so a report for any other is ignored.
        """
        turn = self.current
        if turn is None or turn.id != heard.turn_id:
            log.info("a playback report for turn %s, not the latest: ignored", heard.turn_id)
            return
        turn.heard = heard
        if turn.finished.is_set():  # else its end applies it
            self._remember(turn)

    def _remember(self, turn: Turn) -> None:
        """Rewrite ``turn``'s messages to what the user heard, if it was cut or cut short."""
        if turn is not self.current:
            return
        if turn.heard is None:
            if not turn.cut:
                return  # heard to the end: strands' own messages stand
            heard = turn.spoken.heard()
        else:
            heard = turn.spoken.heard(turn.heard.seq, turn.heard.ms)
            if not turn.cut and heard == turn.spoken.heard():
                return
        messages = self.agent.messages
        base = turn_start(messages, self._anchor)
        if base is None:
            log.warning("turn %s: its messages were trimmed away; history kept as is", turn.id)
            return
        remember(messages, base, turn.request.prompt, heard)

    @property
    def busy(self) -> bool:
        return self.current is not None and not self.current.finished.is_set()

    def close(self) -> None:
        """The conversation is dropped: stop its turn, clean up its agent (``Agent.cleanup``:
        its MCP clients and other tool providers)."""
        if self.current is not None:
            self.current.supersede()  # its session goes back to the pool
        cleanup = getattr(self.agent, "cleanup", None)
        if callable(cleanup):
            try:
                cleanup()
            except Exception:  # the user's tools: logged, the others still close
                log.exception("conversation %s: its agent's cleanup failed", self.key)


class Conversations:
    """Conversations by key, at most ``limit``; the least recently used is dropped first.
    ``make_agent`` builds a new conversation's model, given its key or nothing; ``filler``
    is said when a tool runs long (``agent/core/tool_calls.py``)."""

    def __init__(
        self,
        make_agent: Callable[[], ConversationModel] | Callable[[str], ConversationModel],
        transport: Transport,
        pool: SessionPool | None = None,
        limit: int = 64,
        filler: Filler | None = None,
    ) -> None:
        self._make_agent = make_agent
        self._filler = filler
        self.transport = transport
        self.pool = pool or SessionPool(transport)
        self._limit = limit
        self._items: OrderedDict[str, Conversation] = OrderedDict()

    def get(self, key: str) -> Conversation:
        """The conversation called ``key``, created if new."""
        conversation = self._items.pop(key, None)
        if conversation is None:
            agent = call_factory(self._make_agent, key)
            conversation = Conversation(key, agent, self.pool, self._filler)
        self._items[key] = conversation
        while len(self._items) > self._limit:
            _, dropped = self._items.popitem(last=False)
            dropped.close()
        return conversation

    @property
    def busy(self) -> bool:
        """True while any turn is running (AgentCore's ``HealthyBusy``)."""
        return any(c.busy for c in self._items.values())

    async def preconnect(self) -> None:
        """Open a warm TTS session now, so that the first turn pays no handshake."""
        await self.pool.prewarm()

    async def aclose(self) -> None:
        for conversation in self._items.values():
            conversation.close()
        self._items.clear()
        await self.pool.aclose()
        await self.transport.aclose()  # e.g. the SageMaker SDK client shared by the sessions
