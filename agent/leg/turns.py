"""The turn's life on the browser leg, in one place: start, supersede, hold, release, cancel,
withdraw and finish.

Both routes drive a ``TurnRunner``. Each front door says only how a turn starts (``TurnStarter``:
the dev server in place, the AgentCore app on the SDK's worker loop); the runner does the rest.

- **SSE** (``POST /invocations``): one runner per request, pulled by the response
  (``TurnRunner.stream``): the turn's events until its ``turn.end``; closing the stream (the
  client went) cancels the turn.
- **WebSocket** (``/ws``): one runner per socket, pushing into the socket (``TurnRunner.start``):
  at most one turn runs; a new one supersedes it, and the old one's events end (with
  ``turn.end``) before the new one's first. A turn may be started **held**: its events wait
  until the turn is confirmed (``release``) or dropped without a sound (``stop_held``).

``EarlyReply`` is the held turn's one user: a reply begun on the eager transcript while the turn
model lets an unfinished turn wait. If the turn ends at that pause, the transcript is said and the
held events go out (``confirm``); if speech resumes or the user acts, the reply is stopped and
withdrawn from the conversation (``drop``). docs/listening.md, "The eager start".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.websockets import WebSocketDisconnect

from agent.events import Event, Transcript, TurnEnd, TurnStart
from agent.leg.hooks import TurnEvents, TurnStarter, TurnWithdrawal
from agent.listening.eager import EagerRecognition
from agent.listening.listener import Utterance
from agent.listening.recognizer import Recognition, RecognitionError
from agent.requests import BadRequest, PlaybackReport, TurnRequest

log = logging.getLogger("agent.ws")

EventSink = Callable[[Event], Awaitable[None]]
"""Where a pushed turn's events go (the socket's send)."""


def _nothing() -> None:
    """What a runner does at a turn's stop or end when nobody asked to be told."""


async def _refuse_push(event: Event) -> None:
    raise RuntimeError(f"a pulled runner has no sink for {event.type}")


class TurnRunner:
    """A leg's turns in one conversation, at most one running.

    ``on_stop`` is told when a turn is stopped (cancelled, or none was running), ``on_end`` when
    a pushed turn's events end, however they end.
    """

    def __init__(
        self,
        start_turn: TurnStarter,
        conversation: str,
        sink: EventSink = _refuse_push,
        *,
        on_stop: Callable[[], None] = _nothing,
        on_end: Callable[[], None] = _nothing,
    ) -> None:
        self.conversation = conversation
        self._start_turn = start_turn
        self._sink = sink
        self._on_stop = on_stop
        self._on_end = on_end
        self._task: asyncio.Task[None] | None = None
        self._held: list[Event] | None = None  # a held turn's events, not sent yet
        self._order = asyncio.Lock()  # a held turn's events go out before its later ones
        self.turn_id: str | None = None  # the turn whose `turn.start` went out, not its end

    @property
    def running(self) -> bool:
        """A pushed turn runs that the user hears (a held one does not speak: no barge-in)."""
        return self._task is not None and not self._task.done() and self._held is None

    @property
    def holding(self) -> bool:
        """A turn's events are held now."""
        return self._held is not None

    async def stream(self, request: TurnRequest) -> TurnEvents:
        """Start ``request``'s turn and return its events, pulled by the caller; raises
        ``BadRequest`` before anything streams. Closing the events stops the turn."""
        return await self._start_turn(request, self.conversation)

    async def start(self, request: TurnRequest, *, held: bool = False) -> None:
        """Start ``request``'s turn, its events pushed to the sink; raises ``BadRequest``. The
        running turn is superseded, and its events end before these start. ``held``: they wait
        until ``release``."""
        turn_events = await self._start_turn(request, self.conversation)
        if self._task is not None:
            await asyncio.wait([self._task])  # it ends with `turn.end` once superseded
            self._retrieve(self._task)
        self.turn_id = None
        self._held = [] if held else None
        self._task = asyncio.create_task(self._push(turn_events), name="ws-turn")
        self._task.add_done_callback(lambda _task: self._on_end())

    async def release(self) -> None:
        """Send the held events, and let the turn go on live."""
        async with self._order:
            held, self._held = self._held or [], None
            for event in held:
                await self._deliver(event)

    async def stop_held(self) -> list[Event] | None:
        """Stop the held turn without a sound; its events, never sent (None: none held)."""
        held, self._held = self._held, None
        if held is not None:
            await self.stop()
        return held

    async def stop(self) -> str | None:
        """Cancel the running turn, if any, and wait until nothing more of it can be sent.

        Returns its ``turn_id``, or None if no turn was running (or its ``turn.end`` went out).
        """
        task, self._task = self._task, None
        self._on_stop()
        if task is None:
            return None
        running = not task.done()
        task.cancel()
        await asyncio.wait([task])  # not `await task`: that would swallow our own cancellation
        self._retrieve(task)
        return self.turn_id if running else None

    async def _deliver(self, event: Event) -> None:
        """Send one event, noting which turn is on the air."""
        if isinstance(event, TurnStart):
            self.turn_id = event.turn_id
        await self._sink(event)
        if isinstance(event, TurnEnd):
            self.turn_id = None  # ended: a `cancel` now stops nothing, names no turn

    async def _push(self, turn_events: TurnEvents) -> None:
        async with contextlib.aclosing(turn_events):  # closing it stops the turn
            async for event in turn_events:
                async with self._order:
                    if self._held is not None:
                        self._held.append(event)
                    else:
                        await self._deliver(event)

    @staticmethod
    def _retrieve(task: asyncio.Task[None]) -> None:
        if task.cancelled() or isinstance(exc := task.exception(), WebSocketDisconnect | None):
            return  # a client that went away is no news
        log.info("a turn's relay ended early: %s: %s", type(exc).__name__, exc)


@dataclass(slots=True)
class _Guess:
    """A reply for pause ``ticket``: ``task`` awaits its recognition, then starts the turn."""

    ticket: int
    task: asyncio.Task[None] | None = None
    recognition: Recognition | None = None
    starting: bool = False  # past the recognition: the turn is being started, not cancellable


class EarlyReply:
    """A leg's reply begun early: at most one, for one pause, held by ``turns``.

    ``start_held`` starts a held turn of a text (raises ``BadRequest``); ``withdraw`` forgets a
    turn nobody heard (None: replies never begin early).
    """

    def __init__(
        self,
        turns: TurnRunner,
        eager: EagerRecognition,
        start_held: Callable[[str], Awaitable[None]],
        withdraw: TurnWithdrawal | None,
    ) -> None:
        self._turns = turns
        self._eager = eager
        self._start_held = start_held
        self._withdraw = withdraw
        self._guess: _Guess | None = None

    @property
    def enabled(self) -> bool:
        """Replies can begin early: a withdrawal forgets those nobody heard."""
        return self._withdraw is not None

    def begin(self, ticket: int) -> None:
        """The turn waits after pause ``ticket``: start its reply once its transcript is ready
        (an older guess must have been dropped)."""
        guess = _Guess(ticket)
        guess.task = asyncio.create_task(self._start(guess), name="ws-eager")
        self._guess = guess

    async def _start(self, guess: _Guess) -> None:
        try:
            recognition = await self._eager.early(guess.ticket)
        except RecognitionError:
            return  # the utterance's own recognition says so, if the turn ends here
        if recognition is None or not recognition.text:
            return
        guess.recognition, guess.starting = recognition, True
        try:
            await self._start_held(recognition.text)
        except BadRequest:
            return  # the utterance's turn, if it comes, is refused in the open
        except Exception:  # a guess must never end the socket: the turn, if it comes, starts anew
            log.exception("a reply started early failed to start")

    async def drop(self) -> None:
        """Stop the reply begun early, if any, without a sound: nothing of it was sent, and its
        conversation forgets it."""
        guess, self._guess = self._guess, None
        if guess is None or guess.task is None:
            return
        if not guess.starting:
            guess.task.cancel()
        await asyncio.wait([guess.task])
        held = await self._turns.stop_held()
        turn_id = next((e.turn_id for e in held or () if isinstance(e, TurnStart)), None)
        if turn_id is None or self._withdraw is None:
            return  # no turn was started
        try:
            await self._withdraw(turn_id, self._turns.conversation, PlaybackReport(turn_id, 0, 0))
        except Exception:  # the conversation keeps the guess's messages; the socket goes on
            log.exception("withdrawing turn %s failed", turn_id)

    async def resumed(self) -> None:
        """Speech after a judged pause: its eager recognition and held reply are moot."""
        self._eager.drop()
        await self.drop()

    async def confirm(self, utterance: Utterance) -> Transcript | None:
        """The turn ended: if at its pause a reply was begun, the transcript to say before the
        held reply is released (``TurnRunner.release``). None (and any other guess dropped) if
        none was begun there."""
        guess = self._guess
        if guess is None or guess.ticket != utterance.ticket:
            await self.drop()
            return None
        assert guess.task is not None
        await asyncio.wait([guess.task])
        self._guess = None
        recognition = guess.recognition
        if recognition is None or not self._turns.holding:  # none started: recognize as ever
            return None
        self._eager.drop()  # done, and used here
        return Transcript(recognition.text, utterance.audio_ms, recognition.asr_ms)
